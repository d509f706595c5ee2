//! Recovery on open: scan every segment in order, verify every record, rebuild the index, and
//! tell a torn tail (truncate it) from corruption inside acknowledged data (refuse to open).
//!
//! At the first bad point X the scanner probes what follows, up to `RECOVERY_WINDOW_SIZE`
//! bytes. A valid record (checksummed header whose identity matches where it lies) with a
//! higher sequence number found either at least `COMMITS_IN_FLIGHT_MAX * BATCH_BYTES_MAX`
//! bytes beyond X, or as the first record of the `COMMITS_IN_FLIGHT_MAX`-th later commit,
//! cannot have been in flight at the crash, so X lies in durable data: corruption. Otherwise
//! X is a torn tail that was never acknowledged: it is zeroed and synced, and appends resume
//! at the next boundary of the segment's commit block (the sector, or 512 bytes).

use self::sealed::CheckpointLoad;
use crate::checkpoint::{Resume, ScrubPosition};
use crate::config::Config;
use crate::constants::{
    BATCH_BYTES_MAX, COMMITS_IN_FLIGHT_MAX, RECORD_ALIGNMENT, RECORD_HEADER_SIZE,
    RECOVERY_CHUNK_SIZE, RECOVERY_WINDOW_SIZE, SECTOR_SIZE, SEGMENT_HEADER_SIZE,
};
use crate::disk::{BufferId, Disk};
use crate::error::{CorruptReason, OpenError};
use crate::ids::{FileId, Location, Position, SegmentId, Sequence};
use crate::index::{Index, Slot};
use crate::index_build::SegmentSpan;
use crate::segment::CommitBlock;

mod sealed;
mod segment_files;
pub(crate) use self::segment_files::{create_blocking, small_blocks_check};
use crate::record::{self, RecordError, RecordHeader, RecordKind};
use crate::stdx::{align_down_u64, align_up_u64, to_u64, to_usize};
use std::io;

const TORN_WINDOW_BYTES: u64 = (COMMITS_IN_FLIGHT_MAX * BATCH_BYTES_MAX) as u64;
const SECTOR: u64 = SECTOR_SIZE as u64;

fn io_error(operation: &'static str) -> impl FnOnce(io::Error) -> OpenError {
    move |error| OpenError::Io { operation, error }
}

/// A window of one segment held in the recovery buffer.
struct Window<'d, D: Disk> {
    disk: &'d mut D,
    buffer: BufferId,
    segment: Option<SegmentId>,
    start: u64,
    length: usize,
}

impl<D: Disk> Window<'_, D> {
    /// Bytes `[position, position + length)` of `segment`, shorter at the end of the file.
    fn bytes(&mut self, segment: SegmentId, position: u64, length: usize) -> io::Result<&[u8]> {
        assert!(length + SECTOR_SIZE <= RECOVERY_CHUNK_SIZE);
        let inside = self.segment == Some(segment)
            && position >= self.start
            && position + to_u64(length) <= self.start + to_u64(self.length);
        if !inside {
            let start = align_down_u64(position, SECTOR);
            self.segment = None;
            let count = self.disk.read_blocking(
                FileId::Segment(segment),
                start,
                self.buffer,
                RECOVERY_CHUNK_SIZE,
            )?;
            self.segment = Some(segment);
            self.start = start;
            self.length = count;
        }
        let offset = to_usize(position - self.start);
        let end = (offset + length).min(self.length);
        Ok(&self.disk.buffer(self.buffer)[offset.min(end)..end])
    }
}

/// Where the scan stopped and why.
#[derive(Clone, Copy, Debug)]
struct Stop {
    segment_index: usize,
    position: u64,
    reason: Option<CorruptReason>,
}

struct Scan {
    index: Index,
    sequence_next: Option<Sequence>,
    checksum_previous: u32,
    /// Only entries are applied (rebuilding a sealed segment's index: the checkpoint holds
    /// the ledgers' state, and an old explicit LAC must not replace a newer one).
    entries_only: bool,
    /// The current segment's first record's sequence, once seen.
    segment_sequence_first: Option<Sequence>,
    /// Segments the scan passed through completely, with their spans.
    spans: Vec<SegmentSpan>,
}

/// What recovery hands to the journal: the rebuilt index, where appends resume, and the
/// segments ready to follow the active one. The journal calls recovery, never the reverse.
#[derive(Debug)]
pub(crate) struct Recovered {
    pub index: Index,
    pub segment_active: SegmentId,
    pub position_next: u64,
    pub sequence_next: Sequence,
    pub checksum_previous: u32,
    pub spares: Vec<SegmentId>,
    /// The active segment and the spares whose files were recycled (stale records, not
    /// zeros, past their data).
    pub recycled: Vec<SegmentId>,
    /// The active segment and the spares whose commits are padded to 512 bytes
    /// (`CommitBlock::Small`); the others' are padded to the sector.
    pub small_blocks: Vec<SegmentId>,
    /// Segments whose old file a compaction's swap kept for reuse before the restart, oldest
    /// first (`segment_files::replaced_sort_out`).
    pub replaced: Vec<SegmentId>,
    pub segment_id_max: SegmentId,
    pub torn_tail_truncated: bool,
    /// Sequence of the active segment's first record (the next one if it has none).
    pub active_sequence_first: Sequence,
    /// What the checkpoint on disk covers.
    pub resume: Resume,
    /// The scrubber's position in the checkpoint (`None` without one, or from version 1).
    pub scrub: Option<ScrubPosition>,
    /// Segments scanned completely that are not sealed yet, oldest first.
    pub seal_queue: Vec<SegmentSpan>,
    pub report: OpenReport,
}

/// What open found and did, for the operator's log.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OpenReport {
    /// The checkpoint used: its generation and the first segment it does not cover.
    pub checkpoint: Option<(u64, SegmentId)>,
    /// A checkpoint present but not usable (bad checksum): why; every segment was scanned.
    pub checkpoint_ignored: Option<String>,
    /// Sealed indexes read.
    pub indexes_loaded: usize,
    /// Sealed segments whose index was missing or corrupt, rebuilt from the segment: which,
    /// and why.
    pub indexes_rebuilt: Vec<(SegmentId, String)>,
    /// Segments whose records were scanned, and their bytes up to where the scan stopped.
    pub segments_scanned: usize,
    pub bytes_scanned: u64,
}

pub(crate) fn recover<D: Disk>(
    disk: &mut D,
    config: &Config,
    buffer: BufferId,
) -> Result<Recovered, OpenError> {
    let files = disk.files_list().map_err(io_error("listing files"))?;
    let segments: Vec<SegmentId> = files
        .iter()
        .filter_map(|file| match file {
            FileId::Segment(id) => Some(*id),
            FileId::Index(_)
            | FileId::Checkpoint
            | FileId::SegmentCompacted(_)
            | FileId::IndexCompacted(_) => None,
        })
        .collect();
    let has_checkpoint = files.contains(&FileId::Checkpoint);
    // Kept old files are reused only beside segments of their own journal.
    let reuse = !segments.is_empty();
    let replaced = segment_files::replaced_sort_out(disk, config, &files, reuse, buffer);
    if segments.is_empty() {
        if has_checkpoint {
            return Err(OpenError::Missing {
                file: FileId::Checkpoint.to_string(),
                missing: "every segment it covers",
            });
        }
        create_blocking(disk, SegmentId(0), config, buffer)?;
        disk.file_open(FileId::Segment(SegmentId(0)))
            .map_err(io_error("opening segment"))?;
        return Ok(Recovered {
            index: Index::default(),
            segment_active: SegmentId(0),
            position_next: to_u64(SEGMENT_HEADER_SIZE),
            sequence_next: Sequence(1),
            checksum_previous: 0,
            spares: Vec::new(),
            recycled: Vec::new(),
            small_blocks: match config.commit_block {
                CommitBlock::Small => vec![SegmentId(0)],
                CommitBlock::Sector => Vec::new(),
            },
            replaced,
            segment_id_max: SegmentId(0),
            torn_tail_truncated: false,
            active_sequence_first: Sequence(1),
            resume: Resume {
                segment: SegmentId(0),
                sequence_next: Sequence(1),
                checksum_previous: 0,
                generation: 0,
            },
            scrub: None,
            seal_queue: Vec::new(),
            report: OpenReport::default(),
        });
    }
    let mut window = Window {
        disk,
        buffer,
        segment: None,
        start: 0,
        length: 0,
    };
    let mut files_of = std::collections::BTreeMap::new();
    for &segment in &segments {
        let file = check_segment(&mut window, segment, config.segment_size)?;
        files_of.insert(segment, file);
    }
    let compacted = files_of.values().any(|file| file.generation > 0);
    let size = config.segment_size;
    let mut report = OpenReport::default();
    let mut scan = Scan {
        index: Index::default(),
        sequence_next: None,
        checksum_previous: 0,
        entries_only: false,
        segment_sequence_first: None,
        spans: Vec::new(),
    };
    let mut resume = Resume {
        segment: segments[0],
        sequence_next: Sequence(1),
        checksum_previous: 0,
        generation: 0,
    };
    let mut scrub = None;
    let loaded = if has_checkpoint {
        sealed::checkpoint_load(&mut window)?
    } else {
        CheckpointLoad::Absent
    };
    let mut first = 0;
    match loaded {
        CheckpointLoad::Loaded(header, ledgers, loaded) => {
            sealed::ledgers_apply(&mut scan.index, &ledgers, &loaded);
            resume = Resume {
                segment: header.resume_segment,
                sequence_next: header.sequence_next,
                checksum_previous: header.checksum_previous,
                generation: header.generation,
            };
            scrub = header.scrub;
            report.checkpoint = Some((header.generation, header.resume_segment));
            first = segments.partition_point(|&segment| segment < header.resume_segment);
            if segments.get(first) != Some(&header.resume_segment) {
                return Err(OpenError::Missing {
                    file: FileId::Segment(header.resume_segment).to_string(),
                    missing: "the segment the checkpoint resumes at",
                });
            }
            for &segment in &segments[..first] {
                let file = files_of[&segment];
                sealed::sealed_load(&mut window, config, segment, file, &mut scan, &mut report)?;
            }
            scan.sequence_next = Some(header.sequence_next);
            scan.checksum_previous = header.checksum_previous;
        }
        CheckpointLoad::Ignored(reason) => report.checkpoint_ignored = Some(reason),
        CheckpointLoad::Absent => {}
    }
    if report.checkpoint.is_none() && segments[0] != SegmentId(0) {
        // Segments were removed (their ledgers deleted): a scan from the first one left
        // cannot follow the record chain over the gap, and would not know the tombstones.
        return Err(OpenError::Missing {
            file: FileId::Segment(segments[0]).to_string(),
            missing: "a valid checkpoint (earlier segments were removed after their ledgers \
                      were deleted, so the journal cannot be rebuilt by scanning)",
        });
    }
    if report.checkpoint.is_none() && compacted {
        // A compacted segment's records start a chain of their own: a scan through it from
        // the first segment would call the break corruption.
        let (&segment, _) = files_of
            .iter()
            .find(|(_, file)| file.generation > 0)
            .expect("compacted");
        return Err(OpenError::Missing {
            file: FileId::Segment(segment).to_string(),
            missing: "a valid checkpoint (the segment was compacted, so the journal cannot \
                      be rebuilt by scanning)",
        });
    }
    let segments_scanned = &segments[first..];
    let blocks: Vec<CommitBlock> = segments_scanned
        .iter()
        .map(|segment| files_of[segment].commit_block)
        .collect();
    let stop = scan_records(&mut window, segments_scanned, &blocks, size, &mut scan)?;
    let sequence_last = scan.sequence_next.map_or(0, |next| next.0 - 1);
    let stop_block = blocks[stop.segment_index];
    let truncated = probe_and_truncate(
        &mut window,
        segments_scanned,
        size,
        (stop, stop_block),
        sequence_last,
    )?;
    let stop_segment = segments_scanned[stop.segment_index];
    report.segments_scanned = stop.segment_index + 1;
    report.bytes_scanned = to_u64(stop.segment_index) * size + stop.position;
    let sequence_next = scan.sequence_next.unwrap_or(Sequence(1));
    let recycled = segments_scanned[stop.segment_index..]
        .iter()
        .copied()
        .filter(|segment| files_of[segment].recycled)
        .collect();
    let small_blocks = segments_scanned[stop.segment_index..]
        .iter()
        .copied()
        .filter(|segment| files_of[segment].commit_block == CommitBlock::Small)
        .collect();
    Ok(Recovered {
        index: scan.index,
        segment_active: stop_segment,
        position_next: align_up_u64(stop.position, stop_block.size_u64()),
        sequence_next,
        checksum_previous: scan.checksum_previous,
        spares: segments_scanned[stop.segment_index + 1..].to_vec(),
        recycled,
        small_blocks,
        replaced,
        segment_id_max: *segments.last().expect("non-empty"),
        torn_tail_truncated: truncated,
        active_sequence_first: scan.segment_sequence_first.unwrap_or(sequence_next),
        resume,
        scrub,
        seal_queue: scan.spans,
        report,
    })
}

/// What open learns of a segment file from its size and header.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SegmentFile {
    /// 0, or how many times it was compacted.
    pub generation: u32,
    /// Its size: the segment size, or less for a compacted copy.
    pub file_size: u64,
    /// The file held a removed segment before: stale records, not zeros, follow its data.
    pub recycled: bool,
    /// What its commits are padded to.
    pub commit_block: CommitBlock,
}

/// Checks a segment's header (and, unless it is a compacted copy, its size) against the
/// configured segment size.
fn check_segment<D: Disk>(
    window: &mut Window<'_, D>,
    segment: SegmentId,
    size: u64,
) -> Result<SegmentFile, OpenError> {
    let location = Location {
        segment,
        position: Position(0),
    };
    let file_size = window
        .disk
        .file_open(FileId::Segment(segment))
        .map_err(io_error("opening segment"))?;
    // A compacted copy is shorter; its header says so, and is checked below.
    if file_size > size || file_size < to_u64(SEGMENT_HEADER_SIZE) {
        return Err(OpenError::SegmentSize {
            location,
            size: file_size,
            expected: size,
        });
    }
    // Only the header sector: the window's 8 MiB read per segment made opening a large
    // journal read hundreds of MiB it did not need.
    window.segment = None;
    let count = window
        .disk
        .read_blocking(
            FileId::Segment(segment),
            0,
            window.buffer,
            SEGMENT_HEADER_SIZE,
        )
        .map_err(io_error("reading"))?;
    let header = &window.disk.buffer(window.buffer)[..count];
    if header.len() < SEGMENT_HEADER_SIZE {
        return Err(OpenError::SegmentHeader { location });
    }
    match crate::segment::decode_segment_header(header, segment) {
        Ok(recorded) if recorded.size != size => Err(OpenError::SegmentSize {
            location,
            size: recorded.size,
            expected: size,
        }),
        Ok(recorded) if recorded.generation == 0 && file_size != size => {
            Err(OpenError::SegmentSize {
                location,
                size: file_size,
                expected: size,
            })
        }
        Ok(recorded) => Ok(SegmentFile {
            generation: recorded.generation,
            file_size,
            recycled: recorded.recycled,
            commit_block: recorded.commit_block,
        }),
        Err(crate::segment::SegmentHeaderError::Version(version)) => {
            Err(OpenError::FormatVersion {
                file: FileId::Segment(segment).to_string(),
                version,
            })
        }
        Err(_) => Err(OpenError::SegmentHeader { location }),
    }
}

/// Scans records in order and applies them to the index; returns where the valid log ends.
fn scan_records<D: Disk>(
    window: &mut Window<'_, D>,
    segments: &[SegmentId],
    blocks: &[CommitBlock],
    size: u64,
    scan: &mut Scan,
) -> Result<Stop, OpenError> {
    assert_eq!(segments.len(), blocks.len());
    let mut segment_index = 0;
    let mut position = to_u64(SEGMENT_HEADER_SIZE);
    loop {
        let segment = segments[segment_index];
        // Commits start on the segment's block boundaries, so padding runs to the next one
        // and no record starts past a boundary that holds none.
        let block = blocks[segment_index].size_u64();
        let stop = |reason| {
            Ok(Stop {
                segment_index,
                position,
                reason,
            })
        };
        let at_end = position + to_u64(RECORD_HEADER_SIZE) > size;
        let step = if at_end {
            Err(RecordError::Zero)
        } else {
            next_record(window, segment, position, scan)?
        };
        match step {
            Ok(advance) => position += advance,
            Err(RecordError::Zero) if position % block != 0 && !at_end => {
                let boundary = align_up_u64(position, block);
                let gap = to_usize(boundary - position);
                let padding = window
                    .bytes(segment, position, gap)
                    .map_err(io_error("reading"))?;
                if padding.iter().any(|&byte| byte != 0) {
                    return stop(Some(CorruptReason::Record(RecordError::Reserved)));
                }
                position = boundary;
            }
            Err(error) if position % block == 0 || at_end => {
                // End of this segment's data: zeros, the end of the file, or (in a recycled
                // segment) a block of the stale records of its earlier life, which name
                // another segment. The log goes on only if the next segment starts with the
                // expected record: then nothing after this point was ever part of it.
                // Otherwise the scan stops here and the probe tells a torn tail from
                // corruption.
                let reason = (error != RecordError::Zero).then_some(CorruptReason::Record(error));
                let Some(&next) = segments.get(segment_index + 1) else {
                    return stop(reason);
                };
                let first = to_u64(SEGMENT_HEADER_SIZE);
                let mut probe = Scan {
                    index: Index::default(),
                    sequence_next: scan.sequence_next,
                    checksum_previous: scan.checksum_previous,
                    entries_only: true,
                    segment_sequence_first: None,
                    spans: Vec::new(),
                };
                if next_record(window, next, first, &mut probe)?.is_err() {
                    return stop(reason);
                }
                // The segment is complete: it is sealed after open (if it holds records).
                if let (Some(sequence_first), Some(next)) =
                    (scan.segment_sequence_first.take(), scan.sequence_next)
                {
                    scan.spans.push(SegmentSpan {
                        segment,
                        sequence_first,
                        sequence_last: Sequence(next.0 - 1),
                        checksum_last: scan.checksum_previous,
                        data_end: align_up_u64(position, block),
                        generation: 0,
                    });
                }
                segment_index += 1;
                position = first;
            }
            Err(error) => return stop(Some(CorruptReason::Record(error))),
        }
    }
}

/// Decodes and applies the record at `position`; `Ok(Err(_))` means "not a valid next record".
fn next_record<D: Disk>(
    window: &mut Window<'_, D>,
    segment: SegmentId,
    position: u64,
    scan: &mut Scan,
) -> Result<Result<u64, RecordError>, OpenError> {
    let head = window
        .bytes(segment, position, RECORD_HEADER_SIZE)
        .map_err(io_error("reading"))?;
    let header = match record::decode_header(head) {
        Ok((header, _)) => header,
        Err(error) => return Ok(Err(error)),
    };
    let location = Location {
        segment,
        position: Position(position),
    };
    if header.location != location {
        return Ok(Err(RecordError::Magic));
    }
    if let Some(expected) = scan.sequence_next {
        if header.sequence != expected || header.checksum_previous != scan.checksum_previous {
            return Ok(Err(RecordError::ChecksumHeader));
        }
    }
    let size = record::record_size(header.payload_size as usize);
    let bytes = window
        .bytes(segment, position, size)
        .map_err(io_error("reading"))?;
    let (header, checksum, payload) = match record::decode(bytes) {
        Ok(decoded) => decoded,
        Err(error) => return Ok(Err(error)),
    };
    // u64::MAX has no successor: accepting it would wrap the expected sequence and blind the
    // corruption probe (found by the recovery_scan fuzzer).
    if header.sequence.0 == u64::MAX {
        return Ok(Err(RecordError::Reserved));
    }
    // A deleted ledger's records are part of the chain and nothing else: they are neither
    // checked against its (forgotten) state nor applied.
    let deleted = scan.index.is_deleted(header.ledger);
    if !deleted && !semantics_valid(&scan.index, &header, payload) {
        return Ok(Err(RecordError::Reserved));
    }
    let applied = !deleted && (!scan.entries_only || header.kind == RecordKind::Entry);
    if applied {
        apply(&mut scan.index, &header, payload);
    }
    scan.segment_sequence_first.get_or_insert(header.sequence);
    scan.sequence_next = Some(Sequence(header.sequence.0 + 1));
    scan.checksum_previous = checksum;
    Ok(Ok(to_u64(size)))
}

/// Checks what checksums cannot: the ids and sizes every record kind must have, with the
/// same bounds `Journal::add` enforces (so a checksummed but impossible record can neither
/// trip an assertion nor make the index grow without bound).
fn semantics_valid(index: &Index, header: &RecordHeader, payload: &[u8]) -> bool {
    use crate::ids::{ENTRY_ID_EXPLICIT_LAC, ENTRY_ID_FENCE, ENTRY_ID_FORCE, ENTRY_ID_LEDGER_KEY};
    match header.kind {
        RecordKind::Entry => {
            let highest = index
                .ledger(header.ledger)
                .map_or(-1, |ledger| ledger.entry_staged_max);
            let gap = i64::try_from(crate::constants::ENTRY_GAP_MAX).expect("small");
            header.entry.0 >= 0 && header.entry.0 <= highest.saturating_add(gap)
        }
        RecordKind::LedgerKey => {
            header.entry == ENTRY_ID_LEDGER_KEY
                && payload.len() == crate::constants::MASTER_KEY_SIZE
        }
        RecordKind::Fence => header.entry == ENTRY_ID_FENCE && payload.is_empty(),
        RecordKind::ForceMarker => header.entry == ENTRY_ID_FORCE && payload.is_empty(),
        RecordKind::ExplicitLac => header.entry == ENTRY_ID_EXPLICIT_LAC,
    }
}

fn apply(index: &mut Index, header: &RecordHeader, payload: &[u8]) {
    let slot = Slot::new(header.location, header.payload_size);
    match header.kind {
        RecordKind::LedgerKey => {
            let mut key = [0u8; crate::constants::MASTER_KEY_SIZE];
            if payload.len() == key.len() {
                key.copy_from_slice(payload);
            }
            index.create(header.ledger, key);
        }
        RecordKind::Entry => {
            index.create(header.ledger, [0u8; crate::constants::MASTER_KEY_SIZE]);
            let lac = wire::entry_body_last_add_confirmed(payload).unwrap_or(-1);
            index.insert_entry(header.ledger, header.entry, slot, lac);
        }
        RecordKind::Fence => {
            index.create(header.ledger, [0u8; crate::constants::MASTER_KEY_SIZE]);
            index.ledger_mut(header.ledger).expect("created").fenced = true;
        }
        RecordKind::ExplicitLac => {
            index.create(header.ledger, [0u8; crate::constants::MASTER_KEY_SIZE]);
            let state = index.ledger_mut(header.ledger).expect("created");
            state.explicit_lac = Some(slot);
            let lac = wire::explicit_lac_body_last_add_confirmed(payload).unwrap_or(-1);
            state.last_add_confirmed = state.last_add_confirmed.max(lac);
        }
        RecordKind::ForceMarker => {}
    }
}

/// Decides torn tail or corruption past `stop`, and zeroes a torn tail. Returns whether
/// anything was truncated.
fn probe_and_truncate<D: Disk>(
    window: &mut Window<'_, D>,
    segments: &[SegmentId],
    size: u64,
    (stop, stop_block): (Stop, CommitBlock),
    sequence_last: u64,
) -> Result<bool, OpenError> {
    let stop_location = Location {
        segment: segments[stop.segment_index],
        position: Position(stop.position),
    };
    // Appends resume at the next block boundary: the rest of the stop's block is never
    // written again and must read as padding.
    let stop_block_end = align_up_u64(stop.position, stop_block.size_u64());
    // End (exclusive) of what must be zeroed past the stop, per segment index.
    let mut dirty_end: Vec<(usize, u64)> = Vec::new();
    let mut scanned: u64 = 0;
    let mut commits_after = 0usize;
    let window_bytes = to_u64(RECOVERY_WINDOW_SIZE);
    for (segment_index, &segment) in segments.iter().enumerate().skip(stop.segment_index) {
        let first = if segment_index == stop.segment_index {
            stop.position
        } else {
            to_u64(SEGMENT_HEADER_SIZE)
        };
        let mut position = first;
        let mut dirty = None;
        while position + to_u64(RECORD_ALIGNMENT) <= size && scanned < window_bytes {
            // A zero sector holds no record and nothing to zero: skip it whole. Past a clean
            // stop the probed window is mostly zeros, and looking at it 8 bytes at a time was
            // a large part of opening a journal.
            if position % SECTOR == 0 && position + SECTOR <= size {
                let sector = window.bytes(segment, position, SECTOR_SIZE);
                if sector
                    .map_err(io_error("reading"))?
                    .iter()
                    .all(|&byte| byte == 0)
                {
                    position += SECTOR;
                    scanned += SECTOR;
                    continue;
                }
            }
            let bytes = window.bytes(segment, position, RECORD_HEADER_SIZE);
            let bytes = bytes.map_err(io_error("reading"))?;
            let location = Location {
                segment,
                position: Position(position),
            };
            let own = record::decode_header(bytes)
                .ok()
                .filter(|(header, _)| header.location == location);
            // What must be zeroed: the rest of the block the scan stopped in (it is never
            // rewritten, and its padding must read as zeros), and every header that names
            // the place it lies in, which a later scan could take for a record. Anything else
            // cannot pass a record's checks; in a recycled segment that is the stale records
            // of its earlier life (other segment ids), which are left alone.
            let in_stop_block = segment_index == stop.segment_index && position < stop_block_end;
            let non_zero = bytes.iter().take(RECORD_ALIGNMENT).any(|&byte| byte != 0);
            if own.is_some() || (in_stop_block && non_zero) {
                dirty = Some(position + to_u64(RECORD_ALIGNMENT));
            }
            let evidence = position != stop.position || segment_index != stop.segment_index;
            if let (true, Some((header, _))) = (evidence, own) {
                if header.sequence.0 > sequence_last {
                    commits_after += usize::from(header.commit_first);
                    if scanned >= TORN_WINDOW_BYTES || commits_after >= COMMITS_IN_FLIGHT_MAX {
                        return Err(OpenError::Corrupt {
                            location: stop_location,
                            reason: stop.reason.unwrap_or(CorruptReason::Sequence),
                            valid_after: location,
                        });
                    }
                }
            }
            position += to_u64(RECORD_ALIGNMENT);
            scanned += to_u64(RECORD_ALIGNMENT);
        }
        if let Some(end) = dirty {
            dirty_end.push((segment_index, align_up_u64(end, SECTOR)));
        }
    }
    let mut truncated = false;
    for (segment_index, end) in dirty_end {
        let segment = segments[segment_index];
        let from = if segment_index == stop.segment_index {
            stop.position
        } else {
            to_u64(SEGMENT_HEADER_SIZE)
        };
        zero_range(window, segment, from, end)?;
        truncated = true;
    }
    Ok(truncated)
}

/// Zeroes `[from, end)` of a segment (read-modify-write of the first partial sector), then
/// syncs it, so the torn bytes can never be mistaken for records again.
fn zero_range<D: Disk>(
    window: &mut Window<'_, D>,
    segment: SegmentId,
    from: u64,
    end: u64,
) -> Result<(), OpenError> {
    assert!(end % SECTOR == 0);
    let mut chunk_start = align_down_u64(from, SECTOR);
    window.segment = None;
    while chunk_start < end {
        let length = to_usize((end - chunk_start).min(to_u64(RECOVERY_CHUNK_SIZE)));
        let disk = &mut *window.disk;
        let file = FileId::Segment(segment);
        let count = disk.read_blocking(file, chunk_start, window.buffer, length);
        let count = count.map_err(io_error("reading torn tail"))?;
        if count < length {
            let error = io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "segment shorter than expected",
            );
            return Err(OpenError::Io {
                operation: "reading torn tail",
                error,
            });
        }
        let keep = to_usize(from.saturating_sub(chunk_start)).min(length);
        disk.buffer_mut(window.buffer)[keep..length].fill(0);
        disk.write_blocking(file, chunk_start, window.buffer, length)
            .map_err(io_error("zeroing torn tail"))?;
        chunk_start += to_u64(length);
    }
    window
        .disk
        .sync_blocking(FileId::Segment(segment))
        .map_err(io_error("syncing torn tail"))
}
