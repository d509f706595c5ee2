//! ringlog storage engine: one shard's journal on one core.
//!
//! A `Journal` stages records into one contiguous 4 KiB-aligned buffer, commits it, reports
//! records durable strictly in journal order, keeps an in-memory index per ledger, serves
//! reads, and rebuilds everything on open. A commit is one O_DIRECT write with RWF_DSYNC
//! (`SyncMode::Dsync`, the default), or one write linked to an fdatasync: with
//! `SyncMode::LinkedFdatasync` (`--sync-mode linked-fdatasync`), and in either mode for a
//! commit holding deferred (DEFERRED_SYNC) adds, which are acknowledged when the write lands,
//! before the sync (docs/durability.md). Storage is behind the `Disk` trait
//! (`uring::UringDisk` or `disk::sim::SimDisk`).

// All io_uring and other system-call `unsafe` lives in `uring`; the compiler enforces it.
#![deny(unsafe_code)]

pub mod checkpoint;
pub mod config;
pub mod constants;
#[cfg(any(test, feature = "counting-allocator"))]
pub mod counting_allocator;
pub mod digest;
pub mod disk;
pub mod error;
pub mod file_name;
pub mod histogram;
pub mod id_hash;
pub mod ids;
pub mod index;
pub mod index_build;
pub mod index_file;
pub mod inspect;
pub mod journal;
pub mod record;
mod recovery;
pub mod segment;
pub mod segment_check;
pub mod stdx;
// The one module allowed `unsafe`: memory shared with the kernel and raw system calls.
#[allow(unsafe_code)]
pub mod uring;

pub use config::{Config, SyncMode};
pub use disk::{sim::SimDisk, Disk};
pub use error::{AddError, OpenError, ReadError};
pub use histogram::Log2Histogram;
pub use ids::{EntryId, FileId, LedgerId, Location, Position, SegmentId, Sequence};
pub use journal::{
    AddOptions, CommitInFlight, CommitStage, Event, Journal, ReadOutcome, ReadTarget, Stats,
};
pub use recovery::OpenReport;
pub use segment::CommitBlock;

#[cfg(test)]
mod tests;
