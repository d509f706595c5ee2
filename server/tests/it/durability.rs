//! Acked entries read back byte for byte: after SIGKILL and restart, and after a graceful
//! SIGTERM that lands while adds are in flight.

use crate::support::{body, uring_available, Client, Reply, Server, TestDir, KEY};
use std::collections::BTreeMap;
use std::time::Duration;
use wire::code;

const CONNECTIONS: usize = 4;
const LEDGERS: i64 = 8;
const ENTRIES_PER_LEDGER: i64 = 1250;
/// Requests sent before their responses are read, per connection.
const WINDOW: usize = 256;

/// Ledger ids far from other tests' and not consecutive, so they hash apart.
fn ledger_id(index: i64) -> i64 {
    1_000_000 + index * 7919
}

/// Adds every entry of the ledgers that map to each connection (ledger i -> connection
/// i % CONNECTIONS, as the Java client's signSafeMod), pipelined, and checks every ack.
fn write_all(clients: &mut [Client]) {
    for (index, client) in clients.iter_mut().enumerate() {
        let ledgers: Vec<i64> = (0..LEDGERS)
            .filter(|ledger| usize::try_from(*ledger).unwrap() % CONNECTIONS == index)
            .map(ledger_id)
            .collect();
        let requests: Vec<(i64, i64)> = (0..ENTRIES_PER_LEDGER)
            .flat_map(|entry| ledgers.iter().map(move |&ledger| (ledger, entry)))
            .collect();
        for window in requests.chunks(WINDOW) {
            for &(ledger, entry) in window {
                client.send_add(0, &KEY, ledger, entry);
            }
            for _ in window {
                match client.recv() {
                    Reply::Add {
                        code: code::EOK, ..
                    } => {}
                    other => panic!("add not acknowledged: {other:?}"),
                }
            }
        }
    }
}

/// Reads everything back through a connection other than the writer's (so half the reads
/// cross shards), plus entry -1 and one batch read per ledger.
fn read_all(clients: &mut [Client]) {
    for ledger_index in 0..LEDGERS {
        let ledger = ledger_id(ledger_index);
        let client = &mut clients[(usize::try_from(ledger_index).unwrap() + 1) % CONNECTIONS];
        for window in (0..ENTRIES_PER_LEDGER).collect::<Vec<_>>().chunks(WINDOW) {
            for &entry in window {
                client.send_read(0, ledger, entry, None);
            }
            let mut replies = BTreeMap::new();
            for _ in window {
                match client.recv() {
                    Reply::Read {
                        code: code::EOK,
                        ledger: l,
                        entry,
                        body,
                        ..
                    } if l == ledger => {
                        replies.insert(entry, body);
                    }
                    other => panic!("read failed: {other:?}"),
                }
            }
            for &entry in window {
                assert_eq!(
                    replies[&entry],
                    body(ledger, entry),
                    "ledger {ledger} entry {entry}"
                );
            }
        }
        let (status, entry, last) = client.read(0, ledger, -1, None);
        assert_eq!((status, entry), (code::EOK, -1), "entry -1 echoes -1");
        assert_eq!(last, body(ledger, ENTRIES_PER_LEDGER - 1));
        let (status, entries) = client.batch_read(ledger, 10, 100, 1024 * 1024);
        assert_eq!(status, code::EOK);
        assert_eq!(entries.len(), 100);
        for (offset, entry) in entries.iter().enumerate() {
            assert_eq!(*entry, body(ledger, 10 + i64::try_from(offset).unwrap()));
        }
    }
}

fn connect_all(server: &Server) -> Vec<Client> {
    (0..CONNECTIONS).map(|_| server.connect()).collect()
}

#[test]
fn ten_thousand_entries_survive_sigkill() {
    if !uring_available() {
        return;
    }
    let dir = TestDir::new("durability-kill");
    let server = Server::start(&dir.0, 2, &[]);
    let mut clients = connect_all(&server);
    write_all(&mut clients);
    read_all(&mut clients);
    drop(clients);
    let exited = server.kill();
    assert!(!exited.status.success(), "SIGKILL is not a clean exit");
    let server = Server::start(&dir.0, 2, &[]);
    let mut clients = connect_all(&server);
    read_all(&mut clients);
    // The recovered ledgers keep accepting adds after the restart.
    let ledger = ledger_id(0);
    assert_eq!(
        clients[0].add(0, &KEY, ledger, ENTRIES_PER_LEDGER),
        code::EOK
    );
    let (status, _, last) = clients[1].read(0, ledger, -1, None);
    assert_eq!(
        (status, last),
        (code::EOK, body(ledger, ENTRIES_PER_LEDGER))
    );
    let exited = server.terminate();
    assert!(
        exited.status.success(),
        "{:?} {:?}",
        exited.status,
        exited.stderr
    );
}

/// Pipelines adds until the server closes the connection; returns the acked entries.
fn add_until_closed(mut client: Client, ledger: i64) -> Vec<i64> {
    let mut acked = Vec::new();
    let mut entry = 0;
    loop {
        let mut sent = 0;
        while sent < 64 && client.try_send_add(0, &KEY, ledger, entry) {
            entry += 1;
            sent += 1;
        }
        for _ in 0..sent.max(1) {
            match client.try_recv() {
                Some(Reply::Add {
                    code: code::EOK,
                    entry,
                    ..
                }) => acked.push(entry),
                Some(other) => panic!("unexpected reply while stopping: {other:?}"),
                None => return acked,
            }
        }
    }
}

#[test]
fn sigterm_answers_in_flight_adds_and_they_survive() {
    if !uring_available() {
        return;
    }
    let dir = TestDir::new("durability-term");
    let server = Server::start(&dir.0, 2, &[]);
    let writers: Vec<_> = (0..4)
        .map(|index| {
            let client = server.connect();
            std::thread::spawn(move || add_until_closed(client, ledger_id(100 + index)))
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let exited = server.terminate();
    assert_eq!(exited.status.code(), Some(0), "stderr: {:?}", exited.stderr);
    assert_eq!(
        exited.summaries().len(),
        2,
        "one summary line per shard: {:?}",
        exited.stdout
    );
    let acked: Vec<Vec<i64>> = writers
        .into_iter()
        .map(|writer| writer.join().unwrap())
        .collect();
    let server = Server::start(&dir.0, 2, &[]);
    let mut client = server.connect();
    for (index, entries) in (100..).zip(&acked) {
        assert!(!entries.is_empty(), "the writer got acks before the stop");
        let ledger = ledger_id(index);
        for &entry in entries {
            let (status, _, read) = client.read(0, ledger, entry, None);
            assert_eq!(status, code::EOK, "acked entry ({ledger}, {entry}) lost");
            assert_eq!(read, body(ledger, entry));
        }
    }
}
