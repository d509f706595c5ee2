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
//!    in-memory runs and index pages to the copy. A sort of a journal segment (or, under disk
//!    pressure, a copy for space) exchanges names with S instead, while `dead.rs` may keep
//!    one more file: S's old file then rests under the copy's temporary name, blocks written,
//!    until segment preparation reuses it (no unlink frees a whole segment beside the
//!    commits, no zero-ahead for the next one).
//!
//! The files are created and renamed through the ring (`Disk::submit_file_ops`, phases
//! CopyCreate, IndexCreate, SwapSegment, SwapIndex and SwapIndexSync), off the shard thread: the rename over
//! S is what frees S's blocks, which ext4 does in its journal.
//!
//! The rename (or exchange) of the segment is the commit point. Before it, a crash leaves S
//! untouched and the temporaries are deleted at open (after an exchange, the temporary is
//! S's old file, which open keeps for reuse when it is a whole journal segment:
//! `recovery/segment_files.rs`); after it, an index of the old generation no longer
//! matches its segment's header, and open rebuilds it from the copy. Nothing is lost (every
//! live record is in S or in the durable copy) and nothing is duplicated (one file holds S).
//!
//! Compaction yields to commits: like sealing, it submits only while a commit slot is free,
//! one operation at a time, and only within the byte credit the server grants from its clock
//! (`Journal::compaction_grant`, the `--compaction-rate-mib` limit). An I/O error before the
//! segment's rename abandons the job and retries later (after it, only the step that failed
//! is retried); a record or index page of S that fails its checksum takes S out of
//! compaction (it is still served as before), and compaction goes on with other segments.
//!
//! This file holds the job's state and its dispatch: `compact_drive` (what to submit next),
//! `compact_on_complete` (where a completion goes) and abandoning a job. The steps are one
//! file each: `compact/plan.rs` picks the segment and plans its copy, `compact/copy.rs`
//! reads S and writes the copy and its index, `compact/batch.rs` orders each batch's records
//! by (ledger, entry) and gives them their new headers, `compact/swap.rs` puts the copy in
//! S's place.

mod batch;
mod copy;
mod plan;
mod swap;

use super::Journal;
use crate::constants::COMPACTION_IO_SIZE_MAX;
use crate::disk::{BufferId, Disk, DiskOp};
use crate::ids::{FileId, LedgerId, SegmentId, Sequence};
use crate::index::{OpenSlot, SealedRun, SealedSegment};
use crate::index_build::IndexWriter;
use crate::index_file::Run;
use crate::record;
use crate::stdx::{to_u64, to_usize};
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
    /// The copy's index being renamed over S's. Until it is, S's file is the copy but S's
    /// index the old generation's: a failed rename is retried (reads of S wait meanwhile),
    /// never skipped, or reads and the scrubber would take the old index's slots for the
    /// copy's.
    SwapIndex(IndexWriter),
    /// The directory's fsync after both renames; memory switches to the copy when it
    /// completes, whatever its result (a later checkpoint's fsync covers the renames too).
    SwapIndexSync(IndexWriter),
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
    /// The segment the running job rewrites.
    pub(super) fn job_segment(&self) -> Option<SegmentId> {
        self.job.as_ref().map(|job| job.segment)
    }

    pub(super) fn blocks_reads(&self, segment: SegmentId) -> bool {
        self.job.as_ref().is_some_and(|job| {
            job.segment == segment
                && matches!(
                    job.phase,
                    Phase::Swap(_)
                        | Phase::SwapSegment(_)
                        | Phase::SwapIndex(_)
                        | Phase::SwapIndexSync(_)
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
        let index_rename_due = !self.failed
            && self.job.as_ref().is_some_and(|job| {
                matches!(job.phase, Phase::SwapIndex(_) | Phase::SwapIndexSync(_))
            });
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
                        Phase::Swap(_)
                            | Phase::SwapSegment(_)
                            | Phase::SwapIndex(_)
                            | Phase::SwapIndexSync(_)
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
            Some(Phase::SwapIndex(_) | Phase::SwapIndexSync(_))
        );
        if !self.compaction.credit_left() && !swapping {
            return;
        }
        let step = self.compact_submit();
        self.compact_after(step);
    }

    /// A compaction read, write or sync completed with `result`.
    pub(super) fn compact_on_complete(&mut self, op: DiskOp, result: i32) {
        assert!(self.compaction.in_flight);
        self.compaction.in_flight = false;
        let job = self.compaction.job.as_ref().expect("a job runs");
        match job.phase {
            Phase::SwapIndex(_) if result < 0 => {
                // The copy is S already, so the job cannot be abandoned: the rename is
                // retried after the usual interval, the copy's index durable under its
                // temporary name meanwhile (a crash before the rename makes open rebuild
                // S's index, whose generation no longer matches).
                self.compaction.failed = true;
                self.compaction.submits_since_failure = 0;
                self.stats.compaction_failures += 1;
                return;
            }
            Phase::SwapIndexSync(_) => {
                if result < 0 {
                    self.stats.compaction_failures += 1;
                }
                self.compact_swapped();
                return;
            }
            _ => {}
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

fn record_size_of(slot: &OpenSlot) -> usize {
    record::record_size(to_usize(u64::from(slot.payload_size)))
}
