//! One connection's TLS session: rustls's `ServerConnection` driven without sockets. The shard
//! receives ciphertext through its ring into the connection's TLS buffer and hands it here;
//! plaintext comes out into the connection's ordinary receive buffer, where frames are
//! decoded as on a plaintext connection; responses go in as plaintext and come out as
//! ciphertext into the connection's send buffer. No thread, no socket call, no lock.

use rustls::{ServerConfig, ServerConnection};
use std::io::{Read, Write};
use std::sync::Arc;

/// Why a session ended in error (the connection is closed).
#[derive(Debug)]
pub enum SessionError {
    /// The peer's bytes broke the TLS protocol, or the handshake failed (certificate refused,
    /// no common cipher suite, ...): rustls's own description.
    Protocol(rustls::Error),
    /// rustls refused more input (its plaintext buffer is full and was not drained: a bug of
    /// the caller, reported rather than asserted since it only costs this connection).
    Stalled(String),
}

impl std::fmt::Display for SessionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SessionError::Protocol(error) => write!(f, "{error}"),
            SessionError::Stalled(detail) => write!(f, "tls input stalled: {detail}"),
        }
    }
}

/// What feeding ciphertext did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Fed {
    /// Ciphertext bytes taken.
    pub consumed: usize,
    /// The handshake completed during this call.
    pub handshake_completed: bool,
    /// The peer sent close_notify.
    pub closed: bool,
}

/// A TLS server session. See the module docs.
pub struct TlsSession {
    connection: ServerConnection,
    /// Plaintext decrypted and not yet taken (rustls holds it; this mirrors its count).
    plaintext_pending: usize,
    closed: bool,
}

impl std::fmt::Debug for TlsSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsSession")
            .field("handshaking", &self.connection.is_handshaking())
            .field("plaintext_pending", &self.plaintext_pending)
            .finish_non_exhaustive()
    }
}

impl TlsSession {
    /// A session for a connection that just answered START_TLS.
    pub fn new(config: Arc<ServerConfig>) -> Result<TlsSession, SessionError> {
        let connection = ServerConnection::new(config).map_err(SessionError::Protocol)?;
        Ok(TlsSession {
            connection,
            plaintext_pending: 0,
            closed: false,
        })
    }

    /// True until the handshake has completed.
    #[must_use]
    pub fn is_handshaking(&self) -> bool {
        self.connection.is_handshaking()
    }

    /// True when decrypted plaintext waits to be taken (`plaintext_take`).
    #[must_use]
    pub fn has_plaintext(&self) -> bool {
        self.plaintext_pending > 0
    }

    /// True when ciphertext (handshake messages, records, alerts) waits to be sent.
    #[must_use]
    pub fn wants_write(&self) -> bool {
        self.connection.wants_write()
    }

    /// The peer sent close_notify.
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// The client's certificate (the first of its chain), once the handshake has completed
    /// and if it sent one.
    #[must_use]
    pub fn peer_certificate(&self) -> Option<&[u8]> {
        self.connection
            .peer_certificates()
            .and_then(|chain| chain.first())
            .map(|certificate| certificate.as_ref())
    }

    /// The negotiated protocol version, for the log ("TLSv1_3").
    #[must_use]
    pub fn protocol_version(&self) -> Option<rustls::ProtocolVersion> {
        self.connection.protocol_version()
    }

    /// Feeds received ciphertext, as much as rustls takes before its plaintext buffer
    /// (16 KiB) is full: take plaintext, then feed the rest. Processes what it took: handshake messages
    /// queue their answers (`wants_write`), records queue plaintext.
    pub fn ciphertext_put(&mut self, mut ciphertext: &[u8]) -> Result<Fed, SessionError> {
        let mut fed = Fed::default();
        let handshaking = self.connection.is_handshaking();
        while !ciphertext.is_empty() && !self.closed {
            let count = match self.connection.read_tls(&mut ciphertext) {
                Ok(count) => count,
                // Its plaintext buffer is full: take plaintext first.
                Err(_) if self.plaintext_pending > 0 => break,
                Err(error) => return Err(SessionError::Stalled(error.to_string())),
            };
            fed.consumed += count;
            let state = self
                .connection
                .process_new_packets()
                .map_err(SessionError::Protocol)?;
            self.plaintext_pending = state.plaintext_bytes_to_read();
            if state.peer_has_closed() {
                self.closed = true;
            }
            if count == 0 {
                break;
            }
        }
        fed.handshake_completed = handshaking && !self.connection.is_handshaking();
        fed.closed = self.closed;
        Ok(fed)
    }

    /// Moves decrypted plaintext into `out`; returns how many bytes.
    pub fn plaintext_take(&mut self, out: &mut [u8]) -> usize {
        if out.is_empty() || self.plaintext_pending == 0 {
            return 0;
        }
        // The count is known, so the read neither blocks nor reports WouldBlock.
        let count = self.connection.reader().read(out).unwrap_or(0);
        self.plaintext_pending = self.plaintext_pending.saturating_sub(count);
        count
    }

    /// Encrypts plaintext from `plaintext` and writes ciphertext into `out` until one of them
    /// is used up; returns (plaintext bytes taken, ciphertext bytes written). Ciphertext
    /// already queued (handshake messages, an earlier call's rest) goes first.
    pub fn seal_into(&mut self, mut plaintext: &[u8], out: &mut [u8]) -> (usize, usize) {
        let (mut taken, mut written) = (0, 0);
        loop {
            if self.connection.wants_write() {
                let mut window = &mut out[written..];
                // Writing into a slice fails only when it is full, which ends the loop.
                let count = self.connection.write_tls(&mut window).unwrap_or(0);
                written += count;
                if count == 0 || written == out.len() {
                    break;
                }
                continue;
            }
            if plaintext.is_empty() || self.connection.is_handshaking() {
                break;
            }
            // Bounded by rustls's send buffer: what it does not take stays in `plaintext`.
            let count = self.connection.writer().write(plaintext).unwrap_or(0);
            if count == 0 {
                break;
            }
            plaintext = &plaintext[count..];
            taken += count;
        }
        (taken, written)
    }

    /// Queues a close_notify alert (sent by the next `seal_into`).
    pub fn close(&mut self) {
        self.connection.send_close_notify();
    }
}
