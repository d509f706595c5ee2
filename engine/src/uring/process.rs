//! Process- and thread-wide system calls the server needs: shutdown signals, the open-files
//! limit, and the calling thread's context-switch counts.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};

/// Process-wide settings, safe wrappers.
#[derive(Debug)]
pub struct Process;

/// The calling thread's counters, safe wrappers.
#[derive(Debug)]
pub struct Thread;

impl Process {
    /// Installs SIGINT and SIGTERM handlers that only set the returned flag, so shard loops
    /// can stop gracefully (they check it every turn). Idempotent: later calls return the same
    /// flag. SIGPIPE is ignored too, so a peer that went away shows up as EPIPE, not a kill.
    pub fn install_shutdown_signals() -> io::Result<&'static AtomicBool> {
        for signal in [libc::SIGINT, libc::SIGTERM] {
            let handler = shutdown_signal_handler as extern "C" fn(libc::c_int);
            // SAFETY: the handler only stores to a static atomic, which is async-signal-safe;
            // `signal` with a valid signal number and function pointer has no other effect.
            let previous = unsafe { libc::signal(signal, handler as libc::sighandler_t) };
            if previous == libc::SIG_ERR {
                return Err(io::Error::last_os_error());
            }
        }
        // SAFETY: ignoring SIGPIPE installs no code at all.
        if unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) } == libc::SIG_ERR {
            return Err(io::Error::last_os_error());
        }
        Ok(&SHUTDOWN_REQUESTED)
    }

    /// Raises the soft limit on open files to the hard limit and returns the new soft limit:
    /// every connection is a descriptor, and the common soft default of 1024 is below a
    /// single shard's `connections_max`.
    pub fn open_files_limit_raise() -> io::Result<u64> {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: `limit` is valid writable memory for one rlimit.
        if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
            return Err(io::Error::last_os_error());
        }
        if limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max;
            // SAFETY: sets the soft limit to the process's own hard limit, always allowed.
            if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) } != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(limit.rlim_cur)
    }
}

impl Thread {
    /// Voluntary and involuntary context switches of the calling thread (getrusage).
    #[must_use]
    pub fn context_switches() -> (u64, u64) {
        // SAFETY: an all-zero rusage is a valid value to be overwritten.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `usage` is valid writable memory for one rusage.
        let result = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) };
        if result != 0 {
            return (0, 0);
        }
        let voluntary = u64::try_from(usage.ru_nvcsw).unwrap_or(0);
        let involuntary = u64::try_from(usage.ru_nivcsw).unwrap_or(0);
        (voluntary, involuntary)
    }
}

/// Set by SIGINT/SIGTERM; see `Process::install_shutdown_signals`.
static SHUTDOWN_REQUESTED: AtomicBool = AtomicBool::new(false);

extern "C" fn shutdown_signal_handler(_signal: libc::c_int) {
    // Only an atomic store: anything else (allocation, locks, printing) is not
    // async-signal-safe.
    SHUTDOWN_REQUESTED.store(true, Ordering::SeqCst);
}
