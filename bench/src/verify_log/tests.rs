//! Tests of the verify log format and the payload generator.

use super::*;

#[test]
fn lines_round_trip_and_errors_name_the_line() {
    let entry = LoggedEntry {
        ledger_id: 7,
        entry_id: 42,
        payload_crc32c: 0xAB,
        payload_len: 1024,
    };
    let mut out = Vec::new();
    format_line(&mut out, &entry);
    assert_eq!(out, b"7 42 000000ab 1024\n");
    let line = std::str::from_utf8(&out).expect("ascii").trim_end();
    assert_eq!(parse_line(line, 1).expect("parses"), entry);
    for bad in [
        "7 42 000000ab",
        "7 x 000000ab 1",
        "7 42 ab 1",
        "-1 0 000000ab 1",
        "7 42 0000zzab 1",
    ] {
        let error = parse_line(bad, 9).expect_err(bad);
        assert!(error.contains("line 9"), "{error}");
    }
}

#[test]
fn read_log_skips_comments_and_reports_a_torn_tail() {
    let path = std::env::temp_dir().join(format!("ringlog-verify-log-{}", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let file = LogFile::open_append(&path).expect("open");
    let mut buffer = LogBuffer::new();
    for entry_id in 0..3 {
        let entry = LoggedEntry {
            ledger_id: 1,
            entry_id,
            payload_crc32c: 5,
            payload_len: 8,
        };
        buffer.push(&file, &entry).expect("push");
    }
    buffer.flush(&file).expect("flush");
    drop(file);
    let mut text = std::fs::read_to_string(&path).expect("read");
    assert!(text.starts_with("# ringlog-bench verify log"));
    text.push_str("1 3 0000");
    std::fs::write(&path, &text).expect("write");
    let contents = read_log(&path).expect("parses");
    assert_eq!(contents.entries.len(), 3);
    assert_eq!(contents.entries[2].entry_id, 2);
    assert!(contents.torn_tail.expect("torn").contains("line 5"));
    std::fs::write(&path, "# c\n1 2 3\n").expect("write");
    let error = read_log(&path).err().expect("bad line");
    assert!(error.contains("line 2"), "{error}");
    let _ = std::fs::remove_file(&path);
}

#[test]
fn payload_is_deterministic_and_checked_in_pieces() {
    let mut a = vec![0u8; 1000];
    let mut b = vec![0u8; 1000];
    payload_fill(3, 4, &mut a);
    payload_fill(3, 4, &mut b);
    assert_eq!(a, b);
    payload_fill(3, 5, &mut b);
    assert_ne!(a, b);
    assert!(payload_matches(3, 4, &a));
    assert!(payload_matches(3, 4, &a[..999]));
    a[777] ^= 1;
    assert!(!payload_matches(3, 4, &a));
    assert!(payload_matches(0, 0, &[]));
}
