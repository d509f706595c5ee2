//! `ServeArgs`: the flags of `ringlog serve`, which are also the config file's keys, with
//! their --help text.

use super::data_dir_list::DataDirList;
use clap::builder::TypedValueParser;
use clap::{Args, ValueEnum};
use serde::Deserialize;
use std::net::SocketAddr;
use std::path::PathBuf;

/// How commits become durable (the engine's `SyncMode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SyncModeName {
    /// One O_DIRECT write linked to an fdatasync (IOSQE_IO_LINK).
    LinkedFdatasync,
    /// One O_DIRECT write with RWF_DSYNC (the default).
    Dsync,
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
    /// Serve the HTTP endpoint (--http-listen) over TLS with --tls-cert and --tls-key (no
    /// client certificate asked for), as the Java bookie's httpServerTlsEnable: scrape it as
    /// https://. Needs --tls-cert and an --http-listen address. Default: false.
    #[arg(long, value_name = "BOOL")]
    pub http_tls: Option<bool>,
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
    /// A commit goes while another is in flight only with at least this many KiB of adds;
    /// a smaller one waits for the commits in flight and takes every add that arrives
    /// meanwhile (no timer). Each commit is padded to whole 4 KiB sectors, so small batches
    /// sent side by side write more than the adds: at 10k 1 KiB adds/s the journal wrote 3.6
    /// bytes per byte of adds at 0, and 2.3-3.0 at 4-32, for about twice the adds' p99 (1.4
    /// against 3-4 ms); at 60k, 1.38-1.44 at 0 and 1.29 at 32. For a bookie whose disk
    /// wear or write bandwidth matters more than its add latency. 0 to 8192. Default: 0
    /// (every batch goes as soon as a commit slot is free).
    #[arg(long, value_name = "KIB")]
    pub commit_overlap_min_kib: Option<u64>,
    /// What each commit is padded to, in bytes: 4096 (the physical sector) or 512. With 4096
    /// no commit ever writes into a sector that holds acknowledged entries. 512 pads about
    /// 1.8 KiB less a commit (about 0.3 fewer bytes written per byte of 1 KiB adds at 60k/s);
    /// it needs a disk whose logical block is 512 bytes (checked at start) and whose writes
    /// to part of a physical sector never disturb the rest of it, as flash devices' out-of-
    /// place writes do, but not a 512e hard disk's read-modify-write. Applies to segments
    /// created from then on; each segment's header records its own. Default: 4096.
    #[arg(long, value_name = "BYTES")]
    pub commit_block_bytes: Option<u64>,
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
    /// Sorting (--sort-sealed-segments) runs only after a shard's adds (their bodies) and
    /// every shard's reads moved less than this many MiB per second for a second, and pauses
    /// within a 100 ms tick of more: a sort's reads and writes share the disk and the core
    /// with them. Adds count by their bodies, not the commits' padded sectors, so the same
    /// load sorts on a fast disk (one add to a commit) as on a slow one. Beside 60k
    /// 1 KiB adds/s (under the default) it raised the write p99 from 1.2 to 2.7 ms; beside
    /// 250k (above it) from 3.4 to 7-9 ms. Under a steady load above it, segments stay in
    /// commit order until the load drops (a paused sort is dropped if space is needed).
    /// 0 sorts only while nothing is written or read; 4096 never pauses. 0 to 4096.
    /// Default: 96.
    #[arg(long, value_name = "MIB")]
    pub sort_traffic_max_mib: Option<u64>,
    /// The scrubber (docs/scrub.md): each shard reads its sealed segments and their index
    /// files back, checking every record's CRC32C, the hash chain and every index page, so
    /// damage is found before a client reads it; one read at a time, only while a commit slot
    /// is free. This is its highest rate per shard, MiB per second; it reads the sealed bytes
    /// over --scrub-cycle-hours, up to this. 0 turns the scrubber off. 0 to 1024. Default: 4.
    #[arg(long, value_name = "MIB")]
    pub scrub_rate_mib: Option<u64>,
    /// How long one full scrub cycle over a shard's sealed data should take, in hours
    /// (fractions allowed: tests use 0.001). Each bookie starts its first cycle at a random
    /// segment; the position survives restarts (in the checkpoint). 0.0001 to 8760.
    /// Default: 168 (one week).
    #[arg(long, value_name = "HOURS")]
    pub scrub_cycle_hours: Option<f64>,
    /// Check the client's digest in every added entry body (CRC32 and CRC32C ledgers; the
    /// type is learned from the first bodies; HMAC and DUMMY cannot be checked) and report
    /// a mismatch as damage that reached the bookie: logged, counted in
    /// ringlog_digest_mismatches_total and repaired from the replicas like scrub damage. The
    /// entry is still stored and acknowledged as sent (the client checks digests on read).
    /// The scrubber checks digests either way. Default: false (docs/scrub.md, "Digests").
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    pub verify_digest_on_add: Option<bool>,
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
    /// TLS (docs/security.md): the bookie's certificate chain, PEM, its own certificate
    /// first. With --tls-key, a client's v3 START_TLS request (the BookKeeper client's first
    /// request when `tlsProviderFactoryClass` is set; Pulsar's
    /// `bookkeeperTLSClientAuthentication=true`) is answered and the connection turns to TLS
    /// 1.3 or 1.2, its v2 or v3 frames inside. Without it START_TLS gets EBADREQ. A file that
    /// cannot be read or used fails the start, naming it. Default: none (no TLS).
    #[arg(long, value_name = "FILE")]
    pub tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert's certificate, PEM: PKCS#8 (`BEGIN PRIVATE KEY`), RSA
    /// (`BEGIN RSA PRIVATE KEY`) or EC (`BEGIN EC PRIVATE KEY`), unencrypted (keep it readable
    /// by the bookie only). Required with --tls-cert.
    #[arg(long, value_name = "FILE")]
    pub tls_key: Option<PathBuf>,
    /// CA certificates (PEM) that client certificates are verified against. Without
    /// --tls-client-auth a client certificate is verified if sent, not asked for. Needs
    /// --tls-cert. Default: none.
    #[arg(long, value_name = "FILE")]
    pub tls_trust: Option<PathBuf>,
    /// Require a client certificate that --tls-trust verifies; a handshake without one
    /// fails and closes the connection (the Java bookie's tlsClientAuthentication). Needs
    /// --tls-trust. Default: false.
    #[arg(long, value_name = "BOOL")]
    pub tls_client_auth: Option<bool>,
    /// Comma-separated roles (the Java bookie's BookieAuthZFactory with authorizedRoles): a
    /// TLS connection is served only if the first role in its client certificate's subject
    /// OU, written `0:role1,role2;1:cluster`, is one of these; any other gets EUA for every
    /// request but START_TLS and AUTH, and so does every plaintext connection. Needs
    /// --tls-client-auth. Default: none (no role check).
    #[arg(long, value_name = "ROLE[,ROLE..]")]
    pub tls_authorized_roles: Option<String>,
    /// Serve plaintext connections only START_TLS and AUTH; everything else gets EUA until
    /// the connection has turned to TLS (the Java bookie cannot refuse plaintext clients).
    /// Needs --tls-cert. Default: false.
    #[arg(long, value_name = "BOOL")]
    pub tls_required: Option<bool>,
    /// Every this many seconds each shard checks the TLS files' size, time and inode; when
    /// one changed, new connections get the files read again (connections already open keep
    /// their session). A rotation whose files are bad is logged and the old ones stay (the
    /// Java bookie's tlsCertFilesRefreshDurationSeconds). 0 never checks. 0 to 86400.
    /// Default: 60.
    #[arg(long, value_name = "SECONDS")]
    pub tls_refresh_s: Option<u64>,
    /// A connection whose TLS handshake has not completed this many milliseconds after its
    /// START_TLS answer is closed (a client that stops mid-handshake holds nothing for
    /// long). 100 to 600000. Default: 10000.
    #[arg(long, value_name = "MS")]
    pub tls_handshake_timeout_ms: Option<u64>,
}
