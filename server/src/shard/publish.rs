//! Publishing the shard's numbers for `/metrics` (metrics.rs): on the tick, never per add.

use super::Shard;
use crate::metrics::{HistogramId, ShardScalars, ShardValues};

impl Shard {
    /// Copies the shard's counters, histograms and gauges into its block, with relaxed
    /// stores: the values live on this thread's stack meanwhile, nothing is allocated.
    pub(super) fn metrics_publish(&self) {
        let values = self.metrics_values();
        self.metrics.shard(usize::from(self.id)).store(&values);
    }

    fn metrics_values(&self) -> ShardValues {
        let stats = &self.bookie.stats;
        let journal = self.bookie.journal.stats();
        let scrub = self.bookie.journal.scrub_state();
        let index = self.bookie.journal.index();
        let count = |value: usize| u64::try_from(value).expect("usize fits u64");
        // Sealed segments: their files' sizes and live bytes; the walk is over segments (a
        // few thousand at most), once per tick.
        let (mut segments_sealed, mut sealed_bytes, mut sealed_live_bytes) = (0u64, 0u64, 0u64);
        for segment in index.sealed_segments() {
            if let Some(table) = index.sealed_segment(segment) {
                segments_sealed += 1;
                sealed_bytes += table.file_size;
                sealed_live_bytes += table.bytes_live;
            }
        }
        let segments_unsealed = count(self.bookie.journal.segments_unsealed());
        let scalars = ShardScalars {
            adds: stats.adds,
            add_bytes: stats.add_bytes,
            reads: stats.reads,
            read_bytes: stats.read_bytes,
            commits: journal.commits,
            commits_durable: journal.commits_durable,
            syncs: journal.syncs,
            entries_durable: journal.entries_durable,
            bytes_written: journal.bytes_written,
            connections_accepted: stats.connections_accepted,
            connections_open: count(self.connections.active.len()),
            connections_rejected: stats.connections_rejected,
            connections_invalid: stats.connections_invalid,
            connections_idle: stats.connections_idle,
            tls_sessions_started: stats.tls_sessions_started,
            tls_handshakes: stats.tls_handshakes,
            tls_handshake_failures: stats.tls_handshake_failures,
            tls_handshake_timeouts: stats.tls_handshake_timeouts,
            tls_unauthorized: stats.tls_unauthorized,
            requests_unauthorized: stats.requests_unauthorized,
            tls_reloads: stats.tls_reloads,
            tls_reload_failures: stats.tls_reload_failures,
            connections_tls: count(
                self.connections
                    .active
                    .iter()
                    .filter(|&&index| {
                        self.connections.slots[index as usize]
                            .as_ref()
                            .is_some_and(|connection| connection.security.stream().is_some())
                    })
                    .count(),
            ),
            forwarded: stats.forwarded,
            forwarded_served: stats.forwarded_served,
            commits_stalled: stats.commits_stalled,
            staging_full: journal.staging_full,
            read_only: u64::from(self.bookie.journal.is_read_only()),
            poisoned: u64::from(self.bookie.journal.is_poisoned()),
            waiting_for_space: u64::from(self.bookie.journal.is_waiting_for_space()),
            zero_ahead_bytes: journal.zero_ahead_bytes,
            index_bytes_written: journal.index_bytes_written,
            segments_recycled: journal.segments_recycled,
            space_waits: journal.space_waits,
            space_wait_ms: journal.space_wait_us_total / 1000,
            disk_pressure_per_mille: u64::from(self.bookie.journal.disk_pressure_per_mille()),
            compaction_threshold_per_mille: u64::from(
                self.bookie.journal.compaction_threshold_now_per_mille(),
            ),
            segments_sealed,
            segments_unsealed,
            journal_bytes: sealed_bytes + segments_unsealed * self.config.journal.segment_size,
            sealed_live_bytes,
            ledgers: count(index.ledger_count()),
            ledgers_deleted: journal.ledgers_deleted,
            segments_removed: journal.segments_removed,
            segment_bytes_removed: journal.segment_bytes_removed,
            compactions_done: journal.compactions_done,
            compaction_bytes_written: journal.compaction_bytes_written,
            compaction_bytes_freed: journal.compaction_bytes_freed,
            compaction_failures: journal.compaction_failures,
            compaction_bytes_read: journal.compaction_bytes_read,
            scrub_bytes: journal.scrub_bytes,
            scrub_segments: journal.scrub_segments,
            scrub_cycles_completed: journal.scrub_cycles_completed,
            scrub_damage_records: journal.scrub_damage_records,
            scrub_damage_index: journal.scrub_damage_index,
            scrub_read_failures: journal.scrub_read_failures,
            digest_mismatches_on_add: journal.digest_mismatches_on_add,
            scrub_damage_digests: journal.scrub_damage_digests,
            repairs_requested: stats.repairs_requested,
            repairs_written: stats.repairs_written,
            scrub_enabled: u64::from(scrub.enabled),
            scrub_segment_next: u64::from(scrub.position.segment_next.0),
            scrub_cycle_start: u64::from(scrub.position.cycle_start.0),
            scrub_segment_current_plus_one: scrub
                .segment_current
                .map_or(0, |segment| u64::from(segment.0) + 1),
            scrub_rate_bytes_per_s: scrub.rate_bytes_per_s,
            reads_cached: journal.reads_cached,
            reads_disk: journal.reads_disk,
            reads_read_ahead: journal.reads_read_ahead,
            read_ahead_windows: journal.read_ahead_windows,
            reads_paced: journal.reads_paced,
            read_retries: stats.read_retries,
            read_disk_bytes: journal.read_disk_bytes,
            compactions_sorting: journal.compactions_sorting,
            compactions_sorting_dropped: journal.compactions_sorting_dropped,
        };
        let mut values = ShardValues {
            scalars,
            add_errors: stats.add_errors,
            read_errors: stats.read_errors,
            ..ShardValues::default()
        };
        let histograms = [
            (HistogramId::AddOk, &stats.add_us_ok),
            (HistogramId::AddFailed, &stats.add_us_failed),
            (HistogramId::ReadOk, &stats.read_us_ok),
            (HistogramId::ReadFailed, &stats.read_us_failed),
            (HistogramId::ReceivedToStaged, &stats.received_to_handled_us),
            (HistogramId::StagedToSubmitted, &journal.commit_staging_us),
            (HistogramId::SubmittedToDurable, &journal.commit_io_us),
            (HistogramId::DurableToSent, &stats.durable_to_sent_us),
            (HistogramId::CommitDisk, &journal.commit_disk_us),
            (HistogramId::CommitRecords, &journal.commit_records),
            (HistogramId::CommitBytes, &journal.commit_bytes),
        ];
        for (id, histogram) in histograms {
            values.histogram_mut(id).clone_from(histogram);
        }
        values
    }
}
