//! Decoding: complete frames of each connection and peer inbox go to request handling.

use super::tls::Pump;
use super::Shard;
use crate::connection::{connection_reference, Connection};
use crate::request::{self, Origin, Step};
use crate::router::CONNECTION_REFERENCE_SIZE;
use crate::tls::{admit, Admission, RequestClass, Stage};
use engine::uring::NetBuffers;
use wire::DecodedAny;

/// How a decode pass over one client's bytes ended.
#[derive(Debug)]
enum DecodeEnd {
    /// No complete frame is left.
    NeedMore,
    /// The per-turn frame cap was reached: continue next turn without sleeping.
    Cap,
    /// A frame could not be handled now: retry next turn.
    Stall,
    /// A protocol violation: close the connection.
    Invalid,
    /// START_TLS was answered: what follows is ciphertext, decoded once the session starts.
    TlsStarting,
}

impl Shard {
    pub(super) fn decode_all(&mut self) {
        self.tls_handshakes_this_turn = 0;
        if !self.lifecycle.stopping {
            for position in 0..self.connections.active.len() {
                let index = self.connections.active[position];
                self.connection_decode(index);
            }
        }
        // Forwarded requests are served even while stopping: their origins wait for them.
        for from in 0..self.peers.len() {
            self.peer_decode(from);
        }
    }

    pub(super) fn connection_decode(&mut self, index: u32) {
        let connection = self.connections.slots[index as usize]
            .as_mut()
            .expect("active is live");
        if !connection.decode_wanted || connection.closing || connection.recv_armed {
            return;
        }
        if connection.security.stream().is_some() {
            match self.tls_pump(index) {
                Pump::Decode => {}
                Pump::Deferred | Pump::Failed => return,
            }
        }
        let connection = self.connections.slots[index as usize]
            .as_mut()
            .expect("active is live");
        let tls_configured = self.tls.is_some();
        let bytes = self.net.get(connection.recv_buffer);
        let filled = connection.recv_filled;
        let reference = connection_reference(index, connection.client.generation);
        let origin = Origin {
            client_index: index,
            reference,
            received_at: connection.received_at,
        };
        let frame_size_max = self.bookie.frame_size_max;
        let mut offset = 0;
        let mut frames = 0;
        let end = loop {
            if frames == self.config.frames_per_turn_max {
                break DecodeEnd::Cap;
            }
            match wire::decode_any_request(&bytes[offset..filled], frame_size_max) {
                Ok(DecodedAny::Frame {
                    request,
                    frame_size,
                }) => {
                    let frame = &bytes[offset..offset + frame_size];
                    let client = &mut connection.client;
                    let security = &mut connection.security;
                    let class = RequestClass::of(&request);
                    let step =
                        match admit(class, &security.stage, security.authorized, tls_configured) {
                            Admission::Serve => {
                                request::handle(&mut self.bookie, client, origin, request, frame)
                            }
                            Admission::Refuse => {
                                self.bookie.stats.requests_unauthorized += 1;
                                request::refuse_unauthorized(client, origin, &request)
                            }
                            Admission::StartTls => {
                                if request::start_tls_answer(client, origin, &request) {
                                    security.stage = Stage::Starting;
                                    offset += frame_size;
                                    frames += 1;
                                    break DecodeEnd::TlsStarting;
                                }
                                Step::Consumed
                            }
                        };
                    match step {
                        Step::Consumed => {
                            offset += frame_size;
                            frames += 1;
                        }
                        Step::Stall => break DecodeEnd::Stall,
                    }
                }
                Ok(DecodedAny::NeedMore) => break DecodeEnd::NeedMore,
                Err(_) => break DecodeEnd::Invalid,
            }
        };
        if frames > 0 {
            let waited = connection.received_at.elapsed();
            let waited_us = u64::try_from(waited.as_micros()).unwrap_or(u64::MAX);
            let frames = u64::try_from(frames).expect("usize fits u64");
            self.bookie.stats.received_to_handled_us_total += waited_us.saturating_mul(frames);
            self.bookie
                .stats
                .received_to_handled_us
                .record_n(waited_us, frames);
            self.bookie.stats.requests_handled += frames;
        }
        if offset > 0 {
            // Adds were copied into the journal's staging buffer, so consumed bytes can go.
            self.net
                .get_mut(connection.recv_buffer)
                .copy_within(offset..filled, 0);
            connection.recv_filled -= offset;
            self.bookie.progress = true;
        }
        match end {
            DecodeEnd::NeedMore => {
                // A TLS session may hold more plaintext than the buffer had room for.
                connection.decode_wanted = Shard::tls_has_input(connection);
                if connection.decode_wanted {
                    self.bookie.progress = true;
                }
                recv_buffer_fit(&mut self.net, connection, frame_size_max);
            }
            // Nothing more is read or decoded until the session starts (`sends.rs`).
            DecodeEnd::TlsStarting => connection.decode_wanted = false,
            DecodeEnd::Cap => self.bookie.progress = true,
            DecodeEnd::Stall => {}
            DecodeEnd::Invalid => {
                connection.closing = true;
                self.bookie.stats.connections_invalid += 1;
            }
        }
    }

    pub(super) fn peer_decode(&mut self, from: usize) {
        let peer = &mut self.peers[from];
        let client_index = u32::try_from(self.config.connections_max + from).expect("small");
        let frame_size_max = self.bookie.frame_size_max;
        let mut frames = 0;
        let turn_at = std::time::Instant::now();
        while let Some(records) = peer.inbox.front() {
            if peer.inbox_offset == records.len() {
                peer.inbox.pop_front();
                peer.inbox_offset = 0;
                continue;
            }
            if frames == self.config.frames_per_turn_max {
                self.bookie.progress = true;
                break;
            }
            let (reference, rest) = records[peer.inbox_offset..]
                .split_first_chunk::<CONNECTION_REFERENCE_SIZE>()
                .expect("forwarded records start with a connection reference");
            // Its wait on the origin shard is that shard's; the owner's latency starts here.
            let origin = Origin {
                client_index,
                reference: u64::from_be_bytes(*reference),
                received_at: turn_at,
            };
            // The origin shard decoded this frame with the same limit before forwarding it.
            let Ok(DecodedAny::Frame {
                request,
                frame_size,
            }) = wire::decode_any_request(rest, frame_size_max)
            else {
                unreachable!("a forwarded frame decodes")
            };
            let frame = &rest[..frame_size];
            match request::handle(&mut self.bookie, &mut peer.client, origin, request, frame) {
                Step::Consumed => {
                    peer.inbox_offset += CONNECTION_REFERENCE_SIZE + frame_size;
                    frames += 1;
                    self.bookie.stats.forwarded_served += 1;
                    self.bookie.progress = true;
                }
                Step::Stall => break,
            }
        }
    }
}

/// Grows the receive buffer when the frame at its start announces more bytes than it holds
/// (the decoder has already checked the length against `frame_size_max`).
fn recv_buffer_fit(net: &mut NetBuffers, connection: &mut Connection, frame_size_max: u32) {
    let bytes = net.get(connection.recv_buffer);
    let Some(prefix) = bytes[..connection.recv_filled].first_chunk::<4>() else {
        return;
    };
    let frame_size = usize::try_from(u32::from_be_bytes(*prefix)).expect("u32 fits usize") + 4;
    if frame_size <= net.size(connection.recv_buffer) {
        return;
    }
    let size = usize::try_from(frame_size_max).expect("u32 fits usize");
    assert!(
        frame_size <= size,
        "the decoder refuses frames over the limit"
    );
    let grown = net.allocate(size);
    let filled = connection.recv_filled;
    let (old, new) = (connection.recv_buffer, grown);
    let head = net.get(old)[..filled].to_vec();
    net.get_mut(new)[..filled].copy_from_slice(&head);
    net.release(old);
    connection.recv_buffer = new;
}
