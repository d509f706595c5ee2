//! Reads of durable records: served at once from the cache of recent durable commit buffers,
//! or by a disk read into a read slot that reports `Event::ReadDone`. Every record read is
//! checked against the identity the index expects at its location, so a misdirected read or
//! write that is internally valid is caught; a disk read that fails the check is retried once.
//! A read that is part of a sequential scan goes through a read-ahead window instead of a
//! read of its own (`read_ahead.rs`); one whose window the pace does not admit yet
//! (`read_pace.rs`) waits for it in a queue, first in, first out.
//!
//! This file holds the read slots and the cache: a slot's own disk read (submitted, checked,
//! retried once), its result and release. `reads/plan.rs` decides how each read is served
//! (the cache, a read-ahead window, paced, or alone) and settles the reads waiting on a
//! window; `reads/resolve.rs` finds where an entry is, reading a sealed index page first
//! when the page cache lacks it.

mod plan;
mod resolve;

use super::read_ahead::ReadAhead;
use super::scrub::DamageFound;
use super::{Event, Stats, TOKEN_READ};
use crate::constants::{READ_WINDOW_WAITERS_MAX, SECTOR_SIZE};
use crate::disk::{BufferId, Disk};
use crate::error::ReadError;
use crate::ids::FileId;
use crate::ids::{EntryId, LedgerId, Location, Position, SegmentId};
use crate::index::{SealedRun, Slot};
use crate::record::{self, RecordKind};
use crate::segment_check::Damage;
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
/// its windows must end: the readable bytes of its segment (its file, or its durable
/// records), or, in a sorted segment, where its ledger's run leaves (`read_extent.rs`).
#[derive(Clone, Copy, Debug)]
pub(super) struct Scan {
    pub sequential: bool,
    pub segment_end: u64,
    /// Its ledger is too sparse where it is for a window (`read_extent.rs`): read it alone.
    pub sparse: bool,
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
    /// Its ledger was too sparse there for a window (`Scan::sparse`).
    sparse: bool,
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
    /// Pages read from `offset`: 2 when the run goes on into the next page and it is not
    /// cached, so a scan's window knows where the run ends past this page
    /// (`read_extent.rs`); that page is cached only if it verifies.
    pub pages: usize,
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
                sparse: false,
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

    /// True when a scan's read of `[position, position + size)` of `segment` may start a
    /// read-ahead window (`ReadAhead::may_start`).
    pub(super) fn window_may_start(&self, segment: SegmentId, position: u64, size: usize) -> bool {
        self.ahead.may_start(segment, position, size)
    }

    /// True while many scans read at once (`ReadAhead::scans_many`).
    pub(super) fn scans_many(&self) -> bool {
        self.ahead.scans_many()
    }

    /// Notes a read of `entry` of `ledger`: true if it continues a sequential scan.
    pub(super) fn sequential(&mut self, ledger: LedgerId, entry: EntryId) -> bool {
        self.ahead.sequential(ledger, entry)
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
            Some(page) => (
                FileId::Index(page.run.segment),
                page.offset,
                page.pages * SECTOR_SIZE,
            ),
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
            let expected = Expected::of(&read);
            if complete && expected.kind == RecordKind::Entry {
                // Read twice, damaged twice: the repair a scrub would ask for, asked now.
                events.push(Event::Damage(DamageFound {
                    file: FileId::Segment(expected.location.segment),
                    position: Some(expected.location.position.0),
                    damage: Damage::FoundByRead,
                    entry: Some((expected.ledger, expected.entry)),
                }));
            }
        } else {
            self.slots[slot].state = ReadState::Done;
        }
        events.push(Event::ReadDone {
            token: read.token,
            slot: ReadSlot(slot_u32(slot)),
        });
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

/// Where a read of an entry goes next.
#[derive(Clone, Copy, Debug)]
pub(super) enum Resolved {
    /// The record is here.
    Record(Slot),
    /// An index page must be read first.
    Page(PageRead),
}
