//! Runtime configuration of a journal, validated once before the first byte moves.

use crate::constants::{
    COMMITS_IN_FLIGHT_DEFAULT, COMMITS_IN_FLIGHT_MAX, COMMIT_OVERLAP_BYTES_MIN_DEFAULT,
    COMMIT_OVERLAP_BYTES_MIN_MAX, COMPACTION_BUFFER_SIZE, COMPACTION_IO_SIZE_MAX,
    COMPACTION_THRESHOLD_MAJOR_PER_MILLE_DEFAULT, COMPACTION_THRESHOLD_MINOR_PER_MILLE_DEFAULT,
    DISK_PRESSURE_PERCENT_DEFAULT, DISK_PRESSURE_PERCENT_MAX, DISK_RESERVE_DEFAULT,
    DISK_RESERVE_MAX, INDEX_CACHE_PAGES_DEFAULT, INDEX_CACHE_PAGES_MAX, READS_IN_FLIGHT_MAX,
    READ_AHEAD_WINDOWS_DEFAULT, READ_AHEAD_WINDOWS_MAX, READ_CACHE_BUFFERS_DEFAULT,
    READ_CACHE_BUFFERS_MAX, READ_PACE_PERCENT_DEFAULT, READ_PACE_PERCENT_MAX, RECORD_SIZE_MAX,
    SCRUB_CYCLE_MS_DEFAULT, SCRUB_RATE_MAX_DEFAULT, SECTOR_SIZE, SEGMENT_RECYCLE_BYTES_DEFAULT,
    SEGMENT_RECYCLE_MAX, SEGMENT_SIZE_DEFAULT, SEGMENT_SIZE_MAX, SEGMENT_SIZE_MIN,
};

use crate::segment::CommitBlock;

/// How a commit is made durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncMode {
    /// One O_DIRECT write linked (IOSQE_IO_LINK) to an fdatasync, which runs on an io-wq
    /// worker: one more thread hand-off per commit than `Dsync`.
    LinkedFdatasync,
    /// One O_DIRECT write with RWF_DSYNC: a single SQE, one completion, durable when it
    /// succeeds (the kernel syncs the written range and the metadata needed to read it, as
    /// fdatasync would). Default: measured here 15-25% faster at one commit in flight and as
    /// fast or faster under load (docs/durability.md). Commits holding deferred (DEFERRED_SYNC)
    /// records still go as a write linked to an fdatasync, so those records are acked when
    /// the write lands.
    Dsync,
}

/// Journal settings. Every field documents its default and bounds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Bytes per segment file. Default: 256 MiB. Bounds: 64 KiB ..= 4 GiB - 4 KiB, a multiple
    /// of 4 KiB and at least two largest batches... (checked: ≥ `SEGMENT_SIZE_MIN`).
    pub segment_size: u64,
    /// Commits allowed in flight at once. Default: 2. Bounds: 1 ..= 4.
    pub commits_in_flight_max: usize,
    /// Bytes of records a commit needs to be submitted while another is in flight; a smaller
    /// one waits for the commits in flight to complete. Default: 0, every batch goes as soon
    /// as a slot is free (`COMMIT_OVERLAP_BYTES_MIN_DEFAULT`). Bounds: 0 ..=
    /// `COMMIT_OVERLAP_BYTES_MIN_MAX`.
    pub commit_overlap_bytes_min: usize,
    /// What each commit is padded to, in the segments this journal creates from now on (the
    /// active segment keeps the block its header names). Default: `CommitBlock::Sector`
    /// (4 KiB, the physical sector: no commit ever writes into a sector that holds
    /// acknowledged records). `Small` (512 bytes) pads about 1.8 KiB less a commit; it needs
    /// a disk that takes 512-byte O_DIRECT writes (checked at open) and whose writes of part
    /// of a physical sector never disturb the rest of it, as a flash device's out-of-place
    /// writes do (docs/durability.md, "Commit padding").
    pub commit_block: CommitBlock,
    /// How commits become durable. Default: `Dsync`.
    pub sync_mode: SyncMode,
    /// Recent commit buffers kept to serve tailing reads from memory. Default: 2. Bounds:
    /// 0 ..= 16.
    pub read_cache_buffers: usize,
    /// Disk reads in flight. Default: 16. Bounds: 1 ..= 64.
    pub reads_in_flight_max: usize,
    /// Overwrite new segments with zeros after `fallocate` (true), or leave them as
    /// unwritten extents that read as zeros (false). Default: see `SEGMENT_ZERO_FILL_DEFAULT`.
    pub segment_zero_fill: bool,
    /// While the journal is not busy, zero the active segment ahead of the write head so
    /// commits land on written blocks (no extent conversion in their fdatasync). Ignored with
    /// `segment_zero_fill`. Default: true.
    pub zero_ahead: bool,
    /// Pages (4 KiB) of sealed-segment index kept in memory per journal. Default: 8192
    /// (32 MiB). Bounds: 0 ..= 1048576. 0 reads an index page for every sealed read.
    pub index_cache_pages: usize,
    /// A sealed segment whose live bytes are fewer than this many thousandths of its file is
    /// compacted. Default: 200 (BookKeeper's minor threshold, 0.2). Bounds: 0 ..= 1000; 0
    /// turns compaction off while the disk has room.
    pub compaction_threshold_minor_per_mille: u32,
    /// The same while the journal is read-only for a full disk. Default: 800 (BookKeeper's
    /// major threshold). Bounds: 0 ..= 1000.
    pub compaction_threshold_major_per_mille: u32,
    /// Bytes of the file system left free: a segment is created only if at least this much
    /// stays free after it (else the journal is read-only until space comes back), so index
    /// files and checkpoints always have room (`Disk::space_free`). 0 leaves it to the
    /// allocation. Default: 128 MiB (`DISK_RESERVE_DEFAULT`). Bounds: 0 ..= 1 TiB.
    pub disk_reserve: u64,
    /// Disk pressure starts when the file system's free space falls below this many percent
    /// of its size (and at least one segment above the reserve and the next segment): from
    /// there to the reserve plus one segment, compaction's threshold rises from the minor to
    /// the major one, the recycle pool shrinks to one file, compaction takes turns from the
    /// commits, and at the reserve adds wait for compaction rather than being refused while
    /// it can still free space (`journal/pressure.rs`, docs/gc.md "Disk pressure").
    /// Default: 20 (`DISK_PRESSURE_PERCENT_DEFAULT`). Bounds: 0 ..= 90; 0 turns the ramp off
    /// (adds still wait for space compaction can free).
    pub disk_pressure_percent: u32,
    /// Sealed segments left with nothing live (every ledger in them deleted) that are kept,
    /// up to this many, to become the next segments instead of being unlinked while new ones
    /// are allocated (`journal/dead.rs`); kept ones are removed too once none was reused for
    /// `SEGMENT_RECYCLE_IDLE_PACES` removal paces, or `SEGMENT_RECYCLE_WRITE_IDLE_PACES` with
    /// nothing committed. Default: 4 GiB of segments (`segment_recycle_default`), 16 of the
    /// default size. Bounds: 0 ..= 64; 0 unlinks every dead segment and allocates every new one.
    pub segment_recycle_max: usize,
    /// Read-ahead windows (`READ_AHEAD_WINDOW_SIZE`, 1 MiB, each) kept per journal for
    /// sequential readers: a read that follows the previous one of its ledger reads a whole
    /// window, and later reads inside it are served from memory (`journal/read_ahead.rs`).
    /// Default: 64 (`READ_AHEAD_WINDOWS_DEFAULT`). Bounds: 0 ..= 1024; 0 reads every entry
    /// alone.
    pub read_ahead_windows: usize,
    /// While pacing is on (`Journal::read_pace_set`: the server turns it on while its commits
    /// queue on the disk), read-ahead windows start only as fast as every durable commit earns
    /// this percent of its bytes; reads that need a window wait for it
    /// (`journal/read_pace.rs`). Default: 25 (`READ_PACE_PERCENT_DEFAULT`). Bounds: 0 ..= 100;
    /// 0 never paces.
    pub read_pace_percent: u32,
    /// Rewrite every sealed segment that holds entries of two or more ledgers, once, with its
    /// entries in (ledger, entry) order (compaction's copy, within its rate), so a catch-up
    /// read of one ledger reads contiguous bytes. Costs up to one more write of the data
    /// (docs/durability.md, "Sorted segments"). Default: true.
    pub sort_sealed: bool,
    /// Bytes of compaction's copy buffer: the batch a segment is sorted in, so the run
    /// length a sorted segment gives each ledger. Not a server option (the default is what
    /// the catch-up reads were measured with); tests set it below their segment size to
    /// sort segments batch by batch. Default and bound: 64 MiB (`COMPACTION_BUFFER_SIZE`);
    /// at least the largest record and a sector (about 5 MiB), a whole number of sectors.
    pub compaction_buffer_size: usize,
    /// The scrubber's highest read rate, bytes a second (docs/scrub.md); 0 turns the scrubber
    /// off. Default: `SCRUB_RATE_MAX_DEFAULT` (4 MiB/s).
    pub scrub_rate_max: u64,
    /// How long a full scrub cycle should take: the scrubber reads the sealed bytes over this
    /// time, up to `scrub_rate_max`. Default: one week.
    pub scrub_cycle_ms: u64,
    /// Checks the client's digest of every add whose ledger's digest type is known (CRC32,
    /// CRC32C: `digest.rs`), and learns it from the first bodies; a mismatch is reported as
    /// damage (the entry is stored and acknowledged as the client sent it). Default: false.
    pub verify_digest_on_add: bool,
    /// Picks the segment a journal's first scrub cycle starts at (the server draws it at
    /// random; tests fix it).
    pub scrub_seed: u64,
}

/// Default: no zero-fill. Measured here (docs/durability.md): zero-filling a 1 GiB segment
/// while commits run made every flush wait behind the zeros (2-4 s stalls at each rollover,
/// seed-workload p99 2.2 s) and made a fresh start take 11 s. Zero-ahead (`zero_ahead`) gets
/// the written-block commit latency without either cost.
pub const SEGMENT_ZERO_FILL_DEFAULT: bool = false;

/// The default `Config::segment_recycle_max` for segments of `segment_size` bytes:
/// `SEGMENT_RECYCLE_BYTES_DEFAULT` of them, at least one, at most `SEGMENT_RECYCLE_MAX`.
#[must_use]
pub fn segment_recycle_default(segment_size: u64) -> usize {
    let count = SEGMENT_RECYCLE_BYTES_DEFAULT / segment_size.max(1);
    usize::try_from(count).map_or(SEGMENT_RECYCLE_MAX, |count| {
        count.clamp(1, SEGMENT_RECYCLE_MAX)
    })
}

impl Default for Config {
    fn default() -> Config {
        Config {
            segment_size: SEGMENT_SIZE_DEFAULT,
            commits_in_flight_max: COMMITS_IN_FLIGHT_DEFAULT,
            commit_overlap_bytes_min: COMMIT_OVERLAP_BYTES_MIN_DEFAULT,
            commit_block: CommitBlock::Sector,
            sync_mode: SyncMode::Dsync,
            read_cache_buffers: READ_CACHE_BUFFERS_DEFAULT,
            reads_in_flight_max: 16,
            segment_zero_fill: SEGMENT_ZERO_FILL_DEFAULT,
            zero_ahead: true,
            index_cache_pages: INDEX_CACHE_PAGES_DEFAULT,
            compaction_threshold_minor_per_mille: COMPACTION_THRESHOLD_MINOR_PER_MILLE_DEFAULT,
            compaction_threshold_major_per_mille: COMPACTION_THRESHOLD_MAJOR_PER_MILLE_DEFAULT,
            disk_reserve: DISK_RESERVE_DEFAULT,
            disk_pressure_percent: DISK_PRESSURE_PERCENT_DEFAULT,
            segment_recycle_max: segment_recycle_default(SEGMENT_SIZE_DEFAULT),
            read_ahead_windows: READ_AHEAD_WINDOWS_DEFAULT,
            read_pace_percent: READ_PACE_PERCENT_DEFAULT,
            sort_sealed: true,
            compaction_buffer_size: COMPACTION_BUFFER_SIZE,
            scrub_rate_max: SCRUB_RATE_MAX_DEFAULT,
            scrub_cycle_ms: SCRUB_CYCLE_MS_DEFAULT,
            scrub_seed: 0,
            verify_digest_on_add: false,
        }
    }
}

/// A configuration value out of bounds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// The field.
    pub field: &'static str,
    /// The bounds it must meet.
    pub expected: &'static str,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "invalid {}: must be {}", self.field, self.expected)
    }
}

impl std::error::Error for ConfigError {}

impl Config {
    /// Checks every bound; called by `Journal::open`.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let segment_ok = (SEGMENT_SIZE_MIN..=SEGMENT_SIZE_MAX).contains(&self.segment_size)
            && self.segment_size % SECTOR_SIZE as u64 == 0;
        if !segment_ok {
            let expected = "a multiple of 4096 between 65536 and 4294963200";
            return Err(ConfigError {
                field: "segment_size",
                expected,
            });
        }
        if !(1..=COMMITS_IN_FLIGHT_MAX).contains(&self.commits_in_flight_max) {
            return Err(ConfigError {
                field: "commits_in_flight_max",
                expected: "1..=4",
            });
        }
        if self.commit_overlap_bytes_min > COMMIT_OVERLAP_BYTES_MIN_MAX {
            return Err(ConfigError {
                field: "commit_overlap_bytes_min",
                expected: "0..=8388608",
            });
        }
        if self.read_cache_buffers > READ_CACHE_BUFFERS_MAX {
            return Err(ConfigError {
                field: "read_cache_buffers",
                expected: "0..=16",
            });
        }
        if !(1..=READS_IN_FLIGHT_MAX).contains(&self.reads_in_flight_max) {
            return Err(ConfigError {
                field: "reads_in_flight_max",
                expected: "1..=64",
            });
        }
        if self.index_cache_pages > INDEX_CACHE_PAGES_MAX {
            return Err(ConfigError {
                field: "index_cache_pages",
                expected: "0..=1048576",
            });
        }
        let per_mille = [
            self.compaction_threshold_minor_per_mille,
            self.compaction_threshold_major_per_mille,
        ];
        if per_mille.iter().any(|&value| value > 1000) {
            return Err(ConfigError {
                field: "compaction_threshold",
                expected: "0..=1000 thousandths",
            });
        }
        if self.disk_reserve > DISK_RESERVE_MAX {
            return Err(ConfigError {
                field: "disk_reserve",
                expected: "0..=1099511627776",
            });
        }
        if self.disk_pressure_percent > DISK_PRESSURE_PERCENT_MAX {
            return Err(ConfigError {
                field: "disk_pressure_percent",
                expected: "0..=90",
            });
        }
        if self.segment_recycle_max > SEGMENT_RECYCLE_MAX {
            return Err(ConfigError {
                field: "segment_recycle_max",
                expected: "0..=64",
            });
        }
        if self.read_ahead_windows > READ_AHEAD_WINDOWS_MAX {
            return Err(ConfigError {
                field: "read_ahead_windows",
                expected: "0..=1024",
            });
        }
        if self.read_pace_percent > READ_PACE_PERCENT_MAX {
            return Err(ConfigError {
                field: "read_pace_percent",
                expected: "0..=100",
            });
        }
        // The largest record and a sector (a batch holds at least one record), and whole
        // compaction writes.
        let buffer_min = (RECORD_SIZE_MAX + SECTOR_SIZE).max(COMPACTION_IO_SIZE_MAX);
        if !(buffer_min..=COMPACTION_BUFFER_SIZE).contains(&self.compaction_buffer_size)
            || self.compaction_buffer_size % SECTOR_SIZE != 0
        {
            return Err(ConfigError {
                field: "compaction_buffer_size",
                expected: "the largest record and a sector ..= 67108864, a multiple of 4096",
            });
        }
        if self.scrub_cycle_ms == 0 {
            return Err(ConfigError {
                field: "scrub_cycle_ms",
                expected: "at least 1",
            });
        }
        Ok(())
    }
}
