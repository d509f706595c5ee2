//! Every compile-time limit of the engine, with the relations between them checked.

/// O_DIRECT alignment and the unit of journal writes. 4 KiB matches the physical block size of
/// the disks we target, so no write is a read-modify-write in the device.
pub const SECTOR_SIZE: usize = 4096;

/// The smaller unit commits may be padded to (`Config::commit_block`, a segment header flag):
/// the logical block of most NVMe and virtio disks, the least an O_DIRECT write may be.
pub const COMMIT_BLOCK_SMALL_SIZE: usize = 512;

/// Size of a journal record header (see `record.rs` and docs/format.md).
pub const RECORD_HEADER_SIZE: usize = 64;

/// Records start on 8-byte boundaries so headers never straddle odd addresses.
pub const RECORD_ALIGNMENT: usize = 8;

/// Largest record payload: the largest BookKeeper entry body a frame of the default limit
/// (`wire::FRAME_SIZE_MAX_DEFAULT`, Pulsar's 5 MiB + 10 KiB) can carry. It is that frame's size:
/// a body is only part of a frame, so every body such a frame holds fits, with bytes to spare.
pub const RECORD_PAYLOAD_SIZE_MAX: usize = wire::FRAME_SIZE_MAX_DEFAULT as usize;

/// Largest record on disk, header and alignment padding included.
pub const RECORD_SIZE_MAX: usize = RECORD_HEADER_SIZE + RECORD_PAYLOAD_SIZE_MAX + RECORD_ALIGNMENT;

/// Each segment starts with one sector holding its header; records follow.
pub const SEGMENT_HEADER_SIZE: usize = SECTOR_SIZE;

/// Segment sizes are bounded so a position fits the index's `u32` and a segment is not so small
/// that the largest record cannot fit.
pub const SEGMENT_SIZE_MIN: u64 = 64 * 1024;
/// See `SEGMENT_SIZE_MIN`.
pub const SEGMENT_SIZE_MAX: u64 = 4 * 1024 * 1024 * 1024 - SECTOR_SIZE as u64;
/// Default segment size: 256 MiB. A restart scans at most the active segment (the checkpoint
/// covers the sealed ones), and the active segment's entries are the only ones that cost
/// memory (8 bytes each): both are bounded by this size. Scanning 64-byte entries runs at
/// about 300 MB/s of records here, so 1 GiB segments took up to 3.5 s to reopen (issue 13's
/// target is 2 s after a clean stop) and up to ~100 MiB per shard of entry arrays; 256 MiB
/// takes under a second and ~26 MiB. Sealing and creating segments four times as often did not
/// change the seed workload's throughput (README.md, "Retention").
pub const SEGMENT_SIZE_DEFAULT: u64 = 256 * 1024 * 1024;

/// Largest commit (one O_DIRECT write). It must hold the largest record plus sector padding.
pub const BATCH_BYTES_MAX: usize = 8 * 1024 * 1024;
/// Most records staged into one commit; bounds the per-commit bookkeeping arrays.
pub const BATCH_RECORDS_MAX: usize = 16 * 1024;

/// Most commits in flight at once (the configured value is validated against this).
pub const COMMITS_IN_FLIGHT_MAX: usize = 4;
/// Default commits in flight: two overlap one fdatasync with the next write (disk-floor.md, 6).
pub const COMMITS_IN_FLIGHT_DEFAULT: usize = 2;
/// Default `Config::commit_overlap_bytes_min`: every batch goes as soon as a commit slot is
/// free. A higher minimum pads less (fewer, larger commits) and waits longer: at 10k 1 KiB
/// adds/s the journal wrote 3.6 bytes per byte of adds at 0 and 2.3-3.0 at 4-32 KiB, with the
/// adds' p99 1.4-1.6 ms against 3.2-4.4 ms (docs/durability.md, "Commit padding").
pub const COMMIT_OVERLAP_BYTES_MIN_DEFAULT: usize = 0;
/// Largest `Config::commit_overlap_bytes_min`: a full commit always goes.
pub const COMMIT_OVERLAP_BYTES_MIN_MAX: usize = BATCH_BYTES_MAX;

/// Most recent durable commit buffers kept in memory to serve tailing reads without disk I/O.
pub const READ_CACHE_BUFFERS_MAX: usize = 16;
/// Default number of cached commit buffers.
pub const READ_CACHE_BUFFERS_DEFAULT: usize = 2;

/// Most disk reads in flight per journal; beyond this `read` answers `Busy`.
pub const READS_IN_FLIGHT_MAX: usize = 64;
/// Size of each read buffer: one largest record, sector-aligned at both ends.
pub const READ_BUFFER_SIZE: usize = align_up_const(RECORD_SIZE_MAX, SECTOR_SIZE) + SECTOR_SIZE;

/// Bytes of one read-ahead window: a sequential reader's next records are read in one aligned
/// O_DIRECT read of this size (`journal/read_ahead.rs`). 1 MiB moves 1.8-2.5 GB/s here
/// (disk-floor.md) in about 0.4-0.5 ms, a few commits' time, so a window in flight delays a
/// commit queued behind it by at most that. Records larger than a window are read alone.
pub const READ_AHEAD_WINDOW_SIZE: usize = 1024 * 1024;
/// Default read-ahead windows per journal (`Config::read_ahead_windows`): 64 MiB, two windows
/// (the one being read and the next) for each of 32 catch-up readers of one shard.
pub const READ_AHEAD_WINDOWS_DEFAULT: usize = 64;
/// Largest configurable number of read-ahead windows per journal: 1 GiB.
pub const READ_AHEAD_WINDOWS_MAX: usize = 1024;
/// Default read pace (`Config::read_pace_percent`): while commits queue on the disk, window
/// reads may read a quarter of the bytes the commits write, so the writes keep most of the
/// disk and a catch-up read still moves.
pub const READ_PACE_PERCENT_DEFAULT: u32 = 25;
/// Largest read pace: window reads as many bytes as the commits.
pub const READ_PACE_PERCENT_MAX: u32 = 100;
/// Most window reads in flight per journal: 4 MiB, about 2 ms of the disk's bandwidth, so a
/// commit never waits behind more than that of read-ahead (reads and commits share the disk
/// queue; commits are never held back by the engine, window reads are).
pub const READ_AHEAD_IN_FLIGHT_MAX: usize = 4;
/// Reads per journal that may wait on a read-ahead window in flight. They need no buffer of
/// their own, so they are many more than the disk reads (`READS_IN_FLIGHT_MAX`): a catch-up
/// client keeps hundreds of reads outstanding, and all of them in one window wait on it.
pub const READ_WINDOW_WAITERS_MAX: usize = 1024;
/// Ledgers whose read pattern a journal follows to tell sequential readers from random ones;
/// the least recently read is forgotten first.
pub const READ_AHEAD_STREAMS_MAX: usize = 256;
/// A read of an entry at most this many ids from the highest one read of its ledger counts as
/// sequential: a client keeps up to a thousand reads outstanding (or a dozen batch reads of
/// 64, each read in order by the bookie), which arrive in order but interleave; with a gap of
/// 64 the concurrent batch reads of one ledger each looked like a jump, and read alone.
pub const READ_AHEAD_STREAM_GAP_MAX: i64 = 1024;

/// A scan's ledger must fill at least this share (numerator, denominator) of the stretch a
/// read-ahead window would read for it to get one; sparser, its records are read alone (a
/// sector or two each). One ledger of 500 in commit order fills 1/500 of a window.
pub const READ_AHEAD_DENSITY_MIN: (u64, u64) = (1, 8);
/// With more scans than this followed at once (a read of every ledger), a sparse stretch is
/// read in a window anyway: the other scans' ledgers fill it.
pub const READ_AHEAD_SPARSE_SCANS_MAX: usize = 4;

/// Most steps one `Disk::submit_file_ops` takes (a dead segment's reuse: its index's unlink,
/// its rename, the directory's fsync).
pub const FILE_OPS_MAX: usize = 4;
/// Most `Disk::submit_file_ops` sequences in flight on one disk: one each for segment
/// preparation, sealing, dead-segment removal and compaction.
pub const FILE_OPS_IN_FLIGHT_MAX: usize = 4;

/// A sealed segment's index and the checkpoint are written in chunks of this size, one in
/// flight, so sealing interleaves with commits instead of queueing ahead of them.
pub const SEAL_CHUNK_SIZE: usize = 1024 * 1024;

/// Default size of a shard's cache of sealed-index pages, in 4 KiB pages: 32 MiB, which holds
/// the slots of 4 million sealed entries (511 per page), enough for a small host's catch-up
/// readers; each miss costs one 4 KiB read.
pub const INDEX_CACHE_PAGES_DEFAULT: usize = 8192;
/// Largest configurable index page cache per shard: 4 GiB.
pub const INDEX_CACHE_PAGES_MAX: usize = 1024 * 1024;

/// Bytes of compaction's copy buffer: one batch of a segment's live records, re-ordered by
/// (ledger, entry) before it is written. At least the largest record. Its size is the run
/// length a sorted segment gives each ledger (about this over the ledgers written together):
/// with 8 MiB, a segment of 50 ledgers gave runs of 160 KiB, so a 1 MiB read-ahead window
/// held mostly other ledgers, and one ledger read cold at 73 MB/s; with 64 MiB, 216 MB/s
/// (docs/durability.md, "Sorted segments").
pub const COMPACTION_BUFFER_SIZE: usize = 64 * 1024 * 1024;
/// Bytes of compaction's read window: records of the old segment close together are read in
/// one O_DIRECT read of up to this size. At least the largest record and a sector.
pub const COMPACTION_WINDOW_SIZE: usize = READ_BUFFER_SIZE;
/// Most bytes in one compaction (or sorting) read or write, unless one record is larger: a
/// commit submitted behind it waits for at most this much of the disk's bandwidth, and the
/// shard's work on each completion (checking and placing the records read) stays well under
/// a millisecond. With the whole 8 MiB batch in one write, 250k 1 KiB adds/s had p99 17 ms
/// while a segment was sorted; in 1 MiB steps, 4 ms. Sorting beside 60k adds/s (2026-12-06,
/// 45 s each): p99 4.2 ms in 1 MiB steps, 3.0 ms in 256 KiB, 2.7 ms in 128 KiB, 1.2 ms with
/// no sort (docs/durability.md, "Sorted segments").
pub const COMPACTION_IO_SIZE_MAX: usize = 128 * 1024;
/// Most records in one compaction batch (bounds its transient 12-byte-per-record sort array).
pub const COMPACTION_BATCH_RECORDS_MAX: usize = 512 * 1024;
const _: () = assert!(COMPACTION_BUFFER_SIZE >= RECORD_SIZE_MAX + SECTOR_SIZE);
const _: () = assert!(COMPACTION_WINDOW_SIZE >= RECORD_SIZE_MAX + SECTOR_SIZE);
const _: () = assert!(
    COMPACTION_IO_SIZE_MAX % SECTOR_SIZE == 0 && COMPACTION_IO_SIZE_MAX <= COMPACTION_BUFFER_SIZE
);
/// Default compaction thresholds, in thousandths of a segment's file size that is live:
/// BookKeeper's minor (0.2) and major (0.8) compaction thresholds. The major one applies
/// while the disk is full.
pub const COMPACTION_THRESHOLD_MINOR_PER_MILLE_DEFAULT: u32 = 200;
pub const COMPACTION_THRESHOLD_MAJOR_PER_MILLE_DEFAULT: u32 = 800;
/// Default bytes a journal leaves free on its file system: it creates no segment that would
/// leave less (it turns read-only instead), so the files that sealing and deletions write
/// (index files, checkpoints: a checkpoint is written beside the one it replaces) always find
/// room on a disk the journal filled, and a full disk can give space back by itself. The index
/// file of a full default-size segment of the smallest entries (about 112 bytes a record) is
/// about 20 MiB; 128 MiB holds that several times over. BookKeeper keeps 100 MiB free for
/// its index files (`minUsableSizeForIndexFileCreation`).
pub const DISK_RESERVE_DEFAULT: u64 = 128 * 1024 * 1024;
/// Largest configurable reserve: 1 TiB.
pub const DISK_RESERVE_MAX: u64 = 1024 * 1024 * 1024 * 1024;

/// Free space, in percent of the file system, below which disk pressure starts
/// (`Config::disk_pressure_percent`). BookKeeper's `diskUsageWarnThreshold` (0.90 used) starts
/// its forced collection at 10% free, with major thresholds at once; ringlog starts earlier
/// and ramps, so a churning bookie compacts half-live segments long before it would stall.
pub const DISK_PRESSURE_PERCENT_DEFAULT: u32 = 20;
/// Largest configurable pressure start: 90% free.
pub const DISK_PRESSURE_PERCENT_MAX: u32 = 90;
/// How long adds wait for compaction or removals to give space back, with neither making
/// progress, before the journal turns read-only (EREADONLY): a BookKeeper client's add times
/// out after a few seconds, and a read-only bookie lets it change ensembles instead.
pub const SPACE_WAIT_PROGRESS_MS_MAX: u64 = 2_000;

/// Bytes of dead segments' files a journal keeps by default to reuse as its next segments
/// (`Config::segment_recycle_max` is this over the segment size, `segment_recycle_default`).
/// Under churn a collector round frees a whole generation of ledgers at once while the write
/// head needs a new segment every few seconds: reusing them saves the unlink (ext4 frees the
/// extents in its journal, and with `discard` sends them to the device, which commits'
/// fdatasyncs wait behind), the fallocate, and zero-ahead's write of every block
/// (docs/churn.md). A Pulsar-like churn at 150 MB/s a shard frees about 1.3 GB a shard per
/// generation; a budget of 16 segments of 64 MiB (1 GiB) let a quarter of them be unlinked
/// each round, and each round's unlinks raised that second's add p99 2-3x. A budget in bytes,
/// not a count, because what a round frees is bytes: 16 default (256 MiB) segments, 64 of
/// 64 MiB. Kept segments nobody reuses are removed after `SEGMENT_RECYCLE_IDLE_PACES`, or
/// `SEGMENT_RECYCLE_WRITE_IDLE_PACES` once nothing is written.
pub const SEGMENT_RECYCLE_BYTES_DEFAULT: u64 = 4 * 1024 * 1024 * 1024;
/// Largest configurable `segment_recycle_max` (and the default's bound for small segments).
pub const SEGMENT_RECYCLE_MAX: usize = 64;
/// Removal paces (`Journal::removal_pace`, the server's 100 ms tick) without a reuse after
/// which the dead segments kept for reuse are removed like the others: 10 s.
pub const SEGMENT_RECYCLE_IDLE_PACES: u32 = 100;
/// Removal paces without a byte committed after which the dead segments kept for reuse are
/// removed like the others: 1 s. A bookie whose writes stopped (a deletion after the last
/// add, a quiet tenant) gets its space back at once, not after the reuse idle time.
pub const SEGMENT_RECYCLE_WRITE_IDLE_PACES: u32 = 10;

/// Zero-fill of a new segment goes in chunks of this size, one in flight, so preparation never
/// monopolises the disk queue while commits are running.
pub const ZERO_CHUNK_SIZE: usize = 1024 * 1024;

/// Entries of one ledger must be dense enough for the index's array: an add more than this many
/// ids beyond the ledger's highest entry is refused (BookKeeper clients add sequentially).
pub const ENTRY_GAP_MAX: u64 = 1024 * 1024;

/// Master key length fixed by the BookKeeper protocol (SHA-1 digest), declared by `wire`.
pub use wire::MASTER_KEY_SIZE;

/// How many bytes past the first bad record recovery inspects to tell a torn tail from
/// corruption: everything that can be in flight at a crash, plus one largest record.
pub const RECOVERY_WINDOW_SIZE: usize = COMMITS_IN_FLIGHT_MAX * BATCH_BYTES_MAX + RECORD_SIZE_MAX;

/// Recovery reads segments in chunks of this size.
pub const RECOVERY_CHUNK_SIZE: usize = 8 * 1024 * 1024;

const fn align_up_const(value: usize, alignment: usize) -> usize {
    value.div_ceil(alignment) * alignment
}

const _: () = assert!(SECTOR_SIZE.is_power_of_two());
const _: () = assert!(RECORD_ALIGNMENT.is_power_of_two());
const _: () = assert!(SECTOR_SIZE % RECORD_ALIGNMENT == 0);
const _: () = assert!(SECTOR_SIZE % COMMIT_BLOCK_SMALL_SIZE == 0);
const _: () = assert!(COMMIT_BLOCK_SMALL_SIZE % RECORD_ALIGNMENT == 0);
const _: () = assert!(COMMIT_BLOCK_SMALL_SIZE >= RECORD_HEADER_SIZE);
const _: () = assert!(RECORD_HEADER_SIZE % RECORD_ALIGNMENT == 0);
const _: () = assert!(BATCH_BYTES_MAX % SECTOR_SIZE == 0);
const _: () = assert!(BATCH_BYTES_MAX >= RECORD_SIZE_MAX + SECTOR_SIZE);
const _: () = assert!(SEGMENT_SIZE_MIN % SECTOR_SIZE as u64 == 0);
const _: () = assert!(SEGMENT_SIZE_MAX % SECTOR_SIZE as u64 == 0);
const _: () = assert!(SEGMENT_SIZE_DEFAULT % SECTOR_SIZE as u64 == 0);
const _: () = assert!(SEGMENT_SIZE_MAX <= u32::MAX as u64);
const _: () = assert!(ZERO_CHUNK_SIZE % SECTOR_SIZE == 0);
const _: () = assert!(SEAL_CHUNK_SIZE % SECTOR_SIZE == 0);
const _: () = assert!(SEAL_CHUNK_SIZE <= RECOVERY_CHUNK_SIZE);
const _: () = assert!(INDEX_CACHE_PAGES_DEFAULT <= INDEX_CACHE_PAGES_MAX);
const _: () = assert!(DISK_RESERVE_DEFAULT <= DISK_RESERVE_MAX);
const _: () = assert!(SEGMENT_RECYCLE_WRITE_IDLE_PACES < SEGMENT_RECYCLE_IDLE_PACES);
const _: () = assert!(RECOVERY_CHUNK_SIZE % SECTOR_SIZE == 0);
const _: () = assert!(READ_BUFFER_SIZE % SECTOR_SIZE == 0);
// A read slot's buffer takes two index pages at once (`journal/reads/resolve.rs`).
const _: () = assert!(READ_BUFFER_SIZE >= 2 * SECTOR_SIZE);
const _: () = assert!(READ_AHEAD_WINDOW_SIZE % SECTOR_SIZE == 0);
const _: () = assert!(READ_AHEAD_WINDOWS_DEFAULT <= READ_AHEAD_WINDOWS_MAX);
const _: () = assert!(READ_PACE_PERCENT_DEFAULT <= READ_PACE_PERCENT_MAX);
const _: () = assert!(COMMITS_IN_FLIGHT_DEFAULT <= COMMITS_IN_FLIGHT_MAX);
const _: () = assert!(READ_CACHE_BUFFERS_DEFAULT <= READ_CACHE_BUFFERS_MAX);

/// Largest busy-poll budget a caller of `Ring::busy_poll` may configure (`--busy-poll-us` of
/// the server and of ringlog-bench): beyond a few milliseconds polling only burns CPU.
pub const BUSY_POLL_US_MAX: u64 = 10_000;

/// A busy-poll check (one `io_uring_enter`, one `sched_yield`) normally takes a few
/// microseconds, and a kernel worker that the yield lets run (the `dio/<disk>` kworker that
/// completes a RWF_DSYNC write, an io-wq worker) takes tens. A check that took longer than
/// this means another thread held the core for a time slice: a neighbour that needs the core,
/// which a spinning thread only delays (docs/durability.md, "Busy polling and neighbours").
pub const BUSY_POLL_GAP_US_MAX: u64 = 200;

/// Zero-fill writes in flight while preparing a segment (8 x 1 MiB).
pub const ZERO_WRITES_IN_FLIGHT_MAX: usize = 8;
/// Zero-ahead keeps up to this many bytes past the write head of the active segment
/// written with zeros (see `journal/zero_ahead.rs`).
pub const ZERO_AHEAD_WINDOW_MAX: u64 = 32 * 1024 * 1024;
/// Zero-ahead writes chunks of `ZERO_CHUNK_SIZE`, or a sixteenth of a small segment (so
/// the simulation's small segments exercise it too), and never starts one closer than one
/// chunk to the write head, so a small staging commit does not run into the chunk in flight.
pub const ZERO_AHEAD_CHUNKS_PER_SEGMENT_MIN: u64 = 16;

// Preparation makes progress: at least one zero write is in flight.
const _: () = assert!(ZERO_WRITES_IN_FLIGHT_MAX > 0);
// The window holds whole sectors and at least one full chunk.
const _: () = assert!(ZERO_AHEAD_WINDOW_MAX % SECTOR_SIZE as u64 == 0);
const _: () = assert!(ZERO_AHEAD_WINDOW_MAX >= ZERO_CHUNK_SIZE as u64);
// Even the smallest segment's zero-ahead chunk is at least one sector.
const _: () = assert!(SEGMENT_SIZE_MIN / ZERO_AHEAD_CHUNKS_PER_SEGMENT_MIN >= SECTOR_SIZE as u64);

/// The scrubber's reads (docs/scrub.md): 1 MiB at a time, more only for a record larger than
/// that.
pub const SCRUB_READ_SIZE: usize = 1024 * 1024;
/// The scrubber's one buffer: the largest record and a sector (a record is checked whole), or
/// one read if that is more.
pub const SCRUB_BUFFER_SIZE: usize = if READ_BUFFER_SIZE > SCRUB_READ_SIZE {
    READ_BUFFER_SIZE
} else {
    SCRUB_READ_SIZE
};
/// Default of `Config::scrub_rate_max` (`--scrub-rate-mib`): 4 MiB/s a shard, a few percent
/// of this host's disk, and a full 4 TB disk of two shards in under a week.
pub const SCRUB_RATE_MAX_DEFAULT: u64 = 4 * 1024 * 1024;
/// Default of `Config::scrub_cycle_ms` (`--scrub-cycle-hours`): one week.
pub const SCRUB_CYCLE_MS_DEFAULT: u64 = 168 * 3600 * 1000;
/// The scrubber asks for a checkpoint (which carries its position) after this many segments
/// checked, if sealing wrote none meanwhile: a restart checks at most this many again.
pub const SCRUB_CHECKPOINT_SEGMENTS: u32 = 16;
/// `Event::Damage` reports at most this many findings without an entry per scrub read (a
/// segment of garbage would otherwise flood the log); the counters count them all. Findings
/// that name an entry are all reported: each asks for a repair (the server caps its log
/// lines instead).
pub const SCRUB_DAMAGE_EVENTS_PER_READ_MAX: usize = 16;

/// Ranges without a sound record header the scrubber remembers per segment, to name the
/// entries the index places there (a second pass over the slot pages); past it, damage is
/// reported without its entries (and so not repaired).
pub const SCRUB_DAMAGED_RANGES_MAX: usize = 64;

/// Ledgers whose digest type one scrub read may learn (`digest.rs`); more are learned by
/// later reads.
pub const SCRUB_LEARNED_MAX: usize = 64;

const _: () = assert!(SCRUB_READ_SIZE % SECTOR_SIZE == 0);
const _: () = assert!(SCRUB_BUFFER_SIZE % SECTOR_SIZE == 0);
const _: () = assert!(SCRUB_BUFFER_SIZE >= RECORD_SIZE_MAX + SECTOR_SIZE);
