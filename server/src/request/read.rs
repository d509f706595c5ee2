//! Reads in either protocol: starting them (after a fence if asked), retrying the ones the
//! engine was too busy for, and answering them as v2 or v3 READ responses.

use super::add::add_error_code;
use super::client::{token_new, Client};
use super::pending::{Pending, PendingOp, Token};
use super::{Bookie, Origin, Step};
use crate::limits;
use engine::uring::UringDisk;
use engine::{AddError, EntryId, Journal, LedgerId, ReadError, ReadOutcome, ReadTarget};
use wire::{code, v3 as wire_v3};

/// Appends the READ response of a pending read in its protocol; `code` is a v2 code and
/// `body` is sent only with EOK. A v3 reply carries the bookie's LAC (`maxLAC`) on success,
/// and a piggyback read of an entry this bookie lacks is EOK without a body (§5.4).
pub fn read_answer(
    journal: &Journal<UringDisk>,
    client: &mut Client,
    pending: &Pending,
    code: i32,
    body: &[u8],
) {
    let lac = journal
        .ledger(LedgerId(pending.ledger))
        .map(|ledger| ledger.last_add_confirmed);
    read_answer_lac(client, pending, code, body, lac);
}

/// [`read_answer`] with the ledger's LAC looked up by the caller (before a read borrows the
/// journal).
fn read_answer_lac(
    client: &mut Client,
    pending: &Pending,
    code: i32,
    body: &[u8],
    lac: Option<i64>,
) {
    let Some(v3) = pending.v3 else {
        client.respond_read_v2(pending, code, body);
        return;
    };
    let piggyback_missing = v3.piggyback.is_some() && code == code::ENOENTRY;
    let ok = code == code::EOK || piggyback_missing;
    // Stored bodies hold at least the two ids (16 bytes), so an empty one is "no entry read":
    // a piggyback reply whose LAC did not pass previousLAC carries only maxLAC.
    let with_body = code == code::EOK && !(v3.piggyback.is_some() && body.is_empty());
    let reply = wire_v3::ReadReply {
        status: wire_v3::status_from_v2(if ok { code::EOK } else { code }),
        ledger_id: pending.ledger,
        entry_id: pending.entry,
        body: with_body.then_some(body),
        max_lac: if ok { lac } else { None },
        lac_update_timestamp: (v3.piggyback.is_some() && with_body).then(timestamp_ms),
    };
    client.respond_v3_read(pending.reply_to, &v3.header, &reply);
}

/// A read, or a fencing read: the fence is staged first and the read runs once it is durable.
pub(crate) fn read_begin(
    bookie: &mut Bookie,
    client: &mut Client,
    origin: Origin,
    mut pending: Pending,
    master_key: Option<&wire::MasterKey>,
) -> Step {
    if master_key.is_some() {
        pending.op = PendingOp::Fence;
    }
    let Some(slot) = client.pending_insert(pending) else {
        return Step::Stall;
    };
    let token = token_new(client, origin, slot);
    let Some(master_key) = master_key else {
        read_start(bookie, client, token);
        return Step::Consumed;
    };
    match bookie
        .journal
        .fence(token.encode(), LedgerId(pending.ledger), master_key)
    {
        Ok(()) => Step::Consumed,
        Err(AddError::StagingFull) => {
            client.pending_remove(slot);
            Step::Stall
        }
        Err(error) => {
            read_answer(
                &bookie.journal,
                client,
                &pending,
                add_error_code(error),
                &[],
            );
            client.pending_remove(slot);
            Step::Consumed
        }
    }
}

/// Starts (or restarts) the read of a pending slot and answers it if memory has the entry.
pub fn read_start(bookie: &mut Bookie, client: &mut Client, token: Token) {
    let pending = client.pending(token.slot);
    let target = read_target(pending.entry);
    let lac = bookie
        .journal
        .ledger(LedgerId(pending.ledger))
        .map(|ledger| ledger.last_add_confirmed);
    match bookie
        .journal
        .read(token.encode(), LedgerId(pending.ledger), target)
    {
        Ok(ReadOutcome::Ready { body, .. }) => {
            bookie.stats.reads += 1;
            bookie
                .stats
                .read_answered(pending.received_at, code::EOK, body.len());
            read_answer_lac(client, &pending, code::EOK, body, lac);
            client.pending_remove(token.slot);
        }
        Ok(ReadOutcome::Pending) => client.pending_op_set(token.slot, PendingOp::Read),
        Err(ReadError::Busy) => read_retry_push(bookie, client, token, PendingOp::ReadRetry),
        Err(error) => {
            let code = read_error_code(error);
            bookie.stats.read_answered(pending.received_at, code, 0);
            read_answer(&bookie.journal, client, &pending, code, &[]);
            client.pending_remove(token.slot);
        }
    }
}

/// Entry -1 is "the last entry stored" (protocol §5.3).
pub fn read_target(entry: i64) -> ReadTarget {
    if entry == -1 {
        ReadTarget::Last
    } else {
        ReadTarget::Entry(EntryId(entry))
    }
}

/// Queues a read for the next turn, or answers ETOOMANYREQUESTS when the engine stays busy.
/// A v3 READ_LAC answers for itself: it calls [`read_retry_queue`].
pub fn read_retry_push(bookie: &mut Bookie, client: &mut Client, token: Token, op: PendingOp) {
    assert!(
        !matches!(
            op,
            PendingOp::ReadLacExplicitRetry | PendingOp::ReadLacLastRetry
        ),
        "READ_LAC retries are queued by read_retry_queue"
    );
    if read_retry_queue(bookie, client, token, op) {
        return;
    }
    match op {
        PendingOp::BatchRetry => bookie.batch_end(client, token.slot, code::ETOOMANYREQUESTS),
        _ => {
            let pending = client.pending(token.slot);
            let busy = code::ETOOMANYREQUESTS;
            read_answer(&bookie.journal, client, &pending, busy, &[]);
            client.pending_remove(token.slot);
        }
    }
}

/// Queues a read for the next turn (its slot then waits as `op`); false when the engine
/// stayed busy too often or the queue is full, and the caller answers ETOOMANYREQUESTS.
pub fn read_retry_queue(
    bookie: &mut Bookie,
    client: &mut Client,
    token: Token,
    op: PendingOp,
) -> bool {
    let waited = client.pending_attempt(token.slot, std::time::Instant::now());
    let queue_full = bookie.read_retry.len() >= limits::READ_RETRY_QUEUE_MAX;
    let patient = waited <= std::time::Duration::from_millis(limits::READ_RETRY_WAIT_MS_MAX);
    if patient && !queue_full {
        client.pending_op_set(token.slot, op);
        bookie.read_retry.push_back(token.encode());
        return true;
    }
    false
}

/// Engine read errors as v2 codes.
pub fn read_error_code(error: ReadError) -> i32 {
    match error {
        ReadError::NoLedger => code::ENOLEDGER,
        ReadError::NoEntry => code::ENOENTRY,
        ReadError::Busy => code::ETOOMANYREQUESTS,
        _ => code::EIO,
    }
}

/// Milliseconds since the Unix epoch, for `lacUpdateTimestamp`.
#[must_use]
pub fn timestamp_ms() -> i64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    now.map_or(0, |since| {
        i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
    })
}
