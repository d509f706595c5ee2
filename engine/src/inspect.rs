//! Offline, read-only inspection of a journal directory, for the admin CLI (`ringlog ledgers`,
//! `ledger`, `verify`, `segment`; docs/admin.md). Nothing here writes: the journal is opened
//! by the recovery code itself, on a `ReadOnlyDisk` that records the writes an open would
//! make (zeroing a torn tail, writing back a rebuilt index) instead of making them, so the
//! verdict (which ledgers, torn tail or corruption) is exactly the one a server start would
//! reach. Format parsing stays in record.rs, segment.rs, index_file.rs and checkpoint.rs.

pub mod read_only_disk;
pub mod verify;
pub mod walk;

use self::read_only_disk::{ReadOnlyDisk, WriteIntended};
use crate::config::Config;
use crate::constants::{RECOVERY_CHUNK_SIZE, SECTOR_SIZE, SEGMENT_HEADER_SIZE};
use crate::disk::{BufferId, Disk};
use crate::error::OpenError;
use crate::ids::{FileId, Location, Position, SegmentId};
use crate::index::Index;
use crate::index_file;
use crate::recovery::OpenReport;
use crate::segment::{decode_segment_header, SegmentHeaderError};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// A journal as a server's open would find it, without the open's writes.
#[derive(Debug)]
pub struct JournalView {
    /// The journal directory (`DATA_DIR/shard-K`).
    pub directory: PathBuf,
    /// The index recovery rebuilt: ledgers, their entries' places, tombstones.
    pub index: Index,
    /// What the open found (checkpoint used or ignored, indexes loaded or rebuilt).
    pub report: OpenReport,
    /// Segment files, ascending.
    pub segments: Vec<SegmentId>,
    /// The segment appends would go on in, and where.
    pub append_at: Location,
    /// The torn tail an open would zero: its first sector's start and the end of the range.
    pub torn_tail: Option<(Location, u64)>,
    /// Segments whose index an open would rebuild (missing or not verifying), so their
    /// entries' places are in `index` but not in an index file.
    pub indexes_rebuilt: Vec<SegmentId>,
    /// Leftover temporary files (an open deletes them).
    pub temporaries: Vec<String>,
}

impl JournalView {
    /// The path of a file of this journal.
    #[must_use]
    pub fn path(&self, file: FileId) -> PathBuf {
        self.directory.join(file.to_string())
    }
}

/// Opens the journal in `directory` read-only (module doc). An empty directory is an empty
/// journal. Corruption is the `OpenError` a server's open would fail with.
pub fn journal_view(directory: &Path) -> Result<JournalView, OpenError> {
    let io_error = |operation| move |error| OpenError::Io { operation, error };
    let mut disk = ReadOnlyDisk::new(directory);
    let files = disk.files_list().map_err(io_error("listing files"))?;
    let segments: Vec<SegmentId> = files
        .iter()
        .filter_map(|file| match file {
            FileId::Segment(id) => Some(*id),
            _ => None,
        })
        .collect();
    let Some(&first) = segments.first() else {
        // A checkpoint without segments refuses the open; say so as the open would.
        if files.contains(&FileId::Checkpoint) {
            return Err(OpenError::Missing {
                file: FileId::Checkpoint.to_string(),
                missing: "every segment it covers",
            });
        }
        return Ok(JournalView {
            directory: directory.to_path_buf(),
            index: Index::default(),
            report: OpenReport::default(),
            segments,
            append_at: Location {
                segment: SegmentId(0),
                position: Position(crate::stdx::to_u64(SEGMENT_HEADER_SIZE)),
            },
            torn_tail: None,
            indexes_rebuilt: Vec::new(),
            temporaries: disk.temporaries().to_vec(),
        });
    };
    let config = Config {
        segment_size: segment_size_recorded(directory, first)?,
        ..Config::default()
    };
    disk.buffers_allocate(&[RECOVERY_CHUNK_SIZE]);
    let recovered = crate::recovery::recover(&mut disk, &config, BufferId(0))?;
    let torn_tail = recovered
        .torn_tail_truncated
        .then(|| torn_range(disk.writes_intended()))
        .flatten();
    let indexes_rebuilt = recovered
        .report
        .indexes_rebuilt
        .iter()
        .map(|(segment, _)| *segment)
        .collect();
    Ok(JournalView {
        directory: directory.to_path_buf(),
        index: recovered.index,
        report: recovered.report,
        segments,
        append_at: Location {
            segment: recovered.segment_active,
            position: Position(recovered.position_next),
        },
        torn_tail,
        indexes_rebuilt,
        temporaries: disk.temporaries().to_vec(),
    })
}

/// The segment size recorded in segment `segment`'s header: the journal's, which recovery
/// checks every segment against (the admin CLI is not told the server's --segment-size).
fn segment_size_recorded(directory: &Path, segment: SegmentId) -> Result<u64, OpenError> {
    let location = Location {
        segment,
        position: Position(0),
    };
    let path = directory.join(FileId::Segment(segment).to_string());
    let read = || -> io::Result<Vec<u8>> {
        let file = std::fs::File::open(&path)?;
        let mut sector = vec![0u8; SEGMENT_HEADER_SIZE];
        file.read_exact_at(&mut sector, 0)?;
        Ok(sector)
    };
    let sector = read().map_err(|error| match error.kind() {
        io::ErrorKind::UnexpectedEof => OpenError::SegmentHeader { location },
        _ => OpenError::Io {
            operation: "reading a segment header",
            error,
        },
    })?;
    match decode_segment_header(&sector, segment) {
        Ok(header) => Ok(header.size),
        Err(SegmentHeaderError::Version(version)) => Err(OpenError::FormatVersion {
            file: FileId::Segment(segment).to_string(),
            version,
        }),
        Err(_) => Err(OpenError::SegmentHeader { location }),
    }
}

/// The range recovery's torn-tail zeroing would write in the segment the scan stopped in: the
/// segment, the start of the sector it starts in, and the end.
fn torn_range(writes: &[WriteIntended]) -> Option<(Location, u64)> {
    let mut range: Option<(Location, u64)> = None;
    for write in writes {
        let WriteIntended::Write {
            file: FileId::Segment(segment),
            position,
            length,
        } = *write
        else {
            continue;
        };
        let end = position + crate::stdx::to_u64(length);
        range = Some(match range {
            None => (
                Location {
                    segment,
                    position: Position(position),
                },
                end,
            ),
            // Torn records of the same crash in a later (spare) segment are zeroed too; the
            // range reported is the stop segment's, where appends resume.
            Some((start, end_before)) if start.segment != segment => (start, end_before),
            Some((start, end_before)) => (start, end.max(end_before)),
        });
    }
    if let Some((start, end)) = range {
        assert!(start.position.0 % SECTOR_SIZE as u64 == 0);
        assert!(end > start.position.0);
    }
    range
}

/// Reads page `page` of the slot table at `slot_table_offset` of an index file into `out`
/// (one sector) and verifies it: false if it fails its checksum.
pub fn index_page_read(
    file: &std::fs::File,
    slot_table_offset: u64,
    page: u64,
    out: &mut [u8],
) -> io::Result<bool> {
    assert_eq!(out.len(), SECTOR_SIZE);
    file.read_exact_at(
        out,
        slot_table_offset + page * crate::stdx::to_u64(SECTOR_SIZE),
    )?;
    Ok(index_file::page_verify(out))
}
