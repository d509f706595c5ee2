//! The blocking segment-file work of an open: creating the first segment or a spare,
//! checking that the disk takes the 512-byte writes of `CommitBlock::Small`, and sorting out
//! the segments' compacted copies a restart found. Later segments are prepared through the
//! ring (`journal/segments.rs`).

use super::{io_error, Recovered};
use crate::config::Config;
use crate::constants::{RECOVERY_CHUNK_SIZE, SEGMENT_HEADER_SIZE};
use crate::disk::{BufferId, Disk};
use crate::error::OpenError;
use crate::ids::{FileId, SegmentId};
use crate::segment::CommitBlock;
use crate::stdx::{to_u64, to_usize};
use std::io;

/// Sorts out the segments' compacted copies `files` lists and returns the segments whose old
/// file a swap kept for reuse, oldest first (none unless `reuse`: a journal without segments
/// deletes them all). A copy is kept only when its header is a
/// journal segment's (generation 0) for the same id and segment size, and its file is whole
/// (the segment size): what a swap's name exchange left under the copy's name, which
/// `journal/dead.rs` reuses as it does at run time. Anything else is an unfinished copy (its
/// header carries a later generation, or none yet) or cannot be reused, and is deleted.
/// Before 2026-12-08 open deleted them all, and each restart's first segments were new files
/// that zero-ahead wrote once more.
pub(crate) fn replaced_sort_out<D: Disk>(
    disk: &mut D,
    config: &Config,
    files: &[FileId],
    reuse: bool,
    buffer: BufferId,
) -> Vec<SegmentId> {
    let mut kept = Vec::new();
    for &file in files {
        let FileId::SegmentCompacted(segment) = file else {
            continue;
        };
        if reuse && replaced_reusable(disk, config, segment, buffer) {
            kept.push(segment);
        } else {
            // What is left of it is harmless: a later open deletes it again.
            disk.file_discard(file);
        }
    }
    kept
}

/// True when `segment`'s compacted copy is a whole journal segment of its own id (above).
fn replaced_reusable<D: Disk>(
    disk: &mut D,
    config: &Config,
    segment: SegmentId,
    buffer: BufferId,
) -> bool {
    let file = FileId::SegmentCompacted(segment);
    if disk.file_open(file).ok() != Some(config.segment_size) {
        return false;
    }
    let read = disk.read_blocking(file, 0, buffer, SEGMENT_HEADER_SIZE);
    if read.ok() != Some(SEGMENT_HEADER_SIZE) {
        return false;
    }
    let sector = &disk.buffer(buffer)[..SEGMENT_HEADER_SIZE];
    crate::segment::decode_segment_header(sector, segment)
        .is_ok_and(|header| header.generation == 0 && header.size == config.segment_size)
}

/// Creates, zero-fills, syncs and publishes a segment with blocking calls (only at open, for
/// an empty journal; later segments are prepared asynchronously).
pub(crate) fn create_blocking<D: Disk>(
    disk: &mut D,
    segment: SegmentId,
    config: &Config,
    buffer: BufferId,
) -> Result<(), OpenError> {
    let (size, zero_fill) = (config.segment_size, config.segment_zero_fill);
    let file = FileId::Segment(segment);
    disk.file_create(file, size)
        .map_err(io_error("creating segment"))?;
    let chunk = to_u64(RECOVERY_CHUNK_SIZE);
    disk.buffer_mut(buffer).fill(0);
    // Without zero-fill the fallocated extents stay unwritten and read as zeros.
    let mut position = if zero_fill { 0 } else { size };
    while position < size {
        let length = to_usize((size - position).min(chunk));
        disk.write_blocking(file, position, buffer, length)
            .map_err(io_error("zero-filling segment"))?;
        position += to_u64(length);
    }
    crate::segment::encode_segment_header(
        &mut disk.buffer_mut(buffer)[..SEGMENT_HEADER_SIZE],
        segment,
        size,
        false,
        config.commit_block,
    );
    disk.write_blocking(file, 0, buffer, SEGMENT_HEADER_SIZE)
        .map_err(io_error("writing segment header"))?;
    disk.sync_blocking(file)
        .map_err(io_error("syncing segment"))?;
    disk.file_publish(file)
        .map_err(io_error("publishing segment"))
}

impl Recovered {
    /// What the commits of `segment` (the active one or a spare) are padded to.
    pub fn commit_block_of(&self, segment: SegmentId) -> CommitBlock {
        if self.small_blocks.contains(&segment) {
            CommitBlock::Small
        } else {
            CommitBlock::Sector
        }
    }
}

/// Checks, when 512-byte commit blocks are configured or the active segment has them, that
/// the disk takes their O_DIRECT writes: a read of 512 bytes at byte 512 of the active
/// segment (inside its header sector, so nothing it holds matters) fails with EINVAL where
/// the logical block is larger, as every commit would.
pub(crate) fn small_blocks_check<D: Disk>(
    disk: &mut D,
    config: &Config,
    recovered: &Recovered,
    buffer: BufferId,
) -> Result<(), OpenError> {
    let segment = recovered.segment_active;
    let small = CommitBlock::Small;
    if config.commit_block != small && recovered.commit_block_of(segment) != small {
        return Ok(());
    }
    let block = small.size();
    match disk.read_blocking(FileId::Segment(segment), to_u64(block), buffer, block) {
        Ok(count) if count == block => Ok(()),
        Ok(count) => Err(OpenError::CommitBlockUnsupported {
            error: io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("{count} bytes read of {block}"),
            ),
        }),
        Err(error) => Err(OpenError::CommitBlockUnsupported { error }),
    }
}
