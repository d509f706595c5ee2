//! `IndexPages`: a bounded cache of verified slot-table pages of sealed-segment indexes, so a
//! reader going through a sealed ledger pays one 4 KiB index read per `PAGE_SLOTS` entries.
//!
//! Capacity is `Config::index_cache_pages` pages, allocated once at open (untouched pages cost
//! no resident memory); eviction is CLOCK (second chance), which needs one bit per page and no
//! allocation per access.

use crate::constants::SECTOR_SIZE;
use crate::id_hash::IdHashMap;
use crate::ids::SegmentId;

type PageKey = (SegmentId, u64);

/// The cache. See the module docs.
#[derive(Debug)]
pub(super) struct IndexPages {
    /// `capacity` pages of `SECTOR_SIZE` bytes.
    bytes: Vec<u8>,
    /// Which page each frame holds.
    keys: Vec<Option<PageKey>>,
    /// CLOCK's second-chance bit per frame.
    referenced: Vec<bool>,
    frames: IdHashMap<PageKey, usize>,
    hand: usize,
}

impl IndexPages {
    /// An empty cache of `capacity` pages (0 disables caching).
    pub(super) fn new(capacity: usize) -> IndexPages {
        IndexPages {
            bytes: vec![0; capacity * SECTOR_SIZE],
            keys: vec![None; capacity],
            referenced: vec![false; capacity],
            frames: IdHashMap::with_capacity_and_hasher(capacity, Default::default()),
            hand: 0,
        }
    }

    /// The cached page, marked as recently used.
    pub(super) fn get(&mut self, segment: SegmentId, page: u64) -> Option<&[u8]> {
        let frame = *self.frames.get(&(segment, page))?;
        self.referenced[frame] = true;
        Some(&self.bytes[frame * SECTOR_SIZE..(frame + 1) * SECTOR_SIZE])
    }

    /// True when the page is cached (not marked as used).
    pub(super) fn contains(&self, segment: SegmentId, page: u64) -> bool {
        self.frames.contains_key(&(segment, page))
    }

    /// Caches a verified page, evicting the first frame CLOCK finds not recently used.
    pub(super) fn insert(&mut self, segment: SegmentId, page: u64, bytes: &[u8]) {
        assert_eq!(bytes.len(), SECTOR_SIZE);
        let capacity = self.keys.len();
        if capacity == 0 || self.frames.contains_key(&(segment, page)) {
            return;
        }
        let frame = loop {
            let frame = self.hand;
            self.hand = (self.hand + 1) % capacity;
            if self.referenced[frame] {
                self.referenced[frame] = false;
            } else {
                break frame;
            }
        };
        if let Some(old) = self.keys[frame].take() {
            self.frames.remove(&old);
        }
        self.keys[frame] = Some((segment, page));
        self.referenced[frame] = true;
        self.frames.insert((segment, page), frame);
        self.bytes[frame * SECTOR_SIZE..(frame + 1) * SECTOR_SIZE].copy_from_slice(bytes);
    }

    /// Drops every page of `segment`'s index (it was replaced by a compacted copy's).
    pub(super) fn forget(&mut self, segment: SegmentId) {
        for frame in 0..self.keys.len() {
            if self.keys[frame].is_some_and(|(cached, _)| cached == segment) {
                let key = self.keys[frame].take().expect("checked");
                self.frames.remove(&key);
                self.referenced[frame] = false;
            }
        }
    }

    /// Pages cached now.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.frames.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(fill: u8) -> Vec<u8> {
        vec![fill; SECTOR_SIZE]
    }

    #[test]
    fn holds_at_most_its_capacity_and_keeps_recently_used_pages() {
        let mut cache = IndexPages::new(2);
        cache.insert(SegmentId(1), 0, &page(1));
        cache.insert(SegmentId(1), 1, &page(2));
        assert_eq!(cache.get(SegmentId(1), 0).unwrap()[0], 1);
        cache.insert(SegmentId(2), 0, &page(3));
        assert_eq!(cache.len(), 2);
        assert_eq!(cache.get(SegmentId(2), 0).unwrap()[0], 3);
        // Both old pages were referenced once; CLOCK cleared one bit per pass, so exactly one
        // of them is gone and the newest is present.
        let kept = [0, 1]
            .iter()
            .filter(|&&page| cache.get(SegmentId(1), page).is_some())
            .count();
        assert_eq!(kept, 1);
    }

    #[test]
    fn zero_capacity_caches_nothing() {
        let mut cache = IndexPages::new(0);
        cache.insert(SegmentId(1), 0, &page(1));
        assert!(cache.get(SegmentId(1), 0).is_none());
    }
}
