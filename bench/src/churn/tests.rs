//! Tests of `churn`'s pure parts: metadata paths and LAYOUT, the disk summary, /proc parsing.

use super::zookeeper::{layout_hierarchical, ledger_path, LAYOUT_HIERARCHICAL};
use super::{io_write_bytes, DiskSummary, Sample};

#[test]
fn ledger_paths_are_the_hierarchical_managers() {
    // Examples computed by BookKeeper's StringUtils.getHybridHierarchicalLedgerPath.
    assert_eq!(ledger_path("/ledgers", 1), "/ledgers/00/0000/L0001");
    assert_eq!(
        ledger_path("/ledgers", 1_234_567_890),
        "/ledgers/12/3456/L7890"
    );
    assert_eq!(
        ledger_path("/ledgers", 2_147_483_646),
        "/ledgers/21/4748/L3646"
    );
    // From Integer.MAX_VALUE up, the long form.
    assert_eq!(
        ledger_path("/ledgers", 2_147_483_647),
        "/ledgers/000/0000/0021/4748/L3647"
    );
    assert_eq!(
        ledger_path("/pulsar/ledgers", 1_764_700_000_000_000),
        "/pulsar/ledgers/000/1764/7000/0000/L0000"
    );
    assert_eq!(ledger_path("/l", i64::MAX), "/l/922/3372/0368/5477/L5807");
}

#[test]
fn layout_is_what_bookkeeper_writes_and_the_collector_reads() {
    assert!(layout_hierarchical(LAYOUT_HIERARCHICAL));
    assert!(layout_hierarchical(b"1\nhierarchical:1"));
    assert!(layout_hierarchical(
        b"2\norg.apache.bookkeeper.meta.LongHierarchicalLedgerManagerFactory:1\n"
    ));
    assert!(!layout_hierarchical(
        b"2\norg.apache.bookkeeper.meta.FlatLedgerManagerFactory:1"
    ));
    assert!(!layout_hierarchical(
        b"3\norg.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory:1"
    ));
    assert!(!layout_hierarchical(b"\xff"));
}

#[test]
fn disk_summary_finds_the_maximum_and_the_halves() {
    let sample = |second, disk_bytes, live_bytes| Sample {
        second,
        disk_bytes,
        live_bytes,
    };
    let samples = [
        sample(1, 100, 50),
        sample(2, 300, 200),
        sample(3, 250, 240),
        sample(4, 280, 100),
    ];
    let summary = DiskSummary::of(&samples, 0);
    assert_eq!(
        summary,
        DiskSummary {
            disk_max: 300,
            disk_max_second: 2,
            live_at_disk_max: 200,
            live_max: 240,
            disk_end: 280,
            steady_from_second: 1,
            disk_max_first_half: 300,
            disk_max_second_half: 280,
        }
    );
    assert!((summary.ratio_at_disk_max() - 1.5).abs() < 1e-9);
    // From the third sample on (seconds 3 and 4): the halves leave the fill-up out.
    let steady = DiskSummary::of(&samples, 2);
    assert_eq!(steady.steady_from_second, 3);
    assert_eq!(
        (steady.disk_max_first_half, steady.disk_max_second_half),
        (250, 280)
    );
    assert_eq!(steady.disk_max, 300);
    assert_eq!(DiskSummary::of(&[], 0), DiskSummary::default());
    assert_eq!(DiskSummary::of(&samples, 9).disk_max_first_half, 0);
}

#[test]
fn proc_io_write_bytes_is_parsed() {
    let text = "rchar: 1\nwchar: 2\nsyscr: 3\nsyscw: 4\nread_bytes: 5\nwrite_bytes: 123456\n\
                cancelled_write_bytes: 7\n";
    assert_eq!(io_write_bytes(text), Some(123_456));
    assert_eq!(io_write_bytes("rchar: 1\n"), None);
}
