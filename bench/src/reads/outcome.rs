//! How a `reads` run ends: its `Report` (entries checked, missing, corrupt, failed, the
//! entry -1 checks and, with `--deleted`, the deleted ledgers' tally and notes) and its
//! verdict, pass or fail. The checking itself is `reads.rs`'s.

use super::Checker;
use crate::deleted_ledgers::{DeletedLedgers, State};
use crate::report::Report;

impl Checker<'_> {
    pub(super) fn report(&mut self) -> Report {
        let mut report = std::mem::replace(&mut self.report, Report::new("reads"));
        report.elapsed = self.start.elapsed();
        report.errors = self.missing + self.corrupt + self.failed + self.resurrected_reads;
        report
            .extra
            .push(("entries_logged", self.entries.len() as f64));
        report.extra.push(("missing", self.missing as f64));
        report.extra.push(("corrupt", self.corrupt as f64));
        report.extra.push(("read_errors", self.failed as f64));
        report.extra.push(("ledgers", self.ledgers.len() as f64));
        report
            .extra
            .push(("last_entry_checks", self.last_checked as f64));
        report
            .extra
            .push(("connections", self.connection_count as f64));
        report
            .extra
            .push(("batch", f64::from(u8::from(self.batch))));
        if self.batch {
            report
                .extra
                .push(("batch_requests", self.batch_requests as f64));
        }
        report.notes.push(format!(
            "{} of {} logged entries checked OK; missing {} (data loss), corrupt {}, errors {}; \
             entry -1 of {}/{} ledgers at or above the log ({} above: acked, not logged)",
            report.count,
            self.entries.len(),
            self.missing,
            self.corrupt,
            self.failed,
            self.last_checked,
            self.ledgers.len(),
            self.above_log
        ));
        if self.batch {
            report
                .notes
                .push("latency is per BATCH_READ_ENTRY request".into());
        }
        if let Some(deleted) = &self.deleted {
            self.report_deleted(&mut report, deleted);
        }
        report
    }

    fn report_deleted(&self, report: &mut Report, deleted: &DeletedLedgers) {
        let tally = deleted.tally();
        let extra = &mut report.extra;
        extra.push(("deleted_ledgers", tally.ledgers as f64));
        extra.push(("deleted_ledgers_readable", tally.readable as f64));
        extra.push(("deleted_ledgers_missing", tally.missing as f64));
        extra.push(("deleted_ledgers_partial", tally.partial as f64));
        extra.push(("deleted_ledgers_unread", tally.unread as f64));
        extra.push(("deleted_ledgers_collected", tally.collected as f64));
        extra.push(("resurrected", tally.resurrected as f64));
        extra.push(("resurrected_reads", self.resurrected_reads as f64));
        extra.push(("deleted_entries_readable", self.deleted_readable as f64));
        extra.push(("deleted_entries_missing", self.deleted_missing as f64));
        report.notes.push(format!(
            "deleted ledgers {}: {} read back whole, {} missing (collected), {} partly, {} not \
             read; {} collected in all, {} resurrected; their reads: {} answered, {} missing",
            tally.ledgers,
            tally.readable,
            tally.missing,
            tally.partial,
            tally.unread,
            tally.collected,
            tally.resurrected,
            self.deleted_readable,
            self.deleted_missing
        ));
        // Named, so a partly readable ledger can be looked up in the bookie's log and data.
        let partial = deleted.ledgers_in(State::Partial);
        if !partial.is_empty() {
            let shown: Vec<String> = partial.iter().take(20).map(i64::to_string).collect();
            report.notes.push(format!(
                "deleted ledgers read back partly (collected during this run, or partly lost): \
                 {}{}",
                shown.join(" "),
                if partial.len() > shown.len() {
                    " ..."
                } else {
                    ""
                }
            ));
        }
    }

    pub(super) fn verdict(&self) -> Result<(), String> {
        if self.missing + self.corrupt + self.failed + self.resurrected_reads == 0 {
            return Ok(());
        }
        Err(format!(
            "verification failed: {} missing, {} corrupt, {} errors, {} reads of collected \
             ledgers answered (resurrected)",
            self.missing, self.corrupt, self.failed, self.resurrected_reads
        ))
    }
}
