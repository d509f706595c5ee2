//! The in-memory index of one shard: per ledger its master key, fenced flag, LAC, highest
//! entry, and where its entries live.
//!
//! Memory does not grow with the entries retained. Entries of a segment that is not sealed yet
//! (the active one, and one being sealed) cost 8 bytes each (`OpenSlot`: position u32, payload
//! size u32, in one array per ledger and segment indexed by `entry_id - entry_base`). Once a
//! segment's index file is durable, its arrays are replaced by one `SealedRun` per ledger
//! (usually) and the entries' slots are read from the index file's pages on demand
//! (`journal/index_pages.rs`). What stays is about 120 bytes per ledger, plus 40 bytes per
//! (ledger, sealed segment) run, plus the hash map's overhead.

use crate::constants::MASTER_KEY_SIZE;
use crate::id_hash::IdHashMap;
use crate::ids::{EntryId, LedgerId, Location, Position, SegmentId};
use crate::index_file::Run;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Where one record lives, packed to 12 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    segment: u32,
    position: u32,
    payload_size: u32,
}

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
}

/// An entry of an unsealed segment: its position and payload size (the segment is the
/// array's). `payload_size == u32::MAX` is an id the array spans but the segment lacks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpenSlot {
    /// Byte position of the record in its segment.
    pub position: u32,
    /// Payload size, `u32::MAX` for none.
    pub payload_size: u32,
}

const OPEN_SLOT_EMPTY: OpenSlot = OpenSlot {
    position: 0,
    payload_size: u32::MAX,
};
const _: () = assert!(std::mem::size_of::<OpenSlot>() == 8);

impl OpenSlot {
    /// True when the id holds an entry.
    #[must_use]
    pub fn is_held(&self) -> bool {
        self.payload_size != u32::MAX
    }
}

/// One ledger's entries in one unsealed segment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenSlots {
    /// The segment.
    pub segment: SegmentId,
    /// Entry id of `slots[0]`.
    pub entry_base: i64,
    /// One slot per id from `entry_base`.
    pub slots: Vec<OpenSlot>,
}

impl OpenSlots {
    fn get(&self, entry: EntryId) -> Option<OpenSlot> {
        let offset = usize::try_from(entry.0.checked_sub(self.entry_base)?).ok()?;
        self.slots.get(offset).copied().filter(OpenSlot::is_held)
    }

    fn insert(&mut self, entry: EntryId, slot: OpenSlot) {
        if self.slots.is_empty() {
            self.entry_base = entry.0;
        }
        if entry.0 < self.entry_base {
            // Rare: a recovery add below the first entry seen in this segment. Shift once.
            let shift = usize::try_from(self.entry_base - entry.0).expect("positive");
            let mut slots = vec![OPEN_SLOT_EMPTY; shift];
            slots.extend_from_slice(&self.slots);
            self.slots = slots;
            self.entry_base = entry.0;
        }
        let offset = usize::try_from(entry.0 - self.entry_base).expect("non-negative offset");
        if offset >= self.slots.len() {
            self.slots.resize(offset + 1, OPEN_SLOT_EMPTY);
        }
        self.slots[offset] = slot;
    }

    /// Held entries as (entry id, slot), ascending.
    pub fn held(&self) -> impl Iterator<Item = (EntryId, OpenSlot)> + '_ {
        let base = self.entry_base;
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, slot)| slot.is_held())
            .map(move |(i, slot)| (EntryId(base + i64::try_from(i).expect("fits")), *slot))
    }
}

/// A run of a sealed segment's index, as memory keeps it (`index_file::Run` without the
/// ledger, which is the owner's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SealedRun {
    /// The sealed segment.
    pub segment: SegmentId,
    /// First and last entry id of the run.
    pub entry_first: i64,
    pub entry_last: i64,
    /// Slot of `entry_first` in the segment's slot table.
    pub slot_first: u64,
    /// Entries held in the range.
    pub entries: u32,
    /// Bytes of their records.
    pub bytes: u64,
}

impl SealedRun {
    /// The run as memory keeps it.
    #[must_use]
    pub fn of(segment: SegmentId, run: &Run) -> SealedRun {
        SealedRun {
            segment,
            entry_first: run.entry_first.0,
            entry_last: run.entry_last.0,
            slot_first: run.slot_first,
            entries: run.entries,
            bytes: run.bytes,
        }
    }

    /// True when the run's range holds `entry`.
    #[must_use]
    pub fn spans(&self, entry: EntryId) -> bool {
        (self.entry_first..=self.entry_last).contains(&entry.0)
    }

    /// The slot of `entry` in the segment's slot table (the run must span it).
    #[must_use]
    pub fn slot_of(&self, entry: EntryId) -> u64 {
        assert!(self.spans(entry));
        self.slot_first + u64::try_from(entry.0 - self.entry_first).expect("spanned")
    }

    /// True when every id of the range is held (no holes).
    #[must_use]
    pub fn is_dense(&self) -> bool {
        i64::from(self.entries) == self.entry_last - self.entry_first + 1
    }
}

/// Where a sealed segment's slot table is, and how much of it is live, per segment (not per
/// entry).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SealedSegment {
    /// Byte offset of the slot table in the index file.
    pub slot_table_offset: u64,
    /// Slots in the table.
    pub slot_count: u64,
    /// Bytes of entry records of ledgers not deleted (set by `Index::seal`).
    pub bytes_live: u64,
    /// The segment file's generation (0 until it is first compacted).
    pub generation: u32,
    /// The segment file's size: the journal's segment size, or a compacted copy's.
    pub file_size: u64,
}

/// Where an entry may be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lookup {
    /// In an unsealed segment, here.
    Found(Slot),
    /// Maybe in this sealed run: its slot must be read from the segment's index. `candidate`
    /// counts the sealed runs already tried (pass `candidate + 1` to look further back).
    Sealed { run: SealedRun, candidate: usize },
    /// Not stored here.
    Missing,
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
    /// The client's digest type as learned from the bodies (`digest.rs`), and the bodies
    /// that settled nothing so far.
    pub digest: crate::digest::DigestKind,
    pub digest_tries: u8,
    /// Entries in unsealed segments, oldest segment first.
    open: Vec<OpenSlots>,
    /// Runs of sealed segments, oldest segment first.
    sealed: Vec<SealedRun>,
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
            digest: crate::digest::DigestKind::Unknown,
            digest_tries: 0,
            open: Vec::new(),
            sealed: Vec::new(),
        }
    }

    /// Where `entry` may be: unsealed segments first (newest first; a re-added entry's latest
    /// copy wins), then the sealed runs spanning it, newest first, skipping `skip` of them.
    #[must_use]
    pub fn locate(&self, entry: EntryId, skip: usize) -> Lookup {
        if skip == 0 {
            for open in self.open.iter().rev() {
                if let Some(slot) = open.get(entry) {
                    let location = Location {
                        segment: open.segment,
                        position: Position(u64::from(slot.position)),
                    };
                    return Lookup::Found(Slot::new(location, slot.payload_size));
                }
            }
        }
        let spanning = self.sealed.iter().rev().filter(|run| run.spans(entry));
        match spanning.enumerate().nth(skip) {
            Some((candidate, run)) => Lookup::Sealed {
                run: *run,
                candidate,
            },
            None => Lookup::Missing,
        }
    }

    /// Entry ids this ledger is known to hold without reading any index page: every entry of
    /// unsealed segments and of dense sealed runs, ascending, possibly repeated. A sealed run
    /// with holes contributes nothing (reading its pages would need the disk).
    pub fn entries_known(&self) -> Vec<EntryId> {
        let mut entries: Vec<EntryId> = self
            .sealed
            .iter()
            .filter(|run| run.is_dense())
            .flat_map(|run| (run.entry_first..=run.entry_last).map(EntryId))
            .chain(
                self.open
                    .iter()
                    .flat_map(|open| open.held().map(|(id, _)| id)),
            )
            .collect();
        entries.sort_unstable();
        entries.dedup();
        entries
    }

    /// Runs of sealed segments, oldest segment first.
    #[must_use]
    pub fn sealed_runs(&self) -> &[SealedRun] {
        &self.sealed
    }

    /// Entry arrays of unsealed segments, oldest segment first.
    #[must_use]
    pub fn open_slots(&self) -> &[OpenSlots] {
        &self.open
    }

    fn insert(&mut self, entry: EntryId, slot: Slot) {
        assert!(entry.0 >= 0);
        let location = slot.location();
        let open_slot = OpenSlot {
            position: u32::try_from(location.position.0).expect("fits u32"),
            payload_size: slot.payload_size(),
        };
        match self.open.last_mut() {
            Some(open) if open.segment == location.segment => open.insert(entry, open_slot),
            last => {
                assert!(
                    last.is_none_or(|open| open.segment < location.segment),
                    "entries arrive in journal order"
                );
                let mut open = OpenSlots {
                    segment: location.segment,
                    entry_base: entry.0,
                    slots: Vec::new(),
                };
                open.insert(entry, open_slot);
                self.open.push(open);
            }
        }
        self.entry_last = self.entry_last.max(entry.0);
        self.entry_staged_max = self.entry_staged_max.max(entry.0);
    }
}

/// All ledgers of one shard.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Index {
    ledgers: IdHashMap<LedgerId, Ledger>,
    /// Where each sealed segment's slot table is.
    sealed_segments: BTreeMap<SegmentId, SealedSegment>,
    /// Deleted ledgers, with the last segment that may hold their records.
    tombstones: BTreeMap<LedgerId, SegmentId>,
    /// Entries found damaged and not repaired yet (docs/scrub.md, "Repair"), at most
    /// `checkpoint::DAMAGED_MAX`: kept in the checkpoint, so a restart asks for their repair.
    damaged: BTreeSet<(LedgerId, EntryId)>,
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

    /// Records a durable entry of an unsealed segment.
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

    /// Ledgers with entries in unsealed segment `segment`, ascending: the order of its index.
    #[must_use]
    pub fn ledgers_in_open_segment(&self, segment: SegmentId) -> Vec<LedgerId> {
        let mut ledgers: Vec<LedgerId> = self
            .ledgers
            .iter()
            .filter(|(_, state)| state.open.iter().any(|open| open.segment == segment))
            .map(|(&id, _)| id)
            .collect();
        ledgers.sort_unstable();
        ledgers
    }

    /// One ledger's entry array of unsealed segment `segment`.
    #[must_use]
    pub fn open_segment_slots(&self, ledger: LedgerId, segment: SegmentId) -> Option<&OpenSlots> {
        let state = self.ledgers.get(&ledger)?;
        state.open.iter().find(|open| open.segment == segment)
    }

    /// `segment`'s index is durable: its entry arrays give way to its runs (which must come
    /// from those arrays, or from the index file at open), and its slot table is recorded.
    pub fn seal(&mut self, segment: SegmentId, mut table: SealedSegment, runs: &[Run]) {
        for state in self.ledgers.values_mut() {
            state.open.retain(|open| open.segment != segment);
        }
        table.bytes_live = 0;
        for run in runs {
            // An index written before its ledger was deleted still lists it.
            if self.tombstones.contains_key(&run.ledger) {
                continue;
            }
            table.bytes_live += run.bytes;
            // A run of a ledger the checkpoint did not know (its key record was lost with an
            // index rebuilt from a segment) cannot be read without its key: keep it anyway,
            // keyed by the all-zero key recovery uses for records seen before their key.
            self.create(run.ledger, [0u8; MASTER_KEY_SIZE]);
            let state = self.ledgers.get_mut(&run.ledger).expect("created");
            let sealed = SealedRun::of(segment, run);
            let at = state
                .sealed
                .partition_point(|existing| existing.segment <= segment);
            state.sealed.insert(at, sealed);
            state.entry_last = state.entry_last.max(run.entry_last.0);
            state.entry_staged_max = state.entry_staged_max.max(run.entry_last.0);
        }
        self.sealed_segments.insert(segment, table);
    }

    /// `segment` was replaced by its compacted copy, whose index is durable: its runs give way
    /// to the copy's (`runs`, of ledgers live when the copy was planned).
    pub fn reseal(&mut self, segment: SegmentId, table: SealedSegment, runs: &[Run]) {
        assert!(self.sealed_segments.contains_key(&segment));
        for state in self.ledgers.values_mut() {
            state.sealed.retain(|run| run.segment != segment);
        }
        self.seal(segment, table, runs);
    }

    /// The runs sealed segment `segment` holds of ledgers not deleted, ascending by ledger
    /// and entry: its slot table's order.
    #[must_use]
    pub fn sealed_runs_live(&self, segment: SegmentId) -> Vec<(LedgerId, SealedRun)> {
        let mut runs: Vec<(LedgerId, SealedRun)> = self
            .ledgers
            .iter()
            .flat_map(|(&ledger, state)| {
                state
                    .sealed
                    .iter()
                    .filter(move |run| run.segment == segment)
                    .map(move |run| (ledger, *run))
            })
            .collect();
        runs.sort_unstable_by_key(|(ledger, run)| (*ledger, run.entry_first));
        runs
    }

    /// The sealed segment below `before` with the smallest live fraction under `threshold`
    /// (live bytes over file size; segments with nothing live are removed, not compacted)
    /// whose copy is at most `copy_size_max` bytes (it must fit the free space), leaving out
    /// those `excluded` refuses and those holding an explicit-LAC record (the checkpoint
    /// points at it).
    #[must_use]
    pub fn compaction_candidate(
        &self,
        before: SegmentId,
        threshold: f64,
        copy_size_max: u64,
        excluded: impl Fn(SegmentId) -> bool,
    ) -> Option<SegmentId> {
        let lac_segments = self.explicit_lac_segments();
        #[allow(clippy::cast_precision_loss)]
        let fraction =
            |table: &SealedSegment| table.bytes_live as f64 / table.file_size.max(1) as f64;
        // A copy is the header plus the live records, in whole sectors: a segment already
        // that small gains nothing, and its fraction stays under any threshold when little is
        // live (a few hundred bytes in an 8 KiB copy), so it would be copied forever.
        let copy_size = |table: &SealedSegment| {
            crate::stdx::align_up_u64(
                crate::stdx::to_u64(crate::constants::SEGMENT_HEADER_SIZE) + table.bytes_live,
                crate::stdx::to_u64(crate::constants::SECTOR_SIZE),
            )
        };
        self.sealed_segments
            .range(..before)
            .filter(|(segment, table)| {
                table.bytes_live > 0
                    && fraction(table) < threshold
                    && copy_size(table) < table.file_size
                    && copy_size(table) <= copy_size_max
                    && !lac_segments.contains(segment)
                    && !excluded(**segment)
            })
            .min_by(|a, b| fraction(a.1).total_cmp(&fraction(b.1)))
            .map(|(&segment, _)| segment)
    }

    /// The newest sealed segment below `before` never rewritten (generation 0) whose live
    /// entries are runs of two or more ledgers, interleaved as their commits wrote them: the
    /// next one to sort by (ledger, entry). Newest first, because a lagging reader reads
    /// recent data; the same exclusions as `compaction_candidate`.
    #[must_use]
    pub fn sort_candidate(
        &self,
        before: SegmentId,
        excluded: impl Fn(SegmentId) -> bool,
    ) -> Option<SegmentId> {
        let lac_segments = self.explicit_lac_segments();
        let unsorted = |segment: &SegmentId| {
            self.sealed_segments
                .get(segment)
                .is_some_and(|table| table.generation == 0 && table.bytes_live > 0)
        };
        let mut runs: HashMap<SegmentId, u32> = HashMap::new();
        for run in self.ledgers.values().flat_map(|state| state.sealed.iter()) {
            if run.segment < before && unsorted(&run.segment) {
                *runs.entry(run.segment).or_default() += 1;
            }
        }
        runs.into_iter()
            .filter(|&(segment, count)| {
                count >= 2 && !lac_segments.contains(&segment) && !excluded(segment)
            })
            .map(|(segment, _)| segment)
            .max()
    }

    fn explicit_lac_segments(&self) -> std::collections::BTreeSet<SegmentId> {
        self.ledgers
            .values()
            .filter_map(|state| state.explicit_lac.map(|slot| slot.location().segment))
            .collect()
    }

    /// True when the copy of `entry` that reads find first lies in `segment` (damage there
    /// matters; once a repair wrote a newer copy elsewhere, it no longer does).
    #[must_use]
    pub fn entry_current_in(&self, ledger: LedgerId, entry: EntryId, segment: SegmentId) -> bool {
        match self.ledger(ledger).map(|state| state.locate(entry, 0)) {
            Some(Lookup::Found(slot)) => slot.location().segment == segment,
            Some(Lookup::Sealed { run, .. }) => run.segment == segment,
            Some(Lookup::Missing) | None => false,
        }
    }

    /// Where a sealed segment's slot table is.
    #[must_use]
    pub fn sealed_segment(&self, segment: SegmentId) -> Option<SealedSegment> {
        self.sealed_segments.get(&segment).copied()
    }

    /// Sealed segments, ascending.
    pub fn sealed_segments(&self) -> impl Iterator<Item = SegmentId> + '_ {
        self.sealed_segments.keys().copied()
    }

    /// Bytes of memory the entry arrays of unsealed segments hold (capacity, not length).
    #[must_use]
    pub fn open_slot_bytes(&self) -> usize {
        self.ledgers
            .values()
            .flat_map(|state| state.open.iter())
            .map(|open| open.slots.capacity() * std::mem::size_of::<OpenSlot>())
            .sum()
    }

    /// Deletes a ledger: it is gone from the index (reads find no ledger), its bytes stop
    /// counting as live in its sealed segments, and a tombstone keeps its records from
    /// coming back while any segment up to `segment_last` may hold one. Returns false if the
    /// ledger was not here.
    pub fn delete(&mut self, ledger: LedgerId, segment_last: SegmentId) -> bool {
        let Some(state) = self.ledgers.remove(&ledger) else {
            return false;
        };
        for run in &state.sealed {
            if let Some(table) = self.sealed_segments.get_mut(&run.segment) {
                table.bytes_live = table.bytes_live.saturating_sub(run.bytes);
            }
        }
        self.tombstones.insert(ledger, segment_last);
        self.damaged
            .retain(|&(damaged_ledger, _)| damaged_ledger != ledger);
        true
    }

    /// Records a damaged entry; false when it was recorded already or the set is full.
    pub fn damaged_insert(&mut self, ledger: LedgerId, entry: EntryId) -> bool {
        if self.damaged.len() >= crate::checkpoint::DAMAGED_MAX {
            return false;
        }
        self.damaged.insert((ledger, entry))
    }

    /// Forgets a damaged entry (repaired); false if it was not recorded.
    pub fn damaged_remove(&mut self, ledger: LedgerId, entry: EntryId) -> bool {
        self.damaged.remove(&(ledger, entry))
    }

    /// The entries found damaged and not repaired yet, ascending.
    pub fn damaged(&self) -> impl Iterator<Item = (LedgerId, EntryId)> + '_ {
        self.damaged.iter().copied()
    }

    /// True when the ledger was deleted and its tombstone is still kept.
    #[must_use]
    pub fn is_deleted(&self, ledger: LedgerId) -> bool {
        self.tombstones.contains_key(&ledger)
    }

    /// Records a tombstone read from the checkpoint.
    pub fn tombstone_insert(&mut self, ledger: LedgerId, segment_last: SegmentId) {
        assert!(!self.ledgers.contains_key(&ledger));
        self.tombstones.insert(ledger, segment_last);
    }

    /// Tombstones, ascending by ledger.
    pub fn tombstones(&self) -> impl Iterator<Item = (LedgerId, SegmentId)> + '_ {
        self.tombstones
            .iter()
            .map(|(&ledger, &segment)| (ledger, segment))
    }

    /// Drops the tombstones no segment can hold a record of any more: every segment up to
    /// their last one is gone (`oldest` is the oldest segment left).
    pub fn tombstones_expire(&mut self, oldest: SegmentId) {
        self.tombstones
            .retain(|_, segment_last| *segment_last >= oldest);
    }

    /// Sealed segments below `before` that hold nothing live: no entry of a ledger not
    /// deleted, and no ledger's explicit-LAC record (the checkpoint points at it).
    #[must_use]
    pub fn sealed_segments_dead(&self, before: SegmentId) -> Vec<SegmentId> {
        let mut dead: Vec<SegmentId> = self
            .sealed_segments
            .range(..before)
            .filter(|(_, table)| table.bytes_live == 0)
            .map(|(&segment, _)| segment)
            .collect();
        if !dead.is_empty() {
            let lac_segments: std::collections::BTreeSet<SegmentId> = self
                .ledgers
                .values()
                .filter_map(|state| state.explicit_lac.map(|slot| slot.location().segment))
                .collect();
            dead.retain(|segment| !lac_segments.contains(segment));
        }
        dead
    }

    /// True when some sealed segment below `before` has nothing live (cheaper than
    /// `sealed_segments_dead`: no list, no explicit-LAC check).
    #[must_use]
    pub fn sealed_segment_dead_any(&self, before: SegmentId) -> bool {
        self.sealed_segments
            .range(..before)
            .any(|(_, table)| table.bytes_live == 0)
    }

    /// A sealed segment's files are gone.
    pub fn sealed_segment_remove(&mut self, segment: SegmentId) {
        let table = self.sealed_segments.remove(&segment);
        assert!(table.is_some_and(|table| table.bytes_live == 0));
    }
}
