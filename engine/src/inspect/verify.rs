//! Verification of a whole journal directory, read-only: every record's checksums in every
//! segment, the sealed segments' index files (header, run table, every slot page) and the
//! checkpoint, then recovery's own verdict on the tail (torn tail or corruption), reached on
//! a `ReadOnlyDisk` exactly as a server's open would reach it. In sealed segments the
//! client's digest of every entry is checked too, as the scrubber checks it
//! (`crate::digest`): each ledger's digest type as the checkpoint knows it, else learned from
//! its bodies in the order they were written.
//!
//! A sealed segment (below the checkpoint's resume segment) was entirely durable, so any bad
//! record before the end of its data, as its index records it, is corruption. From the resume
//! segment on, recovery decides (docs/format.md, "Recovery rules").

use super::walk::{SegmentWalk, WalkEnd, WalkError, WalkStep};
use super::{journal_view, JournalView};
use crate::checkpoint;
use crate::constants::SECTOR_SIZE;
use crate::digest::{digest_check, DigestCheck, DigestKind};
use crate::error::OpenError;
use crate::ids::{FileId, LedgerId, Location, SegmentId};
use crate::index_file::{self, FileFormatError, IndexHeader, RUN_TABLE_OFFSET};
use crate::record::RecordKind;
use crate::segment_check::{
    index_header_check, index_page_check, index_runs_check, ChainCheck, Damage, Found, RunsHeld,
};
use crate::stdx::{to_u64, to_usize};
use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// What verification found, one item per line of the CLI's output.
#[derive(Debug)]
pub enum Finding {
    /// A sealed segment whose records all verified up to the end of its data.
    SegmentOk {
        /// The segment.
        segment: SegmentId,
        /// Records read.
        records: u64,
        /// End of its data.
        data_end: u64,
    },
    /// A sealed segment's index file verified (header, run table, slot pages).
    IndexOk {
        /// The segment.
        segment: SegmentId,
        /// Runs in its run table.
        runs: u32,
        /// Slot pages verified.
        pages: u64,
    },
    /// A sealed segment has no index file: the next open rebuilds it from the segment (a
    /// crash may lose an index's name). Not damage.
    IndexMissing {
        /// The segment.
        segment: SegmentId,
    },
    /// The checkpoint verified.
    CheckpointOk {
        /// Its generation.
        generation: u64,
        /// The first segment it does not cover.
        resume: SegmentId,
        /// The scrubber's position it carries, if any.
        scrub: Option<checkpoint::ScrubPosition>,
    },
    /// Recovery's scan of the tail passed: appends would go on at `append_at`.
    TailOk {
        /// Segments recovery scanned record by record.
        segments: usize,
        /// Where appends would go on.
        append_at: Location,
    },
    /// A torn tail, which was never acknowledged: the next open zeroes `[start, end)` of its
    /// segment. Not damage.
    TornTail {
        /// The segment and the start of the sector the scan stopped in.
        start: Location,
        /// End of the range zeroed.
        end: u64,
    },
    /// A leftover temporary file (a preparation a crash cut short); the next open deletes it.
    Temporary {
        /// Its name.
        name: String,
    },
    /// Damage.
    Problem(Problem),
}

/// Damage found: which file, where in it (if one place), and what.
#[derive(Debug)]
pub struct Problem {
    /// The file.
    pub file: FileId,
    /// The byte position, if the problem has one.
    pub position: Option<u64>,
    /// What is wrong.
    pub reason: ProblemReason,
}

/// What is wrong (`Problem`).
#[derive(Debug)]
#[non_exhaustive]
pub enum ProblemReason {
    /// The segment cannot be walked (header, size, read error).
    Segment(WalkError),
    /// Damage in a sealed segment or its index file, as the scrubber reports it too.
    Damage(Damage),
    /// The checkpoint does not verify.
    Checkpoint(FileFormatError),
    /// Reading a file failed.
    Io(io::Error),
    /// Recovery refuses the journal: corruption in acknowledged data, or worse. The open of a
    /// server would fail with this error.
    Open(OpenError),
}

/// Verifies the journal in `directory` (module doc). Never writes.
pub fn verify(directory: &Path) -> Vec<Finding> {
    let mut findings = Vec::new();
    let resume = checkpoint_check(directory, &mut findings);
    let view = journal_view(directory);
    let segments: Vec<SegmentId> = match &view {
        Ok(view) => view.segments.clone(),
        Err(_) => segments_list(directory, &mut findings),
    };
    // A deleted ledger's runs may be holes in an index sealed while it was deleted.
    let deleted = |ledger| {
        view.as_ref()
            .is_ok_and(|view| view.index.is_deleted(ledger))
    };
    let mut digests = Digests {
        learned: HashMap::new(),
        known: &|ledger| {
            view.as_ref()
                .ok()
                .and_then(|view| view.index.ledger(ledger))
                .map_or((DigestKind::Unverifiable, 0), |state| {
                    (state.digest, state.digest_tries)
                })
        },
    };
    for &segment in segments.iter().filter(|&&segment| Some(segment) < resume) {
        sealed_check(directory, segment, &deleted, &mut digests, &mut findings);
    }
    match view {
        Ok(view) => tail_findings(view, &mut findings),
        Err(error) => findings.push(Finding::Problem(open_problem(error))),
    }
    findings
}

/// True when no finding is damage.
#[must_use]
pub fn is_clean(findings: &[Finding]) -> bool {
    !findings
        .iter()
        .any(|finding| matches!(finding, Finding::Problem(_)))
}

fn tail_findings(view: JournalView, findings: &mut Vec<Finding>) {
    for segment in &view.indexes_rebuilt {
        if !view.path(FileId::Index(*segment)).exists() {
            findings.push(Finding::IndexMissing { segment: *segment });
        }
    }
    if let Some((start, end)) = view.torn_tail {
        findings.push(Finding::TornTail { start, end });
    }
    findings.push(Finding::TailOk {
        segments: view.report.segments_scanned,
        append_at: view.append_at,
    });
    for name in view.temporaries {
        findings.push(Finding::Temporary { name });
    }
}

fn open_problem(error: OpenError) -> Problem {
    let (file, position) = match &error {
        OpenError::Corrupt { location, .. } | OpenError::SealedCorrupt { location, .. } => {
            (FileId::Segment(location.segment), Some(location.position.0))
        }
        OpenError::SegmentHeader { location } | OpenError::SegmentSize { location, .. } => {
            (FileId::Segment(location.segment), None)
        }
        _ => (FileId::Checkpoint, None),
    };
    Problem {
        file,
        position,
        reason: ProblemReason::Open(error),
    }
}

fn segments_list(directory: &Path, findings: &mut Vec<Finding>) -> Vec<SegmentId> {
    let entries = match std::fs::read_dir(directory) {
        Ok(entries) => entries,
        Err(error) => {
            findings.push(problem(FileId::Checkpoint, None, ProblemReason::Io(error)));
            return Vec::new();
        }
    };
    let mut segments: Vec<SegmentId> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| crate::file_name::parse_file_name(entry.file_name().to_str()?))
        .filter_map(|file| match file {
            FileId::Segment(segment) => Some(segment),
            _ => None,
        })
        .collect();
    segments.sort_unstable();
    segments
}

fn problem(file: FileId, position: Option<u64>, reason: ProblemReason) -> Finding {
    Finding::Problem(Problem {
        file,
        position,
        reason,
    })
}

/// Verifies the checkpoint; returns its resume segment (`None` without a usable one: then
/// recovery scans every segment, and none counts as sealed here).
fn checkpoint_check(directory: &Path, findings: &mut Vec<Finding>) -> Option<SegmentId> {
    let file = FileId::Checkpoint;
    let bytes = match std::fs::read(directory.join(file.to_string())) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return None,
        Err(error) => {
            findings.push(problem(file, None, ProblemReason::Io(error)));
            return None;
        }
    };
    let size = to_u64(bytes.len());
    let decoded = bytes
        .get(..SECTOR_SIZE)
        .ok_or(FileFormatError::Magic)
        .and_then(|sector| checkpoint::decode_header(sector, size))
        .and_then(|header| {
            let table = &bytes[to_usize(checkpoint::LEDGER_TABLE_OFFSET)..];
            checkpoint::decode_ledgers(table, &header)?;
            let offset = checkpoint::tombstone_table_offset(header.ledger_count);
            checkpoint::decode_tombstones(&bytes[to_usize(offset)..], &header)?;
            Ok(header)
        });
    match decoded {
        Ok(header) => {
            findings.push(Finding::CheckpointOk {
                generation: header.generation,
                resume: header.resume_segment,
                scrub: header.scrub,
            });
            Some(header.resume_segment)
        }
        Err(error) => {
            findings.push(problem(file, None, ProblemReason::Checkpoint(error)));
            None
        }
    }
}

/// Checks sealed segment `segment`: its index file, then every record up to the end of its
/// data.
fn sealed_check(
    directory: &Path,
    segment: SegmentId,
    deleted: &dyn Fn(LedgerId) -> bool,
    digests: &mut Digests<'_>,
    findings: &mut Vec<Finding>,
) {
    let segment_file = FileId::Segment(segment);
    let mut walk = match SegmentWalk::open(&directory.join(segment_file.to_string()), segment) {
        Ok(walk) => walk,
        Err(error) => {
            findings.push(problem(segment_file, None, ProblemReason::Segment(error)));
            return;
        }
    };
    let index = index_check(directory, segment, &walk, deleted, findings);
    let mut mismatches = Vec::new();
    let checked = records_check(&mut walk, index.as_ref(), digests, &mut mismatches);
    for position in mismatches {
        let reason = ProblemReason::Damage(Damage::Digest);
        findings.push(problem(segment_file, Some(position), reason));
    }
    match checked {
        Ok(Ok((records, data_end))) => findings.push(Finding::SegmentOk {
            segment,
            records,
            data_end,
        }),
        Ok(Err((position, reason))) => findings.push(problem(segment_file, position, reason)),
        Err(error) => findings.push(problem(segment_file, None, ProblemReason::Io(error))),
    }
}

/// What verification knows of each ledger's digest type (module doc).
struct Digests<'a> {
    learned: HashMap<LedgerId, (DigestKind, u8)>,
    /// The checkpoint's knowledge, for a ledger not yet seen.
    known: &'a dyn Fn(LedgerId) -> (DigestKind, u8),
}

impl Digests<'_> {
    /// Checks an entry's body against its ledger's digest, learning as it goes.
    fn check(&mut self, ledger: LedgerId, body: &[u8]) -> DigestCheck {
        let (kind, tries) = match self.learned.get(&ledger) {
            Some(&state) => state,
            None => (self.known)(ledger),
        };
        let (check, kind_now, tries_now) = digest_check(kind, tries, body);
        self.learned.insert(ledger, (kind_now, tries_now));
        check
    }
}

type RecordsChecked = Result<(u64, u64), (Option<u64>, ProblemReason)>;

/// Walks a sealed segment's records, checking the chain inside it, up to the end of its data
/// (the index's, or where the walk ends without an index).
fn records_check(
    walk: &mut SegmentWalk,
    index: Option<&IndexHeader>,
    digests: &mut Digests<'_>,
    mismatches: &mut Vec<u64>,
) -> io::Result<RecordsChecked> {
    let data_end = index.map(|header| header.data_end);
    let mut chain = ChainCheck::default();
    let end = loop {
        let record = match walk.next_step()? {
            WalkStep::Record(record) => record,
            WalkStep::End(end) => break end,
        };
        if data_end.is_some_and(|data_end| record.position.0 >= data_end) {
            break WalkEnd::Clean {
                position: record.position,
            };
        }
        if let Err(found) = chain.record(&record) {
            return Ok(Err(found_problem(found)));
        }
        // Sound as stored: is it what the client sent?
        if record.header.kind == RecordKind::Entry
            && digests.check(record.header.ledger, walk.payload(&record)) == DigestCheck::Mismatch
        {
            mismatches.push(record.position.0);
        }
    };
    let found = match end {
        WalkEnd::Clean { position } => position.0,
        WalkEnd::Bad { position, reason } => {
            // Past the data an index records lie zeros, a recycled segment's stale records or
            // torn fragments of an old crash; before it, nothing but records and padding.
            let past_end = data_end.is_some_and(|data_end| position.0 >= data_end);
            let block = walk.header().commit_block.size_u64();
            let stale = data_end.is_none() && walk.header().recycled && position.0 % block == 0;
            if !past_end && !stale {
                return Ok(Err((
                    Some(position.0),
                    ProblemReason::Damage(Damage::Record(reason)),
                )));
            }
            position.0
        }
    };
    let Some(index) = index else {
        return Ok(Ok((chain.records, found)));
    };
    Ok(chain
        .index_agrees(index, found)
        .map(|()| (chain.records, index.data_end))
        .map_err(found_problem))
}

fn found_problem((position, damage): Found) -> (Option<u64>, ProblemReason) {
    (position, ProblemReason::from(damage))
}

/// Checks sealed segment `segment`'s index file; returns its header when it verifies.
fn index_check(
    directory: &Path,
    segment: SegmentId,
    walk: &SegmentWalk,
    deleted: &dyn Fn(LedgerId) -> bool,
    findings: &mut Vec<Finding>,
) -> Option<IndexHeader> {
    let file_id = FileId::Index(segment);
    let file = match File::open(directory.join(file_id.to_string())) {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return None,
        Err(error) => {
            findings.push(problem(file_id, None, ProblemReason::Io(error)));
            return None;
        }
    };
    match index_file_check(&file, segment, walk, deleted) {
        Ok(Ok((header, pages))) => {
            findings.push(Finding::IndexOk {
                segment,
                runs: header.run_count,
                pages,
            });
            Some(header)
        }
        Ok(Err((position, reason))) => {
            findings.push(problem(file_id, position, reason));
            None
        }
        Err(error) => {
            findings.push(problem(file_id, None, ProblemReason::Io(error)));
            None
        }
    }
}

type IndexChecked = Result<(IndexHeader, u64), (Option<u64>, ProblemReason)>;

fn index_file_check(
    file: &File,
    segment: SegmentId,
    walk: &SegmentWalk,
    deleted: &dyn Fn(LedgerId) -> bool,
) -> io::Result<IndexChecked> {
    let size = file.metadata()?.len();
    let mut sector = vec![0u8; SECTOR_SIZE];
    if size >= RUN_TABLE_OFFSET {
        file.read_exact_at(&mut sector, 0)?;
    }
    let generation = walk.header().generation;
    let header = match index_header_check(&sector, segment, size, generation, walk.file_size()) {
        Ok(header) => header,
        Err(found) => return Ok(Err(found_problem(found))),
    };
    let table_offset = index_file::slot_table_offset(header.run_count);
    let mut table = vec![0u8; to_usize(table_offset - RUN_TABLE_OFFSET)];
    file.read_exact_at(&mut table, RUN_TABLE_OFFSET)?;
    let held_expected = match index_runs_check(&table, &header) {
        Ok(runs) => RunsHeld::new(&runs, deleted),
        Err(found) => return Ok(Err(found_problem(found))),
    };
    let mut held = 0u64;
    let pages = index_file::page_count(header.slot_count);
    for page in 0..pages {
        file.read_exact_at(&mut sector, table_offset + page * to_u64(SECTOR_SIZE))?;
        match index_page_check(&sector, page, &header, &held_expected) {
            Ok(count) => held += count,
            Err(found) => return Ok(Err(found_problem(found))),
        }
    }
    if held != held_expected.expected {
        return Ok(Err((None, ProblemReason::Damage(Damage::IndexSlots))));
    }
    Ok(Ok((header, pages)))
}

impl From<Damage> for ProblemReason {
    fn from(damage: Damage) -> Self {
        ProblemReason::Damage(damage)
    }
}
