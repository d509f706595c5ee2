//! `UringDisk`: the journal's `Disk` on a real directory, O_DIRECT files and io_uring.

use super::{user_data, AlignedBuffer, Ring, OWNER_DISK};
use crate::constants::ZERO_CHUNK_SIZE;
use crate::disk::{
    BufferId, Disk, DiskCompletion, DiskOp, DiskToken, FileOp, SubmitError, WriteSync,
};
use crate::file_name::{
    file_name, is_temporary_file_name, parse_file_name, parse_segment_compacted_name,
    resting_file_name, temporary_file_name,
};
use crate::ids::FileId;
use io_uring::{opcode, squeue, types};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::rc::Rc;

mod file_ops;

// The tag's top two bits say which part of a submission completed; a file-ops step's tag
// holds its slot instead of a token.
const TAG_WRITE: u32 = 0;
const TAG_SYNC: u32 = 1 << 30;
const TAG_READ: u32 = 2 << 30;
const TAG_FILE: u32 = 3 << 30;
const TAG_OP_MASK: u32 = 3 << 30;

/// Journal storage on one directory. Files of every kind are opened with O_DIRECT (unless
/// disabled for a file system that lacks it, such as tmpfs), so recovery reads what is on the
/// device.
pub struct UringDisk {
    ring: Rc<RefCell<Ring>>,
    directory: PathBuf,
    directory_file: File,
    /// Open descriptors, of temporaries and published files alike (a rename keeps them).
    files: BTreeMap<FileId, OwnedFd>,
    buffers: Vec<AlignedBuffer>,
    buffers_busy: Vec<u32>,
    zero: AlignedBuffer,
    direct_io: bool,
    in_flight: usize,
    scratch: Vec<super::Completion>,
    quiet: Vec<QuietWrite>,
    file_ops: file_ops::FileOpsSlots,
}

impl std::fmt::Debug for UringDisk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "UringDisk({})", self.directory.display())
    }
}

impl UringDisk {
    /// Opens (creating it if needed) the journal directory. `direct_io` false is for file
    /// systems without O_DIRECT and is never the default.
    pub fn open(ring: Rc<RefCell<Ring>>, directory: &Path, direct_io: bool) -> io::Result<Self> {
        std::fs::create_dir_all(directory)?;
        let directory_file = File::open(directory)?;
        // The directory entry of the journal directory itself must be durable too.
        if let Some(parent) = directory.parent() {
            if let Ok(parent) = File::open(if parent.as_os_str().is_empty() {
                Path::new(".")
            } else {
                parent
            }) {
                parent.sync_all()?;
            }
        }
        let scratch = Vec::with_capacity(super::RING_ENTRIES_DEFAULT as usize * 2);
        Ok(UringDisk {
            ring,
            directory: directory.to_path_buf(),
            directory_file,
            files: BTreeMap::new(),
            buffers: Vec::new(),
            buffers_busy: Vec::new(),
            zero: AlignedBuffer::new(ZERO_CHUNK_SIZE),
            direct_io,
            in_flight: 0,
            scratch,
            quiet: Vec::with_capacity(crate::constants::COMMITS_IN_FLIGHT_MAX + 1),
            file_ops: Default::default(),
        })
    }

    fn open_file(&self, name: &str, create: bool) -> io::Result<OwnedFd> {
        let path = CString::new(self.directory.join(name).as_os_str().as_bytes())
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        let mut flags = libc::O_RDWR | libc::O_CLOEXEC;
        if create {
            flags |= libc::O_CREAT | libc::O_EXCL;
        }
        if self.direct_io {
            flags |= libc::O_DIRECT;
        }
        // SAFETY: `path` is a valid NUL-terminated string; the returned fd is owned below.
        let fd = unsafe { libc::open(path.as_ptr(), flags, 0o644) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just returned by open and is owned by nobody else.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    fn fd(&self, id: FileId) -> io::Result<i32> {
        let file = self
            .files
            .get(&id)
            .ok_or_else(|| io::Error::from_raw_os_error(libc::EBADF))?;
        Ok(file.as_raw_fd())
    }

    fn check_range(&self, buffer: BufferId, length: usize) {
        let size = self.buffers[buffer.0 as usize].len();
        assert!(length <= size, "length {length} over buffer size {size}");
    }

    fn tag(token: DiskToken, op: u32) -> u32 {
        let token = u32::try_from(token).expect("disk tokens fit 30 bits");
        assert_eq!(token & TAG_OP_MASK, 0, "disk tokens fit 30 bits");
        token | op
    }
}

impl Drop for UringDisk {
    fn drop(&mut self) {
        // Buffers the kernel may still write into are leaked, never freed.
        for (buffer, busy) in self.buffers.drain(..).zip(&self.buffers_busy) {
            if *busy > 0 {
                std::mem::forget(buffer);
            }
        }
        if self.in_flight > 0 {
            let zero = std::mem::replace(&mut self.zero, AlignedBuffer::new(1));
            std::mem::forget(zero);
            // The paths of file steps in flight, which the kernel may still read.
            std::mem::forget(std::mem::take(&mut self.file_ops));
        }
    }
}

impl Disk for UringDisk {
    fn buffers_allocate(&mut self, sizes: &[usize]) {
        assert!(self.buffers.is_empty(), "buffers are allocated once");
        self.buffers = sizes.iter().map(|&size| AlignedBuffer::new(size)).collect();
        self.buffers_busy = vec![0; sizes.len()];
    }

    fn buffer(&self, id: BufferId) -> &[u8] {
        self.buffers[id.0 as usize].as_slice()
    }

    fn buffer_mut(&mut self, id: BufferId) -> &mut [u8] {
        assert_eq!(
            self.buffers_busy[id.0 as usize], 0,
            "buffer {id:?} is in flight"
        );
        self.buffers[id.0 as usize].as_mut_slice()
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
        target.as_mut_slice()[offset..offset + length].copy_from_slice(&source.as_slice()[range]);
    }

    fn files_list(&mut self) -> io::Result<Vec<FileId>> {
        let mut files = Vec::new();
        let mut removed = false;
        for entry in std::fs::read_dir(&self.directory)? {
            let entry = entry?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if let Some(id) = parse_file_name(&name) {
                files.push(id);
            } else if let Some(id) = parse_segment_compacted_name(&name) {
                files.push(id);
            } else if is_temporary_file_name(&name) {
                std::fs::remove_file(entry.path())?;
                removed = true;
            }
        }
        if removed {
            self.directory_file.sync_all()?;
        }
        files.sort();
        assert!(
            files.windows(2).all(|pair| pair[0] < pair[1]),
            "one name per file"
        );
        Ok(files)
    }

    fn file_open(&mut self, id: FileId) -> io::Result<u64> {
        let fd = self.open_file(&resting_file_name(id), false)?;
        let file = File::from(fd);
        let size = file.metadata()?.len();
        // "fsync before reading": what recovery reads must be what is durable.
        file.sync_all()?;
        self.files.insert(id, OwnedFd::from(file));
        Ok(size)
    }

    fn file_create(&mut self, id: FileId, size: u64) -> io::Result<()> {
        let name = temporary_file_name(id);
        // A stale temporary is an abandoned preparation of the same file: start over.
        match std::fs::remove_file(self.directory.join(&name)) {
            Err(error) if error.kind() != io::ErrorKind::NotFound => return Err(error),
            _ => {}
        }
        let length = libc::off_t::try_from(size).map_err(|_| io::ErrorKind::InvalidInput)?;
        let fd = self.open_file(&name, true)?;
        if size > 0 {
            // SAFETY: `fd` is an open, writable file owned by this function.
            let result = unsafe { libc::fallocate(fd.as_raw_fd(), 0, 0, length) };
            if result != 0 {
                let error = io::Error::last_os_error();
                drop(fd);
                let _ = std::fs::remove_file(self.directory.join(&name));
                return Err(error);
            }
        }
        self.files.insert(id, fd);
        Ok(())
    }

    fn file_publish(&mut self, id: FileId) -> io::Result<()> {
        let from = self.directory.join(temporary_file_name(id));
        let to = self.directory.join(file_name(id));
        // rename(2) replaces an existing `to` atomically: a crash leaves the old or the new.
        std::fs::rename(from, to)?;
        self.directory_file.sync_all()
    }

    fn submit_file_ops(&mut self, token: DiskToken, ops: &[FileOp]) -> Result<(), SubmitError> {
        self.file_ops_submit(token, ops)
    }

    fn submit_sync_directory(&mut self, token: DiskToken) -> Result<(), SubmitError> {
        let fd = types::Fd(self.directory_file.as_raw_fd());
        // A full fsync: a directory's entries are what must become durable.
        let fsync = opcode::Fsync::new(fd).build();
        let fsync = fsync.user_data(user_data(OWNER_DISK, None, Self::tag(token, TAG_SYNC)));
        // SAFETY: fsync references no memory; the directory's descriptor lives as long as
        // this disk, which outlives every operation it submitted.
        unsafe { self.ring.borrow_mut().push(&[fsync]) }?;
        self.in_flight += 1;
        Ok(())
    }

    fn file_discard(&mut self, id: FileId) {
        self.files.remove(&id);
        let _ = std::fs::remove_file(self.directory.join(temporary_file_name(id)));
    }

    fn file_remove(&mut self, id: FileId) -> io::Result<()> {
        self.files.remove(&id);
        std::fs::remove_file(self.directory.join(file_name(id)))?;
        self.directory_file.sync_all()
    }

    fn file_close(&mut self, id: FileId) {
        self.files.remove(&id);
    }

    fn read_blocking(
        &mut self,
        id: FileId,
        position: u64,
        buffer: BufferId,
        length: usize,
    ) -> io::Result<usize> {
        self.check_range(buffer, length);
        let fd = self.fd(id)?;
        let target = self.buffer_mut(buffer);
        let mut done = 0;
        // Short reads happen: loop until the length is read or EOF (0 bytes).
        while done < length {
            let offset = libc::off_t::try_from(position + crate::stdx::to_u64(done))
                .map_err(|_| io::ErrorKind::InvalidInput)?;
            let rest = &mut target[done..length];
            // SAFETY: `rest` is valid writable memory of `rest.len()` bytes; `fd` is open.
            let count = unsafe { libc::pread(fd, rest.as_mut_ptr().cast(), rest.len(), offset) };
            if count < 0 {
                let error = io::Error::last_os_error();
                if error.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(error);
            }
            if count == 0 {
                break;
            }
            done += usize::try_from(count).expect("pread count is non-negative");
        }
        Ok(done)
    }

    fn write_blocking(
        &mut self,
        id: FileId,
        position: u64,
        buffer: BufferId,
        length: usize,
    ) -> io::Result<()> {
        self.check_range(buffer, length);
        let fd = self.fd(id)?;
        let source = self.buffer(buffer);
        let offset = libc::off_t::try_from(position).map_err(|_| io::ErrorKind::InvalidInput)?;
        // SAFETY: `source` is valid readable memory of at least `length` bytes; `fd` is open.
        let count = unsafe { libc::pwrite(fd, source.as_ptr().cast(), length, offset) };
        match usize::try_from(count) {
            Ok(written) if written == length => Ok(()),
            Ok(_) => Err(io::Error::new(io::ErrorKind::WriteZero, "short write")),
            Err(_) => Err(io::Error::last_os_error()),
        }
    }

    fn sync_blocking(&mut self, id: FileId) -> io::Result<()> {
        let fd = self.fd(id)?;
        // SAFETY: `fd` is an open file descriptor.
        if unsafe { libc::fdatasync(fd) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
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
        self.check_range(buffer, range.end);
        assert_eq!(
            range.start % crate::constants::SECTOR_SIZE,
            0,
            "O_DIRECT writes start on a sector"
        );
        let length = range.len();
        let fd = types::Fd(self.fd(id).map_err(SubmitError::Io)?);
        let index = buffer.0 as usize;
        let pointer = self.buffers[index].as_mut_slice()[range].as_mut_ptr();
        let length_u32 = u32::try_from(length).expect("commit fits u32");
        let data = user_data(OWNER_DISK, Some(index), Self::tag(token, TAG_WRITE));
        let mut write = opcode::Write::new(fd, pointer, length_u32).offset(position);
        if sync == WriteSync::Dsync {
            write = write.rw_flags(libc::RWF_DSYNC);
        }
        let write = write.build().user_data(data);
        let mut ring = self.ring.borrow_mut();
        let quiet = sync == WriteSync::LinkedFdatasyncQuiet;
        if sync == WriteSync::LinkedFdatasync || quiet {
            // IO_LINK, never IO_HARDLINK: a failed or short write must cancel the fsync.
            let mut flags = squeue::Flags::IO_LINK;
            if quiet {
                assert!(
                    self.quiet.len() < self.quiet.capacity(),
                    "quiet writes are bounded"
                );
                flags |= squeue::Flags::SKIP_SUCCESS;
            }
            let write = write.flags(flags);
            let fsync = opcode::Fsync::new(fd)
                .flags(types::FsyncFlags::DATASYNC)
                .build();
            let fsync = fsync.user_data(user_data(OWNER_DISK, None, Self::tag(token, TAG_SYNC)));
            let busy = &mut self.buffers_busy[index];
            // SAFETY: the buffer is owned by `self.buffers`, never moves, and is counted busy
            // until the write's completion is polled; `fd` stays open in `self.files`.
            unsafe { ring.push_holding(&[write, fsync], busy) }?;
            self.in_flight += 2;
            if quiet {
                let length = i32::try_from(length).expect("commit fits i32");
                let write = QuietWrite {
                    token,
                    buffer: index,
                    length,
                    reported: false,
                };
                self.quiet.push(write);
            }
        } else {
            let busy = &mut self.buffers_busy[index];
            // SAFETY: as above.
            unsafe { ring.push_holding(&[write], busy) }?;
            self.in_flight += 1;
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
        assert!(length <= self.zero.len());
        let fd = types::Fd(self.fd(id).map_err(SubmitError::Io)?);
        let length = u32::try_from(length).expect("zero chunk fits u32");
        let data = user_data(OWNER_DISK, None, Self::tag(token, TAG_WRITE));
        let write = opcode::Write::new(fd, self.zero.as_mut_ptr(), length).offset(position);
        // SAFETY: the zero buffer lives as long as `self` and is leaked on drop while any
        // submission is in flight; nothing ever writes to it.
        unsafe {
            self.ring
                .borrow_mut()
                .push(&[write.build().user_data(data)])
        }?;
        self.in_flight += 1;
        Ok(())
    }

    fn submit_sync(&mut self, token: DiskToken, id: FileId) -> Result<(), SubmitError> {
        let fd = types::Fd(self.fd(id).map_err(SubmitError::Io)?);
        let fsync = opcode::Fsync::new(fd)
            .flags(types::FsyncFlags::DATASYNC)
            .build();
        let fsync = fsync.user_data(user_data(OWNER_DISK, None, Self::tag(token, TAG_SYNC)));
        // SAFETY: fsync references no memory.
        unsafe { self.ring.borrow_mut().push(&[fsync]) }?;
        self.in_flight += 1;
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
        self.check_range(buffer, length);
        let fd = types::Fd(self.fd(id).map_err(SubmitError::Io)?);
        let index = buffer.0 as usize;
        assert_eq!(self.buffers_busy[index], 0, "read into a busy buffer");
        let pointer = self.buffers[index].as_mut_ptr();
        let length = u32::try_from(length).expect("read fits u32");
        let data = user_data(OWNER_DISK, Some(index), Self::tag(token, TAG_READ));
        let read = opcode::Read::new(fd, pointer, length)
            .offset(position)
            .build()
            .user_data(data);
        let busy = &mut self.buffers_busy[index];
        // SAFETY: the buffer is owned by `self.buffers`, never moves, is not otherwise
        // referenced (busy check above) and stays busy until the completion is polled.
        unsafe { self.ring.borrow_mut().push_holding(&[read], busy) }?;
        self.in_flight += 1;
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.ring.borrow_mut().submit()
    }

    fn poll(&mut self, out: &mut Vec<DiskCompletion>) {
        {
            let mut ring = self.ring.borrow_mut();
            std::mem::swap(&mut self.scratch, &mut ring.disk_completions);
        }
        // Taken out and put back so the preallocated capacity is reused on every poll.
        let mut scratch = std::mem::take(&mut self.scratch);
        for completion in scratch.drain(..) {
            if let Some(index) = completion.buffer_index() {
                assert!(
                    self.buffers_busy[index] > 0,
                    "completion for an idle buffer"
                );
                self.buffers_busy[index] -= 1;
            }
            self.in_flight -= 1;
            let tag = completion.tag();
            let op = match tag & TAG_OP_MASK {
                TAG_WRITE => DiskOp::Write,
                TAG_SYNC => DiskOp::Sync,
                TAG_READ => DiskOp::Read,
                _ => {
                    let slot = usize::try_from(tag & !TAG_OP_MASK).expect("a few slots");
                    self.file_step_complete(slot, completion.result, out);
                    continue;
                }
            };
            let token = DiskToken::from(tag & !TAG_OP_MASK);
            self.quiet_complete(token, op, out);
            out.push(DiskCompletion {
                token,
                op,
                result: completion.result,
            });
        }
        self.scratch = scratch;
    }

    fn in_flight(&self) -> usize {
        self.in_flight
    }

    fn space_free(&mut self) -> io::Result<u64> {
        super::disk_space(&self.directory).map(|space| space.free_bytes)
    }

    fn space_total(&mut self) -> io::Result<u64> {
        super::disk_space(&self.directory).map(|space| space.total_bytes)
    }
}

/// A write submitted with IOSQE_CQE_SKIP_SUCCESS: it posts a completion only if it fails.
#[derive(Clone, Copy, Debug)]
struct QuietWrite {
    token: DiskToken,
    buffer: usize,
    length: i32,
    reported: bool,
}

impl UringDisk {
    /// Bookkeeping of quiet writes: a failed one posts its own completion; a successful one is
    /// reported, and its buffer freed, when its linked sync completes (the kernel finished
    /// with the buffer before it started the sync).
    fn quiet_complete(&mut self, token: DiskToken, op: DiskOp, out: &mut Vec<DiskCompletion>) {
        let Some(slot) = self.quiet.iter().position(|quiet| quiet.token == token) else {
            return;
        };
        match op {
            DiskOp::Write => self.quiet[slot].reported = true,
            DiskOp::Sync => {
                let quiet = self.quiet.swap_remove(slot);
                if !quiet.reported {
                    assert!(self.buffers_busy[quiet.buffer] > 0);
                    self.buffers_busy[quiet.buffer] -= 1;
                    self.in_flight -= 1;
                    let write = DiskCompletion {
                        token,
                        op: DiskOp::Write,
                        result: quiet.length,
                    };
                    out.push(write);
                }
            }
            DiskOp::Read | DiskOp::File => unreachable!("reads and file steps are never quiet"),
        }
    }
}
