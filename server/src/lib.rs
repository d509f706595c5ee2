//! ringlog server: BookKeeper bookie (v2 and v3 protocols) on thread-per-core shards.
//!
//! `run` starts one shard per configured core (`shard`), each with its own io_uring, journal
//! and SO_REUSEPORT listener, once `data_dirs` has locked the data directories and found every
//! journal where the list places it; `router` places ledgers on shards and carries requests
//! between them; `connection` holds per-connection state and what each request does; `registration` lists
//! the bookie in ZooKeeper from its own thread (with --zk); `metrics` serves /metrics and the
//! bookie state endpoints from its own thread (--http-listen). The wire codec (v2 frames, v3
//! protobuf messages) is the `wire` crate.
#![forbid(unsafe_code)]

pub mod admin;
pub mod cli;
pub mod config;
mod connection;
pub mod data_dirs;
pub mod limits;
pub mod log;
pub mod metrics;
mod poll_pause;
pub mod registration;
mod request;
pub mod router;
mod run_delay;
mod shard;
mod shard_stats;
pub mod tls;

pub use config::Config;
pub use shard::{ShardReport, StartError};
pub use shard_stats::ShardStats;

use metrics::{Metrics, ServerState};
use registration::{Registration, RegistrationError};
use router::Router;
use shard::{ShardSetup, Start, Status};
use std::net::SocketAddr;
use std::os::fd::OwnedFd;
use std::sync::mpsc;
use std::sync::Arc;

/// How the server ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Stopped by SIGINT/SIGTERM after answering everything in flight: exit 0.
    Stopped,
    /// A journal write or fsync failed: exit 2, restart to recover (reliability.md rule 2).
    Poisoned,
}

/// Why the server could not start: exit 1.
#[derive(Debug)]
#[non_exhaustive]
pub enum RunError {
    /// io_uring is unavailable (old kernel, seccomp, io_uring_disabled).
    Uring(engine::uring::UringUnavailable),
    /// The signal handlers could not be installed.
    Signals(std::io::Error),
    /// The data directories cannot be used, or their journals are not where the list and
    /// the shard count place them.
    DataDirs(data_dirs::DataDirError),
    /// An eventfd, thread or channel could not be created.
    Setup {
        what: &'static str,
        error: std::io::Error,
    },
    /// A shard failed to start.
    Shard { shard: u16, error: StartError },
    /// The listen address cannot be bound (e.g. the port is in use).
    Bind {
        address: SocketAddr,
        error: std::io::Error,
    },
    /// The --http-listen address cannot be bound, or its thread not started.
    Http {
        address: SocketAddr,
        error: std::io::Error,
    },
    /// The ZooKeeper registration failed (--zk).
    Registration(RegistrationError),
    /// The TLS files cannot be used (--tls-cert, --tls-key, --tls-trust).
    Tls(tls::TlsContextError),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Uring(reason) => write!(f, "io_uring is not available: {}", reason.0),
            RunError::Signals(error) => write!(f, "cannot install signal handlers: {error}"),
            RunError::DataDirs(error) => write!(f, "{error}"),
            RunError::Setup { what, error } => write!(f, "cannot create {what}: {error}"),
            RunError::Shard { shard, error } => write!(f, "shard {shard}: {error}"),
            RunError::Bind { address, error } => write!(f, "cannot listen on {address}: {error}"),
            RunError::Http { address, error } => write!(
                f,
                "cannot serve HTTP on {address}: {error} (see --http-listen; off turns it off)"
            ),
            RunError::Registration(error) => write!(f, "registration: {error}"),
            RunError::Tls(error) => write!(f, "tls: {error}"),
        }
    }
}

impl std::error::Error for RunError {}

/// Raises the open-files limit as far as the hard limit allows and warns when even that is
/// below what `connections_max` per shard needs: connections past it are refused by the
/// kernel's accept (EMFILE), not by ringlog's own limit.
fn open_files_check(config: &Config) {
    // Journal files, listeners, eventfds, the ring: a few dozen per shard at most.
    const DESCRIPTORS_PER_SHARD_BESIDES_CONNECTIONS: u64 = 64;
    let shards = u64::try_from(config.shards()).expect("at most SHARDS_MAX");
    let connections = u64::try_from(config.connections_max).expect("at most CONNECTIONS_MAX_LIMIT");
    let needed = shards * (connections + DESCRIPTORS_PER_SHARD_BESIDES_CONNECTIONS);
    match engine::uring::Process::open_files_limit_raise() {
        Ok(limit) if limit >= needed => {}
        Ok(limit) => tracing::warn!(
            "the open-files limit is {limit}, below the {needed} that \
             {shards} shards x --connections-max {connections} need; raise it (ulimit -n, \
             LimitNOFILE=) or lower --connections-max"
        ),
        Err(error) => tracing::warn!("cannot read the open-files limit: {error}"),
    }
}

/// Runs the server until SIGINT/SIGTERM or a poisoned journal; prints the startup lines, the
/// "ringlog listening on ADDR with N shards" line once every shard accepts, and the shutdown
/// summary.
pub fn run(config: Config) -> Result<Outcome, RunError> {
    engine::uring::Ring::probe().map_err(RunError::Uring)?;
    let shutdown = engine::uring::Process::install_shutdown_signals().map_err(RunError::Signals)?;
    open_files_check(&config);
    // Before the journals open: a bad certificate or key fails the start at once, naming
    // the file (each shard reads the files again for its own configuration).
    if let Some(settings) = &config.tls {
        tls::TlsContext::load(Arc::clone(settings)).map_err(RunError::Tls)?;
    }
    // Held until exit: two servers appending to one journal would corrupt it.
    let _locks = data_dirs::prepare(&config).map_err(RunError::DataDirs)?;
    data_dirs_unused_warn(&config);
    let shards = config.shards();
    let (router, mailboxes) =
        Router::new(shards, limits::MAILBOX_MESSAGES_MAX).map_err(|error| RunError::Setup {
            what: "eventfds",
            error,
        })?;
    let router = Arc::new(router);
    let metrics = Arc::new(Metrics::new(shards));
    // Up before the journals open, so a readiness probe sees "starting" (503), not a refusal.
    http_start(&config, &metrics, &router)?;
    // Connects to ZooKeeper while the shards recover their journals.
    let registration = registration_start(&config, &router, shutdown)?;
    let config = Arc::new(config);
    let (status_sender, status) = mpsc::channel();
    let mut starts = Vec::with_capacity(shards);
    let mut threads = Vec::with_capacity(shards);
    for (index, mailbox) in mailboxes.into_iter().enumerate() {
        let (start_sender, start) = mpsc::channel();
        let setup = ShardSetup {
            id: u16::try_from(index).expect("at most SHARDS_MAX shards"),
            core: config.shard_cores[index],
            config: Arc::clone(&config),
            router: Arc::clone(&router),
            mailbox,
            shutdown,
            status: status_sender.clone(),
            start,
            metrics: Arc::clone(&metrics),
        };
        let thread = std::thread::Builder::new()
            .name(format!("ringlog-shard-{index}"))
            .spawn(move || shard::shard_main(setup));
        match thread {
            Ok(thread) => threads.push(thread),
            Err(error) => {
                abort(&router, &starts, threads, registration);
                return Err(RunError::Setup {
                    what: "a shard thread",
                    error,
                });
            }
        }
        starts.push(start_sender);
    }
    drop(status_sender);
    if let Err(error) = serve_start(&config, &status, &starts, registration.as_ref()) {
        abort(&router, &starts, threads, registration);
        return Err(error);
    }
    metrics.state_set(ServerState::Serving);
    let reports = shards_join(threads, registration);
    metrics.state_set(ServerState::Stopping);
    for report in &reports {
        println!("{}", summary_line(report));
    }
    let outcome = if router.is_poisoned() {
        Outcome::Poisoned
    } else {
        Outcome::Stopped
    };
    tracing::info!(?outcome, "stopped");
    Ok(outcome)
}

/// With --http-listen (not off), binds it and starts the HTTP thread; prints its address.
fn http_start(
    config: &Config,
    metrics: &Arc<Metrics>,
    router: &Arc<Router>,
) -> Result<(), RunError> {
    let Some(address) = config.http_listen else {
        return Ok(());
    };
    // --http-tls: the bookie port's certificate and key, without asking scrapers and probes
    // for a client certificate.
    let tls = match (&config.tls, config.http_tls) {
        (Some(settings), true) => {
            let http = tls::TlsSettings {
                trust: None,
                client_auth: false,
                authorized_roles: Vec::new(),
                ..(**settings).clone()
            };
            Some(tls::TlsContext::load(Arc::new(http)).map_err(RunError::Tls)?)
        }
        _ => None,
    };
    let https = tls.is_some();
    let bound = metrics::http::start(
        address,
        Arc::clone(metrics),
        Arc::clone(router),
        config.data_dirs.clone(),
        tls,
    )
    .map_err(|error| RunError::Http { address, error })?;
    println!("ringlog http on {bound}");
    if https {
        println!("ringlog http is https (--http-tls)");
    }
    Ok(())
}

/// Warns when --data-dir lists more directories than there are shards: the last ones hold no
/// journal (they are still locked, and take journals once --shards grows).
fn data_dirs_unused_warn(config: &Config) {
    let Some(unused) = config.data_dirs.get(config.shards()..) else {
        return;
    };
    for directory in unused {
        tracing::warn!(
            "data directory {} holds no journal: --data-dir lists {} \
             directories for {} shards",
            directory.display(),
            config.data_dirs.len(),
            config.shards()
        );
    }
}

/// Waits for the shards to stop, then for the registration thread, which began
/// deregistering when they began stopping.
fn shards_join(
    threads: Vec<std::thread::JoinHandle<Option<ShardReport>>>,
    registration: Option<Registration>,
) -> Vec<ShardReport> {
    let reports = threads
        .into_iter()
        .filter_map(|thread| thread.join().ok().flatten())
        .collect();
    if let Some(registration) = registration {
        registration.finish();
    }
    reports
}

/// With --zk, the registration thread.
fn registration_start(
    config: &Config,
    router: &Arc<Router>,
    shutdown: &'static std::sync::atomic::AtomicBool,
) -> Result<Option<Registration>, RunError> {
    let Some(settings) = config.registration.clone() else {
        return Ok(None);
    };
    Registration::start(
        settings,
        config.data_dir_first(),
        Arc::clone(router),
        config.tls.clone(),
        shutdown,
    )
    .map(Some)
    .map_err(RunError::Registration)
}

/// With --zk, waits for the ZooKeeper session before binding (an unreachable ZooKeeper
/// fails the start before any port opens), and registers once every shard serves.
fn serve_start(
    config: &Config,
    status: &mpsc::Receiver<Status>,
    starts: &[mpsc::Sender<Start>],
    registration: Option<&Registration>,
) -> Result<(), RunError> {
    let registration = match registration {
        Some(registration) if registration.connected().map_err(RunError::Registration)? => {
            Some(registration)
        }
        // Stopping already, or no --zk.
        _ => None,
    };
    let address = startup(config, status, starts)?;
    let Some(registration) = registration else {
        return Ok(());
    };
    if let Some(registered) = registration
        .register(address)
        .map_err(RunError::Registration)?
    {
        println!(
            "ringlog registered as {} in ZooKeeper at {}",
            registered.id, registered.path
        );
        tracing::info!(id = %registered.id, path = %registered.path, "registered in ZooKeeper");
    }
    Ok(())
}

/// Waits until every journal is open, binds every listener (all before any shard accepts, so
/// the port is never half-served), hands them out and waits until every shard accepts.
fn startup(
    config: &Config,
    status: &mpsc::Receiver<Status>,
    starts: &[mpsc::Sender<Start>],
) -> Result<SocketAddr, RunError> {
    let shards = starts.len();
    let mut failure = None;
    for _ in 0..shards {
        match status.recv() {
            Ok(Status::Ready | Status::Accepting) => {}
            Ok(Status::Failed { shard, error }) => {
                failure.get_or_insert(RunError::Shard { shard, error });
            }
            Err(_) => break,
        }
    }
    if let Some(failure) = failure {
        return Err(failure);
    }
    let (address, listeners) = listeners_bind(config.listen, shards)?;
    for (start, listener) in starts.iter().zip(listeners) {
        // A shard that is gone already reported why through `status`.
        let _ = start.send(Start::Listen(listener));
    }
    for _ in 0..shards {
        match status.recv() {
            Ok(Status::Accepting | Status::Ready) => {}
            Ok(Status::Failed { shard, error }) => return Err(RunError::Shard { shard, error }),
            Err(_) => break,
        }
    }
    println!("ringlog listening on {address} with {shards} shards");
    tracing::info!(
        %address,
        shards,
        http = %config.http_listen.map_or("off".to_string(), |http| http.to_string()),
        "serving"
    );
    Ok(address)
}

/// Binds one SO_REUSEPORT listener per shard on the same address. A plain bind first proves
/// the port free: SO_REUSEPORT alone would silently share it with another process of the same
/// user. With port 0 it also picks the port every shard then binds.
fn listeners_bind(
    address: SocketAddr,
    shards: usize,
) -> Result<(SocketAddr, Vec<OwnedFd>), RunError> {
    let bind_error = |error| RunError::Bind { address, error };
    let probe = std::net::TcpListener::bind(address).map_err(bind_error)?;
    let address = probe.local_addr().map_err(bind_error)?;
    drop(probe);
    let bind_error = |error| RunError::Bind { address, error };
    let mut listeners = Vec::with_capacity(shards);
    for _ in 0..shards {
        let listener = engine::uring::Socket::listen_reuseport(address, limits::LISTEN_BACKLOG)
            .map_err(bind_error)?;
        listeners.push(listener);
    }
    Ok((address, listeners))
}

/// Startup failed: tell every shard (and the registration thread) to exit and wait for them.
fn abort(
    router: &Router,
    starts: &[mpsc::Sender<Start>],
    threads: Vec<std::thread::JoinHandle<Option<ShardReport>>>,
    registration: Option<Registration>,
) {
    router.stop();
    for start in starts {
        let _ = start.send(Start::Abort);
    }
    for thread in threads {
        let _ = thread.join();
    }
    if let Some(registration) = registration {
        registration.finish();
    }
}

/// `total / count`, 0 for no samples.
fn average(total: u64, count: u64) -> f64 {
    // Lossy casts are fine for printed averages.
    #[allow(clippy::cast_precision_loss)]
    let average = total as f64 / count.max(1) as f64;
    average
}

/// One line per shard, `key=value` pairs so scripts can pick numbers out.
#[must_use]
pub fn summary_line(report: &ShardReport) -> String {
    let (stats, journal) = (&report.stats, &report.journal);
    let commits = journal.commits_durable.max(1);
    // Lossy casts are fine for printed ratios.
    #[allow(clippy::cast_precision_loss)]
    let ratio = |numerator: u64| numerator as f64 / commits as f64;
    format!(
        "shard {} summary: core={} connections_accepted={} connections_rejected={} \
         connections_invalid={} connections_idle={} adds={} reads={} commits={} \
         entries_per_commit={:.1} forwarded={} forwarded_served={} \
         batch_reads_side_by_side={} batch_buffers_lent={} read_retries={} \
         context_switches_voluntary={} context_switches_voluntary_per_commit={:.2} \
         context_switches_involuntary={} turns={} waits={} busy_polls={} sleeps={} \
         polls_descheduled={} polls_paused_run_delay={} commits_stalled={} \
         received_to_handled_us_avg={:.1} \
         commit_staging_us_avg={:.1} commit_io_us_avg={:.1} | journal records={} \
         entries_durable={} bytes_written={} staging_full={} segments_created={} \
         segment_create_failures={} reads_cached={} reads_disk={} reads_read_ahead={} \
         read_ahead_windows={} reads_paced={} read_disk_bytes={} read_checksum_failures={} \
         torn_tail_truncations={} segments_sealed={} index_bytes_written={} \
         checkpoints_written={} seal_failures={} index_page_reads={} index_page_hits={} \
         metadata_calls={} metadata_us_avg={:.1} metadata_us_max={} ledgers_deleted={} \
         segments_removed={} segment_bytes_removed={} segments_recycled={} zero_ahead_bytes={} \
         compactions_done={} compactions_sorting={} compactions_sorting_dropped={} \
         compaction_bytes_written={} compaction_bytes_read={} compaction_bytes_freed={} compaction_failures={} \
         compaction_refusals={} scrub_bytes={} scrub_segments={} scrub_cycles={} \
         scrub_damage_records={} scrub_damage_index={}",
        report.id,
        report.core,
        stats.connections_accepted,
        stats.connections_rejected,
        stats.connections_invalid,
        stats.connections_idle,
        stats.adds,
        stats.reads,
        journal.commits_durable,
        ratio(journal.entries_durable),
        stats.forwarded,
        stats.forwarded_served,
        stats.batch_reads_side_by_side,
        stats.batch_buffers_lent,
        stats.read_retries,
        report.context_switches_voluntary,
        ratio(report.context_switches_voluntary),
        report.context_switches_involuntary,
        stats.turns,
        stats.waits,
        stats.busy_polls,
        stats.sleeps,
        stats.polls_descheduled,
        stats.polls_paused_run_delay,
        stats.commits_stalled,
        average(stats.received_to_handled_us_total, stats.requests_handled),
        average(journal.commit_staging_us_total, journal.commits),
        average(journal.commit_io_us_total, journal.commits_durable),
        journal.records,
        journal.entries_durable,
        journal.bytes_written,
        journal.staging_full,
        journal.segments_created,
        journal.segment_create_failures,
        journal.reads_cached,
        journal.reads_disk,
        journal.reads_read_ahead,
        journal.read_ahead_windows,
        journal.reads_paced,
        journal.read_disk_bytes,
        journal.read_checksum_failures,
        journal.torn_tail_truncations,
        journal.segments_sealed,
        journal.index_bytes_written,
        journal.checkpoints_written,
        journal.seal_failures,
        journal.index_page_reads,
        journal.index_page_hits,
        journal.metadata_calls,
        average(journal.metadata_us_total, journal.metadata_calls),
        journal.metadata_us_max,
        journal.ledgers_deleted,
        journal.segments_removed,
        // What a churn soak's write amplification consists of (docs/churn.md).
        journal.segment_bytes_removed,
        journal.segments_recycled,
        journal.zero_ahead_bytes,
        journal.compactions_done,
        journal.compactions_sorting,
        journal.compactions_sorting_dropped,
        journal.compaction_bytes_written,
        journal.compaction_bytes_read,
        journal.compaction_bytes_freed,
        journal.compaction_failures,
        journal.compaction_refusals,
        journal.scrub_bytes,
        journal.scrub_segments,
        journal.scrub_cycles_completed,
        journal.scrub_damage_records,
        journal.scrub_damage_index,
    )
}
