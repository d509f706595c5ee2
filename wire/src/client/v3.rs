//! The client's side of v3: the ADD request encoder the bench client sends with (no
//! allocation, no prost message per add) and the ADD response decoder it checks replies with;
//! START_TLS, as the bench client and the repairer ask for TLS.

use crate::v3::{
    proto, v2_from_status, Operation, Status, ADD_FLAG_RECOVERY_ADD, PROTOCOL_VERSION_THREE,
};
use prost::encoding::{encode_key, encode_varint, encoded_len_varint, key_len, WireType};
use prost::Message;

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

/// Appends one v3 START_TLS request frame (`u32` length, `Request`), the first frame a TLS
/// client sends (`PerChannelBookieClient.initiateTLS`); its answer comes in plaintext.
pub fn encode_start_tls_request(out: &mut Vec<u8>, txn_id: u64) {
    let request = proto::Request {
        header: proto::BkPacketHeader {
            version: PROTOCOL_VERSION_THREE,
            operation: Operation::StartTls as i32,
            txn_id,
            priority: None,
        },
        start_tls_request: Some(proto::StartTlsRequest {}),
        ..Default::default()
    };
    let frame_len = u32::try_from(request.encoded_len()).expect("a small message");
    out.extend_from_slice(&frame_len.to_be_bytes());
    request.encode_raw(out);
}

/// The status of a START_TLS answer (`Status` as i32: EOK, then TLS; EBADREQ from a bookie
/// without TLS), or `None` if the message is not a v3 START_TLS response.
#[must_use]
pub fn decode_start_tls_response(message: &[u8]) -> Option<i32> {
    let response = proto::Response::decode(message).ok()?;
    (response.header.operation == Operation::StartTls as i32).then_some(response.status)
}
