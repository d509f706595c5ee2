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
//! Both go through the ring (`Disk::submit_file_ops`): an unlink of a whole segment makes
//! the file system free its extents, tens of milliseconds on the shard thread as a blocking
//! call. A segment leaves the index only once its directory fsync completed: until then the
//! tombstones of its ledgers must stay in the checkpoints, since a crash can bring it back.
//! A failed removal leaves it dead in the index, to be tried again at a later pace.

use super::segments::room_left;
use super::{Journal, TOKEN_DEAD};
use crate::disk::{Disk, FileOp};
use crate::ids::{FileId, SegmentId};

/// The dead segments whose files are leaving.
#[derive(Debug, Default)]
pub(super) struct DeadFiles {
    /// Being unlinked (its index, it, the directory's fsync).
    removing: Option<SegmentId>,
    /// Being renamed into the next segment by segment preparation.
    recycling: Option<SegmentId>,
}

impl<D: Disk> Journal<D> {
    /// Dead segments, split into those kept for reuse (the newest full-size ones, newest
    /// first) and those to remove (oldest first).
    fn segments_dead(&mut self) -> (Vec<SegmentId>, Vec<SegmentId>) {
        let resume = self.seal.resume();
        let compacting = self.compaction.segment();
        let leaving = [compacting, self.dead.removing, self.dead.recycling];
        let mut dead = self.index.sealed_segments_dead(resume.segment);
        dead.retain(|&segment| !leaving.contains(&Some(segment)));
        // Nothing is kept once none was reused for a while, nor while the disk has no room
        // for a new segment: a full disk gets its space back, and compaction room for copies.
        let keep_max = if self.seal.reuse_idle() || !room_left(&mut self.disk, &self.config) {
            0
        } else {
            self.config.segment_recycle_max
        };
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
        self.dead.removing = Some(segment);
        self.seal.removal_counted();
    }

    /// The removal in flight completed with `result`.
    pub(super) fn dead_on_complete(&mut self, result: i32) {
        let segment = self.dead.removing.take().expect("a removal runs");
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
    pub(super) fn segment_recycle_take(&mut self) -> Option<SegmentId> {
        if self.seal.deletions_pending() || self.dead.recycling.is_some() {
            return None;
        }
        let (keep, _) = self.segments_dead();
        let &segment = keep
            .iter()
            .rev()
            .find(|&&segment| !self.reads.in_flight_on(segment))?;
        self.dead.recycling = Some(segment);
        self.seal.reused();
        Some(segment)
    }

    /// The reuse of the segment `segment_recycle_take` gave ended: its file is the new
    /// segment's, durably (`done`), or it failed, and the segment is still dead in the index
    /// (whatever of its files is left is removed later; a missing file counts as removed).
    pub(super) fn segment_recycle_done(&mut self, done: bool) {
        let segment = self.dead.recycling.take().expect("a reuse runs");
        if done {
            self.segment_dead_forget(segment);
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
