//! The `ringlog` command line: `Cli` and its subcommands, `serve` (whose flags are
//! `config::ServeArgs`) and the admin commands (whose arguments live with each command in
//! `admin/`). It sits above both, so that neither imports the other.

use crate::config::ServeArgs;
use clap::{Parser, Subcommand};

/// ringlog: a thread-per-core journal server that speaks the Apache BookKeeper bookie protocol
/// (v2 binary). Each shard is one pinned thread with its own io_uring, journal and listener.
#[derive(Parser, Debug)]
#[command(name = "ringlog", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
// Parsed once at startup and matched at once: the size of `Serve` costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Serve BookKeeper clients, v2 and v3 protocols (an add is acked only once durable).
    ///
    /// An add is acknowledged only once durable: after its RWF_DSYNC journal write (or write
    /// and linked fdatasync, --sync-mode) completed. Startup
    /// prints one line per shard, then "ringlog listening on ADDR with N shards"; SIGINT or
    /// SIGTERM stops accepting, answers what is in flight and prints a summary per shard.
    /// Exit codes: 0 after SIGINT/SIGTERM, 1 on a startup error, 2 when a journal write or
    /// fsync failed (restart to recover from the journal).
    Serve(ServeArgs),
    /// List the ledgers of a stopped server's data directories, one line each (offline).
    ///
    /// One line per ledger: `ledger=ID shard=K state=live entries=N bytes=B entry_last=E
    /// lac=L fenced=yes|no`, bytes being its entry records on disk (headers included).
    /// Deleted ledgers are left out (with --deleted: `state=deleted`). Read-only, through
    /// the engine's own recovery; refused while a server holds a directory's lock.
    /// Exit codes: 0 done, 1 could not run.
    #[command(visible_alias = "listledgers")]
    Ledgers(crate::admin::LedgersArgs),
    /// Show a ledger's entries and where each lies, optionally dumped (offline).
    ///
    /// First the ledger's line as `ringlog ledgers` prints it, then `entry=E size=S
    /// segment=FILE position=P` per entry, in segment then entry order; with --dump each
    /// entry's payload follows as hex and printable text, its checksums verified first.
    /// Exit codes: 0 done, 1 could not run (ledger not found), 3 a dumped record is damaged.
    Ledger(crate::admin::LedgerArgs),
    /// Check every journal: records, sealed indexes, checkpoint, and the tail (offline).
    ///
    /// Checks every record's checksums and hash chain in every sealed segment, every sealed
    /// index file (header, run table, each slot page) and the checkpoint, then runs the
    /// engine's recovery read-only over the rest, which tells a torn tail (a crash tail never
    /// acknowledged, printed as `torn-tail ... status=repairable`) from corruption (`damaged
    /// ... file=NNNNNNNNNN.segment position=P`). Never writes. Exit codes: 0 nothing damaged,
    /// 3 damage found, 1 could not run.
    Verify(crate::admin::VerifyArgs),
    /// Print a segment file's header and records, as stored (offline).
    ///
    /// `segment ...` (header), then `record position=P kind=K ledger=L entry=E payload=N
    /// sequence=S commit_first=yes|no crc=ok|bad(..)` per record, then `end position=P
    /// reason=...` where the data ends (zeros at a sector boundary are the normal end). Exit
    /// codes: 0 done, 1 could not run, 3 a record's payload checksum failed.
    #[command(visible_alias = "readjournal")]
    Segment(crate::admin::SegmentArgs),
}
