//! What ADD carries and READ returns (§4): the entry body, with the writer's ids, LAC, ledger
//! length and digest in front of the payload, the explicit-LAC body of WRITE_LAC, and the
//! ledger master key.
//!
//! A bookie stores bodies verbatim and never verifies digests (§4.4); it reads only the LAC.
//! The CRC32C encoder and verifier are for clients and tests.

use crate::error::{malformed, DecodeError};

/// Size of a ledger master key: SHA-1 of `"ledger" ‖ password` (§4.3).
pub const MASTER_KEY_SIZE: usize = 20;
/// A ledger master key as it appears on the wire.
pub type MasterKey = [u8; MASTER_KEY_SIZE];
/// The shortest ADD body a bookie accepts: ledgerId + entryId (§2.5).
pub const ENTRY_BODY_SIZE_MIN: usize = 16;
/// ledgerId, entryId, lastAddConfirmed, ledgerLength: the body header the digest starts with.
pub const ENTRY_METADATA_SIZE: usize = 32;
/// A CRC32C digest: one `i32`, big-endian.
pub const DIGEST_CRC32C_SIZE: usize = 4;

/// SHA1("ledger"): the key of every ledger with an empty password, which is every Pulsar ledger.
/// (Master keys need SHA-1, and the crate has no SHA-1 dependency; the tests check these values.)
pub const MASTER_KEY_EMPTY_PASSWORD: MasterKey = [
    0x85, 0x0b, 0xf1, 0x07, 0x1c, 0x5e, 0x3d, 0x8c, 0x24, 0x23, //
    0x56, 0x76, 0xf8, 0x81, 0x6a, 0xe0, 0xcb, 0xe2, 0xf1, 0x4f,
];
/// SHA1("ledger" ‖ "benchPasswd"): the key of `bin/benchmark writes` ledgers.
pub const MASTER_KEY_BENCH_PASSWORD: MasterKey = [
    0x8a, 0xd0, 0x51, 0x76, 0x3f, 0x54, 0x80, 0xbb, 0x25, 0x81, //
    0xa4, 0xfc, 0xfd, 0xd8, 0x29, 0x23, 0xcf, 0x66, 0x84, 0xa8,
];

/// Where the writer's LAC sits in an entry body: right after ledgerId and entryId.
const ENTRY_BODY_OFFSET_LAC: usize = 16;
/// Where the LAC sits in an explicit-LAC body (`[ledgerId][LAC][digest]`): after ledgerId.
const EXPLICIT_LAC_BODY_OFFSET_LAC: usize = 8;

// The LAC lies right after the two ids the minimum body holds.
const _: () = assert!(ENTRY_BODY_SIZE_MIN == 16);
const _: () = assert!(ENTRY_BODY_OFFSET_LAC == ENTRY_BODY_SIZE_MIN);

/// Builds a full BookKeeper entry body with a CRC32C digest:
/// `ledgerId | entryId | lastAddConfirmed | ledgerLength | crc32c | payload`, where `crc32c` is
/// an `i32` BE over the 32-byte header followed by the payload.
pub fn encode_entry_body_crc32c(
    out: &mut Vec<u8>,
    ledger_id: i64,
    entry_id: i64,
    last_add_confirmed: i64,
    ledger_length: i64,
    payload: &[u8],
) {
    let body_start = out.len();
    out.extend_from_slice(&ledger_id.to_be_bytes());
    out.extend_from_slice(&entry_id.to_be_bytes());
    out.extend_from_slice(&last_add_confirmed.to_be_bytes());
    out.extend_from_slice(&ledger_length.to_be_bytes());
    let digest = digest_crc32c(&out[body_start..], payload);
    out.extend_from_slice(&digest.to_be_bytes());
    out.extend_from_slice(payload);
    assert_eq!(
        out.len() - body_start,
        ENTRY_METADATA_SIZE + DIGEST_CRC32C_SIZE + payload.len()
    );
}

/// Verifies a CRC32C entry body; returns the payload slice.
///
/// The bookie itself never verifies digests (§4.4); this is for clients and tests.
pub fn verify_entry_body_crc32c(body: &[u8]) -> Result<&[u8], DecodeError> {
    let short = malformed("entry body shorter than its metadata and CRC32C digest");
    let (metadata, rest) = body
        .split_first_chunk::<ENTRY_METADATA_SIZE>()
        .ok_or(short)?;
    let (digest, payload) = rest
        .split_first_chunk::<DIGEST_CRC32C_SIZE>()
        .ok_or(short)?;
    if u32::from_be_bytes(*digest) != digest_crc32c(metadata, payload) {
        return Err(malformed("entry body CRC32C digest mismatch"));
    }
    Ok(payload)
}

/// Body offset 16: the writer's LAC, if the body has at least 24 bytes.
#[must_use]
pub fn entry_body_last_add_confirmed(body: &[u8]) -> Option<i64> {
    body_i64(body, ENTRY_BODY_OFFSET_LAC)
}

/// The LAC an explicit-LAC body (WRITE_LAC's `[ledgerId][LAC][digest]`) carries at offset 8, if
/// the body has at least 16 bytes. A bookie's LAC is the larger of this and its entries' (Java's
/// `FileInfo.setExplicitLac`).
#[must_use]
pub fn explicit_lac_body_last_add_confirmed(body: &[u8]) -> Option<i64> {
    body_i64(body, EXPLICIT_LAC_BODY_OFFSET_LAC)
}

/// The big-endian `i64` at `offset`, if the body reaches that far.
fn body_i64(body: &[u8], offset: usize) -> Option<i64> {
    let field = body.get(offset..)?.first_chunk::<8>()?;
    Some(i64::from_be_bytes(*field))
}

/// Standard CRC32C (init !0, final xor) over the metadata followed by the payload.
fn digest_crc32c(metadata: &[u8], payload: &[u8]) -> u32 {
    assert_eq!(metadata.len(), ENTRY_METADATA_SIZE);
    crc32c::crc32c_append(crc32c::crc32c(metadata), payload)
}
