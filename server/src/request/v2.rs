//! What each v2 request does (protocol §2): ADD_ENTRY, READ_ENTRY (fencing too), AUTH and
//! BATCH_READ_ENTRY, on the journal operations, pending table and read paths this module's
//! siblings share with v3.

use super::add::add_stage;
use super::batch::{batch_advance, batch_fence, batch_limits_set, batch_new};
use super::client::{token_new, Client};
use super::forward::forward;
use super::pending::{Pending, PendingOp};
use super::read::read_begin;
use super::{Bookie, Origin, Step};
use wire::{code, Request, FLAG_DO_FENCING, FLAG_RECOVERY_ADD};

/// Handles one decoded request of `client`. `frame` is its raw bytes, for forwarding.
pub fn handle(
    bookie: &mut Bookie,
    client: &mut Client,
    origin: Origin,
    request: Request<'_>,
    frame: &[u8],
) -> Step {
    if !client.has_room() {
        return Step::Stall;
    }
    let header = request.header();
    if header.version > wire::PROTOCOL_VERSION_CURRENT {
        respond_bad_version(client, origin, &request);
        return Step::Consumed;
    }
    match request {
        Request::Auth { .. } => {
            client.respond_auth(origin.reference);
            Step::Consumed
        }
        Request::Add {
            header,
            master_key,
            ledger_id,
            entry_id,
            body,
        } => {
            if let Some(step) = forward(bookie, client, origin, ledger_id, true, frame) {
                return step;
            }
            let pending = pending_new(PendingOp::Add, header.version, ledger_id, entry_id, origin);
            let recovery = header.flags & FLAG_RECOVERY_ADD != 0;
            add_stage(bookie, client, origin, pending, master_key, body, recovery)
        }
        Request::Read {
            header,
            ledger_id,
            entry_id,
            master_key,
        } => {
            let fencing = header.flags & FLAG_DO_FENCING != 0;
            let pending = pending_new(PendingOp::Read, header.version, ledger_id, entry_id, origin);
            if fencing && master_key.is_none() {
                // Only pre-v2 frames can fence without a key (v2 requires it in the frame).
                client.respond_read_v2(&pending, code::EUA, &[]);
                return Step::Consumed;
            }
            if let Some(step) = forward(bookie, client, origin, ledger_id, fencing, frame) {
                return step;
            }
            read_begin(bookie, client, origin, pending, master_key)
        }
        Request::BatchRead { .. } => batch_read_handle(bookie, client, origin, request, frame),
    }
}

fn pending_new(op: PendingOp, version: u8, ledger: i64, entry: i64, origin: Origin) -> Pending {
    Pending {
        op,
        version,
        busy_since: None,
        ledger,
        entry,
        reply_to: origin.reference,
        v3: None,
        received_at: origin.received_at,
    }
}

/// Versions above 2 get EBADVERSION with the request's ids (`isVersionCompatible`).
fn respond_bad_version(client: &mut Client, origin: Origin, request: &Request<'_>) {
    respond_error(client, origin, request, code::EBADVERSION);
}

/// A connection not authorized (docs/security.md) gets EUA with the request's ids, as the
/// Java bookie's `AuthHandler` answers v2 requests before authentication.
pub fn refuse_unauthorized(client: &mut Client, origin: Origin, request: &Request<'_>) {
    respond_error(client, origin, request, code::EUA);
}

/// Answers `request` with the error `bad` and its own ids; AUTH gets the AUTH reply.
fn respond_error(client: &mut Client, origin: Origin, request: &Request<'_>, bad: i32) {
    let version = request.header().version;
    match *request {
        Request::Add {
            ledger_id,
            entry_id,
            ..
        } => {
            client.respond_add(origin.reference, version, bad, ledger_id, entry_id);
        }
        Request::Read {
            ledger_id,
            entry_id,
            ..
        } => {
            let pending = pending_new(PendingOp::Read, version, ledger_id, entry_id, origin);
            client.respond_read_v2(&pending, bad, &[]);
        }
        Request::BatchRead {
            ledger_id,
            start_entry_id,
            request_id,
            ..
        } => {
            let batch = batch_new(0, version, ledger_id, start_entry_id, request_id, origin);
            client.respond_batch_error(&batch, bad);
        }
        // AUTH has no ids to answer with; it is answered like any AUTH.
        Request::Auth { .. } => client.respond_auth(origin.reference),
    }
}

/// BATCH_READ_ENTRY (protocol §2.7): up to `BATCH_READS_PER_CLIENT_MAX` at a time per client.
fn batch_read_handle(
    bookie: &mut Bookie,
    client: &mut Client,
    origin: Origin,
    request: Request<'_>,
    frame: &[u8],
) -> Step {
    let Request::BatchRead {
        header,
        ledger_id,
        start_entry_id,
        request_id,
        max_count,
        max_size,
        master_key,
    } = request
    else {
        unreachable!("batch_read_handle takes batch reads")
    };
    let mut batch = batch_new(
        0,
        header.version,
        ledger_id,
        start_entry_id,
        request_id,
        origin,
    );
    let fencing = header.flags & FLAG_DO_FENCING != 0;
    if fencing && master_key.is_none() {
        client.respond_batch_error(&batch, code::EUA);
        return Step::Consumed;
    }
    if let Some(step) = forward(bookie, client, origin, ledger_id, fencing, frame) {
        return step;
    }
    if !client.batch_has_room(&bookie.batch_buffers) {
        return Step::Stall;
    }
    let op = if fencing {
        PendingOp::FenceBatch
    } else {
        PendingOp::Batch
    };
    let pending = pending_new(op, header.version, ledger_id, start_entry_id, origin);
    let Some(slot) = client.pending_insert(pending) else {
        return Step::Stall;
    };
    batch.slot = slot;
    batch_limits_set(&mut batch, max_count, max_size);
    let shared_free = bookie.batch_buffers.len();
    client.batch_response_begin(batch, &mut bookie.batch_buffers);
    if bookie.batch_buffers.len() < shared_free {
        bookie.stats.batch_reads_side_by_side += 1;
    }
    bookie.stats.reads += 1;
    let token = token_new(client, origin, slot);
    match master_key {
        Some(master_key) => batch_fence(bookie, client, token, master_key),
        None => {
            batch_advance(bookie, client, token);
            Step::Consumed
        }
    }
}
