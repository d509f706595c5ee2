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

use super::segments::room_left;
use super::Journal;
use crate::disk::Disk;
use crate::ids::{FileId, SegmentId};

impl<D: Disk> Journal<D> {
    /// Dead segments, split into those kept for reuse (the newest full-size ones, newest
    /// first) and those to remove (oldest first).
    fn segments_dead(&mut self) -> (Vec<SegmentId>, Vec<SegmentId>) {
        let resume = self.seal.resume();
        let compacting = self.compaction.segment();
        let mut dead = self.index.sealed_segments_dead(resume.segment);
        dead.retain(|&segment| Some(segment) != compacting);
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

    /// Removes one dead segment that is not kept for reuse, if the pace allows.
    pub(super) fn segment_dead_remove(&mut self) {
        if !self.seal.removal_due() {
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
        let disk = &mut self.disk;
        // One directory sync, the segment's, covers the index's unlink before it.
        let removed = self.stats.metadata_timed(|| {
            disk.file_remove_unsynced(FileId::Index(segment))
                .and_then(|()| disk.file_remove(FileId::Segment(segment)))
        });
        if removed.is_err() {
            self.seal_failed();
            return;
        }
        self.seal.removal_counted();
        self.stats.segments_removed += 1;
        self.stats.segment_bytes_removed += self.config.segment_size;
        self.segment_dead_forget(segment);
    }

    /// Takes a dead segment kept for reuse, with its index file removed, for segment
    /// preparation to rename into the next segment (`Segments::start`). None if there is
    /// none, a deletion is not durable yet, or a read of it is still in flight (the file is
    /// about to hold other records).
    pub(super) fn segment_recycle_take(&mut self) -> Option<SegmentId> {
        if self.seal.deletions_pending() {
            return None;
        }
        let (keep, _) = self.segments_dead();
        let &segment = keep
            .iter()
            .rev()
            .find(|&&segment| !self.reads.in_flight_on(segment))?;
        let disk = &mut self.disk;
        // Durable with the directory sync of the segment's rename that follows at once.
        let removed = self
            .stats
            .metadata_timed(|| disk.file_remove_unsynced(FileId::Index(segment)));
        if removed.is_err() {
            // Allocate a new segment instead; the index is removed with its segment later.
            return None;
        }
        self.segment_dead_forget(segment);
        self.seal.reused();
        Some(segment)
    }

    /// A dead segment's files are gone (or leaving): drop it from the index, and the
    /// tombstones no segment left can hold a record of.
    fn segment_dead_forget(&mut self, segment: SegmentId) {
        self.index.sealed_segment_remove(segment);
        let resume = self.seal.resume();
        let oldest = self
            .index
            .sealed_segments()
            .next()
            .map_or(resume.segment, |first| first.min(resume.segment));
        self.index.tombstones_expire(oldest);
    }
}
