//! Repair from the replicas (docs/scrub.md, "Repair"), three ringlog bookies and a real
//! ZooKeeper: the ledger's metadata (E3/W3, CRC32C digests) names the three; every bookie holds
//! every entry. A byte flipped in one bookie's sealed segment is found by its scrubber and the
//! entry repaired from another bookie, intact across a restart; the same entry damaged on all
//! three leaves no good copy, and each bookie marks the ledger under-replicated, as
//! BookKeeper's Auditor would, naming itself as the replica. Bookies that take only TLS
//! clients with an authorized role repair from each other over TLS, each presenting its own
//! certificate.

use crate::gc::{ledger_znode, underreplicated_znode, LAYOUT_HIERARCHICAL};
use crate::registration::{free_port, root, zk_args, zookeeper, Zk};
use crate::support::{
    body, http_get, metric, segment_entry_records, uring_available, wait_until, Reply, Server,
    TestDir, KEY,
};
use crate::tls::Certificates;
use prost::Message;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::Duration;
use wire::code;
use wire::ledger_metadata::{LedgerMetadataFormat, Segment, State};
use zookeeper_client::CreateMode;

const LEDGER: i64 = 9;
const ENTRIES: i64 = 12_000;
/// In a sealed segment on every bookie (about 5,000 entries fill a 1 MiB segment).
const DAMAGED_ENTRY: i64 = 3_000;
const TIMEOUT: Duration = Duration::from_secs(60);

/// Version 3 metadata: E3/W3/A2 over `members`, CRC32C digests, open.
fn metadata(members: &[String]) -> Vec<u8> {
    let format = LedgerMetadataFormat {
        quorum_size: Some(3),
        ensemble_size: Some(3),
        length: Some(0),
        last_entry_id: Some(-1),
        state: Some(State::Open as i32),
        segment: vec![Segment {
            ensemble_member: members.to_vec(),
            first_entry_id: Some(0),
        }],
        ack_quorum_size: Some(2),
        digest_type: Some(wire::ledger_metadata::DigestType::Crc32c as i32),
    };
    let mut bytes = b"BookieMetadataFormatVersion\t3\n".to_vec();
    format.encode_length_delimited(&mut bytes).unwrap();
    bytes
}

/// A bookie of the cluster: its id (`127.0.0.1:port`, the address the others reach it at)
/// and its flags.
struct Bookie {
    id: String,
    dir: TestDir,
}

impl Bookie {
    fn new(name: &str) -> Bookie {
        Bookie {
            id: format!("127.0.0.1:{}", free_port()),
            dir: TestDir::new(name),
        }
    }

    fn start(&self, address: &str, root: &str) -> Server {
        self.start_scrubbing(address, root, "64")
    }

    /// Started with `--scrub-rate-mib rate` ("0": no scrubber).
    fn start_scrubbing(&self, address: &str, root: &str, rate: &str) -> Server {
        self.start_with(address, root, rate, &[])
    }

    /// Started with `--scrub-rate-mib rate` and `more` flags.
    fn start_with(&self, address: &str, root: &str, rate: &str, more: &[&str]) -> Server {
        let mut extra = vec![
            "--listen",
            self.id.as_str(),
            "--advertised-address",
            self.id.as_str(),
            "--segment-size",
            "1048576",
            "--sort-sealed-segments",
            "false",
            "--scrub-cycle-hours",
            "0.0001",
            "--scrub-rate-mib",
            rate,
            "--gc-interval-ms",
            "0",
        ];
        extra.extend_from_slice(more);
        Server::start(&self.dir.0, 1, &zk_args(address, root, &extra))
    }
}

/// Every entry, pipelined, acked.
fn write_all(server: &Server) {
    let mut client = server.connect();
    for start in (0..ENTRIES).step_by(500) {
        for entry in start..start + 500 {
            client.send_add(0, &KEY, LEDGER, entry);
        }
        for _ in 0..500 {
            let reply = client.recv();
            assert!(
                matches!(
                    reply,
                    Reply::Add {
                        code: code::EOK,
                        ..
                    }
                ),
                "{reply:?}"
            );
        }
    }
}

fn metric_of(server: &Server, name: &str) -> f64 {
    let (_, text) = http_get(server.http.unwrap(), "/metrics");
    metric(&text, name).unwrap_or(0.0)
}

/// Flips one payload byte of `entry`'s record in whichever sealed segment holds it (every
/// segment file but the newest, the one being written).
fn damage(dir: &Path, entry: i64) {
    let journal = dir.join("shard-0");
    let mut segments: Vec<_> = std::fs::read_dir(&journal)
        .unwrap()
        .map(|item| item.unwrap().path())
        .filter(|path| {
            path.extension()
                .is_some_and(|extension| extension == "segment")
        })
        .collect();
    segments.sort();
    segments.pop();
    for path in segments {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        let mut image = vec![0u8; usize::try_from(file.metadata().unwrap().len()).unwrap()];
        file.read_exact_at(&mut image, 0).unwrap();
        let found = segment_entry_records(&image)
            .into_iter()
            .find(|&(_, _, found)| found == entry);
        if let Some((position, _, _)) = found {
            let at = position + 64 + 40;
            file.write_all_at(&[image[at] ^ 0x10], u64::try_from(at).unwrap())
                .unwrap();
            file.sync_all().unwrap();
            return;
        }
    }
    panic!(
        "entry {entry} is in no sealed segment of {}",
        journal.display()
    );
}

/// ZooKeeper, a root with a hierarchical layout and the ledger's metadata, three bookies
/// holding every entry, each done with a clean scrub cycle.
fn cluster(test: &str) -> Option<(Zk, String, Vec<Bookie>, Vec<Server>)> {
    let address = zookeeper()?;
    if !uring_available() {
        return None;
    }
    let root = root(test);
    let zk = Zk::connect(address);
    zk.create(
        &format!("{root}/LAYOUT"),
        LAYOUT_HIERARCHICAL,
        CreateMode::Persistent,
    );
    let bookies: Vec<Bookie> = (0..3)
        .map(|index| Bookie::new(&format!("{test}-{index}")))
        .collect();
    let ids: Vec<String> = bookies.iter().map(|bookie| bookie.id.clone()).collect();
    zk.create(
        &ledger_znode(&root, LEDGER),
        &metadata(&ids),
        CreateMode::Persistent,
    );
    let servers: Vec<Server> = bookies
        .iter()
        .map(|bookie| bookie.start(address, &root))
        .collect();
    for server in &servers {
        write_all(server);
    }
    for server in &servers {
        wait_until("a clean scrub cycle", TIMEOUT, || {
            metric_of(server, "ringlog_scrub_cycles_total") >= 1.0
        });
        assert_eq!(metric_of(server, "ringlog_scrub_damage_records_total"), 0.0);
    }
    Some((zk, root, bookies, servers))
}

#[test]
fn a_damaged_entry_is_repaired_from_another_bookie_and_stays_repaired_across_a_restart() {
    let Some((_zk, root, bookies, mut servers)) = cluster("repair-copy") else {
        return;
    };
    let entry = DAMAGED_ENTRY;
    damage(&bookies[0].dir.0, entry);
    wait_until("the repair written", TIMEOUT, || {
        metric_of(&servers[0], "ringlog_repair_written_total") >= 1.0
    });
    assert_eq!(metric_of(&servers[0], "ringlog_repair_copied_total"), 1.0);
    assert_eq!(metric_of(&servers[0], "ringlog_repair_marked_total"), 0.0);
    let mut client = servers[0].connect();
    let (status, _, read) = client.read(0, LEDGER, entry, None);
    assert_eq!((status, read == body(LEDGER, entry)), (code::EOK, true));

    // The other two stopped, the repaired bookie restarted alone: every entry reads back
    // from it, the repaired one too.
    for server in servers.drain(1..) {
        assert!(server.terminate().status.success());
    }
    let exited = servers.pop().unwrap().terminate();
    assert!(exited.status.success(), "{:?}", exited.stderr);
    assert!(
        exited
            .stdout
            .iter()
            .chain(&exited.stderr)
            .any(|line| line.contains(&format!("repaired ledger {LEDGER} entry {entry}"))),
        "{:?}",
        exited.stdout
    );
    let address = zookeeper().unwrap();
    let server = bookies[0].start(address, &root);
    let mut client = server.connect();
    for entry in 0..ENTRIES {
        let (status, _, read) = client.read(0, LEDGER, entry, None);
        assert_eq!(status, code::EOK, "entry {entry}");
        assert_eq!(read, body(LEDGER, entry), "entry {entry}");
    }
}

#[test]
fn an_entry_damaged_on_every_bookie_marks_the_ledger_under_replicated() {
    let Some((zk, root, bookies, servers)) = cluster("repair-mark") else {
        return;
    };
    // The same entry on all three, with all three stopped, so none repairs from another
    // before the last is damaged.
    for server in servers {
        assert!(server.terminate().status.success());
    }
    for bookie in &bookies {
        damage(&bookie.dir.0, DAMAGED_ENTRY);
    }
    let address = zookeeper().unwrap();
    let servers: Vec<Server> = bookies
        .iter()
        .map(|bookie| bookie.start(address, &root))
        .collect();
    for server in &servers {
        wait_until("the ledger marked", TIMEOUT, || {
            metric_of(server, "ringlog_repair_marked_total") >= 1.0
        });
        let mut client = server.connect();
        assert_eq!(client.read(0, LEDGER, DAMAGED_ENTRY, None).0, code::EIO);
    }
    let text = String::from_utf8(zk.data(&underreplicated_znode(&root, LEDGER))).unwrap();
    for bookie in &bookies {
        assert!(
            text.contains(&format!("replica: \"{}\"", bookie.id)),
            "{text}"
        );
    }
}

#[test]
fn a_damaged_entry_left_unrepaired_is_repaired_after_a_restart_without_waiting_for_the_scrubber() {
    let Some((_zk, root, bookies, mut servers)) = cluster("repair-resume") else {
        return;
    };
    // The other two bookies down: the repair finds no copy (and marks the ledger).
    for server in servers.drain(1..) {
        assert!(server.terminate().status.success());
    }
    damage(&bookies[0].dir.0, DAMAGED_ENTRY);
    wait_until("the repair attempted", TIMEOUT, || {
        metric_of(&servers[0], "ringlog_repair_marked_total") >= 1.0
    });
    assert_eq!(metric_of(&servers[0], "ringlog_repair_written_total"), 0.0);
    assert!(servers.pop().unwrap().terminate().status.success());
    // Everyone back, the damaged bookie with no scrubber: only the damaged set in its
    // checkpoint can ask for the repair now.
    let address = zookeeper().unwrap();
    let _others: Vec<Server> = bookies[1..]
        .iter()
        .map(|bookie| bookie.start(address, &root))
        .collect();
    let server = bookies[0].start_scrubbing(address, &root, "0");
    wait_until("the repair written after the restart", TIMEOUT, || {
        metric_of(&server, "ringlog_repair_written_total") >= 1.0
    });
    assert_eq!(metric_of(&server, "ringlog_scrub_bytes_total"), 0.0);
    let mut client = server.connect();
    let (status, _, read) = client.read(0, LEDGER, DAMAGED_ENTRY, None);
    assert_eq!(
        (status, read == body(LEDGER, DAMAGED_ENTRY)),
        (code::EOK, true)
    );
}

#[test]
fn entries_a_damaged_index_page_made_unreadable_are_repaired() {
    let Some((_zk, _root, bookies, servers)) = cluster("repair-index") else {
        return;
    };
    // A bit of the last slot page of sealed segment 1's index, under the running bookie.
    let path = bookies[0].dir.0.join("shard-0").join("0000000001.index");
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .unwrap();
    let size = file.metadata().unwrap().len();
    let at = size - 4096 + 100;
    let mut byte = [0u8];
    file.read_exact_at(&mut byte, at).unwrap();
    file.write_all_at(&[byte[0] ^ 0x04], at).unwrap();
    file.sync_all().unwrap();
    wait_until("the page's entries repaired", TIMEOUT, || {
        let requested = metric_of(&servers[0], "ringlog_repair_requested_total");
        requested >= 1.0 && metric_of(&servers[0], "ringlog_repair_written_total") >= requested
    });
    assert_eq!(metric_of(&servers[0], "ringlog_repair_marked_total"), 0.0);
    // Every entry reads back from the damaged bookie, those of the page from their new copies.
    let mut client = servers[0].connect();
    for entry in 0..ENTRIES {
        let (status, _, read) = client.read(0, LEDGER, entry, None);
        assert_eq!(status, code::EOK, "entry {entry}");
        assert_eq!(read, body(LEDGER, entry), "entry {entry}");
    }
}

#[test]
fn bookies_that_require_tls_and_client_certificates_repair_from_each_other_over_tls() {
    let Some((_zk, root, bookies, servers)) = cluster("repair-tls") else {
        return;
    };
    for server in servers {
        assert!(server.terminate().status.success());
    }
    damage(&bookies[0].dir.0, DAMAGED_ENTRY);
    // Every bookie now serves TLS only, to clients whose certificate has the role "bookie":
    // the repair can only be read over TLS, with the bookie's own certificate as the client's.
    let certs = Certificates::make(&bookies[0].dir.0.join("certs"));
    let (cert, key, trust) = (
        certs.path("bookie-peer.pem"),
        certs.path("bookie-peer.key"),
        certs.path("ca.pem"),
    );
    let tls = [
        "--tls-cert",
        cert.as_str(),
        "--tls-key",
        key.as_str(),
        "--tls-trust",
        trust.as_str(),
        "--tls-client-auth",
        "true",
        "--tls-authorized-roles",
        "bookie",
        "--tls-required",
        "true",
    ];
    let address = zookeeper().unwrap();
    // The damaged one last, so its first scrub finds the others serving.
    let mut servers: Vec<Server> = bookies[1..]
        .iter()
        .map(|bookie| bookie.start_with(address, &root, "64", &tls))
        .collect();
    servers.insert(0, bookies[0].start_with(address, &root, "64", &tls));
    wait_until("the repair written", TIMEOUT, || {
        metric_of(&servers[0], "ringlog_repair_written_total") >= 1.0
    });
    assert_eq!(metric_of(&servers[0], "ringlog_repair_copied_total"), 1.0);
    assert_eq!(metric_of(&servers[0], "ringlog_repair_marked_total"), 0.0);
    // The peers did refuse plaintext.
    let mut plaintext = servers[1].connect();
    assert_eq!(plaintext.read(0, LEDGER, DAMAGED_ENTRY, None).0, code::EUA);
    for server in servers {
        assert!(server.terminate().status.success());
    }
    // Restarted alone and in plaintext, the repaired bookie serves the entry intact.
    let server = bookies[0].start(address, &root);
    let mut client = server.connect();
    let (status, _, read) = client.read(0, LEDGER, DAMAGED_ENTRY, None);
    assert_eq!(
        (status, read == body(LEDGER, DAMAGED_ENTRY)),
        (code::EOK, true)
    );
}
