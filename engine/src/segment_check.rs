//! The checker `ringlog verify` and the scrubber share (docs/scrub.md): a sealed segment's
//! records and its index file, checked piece by piece over bytes the caller has read. `verify`
//! reads them with `std::fs` (`inspect/walk.rs`, `inspect/verify.rs`); the scrubber reads them
//! through the shard's ring (`journal/scrub.rs`). Neither keeps rules of its own.
//!
//! `RecordScan` applies the framing rules recovery applies to one segment alone (docs/format.md,
//! "Recovery rules"): zeros inside a sector are commit padding, and a sector boundary that
//! holds no record of this segment (zeros, the end of the file, or a recycled segment's stale
//! records) ends the data. It is resumable: when the next record is not in the bytes given, it
//! asks for them (`ScanStep::Need`), so one bounded buffer serves a segment of any size.
//! `ChainCheck` follows the sequence and hash chain across records and compares the ends with
//! the index. The index functions check one piece of an index file each.

use crate::constants::{RECORD_ALIGNMENT, RECORD_HEADER_SIZE, SECTOR_SIZE};
use crate::ids::{LedgerId, Location, Position, SegmentId, Sequence};
use crate::index_file::{self, FileFormatError, IndexHeader, Run};
use crate::record::{self, RecordError, RecordHeader};
use crate::segment::CommitBlock;
use crate::stdx::{align_down_u64, align_up_u64, to_u64, to_usize};

const SECTOR: u64 = SECTOR_SIZE as u64;

/// A record the scan found: its header verified and naming its place.
#[derive(Clone, Copy, Debug)]
pub struct WalkRecord {
    /// Where its header starts.
    pub position: Position,
    /// The header.
    pub header: RecordHeader,
    /// The header's checksum, which the next record chains to.
    pub checksum_header: u32,
    /// Bytes it occupies, padding included.
    pub size: u64,
    /// `Err` when its payload checksum or its padding is wrong (the header is still sound,
    /// so the scan goes on past it).
    pub payload: Result<(), RecordError>,
}

/// Where and why a scan ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WalkEnd {
    /// A sector boundary with zeros, or the end of the file: the data ends at `position`.
    Clean {
        /// End of the data (a sector boundary, or the file's end).
        position: Position,
    },
    /// Something that is not a record of this segment where one or zero padding should be.
    Bad {
        /// Where.
        position: Position,
        /// What: `Misplaced` for a verified header naming another place.
        reason: WalkBad,
    },
}

/// What was found where a record should be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WalkBad {
    /// Framing or checksum.
    Record(RecordError),
    /// A valid header that names another place (a misdirected write, or a recycled
    /// segment's stale record).
    Misplaced(Location),
    /// Non-zero bytes in a commit's padding.
    Padding,
}

/// Bytes of a segment file the caller holds: `bytes` are the file's from `start`.
#[derive(Clone, Copy, Debug)]
pub struct Chunk<'a> {
    /// The file's bytes from `start`.
    pub bytes: &'a [u8],
    /// Their position in the file.
    pub start: u64,
}

impl Chunk<'_> {
    /// No bytes.
    pub const EMPTY: Chunk<'static> = Chunk {
        bytes: &[],
        start: 0,
    };
}

/// One step of a scan.
#[derive(Clone, Copy, Debug)]
pub enum ScanStep {
    /// The next record.
    Record(WalkRecord),
    /// The scan is over.
    End(WalkEnd),
    /// The next step needs the file's bytes from `start` (sector-aligned), at least `length`
    /// of them (fewer only at the file's end): call again with a chunk that holds them.
    Need {
        /// Where the chunk must start.
        start: u64,
        /// Bytes it must hold at least.
        length: usize,
    },
}

/// What `RecordScan::resync` needs to go on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResyncNeed {
    /// Where the chunk must start.
    pub start: u64,
    /// Bytes it must hold at least.
    pub length: usize,
    /// Where the search goes on.
    pub from: u64,
}

/// A segment's records in position order (module doc).
#[derive(Clone, Copy, Debug)]
pub struct RecordScan {
    segment: SegmentId,
    /// The segment's commit block in bytes: padding runs to the next boundary of it.
    block: u64,
    file_size: u64,
    position: u64,
    ended: bool,
}

/// What a scan needs from the chunk for the next step.
enum Bytes<'a> {
    Held(&'a [u8]),
    Need { start: u64, length: usize },
}

impl RecordScan {
    /// A scan of segment `segment`, whose file is `file_size` bytes and whose commits are
    /// padded to `block` (its header says which), from `position` (a record's start: the
    /// first one is at the end of the segment header).
    #[must_use]
    pub fn new(
        segment: SegmentId,
        file_size: u64,
        position: u64,
        block: CommitBlock,
    ) -> RecordScan {
        assert!(position % to_u64(RECORD_ALIGNMENT) == 0);
        RecordScan {
            segment,
            block: block.size_u64(),
            file_size,
            position,
            ended: false,
        }
    }

    /// Where the next step looks.
    #[must_use]
    pub fn position(&self) -> u64 {
        self.position
    }

    /// The next record, where the data ends, or the bytes the next step needs. After `End`,
    /// `End` again (until `resync`).
    pub fn next_step(&mut self, chunk: Chunk<'_>) -> ScanStep {
        loop {
            let position = self.position;
            let room_for_header = position + to_u64(RECORD_HEADER_SIZE) <= self.file_size;
            if !self.ended
                && !room_for_header
                && position < self.file_size
                && position % self.block != 0
            {
                // The last record ends within the file's last block, too close to its end for
                // another header: the rest is the commit's zero padding, and the data runs to
                // the end of the block, as the index's data end says.
                let gap = to_usize(self.file_size - position);
                match self.bytes(chunk, position, gap) {
                    Bytes::Need { start, length } => return ScanStep::Need { start, length },
                    Bytes::Held(bytes) if bytes.iter().any(|&byte| byte != 0) => {
                        return self.end_bad(position, WalkBad::Padding);
                    }
                    Bytes::Held(_) => {}
                }
                self.position = self.file_size;
                continue;
            }
            if self.ended || !room_for_header {
                self.ended = true;
                let end = position.min(self.file_size);
                return ScanStep::End(WalkEnd::Clean {
                    position: Position(end),
                });
            }
            let found = match self.record_at(chunk, position) {
                Ok(found) => found,
                Err((start, length)) => return ScanStep::Need { start, length },
            };
            match found {
                Ok(record) => {
                    self.position += record.size;
                    return ScanStep::Record(record);
                }
                Err(WalkBad::Record(RecordError::Zero)) if position % self.block != 0 => {
                    let boundary = align_up_u64(position, self.block).min(self.file_size);
                    let gap = to_usize(boundary - position);
                    match self.bytes(chunk, position, gap) {
                        Bytes::Need { start, length } => return ScanStep::Need { start, length },
                        Bytes::Held(bytes) if bytes.iter().any(|&byte| byte != 0) => {
                            return self.end_bad(position, WalkBad::Padding);
                        }
                        Bytes::Held(_) => self.position = boundary,
                    }
                }
                Err(WalkBad::Record(RecordError::Zero)) => {
                    self.ended = true;
                    return ScanStep::End(WalkEnd::Clean {
                        position: Position(position),
                    });
                }
                Err(reason) => return self.end_bad(position, reason),
            }
        }
    }

    /// After damage, looks for the next sound record of this segment from `from` (a record
    /// alignment past the damage) up to `data_end`: the first position, in steps of the record
    /// alignment, whose header verifies and names that very place (a header carries its own
    /// segment and position, so stale or random bytes do not pass). Returns its position, or
    /// `None` when none lies before `data_end`, or the bytes the search needs next (call again
    /// with `ResyncNeed::from`); the scan goes on from the record found.
    pub fn resync(
        &mut self,
        chunk: Chunk<'_>,
        from: u64,
        data_end: u64,
    ) -> Result<Option<u64>, ResyncNeed> {
        let step = to_u64(RECORD_ALIGNMENT);
        let mut position = align_up_u64(from, step);
        while position + to_u64(RECORD_HEADER_SIZE) <= data_end.min(self.file_size) {
            let head = match self.bytes(chunk, position, RECORD_HEADER_SIZE) {
                Bytes::Held(head) => head,
                Bytes::Need { start, length } => {
                    return Err(ResyncNeed {
                        start,
                        length,
                        from: position,
                    })
                }
            };
            let sound = record::decode_header(head).is_ok_and(|(header, _)| {
                header.location
                    == Location {
                        segment: self.segment,
                        position: Position(position),
                    }
            });
            if sound {
                self.position = position;
                self.ended = false;
                return Ok(Some(position));
            }
            position += step;
        }
        Ok(None)
    }

    fn end_bad(&mut self, position: u64, reason: WalkBad) -> ScanStep {
        self.ended = true;
        ScanStep::End(WalkEnd::Bad {
            position: Position(position),
            reason,
        })
    }

    /// The record at `position`, checked as far as one record can be; `Err` names the bytes
    /// it needs.
    fn record_at(
        &self,
        chunk: Chunk<'_>,
        position: u64,
    ) -> Result<Result<WalkRecord, WalkBad>, (u64, usize)> {
        assert!(position % to_u64(RECORD_ALIGNMENT) == 0);
        let head = match self.bytes(chunk, position, RECORD_HEADER_SIZE) {
            Bytes::Held(head) => head,
            Bytes::Need { start, length } => return Err((start, length)),
        };
        let (header, checksum_header) = match record::decode_header(head) {
            Ok(decoded) => decoded,
            Err(error) => return Ok(Err(WalkBad::Record(error))),
        };
        let location = Location {
            segment: self.segment,
            position: Position(position),
        };
        if header.location != location {
            return Ok(Err(WalkBad::Misplaced(header.location)));
        }
        let size = record::record_size(header.payload_size as usize);
        let bytes = match self.bytes(chunk, position, size) {
            Bytes::Held(bytes) => bytes,
            Bytes::Need { start, length } => return Err((start, length)),
        };
        let payload = match record::decode(bytes) {
            Ok(_) => Ok(()),
            Err(RecordError::Truncated) => return Ok(Err(WalkBad::Record(RecordError::Truncated))),
            Err(error) => Err(error),
        };
        Ok(Ok(WalkRecord {
            position: Position(position),
            header,
            checksum_header,
            size: to_u64(size),
            payload,
        }))
    }

    /// Bytes `[position, position + length)` of the chunk, shorter at the end of the file;
    /// or what to read for them.
    fn bytes<'a>(&self, chunk: Chunk<'a>, position: u64, length: usize) -> Bytes<'a> {
        let wanted_end = (position + to_u64(length)).min(self.file_size);
        let chunk_end = chunk.start + to_u64(chunk.bytes.len());
        if position < chunk.start || wanted_end > chunk_end {
            let start = align_down_u64(position, SECTOR);
            return Bytes::Need {
                start,
                length: to_usize(wanted_end.max(position) - start),
            };
        }
        let offset = to_usize(position - chunk.start);
        let end = to_usize(wanted_end - chunk.start).max(offset);
        Bytes::Held(&chunk.bytes[offset..end])
    }
}

/// Damage in a sealed segment or its index file: what both checkers report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Damage {
    /// The segment's header sector does not verify, or names another generation than the
    /// index in memory.
    SegmentHeader,
    /// Not a record of this place where one should be.
    Record(WalkBad),
    /// A record whose payload checksum or padding is wrong.
    Payload(RecordError),
    /// A record out of sequence.
    Sequence {
        /// The sequence the chain expects.
        expected: Sequence,
        /// What the record holds.
        found: Sequence,
    },
    /// A record whose `checksum_previous` is not the previous record's header checksum.
    Chain,
    /// The segment's data ends before the end its index records.
    DataEnd {
        /// The index's end of data.
        index: u64,
        /// Where the records end.
        found: u64,
    },
    /// The segment's first or last record, or its last checksum, is not what its index says.
    IndexDisagrees,
    /// The index file's header or run table does not verify.
    IndexFile(FileFormatError),
    /// The index file describes another generation of the segment.
    IndexGeneration {
        /// The index's generation.
        index: u32,
        /// The segment's.
        segment: u32,
    },
    /// A slot page fails its checksum.
    IndexPage {
        /// The page.
        page: u64,
    },
    /// A slot points outside the segment's data, or the slots held do not match the runs.
    IndexSlots,
    /// A slot page's zero tail (after its checksum) is not zero: no slot is harmed.
    IndexPagePadding {
        /// The page.
        page: u64,
    },
    /// The record is sound but the client's digest in the entry body does not verify
    /// (`digest.rs`): damaged before it reached the disk.
    Digest,
    /// The checkpoint does not verify (header, damaged list or a table's checksum).
    Checkpoint(FileFormatError),
    /// A client's read of the record failed its checks twice (`journal/reads.rs`): reported
    /// so the entry is repaired without waiting for the scrubber.
    FoundByRead,
}

impl std::fmt::Display for Damage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Damage::SegmentHeader => write!(f, "segment header does not verify"),
            Damage::Record(bad) => write!(f, "not a valid record: {bad:?}"),
            Damage::Payload(error) => write!(f, "payload checksum or padding: {error:?}"),
            Damage::Sequence { expected, found } => write!(
                f,
                "record out of sequence: expected {}, found {}",
                expected.0, found.0
            ),
            Damage::Chain => write!(f, "record off the hash chain"),
            Damage::DataEnd { index, found } => write!(
                f,
                "records end at {found} but the index records data up to {index}"
            ),
            Damage::IndexDisagrees => {
                write!(
                    f,
                    "first or last record differs from what the index records"
                )
            }
            Damage::IndexFile(error) => write!(f, "index file: {error}"),
            Damage::IndexGeneration { index, segment } => write!(
                f,
                "index of generation {index}, segment of generation {segment}"
            ),
            Damage::IndexPage { page } => write!(f, "slot page {page} checksum mismatch"),
            Damage::IndexSlots => write!(f, "slots disagree with the runs or the data"),
            Damage::IndexPagePadding { page } => {
                write!(f, "slot page {page} has non-zero bytes after its checksum")
            }
            Damage::Digest => write!(f, "the client's digest does not verify"),
            Damage::Checkpoint(error) => write!(f, "checkpoint: {error}"),
            Damage::FoundByRead => write!(f, "a read found the record failing its checks"),
        }
    }
}

/// Damage and where it is in its file, if at one place.
pub type Found = (Option<u64>, Damage);

/// The record chain of one sealed segment, followed record by record (module doc).
#[derive(Clone, Copy, Debug, Default)]
pub struct ChainCheck {
    /// Records checked.
    pub records: u64,
    first: Option<Sequence>,
    last: Option<(Sequence, u32)>,
    /// Damage broke the chain: the next sound record starts it again, and the ends are not
    /// compared with the index (the damage is reported already).
    broken: bool,
}

impl ChainCheck {
    /// Checks `record` against the one before it.
    pub fn record(&mut self, record: &WalkRecord) -> Result<(), Found> {
        let at = Some(record.position.0);
        if let Err(error) = record.payload {
            // Its header is sound, so the chain goes on through it.
            self.link(record);
            return Err((at, Damage::Payload(error)));
        }
        if let Some((sequence, checksum)) = self.last.filter(|_| !self.broken) {
            let expected = Sequence(sequence.0 + 1);
            if record.header.sequence != expected {
                let found = record.header.sequence;
                self.link(record);
                return Err((at, Damage::Sequence { expected, found }));
            }
            if record.header.checksum_previous != checksum {
                self.link(record);
                return Err((at, Damage::Chain));
            }
        }
        self.link(record);
        Ok(())
    }

    fn link(&mut self, record: &WalkRecord) {
        if self.last.is_none() {
            self.first = Some(record.header.sequence);
        }
        self.last = Some((record.header.sequence, record.checksum_header));
        self.broken = false;
        self.records += 1;
    }

    /// Damage that is not a record (unreadable bytes): the next record starts the chain again.
    pub fn break_chain(&mut self) {
        self.broken = true;
        self.first = None;
    }

    /// The sequence of the last record checked, if any.
    #[must_use]
    pub fn sequence_last(&self) -> Option<Sequence> {
        self.last.map(|(sequence, _)| sequence)
    }

    /// The end of the records (`found`) and the first and last record against the index.
    pub fn index_agrees(&self, index: &IndexHeader, found: u64) -> Result<(), Found> {
        if found < index.data_end {
            let damage = Damage::DataEnd {
                index: index.data_end,
                found,
            };
            return Err((Some(found), damage));
        }
        let agrees = match (self.first, self.last) {
            (Some(first), Some((sequence_last, checksum_last))) => {
                first == index.sequence_first
                    && sequence_last == index.sequence_last
                    && checksum_last == index.checksum_last
            }
            _ => true,
        };
        if agrees {
            Ok(())
        } else {
            Err((None, Damage::IndexDisagrees))
        }
    }
}

/// Checks an index file's header sector for segment `segment` (whose header says generation
/// `generation` and whose file is `segment_size` bytes); the index file is `index_size` bytes.
pub fn index_header_check(
    sector: &[u8],
    segment: SegmentId,
    index_size: u64,
    generation: u32,
    segment_size: u64,
) -> Result<IndexHeader, Found> {
    if index_size < index_file::RUN_TABLE_OFFSET || sector.len() < SECTOR_SIZE {
        return Err((None, Damage::IndexFile(FileFormatError::Magic)));
    }
    let header = index_file::decode_header(sector, segment, index_size)
        .map_err(|error| (Some(0), Damage::IndexFile(error)))?;
    if header.generation != generation {
        let damage = Damage::IndexGeneration {
            index: header.generation,
            segment: generation,
        };
        return Err((Some(0), damage));
    }
    if header.data_end > segment_size {
        return Err((Some(48), Damage::IndexSlots));
    }
    Ok(header)
}

/// Checks the run table (the index file's bytes from `RUN_TABLE_OFFSET` to the slot table);
/// returns its runs.
pub fn index_runs_check(table: &[u8], header: &IndexHeader) -> Result<Vec<Run>, Found> {
    index_file::decode_runs(table, header)
        .map_err(|error| (Some(index_file::RUN_TABLE_OFFSET), Damage::IndexFile(error)))
}

/// The entries the slot pages must hold, from the runs: every run's, except the runs of
/// deleted ledgers. A segment sealed while one of its ledgers was deleted has that ledger's
/// runs (the run table is built when sealing starts) but holes for its slots (written from
/// the entry arrays the deletion dropped): harmless, since the tombstone makes open skip
/// those runs, and not damage.
#[derive(Clone, Debug, Default)]
pub struct RunsHeld {
    /// Entries the counted runs hold.
    pub expected: u64,
    /// Slot ranges `[first, end)` of the runs not counted, ascending.
    skipped: Vec<(u64, u64)>,
}

impl RunsHeld {
    /// What `runs` expect, leaving out the runs of ledgers `deleted` names.
    pub fn new(runs: &[Run], deleted: impl Fn(LedgerId) -> bool) -> RunsHeld {
        let mut held = RunsHeld::default();
        for run in runs {
            if deleted(run.ledger) {
                held.skipped
                    .push((run.slot_first, run.slot_first + run.slot_count()));
            } else {
                held.expected += u64::from(run.entries);
            }
        }
        held.skipped.sort_unstable();
        held
    }

    /// True when slot `slot` counts (it is in no skipped run).
    #[must_use]
    pub fn counts(&self, slot: u64) -> bool {
        let after = self.skipped.partition_point(|&(first, _)| first <= slot);
        after == 0 || self.skipped[after - 1].1 <= slot
    }
}

/// Checks slot page `page` of an index whose header is `header`; returns the slots it holds
/// that `held` counts.
pub fn index_page_check(
    page_bytes: &[u8],
    page: u64,
    header: &IndexHeader,
    held: &RunsHeld,
) -> Result<u64, Found> {
    let at = Some(index_file::slot_table_offset(header.run_count) + page * SECTOR);
    if !index_file::page_verify(page_bytes) {
        return Err((at, Damage::IndexPage { page }));
    }
    // The bytes after the checksum are zero as written; the checksum does not cover them, so
    // a flip there harms no slot but says the medium is failing.
    if page_bytes[index_file::PAGE_SLOTS * 8 + 4..]
        .iter()
        .any(|&byte| byte != 0)
    {
        return Err((at, Damage::IndexPagePadding { page }));
    }
    let mut count = 0;
    for index in 0..index_file::PAGE_SLOTS {
        let Some((position, payload_size)) = index_file::page_slot(page_bytes, index) else {
            continue;
        };
        let end = u64::from(position) + u64::from(payload_size);
        let slot = page * to_u64(index_file::PAGE_SLOTS) + to_u64(index);
        if slot >= header.slot_count || end > header.data_end || u64::from(position) < SECTOR {
            return Err((at, Damage::IndexSlots));
        }
        count += u64::from(held.counts(slot));
    }
    Ok(count)
}
