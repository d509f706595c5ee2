//! `ringlog-bench ledgers`: creates and deletes ledger metadata znodes in ZooKeeper, as a
//! BookKeeper client's createLedger and deleteLedger do, so a script can drive a bookie's
//! garbage collector without a Java client (scripts/crash_loop.sh with CRASH_DELETES=1).
//! The znodes are `churn`'s (ROOT/LAYOUT of the hierarchical manager, placeholder content at
//! each ledger's hierarchical path): one implementation for both, in churn/zookeeper.rs.

#[cfg(test)]
mod tests;

use crate::churn::zookeeper::{Metadata, ZkFailure};
use std::time::{Duration, Instant};

/// Flags of `ringlog-bench ledgers`.
#[derive(clap::Args, Debug, Clone)]
pub struct LedgersArgs {
    /// ZooKeeper servers, HOST:PORT[,HOST:PORT...]: the ones the bookie's `--zk` names.
    #[arg(long)]
    pub zk: String,
    /// Ledger metadata root, the bookie's `--zk-root`. ROOT/LAYOUT is created (hierarchical
    /// ledger manager) if missing. Default: /ledgers.
    #[arg(long, default_value = "/ledgers")]
    pub zk_root: String,
    /// Ledgers whose znodes to create, e.g. `1000-1009,2005`: ids and inclusive ranges,
    /// comma-separated. A znode that exists already fails the run (another run's ledger).
    #[arg(long)]
    pub create: Option<String>,
    /// Ledgers whose znodes to delete, in the same form; done after --create. A znode already
    /// gone is not an error.
    #[arg(long)]
    pub delete: Option<String>,
    /// ZooKeeper session timeout in milliseconds. Default: 10000.
    #[arg(long, default_value_t = 10_000)]
    pub zk_session_timeout_ms: u64,
}

/// Most ids one list may name: the requests are pipelined, and a typo such as `1-1000000000`
/// should fail rather than flood ZooKeeper.
pub const IDS_MAX: u64 = 1_000_000;

/// Creates, then deletes, the znodes the flags name; prints what it did.
pub fn run(args: &LedgersArgs) -> Result<(), String> {
    let create = args.create.as_deref().map(ids_parse).transpose()?;
    let delete = args.delete.as_deref().map(ids_parse).transpose()?;
    if create.is_none() && delete.is_none() {
        return Err("nothing to do: give --create, --delete or both".into());
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .map_err(|error| format!("tokio runtime: {error}"))?;
    let started = Instant::now();
    let session_timeout = Duration::from_millis(args.zk_session_timeout_ms);
    let done = runtime.block_on(async {
        let metadata = Metadata::connect(&args.zk, &args.zk_root, session_timeout).await?;
        // LAYOUT first: without it the bookie's collector deletes nothing, which would make a
        // deletion test pass vacuously.
        metadata.layout_ensure().await?;
        if let Some(ids) = &create {
            metadata.ledgers_create(ids).await?;
        }
        if let Some(ids) = &delete {
            metadata.ledgers_delete(ids).await?;
        }
        Ok::<(), ZkFailure>(())
    });
    done.map_err(|error| error.to_string())?;
    println!(
        "ledgers: {} znodes created, {} deleted under {} in {} ms",
        create.as_ref().map_or(0, Vec::len),
        delete.as_ref().map_or(0, Vec::len),
        args.zk_root,
        started.elapsed().as_millis()
    );
    Ok(())
}

/// Parses `1000-1009,2005` into the ids it names, in the order given, without duplicates.
/// Ids are non-negative (negative ids have no metadata path) and a range's start is at most
/// its end.
pub fn ids_parse(text: &str) -> Result<Vec<i64>, String> {
    let bad = |what: &str| format!("ledger id list {text:?}: {what}");
    let mut ids = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for part in text.split(',') {
        let (first, last) = match part.split_once('-') {
            Some((first, last)) => (first, last),
            None => (part, part),
        };
        let parse = |value: &str| {
            value
                .parse::<i64>()
                .ok()
                .filter(|id| *id >= 0 && value.bytes().all(|byte| byte.is_ascii_digit()))
                .ok_or_else(|| bad(&format!("{part:?} is not an id or a range A-B of ids")))
        };
        let (first, last) = (parse(first)?, parse(last)?);
        if first > last {
            return Err(bad(&format!("range {part:?} runs backwards")));
        }
        // Counted before the loop, so a huge range fails without allocating it.
        let count = u64::try_from(last - first).expect("last >= first") + 1;
        if ids.len() as u64 + count > IDS_MAX {
            return Err(bad(&format!("more than {IDS_MAX} ids")));
        }
        for id in first..=last {
            if seen.insert(id) {
                ids.push(id);
            }
        }
    }
    Ok(ids)
}
