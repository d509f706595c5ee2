//! Reading the TLS files: the certificate chain, its private key and the trust roots for
//! client certificates, all PEM. Each error names the file and what is wrong with it, since a
//! bad file must fail the start (and a bad rotation must be logged, keeping the old files).

use rustls::RootCertStore;
use rustls_pki_types::pem::{self, PemObject};
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::path::{Path, PathBuf};

/// A TLS file that could not be used.
#[derive(Debug)]
pub enum TlsFileError {
    /// The file could not be read.
    Read {
        path: PathBuf,
        error: std::io::Error,
    },
    /// Its PEM could not be parsed.
    Pem { path: PathBuf, detail: String },
    /// No `CERTIFICATE` block in the certificate (or trust) file.
    NoCertificate { path: PathBuf },
    /// No private key block (`PRIVATE KEY`, `RSA PRIVATE KEY` or `EC PRIVATE KEY`).
    NoKey { path: PathBuf },
    /// The key is encrypted (`ENCRYPTED PRIVATE KEY`): no password option exists.
    EncryptedKey { path: PathBuf },
    /// rustls refused the pair or the trust roots: the key does not match the certificate,
    /// an unsupported key type, or a root certificate it cannot parse.
    Rejected { path: PathBuf, detail: String },
}

impl std::fmt::Display for TlsFileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TlsFileError::Read { path, error } => {
                write!(f, "cannot read {}: {error}", path.display())
            }
            TlsFileError::Pem { path, detail } => {
                write!(f, "{}: not valid PEM: {detail}", path.display())
            }
            TlsFileError::NoCertificate { path } => write!(
                f,
                "{}: no certificate found (expected a PEM `-----BEGIN CERTIFICATE-----` block)",
                path.display()
            ),
            TlsFileError::NoKey { path } => write!(
                f,
                "{}: no private key found (expected PEM `PRIVATE KEY` (PKCS#8), `RSA PRIVATE KEY` \
                 or `EC PRIVATE KEY`)",
                path.display()
            ),
            TlsFileError::EncryptedKey { path } => write!(
                f,
                "{}: the private key is encrypted; give an unencrypted PKCS#8 key \
                 (`openssl pkcs8 -topk8 -nocrypt -in KEY -out KEY.pk8`) readable only by the bookie",
                path.display()
            ),
            TlsFileError::Rejected { path, detail } => {
                write!(f, "{}: refused: {detail}", path.display())
            }
        }
    }
}

impl std::error::Error for TlsFileError {}

fn read(path: &Path) -> Result<Vec<u8>, TlsFileError> {
    std::fs::read(path).map_err(|error| TlsFileError::Read {
        path: path.to_owned(),
        error,
    })
}

fn pem_error(path: &Path, error: &pem::Error) -> TlsFileError {
    TlsFileError::Pem {
        path: path.to_owned(),
        detail: format!("{error:?}"),
    }
}

/// The certificates of a PEM file, in order (the server's own first, then its chain).
pub fn certificates_read(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsFileError> {
    let bytes = read(path)?;
    let certificates = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| pem_error(path, &error))?;
    if certificates.is_empty() {
        return Err(TlsFileError::NoCertificate {
            path: path.to_owned(),
        });
    }
    Ok(certificates)
}

/// The first private key of a PEM file: PKCS#8, PKCS#1 (RSA) or SEC1 (EC).
pub fn private_key_read(path: &Path) -> Result<PrivateKeyDer<'static>, TlsFileError> {
    let bytes = read(path)?;
    match PrivateKeyDer::from_pem_slice(&bytes) {
        Ok(key) => Ok(key),
        Err(pem::Error::NoItemsFound) => {
            let encrypted = bytes
                .windows(b"ENCRYPTED PRIVATE KEY".len())
                .any(|window| window == b"ENCRYPTED PRIVATE KEY");
            Err(if encrypted {
                TlsFileError::EncryptedKey {
                    path: path.to_owned(),
                }
            } else {
                TlsFileError::NoKey {
                    path: path.to_owned(),
                }
            })
        }
        Err(error) => Err(pem_error(path, &error)),
    }
}

/// The trust roots of a PEM file of CA certificates.
pub fn trust_read(path: &Path) -> Result<RootCertStore, TlsFileError> {
    let certificates = certificates_read(path)?;
    let mut roots = RootCertStore::empty();
    for certificate in certificates {
        roots
            .add(certificate)
            .map_err(|error| TlsFileError::Rejected {
                path: path.to_owned(),
                detail: format!("a CA certificate cannot be used as a trust anchor: {error}"),
            })?;
    }
    Ok(roots)
}
