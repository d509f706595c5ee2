//! The repairer (docs/scrub.md, "Repair"): a task on the registration thread, beside the
//! registration loop and the collector, with a ZooKeeper session of its own. Every
//! `REPAIR_POLL_MS` it takes the entries the shards found damaged (`Router::repairs_take`)
//! and, for each:
//! 1. reads the ledger's metadata (the layout at ROOT/LAYOUT says where it is);
//! 2. asks every other bookie of the entry's write set (`LedgerMetadata::write_set`,
//!    BookKeeper's round-robin schedule) for it with a v2 READ_ENTRY (`peer_read.rs`: inside
//!    TLS when this bookie has --tls-trust), one at a time, each within
//!    `REPAIR_PEER_TIMEOUT_MS`;
//! 3. takes the first answer whose body names the ledger and entry and whose digest verifies
//!    where the ledger's digest type lets a bookie check it (CRC32, CRC32C; an HMAC needs the
//!    ledger's password, DUMMY has none: there the ids are all that is checked), and mails it
//!    to the shard that holds the damaged copy (`Mail::RepairEntry`), which journals it;
//! 4. without a good copy, or without metadata, marks the ledger under-replicated as
//!    BookKeeper's `ZkLedgerUnderreplicationManager` does, this bookie as the replica, so
//!    AutoRecovery and operators see it.
//!
//! Nothing here runs on a shard, and nothing on a shard waits for it. A repair that cannot
//! finish (ZooKeeper unreachable, a full mailbox) is counted and dropped: the damage is still
//! on disk, and the scrubber's next cycle asks again.

use super::control::{bounded, close, connect, sleep_unless_stopping, until_stopping, Control};
use super::gc_metadata::path_join;
use super::ledger_layout::{layout_parse, ledger_path, LAYOUT_ZNODE};
use super::ledger_metadata::{metadata_parse, DigestType, LedgerMetadata};
use super::peer_read::entry_read;
use super::underreplication::{
    underreplicated_data, underreplicated_parse_replicas, underreplicated_path,
};
use crate::limits;
use crate::router::{Mail, RepairEnd, RepairRequest, SendError};
use crate::tls::{peer_tls_build, PeerTls};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use zookeeper_client::{Acls, Client, CreateMode, Error as ZkError};

/// What a repair came to.
#[derive(Debug)]
enum Outcome {
    /// A good copy from `from`, mailed to the shard.
    Copied { from: String },
    /// No good copy: marked under-replicated, with why.
    Marked { reason: String },
    /// Could not finish, with why.
    Failed { reason: String },
    /// The entry's write set does not name this bookie: nothing to do.
    NotOurs,
}

/// Runs the repairer until the server stops (module doc).
pub(super) async fn repairs(control: &Control, bookie: &str) {
    let router = &control.router;
    router.repair_active_set(true);
    let mut client: Option<Client> = None;
    let mut batch: Vec<RepairRequest> = Vec::new();
    let poll = Duration::from_millis(limits::REPAIR_POLL_MS);
    while sleep_unless_stopping(control, poll).await {
        router.repairs_take(&mut batch, limits::REPAIR_BATCH_MAX);
        if batch.is_empty() {
            continue;
        }
        if client.is_none() {
            client = connect(control).await.ok().flatten();
        }
        let Some(session) = client.as_ref() else {
            for request in batch.drain(..) {
                router.repair_counted(RepairEnd::Failed);
                tracing::warn!(
                    "repair of ledger {} entry {}: no ZooKeeper session; the next scrub cycle \
                     asks again",
                    request.ledger,
                    request.entry
                );
            }
            continue;
        };
        // Read for every batch, so rotated files reach the next repair.
        let tls = match peer_tls_build(control.tls.as_deref()) {
            Ok(tls) => tls,
            Err(error) => {
                for request in batch.drain(..) {
                    router.repair_counted(RepairEnd::Failed);
                    tracing::warn!(
                        "repair of ledger {} entry {}: the TLS files cannot be used ({error}); \
                         the next scrub cycle asks again",
                        request.ledger,
                        request.entry
                    );
                }
                continue;
            }
        };
        for request in batch.drain(..) {
            let Some(outcome) =
                until_stopping(control, repair(control, session, bookie, &tls, request)).await
            else {
                break;
            };
            let (ledger, entry) = (request.ledger, request.entry);
            match outcome {
                Outcome::Copied { from } => {
                    router.repair_counted(RepairEnd::Copied);
                    tracing::info!(
                        "repair of ledger {ledger} entry {entry}: good copy from {from}"
                    );
                }
                Outcome::Marked { reason } => {
                    router.repair_counted(RepairEnd::Marked);
                    tracing::error!(
                        "repair of ledger {ledger} entry {entry}: {reason}; ledger marked \
                         under-replicated"
                    );
                }
                Outcome::NotOurs => tracing::debug!(
                    "repair of ledger {ledger} entry {entry}: not in this bookie's write set"
                ),
                Outcome::Failed { reason } => {
                    router.repair_counted(RepairEnd::Failed);
                    tracing::warn!(
                        "repair of ledger {ledger} entry {entry} failed: {reason}; the next \
                         scrub cycle asks again"
                    );
                }
            }
        }
        batch.clear();
    }
    router.repair_active_set(false);
    if let Some(client) = client {
        close(
            client,
            Duration::from_millis(limits::ZK_DEREGISTER_TIMEOUT_MS),
        )
        .await;
    }
}

/// One repair (module doc).
async fn repair(
    control: &Control,
    client: &Client,
    bookie: &str,
    tls: &PeerTls,
    request: RepairRequest,
) -> Outcome {
    let metadata = match metadata_read(control, client, request.ledger).await {
        Ok(Some(metadata)) => metadata,
        Ok(None) => {
            return mark(
                control,
                client,
                bookie,
                request,
                "no metadata for the ledger",
            )
            .await;
        }
        Err(reason) => return Outcome::Failed { reason },
    };
    let Some(write_set) = metadata.write_set(request.entry) else {
        let reason = "the metadata names no write set for the entry";
        return mark(control, client, bookie, request, reason).await;
    };
    if !write_set.contains(&bookie) {
        // Not this bookie's entry (an id a damaged index page's runs span, held by the other
        // bookies of a striped ledger): nothing to repair here.
        return Outcome::NotOurs;
    }
    let mut refusals = Vec::new();
    for peer in write_set.into_iter().filter(|&peer| peer != bookie) {
        match copy_fetch(peer, tls, request.ledger, request.entry).await {
            Ok(body) => match copy_verify(&body, request, metadata.digest_type) {
                Ok(()) => {
                    let mail = Mail::RepairEntry {
                        ledger: request.ledger,
                        entry: request.entry,
                        body,
                    };
                    return match control.router.send(request.shard, mail) {
                        Ok(()) => {
                            let _ = control.router.wake(request.shard);
                            Outcome::Copied {
                                from: peer.to_owned(),
                            }
                        }
                        Err(SendError::Full(_)) => Outcome::Failed {
                            reason: "the shard's mailbox is full".to_owned(),
                        },
                        Err(SendError::Gone) => Outcome::Failed {
                            reason: "the shard is gone".to_owned(),
                        },
                    };
                }
                Err(reason) => refusals.push(format!("{peer}: {reason}")),
            },
            Err(reason) => refusals.push(format!("{peer}: {reason}")),
        }
    }
    let reason = if refusals.is_empty() {
        "no other bookie holds the entry".to_owned()
    } else {
        format!("no good copy ({})", refusals.join("; "))
    };
    mark(control, client, bookie, request, &reason).await
}

/// The ledger's metadata, `None` if its znode is gone.
async fn metadata_read(
    control: &Control,
    client: &Client,
    ledger: i64,
) -> Result<Option<LedgerMetadata>, String> {
    let root = &control.config.root;
    let timeout = control.request_timeout();
    let layout_path = path_join(root, LAYOUT_ZNODE);
    let layout = match bounded(timeout, client.get_data(&layout_path)).await {
        Ok((data, _)) => data,
        Err(error) => return Err(format!("reading {layout_path}: {error}")),
    };
    let manager = layout_parse(&layout).map_err(|error| format!("{layout_path}: {error}"))?;
    let form = manager
        .form_of(ledger)
        .ok_or_else(|| format!("ledger id {ledger} has no path under this layout"))?;
    let path = ledger_path(root, ledger, form);
    match bounded(timeout, client.get_data(&path)).await {
        Ok((data, _)) => metadata_parse(&data)
            .map(Some)
            .map_err(|error| format!("{path}: {error}")),
        Err(ZkError::NoNode) => Ok(None),
        Err(error) => Err(format!("reading {path}: {error}")),
    }
}

/// Reads `(ledger, entry)` from `peer` (`host:port`) within `REPAIR_PEER_TIMEOUT_MS`.
async fn copy_fetch(peer: &str, tls: &PeerTls, ledger: i64, entry: i64) -> Result<Vec<u8>, String> {
    let timeout = Duration::from_millis(limits::REPAIR_PEER_TIMEOUT_MS);
    tokio::time::timeout(timeout, entry_read(peer, tls, ledger, entry))
        .await
        .unwrap_or_else(|_| {
            Err(format!(
                "no answer within {} ms",
                limits::REPAIR_PEER_TIMEOUT_MS
            ))
        })
}

/// A copy is good when its body names the ledger and entry and its digest verifies where
/// the digest type allows.
fn copy_verify(
    body: &[u8],
    request: RepairRequest,
    digest: Option<DigestType>,
) -> Result<(), String> {
    let id = |offset: usize| {
        body.get(offset..offset + 8)
            .and_then(|bytes| bytes.try_into().ok())
            .map(i64::from_be_bytes)
    };
    if id(0) != Some(request.ledger) || id(8) != Some(request.entry) {
        return Err("its body names another entry".to_owned());
    }
    let verified = match digest {
        Some(DigestType::Crc32c) => wire::verify_entry_body_crc32c(body).map(|_| ()),
        Some(DigestType::Crc32) => wire::verify_entry_body_crc32(body).map(|_| ()),
        Some(DigestType::Hmac | DigestType::Dummy) | None => Ok(()),
    };
    verified.map_err(|error| format!("digest: {error}"))
}

/// Marks the ledger under-replicated with this bookie as a replica (adding it to a mark that
/// exists), as `ZkLedgerUnderreplicationManager.markLedgerUnderreplicated` does.
async fn mark(
    control: &Control,
    client: &Client,
    bookie: &str,
    request: RepairRequest,
    reason: &str,
) -> Outcome {
    let path = underreplicated_path(&control.config.root, request.ledger);
    let timeout = control.request_timeout();
    let ctime_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| {
            i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
        });
    let options = CreateMode::Persistent.with_acls(Acls::anyone_all());
    let parent = path
        .rsplit_once('/')
        .map_or(path.as_str(), |(parent, _)| parent);
    if let Err(error) = bounded(timeout, client.mkdir(parent, &options)).await {
        if !matches!(error, ZkError::NodeExists) {
            return Outcome::Failed {
                reason: format!("{reason}; creating {parent}: {error}"),
            };
        }
    }
    let data = underreplicated_data(&[bookie.to_owned()], ctime_ms);
    match bounded(timeout, client.create(&path, &data, &options)).await {
        Ok(_) => {
            return Outcome::Marked {
                reason: reason.to_owned(),
            }
        }
        Err(ZkError::NodeExists) => {}
        Err(error) => {
            return Outcome::Failed {
                reason: format!("{reason}; creating {path}: {error}"),
            }
        }
    }
    // Marked already (by another bookie, or by us before): add this bookie if it is missing.
    let (data, stat) = match bounded(timeout, client.get_data(&path)).await {
        Ok(found) => found,
        Err(error) => {
            return Outcome::Failed {
                reason: format!("{reason}; reading {path}: {error}"),
            }
        }
    };
    let mut replicas = match underreplicated_parse_replicas(&data) {
        Ok(replicas) => replicas,
        // Not overwritten: BookKeeper fails its mark too on a node it cannot parse.
        Err(error) => {
            return Outcome::Failed {
                reason: format!("{reason}; {path} does not parse: {error}"),
            }
        }
    };
    if !replicas.iter().any(|replica| replica == bookie) {
        replicas.push(bookie.to_owned());
        let data = underreplicated_data(&replicas, ctime_ms);
        let write = client.set_data(&path, &data, Some(stat.version));
        if let Err(error) = bounded(timeout, write).await {
            return Outcome::Failed {
                reason: format!("{reason}; updating {path}: {error}"),
            };
        }
    }
    Outcome::Marked {
        reason: reason.to_owned(),
    }
}
