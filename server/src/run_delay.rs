//! How long this thread waited, runnable, for a CPU: the scheduler's `run_delay` from
//! `/proc/thread-self/schedstat`. A shard polls its ring instead of sleeping only while it is
//! the one thread that wants its core; when run delay grows, another thread (a neighbour
//! process, a kworker that completes this shard's writes, a client) is taking turns with it,
//! and every turn the poller holds delays them and every turn they hold delays the poller's
//! completions (docs/durability.md, "Busy polling and neighbours").

use std::fs::File;
use std::os::unix::fs::FileExt;

/// Reads one thread's cumulative run delay. Opened by the thread it measures.
#[derive(Debug)]
pub struct RunDelay {
    /// `None` where the kernel has no schedstat (CONFIG_SCHED_INFO off): never contended.
    file: Option<File>,
    run_delay_ns_last: u64,
}

impl RunDelay {
    /// Opens the calling thread's schedstat; without one every check says "not contended".
    pub fn for_current_thread() -> RunDelay {
        let file = File::open("/proc/thread-self/schedstat").ok();
        let mut run_delay = RunDelay {
            file,
            run_delay_ns_last: 0,
        };
        run_delay.run_delay_ns_last = run_delay.read_ns().unwrap_or(0);
        run_delay
    }

    /// True when this thread waited more than `threshold_ns` for its CPU since the last call.
    pub fn grew_by_more_than(&mut self, threshold_ns: u64) -> bool {
        let Some(now) = self.read_ns() else {
            return false;
        };
        let grown = now.saturating_sub(self.run_delay_ns_last);
        self.run_delay_ns_last = now;
        grown > threshold_ns
    }

    /// The second field of `cpu_time_ns run_delay_ns timeslices`.
    fn read_ns(&self) -> Option<u64> {
        let file = self.file.as_ref()?;
        let mut buffer = [0u8; 96];
        let length = file.read_at(&mut buffer, 0).ok()?;
        let text = std::str::from_utf8(&buffer[..length]).ok()?;
        text.split_ascii_whitespace().nth(1)?.parse().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::RunDelay;

    /// Two CPU-bound threads pinned to one core take turns: each waits for the other's time
    /// slices, and the reader says so.
    #[test]
    fn run_delay_grows_when_a_neighbour_shares_the_core() {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::Arc;
        let core = core_affinity::CoreId { id: 0 };
        if RunDelay::for_current_thread().file.is_none() {
            assert!(
                std::env::var_os("CI").is_none(),
                "no /proc/thread-self/schedstat on the CI kernel"
            );
            println!("SKIP: no /proc/thread-self/schedstat on this kernel");
            return;
        }
        let stop = Arc::new(AtomicBool::new(false));
        let neighbour = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                assert!(core_affinity::set_for_current(core));
                while !stop.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            })
        };
        assert!(core_affinity::set_for_current(core));
        let mut shared = RunDelay::for_current_thread();
        let started = std::time::Instant::now();
        while started.elapsed() < std::time::Duration::from_millis(200) {
            std::hint::spin_loop();
        }
        let contended = shared.grew_by_more_than(1_000_000);
        stop.store(true, Ordering::Relaxed);
        neighbour.join().unwrap();
        assert!(contended, "200 ms spinning beside a spinner on one core");
    }
}
