//! Read pacing (issue 15): while the server has pacing on, a catch-up scan's windows start
//! only on the credit durable commits earn, its reads wait in the engine instead of being
//! refused, and every read still answers the right bytes once credit comes or pacing ends.

use super::harness::{add, add_all, config_small, drive, Model};
use crate::ids::{EntryId, LedgerId};
use crate::journal::{Event, Journal, ReadOutcome, ReadTarget};
use crate::{Config, ReadError, SimDisk};

/// One ledger of 1,000-byte records over a 16 MiB segment, so windows are whole 1 MiB ones;
/// pacing at 25% of the commits' bytes.
fn config() -> Config {
    Config {
        segment_size: 16 * 1024 * 1024,
        read_ahead_windows: 8,
        read_cache_buffers: 0,
        compaction_threshold_minor_per_mille: 0,
        read_pace_percent: 25,
        ..config_small()
    }
}

/// A catch-up client: entries `0..count` of a ledger, as many outstanding as the journal
/// takes (those answered busy are sent again), each answer kept.
struct Reader {
    ledger: i64,
    results: Vec<Option<Result<Vec<u8>, ReadError>>>,
    to_send: std::collections::VecDeque<usize>,
}

impl Reader {
    fn new(ledger: i64, count: usize) -> Reader {
        Reader {
            ledger,
            results: vec![None; count],
            to_send: (0..count).collect(),
        }
    }

    fn send(&mut self, journal: &mut Journal<SimDisk>) {
        while let Some(&next) = self.to_send.front() {
            let entry = EntryId(i64::try_from(next).unwrap());
            let token = u64::try_from(next).unwrap();
            match journal.read(token, LedgerId(self.ledger), ReadTarget::Entry(entry)) {
                Ok(ReadOutcome::Ready { body, .. }) => self.results[next] = Some(Ok(body.to_vec())),
                Ok(ReadOutcome::Pending) => {}
                Err(ReadError::Busy) => return,
                Err(error) => self.results[next] = Some(Err(error)),
            }
            self.to_send.pop_front();
        }
    }

    fn take(&mut self, journal: &mut Journal<SimDisk>, events: &[Event]) {
        for event in events {
            let Event::ReadDone { token, slot } = *event else {
                continue;
            };
            let result = journal.read_result(slot).map(|(_, body)| body.to_vec());
            journal.read_release(slot);
            let index = usize::try_from(token).unwrap();
            assert!(self.results[index].is_none(), "read {token} answered twice");
            if result == Err(ReadError::Busy) {
                // Sent again, as the server's retry queue does.
                self.to_send.push_back(index);
            } else {
                self.results[index] = Some(result);
            }
        }
    }

    fn answered(&self) -> usize {
        self.results
            .iter()
            .filter(|result| result.is_some())
            .count()
    }

    fn assert_right(&self, model: &Model) {
        for (entry, result) in self.results.iter().enumerate() {
            let expected = &model.acked[&(self.ledger, i64::try_from(entry).unwrap())];
            let got = result.as_ref().and_then(|result| result.as_ref().ok());
            assert_eq!(got, Some(expected), "entry {}/{entry}", self.ledger);
        }
    }
}

#[test]
fn paced_scan_reads_wait_for_the_commits_credit_and_all_answer_right() {
    let mut journal = Journal::open(SimDisk::new(21), config()).unwrap();
    let mut model = Model::default();
    let count = 6000;
    add_all(
        &mut journal,
        &mut model,
        (0..count).map(|entry| (1, entry)),
        1000,
    );
    let mut reader = Reader::new(1, usize::try_from(count).unwrap());

    // Pacing on and nothing written: the credit banked while pacing was off (one window at
    // most) is all the scan gets; its other reads wait, none is refused.
    journal.read_pace_set(true);
    for _ in 0..20 {
        reader.send(&mut journal);
        let events = drive(&mut journal);
        reader.take(&mut journal, &events);
    }
    let stats = journal.stats().clone();
    assert!(stats.read_ahead_windows <= 2, "{stats:?}");
    assert!(stats.reads_paced > 0, "{stats:?}");
    let answered_idle = reader.answered();
    assert!(answered_idle < 3000, "{answered_idle} answered");
    assert!(reader.results.iter().flatten().all(Result::is_ok));

    // A writer: every durable commit earns the reads a quarter of its bytes, so about 8 MiB
    // of commits let about 2 MiB of windows start, and the scan moves on.
    let (windows_before, written_before) = (stats.read_ahead_windows, stats.bytes_written);
    let mut token = 0;
    for entry in 0..8000 {
        while !add(&mut journal, &mut model, token, 2, entry, 1000) {
            let events = drive(&mut journal);
            model.apply(&events);
            reader.take(&mut journal, &events);
        }
        token = (token + 1) % 9000;
        if entry % 8 == 0 {
            reader.send(&mut journal);
            let events = drive(&mut journal);
            model.apply(&events);
            reader.take(&mut journal, &events);
        }
    }
    let events = drive(&mut journal);
    model.apply(&events);
    reader.take(&mut journal, &events);
    let stats = journal.stats().clone();
    let written = stats.bytes_written - written_before;
    let windows = stats.read_ahead_windows - windows_before;
    let window = 1024 * 1024;
    assert!(written >= 7 * window, "{written} bytes written");
    assert!(windows >= 1, "{stats:?}");
    assert!(
        windows <= written / 4 / window + 2,
        "{windows} windows: {stats:?}"
    );
    assert!(
        reader.answered() > answered_idle,
        "the writes' credit moved the scan"
    );

    // Pacing off: the rest is read at once.
    journal.read_pace_set(false);
    for _ in 0..100 {
        reader.send(&mut journal);
        let events = drive(&mut journal);
        reader.take(&mut journal, &events);
        if reader.answered() == reader.results.len() {
            break;
        }
    }
    reader.assert_right(&model);
}

#[test]
fn with_pacing_off_or_at_zero_percent_a_scan_never_waits() {
    for (percent, on) in [(25, false), (0, true)] {
        let config = Config {
            read_pace_percent: percent,
            ..config()
        };
        let mut journal = Journal::open(SimDisk::new(22), config).unwrap();
        let mut model = Model::default();
        add_all(
            &mut journal,
            &mut model,
            (0..3000).map(|entry| (1, entry)),
            1000,
        );
        journal.read_pace_set(on);
        let mut reader = Reader::new(1, 3000);
        for _ in 0..100 {
            reader.send(&mut journal);
            let events = drive(&mut journal);
            reader.take(&mut journal, &events);
            if reader.answered() == 3000 {
                break;
            }
        }
        reader.assert_right(&model);
        assert_eq!(journal.stats().reads_paced, 0, "{percent}% on={on}");
    }
}
