//! The v3 request reader: walks a `Request` message once, without allocating, and returns its
//! header and the sub-request its operation selects, with body and masterKey borrowed from the
//! receive buffer. It never panics on any input.

use super::Operation;
use crate::error::{malformed, DecodeError};

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

const REQUEST_FIELD_HEADER: u32 = 1;
const REQUEST_FIELD_SUB_FIRST: u32 = 100;
const REQUEST_FIELD_SUB_LAST: u32 = 108;
const REQUEST_FIELD_CONTEXT: u32 = 200;
/// A varint is at most 10 bytes (64 bits, 7 per byte).
const VARINT_SIZE_MAX: usize = 10;
/// Field numbers are 29 bits.
const FIELD_NUMBER_MAX: u64 = (1 << 29) - 1;

/// One field's value as the wire carries it.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Value<'a> {
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

    pub(crate) fn bytes(self) -> Result<&'a [u8], DecodeError> {
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
pub(crate) fn fields<'a>(
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
