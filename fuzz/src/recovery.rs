//! `recovery_scan`: `Journal::open` on arbitrary contents of journal segment 0.
//!
//! Properties: open returns `Ok` or `Err`, never panics and never loops; after a successful
//! open every indexed entry of every ledger (and each ledger's `ReadTarget::Last`) reads back
//! as `Ok` or `ReadError::Io` (ARCHITECTURE.md: "an indexed entry that cannot be read back is
//! `ReadError::Io`, never `NoEntry`"). `recovery_reopen` adds idempotence, off the fuzzing path.

use engine::constants::{
    RECORD_ALIGNMENT, RECORD_HEADER_SIZE, RECORD_PAYLOAD_SIZE_MAX, SEGMENT_HEADER_SIZE,
};
use engine::record::{self, RecordHeader, RecordKind};
use engine::segment::{encode_segment_header, CommitBlock};
use engine::{
    Config, EntryId, Event, Journal, LedgerId, Location, Position, ReadError, ReadOutcome,
    ReadTarget, SegmentId, Sequence, SimDisk,
};

/// Segment size of the fuzzed journal: 256 KiB keeps one execution in the milliseconds.
pub const RECOVERY_SEGMENT_SIZE: u64 = 256 * 1024;
/// A read takes one poll, two with its retry; anything near this bound is a hang.
const READ_POLLS_MAX: usize = 1_000;
const READ_TOKEN: u64 = 7;

/// The segment image `recovery_scan` opens for `data`. The first input byte chooses how much
/// of it is made valid, so that most executions get past checks a random mutation cannot pass:
///
/// - odd: the input is the segment, padded with zeros or truncated to the segment size;
/// - even: the same, but the first sector is replaced by a valid header for segment 0 (the
///   input's first 4 KiB then only choose this);
/// - divisible by 4 (repair mode): the rest of the input is the segment after its (valid)
///   header, and every record found in it (magic `RLGR`, a known kind, a payload that fits)
///   gets both checksums recomputed, its identity set to where it lies and its hash-chain link
///   set to the record before it. Sequence, ids, flags and sizes stay the input's: the fuzzer
///   can change the fields recovery trusts once the checksums match;
/// - with bit 2 set, the valid header has flag bit 1 (commits padded to 512 bytes), so the
///   scan runs by 512-byte blocks instead of sectors.
#[must_use]
pub fn segment_image(data: &[u8]) -> Vec<u8> {
    let size = usize::try_from(RECOVERY_SEGMENT_SIZE).expect("small");
    let mut bytes = vec![0u8; size];
    let mode = data.first().copied().unwrap_or(1);
    let (start, input) = if mode & 0b11 == 0 {
        (SEGMENT_HEADER_SIZE, &data[1..])
    } else {
        (0, data)
    };
    let kept = input.len().min(size - start);
    bytes[start..start + kept].copy_from_slice(&input[..kept]);
    if mode & 0b01 == 0 {
        let sector = &mut bytes[..SEGMENT_HEADER_SIZE];
        let block = if mode & 0b100 == 0 {
            CommitBlock::Sector
        } else {
            CommitBlock::Small
        };
        encode_segment_header(sector, SegmentId(0), RECOVERY_SEGMENT_SIZE, false, block);
    }
    if mode & 0b11 == 0 {
        records_repair(&mut bytes, start + kept);
    }
    bytes
}

/// Re-encodes every record found at 8-byte steps after the segment header, up to `scan_end`
/// (past the input everything is zero); see `segment_image`. Field offsets are the record
/// layout of `engine::record`.
fn records_repair(image: &mut [u8], scan_end: usize) {
    let mut position = SEGMENT_HEADER_SIZE;
    let mut checksum_previous = 0;
    while position + RECORD_HEADER_SIZE <= scan_end {
        let Some(header) = record_header_raw(&image[position..position + RECORD_HEADER_SIZE])
        else {
            position += RECORD_ALIGNMENT;
            continue;
        };
        let payload_size = header.payload_size as usize;
        let size = record::record_size(payload_size);
        if position + size > image.len() {
            position += RECORD_ALIGNMENT;
            continue;
        }
        let payload_start = position + RECORD_HEADER_SIZE;
        let payload = image[payload_start..payload_start + payload_size].to_vec();
        let location = Location {
            segment: SegmentId(0),
            position: Position(u64::try_from(position).expect("small")),
        };
        let header = RecordHeader {
            checksum_previous,
            location,
            ..header
        };
        let out = &mut image[position..position + size];
        checksum_previous = record::encode(out, &header, &payload);
        position += size;
    }
}

/// The header fields as the bytes say, checksums unchecked; `None` unless magic, kind and
/// payload size make a record `encode` can write.
fn record_header_raw(head: &[u8]) -> Option<RecordHeader> {
    let u32_at =
        |offset: usize| u32::from_le_bytes(head[offset..offset + 4].try_into().expect("4 bytes"));
    let u64_at =
        |offset: usize| u64::from_le_bytes(head[offset..offset + 8].try_into().expect("8 bytes"));
    if u32_at(0) != record::RECORD_MAGIC {
        return None;
    }
    let kind = match head[5] {
        1 => RecordKind::Entry,
        2 => RecordKind::LedgerKey,
        3 => RecordKind::Fence,
        4 => RecordKind::ExplicitLac,
        5 => RecordKind::ForceMarker,
        _ => return None,
    };
    let payload_size = u32_at(16);
    if payload_size as usize > RECORD_PAYLOAD_SIZE_MAX {
        return None;
    }
    let signed = |value: u64| i64::from_le_bytes(value.to_le_bytes());
    Some(RecordHeader {
        kind,
        checksum_payload: 0,
        payload_size,
        checksum_previous: 0,
        sequence: Sequence(u64_at(24)),
        ledger: LedgerId(signed(u64_at(32))),
        entry: EntryId(signed(u64_at(40))),
        location: Location {
            segment: SegmentId(u32_at(48)),
            position: Position(u64_at(56)),
        },
        commit_first: head[6] & 1 == 1,
    })
}

/// The journal configuration: the fewest buffers the engine accepts (2 x 8 MiB commit buffers
/// and one 5 MiB read buffer, instead of ~100 MiB), since every execution allocates them.
fn config() -> Config {
    Config {
        segment_size: RECOVERY_SEGMENT_SIZE,
        commits_in_flight_max: 1,
        read_cache_buffers: 0,
        reads_in_flight_max: 1,
        ..Config::default()
    }
}

/// Target `recovery_scan`.
pub fn recovery_scan(data: &[u8]) {
    // Any error is a fine answer to arbitrary bytes; only a panic or a hang is a bug.
    if let Ok(mut journal) = Journal::open(disk_with_segment(data), config()) {
        read_everything(&mut journal);
    }
}

/// Recovery is idempotent: when an open zeroed a torn tail, opening the disk again after a
/// crash succeeds and rebuilds the same index. Not part of `recovery_scan`, whose inputs are
/// mostly torn tails: the second scan (of two segments by then) would more than double the
/// cost of an execution. `tests/corpus_replay.rs` checks it on every corpus file instead.
pub fn recovery_reopen(data: &[u8]) {
    let Ok(mut journal) = Journal::open(disk_with_segment(data), config()) else {
        return;
    };
    read_everything(&mut journal);
    if journal.stats().torn_tail_truncations == 0 {
        return;
    }
    let index = journal.index().clone();
    let disk = journal.into_disk().crash();
    match Journal::open(disk, config()) {
        Ok(journal) => assert_eq!(journal.index(), &index, "reopen rebuilt another index"),
        Err(error) => panic!("a journal that opened does not open again: {error}"),
    }
}

fn disk_with_segment(data: &[u8]) -> SimDisk {
    let mut disk = SimDisk::new(0);
    disk.insert_segment(SegmentId(0), segment_image(data));
    disk
}

/// Reads every indexed entry of every ledger, then each ledger's last entry and its explicit-LAC
/// body if it has one.
fn read_everything(journal: &mut Journal<SimDisk>) {
    let mut ledgers: Vec<LedgerId> = journal.index().ledgers().collect();
    ledgers.sort_unstable();
    for ledger in ledgers {
        let state = journal.ledger(ledger).expect("listed by the index");
        let entries: Vec<EntryId> = state.entries_known();
        let explicit_lac = state.explicit_lac.is_some();
        for &entry in &entries {
            read_check(journal, ledger, ReadTarget::Entry(entry));
        }
        if !entries.is_empty() {
            read_check(journal, ledger, ReadTarget::Last);
        }
        if explicit_lac {
            read_check(journal, ledger, ReadTarget::ExplicitLac);
        }
    }
}

fn read_check(journal: &mut Journal<SimDisk>, ledger: LedgerId, target: ReadTarget) {
    let expected = match target {
        ReadTarget::Entry(entry) => entry,
        ReadTarget::Last => EntryId(journal.ledger(ledger).expect("indexed").entry_last),
        ReadTarget::ExplicitLac => engine::journal::ENTRY_ID_EXPLICIT_LAC,
    };
    match journal.read(READ_TOKEN, ledger, target) {
        Ok(ReadOutcome::Ready { entry, .. }) => {
            assert_eq!(entry, expected);
            return;
        }
        Ok(ReadOutcome::Pending) => {}
        Err(ReadError::Io) => return,
        Err(error) => panic!("read of indexed {ledger:?} {target:?} failed: {error:?}"),
    }
    let mut events = Vec::new();
    for _ in 0..READ_POLLS_MAX {
        journal.submit();
        journal.poll();
        journal.events_swap(&mut events);
        let mut done = None;
        for event in events.drain(..) {
            match event {
                Event::ReadDone { token, slot } => {
                    assert_eq!(token, READ_TOKEN);
                    assert!(done.is_none(), "two ReadDone for one read");
                    done = Some(slot);
                }
                other => panic!("a journal without adds reported {other:?}"),
            }
        }
        let Some(slot) = done else { continue };
        match journal.read_result(slot) {
            Ok((entry, _body)) => assert_eq!(entry, expected),
            Err(ReadError::Io) => {}
            Err(error) => panic!("disk read of indexed {ledger:?} {target:?}: {error:?}"),
        }
        journal.read_release(slot);
        return;
    }
    panic!("read of {ledger:?} {target:?} not done after {READ_POLLS_MAX} polls");
}
