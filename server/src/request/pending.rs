//! What a pending slot holds, and the journal tokens that name a slot across the engine.

use std::time::Instant;
use wire::v3 as wire_v3;

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
    /// When the engine first answered this request busy (its retries are bounded in time).
    pub busy_since: Option<std::time::Instant>,
    /// The request's ledger.
    pub ledger: i64,
    /// The request's entry (stays -1 for a read of -1).
    pub entry: i64,
    /// For a peer client: the origin connection the response goes back to.
    pub reply_to: u64,
    /// A v3 request: the reply is a v3 `Response` (`version` is then unused).
    pub v3: Option<PendingV3>,
    /// When the request arrived (`Origin::received_at`), for its latency.
    pub received_at: Instant,
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

    /// True if the token was issued to a client of `generation` (`Client::generation`).
    #[must_use]
    pub fn matches(self, generation: u32) -> bool {
        self.generation == generation & TOKEN_GENERATION_MASK
    }
}
