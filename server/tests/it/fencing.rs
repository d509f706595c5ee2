//! Fencing and master keys (protocol §5.1, §5.2): a fence read makes normal adds EFENCED while
//! recovery adds go on, survives a restart, and wrong or missing keys get EUA.

use crate::support::{body, uring_available, Client, Reply, Server, TestDir, KEY};
use wire::{code, FLAG_DO_FENCING, FLAG_HIGH_PRIORITY, FLAG_RECOVERY_ADD};

const LEDGER: i64 = 424_242;
const KEY_OTHER: wire::MasterKey = wire::MASTER_KEY_EMPTY_PASSWORD;

/// A READ frame in protocol version 1, where a fencing read carries no key.
fn read_frame_version_1(flags: u16, ledger: i64, entry: i64) -> Vec<u8> {
    let mut frame = Vec::new();
    frame.extend_from_slice(&20u32.to_be_bytes());
    let header = u32::from_be_bytes([1, 2, 0, 0]) | u32::from(flags);
    frame.extend_from_slice(&header.to_be_bytes());
    frame.extend_from_slice(&ledger.to_be_bytes());
    frame.extend_from_slice(&entry.to_be_bytes());
    frame
}

fn fence_then_check(client: &mut Client) {
    for entry in 0..3 {
        assert_eq!(client.add(0, &KEY, LEDGER, entry), code::EOK);
    }
    // A fencing read with the wrong key is refused and fences nothing.
    let (status, _, _) = client.read(FLAG_DO_FENCING, LEDGER, -1, Some(&KEY_OTHER));
    assert_eq!(status, code::EUA);
    assert_eq!(client.add(0, &KEY, LEDGER, 3), code::EOK);
    // Recovery's fencing LAC read: flags 0x0005, entry -1, answered after the fence is durable.
    let flags = FLAG_DO_FENCING | FLAG_HIGH_PRIORITY;
    let (status, entry, last) = client.read(flags, LEDGER, -1, Some(&KEY));
    assert_eq!((status, entry), (code::EOK, -1));
    assert_eq!(last, body(LEDGER, 3));
    assert_eq!(client.add(0, &KEY, LEDGER, 4), code::EFENCED);
    assert_eq!(
        client.add(FLAG_RECOVERY_ADD | FLAG_HIGH_PRIORITY, &KEY, LEDGER, 4),
        code::EOK
    );
    assert_eq!(
        client.add(FLAG_RECOVERY_ADD, &KEY_OTHER, LEDGER, 5),
        code::EUA
    );
    let (status, _, read) = client.read(0, LEDGER, 4, None);
    assert_eq!((status, read), (code::EOK, body(LEDGER, 4)));
}

#[test]
fn fencing_and_master_keys() {
    if !uring_available() {
        return;
    }
    let dir = TestDir::new("fencing");
    let server = Server::start(&dir.0, 2, &[]);
    let mut client = server.connect();
    fence_then_check(&mut client);
    // A fence without a key (possible only before version 2) is EUA, on a new ledger too.
    client.send(&read_frame_version_1(FLAG_DO_FENCING, LEDGER + 1, -1));
    match client.recv() {
        Reply::Read {
            version: 1,
            code: code::EUA,
            ledger,
            entry: -1,
            body,
        } => {
            assert_eq!(ledger, LEDGER + 1);
            assert!(body.is_empty());
        }
        other => panic!("fence without key: {other:?}"),
    }
    // A wrong key on an existing ledger is EUA; the ledger keeps its first key.
    assert_eq!(client.add(0, &KEY, LEDGER + 2, 0), code::EOK);
    assert_eq!(client.add(0, &KEY_OTHER, LEDGER + 2, 1), code::EUA);
    assert_eq!(client.add(0, &KEY, LEDGER + 2, 1), code::EOK);
    // A fence on an unknown ledger creates it fenced; its entry -1 does not exist.
    let (status, entry, _) = client.read(FLAG_DO_FENCING, LEDGER + 3, -1, Some(&KEY));
    assert_eq!((status, entry), (code::ENOENTRY, -1));
    assert_eq!(client.add(0, &KEY, LEDGER + 3, 0), code::EFENCED);
    drop(client);
    server.kill();
    // The fenced bit and the keys survive a crash.
    let server = Server::start(&dir.0, 2, &[]);
    let mut client = server.connect();
    assert_eq!(client.add(0, &KEY, LEDGER, 5), code::EFENCED);
    assert_eq!(client.add(FLAG_RECOVERY_ADD, &KEY, LEDGER, 5), code::EOK);
    assert_eq!(client.add(0, &KEY_OTHER, LEDGER + 2, 2), code::EUA);
    assert_eq!(client.add(0, &KEY, LEDGER + 3, 0), code::EFENCED);
}
