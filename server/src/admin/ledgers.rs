//! `ringlog ledgers` (BookKeeper shell: `listledgers`): one line per ledger of every journal.

use super::{journal_view, line, AdminError, DataDirArgs, Outcome};
use clap::Args;
use engine::index::Ledger;
use engine::record::record_size;
use std::io::Write;

/// Flags of `ringlog ledgers`.
#[derive(Args, Debug)]
pub struct LedgersArgs {
    #[command(flatten)]
    pub data: DataDirArgs,
    /// Also list deleted ledgers whose tombstone is still kept (`state=deleted`).
    #[arg(long)]
    pub deleted: bool,
}

/// Prints `ledger=ID shard=K state=live entries=N bytes=B entry_last=E lac=L fenced=yes|no`,
/// sorted by shard then ledger id.
pub fn run(args: &LedgersArgs, out: &mut impl Write) -> Result<Outcome, AdminError> {
    let (_locks, journals) = args.data.open()?;
    for journal in &journals {
        let view = journal_view(journal)?;
        let mut ledgers: Vec<_> = view.index.ledgers().collect();
        ledgers.sort_unstable();
        for id in ledgers {
            let ledger = view.index.ledger(id).expect("listed");
            let (entries, bytes) = totals(ledger);
            line(
                out,
                format_args!(
                    "ledger={} shard={} state=live entries={entries} bytes={bytes} \
                     entry_last={} lac={} fenced={}",
                    id.0,
                    journal.shard,
                    ledger.entry_last,
                    ledger.last_add_confirmed,
                    if ledger.fenced { "yes" } else { "no" },
                ),
            )?;
        }
        if args.deleted {
            for (id, segment_last) in view.index.tombstones() {
                line(
                    out,
                    format_args!(
                        "ledger={} shard={} state=deleted segment_last={}",
                        id.0, journal.shard, segment_last.0
                    ),
                )?;
            }
        }
    }
    Ok(Outcome::Clean)
}

/// Entries held and their records' bytes on disk (headers and padding included). An entry
/// written again (a recovery re-add) in another segment counts once per copy.
pub fn totals(ledger: &Ledger) -> (u64, u64) {
    let mut entries = 0u64;
    let mut bytes = 0u64;
    for run in ledger.sealed_runs() {
        entries += u64::from(run.entries);
        bytes += run.bytes;
    }
    for open in ledger.open_slots() {
        for (_, slot) in open.held() {
            entries += 1;
            bytes += record_size(slot.payload_size as usize) as u64;
        }
    }
    (entries, bytes)
}
