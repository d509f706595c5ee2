//! `Journal`: the API a shard uses. Stage adds, submit one commit, poll completions, read.
//!
//! Group commit: records staged between two `submit` calls go into one contiguous buffer that
//! becomes one O_DIRECT write (linked to an fdatasync, or with RWF_DSYNC). Up to
//! `commits_in_flight_max` commits run at once; while they do, new records keep accumulating
//! in the staging buffer, so batches grow with load and no timer is needed. Commits are
//! reported strictly in journal order: a commit's records are durable only when it and every
//! earlier commit completed. Any failed or short write, or failed sync, poisons the journal.

use crate::config::{Config, SyncMode};
use crate::constants::{
    BATCH_BYTES_MAX, BATCH_RECORDS_MAX, ENTRY_GAP_MAX, MASTER_KEY_SIZE, READ_BUFFER_SIZE,
    RECORD_PAYLOAD_SIZE_MAX, SECTOR_SIZE, SEGMENT_HEADER_SIZE, ZERO_AHEAD_CHUNKS_PER_SEGMENT_MIN,
    ZERO_AHEAD_WINDOW_MAX, ZERO_CHUNK_SIZE, ZERO_WRITES_IN_FLIGHT_MAX,
};
use crate::disk::{BufferId, Disk, DiskCompletion, DiskOp, SubmitError, WriteSync};
use crate::error::{AddError, OpenError, ReadError};
use crate::ids::{EntryId, LedgerId, Location, Position, SegmentId, Sequence};
use crate::index::{Index, Ledger, Slot};
use crate::record::{self, RecordHeader, RecordKind};
use crate::stdx::{align_up, to_u64, to_usize};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

fn duration_us(duration: Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
}

pub use crate::ids::{ENTRY_ID_EXPLICIT_LAC, ENTRY_ID_FENCE, ENTRY_ID_FORCE, ENTRY_ID_LEDGER_KEY};

const TOKEN_COMMIT: u64 = 1 << 24;
const TOKEN_READ: u64 = 2 << 24;
const TOKEN_PREPARE: u64 = 3 << 24;
const TOKEN_ZERO_AHEAD: u64 = 4 << 24;
const TOKEN_KIND_MASK: u64 = 0xFF << 24;
/// How many `submit` calls pass between retries of segment creation while read-only.
const SEGMENT_RETRY_INTERVAL_SUBMITS: u32 = 256;

/// How an add is acknowledged.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AddOptions {
    /// A recovery add: accepted on a fenced ledger (the key is still checked).
    pub recovery: bool,
    /// DEFERRED_SYNC: report `Written` after the write, before fdatasync.
    pub deferred: bool,
}

/// Which entry to read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadTarget {
    /// This entry id.
    Entry(EntryId),
    /// The highest entry stored for the ledger (BookKeeper's entry -1).
    Last,
    /// The ledger's durable explicit-LAC body (v3 READ_LAC); `NoEntry` if none was written.
    ExplicitLac,
}

/// A read waiting for or holding its disk data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadSlot(pub u32);

/// What `poll` reports, in journal order for appends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The record and every journal byte before it are durable.
    Durable {
        /// The caller's token.
        token: u64,
    },
    /// A deferred record and every byte before it were written (not yet synced).
    Written {
        /// The caller's token.
        token: u64,
    },
    /// The journal was poisoned before this record became durable: never acknowledge it.
    Failed {
        /// The caller's token.
        token: u64,
    },
    /// A disk read finished: fetch it with `read_result`, then `read_release`.
    ReadDone {
        /// The caller's token.
        token: u64,
        /// Where the result is held.
        slot: ReadSlot,
    },
}

/// The result of starting a read.
#[derive(Debug, PartialEq, Eq)]
pub enum ReadOutcome<'a> {
    /// Served from memory at once.
    Ready {
        /// The entry read (the real id for `ReadTarget::Last`).
        entry: EntryId,
        /// The stored body, verbatim.
        body: &'a [u8],
    },
    /// A disk read was submitted; an `Event::ReadDone` follows.
    Pending,
}

/// Counters, for reports and tests.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Commits submitted.
    pub commits: u64,
    /// Commits durable.
    pub commits_durable: u64,
    /// Records staged (entries and meta records).
    pub records: u64,
    /// Entry records made durable.
    pub entries_durable: u64,
    /// Bytes written by commits, padding included.
    pub bytes_written: u64,
    /// Times an add was refused for lack of staging room (backpressure).
    pub staging_full: u64,
    /// Segments created after open.
    pub segments_created: u64,
    /// Times segment creation failed (disk full).
    pub segment_create_failures: u64,
    /// Reads served from the in-memory commit buffers.
    pub reads_cached: u64,
    /// Reads that went to disk.
    pub reads_disk: u64,
    /// Disk reads whose record failed verification (each is retried once).
    pub read_checksum_failures: u64,
    /// Torn tails truncated at open.
    pub torn_tail_truncations: u64,
    /// Sum over submitted commits of the time from opening the commit for staging to
    /// submitting it (staging, then waiting for a free commit slot), in microseconds.
    pub commit_staging_us_total: u64,
    /// Sum over durable commits of the time from submission to durable (write, fdatasync,
    /// and waiting for earlier commits), in microseconds.
    pub commit_io_us_total: u64,
    /// Bytes of the active segment zeroed ahead of the write head.
    pub zero_ahead_bytes: u64,
    /// Commits held back one turn because they reached into a zero-ahead write in flight.
    pub zero_ahead_waits: u64,
    /// Zero-ahead writes that failed (zero-ahead then stops; nothing else depends on it).
    pub zero_ahead_failures: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CommitState {
    Free,
    Staging,
    InFlight,
}

#[derive(Clone, Copy, Debug)]
struct Staged {
    token: Option<u64>,
    kind: RecordKind,
    ledger: LedgerId,
    entry: EntryId,
    location: Location,
    payload_size: u32,
    deferred: bool,
    last_add_confirmed: i64,
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

#[derive(Clone, Copy, Debug)]
struct Cached {
    buffer: BufferId,
    segment: SegmentId,
    position: u64,
    length: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ReadState {
    Free,
    InFlight,
    Done,
    Failed(ReadError),
}

#[derive(Clone, Copy, Debug)]
struct Read {
    state: ReadState,
    token: u64,
    ledger: LedgerId,
    entry: EntryId,
    kind: RecordKind,
    location: Location,
    payload_size: u32,
    buffer: BufferId,
    start: u64,
    length: usize,
    attempts: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PreparePhase {
    Zeroing,
    Header,
    Syncing,
}

#[derive(Clone, Copy, Debug)]
struct Prepare {
    segment: SegmentId,
    position_submitted: u64,
    bytes_completed: u64,
    phase: PreparePhase,
    in_flight: usize,
}

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
    /// Bytes written (sector-aligned).
    pub bytes: usize,
    pub records: usize,
    pub stage: CommitStage,
    /// When it was submitted (always set for a commit in flight).
    pub submitted_at: Option<Instant>,
}

/// One shard's journal. See the module docs.
#[derive(Debug)]
pub struct Journal<D: Disk> {
    disk: D,
    config: Config,
    index: Index,
    commits: Vec<Commit>,
    order: VecDeque<usize>,
    staging: Option<usize>,
    buffers_free: Vec<BufferId>,
    cache: VecDeque<Cached>,
    reads: Vec<Read>,
    reads_free: Vec<u32>,
    header_buffer: BufferId,
    segment_active: SegmentId,
    segment_id_max: SegmentId,
    position_next: u64,
    spares: VecDeque<SegmentId>,
    prepare: Option<Prepare>,
    /// Zero-ahead: everything of `segment_active` in [.., zero_frontier) was zeroed, is being
    /// zeroed, or lies behind the write head. Meaningful only while `zero_frontier_segment`
    /// is the active segment.
    zero_frontier_segment: SegmentId,
    zero_frontier: u64,
    /// The zero-ahead write in flight: segment and byte range.
    zero_in_flight: Option<(SegmentId, u64, u64)>,
    zero_ahead_enabled: bool,
    read_only: bool,
    submits_since_create_failure: u32,
    sequence_next: Sequence,
    checksum_previous: u32,
    poisoned: bool,
    events: Vec<Event>,
    completions: Vec<DiskCompletion>,
    stats: Stats,
}

impl<D: Disk> Journal<D> {
    /// Opens the journal on `disk`: validates the config, allocates every buffer, recovers the
    /// index from the segments (truncating a torn tail, refusing mid-log corruption) and
    /// creates the first segment of an empty journal.
    pub fn open(mut disk: D, config: Config) -> Result<Journal<D>, OpenError> {
        config.validate().map_err(OpenError::Config)?;
        let commit_buffers = config.commits_in_flight_max + 1 + config.read_cache_buffers;
        let mut sizes = vec![BATCH_BYTES_MAX; commit_buffers];
        sizes.extend(std::iter::repeat_n(
            READ_BUFFER_SIZE,
            config.reads_in_flight_max,
        ));
        sizes.push(SEGMENT_HEADER_SIZE);
        disk.buffers_allocate(&sizes);
        let buffer_id = |index: usize| BufferId(u32::try_from(index).expect("few buffers"));
        let mut recovered = crate::recovery::recover(&mut disk, &config, buffer_id(0))?;
        if recovered.spares.is_empty() {
            // One ready spare before serving: the first rollover never waits, and no zero-fill
            // runs behind the first segment's commits.
            let spare = recovered.segment_id_max.next();
            let (size, zero_fill) = (config.segment_size, config.segment_zero_fill);
            crate::recovery::create_blocking(&mut disk, spare, size, zero_fill, buffer_id(0))?;
            disk.segment_open(spare).map_err(|error| OpenError::Io {
                operation: "opening segment",
                error,
            })?;
            recovered.spares.push(spare);
            recovered.segment_id_max = spare;
        }
        let reads = (0..config.reads_in_flight_max)
            .map(|index| Read {
                state: ReadState::Free,
                token: 0,
                ledger: LedgerId(0),
                entry: EntryId(0),
                kind: RecordKind::Entry,
                location: Location {
                    segment: SegmentId(0),
                    position: Position(0),
                },
                payload_size: 0,
                buffer: buffer_id(commit_buffers + index),
                start: 0,
                length: 0,
                attempts: 0,
            })
            .collect();
        let commits = (0..=config.commits_in_flight_max)
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
        let events_max = (config.commits_in_flight_max + 1) * BATCH_RECORDS_MAX;
        let stats = Stats {
            torn_tail_truncations: u64::from(recovered.torn_tail_truncated),
            ..Stats::default()
        };
        let journal = Journal {
            disk,
            index: recovered.index,
            commits,
            order: VecDeque::with_capacity(config.commits_in_flight_max + 1),
            staging: None,
            buffers_free: (0..commit_buffers).rev().map(buffer_id).collect(),
            cache: VecDeque::with_capacity(config.read_cache_buffers + 1),
            reads,
            reads_free: (0..u32::try_from(config.reads_in_flight_max).expect("small")).collect(),
            header_buffer: buffer_id(sizes.len() - 1),
            segment_active: recovered.segment_active,
            segment_id_max: recovered.segment_id_max,
            position_next: recovered.position_next,
            spares: recovered.spares.into_iter().collect(),
            prepare: None,
            zero_frontier_segment: recovered.segment_active,
            zero_frontier: 0,
            zero_in_flight: None,
            zero_ahead_enabled: config.zero_ahead && !config.segment_zero_fill,
            read_only: false,
            submits_since_create_failure: 0,
            sequence_next: recovered.sequence_next,
            checksum_previous: recovered.checksum_previous,
            poisoned: false,
            events: Vec::with_capacity(events_max + config.reads_in_flight_max),
            completions: Vec::with_capacity(events_max),
            stats,
            config,
        };
        assert!(journal.position_next % to_u64(SECTOR_SIZE) == 0);
        assert!(journal.position_next >= to_u64(SEGMENT_HEADER_SIZE));
        Ok(journal)
    }

    /// Stages an entry. On success the token comes back as `Durable` (or `Written` for a
    /// deferred add) or `Failed`. The first add of an unknown ledger creates it with its key.
    pub fn add(
        &mut self,
        token: u64,
        ledger: LedgerId,
        entry: EntryId,
        master_key: &[u8; MASTER_KEY_SIZE],
        body: &[u8],
        options: AddOptions,
    ) -> Result<(), AddError> {
        self.check_writable()?;
        if !self.fits_segment(body.len()) {
            return Err(AddError::TooLarge);
        }
        let entry_limit = |state: Option<&Ledger>| {
            let highest = state.map_or(-1, |state| state.entry_staged_max);
            highest.saturating_add(i64::try_from(ENTRY_GAP_MAX).expect("small"))
        };
        if entry.0 < 0 || entry.0 > entry_limit(self.index.ledger(ledger)) {
            return Err(AddError::EntryInvalid);
        }
        let needs_key = self.check_ledger(ledger, master_key, Some(options.recovery))?;
        let mut size = record::record_size(body.len());
        if needs_key {
            size += record::record_size(MASTER_KEY_SIZE);
        }
        self.reserve(size, if needs_key { 2 } else { 1 })?;
        if needs_key {
            self.create_ledger(ledger, master_key);
        }
        // The writer's LAC, from the body (BookKeeper §4.1); -1 (none) if it is too short.
        let last_add_confirmed = wire::entry_body_last_add_confirmed(body).unwrap_or(-1);
        let staged = Staged {
            token: Some(token),
            kind: RecordKind::Entry,
            ledger,
            entry,
            location: self.location_next(),
            payload_size: 0,
            deferred: options.deferred,
            last_add_confirmed,
        };
        self.stage(staged, body);
        let state = self.index.ledger_mut(ledger).expect("created above");
        state.entry_staged_max = state.entry_staged_max.max(entry.0);
        Ok(())
    }

    /// Fences a ledger (creating it with `master_key` if unknown). Normal adds are refused
    /// from now on; the token is reported durable once the fence record is.
    pub fn fence(
        &mut self,
        token: u64,
        ledger: LedgerId,
        master_key: &[u8; MASTER_KEY_SIZE],
    ) -> Result<(), AddError> {
        self.check_writable()?;
        let needs_key = self.check_ledger(ledger, master_key, None)?;
        let key_size = if needs_key {
            record::record_size(MASTER_KEY_SIZE)
        } else {
            0
        };
        self.reserve(record::record_size(0) + key_size, 2)?;
        if needs_key {
            self.create_ledger(ledger, master_key);
        }
        self.index.ledger_mut(ledger).expect("exists").fenced = true;
        self.stage_meta(Some(token), RecordKind::Fence, ledger, ENTRY_ID_FENCE, &[]);
        Ok(())
    }

    /// Journals an explicit-LAC body (v3 WRITE_LAC); durable like an add.
    pub fn write_lac(
        &mut self,
        token: u64,
        ledger: LedgerId,
        master_key: &[u8; MASTER_KEY_SIZE],
        body: &[u8],
    ) -> Result<(), AddError> {
        self.check_writable()?;
        if !self.fits_segment(body.len()) {
            return Err(AddError::TooLarge);
        }
        let needs_key = self.check_ledger(ledger, master_key, None)?;
        let key_size = if needs_key {
            record::record_size(MASTER_KEY_SIZE)
        } else {
            0
        };
        self.reserve(record::record_size(body.len()) + key_size, 2)?;
        if needs_key {
            self.create_ledger(ledger, master_key);
        }
        let location = self.location_next();
        let staged = Staged {
            token: Some(token),
            kind: RecordKind::ExplicitLac,
            ledger,
            entry: ENTRY_ID_EXPLICIT_LAC,
            location,
            payload_size: 0,
            deferred: false,
            last_add_confirmed: wire::explicit_lac_body_last_add_confirmed(body).unwrap_or(-1),
        };
        self.stage(staged, body);
        Ok(())
    }

    /// FORCE_LEDGER: the token is reported durable once everything staged before it is.
    pub fn force(&mut self, token: u64, ledger: LedgerId) -> Result<(), AddError> {
        self.check_writable()?;
        if self.index.ledger(ledger).is_none() {
            return Err(AddError::NoLedger);
        }
        self.reserve(record::record_size(0), 1)?;
        self.stage_meta(
            Some(token),
            RecordKind::ForceMarker,
            ledger,
            ENTRY_ID_FORCE,
            &[],
        );
        Ok(())
    }

    /// True when a record of `payload_size` bytes could be staged now without waiting.
    #[must_use]
    pub fn can_stage(&self, payload_size: usize) -> bool {
        let size = record::record_size(payload_size.min(RECORD_PAYLOAD_SIZE_MAX));
        let size = size + record::record_size(MASTER_KEY_SIZE);
        match self.staging {
            Some(slot) => self.fits(slot, size, 2) || self.order.len() <= self.in_flight_max(),
            None => self.order.len() <= self.in_flight_max() && !self.buffers_free.is_empty(),
        }
    }

    /// A record (with a ledger-key record before it) must fit an empty segment.
    fn fits_segment(&self, payload_size: usize) -> bool {
        if payload_size > RECORD_PAYLOAD_SIZE_MAX {
            return false;
        }
        let size = record::record_size(payload_size) + record::record_size(MASTER_KEY_SIZE);
        let room = self.config.segment_size - to_u64(SEGMENT_HEADER_SIZE);
        to_u64(align_up(size, SECTOR_SIZE)) <= room
    }

    fn in_flight_max(&self) -> usize {
        self.config.commits_in_flight_max
    }

    fn check_writable(&self) -> Result<(), AddError> {
        if self.poisoned {
            return Err(AddError::Poisoned);
        }
        if self.read_only {
            return Err(AddError::ReadOnly);
        }
        Ok(())
    }

    /// Checks the key and fencing of an existing ledger; returns true if it must be created.
    /// `recovery` is `Some` for adds (a fenced ledger refuses non-recovery adds).
    fn check_ledger(
        &self,
        ledger: LedgerId,
        master_key: &[u8; MASTER_KEY_SIZE],
        recovery: Option<bool>,
    ) -> Result<bool, AddError> {
        let Some(state) = self.index.ledger(ledger) else {
            return Ok(true);
        };
        if state.master_key != *master_key {
            return Err(AddError::KeyMismatch);
        }
        if state.fenced && recovery == Some(false) {
            return Err(AddError::Fenced);
        }
        Ok(false)
    }

    fn create_ledger(&mut self, ledger: LedgerId, master_key: &[u8; MASTER_KEY_SIZE]) {
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

    fn stage_meta(
        &mut self,
        token: Option<u64>,
        kind: RecordKind,
        ledger: LedgerId,
        entry: EntryId,
        payload: &[u8],
    ) {
        let location = self.location_next();
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

    fn location_next(&self) -> Location {
        let slot = self.staging.expect("reserve ran first");
        let commit = &self.commits[slot];
        let position = commit.position + to_u64(commit.length);
        Location {
            segment: commit.segment,
            position: Position(position),
        }
    }

    fn fits(&self, slot: usize, size: usize, records: usize) -> bool {
        let commit = &self.commits[slot];
        let end = commit.position + to_u64(align_up(commit.length + size, SECTOR_SIZE));
        commit.length + size <= BATCH_BYTES_MAX
            && commit.records.len() + records <= BATCH_RECORDS_MAX
            && end <= self.config.segment_size
    }
}

impl<D: Disk> Journal<D> {
    /// Makes room for `size` bytes in `records` records in the staging commit, submitting a
    /// full staging commit or opening a new one (on the next segment if this one is full).
    fn reserve(&mut self, size: usize, records: usize) -> Result<(), AddError> {
        if let Some(slot) = self.staging {
            if self.fits(slot, size, records) {
                return Ok(());
            }
            if self.order.len() > self.in_flight_max() {
                self.stats.staging_full += 1;
                return Err(AddError::StagingFull);
            }
            self.submit_staging();
            if self.staging.is_some() {
                self.stats.staging_full += 1;
                return Err(AddError::StagingFull);
            }
            self.check_writable()?;
        }
        self.staging_open(size)?;
        let slot = self.staging.expect("opened");
        assert!(
            self.fits(slot, size, records),
            "an empty commit holds any single add"
        );
        Ok(())
    }

    fn staging_open(&mut self, size: usize) -> Result<(), AddError> {
        assert!(self.staging.is_none());
        let Some(&buffer) = self.buffers_free.last() else {
            // Every buffer is cached: evict the oldest cached commit.
            let Some(cached) = self.cache.pop_front() else {
                self.stats.staging_full += 1;
                return Err(AddError::StagingFull);
            };
            self.buffers_free.push(cached.buffer);
            return self.staging_open(size);
        };
        if self.order.len() > self.in_flight_max() {
            self.stats.staging_full += 1;
            return Err(AddError::StagingFull);
        }
        let end = self.position_next + to_u64(align_up(size, SECTOR_SIZE));
        if end > self.config.segment_size {
            let Some(spare) = self.spares.pop_front() else {
                self.stats.staging_full += 1;
                return Err(if self.read_only {
                    AddError::ReadOnly
                } else {
                    AddError::StagingFull
                });
            };
            self.segment_active = spare;
            self.position_next = to_u64(SEGMENT_HEADER_SIZE);
        }
        self.buffers_free.pop();
        let slot = (0..self.commits.len()).find(|&i| self.commits[i].state == CommitState::Free);
        let slot = slot.expect("a free commit slot exists when order is not full");
        let commit = &mut self.commits[slot];
        commit.state = CommitState::Staging;
        commit.buffer = buffer;
        commit.segment = self.segment_active;
        commit.position = self.position_next;
        commit.length = 0;
        commit.length_aligned = 0;
        commit.records.clear();
        commit.written = false;
        commit.synced = false;
        commit.written_reported = false;
        commit.opened_at = Some(Instant::now());
        commit.submitted_at = None;
        self.order.push_back(slot);
        self.staging = Some(slot);
        Ok(())
    }

    fn stage(&mut self, mut staged: Staged, payload: &[u8]) {
        let slot = self.staging.expect("reserve ran first");
        let size = record::record_size(payload.len());
        assert!(self.fits(slot, size, 1));
        let commit = &mut self.commits[slot];
        let location = Location {
            segment: commit.segment,
            position: Position(commit.position + to_u64(commit.length)),
        };
        assert_eq!(location, staged.location);
        let header = RecordHeader {
            kind: staged.kind,
            checksum_payload: 0,
            payload_size: u32::try_from(payload.len()).expect("bounded by the record limit"),
            checksum_previous: self.checksum_previous,
            sequence: self.sequence_next,
            ledger: staged.ledger,
            entry: staged.entry,
            location,
            commit_first: commit.records.is_empty(),
        };
        let start = commit.length;
        let buffer = self.disk.buffer_mut(commit.buffer);
        self.checksum_previous = record::encode(&mut buffer[start..start + size], &header, payload);
        self.sequence_next = Sequence(self.sequence_next.0 + 1);
        staged.payload_size = header.payload_size;
        commit.length += size;
        commit.records.push(staged);
        self.stats.records += 1;
    }

    /// Submits the staging commit if a commit slot is free, drives segment preparation, and
    /// hands everything queued to the kernel in one submit.
    pub fn submit(&mut self) {
        if self.poisoned {
            return;
        }
        if let Some(slot) = self.staging {
            let in_flight = self.order.len() - 1;
            if !self.commits[slot].records.is_empty() && in_flight < self.in_flight_max() {
                if self.zero_ahead_blocks(slot) {
                    // The zero write lands in a few milliseconds; its completion brings the
                    // shard back here. Writing now could let the zeros land after the data.
                    self.stats.zero_ahead_waits += 1;
                } else {
                    self.submit_staging();
                }
            }
        }
        self.prepare_drive();
        self.zero_ahead_drive();
        if self.disk.flush().is_err() {
            self.poison();
        }
    }

    fn submit_staging(&mut self) {
        let slot = self.staging.expect("a staging commit");
        let commit = &mut self.commits[slot];
        assert!(!commit.records.is_empty());
        let aligned = align_up(commit.length, SECTOR_SIZE);
        let length = commit.length;
        let buffer = commit.buffer;
        // Sector padding must be zero: recovery reads it as "no record here".
        self.disk.buffer_mut(buffer)[length..aligned].fill(0);
        let commit = &mut self.commits[slot];
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
        let (segment, position) = (commit.segment, commit.position);
        match self
            .disk
            .submit_write(token, segment, position, buffer, aligned, sync)
        {
            Ok(()) => {}
            Err(SubmitError::QueueFull) => return,
            Err(SubmitError::Io(_)) => {
                self.poison();
                return;
            }
        }
        let commit = &mut self.commits[slot];
        commit.state = CommitState::InFlight;
        let now = Instant::now();
        commit.submitted_at = Some(now);
        if let Some(opened_at) = commit.opened_at {
            self.stats.commit_staging_us_total += duration_us(now - opened_at);
        }
        self.position_next = position + to_u64(aligned);
        self.staging = None;
        self.stats.commits += 1;
        self.stats.bytes_written += to_u64(aligned);
    }

    /// Processes finished disk operations and queues the resulting events.
    pub fn poll(&mut self) {
        let mut completions = std::mem::take(&mut self.completions);
        self.disk.poll(&mut completions);
        for completion in completions.drain(..) {
            let slot = to_usize(completion.token & !TOKEN_KIND_MASK);
            match completion.token & TOKEN_KIND_MASK {
                TOKEN_COMMIT => self.on_commit(slot, completion.op, completion.result),
                TOKEN_READ => self.on_read(slot, completion.result),
                TOKEN_PREPARE => self.on_prepare(completion.op, completion.result),
                TOKEN_ZERO_AHEAD => self.on_zero_ahead(completion.result),
                _ => unreachable!("unknown disk token {:#x}", completion.token),
            }
        }
        self.completions = completions;
        self.commits_advance();
    }

    fn on_commit(&mut self, slot: usize, op: DiskOp, result: i32) {
        if self.poisoned {
            return;
        }
        let commit = &mut self.commits[slot];
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
            DiskOp::Read => unreachable!("commits do not read"),
        };
        if !ok {
            // A failed or short write, or a failed (or cancelled) fsync: never retried.
            self.poison();
        }
    }

    /// Reports commits in journal order: `Written` for deferred records once a commit and all
    /// before it are written, `Durable` once they are all written and synced.
    fn commits_advance(&mut self) {
        for &slot in &self.order {
            let commit = &mut self.commits[slot];
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
        while let Some(&slot) = self.order.front() {
            let commit = &self.commits[slot];
            if commit.state != CommitState::InFlight || !(commit.written && commit.synced) {
                break;
            }
            self.order.pop_front();
            self.commit_durable(slot);
        }
    }

    fn commit_durable(&mut self, slot: usize) {
        let commit = &mut self.commits[slot];
        if let Some(submitted_at) = commit.submitted_at {
            self.stats.commit_io_us_total += duration_us(submitted_at.elapsed());
        }
        for staged in &commit.records {
            match staged.kind {
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
        if self.config.read_cache_buffers == 0 {
            self.buffers_free.push(cached.buffer);
            return;
        }
        if self.cache.len() == self.config.read_cache_buffers {
            let evicted = self.cache.pop_front().expect("non-empty cache");
            self.buffers_free.push(evicted.buffer);
        }
        self.cache.push_back(cached);
    }

    /// After a failed write or sync nothing is acknowledged again: every record not yet
    /// reported fails, and every later add returns `Poisoned`.
    fn poison(&mut self) {
        if self.poisoned {
            return;
        }
        self.poisoned = true;
        for &slot in &self.order {
            let commit = &self.commits[slot];
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
        self.order.clear();
        self.staging = None;
    }

    /// Moves queued events into `out` (swap; no allocation when `out` has capacity).
    pub fn events_swap(&mut self, out: &mut Vec<Event>) {
        assert!(
            out.is_empty(),
            "events must be consumed before the next swap"
        );
        std::mem::swap(&mut self.events, out);
    }
}

impl<D: Disk> Journal<D> {
    /// Reads a durable entry: from a cached commit buffer at once, or through a disk read that
    /// reports `Event::ReadDone`. An indexed entry that cannot be read back intact is
    /// `ReadError::Io`, never `NoEntry`.
    pub fn read(
        &mut self,
        token: u64,
        ledger: LedgerId,
        target: ReadTarget,
    ) -> Result<ReadOutcome<'_>, ReadError> {
        let state = self.index.ledger(ledger).ok_or(ReadError::NoLedger)?;
        let (entry, kind) = match target {
            ReadTarget::Entry(entry) => (entry, RecordKind::Entry),
            ReadTarget::Last if state.entry_last < 0 => return Err(ReadError::NoEntry),
            ReadTarget::Last => (EntryId(state.entry_last), RecordKind::Entry),
            ReadTarget::ExplicitLac => (ENTRY_ID_EXPLICIT_LAC, RecordKind::ExplicitLac),
        };
        let slot = match target {
            ReadTarget::ExplicitLac => state.explicit_lac,
            ReadTarget::Entry(_) | ReadTarget::Last => state.slot(entry),
        };
        let slot = slot.ok_or(ReadError::NoEntry)?;
        let location = slot.location();
        let expected = Expected {
            kind,
            ledger,
            entry,
            location,
        };
        if let Some(cached) = self.cached_record(location, slot.payload_size()) {
            if verify(cached, expected).is_some() {
                self.stats.reads_cached += 1;
                let cached = self
                    .cached_record(location, slot.payload_size())
                    .expect("found");
                let body = verify(cached, expected).expect("verified");
                return Ok(ReadOutcome::Ready { entry, body });
            }
        }
        let read_slot = self.reads_free.pop().ok_or(ReadError::Busy)?;
        let read = &mut self.reads[read_slot as usize];
        assert_eq!(read.state, ReadState::Free);
        let size = record::record_size(slot.payload_size() as usize);
        let start = crate::stdx::align_down_u64(location.position.0, to_u64(SECTOR_SIZE));
        let end = crate::stdx::align_up_u64(location.position.0 + to_u64(size), 4096);
        *read = Read {
            state: ReadState::InFlight,
            token,
            ledger,
            entry,
            kind,
            location,
            payload_size: slot.payload_size(),
            buffer: read.buffer,
            start,
            length: to_usize(end - start),
            attempts: 0,
        };
        self.read_submit(read_slot as usize);
        self.stats.reads_disk += 1;
        Ok(ReadOutcome::Pending)
    }

    fn cached_record(&self, location: Location, payload_size: u32) -> Option<&[u8]> {
        let size = to_u64(record::record_size(payload_size as usize));
        let cached = self.cache.iter().rev().find(|cached| {
            cached.segment == location.segment
                && cached.position <= location.position.0
                && location.position.0 + size <= cached.position + to_u64(cached.length)
        })?;
        let offset = to_usize(location.position.0 - cached.position);
        Some(&self.disk.buffer(cached.buffer)[offset..offset + to_usize(size)])
    }

    fn read_submit(&mut self, slot: usize) {
        let read = &mut self.reads[slot];
        read.attempts += 1;
        read.state = ReadState::InFlight;
        let token = TOKEN_READ | to_u64(slot);
        let (segment, start, buffer, length) =
            (read.location.segment, read.start, read.buffer, read.length);
        if self
            .disk
            .submit_read(token, segment, start, buffer, length)
            .is_err()
        {
            let read = &mut self.reads[slot];
            read.state = ReadState::Failed(ReadError::Busy);
            self.events.push(Event::ReadDone {
                token: read.token,
                slot: ReadSlot(slot_u32(slot)),
            });
        }
    }

    fn on_read(&mut self, slot: usize, result: i32) {
        let read = self.reads[slot];
        assert_eq!(read.state, ReadState::InFlight);
        let offset = to_usize(read.location.position.0 - read.start);
        let size = record::record_size(read.payload_size as usize);
        let complete = usize::try_from(result).is_ok_and(|count| count >= offset + size);
        let intact = complete && {
            let bytes = &self.disk.buffer(read.buffer)[offset..offset + size];
            verify(bytes, Expected::of(&read)).is_some()
        };
        if !intact {
            self.stats.read_checksum_failures += u64::from(complete);
            if read.attempts < 2 {
                // One retry: a transient bad read (misdirected, flipped in transit) passes.
                self.read_submit(slot);
                return;
            }
            self.reads[slot].state = ReadState::Failed(ReadError::Io);
        } else {
            self.reads[slot].state = ReadState::Done;
        }
        self.events.push(Event::ReadDone {
            token: read.token,
            slot: ReadSlot(slot_u32(slot)),
        });
    }

    /// The result of a finished disk read: the entry id and its stored body.
    pub fn read_result(&self, slot: ReadSlot) -> Result<(EntryId, &[u8]), ReadError> {
        let read = &self.reads[slot.0 as usize];
        match read.state {
            ReadState::Done => {
                let offset = to_usize(read.location.position.0 - read.start);
                let size = record::record_size(read.payload_size as usize);
                let bytes = &self.disk.buffer(read.buffer)[offset..offset + size];
                let body = verify(bytes, Expected::of(read));
                Ok((read.entry, body.expect("verified at completion")))
            }
            ReadState::Failed(error) => Err(error),
            ReadState::Free | ReadState::InFlight => panic!("read {slot:?} is not finished"),
        }
    }

    /// Frees a finished read's slot.
    pub fn read_release(&mut self, slot: ReadSlot) {
        let read = &mut self.reads[slot.0 as usize];
        assert!(matches!(read.state, ReadState::Done | ReadState::Failed(_)));
        read.state = ReadState::Free;
        self.reads_free.push(slot.0);
    }

    fn prepare_drive(&mut self) {
        if self.prepare.is_none() && self.spares.is_empty() {
            if self.read_only {
                self.submits_since_create_failure += 1;
                if self.submits_since_create_failure < SEGMENT_RETRY_INTERVAL_SUBMITS {
                    return;
                }
            }
            self.prepare_start();
        }
        let Some(prepare) = self.prepare else { return };
        let size = self.config.segment_size;
        let segment = prepare.segment;
        match prepare.phase {
            PreparePhase::Zeroing => {
                // Zero at full speed, several chunks in flight: the interference with commits'
                // flushes lasts a short burst per segment instead of spreading over all of them.
                let mut prepare = prepare;
                while prepare.in_flight < ZERO_WRITES_IN_FLIGHT_MAX
                    && prepare.position_submitted < size
                {
                    let position = prepare.position_submitted;
                    let length = (size - position).min(to_u64(ZERO_CHUNK_SIZE));
                    let length = to_usize(length);
                    if self
                        .disk
                        .submit_zero(TOKEN_PREPARE, segment, position, length)
                        .is_err()
                    {
                        break;
                    }
                    prepare.position_submitted += to_u64(length);
                    prepare.in_flight += 1;
                }
                self.prepare = Some(prepare);
            }
            PreparePhase::Header if prepare.in_flight == 0 => {
                let header = self.disk.buffer_mut(self.header_buffer);
                crate::segment::encode_segment_header(header, segment, size);
                let buffer = self.header_buffer;
                let (length, sync) = (SEGMENT_HEADER_SIZE, WriteSync::Dsync);
                if self
                    .disk
                    .submit_write(TOKEN_PREPARE, segment, 0, buffer, length, sync)
                    .is_ok()
                {
                    self.prepare.as_mut().expect("present").in_flight = 1;
                }
            }
            PreparePhase::Syncing if prepare.in_flight == 0 => {
                if self.disk.submit_sync(TOKEN_PREPARE, segment).is_ok() {
                    self.prepare.as_mut().expect("present").in_flight = 1;
                }
            }
            PreparePhase::Header | PreparePhase::Syncing => {}
        }
    }

    /// True when the staging commit in `slot` would overlap the zero-ahead write in flight.
    fn zero_ahead_blocks(&self, slot: usize) -> bool {
        let Some((segment, start, end)) = self.zero_in_flight else {
            return false;
        };
        let commit = &self.commits[slot];
        let commit_end = commit.position + to_u64(align_up(commit.length, SECTOR_SIZE));
        segment == commit.segment && commit.position < end && start < commit_end
    }

    /// Zero-ahead: with fallocated (unwritten) segments, the first write to each block
    /// converts its extent, and that conversion is metadata the commit's fdatasync must also
    /// journal: at one commit in flight that is ~1.4x the disk's write+flush floor instead of
    /// ~1.0x. So, while the journal is not busy, zero the active segment ahead of the write
    /// head, one chunk at a time, keeping at most `ZERO_AHEAD_WINDOW_MAX` bytes ready.
    /// Under load (every commit slot busy) it pauses and commits convert extents themselves,
    /// so zeroing never competes with a saturated journal for the disk, never delays start
    /// (unlike zero-filling whole segments), and is only an optimisation: nothing depends on
    /// a block having been zeroed.
    fn zero_ahead_drive(&mut self) {
        if !self.zero_ahead_enabled || self.zero_in_flight.is_some() || self.poisoned {
            return;
        }
        if self.commit_slots_full() {
            return;
        }
        if self.zero_frontier_segment != self.segment_active {
            self.zero_frontier_segment = self.segment_active;
            self.zero_frontier = 0;
        }
        let staged_end = self.staging.map_or(self.position_next, |slot| {
            let commit = &self.commits[slot];
            commit.position + to_u64(align_up(commit.length, SECTOR_SIZE))
        });
        let size = self.config.segment_size;
        let chunk = to_u64(ZERO_CHUNK_SIZE).min(size / ZERO_AHEAD_CHUNKS_PER_SEGMENT_MIN);
        let chunk = chunk / to_u64(SECTOR_SIZE) * to_u64(SECTOR_SIZE);
        let start = self.zero_frontier.max(staged_end + chunk);
        let start = to_u64(align_up(to_usize(start), SECTOR_SIZE));
        if chunk == 0 || start >= size || start >= self.position_next + ZERO_AHEAD_WINDOW_MAX {
            return;
        }
        let length = (size - start).min(chunk);
        let segment = self.segment_active;
        let result = self
            .disk
            .submit_zero(TOKEN_ZERO_AHEAD, segment, start, to_usize(length));
        if result.is_ok() {
            self.zero_in_flight = Some((segment, start, start + length));
            self.zero_frontier = start + length;
        }
    }

    fn on_zero_ahead(&mut self, result: i32) {
        let (_, start, end) = self
            .zero_in_flight
            .take()
            .expect("a zero-ahead write in flight");
        if u64::try_from(result).ok() == Some(end - start) {
            self.stats.zero_ahead_bytes += end - start;
        } else {
            // Nothing relies on the zeros: stop the optimisation, keep the journal running.
            self.zero_ahead_enabled = false;
            self.stats.zero_ahead_failures += 1;
        }
    }

    fn prepare_start(&mut self) {
        self.submits_since_create_failure = 0;
        let segment = self.segment_id_max.next();
        match self.disk.segment_create(segment, self.config.segment_size) {
            Ok(()) => {
                self.segment_id_max = segment;
                let (done, phase) = if self.config.segment_zero_fill {
                    (0, PreparePhase::Zeroing)
                } else {
                    (self.config.segment_size, PreparePhase::Header)
                };
                self.prepare = Some(Prepare {
                    segment,
                    position_submitted: done,
                    bytes_completed: done,
                    phase,
                    in_flight: 0,
                });
            }
            Err(_) => {
                // Disk full (or unwritable): go read-only; reads go on, creation is retried.
                self.segment_id_max = segment;
                self.read_only = self.spares.is_empty();
                self.stats.segment_create_failures += 1;
            }
        }
    }

    fn on_prepare(&mut self, op: DiskOp, result: i32) {
        let prepare = self.prepare.as_mut().expect("a preparation is running");
        assert!(prepare.in_flight > 0);
        prepare.in_flight -= 1;
        if result < 0 {
            // Abandon this segment once its last write is back; `prepare_drive` starts over
            // with a new id (the temporary file is deleted at the next open).
            if prepare.in_flight == 0 {
                self.prepare = None;
            } else {
                prepare.position_submitted = u64::MAX;
            }
            self.read_only = self.spares.is_empty();
            self.stats.segment_create_failures += 1;
            return;
        }
        let size = self.config.segment_size;
        match (prepare.phase, op) {
            (PreparePhase::Zeroing, DiskOp::Write) => {
                prepare.bytes_completed += u64::try_from(result).expect("non-negative");
                if prepare.bytes_completed == size && prepare.in_flight == 0 {
                    prepare.phase = PreparePhase::Header;
                }
                if prepare.position_submitted == u64::MAX && prepare.in_flight == 0 {
                    self.prepare = None;
                }
            }
            (PreparePhase::Header, DiskOp::Write) => prepare.phase = PreparePhase::Syncing,
            (PreparePhase::Syncing, DiskOp::Sync) => {
                let segment = prepare.segment;
                self.prepare = None;
                if self.disk.segment_publish(segment).is_ok() {
                    self.spares.push_back(segment);
                    self.read_only = false;
                    self.stats.segments_created += 1;
                } else {
                    self.read_only = self.spares.is_empty();
                    self.stats.segment_create_failures += 1;
                }
            }
            (phase, op) => unreachable!("prepare {phase:?} got {op:?}"),
        }
    }

    /// A ledger's state.
    #[must_use]
    pub fn ledger(&self, ledger: LedgerId) -> Option<&Ledger> {
        self.index.ledger(ledger)
    }

    /// The whole index (tests compare it across restarts).
    #[must_use]
    pub fn index(&self) -> &Index {
        &self.index
    }

    /// True after a write or sync failure.
    #[must_use]
    pub fn is_poisoned(&self) -> bool {
        self.poisoned
    }

    /// Makes the next `submit` retry creating a segment now if the journal is read-only,
    /// instead of after `SEGMENT_RETRY_INTERVAL_SUBMITS` submits: the server calls this on
    /// its clock, so an idle read-only shard notices returned space within a tick.
    pub fn segment_retry_now(&mut self) {
        if self.read_only {
            self.submits_since_create_failure = SEGMENT_RETRY_INTERVAL_SUBMITS;
        }
    }

    /// True while no segment can be created (disk full): adds get `ReadOnly`.
    #[must_use]
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// True when no commit is staged or in flight, and no zero-ahead write is in flight.
    #[must_use]
    pub fn is_idle(&self) -> bool {
        self.order.is_empty() && self.zero_in_flight.is_none()
    }

    /// The oldest commit submitted and not yet durable, with the stage it waits in: what the
    /// server's stall watchdog reports. `None` when no commit is in flight.
    #[must_use]
    pub fn commit_oldest_in_flight(&self) -> Option<CommitInFlight> {
        let &slot = self.order.front()?;
        let commit = &self.commits[slot];
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

    /// True when every commit slot is in flight: nothing staged now can be submitted before
    /// a commit completes.
    #[must_use]
    pub fn commit_slots_full(&self) -> bool {
        self.order.len() - usize::from(self.staging.is_some()) >= self.in_flight_max()
    }

    /// Records staged and not yet submitted.
    #[must_use]
    pub fn staged_records(&self) -> usize {
        self.staging
            .map_or(0, |slot| self.commits[slot].records.len())
    }

    /// Counters.
    #[must_use]
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// The disk (tests use it to inject faults).
    pub fn disk_mut(&mut self) -> &mut D {
        &mut self.disk
    }

    /// Gives the disk back (tests crash it).
    pub fn into_disk(self) -> D {
        self.disk
    }
}

fn slot_u32(slot: usize) -> u32 {
    u32::try_from(slot).expect("read slots are few")
}

/// The identity of the record a read expects at a location.
#[derive(Clone, Copy, Debug)]
struct Expected {
    kind: RecordKind,
    ledger: LedgerId,
    entry: EntryId,
    location: Location,
}

impl Expected {
    fn of(read: &Read) -> Expected {
        Expected {
            kind: read.kind,
            ledger: read.ledger,
            entry: read.entry,
            location: read.location,
        }
    }
}

/// Verifies that `bytes` hold the record we expect there (an entry, or an explicit-LAC body)
/// and returns its payload. Identity checks catch a misdirected read or write that is
/// internally valid.
fn verify(bytes: &[u8], expected: Expected) -> Option<&[u8]> {
    let (header, _, payload) = record::decode(bytes).ok()?;
    let matches = header.kind == expected.kind
        && header.ledger == expected.ledger
        && header.entry == expected.entry
        && header.location == expected.location;
    matches.then_some(payload)
}
