//! TLS and authorization on the bookie port (docs/security.md): a client asks for TLS with a
//! v3 START_TLS request, answered in plaintext, after which the connection speaks TLS and its
//! frames (v2 or v3, decided per frame as before) travel inside it. Everything runs in the
//! shard on its own ring and buffers: rustls is driven without sockets (`session.rs`).
//!
//! - `context.rs`: the settings, each shard's rustls configuration, certificate rotation;
//! - `files.rs`: reading the PEM files, with errors that name the file;
//! - `session.rs`: one connection's session (ciphertext in and out, plaintext in and out);
//! - `security.rs`: a connection's TLS stage and authorization, and what each request gets;
//! - `roles.rs`: the role rule of the Java bookie's `BookieAuthZFactory`;
//! - `peer.rs`: the bookie as a TLS client of the other bookies (the repairer's reads).

pub mod context;
pub mod files;
pub mod peer;
pub mod roles;
pub mod security;
pub mod session;

pub use context::{Refresh, TlsContext, TlsContextError, TlsSettings};
pub use peer::{peer_tls_build, PeerTls};
pub use security::{admit, Admission, RequestClass, Security, Stage, TlsStream};
pub use session::{Fed, SessionError, TlsSession};
