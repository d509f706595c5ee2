//! BookKeeper's under-replication marks, as pure functions: where the mark of a ledger lives
//! and what it holds, so that the repairer (docs/scrub.md) can mark a ledger it could not
//! repair exactly as the Auditor does (`meta/ZkLedgerUnderreplicationManager`,
//! `markLedgerUnderreplicatedAsync`), and AutoRecovery and the shell see it.
//!
//! A mark is the persistent znode
//! `ROOT/underreplication/ledgers/<4 hex>/<4 hex>/<4 hex>/<4 hex>/urL<id, 10 digits>` whose
//! data is an `UnderreplicatedLedgerFormat` (DataFormats.proto: `repeated string replica = 1;
//! optional int64 ctime = 2;`) in protobuf text format, as protobuf-java's `toString` prints
//! it. When the mark exists, BookKeeper reads it, appends the replicas it lacks, sets ctime to
//! now and writes it back with the version it read; when nothing is added it writes nothing.

use super::gc_metadata::path_join;

/// `BookKeeperConstants.UNDER_REPLICATION_NODE`.
const UNDERREPLICATION_ZNODE: &str = "underreplication";
/// `BookKeeperConstants.DEFAULT_ZK_LEDGERS_ROOT_PATH`, under the node above.
const UNDERREPLICATION_LEDGERS_ZNODE: &str = "ledgers";
/// The mark's name: this prefix and the ledger id in decimal, zero-padded to 10 columns.
const UNDERREPLICATION_PREFIX: &str = "urL";
/// Bits per level of the mark's parent path: the id in four 16-bit groups, high first.
const PATH_GROUP_BITS: u32 = 16;

/// The path of `ledger`'s mark (`ZkLedgerUnderreplicationManager.getUrLedgerZnode`): bits
/// 63-48, 47-32, 31-16 and 15-0 of the id as `%04x`, then `urL%010d`.
///
/// Java shifts the signed id arithmetically and masks each group, and `%010d` pads after the
/// sign; Rust's `>>` on `i64` and `{:010}` do the same, so even a negative id (which no
/// ledger has) gets Java's path.
#[must_use]
pub fn underreplicated_path(root: &str, ledger: i64) -> String {
    let group = |index: u32| format!("{:04x}", (ledger >> (PATH_GROUP_BITS * index)) & 0xffff);
    let base = path_join(root, UNDERREPLICATION_ZNODE);
    format!(
        "{base}/{UNDERREPLICATION_LEDGERS_ZNODE}/{}/{}/{}/{}/{UNDERREPLICATION_PREFIX}{ledger:010}",
        group(3),
        group(2),
        group(1),
        group(0),
    )
}

/// The data of a mark naming `replicas` (bookie ids, in order), created at `ctime_ms`
/// (milliseconds since the epoch, `System.currentTimeMillis`): what protobuf-java's
/// `TextFormat` printer writes for the message, fields in number order, one per line,
/// `name: value`, strings quoted and escaped as `TextFormat.escapeBytes` does.
///
/// BookKeeper stores ctime unless `storeSystemTimeAsLedgerUnderreplicatedMarkTime` is off
/// (it is on by default).
#[must_use]
pub fn underreplicated_data<S: AsRef<str>>(replicas: &[S], ctime_ms: i64) -> Vec<u8> {
    let mut data = Vec::new();
    for replica in replicas {
        data.extend_from_slice(b"replica: \"");
        text_escape(&mut data, replica.as_ref().as_bytes());
        data.extend_from_slice(b"\"\n");
    }
    data.extend_from_slice(format!("ctime: {ctime_ms}\n").as_bytes());
    data
}

/// Protobuf-java's `TextFormatEscaper.escapeBytes`: C escapes for the control characters
/// that have one and for the quotes and backslash, printable ASCII as is, every other byte
/// (non-ASCII UTF-8 included) as three octal digits.
fn text_escape(out: &mut Vec<u8>, bytes: &[u8]) {
    for &byte in bytes {
        let escape = match byte {
            0x07 => Some(b'a'),
            0x08 => Some(b'b'),
            0x09 => Some(b't'),
            0x0a => Some(b'n'),
            0x0b => Some(b'v'),
            0x0c => Some(b'f'),
            0x0d => Some(b'r'),
            b'"' | b'\'' | b'\\' => Some(byte),
            _ => None,
        };
        match escape {
            Some(letter) => out.extend_from_slice(&[b'\\', letter]),
            None if (0x20..=0x7e).contains(&byte) => out.push(byte),
            None => out.extend_from_slice(&[
                b'\\',
                b'0' + (byte >> 6),
                b'0' + ((byte >> 3) & 7),
                b'0' + (byte & 7),
            ]),
        }
    }
}

/// Why a mark's data is not an `UnderreplicatedLedgerFormat` in text format. BookKeeper
/// fails the mark then (`TextFormat.ParseException`, "Invalid underreplicated ledger data")
/// rather than overwrite a node it cannot read; so should the caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum UnderreplicatedError {
    /// The text does not parse at byte `offset`.
    Syntax { offset: usize },
    /// A field other than `replica` and `ctime` starts at byte `offset`.
    FieldUnknown { offset: usize },
    /// The replica string ending before byte `offset` is not UTF-8.
    Utf8 { offset: usize },
}

impl std::fmt::Display for UnderreplicatedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UnderreplicatedError::Syntax { offset } => {
                write!(f, "under-replication mark does not parse at byte {offset}")
            }
            UnderreplicatedError::FieldUnknown { offset } => {
                write!(
                    f,
                    "under-replication mark has an unknown field at byte {offset}"
                )
            }
            UnderreplicatedError::Utf8 { offset } => {
                write!(
                    f,
                    "under-replication mark has a non-UTF-8 replica before byte {offset}"
                )
            }
        }
    }
}

impl std::error::Error for UnderreplicatedError {}

/// The replicas a mark names, in order, for merging ours in
/// (`ZkLedgerUnderreplicationManager.handleLedgerUnderreplicatedAlreadyMarked`). Reads what
/// `TextFormat.merge` accepts for this message: whitespace and `#` comments anywhere,
/// `name: value` with an optional `;` or `,` after it, strings in either quote with escapes
/// and adjacent strings concatenated, the list form `replica: ["a", "b"]`, and a decimal,
/// hex or octal ctime. An unknown field is an error, as it is to `TextFormat.merge`.
pub fn underreplicated_parse_replicas(data: &[u8]) -> Result<Vec<String>, UnderreplicatedError> {
    let mut text = Text { data, offset: 0 };
    let mut replicas = Vec::new();
    loop {
        text.blank_skip();
        if text.offset == data.len() {
            return Ok(replicas);
        }
        let start = text.offset;
        let name = text.identifier()?;
        text.blank_skip();
        text.expect(b':')?;
        text.blank_skip();
        match name {
            b"replica" if text.peek() == Some(b'[') => text.replica_list(&mut replicas)?,
            b"replica" => replicas.push(text.string()?),
            b"ctime" => text.integer()?,
            _ => return Err(UnderreplicatedError::FieldUnknown { offset: start }),
        }
        text.blank_skip();
        if matches!(text.peek(), Some(b';' | b',')) {
            text.offset += 1;
        }
    }
}

/// A cursor over a mark's text.
struct Text<'a> {
    data: &'a [u8],
    offset: usize,
}

impl<'a> Text<'a> {
    fn peek(&self) -> Option<u8> {
        self.data.get(self.offset).copied()
    }

    fn syntax(&self) -> UnderreplicatedError {
        UnderreplicatedError::Syntax {
            offset: self.offset,
        }
    }

    fn expect(&mut self, byte: u8) -> Result<(), UnderreplicatedError> {
        if self.peek() != Some(byte) {
            return Err(self.syntax());
        }
        self.offset += 1;
        Ok(())
    }

    /// Whitespace and `#` comments (to the end of the line).
    fn blank_skip(&mut self) {
        while let Some(byte) = self.peek() {
            if byte == b'#' {
                while self.peek().is_some_and(|byte| byte != b'\n') {
                    self.offset += 1;
                }
            } else if matches!(byte, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c) {
                self.offset += 1;
            } else {
                return;
            }
        }
    }

    fn identifier(&mut self) -> Result<&'a [u8], UnderreplicatedError> {
        let start = self.offset;
        if !self
            .peek()
            .is_some_and(|byte| byte.is_ascii_alphabetic() || byte == b'_')
        {
            return Err(self.syntax());
        }
        while self
            .peek()
            .is_some_and(|byte| byte.is_ascii_alphanumeric() || byte == b'_')
        {
            self.offset += 1;
        }
        Ok(&self.data[start..self.offset])
    }

    /// `[ "a", "b" ]`, possibly empty.
    fn replica_list(&mut self, replicas: &mut Vec<String>) -> Result<(), UnderreplicatedError> {
        self.expect(b'[')?;
        self.blank_skip();
        if self.peek() == Some(b']') {
            self.offset += 1;
            return Ok(());
        }
        loop {
            replicas.push(self.string()?);
            self.blank_skip();
            match self.peek() {
                Some(b',') => self.offset += 1,
                Some(b']') => {
                    self.offset += 1;
                    return Ok(());
                }
                _ => return Err(self.syntax()),
            }
            self.blank_skip();
        }
    }

    /// One or more adjacent quoted literals, unescaped and joined.
    fn string(&mut self) -> Result<String, UnderreplicatedError> {
        let mut bytes = Vec::new();
        self.literal(&mut bytes)?;
        loop {
            self.blank_skip();
            if !matches!(self.peek(), Some(b'"' | b'\'')) {
                break;
            }
            self.literal(&mut bytes)?;
        }
        String::from_utf8(bytes).map_err(|_| UnderreplicatedError::Utf8 {
            offset: self.offset,
        })
    }

    /// One quoted literal, on one line, in `'` or `"`.
    fn literal(&mut self, out: &mut Vec<u8>) -> Result<(), UnderreplicatedError> {
        let quote = self
            .peek()
            .filter(|&byte| byte == b'"' || byte == b'\'')
            .ok_or(self.syntax())?;
        self.offset += 1;
        loop {
            match self.peek() {
                None | Some(b'\n') => return Err(self.syntax()),
                Some(byte) if byte == quote => {
                    self.offset += 1;
                    return Ok(());
                }
                Some(b'\\') => {
                    self.offset += 1;
                    self.escape(out)?;
                }
                Some(byte) => {
                    out.push(byte);
                    self.offset += 1;
                }
            }
        }
    }

    /// The escape after a backslash (`TextFormat.unescapeBytes`).
    fn escape(&mut self, out: &mut Vec<u8>) -> Result<(), UnderreplicatedError> {
        let letter = self.peek().ok_or(self.syntax())?;
        self.offset += 1;
        let simple = match letter {
            b'a' => Some(0x07),
            b'b' => Some(0x08),
            b'f' => Some(0x0c),
            b'n' => Some(b'\n'),
            b'r' => Some(b'\r'),
            b't' => Some(b'\t'),
            b'v' => Some(0x0b),
            b'\\' | b'\'' | b'"' | b'?' => Some(letter),
            _ => None,
        };
        if let Some(byte) = simple {
            out.push(byte);
            return Ok(());
        }
        match letter {
            b'0'..=b'7' => {
                self.offset -= 1;
                let value = self.digits(8, 3)?;
                out.push(u8::try_from(value).map_err(|_| self.syntax())?);
            }
            b'x' => {
                let value = self.digits(16, 2)?;
                out.push(u8::try_from(value).map_err(|_| self.syntax())?);
            }
            b'u' | b'U' => {
                let value = self.digits(16, if letter == b'u' { 4 } else { 8 })?;
                let character = char::from_u32(value).ok_or(self.syntax())?;
                let mut buffer = [0_u8; 4];
                out.extend_from_slice(character.encode_utf8(&mut buffer).as_bytes());
            }
            _ => return Err(self.syntax()),
        }
        Ok(())
    }

    /// 1 to `count_max` digits in `radix` (`\u` and `\U` take exactly their count, which the
    /// caller's `char::from_u32` and a short count both refuse).
    fn digits(&mut self, radix: u32, count_max: usize) -> Result<u32, UnderreplicatedError> {
        let mut value = 0_u32;
        let mut count = 0;
        while count < count_max {
            let Some(digit) = self
                .peek()
                .and_then(|byte| char::from(byte).to_digit(radix))
            else {
                break;
            };
            value = value * radix + digit;
            count += 1;
            self.offset += 1;
        }
        let exact = radix == 16 && count_max >= 4;
        if count == 0 || (exact && count != count_max) {
            return Err(self.syntax());
        }
        Ok(value)
    }

    /// ctime: an `int64` in decimal, `0x` hex or leading-zero octal, optionally negative.
    /// Its value is not needed (a merge writes the current time), only its validity.
    fn integer(&mut self) -> Result<(), UnderreplicatedError> {
        let start = self.offset;
        let error = UnderreplicatedError::Syntax { offset: start };
        let negative = self.peek() == Some(b'-');
        if negative {
            self.offset += 1;
        }
        let digits_start = self.offset;
        while self
            .peek()
            .is_some_and(|byte| byte.is_ascii_alphanumeric() || byte == b'_')
        {
            self.offset += 1;
        }
        let token =
            std::str::from_utf8(&self.data[digits_start..self.offset]).map_err(|_| error)?;
        let (radix, digits) =
            if let Some(hex) = token.strip_prefix("0x").or(token.strip_prefix("0X")) {
                (16, hex)
            } else if token.len() > 1 && token.starts_with('0') {
                (8, &token[1..])
            } else {
                (10, token)
            };
        // The token holds only ASCII letters, digits and `_`: no sign for `from_str_radix`.
        let magnitude = u64::from_str_radix(digits, radix).map_err(|_| error)?;
        let fits = if negative {
            magnitude <= i64::MIN.unsigned_abs()
        } else {
            i64::try_from(magnitude).is_ok()
        };
        fits.then_some(()).ok_or(error)
    }
}

#[cfg(test)]
mod tests {
    use super::{
        underreplicated_data, underreplicated_parse_replicas, underreplicated_path,
        UnderreplicatedError,
    };

    #[test]
    fn paths_are_bookkeepers() {
        // The example of ZkLedgerUnderreplicationManager's comment, within i64.
        assert_eq!(
            underreplicated_path("/ledgers", 0x0afe_beef_0000_feed),
            format!(
                "/ledgers/underreplication/ledgers/0afe/beef/0000/feed/urL{}",
                0x0afe_beef_0000_feed_i64
            )
        );
        assert_eq!(
            underreplicated_path("/ledgers", 1),
            "/ledgers/underreplication/ledgers/0000/0000/0000/0001/urL0000000001"
        );
        assert_eq!(
            underreplicated_path("/pulsar/ledgers", 5_000_000_000),
            "/pulsar/ledgers/underreplication/ledgers/0000/0001/2a05/f200/urL5000000000"
        );
        assert_eq!(
            underreplicated_path("/", 0),
            "/underreplication/ledgers/0000/0000/0000/0000/urL0000000000"
        );
        // Java's String.format of a negative id: groups of the two's complement, sign first.
        assert_eq!(
            underreplicated_path("/ledgers", -1),
            "/ledgers/underreplication/ledgers/ffff/ffff/ffff/ffff/urL-000000001"
        );
    }

    #[test]
    fn data_is_what_protobuf_java_prints() {
        assert_eq!(
            underreplicated_data(&["10.0.0.1:3181"], 1_700_000_000_000),
            b"replica: \"10.0.0.1:3181\"\nctime: 1700000000000\n"
        );
        assert_eq!(
            underreplicated_data(&["a:1".to_owned(), "b:2".to_owned()], -1),
            b"replica: \"a:1\"\nreplica: \"b:2\"\nctime: -1\n"
        );
        assert_eq!(underreplicated_data::<&str>(&[], 5), b"ctime: 5\n".to_vec());
        // TextFormatEscaper.escapeBytes: C escapes, octal for the rest of non-printables and
        // for each byte of non-ASCII UTF-8.
        assert_eq!(
            underreplicated_data(&["q\"s'b\\n\nt\t\u{1}\u{7f}é"], 0),
            b"replica: \"q\\\"s\\'b\\\\n\\nt\\t\\001\\177\\303\\251\"\nctime: 0\n"
        );
    }

    #[test]
    fn replicas_round_trip() {
        let cases: [&[&str]; 4] = [
            &[],
            &["10.0.0.1:3181"],
            &["10.0.0.1:3181", "bookie-2.example:3181", "10.0.0.1:3181"],
            &["q\"s'b\\n\nt\t\u{1}\u{7f}é", ""],
        ];
        for replicas in cases {
            let data = underreplicated_data(replicas, 1_700_000_000_000);
            assert_eq!(
                underreplicated_parse_replicas(&data),
                Ok(replicas.iter().map(|r| (*r).to_owned()).collect()),
                "{replicas:?}"
            );
        }
    }

    #[test]
    fn parse_reads_what_text_format_merge_accepts() {
        let cases: [(&[u8], &[&str]); 9] = [
            (b"", &[]),
            (b"ctime: 17\n", &[]),
            // Older BookKeeper (before ctime was added): replicas only.
            (b"replica: \"a:1\"\n", &["a:1"]),
            (
                b"# written by hand\nreplica:'a:1' ; replica :\"b:2\",\n",
                &["a:1", "b:2"],
            ),
            (b"ctime: 0x1f replica: \"a\" \"b\" 'c'", &["abc"]),
            (b"replica: [\"a:1\", 'b:2']\nctime: -017\n", &["a:1", "b:2"]),
            (b"replica: []", &[]),
            (
                b"replica: \"\\x41\\101\\u00e9\\U0001F600\"",
                &["AA\u{e9}\u{1f600}"],
            ),
            (b"  \r\n\treplica: \"a\"  # trailing comment", &["a"]),
        ];
        for (data, replicas) in cases {
            assert_eq!(
                underreplicated_parse_replicas(data),
                Ok(replicas.iter().map(|r| (*r).to_owned()).collect()),
                "{:?}",
                String::from_utf8_lossy(data)
            );
        }
    }

    #[test]
    fn parse_refuses_what_text_format_merge_refuses() {
        let syntax = |offset| UnderreplicatedError::Syntax { offset };
        let cases: [(&[u8], UnderreplicatedError); 14] = [
            (
                b"replica: \"a\"\nowner: \"b\"\n",
                UnderreplicatedError::FieldUnknown { offset: 13 },
            ),
            (b"replica \"a\"", syntax(8)),
            (b"replica: a", syntax(9)),
            (b"replica: \"a", syntax(11)),
            (b"replica: \"a\nb\"", syntax(11)),
            (b"replica: \"\\q\"", syntax(12)),
            (b"replica: \"\\u00\"", syntax(14)),
            (b"replica: \"\\400\"", syntax(14)),
            (
                b"replica: \"\\xff\"",
                UnderreplicatedError::Utf8 { offset: 15 },
            ),
            (b"replica: [\"a\" \"b\"", syntax(17)),
            (b"ctime: abc", syntax(7)),
            (b"ctime: 9223372036854775808", syntax(7)),
            (b"ctime: --1", syntax(7)),
            (b"{}", syntax(0)),
        ];
        for (data, error) in cases {
            assert_eq!(
                underreplicated_parse_replicas(data),
                Err(error),
                "{:?}",
                String::from_utf8_lossy(data)
            );
        }
        assert_eq!(
            underreplicated_parse_replicas(b"ctime: -9223372036854775808"),
            Ok(Vec::new())
        );
    }
}
