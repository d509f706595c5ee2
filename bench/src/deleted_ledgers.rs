//! The deleted-ledger list `reads --deleted` checks a bookie against, and what it found per
//! ledger: whether a ledger whose metadata is gone still reads back, is gone, or is partly
//! gone, and whether one seen gone before came back.
//!
//! List format (ASCII, one ledger a line, `\n` at the end): `ledger_id`, or `ledger_id
//! collected` for a ledger the bookie was already seen to have collected (every read answered
//! missing) in a check that no deletion could race with. Lines starting with `#` are
//! comments. `reads --deleted-out` writes the list back with `collected` added where this
//! run found the ledger gone; the caller decides whether the run was such a check.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// What the reads of one deleted ledger found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Answers {
    /// Seen collected by an earlier check: nothing of it may read back.
    collected: bool,
    /// Reads answered with the right bytes.
    readable: u64,
    /// Reads answered NoSuchLedger or NoSuchEntry (or an entry -1 below the logged one).
    missing: u64,
}

/// A deleted ledger's state after a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Nothing of it was read (no logged entry, or not in the log given).
    Unread,
    /// Every read answered with the right bytes: the deletion is not collected (yet).
    Readable,
    /// Every read answered missing: collected.
    Missing,
    /// Some reads answered, some missing: collected during the run, or partly lost.
    Partial,
}

/// The counts over every ledger of the list.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    pub ledgers: u64,
    pub unread: u64,
    pub readable: u64,
    pub missing: u64,
    pub partial: u64,
    /// Ledgers collected before this run or found gone by it: `collected` in the list out.
    pub collected: u64,
    /// Ledgers collected before this run of which some read answered: deletion undone.
    pub resurrected: u64,
}

/// The list, with this run's answers.
#[derive(Debug, Default)]
pub struct DeletedLedgers {
    ledgers: BTreeMap<i64, Answers>,
}

/// The marker of a collected ledger in the list.
const COLLECTED: &str = "collected";

/// The comment at the top of a list `format` writes.
const LIST_HEADER: &str =
    "# ringlog-bench deleted ledgers: ledger_id [collected] (reads --deleted)\n";

impl DeletedLedgers {
    /// Reads a list file.
    pub fn read(path: &Path) -> Result<DeletedLedgers, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|error| format!("reading deleted-ledger list {}: {error}", path.display()))?;
        DeletedLedgers::parse(&text)
            .map_err(|error| format!("deleted-ledger list {}: {error}", path.display()))
    }

    /// Parses a list; an error names the line. A ledger listed twice keeps `collected` if
    /// either line has it: lists are appended to by scripts.
    pub fn parse(text: &str) -> Result<DeletedLedgers, String> {
        let mut ledgers = BTreeMap::new();
        for (index, line) in text.lines().enumerate() {
            let line = line.trim_end();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let bad = || {
                format!(
                    "line {}: expected `ledger_id [collected]`: {line:?}",
                    index + 1
                )
            };
            let mut fields = line.split(' ');
            let id = fields
                .next()
                .filter(|id| !id.is_empty() && id.bytes().all(|byte| byte.is_ascii_digit()))
                .and_then(|id| id.parse::<i64>().ok())
                .ok_or_else(bad)?;
            let collected = match (fields.next(), fields.next()) {
                (None, _) => false,
                (Some(COLLECTED), None) => true,
                _ => return Err(bad()),
            };
            let answers: &mut Answers = ledgers.entry(id).or_default();
            answers.collected |= collected;
        }
        Ok(DeletedLedgers { ledgers })
    }

    pub fn contains(&self, ledger_id: i64) -> bool {
        self.ledgers.contains_key(&ledger_id)
    }

    /// True for a ledger listed as collected.
    pub fn collected(&self, ledger_id: i64) -> bool {
        self.ledgers
            .get(&ledger_id)
            .is_some_and(|answers| answers.collected)
    }

    /// Records one read of a listed ledger: answered with the right bytes, or missing.
    /// Returns true when the answer undoes a collected deletion.
    pub fn record(&mut self, ledger_id: i64, readable: bool) -> bool {
        let answers = self
            .ledgers
            .get_mut(&ledger_id)
            .expect("only listed ledgers are recorded");
        if readable {
            answers.readable += 1;
        } else {
            answers.missing += 1;
        }
        readable && answers.collected
    }

    /// The ledgers in `state`, in id order.
    pub fn ledgers_in(&self, state: State) -> Vec<i64> {
        self.ledgers
            .iter()
            .filter(|(_, answers)| state_of(**answers) == state)
            .map(|(id, _)| *id)
            .collect()
    }

    pub fn tally(&self) -> Tally {
        let mut tally = Tally::default();
        for answers in self.ledgers.values() {
            tally.ledgers += 1;
            let state = state_of(*answers);
            match state {
                State::Unread => tally.unread += 1,
                State::Readable => tally.readable += 1,
                State::Missing => tally.missing += 1,
                State::Partial => tally.partial += 1,
            }
            tally.collected += u64::from(collected_after(*answers));
            tally.resurrected += u64::from(answers.collected && answers.readable > 0);
        }
        tally
    }

    /// The list again, `collected` on every ledger collected before or found gone now.
    pub fn format(&self) -> String {
        let mut out = String::from(LIST_HEADER);
        for (id, answers) in &self.ledgers {
            let marker = if collected_after(*answers) {
                " collected"
            } else {
                ""
            };
            // Writing into a String cannot fail.
            let _ = writeln!(out, "{id}{marker}");
        }
        out
    }
}

fn state_of(answers: Answers) -> State {
    match (answers.readable, answers.missing) {
        (0, 0) => State::Unread,
        (_, 0) => State::Readable,
        (0, _) => State::Missing,
        _ => State::Partial,
    }
}

/// Collected stays collected: a resurrection is reported, and does not clear the mark, so the
/// ledger is checked again after the next restart.
fn collected_after(answers: Answers) -> bool {
    answers.collected || state_of(answers) == State::Missing
}

#[cfg(test)]
mod tests;
