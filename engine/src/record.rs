//! Journal record framing: encode, verify and decode. Pure functions, fuzzed.
//!
//! Layout (little-endian, 64-byte header, then the payload, then zero padding to 8 bytes):
//!
//! | off | size | field |
//! |----:|-----:|-------|
//! |   0 |    4 | magic `RLGR` |
//! |   4 |    1 | format version (1) |
//! |   5 |    1 | kind (`RecordKind`) |
//! |   6 |    1 | flags: bit 0 = first record of its commit |
//! |   7 |    1 | reserved, zero |
//! |   8 |    4 | `checksum_header`: CRC32C of bytes 0..8 then 12..64 |
//! |  12 |    4 | `checksum_payload`: CRC32C of the payload |
//! |  16 |    4 | `payload_size` |
//! |  20 |    4 | `checksum_previous`: `checksum_header` of the previous record (hash chain) |
//! |  24 |    8 | sequence |
//! |  32 |    8 | ledger id |
//! |  40 |    8 | entry id |
//! |  48 |    4 | segment id (identity: catches misdirected writes) |
//! |  52 |    4 | reserved, zero |
//! |  56 |    8 | position of this header in its segment (identity) |
//!
//! The header checksum covers the payload checksum, so one header check makes the length
//! trustworthy before any payload byte is read.

use crate::constants::{RECORD_ALIGNMENT, RECORD_HEADER_SIZE, RECORD_PAYLOAD_SIZE_MAX};
use crate::ids::{EntryId, LedgerId, Location, Position, SegmentId, Sequence};
use crate::stdx::{align_up, le_u32 as read_u32, le_u64 as read_u64};

/// `RLGR` read as a little-endian u32.
pub const RECORD_MAGIC: u32 = u32::from_le_bytes(*b"RLGR");
/// Current record format version.
pub const RECORD_VERSION: u8 = 1;

/// What a record means to the index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum RecordKind {
    /// A BookKeeper entry body, stored verbatim.
    Entry = 1,
    /// The ledger's master key (payload: 20 bytes); written before the ledger's first entry.
    LedgerKey = 2,
    /// The ledger was fenced (no payload).
    Fence = 3,
    /// An explicit-LAC body as sent by WRITE_LAC.
    ExplicitLac = 4,
    /// A FORCE_LEDGER marker: its durability makes everything before it durable.
    ForceMarker = 5,
}

impl RecordKind {
    fn from_u8(value: u8) -> Option<RecordKind> {
        match value {
            1 => Some(RecordKind::Entry),
            2 => Some(RecordKind::LedgerKey),
            3 => Some(RecordKind::Fence),
            4 => Some(RecordKind::ExplicitLac),
            5 => Some(RecordKind::ForceMarker),
            _ => None,
        }
    }
}

/// The decoded header of a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordHeader {
    /// What the record is.
    pub kind: RecordKind,
    /// CRC32C of the payload.
    pub checksum_payload: u32,
    /// Payload bytes following the header.
    pub payload_size: u32,
    /// Header checksum of the record before this one (0 for the first record of a journal).
    pub checksum_previous: u32,
    /// Consecutive journal sequence number.
    pub sequence: Sequence,
    /// Ledger this record belongs to.
    pub ledger: LedgerId,
    /// Entry id (meaningful for `Entry` records).
    pub entry: EntryId,
    /// Where the record claims to live.
    pub location: Location,
    /// First record of its commit: recovery counts commits past a bad record with it.
    pub commit_first: bool,
}

/// Why bytes are not a valid record. Recovery turns these into torn tail or corruption.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordError {
    /// Fewer bytes than a header or than the header's payload size.
    Truncated,
    /// The first four bytes are zero: unwritten (zeroed) space or padding.
    Zero,
    /// Magic is not `RLGR`.
    Magic,
    /// Unknown format version.
    Version,
    /// The header checksum does not match.
    ChecksumHeader,
    /// Reserved bytes are not zero, or the kind is unknown.
    Reserved,
    /// Payload size over the limit.
    PayloadSize,
    /// The payload checksum does not match.
    ChecksumPayload,
}

/// Bytes a record with this payload occupies on disk, alignment padding included.
#[must_use]
pub fn record_size(payload_size: usize) -> usize {
    assert!(payload_size <= RECORD_PAYLOAD_SIZE_MAX);
    align_up(RECORD_HEADER_SIZE + payload_size, RECORD_ALIGNMENT)
}

/// Writes header, payload and zero padding into `out` (exactly `record_size` bytes) and returns
/// the header checksum, which the next record chains to.
pub fn encode(out: &mut [u8], header: &RecordHeader, payload: &[u8]) -> u32 {
    assert_eq!(out.len(), record_size(payload.len()));
    assert_eq!(header.payload_size as usize, payload.len());
    let (head, rest) = out.split_at_mut(RECORD_HEADER_SIZE);
    let (body, padding) = rest.split_at_mut(payload.len());
    body.copy_from_slice(payload);
    padding.fill(0);
    let checksum_payload = crc32c::crc32c(payload);
    head.fill(0);
    head[0..4].copy_from_slice(&RECORD_MAGIC.to_le_bytes());
    head[4] = RECORD_VERSION;
    head[5] = header.kind as u8;
    head[6] = u8::from(header.commit_first);
    head[12..16].copy_from_slice(&checksum_payload.to_le_bytes());
    head[16..20].copy_from_slice(&header.payload_size.to_le_bytes());
    head[20..24].copy_from_slice(&header.checksum_previous.to_le_bytes());
    head[24..32].copy_from_slice(&header.sequence.0.to_le_bytes());
    head[32..40].copy_from_slice(&header.ledger.0.to_le_bytes());
    head[40..48].copy_from_slice(&header.entry.0.to_le_bytes());
    head[48..52].copy_from_slice(&header.location.segment.0.to_le_bytes());
    head[56..64].copy_from_slice(&header.location.position.0.to_le_bytes());
    let checksum_header = header_checksum(head);
    head[8..12].copy_from_slice(&checksum_header.to_le_bytes());
    // Pair assertion: what goes to disk must decode to what was meant.
    debug_assert_eq!(
        decode_header(head).map(|(h, _)| h.payload_size),
        Ok(header.payload_size)
    );
    checksum_header
}

/// Gives the verified record at the start of `record` (exactly its `record_size` bytes) a new
/// place in the journal: its sequence, chain link, location and commit flag; the payload and
/// its checksum stay. Returns the new header checksum, which the next record chains to.
/// Compaction moves records with it.
pub fn relocate(
    record: &mut [u8],
    sequence: Sequence,
    checksum_previous: u32,
    location: Location,
    commit_first: bool,
) -> u32 {
    let head = &mut record[..RECORD_HEADER_SIZE];
    debug_assert!(decode_header(head).is_ok());
    head[6] = u8::from(commit_first);
    head[20..24].copy_from_slice(&checksum_previous.to_le_bytes());
    head[24..32].copy_from_slice(&sequence.0.to_le_bytes());
    head[48..52].copy_from_slice(&location.segment.0.to_le_bytes());
    head[56..64].copy_from_slice(&location.position.0.to_le_bytes());
    let checksum_header = header_checksum(head);
    head[8..12].copy_from_slice(&checksum_header.to_le_bytes());
    checksum_header
}

/// CRC32C over the whole header except the checksum field itself.
fn header_checksum(head: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(&head[0..8]), &head[12..RECORD_HEADER_SIZE])
}

/// Verifies and decodes a header from the first 64 bytes of `bytes`. Returns the header and its
/// checksum. Never trusts the length before the header checksum matched.
pub fn decode_header(bytes: &[u8]) -> Result<(RecordHeader, u32), RecordError> {
    let head = bytes
        .get(..RECORD_HEADER_SIZE)
        .ok_or(RecordError::Truncated)?;
    let magic = read_u32(head, 0);
    if magic == 0 {
        return Err(RecordError::Zero);
    }
    if magic != RECORD_MAGIC {
        return Err(RecordError::Magic);
    }
    if head[4] != RECORD_VERSION {
        return Err(RecordError::Version);
    }
    let checksum_header = read_u32(head, 8);
    if header_checksum(head) != checksum_header {
        return Err(RecordError::ChecksumHeader);
    }
    let kind = RecordKind::from_u8(head[5]).ok_or(RecordError::Reserved)?;
    if head[6] > 1 || head[7] != 0 || read_u32(head, 52) != 0 {
        return Err(RecordError::Reserved);
    }
    let payload_size = read_u32(head, 16);
    if payload_size as usize > RECORD_PAYLOAD_SIZE_MAX {
        return Err(RecordError::PayloadSize);
    }
    let header = RecordHeader {
        kind,
        checksum_payload: read_u32(head, 12),
        payload_size,
        checksum_previous: read_u32(head, 20),
        sequence: Sequence(read_u64(head, 24)),
        ledger: LedgerId(i64::from_le_bytes(read_u64(head, 32).to_le_bytes())),
        entry: EntryId(i64::from_le_bytes(read_u64(head, 40).to_le_bytes())),
        location: Location {
            segment: SegmentId(read_u32(head, 48)),
            position: Position(read_u64(head, 56)),
        },
        commit_first: head[6] == 1,
    };
    Ok((header, checksum_header))
}

/// The payload of the record at the start of `bytes`, which `decode` accepted earlier and
/// which has not changed since, sliced by its header's length without checking anything
/// again: a read checks a record once (three CRC32C passes) before it serves it, and a
/// second `decode` only to borrow the payload cost a sixth of a shard's CPU in a catch-up read.
pub fn payload_of_decoded(bytes: &[u8]) -> &[u8] {
    debug_assert!(decode(bytes).is_ok(), "the record was decoded before");
    let payload_size = read_u32(bytes, 16) as usize;
    &bytes[RECORD_HEADER_SIZE..RECORD_HEADER_SIZE + payload_size]
}

/// Verifies a whole record at the start of `bytes` and returns header, header checksum and
/// payload. Padding after the payload must be zero.
pub fn decode(bytes: &[u8]) -> Result<(RecordHeader, u32, &[u8]), RecordError> {
    let (header, checksum_header) = decode_header(bytes)?;
    let payload_end = RECORD_HEADER_SIZE + header.payload_size as usize;
    let size = record_size(header.payload_size as usize);
    let record = bytes.get(..size).ok_or(RecordError::Truncated)?;
    let payload = &record[RECORD_HEADER_SIZE..payload_end];
    if crc32c::crc32c(payload) != header.checksum_payload {
        return Err(RecordError::ChecksumPayload);
    }
    if record[payload_end..].iter().any(|&byte| byte != 0) {
        return Err(RecordError::Reserved);
    }
    Ok((header, checksum_header, payload))
}
