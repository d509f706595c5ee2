//! What each v3 request does (protocol §3.3, §3.4, §5): the same journal operations, pending
//! table and read paths as v2, answered as v3 `Response`s, plus what only v3 has: deferred-sync
//! adds, WRITE_LAC/READ_LAC, FORCE_LEDGER, long-poll and piggyback reads, GET_BOOKIE_INFO and
//! GET_LIST_OF_ENTRIES_OF_LEDGER.
//!
//! Requests for a ledger another shard owns are forwarded as raw frames, exactly like v2
//! (`forward`); the owner answers in v3 because the frame says so. GET_BOOKIE_INFO and AUTH
//! need no ledger and are answered where they arrive.
//!
//! Deliberate simplifications, each a valid answer for the Java client:
//! - `priority` is parsed and not acted on, like v2's FLAG_HIGH_PRIORITY: the engine is
//!   read-only only when no segment can be created, and then nothing can be written anyway.
//! - `lacUpdateTimestamp` (piggyback) is the reply's time: no per-ledger LAC time is kept.
//! - A master key that is not 20 bytes is EUA (every real key is a SHA-1).
//! - READ_LAC runs one at a time per client (its explicit-LAC body waits in the client), and
//!   copies both bodies into the prost reply: it is rare, unlike READ.
//! - A long poll waits at most `LONG_POLL_TIMEOUT_MS_MAX`, and is answered at once when
//!   `PARKED_READS_MAX` polls are parked already.

use super::add::{add_error_code, add_stage};
use super::client::{token_new, Client};
use super::forward::forward;
use super::pending::{Pending, PendingOp, PendingV3, Token};
use super::read::{read_answer, read_begin, read_error_code, read_retry_queue, read_start};
use super::{Bookie, Origin, Step};
use crate::limits;
use engine::{AddError, LedgerId, ReadError, ReadOutcome, ReadTarget};
use std::time::{Duration, Instant};
use wire::code;
use wire::v3::{self as wire_v3, proto, Body, Status};

/// A parked long-poll read (protocol §5.4).
#[derive(Clone, Copy, Debug)]
pub struct LongPoll {
    /// The pending read's token.
    pub token: u64,
    /// When it is served anyway.
    pub deadline: Instant,
    /// The LAC it waits to see passed.
    pub previous_lac: i64,
}

/// Handles one decoded v3 request of `client`. `frame` is its raw bytes, for forwarding.
pub fn handle(
    bookie: &mut Bookie,
    client: &mut Client,
    origin: Origin,
    request: wire_v3::Request<'_>,
    frame: &[u8],
) -> Step {
    if !client.has_room() {
        return Step::Stall;
    }
    let reply_to = origin.reference;
    if request.header.version != wire_v3::PROTOCOL_VERSION_THREE {
        client.respond_v3_status(reply_to, &request, Status::Ebadversion);
        return Step::Consumed;
    }
    match request.body {
        Body::Add(add) => add_handle(bookie, client, origin, &request, add, frame),
        Body::Read(read) => read_handle(bookie, client, origin, &request, read, frame),
        Body::WriteLac(write) => write_lac_handle(bookie, client, origin, &request, write, frame),
        Body::ReadLac { ledger_id } => {
            if let Some(step) = forward(bookie, client, origin, ledger_id, false, frame) {
                return step;
            }
            read_lac_begin(bookie, client, origin, &request, ledger_id)
        }
        Body::ForceLedger { ledger_id } => {
            if let Some(step) = forward(bookie, client, origin, ledger_id, false, frame) {
                return step;
            }
            force_handle(bookie, client, origin, &request, ledger_id)
        }
        Body::ListOfEntries { ledger_id } => {
            if let Some(step) = forward(bookie, client, origin, ledger_id, false, frame) {
                return step;
            }
            list_of_entries(bookie, client, origin, &request, ledger_id);
            Step::Consumed
        }
        Body::GetBookieInfo { requested } => {
            bookie_info(bookie, client, origin, &request, requested);
            Step::Consumed
        }
        Body::Auth => {
            let response = proto::Response {
                header: wire_v3::response_header(&request.header),
                status: Status::Eok as i32,
                auth_response: Some(proto::AuthMessage {
                    auth_plugin_name: wire::AUTH_DISABLED_PLUGIN_NAME.to_owned(),
                    payload: Vec::new(),
                }),
                ..Default::default()
            };
            client.respond_v3(reply_to, &response);
            Step::Consumed
        }
        // TLS is not configured (or already on, `tls/security.rs`): EBADREQ (§3.4).
        // Unsupported or missing sub-request: EBADREQ.
        Body::StartTls | Body::Missing | Body::Unsupported => {
            client.respond_v3_status(reply_to, &request, Status::Ebadreq);
            Step::Consumed
        }
    }
}

/// A connection not authorized (docs/security.md) gets its header back with EUA, as the
/// Java bookie's `AuthHandler` answers v3 requests before authentication.
pub fn refuse_unauthorized(client: &mut Client, origin: Origin, request: &wire_v3::Request<'_>) {
    client.respond_v3_status(origin.reference, request, Status::Eua);
}

/// Answers START_TLS with EOK and an empty `startTLSResponse` (to be sent in plaintext,
/// after any answer still queued) when the connection has no request in flight, and returns
/// true: from the next byte on it speaks TLS. A START_TLS among other requests gets EBADREQ (the real client sends it first and
/// alone), and false.
pub fn start_tls_answer(
    client: &mut Client,
    origin: Origin,
    request: &wire_v3::Request<'_>,
) -> bool {
    if !client.is_idle() {
        client.respond_v3_status(origin.reference, request, Status::Ebadreq);
        return false;
    }
    client.respond_v3_status(origin.reference, request, Status::Eok);
    true
}

fn pending_v3(op: PendingOp, ledger: i64, entry: i64, origin: Origin, v3: PendingV3) -> Pending {
    Pending {
        op,
        version: 0,
        busy_since: None,
        ledger,
        entry,
        reply_to: origin.reference,
        v3: Some(v3),
        received_at: origin.received_at,
    }
}

fn add_handle(
    bookie: &mut Bookie,
    client: &mut Client,
    origin: Origin,
    request: &wire_v3::Request<'_>,
    add: wire_v3::AddRequest<'_>,
    frame: &[u8],
) -> Step {
    let reply_to = origin.reference;
    let Some(master_key) = wire_v3::master_key(add.master_key) else {
        client.respond_v3_status(reply_to, request, Status::Eua);
        return Step::Consumed;
    };
    // The journal keys the entry by the request's ids and stores the body verbatim; a body
    // whose ids differ would be served under the wrong ids (§4.4: EBADREQ is allowed).
    let ids = add.body.get(..16).map(|ids| {
        let ledger = i64::from_be_bytes(ids[..8].try_into().expect("8 bytes"));
        let entry = i64::from_be_bytes(ids[8..].try_into().expect("8 bytes"));
        (ledger, entry)
    });
    if ids != Some((add.ledger_id, add.entry_id)) {
        client.respond_v3_status(reply_to, request, Status::Ebadreq);
        return Step::Consumed;
    }
    if let Some(step) = forward(bookie, client, origin, add.ledger_id, true, frame) {
        return step;
    }
    let op = if add.write_flags & wire_v3::WRITE_FLAG_DEFERRED_SYNC != 0 {
        PendingOp::AddDeferred
    } else {
        PendingOp::Add
    };
    let v3 = PendingV3 {
        header: request.header,
        piggyback: None,
    };
    let pending = pending_v3(op, add.ledger_id, add.entry_id, origin, v3);
    let recovery = add.flag == Some(wire_v3::ADD_FLAG_RECOVERY_ADD);
    add_stage(
        bookie, client, origin, pending, master_key, add.body, recovery,
    )
}

fn read_handle(
    bookie: &mut Bookie,
    client: &mut Client,
    origin: Origin,
    request: &wire_v3::Request<'_>,
    read: wire_v3::ReadRequest<'_>,
    frame: &[u8],
) -> Step {
    let reply_to = origin.reference;
    let fence = read.flag == Some(wire_v3::READ_FLAG_FENCE_LEDGER);
    let piggyback = read.flag == Some(wire_v3::READ_FLAG_ENTRY_PIGGYBACK);
    let master_key = match (fence, read.master_key.and_then(wire_v3::master_key)) {
        (false, _) => None,
        (true, Some(key)) => Some(key),
        // §5.2 step 1: a fence without a (valid) key is EUA.
        (true, None) => {
            client.respond_v3_status(reply_to, request, Status::Eua);
            return Step::Consumed;
        }
    };
    // Piggyback needs previousLAC and entry -1 (§5.4).
    if piggyback && (read.previous_lac.is_none() || read.entry_id != -1) {
        client.respond_v3_status(reply_to, request, Status::Ebadreq);
        return Step::Consumed;
    }
    if let Some(step) = forward(bookie, client, origin, read.ledger_id, fence, frame) {
        return step;
    }
    let v3 = PendingV3 {
        header: request.header,
        piggyback: read.previous_lac.filter(|_| piggyback && !fence),
    };
    let pending = pending_v3(PendingOp::Read, read.ledger_id, read.entry_id, origin, v3);
    if fence {
        return read_begin(bookie, client, origin, pending, master_key);
    }
    let long_poll = read.previous_lac.zip(read.time_out);
    let Some(slot) = client.pending_insert(pending) else {
        return Step::Stall;
    };
    let token = token_new(client, origin, slot);
    match long_poll {
        Some((previous_lac, time_out)) => {
            long_poll_begin(bookie, client, token, previous_lac, time_out)
        }
        None => read_serve(bookie, client, token),
    }
    Step::Consumed
}

/// Parks a long poll while the LAC has not passed `previous_lac`; serves it otherwise, or
/// when the parked list is full (an immediate answer is a valid one: the poll timed out).
fn long_poll_begin(
    bookie: &mut Bookie,
    client: &mut Client,
    token: Token,
    previous_lac: i64,
    time_out_ms: i64,
) {
    let pending = client.pending(token.slot);
    let Some(ledger) = bookie.journal.ledger(LedgerId(pending.ledger)) else {
        read_answer(&bookie.journal, client, &pending, code::ENOLEDGER, &[]);
        client.pending_remove(token.slot);
        return;
    };
    let passed = ledger.last_add_confirmed > previous_lac || ledger.fenced;
    if passed || bookie.parked.len() >= limits::PARKED_READS_MAX {
        read_serve(bookie, client, token);
        return;
    }
    let time_out_ms = u64::try_from(time_out_ms.max(0)).expect("non-negative");
    let time_out = Duration::from_millis(time_out_ms.min(limits::LONG_POLL_TIMEOUT_MS_MAX));
    assert!(
        bookie.parked.len() < bookie.parked.capacity(),
        "parked is preallocated"
    );
    let deadline = Instant::now() + time_out;
    bookie.parked.push(LongPoll {
        token: token.encode(),
        deadline,
        previous_lac,
    });
    let next = bookie
        .parked_deadline_next
        .map_or(deadline, |next| next.min(deadline));
    bookie.parked_deadline_next = Some(next);
    client.pending_op_set(token.slot, PendingOp::Parked);
}

/// True when a parked read must be served now: its ledger's LAC passed `previous_lac`, the
/// ledger was fenced (waiters wake as though the LAC were `i64::MAX`, §5.2), it timed out,
/// or the shard is stopping.
#[must_use]
pub fn parked_due(
    bookie: &Bookie,
    parked: &LongPoll,
    ledger: i64,
    now: Instant,
    stopping: bool,
) -> bool {
    let state = bookie.journal.ledger(LedgerId(ledger));
    let passed =
        state.is_none_or(|state| state.last_add_confirmed > parked.previous_lac || state.fenced);
    passed || now >= parked.deadline || stopping
}

/// Serves a (plain, long-poll or piggyback) v3 read now. Piggyback (§5.4): if the LAC passed
/// `previousLAC`, read `previousLAC + 1` and answer with that id; otherwise EOK with only
/// `maxLAC`.
pub fn read_serve(bookie: &mut Bookie, client: &mut Client, token: Token) {
    let pending = client.pending(token.slot);
    let Some(previous_lac) = pending.v3.and_then(|v3| v3.piggyback) else {
        read_start(bookie, client, token);
        return;
    };
    let lac = bookie
        .journal
        .ledger(LedgerId(pending.ledger))
        .map(|ledger| ledger.last_add_confirmed);
    match lac {
        None => {
            read_answer(&bookie.journal, client, &pending, code::ENOLEDGER, &[]);
            client.pending_remove(token.slot);
        }
        Some(lac) if lac > previous_lac => {
            client.pending_entry_set(token.slot, previous_lac + 1);
            read_start(bookie, client, token);
        }
        Some(_) => {
            read_answer(&bookie.journal, client, &pending, code::EOK, &[]);
            client.pending_remove(token.slot);
        }
    }
}

fn write_lac_handle(
    bookie: &mut Bookie,
    client: &mut Client,
    origin: Origin,
    request: &wire_v3::Request<'_>,
    write: wire_v3::WriteLacRequest<'_>,
    frame: &[u8],
) -> Step {
    let Some(master_key) = wire_v3::master_key(write.master_key) else {
        client.respond_v3_status(origin.reference, request, Status::Eua);
        return Step::Consumed;
    };
    if let Some(step) = forward(bookie, client, origin, write.ledger_id, true, frame) {
        return step;
    }
    let v3 = PendingV3 {
        header: request.header,
        piggyback: None,
    };
    let pending = pending_v3(PendingOp::WriteLac, write.ledger_id, -1, origin, v3);
    let Some(slot) = client.pending_insert(pending) else {
        return Step::Stall;
    };
    let token = token_new(client, origin, slot).encode();
    let ledger = LedgerId(write.ledger_id);
    match bookie
        .journal
        .write_lac(token, ledger, master_key, write.body)
    {
        Ok(()) => Step::Consumed,
        Err(AddError::StagingFull) => {
            client.pending_remove(slot);
            Step::Stall
        }
        Err(error) => {
            client.pending_remove(slot);
            respond_durable(client, &pending, add_error_code(error));
            Step::Consumed
        }
    }
}

fn force_handle(
    bookie: &mut Bookie,
    client: &mut Client,
    origin: Origin,
    request: &wire_v3::Request<'_>,
    ledger_id: i64,
) -> Step {
    let v3 = PendingV3 {
        header: request.header,
        piggyback: None,
    };
    let pending = pending_v3(PendingOp::Force, ledger_id, -1, origin, v3);
    let Some(slot) = client.pending_insert(pending) else {
        return Step::Stall;
    };
    let token = token_new(client, origin, slot).encode();
    match bookie.journal.force(token, LedgerId(ledger_id)) {
        Ok(()) => Step::Consumed,
        Err(AddError::StagingFull) => {
            client.pending_remove(slot);
            Step::Stall
        }
        // Nothing was ever written here for the ledger: everything written is durable.
        Err(AddError::NoLedger) => {
            client.pending_remove(slot);
            respond_durable(client, &pending, code::EOK);
            Step::Consumed
        }
        Err(error) => {
            client.pending_remove(slot);
            respond_durable(client, &pending, add_error_code(error));
            Step::Consumed
        }
    }
}

/// Answers a v3 request that waited for the journal (`Durable`, `Written` or `Failed`):
/// ADD, WRITE_LAC or FORCE_LEDGER. `code` is a v2 code.
pub fn respond_durable(client: &mut Client, pending: &Pending, code: i32) {
    let v3 = pending.v3.expect("a v3 request");
    let status = wire_v3::status_from_v2(code);
    let mut response = proto::Response {
        header: wire_v3::response_header(&v3.header),
        status,
        ..Default::default()
    };
    match pending.op {
        PendingOp::Add | PendingOp::AddDeferred => {
            client.respond_add_pending(pending, code);
            return;
        }
        PendingOp::WriteLac => {
            response.write_lac_response = Some(proto::WriteLacResponse {
                status,
                ledger_id: pending.ledger,
            });
        }
        PendingOp::Force => {
            response.force_ledger_response = Some(proto::ForceLedgerResponse {
                status,
                ledger_id: pending.ledger,
            });
        }
        op => unreachable!("journal completion for a v3 {op:?}"),
    }
    client.respond_v3(pending.reply_to, &response);
}

fn bookie_info(
    bookie: &Bookie,
    client: &mut Client,
    origin: Origin,
    request: &wire_v3::Request<'_>,
    requested: i64,
) {
    let Ok(space) = engine::uring::disk_space(&bookie.data_dir) else {
        client.respond_v3_status(origin.reference, request, Status::Eio);
        return;
    };
    let bytes = |value: u64| i64::try_from(value).unwrap_or(i64::MAX);
    let info = proto::GetBookieInfoResponse {
        status: Status::Eok as i32,
        total_disk_capacity: (requested & wire_v3::BOOKIE_INFO_TOTAL_DISK_CAPACITY != 0)
            .then(|| bytes(space.total_bytes)),
        free_disk_space: (requested & wire_v3::BOOKIE_INFO_FREE_DISK_SPACE != 0)
            .then(|| bytes(space.free_bytes)),
        ..Default::default()
    };
    let response = proto::Response {
        header: wire_v3::response_header(&request.header),
        status: Status::Eok as i32,
        get_bookie_info_response: Some(info),
        ..Default::default()
    };
    client.respond_v3(origin.reference, &response);
}

fn list_of_entries(
    bookie: &Bookie,
    client: &mut Client,
    origin: Origin,
    request: &wire_v3::Request<'_>,
    ledger_id: i64,
) {
    let Some(ledger) = bookie.journal.ledger(LedgerId(ledger_id)) else {
        client.respond_v3_status(origin.reference, request, Status::Enoledger);
        return;
    };
    // Rare (auditor, replication checks): the availability bytes are built in a fresh Vec.
    let availability =
        wire_v3::availability_of_entries(ledger.entries_known().into_iter().map(|entry| entry.0));
    let response = proto::Response {
        header: wire_v3::response_header(&request.header),
        status: Status::Eok as i32,
        get_list_of_entries_of_ledger_response: Some(proto::GetListOfEntriesOfLedgerResponse {
            status: Status::Eok as i32,
            ledger_id,
            availability_of_entries_of_ledger: Some(availability),
        }),
        ..Default::default()
    };
    client.respond_v3(origin.reference, &response);
}

// READ_LAC (§5.5): the explicit-LAC body, then the last entry's body; one per client at a time.

fn read_lac_begin(
    bookie: &mut Bookie,
    client: &mut Client,
    origin: Origin,
    request: &wire_v3::Request<'_>,
    ledger_id: i64,
) -> Step {
    if bookie.journal.ledger(LedgerId(ledger_id)).is_none() {
        client.respond_v3_status(origin.reference, request, Status::Enoledger);
        return Step::Consumed;
    }
    if client.read_lac.is_some() {
        return Step::Stall;
    }
    let v3 = PendingV3 {
        header: request.header,
        piggyback: None,
    };
    let pending = pending_v3(PendingOp::ReadLacExplicit, ledger_id, -1, origin, v3);
    let Some(slot) = client.pending_insert(pending) else {
        return Step::Stall;
    };
    client.read_lac = Some(slot);
    client.read_lac_found = false;
    read_lac_advance(bookie, client, token_new(client, origin, slot));
    Step::Consumed
}

/// Runs the READ_LAC's current phase: reads served from memory move on at once, a disk read
/// waits for `ReadDone` (then [`read_lac_read_done`]).
pub fn read_lac_advance(bookie: &mut Bookie, client: &mut Client, token: Token) {
    // Bounded: at most the two phases.
    loop {
        let pending = client.pending(token.slot);
        let explicit = matches!(
            pending.op,
            PendingOp::ReadLacExplicit | PendingOp::ReadLacExplicitRetry
        );
        let target = if explicit {
            ReadTarget::ExplicitLac
        } else {
            ReadTarget::Last
        };
        let ledger = LedgerId(pending.ledger);
        let result = match bookie.journal.read(token.encode(), ledger, target) {
            Ok(ReadOutcome::Ready { body, .. }) => Ok(Some(body)),
            Ok(ReadOutcome::Pending) => {
                let op = if explicit {
                    PendingOp::ReadLacExplicit
                } else {
                    PendingOp::ReadLacLast
                };
                client.pending_op_set(token.slot, op);
                return;
            }
            Err(ReadError::Busy) => {
                let op = if explicit {
                    PendingOp::ReadLacExplicitRetry
                } else {
                    PendingOp::ReadLacLastRetry
                };
                read_lac_retry(bookie, client, token, op);
                return;
            }
            Err(ReadError::NoEntry) => Ok(None),
            Err(error) => Err(error),
        };
        if !read_lac_step(client, token, explicit, result) {
            return;
        }
    }
}

/// A READ_LAC disk read finished: take its result and go on.
pub fn read_lac_read_done(
    bookie: &mut Bookie,
    client: &mut Client,
    token: Token,
    slot: engine::journal::ReadSlot,
) {
    let explicit = client.pending(token.slot).op == PendingOp::ReadLacExplicit;
    let result = match bookie.journal.read_result(slot) {
        Ok((_, body)) => Ok(Some(body)),
        Err(ReadError::NoEntry) => Ok(None),
        Err(error) => Err(error),
    };
    let busy = matches!(result, Err(ReadError::Busy));
    let more = !busy && read_lac_step(client, token, explicit, result);
    bookie.journal.read_release(slot);
    if busy {
        let op = if explicit {
            PendingOp::ReadLacExplicitRetry
        } else {
            PendingOp::ReadLacLastRetry
        };
        read_lac_retry(bookie, client, token, op);
    } else if more {
        read_lac_advance(bookie, client, token);
    }
}

/// Queues the READ_LAC's current phase for the next turn, or answers ETOOMANYREQUESTS when
/// the engine stays busy.
fn read_lac_retry(bookie: &mut Bookie, client: &mut Client, token: Token, op: PendingOp) {
    if !read_retry_queue(bookie, client, token, op) {
        read_lac_finish(client, token, Status::Etoomanyrequests, None);
    }
}

/// Applies one phase's result; true if the next phase must run.
fn read_lac_step(
    client: &mut Client,
    token: Token,
    explicit: bool,
    result: Result<Option<&[u8]>, ReadError>,
) -> bool {
    let body = match result {
        Ok(body) => body,
        Err(error) => {
            let status = wire_v3::status_from_v2(read_error_code(error));
            let status = Status::try_from(status).unwrap_or(Status::Eio);
            read_lac_finish(client, token, status, None);
            return false;
        }
    };
    if explicit {
        if let Some(body) = body {
            client.read_lac_body.clear();
            client.read_lac_body.extend_from_slice(body);
            client.read_lac_found = true;
        }
        client.pending_op_set(token.slot, PendingOp::ReadLacLast);
        return true;
    }
    read_lac_finish(client, token, Status::Eok, body);
    false
}

/// Answers the running READ_LAC: EOK if either body exists, ENOENTRY if neither does, or the
/// error `status`; frees its slot.
pub fn read_lac_finish(
    client: &mut Client,
    token: Token,
    status: Status,
    last_entry: Option<&[u8]>,
) {
    let pending = client.pending(token.slot);
    let v3 = pending.v3.expect("READ_LAC is v3");
    let lac_body = client.read_lac_found.then(|| client.read_lac_body.clone());
    let ok = status == Status::Eok;
    let status = match (ok, lac_body.is_some() || last_entry.is_some()) {
        (true, false) => Status::Enoentry,
        _ => status,
    } as i32;
    let (lac_body, last_entry_body) = if status == Status::Eok as i32 {
        (lac_body, last_entry.map(<[u8]>::to_vec))
    } else {
        (None, None)
    };
    let response = proto::Response {
        header: wire_v3::response_header(&v3.header),
        status,
        read_lac_response: Some(proto::ReadLacResponse {
            status,
            ledger_id: pending.ledger,
            lac_body,
            last_entry_body,
        }),
        ..Default::default()
    };
    client.respond_v3(pending.reply_to, &response);
    client.read_lac = None;
    client.pending_remove(token.slot);
}
