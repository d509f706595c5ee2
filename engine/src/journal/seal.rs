//! Sealing: once the write head has left a segment and its last commit is durable, write the
//! segment's index file, make it durable, drop the segment's entries from memory, and write a
//! new checkpoint that says restart need not scan it. Deleted ledgers also need a checkpoint
//! (their tombstones); once it is durable, sealed segments left with nothing live are
//! removed or reused (`journal/dead.rs`). The scrubber's position needs one too, when the
//! scrubber asks (`scrub_checkpoint_request`): it must survive a restart, and the checkpoint
//! is already the file rewritten atomically.
//!
//! A sealing job goes IndexCreate -> IndexWrite -> IndexSync -> IndexPublish (then
//! `Index::seal`) -> CheckpointStart -> CheckpointCreate -> CheckpointWrite -> CheckpointSync
//! -> CheckpointPublish (rename and directory fsync) -> done; a checkpoint-only job (after
//! deletions, or for the scrub position) starts at CheckpointStart. Creating and renaming the
//! files and the directory's fsync go through the ring like the writes
//! (`Disk::submit_file_ops`): as blocking calls they stalled the shard for as long as the file
//! system's journal took, up to tens of milliseconds under churn (hundreds for the fsync). The
//! fsync makes both renames durable, and the checkpoint counts (resume point, durable
//! deletions, scrub position) only once it has. One operation is in flight at a time (a write
//! of at most `SEAL_CHUNK_SIZE`), and only while a commit slot is free (like zero-ahead), so
//! sealing never queues ahead of a commit that could go. Jobs run in segment order, so the
//! checkpoint only moves forward.
//!
//! A failure (disk full, I/O error) abandons the job's current file and retries the job after
//! `SEAL_RETRY_INTERVAL_SUBMITS` submits or on `retry_now`: the segment is already durable,
//! so nothing is lost; its entries keep their memory and the previous checkpoint stays in
//! force meanwhile.

use super::{Journal, TOKEN_SEAL};
use crate::checkpoint::{Resume, ScrubPosition};
use crate::constants::{
    SEAL_CHUNK_SIZE, SEGMENT_RECYCLE_IDLE_PACES, SEGMENT_RECYCLE_WRITE_IDLE_PACES,
};
use crate::disk::{BufferId, Disk, DiskOp, FileOp, WriteSync};
use crate::ids::{FileId, SegmentId, Sequence};
use crate::index::SealedSegment;
use crate::index_build::{self, IndexWriter, SegmentSpan, SlotSource};
use crate::stdx::to_u64;
use std::collections::VecDeque;

/// Submits between retries of a failed job.
const SEAL_RETRY_INTERVAL_SUBMITS: u32 = 1024;

#[derive(Debug)]
enum Phase {
    /// Creating the index file's temporary.
    IndexCreate(IndexWriter),
    /// Writing the index file.
    IndexWrite(IndexWriter),
    /// Its fdatasync.
    IndexSync(IndexWriter),
    /// Renaming it to its published name. No directory fsync of its own: the checkpoint's,
    /// which must complete before the checkpoint moves past the segment, covers this rename
    /// too. A crash before it leaves the segment without an index, which open rebuilds.
    IndexPublish(IndexWriter),
    /// The checkpoint is to be (re)built and written; for a sealing job the index is durable.
    CheckpointStart,
    /// Built; its temporary being created.
    CheckpointCreate { bytes: Vec<u8>, holds: Holds },
    /// Writing the checkpoint (its whole content), `written` bytes done.
    CheckpointWrite {
        bytes: Vec<u8>,
        written: usize,
        holds: Holds,
    },
    /// Its fdatasync.
    CheckpointSync { holds: Holds },
    /// Renaming it into place, then the directory's fsync, which makes it (and the index's
    /// rename before it) durable.
    CheckpointPublish { holds: Holds },
}

/// What the checkpoint being written holds that counts only once it is durable.
#[derive(Clone, Copy, Debug)]
struct Holds {
    /// `Seal::deletions` when it was built.
    deletions: u64,
    /// `Seal::scrub_sets` when it was built, and the position it carries.
    scrub_sets: u64,
    scrub: Option<ScrubPosition>,
}

/// The sealing state machine. See the module docs.
#[derive(Debug)]
pub(super) struct Seal {
    /// Segments waiting, oldest first; the front one is being sealed when `phase` is set and
    /// `sealing` is true.
    queue: VecDeque<SegmentSpan>,
    phase: Option<Phase>,
    /// True when the running job seals the queue's front (false: a checkpoint-only job).
    sealing: bool,
    in_flight: bool,
    /// Bytes of the write in flight: a short write fails the file.
    in_flight_length: usize,
    resume: Resume,
    submits_since_failure: u32,
    failed: bool,
    /// Ledgers deleted since open, and how many of those a durable checkpoint holds.
    deletions: u64,
    deletions_durable: u64,
    /// The scrubber's position: the last one set, or the durable checkpoint's since open.
    scrub: Option<ScrubPosition>,
    /// The position the last durable checkpoint carries.
    scrub_durable: Option<ScrubPosition>,
    /// `scrub_position_set` calls since open; their count when a checkpoint was last asked
    /// for, and when the last durable checkpoint was built (counts, not positions: a newer
    /// position made durable answers a request for an older one).
    scrub_sets: u64,
    scrub_sets_requested: u64,
    scrub_sets_durable: u64,
    /// A checkpoint file was created and not yet renamed into place (`checkpoint_published`).
    checkpoint_unpublished: bool,
    /// Set when sealed segments may have become dead (deletions made durable, or open);
    /// cleared once none is left.
    removal_check: bool,
    /// Removals left before the next `removal_pace` call; `None`: unpaced (tests, tools).
    removals_allowed: Option<u32>,
    /// `removal_pace` calls since a dead segment was last reused or deletions last became
    /// durable (`journal/dead.rs`).
    paces_since_reuse: u32,
    /// `removal_pace` calls since the commits' byte count last moved, and that count then.
    paces_since_write: u32,
    bytes_written_at_pace: u64,
    /// `SEAL_CHUNK_SIZE` bytes for the chunk in flight.
    buffer: BufferId,
}

impl Seal {
    /// `scrub` is the scrub position in the checkpoint recovery read.
    pub(super) fn new(
        buffer: BufferId,
        resume: Resume,
        queue: Vec<SegmentSpan>,
        scrub: Option<ScrubPosition>,
    ) -> Seal {
        Seal {
            queue: queue.into_iter().collect(),
            phase: None,
            sealing: false,
            in_flight: false,
            in_flight_length: 0,
            resume,
            submits_since_failure: 0,
            failed: false,
            deletions: 0,
            deletions_durable: 0,
            scrub,
            scrub_durable: scrub,
            scrub_sets: 0,
            scrub_sets_requested: 0,
            scrub_sets_durable: 0,
            checkpoint_unpublished: false,
            removal_check: true,
            removals_allowed: None,
            paces_since_reuse: 0,
            paces_since_write: 0,
            bytes_written_at_pace: 0,
            buffer,
        }
    }

    /// Queues a segment the write head has left.
    pub(super) fn enqueue(&mut self, span: SegmentSpan) {
        assert!(self
            .queue
            .back()
            .is_none_or(|last| last.segment < span.segment));
        self.queue.push_back(span);
    }

    /// A ledger was deleted: the next checkpoint must carry its tombstone.
    pub(super) fn deleted(&mut self) {
        self.deletions += 1;
    }

    /// Allows `count` removals until the next call. Removing a large file makes the file
    /// system free its extents in its journal, which the commits' next syncs wait behind: a
    /// burst of removals after a collection round showed as commit stalls, so the server
    /// paces them on its clock. `bytes_written` is the commits' byte count so far.
    pub(super) fn removal_pace(&mut self, count: u32, bytes_written: u64) {
        self.removals_allowed = Some(count);
        self.paces_since_reuse = self.paces_since_reuse.saturating_add(1);
        if bytes_written == self.bytes_written_at_pace {
            // Not before the first commit since open: a restarted bookie's writers are still
            // coming back, and the files kept before the restart are for their segments (the
            // 10 s rule still gives them back if no writer comes).
            if bytes_written > 0 {
                self.paces_since_write = self.paces_since_write.saturating_add(1);
            }
        } else {
            self.paces_since_write = 0;
            self.bytes_written_at_pace = bytes_written;
        }
        if self.paces_since_reuse == SEGMENT_RECYCLE_IDLE_PACES + 1
            || self.paces_since_write == SEGMENT_RECYCLE_WRITE_IDLE_PACES + 1
        {
            // The segments kept for reuse are now to be removed: look for them.
            self.removal_check = true;
        }
    }

    /// A dead segment was reused as a new one.
    pub(super) fn reused(&mut self) {
        self.paces_since_reuse = 0;
    }

    /// True once no dead segment was reused, and no deletion became durable, for
    /// `SEGMENT_RECYCLE_IDLE_PACES` paces, or nothing was committed for
    /// `SEGMENT_RECYCLE_WRITE_IDLE_PACES`: the segments kept for reuse are removed like the
    /// others (no write head will take them soon).
    pub(super) fn reuse_idle(&self) -> bool {
        self.paces_since_reuse > SEGMENT_RECYCLE_IDLE_PACES
            || self.paces_since_write > SEGMENT_RECYCLE_WRITE_IDLE_PACES
    }

    /// Sealed segments may have become dead (a compacted copy replaced one).
    pub(super) fn removal_recheck(&mut self) {
        self.removal_check = true;
    }

    /// True when a dead segment may be removed now (`journal/dead.rs`): every deletion is in
    /// a durable checkpoint, segments may have become dead, and the pace allows one more.
    pub(super) fn removal_due(&self) -> bool {
        !self.deletions_pending() && self.removal_check && self.removals_allowed != Some(0)
    }

    /// Nothing is left to remove; `recheck` keeps looking (a dead segment is being compacted).
    pub(super) fn removal_checked(&mut self, recheck: bool) {
        self.removal_check = recheck;
    }

    /// One removal of the pace's allowance was used.
    pub(super) fn removal_counted(&mut self) {
        if let Some(allowed) = self.removals_allowed.as_mut() {
            *allowed -= 1;
        }
    }

    /// True while a deletion is not yet in a durable checkpoint.
    pub(super) fn deletions_pending(&self) -> bool {
        self.deletions_durable < self.deletions
    }

    /// True while the scrub position asked for is not yet in a durable checkpoint.
    fn scrub_pending(&self) -> bool {
        self.scrub_sets_durable < self.scrub_sets_requested
    }

    /// True while the last sealing step failed (it is retried later).
    pub(super) fn is_failing(&self) -> bool {
        self.failed
    }

    /// Segments queued or being sealed.
    pub(super) fn pending(&self) -> usize {
        self.queue.len()
    }

    /// Where the checkpoint on disk says recovery resumes.
    pub(super) fn resume(&self) -> Resume {
        self.resume
    }

    /// True while the checkpoint's file id names the published checkpoint: from the creation
    /// of a new one until it is renamed into place (or, after a failure, until one is), the id
    /// names the new file, so the scrubber does not read it meanwhile.
    pub(super) fn checkpoint_published(&self) -> bool {
        !self.checkpoint_unpublished
    }

    /// True when nothing is in flight and nothing is to be done before a retry.
    pub(super) fn is_idle(&self) -> bool {
        !self.in_flight
            && (self.failed
                || (self.queue.is_empty()
                    && !self.deletions_pending()
                    && !self.scrub_pending()
                    && (!self.removal_check || self.removals_allowed == Some(0))))
    }

    /// Makes the next `seal_drive` retry a failed job now (the server's clock calls this, so
    /// an idle shard retries within a tick).
    pub(super) fn retry_now(&mut self) {
        if self.failed {
            self.submits_since_failure = SEAL_RETRY_INTERVAL_SUBMITS;
        }
    }

    /// The segment sealing may start on next, if any.
    fn front(&self) -> Option<SegmentSpan> {
        self.queue.front().copied()
    }

    /// The span of the running sealing job (`None` for a checkpoint-only job).
    fn job_span(&self) -> Option<SegmentSpan> {
        if self.sealing {
            self.front()
        } else {
            None
        }
    }
}

/// The scrubber's side (`scrub.rs`): it keeps its position here so that checkpoints carry it.
impl Seal {
    /// The scrubber's position now (the last one set, or the one recovery read).
    #[cfg(test)]
    pub(super) fn scrub_position(&self) -> Option<ScrubPosition> {
        self.scrub
    }

    /// The scrubber's position in the last durable checkpoint: where it resumes after a crash.
    #[cfg(test)]
    pub(super) fn scrub_position_durable(&self) -> Option<ScrubPosition> {
        self.scrub_durable
    }

    /// The scrubber moved: every checkpoint built from now on carries `position` (one is
    /// written for it only on `scrub_checkpoint_request`).
    pub(super) fn scrub_position_set(&mut self, position: ScrubPosition) {
        self.scrub = Some(position);
        self.scrub_sets += 1;
    }

    /// Asks for a checkpoint carrying the position set now, even with no segment to seal:
    /// the next `seal_drive` writes one unless a job runs (then the one after it). Answered
    /// once a checkpoint built after the last `scrub_position_set` is durable; asking again
    /// before that, with no new position, writes nothing more.
    pub(super) fn scrub_checkpoint_request(&mut self) {
        self.scrub_sets_requested = self.scrub_sets;
    }

    /// Asks for a checkpoint with no new scrub position: something else it carries changed
    /// (the damaged entries). The same rules as `scrub_checkpoint_request`.
    pub(super) fn checkpoint_request(&mut self) {
        self.scrub_sets += 1;
        self.scrub_sets_requested = self.scrub_sets;
    }
}

impl<D: Disk> Journal<D> {
    /// Starts or continues sealing; called from `submit` while a commit slot is free. A
    /// sealing job starts only once no commit of its segment is staging or in flight.
    pub(super) fn seal_drive(&mut self) {
        let seal = &mut self.seal;
        if seal.in_flight {
            return;
        }
        if seal.failed {
            seal.submits_since_failure += 1;
            if seal.submits_since_failure < SEAL_RETRY_INTERVAL_SUBMITS {
                return;
            }
            seal.failed = false;
        }
        if self.seal.phase.is_none() && !self.seal_start() {
            return;
        }
        if matches!(self.seal.phase, Some(Phase::CheckpointStart)) {
            self.seal.phase = Some(self.checkpoint_start());
        }
        let buffer = self.seal.buffer;
        let token = TOKEN_SEAL;
        let index_file = self.seal.job_span().map(|span| FileId::Index(span.segment));
        let submitted = match self.seal.phase.as_mut().expect("a job runs") {
            Phase::IndexCreate(writer) => {
                let id = index_file.expect("an index job seals a segment");
                let create = FileOp::Create {
                    id,
                    size: writer.file_size(),
                };
                self.disk.submit_file_ops(token, &[create]).map(|()| None)
            }
            Phase::IndexPublish(_) => {
                let id = index_file.expect("an index job seals a segment");
                let publish = FileOp::Publish { id };
                self.disk.submit_file_ops(token, &[publish]).map(|()| None)
            }
            Phase::CheckpointCreate { bytes, .. } => {
                self.seal.checkpoint_unpublished = true;
                let create = FileOp::Create {
                    id: FileId::Checkpoint,
                    size: to_u64(bytes.len()),
                };
                self.disk.submit_file_ops(token, &[create]).map(|()| None)
            }
            Phase::IndexWrite(writer) => {
                let position = writer.produced();
                let out = self.disk.buffer_mut(buffer);
                let length =
                    writer.fill(SlotSource::Index(&self.index), &mut out[..SEAL_CHUNK_SIZE]);
                let file = index_file.expect("an index job seals a segment");
                self.disk
                    .submit_write(token, file, position, buffer, length, WriteSync::None)
                    .map(|()| Some(length))
            }
            Phase::IndexSync(_) => {
                let file = index_file.expect("an index job seals a segment");
                self.disk.submit_sync(token, file).map(|()| None)
            }
            Phase::CheckpointWrite { bytes, written, .. } => {
                let length = (bytes.len() - *written).min(SEAL_CHUNK_SIZE);
                let out = self.disk.buffer_mut(buffer);
                out[..length].copy_from_slice(&bytes[*written..*written + length]);
                let (file, position) = (FileId::Checkpoint, to_u64(*written));
                self.disk
                    .submit_write(token, file, position, buffer, length, WriteSync::None)
                    .map(|()| Some(length))
            }
            Phase::CheckpointSync { .. } => self
                .disk
                .submit_sync(token, FileId::Checkpoint)
                .map(|()| None),
            Phase::CheckpointPublish { .. } => {
                let publish = FileOp::Publish {
                    id: FileId::Checkpoint,
                };
                let ops = [publish, FileOp::SyncDirectory];
                self.disk.submit_file_ops(token, &ops).map(|()| None)
            }
            Phase::CheckpointStart => unreachable!("started above"),
        };
        match submitted {
            Ok(length) => {
                self.seal.in_flight = true;
                self.seal.in_flight_length = length.unwrap_or(0);
            }
            // A full queue retries on the next submit; anything else abandons the file.
            Err(crate::disk::SubmitError::QueueFull) => {}
            Err(crate::disk::SubmitError::Io(_)) => self.seal_failed(),
        }
    }

    /// Starts the next job: seal the queue's front once its commits are all durable, or write
    /// a checkpoint for deletions or the scrub position; with neither, remove one dead
    /// segment. Returns whether a job runs.
    fn seal_start(&mut self) -> bool {
        if let Some(span) = self.seal.front() {
            if !self.commits.holds_segment(span.segment) {
                let writer =
                    IndexWriter::new(span, index_build::runs_of(&self.index, span.segment));
                self.seal.sealing = true;
                self.seal.phase = Some(Phase::IndexCreate(writer));
                return true;
            }
        }
        if self.seal.deletions_pending() || self.seal.scrub_pending() {
            self.seal.sealing = false;
            self.seal.phase = Some(Phase::CheckpointStart);
            return true;
        }
        self.segment_dead_remove();
        false
    }

    /// A write or sync of the running job completed with `result`.
    pub(super) fn seal_on_complete(&mut self, op: DiskOp, result: i32) {
        assert!(self.seal.in_flight);
        self.seal.in_flight = false;
        let short = op == DiskOp::Write
            && usize::try_from(result).is_ok_and(|count| count != self.seal.in_flight_length);
        if result < 0 || short {
            self.seal_failed();
            return;
        }
        let span = self.seal.job_span();
        let phase = self.seal.phase.take().expect("a job runs");
        self.seal.phase = match (phase, op) {
            (Phase::IndexCreate(writer), DiskOp::File) => Some(Phase::IndexWrite(writer)),
            (Phase::IndexWrite(writer), DiskOp::Write) if writer.is_done() => {
                Some(Phase::IndexSync(writer))
            }
            (phase @ Phase::IndexWrite(_), DiskOp::Write) => Some(phase),
            (Phase::IndexSync(writer), DiskOp::Sync) => Some(Phase::IndexPublish(writer)),
            (Phase::IndexPublish(writer), DiskOp::File) => {
                let segment = span.expect("an index job seals a segment").segment;
                // The index is durable: the segment's entries are read through it from now on.
                let (slot_table_offset, slot_count) = writer.slot_table();
                let table = SealedSegment {
                    slot_table_offset,
                    slot_count,
                    bytes_live: 0,
                    generation: 0,
                    file_size: self.config.segment_size,
                };
                self.index.seal(segment, table, writer.runs());
                // Ledgers deleted before the seal leave the new segment part dead.
                self.compaction.replan();
                self.stats.segments_sealed += 1;
                self.stats.index_bytes_written += writer.file_size();
                Some(Phase::CheckpointStart)
            }
            (
                Phase::CheckpointWrite {
                    bytes,
                    written,
                    holds,
                },
                DiskOp::Write,
            ) => {
                let written = written + usize::try_from(result).expect("non-negative");
                if written >= bytes.len() {
                    Some(Phase::CheckpointSync { holds })
                } else {
                    Some(Phase::CheckpointWrite {
                        bytes,
                        written,
                        holds,
                    })
                }
            }
            (Phase::CheckpointCreate { bytes, holds }, DiskOp::File) => {
                Some(Phase::CheckpointWrite {
                    bytes,
                    written: 0,
                    holds,
                })
            }
            (Phase::CheckpointSync { holds }, DiskOp::Sync) => {
                Some(Phase::CheckpointPublish { holds })
            }
            (Phase::CheckpointPublish { holds }, DiskOp::File) => {
                self.seal.checkpoint_unpublished = false;
                let resume = self.seal_resume_after(span);
                if resume.segment != self.seal.resume.segment {
                    // A sealed segment becomes a sort candidate only once a durable
                    // checkpoint covers it (a crash would otherwise scan it again, from its
                    // old positions): plan now, not at the next seal, seconds later.
                    self.compaction.replan();
                }
                self.seal.resume = resume;
                if holds.deletions > self.seal.deletions_durable {
                    // New dead segments: those kept for reuse get their full idle time.
                    self.seal.paces_since_reuse = 0;
                }
                self.seal.deletions_durable = self.seal.deletions_durable.max(holds.deletions);
                // One checkpoint runs at a time, built from the state at its start: the one
                // published last carries the newest position.
                assert!(holds.scrub_sets >= self.seal.scrub_sets_durable);
                self.seal.scrub_sets_durable = holds.scrub_sets;
                self.seal.scrub_durable = holds.scrub;
                self.seal.removal_check = true;
                self.stats.checkpoints_written += 1;
                if self.seal.sealing {
                    self.seal.queue.pop_front();
                    self.seal.sealing = false;
                }
                None
            }
            (_, op) => unreachable!("seal got an unexpected {op:?} completion"),
        };
    }

    /// The checkpoint that covers `span` if given (and everything the last one covered).
    fn seal_resume_after(&self, span: Option<SegmentSpan>) -> Resume {
        let resume = self.seal.resume;
        let advance = span.filter(|span| span.segment >= resume.segment);
        let (segment, sequence_next, checksum_previous) = match advance {
            Some(span) => (
                self.segment_after(span.segment),
                Sequence(span.sequence_last.0 + 1),
                span.checksum_last,
            ),
            None => (
                resume.segment,
                resume.sequence_next,
                resume.checksum_previous,
            ),
        };
        Resume {
            segment,
            sequence_next,
            checksum_previous,
            generation: resume.generation + 1,
        }
    }

    /// The segment the journal went on in after `segment`, which the write head has left:
    /// the next one waiting to be sealed, or else the active one. Not `segment.next()`: a
    /// segment whose preparation failed leaves its id unused (ids never repeat), and a
    /// checkpoint resuming there would name a file that never existed, which the next open
    /// refuses. Every segment the write head left holding records is queued until it is
    /// sealed, so none of those is passed over.
    fn segment_after(&self, segment: SegmentId) -> SegmentId {
        let queued = self.seal.queue.iter().map(|span| span.segment);
        queued
            .chain(std::iter::once(self.commits.write_head().segment))
            .find(|&next| next > segment)
            .expect("the active segment is past every sealed one")
    }

    /// Builds the checkpoint for the running job.
    fn checkpoint_start(&mut self) -> Phase {
        let resume = self.seal_resume_after(self.seal.job_span());
        let holds = Holds {
            deletions: self.seal.deletions,
            scrub_sets: self.seal.scrub_sets,
            scrub: self.seal.scrub,
        };
        let bytes = index_build::checkpoint_bytes(
            &self.index,
            resume.segment,
            resume.sequence_next,
            resume.checksum_previous,
            resume.generation,
            holds.scrub,
        );
        Phase::CheckpointCreate { bytes, holds }
    }

    /// Abandons the file being written; the job retries later from its index (if the index
    /// is not durable yet) or from its checkpoint (if it is: the entry arrays are gone).
    pub(super) fn seal_failed(&mut self) {
        let index_durable = matches!(
            self.seal.phase,
            Some(
                Phase::CheckpointStart
                    | Phase::CheckpointCreate { .. }
                    | Phase::CheckpointWrite { .. }
                    | Phase::CheckpointSync { .. }
                    | Phase::CheckpointPublish { .. }
            )
        );
        self.seal.phase = index_durable.then_some(Phase::CheckpointStart);
        if !index_durable {
            self.seal.sealing = false;
        }
        self.seal.failed = true;
        self.seal.submits_since_failure = 0;
        self.stats.seal_failures += 1;
    }
}

/// Tests stand in for the scrubber, which is written separately.
#[cfg(test)]
impl<D: Disk> Journal<D> {
    /// Moves the scrubber to `position` (`Seal::scrub_position_set`).
    pub(crate) fn scrub_position_for_test_set(&mut self, position: ScrubPosition) {
        self.seal.scrub_position_set(position);
    }

    /// `Seal::scrub_checkpoint_request`.
    pub(crate) fn scrub_checkpoint_for_test_request(&mut self) {
        self.seal.scrub_checkpoint_request();
    }

    /// The scrubber's position now, and the one in the last durable checkpoint.
    pub(crate) fn scrub_positions_for_test(
        &self,
    ) -> (Option<ScrubPosition>, Option<ScrubPosition>) {
        (
            self.seal.scrub_position(),
            self.seal.scrub_position_durable(),
        )
    }
}
