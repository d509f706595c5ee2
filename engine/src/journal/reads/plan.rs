//! How a read is served: from the cache of durable commit buffers, from a read-ahead window
//! (read already, in flight, started for a scan, or waited for while the pace admits none),
//! or by a read of its own; and what a window's completion does to the reads waiting on it.

use super::{slot_u32, verify, Expected, Read, ReadOutcome, ReadSlot, ReadState, Reads, Scan};
use crate::constants::{READ_AHEAD_WINDOW_SIZE, SECTOR_SIZE};
use crate::disk::Disk;
use crate::error::ReadError;
use crate::ids::Location;
use crate::journal::read_ahead::Found;
use crate::journal::read_extent::Extent;
use crate::journal::{Event, Stats, TOKEN_READ_AHEAD};
use crate::record;
use crate::stdx::{to_u64, to_usize};

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

impl Reads {
    /// Serves the record `expected` describes from the cache or a read-ahead window, or starts
    /// a disk read of it (its own, or a window's it waits on).
    #[allow(clippy::too_many_arguments)]
    pub(in crate::journal) fn start<'d, D: Disk>(
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
            sparse: scan.sparse,
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
                let windowed = scan.sequential && !scan.sparse && fits && !straddles;
                if windowed && !self.ahead.pace_admits() {
                    return Plan::Paced;
                }
                let started = windowed
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
        if scan.sequential && !scan.sparse {
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
    pub(in crate::journal) fn guide<D: Disk>(
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
    pub(in crate::journal) fn paced_run<D: Disk>(
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
                sparse: read.sparse,
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
    pub(in crate::journal) fn has_paced(&self) -> bool {
        !self.paced.is_empty()
    }

    /// The pace window starts keep (`read_pace.rs`).
    pub(in crate::journal) fn pace(&mut self) -> &mut crate::journal::read_pace::ReadPace {
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
    pub(in crate::journal) fn window_on_complete<D: Disk>(
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
        extent: Extent,
        segment_end: u64,
    ) {
        let read = &mut self.slots[slot];
        read.location = location;
        read.payload_size = payload_size;
        read.segment_end = segment_end.min(extent.end);
        read.sparse = extent.sparse;
        let scan = Scan {
            sequential: read.sequential,
            segment_end: read.segment_end,
            sparse: read.sparse,
        };
        let (expected, size) = (
            Expected::of(read),
            record::record_size(payload_size as usize),
        );
        let plan = self.plan(disk, stats, expected, size, scan);
        self.plan_follow(disk, stats, events, slot, plan);
    }
}
