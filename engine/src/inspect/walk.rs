//! `SegmentWalk`: a segment file's records in position order, streamed through one bounded
//! buffer (a segment is up to 4 GiB; the walk holds `RECOVERY_CHUNK_SIZE` of it).
//!
//! The walk applies the framing rules recovery applies to one segment alone (docs/format.md,
//! "Recovery rules"): zeros inside a sector are commit padding, and a sector boundary that
//! holds no record of this segment (zeros, the end of the file, or a recycled segment's stale
//! records) ends the data. It checks each record's checksums and identity; the sequence and
//! hash chain across records are the caller's, who knows what to expect.

use crate::constants::{
    RECORD_ALIGNMENT, RECORD_HEADER_SIZE, RECOVERY_CHUNK_SIZE, SECTOR_SIZE, SEGMENT_HEADER_SIZE,
};
use crate::ids::{Location, Position, SegmentId};
use crate::record::{self, RecordError, RecordHeader};
use crate::segment::{decode_segment_header, SegmentHeader, SegmentHeaderError};
use crate::stdx::{align_down_u64, align_up_u64, to_u64, to_usize};
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

const SECTOR: u64 = SECTOR_SIZE as u64;

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

/// A record the walk found: its header verified and naming its place.
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
    /// so the walk goes on past it).
    pub payload: Result<(), RecordError>,
}

/// Where and why a walk ended.
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
    position: u64,
    ended: bool,
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
            position: to_u64(SEGMENT_HEADER_SIZE),
            ended: false,
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
            let position = self.position;
            let room_for_header = position + to_u64(RECORD_HEADER_SIZE) <= self.file_size;
            if !self.ended
                && !room_for_header
                && position < self.file_size
                && position % SECTOR != 0
            {
                // The last record ends within the file's last sector, too close to its end for
                // another header: the rest is the commit's zero padding, and the data runs to
                // the end of the sector, as the index's data end says.
                let gap = to_usize(self.file_size - position);
                if self.bytes(position, gap)?.iter().any(|&byte| byte != 0) {
                    return Ok(self.end_bad(position, WalkBad::Padding));
                }
                self.position = self.file_size;
                continue;
            }
            if self.ended || !room_for_header {
                self.ended = true;
                let end = position.min(self.file_size);
                return Ok(WalkStep::End(WalkEnd::Clean {
                    position: Position(end),
                }));
            }
            match self.record_at(position)? {
                Ok(record) => {
                    self.position += record.size;
                    return Ok(WalkStep::Record(record));
                }
                Err(WalkBad::Record(RecordError::Zero)) if position % SECTOR != 0 => {
                    let boundary = align_up_u64(position, SECTOR).min(self.file_size);
                    let gap = to_usize(boundary - position);
                    if self.bytes(position, gap)?.iter().any(|&byte| byte != 0) {
                        return Ok(self.end_bad(position, WalkBad::Padding));
                    }
                    self.position = boundary;
                }
                Err(WalkBad::Record(RecordError::Zero)) => {
                    self.ended = true;
                    return Ok(WalkStep::End(WalkEnd::Clean {
                        position: Position(position),
                    }));
                }
                Err(reason) => return Ok(self.end_bad(position, reason)),
            }
        }
    }

    fn end_bad(&mut self, position: u64, reason: WalkBad) -> WalkStep {
        self.ended = true;
        WalkStep::End(WalkEnd::Bad {
            position: Position(position),
            reason,
        })
    }

    /// The record at `position`, checked as far as one record can be.
    fn record_at(&mut self, position: u64) -> io::Result<Result<WalkRecord, WalkBad>> {
        assert!(position % to_u64(RECORD_ALIGNMENT) == 0);
        let segment = self.segment;
        let head = self.bytes(position, RECORD_HEADER_SIZE)?;
        let (header, checksum_header) = match record::decode_header(head) {
            Ok(decoded) => decoded,
            Err(error) => return Ok(Err(WalkBad::Record(error))),
        };
        let location = Location {
            segment,
            position: Position(position),
        };
        if header.location != location {
            return Ok(Err(WalkBad::Misplaced(header.location)));
        }
        let size = record::record_size(header.payload_size as usize);
        let bytes = self.bytes(position, size)?;
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

    /// Bytes `[position, position + length)`, shorter at the end of the file.
    fn bytes(&mut self, position: u64, length: usize) -> io::Result<&[u8]> {
        assert!(length + SECTOR_SIZE <= RECOVERY_CHUNK_SIZE);
        let buffer_end = self.buffer_start + to_u64(self.buffer_length);
        let inside = position >= self.buffer_start && position + to_u64(length) <= buffer_end;
        if !inside {
            let start = align_down_u64(position, SECTOR);
            let wanted = to_usize((self.file_size - start).min(to_u64(RECOVERY_CHUNK_SIZE)));
            self.file.read_exact_at(&mut self.buffer[..wanted], start)?;
            self.buffer_start = start;
            self.buffer_length = wanted;
        }
        let offset = to_usize(position - self.buffer_start);
        let end = (offset + length).min(self.buffer_length);
        Ok(&self.buffer[offset.min(end)..end])
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
