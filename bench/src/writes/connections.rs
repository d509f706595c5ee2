//! The client side of the wire: a few TCP connections driven by one thread through the
//! engine's io_uring ring. bench is `forbid(unsafe_code)`, so it cannot call poll(2) itself;
//! the ring's safe API (whose `unsafe` lives in `engine::uring`) waits on all sockets at once.
//!
//! Per connection exactly one receive is always armed (into a large buffer, every complete
//! response in it decoded per completion) and at most one send is in flight: frames encoded
//! while it flies gather in `pending` and leave together in the next send.

use crate::tls_client::{handshake, open_records, seal_records};
use engine::uring::{errno_error, Completion, NetBufferId, NetBuffers, PollEnd, Ring};
use rustls::{ClientConfig, ClientConnection};
use std::net::{Shutdown, SocketAddr, TcpStream, ToSocketAddrs};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::{Duration, Instant};
use wire::client::{decode_response, Response};
use wire::FRAME_SIZE_MAX_DEFAULT;

/// Buffer sizes of every connection of one `Connections`.
#[derive(Clone, Copy, Debug)]
pub struct BufferSizes {
    /// Receive buffer: must hold the largest response frame; larger means fewer completions.
    pub receive: usize,
    /// Encoded requests held back once this many bytes wait to be sent (backpressure).
    pub pending_max: usize,
    /// Largest single request frame, so `pending` may overshoot `pending_max` by one frame.
    pub request_frame_max: usize,
}

/// All connections of one client thread.
pub struct Connections {
    ring: Ring,
    buffers: NetBuffers,
    connections: Vec<Connection>,
    completions: Vec<Completion>,
    sizes: BufferSizes,
    /// How long `turn` polls before it sleeps (zero: it sleeps at once).
    busy_poll: Duration,
}

/// Called for every decoded response: (connection index, response).
pub type OnResponse<'a> = dyn FnMut(usize, Response<'_>) -> Result<(), String> + 'a;

struct Connection {
    /// Name in messages (the global connection number).
    label: usize,
    stream: TcpStream,
    receive: NetBufferId,
    /// Bytes at the start of the receive buffer not yet decoded (a partial frame).
    received: usize,
    send: NetBufferId,
    send_offset: usize,
    /// Bytes of the send in flight; 0 when no send is in flight.
    send_length: usize,
    pending: Vec<u8>,
    /// With TLS: the session; `receive` then holds ciphertext and `plain` the responses.
    tls: Option<Box<ClientConnection>>,
    plain: Vec<u8>,
}

/// How long `close` waits for cancelled operations before leaking their buffers.
const CLOSE_WAIT_MAX: Duration = Duration::from_secs(1);

const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

impl Connections {
    /// Connects one socket per label to `target` (TCP_NODELAY), with TLS if `tls` is given
    /// (START_TLS and the handshake, blocking), and arms their receives.
    pub fn open(
        target: &str,
        labels: &[usize],
        sizes: BufferSizes,
        tls: Option<&Arc<ClientConfig>>,
    ) -> Result<Self, String> {
        assert!(!labels.is_empty());
        assert!(sizes.receive >= 64);
        assert!(sizes.pending_max > 0);
        let address = resolve(target)?;
        let entries = u32::try_from((labels.len() * 2 + 8).next_power_of_two())
            .map_err(|_| "too many connections for one ring".to_string())?;
        let ring = Ring::new(entries).map_err(|error| format!("io_uring: {error}"))?;
        let mut buffers = NetBuffers::new(labels.len() * 2);
        let mut connections = Vec::with_capacity(labels.len());
        for &label in labels {
            let stream = TcpStream::connect_timeout(&address, CONNECT_TIMEOUT)
                .map_err(|error| format!("connection {label} to {target}: {error}"))?;
            stream
                .set_nodelay(true)
                .map_err(|error| format!("TCP_NODELAY: {error}"))?;
            let mut stream = stream;
            let session = match tls {
                Some(config) => {
                    let host = address.ip().to_string();
                    let session = handshake(&mut stream, &host, Arc::clone(config))
                        .map_err(|error| format!("connection {label} to {target}: {error}"))?;
                    Some(Box::new(session))
                }
                None => None,
            };
            let send_size = sizes.pending_max + sizes.request_frame_max;
            connections.push(Connection {
                label,
                stream,
                receive: buffers.allocate(sizes.receive),
                received: 0,
                send: buffers.allocate(send_size),
                send_offset: 0,
                send_length: 0,
                pending: Vec::with_capacity(send_size),
                plain: Vec::with_capacity(if session.is_some() { sizes.receive } else { 0 }),
                tls: session,
            });
        }
        let completions = Vec::with_capacity(labels.len() * 2 + 8);
        let mut this = Connections {
            ring,
            buffers,
            connections,
            completions,
            sizes,
            busy_poll: Duration::ZERO,
        };
        for index in 0..this.connections.len() {
            this.arm_receive(index)?;
        }
        Ok(this)
    }

    /// Polls for up to `busy_poll` before each sleep in `turn` (`Ring::busy_poll`).
    #[must_use]
    pub fn with_busy_poll(mut self, busy_poll: Duration) -> Self {
        self.busy_poll = busy_poll;
        self
    }

    /// True when connection `index` accepts more requests this turn.
    pub fn has_room(&self, index: usize) -> bool {
        self.connections[index].pending.len() < self.sizes.pending_max
    }

    /// The buffer to append encoded request frames to; they leave on the next `turn`.
    pub fn pending(&mut self, index: usize) -> &mut Vec<u8> {
        &mut self.connections[index].pending
    }

    /// One loop turn: start a send on every idle connection with pending frames, wait up to
    /// `timeout` for a completion (zero: do not wait), then handle every completion, calling
    /// `on_response` for each decoded response.
    pub fn turn(&mut self, timeout: Duration, on_response: &mut OnResponse) -> Result<(), String> {
        for index in 0..self.connections.len() {
            self.start_send(index)?;
        }
        let poll = self.busy_poll.min(timeout);
        let waited = if timeout.is_zero() {
            self.ring.submit()
        } else if !poll.is_zero()
            && self.ring.busy_poll(poll).map_err(|e| e.to_string())? == PollEnd::Ready
        {
            Ok(())
        } else {
            self.ring.submit_and_wait_timeout(timeout - poll)
        };
        waited.map_err(|error| format!("io_uring submit: {error}"))?;
        let mut completions = std::mem::take(&mut self.completions);
        completions.clear();
        self.ring.reap(&mut completions);
        // Every buffer is marked idle before any handler can fail, so an error leaves no
        // buffer wrongly busy.
        for completion in &completions {
            self.buffers.complete(completion);
        }
        let mut result = Ok(());
        for completion in &completions {
            result = self.handle(completion, on_response);
            if result.is_err() {
                break;
            }
        }
        self.completions = completions;
        result
    }

    /// Shuts every socket down and waits (bounded) for the operations still in flight, so
    /// their buffers are freed rather than leaked.
    pub fn close(mut self) {
        for connection in &self.connections {
            let _ = connection.stream.shutdown(Shutdown::Both);
        }
        let deadline = Instant::now() + CLOSE_WAIT_MAX;
        while self.ring.in_flight() > 0 && Instant::now() < deadline {
            if self
                .ring
                .submit_and_wait_timeout(Duration::from_millis(10))
                .is_err()
            {
                break;
            }
            self.completions.clear();
            self.ring.reap(&mut self.completions);
            for completion in &self.completions {
                self.buffers.complete(completion);
            }
        }
    }

    fn handle(
        &mut self,
        completion: &Completion,
        on_response: &mut OnResponse,
    ) -> Result<(), String> {
        let tag = completion.tag() as usize;
        let (index, is_send) = (tag / 2, tag % 2 == 1);
        assert!(
            index < self.connections.len(),
            "completion for an unknown connection"
        );
        let label = self.connections[index].label;
        if completion.result < 0 {
            let what = if is_send { "send" } else { "receive" };
            let error = errno_error(completion.result);
            // A server that closes with our requests unread in its socket resets the
            // connection instead of ending it: that is still the server going away, and
            // which of the two the client sees depends on timing.
            let reset = [libc::ECONNRESET, libc::EPIPE].contains(&-completion.result);
            if reset {
                return Err(format!(
                    "connection {label} closed by the server ({what}: {error})"
                ));
            }
            return Err(format!("connection {label}: {what} failed: {error}"));
        }
        let bytes = usize::try_from(completion.result).expect("checked non-negative");
        if is_send {
            return self.sent(index, bytes);
        }
        if bytes == 0 {
            return Err(format!("connection {label} closed by the server"));
        }
        self.received(index, bytes, on_response)?;
        self.arm_receive(index)
    }

    /// Decodes every complete frame, then moves a trailing partial frame to the front.
    fn received(
        &mut self,
        index: usize,
        bytes: usize,
        on_response: &mut OnResponse,
    ) -> Result<(), String> {
        let connection = &mut self.connections[index];
        connection.received += bytes;
        if let Some(session) = connection.tls.as_mut() {
            // The session takes every ciphertext byte (a partial record waits inside it).
            let ciphertext = &self.buffers.get(connection.receive)[..connection.received];
            open_records(session, ciphertext, &mut connection.plain)
                .map_err(|error| format!("connection {}: {error}", connection.label))?;
            connection.received = 0;
            let consumed = decode_all(&connection.plain, connection.label, index, on_response)?;
            connection.plain.drain(..consumed);
            return Ok(());
        }
        let data = &self.buffers.get(connection.receive)[..connection.received];
        let consumed = decode_all(data, connection.label, index, on_response)?;
        assert!(consumed <= connection.received);
        if consumed > 0 && consumed < connection.received {
            let end = connection.received;
            self.buffers
                .get_mut(connection.receive)
                .copy_within(consumed..end, 0);
        }
        connection.received -= consumed;
        if connection.received == self.sizes.receive {
            return Err(format!(
                "connection {}: a response frame is larger than the {} B receive buffer",
                connection.label, self.sizes.receive
            ));
        }
        Ok(())
    }

    fn arm_receive(&mut self, index: usize) -> Result<(), String> {
        let connection = &self.connections[index];
        let tag = u32::try_from(index * 2).expect("few connections");
        let socket = connection.stream.as_raw_fd();
        self.ring
            .recv(
                tag,
                socket,
                &mut self.buffers,
                connection.receive,
                connection.received,
            )
            .map_err(|error| format!("connection {}: arming receive: {error:?}", connection.label))
    }

    /// Moves the pending frames into the idle send buffer and sends them in one operation.
    fn start_send(&mut self, index: usize) -> Result<(), String> {
        let connection = &mut self.connections[index];
        if let Some(session) = connection.tls.as_mut() {
            if connection.send_length != 0
                || (connection.pending.is_empty() && !session.wants_write())
            {
                return Ok(());
            }
            let send_buffer = self.buffers.get_mut(connection.send);
            let length = seal_records(session, &connection.pending, send_buffer);
            connection.pending.clear();
            if length == 0 {
                return Ok(());
            }
            connection.send_offset = 0;
            connection.send_length = length;
            return self.submit_send(index);
        }
        if connection.send_length != 0 || connection.pending.is_empty() {
            return Ok(());
        }
        let length = connection.pending.len();
        let send_buffer = self.buffers.get_mut(connection.send);
        // `has_room` before every frame keeps pending within pending_max + one frame.
        assert!(
            length <= send_buffer.len(),
            "pending frames overflow the send buffer"
        );
        send_buffer[..length].copy_from_slice(&connection.pending);
        connection.pending.clear();
        connection.send_offset = 0;
        connection.send_length = length;
        self.submit_send(index)
    }

    /// A send completed `bytes`; a short send is continued from where it stopped.
    fn sent(&mut self, index: usize, bytes: usize) -> Result<(), String> {
        let connection = &mut self.connections[index];
        assert!(
            connection.send_length > 0,
            "send completion without a send in flight"
        );
        connection.send_offset += bytes;
        assert!(connection.send_offset <= connection.send_length);
        if connection.send_offset == connection.send_length {
            connection.send_length = 0;
            return Ok(());
        }
        self.submit_send(index)
    }

    fn submit_send(&mut self, index: usize) -> Result<(), String> {
        let connection = &self.connections[index];
        let tag = u32::try_from(index * 2 + 1).expect("few connections");
        let (offset, length) = (
            connection.send_offset,
            connection.send_length - connection.send_offset,
        );
        let socket = connection.stream.as_raw_fd();
        self.ring
            .send(
                tag,
                socket,
                &mut self.buffers,
                connection.send,
                offset,
                length,
            )
            .map_err(|error| format!("connection {}: sending: {error:?}", connection.label))
    }
}

/// Decodes every complete frame at the start of `data`; returns the bytes they took.
fn decode_all(
    data: &[u8],
    label: usize,
    index: usize,
    on_response: &mut OnResponse,
) -> Result<usize, String> {
    let mut consumed = 0;
    while let Some(frame_size) = decode_one(&data[consumed..], label, index, on_response)? {
        assert!(frame_size > 0);
        consumed += frame_size;
    }
    Ok(consumed)
}

/// Decodes one frame at the start of `data`: its size, or `None` when it is incomplete.
fn decode_one(
    data: &[u8],
    label: usize,
    index: usize,
    on_response: &mut OnResponse,
) -> Result<Option<usize>, String> {
    // A v3 response starts with its header field (0x0A), a v2 one with its version byte.
    if data.len() > 4 && data[4] == 0x0A {
        let Some(length) = data
            .first_chunk::<4>()
            .map(|prefix| u32::from_be_bytes(*prefix))
        else {
            return Ok(None);
        };
        let frame_size = usize::try_from(length).expect("u32 fits usize") + 4;
        if frame_size > FRAME_SIZE_MAX_DEFAULT as usize {
            return Err(format!(
                "connection {label}: response frame of {frame_size} bytes"
            ));
        }
        if data.len() < frame_size {
            return Ok(None);
        }
        let Some((code, ledger_id, entry_id)) =
            wire::client::v3::decode_add_response(&data[4..frame_size])
        else {
            return Err(format!("connection {label}: undecodable v3 response"));
        };
        let response = Response::Add {
            version: 3,
            code,
            ledger_id,
            entry_id,
        };
        on_response(index, response)?;
        return Ok(Some(frame_size));
    }
    match decode_response(data, FRAME_SIZE_MAX_DEFAULT) {
        Ok(wire::client::DecodedResponse::Frame {
            response,
            frame_size,
        }) => {
            on_response(index, response)?;
            Ok(Some(frame_size))
        }
        Ok(wire::client::DecodedResponse::NeedMore) => Ok(None),
        Err(error) => Err(format!("connection {label}: undecodable response: {error}")),
    }
}

fn resolve(target: &str) -> Result<SocketAddr, String> {
    target
        .to_socket_addrs()
        .map_err(|error| format!("resolving {target}: {error}"))?
        .next()
        .ok_or_else(|| format!("{target} resolves to no address"))
}
