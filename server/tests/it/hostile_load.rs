//! Hostile clients and load at once (issue 5, reliability.md N1-N6): while a well-behaved
//! client keeps adding and reading, other connections send oversized lengths, truncated
//! frames then EOF, random garbage, unknown opcodes and versions, 1-byte-at-a-time slowloris
//! frames, hold 5,000 idle connections, and write without ever reading their responses.
//! Pass: the good client never sees an error nor waits like a starved client (p99 under
//! `STARVED_P99`), and the server's RSS stays under `RSS_CAP_BYTES` (docs/limits.md, "Memory").
//!
//! The latency goal (p99 within 5 x the same run's baseline p99) is a speed goal, so it is
//! enforced only by `make hostile-load`, which runs this test alone on the host
//! (`RINGLOG_HOSTILE_LATENCY_ENFORCE=1`) and keeps its figures as JSON
//! (`RINGLOG_HOSTILE_RESULTS`). Inside `cargo test` the other tests of this binary share the
//! 2 cores with it, so its ratio there measures them as much as the hostile clients (CI on
//! 4efdb9b: 5.07x while the TLS handshake tests ran beside it).

use crate::support::{body, rss_bytes, uring_available, Client, Server, TestDir, KEY};
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wire::code;

const LEDGER_GOOD: i64 = 881_000;
const LEDGER_SLOW: i64 = 882_000;
const LEDGER_DEAF: i64 = 883_000;
const IDLE_CONNECTIONS: usize = 5_000;
const SLOWLORIS_CONNECTIONS: usize = 100;
const BASELINE: Duration = Duration::from_secs(3);
const HOSTILE: Duration = Duration::from_secs(6);
/// The documented cap for this configuration (2 shards, default limits, the load above):
/// see docs/limits.md. Measured here at about 100 MiB.
const RSS_CAP_BYTES: u64 = 512 << 20;
const LATENCY_FACTOR_MAX: f64 = 5.0;
/// What a starved good client would see: an add and a read that wait behind hostile input
/// (a blocked shard, a full ring) take seconds, not the 0.3-1.5 ms measured here.
const STARVED_P99: Duration = Duration::from_millis(100);

fn p99(latencies: &mut [Duration]) -> Duration {
    assert!(!latencies.is_empty());
    latencies.sort_unstable();
    latencies[(latencies.len() * 99).div_ceil(100) - 1]
}

/// One add and one read of it, as a client would; latency of the pair.
fn good_round(client: &mut Client, entry: i64) -> Duration {
    let start = Instant::now();
    assert_eq!(
        client.add(0, &KEY, LEDGER_GOOD, entry),
        code::EOK,
        "add {entry}"
    );
    let (status, _, read) = client.read(0, LEDGER_GOOD, entry, None);
    assert_eq!(status, code::EOK, "read {entry}");
    assert_eq!(read, body(LEDGER_GOOD, entry), "read {entry}");
    start.elapsed()
}

fn frame(header: [u8; 4], fields: &[u8]) -> Vec<u8> {
    let length = u32::try_from(4 + fields.len()).unwrap();
    [&length.to_be_bytes()[..], &header, fields].concat()
}

/// xorshift64: reproducible garbage without a dependency.
fn garbage(state: &mut u64, bytes: usize) -> Vec<u8> {
    (0..bytes)
        .map(|_| {
            *state ^= *state << 13;
            *state ^= *state >> 7;
            *state ^= *state << 17;
            (*state >> 24) as u8
        })
        .collect()
}

/// Sends `bytes` (then EOF when `half_close`) and waits for the server to close; true if it
/// did within the timeout. Replies (an EBADVERSION, say) are read and dropped.
fn closed_after(address: SocketAddr, bytes: &[u8], half_close: bool) -> bool {
    let Ok(mut stream) = TcpStream::connect(address) else {
        return false;
    };
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    // The server may close before reading everything: a reset here is fine.
    let _ = stream.write_all(bytes);
    if half_close {
        let _ = stream.shutdown(Shutdown::Write);
    }
    let mut sink = [0u8; 4096];
    loop {
        match stream.read(&mut sink) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => {
                return matches!(
                    error.kind(),
                    std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe
                )
            }
        }
    }
}

/// The one-shot bad connections, in a loop until `stop`; counts how many the server closed
/// and how many it did not.
fn bad_inputs_loop(address: SocketAddr, stop: &AtomicBool, closed: &AtomicU64, kept: &AtomicU64) {
    let mut random = 0x9E37_79B9_7F4A_7C15u64;
    let read_fields = [LEDGER_GOOD.to_be_bytes(), 0i64.to_be_bytes()].concat();
    let mut add = Vec::new();
    wire::client::encode_add_request(&mut add, 0, &KEY, &body(LEDGER_GOOD + 1, 0));
    let mut round = 0u32;
    while !stop.load(Ordering::Relaxed) {
        let mut cases: Vec<(Vec<u8>, bool)> = vec![
            // Oversized length prefixes: 2^31 and just over the 5 MiB + 10 KiB default.
            (vec![0x80, 0, 0, 0, 2, 1, 0, 0], false),
            ((5_253_121u32).to_be_bytes().to_vec(), false),
            // A truncated add, then EOF.
            (add[..add.len() / 2].to_vec(), true),
            // Random garbage, then EOF (a garbage prefix may announce a small frame that
            // never completes; the EOF makes it a truncated frame either way).
            (garbage(&mut random, 4096), true),
        ];
        // Unknown opcodes over v2: the connection is closed.
        let opcode = 8 + u8::try_from(round % 200).unwrap();
        cases.push((frame([2, opcode, 0, 0], &read_fields), false));
        for (bytes, half_close) in cases {
            let counter = if closed_after(address, &bytes, half_close) {
                closed
            } else {
                kept
            };
            counter.fetch_add(1, Ordering::Relaxed);
        }
        round += 1;
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Versions outside 0..=2 (0x0A would be a v3 frame) on one connection: each gets its EBADVERSION answer and the connection
/// stays usable.
fn bad_versions(address: SocketAddr) {
    let mut client = Client::connect(address);
    for version in [3u8, 4, 9, 100, 255] {
        let mut add = Vec::new();
        wire::client::encode_add_request(&mut add, 0, &KEY, &body(LEDGER_GOOD + 2, 0));
        add[4] = version;
        client.send(&add);
        match client.recv() {
            crate::support::Reply::Add { code: status, .. } => {
                assert_eq!(status, code::EBADVERSION, "version {version}");
            }
            other => panic!("version {version}: {other:?}"),
        }
    }
}

/// Slowloris: every connection sends one valid add one byte at a time, all interleaved;
/// each must still be answered EOK once its frame is complete.
fn slowloris(address: SocketAddr) -> usize {
    let mut clients: Vec<(TcpStream, Vec<u8>)> = (0..SLOWLORIS_CONNECTIONS)
        .map(|index| {
            let stream = TcpStream::connect(address).unwrap();
            stream.set_nodelay(true).unwrap();
            let mut add = Vec::new();
            let ledger = LEDGER_SLOW + i64::try_from(index).unwrap();
            wire::client::encode_add_request(&mut add, 0, &KEY, &body(ledger, 0));
            (stream, add)
        })
        .collect();
    let frame_size_max = clients.iter().map(|(_, add)| add.len()).max().unwrap();
    for offset in 0..frame_size_max {
        for (stream, add) in &mut clients {
            if let Some(byte) = add.get(offset) {
                stream.write_all(&[*byte]).unwrap();
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let mut answered = 0;
    for (stream, _) in clients {
        let mut client = Client::from_stream(stream);
        if let crate::support::Reply::Add { code: status, .. } = client.recv() {
            assert_eq!(status, code::EOK);
            answered += 1;
        }
    }
    answered
}

/// A client that writes adds and never reads a response: the server must stop reading it
/// (TCP backpressure) instead of buffering its responses without bound. Returns the adds it
/// managed to send before the socket stopped taking them.
fn deaf_writer(address: SocketAddr, stop: &AtomicBool) -> u64 {
    let mut stream = TcpStream::connect(address).unwrap();
    stream
        .set_write_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut frames = Vec::new();
    for entry in 0..64 {
        wire::client::encode_add_request(&mut frames, 0, &KEY, &body(LEDGER_DEAF, entry));
    }
    let mut sent = 0u64;
    let mut entry = 64i64;
    while !stop.load(Ordering::Relaxed) {
        match stream.write_all(&frames) {
            Ok(()) => sent += 64,
            // Blocked: the server stopped reading us. Keep trying until the phase ends.
            Err(_) => continue,
        }
        frames.clear();
        for _ in 0..64 {
            wire::client::encode_add_request(&mut frames, 0, &KEY, &body(LEDGER_DEAF, entry));
            entry += 1;
        }
    }
    sent
}

#[test]
fn a_good_client_keeps_its_latency_among_hostile_ones() {
    if !uring_available() {
        return;
    }
    // 5,000 idle connections plus everything else need descriptors on both sides.
    let limit = engine::uring::Process::open_files_limit_raise().unwrap();
    assert!(
        limit > u64::try_from(IDLE_CONNECTIONS).unwrap() + 1_000,
        "open-files hard limit {limit} is too low for this test"
    );
    let dir = TestDir::new("hostile-load");
    // Sorting off: the deaf writer fills the test's small segments only in the hostile phase,
    // and since sorting runs beside writes (up to --sort-traffic-max-mib) its copies would be
    // measured against a baseline that had none. What sorting costs the writes is measured
    // by `make busy-reads` (docs/durability.md, "Sorted segments"); this test is about the
    // hostile clients.
    let server = Server::start(
        &dir.0,
        2,
        &[
            "--connections-max",
            "8192",
            "--sort-sealed-segments",
            "false",
        ],
    );
    let address = server.address;
    let pid = server.pid();

    let mut good = server.connect();
    let mut entry = 0i64;
    let mut baseline = Vec::new();
    let started = Instant::now();
    while started.elapsed() < BASELINE {
        baseline.push(good_round(&mut good, entry));
        entry += 1;
    }
    let baseline_p99 = p99(&mut baseline);

    let stop = Arc::new(AtomicBool::new(false));
    let (closed, kept) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let mut idle: Vec<TcpStream> = Vec::with_capacity(IDLE_CONNECTIONS);
    for _ in 0..IDLE_CONNECTIONS {
        idle.push(TcpStream::connect(address).unwrap());
    }
    let bad = {
        let (stop, closed, kept) = (Arc::clone(&stop), Arc::clone(&closed), Arc::clone(&kept));
        std::thread::spawn(move || bad_inputs_loop(address, &stop, &closed, &kept))
    };
    let slow = std::thread::spawn(move || slowloris(address));
    let deaf = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || deaf_writer(address, &stop))
    };
    bad_versions(address);

    let mut hostile = Vec::new();
    let mut rss_max = rss_bytes(pid);
    let started = Instant::now();
    while started.elapsed() < HOSTILE {
        hostile.push(good_round(&mut good, entry));
        entry += 1;
        if hostile.len() % 64 == 0 {
            rss_max = rss_max.max(rss_bytes(pid));
        }
    }
    rss_max = rss_max.max(rss_bytes(pid));
    stop.store(true, Ordering::Relaxed);
    bad.join().unwrap();
    let slow_answered = slow.join().unwrap();
    let deaf_sent = deaf.join().unwrap();
    let hostile_p99 = p99(&mut hostile);
    // The idle connections are still open, and the server still answers.
    assert_eq!(good.add(0, &KEY, LEDGER_GOOD, entry), code::EOK);
    drop(idle);

    println!(
        "hostile load: good rounds {} baseline + {} hostile, p99 {:?} -> {:?} ({:.2}x); \
         bad connections closed {} kept {}; slowloris answered {slow_answered}/{SLOWLORIS_CONNECTIONS}; \
         deaf writer sent {deaf_sent} adds; server RSS max {} MiB",
        baseline.len(),
        hostile.len(),
        baseline_p99,
        hostile_p99,
        hostile_p99.as_secs_f64() / baseline_p99.as_secs_f64(),
        closed.load(Ordering::Relaxed),
        kept.load(Ordering::Relaxed),
        rss_max >> 20
    );
    assert_eq!(kept.load(Ordering::Relaxed), 0, "bad connections kept open");
    assert!(closed.load(Ordering::Relaxed) >= 5);
    assert_eq!(slow_answered, SLOWLORIS_CONNECTIONS);
    assert!(rss_max < RSS_CAP_BYTES, "server RSS {rss_max} over the cap");
    let factor = hostile_p99.as_secs_f64() / baseline_p99.as_secs_f64();
    if let Ok(path) = std::env::var("RINGLOG_HOSTILE_RESULTS") {
        let json = format!(
            "{{\"baseline_rounds\": {}, \"hostile_rounds\": {}, \"baseline_p99_us\": {}, \
             \"hostile_p99_us\": {}, \"p99_factor\": {factor:.3}, \"p99_factor_max\": {LATENCY_FACTOR_MAX}, \
             \"bad_connections_closed\": {}, \"slowloris_answered\": {slow_answered}, \
             \"deaf_writer_adds\": {deaf_sent}, \"server_rss_bytes_max\": {rss_max}}}\n",
            baseline.len(),
            hostile.len(),
            baseline_p99.as_micros(),
            hostile_p99.as_micros(),
            closed.load(Ordering::Relaxed),
        );
        std::fs::write(&path, json).unwrap();
    }
    assert!(
        hostile_p99 < STARVED_P99,
        "good client starved: p99 {baseline_p99:?} -> {hostile_p99:?}"
    );
    if std::env::var_os("RINGLOG_HOSTILE_LATENCY_ENFORCE").is_some() {
        assert!(
            factor <= LATENCY_FACTOR_MAX,
            "good client's p99 went from {baseline_p99:?} to {hostile_p99:?}"
        );
    }
    let exited = server.terminate();
    assert_eq!(exited.status.code(), Some(0), "{:?}", exited.stderr);
}
