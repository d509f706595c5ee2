//! ringlog-bench.
fn main() {}
