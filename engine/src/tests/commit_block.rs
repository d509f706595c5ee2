//! Commits padded to 512 bytes (`Config::commit_block`, segment header flag bit 1): less
//! padding, every acknowledged entry back after crashes, each segment read by the block its
//! own header names whatever the configuration says now.

use super::harness::{add, add_all, config_small, drive, fill_each, segments, verify_all, Model};
use crate::ids::{LedgerId, SegmentId};
use crate::journal::Journal;
use crate::segment::{decode_segment_header, encode_segment_header, SegmentHeaderError};
use crate::{CommitBlock, Config, SimDisk};

fn config(block: CommitBlock) -> Config {
    Config {
        commit_block: block,
        ..config_small()
    }
}

/// The commit block a segment's durable header names.
fn block_of(disk: &mut SimDisk, segment: SegmentId) -> CommitBlock {
    let bytes = disk.durable_image_mut(segment).expect("segment exists");
    decode_segment_header(&bytes[..4096], segment)
        .expect("valid header")
        .commit_block
}

/// Adds of a 100-byte body to ledger 1 for `entries`, each its own commit.
fn adds_one_commit_each(
    journal: &mut Journal<SimDisk>,
    model: &mut Model,
    entries: std::ops::Range<i64>,
) {
    for entry in entries {
        assert!(add(journal, model, entry as u64, 1, entry, 100));
        model.apply(&drive(journal));
    }
}

#[test]
fn a_commit_of_one_small_add_writes_512_bytes_not_a_sector_and_survives_a_crash() {
    let mut written = Vec::new();
    for block in [CommitBlock::Sector, CommitBlock::Small] {
        let mut journal = Journal::open(SimDisk::new(5), config(block)).unwrap();
        let mut model = Model::default();
        adds_one_commit_each(&mut journal, &mut model, 0..40);
        let stats = journal.stats().clone();
        assert_eq!(stats.commits, 40, "{stats:?}");
        // 164 bytes of record (the first commit also holds the ledger key's 88): one block.
        assert_eq!(stats.bytes_written, 40 * block.size() as u64, "{stats:?}");
        written.push(stats.bytes_written);
        assert_eq!(block_of(journal.disk_mut(), SegmentId(0)), block);
        let disk = journal.into_disk().crash();
        let mut journal = Journal::open(disk, config(block)).unwrap();
        assert_eq!(journal.stats().torn_tail_truncations, 0);
        verify_all(&mut journal, &model);
        // Appends go on after the reopen, and come back again.
        adds_one_commit_each(&mut journal, &mut model, 40..80);
        let disk = journal.into_disk().crash();
        let mut journal = Journal::open(disk, config(block)).unwrap();
        verify_all(&mut journal, &model);
    }
    assert_eq!(written, vec![40 * 4096, 40 * 512]);
}

#[test]
fn each_segment_keeps_the_block_its_header_names_when_the_configuration_changes() {
    for (first, second) in [
        (CommitBlock::Small, CommitBlock::Sector),
        (CommitBlock::Sector, CommitBlock::Small),
    ] {
        let mut journal = Journal::open(SimDisk::new(6), config(first)).unwrap();
        let mut model = Model::default();
        // Part of the first segment, then a restart with the other block.
        fill_each(&mut journal, &mut model, &[1], 300);
        let disk = journal.into_disk().crash();
        let mut journal = Journal::open(disk, config(second)).unwrap();
        verify_all(&mut journal, &model);
        let before = journal.stats().bytes_written;
        adds_one_commit_each(&mut journal, &mut model, 300..310);
        // The active segment goes on with its own block.
        let per_commit = (journal.stats().bytes_written - before) / 10;
        assert_eq!(per_commit, first.size() as u64, "{first:?} then {second:?}");
        // Segments created from now on have the configured one.
        fill_each(&mut journal, &mut model, &[2, 3], 3000);
        let files = segments(journal.disk_mut());
        assert!(files.len() >= 4, "{files:?}");
        assert_eq!(block_of(journal.disk_mut(), files[0]), first);
        for &segment in &files[2..] {
            assert_eq!(block_of(journal.disk_mut(), segment), second, "{segment:?}");
        }
        verify_all(&mut journal, &model);
        for block in [first, second] {
            let disk = journal.into_disk().crash();
            journal = Journal::open(disk, config(block)).unwrap();
            verify_all(&mut journal, &model);
        }
    }
}

#[test]
fn a_recycled_segment_of_small_blocks_ends_its_data_at_the_first_block_of_stale_records() {
    let config = Config {
        segment_recycle_max: 2,
        index_cache_pages: 4,
        ..config(CommitBlock::Small)
    };
    let mut journal = Journal::open(SimDisk::new(7), config.clone()).unwrap();
    let mut model = Model::default();
    fill_each(&mut journal, &mut model, &[1, 2], 3000);
    journal.delete_ledger(LedgerId(1));
    model.delete(1);
    drive(&mut journal);
    // Unaligned bodies: commits end inside sectors, 512-byte blocks after stale records.
    let order = (0..2500).map(|entry| (3, entry));
    add_all(&mut journal, &mut model, order, 333);
    assert!(journal.stats().segments_recycled > 0);
    let files = segments(journal.disk_mut());
    let active = *files.last().expect("segments");
    assert_eq!(block_of(journal.disk_mut(), active), CommitBlock::Small);
    drive(&mut journal);
    // Everything durable: an open finds the end of the data, no torn tail, and neither
    // takes the stale records for damage nor zeroes them.
    let disk = journal.into_disk().crash();
    let mut journal = Journal::open(disk, config.clone()).unwrap();
    assert_eq!(journal.stats().torn_tail_truncations, 0);
    verify_all(&mut journal, &model);
    let order = (2500..2600).map(|entry| (3, entry));
    add_all(&mut journal, &mut model, order, 333);
    let disk = journal.into_disk().crash();
    let mut journal = Journal::open(disk, config).unwrap();
    verify_all(&mut journal, &model);
}

#[test]
fn a_header_with_a_flag_this_build_does_not_know_is_refused() {
    let mut sector = vec![0u8; 4096];
    let segment = SegmentId(3);
    encode_segment_header(&mut sector, segment, 1 << 20, true, CommitBlock::Small);
    let header = decode_segment_header(&sector, segment).unwrap();
    assert!(header.recycled);
    assert_eq!(header.commit_block, CommitBlock::Small);
    // Bit 2, with a checksum that verifies: a later format's, refused rather than guessed.
    sector[5] |= 4;
    let checksum = crc32c::crc32c(&sector[0..24]);
    sector[24..28].copy_from_slice(&checksum.to_le_bytes());
    assert_eq!(
        decode_segment_header(&sector, segment),
        Err(SegmentHeaderError::Invalid)
    );
}
