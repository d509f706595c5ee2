//! Mail between shards: forwarded requests in, replies out, and the wake-ups.

use super::Shard;
use crate::connection::connection_reference_split;
use crate::limits;
use crate::router::{Mail, SendError, ShardId, CONNECTION_REFERENCE_SIZE};

impl Shard {
    pub(super) fn mail_receive(&mut self) {
        for _ in 0..limits::MAILBOX_MESSAGES_PER_TURN_MAX {
            let waiting: usize = self.peers.iter().map(|peer| peer.inbox.len()).sum();
            if waiting >= limits::PEER_INBOX_MESSAGES_MAX {
                break;
            }
            let Ok(mail) = self.mailbox.try_recv() else {
                break;
            };
            self.bookie.progress = true;
            match mail {
                Mail::Requests { from, records } => {
                    self.peers[usize::from(from)].inbox.push_back(records);
                }
                Mail::Replies { records } => self.replies_deliver(&records),
                Mail::DeleteLedgers { ledgers } => self.ledgers_delete(&ledgers),
                Mail::RepairEntry {
                    ledger,
                    entry,
                    body,
                } => self.repair_apply(ledger, entry, &body),
            }
        }
    }

    /// Deletes ledgers whose metadata is gone (the collector's mail): the journal refuses
    /// them from now on, and the router forgets them so the map does not grow for ever.
    fn ledgers_delete(&mut self, ledgers: &[i64]) {
        assert!(ledgers.len() <= limits::GC_DELETE_BATCH_LEDGERS_MAX);
        for &ledger in ledgers {
            // False only if the journal never held it (claimed, then nothing written).
            let _ = self.bookie.journal.delete_ledger(engine::LedgerId(ledger));
            self.bookie.router.forget(ledger, self.id);
        }
    }

    /// Hands each reply to the connection it answers, if that connection is still open.
    pub(super) fn replies_deliver(&mut self, records: &[u8]) {
        let mut rest = records;
        while !rest.is_empty() {
            let (reference, after) = rest
                .split_first_chunk::<CONNECTION_REFERENCE_SIZE>()
                .expect("reply records start with a connection reference");
            let length = after
                .first_chunk::<4>()
                .expect("a reply frame has a length prefix");
            let frame_size = 4 + usize::try_from(u32::from_be_bytes(*length)).expect("fits");
            let (frame, after) = after.split_at(frame_size);
            rest = after;
            let (slot, generation) = connection_reference_split(u64::from_be_bytes(*reference));
            let connection = self
                .connections
                .slots
                .get_mut(slot as usize)
                .and_then(Option::as_mut);
            let Some(connection) = connection else {
                continue;
            };
            if connection.client.generation != generation || connection.closing {
                continue;
            }
            connection.client.out.extend_from_slice(frame);
            connection.client.forwarded_in_flight -= 1;
        }
    }

    /// Sends this turn's forwarded requests and replies, one mail per destination each, and
    /// wakes every destination once.
    pub(super) fn mail_send(&mut self) {
        self.mail_retry = false;
        let me = usize::from(self.id);
        for shard in (0..self.peers.len()).filter(|&shard| shard != me) {
            let to = ShardId::try_from(shard).expect("shard ids fit u16");
            let requests = std::mem::take(&mut self.bookie.forward_out[shard]);
            if !requests.is_empty() {
                let mail = Mail::Requests {
                    from: self.id,
                    records: requests,
                };
                if let Some(Mail::Requests { records, .. }) = self.mail_post(to, mail) {
                    self.bookie.forward_out[shard] = records;
                }
            }
            let replies = std::mem::take(&mut self.peers[shard].client.out);
            if !replies.is_empty() {
                if let Some(Mail::Replies { records }) =
                    self.mail_post(to, Mail::Replies { records: replies })
                {
                    self.peers[shard].client.out = records;
                }
            }
        }
        for shard in 0..self.bookie.wake.len() {
            if std::mem::take(&mut self.bookie.wake[shard]) {
                let to = ShardId::try_from(shard).expect("shard ids fit u16");
                if let Err(error) = self.bookie.router.wake(to) {
                    tracing::error!(shard = self.id, "cannot wake shard {shard}: {error}");
                }
            }
        }
    }

    /// Posts a mail; gives it back if the mailbox is full (kept and retried next turn).
    pub(super) fn mail_post(&mut self, to: ShardId, mail: Mail) -> Option<Mail> {
        match self.bookie.router.send(to, mail) {
            Ok(()) => {
                self.bookie.wake[usize::from(to)] = true;
                None
            }
            Err(SendError::Full(mail)) => {
                self.mail_retry = true;
                Some(mail)
            }
            // Only a shard that exited is gone, and shards exit only when all are drained.
            Err(SendError::Gone) => None,
        }
    }
}
