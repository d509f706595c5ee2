//! File names of a journal directory: segments, index files and the checkpoint.
//!
//! Every file is written under its temporary name (the published name + `.tmp`) and renamed to
//! its published name only once it is complete and synced, so a published name always means a
//! whole file; temporaries left by a crash are deleted at open (`Disk::files_list`), except a
//! segment's compacted copy, which the journal keeps for reuse if it is a swap's old file.

use crate::ids::{FileId, SegmentId};
use std::fmt;

/// Suffix of a published segment file: `0000000007.segment`.
pub const SEGMENT_SUFFIX: &str = ".segment";
/// Suffix of a published index file: `0000000007.index`.
pub const INDEX_SUFFIX: &str = ".index";
/// Name of the published checkpoint file.
pub const CHECKPOINT_FILE_NAME: &str = "checkpoint";
/// Suffix of the compacted copies of a segment and its index, which exist only as
/// temporaries: `0000000007.segment.compacted.tmp`.
pub const COMPACTED_SUFFIX: &str = ".compacted";
/// Suffix a file carries while it is prepared: `0000000007.segment.tmp`.
pub const TEMPORARY_SUFFIX: &str = ".tmp";

/// Digits of the segment id in segment and index names, zero-padded so names sort like ids.
const ID_DIGITS: usize = 10;
// Every u32 segment id fits the fixed width, so no two ids share a name.
const _: () = assert!(u32::MAX as u64 <= 9_999_999_999);

/// Prints the published file name.
impl fmt::Display for FileId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FileId::Segment(id) => write!(f, "{:0width$}{SEGMENT_SUFFIX}", id.0, width = ID_DIGITS),
            FileId::Index(id) => write!(f, "{:0width$}{INDEX_SUFFIX}", id.0, width = ID_DIGITS),
            FileId::Checkpoint => f.write_str(CHECKPOINT_FILE_NAME),
            FileId::SegmentCompacted(id) => {
                write!(f, "{}{COMPACTED_SUFFIX}", FileId::Segment(*id))
            }
            FileId::IndexCompacted(id) => write!(f, "{}{COMPACTED_SUFFIX}", FileId::Index(*id)),
        }
    }
}

/// The published name of a file, e.g. `0000000007.segment`.
#[must_use]
pub fn file_name(id: FileId) -> String {
    id.to_string()
}

/// The name a file has while it is prepared, e.g. `0000000007.segment.tmp`.
#[must_use]
pub fn temporary_file_name(id: FileId) -> String {
    let name = format!("{id}{TEMPORARY_SUFFIX}");
    assert!(is_temporary_file_name(&name));
    assert!(
        parse_file_name(&name).is_none(),
        "a temporary is never published"
    );
    name
}

/// The name a file rests under between file operations: its published name, except for the
/// compacted copies, which only ever exist as temporaries (being written, or, once exchanged
/// with the segment they replaced, holding that segment's old file for reuse).
#[must_use]
pub fn resting_file_name(id: FileId) -> String {
    match id {
        FileId::SegmentCompacted(_) | FileId::IndexCompacted(_) => temporary_file_name(id),
        FileId::Segment(_) | FileId::Index(_) | FileId::Checkpoint => file_name(id),
    }
}

/// Parses a published file name; temporaries and names of other files are `None`.
#[must_use]
pub fn parse_file_name(name: &str) -> Option<FileId> {
    let id = if name == CHECKPOINT_FILE_NAME {
        FileId::Checkpoint
    } else if let Some(digits) = name.strip_suffix(SEGMENT_SUFFIX) {
        FileId::Segment(parse_id(digits)?)
    } else if let Some(digits) = name.strip_suffix(INDEX_SUFFIX) {
        FileId::Index(parse_id(digits)?)
    } else {
        return None;
    };
    // One name per file: a second spelling of an id would let two files claim it.
    assert_eq!(file_name(id), name);
    Some(id)
}

/// Parses the name a segment's compacted copy rests under, `0000000007.segment.compacted.tmp`
/// (`resting_file_name`): listed at open, where the journal keeps or deletes it.
#[must_use]
pub fn parse_segment_compacted_name(name: &str) -> Option<FileId> {
    let stem = name
        .strip_suffix(TEMPORARY_SUFFIX)?
        .strip_suffix(COMPACTED_SUFFIX)?;
    let id = FileId::SegmentCompacted(parse_id(stem.strip_suffix(SEGMENT_SUFFIX)?)?);
    // One name per file, as for published names.
    assert_eq!(resting_file_name(id), name);
    Some(id)
}

/// True for the temporary of any kind of file. Matched by suffix, not parsed, so a temporary
/// whose id part is malformed is deleted too, as segment temporaries always were.
#[must_use]
pub fn is_temporary_file_name(name: &str) -> bool {
    let Some(stem) = name.strip_suffix(TEMPORARY_SUFFIX) else {
        return false;
    };
    stem.ends_with(SEGMENT_SUFFIX)
        || stem.ends_with(INDEX_SUFFIX)
        || stem.ends_with(COMPACTED_SUFFIX)
        || stem == CHECKPOINT_FILE_NAME
}

/// Exactly `ID_DIGITS` ASCII digits (no sign, no spaces) that fit a u32.
fn parse_id(digits: &str) -> Option<SegmentId> {
    if digits.len() != ID_DIGITS || !digits.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().map(SegmentId)
}
