//! The Prometheus text exposition format (version 0.0.4) of the shards' values, written by
//! hand: a handful of line shapes do not need a crate (docs/dependencies.md).
//!
//! Where the Java bookie exports the same quantity, the family has its name and shape
//! (docs/metrics.md), so Pulsar's bookie dashboards read ringlog unchanged: its counters
//! without `_total`, and its latencies (`OpStatsLogger`) as summaries in milliseconds with a
//! `success` label and quantiles over the last one to two minutes (`QuantileWindow`). The rest
//! are `ringlog_` families in base units, latencies as cumulative histograms in seconds.

use super::{HistogramId, ShardScalars, ShardValues, ERROR_CODES, ERROR_SLOTS};
use engine::histogram::HISTOGRAM_BUCKETS;
use engine::Log2Histogram;
use std::fmt::Write;
use std::time::{Duration, Instant};

/// How long the quantiles of the Java-named summaries look back, at least (and at most
/// twice that): the Java bookie's summaries also cover about a minute.
pub const QUANTILE_WINDOW: Duration = Duration::from_secs(60);

/// The quantiles the Java bookie's summaries report.
const QUANTILES: [(f64, &str); 7] = [
    (0.5, "0.5"),
    (0.75, "0.75"),
    (0.95, "0.95"),
    (0.99, "0.99"),
    (0.999, "0.999"),
    (0.9999, "0.9999"),
    (1.0, "1.0"),
];

/// Latency buckets shown: 8 µs (2^3) to 33.5 s (2^25); the smaller ones are folded into the
/// first, which is cumulative anyway.
const TIME_BUCKETS: (usize, usize) = (3, 25);
/// Records per commit: 1 to 16384 (`BATCH_RECORDS_MAX`).
const RECORD_BUCKETS: (usize, usize) = (0, 14);
/// Bytes per commit: 4 KiB (a sector) to 8 MiB (the largest commit).
const BYTE_BUCKETS: (usize, usize) = (12, 23);
const _: () = assert!(TIME_BUCKETS.1 < HISTOGRAM_BUCKETS - 1);
const _: () = assert!(BYTE_BUCKETS.1 < HISTOGRAM_BUCKETS - 1);

/// The state a scrape shows besides the shards' numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServerFlags {
    /// Some journal refuses adds (read-only or poisoned).
    pub read_only: bool,
    /// Data directories none of whose shards refuses adds.
    pub writable_dirs: u64,
    /// Collection rounds run early because a shard was under disk pressure.
    pub gc_rounds_forced: u64,
    /// What became of the repairs the shards asked for (docs/scrub.md, "Repair").
    pub repairs: crate::router::RepairCounts,
}

/// The totals at the start of the current and the previous window, so quantiles cover
/// between one and two `QUANTILE_WINDOW`s of the most recent values.
#[derive(Debug)]
pub struct QuantileWindow {
    previous: ShardValues,
    current: ShardValues,
    current_at: Instant,
}

impl QuantileWindow {
    /// A window starting now, from nothing.
    #[must_use]
    pub fn new(now: Instant) -> QuantileWindow {
        QuantileWindow {
            previous: ShardValues::default(),
            current: ShardValues::default(),
            current_at: now,
        }
    }

    /// Moves on to `total` once the current window is full; returns the start of the span
    /// quantiles are taken over.
    pub fn advance(&mut self, total: &ShardValues, now: Instant) -> &ShardValues {
        if now.saturating_duration_since(self.current_at) >= QUANTILE_WINDOW {
            self.previous = std::mem::replace(&mut self.current, total.clone());
            self.current_at = now;
        }
        &self.previous
    }
}

/// Appends the whole exposition of `total` (every shard summed), `shards` (each shard's own
/// values, for per-shard state), `since` (the window start for quantiles) and `flags`.
pub fn render(
    out: &mut String,
    total: &ShardValues,
    shards: &[ShardValues],
    since: &ShardValues,
    flags: ServerFlags,
) {
    render_java(out, total, since, flags);
    render_counters(out, total);
    let forced = "ringlog_gc_rounds_forced_total";
    family(
        out,
        forced,
        "counter",
        "collection rounds run early because a shard was under disk pressure",
    );
    sample(out, forced, "", flags.gc_rounds_forced);
    let repairs = [
        (
            "ringlog_repair_copied_total",
            "good copies of damaged entries read from other bookies and sent to their shard",
            flags.repairs.copied,
        ),
        (
            "ringlog_repair_marked_total",
            "damaged entries without a good copy anywhere: their ledger marked under-replicated",
            flags.repairs.marked,
        ),
        (
            "ringlog_repair_failed_total",
            "repairs that could not finish (ZooKeeper, a full mailbox); the next scrub cycle asks again",
            flags.repairs.failed,
        ),
        (
            "ringlog_repair_dropped_total",
            "repair requests dropped because the repairer's queue was full",
            flags.repairs.dropped,
        ),
    ];
    for (name, help, value) in repairs {
        family(out, name, "counter", help);
        sample(out, name, "", value);
    }
    render_errors(out, total);
    render_gauges(out, total, shards);
    render_histograms(out, total);
}

/// The Java bookie's families (BookKeeperServerStats: scopes `bookie`, `bookkeeper_server`,
/// `bookie_journal`).
fn render_java(out: &mut String, total: &ShardValues, since: &ShardValues, flags: ServerFlags) {
    let s = &total.scalars;
    let status = u64::from(!flags.read_only);
    family(
        out,
        "bookie_SERVER_STATUS",
        "gauge",
        "1 writable, 0 read-only",
    );
    sample(out, "bookie_SERVER_STATUS", "", status);
    family(out, "bookie_WRITE_BYTES", "counter", "entry bytes added");
    sample(out, "bookie_WRITE_BYTES", "", s.add_bytes);
    family(out, "bookie_READ_BYTES", "counter", "entry bytes read");
    sample(out, "bookie_READ_BYTES", "", s.read_bytes);
    let journal_bytes = "bookie_journal_JOURNAL_WRITE_BYTES";
    family(out, journal_bytes, "counter", "journal bytes written");
    sample(out, journal_bytes, "", s.bytes_written);
    let dirs = "bookie_ledger_writable_dirs";
    family(
        out,
        dirs,
        "gauge",
        "data directories whose journals take adds",
    );
    sample(out, dirs, "", flags.writable_dirs);
    let pairs = [
        (
            "bookkeeper_server_ADD_ENTRY_REQUEST",
            HistogramId::AddOk,
            HistogramId::AddFailed,
        ),
        (
            "bookkeeper_server_ADD_ENTRY",
            HistogramId::AddOk,
            HistogramId::AddFailed,
        ),
        (
            "bookkeeper_server_READ_ENTRY_REQUEST",
            HistogramId::ReadOk,
            HistogramId::ReadFailed,
        ),
        (
            "bookkeeper_server_READ_ENTRY",
            HistogramId::ReadOk,
            HistogramId::ReadFailed,
        ),
    ];
    for (name, ok, failed) in pairs {
        family(out, name, "summary", "received to answered, ms");
        summary(
            out,
            name,
            "true",
            total.histogram(ok),
            since.histogram(ok),
            1000,
        );
        summary(
            out,
            name,
            "false",
            total.histogram(failed),
            since.histogram(failed),
            1000,
        );
    }
    let syncs = [
        (
            "bookie_journal_JOURNAL_SYNC",
            HistogramId::CommitDisk,
            1000,
            "commit write+sync, ms",
        ),
        (
            "bookie_journal_JOURNAL_FORCE_WRITE_BATCH_ENTRIES",
            HistogramId::CommitRecords,
            1,
            "records per commit",
        ),
        (
            "bookie_journal_JOURNAL_FORCE_WRITE_BATCH_BYTES",
            HistogramId::CommitBytes,
            1,
            "bytes per commit",
        ),
    ];
    for (name, id, divisor, help) in syncs {
        family(out, name, "summary", help);
        let (now, then) = (total.histogram(id), since.histogram(id));
        summary(out, name, "true", now, then, divisor);
        summary(
            out,
            name,
            "false",
            &Log2Histogram::default(),
            &Log2Histogram::default(),
            1,
        );
    }
}

fn render_counters(out: &mut String, total: &ShardValues) {
    let s = &total.scalars;
    let counters = [
        ("ringlog_adds_total", "adds staged", s.adds),
        ("ringlog_add_bytes_total", "entry bytes added", s.add_bytes),
        (
            "ringlog_reads_total",
            "reads answered (a batch counts once)",
            s.reads,
        ),
        ("ringlog_read_bytes_total", "entry bytes read", s.read_bytes),
        ("ringlog_commits_total", "commits submitted", s.commits),
        (
            "ringlog_commits_durable_total",
            "commits durable",
            s.commits_durable,
        ),
        (
            "ringlog_syncs_total",
            "RWF_DSYNC writes and fdatasyncs completed",
            s.syncs,
        ),
        (
            "ringlog_entries_durable_total",
            "entries made durable",
            s.entries_durable,
        ),
        (
            "ringlog_journal_write_bytes_total",
            "commit bytes written",
            s.bytes_written,
        ),
        (
            "ringlog_commits_stalled_total",
            "commits over --commit-stall-ms",
            s.commits_stalled,
        ),
        (
            "ringlog_staging_full_total",
            "adds held back: staging full",
            s.staging_full,
        ),
        (
            "ringlog_forwarded_total",
            "requests sent to their owner shard",
            s.forwarded,
        ),
        (
            "ringlog_reads_cached_total",
            "reads served from memory",
            s.reads_cached,
        ),
        (
            "ringlog_reads_disk_total",
            "reads that went to disk alone",
            s.reads_disk,
        ),
        (
            "ringlog_reads_read_ahead_total",
            "reads served through a read-ahead window",
            s.reads_read_ahead,
        ),
        (
            "ringlog_read_ahead_windows_total",
            "read-ahead windows read",
            s.read_ahead_windows,
        ),
        (
            "ringlog_read_disk_bytes_total",
            "bytes the disk read for reads: their records, index pages, read-ahead windows",
            s.read_disk_bytes,
        ),
        (
            "ringlog_reads_paced_total",
            "reads that waited for the read pace while commits waited on the disk",
            s.reads_paced,
        ),
        (
            "ringlog_read_retries_total",
            "read attempts repeated because the engine had no free read slot",
            s.read_retries,
        ),
        (
            "ringlog_connections_accepted_total",
            "connections accepted",
            s.connections_accepted,
        ),
        (
            "ringlog_connections_rejected_total",
            "closed at accept",
            s.connections_rejected,
        ),
        (
            "ringlog_connections_invalid_total",
            "closed: protocol",
            s.connections_invalid,
        ),
        (
            "ringlog_connections_idle_total",
            "closed: idle timeout",
            s.connections_idle,
        ),
        (
            "ringlog_tls_sessions_started_total",
            "TLS sessions started (START_TLS answered)",
            s.tls_sessions_started,
        ),
        (
            "ringlog_tls_handshakes_total",
            "TLS handshakes completed",
            s.tls_handshakes,
        ),
        (
            "ringlog_tls_handshake_failures_total",
            "TLS handshakes failed (connection closed)",
            s.tls_handshake_failures,
        ),
        (
            "ringlog_tls_handshake_timeouts_total",
            "TLS handshakes timed out (connection closed)",
            s.tls_handshake_timeouts,
        ),
        (
            "ringlog_tls_unauthorized_total",
            "TLS connections whose certificate role is not authorized",
            s.tls_unauthorized,
        ),
        (
            "ringlog_requests_unauthorized_total",
            "requests answered EUA: connection not authorized",
            s.requests_unauthorized,
        ),
        (
            "ringlog_tls_reloads_total",
            "TLS certificate rotations picked up",
            s.tls_reloads,
        ),
        (
            "ringlog_tls_reload_failures_total",
            "TLS certificate rotations refused (old files kept)",
            s.tls_reload_failures,
        ),
        (
            "ringlog_gc_ledgers_deleted_total",
            "ledgers deleted",
            s.ledgers_deleted,
        ),
        (
            "ringlog_gc_segments_removed_total",
            "dead segments removed",
            s.segments_removed,
        ),
        (
            "ringlog_gc_segment_bytes_removed_total",
            "bytes of removed segments",
            s.segment_bytes_removed,
        ),
        (
            "ringlog_gc_compactions_total",
            "compactions finished",
            s.compactions_done,
        ),
        (
            "ringlog_gc_compactions_sorting_total",
            "compactions started to sort a segment by ledger",
            s.compactions_sorting,
        ),
        (
            "ringlog_gc_compactions_sorting_dropped_total",
            "sorts dropped while paused because space was needed",
            s.compactions_sorting_dropped,
        ),
        (
            "ringlog_gc_compaction_bytes_written_total",
            "bytes compaction wrote",
            s.compaction_bytes_written,
        ),
        (
            "ringlog_gc_compaction_bytes_read_total",
            "bytes compaction read back: slot pages and the records it copies",
            s.compaction_bytes_read,
        ),
        (
            "ringlog_scrub_bytes_total",
            "bytes the scrubber read back from sealed segments and their index files",
            s.scrub_bytes,
        ),
        (
            "ringlog_scrub_segments_total",
            "sealed segments the scrubber checked",
            s.scrub_segments,
        ),
        (
            "ringlog_scrub_cycles_total",
            "full scrub cycles completed",
            s.scrub_cycles_completed,
        ),
        (
            "ringlog_scrub_damage_records_total",
            "damaged records (and segment headers) the scrubber found",
            s.scrub_damage_records,
        ),
        (
            "ringlog_scrub_damage_index_total",
            "damage the scrubber found in index files",
            s.scrub_damage_index,
        ),
        (
            "ringlog_digest_mismatches_add_total",
            "added entries whose client digest did not verify (--verify-digest-on-add)",
            s.digest_mismatches_on_add,
        ),
        (
            "ringlog_scrub_damage_digests_total",
            "sound records whose client digest did not verify, found by the scrubber",
            s.scrub_damage_digests,
        ),
        (
            "ringlog_repair_requested_total",
            "damaged entries the shards asked the repairer to repair",
            s.repairs_requested,
        ),
        (
            "ringlog_repair_written_total",
            "good copies of damaged entries journaled durably in their place",
            s.repairs_written,
        ),
        (
            "ringlog_scrub_read_failures_total",
            "scrub reads that failed or came back short",
            s.scrub_read_failures,
        ),
        (
            "ringlog_gc_compaction_bytes_reclaimed_total",
            "segment bytes compaction gave back",
            s.compaction_bytes_freed,
        ),
        (
            "ringlog_gc_compaction_failures_total",
            "compactions abandoned",
            s.compaction_failures,
        ),
        (
            "ringlog_journal_zero_ahead_bytes_total",
            "bytes zeroed ahead of the write head in new segment files",
            s.zero_ahead_bytes,
        ),
        (
            "ringlog_journal_index_bytes_written_total",
            "bytes written to sealed segments' index files",
            s.index_bytes_written,
        ),
        (
            "ringlog_gc_segments_recycled_total",
            "dead segment files reused as new segments instead of removed",
            s.segments_recycled,
        ),
        (
            "ringlog_disk_space_waits_total",
            "times adds began to wait for compaction or removals to give disk space back",
            s.space_waits,
        ),
        (
            "ringlog_disk_space_wait_ms_total",
            "milliseconds adds waited for disk space, summed over shards",
            s.space_wait_ms,
        ),
    ];
    for (name, help, value) in counters {
        family(out, name, "counter", help);
        sample(out, name, "", value);
    }
}

fn render_errors(out: &mut String, total: &ShardValues) {
    let name = "ringlog_request_errors_total";
    family(
        out,
        name,
        "counter",
        "adds and reads answered with an error, by code",
    );
    for (operation, counts) in [("add", &total.add_errors), ("read", &total.read_errors)] {
        for (slot, &count) in counts.iter().enumerate().take(ERROR_SLOTS) {
            let code = ERROR_CODES.get(slot).map_or("OTHER", |&(_, label)| label);
            let labels = format!("operation=\"{operation}\",code=\"{code}\"");
            sample(out, name, &labels, count);
        }
    }
}

/// A gauge shown per shard: name, help, and how to read it from a shard's scalars.
type PerShardGauge = (&'static str, &'static str, fn(&ShardScalars) -> u64);

fn render_gauges(out: &mut String, total: &ShardValues, shards: &[ShardValues]) {
    let s = &total.scalars;
    let gauges = [
        (
            "ringlog_connections",
            "connections open",
            s.connections_open,
        ),
        (
            "ringlog_connections_tls",
            "connections open that speak TLS",
            s.connections_tls,
        ),
        (
            "ringlog_journal_bytes",
            "bytes of journal segment files",
            s.journal_bytes,
        ),
        (
            "ringlog_journal_sealed_live_bytes",
            "live entry bytes in sealed segments",
            s.sealed_live_bytes,
        ),
        ("ringlog_ledgers", "ledgers in the journals", s.ledgers),
    ];
    for (name, help, value) in gauges {
        family(out, name, "gauge", help);
        sample(out, name, "", value);
    }
    let name = "ringlog_journal_segments";
    family(out, name, "gauge", "journal segments, sealed or not");
    sample(out, name, "state=\"sealed\"", s.segments_sealed);
    sample(out, name, "state=\"unsealed\"", s.segments_unsealed);
    let per_shard: [PerShardGauge; 5] = [
        (
            "ringlog_shard_read_only",
            "1 while the shard's disk is full and nothing can give space back",
            |s| s.read_only,
        ),
        (
            "ringlog_shard_poisoned",
            "1 once the shard's journal is poisoned",
            |s| s.poisoned,
        ),
        (
            "ringlog_shard_waiting_for_space",
            "1 while the shard's adds wait for compaction or removals to give disk space back",
            |s| s.waiting_for_space,
        ),
        (
            "ringlog_shard_disk_pressure_per_mille",
            "disk pressure, 0 (free space above --disk-pressure-percent) to 1000 (at the reserve)",
            |s| s.disk_pressure_per_mille,
        ),
        (
            "ringlog_shard_compaction_threshold_per_mille",
            "live thousandths under which a sealed segment is compacted now (pressure raises it)",
            |s| s.compaction_threshold_per_mille,
        ),
    ];
    for (name, help, value) in per_shard {
        family(out, name, "gauge", help);
        for (shard, values) in shards.iter().enumerate() {
            sample(
                out,
                name,
                &format!("shard=\"{shard}\""),
                value(&values.scalars),
            );
        }
    }
}

fn render_histograms(out: &mut String, total: &ShardValues) {
    let name = "ringlog_add_stage_seconds";
    family(out, name, "histogram", "stages of an add (docs/metrics.md)");
    let stages = [
        ("received_to_staged", HistogramId::ReceivedToStaged),
        ("staged_to_submitted", HistogramId::StagedToSubmitted),
        ("submitted_to_durable", HistogramId::SubmittedToDurable),
        ("durable_to_sent", HistogramId::DurableToSent),
    ];
    for (stage, id) in stages {
        let labels = format!("stage=\"{stage}\"");
        histogram(out, name, &labels, total.histogram(id), TIME_BUCKETS, 1e6);
    }
    let requests = [
        (
            "ringlog_add_seconds",
            "adds, received to answered",
            HistogramId::AddOk,
        ),
        (
            "ringlog_read_seconds",
            "reads, received to answered",
            HistogramId::ReadOk,
        ),
    ];
    for (name, help, id) in requests {
        family(out, name, "histogram", help);
        histogram(out, name, "", total.histogram(id), TIME_BUCKETS, 1e6);
    }
    let commits = [
        (
            "ringlog_commit_disk_seconds",
            "a commit's write+sync",
            HistogramId::CommitDisk,
        ),
        (
            "ringlog_commit_records",
            "records per commit",
            HistogramId::CommitRecords,
        ),
        (
            "ringlog_commit_bytes",
            "bytes per commit",
            HistogramId::CommitBytes,
        ),
    ];
    for (name, help, id) in commits {
        family(out, name, "histogram", help);
        let (range, divisor) = match id {
            HistogramId::CommitDisk => (TIME_BUCKETS, 1e6),
            HistogramId::CommitRecords => (RECORD_BUCKETS, 1.0),
            _ => (BYTE_BUCKETS, 1.0),
        };
        histogram(out, name, "", total.histogram(id), range, divisor);
    }
}

fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    // Writing to a String cannot fail.
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

fn sample(out: &mut String, name: &str, labels: &str, value: u64) {
    if labels.is_empty() {
        let _ = writeln!(out, "{name} {value}");
    } else {
        let _ = writeln!(out, "{name}{{{labels}}} {value}");
    }
}

/// One histogram series: cumulative buckets `range` (bounds divided by `divisor`: 1e6 turns
/// microseconds into seconds), +Inf, sum, count.
fn histogram(
    out: &mut String,
    name: &str,
    labels: &str,
    values: &Log2Histogram,
    range: (usize, usize),
    divisor: f64,
) {
    let separator = if labels.is_empty() { "" } else { "," };
    let mut cumulative = 0;
    for (index, count) in values.buckets.iter().enumerate() {
        cumulative += count;
        if (range.0..=range.1).contains(&index) {
            // Lossy casts are fine for bucket bounds, which are powers of two.
            #[allow(clippy::cast_precision_loss)]
            let bound = Log2Histogram::bucket_bound(index) as f64 / divisor;
            let _ = writeln!(
                out,
                "{name}_bucket{{{labels}{separator}le=\"{bound}\"}} {cumulative}"
            );
        }
    }
    let _ = writeln!(
        out,
        "{name}_bucket{{{labels}{separator}le=\"+Inf\"}} {cumulative}"
    );
    #[allow(clippy::cast_precision_loss)]
    let sum = values.sum as f64 / divisor;
    if labels.is_empty() {
        let _ = writeln!(out, "{name}_sum {sum}\n{name}_count {cumulative}");
    } else {
        let _ = writeln!(
            out,
            "{name}_sum{{{labels}}} {sum}\n{name}_count{{{labels}}} {cumulative}"
        );
    }
}

/// One Java-style summary series: quantiles of `now - since` divided by `divisor` (1000:
/// microseconds as the Java bookie's milliseconds), NaN without values; count and sum of all.
fn summary(
    out: &mut String,
    name: &str,
    success: &str,
    now: &Log2Histogram,
    since: &Log2Histogram,
    divisor: u64,
) {
    let window = now.since(since);
    // Lossy casts are fine for quantile estimates and sums.
    #[allow(clippy::cast_precision_loss)]
    let scaled = |value: u64| value as f64 / divisor as f64;
    for (quantile, label) in QUANTILES {
        let labels = format!("success=\"{success}\",quantile=\"{label}\"");
        match window.quantile(quantile) {
            Some(value) => {
                let _ = writeln!(out, "{name}{{{labels}}} {}", scaled(value));
            }
            None => {
                let _ = writeln!(out, "{name}{{{labels}}} NaN");
            }
        }
    }
    let labels = format!("success=\"{success}\"");
    let _ = writeln!(out, "{name}_count{{{labels}}} {}", now.count());
    let _ = writeln!(out, "{name}_sum{{{labels}}} {}", scaled(now.sum));
}
