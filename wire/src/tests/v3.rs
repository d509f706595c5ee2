//! Tests of the v3 codec: requests encoded by prost and read by the zero-copy reader,
//! responses encoded here and decoded by prost with every required field checked.

use crate::client::v3::{decode_add_response, encode_add_request, AddRequestFields};
use crate::v3::*;
use crate::{
    decode_any_request, AnyRequest, DecodeError, DecodedAny, FRAME_SIZE_MAX_DEFAULT,
    MASTER_KEY_SIZE,
};
use prost::encoding::{encode_key, encode_varint, WireType};
use prost::Message;

const KEY: [u8; 20] = [7; 20];

fn header(operation: Operation, txn_id: u64) -> proto::BkPacketHeader {
    proto::BkPacketHeader {
        version: PROTOCOL_VERSION_THREE,
        operation: operation as i32,
        txn_id,
        priority: None,
    }
}

fn request(operation: Operation, txn_id: u64) -> proto::Request {
    proto::Request {
        header: header(operation, txn_id),
        ..Default::default()
    }
}

fn add_request(body: &[u8]) -> proto::Request {
    let mut request = request(Operation::AddEntry, 9);
    request.add_request = Some(proto::AddRequest {
        flag: Some(ADD_FLAG_RECOVERY_ADD),
        ledger_id: 5,
        entry_id: 6,
        master_key: KEY.to_vec(),
        body: body.to_vec(),
        write_flags: Some(WRITE_FLAG_DEFERRED_SYNC),
    });
    request
}

fn read_request() -> proto::Request {
    let mut request = request(Operation::ReadEntry, u64::MAX);
    request.read_request = Some(proto::ReadRequest {
        flag: Some(READ_FLAG_ENTRY_PIGGYBACK),
        ledger_id: -3,
        entry_id: -1,
        master_key: Some(KEY.to_vec()),
        previous_lac: Some(41),
        time_out: Some(1000),
    });
    request.header.priority = Some(2);
    request
}

fn encoded(message: &impl Message) -> Vec<u8> {
    message.encode_to_vec()
}

/// Appends one field of every wire type, with numbers no BookKeeper message uses.
fn unknown_fields(out: &mut Vec<u8>) {
    encode_key(90, WireType::Varint, out);
    encode_varint(u64::MAX, out);
    encode_key(91, WireType::SixtyFourBit, out);
    out.extend_from_slice(&[1; 8]);
    encode_key(92, WireType::ThirtyTwoBit, out);
    out.extend_from_slice(&[2; 4]);
    encode_key(93, WireType::LengthDelimited, out);
    encode_varint(3, out);
    out.extend_from_slice(b"abc");
}

#[test]
fn add_request_from_prost() {
    let body = b"0123456789abcdef-payload";
    let bytes = encoded(&add_request(body));
    assert_eq!(bytes[0], 0x0A, "a v3 request starts with the header tag");
    let decoded = decode_request(&bytes).unwrap();
    assert_eq!(decoded.header.operation, Operation::AddEntry as i32);
    assert_eq!(decoded.header.txn_id, 9);
    assert_eq!(decoded.header.version, PROTOCOL_VERSION_THREE);
    let Body::Add(add) = decoded.body else {
        panic!("{decoded:?}")
    };
    assert_eq!(add.flag, Some(ADD_FLAG_RECOVERY_ADD));
    assert_eq!((add.ledger_id, add.entry_id), (5, 6));
    assert_eq!(add.master_key, &KEY);
    assert_eq!(add.body, body);
    assert_eq!(add.write_flags, WRITE_FLAG_DEFERRED_SYNC);
    // Zero-copy: the body is a slice of the frame.
    let range = bytes.as_ptr_range();
    assert!(range.contains(&add.body.as_ptr()));
}

#[test]
fn read_request_from_prost() {
    let bytes = encoded(&read_request());
    let decoded = decode_request(&bytes).unwrap();
    assert_eq!(decoded.header.txn_id, u64::MAX);
    assert_eq!(decoded.header.priority, 2);
    let expected = ReadRequest {
        flag: Some(READ_FLAG_ENTRY_PIGGYBACK),
        ledger_id: -3,
        entry_id: -1,
        master_key: Some(&KEY),
        previous_lac: Some(41),
        time_out: Some(1000),
    };
    assert_eq!(decoded.body, Body::Read(expected));
}

#[test]
fn entry_minus_one_is_a_ten_byte_varint() {
    let mut request = request(Operation::ReadEntry, 0);
    request.read_request = Some(proto::ReadRequest {
        ledger_id: 1,
        entry_id: -1,
        ..Default::default()
    });
    let bytes = encoded(&request);
    let minus_one = [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01];
    assert!(bytes.windows(10).any(|window| window == minus_one));
    let Body::Read(read) = decode_request(&bytes).unwrap().body else {
        panic!()
    };
    assert_eq!(read.entry_id, -1);
    assert_eq!(read.flag, None);
    assert_eq!(read.master_key, None);
}

#[test]
fn every_operation_from_prost() {
    let mut cases: Vec<(proto::Request, Body<'static>)> = Vec::new();
    let mut write_lac = request(Operation::WriteLac, 1);
    write_lac.write_lac_request = Some(proto::WriteLacRequest {
        ledger_id: 4,
        lac: 3,
        master_key: KEY.to_vec(),
        body: b"lacbody".to_vec(),
    });
    let lac_body: &'static [u8] = b"lacbody";
    cases.push((
        write_lac,
        Body::WriteLac(WriteLacRequest {
            ledger_id: 4,
            lac: 3,
            master_key: &KEY,
            body: lac_body,
        }),
    ));
    let mut read_lac = request(Operation::ReadLac, 2);
    read_lac.read_lac_request = Some(proto::ReadLacRequest { ledger_id: 8 });
    cases.push((read_lac, Body::ReadLac { ledger_id: 8 }));
    let mut force = request(Operation::ForceLedger, 3);
    force.force_ledger_request = Some(proto::ForceLedgerRequest { ledger_id: 9 });
    cases.push((force, Body::ForceLedger { ledger_id: 9 }));
    let mut list = request(Operation::GetListOfEntriesOfLedger, 4);
    list.get_list_of_entries_of_ledger_request =
        Some(proto::GetListOfEntriesOfLedgerRequest { ledger_id: 10 });
    cases.push((list, Body::ListOfEntries { ledger_id: 10 }));
    let mut info = request(Operation::GetBookieInfo, 5);
    info.get_bookie_info_request = Some(proto::GetBookieInfoRequest { requested: Some(3) });
    cases.push((info, Body::GetBookieInfo { requested: 3 }));
    let mut auth = request(Operation::Auth, 6);
    auth.auth_request = Some(proto::AuthMessage {
        auth_plugin_name: "x".into(),
        payload: vec![1],
    });
    cases.push((auth, Body::Auth));
    let mut tls = request(Operation::StartTls, 7);
    tls.start_tls_request = Some(proto::StartTlsRequest {});
    cases.push((tls, Body::StartTls));
    // The operation selects the sub-request: an ADD without addRequest is Missing even though
    // another sub-request is present.
    let mut missing = request(Operation::AddEntry, 8);
    missing.read_lac_request = Some(proto::ReadLacRequest { ledger_id: 1 });
    cases.push((missing, Body::Missing));
    cases.push((request(Operation::RangeAddEntry, 9), Body::Unsupported));
    cases.push((request(Operation::BatchReadEntry, 10), Body::Unsupported));
    let mut unknown = request(Operation::ReadEntry, 11);
    unknown.header.operation = 99;
    cases.push((unknown, Body::Unsupported));
    for (message, expected) in cases {
        let bytes = encoded(&message);
        let decoded = decode_request(&bytes).unwrap();
        assert_eq!(decoded.body, expected, "{message:?}");
        assert_eq!(decoded.header.txn_id, message.header.txn_id);
    }
}

#[test]
fn request_context_and_unknown_fields_are_skipped() {
    let mut message = add_request(b"0123456789abcdef");
    message.request_context.push(proto::ContextPair {
        key: "k".into(),
        value: "v".into(),
    });
    let mut bytes = encoded(&message);
    unknown_fields(&mut bytes);
    let plain = encoded(&add_request(b"0123456789abcdef"));
    let expected = decode_request(&plain).unwrap();
    assert_eq!(decode_request(&bytes).unwrap(), expected);
    // Unknown fields inside the header and the sub-request too.
    let mut inner = encoded(message.add_request.as_ref().unwrap());
    unknown_fields(&mut inner);
    let mut header = encoded(&message.header);
    unknown_fields(&mut header);
    let mut bytes = Vec::new();
    encode_key(1, WireType::LengthDelimited, &mut bytes);
    encode_varint(to_u64(header.len()), &mut bytes);
    bytes.extend_from_slice(&header);
    encode_key(101, WireType::LengthDelimited, &mut bytes);
    encode_varint(to_u64(inner.len()), &mut bytes);
    bytes.extend_from_slice(&inner);
    assert_eq!(decode_request(&bytes).unwrap(), expected);
    // And prost agrees the bytes are the same request.
    assert_eq!(
        proto::Request::decode(&bytes[..]).unwrap().add_request,
        message.add_request
    );
}

#[test]
fn repeated_sub_requests_merge_like_prost() {
    let first = proto::AddRequest {
        ledger_id: 1,
        entry_id: 2,
        master_key: KEY.to_vec(),
        body: b"first-body-of-16".to_vec(),
        ..Default::default()
    };
    let mut bytes = encoded(&request(Operation::AddEntry, 1));
    let sub = |bytes: &mut Vec<u8>, inner: Vec<u8>| {
        encode_key(101, WireType::LengthDelimited, bytes);
        encode_varint(to_u64(inner.len()), bytes);
        bytes.extend_from_slice(&inner);
    };
    sub(&mut bytes, encoded(&first));
    // A second occurrence with only entryId and body: merged, last scalar wins.
    let mut second = Vec::new();
    encode_key(2, WireType::Varint, &mut second);
    encode_varint(77, &mut second);
    encode_key(4, WireType::LengthDelimited, &mut second);
    encode_varint(16, &mut second);
    second.extend_from_slice(b"second-body-of16");
    sub(&mut bytes, second);
    let oracle = proto::Request::decode(&bytes[..])
        .unwrap()
        .add_request
        .unwrap();
    let Body::Add(add) = decode_request(&bytes).unwrap().body else {
        panic!()
    };
    assert_eq!(
        (add.ledger_id, add.entry_id),
        (oracle.ledger_id, oracle.entry_id)
    );
    assert_eq!(add.body, &oracle.body[..]);
    assert_eq!(add.master_key, &oracle.master_key[..]);
}

#[test]
fn missing_required_fields_are_errors() {
    // No header at all.
    let mut bytes = Vec::new();
    encode_key(101, WireType::LengthDelimited, &mut bytes);
    encode_varint(0, &mut bytes);
    assert!(decode_request(&bytes).is_err());
    assert!(decode_request(&[]).is_err());
    // A header without txnId.
    let mut header = Vec::new();
    encode_key(1, WireType::Varint, &mut header);
    encode_varint(3, &mut header);
    encode_key(2, WireType::Varint, &mut header);
    encode_varint(2, &mut header);
    let mut bytes = Vec::new();
    encode_key(1, WireType::LengthDelimited, &mut bytes);
    encode_varint(to_u64(header.len()), &mut bytes);
    bytes.extend_from_slice(&header);
    assert!(decode_request(&bytes).is_err());
    // An addRequest without its body.
    let mut bytes = encoded(&request(Operation::AddEntry, 1));
    let mut inner = Vec::new();
    encode_key(1, WireType::Varint, &mut inner);
    encode_varint(1, &mut inner);
    encode_key(2, WireType::Varint, &mut inner);
    encode_varint(1, &mut inner);
    encode_key(3, WireType::LengthDelimited, &mut inner);
    encode_varint(20, &mut inner);
    inner.extend_from_slice(&KEY);
    encode_key(101, WireType::LengthDelimited, &mut bytes);
    encode_varint(to_u64(inner.len()), &mut bytes);
    bytes.extend_from_slice(&inner);
    assert!(decode_request(&bytes).is_err());
}

#[test]
fn malformed_wire_format_is_an_error() {
    let good = encoded(&add_request(b"0123456789abcdef"));
    // Every strict prefix either fails or (cut at a field boundary) decodes; never panics.
    for end in 0..good.len() {
        let _ = decode_request(&good[..end]);
    }
    // Cut inside the add sub-request: its length runs past the end.
    assert!(decode_request(&good[..good.len() - 1]).is_err());
    let cases: &[&[u8]] = &[
        // Field number 0.
        &[0x00, 0x00],
        // A group (wire type 3) and an invalid wire type 7.
        &[0x0B],
        &[0x0F],
        // An 11-byte varint, and a 10-byte one with bits past 64.
        &[
            0x08, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01,
        ],
        &[
            0x08, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02,
        ],
        // The header as a varint (wrong wire type for a known field).
        &[0x08, 0x01],
        // A length beyond the message.
        &[0x0A, 0x05, 0x08],
        // A huge length.
        &[0x0A, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F],
    ];
    for case in cases {
        assert!(decode_request(case).is_err(), "{case:02x?}");
    }
    // A known scalar with the wrong wire type inside the sub-request.
    let mut bytes = encoded(&request(Operation::ReadLac, 1));
    bytes.extend_from_slice(&[0xC2, 0x06, 0x02, 0x0A, 0x00]);
    assert!(decode_request(&bytes).is_err());
}

#[test]
fn any_request_tells_v2_from_v3() {
    let v3 = encoded(&add_request(b"0123456789abcdef"));
    let mut buf = Vec::new();
    buf.extend_from_slice(&u32::try_from(v3.len()).unwrap().to_be_bytes());
    buf.extend_from_slice(&v3);
    crate::client::encode_read_request(&mut buf, 0, 1, 2, None);
    let max = FRAME_SIZE_MAX_DEFAULT;
    let Ok(DecodedAny::Frame {
        request: AnyRequest::V3(first),
        frame_size,
    }) = decode_any_request(&buf, max)
    else {
        panic!()
    };
    assert_eq!(frame_size, 4 + v3.len());
    assert!(matches!(first.body, Body::Add(_)));
    let second = decode_any_request(&buf[frame_size..], max).unwrap();
    assert!(matches!(
        second,
        DecodedAny::Frame {
            request: AnyRequest::V2(_),
            ..
        }
    ));
    // A v3 frame waits for all its bytes; an oversized prefix fails at once.
    assert_eq!(
        decode_any_request(&buf[..frame_size - 1], max),
        Ok(DecodedAny::NeedMore)
    );
    let huge = [0xFF, 0xFF, 0xFF, 0xFF, 0x0A];
    assert!(matches!(
        decode_any_request(&huge, max),
        Err(DecodeError::FrameTooLarge { .. })
    ));
}

/// Splits `u32 length | message` and checks the length.
fn frame_message(frame: &[u8]) -> &[u8] {
    let (prefix, message) = frame.split_first_chunk::<4>().unwrap();
    assert_eq!(u32::from_be_bytes(*prefix) as usize, message.len());
    message
}

/// Checks that every field number in `required` is present in `message` (prost does not).
fn required_present(message: &[u8], required: &[u32]) {
    let mut seen = Vec::new();
    fields(message, |number, _| {
        seen.push(number);
        Ok(())
    })
    .unwrap();
    for number in required {
        assert!(seen.contains(number), "required field {number} missing");
    }
}

/// The bytes of sub-message field `number` of `message`.
fn sub_message(message: &[u8], number: u32) -> Option<&[u8]> {
    let mut found = None;
    fields(message, |field, value| {
        if field == number {
            found = Some(value.bytes()?);
        }
        Ok(())
    })
    .unwrap();
    found
}

/// Decodes a response frame with prost, strictly: top-level and header required fields, and
/// the required fields of whichever sub-response is present.
fn decode_strict(frame: &[u8]) -> proto::Response {
    let message = frame_message(frame);
    required_present(message, &[1, 2]);
    required_present(sub_message(message, 1).unwrap(), &[1, 2, 3]);
    let sub_required: &[(u32, &[u32])] = &[
        (100, &[1, 2, 3]),
        (101, &[1, 2, 3]),
        (102, &[1, 2]),
        (103, &[1, 2]),
        (104, &[1, 2]),
        (105, &[1]),
        (107, &[1, 2]),
        (108, &[1, 2]),
    ];
    for (number, required) in sub_required {
        if let Some(sub) = sub_message(message, *number) {
            required_present(sub, required);
        }
    }
    proto::Response::decode(message).unwrap()
}

fn request_header() -> Header {
    Header {
        version: PROTOCOL_VERSION_THREE,
        operation: Operation::ReadEntry as i32,
        txn_id: 0,
        priority: 0,
    }
}

#[test]
fn read_response_decodes_with_prost() {
    let body = b"entry body bytes";
    let mut out = vec![0xEE]; // Appends: earlier output stays.
    let reply = ReadReply {
        status: Status::Eok as i32,
        ledger_id: 3,
        entry_id: -1,
        body: Some(body),
        max_lac: Some(7),
        lac_update_timestamp: None,
    };
    encode_read_response(&mut out, &request_header(), &reply);
    assert_eq!(out[0], 0xEE);
    let response = decode_strict(&out[1..]);
    assert_eq!(response.header.version, PROTOCOL_VERSION_THREE);
    assert_eq!(response.header.operation, Operation::ReadEntry as i32);
    assert_eq!(response.header.txn_id, 0, "txnId 0 is still on the wire");
    assert_eq!(response.status, Status::Eok as i32);
    let read = response.read_response.unwrap();
    assert_eq!((read.status, read.ledger_id, read.entry_id), (0, 3, -1));
    assert_eq!(read.body.as_deref(), Some(&body[..]));
    assert_eq!(read.max_lac, Some(7));
    // Without a body.
    let mut out = Vec::new();
    let reply = ReadReply {
        status: Status::Enoentry as i32,
        body: None,
        max_lac: None,
        ..reply
    };
    encode_read_response(&mut out, &request_header(), &reply);
    let read = decode_strict(&out).read_response.unwrap();
    assert_eq!(read.status, Status::Enoentry as i32);
    assert_eq!(read.body, None);
}

#[test]
fn add_and_status_responses_decode_with_prost() {
    let mut header = request_header();
    header.operation = Operation::AddEntry as i32;
    header.txn_id = 12;
    let mut out = Vec::new();
    encode_add_response(&mut out, &header, Status::Efenced as i32, 1, 2);
    let response = decode_strict(&out);
    assert_eq!(response.status, Status::Efenced as i32);
    assert_eq!(response.header.txn_id, 12);
    let add = response.add_response.unwrap();
    assert_eq!((add.status, add.ledger_id, add.entry_id), (504, 1, 2));
    // Every operation's status-only response is strict-valid.
    let bytes_of_all: Vec<Vec<u8>> = vec![
        encoded(&read_request()),
        encoded(&add_request(b"0123456789abcdef")),
        encoded(&request(Operation::AddEntry, 1)),
        encoded(&request(Operation::RangeReadEntry, 1)),
    ];
    for bytes in &bytes_of_all {
        let request = decode_request(bytes).unwrap();
        let mut out = Vec::new();
        encode_status_response(&mut out, &request, Status::Ebadreq as i32);
        let response = decode_strict(&out);
        assert_eq!(response.status, Status::Ebadreq as i32);
        let has_sub = response.read_response.is_some() || response.add_response.is_some();
        let served = !matches!(request.body, Body::Missing | Body::Unsupported);
        assert_eq!(has_sub, served);
    }
}

#[test]
fn status_codes_map_from_v2() {
    let pairs = [
        (0, 0),
        (1, 402),
        (2, 403),
        (100, 404),
        (101, 501),
        (102, 502),
    ];
    let more = [(103, 503), (104, 504), (105, 505), (106, 506), (-5, 501)];
    for (v2, v3) in pairs.into_iter().chain(more) {
        assert_eq!(status_from_v2(v2), v3, "v2 code {v2}");
    }
}

#[test]
fn availability_of_entries_layout() {
    let empty = availability_of_entries(std::iter::empty());
    assert_eq!(empty, vec![0; 64]);
    let bytes = availability_of_entries([0, 1, 2, 5, 7, 8].into_iter());
    assert_eq!(bytes.len(), 64 + 3 * 24);
    assert_eq!(&bytes[0..4], &0i32.to_be_bytes());
    assert_eq!(&bytes[4..8], &3i32.to_be_bytes());
    assert!(bytes[8..64].iter().all(|&byte| byte == 0));
    let group = |index: usize| {
        let group = &bytes[64 + 24 * index..64 + 24 * (index + 1)];
        (
            i64::from_be_bytes(group[0..8].try_into().unwrap()),
            i64::from_be_bytes(group[8..16].try_into().unwrap()),
            i32::from_be_bytes(group[16..20].try_into().unwrap()),
            i32::from_be_bytes(group[20..24].try_into().unwrap()),
        )
    };
    assert_eq!(group(0), (0, 0, 3, 0));
    assert_eq!(group(1), (5, 5, 1, 0));
    assert_eq!(group(2), (7, 7, 2, 0));
}

#[test]
fn the_bench_add_encoder_matches_prost() {
    let key = [7u8; MASTER_KEY_SIZE];
    for (ledger_id, entry_id, write_flags, recovery) in [
        (5, 0, 0, false),
        (-1, -1, WRITE_FLAG_DEFERRED_SYNC, true),
        (i64::MAX, 1 << 40, 0, true),
    ] {
        let body = vec![0xA5u8; 300];
        let fields = AddRequestFields {
            ledger_id,
            entry_id,
            master_key: &key,
            body: &body,
            write_flags,
            recovery,
        };
        let mut frame = Vec::new();
        encode_add_request(&mut frame, 99, &fields);
        let length = u32::from_be_bytes(frame[..4].try_into().unwrap()) as usize;
        assert_eq!(length, frame.len() - 4);
        let decoded = proto::Request::decode(&frame[4..]).expect("prost reads it");
        assert_eq!(decoded.header, header(Operation::AddEntry, 99));
        let add = decoded.add_request.expect("an add");
        assert_eq!((add.ledger_id, add.entry_id), (ledger_id, entry_id));
        assert_eq!(
            (add.master_key.as_slice(), add.body.as_slice()),
            (&key[..], &body[..])
        );
        assert_eq!(add.write_flags, (write_flags != 0).then_some(write_flags));
        assert_eq!(add.flag, recovery.then_some(ADD_FLAG_RECOVERY_ADD));
        // And the server's own reader agrees.
        assert!(decode_request(&frame[4..]).is_ok());
    }
}

#[test]
fn add_responses_decode_to_v2_codes() {
    let mut out = Vec::new();
    let mut response = proto::Response {
        header: header(Operation::AddEntry, 3),
        status: Status::Eok as i32,
        add_response: Some(proto::AddResponse {
            status: Status::Efenced as i32,
            ledger_id: 4,
            entry_id: 5,
        }),
        ..proto::Response::default()
    };
    encode_response(&mut out, &response);
    assert_eq!(decode_add_response(&out[4..]), Some((104, 4, 5)));
    response.status = Status::Ereadonly as i32;
    out.clear();
    encode_response(&mut out, &response);
    assert_eq!(decode_add_response(&out[4..]), Some((105, 4, 5)));
    assert_eq!(v2_from_status(Status::Eunknownledgerstate as i32), 101);
}
