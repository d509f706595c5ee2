//! Reads of durable records: served at once from the cache of recent durable commit buffers,
//! or by a disk read into a read slot that reports `Event::ReadDone`. Every record read is
//! checked against the identity the index expects at its location, so a misdirected read or
//! write that is internally valid is caught; a disk read that fails the check is retried once.
//! A read that is part of a sequential scan goes through a read-ahead window instead of a
//! read of its own (`read_ahead.rs`); one whose window the pace does not admit yet
//! (`read_pace.rs`) waits for it in a queue, first in, first out.

use super::read_ahead::{Found, ReadAhead};
use super::{Event, Journal, Stats, TOKEN_READ, TOKEN_READ_AHEAD};
use crate::constants::{
    READ_AHEAD_WINDOW_SIZE, READ_WINDOW_WAITERS_MAX, RECORD_PAYLOAD_SIZE_MAX, SECTOR_SIZE,
    SEGMENT_HEADER_SIZE,
};
use crate::disk::{BufferId, Disk};
use crate::error::ReadError;
use crate::ids::FileId;
use crate::ids::{EntryId, LedgerId, Location, Position, SegmentId};
use crate::index::{Lookup, SealedRun, Slot};
use crate::index_file;
use crate::record::{self, RecordKind};
use crate::stdx::{to_u64, to_usize};
use std::collections::VecDeque;

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

/// The identity of the record a read expects at a location.
#[derive(Clone, Copy, Debug)]
pub(super) struct Expected {
    pub kind: RecordKind,
    pub ledger: LedgerId,
    pub entry: EntryId,
    pub location: Location,
}

/// How a read may use read-ahead: whether it follows its ledger's previous read, and where
/// the readable bytes of its segment end (its file, or its durable records).
#[derive(Clone, Copy, Debug)]
pub(super) struct Scan {
    pub sequential: bool,
    pub segment_end: u64,
}

/// How a read's record is read (`Reads::plan`).
#[derive(Clone, Copy, Debug)]
enum Plan {
    /// From this window, in memory and checked.
    Ready(u32),
    /// From this window, once its read lands.
    Window(u32),
    /// By a read of its own.
    Alone,
    /// Through a window the pace does not let start yet: the read waits (`Reads::paced_run`).
    Paced,
}

/// A durable commit buffer kept to serve tailing reads.
#[derive(Clone, Copy, Debug)]
pub(super) struct Cached {
    pub buffer: BufferId,
    pub segment: SegmentId,
    pub position: u64,
    pub length: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ReadState {
    Free,
    /// Waiting in `Reads::paced` for the pace to admit its window.
    Paced,
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
    /// The slot's own read buffer; none for a slot that only waits on windows.
    buffer: Option<BufferId>,
    start: u64,
    length: usize,
    attempts: u32,
    /// Set while the read first fetches the index page that says where the entry is.
    page: Option<PageRead>,
    /// Part of a sequential scan (`ReadAhead::sequential`).
    sequential: bool,
    /// Where the readable bytes of its segment ended when the read was planned
    /// (`Scan::segment_end`): a paced read is planned again with it.
    segment_end: u64,
    /// The read-ahead window the record comes from, instead of the slot's own read.
    window: Option<u32>,
}

/// An index page a read of a sealed entry needs first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct PageRead {
    /// The sealed run that may hold the entry, and how many runs were tried before it.
    pub run: SealedRun,
    pub candidate: usize,
    /// The page of the segment's slot table, its byte offset in the index file, and the
    /// entry's slot in it.
    pub page: u64,
    pub offset: u64,
    pub at: usize,
}

/// The reads of one journal: the read slots with their buffers, and the read cache.
#[derive(Debug)]
pub(super) struct Reads {
    /// One slot per disk read that can be in flight, each with its own buffer, then
    /// `READ_WINDOW_WAITERS_MAX` slots without one for reads waiting on a window.
    slots: Vec<Read>,
    /// Indexes of the free slots with a buffer, and of the free waiting slots.
    free: Vec<u32>,
    waiters_free: Vec<u32>,
    /// The most recent durable commit buffers, oldest first.
    cache: VecDeque<Cached>,
    /// Most commit buffers the cache holds (`Config::read_cache_buffers`).
    cache_capacity: usize,
    /// The read-ahead windows.
    ahead: ReadAhead,
    /// Reads waiting for the pace to admit their window, oldest first.
    paced: VecDeque<u32>,
}

impl Reads {
    /// Read slots, one per buffer of `buffers`, an empty cache of `cache_capacity`, and a
    /// read-ahead window over each of `windows` (with the slots that wait on windows, if
    /// there are any), paced at `pace_percent` (`Config::read_pace_percent`).
    pub(super) fn new(
        buffers: impl Iterator<Item = BufferId>,
        cache_capacity: usize,
        windows: impl Iterator<Item = BufferId>,
        pace_percent: u32,
    ) -> Reads {
        let ahead = ReadAhead::new(windows, pace_percent);
        let waiters = if ahead.is_off() {
            0
        } else {
            READ_WINDOW_WAITERS_MAX
        };
        let buffers = buffers.map(Some);
        let slots: Vec<Read> = buffers
            .chain(std::iter::repeat_n(None, waiters))
            .map(|buffer| Read {
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
                buffer,
                start: 0,
                length: 0,
                attempts: 0,
                page: None,
                sequential: false,
                segment_end: 0,
                window: None,
            })
            .collect();
        let count = u32::try_from(slots.len()).expect("small");
        let with_buffer = count - slot_u32(waiters);
        Reads {
            slots,
            // Popped from the end: slot 0 first.
            free: (0..with_buffer).rev().collect(),
            waiters_free: (with_buffer..count).rev().collect(),
            cache: VecDeque::with_capacity(cache_capacity + 1),
            cache_capacity,
            ahead,
            paced: VecDeque::with_capacity(to_usize(u64::from(count))),
        }
    }

    /// Notes a read of `entry` of `ledger`: true if it continues a sequential scan.
    pub(super) fn sequential(&mut self, ledger: LedgerId, entry: EntryId) -> bool {
        self.ahead.sequential(ledger, entry)
    }

    /// Serves the record `expected` describes from the cache or a read-ahead window, or starts
    /// a disk read of it (its own, or a window's it waits on).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn start<'d, D: Disk>(
        &mut self,
        disk: &'d mut D,
        stats: &mut Stats,
        events: &mut Vec<Event>,
        token: u64,
        expected: Expected,
        payload_size: u32,
        scan: Scan,
    ) -> Result<ReadOutcome<'d>, ReadError> {
        let location = expected.location;
        if let Some(cached) = self.cached_record(&*disk, location, payload_size) {
            if verify(cached, expected).is_some() {
                stats.reads_cached += 1;
                let disk: &'d D = disk;
                let cached = self
                    .cached_record(disk, location, payload_size)
                    .expect("found");
                let body = record::payload_of_decoded(cached);
                return Ok(ReadOutcome::Ready {
                    entry: expected.entry,
                    body,
                });
            }
        }
        let size = record::record_size(payload_size as usize);
        let plan = self.plan(disk, stats, expected, size, scan);
        let slot = match plan {
            Plan::Ready(window) => {
                let disk: &'d D = disk;
                let position = location.position.0;
                let bytes = self.ahead.bytes(disk, window, position, size);
                // `plan` verified these bytes; the window is Ready and not reused meanwhile.
                let body = record::payload_of_decoded(bytes.expect("planned"));
                return Ok(ReadOutcome::Ready {
                    entry: expected.entry,
                    body,
                });
            }
            // A read waiting on a window needs no buffer of its own.
            Plan::Window(_) | Plan::Paced => self.waiters_free.pop().or_else(|| self.free.pop()),
            Plan::Alone => self.free.pop(),
        };
        let slot = to_usize(u64::from(slot.ok_or(ReadError::Busy)?));
        let read = &mut self.slots[slot];
        assert_eq!(read.state, ReadState::Free);
        *read = Read {
            state: ReadState::InFlight,
            token,
            ledger: expected.ledger,
            entry: expected.entry,
            kind: expected.kind,
            location,
            payload_size,
            buffer: read.buffer,
            start: 0,
            length: 0,
            attempts: 0,
            page: None,
            sequential: scan.sequential,
            segment_end: scan.segment_end,
            window: None,
        };
        self.plan_follow(disk, stats, events, slot, plan);
        Ok(ReadOutcome::Pending)
    }

    /// Decides how the record `expected` (of `size` bytes) is read: from a window in memory
    /// (checked), from a window in flight, from a window this read starts because it is part
    /// of a scan (or waits to start, if the pace admits none now), or alone. A window already
    /// read past the middle starts the next one.
    fn plan<D: Disk>(
        &mut self,
        disk: &mut D,
        stats: &mut Stats,
        expected: Expected,
        size: usize,
        scan: Scan,
    ) -> Plan {
        let (segment, position) = (expected.location.segment, expected.location.position.0);
        let window = match self.ahead.find(segment, position, size) {
            Some(Found::Ready(window)) => {
                let intact = self
                    .ahead
                    .bytes(&*disk, window, position, size)
                    .and_then(|bytes| verify(bytes, expected))
                    .is_some();
                if !intact {
                    // A stale window (its segment was rewritten): this read goes alone.
                    self.ahead.discard(window);
                    return Plan::Alone;
                }
                Plan::Ready(window)
            }
            Some(Found::InFlight(window)) => Plan::Window(window),
            None => {
                let offset = position - crate::stdx::align_down_u64(position, to_u64(SECTOR_SIZE));
                let fits = offset + to_u64(size) <= to_u64(READ_AHEAD_WINDOW_SIZE);
                let straddles = self.ahead.straddles_end(segment, position, size);
                if scan.sequential && fits && !straddles && !self.ahead.pace_admits() {
                    return Plan::Paced;
                }
                let started = (scan.sequential && fits && !straddles)
                    .then(|| {
                        self.ahead.start(
                            disk,
                            TOKEN_READ_AHEAD,
                            segment,
                            (position, size),
                            scan.segment_end,
                        )
                    })
                    .flatten();
                stats.read_ahead_windows += u64::from(started.is_some());
                match started {
                    Some(window) => Plan::Window(window),
                    None => return Plan::Alone,
                }
            }
        };
        stats.reads_read_ahead += 1;
        let (Plan::Ready(index) | Plan::Window(index)) = window else {
            unreachable!("windows only here");
        };
        if scan.sequential {
            let end = position + to_u64(size);
            let started = self
                .ahead
                .prefetch(disk, TOKEN_READ_AHEAD, index, end, scan.segment_end);
            stats.read_ahead_windows += u64::from(started);
        }
        window
    }

    /// Starts a window at `location` (a record of `size` bytes a scan will read soon) unless
    /// one holds it already, it straddles a window's end, or it lies in the stretch after a
    /// window that the scan's prefetch reads: the guide is for jumps (the ledger's next run,
    /// the next segment), the prefetch for what follows a window.
    pub(super) fn guide<D: Disk>(
        &mut self,
        disk: &mut D,
        stats: &mut Stats,
        location: Location,
        size: usize,
        segment_end: u64,
    ) {
        let (segment, position) = (location.segment, location.position.0);
        if self.ahead.is_off()
            || self.ahead.find(segment, position, size).is_some()
            || self.ahead.straddles_end(segment, position, size)
            || self.ahead.follows_window(segment, position)
        {
            return;
        }
        let started = self.ahead.start(
            disk,
            TOKEN_READ_AHEAD,
            segment,
            (position, size),
            segment_end,
        );
        stats.read_ahead_windows += u64::from(started.is_some());
    }

    /// Carries out `plan` for `slot` (its record's location and size set).
    fn plan_follow<D: Disk>(
        &mut self,
        disk: &mut D,
        stats: &mut Stats,
        events: &mut Vec<Event>,
        slot: usize,
        plan: Plan,
    ) {
        let read = &mut self.slots[slot];
        let size = record::record_size(read.payload_size as usize);
        let position = read.location.position.0;
        let start = crate::stdx::align_down_u64(position, to_u64(SECTOR_SIZE));
        let end = crate::stdx::align_up_u64(position + to_u64(size), to_u64(SECTOR_SIZE));
        read.page = None;
        read.start = start;
        read.length = to_usize(end - start);
        read.attempts = 0;
        read.window = None;
        read.state = ReadState::InFlight;
        match plan {
            Plan::Ready(window) => {
                self.ahead.hold(window);
                read.window = Some(window);
                read.state = ReadState::Done;
                events.push(Event::ReadDone {
                    token: read.token,
                    slot: ReadSlot(slot_u32(slot)),
                });
            }
            Plan::Window(window) => {
                self.ahead.hold(window);
                read.window = Some(window);
            }
            Plan::Alone => match self.with_buffer(slot) {
                Some(slot) => {
                    self.submit(disk, events, slot);
                    stats.reads_disk += 1;
                }
                None => self.fail(events, slot, ReadError::Busy),
            },
            Plan::Paced => {
                read.state = ReadState::Paced;
                self.paced.push_back(slot_u32(slot));
                stats.reads_paced += 1;
            }
        }
    }

    /// Plans the paced reads again, oldest first, until one still waits for the pace: each is
    /// served from a window read meanwhile, waits on one in flight, starts its own, or (if
    /// its record now straddles a window's end) goes alone.
    pub(super) fn paced_run<D: Disk>(
        &mut self,
        disk: &mut D,
        stats: &mut Stats,
        events: &mut Vec<Event>,
    ) {
        while let Some(&slot) = self.paced.front() {
            let slot = to_usize(u64::from(slot));
            let read = self.slots[slot];
            assert_eq!(read.state, ReadState::Paced);
            let size = record::record_size(read.payload_size as usize);
            let scan = Scan {
                sequential: read.sequential,
                segment_end: read.segment_end,
            };
            let plan = self.plan(disk, stats, Expected::of(&read), size, scan);
            if matches!(plan, Plan::Paced) {
                break;
            }
            self.paced.pop_front();
            self.plan_follow(disk, stats, events, slot, plan);
        }
    }

    /// True when reads wait for the pace.
    pub(super) fn has_paced(&self) -> bool {
        !self.paced.is_empty()
    }

    /// The pace window starts keep (`read_pace.rs`).
    pub(super) fn pace(&mut self) -> &mut super::read_pace::ReadPace {
        self.ahead.pace()
    }

    /// `slot`, if it has a read buffer, or a free slot with one that takes its read over
    /// (`slot`, a waiting slot, is freed); None when no read buffer is free.
    fn with_buffer(&mut self, slot: usize) -> Option<usize> {
        if self.slots[slot].buffer.is_some() {
            return Some(slot);
        }
        let free = to_usize(u64::from(self.free.pop()?));
        let buffer = self.slots[free].buffer;
        self.slots[free] = Read {
            buffer,
            window: None,
            ..self.slots[slot]
        };
        self.slots[slot].state = ReadState::Free;
        self.waiters_free.push(slot_u32(slot));
        Some(free)
    }

    /// Window `index`'s read completed with `result`: every read waiting on it is verified
    /// and reported, or, if the window did not hold its record intact, goes alone (or, with
    /// no read buffer free, is reported busy for the server to retry).
    pub(super) fn window_on_complete<D: Disk>(
        &mut self,
        disk: &mut D,
        stats: &mut Stats,
        events: &mut Vec<Event>,
        index: usize,
        result: i32,
    ) {
        self.ahead.on_complete(index, result);
        let window = u32::try_from(index).expect("few windows");
        for slot in 0..self.slots.len() {
            let read = self.slots[slot];
            if read.state != ReadState::InFlight || read.window != Some(window) {
                continue;
            }
            let size = record::record_size(read.payload_size as usize);
            let bytes = self
                .ahead
                .bytes(&*disk, window, read.location.position.0, size);
            let intact = bytes.is_some_and(|bytes| verify(bytes, Expected::of(&read)).is_some());
            if intact {
                self.slots[slot].state = ReadState::Done;
                events.push(Event::ReadDone {
                    token: read.token,
                    slot: ReadSlot(slot_u32(slot)),
                });
                continue;
            }
            stats.read_checksum_failures += u64::from(bytes.is_some());
            if bytes.is_some() {
                self.ahead.discard(window);
            }
            self.ahead.unhold(window);
            self.slots[slot].window = None;
            match self.with_buffer(slot) {
                Some(alone) => {
                    self.submit(disk, events, alone);
                    stats.reads_disk += 1;
                }
                None => self.fail(events, slot, ReadError::Busy),
            }
        }
    }

    fn cached_record<'d, D: Disk>(
        &self,
        disk: &'d D,
        location: Location,
        payload_size: u32,
    ) -> Option<&'d [u8]> {
        let size = to_u64(record::record_size(payload_size as usize));
        let cached = self.cache.iter().rev().find(|cached| {
            cached.segment == location.segment
                && cached.position <= location.position.0
                && location.position.0 + size <= cached.position + to_u64(cached.length)
        })?;
        let offset = to_usize(location.position.0 - cached.position);
        Some(&disk.buffer(cached.buffer)[offset..offset + to_usize(size)])
    }

    fn submit<D: Disk>(&mut self, disk: &mut D, events: &mut Vec<Event>, slot: usize) {
        let read = &mut self.slots[slot];
        read.attempts += 1;
        read.state = ReadState::InFlight;
        let token = TOKEN_READ | to_u64(slot);
        let (file, start, length) = match read.page {
            Some(page) => (FileId::Index(page.run.segment), page.offset, SECTOR_SIZE),
            None => (
                FileId::Segment(read.location.segment),
                read.start,
                read.length,
            ),
        };
        if disk
            .submit_read(token, file, start, read.own_buffer(), length)
            .is_err()
        {
            let read = &mut self.slots[slot];
            read.state = ReadState::Failed(ReadError::Busy);
            events.push(Event::ReadDone {
                token: read.token,
                slot: ReadSlot(slot_u32(slot)),
            });
        }
    }

    /// The disk read in `slot` completed with `result`: verify it, retry it once, or report it.
    pub(super) fn on_complete<D: Disk>(
        &mut self,
        disk: &mut D,
        stats: &mut Stats,
        events: &mut Vec<Event>,
        slot: usize,
        result: i32,
    ) {
        let read = self.slots[slot];
        assert_eq!(read.state, ReadState::InFlight);
        let offset = to_usize(read.location.position.0 - read.start);
        let size = record::record_size(read.payload_size as usize);
        let complete = usize::try_from(result).is_ok_and(|count| count >= offset + size);
        let intact = complete && {
            let bytes = &disk.buffer(read.own_buffer())[offset..offset + size];
            verify(bytes, Expected::of(&read)).is_some()
        };
        if !intact {
            stats.read_checksum_failures += u64::from(complete);
            if read.attempts < 2 {
                // One retry: a transient bad read (misdirected, flipped in transit) passes.
                self.submit(disk, events, slot);
                return;
            }
            self.slots[slot].state = ReadState::Failed(ReadError::Io);
        } else {
            self.slots[slot].state = ReadState::Done;
        }
        events.push(Event::ReadDone {
            token: read.token,
            slot: ReadSlot(slot_u32(slot)),
        });
    }

    /// Starts a read whose first step is fetching an index page.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn start_page<D: Disk>(
        &mut self,
        disk: &mut D,
        stats: &mut Stats,
        events: &mut Vec<Event>,
        token: u64,
        target: (LedgerId, EntryId),
        page: PageRead,
        sequential: bool,
    ) -> Result<(), ReadError> {
        let read_slot = self.free.pop().ok_or(ReadError::Busy)?;
        let read = &mut self.slots[read_slot as usize];
        assert_eq!(read.state, ReadState::Free);
        read.token = token;
        read.ledger = target.0;
        read.entry = target.1;
        read.kind = RecordKind::Entry;
        read.attempts = 0;
        read.page = Some(page);
        read.sequential = sequential;
        read.window = None;
        self.submit(disk, events, read_slot as usize);
        stats.index_page_reads += 1;
        Ok(())
    }

    /// True when a disk read of `segment` or of its index is in flight.
    pub(super) fn in_flight_on(&self, segment: SegmentId) -> bool {
        self.ahead.in_flight_on(segment)
            || self.slots.iter().any(|read| {
                matches!(read.state, ReadState::InFlight | ReadState::Paced)
                    && match read.page {
                        Some(page) => page.run.segment == segment,
                        None => read.location.segment == segment,
                    }
            })
    }

    /// The index page a read in flight is fetching, if that is its step.
    pub(super) fn page_pending(&self, slot: usize) -> Option<PageRead> {
        let read = &self.slots[slot];
        (read.state == ReadState::InFlight)
            .then_some(read.page)
            .flatten()
    }

    /// The (ledger, entry) a read is for.
    pub(super) fn target(&self, slot: usize) -> (LedgerId, EntryId) {
        (self.slots[slot].ledger, self.slots[slot].entry)
    }

    /// The page step of `slot` came back with `result`: the verified page's bytes, or
    /// `None` after a retry (the read then failed and was reported).
    pub(super) fn page_complete<D: Disk>(
        &mut self,
        disk: &mut D,
        stats: &mut Stats,
        events: &mut Vec<Event>,
        slot: usize,
        result: i32,
    ) -> Option<BufferId> {
        let read = self.slots[slot];
        let complete = usize::try_from(result).is_ok_and(|count| count == SECTOR_SIZE);
        let intact = complete
            && crate::index_file::page_verify(&disk.buffer(read.own_buffer())[..SECTOR_SIZE]);
        if intact {
            return Some(read.own_buffer());
        }
        stats.read_checksum_failures += u64::from(complete);
        if read.attempts < 2 {
            self.submit(disk, events, slot);
        } else {
            self.fail(events, slot, ReadError::Io);
        }
        None
    }

    /// Goes on with `slot`'s next step: another index page.
    pub(super) fn continue_page<D: Disk>(
        &mut self,
        disk: &mut D,
        stats: &mut Stats,
        events: &mut Vec<Event>,
        slot: usize,
        page: PageRead,
    ) {
        let read = &mut self.slots[slot];
        read.page = Some(page);
        read.attempts = 0;
        self.submit(disk, events, slot);
        stats.index_page_reads += 1;
    }

    /// Goes on with `slot`'s next step: the record, now that its location is known.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn continue_record<D: Disk>(
        &mut self,
        disk: &mut D,
        stats: &mut Stats,
        events: &mut Vec<Event>,
        slot: usize,
        location: Location,
        payload_size: u32,
        segment_end: u64,
    ) {
        let read = &mut self.slots[slot];
        read.location = location;
        read.payload_size = payload_size;
        read.segment_end = segment_end;
        let scan = Scan {
            sequential: read.sequential,
            segment_end,
        };
        let (expected, size) = (
            Expected::of(read),
            record::record_size(payload_size as usize),
        );
        let plan = self.plan(disk, stats, expected, size, scan);
        self.plan_follow(disk, stats, events, slot, plan);
    }

    /// Ends `slot` with `error` and reports it.
    pub(super) fn fail(&mut self, events: &mut Vec<Event>, slot: usize, error: ReadError) {
        let read = &mut self.slots[slot];
        read.page = None;
        read.state = ReadState::Failed(error);
        events.push(Event::ReadDone {
            token: read.token,
            slot: ReadSlot(slot_u32(slot)),
        });
    }

    /// The result of a finished disk read: the entry id and its stored body.
    pub(super) fn result<'d, D: Disk>(
        &self,
        disk: &'d D,
        slot: ReadSlot,
    ) -> Result<(EntryId, &'d [u8]), ReadError> {
        let read = &self.slots[slot.0 as usize];
        match read.state {
            ReadState::Done => {
                let size = record::record_size(read.payload_size as usize);
                let bytes = match read.window {
                    Some(window) => self
                        .ahead
                        .bytes(disk, window, read.location.position.0, size)
                        .expect("a held window keeps its bytes"),
                    None => {
                        let offset = to_usize(read.location.position.0 - read.start);
                        &disk.buffer(read.own_buffer())[offset..offset + size]
                    }
                };
                // Verified at completion; the window it is in stays held (and its buffer
                // unwritten) and its own buffer is the slot's until `release`.
                Ok((read.entry, record::payload_of_decoded(bytes)))
            }
            ReadState::Failed(error) => Err(error),
            ReadState::Free | ReadState::Paced | ReadState::InFlight => {
                panic!("read {slot:?} is not finished")
            }
        }
    }

    /// Frees a finished read's slot.
    pub(super) fn release(&mut self, slot: ReadSlot) {
        let read = &mut self.slots[slot.0 as usize];
        assert!(matches!(read.state, ReadState::Done | ReadState::Failed(_)));
        read.state = ReadState::Free;
        if let Some(window) = read.window.take() {
            self.ahead.unhold(window);
        }
        if read.buffer.is_some() {
            self.free.push(slot.0);
        } else {
            self.waiters_free.push(slot.0);
        }
    }

    /// Keeps a durable commit's buffer to serve reads. Returns the buffer to free: the oldest
    /// cached one when the cache is full, or this one when caching is off.
    pub(super) fn cache_insert(&mut self, cached: Cached) -> Option<BufferId> {
        if self.cache_capacity == 0 {
            return Some(cached.buffer);
        }
        let mut evicted = None;
        if self.cache.len() == self.cache_capacity {
            evicted = Some(self.cache.pop_front().expect("non-empty cache").buffer);
        }
        self.cache.push_back(cached);
        assert!(self.cache.len() <= self.cache_capacity);
        evicted
    }

    /// `segment`'s file was replaced by its compacted copy: no read-ahead window of the old
    /// file serves another read.
    pub(super) fn segment_replaced(&mut self, segment: SegmentId) {
        self.ahead.forget(segment);
    }

    /// Gives up the oldest cached commit buffer (staging needs one), if any is cached.
    pub(super) fn cache_evict_oldest(&mut self) -> Option<BufferId> {
        self.cache.pop_front().map(|cached| cached.buffer)
    }
}

fn slot_u32(slot: usize) -> u32 {
    u32::try_from(slot).expect("read slots are few")
}

impl Read {
    fn own_buffer(&self) -> BufferId {
        self.buffer.expect("a disk read has a buffer")
    }
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

/// A slot read from a sealed index page, if it can be a record of that segment: the page's
/// checksum says the page is what was written, this says what was written is possible, so a
/// damaged index that still checksums fails the read instead of reading out of bounds.
fn sealed_slot(
    segment: SegmentId,
    position: u32,
    payload_size: u32,
    segment_size: u64,
) -> Option<Slot> {
    let size = usize::try_from(payload_size).ok()?;
    let end =
        u64::from(position) + to_u64(record::record_size(size.min(RECORD_PAYLOAD_SIZE_MAX + 1)));
    let valid = size <= RECORD_PAYLOAD_SIZE_MAX
        && u64::from(position) >= to_u64(SEGMENT_HEADER_SIZE)
        && end <= segment_size;
    let location = Location {
        segment,
        position: Position(u64::from(position)),
    };
    valid.then(|| Slot::new(location, payload_size))
}

/// Where a read of an entry goes next.
#[derive(Clone, Copy, Debug)]
pub(super) enum Resolved {
    /// The record is here.
    Record(Slot),
    /// An index page must be read first.
    Page(PageRead),
}

impl<D: Disk> Journal<D> {
    /// Finds `entry` of `ledger` through the unsealed entry arrays and the cached index
    /// pages, trying sealed runs newest first from the `skip`-th on.
    pub(super) fn entry_resolve(
        &mut self,
        ledger: LedgerId,
        entry: EntryId,
        mut skip: usize,
    ) -> Result<Resolved, ReadError> {
        let state = self.index.ledger(ledger).ok_or(ReadError::NoLedger)?;
        let segment_size = self.config.segment_size;
        loop {
            let (run, candidate) = match state.locate(entry, skip) {
                Lookup::Found(slot) => return Ok(Resolved::Record(slot)),
                Lookup::Missing => return Err(ReadError::NoEntry),
                Lookup::Sealed { run, candidate } => (run, candidate),
            };
            let table = self
                .index
                .sealed_segment(run.segment)
                .expect("a sealed run's segment is sealed");
            let (page, at) = index_file::page_of(run.slot_of(entry));
            let Some(bytes) = self.index_pages.get(run.segment, page) else {
                let offset = table.slot_table_offset + page * to_u64(SECTOR_SIZE);
                return Ok(Resolved::Page(PageRead {
                    run,
                    candidate,
                    page,
                    offset,
                    at,
                }));
            };
            self.stats.index_page_hits += 1;
            match index_file::page_slot(bytes, at) {
                Some((position, payload_size)) => {
                    let slot = sealed_slot(run.segment, position, payload_size, segment_size);
                    return slot.map(Resolved::Record).ok_or(ReadError::Io);
                }
                // A hole: an older run may still hold the entry.
                None => skip = candidate + 1,
            }
        }
    }

    /// A disk read completed: an index page step goes on to the record (or the next page, or
    /// fails); a record step is verified as before.
    pub(super) fn read_on_complete(&mut self, slot: usize, result: i32) {
        let (disk, stats, events) = (&mut self.disk, &mut self.stats, &mut self.events);
        let Some(page) = self.reads.page_pending(slot) else {
            self.reads.on_complete(disk, stats, events, slot, result);
            return;
        };
        let Some(buffer) = self.reads.page_complete(disk, stats, events, slot, result) else {
            return;
        };
        let bytes = &self.disk.buffer(buffer)[..SECTOR_SIZE];
        self.index_pages.insert(page.run.segment, page.page, bytes);
        let slot_value = index_file::page_slot(bytes, page.at);
        let (ledger, entry) = self.reads.target(slot);
        let next = match slot_value {
            Some((position, payload_size)) => {
                let segment_size = self.config.segment_size;
                sealed_slot(page.run.segment, position, payload_size, segment_size)
                    .map(Resolved::Record)
                    .ok_or(ReadError::Io)
            }
            None => self.entry_resolve(ledger, entry, page.candidate + 1),
        };
        // A segment about to be replaced by its compacted copy takes no new read.
        let next = next.and_then(|resolved| match resolved {
            Resolved::Record(found) if self.compaction.blocks_reads(found.location().segment) => {
                Err(ReadError::Busy)
            }
            Resolved::Page(page) if self.compaction.blocks_reads(page.run.segment) => {
                Err(ReadError::Busy)
            }
            resolved => Ok(resolved),
        });
        let segment_end = match next {
            Ok(Resolved::Record(found)) => self.readable_end(found.location().segment),
            _ => 0,
        };
        let (disk, stats, events) = (&mut self.disk, &mut self.stats, &mut self.events);
        match next {
            Ok(Resolved::Record(found)) => self.reads.continue_record(
                disk,
                stats,
                events,
                slot,
                found.location(),
                found.payload_size(),
                segment_end,
            ),
            Ok(Resolved::Page(next_page)) => {
                self.reads
                    .continue_page(disk, stats, events, slot, next_page);
            }
            Err(error) => self.reads.fail(events, slot, error),
        }
    }
}
