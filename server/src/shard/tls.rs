//! TLS on the shard's connections (docs/security.md): starting a session once START_TLS's
//! plaintext answer has left, moving received ciphertext through the session into the
//! connection's receive buffer (a bounded number of handshakes per turn), authorizing the
//! connection when its handshake completes, handshake timeouts, and certificate rotation.
//! Sends are sealed in `sends.rs`; what each request gets is `tls/security.rs`.

use super::Shard;
use crate::connection::Connection;
use crate::limits;
use crate::tls::roles::{first_role, role_authorized};
use crate::tls::{Refresh, Stage, TlsContext, TlsSession, TlsSettings, TlsStream};
use engine::uring::NetBuffers;
use std::time::Instant;

/// How pumping a TLS connection's received bytes ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Pump {
    /// Done for now: decode what the receive buffer holds.
    Decode,
    /// The turn's handshake budget is spent: try again next turn.
    Deferred,
    /// The session failed: the connection closes.
    Failed,
}

impl Shard {
    /// Starts the session of `index` once START_TLS's answer (and anything before it) has
    /// been sent: bytes the client sent after START_TLS are its first ciphertext.
    pub(super) fn tls_start_if_flushed(&mut self, index: u32) {
        let Some(context) = self.tls.as_ref() else {
            return;
        };
        let connection = self.connections.slots[index as usize]
            .as_mut()
            .expect("active is live");
        let flushed = !connection.send_armed
            && connection.send_offset == connection.send_length
            && connection.client.out.is_empty();
        if !connection.security.is_starting() || !flushed || connection.closing {
            return;
        }
        let session = match TlsSession::new(context.server_config()) {
            Ok(session) => session,
            Err(error) => {
                tracing::warn!(shard = self.id, "tls session not started: {error}");
                connection.closing = true;
                return;
            }
        };
        let leftover = connection.recv_filled;
        if leftover > limits::TLS_RECV_BUFFER_SIZE {
            // More than a ClientHello's worth sent before the answer: not a TLS client.
            connection.closing = true;
            self.bookie.stats.connections_invalid += 1;
            return;
        }
        let cipher_buffer = self.net.allocate(limits::TLS_RECV_BUFFER_SIZE);
        let (recv_buffer, net) = (connection.recv_buffer, &mut self.net);
        buffer_copy(net, recv_buffer, cipher_buffer, leftover);
        connection.recv_filled = 0;
        connection.decode_wanted = leftover > 0;
        let deadline = Instant::now() + context.settings().handshake_timeout;
        connection.security.stage = Stage::Tls(Box::new(TlsStream {
            session,
            cipher_buffer,
            cipher_filled: leftover,
            handshake_deadline: deadline,
        }));
        self.bookie.stats.tls_sessions_started += 1;
        self.bookie.progress = true;
    }

    /// Feeds `index`'s received ciphertext to its session and moves the plaintext into its
    /// receive buffer, as far as that has room. Handshake flights count against the turn's
    /// budget (`TLS_HANDSHAKES_PER_TURN_MAX`).
    pub(super) fn tls_pump(&mut self, index: u32) -> Pump {
        let connection = self.connections.slots[index as usize]
            .as_mut()
            .expect("active is live");
        let Stage::Tls(stream) = &mut connection.security.stage else {
            return Pump::Decode;
        };
        let handshaking = stream.session.is_handshaking();
        if handshaking && stream.cipher_filled > 0 {
            if self.tls_handshakes_this_turn >= limits::TLS_HANDSHAKES_PER_TURN_MAX {
                self.bookie.progress = true;
                return Pump::Deferred;
            }
            self.tls_handshakes_this_turn += 1;
        }
        let mut consumed = 0;
        let mut completed = false;
        loop {
            let room = self.net.size(connection.recv_buffer) - connection.recv_filled;
            let recv = self.net.get_mut(connection.recv_buffer);
            let taken = stream
                .session
                .plaintext_take(&mut recv[connection.recv_filled..][..room]);
            connection.recv_filled += taken;
            let mut fed = 0;
            if consumed < stream.cipher_filled && !stream.session.has_plaintext() {
                let cipher = &self.net.get(stream.cipher_buffer)[consumed..stream.cipher_filled];
                match stream.session.ciphertext_put(cipher) {
                    Ok(result) => {
                        fed = result.consumed;
                        completed |= result.handshake_completed;
                        if result.closed {
                            connection.eof = true;
                        }
                    }
                    Err(error) => {
                        if stream.session.is_handshaking() {
                            self.bookie.stats.tls_handshake_failures += 1;
                        } else {
                            self.bookie.stats.connections_invalid += 1;
                        }
                        tracing::debug!(shard = self.id, "tls: {error}; closing the connection");
                        connection.closing = true;
                        return Pump::Failed;
                    }
                }
                consumed += fed;
            }
            if taken == 0 && fed == 0 {
                break;
            }
        }
        if consumed > 0 {
            let filled = stream.cipher_filled;
            self.net
                .get_mut(stream.cipher_buffer)
                .copy_within(consumed..filled, 0);
            stream.cipher_filled -= consumed;
        }
        if completed {
            self.bookie.stats.tls_handshakes += 1;
            let settings = self
                .tls
                .as_ref()
                .expect("a session has a context")
                .settings();
            match authorization(settings, &stream.session) {
                Ok(()) => connection.security.authorized = true,
                Err(reason) => {
                    self.bookie.stats.tls_unauthorized += 1;
                    tracing::debug!(
                        shard = self.id,
                        "tls connection not authorized ({reason}): every request but \
                         START_TLS and AUTH gets EUA"
                    );
                }
            }
        }
        Pump::Decode
    }

    /// True while `connection`'s session holds received bytes it has not given out yet:
    /// decoding must come back to it before a recv is armed.
    pub(super) fn tls_has_input(connection: &Connection) -> bool {
        connection
            .security
            .stream()
            .is_some_and(|stream| stream.cipher_filled > 0 || stream.session.has_plaintext())
    }

    /// On the tick: closes connections whose handshake ran past `--tls-handshake-timeout-ms`,
    /// and reloads rotated certificate files.
    pub(super) fn tls_tick(&mut self, now: Instant) {
        let Some(context) = self.tls.as_mut() else {
            return;
        };
        match context.refresh(now) {
            Some(Refresh::Reloaded) => {
                self.bookie.stats.tls_reloads += 1;
                tracing::info!(
                    shard = self.id,
                    "tls files changed: new connections get the new certificate"
                );
            }
            Some(Refresh::Failed(error)) => {
                self.bookie.stats.tls_reload_failures += 1;
                tracing::warn!(
                    shard = self.id,
                    "tls files changed but cannot be used ({error}); keeping the previous ones"
                );
            }
            None => {}
        }
        for &index in &self.connections.active {
            let connection = self.connections.slots[index as usize]
                .as_mut()
                .expect("active is live");
            let late = connection.security.stream().is_some_and(|stream| {
                stream.session.is_handshaking() && now > stream.handshake_deadline
            });
            if late && !connection.closing {
                connection.closing = true;
                self.bookie.stats.tls_handshake_timeouts += 1;
            }
        }
    }
}

/// Whether a connection whose handshake completed is authorized: always without
/// `--tls-authorized-roles`, else when its certificate's first role is listed.
fn authorization(settings: &TlsSettings, session: &TlsSession) -> Result<(), String> {
    if settings.authorized_roles.is_empty() {
        return Ok(());
    }
    let certificate = session
        .peer_certificate()
        .ok_or_else(|| "no client certificate".to_owned())?;
    let role = first_role(certificate).map_err(|error| error.to_string())?;
    if role_authorized(&role, &settings.authorized_roles) {
        Ok(())
    } else {
        Err(format!(
            "role {role:?} is not one of {:?}",
            settings.authorized_roles
        ))
    }
}

/// Copies the first `length` bytes of buffer `from` into buffer `to`.
fn buffer_copy(
    net: &mut NetBuffers,
    from: engine::uring::NetBufferId,
    to: engine::uring::NetBufferId,
    length: usize,
) {
    if length == 0 {
        return;
    }
    let head = net.get(from)[..length].to_vec();
    net.get_mut(to)[..length].copy_from_slice(&head);
}

/// The TLS context a shard starts with (`None` without --tls-cert).
pub(super) fn tls_context_load(
    settings: Option<&std::sync::Arc<TlsSettings>>,
) -> Result<Option<TlsContext>, crate::tls::TlsContextError> {
    settings
        .map(|settings| TlsContext::load(std::sync::Arc::clone(settings)))
        .transpose()
}
