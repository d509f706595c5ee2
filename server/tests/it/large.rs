//! Large frames: a receive buffer grows only for a frame that needs it, a response larger
//! than the send buffer leaves in pieces, batch reads follow §2.7's size rule, and a frame
//! over the limit closes the connection.

use crate::support::{uring_available, Reply, Server, TestDir, KEY};
use wire::{code, FRAME_SIZE_MAX_DEFAULT};

const LEDGER: i64 = 5_150_000;

fn large_body(entry: i64, size: usize) -> Vec<u8> {
    let payload: Vec<u8> = (0..size)
        .map(|i| u8::try_from((i * 7 + 3) % 256).unwrap())
        .collect();
    let mut out = Vec::new();
    wire::encode_entry_body_crc32c(&mut out, LEDGER, entry, entry - 1, 0, &payload);
    out
}

#[test]
fn large_entries_round_trip_and_oversized_frames_close() {
    if !uring_available() {
        return;
    }
    let dir = TestDir::new("large");
    let server = Server::start(&dir.0, 2, &["--segment-size", "16777216"]);
    let mut client = server.connect();
    let sizes = [3 * 1024 * 1024, 100, 2 * 1024 * 1024];
    for (entry, size) in (0..).zip(sizes) {
        let mut frame = Vec::new();
        wire::client::encode_add_request(&mut frame, 0, &KEY, &large_body(entry, size));
        client.send(&frame);
        assert_eq!(
            client.recv(),
            Reply::Add {
                code: code::EOK,
                ledger: LEDGER,
                entry
            }
        );
    }
    let mut other = server.connect();
    for (entry, size) in (0..).zip(sizes) {
        let (status, _, read) = other.read(0, LEDGER, entry, None);
        assert_eq!(status, code::EOK);
        assert!(read == large_body(entry, size), "entry {entry} differs");
    }
    // The first entry is always included, even past the size limit; the next is not.
    let (status, entries) = other.batch_read(LEDGER, 0, 3, 1024);
    assert_eq!((status, entries.len()), (code::EOK, 1));
    // The 5 MiB default limit ends the batch before the third entry.
    let (status, entries) = other.batch_read(LEDGER, 0, 0, i64::MAX);
    assert_eq!((status, entries.len()), (code::EOK, 2));
    assert!(entries[1] == large_body(1, 100));
    // Past the last entry: the first read fails, so the code is that failure's.
    let (status, entries) = other.batch_read(LEDGER, 3, 10, 1 << 20);
    assert_eq!((status, entries.len()), (code::ENOENTRY, 0));
    // One byte over the frame limit: closed before the frame is read.
    let mut oversized = server.connect();
    let length = FRAME_SIZE_MAX_DEFAULT - 4 + 1;
    oversized.send(&length.to_be_bytes());
    oversized.send(&[2, 1, 0, 0]);
    assert!(oversized.is_closed_by_server());
    assert_eq!(client.add(0, &KEY, LEDGER, 3), code::EOK);
}
