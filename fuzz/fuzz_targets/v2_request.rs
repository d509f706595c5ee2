//! Fuzz target `v2_request`: see `ringlog_fuzz::v2_request` for its properties.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ringlog_fuzz::v2_request(data));
