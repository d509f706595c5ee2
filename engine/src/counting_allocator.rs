//! A global allocator that counts the calling thread's allocations, for the tests that prove
//! a hot path allocates nothing per entry (the engine's and the server's). Compiled only for
//! tests and with the `counting-allocator` feature, which only dev-dependencies enable.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

/// Forwards to the system allocator and counts allocations per thread, so tests running in
/// parallel in the same binary do not disturb each other's counts. Install it with
/// `#[global_allocator] static GLOBAL: CountingAllocator = CountingAllocator;`.
pub struct CountingAllocator;

// A global allocator cannot be written without `unsafe`; this one exists only for tests.
#[allow(unsafe_code)]
// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|count| count.set(count.get() + 1));
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(pointer, layout) }
    }
}

/// Allocations made by the calling thread so far (only while `CountingAllocator` is the
/// global allocator).
#[must_use]
pub fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}
