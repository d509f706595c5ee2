//! `ringlog-bench churn` (issue 14): ledgers created, written and deleted continuously, as a
//! Pulsar broker does, against a bookie whose garbage collector watches ZooKeeper.
//!
//! The adds go through `writes`' client threads (`Running`) with a `Rollover`: slot i of
//! `--ledgers` writes `--ledger-entries` entries to one ledger, waits for their acks, and
//! moves to its ledger of the next generation. This thread is the control thread: it runs a
//! current-thread tokio runtime for ZooKeeper (never a client thread), creates each
//! generation's metadata znodes before any slot may write there, deletes the znodes of
//! ledgers that fell out of the retention window (the bookie's collector then deletes their
//! data), and prints one line per second with the disk use of `--data-dir` against the
//! bytes still live.

// `ledgers` creates and deletes the same znodes for scripts.
pub(crate) mod zookeeper;

#[cfg(test)]
mod tests;

use crate::report::Report;
use crate::writes::{
    ledger_id_of, outcomes_failure, IntervalTotal, Intervals, Message, Plan, Rollover, Running,
    WritesArgs,
};
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::TryRecvError;
use std::sync::Arc;
use std::time::{Duration, Instant};
use zookeeper::{Metadata, ZkFailure};

/// Flags of `ringlog-bench churn`.
#[derive(clap::Args, Debug, Clone)]
pub struct ChurnArgs {
    /// Bookie address, HOST:PORT. Default: 127.0.0.1:3181.
    #[arg(long, default_value = "127.0.0.1:3181")]
    pub target: String,
    /// ZooKeeper servers, HOST:PORT[,HOST:PORT...]: the ones the bookie's `--zk` names.
    #[arg(long)]
    pub zk: String,
    /// Ledger metadata root, the bookie's `--zk-root`. ROOT/LAYOUT is created (hierarchical
    /// ledger manager, as BookKeeper writes it) if missing. Default: /ledgers.
    #[arg(long, default_value = "/ledgers")]
    pub zk_root: String,
    /// Payload bytes per entry. Default: 1024, the seed workload's.
    #[arg(long, default_value_t = 1024)]
    pub entry_size: usize,
    /// Ledgers open at once (slots); each add goes to a random one, as in `writes`.
    /// Default: 50, the seed workload's.
    #[arg(long, default_value_t = 50)]
    pub ledgers: usize,
    /// Entries per ledger; then its slot closes it and opens a new one. Default: 50000,
    /// Pulsar's managedLedgerMaxEntriesPerLedger.
    #[arg(long, default_value_t = 50_000)]
    pub ledger_entries: u32,
    /// Closed ledgers kept; older ones are deleted (their znodes), oldest first.
    /// Default: 2 x --ledgers (two generations).
    #[arg(long)]
    pub keep_ledgers: Option<usize>,
    /// Also delete a closed ledger once it has been closed this long, even within
    /// --keep-ledgers. Default: none (count only).
    #[arg(long)]
    pub keep_seconds: Option<f64>,
    /// Delete nothing: the same load with the same metadata, the A/B baseline.
    #[arg(long)]
    pub no_delete: bool,
    /// Open loop: adds/s over all threads, latency from each add's intended send time.
    /// Default: 294000, half the seed workload's 588,603 ops/s (README.md, `make bench`).
    #[arg(long, default_value_t = RATE_DEFAULT)]
    pub rate: f64,
    /// Most adds outstanding over all threads. Default: 20000, the seed workload's.
    #[arg(long, default_value_t = 20_000)]
    pub throttle: usize,
    /// Seconds measured after the warm-up. Default: 600 (issue 14's ten minutes).
    #[arg(long, default_value_t = 600)]
    pub seconds: u64,
    /// Seconds of load before measuring, excluded from the latency report. Default: 1.
    #[arg(long, default_value_t = 1)]
    pub warmup_seconds: u64,
    /// TCP connections (ledger slot i uses connection i % C). Default: ledgers, at most 16.
    #[arg(long)]
    pub connections: Option<usize>,
    /// Client threads. Default: 1.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Pin client thread t to the t-th core of this list (`1`, `2,3`, `2-3`).
    #[arg(long)]
    pub cores: Option<String>,
    /// Microseconds a client thread polls before it sleeps, as in `writes`. Default: 200.
    #[arg(long, default_value_t = 200)]
    pub busy_poll_us: u64,
    /// First ledger id; slot i of generation g writes `base + g * ledgers + i`. Default: the
    /// current time in ms x 1000, as `writes` (long hierarchical paths).
    #[arg(long)]
    pub ledger_id_base: Option<i64>,
    /// The bookie's data directory: its disk use (`du`) is sampled every second.
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// The bookie's process id: its `/proc/PID/io` write_bytes at the start and the end give
    /// the write amplification (bytes written to disk / payload bytes acked).
    #[arg(long)]
    pub server_pid: Option<u32>,
    /// ZooKeeper session timeout in milliseconds. Default: 10000.
    #[arg(long, default_value_t = 10_000)]
    pub zk_session_timeout_ms: u64,
    /// Write the final report as one JSON object to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// Half the seed workload's throughput (`make bench`, README.md: 588,603 ops/s).
const RATE_DEFAULT: f64 = 294_000.0;

/// Generations whose metadata exists ahead of the furthest one any slot has closed: a slot
/// then never waits for its next ledger's znode unless ZooKeeper stalls for a whole
/// generation's time.
const GENERATIONS_AHEAD: u64 = 2;

/// How long the control thread sleeps between looks at the client threads' messages; the
/// ZooKeeper session's task runs only while this thread is inside the runtime.
const CONTROL_TICK: Duration = Duration::from_millis(20);

/// Bytes written to disk per payload byte acked at which the aim is met.
const WRITE_AMPLIFICATION_AIM: f64 = 1.3;

/// Runs the churn, prints one line per second and the final report.
pub fn run(args: &ChurnArgs) -> Result<(), String> {
    let keep_ledgers = args.keep_ledgers.unwrap_or(args.ledgers.saturating_mul(2));
    check_flags(args)?;
    let plan = Plan::new(&writes_args(args))?;
    let generations_max = generations_max(args);
    let last_generation = generations_max + GENERATIONS_AHEAD;
    let last_id_fits = i64::try_from(last_generation)
        .ok()
        .and_then(|g| g.checked_mul(i64::try_from(args.ledgers).ok()?))
        .and_then(|offset| offset.checked_add(plan.ledger_id_base))
        .is_some();
    if !last_id_fits {
        return Err("--ledger-id-base leaves no room for the ledgers this run can open".into());
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .map_err(|error| format!("tokio runtime: {error}"))?;
    let session_timeout = Duration::from_millis(args.zk_session_timeout_ms);
    let metadata = runtime
        .block_on(Metadata::connect(&args.zk, &args.zk_root, session_timeout))
        .map_err(|error| error.to_string())?;
    runtime
        .block_on(metadata.layout_ensure())
        .map_err(|error| error.to_string())?;
    let mut control = Control::new(args, &plan, keep_ledgers, metadata, runtime);
    // Generation 0 and the ones ahead exist before the first add.
    control.generations_create(GENERATIONS_AHEAD)?;
    println!("{}", control.describe(&plan));
    control.io_start = control.server_write_bytes()?;
    let rollover = Rollover {
        ledger_entries: i64::from(args.ledger_entries),
        generation_ready: control.generation_ready.clone(),
    };
    let running = Running::start(&plan, None, Some(&rollover))?;
    let controlled = control.run(&running, &plan);
    if controlled.is_err() {
        running.stop();
    }
    let outcomes = running.join()?;
    controlled?;
    let failure = outcomes_failure(&outcomes)?;
    let io_end = control.server_write_bytes()?;
    let mut report = plan.report(&outcomes);
    report.name = "churn";
    control.report_extend(&mut report, io_end);
    report.print();
    if let Some(path) = &args.json {
        report
            .write_json(path)
            .map_err(|error| format!("writing {}: {error}", path.display()))?;
    }
    failure.map_or(Ok(()), Err)
}

/// The `writes` flags of the same load.
fn writes_args(args: &ChurnArgs) -> WritesArgs {
    WritesArgs {
        target: args.target.clone(),
        entry_size: args.entry_size,
        ledgers: args.ledgers,
        throttle: args.throttle,
        seconds: args.seconds,
        entries_max: None,
        connections: args.connections,
        rate: Some(args.rate),
        durability: crate::writes::Durability::Sync,
        protocol: crate::writes::Protocol::V2,
        json: None,
        hdr_log: None,
        verify_log: None,
        ledger_id_base: args.ledger_id_base,
        warmup_seconds: args.warmup_seconds,
        threads: args.threads,
        cores: args.cores.clone(),
        busy_poll_us: args.busy_poll_us,
        tls: crate::tls_client::TlsArgs::default(),
    }
}

fn check_flags(args: &ChurnArgs) -> Result<(), String> {
    if args.ledger_entries == 0 {
        return Err("--ledger-entries must be at least 1".into());
    }
    if !args.zk_root.starts_with('/') || args.zk_root.len() < 2 || args.zk_root.ends_with('/') {
        return Err("--zk-root must be an absolute znode path such as /ledgers".into());
    }
    if let Some(seconds) = args.keep_seconds {
        if !(seconds.is_finite() && seconds >= 0.0) {
            return Err("--keep-seconds must be a non-negative number".into());
        }
    }
    Ok(())
}

/// The most generations a slot can reach in this run: every add of the run sent to one slot.
fn generations_max(args: &ChurnArgs) -> u64 {
    let seconds = args.seconds.saturating_add(args.warmup_seconds) as f64;
    let adds = (args.rate * seconds).ceil() as u64;
    adds / u64::from(args.ledger_entries) + 1
}

/// A closed ledger waiting for its deletion.
struct Closed {
    id: i64,
    bytes: u64,
    closed_at: Instant,
}

/// One per-second sample of the disk against the live data.
struct Sample {
    /// Seconds since the start, at the end of the interval.
    second: u64,
    disk_bytes: u64,
    live_bytes: u64,
}

/// The control thread's state.
struct Control {
    runtime: tokio::runtime::Runtime,
    metadata: Metadata,
    base: i64,
    ledger_count: usize,
    keep_ledgers: usize,
    keep: Option<Duration>,
    delete: bool,
    /// Highest generation whose znodes exist, shared with the client threads.
    generation_ready: Arc<AtomicU64>,
    /// The same, `None` before the first generation's.
    created_through: Option<u64>,
    /// Highest generation a slot has closed a ledger of.
    generation_closed_max: Option<u64>,
    /// Closed ledgers not deleted yet, oldest first.
    closed: VecDeque<Closed>,
    ledgers_closed: u64,
    ledgers_deleted: u64,
    /// Payload bytes acked in all (warm-up included), and those of deleted ledgers.
    bytes_acked: u64,
    bytes_deleted: u64,
    errors: u64,
    data_dir: Option<PathBuf>,
    server_pid: Option<u32>,
    io_start: Option<u64>,
    samples: Vec<Sample>,
    /// The sample after the first deletion: the retention window is full from there on.
    steady_from: Option<usize>,
    zk_create_us_max: u64,
    zk_delete_us_max: u64,
    warmup_ns: u64,
    ledger_entries: u32,
}

impl Control {
    fn new(
        args: &ChurnArgs,
        plan: &Plan,
        keep_ledgers: usize,
        metadata: Metadata,
        runtime: tokio::runtime::Runtime,
    ) -> Control {
        Control {
            runtime,
            metadata,
            base: plan.ledger_id_base,
            ledger_count: plan.ledger_count,
            keep_ledgers,
            keep: args.keep_seconds.map(Duration::from_secs_f64),
            delete: !args.no_delete,
            generation_ready: Arc::new(AtomicU64::new(0)),
            created_through: None,
            generation_closed_max: None,
            closed: VecDeque::new(),
            ledgers_closed: 0,
            ledgers_deleted: 0,
            bytes_acked: 0,
            bytes_deleted: 0,
            errors: 0,
            data_dir: args.data_dir.clone(),
            server_pid: args.server_pid,
            io_start: None,
            samples: Vec::with_capacity(usize::try_from(args.seconds + 64).unwrap_or(0)),
            steady_from: None,
            zk_create_us_max: 0,
            zk_delete_us_max: 0,
            warmup_ns: plan.warmup_ns,
            ledger_entries: args.ledger_entries,
        }
    }

    fn describe(&self, plan: &Plan) -> String {
        let deletes = if self.delete {
            let time = self
                .keep
                .map_or(String::new(), |keep| format!(" or closed {keep:?} ago"));
            format!(
                "deleting closed ledgers beyond the newest {}{time}",
                self.keep_ledgers
            )
        } else {
            "no deletions (baseline)".to_string()
        };
        format!(
            "churn: {} ledgers open at once, {} entries each, {deletes}; metadata {} \
             (hierarchical); {}",
            self.ledger_count,
            self.ledger_entries,
            self.metadata.root(),
            plan.describe()
        )
    }

    /// Until every client thread has stopped: reads their messages, prints each second,
    /// keeps the metadata of the next generations ahead and deletes what left the window.
    fn run(&mut self, running: &Running, plan: &Plan) -> Result<(), String> {
        let mut intervals = Intervals::new(plan.thread_count);
        let mut stopped = false;
        while !stopped {
            // The sleep is made inside the runtime: its timer belongs to it.
            self.runtime
                .block_on(async { tokio::time::sleep(CONTROL_TICK).await });
            loop {
                match running.receiver.try_recv() {
                    Ok(message) => {
                        if !intervals.add(&message) {
                            self.on_closed(&message);
                        }
                    }
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => {
                        stopped = true;
                        break;
                    }
                }
            }
            while let Some((index, total)) = intervals.pop_complete() {
                self.second(index, &total)?;
            }
            let ahead = self
                .generation_closed_max
                .map_or(GENERATIONS_AHEAD, |g| g + GENERATIONS_AHEAD);
            self.generations_create(ahead)?;
            self.deletions(Instant::now())?;
        }
        while let Some((index, total)) = intervals.pop_any() {
            self.second(index, &total)?;
        }
        Ok(())
    }

    fn on_closed(&mut self, message: &Message) {
        let Message::LedgerClosed { id, bytes, errors } = *message else {
            return;
        };
        assert!(id >= self.base);
        let generation = u64::try_from((id - self.base) / self.ledger_count as i64)
            .expect("ids start at the base");
        self.generation_closed_max = Some(
            self.generation_closed_max
                .map_or(generation, |g| g.max(generation)),
        );
        self.ledgers_closed += 1;
        self.errors += errors;
        self.closed.push_back(Closed {
            id,
            bytes,
            closed_at: Instant::now(),
        });
    }

    /// Creates the znodes of every generation up to `last` that does not exist yet.
    fn generations_create(&mut self, last: u64) -> Result<(), String> {
        let first = self.created_through.map_or(0, |g| g + 1);
        for generation in first..=last {
            let ids: Vec<i64> = (0..self.ledger_count)
                .map(|index| ledger_id_of(self.base, self.ledger_count, generation, index))
                .collect();
            let started = Instant::now();
            self.runtime
                .block_on(self.metadata.ledgers_create(&ids))
                .map_err(|error: ZkFailure| error.to_string())?;
            let us = started.elapsed().as_micros() / ids.len() as u128;
            self.zk_create_us_max = self.zk_create_us_max.max(u64::try_from(us).unwrap_or(0));
            self.created_through = Some(generation);
            // Release: a slot that sees the generation also sees that its znodes exist.
            self.generation_ready.store(generation, Ordering::Release);
        }
        Ok(())
    }

    /// Deletes the znodes of the closed ledgers beyond the retention window, oldest first.
    fn deletions(&mut self, now: Instant) -> Result<(), String> {
        if !self.delete {
            return Ok(());
        }
        let mut ids = Vec::new();
        while let Some(oldest) = self.closed.front() {
            let expired = self
                .keep
                .is_some_and(|keep| now.duration_since(oldest.closed_at) >= keep);
            if self.closed.len() <= self.keep_ledgers && !expired {
                break;
            }
            let oldest = self.closed.pop_front().expect("just seen");
            ids.push(oldest.id);
            self.bytes_deleted += oldest.bytes;
            self.ledgers_deleted += 1;
        }
        if ids.is_empty() {
            return Ok(());
        }
        self.steady_from.get_or_insert(self.samples.len());
        let started = Instant::now();
        self.runtime
            .block_on(self.metadata.ledgers_delete(&ids))
            .map_err(|error: ZkFailure| error.to_string())?;
        let us = started.elapsed().as_micros() / ids.len() as u128;
        self.zk_delete_us_max = self.zk_delete_us_max.max(u64::try_from(us).unwrap_or(0));
        Ok(())
    }

    fn live_bytes(&self) -> u64 {
        // A ledger closed (and deleted) within the second being merged is ahead of its bytes.
        self.bytes_acked.saturating_sub(self.bytes_deleted)
    }

    /// One second of the run: its line, with the disk use sampled now.
    fn second(&mut self, index: u64, total: &IntervalTotal) -> Result<(), String> {
        self.bytes_acked += total.bytes;
        if total.partial() && total.count == 0 && total.errors == 0 {
            return Ok(());
        }
        let warmup = index * SECOND_NS < self.warmup_ns;
        let disk_bytes = match &self.data_dir {
            Some(dir) => {
                disk_bytes(dir).map_err(|error| format!("du {}: {error}", dir.display()))?
            }
            None => 0,
        };
        let live_bytes = self.live_bytes();
        let p99_ms = if total.histogram.is_empty() {
            0.0
        } else {
            total.histogram.value_at_quantile(0.99) as f64 / 1000.0
        };
        let max_ms = total.histogram.max() as f64 / 1000.0;
        let seconds = (total.end_ns - total.start_ns) as f64 / 1e9;
        let note = match (warmup, seconds < 0.999) {
            (true, _) => " (warm-up)".to_string(),
            (false, true) => format!(" (last {seconds:.3} s)"),
            (false, false) => String::new(),
        };
        println!(
            "{:.0} adds/s, p99 {p99_ms:.2} ms, max {max_ms:.2} ms, disk {:.1} MB, live {:.1} MB, \
             {} ledgers closed, {} deleted, {} errors{note}",
            total.count as f64 / seconds.max(1e-9),
            disk_bytes as f64 / 1e6,
            live_bytes as f64 / 1e6,
            self.ledgers_closed,
            self.ledgers_deleted,
            total.errors,
        );
        self.samples.push(Sample {
            second: total.end_ns / SECOND_NS,
            disk_bytes,
            live_bytes,
        });
        Ok(())
    }

    /// `write_bytes` of the server's `/proc/PID/io`, if `--server-pid` was given.
    fn server_write_bytes(&self) -> Result<Option<u64>, String> {
        self.server_pid
            .map(|pid| {
                let path = format!("/proc/{pid}/io");
                let text = std::fs::read_to_string(&path)
                    .map_err(|error| format!("reading {path}: {error}"))?;
                io_write_bytes(&text).ok_or_else(|| format!("{path} has no write_bytes line"))
            })
            .transpose()
    }

    /// The churn's own numbers: disk against live data, write amplification, metadata.
    fn report_extend(&self, report: &mut Report, io_end: Option<u64>) {
        let disk = DiskSummary::of(&self.samples, self.steady_from.unwrap_or(0));
        let extra = &mut report.extra;
        extra.push(("ledger_entries", f64::from(self.ledger_entries)));
        extra.push(("keep_ledgers", self.keep_ledgers as f64));
        extra.push(("deletions", if self.delete { 1.0 } else { 0.0 }));
        extra.push(("ledgers_closed", self.ledgers_closed as f64));
        extra.push(("ledgers_deleted", self.ledgers_deleted as f64));
        extra.push(("bytes_acked", self.bytes_acked as f64));
        extra.push(("live_bytes_end", self.live_bytes() as f64));
        extra.push(("live_bytes_max", disk.live_max as f64));
        extra.push(("disk_bytes_max", disk.disk_max as f64));
        extra.push(("disk_bytes_end", disk.disk_end as f64));
        extra.push(("steady_from_second", disk.steady_from_second as f64));
        extra.push(("disk_bytes_max_first_half", disk.disk_max_first_half as f64));
        extra.push((
            "disk_bytes_max_second_half",
            disk.disk_max_second_half as f64,
        ));
        extra.push(("live_bytes_at_disk_max", disk.live_at_disk_max as f64));
        extra.push(("disk_live_ratio_at_disk_max", disk.ratio_at_disk_max()));
        extra.push((
            "disk_max_over_live_max",
            ratio(disk.disk_max, disk.live_max),
        ));
        extra.push(("zk_create_us_max", self.zk_create_us_max as f64));
        extra.push(("zk_delete_us_max", self.zk_delete_us_max as f64));
        report.notes.push(format!(
            "disk (du of the data dir, every second): max {:.1} MB at {} s, when {:.1} MB \
             were live (disk/live {:.2}); live max {:.1} MB; disk max / live max {:.2}",
            disk.disk_max as f64 / 1e6,
            disk.disk_max_second,
            disk.live_at_disk_max as f64 / 1e6,
            disk.ratio_at_disk_max(),
            disk.live_max as f64 / 1e6,
            ratio(disk.disk_max, disk.live_max),
        ));
        if let (Some(start), Some(end)) = (self.io_start, io_end) {
            let written = end.saturating_sub(start);
            let amplification = ratio(written, self.bytes_acked);
            extra.push(("server_write_bytes", written as f64));
            extra.push(("write_amplification", amplification));
            report.notes.push(format!(
                "write amplification {amplification:.3} (aim <= {WRITE_AMPLIFICATION_AIM}): \
                 {:.1} MB written by the server (/proc/PID/io write_bytes) / {:.1} MB of \
                 payload acked",
                written as f64 / 1e6,
                self.bytes_acked as f64 / 1e6
            ));
        }
        if self.errors > 0 {
            report
                .notes
                .push(format!("{} adds of closed ledgers failed", self.errors));
        }
    }
}

const SECOND_NS: u64 = 1_000_000_000;

fn ratio(numerator: u64, denominator: u64) -> f64 {
    if denominator == 0 {
        0.0
    } else {
        numerator as f64 / denominator as f64
    }
}

/// The per-second samples, summed up.
#[derive(Debug, Default, PartialEq)]
struct DiskSummary {
    disk_max: u64,
    disk_max_second: u64,
    live_at_disk_max: u64,
    live_max: u64,
    disk_end: u64,
    /// The second from which on the halves count: when the first deletion was made (the
    /// retention window is full), or the start.
    steady_from_second: u64,
    /// Over the first and the second half of the seconds from `steady_from_second` on: a
    /// disk use that keeps growing once deletions run shows as a second half above the first.
    disk_max_first_half: u64,
    disk_max_second_half: u64,
}

impl DiskSummary {
    /// Sums up `samples`, the halves from sample `steady_from` on.
    fn of(samples: &[Sample], steady_from: usize) -> DiskSummary {
        let mut summary = DiskSummary::default();
        let steady = samples.get(steady_from..).unwrap_or_default();
        let from = steady.first().map_or(0, |first| first.second);
        summary.steady_from_second = from;
        let half = steady
            .last()
            .map_or(0, |last| from + (last.second - from) / 2);
        for sample in samples {
            if sample.disk_bytes > summary.disk_max {
                summary.disk_max = sample.disk_bytes;
                summary.disk_max_second = sample.second;
                summary.live_at_disk_max = sample.live_bytes;
            }
            summary.live_max = summary.live_max.max(sample.live_bytes);
            summary.disk_end = sample.disk_bytes;
        }
        for sample in steady {
            let half_max = if sample.second <= half {
                &mut summary.disk_max_first_half
            } else {
                &mut summary.disk_max_second_half
            };
            *half_max = (*half_max).max(sample.disk_bytes);
        }
        summary
    }

    fn ratio_at_disk_max(&self) -> f64 {
        ratio(self.disk_max, self.live_at_disk_max)
    }
}

/// Bytes allocated on disk under `dir`, as `du -s` counts them (st_blocks), files removed
/// during the walk skipped: the server deletes segments while it runs.
fn disk_bytes(dir: &Path) -> std::io::Result<u64> {
    use std::os::unix::fs::MetadataExt as _;
    let mut total = std::fs::symlink_metadata(dir)?.blocks() * 512;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(directory) = stack.pop() {
        let entries = match std::fs::read_dir(&directory) {
            Ok(entries) => entries,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => continue,
            Err(error) => return Err(error),
        };
        for entry in entries {
            let entry = entry?;
            let metadata = match entry.metadata() {
                Ok(metadata) => metadata,
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => continue,
                Err(error) => return Err(error),
            };
            total += metadata.blocks() * 512;
            if metadata.is_dir() {
                stack.push(entry.path());
            }
        }
    }
    Ok(total)
}

/// The `write_bytes` field of a `/proc/PID/io` text.
fn io_write_bytes(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|line| line.strip_prefix("write_bytes:"))
        .and_then(|value| value.trim().parse().ok())
}
