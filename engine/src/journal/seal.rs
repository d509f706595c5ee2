//! Sealing: once the write head has left a segment and its last commit is durable, write the
//! segment's index file, make it durable, drop the segment's entry arrays from memory, and
//! write a new checkpoint that says restart need not scan it.
//!
//! A job goes IndexWrite -> IndexSync -> (publish, `Index::seal`) -> CheckpointWrite ->
//! CheckpointSync -> (publish) -> done, one chunk of `SEAL_CHUNK_SIZE` in flight at a time,
//! and only while a commit slot is free (like zero-ahead), so sealing never queues ahead of a
//! commit that could go. Jobs run in segment order, so the checkpoint only moves forward.
//!
//! A failure (disk full, I/O error) abandons the job's current file and retries the job after
//! `SEAL_RETRY_INTERVAL_SUBMITS` submits: the segment is already durable, so nothing is lost;
//! its entries keep their memory and the previous checkpoint stays in force meanwhile.

use super::{Journal, TOKEN_SEAL};
use crate::checkpoint::Resume;
use crate::constants::SEAL_CHUNK_SIZE;
use crate::disk::{BufferId, Disk, DiskOp, WriteSync};
use crate::ids::FileId;
use crate::ids::Sequence;
use crate::index::SealedSegment;
use crate::index_build::{self, IndexWriter, SegmentSpan};
use crate::stdx::to_u64;
use std::collections::VecDeque;

/// Submits between retries of a failed job.
const SEAL_RETRY_INTERVAL_SUBMITS: u32 = 1024;

#[derive(Debug)]
enum Phase {
    /// Writing the index file.
    IndexWrite(IndexWriter),
    /// Its fdatasync.
    IndexSync(IndexWriter),
    /// Writing the checkpoint (its whole content), `written` bytes done.
    CheckpointWrite { bytes: Vec<u8>, written: usize },
    /// Its fdatasync.
    CheckpointSync,
    /// The index is durable; the checkpoint is to be (re)built and written.
    CheckpointStart,
}

/// The sealing state machine. See the module docs.
#[derive(Debug)]
pub(super) struct Seal {
    /// Segments waiting, oldest first; the front one is being sealed when `phase` is set.
    queue: VecDeque<SegmentSpan>,
    phase: Option<Phase>,
    in_flight: bool,
    /// Bytes of the write in flight: a short write fails the file.
    in_flight_length: usize,
    resume: Resume,
    submits_since_failure: u32,
    failed: bool,
    /// `SEAL_CHUNK_SIZE` bytes for the chunk in flight.
    buffer: BufferId,
}

impl Seal {
    pub(super) fn new(buffer: BufferId, resume: Resume, queue: Vec<SegmentSpan>) -> Seal {
        Seal {
            queue: queue.into_iter().collect(),
            phase: None,
            in_flight: false,
            in_flight_length: 0,
            resume,
            submits_since_failure: 0,
            failed: false,
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

    /// Segments queued or being sealed.
    pub(super) fn pending(&self) -> usize {
        self.queue.len()
    }

    /// True when nothing is in flight and nothing is to be done before a retry.
    pub(super) fn is_idle(&self) -> bool {
        !self.in_flight && (self.failed || self.queue.is_empty())
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
}

impl<D: Disk> Journal<D> {
    /// Starts or continues sealing; called from `submit` while a commit slot is free. A job
    /// starts only once no commit of its segment is staging or in flight.
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
        if seal.phase.is_none() {
            let Some(span) = seal.front() else { return };
            if self.commits.holds_segment(span.segment) {
                return;
            }
            let writer = IndexWriter::new(span, index_build::runs_of(&self.index, span.segment));
            let file = FileId::Index(span.segment);
            let size = writer.file_size();
            let disk = &mut self.disk;
            if self
                .stats
                .metadata_timed(|| disk.file_create(file, size))
                .is_err()
            {
                self.seal_failed();
                return;
            }
            self.seal.phase = Some(Phase::IndexWrite(writer));
        }
        let span = self.seal.front().expect("a job runs");
        if matches!(self.seal.phase, Some(Phase::CheckpointStart)) {
            self.seal.phase = self.checkpoint_start(span);
            if self.seal.failed {
                return;
            }
        }
        let buffer = self.seal.buffer;
        let token = TOKEN_SEAL;
        let submitted = match self.seal.phase.as_mut().expect("set above") {
            Phase::IndexWrite(writer) => {
                let position = writer.produced();
                let out = self.disk.buffer_mut(buffer);
                let length = writer.fill(&self.index, &mut out[..SEAL_CHUNK_SIZE]);
                let file = FileId::Index(span.segment);
                self.disk
                    .submit_write(token, file, position, buffer, length, WriteSync::None)
                    .map(|()| Some(length))
            }
            Phase::IndexSync(_) => self
                .disk
                .submit_sync(token, FileId::Index(span.segment))
                .map(|()| None),
            Phase::CheckpointWrite { bytes, written } => {
                let length = (bytes.len() - *written).min(SEAL_CHUNK_SIZE);
                let out = self.disk.buffer_mut(buffer);
                out[..length].copy_from_slice(&bytes[*written..*written + length]);
                let position = to_u64(*written);
                self.disk
                    .submit_write(
                        token,
                        FileId::Checkpoint,
                        position,
                        buffer,
                        length,
                        WriteSync::None,
                    )
                    .map(|()| Some(length))
            }
            Phase::CheckpointSync => self
                .disk
                .submit_sync(token, FileId::Checkpoint)
                .map(|()| None),
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
        let span = self.seal.front().expect("a job runs");
        let phase = self.seal.phase.take().expect("a job runs");
        self.seal.phase = match (phase, op) {
            (Phase::IndexWrite(writer), DiskOp::Write) if writer.is_done() => {
                Some(Phase::IndexSync(writer))
            }
            (phase @ Phase::IndexWrite(_), DiskOp::Write) => Some(phase),
            (Phase::IndexSync(writer), DiskOp::Sync) => {
                let disk = &mut self.disk;
                let file = FileId::Index(span.segment);
                if self
                    .stats
                    .metadata_timed(|| disk.file_publish(file))
                    .is_err()
                {
                    self.seal_failed();
                    return;
                }
                // The index is durable: the segment's entries are read through it from now on.
                let (slot_table_offset, slot_count) = writer.slot_table();
                let table = SealedSegment {
                    slot_table_offset,
                    slot_count,
                };
                self.index.seal(span.segment, table, writer.runs());
                self.stats.segments_sealed += 1;
                self.stats.index_bytes_written += writer.file_size();
                self.checkpoint_start(span)
            }
            (Phase::CheckpointWrite { bytes, written }, DiskOp::Write) => {
                let written = written + usize::try_from(result).expect("non-negative");
                if written >= bytes.len() {
                    Some(Phase::CheckpointSync)
                } else {
                    Some(Phase::CheckpointWrite { bytes, written })
                }
            }
            (Phase::CheckpointSync, DiskOp::Sync) => {
                let disk = &mut self.disk;
                if self
                    .stats
                    .metadata_timed(|| disk.file_publish(FileId::Checkpoint))
                    .is_err()
                {
                    self.seal_failed();
                    self.seal.phase = Some(Phase::CheckpointStart);
                    return;
                }
                self.seal.resume = self.seal_resume_after(span);
                self.stats.checkpoints_written += 1;
                self.seal.queue.pop_front();
                None
            }
            (_, op) => unreachable!("seal got an unexpected {op:?} completion"),
        };
    }

    /// The checkpoint that covers `span` (and everything the last one covered).
    fn seal_resume_after(&self, span: SegmentSpan) -> Resume {
        let resume = self.seal.resume;
        let next = span.segment.next();
        let (segment, sequence_next, checksum_previous) = if next > resume.segment {
            (next, Sequence(span.sequence_last.0 + 1), span.checksum_last)
        } else {
            (
                resume.segment,
                resume.sequence_next,
                resume.checksum_previous,
            )
        };
        Resume {
            segment,
            sequence_next,
            checksum_previous,
            generation: resume.generation + 1,
        }
    }

    /// Builds the checkpoint covering `span` and creates its temporary file.
    fn checkpoint_start(&mut self, span: SegmentSpan) -> Option<Phase> {
        let resume = self.seal_resume_after(span);
        let bytes = index_build::checkpoint_bytes(
            &self.index,
            resume.segment,
            resume.sequence_next,
            resume.checksum_previous,
            resume.generation,
        );
        let (disk, size) = (&mut self.disk, to_u64(bytes.len()));
        if self
            .stats
            .metadata_timed(|| disk.file_create(FileId::Checkpoint, size))
            .is_err()
        {
            self.seal_failed();
            return Some(Phase::CheckpointStart);
        }
        Some(Phase::CheckpointWrite { bytes, written: 0 })
    }

    /// Abandons the file being written; the job retries later from its index (if the index
    /// is not durable yet) or from its checkpoint (if it is: the entry arrays are gone).
    fn seal_failed(&mut self) {
        let index_durable = matches!(
            self.seal.phase,
            Some(Phase::CheckpointStart | Phase::CheckpointWrite { .. } | Phase::CheckpointSync)
        );
        self.seal.phase = index_durable.then_some(Phase::CheckpointStart);
        self.seal.failed = true;
        self.seal.submits_since_failure = 0;
        self.stats.seal_failures += 1;
    }
}
