//! Sector-aligned buffers that never move, for memory shared with the kernel.
//!
//! Each buffer is its own anonymous private mapping rather than a heap allocation: the kernel
//! hands out zero pages lazily, so a buffer costs resident memory only for the pages that were
//! actually written. An idle connection's 256 KiB receive and send buffers, or a staging buffer
//! sized for the largest commit, then cost almost nothing until used (the heap's
//! `alloc_zeroed` with 4 KiB alignment memsets, and so touches, every page up front).

use crate::constants::SECTOR_SIZE;
use std::ptr::NonNull;

/// A zeroed, 4 KiB-aligned mapping whose address is stable for its whole life.
pub struct AlignedBuffer {
    pointer: NonNull<u8>,
    size: usize,
}

impl std::fmt::Debug for AlignedBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AlignedBuffer({} bytes)", self.size)
    }
}

impl AlignedBuffer {
    /// Allocates `size` zero bytes (rounded up to whole sectors).
    #[must_use]
    pub fn new(size: usize) -> AlignedBuffer {
        let size = crate::stdx::align_up(size.max(1), SECTOR_SIZE);
        // SAFETY: a fresh anonymous private mapping at an address the kernel picks aliases
        // nothing; a failure is checked below before the pointer is used.
        let raw = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                size,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if raw == libc::MAP_FAILED {
            // Out of address space or over the map count: the same condition as a failed
            // allocation, handled the same way (abort with a message).
            let layout =
                std::alloc::Layout::from_size_align(size, SECTOR_SIZE).expect("valid layout");
            std::alloc::handle_alloc_error(layout);
        }
        // Mappings are page-aligned, and a page is at least a sector.
        assert!((raw as usize) % SECTOR_SIZE == 0);
        let pointer = NonNull::new(raw.cast::<u8>()).expect("mmap never returns null on success");
        AlignedBuffer { pointer, size }
    }

    /// Size in bytes.
    #[must_use]
    pub fn len(&self) -> usize {
        self.size
    }

    /// Never true: buffers have at least one sector.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The stable address the kernel is given.
    pub(crate) fn as_mut_ptr(&self) -> *mut u8 {
        self.pointer.as_ptr()
    }

    /// The bytes.
    #[must_use]
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: the pointer is valid for `len` initialised (zeroed at allocation) bytes for
        // the life of `self`; callers only read while no kernel write to it is in flight
        // (the owning pool asserts that).
        unsafe { std::slice::from_raw_parts(self.pointer.as_ptr(), self.len()) }
    }

    /// The bytes, mutably.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as in `as_slice`, and `&mut self` makes this the only reference.
        unsafe { std::slice::from_raw_parts_mut(self.pointer.as_ptr(), self.len()) }
    }
}

impl Drop for AlignedBuffer {
    fn drop(&mut self) {
        // SAFETY: mapped in `new` with exactly this address and size; owners leak (never drop)
        // buffers that the kernel may still use. munmap of a valid mapping cannot fail.
        let result = unsafe { libc::munmap(self.pointer.as_ptr().cast(), self.size) };
        debug_assert_eq!(result, 0);
    }
}
