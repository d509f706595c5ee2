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
