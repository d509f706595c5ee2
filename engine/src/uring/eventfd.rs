//! Eventfds, the cross-shard wake-up: a shard's ring reads its eventfd, and any thread that
//! hands the shard work adds one to the counter.

use super::net::{NetBufferId, NetBuffers};
use super::{user_data, Ring, OWNER_NET};
use crate::disk::SubmitError;
use io_uring::{opcode, types};
use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

/// Eventfd system calls, safe wrappers.
#[derive(Debug)]
pub struct Eventfd;

impl Eventfd {
    /// A non-blocking eventfd for cross-shard wake-ups.
    pub fn create() -> io::Result<OwnedFd> {
        // SAFETY: plain eventfd creation; owned right after.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is fresh and owned by nobody else.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    /// Adds one to an eventfd's counter, waking the ring that reads it.
    pub fn signal(eventfd: RawFd) -> io::Result<()> {
        let value: u64 = 1;
        // SAFETY: writes 8 bytes from a valid local to an eventfd.
        let count = unsafe { libc::write(eventfd, std::ptr::addr_of!(value).cast(), 8) };
        if count == 8 || io::Error::last_os_error().kind() == io::ErrorKind::WouldBlock {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }
}

impl Ring {
    /// Reads an eventfd's 8-byte counter into `buffers[id]`: the cross-shard wake-up.
    pub fn read_eventfd(
        &mut self,
        tag: u32,
        eventfd: RawFd,
        buffers: &mut NetBuffers,
        id: NetBufferId,
    ) -> Result<(), SubmitError> {
        let (pointer, busy) = buffers.lend(id, 0, 8);
        let entry = opcode::Read::new(types::Fd(eventfd), pointer, 8).build();
        let entry = entry.user_data(user_data(OWNER_NET, Some(id.0 as usize), tag));
        // SAFETY: the buffer is owned by `buffers`, counted busy until `NetBuffers::complete`
        // sees this very completion, and leaked if the pool is dropped before that.
        unsafe { self.push_holding(&[entry], busy) }
    }
}
