//! Writes the seed corpora into `fuzz/corpus/<target>/`, built only with the public encoders
//! and a real journal, so every seed starts the fuzzer on a valid input:
//!
//! ```text
//! cd fuzz && cargo +nightly run --example corpus_seed
//! ```
//!
//! Deterministic: the same files come out on every run (SimDisk seeds are fixed), so
//! regenerating after a format change shows up as a reviewable diff. Each target's seeds stay
//! well under 100 KiB: segment images are cut after their last non-zero byte, and
//! `recovery_scan` pads them back to the segment size.

use engine::record::{self, RecordHeader, RecordKind};
use engine::{
    AddOptions, Config, Disk, EntryId, Journal, LedgerId, Location, Position, SegmentId, Sequence,
    SimDisk,
};
use ringlog_fuzz::RECOVERY_SEGMENT_SIZE;
use std::path::Path;
use wire::{code, MasterKey, MASTER_KEY_BENCH_PASSWORD};

const KEY: MasterKey = wire::MASTER_KEY_EMPTY_PASSWORD;
const DRIVE_PASSES_MAX: usize = 100_000;
const SEED_BYTES_MAX_PER_TARGET: usize = 100 * 1024;

/// (file name, contents) of each seed of one target.
type Seeds = Vec<(String, Vec<u8>)>;

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    let images = segment_images();
    let targets: [(&str, Seeds); 5] = [
        ("v2_request", requests()),
        ("v3_request", v3_requests()),
        ("v2_response", responses()),
        ("record_decode", records(&images)),
        ("recovery_scan", [images, recovery_regressions()].concat()),
    ];
    for (target, seeds) in targets {
        write_seeds(&root.join(target), &seeds);
    }
}

fn write_seeds(directory: &Path, seeds: &[(String, Vec<u8>)]) {
    let total: usize = seeds.iter().map(|(_, bytes)| bytes.len()).sum();
    assert!(
        total < SEED_BYTES_MAX_PER_TARGET,
        "{directory:?}: {total} bytes of seeds"
    );
    std::fs::create_dir_all(directory).expect("create the corpus directory");
    for (name, bytes) in seeds {
        std::fs::write(directory.join(name), bytes).expect("write a seed");
    }
    println!(
        "{}: {} seeds, {total} bytes",
        directory.display(),
        seeds.len()
    );
}

fn entry_body(ledger: i64, entry: i64, payload_size: usize) -> Vec<u8> {
    let payload: Vec<u8> = (0..payload_size)
        .map(|index| (index * 7 + 1) as u8)
        .collect();
    let mut body = Vec::new();
    let ledger_length = i64::try_from(payload_size).expect("small") * (entry + 1);
    wire::encode_entry_body_crc32c(&mut body, ledger, entry, entry - 1, ledger_length, &payload);
    body
}

/// One `Request` message (no length prefix) per v3 operation, encoded with prost.
fn v3_requests() -> Seeds {
    use prost::Message;
    use wire::v3::{self, proto, Operation};
    let request = |operation: Operation| proto::Request {
        header: proto::BkPacketHeader {
            version: v3::PROTOCOL_VERSION_THREE,
            operation: operation as i32,
            txn_id: 7,
            priority: Some(1),
        },
        ..Default::default()
    };
    let mut add = request(Operation::AddEntry);
    add.add_request = Some(proto::AddRequest {
        flag: Some(v3::ADD_FLAG_RECOVERY_ADD),
        ledger_id: 3,
        entry_id: 0,
        master_key: KEY.to_vec(),
        body: entry_body(3, 0, 40),
        write_flags: Some(v3::WRITE_FLAG_DEFERRED_SYNC),
    });
    let mut read = request(Operation::ReadEntry);
    read.read_request = Some(proto::ReadRequest {
        flag: Some(v3::READ_FLAG_ENTRY_PIGGYBACK),
        ledger_id: 3,
        entry_id: -1,
        master_key: Some(KEY.to_vec()),
        previous_lac: Some(1),
        time_out: Some(1000),
    });
    read.request_context.push(proto::ContextPair {
        key: "k".into(),
        value: "v".into(),
    });
    let mut write_lac = request(Operation::WriteLac);
    write_lac.write_lac_request = Some(proto::WriteLacRequest {
        ledger_id: 3,
        lac: 2,
        master_key: KEY.to_vec(),
        body: vec![0; 20],
    });
    let mut read_lac = request(Operation::ReadLac);
    read_lac.read_lac_request = Some(proto::ReadLacRequest { ledger_id: 3 });
    let mut force = request(Operation::ForceLedger);
    force.force_ledger_request = Some(proto::ForceLedgerRequest { ledger_id: 3 });
    let mut list = request(Operation::GetListOfEntriesOfLedger);
    list.get_list_of_entries_of_ledger_request =
        Some(proto::GetListOfEntriesOfLedgerRequest { ledger_id: 3 });
    let mut info = request(Operation::GetBookieInfo);
    info.get_bookie_info_request = Some(proto::GetBookieInfoRequest { requested: Some(3) });
    let mut auth = request(Operation::Auth);
    auth.auth_request = Some(proto::AuthMessage {
        auth_plugin_name: "AuthDisabledPlugin".into(),
        payload: Vec::new(),
    });
    let seeds = [
        ("add", add),
        ("read_piggyback_long_poll", read),
        ("write_lac", write_lac),
        ("read_lac", read_lac),
        ("force_ledger", force),
        ("list_of_entries", list),
        ("bookie_info", info),
        ("auth", auth),
        ("range_add_unsupported", request(Operation::RangeAddEntry)),
    ];
    seeds
        .into_iter()
        .map(|(name, message)| (name.to_string(), message.encode_to_vec()))
        .collect()
}

fn requests() -> Seeds {
    let frame = |build: &dyn Fn(&mut Vec<u8>)| {
        let mut out = Vec::new();
        build(&mut out);
        out
    };
    let fencing = wire::FLAG_DO_FENCING;
    let recovery = wire::FLAG_RECOVERY_ADD | wire::FLAG_HIGH_PRIORITY;
    let mut seeds = vec![
        (
            "add".to_string(),
            frame(&|out| {
                wire::client::encode_add_request(out, 0, &KEY, &entry_body(3, 0, 40));
            }),
        ),
        (
            "add_recovery_minimal_body".into(),
            frame(&|out| {
                wire::client::encode_add_request(
                    out,
                    recovery,
                    &MASTER_KEY_BENCH_PASSWORD,
                    &[0; 16],
                );
            }),
        ),
        (
            "read".into(),
            frame(&|out| wire::client::encode_read_request(out, 0, 3, 0, None)),
        ),
        (
            "read_last".into(),
            frame(&|out| wire::client::encode_read_request(out, 0, 3, -1, None)),
        ),
        (
            "read_fencing".into(),
            frame(&|out| {
                wire::client::encode_read_request(out, fencing, 3, 5, Some(&KEY));
            }),
        ),
        (
            "batch_read".into(),
            frame(&|out| {
                wire::client::encode_batch_read_request(out, 0, 3, 0, 42, 10, 1 << 20, None);
            }),
        ),
        (
            "batch_read_fencing".into(),
            frame(&|out| {
                wire::client::encode_batch_read_request(out, fencing, 3, 2, 43, -1, 0, Some(&KEY));
            }),
        ),
        (
            "auth".into(),
            frame(&|out| {
                wire::client::encode_auth_request(out, "AuthDisabledPlugin", b"");
            }),
        ),
    ];
    // Version 0 (legacy): the header word is just the opcode.
    let mut legacy = seeds[2].1.clone();
    legacy[4..8].copy_from_slice(&2u32.to_be_bytes());
    seeds.push(("read_version_0".into(), legacy));
    let stream: Vec<u8> = seeds.iter().flat_map(|(_, bytes)| bytes.clone()).collect();
    seeds.push(("stream_of_every_request".into(), stream));
    seeds
}

fn responses() -> Seeds {
    let version = wire::PROTOCOL_VERSION_CURRENT;
    let body = entry_body(3, 1, 24);
    let mut add = Vec::new();
    wire::encode_add_response(&mut add, version, code::EOK, 3, 1);
    let mut add_fenced = Vec::new();
    wire::encode_add_response(&mut add_fenced, version, code::EFENCED, 3, 2);
    let mut read = Vec::new();
    wire::encode_read_response(&mut read, version, code::EOK, 3, 1, &body);
    let mut read_missing = Vec::new();
    wire::encode_read_response(&mut read_missing, version, code::ENOENTRY, 3, 9, &[]);
    let mut batch = Vec::new();
    let start = wire::encode_batch_read_response_begin(&mut batch, version, code::EOK, 3, 0, 42);
    for entry in 0..3 {
        wire::encode_batch_read_response_push(&mut batch, &entry_body(3, entry, 8));
    }
    wire::encode_batch_read_response_finish(&mut batch, start);
    let mut batch_error = Vec::new();
    let start =
        wire::encode_batch_read_response_begin(&mut batch_error, version, code::EIO, 3, 0, 43);
    wire::encode_batch_read_response_finish(&mut batch_error, start);
    let mut auth = Vec::new();
    wire::encode_auth_response(&mut auth, version);
    let mut seeds = vec![
        ("add".to_string(), add),
        ("add_fenced".into(), add_fenced),
        ("read".into(), read),
        ("read_no_entry".into(), read_missing),
        ("batch_read_three_entries".into(), batch),
        ("batch_read_error".into(), batch_error),
        ("auth".into(), auth),
    ];
    let stream: Vec<u8> = seeds.iter().flat_map(|(_, bytes)| bytes.clone()).collect();
    seeds.push(("stream_of_every_response".into(), stream));
    seeds
}

fn config() -> Config {
    Config {
        segment_size: RECOVERY_SEGMENT_SIZE,
        ..Config::default()
    }
}

/// Submits and polls until nothing is staged or in flight.
fn drive(journal: &mut Journal<SimDisk>) {
    let mut events = Vec::new();
    for _ in 0..DRIVE_PASSES_MAX {
        journal.submit();
        journal.poll();
        journal.events_swap(&mut events);
        events.clear();
        if journal.is_idle() && journal.disk_mut().in_flight() == 0 {
            return;
        }
    }
    panic!("journal did not settle");
}

/// A real journal: three ledgers, one commit per `drive`, every record kind.
fn journal_written(seed: u64, commits: i64) -> Journal<SimDisk> {
    let mut journal = Journal::open(SimDisk::new(seed), config()).expect("open an empty disk");
    let mut token = 0;
    for entry in 0..commits {
        for ledger in 1..=3 {
            let options = AddOptions {
                recovery: false,
                deferred: ledger == 2,
            };
            let body = entry_body(
                ledger,
                entry,
                16 + 8 * usize::try_from(ledger).expect("small"),
            );
            journal
                .add(
                    token,
                    LedgerId(ledger),
                    EntryId(entry),
                    &KEY,
                    &body,
                    options,
                )
                .expect("add");
            token += 1;
        }
        drive(&mut journal);
    }
    journal
        .write_lac(token, LedgerId(1), &KEY, &entry_body(1, commits - 1, 0))
        .expect("lac");
    journal.force(token + 1, LedgerId(3)).expect("force");
    journal.fence(token + 2, LedgerId(2), &KEY).expect("fence");
    drive(&mut journal);
    journal
}

fn durable_image(journal: Journal<SimDisk>) -> Vec<u8> {
    let mut disk = journal.into_disk().crash();
    disk.durable_image_mut(SegmentId(0))
        .expect("segment 0")
        .clone()
}

/// Cuts the zeros after the last non-zero byte: `segment_image` puts them back.
fn trimmed(mut image: Vec<u8>) -> Vec<u8> {
    let end = image
        .iter()
        .rposition(|&byte| byte != 0)
        .map_or(0, |last| last + 1);
    image.truncate(end);
    image
}

fn segment_images() -> Seeds {
    let three_commits = trimmed(durable_image(journal_written(1, 3)));
    // Five commits of adds and one of meta records: enough later commits to prove corruption.
    let many_commits = trimmed(durable_image(journal_written(2, 5)));
    // The last record damaged: a torn tail, truncated at open.
    let mut torn_tail = three_commits.clone();
    let last = torn_tail.len() - 1;
    torn_tail[last - 8] ^= 0x40;
    // An early record damaged with many commits after it: refused as corruption.
    let mut corrupt = many_commits.clone();
    corrupt[4096 + 70] ^= 0x01;
    // Odd first byte: the header is the input's own, here off by one bit.
    let mut bad_header = three_commits.clone();
    bad_header[0] ^= 0x01;
    bad_header.truncate(4096 + 128);
    // Repair mode (first byte divisible by 4): the records after the header, which
    // `segment_image` re-checksums; valid already, so the fuzzer starts from a real journal.
    let mut repair_mode = vec![0u8];
    repair_mode.extend_from_slice(&trimmed(durable_image(journal_written(3, 2)))[4096..]);
    let mut header_only = three_commits.clone();
    header_only.truncate(32);
    vec![
        ("three_commits".to_string(), three_commits),
        ("six_commits".into(), many_commits),
        ("torn_tail".into(), torn_tail),
        ("corrupt_middle".into(), corrupt),
        ("bad_segment_header".into(), bad_header),
        ("empty_journal".into(), header_only),
        ("repair_mode_two_commits".into(), repair_mode),
    ]
}

/// Inputs that once crashed `recovery_scan` (fixed in 5adca00: recovery now applies the id
/// bounds `Journal::add` enforces), in repair mode, so the target gives them valid checksums.
fn recovery_regressions() -> Seeds {
    let entry_record = |sequence: u64, entry: i64| {
        let header = RecordHeader {
            kind: RecordKind::Entry,
            checksum_payload: 0,
            payload_size: 0,
            checksum_previous: 0,
            sequence: Sequence(sequence),
            ledger: LedgerId(1),
            entry: EntryId(entry),
            location: Location {
                segment: SegmentId(0),
                position: Position(0),
            },
            commit_first: true,
        };
        let mut out = vec![0u8; record::record_size(0)];
        record::encode(&mut out, &header, &[]);
        out
    };
    let far = 1 << 40;
    vec![
        // Tripped `assert!(entry.0 >= 0)` in `Ledger::insert`.
        (
            "regression_entry_id_negative".to_string(),
            [vec![0], entry_record(1, -5)].concat(),
        ),
        // Made the index allocate 12 TiB of slots: an entry far below the ledger's first one,
        (
            "regression_entry_id_far_below".into(),
            [vec![0], entry_record(1, far), entry_record(2, 0)].concat(),
        ),
        // and one far beyond its highest.
        (
            "regression_entry_id_far_beyond".into(),
            [vec![0], entry_record(1, 0), entry_record(2, far)].concat(),
        ),
    ]
}

/// Every record of the first segment image, plus hand-built ones of every kind.
fn records(images: &[(String, Vec<u8>)]) -> Seeds {
    let mut seeds = Vec::new();
    let image = &images[0].1;
    let mut position = 4096;
    while position < image.len() {
        match record::decode(&image[position..]) {
            Ok((header, _, payload)) => {
                let size = record::record_size(payload.len());
                let name = format!("journal_{:?}_{position}", header.kind).to_lowercase();
                seeds.push((name, image[position..position + size].to_vec()));
                position += size;
            }
            // Sector padding after a commit: the next commit starts on the next sector.
            Err(_) => position = (position / 4096 + 1) * 4096,
        }
    }
    let kinds = [
        RecordKind::Entry,
        RecordKind::LedgerKey,
        RecordKind::Fence,
        RecordKind::ExplicitLac,
        RecordKind::ForceMarker,
    ];
    for (index, kind) in kinds.into_iter().enumerate() {
        let payload: Vec<u8> = (0..index * 13).map(|byte| byte as u8).collect();
        let header = RecordHeader {
            kind,
            checksum_payload: 0,
            payload_size: u32::try_from(payload.len()).expect("small"),
            checksum_previous: 0x1234_5678,
            sequence: Sequence(9),
            ledger: LedgerId(5),
            entry: EntryId(i64::try_from(index).expect("small")),
            location: Location {
                segment: SegmentId(1),
                position: Position(4096 + 64 * u64::try_from(index).expect("small")),
            },
            commit_first: index % 2 == 0,
        };
        let mut out = vec![0u8; record::record_size(payload.len())];
        record::encode(&mut out, &header, &payload);
        seeds.push((format!("encoded_{kind:?}").to_lowercase(), out));
    }
    seeds
}
