//! The checkpoint file `checkpoint`, as pure functions (docs/format.md, "Checkpoint").
//!
//! Written after each segment is sealed, atomically (temporary file, fdatasync, rename over
//! the old one, directory fsync). It says where recovery resumes scanning (the first segment
//! it does not cover, and the record chain there) and holds every ledger's state as of then,
//! so a restart reads this file and the sealed indexes instead of every record.
//!
//! Header sector: `0 magic "RLGC" | 4 version u8 | 5..8 zero | 8 resume segment u32 |
//!  12 crc_header of the last record before it u32 | 16 sequence of its first record u64 |
//!  24 ledger count u32 | 28 CRC32C of the ledger table u32 | 32 generation u64 |
//!  40 tombstone count u32 | 44 CRC32C of the tombstone table u32 | 48 CRC32C of bytes 0..48 |
//!  52 flags u32 (bit 0: scrub position present) | 56 scrub next segment u32 |
//!  60 scrub cycle start u32 | 64 scrub cycles completed u64 | 72 CRC32C of bytes 52..72`
//!  (version 2). Version 1, written before the scrubber existed, ends at 52 (no scrub
//!  position); it is still read.
//! The ledger table follows at byte 4096, sorted by ledger id, `LEDGER_RECORD_SIZE` bytes each
//! (see `encode_ledger`), then, from the next sector boundary, the tombstone table: deleted
//! ledgers, `TOMBSTONE_SIZE` bytes each, sorted by id (see `encode_tombstone`).

use crate::constants::{MASTER_KEY_SIZE, SECTOR_SIZE};
use crate::ids::{EntryId, LedgerId, Location, Position, SegmentId, Sequence};
use crate::index_file::FileFormatError;
use crate::stdx::{align_up, le_i64, le_u32 as u32_at, le_u64 as u64_at, to_u64};

/// `RLGC` read as a little-endian u32.
pub const CHECKPOINT_MAGIC: u32 = u32::from_le_bytes(*b"RLGC");
/// Current checkpoint format version.
pub const CHECKPOINT_VERSION: u8 = 2;
/// The version before the scrub position, still read.
pub const CHECKPOINT_VERSION_V1: u8 = 1;
/// Bytes of one ledger's state in the ledger table.
pub const LEDGER_RECORD_SIZE: usize = 80;
/// Byte offset of the ledger table.
pub const LEDGER_TABLE_OFFSET: u64 = SECTOR_SIZE as u64;
/// Bytes of one deleted ledger in the tombstone table.
pub const TOMBSTONE_SIZE: usize = 16;

const FLAG_FENCED: u8 = 1;
const FLAG_EXPLICIT_LAC: u8 = 2;
/// Header flags (version 2): the scrub position at 56..72 is present.
const HEADER_FLAG_SCRUB: u32 = 1;
/// Header flags (version 2): the damaged-entry list from byte 76 is present.
const HEADER_FLAG_DAMAGED: u32 = 2;
/// Where the damaged-entry list starts in the header sector: `76 count u32 | 80 CRC32C of
/// bytes 76..80 and the entries | 84 + 16 i: ledger i64, entry i64`.
const DAMAGED_AT: usize = 76;
const DAMAGED_ENTRIES_AT: usize = 84;
/// Damaged entries a checkpoint holds at most: what fits its header sector. The journal keeps
/// no more (`Index::damaged_insert`).
pub const DAMAGED_MAX: usize = (SECTOR_SIZE - DAMAGED_ENTRIES_AT) / 16;
/// The version-2 section after the version-1 header: flags, scrub position, its CRC32C.
const SCRUB_SECTION: std::ops::Range<usize> = 52..72;
const SCRUB_CHECKSUM_AT: usize = 72;

/// Where the scrubber is (docs/format.md, "Checkpoint"): it resumes at `segment_next` after a
/// restart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScrubPosition {
    /// The sealed segment the scrubber checks next (it restarts that segment from its start).
    pub segment_next: SegmentId,
    /// The segment the current cycle started at: the cycle is complete when the scrubber comes
    /// back to it.
    pub cycle_start: SegmentId,
    /// Full cycles completed since the journal was created.
    pub cycles_completed: u64,
}

/// The header of a checkpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckpointHeader {
    /// The first segment the checkpoint does not cover: recovery scans from its byte 4096.
    pub resume_segment: SegmentId,
    /// `crc_header` of the last record before `resume_segment` (0 for none).
    pub checksum_previous: u32,
    /// Sequence of the first record in `resume_segment`.
    pub sequence_next: Sequence,
    /// Ledgers in the ledger table.
    pub ledger_count: u32,
    /// CRC32C of the ledger table.
    pub checksum_ledgers: u32,
    /// Incremented by each checkpoint written (for logs and tests).
    pub generation: u64,
    /// Deleted ledgers in the tombstone table.
    pub tombstone_count: u32,
    /// CRC32C of the tombstone table.
    pub checksum_tombstones: u32,
    /// The scrubber's position when the checkpoint was written (`None`: none yet, or a
    /// version-1 checkpoint).
    pub scrub: Option<ScrubPosition>,
}

/// A deleted ledger: its records are skipped wherever they are still found (sealed indexes,
/// the scan after the resume point), until no segment that could hold one is left.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tombstone {
    pub ledger: LedgerId,
    /// The active segment when the ledger was deleted: no record of it lies beyond.
    pub segment_last: SegmentId,
}

/// Where the checkpoint on disk says recovery resumes (the journal keeps it to write the
/// next one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resume {
    pub segment: SegmentId,
    pub sequence_next: Sequence,
    pub checksum_previous: u32,
    /// The generation of the checkpoint on disk, 0 for none.
    pub generation: u64,
}

/// One ledger's state as the checkpoint keeps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LedgerState {
    pub ledger: LedgerId,
    pub master_key: [u8; MASTER_KEY_SIZE],
    pub fenced: bool,
    /// Highest durable entry id, -1 for none.
    pub entry_last: i64,
    pub last_add_confirmed: i64,
    /// The durable explicit-LAC record: where it is and its payload size.
    pub explicit_lac: Option<(Location, u32)>,
    /// The client's digest type, as learned (byte 29; version 1 files have 0: unknown).
    pub digest: crate::digest::DigestKind,
}

/// Byte offset of the tombstone table: after the ledger table, padded to a sector.
#[must_use]
pub fn tombstone_table_offset(ledger_count: u32) -> u64 {
    LEDGER_TABLE_OFFSET
        + to_u64(align_up(
            usize::try_from(ledger_count).expect("u32 fits usize") * LEDGER_RECORD_SIZE,
            SECTOR_SIZE,
        ))
}

/// Size of a checkpoint file, a multiple of the sector size.
#[must_use]
pub fn file_size(ledger_count: u32, tombstone_count: u32) -> u64 {
    tombstone_table_offset(ledger_count)
        + to_u64(align_up(
            usize::try_from(tombstone_count).expect("u32 fits usize") * TOMBSTONE_SIZE,
            SECTOR_SIZE,
        ))
}

/// Fills `sector` with the header.
pub fn encode_header(sector: &mut [u8], header: &CheckpointHeader) {
    assert_eq!(sector.len(), SECTOR_SIZE);
    sector.fill(0);
    sector[0..4].copy_from_slice(&CHECKPOINT_MAGIC.to_le_bytes());
    sector[4] = CHECKPOINT_VERSION;
    sector[8..12].copy_from_slice(&header.resume_segment.0.to_le_bytes());
    sector[12..16].copy_from_slice(&header.checksum_previous.to_le_bytes());
    sector[16..24].copy_from_slice(&header.sequence_next.0.to_le_bytes());
    sector[24..28].copy_from_slice(&header.ledger_count.to_le_bytes());
    sector[28..32].copy_from_slice(&header.checksum_ledgers.to_le_bytes());
    sector[32..40].copy_from_slice(&header.generation.to_le_bytes());
    sector[40..44].copy_from_slice(&header.tombstone_count.to_le_bytes());
    sector[44..48].copy_from_slice(&header.checksum_tombstones.to_le_bytes());
    let checksum = crc32c::crc32c(&sector[0..48]);
    sector[48..52].copy_from_slice(&checksum.to_le_bytes());
    if let Some(scrub) = header.scrub {
        sector[52..56].copy_from_slice(&HEADER_FLAG_SCRUB.to_le_bytes());
        sector[56..60].copy_from_slice(&scrub.segment_next.0.to_le_bytes());
        sector[60..64].copy_from_slice(&scrub.cycle_start.0.to_le_bytes());
        sector[64..72].copy_from_slice(&scrub.cycles_completed.to_le_bytes());
    }
    let checksum = crc32c::crc32c(&sector[SCRUB_SECTION]);
    sector[SCRUB_CHECKSUM_AT..SCRUB_CHECKSUM_AT + 4].copy_from_slice(&checksum.to_le_bytes());
}

/// Decodes and verifies a checkpoint header (version 2, or 1 without a scrub position);
/// `file_size` must match its ledger count.
pub fn decode_header(sector: &[u8], file_size: u64) -> Result<CheckpointHeader, FileFormatError> {
    // Bytes 0..52 are the same in both versions; version 1 ignores the rest.
    let version_1 = sector.get(4) == Some(&CHECKPOINT_VERSION_V1);
    let version = if version_1 {
        CHECKPOINT_VERSION_V1
    } else {
        CHECKPOINT_VERSION
    };
    crate::index_file::header_verify(sector, CHECKPOINT_MAGIC, version, 48)?;
    let scrub = if version_1 {
        None
    } else {
        scrub_decode(sector)?
    };
    let header = CheckpointHeader {
        resume_segment: SegmentId(u32_at(sector, 8)),
        checksum_previous: u32_at(sector, 12),
        sequence_next: Sequence(u64_at(sector, 16)),
        ledger_count: u32_at(sector, 24),
        checksum_ledgers: u32_at(sector, 28),
        generation: u64_at(sector, 32),
        tombstone_count: u32_at(sector, 40),
        checksum_tombstones: u32_at(sector, 44),
        scrub,
    };
    let size = self::file_size(header.ledger_count, header.tombstone_count);
    if file_size != size || header.sequence_next.0 == 0 {
        return Err(FileFormatError::Identity);
    }
    Ok(header)
}

/// The version-2 section of a header whose bytes 0..52 verified: its checksum, then flags.
fn scrub_decode(sector: &[u8]) -> Result<Option<ScrubPosition>, FileFormatError> {
    let section = sector.get(SCRUB_SECTION).ok_or(FileFormatError::Magic)?;
    let stored = sector
        .get(SCRUB_CHECKSUM_AT..SCRUB_CHECKSUM_AT + 4)
        .ok_or(FileFormatError::Magic)?;
    if crc32c::crc32c(section).to_le_bytes() != stored {
        return Err(FileFormatError::Checksum);
    }
    let flags = u32_at(sector, 52);
    if flags & !(HEADER_FLAG_SCRUB | HEADER_FLAG_DAMAGED) != 0 {
        // A checksummed flag this version does not define: written by a bug, not by a newer
        // format (that would have a newer version number).
        return Err(FileFormatError::Identity);
    }
    Ok((flags & HEADER_FLAG_SCRUB != 0).then(|| ScrubPosition {
        segment_next: SegmentId(u32_at(sector, 56)),
        cycle_start: SegmentId(u32_at(sector, 60)),
        cycles_completed: u64_at(sector, 64),
    }))
}

/// Adds the damaged entries (docs/scrub.md, "Repair") to a header sector `encode_header`
/// filled: entries found damaged and not repaired yet, so a restart asks for their repair
/// at once rather than at the scrubber's next cycle. At most `DAMAGED_MAX`.
pub fn encode_damaged(sector: &mut [u8], damaged: &[(LedgerId, EntryId)]) {
    assert_eq!(sector.len(), SECTOR_SIZE);
    assert!(damaged.len() <= DAMAGED_MAX);
    if damaged.is_empty() {
        return;
    }
    let flags = u32_at(sector, 52) | HEADER_FLAG_DAMAGED;
    sector[52..56].copy_from_slice(&flags.to_le_bytes());
    let checksum = crc32c::crc32c(&sector[SCRUB_SECTION]);
    sector[SCRUB_CHECKSUM_AT..SCRUB_CHECKSUM_AT + 4].copy_from_slice(&checksum.to_le_bytes());
    let count = u32::try_from(damaged.len()).expect("at most DAMAGED_MAX");
    sector[DAMAGED_AT..DAMAGED_AT + 4].copy_from_slice(&count.to_le_bytes());
    for (index, (ledger, entry)) in damaged.iter().enumerate() {
        let at = DAMAGED_ENTRIES_AT + 16 * index;
        sector[at..at + 8].copy_from_slice(&ledger.0.to_le_bytes());
        sector[at + 8..at + 16].copy_from_slice(&entry.0.to_le_bytes());
    }
    let end = DAMAGED_ENTRIES_AT + 16 * damaged.len();
    let checksum = damaged_checksum(sector, end);
    sector[DAMAGED_AT + 4..DAMAGED_AT + 8].copy_from_slice(&checksum.to_le_bytes());
}

/// The damaged entries of a header sector `decode_header` verified (none in version 1).
pub fn decode_damaged(sector: &[u8]) -> Result<Vec<(LedgerId, EntryId)>, FileFormatError> {
    if sector.get(4) == Some(&CHECKPOINT_VERSION_V1)
        || u32_at(sector, 52) & HEADER_FLAG_DAMAGED == 0
    {
        return Ok(Vec::new());
    }
    let count = usize::try_from(u32_at(sector, DAMAGED_AT)).expect("u32 fits usize");
    if count == 0 || count > DAMAGED_MAX {
        return Err(FileFormatError::Identity);
    }
    let end = DAMAGED_ENTRIES_AT + 16 * count;
    if damaged_checksum(sector, end) != u32_at(sector, DAMAGED_AT + 4) {
        return Err(FileFormatError::Checksum);
    }
    Ok((0..count)
        .map(|index| {
            let at = DAMAGED_ENTRIES_AT + 16 * index;
            (
                LedgerId(le_i64(sector, at)),
                EntryId(le_i64(sector, at + 8)),
            )
        })
        .collect())
}

/// CRC32C of the damaged list's count and entries (`end` is past the last entry).
fn damaged_checksum(sector: &[u8], end: usize) -> u32 {
    let checksum = crc32c::crc32c(&sector[DAMAGED_AT..DAMAGED_AT + 4]);
    crc32c::crc32c_append(checksum, &sector[DAMAGED_ENTRIES_AT..end])
}

/// Writes one ledger's state into its `LEDGER_RECORD_SIZE` bytes:
/// `0 ledger id i64 | 8 master key (20) | 28 flags u8 (bit 0 fenced, bit 1 explicit LAC) |
///  29 digest type u8 (`DigestKind::code`) | 30..32 zero | 32 highest entry i64 | 40 LAC i64 | 48 explicit LAC segment u32 |
///  52 zero u32 | 56 explicit LAC position u64 | 64 explicit LAC payload size u32 |
///  68..80 zero`.
pub fn encode_ledger(out: &mut [u8], state: &LedgerState) {
    assert_eq!(out.len(), LEDGER_RECORD_SIZE);
    out.fill(0);
    out[0..8].copy_from_slice(&state.ledger.0.to_le_bytes());
    out[8..28].copy_from_slice(&state.master_key);
    let mut flags = 0;
    if state.fenced {
        flags |= FLAG_FENCED;
    }
    if let Some((location, size)) = state.explicit_lac {
        flags |= FLAG_EXPLICIT_LAC;
        out[48..52].copy_from_slice(&location.segment.0.to_le_bytes());
        out[56..64].copy_from_slice(&location.position.0.to_le_bytes());
        out[64..68].copy_from_slice(&size.to_le_bytes());
    }
    out[28] = flags;
    out[29] = state.digest.code();
    out[32..40].copy_from_slice(&state.entry_last.to_le_bytes());
    out[40..48].copy_from_slice(&state.last_add_confirmed.to_le_bytes());
}

/// Decodes and checks the ledger table: checksum, ids strictly ascending, flags known.
pub fn decode_ledgers(
    table: &[u8],
    header: &CheckpointHeader,
) -> Result<Vec<LedgerState>, FileFormatError> {
    let count = usize::try_from(header.ledger_count).expect("u32 fits usize");
    let bytes = table
        .get(..count * LEDGER_RECORD_SIZE)
        .ok_or(FileFormatError::Identity)?;
    if crc32c::crc32c(bytes) != header.checksum_ledgers {
        return Err(FileFormatError::Checksum);
    }
    let mut ledgers: Vec<LedgerState> = Vec::with_capacity(count);
    for chunk in bytes.chunks_exact(LEDGER_RECORD_SIZE) {
        let flags = chunk[28];
        let mut master_key = [0u8; MASTER_KEY_SIZE];
        master_key.copy_from_slice(&chunk[8..28]);
        let explicit_lac = (flags & FLAG_EXPLICIT_LAC != 0).then(|| {
            let location = Location {
                segment: SegmentId(u32_at(chunk, 48)),
                position: Position(u64_at(chunk, 56)),
            };
            (location, u32_at(chunk, 64))
        });
        let state = LedgerState {
            ledger: LedgerId(le_i64(chunk, 0)),
            master_key,
            fenced: flags & FLAG_FENCED != 0,
            entry_last: le_i64(chunk, 32),
            last_add_confirmed: le_i64(chunk, 40),
            explicit_lac,
            digest: crate::digest::DigestKind::from_code(chunk[29])
                .ok_or(FileFormatError::Identity)?,
        };
        let ascending = ledgers.last().is_none_or(|last| last.ledger < state.ledger);
        // Positions are u32 in memory and u32::MAX is no payload size.
        let lac_fits = state.explicit_lac.is_none_or(|(location, size)| {
            location.position.0 <= u64::from(u32::MAX) && size != u32::MAX
        });
        if !ascending || !lac_fits || flags & !(FLAG_FENCED | FLAG_EXPLICIT_LAC) != 0 {
            return Err(FileFormatError::Identity);
        }
        ledgers.push(state);
    }
    Ok(ledgers)
}

/// Writes one tombstone into its `TOMBSTONE_SIZE` bytes:
/// `0 ledger id i64 | 8 last segment that may hold its records u32 | 12 zero u32`.
pub fn encode_tombstone(out: &mut [u8], tombstone: &Tombstone) {
    assert_eq!(out.len(), TOMBSTONE_SIZE);
    out.fill(0);
    out[0..8].copy_from_slice(&tombstone.ledger.0.to_le_bytes());
    out[8..12].copy_from_slice(&tombstone.segment_last.0.to_le_bytes());
}

/// Decodes and checks the tombstone table: checksum, ids strictly ascending.
pub fn decode_tombstones(
    table: &[u8],
    header: &CheckpointHeader,
) -> Result<Vec<Tombstone>, FileFormatError> {
    let count = usize::try_from(header.tombstone_count).expect("u32 fits usize");
    let bytes = table
        .get(..count * TOMBSTONE_SIZE)
        .ok_or(FileFormatError::Identity)?;
    if crc32c::crc32c(bytes) != header.checksum_tombstones {
        return Err(FileFormatError::Checksum);
    }
    let mut tombstones: Vec<Tombstone> = Vec::with_capacity(count);
    for chunk in bytes.chunks_exact(TOMBSTONE_SIZE) {
        let tombstone = Tombstone {
            ledger: LedgerId(le_i64(chunk, 0)),
            segment_last: SegmentId(u32_at(chunk, 8)),
        };
        if tombstones
            .last()
            .is_some_and(|last| last.ledger >= tombstone.ledger)
        {
            return Err(FileFormatError::Identity);
        }
        tombstones.push(tombstone);
    }
    Ok(tombstones)
}
