//! The verify log `writes` leaves for `reads`: one line per acked entry, and the deterministic
//! payload both sides regenerate from (ledger, entry) so no payload has to be stored.
//!
//! Line format (ASCII, one space between fields, `\n` at the end):
//! `ledger_id entry_id payload_crc32c payload_len`, ids in decimal, the CRC-32C of the payload
//! (not of the body) as 8 lowercase hex digits, the payload length in decimal bytes.
//! Lines starting with `#` are comments. Only acked entries are written, so every line is a
//! promise the bookie made.

use std::fs::File;
use std::io::Write as _;
use std::path::Path;
use std::sync::Mutex;

/// One line of the log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoggedEntry {
    pub ledger_id: i64,
    pub entry_id: i64,
    pub payload_crc32c: u32,
    pub payload_len: u32,
}

/// The log file, shared by the writer threads. Each thread gathers whole lines in its own
/// `LogBuffer` and appends them under the lock, so lines of two threads never interleave.
pub struct LogFile {
    file: Mutex<File>,
}

/// One thread's buffered lines; flushed when full, every second and at the end of a run, so a
/// run that dies (server killed, connection lost) still leaves every line acked a second ago.
pub struct LogBuffer {
    lines: Vec<u8>,
}

/// Buffered bytes that trigger a flush: about 1000 lines, one write(2) per flush.
const LOG_BUFFER_SIZE_FLUSH: usize = 64 * 1024;

/// The comment written at the top of a new log, for humans who open it.
const LOG_HEADER: &str =
    "# ringlog-bench verify log: ledger_id entry_id payload_crc32c payload_len\n";

impl LogFile {
    /// Opens `path` for appending, creating it with a header comment if it does not exist, so
    /// several runs can share one log.
    pub fn open_append(path: &Path) -> Result<LogFile, String> {
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|error| format!("opening verify log {}: {error}", path.display()))?;
        let length = file
            .metadata()
            .map_err(|error| format!("{}: {error}", path.display()))?;
        if length.len() == 0 {
            file.write_all(LOG_HEADER.as_bytes())
                .map_err(|error| format!("writing verify log {}: {error}", path.display()))?;
        }
        Ok(LogFile {
            file: Mutex::new(file),
        })
    }

    /// Appends whole lines in one write.
    fn append(&self, lines: &[u8]) -> Result<(), String> {
        assert!(
            lines.is_empty() || lines.ends_with(b"\n"),
            "only whole lines are appended"
        );
        let mut file = self
            .file
            .lock()
            .map_err(|_| "verify log lock poisoned".to_string())?;
        file.write_all(lines)
            .map_err(|error| format!("writing verify log: {error}"))
    }
}

impl LogBuffer {
    pub fn new() -> LogBuffer {
        LogBuffer {
            lines: Vec::with_capacity(LOG_BUFFER_SIZE_FLUSH + 128),
        }
    }

    /// Adds one line; writes the buffer out once it is full.
    pub fn push(&mut self, file: &LogFile, entry: &LoggedEntry) -> Result<(), String> {
        format_line(&mut self.lines, entry);
        if self.lines.len() >= LOG_BUFFER_SIZE_FLUSH {
            self.flush(file)?;
        }
        Ok(())
    }

    /// Writes out every buffered line.
    pub fn flush(&mut self, file: &LogFile) -> Result<(), String> {
        if self.lines.is_empty() {
            return Ok(());
        }
        let result = file.append(&self.lines);
        self.lines.clear();
        result
    }
}

/// Appends the line for `entry`, newline included.
pub fn format_line(out: &mut Vec<u8>, entry: &LoggedEntry) {
    // Writing into a Vec cannot fail.
    let _ = writeln!(
        out,
        "{} {} {:08x} {}",
        entry.ledger_id, entry.entry_id, entry.payload_crc32c, entry.payload_len
    );
}

/// Parses one line (without its newline); `line_number` counts from 1 and names the line in
/// the error.
pub fn parse_line(line: &str, line_number: usize) -> Result<LoggedEntry, String> {
    let fields: Vec<&str> = line.split(' ').collect();
    let bad = |what: &str| format!("verify log line {line_number}: {what}: {line:?}");
    if fields.len() != 4 {
        return Err(bad(
            "expected 4 fields `ledger_id entry_id payload_crc32c payload_len`",
        ));
    }
    let ledger_id = fields[0].parse::<i64>().map_err(|_| bad("bad ledger_id"))?;
    let entry_id = fields[1].parse::<i64>().map_err(|_| bad("bad entry_id"))?;
    if fields[2].len() != 8 {
        return Err(bad("payload_crc32c must be 8 hex digits"));
    }
    let payload_crc32c =
        u32::from_str_radix(fields[2], 16).map_err(|_| bad("bad payload_crc32c"))?;
    let payload_len = fields[3]
        .parse::<u32>()
        .map_err(|_| bad("bad payload_len"))?;
    if ledger_id < 0 || entry_id < 0 {
        return Err(bad("ids must not be negative"));
    }
    Ok(LoggedEntry {
        ledger_id,
        entry_id,
        payload_crc32c,
        payload_len,
    })
}

/// What `read_log` found.
pub struct LogContents {
    pub entries: Vec<LoggedEntry>,
    /// A last line without its newline: torn by a writer killed mid-write, so it is skipped
    /// rather than trusted (a cut-off number would still parse).
    pub torn_tail: Option<String>,
}

/// Reads a whole log. A parse error names the line; a torn last line is reported, not parsed.
pub fn read_log(path: &Path) -> Result<LogContents, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|error| format!("reading verify log {}: {error}", path.display()))?;
    let mut entries = Vec::new();
    let mut torn_tail = None;
    let mut rest = text.as_str();
    let mut line_number = 0;
    while !rest.is_empty() {
        line_number += 1;
        let Some(end) = rest.find('\n') else {
            torn_tail = Some(format!("line {line_number}: {rest:?}"));
            break;
        };
        let line = &rest[..end];
        rest = &rest[end + 1..];
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        entries.push(parse_line(line, line_number)?);
    }
    Ok(LogContents { entries, torn_tail })
}

/// Fills `out` with the payload of (ledger, entry): xorshift64 seeded from both ids through
/// splitmix64, so neighbouring entries differ in every word and `reads` can check each byte.
pub fn payload_fill(ledger_id: i64, entry_id: i64, out: &mut [u8]) {
    PayloadGenerator::new(ledger_id, entry_id).fill(out);
}

/// True when `payload` is exactly what `payload_fill` generates; compares a stack chunk at a
/// time, so checking a 5 MiB entry needs no scratch buffer.
pub fn payload_matches(ledger_id: i64, entry_id: i64, payload: &[u8]) -> bool {
    let mut expected = [0u8; 256];
    let mut generator = PayloadGenerator::new(ledger_id, entry_id);
    payload.chunks(expected.len()).all(|chunk| {
        generator.fill(&mut expected[..chunk.len()]);
        expected[..chunk.len()] == *chunk
    })
}

/// The payload stream of one entry, produced in pieces.
struct PayloadGenerator {
    state: u64,
}

impl PayloadGenerator {
    fn new(ledger_id: i64, entry_id: i64) -> PayloadGenerator {
        // The casts keep the bit pattern: only the mixing matters.
        let state = splitmix64(splitmix64(ledger_id as u64) ^ entry_id as u64);
        // Zero is xorshift's only fixed point.
        PayloadGenerator {
            state: if state == 0 {
                0x9E37_79B9_7F4A_7C15
            } else {
                state
            },
        }
    }

    /// The next `out.len()` bytes; every call but the last must ask for a multiple of 8, so
    /// the pieces concatenate to the same stream as one call.
    fn fill(&mut self, out: &mut [u8]) {
        for chunk in out.chunks_mut(8) {
            self.state ^= self.state << 13;
            self.state ^= self.state >> 7;
            self.state ^= self.state << 17;
            chunk.copy_from_slice(&self.state.to_le_bytes()[..chunk.len()]);
        }
    }
}

fn splitmix64(value: u64) -> u64 {
    let mut z = value.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests;
