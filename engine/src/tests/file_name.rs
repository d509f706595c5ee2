//! File names: every kind round-trips, temporaries are told apart, garbage is rejected.

use crate::file_name::{file_name, is_temporary_file_name, parse_file_name, temporary_file_name};
use crate::ids::{FileId, SegmentId};

/// `name` is what `id` is called; `parse_file_name` gives `id` back and the temporary name is
/// `name` + `.tmp`, which is never taken for a published file.
fn check(id: FileId, name: &str) {
    assert_eq!(file_name(id), name);
    assert_eq!(id.to_string(), name);
    assert_eq!(parse_file_name(name), Some(id));
    let temporary = temporary_file_name(id);
    assert_eq!(temporary, format!("{name}.tmp"));
    assert!(is_temporary_file_name(&temporary));
    assert!(!is_temporary_file_name(name));
    assert_eq!(parse_file_name(&temporary), None);
}

#[test]
fn names_round_trip_for_every_kind() {
    check(FileId::Segment(SegmentId(7)), "0000000007.segment");
    check(FileId::Segment(SegmentId(0)), "0000000000.segment");
    check(FileId::Segment(SegmentId(u32::MAX)), "4294967295.segment");
    check(FileId::Index(SegmentId(7)), "0000000007.index");
    check(FileId::Index(SegmentId(u32::MAX)), "4294967295.index");
    check(FileId::Checkpoint, "checkpoint");
}

#[test]
fn garbage_names_are_rejected() {
    for name in [
        "",
        ".segment",
        "7.segment",
        "000000007.segment",
        "00000000007.segment",
        "4294967296.segment",
        "9999999999.index",
        "+000000007.segment",
        "000000000x.index",
        "0000000007.segment ",
        "0000000007.Segment",
        "0000000007.segments",
        "0000000007.idx",
        "0000000007",
        "checkpoint.old",
        "Checkpoint",
        "0000000007.checkpoint",
        "lost+found",
    ] {
        assert_eq!(parse_file_name(name), None, "{name:?}");
        assert!(!is_temporary_file_name(name), "{name:?}");
    }
    // Temporaries are ours by suffix alone, as segment temporaries always were.
    assert!(is_temporary_file_name("garbage.segment.tmp"));
    assert!(is_temporary_file_name("garbage.index.tmp"));
    assert!(!is_temporary_file_name("notes.tmp"));
    assert!(!is_temporary_file_name("checkpoint.tmp.tmp"));
}

#[test]
fn file_ids_sort_segments_then_index_files_then_the_checkpoint() {
    let mut ids = vec![
        FileId::Checkpoint,
        FileId::Index(SegmentId(2)),
        FileId::Segment(SegmentId(10)),
        FileId::Index(SegmentId(1)),
        FileId::Segment(SegmentId(3)),
    ];
    ids.sort();
    let expected = [
        FileId::Segment(SegmentId(3)),
        FileId::Segment(SegmentId(10)),
        FileId::Index(SegmentId(1)),
        FileId::Index(SegmentId(2)),
        FileId::Checkpoint,
    ];
    assert_eq!(ids, expected);
}

#[test]
fn a_segments_compacted_copy_is_parsed_from_its_resting_name_only() {
    use crate::file_name::{parse_segment_compacted_name, resting_file_name};
    let id = FileId::SegmentCompacted(SegmentId(7));
    let name = resting_file_name(id);
    assert_eq!(name, "0000000007.segment.compacted.tmp");
    assert_eq!(parse_segment_compacted_name(&name), Some(id));
    for other in [
        "0000000007.segment.compacted",
        "0000000007.index.compacted.tmp",
        "0000000007.segment.tmp",
        "7.segment.compacted.tmp",
        "garbage.segment.compacted.tmp",
        "0000000007.segment",
    ] {
        assert_eq!(parse_segment_compacted_name(other), None, "{other:?}");
    }
}
