//! `ringlog segment FILE` (BookKeeper shell: `readjournal`): a segment file's header and its
//! records, in position order, until its data ends.

use super::{line, locks_take, AdminError, Outcome};
use clap::Args;
use engine::file_name::parse_file_name;
use engine::inspect::walk::{SegmentWalk, WalkBad, WalkEnd, WalkRecord, WalkStep};
use engine::record::RecordKind;
use engine::FileId;
use std::io::Write;
use std::path::PathBuf;

/// Flags of `ringlog segment`.
#[derive(Args, Debug)]
pub struct SegmentArgs {
    /// The segment file, DATA_DIR/shard-K/NNNNNNNNNN.segment. The lock of DATA_DIR (two
    /// levels up) is taken, when it has one.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
}

/// Prints `segment file=... id=... size=... segment_size=... generation=... recycled=...`,
/// then `record position=P kind=K ledger=L entry=E payload=N sequence=S commit_first=yes|no
/// crc=ok|bad` per record, then `end position=P reason=...`.
pub fn run(args: &SegmentArgs, out: &mut impl Write) -> Result<Outcome, AdminError> {
    let path = &args.file;
    let segment = match path
        .file_name()
        .and_then(|name| parse_file_name(name.to_str()?))
    {
        Some(FileId::Segment(segment)) => segment,
        _ => return Err(AdminError::SegmentName { path: path.clone() }),
    };
    if !path.exists() {
        return Err(AdminError::Io {
            operation: "open",
            path: path.clone(),
            error: std::io::Error::from(std::io::ErrorKind::NotFound),
        });
    }
    let data_dir = path.parent().and_then(std::path::Path::parent);
    let data_dir = data_dir.filter(|dir| dir.join(crate::data_dirs::LOCK_FILE).exists());
    let _locks = locks_take(&data_dir.map(PathBuf::from).into_iter().collect::<Vec<_>>())?;
    let mut walk = SegmentWalk::open(path, segment).map_err(|error| AdminError::Segment {
        path: path.clone(),
        error,
    })?;
    let header = walk.header();
    line(
        out,
        format_args!(
            "segment file={} id={} size={} segment_size={} generation={} recycled={} \
             commit_block={}",
            path.display(),
            segment.0,
            walk.file_size(),
            header.size,
            header.generation,
            if header.recycled { "yes" } else { "no" },
            header.commit_block.size()
        ),
    )?;
    let mut outcome = Outcome::Clean;
    loop {
        let step = walk.next_step().map_err(|error| AdminError::Io {
            operation: "read",
            path: path.clone(),
            error,
        })?;
        let record = match step {
            WalkStep::Record(record) => record,
            WalkStep::End(end) => {
                line(out, format_args!("{}", end_text(end, walk.file_size())))?;
                return Ok(outcome);
            }
        };
        if record.payload.is_err() {
            outcome = Outcome::Damaged;
        }
        line(out, format_args!("{}", record_text(&record)))?;
    }
}

/// The `record` line.
fn record_text(record: &WalkRecord) -> String {
    let header = record.header;
    format!(
        "record position={} kind={} ledger={} entry={} payload={} sequence={} \
         commit_first={} crc={}",
        record.position.0,
        kind_name(header.kind),
        header.ledger.0,
        header.entry.0,
        header.payload_size,
        header.sequence.0,
        if header.commit_first { "yes" } else { "no" },
        match record.payload {
            Ok(()) => "ok".to_string(),
            Err(error) => format!("bad({error:?})"),
        }
    )
}

/// The `end` line. Where the walk stops is not judged here: zeros at a sector boundary are
/// the normal end, anything else is what `ringlog verify` (and recovery) tell apart as a
/// torn tail, a recycled segment's stale records, or corruption.
fn end_text(end: WalkEnd, file_size: u64) -> String {
    match end {
        WalkEnd::Clean { position } if position.0 == file_size => {
            format!("end position={} reason=end-of-file", position.0)
        }
        WalkEnd::Clean { position } => format!("end position={} reason=zeros", position.0),
        WalkEnd::Bad { position, reason } => {
            let reason = match reason {
                WalkBad::Record(error) => format!("not-a-record({error:?})"),
                WalkBad::Misplaced(location) => format!(
                    "record-of-elsewhere(segment={} position={})",
                    location.segment.0, location.position.0
                ),
                WalkBad::Padding => "padding-not-zero".to_string(),
            };
            format!("end position={} reason={reason}", position.0)
        }
    }
}

/// The record kinds' names in the output.
pub fn kind_name(kind: RecordKind) -> &'static str {
    match kind {
        RecordKind::Entry => "entry",
        RecordKind::LedgerKey => "key",
        RecordKind::Fence => "fence",
        RecordKind::ExplicitLac => "explicit-lac",
        RecordKind::ForceMarker => "force",
    }
}
