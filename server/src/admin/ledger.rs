//! `ringlog ledger ID` (BookKeeper shell: `ledger`): a ledger's
//! entries and where each lies, optionally with its payload dumped.

use super::{journal_view, line, AdminError, DataDirArgs, Outcome};
use clap::Args;
use engine::constants::SECTOR_SIZE;
use engine::index::SealedRun;
use engine::inspect::walk::{record_read, SegmentWalk, WalkStep};
use engine::inspect::{index_page_read, JournalView};
use engine::record::RecordKind;
use engine::{EntryId, FileId, LedgerId, Location, Position};
use std::io::Write;

/// Largest `--dump-bytes`: an entry's payload is at most a frame (5 MiB).
const DUMP_BYTES_MAX: usize = 5 * 1024 * 1024;

/// Flags of `ringlog ledger`.
#[derive(Args, Debug)]
pub struct LedgerArgs {
    /// The ledger id.
    #[arg(value_name = "ID", allow_negative_numbers = true)]
    pub ledger: i64,
    #[command(flatten)]
    pub data: DataDirArgs,
    /// Dump each entry's payload (hex and printable), after its checksums were verified.
    #[arg(long)]
    pub dump: bool,
    /// Bytes of each payload to dump (at most 5242880).
    #[arg(long, value_name = "N", default_value_t = 256,
          value_parser = clap::value_parser!(u32).range(1..=DUMP_BYTES_MAX as i64))]
    pub dump_bytes: u32,
}

/// Prints the ledger's summary line, then `entry=E size=S segment=FILE position=P` per entry
/// (segment order, then entry order), each followed by its dump with `--dump`.
pub fn run(args: &LedgerArgs, out: &mut impl Write) -> Result<Outcome, AdminError> {
    let (_locks, journals) = args.data.open()?;
    let ledger = LedgerId(args.ledger);
    for journal in &journals {
        let view = journal_view(journal)?;
        let Some(state) = view.index.ledger(ledger) else {
            continue;
        };
        let (entries, bytes) = super::ledgers::totals(state);
        line(
            out,
            format_args!(
                "ledger={} shard={} entries={entries} bytes={bytes} entry_last={} lac={} \
                 fenced={}",
                ledger.0,
                journal.shard,
                state.entry_last,
                state.last_add_confirmed,
                if state.fenced { "yes" } else { "no" }
            ),
        )?;
        let mut printer = Printer {
            view: &view,
            args,
            out,
            outcome: Outcome::Clean,
        };
        for run in state.sealed_runs() {
            printer.sealed_run(ledger, run)?;
        }
        for open in state.open_slots() {
            for (entry, slot) in open.held() {
                let location = Location {
                    segment: open.segment,
                    position: Position(u64::from(slot.position)),
                };
                printer.entry(entry, slot.payload_size, location)?;
            }
        }
        return Ok(printer.outcome);
    }
    Err(AdminError::LedgerMissing { ledger: ledger.0 })
}

struct Printer<'a, W: Write> {
    view: &'a JournalView,
    args: &'a LedgerArgs,
    out: &'a mut W,
    outcome: Outcome,
}

impl<W: Write> Printer<'_, W> {
    /// The entries of one sealed run, from its index file's slot pages, or from the segment
    /// itself when an open would rebuild that index.
    fn sealed_run(&mut self, ledger: LedgerId, run: &SealedRun) -> Result<(), AdminError> {
        let segment = run.segment;
        let table = self.view.index.sealed_segment(segment);
        let rebuilt = self.view.indexes_rebuilt.contains(&segment);
        let Some(table) = table.filter(|_| !rebuilt) else {
            return self.walked_run(ledger, run);
        };
        let path = self.view.path(FileId::Index(segment));
        let io_error = |operation| {
            let path = path.clone();
            move |error| AdminError::Io {
                operation,
                path,
                error,
            }
        };
        let file = std::fs::File::open(&path).map_err(io_error("open"))?;
        let mut page = vec![0u8; SECTOR_SIZE];
        let mut page_loaded = None;
        let slots = u64::try_from(run.entry_last - run.entry_first + 1).expect("ordered run");
        for offset in 0..slots {
            let (page_index, index) = engine::index_file::page_of(run.slot_first + offset);
            if page_loaded != Some(page_index) {
                let offset_table = table.slot_table_offset;
                if !index_page_read(&file, offset_table, page_index, &mut page)
                    .map_err(io_error("read"))?
                {
                    self.bad(format_args!(
                        "error file={} page={page_index} reason=page-checksum",
                        FileId::Index(segment)
                    ))?;
                    return Ok(());
                }
                page_loaded = Some(page_index);
            }
            let Some((position, size)) = engine::index_file::page_slot(&page, index) else {
                continue;
            };
            let entry = EntryId(run.entry_first + i64::try_from(offset).expect("small"));
            let location = Location {
                segment,
                position: Position(u64::from(position)),
            };
            self.entry(entry, size, location)?;
        }
        Ok(())
    }

    /// A run whose index file is missing or bad: its entries found by walking the segment.
    fn walked_run(&mut self, ledger: LedgerId, run: &SealedRun) -> Result<(), AdminError> {
        let path = self.view.path(FileId::Segment(run.segment));
        let walk_error = |error| AdminError::Segment {
            path: path.clone(),
            error,
        };
        let mut walk = SegmentWalk::open(&path, run.segment).map_err(walk_error)?;
        while let WalkStep::Record(record) = walk.next_step().map_err(|error| AdminError::Io {
            operation: "read",
            path: path.clone(),
            error,
        })? {
            let header = record.header;
            let wanted = header.kind == RecordKind::Entry
                && header.ledger == ledger
                && (run.entry_first..=run.entry_last).contains(&header.entry.0);
            if wanted {
                self.entry(header.entry, header.payload_size, header.location)?;
            }
        }
        Ok(())
    }

    fn entry(&mut self, entry: EntryId, size: u32, location: Location) -> Result<(), AdminError> {
        line(
            self.out,
            format_args!(
                "entry={} size={size} segment={} position={}",
                entry.0,
                FileId::Segment(location.segment),
                location.position.0
            ),
        )?;
        if self.args.dump {
            self.dump(location)?;
        }
        Ok(())
    }

    fn dump(&mut self, location: Location) -> Result<(), AdminError> {
        let path = self.view.path(FileId::Segment(location.segment));
        let read = record_read(&path, location).map_err(|error| AdminError::Io {
            operation: "read",
            path: path.clone(),
            error,
        })?;
        let payload = match read {
            Ok((_, payload)) => payload,
            Err(reason) => {
                return self.bad(format_args!(
                    "error segment={} position={} reason={reason:?}",
                    FileId::Segment(location.segment),
                    location.position.0
                ));
            }
        };
        let shown = payload.len().min(self.args.dump_bytes as usize);
        for (row, chunk) in payload[..shown].chunks(16).enumerate() {
            let hex: String = chunk.iter().map(|byte| format!(" {byte:02x}")).collect();
            let text: String = chunk
                .iter()
                .map(|&byte| {
                    if byte.is_ascii_graphic() || byte == b' ' {
                        char::from(byte)
                    } else {
                        '.'
                    }
                })
                .collect();
            line(
                self.out,
                format_args!("  {:08x} {hex:<48}  |{text}|", row * 16),
            )?;
        }
        if shown < payload.len() {
            line(
                self.out,
                format_args!("  ... {} more bytes", payload.len() - shown),
            )?;
        }
        Ok(())
    }

    fn bad(&mut self, text: std::fmt::Arguments<'_>) -> Result<(), AdminError> {
        self.outcome = super::Outcome::Damaged;
        line(self.out, text)
    }
}
