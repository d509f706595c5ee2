//! Ledgers owned by another shard: requests arriving on any connection (SO_REUSEPORT spreads
//! them over the shards) are forwarded to the owner and answered correctly.

use crate::support::{body, uring_available, Client, Reply, Server, TestDir, KEY};
use wire::{code, FLAG_DO_FENCING, FLAG_RECOVERY_ADD};

const CONNECTIONS: i64 = 16;
const LEDGER: i64 = 31_337;

#[test]
fn requests_for_other_shards_ledgers_are_answered() {
    if !uring_available() {
        return;
    }
    let dir = TestDir::new("cross-shard");
    let server = Server::start(&dir.0, 2, &[]);
    let mut clients: Vec<Client> = (0..CONNECTIONS).map(|_| server.connect()).collect();
    // The first add creates the ledger on the shard of connection 0.
    assert_eq!(clients[0].add(0, &KEY, LEDGER, 0), code::EOK);
    // Every connection adds one entry, pipelined over all connections at once.
    for (entry, client) in (1..).zip(clients.iter_mut()) {
        client.send_add(0, &KEY, LEDGER, entry);
    }
    for (entry, client) in (1..).zip(clients.iter_mut()) {
        assert_eq!(
            client.recv(),
            Reply::Add {
                code: code::EOK,
                ledger: LEDGER,
                entry
            }
        );
    }
    // Every connection reads every entry, the last one, and a batch.
    for client in &mut clients {
        for entry in 0..=CONNECTIONS {
            let (status, _, read) = client.read(0, LEDGER, entry, None);
            assert_eq!((status, read), (code::EOK, body(LEDGER, entry)));
        }
        let (status, entry, last) = client.read(0, LEDGER, -1, None);
        assert_eq!(
            (status, entry, last),
            (code::EOK, -1, body(LEDGER, CONNECTIONS))
        );
        let (status, entries) = client.batch_read(LEDGER, 0, 0, 1 << 20);
        assert_eq!(status, code::EOK);
        let expected: Vec<Vec<u8>> = (0..=CONNECTIONS).map(|entry| body(LEDGER, entry)).collect();
        assert_eq!(entries, expected);
    }
    // Fencing from the last connection, then adds from all of them see it.
    let (status, _, _) = clients[15].read(FLAG_DO_FENCING, LEDGER, -1, Some(&KEY));
    assert_eq!(status, code::EOK);
    for client in &mut clients {
        assert_eq!(client.add(0, &KEY, LEDGER, CONNECTIONS + 1), code::EFENCED);
    }
    assert_eq!(
        clients[7].add(FLAG_RECOVERY_ADD, &KEY, LEDGER, CONNECTIONS + 1),
        code::EOK
    );
    drop(clients);
    let exited = server.terminate();
    assert_eq!(exited.status.code(), Some(0));
    // With 16 connections over 2 shards, some landed away from the owner (all 16 on one
    // shard has probability 2^-15).
    let forwarded = exited.summary_total("forwarded");
    assert!(
        forwarded > 0,
        "nothing was forwarded: {:?}",
        exited.summaries()
    );
    assert_eq!(forwarded, exited.summary_total("forwarded_served"));
}

/// Batch reads pipelined on every connection, more than a client runs at once
/// (`BATCH_READS_PER_CLIENT_MAX`), from disk after a restart so that they wait on reads and
/// overlap (on their own connection and, forwarded, on the peer shard's): each is answered
/// once, under its own request id, with its own entries; single reads between them too.
#[test]
fn pipelined_batch_reads_are_answered_each_with_its_own_entries() {
    if !uring_available() {
        return;
    }
    const LEDGERS: i64 = 6;
    const ENTRIES: i64 = 400;
    const BATCHES_PER_CONNECTION: i64 = 12;
    const COUNT: i32 = 40;
    let dir = TestDir::new("cross-shard-batches");
    let server = Server::start(&dir.0, 2, &[]);
    let mut client = server.connect();
    for ledger in 1..=LEDGERS {
        for entry in 0..ENTRIES {
            client.send_add(0, &KEY, ledger, entry);
        }
        for _ in 0..ENTRIES {
            assert!(matches!(
                client.recv(),
                Reply::Add {
                    code: code::EOK,
                    ..
                }
            ));
        }
    }
    drop(client);
    assert_eq!(server.terminate().status.code(), Some(0));
    let server = Server::start(&dir.0, 2, &[]);
    let mut clients: Vec<Client> = (0..4).map(|_| server.connect()).collect();
    let mut expected = std::collections::HashMap::new();
    for (connection, client) in (0..).zip(clients.iter_mut()) {
        for batch in 0..BATCHES_PER_CONNECTION {
            let ledger = 1 + (connection + batch) % LEDGERS;
            let start = (batch * 29 + connection * 7) % (ENTRIES - 20);
            let request_id = connection * 1000 + batch;
            let mut frame = Vec::new();
            wire::client::encode_batch_read_request(
                &mut frame,
                0,
                ledger,
                start,
                request_id,
                COUNT,
                1 << 20,
                None,
            );
            client.send(&frame);
            if batch % 4 == 0 {
                client.send_read(0, ledger, start + 3, None);
            }
            let end = (start + i64::from(COUNT)).min(ENTRIES);
            let entries: Vec<Vec<u8>> = (start..end).map(|entry| body(ledger, entry)).collect();
            expected.insert(request_id, (ledger, start, entries));
        }
    }
    for (connection, client) in (0..).zip(clients.iter_mut()) {
        let (mut batches, mut reads) = (0, 0);
        while batches < BATCHES_PER_CONNECTION || reads < BATCHES_PER_CONNECTION / 4 {
            match client.recv() {
                Reply::Batch {
                    code: code::EOK,
                    ledger,
                    start,
                    request_id,
                    entries,
                } => {
                    assert_eq!(request_id / 1000, connection, "another connection's batch");
                    let (l, s, want) = expected.remove(&request_id).expect("answered once");
                    assert_eq!((ledger, start), (l, s), "request {request_id}");
                    assert!(entries == want, "request {request_id}: wrong entries");
                    batches += 1;
                }
                Reply::Read {
                    code: code::EOK,
                    ledger,
                    entry,
                    body: read,
                    ..
                } => {
                    assert_eq!(read, body(ledger, entry));
                    reads += 1;
                }
                other => panic!("connection {connection}: unexpected reply {other:?}"),
            }
        }
    }
    assert!(expected.is_empty());
    drop(clients);
    let exited = server.terminate();
    assert_eq!(exited.status.code(), Some(0));
    assert!(
        exited.summary_total("batch_reads_side_by_side") > 0,
        "no batch ran beside another: {:?}",
        exited.summaries()
    );
    assert_eq!(exited.summary_total("batch_buffers_lent"), 0);
    // Connections closed (a bad frame) while their batches wait on the disk give the
    // buffers lent to them back, and batch reads go on side by side afterwards.
    let server = Server::start(&dir.0, 2, &[]);
    for round in 0..8 {
        let mut client = server.connect();
        for batch in 0..4 {
            let mut frame = Vec::new();
            let ledger = 1 + (round + batch) % LEDGERS;
            wire::client::encode_batch_read_request(
                &mut frame,
                0,
                ledger,
                0,
                batch,
                COUNT,
                1 << 20,
                None,
            );
            client.send(&frame);
        }
        client.send(&[0x7f, 0xff, 0xff, 0xff]);
        assert!(client.is_closed_by_server());
    }
    let mut client = server.connect();
    for batch in 0..4 {
        let (status, entries) = client.batch_read(1 + batch, 50, COUNT, 1 << 20);
        assert_eq!(status, code::EOK);
        assert_eq!(entries.len(), usize::try_from(COUNT).unwrap());
    }
    drop(client);
    let exited = server.terminate();
    assert_eq!(exited.status.code(), Some(0));
    assert_eq!(
        exited.summary_total("batch_buffers_lent"),
        0,
        "{:?}",
        exited.summaries()
    );
}
