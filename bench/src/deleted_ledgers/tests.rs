//! Tests of the deleted-ledger list and the per-ledger verdicts.

use super::*;

#[test]
fn lists_parse_and_errors_name_the_line() {
    let list =
        DeletedLedgers::parse("# header\n5\n7 collected\n\n5 collected\n9\n").expect("parses");
    assert!(list.contains(5) && list.contains(7) && list.contains(9));
    assert!(!list.contains(6));
    // A ledger listed twice keeps the mark of either line.
    assert!(list.collected(5) && list.collected(7));
    assert!(!list.collected(9));
    for bad in [
        "x",
        "-5",
        "5 gone",
        "5 collected x",
        " 5",
        "5  collected",
        "+5",
    ] {
        let text = format!("1\n{bad}\n");
        let error = DeletedLedgers::parse(&text).expect_err(bad);
        assert!(error.contains("line 2"), "{bad}: {error}");
    }
    assert_eq!(
        DeletedLedgers::parse("").expect("empty").tally(),
        Tally::default()
    );
}

#[test]
fn answers_decide_each_ledgers_state() {
    let mut list = DeletedLedgers::parse("1\n2\n3\n4\n5 collected\n6 collected\n").expect("list");
    // 1: every read answered; 2: every read missing; 3: both; 4: not read.
    assert!(!list.record(1, true));
    assert!(!list.record(1, true));
    assert!(!list.record(2, false));
    assert!(!list.record(3, true));
    assert!(!list.record(3, false));
    // 5 stays gone; 6 was collected and one read answers: resurrected.
    assert!(!list.record(5, false));
    assert!(!list.record(6, false));
    assert!(list.record(6, true));
    assert_eq!(list.ledgers_in(State::Readable), [1]);
    assert_eq!(list.ledgers_in(State::Missing), [2, 5]);
    assert_eq!(list.ledgers_in(State::Partial), [3, 6]);
    assert_eq!(list.ledgers_in(State::Unread), [4]);
    assert_eq!(
        list.tally(),
        Tally {
            ledgers: 6,
            unread: 1,
            readable: 1,
            missing: 2,
            partial: 2,
            collected: 3,
            resurrected: 1,
        }
    );
}

#[test]
fn the_list_out_marks_what_is_collected_and_parses_back() {
    let mut list = DeletedLedgers::parse("3\n1\n2 collected\n4\n").expect("list");
    list.record(1, false);
    list.record(2, true);
    list.record(3, true);
    list.record(3, false);
    let out = list.format();
    assert_eq!(
        out,
        format!("{LIST_HEADER}1 collected\n2 collected\n3\n4\n"),
        "a partly read ledger is not marked; a resurrected one keeps its mark"
    );
    let again = DeletedLedgers::parse(&out).expect("parses back");
    assert!(again.collected(1) && again.collected(2));
    assert!(!again.collected(3) && !again.collected(4));
}
