//! The in-memory index of one shard: per ledger its master key, fenced flag, LAC, highest
//! entry and where every durable entry lives.
//!
//! Memory: 12 bytes per indexed entry (`Slot`: segment u32, position u32, size u32) in one
//! array per ledger, indexed by `entry_id - entry_base`, plus a fixed ~120 bytes per ledger and
//! the hash map's overhead. Holes left by striping (ensemble > write quorum) cost a slot each;
//! adds more than `ENTRY_GAP_MAX` ids beyond the highest entry are refused, which bounds them.

use crate::constants::MASTER_KEY_SIZE;
use crate::ids::{EntryId, LedgerId, Location, Position, SegmentId};
use std::collections::HashMap;

/// Where one entry's record lives, packed to 12 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    segment: u32,
    position: u32,
    payload_size: u32,
}

const SLOT_EMPTY: Slot = Slot {
    segment: 0,
    position: 0,
    payload_size: u32::MAX,
};
const _: () = assert!(std::mem::size_of::<Slot>() == 12);

impl Slot {
    /// A slot for a record at `location` with `payload_size` bytes.
    #[must_use]
    pub fn new(location: Location, payload_size: u32) -> Slot {
        assert!(payload_size != u32::MAX);
        let position = u32::try_from(location.position.0).expect("segment positions fit u32");
        Slot {
            segment: location.segment.0,
            position,
            payload_size,
        }
    }
    /// The record's location.
    #[must_use]
    pub fn location(&self) -> Location {
        Location {
            segment: SegmentId(self.segment),
            position: Position(u64::from(self.position)),
        }
    }
    /// The record's payload size.
    #[must_use]
    pub fn payload_size(&self) -> u32 {
        self.payload_size
    }
    fn is_empty(&self) -> bool {
        self.payload_size == u32::MAX
    }
}

/// One ledger's state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ledger {
    /// The key the first add carried.
    pub master_key: [u8; MASTER_KEY_SIZE],
    /// Fenced: normal adds are refused (set at staging time, so no add slips in after).
    pub fenced: bool,
    /// Highest durable entry id, -1 when none.
    pub entry_last: i64,
    /// Highest entry id staged, durable or not: bounds the gap check.
    pub entry_staged_max: i64,
    /// Last-add-confirmed: the maximum body LAC over durable entries, -1 when none.
    pub last_add_confirmed: i64,
    /// The durable explicit-LAC record, if any.
    pub explicit_lac: Option<Slot>,
    entry_base: i64,
    slots: Vec<Slot>,
}

impl Ledger {
    fn new(master_key: [u8; MASTER_KEY_SIZE]) -> Ledger {
        Ledger {
            master_key,
            fenced: false,
            entry_last: -1,
            entry_staged_max: -1,
            last_add_confirmed: -1,
            explicit_lac: None,
            entry_base: 0,
            slots: Vec::new(),
        }
    }

    /// The slot of a durable entry.
    #[must_use]
    pub fn slot(&self, entry: EntryId) -> Option<Slot> {
        let offset = entry.0.checked_sub(self.entry_base)?;
        let slot = *self.slots.get(usize::try_from(offset).ok()?)?;
        (!slot.is_empty()).then_some(slot)
    }

    /// Durable entry ids in ascending order.
    pub fn entries(&self) -> impl Iterator<Item = EntryId> + '_ {
        let base = self.entry_base;
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, slot)| !slot.is_empty())
            .map(move |(i, _)| EntryId(base + i64::try_from(i).expect("slot index fits i64")))
    }

    fn insert(&mut self, entry: EntryId, slot: Slot) {
        assert!(entry.0 >= 0);
        if self.slots.is_empty() {
            self.entry_base = entry.0;
        }
        if entry.0 < self.entry_base {
            // Rare: a recovery add below the first entry seen. Shift once.
            let shift = usize::try_from(self.entry_base - entry.0).expect("bounded by gap check");
            let mut slots = vec![SLOT_EMPTY; shift];
            slots.extend_from_slice(&self.slots);
            self.slots = slots;
            self.entry_base = entry.0;
        }
        let offset = usize::try_from(entry.0 - self.entry_base).expect("non-negative offset");
        if offset >= self.slots.len() {
            self.slots.resize(offset + 1, SLOT_EMPTY);
        }
        self.slots[offset] = slot;
        self.entry_last = self.entry_last.max(entry.0);
        self.entry_staged_max = self.entry_staged_max.max(entry.0);
    }
}

/// All ledgers of one shard.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Index {
    ledgers: HashMap<LedgerId, Ledger>,
}

impl Index {
    /// A ledger's state.
    #[must_use]
    pub fn ledger(&self, ledger: LedgerId) -> Option<&Ledger> {
        self.ledgers.get(&ledger)
    }

    /// A ledger's state, mutably.
    pub fn ledger_mut(&mut self, ledger: LedgerId) -> Option<&mut Ledger> {
        self.ledgers.get_mut(&ledger)
    }

    /// Creates a ledger with its key; returns false if it existed.
    pub fn create(&mut self, ledger: LedgerId, master_key: [u8; MASTER_KEY_SIZE]) -> bool {
        if self.ledgers.contains_key(&ledger) {
            return false;
        }
        self.ledgers.insert(ledger, Ledger::new(master_key));
        true
    }

    /// Records a durable entry.
    pub fn insert_entry(&mut self, ledger: LedgerId, entry: EntryId, slot: Slot, lac: i64) {
        let state = self
            .ledgers
            .get_mut(&ledger)
            .expect("entries follow their ledger key");
        state.insert(entry, slot);
        state.last_add_confirmed = state.last_add_confirmed.max(lac);
    }

    /// Ledger ids, unordered.
    pub fn ledgers(&self) -> impl Iterator<Item = LedgerId> + '_ {
        self.ledgers.keys().copied()
    }

    /// Number of ledgers.
    #[must_use]
    pub fn ledger_count(&self) -> usize {
        self.ledgers.len()
    }
}
