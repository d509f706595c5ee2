//! Completions: network operations the ring reports (accept, recv, send, cancel, eventfd).

use super::{
    Shard, TAG_ACCEPT, TAG_CANCEL, TAG_CANCEL_LISTENER, TAG_EVENTFD, TAG_INDEX_MASK,
    TAG_KIND_SHIFT, TAG_RECV, TAG_SEND,
};
use crate::connection::Connection;
use crate::limits;
use crate::request::client::Client;
use crate::tls::Security;
use engine::uring::{Completion, Socket};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

impl Shard {
    pub(super) fn reap(&mut self) {
        let mut completions = std::mem::take(&mut self.completions);
        self.ring.borrow_mut().reap(&mut completions);
        for completion in completions.drain(..) {
            // First: the buffer is idle again before any handler looks at it.
            self.net.complete(&completion);
            self.bookie.progress = true;
            let index = completion.tag() & TAG_INDEX_MASK;
            match completion.tag() >> TAG_KIND_SHIFT {
                TAG_ACCEPT => self.on_accept(&completion),
                TAG_RECV => self.on_recv(index, completion.result),
                TAG_SEND => self.on_send(index, completion.result),
                TAG_CANCEL => self.operation_done(index),
                TAG_EVENTFD => self.listener.eventfd_armed = completion.more(),
                TAG_CANCEL_LISTENER => {}
                kind => unreachable!("unknown completion kind {kind}"),
            }
        }
        self.completions = completions;
    }

    pub(super) fn on_accept(&mut self, completion: &Completion) {
        if !completion.more() {
            self.listener.accept_armed = false;
            if completion.result < 0 && completion.result != -libc::ECANCELED {
                // E.g. EMFILE: re-arming at once would spin on the same error.
                self.listener.accept_retry_at =
                    Some(Instant::now() + Duration::from_millis(limits::LOOP_WAIT_MS_MAX));
            }
        }
        let Some(fd) = Socket::adopt_accepted(completion) else {
            if completion.result != -libc::ECANCELED {
                self.bookie.stats.accept_errors += 1;
            }
            return;
        };
        let Some(index) = (!self.lifecycle.stopping)
            .then(|| self.connections.free.pop())
            .flatten()
        else {
            self.bookie.stats.connections_rejected += 1;
            return;
        };
        // Best effort: without it responses may wait for Nagle, but they still arrive.
        let _ = Socket::set_nodelay(fd.as_raw_fd());
        let generation = self.connections.generations[index as usize];
        let requests_max = self.config.requests_in_flight_max;
        let client = Client::new(generation, requests_max, limits::SEND_BUFFER_SIZE, false);
        let plaintext_authorized = match self.tls.as_ref() {
            Some(tls) => tls.settings().plaintext_authorized(),
            None => true,
        };
        let connection = Connection {
            fd,
            client,
            recv_buffer: self.net.allocate(limits::RECV_BUFFER_SIZE_INITIAL),
            recv_filled: 0,
            recv_armed: false,
            decode_wanted: false,
            eof: false,
            send_buffer: self.net.allocate(limits::SEND_BUFFER_SIZE),
            send_offset: 0,
            send_length: 0,
            send_armed: false,
            out_offset: 0,
            operations_in_flight: 0,
            closing: false,
            cancel_submitted: false,
            active_last: Instant::now(),
            received_at: Instant::now(),
            security: Security::plaintext(plaintext_authorized),
        };
        self.connections.slots[index as usize] = Some(connection);
        self.connections.active.push(index);
        self.bookie.stats.connections_accepted += 1;
    }

    pub(super) fn on_recv(&mut self, index: u32, result: i32) {
        let connection = self.connection_mut(index);
        connection.recv_armed = false;
        connection.operations_in_flight -= 1;
        if connection.closing {
            return;
        }
        match usize::try_from(result) {
            Ok(0) => {
                connection.eof = true;
                // A recv is armed only when no complete frame is left, so bytes still here
                // are a truncated frame: nothing of it was journalled.
                let cipher_left = connection
                    .security
                    .stream()
                    .is_some_and(|stream| stream.cipher_filled > 0);
                if connection.recv_filled > 0 || cipher_left {
                    connection.closing = true;
                    self.bookie.stats.connections_invalid += 1;
                }
            }
            Ok(count) => {
                match connection.security.stream_mut() {
                    Some(stream) => stream.cipher_filled += count,
                    None => connection.recv_filled += count,
                }
                connection.decode_wanted = true;
                let now = Instant::now();
                connection.active_last = now;
                connection.received_at = now;
            }
            // Reset by the peer, or cancelled.
            Err(_) => connection.closing = true,
        }
    }

    pub(super) fn on_send(&mut self, index: u32, result: i32) {
        let connection = self.connection_mut(index);
        connection.send_armed = false;
        connection.operations_in_flight -= 1;
        if connection.closing {
            return;
        }
        match usize::try_from(result) {
            Ok(count) if count > 0 => {
                // A short send resumes at the first unsent byte.
                connection.send_offset += count;
                assert!(connection.send_offset <= connection.send_length);
                if connection.send_offset == connection.send_length {
                    connection.send_offset = 0;
                    connection.send_length = 0;
                }
                connection.active_last = Instant::now();
            }
            // EPIPE, ECONNRESET, or a send that moved nothing: the peer is gone.
            _ => connection.closing = true,
        }
    }

    pub(super) fn operation_done(&mut self, index: u32) {
        self.connection_mut(index).operations_in_flight -= 1;
    }

    pub(super) fn connection_mut(&mut self, index: u32) -> &mut Connection {
        self.connections.slots[index as usize]
            .as_mut()
            .expect("completions name live connections")
    }
}
