//! The `Disk` trait on the simulated disk: buffers, opening and creating files, the blocking
//! calls, and the submissions, each kept pending until `poll` completes a random few of them
//! in random order.

use super::{Entry, Pending, PendingKind, SimDisk, SimFile, ERRNO_ENOSPC};
use crate::disk::{BufferId, Disk, DiskCompletion, DiskToken, FileOp, SubmitError, WriteSync};
use crate::ids::FileId;
use std::io;

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
        // A segment's compacted copy rests under its temporary name: listed, not deleted.
        let temporaries: Vec<Entry> = self
            .directory_live
            .keys()
            .filter(|entry| entry.temporary && !matches!(entry.id, FileId::SegmentCompacted(_)))
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
            .get(&Entry::resting(id))
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
