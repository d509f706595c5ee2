//! Compaction's batches: the records that come next in S and fit the copy buffer, placed in
//! (ledger, entry) order within the batch, and re-headed for their positions in the copy.

use super::{record_size_of, CopyItem, Job, Phase};
use crate::constants::{COMPACTION_BATCH_RECORDS_MAX, SECTOR_SIZE};
use crate::ids::{Location, Position, Sequence};
use crate::record;
use crate::stdx::{align_up_u64, to_u64, to_usize};

/// Puts the held slots in the order of their records in S, the order batches read S in.
pub(super) fn order_by_source(job: &mut Job) {
    job.order = (0..job.slots.len())
        .filter(|&slot| job.slots[slot].is_held())
        .map(|slot| u32::try_from(slot).expect("slots of one segment fit u32"))
        .collect();
    let slots = &job.slots;
    job.order
        .sort_unstable_by_key(|&slot| slots[slot as usize].position);
    job.slot_next = 0;
}

/// Fills the next batch: the records that come next in S and fit the copy buffer
/// (`buffer_size` bytes, `Config::compaction_buffer_size`) after what it holds. They are placed in (ledger, entry) order within the batch, so S is read once, in
/// order, and each ledger's entries of a batch end up contiguous in the copy (a batch of a
/// segment written by 50 ledgers holds about 1.3 MB of each). Returns the batch sorted by
/// where its records are in S.
pub(super) fn batch_plan(job: &mut Job, buffer_size: usize) -> Phase {
    job.batch.clear();
    let mut bytes = job.buffer_length;
    while job.slot_next < job.order.len() && job.batch.len() < COMPACTION_BATCH_RECORDS_MAX {
        let slot = job.order[job.slot_next];
        let held = job.slots[slot as usize];
        let size = record_size_of(&held);
        if bytes + size > buffer_size {
            break;
        }
        job.batch.push(CopyItem {
            source: held.position,
            slot,
            destination: 0,
        });
        bytes += size;
        job.slot_next += 1;
    }
    assert!(
        !job.batch.is_empty(),
        "a batch is planned only while a held slot is left"
    );
    job.batch.sort_unstable_by_key(|item| item.slot);
    let mut destination = job.buffer_length;
    for item in &mut job.batch {
        item.destination = u32::try_from(destination).expect("the buffer fits u32");
        destination += record_size_of(&job.slots[item.slot as usize]);
    }
    job.batch.sort_unstable_by_key(|item| item.source);
    Phase::Gather { next: 0 }
}

/// Every record of the batch is in the buffer: give each its new header (position, sequence,
/// chain) in slot order, and write the whole sectors (everything, padded, after the last).
pub(super) fn batch_finish(job: &mut Job, out: &mut [u8]) -> Phase {
    job.batch.sort_unstable_by_key(|item| item.slot);
    let mut commit_first = true;
    for item in &job.batch {
        let slot = &mut job.slots[item.slot as usize];
        let destination = to_usize(u64::from(item.destination));
        let size = record_size_of(slot);
        let position = job.buffer_position + u64::from(item.destination);
        let location = Location {
            segment: job.segment,
            position: Position(position),
        };
        job.checksum_previous = record::relocate(
            &mut out[destination..destination + size],
            job.sequence_next,
            job.checksum_previous,
            location,
            commit_first,
        );
        commit_first = false;
        job.sequence_next = Sequence(job.sequence_next.0 + 1);
        slot.position = u32::try_from(position).expect("segment positions fit u32");
    }
    let end = job.batch.last().map_or(job.buffer_length, |item| {
        to_usize(u64::from(item.destination)) + record_size_of(&job.slots[item.slot as usize])
    });
    job.buffer_length = end;
    let last = job.slot_next == job.order.len();
    if last {
        let padded = to_usize(align_up_u64(to_u64(end), to_u64(SECTOR_SIZE)));
        out[end..padded].fill(0);
        job.buffer_length = padded;
        Phase::Write {
            length: padded,
            written: 0,
        }
    } else {
        let length = end / SECTOR_SIZE * SECTOR_SIZE;
        assert!(length > 0, "a batch that is not the last fills the buffer");
        Phase::Write { length, written: 0 }
    }
}
