//! Power loss on the simulated disk: what of the writes and file operations not yet durable
//! survives (in full, not at all, or torn), and the disk as it comes back.

use super::{PendingKind, SimDisk, SimRng, TEAR_UNIT};

impl SimDisk {
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
