//! `Stats`: the journal's counters, for reports, metrics and tests. Never used for a
//! decision.

use crate::histogram::Log2Histogram;

/// Counters, for reports and tests.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Commits submitted.
    pub commits: u64,
    /// Commits durable.
    pub commits_durable: u64,
    /// Records staged (entries and meta records).
    pub records: u64,
    /// Entry records made durable.
    pub entries_durable: u64,
    /// Bytes written by commits, padding included.
    pub bytes_written: u64,
    /// Times an add was refused for lack of staging room (backpressure).
    pub staging_full: u64,
    /// Times the write head found no segment and none could be created while space could
    /// still come back (adds waited instead of being refused), and the time spent so, in
    /// microseconds (`journal/pressure.rs`).
    pub space_waits: u64,
    pub space_wait_us_total: u64,
    /// The disk-pressure level last read, in thousandths (a gauge).
    pub disk_pressure_per_mille: u64,
    /// Segments created after open.
    pub segments_created: u64,
    /// Times segment creation failed (disk full).
    pub segment_create_failures: u64,
    /// Reads served from the in-memory commit buffers.
    pub reads_cached: u64,
    /// Reads that went to disk alone (a read of its own record).
    pub reads_disk: u64,
    /// Reads served from a read-ahead window (in memory, or waiting on its read).
    pub reads_read_ahead: u64,
    /// Read-ahead windows read (`READ_AHEAD_WINDOW_SIZE` each, less at a segment's end).
    pub read_ahead_windows: u64,
    /// The scrubber (`scrub.rs`): bytes read, segments checked, full cycles, damage found in
    /// records (and segment headers) and in index files, and reads that failed.
    pub scrub_bytes: u64,
    pub scrub_segments: u64,
    pub scrub_cycles_completed: u64,
    pub scrub_damage_records: u64,
    pub scrub_damage_index: u64,
    pub scrub_read_failures: u64,
    /// Damaged records found again after a repair wrote their entry elsewhere (or after the
    /// entry was deleted): no longer read, not reported again.
    pub scrub_damage_superseded: u64,
    /// Entries whose record is sound but whose client digest is not (`digest.rs`): found on
    /// add (`Config::verify_digest_on_add`) and by the scrubber.
    pub digest_mismatches_on_add: u64,
    pub scrub_damage_digests: u64,
    /// Bytes the disk read for reads: their own records, index pages and read-ahead windows.
    pub read_disk_bytes: u64,
    /// Reads that waited for the pace to admit their window (`read_pace.rs`).
    pub reads_paced: u64,
    /// Disk reads whose record failed verification (each is retried once).
    pub read_checksum_failures: u64,
    /// Torn tails truncated at open.
    pub torn_tail_truncations: u64,
    /// Sum over submitted commits of the time from opening the commit for staging to
    /// submitting it (staging, then waiting for a free commit slot), in microseconds.
    pub commit_staging_us_total: u64,
    /// Sum over durable commits of the time from submission to durable (write, fdatasync,
    /// and waiting for earlier commits), in microseconds.
    pub commit_io_us_total: u64,
    /// The same two stages commit by commit, in microseconds (the server's `/metrics`).
    pub commit_staging_us: Log2Histogram,
    pub commit_io_us: Log2Histogram,
    /// Per commit, from submission until its own write and sync completed (without the wait
    /// for earlier commits): what the disk took, in microseconds.
    pub commit_disk_us: Log2Histogram,
    /// Records and bytes (padding included) per submitted commit: the group commit's size.
    pub commit_records: Log2Histogram,
    pub commit_bytes: Log2Histogram,
    /// Syncs completed: an RWF_DSYNC write or an fdatasync, one per durable commit.
    pub syncs: u64,
    /// Bytes of the active segment zeroed ahead of the write head.
    pub zero_ahead_bytes: u64,
    /// Commits held back one turn because they reached into a zero-ahead write in flight.
    pub zero_ahead_waits: u64,
    /// Zero-ahead writes that failed (zero-ahead then stops; nothing else depends on it).
    pub zero_ahead_failures: u64,
    /// Segments sealed (index durable) after open.
    pub segments_sealed: u64,
    /// Bytes of index files written by sealing.
    pub index_bytes_written: u64,
    /// Checkpoints written after open.
    pub checkpoints_written: u64,
    /// Sealing steps that failed (retried later; nothing acknowledged depends on them).
    pub seal_failures: u64,
    /// Removals of dead segments that failed (tried again later).
    pub segment_removal_failures: u64,
    /// Index pages read from disk for reads of sealed entries.
    pub index_page_reads: u64,
    /// Index pages found in the cache.
    pub index_page_hits: u64,
    /// Ledgers deleted after open.
    pub ledgers_deleted: u64,
    /// Sealed segments removed because nothing in them was live, and their bytes.
    pub segments_removed: u64,
    pub segment_bytes_removed: u64,
    /// Sealed segments with nothing live whose files became new segments (not counted in
    /// `segments_removed`: their bytes stay allocated).
    pub segments_recycled: u64,
    /// Compaction jobs started, and finished (the copy replaced its segment).
    pub compactions_started: u64,
    pub compactions_done: u64,
    /// Of the jobs started, those that sort a segment still in commit order
    /// (`Config::sort_sealed`), not reclaim a mostly dead one.
    pub compactions_sorting: u64,
    /// Sorting jobs dropped while paused, because space was needed (`compact.rs`).
    pub compactions_sorting_dropped: u64,
    /// Bytes compaction wrote (copies and their indexes), and segment file bytes it gave back.
    pub compaction_bytes_written: u64,
    pub compaction_bytes_freed: u64,
    /// Bytes compaction read back: slot pages and the records it copies.
    pub compaction_bytes_read: u64,
    /// Compaction jobs abandoned after an I/O error (retried later).
    pub compaction_failures: u64,
    /// Segments taken out of compaction because a record or index page failed its check.
    pub compaction_refusals: u64,
    /// File creations (with their fallocate) and publications (rename and directory fsync)
    /// of segments, indexes and checkpoints: the calls that block the shard's thread.
    pub metadata_calls: u64,
    /// Their total and longest time, in microseconds.
    pub metadata_us_total: u64,
    pub metadata_us_max: u64,
}

impl Stats {
    /// Runs a blocking file-system metadata call and counts its time.
    pub(super) fn metadata_timed<T>(&mut self, call: impl FnOnce() -> T) -> T {
        let started = std::time::Instant::now();
        let result = call();
        let us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
        self.metadata_calls += 1;
        self.metadata_us_total += us;
        self.metadata_us_max = self.metadata_us_max.max(us);
        result
    }
}
