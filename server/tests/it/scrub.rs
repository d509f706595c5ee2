//! The scrubber on a running server (docs/scrub.md): a byte flipped in a sealed segment file
//! by another process, as a failing disk would, is found within a cycle, logged with its
//! entry, counted in /metrics and /api/v1/bookie/scrub, and the entry answers EIO, never
//! wrong data; the other entries read back.

use crate::support::{
    body, http_get, metric, segment_entry_records, uring_available, wait_until, Client, Server,
    TestDir, KEY,
};
use std::os::unix::fs::FileExt;
use std::time::Duration;
use wire::code;

const LEDGER: i64 = 5;
const ENTRIES: i64 = 20_000;
const TIMEOUT: Duration = Duration::from_secs(60);

/// The first shard's scrub state, as the HTTP API gives it (one shard: its fields are the
/// first of each name).
fn scrub_json(server: &Server) -> Scrub {
    let (status, text) = http_get(server.http.unwrap(), "/api/v1/bookie/scrub");
    assert_eq!(status, 200, "{text}");
    assert!(
        text.starts_with("{\"shards\":[{\"shard\":0,\"enabled\":"),
        "{text}"
    );
    Scrub(text)
}

struct Scrub(String);

impl Scrub {
    fn get(&self, field: &str) -> u64 {
        let key = format!("\"{field}\":");
        let start = self
            .0
            .find(&key)
            .unwrap_or_else(|| panic!("{field} in {}", self.0))
            + key.len();
        let digits: String = self.0[start..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits
            .parse()
            .unwrap_or_else(|_| panic!("{field} in {}", self.0))
    }
}

impl std::fmt::Display for Scrub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// (position of the payload, entry id) of the `index`-th entry record of a segment file.
fn entry_record(image: &[u8], index: usize) -> (usize, i64) {
    let (position, _, entry) = segment_entry_records(image)[index];
    (position + 64, entry)
}

#[test]
fn a_flipped_byte_in_a_sealed_segment_is_found_logged_and_never_served() {
    if !uring_available() {
        return;
    }
    let dir = TestDir::new("scrub-damage");
    let server = Server::start(
        &dir.0,
        1,
        &[
            "--segment-size",
            "1048576",
            "--sort-sealed-segments",
            "false",
            "--scrub-cycle-hours",
            "0.0001",
            "--scrub-rate-mib",
            "64",
        ],
    );
    let mut client = server.connect();
    for start in (0..ENTRIES).step_by(500) {
        for entry in start..start + 500 {
            client.send_add(0, &KEY, LEDGER, entry);
        }
        for _ in 0..500 {
            let reply = client.recv();
            assert!(
                matches!(
                    reply,
                    crate::support::Reply::Add {
                        code: code::EOK,
                        ..
                    }
                ),
                "{reply:?}"
            );
        }
    }
    // Sealed segments and a clean cycle over them.
    wait_until("a clean scrub cycle", TIMEOUT, || {
        let shard = scrub_json(&server);
        // Before the first tick publishes, every field reads 0 and `enabled` false.
        shard.0.contains("\"enabled\":true")
            && shard.get("cyclesCompleted") >= 1
            && shard.get("segmentsChecked") >= 2
    });
    assert_eq!(scrub_json(&server).get("damageRecords"), 0);

    // Another process flips one payload byte of an entry in sealed segment 1.
    let path = dir.0.join("shard-0").join("0000000001.segment");
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .unwrap();
    let mut image = vec![0u8; 1 << 20];
    file.read_exact_at(&mut image, 0).unwrap();
    let (payload, damaged_entry) = entry_record(&image, 100);
    let flipped = [image[payload + 10] ^ 0x20];
    file.write_all_at(&flipped, u64::try_from(payload + 10).unwrap())
        .unwrap();
    file.sync_all().unwrap();
    drop(file);

    let cycles = scrub_json(&server).get("cyclesCompleted");
    wait_until("the damage found", TIMEOUT, || {
        scrub_json(&server).get("damageRecords") >= 1
    });
    let shard = scrub_json(&server);
    assert_eq!(shard.get("damageRecords"), 1, "{shard}");
    assert_eq!(shard.get("damageIndex"), 0, "{shard}");
    assert!(
        shard.get("cyclesCompleted") <= cycles + 1,
        "found within a cycle: {shard}"
    );
    let (_, text) = http_get(server.http.unwrap(), "/metrics");
    assert_eq!(
        metric(&text, "ringlog_scrub_damage_records_total"),
        Some(1.0)
    );

    // Never served as data: EIO for that entry, its neighbours intact.
    let mut reader = Client::connect(server.address);
    let (status, _, _) = reader.read(0, LEDGER, damaged_entry, None);
    assert_eq!(status, code::EIO);
    for entry in [damaged_entry - 1, damaged_entry + 1, 0, ENTRIES - 1] {
        let (status, _, read) = reader.read(0, LEDGER, entry, None);
        assert_eq!(status, code::EOK);
        assert_eq!(read, body(LEDGER, entry));
    }
    let exited = server.terminate();
    let logged = exited
        .stdout
        .iter()
        .chain(&exited.stderr)
        .filter(|line| line.contains("scrub: damage in 0000000001.segment"))
        .collect::<Vec<_>>();
    assert_eq!(logged.len(), 1, "{logged:?}");
    assert!(
        logged[0].contains(&format!("ledger {LEDGER} entry {damaged_entry}")),
        "{logged:?}"
    );
}
