//! The HTTP endpoint (issue 17): /metrics counts what a client did, the state endpoints
//! answer with the Java bookie's fields, and bad requests get 400/404/405.

use crate::support::{
    body, http_get, http_raw, http_request, metric, uring_available, Server, TestDir, KEY,
};
use std::io::{Read, Write};
use std::time::{Duration, Instant};
use wire::code;

const LEDGERS: [i64; 2] = [7_170_001, 7_170_002];
const ENTRIES: i64 = 150;

#[test]
fn metrics_count_what_the_client_did() {
    if !uring_available() {
        return;
    }
    let dir = TestDir::new("metrics");
    let server = Server::start(&dir.0, 2, &[]);
    let http = server.http.expect("the test flags turn HTTP on");
    let mut client = server.connect();
    let mut add_bytes = 0;
    for entry in 0..ENTRIES {
        for ledger in LEDGERS {
            assert_eq!(client.add(0, &KEY, ledger, entry), code::EOK);
            add_bytes += body(ledger, entry).len();
        }
    }
    let (status, _, read_body) = client.read(0, LEDGERS[0], 3, None);
    assert_eq!(status, code::EOK);
    // A batch read is one read (one request) with the bytes of all its entries.
    let (status, batch) = client.batch_read(LEDGERS[1], 10, 5, 1 << 20);
    assert_eq!((status, batch.len()), (code::EOK, 5));
    let read_bytes = read_body.len() + batch.iter().map(Vec::len).sum::<usize>();
    let (status, _, _) = client.read(0, LEDGERS[0], ENTRIES + 10, None);
    assert_eq!(status, code::ENOENTRY);
    let adds = f64::from(u32::try_from(ENTRIES).unwrap() * 2);
    // Shards publish on their 100 ms tick.
    let deadline = Instant::now() + Duration::from_secs(5);
    let scrape = loop {
        let (status, scrape) = http_get(http, "/metrics");
        assert_eq!(status, 200);
        // Reads counts the answered ones (the summary's `reads`); errors count apart.
        let errors = "ringlog_request_errors_total{operation=\"read\",code=\"ENOENTRY\"}";
        let settled = metric(&scrape, "ringlog_adds_total") == Some(adds)
            && metric(&scrape, "ringlog_reads_total") == Some(2.0)
            && metric(&scrape, errors) == Some(1.0);
        if settled {
            break scrape;
        }
        assert!(Instant::now() < deadline, "counters never moved: {scrape}");
        std::thread::sleep(Duration::from_millis(50));
    };
    let value = |series: &str| metric(&scrape, series).unwrap_or_else(|| panic!("{series}"));
    assert_eq!(value("bookie_WRITE_BYTES"), add_bytes as f64);
    assert_eq!(value("ringlog_add_bytes_total"), add_bytes as f64);
    assert_eq!(
        value("bookkeeper_server_ADD_ENTRY_REQUEST_count{success=\"true\"}"),
        adds
    );
    assert_eq!(
        value("bookkeeper_server_ADD_ENTRY_REQUEST_count{success=\"false\"}"),
        0.0
    );
    assert_eq!(value("ringlog_add_seconds_count"), adds);
    assert_eq!(value("ringlog_entries_durable_total"), adds);
    // One outstanding add at a time: a commit (and a sync) each.
    assert!(value("ringlog_commits_durable_total") >= adds);
    assert_eq!(
        value("ringlog_syncs_total"),
        value("ringlog_commits_durable_total")
    );
    assert_eq!(
        value("bookkeeper_server_READ_ENTRY_REQUEST_count{success=\"true\"}"),
        2.0
    );
    assert_eq!(value("ringlog_read_bytes_total"), read_bytes as f64);
    assert_eq!(value("ringlog_connections"), 1.0);
    assert_eq!(value("bookie_SERVER_STATUS"), 1.0);
    assert_eq!(value("ringlog_ledgers"), 2.0);
    let stage = "ringlog_add_stage_seconds_count{stage=\"submitted_to_durable\"}";
    assert_eq!(value(stage), value("ringlog_commits_durable_total"));
    assert!(value("ringlog_add_stage_seconds_count{stage=\"durable_to_sent\"}") >= 1.0);
    state_endpoints(http);
    bad_requests(http);
    let exited = server.terminate();
    assert_eq!(exited.status.code(), Some(0), "{:?}", exited.stderr);
}

fn state_endpoints(http: std::net::SocketAddr) {
    assert_eq!(http_get(http, "/heartbeat"), (200, "OK\n".to_string()));
    let (status, state) = http_get(http, "/api/v1/bookie/state");
    assert_eq!(status, 200);
    assert_eq!(
        state,
        "{\"running\":true,\"readOnly\":false,\"shuttingDown\":false,\
         \"availableForHighPriorityWrites\":true}"
    );
    assert_eq!(http_get(http, "/api/v1/bookie/is_ready").0, 200);
    let (status, info) = http_get(http, "/api/v1/bookie/info");
    assert_eq!(status, 200);
    assert!(info.starts_with("{\"freeSpace\":"), "{info}");
    assert!(info.contains(",\"totalSpace\":"), "{info}");
}

fn bad_requests(http: std::net::SocketAddr) {
    assert_eq!(http_get(http, "/no/such/path").0, 404);
    assert_eq!(http_request(http, "POST", "/metrics").0, 405);
    assert_eq!(http_raw(http, b"hello\r\n\r\n").0, 400);
    // A head that never ends within the bound is refused without reading further.
    let mut oversized = b"GET /metrics HTTP/1.1\r\nX-Filler: ".to_vec();
    oversized.resize(32 * 1024, b'a');
    assert_eq!(http_raw(http, &oversized).0, 400);
    // A client that never finishes its head is cut off (HTTP_REQUEST_MS_MAX, 2 s) without an
    // answer, and the request queued behind it is served then.
    let mut slow = std::net::TcpStream::connect(http).unwrap();
    slow.write_all(b"GET /metrics HTTP/1.1\r\n").unwrap();
    let started = Instant::now();
    assert_eq!(http_get(http, "/heartbeat").0, 200);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    slow.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut answer = Vec::new();
    assert_eq!(
        slow.read_to_end(&mut answer).unwrap(),
        0,
        "closed without an answer"
    );
    // HEAD: the headers of the answer, no body.
    let (status, body) = http_request(http, "HEAD", "/heartbeat");
    assert_eq!((status, body.as_str()), (200, ""));
}
