//! The scrubber (`journal/scrub.rs`): damage in sealed segments and index files is found
//! within one cycle, reported once per damaged record or page, never served as data, and the
//! position survives a restart.

use super::harness::{add_all, config_small, drive, read_entry, Model};
use crate::constants::{RECORD_HEADER_SIZE, SECTOR_SIZE, SEGMENT_HEADER_SIZE};
use crate::ids::{FileId, SegmentId};
use crate::journal::{DamageFound, Event, Journal};
use crate::record::{self, RecordKind};
use crate::segment_check::Damage;
use crate::{Config, SimDisk};
use std::collections::BTreeSet;

fn config() -> Config {
    Config {
        // No compaction or sorting: the segments stay as written, so the test knows where
        // its damage is.
        compaction_threshold_minor_per_mille: 0,
        compaction_threshold_major_per_mille: 0,
        sort_sealed: false,
        scrub_seed: 1,
        // A cycle a second, so the rate is the default highest (4 MiB/s).
        scrub_cycle_ms: 1000,
        ..config_small()
    }
}

/// Fills enough entries for several sealed segments.
fn fill(journal: &mut Journal<SimDisk>, model: &mut Model) {
    let order: Vec<(i64, i64)> = (0..4000).map(|i| (i % 3, i / 3)).collect();
    add_all(journal, model, order, 100);
    assert!(
        journal.stats().segments_sealed >= 4,
        "{:?}",
        journal.stats()
    );
}

/// Grants the scrubber credit and drives the journal until `cycles` cycles are complete;
/// returns the damage reported.
fn scrub_cycles(journal: &mut Journal<SimDisk>, cycles: u64) -> Vec<DamageFound> {
    let mut found = Vec::new();
    for _ in 0..1_000_000 {
        if journal.stats().scrub_cycles_completed >= cycles {
            return found;
        }
        // A millisecond's worth at a time: about one read per grant, so the loop stops at
        // the cycle's end and does not go on into the next one.
        journal.scrub_grant(1_000);
        for event in drive(journal) {
            if let Event::Damage(damage) = event {
                found.push(damage);
            }
        }
    }
    panic!("no scrub cycle completed: {:?}", journal.stats());
}

/// The (position, ledger, entry) of the entry records of `image` (a segment file), in order.
fn entry_records(image: &[u8]) -> Vec<(usize, i64, i64, usize)> {
    let mut records = Vec::new();
    let mut position = SEGMENT_HEADER_SIZE;
    while position + RECORD_HEADER_SIZE <= image.len() {
        match record::decode_header(&image[position..]) {
            Ok((header, _)) => {
                let size = record::record_size(header.payload_size as usize);
                if header.kind == RecordKind::Entry {
                    let payload = header.payload_size as usize;
                    records.push((position, header.ledger.0, header.entry.0, payload));
                }
                position += size;
            }
            // Commit padding: the next record starts at the next sector.
            Err(_) => position = (position / SECTOR_SIZE + 1) * SECTOR_SIZE,
        }
    }
    records
}

#[test]
fn the_scrubber_finds_damaged_records_and_index_pages_within_one_cycle_and_nothing_else() {
    let mut journal = Journal::open(SimDisk::new(11), config()).unwrap();
    let mut model = Model::default();
    fill(&mut journal, &mut model);
    // A clean journal: a full cycle finds nothing.
    assert_eq!(scrub_cycles(&mut journal, 1), Vec::new());
    let stats = journal.stats().clone();
    assert!(
        stats.scrub_segments >= 4 && stats.scrub_bytes > 0,
        "{stats:?}"
    );

    let mut disk = journal.into_disk().crash();
    // Segment 1: one payload byte and, further on, one header byte flipped (a failing disk).
    let (payload_hit, header_hit) = {
        let image = disk
            .durable_file_mut(FileId::Segment(SegmentId(1)))
            .unwrap();
        let records = entry_records(image);
        let (position, ledger, entry, _) = records[10];
        image[position + RECORD_HEADER_SIZE + 40] ^= 0x01;
        let (position_header, ledger_header, entry_header, _) = records[30];
        image[position_header + 36] ^= 0x80;
        ((ledger, entry), (ledger_header, entry_header))
    };
    // Segment 2's index: its last slot page.
    {
        let bytes = disk.durable_file_mut(FileId::Index(SegmentId(2))).unwrap();
        let last_page = bytes.len() - SECTOR_SIZE;
        bytes[last_page + 100] ^= 0x04;
    }
    disk.reload_live_from_durable();
    let mut journal = Journal::open(disk, config()).unwrap();
    let cycles = journal.stats().scrub_cycles_completed;
    let found = scrub_cycles(&mut journal, cycles + 1);

    let payload: Vec<_> = found
        .iter()
        .filter(|damage| matches!(damage.damage, Damage::Payload(_)))
        .collect();
    assert_eq!(payload.len(), 1, "{found:?}");
    assert_eq!(payload[0].file, FileId::Segment(SegmentId(1)));
    let (ledger, entry) = payload[0].entry.unwrap();
    assert_eq!((ledger.0, entry.0), payload_hit);
    let header: Vec<_> = found
        .iter()
        .filter(|damage| matches!(damage.damage, Damage::Record(_)))
        .collect();
    assert_eq!(header.len(), 1, "{found:?}");
    assert_eq!(header[0].file, FileId::Segment(SegmentId(1)));
    // Its header cannot say which entry it held: the index does.
    let (ledger, entry) = header[0].entry.unwrap();
    assert_eq!((ledger.0, entry.0), header_hit);
    let pages: Vec<_> = found
        .iter()
        .filter(|damage| matches!(damage.damage, Damage::IndexPage { .. }))
        .collect();
    // The page once, then each entry whose slot it held (for repair).
    let (page, page_entries): (Vec<&DamageFound>, Vec<&DamageFound>) = pages
        .iter()
        .copied()
        .partition(|damage| damage.entry.is_none());
    assert_eq!(page.len(), 1, "{found:?}");
    assert!(!page_entries.is_empty(), "{found:?}");
    assert!(pages
        .iter()
        .all(|damage| damage.file == FileId::Index(SegmentId(2))));
    // Nothing else: the records after the damaged header were found again and checked.
    assert_eq!(found.len(), 2 + pages.len(), "{found:?}");
    let stats = journal.stats();
    assert_eq!(stats.scrub_damage_records, 2);
    assert_eq!(stats.scrub_damage_index, 1);

    // Never served as data: the damaged entries answer an I/O error, the rest read back.
    let damaged: BTreeSet<(i64, i64)> = [payload_hit, header_hit].into_iter().collect();
    for (&(ledger, entry), expected) in &model.acked {
        match read_entry(&mut journal, ledger, entry) {
            Ok(body) => {
                assert!(
                    !damaged.contains(&(ledger, entry)),
                    "{ledger}/{entry} served"
                );
                assert_eq!(&body, expected);
            }
            Err(crate::ReadError::Io) => {}
            Err(other) => panic!("{ledger}/{entry}: {other:?}"),
        }
    }
}

#[test]
fn the_scrub_position_survives_a_restart_and_the_first_cycle_starts_where_the_seed_says() {
    let mut journal = Journal::open(SimDisk::new(12), config()).unwrap();
    let mut model = Model::default();
    fill(&mut journal, &mut model);
    scrub_cycles(&mut journal, 2);
    let position = journal.scrub_state().position;
    assert_eq!(position.cycles_completed, 2);
    // The cycle's end asked for a checkpoint carrying the position.
    drive(&mut journal);
    let disk = journal.into_disk().crash();
    let journal = Journal::open(disk, config()).unwrap();
    assert_eq!(journal.scrub_state().position, position);

    // A journal the scrubber never ran on starts its first cycle at the seed's segment.
    let starts: BTreeSet<SegmentId> = (0..8)
        .map(|seed| {
            let config = Config {
                scrub_seed: seed,
                ..config()
            };
            let mut journal = Journal::open(SimDisk::new(13), config).unwrap();
            fill(&mut journal, &mut Model::default());
            // The checkpoint is checked first; then the first segment is picked.
            while journal.scrub_state().segment_current.is_none() {
                journal.scrub_grant(1_000);
                drive(&mut journal);
            }
            journal.scrub_state().position.cycle_start
        })
        .collect();
    assert!(starts.len() > 1, "every seed started at {starts:?}");
}

#[test]
fn without_credit_or_with_rate_zero_the_scrubber_reads_nothing() {
    let mut journal = Journal::open(SimDisk::new(14), config()).unwrap();
    let mut model = Model::default();
    fill(&mut journal, &mut model);
    drive(&mut journal);
    assert_eq!(journal.stats().scrub_bytes, 0);
    let off = Config {
        scrub_rate_max: 0,
        ..config()
    };
    let mut journal = Journal::open(journal.into_disk().crash(), off).unwrap();
    journal.scrub_grant(10_000_000);
    drive(&mut journal);
    assert_eq!(journal.stats().scrub_bytes, 0);
    assert!(!journal.scrub_state().enabled);
}

/// Seeded damage: one bit flipped, or one sector zeroed, at a random place in the data of a
/// random sealed segment, or in a random slot page of its index (`RINGLOG_SCRUB_SEEDS`,
/// default 40). Every flip is
/// found within one cycle, in the file it hit, and no entry is ever served other than as
/// written: it reads back intact or answers an I/O error.
#[test]
fn every_flipped_byte_in_sealed_data_or_index_pages_is_found_within_one_cycle() {
    let seeds: u64 =
        std::env::var("RINGLOG_SCRUB_SEEDS").map_or(40, |seeds| seeds.parse().unwrap());
    let mut found_in = [0u64; 2];
    for seed in 0..seeds {
        let mut rng = crate::disk::sim::SimRng::new(seed);
        let config = Config {
            scrub_seed: rng.next_u64(),
            ..config()
        };
        let mut journal = Journal::open(SimDisk::new(seed), config.clone()).unwrap();
        let mut model = Model::default();
        let size = crate::stdx::to_usize(rng.below(1500));
        let order: Vec<(i64, i64)> = (0..2000 + rng.below(3000))
            .map(|i| {
                let i = i64::try_from(i).unwrap();
                (i % 3, i / 3)
            })
            .collect();
        add_all(&mut journal, &mut model, order, size);
        let sealed: Vec<SegmentId> = journal.index().sealed_segments().collect();
        assert!(sealed.len() >= 2, "seed {seed}");
        let segment = sealed[crate::stdx::to_usize(rng.below(crate::stdx::to_u64(sealed.len())))];
        let table = journal.index().sealed_segment(segment).unwrap();
        let mut disk = journal.into_disk().crash();
        let in_index = rng.below(3) == 0;
        let file = if in_index {
            FileId::Index(segment)
        } else {
            FileId::Segment(segment)
        };
        let data_end = {
            let index = disk.durable_file_mut(FileId::Index(segment)).unwrap();
            crate::index_file::decode_header(
                &index[..SECTOR_SIZE],
                segment,
                crate::stdx::to_u64(index.len()),
            )
            .unwrap()
            .data_end
        };
        let bytes = disk.durable_file_mut(file).unwrap();
        let (from, to) = if in_index {
            let table_end = crate::stdx::to_usize(table.slot_table_offset);
            (table_end, bytes.len())
        } else {
            (SEGMENT_HEADER_SIZE, crate::stdx::to_usize(data_end))
        };
        let at = from + crate::stdx::to_usize(rng.below(crate::stdx::to_u64(to - from)));
        if rng.below(3) == 0 {
            // A sector the disk lost: zeros (`to` is past `from` by whole sectors for the
            // index; a segment's data ends within its last sector).
            let sector = at / SECTOR_SIZE * SECTOR_SIZE;
            let end = (sector + SECTOR_SIZE).min(bytes.len());
            if bytes[sector..end].iter().all(|&byte| byte == 0) {
                bytes[at] ^= 1;
            } else {
                bytes[sector..end].fill(0);
            }
        } else {
            bytes[at] ^= 1 << rng.below(8);
        }
        disk.reload_live_from_durable();
        let mut journal = Journal::open(disk, config).unwrap();
        let cycles = journal.stats().scrub_cycles_completed + 1;
        let found = scrub_cycles(&mut journal, cycles);
        assert!(
            found.iter().any(|damage| damage.file == file),
            "seed {seed}: byte {at} of {file} flipped, found {found:?}"
        );
        found_in[usize::from(in_index)] += 1;
        let named: BTreeSet<(i64, i64)> = found
            .iter()
            .filter_map(|damage| damage.entry)
            .map(|(ledger, entry)| (ledger.0, entry.0))
            .collect();
        for (&(ledger, entry), expected) in &model.acked {
            match read_entry(&mut journal, ledger, entry) {
                Ok(body) => assert_eq!(&body, expected, "seed {seed}: {ledger}/{entry}"),
                // An entry the damage makes unreadable (its record, or its slot's page) is
                // named, so it can be repaired.
                Err(crate::ReadError::Io) => assert!(
                    named.contains(&(ledger, entry)),
                    "seed {seed}: {ledger}/{entry} unreadable but not named: {found:?}"
                ),
                Err(other) => panic!("seed {seed}: {ledger}/{entry}: {other:?}"),
            }
        }
    }
    assert!(found_in[0] > 0 && found_in[1] > 0, "{found_in:?}");
}

#[test]
fn a_read_that_finds_a_damaged_record_reports_it_for_repair() {
    use crate::journal::{ReadOutcome, ReadTarget};
    let mut journal = Journal::open(SimDisk::new(15), config()).unwrap();
    let mut model = Model::default();
    fill(&mut journal, &mut model);
    let mut disk = journal.into_disk().crash();
    let (ledger, entry) = {
        let image = disk
            .durable_file_mut(FileId::Segment(SegmentId(1)))
            .unwrap();
        let (position, ledger, entry, _) = entry_records(image)[20];
        image[position + RECORD_HEADER_SIZE + 8] ^= 0x40;
        (ledger, entry)
    };
    disk.reload_live_from_durable();
    // No scrubbing: the read finds it.
    let mut journal = Journal::open(disk, config()).unwrap();
    let outcome = journal
        .read(
            7,
            crate::LedgerId(ledger),
            ReadTarget::Entry(crate::EntryId(entry)),
        )
        .unwrap();
    assert!(matches!(outcome, ReadOutcome::Pending));
    let events = drive(&mut journal);
    let damage: Vec<_> = events
        .iter()
        .filter_map(|event| match event {
            Event::Damage(found) => Some(*found),
            _ => None,
        })
        .collect();
    assert_eq!(damage.len(), 1, "{events:?}");
    assert_eq!(damage[0].damage, Damage::FoundByRead);
    assert_eq!(damage[0].file, FileId::Segment(SegmentId(1)));
    let (found_ledger, found_entry) = damage[0].entry.unwrap();
    assert_eq!((found_ledger.0, found_entry.0), (ledger, entry));
    let slot = events
        .iter()
        .find_map(|event| match event {
            Event::ReadDone { slot, .. } => Some(*slot),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        journal.read_result(slot).map(|_| ()),
        Err(crate::ReadError::Io)
    );
    journal.read_release(slot);
}

/// A BookKeeper body with a CRC32C (`crc32c`) or CRC32 digest; `damaged` flips a payload
/// byte after the digest was computed (damage before the bookie).
fn bk_body(ledger: i64, entry: i64, crc32c: bool, damaged: bool) -> Vec<u8> {
    let payload: Vec<u8> = (0..300).map(|i| ((i + entry) % 251) as u8).collect();
    let mut body = Vec::new();
    if crc32c {
        wire::encode_entry_body_crc32c(&mut body, ledger, entry, entry - 1, 0, &payload);
    } else {
        wire::encode_entry_body_crc32(&mut body, ledger, entry, entry - 1, 0, &payload);
    }
    if damaged {
        let last = body.len() - 1;
        body[last] ^= 0x08;
    }
    body
}

/// Adds `count` entries round robin over ledgers 0 (CRC32C), 1 (CRC32) and 2 (bodies that
/// are not BookKeeper entries), entry `bad` of ledgers 0 and 1 damaged before the bookie;
/// returns the `Damage::Digest` findings reported meanwhile.
fn add_digested(journal: &mut Journal<SimDisk>, count: i64, bad: i64) -> Vec<DamageFound> {
    use crate::journal::AddOptions;
    let mut found = Vec::new();
    for i in 0..count {
        let (ledger, entry) = (i % 3, i / 3);
        let body = match ledger {
            0 => bk_body(ledger, entry, true, entry == bad),
            1 => bk_body(ledger, entry, false, entry == bad),
            _ => super::harness::body(ledger, entry, 300),
        };
        let key = &super::harness::KEY;
        let options = AddOptions::default();
        while journal
            .add(
                u64::try_from(i).unwrap(),
                crate::LedgerId(ledger),
                crate::EntryId(entry),
                key,
                &body,
                options,
            )
            .is_err()
        {
            found.extend(digest_damage(&drive(journal)));
        }
        if i % 16 == 0 {
            found.extend(digest_damage(&drive(journal)));
        }
    }
    found.extend(digest_damage(&drive(journal)));
    found
}

fn digest_damage(events: &[Event]) -> Vec<DamageFound> {
    events
        .iter()
        .filter_map(|event| match event {
            Event::Damage(found) if found.damage == Damage::Digest => Some(*found),
            _ => None,
        })
        .collect()
}

fn entries_of(found: &[DamageFound]) -> BTreeSet<(i64, i64)> {
    found
        .iter()
        .filter_map(|damage| damage.entry)
        .map(|(ledger, entry)| (ledger.0, entry.0))
        .collect()
}

#[test]
fn digests_are_learned_and_bodies_damaged_before_the_bookie_are_found_on_add_and_by_the_scrub() {
    use crate::digest::DigestKind;
    let bad = 100;
    let expected: BTreeSet<(i64, i64)> = [(0, bad), (1, bad)].into_iter().collect();
    // On add.
    let checked = Config {
        verify_digest_on_add: true,
        ..config()
    };
    let mut journal = Journal::open(SimDisk::new(16), checked).unwrap();
    let found = add_digested(&mut journal, 4000, bad);
    assert_eq!(entries_of(&found), expected, "{found:?}");
    assert_eq!(journal.stats().digest_mismatches_on_add, 2);
    let kinds: Vec<DigestKind> = (0..3)
        .map(|ledger| journal.ledger(crate::LedgerId(ledger)).unwrap().digest)
        .collect();
    assert_eq!(
        kinds,
        [
            DigestKind::Crc32c,
            DigestKind::Crc32,
            DigestKind::Unverifiable
        ]
    );
    // The types survive a restart (the checkpoint), and the scrubber finds the same two.
    let mut journal = Journal::open(journal.into_disk().crash(), config()).unwrap();
    assert_eq!(
        journal.ledger(crate::LedgerId(0)).unwrap().digest,
        DigestKind::Crc32c
    );
    let cycles = journal.stats().scrub_cycles_completed + 1;
    let found = scrub_cycles(&mut journal, cycles);
    let digests: Vec<DamageFound> = found
        .iter()
        .copied()
        .filter(|damage| damage.damage == Damage::Digest)
        .collect();
    assert_eq!(entries_of(&digests), expected, "{found:?}");
    assert_eq!(found.len(), 2, "nothing else: {found:?}");

    // Without the check on add, nothing is reported on add, and the scrubber learns the
    // types itself and finds them.
    let mut journal = Journal::open(SimDisk::new(17), config()).unwrap();
    assert!(add_digested(&mut journal, 4000, bad).is_empty());
    assert_eq!(journal.stats().digest_mismatches_on_add, 0);
    let found = scrub_cycles(&mut journal, 1);
    assert_eq!(entries_of(&found), expected, "{found:?}");
    assert_eq!(journal.stats().scrub_damage_digests, 2);
}

#[test]
fn damaged_entries_are_kept_in_the_checkpoint_until_repaired() {
    use crate::checkpoint::{decode_damaged, encode_damaged, DAMAGED_MAX};
    let (ledger, entry) = (crate::LedgerId(1), crate::EntryId(40));
    let mut journal = Journal::open(SimDisk::new(18), config()).unwrap();
    fill(&mut journal, &mut Model::default());
    assert!(journal.damaged_record(ledger, entry));
    assert!(!journal.damaged_record(ledger, entry), "recorded once");
    drive(&mut journal);
    let mut journal = Journal::open(journal.into_disk().crash(), config()).unwrap();
    assert_eq!(journal.damaged(), vec![(ledger, entry)]);
    journal.damaged_repaired(ledger, entry);
    drive(&mut journal);
    let mut journal = Journal::open(journal.into_disk().crash(), config()).unwrap();
    assert!(journal.damaged().is_empty());
    // A deleted ledger's damage is forgotten with it.
    assert!(journal.damaged_record(ledger, entry));
    assert!(journal.delete_ledger(ledger));
    assert!(journal.damaged().is_empty());

    // The header's list: round trip, the bound, and damage refused.
    let listed: Vec<_> = (0..DAMAGED_MAX)
        .map(|i| (crate::LedgerId(i as i64), crate::EntryId(-(i as i64))))
        .collect();
    let mut sector = vec![0u8; SECTOR_SIZE];
    crate::checkpoint::encode_header(&mut sector, &checkpoint_header());
    encode_damaged(&mut sector, &listed);
    assert_eq!(decode_damaged(&sector).unwrap(), listed);
    assert!(crate::checkpoint::decode_header(&sector, crate::checkpoint::file_size(0, 0)).is_ok());
    let last = 84 + 16 * DAMAGED_MAX - 1;
    sector[last] ^= 1;
    assert!(decode_damaged(&sector).is_err());
}

fn checkpoint_header() -> crate::checkpoint::CheckpointHeader {
    crate::checkpoint::CheckpointHeader {
        resume_segment: SegmentId(3),
        checksum_previous: 7,
        sequence_next: crate::Sequence(9),
        ledger_count: 0,
        checksum_ledgers: crc32c::crc32c(&[]),
        generation: 2,
        tombstone_count: 0,
        checksum_tombstones: crc32c::crc32c(&[]),
        scrub: None,
    }
}

#[test]
fn a_damaged_checkpoint_is_found_and_written_again_from_memory() {
    let mut journal = Journal::open(SimDisk::new(19), config()).unwrap();
    fill(&mut journal, &mut Model::default());
    // A clean check (the one due after open) and cycle find nothing.
    assert_eq!(scrub_cycles(&mut journal, 1), Vec::new());
    // A bit of the ledger table flips at rest.
    {
        let disk = journal.disk_mut();
        let bytes = disk.durable_file_mut(FileId::Checkpoint).unwrap();
        bytes[SECTOR_SIZE + 30] ^= 0x02;
        disk.reload_live_from_durable();
    }
    let written = journal.stats().checkpoints_written;
    let found = scrub_cycles(&mut journal, 2);
    let checkpoint: Vec<_> = found
        .iter()
        .filter(|damage| damage.file == FileId::Checkpoint)
        .collect();
    assert_eq!(checkpoint.len(), 1, "{found:?}");
    assert!(matches!(checkpoint[0].damage, Damage::Checkpoint(_)));
    drive(&mut journal);
    assert!(journal.stats().checkpoints_written > written);
    // The new one is sound: a restart uses it.
    let journal = Journal::open(journal.into_disk().crash(), config()).unwrap();
    assert!(journal.open_report().checkpoint.is_some());
}
