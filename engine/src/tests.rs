//! Unit tests of the engine, kept out of the library files.

mod allocation;
mod commit_block;
mod compact;
mod delete;
mod disk_full;
mod disk_pressure;
mod file_name;
mod harness;
mod journal;
mod read_ahead;
mod read_pace;
mod record;
mod recovery;
mod recycle;
mod scrub;
mod sealed;
mod sim_disk;
mod simulation;
mod uring;
