//! BookKeeper's `LedgerMetadataFormat`, the message of a ledger's metadata znode (format
//! version 3), as prost types generated from `proto/LedgerMetadataFormat.proto`. The server's
//! garbage collector parses the znode with them; tests encode metadata with them.

/// The prost-generated message (proto2, package `ledger_metadata`).
#[allow(clippy::all, clippy::pedantic, missing_docs)]
mod proto {
    include!(concat!(env!("OUT_DIR"), "/ledger_metadata.rs"));
}

pub use proto::ledger_metadata_format::{DigestType, Segment, State};
pub use proto::LedgerMetadataFormat;
