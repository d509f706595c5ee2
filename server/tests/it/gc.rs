//! Garbage collection against a real ZooKeeper and a real server (docs/gc.md): ledgers whose
//! metadata znodes are deleted (both hierarchical path forms) answer NoLedger, kept ones
//! read back, whole segments of deleted ledgers leave the disk; under a layout the collector
//! does not understand it logs once and deletes nothing. Over-replicated ledgers (closed, in
//! no ensemble as this bookie) go one wait period after their metadata says so; open ones,
//! ones that name this bookie and ones under replication stay.

use crate::registration::{free_port, root, zk_args, zookeeper, Zk};
use crate::support::{uring_available, Client, Reply, Server, TestDir, KEY};
use prost::Message;
use std::path::Path;
use std::time::{Duration, Instant};
use wire::code;
use wire::ledger_metadata::{LedgerMetadataFormat, Segment, State};
use zookeeper_client::CreateMode;

pub(crate) const LAYOUT_HIERARCHICAL: &[u8] =
    b"2\norg.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory:1";
const GC_INTERVAL_MS: &str = "500";
/// 1 MiB segments: each ledger below fills three, so whole segments belong to one ledger.
const SEGMENT_SIZE: &str = "1048576";
const SEGMENT_BYTES: u64 = 1 << 20;
const ENTRY_PAYLOAD_SIZE: usize = 64 * 1024;
const ENTRIES_PER_LEDGER: i64 = 48;
/// Well past two GC intervals, for a slow machine.
const GC_TIMEOUT: Duration = Duration::from_secs(30);

/// Short-form ids (below 2^31 - 1) and long-form ids, in the order they are written.
const LEDGERS: [(i64, bool); 6] = [
    // (ledger, kept)
    (3, true),
    (1, false),
    (2, false),
    (10, true),
    (5_000_000_000, false),
    (5_000_000_001, true),
];

/// The metadata path BookKeeper's hierarchical manager uses (`util/StringUtils.java`,
/// `getHybridHierarchicalLedgerPath`), written independently of the server's code.
pub(crate) fn ledger_znode(root: &str, ledger: i64) -> String {
    if ledger < i64::from(i32::MAX) {
        let id = format!("{ledger:010}");
        format!("{root}/{}/{}/L{}", &id[..2], &id[2..6], &id[6..])
    } else {
        let id = format!("{ledger:019}");
        format!(
            "{root}/{}/{}/{}/{}/L{}",
            &id[..3],
            &id[3..7],
            &id[7..11],
            &id[11..15],
            &id[15..]
        )
    }
}

fn entry_body(ledger: i64, entry: i64) -> Vec<u8> {
    let payload: Vec<u8> = (0..ENTRY_PAYLOAD_SIZE)
        .map(|i| u8::try_from((i as i64 * 7 + ledger + entry) % 251).unwrap())
        .collect();
    let length = i64::try_from(ENTRY_PAYLOAD_SIZE).unwrap() * (entry + 1);
    let mut out = Vec::new();
    wire::encode_entry_body_crc32c(&mut out, ledger, entry, entry - 1, length, &payload);
    out
}

/// Writes a ledger's entries, pipelined, and waits for every ack.
fn ledger_write(client: &mut Client, ledger: i64) {
    for entry in 0..ENTRIES_PER_LEDGER {
        let mut frame = Vec::new();
        wire::client::encode_add_request(&mut frame, 0, &KEY, &entry_body(ledger, entry));
        client.send(&frame);
    }
    for _ in 0..ENTRIES_PER_LEDGER {
        match client.recv() {
            Reply::Add {
                code, ledger: l, ..
            } if l == ledger => assert_eq!(code, code::EOK),
            other => panic!("unexpected reply to an add of {ledger}: {other:?}"),
        }
    }
}

/// Bytes of every file under `dir`, while the server may be removing some of them.
fn directory_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for item in std::fs::read_dir(&dir).unwrap() {
            let item = item.unwrap();
            let metadata = match item.metadata() {
                Ok(metadata) => metadata,
                // Listed, then removed (a dead segment, an old checkpoint): no bytes.
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => continue,
                Err(error) => panic!("{}: {error}", item.path().display()),
            };
            if metadata.is_dir() {
                pending.push(item.path());
            } else {
                total += metadata.len();
            }
        }
    }
    total
}

fn wait_until(what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + GC_TIMEOUT;
    while !ok() {
        assert!(Instant::now() < deadline, "{what} within {GC_TIMEOUT:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn ledgers_whose_metadata_is_gone_are_deleted_and_their_segments_removed() {
    let Some(address) = zookeeper() else {
        return;
    };
    if !uring_available() {
        return;
    }
    let root = root("gc");
    let zk = Zk::connect(address);
    let persistent = CreateMode::Persistent;
    zk.create(&format!("{root}/LAYOUT"), LAYOUT_HIERARCHICAL, persistent);
    // BookKeeper writes the metadata before the first add.
    for (ledger, _) in LEDGERS {
        zk.create(
            &ledger_znode(&root, ledger),
            b"metadata",
            CreateMode::Persistent,
        );
    }
    let dir = TestDir::new("gc-collect");
    let extra = [
        "--gc-interval-ms",
        GC_INTERVAL_MS,
        "--segment-size",
        SEGMENT_SIZE,
    ];
    let server = Server::start(&dir.0, 1, &zk_args(address, &root, &extra));
    let mut client = server.connect();
    for (ledger, _) in LEDGERS {
        ledger_write(&mut client, ledger);
    }
    // Rounds have run meanwhile and deleted nothing: every ledger has its metadata.
    std::thread::sleep(Duration::from_millis(1_500));
    for (ledger, _) in LEDGERS {
        let (status, _, body) = client.read(0, ledger, 0, None);
        assert_eq!(
            (status, body),
            (code::EOK, entry_body(ledger, 0)),
            "{ledger}"
        );
    }
    let bytes_before = directory_bytes(&dir.0);
    for (ledger, kept) in LEDGERS {
        if !kept {
            zk.delete(&ledger_znode(&root, ledger));
        }
    }
    wait_until("deleted ledgers answer NoLedger", || {
        LEDGERS
            .iter()
            .filter(|(_, kept)| !kept)
            .all(|&(ledger, _)| client.read(0, ledger, 0, None).0 == code::ENOLEDGER)
    });
    for (ledger, kept) in LEDGERS {
        let last = ENTRIES_PER_LEDGER - 1;
        let (status, _, body) = client.read(0, ledger, last, None);
        if kept {
            assert_eq!(
                (status, body),
                (code::EOK, entry_body(ledger, last)),
                "{ledger}"
            );
        } else {
            assert_eq!(status, code::ENOLEDGER, "{ledger}");
        }
    }
    // Ledgers 1 and 2 (written one after the other) fill about six segments, 5000000000
    // about three: at least five segments hold nothing else.
    let expected = bytes_before - 5 * SEGMENT_BYTES;
    wait_until("the journal directory shrinks by five segments", || {
        directory_bytes(&dir.0) <= expected
    });
    let bytes_after = directory_bytes(&dir.0);
    let exited = server.terminate();
    assert!(exited.status.success(), "{:?}", exited.stderr);
    assert_eq!(exited.summary_total("ledgers_deleted"), 3);
    assert!(exited.summary_total("segments_removed") >= 5);
    assert!(
        exited
            .stdout
            .iter()
            .any(|line| line.contains("gc: deleting 3 ledgers")),
        "{:?}",
        exited.stdout
    );
    println!("journal directory: {bytes_before} bytes before, {bytes_after} after");
}

#[test]
fn an_unknown_layout_is_logged_once_and_nothing_is_deleted() {
    let Some(address) = zookeeper() else {
        return;
    };
    if !uring_available() {
        return;
    }
    let root = root("gc-flat");
    let zk = Zk::connect(address);
    let flat = b"2\norg.apache.bookkeeper.meta.FlatLedgerManagerFactory:1";
    zk.create(&format!("{root}/LAYOUT"), flat, CreateMode::Persistent);
    let dir = TestDir::new("gc-flat");
    let extra = ["--gc-interval-ms", "200"];
    let server = Server::start(&dir.0, 1, &zk_args(address, &root, &extra));
    let mut client = server.connect();
    // No metadata for ledger 7 anywhere: under a hierarchical layout it would be deleted.
    assert_eq!(client.add(0, &KEY, 7, 0), code::EOK);
    std::thread::sleep(Duration::from_millis(2_000));
    let (status, _, _) = client.read(0, 7, 0, None);
    assert_eq!(status, code::EOK);
    let exited = server.terminate();
    assert!(exited.status.success());
    assert_eq!(exited.summary_total("ledgers_deleted"), 0);
    let warnings: Vec<&String> = exited
        .stderr
        .iter()
        .filter(|line| line.contains("gc:"))
        .collect();
    assert_eq!(warnings.len(), 1, "{:?}", exited.stderr);
    assert!(
        warnings[0].contains("FlatLedgerManagerFactory"),
        "{warnings:?}"
    );
}

#[test]
fn zookeeper_errors_delete_nothing_and_the_bookie_keeps_serving() {
    let Some(address) = zookeeper() else {
        return;
    };
    if !uring_available() {
        return;
    }
    // The root's ACL lets nobody list it: every round fails at the listing, after the
    // snapshot and the LAYOUT read, and must delete nothing.
    let root = root("gc-denied");
    let zk = Zk::connect(address);
    zk.create(
        &format!("{root}/LAYOUT"),
        LAYOUT_HIERARCHICAL,
        CreateMode::Persistent,
    );
    let dir = TestDir::new("gc-denied");
    let extra = ["--gc-interval-ms", "200"];
    let server = Server::start(&dir.0, 1, &zk_args(address, &root, &extra));
    zk.acl_deny_read(&root);
    let mut client = server.connect();
    assert_eq!(client.add(0, &KEY, 8, 0), code::EOK);
    std::thread::sleep(Duration::from_millis(2_000));
    assert_eq!(client.read(0, 8, 0, None).0, code::EOK);
    assert_eq!(client.add(0, &KEY, 8, 1), code::EOK);
    let exited = server.terminate();
    assert_eq!(exited.summary_total("ledgers_deleted"), 0);
    assert!(
        exited
            .stderr
            .iter()
            .any(|line| line.contains("gc:") && line.contains("list")),
        "{:?}",
        exited.stderr
    );
}

/// Version 3 ledger metadata (`LedgerMetadataSerDe`: header line, then the message
/// length-delimited) of a ledger in `state` with one ensemble of `members`.
fn metadata_v3(state: State, members: &[&str]) -> Vec<u8> {
    let format = LedgerMetadataFormat {
        quorum_size: Some(2),
        ensemble_size: Some(2),
        length: Some(0),
        last_entry_id: Some(if state == State::Closed { 3 } else { -1 }),
        state: Some(state as i32),
        segment: vec![Segment {
            ensemble_member: members.iter().map(|m| (*m).to_string()).collect(),
            first_entry_id: Some(0),
        }],
        ack_quorum_size: Some(2),
        digest_type: None,
    };
    let mut bytes = b"BookieMetadataFormatVersion\t3\n".to_vec();
    format.encode_length_delimited(&mut bytes).unwrap();
    bytes
}

/// BookKeeper's under-replication marker of `ledger` (`ZkLedgerUnderreplicationManager`:
/// the id's four 16-bit parts in hex, then `urL` and ten digits).
pub(crate) fn underreplicated_znode(root: &str, ledger: i64) -> String {
    let parts: Vec<String> = [48, 32, 16, 0]
        .iter()
        .map(|shift| format!("{:04x}", (ledger >> shift) & 0xffff))
        .collect();
    format!(
        "{root}/underreplication/ledgers/{}/urL{ledger:010}",
        parts.join("/")
    )
}

const OVERREPLICATED_WAIT_MS: u64 = 1_000;

#[test]
fn overreplicated_ledgers_are_deleted_after_the_wait_and_the_others_kept() {
    let Some(address) = zookeeper() else {
        return;
    };
    if !uring_available() {
        return;
    }
    let root = root("gc-overrep");
    let zk = Zk::connect(address);
    let persistent = CreateMode::Persistent;
    zk.create(&format!("{root}/LAYOUT"), LAYOUT_HIERARCHICAL, persistent);
    // The id the bookie registers as, which ensembles name it by.
    let us = format!("127.0.0.1:{}", free_port());
    let other = "10.0.0.8:3181";
    let elsewhere = ["10.0.0.9:3181", other];
    // 21: closed with us, rewritten below without us (re-replication moved it): deleted.
    // 22: closed with us: kept. 23: open without us: kept (its ensemble may change back).
    // 24: closed without us but marked under-replicated: kept.
    let ledgers: [(i64, Vec<u8>); 4] = [
        (21, metadata_v3(State::Closed, &[&us, other])),
        (22, metadata_v3(State::Closed, &[other, &us])),
        (23, metadata_v3(State::Open, &elsewhere)),
        (24, metadata_v3(State::Closed, &elsewhere)),
    ];
    for (ledger, metadata) in &ledgers {
        zk.create(&ledger_znode(&root, *ledger), metadata, persistent);
    }
    zk.create(&underreplicated_znode(&root, 24), b"", persistent);
    let dir = TestDir::new("gc-overrep");
    let wait = OVERREPLICATED_WAIT_MS.to_string();
    let extra = [
        "--gc-interval-ms",
        "200",
        "--gc-overreplicated-wait-ms",
        wait.as_str(),
        "--advertised-address",
        us.as_str(),
    ];
    let server = Server::start(&dir.0, 1, &zk_args(address, &root, &extra));
    let mut client = server.connect();
    for (ledger, _) in &ledgers {
        for entry in 0..4 {
            assert_eq!(client.add(0, &KEY, *ledger, entry), code::EOK);
        }
    }
    // Several checks, each past the wait: nothing is over-replicated yet but 24, which is
    // under replication.
    std::thread::sleep(Duration::from_millis(3 * OVERREPLICATED_WAIT_MS));
    for (ledger, _) in &ledgers {
        assert_eq!(client.read(0, *ledger, 3, None).0, code::EOK, "{ledger}");
    }
    zk.set(
        &ledger_znode(&root, 21),
        &metadata_v3(State::Closed, &elsewhere),
    );
    let rewritten = Instant::now();
    wait_until("the over-replicated ledger answers NoLedger", || {
        client.read(0, 21, 0, None).0 == code::ENOLEDGER
    });
    let waited = rewritten.elapsed();
    // Seen over-replicated by one check, deleted by one a full wait later.
    assert!(
        waited >= Duration::from_millis(OVERREPLICATED_WAIT_MS),
        "deleted {waited:?} after the rewrite"
    );
    for ledger in [22, 23, 24] {
        assert_eq!(client.read(0, ledger, 3, None).0, code::EOK, "{ledger}");
    }
    let exited = server.terminate();
    assert!(exited.status.success(), "{:?}", exited.stderr);
    assert_eq!(exited.summary_total("ledgers_deleted"), 1);
    let lines: Vec<&String> = exited
        .stdout
        .iter()
        .filter(|line| line.contains("over-replicated"))
        .collect();
    assert_eq!(lines.len(), 1, "{:?}", exited.stdout);
    assert!(lines[0].contains("deleting 1 over-replicated"), "{lines:?}");
    println!("deleted {waited:?} after the rewrite; {}", lines[0]);
}

#[test]
fn a_check_that_cannot_read_deletes_nothing_and_says_so_once() {
    let Some(address) = zookeeper() else {
        return;
    };
    if !uring_available() {
        return;
    }
    let root = root("gc-overrep-denied");
    let zk = Zk::connect(address);
    let persistent = CreateMode::Persistent;
    zk.create(&format!("{root}/LAYOUT"), LAYOUT_HIERARCHICAL, persistent);
    let us = format!("127.0.0.1:{}", free_port());
    // Over-replicated by its metadata from the start, but its replication lock cannot be
    // read (NoAuth): every check fails at that read and must delete nothing.
    let metadata = metadata_v3(State::Closed, &["10.0.0.9:3181", "10.0.0.8:3181"]);
    zk.create(&ledger_znode(&root, 31), &metadata, persistent);
    let lock = format!("{root}/underreplication/locks/urL{:010}", 31);
    zk.create(&lock, b"", persistent);
    zk.acl_deny_read(&lock);
    let dir = TestDir::new("gc-overrep-denied");
    let extra = [
        "--gc-interval-ms",
        "200",
        "--gc-overreplicated-wait-ms",
        "500",
        "--advertised-address",
        us.as_str(),
    ];
    let server = Server::start(&dir.0, 1, &zk_args(address, &root, &extra));
    let mut client = server.connect();
    assert_eq!(client.add(0, &KEY, 31, 0), code::EOK);
    // Six waits: six failed checks.
    std::thread::sleep(Duration::from_millis(3_000));
    assert_eq!(client.read(0, 31, 0, None).0, code::EOK);
    let exited = server.terminate();
    assert!(exited.status.success(), "{:?}", exited.stderr);
    assert_eq!(exited.summary_total("ledgers_deleted"), 0);
    let warnings: Vec<&String> = exited
        .stderr
        .iter()
        .filter(|line| line.contains("over-replication check"))
        .collect();
    assert_eq!(warnings.len(), 1, "{:?}", exited.stderr);
    assert!(warnings[0].contains(&lock), "{warnings:?}");
}
