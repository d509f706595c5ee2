//! Reads of durable records: served at once from the cache of recent durable commit buffers,
//! or by a disk read into a read slot that reports `Event::ReadDone`. Every record read is
//! checked against the identity the index expects at its location, so a misdirected read or
//! write that is internally valid is caught; a disk read that fails the check is retried once.

use super::{Event, Journal, Stats, TOKEN_READ};
use crate::constants::{RECORD_PAYLOAD_SIZE_MAX, SECTOR_SIZE, SEGMENT_HEADER_SIZE};
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
    /// Set while the read first fetches the index page that says where the entry is.
    page: Option<PageRead>,
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
    /// One slot per disk read that can be in flight, each with its own buffer.
    slots: Vec<Read>,
    /// Indexes of the free slots.
    free: Vec<u32>,
    /// The most recent durable commit buffers, oldest first.
    cache: VecDeque<Cached>,
    /// Most commit buffers the cache holds (`Config::read_cache_buffers`).
    cache_capacity: usize,
}

impl Reads {
    /// Read slots, one per buffer of `buffers`, and an empty cache of `cache_capacity`.
    pub(super) fn new(buffers: impl Iterator<Item = BufferId>, cache_capacity: usize) -> Reads {
        let slots: Vec<Read> = buffers
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
            })
            .collect();
        let count = u32::try_from(slots.len()).expect("small");
        Reads {
            slots,
            free: (0..count).collect(),
            cache: VecDeque::with_capacity(cache_capacity + 1),
            cache_capacity,
        }
    }

    /// Serves the record `expected` describes from the cache, or starts a disk read of it.
    pub(super) fn start<'d, D: Disk>(
        &mut self,
        disk: &'d mut D,
        stats: &mut Stats,
        events: &mut Vec<Event>,
        token: u64,
        expected: Expected,
        payload_size: u32,
    ) -> Result<ReadOutcome<'d>, ReadError> {
        let location = expected.location;
        if let Some(cached) = self.cached_record(&*disk, location, payload_size) {
            if verify(cached, expected).is_some() {
                stats.reads_cached += 1;
                let disk: &'d D = disk;
                let cached = self
                    .cached_record(disk, location, payload_size)
                    .expect("found");
                let body = verify(cached, expected).expect("verified");
                return Ok(ReadOutcome::Ready {
                    entry: expected.entry,
                    body,
                });
            }
        }
        let read_slot = self.free.pop().ok_or(ReadError::Busy)?;
        let read = &mut self.slots[read_slot as usize];
        assert_eq!(read.state, ReadState::Free);
        let size = record::record_size(payload_size as usize);
        let start = crate::stdx::align_down_u64(location.position.0, to_u64(SECTOR_SIZE));
        let end = crate::stdx::align_up_u64(location.position.0 + to_u64(size), 4096);
        *read = Read {
            state: ReadState::InFlight,
            token,
            ledger: expected.ledger,
            entry: expected.entry,
            kind: expected.kind,
            location,
            payload_size,
            buffer: read.buffer,
            start,
            length: to_usize(end - start),
            attempts: 0,
            page: None,
        };
        self.submit(disk, events, read_slot as usize);
        stats.reads_disk += 1;
        Ok(ReadOutcome::Pending)
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
            .submit_read(token, file, start, read.buffer, length)
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
            let bytes = &disk.buffer(read.buffer)[offset..offset + size];
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
    pub(super) fn start_page<D: Disk>(
        &mut self,
        disk: &mut D,
        stats: &mut Stats,
        events: &mut Vec<Event>,
        token: u64,
        target: (LedgerId, EntryId),
        page: PageRead,
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
        self.submit(disk, events, read_slot as usize);
        stats.index_page_reads += 1;
        Ok(())
    }

    /// True when a disk read of `segment` or of its index is in flight.
    pub(super) fn in_flight_on(&self, segment: SegmentId) -> bool {
        self.slots.iter().any(|read| {
            read.state == ReadState::InFlight
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
        let intact =
            complete && crate::index_file::page_verify(&disk.buffer(read.buffer)[..SECTOR_SIZE]);
        if intact {
            return Some(read.buffer);
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
    pub(super) fn continue_record<D: Disk>(
        &mut self,
        disk: &mut D,
        stats: &mut Stats,
        events: &mut Vec<Event>,
        slot: usize,
        location: Location,
        payload_size: u32,
    ) {
        let read = &mut self.slots[slot];
        let size = record::record_size(payload_size as usize);
        let start = crate::stdx::align_down_u64(location.position.0, to_u64(SECTOR_SIZE));
        let end =
            crate::stdx::align_up_u64(location.position.0 + to_u64(size), to_u64(SECTOR_SIZE));
        read.page = None;
        read.location = location;
        read.payload_size = payload_size;
        read.start = start;
        read.length = to_usize(end - start);
        read.attempts = 0;
        self.submit(disk, events, slot);
        stats.reads_disk += 1;
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
                let offset = to_usize(read.location.position.0 - read.start);
                let size = record::record_size(read.payload_size as usize);
                let bytes = &disk.buffer(read.buffer)[offset..offset + size];
                let body = verify(bytes, Expected::of(read));
                Ok((read.entry, body.expect("verified at completion")))
            }
            ReadState::Failed(error) => Err(error),
            ReadState::Free | ReadState::InFlight => panic!("read {slot:?} is not finished"),
        }
    }

    /// Frees a finished read's slot.
    pub(super) fn release(&mut self, slot: ReadSlot) {
        let read = &mut self.slots[slot.0 as usize];
        assert!(matches!(read.state, ReadState::Done | ReadState::Failed(_)));
        read.state = ReadState::Free;
        self.free.push(slot.0);
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

    /// Gives up the oldest cached commit buffer (staging needs one), if any is cached.
    pub(super) fn cache_evict_oldest(&mut self) -> Option<BufferId> {
        self.cache.pop_front().map(|cached| cached.buffer)
    }
}

fn slot_u32(slot: usize) -> u32 {
    u32::try_from(slot).expect("read slots are few")
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
        let (disk, stats, events) = (&mut self.disk, &mut self.stats, &mut self.events);
        match next {
            Ok(Resolved::Record(found)) => self.reads.continue_record(
                disk,
                stats,
                events,
                slot,
                found.location(),
                found.payload_size(),
            ),
            Ok(Resolved::Page(next_page)) => {
                self.reads
                    .continue_page(disk, stats, events, slot, next_page);
            }
            Err(error) => self.reads.fail(events, slot, error),
        }
    }
}
