//! `ShardStats`, a shard's counters: bumped by the shard's loop and by the requests it
//! handles (`Bookie::stats`), copied to the metrics block on its tick and printed in the
//! shutdown summary. It sits below both `shard` and `request`, so neither imports the other
//! for it.

use crate::metrics::{error_slot, ERROR_SLOTS};
use engine::Log2Histogram;
use std::time::Instant;

/// Counters of one shard, printed in the shutdown summary.
#[derive(Clone, Debug, Default)]
pub struct ShardStats {
    /// Damaged entries handed to the repairer, and good copies journaled durably in their
    /// place (docs/scrub.md, "Repair").
    pub repairs_requested: u64,
    pub repairs_written: u64,
    /// Connections accepted.
    pub connections_accepted: u64,
    /// Connections closed right after accept (cap reached, or stopping).
    pub connections_rejected: u64,
    /// Connections closed for a protocol violation.
    pub connections_invalid: u64,
    /// Connections closed by the idle timeout.
    pub connections_idle: u64,
    /// Adds staged into this shard's journal (its own and forwarded ones).
    pub adds: u64,
    /// Reads answered (single entries; a batch counts once).
    pub reads: u64,
    /// Requests this shard forwarded to the owner shard of their ledger.
    pub forwarded: u64,
    /// Requests other shards forwarded to this one.
    pub forwarded_served: u64,
    /// Accept completions with an error.
    pub accept_errors: u64,
    /// Loop turns.
    pub turns: u64,
    /// Turns that found nothing to do.
    pub waits: u64,
    /// Waits that polled the ring first (`--busy-poll-us`).
    pub busy_polls: u64,
    /// Waits that slept in the kernel (after polling, if they polled, found nothing).
    pub sleeps: u64,
    /// Polls that found another thread holding the shard's core, each pausing polling
    /// (`poll_pause.rs`).
    pub polls_descheduled: u64,
    /// Waits that found the shard's run delay grown by more than `RUN_DELAY_US_CONTENDED`
    /// since the previous wait, each pausing polling (`poll_pause.rs`).
    pub polls_paused_run_delay: u64,
    /// Commits reported by the stall watchdog (in flight longer than `--commit-stall-ms`).
    pub commits_stalled: u64,
    /// Batch reads that ran beside another of their client's, in a buffer the shard lent.
    pub batch_reads_side_by_side: u64,
    /// At exit: lent batch buffers not given back (0 unless one was lost).
    pub batch_buffers_lent: u64,
    /// Reads tried again because the engine was busy (every attempt counts).
    pub read_retries: u64,
    /// Requests decoded and handled (staged, answered or forwarded) from connections.
    pub requests_handled: u64,
    /// Sum over those requests of the time from their recv's completion to their handling,
    /// in microseconds: the receive → staged stage.
    pub received_to_handled_us_total: u64,
    /// The same, request by request, in microseconds.
    pub received_to_handled_us: Log2Histogram,
    /// Per loop turn that reaped durable (or written) adds: from reaping them to submitting
    /// the turn's sends, in microseconds.
    pub durable_to_sent_us: Log2Histogram,
    /// Entry body bytes of the adds staged, and of the entries read.
    pub add_bytes: u64,
    pub read_bytes: u64,
    /// Adds and reads answered with an error, by code (`metrics::error_slot`).
    pub add_errors: [u64; ERROR_SLOTS],
    pub read_errors: [u64; ERROR_SLOTS],
    /// TLS sessions started (START_TLS answered and sent), handshakes completed, failed
    /// (closed: protocol or certificate) and timed out.
    pub tls_sessions_started: u64,
    pub tls_handshakes: u64,
    pub tls_handshake_failures: u64,
    pub tls_handshake_timeouts: u64,
    /// TLS connections whose certificate's role is not authorized (`--tls-authorized-roles`).
    pub tls_unauthorized: u64,
    /// Requests answered EUA because their connection is not authorized.
    pub requests_unauthorized: u64,
    /// Certificate rotations picked up, and rotations whose files could not be used.
    pub tls_reloads: u64,
    pub tls_reload_failures: u64,
    /// Adds and single-entry reads from their recv's completion to their answer, in
    /// microseconds, successful and not.
    pub add_us_ok: Log2Histogram,
    pub add_us_failed: Log2Histogram,
    pub read_us_ok: Log2Histogram,
    pub read_us_failed: Log2Histogram,
}

impl ShardStats {
    /// An add received at `received_at` was answered with `code`.
    pub fn add_answered(&mut self, received_at: Instant, code: i32) {
        let us = u64::try_from(received_at.elapsed().as_micros()).unwrap_or(u64::MAX);
        if code == wire::code::EOK {
            self.add_us_ok.record(us);
        } else {
            self.add_us_failed.record(us);
            self.add_errors[error_slot(code)] += 1;
        }
    }

    /// A read received at `received_at` was answered with `code` and `bytes` of entry.
    pub fn read_answered(&mut self, received_at: Instant, code: i32, bytes: usize) {
        let us = u64::try_from(received_at.elapsed().as_micros()).unwrap_or(u64::MAX);
        if code == wire::code::EOK {
            self.read_us_ok.record(us);
            self.read_bytes += u64::try_from(bytes).expect("usize fits u64");
        } else {
            self.read_us_failed.record(us);
            self.read_errors[error_slot(code)] += 1;
        }
    }
}
