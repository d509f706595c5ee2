//! Over-replicated ledgers: the metadata parser against bytes BookKeeper wrote, the check's
//! safety rules against a fake metadata store, and the grace period with an injected clock.

use super::gc_metadata::{Metadata, ReadError, RoundError};
use super::gc_overreplicated::{check, replication_lock_path, Candidates, CheckOutcome};
use super::ledger_layout::{form_hybrid, ledger_path, Form};
use super::ledger_metadata::{
    metadata_parse, DigestType, LedgerMetadata, LedgerState, MetadataError,
};
use super::underreplication::underreplicated_path;
use prost::Message;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use wire::ledger_metadata::{LedgerMetadataFormat, Segment, State};

const ROOT: &str = "/ledgers";
const LAYOUT_HIERARCHICAL: &[u8] =
    b"2\norg.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory:1";
const US: &str = "127.0.0.1:3181";

/// Metadata serialised by BookKeeper 4.18.2's own `LedgerMetadataSerDe.serialize` (built with
/// `LedgerMetadataBuilder` in a throwaway Java program on the interop module's classpath),
/// base64. Closed, ensembles [127.0.0.1:3181, 127.0.0.2:3181] from entry 0 and
/// [127.0.0.3:3181, 127.0.0.2:3181] from entry 100, ctime stored.
const CLOSED_TWO_SEGMENTS: &str = concat!(
    "Qm9va2llTWV0YWRhdGFGb3JtYXRWZXJzaW9uCTMKaggCEAIYoJwBIMcBKAMyIgoOMTI3LjAuMC4xOjMxODEK",
    "DjEyNy4wLjAuMjozMTgxEAAyIgoOMTI3LjAuMC4zOjMxODEKDjEyNy4wLjAuMjozMTgxEGQ4A0IGc2VjcmV0",
    "SAJQgNCV/7wxYAA=",
);
/// Open, one ensemble of 127.0.0.1..3:3181.
const OPEN: &str = concat!(
    "Qm9va2llTWV0YWRhdGFGb3JtYXRWZXJzaW9uCTMKVQgCEAMYACD///////////8BKAEyMgoOMTI3LjAuMC4x",
    "OjMxODEKDjEyNy4wLjAuMjozMTgxCg4xMjcuMC4wLjM6MzE4MRAAOANCBnNlY3JldEgCYAA=",
);
/// Closed and empty, one ensemble [127.0.0.2:3181], custom metadata whose value holds a
/// newline and braces.
const CLOSED_EMPTY: &str = concat!(
    "Qm9va2llTWV0YWRhdGFGb3JtYXRWZXJzaW9uCTMKTwgBEAEYACD///////////8BKAMyEgoOMTI3LjAuMC4y",
    "OjMxODEQADgCQgZzZWNyZXRIAVoYCgthcHBsaWNhdGlvbhIJcHVsc2FyCnt9YAA=",
);
/// Versions 1 and 2 of the first, closed at entry 9, segments from 0 and 5.
const CLOSED_V1: &str = concat!(
    "Qm9va2llTWV0YWRhdGFGb3JtYXRWZXJzaW9uCTEKMgoyCjkwMAowCTEyNy4wLjAuMTozMTgxCTEyNy4wLjAu",
    "MjozMTgxCjUJMTI3LjAuMC4zOjMxODEJMTI3LjAuMC4yOjMxODEKOQlDTE9TRUQ=",
);
const CLOSED_V2: &str = concat!(
    "Qm9va2llTWV0YWRhdGFGb3JtYXRWZXJzaW9uCTIKcXVvcnVtU2l6ZTogMgplbnNlbWJsZVNpemU6IDIKbGVu",
    "Z3RoOiA5MDAKbGFzdEVudHJ5SWQ6IDkKc3RhdGU6IENMT1NFRApzZWdtZW50IHsKICBlbnNlbWJsZU1lbWJl",
    "cjogIjEyNy4wLjAuMTozMTgxIgogIGVuc2VtYmxlTWVtYmVyOiAiMTI3LjAuMC4yOjMxODEiCiAgZmlyc3RF",
    "bnRyeUlkOiAwCn0Kc2VnbWVudCB7CiAgZW5zZW1ibGVNZW1iZXI6ICIxMjcuMC4wLjM6MzE4MSIKICBlbnNl",
    "bWJsZU1lbWJlcjogIjEyNy4wLjAuMjozMTgxIgogIGZpcnN0RW50cnlJZDogNQp9CmRpZ2VzdFR5cGU6IENS",
    "QzMyCnBhc3N3b3JkOiAic2VjcmV0IgphY2tRdW9ydW1TaXplOiAyCg==",
);
/// BookKeeper's own test vectors (`TestLedgerMetadataSerDe`): versions 1 and 2 of a ledger in
/// recovery, version 3 of an open one, ensembles of 192.0.2.1..3.
const BK_V1_IN_RECOVERY: &str = concat!(
    "Qm9va2llTWV0YWRhdGFGb3JtYXRWZXJzaW9uCTEKMgozCjAKMAkxOTIuMC4yLjE6MTIzNAkxOTIuMC4yLjI6",
    "MTIzNAkxOTIuMC4yLjM6MTIzNAotMTAyCUNMT1NFRA==",
);
const BK_V2_IN_RECOVERY: &str = concat!(
    "Qm9va2llTWV0YWRhdGFGb3JtYXRWZXJzaW9uCTIKcXVvcnVtU2l6ZTogMgplbnNlbWJsZVNpemU6IDMKbGVu",
    "Z3RoOiAwCmxhc3RFbnRyeUlkOiAtMQpzdGF0ZTogSU5fUkVDT1ZFUlkKc2VnbWVudCB7CiAgZW5zZW1ibGVN",
    "ZW1iZXI6ICIxOTIuMC4yLjE6MTIzNCIKICBlbnNlbWJsZU1lbWJlcjogIjE5Mi4wLjIuMjoxMjM0IgogIGVu",
    "c2VtYmxlTWVtYmVyOiAiMTkyLjAuMi4zOjEyMzQiCiAgZmlyc3RFbnRyeUlkOiAwCn0KZGlnZXN0VHlwZTog",
    "Q1JDMzIKcGFzc3dvcmQ6ICJwYXNzd2QiCmFja1F1b3J1bVNpemU6IDIKY3RpbWU6IDE1NDQwMDIzODMwNzUK",
);
const BK_V3_OPEN: &str = concat!(
    "Qm9va2llTWV0YWRhdGFGb3JtYXRWZXJzaW9uCTMKYAgCEAMYACD///////////8BKAEyMgoOMTkyLjAuMi4x",
    "OjMxODEKDjE5Mi4wLjIuMjozMTgxCg4xOTIuMC4yLjM6MzE4MRAAOANCBmZvb2JhckgBUP///////////wFg",
    "AA==",
);

/// Standard base64 (the fixtures only), without a dependency for it.
fn base64(text: &str) -> Vec<u8> {
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = Vec::new();
    let mut bits = 0_u32;
    let mut count = 0;
    for byte in text.bytes().filter(|&byte| byte != b'=') {
        let value = alphabet.iter().position(|&a| a == byte).unwrap();
        bits = (bits << 6) | u32::try_from(value).unwrap();
        count += 6;
        if count >= 8 {
            count -= 8;
            out.push(u8::try_from((bits >> count) & 0xff).unwrap());
        }
    }
    out
}

fn ensembles(lists: &[&[&str]]) -> Vec<Vec<String>> {
    lists
        .iter()
        .map(|list| list.iter().map(|member| (*member).to_string()).collect())
        .collect()
}

#[test]
fn metadata_bookkeeper_wrote_parses() {
    let two_segments = ensembles(&[
        &["127.0.0.1:3181", "127.0.0.2:3181"],
        &["127.0.0.3:3181", "127.0.0.2:3181"],
    ]);
    let bk = ensembles(&[&["192.0.2.1:1234", "192.0.2.2:1234", "192.0.2.3:1234"]]);
    let bk_v3 = ensembles(&[&["192.0.2.1:3181", "192.0.2.2:3181", "192.0.2.3:3181"]]);
    // (write quorum, ensemble size, segment first entries, digest type)
    let (crc32, crc32c) = (Some(DigestType::Crc32), Some(DigestType::Crc32c));
    let cases = [
        (
            CLOSED_TWO_SEGMENTS,
            3,
            LedgerState::Closed,
            two_segments.clone(),
            (2, 2, vec![0, 100], crc32c),
        ),
        (
            OPEN,
            3,
            LedgerState::Open,
            ensembles(&[&["127.0.0.1:3181", "127.0.0.2:3181", "127.0.0.3:3181"]]),
            (2, 3, vec![0], crc32c),
        ),
        (
            CLOSED_EMPTY,
            3,
            LedgerState::Closed,
            ensembles(&[&["127.0.0.2:3181"]]),
            (1, 1, vec![0], Some(DigestType::Hmac)),
        ),
        (
            CLOSED_V1,
            1,
            LedgerState::Closed,
            two_segments.clone(),
            (2, 2, vec![0, 5], None),
        ),
        (
            CLOSED_V2,
            2,
            LedgerState::Closed,
            two_segments,
            (2, 2, vec![0, 5], crc32),
        ),
        (
            BK_V1_IN_RECOVERY,
            1,
            LedgerState::InRecovery,
            bk.clone(),
            (2, 3, vec![0], None),
        ),
        (
            BK_V2_IN_RECOVERY,
            2,
            LedgerState::InRecovery,
            bk,
            (2, 3, vec![0], crc32),
        ),
        (
            BK_V3_OPEN,
            3,
            LedgerState::Open,
            bk_v3,
            (2, 3, vec![0], crc32c),
        ),
    ];
    for (encoded, format_version, state, ensembles, sizes) in cases {
        let (write_quorum_size, ensemble_size, segment_first_entries, digest_type) = sizes;
        let expected = LedgerMetadata {
            format_version,
            state,
            ensembles,
            segment_first_entries,
            ensemble_size,
            write_quorum_size,
            digest_type,
        };
        assert_eq!(metadata_parse(&base64(encoded)), Ok(expected), "{encoded}");
    }
}

#[test]
fn only_closed_ledgers_without_us_are_overreplicated() {
    let parse = |encoded: &str| metadata_parse(&base64(encoded)).unwrap();
    // 127.0.0.1:3181 is in the first segment only: a member of the history.
    for encoded in [CLOSED_TWO_SEGMENTS, CLOSED_V1, CLOSED_V2] {
        let metadata = parse(encoded);
        assert!(!metadata.overreplicated_on(US), "{encoded}");
        assert!(
            !metadata.overreplicated_on("127.0.0.3:3181"),
            "last segment"
        );
        assert!(metadata.overreplicated_on("127.0.0.4:3181"));
        // Ids compare as whole strings, as BookKeeper's do.
        assert!(metadata.overreplicated_on("127.0.0.1:31810"));
        assert!(metadata.overreplicated_on("127.0.0.1"));
    }
    assert!(parse(CLOSED_EMPTY).overreplicated_on(US));
    // Open or in recovery: the ensemble may still change, back to us.
    for encoded in [OPEN, BK_V1_IN_RECOVERY, BK_V2_IN_RECOVERY, BK_V3_OPEN] {
        assert!(
            !parse(encoded).overreplicated_on("10.9.9.9:3181"),
            "{encoded}"
        );
    }
    // Closed with no history at all: nothing to judge by.
    let no_history = LedgerMetadata {
        format_version: 3,
        state: LedgerState::Closed,
        ensembles: Vec::new(),
        segment_first_entries: Vec::new(),
        ensemble_size: 2,
        write_quorum_size: 2,
        digest_type: None,
    };
    assert!(!no_history.overreplicated_on(US));
}

/// Version 3 bytes of `format`, as `LedgerMetadataSerDe` frames them.
fn v3(format: &LedgerMetadataFormat) -> Vec<u8> {
    let mut bytes = b"BookieMetadataFormatVersion\t3\n".to_vec();
    format.encode_length_delimited(&mut bytes).unwrap();
    bytes
}

fn format_of(state: Option<i32>, members: &[&[&str]]) -> LedgerMetadataFormat {
    LedgerMetadataFormat {
        quorum_size: Some(2),
        ensemble_size: Some(2),
        length: Some(0),
        last_entry_id: Some(-1),
        state,
        segment: members
            .iter()
            .zip(0_i64..)
            .map(|(members, first)| Segment {
                ensemble_member: members.iter().map(|m| (*m).to_string()).collect(),
                first_entry_id: Some(first * 10),
            })
            .collect(),
        ack_quorum_size: Some(2),
        digest_type: None,
    }
}

#[test]
fn our_encoding_matches_bookkeepers() {
    // The prost types the integration test writes metadata with reproduce BookKeeper's bytes
    // but for the fields they leave out (digest, password, ctime, cToken).
    let format = format_of(
        Some(State::Open as i32),
        &[&["127.0.0.1:3181", "127.0.0.2:3181", "127.0.0.3:3181"]],
    );
    let ours = metadata_parse(&v3(&format)).unwrap();
    // `format_of` says ensemble size 2 and no digest type.
    let open = LedgerMetadata {
        ensemble_size: 2,
        digest_type: None,
        ..metadata_parse(&base64(OPEN)).unwrap()
    };
    assert_eq!(ours, open);
}

#[test]
fn garbage_does_not_parse() {
    let closed = v3(&format_of(
        Some(State::Closed as i32),
        &[&["10.0.0.9:3181"]],
    ));
    assert!(metadata_parse(&closed).unwrap().overreplicated_on(US));
    let mut trailing = closed.clone();
    trailing.push(0);
    let truncated = &closed[..closed.len() - 1];
    let unknown_state = v3(&format_of(Some(4), &[&["10.0.0.9:3181"]]));
    let mut no_length = b"BookieMetadataFormatVersion\t3\n".to_vec();
    format_of(Some(3), &[&["10.0.0.9:3181"]])
        .encode(&mut no_length)
        .unwrap();
    let cases: [(&[u8], MetadataError); 12] = [
        (b"", MetadataError::Header),
        (b"metadata", MetadataError::Header),
        (b"BookieMetadataFormatVersion\t", MetadataError::Header),
        (
            b"BookieMetadataFormatVersion\tfoobar\nblahblah",
            MetadataError::Header,
        ),
        (
            b"BookieMetadataFormatVersion\t123456789123456789\nblahblah",
            MetadataError::Header,
        ),
        (
            b"BookieMetadataFormatVersion\t4\n",
            MetadataError::FormatVersion { version: 4 },
        ),
        (&trailing, MetadataError::Protobuf),
        (truncated, MetadataError::Protobuf),
        // The plain message without its length prefix: the first byte is no length.
        (&no_length, MetadataError::Protobuf),
        (&unknown_state, MetadataError::State),
        (
            b"BookieMetadataFormatVersion\t1\n2\n2\n0\n0\n9\tCLOSED",
            MetadataError::Text { line: 5 },
        ),
        (
            b"BookieMetadataFormatVersion\t2\nstate: CLOSED\nsegment {\n  ensembleMember: \
              \"a\\\"b\"\n}\n",
            MetadataError::Text { line: 4 },
        ),
    ];
    for (bytes, error) in cases {
        assert_eq!(metadata_parse(bytes), Err(error), "{bytes:?}");
    }
    // Version 1 of an open ledger ends with its last segment's newline.
    let open_v1 = b"BookieMetadataFormatVersion\t1\n2\n2\n0\n0\t10.0.0.9:3181\n";
    let parsed = metadata_parse(open_v1).unwrap();
    assert_eq!(parsed.state, LedgerState::Open);
    assert_eq!(parsed.ensembles, ensembles(&[&["10.0.0.9:3181"]]));
    let gap_v1 = b"BookieMetadataFormatVersion\t1\n2\n2\n0\n0\t10.0.0.9:3181\n\n9\tCLOSED";
    assert_eq!(metadata_parse(gap_v1), Err(MetadataError::Text { line: 7 }));
    // Version 2 without a state, with an unclosed block, with a nested one.
    for text in [
        "segment {\n  ensembleMember: \"10.0.0.9:3181\"\n}\n",
        "state: CLOSED\nsegment {\n  ensembleMember: \"10.0.0.9:3181\"\n",
        "state: CLOSED\nsegment {\n  inner {\n  }\n}\n",
        "state: CLOSED\nstate: CLOSED\n",
        "state: GONE\n",
    ] {
        let bytes = format!("BookieMetadataFormatVersion\t2\n{text}");
        assert!(metadata_parse(bytes.as_bytes()).is_err(), "{text}");
    }
    // Random bytes after a version 3 header: decode or refuse, never panic.
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    for length in 0..200 {
        let mut bytes = b"BookieMetadataFormatVersion\t3\n".to_vec();
        for _ in 0..length {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            bytes.push(seed.to_le_bytes()[0]);
        }
        let _ = metadata_parse(&bytes);
    }
}

#[test]
fn underreplication_paths_are_bookkeepers() {
    // ZkLedgerUnderreplicationManager.getUrLedgerZnode and getUrLedgerLockZnode.
    assert_eq!(
        underreplicated_path(ROOT, 0x0000_cafe_beef_feed),
        format!(
            "/ledgers/underreplication/ledgers/0000/cafe/beef/feed/urL{:010}",
            0x0000_cafe_beef_feed_i64
        )
    );
    assert_eq!(
        underreplicated_path(ROOT, 7),
        "/ledgers/underreplication/ledgers/0000/0000/0000/0007/urL0000000007"
    );
    assert_eq!(
        replication_lock_path(ROOT, 7),
        "/ledgers/underreplication/locks/urL0000000007"
    );
}

/// A metadata store of znode data, counting reads, failing at the k-th.
#[derive(Default)]
struct Fake {
    data: BTreeMap<String, Vec<u8>>,
    reads: usize,
    fail_at_read: Option<usize>,
}

impl Fake {
    fn new() -> Fake {
        let mut fake = Fake::default();
        fake.data
            .insert(format!("{ROOT}/LAYOUT"), LAYOUT_HIERARCHICAL.to_vec());
        fake
    }

    fn ledger(&mut self, ledger: i64, bytes: Vec<u8>) {
        let path = ledger_path(ROOT, ledger, form_hybrid(ledger));
        self.data.insert(path, bytes);
    }
}

impl Metadata for Fake {
    async fn data(&mut self, path: &str) -> Result<Option<Vec<u8>>, ReadError> {
        self.reads += 1;
        if self.fail_at_read == Some(self.reads) {
            return Err(ReadError::ZooKeeper {
                operation: "read",
                path: path.to_string(),
                error: zookeeper_client::Error::ConnectionLoss,
            });
        }
        Ok(self.data.get(path).cloned())
    }

    async fn children(&mut self, _path: &str) -> Result<Option<Vec<String>>, ReadError> {
        panic!("the check lists nothing")
    }
}

fn run(fake: &mut Fake, local: &[i64]) -> Result<CheckOutcome, RoundError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let local = local.to_vec();
    runtime.block_on(check(fake, ROOT, US, move || local))
}

const ELSEWHERE: &[&str] = &["10.0.0.8:3181", "10.0.0.9:3181"];
const LONG_ID: i64 = 5_000_000_000;

/// Ledgers 1..=9 and LONG_ID: which are over-replicated, which kept and why.
fn fake_cluster() -> Fake {
    let closed = Some(State::Closed as i32);
    let mut fake = Fake::new();
    // Over-replicated: closed, we are in no ensemble (short and long paths).
    fake.ledger(1, v3(&format_of(closed, &[ELSEWHERE])));
    fake.ledger(LONG_ID, v3(&format_of(closed, &[ELSEWHERE, ELSEWHERE])));
    fake.ledger(2, base64(CLOSED_EMPTY));
    // Kept: we are in the first of two ensembles.
    fake.ledger(
        3,
        v3(&format_of(closed, &[&[US, "10.0.0.8:3181"], ELSEWHERE])),
    );
    // Kept: open, in recovery, no state at all (OPEN by default).
    fake.ledger(4, v3(&format_of(Some(State::Open as i32), &[ELSEWHERE])));
    fake.ledger(
        5,
        v3(&format_of(Some(State::InRecovery as i32), &[ELSEWHERE])),
    );
    fake.ledger(6, v3(&format_of(None, &[ELSEWHERE])));
    // Kept: does not parse. Ledger 7 has no metadata: the round's business.
    fake.ledger(8, b"BookieMetadataFormatVersion\t3\n\xff".to_vec());
    // Kept: over-replicated by its metadata but under replication.
    fake.ledger(9, v3(&format_of(closed, &[ELSEWHERE])));
    fake.data.insert(underreplicated_path(ROOT, 9), Vec::new());
    fake.ledger(10, v3(&format_of(closed, &[ELSEWHERE])));
    fake.data
        .insert(replication_lock_path(ROOT, 10), Vec::new());
    fake
}

#[test]
fn the_check_finds_only_closed_ledgers_without_us_and_not_replicating() {
    let mut fake = fake_cluster();
    let local = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, LONG_ID, -3];
    let outcome = run(&mut fake, &local).unwrap();
    assert_eq!(outcome.overreplicated, vec![1, 2, LONG_ID]);
    assert_eq!(outcome.ledgers_checked, 11, "every non-negative ledger");
    assert_eq!(outcome.nodes_unparsed, 1);
    assert_eq!(outcome.ledgers_replicating, 2);
    // LAYOUT, 11 metadata reads, 2 more (lock, marker) for each of 5 over-replicated by their
    // metadata, and a second metadata read for the 3 found free.
    assert_eq!(fake.reads, 1 + 11 + 2 * 5 + 3);
}

#[test]
fn an_error_at_any_read_ends_the_check() {
    let local = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, LONG_ID];
    let reads = {
        let mut fake = fake_cluster();
        run(&mut fake, &local).unwrap();
        fake.reads
    };
    for fail_at in 1..=reads {
        let mut fake = fake_cluster();
        fake.fail_at_read = Some(fail_at);
        let result = run(&mut fake, &local);
        assert!(
            matches!(result, Err(RoundError::Read(ReadError::ZooKeeper { .. }))),
            "read {fail_at} of {reads}: {result:?}"
        );
    }
    // And an unknown layout checks nothing.
    let mut fake = fake_cluster();
    fake.data.insert(
        format!("{ROOT}/LAYOUT"),
        b"2\norg.apache.bookkeeper.meta.FlatLedgerManagerFactory:1".to_vec(),
    );
    assert!(matches!(
        run(&mut fake, &local),
        Err(RoundError::Layout { .. })
    ));
    assert_eq!(fake.reads, 1);
}

#[test]
fn the_legacy_manager_checks_only_short_ids() {
    let mut fake = fake_cluster();
    fake.data.insert(
        format!("{ROOT}/LAYOUT"),
        b"1\nlegacyhierarchical:1".to_vec(),
    );
    // Its paths are the short form for every id: LONG_ID's znode is not where it looks.
    let long = ledger_path(ROOT, 99_999_999_999, Form::Long);
    fake.data
        .insert(long, fake.data[&ledger_path(ROOT, 1, Form::Short)].clone());
    let outcome = run(&mut fake, &[1, 99_999_999_999]).unwrap();
    assert_eq!(outcome.overreplicated, vec![1]);
    assert_eq!(outcome.ledgers_checked, 1);
}

#[test]
fn a_ledger_is_deleted_only_after_a_full_wait_of_sightings() {
    let wait = Duration::from_millis(1_000);
    let start = Instant::now();
    let at = |ms: u64| start + Duration::from_millis(ms);
    let mut candidates = Candidates::new(wait, start);
    assert!(!candidates.check_due(at(999)));
    assert!(candidates.check_due(at(1_000)));
    // First sightings: nothing deleted.
    assert_eq!(
        candidates.check_apply(at(1_000), &[1, 2, 3]),
        Vec::<i64>::new()
    );
    assert_eq!(candidates.count(), 3);
    assert!(!candidates.check_due(at(1_999)));
    // An early check (not due, but applied anyway) deletes nothing either; 3 is not seen.
    assert_eq!(
        candidates.check_apply(at(1_500), &[1, 2]),
        Vec::<i64>::new()
    );
    // A wait after the first sighting: 1 and 2 go; 4 starts its grace period.
    assert_eq!(candidates.check_apply(at(2_000), &[1, 2, 4]), vec![1, 2]);
    // 3 was missed by one check: seen again, it starts over.
    assert_eq!(
        candidates.check_apply(at(2_600), &[3, 4]),
        Vec::<i64>::new()
    );
    assert_eq!(candidates.check_apply(at(3_000), &[3, 4]), vec![4]);
    assert_eq!(candidates.check_apply(at(3_600), &[3]), vec![3]);
    // Still local after its deletion was sent (a full mailbox): deleted at the next check.
    assert_eq!(candidates.check_apply(at(4_000), &[3]), vec![3]);
    assert_eq!(candidates.check_apply(at(5_000), &[]), Vec::<i64>::new());
    assert_eq!(candidates.count(), 0);
}
