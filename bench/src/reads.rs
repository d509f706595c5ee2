//! `ringlog-bench reads`: reads back every entry a `writes --verify-log` run logged as acked
//! and checks it byte for byte, then checks that each ledger's entry -1 (the highest entry
//! the bookie holds) is at least the highest logged one. Any missing, corrupt or failed read
//! fails the run: every logged entry is one the bookie promised to keep.
//!
//! With `--deleted`, the ledgers listed there had their metadata deleted, so the bookie may
//! collect them at any time: their entries must read back correct or answer missing, never
//! wrong bytes, and a ledger listed as collected must answer missing (deleted_ledgers.rs).
//! `reads/outcome.rs` turns the counts into the run's report and verdict.

mod outcome;

use crate::deleted_ledgers::DeletedLedgers;
use crate::report::Report;
use crate::verify_log::{payload_matches, read_log, LoggedEntry};
use crate::writes::{code_name, BufferSizes, Connections};
use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use wire::client::{encode_batch_read_request, encode_read_request, Response};
use wire::{code, verify_entry_body_crc32c};

/// Flags of `ringlog-bench reads`.
#[derive(clap::Args, Debug, Clone)]
pub struct ReadsArgs {
    /// TLS to the bookie (START_TLS, as the BookKeeper client with tlsProviderFactoryClass).
    #[command(flatten)]
    pub tls: crate::tls_client::TlsArgs,
    /// Bookie address, HOST:PORT. Default: 127.0.0.1:3181.
    #[arg(long, default_value = "127.0.0.1:3181")]
    pub target: String,
    /// The log `writes --verify-log` appended: every entry in it is read and checked.
    #[arg(long)]
    pub verify_log: PathBuf,
    /// TCP connections; ledger L uses connection L mod C (the Java client's signSafeMod).
    /// Default: 4.
    #[arg(long, default_value_t = 4)]
    pub connections: usize,
    /// Most entries requested and not yet answered (with --batch, this many entries' worth
    /// of batch requests, 64 entries each). Default: 1000.
    #[arg(long, default_value_t = 1000)]
    pub outstanding: usize,
    /// Read with BATCH_READ_ENTRY (op 7, BP-62) instead of one READ_ENTRY per entry; latency
    /// is then per batch request.
    #[arg(long)]
    pub batch: bool,
    /// Write the report as one JSON object to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Ledgers whose metadata was deleted, one id a line, `collected` after the id of one
    /// already seen gone (format in deleted_ledgers.rs). Their logged entries must read back
    /// correct or answer NoSuchLedger/NoSuchEntry, counted apart from the live ones; wrong
    /// bytes are corrupt, and any entry of a collected ledger that reads back is a
    /// resurrection. Of a collected ledger only entry -1 and its first and last logged
    /// entries are read. Default: none (every ledger is live).
    #[arg(long)]
    pub deleted: Option<PathBuf>,
    /// With --deleted: read only the deleted ledgers' entries.
    #[arg(long, requires = "deleted")]
    pub deleted_only: bool,
    /// With --deleted: write the list back to this file, `collected` added to every ledger
    /// whose reads all answered missing in this run.
    #[arg(long, requires = "deleted")]
    pub deleted_out: Option<PathBuf>,
    /// Read only this ledger's logged entries, in entry order, as a catch-up consumer of one
    /// topic does (the report's MB/s is then that ledger's read rate). Repeated, or a
    /// comma-separated list: those ledgers one after another (in ledger id order, each in
    /// entry order), as that consumer reads a topic's ledgers in turn, for a read long enough
    /// to time beside other load when each ledger is small. Default: every ledger in the log,
    /// all at once.
    #[arg(long, conflicts_with = "deleted", value_delimiter = ',')]
    pub ledger: Vec<i64>,
    /// Milliseconds to wait after the verify log is loaded, before connecting. Loading a
    /// large log reads, parses and sorts it (a second and hundreds of MB for 3.6M entries);
    /// a benchmark that times the reads beside other load uses this to keep that out of the
    /// measured read: "verify log loaded" is printed before the wait, the header after it.
    /// 0 to 600000. Default: 0.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=600_000))]
    pub start_delay_ms: u64,
}

/// Reads and checks everything; `Err` if any entry is missing, corrupt or failed to read.
pub fn run(args: &ReadsArgs) -> Result<(), String> {
    if args.connections == 0 || args.outstanding == 0 {
        return Err("--connections and --outstanding must be at least 1".into());
    }
    let contents = read_log(&args.verify_log)?;
    if let Some(torn) = &contents.torn_tail {
        eprintln!("reads: ignoring the torn last line of the verify log ({torn})");
    }
    let deleted = args
        .deleted
        .as_deref()
        .map(DeletedLedgers::read)
        .transpose()?;
    let mut entries = sorted_unique(contents.entries)?;
    if !args.ledger.is_empty() {
        entries = entries_of_ledgers(entries, &args.ledger)?;
    }
    if let Some(deleted) = &deleted {
        entries = entries_to_read(entries, deleted, args.deleted_only);
    }
    let ledgers = ledger_summaries(&entries);
    if args.start_delay_ms > 0 {
        println!(
            "reads: verify log loaded ({} entries to read); starting in {} ms",
            entries.len(),
            args.start_delay_ms
        );
        std::thread::sleep(std::time::Duration::from_millis(args.start_delay_ms));
    }
    println!(
        "reads: {} | {} entries of {} ledgers from {} | {} connections | {} | outstanding {}",
        args.target,
        entries.len(),
        ledgers.len(),
        args.verify_log.display(),
        args.connections,
        if args.batch {
            "BATCH_READ_ENTRY"
        } else {
            "READ_ENTRY"
        },
        args.outstanding
    );
    let mut checker = Checker::new(args, &entries, &ledgers, deleted);
    let labels: Vec<usize> = (0..args.connections).collect();
    let tls = args.tls.client_config()?;
    let mut connections =
        Connections::open(&args.target, &labels, checker.buffer_sizes(), tls.as_ref())?;
    let result = checker.run_loop(&mut connections);
    connections.close();
    let report = checker.report();
    report.print();
    if let Some(path) = &args.json {
        report
            .write_json(path)
            .map_err(|error| format!("writing {}: {error}", path.display()))?;
    }
    result?;
    if let (Some(path), Some(deleted)) = (&args.deleted_out, &checker.deleted) {
        std::fs::write(path, deleted.format())
            .map_err(|error| format!("writing {}: {error}", path.display()))?;
    }
    checker.verdict()
}

/// The logged entries of `ledgers` (`--ledger`), by (ledger, entry) as `entries` is sorted;
/// an error naming the first of them the log has no entry of.
fn entries_of_ledgers(
    entries: Vec<LoggedEntry>,
    ledgers: &[i64],
) -> Result<Vec<LoggedEntry>, String> {
    let wanted: std::collections::BTreeSet<i64> = ledgers.iter().copied().collect();
    let kept: Vec<LoggedEntry> = entries
        .into_iter()
        .filter(|entry| wanted.contains(&entry.ledger_id))
        .collect();
    let absent = ledgers
        .iter()
        .find(|&&ledger| !kept.iter().any(|entry| entry.ledger_id == ledger));
    if let Some(ledger) = absent {
        return Err(format!(
            "--ledger {ledger}: the verify log has no entry of it"
        ));
    }
    Ok(kept)
}

/// The logged entries a run with `--deleted` reads: of a collected ledger only its first and
/// last (with entry -1, enough to see it come back: a ledger the bookie knows again answers
/// entry -1), so checking every collected ledger after every restart stays cheap; with
/// `deleted_only`, only the deleted ledgers' entries. `entries` is sorted by (ledger, entry).
fn entries_to_read(
    entries: Vec<LoggedEntry>,
    deleted: &DeletedLedgers,
    deleted_only: bool,
) -> Vec<LoggedEntry> {
    let mut kept: Vec<LoggedEntry> = Vec::with_capacity(entries.len());
    let mut entries = entries.into_iter().peekable();
    let mut previous: Option<i64> = None;
    while let Some(entry) = entries.next() {
        let ledger = entry.ledger_id;
        let first = previous != Some(ledger);
        let last = entries.peek().is_none_or(|next| next.ledger_id != ledger);
        previous = Some(ledger);
        let keep = if deleted.collected(ledger) {
            first || last
        } else {
            !deleted_only || deleted.contains(ledger)
        };
        if keep {
            kept.push(entry);
        }
    }
    kept
}

/// Entries per BATCH_READ_ENTRY request.
const BATCH_COUNT_MAX: usize = 64;

/// maxSize of a batch request; the bookie caps it further (maxBatchReadSize, 5 MiB).
const BATCH_SIZE_MAX: usize = 1024 * 1024;

/// With nothing answered for this long the bookie is considered stuck.
const PROGRESS_TIMEOUT: Duration = Duration::from_secs(30);

/// Problems printed in full; the rest are only counted.
const PROBLEMS_PRINTED_MAX: u64 = 20;

/// Response frame bytes besides the body: length 4, header 4, code 4, ids 16, slack.
const READ_FRAME_OVERHEAD: usize = 64;

/// Sorts by (ledger, entry) and drops exact duplicates; two lines for one entry that
/// disagree mean the log itself is wrong.
fn sorted_unique(mut entries: Vec<LoggedEntry>) -> Result<Vec<LoggedEntry>, String> {
    entries.sort_by_key(|entry| (entry.ledger_id, entry.entry_id));
    let mut unique: Vec<LoggedEntry> = Vec::with_capacity(entries.len());
    for entry in entries {
        match unique.last() {
            Some(last) if (last.ledger_id, last.entry_id) == (entry.ledger_id, entry.entry_id) => {
                if *last != entry {
                    return Err(format!(
                        "verify log has two different lines for ledger {} entry {}",
                        entry.ledger_id, entry.entry_id
                    ));
                }
            }
            _ => unique.push(entry),
        }
    }
    Ok(unique)
}

/// One ledger of the log: its id and highest logged entry.
struct LedgerSummary {
    id: i64,
    entry_max: i64,
}

fn ledger_summaries(entries: &[LoggedEntry]) -> Vec<LedgerSummary> {
    let mut ledgers: Vec<LedgerSummary> = Vec::new();
    for entry in entries {
        match ledgers.last_mut() {
            Some(last) if last.id == entry.ledger_id => last.entry_max = entry.entry_id,
            _ => ledgers.push(LedgerSummary {
                id: entry.ledger_id,
                entry_max: entry.entry_id,
            }),
        }
    }
    ledgers
}

/// A piece of work: `count` consecutive entries of one ledger starting at `entries[first]`
/// (count 1 without --batch), or the entry -1 check of `ledgers[ledger]`.
#[derive(Clone, Copy, Debug)]
enum Work {
    Entries { first: usize, count: usize },
    Last { ledger: usize },
}

/// How one check ended.
enum Verdict {
    Ok,
    Missing(String),
    Corrupt(String),
    Failed(String),
    /// An entry of a ledger seen collected before reads back.
    Resurrected(String),
}

struct Checker<'a> {
    entries: &'a [LoggedEntry],
    ledgers: &'a [LedgerSummary],
    batch: bool,
    connection_count: usize,
    requests_max: usize,
    queue: VecDeque<Work>,
    /// Single reads in flight, keyed as v2 matches them: (ledger, entry).
    reads: HashMap<(i64, i64), (Work, Instant)>,
    /// Batch reads in flight, keyed by request id.
    batches: HashMap<i64, (Work, Instant)>,
    request_id_next: i64,
    report: Report,
    missing: u64,
    corrupt: u64,
    failed: u64,
    last_checked: u64,
    above_log: u64,
    batch_requests: u64,
    start: Instant,
    /// `--deleted`: the deleted ledgers and their answers.
    deleted: Option<DeletedLedgers>,
    /// Reads of deleted ledgers' entries (entry -1 included) answered with the right bytes,
    /// and answered missing; neither counts as checked OK or lost.
    deleted_readable: u64,
    deleted_missing: u64,
    /// Reads of collected ledgers that answered (`tally().resurrected` counts the ledgers).
    resurrected_reads: u64,
}

impl<'a> Checker<'a> {
    fn new(
        args: &ReadsArgs,
        entries: &'a [LoggedEntry],
        ledgers: &'a [LedgerSummary],
        deleted: Option<DeletedLedgers>,
    ) -> Self {
        let requests_max = if args.batch {
            (args.outstanding / BATCH_COUNT_MAX).max(1)
        } else {
            args.outstanding
        };
        Checker {
            entries,
            ledgers,
            batch: args.batch,
            connection_count: args.connections,
            requests_max,
            queue: work_queue(
                entries,
                ledgers,
                if args.batch { BATCH_COUNT_MAX } else { 1 },
                !args.ledger.is_empty(),
            ),
            reads: HashMap::with_capacity(requests_max),
            batches: HashMap::with_capacity(requests_max),
            request_id_next: 1,
            report: Report::new("reads"),
            missing: 0,
            corrupt: 0,
            failed: 0,
            last_checked: 0,
            above_log: 0,
            batch_requests: 0,
            start: Instant::now(),
            deleted,
            deleted_readable: 0,
            deleted_missing: 0,
            resurrected_reads: 0,
        }
    }

    fn buffer_sizes(&self) -> BufferSizes {
        let payload_max = self
            .entries
            .iter()
            .map(|entry| entry.payload_len)
            .max()
            .unwrap_or(0);
        let frame_max = payload_max as usize + READ_FRAME_OVERHEAD;
        let batch_frame_max = if self.batch {
            BATCH_SIZE_MAX + frame_max
        } else {
            frame_max
        };
        BufferSizes {
            receive: (2 * batch_frame_max).max(256 * 1024),
            pending_max: 64 * 1024,
            request_frame_max: 128,
        }
    }

    fn in_flight(&self) -> usize {
        self.reads.len() + self.batches.len()
    }

    fn run_loop(&mut self, connections: &mut Connections) -> Result<(), String> {
        self.start = Instant::now();
        let mut progress = Instant::now();
        let mut next_line = Duration::from_secs(1);
        loop {
            self.fill(connections);
            if self.queue.is_empty() && self.in_flight() == 0 {
                return Ok(());
            }
            let answered_before = self.answered();
            let mut on_response =
                |_index: usize, response: Response<'_>| self.on_response(response);
            connections
                .turn(Duration::from_millis(100), &mut on_response)
                .map_err(|error| {
                    format!("{error}; {} requests were outstanding", self.in_flight())
                })?;
            if self.answered() != answered_before {
                progress = Instant::now();
            } else if progress.elapsed() >= PROGRESS_TIMEOUT {
                return Err(format!(
                    "no answer for 30 s with {} in flight",
                    self.in_flight()
                ));
            }
            if self.start.elapsed() >= next_line {
                next_line += Duration::from_secs(1);
                let problems = self.missing + self.corrupt + self.failed;
                let checked = self.report.count;
                let rate = checked as f64 / self.start.elapsed().as_secs_f64();
                println!(
                    "{checked} entries checked OK, {rate:.1} entries/sec, {problems} problems"
                );
            }
        }
    }

    fn answered(&self) -> u64 {
        self.report.count
            + self.missing
            + self.corrupt
            + self.failed
            + self.last_checked
            + self.deleted_readable
            + self.deleted_missing
    }

    /// Sends queued work while requests may be added and the target connection has room.
    fn fill(&mut self, connections: &mut Connections) {
        while self.in_flight() < self.requests_max {
            let Some(&work) = self.queue.front() else {
                return;
            };
            let ledger_id = match work {
                Work::Entries { first, .. } => self.entries[first].ledger_id,
                Work::Last { ledger } => self.ledgers[ledger].id,
            };
            // signSafeMod: non-negative remainder, so the cast cannot lose anything.
            let connection = ledger_id.rem_euclid(self.connection_count as i64) as usize;
            if !connections.has_room(connection) {
                return;
            }
            self.queue.pop_front();
            self.send(connections.pending(connection), work, ledger_id);
        }
    }

    fn send(&mut self, frames: &mut Vec<u8>, work: Work, ledger_id: i64) {
        let now = Instant::now();
        match work {
            Work::Entries { first, count } if self.batch => {
                let request_id = self.request_id_next;
                self.request_id_next += 1;
                let start = self.entries[first].entry_id;
                let count = i32::try_from(count).expect("at most BATCH_COUNT_MAX");
                let size = BATCH_SIZE_MAX as i64;
                encode_batch_read_request(
                    frames, 0, ledger_id, start, request_id, count, size, None,
                );
                self.batches.insert(request_id, (work, now));
                self.batch_requests += 1;
            }
            Work::Entries { first, .. } => {
                let entry_id = self.entries[first].entry_id;
                encode_read_request(frames, 0, ledger_id, entry_id, None);
                self.reads.insert((ledger_id, entry_id), (work, now));
            }
            Work::Last { .. } => {
                encode_read_request(frames, 0, ledger_id, -1, None);
                self.reads.insert((ledger_id, -1), (work, now));
            }
        }
    }

    fn on_response(&mut self, response: Response<'_>) -> Result<(), String> {
        match response {
            Response::Read {
                code: result,
                ledger_id,
                entry_id,
                body,
                ..
            } => {
                let Some((work, sent)) = self.reads.remove(&(ledger_id, entry_id)) else {
                    return Err(format!(
                        "read reply for ledger {ledger_id} entry {entry_id}, \
                                        never requested"
                    ));
                };
                self.record_latency(sent);
                match work {
                    Work::Entries { first, .. } => self.check_entry(first, result, body),
                    Work::Last { ledger } => self.check_last(ledger, result, body),
                }
                Ok(())
            }
            Response::BatchRead {
                code: result,
                ledger_id,
                start_entry_id,
                request_id,
                entries,
                ..
            } => {
                let Some((work, sent)) = self.batches.remove(&request_id) else {
                    return Err(format!("batch reply for request {request_id}, never sent"));
                };
                self.record_latency(sent);
                let Work::Entries { first, count } = work else {
                    unreachable!("only entry work is batched")
                };
                let asked = &self.entries[first];
                if (ledger_id, start_entry_id) != (asked.ledger_id, asked.entry_id) {
                    return Err(format!(
                        "batch reply {request_id} is for ledger {ledger_id} entry \
                         {start_entry_id}, asked was {} {}",
                        asked.ledger_id, asked.entry_id
                    ));
                }
                self.check_batch(first, count, result, entries)
            }
            _ => Err("the server sent a response that is neither READ nor BATCH_READ".into()),
        }
    }

    fn record_latency(&mut self, sent: Instant) {
        let latency_us = u64::try_from(sent.elapsed().as_micros()).unwrap_or(u64::MAX);
        self.report.latency_us.saturating_record(latency_us.max(1));
    }

    /// Checks a batch reply item by item; whatever it did not cover is queued again, so a
    /// short batch (size limit, later failure) is never mistaken for missing entries.
    fn check_batch(
        &mut self,
        first: usize,
        count: usize,
        result: i32,
        items: wire::client::BatchEntries<'_>,
    ) -> Result<(), String> {
        let mut covered = 0;
        if result != code::EOK {
            // Only the first entry failed for sure (§2.7); the rest are asked again.
            self.check_entry(first, result, &[]);
            covered = 1;
        } else {
            for item in items {
                if covered == count {
                    return Err(format!(
                        "batch reply has more than the {count} entries asked"
                    ));
                }
                let body = item.map_err(|error| format!("undecodable batch item: {error}"))?;
                self.check_entry(first + covered, code::EOK, body);
                covered += 1;
            }
            if covered == 0 {
                self.problem(Verdict::Failed(format!(
                    "ledger {} entry {}: batch reply EOK without entries",
                    self.entries[first].ledger_id, self.entries[first].entry_id
                )));
                covered = 1;
            }
        }
        if covered < count {
            let rest = Work::Entries {
                first: first + covered,
                count: count - covered,
            };
            self.queue.push_front(rest);
        }
        Ok(())
    }

    fn check_entry(&mut self, index: usize, result: i32, body: &[u8]) {
        let entry = self.entries[index];
        let verdict = check_entry_body(&entry, result, body);
        match self.deleted_verdict(entry.ledger_id, verdict) {
            None => {}
            Some(Verdict::Ok) => {
                self.report.count += 1;
                self.report.bytes += u64::from(entry.payload_len);
            }
            Some(verdict) => self.problem(verdict),
        }
    }

    fn check_last(&mut self, ledger: usize, result: i32, body: &[u8]) {
        let LedgerSummary { id, entry_max } = self.ledgers[ledger];
        let verdict = check_last_body(id, entry_max, result, body);
        match self.deleted_verdict(id, verdict) {
            None => {}
            Some(Verdict::Ok) => {
                self.last_checked += 1;
                let body_entry = body_id(body, 8).unwrap_or(entry_max);
                self.above_log += u64::from(body_entry > entry_max);
            }
            Some(verdict) => self.problem(verdict),
        }
    }

    /// A read of a deleted ledger: the right bytes or missing are both answers it may get,
    /// recorded per ledger and left out of the live counts (`None`); the right bytes of one
    /// collected before are a resurrection. Wrong bytes and errors stay problems.
    fn deleted_verdict(&mut self, ledger_id: i64, verdict: Verdict) -> Option<Verdict> {
        let Some(deleted) = self.deleted.as_mut().filter(|d| d.contains(ledger_id)) else {
            return Some(verdict);
        };
        let readable = match verdict {
            Verdict::Ok => true,
            Verdict::Missing(_) => false,
            Verdict::Corrupt(_) | Verdict::Failed(_) | Verdict::Resurrected(_) => {
                return Some(verdict)
            }
        };
        let resurrected = deleted.record(ledger_id, readable);
        if readable {
            self.deleted_readable += 1;
        } else {
            self.deleted_missing += 1;
        }
        if resurrected {
            return Some(Verdict::Resurrected(format!(
                "ledger {ledger_id}: collected earlier (every read answered missing), and an \
                 entry reads back now"
            )));
        }
        None
    }

    fn problem(&mut self, verdict: Verdict) {
        let (counter, kind, message) = match verdict {
            Verdict::Ok => return,
            Verdict::Missing(message) => (&mut self.missing, "MISSING (data loss)", message),
            Verdict::Corrupt(message) => (&mut self.corrupt, "CORRUPT", message),
            Verdict::Failed(message) => (&mut self.failed, "ERROR", message),
            Verdict::Resurrected(message) => (&mut self.resurrected_reads, "RESURRECTED", message),
        };
        *counter += 1;
        let total = self.missing + self.corrupt + self.failed + self.resurrected_reads;
        if total <= PROBLEMS_PRINTED_MAX {
            eprintln!("reads: {kind}: {message}");
        }
        if total == PROBLEMS_PRINTED_MAX {
            eprintln!("reads: further problems are only counted");
        }
    }
}

/// The queue: runs of consecutive entries per ledger cut into pieces of `count_max`, in
/// rounds across ledgers so every connection stays busy (or, `in_turn`, one ledger after
/// another, as `--ledger` reads them), then the entry -1 checks.
fn work_queue(
    entries: &[LoggedEntry],
    ledgers: &[LedgerSummary],
    count_max: usize,
    in_turn: bool,
) -> VecDeque<Work> {
    let mut pieces: Vec<(usize, usize, Work)> = Vec::new();
    let mut index = 0;
    let mut ledger = 0;
    let mut round = 0;
    while index < entries.len() {
        if entries[index].ledger_id != ledgers[ledger].id {
            ledger += 1;
            round = 0;
        }
        let mut count = 1;
        while count < count_max
            && index + count < entries.len()
            && entries[index + count].ledger_id == entries[index].ledger_id
            && entries[index + count].entry_id == entries[index].entry_id + count as i64
        {
            count += 1;
        }
        pieces.push((
            round,
            ledger,
            Work::Entries {
                first: index,
                count,
            },
        ));
        round += 1;
        index += count;
    }
    if !in_turn {
        pieces.sort_by_key(|&(round, ledger, _)| (round, ledger));
    }
    let mut queue: VecDeque<Work> = pieces.into_iter().map(|(_, _, work)| work).collect();
    queue.extend((0..ledgers.len()).map(|ledger| Work::Last { ledger }));
    queue
}

fn body_id(body: &[u8], offset: usize) -> Option<i64> {
    let bytes = body.get(offset..offset + 8)?;
    Some(i64::from_be_bytes(bytes.try_into().expect("8 bytes")))
}

fn check_entry_body(entry: &LoggedEntry, result: i32, body: &[u8]) -> Verdict {
    let (ledger_id, entry_id) = (entry.ledger_id, entry.entry_id);
    let name = format!("ledger {ledger_id} entry {entry_id}");
    if result == code::ENOENTRY || result == code::ENOLEDGER {
        return Verdict::Missing(format!("{name}: {} for an acked entry", code_name(result)));
    }
    if result != code::EOK {
        return Verdict::Failed(format!("{name}: {} ({result})", code_name(result)));
    }
    if body_id(body, 0) != Some(ledger_id) || body_id(body, 8) != Some(entry_id) {
        return Verdict::Corrupt(format!("{name}: body carries other ids"));
    }
    let Ok(payload) = verify_entry_body_crc32c(body) else {
        return Verdict::Corrupt(format!("{name}: CRC32C digest of the body does not match"));
    };
    if payload.len() != entry.payload_len as usize {
        let length = payload.len();
        return Verdict::Corrupt(format!(
            "{name}: {length} payload bytes, logged {}",
            entry.payload_len
        ));
    }
    if crc32c::crc32c(payload) != entry.payload_crc32c {
        return Verdict::Corrupt(format!("{name}: payload CRC differs from the log"));
    }
    if !payload_matches(ledger_id, entry_id, payload) {
        return Verdict::Corrupt(format!("{name}: payload differs from the bytes written"));
    }
    Verdict::Ok
}

/// Entry -1 must be the highest logged entry or a later one (acked after the last log flush
/// of a killed writer), never an earlier one.
fn check_last_body(ledger_id: i64, entry_max: i64, result: i32, body: &[u8]) -> Verdict {
    let name = format!("ledger {ledger_id} entry -1");
    if result == code::ENOENTRY || result == code::ENOLEDGER {
        let code_text = code_name(result);
        return Verdict::Missing(format!(
            "{name}: {code_text}, but entry {entry_max} was acked"
        ));
    }
    if result != code::EOK {
        return Verdict::Failed(format!("{name}: {} ({result})", code_name(result)));
    }
    if body_id(body, 0) != Some(ledger_id) {
        return Verdict::Corrupt(format!("{name}: body carries another ledger id"));
    }
    if verify_entry_body_crc32c(body).is_err() {
        return Verdict::Corrupt(format!("{name}: CRC32C digest of the body does not match"));
    }
    match body_id(body, 8) {
        Some(highest) if highest >= entry_max => Verdict::Ok,
        highest => Verdict::Missing(format!(
            "{name}: highest entry {highest:?} is below the acked entry {entry_max}"
        )),
    }
}

#[cfg(test)]
mod tests;
