//! What the shards publish for `/metrics` and the bookie state endpoints, and how.
//!
//! Each shard owns one `ShardBlock`: atomics aligned to 128 bytes (two cache lines, what the
//! adjacent-line prefetcher pairs), written only by that shard with `Relaxed` stores on its
//! 100 ms tick, from the plain counters and histograms it keeps anyway. The add path touches
//! only the shard's own memory (a counter, a histogram bucket): no lock, no shared cache line,
//! no system call. The HTTP thread (`http.rs`) only loads and sums; a scrape may see one
//! shard's numbers up to one tick old, and a histogram's buckets from two ticks (its count is
//! the sum of the buckets it read, so the exposition stays consistent).

pub mod exposition;
pub mod http;

#[cfg(test)]
mod tests;

use engine::histogram::HISTOGRAM_BUCKETS;
use engine::Log2Histogram;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use wire::code;

/// The v2 error codes counted by code, in label order; anything else counts as `OTHER`.
pub const ERROR_CODES: [(i32, &str); 9] = [
    (code::ENOLEDGER, "ENOLEDGER"),
    (code::ENOENTRY, "ENOENTRY"),
    (code::EBADREQ, "EBADREQ"),
    (code::EIO, "EIO"),
    (code::EUA, "EUA"),
    (code::EBADVERSION, "EBADVERSION"),
    (code::EFENCED, "EFENCED"),
    (code::EREADONLY, "EREADONLY"),
    (code::ETOOMANYREQUESTS, "ETOOMANYREQUESTS"),
];
/// Slots of a per-code counter array: the codes above and one for any other.
pub const ERROR_SLOTS: usize = ERROR_CODES.len() + 1;

/// The counter slot of a non-zero v2 `code`.
#[must_use]
pub fn error_slot(code: i32) -> usize {
    assert!(code != code::EOK, "EOK is not an error");
    let slot = ERROR_CODES
        .iter()
        .position(|&(known, _)| known == code)
        .unwrap_or(ERROR_CODES.len());
    assert!(slot < ERROR_SLOTS);
    slot
}

/// The histograms a shard publishes, by index into `ShardValues::histograms`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HistogramId {
    /// Adds, received to answered, succeeded (µs).
    AddOk = 0,
    /// Adds answered with an error (µs).
    AddFailed,
    /// Single-entry reads, received to answered, succeeded (µs).
    ReadOk,
    /// Reads answered with an error (µs).
    ReadFailed,
    /// Stage 1: request received to handled (staged, answered or forwarded) (µs).
    ReceivedToStaged,
    /// Stage 2: a commit opened for staging to submitted (µs).
    StagedToSubmitted,
    /// Stage 3: commit submitted to durable, in journal order (µs).
    SubmittedToDurable,
    /// Stage 4: durable events reaped to the turn's responses sent (µs).
    DurableToSent,
    /// A commit's own write and sync (µs).
    CommitDisk,
    /// Records per commit.
    CommitRecords,
    /// Bytes per commit.
    CommitBytes,
}

/// Histograms per shard.
pub const HISTOGRAMS: usize = 11;

/// Where the server is between start and exit, for `/api/v1/bookie/state` and `is_ready`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerState {
    /// Journals are being recovered; nothing is served yet.
    Starting = 0,
    /// Every shard accepts connections.
    Serving = 1,
    /// A stop was asked (signal, poisoned journal): in-flight work drains, then exit.
    Stopping = 2,
}

/// Generates the plain snapshot of a shard's scalar values (`ShardScalars`) and its atomic
/// twin (`ShardScalarsAtomic`), field for field, so a new number is one line here.
macro_rules! shard_scalars {
    ($($(#[$doc:meta])* $field:ident,)*) => {
        /// A shard's published scalar values (counters and gauges), as plain numbers.
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct ShardScalars {
            $($(#[$doc])* pub $field: u64,)*
        }

        /// `ShardScalars` as atomics, written by one shard.
        #[derive(Debug, Default)]
        struct ShardScalarsAtomic {
            $($field: AtomicU64,)*
        }

        impl ShardScalarsAtomic {
            fn store(&self, values: &ShardScalars) {
                $(self.$field.store(values.$field, Ordering::Relaxed);)*
            }

            fn load(&self) -> ShardScalars {
                ShardScalars { $($field: self.$field.load(Ordering::Relaxed),)* }
            }
        }

        impl ShardScalars {
            /// Adds `other` field by field (shards into the server's total).
            pub fn merge(&mut self, other: &ShardScalars) {
                $(self.$field = self.$field.saturating_add(other.$field);)*
            }
        }
    };
}

shard_scalars! {
    /// Adds staged.
    adds,
    /// Bytes of the entry bodies of those adds.
    add_bytes,
    /// Reads answered (single entries; a batch counts once).
    reads,
    /// Bytes of the entry bodies read.
    read_bytes,
    /// Commits submitted, and made durable.
    commits,
    commits_durable,
    /// Syncs completed (RWF_DSYNC writes or fdatasyncs).
    syncs,
    /// Entry records made durable.
    entries_durable,
    /// Bytes written by commits, padding included.
    bytes_written,
    /// Connections accepted, open now, rejected at accept, closed as invalid or idle.
    connections_accepted,
    connections_open,
    connections_rejected,
    connections_invalid,
    connections_idle,
    /// TLS: sessions started, handshakes completed, failed and timed out, connections whose
    /// certificate role is not authorized, requests answered EUA, certificate rotations
    /// picked up and refused, and TLS connections open now.
    tls_sessions_started,
    tls_handshakes,
    tls_handshake_failures,
    tls_handshake_timeouts,
    tls_unauthorized,
    requests_unauthorized,
    tls_reloads,
    tls_reload_failures,
    connections_tls,
    /// Requests forwarded to their owner shard, and served for other shards.
    forwarded,
    forwarded_served,
    /// Commits the stall watchdog reported.
    commits_stalled,
    /// Adds held back for lack of staging room.
    staging_full,
    /// 1 while the journal refuses adds because the disk is full, else 0.
    read_only,
    /// 1 once the journal is poisoned.
    poisoned,
    /// 1 while adds wait for compaction or removals to give disk space back, else 0.
    waiting_for_space,
    /// Bytes zeroed ahead of the write head in new segment files, and written to index files:
    /// with `bytes_written` and compaction's, what the journal writes per byte added.
    zero_ahead_bytes,
    index_bytes_written,
    /// Dead segment files reused as new segments (no zeroing ahead needed).
    segments_recycled,
    /// Times adds began to wait for space, and the milliseconds they waited in all.
    space_waits,
    space_wait_ms,
    /// The disk-pressure level and compaction's threshold now, in thousandths.
    disk_pressure_per_mille,
    compaction_threshold_per_mille,
    /// Sealed segments, and the segments still being written or not yet sealed.
    segments_sealed,
    segments_unsealed,
    /// Bytes of the journal's segment files (sealed ones at their size, unsealed ones at the
    /// segment size), and the live entry bytes of its sealed segments.
    journal_bytes,
    sealed_live_bytes,
    /// Ledgers in the journal's index.
    ledgers,
    /// Garbage collection: ledgers deleted, dead segments removed and their bytes,
    /// compactions finished, the bytes they wrote and gave back, and their failures.
    ledgers_deleted,
    segments_removed,
    segment_bytes_removed,
    compactions_done,
    compaction_bytes_written,
    compaction_bytes_freed,
    compaction_failures,
    /// Bytes compaction read back (slot pages and the records it copies).
    compaction_bytes_read,
    /// The scrubber (docs/scrub.md): bytes read back, segments checked, full cycles, damage
    /// found in records (and segment headers) and in index files, reads that failed.
    scrub_bytes,
    scrub_segments,
    scrub_cycles_completed,
    scrub_damage_records,
    scrub_damage_index,
    scrub_read_failures,
    /// Entries whose record was sound but whose client digest was not: on add
    /// (--verify-digest-on-add) and by the scrubber.
    digest_mismatches_on_add,
    scrub_damage_digests,
    /// Damaged entries handed to the repairer, and good copies journaled in their place.
    repairs_requested,
    repairs_written,
    /// The scrubber's position and pace (gauges, for `/api/v1/bookie/scrub`): the segment it
    /// checks next, the first segment of its cycle, the segment being checked plus one (0:
    /// none), and this cycle's rate in bytes a second; 1 while it is on.
    scrub_enabled,
    scrub_segment_next,
    scrub_cycle_start,
    scrub_segment_current_plus_one,
    scrub_rate_bytes_per_s,
    /// Reads served from memory and from disk (alone, or through a read-ahead window), the
    /// windows read, and the reads that waited for the read pace.
    reads_cached,
    reads_disk,
    reads_read_ahead,
    read_ahead_windows,
    reads_paced,
    /// Reads tried again because the engine had no room (every attempt counts).
    read_retries,
    /// Bytes the disk read for reads (their records, index pages, read-ahead windows).
    read_disk_bytes,
    /// Compactions started to sort a segment by (ledger, entry).
    compactions_sorting,
    /// Paused sorts dropped because space was needed.
    compactions_sorting_dropped,
}

/// Everything one shard publishes, as plain numbers: what it fills on its tick, and what the
/// HTTP thread reads back and sums. Lives on the stack (no allocation on either side).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ShardValues {
    /// Counters and gauges.
    pub scalars: ShardScalars,
    /// Add errors by code (`error_slot`).
    pub add_errors: [u64; ERROR_SLOTS],
    /// Read errors by code.
    pub read_errors: [u64; ERROR_SLOTS],
    /// By `HistogramId`.
    pub histograms: [Log2Histogram; HISTOGRAMS],
}

impl ShardValues {
    /// Adds `other` (another shard's values) into these.
    pub fn merge(&mut self, other: &ShardValues) {
        self.scalars.merge(&other.scalars);
        for (mine, theirs) in self.add_errors.iter_mut().zip(other.add_errors) {
            *mine = mine.saturating_add(theirs);
        }
        for (mine, theirs) in self.read_errors.iter_mut().zip(other.read_errors) {
            *mine = mine.saturating_add(theirs);
        }
        for (mine, theirs) in self.histograms.iter_mut().zip(&other.histograms) {
            mine.merge(theirs);
        }
    }

    /// The histogram `id`.
    #[must_use]
    pub fn histogram(&self, id: HistogramId) -> &Log2Histogram {
        &self.histograms[id as usize]
    }

    /// The histogram `id`, to fill.
    pub fn histogram_mut(&mut self, id: HistogramId) -> &mut Log2Histogram {
        &mut self.histograms[id as usize]
    }
}

/// One histogram as atomics.
#[derive(Debug, Default)]
struct HistogramAtomic {
    buckets: [AtomicU64; HISTOGRAM_BUCKETS],
    sum: AtomicU64,
}

/// One shard's published numbers: written only by that shard, read by the HTTP thread. The
/// alignment keeps two shards' blocks off each other's cache lines.
#[derive(Debug, Default)]
#[repr(align(128))]
pub struct ShardBlock {
    scalars: ShardScalarsAtomic,
    add_errors: [AtomicU64; ERROR_SLOTS],
    read_errors: [AtomicU64; ERROR_SLOTS],
    histograms: [HistogramAtomic; HISTOGRAMS],
}

impl ShardBlock {
    /// The bytes of entries the shard has served to readers, as last published: what other
    /// shards, which share its disk, read to pause their sorting beside a catch-up read.
    #[must_use]
    pub fn read_bytes(&self) -> u64 {
        self.scalars.read_bytes.load(Ordering::Relaxed)
    }

    /// Publishes `values` (the owning shard only).
    pub fn store(&self, values: &ShardValues) {
        self.scalars.store(&values.scalars);
        for (atomic, value) in self.add_errors.iter().zip(values.add_errors) {
            atomic.store(value, Ordering::Relaxed);
        }
        for (atomic, value) in self.read_errors.iter().zip(values.read_errors) {
            atomic.store(value, Ordering::Relaxed);
        }
        for (atomic, histogram) in self.histograms.iter().zip(&values.histograms) {
            for (bucket, value) in atomic.buckets.iter().zip(histogram.buckets) {
                bucket.store(value, Ordering::Relaxed);
            }
            atomic.sum.store(histogram.sum, Ordering::Relaxed);
        }
    }

    /// What the shard last published.
    #[must_use]
    pub fn load(&self) -> ShardValues {
        let mut values = ShardValues {
            scalars: self.scalars.load(),
            ..ShardValues::default()
        };
        for (value, atomic) in values.add_errors.iter_mut().zip(&self.add_errors) {
            *value = atomic.load(Ordering::Relaxed);
        }
        for (value, atomic) in values.read_errors.iter_mut().zip(&self.read_errors) {
            *value = atomic.load(Ordering::Relaxed);
        }
        for (histogram, atomic) in values.histograms.iter_mut().zip(&self.histograms) {
            for (value, bucket) in histogram.buckets.iter_mut().zip(&atomic.buckets) {
                *value = bucket.load(Ordering::Relaxed);
            }
            histogram.sum = atomic.sum.load(Ordering::Relaxed);
        }
        values
    }
}

/// What the shards and `run` share with the HTTP thread.
#[derive(Debug)]
pub struct Metrics {
    /// One block per shard, indexed by shard id.
    shards: Vec<ShardBlock>,
    /// A `ServerState`, set by `run`.
    state: AtomicU8,
}

impl Metrics {
    /// Blocks for `shards` shards, in state `Starting`.
    #[must_use]
    pub fn new(shards: usize) -> Metrics {
        assert!(shards >= 1);
        assert!(shards <= crate::limits::SHARDS_MAX);
        Metrics {
            shards: (0..shards).map(|_| ShardBlock::default()).collect(),
            state: AtomicU8::new(ServerState::Starting as u8),
        }
    }

    /// Shard `shard`'s block.
    #[must_use]
    pub fn shard(&self, shard: usize) -> &ShardBlock {
        &self.shards[shard]
    }

    /// How many shards publish here.
    #[must_use]
    pub fn shards_count(&self) -> usize {
        self.shards.len()
    }

    /// Every shard's last published values, in shard order.
    pub fn shards(&self) -> impl Iterator<Item = ShardValues> + '_ {
        self.shards.iter().map(ShardBlock::load)
    }

    /// Moves to `state` (never back to `Starting`).
    pub fn state_set(&self, state: ServerState) {
        assert!(state != ServerState::Starting);
        self.state.store(state as u8, Ordering::SeqCst);
    }

    /// The server's state.
    #[must_use]
    pub fn state(&self) -> ServerState {
        match self.state.load(Ordering::SeqCst) {
            0 => ServerState::Starting,
            1 => ServerState::Serving,
            _ => ServerState::Stopping,
        }
    }
}
