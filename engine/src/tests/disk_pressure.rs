//! Disk pressure (issue 33): a churning journal on a small disk, with at most half of it
//! live, must never refuse an add. Two streams of ledgers are interleaved entry by entry, as
//! a BookKeeper client writing short-lived and long-lived ledgers does, so every segment is
//! about half live: the minor threshold (0.2) alone never compacts one, and the disk fills.

use super::harness::{drive, verify_all, Model, KEY};
use crate::error::AddError;
use crate::ids::{EntryId, LedgerId};
use crate::journal::{AddOptions, Journal};
use crate::tests::harness::{body, config_small};
use crate::{Config, SimDisk};

const SEGMENT_SIZE: u64 = 256 * 1024;
/// A half-segment per ledger: each segment holds two ledgers of each stream.
const ENTRIES_PER_LEDGER: i64 = 120;
const ENTRY_SIZE: usize = 1000;
/// The disk: the reserve plus 24 segments.
const CAPACITY_SEGMENTS: u64 = 24;
/// Long-lived ledgers kept: about 42% of the disk live, in 22 half-live segments.
const LONG_KEPT: usize = 22;
/// Bytes written in all: about six disks.
const WRITTEN_SEGMENTS: u64 = 6 * CAPACITY_SEGMENTS;

/// What a run did: adds refused and why, adds that waited, and the journal's counters.
struct Churn {
    refused: Vec<AddError>,
    waits: u64,
    journal: Journal<SimDisk>,
    model: Model,
}

fn churn(seed: u64, pressure_percent: u32) -> Churn {
    let config = Config {
        segment_size: SEGMENT_SIZE,
        disk_reserve: SEGMENT_SIZE,
        disk_pressure_percent: pressure_percent,
        // A busy bookie's sorting is paused (the server pauses it above
        // --sort-traffic-max-mib); a sort would drop the dead half of each segment too.
        sort_sealed: false,
        ..config_small()
    };
    let mut journal = Journal::open(SimDisk::new(seed), config).unwrap();
    journal.disk_mut().faults.capacity = Some(SEGMENT_SIZE * (CAPACITY_SEGMENTS + 1));
    let mut model = Model::default();
    let mut refused = Vec::new();
    let mut token = 0u64;
    // Stream 0 short-lived (deleted when full), stream 1 long-lived (the newest kept).
    let mut ledgers = [1i64, 2];
    let mut next_id = 3i64;
    let mut long_closed: Vec<i64> = Vec::new();
    let entries_total = WRITTEN_SEGMENTS * SEGMENT_SIZE / (ENTRY_SIZE as u64 + 64);
    let mut entry = 0i64;
    let mut written = 0u64;
    while written < entries_total {
        for ledger in ledgers {
            let data = body(ledger, entry, ENTRY_SIZE);
            loop {
                journal.compaction_grant(u64::MAX);
                let options = AddOptions::default();
                match journal.add(
                    token,
                    LedgerId(ledger),
                    EntryId(entry),
                    &KEY,
                    &data,
                    options,
                ) {
                    Ok(()) => {
                        model.pending.insert(token, (ledger, entry, data));
                        break;
                    }
                    Err(AddError::StagingFull) => {
                        model.apply(&drive(&mut journal));
                        journal.segment_retry_now();
                    }
                    Err(error) => {
                        refused.push(error);
                        break;
                    }
                }
            }
            token = (token + 1) % 9000;
            written += 1;
        }
        entry += 1;
        if entry % 8 == 0 {
            model.apply(&drive(&mut journal));
        }
        if entry == ENTRIES_PER_LEDGER {
            model.apply(&drive(&mut journal));
            entry = 0;
            let short = ledgers[0];
            assert!(journal.delete_ledger(LedgerId(short)));
            model.delete(short);
            long_closed.push(ledgers[1]);
            if long_closed.len() > LONG_KEPT {
                let old = long_closed.remove(0);
                assert!(journal.delete_ledger(LedgerId(old)));
                model.delete(old);
            }
            ledgers = [next_id, next_id + 1];
            next_id += 2;
        }
        if !refused.is_empty() {
            break;
        }
    }
    model.apply(&drive(&mut journal));
    let waits = journal.stats().space_waits;
    Churn {
        refused,
        waits,
        journal,
        model,
    }
}

#[test]
fn a_churning_journal_on_a_small_disk_compacts_under_pressure_and_refuses_no_add() {
    let Churn {
        refused,
        waits,
        mut journal,
        model,
    } = churn(31, crate::constants::DISK_PRESSURE_PERCENT_DEFAULT);
    let stats = journal.stats().clone();
    assert!(refused.is_empty(), "adds refused: {refused:?}, {stats:?}");
    assert!(stats.compactions_done > 0, "{stats:?}");
    assert!(!journal.is_read_only());
    println!(
        "pressure on: {waits} waits for space ({} us), {} compactions, {} bytes copied, {} \
         segments removed",
        stats.space_wait_us_total,
        stats.compactions_done,
        stats.compaction_bytes_written,
        stats.segments_removed
    );
    verify_all(&mut journal, &model);
    let disk = journal.into_disk().crash();
    let config = Config {
        segment_size: SEGMENT_SIZE,
        disk_reserve: SEGMENT_SIZE,
        ..config_small()
    };
    let mut journal = Journal::open(disk, config).unwrap();
    verify_all(&mut journal, &model);
}

#[test]
fn without_the_pressure_ramp_the_same_churn_stalls_on_a_full_disk_more_often() {
    let on = churn(32, crate::constants::DISK_PRESSURE_PERCENT_DEFAULT);
    let off = churn(32, 0);
    // Without the ramp, half-live segments are compacted only once the write head finds no
    // room: adds wait at every segment instead of never (or seldom).
    println!(
        "waits for space: {} with the ramp, {} without",
        on.waits, off.waits
    );
    assert!(
        on.refused.is_empty() && off.refused.is_empty(),
        "{:?} {:?} {:?}",
        on.refused,
        off.refused,
        off.journal.stats()
    );
    assert!(
        off.waits > 2 * on.waits + 5,
        "{} vs {}",
        off.waits,
        on.waits
    );
}

#[test]
fn under_disk_pressure_the_active_segment_is_not_zeroed_ahead() {
    // Zero-ahead writes as many bytes again as the commits, to spare them an extent
    // conversion; on a nearly full disk those writes are wanted for giving space back.
    let run = |capacity: Option<u64>| {
        let config = Config {
            segment_size: SEGMENT_SIZE,
            disk_reserve: SEGMENT_SIZE,
            ..config_small()
        };
        let mut disk = SimDisk::new(41);
        disk.faults.capacity = capacity;
        let mut journal = Journal::open(disk, config).unwrap();
        let mut model = Model::default();
        // One commit (a 4 KiB block) each: half a segment in all.
        for entry in 0..32 {
            let token = u64::try_from(entry).unwrap();
            while !super::harness::add(&mut journal, &mut model, token, 7, entry, 100) {
                model.apply(&drive(&mut journal));
            }
            model.apply(&drive(&mut journal));
        }
        verify_all(&mut journal, &model);
        (
            journal.stats().zero_ahead_bytes,
            journal.disk_pressure_per_mille(),
        )
    };
    let (zeroed, level) = run(None);
    assert_eq!(level, 0);
    assert!(zeroed > 0, "zero-ahead runs without pressure");
    // The reserve, the active segment, its spare and a little more: pressure from the open.
    let (zeroed, level) = run(Some(SEGMENT_SIZE * 9 / 2));
    assert!(level > 0 && level < 1000, "{level}");
    assert_eq!(zeroed, 0);
}
