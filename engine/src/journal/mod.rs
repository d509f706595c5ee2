//! `Journal`: the API a shard uses. Stage adds, submit one commit, poll completions, read.
//!
//! Group commit: records staged between two `submit` calls go into one contiguous buffer that
//! becomes one O_DIRECT write (with RWF_DSYNC, or linked to an fdatasync). Up to
//! `commits_in_flight_max` commits run at once; while they do, new records keep accumulating
//! in the staging buffer, so batches grow with load and no timer is needed. Commits are
//! reported strictly in journal order: a commit's records are durable only when it and every
//! earlier commit completed. Any failed or short write, or failed sync, poisons the journal.
//!
//! `Journal` composes state machines, each with its own state in its own file:
//!
//! - `commit.rs`, `Commits`: staging, group commit, ordered completion, poisoning;
//! - `reads.rs`, `Reads`: disk reads and the cache of durable commit buffers, with
//!   `read_ahead.rs`, `ReadAhead`: the windows a sequential scan is read in;
//! - `segments.rs`, `Segments`: background preparation of the next segment, the spares, and
//!   the read-only state while no segment can be created;
//! - `zero_ahead.rs`, `ZeroAhead`: zeroing the active segment ahead of the write head;
//! - `seal.rs`, `dead.rs`, `compact.rs`, `index_pages.rs`: sealing and the checkpoint, dead
//!   segments, compaction and sorting, the sealed-index page cache (ARCHITECTURE.md).
//!
//! Each struct's fields are private to its file. What a state machine does with its own state
//! is a method of its struct; what also needs the disk, the events, the counters or another
//! state machine is passed those, or, for the commit pipeline, which touches the index, the
//! read cache and the spares, is a method of `Journal` in `commit.rs`.
//!
//! This file holds the public API and the dispatch: `submit` drives the state machines in a
//! fixed order, and `poll` hands each disk completion to the one its token names.
//! `queries.rs` holds the read-only accessors the server asks between its turns.

mod commit;
mod compact;
mod damage;
mod dead;
mod event;
mod index_pages;
mod pressure;
mod queries;
mod read_ahead;
mod read_extent;
mod read_pace;
mod reads;
mod scrub;
mod seal;
mod segments;
mod stats;
mod zero_ahead;

pub use self::commit::{CommitInFlight, CommitStage};
pub use self::event::Event;
pub use self::pressure::SpaceReport;
pub use self::queries::ScrubState;
pub use self::reads::{ReadOutcome, ReadSlot, ReadTarget};
pub use self::scrub::DamageFound;
pub use self::stats::Stats;
pub use crate::ids::{ENTRY_ID_EXPLICIT_LAC, ENTRY_ID_FENCE, ENTRY_ID_FORCE, ENTRY_ID_LEDGER_KEY};

use self::commit::{Commits, Staged};
use self::compact::Compaction;
use self::index_pages::IndexPages;
use self::reads::{Expected, Reads, Resolved, Scan};
use self::seal::Seal;
use self::segments::{Segments, Spare};
use self::zero_ahead::ZeroAhead;
use crate::config::Config;
use crate::constants::{
    BATCH_BYTES_MAX, BATCH_RECORDS_MAX, COMPACTION_WINDOW_SIZE, ENTRY_GAP_MAX, MASTER_KEY_SIZE,
    READ_AHEAD_WINDOW_SIZE, READ_BUFFER_SIZE, READ_WINDOW_WAITERS_MAX, RECORD_PAYLOAD_SIZE_MAX,
    SEAL_CHUNK_SIZE, SECTOR_SIZE, SEGMENT_HEADER_SIZE,
};
use crate::disk::{BufferId, Disk, DiskCompletion};
use crate::error::{AddError, OpenError, ReadError};
use crate::ids::{EntryId, FileId, LedgerId};
use crate::index::{Index, Ledger};
use crate::record::{self, RecordKind};
use crate::recovery::OpenReport;
use crate::segment::CommitBlock;
use crate::stdx::{align_up, to_u64, to_usize};

// A disk token is the kind of operation (which state machine owns it) and the owner's slot.
const TOKEN_COMMIT: u64 = 1 << 24;
const TOKEN_READ: u64 = 2 << 24;
const TOKEN_PREPARE: u64 = 3 << 24;
const TOKEN_ZERO_AHEAD: u64 = 4 << 24;
const TOKEN_SEAL: u64 = 5 << 24;
const TOKEN_COMPACT: u64 = 6 << 24;
const TOKEN_DEAD: u64 = 7 << 24;
const TOKEN_READ_AHEAD: u64 = 8 << 24;
const TOKEN_SCRUB: u64 = 9 << 24;
const TOKEN_KIND_MASK: u64 = 0xFF << 24;

/// How an add is acknowledged.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AddOptions {
    /// A recovery add: accepted on a fenced ledger (the key is still checked).
    pub recovery: bool,
    /// DEFERRED_SYNC: report `Written` after the write, before fdatasync.
    pub deferred: bool,
}

/// One shard's journal. See the module docs.
#[derive(Debug)]
pub struct Journal<D: Disk> {
    disk: D,
    config: Config,
    /// Every ledger's state and where each durable entry lives.
    index: Index,
    /// Staging, group commit, ordered completion, poisoning.
    commits: Commits,
    /// Disk reads and the read cache.
    reads: Reads,
    /// Preparation of the next segment, the spares, the read-only state.
    segments: Segments,
    zero_ahead: ZeroAhead,
    /// Writing sealed segments' indexes and the checkpoint.
    seal: Seal,
    /// Slot-table pages of sealed indexes read recently.
    index_pages: IndexPages,
    /// Rewriting sealed segments that are mostly dead.
    compaction: Compaction,
    /// Reading sealed segments back to find damage.
    scrub: scrub::Scrub,
    /// Dead segments' files being removed or reused.
    dead: dead::DeadFiles,
    /// The disk-pressure level and the write head's wait for space.
    pressure: pressure::Pressure,
    /// What open found and did, for the server's log.
    open_report: OpenReport,
    /// Events queued for `events_swap`.
    events: Vec<Event>,
    /// Scratch for `poll`, allocated once.
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
        sizes.push(SEAL_CHUNK_SIZE);
        // Compaction's buffers exist only when compaction can run.
        let compaction_on = config.compaction_threshold_minor_per_mille > 0
            || config.compaction_threshold_major_per_mille > 0
            || config.sort_sealed;
        let compaction_sizes = if compaction_on {
            [config.compaction_buffer_size, COMPACTION_WINDOW_SIZE]
        } else {
            [SECTOR_SIZE, SECTOR_SIZE]
        };
        sizes.extend(compaction_sizes);
        // The scrubber's buffer exists only when it can run.
        sizes.push(if config.scrub_rate_max > 0 {
            crate::constants::SCRUB_BUFFER_SIZE
        } else {
            SECTOR_SIZE
        });
        let windows = sizes.len()..sizes.len() + config.read_ahead_windows;
        sizes.extend(std::iter::repeat_n(
            READ_AHEAD_WINDOW_SIZE,
            config.read_ahead_windows,
        ));
        disk.buffers_allocate(&sizes);
        let buffer_id = |index: usize| BufferId(u32::try_from(index).expect("few buffers"));
        let mut recovered = crate::recovery::recover(&mut disk, &config, buffer_id(0))?;
        if recovered.spares.is_empty() && segments::room_left(&mut disk, &config) {
            // One ready spare before serving: the first rollover never waits, and no zero-fill
            // runs behind the first segment's commits.
            let spare = recovered.segment_id_max.next();
            crate::recovery::create_blocking(&mut disk, spare, &config, buffer_id(0))?;
            disk.file_open(FileId::Segment(spare))
                .map_err(|error| OpenError::Io {
                    operation: "opening segment",
                    error,
                })?;
            recovered.spares.push(spare);
            if config.commit_block == CommitBlock::Small {
                recovered.small_blocks.push(spare);
            }
            recovered.segment_id_max = spare;
        }
        crate::recovery::small_blocks_check(&mut disk, &config, &recovered, buffer_id(0))?;
        let active_block = recovered.commit_block_of(recovered.segment_active);
        let spares: Vec<Spare> = recovered
            .spares
            .iter()
            .map(|&segment| Spare {
                segment,
                recycled: recovered.recycled.contains(&segment),
                commit_block: recovered.commit_block_of(segment),
            })
            .collect();
        let read_buffers = commit_buffers..commit_buffers + config.reads_in_flight_max;
        let reads = Reads::new(
            read_buffers.map(buffer_id),
            config.read_cache_buffers,
            windows.map(buffer_id),
            config.read_pace_percent,
        );
        let commits = Commits::new(
            &config,
            (0..commit_buffers).rev().map(buffer_id).collect(),
            recovered.segment_active,
            active_block,
            recovered.position_next,
            recovered.sequence_next,
            recovered.checksum_previous,
            recovered.active_sequence_first,
        );
        let fixed_end = sizes.len() - config.read_ahead_windows;
        let header_buffer = buffer_id(fixed_end - 5);
        let seal_buffer = buffer_id(fixed_end - 4);
        let compaction = Compaction::new(buffer_id(fixed_end - 3), buffer_id(fixed_end - 2));
        let scrub = scrub::Scrub::new(
            config.scrub_rate_max > 0,
            buffer_id(fixed_end - 1),
            recovered.scrub,
            config.scrub_seed,
        );
        let seal = Seal::new(
            seal_buffer,
            recovered.resume,
            recovered.seal_queue,
            recovered.scrub,
        );
        let segments = Segments::new(
            spares,
            recovered.segment_id_max,
            header_buffer,
            config.commit_block,
        );
        let zero_ahead_enabled = config.zero_ahead && !config.segment_zero_fill;
        let mut zero_ahead = ZeroAhead::new(zero_ahead_enabled, recovered.segment_active);
        if recovered.recycled.contains(&recovered.segment_active) {
            zero_ahead.segment_written(recovered.segment_active, config.segment_size);
        }
        let events_max = (config.commits_in_flight_max + 1) * BATCH_RECORDS_MAX;
        let stats = Stats {
            torn_tail_truncations: u64::from(recovered.torn_tail_truncated),
            ..Stats::default()
        };
        assert!(recovered.position_next % active_block.size_u64() == 0);
        assert!(recovered.position_next >= to_u64(SEGMENT_HEADER_SIZE));
        let mut journal = Journal {
            disk,
            index: recovered.index,
            commits,
            reads,
            segments,
            zero_ahead,
            seal,
            index_pages: IndexPages::new(config.index_cache_pages),
            compaction,
            scrub,
            dead: dead::DeadFiles::new(recovered.replaced),
            pressure: pressure::Pressure::new(),
            open_report: recovered.report,
            events: Vec::with_capacity(
                events_max + config.reads_in_flight_max + READ_WINDOW_WAITERS_MAX,
            ),
            completions: Vec::with_capacity(events_max),
            stats,
            config,
        };
        journal.pressure_update();
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
            location: self.commits.location_next(),
            payload_size: 0,
            deferred: options.deferred,
            last_add_confirmed,
        };
        let location = staged.location;
        self.stage(staged, body);
        let state = self.index.ledger_mut(ledger).expect("created above");
        state.entry_staged_max = state.entry_staged_max.max(entry.0);
        if self.config.verify_digest_on_add {
            self.digest_verify_on_add(ledger, entry, location, body);
        }
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
        let location = self.commits.location_next();
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

    /// Deletes a ledger whose metadata is gone from the metadata store. At once: reads of it
    /// find no ledger, adds, fences and explicit LACs are refused as fenced, and its bytes stop
    /// counting as live in its sealed segments. Its tombstone is durable once the next
    /// checkpoint is (`deletions_pending` turns false); after that, sealed segments left with
    /// nothing live are removed. Returns false if the ledger was not here.
    pub fn delete_ledger(&mut self, ledger: LedgerId) -> bool {
        // No record of the ledger can lie beyond the segment the write head is in.
        let segment_last = self.commits.write_head().segment;
        let deleted = self.index.delete(ledger, segment_last);
        if deleted {
            self.seal.deleted();
            self.compaction.replan();
            self.stats.ledgers_deleted += 1;
        }
        deleted
    }

    /// True while a deletion is not yet durable in a checkpoint.
    #[must_use]
    pub fn deletions_pending(&self) -> bool {
        self.seal.deletions_pending()
    }

    /// True when a record of `payload_size` bytes could be staged now without waiting.
    #[must_use]
    pub fn can_stage(&self, payload_size: usize) -> bool {
        let size = record::record_size(payload_size.min(RECORD_PAYLOAD_SIZE_MAX));
        let size = size + record::record_size(MASTER_KEY_SIZE);
        self.commits.can_stage(size)
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

    fn check_writable(&self) -> Result<(), AddError> {
        if self.commits.is_poisoned() {
            return Err(AddError::Poisoned);
        }
        if self.space_exhausted() {
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
            // A deleted ledger is closed for good: its writer, if any is left, is told so.
            if self.index.is_deleted(ledger) {
                return Err(AddError::Fenced);
            }
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

    /// Submits the staging commit if a commit slot is free, drives segment preparation and
    /// zero-ahead, and hands everything queued to the kernel in one submit.
    pub fn submit(&mut self) {
        if self.commits.is_poisoned() {
            return;
        }
        if self.commits.staging_ready().is_some() {
            // Waits while a zero-ahead write in flight overlaps it (`submit_staging`).
            self.submit_staging();
        }
        if self.segments.start_due() {
            // Each new segment takes a segment of free space: the moment to look again.
            self.pressure_update();
            let recycled_from = self.segment_recycle_take();
            let (disk, stats) = (&mut self.disk, &mut self.stats);
            self.segments
                .start(disk, stats, &self.config, recycled_from);
        }
        let disk = &mut self.disk;
        self.segments.drive(disk, &self.config);
        // Zero-ahead pauses while poisoned and while every commit slot is busy, and stops
        // under disk pressure: it writes as many bytes again as the commits to spare them an
        // extent conversion, when the disk's writes are needed to give space back (on a
        // nearly full disk it was the largest share of the write amplification).
        if !self.commits.is_poisoned() && !self.commits.slots_full() {
            if self.pressure.per_mille() == 0 {
                let head = self.commits.write_head();
                self.zero_ahead.drive(disk, head, self.config.segment_size);
            }
            self.seal_drive();
            self.compact_drive();
            self.scrub_drive();
        } else if !self.commits.is_poisoned() && self.pressure.per_mille() > 0 {
            // Under pressure a steady writer would never leave compaction a turn, and space
            // it does not give back stops every writer at the floor.
            self.compact_drive();
        }
        self.pressure_blocked_track();
        if self.disk.flush().is_err() {
            self.poison();
        }
    }

    /// Processes finished disk operations and queues the resulting events.
    pub fn poll(&mut self) {
        let mut completions = std::mem::take(&mut self.completions);
        self.disk.poll(&mut completions);
        for completion in completions.drain(..) {
            let slot = to_usize(completion.token & !TOKEN_KIND_MASK);
            let (op, result) = (completion.op, completion.result);
            let (disk, stats) = (&mut self.disk, &mut self.stats);
            let kind = completion.token & TOKEN_KIND_MASK;
            // What the disk read, split between the readers and compaction's read-back: a
            // catch-up read's cost is its disk bytes per byte served (docs/metrics.md).
            if op == crate::disk::DiskOp::Read {
                let bytes = u64::try_from(result).unwrap_or(0);
                match kind {
                    TOKEN_READ | TOKEN_READ_AHEAD => stats.read_disk_bytes += bytes,
                    TOKEN_COMPACT => stats.compaction_bytes_read += bytes,
                    // Counted by the scrubber, which knows which reads it kept.
                    TOKEN_SCRUB => {}
                    _ => {}
                }
            }
            match kind {
                TOKEN_COMMIT => self.on_commit(slot, op, result),
                TOKEN_READ => self.read_on_complete(slot, result),
                TOKEN_READ_AHEAD => {
                    let events = &mut self.events;
                    self.reads
                        .window_on_complete(disk, stats, events, slot, result);
                }
                TOKEN_SEAL => self.seal_on_complete(op, result),
                TOKEN_COMPACT => {
                    if result >= 0 {
                        self.pressure.progress();
                    }
                    let done = self.stats.compactions_done;
                    self.compact_on_complete(op, result);
                    if self.stats.compactions_done != done {
                        // A swap gave space back.
                        self.pressure_update();
                    }
                }
                TOKEN_PREPARE => {
                    let recycle = self
                        .segments
                        .on_complete(disk, stats, &self.config, op, result);
                    if let Some(done) = recycle {
                        self.segment_recycle_done(done);
                    }
                }
                TOKEN_DEAD => {
                    if result >= 0 {
                        self.pressure.progress();
                    }
                    self.dead_on_complete(result);
                    self.pressure_update();
                }
                TOKEN_ZERO_AHEAD => self.zero_ahead.on_complete(stats, result),
                TOKEN_SCRUB => self.scrub_on_complete(result),
                _ => unreachable!("unknown disk token {:#x}", completion.token),
            }
        }
        self.completions = completions;
        self.commits_advance();
        // Durable commits earned the paced reads credit, or the server turned pacing off.
        if self.reads.has_paced() {
            let (disk, stats, events) = (&mut self.disk, &mut self.stats, &mut self.events);
            self.reads.paced_run(disk, stats, events);
        }
    }

    /// Moves queued events into `out` (swap; no allocation when `out` has capacity).
    pub fn events_swap(&mut self, out: &mut Vec<Event>) {
        assert!(
            out.is_empty(),
            "events must be consumed before the next swap"
        );
        std::mem::swap(&mut self.events, out);
    }

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
        let sequential = match target {
            ReadTarget::Entry(entry) => self.reads.sequential(ledger, entry),
            ReadTarget::Last | ReadTarget::ExplicitLac => false,
        };
        let slot = match target {
            ReadTarget::ExplicitLac => state.explicit_lac.ok_or(ReadError::NoEntry)?,
            ReadTarget::Entry(_) | ReadTarget::Last => {
                match self.entry_resolve(ledger, entry, 0)? {
                    // A segment about to be replaced by its compacted copy takes no new read.
                    Resolved::Record(slot)
                        if self.compaction.blocks_reads(slot.location().segment) =>
                    {
                        return Err(ReadError::Busy);
                    }
                    Resolved::Page(page) if self.compaction.blocks_reads(page.run.segment) => {
                        return Err(ReadError::Busy);
                    }
                    Resolved::Record(slot) => slot,
                    Resolved::Page(page) => {
                        let (disk, stats, events) =
                            (&mut self.disk, &mut self.stats, &mut self.events);
                        let target = (ledger, entry);
                        self.reads
                            .start_page(disk, stats, events, token, target, page, sequential)?;
                        return Ok(ReadOutcome::Pending);
                    }
                }
            }
        };
        let expected = Expected {
            kind,
            ledger,
            entry,
            location: slot.location(),
        };
        if sequential {
            self.read_ahead_guide(ledger, entry, slot.payload_size());
        }
        let segment_end = self.readable_end(slot.location().segment);
        let extent = if sequential {
            let size = record::record_size(slot.payload_size() as usize);
            self.read_extent(ledger, entry, slot.location(), size)
        } else {
            read_extent::Extent::UNKNOWN
        };
        let scan = Scan {
            sequential,
            segment_end: segment_end.min(extent.end),
            sparse: extent.sparse,
        };
        let (disk, stats, events) = (&mut self.disk, &mut self.stats, &mut self.events);
        let payload_size = slot.payload_size();
        self.reads
            .start(disk, stats, events, token, expected, payload_size, scan)
    }

    /// Reads ahead where a scan of `ledger` is going, not only past the bytes it reads: in a
    /// sorted segment a ledger's entries are runs (one per copy batch, `compact.rs`) with
    /// other ledgers' runs between them, so the window that follows the current one holds
    /// other ledgers. On every 8th read of a scan, the entry about half a window ahead is
    /// looked up in the index (memory only: if its page is not cached, nothing happens) and
    /// a window is started there if none holds it.
    fn read_ahead_guide(&mut self, ledger: LedgerId, entry: EntryId, payload_size: u32) {
        if entry.0 % 8 != 0 {
            return;
        }
        let record_size = record::record_size(payload_size as usize);
        let entries_ahead = (READ_AHEAD_WINDOW_SIZE / 2 / record_size).clamp(8, 4096);
        let Some(ahead) = entry
            .0
            .checked_add(i64::try_from(entries_ahead).expect("small"))
        else {
            return;
        };
        let Ok(Resolved::Record(slot)) = self.entry_resolve(ledger, EntryId(ahead), 0) else {
            return;
        };
        let location = slot.location();
        if self.compaction.blocks_reads(location.segment) {
            return;
        }
        let size = record::record_size(slot.payload_size() as usize);
        let extent = self.read_extent(ledger, EntryId(ahead), location, size);
        if extent.sparse {
            return;
        }
        let segment_end = self.readable_end(location.segment).min(extent.end);
        let (disk, stats) = (&mut self.disk, &mut self.stats);
        self.reads.guide(disk, stats, location, size, segment_end);
    }

    /// Where the bytes a read may use of `segment` end: a sealed segment's file, or the
    /// durable records of one still being written (a read-ahead window never reads past it),
    /// down to a sector boundary: with 512-byte commit blocks they may end inside a sector
    /// whose rest a commit in flight is writing, and a window holding that sector would keep
    /// its bytes from before the write. The records there are read alone or from the cache.
    fn readable_end(&self, segment: crate::ids::SegmentId) -> u64 {
        match self.index.sealed_segment(segment) {
            Some(table) => table.file_size,
            None => {
                let end = self.commits.durable_end(segment);
                crate::stdx::align_down_u64(end, to_u64(SECTOR_SIZE))
            }
        }
    }

    /// The result of a finished disk read: the entry id and its stored body.
    pub fn read_result(&self, slot: ReadSlot) -> Result<(EntryId, &[u8]), ReadError> {
        self.reads.result(&self.disk, slot)
    }

    /// Frees a finished read's slot.
    pub fn read_release(&mut self, slot: ReadSlot) {
        self.reads.release(slot);
    }

    /// Makes the next `submit` retry creating a segment now if the journal is read-only,
    /// instead of after `SEGMENT_RETRY_INTERVAL_SUBMITS` submits: the server calls this on
    /// its clock, so an idle read-only shard notices returned space within a tick.
    pub fn segment_retry_now(&mut self) {
        self.segments.retry_now();
    }

    /// Makes the next `submit` retry a failed sealing step now instead of after
    /// `SEAL_RETRY_INTERVAL_SUBMITS` submits; the server calls this on its clock.
    pub fn seal_retry_now(&mut self) {
        self.seal.retry_now();
        self.compaction.retry_now();
    }

    /// Lets compaction move `bytes` more bytes (reads and writes): the server grants its
    /// rate times the time passed, on its clock, so the engine needs none. Idle credit is
    /// capped at a short burst; a grant larger than that stands alone (tests grant
    /// `u64::MAX` for no limit).
    pub fn compaction_grant(&mut self, bytes: u64) {
        // Under disk pressure compaction's share grows up to 4x at the floor.
        let scale = 1000 + 3 * u64::from(self.pressure.per_mille());
        self.compaction
            .grant(u64::try_from(u128::from(bytes) * u128::from(scale) / 1000).unwrap_or(u64::MAX));
    }

    /// Turns read pacing on or off (`read_pace.rs`): the server turns it on while its commits
    /// take longer than it allows, on its clock, so the engine needs none.
    pub fn read_pace_set(&mut self, on: bool) {
        self.reads.pace().set(on);
    }

    /// Pauses sorting sealed segments (`Config::sort_sealed`) while `paused`: the server
    /// pauses it while the shard writes fast, since a sort's reads and writes share the disk
    /// and the shard with commits. A sort job waits where it is; compaction for space goes on.
    pub fn sorting_pause(&mut self, paused: bool) {
        self.compaction.sorting_pause(paused);
    }

    /// Allows `count` removals of dead segments until the next call (the server's clock
    /// paces them; without a call they are not paced).
    pub fn removal_pace(&mut self, count: u32) {
        self.seal.removal_pace(count, self.stats.bytes_written);
    }

    /// True when no commit is staged or in flight, and no zero-ahead write is in flight.
    #[must_use]
    pub fn is_idle(&self) -> bool {
        self.commits.is_idle()
            && self.zero_ahead.is_idle()
            && self.scrub.is_idle()
            && ((self.seal.is_idle() && self.compaction.is_idle()) || self.commits.is_poisoned())
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
