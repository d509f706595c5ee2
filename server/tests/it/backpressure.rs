//! Caps: with tiny per-connection limits every pipelined request is still answered (the socket
//! is just read more slowly), and connections beyond the cap are closed at accept.

use crate::support::{body, uring_available, Reply, Server, TestDir, KEY};
use wire::code;

const LEDGERS: [i64; 2] = [88_001, 88_002];
const ENTRIES: i64 = 1000;

#[test]
fn tiny_caps_slow_reading_but_answer_everything() {
    if !uring_available() {
        return;
    }
    let dir = TestDir::new("backpressure");
    let caps = [
        "--requests-in-flight-max",
        "4",
        "--frames-per-turn-max",
        "3",
    ];
    let server = Server::start(&dir.0, 2, &caps);
    let mut clients: Vec<_> = (0..4).map(|_| server.connect()).collect();
    for (client, ledger) in clients.iter_mut().zip(LEDGERS) {
        assert_eq!(client.add(0, &KEY, ledger, 0), code::EOK);
    }
    // Every connection pipelines adds for both ledgers, so some go to the other shard.
    let writers: Vec<_> = clients
        .into_iter()
        .zip(0..)
        .map(|(mut client, index)| {
            std::thread::spawn(move || {
                let entries: Vec<(i64, i64)> = (1..=ENTRIES)
                    .filter(|entry| entry % 4 == index)
                    .flat_map(|entry| LEDGERS.map(|ledger| (ledger, entry)))
                    .collect();
                for &(ledger, entry) in &entries {
                    client.send_add(0, &KEY, ledger, entry);
                }
                for _ in &entries {
                    match client.recv() {
                        Reply::Add {
                            code: code::EOK, ..
                        } => {}
                        other => panic!("{other:?}"),
                    }
                }
                client
            })
        })
        .collect();
    let mut clients: Vec<_> = writers
        .into_iter()
        .map(|writer| writer.join().unwrap())
        .collect();
    for ledger in LEDGERS {
        let (status, _, last) = clients[0].read(0, ledger, -1, None);
        assert_eq!((status, last), (code::EOK, body(ledger, ENTRIES)));
        for entry in (0..=ENTRIES).step_by(37) {
            assert_eq!(
                clients[1].read(0, ledger, entry, None).2,
                body(ledger, entry)
            );
        }
    }
}

#[test]
fn connections_over_the_cap_are_closed() {
    if !uring_available() {
        return;
    }
    let dir = TestDir::new("connections-max");
    let server = Server::start(&dir.0, 1, &["--connections-max", "2"]);
    let mut first = server.connect();
    let mut second = server.connect();
    assert_eq!(first.add(0, &KEY, 99, 0), code::EOK);
    assert_eq!(second.add(0, &KEY, 99, 1), code::EOK);
    let mut third = server.connect();
    assert!(third.is_closed_by_server());
    drop(second);
    // The freed slot takes a new connection.
    let mut retry = std::iter::repeat_with(|| server.connect())
        .take(50)
        .find_map(|mut client| {
            client.send_add(0, &KEY, 99, 2);
            client.try_recv().map(|reply| (client, reply))
        })
        .expect("a connection is accepted once a slot is free");
    assert_eq!(
        retry.1,
        Reply::Add {
            code: code::EOK,
            ledger: 99,
            entry: 2
        }
    );
    assert_eq!(retry.0.add(0, &KEY, 99, 3), code::EOK);
    let exited = server.terminate();
    assert!(exited.summary_total("connections_rejected") >= 1);
}

#[test]
fn reads_beyond_the_engines_read_slots_wait_in_the_retry_queue_and_are_all_answered() {
    if !uring_available() {
        return;
    }
    // Cold reads far apart each need one of the journal's 16 read buffers, so most of
    // 3,000 pipelined reads find the engine busy and wait in the shard's retry queue, which
    // retries them in order until one is still busy: none may be left behind or answered
    // ETOOMANYREQUESTS, and every body must be the one added.
    const LEDGER: i64 = 77_001;
    const COUNT: i64 = 3000;
    let dir = TestDir::new("retry-queue");
    let server = Server::start(&dir.0, 1, &[]);
    let mut client = server.connect();
    for entry in 0..COUNT {
        client.send_add(0, &KEY, LEDGER, entry);
    }
    for _ in 0..COUNT {
        assert!(matches!(
            client.recv(),
            Reply::Add {
                code: code::EOK,
                ..
            }
        ));
    }
    drop(client);
    server.terminate();
    // Restarted, so that nothing is served from the commit buffers kept in memory.
    let server = Server::start(&dir.0, 1, &[]);
    let mut client = server.connect();
    // A stride coprime with COUNT visits every entry, each far from the last read: no scan.
    let order: Vec<i64> = (0..COUNT).map(|i| i * 1_291 % COUNT).collect();
    for &entry in &order {
        client.send_read(0, LEDGER, entry, None);
    }
    let mut answered = std::collections::BTreeSet::new();
    for _ in 0..COUNT {
        match client.recv() {
            Reply::Read {
                code,
                ledger,
                entry,
                body: got,
                ..
            } => {
                assert_eq!((code, ledger), (code::EOK, LEDGER), "entry {entry}");
                assert_eq!(got, body(LEDGER, entry), "entry {entry}");
                assert!(answered.insert(entry), "entry {entry} answered twice");
            }
            other => panic!("unexpected reply {other:?}"),
        }
    }
    assert_eq!(answered.len(), usize::try_from(COUNT).unwrap());
    let exited = server.terminate();
    assert!(
        exited.summary_total("read_retries") > 0,
        "the reads never waited for a read slot: {:?}",
        exited.summaries()
    );
}
