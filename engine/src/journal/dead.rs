//! Dead segments: sealed segments left with nothing live (every ledger with records in them
//! deleted). Up to `Config::segment_recycle_max` of them are kept for segment preparation to
//! reuse as the next segments (`segment_recycle_take`, `journal/segments.rs`); the others are
//! removed, one per `removal_pace` allowance (`segment_dead_remove`). Kept ones are removed
//! too once none was reused for `SEGMENT_RECYCLE_IDLE_PACES` paces (a bookie that stopped
//! writing gives the space back), and none is kept while the disk has no room for a new
//! segment (a full disk gets its space back, and compaction room for its copies).
//!
//! Reuse is what a churning bookie needs: a collector round leaves several segments dead at
//! once while the write head needs a new one every few seconds. Each reuse saves an unlink
//! of a whole segment (ext4 frees its extents in its journal, which the commits' fdatasyncs
//! then wait behind), a fallocate, and zero-ahead's write of every block of a new segment.
//!
//! Both wait until every deletion is in a durable checkpoint, so a crash cannot bring back a
//! ledger whose data is gone. Both skip the segment compaction is copying: it reads it until
//! the copy replaces it (the copy, holding only deleted ledgers' records, is then dead and
//! dealt with in turn). Both unlink the index file first and then sync the directory once,
//! after the segment's unlink or rename, so an index never outlives its segment (directory
//! changes become durable in order); a crash in between leaves a segment without an index,
//! which open rebuilds (its records all deleted ledgers') and finds dead again.
//!
//! Sorting adds to the same pool: a journal segment sorted beside the writes hands its old
//! file over instead of freeing it (`FileOp::Replace` with `keep`), so the next
//! segment reuses it: sorting then writes each byte twice in all (journal and sorted copy)
//! rather than three times (zero-ahead of a new segment too), and no unlink of a whole segment
//! runs beside the commits. Those replaced files count against the same budget, are used
//! first (they need neither a durable deletion nor an index unlink), and are removed like dead
//! segments once not wanted. They rest under the copy's temporary name, which the next open
//! keeps when it holds a whole journal segment (`recovery/segment_files.rs`) and deletes
//! otherwise, and their segment is not compacted again before they are gone (the next copy
//! would be written under that name).
//!
//! Both go through the ring (`Disk::submit_file_ops`): an unlink of a whole segment makes
//! the file system free its extents, tens of milliseconds on the shard thread as a blocking
//! call. A segment leaves the index only once its directory fsync completed: until then the
//! tombstones of its ledgers must stay in the checkpoints, since a crash can bring it back.
//! A failed removal leaves it dead in the index, to be tried again at a later pace.

use super::segments::{room_left, RecycleSource};
use super::{Journal, TOKEN_DEAD};
use crate::disk::{Disk, FileOp};
use crate::ids::{FileId, SegmentId};
use std::collections::VecDeque;

/// The dead segments whose files are leaving, and the replaced files kept for reuse.
#[derive(Debug, Default)]
pub(super) struct DeadFiles {
    /// Being unlinked (a dead segment: its index, it, the directory's fsync).
    removing: Option<RecycleSource>,
    /// Being renamed into the next segment by segment preparation.
    recycling: Option<RecycleSource>,
    /// Segments whose old file compaction's swap kept (under the copy's temporary name),
    /// oldest first.
    replaced: VecDeque<SegmentId>,
}

impl DeadFiles {
    /// Nothing leaving yet, and the old files kept before a restart (`Recovered::replaced`),
    /// oldest first, for reuse or removal as if this run had kept them.
    pub(super) fn new(replaced: Vec<SegmentId>) -> DeadFiles {
        DeadFiles {
            removing: None,
            recycling: None,
            replaced: replaced.into(),
        }
    }

    /// Old files kept by compaction's swaps for reuse, not yet reused or removed.
    pub(super) fn replaced_count(&self) -> usize {
        self.replaced.len()
    }

    /// True while a file is leaving or kept: space is coming back (`journal/pressure.rs`).
    pub(super) fn is_busy(&self) -> bool {
        self.removing.is_some() || self.recycling.is_some() || !self.replaced.is_empty()
    }

    /// True while `segment`'s old file is kept (or leaving): it is not compacted again.
    pub(super) fn is_replaced(&self, segment: SegmentId) -> bool {
        self.replaced.contains(&segment)
    }
}

impl<D: Disk> Journal<D> {
    /// How many files may be kept for reuse now: none once none was reused for a while, and
    /// the budget (`recycle_budget`) otherwise.
    fn recycle_keep_max(&mut self) -> usize {
        if self.seal.reuse_idle() {
            0
        } else {
            self.recycle_budget()
        }
    }

    /// None while the disk has no room for a new segment (a full disk gets its space back,
    /// and compaction room for its copies: a kept file would leave the next copy without
    /// it); under disk pressure what the free space allows (`recycle_budget_under_pressure`);
    /// `Config::segment_recycle_max` otherwise.
    fn recycle_budget(&mut self) -> usize {
        if !room_left(&mut self.disk, &self.config) {
            return 0;
        }
        let per_mille = self.pressure.per_mille();
        if per_mille == 0 {
            return self.config.segment_recycle_max;
        }
        let Ok(free) = self.disk.space_free() else {
            return self.config.segment_recycle_max.min(1);
        };
        let floor = self
            .config
            .disk_reserve
            .saturating_add(self.config.segment_size);
        recycle_budget_under_pressure(
            self.config.segment_recycle_max,
            per_mille,
            free.saturating_sub(floor),
            self.config.segment_size,
        )
    }

    /// True when a compaction swap may keep the old file of its segment: the kept files
    /// would stay within the budget.
    pub(super) fn replaced_keep_room(&mut self) -> bool {
        // Not the idle rule: that one gives kept files back when the write head stopped
        // taking them, while a journal segment just sorted means the head is writing.
        let budget = self.recycle_budget();
        let (keep, _) = self.segments_dead();
        keep.len() + self.dead.replaced.len() < budget
    }

    /// A compaction swap kept `segment`'s old file.
    pub(super) fn replaced_kept(&mut self, segment: SegmentId) {
        assert!(!self.dead.is_replaced(segment));
        self.dead.replaced.push_back(segment);
        // A fresh file to reuse: the idle clock, which gives kept files back once the write
        // head stopped taking them, starts over.
        self.seal.reused();
    }

    /// Dead segments, split into those kept for reuse (the newest full-size ones, newest
    /// first) and those to remove (oldest first). Replaced files kept take their share of
    /// the budget first.
    fn segments_dead(&mut self) -> (Vec<SegmentId>, Vec<SegmentId>) {
        let resume = self.seal.resume();
        let compacting = self.compaction.segment();
        let leaving = [
            compacting,
            dead_of(self.dead.removing),
            dead_of(self.dead.recycling),
        ];
        let mut dead = self.index.sealed_segments_dead(resume.segment);
        dead.retain(|&segment| !leaving.contains(&Some(segment)));
        let keep_max = self
            .recycle_keep_max()
            .saturating_sub(self.dead.replaced.len());
        let mut keep = Vec::new();
        let mut remove = Vec::new();
        // Keep the newest: the oldest segment left bounds which tombstones may expire.
        for &segment in dead.iter().rev() {
            let reusable = self.index.sealed_segment(segment).is_some_and(|table| {
                // A compacted copy is shorter than a segment, and has its own record chain.
                table.generation == 0 && table.file_size == self.config.segment_size
            });
            if reusable && keep.len() < keep_max {
                keep.push(segment);
            } else {
                remove.push(segment);
            }
        }
        remove.reverse();
        (keep, remove)
    }

    /// Starts removing one dead segment that is not kept for reuse, if the pace allows and
    /// no removal is in flight.
    pub(super) fn segment_dead_remove(&mut self) {
        if self.dead.removing.is_some() || !self.seal.removal_due() {
            return;
        }
        if self.replaced_remove() {
            return;
        }
        let (_, remove) = self.segments_dead();
        let Some(&segment) = remove.first() else {
            // Nothing to remove; look again once the segment being compacted is replaced.
            let compacting = self.compaction.segment();
            let dead = self.index.sealed_segments_dead(self.seal.resume().segment);
            let recheck = compacting.is_some_and(|segment| dead.contains(&segment));
            self.seal.removal_checked(recheck);
            return;
        };
        // One directory sync, after the segment's unlink, covers the index's before it.
        let ops = [
            FileOp::Remove {
                id: FileId::Index(segment),
            },
            FileOp::Remove {
                id: FileId::Segment(segment),
            },
            FileOp::SyncDirectory,
        ];
        if self.disk.submit_file_ops(TOKEN_DEAD, &ops).is_err() {
            // Tried again at the next pace.
            return;
        }
        self.dead.removing = Some(RecycleSource::Dead(segment));
        self.seal.removal_counted();
    }

    /// Starts removing the oldest replaced file beyond the budget, if there is one. No
    /// directory sync: should a crash bring it back, the open keeps it again, and it is
    /// removed again here.
    fn replaced_remove(&mut self) -> bool {
        let kept_max = self.recycle_keep_max();
        if self.dead.replaced.len() <= kept_max {
            return false;
        }
        let recycling = self.dead.recycling;
        let Some(&segment) = self
            .dead
            .replaced
            .iter()
            .find(|&&segment| recycling != Some(RecycleSource::Replaced(segment)))
        else {
            return false;
        };
        let ops = [FileOp::Remove {
            id: FileId::SegmentCompacted(segment),
        }];
        if self.disk.submit_file_ops(TOKEN_DEAD, &ops).is_ok() {
            self.dead.removing = Some(RecycleSource::Replaced(segment));
            self.seal.removal_counted();
        }
        true
    }

    /// The removal in flight completed with `result`.
    pub(super) fn dead_on_complete(&mut self, result: i32) {
        let removing = self.dead.removing.take().expect("a removal runs");
        let segment = match removing {
            RecycleSource::Dead(segment) => segment,
            RecycleSource::Replaced(segment) => {
                if result < 0 {
                    self.stats.segment_removal_failures += 1;
                } else {
                    self.dead.replaced.retain(|&kept| kept != segment);
                    self.stats.segments_removed += 1;
                    self.stats.segment_bytes_removed += self.config.segment_size;
                }
                return;
            }
        };
        if result < 0 {
            // Still dead in the index: removed or reused later.
            self.stats.segment_removal_failures += 1;
            return;
        }
        let file_size = self
            .index
            .sealed_segment(segment)
            .map_or(self.config.segment_size, |table| table.file_size);
        self.stats.segments_removed += 1;
        self.stats.segment_bytes_removed += file_size;
        self.segment_dead_forget(segment);
    }

    /// Takes a dead segment kept for reuse, for segment preparation to rename into the next
    /// segment after unlinking its index (`Segments::start`; `segment_recycle_done` follows).
    /// None if there is none, one is being reused already, a deletion is not durable yet, or
    /// a read of it is still in flight (the file is about to hold other records).
    /// A replaced file kept by compaction comes first: nothing reads it, and nothing waits
    /// for a deletion to become durable before it may go.
    pub(super) fn segment_recycle_take(&mut self) -> Option<RecycleSource> {
        if self.dead.recycling.is_some() {
            return None;
        }
        let removing = self.dead.removing;
        let replaced = self
            .dead
            .replaced
            .iter()
            .find(|&&segment| removing != Some(RecycleSource::Replaced(segment)));
        if let Some(&segment) = replaced {
            let source = RecycleSource::Replaced(segment);
            self.dead.recycling = Some(source);
            self.seal.reused();
            return Some(source);
        }
        if self.seal.deletions_pending() {
            return None;
        }
        let (keep, _) = self.segments_dead();
        let &segment = keep.iter().rev().find(|&&segment| {
            !self.reads.in_flight_on(segment) && !self.scrub.in_flight_on(segment)
        })?;
        let source = RecycleSource::Dead(segment);
        self.dead.recycling = Some(source);
        self.seal.reused();
        Some(source)
    }

    /// The reuse of the file `segment_recycle_take` gave ended: it is the new segment's,
    /// durably (`done`), or it failed, and a dead segment is still dead in the index
    /// (whatever of its files is left is removed later; a missing file counts as removed). A
    /// replaced file is given up either way: if it still rests under its temporary name, the
    /// next copy of its segment truncates it, or the next open keeps it again (or deletes it
    /// if it is no longer a whole journal segment).
    pub(super) fn segment_recycle_done(&mut self, done: bool) {
        match self.dead.recycling.take().expect("a reuse runs") {
            RecycleSource::Dead(segment) => {
                if done {
                    self.segment_dead_forget(segment);
                }
            }
            RecycleSource::Replaced(segment) => {
                self.dead.replaced.retain(|&kept| kept != segment);
            }
        }
    }

    /// A dead segment's files are gone (or leaving): drop it from the index, and the
    /// tombstones no segment left can hold a record of.
    fn segment_dead_forget(&mut self, segment: SegmentId) {
        self.index.sealed_segment_remove(segment);
        self.reads.segment_replaced(segment);
        let resume = self.seal.resume();
        let oldest = self
            .index
            .sealed_segments()
            .next()
            .map_or(resume.segment, |first| first.min(resume.segment));
        self.index.tombstones_expire(oldest);
    }
}

/// The dead segment of a file leaving, if it is one.
fn dead_of(source: Option<RecycleSource>) -> Option<SegmentId> {
    match source {
        Some(RecycleSource::Dead(segment)) => Some(segment),
        Some(RecycleSource::Replaced(_)) | None => None,
    }
}

/// The recycle pool's size under pressure `per_mille` (1 ..= 1000) with `free_above_floor`
/// bytes free beyond the floor: the configured `max` shrunk in proportion to the pressure
/// band still free, and to no more segments than that free space holds, but at least one
/// (the next segment's file: the write head needs that space either way, and a reused file
/// needs no zeroing ahead). Gradual because the level is the file system's, whoever fills it:
/// a pool that dropped to one at any pressure turned a churning bookie on a shared, 18% free
/// file system into one that unlinked three segments in four (`make churn`, docs/gc.md).
/// Bounded by the free space because kept files are space a small disk's compaction copies
/// need: the pool can take at most half of what is left above the floor (as it grows, the
/// free space, and so its bound, falls).
pub(super) fn recycle_budget_under_pressure(
    max: usize,
    per_mille: u32,
    free_above_floor: u64,
    segment_size: u64,
) -> usize {
    assert!(segment_size > 0);
    let per_mille = per_mille.min(1000);
    let by_level = max.saturating_mul(1000 - per_mille as usize) / 1000;
    let by_space = usize::try_from(free_above_floor / segment_size).unwrap_or(usize::MAX);
    by_level.min(by_space).max(1).min(max)
}

#[cfg(test)]
mod tests {
    use super::recycle_budget_under_pressure;

    const MIB: u64 = 1024 * 1024;

    #[test]
    fn the_pool_shrinks_with_the_pressure_band_left() {
        // A large shared file system just past the start: nearly the whole pool.
        assert_eq!(
            recycle_budget_under_pressure(16, 100, 40_000 * MIB, 256 * MIB),
            14
        );
        assert_eq!(
            recycle_budget_under_pressure(16, 500, 40_000 * MIB, 256 * MIB),
            8
        );
        // Near the floor: one file, the next segment's.
        assert_eq!(
            recycle_budget_under_pressure(16, 990, 40_000 * MIB, 256 * MIB),
            1
        );
        assert_eq!(recycle_budget_under_pressure(16, 1000, 0, 256 * MIB), 1);
    }

    #[test]
    fn a_small_disk_keeps_no_more_than_its_free_space_holds() {
        // 3 GiB disk, 64 MiB segments, level low but only 200 MiB above the floor.
        assert_eq!(
            recycle_budget_under_pressure(64, 50, 200 * MIB, 64 * MIB),
            3
        );
        assert_eq!(recycle_budget_under_pressure(64, 50, 10 * MIB, 64 * MIB), 1);
    }

    #[test]
    fn a_pool_configured_off_stays_off() {
        assert_eq!(
            recycle_budget_under_pressure(0, 300, 40_000 * MIB, 64 * MIB),
            0
        );
    }
}
