//! A `Client` is anything requests come from and responses go to: a TCP connection, or a peer
//! shard that forwarded requests for ledgers this shard owns (its responses are prefixed with
//! the connection reference they answer, see `router`). It holds the pending-request table,
//! the encoded responses, the batch reads (`BATCH_READS_PER_CLIENT_MAX`) and the one READ_LAC
//! it may have running; all of it is allocated when the client is created (a batch response
//! buffer on first use), so the request path allocates nothing.

use super::pending::{Pending, PendingOp, Token};
use super::Origin;
use crate::limits::BATCH_READS_PER_CLIENT_MAX;
use wire::{code, v3 as wire_v3};

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
    /// The running batch reads, each found by its pending slot. Several at once, because a
    /// batch waits at every read-ahead window it needs: one at a time held a catch-up
    /// reader's connection (and a peer shard's whole stream of forwarded batches) to one
    /// window's latency per batch.
    batches: [Option<Batch>; BATCH_READS_PER_CLIENT_MAX],
    /// `batches[i]`'s response under construction: the client's own for `batches[0]` (grows
    /// on first use, then kept), one lent by the shard (`Bookie::batch_buffers`) for the
    /// others while they run, empty otherwise.
    batch_outs: [Vec<u8>; BATCH_READS_PER_CLIENT_MAX],
    /// Requests forwarded to other shards and not yet answered.
    pub forwarded_in_flight: usize,
    /// The pending slot of the one v3 READ_LAC a client may have running.
    pub read_lac: Option<u32>,
    /// Its explicit-LAC body, once read (grows on first use; READ_LAC is rare).
    pub read_lac_body: Vec<u8>,
    /// The running READ_LAC found an explicit-LAC body (in `read_lac_body`).
    pub read_lac_found: bool,
}

/// A running batch read (a client runs at most `BATCH_READS_PER_CLIENT_MAX`, which bounds
/// the memory their responses hold).
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
            batches: [None; BATCH_READS_PER_CLIENT_MAX],
            batch_outs: std::array::from_fn(|_| Vec::new()),
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
        self.in_flight() == 0 && self.out.is_empty() && self.batches.iter().all(Option::is_none)
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

    /// One more engine-busy retry; returns how long the request has been retried.
    pub fn pending_attempt(&mut self, slot: u32, now: std::time::Instant) -> std::time::Duration {
        let pending = &mut self.pending[slot as usize];
        now.saturating_duration_since(*pending.busy_since.get_or_insert(now))
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

    /// Appends a v2 READ response; `body` only with EOK. (Both protocols:
    /// `read::read_answer`.)
    pub fn respond_read_v2(&mut self, pending: &Pending, code: i32, body: &[u8]) {
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

    /// True when another batch read may start: its own buffer is free, or another slot is
    /// and the shard has a buffer to lend (`shared`).
    #[must_use]
    pub fn batch_has_room(&self, shared: &[Vec<u8>]) -> bool {
        self.batches[0].is_none()
            || (!shared.is_empty() && self.batches.iter().any(Option::is_none))
    }

    /// Where the running batch of pending slot `slot` is.
    fn batch_index(&self, slot: u32) -> usize {
        self.batches
            .iter()
            .position(|batch| batch.is_some_and(|batch| batch.slot == slot))
            .expect("a batch is running on this pending slot")
    }

    /// The running batch of pending slot `slot`.
    #[must_use]
    pub fn batch(&self, slot: u32) -> Batch {
        self.batches[self.batch_index(slot)].expect("found running")
    }

    /// Starts `batch` (its pending slot taken) and its response, in a buffer of `shared` if
    /// its own is in use.
    pub fn batch_response_begin(&mut self, batch: Batch, shared: &mut Vec<Vec<u8>>) {
        let index = self
            .batches
            .iter()
            .position(Option::is_none)
            .expect("batch_has_room was checked");
        if index > 0 {
            self.batch_outs[index] = shared.pop().expect("batch_has_room was checked");
        }
        let out = &mut self.batch_outs[index];
        out.clear();
        let start = wire::encode_batch_read_response_begin(
            out,
            batch.version,
            code::EOK,
            batch.ledger,
            batch.start_entry,
            batch.request_id,
        );
        assert_eq!(start, 0);
        self.batches[index] = Some(batch);
    }

    /// Adds one entry to the batch of pending slot `slot` if §2.7's size rule admits it (the
    /// first entry always). Returns false when the entry ends the batch instead.
    pub fn batch_push(&mut self, slot: u32, body: &[u8]) -> bool {
        let index = self.batch_index(slot);
        let batch = self.batches[index].as_mut().expect("found running");
        let size = batch.size + wire::BATCH_READ_RESPONSE_ITEM_PREFIX_SIZE + body.len();
        if batch.count > 0 && size > batch.size_limit {
            return false;
        }
        batch.size = size;
        batch.count += 1;
        wire::encode_batch_read_response_push(&mut self.batch_outs[index], body);
        true
    }

    /// Drops the batch of pending slot `slot` unanswered and frees the slot: its request is
    /// left in the input and taken again (a fencing batch that found staging full).
    pub fn batch_abandon(&mut self, slot: u32, shared: &mut Vec<Vec<u8>>) {
        let index = self.batch_index(slot);
        self.batches[index] = None;
        self.batch_out_release(index, shared);
        self.pending_remove(slot);
    }

    /// Empties `batch_outs[index]`, giving a lent buffer back to `shared`.
    fn batch_out_release(&mut self, index: usize, shared: &mut Vec<Vec<u8>>) {
        self.batch_outs[index].clear();
        if index > 0 {
            assert!(shared.len() < shared.capacity(), "a buffer comes back once");
            shared.push(std::mem::take(&mut self.batch_outs[index]));
        }
    }

    /// Gives the buffers of running batches back to `shared`: the client is going away
    /// with them unanswered (a closed connection).
    pub fn batch_buffers_return(&mut self, shared: &mut Vec<Vec<u8>>) {
        for index in 1..BATCH_READS_PER_CLIENT_MAX {
            if self.batches[index].take().is_some() {
                self.batch_out_release(index, shared);
            }
        }
    }

    /// Ends the batch of pending slot `slot`: EOK with the entries so far, or `code` with
    /// none if no entry was read. Frees its pending slot. Returns what the stats count
    /// (`batch_end`).
    #[must_use]
    pub fn batch_finish(
        &mut self,
        slot: u32,
        code: i32,
        shared: &mut Vec<Vec<u8>>,
    ) -> BatchAnswered {
        let index = self.batch_index(slot);
        let batch = self.batches[index].take().expect("found running");
        let answered = BatchAnswered {
            received_at: self.pending(batch.slot).received_at,
            code: if batch.count == 0 { code } else { code::EOK },
            body_bytes: batch.size
                - wire::BATCH_READ_RESPONSE_FIXED_SIZE
                - batch.count * wire::BATCH_READ_RESPONSE_ITEM_PREFIX_SIZE,
        };
        if batch.count == 0 && code != code::EOK {
            self.respond_batch_error(&batch, code);
        } else {
            wire::encode_batch_read_response_finish(&mut self.batch_outs[index], 0);
            self.reply_prefix(batch.reply_to);
            self.out.extend_from_slice(&self.batch_outs[index]);
        }
        self.batch_out_release(index, shared);
        self.pending_remove(batch.slot);
        answered
    }
}

/// A finished batch read, for the read stats: one request answered `code` after
/// `received_at`, with entries of `body_bytes` bytes in all.
#[derive(Clone, Copy, Debug)]
pub struct BatchAnswered {
    pub received_at: std::time::Instant,
    pub code: i32,
    pub body_bytes: usize,
}

/// The journal token naming `client`'s pending slot `slot`, for a request from `origin`.
pub(crate) fn token_new(client: &Client, origin: Origin, slot: u32) -> Token {
    Token {
        client: origin.client_index,
        slot,
        generation: client.generation,
    }
}
