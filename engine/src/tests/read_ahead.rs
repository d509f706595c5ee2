//! Read-ahead and sorted segments (issue 15): a sequential scan is read in windows, many reads
//! outstanding at once share them, a failed window never answers wrong bytes, and sorting a
//! sealed segment by (ledger, entry) makes one ledger's scan read far fewer bytes.

use super::harness::{add_all, config_small, drive, read_entry, verify_all, Model};
use crate::ids::{EntryId, LedgerId, SegmentId};
use crate::journal::{Event, Journal, ReadOutcome, ReadTarget};
use crate::{Config, ReadError, SimDisk};

/// No read cache (every read goes to disk or a window), no compaction unless asked.
fn config(sort_sealed: bool) -> Config {
    Config {
        read_cache_buffers: 0,
        compaction_threshold_minor_per_mille: 0,
        sort_sealed,
        ..config_small()
    }
}

/// Entries `0..count` of each of `ledgers`, interleaved as concurrent writers leave them.
fn fill(journal: &mut Journal<SimDisk>, model: &mut Model, ledgers: &[i64], count: i64) {
    fill_from(journal, model, ledgers, 0, count);
}

/// Entries `first..first + count` of each of `ledgers`, interleaved.
fn fill_from(
    journal: &mut Journal<SimDisk>,
    model: &mut Model,
    ledgers: &[i64],
    first: i64,
    count: i64,
) {
    let order =
        (first..first + count).flat_map(|entry| ledgers.iter().map(move |&ledger| (ledger, entry)));
    add_all(journal, model, order, 200);
}

/// Reads entries `first..first + count` of `ledger` with as many outstanding as the journal
/// takes, as a catch-up client does (re-sending those answered busy, as the server does), and
/// returns each one's result in entry order.
fn read_outstanding(
    journal: &mut Journal<SimDisk>,
    ledger: i64,
    first: i64,
    count: usize,
) -> Vec<Result<Vec<u8>, ReadError>> {
    let mut results: Vec<Option<Result<Vec<u8>, ReadError>>> = vec![None; count];
    let mut to_send: std::collections::VecDeque<usize> = (0..count).collect();
    for _ in 0..100_000 {
        while let Some(&next) = to_send.front() {
            let entry = EntryId(first + next as i64);
            match journal.read(next as u64, LedgerId(ledger), ReadTarget::Entry(entry)) {
                Ok(ReadOutcome::Ready { body, .. }) => results[next] = Some(Ok(body.to_vec())),
                Ok(ReadOutcome::Pending) => {}
                Err(ReadError::Busy) => break,
                Err(error) => results[next] = Some(Err(error)),
            }
            to_send.pop_front();
        }
        for event in drive(journal) {
            if let Event::ReadDone { token, slot } = event {
                let result = journal.read_result(slot).map(|(_, body)| body.to_vec());
                journal.read_release(slot);
                assert!(
                    results[token as usize].is_none(),
                    "read {token} answered twice"
                );
                if result == Err(ReadError::Busy) {
                    to_send.push_back(token as usize);
                } else {
                    results[token as usize] = Some(result);
                }
            }
        }
        if to_send.is_empty() && results.iter().all(Option::is_some) {
            return results.into_iter().map(Option::unwrap).collect();
        }
    }
    panic!("reads did not finish");
}

fn assert_reads_back(results: &[Result<Vec<u8>, ReadError>], model: &Model, ledger: i64) {
    for (entry, result) in results.iter().enumerate() {
        let expected = &model.acked[&(ledger, entry as i64)];
        assert_eq!(
            result.as_ref().ok(),
            Some(expected),
            "entry {ledger}/{entry}"
        );
    }
}

#[test]
fn a_scan_with_many_reads_outstanding_is_read_in_windows() {
    let mut journal = Journal::open(SimDisk::new(1), config(false)).unwrap();
    let mut model = Model::default();
    fill(&mut journal, &mut model, &[1], 3000);
    assert!(journal.index().sealed_segments().count() >= 2);
    let results = read_outstanding(&mut journal, 1, 0, 3000);
    assert_reads_back(&results, &model, 1);
    let stats = journal.stats().clone();
    // About 1.4 MiB of journal in 256 KiB segments: a window ends at its segment's end, so
    // about two a segment (where the scan enters it, and the rest), and only the first read
    // of the scan alone.
    let segments = stats.segments_created + 1;
    assert!(stats.read_ahead_windows <= 2 * segments, "{stats:?}");
    assert!(stats.reads_disk <= 2, "{stats:?}");
    assert!(stats.reads_read_ahead >= 2900, "{stats:?}");
}

#[test]
fn reads_of_a_window_that_failed_answer_io_and_the_next_scan_reads_right() {
    let mut journal = Journal::open(SimDisk::new(2), config(false)).unwrap();
    let mut model = Model::default();
    fill(&mut journal, &mut model, &[1, 2], 600);
    journal.disk_mut().faults.read_error_ppm = 1_000_000;
    let results = read_outstanding(&mut journal, 1, 0, 600);
    // The first read goes alone and fails; the rest wait on windows that fail, then each
    // goes alone and fails too: every one is EIO, none answers bytes.
    assert!(results.iter().all(|result| *result == Err(ReadError::Io)));
    assert!(journal.stats().read_ahead_windows > 0);
    journal.disk_mut().faults.read_error_ppm = 0;
    let results = read_outstanding(&mut journal, 1, 0, 600);
    assert_reads_back(&results, &model, 1);
    let results = read_outstanding(&mut journal, 2, 0, 600);
    assert_reads_back(&results, &model, 2);
}

#[test]
fn no_window_reads_past_the_durable_records_of_the_active_segment() {
    let mut journal = Journal::open(SimDisk::new(3), config(false)).unwrap();
    let mut model = Model::default();
    fill(&mut journal, &mut model, &[1], 100);
    let results = read_outstanding(&mut journal, 1, 0, 100);
    assert_reads_back(&results, &model, 1);
    // Entries written after the window was read are read right: the window ended at the
    // durable end, so it does not claim them.
    add_all(
        &mut journal,
        &mut model,
        (100..200).map(|entry| (1, entry)),
        200,
    );
    let results = read_outstanding(&mut journal, 1, 0, 200);
    assert_reads_back(&results, &model, 1);
    assert_eq!(journal.stats().read_checksum_failures, 0);
}

/// Scans ledger 1 of a journal of four interleaved ledgers and returns the windows it read.
fn windows_of_one_ledger_scan(sort_sealed: bool) -> u64 {
    let mut journal = Journal::open(SimDisk::new(4), config(sort_sealed)).unwrap();
    let mut model = Model::default();
    fill(&mut journal, &mut model, &[1, 2, 3, 4], 2000);
    let sealed = journal.index().sealed_segments().count() as u64;
    assert!(sealed >= 4, "{sealed}");
    journal.compaction_grant(u64::MAX);
    drive(&mut journal);
    let stats = journal.stats().clone();
    if sort_sealed {
        assert!(stats.compactions_sorting >= sealed, "{stats:?}");
        assert_eq!(
            stats.compactions_done, stats.compactions_started,
            "{stats:?}"
        );
        // A sorted segment is never sorted again.
        journal.compaction_grant(u64::MAX);
        drive(&mut journal);
        assert_eq!(
            journal.stats().compactions_started,
            stats.compactions_started
        );
    } else {
        assert_eq!(stats.compactions_started, 0);
    }
    // After a restart the sorted copies are what the journal has.
    let disk = journal.into_disk().crash();
    let mut journal = Journal::open(disk, config(sort_sealed)).unwrap();
    let windows_before = journal.stats().read_ahead_windows;
    let results = read_outstanding(&mut journal, 1, 0, 2000);
    assert_reads_back(&results, &model, 1);
    let windows = journal.stats().read_ahead_windows - windows_before;
    verify_all(&mut journal, &model);
    windows
}

#[test]
fn sorted_segments_make_one_ledgers_scan_read_a_fraction_of_the_windows() {
    let unsorted = windows_of_one_ledger_scan(false);
    let sorted = windows_of_one_ledger_scan(true);
    // Unsorted, ledger 1's entries are spread over every segment; sorted, they are a quarter
    // of each, contiguous.
    assert!(
        sorted * 2 < unsorted,
        "sorted {sorted} windows, unsorted {unsorted}"
    );
}

#[test]
fn a_segment_sorted_while_its_windows_are_held_reads_right_before_and_after() {
    let mut journal = Journal::open(SimDisk::new(5), config(true)).unwrap();
    let mut model = Model::default();
    fill(&mut journal, &mut model, &[1, 2], 1500);
    // Windows of the unsorted segments are in memory when the copies replace them.
    let results = read_outstanding(&mut journal, 1, 0, 1500);
    assert_reads_back(&results, &model, 1);
    journal.compaction_grant(u64::MAX);
    drive(&mut journal);
    assert!(journal.stats().compactions_done > 0);
    for ledger in [1, 2] {
        let results = read_outstanding(&mut journal, ledger, 0, 1500);
        assert_reads_back(&results, &model, ledger);
    }
    assert_eq!(
        read_entry(&mut journal, 2, -1).unwrap(),
        model.acked[&(2, 1499)]
    );
}

/// Four ledgers of 2 KB entries in 16 MiB segments (two copy buffers, 8 MiB, each), sorted
/// or not; checks every entry after a crash and returns the windows a scan of ledger 3 read.
fn windows_of_a_scan_in_large_segments(sort_sealed: bool) -> u64 {
    let config = Config {
        segment_size: 16 * 1024 * 1024,
        read_ahead_windows: 8,
        compaction_buffer_size: 8 * 1024 * 1024,
        ..config(sort_sealed)
    };
    let mut journal = Journal::open(SimDisk::new(6), config.clone()).unwrap();
    let mut model = Model::default();
    let order = (0..5000).flat_map(|entry| [1, 2, 3, 4].map(move |ledger| (ledger, entry)));
    add_all(&mut journal, &mut model, order, 2000);
    let sealed = journal.index().sealed_segments().count() as u64;
    assert!(sealed >= 2, "{sealed}");
    journal.compaction_grant(u64::MAX);
    drive(&mut journal);
    let stats = journal.stats().clone();
    assert_eq!(
        stats.compactions_sorting >= sealed,
        sort_sealed,
        "{stats:?}"
    );
    assert_eq!(stats.compaction_failures, 0, "{stats:?}");
    let disk = journal.into_disk().crash();
    let mut journal = Journal::open(disk, config).unwrap();
    verify_all(&mut journal, &model);
    let windows_before = journal.stats().read_ahead_windows;
    let results = read_outstanding(&mut journal, 3, 0, 5000);
    assert_reads_back(&results, &model, 3);
    journal.stats().read_ahead_windows - windows_before
}

#[test]
fn a_segment_larger_than_the_copy_buffer_is_sorted_batch_by_batch_and_survives_a_crash() {
    // Sorted, each batch of a segment holds a 2 MiB run of ledger 3; unsorted, its entries
    // are a quarter of every MiB. (The active segment, about a quarter of the journal, is
    // unsorted in both.)
    let unsorted = windows_of_a_scan_in_large_segments(false);
    let sorted = windows_of_a_scan_in_large_segments(true);
    assert!(
        sorted < unsorted,
        "sorted {sorted} windows, unsorted {unsorted}"
    );
}

#[test]
fn a_sealed_segment_is_sorted_once_its_checkpoint_is_durable_not_at_the_next_seal() {
    let mut journal = Journal::open(SimDisk::new(9), config(true)).unwrap();
    let mut model = Model::default();
    journal.compaction_grant(u64::MAX);
    // Just past one segment: the first is sealed, the second far from full, so no later seal
    // comes to plan the sort.
    let mut entry = 0;
    while journal.stats().segments_sealed == 0 {
        fill_from(&mut journal, &mut model, &[1, 2], entry, 16);
        entry += 16;
    }
    drive(&mut journal);
    let stats = journal.stats().clone();
    assert_eq!(stats.segments_sealed, 1, "{stats:?}");
    assert_eq!(stats.compactions_sorting, 1, "{stats:?}");
    assert_eq!(stats.compactions_done, 1, "{stats:?}");
    let table = journal.index().sealed_segment(SegmentId(0)).unwrap();
    assert_eq!(table.generation, 1, "{table:?}");
    verify_all(&mut journal, &model);
}

#[test]
fn a_paused_sort_starts_nothing_and_sorts_once_resumed() {
    let mut journal = Journal::open(SimDisk::new(8), config(true)).unwrap();
    let mut model = Model::default();
    fill(&mut journal, &mut model, &[1, 2, 3], 1500);
    journal.sorting_pause(true);
    journal.compaction_grant(u64::MAX);
    drive(&mut journal);
    assert_eq!(journal.stats().compactions_started, 0);
    journal.sorting_pause(false);
    journal.compaction_grant(u64::MAX);
    drive(&mut journal);
    let stats = journal.stats().clone();
    assert!(stats.compactions_sorting >= 2, "{stats:?}");
    assert_eq!(stats.compactions_done, stats.compactions_started);
    verify_all(&mut journal, &model);
}

#[test]
fn a_paused_sort_gives_way_to_compaction_when_deletions_leave_a_segment_mostly_dead() {
    let config = Config {
        compaction_threshold_minor_per_mille: 200,
        ..config(true)
    };
    let mut journal = Journal::open(SimDisk::new(9), config.clone()).unwrap();
    let mut model = Model::default();
    let ledgers = [1, 2, 3, 4, 5, 6];
    fill(&mut journal, &mut model, &ledgers, 800);
    // Credit for a few steps only: the sort starts and stops partway, then pauses.
    journal.compaction_grant(64 * 1024);
    drive(&mut journal);
    assert!(journal.compaction_running(), "{:?}", journal.stats());
    assert_eq!(journal.stats().compactions_sorting, 1);
    journal.sorting_pause(true);
    journal.compaction_grant(u64::MAX);
    drive(&mut journal);
    assert_eq!(
        journal.stats().compactions_done,
        0,
        "a paused sort takes no step"
    );
    // Five ledgers of six deleted: every sealed segment is a sixth live, under the threshold.
    for &ledger in &ledgers[1..] {
        assert!(journal.delete_ledger(LedgerId(ledger)));
        model.delete(ledger);
    }
    journal.compaction_grant(u64::MAX);
    drive(&mut journal);
    let stats = journal.stats().clone();
    assert_eq!(stats.compactions_sorting_dropped, 1, "{stats:?}");
    assert!(stats.compactions_done >= 2, "{stats:?}");
    assert_eq!(
        stats.compactions_sorting, 1,
        "no sort starts while paused: {stats:?}"
    );
    verify_all(&mut journal, &model);
    // What rests as a temporary is the old files the swaps kept for reuse, not a copy.
    let kept = journal.replaced_files_kept();
    assert_eq!(
        journal.disk_mut().temporaries(),
        kept,
        "the dropped sort's copy is gone"
    );
    // A crash loses nothing.
    let disk = journal.into_disk().crash();
    let mut journal = Journal::open(disk, config).unwrap();
    verify_all(&mut journal, &model);
}

#[test]
fn the_copy_buffer_holds_the_largest_record_and_whole_sectors() {
    use crate::constants::{COMPACTION_BUFFER_SIZE, RECORD_SIZE_MAX, SECTOR_SIZE};
    let with = |compaction_buffer_size| Config {
        compaction_buffer_size,
        ..Config::default()
    };
    let smallest = (RECORD_SIZE_MAX + SECTOR_SIZE).next_multiple_of(SECTOR_SIZE);
    for valid in [smallest, 8 << 20, COMPACTION_BUFFER_SIZE] {
        assert!(with(valid).validate().is_ok(), "{valid}");
    }
    for invalid in [
        smallest - SECTOR_SIZE,
        8 << 20 | 512,
        COMPACTION_BUFFER_SIZE + SECTOR_SIZE,
    ] {
        let error = with(invalid).validate().unwrap_err();
        assert_eq!(error.field, "compaction_buffer_size", "{invalid}");
    }
}

#[test]
fn a_record_across_a_window_end_is_read_alone_not_in_a_window_of_its_own() {
    // One ledger of 1,000-byte entries (records of no whole number of sectors, packed), about
    // 6 MiB of one 16 MiB segment: nearly every 1 MiB window boundary of the scan cuts a
    // record. A window started at each such record read the next window again (about twice
    // the windows); read alone, each costs a sector or two.
    let config = Config {
        segment_size: 16 * 1024 * 1024,
        read_ahead_windows: 8,
        ..config(false)
    };
    let mut journal = Journal::open(SimDisk::new(9), config).unwrap();
    let mut model = Model::default();
    let count = 6000;
    let order = (0..count).map(|entry| (1, entry));
    add_all(&mut journal, &mut model, order, 1000);
    let results = read_outstanding(&mut journal, 1, 0, usize::try_from(count).unwrap());
    assert_reads_back(&results, &model, 1);
    let stats = journal.stats().clone();
    let mib = stats.bytes_written.div_ceil(1024 * 1024);
    assert!(mib >= 6, "{stats:?}");
    assert!(stats.read_ahead_windows <= mib + 1, "{mib} MiB: {stats:?}");
    assert!(stats.reads_disk <= mib + 2, "{mib} MiB: {stats:?}");
}

/// Sixty-four ledgers of 1 KiB entries, sorted in 8 MiB batches (runs of about 120 entries,
/// 128 KiB, each), and one ledger's first 350 entries, all in the sorted segment, scanned
/// after a crash: (bytes the disk read, bytes served).
fn disk_bytes_of_one_ledger_of_many() -> (u64, u64) {
    disk_bytes_of_a_scan_of_one_ledger_of_many(32 * 1024 * 1024, 800, 350, Outstanding::All)
}

/// How a scan sends its reads.
#[derive(Clone, Copy, PartialEq)]
enum Outstanding {
    /// As many as the journal takes.
    All,
    /// One at a time, each after the last was answered: a slow consumer.
    One,
}

/// `entries` of each of sixty-four ledgers in segments of `segment_size`, sorted in 8 MiB
/// batches, and ledger 5's first `count` entries scanned after a crash: (bytes the disk
/// read, bytes served).
fn disk_bytes_of_a_scan_of_one_ledger_of_many(
    segment_size: u64,
    entries: i64,
    count: usize,
    outstanding: Outstanding,
) -> (u64, u64) {
    let config = Config {
        segment_size,
        read_ahead_windows: 8,
        compaction_buffer_size: 8 * 1024 * 1024,
        ..config(true)
    };
    let mut journal = Journal::open(SimDisk::new(7), config.clone()).unwrap();
    let mut model = Model::default();
    let order = (0..entries).flat_map(|entry| (1..=64).map(move |ledger| (ledger, entry)));
    add_all(&mut journal, &mut model, order, 1000);
    assert!(journal.index().sealed_segments().count() >= 1);
    journal.compaction_grant(u64::MAX);
    drive(&mut journal);
    assert!(journal.stats().compactions_sorting >= 1);
    let disk = journal.into_disk().crash();
    let mut journal = Journal::open(disk, config).unwrap();
    let before = journal.stats().read_disk_bytes;
    let results: Vec<_> = match outstanding {
        Outstanding::All => read_outstanding(&mut journal, 5, 0, count),
        Outstanding::One => (0..count as i64)
            .flat_map(|entry| read_outstanding(&mut journal, 5, entry, 1))
            .collect(),
    };
    for (entry, result) in results.iter().enumerate() {
        assert_eq!(result.as_ref().unwrap(), &model.acked[&(5, entry as i64)]);
    }
    let served: usize = results.iter().map(|r| r.as_ref().unwrap().len()).sum();
    (journal.stats().read_disk_bytes - before, served as u64)
}

#[test]
fn a_window_ends_with_the_runs_last_record_in_the_index_pages_read_so_far() {
    // The ledger's first 900 or so entries lie in one 64 MiB segment, one run of slots over
    // two index pages, in runs of about 120 entries a batch: where a batch's run goes on into
    // the page no read had fetched, a full window read other ledgers' runs after it (2.43
    // bytes read per byte served for these 700 entries, 2026-12-07). The guide's windows
    // ahead of the scan's last read are counted too.
    let (read, served) =
        disk_bytes_of_a_scan_of_one_ledger_of_many(64 * 1024 * 1024, 1200, 700, Outstanding::One);
    assert!(
        read < served * 3 / 2,
        "{read} bytes read for {served} served"
    );
}

#[test]
fn a_window_in_a_sorted_segment_stops_where_its_ledgers_run_does() {
    // Three runs of the ledger: a 1 MiB window from each read seven other ledgers' runs after
    // it (3 MiB for 0.37 MB). The guide's one window into the unsorted segment that follows
    // (1 MiB; the scan stops before it) is read either way.
    let (read, served) = disk_bytes_of_one_ledger_of_many();
    let mib = 1024 * 1024;
    assert!(
        read < served + mib + mib / 2,
        "{read} bytes read for {served} served"
    );
}
