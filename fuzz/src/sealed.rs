//! `sealed_open`: `Journal::open` on a journal whose first sealed index or whose checkpoint is
//! replaced by the input.
//!
//! The journal is built once per process: two ledgers written in turn over 256 KiB segments,
//! so several segments are sealed (each with an index) and a checkpoint exists. The first
//! input byte chooses the file (bit 0: segment 0's index, or the checkpoint) and whether its
//! checksums are recomputed after the input is laid over it (bit 1), so mutations reach the
//! decoders' checks beyond the checksums. The rest of the input overwrites the file from its
//! start (the file keeps its size).
//!
//! Properties: open returns `Ok` or `Err`, never panics; after `Ok`, every entry written reads
//! back as exactly its bytes or fails (`Io`, `NoEntry`, `NoLedger`): a damaged index or
//! checkpoint may lose an entry's location, never make another record pass for it.

use engine::checkpoint;
use engine::disk::Disk;
use engine::index_file::{self, RUN_SIZE};
use engine::{
    AddOptions, Config, EntryId, Event, FileId, Journal, LedgerId, ReadError, ReadOutcome,
    ReadTarget, SimDisk,
};
use std::collections::BTreeMap;
use std::sync::OnceLock;

const SEGMENT_SIZE: u64 = 256 * 1024;
const READ_TOKEN: u64 = 7;
const POLLS_MAX: usize = 1_000;
const SECTOR: usize = 4096;

struct Base {
    files: Vec<(FileId, Vec<u8>)>,
    entries: BTreeMap<(i64, i64), Vec<u8>>,
}

fn config() -> Config {
    Config {
        segment_size: SEGMENT_SIZE,
        index_cache_pages: 2,
        ..Config::default()
    }
}

fn body(ledger: i64, entry: i64) -> Vec<u8> {
    let mut body = Vec::with_capacity(132);
    body.extend_from_slice(&ledger.to_be_bytes());
    body.extend_from_slice(&entry.to_be_bytes());
    body.extend_from_slice(&(entry - 1).to_be_bytes());
    body.extend_from_slice(&0i64.to_be_bytes());
    body.extend((0..100u8).map(|i| i ^ entry.to_le_bytes()[0]));
    body
}

fn drive(journal: &mut Journal<SimDisk>) {
    let mut events = Vec::new();
    for _ in 0..100_000 {
        journal.submit();
        journal.poll();
        journal.events_swap(&mut events);
        events.clear();
        if journal.is_idle() && journal.disk_mut().in_flight() == 0 {
            return;
        }
    }
    panic!("the base journal did not settle");
}

fn base() -> &'static Base {
    static BASE: OnceLock<Base> = OnceLock::new();
    BASE.get_or_init(|| {
        let mut journal = Journal::open(SimDisk::new(1), config()).expect("open");
        let mut entries = BTreeMap::new();
        for ledger in [1i64, 2] {
            for entry in 0..1500i64 {
                let data = body(ledger, entry);
                let key = [ledger as u8; 20];
                let options = AddOptions::default();
                while journal
                    .add(0, LedgerId(ledger), EntryId(entry), &key, &data, options)
                    .is_err()
                {
                    drive(&mut journal);
                }
                entries.insert((ledger, entry), data);
            }
            drive(&mut journal);
        }
        assert!(
            journal.stats().segments_sealed >= 2,
            "the base must seal segments"
        );
        let mut disk = journal.into_disk().crash();
        let list = disk.files_list().expect("list");
        let files = list
            .into_iter()
            .map(|file| {
                let bytes = disk.durable_file_mut(file).expect("listed").clone();
                (file, bytes)
            })
            .collect();
        Base { files, entries }
    })
}

/// Recomputes the checksums of an index file laid over by the input.
fn index_repair(bytes: &mut [u8]) {
    let run_count = u32::from_le_bytes(bytes[12..16].try_into().expect("4 bytes"));
    let table_end = SECTOR + RUN_SIZE * run_count as usize;
    if table_end <= bytes.len() {
        let checksum = crc32c::crc32c(&bytes[SECTOR..table_end]);
        bytes[44..48].copy_from_slice(&checksum.to_le_bytes());
        let pages_start = index_file::slot_table_offset(run_count) as usize;
        if pages_start <= bytes.len() {
            for page in bytes[pages_start..].chunks_exact_mut(SECTOR) {
                index_file::page_seal(page);
            }
        }
    }
    // Version 1 has its header checksum at 56, version 2 (the generation at 56) at 60.
    let checksum_at = if bytes[4] == index_file::INDEX_VERSION_V1 {
        56
    } else {
        60
    };
    let checksum = crc32c::crc32c(&bytes[0..checksum_at]);
    bytes[checksum_at..checksum_at + 4].copy_from_slice(&checksum.to_le_bytes());
}

/// Recomputes the checksums of a checkpoint laid over by the input.
fn checkpoint_repair(bytes: &mut [u8]) {
    let word =
        |bytes: &[u8], at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4"));
    let ledgers = word(bytes, 24);
    let tombstones = word(bytes, 40);
    let ledger_end = SECTOR + checkpoint::LEDGER_RECORD_SIZE * ledgers as usize;
    if ledger_end <= bytes.len() {
        let checksum = crc32c::crc32c(&bytes[SECTOR..ledger_end]);
        bytes[28..32].copy_from_slice(&checksum.to_le_bytes());
        let start = checkpoint::tombstone_table_offset(ledgers) as usize;
        let end = start + checkpoint::TOMBSTONE_SIZE * tombstones as usize;
        if end <= bytes.len() {
            let checksum = crc32c::crc32c(&bytes[start..end]);
            bytes[44..48].copy_from_slice(&checksum.to_le_bytes());
        }
    }
    let checksum = crc32c::crc32c(&bytes[0..48]);
    bytes[48..52].copy_from_slice(&checksum.to_le_bytes());
    // Version 2's scrub section has its own checksum.
    let checksum = crc32c::crc32c(&bytes[52..72]);
    bytes[72..76].copy_from_slice(&checksum.to_le_bytes());
}

/// The fuzz target. See the module docs.
pub fn sealed_open(data: &[u8]) {
    let base = base();
    let mode = data.first().copied().unwrap_or(0);
    let target = if mode & 1 == 0 {
        FileId::Index(engine::SegmentId(0))
    } else {
        FileId::Checkpoint
    };
    let mut disk = SimDisk::new(2);
    for (file, bytes) in &base.files {
        let mut bytes = bytes.clone();
        if *file == target {
            let input = data.get(1..).unwrap_or_default();
            let kept = input.len().min(bytes.len());
            bytes[..kept].copy_from_slice(&input[..kept]);
            if mode & 2 != 0 && bytes.len() >= SECTOR {
                match target {
                    FileId::Index(_) => index_repair(&mut bytes),
                    FileId::Checkpoint => checkpoint_repair(&mut bytes),
                    _ => unreachable!("targets are index or checkpoint"),
                }
            }
        }
        disk.insert_file(*file, bytes);
    }
    let Ok(mut journal) = Journal::open(disk, config()) else {
        return;
    };
    for (&(ledger, entry), expected) in &base.entries {
        read_check(&mut journal, ledger, entry, expected);
    }
}

fn read_check(journal: &mut Journal<SimDisk>, ledger: i64, entry: i64, expected: &[u8]) {
    let target = ReadTarget::Entry(EntryId(entry));
    let allowed = |error: ReadError| {
        matches!(
            error,
            ReadError::Io | ReadError::NoEntry | ReadError::NoLedger
        )
    };
    match journal.read(READ_TOKEN, LedgerId(ledger), target) {
        Ok(ReadOutcome::Ready { body, .. }) => {
            assert_eq!(body, expected, "{ledger}/{entry} read back other bytes");
            return;
        }
        Ok(ReadOutcome::Pending) => {}
        Err(error) => {
            assert!(allowed(error), "{ledger}/{entry}: {error:?}");
            return;
        }
    }
    let mut events = Vec::new();
    for _ in 0..POLLS_MAX {
        journal.submit();
        journal.poll();
        journal.events_swap(&mut events);
        let done = events.drain(..).find_map(|event| match event {
            Event::ReadDone { slot, .. } => Some(slot),
            _ => None,
        });
        let Some(slot) = done else { continue };
        match journal.read_result(slot) {
            Ok((_, body)) => assert_eq!(body, expected, "{ledger}/{entry} read back other bytes"),
            Err(error) => assert!(allowed(error), "{ledger}/{entry}: {error:?}"),
        }
        journal.read_release(slot);
        return;
    }
    panic!("read of {ledger}/{entry} not done after {POLLS_MAX} polls");
}
