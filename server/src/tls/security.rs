//! A connection's security state: its TLS stage and whether it is authorized, and what each
//! kind of request gets in each state (the Java bookie's `AuthHandler` and START_TLS rules,
//! /work/shared/docs/bookie-tls.md, docs/security.md).
//!
//! | request | not authorized | authorized |
//! |---|---|---|
//! | START_TLS, plaintext, TLS configured | starts TLS | starts TLS |
//! | START_TLS otherwise (no TLS, or TLS already) | served: EBADREQ | served: EBADREQ |
//! | AUTH (v2 or v3) | served: EOK, "AuthDisabledPlugin" | same |
//! | anything else | EUA (v3 status 502, v2 rc 102) | served |
//!
//! A plaintext connection starts authorized unless `--tls-required` or
//! `--tls-authorized-roles` is set; a TLS connection is authorized when its handshake
//! completes, if its certificate's first role is authorized (with roles), else at once.

use super::session::TlsSession;
use engine::uring::NetBufferId;
use std::time::Instant;

/// Where a connection is between plaintext and TLS.
#[derive(Debug)]
pub enum Stage {
    /// Plaintext: START_TLS not asked for (or TLS is not configured).
    Plain,
    /// START_TLS answered: its plaintext response (and anything queued before it) is being
    /// sent; nothing is read or decoded until the session starts.
    Starting,
    /// TLS: received bytes go through the session.
    Tls(Box<TlsStream>),
}

/// The TLS side of a connection: the session, and the buffer its ciphertext is received into
/// (the connection's `recv_buffer` then holds the plaintext the session gives out).
#[derive(Debug)]
pub struct TlsStream {
    /// The rustls session.
    pub session: TlsSession,
    /// Received ciphertext lives in `cipher_buffer[..cipher_filled]`.
    pub cipher_buffer: NetBufferId,
    /// Ciphertext bytes received and not yet fed to the session.
    pub cipher_filled: usize,
    /// The handshake must complete by then, or the connection is closed.
    pub handshake_deadline: Instant,
}

/// A connection's security state. See the module docs.
#[derive(Debug)]
pub struct Security {
    /// Plaintext, starting, or TLS.
    pub stage: Stage,
    /// Requests other than START_TLS and AUTH are served.
    pub authorized: bool,
}

impl Security {
    /// A new plaintext connection, authorized or not (`TlsSettings::plaintext_authorized`).
    #[must_use]
    pub fn plaintext(authorized: bool) -> Security {
        Security {
            stage: Stage::Plain,
            authorized,
        }
    }

    /// The TLS stream, once the session has started.
    #[must_use]
    pub fn stream(&self) -> Option<&TlsStream> {
        match &self.stage {
            Stage::Tls(stream) => Some(stream),
            Stage::Plain | Stage::Starting => None,
        }
    }

    /// The TLS stream, mutably.
    pub fn stream_mut(&mut self) -> Option<&mut TlsStream> {
        match &mut self.stage {
            Stage::Tls(stream) => Some(stream),
            Stage::Plain | Stage::Starting => None,
        }
    }

    /// True between START_TLS's answer and the session's start.
    #[must_use]
    pub fn is_starting(&self) -> bool {
        matches!(self.stage, Stage::Starting)
    }
}

/// What kind of request a frame is, as far as admission goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestClass {
    /// v3 START_TLS.
    StartTls,
    /// AUTH, v2 or v3.
    Auth,
    /// Everything else.
    Other,
}

impl RequestClass {
    /// The class of a decoded request.
    #[must_use]
    pub fn of(request: &wire::AnyRequest<'_>) -> RequestClass {
        match request {
            wire::AnyRequest::V2(wire::Request::Auth { .. }) => RequestClass::Auth,
            wire::AnyRequest::V2(_) => RequestClass::Other,
            wire::AnyRequest::V3(request) => match request.body {
                wire::v3::Body::StartTls => RequestClass::StartTls,
                wire::v3::Body::Auth => RequestClass::Auth,
                _ => RequestClass::Other,
            },
        }
    }
}

/// What a request gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Handled as usual (the request layer answers START_TLS it cannot start with EBADREQ).
    Serve,
    /// Answered EOK in plaintext, then the connection turns to TLS.
    StartTls,
    /// Answered EUA.
    Refuse,
}

/// What `class` gets on a connection in `stage` (authorized or not), with TLS configured or
/// not. See the module docs' table.
#[must_use]
pub fn admit(
    class: RequestClass,
    stage: &Stage,
    authorized: bool,
    tls_configured: bool,
) -> Admission {
    match class {
        RequestClass::StartTls if tls_configured && matches!(stage, Stage::Plain) => {
            Admission::StartTls
        }
        RequestClass::StartTls | RequestClass::Auth => Admission::Serve,
        RequestClass::Other if authorized => Admission::Serve,
        RequestClass::Other => Admission::Refuse,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_request_class_in_every_state() {
        let classes = [
            RequestClass::StartTls,
            RequestClass::Auth,
            RequestClass::Other,
        ];
        for configured in [false, true] {
            for plain in [true, false] {
                for authorized in [false, true] {
                    for class in classes {
                        let stage = if plain { Stage::Plain } else { Stage::Starting };
                        let got = admit(class, &stage, authorized, configured);
                        let want = match class {
                            RequestClass::StartTls if configured && plain => Admission::StartTls,
                            RequestClass::StartTls | RequestClass::Auth => Admission::Serve,
                            RequestClass::Other if authorized => Admission::Serve,
                            RequestClass::Other => Admission::Refuse,
                        };
                        assert_eq!(
                            got, want,
                            "{class:?} configured={configured} plain={plain} authorized={authorized}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn only_start_tls_and_auth_pass_an_unauthorized_connection() {
        let stage = Stage::Plain;
        assert_eq!(
            admit(RequestClass::Other, &stage, false, true),
            Admission::Refuse
        );
        assert_eq!(
            admit(RequestClass::Auth, &stage, false, true),
            Admission::Serve
        );
        assert_eq!(
            admit(RequestClass::StartTls, &stage, false, true),
            Admission::StartTls
        );
        // Without TLS configured START_TLS is the request layer's EBADREQ, as before.
        assert_eq!(
            admit(RequestClass::StartTls, &stage, false, false),
            Admission::Serve
        );
    }
}
