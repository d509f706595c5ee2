//! Deleting ledgers: tombstones, live bytes, and removal of sealed segments left with nothing
//! live (issue 14's engine part; the collector that calls `delete_ledger` is the server's).

use super::harness::{
    add, config_small, drive, fill_each, read_entry, segments, verify_all, Model, KEY,
};
use crate::disk::Disk;
use crate::error::{AddError, OpenError, ReadError};
use crate::ids::{EntryId, FileId, LedgerId, SegmentId};
use crate::journal::{AddOptions, Journal};
use crate::{Config, SimDisk};

/// Dead segments are removed, none kept for reuse (`tests/recycle.rs` covers reuse).
fn config() -> Config {
    Config {
        index_cache_pages: 4,
        segment_recycle_max: 0,
        ..config_small()
    }
}

#[test]
fn a_deleted_ledger_is_gone_at_once_and_its_segments_are_removed_once_durable() {
    let mut journal = Journal::open(SimDisk::new(1), config()).unwrap();
    let mut model = Model::default();
    fill_each(&mut journal, &mut model, &[1, 2], 3000);
    let before = segments(journal.disk_mut());
    assert!(before.len() >= 6, "{before:?}");
    assert!(journal.delete_ledger(LedgerId(1)));
    assert!(
        !journal.delete_ledger(LedgerId(1)),
        "deleting twice changes nothing"
    );
    model.delete(1);
    assert_eq!(
        super::harness::read_entry(&mut journal, 1, 0),
        Err(ReadError::NoLedger)
    );
    let refused = journal.add(
        7,
        LedgerId(1),
        EntryId(9),
        &KEY,
        &[0; 40],
        AddOptions::default(),
    );
    assert_eq!(refused, Err(AddError::Fenced));
    assert!(journal.deletions_pending());
    drive(&mut journal);
    assert!(!journal.deletions_pending());
    let stats = journal.stats().clone();
    assert!(stats.segments_removed >= 2, "{stats:?}");
    let after = segments(journal.disk_mut());
    assert_eq!(
        after.len() as u64,
        before.len() as u64 - stats.segments_removed
    );
    assert_eq!(after.first(), before.get(stats.segments_removed as usize));
    verify_all(&mut journal, &model);
    // After a crash: still deleted, ledger 2 intact, and the removed segments' indexes too.
    let mut disk = journal.into_disk().crash();
    let files = disk.files_list().unwrap();
    assert!(!files.contains(&FileId::Index(SegmentId(0))));
    let mut journal = Journal::open(disk, config()).unwrap();
    assert!(journal.ledger(LedgerId(1)).is_none());
    assert_eq!(read_entry(&mut journal, 1, 5), Err(ReadError::NoLedger));
    verify_all(&mut journal, &model);
}

#[test]
fn a_segment_with_any_live_entry_is_kept() {
    let mut journal = Journal::open(SimDisk::new(2), config()).unwrap();
    let mut model = Model::default();
    // Interleaved: every segment holds both ledgers.
    let mut token = 0;
    for entry in 0..3000 {
        for ledger in [1, 2] {
            while !add(&mut journal, &mut model, token, ledger, entry, 100) {
                model.apply(&drive(&mut journal));
            }
            token = (token + 1) % 9000;
        }
    }
    model.apply(&drive(&mut journal));
    let before = segments(journal.disk_mut());
    journal.delete_ledger(LedgerId(1));
    model.delete(1);
    drive(&mut journal);
    assert_eq!(journal.stats().segments_removed, 0);
    assert_eq!(segments(journal.disk_mut()), before);
    verify_all(&mut journal, &model);
}

#[test]
fn entries_in_flight_when_their_ledger_is_deleted_are_acknowledged_and_not_indexed() {
    let mut journal = Journal::open(SimDisk::new(3), config()).unwrap();
    let mut model = Model::default();
    for entry in 0..20 {
        assert!(add(&mut journal, &mut model, entry as u64, 4, entry, 100));
    }
    journal.submit();
    assert!(journal.delete_ledger(LedgerId(4)));
    model.delete(4);
    model.apply(&drive(&mut journal));
    assert!(model.pending.is_empty(), "every add was answered");
    assert!(journal.ledger(LedgerId(4)).is_none());
    let disk = journal.into_disk().crash();
    let mut journal = Journal::open(disk, config()).unwrap();
    assert!(
        journal.ledger(LedgerId(4)).is_none(),
        "its records are skipped on open"
    );
    verify_all(&mut journal, &model);
}

#[test]
fn tombstones_expire_once_no_segment_can_hold_their_records() {
    let mut journal = Journal::open(SimDisk::new(4), config()).unwrap();
    let mut model = Model::default();
    fill_each(&mut journal, &mut model, &[1], 3000);
    journal.delete_ledger(LedgerId(1));
    model.delete(1);
    drive(&mut journal);
    // Ledger 1's last segment is the active one: its tombstone stays while that segment is.
    assert_eq!(journal.index().tombstones().count(), 1);
    fill_each(&mut journal, &mut model, &[2], 6000);
    journal.delete_ledger(LedgerId(2));
    model.delete(2);
    drive(&mut journal);
    let left: Vec<LedgerId> = journal
        .index()
        .tombstones()
        .map(|(ledger, _)| ledger)
        .collect();
    assert_eq!(left, vec![LedgerId(2)], "ledger 1's segments are all gone");
    let disk = journal.into_disk().crash();
    let journal = Journal::open(disk, config()).unwrap();
    assert!(journal.ledger(LedgerId(1)).is_none() && journal.ledger(LedgerId(2)).is_none());
}

#[test]
fn once_segments_were_removed_a_corrupt_checkpoint_refuses_to_open() {
    let mut journal = Journal::open(SimDisk::new(5), config()).unwrap();
    let mut model = Model::default();
    fill_each(&mut journal, &mut model, &[1, 2], 3000);
    journal.delete_ledger(LedgerId(1));
    drive(&mut journal);
    assert!(journal.stats().segments_removed > 0);
    let mut disk = journal.into_disk().crash();
    // Inside the one ledger's record (ledger 2) of the ledger table.
    disk.durable_file_mut(FileId::Checkpoint).unwrap()[4100] ^= 1;
    disk.reload_live_from_durable();
    match Journal::open(disk, config()) {
        Err(error @ OpenError::Missing { .. }) => {
            assert!(error.to_string().contains("valid checkpoint"), "{error}");
        }
        Err(other) => panic!("expected a refusal for the checkpoint, got {other}"),
        Ok(_) => panic!("expected a refusal, the journal opened"),
    }
}
