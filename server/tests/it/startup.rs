//! Startup: help text, config file and flag precedence, and clear errors with exit code 1.

use crate::support::{serve_args, uring_available, Server, TestDir, SEGMENT_SIZE_TEST};
use std::process::Command;

fn ringlog(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ringlog"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn help_explains_every_option_with_its_default() {
    let output = ringlog(&["serve", "--help"]);
    assert_eq!(output.status.code(), Some(0));
    let help = String::from_utf8(output.stdout).unwrap();
    for option in [
        "--data-dir",
        "--listen",
        "--shards",
        "--cores",
        "--config",
        "--segment-size",
        "--commits-in-flight",
        "--commit-block-bytes",
        "--sync-mode",
        "--frame-size-max",
        "--connections-max",
        "--direct-io",
        "--idle-timeout-ms",
        "--zk",
        "--zk-root",
        "--advertised-address",
        "--zk-session-timeout-ms",
        "--zk-connect-timeout-ms",
    ] {
        assert!(help.contains(option), "{option} missing from --help");
    }
    assert!(help.matches("Default:").count() >= 18, "{help}");
    // --data-dir: the list, the placement rule, the refusal, and the cookie's directory.
    for text in [
        "comma-separated list",
        "DIRS[K % N]/shard-K",
        "the start is refused",
        "cookie (--zk) names the first directory",
        "an array of strings",
    ] {
        assert!(help.contains(text), "--data-dir help lacks {text:?}");
    }
    let output = ringlog(&["--help"]);
    assert_eq!(output.status.code(), Some(0));
    assert!(String::from_utf8(output.stdout).unwrap().contains("serve"));
}

#[test]
fn bad_flags_and_values_exit_1_with_a_message() {
    for args in [
        &["serve", "--no-such-flag"][..],
        &["serve"][..],
        &[
            "serve",
            "--data-dir",
            "/nonexistent",
            "--segment-size",
            "1000",
        ][..],
        &["serve", "--data-dir", "/nonexistent", "--cores", "0-"][..],
        &[
            "serve",
            "--data-dir",
            "/nonexistent",
            "--frame-size-max",
            "1024",
        ][..],
        &[
            "serve",
            "--data-dir",
            "/nonexistent",
            "--shards",
            "3",
            "--cores",
            "0",
        ][..],
    ] {
        let output = ringlog(args);
        assert_eq!(output.status.code(), Some(1), "{args:?}");
        assert!(!output.stderr.is_empty(), "{args:?}: no message");
    }
    let output = ringlog(&["serve"]);
    assert!(String::from_utf8(output.stderr)
        .unwrap()
        .contains("--data-dir"));
    // A commit block other than the two a segment header can name.
    let args = [
        "serve",
        "--data-dir",
        "/nonexistent",
        "--commit-block-bytes",
        "1024",
    ];
    let output = ringlog(&args);
    assert_eq!(output.status.code(), Some(1));
    let message = String::from_utf8(output.stderr).unwrap();
    assert!(message.contains("--commit-block-bytes") && message.contains("4096 or 512"));
}

#[test]
fn unusable_data_dir_and_port_in_use_exit_1() {
    if !uring_available() {
        return;
    }
    let dir = TestDir::new("startup-errors");
    let file = dir.0.join("not-a-directory");
    std::fs::write(&file, b"x").unwrap();
    let exited = Server::run_to_exit(&serve_args(&file, 1, &[]));
    assert_eq!(exited.status.code(), Some(1));
    assert!(
        exited.stderr.join("\n").contains("data directory"),
        "{:?}",
        exited.stderr
    );
    let server = Server::start(&dir.0.join("data"), 1, &[]);
    let exited = Server::run_to_exit(&serve_args(&dir.0.join("data"), 1, &[]));
    assert_eq!(exited.status.code(), Some(1));
    assert!(
        exited.stderr.join("\n").contains("in use"),
        "{:?}",
        exited.stderr
    );
    server.kill();
    // Two journals exist now that only one shard would open.
    std::fs::create_dir_all(dir.0.join("data").join("shard-1")).unwrap();
    let exited = Server::run_to_exit(&serve_args(&dir.0.join("data"), 1, &[]));
    assert_eq!(exited.status.code(), Some(1));
    assert!(
        exited.stderr.join("\n").contains("--shards 2"),
        "{:?}",
        exited.stderr
    );
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = taken.local_addr().unwrap().to_string();
    let args = serve_args(&dir.0.join("data"), 2, &["--listen", &address]);
    let exited = Server::run_to_exit(&args);
    assert_eq!(exited.status.code(), Some(1));
    let message = exited.stderr.join("\n");
    assert!(
        message.contains(&address) && message.contains("in use"),
        "{message}"
    );
}

#[test]
fn corrupt_segment_header_names_the_segment() {
    if !uring_available() {
        return;
    }
    let dir = TestDir::new("startup-corrupt");
    let server = Server::start(&dir.0, 1, &[]);
    server.kill();
    let shard = dir.0.join("shard-0");
    let mut segments: Vec<_> = std::fs::read_dir(&shard)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| {
            path.extension()
                .is_some_and(|extension| extension == "segment")
        })
        .collect();
    segments.sort();
    let mut bytes = std::fs::read(&segments[0]).unwrap();
    bytes[0] ^= 0xFF;
    std::fs::write(&segments[0], &bytes).unwrap();
    let exited = Server::run_to_exit(&serve_args(&dir.0, 1, &[]));
    assert_eq!(exited.status.code(), Some(1));
    let message = exited.stderr.join("\n");
    assert!(
        message.contains("shard-0") && message.contains("segment"),
        "{message}"
    );
}

#[test]
fn config_file_sets_options_and_flags_override_it() {
    if !uring_available() {
        return;
    }
    let dir = TestDir::new("startup-config");
    let file = dir.0.join("ringlog.toml");
    let data = dir.0.join("data");
    let text = format!(
        "data_dir = {:?}\nlisten = \"127.0.0.1:0\"\nhttp_listen = \"127.0.0.1:0\"\nshards = 2\n\
         segment_size = {}\n\
         sync_mode = \"dsync\"\nidle_timeout_ms = 60000\n",
        data.display().to_string(),
        SEGMENT_SIZE_TEST
    );
    std::fs::write(&file, text).unwrap();
    let config = file.display().to_string();
    let server = Server::start_args(&[
        "serve".into(),
        "--config".into(),
        config.clone(),
        "--shards".into(),
        "1".into(),
    ]);
    assert!(server.http.is_some(), "http_listen from the file");
    let exited = server.terminate();
    assert_eq!(
        exited.summaries().len(),
        1,
        "--shards 1 overrides shards = 2"
    );
    assert!(data.join("shard-0").is_dir() && !data.join("shard-1").exists());
    std::fs::write(&file, "data_dir = \"/tmp/x\"\nno_such_key = 1\n").unwrap();
    let output = ringlog(&["serve", "--config", &config]);
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8(output.stderr)
        .unwrap()
        .contains("no_such_key"));
}
