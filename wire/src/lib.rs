//! The BookKeeper wire codec: frames, the v2 binary protocol, the v3 protobuf protocol and the
//! entry body, as pure functions (no I/O, no allocation in the bookie's decoders), fuzzed.
//!
//! - `frame`: length prefix and its limit, v2 packet header, splitting a frame off a buffer;
//! - `v2`: the bookie's side of v2 (request decoders, response encoders), re-exported here;
//! - `v3`: the bookie's side of v3 (zero-copy request reader, response encoders, prost types);
//! - `client`: the client's side of both (request encoders, response decoders), for bench,
//!   fuzz and tests;
//! - `entry_body`: the body an entry is stored and returned as (digest, LAC, master key);
//! - `code`: v2 error codes;
//! - `ledger_metadata`: BookKeeper's `LedgerMetadataFormat` (a ledger's metadata znode), as
//!   prost types, for the server's garbage collector;
//! - [`decode_any_request`]: tells v2 from v3 per frame by the first payload byte (§1.2).
//!
//! Byte layouts are in `docs/bookkeeper-protocol.md` §1 (framing), §2 (v2 frames), §3 (v3
//! messages) and §4 (entry bodies).
#![forbid(unsafe_code)]

mod auth_message;
pub mod client;
pub mod code;
mod entry_body;
mod error;
mod frame;
pub mod ledger_metadata;
mod v2;
pub mod v3;

pub use auth_message::AUTH_DISABLED_PLUGIN_NAME;
pub use entry_body::{
    encode_entry_body_crc32, encode_entry_body_crc32c, entry_body_last_add_confirmed,
    explicit_lac_body_last_add_confirmed, verify_entry_body_crc32, verify_entry_body_crc32c,
    MasterKey, DIGEST_CRC32C_SIZE, DIGEST_CRC32_SIZE, ENTRY_BODY_SIZE_MIN, ENTRY_METADATA_SIZE,
    MASTER_KEY_BENCH_PASSWORD, MASTER_KEY_EMPTY_PASSWORD, MASTER_KEY_SIZE,
};
pub use error::DecodeError;
pub use frame::{
    Opcode, PacketHeader, FLAG_DO_FENCING, FLAG_HIGH_PRIORITY, FLAG_RECOVERY_ADD,
    FRAME_SIZE_MAX_DEFAULT, PROTOCOL_VERSION_CURRENT,
};
pub use v2::{
    decode_request, encode_add_response, encode_auth_response, encode_batch_read_response_begin,
    encode_batch_read_response_finish, encode_batch_read_response_push, encode_read_response,
    Decoded, Request, BATCH_READ_RESPONSE_FIXED_SIZE, BATCH_READ_RESPONSE_ITEM_PREFIX_SIZE,
};

use frame::{frame_length, LENGTH_PREFIX_SIZE, PROTOBUF_TAG_V3_HEADER};

/// A request in either protocol; the response goes out in the same one.
#[derive(Debug, PartialEq, Eq)]
pub enum AnyRequest<'a> {
    /// A v2 binary frame.
    V2(Request<'a>),
    /// A v3 protobuf `Request`.
    V3(v3::Request<'a>),
}

/// Outcome of [`decode_any_request`] on the bytes received so far.
#[derive(Debug, PartialEq, Eq)]
pub enum DecodedAny<'a> {
    /// `frame_size`: bytes consumed, including the 4-byte length prefix.
    Frame {
        request: AnyRequest<'a>,
        frame_size: usize,
    },
    /// The buffer ends before the frame does; receive more and call again.
    NeedMore,
}

/// Decodes the first complete request frame of `buf` in whichever protocol it uses: a first
/// payload byte of 0x0A is a v3 `Request` (field 1, wire type 2), anything else v2 (§1.2).
/// The frame limit is checked on the length prefix alone, before the frame is waited for.
pub fn decode_any_request(buf: &[u8], frame_size_max: u32) -> Result<DecodedAny<'_>, DecodeError> {
    let Some((prefix, rest)) = buf.split_first_chunk::<LENGTH_PREFIX_SIZE>() else {
        return Ok(DecodedAny::NeedMore);
    };
    if rest.first() != Some(&PROTOBUF_TAG_V3_HEADER) {
        return Ok(match decode_request(buf, frame_size_max)? {
            Decoded::Frame {
                request,
                frame_size,
            } => DecodedAny::Frame {
                request: AnyRequest::V2(request),
                frame_size,
            },
            Decoded::NeedMore => DecodedAny::NeedMore,
        });
    }
    let length = frame_length(*prefix, frame_size_max)?;
    let Some(message) = rest.get(..length) else {
        return Ok(DecodedAny::NeedMore);
    };
    Ok(DecodedAny::Frame {
        request: AnyRequest::V3(v3::decode_request(message)?),
        frame_size: LENGTH_PREFIX_SIZE + length,
    })
}

#[cfg(test)]
mod tests;
