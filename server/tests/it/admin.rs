//! The admin commands (`ringlog ledgers`, `ledger`, `verify`, `segment`) as real processes on
//! a journal of known contents, written in-process by the engine on a real directory.

use crate::support::{body, uring_available, Server, TestDir, KEY};
use engine::uring::{Ring, UringDisk};
use engine::{AddOptions, Config, Disk, EntryId, Journal, LedgerId};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::rc::Rc;

/// Ledger 1: entries 0..LEDGER_1_ENTRIES over several segments. Ledger 2: 10 entries, then
/// fenced. Ledger 3: 5 entries, then deleted.
const LEDGER_1_ENTRIES: i64 = 3000;
const SEGMENT_SIZE: u64 = 256 * 1024;

struct Output {
    code: i32,
    stdout: String,
    stderr: String,
}

fn ringlog(args: &[&str]) -> Output {
    let output = Command::new(env!("CARGO_BIN_EXE_ringlog"))
        .args(args)
        .output()
        .unwrap();
    Output {
        code: output.status.code().unwrap(),
        stdout: String::from_utf8(output.stdout).unwrap(),
        stderr: String::from_utf8(output.stderr).unwrap(),
    }
}

fn settle(ring: &Rc<RefCell<Ring>>, journal: &mut Journal<UringDisk>) {
    let mut events = Vec::new();
    let mut net = Vec::new();
    for _ in 0..1_000_000 {
        journal.submit();
        if journal.disk_mut().in_flight() > 0 {
            ring.borrow_mut().submit_and_wait(1).unwrap();
        }
        ring.borrow_mut().reap(&mut net);
        assert!(net.is_empty());
        journal.poll();
        journal.events_swap(&mut events);
        events.clear();
        let idle = journal.is_idle() && journal.disk_mut().in_flight() == 0;
        if idle && !journal.deletions_pending() {
            return;
        }
    }
    panic!("journal did not settle");
}

fn add(journal: &mut Journal<UringDisk>, ledger: i64, entry: i64) {
    add_body(journal, ledger, entry, &body(ledger, entry));
}

fn add_body(journal: &mut Journal<UringDisk>, ledger: i64, entry: i64, data: &[u8]) {
    let token = u64::try_from(entry).unwrap();
    let options = AddOptions::default();
    journal
        .add(token, LedgerId(ledger), EntryId(entry), &KEY, data, options)
        .unwrap();
}

/// Writes the known journal into `DIR/shard-0`; returns `DIR`.
fn journal_known(name: &str) -> TestDir {
    journal_known_damaged_before_the_disk(name, None)
}

/// `journal_known`, with ledger 2's entry `bad_digest` stored as a body whose payload was
/// changed after the client computed its CRC32C digest: a sound record whose digest does not
/// verify, as damage before the disk leaves it.
fn journal_known_damaged_before_the_disk(name: &str, bad_digest: Option<i64>) -> TestDir {
    let dir = TestDir::new(name);
    let config = Config {
        segment_size: SEGMENT_SIZE,
        ..Config::default()
    };
    let ring = Rc::new(RefCell::new(Ring::new(256).unwrap()));
    let disk = UringDisk::open(ring.clone(), &dir.0.join("shard-0"), true).unwrap();
    let mut journal = Journal::open(disk, config).unwrap();
    for entry in 0..5 {
        add(&mut journal, 3, entry);
    }
    for entry in 0..10 {
        let mut data = body(2, entry);
        if Some(entry) == bad_digest {
            let last = data.len() - 1;
            data[last] ^= 0x01;
        }
        add_body(&mut journal, 2, entry, &data);
    }
    settle(&ring, &mut journal);
    journal.fence(1_000_000, LedgerId(2), &KEY).unwrap();
    // Small commits, so the active segment ends with many of them.
    for entry in 0..LEDGER_1_ENTRIES {
        add(&mut journal, 1, entry);
        if entry % 20 == 19 {
            settle(&ring, &mut journal);
        }
    }
    settle(&ring, &mut journal);
    assert!(journal.delete_ledger(LedgerId(3)));
    settle(&ring, &mut journal);
    dir
}

/// `key=value` fields of a line.
fn fields(line: &str) -> BTreeMap<&str, &str> {
    line.split(' ')
        .filter_map(|field| field.split_once('='))
        .collect()
}

fn lines_of<'a>(text: &'a str, prefix: &str) -> Vec<BTreeMap<&'a str, &'a str>> {
    text.lines()
        .filter(|line| line.starts_with(prefix))
        .map(fields)
        .collect()
}

/// Every file of the journal, to show a command changed nothing.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    for entry in std::fs::read_dir(dir.join("shard-0")).unwrap() {
        let path = entry.unwrap().path();
        files.insert(path.clone(), std::fs::read(path).unwrap());
    }
    let lock = dir.join("ringlog.lock");
    files.insert(lock.clone(), std::fs::read(&lock).unwrap_or_default());
    files
}

fn flip_byte(path: &Path, position: u64) {
    let mut bytes = std::fs::read(path).unwrap();
    let index = usize::try_from(position).unwrap();
    bytes[index] ^= 0xFF;
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn ledgers_lists_live_ledgers_and_not_deleted_ones() {
    if !uring_available() {
        return;
    }
    let dir = journal_known("admin-ledgers");
    let data_dir = dir.0.to_str().unwrap();
    let before = snapshot(&dir.0);
    let output = ringlog(&["ledgers", "--data-dir", data_dir]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    let ledgers = lines_of(&output.stdout, "ledger=");
    assert_eq!(ledgers.len(), 2, "{}", output.stdout);
    assert_eq!(ledgers[0]["ledger"], "1");
    assert_eq!(ledgers[0]["entries"], LEDGER_1_ENTRIES.to_string());
    assert_eq!(ledgers[0]["entry_last"], (LEDGER_1_ENTRIES - 1).to_string());
    assert_eq!(ledgers[0]["lac"], (LEDGER_1_ENTRIES - 2).to_string());
    assert_eq!(ledgers[0]["fenced"], "no");
    assert_eq!(ledgers[0]["shard"], "0");
    assert_eq!(ledgers[1]["ledger"], "2");
    assert_eq!(ledgers[1]["entries"], "10");
    assert_eq!(ledgers[1]["fenced"], "yes");
    assert!(!output.stdout.contains("ledger=3 "), "{}", output.stdout);
    let output = ringlog(&["listledgers", "--data-dir", data_dir, "--deleted"]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert!(
        output.stdout.contains("ledger=3 shard=0 state=deleted"),
        "{}",
        output.stdout
    );
    assert_eq!(before, snapshot(&dir.0), "the journal was not touched");
}

#[test]
fn ledger_lists_each_entry_once_and_dumps_payloads() {
    if !uring_available() {
        return;
    }
    let dir = journal_known("admin-ledger");
    let data_dir = dir.0.to_str().unwrap();
    let output = ringlog(&["ledger", "1", "--data-dir", data_dir]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    let entries = lines_of(&output.stdout, "entry=");
    let ids: Vec<i64> = entries
        .iter()
        .map(|e| e["entry"].parse().unwrap())
        .collect();
    assert_eq!(ids, (0..LEDGER_1_ENTRIES).collect::<Vec<_>>());
    let segments: std::collections::BTreeSet<&str> =
        entries.iter().map(|entry| entry["segment"]).collect();
    assert!(
        segments.len() >= 3,
        "sealed and open segments: {segments:?}"
    );
    for (entry, line) in entries.iter().enumerate() {
        let expected = body(1, i64::try_from(entry).unwrap()).len();
        assert_eq!(line["size"], expected.to_string());
    }
    let output = ringlog(&["ledger", "2", "--data-dir", data_dir, "--dump"]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    // The body starts with the ledger id and entry id, big-endian.
    assert!(
        output
            .stdout
            .contains("  00000000  00 00 00 00 00 00 00 02 00 00 00 00 00 00 00 09"),
        "{}",
        output.stdout
    );
    let output = ringlog(&["ledger", "3", "--data-dir", data_dir]);
    assert_eq!(output.code, 1, "a deleted ledger is not found");
    assert!(
        output.stderr.contains("ledger 3 not found"),
        "{}",
        output.stderr
    );
}

#[test]
fn segment_prints_header_records_and_end() {
    if !uring_available() {
        return;
    }
    let dir = journal_known("admin-segment");
    let file = dir.0.join("shard-0/0000000000.segment");
    let output = ringlog(&["segment", file.to_str().unwrap()]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    let mut lines = output.stdout.lines();
    let header = fields(lines.next().unwrap());
    assert_eq!(header["id"], "0");
    assert_eq!(header["segment_size"], SEGMENT_SIZE.to_string());
    let records = lines_of(&output.stdout, "record ");
    // The first records: ledger 3's key, then its entries.
    assert_eq!(records[0]["kind"], "key");
    assert_eq!(records[0]["ledger"], "3");
    assert_eq!(records[0]["position"], "4096");
    assert_eq!(records[1]["kind"], "entry");
    assert!(records.iter().all(|record| record["crc"] == "ok"));
    assert!(output
        .stdout
        .lines()
        .last()
        .unwrap()
        .starts_with("end position="));
    let alias = ringlog(&["readjournal", file.to_str().unwrap()]);
    assert_eq!(alias.stdout, output.stdout);
}

#[test]
fn verify_passes_clean_then_names_a_corrupt_sealed_record() {
    if !uring_available() {
        return;
    }
    let dir = journal_known("admin-verify");
    let data_dir = dir.0.to_str().unwrap();
    let before = snapshot(&dir.0);
    let output = ringlog(&["verify", "--data-dir", data_dir]);
    assert_eq!(output.code, 0, "{}{}", output.stdout, output.stderr);
    assert!(output
        .stdout
        .contains("verify result=ok shards=1 problems=0"));
    assert!(output
        .stdout
        .contains("checkpoint shard=0 file=checkpoint status=ok"));
    assert!(output
        .stdout
        .contains("index shard=0 file=0000000000.index status=ok"));
    assert_eq!(before, snapshot(&dir.0), "verify wrote nothing");
    // One byte of the payload of a record in sealed segment 0.
    let listing = ringlog(&["ledger", "1", "--data-dir", data_dir]).stdout;
    let entry = lines_of(&listing, "entry=")
        .into_iter()
        .find(|entry| entry["segment"] == "0000000000.segment")
        .unwrap()
        .iter()
        .map(|(key, value)| ((*key).to_string(), (*value).to_string()))
        .collect::<BTreeMap<_, _>>();
    let position: u64 = entry["position"].parse().unwrap();
    flip_byte(&dir.0.join("shard-0/0000000000.segment"), position + 70);
    let output = ringlog(&["verify", "--data-dir", data_dir]);
    assert_eq!(output.code, 3, "{}", output.stdout);
    let expected = format!("damaged shard=0 file=0000000000.segment position={position} ");
    assert!(output.stdout.contains(&expected), "{}", output.stdout);
    assert!(output
        .stdout
        .contains("verify result=damaged shards=1 problems=1"));
}

#[test]
fn verify_names_a_sound_record_whose_client_digest_does_not_verify() {
    if !uring_available() {
        return;
    }
    let dir = journal_known_damaged_before_the_disk("admin-digest", Some(6));
    let data_dir = dir.0.to_str().unwrap();
    let listing = ringlog(&["ledger", "2", "--data-dir", data_dir]).stdout;
    let entry = lines_of(&listing, "entry=")
        .into_iter()
        .find(|entry| entry["entry"] == "6")
        .unwrap()
        .iter()
        .map(|(key, value)| ((*key).to_string(), (*value).to_string()))
        .collect::<BTreeMap<_, _>>();
    assert_eq!(entry["segment"], "0000000000.segment", "{listing}");
    let output = ringlog(&["verify", "--data-dir", data_dir]);
    assert_eq!(output.code, 3, "{}", output.stdout);
    let expected = format!(
        "damaged shard=0 file=0000000000.segment position={} ",
        entry["position"]
    );
    assert!(output.stdout.contains(&expected), "{}", output.stdout);
    assert!(
        output.stdout.contains("digest does not verify"),
        "{}",
        output.stdout
    );
    assert!(output
        .stdout
        .contains("verify result=damaged shards=1 problems=1"));
}

/// The active segment: a bad last record is a torn tail (exit 0), a bad record with later
/// commits after it is corruption (exit 3), exactly as recovery decides.
#[test]
fn verify_tells_a_torn_tail_from_corruption() {
    if !uring_available() {
        return;
    }
    let dir = journal_known("admin-torn");
    let data_dir = dir.0.to_str().unwrap();
    let output = ringlog(&["verify", "--data-dir", data_dir]);
    let tail = lines_of(&output.stdout, "tail ").pop().unwrap();
    let active = dir.0.join("shard-0").join(tail["append_segment"]);
    let listing = ringlog(&["segment", active.to_str().unwrap()]).stdout;
    let records = lines_of(&listing, "record ");
    assert!(records.len() > 100, "the active segment holds many commits");
    let last: u64 = records.last().unwrap()["position"].parse().unwrap();
    let original = std::fs::read(&active).unwrap();
    flip_byte(&active, last + 70);
    let output = ringlog(&["verify", "--data-dir", data_dir]);
    assert_eq!(output.code, 0, "{}", output.stdout);
    assert!(
        output.stdout.contains("torn-tail shard=0"),
        "{}",
        output.stdout
    );
    assert!(!output.stdout.contains("damaged"), "{}", output.stdout);
    std::fs::write(&active, &original).unwrap();
    let first: u64 = records[0]["position"].parse().unwrap();
    flip_byte(&active, first + 70);
    let output = ringlog(&["verify", "--data-dir", data_dir]);
    assert_eq!(output.code, 3, "{}", output.stdout);
    let expected = format!(
        "damaged shard=0 file={} position={first} ",
        tail["append_segment"]
    );
    assert!(output.stdout.contains(&expected), "{}", output.stdout);
    // The other commands refuse the journal as a server's open would, naming verify.
    let output = ringlog(&["ledgers", "--data-dir", data_dir]);
    assert_eq!(output.code, 1);
    assert!(
        output.stderr.contains("ringlog verify"),
        "{}",
        output.stderr
    );
}

#[test]
fn a_running_server_or_a_missing_directory_is_refused() {
    if !uring_available() {
        return;
    }
    let dir = TestDir::new("admin-locked");
    let data_dir = dir.0.to_str().unwrap();
    let server = Server::start(&dir.0, 1, &["--http-listen", "off"]);
    for command in ["ledgers", "verify"] {
        let output = ringlog(&[command, "--data-dir", data_dir]);
        assert_eq!(output.code, 1, "{command}: {}", output.stdout);
        assert!(output.stderr.contains("is in use"), "{}", output.stderr);
        assert!(output.stdout.is_empty());
    }
    let segment = dir.0.join("shard-0/0000000000.segment");
    let output = ringlog(&["segment", segment.to_str().unwrap()]);
    assert_eq!(output.code, 1);
    assert!(output.stderr.contains("is in use"), "{}", output.stderr);
    let exited = server.terminate();
    assert!(exited.status.success());
    let output = ringlog(&["ledgers", "--data-dir", data_dir]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    let missing = dir.0.join("absent");
    let output = ringlog(&["verify", "--data-dir", missing.to_str().unwrap()]);
    assert_eq!(output.code, 1);
    assert!(
        output.stderr.contains("does not exist"),
        "{}",
        output.stderr
    );
    assert!(!missing.exists(), "nothing is created");
}

/// A journal whose segments were removed, recycled and compacted: ledger 5 alone fills
/// whole segments, ledgers 1 to 4 share the next ones; 5, 1, 2 and 4 are deleted, so the
/// first segments die (removed or kept for reuse) and the shared ones are compacted; ledger
/// 6 then fills recycled segments, which hold stale records past their data.
fn journal_churned(name: &str) -> TestDir {
    let dir = TestDir::new(name);
    let config = Config {
        segment_size: SEGMENT_SIZE,
        compaction_threshold_minor_per_mille: 600,
        ..Config::default()
    };
    let ring = Rc::new(RefCell::new(Ring::new(256).unwrap()));
    let disk = UringDisk::open(ring.clone(), &dir.0.join("shard-0"), true).unwrap();
    let mut journal = Journal::open(disk, config).unwrap();
    let mut added = 0;
    let mut add_settled = |journal: &mut Journal<UringDisk>, ledger: i64, entry: i64| {
        add(journal, ledger, entry);
        added += 1;
        if added % 50 == 0 {
            settle(&ring, journal);
        }
    };
    for entry in 0..3000 {
        add_settled(&mut journal, 5, entry);
    }
    for entry in 0..700 {
        for ledger in 1..=4 {
            add_settled(&mut journal, ledger, entry);
        }
    }
    settle(&ring, &mut journal);
    for ledger in [5, 1, 2, 4] {
        assert!(journal.delete_ledger(LedgerId(ledger)));
    }
    journal.compaction_grant(u64::MAX);
    for _ in 0..10 {
        settle(&ring, &mut journal);
    }
    for entry in 0..3000 {
        add_settled(&mut journal, 6, entry);
    }
    for _ in 0..10 {
        settle(&ring, &mut journal);
    }
    let stats = journal.stats();
    assert!(stats.segments_recycled > 0, "{stats:?}");
    assert!(stats.compactions_done > 0, "{stats:?}");
    dir
}

#[test]
fn verify_and_ledgers_read_recycled_and_compacted_segments() {
    if !uring_available() {
        return;
    }
    let dir = journal_churned("admin-churned");
    let data_dir = dir.0.to_str().unwrap();
    let before = snapshot(&dir.0);
    let output = ringlog(&["verify", "--data-dir", data_dir]);
    assert_eq!(output.code, 0, "{}{}", output.stdout, output.stderr);
    assert!(
        output.stdout.contains("verify result=ok"),
        "{}",
        output.stdout
    );
    let output = ringlog(&["ledgers", "--data-dir", data_dir]);
    let ledgers = lines_of(&output.stdout, "ledger=");
    let ids: Vec<&str> = ledgers.iter().map(|ledger| ledger["ledger"]).collect();
    assert_eq!(ids, ["3", "6"], "{}", output.stdout);
    assert_eq!(ledgers[0]["entries"], "700");
    assert_eq!(ledgers[1]["entries"], "3000");
    let output = ringlog(&["ledger", "3", "--data-dir", data_dir, "--dump"]);
    assert_eq!(output.code, 0, "{}", output.stdout);
    assert_eq!(lines_of(&output.stdout, "entry=").len(), 700);
    // Every segment's header, to show both kinds were there to read.
    let (mut recycled, mut compacted) = (false, false);
    for entry in std::fs::read_dir(dir.0.join("shard-0")).unwrap() {
        let path = entry.unwrap().path();
        if path
            .extension()
            .is_some_and(|extension| extension == "segment")
        {
            let output = ringlog(&["segment", path.to_str().unwrap()]);
            assert_eq!(output.code, 0, "{}", output.stdout);
            let header = fields(output.stdout.lines().next().unwrap());
            recycled |= header["recycled"] == "yes";
            compacted |= header["generation"] != "0";
        }
    }
    assert!(
        recycled && compacted,
        "recycled {recycled} compacted {compacted}"
    );
    assert_eq!(before, snapshot(&dir.0), "nothing was written");
}

#[test]
fn verify_names_a_corrupt_index_page_and_checkpoint() {
    if !uring_available() {
        return;
    }
    let dir = journal_known("admin-index");
    let data_dir = dir.0.to_str().unwrap();
    // Segment 0's index: a header sector, a run table of one sector, then slot pages.
    let index = dir.0.join("shard-0/0000000000.index");
    let runs = 8192;
    flip_byte(&index, runs + 10);
    let output = ringlog(&["verify", "--data-dir", data_dir]);
    assert_eq!(output.code, 3, "{}", output.stdout);
    let expected = format!("damaged shard=0 file=0000000000.index position={runs} ");
    assert!(output.stdout.contains(&expected), "{}", output.stdout);
    let output = ringlog(&["ledger", "1", "--data-dir", data_dir]);
    assert_eq!(output.code, 3, "{}", output.stdout);
    assert!(
        output.stdout.contains("reason=page-checksum"),
        "{}",
        output.stdout
    );
    flip_byte(&index, runs + 10);
    flip_byte(&dir.0.join("shard-0/checkpoint"), 20);
    let output = ringlog(&["verify", "--data-dir", data_dir]);
    assert_eq!(output.code, 3, "{}", output.stdout);
    assert!(
        output
            .stdout
            .contains("damaged shard=0 file=checkpoint reason=\"checkpoint: checksum"),
        "{}",
        output.stdout
    );
}

/// A sealed segment whose last record ends less than a record header before the segment's
/// end (the rest is the last commit's zero padding) verifies clean: its data runs to the
/// end, as its index says. (`verify` reported such segments as damaged.)
#[test]
fn verify_accepts_a_last_record_ending_just_before_the_segment_end() {
    if !uring_available() {
        return;
    }
    let dir = TestDir::new("admin-verify-tight-end");
    let config = Config {
        segment_size: 64 * 1024,
        ..Config::default()
    };
    let ring = Rc::new(RefCell::new(Ring::new(256).unwrap()));
    let disk = UringDisk::open(ring.clone(), &dir.0.join("shard-0"), true).unwrap();
    let mut journal = Journal::open(disk, config).unwrap();
    // One record of 4088 bytes per commit: each commit is one sector with 8 bytes of padding,
    // so the last commit of a segment ends 8 bytes before the segment does.
    let payload = 4096 - 8 - 64;
    assert_eq!(engine::record::record_size(payload), 4096 - 8);
    for entry in 0..40 {
        let mut data = body(7, entry);
        data.resize(payload, 0xAB);
        let token = u64::try_from(entry).unwrap();
        let options = AddOptions::default();
        journal
            .add(token, LedgerId(7), EntryId(entry), &KEY, &data, options)
            .unwrap();
        settle(&ring, &mut journal);
    }
    drop(journal);
    let data_dir = dir.0.to_str().unwrap();
    let segment = ringlog(&["segment", &format!("{data_dir}/shard-0/0000000001.segment")]);
    assert!(
        segment.stdout.contains("position=61440 ") && segment.stdout.contains("end position=65536"),
        "{}",
        segment.stdout
    );
    let output = ringlog(&["verify", "--data-dir", data_dir]);
    assert_eq!(output.code, 0, "{}{}", output.stdout, output.stderr);
    assert!(
        output
            .stdout
            .contains("verify result=ok shards=1 problems=0"),
        "{}",
        output.stdout
    );
}
