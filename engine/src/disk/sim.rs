//! Simulated disk: memory-backed, deterministic for a seed, with faults.
//!
//! Each file has a `live` image (what reads see: the page cache and device cache) and a
//! `durable` image (what survives power loss). Writes reach `live` when they complete and
//! `durable` only through a sync that covers them. Directory entries (create, rename, remove)
//! are durable only after a directory sync (`file_publish`, `file_remove`). `crash` drops
//! everything not durable, except that writes not yet synced may land partially (torn, at
//! 512-byte sector granularity or inside a sector). Every kind of file (`FileId`) behaves alike.
//!
//! This file holds the disk's state (files, directory entries, operations pending, fault
//! rates) and what tests read or set of it. `sim/operations.rs` is the `Disk` trait on it:
//! each submission becomes a pending operation; `sim/complete.rs` completes them, with the
//! faults drawn then; `sim/file_ops.rs` runs the directory's operations (create, publish,
//! replace, recycle, remove, sync); `sim/crash.rs` is power loss.

mod complete;
mod crash;
mod file_ops;
mod operations;

use super::{BufferId, DiskToken, FileOp, WriteSync};
use crate::ids::{FileId, SegmentId};
use std::collections::BTreeMap;
use std::io;

const ERRNO_ENOENT: i32 = 2;
const ERRNO_EIO: i32 = 5;
const ERRNO_ENOSPC: i32 = 28;
const ERRNO_ECANCELED: i32 = 125;
const TEAR_UNIT: usize = 512;

/// Deterministic xorshift64* generator: the only randomness in simulations.
#[derive(Clone, Debug)]
pub struct SimRng(u64);

impl SimRng {
    /// A generator for `seed` (any value, zero included).
    #[must_use]
    pub fn new(seed: u64) -> SimRng {
        SimRng(seed ^ 0x9E37_79B9_7F4A_7C15 | 1)
    }
    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in `0..bound` (`bound` > 0).
    pub fn below(&mut self, bound: u64) -> u64 {
        assert!(bound > 0);
        self.next_u64() % bound
    }
    /// True with probability `numerator / 1_000_000`.
    pub fn chance(&mut self, per_million: u32) -> bool {
        self.below(1_000_000) < u64::from(per_million)
    }
}

/// Fault rates in parts per million per operation, and capacity.
#[derive(Clone, Debug, Default)]
pub struct SimFaults {
    /// A write completes with -EIO (its linked sync with -ECANCELED).
    pub write_error_ppm: u32,
    /// A write completes short (half its sectors); its linked sync gets -ECANCELED.
    pub write_short_ppm: u32,
    /// An fdatasync fails with -EIO and the unsynced data is dropped (fsyncgate).
    pub sync_error_ppm: u32,
    /// A read fails with -EIO.
    pub read_error_ppm: u32,
    /// A read returns one flipped bit.
    pub read_corrupt_ppm: u32,
    /// A step of `submit_file_ops` (other than a directory fsync, which `sync_error_ppm`
    /// fails) fails with -EIO, after the steps before it were done.
    pub file_op_error_ppm: u32,
    /// The next `FileOp::Replace` onto this file fails with -EIO (then this is cleared): a
    /// targeted failure for one step, where `file_op_error_ppm` fails steps at random.
    pub replace_onto_fails_once: Option<FileId>,
    /// Most segment files (published or temporary) that may exist; creating more fails with
    /// ENOSPC. Index and checkpoint files neither count nor fail.
    pub segments_max: Option<usize>,
    /// Creating an index or checkpoint file fails with ENOSPC (a disk full while sealing).
    pub seal_files_full: bool,
    /// Bytes the simulated file system holds: creating a file of any kind that would take the
    /// listed files (temporaries included) past it fails with ENOSPC, and `space_free` says
    /// what is left. `None`: no limit, and `space_free` reports `u64::MAX`.
    pub capacity: Option<u64>,
}

#[derive(Clone, Debug, Default)]
struct SimFile {
    live: Vec<u8>,
    durable: Vec<u8>,
    /// Completed writes not yet covered by a sync: (completion number, position, bytes).
    unsynced: Vec<(u64, u64, Vec<u8>)>,
}

/// A directory entry: which file, under its temporary or its published name. Typed rather
/// than spelled: names are `file_name.rs`'s job, and the simulator needs only their identity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Entry {
    id: FileId,
    temporary: bool,
}

impl Entry {
    fn published(id: FileId) -> Entry {
        Entry {
            id,
            temporary: false,
        }
    }
    fn temporary(id: FileId) -> Entry {
        Entry {
            id,
            temporary: true,
        }
    }
    /// Where `id` rests between file operations (`file_name::resting_file_name`).
    fn resting(id: FileId) -> Entry {
        match id {
            FileId::SegmentCompacted(_) | FileId::IndexCompacted(_) => Entry::temporary(id),
            FileId::Segment(_) | FileId::Index(_) | FileId::Checkpoint => Entry::published(id),
        }
    }
}

#[derive(Clone, Debug)]
enum PendingKind {
    Write {
        data: Vec<u8>,
        sync: WriteSync,
    },
    LinkedSync,
    Sync,
    Read {
        buffer: BufferId,
        length: usize,
    },
    /// `submit_file_ops`: done in order when it completes (a crash before that does a random
    /// prefix of them).
    FileOps(Vec<FileOp>),
    /// A directory fsync: the directory as it was at submission (at `clock`) becomes
    /// durable, unless a later state is durable already.
    DirectorySync {
        directory: BTreeMap<Entry, usize>,
        clock: u64,
    },
}

#[derive(Clone, Debug)]
struct Pending {
    token: DiskToken,
    file: usize,
    position: u64,
    kind: PendingKind,
    /// Buffer held busy until this completes.
    holds: Option<BufferId>,
    /// For syncs: completed writes numbered at or below this are covered.
    covers_up_to: u64,
}

/// The simulated disk. See the module docs.
#[derive(Debug)]
pub struct SimDisk {
    files: Vec<SimFile>,
    /// Directory entries -> index into `files`; a replaced or removed file stays in `files`.
    directory_live: BTreeMap<Entry, usize>,
    directory_durable: BTreeMap<Entry, usize>,
    /// A clock of directory syncs: each sync (blocking, or an asynchronous one when it is
    /// submitted) takes the next value, and the durable directory records the value of the
    /// state it holds. An asynchronous sync that completes after a later one (blocking or
    /// not) made a newer state durable never rolls the durable directory back, and one that
    /// completes first never keeps a newer one from being applied.
    directory_clock: u64,
    directory_durable_clock: u64,
    /// Open descriptors: which file each id addresses.
    open: BTreeMap<FileId, usize>,
    buffers: Vec<Vec<u8>>,
    buffers_busy: Vec<u32>,
    queued: Vec<Pending>,
    pending: Vec<Pending>,
    write_completions: u64,
    rng: SimRng,
    /// Fault rates; tests may change them at any time.
    pub faults: SimFaults,
}

impl SimDisk {
    /// An empty disk whose faults and completion order are drawn from `seed`.
    #[must_use]
    pub fn new(seed: u64) -> SimDisk {
        SimDisk {
            files: Vec::new(),
            directory_live: BTreeMap::new(),
            directory_durable: BTreeMap::new(),
            directory_clock: 0,
            directory_durable_clock: 0,
            open: BTreeMap::new(),
            buffers: Vec::new(),
            buffers_busy: Vec::new(),
            queued: Vec::new(),
            pending: Vec::new(),
            write_completions: 0,
            rng: SimRng::new(seed),
            faults: SimFaults::default(),
        }
    }

    /// Adds a published, durable file holding exactly `bytes`, replacing one of that name
    /// (fuzzing and tests on arbitrary disk contents).
    pub fn insert_file(&mut self, id: FileId, bytes: Vec<u8>) {
        let file = SimFile {
            live: bytes.clone(),
            durable: bytes,
            unsynced: Vec::new(),
        };
        self.files.push(file);
        let index = self.files.len() - 1;
        self.directory_live.insert(Entry::published(id), index);
        self.directory_durable.insert(Entry::published(id), index);
    }

    /// Adds a published, durable segment holding exactly `bytes` (fuzzing and tests of
    /// recovery on arbitrary disk contents).
    pub fn insert_segment(&mut self, id: SegmentId, bytes: Vec<u8>) {
        self.insert_file(FileId::Segment(id), bytes);
    }

    /// Temporary files in the live directory (for tests of what failures leave behind).
    #[must_use]
    pub fn temporaries(&self) -> usize {
        self.directory_live
            .keys()
            .filter(|entry| entry.temporary)
            .count()
    }

    /// The durable bytes of a published file (for tests that inspect or corrupt the disk).
    pub fn durable_file_mut(&mut self, id: FileId) -> Option<&mut Vec<u8>> {
        let index = *self.directory_durable.get(&Entry::published(id))?;
        let file = self.files.get_mut(index)?;
        Some(&mut file.durable)
    }

    /// The durable bytes of a published segment (for tests that inspect or corrupt the disk).
    pub fn durable_image_mut(&mut self, id: SegmentId) -> Option<&mut Vec<u8>> {
        self.durable_file_mut(FileId::Segment(id))
    }

    /// Makes the live image equal the durable one for every file (after offline corruption).
    pub fn reload_live_from_durable(&mut self) {
        for file in &mut self.files {
            file.live = file.durable.clone();
        }
    }

    /// Number of operations submitted and not completed.
    #[must_use]
    pub fn pending_count(&self) -> usize {
        self.queued.len() + self.pending.len()
    }

    /// Bytes of the files the directory lists, temporaries included: what counts against
    /// `faults.capacity` (tests size a capacity from it).
    #[must_use]
    pub fn space_used(&self) -> u64 {
        let sizes = self.directory_live.values();
        sizes
            .map(|&index| crate::stdx::to_u64(self.files[index].live.len()))
            .sum()
    }

    fn file_index(&self, id: FileId) -> io::Result<usize> {
        self.open
            .get(&id)
            .copied()
            .ok_or_else(|| io::Error::from_raw_os_error(9))
    }

    fn busy_hold(&mut self, buffer: BufferId) {
        self.buffers_busy[buffer.0 as usize] += 1;
    }
}
