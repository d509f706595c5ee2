//! One shard: a thread pinned to its core with its own io_uring, journal, listener and
//! connections. Nothing here is shared with other shards except the `Router`.
//!
//! The loop, one turn: reap network completions; poll the journal and answer what became
//! durable or was read; take mail from other shards; retry reads the engine was too busy for;
//! decode every complete frame of every connection (bounded per connection) and stage its adds
//! into the journal's next commit; queue one send per connection; hand forwarded requests and
//! replies to other shards; arm recvs where the caps allow; `journal.submit()` (one commit, and
//! one `io_uring_enter` for everything queued); then sleep in the kernel if nothing happened.
//! Group commit and backpressure fall out of this shape: adds staged while earlier commits are
//! in flight go into one commit, and a connection at its cap is simply not read.

mod completions;
mod decode;
mod events;
mod mail;
mod publish;
mod repair;
mod sends;
mod startup;
mod timeouts;
mod tls;

pub use startup::shard_main;

use crate::config::Config;
use crate::connection::Connection;
use crate::limits;
use crate::metrics::Metrics;
use crate::poll_pause::PollPause;
use crate::request::client::Client;
use crate::request::pending::Token;
use crate::request::Bookie;
use crate::router::{Mail, Router, ShardId};
use crate::run_delay::RunDelay;
use crate::shard_stats::ShardStats;
use engine::uring::{Completion, NetBufferId, NetBuffers, PollEnd, Ring, Thread};
use engine::Event;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::{Receiver, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a shard thread needs from `run`.
pub struct ShardSetup {
    /// This shard.
    pub id: ShardId,
    /// The core it is pinned to.
    pub core: usize,
    /// The server configuration.
    pub config: Arc<Config>,
    /// Shared placement and mailboxes.
    pub router: Arc<Router>,
    /// This shard's mailbox.
    pub mailbox: Receiver<Mail>,
    /// Set by SIGINT/SIGTERM.
    pub shutdown: &'static AtomicBool,
    /// Startup progress, to `run`.
    pub status: Sender<Status>,
    /// The listener (or an abort), from `run`, once every shard has opened its journal.
    pub start: Receiver<Start>,
    /// Where the shard publishes its numbers (its own block) for the HTTP thread.
    pub metrics: Arc<Metrics>,
}

/// Startup progress a shard reports.
#[derive(Debug)]
pub enum Status {
    /// The journal is open and its ledgers are registered.
    Ready,
    /// The shard cannot start.
    Failed { shard: ShardId, error: StartError },
    /// The listener is armed: the shard serves.
    Accepting,
}

/// `run`'s answer to `Ready`.
#[derive(Debug)]
pub enum Start {
    /// Serve on this listener.
    Listen(OwnedFd),
    /// Another shard failed to start: exit.
    Abort,
}

/// Why a shard could not start.
#[derive(Debug)]
#[non_exhaustive]
pub enum StartError {
    /// io_uring setup failed.
    Ring(std::io::Error),
    /// The journal directory cannot be created or opened.
    DataDir {
        directory: PathBuf,
        error: std::io::Error,
    },
    /// The journal cannot be opened (I/O error or corruption).
    Journal {
        directory: PathBuf,
        error: engine::OpenError,
    },
    /// The listener cannot be armed.
    Listen(String),
    /// The TLS files cannot be used.
    Tls(crate::tls::TlsContextError),
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StartError::Ring(error) => write!(f, "cannot create an io_uring: {error}"),
            StartError::DataDir { directory, error } => {
                write!(
                    f,
                    "cannot open data directory {}: {error}",
                    directory.display()
                )
            }
            StartError::Journal { directory, error } => {
                write!(f, "cannot open journal {}: {error}", directory.display())?;
                if let engine::OpenError::Io { error, .. } = error {
                    if error.raw_os_error() == Some(libc::EINVAL) {
                        // O_DIRECT opens fail with EINVAL on tmpfs and similar file systems.
                        write!(
                            f,
                            " (no O_DIRECT here? use a real file system or --direct-io false)"
                        )?;
                    }
                }
                Ok(())
            }
            StartError::Listen(error) => write!(f, "cannot accept connections: {error}"),
            StartError::Tls(error) => write!(f, "tls: {error}"),
        }
    }
}

/// What a shard hands back when it exits.
#[derive(Clone, Debug)]
pub struct ShardReport {
    /// The shard.
    pub id: ShardId,
    /// Its core.
    pub core: usize,
    /// Its counters.
    pub stats: ShardStats,
    /// Its journal's counters.
    pub journal: engine::Stats,
    /// Voluntary context switches of the shard thread while it served.
    pub context_switches_voluntary: u64,
    /// Involuntary context switches while it served.
    pub context_switches_involuntary: u64,
}

/// Completion tags: kind in the top 4 bits, connection slot below.
const TAG_KIND_SHIFT: u32 = 28;
const TAG_INDEX_MASK: u32 = (1 << TAG_KIND_SHIFT) - 1;
const TAG_ACCEPT: u32 = 1;
const TAG_RECV: u32 = 2;
const TAG_SEND: u32 = 3;
const TAG_CANCEL: u32 = 4;
const TAG_EVENTFD: u32 = 5;
const TAG_CANCEL_LISTENER: u32 = 6;

fn tag(kind: u32, index: u32) -> u32 {
    assert!(index <= TAG_INDEX_MASK);
    (kind << TAG_KIND_SHIFT) | index
}

/// Requests forwarded by one peer shard.
struct Peer {
    inbox: VecDeque<Vec<u8>>,
    inbox_offset: usize,
    client: Client,
}

/// One shard's state, owned by its thread (see the module docs for the loop).
struct Shard {
    id: ShardId,
    core: usize,
    config: Arc<Config>,
    ring: Rc<RefCell<Ring>>,
    net: NetBuffers,
    completions: Vec<Completion>,
    events: Vec<Event>,
    /// What request handling may touch; apart from the connections so a handler can hold it
    /// next to one client.
    bookie: Bookie,
    connections: ConnectionTable,
    peers: Vec<Peer>,
    listener: Listener,
    mailbox: Receiver<Mail>,
    mail_retry: bool,
    lifecycle: Lifecycle,
    polling: Polling,
    tick_last: Instant,
    /// Commit plus read bytes at the last tick: the traffic that pauses sorting.
    traffic_bytes_at_tick: u64,
    /// The journal's bytes written at the last tick (compaction's share of them).
    committed_bytes_at_tick: u64,
    /// Ticks in a row this shard's traffic stayed below the sorting limit.
    sort_quiet_ticks: u32,
    /// Durable commits and their summed commit time at the last tick: what paces reads.
    commits_at_tick: (u64, u64),
    /// The commit the stall watchdog last reported, until it completes.
    stall_reported: Option<engine::CommitInFlight>,
    /// The LAC may have moved or a deadline passed: scan the parked long polls this turn.
    parked_check: bool,
    /// Where this shard publishes its numbers (block `id`), on its tick.
    metrics: Arc<Metrics>,
    /// When this turn reaped durable or written adds: the start of their last stage.
    durable_reaped_at: Option<Instant>,
    /// The connection-error counts last logged, and when (rate-limited log lines).
    connection_errors_logged: (Instant, [u64; 3]),
    /// TLS (`--tls-cert`): the configuration new sessions start from, and its rotation.
    tls: Option<crate::tls::TlsContext>,
    /// Handshake flights processed this turn (`TLS_HANDSHAKES_PER_TURN_MAX`).
    tls_handshakes_this_turn: u32,
    /// Repair copies journaled and not yet durable (`repair.rs`), by token slot.
    repairs_in_flight: Vec<Option<repair::RepairInFlight>>,
    /// The damaged entries of the checkpoint were handed to the repairer (`repairs_resume`).
    repairs_resumed: bool,
    /// When the repairer was last asked for each entry (`repair.rs`, `REPAIR_RETRY_MS`).
    repairs_asked: std::collections::HashMap<(i64, i64), std::time::Instant>,
    /// Damage lines logged this tick, and those left out since the last summary.
    damage_lines_this_tick: u32,
    damage_lines_dropped: u64,
}

/// The connection slots: a slot's index is the client index in tokens, and its generation
/// tells a reused slot from the connection a late event was meant for.
struct ConnectionTable {
    /// A live connection per used slot (`connections_max` slots).
    slots: Vec<Option<Connection>>,
    /// Unused slots, taken by accepts.
    free: Vec<u32>,
    /// Used slots, in no order: the loop walks these.
    active: Vec<u32>,
    /// Per slot, bumped when the slot is freed.
    generations: Vec<u32>,
}

impl ConnectionTable {
    /// Every slot free; nothing grows later.
    fn new(connections_max: usize) -> ConnectionTable {
        ConnectionTable {
            slots: (0..connections_max).map(|_| None).collect(),
            free: (0..connections_max)
                .rev()
                .map(|index| u32::try_from(index).expect("connections_max fits u32"))
                .collect(),
            active: Vec::with_capacity(connections_max),
            generations: vec![0; connections_max],
        }
    }
}

/// The listening socket and the two multishot reads that feed the loop: the accept, and the
/// eventfd other shards write to wake this one.
struct Listener {
    /// The SO_REUSEPORT listener, once `run` has handed it over.
    socket: Option<OwnedFd>,
    accept_armed: bool,
    /// After an accept error (e.g. EMFILE): not re-armed before then.
    accept_retry_at: Option<Instant>,
    eventfd_buffer: NetBufferId,
    eventfd_armed: bool,
}

/// Where the shard is between start and exit.
struct Lifecycle {
    /// The listener (or an abort), from `run`.
    start: Receiver<Start>,
    /// Set by SIGINT/SIGTERM.
    shutdown: &'static AtomicBool,
    /// No more accepts or reads: finish what is in flight.
    stopping: bool,
    /// Nothing of this shard's is in flight (last value told to the router).
    drained: bool,
    poison_reported: bool,
    /// The read-only state last printed (disk full), so each transition is printed once.
    read_only_reported: bool,
    /// The last wait-for-space state logged (`Journal::is_waiting_for_space`).
    space_wait_reported: bool,
    /// While the journal awaits the collector's answer to a block: the number of rounds that
    /// must have ended (one started after the block was seen), and when it was seen.
    gc_round_awaited: Option<(u64, Instant)>,
}

/// Whether a wait polls the ring or sleeps.
struct Polling {
    /// When the loop last did work: the shard polls instead of sleeping until
    /// `config.busy_poll` after it.
    progress_last: Instant,
    /// Whether polling is paused because another thread needed the shard's core.
    poll_pause: PollPause,
    /// This thread's scheduler run delay: grows when another thread takes turns on its core.
    run_delay: RunDelay,
}
impl Shard {
    /// The loop; returns when every shard is stopped and drained.
    fn run(mut self) -> ShardReport {
        let switches_start = Thread::context_switches();
        loop {
            self.bookie.progress = false;
            self.bookie.stats.turns += 1;
            self.reap();
            self.bookie.journal.poll();
            self.events_handle();
            self.parked_advance();
            self.poison_check();
            self.mail_receive();
            self.read_retries_run();
            self.stop_check();
            self.decode_all();
            self.tick();
            self.sends_submit();
            self.mail_send();
            self.closes_advance();
            self.arm_all();
            // Submits this turn's commit (if a commit slot is free), drives segment
            // preparation, and hands every queued SQE to the kernel in one io_uring_enter.
            self.bookie.journal.submit();
            if self.bookie.journal.is_poisoned() {
                // A poisoned journal's submit no longer flushes the ring; the answers must go.
                self.ring_submit();
            }
            if self.lifecycle.stopping && self.drain_check() {
                break;
            }
            if self.bookie.progress {
                self.polling.progress_last = Instant::now();
            } else {
                self.wait();
            }
        }
        let switches_end = Thread::context_switches();
        let lent = crate::limits::BATCH_READ_BUFFERS_SHARED_MAX - self.bookie.batch_buffers.len();
        self.bookie.stats.batch_buffers_lent = u64::try_from(lent).expect("small");
        ShardReport {
            id: self.id,
            core: self.core,
            stats: self.bookie.stats.clone(),
            journal: self.bookie.journal.stats().clone(),
            context_switches_voluntary: switches_end.0.saturating_sub(switches_start.0),
            context_switches_involuntary: switches_end.1.saturating_sub(switches_start.1),
        }
    }

    fn wait(&mut self) {
        self.bookie.stats.waits += 1;
        let wait_ms = if self.mail_retry {
            limits::LOOP_WAIT_MS_RETRY
        } else {
            limits::LOOP_WAIT_MS_MAX
        };
        let mut wait = Duration::from_millis(wait_ms);
        // Wake for the earliest long-poll deadline (at least 1 ms, so the loop cannot spin).
        if let Some(next) = self.bookie.parked_deadline_next {
            let until = next.saturating_duration_since(Instant::now());
            wait = wait.min(until.max(Duration::from_millis(1)));
        }
        // Poll instead of sleeping: while the journal has a disk operation in flight (its
        // completion is certain and, at the disk's latency, soon) for up to
        // BUSY_POLL_IN_FLIGHT_US_MAX, and otherwise for what is left of `busy_poll` after the
        // last work. Off with 0, and paused while another thread needs this core: the shard
        // waited for its CPU since the last wait (run delay), or a poll found the core taken.
        // Then that thread (a neighbour, or the kworker that completes this shard's writes)
        // is better served by a shard that sleeps, and so is the shard: the scheduler wakes a
        // sleeper when its completion arrives, while a poller waits out the other's slices.
        let busy_poll = self.config.busy_poll;
        let now = Instant::now();
        let budget = if !self.bookie.journal.is_idle() {
            Duration::from_micros(limits::BUSY_POLL_IN_FLIGHT_US_MAX)
        } else {
            busy_poll.saturating_sub(now.saturating_duration_since(self.polling.progress_last))
        }
        .min(wait);
        if !busy_poll.is_zero()
            && self
                .polling
                .run_delay
                .grew_by_more_than(limits::RUN_DELAY_US_CONTENDED * 1000)
        {
            self.bookie.stats.polls_paused_run_delay += 1;
            self.polling.poll_pause.contended(now);
        }
        let paused = self.polling.poll_pause.is_paused(now);
        if !busy_poll.is_zero() && !budget.is_zero() && !self.lifecycle.stopping && !paused {
            self.bookie.stats.busy_polls += 1;
            let result = self.ring.borrow_mut().busy_poll(budget);
            match result {
                Ok(PollEnd::Ready) => return,
                // Polled for the whole wait: the loop's turn is due anyway.
                Ok(PollEnd::Expired) if budget == wait => return,
                Ok(PollEnd::Expired) => {}
                Ok(PollEnd::Descheduled) => {
                    self.bookie.stats.polls_descheduled += 1;
                    self.polling.poll_pause.contended(Instant::now());
                }
                Err(error) => {
                    tracing::error!(shard = self.id, "io_uring poll failed: {error}; stopping");
                    self.bookie.router.poison();
                    return;
                }
            }
        }
        self.bookie.stats.sleeps += 1;
        let result = self.ring.borrow_mut().submit_and_wait_timeout(wait);
        if let Err(error) = result {
            // The ring is this shard's only way to the disk and the network.
            tracing::error!(shard = self.id, "io_uring wait failed: {error}; stopping");
            self.bookie.router.poison();
        }
    }

    fn ring_submit(&mut self) {
        if let Err(error) = self.ring.borrow_mut().submit() {
            tracing::error!(shard = self.id, "io_uring submit failed: {error}");
        }
    }

    fn poison_check(&mut self) {
        let journal = &self.bookie.journal;
        let read_only = journal.is_read_only() || journal.is_poisoned();
        self.bookie.router.read_only_set(self.id, read_only);
        if self.bookie.journal.is_poisoned() && !self.lifecycle.poison_reported {
            self.lifecycle.poison_reported = true;
            tracing::error!(
                shard = self.id,
                "journal poisoned (a write or fdatasync failed): pending adds get EIO, nothing \
                 more is acknowledged; exiting with status 2"
            );
            self.bookie.router.poison();
        }
    }
}

/// The client a token names, if it is still the client the token was issued to.
fn client_find<'a>(
    connections: &'a mut [Option<Connection>],
    peers: &'a mut [Peer],
    connections_max: usize,
    token: Token,
) -> Option<&'a mut Client> {
    let index = token.client as usize;
    let client = if index < connections_max {
        let connection = connections[index].as_mut()?;
        if connection.closing {
            return None;
        }
        &mut connection.client
    } else {
        &mut peers[index - connections_max].client
    };
    token.matches(client.generation).then_some(client)
}
