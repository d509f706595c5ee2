//! Journal events: durable, written, failed and read-done records become responses; parked
//! long polls and engine-busy reads are served again.

use super::{client_find, Shard};
use crate::request::batch::batch_advance;
use crate::request::pending::{PendingOp, Token};
use crate::request::read::{read_answer, read_error_code, read_retry_push, read_start};
use crate::request::v3;
use engine::{Event, ReadError};
use std::time::Instant;
use wire::code;

impl Shard {
    pub(super) fn events_handle(&mut self) {
        let mut events = std::mem::take(&mut self.events);
        self.bookie.journal.events_swap(&mut events);
        self.bookie.progress |= !events.is_empty();
        let answers = events
            .iter()
            .any(|event| matches!(event, Event::Durable { .. } | Event::Written { .. }));
        if answers && self.durable_reaped_at.is_none() {
            self.durable_reaped_at = Some(Instant::now());
        }
        // A durable entry or fence may move a LAC that parked long polls wait for.
        self.parked_check |= !events.is_empty();
        for event in events.drain(..) {
            match event {
                Event::Durable { token } => self.on_durable(token, true),
                Event::Failed { token } => self.on_durable(token, false),
                Event::ReadDone { token, slot } => self.on_read_done(token, slot),
                // Only v3 DEFERRED_SYNC adds are reported merely written.
                Event::Written { token } => self.on_written(token),
                Event::Damage(found) => {
                    self.on_damage(found);
                    self.repair_request(&found);
                }
            }
        }
        self.events = events;
    }

    /// Damage found, by the scrubber or by a read: one line per finding, for the operator
    /// (docs/scrub.md), at most `DAMAGE_LINES_PER_TICK_MAX` a tick (the rest are counted and
    /// summed up on the tick). Reads of a damaged entry answer EIO until a repair writes it.
    fn on_damage(&mut self, found: engine::journal::DamageFound) {
        if self.damage_lines_this_tick >= crate::limits::DAMAGE_LINES_PER_TICK_MAX {
            self.damage_lines_dropped += 1;
            return;
        }
        self.damage_lines_this_tick += 1;
        let position = found
            .position
            .map_or_else(|| "-".to_owned(), |position| position.to_string());
        let by = if found.damage == engine::segment_check::Damage::FoundByRead {
            "read"
        } else {
            "scrub"
        };
        match found.entry {
            Some((ledger, entry)) => tracing::error!(
                shard = self.id,
                "{by}: damage in {} at byte {position}: {}; ledger {} entry {} \
                 cannot be read here",
                found.file,
                found.damage,
                ledger.0,
                entry.0
            ),
            None => tracing::error!(
                shard = self.id,
                "{by}: damage in {} at byte {position}: {}",
                found.file,
                found.damage
            ),
        }
    }

    pub(super) fn on_durable(&mut self, token: u64, durable: bool) {
        let token = Token::decode(token);
        if token.client == super::repair::REPAIR_CLIENT {
            self.repair_durable(token, durable);
            return;
        }
        let connections_max = self.config.connections_max;
        let Some(client) = client_find(
            &mut self.connections.slots,
            &mut self.peers,
            connections_max,
            token,
        ) else {
            return;
        };
        let pending = client.pending(token.slot);
        let bookie = &mut self.bookie;
        let code = if durable { code::EOK } else { code::EIO };
        match pending.op {
            PendingOp::Add => {
                client.respond_add_pending(&pending, code);
                client.pending_remove(token.slot);
                bookie.stats.add_answered(pending.received_at, code);
            }
            // A deferred add was acked at `Written`; only a failure before that arrives here.
            PendingOp::AddDeferred | PendingOp::WriteLac | PendingOp::Force => {
                assert!(
                    pending.op != PendingOp::AddDeferred || !durable,
                    "deferred adds are reported Written, not Durable"
                );
                v3::respond_durable(client, &pending, code);
                client.pending_remove(token.slot);
                if pending.op == PendingOp::AddDeferred {
                    bookie.stats.add_answered(pending.received_at, code);
                }
            }
            // The fence is durable: now read (protocol §5.2 step 4). A failed fence is EIO.
            PendingOp::Fence if durable => read_start(bookie, client, token),
            PendingOp::Fence => {
                read_answer(&bookie.journal, client, &pending, code::EIO, &[]);
                client.pending_remove(token.slot);
            }
            PendingOp::FenceBatch if durable => batch_advance(bookie, client, token),
            PendingOp::FenceBatch => bookie.batch_end(client, token.slot, code::EIO),
            op => unreachable!("durable event for a pending {op:?}"),
        }
    }

    /// A DEFERRED_SYNC add is written (not yet synced): ack it (protocol §5.6).
    pub(super) fn on_written(&mut self, token: u64) {
        let token = Token::decode(token);
        let connections_max = self.config.connections_max;
        let Some(client) = client_find(
            &mut self.connections.slots,
            &mut self.peers,
            connections_max,
            token,
        ) else {
            return;
        };
        let pending = client.pending(token.slot);
        assert_eq!(
            pending.op,
            PendingOp::AddDeferred,
            "only deferred adds are Written"
        );
        v3::respond_durable(client, &pending, code::EOK);
        client.pending_remove(token.slot);
        self.bookie
            .stats
            .add_answered(pending.received_at, code::EOK);
    }

    /// Serves the parked long polls that are due (LAC passed, fenced, timed out, stopping) and
    /// drops those whose client is gone. Runs when the LAC may have moved, when the earliest
    /// deadline has passed (the loop's sleep ends there), and every tick.
    pub(super) fn parked_advance(&mut self) {
        let now = Instant::now();
        let deadline_passed = self
            .bookie
            .parked_deadline_next
            .is_some_and(|next| now >= next);
        let check = std::mem::take(&mut self.parked_check) || deadline_passed;
        if self.bookie.parked.is_empty() {
            self.bookie.parked_deadline_next = None;
            return;
        }
        if !check {
            return;
        }
        let connections_max = self.config.connections_max;
        let mut parked = std::mem::take(&mut self.bookie.parked);
        let mut position = 0;
        while position < parked.len() {
            let entry = parked[position];
            let token = Token::decode(entry.token);
            let client = client_find(
                &mut self.connections.slots,
                &mut self.peers,
                connections_max,
                token,
            );
            let Some(client) = client else {
                parked.swap_remove(position);
                continue;
            };
            let pending = client.pending(token.slot);
            assert_eq!(pending.op, PendingOp::Parked);
            if !v3::parked_due(
                &self.bookie,
                &entry,
                pending.ledger,
                now,
                self.lifecycle.stopping,
            ) {
                position += 1;
                continue;
            }
            parked.swap_remove(position);
            self.bookie.progress = true;
            v3::read_serve(&mut self.bookie, client, token);
        }
        assert!(
            self.bookie.parked.is_empty(),
            "serving a read parks nothing"
        );
        self.bookie.parked_deadline_next = parked.iter().map(|entry| entry.deadline).min();
        self.bookie.parked = parked;
    }

    pub(super) fn on_read_done(&mut self, token_raw: u64, slot: engine::journal::ReadSlot) {
        let token = Token::decode(token_raw);
        let connections_max = self.config.connections_max;
        let client = client_find(
            &mut self.connections.slots,
            &mut self.peers,
            connections_max,
            token,
        );
        let bookie = &mut self.bookie;
        let mut after = None;
        if let Some(client) = client {
            let pending = client.pending(token.slot);
            if matches!(
                pending.op,
                PendingOp::ReadLacExplicit | PendingOp::ReadLacLast
            ) {
                v3::read_lac_read_done(bookie, client, token, slot);
                return;
            }
            let result = bookie.journal.read_result(slot);
            after = match (pending.op, result) {
                (PendingOp::Read, Err(ReadError::Busy)) => Some(PendingOp::ReadRetry),
                (PendingOp::Batch, Err(ReadError::Busy)) => Some(PendingOp::BatchRetry),
                (PendingOp::Read, Ok((_, body))) => {
                    bookie.stats.reads += 1;
                    let bytes = body.len();
                    bookie
                        .stats
                        .read_answered(pending.received_at, code::EOK, bytes);
                    read_answer(&bookie.journal, client, &pending, code::EOK, body);
                    client.pending_remove(token.slot);
                    None
                }
                (PendingOp::Read, Err(error)) => {
                    let code = read_error_code(error);
                    bookie.stats.read_answered(pending.received_at, code, 0);
                    read_answer(&bookie.journal, client, &pending, code, &[]);
                    client.pending_remove(token.slot);
                    None
                }
                // An entry the size rule refuses ends the batch with what it has.
                (PendingOp::Batch, Ok((_, body))) => {
                    if client.batch_push(token.slot, body) {
                        Some(PendingOp::Batch)
                    } else {
                        bookie.batch_end(client, token.slot, code::EOK);
                        None
                    }
                }
                (PendingOp::Batch, Err(error)) => {
                    bookie.batch_end(client, token.slot, read_error_code(error));
                    None
                }
                (op, _) => unreachable!("read completion for a pending {op:?}"),
            };
        }
        // The slot is released before the next read of a batch may need it.
        bookie.journal.read_release(slot);
        let Some(op) = after else { return };
        let client = client_find(
            &mut self.connections.slots,
            &mut self.peers,
            connections_max,
            token,
        )
        .expect("found above");
        match op {
            PendingOp::Batch => batch_advance(bookie, client, token),
            retry => read_retry_push(bookie, client, token, retry),
        }
    }

    /// Restarts the reads that found the engine busy, oldest first, until one finds it busy
    /// again (each at most once a turn).
    pub(super) fn read_retries_run(&mut self) {
        let connections_max = self.config.connections_max;
        for _ in 0..self.bookie.read_retry.len() {
            let queued = self.bookie.read_retry.len();
            let Some(token) = self.bookie.read_retry.pop_front() else {
                break;
            };
            let token = Token::decode(token);
            let Some(client) = client_find(
                &mut self.connections.slots,
                &mut self.peers,
                connections_max,
                token,
            ) else {
                continue;
            };
            self.bookie.stats.read_retries += 1;
            match client.pending(token.slot).op {
                PendingOp::ReadRetry => read_start(&mut self.bookie, client, token),
                PendingOp::BatchRetry => batch_advance(&mut self.bookie, client, token),
                PendingOp::ReadLacExplicitRetry | PendingOp::ReadLacLastRetry => {
                    v3::read_lac_advance(&mut self.bookie, client, token);
                }
                op => unreachable!("retry queued for a pending {op:?}"),
            }
            // Back in the queue: the engine is still busy (no read slot, or a swap holds the
            // segment), and the reads behind it would mostly find the same. They keep their
            // place for the next turn, and their patience (`READ_RETRY_WAIT_MS_MAX`) runs
            // meanwhile. Retrying every queued read every turn, an all-ledgers read of 500
            // ledgers (4,000 outstanding against 1,040 engine slots a shard) made 3.3-7.6M
            // retries on one shard for 3.6M reads served, CPU the adds' acks on the same loop
            // needed (`make busy-reads`, 2026-12-07).
            if self.bookie.read_retry.len() >= queued {
                break;
            }
        }
    }
}
