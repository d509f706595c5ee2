//! SimDisk with files of every kind: what survives a crash after writes, syncs, publishes
//! and removes, checked over many seeds.

use crate::disk::sim::SimDisk;
use crate::disk::{BufferId, Disk, WriteSync};
use crate::ids::{FileId, SegmentId};

const FILE_SIZE: usize = 8192;
const SEEDS: u64 = 64;
const BUFFER: BufferId = BufferId(0);
const INDEX: FileId = FileId::Index(SegmentId(7));
const CHECKPOINT: FileId = FileId::Checkpoint;

#[derive(Clone, Copy, Debug)]
enum Op {
    /// `file_create` of `FILE_SIZE` bytes.
    Create(FileId),
    /// The whole file filled with the byte by `write_blocking`, not synced.
    Write(FileId, u8),
    /// The whole file filled with the byte by `submit_write` + linked fdatasync, completed.
    WriteSynced(FileId, u8),
    Sync(FileId),
    Publish(FileId),
    Remove(FileId),
    Crash,
}

/// What a file holds at the end.
#[derive(Clone, Copy, Debug)]
enum Content {
    /// Every byte is this one.
    Exactly(u8),
    /// Each byte is this one or zero, and the file is no longer than written: a write that
    /// was never synced, landed in full, torn or not at all.
    TornOrLost(u8),
}

/// Runs `ops` on a fresh disk for every seed, then checks that the published files are
/// exactly `expect`. Returns the seeds for which a `TornOrLost` file was not whole.
fn check(ops: &[Op], expect: &[(FileId, Content)]) -> u64 {
    let mut not_whole = 0;
    for seed in 0..SEEDS {
        let mut disk = new_disk(seed);
        for &op in ops {
            disk = run(disk, op);
        }
        let files = disk.files_list().unwrap();
        let expected: Vec<FileId> = expect.iter().map(|&(id, _)| id).collect();
        assert_eq!(files, expected, "seed {seed} after {ops:?}");
        for &(id, content) in expect {
            let size = usize::try_from(disk.file_open(id).unwrap()).unwrap();
            assert!(size <= FILE_SIZE, "seed {seed} {id}");
            let count = disk.read_blocking(id, 0, BUFFER, FILE_SIZE).unwrap();
            assert_eq!(count, size);
            let bytes = &disk.buffer(BUFFER)[..size];
            match content {
                Content::Exactly(byte) => {
                    assert_eq!(size, FILE_SIZE, "seed {seed} {id}");
                    assert!(bytes.iter().all(|&b| b == byte), "seed {seed} {id}");
                }
                Content::TornOrLost(byte) => {
                    assert!(bytes.iter().all(|&b| b == byte || b == 0), "seed {seed}");
                    let whole = size == FILE_SIZE && bytes.iter().all(|&b| b == byte);
                    not_whole += u64::from(!whole);
                }
            }
        }
    }
    not_whole
}

fn new_disk(seed: u64) -> SimDisk {
    let mut disk = SimDisk::new(seed);
    disk.buffers_allocate(&[FILE_SIZE]);
    disk
}

fn run(mut disk: SimDisk, op: Op) -> SimDisk {
    match op {
        Op::Create(id) => disk.file_create(id, FILE_SIZE as u64).unwrap(),
        Op::Write(id, byte) => {
            disk.buffer_mut(BUFFER).fill(byte);
            disk.write_blocking(id, 0, BUFFER, FILE_SIZE).unwrap();
        }
        Op::WriteSynced(id, byte) => {
            disk.buffer_mut(BUFFER).fill(byte);
            let sync = WriteSync::LinkedFdatasync;
            disk.submit_write(1, id, 0, BUFFER, FILE_SIZE, sync)
                .unwrap();
            let mut completions = Vec::new();
            while disk.in_flight() > 0 {
                disk.poll(&mut completions);
            }
            assert_eq!(completions.len(), 2);
            assert!(completions.iter().all(|completion| completion.result >= 0));
        }
        Op::Sync(id) => disk.sync_blocking(id).unwrap(),
        Op::Publish(id) => disk.file_publish(id).unwrap(),
        Op::Remove(id) => disk.file_remove(id).unwrap(),
        Op::Crash => {
            disk = disk.crash();
            disk.buffers_allocate(&[FILE_SIZE]);
        }
    }
    disk
}

#[test]
fn an_index_file_written_synced_and_published_survives_a_crash() {
    use Op::{Crash, Create, Publish, Sync, Write, WriteSynced};
    let blocking = [
        Create(INDEX),
        Write(INDEX, 0xAB),
        Sync(INDEX),
        Publish(INDEX),
        Crash,
    ];
    check(&blocking, &[(INDEX, Content::Exactly(0xAB))]);
    let submitted = [
        Create(INDEX),
        WriteSynced(INDEX, 0xAB),
        Publish(INDEX),
        Crash,
    ];
    check(&submitted, &[(INDEX, Content::Exactly(0xAB))]);
    // The same descriptor serves the file after its publish.
    let after = [
        Create(INDEX),
        Publish(INDEX),
        WriteSynced(INDEX, 0xCD),
        Crash,
    ];
    check(&after, &[(INDEX, Content::Exactly(0xCD))]);
}

#[test]
fn an_index_file_written_but_not_synced_may_be_torn_or_lost() {
    use Op::{Crash, Create, Publish, Write};
    let ops = [Create(INDEX), Write(INDEX, 0xAB), Publish(INDEX), Crash];
    let not_whole = check(&ops, &[(INDEX, Content::TornOrLost(0xAB))]);
    assert!(
        not_whole > 0,
        "some seed must tear or lose the unsynced write"
    );
    assert!(not_whole < SEEDS, "some seed must land it whole");
}

#[test]
fn an_unpublished_file_is_gone_after_a_crash() {
    use Op::{Crash, Create, Publish, Sync, Write};
    // Its temporary name was never made durable.
    check(
        &[Create(INDEX), Write(INDEX, 0xAB), Sync(INDEX), Crash],
        &[],
    );
    // Its temporary name was made durable by another publish: `files_list` deletes it.
    let ops = [
        Create(INDEX),
        Write(INDEX, 0xAB),
        Sync(INDEX),
        Create(CHECKPOINT),
        Write(CHECKPOINT, 0x11),
        Sync(CHECKPOINT),
        Publish(CHECKPOINT),
        Crash,
    ];
    check(&ops, &[(CHECKPOINT, Content::Exactly(0x11))]);
}

#[test]
fn a_publish_replaces_an_existing_file() {
    use Op::{Crash, Create, Publish, Write, WriteSynced};
    let first = [
        Create(CHECKPOINT),
        WriteSynced(CHECKPOINT, 0x11),
        Publish(CHECKPOINT),
    ];
    let replaced = [
        Create(CHECKPOINT),
        WriteSynced(CHECKPOINT, 0x22),
        Publish(CHECKPOINT),
    ];
    let ops: Vec<Op> = first
        .iter()
        .chain(&replaced)
        .copied()
        .chain([Crash])
        .collect();
    check(&ops, &[(CHECKPOINT, Content::Exactly(0x22))]);
    // A crash before the second publish leaves the first file whole.
    let ops: Vec<Op> = first
        .iter()
        .chain(&replaced[..2])
        .copied()
        .chain([Crash])
        .collect();
    check(&ops, &[(CHECKPOINT, Content::Exactly(0x11))]);
    // A crash after a publish of unsynced bytes: the name holds the new file, maybe torn.
    let unsynced = [
        Create(CHECKPOINT),
        Write(CHECKPOINT, 0x33),
        Publish(CHECKPOINT),
        Crash,
    ];
    let ops: Vec<Op> = first.iter().chain(&unsynced).copied().collect();
    check(&ops, &[(CHECKPOINT, Content::TornOrLost(0x33))]);
}

#[test]
fn a_removed_file_stays_removed_after_a_crash() {
    use Op::{Crash, Create, Publish, Remove, WriteSynced};
    let other = FileId::Index(SegmentId(8));
    let ops = [
        Create(INDEX),
        WriteSynced(INDEX, 0xAB),
        Publish(INDEX),
        Create(other),
        WriteSynced(other, 0xCD),
        Publish(other),
        Remove(INDEX),
        Crash,
    ];
    check(&ops, &[(other, Content::Exactly(0xCD))]);
    // Removed before the crash and after it.
    let ops = [Create(INDEX), Publish(INDEX), Crash, Remove(INDEX), Crash];
    check(&ops, &[]);
}

#[test]
fn a_removed_or_closed_file_has_no_descriptor() {
    let mut disk = new_disk(1);
    disk.file_create(INDEX, FILE_SIZE as u64).unwrap();
    disk.file_publish(INDEX).unwrap();
    disk.file_close(INDEX);
    assert!(disk.sync_blocking(INDEX).is_err());
    assert_eq!(disk.file_open(INDEX).unwrap(), FILE_SIZE as u64);
    disk.sync_blocking(INDEX).unwrap();
    disk.file_remove(INDEX).unwrap();
    assert!(disk.sync_blocking(INDEX).is_err());
    assert!(disk.file_open(INDEX).is_err());
    assert!(disk.file_remove(INDEX).is_err());
}

#[test]
fn files_list_sorts_every_kind_and_inserted_files_are_durable() {
    let mut disk = SimDisk::new(3);
    let files = [
        (CHECKPOINT, 1u8),
        (FileId::Index(SegmentId(2)), 2),
        (FileId::Segment(SegmentId(5)), 3),
        (FileId::Segment(SegmentId(1)), 4),
        (FileId::Index(SegmentId(1)), 5),
    ];
    for (id, byte) in files {
        disk.insert_file(id, vec![byte; 4096]);
    }
    let mut disk = disk.crash();
    let expected = [
        FileId::Segment(SegmentId(1)),
        FileId::Segment(SegmentId(5)),
        FileId::Index(SegmentId(1)),
        FileId::Index(SegmentId(2)),
        CHECKPOINT,
    ];
    assert_eq!(disk.files_list().unwrap(), expected);
    for (id, byte) in files {
        assert_eq!(disk.durable_file_mut(id).unwrap(), &vec![byte; 4096]);
    }
    let segment = disk.durable_image_mut(SegmentId(5)).unwrap();
    assert_eq!(segment, &vec![3u8; 4096]);
}

#[test]
fn segments_max_counts_segment_files_only() {
    let mut disk = new_disk(5);
    disk.faults.segments_max = Some(1);
    disk.file_create(INDEX, 4096).unwrap();
    disk.file_create(CHECKPOINT, 4096).unwrap();
    disk.file_create(FileId::Segment(SegmentId(0)), 4096)
        .unwrap();
    let full = disk.file_create(FileId::Segment(SegmentId(1)), 4096);
    assert_eq!(full.unwrap_err().raw_os_error(), Some(28), "ENOSPC");
    disk.file_create(FileId::Index(SegmentId(0)), 4096).unwrap();
}

#[test]
fn capacity_counts_every_listed_file_and_removal_gives_it_back() {
    let mut disk = new_disk(6);
    assert_eq!(
        disk.space_free().unwrap(),
        u64::MAX,
        "no capacity: no limit"
    );
    disk.faults.capacity = Some(3 * 4096);
    disk.file_create(INDEX, 4096).unwrap();
    disk.file_create(FileId::Segment(SegmentId(0)), 4096)
        .unwrap();
    assert_eq!(disk.space_free().unwrap(), 4096);
    let full = disk.file_create(FileId::Segment(SegmentId(1)), 8192);
    assert_eq!(full.unwrap_err().raw_os_error(), Some(28), "ENOSPC");
    // A checkpoint written beside the one it replaces needs room for both until the rename.
    disk.file_create(CHECKPOINT, 4096).unwrap();
    disk.file_publish(CHECKPOINT).unwrap();
    assert_eq!(disk.space_free().unwrap(), 0);
    let full = disk.file_create(CHECKPOINT, 4096);
    assert_eq!(full.unwrap_err().raw_os_error(), Some(28), "ENOSPC");
    // A stale temporary of the same name is replaced, so its bytes do not count twice.
    disk.file_publish(FileId::Segment(SegmentId(0))).unwrap();
    disk.file_remove(FileId::Segment(SegmentId(0))).unwrap();
    disk.file_create(FileId::Segment(SegmentId(1)), 4096)
        .unwrap();
    disk.file_create(FileId::Segment(SegmentId(1)), 4096)
        .unwrap();
    assert_eq!(disk.space_used(), 3 * 4096);
}
