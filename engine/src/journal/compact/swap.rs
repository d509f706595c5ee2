//! Compaction's swap: the durable copy renamed (or exchanged) over S once no read of S is in
//! flight and the deletions it leaves out are durable, then memory switched to the copy.

use super::{Phase, Step};
use crate::disk::{Disk, FileOp, SubmitError};
use crate::ids::FileId;
use crate::index::SealedSegment;
use crate::journal::{Journal, TOKEN_COMPACT};

impl<D: Disk> Journal<D> {
    /// Renames the copy over S once no read of S is in flight (its index follows,
    /// `Phase::SwapIndex`).
    pub(super) fn compact_swap(&mut self) {
        let job = self.compaction.job.as_ref().expect("a job runs");
        let segment = job.segment;
        if self.reads.in_flight_on(segment) || self.scrub.in_flight_on(segment) {
            return;
        }
        // The copy leaves out every ledger deleted so far. Until those deletions are in a
        // durable checkpoint a crash brings them back, and they must come back whole: the
        // copy may replace the segment only then (the simulation found a ledger back
        // without the entries a copy had dropped).
        if self.seal.deletions_pending() {
            return;
        }
        // A journal segment's old file (full size, every block written) is kept for the next
        // segment instead of freed, while the recycling budget has room: no unlink frees a
        // whole segment in ext4's journal beside the commits (with online discard, 256 MiB
        // freed held them for about 30 ms here), and the next segment needs no zero-ahead.
        // A sort keeps it; compaction for space is there to give the space back, except the
        // one file the next segment takes under disk pressure short of the floor (`dead.rs`):
        // that space is needed for the next segment either way, and a new file would be
        // zeroed ahead again.
        let reusable = job.table.generation == 0 && job.table.file_size == self.config.segment_size;
        let sorting = job.sorting;
        let keep =
            (sorting || self.pressure.per_mille() > 0) && reusable && self.replaced_keep_room();
        let replace = FileOp::Replace {
            from: FileId::SegmentCompacted(segment),
            to: FileId::Segment(segment),
            keep,
        };
        match self.disk.submit_file_ops(TOKEN_COMPACT, &[replace]) {
            Ok(()) => {}
            Err(SubmitError::QueueFull) => return,
            Err(SubmitError::Io(_)) => {
                self.compact_failed(Step::Failed);
                return;
            }
        }
        let job = self.compaction.job.as_mut().expect("a job runs");
        let phase = std::mem::replace(&mut job.phase, Phase::CopyCreate);
        let Phase::Swap(writer) = phase else {
            unreachable!("swapping");
        };
        job.phase = Phase::SwapSegment(writer);
        job.keep = keep;
        self.compaction.in_flight = true;
        self.compaction.in_flight_length = 0;
    }

    /// The copy and its index replaced S's (`Phase::SwapIndex` retries a failed index
    /// rename until it is done): memory switches to them.
    pub(super) fn compact_swapped(&mut self) {
        let job = self.compaction.job.take().expect("a job runs");
        let segment = job.segment;
        let Phase::SwapIndexSync(writer) = job.phase else {
            unreachable!("swapped");
        };
        let (slot_table_offset, slot_count) = writer.slot_table();
        let table = SealedSegment {
            slot_table_offset,
            slot_count,
            bytes_live: 0,
            generation: job.generation,
            file_size: job.file_size,
        };
        let freed = job.table.file_size.saturating_sub(job.file_size);
        if job.keep {
            self.replaced_kept(segment);
        }
        self.index.reseal(segment, table, &job.runs_new);
        self.index_pages.forget(segment);
        self.reads.segment_replaced(segment);
        self.seal.removal_recheck();
        self.compaction.plan_pending = true;
        self.stats.compactions_done += 1;
        self.stats.compaction_bytes_freed += freed;
        self.compaction.in_flight_length = 0;
    }
}
