//! A ledger's metadata znode (`ledger_metadata.rs`): the three formats, the sizes, segments
//! and digest type repair needs, and an entry's write set.

use super::ledger_metadata::{
    metadata_parse, DigestType, LedgerMetadata, LedgerState, MetadataError,
};
use prost::Message;
use wire::ledger_metadata::{LedgerMetadataFormat, Segment, State};

/// Raw version 3 fields: `digestType` (7, varint), `password` (8, bytes).
const DIGEST_TAG: u8 = 7 << 3;
const PASSWORD_EMPTY: [u8; 2] = [(8 << 3) | 2, 0];

fn strings(members: &[&str]) -> Vec<String> {
    members.iter().map(|member| (*member).to_string()).collect()
}

fn format(
    quorum: Option<i32>,
    ensemble: Option<i32>,
    segments: &[(Option<i64>, &[&str])],
) -> LedgerMetadataFormat {
    LedgerMetadataFormat {
        quorum_size: quorum,
        ensemble_size: ensemble,
        length: Some(0),
        last_entry_id: Some(-1),
        state: Some(State::Open as i32),
        segment: segments
            .iter()
            .map(|(first, members)| Segment {
                ensemble_member: strings(members),
                first_entry_id: *first,
            })
            .collect(),
        ack_quorum_size: quorum,
        digest_type: None,
    }
}

/// Version 3 bytes of `format` followed by the raw fields `extra`.
fn v3(format: &LedgerMetadataFormat, extra: &[u8]) -> Vec<u8> {
    let mut message = format.encode_to_vec();
    message.extend_from_slice(extra);
    let mut bytes = b"BookieMetadataFormatVersion\t3\n".to_vec();
    prost::encoding::encode_varint(u64::try_from(message.len()).unwrap(), &mut bytes);
    bytes.extend_from_slice(&message);
    bytes
}

fn metadata(quorum: u32, ensemble: u32, segments: &[(i64, &[&str])]) -> LedgerMetadata {
    LedgerMetadata {
        format_version: 3,
        state: LedgerState::Closed,
        ensembles: segments
            .iter()
            .map(|(_, members)| strings(members))
            .collect(),
        segment_first_entries: segments.iter().map(|(first, _)| *first).collect(),
        ensemble_size: ensemble,
        write_quorum_size: quorum,
        digest_type: None,
    }
}

#[test]
fn v3_reads_sizes_segments_and_digest_type() {
    let two = format(
        Some(2),
        Some(3),
        &[
            (Some(0), &["a:1", "b:1", "c:1"]),
            (Some(7), &["d:1", "b:1", "c:1"]),
        ],
    );
    let parsed = metadata_parse(&v3(&two, &[DIGEST_TAG, 3, PASSWORD_EMPTY[0], 0])).unwrap();
    assert_eq!(parsed.write_quorum_size, 2);
    assert_eq!(parsed.ensemble_size, 3);
    assert_eq!(parsed.segment_first_entries, vec![0, 7]);
    assert_eq!(parsed.ensembles[1], strings(&["d:1", "b:1", "c:1"]));
    assert_eq!(parsed.digest_type, Some(DigestType::Crc32c));
    // A number BookKeeper does not define reads as unknown; the password is skipped.
    let cases: [(&[u8], Option<DigestType>); 7] = [
        (
            &[DIGEST_TAG, 1, PASSWORD_EMPTY[0], 0],
            Some(DigestType::Crc32),
        ),
        (
            &[DIGEST_TAG, 2, PASSWORD_EMPTY[0], 0],
            Some(DigestType::Hmac),
        ),
        (&[DIGEST_TAG, 4], Some(DigestType::Dummy)),
        (
            &[PASSWORD_EMPTY[0], 1, b'x', DIGEST_TAG, 3],
            Some(DigestType::Crc32c),
        ),
        (&PASSWORD_EMPTY, None),
        (&[DIGEST_TAG, 9, PASSWORD_EMPTY[0], 0], None),
        (&[], None),
    ];
    for (extra, digest_type) in cases {
        let parsed = metadata_parse(&v3(&two, extra)).unwrap();
        assert_eq!(parsed.digest_type, digest_type, "{extra:?}");
    }
}

#[test]
fn v3_refuses_missing_or_negative_sizes() {
    let members: &[&str] = &["a:1", "b:1"];
    let cases = [
        (
            format(None, Some(2), &[(Some(0), members)]),
            MetadataError::FieldMissing {
                field: "quorumSize",
            },
        ),
        (
            format(Some(2), None, &[(Some(0), members)]),
            MetadataError::FieldMissing {
                field: "ensembleSize",
            },
        ),
        (
            format(Some(-1), Some(2), &[(Some(0), members)]),
            MetadataError::SizeNegative {
                field: "quorumSize",
                value: -1,
            },
        ),
        (
            format(Some(2), Some(2), &[(Some(0), members), (None, members)]),
            MetadataError::FieldMissing {
                field: "firstEntryId",
            },
        ),
    ];
    for (format, error) in cases {
        assert_eq!(metadata_parse(&v3(&format, &[])), Err(error));
    }
}

const V2: &str = "BookieMetadataFormatVersion\t2\nquorumSize: 2\nensembleSize: 3\n\
    length: 0\nlastEntryId: -1\nstate: OPEN\nsegment {\n  ensembleMember: \"a:1\"\n  \
    ensembleMember: \"b:1\"\n  ensembleMember: \"c:1\"\n  firstEntryId: 0\n}\n\
    segment {\n  ensembleMember: \"d:1\"\n  ensembleMember: \"b:1\"\n  \
    ensembleMember: \"c:1\"\n  firstEntryId: 12\n}\ndigestType: CRC32C\n\
    password: \"p\\\"w {\"\ncustomMetadata {\n  key: \"firstEntryId\"\n  \
    value: \"x\"\n}\n";

#[test]
fn v2_reads_sizes_segments_and_digest_type() {
    let parsed = metadata_parse(V2.as_bytes()).unwrap();
    assert_eq!(
        parsed,
        LedgerMetadata {
            format_version: 2,
            state: LedgerState::Open,
            ensembles: vec![
                strings(&["a:1", "b:1", "c:1"]),
                strings(&["d:1", "b:1", "c:1"])
            ],
            segment_first_entries: vec![0, 12],
            ensemble_size: 3,
            write_quorum_size: 2,
            digest_type: Some(DigestType::Crc32c),
        }
    );
    let edit = |from: &str, to: &str| metadata_parse(V2.replacen(from, to, 1).as_bytes());
    let no_password = edit("password: \"p\\\"w {\"\n", "").unwrap();
    assert_eq!(no_password.digest_type, Some(DigestType::Crc32c));
    let no_digest = edit("digestType: CRC32C\n", "").unwrap();
    assert_eq!(no_digest.digest_type, None);
    for (name, digest_type) in [
        ("CRC32", DigestType::Crc32),
        ("HMAC", DigestType::Hmac),
        ("DUMMY", DigestType::Dummy),
    ] {
        let parsed = edit("CRC32C", name).unwrap();
        assert_eq!(parsed.digest_type, Some(digest_type));
    }
    let cases = [
        (edit("CRC32C", "MD5"), MetadataError::DigestType),
        (
            edit("quorumSize: 2\n", ""),
            MetadataError::FieldMissing {
                field: "quorumSize",
            },
        ),
        (
            edit("ensembleSize: 3\n", ""),
            MetadataError::FieldMissing {
                field: "ensembleSize",
            },
        ),
        (
            edit("  firstEntryId: 12\n", ""),
            MetadataError::FieldMissing {
                field: "firstEntryId",
            },
        ),
        (
            edit("ensembleSize: 3", "ensembleSize: -3"),
            MetadataError::SizeNegative {
                field: "ensembleSize",
                value: -3,
            },
        ),
        (
            edit("quorumSize: 2\n", "quorumSize: 2\nquorumSize: 2\n"),
            MetadataError::Text { line: 3 },
        ),
        (
            edit("firstEntryId: 0\n", "firstEntryId: 0\n  firstEntryId: 0\n"),
            MetadataError::Text { line: 12 },
        ),
        (
            edit("quorumSize: 2", "quorumSize: two"),
            MetadataError::Text { line: 2 },
        ),
        (
            edit("quorumSize: 2", "quorumSize: 2147483648"),
            MetadataError::Text { line: 2 },
        ),
    ];
    for (result, error) in cases {
        assert_eq!(result, Err(error));
    }
}

#[test]
fn v1_reads_quorum_then_ensemble_size() {
    let text = "BookieMetadataFormatVersion\t1\n2\n3\n900\n0\ta:1\tb:1\tc:1\n\
        5\td:1\tb:1\tc:1\n9\tCLOSED";
    let parsed = metadata_parse(text.as_bytes()).unwrap();
    assert_eq!(
        parsed,
        LedgerMetadata {
            format_version: 1,
            state: LedgerState::Closed,
            ensembles: vec![
                strings(&["a:1", "b:1", "c:1"]),
                strings(&["d:1", "b:1", "c:1"])
            ],
            segment_first_entries: vec![0, 5],
            ensemble_size: 3,
            write_quorum_size: 2,
            digest_type: None,
        }
    );
    assert_eq!(parsed.write_set(6), Some(vec!["d:1", "b:1"]));
    let cases = [
        (
            "-1\n3\n0\n",
            MetadataError::SizeNegative {
                field: "quorumSize",
                value: -1,
            },
        ),
        (
            "2\n-3\n0\n",
            MetadataError::SizeNegative {
                field: "ensembleSize",
                value: -3,
            },
        ),
        ("2\n4294967299\n0\n", MetadataError::Text { line: 3 }),
        ("x\n3\n0\n", MetadataError::Text { line: 2 }),
        ("2\n3\n", MetadataError::Text { line: 4 }),
    ];
    for (body, error) in cases {
        let bytes = format!("BookieMetadataFormatVersion\t1\n{body}");
        assert_eq!(metadata_parse(bytes.as_bytes()), Err(error), "{body}");
    }
}

#[test]
fn write_set_is_round_robin_from_the_entry() {
    let abc: &[&str] = &["a", "b", "c"];
    let e3w2 = metadata(2, 3, &[(0, abc)]);
    let e3w3 = metadata(3, 3, &[(0, abc)]);
    let cases: [(&LedgerMetadata, i64, &[&str]); 9] = [
        (&e3w2, 0, &["a", "b"]),
        (&e3w2, 1, &["b", "c"]),
        (&e3w2, 2, &["c", "a"]),
        (&e3w2, 3, &["a", "b"]),
        // i64::MAX % 3 == 1.
        (&e3w2, i64::MAX, &["b", "c"]),
        (&e3w3, 0, &["a", "b", "c"]),
        (&e3w3, 1, &["b", "c", "a"]),
        (&e3w3, 2, &["c", "a", "b"]),
        (&e3w3, 3, &["a", "b", "c"]),
    ];
    for (metadata, entry, expected) in cases {
        assert_eq!(
            metadata.write_set(entry).as_deref(),
            Some(expected),
            "{entry}"
        );
    }
    let single = metadata(1, 1, &[(0, &["a"])]);
    assert_eq!(single.write_set(41), Some(vec!["a"]));
}

#[test]
fn write_set_follows_ensemble_changes() {
    // Bookie a replaced by d at entry 10, then b by e at entry 20.
    let history = metadata(
        2,
        3,
        &[
            (0, &["a", "b", "c"]),
            (10, &["d", "b", "c"]),
            (20, &["d", "e", "c"]),
        ],
    );
    let cases: [(i64, &[&str]); 7] = [
        (0, &["a", "b"]),
        (9, &["a", "b"]),
        (10, &["b", "c"]),
        (12, &["d", "b"]),
        (19, &["b", "c"]),
        (20, &["c", "d"]),
        (1_000, &["e", "c"]),
    ];
    for (entry, expected) in cases {
        assert_eq!(
            history.write_set(entry).as_deref(),
            Some(expected),
            "{entry}"
        );
    }
}

#[test]
fn write_set_is_none_out_of_range_or_inconsistent() {
    let abc: &[&str] = &["a", "b", "c"];
    let late = metadata(2, 3, &[(5, abc)]);
    assert_eq!(late.write_set(4), None, "before the first segment");
    assert_eq!(late.write_set(5), Some(vec!["c", "a"]));
    assert_eq!(late.write_set(-1), None);
    assert_eq!(metadata(2, 3, &[]).write_set(0), None, "no segment");
    let inconsistent = [
        metadata(0, 3, &[(0, abc)]),
        metadata(4, 3, &[(0, abc)]),
        metadata(2, 4, &[(0, abc)]),
        metadata(2, 2, &[(0, abc)]),
        metadata(2, 3, &[(0, abc), (5, &["a", "b"])]),
        metadata(2, 3, &[(0, abc), (5, abc), (5, abc)]),
        metadata(2, 3, &[(5, abc), (0, abc)]),
    ];
    for metadata in inconsistent {
        assert_eq!(metadata.write_set(7), None, "{metadata:?}");
    }
    let mut unpaired = metadata(2, 3, &[(0, abc)]);
    unpaired.segment_first_entries.push(10);
    assert_eq!(unpaired.write_set(1), None);
}
