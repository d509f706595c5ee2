//! Request handling, in one direction: the shard hands a decoded frame to [`handle`], which
//! gives it to the handler of its protocol (`v2.rs`, `v3.rs`); both handlers use the shared
//! parts (`client.rs`: pending table and output; `add.rs`, `read.rs`, `batch.rs`: journal
//! operations and answers; `forward.rs`: forwarding to the owner shard) and never each
//! other, and nothing here calls back into the shard. Journal events come back through the
//! same shared parts, called by the shard.

pub mod add;
pub mod batch;
pub mod client;
pub mod forward;
pub mod pending;
pub mod read;
pub mod v2;
pub mod v3;

use crate::router::{OwnerCache, Router, ShardId};
use crate::shard_stats::ShardStats;
use client::Client;
use engine::uring::UringDisk;
use engine::Journal;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;
use wire::AnyRequest;

/// Handles a request in the protocol it arrived in.
pub fn handle(
    bookie: &mut Bookie,
    client: &mut Client,
    origin: Origin,
    request: AnyRequest<'_>,
    frame: &[u8],
) -> Step {
    match request {
        AnyRequest::V2(request) => v2::handle(bookie, client, origin, request, frame),
        AnyRequest::V3(request) => v3::handle(bookie, client, origin, request, frame),
    }
}

/// Answers a request from a connection that is not authorized with EUA, in its protocol.
pub fn refuse_unauthorized(client: &mut Client, origin: Origin, request: &AnyRequest<'_>) -> Step {
    if !client.has_room() {
        return Step::Stall;
    }
    match request {
        AnyRequest::V2(request) => v2::refuse_unauthorized(client, origin, request),
        AnyRequest::V3(request) => v3::refuse_unauthorized(client, origin, request),
    }
    Step::Consumed
}

/// Answers a v3 START_TLS the shard will act on (`v3::start_tls_answer`); true when the
/// connection turns to TLS after the answer.
pub fn start_tls_answer(client: &mut Client, origin: Origin, request: &AnyRequest<'_>) -> bool {
    match request {
        AnyRequest::V3(request) => v3::start_tls_answer(client, origin, request),
        AnyRequest::V2(_) => unreachable!("START_TLS is a v3 request"),
    }
}

/// The bookie side of one shard: what a request may act on besides its client. The
/// journal, where ledgers live and how requests for other shards' ledgers leave
/// (`router`, `owners`, `forward_out`, `wake`), the reads that wait (`read_retry`, `parked`),
/// and the shard's counters. It is a part of `Shard` held apart from the connection table,
/// so a handler can borrow it and one client mutably at once.
pub struct Bookie {
    /// This shard.
    pub shard: ShardId,
    /// This shard's journal (`Config::journal_dir`: DIRS[K % N]/shard-K).
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
    pub parked: Vec<v3::LongPoll>,
    /// The earliest deadline in `parked`: the loop sleeps no longer than until then.
    pub parked_deadline_next: Option<Instant>,
    /// The data directory holding this shard's journal (GET_BOOKIE_INFO reports its file
    /// system's capacity: the device this shard writes to, of several with a list).
    pub data_dir: std::path::PathBuf,
    /// Largest request frame, length prefix included.
    pub frame_size_max: u32,
    /// Response buffers for a client's second and later running batch reads, lent per
    /// batch and given back when it ends (`BATCH_READ_BUFFERS_SHARED_MAX`): what batch reads
    /// running side by side may hold is bounded per shard, not per connection.
    pub batch_buffers: Vec<Vec<u8>>,
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
    /// When its bytes arrived (a connection's last recv; a forwarded request's decoding):
    /// where the request's latency starts.
    pub received_at: Instant,
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

impl Bookie {
    /// Ends `client`'s batch read on pending slot `slot` (`Client::batch_finish`) and counts it: its bytes, and one
    /// latency sample and result for the request (`reads` counted it when it started).
    /// Before, a catch-up consumer reading in batches moved none of the read metrics but
    /// `ringlog_reads_total`.
    pub fn batch_end(&mut self, client: &mut Client, slot: u32, code: i32) {
        let answered = client.batch_finish(slot, code, &mut self.batch_buffers);
        self.stats
            .read_answered(answered.received_at, answered.code, answered.body_bytes);
    }
}
