//! Newtypes for every id and position, so two `u64`s can never be swapped.

/// A BookKeeper ledger id (`i64` on the wire).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LedgerId(pub i64);

/// A BookKeeper entry id within a ledger. Meta records use negative ids.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EntryId(pub i64);

/// Entry id of the ledger-key meta record (BookKeeper's METAENTRY_ID_LEDGER_KEY).
pub const ENTRY_ID_LEDGER_KEY: EntryId = EntryId(-0x1000);
/// Entry id of the fence meta record (METAENTRY_ID_FENCE_KEY).
pub const ENTRY_ID_FENCE: EntryId = EntryId(-0x2000);
/// Entry id of the force marker (METAENTRY_ID_FORCE_LEDGER).
pub const ENTRY_ID_FORCE: EntryId = EntryId(-0x4000);
/// Entry id of the explicit-LAC record (METAENTRY_ID_LEDGER_EXPLICITLAC).
pub const ENTRY_ID_EXPLICIT_LAC: EntryId = EntryId(-0x8000);

/// A journal segment file; ids increase by one and never repeat.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SegmentId(pub u32);

/// A file of a shard's journal directory, as the `Disk` trait addresses it. Segments hold
/// the journal; an index file belongs to one sealed segment; the checkpoint is one per
/// directory. Ordered segments first, then index files, then the checkpoint, each by id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FileId {
    /// Segment file `NNNNNNNNNN.segment`.
    Segment(SegmentId),
    /// Index file `NNNNNNNNNN.index` of the sealed segment with the same id.
    Index(SegmentId),
    /// The directory's checkpoint file, `checkpoint`.
    Checkpoint,
    /// The compacted copy of sealed segment `NNNNNNNNNN.segment`, while it is written. It is
    /// only ever a temporary: `FileOp::Replace` renames it over the segment.
    SegmentCompacted(SegmentId),
    /// The index of that compacted copy, likewise renamed over `NNNNNNNNNN.index`.
    IndexCompacted(SegmentId),
}

/// A byte position inside one segment file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Position(pub u64);

/// A record's sequence number: consecutive over the whole journal of a shard.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Sequence(pub u64);

/// Where a record lives: segment and byte position. Ordered like the journal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Location {
    /// The segment file.
    pub segment: SegmentId,
    /// Byte position of the record header in that file.
    pub position: Position,
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "segment {} position {}", self.segment.0, self.position.0)
    }
}

impl SegmentId {
    /// The id after this one.
    #[must_use]
    pub fn next(self) -> SegmentId {
        SegmentId(self.0.checked_add(1).expect("segment ids exhausted"))
    }
}
