//! Recovery: torn tails at every cut point, refusal on mid-log corruption, index rebuild.

use super::harness::{add, config_small, drive, read_entry, verify_all, Model};
use crate::error::OpenError;
use crate::journal::Journal;
use crate::{SegmentId, SimDisk};

fn durable(disk: &mut SimDisk) -> Vec<u8> {
    disk.durable_image_mut(SegmentId(0))
        .expect("segment 0")
        .clone()
}

/// Writes `count` entries of `size` in separate commits, fully durable.
fn write_commits(journal: &mut Journal<SimDisk>, model: &mut Model, first: u64, count: u64) {
    for token in first..first + count {
        assert!(add(journal, model, token, 1, token as i64, 300));
        model.apply(&drive(journal));
    }
}

#[test]
fn index_rebuilt_after_crash_equals_index_before() {
    for seed in 0..20 {
        let mut journal = Journal::open(SimDisk::new(seed), config_small()).unwrap();
        let mut model = Model::default();
        for token in 0..200u64 {
            let ledger = (token % 5) as i64;
            if !add(
                &mut journal,
                &mut model,
                token,
                ledger,
                (token / 5) as i64,
                150,
            ) {
                model.apply(&drive(&mut journal));
                assert!(add(
                    &mut journal,
                    &mut model,
                    token,
                    ledger,
                    (token / 5) as i64,
                    150
                ));
            }
            if token % 17 == 0 {
                journal
                    .fence(
                        10_000 + token,
                        crate::LedgerId(100 + token as i64),
                        &[1; 20],
                    )
                    .unwrap();
            }
            journal.submit();
            journal.poll();
            let mut events = Vec::new();
            journal.events_swap(&mut events);
            model.apply(&events);
        }
        model.apply(&drive(&mut journal));
        let before = journal.index().clone();
        let mut journal = Journal::open(journal.into_disk().crash(), config_small()).unwrap();
        // Segments the scan passed through are sealed after open, as they were before.
        drive(&mut journal);
        assert_eq!(journal.index(), &before, "seed {seed}");
        verify_all(&mut journal, &model);
    }
}

#[test]
fn torn_tail_at_every_cut_point_of_the_last_commit() {
    let mut journal = Journal::open(SimDisk::new(1), config_small()).unwrap();
    let mut model = Model::default();
    write_commits(&mut journal, &mut model, 0, 12);
    let mut disk = journal.into_disk().crash();
    let before = durable(&mut disk);
    let mut journal = Journal::open(disk, config_small()).unwrap();
    let mut last = Model::default();
    for token in 100..110u64 {
        assert!(add(
            &mut journal,
            &mut last,
            token,
            2,
            (token - 100) as i64,
            333
        ));
    }
    last.apply(&drive(&mut journal));
    assert_eq!(journal.stats().commits, 1, "the last batch is one commit");
    let mut disk = journal.into_disk().crash();
    let after = durable(&mut disk);
    let start = before.iter().zip(&after).position(|(a, b)| a != b).unwrap();
    let end = after.len()
        - before
            .iter()
            .zip(&after)
            .rev()
            .position(|(a, b)| a != b)
            .unwrap();
    let mut cuts: Vec<usize> = (start..=end).step_by(61).collect();
    cuts.extend((start..=end).step_by(512));
    cuts.push(end);
    for cut in cuts {
        let mut image = before.clone();
        image[start..cut].copy_from_slice(&after[start..cut]);
        let mut torn = SimDisk::new(cut as u64);
        std::mem::swap(&mut torn, &mut disk);
        *torn.durable_image_mut(SegmentId(0)).unwrap() = image;
        torn.reload_live_from_durable();
        let mut journal = Journal::open(torn, config_small())
            .unwrap_or_else(|error| panic!("cut {cut}: a torn tail must open: {error}"));
        verify_all(&mut journal, &model);
        // Entries of the torn commit: a prefix survives intact, nothing else appears.
        let mut present = true;
        for entry in 0..10i64 {
            match read_entry(&mut journal, 2, entry) {
                Ok(body) => {
                    assert!(present, "cut {cut}: entry {entry} after a missing one");
                    assert_eq!(body, last.acked[&(2, entry)]);
                }
                Err(_) => present = false,
            }
        }
        // The journal accepts writes after truncation and they survive another crash.
        let mut again = Model::default();
        assert!(add(&mut journal, &mut again, 500, 3, 0, 100));
        again.apply(&drive(&mut journal));
        let mut journal = Journal::open(journal.into_disk().crash(), config_small()).unwrap();
        verify_all(&mut journal, &model);
        verify_all(&mut journal, &again);
        disk = journal.into_disk().crash();
    }
}

#[test]
fn corruption_inside_acknowledged_data_refuses_to_open() {
    let mut journal = Journal::open(SimDisk::new(2), config_small()).unwrap();
    let mut model = Model::default();
    write_commits(&mut journal, &mut model, 0, 20);
    let mut disk = journal.into_disk().crash();
    // Flip one payload byte of the third commit; 17 valid commits follow it.
    let position = 4096 * 3 + 64 + 40;
    disk.durable_image_mut(SegmentId(0)).unwrap()[position] ^= 0x10;
    disk.reload_live_from_durable();
    match Journal::open(disk, config_small()) {
        Err(OpenError::Corrupt {
            location,
            valid_after,
            ..
        }) => {
            assert_eq!(location.segment, SegmentId(0));
            assert_eq!(location.position.0, 4096 * 3);
            assert!(valid_after.position.0 > location.position.0);
        }
        other => panic!("expected corruption, got {other:?}"),
    }
}

#[test]
fn misdirected_write_is_detected() {
    let mut journal = Journal::open(SimDisk::new(4), config_small()).unwrap();
    let mut model = Model::default();
    write_commits(&mut journal, &mut model, 0, 20);
    let mut disk = journal.into_disk().crash();
    let image = disk.durable_image_mut(SegmentId(0)).unwrap();
    // The sector of commit 8 lands where commit 2 was: internally valid, wrong place.
    let source = image[4096 * 9..4096 * 10].to_vec();
    image[4096 * 3..4096 * 4].copy_from_slice(&source);
    disk.reload_live_from_durable();
    assert!(matches!(
        Journal::open(disk, config_small()),
        Err(OpenError::Corrupt { .. })
    ));
}

/// Found by the recovery_scan fuzzer: a checksummed Entry record with a negative (or absurdly
/// large) entry id used to trip an index assertion (or grow the index without bound).
#[test]
fn checksummed_but_impossible_records_are_bad_records_not_panics() {
    use crate::ids::{EntryId, LedgerId, Location, Position, Sequence};
    use crate::record::{self, RecordHeader, RecordKind};
    for (entry, sequence) in [(-5i64, 1u64), (i64::MAX, 1), (5_000_000, 1), (0, u64::MAX)] {
        let size = 256 * 1024usize;
        let mut image = vec![0u8; size];
        crate::segment::encode_segment_header(
            &mut image[..4096],
            SegmentId(0),
            size as u64,
            false,
            crate::CommitBlock::Sector,
        );
        let payload = [1u8; 40];
        let header = RecordHeader {
            kind: RecordKind::Entry,
            checksum_payload: 0,
            payload_size: payload.len() as u32,
            checksum_previous: 0,
            sequence: Sequence(sequence),
            ledger: LedgerId(3),
            entry: EntryId(entry),
            location: Location {
                segment: SegmentId(0),
                position: Position(4096),
            },
            commit_first: true,
        };
        let record_size = record::record_size(payload.len());
        record::encode(&mut image[4096..4096 + record_size], &header, &payload);
        let mut disk = SimDisk::new(1);
        disk.insert_segment(SegmentId(0), image);
        let journal =
            Journal::open(disk, config_small()).expect("a lone bad record is a torn tail");
        assert!(
            journal.ledger(crate::LedgerId(3)).is_none(),
            "entry {entry} was indexed"
        );
    }
}

/// The default segment size changed (1 GiB to 256 MiB): a journal created with another size
/// refuses to open with the flag that opens it, never guesses or rewrites.
#[test]
fn a_journal_of_another_segment_size_names_the_flag_that_opens_it() {
    let mut journal = Journal::open(SimDisk::new(9), config_small()).unwrap();
    let mut model = Model::default();
    write_commits(&mut journal, &mut model, 0, 3);
    let disk = journal.into_disk().crash();
    let other = crate::Config {
        segment_size: 2 * config_small().segment_size,
        ..config_small()
    };
    let error = match Journal::open(disk, other) {
        Err(error @ OpenError::SegmentSize { .. }) => error.to_string(),
        Err(other) => panic!("expected a segment size refusal, got {other}"),
        Ok(_) => panic!("a journal of another segment size opened"),
    };
    let size = config_small().segment_size;
    assert!(error.contains(&format!("--segment-size {size}")), "{error}");
}
