//! The collector's metadata read limit (`--gc-metadata-rate`, BookKeeper's
//! gcMetadataOpRateLimit), as a pure schedule: each read goes at least 1/N s after the one
//! before, so no window of one second holds more than N reads.

use std::time::{Duration, Instant};

/// When the next metadata read may go.
#[derive(Debug)]
pub struct ReadRate {
    /// The spacing between reads: 1 s / N, rounded up, so that N + 1 reads always span at
    /// least a second.
    interval: Duration,
    /// The earliest time of the next read.
    next: Option<Instant>,
}

impl ReadRate {
    /// A limit of `reads_per_second` (at least 1).
    #[must_use]
    pub fn new(reads_per_second: u32) -> ReadRate {
        assert!(reads_per_second >= 1);
        let second_ns: u64 = 1_000_000_000;
        let interval = Duration::from_nanos(second_ns.div_ceil(u64::from(reads_per_second)));
        assert!(interval * reads_per_second >= Duration::from_secs(1));
        ReadRate {
            interval,
            next: None,
        }
    }

    /// Reserves the next read: the time it may go, never before `now`. The caller sleeps
    /// until then.
    pub fn reserve(&mut self, now: Instant) -> Instant {
        let at = match self.next {
            Some(next) if next > now => next,
            _ => now,
        };
        self.next = Some(at + self.interval);
        assert!(at >= now);
        at
    }
}
