//! File operations on the simulated disk: the steps of `Disk::submit_file_ops` (create,
//! publish, replace or exchange, recycle, remove, directory sync) on the live directory, and
//! the blocking directory sync that makes the live directory durable.

use super::{Entry, SimDisk, ERRNO_EIO, ERRNO_ENOENT};
use crate::disk::{Disk, FileOp};
use crate::ids::FileId;
use std::io;

impl SimDisk {
    /// Does `ops` in order: 0, or the first failure's `-errno`.
    pub(super) fn complete_file_ops(&mut self, ops: &[FileOp]) -> i32 {
        for (done, &op) in ops.iter().enumerate() {
            let targeted = matches!(op, FileOp::Replace { to, .. }
                if self.faults.replace_onto_fails_once == Some(to));
            if targeted {
                self.faults.replace_onto_fails_once = None;
            }
            let fault = targeted
                || (!matches!(op, FileOp::SyncDirectory)
                    && self.rng.chance(self.faults.file_op_error_ppm));
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
    pub(super) fn file_step(&mut self, op: FileOp) -> Result<(), i32> {
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
    pub(super) fn directory_sync_blocking(&mut self) {
        self.directory_clock += 1;
        self.directory_durable = self.directory_live.clone();
        self.directory_durable_clock = self.directory_clock;
    }
}
