//! The `Disk` trait: the only seam between the journal and storage.
//!
//! Two implementations: `uring::UringDisk` (io_uring, O_DIRECT, a real directory) and
//! `disk::sim::SimDisk` (memory, with "live" and "durable" images kept apart and faults).
//! Buffers handed to the kernel are owned by the disk, never by the caller: a buffer in flight
//! cannot be touched (`buffer_mut` asserts), which is what makes the io_uring side sound.

pub mod sim;

use crate::ids::FileId;
use std::io;

/// Two different elements of a slice, one to read and one to write (`Disk::buffer_copy`).
pub(crate) fn pair_mut<T>(items: &mut [T], read: usize, write: usize) -> (&T, &mut T) {
    assert_ne!(read, write, "two different elements");
    if read < write {
        let (low, high) = items.split_at_mut(write);
        (&low[read], &mut high[0])
    } else {
        let (low, high) = items.split_at_mut(read);
        (&high[0], &mut low[write])
    }
}

/// Index of a buffer allocated by `Disk::buffers_allocate`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BufferId(pub u32);

/// Caller-chosen tag that comes back with a completion.
pub type DiskToken = u64;

/// What a completion is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiskOp {
    /// A data write (a commit, or one zero-fill chunk, or a segment header).
    Write,
    /// An fdatasync (linked after a write, or alone).
    Sync,
    /// A read into a buffer.
    Read,
    /// A sequence of directory changes (`Disk::submit_file_ops`).
    File,
}

/// One step of `Disk::submit_file_ops`: a change to the journal's directory made off the
/// shard thread. Creating, renaming and unlinking files wait for the file system's journal
/// (ext4 takes a journal handle for each, and an unlink frees the file's extents there): as
/// blocking calls they stalled a churning shard for up to tens of milliseconds at a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileOp {
    /// As `Disk::file_create`: the temporary of `id`, `size` bytes allocated. A descriptor
    /// open for `id` is closed at submission; `id` addresses the new file once the step is
    /// done.
    Create { id: FileId, size: u64 },
    /// The temporary of `id` renamed to its published name, atomically replacing a published
    /// file of that name. `id` keeps its descriptor.
    Publish { id: FileId },
    /// The temporary of `from` renamed over the published `to` (compaction's copy replacing
    /// its segment). `to`'s descriptor is closed at submission, while the old file still has
    /// a name, so the rename, off the shard, is what frees its blocks; the caller makes sure
    /// nothing of its own is in flight on it. Done: `to` addresses the new file and `from`
    /// nothing. Failed: `to` addresses the old file again.
    ///
    /// With `keep`, the two names are exchanged in one atomic step (renameat2
    /// RENAME_EXCHANGE) instead: the old file lives on under `from`'s temporary name, blocks
    /// and all, for segment preparation to reuse (`FileOp::Recycle` from `from`) or for a
    /// `FileOp::Remove` of `from`; a crash leaves it a temporary that the next open deletes.
    Replace {
        from: FileId,
        to: FileId,
        keep: bool,
    },
    /// `from` (under its resting name, `file_name::resting_file_name`) renamed to the
    /// temporary of `to` (replacing a stale temporary of that name): a dead segment's file,
    /// or a replaced one kept by `Replace` with `keep`, becomes the next segment's
    /// preparation, its blocks already allocated and written (`journal/segments.rs`). Done:
    /// `to` addresses it and `from` nothing. The caller syncs the directory before it writes
    /// to the file, so a crash can never show `from`'s name on `to`'s contents.
    Recycle { from: FileId, to: FileId },
    /// The file of `id` (under its resting name) unlinked; its descriptor is closed at
    /// submission (so the unlink, off the shard, frees its blocks). A file already gone
    /// counts as removed.
    Remove { id: FileId },
    /// An fsync of the directory: every step before it is durable once it is done. Until
    /// then a crash may undo any of them; file systems that journal metadata make directory
    /// changes durable in the order they were made, so one sync covers every change before
    /// it.
    SyncDirectory,
}

/// One finished asynchronous operation: `result` is bytes transferred or `-errno`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DiskCompletion {
    /// The token given at submission.
    pub token: DiskToken,
    /// Which part of the submission finished.
    pub op: DiskOp,
    /// Bytes transferred (write, read), 0 (sync), or a negative errno.
    pub result: i32,
}

/// How a write becomes durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteSync {
    /// No sync: the write alone (zero-fill chunks, headers; synced later).
    None,
    /// The write, then an fdatasync linked with IOSQE_IO_LINK: two completions.
    LinkedFdatasync,
    /// As `LinkedFdatasync`, but a successful write posts no completion of its own
    /// (IOSQE_CQE_SKIP_SUCCESS): one wake-up per commit instead of two. The disk reports the
    /// write's success together with the sync's completion; a failed or short write still
    /// completes on its own (the kernel clears the skip flag on failure).
    LinkedFdatasyncQuiet,
    /// One write with RWF_DSYNC: one completion, durable when it succeeds.
    Dsync,
}

/// Why an asynchronous submission could not be queued.
#[derive(Debug)]
pub enum SubmitError {
    /// The submission queue is full even after flushing it; try again after reaping.
    QueueFull,
    /// The kernel refused the submission.
    Io(io::Error),
}

/// Storage as the journal sees it: one directory of files named by `FileId` (file_name.rs).
/// Blocking methods are only for open, recovery and the rare control operations; everything on
/// the commit path is asynchronous. The I/O methods address a file opened by `file_open` or
/// `file_create`, before and after it is published alike.
pub trait Disk {
    /// Allocates the disk-owned buffers, once: `sizes[i]` bytes for `BufferId(i)`, each
    /// 4 KiB-aligned and zeroed.
    fn buffers_allocate(&mut self, sizes: &[usize]);
    /// Read access to a buffer.
    fn buffer(&self, id: BufferId) -> &[u8];
    /// Write access to a buffer; panics if the buffer is in flight.
    fn buffer_mut(&mut self, id: BufferId) -> &mut [u8];
    /// Copies `range` of buffer `from` to `to` at `offset` (two different buffers; `to` must
    /// not be in flight).
    fn buffer_copy(
        &mut self,
        from: BufferId,
        range: std::ops::Range<usize>,
        to: BufferId,
        offset: usize,
    );

    /// Published files of every kind, and the segments' compacted copies
    /// (`FileId::SegmentCompacted`, which rest under a temporary name: an unfinished copy, or
    /// the old file a swap kept for reuse, which the journal tells apart), sorted by `FileId`.
    /// Other temporaries are files whose preparation a crash cut short: they are deleted, and
    /// the directory synced if any was, so a later crash cannot bring them back.
    fn files_list(&mut self) -> io::Result<Vec<FileId>>;
    /// Opens a file where it rests (its published name; a compacted copy's temporary one),
    /// replacing a descriptor already open for `id`, and returns its size.
    fn file_open(&mut self, id: FileId) -> io::Result<u64>;
    /// Creates the temporary file of `id` (deleting a stale temporary of that name first) and,
    /// if `size` > 0, allocates `size` bytes for it. From here on `id` addresses the temporary
    /// (a descriptor open on the published file is closed). `size` is the file's size for
    /// good: writes must lie inside it (the simulator fails those that do not; no engine
    /// write extends a file).
    fn file_create(&mut self, id: FileId, size: u64) -> io::Result<()>;
    /// Renames the temporary of `id` to its published name, atomically replacing a published
    /// file of that name, and fsyncs the directory: the new file is durable under its name
    /// when this returns. `id` keeps its descriptor.
    fn file_publish(&mut self, id: FileId) -> io::Result<()>;
    /// Submits `ops` to be done in order, off the shard thread: one `DiskOp::File` completion
    /// when the last is done (result 0) or when one fails (its `-errno`; the ones after it
    /// are not done). At most `FILE_OPS_MAX` steps, and until the completion nothing may
    /// rely on any of them (a crash may have done any prefix of them).
    fn submit_file_ops(&mut self, token: DiskToken, ops: &[FileOp]) -> Result<(), SubmitError>;
    /// Submits an fsync of the directory: every rename and unlink made before this call is
    /// durable when it completes (`DiskOp::Sync`). The shard serves on meanwhile, where the
    /// blocking calls above would stall it for as long as the file system's journal commit.
    fn submit_sync_directory(&mut self, token: DiskToken) -> Result<(), SubmitError>;
    /// Closes the descriptor of `id`, if open, and deletes its temporary if there is one (an
    /// abandoned preparation; nothing depends on it being gone, so errors are ignored).
    fn file_discard(&mut self, id: FileId);
    /// Closes the descriptor of `id`, if open, deletes its published file and fsyncs the
    /// directory: the file is gone for good when this returns.
    fn file_remove(&mut self, id: FileId) -> io::Result<()>;
    /// Closes the descriptor of `id`, if open (a file done with need not hold one).
    fn file_close(&mut self, id: FileId);
    /// Reads `length` bytes at `position` into the buffer; returns bytes read (short at EOF).
    fn read_blocking(
        &mut self,
        id: FileId,
        position: u64,
        buffer: BufferId,
        length: usize,
    ) -> io::Result<usize>;
    /// Writes `length` bytes of the buffer at `position`, all or an error.
    fn write_blocking(
        &mut self,
        id: FileId,
        position: u64,
        buffer: BufferId,
        length: usize,
    ) -> io::Result<()>;
    /// fdatasync of a file.
    fn sync_blocking(&mut self, id: FileId) -> io::Result<()>;

    /// Queues a write of the first `length` bytes of `buffer` at `position`, made durable as
    /// `sync` says.
    fn submit_write(
        &mut self,
        token: DiskToken,
        id: FileId,
        position: u64,
        buffer: BufferId,
        length: usize,
        sync: WriteSync,
    ) -> Result<(), SubmitError> {
        self.submit_write_range(token, id, position, buffer, 0..length, sync)
    }
    /// Queues a write of bytes `range` of `buffer` at `position` (`range.start` a multiple of
    /// `SECTOR_SIZE`, for O_DIRECT): a large buffer written in several smaller writes.
    fn submit_write_range(
        &mut self,
        token: DiskToken,
        id: FileId,
        position: u64,
        buffer: BufferId,
        range: std::ops::Range<usize>,
        sync: WriteSync,
    ) -> Result<(), SubmitError>;
    /// Queues a write of `length` zero bytes at `position` from a disk-owned zero buffer.
    fn submit_zero(
        &mut self,
        token: DiskToken,
        id: FileId,
        position: u64,
        length: usize,
    ) -> Result<(), SubmitError>;
    /// Queues an fdatasync of a file.
    fn submit_sync(&mut self, token: DiskToken, id: FileId) -> Result<(), SubmitError>;
    /// Queues a read of `length` bytes at `position` into `buffer`.
    fn submit_read(
        &mut self,
        token: DiskToken,
        id: FileId,
        position: u64,
        buffer: BufferId,
        length: usize,
    ) -> Result<(), SubmitError>;
    /// Hands queued submissions to the device (one `io_uring_enter`, so a linked chain is never
    /// split across submit boundaries).
    fn flush(&mut self) -> io::Result<()>;
    /// Moves finished operations into `out`; buffers they used become free.
    fn poll(&mut self, out: &mut Vec<DiskCompletion>);
    /// Submissions not yet completed.
    fn in_flight(&self) -> usize;
    /// Bytes still free for new files on the file system of the journal's directory (for an
    /// unprivileged writer: statvfs `f_bavail`). Segment creation keeps `Config::disk_reserve`
    /// of it free, so sealing and deletions can always write their files on a full disk. One
    /// blocking call, cheap (no disk I/O on local file systems).
    fn space_free(&mut self) -> io::Result<u64>;
    /// Bytes the file system of the journal's directory holds in all (statvfs `f_blocks`):
    /// disk pressure starts at a share of it (`Config::disk_pressure_percent`).
    fn space_total(&mut self) -> io::Result<u64>;
}
