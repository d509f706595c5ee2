//! The bench's TLS side (`--tls-ca`, `--tls-cert`, `--tls-key` of `writes` and `reads`), as
//! the BookKeeper client does it: one v3 START_TLS in plaintext when a connection opens and a
//! blocking handshake, then records sealed and opened around the ring's sends and receives
//! (`writes/connections.rs`). What the numbers then include is the bookie's TLS cost and the
//! client's own, as a broker's would.

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::sync::Arc;
use wire::v3::Status;

/// TLS flags shared by `writes` and `reads`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct TlsArgs {
    /// Speak TLS: ask for it with START_TLS on every connection and trust this CA (PEM) for
    /// the bookie's certificate (issued for the address in --target). Default: plaintext.
    #[arg(long, value_name = "FILE")]
    pub tls_ca: Option<PathBuf>,
    /// With --tls-ca: present this client certificate (PEM), for a bookie with
    /// --tls-client-auth. Needs --tls-key.
    #[arg(long, value_name = "FILE", requires = "tls_key", requires = "tls_ca")]
    pub tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
}

impl TlsArgs {
    /// The client configuration, or `None` without --tls-ca.
    pub fn client_config(&self) -> Result<Option<Arc<ClientConfig>>, String> {
        let Some(ca) = &self.tls_ca else {
            return Ok(None);
        };
        let mut roots = RootCertStore::empty();
        for certificate in CertificateDer::pem_file_iter(ca)
            .map_err(|error| format!("--tls-ca {}: {error:?}", ca.display()))?
        {
            let certificate =
                certificate.map_err(|error| format!("--tls-ca {}: {error:?}", ca.display()))?;
            roots
                .add(certificate)
                .map_err(|error| format!("--tls-ca {}: {error}", ca.display()))?;
        }
        // ring, as the server: the deprecation is about post-quantum key exchange only.
        #[allow(deprecated)]
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|error| error.to_string())?
            .with_root_certificates(roots);
        let config = match (&self.tls_cert, &self.tls_key) {
            (Some(cert), Some(key)) => {
                let chain = CertificateDer::pem_file_iter(cert)
                    .map_err(|error| format!("--tls-cert {}: {error:?}", cert.display()))?
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|error| format!("--tls-cert {}: {error:?}", cert.display()))?;
                let key = PrivateKeyDer::from_pem_file(key)
                    .map_err(|error| format!("--tls-key {}: {error:?}", key.display()))?;
                builder
                    .with_client_auth_cert(chain, key)
                    .map_err(|error| format!("--tls-cert/--tls-key: {error}"))?
            }
            _ => builder.with_no_client_auth(),
        };
        Ok(Some(Arc::new(config)))
    }
}

/// START_TLS on a fresh connection to `host`, and the handshake, blocking; the session then
/// carries everything (its buffer limit lifted: the caller bounds what it writes).
pub fn handshake(
    stream: &mut TcpStream,
    host: &str,
    config: Arc<ClientConfig>,
) -> Result<ClientConnection, String> {
    let mut frame = Vec::new();
    wire::client::v3::encode_start_tls_request(&mut frame, 1);
    stream
        .write_all(&frame)
        .map_err(|error| format!("START_TLS: {error}"))?;
    let mut prefix = [0u8; 4];
    stream
        .read_exact(&mut prefix)
        .map_err(|error| format!("START_TLS answer: {error}"))?;
    let mut body = vec![0u8; u32::from_be_bytes(prefix) as usize];
    stream
        .read_exact(&mut body)
        .map_err(|error| format!("START_TLS answer: {error}"))?;
    let status = wire::client::v3::decode_start_tls_response(&body)
        .ok_or("START_TLS: the answer is not a START_TLS response")?;
    if status != Status::Eok as i32 {
        return Err(format!(
            "START_TLS refused with status {status} (is the bookie started with --tls-cert?)"
        ));
    }
    let name = ServerName::try_from(host.to_owned())
        .map_err(|error| format!("server name {host}: {error}"))?;
    let mut connection =
        ClientConnection::new(config, name).map_err(|error| format!("TLS: {error}"))?;
    connection.set_buffer_limit(None);
    while connection.is_handshaking() {
        connection
            .complete_io(stream)
            .map_err(|error| format!("TLS handshake: {error}"))?;
    }
    Ok(connection)
}

/// Feeds `ciphertext` to the session and appends the plaintext it gives to `plain`.
pub fn open_records(
    connection: &mut ClientConnection,
    mut ciphertext: &[u8],
    plain: &mut Vec<u8>,
) -> Result<(), String> {
    while !ciphertext.is_empty() {
        let full = match connection.read_tls(&mut ciphertext) {
            Ok(0) => return Err("the bookie closed the TLS session".into()),
            Ok(_) => false,
            // Its plaintext buffer is full: drain it below, then feed the rest.
            Err(_) => true,
        };
        let state = connection
            .process_new_packets()
            .map_err(|error| format!("TLS: {error}"))?;
        let mut left = state.plaintext_bytes_to_read();
        if full && left == 0 {
            return Err("TLS: the session takes no more input".into());
        }
        while left > 0 {
            let start = plain.len();
            plain.resize(start + left, 0);
            let count = connection.reader().read(&mut plain[start..]).unwrap_or(0);
            plain.truncate(start + count);
            if count == 0 {
                break;
            }
            left -= count;
        }
    }
    Ok(())
}

/// Seals `plaintext` (all of it) and writes as much ciphertext as fits into `out`; returns
/// the bytes written. What did not fit stays queued in the session (`wants_write`).
pub fn seal_records(connection: &mut ClientConnection, plaintext: &[u8], out: &mut [u8]) -> usize {
    if !plaintext.is_empty() {
        // No buffer limit (`handshake`): the session takes everything.
        let _ = connection.writer().write_all(plaintext);
    }
    let mut written = 0;
    while connection.wants_write() && written < out.len() {
        let mut window = &mut out[written..];
        match connection.write_tls(&mut window) {
            Ok(0) | Err(_) => break,
            Ok(count) => written += count,
        }
    }
    written
}
