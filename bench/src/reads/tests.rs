//! Tests of what `reads --deleted` reads.

use super::{entries_of_ledgers, entries_to_read, ledger_summaries, work_queue, Work};
use crate::deleted_ledgers::DeletedLedgers;
use crate::verify_log::LoggedEntry;

fn entry(ledger_id: i64, entry_id: i64) -> LoggedEntry {
    LoggedEntry {
        ledger_id,
        entry_id,
        payload_crc32c: 0,
        payload_len: 8,
    }
}

fn ids(entries: &[LoggedEntry]) -> Vec<(i64, i64)> {
    entries.iter().map(|e| (e.ledger_id, e.entry_id)).collect()
}

#[test]
fn collected_ledgers_are_sampled_and_deleted_only_drops_the_live() {
    // Ledger 1 live, 2 deleted, 3 collected (4 entries), 4 collected (1 entry).
    let entries: Vec<LoggedEntry> = [(1, 0), (1, 1), (2, 0), (2, 1), (3, 0), (3, 1), (3, 2)]
        .into_iter()
        .chain([(3, 3), (4, 0)])
        .map(|(ledger, entry_id)| entry(ledger, entry_id))
        .collect();
    let deleted = DeletedLedgers::parse("2\n3 collected\n4 collected\n").expect("list");
    assert_eq!(
        ids(&entries_to_read(entries.clone(), &deleted, false)),
        [(1, 0), (1, 1), (2, 0), (2, 1), (3, 0), (3, 3), (4, 0)]
    );
    assert_eq!(
        ids(&entries_to_read(entries.clone(), &deleted, true)),
        [(2, 0), (2, 1), (3, 0), (3, 3), (4, 0)]
    );
    let none = DeletedLedgers::parse("").expect("empty");
    assert_eq!(entries_to_read(entries.clone(), &none, false), entries);
    assert!(entries_to_read(entries, &none, true).is_empty());
}

#[test]
fn one_ledger_is_read_alone_in_entry_order_and_an_absent_one_is_refused() {
    let entries: Vec<LoggedEntry> = [(1, 0), (1, 1), (2, 0), (2, 1), (2, 2), (3, 0)]
        .into_iter()
        .map(|(ledger, entry_id)| entry(ledger, entry_id))
        .collect();
    assert_eq!(
        ids(&entries_of_ledgers(entries.clone(), &[2]).expect("present")),
        [(2, 0), (2, 1), (2, 2)]
    );
    let absent = entries_of_ledgers(entries.clone(), &[9]).expect_err("absent");
    assert!(absent.contains("--ledger 9"), "{absent}");
    // Several: one after another, each whole, whatever order they were named in; one absent
    // among them is refused by name.
    assert_eq!(
        ids(&entries_of_ledgers(entries.clone(), &[3, 1]).expect("present")),
        [(1, 0), (1, 1), (3, 0)]
    );
    let absent = entries_of_ledgers(entries, &[1, 7, 3]).expect_err("absent");
    assert!(absent.contains("--ledger 7"), "{absent}");
}

#[test]
fn ledgers_named_are_read_one_after_another_and_all_ledgers_in_rounds() {
    let entries: Vec<LoggedEntry> = [(1, 0), (1, 1), (1, 2), (2, 0), (2, 1)]
        .into_iter()
        .map(|(ledger, entry_id)| entry(ledger, entry_id))
        .collect();
    let ledgers = ledger_summaries(&entries);
    let order = |in_turn| -> Vec<(i64, i64)> {
        work_queue(&entries, &ledgers, 1, in_turn)
            .into_iter()
            .filter_map(|work| match work {
                Work::Entries { first, .. } => {
                    Some((entries[first].ledger_id, entries[first].entry_id))
                }
                Work::Last { .. } => None,
            })
            .collect()
    };
    assert_eq!(order(true), [(1, 0), (1, 1), (1, 2), (2, 0), (2, 1)]);
    assert_eq!(order(false), [(1, 0), (2, 0), (1, 1), (2, 1), (1, 2)]);
}
