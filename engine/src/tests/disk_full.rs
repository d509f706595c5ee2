//! A journal that fills its disk (issue 14 item 4): with `Config::disk_reserve` it turns
//! read-only while sealing and deletions still have room, so deleting ledgers gives space
//! back and adds come back by themselves; without it, the last segment can take the room
//! the next index file needs, and nothing ever gives space back. A restart on the full disk
//! opens read-only.

use super::harness::{add, config_small, drive, verify_all, Model, KEY};
use crate::disk::Disk;
use crate::error::AddError;
use crate::ids::{EntryId, LedgerId};
use crate::journal::{AddOptions, Journal};
use crate::{Config, SimDisk};

const SEGMENT_SIZE: u64 = 256 * 1024;
const RESERVE: u64 = SEGMENT_SIZE;
/// Less than any index file or checkpoint (each is several 4 KiB pages here).
const SLACK: u64 = 4096;
const ENTRIES_PER_LEDGER: i64 = 3000;

fn config(disk_reserve: u64) -> Config {
    let config = Config {
        index_cache_pages: 4,
        disk_reserve,
        ..config_small()
    };
    assert_eq!(config.segment_size, SEGMENT_SIZE);
    config
}

/// Adds `ENTRIES_PER_LEDGER` entries of 100 bytes to `ledger` (about two segments); returns
/// false, having stopped, once the journal refuses adds as read-only.
fn fill(journal: &mut Journal<SimDisk>, model: &mut Model, token: &mut u64, ledger: i64) -> bool {
    for entry in 0..ENTRIES_PER_LEDGER {
        while !add(journal, model, *token, ledger, entry, 100) {
            model.apply(&drive(journal));
            if journal.is_read_only() {
                return false;
            }
        }
        *token = (*token + 1) % 9000;
    }
    model.apply(&drive(journal));
    true
}

/// Opens a journal, writes ledgers 1 and 2, then gives the disk a capacity of what it holds
/// plus `room`: a disk that fills while ledgers 3, 4, ... are written.
fn nearly_full(seed: u64, disk_reserve: u64, room: u64) -> (Journal<SimDisk>, Model, u64) {
    let mut journal = Journal::open(SimDisk::new(seed), config(disk_reserve)).unwrap();
    let mut model = Model::default();
    let mut token = 0;
    assert!(fill(&mut journal, &mut model, &mut token, 1));
    assert!(fill(&mut journal, &mut model, &mut token, 2));
    let used = journal.disk_mut().space_used();
    journal.disk_mut().faults.capacity = Some(used + room);
    (journal, model, token)
}

/// The collector's `delete_ledger` calls: every ledger but the first (the last one written
/// may not exist: the journal can turn read-only before its first entry).
fn delete_all_but_the_first(journal: &mut Journal<SimDisk>, model: &mut Model, ledgers: &[i64]) {
    for &ledger in &ledgers[1..] {
        let exists = journal.ledger(LedgerId(ledger)).is_some();
        assert_eq!(journal.delete_ledger(LedgerId(ledger)), exists);
        model.delete(ledger);
    }
}

fn add_refused(journal: &mut Journal<SimDisk>) -> Result<(), AddError> {
    let options = AddOptions::default();
    journal.add(1, LedgerId(50), EntryId(0), &KEY, &[1; 100], options)
}

/// Writes ledgers 3, 4, ... until the journal turns read-only; returns every ledger id used.
fn fill_until_read_only(
    journal: &mut Journal<SimDisk>,
    model: &mut Model,
    token: &mut u64,
) -> Vec<i64> {
    let mut ledgers = vec![1, 2];
    for ledger in 3..100 {
        ledgers.push(ledger);
        if !fill(journal, model, token, ledger) {
            break;
        }
    }
    assert!(journal.is_read_only(), "the disk never filled: {ledgers:?}");
    assert_eq!(add_refused(journal), Err(AddError::ReadOnly));
    model.apply(&drive(journal));
    ledgers
}

/// Deletes every ledger but the first, then drives the journal and its retries (the server's
/// clock calls both every tick) until it is writable again or 100 rounds passed.
fn delete_and_wait(journal: &mut Journal<SimDisk>, model: &mut Model, ledgers: &[i64]) {
    delete_all_but_the_first(journal, model, ledgers);
    for _ in 0..100 {
        journal.seal_retry_now();
        journal.segment_retry_now();
        model.apply(&drive(journal));
        if !journal.is_read_only() && !journal.is_waiting_for_space() {
            break;
        }
    }
}

/// With the reserve: read-only with room left, deletions durable, segments removed, writable
/// again, adds accepted across segments, nothing lost, also after a crash.
fn check_recovers(mut journal: Journal<SimDisk>, mut model: Model, mut token: u64) {
    let ledgers = fill_until_read_only(&mut journal, &mut model, &mut token);
    // Every segment the write head left is sealed: the reserve held its index file and the
    // checkpoint after it.
    assert_eq!(journal.stats().seal_failures, 0, "{:?}", journal.stats());
    assert_eq!(journal.segments_unsealed(), 0);
    let free_full = journal.disk_mut().space_free().unwrap();
    assert!(
        free_full < SEGMENT_SIZE + RESERVE,
        "read-only only once full"
    );
    delete_and_wait(&mut journal, &mut model, &ledgers);
    assert!(
        !journal.deletions_pending(),
        "the deletions' checkpoint had room"
    );
    let stats = journal.stats();
    assert!(
        stats.segments_removed + stats.segments_recycled > 0,
        "{stats:?}"
    );
    assert!(!journal.is_read_only(), "space came back: writable again");
    assert!(journal.disk_mut().space_free().unwrap() >= free_full + SEGMENT_SIZE);
    assert!(fill(&mut journal, &mut model, &mut token, 60));
    verify_all(&mut journal, &model);
    let disk = journal.into_disk().crash();
    let mut journal = Journal::open(disk, config(RESERVE)).unwrap();
    verify_all(&mut journal, &model);
}

#[test]
fn a_journal_that_fills_its_disk_keeps_the_reserve_and_recovers_once_ledgers_are_deleted() {
    let (journal, model, token) = nearly_full(21, RESERVE, 4 * SEGMENT_SIZE + RESERVE + SLACK);
    let removed_before = journal.stats().segments_removed;
    assert_eq!(removed_before, 0);
    check_recovers(journal, model, token);
}

#[test]
fn without_a_reserve_the_last_segment_can_leave_no_room_to_give_space_back() {
    // Room for exactly one more segment and less than an index file.
    let room = SEGMENT_SIZE + SLACK;
    let (mut journal, mut model, mut token) = nearly_full(22, 0, room);
    let ledgers = fill_until_read_only(&mut journal, &mut model, &mut token);
    delete_and_wait(&mut journal, &mut model, &ledgers);
    // The deadlock the reserve prevents: the front segment's index file does not fit, so
    // no checkpoint makes the deletions durable and no segment is removed.
    assert!(journal.stats().seal_failures > 0);
    assert!(journal.deletions_pending());
    assert_eq!(journal.stats().segments_removed, 0);
    // Adds may wait a while for space that could come back (a compaction that keeps failing
    // for want of room), but with nothing making progress the journal turns read-only.
    assert!(journal.is_read_only() || journal.is_waiting_for_space());
    std::thread::sleep(std::time::Duration::from_millis(
        crate::constants::SPACE_WAIT_PROGRESS_MS_MAX + 100,
    ));
    journal.segment_retry_now();
    model.apply(&drive(&mut journal));
    assert!(journal.is_read_only(), "{:?}", journal.stats());
    assert!(journal.disk_mut().space_free().unwrap() <= SLACK);
    verify_all(&mut journal, &model);
    // The same disk with the reserve: the last segment is never created, and it recovers.
    let (journal, model, token) = nearly_full(22, RESERVE, room);
    check_recovers(journal, model, token);
}

#[test]
fn a_full_journal_waits_for_the_outside_collectors_answer_before_it_turns_read_only() {
    // The server's collector learns of deleted ledgers from the metadata, some time after
    // the client deleted them: until it answered, the journal cannot know that nothing can
    // be freed. Everything here is live, so the answer finds nothing.
    let (mut journal, mut model, mut token) = nearly_full(25, RESERVE, 2 * SEGMENT_SIZE + RESERVE);
    journal.deletions_await_arm(true);
    let mut ledgers = vec![1, 2];
    'fill: for ledger in 3..100 {
        ledgers.push(ledger);
        for entry in 0..ENTRIES_PER_LEDGER {
            while !add(&mut journal, &mut model, token, ledger, entry, 100) {
                model.apply(&drive(&mut journal));
                assert!(!journal.is_read_only(), "{:?}", journal.stats());
                if journal.is_awaiting_deletions() {
                    break 'fill;
                }
            }
            token = (token + 1) % 9000;
        }
    }
    assert!(journal.is_blocked_for_space() && journal.is_waiting_for_space());
    // Longer than reclaiming may go without progress: the answer still holds the adds.
    std::thread::sleep(std::time::Duration::from_millis(
        crate::constants::SPACE_WAIT_PROGRESS_MS_MAX + 100,
    ));
    journal.segment_retry_now();
    model.apply(&drive(&mut journal));
    assert!(!journal.is_read_only(), "{:?}", journal.stats());
    assert_eq!(add_refused(&mut journal), Err(AddError::StagingFull));
    // The answer: nothing deleted. Nothing else can give space back: read-only at once.
    journal.deletions_answered();
    assert!(!journal.is_awaiting_deletions());
    assert!(journal.is_read_only(), "{:?}", journal.stats());
    assert_eq!(add_refused(&mut journal), Err(AddError::ReadOnly));
    // A later round finds the deletions: the journal recovers as without a collector (the
    // other tests here run without one: nothing is awaited there).
    delete_and_wait(&mut journal, &mut model, &ledgers);
    assert!(!journal.is_read_only(), "space came back: writable again");
    assert!(!journal.is_awaiting_deletions());
    assert!(fill(&mut journal, &mut model, &mut token, 200));
    verify_all(&mut journal, &model);
}

#[test]
fn a_journal_restarted_on_its_full_disk_opens_read_only_and_recovers_the_same_way() {
    let (mut journal, mut model, mut token) = nearly_full(24, RESERVE, 2 * SEGMENT_SIZE + RESERVE);
    let ledgers = fill_until_read_only(&mut journal, &mut model, &mut token);
    let mut disk = journal.into_disk().crash();
    // Less room than a segment (something else took some meanwhile): no room for the spare
    // open creates. It opens without one, read-only, and serves reads; creating the spare
    // regardless failed the open with ENOSPC.
    disk.faults.capacity = Some(disk.space_used() + SEGMENT_SIZE / 2);
    let mut journal = Journal::open(disk, config(RESERVE)).unwrap();
    model.apply(&drive(&mut journal));
    assert!(journal.is_read_only());
    verify_all(&mut journal, &model);
    delete_and_wait(&mut journal, &mut model, &ledgers);
    assert!(!journal.is_read_only(), "space came back: writable again");
    assert!(fill(&mut journal, &mut model, &mut token, 60));
    verify_all(&mut journal, &model);
}

#[test]
fn without_a_capacity_the_default_reserve_changes_nothing_and_it_is_bounded() {
    // SimDisk without a capacity reports u64::MAX free, as the simulations always had.
    let reserve = Config::default().disk_reserve;
    assert_eq!(reserve, crate::constants::DISK_RESERVE_DEFAULT);
    let mut journal = Journal::open(SimDisk::new(23), config(reserve)).unwrap();
    let mut model = Model::default();
    let mut token = 0;
    for ledger in 1..=3 {
        assert!(fill(&mut journal, &mut model, &mut token, ledger));
    }
    assert_eq!(journal.stats().segment_create_failures, 0);
    verify_all(&mut journal, &model);
    let over = config(crate::constants::DISK_RESERVE_MAX + 1);
    assert_eq!(over.validate().unwrap_err().field, "disk_reserve");
}

#[test]
fn a_segment_whose_preparation_fails_leaves_no_file_behind() {
    // Every retry of a failed preparation allocates a whole segment under a new id: what a
    // failure leaves must go at once, or a persistent error fills the disk until a restart.
    // With RWF_DSYNC commits only the preparation's fdatasync fails here.
    let config = Config {
        sync_mode: crate::SyncMode::Dsync,
        ..config(0)
    };
    let mut journal = Journal::open(SimDisk::new(11), config).unwrap();
    let mut model = Model::default();
    journal.disk_mut().faults.sync_error_ppm = 1_000_000;
    let mut token = 0u64;
    // Roll over past the spare open made: from then on every preparation fails.
    let mut entry = 0;
    while journal.stats().segment_create_failures < 5 && entry < 20_000 {
        if add(&mut journal, &mut model, token, 1, entry, 100) {
            entry += 1;
            token = (token + 1) % 9000;
        }
        model.apply(&drive(&mut journal));
        journal.segment_retry_now();
    }
    let failures = journal.stats().segment_create_failures;
    assert!(failures >= 5, "{failures} failed preparations");
    assert!(
        journal.disk_mut().temporaries() <= 1,
        "{} temporaries after {failures} failed preparations",
        journal.disk_mut().temporaries()
    );
}

#[test]
fn a_checkpoint_after_failed_preparations_resumes_at_a_segment_that_exists() {
    // A failed preparation gives its segment id up (ids never repeat), so the segments
    // around it are not consecutive. A checkpoint sealing the one before the gap used to
    // resume at the id after it, a file that never existed: the next open refused the
    // journal ("needs the segment the checkpoint resumes at").
    let mut journal = Journal::open(SimDisk::new(12), config(0)).unwrap();
    let mut model = Model::default();
    let mut token = 0u64;
    let mut entry = 0;
    let mut add_one = |journal: &mut Journal<SimDisk>, model: &mut Model| {
        if add(journal, model, token, 1, entry, 100) {
            entry += 1;
            token = (token + 1) % 9000;
        }
        model.apply(&drive(journal));
        journal.segment_retry_now();
    };
    // The active segment and the spare open made are all the disk may hold: the write head
    // rolls over to the spare, and preparing the next one fails.
    journal.disk_mut().faults.segments_max = Some(2);
    while journal.stats().segment_create_failures < 3 {
        add_one(&mut journal, &mut model);
    }
    journal.disk_mut().faults.segments_max = None;
    // The write head rolls over the gap to the first segment prepared since; the one it
    // left is sealed, and that checkpoint is the last before the crash.
    let sealed = journal.stats().segments_sealed;
    while journal.stats().segments_sealed == sealed {
        add_one(&mut journal, &mut model);
    }
    model.apply(&drive(&mut journal));
    let ids = super::harness::segments(journal.disk_mut());
    assert!(
        ids.windows(2).any(|pair| pair[1].0 > pair[0].0 + 1),
        "no id left unused: {ids:?}"
    );
    let disk = journal.into_disk().crash();
    let mut journal = Journal::open(disk, config(0)).expect("the checkpoint names a segment");
    verify_all(&mut journal, &model);
}
