//! `IdHashMap`: hash maps keyed by integer ids (ledgers, index pages), hashed with one
//! multiply per word instead of SipHash.
//!
//! Every read looks its ledger up two or three times; with std's SipHash those lookups were
//! a tenth of a shard's CPU in a catch-up read (perf, 1 KiB entries). The keys are integers
//! a client picks, so the hash is seeded per map from std's random source: a client cannot
//! precompute ids that collide, and at worst slows the shard serving it.

use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};

/// A map keyed by ids. See the module docs.
pub type IdHashMap<K, V> = HashMap<K, V, IdHashState>;

/// Odd constant with well-mixed bits (the golden ratio's fraction, as Fx and rustc use).
const MULTIPLIER: u64 = 0x9e37_79b9_7f4a_7c15;

/// Builds `IdHasher`s with this map's random seed.
#[derive(Clone, Copy, Debug)]
pub struct IdHashState {
    seed: u64,
}

impl Default for IdHashState {
    fn default() -> IdHashState {
        IdHashState {
            seed: RandomState::new().hash_one(0x5eed_u64),
        }
    }
}

impl BuildHasher for IdHashState {
    type Hasher = IdHasher;

    fn build_hasher(&self) -> IdHasher {
        IdHasher { state: self.seed }
    }
}

/// Folds each word in with one multiply; `finish` rotates so the table's bucket bits (the
/// low ones) depend on the whole product, not only on the key's low bits.
#[derive(Clone, Copy, Debug)]
pub struct IdHasher {
    state: u64,
}

impl IdHasher {
    fn add(&mut self, word: u64) {
        self.state = (self.state.rotate_left(5) ^ word).wrapping_mul(MULTIPLIER);
    }
}

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
    }

    fn write_u8(&mut self, value: u8) {
        self.add(u64::from(value));
    }

    fn write_u32(&mut self, value: u32) {
        self.add(u64::from(value));
    }

    fn write_u64(&mut self, value: u64) {
        self.add(value);
    }

    fn write_i64(&mut self, value: i64) {
        self.add(u64::from_le_bytes(value.to_le_bytes()));
    }

    fn write_usize(&mut self, value: usize) {
        self.add(crate::stdx::to_u64(value));
    }

    fn finish(&self) -> u64 {
        self.state.rotate_left(26)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{LedgerId, SegmentId};

    #[test]
    fn equal_keys_hash_equal_and_neighbours_spread_over_buckets() {
        let state = IdHashState::default();
        assert_eq!(state.hash_one(LedgerId(42)), state.hash_one(LedgerId(42)));
        // Ids a metadata store hands out are close together, or share low bits: both must
        // spread over the low (bucket) bits of the hash.
        for stride in [1_i64, 1 << 10, 1 << 32] {
            let mut buckets = [0u32; 64];
            for i in 0..6400 {
                let hash = state.hash_one(LedgerId(i * stride));
                buckets[usize::try_from(hash % 64).expect("small")] += 1;
            }
            let fullest = buckets.iter().max().copied().unwrap_or(0);
            assert!(
                fullest < 200,
                "stride {stride}: a bucket got {fullest} of 6400"
            );
        }
    }

    #[test]
    fn maps_with_tuple_keys_find_what_they_hold() {
        let mut map: IdHashMap<(SegmentId, u64), usize> = IdHashMap::default();
        for page in 0..1000 {
            map.insert((SegmentId(3), page), usize::try_from(page).expect("small"));
        }
        assert_eq!(map.get(&(SegmentId(3), 999)), Some(&999));
        assert_eq!(map.get(&(SegmentId(4), 999)), None);
    }
}
