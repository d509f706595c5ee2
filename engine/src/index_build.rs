//! Building the files that let a restart skip the records: a sealed segment's index from the
//! in-memory entry arrays of that segment, and the checkpoint from every ledger's state.
//!
//! Both are produced in chunks into a caller's buffer, so the journal can write a large index
//! through one bounded buffer without copying the slot table into memory first
//! (`journal/seal.rs` asynchronously, `recovery/sealed.rs` blocking at open).

use crate::checkpoint::{self, CheckpointHeader, LedgerState, ScrubPosition, Tombstone};
use crate::constants::SECTOR_SIZE;
use crate::ids::{EntryId, SegmentId, Sequence};
use crate::index::{Index, OpenSlot};
use crate::index_file::{self, IndexHeader, Run, PAGE_SLOTS, RUN_GAP_SLOTS_MAX, RUN_SIZE};
use crate::record;
use crate::stdx::{to_u64, to_usize};

/// What an index says about its segment beyond the entries: the record chain at both ends
/// and where its data ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegmentSpan {
    pub segment: SegmentId,
    /// Sequence of the segment's first record.
    pub sequence_first: Sequence,
    /// Sequence of its last record.
    pub sequence_last: Sequence,
    /// `crc_header` of its last record.
    pub checksum_last: u32,
    /// The end of its last commit.
    pub data_end: u64,
    /// The segment's generation: 0, or how many times it was compacted.
    pub generation: u32,
}

/// Where an index's slots come from.
#[derive(Clone, Copy, Debug)]
pub enum SlotSource<'a> {
    /// The entry arrays an `Index` holds for an unsealed segment.
    Index(&'a Index),
    /// Every slot of the table, holes included, in slot order (a compacted copy's).
    Table(&'a [OpenSlot]),
}

/// The runs of `segment`'s index, from the entry arrays `index` holds for it.
#[must_use]
pub fn runs_of(index: &Index, segment: SegmentId) -> Vec<Run> {
    let mut runs: Vec<Run> = Vec::new();
    let mut slot_next = 0u64;
    for ledger in index.ledgers_in_open_segment(segment) {
        let open = index
            .open_segment_slots(ledger, segment)
            .expect("listed above");
        let mut current: Option<Run> = None;
        for (entry, slot) in open.held() {
            let bytes = to_u64(record::record_size(slot.payload_size as usize));
            match current.as_mut() {
                Some(run)
                    if u64::try_from(entry.0 - run.entry_last.0 - 1).expect("ascending")
                        <= RUN_GAP_SLOTS_MAX =>
                {
                    run.entry_last = entry;
                    run.entries += 1;
                    run.bytes += bytes;
                }
                _ => {
                    if let Some(run) = current.take() {
                        slot_next += run.slot_count();
                        runs.push(run);
                    }
                    current = Some(Run {
                        ledger,
                        entry_first: entry,
                        entry_last: entry,
                        slot_first: slot_next,
                        entries: 1,
                        bytes,
                    });
                }
            }
        }
        if let Some(run) = current {
            slot_next += run.slot_count();
            runs.push(run);
        }
    }
    runs
}

/// Writes a sealed segment's index file in chunks. See the module docs.
#[derive(Debug)]
pub struct IndexWriter {
    span: SegmentSpan,
    runs: Vec<Run>,
    /// Header sector and run table, padded to a sector.
    prefix: Vec<u8>,
    /// Bytes produced so far.
    produced: u64,
    file_size: u64,
    /// Next slot to produce: its run and its offset in the run.
    cursor_run: usize,
    cursor_offset: u64,
}

impl IndexWriter {
    /// A writer for `span.segment`'s index with `runs` (from `runs_of`).
    #[must_use]
    pub fn new(span: SegmentSpan, runs: Vec<Run>) -> IndexWriter {
        let run_count = u32::try_from(runs.len()).expect("runs of one segment fit u32");
        let slot_count: u64 = runs.iter().map(Run::slot_count).sum();
        let table_offset = index_file::slot_table_offset(run_count);
        let mut prefix = vec![0u8; to_usize(table_offset)];
        let table = &mut prefix[SECTOR_SIZE..];
        for (run, bytes) in runs.iter().zip(table.chunks_exact_mut(RUN_SIZE)) {
            index_file::encode_run(bytes, run);
        }
        let checksum_runs = crc32c::crc32c(&table[..runs.len() * RUN_SIZE]);
        let header = IndexHeader {
            segment: span.segment,
            run_count,
            slot_count,
            sequence_first: span.sequence_first,
            sequence_last: span.sequence_last,
            checksum_last: span.checksum_last,
            checksum_runs,
            data_end: span.data_end,
            generation: span.generation,
        };
        index_file::encode_header(&mut prefix[..SECTOR_SIZE], &header);
        IndexWriter {
            span,
            runs,
            prefix,
            produced: 0,
            file_size: index_file::file_size(run_count, slot_count),
            cursor_run: 0,
            cursor_offset: 0,
        }
    }

    /// The segment indexed.
    #[must_use]
    pub fn segment(&self) -> SegmentId {
        self.span.segment
    }

    /// Size of the whole file.
    #[must_use]
    pub fn file_size(&self) -> u64 {
        self.file_size
    }

    /// Bytes produced so far (the file offset of the next chunk).
    #[must_use]
    pub fn produced(&self) -> u64 {
        self.produced
    }

    /// True when every byte has been produced.
    #[must_use]
    pub fn is_done(&self) -> bool {
        self.produced == self.file_size
    }

    /// The runs written, for the index once the file is durable.
    #[must_use]
    pub fn runs(&self) -> &[Run] {
        &self.runs
    }

    /// Where the slot table starts and how many slots it has.
    #[must_use]
    pub fn slot_table(&self) -> (u64, u64) {
        let run_count = u32::try_from(self.runs.len()).expect("checked in new");
        let slots = self.runs.iter().map(Run::slot_count).sum();
        (index_file::slot_table_offset(run_count), slots)
    }

    /// Produces the next bytes of the file into `out` (a multiple of the sector size) and
    /// returns how many; an `Index` source must still hold the segment's entry arrays.
    pub fn fill(&mut self, source: SlotSource<'_>, out: &mut [u8]) -> usize {
        assert!(out.len() % SECTOR_SIZE == 0 && !out.is_empty());
        let mut length = 0;
        while length < out.len() && !self.is_done() {
            let produced = to_usize(self.produced);
            if produced < self.prefix.len() {
                let take = (self.prefix.len() - produced).min(out.len() - length);
                out[length..length + take].copy_from_slice(&self.prefix[produced..produced + take]);
                length += take;
                self.produced += to_u64(take);
                continue;
            }
            self.fill_page(source, &mut out[length..length + SECTOR_SIZE]);
            length += SECTOR_SIZE;
            self.produced += to_u64(SECTOR_SIZE);
        }
        length
    }

    fn fill_page(&mut self, source: SlotSource<'_>, page: &mut [u8]) {
        let segment = self.span.segment;
        let mut at = 0;
        while at < PAGE_SLOTS && self.cursor_run < self.runs.len() {
            let run = self.runs[self.cursor_run];
            let take = (run.slot_count() - self.cursor_offset).min(to_u64(PAGE_SLOTS - at));
            for k in 0..take {
                let offset = self.cursor_offset + k;
                let slot = match source {
                    SlotSource::Index(index) => {
                        match index.open_segment_slots(run.ledger, segment) {
                            Some(open) => {
                                let entry = run.entry_first.0
                                    + i64::try_from(offset).expect("slot offsets fit i64");
                                open_slot(open.entry_base, &open.slots, EntryId(entry))
                            }
                            None => {
                                // Deleted while the index is written (its file is created and
                                // written over several turns): the run stays listed, its slots
                                // holes. Nothing reads them: `Index::seal` skips a deleted
                                // ledger's runs, and until the checkpoint that covers this
                                // segment (and holds the tombstone) is durable, open scans
                                // the segment instead of using its index.
                                assert!(
                                    index.is_deleted(run.ledger),
                                    "a segment's entry arrays stay until its index is durable"
                                );
                                None
                            }
                        }
                    }
                    SlotSource::Table(table) => {
                        Some(table[to_usize(run.slot_first + offset)]).filter(OpenSlot::is_held)
                    }
                };
                let value = slot.map(|slot| (slot.position, slot.payload_size));
                index_file::page_slot_set(page, at + to_usize(k), value);
            }
            at += to_usize(take);
            self.cursor_offset += take;
            if self.cursor_offset == run.slot_count() {
                self.cursor_run += 1;
                self.cursor_offset = 0;
            }
        }
        for rest in at..PAGE_SLOTS {
            index_file::page_slot_set(page, rest, None);
        }
        index_file::page_seal(page);
    }
}

fn open_slot(base: i64, slots: &[OpenSlot], entry: EntryId) -> Option<OpenSlot> {
    let offset = usize::try_from(entry.0 - base).ok()?;
    slots.get(offset).copied().filter(OpenSlot::is_held)
}

/// The checkpoint's whole content: header sector (with the scrubber's position `scrub`) and
/// every ledger's state, sorted by id.
#[must_use]
pub fn checkpoint_bytes(
    index: &Index,
    resume_segment: SegmentId,
    sequence_next: Sequence,
    checksum_previous: u32,
    generation: u64,
    scrub: Option<ScrubPosition>,
) -> Vec<u8> {
    let mut ledgers: Vec<_> = index.ledgers().collect();
    ledgers.sort_unstable();
    let ledger_count = u32::try_from(ledgers.len()).expect("ledgers of one shard fit u32");
    let tombstones: Vec<Tombstone> = index
        .tombstones()
        .map(|(ledger, segment_last)| Tombstone {
            ledger,
            segment_last,
        })
        .collect();
    let tombstone_count = u32::try_from(tombstones.len()).expect("tombstones fit u32");
    let size = checkpoint::file_size(ledger_count, tombstone_count);
    let mut bytes = vec![0u8; to_usize(size)];
    let tombstone_offset = to_usize(checkpoint::tombstone_table_offset(ledger_count));
    let tombstone_bytes = tombstones.len() * checkpoint::TOMBSTONE_SIZE;
    for (tombstone, out) in tombstones.iter().zip(
        bytes[tombstone_offset..tombstone_offset + tombstone_bytes]
            .chunks_exact_mut(checkpoint::TOMBSTONE_SIZE),
    ) {
        checkpoint::encode_tombstone(out, tombstone);
    }
    let checksum_tombstones =
        crc32c::crc32c(&bytes[tombstone_offset..tombstone_offset + tombstone_bytes]);
    let table = &mut bytes[SECTOR_SIZE..];
    for (ledger, out) in ledgers
        .iter()
        .zip(table.chunks_exact_mut(checkpoint::LEDGER_RECORD_SIZE))
    {
        let state = index.ledger(*ledger).expect("listed");
        let record = LedgerState {
            ledger: *ledger,
            master_key: state.master_key,
            fenced: state.fenced,
            entry_last: state.entry_last,
            last_add_confirmed: state.last_add_confirmed,
            explicit_lac: state
                .explicit_lac
                .map(|slot| (slot.location(), slot.payload_size())),
            digest: state.digest,
        };
        checkpoint::encode_ledger(out, &record);
    }
    let checksum_ledgers = crc32c::crc32c(&table[..ledgers.len() * checkpoint::LEDGER_RECORD_SIZE]);
    let header = CheckpointHeader {
        resume_segment,
        checksum_previous,
        sequence_next,
        ledger_count,
        checksum_ledgers,
        generation,
        tombstone_count,
        checksum_tombstones,
        scrub,
    };
    checkpoint::encode_header(&mut bytes[..SECTOR_SIZE], &header);
    let damaged: Vec<_> = index.damaged().collect();
    checkpoint::encode_damaged(&mut bytes[..SECTOR_SIZE], &damaged);
    bytes
}
