//! Damage the journal itself notices or keeps (docs/scrub.md): the set of entries found
//! damaged and not repaired yet, which the checkpoint carries so a restart asks for their
//! repair at once, and the client's digest checked on add (`Config::verify_digest_on_add`).
//! The scrubber's own findings are `scrub.rs`'s.

use super::{DamageFound, Event, Journal};
use crate::digest::{digest_check, DigestCheck};
use crate::disk::Disk;
use crate::ids::{EntryId, FileId, LedgerId, Location};
use crate::segment_check::Damage;

impl<D: Disk> Journal<D> {
    /// Records an entry found damaged (docs/scrub.md, "Repair"): kept in the checkpoint until
    /// `damaged_repaired`, so a restart asks for its repair again at once. False when it was
    /// recorded already, or `checkpoint::DAMAGED_MAX` are (the scrubber finds the others
    /// again).
    pub fn damaged_record(&mut self, ledger: LedgerId, entry: EntryId) -> bool {
        let recorded = self.index.damaged_insert(ledger, entry);
        if recorded {
            self.seal.checkpoint_request();
        }
        recorded
    }

    /// A damaged entry was written again (its repair is durable): forgotten.
    pub fn damaged_repaired(&mut self, ledger: LedgerId, entry: EntryId) {
        if self.index.damaged_remove(ledger, entry) {
            self.seal.checkpoint_request();
        }
    }

    /// `Config::verify_digest_on_add`: the body's digest against the ledger's type (learned
    /// from the first bodies); a mismatch is reported as damage that reached the bookie.
    pub(super) fn digest_verify_on_add(
        &mut self,
        ledger: LedgerId,
        entry: EntryId,
        location: Location,
        body: &[u8],
    ) {
        let state = self.index.ledger_mut(ledger).expect("staged above");
        let (check, kind, tries) = digest_check(state.digest, state.digest_tries, body);
        (state.digest, state.digest_tries) = (kind, tries);
        if check == DigestCheck::Mismatch {
            self.stats.digest_mismatches_on_add += 1;
            self.events.push(Event::Damage(DamageFound {
                file: FileId::Segment(location.segment),
                position: Some(location.position.0),
                damage: Damage::Digest,
                entry: Some((ledger, entry)),
            }));
        }
    }
}
