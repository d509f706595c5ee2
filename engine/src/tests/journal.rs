//! Group commit, ordering, poisoning, ledger semantics and reads on the simulated disk.

use super::harness::{add, body, config_small, drive, read_entry, verify_all, Model, KEY};
use crate::journal::{AddOptions, Event, Journal};
use crate::{AddError, CommitStage, Config, EntryId, LedgerId, ReadError, SimDisk, SyncMode};

#[test]
fn acks_arrive_in_journal_order_despite_out_of_order_completions() {
    for seed in 0..50 {
        let mut journal = Journal::open(SimDisk::new(seed), config_small()).unwrap();
        let mut model = Model::default();
        let mut order = Vec::new();
        let mut token = 0;
        for round in 0..40 {
            for _ in 0..(round % 7 + 1) {
                if add(&mut journal, &mut model, token, 1, token as i64, 200) {
                    token += 1;
                }
            }
            journal.submit();
            journal.poll();
            let mut events = Vec::new();
            journal.events_swap(&mut events);
            model.apply(&events);
            order.extend(events.iter().map(|event| match event {
                Event::Durable { token } => *token,
                other => panic!("unexpected {other:?}"),
            }));
        }
        let events = drive(&mut journal);
        model.apply(&events);
        order.extend(events.iter().map(|event| match event {
            Event::Durable { token } => *token,
            other => panic!("unexpected {other:?}"),
        }));
        let expected: Vec<u64> = (0..token).collect();
        assert_eq!(order, expected, "seed {seed}: acks out of journal order");
        assert!(
            journal.stats().commits < token,
            "seed {seed}: no batching happened"
        );
        verify_all(&mut journal, &model);
    }
}

#[test]
fn a_commit_is_never_durable_before_an_earlier_one() {
    // With several commits in flight, a later commit's sync may finish first; its records must
    // still wait for every earlier commit.
    let config = Config {
        commits_in_flight_max: 4,
        ..config_small()
    };
    for seed in 0..100 {
        let mut journal = Journal::open(SimDisk::new(seed), config.clone()).unwrap();
        let mut model = Model::default();
        for token in 0..4u64 {
            assert!(add(&mut journal, &mut model, token, 1, token as i64, 10));
            journal.submit();
        }
        let mut last = None;
        for event in drive(&mut journal) {
            let Event::Durable { token } = event else {
                panic!("{event:?}")
            };
            assert!(last.is_none_or(|last| token == last + 1), "seed {seed}");
            last = Some(token);
        }
        assert_eq!(last, Some(3));
    }
}

#[test]
fn a_small_batch_waits_for_the_commit_in_flight_and_a_large_one_goes_beside_it() {
    let overlap = 8192;
    let config = Config {
        commits_in_flight_max: 2,
        commit_overlap_bytes_min: overlap,
        ..config_small()
    };
    for seed in 0..20 {
        let mut journal = Journal::open(SimDisk::new(seed), config.clone()).unwrap();
        let mut model = Model::default();
        model.apply(&drive(&mut journal));
        let commits = |journal: &Journal<SimDisk>| journal.stats().commits;
        let before = commits(&journal);
        assert!(add(&mut journal, &mut model, 0, 1, 0, 100));
        journal.submit();
        assert_eq!(
            commits(&journal),
            before + 1,
            "nothing in flight: it goes at once"
        );
        // Under the minimum, with a commit in flight: it stages, however often submit runs.
        let mut token = 1;
        while journal.staged_bytes() + 200 < overlap {
            assert!(add(&mut journal, &mut model, token, 1, token as i64, 100));
            token += 1;
            journal.submit();
            assert_eq!(commits(&journal), before + 1, "seed {seed}: {token} adds");
        }
        // Past it, the batch goes beside the first commit.
        while journal.staged_bytes() < overlap {
            assert!(add(&mut journal, &mut model, token, 1, token as i64, 100));
            token += 1;
        }
        journal.submit();
        assert_eq!(commits(&journal), before + 2, "seed {seed}");
        assert!(journal.commit_oldest_in_flight().is_some());
        // A small batch after them waits for both, and goes once they complete.
        assert!(add(&mut journal, &mut model, token, 1, token as i64, 100));
        journal.submit();
        assert_eq!(commits(&journal), before + 2, "seed {seed}");
        model.apply(&drive(&mut journal));
        assert_eq!(commits(&journal), before + 3, "seed {seed}");
        assert_eq!(model.acked.len() as u64, token + 1);
        verify_all(&mut journal, &model);
    }
}

fn poison_case(seed: u64, write_error: bool) {
    let mut journal = Journal::open(SimDisk::new(seed), config_small()).unwrap();
    let mut model = Model::default();
    for token in 0..20u64 {
        assert!(add(&mut journal, &mut model, token, 1, token as i64, 100));
    }
    model.apply(&drive(&mut journal));
    assert_eq!(model.acked.len(), 20);
    let faults = &mut journal.disk_mut().faults;
    if write_error {
        faults.write_error_ppm = 1_000_000;
    } else {
        faults.sync_error_ppm = 1_000_000;
    }
    for token in 20..40u64 {
        assert!(add(&mut journal, &mut model, token, 1, token as i64, 100));
        journal.submit();
    }
    model.apply(&drive(&mut journal));
    assert!(journal.is_poisoned());
    assert_eq!(
        model.acked.len(),
        20,
        "nothing may be acked after a failed write or sync"
    );
    assert_eq!(model.failed, 20);
    let data = body(1, 99, 10);
    let result = journal.add(
        99,
        LedgerId(1),
        EntryId(99),
        &KEY,
        &data,
        AddOptions::default(),
    );
    assert_eq!(result, Err(AddError::Poisoned));
    // Durable data stays readable after the poison.
    journal.disk_mut().faults = Default::default();
    verify_all(&mut journal, &model);
}

#[test]
fn write_failure_poisons() {
    for seed in 0..20 {
        poison_case(seed, true);
    }
}

#[test]
fn fsync_failure_poisons() {
    for seed in 0..20 {
        poison_case(seed, false);
    }
}

#[test]
fn short_write_poisons() {
    let mut journal = Journal::open(SimDisk::new(3), config_small()).unwrap();
    let mut model = Model::default();
    journal.disk_mut().faults.write_short_ppm = 1_000_000;
    for token in 0..30u64 {
        assert!(add(&mut journal, &mut model, token, 1, token as i64, 600));
    }
    model.apply(&drive(&mut journal));
    assert!(journal.is_poisoned());
    assert!(model.acked.is_empty());
}

#[test]
fn dsync_mode_acks_after_the_single_write() {
    let config = Config {
        sync_mode: SyncMode::Dsync,
        ..config_small()
    };
    let mut journal = Journal::open(SimDisk::new(1), config).unwrap();
    let mut model = Model::default();
    for token in 0..50u64 {
        assert!(add(&mut journal, &mut model, token, 2, token as i64, 50));
    }
    model.apply(&drive(&mut journal));
    assert_eq!(model.acked.len(), 50);
    let disk = journal.into_disk().crash();
    let mut journal = Journal::open(disk, config_small()).unwrap();
    verify_all(&mut journal, &model);
}

#[test]
fn dsync_mode_sends_commits_with_deferred_records_as_write_and_linked_sync() {
    let config = Config {
        sync_mode: SyncMode::Dsync,
        zero_ahead: false,
        ..config_small()
    };
    let mut journal = Journal::open(SimDisk::new(3), config).unwrap();
    let mut model = Model::default();
    assert!(add(&mut journal, &mut model, 0, 4, 0, 40));
    model.apply(&drive(&mut journal));
    let data = body(4, 1, 40);
    let options = AddOptions::default();
    journal
        .add(1, LedgerId(4), EntryId(1), &KEY, &data, options)
        .unwrap();
    journal.submit();
    assert_eq!(
        journal.disk_mut().pending_count(),
        1,
        "a sync-only commit is one RWF_DSYNC write"
    );
    drive(&mut journal);
    let deferred = AddOptions {
        deferred: true,
        ..AddOptions::default()
    };
    let data = body(4, 2, 40);
    journal
        .add(2, LedgerId(4), EntryId(2), &KEY, &data, deferred)
        .unwrap();
    journal.submit();
    assert_eq!(
        journal.disk_mut().pending_count(),
        2,
        "a deferred record's commit is a write (acked when it lands) and a linked fdatasync"
    );
    let events = drive(&mut journal);
    assert_eq!(events, vec![Event::Written { token: 2 }]);
    let disk = journal.into_disk().crash();
    let journal = Journal::open(disk, config_small()).unwrap();
    assert_eq!(journal.ledger(LedgerId(4)).unwrap().entry_last, 2);
}

#[test]
fn dsync_mode_acks_a_sync_add_sharing_a_commit_with_a_deferred_one_only_after_the_sync() {
    let config = Config {
        sync_mode: SyncMode::Dsync,
        zero_ahead: false,
        ..config_small()
    };
    let deferred = AddOptions {
        deferred: true,
        ..AddOptions::default()
    };
    let mut write_first_seen = 0;
    for seed in 0..64 {
        let mut journal = Journal::open(SimDisk::new(seed), config.clone()).unwrap();
        let mut model = Model::default();
        assert!(add(&mut journal, &mut model, 0, 6, 0, 40));
        drive(&mut journal);
        let (sync_body, deferred_body) = (body(6, 1, 40), body(6, 2, 40));
        let options = AddOptions::default();
        journal
            .add(1, LedgerId(6), EntryId(1), &KEY, &sync_body, options)
            .unwrap();
        journal
            .add(2, LedgerId(6), EntryId(2), &KEY, &deferred_body, deferred)
            .unwrap();
        journal.submit();
        let mut events = Vec::new();
        while !events.contains(&Event::Durable { token: 1 }) {
            journal.poll();
            let mut new = Vec::new();
            journal.events_swap(&mut new);
            if new.contains(&Event::Written { token: 2 })
                && !new.contains(&Event::Durable { token: 1 })
            {
                write_first_seen += 1;
            }
            if new.contains(&Event::Durable { token: 1 }) {
                assert_eq!(
                    journal.disk_mut().pending_count(),
                    0,
                    "seed {seed}: the sync add was acked before its commit's fdatasync completed"
                );
            }
            events.append(&mut new);
            journal.submit();
        }
    }
    assert!(
        write_first_seen > 0,
        "no seed completed the write alone first"
    );
}

#[test]
fn deferred_adds_report_written_then_force_makes_them_durable() {
    let mut journal = Journal::open(SimDisk::new(5), config_small()).unwrap();
    let deferred = AddOptions {
        deferred: true,
        ..AddOptions::default()
    };
    for entry in 0..10i64 {
        let data = body(3, entry, 20);
        journal
            .add(
                entry as u64,
                LedgerId(3),
                EntryId(entry),
                &KEY,
                &data,
                deferred,
            )
            .unwrap();
    }
    journal.force(100, LedgerId(3)).unwrap();
    let events = drive(&mut journal);
    let written = events
        .iter()
        .filter(|e| matches!(e, Event::Written { .. }))
        .count();
    assert_eq!(written, 10);
    let force_position = events
        .iter()
        .position(|e| *e == Event::Durable { token: 100 });
    assert!(force_position.is_some());
    assert_eq!(journal.force(101, LedgerId(404)), Err(AddError::NoLedger));
}

#[test]
fn master_key_and_fencing() {
    let mut journal = Journal::open(SimDisk::new(9), config_small()).unwrap();
    let data = body(4, 0, 10);
    let normal = AddOptions::default();
    journal
        .add(1, LedgerId(4), EntryId(0), &KEY, &data, normal)
        .unwrap();
    let other_key = [1u8; 20];
    let result = journal.add(2, LedgerId(4), EntryId(1), &other_key, &data, normal);
    assert_eq!(result, Err(AddError::KeyMismatch));
    assert_eq!(
        journal.fence(3, LedgerId(4), &other_key),
        Err(AddError::KeyMismatch)
    );
    journal.fence(4, LedgerId(4), &KEY).unwrap();
    let result = journal.add(5, LedgerId(4), EntryId(1), &KEY, &data, normal);
    assert_eq!(result, Err(AddError::Fenced));
    let recovery = AddOptions {
        recovery: true,
        ..normal
    };
    journal
        .add(6, LedgerId(4), EntryId(1), &KEY, &data, recovery)
        .unwrap();
    let events = drive(&mut journal);
    assert!(events.contains(&Event::Durable { token: 4 }));
    // Fencing and the key survive a crash.
    let mut journal = Journal::open(journal.into_disk().crash(), config_small()).unwrap();
    let ledger = journal.ledger(LedgerId(4)).unwrap();
    assert!(ledger.fenced);
    assert_eq!(ledger.master_key, KEY);
    assert_eq!(
        journal.add(7, LedgerId(4), EntryId(2), &KEY, &data, normal),
        Err(AddError::Fenced)
    );
    // A fence creates an unknown ledger with the key it carries.
    journal.fence(8, LedgerId(5), &KEY).unwrap();
    drive(&mut journal);
    assert_eq!(read_entry(&mut journal, 5, -1), Err(ReadError::NoEntry));
    assert_eq!(read_entry(&mut journal, 6, -1), Err(ReadError::NoLedger));
}

#[test]
fn reads_from_cache_and_disk_and_last_entry() {
    // No read-ahead: every read below is a disk read of its own, so the fault reaches it
    // (read_ahead.rs tests reads through windows).
    let config = Config {
        read_cache_buffers: 1,
        read_ahead_windows: 0,
        ..config_small()
    };
    let mut journal = Journal::open(SimDisk::new(11), config).unwrap();
    let mut model = Model::default();
    for token in 0..900u64 {
        assert!(
            add(
                &mut journal,
                &mut model,
                token,
                (token % 3) as i64,
                (token / 3) as i64,
                700
            ) || {
                model.apply(&drive(&mut journal));
                add(
                    &mut journal,
                    &mut model,
                    token,
                    (token % 3) as i64,
                    (token / 3) as i64,
                    700,
                )
            }
        );
        if token % 10 == 0 {
            model.apply(&drive(&mut journal));
        }
    }
    model.apply(&drive(&mut journal));
    verify_all(&mut journal, &model);
    assert!(journal.stats().reads_disk > 0);
    assert!(
        journal.stats().segments_created > 0,
        "900 x 700 B must roll past two 256 KiB segments"
    );
    assert_eq!(read_entry(&mut journal, 0, -1).unwrap(), body(0, 299, 700));
    assert_eq!(read_entry(&mut journal, 0, 300), Err(ReadError::NoEntry));
    // A latent read error is EIO for that entry, never "no entry"; the next read works.
    journal.disk_mut().faults.read_error_ppm = 1_000_000;
    assert_eq!(read_entry(&mut journal, 1, 0), Err(ReadError::Io));
    journal.disk_mut().faults.read_error_ppm = 0;
    assert_eq!(read_entry(&mut journal, 1, 0).unwrap(), body(1, 0, 700));
}

#[test]
fn disk_full_makes_the_journal_read_only_and_it_recovers() {
    let mut journal = Journal::open(SimDisk::new(13), config_small()).unwrap();
    let mut model = Model::default();
    journal.disk_mut().faults.segments_max = Some(1);
    let mut token = 0u64;
    let mut read_only = false;
    for _ in 0..2000 {
        if add(&mut journal, &mut model, token, 1, token as i64, 900) {
            token += 1;
        }
        model.apply(&drive(&mut journal));
        if journal.is_read_only() {
            read_only = true;
            break;
        }
    }
    assert!(read_only, "a full disk must make the journal read-only");
    let data = body(1, token as i64, 10);
    let result = journal.add(
        token,
        LedgerId(1),
        EntryId(token as i64),
        &KEY,
        &data,
        AddOptions::default(),
    );
    assert_eq!(result, Err(AddError::ReadOnly));
    verify_all(&mut journal, &model);
    journal.disk_mut().faults.segments_max = None;
    for _ in 0..1000 {
        drive(&mut journal);
        if !journal.is_read_only() {
            break;
        }
    }
    assert!(!journal.is_read_only(), "space came back: writable again");
    assert!(add(&mut journal, &mut model, token, 1, token as i64, 10));
    model.apply(&drive(&mut journal));
    verify_all(&mut journal, &model);
}

#[test]
fn invalid_adds_are_refused() {
    let mut journal = Journal::open(SimDisk::new(1), config_small()).unwrap();
    let normal = AddOptions::default();
    let big = vec![0u8; crate::constants::RECORD_PAYLOAD_SIZE_MAX + 1];
    assert_eq!(
        journal.add(1, LedgerId(1), EntryId(0), &KEY, &big, normal),
        Err(AddError::TooLarge)
    );
    let data = body(1, 0, 1);
    assert_eq!(
        journal.add(1, LedgerId(1), EntryId(-1), &KEY, &data, normal),
        Err(AddError::EntryInvalid)
    );
    assert_eq!(
        journal.add(1, LedgerId(1), EntryId(i64::MAX), &KEY, &data, normal),
        Err(AddError::EntryInvalid)
    );
    assert!(Journal::open(
        SimDisk::new(1),
        Config {
            segment_size: 1000,
            ..Config::default()
        }
    )
    .is_err());
}

/// Reads a ledger's explicit-LAC body through `ReadTarget::ExplicitLac`.
fn read_explicit_lac(journal: &mut Journal<SimDisk>, ledger: i64) -> Result<Vec<u8>, ReadError> {
    use crate::journal::{ReadOutcome, ReadTarget};
    match journal.read(9, LedgerId(ledger), ReadTarget::ExplicitLac)? {
        ReadOutcome::Ready { entry, body } => {
            assert_eq!(entry, crate::journal::ENTRY_ID_EXPLICIT_LAC);
            return Ok(body.to_vec());
        }
        ReadOutcome::Pending => {}
    }
    for event in drive(journal) {
        if let Event::ReadDone { slot, .. } = event {
            let result = journal.read_result(slot).map(|(_, body)| body.to_vec());
            journal.read_release(slot);
            return result;
        }
    }
    panic!("read did not complete");
}

#[test]
fn explicit_lac_reads_back_from_cache_and_disk() {
    let mut journal = Journal::open(SimDisk::new(3), config_small()).unwrap();
    let data = body(4, 0, 10);
    journal
        .add(
            1,
            LedgerId(4),
            EntryId(0),
            &KEY,
            &data,
            AddOptions::default(),
        )
        .unwrap();
    drive(&mut journal);
    // Absent before any WRITE_LAC; unknown ledgers stay NoLedger.
    assert_eq!(read_explicit_lac(&mut journal, 4), Err(ReadError::NoEntry));
    assert_eq!(read_explicit_lac(&mut journal, 5), Err(ReadError::NoLedger));
    journal
        .write_lac(2, LedgerId(4), &KEY, b"first lac")
        .unwrap();
    drive(&mut journal);
    journal
        .write_lac(3, LedgerId(4), &KEY, b"second lac body")
        .unwrap();
    let events = drive(&mut journal);
    assert!(events.contains(&Event::Durable { token: 3 }));
    assert_eq!(
        read_explicit_lac(&mut journal, 4).unwrap(),
        b"second lac body"
    );
    // The explicit-LAC record is not an entry: entry reads still see only entry 0.
    assert_eq!(read_entry(&mut journal, 4, -1).unwrap(), data);
    // After a crash the body comes back from disk (recovery indexes it).
    let mut journal = Journal::open(journal.into_disk().crash(), config_small()).unwrap();
    assert_eq!(
        read_explicit_lac(&mut journal, 4).unwrap(),
        b"second lac body"
    );
}

#[test]
fn an_explicit_lac_raises_the_ledger_lac_and_survives_recovery() {
    let mut journal = Journal::open(SimDisk::new(4), config_small()).unwrap();
    journal
        .add(
            1,
            LedgerId(6),
            EntryId(0),
            &KEY,
            &body(6, 0, 10),
            AddOptions::default(),
        )
        .unwrap();
    drive(&mut journal);
    assert_eq!(journal.ledger(LedgerId(6)).unwrap().last_add_confirmed, -1);
    // [ledgerId][lac][digest], as the Java client's DigestManager packs it.
    let lac_body = [6i64.to_be_bytes(), 41i64.to_be_bytes(), [0; 8]].concat();
    journal.write_lac(2, LedgerId(6), &KEY, &lac_body).unwrap();
    drive(&mut journal);
    assert_eq!(journal.ledger(LedgerId(6)).unwrap().last_add_confirmed, 41);
    let journal = Journal::open(journal.into_disk().crash(), config_small()).unwrap();
    assert_eq!(journal.ledger(LedgerId(6)).unwrap().last_add_confirmed, 41);
}

/// The stall watchdog's view: the oldest commit in flight and the stage it waits in, for a
/// RWF_DSYNC commit and for a write linked to an fdatasync (seen between its two completions).
#[test]
fn the_oldest_commit_in_flight_names_its_stage() {
    let config = Config {
        sync_mode: SyncMode::Dsync,
        zero_ahead: false,
        ..config_small()
    };
    let mut journal = Journal::open(SimDisk::new(5), config).unwrap();
    let mut model = Model::default();
    drive(&mut journal);
    assert_eq!(journal.commit_oldest_in_flight(), None);
    assert!(add(&mut journal, &mut model, 0, 6, 0, 40));
    assert_eq!(
        journal.commit_oldest_in_flight(),
        None,
        "staged, not submitted"
    );
    journal.submit();
    let commit = journal.commit_oldest_in_flight().expect("in flight");
    assert_eq!(commit.stage, CommitStage::WriteDsync);
    assert!(
        commit.records >= 1,
        "the entry (and the new ledger's key record)"
    );
    assert!(commit.submitted_at.is_some());
    assert_eq!(commit.bytes % 4096, 0);
    model.apply(&drive(&mut journal));
    assert_eq!(journal.commit_oldest_in_flight(), None);

    let deferred = AddOptions {
        deferred: true,
        ..AddOptions::default()
    };
    let data = body(6, 1, 40);
    journal
        .add(1, LedgerId(6), EntryId(1), &KEY, &data, deferred)
        .unwrap();
    journal.submit();
    assert_eq!(
        journal.commit_oldest_in_flight().map(|commit| commit.stage),
        Some(CommitStage::Write)
    );
    let mut seen_syncing = false;
    let mut events = Vec::new();
    for _ in 0..1000 {
        journal.poll();
        journal.events_swap(&mut events);
        let written = events.contains(&Event::Written { token: 1 });
        events.clear();
        if let Some(commit) = journal.commit_oldest_in_flight() {
            if written {
                assert_eq!(commit.stage, CommitStage::Fdatasync);
                seen_syncing = true;
            }
        } else {
            break;
        }
    }
    assert!(
        seen_syncing,
        "the write completes before its linked fdatasync"
    );
    assert_eq!(journal.commit_oldest_in_flight(), None);
}

/// A staging commit that fills up while a zero-ahead write is in flight over its range waits
/// for that write, on the add path (`reserve` submitting a full commit) as on `submit`. The
/// kernel orders no two writes in flight: zeros landing after the commit erased acknowledged
/// records under a closed-loop load (`ringlog verify` found them, reads answered EIO).
#[test]
fn a_full_staging_commit_waits_for_the_zero_ahead_write_it_overlaps() {
    for seed in 0..16 {
        let config = Config {
            segment_size: 64 << 20,
            ..config_small()
        };
        assert!(config.zero_ahead);
        let mut journal = Journal::open(SimDisk::new(seed), config).unwrap();
        let mut model = Model::default();
        // Nothing staged: the first zero chunk is one chunk past the write head.
        journal.submit();
        assert!(
            journal.disk_mut().pending_count() > 0,
            "a zero-ahead write in flight"
        );
        // Adds fill the staging commit far past that chunk without a submit in between.
        let mut refused = false;
        for entry in 0..40 {
            let data = body(1, entry, 500 * 1024);
            let result = journal.add(
                entry as u64,
                LedgerId(1),
                EntryId(entry),
                &KEY,
                &data,
                AddOptions::default(),
            );
            match result {
                Ok(()) => {
                    model.pending.insert(entry as u64, (1, entry, data));
                }
                Err(AddError::StagingFull) => {
                    refused = true;
                    break;
                }
                Err(error) => panic!("seed {seed}: {error:?}"),
            }
        }
        assert!(
            refused,
            "seed {seed}: the full commit waited for the zero write"
        );
        model.apply(&drive(&mut journal));
        assert!(
            model.acked.len() >= 16,
            "seed {seed}: {}",
            model.acked.len()
        );
        verify_all(&mut journal, &model);
    }
}
