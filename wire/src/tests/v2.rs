//! Tests of the v2 codec, both sides, and of the entry body: golden frames from the doc tables,
//! round trips, errors and garbage.

use crate::client::{
    decode_response, encode_add_request, encode_auth_request, encode_batch_read_request,
    encode_read_request, BatchEntries, DecodedResponse, Response,
};
use crate::error::malformed;
use crate::*;

const MAX: u32 = FRAME_SIZE_MAX_DEFAULT;

/// Parses whitespace-separated hex bytes, so that golden frames read like the doc tables.
fn hex(text: &str) -> Vec<u8> {
    text.split_whitespace()
        .map(|pair| u8::from_str_radix(pair, 16).unwrap())
        .collect()
}

fn concat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

const KEY_EMPTY_HEX: &str = "85 0b f1 07 1c 5e 3d 8c 24 23 56 76 f8 81 6a e0 cb e2 f1 4f";
const KEY_BENCH_HEX: &str = "8a d0 51 76 3f 54 80 bb 25 81 a4 fc fd d8 29 23 cf 66 84 a8";
const ID_7: &str = "00 00 00 00 00 00 00 07";
const ID_3: &str = "00 00 00 00 00 00 00 03";
const ID_MINUS_1: &str = "ff ff ff ff ff ff ff ff";

/// Asserts `frame` decodes to `expected`, alone and followed by another frame, and that every
/// strict prefix of it asks for more.
fn check_request(frame: &[u8], expected: &Request<'_>) {
    let mut twice = frame.to_vec();
    twice.extend_from_slice(frame);
    for buf in [frame, &twice[..]] {
        match decode_request(buf, MAX) {
            Ok(Decoded::Frame {
                request,
                frame_size,
            }) => {
                assert_eq!(&request, expected);
                assert_eq!(frame_size, frame.len());
            }
            other => panic!("{other:?} for {frame:02x?}"),
        }
    }
    for prefix_size in 0..frame.len() {
        let decoded = decode_request(&frame[..prefix_size], MAX);
        assert_eq!(
            decoded,
            Ok(Decoded::NeedMore),
            "prefix of {prefix_size} bytes"
        );
    }
}

/// The response-side twin of [`check_request`].
fn check_response(frame: &[u8], expected: &Response<'_>) {
    let mut twice = frame.to_vec();
    twice.extend_from_slice(frame);
    for buf in [frame, &twice[..]] {
        match decode_response(buf, MAX) {
            Ok(DecodedResponse::Frame {
                response,
                frame_size,
            }) => {
                assert_eq!(&response, expected);
                assert_eq!(frame_size, frame.len());
            }
            other => panic!("{other:?} for {frame:02x?}"),
        }
    }
    for prefix_size in 0..frame.len() {
        let decoded = decode_response(&frame[..prefix_size], MAX);
        assert_eq!(
            decoded,
            Ok(DecodedResponse::NeedMore),
            "prefix of {prefix_size} bytes"
        );
    }
}

fn check_request_error(buf: &[u8], expected: DecodeError) {
    assert_eq!(
        decode_request(buf, MAX),
        Err(expected),
        "request {buf:02x?}"
    );
}

fn check_response_error(buf: &[u8], expected: DecodeError) {
    assert_eq!(
        decode_response(buf, MAX),
        Err(expected),
        "response {buf:02x?}"
    );
}

fn encoded(encode: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut out = Vec::new();
    encode(&mut out);
    out
}

fn header(version: u8, opcode: Opcode, flags: u16) -> PacketHeader {
    PacketHeader {
        version,
        opcode: opcode as u8,
        flags,
    }
}

/// Guards the hand-written error cases: a wrong length would test NeedMore instead.
fn assert_frame_complete(frame: &[u8]) {
    let length = u32::from_be_bytes(frame[..4].try_into().unwrap());
    assert_eq!(
        frame.len(),
        4 + usize::try_from(length).unwrap(),
        "{frame:02x?}"
    );
}

fn is_malformed(result: Result<Decoded<'_>, DecodeError>) -> bool {
    matches!(result, Err(DecodeError::Malformed { .. }))
}

fn is_malformed_response(result: Result<DecodedResponse<'_>, DecodeError>) -> bool {
    matches!(result, Err(DecodeError::Malformed { .. }))
}

#[test]
fn packet_header_table() {
    let cases = [
        (
            0x0201_0005,
            header(2, Opcode::Add, FLAG_DO_FENCING | FLAG_HIGH_PRIORITY),
        ),
        (0x0107_0000, header(1, Opcode::BatchRead, 0)),
        (0xff02_ffff, header(0xff, Opcode::Read, 0xffff)),
        // Version 0: the word is the opcode, and the middle bits are not looked at.
        (0x0000_0002, header(0, Opcode::Read, 0)),
        (0x0000_ff03, header(0, Opcode::Auth, 0)),
    ];
    for (word, expected) in cases {
        assert_eq!(PacketHeader::decode(word), expected, "{word:#010x}");
    }
    assert_eq!(header(2, Opcode::BatchRead, 1).encode(), 0x0207_0001);
    assert_eq!(header(0, Opcode::Read, 0).encode(), 0x0000_0002);
    // Version 0 has no room for flags.
    assert_eq!(header(0, Opcode::Read, 5).encode(), 0x0000_0002);
    for word in [0x0201_0005_u32, 0x0107_0000, 0xff02_ffff, 0x0000_0002] {
        assert_eq!(PacketHeader::decode(word).encode(), word);
    }
}

#[test]
fn golden_add_request() {
    // §2.5 with a DUMMY digest (D = 0) and payload "hi": length = 56 + 0 + 2.
    let frame = hex(&format!(
        "00 00 00 3a  02 01 00 00  {KEY_EMPTY_HEX}  {ID_7} {ID_3}  \
         00 00 00 00 00 00 00 02  00 00 00 00 00 00 00 0a  68 69"
    ));
    assert_eq!(frame.len(), 62);
    let body = &frame[28..];
    let expected = Request::Add {
        header: header(2, Opcode::Add, 0),
        master_key: &MASTER_KEY_EMPTY_PASSWORD,
        ledger_id: 7,
        entry_id: 3,
        body,
    };
    check_request(&frame, &expected);
    assert_eq!(entry_body_last_add_confirmed(body), Some(2));
    let out = encoded(|out| encode_add_request(out, 0, &MASTER_KEY_EMPTY_PASSWORD, body));
    assert_eq!(out, frame);
}

#[test]
fn golden_add_request_bench_bookie_body() {
    // BenchBookie sends the two ids and padding, no digest, and an all-zero key (§2.5, §4.3).
    let zero_key = "00 ".repeat(MASTER_KEY_SIZE);
    let frame = hex(&format!(
        "00 00 00 28  02 01 00 06  {zero_key} {ID_7} {ID_MINUS_1}"
    ));
    let expected = Request::Add {
        header: header(2, Opcode::Add, FLAG_RECOVERY_ADD | FLAG_HIGH_PRIORITY),
        master_key: &[0; MASTER_KEY_SIZE],
        ledger_id: 7,
        entry_id: -1,
        body: &frame[28..],
    };
    check_request(&frame, &expected);
    assert_eq!(entry_body_last_add_confirmed(&frame[28..]), None);
}

#[test]
fn golden_add_response() {
    let frame = hex(&format!(
        "00 00 00 18  02 01 00 00  00 00 00 00  {ID_7} {ID_3}"
    ));
    let expected = Response::Add {
        version: 2,
        code: code::EOK,
        ledger_id: 7,
        entry_id: 3,
    };
    check_response(&frame, &expected);
    assert_eq!(
        encoded(|out| encode_add_response(out, 2, code::EOK, 7, 3)),
        frame
    );

    let fenced = hex(&format!(
        "00 00 00 18  02 01 00 00  00 00 00 68  {ID_7} {ID_3}"
    ));
    assert_eq!(
        encoded(|out| encode_add_response(out, 2, code::EFENCED, 7, 3)),
        fenced
    );
}

#[test]
fn golden_read_request_without_key() {
    let frame = hex(&format!("00 00 00 14  02 02 00 00  {ID_7} {ID_MINUS_1}"));
    let expected = Request::Read {
        header: header(2, Opcode::Read, 0),
        ledger_id: 7,
        entry_id: -1,
        master_key: None,
    };
    check_request(&frame, &expected);
    assert_eq!(
        encoded(|out| encode_read_request(out, 0, 7, -1, None)),
        frame
    );
}

#[test]
fn golden_read_request_with_fencing_key() {
    // A recovery read: FLAG_DO_FENCING | FLAG_HIGH_PRIORITY, key of "benchPasswd".
    let frame = hex(&format!(
        "00 00 00 28  02 02 00 05  {ID_7} {ID_3}  {KEY_BENCH_HEX}"
    ));
    let expected = Request::Read {
        header: header(2, Opcode::Read, 0x0005),
        ledger_id: 7,
        entry_id: 3,
        master_key: Some(&MASTER_KEY_BENCH_PASSWORD),
    };
    check_request(&frame, &expected);
    let key = Some(&MASTER_KEY_BENCH_PASSWORD);
    assert_eq!(
        encoded(|out| encode_read_request(out, 0x0005, 7, 3, key)),
        frame
    );
}

#[test]
fn read_request_key_rule() {
    // Version 1 never carries a key, even when fencing.
    let version_1 = hex(&format!("00 00 00 14  01 02 00 01  {ID_7} {ID_3}"));
    // Java keeps the version in a signed byte: 0x80 is negative and reads no key.
    let version_negative = hex(&format!("00 00 00 14  80 02 00 01  {ID_7} {ID_3}"));
    // Without fencing, trailing bytes (even a whole key) are ignored.
    let trailing = hex(&format!(
        "00 00 00 28  02 02 00 04  {ID_7} {ID_3}  {KEY_BENCH_HEX}"
    ));
    for (frame, flags) in [(version_1, 1), (version_negative, 1), (trailing, 4)] {
        let version = frame[4];
        let expected = Request::Read {
            header: PacketHeader {
                version,
                opcode: 2,
                flags,
            },
            ledger_id: 7,
            entry_id: 3,
            master_key: None,
        };
        check_request(&frame, &expected);
    }
}

#[test]
fn golden_version_0_legacy_request_and_response() {
    let frame = hex(&format!("00 00 00 14  00 00 00 02  {ID_7} {ID_3}"));
    let expected = Request::Read {
        header: header(0, Opcode::Read, 0),
        ledger_id: 7,
        entry_id: 3,
        master_key: None,
    };
    check_request(&frame, &expected);
    let response = hex(&format!(
        "00 00 00 18  00 00 00 02  00 00 00 02  {ID_7} {ID_3}"
    ));
    let out = encoded(|out| encode_read_response(out, 0, code::ENOENTRY, 7, 3, &[]));
    assert_eq!(out, response);
    let expected = Response::Read {
        version: 0,
        code: 2,
        ledger_id: 7,
        entry_id: 3,
        body: &[],
    };
    check_response(&response, &expected);
}

#[test]
fn golden_read_response() {
    let frame = hex(&format!(
        "00 00 00 1c  02 02 00 00  00 00 00 00  {ID_7} {ID_3}  62 6f 64 79"
    ));
    let expected = Response::Read {
        version: 2,
        code: code::EOK,
        ledger_id: 7,
        entry_id: 3,
        body: b"body",
    };
    check_response(&frame, &expected);
    assert_eq!(
        encoded(|out| encode_read_response(out, 2, code::EOK, 7, 3, b"body")),
        frame
    );

    // An error carries no body, and the entry id stays the request's -1 (§2.6).
    let error = hex(&format!(
        "00 00 00 18  02 02 00 00  00 00 00 02  {ID_7} {ID_MINUS_1}"
    ));
    let expected = Response::Read {
        version: 2,
        code: code::ENOENTRY,
        ledger_id: 7,
        entry_id: -1,
        body: &[],
    };
    check_response(&error, &expected);
    assert_eq!(
        encoded(|out| encode_read_response(out, 2, code::ENOENTRY, 7, -1, &[])),
        error
    );
}

#[test]
fn golden_batch_read_request() {
    // requestId 42, maxCount 10, maxSize 5 MiB.
    let fields =
        format!("{ID_7} {ID_3}  00 00 00 00 00 00 00 2a  00 00 00 0a  00 00 00 00 00 50 00 00");
    let frame = hex(&format!("00 00 00 28  02 07 00 00  {fields}"));
    let expected = Request::BatchRead {
        header: header(2, Opcode::BatchRead, 0),
        ledger_id: 7,
        start_entry_id: 3,
        request_id: 42,
        max_count: 10,
        max_size: 5 << 20,
        master_key: None,
    };
    check_request(&frame, &expected);
    let out = encoded(|out| encode_batch_read_request(out, 0, 7, 3, 42, 10, 5 << 20, None));
    assert_eq!(out, frame);

    let fenced = hex(&format!(
        "00 00 00 3c  02 07 00 05  {fields}  {KEY_EMPTY_HEX}"
    ));
    let expected = Request::BatchRead {
        header: header(2, Opcode::BatchRead, 5),
        ledger_id: 7,
        start_entry_id: 3,
        request_id: 42,
        max_count: 10,
        max_size: 5 << 20,
        master_key: Some(&MASTER_KEY_EMPTY_PASSWORD),
    };
    check_request(&fenced, &expected);
    let key = Some(&MASTER_KEY_EMPTY_PASSWORD);
    let out = encoded(|out| encode_batch_read_request(out, 5, 7, 3, 42, 10, 5 << 20, key));
    assert_eq!(out, fenced);
}

#[test]
fn golden_batch_read_response() {
    // Entries "ab" and "xyz": length = 32 + (4 + 2) + (4 + 3).
    let frame = hex(&format!(
        "00 00 00 2d  02 07 00 00  00 00 00 00  {ID_7} {ID_3}  00 00 00 00 00 00 00 2a  \
         00 00 00 02 61 62  00 00 00 03 78 79 7a"
    ));
    let expected = Response::BatchRead {
        version: 2,
        code: code::EOK,
        ledger_id: 7,
        start_entry_id: 3,
        request_id: 42,
        entries: BatchEntries { rest: &frame[36..] },
    };
    check_response(&frame, &expected);
    let Response::BatchRead { entries, .. } = expected else {
        unreachable!()
    };
    let items: Vec<_> = entries.collect();
    assert_eq!(items, [Ok(&b"ab"[..]), Ok(&b"xyz"[..])]);

    let mut out = Vec::new();
    let frame_start = encode_batch_read_response_begin(&mut out, 2, code::EOK, 7, 3, 42);
    assert_eq!(out.len() - frame_start, BATCH_READ_RESPONSE_FIXED_SIZE);
    encode_batch_read_response_push(&mut out, b"ab");
    assert_eq!(
        out.len(),
        BATCH_READ_RESPONSE_FIXED_SIZE + BATCH_READ_RESPONSE_ITEM_PREFIX_SIZE + 2
    );
    encode_batch_read_response_push(&mut out, b"xyz");
    encode_batch_read_response_finish(&mut out, frame_start);
    assert_eq!(out, frame);
}

#[test]
fn golden_batch_read_error_response() {
    let frame = hex(&format!(
        "00 00 00 20  02 07 00 00  00 00 00 01  {ID_7} {ID_3}  00 00 00 00 00 00 00 2a"
    ));
    assert_eq!(frame.len(), BATCH_READ_RESPONSE_FIXED_SIZE);
    let expected = Response::BatchRead {
        version: 2,
        code: code::ENOLEDGER,
        ledger_id: 7,
        start_entry_id: 3,
        request_id: 42,
        entries: BatchEntries { rest: &[] },
    };
    check_response(&frame, &expected);
    // The frame starts after unrelated bytes, as it does in a connection's send buffer.
    let mut out = vec![0xee; 5];
    let frame_start = encode_batch_read_response_begin(&mut out, 2, code::ENOLEDGER, 7, 3, 42);
    encode_batch_read_response_finish(&mut out, frame_start);
    assert_eq!(frame_start, 5);
    assert_eq!(out[5..], frame);
}

#[test]
fn golden_auth_response() {
    let frame = concat(&[
        &hex("00 00 00 1a  02 03 00 00  0a 12"),
        b"AuthDisabledPlugin",
        &hex("12 00"),
    ]);
    assert_eq!(encoded(|out| encode_auth_response(out, 2)), frame);
    check_response(
        &frame,
        &Response::Auth {
            version: 2,
            auth_message: &frame[8..],
        },
    );
    // A client asking for the disabled plugin sends the same bytes.
    let request = encoded(|out| encode_auth_request(out, "AuthDisabledPlugin", &[]));
    assert_eq!(request, frame);
    let expected = Request::Auth {
        header: header(2, Opcode::Auth, 0),
        auth_message: &frame[8..],
    };
    check_request(&frame, &expected);
}

#[test]
fn golden_auth_request() {
    let frame = hex("00 00 00 0c  02 03 00 00  0a 01 70  12 03 01 02 03");
    assert_eq!(
        encoded(|out| encode_auth_request(out, "p", &[1, 2, 3])),
        frame
    );
    let expected = Request::Auth {
        header: header(2, Opcode::Auth, 0),
        auth_message: &frame[8..],
    };
    check_request(&frame, &expected);
    // 200 needs a two-byte varint: c8 01.
    let long = encoded(|out| encode_auth_request(out, "p", &[7; 200]));
    assert_eq!(long[8..13], hex("0a 01 70 12 c8"));
    assert_eq!(long[13], 0x01);
    assert_eq!(long.len(), 8 + 3 + 3 + 200);
}

#[test]
fn round_trip_requests() {
    let body = encoded(|out| encode_entry_body_crc32c(out, 11, 12, 10, 300, b"payload"));
    for flags in [0, FLAG_RECOVERY_ADD, FLAG_RECOVERY_ADD | FLAG_HIGH_PRIORITY] {
        let frame =
            encoded(|out| encode_add_request(out, flags, &MASTER_KEY_BENCH_PASSWORD, &body));
        let expected = Request::Add {
            header: header(2, Opcode::Add, flags),
            master_key: &MASTER_KEY_BENCH_PASSWORD,
            ledger_id: 11,
            entry_id: 12,
            body: &body,
        };
        check_request(&frame, &expected);
        assert_eq!(expected.header(), header(2, Opcode::Add, flags));
    }
    for (flags, key) in [
        (0, None),
        (FLAG_DO_FENCING, Some(&MASTER_KEY_EMPTY_PASSWORD)),
    ] {
        for (ledger_id, entry_id) in [(0, 0), (i64::MAX, -1), (i64::MIN, i64::MAX)] {
            let frame = encoded(|out| encode_read_request(out, flags, ledger_id, entry_id, key));
            let read_header = header(2, Opcode::Read, flags);
            let expected = Request::Read {
                header: read_header,
                ledger_id,
                entry_id,
                master_key: key,
            };
            check_request(&frame, &expected);
            assert_eq!(expected.header(), read_header);
        }
        for (max_count, max_size) in [(0, 0), (-1, i64::MAX), (i32::MAX, -1)] {
            let frame = encoded(|out| {
                encode_batch_read_request(out, flags, -5, 9, i64::MIN, max_count, max_size, key);
            });
            let expected = Request::BatchRead {
                header: header(2, Opcode::BatchRead, flags),
                ledger_id: -5,
                start_entry_id: 9,
                request_id: i64::MIN,
                max_count,
                max_size,
                master_key: key,
            };
            check_request(&frame, &expected);
        }
    }
    let frame = encoded(|out| encode_auth_request(out, "plugin", b"token"));
    let expected = Request::Auth {
        header: header(2, Opcode::Auth, 0),
        auth_message: &frame[8..],
    };
    check_request(&frame, &expected);
}

#[test]
fn round_trip_responses() {
    let body = encoded(|out| encode_entry_body_crc32c(out, 11, 12, 10, 300, b"payload"));
    for version in [0, 1, 2, 3] {
        for code in [code::EOK, code::EFENCED, code::ETOOMANYREQUESTS] {
            let frame = encoded(|out| encode_add_response(out, version, code, 11, -1));
            let expected = Response::Add {
                version,
                code,
                ledger_id: 11,
                entry_id: -1,
            };
            check_response(&frame, &expected);
        }
        let frame = encoded(|out| encode_read_response(out, version, code::EOK, 11, 12, &body));
        let expected = Response::Read {
            version,
            code: 0,
            ledger_id: 11,
            entry_id: 12,
            body: &body,
        };
        check_response(&frame, &expected);
        let frame = encoded(|out| encode_auth_response(out, version));
        check_response(
            &frame,
            &Response::Auth {
                version,
                auth_message: &frame[8..],
            },
        );
    }
    let bodies: [&[u8]; 3] = [&body, &[], b"x"];
    for version in [0, 2] {
        let mut frame = Vec::new();
        let frame_start = encode_batch_read_response_begin(&mut frame, version, 0, 1, 2, 3);
        for item in bodies {
            encode_batch_read_response_push(&mut frame, item);
        }
        encode_batch_read_response_finish(&mut frame, frame_start);
        let entries = BatchEntries {
            rest: &frame[BATCH_READ_RESPONSE_FIXED_SIZE..],
        };
        let expected = Response::BatchRead {
            version,
            code: 0,
            ledger_id: 1,
            start_entry_id: 2,
            request_id: 3,
            entries,
        };
        check_response(&frame, &expected);
        let items: Vec<_> = entries.map(Result::unwrap).collect();
        assert_eq!(items, bodies);
        let size: usize = bodies
            .iter()
            .map(|item| BATCH_READ_RESPONSE_ITEM_PREFIX_SIZE + item.len())
            .sum();
        assert_eq!(frame.len(), BATCH_READ_RESPONSE_FIXED_SIZE + size);
    }
}

#[test]
fn frame_too_large_without_reading_more() {
    // A 2^31 length prefix alone is enough to refuse the frame.
    let expected = DecodeError::FrameTooLarge {
        frame_size: 0x8000_0004,
        frame_size_max: MAX,
    };
    check_request_error(&hex("80 00 00 00"), expected);
    check_response_error(&hex("80 00 00 00"), expected);
    // The limit counts the prefix too, as Netty does: length + 4 == max is the largest frame.
    let largest = (MAX - 4).to_be_bytes();
    assert_eq!(decode_request(&largest, MAX), Ok(Decoded::NeedMore));
    let over = (MAX - 3).to_be_bytes();
    let expected = DecodeError::FrameTooLarge {
        frame_size: MAX + 1,
        frame_size_max: MAX,
    };
    check_request_error(&over, expected);
    // frame_size saturates rather than wrapping.
    let expected = DecodeError::FrameTooLarge {
        frame_size: u32::MAX,
        frame_size_max: u32::MAX,
    };
    assert_eq!(
        decode_request(&u32::MAX.to_be_bytes(), u32::MAX),
        Err(expected)
    );
    assert_eq!(
        decode_response(&u32::MAX.to_be_bytes(), u32::MAX),
        Err(expected)
    );
    // A tiny limit refuses a normal frame; the error names both sizes.
    let frame = encoded(|out| encode_read_request(out, 0, 1, 2, None));
    let expected = DecodeError::FrameTooLarge {
        frame_size: 24,
        frame_size_max: 23,
    };
    assert_eq!(decode_request(&frame, 23), Err(expected));
    assert!(matches!(
        decode_request(&frame, 24),
        Ok(Decoded::Frame { frame_size: 24, .. })
    ));
}

#[test]
fn protocol_v3_detected_on_first_payload_byte() {
    check_request_error(&hex("00 00 00 30  0a"), DecodeError::ProtocolV3);
    check_response_error(&hex("00 00 00 30  0a 02"), DecodeError::ProtocolV3);
}

#[test]
fn opcode_unsupported() {
    for opcode in [0_u8, 4, 5, 6, 8, 0x7f, 0xff] {
        let expected = DecodeError::OpcodeUnsupported { opcode };
        // Refused on the header alone, before the rest of the frame arrives.
        let early = [0, 0, 0, 0x40, 2, opcode, 0, 0];
        check_request_error(&early, expected);
        check_response_error(&early, expected);
        let mut legacy = hex(&format!("00 00 00 14  00 00 00 00  {ID_7} {ID_3}"));
        legacy[7] = opcode;
        check_request_error(&legacy, expected);
        check_response_error(&legacy, expected);
    }
    assert_eq!(Opcode::try_from(6), Ok(Opcode::GetBookieInfo));
    assert_eq!(
        Opcode::try_from(9),
        Err(DecodeError::OpcodeUnsupported { opcode: 9 })
    );
}

#[test]
fn malformed_requests() {
    // Frames shorter than a packet header are refused from the prefix alone.
    for length in 0..4_u32 {
        assert!(
            is_malformed(decode_request(&length.to_be_bytes(), MAX)),
            "length {length}"
        );
        assert!(is_malformed_response(decode_response(
            &length.to_be_bytes(),
            MAX
        )));
    }
    let key = MASTER_KEY_EMPTY_PASSWORD;
    let cases: Vec<Vec<u8>> = vec![
        // ADD with a 15-byte body, and with no room for the key.
        encoded(|out| encode_add_request(out, 0, &key, &[0; ENTRY_BODY_SIZE_MIN - 1])),
        hex("00 00 00 0c  02 01 00 00  00 00 00 00 00 00 00 00"),
        // READ of 19 bytes.
        hex(&format!(
            "00 00 00 13  02 02 00 00  {ID_7}  00 00 00 00 00 00 00"
        )),
        // Fencing READ without its key, and with a key one byte short.
        encoded(|out| encode_read_request(out, FLAG_DO_FENCING, 7, 3, None)),
        hex(&format!(
            "00 00 00 27  02 02 00 01  {ID_7} {ID_3}  {}",
            "00 ".repeat(19)
        )),
        // BATCH_READ of 39 bytes, and fencing without its key.
        hex(&format!(
            "00 00 00 27  02 07 00 00  {ID_7} {ID_3} {ID_7}  00 00 00 00  {}",
            "00 ".repeat(7)
        )),
        encoded(|out| encode_batch_read_request(out, FLAG_DO_FENCING, 7, 3, 1, 1, 1, None)),
    ];
    for frame in &cases {
        assert_frame_complete(frame);
        assert!(is_malformed(decode_request(frame, MAX)), "{frame:02x?}");
    }
}

#[test]
fn malformed_responses() {
    let cases = [
        // ADD responses of 23 and 25 bytes.
        hex(&format!(
            "00 00 00 17  02 01 00 00  00 00 00 00  {ID_7}  00 00 00 00 00 00 00"
        )),
        hex(&format!(
            "00 00 00 19  02 01 00 00  00 00 00 00  {ID_7} {ID_3}  00"
        )),
        // READ response of 23 bytes.
        hex(&format!(
            "00 00 00 17  02 02 00 00  00 00 00 00  {ID_7}  00 00 00 00 00 00 00"
        )),
        // BATCH_READ response of 31 bytes.
        hex(&format!(
            "00 00 00 1f  02 07 00 00  00 00 00 00  {ID_7} {ID_3}  00 00 00 00 00 00 00"
        )),
    ];
    for frame in &cases {
        assert_frame_complete(frame);
        assert!(
            is_malformed_response(decode_response(frame, MAX)),
            "{frame:02x?}"
        );
    }
}

#[test]
fn batch_entries_stop_after_a_bad_length() {
    let cases = [
        // "hello", then a length past the end.
        (hex("00 00 00 05 68 65 6c 6c 6f  00 00 00 64 78"), 1),
        // Two bytes cannot hold a length.
        (hex("00 00 00 00  00 00"), 1),
        (hex("ff ff ff ff"), 0),
    ];
    for (rest, good_count) in &cases {
        let mut entries = BatchEntries { rest };
        for _ in 0..*good_count {
            assert!(matches!(entries.next(), Some(Ok(_))));
        }
        assert!(matches!(
            entries.next(),
            Some(Err(DecodeError::Malformed { .. }))
        ));
        assert_eq!(entries.next(), None);
        assert_eq!(entries.next(), None);
    }
    assert_eq!(BatchEntries { rest: &[] }.next(), None);
}

/// CRC32C bit by bit, straight from the polynomial, to check the crate and our use of it.
fn crc32c_reference(bytes: &[u8]) -> u32 {
    let mut crc = !0_u32;
    for &byte in bytes {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 == 0 {
                crc >> 1
            } else {
                (crc >> 1) ^ 0x82F6_3B78
            };
        }
    }
    !crc
}

#[test]
fn crc32c_is_the_standard_castagnoli() {
    assert_eq!(crc32c::crc32c(b"123456789"), 0xE306_9283);
    assert_eq!(crc32c_reference(b"123456789"), 0xE306_9283);
}

#[test]
fn entry_body_crc32c() {
    let metadata = hex(&format!(
        "{ID_7} {ID_3}  00 00 00 00 00 00 00 02  00 00 00 00 00 00 01 00"
    ));
    let digest = crc32c_reference(&concat(&[&metadata, b"payload"])).to_be_bytes();
    let expected = concat(&[&metadata, &digest, b"payload"]);
    let body = encoded(|out| encode_entry_body_crc32c(out, 7, 3, 2, 256, b"payload"));
    assert_eq!(body, expected);
    assert_eq!(verify_entry_body_crc32c(&body), Ok(&b"payload"[..]));
    assert_eq!(entry_body_last_add_confirmed(&body), Some(2));
    // Any flipped bit, in the metadata, digest or payload, fails the check.
    for index in 0..body.len() {
        let mut corrupt = body.clone();
        corrupt[index] ^= 0x10;
        assert!(verify_entry_body_crc32c(&corrupt).is_err(), "byte {index}");
    }
    let empty = encoded(|out| encode_entry_body_crc32c(out, 7, 3, -1, 0, &[]));
    assert_eq!(empty.len(), ENTRY_METADATA_SIZE + DIGEST_CRC32C_SIZE);
    assert_eq!(verify_entry_body_crc32c(&empty), Ok(&[][..]));
    assert!(verify_entry_body_crc32c(&empty[..empty.len() - 1]).is_err());
    assert!(verify_entry_body_crc32c(&[]).is_err());
}

#[test]
fn entry_body_last_add_confirmed_needs_24_bytes() {
    let body: Vec<u8> = (0..24).collect();
    assert_eq!(entry_body_last_add_confirmed(&body[..23]), None);
    assert_eq!(
        entry_body_last_add_confirmed(&body),
        Some(0x1011_1213_1415_1617)
    );
    assert_eq!(entry_body_last_add_confirmed(&[]), None);
    // An explicit-LAC body holds its LAC right after the ledger id.
    assert_eq!(explicit_lac_body_last_add_confirmed(&body[..15]), None);
    assert_eq!(
        explicit_lac_body_last_add_confirmed(&body[..16]),
        Some(0x0809_0A0B_0C0D_0E0F)
    );
    assert_eq!(explicit_lac_body_last_add_confirmed(&[]), None);
}

/// SHA-1 (FIPS 180-4), test-only: the crate has no SHA-1 dependency, and the master key
/// constants must equal SHA1("ledger" ‖ password).
fn sha1(message: &[u8]) -> [u8; 20] {
    let mut state: [u32; 5] = [
        0x6745_2301,
        0xEFCD_AB89,
        0x98BA_DCFE,
        0x1032_5476,
        0xC3D2_E1F0,
    ];
    let mut padded = message.to_vec();
    padded.push(0x80);
    while padded.len() % 64 != 56 {
        padded.push(0);
    }
    padded.extend_from_slice(&(u64::try_from(message.len()).unwrap() * 8).to_be_bytes());
    for block in padded.chunks_exact(64) {
        let mut schedule = [0_u32; 80];
        for (word, bytes) in schedule.iter_mut().zip(block.chunks_exact(4)) {
            *word = u32::from_be_bytes(bytes.try_into().unwrap());
        }
        for index in 16..80 {
            schedule[index] = (schedule[index - 3]
                ^ schedule[index - 8]
                ^ schedule[index - 14]
                ^ schedule[index - 16])
                .rotate_left(1);
        }
        let [mut a, mut b, mut c, mut d, mut e] = state;
        for (index, word) in schedule.iter().enumerate() {
            let (f, k) = match index {
                0..=19 => ((b & c) | (!b & d), 0x5A82_7999),
                20..=39 => (b ^ c ^ d, 0x6ED9_EBA1),
                40..=59 => ((b & c) | (b & d) | (c & d), 0x8F1B_BCDC),
                _ => (b ^ c ^ d, 0xCA62_C1D6),
            };
            let temp = a
                .rotate_left(5)
                .wrapping_add(f)
                .wrapping_add(e)
                .wrapping_add(k);
            e = d;
            d = c;
            c = b.rotate_left(30);
            b = a;
            a = temp.wrapping_add(*word);
        }
        for (value, add) in state.iter_mut().zip([a, b, c, d, e]) {
            *value = value.wrapping_add(add);
        }
    }
    let mut digest = [0; 20];
    for (bytes, value) in digest.chunks_exact_mut(4).zip(state) {
        bytes.copy_from_slice(&value.to_be_bytes());
    }
    digest
}

#[test]
fn master_key_constants_are_sha1_of_ledger_and_password() {
    assert_eq!(
        sha1(b"abc").to_vec(),
        hex("a9 99 3e 36 47 06 81 6a ba 3e 25 71 78 50 c2 6c 9c d0 d8 9d")
    );
    assert_eq!(sha1(b"ledger"), MASTER_KEY_EMPTY_PASSWORD);
    assert_eq!(sha1(b"ledgerbenchPasswd"), MASTER_KEY_BENCH_PASSWORD);
    assert_eq!(MASTER_KEY_EMPTY_PASSWORD.to_vec(), hex(KEY_EMPTY_HEX));
    assert_eq!(MASTER_KEY_BENCH_PASSWORD.to_vec(), hex(KEY_BENCH_HEX));
}

#[test]
fn decode_error_display() {
    let error = DecodeError::FrameTooLarge {
        frame_size: 10,
        frame_size_max: 8,
    };
    assert_eq!(
        error.to_string(),
        "frame of 10 bytes exceeds the 8-byte limit"
    );
    assert_eq!(malformed("x").to_string(), "malformed frame: x");
}

/// xorshift64: deterministic garbage without a dependency.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, bound: usize) -> usize {
        usize::try_from(self.next() % u64::try_from(bound).unwrap()).unwrap()
    }

    fn byte(&mut self) -> u8 {
        self.next().to_be_bytes()[0]
    }
}

/// Fills `buf` with garbage; most buffers get a plausible prefix and header so that the bytes
/// reach the per-opcode decoders instead of failing at the frame limit.
fn garbage(rng: &mut XorShift, buf: &mut Vec<u8>) {
    buf.clear();
    let size = rng.below(100);
    buf.extend((0..size).map(|_| rng.byte()));
    if size < 8 || rng.below(4) == 0 {
        return;
    }
    let length = size - 4 - rng.below(3).min(size - 8);
    buf[..4].copy_from_slice(&u32::try_from(length).unwrap().to_be_bytes());
    buf[4] = [0, 1, 2, 3, 0x80][rng.below(5)];
    let opcode = u8::try_from(rng.below(9)).unwrap();
    buf[5] = opcode;
    buf[6] = 0;
    buf[7] = if buf[4] == 0 {
        opcode
    } else {
        rng.byte() & 0x07
    };
}

/// Returns whether `buf` decoded to a request or response frame.
fn check_garbage(buf: &[u8], frame_size_max: u32) -> bool {
    let mut decoded = false;
    if let Ok(Decoded::Frame {
        request,
        frame_size,
    }) = decode_request(buf, frame_size_max)
    {
        assert!((8..=buf.len()).contains(&frame_size));
        if let Request::Add { body, .. } = request {
            assert!(body.len() >= ENTRY_BODY_SIZE_MIN);
        }
        decoded = true;
    }
    if let Ok(DecodedResponse::Frame {
        response,
        frame_size,
    }) = decode_response(buf, frame_size_max)
    {
        assert!((8..=buf.len()).contains(&frame_size));
        if let Response::BatchRead { mut entries, .. } = response {
            // Every item consumes at least its 4-byte length, so this bounds the iteration.
            let item_count = entries
                .by_ref()
                .take(buf.len())
                .filter(Result::is_ok)
                .count();
            assert!(item_count <= buf.len() / BATCH_READ_RESPONSE_ITEM_PREFIX_SIZE);
            assert_eq!(entries.next(), None);
        }
        decoded = true;
    }
    let _ = verify_entry_body_crc32c(buf);
    let _ = entry_body_last_add_confirmed(buf);
    decoded
}

#[test]
fn garbage_never_panics() {
    let seed = std::env::var("SEED")
        .ok()
        .and_then(|seed| seed.parse().ok())
        .unwrap_or(0x5EED);
    println!("garbage_never_panics SEED={seed}");
    let mut rng = XorShift(seed | 1);
    let mut buf = Vec::with_capacity(128);
    let mut frame_count = 0;
    for _ in 0..20_000 {
        garbage(&mut rng, &mut buf);
        for frame_size_max in [64, MAX] {
            frame_count += usize::from(check_garbage(&buf, frame_size_max));
        }
    }
    // Without this the loop could pass by never getting past the framing checks.
    assert!(frame_count > 5_000, "only {frame_count} frames decoded");
}
