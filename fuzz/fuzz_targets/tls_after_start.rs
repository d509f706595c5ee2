//! Fuzz target `tls_after_start`: see `ringlog_fuzz::tls_after_start` for its properties.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ringlog_fuzz::tls_after_start(data));
