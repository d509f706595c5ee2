//! The sealed-segment index file `NNNNNNNNNN.index`, as pure functions (docs/format.md,
//! "Sealed-segment index").
//!
//! A segment is sealed once the write head has moved past it and its last commit is durable.
//! Its index is then written once: a header sector, a run table, and a slot table. A *run* is
//! one ledger's entries in the segment over a range of entry ids dense enough to address by
//! `entry - entry_first` (a gap of more than `RUN_GAP_SLOTS_MAX` ids starts a new run). The
//! slot table holds, for every id of every run in (ledger, entry) order, the record's position
//! and payload size, in 4 KiB pages that each carry their own CRC32C, so one page can be read
//! and verified on its own when a read needs it.
//!
//! Header sector: `0 magic "RLGI" | 4 version u8 | 5..8 zero | 8 segment id u32 |
//!  12 run count u32 | 16 slot count u64 | 24 first record's sequence u64 |
//!  32 last record's sequence u64 | 40 last record's crc_header u32 | 44 CRC32C of the run
//!  table u32 | 48 end of the segment's data u64 | 56 segment generation u32 |
//!  60 CRC32C of bytes 0..60 u32` (version 2). Version 1, written before compaction existed,
//!  has no generation (it is 0) and its CRC32C of bytes 0..56 at 56; it is still read.

use crate::constants::SECTOR_SIZE;
use crate::ids::{EntryId, LedgerId, SegmentId, Sequence};
use crate::stdx::{
    align_up, le_i64 as i64_at, le_u32 as u32_at, le_u64 as u64_at, to_u64, to_usize,
};

/// `RLGI` read as a little-endian u32.
pub const INDEX_MAGIC: u32 = u32::from_le_bytes(*b"RLGI");
/// Current index format version.
pub const INDEX_VERSION: u8 = 2;
/// The version before the segment generation, still read.
pub const INDEX_VERSION_V1: u8 = 1;
/// Bytes of one run in the run table.
pub const RUN_SIZE: usize = 48;
/// Bytes of one slot: position u32, payload size u32.
pub const SLOT_SIZE: usize = 8;
/// Slots per 4 KiB page; the page's last 8 bytes hold its CRC32C and four zero bytes.
pub const PAGE_SLOTS: usize = (SECTOR_SIZE - 8) / SLOT_SIZE;
/// A ledger's entries in one segment split into a new run when more than this many ids in a
/// row are missing: a hole of at most one page is cheaper on disk than a run in memory.
pub const RUN_GAP_SLOTS_MAX: u64 = PAGE_SLOTS as u64;
/// Payload size of an empty slot (an id the run spans but the segment does not hold).
const SLOT_HOLE: u32 = u32::MAX;

const _: () = assert!(PAGE_SLOTS * SLOT_SIZE + 8 == SECTOR_SIZE);

/// The header of an index file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IndexHeader {
    /// The segment indexed.
    pub segment: SegmentId,
    /// Runs in the run table.
    pub run_count: u32,
    /// Slots in the slot table, holes included.
    pub slot_count: u64,
    /// Sequence of the segment's first record.
    pub sequence_first: Sequence,
    /// Sequence of the segment's last record.
    pub sequence_last: Sequence,
    /// `crc_header` of the segment's last record: the next segment's records chain to it.
    pub checksum_last: u32,
    /// CRC32C of the run table (`run_count * RUN_SIZE` bytes).
    pub checksum_runs: u32,
    /// Where the segment's data ends (the end of its last commit).
    pub data_end: u64,
    /// The generation of the segment indexed (its header's).
    pub generation: u32,
}

/// One ledger's entries over a dense range of ids in one segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    /// The ledger.
    pub ledger: LedgerId,
    /// First entry id of the range (it is held).
    pub entry_first: EntryId,
    /// Last entry id of the range (it is held).
    pub entry_last: EntryId,
    /// The slot of `entry_first` in the slot table.
    pub slot_first: u64,
    /// Entries held in the range (its slots that are not holes).
    pub entries: u32,
    /// Bytes of those entries' records on disk, headers and padding included.
    pub bytes: u64,
}

impl Run {
    /// Slots the run spans, holes included.
    #[must_use]
    pub fn slot_count(&self) -> u64 {
        u64::try_from(self.entry_last.0 - self.entry_first.0 + 1).expect("entry_last >= first")
    }

    /// The slot of `entry`, if the run's range holds it.
    #[must_use]
    pub fn slot_of(&self, entry: EntryId) -> Option<u64> {
        let range = self.entry_first.0..=self.entry_last.0;
        range.contains(&entry.0).then(|| {
            self.slot_first + u64::try_from(entry.0 - self.entry_first.0).expect("in range")
        })
    }
}

/// Why an index or checkpoint file is not acceptable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileFormatError {
    /// Not this kind of file (magic wrong) or too short.
    Magic,
    /// A format version this build does not know.
    Version(u8),
    /// A checksum does not match.
    Checksum,
    /// The file names another segment, or its counts do not fit its size.
    Identity,
}

impl std::fmt::Display for FileFormatError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FileFormatError::Magic => write!(f, "bad magic"),
            FileFormatError::Version(version) => write!(f, "unknown format version {version}"),
            FileFormatError::Checksum => write!(f, "checksum mismatch"),
            FileFormatError::Identity => write!(f, "inconsistent header"),
        }
    }
}

/// The checks every versioned file header shares: magic, version, then the checksum over
/// `0..checksum_at` (stored at `checksum_at`). The version comes before the checksum because
/// a newer format may put its checksum elsewhere: its files must be refused by name, never
/// taken for damage and rebuilt over.
pub fn header_verify(
    sector: &[u8],
    magic: u32,
    version: u8,
    checksum_at: usize,
) -> Result<(), FileFormatError> {
    if sector.len() < checksum_at + 4 || u32_at(sector, 0) != magic {
        return Err(FileFormatError::Magic);
    }
    if sector[4] != version {
        return Err(FileFormatError::Version(sector[4]));
    }
    if crc32c::crc32c(&sector[0..checksum_at]) != u32_at(sector, checksum_at) {
        return Err(FileFormatError::Checksum);
    }
    Ok(())
}

/// Byte offset of the run table.
pub const RUN_TABLE_OFFSET: u64 = SECTOR_SIZE as u64;

/// Byte offset of the slot table: after the run table, padded to a sector.
#[must_use]
pub fn slot_table_offset(run_count: u32) -> u64 {
    RUN_TABLE_OFFSET
        + to_u64(align_up(
            to_usize(u64::from(run_count)) * RUN_SIZE,
            SECTOR_SIZE,
        ))
}

/// Pages of a slot table of `slot_count` slots.
#[must_use]
pub fn page_count(slot_count: u64) -> u64 {
    slot_count.div_ceil(to_u64(PAGE_SLOTS))
}

/// Size of the whole file, a multiple of the sector size.
#[must_use]
pub fn file_size(run_count: u32, slot_count: u64) -> u64 {
    slot_table_offset(run_count) + page_count(slot_count) * to_u64(SECTOR_SIZE)
}

/// The page holding slot `slot` and the slot's index inside it.
#[must_use]
pub fn page_of(slot: u64) -> (u64, usize) {
    let per_page = to_u64(PAGE_SLOTS);
    (slot / per_page, to_usize(slot % per_page))
}

/// Fills `sector` with the header.
pub fn encode_header(sector: &mut [u8], header: &IndexHeader) {
    assert_eq!(sector.len(), SECTOR_SIZE);
    sector.fill(0);
    sector[0..4].copy_from_slice(&INDEX_MAGIC.to_le_bytes());
    sector[4] = INDEX_VERSION;
    sector[8..12].copy_from_slice(&header.segment.0.to_le_bytes());
    sector[12..16].copy_from_slice(&header.run_count.to_le_bytes());
    sector[16..24].copy_from_slice(&header.slot_count.to_le_bytes());
    sector[24..32].copy_from_slice(&header.sequence_first.0.to_le_bytes());
    sector[32..40].copy_from_slice(&header.sequence_last.0.to_le_bytes());
    sector[40..44].copy_from_slice(&header.checksum_last.to_le_bytes());
    sector[44..48].copy_from_slice(&header.checksum_runs.to_le_bytes());
    sector[48..56].copy_from_slice(&header.data_end.to_le_bytes());
    sector[56..60].copy_from_slice(&header.generation.to_le_bytes());
    let checksum = crc32c::crc32c(&sector[0..60]);
    sector[60..64].copy_from_slice(&checksum.to_le_bytes());
}

/// Decodes and verifies the header of segment `segment`'s index, whose file is `file_size`
/// bytes long.
pub fn decode_header(
    sector: &[u8],
    segment: SegmentId,
    file_size: u64,
) -> Result<IndexHeader, FileFormatError> {
    let generation = if sector.len() > 4 && sector[4] == INDEX_VERSION_V1 {
        header_verify(sector, INDEX_MAGIC, INDEX_VERSION_V1, 56)?;
        0
    } else {
        header_verify(sector, INDEX_MAGIC, INDEX_VERSION, 60)?;
        u32_at(sector, 56)
    };
    let header = IndexHeader {
        segment: SegmentId(u32_at(sector, 8)),
        run_count: u32_at(sector, 12),
        slot_count: u64_at(sector, 16),
        sequence_first: Sequence(u64_at(sector, 24)),
        sequence_last: Sequence(u64_at(sector, 32)),
        checksum_last: u32_at(sector, 40),
        checksum_runs: u32_at(sector, 44),
        data_end: u64_at(sector, 48),
        generation,
    };
    let sizes_fit = header.slot_count <= file_size
        && file_size == file_size_checked(header.run_count, header.slot_count);
    if header.segment != segment || !sizes_fit || header.sequence_last < header.sequence_first {
        return Err(FileFormatError::Identity);
    }
    Ok(header)
}

fn file_size_checked(run_count: u32, slot_count: u64) -> u64 {
    // Slot counts come from disk: keep the arithmetic from overflowing before the comparison.
    if slot_count > u64::from(u32::MAX) * to_u64(PAGE_SLOTS) {
        return u64::MAX;
    }
    file_size(run_count, slot_count)
}

/// Writes `run` into its `RUN_SIZE` bytes of the run table.
pub fn encode_run(out: &mut [u8], run: &Run) {
    assert_eq!(out.len(), RUN_SIZE);
    out[0..8].copy_from_slice(&run.ledger.0.to_le_bytes());
    out[8..16].copy_from_slice(&run.entry_first.0.to_le_bytes());
    out[16..24].copy_from_slice(&run.entry_last.0.to_le_bytes());
    out[24..32].copy_from_slice(&run.slot_first.to_le_bytes());
    out[32..36].copy_from_slice(&run.entries.to_le_bytes());
    out[36..40].fill(0);
    out[40..48].copy_from_slice(&run.bytes.to_le_bytes());
}

/// Decodes the run table (`header.run_count` runs) and checks it: checksum, runs sorted by
/// (ledger, entry), slots consecutive and within the slot table.
pub fn decode_runs(table: &[u8], header: &IndexHeader) -> Result<Vec<Run>, FileFormatError> {
    let count = to_usize(u64::from(header.run_count));
    let bytes = table
        .get(..count * RUN_SIZE)
        .ok_or(FileFormatError::Identity)?;
    if crc32c::crc32c(bytes) != header.checksum_runs {
        return Err(FileFormatError::Checksum);
    }
    let mut runs = Vec::with_capacity(count);
    let mut slot_next = 0u64;
    for chunk in bytes.chunks_exact(RUN_SIZE) {
        let run = Run {
            ledger: LedgerId(i64_at(chunk, 0)),
            entry_first: EntryId(i64_at(chunk, 8)),
            entry_last: EntryId(i64_at(chunk, 16)),
            slot_first: u64_at(chunk, 24),
            entries: u32_at(chunk, 32),
            bytes: u64_at(chunk, 40),
        };
        let ordered = runs.last().is_none_or(|previous: &Run| {
            (previous.ledger, previous.entry_last) < (run.ledger, run.entry_first)
        });
        // The span is checked against the slot count before anything computes with it: a
        // checksummed but absurd run must not overflow (found by reasoning about `slot_count`).
        let span_fits = run
            .entry_last
            .0
            .checked_sub(run.entry_first.0)
            .and_then(|span| u64::try_from(span).ok())
            .is_some_and(|span| span < header.slot_count);
        let valid = run.entry_first.0 >= 0
            && run.entry_last >= run.entry_first
            && span_fits
            && run.slot_first == slot_next
            && u64::from(run.entries) <= run.slot_count()
            && run.entries > 0;
        if !ordered || !valid {
            return Err(FileFormatError::Identity);
        }
        slot_next = slot_next
            .checked_add(run.slot_count())
            .ok_or(FileFormatError::Identity)?;
        runs.push(run);
    }
    if slot_next != header.slot_count {
        return Err(FileFormatError::Identity);
    }
    Ok(runs)
}

/// Sets slot `index` of a page: the record's position and payload size, or a hole.
pub fn page_slot_set(page: &mut [u8], index: usize, slot: Option<(u32, u32)>) {
    assert!(index < PAGE_SLOTS);
    let (position, size) = slot.unwrap_or((0, SLOT_HOLE));
    assert!(slot.is_none() || size != SLOT_HOLE);
    let at = index * SLOT_SIZE;
    page[at..at + 4].copy_from_slice(&position.to_le_bytes());
    page[at + 4..at + 8].copy_from_slice(&size.to_le_bytes());
}

/// Slot `index` of a verified page: position and payload size, or `None` for a hole.
#[must_use]
pub fn page_slot(page: &[u8], index: usize) -> Option<(u32, u32)> {
    assert!(index < PAGE_SLOTS);
    let at = index * SLOT_SIZE;
    let size = u32_at(page, at + 4);
    (size != SLOT_HOLE).then(|| (u32_at(page, at), size))
}

/// Writes a page's checksum; slots past the table's end must already be holes.
pub fn page_seal(page: &mut [u8]) {
    assert_eq!(page.len(), SECTOR_SIZE);
    let checksum = crc32c::crc32c(&page[..PAGE_SLOTS * SLOT_SIZE]);
    page[PAGE_SLOTS * SLOT_SIZE..PAGE_SLOTS * SLOT_SIZE + 4]
        .copy_from_slice(&checksum.to_le_bytes());
    page[PAGE_SLOTS * SLOT_SIZE + 4..].fill(0);
}

/// True when a page read back is intact.
#[must_use]
pub fn page_verify(page: &[u8]) -> bool {
    page.len() == SECTOR_SIZE
        && crc32c::crc32c(&page[..PAGE_SLOTS * SLOT_SIZE]) == u32_at(page, PAGE_SLOTS * SLOT_SIZE)
}
