//! `ringlog-bench writes`: BookKeeper v2 ADD load against a bookie, with the semantics of
//! BookKeeper's `bin/benchmark writes` (BenchThroughputLatency): a random ledger per add, entry
//! ids per ledger from 0, at most `--throttle` adds outstanding, latency from send to ack.
//!
//! Layout: this file validates flags, starts the client threads (`Running`, which `churn`
//! reuses), merges and prints one line per second (`Intervals`) and assembles the report;
//! `worker` is one client thread; `connections` is its sockets.

mod connections;
mod worker;

#[cfg(test)]
mod tests;

pub(crate) use connections::{BufferSizes, Connections};
pub(crate) use worker::{ledger_id_of, Message, Outcome, Rollover};

use crate::report::Report;
use crate::verify_log::LogFile;
use hdrhistogram::serialization::interval_log::IntervalLogWriterBuilder;
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{mpsc, Arc, Barrier, OnceLock};
use std::time::{Duration, Instant, SystemTime};
use wire::{code, FRAME_SIZE_MAX_DEFAULT};
use worker::{Shared, ThreadPlan};

/// Flags of `ringlog-bench writes`.
#[derive(clap::Args, Debug, Clone)]
pub struct WritesArgs {
    /// Bookie address, HOST:PORT. Default: 127.0.0.1:3181 (BookKeeper's bookiePort).
    #[arg(long, default_value = "127.0.0.1:3181")]
    pub target: String,
    /// Payload bytes per entry (the body adds 32 header bytes and a 4-byte CRC32C digest).
    /// Default: 1024, like BenchThroughputLatency's -entrysize.
    #[arg(long, default_value_t = 1024)]
    pub entry_size: usize,
    /// Ledgers written; each add goes to a random one. Default: 50.
    #[arg(long, default_value_t = 50)]
    pub ledgers: usize,
    /// Most adds outstanding (sent, not yet acked) over all threads, like BookKeeper's
    /// -throttle. Closed loop: latency is then about throttle / throughput (Little's law).
    /// Default: 10000.
    #[arg(long, default_value_t = 10_000)]
    pub throttle: usize,
    /// Seconds measured after the warm-up; then sending stops and outstanding adds are
    /// waited for (at most 30 s). Default: 10.
    #[arg(long, default_value_t = 10)]
    pub seconds: u64,
    /// Stop sending after this many adds in all (warm-up included), or after `--seconds`,
    /// whichever comes first; then wait for the outstanding adds as at the end of
    /// `--seconds`. Each thread sends its share (the count / T, the remainder to the first
    /// threads). Fills a bookie with an exact entry count (scripts/retention.sh). Default:
    /// none.
    #[arg(long)]
    pub entries_max: Option<u64>,
    /// TCP connections. Ledger i (counting from 0) uses connection i % C, as the Java
    /// client's signSafeMod(ledgerId, numChannelsPerBookie): one ledger's adds arrive in
    /// order on one connection. Default: the number of ledgers, at most 16 (Pulsar's 16).
    #[arg(long)]
    pub connections: Option<usize>,
    /// Open loop: send at this fixed rate (adds/s over all threads) and measure latency from
    /// each add's intended send time, so stalls are not hidden (coordinated omission
    /// corrected, as wrk2). Default: none, closed loop (keep `--throttle` adds outstanding).
    #[arg(long)]
    pub rate: Option<f64>,
    /// When an add is acked: `sync` after it is durable. `deferred` (DEFERRED_SYNC, BP-14)
    /// after the journal write, before fdatasync; nothing forces the ledger, so the latency is
    /// the write path's. `deferred` needs `--protocol v3`. Default: sync.
    #[arg(long, value_enum, default_value_t = Durability::Sync)]
    pub durability: Durability,
    /// Wire protocol of the adds: `v2` (Pulsar's choice, useV2WireProtocol=true) or `v3`
    /// (protobuf, the Java client's default). Default: v2.
    #[arg(long, value_enum, default_value_t = Protocol::V2)]
    pub protocol: Protocol,
    /// Write the final report as one JSON object to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write an HdrHistogram interval log: one compressed (V2 deflate, base64) histogram of
    /// microseconds per second of the measured run. Default: none.
    #[arg(long)]
    pub hdr_log: Option<PathBuf>,
    /// Append one line `ledger_id entry_id payload_crc32c payload_len` per acked entry, for
    /// `ringlog-bench reads` to check later. Flushed every second and at the end, so a run
    /// whose server is killed still leaves a usable log. Default: none.
    #[arg(long)]
    pub verify_log: Option<PathBuf>,
    /// First ledger id; ledgers are base .. base + ledgers - 1. Default: the current time in
    /// ms x 1000, so repeated runs never reuse a ledger that already exists on the bookie.
    #[arg(long)]
    pub ledger_id_base: Option<i64>,
    /// Seconds of load before measuring, excluded from the report. Default: 1.
    #[arg(long, default_value_t = 1)]
    pub warmup_seconds: u64,
    /// Client threads; each owns every T-th connection (and so the ledgers on them) and
    /// drives them all from one loop. Default: 1.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Pin client thread t to the t-th core of this list (wrapping), e.g. `1` or `2,3` or
    /// `2-3`. Default: not pinned.
    #[arg(long)]
    pub cores: Option<String>,
    /// Microseconds a client thread polls its ring (yielding its core between checks) before
    /// it sleeps waiting for responses, as `ringlog serve --busy-poll-us` does on the server:
    /// then the reported latency does not include this client's own wake-up from sleep (15-25
    /// µs a round trip on a VM). 0 always sleeps, as most clients do (Netty's epoll). 0 to
    /// 10000. Default: 200.
    #[arg(long, default_value_t = 200)]
    pub busy_poll_us: u64,
    /// TLS to the bookie (START_TLS, as the BookKeeper client with tlsProviderFactoryClass).
    #[command(flatten)]
    pub tls: crate::tls_client::TlsArgs,
}

/// When the bookie acks an add.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// After the entry is durable (fsynced): BookKeeper's default.
    Sync,
    /// After the entry is written, before fsync (DEFERRED_SYNC write flag, v3 only).
    Deferred,
}

/// The wire protocol adds are sent in.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// BookKeeper's binary v2 protocol.
    V2,
    /// BookKeeper's protobuf v3 protocol.
    V3,
}

/// Runs the load, prints one line per second and the final report.
pub fn run(args: &WritesArgs) -> Result<(), String> {
    let plan = Plan::new(args)?;
    let log = args
        .verify_log
        .as_deref()
        .map(LogFile::open_append)
        .transpose()?;
    let mut hdr_log = args.hdr_log.as_deref().map(HdrLog::create).transpose()?;
    println!("{}", plan.describe());
    let running = Running::start(&plan, log, None)?;
    if let Some(hdr_log) = &mut hdr_log {
        let measure_start = SystemTime::now() + Duration::from_nanos(plan.warmup_ns);
        hdr_log.write_header(measure_start)?;
    }
    let (seconds_without_acks, hdr_result) =
        print_intervals(&running.receiver, &plan, hdr_log.as_mut());
    let outcomes = running.join()?;
    let failure = outcomes_failure(&outcomes)?;
    let mut report = plan.report(&outcomes);
    // A stall shows here even when the latency histogram's tail is made of few adds.
    report
        .extra
        .push(("seconds_without_acks", seconds_without_acks as f64));
    report.print();
    if let Some(path) = &args.json {
        report
            .write_json(path)
            .map_err(|error| format!("writing {}: {error}", path.display()))?;
    }
    hdr_result?;
    failure.map_or(Ok(()), Err)
}

/// The client threads of one run, started and past their common start line.
pub(crate) struct Running {
    /// Every thread's `Message`s; it ends once every thread has stopped.
    pub receiver: mpsc::Receiver<Message>,
    shared: Arc<Shared>,
    handles: Vec<std::thread::JoinHandle<Outcome>>,
}

impl Running {
    /// Starts one thread per `plan.thread`, each with `rollover`, and returns once every
    /// thread has connected (or failed to) and the clock has started.
    pub fn start(
        plan: &Plan,
        log: Option<LogFile>,
        rollover: Option<&Rollover>,
    ) -> Result<Running, String> {
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            start: OnceLock::new(),
            barrier: Barrier::new(plan.thread_count + 1),
            log,
        });
        let (sender, receiver) = mpsc::channel();
        let mut handles = Vec::with_capacity(plan.thread_count);
        for thread in 0..plan.thread_count {
            let mut thread_plan = plan.thread(thread);
            thread_plan.rollover = rollover.cloned();
            let (shared, sender) = (shared.clone(), sender.clone());
            let handle = std::thread::Builder::new()
                .name(format!("writes-{thread}"))
                .spawn(move || worker::run_thread(thread_plan, &shared, sender))
                .map_err(|error| format!("spawning client thread: {error}"))?;
            handles.push(handle);
        }
        drop(sender);
        shared.barrier.wait();
        let _ = shared.start.get_or_init(Instant::now);
        Ok(Running {
            receiver,
            shared,
            handles,
        })
    }

    /// Stops every thread at once, as a failed thread does: adds in flight are abandoned
    /// (the report counts them). For a controller that cannot go on (`churn`'s ZooKeeper).
    pub fn stop(&self) {
        self.shared
            .stop
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Waits for every thread and returns their outcomes.
    pub fn join(self) -> Result<Vec<Outcome>, String> {
        let mut outcomes = Vec::with_capacity(self.handles.len());
        for handle in self.handles {
            outcomes.push(
                handle
                    .join()
                    .map_err(|_| "a client thread panicked".to_string())?,
            );
        }
        Ok(outcomes)
    }
}

/// The first thread's failure, to return after the report; an `Err` at once if nothing was
/// sent at all (no connection, say): a report of zeros would only hide the error.
pub(crate) fn outcomes_failure(outcomes: &[Outcome]) -> Result<Option<String>, String> {
    let failure = outcomes.iter().find_map(|outcome| outcome.failure.clone());
    match failure {
        Some(failure) if outcomes.iter().all(|o| o.sent == 0) => Err(failure),
        failure => Ok(failure),
    }
}

/// The name of a v2 error code (§2.4 of the protocol notes).
pub(crate) fn code_name(value: i32) -> &'static str {
    match value {
        code::EOK => "EOK",
        code::ENOLEDGER => "ENOLEDGER",
        code::ENOENTRY => "ENOENTRY",
        code::EBADREQ => "EBADREQ",
        code::EIO => "EIO",
        code::EUA => "EUA",
        code::EBADVERSION => "EBADVERSION",
        code::EFENCED => "EFENCED",
        code::EREADONLY => "EREADONLY",
        code::ETOOMANYREQUESTS => "ETOOMANYREQUESTS",
        _ => "unknown",
    }
}

/// Largest payload: the ADD frame (4 length + 4 header + 20 key + 32 body header + 4 digest +
/// payload) must fit the bookie's default frame limit.
const ENTRY_SIZE_MAX: usize = FRAME_SIZE_MAX_DEFAULT as usize - 64;

const SECOND_NS: u64 = 1_000_000_000;

/// Default connection cap: Pulsar's numChannelsPerBookie.
const CONNECTIONS_DEFAULT_MAX: usize = 16;

/// Validated settings of one run.
pub(crate) struct Plan {
    target: String,
    pub entry_size: usize,
    pub ledger_count: usize,
    pub ledger_id_base: i64,
    connection_count: usize,
    pub thread_count: usize,
    throttle: usize,
    rate: Option<f64>,
    pub warmup_ns: u64,
    pub send_end_ns: u64,
    entries_max: Option<u64>,
    cores: Vec<usize>,
    protocol: Protocol,
    write_flags: i32,
    busy_poll: Duration,
    tls: Option<std::sync::Arc<rustls::ClientConfig>>,
}

impl Plan {
    pub fn new(args: &WritesArgs) -> Result<Plan, String> {
        if args.durability == Durability::Deferred && args.protocol == Protocol::V2 {
            return Err(
                "--durability deferred needs --protocol v3: v2 has no DEFERRED_SYNC write \
                 flag and no FORCE_LEDGER (BookKeeper's v2 client throws IllegalOpException)"
                    .into(),
            );
        }
        let connection_count = args
            .connections
            .unwrap_or(args.ledgers.min(CONNECTIONS_DEFAULT_MAX));
        check_flags(args, connection_count)?;
        let ledger_count = i64::try_from(args.ledgers).map_err(|_| "--ledgers too large")?;
        let ledger_id_base = match args.ledger_id_base {
            Some(base) => base,
            None => ledger_id_base_from_clock()?,
        };
        check(
            ledger_id_base >= 0 && ledger_id_base.checked_add(ledger_count).is_some(),
            "--ledger-id-base must be non-negative and leave room for every ledger",
        )?;
        let cores = args
            .cores
            .as_deref()
            .map(parse_cores)
            .transpose()?
            .unwrap_or_default();
        Ok(Plan {
            target: args.target.clone(),
            entry_size: args.entry_size,
            ledger_count: args.ledgers,
            ledger_id_base,
            connection_count,
            thread_count: args.threads,
            throttle: args.throttle,
            rate: args.rate,
            warmup_ns: args.warmup_seconds.saturating_mul(SECOND_NS),
            send_end_ns: (args.warmup_seconds.saturating_add(args.seconds))
                .saturating_mul(SECOND_NS),
            entries_max: args.entries_max,
            cores,
            protocol: args.protocol,
            write_flags: if args.durability == Durability::Deferred {
                wire::v3::WRITE_FLAG_DEFERRED_SYNC
            } else {
                0
            },
            busy_poll: Duration::from_micros(args.busy_poll_us),
            tls: args.tls.client_config()?,
        })
    }

    /// Thread t's share: connections t, t + T, ...; the ledgers on them; throttle / T.
    fn thread(&self, thread: usize) -> ThreadPlan {
        let labels: Vec<usize> = (thread..self.connection_count)
            .step_by(self.thread_count)
            .collect();
        let ledgers: Vec<(i64, usize)> = (0..self.ledger_count)
            .filter(|index| index % self.connection_count % self.thread_count == thread)
            .map(|index| {
                let id = self.ledger_id_base + i64::try_from(index).expect("checked in new");
                (id, index % self.connection_count / self.thread_count)
            })
            .collect();
        let extra = usize::from(thread < self.throttle % self.thread_count);
        let throttle = self.throttle / self.thread_count + extra;
        let thread_count = self.thread_count as u64;
        let sent_max = self.entries_max.map_or(u64::MAX, |entries| {
            entries / thread_count + u64::from((thread as u64) < entries % thread_count)
        });
        ThreadPlan {
            index: thread,
            target: self.target.clone(),
            connection_labels: labels,
            ledger_id_base: self.ledger_id_base,
            ledger_count: self.ledger_count,
            ledgers,
            throttle,
            period_ns: self.rate.map(|rate| 1e9 * self.thread_count as f64 / rate),
            entry_size: self.entry_size,
            warmup_ns: self.warmup_ns,
            send_end_ns: self.send_end_ns,
            sent_max,
            core: (!self.cores.is_empty()).then(|| self.cores[thread % self.cores.len()]),
            protocol: self.protocol,
            write_flags: self.write_flags,
            busy_poll: self.busy_poll,
            seed: (self.ledger_id_base as u64) ^ ((thread as u64 + 1) << 48),
            rollover: None,
            tls: self.tls.clone(),
        }
    }

    pub fn describe(&self) -> String {
        let last = self.ledger_id_base + i64::try_from(self.ledger_count).expect("checked") - 1;
        let mode = match self.rate {
            Some(rate) => format!("open loop at {rate} adds/s"),
            None => "closed loop".to_string(),
        };
        let until = self
            .entries_max
            .map_or(String::new(), |entries| format!(" or {entries} adds"));
        format!(
            "writes: {} | {} ledgers (ids {}..={last}) | {} connections | {} threads | \
             throttle {} | entry {} B | {mode} | {} {}{} | client busy-poll {} µs | {} s warm-up + \
             {} s{until}",
            self.target,
            self.ledger_count,
            self.ledger_id_base,
            self.connection_count,
            self.thread_count,
            self.throttle,
            self.entry_size,
            match self.protocol {
                Protocol::V2 => "v2",
                Protocol::V3 => "v3",
            },
            if self.write_flags == 0 {
                "sync"
            } else {
                "deferred"
            },
            if self.tls.is_some() {
                " over TLS (START_TLS)"
            } else {
                ""
            },
            self.busy_poll.as_micros(),
            self.warmup_ns / SECOND_NS,
            (self.send_end_ns - self.warmup_ns) / SECOND_NS,
        )
    }

    pub fn report(&self, outcomes: &[Outcome]) -> Report {
        let mut report = Report::new("writes");
        let mut end_ns = self.warmup_ns;
        let (mut sent, mut abandoned) = (0, 0);
        for outcome in outcomes {
            report.count += outcome.count;
            report.bytes += outcome.bytes;
            report.errors += outcome.errors;
            // Same bounds everywhere (`Report::latency_histogram`), so adding cannot fail.
            let _ = report.latency_us.add(&outcome.histogram);
            end_ns = end_ns.max(outcome.end_ns);
            sent += outcome.sent;
            abandoned += outcome.abandoned;
        }
        report.elapsed = Duration::from_nanos(end_ns - self.warmup_ns);
        report
            .extra
            .push(("connections", self.connection_count as f64));
        report.extra.push(("ledgers", self.ledger_count as f64));
        report.extra.push(("throttle", self.throttle as f64));
        report.extra.push(("entry_size", self.entry_size as f64));
        report.extra.push(("threads", self.thread_count as f64));
        if let Some(rate) = self.rate {
            report.extra.push(("rate_target", rate));
        }
        report.notes.push(self.describe());
        report.notes.push(format!(
            "{sent} adds sent in all (warm-up included); count/latency cover adds sent after \
             the warm-up, up to their acks; errors cover the whole run"
        ));
        if abandoned > 0 {
            report.notes.push(format!(
                "{abandoned} adds were still outstanding when it stopped"
            ));
        }
        if self.rate.is_some() {
            report
                .notes
                .push("latency from the intended send time (open loop)".into());
        }
        report
    }
}

/// Bounds of the flags that `Plan::new` does not derive anything from.
/// Largest `--busy-poll-us`, as the server's.
use engine::constants::BUSY_POLL_US_MAX;

fn check_flags(args: &WritesArgs, connection_count: usize) -> Result<(), String> {
    check(args.ledgers >= 1, "--ledgers must be at least 1")?;
    check(
        args.entry_size <= ENTRY_SIZE_MAX,
        "--entry-size exceeds the 5253120 B frame",
    )?;
    check(args.seconds >= 1, "--seconds must be at least 1")?;
    check(
        args.entries_max != Some(0),
        "--entries-max must be at least 1",
    )?;
    check(
        (1..=args.ledgers).contains(&connection_count),
        "--connections must be between 1 and --ledgers (a connection without a ledger \
             would carry nothing)",
    )?;
    check(
        (1..=connection_count).contains(&args.threads),
        "--threads must be between 1 and --connections",
    )?;
    check(
        args.throttle >= args.threads,
        "--throttle must be at least --threads",
    )?;
    check(
        args.busy_poll_us <= BUSY_POLL_US_MAX,
        "--busy-poll-us must be at most 10000",
    )?;
    if let Some(rate) = args.rate {
        check(
            rate.is_finite() && rate > 0.0,
            "--rate must be a positive number",
        )?;
    }
    Ok(())
}

fn check(condition: bool, message: &str) -> Result<(), String> {
    if condition {
        Ok(())
    } else {
        Err(message.to_string())
    }
}

fn ledger_id_base_from_clock() -> Result<i64, String> {
    let since_epoch = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_err(|_| "system clock is before 1970; pass --ledger-id-base".to_string())?;
    let milliseconds = i64::try_from(since_epoch.as_millis()).map_err(|_| "clock overflow")?;
    milliseconds
        .checked_mul(1000)
        .ok_or_else(|| "clock overflow".to_string())
}

/// Parses `1`, `2,3`, `0-3` or a mix into core ids.
fn parse_cores(list: &str) -> Result<Vec<usize>, String> {
    let bad = || format!("--cores: cannot parse {list:?} (use e.g. 1 or 2,3 or 2-3)");
    let mut cores = Vec::new();
    for part in list.split(',').map(str::trim) {
        match part.split_once('-') {
            Some((first, last)) => {
                let first: usize = first.trim().parse().map_err(|_| bad())?;
                let last: usize = last.trim().parse().map_err(|_| bad())?;
                check(first <= last, &bad())?;
                cores.extend(first..=last);
            }
            None => cores.push(part.parse().map_err(|_| bad())?),
        }
    }
    Ok(cores)
}

/// One second of all threads together.
pub(crate) struct IntervalTotal {
    samples: usize,
    pub start_ns: u64,
    pub end_ns: u64,
    pub count: u64,
    pub bytes: u64,
    pub errors: u64,
    pub histogram: Histogram<u64>,
}

impl IntervalTotal {
    fn new(start_ns: u64) -> IntervalTotal {
        let histogram = Report::latency_histogram();
        IntervalTotal {
            samples: 0,
            start_ns,
            end_ns: 0,
            count: 0,
            bytes: 0,
            errors: 0,
            histogram,
        }
    }

    fn add(&mut self, sample: &worker::Sample) {
        self.samples += 1;
        self.start_ns = self.start_ns.min(sample.start_ns);
        self.end_ns = self.end_ns.max(sample.end_ns);
        self.count += sample.count;
        self.bytes += sample.bytes;
        self.errors += sample.errors;
        // Same bounds everywhere (`Report::latency_histogram`), so adding cannot fail.
        let _ = self.histogram.add(&sample.histogram);
    }

    /// Shorter than a second: the drain's last interval.
    pub fn partial(&self) -> bool {
        self.end_ns - self.start_ns < SECOND_NS
    }
}

/// Merges the threads' per-second samples into seconds of the whole run: a second is
/// complete once every thread still running has reported it.
pub(crate) struct Intervals {
    totals: BTreeMap<u64, IntervalTotal>,
    last_index: Vec<Option<u64>>,
}

impl Intervals {
    pub fn new(thread_count: usize) -> Intervals {
        Intervals {
            totals: BTreeMap::new(),
            last_index: vec![None; thread_count],
        }
    }

    /// Takes in an `Interval` or `Done` message; false for any other message.
    pub fn add(&mut self, message: &Message) -> bool {
        match message {
            Message::Interval { index, sample } => {
                let total = self
                    .totals
                    .entry(*index)
                    .or_insert_with(|| IntervalTotal::new(sample.start_ns));
                total.add(sample);
                true
            }
            Message::Done { thread, last_index } => {
                self.last_index[*thread] = Some(*last_index);
                true
            }
            Message::LedgerClosed { .. } => false,
        }
    }

    /// The earliest second, once complete.
    pub fn pop_complete(&mut self) -> Option<(u64, IntervalTotal)> {
        let (&index, total) = self.totals.first_key_value()?;
        let expected = self
            .last_index
            .iter()
            .filter(|last| last.is_none_or(|l| l >= index))
            .count();
        if total.samples < expected {
            return None;
        }
        self.totals.pop_first()
    }

    /// The earliest second, complete or not (every sender is gone: what a failed thread
    /// left incomplete).
    pub fn pop_any(&mut self) -> Option<(u64, IntervalTotal)> {
        self.totals.pop_first()
    }
}

/// Merges the threads' per-second samples and prints each second once every thread still
/// running has reported it (a line like kafka-producer-perf-test's). Returns how many whole
/// measured seconds of sending had no ack at all, and the HdrHistogram log's outcome.
fn print_intervals(
    receiver: &mpsc::Receiver<Message>,
    plan: &Plan,
    mut hdr_log: Option<&mut HdrLog>,
) -> (u64, Result<(), String>) {
    let mut intervals = Intervals::new(plan.thread_count);
    let mut hdr_result = Ok(());
    let mut seconds_without_acks = 0;
    let mut emit = |index: u64, total: IntervalTotal| {
        let partial = total.partial();
        let measured_sending = total.start_ns >= plan.warmup_ns && total.end_ns <= plan.send_end_ns;
        if !partial && measured_sending && total.count == 0 {
            seconds_without_acks += 1;
        }
        if partial && total.count == 0 && total.errors == 0 {
            // The drain's last few milliseconds, often empty: nothing worth a line.
            return;
        }
        println!(
            "{}",
            interval_line(&total, index * SECOND_NS < plan.warmup_ns)
        );
        if let (Some(log), true) = (hdr_log.as_deref_mut(), total.start_ns >= plan.warmup_ns) {
            if hdr_result.is_ok() {
                hdr_result = log.write_interval(plan.warmup_ns, &total);
            }
        }
    };
    for message in receiver {
        intervals.add(&message);
        while let Some((index, total)) = intervals.pop_complete() {
            emit(index, total);
        }
    }
    // Every sender is gone: print whatever a failed thread left incomplete.
    while let Some((index, total)) = intervals.pop_any() {
        emit(index, total);
    }
    (seconds_without_acks, hdr_result)
}

pub(crate) fn interval_line(total: &IntervalTotal, warmup: bool) -> String {
    let seconds = (total.end_ns.saturating_sub(total.start_ns) as f64 / 1e9).max(1e-9);
    let (average_ms, max_ms) = if total.histogram.is_empty() {
        (0.0, 0.0)
    } else {
        (
            total.histogram.mean() / 1000.0,
            total.histogram.max() as f64 / 1000.0,
        )
    };
    let mut line = format!(
        "{} records sent, {:.1} records/sec ({:.2} MB/sec), {average_ms:.1} ms avg latency, \
         {max_ms:.1} ms max latency.",
        total.count,
        total.count as f64 / seconds,
        total.bytes as f64 / 1e6 / seconds,
    );
    if total.errors > 0 {
        line.push_str(&format!(" {} errors.", total.errors));
    }
    if warmup {
        line.push_str(" (warm-up)");
    }
    if seconds < 0.999 {
        line.push_str(&format!(" (last {seconds:.3} s)"));
    }
    line
}

/// `--hdr-log`: the HdrHistogram interval log format (Java's HistogramLogWriter), readable by
/// HistogramLogProcessor and HdrHistogram plotters. Values are microseconds.
struct HdrLog {
    path: PathBuf,
    file: std::io::BufWriter<std::fs::File>,
    serializer: V2DeflateSerializer,
}

impl HdrLog {
    fn create(path: &Path) -> Result<HdrLog, String> {
        let file = std::fs::File::create(path)
            .map_err(|error| format!("creating {}: {error}", path.display()))?;
        Ok(HdrLog {
            path: path.to_path_buf(),
            file: std::io::BufWriter::new(file),
            serializer: V2DeflateSerializer::new(),
        })
    }

    /// Comments, StartTime and BaseTime (both the start of measurement, so interval
    /// timestamps count from it), then the legend line Java writes.
    fn write_header(&mut self, measure_start: SystemTime) -> Result<(), String> {
        let mut builder = IntervalLogWriterBuilder::new();
        builder
            .add_comment("[Logged with ringlog-bench writes]")
            .add_comment("[Histogram log format version 1.3]")
            .add_comment("[Values and Interval_Max are microseconds]")
            .with_start_time(measure_start)
            .with_base_time(measure_start);
        let header = builder
            .begin_log_with(&mut self.file, &mut self.serializer)
            .map(|_| ());
        let legend = "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\
                      \"Interval_Compressed_Histogram\"\n";
        header
            .and_then(|()| self.file.write_all(legend.as_bytes()))
            .and_then(|()| self.file.flush())
            .map_err(|error| format!("writing {}: {error}", self.path.display()))
    }

    /// One line per interval, flushed at once so a killed run keeps what it measured.
    fn write_interval(&mut self, base_ns: u64, total: &IntervalTotal) -> Result<(), String> {
        // A fresh writer per line: without headers it writes nothing itself and holds no
        // state, and this keeps the legend (written above, outside it) in Java's position.
        let mut writer = IntervalLogWriterBuilder::new()
            .begin_log_with(&mut self.file, &mut self.serializer)
            .map_err(|error| format!("writing {}: {error}", self.path.display()))?;
        let start = Duration::from_nanos(total.start_ns.saturating_sub(base_ns));
        let length = Duration::from_nanos(total.end_ns.saturating_sub(total.start_ns));
        writer
            .write_histogram(&total.histogram, start, length, None)
            .map_err(|error| format!("writing {}: {error}", self.path.display()))?;
        self.file
            .flush()
            .map_err(|error| format!("writing {}: {error}", self.path.display()))
    }
}
