//! A TCP connection's socket state: its receive and send buffers, the one recv and one send
//! it may have in flight, and its cross-shard reference. What its requests do is `request`'s.

use crate::request::client::Client;
use crate::tls::Security;
use engine::uring::NetBufferId;
use std::os::fd::OwnedFd;
use std::time::Instant;

/// A connection's reference across shards: generation (high 32 bits) | slot (low 32 bits).
#[must_use]
pub fn connection_reference(slot: u32, generation: u32) -> u64 {
    (u64::from(generation) << 32) | u64::from(slot)
}

/// Splits a connection reference into slot and generation.
#[must_use]
pub fn connection_reference_split(reference: u64) -> (u32, u32) {
    let slot = u32::try_from(reference & 0xFFFF_FFFF).expect("masked to 32 bits");
    let generation = u32::try_from(reference >> 32).expect("shifted to 32 bits");
    (slot, generation)
}

/// A TCP connection: socket, buffers and the state of its one recv and one send.
#[derive(Debug)]
pub struct Connection {
    /// Kept open until every operation on it has completed, so its number is never reused
    /// while the kernel may still act on it.
    pub fd: OwnedFd,
    /// Requests and responses.
    pub client: Client,
    /// Received bytes live in `recv_buffer[..recv_filled]`, a frame always starting at 0.
    pub recv_buffer: NetBufferId,
    /// Bytes received and not yet decoded.
    pub recv_filled: usize,
    /// A recv is in flight.
    pub recv_armed: bool,
    /// Complete frames may wait in the buffer (set by a recv, kept while decoding stalls).
    pub decode_wanted: bool,
    /// The peer closed its side.
    pub eof: bool,
    /// The buffer a send copies `client.out` into.
    pub send_buffer: NetBufferId,
    /// Start of the unsent part of `send_buffer` (a short send resumes there).
    pub send_offset: usize,
    /// End of the bytes copied into `send_buffer`.
    pub send_length: usize,
    /// A send is in flight.
    pub send_armed: bool,
    /// Bytes of `client.out` already copied into `send_buffer`.
    pub out_offset: usize,
    /// Recv, send and cancel operations in flight; the slot is freed only at 0.
    pub operations_in_flight: u32,
    /// The connection is closing: no new operations, cancel what runs, then free.
    pub closing: bool,
    /// The cancel for a closing connection was submitted.
    pub cancel_submitted: bool,
    /// Last traffic in either direction, for the idle timeout.
    pub active_last: Instant,
    /// When the last recv completed with bytes: the start of the receive → staged stage.
    pub received_at: Instant,
    /// Plaintext or TLS, and whether requests other than START_TLS and AUTH are served
    /// (`tls/security.rs`). With TLS, recvs fill the session's ciphertext buffer and
    /// `recv_buffer` holds the plaintext the session gives out; sends carry ciphertext.
    pub security: Security,
}

impl Connection {
    /// True when a recv may be armed: nothing stops reading, and the request and output
    /// caps leave room (otherwise the socket is left unread: TCP backpressure). `room` is
    /// whether the buffer the recv fills (the ciphertext one with TLS) has room.
    #[must_use]
    pub fn wants_recv(&self, room: bool) -> bool {
        !self.recv_armed
            && !self.decode_wanted
            && !self.closing
            && !self.eof
            // Between START_TLS's answer and the session: the ClientHello waits in the socket.
            && !self.security.is_starting()
            && room
            && self.client.has_room()
    }

    /// True when a send may be submitted: bytes left by a short send, responses, or (TLS)
    /// handshake messages and alerts the session queued.
    #[must_use]
    pub fn wants_send(&self) -> bool {
        !self.send_armed
            && !self.closing
            && (self.send_offset < self.send_length
                || !self.client.out.is_empty()
                || self
                    .security
                    .stream()
                    .is_some_and(|stream| stream.session.wants_write()))
    }
}
