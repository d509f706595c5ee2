//! Sends, closes and re-arming: one send per connection per turn, closing connections whose
//! operations have ended, and arming recvs, the accept and the eventfd read.

use super::{tag, Shard, TAG_ACCEPT, TAG_CANCEL, TAG_EVENTFD, TAG_RECV, TAG_SEND};
use crate::connection::Connection;
use std::os::fd::AsRawFd;
use std::time::Instant;

impl Shard {
    /// One send per connection per turn: the bytes left by a short send, or the next chunk of
    /// the connection's responses.
    pub(super) fn sends_submit(&mut self) {
        for position in 0..self.connections.active.len() {
            let index = self.connections.active[position];
            self.tls_start_if_flushed(index);
            let connection = self.connections.slots[index as usize]
                .as_mut()
                .expect("active is live");
            if !connection.wants_send() {
                continue;
            }
            if connection.send_offset == connection.send_length {
                let buffer = self.net.get_mut(connection.send_buffer);
                let out = &mut connection.client.out;
                let unsent = &out[connection.out_offset..];
                let (taken, length) = match connection.security.stream_mut() {
                    // Sealed into records; handshake messages and alerts go first.
                    Some(stream) => stream.session.seal_into(unsent, buffer),
                    None => {
                        let length = buffer.len().min(unsent.len());
                        buffer[..length].copy_from_slice(&unsent[..length]);
                        (length, length)
                    }
                };
                // An offset instead of draining: a large response leaves in many chunks, and
                // shifting the rest after each one would be quadratic.
                connection.out_offset += taken;
                if connection.out_offset == out.len() {
                    out.clear();
                    connection.out_offset = 0;
                }
                connection.send_offset = 0;
                connection.send_length = length;
                if length == 0 {
                    // A TLS session still in its handshake holds responses back (none are
                    // made before it completes); a send of nothing would read as a hang-up.
                    continue;
                }
            }
            let (offset, length) = (
                connection.send_offset,
                connection.send_length - connection.send_offset,
            );
            let fd = connection.fd.as_raw_fd();
            let tag = tag(TAG_SEND, index);
            let buffer = connection.send_buffer;
            let result =
                self.ring
                    .borrow_mut()
                    .send(tag, fd, &mut self.net, buffer, offset, length);
            if operation_submitted(result, connection, &mut self.bookie.progress) {
                connection.send_armed = true;
            }
        }
        // The last stage of this turn's durable adds: their answers are on their way.
        if let Some(reaped_at) = self.durable_reaped_at.take() {
            let us = u64::try_from(reaped_at.elapsed().as_micros()).unwrap_or(u64::MAX);
            self.bookie.stats.durable_to_sent_us.record(us);
        }
    }

    /// Starts closing connections that are done, cancels their operations, and frees the
    /// slots whose operations have all completed.
    pub(super) fn closes_advance(&mut self) {
        let mut position = 0;
        while position < self.connections.active.len() {
            let index = self.connections.active[position];
            let connection = self.connections.slots[index as usize]
                .as_mut()
                .expect("active is live");
            let flushed = connection.client.is_idle()
                && !connection.send_armed
                && connection.send_offset == connection.send_length;
            if flushed && (connection.eof || self.lifecycle.stopping) {
                connection.closing = true;
            }
            if !connection.closing {
                position += 1;
                continue;
            }
            if connection.operations_in_flight == 0 {
                self.connections.active.swap_remove(position);
                self.connection_free(index);
                continue;
            }
            if !connection.cancel_submitted {
                let fd = connection.fd.as_raw_fd();
                match self.ring.borrow_mut().cancel_fd(tag(TAG_CANCEL, index), fd) {
                    Ok(()) => {
                        connection.cancel_submitted = true;
                        connection.operations_in_flight += 1;
                    }
                    Err(_) => self.bookie.progress = true,
                }
            }
            position += 1;
        }
    }

    /// Frees a closed connection's slot; the fd closes here, after its last completion.
    pub(super) fn connection_free(&mut self, index: u32) {
        let connection = self.connections.slots[index as usize]
            .take()
            .expect("live connection");
        assert_eq!(connection.operations_in_flight, 0);
        // Its batches may still be running (their reads' completions will find no client):
        // the buffers they borrowed go back.
        let mut connection = connection;
        connection
            .client
            .batch_buffers_return(&mut self.bookie.batch_buffers);
        self.net.release(connection.recv_buffer);
        self.net.release(connection.send_buffer);
        if let Some(stream) = connection.security.stream() {
            self.net.release(stream.cipher_buffer);
        }
        let generation = &mut self.connections.generations[index as usize];
        *generation = generation.wrapping_add(1);
        self.connections.free.push(index);
        drop(connection);
    }

    /// Arms recvs where the caps allow, and the accept and eventfd reads if they ended.
    pub(super) fn arm_all(&mut self) {
        if !self.lifecycle.stopping {
            for position in 0..self.connections.active.len() {
                let index = self.connections.active[position];
                self.recv_arm(index);
            }
            self.accept_arm();
        }
        self.eventfd_arm();
    }

    pub(super) fn recv_arm(&mut self, index: u32) {
        let connection = self.connections.slots[index as usize]
            .as_mut()
            .expect("active is live");
        // With TLS the recv fills the ciphertext buffer; the session fills `recv_buffer`.
        let (buffer, offset) = match connection.security.stream() {
            Some(stream) => (stream.cipher_buffer, stream.cipher_filled),
            None => (connection.recv_buffer, connection.recv_filled),
        };
        if !connection.wants_recv(offset < self.net.size(buffer)) {
            return;
        }
        let fd = connection.fd.as_raw_fd();
        let result =
            self.ring
                .borrow_mut()
                .recv(tag(TAG_RECV, index), fd, &mut self.net, buffer, offset);
        if operation_submitted(result, connection, &mut self.bookie.progress) {
            connection.recv_armed = true;
        }
    }

    pub(super) fn accept_arm(&mut self) {
        let Some(listener) = self.listener.socket.as_ref() else {
            return;
        };
        if self.listener.accept_armed
            || self
                .listener
                .accept_retry_at
                .is_some_and(|at| Instant::now() < at)
        {
            return;
        }
        let fd = listener.as_raw_fd();
        if self
            .ring
            .borrow_mut()
            .accept_multishot(tag(TAG_ACCEPT, 0), fd)
            .is_ok()
        {
            self.listener.accept_armed = true;
            self.listener.accept_retry_at = None;
        }
    }

    pub(super) fn eventfd_arm(&mut self) {
        if self.listener.eventfd_armed {
            return;
        }
        let eventfd = self.bookie.router.eventfd(self.id);
        let tag = tag(TAG_EVENTFD, 0);
        let buffer = self.listener.eventfd_buffer;
        if self
            .ring
            .borrow_mut()
            .read_eventfd(tag, eventfd, &mut self.net, buffer)
            .is_ok()
        {
            self.listener.eventfd_armed = true;
        }
    }
}

/// What submitting one of a connection's socket operations means for it: true when the
/// operation is in flight (counted on the connection); a queue still full after an early
/// submit retries next turn (the turn counts as progress, so the loop does not sleep), and
/// any other error closes the connection.
fn operation_submitted(
    result: Result<(), engine::disk::SubmitError>,
    connection: &mut Connection,
    progress: &mut bool,
) -> bool {
    match result {
        Ok(()) => {
            connection.operations_in_flight += 1;
            true
        }
        Err(engine::disk::SubmitError::QueueFull) => {
            *progress = true;
            false
        }
        Err(engine::disk::SubmitError::Io(_)) => {
            connection.closing = true;
            false
        }
    }
}
