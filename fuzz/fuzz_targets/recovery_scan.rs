//! Fuzz target `recovery_scan`: see `ringlog_fuzz::recovery_scan` for its properties.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ringlog_fuzz::recovery_scan(data));
