//! The v3 hot path allocates nothing per entry: decoding an ADD or READ frame and encoding
//! its response into a connection's (preallocated) output (a counting global allocator; it
//! counts per thread, so the other tests of this binary do not disturb it).

use engine::counting_allocator::{allocations, CountingAllocator};
use prost::Message;
use wire::v3::{self, proto, Body, Operation, ReadReply, Status};
use wire::{decode_any_request, AnyRequest, DecodedAny, FRAME_SIZE_MAX_DEFAULT};

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

fn frame(request: &proto::Request) -> Vec<u8> {
    let message = request.encode_to_vec();
    let mut frame = u32::try_from(message.len()).unwrap().to_be_bytes().to_vec();
    frame.extend_from_slice(&message);
    frame
}

fn header(operation: Operation) -> proto::BkPacketHeader {
    proto::BkPacketHeader {
        version: v3::PROTOCOL_VERSION_THREE,
        operation: operation as i32,
        txn_id: 1,
        priority: None,
    }
}

#[test]
fn v3_add_and_read_decode_and_respond_without_allocating() {
    let body = crate::support::body(9, 3);
    let add = frame(&proto::Request {
        header: header(Operation::AddEntry),
        add_request: Some(proto::AddRequest {
            ledger_id: 9,
            entry_id: 3,
            master_key: vec![1; 20],
            body: body.clone(),
            ..Default::default()
        }),
        ..Default::default()
    });
    let read = frame(&proto::Request {
        header: header(Operation::ReadEntry),
        read_request: Some(proto::ReadRequest {
            ledger_id: 9,
            entry_id: -1,
            ..Default::default()
        }),
        ..Default::default()
    });
    let mut out = Vec::with_capacity(1 << 20);
    let before = allocations();
    for _ in 0..1000 {
        out.clear();
        let Ok(DecodedAny::Frame {
            request: AnyRequest::V3(request),
            ..
        }) = decode_any_request(&add, FRAME_SIZE_MAX_DEFAULT)
        else {
            panic!("add frame")
        };
        let Body::Add(add) = request.body else {
            panic!("add body")
        };
        let ok = Status::Eok as i32;
        v3::encode_add_response(&mut out, &request.header, ok, add.ledger_id, add.entry_id);
        let Ok(DecodedAny::Frame {
            request: AnyRequest::V3(request),
            ..
        }) = decode_any_request(&read, FRAME_SIZE_MAX_DEFAULT)
        else {
            panic!("read frame")
        };
        let reply = ReadReply {
            status: ok,
            ledger_id: 9,
            entry_id: -1,
            body: Some(&body),
            max_lac: Some(2),
            lac_update_timestamp: None,
        };
        v3::encode_read_response(&mut out, &request.header, &reply);
    }
    let counted = allocations() - before;
    assert_eq!(counted, 0, "{counted} allocations on the v3 hot path");
    assert!(!out.is_empty());
    // The counter is live: prost's own decoder copies the body and key into Vecs.
    let before = allocations();
    let decoded = proto::Request::decode(&add[4..]).unwrap();
    assert!(allocations() > before);
    assert_eq!(decoded.add_request.unwrap().body, body);
}
