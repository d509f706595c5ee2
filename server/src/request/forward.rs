//! Forwarding a request to the shard that owns its ledger, as its raw frame.

use super::client::Client;
use super::{Bookie, Origin, Step};
use crate::limits;

/// Sends the request to the owner of `ledger` if that is another shard; `None` if this shard
/// serves it. `claim`: the request creates the ledger if nobody owns it (add, fence).
pub(crate) fn forward(
    bookie: &mut Bookie,
    client: &mut Client,
    origin: Origin,
    ledger: i64,
    claim: bool,
    frame: &[u8],
) -> Option<Step> {
    let owner = if claim {
        Some(bookie.owners.owner_claim(&bookie.router, ledger))
    } else {
        bookie.owners.owner_find(&bookie.router, ledger)
    }?;
    // A peer's requests are for this shard by construction: the map never changes an owner.
    if owner == bookie.shard || client.peer {
        return None;
    }
    let out = &mut bookie.forward_out[usize::from(owner)];
    if out.len() >= limits::FORWARD_BYTES_MAX {
        return Some(Step::Stall);
    }
    // The slow path: the frame is copied, and the batch vector may grow.
    out.extend_from_slice(&origin.reference.to_be_bytes());
    out.extend_from_slice(frame);
    client.forwarded_in_flight += 1;
    bookie.stats.forwarded += 1;
    Some(Step::Consumed)
}
