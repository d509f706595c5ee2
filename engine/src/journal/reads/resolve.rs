//! Where an entry is: the unsealed entry arrays, or a sealed run's slot in an index page
//! (`Journal::entry_resolve`); a read whose page is not cached reads the page first, then
//! goes on to the record, or to an older run's page after a hole.

use super::{PageRead, ReadState, Reads, Resolved};
use crate::constants::{RECORD_PAYLOAD_SIZE_MAX, SECTOR_SIZE, SEGMENT_HEADER_SIZE};
use crate::disk::{BufferId, Disk};
use crate::error::ReadError;
use crate::ids::{EntryId, LedgerId, Location, Position, SegmentId};
use crate::index::{Lookup, Slot};
use crate::index_file;
use crate::journal::read_extent::Extent;
use crate::journal::{Event, Journal, Stats};
use crate::record::{self, RecordKind};
use crate::stdx::to_u64;

impl Reads {
    /// Starts a read whose first step is fetching an index page.
    #[allow(clippy::too_many_arguments)]
    pub(in crate::journal) fn start_page<D: Disk>(
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

    /// The index page a read in flight is fetching, if that is its step.
    pub(super) fn page_pending(&self, slot: usize) -> Option<PageRead> {
        let read = &self.slots[slot];
        (read.state == ReadState::InFlight)
            .then_some(read.page)
            .flatten()
    }

    /// True when the read in `slot` is part of a sequential scan.
    pub(super) fn sequential_at(&self, slot: usize) -> bool {
        self.slots[slot].sequential
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
        let pages = read.page.map_or(1, |page| page.pages);
        let complete = usize::try_from(result).is_ok_and(|count| count == pages * SECTOR_SIZE);
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

impl<D: Disk> Journal<D> {
    /// Finds `entry` of `ledger` through the unsealed entry arrays and the cached index
    /// pages, trying sealed runs newest first from the `skip`-th on.
    pub(in crate::journal) fn entry_resolve(
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
                // The run's slots go on into the next page, which the table has: read it in
                // the same I/O, so a window started in this page sees the run's end. Not
                // while many scans read at once: their windows are read whole anyway
                // (`read_extent.rs`), and with the pages ahead read an all-ledgers read of
                // 500 ledgers ran at 157-171 MB/s against 220 in the same hour (one run each,
                // 2026-12-07; the cause not isolated), so that read stays as it was.
                let (page_last, _) = index_file::page_of(run.slot_of(EntryId(run.entry_last)));
                let next_wanted = !self.reads.scans_many()
                    && page_last > page
                    && page + 1 < index_file::page_count(table.slot_count)
                    && !self.index_pages.contains(run.segment, page + 1);
                return Ok(Resolved::Page(PageRead {
                    run,
                    candidate,
                    page,
                    offset,
                    at,
                    pages: if next_wanted { 2 } else { 1 },
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
    pub(in crate::journal) fn read_on_complete(&mut self, slot: usize, result: i32) {
        let (disk, stats, events) = (&mut self.disk, &mut self.stats, &mut self.events);
        let Some(page) = self.reads.page_pending(slot) else {
            self.reads.on_complete(disk, stats, events, slot, result);
            return;
        };
        let Some(buffer) = self.reads.page_complete(disk, stats, events, slot, result) else {
            return;
        };
        if page.pages == 2 {
            let next = &self.disk.buffer(buffer)[SECTOR_SIZE..2 * SECTOR_SIZE];
            // Only a hint for read-ahead's extents: a page that fails its check is not
            // cached, and a read that needs it fetches and checks it as any other.
            if index_file::page_verify(next) {
                self.index_pages
                    .insert(page.run.segment, page.page + 1, next);
            }
        }
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
        let (segment_end, extent) = match next {
            Ok(Resolved::Record(found)) => {
                let size = record::record_size(found.payload_size() as usize);
                let extent = if self.reads.sequential_at(slot) {
                    self.read_extent(ledger, entry, found.location(), size)
                } else {
                    Extent::UNKNOWN
                };
                (self.readable_end(found.location().segment), extent)
            }
            _ => (0, Extent::UNKNOWN),
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
                extent,
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
