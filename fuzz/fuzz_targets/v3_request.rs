//! Fuzz target `v3_request`: see `ringlog_fuzz::v3_request` for its properties.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ringlog_fuzz::v3_request(data));
