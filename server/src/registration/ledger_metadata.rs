//! A ledger's metadata znode as BookKeeper 4.x clients write it (`meta/LedgerMetadataSerDe`),
//! parsed as a pure function for the over-replication check (docs/gc.md) and the repairer
//! (docs/scrub.md): the state and the ensemble history, which decide whether this bookie may
//! drop a ledger; the quorum sizes and segment starts, which say which bookies hold an entry
//! (`write_set`); and the digest type, which says whether a peer's copy can be checked.
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
//! member could delete a replica; a refusal only keeps one. Fields the protobuf declares
//! `required` and this module reads (`quorumSize`, `ensembleSize`, a segment's `firstEntryId`)
//! must be present, as protobuf-java insists.

use prost::Message;
use wire::ledger_metadata::{self as proto, LedgerMetadataFormat, State};

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

/// How the writer digested each entry body (`LedgerMetadataFormat.DigestType` of
/// DataFormats.proto; `DigestManager.instantiate` picks the manager by it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DigestType {
    /// `CRC32DigestManager`: IEEE CRC-32 as an 8-byte long; a bookie can check it.
    Crc32,
    /// `MacDigestManager`: HMAC-SHA1 keyed by the password, which a bookie does not hold.
    Hmac,
    /// `CRC32CDigestManager`: CRC-32C as a 4-byte int; a bookie can check it.
    Crc32c,
    /// `DummyDigestManager`: no digest at all.
    Dummy,
}

/// What the collector and the repairer need of a ledger's metadata.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LedgerMetadata {
    /// 1, 2 or 3.
    pub format_version: u32,
    pub state: LedgerState,
    /// Every ensemble of the ledger's history, in order: the bookie ids (`host:port`) of each.
    pub ensembles: Vec<Vec<String>>,
    /// The first entry id of each ensemble, parallel to `ensembles`: ensemble `i` holds the
    /// entries from `segment_first_entries[i]` to the next segment's first entry, exclusive.
    pub segment_first_entries: Vec<i64>,
    /// Bookies per ensemble (`ensembleSize`; version 1's second line).
    pub ensemble_size: u32,
    /// Bookies each entry is written to (`quorumSize`; version 1's first line).
    pub write_quorum_size: u32,
    /// The writer's digest type (`digestType`), `None` when the metadata does not say: version
    /// 1 has no such field, and BookKeeper writes it only together with the password
    /// (`hasPassword` before 4.9, always since), so its absence means a ledger whose readers
    /// bring their own digest type. `None` also stands for a version 3 number BookKeeper does
    /// not define (protobuf-java keeps it as an unknown field). `LedgerMetadataSerDe` reads
    /// `digestType` only beside a `password`; as the two come together, this parser does not
    /// look at the password.
    pub digest_type: Option<DigestType>,
}

impl LedgerMetadata {
    /// The ids of the bookies that hold `entry`, in BookKeeper's write order
    /// (`RoundRobinDistributionSchedule.getWriteSet` on the ensemble of
    /// `LedgerMetadata.getEnsembleAt`): the ensemble of the last segment whose first entry is
    /// at most `entry`, members `(entry + i) % ensemble_size` for `i` in
    /// `0..write_quorum_size`.
    ///
    /// `None` when no segment covers `entry` (negative, or before the first segment) or when
    /// the metadata cannot say (a write quorum of 0 or above the ensemble size, an ensemble
    /// whose member count is not the ensemble size, segments not in increasing order: all of
    /// which `LedgerMetadataBuilder` refuses). A guess could send the repairer to a bookie
    /// that never held the entry.
    #[must_use]
    pub fn write_set(&self, entry: i64) -> Option<Vec<&str>> {
        let entry_index = u64::try_from(entry).ok()?;
        let ensemble_size = u64::from(self.ensemble_size);
        let write_quorum_size = u64::from(self.write_quorum_size);
        if write_quorum_size == 0 || write_quorum_size > ensemble_size {
            return None;
        }
        if self.segment_first_entries.len() != self.ensembles.len()
            || !self.segment_first_entries.is_sorted_by(|a, b| a < b)
        {
            return None;
        }
        let covering = self
            .segment_first_entries
            .partition_point(|&first| first <= entry);
        let ensemble = self.ensembles.get(covering.checked_sub(1)?)?;
        if u64::try_from(ensemble.len()).ok()? != ensemble_size {
            return None;
        }
        (0..write_quorum_size)
            .map(|offset| {
                // `entry_index % ensemble_size + offset` stays below 2^33: no overflow.
                let member = (entry_index % ensemble_size + offset) % ensemble_size;
                let member = usize::try_from(member).ok()?;
                ensemble.get(member).map(String::as_str)
            })
            .collect()
    }

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
    /// Version 2 or 3: a required field this parser reads is absent.
    FieldMissing { field: &'static str },
    /// A quorum or ensemble size below zero.
    SizeNegative { field: &'static str, value: i64 },
    /// Version 2: a digest type name BookKeeper does not define.
    DigestType,
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
            MetadataError::FieldMissing { field } => write!(f, "no {field}"),
            MetadataError::SizeNegative { field, value } => write!(f, "{field} is {value}"),
            MetadataError::DigestType => write!(f, "unknown digest type"),
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
    let write_quorum_size = size("quorumSize", format.quorum_size.map(i64::from))?;
    let ensemble_size = size("ensembleSize", format.ensemble_size.map(i64::from))?;
    let mut ensembles = Vec::with_capacity(format.segment.len());
    let mut segment_first_entries = Vec::with_capacity(format.segment.len());
    for segment in format.segment {
        let first = segment.first_entry_id.ok_or(MetadataError::FieldMissing {
            field: "firstEntryId",
        })?;
        segment_first_entries.push(first);
        ensembles.push(segment.ensemble_member);
    }
    let digest_type = format
        .digest_type
        .and_then(|number| proto::DigestType::try_from(number).ok())
        .map(|digest_type| match digest_type {
            proto::DigestType::Crc32 => DigestType::Crc32,
            proto::DigestType::Hmac => DigestType::Hmac,
            proto::DigestType::Crc32c => DigestType::Crc32c,
            proto::DigestType::Dummy => DigestType::Dummy,
        });
    Ok(LedgerMetadata {
        format_version: 3,
        state,
        ensembles,
        segment_first_entries,
        ensemble_size,
        write_quorum_size,
        digest_type,
    })
}

/// A quorum or ensemble size: present and not negative.
fn size(field: &'static str, value: Option<i64>) -> Result<u32, MetadataError> {
    let value = value.ok_or(MetadataError::FieldMissing { field })?;
    u32::try_from(value).map_err(|_| MetadataError::SizeNegative { field, value })
}

/// Version 1: `quorum\nensemble size\nlength\n`, segment lines, an optional CLOSED line.
fn v1_parse(body: &[u8]) -> Result<LedgerMetadata, MetadataError> {
    // Line numbers count the header as line 1.
    let text = std::str::from_utf8(body).map_err(|_| MetadataError::Text { line: 2 })?;
    let mut lines = text
        .split('\n')
        .enumerate()
        .map(|(index, line)| (index + 2, line));
    // Write quorum, ensemble size (`Integer.parseInt`), length (`Long.parseLong`).
    let (line, value) = lines.next().ok_or(MetadataError::Text { line: 2 })?;
    let write_quorum_size = v1_size("quorumSize", line, value)?;
    let (line, value) = lines.next().ok_or(MetadataError::Text { line: 3 })?;
    let ensemble_size = v1_size("ensembleSize", line, value)?;
    let (line, value) = lines.next().ok_or(MetadataError::Text { line: 4 })?;
    value
        .parse::<i64>()
        .map_err(|_| MetadataError::Text { line })?;
    let mut state = LedgerState::Open;
    let mut ensembles = Vec::new();
    let mut segment_first_entries = Vec::new();
    for (line, value) in lines.by_ref() {
        // An open ledger's text ends with the newline of its last segment line.
        if value.is_empty() {
            break;
        }
        let fields: Vec<&str> = value.split('\t').collect();
        let [first, rest @ ..] = fields.as_slice() else {
            return Err(MetadataError::Text { line });
        };
        let first_entry = first
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
        segment_first_entries.push(first_entry);
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
        segment_first_entries,
        ensemble_size,
        write_quorum_size,
        digest_type: None,
    })
}

fn v1_size(field: &'static str, line: usize, value: &str) -> Result<u32, MetadataError> {
    let number = value
        .parse::<i32>()
        .map_err(|_| MetadataError::Text { line })?;
    size(field, Some(i64::from(number)))
}

/// Version 2: protobuf text format as protobuf-java prints it. Only `state`, `quorumSize`,
/// `ensembleSize`, `digestType`, and the `ensembleMember`s and `firstEntryId` of top-level
/// `segment` blocks are read; every other line must still be a `name: value`, `name {` or `}`
/// line, and each field read must appear at most once (state, the sizes and each segment's
/// first entry exactly once).
fn v2_parse(body: &[u8]) -> Result<LedgerMetadata, MetadataError> {
    let text = std::str::from_utf8(body).map_err(|_| MetadataError::Text { line: 2 })?;
    // The open block (messages nest one level here): `Some(index)` for a segment, its index
    // in `ensembles`; `None` for another (customMetadata).
    let mut blocks: Vec<Option<usize>> = Vec::new();
    let mut fields = V2Fields::default();
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
            let segment = name == "segment";
            if segment {
                fields.ensembles.push(Vec::new());
                fields.segment_first_entries.push(None);
            }
            blocks.push(segment.then(|| fields.ensembles.len() - 1));
            continue;
        };
        fields.read(blocks.last().copied(), name, value, line)?;
    }
    if !blocks.is_empty() {
        return Err(MetadataError::Text {
            line: text.split('\n').count() + 1,
        });
    }
    fields.finish()
}

/// What version 2's lines have said so far.
#[derive(Default)]
struct V2Fields {
    state: Option<LedgerState>,
    write_quorum_size: Option<i64>,
    ensemble_size: Option<i64>,
    digest_type: Option<DigestType>,
    ensembles: Vec<Vec<String>>,
    segment_first_entries: Vec<Option<i64>>,
}

impl V2Fields {
    /// One `name: value` line, in `block` (`None` at the top, `Some(None)` in a block that is
    /// not a segment, `Some(Some(index))` in segment `index`).
    fn read(
        &mut self,
        block: Option<Option<usize>>,
        name: &str,
        value: &str,
        line: usize,
    ) -> Result<(), MetadataError> {
        let error = MetadataError::Text { line };
        let number = || value.parse::<i64>().map_err(|_| error.clone());
        // The sizes are `int32`s: protobuf-java refuses a value out of range.
        let size = || {
            value
                .parse::<i32>()
                .map(i64::from)
                .map_err(|_| error.clone())
        };
        let once = |slot: bool| if slot { Err(error.clone()) } else { Ok(()) };
        match (block, name) {
            (None, "state") => {
                once(self.state.is_some())?;
                self.state = Some(v2_state(value)?);
            }
            (None, "quorumSize") => {
                once(self.write_quorum_size.is_some())?;
                self.write_quorum_size = Some(size()?);
            }
            (None, "ensembleSize") => {
                once(self.ensemble_size.is_some())?;
                self.ensemble_size = Some(size()?);
            }
            (None, "digestType") => {
                once(self.digest_type.is_some())?;
                self.digest_type = Some(v2_digest_type(value)?);
            }
            (Some(Some(segment)), "ensembleMember") => {
                let member = v2_string(value).ok_or(error)?;
                self.ensembles[segment].push(member.to_string());
            }
            (Some(Some(segment)), "firstEntryId") => {
                once(self.segment_first_entries[segment].is_some())?;
                self.segment_first_entries[segment] = Some(number()?);
            }
            _ => {}
        }
        Ok(())
    }

    fn finish(self) -> Result<LedgerMetadata, MetadataError> {
        // `state` is a required field: protobuf-java refuses a message without it.
        let state = self.state.ok_or(MetadataError::State)?;
        let segment_first_entries = self
            .segment_first_entries
            .into_iter()
            .collect::<Option<Vec<i64>>>()
            .ok_or(MetadataError::FieldMissing {
                field: "firstEntryId",
            })?;
        Ok(LedgerMetadata {
            format_version: 2,
            state,
            ensembles: self.ensembles,
            segment_first_entries,
            ensemble_size: size("ensembleSize", self.ensemble_size)?,
            write_quorum_size: size("quorumSize", self.write_quorum_size)?,
            digest_type: self.digest_type,
        })
    }
}

/// A version 2 digest type name; protobuf-java refuses a name its enum lacks.
fn v2_digest_type(value: &str) -> Result<DigestType, MetadataError> {
    match value {
        "CRC32" => Ok(DigestType::Crc32),
        "HMAC" => Ok(DigestType::Hmac),
        "CRC32C" => Ok(DigestType::Crc32c),
        "DUMMY" => Ok(DigestType::Dummy),
        _ => Err(MetadataError::DigestType),
    }
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
