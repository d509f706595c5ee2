//! Simulated disk: memory-backed, deterministic for a seed, with faults.
//!
//! Each file has a `live` image (what reads see: the page cache and device cache) and a
//! `durable` image (what survives power loss). Writes reach `live` when they complete and
//! `durable` only through a sync that covers them. Directory entries (create, rename, remove)
//! are durable only after a directory sync (`file_publish`, `file_remove`). `crash` drops
//! everything not durable, except that writes not yet synced may land partially (torn, at
//! 512-byte sector granularity or inside a sector). Every kind of file (`FileId`) behaves alike.

use super::{BufferId, Disk, DiskCompletion, DiskOp, DiskToken, FileOp, SubmitError, WriteSync};
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

    /// Power loss: returns the disk as it comes back. Unsynced writes (completed or in flight)
    /// land in full, not at all, or torn, at the simulator's choice; un-synced directory
    /// entries vanish.
    #[must_use]
    pub fn crash(mut self) -> SimDisk {
        let mut in_flight: Vec<(usize, u64, Vec<u8>)> = Vec::new();
        let mut file_ops = Vec::new();
        for pending in self.queued.drain(..).chain(self.pending.drain(..)) {
            match pending.kind {
                PendingKind::Write { data, .. } => {
                    in_flight.push((pending.file, pending.position, data));
                }
                PendingKind::FileOps(ops) => file_ops.push(ops),
                _ => {}
            }
        }
        // The kernel may have done any prefix of a sequence in flight: a directory fsync in
        // that prefix makes what came before it durable.
        for ops in file_ops {
            let done = crate::stdx::to_usize(self.rng.below(crate::stdx::to_u64(ops.len() + 1)));
            for &op in &ops[..done] {
                if self.file_step(op).is_err() {
                    break;
                }
            }
        }
        let mut files = std::mem::take(&mut self.files);
        for (index, file) in files.iter_mut().enumerate() {
            let unsynced = std::mem::take(&mut file.unsynced);
            let writes = unsynced
                .into_iter()
                .map(|(_, position, data)| (position, data));
            let extra = in_flight.iter().filter(|(f, _, _)| *f == index);
            let extra = extra.map(|(_, position, data)| (*position, data.clone()));
            for (position, data) in writes.chain(extra) {
                tear_into(&mut self.rng, &mut file.durable, position, &data);
            }
            file.live = file.durable.clone();
        }
        let mut disk = SimDisk::new(self.rng.next_u64());
        disk.files = files;
        disk.directory_live = self.directory_durable.clone();
        disk.directory_durable = self.directory_durable;
        disk.faults = self.faults;
        disk
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

    fn complete_one(&mut self, index: usize, out: &mut Vec<DiskCompletion>) {
        let mut pending = self.pending.swap_remove(index);
        if let Some(buffer) = pending.holds {
            self.buffers_busy[buffer.0 as usize] -= 1;
        }
        let kind = std::mem::replace(&mut pending.kind, PendingKind::Sync);
        let (op, result) = match kind {
            PendingKind::Write { data, sync } => self.complete_write(&pending, data, sync),
            PendingKind::LinkedSync | PendingKind::Sync => self.complete_sync(&pending),
            PendingKind::DirectorySync { directory, clock } => {
                self.complete_directory_sync(directory, clock)
            }
            PendingKind::FileOps(ops) => (DiskOp::File, self.complete_file_ops(&ops)),
            PendingKind::Read { buffer, length } => {
                (DiskOp::Read, self.complete_read(&pending, buffer, length))
            }
        };
        out.push(DiskCompletion {
            token: pending.token,
            op,
            result,
        });
    }

    fn complete_write(
        &mut self,
        pending: &Pending,
        data: Vec<u8>,
        sync: WriteSync,
    ) -> (DiskOp, i32) {
        let linked = sync == WriteSync::LinkedFdatasync;
        let mut length = data.len();
        let mut failed = self.rng.chance(self.faults.write_error_ppm);
        if !failed && self.rng.chance(self.faults.write_short_ppm) && length > TEAR_UNIT {
            length = (length / 2) / TEAR_UNIT * TEAR_UNIT;
        }
        let file = &mut self.files[pending.file];
        let end = crate::stdx::to_usize(pending.position) + length;
        if end > file.live.len() {
            failed = true;
        }
        if failed {
            self.cancel_linked(pending.token, linked);
            return (DiskOp::Write, -ERRNO_EIO);
        }
        let start = crate::stdx::to_usize(pending.position);
        file.live[start..end].copy_from_slice(&data[..length]);
        self.write_completions += 1;
        if sync == WriteSync::Dsync {
            apply(
                &mut file.durable,
                file.live.len(),
                pending.position,
                &data[..length],
            );
            // Older unsynced writes must not land over this newer durable data later.
            supersede(&mut file.unsynced, pending.position, &data[..length]);
        } else {
            file.unsynced.push((
                self.write_completions,
                pending.position,
                data[..length].to_vec(),
            ));
        }
        if length < data.len() {
            self.cancel_linked(pending.token, linked);
        } else if linked {
            self.release_linked(pending.token);
        }
        (
            DiskOp::Write,
            i32::try_from(length).expect("sim writes are small"),
        )
    }

    fn cancel_linked(&mut self, token: DiskToken, linked: bool) {
        if !linked {
            return;
        }
        let index = self.queued.iter().position(|p| p.token == token);
        let index = index.expect("a linked write has its sync queued behind it");
        let mut sync = self.queued.remove(index);
        sync.kind = PendingKind::Sync;
        sync.covers_up_to = u64::MAX;
        // Marked by an impossible position so completion reports ECANCELED.
        sync.position = u64::MAX;
        self.pending.push(sync);
    }

    fn release_linked(&mut self, token: DiskToken) {
        let index = self.queued.iter().position(|p| p.token == token);
        let index = index.expect("a linked write has its sync queued behind it");
        let mut sync = self.queued.remove(index);
        sync.covers_up_to = self.write_completions;
        self.pending.push(sync);
    }

    /// Does `ops` in order: 0, or the first failure's `-errno`.
    fn complete_file_ops(&mut self, ops: &[FileOp]) -> i32 {
        for (done, &op) in ops.iter().enumerate() {
            let fault = !matches!(op, FileOp::SyncDirectory)
                && self.rng.chance(self.faults.file_op_error_ppm);
            let result = if fault {
                Err(ERRNO_EIO)
            } else {
                self.file_step(op)
            };
            if let Err(errno) = result {
                // A replace not done leaves the old file under its name: its descriptor,
                // closed at submission, is opened again.
                for &later in &ops[done..] {
                    let FileOp::Replace { to, .. } = later else {
                        continue;
                    };
                    if let Some(&old) = self.directory_live.get(&Entry::published(to)) {
                        self.open.entry(to).or_insert(old);
                    }
                }
                return -errno;
            }
        }
        0
    }

    /// One step of a file-ops sequence, as the blocking calls do it.
    fn file_step(&mut self, op: FileOp) -> Result<(), i32> {
        let errno = |error: io::Error| error.raw_os_error().unwrap_or(ERRNO_EIO);
        match op {
            FileOp::Create { id, size } => self.file_create(id, size).map_err(errno),
            FileOp::Publish { id } => self.rename_published(id).map_err(errno),
            FileOp::Replace { from, to, keep } => {
                let Some(index) = self.directory_live.remove(&Entry::temporary(from)) else {
                    return Err(ERRNO_ENOENT);
                };
                let old = self.directory_live.insert(Entry::published(to), index);
                if keep {
                    // RENAME_EXCHANGE: both names must exist, and swap files atomically.
                    let Some(old) = old else {
                        self.directory_live.remove(&Entry::published(to));
                        self.directory_live.insert(Entry::temporary(from), index);
                        return Err(ERRNO_ENOENT);
                    };
                    self.directory_live.insert(Entry::temporary(from), old);
                }
                self.open.remove(&from);
                self.open.insert(to, index);
                Ok(())
            }
            FileOp::Recycle { from, to } => self.rename_recycled(from, to).map_err(errno),
            FileOp::Remove { id } => {
                // Already gone counts as removed.
                self.directory_live.remove(&Entry::resting(id));
                Ok(())
            }
            FileOp::SyncDirectory => {
                if self.rng.chance(self.faults.sync_error_ppm) {
                    return Err(ERRNO_EIO);
                }
                self.directory_sync_blocking();
                Ok(())
            }
        }
    }

    /// Renames the temporary of `id` to its published name (a `FileOp::Publish`).
    fn rename_published(&mut self, id: FileId) -> io::Result<()> {
        let index = self
            .directory_live
            .remove(&Entry::temporary(id))
            .ok_or(io::ErrorKind::NotFound)?;
        self.directory_live.insert(Entry::published(id), index);
        Ok(())
    }

    /// Renames `from` (where it rests) to the temporary of `to` (a `FileOp::Recycle`).
    fn rename_recycled(&mut self, from: FileId, to: FileId) -> io::Result<()> {
        let index = self
            .directory_live
            .remove(&Entry::resting(from))
            .ok_or(io::ErrorKind::NotFound)?;
        // rename(2) replaces a stale temporary of that name; the directory is not synced.
        self.directory_live.insert(Entry::temporary(to), index);
        self.open.remove(&from);
        self.open.insert(to, index);
        Ok(())
    }

    /// A blocking directory sync: everything done to the directory so far is durable.
    fn directory_sync_blocking(&mut self) {
        self.directory_clock += 1;
        self.directory_durable = self.directory_live.clone();
        self.directory_durable_clock = self.directory_clock;
    }

    fn complete_directory_sync(
        &mut self,
        directory: BTreeMap<Entry, usize>,
        clock: u64,
    ) -> (DiskOp, i32) {
        if self.rng.chance(self.faults.sync_error_ppm) {
            return (DiskOp::Sync, -ERRNO_EIO);
        }
        if clock > self.directory_durable_clock {
            self.directory_durable = directory;
            self.directory_durable_clock = clock;
        }
        (DiskOp::Sync, 0)
    }

    fn complete_sync(&mut self, pending: &Pending) -> (DiskOp, i32) {
        if pending.position == u64::MAX {
            return (DiskOp::Sync, -ERRNO_ECANCELED);
        }
        let file = &mut self.files[pending.file];
        if self.rng.chance(self.faults.sync_error_ppm) {
            // fsyncgate: the kernel marks the pages clean; the data never becomes durable.
            file.unsynced.clear();
            return (DiskOp::Sync, -ERRNO_EIO);
        }
        let size = file.live.len();
        let (covered, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut file.unsynced)
            .into_iter()
            .partition(|(number, _, _)| *number <= pending.covers_up_to);
        for (_, position, data) in covered {
            apply(&mut file.durable, size, position, &data);
        }
        file.unsynced = kept;
        file.durable.resize(size, 0);
        (DiskOp::Sync, 0)
    }

    fn complete_read(&mut self, pending: &Pending, buffer: BufferId, length: usize) -> i32 {
        if self.rng.chance(self.faults.read_error_ppm) {
            return -ERRNO_EIO;
        }
        let live = &self.files[pending.file].live;
        let start = crate::stdx::to_usize(pending.position).min(live.len());
        let end = (start + length).min(live.len());
        let target = &mut self.buffers[buffer.0 as usize][..end - start];
        target.copy_from_slice(&live[start..end]);
        if self.rng.chance(self.faults.read_corrupt_ppm) && end > start {
            let bit = self.rng.below(crate::stdx::to_u64((end - start) * 8));
            let bit = crate::stdx::to_usize(bit);
            target[bit / 8] ^= 1 << (bit % 8);
        }
        i32::try_from(end - start).expect("sim reads are small")
    }
}

/// Copies `data` over the overlapping part of every older unsynced write, so that whatever of
/// them lands later carries the newest bytes, as the page cache would.
fn supersede(unsynced: &mut [(u64, u64, Vec<u8>)], position: u64, data: &[u8]) {
    let new_start = crate::stdx::to_usize(position);
    let new_end = new_start + data.len();
    for (_, old_position, old) in unsynced.iter_mut() {
        let old_start = crate::stdx::to_usize(*old_position);
        let start = old_start.max(new_start);
        let end = (old_start + old.len()).min(new_end);
        if start < end {
            old[start - old_start..end - old_start]
                .copy_from_slice(&data[start - new_start..end - new_start]);
        }
    }
}

fn apply(image: &mut Vec<u8>, size: usize, position: u64, data: &[u8]) {
    if image.len() < size {
        image.resize(size, 0);
    }
    let start = crate::stdx::to_usize(position);
    image[start..start + data.len()].copy_from_slice(data);
}

/// Lands all, none, a prefix, or a random subset of the 512-byte units of a write, sometimes
/// cutting the last landed unit mid-way: no sector atomicity is assumed.
fn tear_into(rng: &mut SimRng, image: &mut Vec<u8>, position: u64, data: &[u8]) {
    let units = data.len().div_ceil(TEAR_UNIT);
    let mode = rng.below(4);
    let prefix = crate::stdx::to_usize(rng.below(crate::stdx::to_u64(units) + 1));
    let start = crate::stdx::to_usize(position);
    if image.len() < start + data.len() {
        image.resize(start + data.len(), 0);
    }
    for unit in 0..units {
        let lands = match mode {
            0 => true,
            1 => false,
            2 => unit < prefix,
            _ => rng.below(2) == 0,
        };
        if !lands {
            continue;
        }
        let from = unit * TEAR_UNIT;
        let mut to = (from + TEAR_UNIT).min(data.len());
        if mode == 2 && unit + 1 == prefix && rng.below(4) == 0 {
            to = from + crate::stdx::to_usize(rng.below(crate::stdx::to_u64(to - from)));
        }
        image[start + from..start + to].copy_from_slice(&data[from..to]);
    }
}

impl Disk for SimDisk {
    fn buffers_allocate(&mut self, sizes: &[usize]) {
        assert!(self.buffers.is_empty(), "buffers are allocated once");
        self.buffers = sizes.iter().map(|&size| vec![0u8; size]).collect();
        self.buffers_busy = vec![0; sizes.len()];
    }

    fn buffer(&self, id: BufferId) -> &[u8] {
        &self.buffers[id.0 as usize]
    }

    fn buffer_mut(&mut self, id: BufferId) -> &mut [u8] {
        assert_eq!(
            self.buffers_busy[id.0 as usize], 0,
            "buffer {id:?} is in flight"
        );
        &mut self.buffers[id.0 as usize]
    }

    fn buffer_copy(
        &mut self,
        from: BufferId,
        range: std::ops::Range<usize>,
        to: BufferId,
        offset: usize,
    ) {
        let (from, to) = (from.0 as usize, to.0 as usize);
        assert_eq!(self.buffers_busy[to], 0, "buffer {to} is in flight");
        let length = range.len();
        let (source, target) = crate::disk::pair_mut(&mut self.buffers, from, to);
        target[offset..offset + length].copy_from_slice(&source[range]);
    }

    fn files_list(&mut self) -> io::Result<Vec<FileId>> {
        let temporaries: Vec<Entry> = self
            .directory_live
            .keys()
            .filter(|entry| entry.temporary)
            .copied()
            .collect();
        if !temporaries.is_empty() {
            for entry in &temporaries {
                self.directory_live.remove(entry);
            }
            // The removals are synced with the directory, like UringDisk's.
            self.directory_sync_blocking();
        }
        let files: Vec<FileId> = self.directory_live.keys().map(|entry| entry.id).collect();
        assert!(files.windows(2).all(|pair| pair[0] < pair[1]));
        Ok(files)
    }

    fn file_open(&mut self, id: FileId) -> io::Result<u64> {
        let index = *self
            .directory_live
            .get(&Entry::published(id))
            .ok_or(io::ErrorKind::NotFound)?;
        self.open.insert(id, index);
        Ok(crate::stdx::to_u64(self.files[index].live.len()))
    }

    fn file_create(&mut self, id: FileId, size: u64) -> io::Result<()> {
        if self.faults.seal_files_full && !matches!(id, FileId::Segment(_)) {
            return Err(io::Error::from_raw_os_error(ERRNO_ENOSPC));
        }
        if let (Some(max), FileId::Segment(_)) = (self.faults.segments_max, id) {
            let segments = self.directory_live.keys();
            let segments = segments.filter(|entry| matches!(entry.id, FileId::Segment(_)));
            // A stale temporary of the same name is replaced, so it does not count.
            let stale = self.directory_live.contains_key(&Entry::temporary(id));
            if segments.count() - usize::from(stale) >= max {
                return Err(io::Error::from_raw_os_error(ERRNO_ENOSPC));
            }
        }
        if let Some(capacity) = self.faults.capacity {
            // A stale temporary of the same name is replaced: its bytes are given back first.
            let stale = self.directory_live.get(&Entry::temporary(id));
            let stale = stale.map_or(0, |&index| {
                crate::stdx::to_u64(self.files[index].live.len())
            });
            if self.space_used() - stale + size > capacity {
                return Err(io::Error::from_raw_os_error(ERRNO_ENOSPC));
            }
        }
        let live = vec![0u8; crate::stdx::to_usize(size)];
        self.files.push(SimFile {
            live,
            durable: Vec::new(),
            unsynced: Vec::new(),
        });
        let index = self.files.len() - 1;
        // A stale temporary is unlinked and a new file created: the old entry is replaced.
        self.directory_live.insert(Entry::temporary(id), index);
        self.open.insert(id, index);
        assert_eq!(self.open.get(&id), Some(&index));
        Ok(())
    }

    fn file_publish(&mut self, id: FileId) -> io::Result<()> {
        let index = self
            .directory_live
            .remove(&Entry::temporary(id))
            .ok_or(io::ErrorKind::NotFound)?;
        // rename(2) replaces an existing published file of that name atomically.
        self.directory_live.insert(Entry::published(id), index);
        self.directory_sync_blocking();
        Ok(())
    }

    fn submit_file_ops(&mut self, token: DiskToken, ops: &[FileOp]) -> Result<(), SubmitError> {
        assert!(!ops.is_empty() && ops.len() <= crate::constants::FILE_OPS_MAX);
        let running = self.pending.iter();
        let running = running.filter(|pending| matches!(pending.kind, PendingKind::FileOps(_)));
        assert!(running.count() < crate::constants::FILE_OPS_IN_FLIGHT_MAX);
        // Descriptors are closed at submission, as UringDisk's are.
        for op in ops {
            match *op {
                FileOp::Create { id, .. }
                | FileOp::Remove { id }
                | FileOp::Replace { to: id, .. } => {
                    self.open.remove(&id);
                }
                FileOp::Publish { .. } | FileOp::Recycle { .. } | FileOp::SyncDirectory => {}
            }
        }
        self.pending.push(Pending {
            token,
            file: usize::MAX,
            position: 0,
            kind: PendingKind::FileOps(ops.to_vec()),
            holds: None,
            covers_up_to: 0,
        });
        Ok(())
    }

    fn submit_sync_directory(&mut self, token: DiskToken) -> Result<(), SubmitError> {
        self.directory_clock += 1;
        let kind = PendingKind::DirectorySync {
            directory: self.directory_live.clone(),
            clock: self.directory_clock,
        };
        self.pending.push(Pending {
            token,
            file: usize::MAX,
            position: 0,
            kind,
            holds: None,
            covers_up_to: self.write_completions,
        });
        Ok(())
    }

    fn file_discard(&mut self, id: FileId) {
        self.open.remove(&id);
        // Unlinked without a directory sync, like UringDisk's: a crash may bring the
        // temporary back, and the next open deletes it.
        self.directory_live.remove(&Entry::temporary(id));
    }

    fn file_remove(&mut self, id: FileId) -> io::Result<()> {
        self.open.remove(&id);
        self.directory_live
            .remove(&Entry::published(id))
            .ok_or(io::ErrorKind::NotFound)?;
        self.directory_sync_blocking();
        assert!(!self.directory_durable.contains_key(&Entry::published(id)));
        Ok(())
    }

    fn file_close(&mut self, id: FileId) {
        self.open.remove(&id);
    }

    fn read_blocking(
        &mut self,
        id: FileId,
        position: u64,
        buffer: BufferId,
        length: usize,
    ) -> io::Result<usize> {
        let live = &self.files[self.file_index(id)?].live;
        let start = crate::stdx::to_usize(position).min(live.len());
        let end = (start + length).min(live.len());
        self.buffers[buffer.0 as usize][..end - start].copy_from_slice(&live[start..end]);
        Ok(end - start)
    }

    fn write_blocking(
        &mut self,
        id: FileId,
        position: u64,
        buffer: BufferId,
        length: usize,
    ) -> io::Result<()> {
        let index = self.file_index(id)?;
        let data = self.buffers[buffer.0 as usize][..length].to_vec();
        let file = &mut self.files[index];
        let start = crate::stdx::to_usize(position);
        if start + length > file.live.len() {
            return Err(io::Error::from_raw_os_error(ERRNO_ENOSPC));
        }
        file.live[start..start + length].copy_from_slice(&data);
        self.write_completions += 1;
        file.unsynced.push((self.write_completions, position, data));
        Ok(())
    }

    fn sync_blocking(&mut self, id: FileId) -> io::Result<()> {
        let index = self.file_index(id)?;
        let pending = Pending {
            token: 0,
            file: index,
            position: 0,
            kind: PendingKind::Sync,
            holds: None,
            covers_up_to: self.write_completions,
        };
        match self.complete_sync(&pending) {
            (_, 0) => Ok(()),
            (_, errno) => Err(io::Error::from_raw_os_error(-errno)),
        }
    }

    fn submit_write_range(
        &mut self,
        token: DiskToken,
        id: FileId,
        position: u64,
        buffer: BufferId,
        range: std::ops::Range<usize>,
        sync: WriteSync,
    ) -> Result<(), SubmitError> {
        assert_eq!(
            range.start % crate::constants::SECTOR_SIZE,
            0,
            "O_DIRECT writes start on a sector"
        );
        // The quiet variant differs only in how many completions the kernel posts; the
        // journal handles both orders, so the simulator posts both.
        let sync = match sync {
            WriteSync::LinkedFdatasyncQuiet => WriteSync::LinkedFdatasync,
            other => other,
        };
        let file = self.file_index(id).map_err(SubmitError::Io)?;
        let data = self.buffers[buffer.0 as usize][range].to_vec();
        self.busy_hold(buffer);
        let kind = PendingKind::Write { data, sync };
        let write = Pending {
            token,
            file,
            position,
            kind,
            holds: Some(buffer),
            covers_up_to: 0,
        };
        self.pending.push(write);
        if sync == WriteSync::LinkedFdatasync {
            let kind = PendingKind::LinkedSync;
            let sync = Pending {
                token,
                file,
                position: 0,
                kind,
                holds: None,
                covers_up_to: 0,
            };
            self.queued.push(sync);
        }
        Ok(())
    }

    fn submit_zero(
        &mut self,
        token: DiskToken,
        id: FileId,
        position: u64,
        length: usize,
    ) -> Result<(), SubmitError> {
        let file = self.file_index(id).map_err(SubmitError::Io)?;
        let kind = PendingKind::Write {
            data: vec![0u8; length],
            sync: WriteSync::None,
        };
        self.pending.push(Pending {
            token,
            file,
            position,
            kind,
            holds: None,
            covers_up_to: 0,
        });
        Ok(())
    }

    fn submit_sync(&mut self, token: DiskToken, id: FileId) -> Result<(), SubmitError> {
        let file = self.file_index(id).map_err(SubmitError::Io)?;
        let covers_up_to = self.write_completions;
        let kind = PendingKind::Sync;
        self.pending.push(Pending {
            token,
            file,
            position: 0,
            kind,
            holds: None,
            covers_up_to,
        });
        Ok(())
    }

    fn submit_read(
        &mut self,
        token: DiskToken,
        id: FileId,
        position: u64,
        buffer: BufferId,
        length: usize,
    ) -> Result<(), SubmitError> {
        let file = self.file_index(id).map_err(SubmitError::Io)?;
        self.busy_hold(buffer);
        let kind = PendingKind::Read { buffer, length };
        let read = Pending {
            token,
            file,
            position,
            kind,
            holds: Some(buffer),
            covers_up_to: 0,
        };
        self.pending.push(read);
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }

    /// Completes a random number (at least one, if any is ready) of ready operations in random
    /// order, so completions arrive out of submission order.
    fn poll(&mut self, out: &mut Vec<DiskCompletion>) {
        if self.pending.is_empty() {
            return;
        }
        let count = 1 + self.rng.below(crate::stdx::to_u64(self.pending.len()));
        for _ in 0..count {
            if self.pending.is_empty() {
                break;
            }
            let index = self.rng.below(crate::stdx::to_u64(self.pending.len()));
            self.complete_one(crate::stdx::to_usize(index), out);
        }
    }

    fn in_flight(&self) -> usize {
        self.pending_count()
    }

    fn space_free(&mut self) -> io::Result<u64> {
        let used = self.space_used();
        Ok(self
            .faults
            .capacity
            .map_or(u64::MAX, |capacity| capacity.saturating_sub(used)))
    }

    fn space_total(&mut self) -> io::Result<u64> {
        Ok(self.faults.capacity.unwrap_or(u64::MAX))
    }
}
