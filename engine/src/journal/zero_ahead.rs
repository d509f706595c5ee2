//! Zero-ahead: zeroes the active segment ahead of the write head while the journal is not
//! busy, so commits land on written extents.
//!
//! With fallocated (unwritten) segments, the first write to each block converts its extent,
//! and that conversion is metadata the commit's fdatasync must also journal: at one commit in
//! flight that is ~1.4x the disk's write+flush floor instead of ~1.0x. So, while the journal
//! is not busy, zero the active segment ahead of the write head, one chunk at a time, keeping
//! at most `ZERO_AHEAD_WINDOW_MAX` bytes ready. Under load (every commit slot busy) it pauses
//! and commits convert extents themselves, so zeroing never competes with a saturated journal
//! for the disk, never delays start (unlike zero-filling whole segments), and is only an
//! optimisation: nothing depends on a block having been zeroed.
//!
//! Zeros never land on data: a chunk starts at least one chunk past the end of what is staged,
//! and a commit that would overlap the chunk in flight waits for it (`ZeroAhead::blocks`).

use super::commit::WriteHead;
use super::{Stats, TOKEN_ZERO_AHEAD};
use crate::constants::{
    SECTOR_SIZE, ZERO_AHEAD_CHUNKS_PER_SEGMENT_MIN, ZERO_AHEAD_WINDOW_MAX, ZERO_CHUNK_SIZE,
};
use crate::disk::Disk;
use crate::ids::{FileId, SegmentId};
use crate::stdx::{align_up, to_u64, to_usize};

/// The zero-ahead state of one journal.
#[derive(Debug)]
pub(super) struct ZeroAhead {
    /// Everything of `frontier_segment` in [.., frontier) was zeroed, is being zeroed, or lies
    /// behind the write head. Meaningful only while `frontier_segment` is the active segment.
    frontier_segment: SegmentId,
    frontier: u64,
    /// The zero-ahead write in flight: segment and byte range.
    in_flight: Option<(SegmentId, u64, u64)>,
    /// Off when configured off (or with zero-filled segments) and after a failed zero write.
    enabled: bool,
}

impl ZeroAhead {
    pub(super) fn new(enabled: bool, segment_active: SegmentId) -> ZeroAhead {
        ZeroAhead {
            frontier_segment: segment_active,
            frontier: 0,
            in_flight: None,
            enabled,
        }
    }

    /// `segment`'s blocks are all written already (a recycled segment's): nothing to zero.
    pub(super) fn segment_written(&mut self, segment: SegmentId, segment_size: u64) {
        self.frontier_segment = segment;
        self.frontier = segment_size;
    }

    /// True when no zero-ahead write is in flight.
    pub(super) fn is_idle(&self) -> bool {
        self.in_flight.is_none()
    }

    /// True when a commit of `segment` covering `[start, end)` would overlap the zero-ahead
    /// write in flight.
    pub(super) fn blocks(&self, segment: SegmentId, start: u64, end: u64) -> bool {
        assert!(start < end);
        let Some((zero_segment, zero_start, zero_end)) = self.in_flight else {
            return false;
        };
        zero_segment == segment && start < zero_end && zero_start < end
    }

    /// Submits the next zero chunk ahead of `head`, if none is in flight and the window is
    /// not full. The caller only calls this while a commit slot is free and the journal is
    /// not poisoned.
    pub(super) fn drive<D: Disk>(&mut self, disk: &mut D, head: WriteHead, segment_size: u64) {
        if !self.enabled || self.in_flight.is_some() {
            return;
        }
        assert!(head.staged_end >= head.position_next);
        if self.frontier_segment != head.segment {
            self.frontier_segment = head.segment;
            self.frontier = 0;
        }
        let size = segment_size;
        let chunk = to_u64(ZERO_CHUNK_SIZE).min(size / ZERO_AHEAD_CHUNKS_PER_SEGMENT_MIN);
        let chunk = chunk / to_u64(SECTOR_SIZE) * to_u64(SECTOR_SIZE);
        let start = self.frontier.max(head.staged_end + chunk);
        let start = to_u64(align_up(to_usize(start), SECTOR_SIZE));
        if chunk == 0 || start >= size || start >= head.position_next + ZERO_AHEAD_WINDOW_MAX {
            return;
        }
        let length = (size - start).min(chunk);
        let segment = head.segment;
        let file = FileId::Segment(segment);
        let result = disk.submit_zero(TOKEN_ZERO_AHEAD, file, start, to_usize(length));
        if result.is_ok() {
            self.in_flight = Some((segment, start, start + length));
            self.frontier = start + length;
        }
    }

    /// The zero-ahead write in flight completed with `result`.
    pub(super) fn on_complete(&mut self, stats: &mut Stats, result: i32) {
        let (_, start, end) = self.in_flight.take().expect("a zero-ahead write in flight");
        if u64::try_from(result).ok() == Some(end - start) {
            stats.zero_ahead_bytes += end - start;
        } else {
            // Nothing relies on the zeros: stop the optimisation, keep the journal running.
            self.enabled = false;
            stats.zero_ahead_failures += 1;
        }
    }
}
