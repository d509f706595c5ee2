//! The one integration-test binary: end-to-end tests against real `ringlog serve` processes
//! on loopback. Each test starts its own server(s) on a fresh data directory and an ephemeral
//! port; tests that need io_uring skip with a reason (or fail under CI/REQUIRE_URING).

// Helpers here are test code too (clippy's allow-unwrap-in-tests only covers #[test] bodies):
// an unwrap that fails is a failed test with its location, which is what we want.
#![allow(clippy::unwrap_used)]

mod admin;
mod allocation;
mod backpressure;
mod config;
mod cross_shard;
mod data_dirs;
mod disk_full;
mod durability;
mod fencing;
mod gc;
mod hostile;
mod hostile_load;
mod large;
mod metrics;
mod registration;
mod repair;
mod scrub;
mod startup;
mod support;
mod tls;
mod v3;
