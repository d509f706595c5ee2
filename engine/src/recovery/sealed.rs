//! The part of open that skips the records: read the checkpoint, then each sealed segment's
//! index; rebuild (from the segment's records) and write back an index that is missing or
//! corrupt. A file of a format version this build does not know refuses the open.

use super::{io_error, next_record, Scan, SegmentFile, Window};
use crate::checkpoint::{self, CheckpointHeader, LedgerState, Tombstone};
use crate::config::Config;
use crate::constants::{
    RECORD_ALIGNMENT, RECORD_HEADER_SIZE, RECOVERY_CHUNK_SIZE, SECTOR_SIZE, SEGMENT_HEADER_SIZE,
};
use crate::disk::Disk;
use crate::error::{CorruptReason, OpenError};
use crate::ids::FileId;
use crate::ids::{Location, Position, SegmentId, Sequence};
use crate::index::{Index, SealedSegment, Slot};
use crate::index_build::{self, IndexWriter, SegmentSpan, SlotSource};
use crate::index_file::{self, FileFormatError, RUN_TABLE_OFFSET};
use crate::record::RecordError;
use crate::stdx::{align_up_u64, to_u64, to_usize};
use std::io;

/// What the checkpoint file gave.
pub(super) enum CheckpointLoad {
    /// No checkpoint: every segment is scanned.
    Absent,
    /// A checkpoint that does not verify, and why: every segment is scanned.
    Ignored(String),
    /// The checkpoint, its ledgers, and its tombstones and damaged entries.
    Loaded(CheckpointHeader, Vec<LedgerState>, Loaded),
}

/// Reads `size` bytes of `file` from its start through the recovery buffer.
fn read_file<D: Disk>(
    window: &mut Window<'_, D>,
    file: FileId,
    size: u64,
) -> Result<Vec<u8>, OpenError> {
    window.segment = None;
    let mut bytes = Vec::with_capacity(to_usize(size));
    while to_u64(bytes.len()) < size {
        let length = to_usize((size - to_u64(bytes.len())).min(to_u64(RECOVERY_CHUNK_SIZE)));
        let count = window
            .disk
            .read_blocking(file, to_u64(bytes.len()), window.buffer, length)
            .map_err(io_error("reading"))?;
        if count < length {
            let error = io::Error::new(io::ErrorKind::UnexpectedEof, format!("{file} is short"));
            return Err(OpenError::Io {
                operation: "reading",
                error,
            });
        }
        bytes.extend_from_slice(&window.disk.buffer(window.buffer)[..length]);
    }
    Ok(bytes)
}

fn version_refused(file: FileId, error: FileFormatError) -> Option<OpenError> {
    match error {
        FileFormatError::Version(version) => Some(OpenError::FormatVersion {
            file: file.to_string(),
            version,
        }),
        FileFormatError::Magic | FileFormatError::Checksum | FileFormatError::Identity => None,
    }
}

/// Reads and verifies the checkpoint.
pub(super) fn checkpoint_load<D: Disk>(
    window: &mut Window<'_, D>,
) -> Result<CheckpointLoad, OpenError> {
    let file = FileId::Checkpoint;
    let size = window
        .disk
        .file_open(file)
        .map_err(io_error("opening the checkpoint"))?;
    if size < to_u64(SECTOR_SIZE) {
        return Ok(CheckpointLoad::Ignored(format!("{file} is {size} bytes")));
    }
    let bytes = read_file(window, file, size)?;
    let decoded = checkpoint::decode_header(&bytes[..SECTOR_SIZE], size).and_then(|header| {
        let table = &bytes[to_usize(checkpoint::LEDGER_TABLE_OFFSET)..];
        let ledgers = checkpoint::decode_ledgers(table, &header)?;
        let offset = checkpoint::tombstone_table_offset(header.ledger_count);
        let tombstones = checkpoint::decode_tombstones(&bytes[to_usize(offset)..], &header)?;
        let damaged = checkpoint::decode_damaged(&bytes[..SECTOR_SIZE])?;
        Ok((header, ledgers, tombstones, damaged))
    });
    match decoded {
        Ok((header, ledgers, tombstones, damaged)) => Ok(CheckpointLoad::Loaded(
            header,
            ledgers,
            Loaded {
                tombstones,
                damaged,
            },
        )),
        Err(error) => match version_refused(file, error) {
            Some(refused) => Err(refused),
            None => Ok(CheckpointLoad::Ignored(format!("{file}: {error}"))),
        },
    }
}

/// What a checkpoint holds besides its header and ledgers.
#[derive(Debug)]
pub(super) struct Loaded {
    pub tombstones: Vec<Tombstone>,
    /// Entries found damaged and not repaired yet.
    pub damaged: Vec<(crate::ids::LedgerId, crate::ids::EntryId)>,
}

/// Puts the checkpoint's ledgers, tombstones and damaged entries into the index.
pub(super) fn ledgers_apply(index: &mut Index, ledgers: &[LedgerState], loaded: &Loaded) {
    for tombstone in &loaded.tombstones {
        index.tombstone_insert(tombstone.ledger, tombstone.segment_last);
    }
    for &(ledger, entry) in &loaded.damaged {
        index.damaged_insert(ledger, entry);
    }
    for state in ledgers {
        index.create(state.ledger, state.master_key);
        let ledger = index.ledger_mut(state.ledger).expect("created");
        ledger.fenced = state.fenced;
        ledger.entry_last = state.entry_last;
        ledger.entry_staged_max = state.entry_last;
        ledger.last_add_confirmed = state.last_add_confirmed;
        ledger.explicit_lac = state
            .explicit_lac
            .map(|(location, size)| Slot::new(location, size));
        ledger.digest = state.digest;
    }
}

/// Loads sealed segment `segment`'s index into `scan.index`, or rebuilds it from the segment
/// and writes it back.
pub(super) fn sealed_load<D: Disk>(
    window: &mut Window<'_, D>,
    config: &Config,
    segment: SegmentId,
    file: SegmentFile,
    scan: &mut Scan,
    report: &mut super::OpenReport,
) -> Result<(), OpenError> {
    match index_load(window, config, segment, file)? {
        Ok((table, runs)) => {
            scan.index.seal(segment, table, &runs);
            report.indexes_loaded += 1;
        }
        Err(reason) => {
            rebuild(window, segment, file, scan)?;
            report.indexes_rebuilt.push((segment, reason));
        }
    }
    Ok(())
}

type IndexLoad = Result<(SealedSegment, Vec<index_file::Run>), String>;

/// The index of `segment` if it is present and verifies; `Err(reason)` otherwise.
fn index_load<D: Disk>(
    window: &mut Window<'_, D>,
    config: &Config,
    segment: SegmentId,
    segment_file: SegmentFile,
) -> Result<IndexLoad, OpenError> {
    let file = FileId::Index(segment);
    let size = match window.disk.file_open(file) {
        Ok(size) => size,
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            return Ok(Err(format!("{file} is missing")));
        }
        Err(error) => {
            return Err(OpenError::Io {
                operation: "opening an index",
                error,
            })
        }
    };
    if size < RUN_TABLE_OFFSET {
        return Ok(Err(format!("{file} is {size} bytes")));
    }
    let head = read_file(window, file, RUN_TABLE_OFFSET)?;
    let header = match index_file::decode_header(&head, segment, size) {
        Ok(header) => header,
        Err(error) => {
            return match version_refused(file, error) {
                Some(refused) => Err(refused),
                None => Ok(Err(format!("{file}: {error}"))),
            }
        }
    };
    if header.generation != segment_file.generation {
        // A crash between a compacted copy's two renames: the segment was replaced, its
        // index not yet.
        return Ok(Err(format!(
            "{file} describes generation {} of a segment now at generation {}",
            header.generation, segment_file.generation
        )));
    }
    if header.data_end > config.segment_size.min(segment_file.file_size) {
        return Ok(Err(format!("{file}: data end beyond the segment")));
    }
    let table_offset = index_file::slot_table_offset(header.run_count);
    let prefix = read_file(window, file, table_offset)?;
    let runs = match index_file::decode_runs(&prefix[to_usize(RUN_TABLE_OFFSET)..], &header) {
        Ok(runs) => runs,
        Err(error) => return Ok(Err(format!("{file}: run table: {error}"))),
    };
    let table = SealedSegment {
        slot_table_offset: table_offset,
        slot_count: header.slot_count,
        bytes_live: 0,
        generation: header.generation,
        file_size: segment_file.file_size,
    };
    Ok(Ok((table, runs)))
}

/// Scans sealed segment `segment`'s records alone (it is entirely durable, so any bad record
/// before its end is corruption), writes its index, and seals it in the index.
fn rebuild<D: Disk>(
    window: &mut Window<'_, D>,
    segment: SegmentId,
    file: SegmentFile,
    scan: &mut Scan,
) -> Result<(), OpenError> {
    let mut alone = Scan {
        index: std::mem::take(&mut scan.index),
        sequence_next: None,
        checksum_previous: 0,
        entries_only: true,
        segment_sequence_first: None,
        spans: Vec::new(),
    };
    let size = file.file_size;
    let block = file.commit_block.size_u64();
    let mut position = to_u64(SEGMENT_HEADER_SIZE);
    while position + to_u64(RECORD_HEADER_SIZE) <= size {
        match next_record(window, segment, position, &mut alone)? {
            Ok(advance) => position += advance,
            Err(RecordError::Zero) if position % block != 0 => {
                position = align_up_u64(position, block);
            }
            Err(RecordError::Zero) => break,
            // A recycled segment's data ends where the stale records of its earlier life
            // begin; that is only corruption if a record of this segment follows.
            Err(_) if file.recycled && position % block == 0 => {
                let expected = alone.sequence_next.unwrap_or(Sequence(0));
                if !own_records_after(window, segment, position, size, expected)? {
                    break;
                }
                return Err(OpenError::SealedCorrupt {
                    location: Location {
                        segment,
                        position: Position(position),
                    },
                    reason: CorruptReason::Sequence,
                });
            }
            Err(error) => {
                return Err(OpenError::SealedCorrupt {
                    location: Location {
                        segment,
                        position: Position(position),
                    },
                    reason: CorruptReason::Record(error),
                });
            }
        }
    }
    let span = SegmentSpan {
        segment,
        sequence_first: alone.segment_sequence_first.unwrap_or(Sequence(0)),
        sequence_last: alone
            .sequence_next
            .map_or(Sequence(0), |next| Sequence(next.0 - 1)),
        checksum_last: alone.checksum_previous,
        data_end: align_up_u64(position, block),
        generation: file.generation,
    };
    let mut index = alone.index;
    let mut writer = IndexWriter::new(span, index_build::runs_of(&index, segment));
    index_write(window, &mut writer, &index)?;
    let (slot_table_offset, slot_count) = writer.slot_table();
    let table = SealedSegment {
        slot_table_offset,
        slot_count,
        bytes_live: 0,
        generation: file.generation,
        file_size: file.file_size,
    };
    index.seal(segment, table, writer.runs());
    scan.index = index;
    Ok(())
}

/// True when a record header naming its own place in `segment`, with a sequence of at least
/// `sequence_min`, lies in `[from, size)`: the segment's own data went on past `from`.
fn own_records_after<D: Disk>(
    window: &mut Window<'_, D>,
    segment: SegmentId,
    from: u64,
    size: u64,
    sequence_min: Sequence,
) -> Result<bool, OpenError> {
    let mut position = from;
    while position + to_u64(RECORD_HEADER_SIZE) <= size {
        let bytes = window
            .bytes(segment, position, RECORD_HEADER_SIZE)
            .map_err(io_error("reading"))?;
        if let Ok((header, _)) = crate::record::decode_header(bytes) {
            let location = Location {
                segment,
                position: Position(position),
            };
            if header.location == location && header.sequence >= sequence_min {
                return Ok(true);
            }
        }
        position += to_u64(RECORD_ALIGNMENT);
    }
    Ok(false)
}

/// Writes an index file with blocking calls: temporary file, chunks, fdatasync, publish.
fn index_write<D: Disk>(
    window: &mut Window<'_, D>,
    writer: &mut IndexWriter,
    index: &Index,
) -> Result<(), OpenError> {
    let file = FileId::Index(writer.segment());
    window.segment = None;
    let disk = &mut *window.disk;
    disk.file_create(file, writer.file_size())
        .map_err(io_error("creating an index"))?;
    while !writer.is_done() {
        let position = writer.produced();
        let out = disk.buffer_mut(window.buffer);
        let length = writer.fill(SlotSource::Index(index), &mut out[..RECOVERY_CHUNK_SIZE]);
        disk.write_blocking(file, position, window.buffer, length)
            .map_err(io_error("writing an index"))?;
    }
    disk.sync_blocking(file)
        .map_err(io_error("syncing an index"))?;
    disk.file_publish(file)
        .map_err(io_error("publishing an index"))
}
