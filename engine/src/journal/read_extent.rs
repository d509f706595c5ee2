//! How much of a read-ahead window a scan's own ledger would use: where its records in the
//! window's stretch end, and whether they are dense enough to be worth a window at all.
//!
//! A sorted segment holds each ledger's entries as one run per copy batch (`compact.rs`):
//! about 1.3 MB each for 50 ledgers written together, 130 KiB for 500. A 1 MiB window started
//! at one of the 500 runs read about eight other ledgers' runs after it. In a segment still in
//! commit order (the one being written, and those not sorted yet) one ledger of 500 has a
//! record every 550 KiB, so a window held two of its records: a catch-up read of one ledger
//! of 500 read 25 bytes from the disk for each byte it served (`make busy-reads`, 2026-12-06),
//! bandwidth the commits then queued behind. The index says where the ledger's next records
//! are (the entry arrays for unsealed segments, the index pages in memory for sealed ones):
//!
//! - a window ends with the ledger's last record in its stretch;
//! - where the ledger's records fill less than `READ_AHEAD_DENSITY_MIN` of that stretch, its
//!   records are read alone (a sector or two each), unless the shard is following more than
//!   `READ_AHEAD_SPARSE_SCANS_MAX` scans: then other scans' ledgers fill the window (a read
//!   of every ledger), and it is read whole as before.
//!
//! A run that goes on into an index page not in memory ends the window with its last record
//! the cached pages show: the scan's next read fetches that page anyway and starts its own
//! window (unless more than `READ_AHEAD_SPARSE_SCANS_MAX` scans read at once: the window is
//! then read whole, for the other scans' runs in it). A full window there read past about half the runs of one ledger of 500 into other
//! ledgers' runs: 2.8 bytes from the disk per byte served, with every segment sorted
//! (2026-12-07). A page read for a run that goes on into the next page reads that page too
//! (`reads/resolve.rs`), so a window started in the first one sees the run's end. Where the
//! pages looked at do not say (a run going on past both, unordered slots), the window is
//! read whole as before.

use super::Journal;
use crate::constants::{
    READ_AHEAD_DENSITY_MIN, READ_AHEAD_WINDOW_SIZE, RECORD_PAYLOAD_SIZE_MAX, SECTOR_SIZE,
};
use crate::disk::Disk;
use crate::ids::{EntryId, LedgerId, Location};
use crate::index::Lookup;
use crate::index_file::{self, PAGE_SLOTS};
use crate::record;
use crate::stdx::{align_down_u64, to_u64, to_usize};

/// Index pages one extent looks at: the entry's and the next (a run of 1 KiB entries crosses
/// a page every 560 KiB).
const EXTENT_PAGES_MAX: usize = 2;

/// Records of an unsealed segment one extent looks at (each a lookup in the entry arrays).
const EXTENT_RECORDS_MAX: i64 = 1024;

/// A ledger's next record this close past a window's stretch continues it (see `extent_of`).
const EXTENT_GAP_MAX: u64 = 64 * 1024;

/// What a window started for a scan's read may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Extent {
    /// Where the window may end: the ledger's last record in its stretch, or `u64::MAX`
    /// (unknown: the window's full length).
    pub end: u64,
    /// The ledger's records are too sparse in the stretch for a window: read them alone.
    pub sparse: bool,
}

impl Extent {
    /// Nothing known: a full window, as without an index.
    pub(super) const UNKNOWN: Extent = Extent {
        end: u64::MAX,
        sparse: false,
    };
}

/// The ledger's records seen so far in a window's stretch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Seen {
    /// Position and end of the last record seen.
    pub last: (u64, u64),
    /// Bytes of the records seen, the first included.
    pub bytes: u64,
    /// Where the run's first record past the stretch is (`u64::MAX`: none, or not seen).
    pub next: u64,
}

/// What a page's slots say about how far a run reaches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Reach {
    /// A slot at or past the limit, at this position: the run has no record after those seen
    /// below it before there.
    Ends(Seen, u64),
    /// Every slot looked at lay below the limit: the run may go on past them.
    Open(Seen),
    /// A slot lies before the one looked at before it: positions do not follow entry ids
    /// here, and the slots say nothing.
    Unordered,
}

/// Takes the run's record at `at` of `payload_size` bytes into `seen`; false if the run
/// left the stretch (at or past `limit`) there, None if it went backwards.
fn take(seen: &mut Seen, at: u64, payload_size: u32, limit: u64) -> Option<bool> {
    if at < seen.last.0 {
        return None;
    }
    if at >= limit {
        seen.next = at;
        return Some(false);
    }
    let size = to_u64(record::record_size(
        to_usize(u64::from(payload_size)).min(RECORD_PAYLOAD_SIZE_MAX),
    ));
    seen.last = (at, at + size);
    seen.bytes += size;
    Some(true)
}

/// Walks `slots` of an index page, after `seen`: the run's records below `limit`.
pub(super) fn page_reach(
    page: &[u8],
    slots: std::ops::Range<usize>,
    mut seen: Seen,
    limit: u64,
) -> Reach {
    for index in slots {
        let Some((at, payload_size)) = index_file::page_slot(page, index) else {
            continue;
        };
        match take(&mut seen, u64::from(at), payload_size, limit) {
            Some(true) => {}
            Some(false) => return Reach::Ends(seen, seen.next),
            None => return Reach::Unordered,
        }
    }
    Reach::Open(seen)
}

/// The extent of a stretch from `start` where the ledger's records end at `seen.last.1`:
/// sparse where they fill less than `READ_AHEAD_DENSITY_MIN` of it. A ledger whose next
/// record follows within `EXTENT_GAP_MAX` (commit padding, a neighbour's few records) goes on
/// past the stretch: its window is not cut, so the scan's prefetch follows it.
fn extent_of(start: u64, seen: Seen) -> Extent {
    let span = seen.last.1 - start;
    let (numerator, denominator) = READ_AHEAD_DENSITY_MIN;
    let goes_on = seen.next.saturating_sub(seen.last.1) <= EXTENT_GAP_MAX;
    Extent {
        end: if goes_on { u64::MAX } else { seen.last.1 },
        sparse: seen.bytes * denominator < span * numerator,
    }
}

impl<D: Disk> Journal<D> {
    /// What a window for `entry` of `ledger`, a record of `size` bytes at `location`, may do
    /// (see the module docs). Looked up only when the read may start a window.
    pub(super) fn read_extent(
        &mut self,
        ledger: LedgerId,
        entry: EntryId,
        location: Location,
        size: usize,
    ) -> Extent {
        let position = location.position.0;
        if !self
            .reads
            .window_may_start(location.segment, position, size)
        {
            return Extent::UNKNOWN;
        }
        let start = align_down_u64(position, to_u64(SECTOR_SIZE));
        let limit = start + to_u64(READ_AHEAD_WINDOW_SIZE);
        let seen = Seen {
            last: (position, position + to_u64(size)),
            bytes: to_u64(size),
            next: u64::MAX,
        };
        let extent = match self
            .index
            .ledger(ledger)
            .map(|state| state.locate(entry, 0))
        {
            Some(Lookup::Sealed { run, .. }) if run.segment == location.segment => {
                self.sealed_extent(run, entry, seen, limit)
            }
            Some(Lookup::Found(_)) => self.unsealed_extent(ledger, entry, location, seen, limit),
            _ => None,
        };
        match extent {
            Some(seen) => {
                let mut extent = extent_of(start, seen);
                extent.sparse &= !self.reads.scans_many();
                extent
            }
            None => Extent::UNKNOWN,
        }
    }

    /// The run's records after `entry` in a sealed segment's index pages in memory, below
    /// `limit`; None if the pages looked at do not show where they end.
    fn sealed_extent(
        &mut self,
        run: crate::index::SealedRun,
        entry: EntryId,
        mut seen: Seen,
        limit: u64,
    ) -> Option<Seen> {
        let slot_last = run.slot_of(EntryId(run.entry_last));
        let mut slot = run.slot_of(entry) + 1;
        for _ in 0..EXTENT_PAGES_MAX {
            if slot > slot_last {
                // The run ends in this segment (another run of the ledger may follow; its
                // reads start their own windows).
                return Some(seen);
            }
            let (page, at) = index_file::page_of(slot);
            let to = PAGE_SLOTS.min(at + to_usize(slot_last - slot + 1));
            let Some(bytes) = self.index_pages.get(run.segment, page) else {
                // The run goes on in a page not read yet. The window ends with the last of
                // its records known: a window the full length instead read past the run's
                // end into other ledgers' runs whenever a run crossed a page, about half the
                // runs of one ledger of 500 (2.8 bytes read per byte served, fully sorted).
                // The scan's next read fetches that page anyway and starts its own window.
                // Not while many scans read at once: their ledgers' runs fill the window.
                return (!self.reads.scans_many()).then_some(seen);
            };
            match page_reach(bytes, at..to, seen, limit) {
                Reach::Ends(ended, _) => return Some(ended),
                Reach::Open(open) => seen = open,
                Reach::Unordered => return None,
            }
            slot += to_u64(to - at);
        }
        (slot > slot_last).then_some(seen)
    }

    /// The ledger's records after `entry` in the unsealed segment of `location`, from the
    /// entry arrays, below `limit`; None if they go on past `EXTENT_RECORDS_MAX`.
    fn unsealed_extent(
        &self,
        ledger: LedgerId,
        entry: EntryId,
        location: Location,
        mut seen: Seen,
        limit: u64,
    ) -> Option<Seen> {
        let state = self.index.ledger(ledger)?;
        for next in 1..=EXTENT_RECORDS_MAX {
            let Lookup::Found(slot) = state.locate(EntryId(entry.0.checked_add(next)?), 0) else {
                // No more entries here (the ledger's newest, or a hole): what was seen is all
                // this stretch holds as far as memory says.
                return Some(seen);
            };
            if slot.location().segment != location.segment {
                return Some(seen);
            }
            let at = slot.location().position.0;
            match take(&mut seen, at, slot.payload_size(), limit)? {
                true => {}
                false => return Some(seen),
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::{extent_of, page_reach, Reach, Seen};
    use crate::constants::SECTOR_SIZE;
    use crate::index_file::{page_seal, page_slot_set, PAGE_SLOTS};
    use crate::record::record_size;
    use crate::stdx::to_u64;

    /// A page whose slots `0..` hold records of `payload` bytes at `positions`, holes after.
    fn page(positions: &[Option<u32>], payload: u32) -> Vec<u8> {
        let mut page = vec![0u8; SECTOR_SIZE];
        for index in 0..PAGE_SLOTS {
            let slot = positions
                .get(index)
                .copied()
                .flatten()
                .map(|at| (at, payload));
            page_slot_set(&mut page, index, slot);
        }
        page_seal(&mut page);
        page
    }

    fn first(at: u64) -> Seen {
        let size = to_u64(record_size(1000));
        Seen {
            last: (at, at + size),
            bytes: size,
            next: u64::MAX,
        }
    }

    #[test]
    fn a_run_that_leaves_the_limit_ends_at_its_last_record_below_it() {
        let size = to_u64(record_size(1000));
        let positions: Vec<Option<u32>> = [4096u32, 4096 + 1064, 4096 + 2128, 900_000]
            .map(Some)
            .to_vec();
        let reach = page_reach(&page(&positions, 1000), 1..4, first(4096), 500_000);
        let Reach::Ends(seen, next) = reach else {
            panic!("{reach:?}");
        };
        assert_eq!(next, 900_000);
        assert_eq!(seen.last, (4096 + 2128, 4096 + 2128 + size));
        assert_eq!(seen.bytes, 3 * size);
        // Three packed records from the window's start: dense.
        assert!(!extent_of(4096, seen).sparse);
        assert_eq!(extent_of(4096, seen).end, 4096 + 2128 + size);
    }

    #[test]
    fn holes_are_skipped_and_a_run_below_the_limit_stays_open() {
        let size = to_u64(record_size(1000));
        let positions = [Some(4096), None, Some(8192), None];
        let reach = page_reach(&page(&positions, 1000), 1..4, first(4096), 500_000);
        assert_eq!(
            reach,
            Reach::Open(Seen {
                last: (8192, 8192 + size),
                bytes: 2 * size,
                next: u64::MAX,
            })
        );
    }

    #[test]
    fn positions_out_of_entry_order_say_nothing() {
        let positions = [Some(40_960), Some(8192)];
        let reach = page_reach(&page(&positions, 1000), 1..2, first(40_960), 500_000);
        assert_eq!(reach, Reach::Unordered);
    }

    #[test]
    fn a_ledger_going_on_right_past_the_stretch_keeps_its_whole_window() {
        let size = to_u64(record_size(1000));
        let limit = 4096 + 1_048_576;
        let positions = [
            Some(4096),
            Some(limit as u32 - 500),
            Some(limit as u32 + 3000),
        ];
        let reach = page_reach(&page(&positions, 1000), 1..3, first(4096), limit);
        let Reach::Ends(seen, next) = reach else {
            panic!("{reach:?}");
        };
        assert_eq!(next, limit + 3000);
        assert_eq!(seen.last.1, limit - 500 + size);
        assert_eq!(extent_of(4096, seen).end, u64::MAX);
    }

    #[test]
    fn records_far_apart_are_sparse() {
        // One ledger of 500 in commit order: a record every 550 KB.
        let positions = [Some(4096), Some(554_096), Some(1_104_096)];
        let reach = page_reach(&page(&positions, 1000), 1..3, first(4096), 4096 + 1_048_576);
        let Reach::Ends(seen, _) = reach else {
            panic!("{reach:?}");
        };
        assert!(extent_of(4096, seen).sparse);
    }
}
