//! The scrubber's check of the checkpoint, once after open and as each cycle's last step: its
//! header (both checksums), its damaged-entry list, and the CRC32C of its ledger and
//! tombstone tables, streamed through the scrub buffer a read at a time. A checkpoint is
//! state the journal holds in memory too, so damage is repaired by writing a new one
//! (`Seal::checkpoint_request`), which replaces the damaged file by rename. From the creation
//! of a new checkpoint until its rename (or, after a failed write, until a later one is
//! renamed) the file id names the new file (the simulation found the check reading
//! half-written and failed ones), so the check waits, and a check that a new checkpoint
//! overtook is dropped: that one was just written from memory.

use super::super::{DamageFound, Event, Journal, TOKEN_SCRUB};
use crate::checkpoint::{self, CheckpointHeader, LEDGER_RECORD_SIZE, TOMBSTONE_SIZE};
use crate::constants::{SCRUB_READ_SIZE, SECTOR_SIZE};
use crate::disk::{Disk, SubmitError};
use crate::ids::FileId;
use crate::index_file::FileFormatError;
use crate::segment_check::Damage;
use crate::stdx::{le_u32, to_u64, to_usize};

/// Where the checkpoint's check is.
#[derive(Clone, Copy, Debug, Default)]
pub(in crate::journal) enum CheckpointCheck {
    /// Nothing to do until the next cycle ends.
    #[default]
    Idle,
    /// To be checked at the next chance.
    Due,
    /// Reading it: the durable checkpoint's generation when the check started (a new one
    /// replacing it ends the check: it was just written from memory), its header once read,
    /// the next byte to read, and the tables' CRC32C so far.
    Reading {
        generation: u64,
        header: Option<CheckpointHeader>,
        offset: u64,
        checksum_ledgers: u32,
        checksum_tombstones: u32,
    },
}

impl<D: Disk> Journal<D> {
    /// Submits the checkpoint check's next read; false when no check is due or running.
    pub(super) fn scrub_checkpoint_drive(&mut self) -> bool {
        if matches!(self.scrub.checkpoint, CheckpointCheck::Idle) {
            return false;
        }
        if !self.seal.checkpoint_published() {
            return true;
        }
        let (offset, length) = match self.scrub.checkpoint {
            CheckpointCheck::Idle => return false,
            CheckpointCheck::Due => {
                self.scrub.checkpoint = CheckpointCheck::Reading {
                    generation: self.seal.resume().generation,
                    header: None,
                    offset: 0,
                    checksum_ledgers: 0,
                    checksum_tombstones: 0,
                };
                (0, SECTOR_SIZE)
            }
            CheckpointCheck::Reading { header, offset, .. } => {
                let size = header.map_or(to_u64(SECTOR_SIZE), checkpoint_size);
                (
                    offset,
                    to_usize((size - offset).min(to_u64(SCRUB_READ_SIZE))),
                )
            }
        };
        let buffer = self.scrub.buffer;
        let file = FileId::Checkpoint;
        match self
            .disk
            .submit_read(TOKEN_SCRUB, file, offset, buffer, length)
        {
            Ok(()) => self.scrub.in_flight = Some((file, length)),
            Err(SubmitError::QueueFull) => {}
            // No checkpoint yet (a fresh journal), or it cannot be read now: the next cycle.
            Err(SubmitError::Io(_)) => self.scrub_checkpoint_idle(),
        }
        true
    }

    /// A read of the checkpoint check completed with `result` (`length` asked).
    pub(super) fn scrub_checkpoint_on_complete(&mut self, result: i32, length: usize) {
        let CheckpointCheck::Reading {
            generation,
            header,
            offset,
            checksum_ledgers,
            checksum_tombstones,
        } = self.scrub.checkpoint
        else {
            return;
        };
        if self.seal.resume().generation != generation || !self.seal.checkpoint_published() {
            // Replaced meanwhile by one written from memory: nothing left to check.
            self.scrub_checkpoint_idle();
            return;
        }
        if usize::try_from(result).ok() != Some(length) {
            self.stats.scrub_read_failures += 1;
            self.scrub_checkpoint_idle();
            return;
        }
        self.stats.scrub_bytes += to_u64(length);
        let bytes = &self.disk.buffer(self.scrub.buffer)[..length];
        let Some(header) = header else {
            // The header sector: its size follows from its counts (both checksummed).
            let size = checkpoint::file_size(le_u32(bytes, 24), le_u32(bytes, 40));
            let decoded = checkpoint::decode_header(bytes, size)
                .and_then(|header| checkpoint::decode_damaged(bytes).map(|_| header));
            match decoded {
                Ok(header) => {
                    self.scrub.checkpoint = CheckpointCheck::Reading {
                        generation,
                        header: Some(header),
                        offset: to_u64(SECTOR_SIZE),
                        checksum_ledgers: 0,
                        checksum_tombstones: 0,
                    };
                    self.scrub_checkpoint_end_if_read();
                }
                Err(error) => self.scrub_checkpoint_damaged(error),
            }
            return;
        };
        let ledgers = table_range(
            checkpoint::LEDGER_TABLE_OFFSET,
            header.ledger_count,
            LEDGER_RECORD_SIZE,
        );
        let tombstones = table_range(
            checkpoint::tombstone_table_offset(header.ledger_count),
            header.tombstone_count,
            TOMBSTONE_SIZE,
        );
        let chunk = offset..offset + to_u64(length);
        self.scrub.checkpoint = CheckpointCheck::Reading {
            generation,
            header: Some(header),
            offset: chunk.end,
            checksum_ledgers: crc_append(checksum_ledgers, bytes, &chunk, &ledgers),
            checksum_tombstones: crc_append(checksum_tombstones, bytes, &chunk, &tombstones),
        };
        self.scrub_checkpoint_end_if_read();
    }

    /// With the whole file read, compares the tables' checksums with the header's.
    fn scrub_checkpoint_end_if_read(&mut self) {
        let CheckpointCheck::Reading {
            header: Some(header),
            offset,
            checksum_ledgers,
            checksum_tombstones,
            ..
        } = self.scrub.checkpoint
        else {
            return;
        };
        if offset < checkpoint_size(header) {
            return;
        }
        if checksum_ledgers != header.checksum_ledgers
            || checksum_tombstones != header.checksum_tombstones
        {
            self.scrub_checkpoint_damaged(FileFormatError::Checksum);
        } else {
            self.scrub_checkpoint_idle();
        }
    }

    /// The check is over; if it was the cycle's last step, the cycle is complete.
    fn scrub_checkpoint_idle(&mut self) {
        self.scrub.checkpoint = CheckpointCheck::Idle;
        if std::mem::take(&mut self.scrub.cycle_ending) {
            self.scrub_cycle_complete();
        }
    }

    /// The checkpoint is damaged: reported, and a new one asked for (written from memory, it
    /// replaces the damaged file by rename).
    fn scrub_checkpoint_damaged(&mut self, error: FileFormatError) {
        self.scrub_checkpoint_idle();
        self.stats.scrub_damage_index += 1;
        self.events.push(Event::Damage(DamageFound {
            file: FileId::Checkpoint,
            position: None,
            damage: Damage::Checkpoint(error),
            entry: None,
        }));
        self.seal.checkpoint_request();
    }
}

fn checkpoint_size(header: CheckpointHeader) -> u64 {
    checkpoint::file_size(header.ledger_count, header.tombstone_count)
}

/// The bytes of a table of `count` items of `size` bytes from `offset`.
fn table_range(offset: u64, count: u32, size: usize) -> std::ops::Range<u64> {
    offset..offset + u64::from(count) * to_u64(size)
}

/// `checksum` extended with the part of `table` that `chunk` (the file's bytes `bytes`)
/// holds.
fn crc_append(
    checksum: u32,
    bytes: &[u8],
    chunk: &std::ops::Range<u64>,
    table: &std::ops::Range<u64>,
) -> u32 {
    let start = chunk.start.max(table.start);
    let end = chunk.end.min(table.end);
    if start >= end {
        return checksum;
    }
    let from = to_usize(start - chunk.start);
    let to = to_usize(end - chunk.start);
    crc32c::crc32c_append(checksum, &bytes[from..to])
}
