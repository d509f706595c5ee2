//! ringlog server binary.
fn main() {}
