//! `Disk::submit_file_ops` on io_uring: each step is an IORING_OP_OPENAT, FALLOCATE,
//! RENAMEAT, UNLINKAT or FSYNC, which the kernel runs in its io-wq workers, so the file
//! system's journal waits there instead of on the shard thread. Steps run one after another,
//! each submitted from the completion of the one before (a create's fallocate needs the
//! descriptor its open returns), and a sequence reports once.

use super::{user_data, UringDisk, OWNER_DISK, TAG_FILE};
use crate::constants::{FILE_OPS_IN_FLIGHT_MAX, FILE_OPS_MAX};
use crate::disk::{DiskCompletion, DiskOp, DiskToken, FileOp, SubmitError};
use crate::file_name::{file_name, resting_file_name, temporary_file_name};
use io_uring::{opcode, types};
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// A sequence in flight.
#[derive(Debug)]
pub(super) struct FileOpsRunning {
    token: DiskToken,
    ops: [FileOp; FILE_OPS_MAX],
    count: usize,
    /// The step in flight.
    next: usize,
    /// The paths the step in flight names: the kernel reads them when it runs the step, so
    /// they live until its completion.
    paths: [Option<CString>; 2],
    /// A create's new descriptor, between its open and its fallocate.
    created: Option<OwnedFd>,
}

/// The sequences in flight, by slot (the slot is the completion's tag).
pub(super) type FileOpsSlots = [Option<FileOpsRunning>; FILE_OPS_IN_FLIGHT_MAX];

fn c_name(name: &str) -> CString {
    CString::new(name).expect("journal file names hold no NUL")
}

impl UringDisk {
    pub(super) fn file_ops_submit(
        &mut self,
        token: DiskToken,
        ops: &[FileOp],
    ) -> Result<(), SubmitError> {
        assert!(!ops.is_empty() && ops.len() <= FILE_OPS_MAX);
        let slot = self
            .file_ops
            .iter()
            .position(Option::is_none)
            .expect("FILE_OPS_IN_FLIGHT_MAX sequences at most");
        let mut steps = [FileOp::SyncDirectory; FILE_OPS_MAX];
        steps[..ops.len()].copy_from_slice(ops);
        // Descriptors are closed now, while their files still have a name: the rename or
        // unlink that drops the last name then frees the blocks, off the shard thread.
        for op in ops {
            match *op {
                FileOp::Create { id, .. } | FileOp::Remove { id } => {
                    self.files.remove(&id);
                }
                FileOp::Replace { to, .. } => {
                    self.files.remove(&to);
                }
                FileOp::Publish { .. } | FileOp::Recycle { .. } | FileOp::SyncDirectory => {}
            }
        }
        self.file_ops[slot] = Some(FileOpsRunning {
            token,
            ops: steps,
            count: ops.len(),
            next: 0,
            paths: [None, None],
            created: None,
        });
        let submitted = self.file_step_submit(slot);
        if submitted.is_err() {
            self.file_ops[slot] = None;
        }
        submitted
    }

    /// Pushes the step `next` of slot `slot` (for a create whose open is done, its fallocate).
    fn file_step_submit(&mut self, slot: usize) -> Result<(), SubmitError> {
        let direct_io = self.direct_io;
        let directory = types::Fd(self.directory_file.as_raw_fd());
        let running = self.file_ops[slot].as_mut().expect("a sequence runs");
        let op = running.ops[running.next];
        let entry = match op {
            FileOp::Create { size, .. } if running.created.is_some() => {
                let fd = running.created.as_ref().expect("checked").as_raw_fd();
                opcode::Fallocate::new(types::Fd(fd), size).build()
            }
            FileOp::Create { id, .. } => {
                let name = running.paths[0].insert(c_name(&temporary_file_name(id)));
                // O_TRUNC rather than an unlink first: a stale temporary (an abandoned
                // preparation) is started over in the same step.
                let mut flags = libc::O_RDWR | libc::O_CLOEXEC | libc::O_CREAT | libc::O_TRUNC;
                if direct_io {
                    flags |= libc::O_DIRECT;
                }
                opcode::OpenAt::new(directory, name.as_ptr())
                    .flags(flags)
                    .mode(0o644)
                    .build()
            }
            FileOp::Publish { id } => {
                let (from, to) = (temporary_file_name(id), file_name(id));
                rename_entry(running, directory, &from, &to).build()
            }
            FileOp::Replace { from, to, keep } => {
                let (from, to) = (temporary_file_name(from), file_name(to));
                let entry = rename_entry(running, directory, &from, &to);
                if keep {
                    // Both names stay, each on the other's file: the old one keeps its blocks.
                    entry.flags(libc::RENAME_EXCHANGE)
                } else {
                    entry
                }
                .build()
            }
            FileOp::Recycle { from, to } => {
                let (from, to) = (resting_file_name(from), temporary_file_name(to));
                rename_entry(running, directory, &from, &to).build()
            }
            FileOp::Remove { id } => {
                let name = running.paths[0].insert(c_name(&resting_file_name(id)));
                opcode::UnlinkAt::new(directory, name.as_ptr()).build()
            }
            // A full fsync: a directory's entries are what must become durable.
            FileOp::SyncDirectory => opcode::Fsync::new(directory).build(),
        };
        let tag = u32::try_from(slot).expect("a few slots") | TAG_FILE;
        let entry = entry.user_data(user_data(OWNER_DISK, None, tag));
        // SAFETY: the step's paths live in `self.file_ops[slot]`, which is neither replaced
        // nor dropped before this step's completion is reaped (a disk dropped with a sequence
        // in flight leaks them); the descriptors it names (the directory, a created file held
        // in the slot) stay open until then too.
        unsafe { self.ring.borrow_mut().push(&[entry]) }?;
        self.in_flight += 1;
        Ok(())
    }

    /// A step of slot `slot` completed with `result`: submits the next step, or reports the
    /// sequence done or failed.
    pub(super) fn file_step_complete(
        &mut self,
        slot: usize,
        result: i32,
        out: &mut Vec<DiskCompletion>,
    ) {
        let running = self.file_ops[slot].as_mut().expect("a sequence runs");
        let op = running.ops[running.next];
        let mut result = result;
        let mut step_done = true;
        match op {
            FileOp::Create { id, size } if running.created.is_none() => {
                if result >= 0 {
                    // SAFETY: a successful openat returns a new descriptor nobody else owns.
                    let fd = unsafe { OwnedFd::from_raw_fd(result) };
                    result = 0;
                    if size > 0 {
                        running.created = Some(fd);
                        step_done = false;
                    } else {
                        self.files.insert(id, fd);
                    }
                }
            }
            FileOp::Create { id, .. } => {
                let fd = running.created.take().expect("opened");
                if result >= 0 {
                    self.files.insert(id, fd);
                } else {
                    // Give the space back (a failed fallocate leaves what it got); an error
                    // here leaves a temporary the next open deletes.
                    drop(fd);
                    let _ = std::fs::remove_file(self.directory.join(temporary_file_name(id)));
                }
            }
            FileOp::Replace { from, to, .. } => {
                if result >= 0 {
                    if let Some(fd) = self.files.remove(&from) {
                        self.files.insert(to, fd);
                    }
                } else if let Ok(fd) = self.open_file(&file_name(to), false) {
                    // The old file kept its name: its reads need a descriptor again.
                    self.files.insert(to, fd);
                }
            }
            FileOp::Recycle { from, to } => {
                if result >= 0 {
                    if let Some(fd) = self.files.remove(&from) {
                        self.files.insert(to, fd);
                    } else {
                        // A file kept by a replace has no descriptor (it was the replaced
                        // one's, closed at the replace): open it under its new name.
                        match self.open_file(&temporary_file_name(to), false) {
                            Ok(fd) => {
                                self.files.insert(to, fd);
                            }
                            Err(error) => result = -error.raw_os_error().unwrap_or(libc::EIO),
                        }
                    }
                }
            }
            FileOp::Remove { .. } if result == -libc::ENOENT => result = 0,
            FileOp::Publish { .. } | FileOp::Remove { .. } | FileOp::SyncDirectory => {}
        }
        let running = self.file_ops[slot].as_mut().expect("a sequence runs");
        if result >= 0 && step_done {
            running.next += 1;
            running.paths = [None, None];
        }
        let finished = result < 0 || running.next == running.count;
        if !finished {
            if let Err(error) = self.file_step_submit(slot) {
                result = match error {
                    SubmitError::Io(error) => -error.raw_os_error().unwrap_or(libc::EIO),
                    SubmitError::QueueFull => -libc::EAGAIN,
                };
                self.file_ops_fail_cleanup(slot);
            } else {
                return;
            }
        }
        let running = self.file_ops[slot].take().expect("a sequence runs");
        if result < 0 {
            // A replace not done leaves the old file under its name: its descriptor, closed
            // at submission, is opened again.
            for op in &running.ops[running.next + 1..running.count] {
                if let FileOp::Replace { to, .. } = *op {
                    if let Ok(fd) = self.open_file(&file_name(to), false) {
                        self.files.insert(to, fd);
                    }
                }
            }
        }
        out.push(DiskCompletion {
            token: running.token,
            op: DiskOp::File,
            result: result.min(0),
        });
    }

    /// A step could not even be submitted: a create's descriptor is given up.
    fn file_ops_fail_cleanup(&mut self, slot: usize) {
        let running = self.file_ops[slot].as_mut().expect("a sequence runs");
        if let (Some(fd), FileOp::Create { id, .. }) =
            (running.created.take(), running.ops[running.next])
        {
            drop(fd);
            let _ = std::fs::remove_file(self.directory.join(temporary_file_name(id)));
        }
    }
}

fn rename_entry(
    running: &mut FileOpsRunning,
    directory: types::Fd,
    from: &str,
    to: &str,
) -> opcode::RenameAt {
    let from = running.paths[0].insert(c_name(from)).as_ptr();
    let to = running.paths[1].insert(c_name(to)).as_ptr();
    opcode::RenameAt::new(directory, from, directory, to)
}
