//! Read pacing: while the commits wait on the disk, read-ahead windows get only a share of
//! the bytes the commits write.
//!
//! Commits and window reads share the disk's queue, and a catch-up read that reads 1 MiB
//! windows as fast as the disk gives them takes the bandwidth a writer the disk already
//! keeps waiting needs: beside an all-ledgers catch-up read, a closed-loop writer kept 67-75%
//! of its throughput (`make compare-catchup`, 2026-12-04), the reads moving 500-670 MB/s of
//! the disk's 1.65 GB/s. So while pacing is on, a window may start only with credit, and
//! every durable commit earns `Config::read_pace_percent` of its bytes. The server turns
//! pacing on for a tick when its commits took longer on average than it allows over the one
//! before (`--read-pace-commit-us`), and off again when they no longer do: the engine has no
//! clock. A read that needs a window it may not start waits in the engine (`reads.rs`), it
//! is not turned away, and a read served from a window already read or in flight needs no
//! credit. With pacing off, reads run as before: a writer the disk keeps up with costs its
//! readers nothing.
//!
//! The credit is capped at one window, so a pause cannot bank a burst, and a window may
//! overdraw it (a window is the unit of reading), which the next commits repay.

use crate::constants::READ_AHEAD_WINDOW_SIZE;
use crate::stdx::to_u64;

/// The pace of one journal's window reads. See the module docs.
#[derive(Debug)]
pub(super) struct ReadPace {
    /// `Config::read_pace_percent`; 0 never paces.
    percent: u64,
    /// Set by the server (`Journal::read_pace_set`).
    on: bool,
    /// Bytes window reads may still start while pacing; negative after an overdraw.
    credit_bytes: i64,
}

impl ReadPace {
    pub(super) fn new(percent: u32) -> ReadPace {
        ReadPace {
            percent: u64::from(percent),
            on: false,
            credit_bytes: 0,
        }
    }

    /// Turns pacing on or off.
    pub(super) fn set(&mut self, on: bool) {
        self.on = on && self.percent != 0;
    }

    /// A commit of `bytes` became durable: its share is credited, up to one window.
    pub(super) fn earn(&mut self, bytes: usize) {
        let cap = i64::try_from(READ_AHEAD_WINDOW_SIZE).expect("small");
        let share = i64::try_from(to_u64(bytes) * self.percent / 100).unwrap_or(cap);
        self.credit_bytes = self.credit_bytes.saturating_add(share).min(cap);
    }

    /// True when a window read may start now.
    pub(super) fn admits(&self) -> bool {
        !self.on || self.credit_bytes > 0
    }

    /// A window read of `bytes` started: while pacing, it is paid from the credit.
    pub(super) fn spend(&mut self, bytes: usize) {
        if self.on {
            let bytes = i64::try_from(bytes).expect("a window's length");
            self.credit_bytes = self.credit_bytes.saturating_sub(bytes);
        }
    }
}
