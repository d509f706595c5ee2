//! The commit pipeline: staging records into a commit buffer, submitting it as one write
//! (group commit), reporting commits strictly in journal order, and poisoning the journal on
//! the first failed write or sync.
//!
//! A commit slot goes Free -> Staging -> InFlight -> Free. At most one slot stages; up to
//! `commits_in_flight_max` are in flight; `order` lists the staging and in-flight slots oldest
//! first, so records are reported in journal order whatever order the disk completes in. A
//! durable commit's buffer goes to the read cache (`Reads`); staging takes a free buffer, or
//! the oldest cached one.

use super::reads::Cached;
use super::{Event, Journal, TOKEN_COMMIT};
use crate::config::{Config, SyncMode};
use crate::constants::{BATCH_BYTES_MAX, BATCH_RECORDS_MAX, MASTER_KEY_SIZE, SEGMENT_HEADER_SIZE};
use crate::disk::{BufferId, Disk, DiskOp, SubmitError, WriteSync};
use crate::error::AddError;
use crate::ids::{
    EntryId, FileId, LedgerId, Location, Position, SegmentId, Sequence, ENTRY_ID_LEDGER_KEY,
};
use crate::index::Slot;
use crate::index_build::SegmentSpan;
use crate::record::{self, RecordHeader, RecordKind};
use crate::segment::CommitBlock;
use crate::stdx::{align_up, to_u64};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Where an in-flight commit waits (`Journal::commit_oldest_in_flight`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommitStage {
    /// Its RWF_DSYNC write is submitted and not completed: the disk, the block layer, or the
    /// kernel worker that completes a synchronous direct write (`dio/<disk>` kworker) has it.
    WriteDsync,
    /// Its write (linked to an fdatasync) is submitted and not completed.
    Write,
    /// Its write completed; the linked fdatasync (run by an io-wq worker) has not.
    Fdatasync,
}

impl CommitStage {
    /// The stage in words, for log lines.
    #[must_use]
    pub fn describe(self) -> &'static str {
        match self {
            CommitStage::WriteDsync => "RWF_DSYNC write submitted, not completed",
            CommitStage::Write => {
                "write and linked fdatasync submitted, write not reported complete"
            }
            CommitStage::Fdatasync => "write completed, linked fdatasync not completed",
        }
    }
}

/// The oldest commit in flight, as the stall watchdog sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CommitInFlight {
    pub segment: SegmentId,
    /// Byte position of the commit in its segment.
    pub position: u64,
    /// Bytes written (a whole number of the segment's commit blocks).
    pub bytes: usize,
    pub records: usize,
    pub stage: CommitStage,
    /// When it was submitted (always set for a commit in flight).
    pub submitted_at: Option<Instant>,
}

/// A record staged into a commit, with what its report and its index entry need.
#[derive(Clone, Copy, Debug)]
pub(super) struct Staged {
    pub token: Option<u64>,
    pub kind: RecordKind,
    pub ledger: LedgerId,
    pub entry: EntryId,
    pub location: Location,
    pub payload_size: u32,
    pub deferred: bool,
    pub last_add_confirmed: i64,
}

/// Where the journal writes next, as zero-ahead sees it.
#[derive(Clone, Copy, Debug)]
pub(super) struct WriteHead {
    /// The active segment.
    pub segment: SegmentId,
    /// Where the next commit opens: the end of the last one submitted.
    pub position_next: u64,
    /// The block-aligned end of the staging commit, or `position_next` if none stages.
    pub staged_end: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CommitState {
    Free,
    Staging,
    InFlight,
}

#[derive(Debug)]
struct Commit {
    state: CommitState,
    buffer: BufferId,
    segment: SegmentId,
    position: u64,
    length: usize,
    length_aligned: usize,
    records: Vec<Staged>,
    written: bool,
    synced: bool,
    written_reported: bool,
    /// How this commit was submitted: with `Dsync` its write's success is its durability.
    sync: WriteSync,
    /// When the commit was opened for staging and when it was submitted: stage timing for
    /// `Stats` only, never used for a decision (the simulation stays deterministic).
    opened_at: Option<Instant>,
    submitted_at: Option<Instant>,
}

/// The commit pipeline's state: the commit slots in journal order, the commit buffers not in
/// use, the write head, and the record chain (sequence and checksum of the last record).
#[derive(Debug)]
pub(super) struct Commits {
    /// `commits_in_flight_max + 1` slots: every commit in flight and one staging.
    slots: Vec<Commit>,
    /// Staging and in-flight slots, oldest first.
    order: VecDeque<usize>,
    /// The slot records are staged into, if one is open.
    staging: Option<usize>,
    /// Commit buffers neither staging, in flight, nor in the read cache.
    buffers_free: Vec<BufferId>,
    segment_active: SegmentId,
    /// What commits in `segment_active` are padded to (its header says which).
    commit_block: CommitBlock,
    /// Where the next commit opens in `segment_active`.
    position_next: u64,
    sequence_next: Sequence,
    checksum_previous: u32,
    /// Sequence of the active segment's first record (its next one while it has none): what
    /// the segment's index records when it is sealed.
    segment_sequence_first: Sequence,
    /// Set by the first failed write or sync; never cleared.
    poisoned: bool,
    /// `Config::commits_in_flight_max`.
    in_flight_max: usize,
    /// `Config::commit_overlap_bytes_min`.
    overlap_bytes_min: usize,
    /// `Config::segment_size`.
    segment_size: u64,
}

impl Commits {
    /// An idle pipeline whose next record is `sequence_next`, chained to `checksum_previous`,
    /// at `position_next` of `segment_active`, whose commits are padded to `commit_block`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        config: &Config,
        buffers_free: Vec<BufferId>,
        segment_active: SegmentId,
        commit_block: CommitBlock,
        position_next: u64,
        sequence_next: Sequence,
        checksum_previous: u32,
        segment_sequence_first: Sequence,
    ) -> Commits {
        assert!(buffers_free.len() > config.commits_in_flight_max);
        let slots = (0..=config.commits_in_flight_max)
            .map(|_| Commit {
                state: CommitState::Free,
                buffer: BufferId(u32::MAX),
                segment: SegmentId(0),
                position: 0,
                length: 0,
                length_aligned: 0,
                records: Vec::with_capacity(BATCH_RECORDS_MAX),
                written: false,
                synced: false,
                written_reported: false,
                sync: WriteSync::LinkedFdatasyncQuiet,
                opened_at: None,
                submitted_at: None,
            })
            .collect();
        Commits {
            slots,
            order: VecDeque::with_capacity(config.commits_in_flight_max + 1),
            staging: None,
            buffers_free,
            segment_active,
            commit_block,
            position_next,
            sequence_next,
            checksum_previous,
            segment_sequence_first,
            poisoned: false,
            in_flight_max: config.commits_in_flight_max,
            overlap_bytes_min: config.commit_overlap_bytes_min,
            segment_size: config.segment_size,
        }
    }

    pub(super) fn is_poisoned(&self) -> bool {
        self.poisoned
    }

    /// True when no commit is staged or in flight.
    pub(super) fn is_idle(&self) -> bool {
        self.order.is_empty()
    }

    /// True when a commit of `segment` is staging or in flight.
    pub(super) fn holds_segment(&self, segment: SegmentId) -> bool {
        self.segment_active == segment
            || self
                .order
                .iter()
                .any(|&slot| self.slots[slot].segment == segment)
    }

    /// True when every commit slot is in flight.
    pub(super) fn slots_full(&self) -> bool {
        self.order.len() - usize::from(self.staging.is_some()) >= self.in_flight_max
    }

    /// Records staged and not yet submitted.
    pub(super) fn staged_records(&self) -> usize {
        self.staging
            .map_or(0, |slot| self.slots[slot].records.len())
    }

    /// Bytes of records staged and not yet submitted.
    pub(super) fn staged_bytes(&self) -> usize {
        self.staging.map_or(0, |slot| self.slots[slot].length)
    }

    /// True when `size` bytes (a record and a ledger-key record) could be staged now.
    pub(super) fn can_stage(&self, size: usize) -> bool {
        match self.staging {
            Some(slot) => self.fits(slot, size, 2) || self.order.len() <= self.in_flight_max,
            None => self.order.len() <= self.in_flight_max && !self.buffers_free.is_empty(),
        }
    }

    /// The oldest commit submitted and not yet durable, with the stage it waits in.
    pub(super) fn oldest_in_flight(&self) -> Option<CommitInFlight> {
        let &slot = self.order.front()?;
        let commit = &self.slots[slot];
        if commit.state != CommitState::InFlight {
            return None;
        }
        let stage = match (commit.written, commit.sync) {
            (false, WriteSync::Dsync) => CommitStage::WriteDsync,
            (false, _) => CommitStage::Write,
            (true, _) => CommitStage::Fdatasync,
        };
        Some(CommitInFlight {
            segment: commit.segment,
            position: commit.position,
            bytes: commit.length_aligned,
            records: commit.records.len(),
            stage,
            submitted_at: commit.submitted_at,
        })
    }

    /// The staging commit's segment and block-aligned byte range, if it holds records, a
    /// commit slot is free to submit it, and it may go beside the commits in flight.
    ///
    /// A commit goes beside another in flight only with `overlap_bytes_min` of records (0 by
    /// default: always); a smaller one waits for the commits in flight to complete (their
    /// completion submits it, with every add that arrived meanwhile: no timer). Every commit
    /// is padded to whole blocks, and a second slot taken by every small batch halves the
    /// batches: at 10k 1 KiB adds/s the journal wrote 3.6 bytes per byte of adds, 2.3-3.0
    /// with a minimum of 4-32 KiB, for about twice the adds' p99 (docs/durability.md,
    /// "Commit padding"). Large batches overlap either way, which is what the second slot is
    /// for (disk-floor.md: one or two commits in flight).
    pub(super) fn staging_ready(&self) -> Option<(SegmentId, u64, u64)> {
        let slot = self.staging?;
        let in_flight = self.order.len() - 1;
        let commit = &self.slots[slot];
        if commit.records.is_empty() || in_flight >= self.in_flight_max {
            return None;
        }
        if in_flight > 0 && commit.length < self.overlap_bytes_min {
            return None;
        }
        let end = commit.position + to_u64(align_up(commit.length, self.commit_block.size()));
        Some((commit.segment, commit.position, end))
    }

    /// Where the durable records of `segment` end: the first commit not yet durable on it
    /// starts there (commits start on block boundaries), or the write head, or, for a
    /// segment the write head has left, the segment's end.
    pub(super) fn durable_end(&self, segment: SegmentId) -> u64 {
        let first_pending = self
            .order
            .iter()
            .map(|&slot| &self.slots[slot])
            .find(|commit| commit.segment == segment);
        match first_pending {
            Some(commit) => commit.position,
            None if segment == self.segment_active => self.position_next,
            None => self.segment_size,
        }
    }

    pub(super) fn write_head(&self) -> WriteHead {
        let staged_end = self.staging.map_or(self.position_next, |slot| {
            let commit = &self.slots[slot];
            commit.position + to_u64(align_up(commit.length, self.commit_block.size()))
        });
        WriteHead {
            segment: self.segment_active,
            position_next: self.position_next,
            staged_end,
        }
    }

    /// Where the next staged record goes.
    pub(super) fn location_next(&self) -> Location {
        let slot = self.staging.expect("reserve ran first");
        let commit = &self.slots[slot];
        let position = commit.position + to_u64(commit.length);
        Location {
            segment: commit.segment,
            position: Position(position),
        }
    }

    fn fits(&self, slot: usize, size: usize, records: usize) -> bool {
        let commit = &self.slots[slot];
        let block = self.commit_block.size();
        let end = commit.position + to_u64(align_up(commit.length + size, block));
        commit.length + size <= BATCH_BYTES_MAX
            && commit.records.len() + records <= BATCH_RECORDS_MAX
            && end <= self.segment_size
    }
}

impl<D: Disk> Journal<D> {
    /// Makes room for `size` bytes in `records` records in the staging commit, submitting a
    /// full staging commit or opening a new one (on the next segment if this one is full).
    pub(super) fn reserve(&mut self, size: usize, records: usize) -> Result<(), AddError> {
        if let Some(slot) = self.commits.staging {
            if self.commits.fits(slot, size, records) {
                return Ok(());
            }
            if self.commits.order.len() > self.commits.in_flight_max {
                self.stats.staging_full += 1;
                return Err(AddError::StagingFull);
            }
            self.submit_staging();
            if self.commits.staging.is_some() {
                self.stats.staging_full += 1;
                return Err(AddError::StagingFull);
            }
            self.check_writable()?;
        }
        self.staging_open(size)?;
        let slot = self.commits.staging.expect("opened");
        assert!(
            self.commits.fits(slot, size, records),
            "an empty commit holds any single add"
        );
        Ok(())
    }

    fn staging_open(&mut self, size: usize) -> Result<(), AddError> {
        let commits = &mut self.commits;
        assert!(commits.staging.is_none());
        if commits.buffers_free.is_empty() {
            // Every buffer is cached: evict the oldest cached commit.
            let Some(buffer) = self.reads.cache_evict_oldest() else {
                self.stats.staging_full += 1;
                return Err(AddError::StagingFull);
            };
            commits.buffers_free.push(buffer);
        }
        let &buffer = commits
            .buffers_free
            .last()
            .expect("a buffer was freed above");
        if commits.order.len() > commits.in_flight_max {
            self.stats.staging_full += 1;
            return Err(AddError::StagingFull);
        }
        let end = commits.position_next + to_u64(align_up(size, commits.commit_block.size()));
        if end > commits.segment_size {
            let Some(spare) = self.segments.spare_take() else {
                self.stats.staging_full += 1;
                return Err(if self.space_exhausted() {
                    AddError::ReadOnly
                } else {
                    AddError::StagingFull
                });
            };
            let sequence_last = Sequence(commits.sequence_next.0 - 1);
            // A segment with no record (possible only for the one recovery stopped in) has
            // nothing to index; the next restart's scan passes over it.
            if sequence_last >= commits.segment_sequence_first {
                self.seal.enqueue(SegmentSpan {
                    segment: commits.segment_active,
                    sequence_first: commits.segment_sequence_first,
                    sequence_last,
                    checksum_last: commits.checksum_previous,
                    data_end: commits.position_next,
                    generation: 0,
                });
            }
            if spare.recycled {
                self.zero_ahead
                    .segment_written(spare.segment, commits.segment_size);
            }
            commits.segment_active = spare.segment;
            commits.commit_block = spare.commit_block;
            commits.position_next = to_u64(SEGMENT_HEADER_SIZE);
            commits.segment_sequence_first = commits.sequence_next;
        }
        commits.buffers_free.pop();
        let slot = (0..commits.slots.len()).find(|&i| commits.slots[i].state == CommitState::Free);
        let slot = slot.expect("a free commit slot exists when order is not full");
        let commit = &mut commits.slots[slot];
        commit.state = CommitState::Staging;
        commit.buffer = buffer;
        commit.segment = commits.segment_active;
        commit.position = commits.position_next;
        commit.length = 0;
        commit.length_aligned = 0;
        commit.records.clear();
        commit.written = false;
        commit.synced = false;
        commit.written_reported = false;
        commit.opened_at = Some(Instant::now());
        commit.submitted_at = None;
        commits.order.push_back(slot);
        commits.staging = Some(slot);
        Ok(())
    }

    /// Encodes `payload` as the next record of the staging commit, chained to the one before.
    pub(super) fn stage(&mut self, mut staged: Staged, payload: &[u8]) {
        let commits = &mut self.commits;
        let slot = commits.staging.expect("reserve ran first");
        let size = record::record_size(payload.len());
        assert!(commits.fits(slot, size, 1));
        let commit = &mut commits.slots[slot];
        let location = Location {
            segment: commit.segment,
            position: Position(commit.position + to_u64(commit.length)),
        };
        assert_eq!(location, staged.location);
        let header = RecordHeader {
            kind: staged.kind,
            checksum_payload: 0,
            payload_size: u32::try_from(payload.len()).expect("bounded by the record limit"),
            checksum_previous: commits.checksum_previous,
            sequence: commits.sequence_next,
            ledger: staged.ledger,
            entry: staged.entry,
            location,
            commit_first: commit.records.is_empty(),
        };
        let start = commit.length;
        let buffer = self.disk.buffer_mut(commit.buffer);
        commits.checksum_previous =
            record::encode(&mut buffer[start..start + size], &header, payload);
        commits.sequence_next = Sequence(commits.sequence_next.0 + 1);
        staged.payload_size = header.payload_size;
        commit.length += size;
        commit.records.push(staged);
        self.stats.records += 1;
    }

    /// Stages a meta record (ledger key, fence, force marker) with no LAC.
    pub(super) fn stage_meta(
        &mut self,
        token: Option<u64>,
        kind: RecordKind,
        ledger: LedgerId,
        entry: EntryId,
        payload: &[u8],
    ) {
        let location = self.commits.location_next();
        let staged = Staged {
            token,
            kind,
            ledger,
            entry,
            location,
            payload_size: 0,
            deferred: false,
            last_add_confirmed: -1,
        };
        self.stage(staged, payload);
    }

    /// Creates a ledger in the index and stages its key record.
    pub(super) fn create_ledger(&mut self, ledger: LedgerId, master_key: &[u8; MASTER_KEY_SIZE]) {
        let created = self.index.create(ledger, *master_key);
        assert!(created);
        // The key record precedes the ledger's first record in the same commit, so it is
        // durable no later than the first acknowledgement.
        self.stage_meta(
            None,
            RecordKind::LedgerKey,
            ledger,
            ENTRY_ID_LEDGER_KEY,
            master_key,
        );
    }

    /// Submits the staging commit as one write (with RWF_DSYNC, or linked to an fdatasync).
    /// A full submission queue leaves it staging; a failed submit poisons the journal. So does
    /// a zero-ahead write in flight over its range: the kernel orders no two writes in flight,
    /// and zeros landing after the commit would erase acknowledged records. Every submission
    /// path comes here, the add path's too (`reserve`, when the staging commit is full).
    pub(super) fn submit_staging(&mut self) {
        let slot = self.commits.staging.expect("a staging commit");
        let commit = &mut self.commits.slots[slot];
        assert!(!commit.records.is_empty());
        let aligned = align_up(commit.length, self.commits.commit_block.size());
        let end = commit.position + to_u64(aligned);
        if self.zero_ahead.blocks(commit.segment, commit.position, end) {
            // Its completion brings the shard back to `submit` within milliseconds.
            self.stats.zero_ahead_waits += 1;
            return;
        }
        let commit = &mut self.commits.slots[slot];
        let length = commit.length;
        let buffer = commit.buffer;
        // Sector padding must be zero: recovery reads it as "no record here".
        self.disk.buffer_mut(buffer)[length..aligned].fill(0);
        let commit = &mut self.commits.slots[slot];
        commit.length_aligned = aligned;
        // Deferred records are reported when the write completes, before it is synced, so
        // their commits are a write and a linked fdatasync with both completions, whatever the
        // mode (an RWF_DSYNC write would only complete once durable). Other linked commits
        // wake the shard once, for the sync.
        let deferred = commit.records.iter().any(|staged| staged.deferred);
        let sync = match self.config.sync_mode {
            _ if deferred => WriteSync::LinkedFdatasync,
            SyncMode::LinkedFdatasync => WriteSync::LinkedFdatasyncQuiet,
            SyncMode::Dsync => WriteSync::Dsync,
        };
        commit.sync = sync;
        let token = TOKEN_COMMIT | to_u64(slot);
        let (file, position) = (FileId::Segment(commit.segment), commit.position);
        match self
            .disk
            .submit_write(token, file, position, buffer, aligned, sync)
        {
            Ok(()) => {}
            Err(SubmitError::QueueFull) => return,
            Err(SubmitError::Io(_)) => {
                self.poison();
                return;
            }
        }
        let commit = &mut self.commits.slots[slot];
        commit.state = CommitState::InFlight;
        let now = Instant::now();
        commit.submitted_at = Some(now);
        if let Some(opened_at) = commit.opened_at {
            let staging_us = duration_us(now - opened_at);
            self.stats.commit_staging_us_total += staging_us;
            self.stats.commit_staging_us.record(staging_us);
        }
        self.stats
            .commit_records
            .record(to_u64(commit.records.len()));
        self.stats.commit_bytes.record(to_u64(aligned));
        self.commits.position_next = position + to_u64(aligned);
        self.commits.staging = None;
        self.stats.commits += 1;
        self.stats.bytes_written += to_u64(aligned);
    }

    /// The write or the sync of the commit in `slot` completed with `result`.
    pub(super) fn on_commit(&mut self, slot: usize, op: DiskOp, result: i32) {
        if self.commits.poisoned {
            return;
        }
        let commit = &mut self.commits.slots[slot];
        let dsync = commit.sync == WriteSync::Dsync;
        assert_eq!(commit.state, CommitState::InFlight);
        let ok = match op {
            DiskOp::Write => {
                let expected = i32::try_from(commit.length_aligned).expect("commit fits i32");
                assert!(!commit.written);
                commit.written = result == expected;
                commit.synced |= dsync && commit.written;
                commit.written
            }
            DiskOp::Sync => {
                assert!(!commit.synced);
                commit.synced = result == 0;
                commit.synced
            }
            DiskOp::Read | DiskOp::File => unreachable!("commits neither read nor change files"),
        };
        if !ok {
            // A failed or short write, or a failed (or cancelled) fsync: never retried.
            self.poison();
            return;
        }
        let commit = &self.commits.slots[slot];
        if commit.written && commit.synced {
            // This commit's own disk time, apart from the wait for the commits before it.
            if let Some(submitted_at) = commit.submitted_at {
                self.stats
                    .commit_disk_us
                    .record(duration_us(submitted_at.elapsed()));
            }
            self.stats.syncs += 1;
        }
    }

    /// Reports commits in journal order: `Written` for deferred records once a commit and all
    /// before it are written, `Durable` once they are all written and synced.
    pub(super) fn commits_advance(&mut self) {
        for &slot in &self.commits.order {
            let commit = &mut self.commits.slots[slot];
            if commit.state != CommitState::InFlight || !commit.written {
                break;
            }
            if !commit.written_reported {
                commit.written_reported = true;
                for staged in commit.records.iter().filter(|staged| staged.deferred) {
                    let token = staged.token.expect("deferred records are adds");
                    self.events.push(Event::Written { token });
                }
            }
        }
        while let Some(&slot) = self.commits.order.front() {
            let commit = &self.commits.slots[slot];
            if commit.state != CommitState::InFlight || !(commit.written && commit.synced) {
                break;
            }
            self.commits.order.pop_front();
            self.commit_durable(slot);
        }
    }

    fn commit_durable(&mut self, slot: usize) {
        let commit = &mut self.commits.slots[slot];
        if let Some(submitted_at) = commit.submitted_at {
            let io_us = duration_us(submitted_at.elapsed());
            self.stats.commit_io_us_total += io_us;
            self.stats.commit_io_us.record(io_us);
        }
        for staged in &commit.records {
            // A ledger deleted while its records were in flight: they are durable (and
            // acknowledged as such), but nothing indexes them.
            let deleted = self.index.is_deleted(staged.ledger);
            match staged.kind {
                _ if deleted => {}
                RecordKind::Entry => {
                    let slot_index = Slot::new(staged.location, staged.payload_size);
                    let lac = staged.last_add_confirmed;
                    self.index
                        .insert_entry(staged.ledger, staged.entry, slot_index, lac);
                    self.stats.entries_durable += 1;
                }
                RecordKind::ExplicitLac => {
                    let state = self.index.ledger_mut(staged.ledger).expect("ledger exists");
                    state.explicit_lac = Some(Slot::new(staged.location, staged.payload_size));
                    // As Java's FileInfo.setExplicitLac: the bookie's LAC includes it, so a
                    // long poll waiting on the LAC wakes when an explicit LAC passes it.
                    state.last_add_confirmed =
                        state.last_add_confirmed.max(staged.last_add_confirmed);
                }
                RecordKind::LedgerKey | RecordKind::Fence | RecordKind::ForceMarker => {}
            }
            if let Some(token) = staged.token {
                if !staged.deferred {
                    self.events.push(Event::Durable { token });
                }
            }
        }
        commit.state = CommitState::Free;
        let cached = Cached {
            buffer: commit.buffer,
            segment: commit.segment,
            position: commit.position,
            length: commit.length,
        };
        self.stats.commits_durable += 1;
        self.reads.pace().earn(commit.length_aligned);
        if let Some(buffer) = self.reads.cache_insert(cached) {
            self.commits.buffers_free.push(buffer);
        }
    }

    /// After a failed write or sync nothing is acknowledged again: every record not yet
    /// reported fails, and every later add returns `Poisoned`.
    pub(super) fn poison(&mut self) {
        let commits = &mut self.commits;
        if commits.poisoned {
            return;
        }
        commits.poisoned = true;
        for &slot in &commits.order {
            let commit = &commits.slots[slot];
            for staged in &commit.records {
                let Some(token) = staged.token else { continue };
                if staged.deferred && commit.written_reported {
                    continue;
                }
                self.events.push(Event::Failed { token });
            }
        }
        // In-flight commits keep their buffers (the kernel may still use them); nothing is
        // staged again, so the slots are never reused.
        commits.order.clear();
        commits.staging = None;
    }
}

fn duration_us(duration: Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
}
