//! What the server asks of a journal between its turns, without changing it: a ledger's
//! state and the index, whether it is poisoned, read-only or waiting for space, the disk
//! pressure and compaction's state, the commits staged and in flight, what open found, and
//! the counters. Read-only accessors; the state they read is each state machine's own.

use super::{CommitInFlight, Journal, Stats};
use crate::disk::Disk;
use crate::ids::LedgerId;
use crate::index::{Index, Ledger};
use crate::recovery::OpenReport;

impl<D: Disk> Journal<D> {
    /// A ledger's state.
    #[must_use]
    pub fn ledger(&self, ledger: LedgerId) -> Option<&Ledger> {
        self.index.ledger(ledger)
    }

    /// The whole index (tests compare it across restarts).
    #[must_use]
    pub fn index(&self) -> &Index {
        &self.index
    }

    /// True after a write or sync failure.
    #[must_use]
    pub fn is_poisoned(&self) -> bool {
        self.commits.is_poisoned()
    }

    /// Old files of segments replaced by their compacted copies, kept (as temporaries) for
    /// the next segments to reuse (`dead.rs`).
    #[must_use]
    pub fn replaced_files_kept(&self) -> usize {
        self.dead.replaced_count()
    }

    /// True while a compaction job runs (its copy not yet in place).
    #[must_use]
    pub fn compaction_running(&self) -> bool {
        self.compaction.segment().is_some()
    }

    /// Segments taken out of compaction because a record or index page failed its check.
    #[must_use]
    pub fn compaction_refused(&self) -> usize {
        self.compaction.refused()
    }

    /// True while no segment can be created (disk full) and nothing can give space back:
    /// adds get `ReadOnly`. While space can still come back, adds wait instead
    /// (`is_waiting_for_space`).
    #[must_use]
    pub fn is_read_only(&self) -> bool {
        self.space_exhausted()
    }

    /// True while the write head waits for compaction or removals to give space back
    /// (adds get `StagingFull`, backpressure), not read-only.
    #[must_use]
    pub fn is_waiting_for_space(&self) -> bool {
        self.segments.is_read_only() && !self.space_exhausted()
    }

    /// The disk-pressure level, in thousandths (`journal/pressure.rs`).
    #[must_use]
    pub fn disk_pressure_per_mille(&self) -> u32 {
        self.pressure.per_mille()
    }

    /// Compaction's threshold now, in thousandths of a segment live (it rises with pressure).
    #[must_use]
    pub fn compaction_threshold_now_per_mille(&self) -> u32 {
        self.compaction_threshold_per_mille()
    }

    /// The oldest commit submitted and not yet durable, with the stage it waits in: what the
    /// server's stall watchdog reports. `None` when no commit is in flight.
    #[must_use]
    pub fn commit_oldest_in_flight(&self) -> Option<CommitInFlight> {
        self.commits.oldest_in_flight()
    }

    /// True when every commit slot is in flight: nothing staged now can be submitted before
    /// a commit completes.
    #[must_use]
    pub fn commit_slots_full(&self) -> bool {
        self.commits.slots_full()
    }

    /// Records staged and not yet submitted.
    #[must_use]
    pub fn staged_records(&self) -> usize {
        self.commits.staged_records()
    }

    /// Bytes of records staged and not yet submitted (before sector padding).
    #[must_use]
    pub fn staged_bytes(&self) -> usize {
        self.commits.staged_bytes()
    }

    /// What open found and did: the checkpoint used, indexes loaded and rebuilt, what was
    /// scanned.
    #[must_use]
    pub fn open_report(&self) -> &OpenReport {
        &self.open_report
    }

    /// Segments waiting to be sealed (their entries still cost memory).
    #[must_use]
    pub fn segments_unsealed(&self) -> usize {
        self.seal.pending()
    }

    /// Counters.
    #[must_use]
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// True when the copy of `entry` that reads find first lies in `segment`: a damaged copy
    /// there is the one to repair. Memory only.
    #[must_use]
    pub fn entry_current_in(
        &self,
        ledger: LedgerId,
        entry: crate::ids::EntryId,
        segment: crate::ids::SegmentId,
    ) -> bool {
        self.index.entry_current_in(ledger, entry, segment)
    }

    /// The entries found damaged and not repaired yet (`Journal::damaged_record`).
    #[must_use]
    pub fn damaged(&self) -> Vec<(LedgerId, crate::ids::EntryId)> {
        self.index.damaged().collect()
    }

    /// The scrubber's state (docs/scrub.md), for the HTTP API and tests.
    #[must_use]
    pub fn scrub_state(&self) -> ScrubState {
        ScrubState {
            enabled: self.config.scrub_rate_max > 0,
            position: self.scrub.position(),
            segment_current: self.scrub.segment_current(),
            rate_bytes_per_s: self.scrub.rate_bytes_per_s(),
        }
    }
}

/// What `Journal::scrub_state` reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScrubState {
    /// False with `Config::scrub_rate_max` 0.
    pub enabled: bool,
    /// Where the scrubber is, as the checkpoint keeps it.
    pub position: crate::checkpoint::ScrubPosition,
    /// The segment being checked now.
    pub segment_current: Option<crate::ids::SegmentId>,
    /// This cycle's read rate, bytes a second (0 before the first grant).
    pub rate_bytes_per_s: u64,
}
