//! Staging adds into the journal's next commit, and the v2 codes of add errors.

use super::client::{token_new, Client};
use super::pending::{Pending, PendingOp};
use super::{Bookie, Origin, Step};
use engine::{AddError, AddOptions, EntryId, LedgerId};
use wire::code;

pub(crate) fn add_stage(
    bookie: &mut Bookie,
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
    match bookie
        .journal
        .add(token, ledger, entry, master_key, body, options)
    {
        Ok(()) => {
            bookie.stats.adds += 1;
            bookie.stats.add_bytes += u64::try_from(body.len()).expect("usize fits u64");
            Step::Consumed
        }
        Err(AddError::StagingFull) => {
            // Backpressure, not an error: the frame stays and is retried next turn.
            client.pending_remove(slot);
            Step::Stall
        }
        Err(error) => {
            client.pending_remove(slot);
            let code = add_error_code(error);
            client.respond_add_pending(&pending, code);
            bookie.stats.add_answered(pending.received_at, code);
            Step::Consumed
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
