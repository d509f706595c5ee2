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

use crate::config::Config;
use crate::connection::{
    batch_advance, connection_reference, connection_reference_split, read_error_code,
    read_retry_push, read_start, request_handle, respond_read, v3, Client, Connection, Context,
    Origin, PendingOp, Step, Token,
};
use crate::limits;
use crate::poll_pause::PollPause;
use crate::router::{Mail, OwnerCache, Router, SendError, ShardId, CONNECTION_REFERENCE_SIZE};
use crate::run_delay::RunDelay;
use engine::uring::{Completion, NetBufferId, NetBuffers, PollEnd, Ring, Socket, UringDisk};
use engine::{Event, Journal, ReadError};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wire::{code, AnyRequest, DecodedAny};

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
        }
    }
}

/// Counters of one shard, printed in the shutdown summary.
#[derive(Clone, Debug, Default)]
pub struct ShardStats {
    /// Connections accepted.
    pub connections_accepted: u64,
    /// Connections closed right after accept (cap reached, or stopping).
    pub connections_rejected: u64,
    /// Connections closed for a protocol violation.
    pub connections_invalid: u64,
    /// Connections closed by the idle timeout.
    pub connections_idle: u64,
    /// Adds staged into this shard's journal (its own and forwarded ones).
    pub adds: u64,
    /// Reads answered (single entries; a batch counts once).
    pub reads: u64,
    /// Requests this shard forwarded to the owner shard of their ledger.
    pub forwarded: u64,
    /// Requests other shards forwarded to this one.
    pub forwarded_served: u64,
    /// Accept completions with an error.
    pub accept_errors: u64,
    /// Loop turns.
    pub turns: u64,
    /// Turns that found nothing to do.
    pub waits: u64,
    /// Waits that polled the ring first (`--busy-poll-us`).
    pub busy_polls: u64,
    /// Waits that slept in the kernel (after polling, if they polled, found nothing).
    pub sleeps: u64,
    /// Polls that found another thread holding the shard's core, each pausing polling
    /// (`poll_pause.rs`).
    pub polls_descheduled: u64,
    /// Waits that found the shard's run delay grown by more than `RUN_DELAY_US_CONTENDED`
    /// since the previous wait, each pausing polling (`poll_pause.rs`).
    pub polls_paused_run_delay: u64,
    /// Commits reported by the stall watchdog (in flight longer than `--commit-stall-ms`).
    pub commits_stalled: u64,
    /// Requests decoded and handled (staged, answered or forwarded) from connections.
    pub requests_handled: u64,
    /// Sum over those requests of the time from their recv's completion to their handling,
    /// in microseconds: the receive → staged stage.
    pub received_to_handled_us_total: u64,
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

/// The shard thread: open the journal, wait for the listener, serve, report.
pub fn shard_main(setup: ShardSetup) -> Option<ShardReport> {
    let _exit_on_panic = ExitOnPanic(setup.id);
    if !core_affinity::set_for_current(core_affinity::CoreId { id: setup.core }) {
        eprintln!(
            "ringlog: shard {}: cannot pin to core {}; running unpinned",
            setup.id, setup.core
        );
    }
    if let Some(slice) = setup.config.shard_slice {
        let slice_ns = u64::try_from(slice.as_nanos()).unwrap_or(u64::MAX);
        if let Err(error) = engine::uring::thread_slice_set(slice_ns) {
            eprintln!(
                "ringlog: shard {}: cannot ask for a {} µs scheduler slice ({error}); keeping \
                 the kernel's default",
                setup.id,
                slice.as_micros()
            );
        }
    }
    let (status, router) = (setup.status.clone(), Arc::clone(&setup.router));
    match shard_start(setup, &status) {
        Some(shard) => {
            drop(status);
            Some(shard.run())
        }
        None => {
            // This shard never runs its loop: it counts as drained for good, so shards that
            // do run (if startup failed after they began) can finish their shutdown.
            router.drained_set(true);
            None
        }
    }
}

/// Opens the shard, reports Ready, waits for its listener and arms it; `None` on a failure
/// (reported through `status`) or an abort.
fn shard_start(setup: ShardSetup, status: &Sender<Status>) -> Option<Shard> {
    let id = setup.id;
    let mut shard = match Shard::open(setup) {
        Ok(shard) => shard,
        Err(error) => {
            let _ = status.send(Status::Failed { shard: id, error });
            return None;
        }
    };
    let _ = status.send(Status::Ready);
    let listener = match shard.start.recv() {
        Ok(Start::Listen(listener)) => listener,
        Ok(Start::Abort) | Err(_) => return None,
    };
    if let Err(error) = shard.listen(listener) {
        let _ = status.send(Status::Failed { shard: id, error });
        return None;
    }
    let _ = status.send(Status::Accepting);
    Some(shard)
}

/// A panic in a shard is a bug; the other shards might wait for it forever (forwarded
/// requests, the drain count), so the process exits. Acked data is durable and recovers.
struct ExitOnPanic(ShardId);

impl Drop for ExitOnPanic {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("ringlog: shard {} panicked; exiting", self.0);
            std::process::exit(101);
        }
    }
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

struct Shard {
    id: ShardId,
    core: usize,
    config: Arc<Config>,
    ring: Rc<RefCell<Ring>>,
    net: NetBuffers,
    completions: Vec<Completion>,
    events: Vec<Event>,
    context: Context,
    connections: Vec<Option<Connection>>,
    connections_free: Vec<u32>,
    connections_active: Vec<u32>,
    generations: Vec<u32>,
    peers: Vec<Peer>,
    listener: Option<OwnedFd>,
    accept_armed: bool,
    accept_retry_at: Option<Instant>,
    eventfd_buffer: NetBufferId,
    eventfd_armed: bool,
    mailbox: Receiver<Mail>,
    start: Receiver<Start>,
    shutdown: &'static AtomicBool,
    stopping: bool,
    drained: bool,
    poison_reported: bool,
    /// The read-only state last printed (disk full), so each transition is printed once.
    read_only_reported: bool,
    mail_retry: bool,
    tick_last: Instant,
    /// When the loop last did work: the shard polls instead of sleeping until
    /// `config.busy_poll` after it.
    progress_last: Instant,
    /// Whether polling is paused because another thread needed the shard's core.
    poll_pause: PollPause,
    /// This thread's scheduler run delay: grows when another thread takes turns on its core.
    run_delay: RunDelay,
    /// The commit the stall watchdog last reported, until it completes.
    stall_reported: Option<engine::CommitInFlight>,
    /// The LAC may have moved or a deadline passed: scan the parked long polls this turn.
    parked_check: bool,
}

impl Shard {
    /// Creates the ring, opens (recovers) the journal and registers its ledgers.
    fn open(setup: ShardSetup) -> Result<Shard, StartError> {
        let ShardSetup {
            id,
            core,
            config,
            router,
            mailbox,
            shutdown,
            status: _,
            start,
        } = setup;
        let ring = match Ring::new(engine::uring::RING_ENTRIES_DEFAULT) {
            Ok(ring) => Rc::new(RefCell::new(ring)),
            Err(error) => return Err(StartError::Ring(error)),
        };
        let directory = config.data_dir.join(format!("shard-{id}"));
        let disk = match UringDisk::open(ring.clone(), &directory, config.direct_io) {
            Ok(disk) => disk,
            Err(error) => return Err(StartError::DataDir { directory, error }),
        };
        let journal = match Journal::open(disk, config.journal.clone()) {
            Ok(journal) => journal,
            Err(error) => return Err(StartError::Journal { directory, error }),
        };
        let mut owners = OwnerCache::new(id);
        for ledger in journal.index().ledgers() {
            let owner = router.register(ledger.0, id);
            if owner != id {
                eprintln!(
                    "ringlog: shard {id}: ledger {} is also in shard {owner}'s journal; \
                     shard {owner} serves it",
                    ledger.0
                );
            }
            owners.insert(ledger.0, owner);
        }
        let shards = router.shards();
        let context = Context {
            shard: id,
            journal,
            router,
            owners,
            forward_out: vec![Vec::new(); shards],
            wake: vec![false; shards],
            read_retry: VecDeque::with_capacity(limits::READ_RETRY_QUEUE_MAX),
            parked: Vec::with_capacity(limits::PARKED_READS_MAX),
            parked_deadline_next: None,
            data_dir: config.data_dir.clone(),
            frame_size_max: config.frame_size_max,
            stats: ShardStats::default(),
            progress: false,
        };
        Ok(Shard::assemble(
            id, core, config, ring, context, mailbox, start, shutdown,
        ))
    }

    // One argument per part of the shard; a struct for them would only rename the fields.
    #[allow(clippy::too_many_arguments)]
    fn assemble(
        id: ShardId,
        core: usize,
        config: Arc<Config>,
        ring: Rc<RefCell<Ring>>,
        context: Context,
        mailbox: Receiver<Mail>,
        start: Receiver<Start>,
        shutdown: &'static AtomicBool,
    ) -> Shard {
        let connections_max = config.connections_max;
        let mut net = NetBuffers::new(2 * connections_max + 1);
        let eventfd_buffer = net.allocate(8);
        let shards = context.router.shards();
        let peer_output = limits::SEND_BUFFER_SIZE;
        let peers = (0..shards)
            .map(|_| Peer {
                inbox: VecDeque::with_capacity(limits::PEER_INBOX_MESSAGES_MAX),
                inbox_offset: 0,
                client: Client::new(0, limits::PEER_REQUESTS_IN_FLIGHT_MAX, peer_output, true),
            })
            .collect();
        // Events are swapped with the journal's vector, so ours gets the same capacity.
        let events_capacity = (config.journal.commits_in_flight_max + 1)
            * engine::constants::BATCH_RECORDS_MAX
            + config.journal.reads_in_flight_max;
        Shard {
            id,
            core,
            ring,
            net,
            completions: Vec::with_capacity(2 * engine::uring::RING_ENTRIES_DEFAULT as usize),
            events: Vec::with_capacity(events_capacity),
            context,
            connections: (0..connections_max).map(|_| None).collect(),
            connections_free: (0..connections_max)
                .rev()
                .map(|index| u32::try_from(index).expect("connections_max fits u32"))
                .collect(),
            connections_active: Vec::with_capacity(connections_max),
            generations: vec![0; connections_max],
            peers,
            listener: None,
            accept_armed: false,
            accept_retry_at: None,
            eventfd_buffer,
            eventfd_armed: false,
            mailbox,
            start,
            shutdown,
            stopping: false,
            drained: false,
            poison_reported: false,
            read_only_reported: false,
            mail_retry: false,
            tick_last: Instant::now(),
            progress_last: Instant::now(),
            poll_pause: PollPause::default(),
            run_delay: RunDelay::for_current_thread(),
            stall_reported: None,
            parked_check: false,
            config,
        }
    }

    /// Arms the multishot accept and the eventfd read, then prints the shard's startup line.
    fn listen(&mut self, listener: OwnedFd) -> Result<(), StartError> {
        let address = Socket::local_address(listener.as_raw_fd())
            .map_err(|error| StartError::Listen(error.to_string()))?;
        self.listener = Some(listener);
        self.accept_arm();
        self.eventfd_arm();
        if !self.accept_armed || !self.eventfd_armed {
            return Err(StartError::Listen(
                "the ring refused the accept or eventfd read".into(),
            ));
        }
        let stats = self.context.journal.stats();
        println!(
            "shard {}: core {}, journal {} ({} ledgers, {} torn tail truncated), listening on {}",
            self.id,
            self.core,
            self.config
                .data_dir
                .join(format!("shard-{}", self.id))
                .display(),
            self.context.journal.index().ledger_count(),
            stats.torn_tail_truncations,
            address
        );
        Ok(())
    }

    /// The loop; returns when every shard is stopped and drained.
    fn run(mut self) -> ShardReport {
        let switches_start = Socket::thread_context_switches();
        loop {
            self.context.progress = false;
            self.context.stats.turns += 1;
            self.reap();
            self.context.journal.poll();
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
            self.context.journal.submit();
            if self.context.journal.is_poisoned() {
                // A poisoned journal's submit no longer flushes the ring; the answers must go.
                self.ring_submit();
            }
            if self.stopping && self.drain_check() {
                break;
            }
            if self.context.progress {
                self.progress_last = Instant::now();
            } else {
                self.wait();
            }
        }
        let switches_end = Socket::thread_context_switches();
        ShardReport {
            id: self.id,
            core: self.core,
            stats: self.context.stats.clone(),
            journal: self.context.journal.stats().clone(),
            context_switches_voluntary: switches_end.0.saturating_sub(switches_start.0),
            context_switches_involuntary: switches_end.1.saturating_sub(switches_start.1),
        }
    }

    fn wait(&mut self) {
        self.context.stats.waits += 1;
        let wait_ms = if self.mail_retry {
            limits::LOOP_WAIT_MS_RETRY
        } else {
            limits::LOOP_WAIT_MS_MAX
        };
        let mut wait = Duration::from_millis(wait_ms);
        // Wake for the earliest long-poll deadline (at least 1 ms, so the loop cannot spin).
        if let Some(next) = self.context.parked_deadline_next {
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
        let budget = if !self.context.journal.is_idle() {
            Duration::from_micros(limits::BUSY_POLL_IN_FLIGHT_US_MAX)
        } else {
            busy_poll.saturating_sub(now.saturating_duration_since(self.progress_last))
        }
        .min(wait);
        if !busy_poll.is_zero()
            && self
                .run_delay
                .grew_by_more_than(limits::RUN_DELAY_US_CONTENDED * 1000)
        {
            self.context.stats.polls_paused_run_delay += 1;
            self.poll_pause.contended(now);
        }
        let paused = self.poll_pause.is_paused(now);
        if !busy_poll.is_zero() && !budget.is_zero() && !self.stopping && !paused {
            self.context.stats.busy_polls += 1;
            let result = self.ring.borrow_mut().busy_poll(budget);
            match result {
                Ok(PollEnd::Ready) => return,
                // Polled for the whole wait: the loop's turn is due anyway.
                Ok(PollEnd::Expired) if budget == wait => return,
                Ok(PollEnd::Expired) => {}
                Ok(PollEnd::Descheduled) => {
                    self.context.stats.polls_descheduled += 1;
                    self.poll_pause.contended(Instant::now());
                }
                Err(error) => {
                    eprintln!(
                        "ringlog: shard {}: io_uring poll failed: {error}; stopping",
                        self.id
                    );
                    self.context.router.poison();
                    return;
                }
            }
        }
        self.context.stats.sleeps += 1;
        let result = self.ring.borrow_mut().submit_and_wait_timeout(wait);
        if let Err(error) = result {
            // The ring is this shard's only way to the disk and the network.
            eprintln!(
                "ringlog: shard {}: io_uring wait failed: {error}; stopping",
                self.id
            );
            self.context.router.poison();
        }
    }

    fn ring_submit(&mut self) {
        if let Err(error) = self.ring.borrow_mut().submit() {
            eprintln!(
                "ringlog: shard {}: io_uring submit failed: {error}",
                self.id
            );
        }
    }

    fn poison_check(&mut self) {
        let journal = &self.context.journal;
        let read_only = journal.is_read_only() || journal.is_poisoned();
        self.context.router.read_only_set(self.id, read_only);
        if self.context.journal.is_poisoned() && !self.poison_reported {
            self.poison_reported = true;
            eprintln!(
                "ringlog: shard {}: journal poisoned (a write or fdatasync failed): pending adds \
                 get EIO, nothing more is acknowledged; exiting with status 2",
                self.id
            );
            self.context.router.poison();
        }
    }
}

// Completions.
impl Shard {
    fn reap(&mut self) {
        let mut completions = std::mem::take(&mut self.completions);
        self.ring.borrow_mut().reap(&mut completions);
        for completion in completions.drain(..) {
            // First: the buffer is idle again before any handler looks at it.
            self.net.complete(&completion);
            self.context.progress = true;
            let index = completion.tag() & TAG_INDEX_MASK;
            match completion.tag() >> TAG_KIND_SHIFT {
                TAG_ACCEPT => self.on_accept(&completion),
                TAG_RECV => self.on_recv(index, completion.result),
                TAG_SEND => self.on_send(index, completion.result),
                TAG_CANCEL => self.operation_done(index),
                TAG_EVENTFD => self.eventfd_armed = completion.more(),
                TAG_CANCEL_LISTENER => {}
                kind => unreachable!("unknown completion kind {kind}"),
            }
        }
        self.completions = completions;
    }

    fn on_accept(&mut self, completion: &Completion) {
        if !completion.more() {
            self.accept_armed = false;
            if completion.result < 0 && completion.result != -libc::ECANCELED {
                // E.g. EMFILE: re-arming at once would spin on the same error.
                self.accept_retry_at =
                    Some(Instant::now() + Duration::from_millis(limits::LOOP_WAIT_MS_MAX));
            }
        }
        let Some(fd) = Socket::adopt_accepted(completion) else {
            if completion.result != -libc::ECANCELED {
                self.context.stats.accept_errors += 1;
            }
            return;
        };
        let Some(index) = (!self.stopping)
            .then(|| self.connections_free.pop())
            .flatten()
        else {
            self.context.stats.connections_rejected += 1;
            return;
        };
        // Best effort: without it responses may wait for Nagle, but they still arrive.
        let _ = Socket::set_nodelay(fd.as_raw_fd());
        let generation = self.generations[index as usize];
        let requests_max = self.config.requests_in_flight_max;
        let client = Client::new(generation, requests_max, limits::SEND_BUFFER_SIZE, false);
        let connection = Connection {
            fd,
            client,
            recv_buffer: self.net.allocate(limits::RECV_BUFFER_SIZE_INITIAL),
            recv_filled: 0,
            recv_armed: false,
            decode_wanted: false,
            eof: false,
            send_buffer: self.net.allocate(limits::SEND_BUFFER_SIZE),
            send_offset: 0,
            send_length: 0,
            send_armed: false,
            out_offset: 0,
            operations_in_flight: 0,
            closing: false,
            cancel_submitted: false,
            active_last: Instant::now(),
            received_at: Instant::now(),
        };
        self.connections[index as usize] = Some(connection);
        self.connections_active.push(index);
        self.context.stats.connections_accepted += 1;
    }

    fn on_recv(&mut self, index: u32, result: i32) {
        let connection = self.connection_mut(index);
        connection.recv_armed = false;
        connection.operations_in_flight -= 1;
        if connection.closing {
            return;
        }
        match usize::try_from(result) {
            Ok(0) => {
                connection.eof = true;
                // A recv is armed only when no complete frame is left, so bytes still here
                // are a truncated frame: nothing of it was journalled.
                if connection.recv_filled > 0 {
                    connection.closing = true;
                    self.context.stats.connections_invalid += 1;
                }
            }
            Ok(count) => {
                connection.recv_filled += count;
                connection.decode_wanted = true;
                let now = Instant::now();
                connection.active_last = now;
                connection.received_at = now;
            }
            // Reset by the peer, or cancelled.
            Err(_) => connection.closing = true,
        }
    }

    fn on_send(&mut self, index: u32, result: i32) {
        let connection = self.connection_mut(index);
        connection.send_armed = false;
        connection.operations_in_flight -= 1;
        if connection.closing {
            return;
        }
        match usize::try_from(result) {
            Ok(count) if count > 0 => {
                // A short send resumes at the first unsent byte.
                connection.send_offset += count;
                assert!(connection.send_offset <= connection.send_length);
                if connection.send_offset == connection.send_length {
                    connection.send_offset = 0;
                    connection.send_length = 0;
                }
                connection.active_last = Instant::now();
            }
            // EPIPE, ECONNRESET, or a send that moved nothing: the peer is gone.
            _ => connection.closing = true,
        }
    }

    fn operation_done(&mut self, index: u32) {
        self.connection_mut(index).operations_in_flight -= 1;
    }

    fn connection_mut(&mut self, index: u32) -> &mut Connection {
        self.connections[index as usize]
            .as_mut()
            .expect("completions name live connections")
    }
}

// Journal events.
impl Shard {
    fn events_handle(&mut self) {
        let mut events = std::mem::take(&mut self.events);
        self.context.journal.events_swap(&mut events);
        self.context.progress |= !events.is_empty();
        // A durable entry or fence may move a LAC that parked long polls wait for.
        self.parked_check |= !events.is_empty();
        for event in events.drain(..) {
            match event {
                Event::Durable { token } => self.on_durable(token, true),
                Event::Failed { token } => self.on_durable(token, false),
                Event::ReadDone { token, slot } => self.on_read_done(token, slot),
                // Only v3 DEFERRED_SYNC adds are reported merely written.
                Event::Written { token } => self.on_written(token),
            }
        }
        self.events = events;
    }

    fn on_durable(&mut self, token: u64, durable: bool) {
        let token = Token::decode(token);
        let connections_max = self.config.connections_max;
        let Some(client) = client_find(
            &mut self.connections,
            &mut self.peers,
            connections_max,
            token,
        ) else {
            return;
        };
        let pending = client.pending(token.slot);
        let context = &mut self.context;
        let code = if durable { code::EOK } else { code::EIO };
        match pending.op {
            PendingOp::Add => {
                client.respond_add_pending(&pending, code);
                client.pending_remove(token.slot);
            }
            // A deferred add was acked at `Written`; only a failure before that arrives here.
            PendingOp::AddDeferred | PendingOp::WriteLac | PendingOp::Force => {
                assert!(
                    pending.op != PendingOp::AddDeferred || !durable,
                    "deferred adds are reported Written, not Durable"
                );
                v3::respond_durable(client, &pending, code);
                client.pending_remove(token.slot);
            }
            // The fence is durable: now read (protocol §5.2 step 4). A failed fence is EIO.
            PendingOp::Fence if durable => read_start(context, client, token),
            PendingOp::Fence => {
                respond_read(&context.journal, client, &pending, code::EIO, &[]);
                client.pending_remove(token.slot);
            }
            PendingOp::FenceBatch if durable => batch_advance(context, client, token),
            PendingOp::FenceBatch => client.batch_finish(code::EIO),
            op => unreachable!("durable event for a pending {op:?}"),
        }
    }

    /// A DEFERRED_SYNC add is written (not yet synced): ack it (protocol §5.6).
    fn on_written(&mut self, token: u64) {
        let token = Token::decode(token);
        let connections_max = self.config.connections_max;
        let Some(client) = client_find(
            &mut self.connections,
            &mut self.peers,
            connections_max,
            token,
        ) else {
            return;
        };
        let pending = client.pending(token.slot);
        assert_eq!(
            pending.op,
            PendingOp::AddDeferred,
            "only deferred adds are Written"
        );
        v3::respond_durable(client, &pending, code::EOK);
        client.pending_remove(token.slot);
    }

    /// Serves the parked long polls that are due (LAC passed, fenced, timed out, stopping) and
    /// drops those whose client is gone. Runs when the LAC may have moved, when the earliest
    /// deadline has passed (the loop's sleep ends there), and every tick.
    fn parked_advance(&mut self) {
        let now = Instant::now();
        let deadline_passed = self
            .context
            .parked_deadline_next
            .is_some_and(|next| now >= next);
        let check = std::mem::take(&mut self.parked_check) || deadline_passed;
        if self.context.parked.is_empty() {
            self.context.parked_deadline_next = None;
            return;
        }
        if !check {
            return;
        }
        let connections_max = self.config.connections_max;
        let mut parked = std::mem::take(&mut self.context.parked);
        let mut position = 0;
        while position < parked.len() {
            let entry = parked[position];
            let token = Token::decode(entry.token);
            let client = client_find(
                &mut self.connections,
                &mut self.peers,
                connections_max,
                token,
            );
            let Some(client) = client else {
                parked.swap_remove(position);
                continue;
            };
            let pending = client.pending(token.slot);
            assert_eq!(pending.op, PendingOp::Parked);
            if !v3::parked_due(&self.context, &entry, pending.ledger, now, self.stopping) {
                position += 1;
                continue;
            }
            parked.swap_remove(position);
            self.context.progress = true;
            v3::read_serve(&mut self.context, client, token);
        }
        assert!(
            self.context.parked.is_empty(),
            "serving a read parks nothing"
        );
        self.context.parked_deadline_next = parked.iter().map(|entry| entry.deadline).min();
        self.context.parked = parked;
    }

    fn on_read_done(&mut self, token_raw: u64, slot: engine::journal::ReadSlot) {
        let token = Token::decode(token_raw);
        let connections_max = self.config.connections_max;
        let client = client_find(
            &mut self.connections,
            &mut self.peers,
            connections_max,
            token,
        );
        let context = &mut self.context;
        let mut after = None;
        if let Some(client) = client {
            let pending = client.pending(token.slot);
            if matches!(
                pending.op,
                PendingOp::ReadLacExplicit | PendingOp::ReadLacLast
            ) {
                v3::read_lac_read_done(context, client, token, slot);
                return;
            }
            let result = context.journal.read_result(slot);
            after = match (pending.op, result) {
                (PendingOp::Read, Err(ReadError::Busy)) => Some(PendingOp::ReadRetry),
                (PendingOp::Batch, Err(ReadError::Busy)) => Some(PendingOp::BatchRetry),
                (PendingOp::Read, Ok((_, body))) => {
                    context.stats.reads += 1;
                    respond_read(&context.journal, client, &pending, code::EOK, body);
                    client.pending_remove(token.slot);
                    None
                }
                (PendingOp::Read, Err(error)) => {
                    let code = read_error_code(error);
                    respond_read(&context.journal, client, &pending, code, &[]);
                    client.pending_remove(token.slot);
                    None
                }
                // An entry the size rule refuses ends the batch with what it has.
                (PendingOp::Batch, Ok((_, body))) => {
                    if client.batch_push(body) {
                        Some(PendingOp::Batch)
                    } else {
                        client.batch_finish(code::EOK);
                        None
                    }
                }
                (PendingOp::Batch, Err(error)) => {
                    client.batch_finish(read_error_code(error));
                    None
                }
                (op, _) => unreachable!("read completion for a pending {op:?}"),
            };
        }
        // The slot is released before the next read of a batch may need it.
        context.journal.read_release(slot);
        let Some(op) = after else { return };
        let client = client_find(
            &mut self.connections,
            &mut self.peers,
            connections_max,
            token,
        )
        .expect("found above");
        match op {
            PendingOp::Batch => batch_advance(context, client, token),
            retry => read_retry_push(context, client, token, retry),
        }
    }

    /// Restarts the reads that found every engine read slot busy (once each per turn).
    fn read_retries_run(&mut self) {
        let connections_max = self.config.connections_max;
        for _ in 0..self.context.read_retry.len() {
            let Some(token) = self.context.read_retry.pop_front() else {
                break;
            };
            let token = Token::decode(token);
            let Some(client) = client_find(
                &mut self.connections,
                &mut self.peers,
                connections_max,
                token,
            ) else {
                continue;
            };
            match client.pending(token.slot).op {
                PendingOp::ReadRetry => read_start(&mut self.context, client, token),
                PendingOp::BatchRetry => batch_advance(&mut self.context, client, token),
                PendingOp::ReadLacExplicitRetry | PendingOp::ReadLacLastRetry => {
                    v3::read_lac_advance(&mut self.context, client, token);
                }
                op => unreachable!("retry queued for a pending {op:?}"),
            }
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
    token.matches(client).then_some(client)
}

/// How a decode pass over one client's bytes ended.
#[derive(Debug)]
enum DecodeEnd {
    /// No complete frame is left.
    NeedMore,
    /// The per-turn frame cap was reached: continue next turn without sleeping.
    Cap,
    /// A frame could not be handled now: retry next turn.
    Stall,
    /// A protocol violation: close the connection.
    Invalid,
}

// Decoding.
impl Shard {
    fn decode_all(&mut self) {
        if !self.stopping {
            for position in 0..self.connections_active.len() {
                let index = self.connections_active[position];
                self.connection_decode(index);
            }
        }
        // Forwarded requests are served even while stopping: their origins wait for them.
        for from in 0..self.peers.len() {
            self.peer_decode(from);
        }
    }

    fn connection_decode(&mut self, index: u32) {
        let connection = self.connections[index as usize]
            .as_mut()
            .expect("active is live");
        if !connection.decode_wanted || connection.closing || connection.recv_armed {
            return;
        }
        let bytes = self.net.get(connection.recv_buffer);
        let filled = connection.recv_filled;
        let reference = connection_reference(index, connection.client.generation);
        let origin = Origin {
            client_index: index,
            reference,
        };
        let frame_size_max = self.context.frame_size_max;
        let mut offset = 0;
        let mut frames = 0;
        let end = loop {
            if frames == self.config.frames_per_turn_max {
                break DecodeEnd::Cap;
            }
            match wire::decode_any_request(&bytes[offset..filled], frame_size_max) {
                Ok(DecodedAny::Frame {
                    request,
                    frame_size,
                }) => {
                    let frame = &bytes[offset..offset + frame_size];
                    let client = &mut connection.client;
                    match request_any(&mut self.context, client, origin, request, frame) {
                        Step::Consumed => {
                            offset += frame_size;
                            frames += 1;
                        }
                        Step::Stall => break DecodeEnd::Stall,
                    }
                }
                Ok(DecodedAny::NeedMore) => break DecodeEnd::NeedMore,
                Err(_) => break DecodeEnd::Invalid,
            }
        };
        if frames > 0 {
            let waited = connection.received_at.elapsed();
            let waited_us = u64::try_from(waited.as_micros()).unwrap_or(u64::MAX);
            let frames = u64::try_from(frames).expect("usize fits u64");
            self.context.stats.received_to_handled_us_total += waited_us.saturating_mul(frames);
            self.context.stats.requests_handled += frames;
        }
        if offset > 0 {
            // Adds were copied into the journal's staging buffer, so consumed bytes can go.
            self.net
                .get_mut(connection.recv_buffer)
                .copy_within(offset..filled, 0);
            connection.recv_filled -= offset;
            self.context.progress = true;
        }
        match end {
            DecodeEnd::NeedMore => {
                connection.decode_wanted = false;
                recv_buffer_fit(&mut self.net, connection, frame_size_max);
            }
            DecodeEnd::Cap => self.context.progress = true,
            DecodeEnd::Stall => {}
            DecodeEnd::Invalid => {
                connection.closing = true;
                self.context.stats.connections_invalid += 1;
            }
        }
    }

    fn peer_decode(&mut self, from: usize) {
        let peer = &mut self.peers[from];
        let client_index = u32::try_from(self.config.connections_max + from).expect("small");
        let frame_size_max = self.context.frame_size_max;
        let mut frames = 0;
        while let Some(records) = peer.inbox.front() {
            if peer.inbox_offset == records.len() {
                peer.inbox.pop_front();
                peer.inbox_offset = 0;
                continue;
            }
            if frames == self.config.frames_per_turn_max {
                self.context.progress = true;
                break;
            }
            let (reference, rest) = records[peer.inbox_offset..]
                .split_first_chunk::<CONNECTION_REFERENCE_SIZE>()
                .expect("forwarded records start with a connection reference");
            let origin = Origin {
                client_index,
                reference: u64::from_be_bytes(*reference),
            };
            // The origin shard decoded this frame with the same limit before forwarding it.
            let Ok(DecodedAny::Frame {
                request,
                frame_size,
            }) = wire::decode_any_request(rest, frame_size_max)
            else {
                unreachable!("a forwarded frame decodes")
            };
            let frame = &rest[..frame_size];
            match request_any(&mut self.context, &mut peer.client, origin, request, frame) {
                Step::Consumed => {
                    peer.inbox_offset += CONNECTION_REFERENCE_SIZE + frame_size;
                    frames += 1;
                    self.context.stats.forwarded_served += 1;
                    self.context.progress = true;
                }
                Step::Stall => break,
            }
        }
    }
}

/// Handles a request in the protocol it arrived in.
fn request_any(
    context: &mut Context,
    client: &mut Client,
    origin: Origin,
    request: AnyRequest<'_>,
    frame: &[u8],
) -> Step {
    match request {
        AnyRequest::V2(request) => request_handle(context, client, origin, request, frame),
        AnyRequest::V3(request) => v3::request_handle(context, client, origin, request, frame),
    }
}

/// Grows the receive buffer when the frame at its start announces more bytes than it holds
/// (the decoder has already checked the length against `frame_size_max`).
fn recv_buffer_fit(net: &mut NetBuffers, connection: &mut Connection, frame_size_max: u32) {
    let bytes = net.get(connection.recv_buffer);
    let Some(prefix) = bytes[..connection.recv_filled].first_chunk::<4>() else {
        return;
    };
    let frame_size = usize::try_from(u32::from_be_bytes(*prefix)).expect("u32 fits usize") + 4;
    if frame_size <= net.size(connection.recv_buffer) {
        return;
    }
    let size = usize::try_from(frame_size_max).expect("u32 fits usize");
    assert!(
        frame_size <= size,
        "the decoder refuses frames over the limit"
    );
    let grown = net.allocate(size);
    let filled = connection.recv_filled;
    let (old, new) = (connection.recv_buffer, grown);
    let head = net.get(old)[..filled].to_vec();
    net.get_mut(new)[..filled].copy_from_slice(&head);
    net.release(old);
    connection.recv_buffer = new;
}

// Mail between shards.
impl Shard {
    fn mail_receive(&mut self) {
        for _ in 0..limits::MAILBOX_MESSAGES_PER_TURN_MAX {
            let waiting: usize = self.peers.iter().map(|peer| peer.inbox.len()).sum();
            if waiting >= limits::PEER_INBOX_MESSAGES_MAX {
                break;
            }
            let Ok(mail) = self.mailbox.try_recv() else {
                break;
            };
            self.context.progress = true;
            match mail {
                Mail::Requests { from, records } => {
                    self.peers[usize::from(from)].inbox.push_back(records);
                }
                Mail::Replies { records } => self.replies_deliver(&records),
            }
        }
    }

    /// Hands each reply to the connection it answers, if that connection is still open.
    fn replies_deliver(&mut self, records: &[u8]) {
        let mut rest = records;
        while !rest.is_empty() {
            let (reference, after) = rest
                .split_first_chunk::<CONNECTION_REFERENCE_SIZE>()
                .expect("reply records start with a connection reference");
            let length = after
                .first_chunk::<4>()
                .expect("a reply frame has a length prefix");
            let frame_size = 4 + usize::try_from(u32::from_be_bytes(*length)).expect("fits");
            let (frame, after) = after.split_at(frame_size);
            rest = after;
            let (slot, generation) = connection_reference_split(u64::from_be_bytes(*reference));
            let connection = self
                .connections
                .get_mut(slot as usize)
                .and_then(Option::as_mut);
            let Some(connection) = connection else {
                continue;
            };
            if connection.client.generation != generation || connection.closing {
                continue;
            }
            connection.client.out.extend_from_slice(frame);
            connection.client.forwarded_in_flight -= 1;
        }
    }

    /// Sends this turn's forwarded requests and replies, one mail per destination each, and
    /// wakes every destination once.
    fn mail_send(&mut self) {
        self.mail_retry = false;
        let me = usize::from(self.id);
        for shard in (0..self.peers.len()).filter(|&shard| shard != me) {
            let to = ShardId::try_from(shard).expect("shard ids fit u16");
            let requests = std::mem::take(&mut self.context.forward_out[shard]);
            if !requests.is_empty() {
                let mail = Mail::Requests {
                    from: self.id,
                    records: requests,
                };
                if let Some(Mail::Requests { records, .. }) = self.mail_post(to, mail) {
                    self.context.forward_out[shard] = records;
                }
            }
            let replies = std::mem::take(&mut self.peers[shard].client.out);
            if !replies.is_empty() {
                if let Some(Mail::Replies { records }) =
                    self.mail_post(to, Mail::Replies { records: replies })
                {
                    self.peers[shard].client.out = records;
                }
            }
        }
        for shard in 0..self.context.wake.len() {
            if std::mem::take(&mut self.context.wake[shard]) {
                let to = ShardId::try_from(shard).expect("shard ids fit u16");
                if let Err(error) = self.context.router.wake(to) {
                    eprintln!(
                        "ringlog: shard {}: cannot wake shard {shard}: {error}",
                        self.id
                    );
                }
            }
        }
    }

    /// Posts a mail; gives it back if the mailbox is full (kept and retried next turn).
    fn mail_post(&mut self, to: ShardId, mail: Mail) -> Option<Mail> {
        match self.context.router.send(to, mail) {
            Ok(()) => {
                self.context.wake[usize::from(to)] = true;
                None
            }
            Err(SendError::Full(mail)) => {
                self.mail_retry = true;
                Some(mail)
            }
            // Only a shard that exited is gone, and shards exit only when all are drained.
            Err(SendError::Gone) => None,
        }
    }
}

// Sends, closes, re-arming.
impl Shard {
    /// One send per connection per turn: the bytes left by a short send, or the next chunk of
    /// the connection's responses.
    fn sends_submit(&mut self) {
        for position in 0..self.connections_active.len() {
            let index = self.connections_active[position];
            let connection = self.connections[index as usize]
                .as_mut()
                .expect("active is live");
            if !connection.wants_send() {
                continue;
            }
            if connection.send_offset == connection.send_length {
                let buffer = self.net.get_mut(connection.send_buffer);
                let out = &mut connection.client.out;
                let unsent = &out[connection.out_offset..];
                let length = buffer.len().min(unsent.len());
                buffer[..length].copy_from_slice(&unsent[..length]);
                // An offset instead of draining: a large response leaves in many chunks, and
                // shifting the rest after each one would be quadratic.
                connection.out_offset += length;
                if connection.out_offset == out.len() {
                    out.clear();
                    connection.out_offset = 0;
                }
                connection.send_offset = 0;
                connection.send_length = length;
            }
            let (offset, length) = (
                connection.send_offset,
                connection.send_length - connection.send_offset,
            );
            let fd = connection.fd.as_raw_fd();
            let tag = tag(TAG_SEND, index);
            let buffer = connection.send_buffer;
            match self
                .ring
                .borrow_mut()
                .send(tag, fd, &mut self.net, buffer, offset, length)
            {
                Ok(()) => {
                    connection.send_armed = true;
                    connection.operations_in_flight += 1;
                }
                // The queue was full even after an early submit: retry next turn.
                Err(engine::disk::SubmitError::QueueFull) => self.context.progress = true,
                Err(engine::disk::SubmitError::Io(_)) => connection.closing = true,
            }
        }
    }

    /// Starts closing connections that are done, cancels their operations, and frees the
    /// slots whose operations have all completed.
    fn closes_advance(&mut self) {
        let mut position = 0;
        while position < self.connections_active.len() {
            let index = self.connections_active[position];
            let connection = self.connections[index as usize]
                .as_mut()
                .expect("active is live");
            let flushed = connection.client.is_idle()
                && !connection.send_armed
                && connection.send_offset == connection.send_length;
            if flushed && (connection.eof || self.stopping) {
                connection.closing = true;
            }
            if !connection.closing {
                position += 1;
                continue;
            }
            if connection.operations_in_flight == 0 {
                self.connections_active.swap_remove(position);
                self.connection_free(index);
                continue;
            }
            if !connection.cancel_submitted {
                let fd = connection.fd.as_raw_fd();
                match self.ring.borrow_mut().cancel_fd(tag(TAG_CANCEL, index), fd) {
                    Ok(()) => {
                        connection.cancel_submitted = true;
                        connection.operations_in_flight += 1;
                    }
                    Err(_) => self.context.progress = true,
                }
            }
            position += 1;
        }
    }

    /// Frees a closed connection's slot; the fd closes here, after its last completion.
    fn connection_free(&mut self, index: u32) {
        let connection = self.connections[index as usize]
            .take()
            .expect("live connection");
        assert_eq!(connection.operations_in_flight, 0);
        self.net.release(connection.recv_buffer);
        self.net.release(connection.send_buffer);
        let generation = &mut self.generations[index as usize];
        *generation = generation.wrapping_add(1);
        self.connections_free.push(index);
        drop(connection);
    }

    /// Arms recvs where the caps allow, and the accept and eventfd reads if they ended.
    fn arm_all(&mut self) {
        if !self.stopping {
            for position in 0..self.connections_active.len() {
                let index = self.connections_active[position];
                self.recv_arm(index);
            }
            self.accept_arm();
        }
        self.eventfd_arm();
    }

    fn recv_arm(&mut self, index: u32) {
        let connection = self.connections[index as usize]
            .as_mut()
            .expect("active is live");
        if !connection.wants_recv(self.net.size(connection.recv_buffer)) {
            return;
        }
        let (fd, buffer, offset) = (
            connection.fd.as_raw_fd(),
            connection.recv_buffer,
            connection.recv_filled,
        );
        match self
            .ring
            .borrow_mut()
            .recv(tag(TAG_RECV, index), fd, &mut self.net, buffer, offset)
        {
            Ok(()) => {
                connection.recv_armed = true;
                connection.operations_in_flight += 1;
            }
            Err(engine::disk::SubmitError::QueueFull) => self.context.progress = true,
            Err(engine::disk::SubmitError::Io(_)) => connection.closing = true,
        }
    }

    fn accept_arm(&mut self) {
        let Some(listener) = self.listener.as_ref() else {
            return;
        };
        if self.accept_armed || self.accept_retry_at.is_some_and(|at| Instant::now() < at) {
            return;
        }
        let fd = listener.as_raw_fd();
        if self
            .ring
            .borrow_mut()
            .accept_multishot(tag(TAG_ACCEPT, 0), fd)
            .is_ok()
        {
            self.accept_armed = true;
            self.accept_retry_at = None;
        }
    }

    fn eventfd_arm(&mut self) {
        if self.eventfd_armed {
            return;
        }
        let eventfd = self.context.router.eventfd(self.id);
        let tag = tag(TAG_EVENTFD, 0);
        let buffer = self.eventfd_buffer;
        if self
            .ring
            .borrow_mut()
            .read_eventfd(tag, eventfd, &mut self.net, buffer)
            .is_ok()
        {
            self.eventfd_armed = true;
        }
    }
}

// Timeouts and shutdown.
impl Shard {
    /// Every 100 ms: close connections idle for longer than the idle timeout.
    fn tick(&mut self) {
        let now = Instant::now();
        if now.duration_since(self.tick_last) < Duration::from_millis(limits::LOOP_WAIT_MS_MAX) {
            return;
        }
        self.tick_last = now;
        self.read_only_check();
        self.stall_check(now);
        // Long-poll deadlines are checked at this granularity.
        self.parked_check = true;
        let timeout = self.config.idle_timeout;
        for &index in &self.connections_active {
            let connection = self.connections[index as usize]
                .as_mut()
                .expect("active is live");
            // A partial frame does not keep a connection alive (slowloris): only traffic does.
            // Neither does a send the peer never reads (its window stays full, so the send
            // never completes): after the timeout without traffic that connection goes too.
            let quiet =
                connection.client.is_idle() && connection.send_offset == connection.send_length;
            let silent = now.duration_since(connection.active_last) > timeout;
            if (quiet || connection.send_armed) && silent && !connection.closing {
                connection.closing = true;
                self.context.stats.connections_idle += 1;
            }
        }
    }

    /// The stall watchdog: a commit in flight for longer than `--commit-stall-ms` is logged
    /// once, with the stage it waits in, and its completion is logged too. Nothing else
    /// changes: a stalled commit is neither failed nor retried (the kernel still owns it).
    fn stall_check(&mut self, now: Instant) {
        let Some(threshold) = self.config.commit_stall else {
            return;
        };
        let oldest = self.context.journal.commit_oldest_in_flight();
        if let Some(reported) = self.stall_reported {
            let same = oldest.is_some_and(|commit| {
                (commit.segment, commit.position) == (reported.segment, reported.position)
            });
            if same {
                return;
            }
            self.stall_reported = None;
            let waited = reported
                .submitted_at
                .map_or(Duration::ZERO, |at| now.saturating_duration_since(at));
            eprintln!(
                "ringlog: shard {}: stalled commit at segment {} position {} completed after \
                 about {} ms",
                self.id,
                reported.segment.0,
                reported.position,
                waited.as_millis()
            );
        }
        let Some(commit) = oldest else {
            return;
        };
        let Some(submitted_at) = commit.submitted_at else {
            return;
        };
        let age = now.saturating_duration_since(submitted_at);
        if age < threshold {
            return;
        }
        self.stall_reported = Some(commit);
        self.context.stats.commits_stalled += 1;
        eprintln!(
            "ringlog: shard {}: commit stalled: in flight for {} ms (watchdog at {} ms): {}; \
             segment {} position {}, {} bytes, {} records; io_uring operations in flight (disk and network): {}",
            self.id,
            age.as_millis(),
            threshold.as_millis(),
            commit.stage.describe(),
            commit.segment.0,
            commit.position,
            commit.bytes,
            commit.records,
            self.ring.borrow().in_flight(),
        );
    }

    /// Disk full: the journal refuses adds (EREADONLY) while it cannot create a segment.
    /// Retried every tick, so the shard is writable again within one tick of space returning;
    /// both transitions are printed for the operator.
    fn read_only_check(&mut self) {
        let read_only = self.context.journal.is_read_only();
        if read_only {
            self.context.journal.segment_retry_now();
        }
        if read_only != self.read_only_reported {
            self.read_only_reported = read_only;
            if read_only {
                eprintln!(
                    "ringlog: shard {}: read-only: cannot create a journal segment (disk full?); \
                     adds get EREADONLY, reads go on, creation is retried every {} ms",
                    self.id,
                    limits::LOOP_WAIT_MS_MAX
                );
            } else {
                eprintln!("ringlog: shard {}: writable again", self.id);
            }
        }
    }

    /// On SIGINT/SIGTERM or a stop from another shard: stop accepting and reading requests;
    /// what is in flight is finished and answered, then connections close.
    fn stop_check(&mut self) {
        if self.stopping {
            return;
        }
        if self.shutdown.load(Ordering::SeqCst) {
            self.context.router.stop();
        }
        if !self.context.router.is_stopping() {
            return;
        }
        self.stopping = true;
        self.context.progress = true;
        if let Some(listener) = self.listener.as_ref() {
            if self.accept_armed {
                let fd = listener.as_raw_fd();
                // If this fails the accept stays armed until the ring is dropped at exit.
                let _ = self
                    .ring
                    .borrow_mut()
                    .cancel_fd(tag(TAG_CANCEL_LISTENER, 0), fd);
            }
        }
        for &index in &self.connections_active {
            let connection = self.connections[index as usize]
                .as_mut()
                .expect("active is live");
            // Requests not yet decoded were never acknowledged; they are dropped.
            connection.decode_wanted = false;
        }
    }

    /// True when this shard and every other one have nothing left in flight.
    fn drain_check(&mut self) -> bool {
        let peers_idle = self
            .peers
            .iter()
            .all(|peer| peer.inbox.is_empty() && peer.client.is_idle());
        let drained = self.connections_active.is_empty()
            && peers_idle
            && self.context.forward_out.iter().all(Vec::is_empty)
            && self.context.read_retry.is_empty()
            && self.context.journal.is_idle();
        if drained != self.drained {
            self.drained = drained;
            self.context.router.drained_set(drained);
        }
        drained && self.context.router.all_drained()
    }
}
