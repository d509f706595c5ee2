//! Replays every committed corpus file through its target's function (no libFuzzer needed),
//! and checks that the seeds still reach the paths they were generated for.
//!
//! ```text
//! cd fuzz && cargo +nightly test --release
//! ```

use engine::{Config, Journal, OpenError, SegmentId, SimDisk};
use std::path::{Path, PathBuf};

type Target = fn(&[u8]);

const TARGETS: [(&str, Target); 7] = [
    ("v2_request", ringlog_fuzz::v2_request),
    ("v3_request", ringlog_fuzz::v3_request),
    ("v2_response", ringlog_fuzz::v2_response),
    ("record_decode", ringlog_fuzz::record_decode),
    ("recovery_scan", ringlog_fuzz::recovery_scan),
    ("sealed_open", ringlog_fuzz::sealed_open),
    ("tls_after_start", ringlog_fuzz::tls_after_start),
];

/// The committed seeds of `target`, plus the working corpus `scripts/fuzz_smoke.sh` grows in
/// `target/corpus/<target>` if it exists (not committed; replayed so that a long fuzzing
/// session also leaves regression inputs for `recovery_reopen`).
fn corpus_files(target: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let seeds = root.join("corpus").join(target);
    let working = root.join("target/corpus").join(target);
    let mut files = Vec::new();
    for directory in [seeds, working] {
        let Ok(entries) = std::fs::read_dir(&directory) else {
            continue;
        };
        files.extend(entries.map(|entry| entry.expect("directory entry").path()));
    }
    files.sort();
    files
}

#[test]
fn every_corpus_file_passes_its_target() {
    for (target, run) in TARGETS {
        let files = corpus_files(target);
        assert!(!files.is_empty(), "corpus/{target} is empty");
        for file in files {
            let data = std::fs::read(&file).expect("read a corpus file");
            println!("{target}: {}", file.display());
            run(&data);
        }
    }
}

#[test]
fn every_recovery_corpus_file_reopens_to_the_same_index() {
    for file in corpus_files("recovery_scan") {
        let data = std::fs::read(&file).expect("read a corpus file");
        println!("recovery_reopen: {}", file.display());
        ringlog_fuzz::recovery_reopen(&data);
    }
}

fn open_seed(name: &str) -> Result<Journal<SimDisk>, OpenError> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus/recovery_scan")
        .join(name);
    let data = std::fs::read(&path).expect("read a recovery seed");
    let mut disk = SimDisk::new(0);
    disk.insert_segment(SegmentId(0), ringlog_fuzz::segment_image(&data));
    let config = Config {
        segment_size: ringlog_fuzz::RECOVERY_SEGMENT_SIZE,
        ..Config::default()
    };
    Journal::open(disk, config)
}

#[test]
fn recovery_seeds_reach_their_paths() {
    let journal = open_seed("three_commits").expect("a clean journal opens");
    assert_eq!(journal.index().ledger_count(), 3);
    assert_eq!(journal.stats().torn_tail_truncations, 0);
    let journal = open_seed("torn_tail").expect("a torn tail is truncated");
    assert_eq!(journal.stats().torn_tail_truncations, 1);
    let error = open_seed("corrupt_middle").expect_err("mid-log corruption is refused");
    assert!(matches!(error, OpenError::Corrupt { .. }), "{error}");
    let error = open_seed("bad_segment_header").expect_err("a bad header is refused");
    assert!(matches!(error, OpenError::SegmentHeader { .. }), "{error}");
    let journal = open_seed("repair_mode_two_commits").expect("a repaired journal opens");
    assert_eq!(journal.index().ledger_count(), 3);
    let journal = open_seed("empty_journal").expect("an empty journal opens");
    assert_eq!(journal.index().ledger_count(), 0);
}
