//! Repairs of damaged entries, the shard's side (docs/scrub.md, "Repair"): damage the
//! scrubber found in the copy reads would use is queued for the repairer on the registration
//! thread (`Router::repair_push`); a good copy the repairer read from another bookie comes
//! back as `Mail::RepairEntry` and is journaled as a recovery add. Its record is newer than
//! the damaged one, so every later read finds it first, across restarts; the damaged bytes
//! stay where they were until their segment is compacted or removed.

use super::Shard;
use crate::limits;
use crate::request::pending::Token;
use crate::router::RepairRequest;
use engine::journal::{AddOptions, DamageFound};
use engine::{EntryId, FileId, LedgerId};

/// The token client of repair adds: above every connection and peer (`limits`), so
/// `on_durable` tells a repair from a client's add.
pub(super) const REPAIR_CLIENT: u32 = (1 << 20) - 1;
const _: () = assert!(limits::CONNECTIONS_MAX_LIMIT + limits::SHARDS_MAX < REPAIR_CLIENT as usize);

/// A repair copy journaled and not yet durable.
#[derive(Clone, Copy, Debug)]
pub(super) struct RepairInFlight {
    ledger: i64,
    entry: i64,
}

impl Shard {
    /// Damage found: if it is in the copy reads use, asks the repairer for a good one.
    pub(super) fn repair_request(&mut self, found: &DamageFound) {
        let Some((ledger, entry)) = found.entry else {
            return;
        };
        let (FileId::Segment(segment) | FileId::Index(segment)) = found.file else {
            return;
        };
        if !self.bookie.journal.entry_current_in(ledger, entry, segment) {
            // Repaired already (or deleted): the damaged copy is no longer read.
            return;
        }
        // A record's damage is kept in the checkpoint until repaired: a restart asks again
        // at once. An entry named by a damaged index page may be one the runs span without
        // this bookie holding it (another bookie's share of a striped ledger): the repairer
        // tells, and the next cycle names it again if it was ours.
        if matches!(found.file, FileId::Segment(_)) {
            self.bookie.journal.damaged_record(ledger, entry);
        }
        self.repair_push(ledger.0, entry.0);
    }

    /// Asks the repairer, unless it was asked for this entry less than `REPAIR_RETRY_MS` ago:
    /// when every copy is damaged, each bookie's repair reads the others' copies, whose reads
    /// find their damage and ask for a repair in turn; without the pause the bookies kept
    /// each other repairing (and marking the ledger) about ten times a second.
    fn repair_push(&mut self, ledger: i64, entry: i64) {
        let now = std::time::Instant::now();
        let retry = std::time::Duration::from_millis(limits::REPAIR_RETRY_MS);
        if self
            .repairs_asked
            .get(&(ledger, entry))
            .is_some_and(|&asked| now.duration_since(asked) < retry)
        {
            return;
        }
        if self.repairs_asked.len() >= limits::REPAIRS_ASKED_MAX {
            self.repairs_asked
                .retain(|_, &mut asked| now.duration_since(asked) < retry);
        }
        if self.repairs_asked.len() < limits::REPAIRS_ASKED_MAX {
            self.repairs_asked.insert((ledger, entry), now);
        }
        let request = RepairRequest {
            ledger,
            entry,
            shard: self.id,
        };
        if self.bookie.router.repair_push(request) {
            self.bookie.stats.repairs_requested += 1;
        }
    }

    /// On the tick, once after the repairer started: asks again for the repair of every
    /// entry the checkpoint says was damaged and not repaired before the restart.
    pub(super) fn repairs_resume(&mut self) {
        if self.repairs_resumed || !self.bookie.router.repair_is_active() {
            return;
        }
        self.repairs_resumed = true;
        for (ledger, entry) in self.bookie.journal.damaged() {
            self.repair_push(ledger.0, entry.0);
        }
    }

    /// A good copy from another bookie: journaled as a recovery add of the same entry.
    pub(super) fn repair_apply(&mut self, ledger: i64, entry: i64, body: &[u8]) {
        let Some(state) = self.bookie.journal.ledger(LedgerId(ledger)) else {
            // Deleted meanwhile: nothing to repair.
            return;
        };
        let key = state.master_key;
        let Some(slot) = self.repairs_in_flight.iter().position(Option::is_none) else {
            tracing::warn!(
                shard = self.id,
                "repair of ledger {ledger} entry {entry} dropped: {} repairs in flight",
                limits::REPAIRS_IN_FLIGHT_MAX
            );
            return;
        };
        let token = Token {
            client: REPAIR_CLIENT,
            slot: u32::try_from(slot).expect("few slots"),
            generation: 0,
        };
        let options = AddOptions {
            recovery: true,
            deferred: false,
        };
        let added = self.bookie.journal.add(
            token.encode(),
            LedgerId(ledger),
            EntryId(entry),
            &key,
            body,
            options,
        );
        match added {
            Ok(()) => self.repairs_in_flight[slot] = Some(RepairInFlight { ledger, entry }),
            Err(error) => tracing::warn!(
                shard = self.id,
                "repair of ledger {ledger} entry {entry} not journaled: {error:?}; the next \
                 scrub cycle asks again"
            ),
        }
    }

    /// A repair add became durable (or failed with the journal).
    pub(super) fn repair_durable(&mut self, token: Token, durable: bool) {
        let slot = token.slot as usize;
        let Some(repair) = self.repairs_in_flight.get_mut(slot).and_then(Option::take) else {
            return;
        };
        if durable {
            self.bookie.stats.repairs_written += 1;
            self.repairs_asked.remove(&(repair.ledger, repair.entry));
            self.bookie
                .journal
                .damaged_repaired(LedgerId(repair.ledger), EntryId(repair.entry));
            tracing::info!(
                shard = self.id,
                "repaired ledger {} entry {} from another bookie's copy",
                repair.ledger,
                repair.entry
            );
        }
    }
}
