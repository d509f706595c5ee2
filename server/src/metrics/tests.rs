//! The exposition's text, request parsing, the state answers and the shard blocks.

use super::exposition::{render, QuantileWindow, ServerFlags, QUANTILE_WINDOW};
use super::http::{head_end, request_parse, BookieState, Refusal, Route};
use super::{error_slot, HistogramId, Metrics, ServerState, ShardValues, ERROR_SLOTS};
use crate::config::http_listen_parse;
use engine::Log2Histogram;
use std::time::Instant;
use wire::code;

fn rendered(total: &ShardValues, shards: &[ShardValues], read_only: bool) -> String {
    let mut out = String::new();
    let flags = ServerFlags {
        read_only,
        writable_dirs: u64::from(!read_only),
        gc_rounds_forced: 3,
        repairs: crate::router::RepairCounts::default(),
    };
    render(&mut out, total, shards, &ShardValues::default(), flags);
    out
}

fn lines_of<'a>(text: &'a str, prefix: &str) -> Vec<&'a str> {
    text.lines()
        .filter(|line| line.starts_with(prefix))
        .collect()
}

#[test]
fn histogram_buckets_and_quantiles() {
    assert_eq!(Log2Histogram::bucket_of(0), 0);
    assert_eq!(Log2Histogram::bucket_of(1), 0);
    assert_eq!(Log2Histogram::bucket_of(2), 1);
    assert_eq!(Log2Histogram::bucket_of(3), 2);
    assert_eq!(Log2Histogram::bucket_of(4), 2);
    assert_eq!(Log2Histogram::bucket_of(5), 3);
    assert_eq!(Log2Histogram::bucket_of(u64::MAX), 31);
    let mut histogram = Log2Histogram::default();
    assert_eq!(histogram.quantile(0.5), None);
    for value in [100, 100, 100, 5000] {
        histogram.record(value);
    }
    assert_eq!(histogram.count(), 4);
    assert_eq!(histogram.sum, 5300);
    assert_eq!(histogram.quantile(0.5), Some(128));
    assert_eq!(histogram.quantile(1.0), Some(8192));
    let earlier = histogram.clone();
    histogram.record_n(10, 3);
    let window = histogram.since(&earlier);
    assert_eq!(window.count(), 3);
    assert_eq!(window.sum, 30);
    assert_eq!(window.quantile(0.99), Some(16));
}

#[test]
fn exposition_of_counters_errors_and_histograms() {
    let mut values = ShardValues::default();
    values.scalars.adds = 7;
    values.scalars.add_bytes = 7000;
    values.add_errors[error_slot(code::EFENCED)] = 2;
    values.read_errors[error_slot(code::ENOENTRY)] = 1;
    values.read_errors[error_slot(-42)] = 5;
    let histogram = values.histogram_mut(HistogramId::SubmittedToDurable);
    histogram.record(3); // folded into the first bucket shown (8 µs)
    histogram.record(300);
    histogram.record(u64::MAX / 2); // past the last bucket shown: +Inf only
    let text = rendered(&values, &[values.clone()], false);
    assert!(text.contains("# TYPE ringlog_adds_total counter\nringlog_adds_total 7\n"));
    assert!(text.contains("\nbookie_WRITE_BYTES 7000\n"));
    assert!(text.contains("\nbookie_SERVER_STATUS 1\n"));
    assert!(text.contains("\nringlog_gc_rounds_forced_total 3\n"));
    let errors = "ringlog_request_errors_total";
    assert!(text.contains(&format!(
        "{errors}{{operation=\"add\",code=\"EFENCED\"}} 2\n"
    )));
    assert!(text.contains(&format!(
        "{errors}{{operation=\"read\",code=\"ENOENTRY\"}} 1\n"
    )));
    assert!(text.contains(&format!(
        "{errors}{{operation=\"read\",code=\"OTHER\"}} 5\n"
    )));
    let stage = "ringlog_add_stage_seconds_bucket{stage=\"submitted_to_durable\",";
    let buckets = lines_of(&text, stage);
    assert_eq!(buckets.len(), 24, "8 µs to 33.5 s, and +Inf");
    assert_eq!(buckets[0], format!("{stage}le=\"0.000008\"}} 1"));
    assert_eq!(buckets[6], format!("{stage}le=\"0.000512\"}} 2"));
    assert_eq!(buckets[22], format!("{stage}le=\"33.554432\"}} 2"));
    assert_eq!(buckets[23], format!("{stage}le=\"+Inf\"}} 3"));
    assert!(text.contains("ringlog_add_stage_seconds_count{stage=\"submitted_to_durable\"} 3\n"));
    // Every family has its HELP and TYPE once, and every line is a comment or a sample.
    for line in text.lines() {
        let sample = line.rsplit_once(' ').is_some_and(|(series, value)| {
            !series.is_empty() && (value == "NaN" || value.parse::<f64>().is_ok())
        });
        assert!(
            line.starts_with("# HELP ") || line.starts_with("# TYPE ") || sample,
            "{line}"
        );
    }
}

#[test]
fn java_summaries_in_milliseconds_over_the_window() {
    let mut values = ShardValues::default();
    values.histogram_mut(HistogramId::AddOk).record_n(1500, 10);
    let text = rendered(&values, &[values.clone()], true);
    let name = "bookkeeper_server_ADD_ENTRY_REQUEST";
    assert!(text.contains(&format!(
        "{name}{{success=\"true\",quantile=\"0.99\"}} 2.048\n"
    )));
    assert!(text.contains(&format!("{name}_count{{success=\"true\"}} 10\n")));
    assert!(text.contains(&format!("{name}_sum{{success=\"true\"}} 15\n")));
    assert!(text.contains(&format!(
        "{name}{{success=\"false\",quantile=\"0.5\"}} NaN\n"
    )));
    assert!(text.contains("\nbookie_SERVER_STATUS 0\n"));
    // The window: quantiles cover what came after the previous window's start.
    let start = Instant::now();
    let mut window = QuantileWindow::new(start);
    assert_eq!(window.advance(&values, start), &ShardValues::default());
    let later = start + QUANTILE_WINDOW;
    assert_eq!(window.advance(&values, later), &ShardValues::default());
    assert_eq!(window.advance(&values, later + QUANTILE_WINDOW), &values);
}

#[test]
fn per_shard_flags() {
    let mut shard = ShardValues::default();
    shard.scalars.read_only = 1;
    let text = rendered(&shard, &[ShardValues::default(), shard.clone()], true);
    assert!(text.contains("ringlog_shard_read_only{shard=\"0\"} 0\n"));
    assert!(text.contains("ringlog_shard_read_only{shard=\"1\"} 1\n"));
    assert!(text.contains("ringlog_shard_poisoned{shard=\"1\"} 0\n"));
}

#[test]
fn requests_parse() {
    let check = |head: &str, expect: Result<(Route, bool), Refusal>| {
        let parsed = request_parse(head.as_bytes()).map(|request| (request.route, request.head));
        assert_eq!(parsed, expect, "{head:?}");
    };
    check(
        "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n",
        Ok((Route::Metrics, false)),
    );
    check(
        "GET /metrics?name[]=x HTTP/1.0\r\n\r\n",
        Ok((Route::Metrics, false)),
    );
    check(
        "HEAD /heartbeat HTTP/1.1\r\n\r\n",
        Ok((Route::Heartbeat, true)),
    );
    check(
        "GET /api/v1/bookie/state/ HTTP/1.1\r\n\r\n",
        Ok((Route::State, false)),
    );
    check(
        "GET /api/v1/bookie/is_ready HTTP/1.1\r\n\r\n",
        Ok((Route::IsReady, false)),
    );
    check(
        "GET /api/v1/bookie/info HTTP/1.1\r\n\r\n",
        Ok((Route::Info, false)),
    );
    check(
        "GET /api/v1/bookie/scrub HTTP/1.1\r\n\r\n",
        Ok((Route::Scrub, false)),
    );
    check(
        "GET /api/v1/bookie HTTP/1.1\r\n\r\n",
        Err(Refusal::NotFound),
    );
    check(
        "POST /metrics HTTP/1.1\r\n\r\n",
        Err(Refusal::MethodNotAllowed),
    );
    check("GET /metrics HTTP/2\r\n\r\n", Err(Refusal::BadRequest));
    check("GET metrics HTTP/1.1\r\n\r\n", Err(Refusal::BadRequest));
    check("GET /metrics\r\n\r\n", Err(Refusal::BadRequest));
    check("GET  /metrics HTTP/1.1\r\n\r\n", Err(Refusal::BadRequest));
    check("\r\n\r\n", Err(Refusal::BadRequest));
    assert_eq!(
        request_parse(b"GET /\xff HTTP/1.1\r\n\r\n"),
        Err(Refusal::BadRequest)
    );
    assert_eq!(head_end(b"GET / HTTP/1.1\r\n"), None);
    assert_eq!(head_end(b"GET / HTTP/1.1\r\n\r\nrest"), Some(18));
}

#[test]
fn state_answers() {
    let serving = BookieState {
        running: true,
        read_only: false,
        poisoned: false,
        shutting_down: false,
    };
    assert_eq!(
        serving.json(),
        "{\"running\":true,\"readOnly\":false,\"shuttingDown\":false,\
         \"availableForHighPriorityWrites\":true}"
    );
    assert_eq!(serving.is_ready().status.0, 200);
    let read_only = BookieState {
        read_only: true,
        ..serving
    };
    assert!(read_only.json().contains("\"readOnly\":true"));
    assert!(read_only
        .json()
        .contains("\"availableForHighPriorityWrites\":false"));
    assert_eq!(
        read_only.is_ready().status.0,
        200,
        "read-only still serves reads"
    );
    for not_ready in [
        BookieState {
            running: false,
            ..serving
        },
        BookieState {
            poisoned: true,
            read_only: true,
            ..serving
        },
        BookieState {
            shutting_down: true,
            ..serving
        },
    ] {
        assert_eq!(not_ready.is_ready().status.0, 503, "{not_ready:?}");
    }
}

#[test]
fn shard_blocks_round_trip_and_stay_apart() {
    let metrics = Metrics::new(2);
    assert_eq!(metrics.state(), ServerState::Starting);
    let mut values = ShardValues::default();
    values.scalars.adds = 3;
    values.scalars.poisoned = 1;
    values.add_errors[ERROR_SLOTS - 1] = 4;
    values.histogram_mut(HistogramId::CommitBytes).record(4096);
    metrics.shard(1).store(&values);
    let loaded: Vec<ShardValues> = metrics.shards().collect();
    assert_eq!(loaded[0], ShardValues::default());
    assert_eq!(loaded[1], values);
    assert_eq!(std::mem::align_of::<super::ShardBlock>(), 128);
    assert_eq!(std::mem::size_of::<super::ShardBlock>() % 128, 0);
    metrics.state_set(ServerState::Serving);
    assert_eq!(metrics.state(), ServerState::Serving);
}

#[test]
fn http_listen_values() {
    assert_eq!(
        http_listen_parse(None).unwrap(),
        Some("0.0.0.0:8000".parse().unwrap())
    );
    assert_eq!(http_listen_parse(Some("off")).unwrap(), None);
    assert_eq!(
        http_listen_parse(Some("127.0.0.1:0")).unwrap(),
        Some("127.0.0.1:0".parse().unwrap())
    );
    assert!(http_listen_parse(Some("8000")).is_err());
    assert!(http_listen_parse(Some("")).is_err());
}
