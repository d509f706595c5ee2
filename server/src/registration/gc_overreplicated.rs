//! Over-replicated ledgers (docs/gc.md), BookKeeper's `gcOverreplicatedLedgerWaitTime`: a
//! local ledger whose metadata no longer names this bookie in any ensemble (re-replication
//! moved its copy elsewhere) is deleted, after a grace period.
//!
//! Every --gc-overreplicated-wait-ms, after a complete round of the collector, a check reads
//! the metadata of each snapshot ledger (at --gc-metadata-rate, like the round). A ledger is
//! over-replicated when its metadata parses, says CLOSED, has an ensemble history and none
//! of its ensembles holds this bookie's id, and BookKeeper's under-replication tree neither
//! marks it under-replicated nor holds its replication lock. Unlike BookKeeper, which deletes
//! at the first sighting, a ledger is deleted only when a check finds it over-replicated again
//! at least one wait period after the check that first did, and at every check between: a
//! ledger that re-replication is still moving, or whose metadata a tool is still rewriting,
//! gets a full period to settle. Any failed read ends the check without a deletion.

use super::gc_metadata::{path_join, Metadata, ReadError, RoundError};
use super::ledger_layout::{layout_parse, ledger_path, Manager, LAYOUT_ZNODE};
use super::ledger_metadata::metadata_parse;
use super::underreplication::underreplicated_path;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// BookKeeper's under-replication tree (`ZkLedgerUnderreplicationManager`): markers at
/// `ROOT/underreplication/ledgers/<4 hex>/<4 hex>/<4 hex>/<4 hex>/urL<id, 10 digits>` and
/// replication locks at `ROOT/underreplication/locks/urL<id, 10 digits>`.
const UNDERREPLICATION_ZNODE: &str = "underreplication";
const UNDERREPLICATION_LOCKS_ZNODE: &str = "locks";
const UNDERREPLICATION_PREFIX: &str = "urL";

/// What a complete check found.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct CheckOutcome {
    /// Snapshot ledgers over-replicated now, sorted.
    pub overreplicated: Vec<i64>,
    /// Snapshot ledgers whose metadata was read.
    pub ledgers_checked: u64,
    /// Metadata znodes that did not parse (their ledgers were kept).
    pub nodes_unparsed: u64,
    /// Ledgers over-replicated by their metadata but marked under-replicated or locked for
    /// replication (kept).
    pub ledgers_replicating: u64,
}

/// The path of the lock a replication worker holds while it re-replicates `ledger`.
#[must_use]
pub(super) fn replication_lock_path(root: &str, ledger: i64) -> String {
    assert!(ledger >= 0);
    let base = path_join(root, UNDERREPLICATION_ZNODE);
    format!("{base}/{UNDERREPLICATION_LOCKS_ZNODE}/{UNDERREPLICATION_PREFIX}{ledger:010}")
}

/// One check's findings. `snapshot` is called before the first metadata read, so a ledger
/// created meanwhile is not examined.
pub(super) async fn check<M: Metadata>(
    metadata: &mut M,
    root: &str,
    bookie: &str,
    snapshot: impl FnOnce() -> Vec<i64>,
) -> Result<CheckOutcome, RoundError> {
    let mut ledgers: Vec<i64> = snapshot().into_iter().filter(|&l| l >= 0).collect();
    ledgers.sort_unstable();
    ledgers.dedup();
    let layout_path = path_join(root, LAYOUT_ZNODE);
    let Some(layout) = metadata.data(&layout_path).await? else {
        return Err(RoundError::LayoutMissing { path: layout_path });
    };
    let manager: Manager = layout_parse(&layout).map_err(|error| RoundError::Layout {
        path: layout_path,
        error,
    })?;
    let mut outcome = CheckOutcome::default();
    for ledger in ledgers {
        let Some(form) = manager.form_of(ledger) else {
            continue;
        };
        let path = ledger_path(root, ledger, form);
        outcome.ledgers_checked += 1;
        if !overreplicated_read(metadata, &path, bookie, &mut outcome).await? {
            continue;
        }
        // BookKeeper's replication worker holds the lock while it copies a ledger, possibly
        // onto this bookie, and updates the metadata before it lets go; a marker means the
        // auditor wants copies made, perhaps here.
        let lock = metadata.data(&replication_lock_path(root, ledger)).await?;
        let marker = metadata.data(&underreplicated_path(root, ledger)).await?;
        if lock.is_some() || marker.is_some() {
            outcome.ledgers_replicating += 1;
            continue;
        }
        // Again, after the lock was seen free: a worker that put this bookie back into the
        // ensemble and released the lock between the first read and the lock's shows here.
        if overreplicated_read(metadata, &path, bookie, &mut outcome).await? {
            outcome.overreplicated.push(ledger);
        }
    }
    Ok(outcome)
}

/// Whether the metadata at `path` lets `bookie` drop the ledger. No znode: the ledger is
/// deleted, which the round, not this check, acts on.
async fn overreplicated_read<M: Metadata>(
    metadata: &mut M,
    path: &str,
    bookie: &str,
    outcome: &mut CheckOutcome,
) -> Result<bool, ReadError> {
    let Some(bytes) = metadata.data(path).await? else {
        return Ok(false);
    };
    match metadata_parse(&bytes) {
        Ok(parsed) => Ok(parsed.overreplicated_on(bookie)),
        Err(_) => {
            outcome.nodes_unparsed += 1;
            Ok(false)
        }
    }
}

/// The ledgers found over-replicated, each with the time of the check that first found it,
/// and when the last complete check ended.
#[derive(Debug)]
pub(super) struct Candidates {
    wait: Duration,
    check_last: Instant,
    first_seen: BTreeMap<i64, Instant>,
}

impl Candidates {
    /// No candidates; the first check is due one wait period after `now` (BookKeeper's
    /// first check also waits a period after the bookie starts).
    pub(super) fn new(wait: Duration, now: Instant) -> Candidates {
        assert!(!wait.is_zero());
        Candidates {
            wait,
            check_last: now,
            first_seen: BTreeMap::new(),
        }
    }

    /// Whether a check is due at `now`: a wait period after the last complete one. A failed
    /// check does not count, so it is retried after the next round.
    pub(super) fn check_due(&self, now: Instant) -> bool {
        now.saturating_duration_since(self.check_last) >= self.wait
    }

    /// Applies a complete check that ended at `now` and found `overreplicated`; returns the
    /// ledgers to delete: those every check for at least one wait period found
    /// over-replicated. A ledger the check did not find is forgotten, so a later sighting
    /// starts its grace period anew.
    pub(super) fn check_apply(&mut self, now: Instant, overreplicated: &[i64]) -> Vec<i64> {
        assert!(now >= self.check_last);
        let mut first_seen = BTreeMap::new();
        let mut deletions = Vec::new();
        for &ledger in overreplicated {
            let seen = self.first_seen.get(&ledger).copied().unwrap_or(now);
            if now.saturating_duration_since(seen) >= self.wait {
                deletions.push(ledger);
            }
            // Kept after its deletion is mailed: a full mailbox leaves it local, and the next
            // check deletes it without a new grace period.
            first_seen.insert(ledger, seen);
        }
        self.first_seen = first_seen;
        self.check_last = now;
        assert!(deletions.len() <= self.first_seen.len());
        deletions
    }

    /// Ledgers currently in their grace period or past it.
    pub(super) fn count(&self) -> usize {
        self.first_seen.len()
    }
}
