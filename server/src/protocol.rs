//! BookKeeper wire codec: the v2 frames here (pure frame encoders and borrowing,
//! allocation-free decoders), the v3 protobuf messages in `v3`, and [`decode_any_request`],
//! which tells the two apart per frame by the first payload byte (§1.2).
//!
//! Byte layouts are in `docs/bookkeeper-protocol.md` §1 (framing), §2 (v2 frames) and §4 (entry
//! bodies). Every frame is `u32 length | u32 packet header | fields`, all integers big-endian;
//! `length` counts everything after itself. Decoders never panic on any input and return slices
//! of the caller's buffer; encoders append whole frames to a caller-owned `Vec`.
#![forbid(unsafe_code)]

use std::fmt;

pub mod v3;

/// Size of a ledger master key: SHA-1 of `"ledger" ‖ password` (§4.3).
pub const MASTER_KEY_SIZE: usize = 20;
/// A ledger master key as it appears on the wire.
pub type MasterKey = [u8; MASTER_KEY_SIZE];
/// Pulsar's 5 MiB + 10 KiB; the Java default is 5 MiB.
///
/// Like Netty's `LengthFieldBasedFrameDecoder`, the limit bounds the whole frame including its
/// 4-byte length prefix.
pub const FRAME_SIZE_MAX_DEFAULT: u32 = 5_253_120;
/// The protocol version Java clients send and the highest one a bookie accepts.
pub const PROTOCOL_VERSION_CURRENT: u8 = 2;
/// The shortest ADD body a bookie accepts: ledgerId + entryId (§2.5).
pub const ENTRY_BODY_SIZE_MIN: usize = 16;
/// Reads: fence the ledger; a master key follows the ids.
pub const FLAG_DO_FENCING: u16 = 0x0001;
/// Adds: accept even if the ledger is fenced.
pub const FLAG_RECOVERY_ADD: u16 = 0x0002;
/// High-priority pool; may be accepted in read-only mode.
pub const FLAG_HIGH_PRIORITY: u16 = 0x0004;

/// v2 error codes (i32 on the wire).
///
/// A v2 client maps only these values; any other one, EUNKNOWNLEDGERSTATE (107) included, throws
/// in the Java client (§5.10), so it is deliberately absent here.
pub mod code {
    /// Success.
    pub const EOK: i32 = 0;
    /// Ledger unknown here.
    pub const ENOLEDGER: i32 = 1;
    /// Entry never stored here.
    pub const ENOENTRY: i32 = 2;
    /// Malformed or unsupported request.
    pub const EBADREQ: i32 = 100;
    /// I/O failure, state unknown.
    pub const EIO: i32 = 101;
    /// Master key missing or mismatched.
    pub const EUA: i32 = 102;
    /// Protocol version not accepted.
    pub const EBADVERSION: i32 = 103;
    /// Ledger fenced; normal add refused.
    pub const EFENCED: i32 = 104;
    /// Bookie is read-only.
    pub const EREADONLY: i32 = 105;
    /// Bookie is overloaded.
    pub const ETOOMANYREQUESTS: i32 = 106;
}

/// v2 opcodes (§2.2). `ReadLac`, `WriteLac` and `GetBookieInfo` exist only so that the numbers
/// have names: over v2 they are refused with [`DecodeError::OpcodeUnsupported`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Opcode {
    Add = 1,
    Read = 2,
    Auth = 3,
    ReadLac = 4,
    WriteLac = 5,
    GetBookieInfo = 6,
    BatchRead = 7,
}

impl TryFrom<u8> for Opcode {
    type Error = DecodeError;

    fn try_from(opcode: u8) -> Result<Self, DecodeError> {
        match opcode {
            1 => Ok(Opcode::Add),
            2 => Ok(Opcode::Read),
            3 => Ok(Opcode::Auth),
            4 => Ok(Opcode::ReadLac),
            5 => Ok(Opcode::WriteLac),
            6 => Ok(Opcode::GetBookieInfo),
            7 => Ok(Opcode::BatchRead),
            _ => Err(DecodeError::OpcodeUnsupported { opcode }),
        }
    }
}

/// The `u32` after the length prefix: version (bits 31..24), opcode (23..16), flags (15..0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketHeader {
    pub version: u8,
    pub opcode: u8,
    pub flags: u16,
}

impl PacketHeader {
    /// Splits a header word. Version 0 is the legacy form whose word is just the opcode (§2.1),
    /// so its opcode is the low byte and its flags are 0, as in Java's `PacketHeader`.
    #[must_use]
    pub fn decode(word: u32) -> Self {
        let [version, opcode_packed, flags_high, flags_low] = word.to_be_bytes();
        if version == 0 {
            PacketHeader {
                version,
                opcode: flags_low,
                flags: 0,
            }
        } else {
            let flags = u16::from_be_bytes([flags_high, flags_low]);
            PacketHeader {
                version,
                opcode: opcode_packed,
                flags,
            }
        }
    }

    /// Packs the header word. Version 0 has no room for flags, so they are dropped.
    #[must_use]
    pub fn encode(self) -> u32 {
        if self.version == 0 {
            u32::from(self.opcode)
        } else {
            let [flags_high, flags_low] = self.flags.to_be_bytes();
            u32::from_be_bytes([self.version, self.opcode, flags_high, flags_low])
        }
    }

    /// Responses carry the request's version and no flags (§2.1).
    fn response(version: u8, opcode: Opcode) -> Self {
        PacketHeader {
            version,
            opcode: opcode as u8,
            flags: 0,
        }
    }

    /// Client requests always go out as the current version, like the Java client's.
    fn request(opcode: Opcode, flags: u16) -> Self {
        PacketHeader {
            version: PROTOCOL_VERSION_CURRENT,
            opcode: opcode as u8,
            flags,
        }
    }
}

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

/// Why a frame cannot be decoded. Every variant means: close the connection, as Java does.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum DecodeError {
    /// Length prefix over the limit: close before allocating.
    ///
    /// `frame_size` includes the 4-byte prefix (saturating at `u32::MAX`), as the limit does.
    FrameTooLarge {
        frame_size: u32,
        frame_size_max: u32,
    },
    /// First payload byte 0x0A: a v3 protobuf frame (not served by this codec).
    ProtocolV3,
    /// Opcodes 4/5/6 over v2 or any unknown opcode: Java closes the connection.
    OpcodeUnsupported { opcode: u8 },
    /// Fields do not fit the frame (e.g. ADD body < 16 bytes, READ frame < 20 bytes, fencing flag
    /// without key).
    Malformed { reason: &'static str },
}

impl fmt::Display for DecodeError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::FrameTooLarge {
                frame_size,
                frame_size_max,
            } => write!(
                formatter,
                "frame of {frame_size} bytes exceeds the {frame_size_max}-byte limit"
            ),
            DecodeError::ProtocolV3 => write!(formatter, "v3 protobuf frame on the v2 codec"),
            DecodeError::OpcodeUnsupported { opcode } => {
                write!(formatter, "opcode {opcode} is not served over v2")
            }
            DecodeError::Malformed { reason } => write!(formatter, "malformed frame: {reason}"),
        }
    }
}

impl std::error::Error for DecodeError {}

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
/// Java answers with [`PROTOCOL_VERSION_CURRENT`] whatever the request's version; callers that
/// want to match it exactly pass that.
pub fn encode_auth_response(out: &mut Vec<u8>, version: u8) {
    let frame_start = frame_begin(out, PacketHeader::response(version, Opcode::Auth));
    encode_auth_message(out, AUTH_DISABLED_PLUGIN_NAME, &[]);
    frame_finish(out, frame_start);
}

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
    rest: &'a [u8],
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
/// reported as early as in [`decode_request`].
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

/// ledgerId, entryId, lastAddConfirmed, ledgerLength: the body header the digest starts with.
pub const ENTRY_METADATA_SIZE: usize = 32;
/// A CRC32C digest: one `i32`, big-endian.
pub const DIGEST_CRC32C_SIZE: usize = 4;

/// Digest and entry body helpers (§4): builds a full BookKeeper entry body with a CRC32C digest:
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
    let lac = body.get(ENTRY_BODY_SIZE_MIN..)?.first_chunk::<8>()?;
    Some(i64::from_be_bytes(*lac))
}

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

const LENGTH_PREFIX_SIZE: usize = 4;
const PACKET_HEADER_SIZE: usize = 4;
/// The first byte of every v3 `Request`/`Response`: field 1 (`header`), wire type 2 (§1.2).
const PROTOBUF_TAG_V3_HEADER: u8 = 0x0A;
/// READ fields after the packet header: ledgerId, entryId.
const READ_REQUEST_FIELDS_SIZE: usize = 16;
/// BATCH_READ fields after the packet header: ledgerId, startEntryId, requestId, maxCount,
/// maxSize.
const BATCH_READ_REQUEST_FIELDS_SIZE: usize = 36;
/// ADD/READ response fields after the packet header: code, ledgerId, entryId.
const RESPONSE_FIELDS_SIZE: usize = 20;
/// `AuthProviderFactoryFactory.AUTHENTICATION_DISABLED_PLUGIN_NAME`.
const AUTH_DISABLED_PLUGIN_NAME: &str = "AuthDisabledPlugin";
/// `AuthMessage` field tags: 1 `authPluginName` and 2 `payload`, both wire type 2.
const PROTOBUF_TAG_AUTH_PLUGIN_NAME: u8 = 0x0A;
const PROTOBUF_TAG_AUTH_PAYLOAD: u8 = 0x12;

// The doc's running size for batch responses (24 + 8 + 4) is this fixed part incl. the prefix.
const _: () = assert!(
    BATCH_READ_RESPONSE_FIXED_SIZE
        == LENGTH_PREFIX_SIZE + PACKET_HEADER_SIZE + RESPONSE_FIELDS_SIZE + 8
);
const _: () = assert!(READ_REQUEST_FIELDS_SIZE + PACKET_HEADER_SIZE == 20);
const _: () = assert!(BATCH_READ_REQUEST_FIELDS_SIZE + PACKET_HEADER_SIZE == 40);
// The LAC lies right after the two ids the minimum body holds.
const _: () = assert!(ENTRY_BODY_SIZE_MIN == 16);
const _: () = assert!(FRAME_SIZE_MAX_DEFAULT == 5 * 1024 * 1024 + 10 * 1024);

/// One complete frame whose opcode this codec serves.
struct Frame<'a> {
    header: PacketHeader,
    opcode: Opcode,
    /// The bytes after the packet header, up to the end of the frame.
    fields: &'a [u8],
    /// Including the length prefix.
    frame_size: usize,
}

/// Splits the first frame off `buf`: `Ok(None)` until it is complete. Checks needing only the
/// prefix, first byte or header run before the whole frame is required.
fn frame_split(buf: &[u8], frame_size_max: u32) -> Result<Option<Frame<'_>>, DecodeError> {
    let Some((prefix, rest)) = buf.split_first_chunk::<LENGTH_PREFIX_SIZE>() else {
        return Ok(None);
    };
    let length = frame_length(*prefix, frame_size_max)?;
    if length < PACKET_HEADER_SIZE {
        return Err(malformed("frame shorter than its 4-byte packet header"));
    }
    if rest.first() == Some(&PROTOBUF_TAG_V3_HEADER) {
        return Err(DecodeError::ProtocolV3);
    }
    let Some((word, _)) = rest.split_first_chunk::<PACKET_HEADER_SIZE>() else {
        return Ok(None);
    };
    let header = PacketHeader::decode(u32::from_be_bytes(*word));
    let opcode = Opcode::try_from(header.opcode)?;
    if matches!(
        opcode,
        Opcode::ReadLac | Opcode::WriteLac | Opcode::GetBookieInfo
    ) {
        return Err(DecodeError::OpcodeUnsupported {
            opcode: header.opcode,
        });
    }
    let Some(fields) = rest.get(PACKET_HEADER_SIZE..length) else {
        return Ok(None);
    };
    Ok(Some(Frame {
        header,
        opcode,
        fields,
        frame_size: LENGTH_PREFIX_SIZE + length,
    }))
}

/// The length a prefix announces, if the whole frame (prefix included) is within the limit.
fn frame_length(
    prefix: [u8; LENGTH_PREFIX_SIZE],
    frame_size_max: u32,
) -> Result<usize, DecodeError> {
    let length = u32::from_be_bytes(prefix);
    // Netty's LengthFieldBasedFrameDecoder(max, 0, 4, 0, 4) compares length + 4 with the limit;
    // u64 keeps that sum from overflowing for a hostile prefix.
    let frame_size = u64::from(length) + LENGTH_PREFIX_SIZE as u64;
    let too_large = DecodeError::FrameTooLarge {
        frame_size: u32::try_from(frame_size).unwrap_or(u32::MAX),
        frame_size_max,
    };
    if frame_size > u64::from(frame_size_max) {
        return Err(too_large);
    }
    usize::try_from(length).map_err(|_| too_large)
}

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

/// Reads big-endian fields off the front of a slice; `None` once the slice is too short.
struct Cursor<'a> {
    rest: &'a [u8],
}

impl<'a> Cursor<'a> {
    fn chunk<const N: usize>(&mut self) -> Option<&'a [u8; N]> {
        let (chunk, rest) = self.rest.split_first_chunk::<N>()?;
        self.rest = rest;
        Some(chunk)
    }

    fn i32(&mut self) -> Option<i32> {
        self.chunk().map(|bytes| i32::from_be_bytes(*bytes))
    }

    fn i64(&mut self) -> Option<i64> {
        self.chunk().map(|bytes| i64::from_be_bytes(*bytes))
    }

    fn master_key(&mut self) -> Option<&'a MasterKey> {
        self.chunk::<MASTER_KEY_SIZE>()
    }
}

fn malformed(reason: &'static str) -> DecodeError {
    DecodeError::Malformed { reason }
}

/// Writes a placeholder length prefix and the header; returns where the frame starts.
fn frame_begin(out: &mut Vec<u8>, header: PacketHeader) -> usize {
    let frame_start = out.len();
    // Patched by frame_finish: computing sizes up front would duplicate every layout.
    out.extend_from_slice(&[0; LENGTH_PREFIX_SIZE]);
    out.extend_from_slice(&header.encode().to_be_bytes());
    frame_start
}

/// Sets the length prefix of the frame at `frame_start` to reach the end of `out`.
fn frame_finish(out: &mut [u8], frame_start: usize) {
    let fields_start = frame_start + LENGTH_PREFIX_SIZE + PACKET_HEADER_SIZE;
    assert!(
        out.len() >= fields_start,
        "frame_finish without frame_begin"
    );
    let length = out.len() - frame_start - LENGTH_PREFIX_SIZE;
    let length = u32::try_from(length).expect("v2 frame longer than u32::MAX bytes");
    out[frame_start..frame_start + LENGTH_PREFIX_SIZE].copy_from_slice(&length.to_be_bytes());
}

/// The 4 bytes at `offset`; only for encoder-side checks of bytes we wrote.
fn word_at(bytes: &[u8], offset: usize) -> [u8; 4] {
    *bytes[offset..]
        .first_chunk::<4>()
        .expect("word inside the written frame")
}

/// Appends `AuthMessage{ authPluginName, payload }` in protobuf encoding.
fn encode_auth_message(out: &mut Vec<u8>, plugin_name: &str, payload: &[u8]) {
    out.push(PROTOBUF_TAG_AUTH_PLUGIN_NAME);
    encode_varint(out, plugin_name.len());
    out.extend_from_slice(plugin_name.as_bytes());
    out.push(PROTOBUF_TAG_AUTH_PAYLOAD);
    encode_varint(out, payload.len());
    out.extend_from_slice(payload);
}

/// Protobuf base-128 varint: 7 bits per byte, least significant group first.
fn encode_varint(out: &mut Vec<u8>, value: usize) {
    let mut value = u64::try_from(value).expect("usize fits u64");
    // Each pass shifts out 7 bits, so a u64 ends the loop within 10 passes.
    while value >= 0x80 {
        let group = u8::try_from(value & 0x7F).expect("7-bit group fits u8");
        out.push(group | 0x80);
        value >>= 7;
    }
    out.push(u8::try_from(value).expect("last group is under 0x80"));
}

/// Standard CRC32C (init !0, final xor) over the metadata followed by the payload.
fn digest_crc32c(metadata: &[u8], payload: &[u8]) -> u32 {
    assert_eq!(metadata.len(), ENTRY_METADATA_SIZE);
    crc32c::crc32c_append(crc32c::crc32c(metadata), payload)
}

#[cfg(test)]
mod tests;
