//! Sealed segments: their index files and the checkpoint, reads through index pages, restarts
//! that scan only what the checkpoint does not cover, and what open does with a missing,
//! corrupt or unknown index or checkpoint.

use super::harness::{add_all, config_small, drive, verify_all, Model};
use crate::checkpoint::{self, CheckpointHeader, LedgerState, ScrubPosition};
use crate::disk::Disk;
use crate::error::OpenError;
use crate::ids::FileId;
use crate::ids::{EntryId, LedgerId, Location, Position, SegmentId, Sequence};
use crate::index_file::{self, FileFormatError, IndexHeader, Run, PAGE_SLOTS};
use crate::journal::Journal;
use crate::{Config, SimDisk};

/// Writes `count` entries of `size` bytes round-robin over `ledgers`, driving to durable;
/// each ledger goes on from its highest acknowledged entry.
fn fill(journal: &mut Journal<SimDisk>, model: &mut Model, ledgers: i64, count: i64, size: usize) {
    let mut next = vec![0i64; usize::try_from(ledgers).unwrap()];
    for &(ledger, entry) in model.acked.keys() {
        let slot = &mut next[usize::try_from(ledger).unwrap()];
        *slot = (*slot).max(entry + 1);
    }
    let order = (0..count).map(|i| {
        let ledger = i % ledgers;
        let slot = &mut next[usize::try_from(ledger).unwrap()];
        *slot += 1;
        (ledger, *slot - 1)
    });
    add_all(journal, model, order.collect::<Vec<_>>(), size);
}

fn config() -> Config {
    Config {
        index_cache_pages: 4,
        ..config_small()
    }
}

#[test]
fn sealed_segments_free_their_entry_memory_and_read_back_through_their_index() {
    let mut journal = Journal::open(SimDisk::new(1), config()).unwrap();
    let mut model = Model::default();
    fill(&mut journal, &mut model, 3, 3000, 100);
    let stats = journal.stats().clone();
    assert!(stats.segments_sealed >= 3, "{stats:?}");
    assert_eq!(stats.checkpoints_written, stats.segments_sealed);
    assert_eq!(journal.segments_unsealed(), 0);
    // Only the active segment's entries are held in memory: 3000 entries of ~200 bytes over
    // 256 KiB segments leaves at most ~1300 in the active one (8 bytes each, Vec slack 2x).
    assert!(
        journal.index().open_slot_bytes() <= 1400 * 8 * 2,
        "{} bytes of open slots",
        journal.index().open_slot_bytes()
    );
    verify_all(&mut journal, &model);
    let stats = journal.stats();
    assert!(
        stats.index_page_reads > 0,
        "sealed reads go through pages: {stats:?}"
    );
    assert!(
        stats.index_page_hits > 0,
        "consecutive entries share a page"
    );
}

#[test]
fn restart_reads_the_checkpoint_and_scans_only_the_unsealed_tail() {
    let mut journal = Journal::open(SimDisk::new(2), config()).unwrap();
    let mut model = Model::default();
    journal.fence(10_001, LedgerId(77), &[3; 20]).unwrap();
    fill(&mut journal, &mut model, 4, 4000, 100);
    let sealed = journal.stats().segments_sealed;
    assert!(sealed >= 4);
    let before: Vec<_> = (0..4)
        .map(|ledger| {
            let state = journal.ledger(LedgerId(ledger)).unwrap();
            (state.entry_last, state.last_add_confirmed, state.fenced)
        })
        .collect();
    let disk = journal.into_disk().crash();
    let mut journal = Journal::open(disk, config()).unwrap();
    let report = journal.open_report().clone();
    let (_, resume) = report.checkpoint.expect("a checkpoint");
    assert_eq!(report.indexes_loaded, usize::try_from(resume.0).unwrap());
    assert!(report.indexes_rebuilt.is_empty(), "{report:?}");
    assert!(report.segments_scanned <= 2, "{report:?}");
    let after: Vec<_> = (0..4)
        .map(|ledger| {
            let state = journal.ledger(LedgerId(ledger)).unwrap();
            (state.entry_last, state.last_add_confirmed, state.fenced)
        })
        .collect();
    assert_eq!(before, after);
    assert!(journal.ledger(LedgerId(77)).unwrap().fenced);
    assert_eq!(journal.ledger(LedgerId(77)).unwrap().master_key, [3; 20]);
    verify_all(&mut journal, &model);
    // New adds go on after the restart, and seal again.
    fill(&mut journal, &mut model, 4, 2000, 100);
    assert!(journal.stats().segments_sealed > 0);
    verify_all(&mut journal, &model);
}

#[test]
fn a_missing_or_corrupt_index_is_rebuilt_from_its_segment_and_written_back() {
    let mut journal = Journal::open(SimDisk::new(3), config()).unwrap();
    let mut model = Model::default();
    fill(&mut journal, &mut model, 2, 3000, 100);
    assert!(journal.stats().segments_sealed >= 3);
    let mut disk = journal.into_disk().crash();
    disk.file_remove(FileId::Index(SegmentId(0))).unwrap();
    let page_start = {
        let bytes = disk.durable_file_mut(FileId::Index(SegmentId(1))).unwrap();
        bytes[5000] ^= 0x40; // inside the run table or a slot page
        bytes.len()
    };
    assert!(page_start > 8192);
    disk.reload_live_from_durable();
    let mut journal = Journal::open(disk, config()).unwrap();
    let rebuilt: Vec<SegmentId> = journal
        .open_report()
        .indexes_rebuilt
        .iter()
        .map(|(segment, _)| *segment)
        .collect();
    assert!(rebuilt.contains(&SegmentId(0)), "{rebuilt:?}");
    verify_all(&mut journal, &model);
    // Written back: the next open loads it.
    let disk = journal.into_disk().crash();
    let journal = Journal::open(disk, config()).unwrap();
    assert!(
        !journal
            .open_report()
            .indexes_rebuilt
            .iter()
            .any(|(segment, _)| *segment == SegmentId(0)),
        "{:?}",
        journal.open_report()
    );
}

#[test]
fn a_corrupt_checkpoint_is_ignored_and_every_segment_scanned() {
    let mut journal = Journal::open(SimDisk::new(4), config()).unwrap();
    let mut model = Model::default();
    fill(&mut journal, &mut model, 2, 3000, 100);
    let mut disk = journal.into_disk().crash();
    disk.durable_file_mut(FileId::Checkpoint).unwrap()[4200] ^= 1;
    disk.reload_live_from_durable();
    let mut journal = Journal::open(disk, config()).unwrap();
    let report = journal.open_report().clone();
    assert!(report.checkpoint.is_none());
    assert!(report.checkpoint_ignored.is_some(), "{report:?}");
    assert!(report.segments_scanned >= 3, "{report:?}");
    verify_all(&mut journal, &model);
}

#[test]
fn an_unknown_format_version_refuses_to_open_and_names_the_file() {
    for file in [
        FileId::Segment(SegmentId(0)),
        FileId::Index(SegmentId(0)),
        FileId::Checkpoint,
    ] {
        let mut journal = Journal::open(SimDisk::new(5), config()).unwrap();
        let mut model = Model::default();
        fill(&mut journal, &mut model, 2, 3000, 100);
        let mut disk = journal.into_disk().crash();
        disk.durable_file_mut(file).unwrap()[4] = 9;
        disk.reload_live_from_durable();
        match Journal::open(disk, config()) {
            Err(error @ OpenError::FormatVersion { .. }) => {
                let message = error.to_string();
                assert!(message.contains(&file.to_string()), "{message}");
                assert!(message.contains("version 9"), "{message}");
            }
            other => panic!("{file}: expected a version refusal, got {other:?}"),
        }
    }
}

#[test]
fn a_sealed_read_through_a_corrupt_page_fails_and_never_returns_other_data() {
    let mut journal = Journal::open(
        SimDisk::new(6),
        Config {
            index_cache_pages: 0,
            ..config()
        },
    )
    .unwrap();
    let mut model = Model::default();
    fill(&mut journal, &mut model, 1, 3000, 100);
    let mut disk = journal.into_disk().crash();
    let size = {
        let bytes = disk.durable_file_mut(FileId::Index(SegmentId(0))).unwrap();
        // The last page of the slot table: corrupt one slot's position.
        let last_page = bytes.len() - 4096;
        bytes[last_page] ^= 0x10;
        bytes.len()
    };
    assert!(size >= 8192);
    disk.reload_live_from_durable();
    let mut journal = Journal::open(
        disk,
        Config {
            index_cache_pages: 0,
            ..config()
        },
    )
    .unwrap();
    let mut failures = 0;
    for (&(ledger, entry), expected) in &model.acked {
        match super::harness::read_entry(&mut journal, ledger, entry) {
            Ok(body) => assert_eq!(&body, expected),
            Err(crate::ReadError::Io) => failures += 1,
            Err(other) => panic!("{ledger}/{entry}: {other:?}"),
        }
    }
    assert!(failures > 0 && failures <= PAGE_SLOTS);
}

#[test]
fn index_file_round_trips_and_rejects_damage() {
    let runs = [
        Run {
            ledger: LedgerId(3),
            entry_first: EntryId(0),
            entry_last: EntryId(9),
            slot_first: 0,
            entries: 9,
            bytes: 900,
        },
        Run {
            ledger: LedgerId(4),
            entry_first: EntryId(5),
            entry_last: EntryId(5),
            slot_first: 10,
            entries: 1,
            bytes: 100,
        },
    ];
    let mut table = vec![0u8; runs.len() * index_file::RUN_SIZE];
    for (run, out) in runs
        .iter()
        .zip(table.chunks_exact_mut(index_file::RUN_SIZE))
    {
        index_file::encode_run(out, run);
    }
    let header = IndexHeader {
        segment: SegmentId(7),
        run_count: 2,
        slot_count: 11,
        sequence_first: Sequence(10),
        sequence_last: Sequence(30),
        checksum_last: 0xABCD,
        checksum_runs: crc32c::crc32c(&table),
        data_end: 65536,
        generation: 3,
    };
    let size = index_file::file_size(2, 11);
    assert_eq!(size, 4096 * 3);
    let mut sector = vec![0u8; 4096];
    index_file::encode_header(&mut sector, &header);
    assert_eq!(
        index_file::decode_header(&sector, SegmentId(7), size),
        Ok(header)
    );
    assert_eq!(index_file::decode_runs(&table, &header), Ok(runs.to_vec()));
    assert_eq!(
        index_file::decode_header(&sector, SegmentId(8), size),
        Err(FileFormatError::Identity)
    );
    assert_eq!(
        index_file::decode_header(&sector, SegmentId(7), size + 4096),
        Err(FileFormatError::Identity)
    );
    let mut flipped = sector.clone();
    flipped[20] ^= 1;
    assert_eq!(
        index_file::decode_header(&flipped, SegmentId(7), size),
        Err(FileFormatError::Checksum)
    );
    let mut newer = sector.clone();
    newer[4] = 3;
    assert_eq!(
        index_file::decode_header(&newer, SegmentId(7), size),
        Err(FileFormatError::Version(3))
    );
    // Version 1, written before compaction: no generation, the checksum at 56.
    let mut legacy = sector.clone();
    legacy[4] = 1;
    legacy[56..64].fill(0);
    let checksum = crc32c::crc32c(&legacy[..56]);
    legacy[56..60].copy_from_slice(&checksum.to_le_bytes());
    assert_eq!(
        index_file::decode_header(&legacy, SegmentId(7), size),
        Ok(IndexHeader {
            generation: 0,
            ..header
        })
    );
    let mut table_bad = table.clone();
    table_bad[0] ^= 1;
    assert_eq!(
        index_file::decode_runs(&table_bad, &header),
        Err(FileFormatError::Checksum)
    );
    let mut page = vec![0u8; 4096];
    for at in 0..PAGE_SLOTS {
        index_file::page_slot_set(&mut page, at, (at % 3 != 0).then_some((at as u32 * 64, 7)));
    }
    index_file::page_seal(&mut page);
    assert!(index_file::page_verify(&page));
    assert_eq!(index_file::page_slot(&page, 0), None);
    assert_eq!(index_file::page_slot(&page, 1), Some((64, 7)));
    page[100] ^= 1;
    assert!(!index_file::page_verify(&page));
}

#[test]
fn checkpoint_round_trips_and_rejects_damage() {
    let ledgers = [
        LedgerState {
            ledger: LedgerId(-5),
            master_key: [1; 20],
            fenced: true,
            entry_last: -1,
            last_add_confirmed: -1,
            explicit_lac: None,
            digest: crate::digest::DigestKind::Crc32c,
        },
        LedgerState {
            ledger: LedgerId(9),
            master_key: [2; 20],
            fenced: false,
            entry_last: 99,
            last_add_confirmed: 98,
            explicit_lac: Some((
                Location {
                    segment: SegmentId(3),
                    position: Position(8192),
                },
                44,
            )),
            digest: crate::digest::DigestKind::Unknown,
        },
    ];
    let mut table = vec![0u8; 2 * checkpoint::LEDGER_RECORD_SIZE];
    for (state, out) in ledgers
        .iter()
        .zip(table.chunks_exact_mut(checkpoint::LEDGER_RECORD_SIZE))
    {
        checkpoint::encode_ledger(out, state);
    }
    let header = CheckpointHeader {
        resume_segment: SegmentId(4),
        checksum_previous: 77,
        sequence_next: Sequence(1234),
        ledger_count: 2,
        checksum_ledgers: crc32c::crc32c(&table),
        generation: 3,
        tombstone_count: 0,
        checksum_tombstones: crc32c::crc32c(&[]),
        scrub: None,
    };
    let mut sector = vec![0u8; 4096];
    checkpoint::encode_header(&mut sector, &header);
    let size = checkpoint::file_size(2, 0);
    assert_eq!(checkpoint::decode_header(&sector, size), Ok(header));
    assert_eq!(
        checkpoint::decode_ledgers(&table, &header),
        Ok(ledgers.to_vec())
    );
    let mut reversed = table.clone();
    reversed.rotate_left(checkpoint::LEDGER_RECORD_SIZE);
    let header_reversed = CheckpointHeader {
        checksum_ledgers: crc32c::crc32c(&reversed),
        ..header
    };
    assert_eq!(
        checkpoint::decode_ledgers(&reversed, &header_reversed),
        Err(FileFormatError::Identity),
        "ledgers must be sorted"
    );
    let mut newer = sector.clone();
    newer[4] = 7;
    assert_eq!(
        checkpoint::decode_header(&newer, size),
        Err(FileFormatError::Version(7))
    );
}

#[test]
fn a_full_disk_while_sealing_keeps_the_previous_checkpoint_and_loses_nothing() {
    let mut journal = Journal::open(SimDisk::new(7), config()).unwrap();
    let mut model = Model::default();
    fill(&mut journal, &mut model, 2, 1500, 100);
    let sealed_before = journal.stats().segments_sealed;
    assert!(sealed_before >= 1);
    journal.disk_mut().faults.seal_files_full = true;
    fill(&mut journal, &mut model, 2, 3000, 100);
    assert!(journal.stats().seal_failures > 0);
    assert_eq!(journal.stats().segments_sealed, sealed_before);
    assert!(journal.segments_unsealed() >= 2, "later segments wait");
    verify_all(&mut journal, &model);
    // A crash now reopens from the old checkpoint and scans the unsealed segments.
    let disk = journal.into_disk().crash();
    let mut journal = Journal::open(disk, config()).unwrap();
    assert!(
        journal.open_report().segments_scanned >= 3,
        "{:?}",
        journal.open_report()
    );
    verify_all(&mut journal, &model);
    // Space comes back: sealing catches up on the next retry, in segment order.
    journal.disk_mut().faults.seal_files_full = false;
    journal.seal_retry_now();
    drive(&mut journal);
    assert_eq!(journal.segments_unsealed(), 0);
    verify_all(&mut journal, &model);
}

#[test]
fn a_checksummed_but_impossible_index_is_rebuilt_or_fails_the_read_never_panics() {
    let config = Config {
        index_cache_pages: 0,
        ..config()
    };
    let mut journal = Journal::open(SimDisk::new(8), config.clone()).unwrap();
    let mut model = Model::default();
    fill(&mut journal, &mut model, 1, 3000, 100);
    let mut disk = journal.into_disk().crash();
    // Segment 0's first slot page: a slot pointing past the segment's end, checksum redone.
    {
        let bytes = disk.durable_file_mut(FileId::Index(SegmentId(0))).unwrap();
        let header =
            index_file::decode_header(&bytes[..4096], SegmentId(0), bytes.len() as u64).unwrap();
        let page = index_file::slot_table_offset(header.run_count) as usize;
        let page = &mut bytes[page..page + 4096];
        index_file::page_slot_set(page, 0, Some((u32::MAX - 8, 100)));
        index_file::page_seal(page);
    }
    // Segment 1's run table: a run spanning every id, checksums redone.
    {
        let bytes = disk.durable_file_mut(FileId::Index(SegmentId(1))).unwrap();
        let mut header =
            index_file::decode_header(&bytes[..4096], SegmentId(1), bytes.len() as u64).unwrap();
        let table = &mut bytes[4096..4096 + index_file::RUN_SIZE];
        table[16..24].copy_from_slice(&i64::MAX.to_le_bytes());
        let runs_bytes = header.run_count as usize * index_file::RUN_SIZE;
        header.checksum_runs = crc32c::crc32c(&bytes[4096..4096 + runs_bytes]);
        index_file::encode_header(&mut bytes[..4096], &header);
    }
    disk.reload_live_from_durable();
    let mut journal = Journal::open(disk, config).unwrap();
    let rebuilt: Vec<SegmentId> = journal
        .open_report()
        .indexes_rebuilt
        .iter()
        .map(|(segment, _)| *segment)
        .collect();
    assert_eq!(rebuilt, vec![SegmentId(1)]);
    let first = super::harness::read_entry(&mut journal, 0, 0);
    assert_eq!(
        first,
        Err(crate::ReadError::Io),
        "the impossible slot fails its read"
    );
    for (&(ledger, entry), expected) in model.acked.iter().skip(1) {
        match super::harness::read_entry(&mut journal, ledger, entry) {
            Ok(body) => assert_eq!(&body, expected),
            Err(error) => panic!("{ledger}/{entry}: {error:?}"),
        }
    }
}

fn scrub_position(segment_next: u32, cycle_start: u32, cycles_completed: u64) -> ScrubPosition {
    ScrubPosition {
        segment_next: SegmentId(segment_next),
        cycle_start: SegmentId(cycle_start),
        cycles_completed,
    }
}

/// A header of a checkpoint with no ledgers and no tombstones.
fn header_empty(scrub: Option<ScrubPosition>) -> CheckpointHeader {
    CheckpointHeader {
        resume_segment: SegmentId(6),
        checksum_previous: 0xDEAD_BEEF,
        sequence_next: Sequence(4321),
        ledger_count: 0,
        checksum_ledgers: crc32c::crc32c(&[]),
        generation: 17,
        tombstone_count: 0,
        checksum_tombstones: crc32c::crc32c(&[]),
        scrub,
    }
}

#[test]
fn checkpoint_version_2_round_trips_with_and_without_a_scrub_position() {
    let size = checkpoint::file_size(0, 0);
    for scrub in [None, Some(scrub_position(5, 2, u64::MAX - 1))] {
        let header = header_empty(scrub);
        let mut sector = vec![0u8; 4096];
        checkpoint::encode_header(&mut sector, &header);
        assert_eq!(sector[4], 2);
        assert_eq!(sector[52..56], [u8::from(scrub.is_some()), 0, 0, 0]);
        assert_eq!(checkpoint::decode_header(&sector, size), Ok(header));
        assert!(sector[76..].iter().all(|&byte| byte == 0));
    }
}

#[test]
fn a_version_1_checkpoint_header_decodes_with_no_scrub_position() {
    // Built field by field as version 1 wrote it, not through `encode_header`.
    let header = header_empty(None);
    let mut sector = vec![0u8; 4096];
    sector[0..4].copy_from_slice(b"RLGC");
    sector[4] = 1;
    sector[8..12].copy_from_slice(&6u32.to_le_bytes());
    sector[12..16].copy_from_slice(&0xDEAD_BEEFu32.to_le_bytes());
    sector[16..24].copy_from_slice(&4321u64.to_le_bytes());
    sector[28..32].copy_from_slice(&header.checksum_ledgers.to_le_bytes());
    sector[32..40].copy_from_slice(&17u64.to_le_bytes());
    sector[44..48].copy_from_slice(&header.checksum_tombstones.to_le_bytes());
    let checksum = crc32c::crc32c(&sector[0..48]);
    sector[48..52].copy_from_slice(&checksum.to_le_bytes());
    let size = checkpoint::file_size(0, 0);
    assert_eq!(checkpoint::decode_header(&sector, size), Ok(header));
    // Version 1 has nothing after byte 52: whatever lies there is not read.
    sector[52] = 0xFF;
    assert_eq!(checkpoint::decode_header(&sector, size), Ok(header));
    // Versions past 2 are refused by name; so is 0.
    for version in [0, 3] {
        sector[4] = version;
        assert_eq!(
            checkpoint::decode_header(&sector, size),
            Err(FileFormatError::Version(version))
        );
    }
}

#[test]
fn a_damaged_scrub_section_or_an_unknown_flag_is_refused() {
    let size = checkpoint::file_size(0, 0);
    let mut sector = vec![0u8; 4096];
    checkpoint::encode_header(&mut sector, &header_empty(Some(scrub_position(3, 1, 2))));
    for at in 52..76 {
        let mut damaged = sector.clone();
        damaged[at] ^= 0x04;
        assert_eq!(
            checkpoint::decode_header(&damaged, size),
            Err(FileFormatError::Checksum),
            "byte {at}"
        );
    }
    // A flag this version does not define, under a correct checksum.
    let mut flagged = sector.clone();
    flagged[52] |= 4;
    let checksum = crc32c::crc32c(&flagged[52..72]);
    flagged[72..76].copy_from_slice(&checksum.to_le_bytes());
    assert_eq!(
        checkpoint::decode_header(&flagged, size),
        Err(FileFormatError::Identity)
    );
}

/// The checkpoint's header as the disk holds it durably.
fn checkpoint_durable(disk: &mut SimDisk) -> CheckpointHeader {
    let bytes = disk.durable_file_mut(FileId::Checkpoint).unwrap();
    checkpoint::decode_header(&bytes[..4096], bytes.len() as u64).unwrap()
}

#[test]
fn the_scrub_position_survives_a_crash_once_its_checkpoint_is_durable() {
    let mut journal = Journal::open(SimDisk::new(11), config()).unwrap();
    let mut model = Model::default();
    fill(&mut journal, &mut model, 2, 3000, 100);
    assert_eq!(journal.scrub_positions_for_test(), (None, None));
    let written = journal.stats().checkpoints_written;
    let first = scrub_position(1, 0, 0);
    journal.scrub_position_for_test_set(first);
    journal.scrub_checkpoint_for_test_request();
    drive(&mut journal);
    assert_eq!(journal.stats().checkpoints_written, written + 1);
    assert_eq!(
        journal.scrub_positions_for_test(),
        (Some(first), Some(first))
    );
    // A position set and asked for, but lost in the crash before its checkpoint is written.
    let second = scrub_position(2, 0, 0);
    journal.scrub_position_for_test_set(second);
    journal.scrub_checkpoint_for_test_request();
    assert_eq!(
        journal.scrub_positions_for_test(),
        (Some(second), Some(first))
    );
    let mut disk = journal.into_disk().crash();
    assert_eq!(checkpoint_durable(&mut disk).scrub, Some(first));
    let mut journal = Journal::open(disk, config()).unwrap();
    assert_eq!(
        journal.scrub_positions_for_test(),
        (Some(first), Some(first))
    );
    verify_all(&mut journal, &model);
    // Sealing carries the position too, without being asked.
    let sealed = journal.stats().segments_sealed;
    let third = scrub_position(3, 0, 1);
    journal.scrub_position_for_test_set(third);
    fill(&mut journal, &mut model, 2, 2000, 100);
    assert!(journal.stats().segments_sealed > sealed);
    assert_eq!(
        journal.scrub_positions_for_test(),
        (Some(third), Some(third))
    );
    let mut disk = journal.into_disk().crash();
    assert_eq!(checkpoint_durable(&mut disk).scrub, Some(third));
    let journal = Journal::open(disk, config()).unwrap();
    assert_eq!(
        journal.scrub_positions_for_test(),
        (Some(third), Some(third))
    );
}

#[test]
fn scrub_checkpoint_requests_write_one_checkpoint_per_new_position() {
    let mut journal = Journal::open(SimDisk::new(12), config()).unwrap();
    let mut model = Model::default();
    fill(&mut journal, &mut model, 2, 1500, 100);
    let written = journal.stats().checkpoints_written;
    // Nothing set since the last checkpoint: nothing to write.
    journal.scrub_checkpoint_for_test_request();
    drive(&mut journal);
    assert_eq!(journal.stats().checkpoints_written, written);
    // Asked for three times before the journal runs: one checkpoint.
    journal.scrub_position_for_test_set(scrub_position(0, 0, 0));
    for _ in 0..3 {
        journal.scrub_checkpoint_for_test_request();
    }
    drive(&mut journal);
    assert_eq!(journal.stats().checkpoints_written, written + 1);
    // A new position asked for while that checkpoint is being written needs one more.
    let last = scrub_position(1, 0, 0);
    journal.scrub_position_for_test_set(scrub_position(4, 0, 0));
    journal.scrub_checkpoint_for_test_request();
    journal.submit();
    journal.scrub_position_for_test_set(last);
    journal.scrub_checkpoint_for_test_request();
    drive(&mut journal);
    assert_eq!(journal.stats().checkpoints_written, written + 3);
    assert_eq!(journal.scrub_positions_for_test(), (Some(last), Some(last)));
    let mut disk = journal.into_disk().crash();
    assert_eq!(checkpoint_durable(&mut disk).scrub, Some(last));
}

#[test]
fn a_version_1_checkpoint_opens_and_the_next_one_is_version_2() {
    let mut journal = Journal::open(SimDisk::new(13), config()).unwrap();
    let mut model = Model::default();
    fill(&mut journal, &mut model, 2, 3000, 100);
    let mut disk = journal.into_disk().crash();
    {
        // Rewrite the header as version 1 did: same bytes 0..48, nothing after 52.
        let bytes = disk.durable_file_mut(FileId::Checkpoint).unwrap();
        bytes[4] = 1;
        bytes[52..4096].fill(0);
        let checksum = crc32c::crc32c(&bytes[0..48]);
        bytes[48..52].copy_from_slice(&checksum.to_le_bytes());
    }
    disk.reload_live_from_durable();
    let mut journal = Journal::open(disk, config()).unwrap();
    assert!(journal.open_report().checkpoint.is_some());
    assert_eq!(journal.scrub_positions_for_test(), (None, None));
    verify_all(&mut journal, &model);
    let position = scrub_position(0, 0, 0);
    journal.scrub_position_for_test_set(position);
    journal.scrub_checkpoint_for_test_request();
    drive(&mut journal);
    let mut disk = journal.into_disk().crash();
    assert_eq!(disk.durable_file_mut(FileId::Checkpoint).unwrap()[4], 2);
    assert_eq!(checkpoint_durable(&mut disk).scrub, Some(position));
}
