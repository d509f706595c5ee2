//! Fuzz target `sealed_open`: see `ringlog_fuzz::sealed_open` for its properties.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ringlog_fuzz::sealed_open(data));
