//! What ringlog writes into ZooKeeper, as pure functions: the znode paths (protocol §6.1),
//! the `BookieServiceInfoFormat` of a registration (§6.2) and the cookie (§6.3).
//!
//! `BookieServiceInfoFormat` (proto2, bookkeeper-proto `DataFormats.proto`), as encoded here:
//!
//! ```text
//! message BookieServiceInfoFormat {          // field 6, wire type 2 (length-delimited)
//!   repeated Endpoint endpoints = 6;         //   0x32 len Endpoint
//!   map<string, string> properties = 7;      //   none written
//! }
//! message Endpoint {
//!   required string id = 1;                  //   0x0a len "bookie"
//!   required int32 port = 2;                 //   0x10 varint port
//!   required string host = 3;                //   0x1a len host
//!   required string protocol = 4;            //   0x22 len "bookie-rpc"
//!   repeated string auth = 5;                //   none written
//!   repeated string extensions = 6;          //   none written ("tls" only with TLS)
//! }
//! ```
//!
//! The cookie is `"5\n"` (layout version) and then `CookieFormat` in protobuf text format,
//! one `name: "escaped value"` line per set field, in field-number order, as Java's
//! `TextFormat.printToString` writes it.

use prost::encoding::encode_varint;

/// The layout version ringlog writes in front of a cookie (BookKeeper's current one).
pub const COOKIE_LAYOUT_VERSION: u32 = 5;
/// The first layout version whose body is protobuf text format (3 is one value a line).
const COOKIE_LAYOUT_VERSION_TEXT_FORMAT: u32 = 4;
/// The endpoint id and protocol Java bookies publish and clients look for.
pub const ENDPOINT_ID: &str = "bookie";
/// The protocol `DefaultBookieAddressResolver` picks an endpoint by.
pub const ENDPOINT_PROTOCOL: &str = "bookie-rpc";

/// Where the registration sits: which of the two directories clients list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// `ROOT/available/<id>`: writable.
    Available,
    /// `ROOT/available/readonly/<id>`: read-only.
    ReadOnly,
}

impl Place {
    /// The other directory.
    #[must_use]
    pub fn other(self) -> Place {
        match self {
            Place::Available => Place::ReadOnly,
            Place::ReadOnly => Place::Available,
        }
    }
}

/// The znodes under one metadata root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Paths {
    /// `ROOT`, e.g. `/ledgers`.
    pub root: String,
    /// `ROOT/available`.
    pub available: String,
    /// `ROOT/available/readonly`.
    pub readonly: String,
    /// `ROOT/cookies`.
    pub cookies: String,
    /// `ROOT/INSTANCEID`, written by `metaformat`, copied into cookies.
    pub instance_id: String,
}

impl Paths {
    /// The paths under `root` (a valid absolute path, checked by the config).
    #[must_use]
    pub fn new(root: &str) -> Paths {
        assert!(root.starts_with('/'));
        assert!(!root.ends_with('/'));
        let available = format!("{root}/available");
        Paths {
            root: root.to_string(),
            readonly: format!("{available}/readonly"),
            available,
            cookies: format!("{root}/cookies"),
            instance_id: format!("{root}/INSTANCEID"),
        }
    }

    /// The ephemeral registration of `id` in `place`.
    #[must_use]
    pub fn registration(&self, place: Place, id: &str) -> String {
        match place {
            Place::Available => format!("{}/{id}", self.available),
            Place::ReadOnly => format!("{}/{id}", self.readonly),
        }
    }

    /// The cookie of `id`.
    #[must_use]
    pub fn cookie(&self, id: &str) -> String {
        format!("{}/{id}", self.cookies)
    }
}

/// The `BookieServiceInfoFormat` of a bookie serving `bookie-rpc` on `host:port`.
#[must_use]
pub fn service_info_encode(host: &str, port: u16) -> Vec<u8> {
    let mut endpoint = Vec::with_capacity(32 + host.len());
    field_bytes(&mut endpoint, 1, ENDPOINT_ID.as_bytes());
    encode_varint((2 << 3) | WIRE_VARINT, &mut endpoint);
    encode_varint(u64::from(port), &mut endpoint);
    field_bytes(&mut endpoint, 3, host.as_bytes());
    field_bytes(&mut endpoint, 4, ENDPOINT_PROTOCOL.as_bytes());
    let mut message = Vec::with_capacity(endpoint.len() + 4);
    field_bytes(&mut message, 6, &endpoint);
    assert!(message.len() > endpoint.len());
    message
}

const WIRE_VARINT: u64 = 0;
const WIRE_LENGTH_DELIMITED: u64 = 2;

fn field_bytes(out: &mut Vec<u8>, field: u64, bytes: &[u8]) {
    encode_varint((field << 3) | WIRE_LENGTH_DELIMITED, out);
    encode_varint(u64::try_from(bytes.len()).expect("usize fits u64"), out);
    out.extend_from_slice(bytes);
}

/// A bookie's cookie (`CookieFormat`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cookie {
    /// Field 1, `bookieHost`: the bookie id.
    pub bookie_host: String,
    /// Field 2, `journalDir`: the journal directories joined by `,`.
    pub journal_dirs: String,
    /// Field 3, `ledgerDirs`: `"<count>\t<dir1>\t<dir2>..."`.
    pub ledger_dirs: String,
    /// Field 4, `instanceId`: the cluster's `INSTANCEID`, if it has one.
    pub instance_id: Option<String>,
}

/// Why stored cookie bytes are not a cookie.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CookieError {
    /// The first line is not a layout version ringlog can read (3 or more).
    Version,
    /// The text-format body does not parse.
    Syntax,
    /// A required field is missing.
    FieldMissing(&'static str),
}

impl std::fmt::Display for CookieError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CookieError::Version => write!(f, "no layout version 3 or later on its first line"),
            CookieError::Syntax => write!(f, "its body is not protobuf text format"),
            CookieError::FieldMissing(field) => write!(f, "it has no {field}"),
        }
    }
}

impl Cookie {
    /// The cookie of a ringlog bookie `id` whose shards' journals live under `data_dir` (the
    /// first of --data-dir when it lists several): that one directory is both its journal
    /// and its ledger directory.
    #[must_use]
    pub fn new(id: &str, data_dir: &str, instance_id: Option<String>) -> Cookie {
        Cookie {
            bookie_host: id.to_string(),
            journal_dirs: data_dir.to_string(),
            ledger_dirs: format!("1\t{data_dir}"),
            instance_id,
        }
    }

    /// The znode content: `"5\n"` + text format.
    #[must_use]
    pub fn encode(&self) -> String {
        let mut out = format!("{COOKIE_LAYOUT_VERSION}\n");
        text_field(&mut out, "bookieHost", &self.bookie_host);
        text_field(&mut out, "journalDir", &self.journal_dirs);
        text_field(&mut out, "ledgerDirs", &self.ledger_dirs);
        if let Some(instance_id) = &self.instance_id {
            text_field(&mut out, "instanceId", instance_id);
        }
        out
    }

    /// Parses a stored cookie, by Java bookies or ringlog (layout 3, or 4 and later).
    pub fn parse(bytes: &[u8]) -> Result<Cookie, CookieError> {
        let text = std::str::from_utf8(bytes).map_err(|_| CookieError::Syntax)?;
        let (version, body) = text.split_once('\n').unwrap_or((text, ""));
        let version: u32 = version.trim().parse().map_err(|_| CookieError::Version)?;
        if version < COOKIE_LAYOUT_VERSION_TEXT_FORMAT {
            if version != 3 {
                return Err(CookieError::Version);
            }
            let mut lines = body.lines();
            let mut next = |field| {
                lines
                    .next()
                    .map(str::to_string)
                    .ok_or(CookieError::FieldMissing(field))
            };
            return Ok(Cookie {
                bookie_host: next("bookieHost")?,
                journal_dirs: next("journalDir")?,
                ledger_dirs: next("ledgerDirs")?,
                instance_id: None,
            });
        }
        let mut fields = std::collections::HashMap::new();
        for line in body.lines().filter(|line| !line.trim().is_empty()) {
            let (name, value) = line.split_once(':').ok_or(CookieError::Syntax)?;
            fields.insert(name.trim(), text_unescape(value.trim())?);
        }
        let mut take = |field| fields.remove(field).ok_or(CookieError::FieldMissing(field));
        Ok(Cookie {
            bookie_host: take("bookieHost")?,
            journal_dirs: take("journalDir")?,
            ledger_dirs: take("ledgerDirs")?,
            instance_id: take("instanceId").ok().filter(|id| !id.is_empty()),
        })
    }
}

/// `name: "value"\n` with protobuf text-format escapes (`TextFormat.escapeBytes`).
fn text_field(out: &mut String, name: &str, value: &str) {
    out.push_str(name);
    out.push_str(": \"");
    for &byte in value.as_bytes() {
        match byte {
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            b'\\' => out.push_str("\\\\"),
            b'\'' => out.push_str("\\'"),
            b'"' => out.push_str("\\\""),
            0x20..=0x7e => out.push(char::from(byte)),
            _ => out.push_str(&format!("\\{byte:03o}")),
        }
    }
    out.push_str("\"\n");
}

/// One quoted text-format string (adjacent quoted parts are joined, as protobuf does).
fn text_unescape(quoted: &str) -> Result<String, CookieError> {
    let mut bytes = Vec::with_capacity(quoted.len());
    let mut input = quoted.as_bytes().iter().copied().peekable();
    loop {
        match input.next() {
            None => break,
            Some(b' ' | b'\t') => continue,
            Some(quote @ (b'"' | b'\'')) => loop {
                match input.next().ok_or(CookieError::Syntax)? {
                    byte if byte == quote => break,
                    b'\\' => bytes.push(text_escape(&mut input)?),
                    byte => bytes.push(byte),
                }
            },
            Some(_) => return Err(CookieError::Syntax),
        }
    }
    String::from_utf8(bytes).map_err(|_| CookieError::Syntax)
}

/// The byte an escape after `\` stands for.
fn text_escape(
    input: &mut std::iter::Peekable<impl Iterator<Item = u8>>,
) -> Result<u8, CookieError> {
    let byte = input.next().ok_or(CookieError::Syntax)?;
    let simple = match byte {
        b'n' => Some(b'\n'),
        b'r' => Some(b'\r'),
        b't' => Some(b'\t'),
        b'a' => Some(0x07),
        b'b' => Some(0x08),
        b'f' => Some(0x0c),
        b'v' => Some(0x0b),
        b'\\' | b'\'' | b'"' | b'?' => Some(byte),
        _ => None,
    };
    if let Some(simple) = simple {
        return Ok(simple);
    }
    let (radix, digits_max, mut value) = match byte {
        b'0'..=b'7' => (8, 2, u32::from(byte - b'0')),
        b'x' => (16, 2, 0),
        _ => return Err(CookieError::Syntax),
    };
    let mut digits = 0;
    while digits < digits_max {
        let Some(digit) = input
            .peek()
            .and_then(|&next| char::from(next).to_digit(radix))
        else {
            break;
        };
        input.next();
        value = value * radix + digit;
        digits += 1;
    }
    if radix == 16 && digits == 0 {
        return Err(CookieError::Syntax);
    }
    u8::try_from(value).map_err(|_| CookieError::Syntax)
}
