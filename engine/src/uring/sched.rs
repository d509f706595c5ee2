//! The calling thread's scheduler slice (EEVDF's `sched_runtime` for SCHED_OTHER, Linux 6.12+).
//!
//! A thread woken by a completion gets the CPU at once only if the scheduler lets it preempt
//! whatever runs there. Under EEVDF the running thread is protected for its slice (RUN_TO_PARITY,
//! about 3 ms here), whatever its nice level, unless the woken thread asked for a shorter slice
//! (PREEMPT_SHORT). A shard that sleeps while a neighbour shares its core would otherwise wait
//! up to a whole slice for every completion (docs/durability.md, "Busy polling and neighbours").

use std::io;

/// `struct sched_attr` as of SCHED_ATTR_SIZE_VER0 (48 bytes), the layout every kernel with
/// `sched_setattr` accepts.
#[repr(C)]
#[derive(Default)]
struct SchedAttr {
    size: u32,
    sched_policy: u32,
    sched_flags: u64,
    sched_nice: i32,
    sched_priority: u32,
    sched_runtime: u64,
    sched_deadline: u64,
    sched_period: u64,
}

const SCHED_ATTR_SIZE_VER0: u32 = 48;
const _: () = assert!(std::mem::size_of::<SchedAttr>() == SCHED_ATTR_SIZE_VER0 as usize);

/// Asks for a scheduler slice of `slice_ns` for the calling thread, keeping its policy and
/// nice level. Only SCHED_OTHER/SCHED_BATCH threads are changed. Kernels without custom
/// slices (before 6.12) ignore the value or refuse it; either way the thread keeps the
/// default slice, and the error (if any) is returned for the caller to report.
pub fn thread_slice_set(slice_ns: u64) -> io::Result<()> {
    let mut attr = thread_attr()?;
    let fair = attr.sched_policy == libc::SCHED_OTHER as u32
        || attr.sched_policy == libc::SCHED_BATCH as u32;
    if !fair {
        return Ok(());
    }
    attr.size = SCHED_ATTR_SIZE_VER0;
    attr.sched_flags = 0;
    attr.sched_runtime = slice_ns;
    // SAFETY: `attr` is a valid, initialised sched_attr of the size it declares; pid 0 is
    // the calling thread; flags must be 0.
    let result = unsafe { libc::syscall(libc::SYS_sched_setattr, 0, std::ptr::from_ref(&attr), 0) };
    if result != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The calling thread's scheduler slice request in nanoseconds (0: the kernel's default).
pub fn thread_slice_ns() -> io::Result<u64> {
    Ok(thread_attr()?.sched_runtime)
}

/// The calling thread's scheduling attributes.
fn thread_attr() -> io::Result<SchedAttr> {
    let mut attr = SchedAttr::default();
    // SAFETY: `attr` is valid writable memory of the size passed; pid 0 is the calling
    // thread; flags must be 0.
    let result = unsafe {
        libc::syscall(
            libc::SYS_sched_getattr,
            0,
            std::ptr::from_mut(&mut attr),
            SCHED_ATTR_SIZE_VER0,
            0,
        )
    };
    if result != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(attr)
}
