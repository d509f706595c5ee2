//! Ledger -> shard placement and the bounded shard-to-shard mailboxes.
//!
//! The shard that receives a ledger's first add (or fence) owns it for the life of the process;
//! at startup each shard registers the ledgers its journal recovered. The shared map is behind
//! an `RwLock`, but a shard consults it only the first time it sees a ledger: every answer is
//! cached in the shard's own `OwnerCache`, so the per-entry path takes no lock. (Only "nobody
//! owns it" is not cached, because another shard may create the ledger later; that is the
//! error path of reads on unknown ledgers.)
//!
//! A request for a ledger owned elsewhere is copied (this slow path allocates) into a batch
//! for the owner, sent once per loop turn as one `Mail::Requests`, and the owner is woken
//! through its eventfd. The owner answers with one `Mail::Replies` batch per turn. Both
//! batches are records `u64 connection reference (BE) | one v2 frame`.

use engine::uring::Eventfd;
use std::collections::{HashMap, VecDeque};
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::sync::{Mutex, RwLock};

/// A shard's index.
pub type ShardId = u16;

/// Bytes of the connection reference in front of every forwarded frame.
pub const CONNECTION_REFERENCE_SIZE: usize = 8;

/// A message between shards.
#[derive(Debug)]
pub enum Mail {
    /// Requests forwarded by shard `from` to the owner of their ledgers.
    Requests { from: ShardId, records: Vec<u8> },
    /// Encoded responses to requests this shard forwarded earlier.
    Replies { records: Vec<u8> },
    /// From the garbage collector (docs/gc.md): ledgers this shard owns whose metadata is
    /// gone. The shard deletes each from its journal, then `forget`s it here.
    DeleteLedgers { ledgers: Vec<i64> },
    /// From the repairer (docs/scrub.md, "Repair"): a good copy of an entry this shard found
    /// damaged, read from another bookie of its write set. The shard journals it as a
    /// recovery add, whose newer copy every later read finds first.
    RepairEntry {
        ledger: i64,
        entry: i64,
        body: Vec<u8>,
    },
}

/// An entry a shard found damaged, for the repairer on the registration thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RepairRequest {
    pub ledger: i64,
    pub entry: i64,
    /// The shard that holds it (the copy goes back there).
    pub shard: ShardId,
}

/// Repairs between the shards and the repairer: the queue of requests (bounded by
/// `REPAIR_QUEUE_MAX`; damage is rare, so a lock on this path costs the commits nothing)
/// and what became of them, for /metrics.
#[derive(Debug, Default)]
struct Repairs {
    /// The repairer runs (--zk): without it, requests are not queued.
    active: AtomicBool,
    queue: Mutex<VecDeque<RepairRequest>>,
    /// Requests dropped because the queue was full (the next scrub cycle finds them again).
    dropped: AtomicU64,
    /// Good copies sent to their shard.
    copied: AtomicU64,
    /// Ledgers marked under-replicated because no good copy was found.
    marked: AtomicU64,
    /// Repairs that could not finish (ZooKeeper unreachable, a mark that failed); retried
    /// when the scrub finds the damage again.
    failed: AtomicU64,
}

/// What became of repairs, as /metrics shows it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RepairCounts {
    pub dropped: u64,
    pub copied: u64,
    pub marked: u64,
    pub failed: u64,
}

/// How a repair ended, for `Router::repair_counted`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RepairEnd {
    Copied,
    Marked,
    Failed,
}

/// What every shard shares: the ownership map, the mailboxes, and the stop protocol.
#[derive(Debug)]
pub struct Router {
    owners: RwLock<HashMap<i64, ShardId>>,
    mailboxes: Vec<SyncSender<Mail>>,
    eventfds: Vec<OwnedFd>,
    stop: AtomicBool,
    poisoned: AtomicBool,
    drained: AtomicUsize,
    /// Per shard: its journal refuses adds (read-only or poisoned). Each shard writes only its
    /// own flag; the registration thread reads them all.
    read_only: Vec<AtomicBool>,
    gc: GcRounds,
    repairs: Repairs,
}

/// The garbage collector's rounds, as the shards see them (docs/gc.md, "Disk pressure"): a
/// shard under disk pressure asks for a round now rather than at the next --gc-interval-ms
/// (the Java bookie forces its collection at `diskUsageWarnThreshold` the same way), and a
/// shard with no room for a segment waits for a round that started after it asked before it
/// calls its disk full: ledgers deleted in the metadata are space the bookie has not heard of.
#[derive(Debug, Default)]
struct GcRounds {
    /// The collector runs (--zk with --gc-interval-ms).
    active: AtomicBool,
    wanted: AtomicBool,
    started: AtomicU64,
    /// Rounds ended, whether they collected or failed; a round's deletions are in the
    /// mailboxes before it counts here.
    ended: AtomicU64,
    forced: AtomicU64,
}

/// Why a mail was not delivered.
#[derive(Debug)]
pub enum SendError {
    /// The mailbox is full: keep the mail and retry next turn.
    Full(Mail),
    /// The shard is gone (it exited); the mail is dropped.
    Gone,
}

impl Router {
    /// A router for `shards` shards, and each shard's mailbox receiver (index = shard).
    pub fn new(
        shards: usize,
        mailbox_size: usize,
    ) -> std::io::Result<(Router, Vec<Receiver<Mail>>)> {
        assert!(shards >= 1);
        assert!(shards <= crate::limits::SHARDS_MAX);
        let mut mailboxes = Vec::with_capacity(shards);
        let mut receivers = Vec::with_capacity(shards);
        let mut eventfds = Vec::with_capacity(shards);
        for _ in 0..shards {
            let (sender, receiver) = std::sync::mpsc::sync_channel(mailbox_size);
            mailboxes.push(sender);
            receivers.push(receiver);
            eventfds.push(Eventfd::create()?);
        }
        let router = Router {
            owners: RwLock::new(HashMap::new()),
            mailboxes,
            eventfds,
            stop: AtomicBool::new(false),
            poisoned: AtomicBool::new(false),
            drained: AtomicUsize::new(0),
            read_only: (0..shards).map(|_| AtomicBool::new(false)).collect(),
            gc: GcRounds::default(),
            repairs: Repairs::default(),
        };
        Ok((router, receivers))
    }

    /// The number of shards.
    #[must_use]
    pub fn shards(&self) -> usize {
        self.mailboxes.len()
    }

    /// Records that `shard` recovered `ledger` from its journal. Returns the owner, which is
    /// another shard only if two journals hold the same ledger (the first registered wins).
    pub fn register(&self, ledger: i64, shard: ShardId) -> ShardId {
        self.claim(ledger, shard)
    }

    /// The owner of `ledger`, making `shard` the owner if it has none. Called once per ledger
    /// per shard (the answer is cached), so the write lock is off the per-entry path.
    pub fn claim(&self, ledger: i64, shard: ShardId) -> ShardId {
        let mut owners = self
            .owners
            .write()
            .expect("no shard panics while holding the map");
        *owners.entry(ledger).or_insert(shard)
    }

    /// The owner of `ledger`, if any shard owns it.
    #[must_use]
    pub fn owner(&self, ledger: i64) -> Option<ShardId> {
        let owners = self
            .owners
            .read()
            .expect("no shard panics while holding the map");
        owners.get(&ledger).copied()
    }

    /// Every ledger some shard owns, sorted: the garbage collector's snapshot of the local
    /// ledgers. The map holds every ledger any journal holds, since a shard claims a ledger
    /// before its journal first creates it (add, fence, explicit LAC) and registers the
    /// ledgers its journal recovered before it serves.
    #[must_use]
    pub fn ledgers_snapshot(&self) -> Vec<i64> {
        let owners = self
            .owners
            .read()
            .expect("no shard panics while holding the map");
        let mut ledgers: Vec<i64> = owners.keys().copied().collect();
        drop(owners);
        ledgers.sort_unstable();
        ledgers
    }

    /// `shard` deleted `ledger`: the map forgets it, if `shard` still owns it. Shards that
    /// cached the owner keep forwarding to it, where the journal answers for the deleted
    /// ledger; a shard that did not could create the ledger anew by an add, which the next
    /// collection round deletes again (its metadata is gone).
    pub fn forget(&self, ledger: i64, shard: ShardId) {
        let mut owners = self
            .owners
            .write()
            .expect("no shard panics while holding the map");
        if owners.get(&ledger) == Some(&shard) {
            owners.remove(&ledger);
        }
    }

    /// Puts `mail` into `to`'s mailbox without blocking. The caller wakes `to` afterwards
    /// (once per turn, however many mails it sent).
    pub fn send(&self, to: ShardId, mail: Mail) -> Result<(), SendError> {
        match self.mailboxes[usize::from(to)].try_send(mail) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(mail)) => Err(SendError::Full(mail)),
            Err(TrySendError::Disconnected(_)) => Err(SendError::Gone),
        }
    }

    /// Wakes `shard` out of its ring wait.
    pub fn wake(&self, shard: ShardId) -> std::io::Result<()> {
        Eventfd::signal(self.eventfds[usize::from(shard)].as_raw_fd())
    }

    /// The eventfd `shard` keeps a read armed on.
    #[must_use]
    pub fn eventfd(&self, shard: ShardId) -> std::os::fd::RawFd {
        self.eventfds[usize::from(shard)].as_raw_fd()
    }

    /// Asks every shard to stop (after a signal, a poisoned journal or a failed startup).
    pub fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
    }

    /// True once `stop` was called.
    #[must_use]
    pub fn is_stopping(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// Records that a journal was poisoned: the process must exit non-zero.
    pub fn poison(&self) {
        self.poisoned.store(true, Ordering::SeqCst);
        self.stop();
    }

    /// True if any journal was poisoned.
    #[must_use]
    pub fn is_poisoned(&self) -> bool {
        self.poisoned.load(Ordering::SeqCst)
    }

    /// A stopping shard reports that it holds no work (`true`) or holds work again (`false`,
    /// after a late forwarded request). Returns the number of drained shards.
    pub fn drained_set(&self, drained: bool) -> usize {
        if drained {
            self.drained.fetch_add(1, Ordering::SeqCst) + 1
        } else {
            self.drained.fetch_sub(1, Ordering::SeqCst) - 1
        }
    }

    /// `shard` reports whether its journal refuses adds. Called every loop turn: it writes
    /// only on a change, so the shared cache line is not dirtied on the hot path.
    pub fn read_only_set(&self, shard: ShardId, read_only: bool) {
        let flag = &self.read_only[usize::from(shard)];
        if flag.load(Ordering::Relaxed) != read_only {
            flag.store(read_only, Ordering::Relaxed);
        }
    }

    /// True while any shard's journal refuses adds: the bookie registers as read-only.
    #[must_use]
    pub fn any_read_only(&self) -> bool {
        self.read_only
            .iter()
            .any(|flag| flag.load(Ordering::Relaxed))
    }

    /// The collector starts (`true`) or ends.
    pub fn gc_active_set(&self, active: bool) {
        self.gc.active.store(active, Ordering::SeqCst);
    }

    /// True while the collector runs: a shard may ask it for rounds.
    #[must_use]
    pub fn gc_is_active(&self) -> bool {
        self.gc.active.load(Ordering::SeqCst)
    }

    /// A shard under disk pressure asks for a collection round as soon as the collector may
    /// run one. Writes only on a change: shards call it every tick while the pressure lasts.
    pub fn gc_want(&self) {
        if !self.gc.wanted.load(Ordering::Relaxed) {
            self.gc.wanted.store(true, Ordering::SeqCst);
        }
    }

    /// The collector takes the request, if there is one, and counts the round it forces.
    pub fn gc_wanted_take(&self) -> bool {
        let wanted = self.gc.wanted.swap(false, Ordering::SeqCst);
        if wanted {
            self.gc.forced.fetch_add(1, Ordering::Relaxed);
        }
        wanted
    }

    /// The collector starts a round.
    pub fn gc_round_started(&self) {
        self.gc.started.fetch_add(1, Ordering::SeqCst);
    }

    /// The collector ended a round (after mailing its deletions).
    pub fn gc_round_ended(&self) {
        self.gc.ended.fetch_add(1, Ordering::SeqCst);
    }

    /// Rounds started and rounds ended so far.
    #[must_use]
    pub fn gc_rounds(&self) -> (u64, u64) {
        (
            self.gc.started.load(Ordering::SeqCst),
            self.gc.ended.load(Ordering::SeqCst),
        )
    }

    /// Rounds run early at a shard's request.
    #[must_use]
    pub fn gc_rounds_forced(&self) -> u64 {
        self.gc.forced.load(Ordering::Relaxed)
    }

    /// The repairer is running (or stopped): shards queue requests only while it runs.
    pub fn repair_active_set(&self, active: bool) {
        self.repairs.active.store(active, Ordering::SeqCst);
    }

    /// True while the repairer runs.
    #[must_use]
    pub fn repair_is_active(&self) -> bool {
        self.repairs.active.load(Ordering::SeqCst)
    }

    /// Queues a repair; false when no repairer runs or the queue is full (counted).
    pub fn repair_push(&self, request: RepairRequest) -> bool {
        if !self.repairs.active.load(Ordering::SeqCst) {
            return false;
        }
        let mut queue = self
            .repairs
            .queue
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if queue.contains(&request) {
            return true;
        }
        if queue.len() >= crate::limits::REPAIR_QUEUE_MAX {
            self.repairs.dropped.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        queue.push_back(request);
        true
    }

    /// Moves up to `count` queued repairs, oldest first, into `out` (the repairer's).
    pub fn repairs_take(&self, out: &mut Vec<RepairRequest>, count: usize) {
        let mut queue = self
            .repairs
            .queue
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let count = count.min(queue.len());
        out.extend(queue.drain(..count));
    }

    /// Counts how a repair ended.
    pub fn repair_counted(&self, end: RepairEnd) {
        let counter = match end {
            RepairEnd::Copied => &self.repairs.copied,
            RepairEnd::Marked => &self.repairs.marked,
            RepairEnd::Failed => &self.repairs.failed,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// What became of repairs so far.
    #[must_use]
    pub fn repair_counts(&self) -> RepairCounts {
        RepairCounts {
            dropped: self.repairs.dropped.load(Ordering::Relaxed),
            copied: self.repairs.copied.load(Ordering::Relaxed),
            marked: self.repairs.marked.load(Ordering::Relaxed),
            failed: self.repairs.failed.load(Ordering::Relaxed),
        }
    }

    /// True when every shard is drained. Stable once true: a drained shard has nothing in
    /// flight anywhere and no stopping shard reads new requests, so no work can appear.
    #[must_use]
    pub fn all_drained(&self) -> bool {
        self.drained.load(Ordering::SeqCst) == self.shards()
    }
}

/// A shard's private cache of the ownership map: no lock on the per-entry path.
#[derive(Debug)]
pub struct OwnerCache {
    shard: ShardId,
    owners: HashMap<i64, ShardId>,
}

impl OwnerCache {
    /// An empty cache for `shard`.
    #[must_use]
    pub fn new(shard: ShardId) -> OwnerCache {
        OwnerCache {
            shard,
            owners: HashMap::new(),
        }
    }

    /// The owner of a ledger an add or fence is about to create if nobody owns it.
    pub fn owner_claim(&mut self, router: &Router, ledger: i64) -> ShardId {
        if let Some(&owner) = self.owners.get(&ledger) {
            return owner;
        }
        let owner = router.claim(ledger, self.shard);
        self.owners.insert(ledger, owner);
        owner
    }

    /// The owner of a ledger a read names; `None` (not cached) if nobody owns it yet.
    pub fn owner_find(&mut self, router: &Router, ledger: i64) -> Option<ShardId> {
        if let Some(&owner) = self.owners.get(&ledger) {
            return Some(owner);
        }
        let owner = router.owner(ledger)?;
        self.owners.insert(ledger, owner);
        Some(owner)
    }

    /// Caches a ledger this shard recovered and registered.
    pub fn insert(&mut self, ledger: i64, owner: ShardId) {
        self.owners.insert(ledger, owner);
    }
}

#[cfg(test)]
mod tests {
    use super::Router;

    #[test]
    fn a_round_asked_for_under_pressure_is_taken_once_and_rounds_are_counted() {
        let (router, _mailboxes) = Router::new(2, 4).unwrap();
        assert!(!router.gc_is_active());
        router.gc_active_set(true);
        assert!(!router.gc_wanted_take(), "nobody asked");
        // Both shards ask, every tick: one round answers them all.
        router.gc_want();
        router.gc_want();
        assert!(router.gc_wanted_take());
        assert!(!router.gc_wanted_take());
        assert_eq!(router.gc_rounds_forced(), 1);
        // A shard that sees (started, ended) = (1, 0) waits for round 2 to end: round 1 may
        // have listed the metadata before the block.
        router.gc_round_started();
        assert_eq!(router.gc_rounds(), (1, 0));
        router.gc_round_ended();
        router.gc_round_started();
        router.gc_round_ended();
        assert_eq!(router.gc_rounds(), (2, 2));
        router.gc_active_set(false);
        assert!(!router.gc_is_active());
    }
}
