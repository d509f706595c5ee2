//! Compaction's copying: each phase's read, write or sync of S, the copy and its index, and
//! what its completion does (slot pages become slots, a window's records are checked and go
//! to the copy buffer, a written batch makes room for the next).

use super::batch::{batch_finish, batch_plan, order_by_source};
use super::{record_size_of, Phase, Step};
use crate::constants::{
    COMPACTION_IO_SIZE_MAX, COMPACTION_WINDOW_SIZE, RECORD_PAYLOAD_SIZE_MAX, SEAL_CHUNK_SIZE,
    SECTOR_SIZE, SEGMENT_HEADER_SIZE,
};
use crate::disk::{Disk, DiskOp, FileOp, SubmitError, WriteSync};
use crate::ids::{FileId, LedgerId, Location, Position, Sequence};
use crate::index::{OpenSlot, SealedRun};
use crate::index_build::{IndexWriter, SegmentSpan, SlotSource};
use crate::index_file::{self, Run};
use crate::journal::{Journal, TOKEN_COMPACT};
use crate::record::{self, RecordKind};
use crate::stdx::{align_down_u64, align_up_u64, to_u64, to_usize};

impl<D: Disk> Journal<D> {
    /// Submits the running phase's next operation.
    pub(super) fn compact_submit(&mut self) -> Step {
        let (buffer, window) = (self.compaction.buffer, self.compaction.window);
        let job = self.compaction.job.as_mut().expect("a job runs");
        let segment = job.segment;
        let create = |id, size| [FileOp::Create { id, size }];
        let submitted = match &mut job.phase {
            Phase::CopyCreate => {
                let ops = create(FileId::SegmentCompacted(segment), job.file_size);
                self.disk.submit_file_ops(TOKEN_COMPACT, &ops).map(|()| 0)
            }
            Phase::IndexCreate(writer) => {
                let ops = create(FileId::IndexCompacted(segment), writer.file_size());
                self.disk.submit_file_ops(TOKEN_COMPACT, &ops).map(|()| 0)
            }
            Phase::SwapIndex(_) => {
                let replace = FileOp::Replace {
                    from: FileId::IndexCompacted(segment),
                    to: FileId::Index(segment),
                    keep: false,
                };
                self.disk
                    .submit_file_ops(TOKEN_COMPACT, &[replace])
                    .map(|()| 0)
            }
            Phase::SwapIndexSync(_) => self
                .disk
                .submit_file_ops(TOKEN_COMPACT, &[FileOp::SyncDirectory])
                .map(|()| 0),
            Phase::Slots { run, loaded } => {
                let (_, sealed) = job.runs[*run];
                let first = sealed.slot_first + *loaded;
                let (page_first, _) = index_file::page_of(first);
                let (page_last, _) =
                    index_file::page_of(sealed.slot_first + slot_span(&sealed) - 1);
                let pages =
                    (page_last - page_first + 1).min(to_u64(COMPACTION_IO_SIZE_MAX / SECTOR_SIZE));
                let offset = job.table.slot_table_offset + page_first * to_u64(SECTOR_SIZE);
                let length = to_usize(pages) * SECTOR_SIZE;
                self.disk
                    .submit_read(
                        TOKEN_COMPACT,
                        FileId::Index(segment),
                        offset,
                        window,
                        length,
                    )
                    .map(|()| length)
            }
            Phase::Gather { next } => {
                let item = job.batch[*next];
                let start = align_down_u64(u64::from(item.source), to_u64(SECTOR_SIZE));
                let mut end = start;
                for later in &job.batch[*next..] {
                    let size = record_size_of(&job.slots[later.slot as usize]);
                    let record_end =
                        align_up_u64(u64::from(later.source) + to_u64(size), to_u64(SECTOR_SIZE));
                    // One read of at most COMPACTION_IO_SIZE_MAX, or of the one record that is
                    // larger (the window holds the largest).
                    let limit = if end == start {
                        COMPACTION_WINDOW_SIZE
                    } else {
                        COMPACTION_IO_SIZE_MAX
                    };
                    if record_end - start > to_u64(limit) {
                        break;
                    }
                    end = record_end;
                }
                assert!(end > start, "a record fits the window");
                let length = to_usize(end - start);
                self.disk
                    .submit_read(
                        TOKEN_COMPACT,
                        FileId::Segment(segment),
                        start,
                        window,
                        length,
                    )
                    .map(|()| length)
            }
            Phase::Write { length, written } => {
                let file = FileId::SegmentCompacted(segment);
                let (length, written) = (*length, *written);
                let position = job.buffer_position + to_u64(written);
                let part = (length - written).min(COMPACTION_IO_SIZE_MAX);
                self.disk
                    .submit_write_range(
                        TOKEN_COMPACT,
                        file,
                        position,
                        buffer,
                        written..written + part,
                        WriteSync::None,
                    )
                    .map(|()| part)
            }
            Phase::SegmentSync => self
                .disk
                .submit_sync(TOKEN_COMPACT, FileId::SegmentCompacted(segment))
                .map(|()| 0),
            Phase::IndexWrite(writer) => {
                let position = writer.produced();
                let out = self.disk.buffer_mut(buffer);
                let chunk = &mut out[..SEAL_CHUNK_SIZE];
                let length = writer.fill(SlotSource::Table(&job.slots), chunk);
                let file = FileId::IndexCompacted(segment);
                self.disk
                    .submit_write(
                        TOKEN_COMPACT,
                        file,
                        position,
                        buffer,
                        length,
                        WriteSync::None,
                    )
                    .map(|()| length)
            }
            Phase::IndexSync(_) => self
                .disk
                .submit_sync(TOKEN_COMPACT, FileId::IndexCompacted(segment))
                .map(|()| 0),
            Phase::Swap(_) | Phase::SwapSegment(_) => unreachable!("swapped in compact_swap"),
        };
        match submitted {
            Ok(length) => {
                self.compaction.in_flight = true;
                self.compaction.in_flight_length = length;
                self.compaction.spend(length.max(SECTOR_SIZE));
                Step::Continue
            }
            Err(SubmitError::QueueFull) => Step::Continue,
            Err(SubmitError::Io(_)) => Step::Failed,
        }
    }

    /// A read completed: slot pages become slots, or a window's records go to the buffer.
    pub(super) fn compact_read_done(&mut self) -> Step {
        let (buffer, window) = (self.compaction.buffer, self.compaction.window);
        let segment_size = self.config.segment_size;
        let buffer_size = self.config.compaction_buffer_size;
        let job = self.compaction.job.as_mut().expect("a job runs");
        match job.phase {
            Phase::Slots { run, loaded } => {
                let (_, sealed) = job.runs[run];
                let bytes = self.disk.buffer(window);
                let first = sealed.slot_first + loaded;
                let (page_first, _) = index_file::page_of(first);
                let span = slot_span(&sealed);
                let mut slot = first;
                let pages = self.compaction.in_flight_length / SECTOR_SIZE;
                for page in 0..pages {
                    let page_bytes = &bytes[page * SECTOR_SIZE..(page + 1) * SECTOR_SIZE];
                    if !index_file::page_verify(page_bytes) {
                        return Step::Refused;
                    }
                    let page_number = page_first + to_u64(page);
                    while slot < sealed.slot_first + span
                        && index_file::page_of(slot).0 == page_number
                    {
                        let value = index_file::page_slot(page_bytes, index_file::page_of(slot).1);
                        let open = match value {
                            Some((position, size)) => {
                                let end = u64::from(position)
                                    + to_u64(record::record_size(
                                        to_usize(u64::from(size)).min(RECORD_PAYLOAD_SIZE_MAX),
                                    ));
                                if u64::from(position) < to_u64(SEGMENT_HEADER_SIZE)
                                    || end > job.table.file_size.min(segment_size)
                                    || to_usize(u64::from(size)) > RECORD_PAYLOAD_SIZE_MAX
                                {
                                    return Step::Refused;
                                }
                                OpenSlot {
                                    position,
                                    payload_size: size,
                                }
                            }
                            None => OpenSlot {
                                position: 0,
                                payload_size: u32::MAX,
                            },
                        };
                        job.slots.push(open);
                        slot += 1;
                    }
                }
                let loaded = slot - sealed.slot_first;
                job.phase = if loaded < span {
                    Phase::Slots { run, loaded }
                } else if run + 1 < job.runs.len() {
                    Phase::Slots {
                        run: run + 1,
                        loaded: 0,
                    }
                } else {
                    order_by_source(job);
                    batch_plan(job, buffer_size)
                };
                Step::Continue
            }
            Phase::Gather { next } => {
                let start = align_down_u64(u64::from(job.batch[next].source), to_u64(SECTOR_SIZE));
                let length = self.compaction.in_flight_length;
                let mut next = next;
                while next < job.batch.len() {
                    let item = job.batch[next];
                    let slot = job.slots[item.slot as usize];
                    let size = record_size_of(&slot);
                    let offset = to_usize(u64::from(item.source) - start);
                    if offset + size > length {
                        break;
                    }
                    let (ledger, entry) = slot_identity(&job.runs_new, item.slot);
                    let source = &self.disk.buffer(window)[offset..offset + size];
                    let expected = Location {
                        segment: job.segment,
                        position: Position(u64::from(item.source)),
                    };
                    let intact = record::decode(source).is_ok_and(|(header, _, _)| {
                        header.kind == RecordKind::Entry
                            && header.ledger == ledger
                            && header.entry == entry
                            && header.location == expected
                    });
                    if !intact {
                        return Step::Refused;
                    }
                    let destination = to_usize(u64::from(item.destination));
                    self.disk
                        .buffer_copy(window, offset..offset + size, buffer, destination);
                    next += 1;
                }
                job.phase = if next < job.batch.len() {
                    Phase::Gather { next }
                } else {
                    batch_finish(job, self.disk.buffer_mut(buffer))
                };
                Step::Continue
            }
            _ => unreachable!("compaction read in another phase"),
        }
    }

    /// A write or sync completed.
    pub(super) fn compact_write_done(&mut self, op: DiskOp) -> Step {
        let buffer = self.compaction.buffer;
        let buffer_size = self.config.compaction_buffer_size;
        let job = self.compaction.job.as_mut().expect("a job runs");
        let phase = std::mem::replace(&mut job.phase, Phase::SegmentSync);
        job.phase = match (phase, op) {
            (Phase::CopyCreate, DiskOp::File) => Phase::Slots { run: 0, loaded: 0 },
            (Phase::IndexCreate(writer), DiskOp::File) => Phase::IndexWrite(writer),
            (Phase::SwapSegment(writer), DiskOp::File) => Phase::SwapIndex(writer),
            (Phase::SwapIndex(writer), DiskOp::File) => Phase::SwapIndexSync(writer),
            (Phase::Write { length, written }, DiskOp::Write)
                if written + self.compaction.in_flight_length < length =>
            {
                let written = written + self.compaction.in_flight_length;
                self.stats.compaction_bytes_written += to_u64(self.compaction.in_flight_length);
                Phase::Write { length, written }
            }
            (Phase::Write { length, written }, DiskOp::Write) => {
                self.stats.compaction_bytes_written += to_u64(length - written);
                // Keep the partial sector at the end: the next batch goes on from it.
                let out = self.disk.buffer_mut(buffer);
                let rest = job.buffer_length.saturating_sub(length);
                out.copy_within(length..length + rest, 0);
                job.buffer_position += to_u64(length);
                job.buffer_length = rest;
                if job.slot_next < job.order.len() {
                    batch_plan(job, buffer_size)
                } else {
                    assert_eq!(job.buffer_position, job.file_size);
                    Phase::SegmentSync
                }
            }
            (Phase::SegmentSync, DiskOp::Sync) => {
                let span = SegmentSpan {
                    segment: job.segment,
                    sequence_first: Sequence(1),
                    sequence_last: Sequence(job.sequence_next.0 - 1),
                    checksum_last: job.checksum_previous,
                    data_end: job.file_size,
                    generation: job.generation,
                };
                Phase::IndexCreate(IndexWriter::new(span, job.runs_new.clone()))
            }
            (Phase::IndexWrite(writer), DiskOp::Write) => {
                self.stats.compaction_bytes_written += to_u64(self.compaction.in_flight_length);
                if writer.is_done() {
                    Phase::IndexSync(writer)
                } else {
                    Phase::IndexWrite(writer)
                }
            }
            (Phase::IndexSync(writer), DiskOp::Sync) => Phase::Swap(writer),
            (_, op) => unreachable!("compaction got an unexpected {op:?} completion"),
        };
        Step::Continue
    }
}

/// Slots a sealed run spans, holes included.
fn slot_span(run: &SealedRun) -> u64 {
    u64::try_from(run.entry_last - run.entry_first + 1).expect("entry_last >= entry_first")
}

/// The (ledger, entry) of slot `slot` of the copy's table.
fn slot_identity(runs: &[Run], slot: u32) -> (LedgerId, crate::ids::EntryId) {
    let slot = u64::from(slot);
    let at = runs.partition_point(|run| run.slot_first <= slot) - 1;
    let run = &runs[at];
    let entry = run.entry_first.0 + i64::try_from(slot - run.slot_first).expect("fits");
    (run.ledger, crate::ids::EntryId(entry))
}
