//! Shared helpers: a small-segment config, a driver loop, and a model of acked entries.

use crate::disk::Disk;
use crate::journal::{AddOptions, Event, Journal};
use crate::{Config, EntryId, LedgerId, SimDisk};
use std::collections::BTreeMap;

pub const KEY: [u8; 20] = [7u8; 20];

/// Small segments; linked write + fdatasync, so the tests see a write and a sync per commit
/// (the simulation and `dsync_*` tests cover the default, `SyncMode::Dsync`).
pub fn config_small() -> Config {
    Config {
        segment_size: 256 * 1024,
        sync_mode: crate::SyncMode::LinkedFdatasync,
        // A segment is a quarter of a window here; four keep tests' memory small.
        read_ahead_windows: 4,
        // Whatever the default, every batch goes as soon as a slot is free, so the tests'
        // small adds keep commits side by side (completing out of order) and their segment
        // counts; the overlap rule has its own test (journal.rs) and the simulation draws it.
        commit_overlap_bytes_min: 0,
        ..Config::default()
    }
}

/// A BookKeeper-like body: ledger, entry, lac, length, then a payload derived from the ids.
pub fn body(ledger: i64, entry: i64, size: usize) -> Vec<u8> {
    let mut body = Vec::with_capacity(32 + size);
    body.extend_from_slice(&ledger.to_be_bytes());
    body.extend_from_slice(&entry.to_be_bytes());
    body.extend_from_slice(&(entry - 1).to_be_bytes());
    body.extend_from_slice(&0i64.to_be_bytes());
    let mut state = (ledger as u64).wrapping_mul(31) ^ (entry as u64).wrapping_mul(0x9E37_79B9);
    for _ in 0..size {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        body.push(state as u8);
    }
    body
}

/// Drives submit/poll until nothing is in flight (bounded), returning all events.
pub fn drive<D: Disk>(journal: &mut Journal<D>) -> Vec<Event> {
    let mut all = Vec::new();
    let mut events = Vec::new();
    for _ in 0..100_000 {
        journal.submit();
        journal.poll();
        journal.events_swap(&mut events);
        all.append(&mut events);
        if journal.is_idle() && journal.disk_mut().in_flight() == 0 {
            return all;
        }
    }
    panic!("journal did not settle");
}

/// What the journal acknowledged: (ledger, entry) -> body.
#[derive(Default, Debug)]
pub struct Model {
    pub acked: BTreeMap<(i64, i64), Vec<u8>>,
    pub pending: BTreeMap<u64, (i64, i64, Vec<u8>)>,
    pub failed: u64,
    /// Deleted ledgers, with their acknowledged entries at deletion: after a crash a ledger
    /// whose deletion was not yet durable may come back, but only with exactly these.
    pub deleted: BTreeMap<i64, BTreeMap<i64, Vec<u8>>>,
    /// `Event::Damage` reports seen.
    pub damage_reported: Vec<crate::journal::DamageFound>,
}

impl Model {
    /// The journal deleted `ledger`: its acknowledged entries move out of `acked`.
    pub fn delete(&mut self, ledger: i64) {
        let entries: BTreeMap<i64, Vec<u8>> = self
            .acked
            .range((ledger, i64::MIN)..=(ledger, i64::MAX))
            .map(|(&(_, entry), body)| (entry, body.clone()))
            .collect();
        self.acked.retain(|&(owner, _), _| owner != ledger);
        self.deleted.insert(ledger, entries);
    }

    pub fn apply(&mut self, events: &[Event]) {
        for event in events {
            match *event {
                // Tokens from 10 000 up are fences and other non-add records.
                Event::Durable { token } | Event::Written { token } | Event::Failed { token }
                    if token >= 10_000 => {}
                Event::Durable { token } | Event::Written { token } => {
                    let (ledger, entry, body) = self.pending.remove(&token).expect("known token");
                    match self.deleted.get_mut(&ledger) {
                        Some(entries) => {
                            entries.insert(entry, body);
                        }
                        None => {
                            self.acked.insert((ledger, entry), body);
                        }
                    }
                }
                Event::Failed { token } => {
                    self.pending.remove(&token).expect("known token");
                    self.failed += 1;
                }
                Event::ReadDone { .. } => {}
                // What acks and fails is the model's; damage is the scrub tests' to check.
                Event::Damage(found) => self.damage_reported.push(found),
            }
        }
    }
}

pub fn add(
    journal: &mut Journal<SimDisk>,
    model: &mut Model,
    token: u64,
    ledger: i64,
    entry: i64,
    size: usize,
) -> bool {
    let data = body(ledger, entry, size);
    let result = journal.add(
        token,
        LedgerId(ledger),
        EntryId(entry),
        &KEY,
        &data,
        AddOptions::default(),
    );
    if result.is_ok() {
        model.pending.insert(token, (ledger, entry, data));
    }
    result.is_ok()
}

/// Adds each (ledger, entry) of `order` with a `size`-byte body, in that order, driving the
/// journal when staging is full and every 8 adds, then until every add is durable.
pub fn add_all(
    journal: &mut Journal<SimDisk>,
    model: &mut Model,
    order: impl IntoIterator<Item = (i64, i64)>,
    size: usize,
) {
    // Tokens from 10 000 up are the model's non-add records; adds cycle below it (few are
    // pending at once).
    let mut token = model.acked.len() as u64 % 9000;
    for (i, (ledger, entry)) in order.into_iter().enumerate() {
        while !add(journal, model, token, ledger, entry, size) {
            model.apply(&drive(journal));
        }
        token = (token + 1) % 9000;
        if i % 8 == 0 {
            journal.submit();
            journal.poll();
            let mut events = Vec::new();
            journal.events_swap(&mut events);
            model.apply(&events);
        }
    }
    model.apply(&drive(journal));
}

/// Reads every acked entry back and compares bytes; reads of disk go through `drive`. A
/// deleted ledger is absent, or (its deletion not durable before a crash) back with exactly
/// the entries it had: never other data.
pub fn verify_all<D: Disk>(journal: &mut Journal<D>, model: &Model) {
    for (&(ledger, entry), expected) in &model.acked {
        let got = read_entry(journal, ledger, entry)
            .unwrap_or_else(|error| panic!("acked entry {ledger}/{entry} unreadable: {error:?}"));
        assert_eq!(&got, expected, "entry {ledger}/{entry} differs");
    }
    for (&ledger, entries) in &model.deleted {
        for (&entry, expected) in entries {
            match read_entry(journal, ledger, entry) {
                Err(crate::ReadError::NoLedger) => break,
                Ok(got) => assert_eq!(&got, expected, "deleted {ledger}/{entry} differs"),
                Err(error) => panic!("deleted ledger {ledger} entry {entry}: {error:?}"),
            }
        }
    }
}

pub fn read_entry<D: Disk>(
    journal: &mut Journal<D>,
    ledger: i64,
    entry: i64,
) -> Result<Vec<u8>, crate::ReadError> {
    use crate::journal::{ReadOutcome, ReadTarget};
    let target = if entry < 0 {
        ReadTarget::Last
    } else {
        ReadTarget::Entry(EntryId(entry))
    };
    // A segment about to be replaced by its compacted copy turns reads away for a moment.
    let mut attempts = 0;
    let ready = loop {
        match journal.read(9, LedgerId(ledger), target) {
            Ok(ReadOutcome::Ready { body, .. }) => break Some(body.to_vec()),
            Ok(ReadOutcome::Pending) => break None,
            Err(crate::ReadError::Busy) if attempts < 100 => {
                attempts += 1;
                drive(journal);
            }
            Err(error) => return Err(error),
        }
    };
    if let Some(body) = ready {
        return Ok(body);
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

/// Writes `count` entries of 100 bytes to each of `ledgers` in turn, one ledger after the
/// other, so each ledger fills segments of its own.
pub fn fill_each(journal: &mut Journal<SimDisk>, model: &mut Model, ledgers: &[i64], count: i64) {
    let order = ledgers
        .iter()
        .flat_map(|&ledger| (0..count).map(move |entry| (ledger, entry)));
    add_all(journal, model, order, 100);
}

/// The published segments on `disk`, ascending.
pub fn segments(disk: &mut SimDisk) -> Vec<crate::ids::SegmentId> {
    let files = disk
        .files_list()
        .expect("the simulated disk lists its files");
    files
        .into_iter()
        .filter_map(|file| match file {
            crate::ids::FileId::Segment(segment) => Some(segment),
            _ => None,
        })
        .collect()
}
