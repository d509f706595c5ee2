//! Per-connection state and request semantics: the pending-request table, the response
//! output, the socket's receive and send buffers, and what each v2 request does to the journal
//! (v3 requests: `connection/v3.rs`; both share the pending table and the read paths).
//! Everything is allocated when the connection is accepted, so the request path allocates
//! nothing (only forwarding to another shard copies the frame).
//!
//! A `Client` is anything requests come from and responses go to: a TCP connection, or a peer
//! shard that forwarded requests for ledgers this shard owns (its responses are prefixed with
//! the connection reference they answer, see `router`).

use crate::limits;
use crate::router::{OwnerCache, Router, ShardId};
use crate::shard::ShardStats;
use engine::uring::{NetBufferId, UringDisk};
use engine::ReadTarget;
use engine::{AddError, AddOptions, EntryId, Journal, LedgerId, ReadError, ReadOutcome};
use std::collections::VecDeque;
use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::time::Instant;
use wire::{code, v3 as wire_v3, Request, FLAG_DO_FENCING, FLAG_RECOVERY_ADD};

pub mod v3;

/// What a pending slot waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PendingOp {
    /// An add waits for `Durable` (or `Failed`).
    Add,
    /// A fencing read waits for its fence record to be durable, then reads.
    Fence,
    /// A fencing batch read waits for its fence record, then runs the batch.
    FenceBatch,
    /// A read waits for `ReadDone`.
    Read,
    /// A read waits in the retry queue for a free engine read slot.
    ReadRetry,
    /// The client's batch read waits for `ReadDone` of its current entry.
    Batch,
    /// The client's batch read waits in the retry queue.
    BatchRetry,
    /// A v3 DEFERRED_SYNC add waits for `Written` (or `Failed`).
    AddDeferred,
    /// A v3 WRITE_LAC waits for `Durable`.
    WriteLac,
    /// A v3 FORCE_LEDGER waits for `Durable` of its marker.
    Force,
    /// A v3 long-poll read is parked until the LAC passes `previousLAC` or it times out.
    Parked,
    /// A v3 READ_LAC waits for the explicit-LAC body (`ReadDone`).
    ReadLacExplicit,
    /// ... or in the retry queue for it.
    ReadLacExplicitRetry,
    /// A v3 READ_LAC waits for the last entry's body.
    ReadLacLast,
    /// ... or in the retry queue for it.
    ReadLacLastRetry,
}

/// What a v3 request's reply needs besides the common fields.
#[derive(Clone, Copy, Debug)]
pub struct PendingV3 {
    /// The request's header: operation and txnId are echoed.
    pub header: wire_v3::Header,
    /// ENTRY_PIGGYBACK: the LAC the client knows (the read is of `previous_lac + 1`).
    pub piggyback: Option<i64>,
}

/// A request accepted and not yet answered.
#[derive(Clone, Copy, Debug)]
pub struct Pending {
    /// What it waits for.
    pub op: PendingOp,
    /// The request's protocol version (the response carries it).
    pub version: u8,
    /// Engine-busy retries so far.
    pub attempts: u16,
    /// The request's ledger.
    pub ledger: i64,
    /// The request's entry (stays -1 for a read of -1).
    pub entry: i64,
    /// For a peer client: the origin connection the response goes back to.
    pub reply_to: u64,
    /// A v3 request: the reply is a v3 `Response` (`version` is then unused).
    pub v3: Option<PendingV3>,
}

/// The one batch read a client may have running (batch reads are rare and large, so one at
/// a time bounds the memory they hold).
#[derive(Clone, Copy, Debug)]
pub struct Batch {
    /// Its pending slot.
    pub slot: u32,
    /// The request's version.
    pub version: u8,
    /// The ledger.
    pub ledger: i64,
    /// The first entry id.
    pub start_entry: i64,
    /// The client's id for the reply.
    pub request_id: i64,
    /// Entries included so far.
    pub count: usize,
    /// Entries to include at most.
    pub count_max: usize,
    /// Response size so far, length prefix included (protocol §2.7).
    pub size: usize,
    /// `min(maxSize, BATCH_READ_BYTES_MAX)`.
    pub size_limit: usize,
    /// For a peer client: the origin connection.
    pub reply_to: u64,
}

/// The request side of a connection or peer; see the module docs.
#[derive(Debug)]
pub struct Client {
    /// Incremented on reuse of a connection slot, so late events for a closed connection
    /// are recognised and dropped.
    pub generation: u32,
    /// True for a peer shard: responses carry the connection reference they answer.
    pub peer: bool,
    pending: Vec<Pending>,
    pending_free: Vec<u32>,
    pending_max: usize,
    /// Encoded responses not yet handed to a send.
    pub out: Vec<u8>,
    /// The running batch read, if any.
    pub batch: Option<Batch>,
    /// The running batch read's response under construction.
    pub batch_out: Vec<u8>,
    /// Requests forwarded to other shards and not yet answered.
    pub forwarded_in_flight: usize,
    /// The pending slot of the one v3 READ_LAC a client may have running.
    pub read_lac: Option<u32>,
    /// Its explicit-LAC body, once read (grows on first use; READ_LAC is rare).
    pub read_lac_body: Vec<u8>,
    /// The running READ_LAC found an explicit-LAC body (in `read_lac_body`).
    pub read_lac_found: bool,
}

impl Client {
    /// A client whose pending table holds `pending_max` requests; the table and the output
    /// are allocated here, once.
    #[must_use]
    pub fn new(generation: u32, pending_max: usize, output_capacity: usize, peer: bool) -> Client {
        assert!(pending_max >= 1);
        assert!(pending_max <= crate::limits::REQUESTS_IN_FLIGHT_MAX_LIMIT);
        Client {
            generation,
            peer,
            pending: Vec::with_capacity(pending_max),
            pending_free: Vec::with_capacity(pending_max),
            pending_max,
            out: Vec::with_capacity(output_capacity),
            batch: None,
            batch_out: Vec::new(),
            forwarded_in_flight: 0,
            read_lac: None,
            read_lac_body: Vec::new(),
            read_lac_found: false,
        }
    }

    /// Requests accepted and not answered: pending here plus forwarded elsewhere.
    #[must_use]
    pub fn in_flight(&self) -> usize {
        self.pending.len() - self.pending_free.len() + self.forwarded_in_flight
    }

    /// True when another request may be accepted.
    #[must_use]
    pub fn has_room(&self) -> bool {
        self.in_flight() < self.pending_max
            && self.out.len() < crate::limits::OUTPUT_BYTES_READ_PAUSE
    }

    /// True when nothing is in flight and nothing waits to be sent.
    #[must_use]
    pub fn is_idle(&self) -> bool {
        self.in_flight() == 0 && self.out.is_empty() && self.batch.is_none()
    }

    /// Takes a free pending slot (the table never reallocates: its capacity is the cap).
    pub fn pending_insert(&mut self, pending: Pending) -> Option<u32> {
        if self.in_flight() >= self.pending_max {
            return None;
        }
        if let Some(slot) = self.pending_free.pop() {
            self.pending[slot as usize] = pending;
            return Some(slot);
        }
        assert!(
            self.pending.len() < self.pending.capacity(),
            "pending table is preallocated"
        );
        self.pending.push(pending);
        Some(u32::try_from(self.pending.len() - 1).expect("pending_max fits u32"))
    }

    /// A pending slot's request.
    #[must_use]
    pub fn pending(&self, slot: u32) -> Pending {
        self.pending[slot as usize]
    }

    /// Changes the entry a pending read reads and answers with (piggyback).
    pub fn pending_entry_set(&mut self, slot: u32, entry: i64) {
        self.pending[slot as usize].entry = entry;
    }

    /// Changes what a pending slot waits for.
    pub fn pending_op_set(&mut self, slot: u32, op: PendingOp) {
        self.pending[slot as usize].op = op;
    }

    /// Counts one more engine-busy retry; returns the count.
    pub fn pending_attempt(&mut self, slot: u32) -> u16 {
        let pending = &mut self.pending[slot as usize];
        pending.attempts = pending.attempts.saturating_add(1);
        pending.attempts
    }

    /// Frees a pending slot once its response is encoded.
    pub fn pending_remove(&mut self, slot: u32) {
        assert!((slot as usize) < self.pending.len());
        assert!(
            self.pending_free.len() < self.pending.len(),
            "double free of a pending slot"
        );
        self.pending_free.push(slot);
    }

    /// A peer's responses name the connection they answer.
    fn reply_prefix(&mut self, reply_to: u64) {
        if self.peer {
            self.out.extend_from_slice(&reply_to.to_be_bytes());
        }
    }

    /// Appends an ADD response.
    pub fn respond_add(&mut self, reply_to: u64, version: u8, code: i32, ledger: i64, entry: i64) {
        self.reply_prefix(reply_to);
        wire::encode_add_response(&mut self.out, version, code, ledger, entry);
    }

    /// Appends the ADD response of a pending add in its protocol; `code` is a v2 code.
    pub fn respond_add_pending(&mut self, pending: &Pending, code: i32) {
        let (ledger, entry) = (pending.ledger, pending.entry);
        match pending.v3 {
            None => self.respond_add(pending.reply_to, pending.version, code, ledger, entry),
            Some(v3) => {
                self.reply_prefix(pending.reply_to);
                let status = wire_v3::status_from_v2(code);
                wire_v3::encode_add_response(&mut self.out, &v3.header, status, ledger, entry);
            }
        }
    }

    /// Appends a v3 response built by the caller.
    pub fn respond_v3(&mut self, reply_to: u64, response: &wire_v3::proto::Response) {
        self.reply_prefix(reply_to);
        wire_v3::encode_response(&mut self.out, response);
    }

    /// Appends a v3 READ response.
    pub fn respond_v3_read(
        &mut self,
        reply_to: u64,
        header: &wire_v3::Header,
        reply: &wire_v3::ReadReply<'_>,
    ) {
        self.reply_prefix(reply_to);
        wire_v3::encode_read_response(&mut self.out, header, reply);
    }

    /// Appends the v3 response to `request` that carries only a status.
    pub fn respond_v3_status(
        &mut self,
        reply_to: u64,
        request: &wire_v3::Request<'_>,
        status: wire_v3::Status,
    ) {
        self.reply_prefix(reply_to);
        wire_v3::encode_status_response(&mut self.out, request, status as i32);
    }

    /// Appends a v2 READ response; `body` only with EOK. (Both protocols: [`respond_read`].)
    fn respond_read(&mut self, pending: &Pending, code: i32, body: &[u8]) {
        self.reply_prefix(pending.reply_to);
        let (version, ledger, entry) = (pending.version, pending.ledger, pending.entry);
        wire::encode_read_response(&mut self.out, version, code, ledger, entry, body);
    }

    /// Appends the AUTH reply of a bookie with authentication disabled.
    pub fn respond_auth(&mut self, reply_to: u64) {
        self.reply_prefix(reply_to);
        // Java answers AUTH in the current version whatever the request's (protocol §2.8).
        wire::encode_auth_response(&mut self.out, wire::PROTOCOL_VERSION_CURRENT);
    }

    /// Appends a BATCH_READ response with an error code and no entries.
    pub fn respond_batch_error(&mut self, batch: &Batch, code: i32) {
        assert_ne!(code, code::EOK);
        self.reply_prefix(batch.reply_to);
        let start = wire::encode_batch_read_response_begin(
            &mut self.out,
            batch.version,
            code,
            batch.ledger,
            batch.start_entry,
            batch.request_id,
        );
        wire::encode_batch_read_response_finish(&mut self.out, start);
    }

    /// Starts the batch response in `batch_out`.
    pub fn batch_begin(&mut self, batch: Batch) {
        assert!(self.batch.is_none(), "one batch read per client at a time");
        self.batch_out.clear();
        let start = wire::encode_batch_read_response_begin(
            &mut self.batch_out,
            batch.version,
            code::EOK,
            batch.ledger,
            batch.start_entry,
            batch.request_id,
        );
        assert_eq!(start, 0);
        self.batch = Some(batch);
    }

    /// Adds one entry to the running batch if §2.7's size rule admits it (the first entry
    /// always). Returns false when the entry ends the batch instead.
    pub fn batch_push(&mut self, body: &[u8]) -> bool {
        let batch = self.batch.as_mut().expect("a batch is running");
        let size = batch.size + wire::BATCH_READ_RESPONSE_ITEM_PREFIX_SIZE + body.len();
        if batch.count > 0 && size > batch.size_limit {
            return false;
        }
        batch.size = size;
        batch.count += 1;
        wire::encode_batch_read_response_push(&mut self.batch_out, body);
        true
    }

    /// Ends the running batch: EOK with the entries so far, or `code` with none if no entry
    /// was read. Frees its pending slot.
    pub fn batch_finish(&mut self, code: i32) {
        let batch = self.batch.take().expect("a batch is running");
        if batch.count == 0 && code != code::EOK {
            self.respond_batch_error(&batch, code);
        } else {
            wire::encode_batch_read_response_finish(&mut self.batch_out, 0);
            self.reply_prefix(batch.reply_to);
            self.out.extend_from_slice(&self.batch_out);
        }
        self.batch_out.clear();
        self.pending_remove(batch.slot);
    }
}

/// Where a journal token points: a client (connection slot or peer), one of its pending slots,
/// and the client's generation. Layout: generation (20 bits) | client (20) | slot (24).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Token {
    /// Connection slot, or `connections_max + shard` for a peer.
    pub client: u32,
    /// Pending slot.
    pub slot: u32,
    /// The client's generation, modulo 2^20.
    pub generation: u32,
}

const TOKEN_SLOT_BITS: u32 = 24;
const TOKEN_CLIENT_BITS: u32 = 20;
const TOKEN_GENERATION_MASK: u32 = (1 << 20) - 1;

impl Token {
    /// Packs a token.
    #[must_use]
    pub fn encode(self) -> u64 {
        assert!(self.slot < 1 << TOKEN_SLOT_BITS);
        assert!(self.client < 1 << TOKEN_CLIENT_BITS);
        let generation = u64::from(self.generation & TOKEN_GENERATION_MASK);
        let client = u64::from(self.client) << TOKEN_SLOT_BITS;
        (generation << (TOKEN_SLOT_BITS + TOKEN_CLIENT_BITS)) | client | u64::from(self.slot)
    }

    /// Unpacks a token.
    #[must_use]
    pub fn decode(token: u64) -> Token {
        let field = |shift: u32, bits: u32| {
            u32::try_from((token >> shift) & ((1 << bits) - 1)).expect("masked field fits u32")
        };
        Token {
            client: field(TOKEN_SLOT_BITS, TOKEN_CLIENT_BITS),
            slot: field(0, TOKEN_SLOT_BITS),
            generation: field(TOKEN_SLOT_BITS + TOKEN_CLIENT_BITS, 20),
        }
    }

    /// True if the token was issued to this generation of the client.
    #[must_use]
    pub fn matches(self, client: &Client) -> bool {
        self.generation == client.generation & TOKEN_GENERATION_MASK
    }
}

/// A connection's reference across shards: generation (high 32 bits) | slot (low 32 bits).
#[must_use]
pub fn connection_reference(slot: u32, generation: u32) -> u64 {
    (u64::from(generation) << 32) | u64::from(slot)
}

/// Splits a connection reference into slot and generation.
#[must_use]
pub fn connection_reference_split(reference: u64) -> (u32, u32) {
    let slot = u32::try_from(reference & 0xFFFF_FFFF).expect("masked to 32 bits");
    let generation = u32::try_from(reference >> 32).expect("shifted to 32 bits");
    (slot, generation)
}

/// A TCP connection: socket, buffers and the state of its one recv and one send.
#[derive(Debug)]
pub struct Connection {
    /// Kept open until every operation on it has completed, so its number is never reused
    /// while the kernel may still act on it.
    pub fd: OwnedFd,
    /// Requests and responses.
    pub client: Client,
    /// Received bytes live in `recv_buffer[..recv_filled]`, a frame always starting at 0.
    pub recv_buffer: NetBufferId,
    /// Bytes received and not yet decoded.
    pub recv_filled: usize,
    /// A recv is in flight.
    pub recv_armed: bool,
    /// Complete frames may wait in the buffer (set by a recv, kept while decoding stalls).
    pub decode_wanted: bool,
    /// The peer closed its side.
    pub eof: bool,
    /// The buffer a send copies `client.out` into.
    pub send_buffer: NetBufferId,
    /// Start of the unsent part of `send_buffer` (a short send resumes there).
    pub send_offset: usize,
    /// End of the bytes copied into `send_buffer`.
    pub send_length: usize,
    /// A send is in flight.
    pub send_armed: bool,
    /// Bytes of `client.out` already copied into `send_buffer`.
    pub out_offset: usize,
    /// Recv, send and cancel operations in flight; the slot is freed only at 0.
    pub operations_in_flight: u32,
    /// The connection is closing: no new operations, cancel what runs, then free.
    pub closing: bool,
    /// The cancel for a closing connection was submitted.
    pub cancel_submitted: bool,
    /// Last traffic in either direction, for the idle timeout.
    pub active_last: Instant,
    /// When the last recv completed with bytes: the start of the receive → staged stage.
    pub received_at: Instant,
}

impl Connection {
    /// True when a recv may be armed: nothing stops reading, and the request and output
    /// caps leave room (otherwise the socket is left unread: TCP backpressure).
    #[must_use]
    pub fn wants_recv(&self, buffer_size: usize) -> bool {
        !self.recv_armed
            && !self.decode_wanted
            && !self.closing
            && !self.eof
            && self.recv_filled < buffer_size
            && self.client.has_room()
    }

    /// True when a send may be submitted.
    #[must_use]
    pub fn wants_send(&self) -> bool {
        !self.send_armed
            && !self.closing
            && (self.send_offset < self.send_length || !self.client.out.is_empty())
    }
}

/// What request handling needs besides the client: the journal and the routing state.
pub struct Context {
    /// This shard.
    pub shard: ShardId,
    /// This shard's journal (DATA_DIR/shard-K).
    pub journal: Journal<UringDisk>,
    /// Placement and mailboxes shared by all shards.
    pub router: Arc<Router>,
    /// This shard's lock-free copy of the placements it has looked up.
    pub owners: OwnerCache,
    /// Forwarded requests per destination shard, sent as one mail per turn.
    pub forward_out: Vec<Vec<u8>>,
    /// Shards that got mail this turn and must be woken.
    pub wake: Vec<bool>,
    /// Tokens of reads waiting for a free engine read slot.
    pub read_retry: VecDeque<u64>,
    /// v3 long-poll reads waiting for the LAC to advance (at most `PARKED_READS_MAX`).
    pub parked: Vec<v3::Parked>,
    /// The earliest deadline in `parked`: the loop sleeps no longer than until then.
    pub parked_deadline_next: Option<Instant>,
    /// The data directory (GET_BOOKIE_INFO reports its file system's capacity).
    pub data_dir: std::path::PathBuf,
    /// Largest request frame, length prefix included.
    pub frame_size_max: u32,
    /// The shard's counters.
    pub stats: ShardStats,
    /// Something happened this turn: do not sleep.
    pub progress: bool,
}

/// Where a request came from: a connection slot (reference = its own cross-shard reference)
/// or a peer (reference = the origin connection the response must reach).
#[derive(Clone, Copy)]
pub struct Origin {
    /// The connection slot, or `connections_max + shard` for a peer.
    pub client_index: u32,
    /// A connection's own reference, or for a peer the origin connection's.
    pub reference: u64,
}

/// The outcome of handling one frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// The frame is consumed (answered, staged, or forwarded).
    Consumed,
    /// No room now (staging, pending table, forward buffer): leave the frame and every later
    /// one in the buffer and retry next turn.
    Stall,
}

// Requests: decoded frames to journal operations, forwards and responses.

/// Handles one decoded request of `client`. `frame` is its raw bytes, for forwarding.
pub fn request_handle(
    context: &mut Context,
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
            if let Some(step) = forward(context, client, origin, ledger_id, true, frame) {
                return step;
            }
            let pending = pending_new(PendingOp::Add, header.version, ledger_id, entry_id, origin);
            let recovery = header.flags & FLAG_RECOVERY_ADD != 0;
            add_stage(context, client, origin, pending, master_key, body, recovery)
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
                client.respond_read(&pending, code::EUA, &[]);
                return Step::Consumed;
            }
            if let Some(step) = forward(context, client, origin, ledger_id, fencing, frame) {
                return step;
            }
            read_begin(context, client, origin, pending, master_key)
        }
        Request::BatchRead { .. } => batch_begin(context, client, origin, request, frame),
    }
}

fn pending_new(op: PendingOp, version: u8, ledger: i64, entry: i64, origin: Origin) -> Pending {
    Pending {
        op,
        version,
        attempts: 0,
        ledger,
        entry,
        reply_to: origin.reference,
        v3: None,
    }
}

/// Appends the READ response of a pending read in its protocol; `code` is a v2 code and
/// `body` is sent only with EOK. A v3 reply carries the bookie's LAC (`maxLAC`) on success,
/// and a piggyback read of an entry this bookie lacks is EOK without a body (§5.4).
pub fn respond_read(
    journal: &Journal<UringDisk>,
    client: &mut Client,
    pending: &Pending,
    code: i32,
    body: &[u8],
) {
    let lac = journal
        .ledger(LedgerId(pending.ledger))
        .map(|ledger| ledger.last_add_confirmed);
    respond_read_lac(client, pending, code, body, lac);
}

/// [`respond_read`] with the ledger's LAC looked up by the caller (before a read borrows the
/// journal).
fn respond_read_lac(
    client: &mut Client,
    pending: &Pending,
    code: i32,
    body: &[u8],
    lac: Option<i64>,
) {
    let Some(v3) = pending.v3 else {
        client.respond_read(pending, code, body);
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
        lac_update_timestamp: (v3.piggyback.is_some() && with_body).then(v3::timestamp_ms),
    };
    client.respond_v3_read(pending.reply_to, &v3.header, &reply);
}

/// Versions above 2 get EBADVERSION with the request's ids (`isVersionCompatible`).
fn respond_bad_version(client: &mut Client, origin: Origin, request: &Request<'_>) {
    let version = request.header().version;
    let bad = code::EBADVERSION;
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
            client.respond_read(&pending, bad, &[]);
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

/// Sends the request to the owner of `ledger` if that is another shard; `None` if this shard
/// serves it. `claim`: the request creates the ledger if nobody owns it (add, fence).
pub(crate) fn forward(
    context: &mut Context,
    client: &mut Client,
    origin: Origin,
    ledger: i64,
    claim: bool,
    frame: &[u8],
) -> Option<Step> {
    let owner = if claim {
        Some(context.owners.owner_claim(&context.router, ledger))
    } else {
        context.owners.owner_find(&context.router, ledger)
    }?;
    // A peer's requests are for this shard by construction: the map never changes an owner.
    if owner == context.shard || client.peer {
        return None;
    }
    let out = &mut context.forward_out[usize::from(owner)];
    if out.len() >= limits::FORWARD_BYTES_MAX {
        return Some(Step::Stall);
    }
    // The slow path: the frame is copied, and the batch vector may grow.
    out.extend_from_slice(&origin.reference.to_be_bytes());
    out.extend_from_slice(frame);
    client.forwarded_in_flight += 1;
    context.stats.forwarded += 1;
    Some(Step::Consumed)
}

pub(crate) fn token_new(client: &Client, origin: Origin, slot: u32) -> Token {
    Token {
        client: origin.client_index,
        slot,
        generation: client.generation,
    }
}

pub(crate) fn add_stage(
    context: &mut Context,
    client: &mut Client,
    origin: Origin,
    pending: Pending,
    master_key: &wire::MasterKey,
    body: &[u8],
    recovery: bool,
) -> Step {
    let Some(slot) = client.pending_insert(pending) else {
        return Step::Stall;
    };
    let token = token_new(client, origin, slot).encode();
    let options = AddOptions {
        recovery,
        deferred: pending.op == PendingOp::AddDeferred,
    };
    let (ledger, entry) = (LedgerId(pending.ledger), EntryId(pending.entry));
    match context
        .journal
        .add(token, ledger, entry, master_key, body, options)
    {
        Ok(()) => {
            context.stats.adds += 1;
            Step::Consumed
        }
        Err(AddError::StagingFull) => {
            // Backpressure, not an error: the frame stays and is retried next turn.
            client.pending_remove(slot);
            Step::Stall
        }
        Err(error) => {
            client.pending_remove(slot);
            client.respond_add_pending(&pending, add_error_code(error));
            Step::Consumed
        }
    }
}

/// A read, or a fencing read: the fence is staged first and the read runs once it is durable.
pub(crate) fn read_begin(
    context: &mut Context,
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
        read_start(context, client, token);
        return Step::Consumed;
    };
    match context
        .journal
        .fence(token.encode(), LedgerId(pending.ledger), master_key)
    {
        Ok(()) => Step::Consumed,
        Err(AddError::StagingFull) => {
            client.pending_remove(slot);
            Step::Stall
        }
        Err(error) => {
            respond_read(
                &context.journal,
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
pub fn read_start(context: &mut Context, client: &mut Client, token: Token) {
    let pending = client.pending(token.slot);
    let target = read_target(pending.entry);
    let lac = context
        .journal
        .ledger(LedgerId(pending.ledger))
        .map(|ledger| ledger.last_add_confirmed);
    match context
        .journal
        .read(token.encode(), LedgerId(pending.ledger), target)
    {
        Ok(ReadOutcome::Ready { body, .. }) => {
            context.stats.reads += 1;
            respond_read_lac(client, &pending, code::EOK, body, lac);
            client.pending_remove(token.slot);
        }
        Ok(ReadOutcome::Pending) => client.pending_op_set(token.slot, PendingOp::Read),
        Err(ReadError::Busy) => read_retry_push(context, client, token, PendingOp::ReadRetry),
        Err(error) => {
            respond_read(
                &context.journal,
                client,
                &pending,
                read_error_code(error),
                &[],
            );
            client.pending_remove(token.slot);
        }
    }
}

/// Entry -1 is "the last entry stored" (protocol §5.3).
fn read_target(entry: i64) -> ReadTarget {
    if entry == -1 {
        ReadTarget::Last
    } else {
        ReadTarget::Entry(EntryId(entry))
    }
}

/// Queues a read for the next turn, or answers ETOOMANYREQUESTS when the engine stays busy.
pub fn read_retry_push(context: &mut Context, client: &mut Client, token: Token, op: PendingOp) {
    let attempts = client.pending_attempt(token.slot);
    let queue_full = context.read_retry.len() >= limits::READ_RETRY_QUEUE_MAX;
    if attempts <= limits::READ_RETRIES_MAX && !queue_full {
        client.pending_op_set(token.slot, op);
        context.read_retry.push_back(token.encode());
        return;
    }
    match op {
        PendingOp::BatchRetry => client.batch_finish(code::ETOOMANYREQUESTS),
        PendingOp::ReadLacExplicitRetry | PendingOp::ReadLacLastRetry => {
            v3::read_lac_finish(client, token, wire_v3::Status::Etoomanyrequests, None);
        }
        _ => {
            let pending = client.pending(token.slot);
            let busy = code::ETOOMANYREQUESTS;
            respond_read(&context.journal, client, &pending, busy, &[]);
            client.pending_remove(token.slot);
        }
    }
}

fn batch_new(
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

/// BATCH_READ_ENTRY (protocol §2.7): one batch at a time per client.
fn batch_begin(
    context: &mut Context,
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
        unreachable!("batch_begin takes batch reads")
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
    if let Some(step) = forward(context, client, origin, ledger_id, fencing, frame) {
        return step;
    }
    if client.batch.is_some() {
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
    client.batch_begin(batch);
    context.stats.reads += 1;
    let token = token_new(client, origin, slot);
    match master_key {
        Some(master_key) => batch_fence(context, client, token, master_key),
        None => {
            batch_advance(context, client, token);
            Step::Consumed
        }
    }
}

/// `maxCount <= 0` means no count limit (BATCH_READ_ENTRIES_MAX still bounds the loop); the
/// size limit is `min(maxSize, BATCH_READ_BYTES_MAX)` (protocol §2.7).
fn batch_limits_set(batch: &mut Batch, max_count: i32, max_size: i64) {
    if let Some(count) = usize::try_from(max_count).ok().filter(|&count| count > 0) {
        batch.count_max = count.min(limits::BATCH_READ_ENTRIES_MAX);
    }
    let size_limit = usize::try_from(max_size.max(0)).unwrap_or(usize::MAX);
    batch.size_limit = size_limit.min(limits::BATCH_READ_BYTES_MAX);
}

/// Stages the fence of a fencing batch read; the batch runs once it is durable.
fn batch_fence(
    context: &mut Context,
    client: &mut Client,
    token: Token,
    master_key: &wire::MasterKey,
) -> Step {
    let batch = client.batch.expect("batch_begin started it");
    match context
        .journal
        .fence(token.encode(), LedgerId(batch.ledger), master_key)
    {
        Ok(()) => Step::Consumed,
        Err(AddError::StagingFull) => {
            client.batch = None;
            client.pending_remove(token.slot);
            Step::Stall
        }
        Err(error) => {
            client.batch_finish(add_error_code(error));
            Step::Consumed
        }
    }
}

/// Reads the batch's next entries until one must come from disk, the batch is full, or a read
/// fails (the first failure is the reply's code; a later one ends the batch with EOK).
pub fn batch_advance(context: &mut Context, client: &mut Client, token: Token) {
    // Bounded: every pass either adds an entry (at most count_max) or returns.
    loop {
        let batch = client.batch.expect("a batch is running");
        let entry = i64::try_from(batch.count)
            .ok()
            .and_then(|n| batch.start_entry.checked_add(n));
        let (Some(entry), true) = (entry, batch.count < batch.count_max) else {
            client.batch_finish(code::EOK);
            return;
        };
        match context
            .journal
            .read(token.encode(), LedgerId(batch.ledger), read_target(entry))
        {
            Ok(ReadOutcome::Ready { body, .. }) => {
                if !client.batch_push(body) {
                    client.batch_finish(code::EOK);
                    return;
                }
            }
            Ok(ReadOutcome::Pending) => {
                client.pending_op_set(token.slot, PendingOp::Batch);
                return;
            }
            Err(ReadError::Busy) => {
                read_retry_push(context, client, token, PendingOp::BatchRetry);
                return;
            }
            Err(error) => {
                client.batch_finish(read_error_code(error));
                return;
            }
        }
    }
}

/// Engine add (and fence) errors as v2 codes.
pub(crate) fn add_error_code(error: AddError) -> i32 {
    match error {
        AddError::Fenced => code::EFENCED,
        AddError::KeyMismatch => code::EUA,
        AddError::ReadOnly => code::EREADONLY,
        AddError::TooLarge | AddError::EntryInvalid => code::EBADREQ,
        AddError::NoLedger => code::ENOLEDGER,
        AddError::StagingFull => code::ETOOMANYREQUESTS,
        // Poisoned, and anything a newer engine adds: the state is unknown.
        _ => code::EIO,
    }
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
