//! `SegmentWalk`: a segment file's records in position order, streamed through one bounded
//! buffer (a segment is up to 4 GiB; the walk holds `RECOVERY_CHUNK_SIZE` of it).
//!
//! The rules are `segment_check.rs`'s `RecordScan`, which the scrubber shares: this file only
//! reads the bytes it asks for. It checks each record's checksums and identity; the sequence
//! and hash chain across records are the caller's, who knows what to expect.

use crate::constants::{RECORD_HEADER_SIZE, RECOVERY_CHUNK_SIZE, SECTOR_SIZE, SEGMENT_HEADER_SIZE};
use crate::ids::{Location, SegmentId};
use crate::record::{self, RecordHeader};
use crate::segment::{decode_segment_header, SegmentHeader, SegmentHeaderError};
use crate::segment_check::{Chunk, RecordScan, ScanStep};
pub use crate::segment_check::{WalkBad, WalkEnd, WalkRecord};
use crate::stdx::{to_u64, to_usize};
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// Why a segment file cannot be walked at all.
#[derive(Debug)]
#[non_exhaustive]
pub enum WalkError {
    /// Opening or reading the file failed.
    Io(io::Error),
    /// Shorter than a header sector.
    Short {
        /// Its size.
        size: u64,
    },
    /// The header sector does not verify.
    Header(SegmentHeaderError),
}

impl std::fmt::Display for WalkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WalkError::Io(error) => write!(f, "{error}"),
            WalkError::Short { size } => write!(f, "{size} bytes, shorter than its header"),
            WalkError::Header(SegmentHeaderError::Version(version)) => {
                write!(f, "segment format version {version}, unknown to this build")
            }
            WalkError::Header(SegmentHeaderError::Invalid) => write!(f, "invalid segment header"),
            WalkError::Header(SegmentHeaderError::WrongId { found }) => {
                write!(f, "its header names segment {}", found.0)
            }
        }
    }
}

impl From<io::Error> for WalkError {
    fn from(error: io::Error) -> Self {
        WalkError::Io(error)
    }
}

/// One step of a walk.
#[derive(Clone, Copy, Debug)]
pub enum WalkStep {
    /// The next record.
    Record(WalkRecord),
    /// The walk is over.
    End(WalkEnd),
}

/// A segment file walked record by record (module doc).
pub struct SegmentWalk {
    file: File,
    segment: SegmentId,
    header: SegmentHeader,
    file_size: u64,
    buffer: Vec<u8>,
    buffer_start: u64,
    buffer_length: usize,
    scan: RecordScan,
}

impl SegmentWalk {
    /// Opens segment `segment`'s file at `path` and verifies its header sector.
    pub fn open(path: &Path, segment: SegmentId) -> Result<SegmentWalk, WalkError> {
        let file = File::open(path)?;
        let file_size = file.metadata()?.len();
        if file_size < to_u64(SEGMENT_HEADER_SIZE) {
            return Err(WalkError::Short { size: file_size });
        }
        let mut sector = vec![0u8; SEGMENT_HEADER_SIZE];
        file.read_exact_at(&mut sector, 0)?;
        let header = decode_segment_header(&sector, segment).map_err(WalkError::Header)?;
        Ok(SegmentWalk {
            file,
            segment,
            header,
            file_size,
            buffer: vec![0u8; RECOVERY_CHUNK_SIZE],
            buffer_start: 0,
            buffer_length: 0,
            scan: RecordScan::new(
                segment,
                file_size,
                to_u64(SEGMENT_HEADER_SIZE),
                header.commit_block,
            ),
        })
    }

    /// The segment's header.
    #[must_use]
    pub fn header(&self) -> SegmentHeader {
        self.header
    }

    /// The segment's id.
    #[must_use]
    pub fn segment(&self) -> SegmentId {
        self.segment
    }

    /// The file's size.
    #[must_use]
    pub fn file_size(&self) -> u64 {
        self.file_size
    }

    /// The next record, or where the data ends. After `End`, `End` again.
    pub fn next_step(&mut self) -> io::Result<WalkStep> {
        loop {
            let chunk = Chunk {
                bytes: &self.buffer[..self.buffer_length],
                start: self.buffer_start,
            };
            match self.scan.next_step(chunk) {
                ScanStep::Record(record) => return Ok(WalkStep::Record(record)),
                ScanStep::End(end) => return Ok(WalkStep::End(end)),
                ScanStep::Need { start, length } => {
                    assert!(length + SECTOR_SIZE <= RECOVERY_CHUNK_SIZE);
                    let wanted =
                        to_usize((self.file_size - start).min(to_u64(RECOVERY_CHUNK_SIZE)));
                    self.file.read_exact_at(&mut self.buffer[..wanted], start)?;
                    self.buffer_start = start;
                    self.buffer_length = wanted;
                }
            }
        }
    }
}

impl SegmentWalk {
    /// The payload of `record`, the record `next_step` returned last (the walk holds all of
    /// it: the scan checked its payload's CRC).
    #[must_use]
    pub fn payload(&self, record: &WalkRecord) -> &[u8] {
        let start = to_usize(record.position.0 - self.buffer_start) + RECORD_HEADER_SIZE;
        &self.buffer[start..start + record.header.payload_size as usize]
    }
}

/// Reads the record at `position` of segment `segment`'s file (for a dump): its header and
/// payload, `Err` if it is not a sound record of that place.
pub fn record_read(
    path: &Path,
    location: Location,
) -> io::Result<Result<(RecordHeader, Vec<u8>), WalkBad>> {
    let file = File::open(path)?;
    let mut head = [0u8; RECORD_HEADER_SIZE];
    file.read_exact_at(&mut head, location.position.0)?;
    let header = match record::decode_header(&head) {
        Ok((header, _)) if header.location == location => header,
        Ok((header, _)) => return Ok(Err(WalkBad::Misplaced(header.location))),
        Err(error) => return Ok(Err(WalkBad::Record(error))),
    };
    let mut bytes = vec![0u8; record::record_size(header.payload_size as usize)];
    file.read_exact_at(&mut bytes, location.position.0)?;
    Ok(match record::decode(&bytes) {
        Ok((header, _, payload)) => Ok((header, payload.to_vec())),
        Err(error) => Err(WalkBad::Record(error)),
    })
}
