//! Unit tests of the engine, kept out of the library files.

mod allocation;
mod harness;
mod journal;
mod record;
mod recovery;
mod simulation;
mod uring;
