//! The io_uring disk on a real directory: commits, rollover, reads, reopen.

use super::harness::{body, KEY};
use crate::disk::Disk;
use crate::journal::{AddOptions, Event, Journal, ReadOutcome, ReadTarget};
use crate::uring::{PollEnd, Ring, UringDisk};
use crate::{Config, EntryId, LedgerId};
use std::cell::RefCell;
use std::path::PathBuf;
use std::rc::Rc;

/// True when io_uring works; otherwise prints why and skips, unless CI or REQUIRE_URING is
/// set, where a skip would hide a broken build and so fails.
pub fn uring_available() -> bool {
    crate::uring::uring_available_for_test()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../target/test-data")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn open(dir: &std::path::Path, config: Config) -> (Rc<RefCell<Ring>>, Journal<UringDisk>) {
    let ring = Rc::new(RefCell::new(Ring::new(256).unwrap()));
    let disk = UringDisk::open(ring.clone(), dir, true).unwrap();
    (ring, Journal::open(disk, config).unwrap())
}

fn settle(ring: &Rc<RefCell<Ring>>, journal: &mut Journal<UringDisk>) -> Vec<Event> {
    let mut all = Vec::new();
    let mut events = Vec::new();
    let mut net = Vec::new();
    for _ in 0..1_000_000 {
        journal.submit();
        if journal.disk_mut().in_flight() > 0 {
            ring.borrow_mut().submit_and_wait(1).unwrap();
        }
        ring.borrow_mut().reap(&mut net);
        assert!(net.is_empty());
        journal.poll();
        journal.events_swap(&mut events);
        all.append(&mut events);
        if journal.is_idle() && journal.disk_mut().in_flight() == 0 {
            return all;
        }
    }
    panic!("did not settle");
}

fn read(ring: &Rc<RefCell<Ring>>, journal: &mut Journal<UringDisk>, entry: i64) -> Vec<u8> {
    let target = ReadTarget::Entry(EntryId(entry));
    if let ReadOutcome::Ready { body, .. } = journal.read(1, LedgerId(1), target).unwrap() {
        return body.to_vec();
    }
    for event in settle(ring, journal) {
        if let Event::ReadDone { slot, .. } = event {
            let body = journal.read_result(slot).unwrap().1.to_vec();
            journal.read_release(slot);
            return body;
        }
    }
    panic!("no read completion");
}

#[test]
fn commits_roll_over_segments_and_survive_reopen() {
    if !uring_available() {
        return;
    }
    let dir = temp_dir("uring-rollover");
    let config = Config {
        segment_size: 1024 * 1024,
        ..Config::default()
    };
    let (ring, mut journal) = open(&dir, config.clone());
    let mut acked = 0;
    let mut entry = 0i64;
    while entry < 3000 {
        entry += i64::from(add_entry(&mut journal, entry, 1000));
        if entry % 64 == 0 {
            acked += settle(&ring, &mut journal).len();
        }
    }
    acked += settle(&ring, &mut journal).len();
    assert_eq!(acked, 3000);
    assert!(
        journal.stats().segments_created >= 2,
        "3 MB must span several 1 MiB segments"
    );
    assert!(journal.stats().commits < 3000, "adds were batched");
    for entry in (0..3000).step_by(7) {
        assert_eq!(read(&ring, &mut journal, entry), body(1, entry, 1000));
    }
    drop(journal);
    let (ring, mut journal) = open(&dir, config);
    assert_eq!(journal.ledger(LedgerId(1)).unwrap().entry_last, 2999);
    for entry in 0..3000 {
        assert_eq!(
            read(&ring, &mut journal, entry),
            body(1, entry, 1000),
            "entry {entry}"
        );
    }
}

/// Adds entry `entry` of ledger 1 with a `size`-byte body; false if staging is full.
fn add_entry(journal: &mut Journal<UringDisk>, entry: i64, size: usize) -> bool {
    let data = body(1, entry, size);
    let options = AddOptions::default();
    match journal.add(
        entry as u64,
        LedgerId(1),
        EntryId(entry),
        &KEY,
        &data,
        options,
    ) {
        Ok(()) => true,
        Err(crate::AddError::StagingFull) => false,
        Err(error) => panic!("{error:?}"),
    }
}

#[test]
fn commits_padded_to_512_bytes_go_through_the_kernel_and_read_back_after_reopen() {
    if !uring_available() {
        return;
    }
    let dir = temp_dir("uring-small-blocks");
    let config = Config {
        segment_size: 1024 * 1024,
        commit_block: crate::CommitBlock::Small,
        ..Config::default()
    };
    // The open's 512-byte O_DIRECT read passes on this disk (CI's too), or the test fails.
    let (ring, mut journal) = open(&dir, config.clone());
    // One add a commit: 400-byte records (the first commit with the key's 88) in 512.
    for entry in 0..200 {
        assert!(add_entry(&mut journal, entry, 300));
        assert_eq!(settle(&ring, &mut journal).len(), 1);
    }
    assert_eq!(journal.stats().commits, 200);
    assert_eq!(journal.stats().bytes_written, 200 * 512);
    // Then batches, over several segments.
    let mut entry = 200;
    while entry < 3000 {
        entry += i64::from(add_entry(&mut journal, entry, 1000));
        if entry % 64 == 0 {
            settle(&ring, &mut journal);
        }
    }
    settle(&ring, &mut journal);
    assert!(journal.stats().segments_created >= 2);
    let size = |entry: i64| if entry < 200 { 300 } else { 1000 };
    for entry in (0..3000).step_by(7) {
        assert_eq!(
            read(&ring, &mut journal, entry),
            body(1, entry, size(entry))
        );
    }
    drop(journal);
    let (ring, mut journal) = open(&dir, config);
    assert_eq!(journal.stats().torn_tail_truncations, 0);
    assert_eq!(journal.ledger(LedgerId(1)).unwrap().entry_last, 2999);
    for entry in 0..3000 {
        assert_eq!(
            read(&ring, &mut journal, entry),
            body(1, entry, size(entry))
        );
    }
    let header = std::fs::read(dir.join("0000000000.segment")).unwrap();
    let header = crate::segment::decode_segment_header(&header[..4096], crate::SegmentId(0));
    assert_eq!(header.unwrap().commit_block, crate::CommitBlock::Small);
}

#[test]
fn busy_poll_returns_on_a_posted_completion_and_gives_up_when_nothing_comes() {
    if !uring_available() {
        return;
    }
    let dir = temp_dir("uring-busy-poll");
    let config = Config {
        segment_size: 1024 * 1024,
        zero_ahead: false,
        ..Config::default()
    };
    let (ring, mut journal) = open(&dir, config);
    settle(&ring, &mut journal);
    // Nothing in flight: the poll spends its budget and says so.
    let budget = std::time::Duration::from_millis(5);
    let started = std::time::Instant::now();
    let end = ring.borrow_mut().busy_poll(budget).unwrap();
    // Descheduled only if this test thread lost its core for a time slice meanwhile.
    assert_ne!(end, PollEnd::Ready);
    if end == PollEnd::Expired {
        assert!(started.elapsed() >= budget);
    }
    // A commit in flight: the poll returns once its completion is posted, without a sleep,
    // and the completion is there to reap (one RWF_DSYNC write, one completion).
    let data = body(1, 0, 100);
    journal
        .add(
            0,
            LedgerId(1),
            EntryId(0),
            &KEY,
            &data,
            AddOptions::default(),
        )
        .unwrap();
    journal.submit();
    // On a loaded machine a poll may also end `Descheduled`, quickly: bound by time, not by
    // the number of polls.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while ring
        .borrow_mut()
        .busy_poll(std::time::Duration::from_secs(1))
        .unwrap()
        != PollEnd::Ready
    {
        assert!(
            std::time::Instant::now() < deadline,
            "a commit did not complete in 30 s"
        );
    }
    let mut net = Vec::new();
    ring.borrow_mut().reap(&mut net);
    assert!(net.is_empty());
    assert!(ring.borrow().disk_completions_pending());
    journal.poll();
    let mut events = Vec::new();
    journal.events_swap(&mut events);
    events.extend(settle(&ring, &mut journal));
    assert_eq!(events, vec![Event::Durable { token: 0 }]);
}

/// A CPU-bound neighbour on the poller's core: the poll gives up within a time slice or two
/// (`PollEnd::Descheduled`), instead of spinning through its whole budget while the neighbour
/// and the poller take turns holding the core.
#[test]
fn busy_poll_ends_descheduled_when_a_neighbour_holds_the_core() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};
    if !uring_available() {
        return;
    }
    let core = core_affinity::CoreId { id: 0 };
    let stop = Arc::new(AtomicBool::new(false));
    let spinning = Arc::new(AtomicBool::new(false));
    let neighbour = {
        let (stop, spinning) = (stop.clone(), spinning.clone());
        std::thread::spawn(move || {
            assert!(
                core_affinity::set_for_current(core),
                "pinning the neighbour"
            );
            spinning.store(true, Ordering::Release);
            while !stop.load(Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        })
    };
    while !spinning.load(Ordering::Acquire) {
        std::thread::yield_now();
    }
    assert!(core_affinity::set_for_current(core), "pinning the poller");
    let mut ring = Ring::new(8).unwrap();
    let started = Instant::now();
    let end = ring.busy_poll(Duration::from_secs(5)).unwrap();
    let elapsed = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    neighbour.join().unwrap();
    assert_eq!(end, PollEnd::Descheduled, "after {elapsed:?}");
    assert!(elapsed < Duration::from_secs(1), "{elapsed:?}");
}

/// A thread can ask for a short scheduler slice and read it back (Linux 6.12+); the setting
/// is per thread, so the test thread's own change does not leak into other tests.
#[test]
fn a_thread_asks_for_a_short_scheduler_slice() {
    let handle = std::thread::spawn(|| {
        crate::uring::thread_slice_set(100_000).expect("sched_setattr");
        crate::uring::thread_slice_ns().expect("sched_getattr")
    });
    let slice_ns = handle.join().unwrap();
    if slice_ns == 0 {
        println!("SKIP: this kernel has no custom scheduler slices (before 6.12)");
        return;
    }
    assert_eq!(slice_ns, 100_000);
}

/// Waits for `count` completions of the disk's submissions, all successful.
fn complete(ring: &Rc<RefCell<Ring>>, disk: &mut UringDisk, count: usize) {
    let mut completions = Vec::new();
    let mut net = Vec::new();
    disk.flush().unwrap();
    while completions.len() < count {
        ring.borrow_mut().submit_and_wait(1).unwrap();
        ring.borrow_mut().reap(&mut net);
        disk.poll(&mut completions);
    }
    assert!(net.is_empty());
    assert_eq!(completions.len(), count);
    assert!(completions.iter().all(|completion| completion.result >= 0));
}

/// An index file goes through the whole life a sealed segment's index will have: created as
/// a temporary, written, synced, published, replaced, found again by a new disk (which deletes
/// leftover temporaries of every kind and nothing else), and removed.
#[test]
fn an_index_file_is_created_published_reopened_and_removed() {
    use crate::disk::{BufferId, WriteSync};
    use crate::ids::{FileId, SegmentId};
    if !uring_available() {
        return;
    }
    let dir = temp_dir("uring-files");
    let index = FileId::Index(SegmentId(7));
    let ring = Rc::new(RefCell::new(Ring::new(16).unwrap()));
    let mut disk = UringDisk::open(ring.clone(), &dir, true).unwrap();
    disk.buffers_allocate(&[8192]);
    let buffer = BufferId(0);
    disk.file_create(index, 8192).unwrap();
    assert!(dir.join("0000000007.index.tmp").exists());
    disk.buffer_mut(buffer).fill(0xAB);
    let sync = WriteSync::LinkedFdatasync;
    disk.submit_write(1, index, 0, buffer, 4096, sync).unwrap();
    complete(&ring, &mut disk, 2);
    disk.buffer_mut(buffer).fill(0xCD);
    disk.write_blocking(index, 4096, buffer, 4096).unwrap();
    disk.sync_blocking(index).unwrap();
    disk.file_publish(index).unwrap();
    assert!(!dir.join("0000000007.index.tmp").exists());
    assert_eq!(
        std::fs::metadata(dir.join("0000000007.index"))
            .unwrap()
            .len(),
        8192
    );
    // The descriptor of the temporary serves the published file.
    disk.submit_read(2, index, 0, buffer, 8192).unwrap();
    complete(&ring, &mut disk, 1);
    assert!(disk.buffer(buffer)[..4096].iter().all(|&byte| byte == 0xAB));
    assert!(disk.buffer(buffer)[4096..].iter().all(|&byte| byte == 0xCD));
    // A second publish replaces the file.
    disk.file_create(index, 4096).unwrap();
    disk.buffer_mut(buffer).fill(0xEF);
    disk.write_blocking(index, 0, buffer, 4096).unwrap();
    disk.sync_blocking(index).unwrap();
    disk.file_publish(index).unwrap();
    drop(disk);
    for leftover in [
        "checkpoint.tmp",
        "0000000009.index.tmp",
        "0000000003.segment.tmp",
    ] {
        std::fs::write(dir.join(leftover), b"torn").unwrap();
    }
    std::fs::write(dir.join("notes.txt"), b"not ours").unwrap();
    let mut disk = UringDisk::open(ring.clone(), &dir, true).unwrap();
    disk.buffers_allocate(&[8192]);
    assert_eq!(disk.files_list().unwrap(), vec![index]);
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["0000000007.index", "notes.txt"]);
    assert_eq!(disk.file_open(index).unwrap(), 4096);
    assert_eq!(disk.read_blocking(index, 0, buffer, 8192).unwrap(), 4096);
    assert!(disk.buffer(buffer)[..4096].iter().all(|&byte| byte == 0xEF));
    disk.file_remove(index).unwrap();
    assert!(!dir.join("0000000007.index").exists());
    assert_eq!(disk.files_list().unwrap(), Vec::<FileId>::new());
    assert!(disk.read_blocking(index, 0, buffer, 4096).is_err());
    assert!(disk.file_remove(index).is_err());
}

/// Submits `ops` and waits for their one completion; returns its result.
fn file_ops(ring: &Rc<RefCell<Ring>>, disk: &mut UringDisk, ops: &[crate::disk::FileOp]) -> i32 {
    use crate::disk::DiskOp;
    disk.submit_file_ops(9, ops).unwrap();
    disk.flush().unwrap();
    let mut completions = Vec::new();
    let mut net = Vec::new();
    while completions.is_empty() {
        ring.borrow_mut().submit_and_wait(1).unwrap();
        ring.borrow_mut().reap(&mut net);
        disk.poll(&mut completions);
    }
    assert_eq!(completions.len(), 1);
    assert_eq!((completions[0].token, completions[0].op), (9, DiskOp::File));
    assert_eq!(disk.in_flight(), 0);
    completions[0].result
}

/// The file steps the running journal uses, through the ring: create (open, then fallocate
/// from the open's completion), publish, recycle, replace, remove, directory fsync; a failed
/// step ends its sequence, and a replace not done leaves the old file readable.
#[test]
fn file_ops_run_in_order_through_the_ring_and_stop_at_a_failure() {
    use crate::disk::{BufferId, FileOp, WriteSync};
    use crate::ids::{FileId, SegmentId};
    if !uring_available() {
        return;
    }
    let dir = temp_dir("uring-file-ops");
    let ring = Rc::new(RefCell::new(Ring::new(16).unwrap()));
    let mut disk = UringDisk::open(ring.clone(), &dir, true).unwrap();
    disk.buffers_allocate(&[4096]);
    let buffer = BufferId(0);
    let (old, new) = (FileId::Segment(SegmentId(3)), FileId::Segment(SegmentId(4)));
    let names = |dir: &std::path::Path| {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    // Create (a stale temporary of the name is started over), write, publish and sync.
    std::fs::write(dir.join("0000000003.segment.tmp"), b"stale").unwrap();
    assert_eq!(
        file_ops(
            &ring,
            &mut disk,
            &[FileOp::Create {
                id: old,
                size: 16384
            }]
        ),
        0
    );
    assert_eq!(
        std::fs::metadata(dir.join("0000000003.segment.tmp"))
            .unwrap()
            .len(),
        16384
    );
    disk.buffer_mut(buffer).fill(0x33);
    disk.submit_write(1, old, 4096, buffer, 4096, WriteSync::Dsync)
        .unwrap();
    complete(&ring, &mut disk, 1);
    let publish = [FileOp::Publish { id: old }, FileOp::SyncDirectory];
    assert_eq!(file_ops(&ring, &mut disk, &publish), 0);
    assert_eq!(names(&dir), ["0000000003.segment"]);
    // Recycle: the published file becomes the next one's temporary, with its descriptor.
    let index = FileId::Index(SegmentId(3));
    let recycle = [
        FileOp::Remove { id: index },
        FileOp::Recycle { from: old, to: new },
        FileOp::SyncDirectory,
    ];
    assert_eq!(
        file_ops(&ring, &mut disk, &recycle),
        0,
        "a missing index counts as removed"
    );
    assert_eq!(names(&dir), ["0000000004.segment.tmp"]);
    disk.submit_read(2, new, 4096, buffer, 4096).unwrap();
    complete(&ring, &mut disk, 1);
    assert!(disk.buffer(buffer).iter().all(|&byte| byte == 0x33));
    assert_eq!(
        file_ops(&ring, &mut disk, &[FileOp::Publish { id: new }]),
        0
    );
    // A replace whose temporary is missing fails, and the file keeps its name and a
    // descriptor; the steps after it are not run.
    let copy = FileId::SegmentCompacted(SegmentId(4));
    let replace = FileOp::Replace {
        from: copy,
        to: new,
        keep: false,
    };
    let failed = file_ops(&ring, &mut disk, &[replace, FileOp::Remove { id: new }]);
    assert_eq!(failed, -libc::ENOENT);
    assert_eq!(names(&dir), ["0000000004.segment"]);
    disk.submit_read(3, new, 4096, buffer, 4096).unwrap();
    complete(&ring, &mut disk, 1);
    assert!(disk.buffer(buffer).iter().all(|&byte| byte == 0x33));
    // A replace that runs: the copy takes the name, and the name's descriptor reads the copy.
    assert_eq!(
        file_ops(
            &ring,
            &mut disk,
            &[FileOp::Create {
                id: copy,
                size: 8192
            }]
        ),
        0
    );
    disk.buffer_mut(buffer).fill(0x44);
    disk.submit_write(4, copy, 4096, buffer, 4096, WriteSync::Dsync)
        .unwrap();
    complete(&ring, &mut disk, 1);
    assert_eq!(
        file_ops(&ring, &mut disk, &[replace, FileOp::SyncDirectory]),
        0
    );
    assert_eq!(names(&dir), ["0000000004.segment"]);
    assert_eq!(
        std::fs::metadata(dir.join("0000000004.segment"))
            .unwrap()
            .len(),
        8192
    );
    disk.submit_read(5, new, 4096, buffer, 4096).unwrap();
    complete(&ring, &mut disk, 1);
    assert!(disk.buffer(buffer).iter().all(|&byte| byte == 0x44));
    // A replace that keeps the old file: the names are exchanged (RENAME_EXCHANGE), the
    // name's descriptor reads the copy, and the old file rests under the copy's temporary
    // name, whole, until it is recycled into the next segment or removed.
    assert_eq!(
        file_ops(
            &ring,
            &mut disk,
            &[FileOp::Create {
                id: copy,
                size: 4096 * 3
            }]
        ),
        0
    );
    disk.buffer_mut(buffer).fill(0x55);
    disk.submit_write(6, copy, 4096, buffer, 4096, WriteSync::Dsync)
        .unwrap();
    complete(&ring, &mut disk, 1);
    let keep = FileOp::Replace {
        from: copy,
        to: new,
        keep: true,
    };
    assert_eq!(
        file_ops(&ring, &mut disk, &[keep, FileOp::SyncDirectory]),
        0
    );
    assert_eq!(
        names(&dir),
        ["0000000004.segment", "0000000004.segment.compacted.tmp"]
    );
    let kept = dir.join("0000000004.segment.compacted.tmp");
    assert_eq!(std::fs::metadata(&kept).unwrap().len(), 8192);
    disk.submit_read(7, new, 4096, buffer, 4096).unwrap();
    complete(&ring, &mut disk, 1);
    assert!(disk.buffer(buffer).iter().all(|&byte| byte == 0x55));
    let next = FileId::Segment(SegmentId(5));
    let recycle_kept = [
        FileOp::Recycle {
            from: copy,
            to: next,
        },
        FileOp::SyncDirectory,
    ];
    assert_eq!(file_ops(&ring, &mut disk, &recycle_kept), 0);
    assert_eq!(
        names(&dir),
        ["0000000004.segment", "0000000005.segment.tmp"]
    );
    assert_eq!(
        std::fs::read(dir.join("0000000005.segment.tmp")).unwrap()[4096..8192],
        [0x44; 4096],
        "the kept file is the old one"
    );
    // It had no descriptor (the replace closed the old one's): the recycle opened one.
    disk.buffer_mut(buffer).fill(0x66);
    disk.submit_write(8, next, 0, buffer, 4096, WriteSync::Dsync)
        .unwrap();
    complete(&ring, &mut disk, 1);
    assert_eq!(
        std::fs::read(dir.join("0000000005.segment.tmp")).unwrap()[..4096],
        [0x66; 4096]
    );
    // A kept file is removed under the name it rests under.
    std::fs::write(&kept, b"old").unwrap();
    assert_eq!(
        file_ops(&ring, &mut disk, &[FileOp::Remove { id: copy }]),
        0
    );
    assert!(!kept.exists());
    disk.file_discard(next);
    // Remove, twice: gone is gone.
    let remove = [FileOp::Remove { id: new }, FileOp::SyncDirectory];
    assert_eq!(file_ops(&ring, &mut disk, &remove), 0);
    assert_eq!(file_ops(&ring, &mut disk, &remove), 0);
    assert!(names(&dir).is_empty());
    // A create that cannot be allocated fails and leaves no temporary.
    let huge = FileOp::Create {
        id: old,
        size: 1 << 62,
    };
    assert!(file_ops(&ring, &mut disk, &[huge]) < 0);
    assert!(names(&dir).is_empty());
}

#[test]
fn space_free_is_the_file_systems_and_a_reserve_past_it_makes_the_journal_read_only() {
    if !uring_available() {
        return;
    }
    let dir = temp_dir("space-free");
    let config = Config {
        segment_size: 1 << 20,
        ..Config::default()
    };
    let (_ring, mut journal) = open(&dir, config.clone());
    let free = journal.disk_mut().space_free().unwrap();
    let space = crate::uring::disk_space(&dir).unwrap();
    assert!(free > 0, "the test directory's file system is full");
    assert!(free <= space.total_bytes);
    drop(journal);
    let _ = std::fs::remove_dir_all(&dir);
    // A reserve larger than the free space: a new journal opens (it creates its first
    // segment regardless), creates no spare and turns read-only at its first submit.
    let reserve = free + (1 << 30);
    if reserve > crate::constants::DISK_RESERVE_MAX {
        println!("SKIP: {free} bytes free, more than the largest reserve");
        return;
    }
    let config = Config {
        disk_reserve: reserve,
        ..config
    };
    let (ring, mut journal) = open(&dir, config);
    settle(&ring, &mut journal);
    assert!(journal.is_read_only());
    let options = AddOptions::default();
    let refused = journal.add(1, LedgerId(1), EntryId(0), &KEY, &body(1, 0, 10), options);
    assert_eq!(refused, Err(crate::error::AddError::ReadOnly));
    let _ = std::fs::remove_dir_all(&dir);
}
