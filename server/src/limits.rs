//! Every limit of the server: the runtime defaults (overridable, documented in docs/limits.md)
//! and the fixed bounds that size buffers and tables, with their relations checked.

use engine::constants::RECORD_PAYLOAD_SIZE_MAX;
use wire::FRAME_SIZE_MAX_DEFAULT;

/// BookKeeper's `bookiePort`.
pub const LISTEN_PORT_DEFAULT: u16 = 3181;

/// `--http-listen` by default: every address, port 8000, a Pulsar bookie's `httpServerPort`
/// and `prometheusStatsHttpPort`, so its scrape configs and probes find ringlog there.
pub const HTTP_LISTEN_DEFAULT: &str = "0.0.0.0:8000";
/// Largest HTTP request head (request line and headers) the endpoint reads; a longer one gets
/// 400. A scrape's or probe's head is a few hundred bytes; the buffer lives on the HTTP
/// thread's stack.
pub const HTTP_REQUEST_BYTES_MAX: usize = 8192;
/// Longest an HTTP client may take to send its request head, and each write of the answer
/// may block: connections are served one at a time, so a slow client delays the next scrape
/// by at most this.
pub const HTTP_REQUEST_MS_MAX: u64 = 2000;
/// After a refused request, how many more of its bytes, and for how long, the endpoint reads
/// and drops before closing, so the close does not reset the connection under the answer.
pub const HTTP_LINGER_BYTES_MAX: usize = 64 * 1024;
pub const HTTP_LINGER_MS: u64 = 200;
/// Pause of the HTTP thread after a failed accept (EMFILE repeats at once otherwise).
pub const HTTP_ACCEPT_RETRY_MS: u64 = 100;

/// `--log` by default (without RUST_LOG): warnings, errors and the state changes an operator
/// acts on; nothing per request at any level.
pub const LOG_FILTER_DEFAULT: &str = "info";
/// Shortest time between two log lines about connection errors of one shard (failed
/// accepts, connections refused at the cap, protocol violations): a flood of them is one
/// line with counts per interval.
pub const CONNECTION_ERRORS_LOG_MS: u64 = 10_000;

/// Most shards per process: shard ids travel as `u16` in the ownership map, and 64 is far more
/// cores than one journal disk can use.
pub const SHARDS_MAX: usize = 64;
/// Most data directories in --data-dir: each holds at least one shard's journal when there are
/// as many shards as directories, and more directories than the most shards would leave some
/// empty for good.
pub const DATA_DIRS_MAX: usize = SHARDS_MAX;

/// Smallest frame limit: Pulsar's `nettyMaxFrameSizeBytes` (5 MiB + 10 KiB), which every client
/// we serve may send (protocol §1.1).
pub const FRAME_SIZE_MAX_MIN: u32 = FRAME_SIZE_MAX_DEFAULT;
/// Largest configurable frame limit. Bodies beyond the engine's largest record are refused with
/// EBADREQ anyway; the bound keeps a typo from letting one peer pin 4 GiB per connection.
pub const FRAME_SIZE_MAX_LIMIT: u32 = 64 * 1024 * 1024;

/// Connections per shard. Default 4096, the global cap reliability.md suggests; beyond it a new
/// connection is closed right after accept.
pub const CONNECTIONS_MAX_DEFAULT: usize = 4096;
/// Connection slots are 20-bit fields of journal tokens (see `request::pending::Token`).
pub const CONNECTIONS_MAX_LIMIT: usize = 65_536;

/// Requests in flight per connection (pending journal work plus requests forwarded to other
/// shards). BookKeeper's `maxPendingAddRequestsPerThread` is 10 000; at the cap the server stops
/// reading the socket (TCP backpressure) instead of answering ETOOMANYREQUESTS.
pub const REQUESTS_IN_FLIGHT_MAX_DEFAULT: usize = 10_000;
/// Pending slots are 24-bit fields of journal tokens.
pub const REQUESTS_IN_FLIGHT_MAX_LIMIT: usize = 1 << 20;

/// Frames decoded per connection per loop turn, so one busy connection cannot starve the others
/// or delay the turn's commit.
pub const FRAMES_PER_TURN_MAX_DEFAULT: usize = 1000;
/// Upper bound of `frames_per_turn_max`.
pub const FRAMES_PER_TURN_MAX_LIMIT: usize = 1_000_000;

/// Kafka's `connections.max.idle.ms`: an idle connection is closed after 10 minutes.
pub const IDLE_TIMEOUT_MS_DEFAULT: u64 = 600_000;
/// Smallest idle timeout: below the 100 ms tick the check could not honour it.
pub const IDLE_TIMEOUT_MS_MIN: u64 = 100;
/// Largest idle timeout: one week.
pub const IDLE_TIMEOUT_MS_MAX: u64 = 7 * 24 * 3600 * 1000;

/// How often each shard checks the TLS files for a rotation (`--tls-refresh-s`): a minute,
/// so a renewed certificate reaches new connections soon without a stat per connection.
pub const TLS_REFRESH_S_DEFAULT: u64 = 60;
/// Largest `--tls-refresh-s`: a day.
pub const TLS_REFRESH_S_MAX: u64 = 86_400;
/// A TLS handshake must complete within this (`--tls-handshake-timeout-ms`): the Java
/// client's connect timeout is 10 s too, and a client stopped mid-handshake holds its slot
/// and buffers no longer.
pub const TLS_HANDSHAKE_TIMEOUT_MS_DEFAULT: u64 = 10_000;
/// Smallest handshake timeout: below the 100 ms tick the check could not honour it.
pub const TLS_HANDSHAKE_TIMEOUT_MS_MIN: u64 = 100;
/// Largest handshake timeout: ten minutes.
pub const TLS_HANDSHAKE_TIMEOUT_MS_MAX: u64 = 600_000;
/// Handshake flights a shard processes per loop turn. Each costs a signature (about 1 ms
/// with a 2048-bit RSA key, 0.1 ms with P-256): a thousand clients reconnecting at once after
/// a broker restart would otherwise hold one turn, and every add behind it, for a second.
/// Connections over the budget wait for the next turn (their bytes stay in their buffers).
pub const TLS_HANDSHAKES_PER_TURN_MAX: u32 = 4;
/// Ciphertext receive buffer of a TLS connection: eight 16 KiB records (with their headers
/// and tags) per recv. Its plaintext goes into the connection's ordinary receive buffer.
pub const TLS_RECV_BUFFER_SIZE: usize = 8 * (16 * 1024 + 256);

/// Initial receive buffer per connection. It grows to `frame_size_max` only when a frame header
/// announces a bigger frame, so idle or small-entry connections stay small.
pub const RECV_BUFFER_SIZE_INITIAL: usize = 256 * 1024;
/// Send buffer per connection: the one in flight. Responses wait in the connection's output
/// vector (the one filling) and leave in chunks of at most this size.
pub const SEND_BUFFER_SIZE: usize = 256 * 1024;
/// Unsent response bytes per connection above which the server stops reading its socket
/// (TCP backpressure on a client that reads its responses slower than it sends requests).
/// Four send buffers: a client that reads at all drains it within a few loop turns, while a
/// client that never reads is held to about 37,000 add responses instead of the 600,000 the
/// 16 MiB ceiling alone would let it journal before it stalls.
pub const OUTPUT_BYTES_READ_PAUSE: usize = 4 * SEND_BUFFER_SIZE;
/// Ceiling on the unsent bytes a connection can reach from requests already accepted when
/// the pause starts: the pause, a full response of every batch read it may run, and one
/// largest entry.
pub const OUTPUT_BYTES_MAX: usize = 32 * 1024 * 1024;

/// Requests a shard may hold at once on behalf of each other shard (forwarded to it because it
/// owns their ledgers). At the cap it stops taking that shard's forwarded requests.
pub const PEER_REQUESTS_IN_FLIGHT_MAX: usize = 65_536;
/// Messages queued in each shard's mailbox (`sync_channel` bound). A full mailbox makes the
/// sender keep its batch and retry next turn.
pub const MAILBOX_MESSAGES_MAX: usize = 1024;
/// Mailbox messages a shard takes per loop turn.
pub const MAILBOX_MESSAGES_PER_TURN_MAX: usize = 256;
/// Forwarded request bytes buffered per destination shard before the sender stops decoding
/// requests for it (each turn's batch goes as one mailbox message). One frame always fits.
pub const FORWARD_BYTES_MAX: usize = 8 * 1024 * 1024;
/// Mails waiting in a shard's peer inboxes above which it stops taking mail, so that a
/// stalled journal cannot make it buffer without bound (at most this many batches of
/// `FORWARD_BYTES_MAX` plus one frame).
pub const PEER_INBOX_MESSAGES_MAX: usize = 16;

/// `maxBatchReadSize`: a batch read response holds at most this many bytes (protocol §2.7),
/// except that the first entry is always included.
pub const BATCH_READ_BYTES_MAX: usize = 5 * 1024 * 1024;
/// Batch reads one client (a connection, or a peer shard's forwarded requests) runs at once;
/// later ones wait in its input. A batch waits at each read-ahead window it needs, so with
/// one at a time a catch-up reader's connection moved one batch per window latency. The
/// first runs in the client's own buffer, the others in ones the shard lends
/// (`BATCH_READ_BUFFERS_SHARED_MAX`).
pub const BATCH_READS_PER_CLIENT_MAX: usize = 4;
/// Response buffers per shard for a client's second and later running batch reads (its
/// first uses its own, as when one ran at a time). None free: the batch waits in the input.
/// Each grows to the largest response it held (at most `BATCH_READ_BYTES_MAX` or one
/// largest entry), so they hold at most 16 x 5 MiB per shard.
pub const BATCH_READ_BUFFERS_SHARED_MAX: usize = 16;
/// Entries per batch read when the request sets no count (`maxCount <= 0`), bounding the loop.
pub const BATCH_READ_ENTRIES_MAX: usize = 65_536;

/// Reads waiting for a free engine read slot (`ReadError::Busy`), per shard. Beyond it, or
/// after `READ_RETRY_WAIT_MS_MAX` of retries, the read is answered ETOOMANYREQUESTS.
pub const READ_RETRY_QUEUE_MAX: usize = 65_536;
/// How long a read that keeps finding the engine busy is retried before it gets
/// ETOOMANYREQUESTS. In time, not loop turns: a busy-polling shard turns tens of thousands of
/// times a second, and 10,000 turns (the old bound) were shorter than a sorted segment's swap
/// under an all-ledgers read (376 of 3.6M reads answered busy in `make busy-reads`).
pub const READ_RETRY_WAIT_MS_MAX: u64 = 2_000;

/// v3 long-poll reads a shard keeps parked (protocol §5.4). Beyond it a long poll is served
/// at once, which is a valid answer (the client polls again); the list is scanned when the
/// LAC may have moved, so the bound also bounds that scan.
pub const PARKED_READS_MAX: usize = 4096;
/// Longest a long poll is parked, whatever `timeOut` it asks for, so that a parked read
/// cannot hold a connection (or a shutdown) for longer. Java clients ask for seconds.
pub const LONG_POLL_TIMEOUT_MS_MAX: u64 = 60_000;

/// Listen backlog: connections the kernel queues per shard before accept.
pub const LISTEN_BACKLOG: i32 = 1024;
/// Longest the shard loop sleeps in the kernel with nothing to do: bounds how late a shutdown
/// signal or idle timeout is noticed.
pub const LOOP_WAIT_MS_MAX: u64 = 100;
/// The loop's sleep while a mailbox batch waits for room in a full peer mailbox (nothing
/// wakes the shard when room appears).
pub const LOOP_WAIT_MS_RETRY: u64 = 1;
/// How long a shard polls after its last work before sleeping (`--busy-poll-us`): longer
/// than a QD1 commit here (write + fdatasync, about 130-160 µs) plus a loopback round trip,
/// so a lone writer's commit completion and next request both find the shard awake.
pub const BUSY_POLL_US_DEFAULT: u64 = 200;
/// Largest `--busy-poll-us` (the engine's bound, shared with ringlog-bench).
pub use engine::constants::BUSY_POLL_US_MAX;
/// Longest a shard polls, in one wait, for a disk operation in flight before it sleeps until
/// the completion wakes it. A commit here takes 0.1-0.5 ms, so nearly all of them finish
/// within the poll; a slower one pays a wake-up (about 20 µs) on top of more than a
/// millisecond, and a commit that hangs costs sleeps, not a core.
pub const BUSY_POLL_IN_FLIGHT_US_MAX: u64 = 2_000;
/// After a sign that another thread needs the shard's core (run delay, or a poll that found
/// the core taken), the shard sleeps instead of polling for a pause: first this long, so a
/// lone sign (a client thread that ran on the shard's core once) costs little...
pub const BUSY_POLL_PAUSE_MS_MIN: u64 = 10;
/// ...then twice as long each time contention is seen again right after a pause, up to this
/// much: beside a CPU-bound neighbour every time slice it gets while the shard is runnable is
/// latency for every add waiting there, and a sleeping shard is woken at once by its
/// completion instead (`poll_pause.rs`).
pub const BUSY_POLL_PAUSE_MS_MAX: u64 = 1_000;
/// Run delay (time spent runnable, waiting for the CPU) between two waits above which the
/// shard's core counts as contended and polling pauses. Yielding to a kworker that completes
/// a write costs tens of microseconds; losing a time slice to a CPU-bound thread costs
/// milliseconds.
pub const RUN_DELAY_US_CONTENDED: u64 = 200;

/// Scheduler slice a shard thread asks for (EEVDF custom slice, Linux 6.12+): the shortest the
/// kernel accepts. Under EEVDF a thread that wakes preempts the running one only when it asked
/// for a shorter slice; with the default (about 3 ms here) a shard woken by its completion
/// waits for a CPU-bound neighbour's slice to end. Measured with `make neighbour`
/// (docs/durability.md).
pub const SHARD_SLICE_US_DEFAULT: u64 = 100;
/// The kernel clamps slices to 0.1..=100 ms.
pub const SHARD_SLICE_US_MIN: u64 = 100;
/// See `SHARD_SLICE_US_MIN`.
pub const SHARD_SLICE_US_MAX: u64 = 100_000;

/// The stall watchdog's default: a commit in flight for a second is thousands of times the
/// disk's usual commit time, long enough that no healthy disk trips it and short enough that
/// an operator sees a stall while it happens.
pub const COMMIT_STALL_MS_DEFAULT: u64 = 1_000;
/// Largest `--commit-stall-ms`: one hour.
pub const COMMIT_STALL_MS_MAX: u64 = 3_600_000;

/// BookKeeper's `zkLedgersRootPath`.
pub const ZK_ROOT_DEFAULT: &str = "/ledgers";
/// Longest --zk-root: the paths under it stay far below ZooKeeper's 1 MiB request limit.
pub const ZK_ROOT_SIZE_MAX: usize = 1024;
/// Entries in the --zk server list.
pub const ZK_SERVERS_MAX: usize = 64;
/// BookKeeper's `zkTimeout`: 10 s.
pub const ZK_SESSION_TIMEOUT_MS_DEFAULT: u64 = 10_000;
/// Smallest session timeout asked for; ZooKeeper itself clamps to 2..=20 ticks.
pub const ZK_SESSION_TIMEOUT_MS_MIN: u64 = 100;
/// Largest session timeout asked for: 10 minutes.
pub const ZK_SESSION_TIMEOUT_MS_MAX: u64 = 600_000;
/// How long startup retries an unreachable ZooKeeper before exiting with status 1.
pub const ZK_CONNECT_TIMEOUT_MS_DEFAULT: u64 = 30_000;
/// Smallest connect timeout: one attempt.
pub const ZK_CONNECT_TIMEOUT_MS_MIN: u64 = 100;
/// Largest connect timeout: one hour.
pub const ZK_CONNECT_TIMEOUT_MS_MAX: u64 = 3_600_000;
/// First pause between ZooKeeper connection attempts; it doubles up to the max.
pub const ZK_RETRY_BACKOFF_MS_INITIAL: u64 = 100;
/// Longest pause between ZooKeeper connection attempts.
pub const ZK_RETRY_BACKOFF_MS_MAX: u64 = 5_000;
/// How often the registration thread looks at the shards' read-only flags, the stop flag
/// and its session: bounds how late a read-only move or a deregistration starts.
pub const REGISTRATION_POLL_MS: u64 = 100;
/// Added to the session timeout when waiting for a registration left by an earlier run:
/// ZooKeeper expires sessions on its tick, up to a tick (2 s by default) after the timeout.
pub const ZK_STALE_REGISTRATION_GRACE_MS: u64 = 2_000;
/// Bound on deleting the registration and closing the session at shutdown; past it the
/// process exits anyway and the session expires on its own.
pub const ZK_DEREGISTER_TIMEOUT_MS: u64 = 5_000;

/// The shortest time between the end of a collection round and the next one that a shard
/// under disk pressure asked for (docs/gc.md, "Disk pressure"). Back to back, rounds still
/// read ZooKeeper no faster than --gc-metadata-rate.
pub const GC_PRESSURE_ROUND_GAP_MS_MIN: u64 = 100;
/// How long a shard with no room for a segment lets adds wait for the collection round it
/// asked for before it turns read-only (the round's deletions make it writable again).
pub const GC_PRESSURE_ROUND_WAIT_MS_MAX: u64 = 10_000;

/// Default `--gc-interval-ms`: BookKeeper's `gcWaitTime`, 10 minutes.
pub const GC_INTERVAL_MS_DEFAULT: u64 = 600_000;
/// Smallest non-zero `--gc-interval-ms` (0 turns collection off): tests use 500 ms; below
/// 100 ms a round would mostly re-read ZooKeeper for nothing.
pub const GC_INTERVAL_MS_MIN: u64 = 100;
/// Largest `--gc-interval-ms`: one week.
pub const GC_INTERVAL_MS_MAX: u64 = 7 * 24 * 3600 * 1000;
/// Default `--gc-metadata-rate`: BookKeeper's `gcMetadataOpRateLimit`, 1000 reads per second.
pub const GC_METADATA_RATE_DEFAULT: u32 = 1_000;
/// Largest `--gc-metadata-rate`: a ceiling that still protects a ZooKeeper ensemble.
pub const GC_METADATA_RATE_MAX: u32 = 100_000;
/// Default `--compaction-rate-mib`: a tenth or less of an NVMe disk's write bandwidth per
/// shard, so compaction never competes with the journal for long.
pub const COMPACTION_RATE_MIB_DEFAULT: u64 = 64;
/// Dead segments a shard removes per tick (`LOOP_WAIT_MS_MAX`): a burst of large unlinks
/// after a collection round stalled commits behind the file system's journal.
pub const SEGMENT_REMOVALS_PER_TICK_MAX: u32 = 1;
/// Default `--compaction-commit-percent`: a sort reads and writes each committed byte once
/// (200%), and a quarter more lets it catch up after a pause or a slow second.
pub const COMPACTION_COMMIT_PERCENT_DEFAULT: u64 = 250;
/// Largest `--compaction-commit-percent`.
pub const COMPACTION_COMMIT_PERCENT_MAX: u64 = 1000;
/// Largest `--compaction-rate-mib`.
pub const COMPACTION_RATE_MIB_MAX: u64 = 4096;
/// Default `--sort-traffic-max-mib`. A production bookie is never quiet, and a shard that
/// sorted only below 16 MiB/s left everything written under load in commit order: a catch-up
/// read of one ledger of 50 then read 34 bytes for each byte served. At 96 a shard sorts
/// beside 60k 1 KiB adds/s (about 48 MiB/s of commits a shard; write p99 1.2 -> 2.7 ms) but
/// not beside the 250k seed workload (128 MiB/s a shard), whose p99 sorting raised from
/// 3.3-3.5 to 7.3-9.4 ms (docs/durability.md, "Sorted segments").
pub const SORT_TRAFFIC_MAX_MIB_DEFAULT: u64 = 96;
/// Ticks (`LOOP_WAIT_MS_MAX` each: 1 s) a shard's traffic must stay below `--sort-traffic-max-mib`
/// before a paused sort resumes.
pub const SORT_QUIET_TICKS: u32 = 10;
/// Largest `--sort-traffic-max-mib`: at this rate sorting never pauses.
pub const SORT_TRAFFIC_MAX_MIB_MAX: u64 = 4096;
/// Default `--scrub-rate-mib`: engine's `SCRUB_RATE_MAX_DEFAULT` (docs/scrub.md).
pub const SCRUB_RATE_MIB_DEFAULT: u64 = engine::constants::SCRUB_RATE_MAX_DEFAULT / (1024 * 1024);
/// Damage lines a shard logs per 100 ms tick at most; the rest are summed up in one line.
pub const DAMAGE_LINES_PER_TICK_MAX: u32 = 16;
/// Repair requests queued for the repairer at most (docs/scrub.md, "Repair"); past it a
/// request is dropped and counted, and the next scrub cycle finds the damage again.
pub const REPAIR_QUEUE_MAX: usize = 4096;
/// A shard asks the repairer for the same entry at most this often: when every copy is
/// damaged, the repairs' reads of the other copies find their damage and ask again, and the
/// bookies would keep each other repairing (docs/scrub.md, "Repair").
pub const REPAIR_RETRY_MS: u64 = 60_000;
/// Entries a shard remembers asking a repair for (`REPAIR_RETRY_MS`); past it, older ones are
/// forgotten first.
pub const REPAIRS_ASKED_MAX: usize = 4096;
/// The repairer looks at its queue this often.
pub const REPAIR_POLL_MS: u64 = 100;
/// A repair's connection to another bookie: connect, send and each read, at most this long.
pub const REPAIR_PEER_TIMEOUT_MS: u64 = 5_000;
/// One socket read of the repairer's connection to a peer; the START_TLS answer it takes is
/// at most this too (the answer to a READ_ENTRY is bounded by the frame cap).
pub const REPAIR_PEER_READ_SIZE: usize = 64 * 1024;
/// Repair requests handled per queue look: a burst of damage is repaired in batches, each
/// ledger's metadata read once per batch.
pub const REPAIR_BATCH_MAX: usize = 256;
/// Repair copies a shard has journaled and not yet seen durable, at most: past it, a copy
/// that arrives is dropped (the next scrub cycle asks again).
pub const REPAIRS_IN_FLIGHT_MAX: usize = 256;
/// Largest `--scrub-rate-mib`.
pub const SCRUB_RATE_MIB_MAX: u64 = 1024;
/// Default `--scrub-cycle-hours`: one week, as `SCRUB_CYCLE_MS_DEFAULT`.
pub const SCRUB_CYCLE_HOURS_DEFAULT: f64 = 168.0;
/// Shortest `--scrub-cycle-hours` (0.36 s: for tests).
pub const SCRUB_CYCLE_HOURS_MIN: f64 = 0.0001;
/// Longest `--scrub-cycle-hours`: a year.
pub const SCRUB_CYCLE_HOURS_MAX: f64 = 8760.0;
/// Default `--read-pace-commit-us`: reads are paced over a tick whose commits took longer
/// than 1 ms on average. Here a 64 KiB commit takes about 0.15 ms and a 1 MiB one 0.4 ms with
/// the disk to itself (shared/docs/disk-floor.md); a closed-loop writer that saturates the
/// disk saw 2.6 ms alone and 4.8 ms beside an unpaced catch-up read.
pub const READ_PACE_COMMIT_US_DEFAULT: u64 = 1_000;
/// Bounds of `--read-pace-commit-us`.
pub const READ_PACE_COMMIT_US_MIN: u64 = 100;
pub const READ_PACE_COMMIT_US_MAX: u64 = 1_000_000;
/// Smallest non-zero `--gc-overreplicated-wait-ms`, as for the interval: tests use 1000 ms.
pub const GC_OVERREPLICATED_WAIT_MS_MIN: u64 = GC_INTERVAL_MS_MIN;
/// Largest `--gc-overreplicated-wait-ms`: one week.
pub const GC_OVERREPLICATED_WAIT_MS_MAX: u64 = GC_INTERVAL_MS_MAX;
/// Ledgers per `Mail::DeleteLedgers`: bounds the work one mail gives a shard's loop turn.
pub const GC_DELETE_BATCH_LEDGERS_MAX: usize = 4096;
/// Children of one metadata znode the collector accepts: a hierarchical level has at most
/// 10,000 (four digits); more means the tree is not what we think, and the round is skipped.
pub const GC_CHILDREN_MAX: usize = 100_000;

const _: () = assert!(FRAME_SIZE_MAX_MIN <= FRAME_SIZE_MAX_LIMIT);
const _: () = assert!(RECV_BUFFER_SIZE_INITIAL <= FRAME_SIZE_MAX_MIN as usize);
// Whole responses of every running batch (each at most the limit, or its one first entry
// when that is larger, plus framing) and one largest single read fit under the output cap,
// so running batches never stop the socket.
const BATCH_READ_RESPONSE_BYTES_MAX: usize = wire::BATCH_READ_RESPONSE_FIXED_SIZE
    + wire::BATCH_READ_RESPONSE_ITEM_PREFIX_SIZE
    + if BATCH_READ_BYTES_MAX > RECORD_PAYLOAD_SIZE_MAX {
        BATCH_READ_BYTES_MAX
    } else {
        RECORD_PAYLOAD_SIZE_MAX
    };
const _: () = assert!(
    OUTPUT_BYTES_READ_PAUSE
        + BATCH_READS_PER_CLIENT_MAX * BATCH_READ_RESPONSE_BYTES_MAX
        + RECORD_PAYLOAD_SIZE_MAX
        <= OUTPUT_BYTES_MAX
);
const _: () = assert!(CONNECTIONS_MAX_DEFAULT <= CONNECTIONS_MAX_LIMIT);
const _: () = assert!(REQUESTS_IN_FLIGHT_MAX_DEFAULT <= REQUESTS_IN_FLIGHT_MAX_LIMIT);
const _: () = assert!(PEER_REQUESTS_IN_FLIGHT_MAX <= REQUESTS_IN_FLIGHT_MAX_LIMIT);
// Connection and peer slots share the token's 20-bit client field.
const _: () = assert!(CONNECTIONS_MAX_LIMIT + SHARDS_MAX <= 1 << 20);
const _: () = assert!(SHARDS_MAX <= u16::MAX as usize);
const _: () = assert!(IDLE_TIMEOUT_MS_MIN >= LOOP_WAIT_MS_MAX);
const _: () = assert!(ZK_SESSION_TIMEOUT_MS_MIN <= ZK_SESSION_TIMEOUT_MS_DEFAULT);
const _: () = assert!(ZK_SESSION_TIMEOUT_MS_DEFAULT <= ZK_SESSION_TIMEOUT_MS_MAX);
const _: () = assert!(ZK_CONNECT_TIMEOUT_MS_MIN <= ZK_CONNECT_TIMEOUT_MS_DEFAULT);
const _: () = assert!(ZK_CONNECT_TIMEOUT_MS_DEFAULT <= ZK_CONNECT_TIMEOUT_MS_MAX);
const _: () = assert!(ZK_RETRY_BACKOFF_MS_INITIAL <= ZK_RETRY_BACKOFF_MS_MAX);
// A stop is noticed within one poll, well inside the deregistration bound.
const _: () = assert!(REGISTRATION_POLL_MS < ZK_DEREGISTER_TIMEOUT_MS);
const _: () = assert!(GC_INTERVAL_MS_MIN <= GC_INTERVAL_MS_DEFAULT);
const _: () = assert!(GC_INTERVAL_MS_DEFAULT <= GC_INTERVAL_MS_MAX);
const _: () = assert!(GC_METADATA_RATE_DEFAULT <= GC_METADATA_RATE_MAX);
// A hierarchical level (four digits) always fits.
const _: () = assert!(GC_CHILDREN_MAX >= 10_000);

/// Default `--read-ahead-mib`: the server's read-ahead memory, shared by its shards. 50
/// ledgers read at once by one shard wanted about 256 1 MiB windows here (docs/durability.md,
/// "Read-ahead"); the Java bookie's DbLedgerStorage read-ahead cache defaults to a quarter of
/// its direct memory, typically more.
pub const READ_AHEAD_MIB_DEFAULT: usize = 512;
/// Largest `--read-ahead-mib` (each shard is also held to `READ_AHEAD_WINDOWS_MAX`): every
/// window is a mapping of its own, and the kernel allows 65530 per process by default.
pub const READ_AHEAD_MIB_MAX: usize = 16384;
/// Default `--index-cache-mib`: the engine's default index page cache (32 MiB per shard).
pub const INDEX_CACHE_MIB_DEFAULT: u64 =
    (engine::constants::INDEX_CACHE_PAGES_DEFAULT / 256) as u64;
/// Largest `--index-cache-mib`: the engine's bound (4 GiB per shard).
pub const INDEX_CACHE_MIB_MAX: u64 = (engine::constants::INDEX_CACHE_PAGES_MAX / 256) as u64;

/// Default `--disk-reserve-mib`: the engine's default reserve (128 MiB per file system).
pub const DISK_RESERVE_MIB_DEFAULT: u64 = engine::constants::DISK_RESERVE_DEFAULT >> 20;
/// Largest `--disk-reserve-mib`: the engine's bound (1 TiB).
pub const DISK_RESERVE_MIB_MAX: u64 = engine::constants::DISK_RESERVE_MAX >> 20;
// The flag is in whole MiB: the engine's default must be one.
const _: () = assert!(engine::constants::DISK_RESERVE_DEFAULT % (1 << 20) == 0);
