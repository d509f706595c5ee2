//! Compaction: a sealed segment whose live bytes fell below a threshold (or, with
//! `Config::sort_sealed`, one still in commit order) is rewritten with its live entries
//! grouped by (ledger, entry), and the copy replaces it under the same id.
//!
//! A job on segment S (docs/durability.md, "Compaction" and "Sorted segments"):
//! 1. **Slots**: reads the slot pages of S's index for the runs of ledgers not deleted, into
//!    one transient array (8 bytes per slot; at most the segment's entries), and orders the
//!    held slots by their position in S;
//! 2. **Gather / Write**: in batches of the records that come next in S and fit the copy
//!    buffer, reads S in large windows (so S is read once, in order), places each record
//!    where its (ledger, entry) order within the batch puts it, re-heads it for its new
//!    position (a record chain of its own), and writes the batch's whole sectors to
//!    `S.segment.compacted.tmp`, whose header carries S's generation plus one;
//! 3. **SegmentSync**, then **IndexWrite / IndexSync** of the copy's index (same runs, new
//!    positions, that generation) to `S.index.compacted.tmp`;
//! 4. **Swap**: once no read is in flight on S (new reads of S are turned away as busy
//!    meanwhile), renames the copy over S, then its index over S's index, and switches the
//!    in-memory runs and index pages to the copy. A sort of a journal segment exchanges
//!    names with S instead, while `dead.rs` may keep one more file: S's old file then rests under
//!    the copy's temporary name, blocks written, until segment preparation reuses it (no
//!    unlink frees a whole segment beside the commits, no zero-ahead for the next one).
//!
//! The files are created and renamed through the ring (`Disk::submit_file_ops`, phases
//! CopyCreate, IndexCreate, SwapSegment and SwapIndex), off the shard thread: the rename over
//! S is what frees S's blocks, which ext4 does in its journal.
//!
//! The rename (or exchange) of the segment is the commit point. Before it, a crash leaves S
//! untouched and the temporaries are deleted at open (after an exchange, the temporary is
//! S's old file, deleted at open as well); after it, an index of the old generation no longer
//! matches its segment's header, and open rebuilds it from the copy. Nothing is lost (every
//! live record is in S or in the durable copy) and nothing is duplicated (one file holds S).
//!
//! Compaction yields to commits: like sealing, it submits only while a commit slot is free,
//! one operation at a time, and only within the byte credit the server grants from its clock
//! (`Journal::compaction_grant`, the `--compaction-rate-mib` limit). An I/O error abandons the
//! job and retries later; a record or index page of S that fails its checksum takes S out of
//! compaction (it is still served as before), and compaction goes on with other segments.

use super::{Journal, TOKEN_COMPACT};
use crate::constants::{
    COMPACTION_BATCH_RECORDS_MAX, COMPACTION_IO_SIZE_MAX, COMPACTION_WINDOW_SIZE,
    RECORD_PAYLOAD_SIZE_MAX, SEAL_CHUNK_SIZE, SECTOR_SIZE, SEGMENT_HEADER_SIZE,
};
use crate::disk::{BufferId, Disk, DiskOp, FileOp, SubmitError, WriteSync};
use crate::ids::{FileId, LedgerId, Location, Position, SegmentId, Sequence};
use crate::index::{OpenSlot, SealedRun, SealedSegment};
use crate::index_build::{IndexWriter, SegmentSpan, SlotSource};
use crate::index_file::{self, Run};
use crate::record::{self, RecordKind};
use crate::stdx::{align_down_u64, align_up_u64, to_u64, to_usize};
use std::collections::BTreeSet;

/// Submits between retries after an I/O error.
const COMPACT_RETRY_INTERVAL_SUBMITS: u32 = 1024;

/// One record to copy: where it is in S, its slot in the copy's table, where it goes in the
/// copy buffer.
#[derive(Clone, Copy, Debug)]
struct CopyItem {
    source: u32,
    slot: u32,
    destination: u32,
}

#[derive(Debug)]
enum Phase {
    /// Creating the copy's temporary file.
    CopyCreate,
    /// Reading the slot pages of live run `run`, `loaded` of its slots done.
    Slots { run: usize, loaded: u64 },
    /// Reading S at the batch's records, `next` of them placed.
    Gather { next: usize },
    /// Writing the copy buffer's whole sectors (all of it, padded, for the last batch), in
    /// writes of at most `COMPACTION_IO_SIZE_MAX`, `written` of `length` done.
    Write { length: usize, written: usize },
    /// fdatasync of the copy.
    SegmentSync,
    /// Writing the copy's index.
    IndexWrite(IndexWriter),
    /// Creating the copy's index file.
    IndexCreate(IndexWriter),
    /// Its fdatasync.
    IndexSync(IndexWriter),
    /// Both files durable: waiting for reads of S to drain, then renaming.
    Swap(IndexWriter),
    /// The copy being renamed over S (the commit point).
    SwapSegment(IndexWriter),
    /// The copy's index being renamed over S's, then the directory's fsync; memory switches
    /// to the copy when it completes, whatever its result.
    SwapIndex(IndexWriter),
}

/// One compaction job. See the module docs.
#[derive(Debug)]
struct Job {
    segment: SegmentId,
    /// Rewritten for order, not for space (`Config::sort_sealed`): it waits while sorting is
    /// paused.
    sorting: bool,
    /// The copy's generation.
    generation: u32,
    /// S's slot table.
    table: SealedSegment,
    /// Live runs of S at planning, in slot-table order, and the copy's runs (same ranges).
    runs: Vec<(LedgerId, SealedRun)>,
    runs_new: Vec<Run>,
    /// One slot per slot of the copy's table: S's position until copied, then the copy's.
    slots: Vec<OpenSlot>,
    /// The copy's held slots in the order of their records in S (built once the slots are
    /// loaded), and the next of them to put in a batch.
    order: Vec<u32>,
    slot_next: usize,
    /// The batch being gathered, sorted by source position.
    batch: Vec<CopyItem>,
    /// The copy's file size, where the buffer's first byte goes, and bytes in the buffer.
    file_size: u64,
    buffer_position: u64,
    buffer_length: usize,
    /// The copy's record chain.
    sequence_next: Sequence,
    checksum_previous: u32,
    /// The swap keeps S's old file for segment preparation to reuse (`journal/dead.rs`).
    keep: bool,
    phase: Phase,
}

/// The compaction state machine. See the module docs.
#[derive(Debug)]
pub(super) struct Compaction {
    job: Option<Job>,
    /// The server saw this shard writing faster than its sorting limit: no sorting job starts
    /// or takes a step (compaction for space goes on).
    sorting_paused: bool,
    in_flight: bool,
    /// Bytes of the write in flight: a short write fails the job.
    in_flight_length: usize,
    /// Bytes of disk traffic the server's clock allows now.
    credit: u64,
    failed: bool,
    submits_since_failure: u32,
    /// Set when a segment may have become a candidate (a deletion, a seal, a job ended, the
    /// disk filled or emptied); cleared when planning finds none. Planning looks at every
    /// sealed segment, so it runs only when something changed, not on every submit.
    plan_pending: bool,
    /// The threshold planning last used (disk pressure moves it).
    threshold_planned: u32,
    /// The last planning found a segment that frees space, or a job for space runs.
    frees_space: bool,
    /// The write head waits for space: compaction runs without credit.
    credit_unlimited: bool,
    /// Segments taken out of compaction because their records or index failed a check.
    refused: BTreeSet<SegmentId>,
    /// The copy buffer and the read window.
    buffer: BufferId,
    window: BufferId,
}

/// The credit compaction may accumulate while idle: a short burst, not a backlog (a few of
/// its 1 MiB reads and writes, not a whole copy buffer).
const CREDIT_BURST_BYTES: u64 = 32 * 1024 * 1024;
const _: () = assert!(CREDIT_BURST_BYTES >= 4 * COMPACTION_IO_SIZE_MAX as u64);

impl Compaction {
    pub(super) fn new(buffer: BufferId, window: BufferId) -> Compaction {
        Compaction {
            job: None,
            sorting_paused: false,
            in_flight: false,
            in_flight_length: 0,
            credit: 0,
            failed: false,
            submits_since_failure: 0,
            plan_pending: true,
            threshold_planned: 0,
            frees_space: false,
            credit_unlimited: false,
            refused: BTreeSet::new(),
            buffer,
            window,
        }
    }

    /// Adds `bytes` of credit (the server's clock: rate times time passed), up to a short
    /// burst, or without bound for a grant larger than the burst (tests).
    pub(super) fn grant(&mut self, bytes: u64) {
        self.credit = self
            .credit
            .saturating_add(bytes)
            .min(bytes.max(CREDIT_BURST_BYTES));
    }

    /// The segment a job is rewriting.
    pub(super) fn segment(&self) -> Option<SegmentId> {
        self.job.as_ref().map(|job| job.segment)
    }

    /// True when reads of `segment` must wait: its copy is about to replace it.
    pub(super) fn blocks_reads(&self, segment: SegmentId) -> bool {
        self.job.as_ref().is_some_and(|job| {
            job.segment == segment
                && matches!(
                    job.phase,
                    Phase::Swap(_) | Phase::SwapSegment(_) | Phase::SwapIndex(_)
                )
        })
    }

    /// True when a job for space runs, planning may find one, or a failed one will be
    /// retried: space may still come back (`journal/pressure.rs`).
    pub(super) fn may_free_space(&self) -> bool {
        self.frees_space || self.plan_pending || self.failed
    }

    fn credit_left(&self) -> bool {
        self.credit > 0 || self.credit_unlimited
    }

    /// True when nothing is in flight and nothing can go before more credit or a retry.
    pub(super) fn is_idle(&self) -> bool {
        let index_rename_due = self
            .job
            .as_ref()
            .is_some_and(|job| matches!(job.phase, Phase::SwapIndex(_)));
        !self.in_flight
            && !index_rename_due
            && (!self.credit_left()
                || self.failed
                || (self.job.is_none() && !self.plan_pending)
                || self.is_sorting_waiting())
    }

    /// Pauses (or resumes) sorting; resuming plans again, since a candidate may be waiting.
    pub(super) fn sorting_pause(&mut self, paused: bool) {
        if self.sorting_paused && !paused {
            self.plan_pending = true;
        }
        self.sorting_paused = paused;
    }

    /// True when the running job sorts, sorting is paused, and the job has not reached its
    /// swap (once it renames, it finishes: S is the copy from then on).
    fn is_sorting_waiting(&self) -> bool {
        self.sorting_paused
            && self.job.as_ref().is_some_and(|job| {
                job.sorting
                    && !matches!(
                        job.phase,
                        Phase::Swap(_) | Phase::SwapSegment(_) | Phase::SwapIndex(_)
                    )
            })
    }

    /// A segment may have become a candidate: plan again at the next drive.
    pub(super) fn replan(&mut self) {
        self.plan_pending = true;
    }

    /// Makes the next drive retry after a failure now.
    pub(super) fn retry_now(&mut self) {
        if self.failed {
            self.submits_since_failure = COMPACT_RETRY_INTERVAL_SUBMITS;
        }
    }

    /// Segments refused for a failed check.
    pub(super) fn refused(&self) -> usize {
        self.refused.len()
    }

    fn spend(&mut self, bytes: usize) {
        self.credit = self.credit.saturating_sub(to_u64(bytes));
    }
}

/// What a finished step asks for next.
enum Step {
    Continue,
    /// An I/O error: abandon the job, retry later.
    Failed,
    /// A record or page of S failed its check: abandon the job, never compact S again.
    Refused,
}

impl<D: Disk> Journal<D> {
    /// Starts or continues compaction; called from `submit` while a commit slot is free.
    pub(super) fn compact_drive(&mut self) {
        if self.compaction.in_flight {
            return;
        }
        if self.compaction.failed {
            self.compaction.submits_since_failure += 1;
            if self.compaction.submits_since_failure < COMPACT_RETRY_INTERVAL_SUBMITS {
                return;
            }
            self.compaction.failed = false;
        }
        self.compaction.credit_unlimited = self.segments.is_read_only();
        if self.compaction_threshold_per_mille() != self.compaction.threshold_planned {
            self.compaction.plan_pending = true;
        }
        let planned =
            self.compaction.job.is_some() || (self.compaction.plan_pending && self.compact_plan());
        if !planned {
            return;
        }
        if matches!(
            self.compaction.job.as_ref().map(|job| &job.phase),
            Some(Phase::Swap(_))
        ) {
            self.compact_swap();
            return;
        }
        if self.compaction.is_sorting_waiting() {
            self.compact_sort_yield();
            return;
        }
        // Once the copy is renamed over S, reads of S wait for the index's rename: that
        // step takes no credit (it moves no data), or reads would wait for the next grant.
        let swapping = matches!(
            self.compaction.job.as_ref().map(|job| &job.phase),
            Some(Phase::SwapIndex(_))
        );
        if !self.compaction.credit_left() && !swapping {
            return;
        }
        let step = self.compact_submit();
        self.compact_after(step);
    }

    /// Picks the sealed segment with the least live data under the threshold (which disk
    /// pressure raises, `journal/pressure.rs`) whose copy fits the free space, or else, with
    /// `Config::sort_sealed`, room on the disk and no pressure, the newest segment still in
    /// commit order, and plans its copy. Returns whether a job runs.
    fn compact_plan(&mut self) -> bool {
        let blocked = self.segments.is_read_only();
        let per_mille = self.compaction_threshold_per_mille();
        self.compaction.threshold_planned = per_mille;
        let sort = self.config.sort_sealed
            && !blocked
            && self.pressure.per_mille() == 0
            && !self.compaction.sorting_paused;
        if per_mille == 0 && !sort {
            // Off: nothing to plan until the threshold changes (the disk fills or empties).
            self.compaction.plan_pending = false;
            self.compaction.frees_space = false;
            return false;
        }
        if !self.compaction.credit_left() {
            return false;
        }
        let resume = self.seal.resume().segment;
        let refused = &self.compaction.refused;
        // A segment whose last copy's swap kept its old file waits until that file is reused
        // or removed: it rests under the name the next copy would be written to.
        let kept = &self.dead;
        let excluded = |segment| refused.contains(&segment) || kept.is_replaced(segment);
        // A copy for space needs its own size beyond the reserve, or half the reserve (the
        // rest stays for index files and checkpoints) once the write head waits for it: the
        // least live segment whose copy fits, not the least live one. A sorted copy is as
        // large as its segment's live data: it needs that much room beyond the reserve and
        // the next segment, or the journal would turn read-only for it. A file system that
        // cannot tell its free space leaves it to the allocation, as segment creation does.
        let free = self.disk.space_free().unwrap_or(u64::MAX);
        let reserve = self.config.disk_reserve;
        let copy_size_max = free.saturating_sub(if blocked { reserve / 2 } else { reserve });
        let threshold = f64::from(per_mille) / 1000.0;
        let mut candidate = (per_mille > 0)
            .then(|| {
                self.index
                    .compaction_candidate(resume, threshold, copy_size_max, excluded)
            })
            .flatten();
        let mut sorting = false;
        if candidate.is_none() && sort && free >= 2 * self.config.segment_size + reserve {
            candidate = self.index.sort_candidate(resume, excluded);
            sorting = candidate.is_some();
        }
        let Some(segment) = candidate else {
            self.compaction.plan_pending = false;
            self.compaction.frees_space = false;
            return false;
        };
        self.compaction.frees_space = !sorting;
        let table = self
            .index
            .sealed_segment(segment)
            .expect("a candidate is sealed");
        let runs = self.index.sealed_runs_live(segment);
        let mut runs_new = Vec::with_capacity(runs.len());
        let mut slot_next = 0u64;
        let mut bytes = 0u64;
        for (ledger, run) in &runs {
            let new = Run {
                ledger: *ledger,
                entry_first: crate::ids::EntryId(run.entry_first),
                entry_last: crate::ids::EntryId(run.entry_last),
                slot_first: slot_next,
                entries: run.entries,
                bytes: run.bytes,
            };
            slot_next += new.slot_count();
            bytes += run.bytes;
            runs_new.push(new);
        }
        let file_size = align_up_u64(to_u64(SEGMENT_HEADER_SIZE) + bytes, to_u64(SECTOR_SIZE));
        let generation = table.generation + 1;
        let header = &mut self.disk.buffer_mut(self.compaction.buffer)[..SEGMENT_HEADER_SIZE];
        crate::segment::encode_segment_header_generation(
            header,
            segment,
            self.config.segment_size,
            generation,
            0,
        );
        self.compaction.job = Some(Job {
            segment,
            sorting,
            generation,
            table,
            runs,
            runs_new,
            slots: Vec::with_capacity(to_usize(slot_next)),
            order: Vec::new(),
            slot_next: 0,
            batch: Vec::new(),
            file_size,
            buffer_position: 0,
            buffer_length: SEGMENT_HEADER_SIZE,
            sequence_next: Sequence(1),
            checksum_previous: 0,
            keep: false,
            phase: Phase::CopyCreate,
        });
        self.stats.compactions_started += 1;
        self.stats.compactions_sorting += u64::from(sorting);
        true
    }

    /// Submits the running phase's next operation.
    fn compact_submit(&mut self) -> Step {
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
                let ops = [replace, FileOp::SyncDirectory];
                self.disk.submit_file_ops(TOKEN_COMPACT, &ops).map(|()| 0)
            }
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

    /// A compaction read, write or sync completed with `result`.
    pub(super) fn compact_on_complete(&mut self, op: DiskOp, result: i32) {
        assert!(self.compaction.in_flight);
        self.compaction.in_flight = false;
        let job = self.compaction.job.as_ref().expect("a job runs");
        if matches!(job.phase, Phase::SwapIndex(_)) {
            // The copy is S already: memory follows it even if its index kept the old name.
            if result < 0 {
                self.stats.compaction_failures += 1;
            }
            self.compact_swapped();
            return;
        }
        let expected = self.compaction.in_flight_length;
        let short =
            op != DiskOp::Sync && usize::try_from(result).is_ok_and(|count| count != expected);
        if result < 0 || short {
            self.compact_after(Step::Failed);
            return;
        }
        let step = match op {
            DiskOp::Read => self.compact_read_done(),
            DiskOp::Write | DiskOp::Sync | DiskOp::File => self.compact_write_done(op),
        };
        self.compact_after(step);
    }

    fn compact_after(&mut self, step: Step) {
        match step {
            Step::Continue => {}
            Step::Failed | Step::Refused => self.compact_failed(step),
        }
    }

    /// A read completed: slot pages become slots, or a window's records go to the buffer.
    fn compact_read_done(&mut self) -> Step {
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
    fn compact_write_done(&mut self, op: DiskOp) -> Step {
        let buffer = self.compaction.buffer;
        let buffer_size = self.config.compaction_buffer_size;
        let job = self.compaction.job.as_mut().expect("a job runs");
        let phase = std::mem::replace(&mut job.phase, Phase::SegmentSync);
        job.phase = match (phase, op) {
            (Phase::CopyCreate, DiskOp::File) => Phase::Slots { run: 0, loaded: 0 },
            (Phase::IndexCreate(writer), DiskOp::File) => Phase::IndexWrite(writer),
            (Phase::SwapSegment(writer), DiskOp::File) => Phase::SwapIndex(writer),
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

    /// Renames the copy over S once no read of S is in flight (its index follows,
    /// `Phase::SwapIndex`).
    fn compact_swap(&mut self) {
        let job = self.compaction.job.as_ref().expect("a job runs");
        let segment = job.segment;
        if self.reads.in_flight_on(segment) {
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

    /// The copy replaced S: memory switches to it. Should its index have failed to take the
    /// old one's name, memory still switches (the index is durable under its temporary name),
    /// and the next open rebuilds S's index, whose generation no longer matches.
    fn compact_swapped(&mut self) {
        let job = self.compaction.job.take().expect("a job runs");
        let segment = job.segment;
        let Phase::SwapIndex(writer) = job.phase else {
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

    /// Abandons the running job: its temporaries are deleted (they may be most of a segment
    /// on a full disk), and S is either retried later or, after a failed check, never again.
    /// A paused sort gives way when space is needed: if the disk is full, or a segment fell
    /// under the threshold (checked only when something changed), the sort's copy is
    /// dropped and planning picks the segment that frees space. The sort starts over later.
    fn compact_sort_yield(&mut self) {
        if !self.compaction.plan_pending {
            return;
        }
        self.compaction.plan_pending = false;
        let read_only = self.segments.is_read_only() || self.pressure.per_mille() > 0;
        let per_mille = self.compaction_threshold_per_mille();
        let resume = self.seal.resume().segment;
        let refused = &self.compaction.refused;
        let kept = &self.dead;
        let needed = read_only
            || (per_mille > 0
                && self
                    .index
                    .compaction_candidate(
                        resume,
                        f64::from(per_mille) / 1000.0,
                        u64::MAX,
                        |segment| refused.contains(&segment) || kept.is_replaced(segment),
                    )
                    .is_some());
        if !needed {
            return;
        }
        if let Some(job) = self.compaction.job.take() {
            self.disk
                .file_discard(FileId::SegmentCompacted(job.segment));
            self.disk.file_discard(FileId::IndexCompacted(job.segment));
            self.stats.compactions_sorting_dropped += 1;
        }
        self.compaction.plan_pending = true;
    }

    fn compact_failed(&mut self, step: Step) {
        self.compaction.plan_pending = true;
        if let Some(job) = self.compaction.job.take() {
            self.disk
                .file_discard(FileId::SegmentCompacted(job.segment));
            self.disk.file_discard(FileId::IndexCompacted(job.segment));
            if matches!(step, Step::Refused) {
                self.compaction.refused.insert(job.segment);
                self.stats.compaction_refusals += 1;
                return;
            }
        }
        self.compaction.failed = true;
        self.compaction.submits_since_failure = 0;
        self.stats.compaction_failures += 1;
    }
}

/// Slots a sealed run spans, holes included.
fn slot_span(run: &SealedRun) -> u64 {
    u64::try_from(run.entry_last - run.entry_first + 1).expect("entry_last >= entry_first")
}

fn record_size_of(slot: &OpenSlot) -> usize {
    record::record_size(to_usize(u64::from(slot.payload_size)))
}

/// The (ledger, entry) of slot `slot` of the copy's table.
fn slot_identity(runs: &[Run], slot: u32) -> (LedgerId, crate::ids::EntryId) {
    let slot = u64::from(slot);
    let at = runs.partition_point(|run| run.slot_first <= slot) - 1;
    let run = &runs[at];
    let entry = run.entry_first.0 + i64::try_from(slot - run.slot_first).expect("fits");
    (run.ledger, crate::ids::EntryId(entry))
}

/// Puts the held slots in the order of their records in S, the order batches read S in.
fn order_by_source(job: &mut Job) {
    job.order = (0..job.slots.len())
        .filter(|&slot| job.slots[slot].is_held())
        .map(|slot| u32::try_from(slot).expect("slots of one segment fit u32"))
        .collect();
    let slots = &job.slots;
    job.order
        .sort_unstable_by_key(|&slot| slots[slot as usize].position);
    job.slot_next = 0;
}

/// Fills the next batch: the records that come next in S and fit the copy buffer
/// (`buffer_size` bytes, `Config::compaction_buffer_size`) after what it holds. They are placed in (ledger, entry) order within the batch, so S is read once, in
/// order, and each ledger's entries of a batch end up contiguous in the copy (a batch of a
/// segment written by 50 ledgers holds about 1.3 MB of each). Returns the batch sorted by
/// where its records are in S.
fn batch_plan(job: &mut Job, buffer_size: usize) -> Phase {
    job.batch.clear();
    let mut bytes = job.buffer_length;
    while job.slot_next < job.order.len() && job.batch.len() < COMPACTION_BATCH_RECORDS_MAX {
        let slot = job.order[job.slot_next];
        let held = job.slots[slot as usize];
        let size = record_size_of(&held);
        if bytes + size > buffer_size {
            break;
        }
        job.batch.push(CopyItem {
            source: held.position,
            slot,
            destination: 0,
        });
        bytes += size;
        job.slot_next += 1;
    }
    assert!(
        !job.batch.is_empty(),
        "a batch is planned only while a held slot is left"
    );
    job.batch.sort_unstable_by_key(|item| item.slot);
    let mut destination = job.buffer_length;
    for item in &mut job.batch {
        item.destination = u32::try_from(destination).expect("the buffer fits u32");
        destination += record_size_of(&job.slots[item.slot as usize]);
    }
    job.batch.sort_unstable_by_key(|item| item.source);
    Phase::Gather { next: 0 }
}

/// Every record of the batch is in the buffer: give each its new header (position, sequence,
/// chain) in slot order, and write the whole sectors (everything, padded, after the last).
fn batch_finish(job: &mut Job, out: &mut [u8]) -> Phase {
    job.batch.sort_unstable_by_key(|item| item.slot);
    let mut commit_first = true;
    for item in &job.batch {
        let slot = &mut job.slots[item.slot as usize];
        let destination = to_usize(u64::from(item.destination));
        let size = record_size_of(slot);
        let position = job.buffer_position + u64::from(item.destination);
        let location = Location {
            segment: job.segment,
            position: Position(position),
        };
        job.checksum_previous = record::relocate(
            &mut out[destination..destination + size],
            job.sequence_next,
            job.checksum_previous,
            location,
            commit_first,
        );
        commit_first = false;
        job.sequence_next = Sequence(job.sequence_next.0 + 1);
        slot.position = u32::try_from(position).expect("segment positions fit u32");
    }
    let end = job.batch.last().map_or(job.buffer_length, |item| {
        to_usize(u64::from(item.destination)) + record_size_of(&job.slots[item.slot as usize])
    });
    job.buffer_length = end;
    let last = job.slot_next == job.order.len();
    if last {
        let padded = to_usize(align_up_u64(to_u64(end), to_u64(SECTOR_SIZE)));
        out[end..padded].fill(0);
        job.buffer_length = padded;
        Phase::Write {
            length: padded,
            written: 0,
        }
    } else {
        let length = end / SECTOR_SIZE * SECTOR_SIZE;
        assert!(length > 0, "a batch that is not the last fills the buffer");
        Phase::Write { length, written: 0 }
    }
}
