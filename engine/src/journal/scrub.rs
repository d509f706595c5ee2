//! `Scrub`: every sealed segment and its index file read back and checked on a slow cycle, so
//! damage is found before anyone reads it (docs/scrub.md).
//!
//! A segment's check, one read in flight at a time through the ring:
//! 1. **Index**: its index file's header and run table, then every slot page
//!    (`segment_check::index_*`, as `ringlog verify` checks them);
//! 2. **Records**: the segment's header sector, then every record up to the end of its data
//!    (`RecordScan`: framing, CRC32C of header and payload, identity) and the hash chain and
//!    sequence across them, whose ends must be the index's (`ChainCheck`).
//!
//! Damage is reported (`Event::Damage`) and the check goes on: past a damaged slot page with
//! the next page, past a damaged record with the next sound record found after it (a header
//! names its own segment and position, so nothing else passes for one).
//!
//! Pace: the scrubber reads only while a commit slot is free (`submit` drives it there, as it
//! drives sealing and compaction), and only within the byte credit the server's clock grants
//! (`Journal::scrub_grant`): the sealed bytes at the cycle's start over
//! `Config::scrub_cycle_ms`, at most `Config::scrub_rate_max` a second. Segments go in
//! ascending id order from the cycle's start, wrapping around; a cycle is complete when the
//! scrubber comes back to where it started. The first cycle of a journal starts at a segment
//! picked from `Config::scrub_seed`, so bookies holding the same ledgers do not all read the
//! same ones first. The position survives restarts in the checkpoint.
//!
//! It never holds a segment another job wants: dead segments and the one compaction rewrites
//! are skipped, and a check is dropped when compaction takes its segment (the segment and its
//! index are renamed one after the other: a check reading across the swap would see one
//! file's old version and the other's new one; the simulation found that); compaction's swap
//! and a dead file's reuse wait only for the one read in flight (`in_flight_on`); a segment
//! that changed generation between two reads is checked again from its start, and one that
//! is gone is left.

mod check;
mod checkpoint;

use super::{Journal, TOKEN_SCRUB};
use crate::checkpoint::ScrubPosition;
use crate::constants::{
    SCRUB_CHECKPOINT_SEGMENTS, SCRUB_READ_SIZE, SECTOR_SIZE, SEGMENT_HEADER_SIZE,
};
use crate::disk::{BufferId, Disk, SubmitError};
use crate::ids::{EntryId, FileId, LedgerId, SegmentId};
use crate::index_file::{self, IndexHeader, Run};
use crate::segment::CommitBlock;
use crate::segment_check::{ChainCheck, Damage, RecordScan, RunsHeld, WalkBad};
use crate::stdx::to_u64;

/// Damage the scrubber found, as `Event::Damage` reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DamageFound {
    /// The file.
    pub file: FileId,
    /// The byte position in it, if the damage has one.
    pub position: Option<u64>,
    /// What is wrong.
    pub damage: Damage,
    /// The entry whose record it is, when its header is sound enough to say.
    pub entry: Option<(LedgerId, EntryId)>,
}

/// Where a segment's check is.
#[derive(Clone, Copy, Debug)]
enum Phase {
    /// Reading the index file's header sector and run table.
    IndexHead,
    /// Reading slot pages from `page`.
    IndexPages { page: u64 },
    /// Reading the segment's header sector (and the first records with it).
    SegmentHeader,
    /// Reading records.
    Records,
    /// Looking for the next sound record from `from`, after damage.
    Resync { from: u64 },
    /// Reading the slot pages again from `page`, for the entries whose records lie in the
    /// damaged ranges (their headers cannot say).
    Identify { page: u64 },
}

/// Bytes of a segment where no sound record header was found: from a bad record (or padding)
/// to the next sound record. The entries the index places there are the damaged ones.
#[derive(Clone, Copy, Debug)]
struct DamagedRange {
    from: u64,
    /// `u64::MAX` until the next sound record is found.
    to: u64,
    reason: WalkBad,
    /// The index placed at least one entry in it.
    identified: bool,
}

/// One segment's check.
#[derive(Debug)]
struct Job {
    segment: SegmentId,
    generation: u32,
    file_size: u64,
    index_size: u64,
    slot_table_offset: u64,
    pages: u64,
    phase: Phase,
    /// The index header, once verified; without one, the records' end is unknown and they are
    /// not scanned (the next open rebuilds the index).
    header: Option<IndexHeader>,
    /// What the slot pages must hold (`None` once that cannot be compared: a run table too
    /// large for the buffer, or damage reported already), and what they held so far.
    held_expected: Option<RunsHeld>,
    held: u64,
    scan: RecordScan,
    chain: ChainCheck,
    /// Damage found in this segment's records: their ends are not compared with the index.
    records_damaged: bool,
    /// The index's runs (empty when the run table did not fit the buffer or is damaged):
    /// which entry a slot holds.
    runs: Vec<Run>,
    /// Ranges without a sound record header, at most `SCRUB_DAMAGED_RANGES_MAX`.
    damaged: Vec<DamagedRange>,
    /// Where the last sound record ended (or the scan resumed): damage found past padding
    /// the scan skipped starts here, so a record whose header was in the padding's place is
    /// inside the damaged range.
    record_end: u64,
    /// Digest types learned from this segment's bodies (`digest.rs`), for the index once the
    /// buffer is done with, at most `SCRUB_LEARNED_MAX` ledgers per read.
    learned: Vec<(LedgerId, crate::digest::DigestKind, u8)>,
    /// Which file the buffer holds bytes of, and which bytes.
    chunk_file: Option<FileId>,
    chunk_start: u64,
    chunk_length: usize,
}

/// The scrubber's state (module doc).
#[derive(Debug)]
pub(super) struct Scrub {
    enabled: bool,
    buffer: BufferId,
    job: Option<Job>,
    /// A read in flight: its file and length.
    in_flight: Option<(FileId, usize)>,
    /// Bytes the scrubber may still read; a read may start while it is positive.
    credit_bytes: i64,
    /// Bytes a second for this cycle (the sealed bytes at its start over the cycle time, at
    /// most the configured rate).
    rate_bytes_per_s: u64,
    position: ScrubPosition,
    /// The cycle has wrapped around past the last segment.
    wrapped: bool,
    segments_since_checkpoint: u32,
    /// The checkpoint's own check (`scrub/checkpoint.rs`), and whether the cycle completes
    /// when it ends.
    checkpoint: checkpoint::CheckpointCheck,
    cycle_ending: bool,
    /// Until the first cycle starts (a journal the scrubber never ran on): the seed that
    /// picks its first segment among those sealed then.
    start_seed: Option<u64>,
}

impl Scrub {
    pub(super) fn new(
        enabled: bool,
        buffer: BufferId,
        recovered: Option<ScrubPosition>,
        seed: u64,
    ) -> Scrub {
        let position = recovered.unwrap_or(ScrubPosition {
            segment_next: SegmentId(0),
            cycle_start: SegmentId(0),
            cycles_completed: 0,
        });
        Scrub {
            start_seed: recovered.is_none().then_some(seed),
            enabled,
            buffer,
            job: None,
            in_flight: None,
            credit_bytes: 0,
            rate_bytes_per_s: 0,
            // Ids only grow, so a next segment below the start means the cycle wrapped.
            wrapped: position.segment_next < position.cycle_start,
            position,
            segments_since_checkpoint: 0,
            // Once soon after open: the checkpoint is the file a restart reads first.
            checkpoint: checkpoint::CheckpointCheck::Due,
            cycle_ending: false,
        }
    }

    /// True while a scrub read of `segment` (or its index) is in flight.
    pub(super) fn in_flight_on(&self, segment: SegmentId) -> bool {
        matches!(
            self.in_flight,
            Some((FileId::Segment(id) | FileId::Index(id), _)) if id == segment
        )
    }

    /// Where the scrubber is.
    pub(super) fn position(&self) -> ScrubPosition {
        self.position
    }

    /// The segment being checked, if any.
    pub(super) fn segment_current(&self) -> Option<SegmentId> {
        self.job.as_ref().map(|job| job.segment)
    }

    /// True when nothing is in flight.
    pub(super) fn is_idle(&self) -> bool {
        self.in_flight.is_none()
    }

    /// The read rate of this cycle, bytes a second.
    pub(super) fn rate_bytes_per_s(&self) -> u64 {
        self.rate_bytes_per_s
    }
}

/// What a look at the buffer decided.
enum Next {
    /// Read `length` bytes of `file` from `start`.
    Read {
        file: FileId,
        start: u64,
        length: usize,
    },
    /// The segment's check is over.
    Done,
}

impl<D: Disk> Journal<D> {
    /// Lets the scrubber read for `elapsed_us` more microseconds at its rate (the server's
    /// clock; the engine has none). Idle credit is capped at one read or 200 ms of the rate,
    /// whichever is more: no burst after a pause, and the rate is reachable with the tick's
    /// grants (one read a tick would cap it at 10 MiB/s).
    pub fn scrub_grant(&mut self, elapsed_us: u64) {
        if !self.scrub.enabled {
            return;
        }
        self.scrub_rate_update();
        let rate = self.scrub.rate_bytes_per_s;
        let bytes = u128::from(rate) * u128::from(elapsed_us) / 1_000_000;
        let cap = to_u64(SCRUB_READ_SIZE).max(rate / 5);
        let cap = i64::try_from(cap).unwrap_or(i64::MAX);
        let bytes = i64::try_from(bytes).unwrap_or(i64::MAX);
        self.scrub.credit_bytes = self.scrub.credit_bytes.saturating_add(bytes).min(cap);
    }

    /// The sealed bytes now (segments and the indexes' run tables) over the cycle time, at
    /// most the configured rate. Computed at every grant, not once a cycle: a fresh journal
    /// starts its first cycle with one segment sealed, and a rate fixed then would make that
    /// cycle last as many cycle times as segments get sealed during it.
    fn scrub_rate_update(&mut self) {
        let sealed_bytes: u64 = self
            .index
            .sealed_segments()
            .filter_map(|segment| self.index.sealed_segment(segment))
            .map(|table| table.file_size + table.slot_table_offset)
            .sum();
        let cycle_ms = self.config.scrub_cycle_ms.max(1);
        let rate =
            u128::from(sealed_bytes.max(self.config.segment_size)) * 1000 / u128::from(cycle_ms);
        self.scrub.rate_bytes_per_s = u64::try_from(rate)
            .unwrap_or(u64::MAX)
            .clamp(1, self.config.scrub_rate_max.max(1));
    }

    /// Starts the next read of the scrub; called from `submit` while a commit slot is free.
    pub(super) fn scrub_drive(&mut self) {
        if !self.scrub.enabled || self.scrub.in_flight.is_some() || self.scrub.credit_bytes <= 0 {
            return;
        }
        let compacting = self.compaction.job_segment();
        if self
            .scrub
            .job
            .as_ref()
            .is_some_and(|job| Some(job.segment) == compacting)
        {
            // Compaction took the segment: its files are about to change under the check
            // (a segment and an index renamed one after the other). Its copy is checked in
            // the next cycle.
            self.scrub.job = None;
            self.scrub_advance(false);
        }
        if self.scrub.job.is_none() && self.scrub_checkpoint_drive() {
            return;
        }
        if self.scrub.job.is_none() && !self.scrub_job_start() {
            return;
        }
        let next = self.scrub_next();
        self.scrub_learned_apply();
        match next {
            Next::Done => self.scrub_job_done(),
            Next::Read {
                file,
                start,
                length,
            } => {
                let buffer = self.scrub.buffer;
                match self
                    .disk
                    .submit_read(TOKEN_SCRUB, file, start, buffer, length)
                {
                    Ok(()) => {
                        self.scrub.in_flight = Some((file, length));
                        let job = self.scrub.job.as_mut().expect("a job runs");
                        job.chunk_file = Some(file);
                        job.chunk_start = start;
                        job.chunk_length = 0;
                    }
                    Err(SubmitError::QueueFull) => {}
                    Err(SubmitError::Io(_)) => {
                        // The file cannot be read now: leave the segment for the next cycle.
                        self.stats.scrub_read_failures += 1;
                        self.scrub.job = None;
                        self.scrub_advance(false);
                    }
                }
            }
        }
    }

    /// Puts the digest types the last check learned into the index.
    fn scrub_learned_apply(&mut self) {
        let Some(job) = self.scrub.job.as_mut() else {
            return;
        };
        for (ledger, kind, tries) in job.learned.drain(..) {
            if let Some(state) = self.index.ledger_mut(ledger) {
                (state.digest, state.digest_tries) = (kind, tries);
            }
        }
    }

    /// A scrub read completed with `result`.
    pub(super) fn scrub_on_complete(&mut self, result: i32) {
        let (file, length) = self.scrub.in_flight.take().expect("a scrub read runs");
        let read = usize::try_from(result).ok();
        self.scrub.credit_bytes = self
            .scrub
            .credit_bytes
            .saturating_sub(i64::try_from(length).unwrap_or(i64::MAX));
        if file == FileId::Checkpoint {
            self.scrub_checkpoint_on_complete(result, length);
            return;
        }
        let Some(job) = self.scrub.job.as_mut() else {
            return;
        };
        // A swap gave the segment a new generation, or it is gone: what was read is not it.
        let table = self.index.sealed_segment(job.segment);
        if table.is_none_or(|table| table.generation != job.generation) {
            self.scrub.job = None;
            if table.is_none() {
                self.scrub_advance(false);
            }
            return;
        }
        match read {
            Some(count) if count == length => {
                job.chunk_length = count;
                self.stats.scrub_bytes += to_u64(count);
            }
            _ => {
                // An error or a short read (the file is shorter than its index says): the
                // read path reports what cannot be read; the scrub leaves the segment.
                self.stats.scrub_read_failures += 1;
                self.scrub.job = None;
                self.scrub_advance(false);
            }
        }
    }

    /// Picks the next segment to check; false when there is none to check now.
    fn scrub_job_start(&mut self) -> bool {
        let compacting = self.compaction.job_segment();
        if let Some(seed) = self.scrub.start_seed {
            // The first cycle starts at a segment the seed picks (module doc).
            let count = to_u64(self.index.sealed_segments().count());
            if count == 0 {
                return false;
            }
            let pick = usize::try_from(seed % count).expect("below a count");
            let start = self.index.sealed_segments().nth(pick).expect("counted");
            self.scrub.position.segment_next = start;
            self.scrub.position.cycle_start = start;
            self.scrub.start_seed = None;
        }
        loop {
            let from = self.scrub.position.segment_next;
            let next = self
                .index
                .sealed_segments()
                .find(|&segment| segment >= from);
            let Some(segment) = next else {
                if self.index.sealed_segments().next().is_none() {
                    return false;
                }
                if self.scrub.wrapped {
                    // Nothing sealed at or past the cycle's start is left: the cycle is over.
                    self.scrub_cycle_end();
                    return false;
                }
                self.scrub.wrapped = true;
                self.scrub.position.segment_next = SegmentId(0);
                continue;
            };
            if self.scrub.wrapped && segment >= self.scrub.position.cycle_start {
                self.scrub_cycle_end();
                return false;
            }
            self.scrub.position.segment_next = segment;
            let table = self.index.sealed_segment(segment).expect("listed");
            // Dead segments wait for removal, and compaction's segment is being rewritten:
            // neither is held up by a check.
            if table.bytes_live == 0 || compacting == Some(segment) {
                self.scrub.position.segment_next = segment.next();
                continue;
            }
            let pages = index_file::page_count(table.slot_count);
            self.scrub.job = Some(Job {
                segment,
                generation: table.generation,
                file_size: table.file_size,
                index_size: table.slot_table_offset + pages * to_u64(SECTOR_SIZE),
                slot_table_offset: table.slot_table_offset,
                pages,
                phase: Phase::IndexHead,
                header: None,
                held_expected: None,
                held: 0,
                // The sector's rule until the segment header names its block.
                scan: RecordScan::new(
                    segment,
                    table.file_size,
                    to_u64(SEGMENT_HEADER_SIZE),
                    CommitBlock::Sector,
                ),
                chain: ChainCheck::default(),
                records_damaged: false,
                runs: Vec::new(),
                damaged: Vec::new(),
                record_end: to_u64(SEGMENT_HEADER_SIZE),
                learned: Vec::new(),
                chunk_file: None,
                chunk_start: 0,
                chunk_length: 0,
            });
            return true;
        }
    }

    /// Every segment of the cycle is checked: the checkpoint is checked last, then the cycle
    /// completes (`scrub_checkpoint_idle`). In that order, because completing asks for a new
    /// checkpoint, which would replace the file before its check, damaged or not.
    fn scrub_cycle_end(&mut self) {
        if !self.scrub.cycle_ending {
            self.scrub.cycle_ending = true;
            self.scrub.checkpoint = checkpoint::CheckpointCheck::Due;
        }
    }

    pub(super) fn scrub_cycle_complete(&mut self) {
        let first = self.index.sealed_segments().next().unwrap_or(SegmentId(0));
        self.scrub.position = ScrubPosition {
            segment_next: first,
            cycle_start: first,
            cycles_completed: self.scrub.position.cycles_completed + 1,
        };
        self.scrub.wrapped = false;
        self.stats.scrub_cycles_completed += 1;
        self.seal.scrub_position_set(self.scrub.position);
        self.seal.scrub_checkpoint_request();
        self.scrub.segments_since_checkpoint = 0;
    }

    /// The segment's check is over: the scrubber moves on.
    fn scrub_job_done(&mut self) {
        if self.scrub.job.take().is_some() {
            self.stats.scrub_segments += 1;
        }
        self.scrub_advance(true);
    }

    fn scrub_advance(&mut self, checked: bool) {
        self.scrub.position.segment_next = self.scrub.position.segment_next.next();
        self.seal.scrub_position_set(self.scrub.position);
        if checked {
            self.scrub.segments_since_checkpoint += 1;
            if self.scrub.segments_since_checkpoint >= SCRUB_CHECKPOINT_SEGMENTS {
                self.seal.scrub_checkpoint_request();
                self.scrub.segments_since_checkpoint = 0;
            }
        }
    }
}
