//! `Event`: what `Journal::poll` reports, in journal order for appends.

use super::scrub::DamageFound;
use super::ReadSlot;

/// What `poll` reports, in journal order for appends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The record and every journal byte before it are durable.
    Durable {
        /// The caller's token.
        token: u64,
    },
    /// A deferred record and every byte before it were written (not yet synced).
    Written {
        /// The caller's token.
        token: u64,
    },
    /// The journal was poisoned before this record became durable: never acknowledge it.
    Failed {
        /// The caller's token.
        token: u64,
    },
    /// A disk read finished: fetch it with `read_result`, then `read_release`.
    ReadDone {
        /// The caller's token.
        token: u64,
        /// Where the result is held.
        slot: ReadSlot,
    },
    /// The scrubber found damage in a sealed segment or its index (`scrub.rs`). Reads of a
    /// damaged entry still answer an I/O error, as before.
    Damage(DamageFound),
}
