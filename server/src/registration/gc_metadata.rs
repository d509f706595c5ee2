//! What the collector's round (`gc.rs`) and the over-replication check
//! (`gc_overreplicated.rs`) share: the `Metadata` store both read (ZooKeeper in the server, a
//! fake in the tests), why a read or a pass over it fails, and the paths they read at. Both
//! use this module and neither uses the other's.

use super::ledger_layout::LayoutError;
use crate::limits;
use zookeeper_client::Error as ZkError;

/// Why a metadata read failed.
#[derive(Debug)]
pub(super) enum ReadError {
    /// ZooKeeper answered with an error (or not within the request timeout).
    ZooKeeper {
        operation: &'static str,
        path: String,
        error: ZkError,
    },
    /// The server began stopping.
    Stopping,
}

/// Why a round deleted nothing.
#[derive(Debug)]
pub(super) enum RoundError {
    /// A metadata read failed: the listing is incomplete.
    Read(ReadError),
    /// ROOT/LAYOUT does not exist: no BookKeeper metadata to compare with.
    LayoutMissing { path: String },
    /// ROOT/LAYOUT names a layout the collector does not walk.
    Layout { path: String, error: LayoutError },
    /// A znode has more children than any hierarchical level can.
    ChildrenTooMany { path: String, count: usize },
}

impl std::fmt::Display for RoundError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RoundError::Read(ReadError::ZooKeeper {
                operation,
                path,
                error,
            }) => write!(f, "ZooKeeper {operation} {path} failed: {error}"),
            RoundError::Read(ReadError::Stopping) => write!(f, "the server is stopping"),
            RoundError::LayoutMissing { path } => {
                write!(
                    f,
                    "{path} does not exist: no ledger metadata to compare with"
                )
            }
            RoundError::Layout { path, error } => write!(f, "{path}: {error}"),
            RoundError::ChildrenTooMany { path, count } => write!(
                f,
                "{path} has {count} children, more than a hierarchical level holds ({})",
                limits::GC_CHILDREN_MAX
            ),
        }
    }
}

impl From<ReadError> for RoundError {
    fn from(error: ReadError) -> RoundError {
        RoundError::Read(error)
    }
}

/// The metadata store as the round reads it: ZooKeeper in the server, a fake in tests.
/// `None`: no such znode.
pub(super) trait Metadata {
    async fn data(&mut self, path: &str) -> Result<Option<Vec<u8>>, ReadError>;
    async fn children(&mut self, path: &str) -> Result<Option<Vec<String>>, ReadError>;
}

pub(super) fn path_join(parent: &str, name: &str) -> String {
    if parent.ends_with('/') {
        format!("{parent}{name}")
    } else {
        format!("{parent}/{name}")
    }
}
