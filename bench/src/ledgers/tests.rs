//! Tests of `ledgers`' id lists.

use super::{ids_parse, IDS_MAX};

#[test]
fn ids_and_ranges_parse_in_order_without_duplicates() {
    assert_eq!(ids_parse("7").expect("one id"), vec![7]);
    assert_eq!(
        ids_parse("1000-1003,2005,0").expect("list"),
        vec![1000, 1001, 1002, 1003, 2005, 0]
    );
    assert_eq!(ids_parse("5-5,4-6,5").expect("overlaps"), vec![5, 4, 6]);
    let last = i64::MAX.to_string();
    assert_eq!(ids_parse(&last).expect("largest"), vec![i64::MAX]);
}

#[test]
fn bad_lists_are_refused_with_the_list_named() {
    for bad in [
        "",
        "1,",
        ",1",
        "a",
        "1-",
        "-1",
        "3-1",
        "1--2",
        "+4",
        " 4",
        "4 ",
        "1-2-3",
        "99999999999999999999",
    ] {
        let error = ids_parse(bad).expect_err(bad);
        assert!(error.contains(&format!("{bad:?}")), "{bad}: {error}");
    }
    let huge = format!("0-{IDS_MAX}");
    assert!(ids_parse(&huge)
        .expect_err("too many")
        .contains("more than"));
    assert_eq!(
        ids_parse(&format!("1-{IDS_MAX}"))
            .expect("at the limit")
            .len() as u64,
        IDS_MAX
    );
}
