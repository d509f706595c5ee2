//! Record encode/decode, including detection of every single-byte corruption.

use crate::ids::{EntryId, LedgerId, Location, Position, SegmentId, Sequence};
use crate::record::{self, RecordError, RecordHeader, RecordKind};

fn header(payload: &[u8]) -> RecordHeader {
    RecordHeader {
        kind: RecordKind::Entry,
        checksum_payload: 0,
        payload_size: payload.len() as u32,
        checksum_previous: 0xDEAD_BEEF,
        sequence: Sequence(42),
        ledger: LedgerId(-5),
        entry: EntryId(1234),
        location: Location {
            segment: SegmentId(3),
            position: Position(8192),
        },
        commit_first: true,
    }
}

#[test]
fn round_trip() {
    for size in [0usize, 1, 7, 8, 9, 100, 4096, 70_000] {
        let payload: Vec<u8> = (0..size).map(|i| (i * 7) as u8).collect();
        let mut out = vec![0xAAu8; record::record_size(size)];
        let checksum = record::encode(&mut out, &header(&payload), &payload);
        let (decoded, decoded_checksum, body) = record::decode(&out).unwrap();
        assert_eq!(decoded.sequence, Sequence(42));
        assert_eq!(decoded.ledger, LedgerId(-5));
        assert_eq!(decoded.entry, EntryId(1234));
        assert!(decoded.commit_first);
        assert_eq!(decoded.checksum_previous, 0xDEAD_BEEF);
        assert_eq!(decoded_checksum, checksum);
        assert_eq!(body, &payload[..]);
        assert_eq!(out.len() % 8, 0);
    }
}

#[test]
fn every_single_byte_corruption_is_detected() {
    let payload: Vec<u8> = (0..300).map(|i| (i * 13 + 1) as u8).collect();
    let mut clean = vec![0u8; record::record_size(payload.len())];
    record::encode(&mut clean, &header(&payload), &payload);
    for index in 0..clean.len() {
        for flip in [0x01u8, 0x80, 0xFF] {
            let mut bad = clean.clone();
            bad[index] ^= flip;
            assert!(
                record::decode(&bad).is_err(),
                "flip {flip:#x} at byte {index} undetected"
            );
        }
    }
}

#[test]
fn zeroes_and_truncation() {
    assert_eq!(record::decode(&[0u8; 64]).unwrap_err(), RecordError::Zero);
    assert_eq!(
        record::decode(&[1u8; 10]).unwrap_err(),
        RecordError::Truncated
    );
    let payload = [5u8; 100];
    let mut out = vec![0u8; record::record_size(100)];
    record::encode(&mut out, &header(&payload), &payload);
    for cut in 0..out.len() {
        assert!(
            record::decode(&out[..cut]).is_err(),
            "cut at {cut} accepted"
        );
    }
}
