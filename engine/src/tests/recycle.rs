//! Reusing dead segments' files as new segments (`journal/dead.rs`, `journal/segments.rs`):
//! their stale records never come back, and recovery and index rebuilds end a recycled
//! segment's data where its earlier life's records begin.

use super::harness::{
    add_all, config_small, drive, fill_each, read_entry, segments, verify_all, Model,
};
use crate::disk::Disk;
use crate::error::{OpenError, ReadError};
use crate::ids::{FileId, LedgerId, SegmentId};
use crate::journal::Journal;
use crate::{Config, SimDisk};

fn config(recycle_max: usize) -> Config {
    Config {
        index_cache_pages: 4,
        segment_recycle_max: recycle_max,
        ..config_small()
    }
}

/// The header flag of a published segment, from its durable bytes.
fn is_recycled(disk: &mut SimDisk, segment: SegmentId) -> bool {
    let bytes = disk.durable_image_mut(segment).expect("segment exists");
    crate::segment::decode_segment_header(&bytes[..4096], segment)
        .expect("valid header")
        .recycled
}

/// Ledger 1 fills segments, is deleted; ledger 3 then needs new segments, and gets ledger 1's.
fn journal_with_recycled_segments(
    seed: u64,
    recycle_max: usize,
) -> (Journal<SimDisk>, Model, Vec<SegmentId>) {
    let mut journal = Journal::open(SimDisk::new(seed), config(recycle_max)).unwrap();
    let mut model = Model::default();
    fill_each(&mut journal, &mut model, &[1, 2], 3000);
    let before = segments(journal.disk_mut());
    journal.delete_ledger(LedgerId(1));
    model.delete(1);
    drive(&mut journal);
    fill_each(&mut journal, &mut model, &[3], 3000);
    let after = segments(journal.disk_mut());
    let new: Vec<SegmentId> = after
        .iter()
        .copied()
        .filter(|segment| !before.contains(segment))
        .collect();
    (journal, model, new)
}

#[test]
fn dead_segments_become_the_next_segments_and_their_records_never_come_back() {
    let (mut journal, model, new) = journal_with_recycled_segments(31, 2);
    let stats = journal.stats().clone();
    // The 2 kept are reused instead of allocated; the rest of the dead are removed.
    assert_eq!(stats.segments_recycled, 2, "{stats:?}");
    assert!(stats.segments_removed > 0, "{stats:?}");
    let reused: Vec<SegmentId> = new
        .iter()
        .copied()
        .filter(|&segment| is_recycled(journal.disk_mut(), segment))
        .collect();
    assert_eq!(reused.len() as u64, stats.segments_recycled, "{new:?}");
    assert_eq!(read_entry(&mut journal, 1, 0), Err(ReadError::NoLedger));
    verify_all(&mut journal, &model);
    // After a crash (the active segment is a recycled one with stale records past the write
    // head) and after a clean reopen, the same.
    let disk = journal.into_disk().crash();
    let mut journal = Journal::open(disk, config(2)).unwrap();
    assert_eq!(read_entry(&mut journal, 1, 0), Err(ReadError::NoLedger));
    verify_all(&mut journal, &model);
    let mut model = model;
    fill_each(&mut journal, &mut model, &[4], 2000);
    verify_all(&mut journal, &model);
    // Everything durable, nothing in flight: this open finds no torn tail, and leaves the
    // stale records past the write head alone.
    drive(&mut journal);
    let disk = journal.into_disk().crash();
    let mut journal = Journal::open(disk, config(2)).unwrap();
    assert_eq!(journal.stats().torn_tail_truncations, 0, "nothing was torn");
    verify_all(&mut journal, &model);
}

#[test]
fn zero_ahead_skips_a_recycled_segment() {
    let mut journal = Journal::open(SimDisk::new(32), config(64)).unwrap();
    let mut model = Model::default();
    fill_each(&mut journal, &mut model, &[1, 2], 3000);
    journal.delete_ledger(LedgerId(1));
    model.delete(1);
    drive(&mut journal);
    let before = journal.stats().clone();
    fill_each(&mut journal, &mut model, &[3], 1500);
    let after = journal.stats().clone();
    let created = after.segments_created - before.segments_created;
    let recycled = after.segments_recycled - before.segments_recycled;
    assert!(created >= 2 && recycled == created, "{after:?}");
    // Only the spare prepared before the deletion was a new file to zero.
    let zeroed = after.zero_ahead_bytes - before.zero_ahead_bytes;
    assert!(zeroed <= config(64).segment_size, "{zeroed}");
    verify_all(&mut journal, &model);
    // The active segment and the spare are recycled: stale records lie past the write head.
    let files = segments(journal.disk_mut());
    for &segment in &files[files.len() - 2..] {
        assert!(is_recycled(journal.disk_mut(), segment), "{segment:?}");
    }
    let disk = journal.into_disk().crash();
    let mut journal = Journal::open(disk, config(64)).unwrap();
    assert_eq!(
        journal.stats().torn_tail_truncations,
        0,
        "nothing was in flight"
    );
    verify_all(&mut journal, &model);
    fill_each(&mut journal, &mut model, &[5], 500);
    verify_all(&mut journal, &model);
}

#[test]
fn with_no_segment_kept_every_dead_one_is_removed() {
    let (journal, _, _) = journal_with_recycled_segments(33, 0);
    assert_eq!(journal.stats().segments_recycled, 0);
    assert!(journal.stats().segments_removed >= 2);
}

/// A sealed, recycled segment: one of the `new` ones below the active segment.
fn sealed_recycled(journal: &mut Journal<SimDisk>, new: &[SegmentId]) -> SegmentId {
    let sealed: Vec<SegmentId> = journal.index().sealed_segments().collect();
    let &segment = new
        .iter()
        .find(|&&segment| sealed.contains(&segment) && is_recycled(journal.disk_mut(), segment))
        .expect("a sealed recycled segment");
    segment
}

#[test]
fn a_recycled_segment_whose_index_is_lost_is_rebuilt_from_its_own_records() {
    let (mut journal, model, new) = journal_with_recycled_segments(34, 4);
    let segment = sealed_recycled(&mut journal, &new);
    let mut disk = journal.into_disk().crash();
    disk.file_remove(FileId::Index(segment)).unwrap();
    let mut journal = Journal::open(disk, config(4)).unwrap();
    let rebuilt: Vec<SegmentId> = journal
        .open_report()
        .indexes_rebuilt
        .iter()
        .map(|(segment, _)| *segment)
        .collect();
    assert_eq!(rebuilt, vec![segment]);
    verify_all(&mut journal, &model);
}

#[test]
fn a_bad_record_inside_a_recycled_segment_still_refuses_the_rebuild() {
    let (mut journal, _, new) = journal_with_recycled_segments(35, 4);
    let segment = sealed_recycled(&mut journal, &new);
    let mut disk = journal.into_disk().crash();
    disk.file_remove(FileId::Index(segment)).unwrap();
    // The first record's header: its own records follow, so this is no end of data.
    disk.durable_image_mut(segment).unwrap()[4096 + 20] ^= 1;
    disk.reload_live_from_durable();
    match Journal::open(disk, config(4)) {
        Err(OpenError::SealedCorrupt { location, .. }) => {
            assert_eq!(location.segment, segment);
        }
        other => panic!("expected SealedCorrupt, got {:?}", other.map(|_| ())),
    }
}

/// Ledgers 1 and 2 fill segments and ledger 1 is deleted, under the server's clock (one
/// removal allowed per `removal_pace`): its segments are dead, fewer than 16, all kept.
/// Returns the journal, its model and the segment count before the deletion.
fn journal_with_kept_segments(seed: u64) -> (Journal<SimDisk>, Model, usize) {
    let mut journal = Journal::open(SimDisk::new(seed), config(16)).unwrap();
    let mut model = Model::default();
    fill_each(&mut journal, &mut model, &[1, 2], 3000);
    let before = segments(journal.disk_mut()).len();
    journal.removal_pace(1);
    journal.delete_ledger(LedgerId(1));
    model.delete(1);
    drive(&mut journal);
    (journal, model, before)
}

/// Paces 20 more ticks and checks that at least 2 kept segments were removed by then, one a
/// tick, and nothing else changed.
fn assert_kept_segments_removed(journal: &mut Journal<SimDisk>, model: &Model, before: usize) {
    for _ in 0..20 {
        journal.removal_pace(1);
        drive(journal);
    }
    let removed = journal.stats().segments_removed;
    assert!(removed >= 2, "{:?}", journal.stats());
    assert_eq!(
        segments(journal.disk_mut()).len() as u64,
        before as u64 - removed
    );
    verify_all(journal, model);
}

#[test]
fn kept_segments_are_removed_once_none_was_reused_for_a_while() {
    use crate::constants::{SEGMENT_RECYCLE_IDLE_PACES, SEGMENT_RECYCLE_WRITE_IDLE_PACES};
    let (mut journal, mut model, before) = journal_with_kept_segments(36);
    // A trickle of adds (one commit every write-idle time, far from filling the active
    // segment) keeps the journal writing, so within the reuse idle time the dead segments are
    // all kept, then removed one a tick.
    let mut entry = 3000;
    for pace in 0..SEGMENT_RECYCLE_IDLE_PACES {
        if pace % SEGMENT_RECYCLE_WRITE_IDLE_PACES == 0 {
            add_all(&mut journal, &mut model, [(2, entry)], 100);
            entry += 1;
        }
        journal.removal_pace(1);
        drive(&mut journal);
    }
    assert_eq!(journal.stats().segments_removed, 0);
    assert_eq!(segments(journal.disk_mut()).len(), before);
    assert_kept_segments_removed(&mut journal, &model, before);
    // The trickle's first commit has the spare segment prepared ahead, from a kept one.
    assert_eq!(journal.stats().segments_recycled, 1);
}

#[test]
fn kept_segments_are_removed_soon_after_the_writes_stop() {
    use crate::constants::SEGMENT_RECYCLE_WRITE_IDLE_PACES;
    let (mut journal, model, before) = journal_with_kept_segments(37);
    // Nothing is written after the deletion: the kept segments are kept for the write-idle
    // time only (the reuse idle time is ten times longer), then removed one a tick.
    for _ in 0..SEGMENT_RECYCLE_WRITE_IDLE_PACES {
        journal.removal_pace(1);
        drive(&mut journal);
    }
    assert_eq!(journal.stats().segments_removed, 0);
    assert_kept_segments_removed(&mut journal, &model, before);
}

/// Sorting beside the writes: each sorted segment's old file (its copy took its name by an
/// exchange) becomes a later segment, so nothing is zeroed ahead for it; a crash at any
/// point leaves the kept files as temporaries the open deletes, and loses nothing.
#[test]
fn sorted_segments_hand_their_old_files_to_the_next_segments() {
    let config = Config {
        sort_sealed: true,
        ..config(4)
    };
    let mut journal = Journal::open(SimDisk::new(41), config.clone()).unwrap();
    journal.compaction_grant(u64::MAX);
    let mut model = Model::default();
    for round in 0..6 {
        fill_each(&mut journal, &mut model, &[1, 2, 3], 700);
        journal.compaction_grant(u64::MAX);
        drive(&mut journal);
        if round == 2 {
            let disk = journal.into_disk().crash();
            journal = Journal::open(disk, config.clone()).unwrap();
            verify_all(&mut journal, &model);
            journal.compaction_grant(u64::MAX);
        }
    }
    let stats = journal.stats().clone();
    assert!(stats.compactions_sorting >= 3, "{stats:?}");
    assert_eq!(stats.ledgers_deleted, 0);
    assert!(
        stats.segments_recycled >= 2,
        "sorted segments' old files are reused with no ledger deleted: {stats:?}"
    );
    let kept = journal.replaced_files_kept();
    assert!(kept <= 4, "within --segment-recycle-max: {kept}");
    assert_eq!(journal.disk_mut().temporaries(), kept);
    verify_all(&mut journal, &model);
    let disk = journal.into_disk().crash();
    let mut journal = Journal::open(disk, config.clone()).unwrap();
    // Whole journal segments under the copies' names: the open keeps them for reuse, where
    // it used to delete them and the next segments were new files, zeroed once more.
    assert!(kept > 0);
    assert_eq!(journal.replaced_files_kept(), kept);
    assert_eq!(journal.disk_mut().temporaries(), kept);
    verify_all(&mut journal, &model);
    fill_each(&mut journal, &mut model, &[4], 2000);
    let stats = journal.stats().clone();
    // The kept files are taken before any new one is made.
    let taken = kept.min(stats.segments_created as usize);
    assert!(
        stats.segments_recycled as usize >= taken,
        "{kept} kept: {stats:?}"
    );
    verify_all(&mut journal, &model);
    // And again after a restart that finds them in use or gone.
    let disk = journal.into_disk().crash();
    let mut journal = Journal::open(disk, config).unwrap();
    assert_eq!(
        journal.disk_mut().temporaries(),
        journal.replaced_files_kept()
    );
    verify_all(&mut journal, &model);
}
