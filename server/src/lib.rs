//! ringlog server library.
