//! Hostile and broken clients (reliability.md rows N1-N4): each bad connection is closed by
//! the server, nothing of it is journalled, and a good connection keeps working throughout.

use crate::support::{body, uring_available, Client, Reply, Server, TestDir, KEY};
use std::net::Shutdown;
use std::time::Duration;
use wire::code;

const LEDGER: i64 = 777_000;

/// A frame with an arbitrary header word and fields.
fn frame(header: [u8; 4], fields: &[u8]) -> Vec<u8> {
    let mut frame = Vec::new();
    let length = u32::try_from(4 + fields.len()).unwrap();
    frame.extend_from_slice(&length.to_be_bytes());
    frame.extend_from_slice(&header);
    frame.extend_from_slice(fields);
    frame
}

fn add_frame(ledger: i64, entry: i64) -> Vec<u8> {
    let mut frame = Vec::new();
    wire::client::encode_add_request(&mut frame, 0, &KEY, &body(ledger, entry));
    frame
}

/// The bad inputs, each sent on its own connection.
fn bad_inputs() -> Vec<(&'static str, Vec<u8>, bool)> {
    let truncated = add_frame(LEDGER + 1, 0);
    let truncated = truncated[..truncated.len() / 2].to_vec();
    let read_fields = [LEDGER.to_be_bytes(), 0i64.to_be_bytes()].concat();
    vec![
        (
            "HTTP garbage",
            b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
            false,
        ),
        ("length 2^31", vec![0x80, 0, 0, 0, 2, 1, 0, 0], false),
        ("length below a header", vec![0, 0, 0, 2, 2, 1], false),
        ("truncated add, then EOF", truncated, true),
        ("unknown opcode 9", frame([2, 9, 0, 0], &read_fields), false),
        ("READ_LAC over v2", frame([2, 4, 0, 0], &read_fields), false),
        (
            "v3 protobuf frame",
            frame([0x0A, 0x06, 0x08, 0x03], &[0x10, 0x02]),
            false,
        ),
        (
            "add body under 16 bytes",
            frame([2, 1, 0, 0], &[[0u8; 20].as_slice(), &[1; 8]].concat()),
            false,
        ),
    ]
}

#[test]
fn bad_connections_are_closed_and_good_ones_keep_working() {
    if !uring_available() {
        return;
    }
    let dir = TestDir::new("hostile");
    let server = Server::start(&dir.0, 2, &[]);
    let mut good = server.connect();
    for (entry, (name, bytes, half_close)) in (0..).zip(bad_inputs()) {
        let mut bad = server.connect();
        bad.send(&bytes);
        if half_close {
            bad.stream.shutdown(Shutdown::Write).unwrap();
        }
        assert!(
            bad.is_closed_by_server(),
            "{name}: the server kept the connection"
        );
        assert_eq!(good.add(0, &KEY, LEDGER, entry), code::EOK, "after {name}");
        let (status, _, read) = good.read(0, LEDGER, entry, None);
        assert_eq!(
            (status, read),
            (code::EOK, body(LEDGER, entry)),
            "after {name}"
        );
    }
    // Nothing of the truncated add was journalled.
    let (status, _, _) = good.read(0, LEDGER + 1, 0, None);
    assert_eq!(status, code::ENOLEDGER);
    let exited = server.terminate();
    assert_eq!(exited.status.code(), Some(0));
    assert!(
        exited.summary_total("connections_invalid") >= 8,
        "{:?}",
        exited.summaries()
    );
}

#[test]
fn version_3_gets_ebadversion_and_the_connection_stays() {
    if !uring_available() {
        return;
    }
    let dir = TestDir::new("badversion");
    let server = Server::start(&dir.0, 1, &[]);
    let mut client = server.connect();
    let mut add = add_frame(LEDGER, 0);
    add[4] = 3;
    client.send(&add);
    assert_eq!(
        client.recv(),
        Reply::Add {
            code: code::EBADVERSION,
            ledger: LEDGER,
            entry: 0
        }
    );
    let read = frame(
        [3, 2, 0, 0],
        &[LEDGER.to_be_bytes(), 5i64.to_be_bytes()].concat(),
    );
    client.send(&read);
    let expected = Reply::Read {
        version: 3,
        code: code::EBADVERSION,
        ledger: LEDGER,
        entry: 5,
        body: vec![],
    };
    assert_eq!(client.recv(), expected);
    // Nothing was stored, and the connection still serves.
    assert_eq!(client.read(0, LEDGER, 0, None).0, code::ENOLEDGER);
    assert_eq!(client.add(0, &KEY, LEDGER, 0), code::EOK);
    // AUTH with authentication off: the Java bookie's exact reply.
    let mut auth = Vec::new();
    wire::client::encode_auth_request(&mut auth, "SASL", b"hello");
    client.send(&auth);
    let mut expected = vec![0x0A, 0x12];
    expected.extend_from_slice(b"AuthDisabledPlugin");
    expected.extend_from_slice(&[0x12, 0x00]);
    assert_eq!(
        client.recv(),
        Reply::Auth {
            auth_message: expected
        }
    );
}

#[test]
fn idle_connections_are_closed() {
    if !uring_available() {
        return;
    }
    let dir = TestDir::new("idle");
    let server = Server::start(&dir.0, 1, &["--idle-timeout-ms", "300"]);
    let mut idle = Client::connect(server.address);
    idle.stream
        .set_read_timeout(Some(Duration::from_secs(3)))
        .unwrap();
    assert!(
        idle.is_closed_by_server(),
        "idle connection kept past its timeout"
    );
    let mut busy = server.connect();
    for entry in 0..5 {
        assert_eq!(busy.add(0, &KEY, LEDGER, entry), code::EOK);
        std::thread::sleep(Duration::from_millis(100));
    }
    let exited = server.terminate();
    assert_eq!(
        exited.summary_total("connections_idle"),
        1,
        "{:?}",
        exited.summaries()
    );
}
