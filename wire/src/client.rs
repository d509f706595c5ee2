//! The client's side of the codec, for bench, fuzz and tests: v2 request encoders and the v2
//! response decoder here, the v3 ADD encoder and ADD response decoder in `client::v3`.
//!
//! Encoders append whole frames to a caller-owned `Vec`; the decoder never panics on any input
//! and returns slices of the caller's buffer. The encoders also build frames a bookie must
//! refuse, so that tests can provoke its error paths.

pub mod v3;

use crate::auth_message::encode_auth_message;
use crate::entry_body::MasterKey;
use crate::error::{malformed, DecodeError};
use crate::frame::{frame_begin, frame_finish, frame_split, Cursor, Opcode, PacketHeader};
use crate::v2::{BATCH_READ_RESPONSE_ITEM_PREFIX_SIZE, RESPONSE_FIELDS_SIZE};

/// Appends a v2 ADD request frame: header(version 2, op 1, flags), master key, body verbatim.
///
/// The 16-byte body minimum is not enforced so that tests can provoke the server's Malformed path.
pub fn encode_add_request(out: &mut Vec<u8>, flags: u16, master_key: &MasterKey, body: &[u8]) {
    let frame_start = frame_begin(out, PacketHeader::request(Opcode::Add, flags));
    out.extend_from_slice(master_key);
    out.extend_from_slice(body);
    frame_finish(out, frame_start);
}

/// Appends a v2 READ request. The key is written whenever it is given, independent of `flags`, so
/// tests can also build frames the bookie must ignore (key without fencing) or reject (fencing
/// without key).
pub fn encode_read_request(
    out: &mut Vec<u8>,
    flags: u16,
    ledger_id: i64,
    entry_id: i64,
    master_key: Option<&MasterKey>,
) {
    let frame_start = frame_begin(out, PacketHeader::request(Opcode::Read, flags));
    out.extend_from_slice(&ledger_id.to_be_bytes());
    out.extend_from_slice(&entry_id.to_be_bytes());
    if let Some(master_key) = master_key {
        out.extend_from_slice(master_key);
    }
    frame_finish(out, frame_start);
}

/// Appends a v2 BATCH_READ request; the key rule is [`encode_read_request`]'s.
// The argument list mirrors the frame's fields one to one; a struct would only rename them.
#[allow(clippy::too_many_arguments)]
pub fn encode_batch_read_request(
    out: &mut Vec<u8>,
    flags: u16,
    ledger_id: i64,
    start_entry_id: i64,
    request_id: i64,
    max_count: i32,
    max_size: i64,
    master_key: Option<&MasterKey>,
) {
    let frame_start = frame_begin(out, PacketHeader::request(Opcode::BatchRead, flags));
    out.extend_from_slice(&ledger_id.to_be_bytes());
    out.extend_from_slice(&start_entry_id.to_be_bytes());
    out.extend_from_slice(&request_id.to_be_bytes());
    out.extend_from_slice(&max_count.to_be_bytes());
    out.extend_from_slice(&max_size.to_be_bytes());
    if let Some(master_key) = master_key {
        out.extend_from_slice(master_key);
    }
    frame_finish(out, frame_start);
}

/// Appends a v2 AUTH request carrying `AuthMessage{ authPluginName, payload }`.
pub fn encode_auth_request(out: &mut Vec<u8>, plugin_name: &str, payload: &[u8]) {
    let frame_start = frame_begin(out, PacketHeader::request(Opcode::Auth, 0));
    encode_auth_message(out, plugin_name, payload);
    frame_finish(out, frame_start);
}

/// A decoded v2 response; every slice borrows from the receive buffer.
#[derive(Debug, PartialEq, Eq)]
pub enum Response<'a> {
    Add {
        version: u8,
        code: i32,
        ledger_id: i64,
        entry_id: i64,
    },
    Read {
        version: u8,
        code: i32,
        ledger_id: i64,
        entry_id: i64,
        body: &'a [u8],
    },
    BatchRead {
        version: u8,
        code: i32,
        ledger_id: i64,
        start_entry_id: i64,
        request_id: i64,
        entries: BatchEntries<'a>,
    },
    /// `auth_message` is the unparsed `AuthMessage` protobuf.
    Auth { version: u8, auth_message: &'a [u8] },
}

/// Iterator over the `u32 len, body` items of a batch read response; yields
/// Err(DecodeError::Malformed) once on a bad length and then stops.
///
/// Items are checked lazily so that decoding a response stays O(1); a frame has no count field,
/// the items simply run to its end (§2.7).
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub struct BatchEntries<'a> {
    /// The items not yet yielded; emptied after an error so that the iterator stops.
    pub(crate) rest: &'a [u8],
}

impl<'a> Iterator for BatchEntries<'a> {
    type Item = Result<&'a [u8], DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        let item = self
            .rest
            .split_first_chunk::<BATCH_READ_RESPONSE_ITEM_PREFIX_SIZE>()
            .and_then(|(body_size, rest)| {
                let body_size = usize::try_from(u32::from_be_bytes(*body_size)).ok()?;
                rest.split_at_checked(body_size)
            });
        match item {
            Some((body, rest)) => {
                self.rest = rest;
                Some(Ok(body))
            }
            None => {
                self.rest = &[];
                Some(Err(malformed(
                    "batch read entry length runs past the frame",
                )))
            }
        }
    }
}

/// Outcome of [`decode_response`] on the bytes received so far.
#[derive(Debug, PartialEq, Eq)]
pub enum DecodedResponse<'a> {
    /// `frame_size`: bytes consumed, including the 4-byte length prefix.
    Frame {
        response: Response<'a>,
        frame_size: usize,
    },
    /// The buffer ends before the frame does; receive more and call again.
    NeedMore,
}

/// Decodes the first complete response frame of `buf`. Never panics on any input; errors are
/// reported as early as in [`decode_request`](crate::decode_request).
///
/// Stricter than the Java client in one place: an ADD response must be exactly 24 bytes, since
/// this decoder exists to check ringlog's own replies.
pub fn decode_response(
    buf: &[u8],
    frame_size_max: u32,
) -> Result<DecodedResponse<'_>, DecodeError> {
    let Some(frame) = frame_split(buf, frame_size_max)? else {
        return Ok(DecodedResponse::NeedMore);
    };
    let version = frame.header.version;
    let response = match frame.opcode {
        Opcode::Add => decode_add_response(version, frame.fields)?,
        Opcode::Read => decode_read_response(version, frame.fields)?,
        Opcode::BatchRead => decode_batch_read_response(version, frame.fields)?,
        Opcode::Auth => Response::Auth {
            version,
            auth_message: frame.fields,
        },
        // frame_split refuses these already; the arm keeps the match total without a panic.
        Opcode::ReadLac | Opcode::WriteLac | Opcode::GetBookieInfo => {
            return Err(DecodeError::OpcodeUnsupported {
                opcode: frame.header.opcode,
            });
        }
    };
    Ok(DecodedResponse::Frame {
        response,
        frame_size: frame.frame_size,
    })
}

fn decode_add_response(version: u8, fields: &[u8]) -> Result<Response<'_>, DecodeError> {
    if fields.len() != RESPONSE_FIELDS_SIZE {
        return Err(malformed("ADD response is not 24 bytes"));
    }
    let short = malformed("ADD response cut short");
    let mut cursor = Cursor { rest: fields };
    let code = cursor.i32().ok_or(short)?;
    let ledger_id = cursor.i64().ok_or(short)?;
    let entry_id = cursor.i64().ok_or(short)?;
    Ok(Response::Add {
        version,
        code,
        ledger_id,
        entry_id,
    })
}

fn decode_read_response(version: u8, fields: &[u8]) -> Result<Response<'_>, DecodeError> {
    let short = malformed("READ response shorter than 24 bytes");
    let mut cursor = Cursor { rest: fields };
    let code = cursor.i32().ok_or(short)?;
    let ledger_id = cursor.i64().ok_or(short)?;
    let entry_id = cursor.i64().ok_or(short)?;
    Ok(Response::Read {
        version,
        code,
        ledger_id,
        entry_id,
        body: cursor.rest,
    })
}

fn decode_batch_read_response(version: u8, fields: &[u8]) -> Result<Response<'_>, DecodeError> {
    let short = malformed("BATCH_READ response shorter than 32 bytes");
    let mut cursor = Cursor { rest: fields };
    let code = cursor.i32().ok_or(short)?;
    let ledger_id = cursor.i64().ok_or(short)?;
    let start_entry_id = cursor.i64().ok_or(short)?;
    let request_id = cursor.i64().ok_or(short)?;
    let entries = BatchEntries { rest: cursor.rest };
    Ok(Response::BatchRead {
        version,
        code,
        ledger_id,
        start_entry_id,
        request_id,
        entries,
    })
}
