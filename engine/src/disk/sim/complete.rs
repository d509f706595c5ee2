//! Completions on the simulated disk: a pending write, sync, read or directory sync takes
//! effect on the live and durable images, or fails as the fault rates draw it.

use super::{Entry, Pending, PendingKind, SimDisk, ERRNO_ECANCELED, ERRNO_EIO, TEAR_UNIT};
use crate::disk::{BufferId, DiskCompletion, DiskOp, DiskToken, WriteSync};
use std::collections::BTreeMap;

impl SimDisk {
    pub(super) fn complete_one(&mut self, index: usize, out: &mut Vec<DiskCompletion>) {
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

    pub(super) fn complete_sync(&mut self, pending: &Pending) -> (DiskOp, i32) {
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
