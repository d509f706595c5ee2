//! Fuzz target `v2_response`: see `ringlog_fuzz::v2_response` for its properties.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ringlog_fuzz::v2_response(data));
