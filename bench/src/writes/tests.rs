//! Tests of `writes` and `reads` against a fake bookie: a std TcpListener, one thread per
//! connection, that stores ADD bodies and serves READ_ENTRY and BATCH_READ_ENTRY from them.

use super::{parse_cores, Plan, WritesArgs};
use crate::reads::ReadsArgs;
use clap::Parser;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use wire::{
    code, decode_request, encode_add_response, encode_batch_read_response_begin,
    encode_batch_read_response_finish, encode_batch_read_response_push, encode_read_response,
    Decoded, Request, FRAME_SIZE_MAX_DEFAULT,
};

type Store = Arc<Mutex<BTreeMap<(i64, i64), Vec<u8>>>>;

/// A bookie that answers ADD with EOK (keeping the body if `keep`), and reads from what it
/// kept. `close_after_adds` makes every connection close after that many adds.
struct FakeBookie {
    address: String,
    store: Store,
    adds: Arc<AtomicU64>,
}

#[derive(Clone, Copy)]
struct FakeOptions {
    keep: bool,
    close_after_adds: Option<u64>,
}

impl FakeBookie {
    fn start(options: FakeOptions) -> FakeBookie {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let address = listener.local_addr().expect("address").to_string();
        let store: Store = Arc::default();
        let adds = Arc::new(AtomicU64::new(0));
        let (thread_store, thread_adds) = (store.clone(), adds.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let (store, adds) = (thread_store.clone(), thread_adds.clone());
                std::thread::spawn(move || serve(stream, &store, &adds, options));
            }
        });
        FakeBookie {
            address,
            store,
            adds,
        }
    }
}

fn serve(mut stream: TcpStream, store: &Store, adds: &AtomicU64, options: FakeOptions) {
    stream.set_nodelay(true).expect("nodelay");
    let mut buffer = vec![0u8; 8 << 20];
    let (mut filled, mut out, mut served) = (0, Vec::new(), 0u64);
    loop {
        let Ok(count) = stream.read(&mut buffer[filled..]) else {
            return;
        };
        if count == 0 {
            return;
        }
        filled += count;
        let mut consumed = 0;
        loop {
            match decode_request(&buffer[consumed..filled], FRAME_SIZE_MAX_DEFAULT) {
                Ok(Decoded::Frame {
                    request,
                    frame_size,
                }) => {
                    if let Request::Add { .. } = request {
                        served += 1;
                        if options.close_after_adds.is_some_and(|limit| served > limit) {
                            let _ = stream.write_all(&out);
                            return;
                        }
                        adds.fetch_add(1, Ordering::Relaxed);
                    }
                    answer(request, &mut out, store, options.keep);
                    consumed += frame_size;
                }
                Ok(Decoded::NeedMore) => break,
                Err(error) => panic!("fake bookie cannot decode: {error:?}"),
            }
        }
        buffer.copy_within(consumed..filled, 0);
        filled -= consumed;
        if stream.write_all(&out).is_err() {
            return;
        }
        out.clear();
    }
}

fn answer(request: Request<'_>, out: &mut Vec<u8>, store: &Store, keep: bool) {
    match request {
        Request::Add {
            header,
            ledger_id,
            entry_id,
            body,
            ..
        } => {
            if keep {
                store
                    .lock()
                    .expect("lock")
                    .insert((ledger_id, entry_id), body.to_vec());
            }
            encode_add_response(out, header.version, code::EOK, ledger_id, entry_id);
        }
        Request::Read {
            header,
            ledger_id,
            entry_id,
            ..
        } => {
            answer_read(
                out,
                &store.lock().expect("lock"),
                header.version,
                ledger_id,
                entry_id,
            );
        }
        Request::BatchRead {
            header,
            ledger_id,
            start_entry_id,
            request_id,
            max_count,
            ..
        } => {
            let store = store.lock().expect("lock");
            let bodies: Vec<&Vec<u8>> = (0..i64::from(max_count.max(1)))
                .map_while(|offset| store.get(&(ledger_id, start_entry_id + offset)))
                // A short reply, as a size limit would cut it: `reads` must ask again.
                .take(7)
                .collect();
            let result = if bodies.is_empty() {
                code::ENOENTRY
            } else {
                code::EOK
            };
            let (version, start) = (header.version, start_entry_id);
            let frame = encode_batch_read_response_begin(
                out, version, result, ledger_id, start, request_id,
            );
            for body in bodies {
                encode_batch_read_response_push(out, body);
            }
            encode_batch_read_response_finish(out, frame);
        }
        Request::Auth { .. } => panic!("fake bookie got an unexpected AUTH"),
    }
}

/// READ_ENTRY as the bookie answers it: -1 is the highest entry held (§5.3), a missing entry
/// of a known ledger ENOENTRY, of an unknown one ENOLEDGER.
fn answer_read(
    out: &mut Vec<u8>,
    store: &BTreeMap<(i64, i64), Vec<u8>>,
    version: u8,
    ledger_id: i64,
    entry_id: i64,
) {
    let found = if entry_id == -1 {
        store
            .range((ledger_id, i64::MIN)..=(ledger_id, i64::MAX))
            .next_back()
    } else {
        store.get_key_value(&(ledger_id, entry_id))
    };
    if let Some((_, body)) = found {
        encode_read_response(out, version, code::EOK, ledger_id, entry_id, body);
        return;
    }
    let known = store
        .range((ledger_id, 0)..=(ledger_id, i64::MAX))
        .next()
        .is_some();
    let result = if known {
        code::ENOENTRY
    } else {
        code::ENOLEDGER
    };
    encode_read_response(out, version, result, ledger_id, entry_id, &[]);
}

#[derive(Parser)]
struct WritesCli {
    #[command(flatten)]
    args: WritesArgs,
}

#[derive(Parser)]
struct ReadsCli {
    #[command(flatten)]
    args: ReadsArgs,
}

/// Parses `writes` flags from one line (the paths used here contain no spaces).
fn writes_args(line: &str) -> WritesArgs {
    WritesCli::parse_from(std::iter::once("writes").chain(line.split_whitespace())).args
}

fn reads_args(line: &str) -> ReadsArgs {
    ReadsCli::parse_from(std::iter::once("reads").chain(line.split_whitespace())).args
}

fn temp_path(name: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("ringlog-bench-{}-{name}", std::process::id()));
    let _ = std::fs::remove_file(&path);
    path
}

/// True when io_uring works (the client drives its sockets through the engine's ring);
/// otherwise prints why and skips, unless CI or REQUIRE_URING is set, where a skip would hide
/// a broken build and so fails.
fn uring_available() -> bool {
    engine::uring::uring_available_for_test()
}

#[test]
fn writes_then_reads_verify_and_detect_corruption() {
    if !uring_available() {
        return;
    }
    let bookie = FakeBookie::start(FakeOptions {
        keep: true,
        close_after_adds: None,
    });
    let (log, json, hdr) = (temp_path("log"), temp_path("json"), temp_path("hdr"));
    let flags = format!(
        "--target {} --seconds 2 --warmup-seconds 0 --entry-size 100 --ledgers 8 \
         --throttle 256 --threads 2 --ledger-id-base 1000 --verify-log {} --json {} \
         --hdr-log {}",
        bookie.address,
        log.display(),
        json.display(),
        hdr.display()
    );
    super::run(&writes_args(&flags)).expect("writes succeeds");
    check_outputs(&bookie, &log, &json, &hdr);
    check_reads(&bookie, &log);
    for path in [log, json, hdr] {
        let _ = std::fs::remove_file(path);
    }
}

/// The JSON has the promised keys, the HdrHistogram log its headers and intervals, and the
/// verify log exactly the entries the bookie acked.
fn check_outputs(bookie: &FakeBookie, log: &Path, json: &Path, hdr: &Path) {
    let json_text = std::fs::read_to_string(json).expect("json written");
    for key in [
        "ops_per_sec",
        "mb_per_sec",
        "p999_us",
        "\"errors\":0",
        "\"connections\":8",
    ] {
        assert!(json_text.contains(key), "{key} in {json_text}");
    }
    let hdr_text = std::fs::read_to_string(hdr).expect("hdr log written");
    assert!(hdr_text.contains("#[StartTime: ") && hdr_text.contains("#[BaseTime: "));
    assert!(hdr_text.contains("\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\","));
    // The crate's own parser reads it back: headers, legend and one line per second.
    let mut intervals = 0;
    for entry in IntervalLogIterator::new(hdr_text.as_bytes()) {
        if let LogEntry::Interval(interval) = entry.expect("hdr log parses") {
            assert!(interval.duration() <= std::time::Duration::from_secs(1));
            intervals += 1;
        }
    }
    assert!(intervals >= 2, "{hdr_text}");
    let logged = crate::verify_log::read_log(log)
        .expect("log parses")
        .entries
        .len();
    let stored = bookie.store.lock().expect("lock").len();
    assert_eq!(logged, stored, "every acked entry is logged once");
    assert!(logged > 100);
}

/// Everything verifies, single and batched; then a flipped byte is corrupt, a dropped entry
/// missing, and a dropped tail entry also lowers entry -1.
fn check_reads(bookie: &FakeBookie, log: &Path) {
    let reads = |extra: &str| {
        let line = format!(
            "--target {} --verify-log {} {extra}",
            bookie.address,
            log.display()
        );
        crate::reads::run(&reads_args(&line))
    };
    reads("").expect("everything verifies");
    reads("--batch --outstanding 200").expect("batch reads verify");

    let first = *bookie
        .store
        .lock()
        .expect("lock")
        .keys()
        .next()
        .expect("an entry");
    bookie
        .store
        .lock()
        .expect("lock")
        .get_mut(&first)
        .expect("stored")[60] ^= 0x40;
    let error = reads("").expect_err("a corrupt byte fails the run");
    assert!(error.contains("1 corrupt"), "{error}");
    let error = reads("--batch").expect_err("also in batch mode");
    assert!(error.contains("1 corrupt"), "{error}");

    bookie.store.lock().expect("lock").remove(&first);
    let error = reads("").expect_err("a lost entry fails the run");
    assert!(error.contains("1 missing"), "{error}");
    let last = *bookie
        .store
        .lock()
        .expect("lock")
        .keys()
        .next_back()
        .expect("an entry");
    bookie.store.lock().expect("lock").remove(&last);
    let error = reads("").expect_err("a lost tail fails the run");
    assert!(
        error.contains("3 missing"),
        "entry, tail entry and its entry -1: {error}"
    );
}

#[test]
fn a_closed_connection_fails_the_run_and_the_log_keeps_only_acks() {
    if !uring_available() {
        return;
    }
    let options = FakeOptions {
        keep: true,
        close_after_adds: Some(500),
    };
    let bookie = FakeBookie::start(options);
    let log = temp_path("closed-log");
    let flags = format!(
        "--target {} --seconds 2 --warmup-seconds 0 --ledgers 4 --connections 1 \
         --throttle 100 --verify-log {}",
        bookie.address,
        log.display()
    );
    let error = super::run(&writes_args(&flags)).expect_err("the server went away");
    assert!(error.contains("closed by the server"), "{error}");
    assert!(error.contains("outstanding"), "{error}");
    let logged = crate::verify_log::read_log(&log)
        .expect("log parses")
        .entries
        .len();
    assert_eq!(logged as u64, bookie.adds.load(Ordering::Relaxed));
    let _ = std::fs::remove_file(log);
}

#[test]
fn deferred_durability_needs_v3() {
    let error = super::run(&writes_args("--durability deferred")).expect_err("v2 cannot");
    assert!(error.contains("--protocol v3"), "{error}");
}

#[test]
fn open_loop_sends_at_the_requested_rate() {
    if !uring_available() {
        return;
    }
    let bookie = FakeBookie::start(FakeOptions {
        keep: false,
        close_after_adds: None,
    });
    let json = temp_path("rate-json");
    let flags = format!(
        "--target {} --seconds 2 --warmup-seconds 0 --rate 2000 --ledgers 4 --json {}",
        bookie.address,
        json.display()
    );
    super::run(&writes_args(&flags)).expect("writes succeeds");
    let sent = bookie.adds.load(Ordering::Relaxed);
    assert!((3800..=4000).contains(&sent), "2 s at 2000/s sent {sent}");
    let json_text = std::fs::read_to_string(&json).expect("json written");
    assert!(json_text.contains("\"rate_target\":2000"), "{json_text}");
    let _ = std::fs::remove_file(json);
}

#[test]
fn entries_max_stops_sending_at_the_exact_count() {
    if !uring_available() {
        return;
    }
    let bookie = FakeBookie::start(FakeOptions {
        keep: false,
        close_after_adds: None,
    });
    let json = temp_path("entries-max-json");
    // 7001 over 2 threads: 3501 + 3500, the remainder to the first thread.
    let flags = format!(
        "--target {} --seconds 60 --warmup-seconds 0 --entries-max 7001 --ledgers 4 \
         --threads 2 --throttle 100 --json {}",
        bookie.address,
        json.display()
    );
    let started = std::time::Instant::now();
    super::run(&writes_args(&flags)).expect("writes succeeds");
    assert!(
        started.elapsed().as_secs() < 30,
        "stopped by the count, not the clock"
    );
    assert_eq!(bookie.adds.load(Ordering::Relaxed), 7001);
    let json_text = std::fs::read_to_string(&json).expect("json written");
    assert!(json_text.contains("\"count\":7001"), "{json_text}");
    let _ = std::fs::remove_file(json);
    assert!(super::run(&writes_args("--entries-max 0")).is_err());
}

#[test]
fn ledgers_connections_and_threads_map_as_documented() {
    let flags = "--ledgers 10 --connections 4 --threads 2 --throttle 7 --ledger-id-base 100";
    let plan = Plan::new(&writes_args(flags)).expect("valid");
    let thread = plan.thread(1);
    assert_eq!(thread.connection_labels, vec![1, 3]);
    // Ledger i is on connection i % 4; connections 1 and 3 are local 0 and 1 of thread 1.
    assert_eq!(
        thread.ledgers,
        vec![(101, 0), (103, 1), (105, 0), (107, 1), (109, 0)]
    );
    assert_eq!(plan.thread(0).throttle + thread.throttle, 7);
    assert_eq!(writes_args("--ledgers 50").connections, None);
    let plan = Plan::new(&writes_args("--ledgers 50")).expect("valid");
    assert_eq!(plan.connection_count, 16);
    assert!(Plan::new(&writes_args("--ledgers 2 --connections 3")).is_err());
    assert_eq!(parse_cores("1").expect("ok"), vec![1]);
    assert_eq!(parse_cores("0-2,5").expect("ok"), vec![0, 1, 2, 5]);
    assert!(parse_cores("2-1").is_err());
}

/// Client throughput against the fake, 16 connections unless `BENCH_FLAGS` (appended to the
/// flags, e.g. `--connections 1` or `--rate 200000`) says otherwise:
/// `cargo test --release -p bench client_throughput -- --nocapture` prints the numbers the
/// README quotes.
#[test]
fn client_throughput_against_the_fake_bookie() {
    if !uring_available() {
        return;
    }
    let bookie = FakeBookie::start(FakeOptions {
        keep: false,
        close_after_adds: None,
    });
    let extra = std::env::var("BENCH_FLAGS").unwrap_or_default();
    let connections = if extra.contains("--connections") {
        ""
    } else {
        "--connections 16"
    };
    let flags = format!(
        "--target {} --seconds 3 --warmup-seconds 1 {connections} {extra}",
        bookie.address
    );
    super::run(&writes_args(&flags)).expect("writes succeeds");
    assert!(bookie.adds.load(Ordering::Relaxed) > 1000);
}

/// With a `Rollover`, every slot writes exactly `ledger_entries` entries (ids 0..n) to each
/// ledger it opens, reports each ledger closed once all its adds are answered, and opens the
/// next generation's ledger only once that generation is ready.
#[test]
fn rollover_moves_slots_to_new_ledgers_only_when_ready() {
    if !uring_available() {
        return;
    }
    let bookie = FakeBookie::start(FakeOptions {
        keep: true,
        close_after_adds: None,
    });
    let flags = format!(
        "--target {} --seconds 2 --warmup-seconds 0 --entry-size 16 --ledgers 4 \
         --threads 2 --throttle 64 --rate 20000 --ledger-id-base 1000",
        bookie.address
    );
    let plan = Plan::new(&writes_args(&flags)).expect("valid");
    // Generations 0 and 1 exist; 2 never does: every slot stops after two ledgers.
    let rollover = super::Rollover {
        ledger_entries: 100,
        generation_ready: Arc::new(AtomicU64::new(1)),
    };
    let running = super::Running::start(&plan, None, Some(&rollover)).expect("started");
    let mut closed = Vec::new();
    for message in &running.receiver {
        if let super::Message::LedgerClosed { id, bytes, errors } = message {
            closed.push((id, bytes, errors));
        }
    }
    let outcomes = running.join().expect("joined");
    assert!(super::outcomes_failure(&outcomes).expect("sent").is_none());
    closed.sort_unstable();
    // Slot i of generation g is ledger 1000 + 4g + i.
    let expected: Vec<(i64, u64, u64)> = (1000..1008).map(|id| (id, 1600, 0)).collect();
    assert_eq!(closed, expected);
    let store = bookie.store.lock().expect("store");
    for id in 1000..1008 {
        let entries: Vec<i64> = store
            .range((id, 0)..(id + 1, 0))
            .map(|(k, _)| k.1)
            .collect();
        assert_eq!(entries, (0..100).collect::<Vec<_>>(), "ledger {id}");
    }
    assert_eq!(
        store.len(),
        800,
        "nothing written to a generation not ready"
    );
}
