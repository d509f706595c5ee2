//! Timeouts and shutdown: the tick (idle connections, stall watchdog, read-only state), the
//! stop and the drain.

use super::{tag, Shard, TAG_CANCEL_LISTENER};
use crate::limits;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

impl Shard {
    /// Pauses sorting sealed segments as soon as this shard's adds and reads moved more
    /// than `sort_traffic_max_bytes_per_s` since the last tick, and resumes it only after
    /// `SORT_QUIET_TICKS` ticks in a row below it: one slow tick under a steady load (a
    /// stall, a descheduled client) must not start a sort beside it. Reads count too: a
    /// sort beside a catch-up read takes the disk and the core from the reader. Every
    /// shard's reads (as published on their last tick): the shards share the disk, and a
    /// one-ledger catch-up read, served by one shard, found the other shards' sorts reading
    /// 2.5 bytes for each byte it served (`make busy-reads`, 2026-12-07). Adds count by
    /// their bodies, not by the commits' bytes: on a disk that makes a commit durable in
    /// 45 µs, 30k adds/s a shard went out about one to a commit, each padded to a 4 KiB
    /// sector, so the commits wrote 116 MB/s a shard for 31 MB/s of entries, and that
    /// padding alone held sorting off for a whole 60 s fill (`make busy-reads`, 2026-12-07).
    fn sorting_pace(&mut self, elapsed: Duration) {
        let reads_other: u64 = (0..self.metrics.shards_count())
            .filter(|&shard| shard != usize::from(self.id))
            .map(|shard| self.metrics.shard(shard).read_bytes())
            .sum();
        let traffic = self.bookie.stats.add_bytes + self.bookie.stats.read_bytes + reads_other;
        let bytes = traffic.saturating_sub(self.traffic_bytes_at_tick);
        self.traffic_bytes_at_tick = traffic;
        let limit = u128::from(self.config.sort_traffic_max_bytes_per_s);
        let allowed = limit * elapsed.as_micros() / 1_000_000;
        if u128::from(bytes) > allowed {
            self.sort_quiet_ticks = 0;
        } else {
            self.sort_quiet_ticks = self.sort_quiet_ticks.saturating_add(1);
        }
        let paused = self.sort_quiet_ticks < limits::SORT_QUIET_TICKS;
        self.bookie.journal.sorting_pause(paused);
    }

    /// Paces catch-up reads (`--read-pace-percent`) for the next tick when this shard's
    /// commits over the last one took longer on average than `read_pace_commit`: they queue
    /// on the disk, and read-ahead windows would take the rest of it. Off again after a tick
    /// whose commits were faster, or with none (nothing would earn the reads credit).
    fn read_pace(&mut self) {
        let Some(limit) = self.config.read_pace_commit else {
            return;
        };
        let stats = self.bookie.journal.stats();
        let now = (stats.commits_durable, stats.commit_io_us_total);
        let (commits, io_us) = (
            now.0.saturating_sub(self.commits_at_tick.0),
            now.1.saturating_sub(self.commits_at_tick.1),
        );
        self.commits_at_tick = now;
        let limit_us = u64::try_from(limit.as_micros()).unwrap_or(u64::MAX);
        let slow = commits > 0 && io_us / commits > limit_us;
        self.bookie.journal.read_pace_set(slow);
    }

    /// Every 100 ms: close connections idle for longer than the idle timeout.
    pub(super) fn tick(&mut self) {
        let now = Instant::now();
        if now.duration_since(self.tick_last) < Duration::from_millis(limits::LOOP_WAIT_MS_MAX) {
            return;
        }
        let elapsed = now.duration_since(self.tick_last);
        self.tick_last = now;
        self.read_only_check();
        // Compaction's byte budget comes from this clock (the engine has none), plus a share
        // of what the commits wrote since the last tick, so sorting keeps up with any load.
        let rate = u128::from(self.config.compaction_rate_bytes_per_s);
        let committed = self.bookie.journal.stats().bytes_written;
        let commit_bytes = committed.saturating_sub(self.committed_bytes_at_tick);
        self.committed_bytes_at_tick = committed;
        let grant = rate * elapsed.as_micros() / 1_000_000
            + u128::from(commit_bytes) * u128::from(self.config.compaction_commit_percent) / 100;
        self.bookie
            .journal
            .compaction_grant(u64::try_from(grant).unwrap_or(u64::MAX));
        let elapsed_us = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
        self.bookie.journal.scrub_grant(elapsed_us);
        self.repairs_resume();
        self.damage_lines_this_tick = 0;
        if self.damage_lines_dropped > 0 {
            tracing::error!(
                shard = self.id,
                "{} more damage findings not logged one by one (ringlog_scrub_damage_* counts \
                 them all; every named entry is still asked for repair)",
                self.damage_lines_dropped
            );
            self.damage_lines_dropped = 0;
        }
        self.sorting_pace(elapsed);
        self.read_pace();
        self.bookie
            .journal
            .removal_pace(limits::SEGMENT_REMOVALS_PER_TICK_MAX);
        self.stall_check(now);
        self.connection_errors_log(now);
        self.tls_tick(now);
        // Long-poll deadlines are checked at this granularity.
        self.parked_check = true;
        // The HTTP thread sees numbers at most one tick old; the add path publishes nothing.
        self.metrics_publish();
        let timeout = self.config.idle_timeout;
        for &index in &self.connections.active {
            let connection = self.connections.slots[index as usize]
                .as_mut()
                .expect("active is live");
            // A partial frame does not keep a connection alive (slowloris): only traffic does.
            // Neither does a send the peer never reads (its window stays full, so the send
            // never completes): after the timeout without traffic that connection goes too.
            let quiet =
                connection.client.is_idle() && connection.send_offset == connection.send_length;
            let silent = now.duration_since(connection.active_last) > timeout;
            if (quiet || connection.send_armed) && silent && !connection.closing {
                connection.closing = true;
                self.bookie.stats.connections_idle += 1;
            }
        }
    }

    /// The stall watchdog: a commit in flight for longer than `--commit-stall-ms` is logged
    /// once, with the stage it waits in, and its completion is logged too. Nothing else
    /// changes: a stalled commit is neither failed nor retried (the kernel still owns it).
    pub(super) fn stall_check(&mut self, now: Instant) {
        let Some(threshold) = self.config.commit_stall else {
            return;
        };
        let oldest = self.bookie.journal.commit_oldest_in_flight();
        if let Some(reported) = self.stall_reported {
            let same = oldest.is_some_and(|commit| {
                (commit.segment, commit.position) == (reported.segment, reported.position)
            });
            if same {
                return;
            }
            self.stall_reported = None;
            let waited = reported
                .submitted_at
                .map_or(Duration::ZERO, |at| now.saturating_duration_since(at));
            tracing::info!(
                shard = self.id,
                segment = reported.segment.0,
                position = reported.position,
                waited_ms = u64::try_from(waited.as_millis()).unwrap_or(u64::MAX),
                "stalled commit completed"
            );
        }
        let Some(commit) = oldest else {
            return;
        };
        let Some(submitted_at) = commit.submitted_at else {
            return;
        };
        let age = now.saturating_duration_since(submitted_at);
        if age < threshold {
            return;
        }
        self.stall_reported = Some(commit);
        self.bookie.stats.commits_stalled += 1;
        // The slow-commit line: one per stalled commit, and one when it completes.
        tracing::warn!(
            shard = self.id,
            age_ms = u64::try_from(age.as_millis()).unwrap_or(u64::MAX),
            watchdog_ms = u64::try_from(threshold.as_millis()).unwrap_or(u64::MAX),
            stage = commit.stage.describe(),
            segment = commit.segment.0,
            position = commit.position,
            bytes = commit.bytes,
            records = commit.records,
            // Disk and network operations together.
            io_uring_in_flight = self.ring.borrow().in_flight(),
            "commit stalled"
        );
    }

    /// Connection errors (failed accepts, connections refused at --connections-max, protocol
    /// violations) as one line per `CONNECTION_ERRORS_LOG_MS` at most, with the counts since
    /// the last line: a client hammering the bookie must not turn into a log flood.
    fn connection_errors_log(&mut self, now: Instant) {
        let (logged_at, logged) = self.connection_errors_logged;
        let interval = Duration::from_millis(limits::CONNECTION_ERRORS_LOG_MS);
        if now.saturating_duration_since(logged_at) < interval {
            return;
        }
        let stats = &self.bookie.stats;
        let counts = [
            stats.accept_errors,
            stats.connections_rejected,
            stats.connections_invalid,
        ];
        if counts == logged {
            return;
        }
        self.connection_errors_logged = (now, counts);
        tracing::warn!(
            shard = self.id,
            accept_errors = counts[0] - logged[0],
            rejected_at_cap = counts[1] - logged[1],
            protocol_violations = counts[2] - logged[2],
            "connection errors in the last {} s or more",
            limits::CONNECTION_ERRORS_LOG_MS / 1000
        );
    }

    /// Disk full: the journal refuses adds (EREADONLY) while it cannot create a segment, or
    /// one would leave less free than `--disk-reserve-mib`. Retried every tick, so the shard
    /// is writable again within one tick of space returning; both transitions are printed
    /// for the operator.
    pub(super) fn read_only_check(&mut self) {
        self.gc_pressure_check();
        let read_only = self.bookie.journal.is_read_only();
        let waiting = self.bookie.journal.is_waiting_for_space();
        if read_only || waiting {
            self.bookie.journal.segment_retry_now();
        }
        if waiting != self.lifecycle.space_wait_reported {
            self.lifecycle.space_wait_reported = waiting;
            let pressure = self.bookie.journal.disk_pressure_per_mille();
            if waiting {
                tracing::warn!(
                    shard = self.id,
                    pressure_per_mille = pressure,
                    "disk full but space can come back: adds wait for compaction and removals \
                     instead of being refused (docs/gc.md, \"Disk pressure\")"
                );
            } else {
                tracing::info!(shard = self.id, "adds flow again after waiting for space");
            }
        }
        // A sealing step that failed (disk full too, most likely) is retried on the same clock.
        self.bookie.journal.seal_retry_now();
        if read_only != self.lifecycle.read_only_reported {
            self.lifecycle.read_only_reported = read_only;
            if read_only {
                let report = self.bookie.journal.space_report();
                let mib = |bytes: u64| bytes / (1024 * 1024);
                tracing::warn!(
                    shard = self.id,
                    reason = if report.stuck {
                        "reclaiming made no progress"
                    } else {
                        "nothing reclaimable"
                    },
                    free_mib = mib(report.free_bytes),
                    sealed_segments = report.sealed_segments,
                    sealed_mib = mib(report.sealed_bytes),
                    live_mib = mib(report.live_bytes),
                    compaction_threshold_per_mille = report.compaction_threshold_per_mille,
                    compaction_may_free = report.compaction_may_free,
                    removals_busy = report.removals_busy,
                    deletions_pending = report.deletions_pending,
                    "read-only: cannot create a journal segment (disk full, or free space under \
                     --disk-reserve-mib); adds get EREADONLY, reads go on, creation is retried \
                     every {} ms",
                    limits::LOOP_WAIT_MS_MAX
                );
            } else {
                tracing::info!(shard = self.id, "writable again");
            }
        }
    }

    /// Under disk pressure, asks the collector for rounds now rather than every
    /// --gc-interval-ms; once the write head has no room, the journal waits for a round that
    /// started after that was seen, and for its deletions, before it may turn read-only
    /// (docs/gc.md, "Disk pressure").
    fn gc_pressure_check(&mut self) {
        let router = &self.bookie.router;
        let journal = &mut self.bookie.journal;
        journal.deletions_await_arm(router.gc_is_active());
        if journal.disk_pressure_per_mille() > 0 || journal.is_blocked_for_space() {
            router.gc_want();
        }
        if !journal.is_awaiting_deletions() {
            self.lifecycle.gc_round_awaited = None;
            return;
        }
        let (started, ended) = router.gc_rounds();
        let Some((needed, seen)) = self.lifecycle.gc_round_awaited else {
            self.lifecycle.gc_round_awaited = Some((started + 1, Instant::now()));
            return;
        };
        let late = seen.elapsed() > Duration::from_millis(limits::GC_PRESSURE_ROUND_WAIT_MS_MAX);
        if ended >= needed || late {
            // The round mailed its deletions before it counted as ended.
            self.mail_receive();
            self.bookie.journal.deletions_answered();
            self.lifecycle.gc_round_awaited = None;
        }
    }

    /// On SIGINT/SIGTERM or a stop from another shard: stop accepting and reading requests;
    /// what is in flight is finished and answered, then connections close.
    pub(super) fn stop_check(&mut self) {
        if self.lifecycle.stopping {
            return;
        }
        if self.lifecycle.shutdown.load(Ordering::SeqCst) {
            self.bookie.router.stop();
        }
        if !self.bookie.router.is_stopping() {
            return;
        }
        self.lifecycle.stopping = true;
        self.bookie.progress = true;
        if let Some(listener) = self.listener.socket.as_ref() {
            if self.listener.accept_armed {
                let fd = listener.as_raw_fd();
                // If this fails the accept stays armed until the ring is dropped at exit.
                let _ = self
                    .ring
                    .borrow_mut()
                    .cancel_fd(tag(TAG_CANCEL_LISTENER, 0), fd);
            }
        }
        for &index in &self.connections.active {
            let connection = self.connections.slots[index as usize]
                .as_mut()
                .expect("active is live");
            // Requests not yet decoded were never acknowledged; they are dropped.
            connection.decode_wanted = false;
        }
    }

    /// True when this shard and every other one have nothing left in flight.
    pub(super) fn drain_check(&mut self) -> bool {
        let peers_idle = self
            .peers
            .iter()
            .all(|peer| peer.inbox.is_empty() && peer.client.is_idle());
        let drained = self.connections.active.is_empty()
            && peers_idle
            && self.bookie.forward_out.iter().all(Vec::is_empty)
            && self.bookie.read_retry.is_empty()
            && self.bookie.journal.is_idle();
        if drained != self.lifecycle.drained {
            self.lifecycle.drained = drained;
            self.bookie.router.drained_set(drained);
        }
        drained && self.bookie.router.all_drained()
    }
}
