//! v3 response encoders: each appends `u32 length | Response` straight into the connection's
//! output, prost encoding the fixed fields and an entry body appended after them, not copied
//! into a prost message first.

use super::{proto, to_u64, Body, Header, Request, PROTOCOL_VERSION_THREE};
use prost::encoding::{encode_key, encode_varint, encoded_len_varint, key_len, WireType};
use prost::Message;

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

const RESPONSE_FIELD_READ: u32 = 100;
const READ_RESPONSE_FIELD_BODY: u32 = 4;

fn length_prefix(out: &mut Vec<u8>, length: usize) {
    let length = u32::try_from(length).expect("a v3 response fits a u32 frame");
    out.extend_from_slice(&length.to_be_bytes());
}
