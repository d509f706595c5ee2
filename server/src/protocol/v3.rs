//! BookKeeper v3 protobuf codec: a borrowing, allocation-free request reader and response
//! encoders built on the prost-generated types of `proto/BookkeeperProtocol.proto`.
//!
//! Why hand-written decoding: ADD and READ are the hot path (the Java client speaks v3 by
//! default), and prost's decoder copies every `bytes` field (body, masterKey) into a fresh
//! `Vec`. [`decode_request`] instead walks the wire format once, returns slices of the receive
//! buffer, and never panics on any input. The prost types are the encoder for every response
//! (bodies are appended after the prost-encoded fixed fields, so a read is not copied twice)
//! and the oracle the tests and the fuzz target check this reader against.
//!
//! Layout and semantics: `docs/bookkeeper-protocol.md` §3 (messages, tags, response rules) and
//! §5 (what each operation does). A frame is `u32 length | Request` or `u32 length | Response`.

use super::{DecodeError, MASTER_KEY_SIZE};
use prost::encoding::{encode_key, encode_varint, encoded_len_varint, key_len, WireType};
use prost::Message;

/// The prost-generated v3 messages (proto2, no package).
#[allow(clippy::all, missing_docs)]
pub mod proto {
    include!(concat!(env!("OUT_DIR"), "/_.rs"));
}

pub use proto::{OperationType as Operation, StatusCode as Status};

/// The only `ProtocolVersion` a bookie accepts (`isVersionCompatible`).
pub const PROTOCOL_VERSION_THREE: i32 = proto::ProtocolVersion::VersionThree as i32;
/// `ReadRequest.Flag.FENCE_LEDGER`.
pub const READ_FLAG_FENCE_LEDGER: i32 = proto::read_request::Flag::FenceLedger as i32;
/// `ReadRequest.Flag.ENTRY_PIGGYBACK`.
pub const READ_FLAG_ENTRY_PIGGYBACK: i32 = proto::read_request::Flag::EntryPiggyback as i32;
/// `AddRequest.Flag.RECOVERY_ADD`.
pub const ADD_FLAG_RECOVERY_ADD: i32 = proto::add_request::Flag::RecoveryAdd as i32;
/// `WriteFlag.DEFERRED_SYNC`: ack after the journal write, before fsync (§5.6).
pub const WRITE_FLAG_DEFERRED_SYNC: i32 = 0x1;
/// `GetBookieInfoRequest.Flags.TOTAL_DISK_CAPACITY`.
pub const BOOKIE_INFO_TOTAL_DISK_CAPACITY: i64 = 0x01;
/// `GetBookieInfoRequest.Flags.FREE_DISK_SPACE`.
pub const BOOKIE_INFO_FREE_DISK_SPACE: i64 = 0x02;
/// `AuthProviderFactoryFactory.AUTHENTICATION_DISABLED_PLUGIN_NAME`.
pub const AUTH_DISABLED_PLUGIN_NAME: &str = "AuthDisabledPlugin";

/// `BKPacketHeader` as read off the wire. Enum fields stay raw `i32`s: a version or
/// operation this bookie does not know is answered (EBADVERSION / EBADREQ), not a parse error.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Header {
    /// `ProtocolVersion`; only 3 is served.
    pub version: i32,
    /// `OperationType`, echoed in the response.
    pub operation: i32,
    /// The client's transaction id, echoed in the response.
    pub txn_id: u64,
    /// > 0: high priority (0 when absent).
    pub priority: u32,
}

/// `ReadRequest`; slices borrow from the frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadRequest<'a> {
    /// `Flag` (field 100), raw: FENCE_LEDGER or ENTRY_PIGGYBACK.
    pub flag: Option<i32>,
    /// The ledger.
    pub ledger_id: i64,
    /// The entry; -1 is the last entry stored.
    pub entry_id: i64,
    /// The master key of a fencing read (any length on the wire; 20 is valid).
    pub master_key: Option<&'a [u8]>,
    /// Long poll and piggyback: the LAC the client already knows.
    pub previous_lac: Option<i64>,
    /// Long poll: milliseconds to wait for the LAC to pass `previous_lac`.
    pub time_out: Option<i64>,
}

/// `AddRequest`; slices borrow from the frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AddRequest<'a> {
    /// `Flag` (field 100), raw: RECOVERY_ADD.
    pub flag: Option<i32>,
    /// The ledger.
    pub ledger_id: i64,
    /// The entry.
    pub entry_id: i64,
    /// The ledger's master key.
    pub master_key: &'a [u8],
    /// The entry body, stored verbatim.
    pub body: &'a [u8],
    /// `WriteFlag` bits (0 when absent).
    pub write_flags: i32,
}

/// `WriteLacRequest`; slices borrow from the frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteLacRequest<'a> {
    /// The ledger.
    pub ledger_id: i64,
    /// The writer's LAC.
    pub lac: i64,
    /// The ledger's master key.
    pub master_key: &'a [u8],
    /// The explicit-LAC body, stored verbatim.
    pub body: &'a [u8],
}

/// The sub-request the header's operation names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Body<'a> {
    /// READ_ENTRY.
    Read(ReadRequest<'a>),
    /// ADD_ENTRY.
    Add(AddRequest<'a>),
    /// AUTH (the AuthMessage itself is ignored: auth is disabled).
    Auth,
    /// WRITE_LAC.
    WriteLac(WriteLacRequest<'a>),
    /// READ_LAC.
    ReadLac { ledger_id: i64 },
    /// GET_BOOKIE_INFO; `requested` is a bit mask (0 when absent).
    GetBookieInfo { requested: i64 },
    /// START_TLS.
    StartTls,
    /// FORCE_LEDGER.
    ForceLedger { ledger_id: i64 },
    /// GET_LIST_OF_ENTRIES_OF_LEDGER.
    ListOfEntries { ledger_id: i64 },
    /// The operation is served but its sub-request is absent: EBADREQ.
    Missing,
    /// RANGE_READ/RANGE_ADD, BATCH_READ_ENTRY (no v3 message) or an unknown operation: EBADREQ.
    Unsupported,
}

/// A decoded v3 request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request<'a> {
    /// The packet header.
    pub header: Header,
    /// The operation's sub-request.
    pub body: Body<'a>,
}

/// Decodes one `Request` message (a frame's payload, after the length prefix).
///
/// Unknown fields are skipped; a wrong wire type for a known field, a truncated field, a bad
/// varint, field number 0, a group (wire types 3/4, obsolete and never sent by BookKeeper)
/// or a missing required field of the header or of the selected sub-request is an error.
/// Repeated occurrences of a message field merge and of a scalar field end with the last one,
/// as in protobuf. Other sub-requests than the one the operation selects are skipped
/// unparsed.
pub fn decode_request(message: &[u8]) -> Result<Request<'_>, DecodeError> {
    let mut header = HeaderPartial::default();
    fields(message, |number, value| {
        match number {
            REQUEST_FIELD_HEADER => header.merge(value.bytes()?)?,
            // Sub-requests and requestContext must be length-delimited; they are read below.
            REQUEST_FIELD_SUB_FIRST..=REQUEST_FIELD_SUB_LAST | REQUEST_FIELD_CONTEXT => {
                value.bytes()?;
            }
            _ => {}
        }
        Ok(())
    })?;
    let header = header.finish()?;
    let body = match Operation::try_from(header.operation) {
        Ok(Operation::ReadEntry) => sub_request(message, 100, read_merge, read_finish)?,
        Ok(Operation::AddEntry) => sub_request(message, 101, add_merge, add_finish)?,
        Ok(Operation::Auth) => sub_request(message, 102, skip_merge, |()| Ok(Body::Auth))?,
        Ok(Operation::WriteLac) => sub_request(message, 103, write_lac_merge, write_lac_finish)?,
        Ok(Operation::ReadLac) => sub_request(message, 104, ledger_merge, |ledger| {
            Ok(Body::ReadLac {
                ledger_id: ledger_required(ledger)?,
            })
        })?,
        Ok(Operation::GetBookieInfo) => {
            sub_request(message, 105, bookie_info_merge, |requested: Option<i64>| {
                Ok(Body::GetBookieInfo {
                    requested: requested.unwrap_or(0),
                })
            })?
        }
        Ok(Operation::StartTls) => sub_request(message, 106, skip_merge, |()| Ok(Body::StartTls))?,
        Ok(Operation::ForceLedger) => sub_request(message, 107, ledger_merge, |ledger| {
            Ok(Body::ForceLedger {
                ledger_id: ledger_required(ledger)?,
            })
        })?,
        Ok(Operation::GetListOfEntriesOfLedger) => {
            sub_request(message, 108, ledger_merge, |ledger| {
                Ok(Body::ListOfEntries {
                    ledger_id: ledger_required(ledger)?,
                })
            })?
        }
        Ok(Operation::RangeReadEntry | Operation::RangeAddEntry | Operation::BatchReadEntry)
        | Err(_) => Body::Unsupported,
    };
    Ok(Request { header, body })
}

/// The response header: VERSION_THREE plus the request's operation and txnId (§3.3).
#[must_use]
pub fn response_header(request: &Header) -> proto::BkPacketHeader {
    proto::BkPacketHeader {
        version: PROTOCOL_VERSION_THREE,
        operation: request.operation,
        txn_id: request.txn_id,
        priority: None,
    }
}

/// Appends `u32 length | response` to `out` (no temporary buffer).
pub fn encode_response(out: &mut Vec<u8>, response: &proto::Response) {
    let length = response.encoded_len();
    length_prefix(out, length);
    let start = out.len();
    response.encode(out).expect("a Vec grows as needed");
    assert_eq!(out.len() - start, length);
}

/// A READ_ENTRY reply. `body` is appended after the prost-encoded fields so the entry is
/// copied once, from the journal into the output.
#[derive(Clone, Copy, Debug)]
pub struct ReadReply<'a> {
    /// The status (both at top level and in the ReadResponse).
    pub status: i32,
    /// The request's ledger.
    pub ledger_id: i64,
    /// The request's entry (-1 stays -1), or the piggybacked entry.
    pub entry_id: i64,
    /// The stored body (EOK only).
    pub body: Option<&'a [u8]>,
    /// The bookie's LAC.
    pub max_lac: Option<i64>,
    /// Piggyback: when the LAC was last updated (ms since the epoch).
    pub lac_update_timestamp: Option<i64>,
}

/// Appends a READ_ENTRY response: `Response{header, status, readResponse{...}}`.
pub fn encode_read_response(out: &mut Vec<u8>, request: &Header, reply: &ReadReply<'_>) {
    let read = proto::ReadResponse {
        status: reply.status,
        ledger_id: reply.ledger_id,
        entry_id: reply.entry_id,
        body: None,
        max_lac: reply.max_lac,
        lac_update_timestamp: reply.lac_update_timestamp,
    };
    let body_field_len = reply.body.map_or(0, |body| {
        key_len(READ_RESPONSE_FIELD_BODY) + encoded_len_varint(to_u64(body.len())) + body.len()
    });
    let read_len = read.encoded_len() + body_field_len;
    let outer = proto::Response {
        header: response_header(request),
        status: reply.status,
        ..Default::default()
    };
    let length = outer.encoded_len()
        + key_len(RESPONSE_FIELD_READ)
        + encoded_len_varint(to_u64(read_len))
        + read_len;
    length_prefix(out, length);
    let start = out.len();
    outer.encode(out).expect("a Vec grows as needed");
    // Protobuf fields may come in any order, so the sub-message follows the fixed fields.
    encode_key(RESPONSE_FIELD_READ, WireType::LengthDelimited, out);
    encode_varint(to_u64(read_len), out);
    read.encode(out).expect("a Vec grows as needed");
    if let Some(body) = reply.body {
        encode_key(READ_RESPONSE_FIELD_BODY, WireType::LengthDelimited, out);
        encode_varint(to_u64(body.len()), out);
        out.extend_from_slice(body);
    }
    assert_eq!(out.len() - start, length);
}

/// Appends an ADD_ENTRY response with the request's ids.
pub fn encode_add_response(
    out: &mut Vec<u8>,
    request: &Header,
    status: i32,
    ledger: i64,
    entry: i64,
) {
    let response = proto::Response {
        header: response_header(request),
        status,
        add_response: Some(proto::AddResponse {
            status,
            ledger_id: ledger,
            entry_id: entry,
        }),
        ..Default::default()
    };
    encode_response(out, &response);
}

/// Appends the response to `request` that carries only `status`: the header and status, plus
/// the operation's sub-response with the status and the request's ids where it has them.
/// Unsupported operations and missing sub-requests get no sub-response (§3.3).
pub fn encode_status_response(out: &mut Vec<u8>, request: &Request<'_>, status: i32) {
    let mut response = proto::Response {
        header: response_header(&request.header),
        status,
        ..Default::default()
    };
    match request.body {
        Body::Read(read) => {
            let reply = ReadReply {
                status,
                ledger_id: read.ledger_id,
                entry_id: read.entry_id,
                body: None,
                max_lac: None,
                lac_update_timestamp: None,
            };
            encode_read_response(out, &request.header, &reply);
            return;
        }
        Body::Add(add) => {
            response.add_response = Some(proto::AddResponse {
                status,
                ledger_id: add.ledger_id,
                entry_id: add.entry_id,
            });
        }
        Body::WriteLac(write) => {
            response.write_lac_response = Some(proto::WriteLacResponse {
                status,
                ledger_id: write.ledger_id,
            });
        }
        Body::ReadLac { ledger_id } => {
            response.read_lac_response = Some(proto::ReadLacResponse {
                status,
                ledger_id,
                lac_body: None,
                last_entry_body: None,
            });
        }
        Body::ForceLedger { ledger_id } => {
            response.force_ledger_response = Some(proto::ForceLedgerResponse { status, ledger_id });
        }
        Body::ListOfEntries { ledger_id } => {
            response.get_list_of_entries_of_ledger_response =
                Some(proto::GetListOfEntriesOfLedgerResponse {
                    status,
                    ledger_id,
                    availability_of_entries_of_ledger: None,
                });
        }
        Body::GetBookieInfo { .. } => {
            response.get_bookie_info_response = Some(proto::GetBookieInfoResponse {
                status,
                ..Default::default()
            });
        }
        Body::StartTls => response.start_tls_response = Some(proto::StartTlsResponse {}),
        Body::Auth | Body::Missing | Body::Unsupported => {}
    }
    encode_response(out, &response);
}

/// The v3 `StatusCode` of a v2 error code (§2.4); an unknown code is EIO.
#[must_use]
pub fn status_from_v2(code: i32) -> i32 {
    let status = match code {
        0 => Status::Eok,
        1 => Status::Enoledger,
        2 => Status::Enoentry,
        100 => Status::Ebadreq,
        102 => Status::Eua,
        103 => Status::Ebadversion,
        104 => Status::Efenced,
        105 => Status::Ereadonly,
        106 => Status::Etoomanyrequests,
        _ => Status::Eio,
    };
    status as i32
}

/// Size of the `availabilityOfEntriesOfLedger` header (§3.5).
pub const AVAILABILITY_HEADER_SIZE: usize = 64;
/// Size of one sequence group.
pub const AVAILABILITY_GROUP_SIZE: usize = 24;

/// Encodes `availabilityOfEntriesOfLedger` (§3.5) from ascending entry ids: one group
/// `{start, start, run length, 0}` per contiguous run, runs longer than `i32::MAX` split.
#[must_use]
pub fn availability_of_entries(entries: impl Iterator<Item = i64>) -> Vec<u8> {
    let mut out = vec![0u8; AVAILABILITY_HEADER_SIZE];
    let mut groups: i32 = 0;
    let mut run: Option<(i64, i32)> = None;
    let mut push = |out: &mut Vec<u8>, start: i64, size: i32| {
        out.extend_from_slice(&start.to_be_bytes());
        out.extend_from_slice(&start.to_be_bytes());
        out.extend_from_slice(&size.to_be_bytes());
        out.extend_from_slice(&0i32.to_be_bytes());
        groups = groups.checked_add(1).expect("fewer groups than entries");
    };
    for entry in entries {
        run = match run {
            Some((start, size)) if start + i64::from(size) == entry && size < i32::MAX => {
                Some((start, size + 1))
            }
            Some((start, size)) => {
                push(&mut out, start, size);
                Some((entry, 1))
            }
            None => Some((entry, 1)),
        };
    }
    if let Some((start, size)) = run {
        push(&mut out, start, size);
    }
    // Header: i32 version 0, i32 group count, zeros to 64 bytes.
    out[4..8].copy_from_slice(&groups.to_be_bytes());
    assert_eq!(
        out.len(),
        AVAILABILITY_HEADER_SIZE + AVAILABILITY_GROUP_SIZE * usize::try_from(groups).expect("≥ 0")
    );
    out
}

/// The master key, if it has the one valid size.
#[must_use]
pub fn master_key(bytes: &[u8]) -> Option<&[u8; MASTER_KEY_SIZE]> {
    bytes.try_into().ok()
}

const REQUEST_FIELD_HEADER: u32 = 1;
const REQUEST_FIELD_SUB_FIRST: u32 = 100;
const REQUEST_FIELD_SUB_LAST: u32 = 108;
const REQUEST_FIELD_CONTEXT: u32 = 200;
const RESPONSE_FIELD_READ: u32 = 100;
const READ_RESPONSE_FIELD_BODY: u32 = 4;
/// A varint is at most 10 bytes (64 bits, 7 per byte).
const VARINT_SIZE_MAX: usize = 10;
/// Field numbers are 29 bits.
const FIELD_NUMBER_MAX: u64 = (1 << 29) - 1;

fn to_u64(size: usize) -> u64 {
    u64::try_from(size).expect("usize fits u64")
}

fn length_prefix(out: &mut Vec<u8>, length: usize) {
    let length = u32::try_from(length).expect("a v3 response fits a u32 frame");
    out.extend_from_slice(&length.to_be_bytes());
}

fn malformed(reason: &'static str) -> DecodeError {
    DecodeError::Malformed { reason }
}

/// One field's value as the wire carries it.
#[derive(Clone, Copy, Debug)]
enum Value<'a> {
    Varint(u64),
    Fixed64,
    Bytes(&'a [u8]),
    Fixed32,
}

impl<'a> Value<'a> {
    fn varint(self) -> Result<u64, DecodeError> {
        match self {
            Value::Varint(value) => Ok(value),
            _ => Err(malformed(
                "v3 field has the wrong wire type (varint expected)",
            )),
        }
    }

    /// protobuf `int64`/`uint64`/`int32`/enum: the varint's low bits, two's complement.
    #[allow(clippy::cast_possible_wrap, clippy::cast_possible_truncation)]
    fn int64(self) -> Result<i64, DecodeError> {
        self.varint().map(|value| value as i64)
    }

    #[allow(clippy::cast_possible_truncation)]
    fn int32(self) -> Result<i32, DecodeError> {
        self.int64().map(|value| value as i32)
    }

    fn bytes(self) -> Result<&'a [u8], DecodeError> {
        match self {
            Value::Bytes(bytes) => Ok(bytes),
            _ => Err(malformed(
                "v3 field has the wrong wire type (bytes expected)",
            )),
        }
    }
}

fn varint(rest: &mut &[u8]) -> Result<u64, DecodeError> {
    let mut value: u64 = 0;
    for index in 0..VARINT_SIZE_MAX {
        let (&byte, after) = rest.split_first().ok_or(malformed("v3 varint cut short"))?;
        *rest = after;
        // The tenth byte holds bit 63 only; more would overflow (prost refuses it too).
        if index == VARINT_SIZE_MAX - 1 && byte > 1 {
            return Err(malformed("v3 varint longer than 64 bits"));
        }
        value |= u64::from(byte & 0x7F) << (7 * index);
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(malformed("v3 varint longer than 10 bytes"))
}

fn take<'a>(rest: &mut &'a [u8], size: usize) -> Result<&'a [u8], DecodeError> {
    if rest.len() < size {
        return Err(malformed("v3 field cut short"));
    }
    let (taken, after) = rest.split_at(size);
    *rest = after;
    Ok(taken)
}

/// Calls `each(number, value)` for every field of `message`, in wire order.
fn fields<'a>(
    message: &'a [u8],
    mut each: impl FnMut(u32, Value<'a>) -> Result<(), DecodeError>,
) -> Result<(), DecodeError> {
    let mut rest = message;
    // Bounded: every pass consumes at least the one-byte tag.
    while !rest.is_empty() {
        let tag = varint(&mut rest)?;
        let number = tag >> 3;
        if number == 0 || number > FIELD_NUMBER_MAX {
            return Err(malformed("v3 field number out of range"));
        }
        let value = match tag & 0x7 {
            0 => Value::Varint(varint(&mut rest)?),
            1 => {
                take(&mut rest, 8)?;
                Value::Fixed64
            }
            2 => {
                let size = usize::try_from(varint(&mut rest)?)
                    .map_err(|_| malformed("v3 length beyond the frame"))?;
                Value::Bytes(take(&mut rest, size)?)
            }
            5 => {
                take(&mut rest, 4)?;
                Value::Fixed32
            }
            _ => return Err(malformed("v3 group or invalid wire type")),
        };
        let number = u32::try_from(number).expect("29-bit field number");
        each(number, value)?;
    }
    Ok(())
}

/// Parses every occurrence of sub-request field `number` into one partial state (protobuf
/// merges repeated message fields), then builds the body; absent → `Body::Missing`.
fn sub_request<'a, P: Default>(
    message: &'a [u8],
    number: u32,
    merge: fn(&mut P, u32, Value<'a>) -> Result<(), DecodeError>,
    finish: impl FnOnce(P) -> Result<Body<'a>, DecodeError>,
) -> Result<Body<'a>, DecodeError> {
    let mut partial = P::default();
    let mut present = false;
    fields(message, |field, value| {
        if field == number {
            present = true;
            fields(value.bytes()?, |inner, value| {
                merge(&mut partial, inner, value)
            })?;
        }
        Ok(())
    })?;
    if !present {
        return Ok(Body::Missing);
    }
    finish(partial)
}

#[derive(Default)]
struct HeaderPartial {
    version: Option<i32>,
    operation: Option<i32>,
    txn_id: Option<u64>,
    priority: Option<u32>,
}

impl HeaderPartial {
    fn merge(&mut self, bytes: &[u8]) -> Result<(), DecodeError> {
        fields(bytes, |number, value| {
            match number {
                1 => self.version = Some(value.int32()?),
                2 => self.operation = Some(value.int32()?),
                3 => self.txn_id = Some(value.varint()?),
                4 => {
                    let priority = u32::try_from(value.varint()? & u64::from(u32::MAX));
                    self.priority = Some(priority.expect("masked to 32 bits"));
                }
                _ => {}
            }
            Ok(())
        })
    }

    fn finish(self) -> Result<Header, DecodeError> {
        let missing = malformed("v3 header lacks a required field");
        Ok(Header {
            version: self.version.ok_or(missing)?,
            operation: self.operation.ok_or(missing)?,
            txn_id: self.txn_id.ok_or(missing)?,
            priority: self.priority.unwrap_or(0),
        })
    }
}

fn missing() -> DecodeError {
    malformed("v3 sub-request lacks a required field")
}

fn skip_merge(_: &mut (), _: u32, _: Value<'_>) -> Result<(), DecodeError> {
    Ok(())
}

fn ledger_merge(
    ledger: &mut Option<i64>,
    number: u32,
    value: Value<'_>,
) -> Result<(), DecodeError> {
    if number == 1 {
        *ledger = Some(value.int64()?);
    }
    Ok(())
}

fn ledger_required(ledger: Option<i64>) -> Result<i64, DecodeError> {
    ledger.ok_or_else(missing)
}

fn bookie_info_merge(
    requested: &mut Option<i64>,
    number: u32,
    value: Value<'_>,
) -> Result<(), DecodeError> {
    if number == 1 {
        *requested = Some(value.int64()?);
    }
    Ok(())
}

#[derive(Default)]
struct ReadPartial<'a> {
    flag: Option<i32>,
    ledger_id: Option<i64>,
    entry_id: Option<i64>,
    master_key: Option<&'a [u8]>,
    previous_lac: Option<i64>,
    time_out: Option<i64>,
}

fn read_merge<'a>(
    read: &mut ReadPartial<'a>,
    number: u32,
    value: Value<'a>,
) -> Result<(), DecodeError> {
    match number {
        100 => read.flag = Some(value.int32()?),
        1 => read.ledger_id = Some(value.int64()?),
        2 => read.entry_id = Some(value.int64()?),
        3 => read.master_key = Some(value.bytes()?),
        4 => read.previous_lac = Some(value.int64()?),
        5 => read.time_out = Some(value.int64()?),
        _ => {}
    }
    Ok(())
}

fn read_finish(read: ReadPartial<'_>) -> Result<Body<'_>, DecodeError> {
    Ok(Body::Read(ReadRequest {
        flag: read.flag,
        ledger_id: read.ledger_id.ok_or_else(missing)?,
        entry_id: read.entry_id.ok_or_else(missing)?,
        master_key: read.master_key,
        previous_lac: read.previous_lac,
        time_out: read.time_out,
    }))
}

#[derive(Default)]
struct AddPartial<'a> {
    flag: Option<i32>,
    ledger_id: Option<i64>,
    entry_id: Option<i64>,
    master_key: Option<&'a [u8]>,
    body: Option<&'a [u8]>,
    write_flags: Option<i32>,
}

fn add_merge<'a>(
    add: &mut AddPartial<'a>,
    number: u32,
    value: Value<'a>,
) -> Result<(), DecodeError> {
    match number {
        100 => add.flag = Some(value.int32()?),
        1 => add.ledger_id = Some(value.int64()?),
        2 => add.entry_id = Some(value.int64()?),
        3 => add.master_key = Some(value.bytes()?),
        4 => add.body = Some(value.bytes()?),
        5 => add.write_flags = Some(value.int32()?),
        _ => {}
    }
    Ok(())
}

fn add_finish(add: AddPartial<'_>) -> Result<Body<'_>, DecodeError> {
    Ok(Body::Add(AddRequest {
        flag: add.flag,
        ledger_id: add.ledger_id.ok_or_else(missing)?,
        entry_id: add.entry_id.ok_or_else(missing)?,
        master_key: add.master_key.ok_or_else(missing)?,
        body: add.body.ok_or_else(missing)?,
        write_flags: add.write_flags.unwrap_or(0),
    }))
}

#[derive(Default)]
struct WriteLacPartial<'a> {
    ledger_id: Option<i64>,
    lac: Option<i64>,
    master_key: Option<&'a [u8]>,
    body: Option<&'a [u8]>,
}

fn write_lac_merge<'a>(
    write: &mut WriteLacPartial<'a>,
    number: u32,
    value: Value<'a>,
) -> Result<(), DecodeError> {
    match number {
        1 => write.ledger_id = Some(value.int64()?),
        2 => write.lac = Some(value.int64()?),
        3 => write.master_key = Some(value.bytes()?),
        4 => write.body = Some(value.bytes()?),
        _ => {}
    }
    Ok(())
}

fn write_lac_finish(write: WriteLacPartial<'_>) -> Result<Body<'_>, DecodeError> {
    Ok(Body::WriteLac(WriteLacRequest {
        ledger_id: write.ledger_id.ok_or_else(missing)?,
        lac: write.lac.ok_or_else(missing)?,
        master_key: write.master_key.ok_or_else(missing)?,
        body: write.body.ok_or_else(missing)?,
    }))
}

#[cfg(test)]
mod tests;

/// Appends one v3 ADD request frame (`u32` length, `Request`) without allocating: the bench
/// client's hot path. `write_flags` goes on the wire only when non-zero, as the Java client
/// sends it. Field order and tags: `docs/bookkeeper-protocol.md` §3.2.
pub fn encode_add_request(out: &mut Vec<u8>, txn_id: u64, add: &AddRequestFields<'_>) {
    let header_len = 2 + 2 + key_len(3) + encoded_len_varint(txn_id);
    let key_field_len = add.master_key.len();
    let body_len = add.body.len();
    #[allow(clippy::cast_sign_loss)]
    let (ledger, entry) = (add.ledger_id as u64, add.entry_id as u64);
    #[allow(clippy::cast_sign_loss)]
    let write_flags = i64::from(add.write_flags) as u64;
    let mut add_len = key_len(1)
        + encoded_len_varint(ledger)
        + key_len(2)
        + encoded_len_varint(entry)
        + key_len(3)
        + encoded_len_varint(key_field_len as u64)
        + key_field_len
        + key_len(4)
        + encoded_len_varint(body_len as u64)
        + body_len;
    if add.write_flags != 0 {
        add_len += key_len(5) + encoded_len_varint(write_flags);
    }
    if add.recovery {
        add_len += key_len(100) + 1;
    }
    let message_len = key_len(1)
        + encoded_len_varint(header_len as u64)
        + header_len
        + key_len(101)
        + encoded_len_varint(add_len as u64)
        + add_len;
    let frame_len = u32::try_from(message_len).expect("an add frame fits u32");
    out.extend_from_slice(&frame_len.to_be_bytes());
    encode_key(1, WireType::LengthDelimited, out);
    encode_varint(header_len as u64, out);
    encode_key(1, WireType::Varint, out);
    encode_varint(u64::from(PROTOCOL_VERSION_THREE.unsigned_abs()), out);
    encode_key(2, WireType::Varint, out);
    encode_varint(u64::from((Operation::AddEntry as i32).unsigned_abs()), out);
    encode_key(3, WireType::Varint, out);
    encode_varint(txn_id, out);
    encode_key(101, WireType::LengthDelimited, out);
    encode_varint(add_len as u64, out);
    if add.recovery {
        encode_key(100, WireType::Varint, out);
        encode_varint(u64::from(ADD_FLAG_RECOVERY_ADD.unsigned_abs()), out);
    }
    encode_key(1, WireType::Varint, out);
    encode_varint(ledger, out);
    encode_key(2, WireType::Varint, out);
    encode_varint(entry, out);
    encode_key(3, WireType::LengthDelimited, out);
    encode_varint(key_field_len as u64, out);
    out.extend_from_slice(add.master_key);
    encode_key(4, WireType::LengthDelimited, out);
    encode_varint(body_len as u64, out);
    out.extend_from_slice(add.body);
    if add.write_flags != 0 {
        encode_key(5, WireType::Varint, out);
        encode_varint(write_flags, out);
    }
}

/// The fields of a v3 ADD request, for [`encode_add_request`].
#[derive(Clone, Copy, Debug)]
pub struct AddRequestFields<'a> {
    /// The ledger.
    pub ledger_id: i64,
    /// The entry.
    pub entry_id: i64,
    /// The ledger's master key.
    pub master_key: &'a [u8],
    /// The entry body (BookKeeper layout, digest included).
    pub body: &'a [u8],
    /// `WriteFlag`s: `WRITE_FLAG_DEFERRED_SYNC` or 0.
    pub write_flags: i32,
    /// A recovery add (`flag = RECOVERY_ADD`).
    pub recovery: bool,
}

/// The v2 error code of a v3 `StatusCode` (the inverse of [`status_from_v2`]); EUNKNOWNLEDGERSTATE
/// and anything unknown become EIO (101), the code a v2 client can handle (§5.10).
#[must_use]
pub fn v2_from_status(status: i32) -> i32 {
    match Status::try_from(status) {
        Ok(Status::Eok) => 0,
        Ok(Status::Enoledger) => 1,
        Ok(Status::Enoentry) => 2,
        Ok(Status::Ebadreq) => 100,
        Ok(Status::Eua) => 102,
        Ok(Status::Ebadversion) => 103,
        Ok(Status::Efenced) => 104,
        Ok(Status::Ereadonly) => 105,
        Ok(Status::Etoomanyrequests) => 106,
        _ => 101,
    }
}

/// An ADD response: (status as a v2 code, ledger, entry), from the top-level status or, when
/// that is EOK, the sub-response's (§3.3). `None` if the message is not a decodable v3 ADD
/// response.
#[must_use]
pub fn decode_add_response(message: &[u8]) -> Option<(i32, i64, i64)> {
    let response = proto::Response::decode(message).ok()?;
    let add = response.add_response?;
    let status = if response.status == Status::Eok as i32 {
        add.status
    } else {
        response.status
    };
    Some((v2_from_status(status), add.ledger_id, add.entry_id))
}
