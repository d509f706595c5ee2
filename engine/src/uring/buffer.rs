//! Sector-aligned heap buffers that never move, for memory shared with the kernel.

use crate::constants::SECTOR_SIZE;
use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::ptr::NonNull;

/// A zeroed, 4 KiB-aligned allocation whose address is stable for its whole life.
pub struct AlignedBuffer {
    pointer: NonNull<u8>,
    layout: Layout,
}

impl std::fmt::Debug for AlignedBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AlignedBuffer({} bytes)", self.layout.size())
    }
}

impl AlignedBuffer {
    /// Allocates `size` zero bytes (rounded up to whole sectors).
    #[must_use]
    pub fn new(size: usize) -> AlignedBuffer {
        let size = crate::stdx::align_up(size.max(1), SECTOR_SIZE);
        let layout = Layout::from_size_align(size, SECTOR_SIZE).expect("valid buffer layout");
        // SAFETY: the layout has a non-zero size; a null result is handled below.
        let raw = unsafe { alloc_zeroed(layout) };
        let pointer = NonNull::new(raw).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        AlignedBuffer { pointer, layout }
    }

    /// Size in bytes.
    #[must_use]
    pub fn len(&self) -> usize {
        self.layout.size()
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
        // SAFETY: allocated in `new` with exactly this layout; owners leak (never drop) buffers
        // that the kernel may still use.
        unsafe { dealloc(self.pointer.as_ptr(), self.layout) }
    }
}
