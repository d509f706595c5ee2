//! Batch reads (BATCH_READ_ENTRY, protocol §2.7): up to `BATCH_READS_PER_CLIENT_MAX` per
//! client at a time, each read entry by entry into its own response until a count, size or
//! read ends it.

use super::add::add_error_code;
use super::client::{Batch, Client};
use super::pending::{PendingOp, Token};
use super::read::{read_error_code, read_retry_push, read_target};
use super::{Bookie, Origin, Step};
use crate::limits;
use engine::{AddError, LedgerId, ReadError, ReadOutcome};
use wire::code;

pub fn batch_new(
    slot: u32,
    version: u8,
    ledger: i64,
    start_entry: i64,
    request_id: i64,
    origin: Origin,
) -> Batch {
    Batch {
        slot,
        version,
        ledger,
        start_entry,
        request_id,
        count: 0,
        count_max: limits::BATCH_READ_ENTRIES_MAX,
        size: wire::BATCH_READ_RESPONSE_FIXED_SIZE,
        size_limit: limits::BATCH_READ_BYTES_MAX,
        reply_to: origin.reference,
    }
}

/// `maxCount <= 0` means no count limit (BATCH_READ_ENTRIES_MAX still bounds the loop); the
/// size limit is `min(maxSize, BATCH_READ_BYTES_MAX)` (protocol §2.7).
pub fn batch_limits_set(batch: &mut Batch, max_count: i32, max_size: i64) {
    if let Some(count) = usize::try_from(max_count).ok().filter(|&count| count > 0) {
        batch.count_max = count.min(limits::BATCH_READ_ENTRIES_MAX);
    }
    let size_limit = usize::try_from(max_size.max(0)).unwrap_or(usize::MAX);
    batch.size_limit = size_limit.min(limits::BATCH_READ_BYTES_MAX);
}

/// Stages the fence of a fencing batch read; the batch runs once it is durable.
pub fn batch_fence(
    bookie: &mut Bookie,
    client: &mut Client,
    token: Token,
    master_key: &wire::MasterKey,
) -> Step {
    let batch = client.batch(token.slot);
    match bookie
        .journal
        .fence(token.encode(), LedgerId(batch.ledger), master_key)
    {
        Ok(()) => Step::Consumed,
        Err(AddError::StagingFull) => {
            client.batch_abandon(token.slot, &mut bookie.batch_buffers);
            Step::Stall
        }
        Err(error) => {
            bookie.batch_end(client, token.slot, add_error_code(error));
            Step::Consumed
        }
    }
}

/// Reads the batch's next entries until one must come from disk, the batch is full, or a read
/// fails (the first failure is the reply's code; a later one ends the batch with EOK).
pub fn batch_advance(bookie: &mut Bookie, client: &mut Client, token: Token) {
    // Bounded: every pass either adds an entry (at most count_max) or returns.
    loop {
        let batch = client.batch(token.slot);
        let entry = i64::try_from(batch.count)
            .ok()
            .and_then(|n| batch.start_entry.checked_add(n));
        let (Some(entry), true) = (entry, batch.count < batch.count_max) else {
            bookie.batch_end(client, token.slot, code::EOK);
            return;
        };
        match bookie
            .journal
            .read(token.encode(), LedgerId(batch.ledger), read_target(entry))
        {
            Ok(ReadOutcome::Ready { body, .. }) => {
                if !client.batch_push(token.slot, body) {
                    bookie.batch_end(client, token.slot, code::EOK);
                    return;
                }
            }
            Ok(ReadOutcome::Pending) => {
                client.pending_op_set(token.slot, PendingOp::Batch);
                return;
            }
            Err(ReadError::Busy) => {
                read_retry_push(bookie, client, token, PendingOp::BatchRetry);
                return;
            }
            Err(error) => {
                bookie.batch_end(client, token.slot, read_error_code(error));
                return;
            }
        }
    }
}
