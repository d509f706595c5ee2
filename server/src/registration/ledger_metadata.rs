//! A ledger's metadata znode as BookKeeper 4.x clients write it (`meta/LedgerMetadataSerDe`),
//! parsed as a pure function for the over-replication check (docs/gc.md): only the state and
//! the ensemble history, the two things that decide whether this bookie may drop a ledger.
//!
//! Every format starts with the header line `BookieMetadataFormatVersion\t<N>\n`, then:
//! - 3 (written since 4.9): `LedgerMetadataFormat` in binary protobuf, length-delimited (a
//!   varint byte count, then the message);
//! - 2 (4.2 to 4.8): the same message in protobuf text format, one field per line, nested
//!   messages as `name {` ... `}`;
//! - 1 (4.0, 4.1): lines of write quorum, ensemble size and length, one line per segment
//!   (`<first entry>\t<bookie>\t<bookie>...`), and a last `<last entry>\tCLOSED` line when the
//!   ledger is closed (`-102\tCLOSED`: in recovery).
//!
//! The parser is stricter than BookKeeper's: anything it does not recognise is an error, and
//! the caller keeps a ledger whose metadata is an error. A wrong "closed" or a lost ensemble
//! member could delete a replica; a refusal only keeps one.

use prost::Message;
use wire::ledger_metadata::{LedgerMetadataFormat, State};

/// The first bytes of every version (`LedgerMetadataSerDe.VERSION_KEY_BYTES`).
const HEADER_KEY: &[u8] = b"BookieMetadataFormatVersion\t";
/// BookKeeper reads at most this many version digits before it gives up.
const VERSION_DIGITS_MAX: usize = 10;
/// Version 1's last entry id of a ledger in recovery (`V1_IN_RECOVERY_ENTRY_ID`).
const V1_IN_RECOVERY_ENTRY_ID: &str = "-102";
/// Segments a ledger's history may hold before the node is refused: a real ledger changes
/// ensemble once per bookie failure it lives through, far below this.
const SEGMENTS_MAX: usize = 100_000;

/// A ledger's lifecycle state, as the metadata says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LedgerState {
    /// Still written to (or its writer died and nobody recovered it yet).
    Open,
    /// A reader is recovering it: its last entry is not settled yet.
    InRecovery,
    /// Closed: its last entry and ensembles no longer change, except by re-replication.
    Closed,
}

/// What the collector needs of a ledger's metadata.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LedgerMetadata {
    /// 1, 2 or 3.
    pub format_version: u32,
    pub state: LedgerState,
    /// Every ensemble of the ledger's history, in order: the bookie ids (`host:port`) of each.
    pub ensembles: Vec<Vec<String>>,
}

impl LedgerMetadata {
    /// Whether `bookie` is a member of any ensemble of the history (BookKeeper compares ids as
    /// strings, `BookieId.equals`).
    #[must_use]
    pub fn ensembles_contain(&self, bookie: &str) -> bool {
        self.ensembles
            .iter()
            .any(|ensemble| ensemble.iter().any(|member| member == bookie))
    }

    /// Whether this metadata lets `bookie` drop its copy of the ledger: closed (an open or
    /// recovering ledger may still change ensemble, back to us), with at least one ensemble
    /// (none would be no history to judge by), and `bookie` in none of them.
    #[must_use]
    pub fn overreplicated_on(&self, bookie: &str) -> bool {
        self.state == LedgerState::Closed
            && !self.ensembles.is_empty()
            && !self.ensembles_contain(bookie)
    }
}

/// Why a metadata znode did not parse.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MetadataError {
    /// No `BookieMetadataFormatVersion\t<N>\n` header.
    Header,
    /// A format version other than 1, 2 or 3.
    FormatVersion { version: u32 },
    /// Version 3: the length prefix or the message is not a `LedgerMetadataFormat`, or bytes
    /// follow the message.
    Protobuf,
    /// Version 1 or 2: line `line` (1 is the header) is not what the format holds.
    Text { line: usize },
    /// A state number BookKeeper does not define, or a version 2 state name it does not.
    State,
    /// More segments than `SEGMENTS_MAX`.
    SegmentsTooMany { count: usize },
}

impl std::fmt::Display for MetadataError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MetadataError::Header => write!(f, "no BookieMetadataFormatVersion header"),
            MetadataError::FormatVersion { version } => {
                write!(f, "metadata format version {version} (1, 2 or 3 expected)")
            }
            MetadataError::Protobuf => write!(f, "not a length-delimited LedgerMetadataFormat"),
            MetadataError::Text { line } => write!(f, "line {line} does not parse"),
            MetadataError::State => write!(f, "unknown ledger state"),
            MetadataError::SegmentsTooMany { count } => {
                write!(f, "{count} segments, more than {SEGMENTS_MAX}")
            }
        }
    }
}

impl std::error::Error for MetadataError {}

/// Parses the bytes of a ledger's metadata znode.
pub fn metadata_parse(bytes: &[u8]) -> Result<LedgerMetadata, MetadataError> {
    let (format_version, body) = header_parse(bytes)?;
    let metadata = match format_version {
        3 => v3_parse(body)?,
        2 => v2_parse(body)?,
        1 => v1_parse(body)?,
        version => return Err(MetadataError::FormatVersion { version }),
    };
    if metadata.ensembles.len() > SEGMENTS_MAX {
        return Err(MetadataError::SegmentsTooMany {
            count: metadata.ensembles.len(),
        });
    }
    assert_eq!(metadata.format_version, format_version);
    Ok(metadata)
}

/// The version and the bytes after the header line.
fn header_parse(bytes: &[u8]) -> Result<(u32, &[u8]), MetadataError> {
    let rest = bytes
        .strip_prefix(HEADER_KEY)
        .ok_or(MetadataError::Header)?;
    let end = rest
        .iter()
        .take(VERSION_DIGITS_MAX + 1)
        .position(|&byte| byte == b'\n')
        .ok_or(MetadataError::Header)?;
    let digits = &rest[..end];
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Err(MetadataError::Header);
    }
    let version = std::str::from_utf8(digits)
        .ok()
        .and_then(|text| text.parse().ok())
        .ok_or(MetadataError::Header)?;
    Ok((version, &rest[end + 1..]))
}

fn v3_parse(body: &[u8]) -> Result<LedgerMetadata, MetadataError> {
    // `decode_length_delimited` accepts trailing bytes; BookKeeper ignores them too, but a
    // node with more than one message is not one it wrote.
    let mut cursor = body;
    let length =
        prost::encoding::decode_varint(&mut cursor).map_err(|_| MetadataError::Protobuf)?;
    let length = usize::try_from(length).map_err(|_| MetadataError::Protobuf)?;
    if cursor.len() != length {
        return Err(MetadataError::Protobuf);
    }
    let format = LedgerMetadataFormat::decode(cursor).map_err(|_| MetadataError::Protobuf)?;
    // Absent, the state is BookKeeper's default, OPEN: the ledger is kept.
    let state = match format.state.map_or(Ok(State::Open), State::try_from) {
        Ok(State::Open) => LedgerState::Open,
        Ok(State::InRecovery) => LedgerState::InRecovery,
        Ok(State::Closed) => LedgerState::Closed,
        Err(_) => return Err(MetadataError::State),
    };
    let ensembles = format
        .segment
        .into_iter()
        .map(|segment| segment.ensemble_member)
        .collect();
    Ok(LedgerMetadata {
        format_version: 3,
        state,
        ensembles,
    })
}

/// Version 1: `quorum\nensemble size\nlength\n`, segment lines, an optional CLOSED line.
fn v1_parse(body: &[u8]) -> Result<LedgerMetadata, MetadataError> {
    // Line numbers count the header as line 1.
    let text = std::str::from_utf8(body).map_err(|_| MetadataError::Text { line: 2 })?;
    let mut lines = text
        .split('\n')
        .enumerate()
        .map(|(index, line)| (index + 2, line));
    for _ in 0..3 {
        let (line, value) = lines.next().ok_or(MetadataError::Text { line: 2 })?;
        value
            .parse::<i64>()
            .map_err(|_| MetadataError::Text { line })?;
    }
    let mut state = LedgerState::Open;
    let mut ensembles = Vec::new();
    for (line, value) in lines.by_ref() {
        // An open ledger's text ends with the newline of its last segment line.
        if value.is_empty() {
            break;
        }
        let fields: Vec<&str> = value.split('\t').collect();
        let [first, rest @ ..] = fields.as_slice() else {
            return Err(MetadataError::Text { line });
        };
        first
            .parse::<i64>()
            .map_err(|_| MetadataError::Text { line })?;
        if rest == ["CLOSED"] {
            state = if *first == V1_IN_RECOVERY_ENTRY_ID {
                LedgerState::InRecovery
            } else {
                LedgerState::Closed
            };
            break;
        }
        if rest.is_empty() || rest.iter().any(|member| member.is_empty()) {
            return Err(MetadataError::Text { line });
        }
        ensembles.push(rest.iter().map(|member| (*member).to_string()).collect());
    }
    // BookKeeper stops reading at CLOSED; anything but empty lines after it (or after an
    // empty line) is not what it writes.
    if let Some((line, _)) = lines.find(|(_, value)| !value.is_empty()) {
        return Err(MetadataError::Text { line });
    }
    Ok(LedgerMetadata {
        format_version: 1,
        state,
        ensembles,
    })
}

/// Version 2: protobuf text format as protobuf-java prints it. Only `state` and the
/// `ensembleMember`s of top-level `segment` blocks are read; every other line must still be a
/// `name: value`, `name {` or `}` line, and the state must appear exactly once.
fn v2_parse(body: &[u8]) -> Result<LedgerMetadata, MetadataError> {
    let text = std::str::from_utf8(body).map_err(|_| MetadataError::Text { line: 2 })?;
    // The open block (messages nest one level here): `Some(index)` for a segment, its index
    // in `ensembles`; `None` for another (customMetadata).
    let mut blocks: Vec<Option<usize>> = Vec::new();
    let mut state = None;
    let mut ensembles: Vec<Vec<String>> = Vec::new();
    for (index, raw) in text.split('\n').enumerate() {
        let line = index + 2;
        let error = MetadataError::Text { line };
        let trimmed = raw.trim();
        if trimmed.is_empty() {
            continue;
        }
        if trimmed == "}" {
            blocks.pop().ok_or(error)?;
            continue;
        }
        // A field first: a quoted value may itself end in " {".
        let field = trimmed
            .split_once(": ")
            .filter(|(name, _)| identifier(name));
        let Some((name, value)) = field else {
            let name = trimmed.strip_suffix(" {").ok_or(error.clone())?;
            if !identifier(name) || !blocks.is_empty() {
                return Err(error);
            }
            let segment = blocks.is_empty() && name == "segment";
            if segment {
                ensembles.push(Vec::new());
            }
            blocks.push(segment.then(|| ensembles.len() - 1));
            continue;
        };
        match (blocks.last(), name) {
            (None, "state") => {
                if state.is_some() {
                    return Err(error);
                }
                state = Some(v2_state(value)?);
            }
            (Some(Some(segment)), "ensembleMember") => {
                let member = v2_string(value).ok_or(error)?;
                ensembles[*segment].push(member.to_string());
            }
            _ => {}
        }
    }
    if !blocks.is_empty() {
        return Err(MetadataError::Text {
            line: text.split('\n').count() + 1,
        });
    }
    // `state` is a required field: protobuf-java refuses a message without it.
    let state = state.ok_or(MetadataError::State)?;
    Ok(LedgerMetadata {
        format_version: 2,
        state,
        ensembles,
    })
}

fn v2_state(value: &str) -> Result<LedgerState, MetadataError> {
    match value {
        "OPEN" => Ok(LedgerState::Open),
        "IN_RECOVERY" => Ok(LedgerState::InRecovery),
        "CLOSED" => Ok(LedgerState::Closed),
        _ => Err(MetadataError::State),
    }
}

/// A quoted text-format string without escapes (a bookie id needs none); `None` otherwise,
/// rather than a guess at unescaping.
fn v2_string(value: &str) -> Option<&str> {
    let inner = value.strip_prefix('"')?.strip_suffix('"')?;
    (!inner.is_empty() && !inner.contains(['"', '\\'])).then_some(inner)
}

fn identifier(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_')
}
