//! A shard's TLS context: the settings, the rustls `ServerConfig` new connections get, and
//! certificate rotation. Each shard builds its own `ServerConfig` from the files (the
//! session cache inside one takes a lock: one per shard keeps it uncontended), and checks
//! the files' stamps every `--tls-refresh-s`: when one changed, it reads them all again and
//! new connections get the new certificate; open connections keep the session they have.
//! A rotation whose files are bad is logged and the old ones stay in use.

use super::files::{certificates_read, private_key_read, trust_read, TlsFileError};
use rustls::server::WebPkiClientVerifier;
use rustls::ServerConfig;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// The TLS settings of `ringlog serve` (docs/security.md).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsSettings {
    /// `--tls-cert`: the bookie's certificate chain, PEM.
    pub cert: PathBuf,
    /// `--tls-key`: its private key, PEM (PKCS#8, RSA or EC).
    pub key: PathBuf,
    /// `--tls-trust`: CA certificates client certificates are checked against, PEM.
    pub trust: Option<PathBuf>,
    /// `--tls-client-auth`: a client must present a certificate the trust roots verify.
    pub client_auth: bool,
    /// `--tls-authorized-roles`: the first role in a client certificate's OU must be one of
    /// these (empty: no role check).
    pub authorized_roles: Vec<String>,
    /// `--tls-required`: a plaintext connection is served only START_TLS and AUTH.
    pub required: bool,
    /// `--tls-refresh-s`: how often the files are checked for a rotation (zero: never).
    pub refresh: Duration,
    /// `--tls-handshake-timeout-ms`: a connection whose handshake has not completed by then
    /// is closed.
    pub handshake_timeout: Duration,
}

impl TlsSettings {
    /// True when a plaintext connection starts authorized: TLS is optional and no role is
    /// asked for (with roles, only a certificate can authorize, as with the Java bookie's
    /// `BookieAuthZFactory`).
    #[must_use]
    pub fn plaintext_authorized(&self) -> bool {
        !self.required && self.authorized_roles.is_empty()
    }
}

/// Why the TLS context could not be built.
#[derive(Debug)]
pub enum TlsContextError {
    /// A file could not be used.
    File(TlsFileError),
    /// `--tls-client-auth` without `--tls-trust`: nothing to verify certificates against.
    ClientAuthWithoutTrust,
    /// `--tls-authorized-roles` without `--tls-client-auth`: roles come from the certificate.
    RolesWithoutClientAuth,
    /// rustls refused the configuration itself.
    Config(String),
}

impl std::fmt::Display for TlsContextError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TlsContextError::File(error) => write!(f, "{error}"),
            TlsContextError::ClientAuthWithoutTrust => write!(
                f,
                "--tls-client-auth needs --tls-trust FILE: the CA certificates client \
                 certificates are checked against"
            ),
            TlsContextError::RolesWithoutClientAuth => write!(
                f,
                "--tls-authorized-roles needs --tls-client-auth: roles are read from the client's \
                 certificate"
            ),
            TlsContextError::Config(detail) => write!(f, "tls configuration refused: {detail}"),
        }
    }
}

impl std::error::Error for TlsContextError {}

impl From<TlsFileError> for TlsContextError {
    fn from(error: TlsFileError) -> Self {
        TlsContextError::File(error)
    }
}

/// What a file looked like when it was read: a rotation changes one of these.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileStamp {
    modified: Option<SystemTime>,
    length: u64,
    inode: u64,
}

fn file_stamp(path: &Path) -> Option<FileStamp> {
    use std::os::unix::fs::MetadataExt;
    let metadata = std::fs::metadata(path).ok()?;
    Some(FileStamp {
        modified: metadata.modified().ok(),
        length: metadata.len(),
        inode: metadata.ino(),
    })
}

/// What a rotation check found.
#[derive(Debug)]
pub enum Refresh {
    /// The files changed and were read: new connections get them.
    Reloaded,
    /// The files changed and could not be used: the old ones stay.
    Failed(TlsContextError),
}

/// A shard's TLS context. See the module docs.
pub struct TlsContext {
    settings: Arc<TlsSettings>,
    config: Arc<ServerConfig>,
    stamps: [Option<FileStamp>; 3],
    checked_at: Instant,
}

impl std::fmt::Debug for TlsContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsContext")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl TlsContext {
    /// Reads the files and builds the context.
    pub fn load(settings: Arc<TlsSettings>) -> Result<TlsContext, TlsContextError> {
        let stamps = stamps_of(&settings);
        let config = server_config_build(&settings)?;
        Ok(TlsContext {
            settings,
            config,
            stamps,
            checked_at: Instant::now(),
        })
    }

    /// The settings.
    #[must_use]
    pub fn settings(&self) -> &TlsSettings {
        &self.settings
    }

    /// The configuration a new connection's session starts from.
    #[must_use]
    pub fn server_config(&self) -> Arc<ServerConfig> {
        Arc::clone(&self.config)
    }

    /// Checks the files for a rotation when `--tls-refresh-s` has passed since the last
    /// check; `None` when not due or nothing changed.
    pub fn refresh(&mut self, now: Instant) -> Option<Refresh> {
        let every = self.settings.refresh;
        if every.is_zero() || now.saturating_duration_since(self.checked_at) < every {
            return None;
        }
        self.checked_at = now;
        let stamps = stamps_of(&self.settings);
        if stamps == self.stamps {
            return None;
        }
        // Remembered either way: a bad rotation is reported once, not every period.
        self.stamps = stamps;
        match server_config_build(&self.settings) {
            Ok(config) => {
                self.config = config;
                Some(Refresh::Reloaded)
            }
            Err(error) => Some(Refresh::Failed(error)),
        }
    }
}

fn stamps_of(settings: &TlsSettings) -> [Option<FileStamp>; 3] {
    [
        file_stamp(&settings.cert),
        file_stamp(&settings.key),
        settings.trust.as_deref().and_then(file_stamp),
    ]
}

/// Builds a `ServerConfig` from the files: TLS 1.3 and 1.2, ring's cipher suites, the
/// certificate and key (rustls checks that they match), and the client verifier.
pub fn server_config_build(settings: &TlsSettings) -> Result<Arc<ServerConfig>, TlsContextError> {
    if settings.client_auth && settings.trust.is_none() {
        return Err(TlsContextError::ClientAuthWithoutTrust);
    }
    if !settings.authorized_roles.is_empty() && !settings.client_auth {
        return Err(TlsContextError::RolesWithoutClientAuth);
    }
    let chain = certificates_read(&settings.cert)?;
    let key = private_key_read(&settings.key)?;
    // Deprecated in rustls 0.23.48 only for lacking post-quantum key exchange: the Java
    // clients a bookie serves (JDK 17, 21) offer no hybrid ML-KEM group, and aws-lc-rs, the
    // provider that has one, is a large C library to build (docs/dependencies.md).
    #[allow(deprecated)]
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(|error| TlsContextError::Config(error.to_string()))?;
    let builder = match settings.trust.as_deref() {
        Some(trust) => {
            let roots = Arc::new(trust_read(trust)?);
            let verifier = WebPkiClientVerifier::builder_with_provider(roots, provider);
            // Without --tls-client-auth a certificate is checked if sent, not asked for.
            let verifier = if settings.client_auth {
                verifier
            } else {
                verifier.allow_unauthenticated()
            };
            let verifier = verifier.build().map_err(|error| {
                TlsContextError::File(TlsFileError::Rejected {
                    path: trust.to_owned(),
                    detail: error.to_string(),
                })
            })?;
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let config = builder
        .with_single_cert(chain, key)
        .map_err(|error| key_refused(settings, &error))?;
    Ok(Arc::new(config))
}

/// rustls refused --tls-key with --tls-cert: named as the key file's fault.
pub(super) fn key_refused(settings: &TlsSettings, error: &rustls::Error) -> TlsContextError {
    TlsContextError::File(TlsFileError::Rejected {
        path: settings.key.clone(),
        detail: format!(
            "{error} (the key must be the private key of the first certificate in {})",
            settings.cert.display()
        ),
    })
}
