//! Command line and TOML config file -> one validated `Config`, decided before any thread starts.
//!
//! Every flag of `ringlog serve` has a snake_case key of the same name in the config file;
//! a flag given on the command line overrides the file. Defaults live in `limits.rs`.

use crate::limits;
use clap::builder::TypedValueParser;
use clap::{Args, Parser, Subcommand, ValueEnum};
use serde::Deserialize;
use std::ffi::OsStr;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The name of shard K's journal directory in its data directory is this prefix and K.
pub const JOURNAL_DIR_PREFIX: &str = "shard-";

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

/// How commits become durable (the engine's `SyncMode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SyncModeName {
    /// One O_DIRECT write linked to an fdatasync (IOSQE_IO_LINK).
    LinkedFdatasync,
    /// One O_DIRECT write with RWF_DSYNC (the default).
    Dsync,
}

/// `--data-dir` or `data_dir` as given, before `resolve` splits and checks it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DataDirList {
    /// One string: the flag, or a TOML string; a comma-separated list of directories.
    Joined(PathBuf),
    /// A TOML array of strings, one directory each.
    Items(Vec<PathBuf>),
}

impl<'de> Deserialize<'de> for DataDirList {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(DataDirListVisitor)
    }
}

/// A hand-written visitor rather than `#[serde(untagged)]`, whose error for a wrong type
/// ("data did not match any variant") would not say what the key takes.
struct DataDirListVisitor;

impl<'de> serde::de::Visitor<'de> for DataDirListVisitor {
    type Value = DataDirList;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "a directory, a comma-separated list of directories, or an array of directories"
        )
    }

    fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<DataDirList, E> {
        Ok(DataDirList::Joined(PathBuf::from(value)))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<DataDirList, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<PathBuf>()? {
            items.push(item);
        }
        Ok(DataDirList::Items(items))
    }
}

/// Flags of `ringlog serve`; the same struct reads the config file (all fields optional so
/// that flags can override the file field by field).
#[derive(Args, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServeArgs {
    /// Directory holding one journal per shard, DIR/shard-K; or a comma-separated list of
    /// directories, one per device (like BookKeeper's journalDirectories): shard K's journal
    /// then lives in DIRS[K % N]/shard-K, round-robin. Each is created if missing and locked
    /// (DIR/ringlog.lock), and must be on a file system with O_DIRECT (ext4, xfs) unless
    /// --direct-io false. Spaces around an item are ignored; an empty item and a directory
    /// listed twice are refused. The order matters: while a shard-K journal on disk is not
    /// where the list and --shards place it (a reordered, shortened or lengthened list), the
    /// start is refused, naming the directory found and the one expected, rather than start
    /// that shard on an empty journal. With two or more directories each keeps the list in
    /// DIR/ringlog.dirs, so that a directory dropped from the list is still checked and one
    /// gone missing refuses the start. The ZooKeeper cookie (--zk) names the first directory
    /// only. In the config file: the same string, or an array of strings. Required.
    #[arg(
        long,
        value_name = "DIR[,DIR..]",
        value_parser = clap::builder::PathBufValueParser::new().map(DataDirList::Joined)
    )]
    pub data_dir: Option<DataDirList>,
    /// Address to listen on; every shard binds it with SO_REUSEPORT. Port 0 picks a free port
    /// (printed at startup). Default: 0.0.0.0:3181.
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<SocketAddr>,
    /// Address of the HTTP endpoint: /metrics (Prometheus) and the Java bookie's /heartbeat
    /// and /api/v1/bookie/{state,is_ready,info} (docs/metrics.md), served by a control
    /// thread, never a shard. `off` serves none. Port 0 picks a free port (printed at
    /// startup). Default: 0.0.0.0:8000 (a Pulsar bookie's httpServerPort).
    #[arg(long, value_name = "ADDR|off")]
    pub http_listen: Option<String>,
    /// Which log events reach stderr, one line each: a level (error, warn, info, debug,
    /// trace, off), or RUST_LOG-style `target=level` pairs such as `info,server::shard=debug`.
    /// Default: the RUST_LOG environment variable, else info.
    #[arg(long, value_name = "FILTER")]
    pub log: Option<String>,
    /// Number of shards (threads, each with its own journal). Default: one per core in --cores,
    /// or one per available core.
    #[arg(long, value_name = "N")]
    pub shards: Option<usize>,
    /// Cores to pin the shards to, one shard per core: a list such as 0,1 or ranges such as
    /// 0-3,6. Default: every available core.
    #[arg(long, value_name = "LIST")]
    pub cores: Option<String>,
    /// TOML file with any of these options as snake_case keys (data_dir = "/var/lib/ringlog").
    /// Flags override it. Default: none.
    #[arg(long, value_name = "FILE")]
    #[serde(skip)]
    pub config: Option<PathBuf>,
    /// Bytes per journal segment file: a multiple of 4096 from 65536 to 4294963200.
    /// Default: 268435456 (256 MiB): a restart scans at most one segment per shard (the
    /// checkpoint covers the rest), and only its entries cost memory.
    #[arg(long, value_name = "BYTES")]
    pub segment_size: Option<u64>,
    /// Journal commits (write + fdatasync) in flight per shard, 1 to 4. Default: 2.
    #[arg(long, value_name = "N")]
    pub commits_in_flight: Option<usize>,
    /// How a commit becomes durable: one O_DIRECT write with RWF_DSYNC (dsync), or the write
    /// linked to an fdatasync (linked-fdatasync). Both are equally durable; dsync measured
    /// faster here (docs/durability.md). Commits holding DEFERRED_SYNC adds always use the
    /// linked form. Default: dsync.
    #[arg(long, value_name = "MODE")]
    pub sync_mode: Option<SyncModeName>,
    /// Largest request frame in bytes, length prefix included; a larger one closes the
    /// connection before anything is allocated. 5253120 to 67108864. Default: 5253120.
    #[arg(long, value_name = "BYTES")]
    pub frame_size_max: Option<u32>,
    /// Connections per shard; more are closed right after accept. 1 to 65536. Default: 4096.
    #[arg(long, value_name = "N")]
    pub connections_max: Option<usize>,
    /// Open journal files with O_DIRECT. false only for file systems without it (tmpfs): then
    /// recovery may read the page cache instead of the disk. Default: true.
    #[arg(long, value_name = "BOOL")]
    pub direct_io: Option<bool>,
    /// Overwrite each new journal segment with zeros (true), or only fallocate it, leaving
    /// unwritten extents that read as zeros (false). See docs/durability.md for the trade-off
    /// measured here. Default: false.
    #[arg(long, value_name = "BOOL")]
    pub segment_zero_fill: Option<bool>,
    /// While a shard's journal is not busy, write zeros ahead of its write head (one 1 MiB
    /// chunk at a time, up to 32 MiB ahead), so commits land on written blocks and their
    /// fdatasync has no extent conversion to journal. Pauses whenever every commit slot is
    /// busy. Ignored with --segment-zero-fill true. Default: true.
    #[arg(long, value_name = "BOOL")]
    pub zero_ahead: Option<bool>,
    /// MiB of sealed-segment index pages each shard keeps in memory. Entries of sealed
    /// segments cost no memory of their own: a read of one finds its location in its
    /// segment's index file, one 4 KiB page (511 entries) at a time, and keeps the page here
    /// (so a reader going through a ledger reads one index page per 511 entries). The server
    /// memory is about this times the shard count plus what the unsealed segments' entries
    /// take (8 bytes each). 0 to 4096. Default: 32.
    #[arg(long, value_name = "MIB")]
    pub index_cache_mib: Option<u64>,
    /// MiB of each data directory's file system that a journal leaves free: it creates no
    /// segment that would leave less, and turns read-only instead (adds get EREADONLY, the
    /// bookie moves to available/readonly) until deletions give space back. The reserve is
    /// what sealing and deletions write into (index files, checkpoints), so a full disk
    /// recovers by itself (docs/gc.md, "Disk full"). 0 leaves it to the allocation. 0 to
    /// 1048576. Default: 128.
    #[arg(long, value_name = "MIB")]
    pub disk_reserve_mib: Option<u64>,
    /// Disk pressure starts when a data directory's file system has less than this percent
    /// of its size free: from there down to the reserve plus one segment, compaction's
    /// threshold rises from --compaction-threshold-minor to --compaction-threshold-major
    /// and its rate up to 4x, each shard keeps at most one dead segment for reuse, sorting
    /// stops, and compaction runs even while the commits keep every slot busy. At the
    /// reserve, adds wait (backpressure: clients see latency, not errors) while compaction or
    /// removals can still give space back; only when nothing can does the bookie turn
    /// read-only (docs/gc.md, "Disk pressure"). 0 turns the ramp off (adds still wait for
    /// space that can come back). 0 to 90. Default: 20.
    #[arg(long, value_name = "PERCENT")]
    pub disk_pressure_percent: Option<u32>,
    /// Sealed segments left with nothing live (every ledger in them deleted) that each shard
    /// keeps to reuse as its next segments, instead of unlinking them and allocating new
    /// ones. A reused segment is renamed and gets a new header: no unlink (whose freeing of
    /// extents the commits' syncs wait behind), no fallocate, and no zero-ahead writes (its
    /// blocks are written already). They are disk space not given back, at most this many
    /// segments per shard, and only while the shard keeps reusing them: after 10 s without a
    /// reuse, or 1 s after the last write, they are removed too. 0 unlinks every dead
    /// segment. 0 to 64. Default: 4 GiB of segments (16 of the default 256 MiB, 64 of
    /// 64 MiB), about what a shard under Pulsar-like churn frees in one collector round.
    #[arg(long, value_name = "COUNT")]
    pub segment_recycle_max: Option<usize>,
    /// MiB of read-ahead memory for the whole server, shared evenly by the shards (each gets
    /// this divided by the shard count, in 1 MiB windows). A read that follows the previous
    /// read of its ledger (a catch-up consumer, a replay, re-replication) reads the next
    /// 1 MiB of its segment in one O_DIRECT read, and the reads after it are served from
    /// memory; the next window is read ahead of the reader. At most 4 MiB of it is in flight
    /// per shard, so a commit never queues behind more. Random single reads still read only
    /// their entry. Measured here, 50 ledgers read at once wanted about 256 windows per shard
    /// (docs/durability.md, "Read-ahead"). 0 reads every entry alone. 0 to 16384, at most
    /// 1024 per shard. Default: 512.
    #[arg(long, value_name = "MIB")]
    pub read_ahead_mib: Option<usize>,
    /// Rewrite each sealed segment that holds entries of two or more ledgers, once, in
    /// (ledger, entry) order, so a catch-up read of one ledger reads contiguous bytes
    /// instead of one entry in fifty. It is compaction's copy, within --compaction-rate-mib
    /// and after mostly-dead segments, newest segment first, and only with room for a copy
    /// beyond --disk-reserve-mib. Costs up to one more write of the data written (less for
    /// ledgers deleted before their segment's turn): docs/durability.md, "Sorted segments".
    /// Default: true.
    #[arg(long, value_name = "BOOL")]
    pub sort_sealed_segments: Option<bool>,
    /// Sorting (--sort-sealed-segments) runs only after a shard's commits and reads moved
    /// less than this many MiB per second for a second, and pauses within a 100 ms tick of
    /// more: a sort's reads and writes share the disk and the core with them. Beside 60k
    /// 1 KiB adds/s (under the default) it raised the write p99 from 1.2 to 2.7 ms; beside
    /// 250k (above it) from 3.4 to 7-9 ms. Under a steady load above it, segments stay in
    /// commit order until the load drops (a paused sort is dropped if space is needed).
    /// 0 sorts only while nothing is written or read; 4096 never pauses. 0 to 4096.
    /// Default: 96.
    #[arg(long, value_name = "MIB")]
    pub sort_traffic_max_mib: Option<u64>,
    /// Catch-up reads yield to commits the disk keeps waiting: while a shard's commits took
    /// longer on average than --read-pace-commit-us over the last 100 ms tick, its
    /// read-ahead windows (the 1 MiB reads of catch-up reads) may read only this percent of
    /// the bytes its commits write; reads wait for their turn, none is refused. Beside a
    /// closed-loop writer that saturates the disk, without pacing a catch-up read took a
    /// third of the disk and the writes kept 67-75% of their throughput. Reads not in a
    /// scan, and reads served from memory, are never paced. 0 never paces. 0 to 100.
    /// Default: 25 (docs/durability.md, "Read-ahead").
    #[arg(long, value_name = "PERCENT")]
    pub read_pace_percent: Option<u32>,
    /// The average commit time (submission to durable) over a tick above which reads are
    /// paced (--read-pace-percent). On an idle NVMe disk a 64 KiB commit takes about 0.15 ms
    /// and a 1 MiB one 0.4 ms; longer means they queue behind other I/O. Raise it on a disk
    /// whose commits take longer than this alone. 100 to 1000000. Default: 1000.
    #[arg(long, value_name = "US")]
    pub read_pace_commit_us: Option<u64>,
    /// Close a connection after this many milliseconds without traffic and with nothing in
    /// flight, like Kafka's connections.max.idle.ms. 100 to 604800000. Default: 600000.
    #[arg(long, value_name = "MS")]
    pub idle_timeout_ms: Option<u64>,
    /// Microseconds a shard keeps polling its ring (yielding the core to any other runnable
    /// thread between checks) after its last piece of work before it sleeps in the kernel;
    /// while its journal has a disk write in flight it polls for up to 2 ms. Polling saves
    /// the wake-up of a sleeping thread and of an idle CPU on every completion (most of the
    /// latency above the disk at one outstanding add) and costs CPU time: a shard serving one
    /// synchronous writer keeps its core busy. A shard that finds another thread holding its
    /// core stops polling for 100 ms and sleeps instead, so a neighbour process (or the kernel
    /// worker that completes its writes) never waits behind it. 0 always sleeps. 0 to 10000.
    /// Default: 200.
    #[arg(long, value_name = "US")]
    pub busy_poll_us: Option<u64>,
    /// Scheduler slice each shard thread asks for, in microseconds (Linux 6.12+ EEVDF custom
    /// slices; older kernels keep their default). A short slice lets a shard woken by a
    /// completion preempt a CPU-bound neighbour at once instead of waiting out the
    /// neighbour's slice (about 3 ms). 0 keeps the kernel's default. 0 or 100 to 100000.
    /// Default: 100.
    #[arg(long, value_name = "US")]
    pub shard_slice_us: Option<u64>,
    /// Log a commit that has been in flight (submitted, not yet durable) for this many
    /// milliseconds, once, with the stage it waits in, and again when it completes: a stalled
    /// disk or starved kernel worker is never silent. 0 turns the watchdog off. 0 to
    /// 3600000. Default: 1000.
    #[arg(long, value_name = "MS")]
    pub commit_stall_ms: Option<u64>,
    /// Requests in flight per connection; at the cap the server stops reading that socket.
    /// 1 to 1048576. Default: 10000.
    #[arg(long, value_name = "N")]
    pub requests_in_flight_max: Option<usize>,
    /// Frames decoded per connection per loop turn. 1 to 1000000. Default: 1000.
    #[arg(long, value_name = "N")]
    pub frames_per_turn_max: Option<usize>,
    /// Register this bookie in ZooKeeper, as BookKeeper clients expect: a comma-separated
    /// list of servers (BookKeeper's zkServers). The registration appears once every shard
    /// serves and is removed at shutdown. Default: none (no registration).
    #[arg(long, value_name = "HOST:PORT[,..]")]
    pub zk: Option<String>,
    /// ZooKeeper path of the BookKeeper metadata (zkLedgersRootPath); bookies register under
    /// ROOT/available. Needs --zk. Default: /ledgers.
    #[arg(long, value_name = "PATH")]
    pub zk_root: Option<String>,
    /// IPv4:PORT that clients connect to; it is also the bookie id in ZooKeeper. Needs --zk.
    /// Default: the listen address, or with an unspecified listen IP (0.0.0.0) the host's
    /// primary non-loopback IPv4 and the listen port.
    #[arg(long, value_name = "IP:PORT")]
    pub advertised_address: Option<SocketAddr>,
    /// ZooKeeper session timeout in milliseconds (zkTimeout): how long the registration
    /// outlives a crash, and how long startup waits for one left by an earlier run. The
    /// server may clamp it. Needs --zk. 100 to 600000. Default: 10000.
    #[arg(long, value_name = "MS")]
    pub zk_session_timeout_ms: Option<u64>,
    /// How long startup keeps retrying an unreachable ZooKeeper before it exits with status
    /// 1. Needs --zk. 100 to 3600000. Default: 30000.
    #[arg(long, value_name = "MS")]
    pub zk_connect_timeout_ms: Option<u64>,
    /// Garbage collection (docs/gc.md): every this many milliseconds, delete the local
    /// ledgers whose metadata is gone from ZooKeeper (BookKeeper's gcWaitTime). 0 turns
    /// collection off. Needs --zk. 0, or 100 to 604800000. Default: 600000.
    #[arg(long, value_name = "MS")]
    pub gc_interval_ms: Option<u64>,
    /// Metadata reads per second a collection round may make (BookKeeper's
    /// gcMetadataOpRateLimit). Needs --zk. 1 to 100000. Default: 1000.
    #[arg(long, value_name = "N")]
    pub gc_metadata_rate: Option<u32>,
    /// Compaction (docs/gc.md): a sealed segment whose live entries are less than this
    /// fraction of its file is rewritten with only them, in (ledger, entry) order, and the
    /// copy replaces it (BookKeeper's minorCompactionThreshold). 0 turns compaction off while
    /// the disk has room. 0 to 1. Default: 0.2.
    #[arg(long, value_name = "FRACTION")]
    pub compaction_threshold_minor: Option<f64>,
    /// The same threshold while a shard is read-only because its disk is full, so the space
    /// deletions leave in partly live segments comes back too (BookKeeper's
    /// majorCompactionThreshold). 0 to 1. Default: 0.8.
    #[arg(long, value_name = "FRACTION")]
    pub compaction_threshold_major: Option<f64>,
    /// MiB per second each shard's compaction may read and write (BookKeeper's
    /// compactionRateByBytes); it also runs only while a commit slot is free, so it never
    /// delays a commit. 1 to 4096. Default: 64.
    #[arg(long, value_name = "MIB")]
    pub compaction_rate_mib: Option<u64>,
    /// On top of --compaction-rate-mib, each shard's compaction may read and write this
    /// percent of the bytes its commits write, so sorting (--sort-sealed-segments) keeps up
    /// with any write rate: a sort reads each byte once and writes it once, 200%. 0 leaves
    /// only the fixed rate. 0 to 1000. Default: 250.
    #[arg(long, value_name = "PERCENT")]
    pub compaction_commit_percent: Option<u64>,
    /// Over-replicated ledgers (docs/gc.md): every this many milliseconds, check the local
    /// ledgers whose metadata is closed and names this bookie in no ensemble; one found so
    /// at every check for this long is deleted (BookKeeper's gcOverreplicatedLedgerWaitTime).
    /// 0 turns the check off. Needs --zk and collection (--gc-interval-ms not 0). 0, or 100 to
    /// 604800000. Default: 0 (off): ringlog keeps no local record of its bookie id, so a
    /// bookie restarted under a new address would take every ledger for over-replicated;
    /// BookKeeper uses 86400000 (one day) with its cookie. Keep the address stable if you
    /// turn it on.
    #[arg(long, value_name = "MS")]
    pub gc_overreplicated_wait_ms: Option<u64>,
}

/// The validated server configuration.
#[derive(Clone, Debug)]
pub struct Config {
    /// The data directories, in the order given: shard K's journal directory is
    /// `journal_dir(K)`. Never empty, no item twice (as written; `run` also compares them
    /// canonicalised), at most `DATA_DIRS_MAX`.
    pub data_dirs: Vec<PathBuf>,
    /// Address every shard binds.
    pub listen: SocketAddr,
    /// Address of the HTTP endpoint (`None`: off).
    pub http_listen: Option<SocketAddr>,
    /// Which log events are written (`--log`, else RUST_LOG, else info).
    pub log: tracing_subscriber::filter::Targets,
    /// The core each shard is pinned to; its length is the shard count.
    pub shard_cores: Vec<usize>,
    /// The engine's settings, the same for every shard.
    pub journal: engine::Config,
    /// O_DIRECT on journal files.
    pub direct_io: bool,
    /// Largest request frame, length prefix included.
    pub frame_size_max: u32,
    /// Connections per shard.
    pub connections_max: usize,
    /// Idle connection timeout.
    pub idle_timeout: Duration,
    /// How long a shard polls after its last work before it sleeps (0: never polls).
    pub busy_poll: Duration,
    /// The scheduler slice shard threads ask for (`None`: the kernel's default).
    pub shard_slice: Option<Duration>,
    /// A commit in flight longer than this is logged (`None`: the watchdog is off).
    pub commit_stall: Option<Duration>,
    /// Requests in flight per connection.
    pub requests_in_flight_max: usize,
    /// Frames decoded per connection per loop turn.
    pub frames_per_turn_max: usize,
    /// Bytes per second each shard's compaction may read and write.
    pub compaction_rate_bytes_per_s: u64,
    /// Percent of its commits' bytes each shard's compaction may read and write besides.
    pub compaction_commit_percent: u64,
    /// Sorting pauses while a shard's commits and reads move more bytes per second.
    pub sort_traffic_max_bytes_per_s: u64,
    /// Reads are paced over a tick whose commits took longer than this on average; `None`
    /// never paces (--read-pace-percent 0).
    pub read_pace_commit: Option<Duration>,
    /// ZooKeeper registration; `None` without --zk.
    pub registration: Option<RegistrationConfig>,
}

/// Where and how the bookie registers in ZooKeeper (`registration`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegistrationConfig {
    /// The ZooKeeper connect string, `HOST:PORT[,HOST:PORT...]`.
    pub servers: String,
    /// The BookKeeper metadata root, such as `/ledgers`.
    pub root: String,
    /// The address published to clients (and the bookie id); `None`: from the listen address.
    pub advertised_address: Option<SocketAddr>,
    /// The session timeout asked of ZooKeeper.
    pub session_timeout: Duration,
    /// How long startup retries an unreachable ZooKeeper.
    pub connect_timeout: Duration,
    /// Time between garbage-collection rounds; `None`: collection is off.
    pub gc_interval: Option<Duration>,
    /// Metadata reads per second of a collection round, at least 1.
    pub gc_metadata_rate: u32,
    /// Time between over-replication checks, and the grace period of an over-replicated
    /// ledger; `None`: the check is off (always with collection off).
    pub gc_overreplicated_wait: Option<Duration>,
}

/// Why the flags and config file do not make a configuration.
#[derive(Debug)]
#[non_exhaustive]
pub enum ConfigError {
    /// The config file could not be read.
    FileRead {
        path: PathBuf,
        error: std::io::Error,
    },
    /// The config file is not valid TOML for these keys.
    FileParse {
        path: PathBuf,
        error: toml::de::Error,
    },
    /// Neither --data-dir nor `data_dir` was given.
    DataDirMissing,
    /// An item of the --data-dir list is empty: two commas in a row, a comma at either end,
    /// or `""` in a TOML array.
    DataDirEmpty { list: String },
    /// An item of a TOML `data_dir` array holds a comma: the flag could not spell the list.
    DataDirComma { item: PathBuf },
    /// The --data-dir list names one directory twice: its journals would be placed twice.
    DataDirDuplicate { list: String, directory: PathBuf },
    /// A value is out of its bounds.
    OutOfBounds {
        option: &'static str,
        expected: &'static str,
    },
    /// The --cores list does not parse.
    CoresSyntax { list: String },
    /// A listed core is not available to this process.
    CoreUnavailable { core: usize, available: Vec<usize> },
    /// --shards and --cores disagree.
    ShardsCoresMismatch { shards: usize, cores: usize },
    /// The engine rejected its settings.
    Journal(engine::config::ConfigError),
    /// A ZooKeeper option was given without --zk.
    ZkMissing { option: &'static str },
    /// The --zk list is not `HOST:PORT[,HOST:PORT...]`.
    ZkServers { servers: String },
    /// The --zk-root path is not an absolute ZooKeeper path.
    ZkRoot { root: String },
    /// The --advertised-address cannot be a bookie id.
    AdvertisedAddress { address: SocketAddr },
    /// The --http-listen value is neither an address nor `off`.
    HttpListen { value: String },
    /// The --log (or RUST_LOG) value is not a level or a list of `target=level`.
    Log { value: String },
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConfigError::FileRead { path, error } => {
                write!(f, "cannot read config file {}: {error}", path.display())
            }
            ConfigError::FileParse { path, error } => {
                write!(f, "invalid config file {}: {error}", path.display())
            }
            ConfigError::DataDirMissing => {
                write!(
                    f,
                    "no data directory: pass --data-dir DIR (or data_dir in --config)"
                )
            }
            ConfigError::DataDirEmpty { list } => write!(
                f,
                "invalid --data-dir {list:?}: an item is empty (two commas in a row, a comma \
                 at either end, or \"\" in an array); expected DIR[,DIR...]"
            ),
            ConfigError::DataDirComma { item } => write!(
                f,
                "invalid data_dir item {:?}: a data directory's path may not hold a comma",
                item.display()
            ),
            ConfigError::DataDirDuplicate { list, directory } => write!(
                f,
                "invalid --data-dir {list:?}: {} is listed twice; list each directory once",
                directory.display()
            ),
            ConfigError::OutOfBounds { option, expected } => {
                write!(f, "invalid --{option}: must be {expected}")
            }
            ConfigError::CoresSyntax { list } => write!(
                f,
                "invalid --cores {list:?}: expected a list of cores and ranges such as 0,1 or 0-3"
            ),
            ConfigError::CoreUnavailable { core, available } => {
                write!(
                    f,
                    "core {core} is not available to this process (available: {available:?})"
                )
            }
            ConfigError::ShardsCoresMismatch { shards, cores } => {
                write!(
                    f,
                    "--shards {shards} but --cores lists {cores} cores: one shard per core"
                )
            }
            ConfigError::Journal(error) => write!(f, "{error}"),
            ConfigError::ZkMissing { option } => {
                write!(f, "--{option} needs --zk (or zk in --config)")
            }
            ConfigError::ZkServers { servers } => write!(
                f,
                "invalid --zk {servers:?}: expected HOST:PORT[,HOST:PORT...] with ports 1-65535 \
                 and no chroot (use --zk-root)"
            ),
            ConfigError::Log { value } => write!(
                f,
                "invalid --log (or RUST_LOG) {value:?}: expected a level (error, warn, info, \
                 debug, trace, off) or target=level pairs such as info,server::shard=debug"
            ),
            ConfigError::HttpListen { value } => write!(
                f,
                "invalid --http-listen {value:?}: expected IP:PORT (such as 0.0.0.0:8000) or off"
            ),
            ConfigError::ZkRoot { root } => write!(
                f,
                "invalid --zk-root {root:?}: expected an absolute ZooKeeper path such as /ledgers"
            ),
            ConfigError::AdvertisedAddress { address } => write!(
                f,
                "invalid --advertised-address {address}: a bookie id needs an IPv4 address \
                 other than 0.0.0.0 and a port other than 0"
            ),
        }
    }
}

impl std::error::Error for ConfigError {}

impl ServeArgs {
    /// Reads `--config FILE` if given and fills every option the flags left out from it.
    pub fn merge_config_file(self) -> Result<ServeArgs, ConfigError> {
        let Some(path) = self.config.clone() else {
            return Ok(self);
        };
        let text = std::fs::read_to_string(&path).map_err(|error| ConfigError::FileRead {
            path: path.clone(),
            error,
        })?;
        let file: ServeArgs =
            toml::from_str(&text).map_err(|error| ConfigError::FileParse { path, error })?;
        Ok(self.or(file))
    }

    /// Field by field: `self` if set, else `file`.
    fn or(self, file: ServeArgs) -> ServeArgs {
        ServeArgs {
            data_dir: self.data_dir.or(file.data_dir),
            listen: self.listen.or(file.listen),
            http_listen: self.http_listen.or(file.http_listen),
            log: self.log.or(file.log),
            shards: self.shards.or(file.shards),
            cores: self.cores.or(file.cores),
            config: self.config,
            segment_size: self.segment_size.or(file.segment_size),
            commits_in_flight: self.commits_in_flight.or(file.commits_in_flight),
            sync_mode: self.sync_mode.or(file.sync_mode),
            frame_size_max: self.frame_size_max.or(file.frame_size_max),
            connections_max: self.connections_max.or(file.connections_max),
            direct_io: self.direct_io.or(file.direct_io),
            segment_zero_fill: self.segment_zero_fill.or(file.segment_zero_fill),
            zero_ahead: self.zero_ahead.or(file.zero_ahead),
            index_cache_mib: self.index_cache_mib.or(file.index_cache_mib),
            disk_reserve_mib: self.disk_reserve_mib.or(file.disk_reserve_mib),
            disk_pressure_percent: self.disk_pressure_percent.or(file.disk_pressure_percent),
            segment_recycle_max: self.segment_recycle_max.or(file.segment_recycle_max),
            read_ahead_mib: self.read_ahead_mib.or(file.read_ahead_mib),
            sort_sealed_segments: self.sort_sealed_segments.or(file.sort_sealed_segments),
            sort_traffic_max_mib: self.sort_traffic_max_mib.or(file.sort_traffic_max_mib),
            read_pace_percent: self.read_pace_percent.or(file.read_pace_percent),
            read_pace_commit_us: self.read_pace_commit_us.or(file.read_pace_commit_us),
            idle_timeout_ms: self.idle_timeout_ms.or(file.idle_timeout_ms),
            busy_poll_us: self.busy_poll_us.or(file.busy_poll_us),
            commit_stall_ms: self.commit_stall_ms.or(file.commit_stall_ms),
            shard_slice_us: self.shard_slice_us.or(file.shard_slice_us),
            requests_in_flight_max: self.requests_in_flight_max.or(file.requests_in_flight_max),
            frames_per_turn_max: self.frames_per_turn_max.or(file.frames_per_turn_max),
            zk: self.zk.or(file.zk),
            zk_root: self.zk_root.or(file.zk_root),
            advertised_address: self.advertised_address.or(file.advertised_address),
            zk_session_timeout_ms: self.zk_session_timeout_ms.or(file.zk_session_timeout_ms),
            zk_connect_timeout_ms: self.zk_connect_timeout_ms.or(file.zk_connect_timeout_ms),
            gc_interval_ms: self.gc_interval_ms.or(file.gc_interval_ms),
            gc_metadata_rate: self.gc_metadata_rate.or(file.gc_metadata_rate),
            compaction_threshold_minor: self
                .compaction_threshold_minor
                .or(file.compaction_threshold_minor),
            compaction_threshold_major: self
                .compaction_threshold_major
                .or(file.compaction_threshold_major),
            compaction_rate_mib: self.compaction_rate_mib.or(file.compaction_rate_mib),
            compaction_commit_percent: self
                .compaction_commit_percent
                .or(file.compaction_commit_percent),
            gc_overreplicated_wait_ms: self
                .gc_overreplicated_wait_ms
                .or(file.gc_overreplicated_wait_ms),
        }
    }

    /// Applies defaults and checks every bound. `cores_available` is the set of cores this
    /// process may run on (passed in so the rules can be tested without the machine).
    pub fn resolve(self, cores_available: &[usize]) -> Result<Config, ConfigError> {
        let registration = self.registration()?;
        let data_dir = self.data_dir.as_ref().ok_or(ConfigError::DataDirMissing)?;
        let data_dirs = data_dirs_parse(data_dir)?;
        let listen = self.listen.unwrap_or(SocketAddr::new(
            IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            limits::LISTEN_PORT_DEFAULT,
        ));
        let http_listen = http_listen_parse(self.http_listen.as_deref())?;
        let log = log_parse(self.log.clone().or_else(|| std::env::var("RUST_LOG").ok()))?;
        let cores = self.cores.as_deref().map(cores_parse).transpose()?;
        let shard_cores = shard_cores(self.shards, cores, cores_available)?;
        let segment_size = self
            .segment_size
            .unwrap_or(engine::Config::default().segment_size);
        let journal = engine::Config {
            segment_size,
            commits_in_flight_max: self
                .commits_in_flight
                .unwrap_or(engine::Config::default().commits_in_flight_max),
            sync_mode: match self.sync_mode.unwrap_or(SyncModeName::Dsync) {
                SyncModeName::LinkedFdatasync => engine::SyncMode::LinkedFdatasync,
                SyncModeName::Dsync => engine::SyncMode::Dsync,
            },
            segment_zero_fill: self
                .segment_zero_fill
                .unwrap_or(engine::config::SEGMENT_ZERO_FILL_DEFAULT),
            zero_ahead: self
                .zero_ahead
                .unwrap_or(engine::Config::default().zero_ahead),
            index_cache_pages: index_cache_pages(self.index_cache_mib)?,
            compaction_threshold_minor_per_mille: per_mille(
                "--compaction-threshold-minor",
                self.compaction_threshold_minor,
                engine::Config::default().compaction_threshold_minor_per_mille,
            )?,
            compaction_threshold_major_per_mille: per_mille(
                "--compaction-threshold-major",
                self.compaction_threshold_major,
                engine::Config::default().compaction_threshold_major_per_mille,
            )?,
            disk_reserve: disk_reserve(self.disk_reserve_mib)?,
            disk_pressure_percent: disk_pressure_percent(self.disk_pressure_percent)?,
            segment_recycle_max: segment_recycle_max(self.segment_recycle_max, segment_size)?,
            read_ahead_windows: read_ahead_windows(self.read_ahead_mib, shard_cores.len())?,
            sort_sealed: self
                .sort_sealed_segments
                .unwrap_or(engine::Config::default().sort_sealed),
            read_pace_percent: self
                .read_pace_percent
                .unwrap_or(engine::Config::default().read_pace_percent),
            ..engine::Config::default()
        };
        let compaction_rate_mib = self
            .compaction_rate_mib
            .unwrap_or(limits::COMPACTION_RATE_MIB_DEFAULT);
        if !(1..=limits::COMPACTION_RATE_MIB_MAX).contains(&compaction_rate_mib) {
            return Err(ConfigError::OutOfBounds {
                option: "--compaction-rate-mib",
                expected: "1..=4096",
            });
        }
        let compaction_commit_percent = self
            .compaction_commit_percent
            .unwrap_or(limits::COMPACTION_COMMIT_PERCENT_DEFAULT);
        if compaction_commit_percent > limits::COMPACTION_COMMIT_PERCENT_MAX {
            return Err(ConfigError::OutOfBounds {
                option: "--compaction-commit-percent",
                expected: "0..=1000",
            });
        }
        let sort_traffic_max_mib = self
            .sort_traffic_max_mib
            .unwrap_or(limits::SORT_TRAFFIC_MAX_MIB_DEFAULT);
        if sort_traffic_max_mib > limits::SORT_TRAFFIC_MAX_MIB_MAX {
            return Err(ConfigError::OutOfBounds {
                option: "--sort-traffic-max-mib",
                expected: "0..=4096",
            });
        }
        let read_pace_commit_us = self
            .read_pace_commit_us
            .unwrap_or(limits::READ_PACE_COMMIT_US_DEFAULT);
        if !(limits::READ_PACE_COMMIT_US_MIN..=limits::READ_PACE_COMMIT_US_MAX)
            .contains(&read_pace_commit_us)
        {
            return Err(ConfigError::OutOfBounds {
                option: "--read-pace-commit-us",
                expected: "100..=1000000",
            });
        }
        journal.validate().map_err(ConfigError::Journal)?;
        let read_pace_commit =
            (journal.read_pace_percent != 0).then(|| Duration::from_micros(read_pace_commit_us));
        let config = Config {
            data_dirs,
            listen,
            http_listen,
            log,
            shard_cores,
            journal,
            direct_io: self.direct_io.unwrap_or(true),
            frame_size_max: self.frame_size_max.unwrap_or(limits::FRAME_SIZE_MAX_MIN),
            connections_max: self
                .connections_max
                .unwrap_or(limits::CONNECTIONS_MAX_DEFAULT),
            idle_timeout: Duration::from_millis(
                self.idle_timeout_ms
                    .unwrap_or(limits::IDLE_TIMEOUT_MS_DEFAULT),
            ),
            busy_poll: Duration::from_micros(
                self.busy_poll_us.unwrap_or(limits::BUSY_POLL_US_DEFAULT),
            ),
            shard_slice: match self
                .shard_slice_us
                .unwrap_or(limits::SHARD_SLICE_US_DEFAULT)
            {
                0 => None,
                us => Some(Duration::from_micros(us)),
            },
            commit_stall: match self
                .commit_stall_ms
                .unwrap_or(limits::COMMIT_STALL_MS_DEFAULT)
            {
                0 => None,
                ms => Some(Duration::from_millis(ms)),
            },
            requests_in_flight_max: self
                .requests_in_flight_max
                .unwrap_or(limits::REQUESTS_IN_FLIGHT_MAX_DEFAULT),
            frames_per_turn_max: self
                .frames_per_turn_max
                .unwrap_or(limits::FRAMES_PER_TURN_MAX_DEFAULT),
            compaction_rate_bytes_per_s: compaction_rate_mib * 1024 * 1024,
            compaction_commit_percent,
            sort_traffic_max_bytes_per_s: sort_traffic_max_mib * 1024 * 1024,
            read_pace_commit,
            registration,
        };
        config.validate()?;
        Ok(config)
    }

    /// The registration settings, checked: `None` without --zk, and then no other ZooKeeper
    /// option may be set (it would silently do nothing).
    fn registration(&self) -> Result<Option<RegistrationConfig>, ConfigError> {
        let Some(servers) = self.zk.clone() else {
            let options = [
                ("zk-root", self.zk_root.is_some()),
                ("advertised-address", self.advertised_address.is_some()),
                (
                    "zk-session-timeout-ms",
                    self.zk_session_timeout_ms.is_some(),
                ),
                (
                    "zk-connect-timeout-ms",
                    self.zk_connect_timeout_ms.is_some(),
                ),
                ("gc-interval-ms", self.gc_interval_ms.is_some()),
                ("gc-metadata-rate", self.gc_metadata_rate.is_some()),
                (
                    "gc-overreplicated-wait-ms",
                    self.gc_overreplicated_wait_ms.is_some(),
                ),
            ];
            return match options.iter().find(|(_, set)| *set) {
                Some(&(option, _)) => Err(ConfigError::ZkMissing { option }),
                None => Ok(None),
            };
        };
        if !zk_servers_valid(&servers) {
            return Err(ConfigError::ZkServers { servers });
        }
        let root = self
            .zk_root
            .clone()
            .unwrap_or_else(|| limits::ZK_ROOT_DEFAULT.to_string());
        if !zk_path_valid(&root) {
            return Err(ConfigError::ZkRoot { root });
        }
        if let Some(address) = self.advertised_address {
            let ipv4 = matches!(address.ip(), IpAddr::V4(ip) if !ip.is_unspecified());
            if !ipv4 || address.port() == 0 {
                return Err(ConfigError::AdvertisedAddress { address });
            }
        }
        let session_ms = self
            .zk_session_timeout_ms
            .unwrap_or(limits::ZK_SESSION_TIMEOUT_MS_DEFAULT);
        let session = limits::ZK_SESSION_TIMEOUT_MS_MIN..=limits::ZK_SESSION_TIMEOUT_MS_MAX;
        if !session.contains(&session_ms) {
            return Err(ConfigError::OutOfBounds {
                option: "zk-session-timeout-ms",
                expected: "100..=600000",
            });
        }
        let connect_ms = self
            .zk_connect_timeout_ms
            .unwrap_or(limits::ZK_CONNECT_TIMEOUT_MS_DEFAULT);
        let connect = limits::ZK_CONNECT_TIMEOUT_MS_MIN..=limits::ZK_CONNECT_TIMEOUT_MS_MAX;
        if !connect.contains(&connect_ms) {
            return Err(ConfigError::OutOfBounds {
                option: "zk-connect-timeout-ms",
                expected: "100..=3600000",
            });
        }
        let (gc_interval, gc_metadata_rate) = self.gc()?;
        let gc_overreplicated_wait = self.gc_overreplicated(gc_interval.is_some())?;
        Ok(Some(RegistrationConfig {
            servers,
            root,
            advertised_address: self.advertised_address,
            session_timeout: Duration::from_millis(session_ms),
            connect_timeout: Duration::from_millis(connect_ms),
            gc_interval,
            gc_metadata_rate,
            gc_overreplicated_wait,
        }))
    }

    /// The garbage-collection settings, checked: the interval (`None`: off) and the rate.
    fn gc(&self) -> Result<(Option<Duration>, u32), ConfigError> {
        let interval_ms = self
            .gc_interval_ms
            .unwrap_or(limits::GC_INTERVAL_MS_DEFAULT);
        let interval = limits::GC_INTERVAL_MS_MIN..=limits::GC_INTERVAL_MS_MAX;
        if interval_ms != 0 && !interval.contains(&interval_ms) {
            return Err(ConfigError::OutOfBounds {
                option: "gc-interval-ms",
                expected: "0 (off) or 100..=604800000",
            });
        }
        let rate = self
            .gc_metadata_rate
            .unwrap_or(limits::GC_METADATA_RATE_DEFAULT);
        if !(1..=limits::GC_METADATA_RATE_MAX).contains(&rate) {
            return Err(ConfigError::OutOfBounds {
                option: "gc-metadata-rate",
                expected: "1..=100000",
            });
        }
        let interval = (interval_ms != 0).then(|| Duration::from_millis(interval_ms));
        Ok((interval, rate))
    }

    /// The over-replication wait, checked (`None`: off). Off by default when collection is
    /// off; asked for explicitly there, it is refused, since it would silently do nothing.
    fn gc_overreplicated(&self, collecting: bool) -> Result<Option<Duration>, ConfigError> {
        let wait_ms = match (self.gc_overreplicated_wait_ms, collecting) {
            // Off unless asked for: ringlog keeps no local record of its bookie id (the Java
            // bookie's cookie in its data directory), so a bookie restarted under a new
            // address would find every closed ledger over-replicated and delete it.
            (Some(0) | None, _) => return Ok(None),
            (Some(_), false) => {
                return Err(ConfigError::OutOfBounds {
                    option: "gc-overreplicated-wait-ms",
                    expected: "0 (off) while --gc-interval-ms is 0",
                })
            }
            (Some(wait_ms), true) => wait_ms,
        };
        let bounds = limits::GC_OVERREPLICATED_WAIT_MS_MIN..=limits::GC_OVERREPLICATED_WAIT_MS_MAX;
        if !bounds.contains(&wait_ms) {
            return Err(ConfigError::OutOfBounds {
                option: "gc-overreplicated-wait-ms",
                expected: "0 (off) or 100..=604800000",
            });
        }
        Ok(Some(Duration::from_millis(wait_ms)))
    }
}

/// `HOST:PORT[,HOST:PORT...]`: at most `ZK_SERVERS_MAX` entries, each a non-empty host
/// without `/` (no chroot suffix: the root is --zk-root) and a port from 1 to 65535.
#[must_use]
pub fn zk_servers_valid(servers: &str) -> bool {
    let entries: Vec<&str> = servers.split(',').collect();
    entries.len() <= limits::ZK_SERVERS_MAX
        && entries.iter().all(|entry| {
            let Some((host, port)) = entry.trim().rsplit_once(':') else {
                return false;
            };
            let host_ok = !host.is_empty() && !host.contains(['/', ' ']);
            host_ok && port.parse::<u16>().is_ok_and(|port| port != 0)
        })
}

/// An absolute ZooKeeper path other than `/`: no empty, `.` or `..` component, no trailing
/// `/`, and no character ZooKeeper refuses (NUL and other control characters).
#[must_use]
pub fn zk_path_valid(path: &str) -> bool {
    let Some(rest) = path.strip_prefix('/') else {
        return false;
    };
    path.len() <= limits::ZK_ROOT_SIZE_MAX
        && !path.chars().any(char::is_control)
        && rest
            .split('/')
            .all(|part| !part.is_empty() && part != "." && part != "..")
}

impl Config {
    /// The shard count.
    #[must_use]
    pub fn shards(&self) -> usize {
        self.shard_cores.len()
    }

    /// The data directory holding shard `shard`'s journal (`shard_data_dir`).
    #[must_use]
    pub fn shard_data_dir(&self, shard: usize) -> &Path {
        shard_data_dir(&self.data_dirs, shard)
    }

    /// Shard `shard`'s journal directory (`journal_dir`).
    #[must_use]
    pub fn journal_dir(&self, shard: usize) -> PathBuf {
        journal_dir(&self.data_dirs, shard)
    }

    /// The directory the ZooKeeper cookie names as the bookie's journal and ledger directory:
    /// the first of the list. A cookie names one; the first keeps a one-directory bookie's
    /// cookie what it was, and a list that only grows at its end keeps its cookie.
    #[must_use]
    pub fn data_dir_first(&self) -> &Path {
        shard_data_dir(&self.data_dirs, 0)
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let check = |ok: bool, option, expected| {
            if ok {
                Ok(())
            } else {
                Err(ConfigError::OutOfBounds { option, expected })
            }
        };
        let frame = limits::FRAME_SIZE_MAX_MIN..=limits::FRAME_SIZE_MAX_LIMIT;
        check(
            frame.contains(&self.frame_size_max),
            "frame-size-max",
            "5253120..=67108864",
        )?;
        let connections = 1..=limits::CONNECTIONS_MAX_LIMIT;
        check(
            connections.contains(&self.connections_max),
            "connections-max",
            "1..=65536",
        )?;
        let idle_ms = u64::try_from(self.idle_timeout.as_millis()).unwrap_or(u64::MAX);
        let idle = limits::IDLE_TIMEOUT_MS_MIN..=limits::IDLE_TIMEOUT_MS_MAX;
        check(
            idle.contains(&idle_ms),
            "idle-timeout-ms",
            "100..=604800000",
        )?;
        let busy_us = u64::try_from(self.busy_poll.as_micros()).unwrap_or(u64::MAX);
        check(
            busy_us <= limits::BUSY_POLL_US_MAX,
            "busy-poll-us",
            "0..=10000",
        )?;
        let slice_us = self.shard_slice.map_or(0, |slice| {
            u64::try_from(slice.as_micros()).unwrap_or(u64::MAX)
        });
        check(
            slice_us == 0
                || (limits::SHARD_SLICE_US_MIN..=limits::SHARD_SLICE_US_MAX).contains(&slice_us),
            "shard-slice-us",
            "0 or 100..=100000",
        )?;
        let stall_ms = self.commit_stall.map_or(0, |stall| {
            u64::try_from(stall.as_millis()).unwrap_or(u64::MAX)
        });
        check(
            stall_ms <= limits::COMMIT_STALL_MS_MAX,
            "commit-stall-ms",
            "0..=3600000",
        )?;
        let requests = 1..=limits::REQUESTS_IN_FLIGHT_MAX_LIMIT;
        let in_flight = self.requests_in_flight_max;
        check(
            requests.contains(&in_flight),
            "requests-in-flight-max",
            "1..=1048576",
        )?;
        let frames = 1..=limits::FRAMES_PER_TURN_MAX_LIMIT;
        check(
            frames.contains(&self.frames_per_turn_max),
            "frames-per-turn-max",
            "1..=1000000",
        )?;
        let shards = 1..=limits::SHARDS_MAX;
        check(shards.contains(&self.shards()), "shards", "1..=64")?;
        Ok(())
    }
}

/// Splits and checks the --data-dir list: its items in order, spaces around each ignored.
/// Refused: an empty item or list, a comma inside an item of an array, more than
/// `DATA_DIRS_MAX` items, and a directory listed twice. Twice is compared as written, up to
/// `.` components and repeated or trailing slashes (`Path`'s equality); the directories need
/// not exist yet, so `run` compares them again canonicalised (symbolic links, `..`).
pub fn data_dirs_parse(list: &DataDirList) -> Result<Vec<PathBuf>, ConfigError> {
    let items: Vec<&[u8]> = match list {
        DataDirList::Joined(joined) => joined
            .as_os_str()
            .as_bytes()
            .split(|&byte| byte == b',')
            .collect(),
        DataDirList::Items(items) => items
            .iter()
            .map(|item| item.as_os_str().as_bytes())
            .collect(),
    };
    if items.is_empty() {
        return Err(ConfigError::DataDirMissing);
    }
    if items.len() > limits::DATA_DIRS_MAX {
        return Err(ConfigError::OutOfBounds {
            option: "data-dir",
            expected: "a list of at most 64 directories",
        });
    }
    let mut data_dirs: Vec<PathBuf> = Vec::with_capacity(items.len());
    for item in items {
        let directory = PathBuf::from(OsStr::from_bytes(item.trim_ascii()));
        if directory.as_os_str().is_empty() {
            return Err(ConfigError::DataDirEmpty {
                list: data_dirs_display(list),
            });
        }
        if directory.as_os_str().as_bytes().contains(&b',') {
            return Err(ConfigError::DataDirComma { item: directory });
        }
        if data_dirs.contains(&directory) {
            return Err(ConfigError::DataDirDuplicate {
                list: data_dirs_display(list),
                directory,
            });
        }
        data_dirs.push(directory);
    }
    Ok(data_dirs)
}

/// The list as the flag would spell it, for messages.
fn data_dirs_display(list: &DataDirList) -> String {
    match list {
        DataDirList::Joined(joined) => joined.to_string_lossy().into_owned(),
        DataDirList::Items(items) => items
            .iter()
            .map(|item| item.to_string_lossy())
            .collect::<Vec<_>>()
            .join(","),
    }
}

/// The data directory holding shard `shard`'s journal: `data_dirs[shard % N]`, round-robin
/// like BookKeeper's journalDirectories, so N directories on N devices share the shards
/// evenly and one directory holds them all, as before lists existed.
#[must_use]
pub fn shard_data_dir(data_dirs: &[PathBuf], shard: usize) -> &Path {
    assert!(
        !data_dirs.is_empty(),
        "data_dirs_parse refuses an empty list"
    );
    &data_dirs[shard % data_dirs.len()]
}

/// Shard `shard`'s journal directory: `data_dirs[shard % N]/shard-K`.
#[must_use]
pub fn journal_dir(data_dirs: &[PathBuf], shard: usize) -> PathBuf {
    shard_data_dir(data_dirs, shard).join(format!("{JOURNAL_DIR_PREFIX}{shard}"))
}

/// Parses `0,1` / `0-3,6` into a list of cores, in order, without duplicates.
pub fn cores_parse(list: &str) -> Result<Vec<usize>, ConfigError> {
    let error = || ConfigError::CoresSyntax {
        list: list.to_string(),
    };
    let mut cores = Vec::new();
    for part in list.split(',').map(str::trim) {
        let (first, last) = match part.split_once('-') {
            Some((first, last)) => (first.trim(), last.trim()),
            None => (part, part),
        };
        let first: usize = first.parse().map_err(|_| error())?;
        let last: usize = last.parse().map_err(|_| error())?;
        // Bounded so a typo such as 0-1000000 fails here instead of building a huge list.
        if first > last || last - first >= limits::SHARDS_MAX {
            return Err(error());
        }
        for core in first..=last {
            if cores.contains(&core) || cores.len() == limits::SHARDS_MAX {
                return Err(error());
            }
            cores.push(core);
        }
    }
    Ok(cores)
}

/// A fraction flag as the engine's thousandths, or `default` when not given.
fn per_mille(option: &'static str, value: Option<f64>, default: u32) -> Result<u32, ConfigError> {
    let Some(fraction) = value else {
        return Ok(default);
    };
    if !(0.0..=1.0).contains(&fraction) {
        return Err(ConfigError::OutOfBounds {
            option,
            expected: "a fraction from 0 to 1",
        });
    }
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    Ok((fraction * 1000.0).round() as u32)
}

/// The journal's index page cache from `--index-cache-mib` (4 KiB pages).
fn index_cache_pages(mib: Option<u64>) -> Result<usize, ConfigError> {
    let mib = mib.unwrap_or(limits::INDEX_CACHE_MIB_DEFAULT);
    if mib > limits::INDEX_CACHE_MIB_MAX {
        return Err(ConfigError::OutOfBounds {
            option: "--index-cache-mib",
            expected: "0..=4096",
        });
    }
    Ok(usize::try_from(mib * 256).expect("bounded above"))
}

/// The journal's free-space reserve from `--disk-reserve-mib`, in bytes.
fn disk_reserve(mib: Option<u64>) -> Result<u64, ConfigError> {
    let mib = mib.unwrap_or(limits::DISK_RESERVE_MIB_DEFAULT);
    if mib > limits::DISK_RESERVE_MIB_MAX {
        return Err(ConfigError::OutOfBounds {
            option: "--disk-reserve-mib",
            expected: "0..=1048576",
        });
    }
    Ok(mib << 20)
}

/// Where disk pressure starts, from `--disk-pressure-percent`.
fn disk_pressure_percent(percent: Option<u32>) -> Result<u32, ConfigError> {
    let percent = percent.unwrap_or(engine::constants::DISK_PRESSURE_PERCENT_DEFAULT);
    if percent > engine::constants::DISK_PRESSURE_PERCENT_MAX {
        return Err(ConfigError::OutOfBounds {
            option: "--disk-pressure-percent",
            expected: "0..=90",
        });
    }
    Ok(percent)
}

/// Dead segments a journal keeps for reuse, from `--segment-recycle-max`; by default 4 GiB of
/// segments of `segment_size` (`engine::config::segment_recycle_default`).
fn segment_recycle_max(count: Option<usize>, segment_size: u64) -> Result<usize, ConfigError> {
    let count = count.unwrap_or(engine::config::segment_recycle_default(segment_size));
    if count > engine::constants::SEGMENT_RECYCLE_MAX {
        return Err(ConfigError::OutOfBounds {
            option: "--segment-recycle-max",
            expected: "0..=64",
        });
    }
    Ok(count)
}

/// Each journal's read-ahead windows (1 MiB each): `--read-ahead-mib`, the server's total,
/// shared evenly by `shards`.
fn read_ahead_windows(mib: Option<usize>, shards: usize) -> Result<usize, ConfigError> {
    const _: () = assert!(engine::constants::READ_AHEAD_WINDOW_SIZE == 1 << 20);
    let mib = mib.unwrap_or(limits::READ_AHEAD_MIB_DEFAULT);
    let windows = mib / shards.max(1);
    if mib > limits::READ_AHEAD_MIB_MAX || windows > engine::constants::READ_AHEAD_WINDOWS_MAX {
        return Err(ConfigError::OutOfBounds {
            option: "--read-ahead-mib",
            expected: "0..=16384, and at most 1024 per shard",
        });
    }
    // A non-zero total too small to give every shard a window still reads ahead.
    Ok(if mib > 0 { windows.max(1) } else { 0 })
}

/// One core per shard. With --cores, one shard per listed core; without, shards cycle over
/// the available cores (more shards than cores is allowed, for tests, but shares cores).
pub fn shard_cores(
    shards: Option<usize>,
    cores: Option<Vec<usize>>,
    available: &[usize],
) -> Result<Vec<usize>, ConfigError> {
    // A process that cannot list its cores still runs, on a nominal core 0.
    let available = if available.is_empty() {
        &[0][..]
    } else {
        available
    };
    match cores {
        Some(cores) => {
            if let Some(&core) = cores.iter().find(|core| !available.contains(core)) {
                return Err(ConfigError::CoreUnavailable {
                    core,
                    available: available.to_vec(),
                });
            }
            match shards {
                Some(shards) if shards != cores.len() => Err(ConfigError::ShardsCoresMismatch {
                    shards,
                    cores: cores.len(),
                }),
                _ => Ok(cores),
            }
        }
        None => {
            let shards = shards.unwrap_or(available.len());
            if !(1..=limits::SHARDS_MAX).contains(&shards) {
                return Err(ConfigError::OutOfBounds {
                    option: "shards",
                    expected: "1..=64",
                });
            }
            Ok((0..shards)
                .map(|shard| available[shard % available.len()])
                .collect())
        }
    }
}

/// `--http-listen`: an address, or `off` (`None`); absent, `HTTP_LISTEN_DEFAULT`.
pub fn http_listen_parse(value: Option<&str>) -> Result<Option<SocketAddr>, ConfigError> {
    let value = value.map_or(limits::HTTP_LISTEN_DEFAULT, str::trim);
    if value == "off" {
        return Ok(None);
    }
    value
        .parse()
        .map(Some)
        .map_err(|_| ConfigError::HttpListen {
            value: value.to_string(),
        })
}

/// `--log`: a `Targets` filter (`info`, `warn,server::shard=debug`); absent, `info`.
pub fn log_parse(
    value: Option<String>,
) -> Result<tracing_subscriber::filter::Targets, ConfigError> {
    let value = value.unwrap_or_else(|| limits::LOG_FILTER_DEFAULT.to_string());
    value.trim().parse().map_err(|_| ConfigError::Log { value })
}
