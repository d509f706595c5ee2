//! Disk pressure: what the file system's free space asks of compaction, the recycle pool and
//! the adds (docs/gc.md, "Disk pressure").
//!
//! The level is in thousandths, read from statvfs whenever free space may have moved: before
//! a segment is prepared, after a removal and after a compaction's swap (no clock needed). It
//! is 0 while free space is above the start, `Config::disk_pressure_percent` of the file
//! system (at least one segment above the floor); 1000 at the floor, the reserve plus one
//! segment, below which no segment is created; linear in between. Rising, it
//! - raises compaction's threshold from the minor to the major one, so half-live segments
//!   are copied well before the disk fills (the minor threshold alone leaves a churning
//!   bookie full of them), grows compaction's credit, and lets compaction submit while every
//!   commit slot is busy: a steady writer otherwise never leaves it a turn;
//! - shrinks the recycle pool with the pressure band still free, down to one file, the next
//!   segment's (a compacted segment's old file may be it: `dead.rs`,
//!   `recycle_budget_under_pressure`), and stops sorting and zero-ahead (their writes are
//!   wanted for giving space back).
//!
//! At the floor the write head finds no segment ("blocked"). Adds then wait
//! (`AddError::StagingFull`: the server stops reading, the clients see latency) instead of
//! getting `ReadOnly`, as long as space can still come back: a compaction job or candidate, a
//! dead segment or kept file to remove, deletions waiting for their checkpoint, and some of
//! that made progress within `SPACE_WAIT_PROGRESS_MS_MAX`. Compaction then takes segments up
//! to 0.9 live (halfway from the major threshold to 1), without credit. With a collector
//! outside the journal (the server's, `deletions_await_arm`), a block also waits for its next
//! round: ledgers deleted in the metadata are space the journal has not heard of yet.
//! Read-only (EREADONLY, the read-only znode) is left for a disk whose live data and reserve
//! truly fill it, or whose reclaiming is stuck.

use super::Journal;
use crate::constants::SPACE_WAIT_PROGRESS_MS_MAX;
use crate::disk::Disk;
use std::time::{Duration, Instant};

/// Pressure levels closer than this do not plan compaction again.
const REPLAN_STEP_PER_MILLE: u32 = 25;

/// The pressure level and the write head's wait for space. See the module docs.
#[derive(Debug)]
pub(super) struct Pressure {
    per_mille: u32,
    /// Since when the write head has had no segment to go to and none could be created.
    blocked_since: Option<Instant>,
    /// The last completion of compaction or of a removal while blocked.
    progress_at: Instant,
    /// Ledgers are deleted by a collector outside the journal (`Journal::deletions_await_arm`):
    /// a block waits for its answer.
    deletions_external: bool,
    /// Blocked, and the collector has not answered since (`Journal::deletions_answered`).
    deletions_awaited: bool,
}

impl Pressure {
    pub(super) fn new() -> Pressure {
        Pressure {
            per_mille: 0,
            blocked_since: None,
            progress_at: Instant::now(),
            deletions_external: false,
            deletions_awaited: false,
        }
    }

    /// The level, 0 ..= 1000.
    pub(super) fn per_mille(&self) -> u32 {
        self.per_mille
    }

    /// Compaction or a removal completed an operation: space is coming back.
    pub(super) fn progress(&mut self) {
        if self.blocked_since.is_some() {
            self.progress_at = Instant::now();
        }
    }

    /// True while blocked and nothing that frees space made progress for too long.
    fn stuck(&self) -> bool {
        self.blocked_since.is_some()
            && self.progress_at.elapsed() > Duration::from_millis(SPACE_WAIT_PROGRESS_MS_MAX)
    }
}

/// The level for `free` bytes free of `total`, with `floor` (reserve plus one segment) and
/// `segment` bytes per segment. See the module docs.
pub(super) fn pressure_per_mille(
    free: u64,
    total: u64,
    floor: u64,
    segment: u64,
    percent: u32,
) -> u32 {
    if percent == 0 {
        return 0;
    }
    let start = (total / 100)
        .saturating_mul(u64::from(percent))
        .max(floor.saturating_add(segment));
    if free >= start {
        0
    } else if free <= floor {
        1000
    } else {
        let level = (start - free).saturating_mul(1000) / (start - floor);
        u32::try_from(level.min(1000)).unwrap_or(1000)
    }
}

impl<D: Disk> Journal<D> {
    /// Reads the file system's free space and sets the level; plans compaction again when it
    /// moved. A file system that cannot tell keeps the level it had.
    pub(super) fn pressure_update(&mut self) {
        let (Ok(free), Ok(total)) = (self.disk.space_free(), self.disk.space_total()) else {
            return;
        };
        let segment = self.config.segment_size;
        let floor = self.config.disk_reserve.saturating_add(segment);
        let level = pressure_per_mille(
            free,
            total,
            floor,
            segment,
            self.config.disk_pressure_percent,
        );
        if self.segments.is_read_only() {
            // Space may have come back: try the segment at the next submit.
            self.segments.retry_now();
        }
        let before = self.pressure.per_mille;
        if level.abs_diff(before) >= REPLAN_STEP_PER_MILLE || (level == 0) != (before == 0) {
            self.pressure.per_mille = level;
            self.compaction.replan();
        }
        self.stats.disk_pressure_per_mille = u64::from(self.pressure.per_mille);
    }

    /// Notes whether the write head is blocked (`Segments` found no room for a segment), for
    /// the wait's clock and counters. Called once per `submit`.
    pub(super) fn pressure_blocked_track(&mut self) {
        let blocked = self.segments.is_read_only();
        match (blocked, self.pressure.blocked_since) {
            (true, None) => {
                let now = Instant::now();
                self.pressure.blocked_since = Some(now);
                self.pressure.progress_at = now;
                self.pressure.deletions_awaited = self.pressure.deletions_external;
                self.stats.space_waits += 1;
                self.compaction.replan();
            }
            (false, Some(since)) => {
                self.pressure.blocked_since = None;
                self.pressure.deletions_awaited = false;
                let waited = u64::try_from(since.elapsed().as_micros()).unwrap_or(u64::MAX);
                self.stats.space_wait_us_total += waited;
                self.compaction.replan();
            }
            _ => {}
        }
    }

    /// Compaction's threshold now, in thousandths: the minor one without pressure, rising to
    /// the major one at the floor, and halfway from there to 1000 while blocked (0.9 by
    /// default: a copy that frees a tenth of its segment for nine tenths copied is still worth
    /// it when adds wait; one that frees only commit padding is not). 0 (compaction off)
    /// when both thresholds are 0.
    pub(super) fn compaction_threshold_per_mille(&self) -> u32 {
        let minor = self.config.compaction_threshold_minor_per_mille;
        let major = self.config.compaction_threshold_major_per_mille;
        if minor == 0 && major == 0 {
            return 0;
        }
        let high = major.max(minor);
        if self.segments.is_read_only() {
            return (high + 1000) / 2;
        }
        minor + (high - minor) * self.pressure.per_mille / 1000
    }

    /// True when something under way or waiting can still give space back.
    fn space_reclaimable(&self) -> bool {
        self.compaction.may_free_space()
            || self.dead.is_busy()
            || (self.seal.deletions_pending() && !self.seal.is_failing())
            || self
                .index
                .sealed_segment_dead_any(self.seal.resume().segment)
    }

    /// True when adds must be refused for space: no segment can be created, nothing can
    /// give space back (or nothing did for `SPACE_WAIT_PROGRESS_MS_MAX`), and the server is
    /// not finding out about deletions.
    pub(super) fn space_exhausted(&self) -> bool {
        self.segments.is_read_only()
            && !self.pressure.deletions_awaited
            && (self.pressure.stuck() || !self.space_reclaimable())
    }

    /// Whether ledgers are deleted by a collector outside the journal (the server's, which
    /// compares with the metadata). While one runs, a write head that finds no room waits for
    /// its answer (`deletions_answered`) before it may turn read-only: ledgers deleted in the
    /// metadata that the journal has not heard of yet are space that can come back.
    pub fn deletions_await_arm(&mut self, external: bool) {
        self.pressure.deletions_external = external;
        if !external {
            self.pressure.deletions_awaited = false;
        }
    }

    /// True while blocked and waiting for the collector's answer.
    #[must_use]
    pub fn is_awaiting_deletions(&self) -> bool {
        self.pressure.deletions_awaited
    }

    /// The collector completed a round that started after the block began, and its deletions
    /// were applied (or it could not answer in time). Reclaiming gets its full time again.
    pub fn deletions_answered(&mut self) {
        if self.pressure.deletions_awaited {
            self.pressure.deletions_awaited = false;
            self.pressure.progress_at = Instant::now();
        }
    }

    /// True while no segment can be created for the write head: adds wait or are refused.
    #[must_use]
    pub fn is_blocked_for_space(&self) -> bool {
        self.segments.is_read_only()
    }

    /// What the operator's log line says when the journal turns read-only for space: why,
    /// and the figures that show whether live data truly fills the disk.
    #[must_use]
    pub fn space_report(&mut self) -> SpaceReport {
        let resume = self.seal.resume().segment;
        let (mut sealed_bytes, mut live_bytes, mut sealed_segments) = (0u64, 0u64, 0u32);
        for segment in self.index.sealed_segments().collect::<Vec<_>>() {
            if segment >= resume {
                continue;
            }
            if let Some(table) = self.index.sealed_segment(segment) {
                sealed_bytes += table.file_size;
                live_bytes += table.bytes_live;
                sealed_segments += 1;
            }
        }
        SpaceReport {
            stuck: self.pressure.stuck(),
            free_bytes: self.disk.space_free().unwrap_or(u64::MAX),
            sealed_segments,
            sealed_bytes,
            live_bytes,
            compaction_threshold_per_mille: self.compaction_threshold_per_mille(),
            compaction_may_free: self.compaction.may_free_space(),
            removals_busy: self.dead.is_busy(),
            deletions_pending: self.seal.deletions_pending(),
        }
    }
}

/// See `Journal::space_report`.
#[derive(Debug, Clone, Copy)]
pub struct SpaceReport {
    /// Reclaiming made no progress for `SPACE_WAIT_PROGRESS_MS_MAX` (else: nothing to reclaim).
    pub stuck: bool,
    pub free_bytes: u64,
    pub sealed_segments: u32,
    /// The sealed segments' file sizes and the live bytes in them.
    pub sealed_bytes: u64,
    pub live_bytes: u64,
    pub compaction_threshold_per_mille: u32,
    pub compaction_may_free: bool,
    pub removals_busy: bool,
    pub deletions_pending: bool,
}
