//! Disk full (issue 5, reliability.md S7): when the journal cannot get a new segment the
//! shard goes read-only (adds get EREADONLY, reads keep working) and becomes writable again
//! once space returns. Runs on a small ext4 file system of its own, loop-mounted.

use crate::support::{http_get, metric, uring_available, Reply, Server, TestDir, KEY};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use wire::code;

const LEDGER: i64 = 6_160_000;
const ENTRY_PAYLOAD_SIZE: usize = 64 * 1024;
/// 48 MiB image: about 37 MiB free after mkfs.
const IMAGE_SIZE: &str = "48M";
/// Leaves about 14 MiB: the open segment, the spare made at open and one more prepared
/// segment of 4 MiB fit; the next does not.
const FILLER_SIZE: &str = "23M";

/// A loop-mounted ext4 file system, unmounted on drop.
struct Mount {
    point: PathBuf,
}

impl Mount {
    fn new(dir: &Path) -> Result<Mount, String> {
        let image = dir.join("fs.img");
        let point = dir.join("mnt");
        std::fs::create_dir_all(&point).unwrap();
        let run = |program: &str, args: &[&str]| -> Result<(), String> {
            let output = Command::new(program)
                .args(args)
                .output()
                .map_err(|error| format!("{program}: {error}"))?;
            if output.status.success() {
                Ok(())
            } else {
                Err(format!(
                    "{program} {args:?}: {}",
                    String::from_utf8_lossy(&output.stderr).trim()
                ))
            }
        };
        let image_arg = image.to_str().unwrap();
        run("truncate", &["-s", IMAGE_SIZE, image_arg])?;
        run("mkfs.ext4", &["-q", "-F", image_arg])?;
        run("mount", &["-o", "loop", image_arg, point.to_str().unwrap()])?;
        Ok(Mount { point })
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.point).status();
    }
}

fn entry_body(entry: i64) -> Vec<u8> {
    let payload: Vec<u8> = (0..ENTRY_PAYLOAD_SIZE)
        .map(|i| u8::try_from((i + usize::try_from(entry).unwrap()) % 251).unwrap())
        .collect();
    let mut out = Vec::new();
    wire::encode_entry_body_crc32c(&mut out, LEDGER, entry, entry - 1, 0, &payload);
    out
}

fn add(client: &mut crate::support::Client, entry: i64) -> i32 {
    let mut frame = Vec::new();
    wire::client::encode_add_request(&mut frame, 0, &KEY, &entry_body(entry));
    client.send(&frame);
    match client.recv() {
        Reply::Add { code, .. } => code,
        other => panic!("add {entry}: {other:?}"),
    }
}

#[test]
fn a_full_disk_makes_the_shard_read_only_until_space_returns() {
    if !uring_available() {
        return;
    }
    let dir = TestDir::new("disk-full");
    let mount = match Mount::new(&dir.0) {
        Ok(mount) => mount,
        Err(reason) => {
            let required = std::env::var_os("CI").is_some_and(|value| !value.is_empty())
                || std::env::var_os("REQUIRE_URING").is_some_and(|value| !value.is_empty());
            assert!(!required, "cannot mount a small file system: {reason}");
            println!("SKIP disk_full: cannot mount a small file system: {reason}");
            return;
        }
    };
    let filler = mount.point.join("filler");
    let status = Command::new("fallocate")
        .args(["-l", FILLER_SIZE, filler.to_str().unwrap()])
        .status()
        .unwrap();
    assert!(status.success());
    let data = mount.point.join("data");
    // No reserve: this is the allocation failing. With the default 128 MiB reserve this
    // file system is too small to take a single add (the reserve's own proof is the interop
    // scenario disk-full, `make disk-full`, and engine/src/tests/disk_full.rs).
    let flags = ["--segment-size", "4194304", "--disk-reserve-mib", "0"];
    let server = Server::start(&data, 1, &flags);
    let mut client = server.connect();

    let mut acked = 0i64;
    let read_only = loop {
        let status = add(&mut client, acked);
        if status != code::EOK {
            break status;
        }
        acked += 1;
        assert!(acked < 1_000, "never ran out of space");
    };
    assert_eq!(read_only, code::EREADONLY, "after {acked} adds");
    assert!(acked > 0);
    // Reads keep working, and every acked entry is intact.
    let mut reader = server.connect();
    for entry in 0..acked {
        let (status, _, body) = reader.read(0, LEDGER, entry, None);
        assert_eq!(status, code::EOK, "read {entry}");
        assert!(body == entry_body(entry), "entry {entry} differs");
    }
    // Still read-only while nothing changed.
    assert_eq!(add(&mut client, acked), code::EREADONLY);
    // The HTTP endpoint shows it (issue 17): a read-only bookie is still ready (it serves
    // reads), as the Java bookie's is_ready says.
    let http = server.http.unwrap();
    let (status, state) = http_get(http, "/api/v1/bookie/state");
    assert_eq!(status, 200);
    assert!(state.contains("\"readOnly\":true"), "{state}");
    assert!(
        state.contains("\"availableForHighPriorityWrites\":false"),
        "{state}"
    );
    assert_eq!(http_get(http, "/api/v1/bookie/is_ready").0, 200);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let (_, scrape) = http_get(http, "/metrics");
        let errors = "ringlog_request_errors_total{operation=\"add\",code=\"EREADONLY\"}";
        let published = metric(&scrape, "ringlog_shard_read_only{shard=\"0\"}") == Some(1.0)
            && metric(&scrape, errors) == Some(2.0);
        if published && metric(&scrape, "bookie_SERVER_STATUS") == Some(0.0) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "read-only never published: {scrape}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    std::fs::remove_file(&filler).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let status = add(&mut client, acked);
        if status == code::EOK {
            break;
        }
        assert_eq!(status, code::EREADONLY);
        assert!(
            Instant::now() < deadline,
            "still read-only 10 s after space returned"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let (status, _, body) = reader.read(0, LEDGER, acked, None);
    assert_eq!(status, code::EOK);
    assert!(body == entry_body(acked));
    let (_, state) = http_get(http, "/api/v1/bookie/state");
    assert!(state.contains("\"readOnly\":false"), "{state}");

    let exited = server.terminate();
    assert_eq!(exited.status.code(), Some(0), "{:?}", exited.stderr);
    let stderr = exited.stderr.join("\n");
    assert!(stderr.contains("read-only"), "{stderr}");
    assert!(stderr.contains("writable again"), "{stderr}");
    drop(mount);
}
