//! The per-core io_uring driver and every other system call of the engine: the only module
//! with `unsafe`.
//!
//! Ownership rules: every buffer the kernel reads or writes belongs to a pool in this module
//! (`UringDisk` for journal buffers, `NetBuffers` for sockets). A submission marks its buffer
//! busy; only the matching completion, decoded from `user_data`, frees it. A pool dropped while
//! a buffer is busy leaks that buffer instead of freeing memory the kernel may still write.
//!
//! `user_data` layout: bits 56..64 owner, 32..56 buffer id + 1 (0: none), 0..32 owner's tag.

mod buffer;
mod disk;
mod eventfd;
mod net;
mod process;
mod sched;
mod space;

pub use buffer::AlignedBuffer;
pub use disk::UringDisk;
pub use eventfd::Eventfd;
pub use net::{NetBufferId, NetBuffers, Socket};
pub use process::{Process, Thread};
pub use sched::{thread_slice_ns, thread_slice_set};
pub use space::{disk_space, DiskSpace};

use io_uring::{cqueue, squeue, IoUring};
use std::io;
use std::time::Duration;

/// Owner tag of journal (disk) operations.
pub const OWNER_DISK: u8 = 1;
/// Owner tag of network operations.
pub const OWNER_NET: u8 = 2;

/// Submission queue entries per ring. Enough for every connection's recv and send plus the
/// journal's commits, reads and zero-fill; overflow is handled by submitting early.
pub const RING_ENTRIES_DEFAULT: u32 = 4096;

/// A completion as the owner sees it. Constructed only by `Ring::reap`, so a buffer can be
/// freed only by the completion the kernel really posted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    user_data: u64,
    /// Bytes transferred, a new fd (accept), 0, or a negative errno.
    pub result: i32,
    flags: u32,
}

impl Completion {
    /// The owner's 32-bit tag.
    #[must_use]
    pub fn tag(&self) -> u32 {
        u32::try_from(self.user_data & 0xFFFF_FFFF).expect("masked to 32 bits")
    }
    /// The owner (`OWNER_DISK` or `OWNER_NET`).
    #[must_use]
    pub fn owner(&self) -> u8 {
        u8::try_from(self.user_data >> 56).expect("top byte")
    }
    fn buffer_index(&self) -> Option<usize> {
        let field = (self.user_data >> 32) & 0x00FF_FFFF;
        (field != 0).then(|| crate::stdx::to_usize(field - 1))
    }
    /// True when a multishot request stays armed after this completion.
    #[must_use]
    pub fn more(&self) -> bool {
        cqueue::more(self.flags)
    }
}

fn user_data(owner: u8, buffer: Option<usize>, tag: u32) -> u64 {
    let buffer_field = buffer.map_or(0, |index| crate::stdx::to_u64(index) + 1);
    assert!(buffer_field < (1 << 24), "buffer index fits 24 bits");
    (u64::from(owner) << 56) | (buffer_field << 32) | u64::from(tag)
}

/// One io_uring instance, owned by one shard thread.
pub struct Ring {
    ring: IoUring,
    disk_completions: Vec<Completion>,
    in_flight: usize,
}

impl std::fmt::Debug for Ring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Ring(in_flight {})", self.in_flight)
    }
}

/// How a `Ring::busy_poll` ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PollEnd {
    /// A completion is ready to reap.
    Ready,
    /// The budget ran out with nothing ready.
    Expired,
    /// Another thread held this core for longer than `BUSY_POLL_GAP_US_MAX` during one
    /// check: the core is contended, so polling only delays whoever needs it.
    Descheduled,
}

/// Why io_uring cannot be used here (tests print it when they skip).
#[derive(Debug)]
pub struct UringUnavailable(pub String);

impl Ring {
    /// Creates a ring with `entries` submission slots.
    pub fn new(entries: u32) -> io::Result<Ring> {
        // COOP_TASKRUN: a completion that needs this thread's task work (a socket receive,
        // a DIO write's end) does not interrupt it with an IPI while it runs; the work runs
        // at its next kernel entry, which every loop turn and every `busy_poll` check makes,
        // and a thread asleep in `io_uring_enter` is still woken. Measured here at one
        // outstanding add: p50 138-170 µs with it against 158-208 µs without (VM IPIs).
        // Kernels before 5.19 refuse the flag (EINVAL): they get the plain ring.
        let ring = match IoUring::builder().setup_coop_taskrun().build(entries) {
            Ok(ring) => ring,
            Err(error) if error.raw_os_error() == Some(libc::EINVAL) => {
                IoUring::builder().build(entries)?
            }
            Err(error) => return Err(error),
        };
        let capacity = crate::stdx::to_usize(u64::from(entries)) * 2;
        Ok(Ring {
            ring,
            disk_completions: Vec::with_capacity(capacity),
            in_flight: 0,
        })
    }

    /// Checks that io_uring works here: a ring can be created and a NOP completes.
    pub fn probe() -> Result<(), UringUnavailable> {
        let mut ring = Ring::new(8).map_err(|error| UringUnavailable(error.to_string()))?;
        let nop = io_uring::opcode::Nop::new()
            .build()
            .user_data(user_data(OWNER_NET, None, 0));
        // SAFETY: a NOP references no memory.
        unsafe { ring.push(&[nop]) }.map_err(|error| UringUnavailable(format!("{error:?}")))?;
        ring.submit_and_wait(1)
            .map_err(|error| UringUnavailable(error.to_string()))?;
        let mut out = Vec::new();
        ring.reap(&mut out);
        if out.len() == 1 && out[0].result == 0 {
            Ok(())
        } else {
            Err(UringUnavailable(format!("NOP completed as {out:?}")))
        }
    }

    /// Queues a chain of entries in one piece: if the queue lacks room for all of them it is
    /// submitted first, so a linked chain never spans two submits (liburing #510).
    ///
    /// # Safety
    /// Every pointer in `entries` must stay valid until its completion is reaped.
    unsafe fn push(&mut self, entries: &[squeue::Entry]) -> Result<(), crate::disk::SubmitError> {
        assert!(!entries.is_empty());
        assert!(entries.len() <= self.ring.params().sq_entries() as usize);
        let room = |ring: &mut IoUring| {
            let queue = ring.submission();
            queue.capacity() - queue.len()
        };
        if room(&mut self.ring) < entries.len() {
            self.ring.submit().map_err(crate::disk::SubmitError::Io)?;
        }
        let mut queue = self.ring.submission();
        if queue.capacity() - queue.len() < entries.len() {
            return Err(crate::disk::SubmitError::QueueFull);
        }
        // SAFETY: the caller guarantees the entries' memory outlives their completions, and
        // room for the whole chain was checked above.
        unsafe { queue.push_multiple(entries) }.map_err(|_| crate::disk::SubmitError::QueueFull)?;
        self.in_flight += entries.len();
        Ok(())
    }

    /// Queues `entries`, which read or write one pool buffer, and counts that buffer busy in
    /// `busy`: the pool frees or touches it again only after the completion that names it
    /// lowers the count. A push that fails hands nothing to the kernel, so the count goes
    /// straight back down. The one place a pool's buffer becomes the kernel's.
    ///
    /// # Safety
    /// As for `push`: every pointer in `entries` stays valid until its completion is reaped.
    /// `busy` is the count of the buffer those pointers point into.
    unsafe fn push_holding(
        &mut self,
        entries: &[squeue::Entry],
        busy: &mut u32,
    ) -> Result<(), crate::disk::SubmitError> {
        *busy += 1;
        // SAFETY: the caller's guarantee, passed on.
        let result = unsafe { self.push(entries) };
        if result.is_err() {
            assert!(*busy > 0);
            *busy -= 1;
        }
        result
    }

    /// Hands queued entries to the kernel without waiting.
    pub fn submit(&mut self) -> io::Result<()> {
        self.ring.submit().map(|_| ())
    }

    /// Submits and waits until at least `want` completions are ready.
    pub fn submit_and_wait(&mut self, want: usize) -> io::Result<()> {
        match self.ring.submit_and_wait(want) {
            Ok(_) => Ok(()),
            Err(error) if error.raw_os_error() == Some(libc::EINTR) => Ok(()),
            Err(error) => Err(error),
        }
    }

    /// Submits and waits for one completion or until `timeout` passes.
    pub fn submit_and_wait_timeout(&mut self, timeout: Duration) -> io::Result<()> {
        let timespec = io_uring::types::Timespec::from(timeout);
        let arguments = io_uring::types::SubmitArgs::new().timespec(&timespec);
        match self.ring.submitter().submit_with_args(1, &arguments) {
            Ok(_) => Ok(()),
            Err(error) if error.raw_os_error() == Some(libc::ETIME) => Ok(()),
            Err(error) if error.raw_os_error() == Some(libc::EINTR) => Ok(()),
            Err(error) => Err(error),
        }
    }

    /// Busy-polls for a completion for at most `budget`, and says how the poll ended.
    ///
    /// Why: every sleep in `io_uring_enter` costs a context switch and, on an idle CPU, the
    /// CPU's wake-up from idle (measured here at 15-20 µs per wake-up on the 2-vCPU VM, 4-5
    /// of them per QD1 round trip). Spinning keeps the CPU awake, so the kernel's task work
    /// (a DIO write's completion, a socket's receive) runs at once. Each check is one
    /// `io_uring_enter` without GETEVENTS (its return runs pending task work) followed by
    /// `sched_yield`, so a runnable kworker, io-wq worker or client thread on this core gets
    /// the CPU at once instead of waiting for this thread's time slice to end.
    ///
    /// A spinning thread is only harmless while it is the only one that wants its core. When
    /// a check takes longer than `BUSY_POLL_GAP_US_MAX` another thread held the core for a
    /// time slice (a yield to a CPU-bound neighbour, or a preemption by it): the poll ends
    /// with `PollEnd::Descheduled` so the caller sleeps instead, and the scheduler's wake-up
    /// preemption, not the time slice, decides when this thread runs again.
    pub fn busy_poll(&mut self, budget: Duration) -> io::Result<PollEnd> {
        let gap_max = Duration::from_micros(crate::constants::BUSY_POLL_GAP_US_MAX);
        let started = std::time::Instant::now();
        let deadline = started + budget;
        let mut check_last = started;
        loop {
            match self.ring.submit() {
                Ok(_) => {}
                Err(error) if error.raw_os_error() == Some(libc::EINTR) => {}
                Err(error) => return Err(error),
            }
            if !self.ring.completion().is_empty() {
                return Ok(PollEnd::Ready);
            }
            let now = std::time::Instant::now();
            if now.saturating_duration_since(check_last) > gap_max {
                return Ok(PollEnd::Descheduled);
            }
            if now >= deadline {
                return Ok(PollEnd::Expired);
            }
            check_last = now;
            std::thread::yield_now();
        }
    }

    /// Moves network completions into `out`; disk completions stay queued for `UringDisk`.
    pub fn reap(&mut self, out: &mut Vec<Completion>) {
        for entry in self.ring.completion() {
            let completion = Completion {
                user_data: entry.user_data(),
                result: entry.result(),
                flags: entry.flags(),
            };
            if !completion.more() {
                self.in_flight = self.in_flight.saturating_sub(1);
            }
            if completion.owner() == OWNER_DISK {
                self.disk_completions.push(completion);
            } else {
                out.push(completion);
            }
        }
    }

    /// Entries submitted and not yet completed (multishot requests count once).
    #[must_use]
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// True when a disk completion waits to be polled by `UringDisk`.
    #[must_use]
    pub fn disk_completions_pending(&self) -> bool {
        !self.disk_completions.is_empty()
    }
}

/// The gate every io_uring test starts with: true when io_uring works here; otherwise prints
/// `SKIP: <reason>` and returns false, unless `CI` or `REQUIRE_URING` is set, where a skip
/// would hide a broken build and so panics instead.
#[must_use]
pub fn uring_available_for_test() -> bool {
    match Ring::probe() {
        Ok(()) => true,
        Err(reason) => {
            let required =
                std::env::var_os("CI").is_some() || std::env::var_os("REQUIRE_URING").is_some();
            assert!(
                !required,
                "io_uring required here but unavailable: {reason:?}"
            );
            println!("SKIP: io_uring unavailable: {reason:?}");
            false
        }
    }
}

/// Converts a negative errno result into an `io::Error`.
#[must_use]
pub fn errno_error(result: i32) -> io::Error {
    io::Error::from_raw_os_error(-result)
}
