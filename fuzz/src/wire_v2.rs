//! `v2_request` and `v2_response`: the BookKeeper v2 decoders on arbitrary bytes.
//!
//! Properties, for every input:
//! - decoding never panics; each decoded frame consumes at least its 8-byte prefix + header and
//!   no more than the bytes given, so the consume loop ends;
//! - streaming: every strict prefix of a decoded frame is `NeedMore`, and a prefix of bytes that
//!   fail is `NeedMore` or the same error (more bytes never turn an error into a frame);
//! - round trip: a decoded frame re-encoded with the `encode_*` functions decodes to the same
//!   fields (for ADD requests with version 2, to the same bytes).

use wire::client::{BatchEntries, DecodedResponse, Response};
use wire::{
    code, DecodeError, Decoded, Opcode, Request, BATCH_READ_RESPONSE_FIXED_SIZE,
    BATCH_READ_RESPONSE_ITEM_PREFIX_SIZE, FRAME_SIZE_MAX_DEFAULT, PROTOCOL_VERSION_CURRENT,
};

const FRAME_SIZE_LIMIT: u32 = FRAME_SIZE_MAX_DEFAULT;
/// u32 length prefix + u32 packet header: the smallest frame a decoder may report.
const FRAME_SIZE_MIN: usize = 8;

/// Target `v2_request`: consumes every request frame of `data`.
pub fn v2_request(data: &[u8]) {
    let mut rest = data;
    // Each pass consumes at least FRAME_SIZE_MIN bytes or returns: bounded by the input.
    for _ in 0..=data.len() / FRAME_SIZE_MIN {
        let decoded = wire::decode_request(rest, FRAME_SIZE_LIMIT);
        let frame_size = match &decoded {
            Ok(Decoded::Frame { frame_size, .. }) => Some(*frame_size),
            Ok(Decoded::NeedMore) | Err(_) => None,
        };
        request_prefixes_check(rest, &decoded, frame_size);
        let Ok(Decoded::Frame {
            request,
            frame_size,
        }) = decoded
        else {
            return;
        };
        frame_size_check(frame_size, rest.len());
        request_round_trip_check(&request, &rest[..frame_size]);
        rest = &rest[frame_size..];
    }
    unreachable!("more frames than the input has bytes for");
}

/// Target `v2_response`: consumes every response frame of `data`, batch entries included.
pub fn v2_response(data: &[u8]) {
    let mut rest = data;
    for _ in 0..=data.len() / FRAME_SIZE_MIN {
        let decoded = wire::client::decode_response(rest, FRAME_SIZE_LIMIT);
        let frame_size = match &decoded {
            Ok(DecodedResponse::Frame { frame_size, .. }) => Some(*frame_size),
            Ok(DecodedResponse::NeedMore) | Err(_) => None,
        };
        response_prefixes_check(rest, &decoded, frame_size);
        let Ok(DecodedResponse::Frame {
            response,
            frame_size,
        }) = decoded
        else {
            return;
        };
        frame_size_check(frame_size, rest.len());
        if let Response::BatchRead { entries, .. } = &response {
            batch_entries_check(*entries, frame_size);
        }
        response_round_trip_check(&response);
        rest = &rest[frame_size..];
    }
    unreachable!("more frames than the input has bytes for");
}

fn frame_size_check(frame_size: usize, available: usize) {
    assert!(frame_size > 0);
    assert!(frame_size >= FRAME_SIZE_MIN, "frame of {frame_size} bytes");
    assert!(frame_size <= available, "{frame_size} > {available}");
    assert!(frame_size <= FRAME_SIZE_LIMIT as usize);
}

/// Prefixes of `buf` up to the decoded frame's end (or all of `buf` when it did not decode):
/// O(frame size) decodes per frame, O(input) per execution.
fn request_prefixes_check(
    buf: &[u8],
    full: &Result<Decoded<'_>, DecodeError>,
    frame_size: Option<usize>,
) {
    let end = frame_size.unwrap_or(buf.len());
    for prefix_size in 0..end {
        let prefix = wire::decode_request(&buf[..prefix_size], FRAME_SIZE_LIMIT);
        match (&prefix, full) {
            (Ok(Decoded::NeedMore), _) => {}
            (Err(error), Err(full_error)) if error == full_error => {}
            _ => panic!("prefix of {prefix_size} bytes gave {prefix:?}, all {end} gave {full:?}"),
        }
    }
}

fn response_prefixes_check(
    buf: &[u8],
    full: &Result<DecodedResponse<'_>, DecodeError>,
    frame_size: Option<usize>,
) {
    let end = frame_size.unwrap_or(buf.len());
    for prefix_size in 0..end {
        let prefix = wire::client::decode_response(&buf[..prefix_size], FRAME_SIZE_LIMIT);
        match (&prefix, full) {
            (Ok(DecodedResponse::NeedMore), _) => {}
            (Err(error), Err(full_error)) if error == full_error => {}
            _ => panic!("prefix of {prefix_size} bytes gave {prefix:?}, all {end} gave {full:?}"),
        }
    }
}

fn decode_one_request(frame: &[u8]) -> Request<'_> {
    match wire::decode_request(frame, FRAME_SIZE_LIMIT) {
        Ok(Decoded::Frame {
            request,
            frame_size,
        }) => {
            assert_eq!(
                frame_size,
                frame.len(),
                "re-encoded frame not consumed whole"
            );
            request
        }
        other => panic!("re-encoded request {frame:02x?} decodes to {other:?}"),
    }
}

fn decode_one_response(frame: &[u8]) -> Response<'_> {
    match wire::client::decode_response(frame, FRAME_SIZE_LIMIT) {
        Ok(DecodedResponse::Frame {
            response,
            frame_size,
        }) => {
            assert_eq!(
                frame_size,
                frame.len(),
                "re-encoded frame not consumed whole"
            );
            response
        }
        other => panic!("re-encoded response {frame:02x?} decodes to {other:?}"),
    }
}

/// Encoders always write version 2, so READ and BATCH_READ (whose key rule depends on the
/// version) are compared only for version-2 input; ADD for every version.
fn request_round_trip_check(request: &Request<'_>, frame: &[u8]) {
    let mut out = Vec::with_capacity(frame.len() + 64);
    match *request {
        Request::Add {
            header,
            master_key,
            ledger_id,
            entry_id,
            body,
        } => {
            wire::client::encode_add_request(&mut out, header.flags, master_key, body);
            let again = decode_one_request(&out);
            let Request::Add {
                header: header_again,
                master_key: master_key_again,
                ledger_id: ledger_id_again,
                entry_id: entry_id_again,
                body: body_again,
            } = again
            else {
                panic!("ADD re-decoded as {again:?}");
            };
            assert_eq!(header_again.version, PROTOCOL_VERSION_CURRENT);
            assert_eq!(header_again.opcode, Opcode::Add as u8);
            assert_eq!(header_again.flags, header.flags);
            assert_eq!(master_key_again, master_key);
            assert_eq!(ledger_id_again, ledger_id);
            assert_eq!(entry_id_again, entry_id);
            assert_eq!(body_again, body);
            // ADD has no ignored trailing bytes: the frame size is the same for any version.
            assert_eq!(out.len(), frame.len());
            if header.version == PROTOCOL_VERSION_CURRENT {
                assert_eq!(out, frame, "ADD v2 is not canonical");
            }
        }
        Request::Read { header, .. } | Request::BatchRead { header, .. }
            if header.version != PROTOCOL_VERSION_CURRENT => {}
        Request::Read {
            header,
            ledger_id,
            entry_id,
            master_key,
        } => {
            wire::client::encode_read_request(
                &mut out,
                header.flags,
                ledger_id,
                entry_id,
                master_key,
            );
            assert_eq!(&decode_one_request(&out), request);
        }
        Request::BatchRead {
            header,
            ledger_id,
            start_entry_id,
            request_id,
            max_count,
            max_size,
            master_key,
        } => {
            wire::client::encode_batch_read_request(
                &mut out,
                header.flags,
                ledger_id,
                start_entry_id,
                request_id,
                max_count,
                max_size,
                master_key,
            );
            assert_eq!(&decode_one_request(&out), request);
        }
        // The AUTH encoder builds its own AuthMessage; the decoder keeps it opaque.
        Request::Auth { .. } => {}
    }
}

/// Iterates the items to the end: they tile the frame after its fixed part exactly, unless an
/// error ends them, after which the iterator yields nothing more.
fn batch_entries_check(entries: BatchEntries<'_>, frame_size: usize) {
    let items_size = frame_size - BATCH_READ_RESPONSE_FIXED_SIZE;
    let mut consumed = 0usize;
    let mut entries = entries;
    // Each item consumes at least its 4-byte prefix: bounded by the frame.
    for _ in 0..=items_size / BATCH_READ_RESPONSE_ITEM_PREFIX_SIZE {
        match entries.next() {
            None => {
                assert_eq!(consumed, items_size, "items do not tile the frame");
                return;
            }
            Some(Ok(body)) => {
                consumed += BATCH_READ_RESPONSE_ITEM_PREFIX_SIZE + body.len();
                assert!(consumed <= items_size, "item runs past the frame");
            }
            Some(Err(error)) => {
                assert!(matches!(error, DecodeError::Malformed { .. }));
                assert!(entries.next().is_none(), "items go on after an error");
                assert!(entries.next().is_none(), "items go on after an error");
                return;
            }
        }
    }
    panic!("more batch items than the frame has bytes for");
}

fn response_round_trip_check(response: &Response<'_>) {
    let mut out = Vec::new();
    match *response {
        Response::Add {
            version,
            code,
            ledger_id,
            entry_id,
        } => wire::encode_add_response(&mut out, version, code, ledger_id, entry_id),
        Response::Read {
            version,
            code,
            ledger_id,
            entry_id,
            body,
        } => {
            // The encoder refuses (asserts) an error reply with a body; the decoder accepts it.
            if code != code::EOK && !body.is_empty() {
                return;
            }
            wire::encode_read_response(&mut out, version, code, ledger_id, entry_id, body);
        }
        Response::BatchRead {
            version,
            code,
            ledger_id,
            start_entry_id,
            request_id,
            entries,
        } => {
            let Some(bodies) = entries.collect::<Result<Vec<&[u8]>, DecodeError>>().ok() else {
                return;
            };
            if code != code::EOK && !bodies.is_empty() {
                return;
            }
            let frame_start = wire::encode_batch_read_response_begin(
                &mut out,
                version,
                code,
                ledger_id,
                start_entry_id,
                request_id,
            );
            for body in bodies {
                wire::encode_batch_read_response_push(&mut out, body);
            }
            wire::encode_batch_read_response_finish(&mut out, frame_start);
        }
        Response::Auth { .. } => return,
    }
    assert_eq!(&decode_one_response(&out), response);
}
