//! Segment files: the header sector every segment starts with (names: `file_name.rs`).
//!
//! Header sector (little-endian; the rest of the 4 KiB sector is zero):
//! `0 magic "RLGS" | 4 version u8 | 5 flags u8 | 6..8 zero | 8 segment id u32 |
//!  12 generation u32 | 16 segment size u64 | 24 CRC32C of bytes 0..24`.
//!
//! Flag bit 0, recycled: the file held an earlier, removed segment's records before it was
//! renamed to this id (`journal/segments.rs`), so past this segment's data lie that
//! segment's stale records instead of zeros. They name their own segment id, which never
//! repeats, so no scan takes them for this segment's records; recovery ends a recycled
//! segment's data at the first sector that holds no record of it (docs/format.md).
//!
//! Flag bit 1, small commit blocks: the segment's commits are padded to 512 bytes, not to the
//! 4 KiB sector, so they start on 512-byte boundaries (`--commit-block-bytes 512`,
//! docs/durability.md, "Commit padding"). Scans of it end the data at the first 512-byte
//! boundary that holds no record of it. A build that predates the flag refuses the header
//! rather than scan it with the sector rule, which would take the commits after the first
//! unaligned one for a torn tail.
//!
//! The generation is 0 for a segment the journal wrote, and one more than the segment's
//! previous generation for a compacted copy that replaced it (`journal/compact.rs`); its
//! index records the generation it describes, so an index that outlived a replacement is
//! told apart and rebuilt. Before compaction existed these four bytes were always zero.

use crate::constants::{COMMIT_BLOCK_SMALL_SIZE, SECTOR_SIZE, SEGMENT_HEADER_SIZE};
use crate::ids::SegmentId;

/// `RLGS` read as a little-endian u32.
pub const SEGMENT_MAGIC: u32 = u32::from_le_bytes(*b"RLGS");
/// Current segment format version.
pub const SEGMENT_VERSION: u8 = 1;

/// Header flag: the file is a removed segment's, renamed and reused (see the module doc).
pub const SEGMENT_FLAG_RECYCLED: u8 = 1;
/// Header flag: the segment's commits are padded to 512 bytes (see the module doc).
pub const SEGMENT_FLAG_SMALL_BLOCKS: u8 = 2;
const SEGMENT_FLAGS_KNOWN: u8 = SEGMENT_FLAG_RECYCLED | SEGMENT_FLAG_SMALL_BLOCKS;

/// The unit a segment's commits are padded to, and so the boundaries they start on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CommitBlock {
    /// The 4 KiB sector: no commit ever writes into a sector an earlier commit wrote.
    #[default]
    Sector,
    /// 512 bytes (flag bit 1): a commit may start inside the 4 KiB sector the previous one
    /// ended in, which pads about 1.8 KiB less a commit.
    Small,
}

impl CommitBlock {
    /// Bytes in one block.
    #[must_use]
    pub const fn size(self) -> usize {
        match self {
            CommitBlock::Sector => SECTOR_SIZE,
            CommitBlock::Small => COMMIT_BLOCK_SMALL_SIZE,
        }
    }

    /// Bytes in one block, as a file offset.
    #[must_use]
    pub const fn size_u64(self) -> u64 {
        self.size() as u64
    }

    /// The block of `bytes` bytes, if it is one.
    #[must_use]
    pub const fn of_size(bytes: usize) -> Option<CommitBlock> {
        match bytes {
            SECTOR_SIZE => Some(CommitBlock::Sector),
            COMMIT_BLOCK_SMALL_SIZE => Some(CommitBlock::Small),
            _ => None,
        }
    }

    const fn flag(self) -> u8 {
        match self {
            CommitBlock::Sector => 0,
            CommitBlock::Small => SEGMENT_FLAG_SMALL_BLOCKS,
        }
    }
}

/// Fills `sector` with the header of segment `id`, as the journal writes it (generation 0),
/// `recycled` if the file held another segment before, its commits padded to `block`.
pub fn encode_segment_header(
    sector: &mut [u8],
    id: SegmentId,
    segment_size: u64,
    recycled: bool,
    block: CommitBlock,
) {
    let flags = if recycled { SEGMENT_FLAG_RECYCLED } else { 0 } | block.flag();
    encode_segment_header_generation(sector, id, segment_size, 0, flags);
}

/// Fills `sector` with the header of generation `generation` of segment `id`.
pub fn encode_segment_header_generation(
    sector: &mut [u8],
    id: SegmentId,
    segment_size: u64,
    generation: u32,
    flags: u8,
) {
    assert_eq!(flags & !SEGMENT_FLAGS_KNOWN, 0);
    assert_eq!(sector.len(), SEGMENT_HEADER_SIZE);
    assert!(segment_size > SEGMENT_HEADER_SIZE as u64);
    sector.fill(0);
    sector[0..4].copy_from_slice(&SEGMENT_MAGIC.to_le_bytes());
    sector[4] = SEGMENT_VERSION;
    sector[5] = flags;
    sector[8..12].copy_from_slice(&id.0.to_le_bytes());
    sector[12..16].copy_from_slice(&generation.to_le_bytes());
    sector[16..24].copy_from_slice(&segment_size.to_le_bytes());
    let checksum = crc32c::crc32c(&sector[0..24]);
    sector[24..28].copy_from_slice(&checksum.to_le_bytes());
}

/// Why a segment header is not acceptable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SegmentHeaderError {
    /// A valid header of a format version this build does not know.
    Version(u8),
    /// Magic, version or checksum wrong.
    Invalid,
    /// The header names another segment (the file was renamed or misdirected).
    WrongId {
        /// What the header says.
        found: SegmentId,
    },
}

/// What a segment header records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegmentHeader {
    /// The journal's segment size when the segment was created.
    pub size: u64,
    /// 0, or how many times the segment was compacted.
    pub generation: u32,
    /// The file held a removed segment's records before (`SEGMENT_FLAG_RECYCLED`).
    pub recycled: bool,
    /// What its commits are padded to (`SEGMENT_FLAG_SMALL_BLOCKS`).
    pub commit_block: CommitBlock,
}

/// Verifies the header sector of segment `id` and returns what it records.
pub fn decode_segment_header(
    sector: &[u8],
    id: SegmentId,
) -> Result<SegmentHeader, SegmentHeaderError> {
    assert!(sector.len() >= 28);
    let word = |offset: usize| {
        let mut bytes = [0u8; 4];
        bytes.copy_from_slice(&sector[offset..offset + 4]);
        u32::from_le_bytes(bytes)
    };
    if word(0) != SEGMENT_MAGIC {
        return Err(SegmentHeaderError::Invalid);
    }
    // Before the checksum: a newer format may lay its header out differently, and the open
    // must name the file a newer release wrote rather than call it corrupt.
    if sector[4] != SEGMENT_VERSION {
        return Err(SegmentHeaderError::Version(sector[4]));
    }
    if crc32c::crc32c(&sector[0..24]) != word(24) {
        return Err(SegmentHeaderError::Invalid);
    }
    // Unknown flags or non-zero reserved bytes: a checksummed header this build cannot
    // read correctly (a later format would have changed the version).
    if sector[5] & !SEGMENT_FLAGS_KNOWN != 0 || sector[6..8] != [0, 0] {
        return Err(SegmentHeaderError::Invalid);
    }
    let found = SegmentId(word(8));
    if found != id {
        return Err(SegmentHeaderError::WrongId { found });
    }
    let mut size = [0u8; 8];
    size.copy_from_slice(&sector[16..24]);
    Ok(SegmentHeader {
        size: u64::from_le_bytes(size),
        generation: word(12),
        recycled: sector[5] & SEGMENT_FLAG_RECYCLED != 0,
        commit_block: if sector[5] & SEGMENT_FLAG_SMALL_BLOCKS != 0 {
            CommitBlock::Small
        } else {
            CommitBlock::Sector
        },
    })
}
