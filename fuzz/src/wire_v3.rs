//! `v3_request`: the zero-copy v3 request reader on arbitrary bytes, differential against
//! prost's decoder of the same `Request` message.
//!
//! Properties, for every input:
//! - `wire::v3::decode_request` never panics, and neither does the framed entry point
//!   `decode_any_request` on the same bytes behind a length prefix;
//! - when both our reader and prost accept the message, they agree on the header and on the
//!   sub-request the operation selects (every field, bodies byte for byte);
//! - when prost accepts the message and our reader refuses it, the reason is one where we are
//!   stricter on purpose: a missing required field (prost does not check them) or a group
//!   (wire types 3/4, which prost skips and BookKeeper never sends).
//!
//! Our reader may accept what prost refuses: it skips, unparsed, the sub-requests the
//! operation does not select and `requestContext` (whose strings prost checks as UTF-8).

use prost::Message;
use wire::v3::{self, proto, Body, Operation};
use wire::{AnyRequest, DecodeError, DecodedAny, FRAME_SIZE_MAX_DEFAULT};

/// Why our reader may refuse what prost accepts.
const STRICTER_REASONS: [&str; 3] = [
    "v3 header lacks a required field",
    "v3 sub-request lacks a required field",
    "v3 group or invalid wire type",
];

/// Target `v3_request`: `data` is one `Request` message (no length prefix).
pub fn v3_request(data: &[u8]) {
    framed_check(data);
    let ours = v3::decode_request(data);
    let oracle = proto::Request::decode(data);
    match (ours, oracle) {
        (Ok(ours), Ok(oracle)) => agree(&ours, &oracle),
        (Err(DecodeError::Malformed { reason }), Ok(_)) => assert!(
            STRICTER_REASONS.contains(&reason),
            "prost accepts what we refuse: {reason}"
        ),
        (Err(error), Ok(_)) => panic!("unexpected error {error:?}"),
        (_, Err(_)) => {}
    }
}

/// The same bytes as a frame: decoded as v3 iff they start with 0x0A, never a panic.
fn framed_check(data: &[u8]) {
    let Ok(length) = u32::try_from(data.len()) else {
        return;
    };
    let mut frame = length.to_be_bytes().to_vec();
    frame.extend_from_slice(data);
    let decoded = wire::decode_any_request(&frame, FRAME_SIZE_MAX_DEFAULT);
    if let Ok(DecodedAny::Frame {
        request: AnyRequest::V3(_),
        frame_size,
    }) = decoded
    {
        assert_eq!(data.first(), Some(&0x0A));
        assert_eq!(frame_size, frame.len());
    }
}

fn agree(ours: &v3::Request<'_>, oracle: &proto::Request) {
    let header = &oracle.header;
    assert_eq!(ours.header.version, header.version);
    assert_eq!(ours.header.operation, header.operation);
    assert_eq!(ours.header.txn_id, header.txn_id);
    assert_eq!(ours.header.priority, header.priority.unwrap_or(0));
    match ours.body {
        Body::Read(read) => {
            let expected = oracle.read_request.as_ref().expect("prost has readRequest");
            assert_eq!(read.flag, expected.flag);
            assert_eq!(
                (read.ledger_id, read.entry_id),
                (expected.ledger_id, expected.entry_id)
            );
            assert_eq!(read.master_key, expected.master_key.as_deref());
            assert_eq!(read.previous_lac, expected.previous_lac);
            assert_eq!(read.time_out, expected.time_out);
        }
        Body::Add(add) => {
            let expected = oracle.add_request.as_ref().expect("prost has addRequest");
            assert_eq!(add.flag, expected.flag);
            assert_eq!(
                (add.ledger_id, add.entry_id),
                (expected.ledger_id, expected.entry_id)
            );
            assert_eq!(add.master_key, &expected.master_key[..]);
            assert_eq!(add.body, &expected.body[..]);
            assert_eq!(add.write_flags, expected.write_flags.unwrap_or(0));
        }
        Body::WriteLac(write) => {
            let expected = oracle.write_lac_request.as_ref().expect("writeLacRequest");
            assert_eq!(
                (write.ledger_id, write.lac),
                (expected.ledger_id, expected.lac)
            );
            assert_eq!(write.master_key, &expected.master_key[..]);
            assert_eq!(write.body, &expected.body[..]);
        }
        Body::ReadLac { ledger_id } => {
            let expected = oracle.read_lac_request.as_ref().expect("readLacRequest");
            assert_eq!(ledger_id, expected.ledger_id);
        }
        Body::ForceLedger { ledger_id } => {
            let expected = oracle
                .force_ledger_request
                .as_ref()
                .expect("forceLedgerRequest");
            assert_eq!(ledger_id, expected.ledger_id);
        }
        Body::ListOfEntries { ledger_id } => {
            let expected = oracle
                .get_list_of_entries_of_ledger_request
                .as_ref()
                .expect("getListOfEntriesOfLedgerRequest");
            assert_eq!(ledger_id, expected.ledger_id);
        }
        Body::GetBookieInfo { requested } => {
            let expected = oracle
                .get_bookie_info_request
                .as_ref()
                .expect("bookie info");
            assert_eq!(requested, expected.requested.unwrap_or(0));
        }
        Body::Auth => assert!(oracle.auth_request.is_some()),
        Body::StartTls => assert!(oracle.start_tls_request.is_some()),
        Body::Missing => assert!(selected_absent(oracle), "prost has the sub-request"),
        Body::Unsupported => assert!(matches!(
            Operation::try_from(header.operation),
            Ok(Operation::RangeReadEntry | Operation::RangeAddEntry | Operation::BatchReadEntry)
                | Err(_)
        )),
    }
}

/// True when the sub-request the operation selects is absent in prost's decode.
fn selected_absent(oracle: &proto::Request) -> bool {
    match Operation::try_from(oracle.header.operation) {
        Ok(Operation::ReadEntry) => oracle.read_request.is_none(),
        Ok(Operation::AddEntry) => oracle.add_request.is_none(),
        Ok(Operation::Auth) => oracle.auth_request.is_none(),
        Ok(Operation::WriteLac) => oracle.write_lac_request.is_none(),
        Ok(Operation::ReadLac) => oracle.read_lac_request.is_none(),
        Ok(Operation::GetBookieInfo) => oracle.get_bookie_info_request.is_none(),
        Ok(Operation::StartTls) => oracle.start_tls_request.is_none(),
        Ok(Operation::ForceLedger) => oracle.force_ledger_request.is_none(),
        Ok(Operation::GetListOfEntriesOfLedger) => {
            oracle.get_list_of_entries_of_ledger_request.is_none()
        }
        _ => false,
    }
}
