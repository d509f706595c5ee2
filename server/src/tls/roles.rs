//! Roles from a client certificate, the rule of the Java bookie's `BookieAuthZFactory`: the
//! subject's first OU (in the certificate's own order) holds `;`-separated `code:value`
//! parts; code `0` lists the roles, comma-separated (`0:role1,role2;1:cluster`). A connection
//! is authorized when the **first** role is one of `--tls-authorized-roles`. A later part
//! with the same code replaces an earlier one, and names are trimmed, as `CertUtils` does.
//!
//! The subject is read straight from the DER (a few nested TLVs), so no X.509 crate enters the
//! build for one field; rustls has already verified the certificate against the trust roots.

/// OID 2.5.4.11, organizationalUnitName, as DER content bytes.
const OID_ORGANIZATIONAL_UNIT: &[u8] = &[0x55, 0x04, 0x0B];

const TAG_SEQUENCE: u8 = 0x30;
const TAG_SET: u8 = 0x31;
const TAG_OID: u8 = 0x06;
const TAG_INTEGER: u8 = 0x02;
/// `[0] EXPLICIT Version` in a TBSCertificate.
const TAG_VERSION: u8 = 0xA0;

/// Why a certificate's roles could not be read (the connection is then not authorized).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RoleError {
    /// The DER does not have the shape of an X.509 certificate.
    Malformed,
    /// The subject has no OU.
    NoOrganizationalUnit,
    /// The OU has no `0:` part with a role.
    NoRole,
}

impl std::fmt::Display for RoleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RoleError::Malformed => write!(f, "the certificate's DER could not be read"),
            RoleError::NoOrganizationalUnit => write!(f, "the certificate's subject has no OU"),
            RoleError::NoRole => {
                write!(
                    f,
                    "the certificate's OU has no role (expected `0:role1,role2;1:cluster`)"
                )
            }
        }
    }
}

/// The first role in the certificate `der`'s subject OU.
pub fn first_role(der: &[u8]) -> Result<String, RoleError> {
    let ou = subject_first_ou(der)?.ok_or(RoleError::NoOrganizationalUnit)?;
    first_role_of_ou(&ou).ok_or(RoleError::NoRole)
}

/// True when `role` is one of `authorized`.
#[must_use]
pub fn role_authorized(role: &str, authorized: &[String]) -> bool {
    authorized.iter().any(|allowed| allowed == role)
}

/// The first role of an OU string (`0:role1,role2;1:cluster` gives `role1`).
#[must_use]
pub fn first_role_of_ou(ou: &str) -> Option<String> {
    let mut roles = None;
    for part in ou.split(';') {
        // `^([0-9]+):(.*)$`, untrimmed before the match as in `CertUtils`.
        let Some((code, value)) = part.split_once(':') else {
            continue;
        };
        if code.is_empty() || !code.bytes().all(|byte| byte.is_ascii_digit()) {
            continue;
        }
        if code.trim() == "0" {
            roles = Some(value.trim());
        }
    }
    let first = roles?.split(',').next()?.trim();
    (!first.is_empty()).then(|| first.to_owned())
}

/// The subject's first OU value, if any.
fn subject_first_ou(der: &[u8]) -> Result<Option<String>, RoleError> {
    let (certificate, _) = tlv(der, TAG_SEQUENCE)?;
    let (mut tbs, _) = tlv(certificate, TAG_SEQUENCE)?;
    if tbs.first() == Some(&TAG_VERSION) {
        tbs = tlv(tbs, TAG_VERSION)?.1;
    }
    let (_serial, rest) = tlv(tbs, TAG_INTEGER)?;
    let (_signature, rest) = tlv(rest, TAG_SEQUENCE)?;
    let (_issuer, rest) = tlv(rest, TAG_SEQUENCE)?;
    let (_validity, rest) = tlv(rest, TAG_SEQUENCE)?;
    let (mut subject, _) = tlv(rest, TAG_SEQUENCE)?;
    while !subject.is_empty() {
        let (mut set, rest) = tlv(subject, TAG_SET)?;
        subject = rest;
        while !set.is_empty() {
            let (attribute, rest) = tlv(set, TAG_SEQUENCE)?;
            set = rest;
            let (oid, value) = tlv(attribute, TAG_OID)?;
            if oid != OID_ORGANIZATIONAL_UNIT {
                continue;
            }
            // Any string type (UTF8String, PrintableString, ...): its content bytes.
            let (_tag, content, _) = tlv_any(value)?;
            let text = String::from_utf8_lossy(content).into_owned();
            return Ok(Some(text));
        }
    }
    Ok(None)
}

/// Reads one TLV with tag `tag` from the front of `bytes`: (its content, the rest).
fn tlv(bytes: &[u8], tag: u8) -> Result<(&[u8], &[u8]), RoleError> {
    let (found, content, rest) = tlv_any(bytes)?;
    if found != tag {
        return Err(RoleError::Malformed);
    }
    Ok((content, rest))
}

/// Reads one TLV of any (single-byte) tag: (tag, content, rest). DER lengths only.
fn tlv_any(bytes: &[u8]) -> Result<(u8, &[u8], &[u8]), RoleError> {
    let (&tag, rest) = bytes.split_first().ok_or(RoleError::Malformed)?;
    let (&first, mut rest) = rest.split_first().ok_or(RoleError::Malformed)?;
    let length = if first < 0x80 {
        usize::from(first)
    } else {
        let count = usize::from(first & 0x7F);
        // Certificates are far below 2^32 bytes; 0x80 (indefinite) is not DER.
        if count == 0 || count > 4 || rest.len() < count {
            return Err(RoleError::Malformed);
        }
        let mut length = 0usize;
        for &byte in &rest[..count] {
            length = (length << 8) | usize::from(byte);
        }
        rest = &rest[count..];
        length
    };
    if rest.len() < length {
        return Err(RoleError::Malformed);
    }
    Ok((tag, &rest[..length], &rest[length..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_role_of_the_role_part_counts() {
        assert_eq!(
            first_role_of_ou("0:broker,admin;1:cluster").as_deref(),
            Some("broker")
        );
        assert_eq!(
            first_role_of_ou("1:cluster;0: client , x").as_deref(),
            Some("client")
        );
        // A later part with the same code replaces the earlier one (a HashMap put in Java).
        assert_eq!(first_role_of_ou("0:a;0:b").as_deref(), Some("b"));
    }

    #[test]
    fn an_ou_without_a_role_part_has_no_role() {
        assert_eq!(first_role_of_ou("1:cluster"), None);
        assert_eq!(first_role_of_ou("engineering"), None);
        assert_eq!(first_role_of_ou("0:"), None);
        assert_eq!(first_role_of_ou(""), None);
        // `^([0-9]+):` does not match a part that starts with a space.
        assert_eq!(first_role_of_ou("1:c; 0:broker"), None);
        assert_eq!(first_role_of_ou("x0:broker"), None);
    }

    #[test]
    fn a_role_is_authorized_only_when_listed() {
        let allowed = vec!["broker".to_owned(), "admin".to_owned()];
        assert!(role_authorized("broker", &allowed));
        assert!(!role_authorized("Broker", &allowed));
        assert!(!role_authorized("client", &allowed));
    }

    #[test]
    fn malformed_der_is_refused_not_panicked_on() {
        for bytes in [
            &[][..],
            &[0x30],
            &[0x30, 0x85, 1, 2, 3, 4, 5],
            &[0x30, 0x05, 0x02],
        ] {
            assert_eq!(first_role(bytes), Err(RoleError::Malformed));
        }
    }
}
