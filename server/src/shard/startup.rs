//! Startup: the shard thread's entry, opening the ring and journal, and arming the listener.

use super::{
    ConnectionTable, Lifecycle, Listener, Peer, Polling, Shard, ShardReport, ShardSetup, Start,
    StartError, Status,
};
use crate::config::Config;
use crate::limits;
use crate::metrics::Metrics;
use crate::poll_pause::PollPause;
use crate::request::client::Client;
use crate::request::Bookie;
use crate::router::{Mail, OwnerCache, ShardId};
use crate::run_delay::RunDelay;
use crate::shard_stats::ShardStats;
use engine::uring::{NetBuffers, Ring, Socket, UringDisk};
use engine::Journal;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::os::fd::{AsRawFd, OwnedFd};
use std::rc::Rc;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::{Receiver, Sender};
use std::sync::Arc;
use std::time::Instant;

/// The shard thread: open the journal, wait for the listener, serve, report.
pub fn shard_main(setup: ShardSetup) -> Option<ShardReport> {
    let _exit_on_panic = ExitOnPanic(setup.id);
    if !core_affinity::set_for_current(core_affinity::CoreId { id: setup.core }) {
        tracing::warn!(
            shard = setup.id,
            core = setup.core,
            "cannot pin to the core; running unpinned"
        );
    }
    if let Some(slice) = setup.config.shard_slice {
        let slice_ns = u64::try_from(slice.as_nanos()).unwrap_or(u64::MAX);
        if let Err(error) = engine::uring::thread_slice_set(slice_ns) {
            tracing::warn!(
                shard = setup.id,
                "cannot ask for a {} µs scheduler slice ({error}); keeping the kernel's default",
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
    let listener = match shard.lifecycle.start.recv() {
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

impl Shard {
    /// Creates the ring, opens (recovers) the journal and registers its ledgers.
    pub(super) fn open(setup: ShardSetup) -> Result<Shard, StartError> {
        let ShardSetup {
            id,
            core,
            config,
            router,
            mailbox,
            shutdown,
            status: _,
            start,
            metrics,
        } = setup;
        let tls = super::tls::tls_context_load(config.tls.as_ref()).map_err(StartError::Tls)?;
        let ring = match Ring::new(engine::uring::RING_ENTRIES_DEFAULT) {
            Ok(ring) => Rc::new(RefCell::new(ring)),
            Err(error) => return Err(StartError::Ring(error)),
        };
        let directory = config.journal_dir(usize::from(id));
        let disk = match UringDisk::open(ring.clone(), &directory, config.direct_io) {
            Ok(disk) => disk,
            Err(error) => return Err(StartError::DataDir { directory, error }),
        };
        let opened_at = std::time::Instant::now();
        let journal = match Journal::open(disk, config.journal.clone()) {
            Ok(journal) => journal,
            Err(error) => return Err(StartError::Journal { directory, error }),
        };
        open_report_print(id, &directory, journal.open_report(), opened_at.elapsed());
        let mut owners = OwnerCache::new(id);
        for ledger in journal.index().ledgers() {
            let owner = router.register(ledger.0, id);
            if owner != id {
                tracing::warn!(
                    shard = id,
                    ledger = ledger.0,
                    "the ledger is also in shard {owner}'s journal; shard {owner} serves it"
                );
            }
            owners.insert(ledger.0, owner);
        }
        let shards = router.shards();
        let bookie = Bookie {
            shard: id,
            journal,
            router,
            owners,
            forward_out: vec![Vec::new(); shards],
            wake: vec![false; shards],
            read_retry: VecDeque::with_capacity(limits::READ_RETRY_QUEUE_MAX),
            parked: Vec::with_capacity(limits::PARKED_READS_MAX),
            parked_deadline_next: None,
            batch_buffers: vec![Vec::new(); limits::BATCH_READ_BUFFERS_SHARED_MAX],
            data_dir: config.shard_data_dir(usize::from(id)).to_path_buf(),
            frame_size_max: config.frame_size_max,
            stats: ShardStats::default(),
            progress: false,
        };
        Ok(Shard::assemble(
            id, core, config, ring, bookie, mailbox, start, shutdown, metrics, tls,
        ))
    }

    // One argument per part of the shard; a struct for them would only rename the fields.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn assemble(
        id: ShardId,
        core: usize,
        config: Arc<Config>,
        ring: Rc<RefCell<Ring>>,
        bookie: Bookie,
        mailbox: Receiver<Mail>,
        start: Receiver<Start>,
        shutdown: &'static AtomicBool,
        metrics: Arc<Metrics>,
        tls: Option<crate::tls::TlsContext>,
    ) -> Shard {
        let connections_max = config.connections_max;
        let mut net = NetBuffers::new(2 * connections_max + 1);
        let eventfd_buffer = net.allocate(8);
        let shards = bookie.router.shards();
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
            bookie,
            connections: ConnectionTable::new(connections_max),
            peers,
            listener: Listener {
                socket: None,
                accept_armed: false,
                accept_retry_at: None,
                eventfd_buffer,
                eventfd_armed: false,
            },
            mailbox,
            mail_retry: false,
            lifecycle: Lifecycle {
                start,
                shutdown,
                stopping: false,
                drained: false,
                poison_reported: false,
                read_only_reported: false,
                space_wait_reported: false,
                gc_round_awaited: None,
            },
            polling: Polling {
                progress_last: Instant::now(),
                poll_pause: PollPause::default(),
                run_delay: RunDelay::for_current_thread(),
            },
            tick_last: Instant::now(),
            traffic_bytes_at_tick: 0,
            committed_bytes_at_tick: 0,
            sort_quiet_ticks: 0,
            commits_at_tick: (0, 0),
            stall_reported: None,
            parked_check: false,
            metrics,
            durable_reaped_at: None,
            connection_errors_logged: (Instant::now(), [0; 3]),
            tls,
            tls_handshakes_this_turn: 0,
            repairs_in_flight: vec![None; limits::REPAIRS_IN_FLIGHT_MAX],
            repairs_resumed: false,
            repairs_asked: std::collections::HashMap::new(),
            damage_lines_this_tick: 0,
            damage_lines_dropped: 0,
            config,
        }
    }

    /// Arms the multishot accept and the eventfd read, then prints the shard's startup line.
    pub(super) fn listen(&mut self, listener: OwnedFd) -> Result<(), StartError> {
        let address = Socket::local_address(listener.as_raw_fd())
            .map_err(|error| StartError::Listen(error.to_string()))?;
        self.listener.socket = Some(listener);
        self.accept_arm();
        self.eventfd_arm();
        if !self.listener.accept_armed || !self.listener.eventfd_armed {
            return Err(StartError::Listen(
                "the ring refused the accept or eventfd read".into(),
            ));
        }
        let stats = self.bookie.journal.stats();
        println!(
            "shard {}: core {}, journal {} ({} ledgers, {} torn tail truncated), listening on {}",
            self.id,
            self.core,
            self.config.journal_dir(usize::from(self.id)).display(),
            self.bookie.journal.index().ledger_count(),
            stats.torn_tail_truncations,
            address
        );
        Ok(())
    }
}

/// What opening the journal read and did: the operator sees a restart that had to scan
/// (no checkpoint, a corrupt one, or indexes rebuilt) and why.
fn open_report_print(
    id: ShardId,
    directory: &std::path::Path,
    report: &engine::OpenReport,
    elapsed: std::time::Duration,
) {
    let checkpoint = match report.checkpoint {
        Some((generation, resume)) => {
            format!(
                "checkpoint generation {generation} (scan from segment {})",
                resume.0
            )
        }
        None => "no checkpoint".to_string(),
    };
    println!(
        "shard {id}: journal {} opened in {} ms: {checkpoint}, {} sealed indexes loaded, {} \
         rebuilt, {} segments scanned ({} MiB)",
        directory.display(),
        elapsed.as_millis(),
        report.indexes_loaded,
        report.indexes_rebuilt.len(),
        report.segments_scanned,
        report.bytes_scanned >> 20,
    );
    if let Some(reason) = &report.checkpoint_ignored {
        tracing::warn!(
            shard = id,
            "checkpoint ignored ({reason}); every segment was scanned instead, and a new \
             checkpoint follows the next sealed segment"
        );
    }
    for (segment, reason) in &report.indexes_rebuilt {
        tracing::warn!(
            shard = id,
            segment = segment.0,
            "index rebuilt from the segment and written back ({reason})"
        );
    }
}
