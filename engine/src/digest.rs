//! The client's digest inside an entry body (BookKeeper's `DigestManager`), as far as a bookie
//! can check it (docs/scrub.md, "Digests"). The record's own CRC32C covers the body as the
//! bookie received it; the digest covers it as the client sent it, so a body whose CRC
//! matches but whose digest does not was damaged before it reached the disk.
//!
//! The bookie does not read the ledger's metadata to know its digest type: it learns it from
//! the bodies. The first body whose CRC32C digest (4 bytes) or CRC32 digest (8 bytes) verifies
//! settles the type; HMAC needs the ledger's password and DUMMY carries nothing, so a ledger
//! whose first `DIGEST_LEARN_TRIES_MAX` bodies verify as neither is taken as unverifiable and
//! never checked (or charged for checks) again. The type is kept in the checkpoint.

/// What the bookie knows of a ledger's digest type.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DigestKind {
    /// Not learned yet.
    #[default]
    Unknown,
    /// BookKeeper's CRC32 (IEEE, 8 bytes).
    Crc32,
    /// BookKeeper's CRC32C (4 bytes).
    Crc32c,
    /// HMAC, DUMMY, or bodies that are not BookKeeper entries: not checked.
    Unverifiable,
}

/// Bodies that verify as neither digest before a ledger is taken as unverifiable.
pub const DIGEST_LEARN_TRIES_MAX: u8 = 8;

impl DigestKind {
    /// Its byte in the checkpoint's ledger table (BookKeeper's numbers; 0 and 255 ours).
    #[must_use]
    pub fn code(self) -> u8 {
        match self {
            DigestKind::Unknown => 0,
            DigestKind::Crc32 => 1,
            DigestKind::Crc32c => 3,
            DigestKind::Unverifiable => 255,
        }
    }

    /// The kind of a checkpoint byte; `None` for a byte no build writes.
    #[must_use]
    pub fn from_code(code: u8) -> Option<DigestKind> {
        match code {
            0 => Some(DigestKind::Unknown),
            1 => Some(DigestKind::Crc32),
            3 => Some(DigestKind::Crc32c),
            255 => Some(DigestKind::Unverifiable),
            _ => None,
        }
    }
}

/// What checking one body found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DigestCheck {
    /// The digest verifies.
    Verified,
    /// The ledger's digest type is known and this body's digest does not verify.
    Mismatch,
    /// Nothing to say (type unknown or unverifiable).
    Unchecked,
}

/// Checks `body` against a ledger whose digest is `kind` after `tries` bodies that settled
/// nothing; returns what it found and what the ledger's kind and tries become.
#[must_use]
pub fn digest_check(kind: DigestKind, tries: u8, body: &[u8]) -> (DigestCheck, DigestKind, u8) {
    match kind {
        DigestKind::Crc32c => (
            verdict(wire::verify_entry_body_crc32c(body).is_ok()),
            kind,
            tries,
        ),
        DigestKind::Crc32 => (
            verdict(wire::verify_entry_body_crc32(body).is_ok()),
            kind,
            tries,
        ),
        DigestKind::Unverifiable => (DigestCheck::Unchecked, kind, tries),
        DigestKind::Unknown => {
            if wire::verify_entry_body_crc32c(body).is_ok() {
                (DigestCheck::Verified, DigestKind::Crc32c, 0)
            } else if wire::verify_entry_body_crc32(body).is_ok() {
                (DigestCheck::Verified, DigestKind::Crc32, 0)
            } else if tries + 1 >= DIGEST_LEARN_TRIES_MAX {
                (DigestCheck::Unchecked, DigestKind::Unverifiable, 0)
            } else {
                (DigestCheck::Unchecked, DigestKind::Unknown, tries + 1)
            }
        }
    }
}

fn verdict(verified: bool) -> DigestCheck {
    if verified {
        DigestCheck::Verified
    } else {
        DigestCheck::Mismatch
    }
}
