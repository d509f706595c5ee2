//! What ADD carries and READ returns (§4): the entry body, with the writer's ids, LAC, ledger
//! length and digest in front of the payload, the explicit-LAC body of WRITE_LAC, and the
//! ledger master key.
//!
//! A bookie stores bodies verbatim and never verifies digests on the data path (§4.4); it
//! reads only the LAC. The CRC32C and CRC32 verifiers are for the repairer (which checks a
//! peer's copy before it replaces a damaged one), clients and tests.

use crate::error::{malformed, DecodeError};

/// Size of a ledger master key: SHA-1 of `"ledger" ‖ password` (§4.3).
pub const MASTER_KEY_SIZE: usize = 20;
/// A ledger master key as it appears on the wire.
pub type MasterKey = [u8; MASTER_KEY_SIZE];
/// The shortest ADD body a bookie accepts: ledgerId + entryId (§2.5).
pub const ENTRY_BODY_SIZE_MIN: usize = 16;
/// ledgerId, entryId, lastAddConfirmed, ledgerLength: the body header the digest starts with.
pub const ENTRY_METADATA_SIZE: usize = 32;
/// A CRC32C digest: one `i32`, big-endian (BookKeeper's `CRC32CDigestManager`:
/// `getMacCodeLength() == 4`, `writeInt`).
pub const DIGEST_CRC32C_SIZE: usize = 4;
/// A CRC32 digest: one `long`, big-endian, whose upper 4 bytes are zero (BookKeeper's
/// `CRC32DigestManager`: `getMacCodeLength() == 8`, `writeLong` of `java.util.zip.CRC32`'s
/// unsigned 32-bit value). The Java client's default digest type.
pub const DIGEST_CRC32_SIZE: usize = 8;

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

/// Builds a full BookKeeper entry body with a CRC32 digest:
/// `ledgerId | entryId | lastAddConfirmed | ledgerLength | crc32 | payload`, where `crc32` is
/// the IEEE CRC-32 over the 32-byte header followed by the payload, as a `u64` BE
/// (`DigestManager.computeDigestAndPackageForSending` with `CRC32DigestManager`).
pub fn encode_entry_body_crc32(
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
    let digest = digest_crc32(&out[body_start..], payload);
    out.extend_from_slice(&u64::from(digest).to_be_bytes());
    out.extend_from_slice(payload);
    assert_eq!(
        out.len() - body_start,
        ENTRY_METADATA_SIZE + DIGEST_CRC32_SIZE + payload.len()
    );
}

/// Verifies a CRC32 entry body; returns the payload slice.
///
/// All 8 digest bytes are compared, as `DigestManager.verifyDigest` compares the buffers: a
/// body whose upper 4 digest bytes are not zero fails, whatever its low 4 bytes say. The ids
/// in the body are not checked here; the caller knows which entry it asked for.
pub fn verify_entry_body_crc32(body: &[u8]) -> Result<&[u8], DecodeError> {
    let short = malformed("entry body shorter than its metadata and CRC32 digest");
    let (metadata, rest) = body
        .split_first_chunk::<ENTRY_METADATA_SIZE>()
        .ok_or(short)?;
    let (digest, payload) = rest.split_first_chunk::<DIGEST_CRC32_SIZE>().ok_or(short)?;
    if u64::from_be_bytes(*digest) != u64::from(digest_crc32(metadata, payload)) {
        return Err(malformed("entry body CRC32 digest mismatch"));
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

/// IEEE 802.3 CRC-32 (`java.util.zip.CRC32`: reflected, polynomial 0xEDB88320, init !0, final
/// xor) over the metadata followed by the payload. Hand-written, table-driven: the crate's
/// only CRC dependency is CRC32C, and this runs on the repairer's few entries, not per add.
fn digest_crc32(metadata: &[u8], payload: &[u8]) -> u32 {
    assert_eq!(metadata.len(), ENTRY_METADATA_SIZE);
    !crc32_update(crc32_update(!0, metadata), payload)
}

/// The reflected IEEE polynomial.
const CRC32_POLYNOMIAL: u32 = 0xEDB8_8320;
/// The CRC of each byte value, computed at compile time.
const CRC32_TABLE: [u32; 256] = crc32_table();

const fn crc32_table() -> [u32; 256] {
    let mut table = [0_u32; 256];
    let mut index = 0;
    while index < 256 {
        // `index < 256`: the cast is exact.
        let mut crc = index as u32;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ CRC32_POLYNOMIAL
            } else {
                crc >> 1
            };
            bit += 1;
        }
        table[index] = crc;
        index += 1;
    }
    table
}

/// Feeds `bytes` into a running CRC-32 register (pre-inverted: start at `!0`, invert the end).
fn crc32_update(register: u32, bytes: &[u8]) -> u32 {
    bytes.iter().fold(register, |register, &byte| {
        // The register's low byte: `to_le_bytes` is host-independent.
        let index = usize::from(register.to_le_bytes()[0] ^ byte);
        (register >> 8) ^ CRC32_TABLE[index]
    })
}

#[cfg(test)]
mod tests {
    use super::{
        crc32_update, encode_entry_body_crc32, verify_entry_body_crc32, DIGEST_CRC32_SIZE,
        ENTRY_METADATA_SIZE,
    };

    /// CRC-32 one bit at a time, without the table: the reference the table is checked by.
    fn crc32_bitwise(bytes: &[u8]) -> u32 {
        let mut crc = !0_u32;
        for &byte in bytes {
            crc ^= u32::from(byte);
            for _ in 0..8 {
                crc = if crc & 1 == 1 {
                    (crc >> 1) ^ 0xEDB8_8320
                } else {
                    crc >> 1
                };
            }
        }
        !crc
    }

    fn crc32(bytes: &[u8]) -> u32 {
        !crc32_update(!0, bytes)
    }

    fn body(ledger: i64, entry: i64, lac: i64, length: i64, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        encode_entry_body_crc32(&mut out, ledger, entry, lac, length, payload);
        out
    }

    #[test]
    fn crc32_is_ieee() {
        // The check value of CRC-32/ISO-HDLC, `java.util.zip.CRC32` and zlib's crc32.
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
        assert_eq!(
            crc32(b"The quick brown fox jumps over the lazy dog"),
            0x414F_A339
        );
        let bytes: Vec<u8> = (0..=255).chain((0..=255).rev()).collect();
        for length in 0..bytes.len() {
            assert_eq!(crc32(&bytes[..length]), crc32_bitwise(&bytes[..length]));
        }
    }

    #[test]
    fn entry_body_crc32_layout() {
        let payload = b"payload";
        let encoded = body(7, 3, 2, 256, payload);
        assert_eq!(
            encoded.len(),
            ENTRY_METADATA_SIZE + DIGEST_CRC32_SIZE + payload.len()
        );
        assert_eq!(encoded[..8], 7_i64.to_be_bytes());
        assert_eq!(encoded[8..16], 3_i64.to_be_bytes());
        assert_eq!(encoded[16..24], 2_i64.to_be_bytes());
        assert_eq!(encoded[24..32], 256_i64.to_be_bytes());
        // zlib.crc32 of the 32-byte header then the payload, as a u64 BE.
        assert_eq!(encoded[32..40], 0x2FE2_CBD6_u64.to_be_bytes());
        assert_eq!(&encoded[40..], payload);
    }

    #[test]
    fn entry_body_crc32_round_trip() {
        let encoded = body(7, 3, 2, 256, b"payload");
        assert_eq!(verify_entry_body_crc32(&encoded), Ok(&b"payload"[..]));
        for index in 0..encoded.len() {
            let mut corrupt = encoded.clone();
            corrupt[index] ^= 0x01;
            assert!(verify_entry_body_crc32(&corrupt).is_err(), "byte {index}");
        }
        let empty = body(7, 3, -1, 0, &[]);
        assert_eq!(empty.len(), ENTRY_METADATA_SIZE + DIGEST_CRC32_SIZE);
        assert_eq!(verify_entry_body_crc32(&empty), Ok(&[][..]));
        assert!(verify_entry_body_crc32(&empty[..empty.len() - 1]).is_err());
        assert!(verify_entry_body_crc32(&[]).is_err());
    }

    #[test]
    fn entry_body_crc32_is_not_crc32c() {
        // A CRC32C body (4-byte digest) does not pass as CRC32, nor the other way round.
        let mut crc32c_body = Vec::new();
        super::encode_entry_body_crc32c(&mut crc32c_body, 7, 3, 2, 256, b"payload");
        assert!(verify_entry_body_crc32(&crc32c_body).is_err());
        assert!(super::verify_entry_body_crc32c(&body(7, 3, 2, 256, b"payload")).is_err());
    }
}
