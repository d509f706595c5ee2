//! Target `tls_after_start`: the bytes a client sends after the bookie answered START_TLS
//! (issue 34), into the shard's TLS session (`server::tls::TlsSession`) exactly as the shard
//! feeds them: in pieces as they arrive, plaintext taken into a bounded buffer, ciphertext
//! sealed into a bounded send buffer.
//!
//! The first byte picks the mode:
//! - even: the bytes are raw ciphertext from the first byte on (a hostile ClientHello, a
//!   client that stops mid-handshake, garbage records);
//! - odd: an in-process rustls client completes a real handshake first (TLS 1.3, or 1.2 when
//!   the second byte is odd), then the rest goes in either as raw records after it (third
//!   byte even) or as application data the client encrypts (odd), which must come out of the
//!   session as exactly those bytes.
//!
//! Properties: nothing panics; no plaintext is ever handed out before the handshake has
//! completed; the session never writes past the buffers it is given; and a real client's
//! application data arrives intact and in order.
//!
//! The certificates come from `scripts/tls_certs.sh` (openssl), made once per process in a
//! temporary directory: no key is checked in.

use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection, RootCertStore};
use server::tls::context::server_config_build;
use server::tls::{TlsSession, TlsSettings};
use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Plaintext the shard takes per call (its receive buffer's free space is at most this).
const PLAINTEXT_BUFFER_SIZE: usize = 16 * 1024;
/// Ciphertext the shard's send buffer takes per call.
const SEND_BUFFER_SIZE: usize = 64 * 1024;
/// Largest piece of ciphertext fed at once (a receive completion).
const PIECE_SIZE_MAX: usize = 4096;

struct Setup {
    server: Arc<rustls::ServerConfig>,
    client_tls13: Arc<ClientConfig>,
    client_tls12: Arc<ClientConfig>,
}

fn setup() -> &'static Setup {
    static SETUP: OnceLock<Setup> = OnceLock::new();
    SETUP.get_or_init(|| {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
        let dir = std::env::temp_dir().join(format!("ringlog-fuzz-tls-{}", std::process::id()));
        let status = std::process::Command::new(root.join("scripts/tls_certs.sh"))
            .arg(&dir)
            .stdout(std::process::Stdio::null())
            .status()
            .expect("run scripts/tls_certs.sh (needs openssl)");
        assert!(status.success(), "scripts/tls_certs.sh failed");
        let settings = TlsSettings {
            cert: dir.join("bookie.pem"),
            key: dir.join("bookie.key"),
            trust: None,
            client_auth: false,
            authorized_roles: Vec::new(),
            required: false,
            refresh: Duration::ZERO,
            handshake_timeout: Duration::from_secs(10),
        };
        let server = server_config_build(&settings).expect("the test certificates load");
        let mut roots = RootCertStore::empty();
        let ca = std::fs::read(dir.join("ca.pem")).expect("ca.pem");
        for certificate in rustls_pemfile_certificates(&ca) {
            roots
                .add(certificate)
                .expect("the test CA is a certificate");
        }
        // The bookie's provider (server/src/tls/context.rs): ring, whose post-quantum key
        // exchange rustls has moved to aws-lc-rs; the client must speak what the server does.
        #[allow(deprecated)]
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let client = |versions: &[&'static rustls::SupportedProtocolVersion]| {
            let config = ClientConfig::builder_with_provider(provider.clone())
                .with_protocol_versions(versions)
                .expect("a version ring supports")
                .with_root_certificates(roots.clone())
                .with_no_client_auth();
            Arc::new(config)
        };
        let _ = std::fs::remove_dir_all(&dir);
        Setup {
            server,
            client_tls13: client(&[&rustls::version::TLS13]),
            client_tls12: client(&[&rustls::version::TLS12]),
        }
    })
}

/// The DER certificates of a PEM file (only CERTIFICATE blocks).
fn rustls_pemfile_certificates(pem: &[u8]) -> Vec<rustls::pki_types::CertificateDer<'static>> {
    use rustls::pki_types::pem::PemObject;
    rustls::pki_types::CertificateDer::pem_slice_iter(pem)
        .filter_map(Result::ok)
        .collect()
}

/// Feeds `bytes` to `session` in pieces whose sizes come from `sizes` (cycled), draining
/// plaintext and ciphertext after each as the shard does. Returns the plaintext it handed
/// out, or None once the session failed (the shard closes the connection).
fn feed(session: &mut TlsSession, mut bytes: &[u8], sizes: &[u8]) -> Option<Vec<u8>> {
    let mut plaintext = Vec::new();
    let mut buffer = vec![0u8; PLAINTEXT_BUFFER_SIZE];
    let mut out = vec![0u8; SEND_BUFFER_SIZE];
    let mut turn = 0usize;
    while !bytes.is_empty() {
        let size = sizes
            .get(turn % sizes.len().max(1))
            .map_or(PIECE_SIZE_MAX, |&size| usize::from(size) * 16 + 1)
            .min(PIECE_SIZE_MAX)
            .min(bytes.len());
        turn += 1;
        let mut piece = &bytes[..size];
        while !piece.is_empty() {
            let fed = session.ciphertext_put(piece).ok()?;
            piece = &piece[fed.consumed..];
            drain(session, &mut buffer, &mut out, &mut plaintext);
            if fed.closed {
                return Some(plaintext);
            }
            if fed.consumed == 0 && !session.has_plaintext() {
                // Nothing taken and nothing to drain: the shard would wait for its next turn
                // with the same bytes; here that would never end.
                return Some(plaintext);
            }
        }
        bytes = &bytes[size..];
    }
    Some(plaintext)
}

/// Takes the session's plaintext and ciphertext into bounded buffers.
fn drain(session: &mut TlsSession, buffer: &mut [u8], out: &mut [u8], plaintext: &mut Vec<u8>) {
    loop {
        if session.has_plaintext() {
            assert!(
                !session.is_handshaking(),
                "plaintext handed out before the handshake completed"
            );
        }
        let taken = session.plaintext_take(buffer);
        assert!(taken <= buffer.len());
        plaintext.extend_from_slice(&buffer[..taken]);
        let (sealed, written) = session.seal_into(&[], out);
        assert_eq!(sealed, 0, "no plaintext was given to seal");
        assert!(written <= out.len());
        if taken == 0 && written == 0 {
            return;
        }
    }
}

/// Runs a real handshake between `client` and `session`; false if it did not complete.
fn handshake(client: &mut ClientConnection, session: &mut TlsSession) -> bool {
    let mut out = vec![0u8; SEND_BUFFER_SIZE];
    for _ in 0..16 {
        if !client.is_handshaking() && !session.is_handshaking() {
            return true;
        }
        let mut to_server = Vec::new();
        while client.wants_write() {
            if client.write_tls(&mut to_server).is_err() {
                return false;
            }
        }
        if session.ciphertext_put(&to_server).is_err() {
            return false;
        }
        let (_, written) = session.seal_into(&[], &mut out);
        let mut to_client = &out[..written];
        while !to_client.is_empty() {
            match client.read_tls(&mut to_client) {
                Ok(0) | Err(_) => return false,
                Ok(_) => {
                    if client.process_new_packets().is_err() {
                        return false;
                    }
                }
            }
        }
    }
    !client.is_handshaking() && !session.is_handshaking()
}

/// The fuzz target. See the module docs.
pub fn tls_after_start(data: &[u8]) {
    let setup = setup();
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let mut session = TlsSession::new(setup.server.clone()).expect("a session for a config");
    if mode % 2 == 0 {
        let (sizes, bytes) = rest.split_at(rest.len().min(8));
        let _ = feed(&mut session, bytes, sizes);
        return;
    }
    let (version, records, payload) = match rest {
        [version, records, payload @ ..] => (*version, *records, payload),
        _ => return,
    };
    let config = if version % 2 == 0 {
        setup.client_tls13.clone()
    } else {
        setup.client_tls12.clone()
    };
    let name = ServerName::try_from("127.0.0.1").expect("an IP address name");
    let mut client = ClientConnection::new(config, name).expect("a client session");
    assert!(
        handshake(&mut client, &mut session),
        "a real client's handshake did not complete"
    );
    if records % 2 == 0 {
        // Garbage after a good handshake: refused or ignored, never handed out as data
        // unless it is a record the session's keys open (which random bytes are not).
        if let Some(plaintext) = feed(&mut session, payload, &[255]) {
            assert!(
                plaintext.is_empty(),
                "unauthenticated bytes came out as plaintext"
            );
        }
        return;
    }
    // Application data through the real client: it must come out whole and in order.
    client.writer().write_all(payload).expect("buffered");
    let mut ciphertext = Vec::new();
    while client.wants_write() {
        client.write_tls(&mut ciphertext).expect("into a Vec");
    }
    let plaintext = feed(&mut session, &ciphertext, &[255]).expect("a real client's records");
    assert_eq!(
        plaintext, payload,
        "application data changed on its way through"
    );
    let mut rest = Vec::new();
    let _ = client.reader().read_to_end(&mut rest);
}
