//! The ledger metadata `churn` writes: ROOT/LAYOUT and one znode per ledger at its
//! hierarchical path, as BookKeeper's hierarchical ledger manager lays them out, so the
//! bookie's collector (server/src/registration/gc.rs) lists them as it would a real
//! cluster's. Only the control thread calls this, on its current-thread runtime.

use std::time::Duration;
use zookeeper_client::{Acls, Client, CreateMode, Error as ZkError};

/// What BookKeeper writes to ROOT/LAYOUT for its default (and Pulsar's) ledger manager:
/// layout format 2, then `<factory class>:<manager version>` (`meta/LedgerLayout.java`).
pub const LAYOUT_HIERARCHICAL: &[u8] =
    b"2\norg.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory:1";

/// A ledger znode's content. The collector only lists znodes and never reads them, so a
/// placeholder is enough; a real client writes its serialized `LedgerMetadata` here.
const LEDGER_PLACEHOLDER: &[u8] = b"ringlog-bench churn: placeholder ledger metadata";

/// The longest any single ZooKeeper request may take before the run fails.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// A ZooKeeper request that failed, or a metadata tree the run cannot use.
#[derive(Debug)]
#[non_exhaustive]
pub enum ZkFailure {
    /// No session within the timeout.
    Connect { servers: String, error: ZkError },
    /// A request answered with an error (or not within `REQUEST_TIMEOUT`).
    Request {
        operation: &'static str,
        path: String,
        error: ZkError,
    },
    /// ROOT/LAYOUT names a manager whose tree the bookie's collector does not walk.
    Layout { path: String, found: String },
    /// A ledger's znode exists before this run created it: another run used these ids.
    LedgerExists { path: String },
}

impl std::fmt::Display for ZkFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ZkFailure::Connect { servers, error } => {
                write!(f, "ZooKeeper {servers}: no session: {error}")
            }
            ZkFailure::Request {
                operation,
                path,
                error,
            } => write!(f, "ZooKeeper {operation} {path} failed: {error}"),
            ZkFailure::Layout { path, found } => write!(
                f,
                "{path} holds {found:?}, not a hierarchical ledger manager: the bookie's \
                 collector would delete nothing"
            ),
            ZkFailure::LedgerExists { path } => write!(
                f,
                "{path} exists already: another run wrote these ledger ids (use a fresh \
                 --zk-root or --ledger-id-base)"
            ),
        }
    }
}

/// The session and the root the ledgers live under.
pub struct Metadata {
    client: Client,
    root: String,
}

impl Metadata {
    pub async fn connect(
        servers: &str,
        root: &str,
        session_timeout: Duration,
    ) -> Result<Metadata, ZkFailure> {
        let connector = Client::connector().with_session_timeout(session_timeout);
        let failed = |error| ZkFailure::Connect {
            servers: servers.to_string(),
            error,
        };
        let client = tokio::time::timeout(REQUEST_TIMEOUT, connector.connect(servers))
            .await
            .map_err(|_| failed(ZkError::Timeout))?
            .map_err(failed)?;
        Ok(Metadata {
            client,
            root: root.to_string(),
        })
    }

    pub fn root(&self) -> &str {
        &self.root
    }

    /// Creates ROOT and ROOT/LAYOUT where missing, and checks that an existing LAYOUT is
    /// one the collector walks.
    pub async fn layout_ensure(&self) -> Result<(), ZkFailure> {
        let options = CreateMode::Persistent.with_acls(Acls::anyone_all());
        bounded(
            "create",
            &self.root,
            self.client.mkdir(&self.root, &options),
        )
        .await?;
        let path = format!("{}/LAYOUT", self.root);
        let created = self.client.create(&path, LAYOUT_HIERARCHICAL, &options);
        match bounded("create", &path, created).await {
            Ok(_) => return Ok(()),
            Err(ZkFailure::Request {
                error: ZkError::NodeExists,
                ..
            }) => {}
            Err(error) => return Err(error),
        }
        let (data, _) = bounded("read", &path, self.client.get_data(&path)).await?;
        if layout_hierarchical(&data) {
            Ok(())
        } else {
            let found = String::from_utf8_lossy(&data).into_owned();
            Err(ZkFailure::Layout { path, found })
        }
    }

    /// Creates the metadata znode of every ledger in `ids`, and its parents where missing.
    /// The requests are pipelined: one round trip for all of them, not one each.
    pub async fn ledgers_create(&self, ids: &[i64]) -> Result<(), ZkFailure> {
        let options = CreateMode::Persistent.with_acls(Acls::anyone_all());
        let paths: Vec<String> = ids.iter().map(|&id| ledger_path(&self.root, id)).collect();
        let creates = paths
            .iter()
            .map(|path| self.client.create(path, LEDGER_PLACEHOLDER, &options));
        // The requests are sent in order when created; their answers are awaited after.
        let pending: Vec<_> = creates.collect();
        let mut parents_missing = Vec::new();
        for (path, create) in paths.iter().zip(pending) {
            match bounded("create", path, create).await {
                Ok(_) => {}
                Err(ZkFailure::Request {
                    error: ZkError::NoNode,
                    ..
                }) => parents_missing.push(path),
                Err(ZkFailure::Request {
                    error: ZkError::NodeExists,
                    ..
                }) => return Err(ZkFailure::LedgerExists { path: path.clone() }),
                Err(error) => return Err(error),
            }
        }
        for path in parents_missing {
            let parent = &path[..path.rfind('/').expect("a ledger path has parents")];
            bounded("create", parent, self.client.mkdir(parent, &options)).await?;
            let create = self.client.create(path, LEDGER_PLACEHOLDER, &options);
            match bounded("create", path, create).await {
                Ok(_) => {}
                Err(ZkFailure::Request {
                    error: ZkError::NodeExists,
                    ..
                }) => return Err(ZkFailure::LedgerExists { path: path.clone() }),
                Err(error) => return Err(error),
            }
        }
        Ok(())
    }

    /// Deletes the metadata znodes of `ids`: what `BookKeeper.deleteLedger` does to them.
    /// A znode already gone is not an error. Parents are left, as BookKeeper leaves them.
    pub async fn ledgers_delete(&self, ids: &[i64]) -> Result<(), ZkFailure> {
        let paths: Vec<String> = ids.iter().map(|&id| ledger_path(&self.root, id)).collect();
        let pending: Vec<_> = paths
            .iter()
            .map(|path| self.client.delete(path, None))
            .collect();
        for (path, delete) in paths.iter().zip(pending) {
            match bounded("delete", path, delete).await {
                Ok(()) => {}
                Err(ZkFailure::Request {
                    error: ZkError::NoNode,
                    ..
                }) => {}
                Err(error) => return Err(error),
            }
        }
        Ok(())
    }
}

/// `request`, bounded by `REQUEST_TIMEOUT`, its error named by operation and path.
async fn bounded<T>(
    operation: &'static str,
    path: &str,
    request: impl std::future::Future<Output = Result<T, ZkError>>,
) -> Result<T, ZkFailure> {
    let result = tokio::time::timeout(REQUEST_TIMEOUT, request)
        .await
        .unwrap_or(Err(ZkError::Timeout));
    result.map_err(|error| ZkFailure::Request {
        operation,
        path: path.to_string(),
        error,
    })
}

/// True for the layouts of the three hierarchical managers, in format 1 or 2, which are the
/// ones the collector walks (server/src/registration/ledger_layout.rs).
pub fn layout_hierarchical(data: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(data) else {
        return false;
    };
    let mut lines = text.split('\n').map(str::trim);
    let (Some(format), Some(manager)) = (lines.next(), lines.next()) else {
        return false;
    };
    let managers = [
        "org.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory:1",
        "org.apache.bookkeeper.meta.LongHierarchicalLedgerManagerFactory:1",
        "org.apache.bookkeeper.meta.LegacyHierarchicalLedgerManagerFactory:1",
        "hierarchical:1",
        "longhierarchical:1",
        "legacyhierarchical:1",
    ];
    (format == "1" || format == "2") && managers.contains(&manager)
}

/// The znode path of `ledger` under the hierarchical manager (`getHybridHierarchicalLedgerPath`
/// in BookKeeper's `util/StringUtils.java`): ids below 2^31 - 1 as 10 digits split 2/4/4
/// (`00/0000/L0000`), larger ones as 19 digits split 3/4/4/4/4.
pub fn ledger_path(root: &str, ledger: i64) -> String {
    assert!(ledger >= 0, "ledger ids with metadata are non-negative");
    let (digits, levels): (String, &[usize]) = if ledger < i64::from(i32::MAX) {
        (format!("{ledger:010}"), &[2, 4, 4])
    } else {
        (format!("{ledger:019}"), &[3, 4, 4, 4, 4])
    };
    let mut path = String::with_capacity(root.len() + digits.len() + levels.len() + 1);
    path.push_str(root);
    let mut start = 0;
    for (level, &width) in levels.iter().enumerate() {
        path.push('/');
        if level + 1 == levels.len() {
            path.push('L');
        }
        path.push_str(&digits[start..start + width]);
        start += width;
    }
    assert_eq!(start, digits.len());
    path
}
