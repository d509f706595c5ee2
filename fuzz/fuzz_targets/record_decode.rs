//! Fuzz target `record_decode`: see `ringlog_fuzz::record_decode` for its properties.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ringlog_fuzz::record_decode(data));
