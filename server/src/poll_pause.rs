//! When a shard stops busy-polling because another thread needs its core, and for how long.
//!
//! A single sign of contention (one time slice lost to a client that happened to run on the
//! shard's core) should cost little, so the first pause is short; a neighbour that stays makes
//! every pause end in another sign at once, and then pauses double up to a maximum, so a
//! shard beside a CPU-bound process sleeps nearly all the time instead of losing one time
//! slice per pause. A pause that ends with no sign for as long again starts over short.

use crate::limits;
use std::time::{Duration, Instant};

/// The pause state of one shard's polling.
#[derive(Debug)]
pub struct PollPause {
    /// Polling is paused until then.
    until: Option<Instant>,
    /// The length of the last pause.
    length: Duration,
}

impl Default for PollPause {
    fn default() -> Self {
        PollPause {
            until: None,
            length: Duration::from_millis(limits::BUSY_POLL_PAUSE_MS_MIN),
        }
    }
}

impl PollPause {
    /// True while polling is paused.
    pub fn is_paused(&self, now: Instant) -> bool {
        self.until.is_some_and(|until| now < until)
    }

    /// Another thread needed the core: pause polling, for twice as long as last time if the
    /// last pause ended recently (within its own length), else for the shortest pause.
    pub fn contended(&mut self, now: Instant) {
        let minimum = Duration::from_millis(limits::BUSY_POLL_PAUSE_MS_MIN);
        let maximum = Duration::from_millis(limits::BUSY_POLL_PAUSE_MS_MAX);
        let recent = self.until.is_some_and(|until| now < until + self.length);
        self.length = if recent {
            (self.length * 2).min(maximum)
        } else {
            minimum
        };
        self.until = Some(now + self.length);
    }
}

#[cfg(test)]
mod tests {
    use super::PollPause;
    use crate::limits;
    use std::time::{Duration, Instant};

    #[test]
    fn pauses_double_while_contention_persists_and_start_over_after_a_quiet_spell() {
        let ms = Duration::from_millis;
        let minimum = ms(limits::BUSY_POLL_PAUSE_MS_MIN);
        let maximum = ms(limits::BUSY_POLL_PAUSE_MS_MAX);
        let start = Instant::now();
        let mut pause = PollPause::default();
        assert!(!pause.is_paused(start));
        pause.contended(start);
        assert!(pause.is_paused(start + minimum - ms(1)));
        assert!(!pause.is_paused(start + minimum));
        // Contended again right after the pause: twice as long, up to the maximum.
        let mut now = start + minimum;
        let mut expected = minimum;
        for _ in 0..20 {
            pause.contended(now);
            expected = (expected * 2).min(maximum);
            assert!(pause.is_paused(now + expected - ms(1)));
            assert!(!pause.is_paused(now + expected));
            now += expected;
        }
        assert_eq!(expected, maximum);
        // A quiet spell as long as the last pause: the next one is short again.
        now += maximum;
        pause.contended(now);
        assert!(!pause.is_paused(now + minimum));
    }
}
