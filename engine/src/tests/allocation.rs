//! Steady-state appends allocate nothing per entry (a counting global allocator).

use super::harness::{body, config_small, drive, KEY};

use crate::counting_allocator::{allocations, CountingAllocator};
use crate::journal::{AddOptions, Event, Journal};
use crate::{EntryId, LedgerId, SimDisk};

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

#[test]
fn steady_state_add_and_stage_allocates_nothing_per_entry() {
    // 8 MiB segments: no rollover (whose simulated I/O allocates) falls in the measured window.
    let config = crate::Config {
        segment_size: 8 * 1024 * 1024,
        ..config_small()
    };
    let mut journal = Journal::open(SimDisk::new(1), config).unwrap();
    let data = body(1, 0, 256);
    let mut events = Vec::with_capacity(100_000);
    // Warm up: create the ledger and grow its index array once.
    for entry in 0..2000i64 {
        journal
            .add(
                entry as u64,
                LedgerId(1),
                EntryId(entry),
                &KEY,
                &data,
                AddOptions::default(),
            )
            .unwrap();
        if entry % 100 == 0 {
            drive(&mut journal);
        }
    }
    drive(&mut journal);
    // Only the engine's own staging path is measured: `add` copies into the preallocated
    // commit buffer and bookkeeping arrays. (The simulated disk allocates per I/O, so disk
    // completion is outside the measured region.)
    let before = allocations();
    for entry in 2000..2100i64 {
        journal
            .add(
                entry as u64,
                LedgerId(1),
                EntryId(entry),
                &KEY,
                &data,
                AddOptions::default(),
            )
            .unwrap();
    }
    let after = allocations();
    assert_eq!(after - before, 0, "add allocated on the hot path");
    journal.events_swap(&mut events);
    assert!(events
        .iter()
        .all(|event| !matches!(event, Event::Failed { .. })));
}
