//! The bookie's side of the v2 binary protocol (§2): borrowing, allocation-free request
//! decoders and response encoders that append whole frames to a caller-owned `Vec`.
//!
//! Every frame is `u32 length | u32 packet header | fields`, all integers big-endian (§1, §2).
//! Decoders never panic on any input and return slices of the caller's buffer. The client's
//! side (request encoders, response decoders) is in `client`.

use crate::auth_message::{encode_auth_message, AUTH_DISABLED_PLUGIN_NAME};
use crate::code;
use crate::entry_body::{MasterKey, MASTER_KEY_SIZE};
use crate::error::{malformed, DecodeError};
use crate::frame::{
    frame_begin, frame_finish, frame_split, Cursor, Opcode, PacketHeader, FLAG_DO_FENCING,
    LENGTH_PREFIX_SIZE, PACKET_HEADER_SIZE,
};

/// A decoded v2 request; every slice borrows from the receive buffer.
#[derive(Debug, PartialEq, Eq)]
pub enum Request<'a> {
    /// `body` is the whole entry body (≥ 16 bytes), stored and returned verbatim; the ids are
    /// peeked from its first 16 bytes since v2 ADD has no separate id fields.
    Add {
        header: PacketHeader,
        master_key: &'a MasterKey,
        ledger_id: i64,
        entry_id: i64,
        body: &'a [u8],
    },
    /// `master_key` is present iff the request fences (FLAG_DO_FENCING, version ≥ 2).
    Read {
        header: PacketHeader,
        ledger_id: i64,
        entry_id: i64,
        master_key: Option<&'a MasterKey>,
    },
    /// `max_count ≤ 0` means no count limit; the key rule is READ's.
    BatchRead {
        header: PacketHeader,
        ledger_id: i64,
        start_entry_id: i64,
        request_id: i64,
        max_count: i32,
        max_size: i64,
        master_key: Option<&'a MasterKey>,
    },
    /// `auth_message` is the unparsed `AuthMessage` protobuf.
    Auth {
        header: PacketHeader,
        auth_message: &'a [u8],
    },
}

impl Request<'_> {
    /// The request's packet header; its version and opcode shape the reply.
    #[must_use]
    pub fn header(&self) -> PacketHeader {
        match self {
            Request::Add { header, .. }
            | Request::Read { header, .. }
            | Request::BatchRead { header, .. }
            | Request::Auth { header, .. } => *header,
        }
    }
}

/// Outcome of [`decode_request`] on the bytes received so far.
#[derive(Debug, PartialEq, Eq)]
pub enum Decoded<'a> {
    /// `frame_size`: bytes consumed, including the 4-byte length prefix.
    Frame {
        request: Request<'a>,
        frame_size: usize,
    },
    /// The buffer ends before the frame does; receive more and call again.
    NeedMore,
}

/// Decodes the first complete request frame of `buf` (bytes received so far). Never panics on any
/// input.
///
/// Errors are reported as soon as the bytes that prove them have arrived: the length prefix
/// (FrameTooLarge, frames under 4 bytes), the first payload byte (ProtocolV3) and the packet
/// header (OpcodeUnsupported) are checked before the rest of the frame is waited for, so a bad
/// peer is dropped without buffering up to a whole frame. The version is not validated: the
/// server answers EBADVERSION with the decoded ids.
pub fn decode_request(buf: &[u8], frame_size_max: u32) -> Result<Decoded<'_>, DecodeError> {
    let Some(frame) = frame_split(buf, frame_size_max)? else {
        return Ok(Decoded::NeedMore);
    };
    let header = frame.header;
    let request = match frame.opcode {
        Opcode::Add => decode_add_request(header, frame.fields)?,
        Opcode::Read => decode_read_request(header, frame.fields)?,
        Opcode::BatchRead => decode_batch_read_request(header, frame.fields)?,
        Opcode::Auth => Request::Auth {
            header,
            auth_message: frame.fields,
        },
        // frame_split refuses these already; the arm keeps the match total without a panic.
        Opcode::ReadLac | Opcode::WriteLac | Opcode::GetBookieInfo => {
            return Err(DecodeError::OpcodeUnsupported {
                opcode: header.opcode,
            });
        }
    };
    Ok(Decoded::Frame {
        request,
        frame_size: frame.frame_size,
    })
}

/// Appends an ADD response: code and the request's ids (28 bytes).
pub fn encode_add_response(
    out: &mut Vec<u8>,
    version: u8,
    code: i32,
    ledger_id: i64,
    entry_id: i64,
) {
    let frame_start = frame_begin(out, PacketHeader::response(version, Opcode::Add));
    out.extend_from_slice(&code.to_be_bytes());
    out.extend_from_slice(&ledger_id.to_be_bytes());
    out.extend_from_slice(&entry_id.to_be_bytes());
    frame_finish(out, frame_start);
}

/// Appends a READ response. `entry_id` must be the request's (it stays -1 for a read of -1).
/// `body` is sent only on EOK; callers pass `&[]` otherwise.
pub fn encode_read_response(
    out: &mut Vec<u8>,
    version: u8,
    code: i32,
    ledger_id: i64,
    entry_id: i64,
    body: &[u8],
) {
    // An error reply with a body would be read by the client as entry data.
    assert!(
        code == code::EOK || body.is_empty(),
        "READ error response with a body"
    );
    let frame_start = frame_begin(out, PacketHeader::response(version, Opcode::Read));
    out.extend_from_slice(&code.to_be_bytes());
    out.extend_from_slice(&ledger_id.to_be_bytes());
    out.extend_from_slice(&entry_id.to_be_bytes());
    out.extend_from_slice(body);
    frame_finish(out, frame_start);
}

/// The size of a batch read response frame with no entries, including its 4-byte length prefix:
/// prefix, header, code, ledgerId, startEntryId, requestId. This is the value §2.7's running size
/// starts at; every entry adds [`BATCH_READ_RESPONSE_ITEM_PREFIX_SIZE`] + its body length.
pub const BATCH_READ_RESPONSE_FIXED_SIZE: usize = 36;
/// The `u32` length in front of each batch read response entry.
pub const BATCH_READ_RESPONSE_ITEM_PREFIX_SIZE: usize = 4;

/// Batch read: begin writes the fixed part with a placeholder length and returns the frame start
/// index; push appends `u32 len, body`; finish patches the length prefix. code != EOK → no
/// entries.
pub fn encode_batch_read_response_begin(
    out: &mut Vec<u8>,
    version: u8,
    code: i32,
    ledger_id: i64,
    start_entry_id: i64,
    request_id: i64,
) -> usize {
    let frame_start = frame_begin(out, PacketHeader::response(version, Opcode::BatchRead));
    out.extend_from_slice(&code.to_be_bytes());
    out.extend_from_slice(&ledger_id.to_be_bytes());
    out.extend_from_slice(&start_entry_id.to_be_bytes());
    out.extend_from_slice(&request_id.to_be_bytes());
    assert_eq!(out.len() - frame_start, BATCH_READ_RESPONSE_FIXED_SIZE);
    frame_start
}

/// Appends one batch entry: `u32 len, body`. The frame grows by 4 + `body.len()`.
pub fn encode_batch_read_response_push(out: &mut Vec<u8>, body: &[u8]) {
    let body_size = u32::try_from(body.len()).expect("batch entry larger than u32::MAX bytes");
    out.extend_from_slice(&body_size.to_be_bytes());
    out.extend_from_slice(body);
}

/// Patches the length prefix of the batch response started at `frame_start`; the frame must end
/// at `out.len()`.
pub fn encode_batch_read_response_finish(out: &mut [u8], frame_start: usize) {
    let frame_fixed_end = frame_start + BATCH_READ_RESPONSE_FIXED_SIZE;
    assert!(
        out.len() >= frame_fixed_end,
        "finish without a matching begin"
    );
    let fixed = &out[frame_start..frame_fixed_end];
    // The header and code were written by begin; checking them catches a wrong frame_start.
    let header = PacketHeader::decode(u32::from_be_bytes(word_at(fixed, LENGTH_PREFIX_SIZE)));
    assert_eq!(
        header.opcode,
        Opcode::BatchRead as u8,
        "frame_start is not a batch response"
    );
    let code = i32::from_be_bytes(word_at(fixed, LENGTH_PREFIX_SIZE + PACKET_HEADER_SIZE));
    // The client treats any entry as data, so an error reply must carry none (§2.7).
    let entries_absent = out.len() == frame_fixed_end;
    assert!(
        code == code::EOK || entries_absent,
        "batch error response with entries"
    );
    frame_finish(out, frame_start);
}

/// AUTH reply as the Java bookie with auth disabled: AuthMessage{ authPluginName:
/// "AuthDisabledPlugin", payload: empty }.
///
/// Java answers with [`PROTOCOL_VERSION_CURRENT`](crate::PROTOCOL_VERSION_CURRENT) whatever the
/// request's version; callers that want to match it exactly pass that.
pub fn encode_auth_response(out: &mut Vec<u8>, version: u8) {
    let frame_start = frame_begin(out, PacketHeader::response(version, Opcode::Auth));
    encode_auth_message(out, AUTH_DISABLED_PLUGIN_NAME, &[]);
    frame_finish(out, frame_start);
}

/// READ fields after the packet header: ledgerId, entryId.
const READ_REQUEST_FIELDS_SIZE: usize = 16;
/// BATCH_READ fields after the packet header: ledgerId, startEntryId, requestId, maxCount,
/// maxSize.
const BATCH_READ_REQUEST_FIELDS_SIZE: usize = 36;
/// ADD/READ response fields after the packet header: code, ledgerId, entryId.
pub(crate) const RESPONSE_FIELDS_SIZE: usize = 20;

// The doc's running size for batch responses (24 + 8 + 4) is this fixed part incl. the prefix.
const _: () = assert!(
    BATCH_READ_RESPONSE_FIXED_SIZE
        == LENGTH_PREFIX_SIZE + PACKET_HEADER_SIZE + RESPONSE_FIELDS_SIZE + 8
);
const _: () = assert!(READ_REQUEST_FIELDS_SIZE + PACKET_HEADER_SIZE == 20);
const _: () = assert!(BATCH_READ_REQUEST_FIELDS_SIZE + PACKET_HEADER_SIZE == 40);

fn decode_add_request(header: PacketHeader, fields: &[u8]) -> Result<Request<'_>, DecodeError> {
    let short = malformed("ADD frame shorter than master key + 16-byte body");
    let (master_key, body) = fields.split_first_chunk::<MASTER_KEY_SIZE>().ok_or(short)?;
    // Peek, not consume: the ids stay part of the body that is stored verbatim.
    let mut ids = Cursor { rest: body };
    let ledger_id = ids.i64().ok_or(short)?;
    let entry_id = ids.i64().ok_or(short)?;
    Ok(Request::Add {
        header,
        master_key,
        ledger_id,
        entry_id,
        body,
    })
}

fn decode_read_request(header: PacketHeader, fields: &[u8]) -> Result<Request<'_>, DecodeError> {
    let short = malformed("READ frame shorter than 20 bytes");
    let mut cursor = Cursor { rest: fields };
    let ledger_id = cursor.i64().ok_or(short)?;
    let entry_id = cursor.i64().ok_or(short)?;
    let master_key = if fencing_with_master_key(header) {
        Some(
            cursor
                .master_key()
                .ok_or(malformed("fencing READ without its master key"))?,
        )
    } else {
        None
    };
    // Anything after the fields is ignored, as Java does.
    Ok(Request::Read {
        header,
        ledger_id,
        entry_id,
        master_key,
    })
}

fn decode_batch_read_request(
    header: PacketHeader,
    fields: &[u8],
) -> Result<Request<'_>, DecodeError> {
    if fields.len() < BATCH_READ_REQUEST_FIELDS_SIZE {
        return Err(malformed("BATCH_READ frame shorter than 40 bytes"));
    }
    let short = malformed("BATCH_READ fields cut short");
    let mut cursor = Cursor { rest: fields };
    let ledger_id = cursor.i64().ok_or(short)?;
    let start_entry_id = cursor.i64().ok_or(short)?;
    let request_id = cursor.i64().ok_or(short)?;
    let max_count = cursor.i32().ok_or(short)?;
    let max_size = cursor.i64().ok_or(short)?;
    let master_key = if fencing_with_master_key(header) {
        Some(
            cursor
                .master_key()
                .ok_or(malformed("fencing BATCH_READ without its master key"))?,
        )
    } else {
        None
    };
    Ok(Request::BatchRead {
        header,
        ledger_id,
        start_entry_id,
        request_id,
        max_count,
        max_size,
        master_key,
    })
}

/// A fencing read carries a key only from version 2 on. Java holds the version in a signed byte,
/// so versions 0x80..=0xFF are negative there and never read a key; we match it.
fn fencing_with_master_key(header: PacketHeader) -> bool {
    header.flags & FLAG_DO_FENCING != 0 && (2..=0x7F).contains(&header.version)
}

/// The 4 bytes at `offset`; only for encoder-side checks of bytes we wrote.
fn word_at(bytes: &[u8], offset: usize) -> [u8; 4] {
    *bytes[offset..]
        .first_chunk::<4>()
        .expect("word inside the written frame")
}
