//! The bookie as a TLS client of the other bookies, for the repairer's reads
//! (docs/scrub.md, "Repair"; docs/security.md, "Repairs between bookies"): with --tls-trust,
//! a peer's certificate is verified against those CA certificates for the peer's address,
//! and the bookie presents its own certificate (--tls-cert/--tls-key), so a peer with
//! --tls-client-auth and --tls-authorized-roles admits it when that certificate may be used
//! for client authentication and its first role is authorized there. Without --tls-trust
//! there is nothing to verify a peer against, and the repairer reads in plaintext.

use super::context::{key_refused, TlsContextError, TlsSettings};
use super::files::{certificates_read, private_key_read, trust_read};
use rustls::ClientConfig;
use std::sync::Arc;

/// How the repairer reaches the other bookies.
#[derive(Debug, Clone)]
pub enum PeerTls {
    /// Plaintext (no TLS settings, or no --tls-trust).
    Off,
    /// START_TLS, then TLS with this configuration. `required` (this bookie's
    /// --tls-required): a peer that has no TLS is not read in plaintext.
    On {
        config: Arc<ClientConfig>,
        required: bool,
    },
}

/// Reads the files (again: a rotation reaches the next repair) and builds the client side.
pub fn peer_tls_build(settings: Option<&TlsSettings>) -> Result<PeerTls, TlsContextError> {
    let Some(settings) = settings else {
        return Ok(PeerTls::Off);
    };
    let Some(trust) = settings.trust.as_deref() else {
        return Ok(PeerTls::Off);
    };
    let roots = trust_read(trust)?;
    let chain = certificates_read(&settings.cert)?;
    let key = private_key_read(&settings.key)?;
    // ring, as the server side (context.rs says why).
    #[allow(deprecated)]
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(|error| TlsContextError::Config(error.to_string()))?
        .with_root_certificates(roots)
        .with_client_auth_cert(chain, key)
        .map_err(|error| key_refused(settings, &error))?;
    Ok(PeerTls::On {
        config: Arc::new(config),
        required: settings.required,
    })
}
