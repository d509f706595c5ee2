//! The garbage collector (docs/gc.md): every --gc-interval-ms, delete the local ledgers whose
//! metadata is gone from ZooKeeper, as BookKeeper's ScanAndCompareGarbageCollector does.
//!
//! It runs on the registration thread's runtime, beside the registration loop (never on a
//! shard), with a ZooKeeper session of its own: a round that lists thousands of znodes at
//! --gc-metadata-rate must not delay a read-only move, and its errors must not touch the
//! registration's session. A round:
//! 1. snapshots the local ledgers (the router's owners map) before any metadata read, so a
//!    ledger created during the listing is not in the snapshot and cannot be collected;
//! 2. reads ROOT/LAYOUT; under a layout it does not understand, it collects nothing;
//! 3. walks the hierarchical tree, skipping branches that hold no snapshot ledger; a node
//!    that does not parse keeps every ledger of its branch;
//! 4. only if every read succeeded, sends each owner shard a `Mail::DeleteLedgers` of the
//!    snapshot ledgers the listing lacks. A full mailbox defers them to the next round.
//!
//! A shard under disk pressure asks for a round now (`Router::gc_want`): the next one starts
//! `GC_PRESSURE_ROUND_GAP_MS_MIN` after the last instead of --gc-interval-ms, and the shards
//! see rounds start and end (`Router::gc_rounds`), so a full one waits for the deletions a
//! round finds before it calls its disk full (docs/gc.md, "Disk pressure").
//!
//! With --gc-overreplicated-wait-ms, a complete round is followed, once per wait period, by
//! the check for over-replicated ledgers (`gc_overreplicated.rs`).

use super::control::{bounded, close, connect, deregister_bound, session_ended};
use super::control::{sleep_unless_stopping, until_stopping, Control};
use super::gc_metadata::{path_join, Metadata, ReadError, RoundError};
use super::gc_overreplicated::{check, Candidates, CheckOutcome};
use super::ledger_layout::{
    branch_ids, child_classify, layout_parse, Branch, Child, Manager, LAYOUT_ZNODE,
};
use super::read_rate::ReadRate;
use crate::limits;
use crate::router::{Mail, SendError, ShardId};
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};
use zookeeper_client::{Client, Error as ZkError};

/// What a complete round found.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct RoundOutcome {
    /// Snapshot ledgers the listing lacks, sorted.
    pub deletions: Vec<i64>,
    /// Ledger znodes seen.
    pub ledgers_listed: u64,
    /// Znodes inside the tree that did not parse (their branches were kept whole).
    pub nodes_unparsed: u64,
}

/// One round's decision. `snapshot` is called before the first metadata read.
pub(super) async fn round<M: Metadata>(
    metadata: &mut M,
    root: &str,
    snapshot: impl FnOnce() -> Vec<i64>,
) -> Result<RoundOutcome, RoundError> {
    // Negative ids have no metadata path: never candidates.
    let mut candidates: BTreeSet<i64> = snapshot().into_iter().filter(|&l| l >= 0).collect();
    let layout_path = path_join(root, LAYOUT_ZNODE);
    let Some(layout) = metadata.data(&layout_path).await? else {
        return Err(RoundError::LayoutMissing { path: layout_path });
    };
    let _manager: Manager = layout_parse(&layout).map_err(|error| RoundError::Layout {
        path: layout_path,
        error,
    })?;
    let mut outcome = RoundOutcome::default();
    let mut stack: Vec<(Option<Branch>, String)> = vec![(None, root.to_string())];
    while let Some((branch, path)) = stack.pop() {
        if candidates.is_empty() {
            break;
        }
        let Some(children) = metadata.children(&path).await? else {
            // A branch that vanished while listed: keep its ids this round. The root: none.
            if let Some(branch) = &branch {
                candidates_keep(&mut candidates, branch);
            }
            continue;
        };
        if children.len() > limits::GC_CHILDREN_MAX {
            return Err(RoundError::ChildrenTooMany {
                path,
                count: children.len(),
            });
        }
        for name in children {
            match child_classify(branch.as_ref(), &name) {
                Child::Branch(child) => {
                    // Only branches that may hold a candidate are read.
                    let (low, high) = branch_ids(&child);
                    if candidates.range(low..=high).next().is_some() {
                        stack.push((Some(child), path_join(&path, &name)));
                    }
                }
                Child::Ledger(ledger) => {
                    outcome.ledgers_listed += 1;
                    candidates.remove(&ledger);
                }
                Child::Ignored => {}
                Child::Unparsed => {
                    outcome.nodes_unparsed += 1;
                    let parent = branch
                        .as_ref()
                        .expect("the root's children are never unparsed");
                    candidates_keep(&mut candidates, parent);
                }
            }
        }
    }
    outcome.deletions = candidates.into_iter().collect();
    Ok(outcome)
}

/// Removes every candidate `branch` could hold.
fn candidates_keep(candidates: &mut BTreeSet<i64>, branch: &Branch) {
    let (low, high) = branch_ids(branch);
    let kept: Vec<i64> = candidates.range(low..=high).copied().collect();
    for ledger in kept {
        candidates.remove(&ledger);
    }
}

/// The collector: rounds every --gc-interval-ms until the server stops. `bookie` is the id
/// this bookie registered as, which ensembles name it by.
pub(super) async fn collect(control: &Control, bookie: &str) {
    let Some(interval) = control.config.gc_interval else {
        return;
    };
    let mut client: Option<Client> = None;
    let mut rate = ReadRate::new(control.config.gc_metadata_rate);
    // The last warning of each, said once while it lasts, not every round.
    let mut round_warning = String::new();
    let mut check_warning = String::new();
    let mut candidates = control
        .config
        .gc_overreplicated_wait
        .map(|wait| Candidates::new(wait, Instant::now()));
    let router = &control.router;
    router.gc_active_set(true);
    while round_wait(control, interval).await {
        let started = Instant::now();
        router.gc_round_started();
        let round = until_stopping(control, round_run(control, &mut client, &mut rate)).await;
        let outcome = match round {
            None | Some(Err(RoundError::Read(ReadError::Stopping))) => break,
            Some(Err(error)) => {
                router.gc_round_ended();
                warn_once(
                    &mut round_warning,
                    Some(format!("{error}; nothing collected this round")),
                );
                continue;
            }
            Some(Ok(outcome)) => outcome,
        };
        warn_once(&mut round_warning, None);
        deletions_send(control, &outcome, started.elapsed());
        router.gc_round_ended();
        // Only after a complete round, on the session it just used.
        let now = Instant::now();
        let Some(candidates) = candidates.as_mut().filter(|c| c.check_due(now)) else {
            continue;
        };
        let client = client.as_ref().expect("a complete round has a session");
        match overreplicated_run(control, client, &mut rate, bookie).await {
            None | Some(Err(RoundError::Read(ReadError::Stopping))) => break,
            Some(Err(error)) => {
                let warning = format!("over-replication check: {error}; nothing deleted by it");
                warn_once(&mut check_warning, Some(warning));
            }
            Some(Ok(outcome)) => {
                warn_once(&mut check_warning, None);
                overreplicated_send(control, candidates, &outcome);
            }
        }
    }
    router.gc_active_set(false);
    if let Some(client) = client {
        close(client, deregister_bound()).await;
    }
}

/// Waits for the next round: `interval` after the last one, or `GC_PRESSURE_ROUND_GAP_MS_MIN`
/// after it when a shard under disk pressure asks for one. False if the server is stopping.
async fn round_wait(control: &Control, interval: Duration) -> bool {
    let gap_min = Duration::from_millis(limits::GC_PRESSURE_ROUND_GAP_MS_MIN);
    if !sleep_unless_stopping(control, gap_min.min(interval)).await {
        return false;
    }
    let deadline = Instant::now() + interval.saturating_sub(gap_min);
    loop {
        if control.stopping() {
            return false;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || control.router.gc_wanted_take() {
            return true;
        }
        tokio::time::sleep(left.min(gap_min)).await;
    }
}

/// Prints `warning` unless it is the one printed last; `None` ends the last one.
fn warn_once(last: &mut String, warning: Option<String>) {
    match warning {
        None => last.clear(),
        Some(warning) if warning != *last => {
            tracing::warn!("gc: {warning}");
            *last = warning;
        }
        Some(_) => {}
    }
}

/// One round on the collector's session, opening one if there is none.
async fn round_run(
    control: &Control,
    client: &mut Option<Client>,
    rate: &mut ReadRate,
) -> Result<RoundOutcome, RoundError> {
    if client.as_ref().is_none_or(session_ended) {
        *client = match connect(control).await {
            Ok(Some(client)) => Some(client),
            Ok(None) => return Err(RoundError::Read(ReadError::Stopping)),
            Err(error) => {
                return Err(RoundError::Read(ReadError::ZooKeeper {
                    operation: "connect to",
                    path: control.config.servers.clone(),
                    error: match error {
                        super::RegistrationError::Unreachable { error, .. } => error,
                        _ => ZkError::ConnectionLoss,
                    },
                }))
            }
        };
    }
    let client = client.as_ref().expect("connected above");
    let mut metadata = ZooKeeperMetadata {
        control,
        client,
        rate,
    };
    let router = &control.router;
    round(&mut metadata, &control.config.root, || {
        router.ledgers_snapshot()
    })
    .await
}

/// One over-replication check on the collector's session; `None` if the server stopped.
async fn overreplicated_run(
    control: &Control,
    client: &Client,
    rate: &mut ReadRate,
    bookie: &str,
) -> Option<Result<CheckOutcome, RoundError>> {
    let mut metadata = ZooKeeperMetadata {
        control,
        client,
        rate,
    };
    let router = &control.router;
    let checked = check(&mut metadata, &control.config.root, bookie, || {
        router.ledgers_snapshot()
    });
    until_stopping(control, checked).await
}

/// Applies a complete check to the candidates and deletes those past their grace period.
fn overreplicated_send(control: &Control, candidates: &mut Candidates, outcome: &CheckOutcome) {
    // The check's end: every sighting of the next check is a full period after it.
    let ended = Instant::now();
    let deletions = candidates.check_apply(ended, &outcome.overreplicated);
    let grace = candidates.count() - deletions.len();
    let (sent, deferred) = ledgers_mail(control, &deletions);
    if sent > 0 || deferred > 0 {
        let wait = control
            .config
            .gc_overreplicated_wait
            .expect("candidates exist only with a wait");
        println!(
            "ringlog: gc: deleting {sent} over-replicated ledgers (closed, in no ensemble as \
             this bookie, for at least {} ms; {} checked, {} unparsed, {} being replicated, \
             {} in their grace period, {deferred} deferred to the next check: mailbox full)",
            wait.as_millis(),
            outcome.ledgers_checked,
            outcome.nodes_unparsed,
            outcome.ledgers_replicating,
            grace
        );
    }
}

/// Sends each owner its deletions and logs the round if it deleted anything.
fn deletions_send(control: &Control, outcome: &RoundOutcome, elapsed: Duration) {
    let (sent, deferred) = ledgers_mail(control, &outcome.deletions);
    if sent > 0 || deferred > 0 {
        println!(
            "ringlog: gc: deleting {sent} ledgers whose metadata is gone ({} listed, \
             {deferred} deferred to the next round: mailbox full) in {} ms",
            outcome.ledgers_listed,
            elapsed.as_millis()
        );
    }
}

/// Mails each owner shard `Mail::DeleteLedgers` of its `ledgers`; returns how many were sent
/// and how many a full mailbox deferred.
fn ledgers_mail(control: &Control, ledgers: &[i64]) -> (usize, usize) {
    let router = &control.router;
    let mut by_owner: BTreeMap<ShardId, Vec<i64>> = BTreeMap::new();
    for &ledger in ledgers {
        // Forgotten meanwhile: deleted by an earlier round's mail.
        if let Some(owner) = router.owner(ledger) {
            by_owner.entry(owner).or_default().push(ledger);
        }
    }
    let mut sent = 0_usize;
    let mut deferred = 0_usize;
    for (owner, ledgers) in by_owner {
        let mut woken = false;
        for chunk in ledgers.chunks(limits::GC_DELETE_BATCH_LEDGERS_MAX) {
            let mail = Mail::DeleteLedgers {
                ledgers: chunk.to_vec(),
            };
            match router.send(owner, mail) {
                Ok(()) => {
                    sent += chunk.len();
                    woken = true;
                }
                // The router still maps them: the next round finds them again.
                Err(SendError::Full(_)) => deferred += chunk.len(),
                Err(SendError::Gone) => return (sent, deferred),
            }
        }
        if woken {
            if let Err(error) = router.wake(owner) {
                tracing::error!("gc: cannot wake shard {owner}: {error}");
            }
        }
    }
    (sent, deferred)
}

/// ZooKeeper reads, paced by --gc-metadata-rate and bounded by the request timeout.
struct ZooKeeperMetadata<'a> {
    control: &'a Control,
    client: &'a Client,
    rate: &'a mut ReadRate,
}

impl ZooKeeperMetadata<'_> {
    async fn pace(&mut self) -> Result<(), ReadError> {
        if self.control.stopping() {
            return Err(ReadError::Stopping);
        }
        let at = self.rate.reserve(Instant::now());
        tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await;
        Ok(())
    }

    fn failed(operation: &'static str, path: &str, error: ZkError) -> ReadError {
        ReadError::ZooKeeper {
            operation,
            path: path.to_string(),
            error,
        }
    }
}

impl Metadata for ZooKeeperMetadata<'_> {
    async fn data(&mut self, path: &str) -> Result<Option<Vec<u8>>, ReadError> {
        self.pace().await?;
        let timeout = self.control.request_timeout();
        match bounded(timeout, self.client.get_data(path)).await {
            Ok((data, _)) => Ok(Some(data)),
            Err(ZkError::NoNode) => Ok(None),
            Err(error) => Err(Self::failed("read", path, error)),
        }
    }

    async fn children(&mut self, path: &str) -> Result<Option<Vec<String>>, ReadError> {
        self.pace().await?;
        let timeout = self.control.request_timeout();
        match bounded(timeout, self.client.list_children(path)).await {
            Ok(children) => Ok(Some(children)),
            Err(ZkError::NoNode) => Ok(None),
            Err(error) => Err(Self::failed("list", path, error)),
        }
    }
}
