//! One error enum per operation.

use crate::config::ConfigError;
use crate::ids::Location;
use crate::record::RecordError;
use std::io;

/// Why a journal could not be opened.
#[derive(Debug)]
#[non_exhaustive]
pub enum OpenError {
    /// The configuration is out of bounds.
    Config(ConfigError),
    /// A system call failed.
    Io {
        /// What was being done.
        operation: &'static str,
        /// The error.
        error: io::Error,
    },
    /// A bad record is followed by valid later records: acknowledged data may be damaged, so
    /// the journal refuses to open rather than truncate it.
    Corrupt {
        /// Where the first bad record is.
        location: Location,
        /// What was wrong with it.
        reason: CorruptReason,
        /// Where the valid record beyond the torn-write window was found.
        valid_after: Location,
    },
    /// A segment's header sector is invalid or names another segment.
    SegmentHeader {
        /// The segment file.
        location: Location,
    },
    /// A file (segment, index or checkpoint) of a format version this build does not know:
    /// written by a newer ringlog, so it is not guessed at.
    FormatVersion {
        /// The file name.
        file: String,
        /// The version it carries.
        version: u8,
    },
    /// A file the others depend on is missing.
    Missing {
        /// The file that needs it.
        file: String,
        /// What is missing.
        missing: &'static str,
    },
    /// A bad record inside a sealed segment (one that was entirely durable) found while
    /// rebuilding its index: acknowledged data is damaged.
    SealedCorrupt {
        /// Where the bad record is.
        location: Location,
        /// What was wrong with it.
        reason: CorruptReason,
    },
    /// A segment file's size (or the size its header records) is not the configured
    /// segment size: a journal keeps the size it was created with.
    SegmentSize {
        /// The segment file.
        location: Location,
        /// Its size.
        size: u64,
        /// The configured segment size.
        expected: u64,
    },
    /// 512-byte commit blocks are configured (or the active segment has them), and the disk
    /// refused a 512-byte O_DIRECT read: its logical block is larger, so every commit would
    /// fail.
    CommitBlockUnsupported {
        /// What the read returned.
        error: io::Error,
    },
}

/// What made a record bad.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CorruptReason {
    /// Framing or checksum failure.
    Record(RecordError),
    /// Valid record whose identity (segment, position) is elsewhere: a misdirected write.
    Misplaced,
    /// Valid record out of sequence or off the hash chain.
    Sequence,
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpenError::Config(error) => write!(f, "{error}"),
            OpenError::Io { operation, error } => write!(f, "{operation}: {error}"),
            OpenError::Corrupt {
                location,
                reason,
                valid_after,
            } => write!(
                f,
                "journal corrupt at {location} ({reason:?}), valid records follow at \
                 {valid_after}: refusing to truncate acknowledged data"
            ),
            OpenError::SegmentHeader { location } => {
                write!(
                    f,
                    "invalid segment header in segment {}",
                    location.segment.0
                )
            }
            OpenError::FormatVersion { file, version } => write!(
                f,
                "{file} has format version {version}, which this ringlog does not know \
                 (written by a newer release?): refusing to open"
            ),
            OpenError::Missing { file, missing } => {
                write!(
                    f,
                    "{file} needs {missing}, which is missing: refusing to open"
                )
            }
            OpenError::SealedCorrupt { location, reason } => write!(
                f,
                "journal corrupt at {location} ({reason:?}) inside a sealed segment, found \
                 while rebuilding its index: refusing to open"
            ),
            OpenError::SegmentSize {
                location,
                size,
                expected,
            } => write!(
                f,
                "segment {} is {size} bytes but the segment size is {expected}: a journal \
                 keeps the segment size it was created with (the default changed from 1 GiB \
                 to 256 MiB on 2026-12-03); start with --segment-size {size}",
                location.segment.0
            ),
            OpenError::CommitBlockUnsupported { error } => write!(
                f,
                "--commit-block-bytes 512 needs a disk that takes 512-byte direct I/O, and a \
                 512-byte O_DIRECT read of the active segment failed ({error}): its logical \
                 block is larger; start with --commit-block-bytes 4096 (if the active segment \
                 was written with 512-byte blocks, open it on a disk that takes them)"
            ),
        }
    }
}

impl std::error::Error for OpenError {}

/// Why an add (or fence, explicit LAC, force) was not staged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AddError {
    /// A write or fsync failed earlier: nothing is acknowledged any more.
    Poisoned,
    /// The ledger is fenced and this is not a recovery add.
    Fenced,
    /// The master key differs from the ledger's.
    KeyMismatch,
    /// No disk space for new segments: the journal is read-only.
    ReadOnly,
    /// The staging buffer is full or the next segment is not ready: retry after the next
    /// completion (backpressure, not an error to the client).
    StagingFull,
    /// The payload exceeds the largest record.
    TooLarge,
    /// Entry id negative or too far beyond the ledger's highest entry.
    EntryInvalid,
    /// The ledger does not exist (force on an unknown ledger).
    NoLedger,
}

/// Why a read has no data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReadError {
    /// The ledger never had anything here.
    NoLedger,
    /// The entry was never stored here.
    NoEntry,
    /// The entry is indexed but could not be read back intact: never "no entry".
    Io,
    /// Too many reads in flight; retry later.
    Busy,
}
