//! One client thread of `writes` (and `churn`): its connections, the ledgers they carry and
//! the adds in flight, driven from one loop: refill up to the throttle, one send per
//! connection, wait, handle every ack. Nothing is allocated per add: payload, body and frames
//! reuse buffers, and each ledger keeps its adds in flight in a fixed ring indexed by entry id.
//!
//! With a `Rollover` (`churn`), each ledger slot writes `ledger_entries` entries, waits for
//! their acks (a closed ledger has nothing in flight, as a client's close), reports the
//! ledger closed and moves on to the slot's ledger of the next generation once its metadata
//! exists. Slot i of generation g writes ledger `base + g * ledger_count + i`.

use super::{code_name, BufferSizes, Connections};
use crate::report::Report;
use crate::verify_log::{payload_fill, LogBuffer, LogFile, LoggedEntry};
use hdrhistogram::Histogram;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Barrier, OnceLock};
use std::time::{Duration, Instant};
use wire::client::{encode_add_request, Response};
use wire::{code, encode_entry_body_crc32c, MASTER_KEY_BENCH_PASSWORD};

/// Thread t's part of the run, decided by `Plan::thread`.
pub(crate) struct ThreadPlan {
    pub index: usize,
    /// How long the loop polls before it sleeps waiting for responses.
    pub busy_poll: Duration,
    pub target: String,
    /// Global numbers of this thread's connections, in local index order.
    pub connection_labels: Vec<usize>,
    pub ledger_id_base: i64,
    pub ledger_count: usize,
    /// (ledger id, local connection index) of this thread's ledgers.
    pub ledgers: Vec<(i64, usize)>,
    pub throttle: usize,
    /// Open loop: nanoseconds between this thread's intended sends.
    pub period_ns: Option<f64>,
    pub entry_size: usize,
    pub warmup_ns: u64,
    pub send_end_ns: u64,
    /// Adds this thread sends at most (`--entries-max`; `u64::MAX` without it).
    pub sent_max: u64,
    pub core: Option<usize>,
    pub seed: u64,
    pub protocol: super::Protocol,
    /// v3 `writeFlags` of every add (DEFERRED_SYNC or 0).
    pub write_flags: i32,
    /// `churn`: ledgers roll over to new ids. `None`: each slot writes one ledger forever.
    pub rollover: Option<Rollover>,
    /// TLS (`--tls-ca`): every connection starts with START_TLS and a handshake.
    pub tls: Option<Arc<rustls::ClientConfig>>,
}

/// How ledger slots move on to new ledgers (`churn`).
#[derive(Clone)]
pub(crate) struct Rollover {
    /// Entries written to a ledger before its slot moves to the next generation.
    pub ledger_entries: i64,
    /// The highest generation whose ledgers' metadata exists. A slot never writes a ledger
    /// before its metadata exists: a collector round in between would delete it.
    pub generation_ready: Arc<AtomicU64>,
}

/// The id of slot `index`'s ledger in `generation`.
pub(crate) fn ledger_id_of(base: i64, ledger_count: usize, generation: u64, index: usize) -> i64 {
    // `Plan::new` checked that the ids of the generations a run can reach fit.
    let count = ledger_count as i64;
    base + i64::try_from(generation).expect("generation fits i64") * count + index as i64
}

/// What the threads share with `run`.
pub(crate) struct Shared {
    /// Set by a thread that failed: the others stop too.
    pub stop: AtomicBool,
    /// Time zero of the run, set once every thread has connected.
    pub start: OnceLock<Instant>,
    /// Every thread and `run` meet here after connecting, so the clock starts together.
    pub barrier: Barrier,
    pub log: Option<LogFile>,
}

/// What a thread tells `run` while it runs.
pub(crate) enum Message {
    /// Second `index` of the run (the last one may be shorter).
    Interval { index: u64, sample: Sample },
    /// The thread stopped; `last_index` was its last interval.
    Done { thread: usize, last_index: u64 },
    /// `churn`: every add of ledger `id` is answered; those acked with EOK hold `bytes` of
    /// payload, `errors` were answered with an error code.
    LedgerClosed { id: i64, bytes: u64, errors: u64 },
}

/// Acks of one thread in one interval.
pub(crate) struct Sample {
    pub start_ns: u64,
    pub end_ns: u64,
    pub count: u64,
    pub bytes: u64,
    pub errors: u64,
    pub histogram: Histogram<u64>,
}

/// A thread's totals at the end.
pub(crate) struct Outcome {
    /// Acked adds sent after the warm-up.
    pub count: u64,
    pub bytes: u64,
    /// Adds answered with an error code, whole run.
    pub errors: u64,
    pub histogram: Histogram<u64>,
    /// When the loop stopped (the last ack of the drain, normally).
    pub end_ns: u64,
    pub sent: u64,
    /// Adds never answered because the run stopped early.
    pub abandoned: u64,
    pub failure: Option<String>,
}

/// Runs one client thread to the end; a failure is returned inside the outcome so the
/// partial numbers still reach the report.
pub(crate) fn run_thread(plan: ThreadPlan, shared: &Shared, sender: Sender<Message>) -> Outcome {
    let connected = pin(plan.core).and_then(|()| {
        let sizes = BufferSizes {
            receive: RECEIVE_BUFFER_SIZE,
            pending_max: PENDING_SIZE_MAX,
            request_frame_max: plan.entry_size + ADD_FRAME_OVERHEAD,
        };
        Connections::open(
            &plan.target,
            &plan.connection_labels,
            sizes,
            plan.tls.as_ref(),
        )
        .map(|connections| connections.with_busy_poll(plan.busy_poll))
    });
    if connected.is_err() {
        shared.stop.store(true, Ordering::Relaxed);
    }
    // Every thread reaches the barrier, failed or not, or `run` would wait forever.
    shared.barrier.wait();
    let start = *shared.start.get_or_init(Instant::now);
    let mut worker = Worker::new(plan, start, sender);
    let result = match connected {
        Ok(mut connections) => {
            let result = worker.run_loop(&mut connections, shared);
            connections.close();
            result
        }
        Err(error) => Err(error),
    };
    if result.is_err() {
        shared.stop.store(true, Ordering::Relaxed);
    }
    worker.finish(shared.log.as_ref(), result.err())
}

/// Receive buffer per connection: 256 KiB holds about 9000 acks of 28 bytes.
const RECEIVE_BUFFER_SIZE: usize = 256 * 1024;

/// Frames waiting per connection before it counts as full: enough for a few hundred adds in
/// one send, little enough to stay in cache.
const PENDING_SIZE_MAX: usize = 512 * 1024;

/// ADD frame bytes besides the payload: length 4, header 4, key 20, body header 32, CRC 4.
const ADD_FRAME_OVERHEAD: usize = 160;

/// After sending stops, how long outstanding adds are waited for (BenchThroughputLatency
/// also waits 30 s).
const DRAIN_NS_MAX: u64 = 30_000_000_000;

/// How soon a loop with ledgers waiting for their metadata looks again.
const WAITING_RECHECK_NS: u64 = 1_000_000;

/// Error acks printed per thread; the rest are only counted.
const ERRORS_PRINTED_MAX: u32 = 5;

const SECOND_NS: u64 = 1_000_000_000;

#[derive(Clone, Copy, PartialEq, Eq)]
enum SlotState {
    Free,
    Pending,
    AckedOk,
    AckedFailed,
}

/// One add in flight.
#[derive(Clone, Copy)]
struct Slot {
    /// Send time, or intended send time in open loop, in ns since the start.
    sent_ns: u64,
    payload_crc32c: u32,
    state: SlotState,
}

/// One ledger: entry ids `oldest .. next_entry` are in flight, in `slots[entry & mask]`.
struct Ledger {
    id: i64,
    /// Global slot index (`id = base + generation * ledger_count + index`).
    index: usize,
    generation: u64,
    /// No entry beyond this one is sent (`Rollover::ledger_entries`, else unbounded).
    entries_limit: i64,
    /// Adds acked with EOK and with an error code.
    acked_ok: u64,
    acked_failed: u64,
    connection: usize,
    next_entry: i64,
    oldest: i64,
    /// Last entry of the prefix acked with EOK: the LAC the next add carries.
    lac: i64,
    /// Set by a failed add: the LAC cannot pass it, as in a real client's broken handle.
    lac_frozen: bool,
    /// Cumulative payload bytes of every entry sent (the body's ledgerLength).
    length: i64,
    slots: Vec<Slot>,
}

impl Ledger {
    fn has_room(&self) -> bool {
        self.next_entry - self.oldest < self.slots.len() as i64
            && self.next_entry < self.entries_limit
    }

    /// Every entry the limit allows was sent and answered: the ledger can close.
    fn finished(&self) -> bool {
        self.next_entry == self.entries_limit && self.oldest == self.next_entry
    }

    /// Moves the slot to its ledger of `generation`: a fresh ledger, nothing in flight.
    fn reopen(&mut self, id: i64, generation: u64) {
        assert!(self.finished(), "a ledger reopened with adds in flight");
        assert!(generation > self.generation);
        self.id = id;
        self.generation = generation;
        (self.next_entry, self.oldest, self.lac, self.length) = (0, 0, -1, 0);
        self.lac_frozen = false;
        (self.acked_ok, self.acked_failed) = (0, 0);
    }

    fn slot(&mut self, entry_id: i64) -> &mut Slot {
        let mask = self.slots.len() - 1;
        // Entry ids are non-negative, so the cast keeps the value.
        &mut self.slots[entry_id as usize & mask]
    }

    /// Marks an ack; `None` if the entry is not in flight here (a protocol violation).
    fn ack(&mut self, entry_id: i64, ok: bool) -> Option<Slot> {
        if entry_id < self.oldest || entry_id >= self.next_entry {
            return None;
        }
        let slot = self.slot(entry_id);
        if slot.state != SlotState::Pending {
            return None;
        }
        slot.state = if ok {
            SlotState::AckedOk
        } else {
            SlotState::AckedFailed
        };
        Some(*slot)
    }

    /// Frees the acked prefix and moves the LAC over it (acks may come out of order).
    fn advance(&mut self) {
        while self.oldest < self.next_entry {
            let entry_id = self.oldest;
            let slot = self.slot(entry_id);
            let state = slot.state;
            if state == SlotState::Pending {
                break;
            }
            slot.state = SlotState::Free;
            self.lac_frozen |= state == SlotState::AckedFailed;
            if !self.lac_frozen {
                self.lac = entry_id;
            }
            self.oldest += 1;
        }
    }
}

/// Per-ledger ring size: a fair share of the thread's throttle with headroom for the random
/// spread (the add moves to the next ledger if one ring is ever full), at most the throttle.
fn slots_per_ledger(throttle: usize, ledger_count: usize) -> usize {
    let share = throttle.div_ceil(ledger_count.max(1));
    throttle.min((share * 8).max(64)).max(1).next_power_of_two()
}

/// Counters of one interval or of the whole run.
struct Counters {
    count: u64,
    bytes: u64,
    errors: u64,
    histogram: Histogram<u64>,
}

impl Counters {
    fn new() -> Counters {
        Counters {
            count: 0,
            bytes: 0,
            errors: 0,
            histogram: Report::latency_histogram(),
        }
    }
}

struct Worker {
    thread: usize,
    start: Instant,
    ledgers: Vec<Ledger>,
    /// Global ledger index to local index, `u32::MAX` for ledgers of other threads.
    local_of: Vec<u32>,
    ledger_id_base: i64,
    rng: u64,
    outstanding: usize,
    throttle: usize,
    period_ns: Option<f64>,
    /// Open loop: adds scheduled so far; the next one is due at `scheduled * period_ns`.
    scheduled: u64,
    sent: u64,
    sent_max: u64,
    /// The last `fill` stopped because no ledger ring or connection had room.
    blocked: bool,
    entry_size: usize,
    payload: Vec<u8>,
    body: Vec<u8>,
    warmup_ns: u64,
    send_end_ns: u64,
    total: Counters,
    interval: Counters,
    interval_index: u64,
    log_buffer: LogBuffer,
    sender: Sender<Message>,
    errors_printed: u32,
    protocol: super::Protocol,
    write_flags: i32,
    rollover: Option<Rollover>,
    ledger_count: usize,
    /// Local indexes of finished ledgers waiting for their next generation's metadata;
    /// capacity for every ledger, so a push never allocates.
    waiting: Vec<usize>,
}

impl Worker {
    fn new(plan: ThreadPlan, start: Instant, sender: Sender<Message>) -> Worker {
        // `Plan` gives every connection, and so every thread, at least one ledger.
        assert!(!plan.ledgers.is_empty(), "a client thread without ledgers");
        let slot_count = slots_per_ledger(plan.throttle, plan.ledgers.len());
        let free = Slot {
            sent_ns: 0,
            payload_crc32c: 0,
            state: SlotState::Free,
        };
        let mut local_of = vec![u32::MAX; plan.ledger_count];
        let mut ledgers = Vec::with_capacity(plan.ledgers.len());
        let entries_limit = plan
            .rollover
            .as_ref()
            .map_or(i64::MAX, |rollover| rollover.ledger_entries);
        for (local, &(id, connection)) in plan.ledgers.iter().enumerate() {
            let global = usize::try_from(id - plan.ledger_id_base).expect("id from the base");
            local_of[global] = u32::try_from(local).expect("ledger count fits u32");
            ledgers.push(Ledger {
                id,
                index: global,
                generation: 0,
                entries_limit,
                acked_ok: 0,
                acked_failed: 0,
                connection,
                next_entry: 0,
                oldest: 0,
                lac: -1,
                lac_frozen: false,
                length: 0,
                slots: vec![free; slot_count],
            });
        }
        Worker {
            thread: plan.index,
            start,
            local_of,
            ledger_id_base: plan.ledger_id_base,
            rng: plan.seed | 1,
            outstanding: 0,
            throttle: plan.throttle,
            period_ns: plan.period_ns,
            scheduled: 0,
            sent: 0,
            sent_max: plan.sent_max,
            blocked: false,
            entry_size: plan.entry_size,
            payload: vec![0; plan.entry_size],
            body: Vec::with_capacity(plan.entry_size + ADD_FRAME_OVERHEAD),
            warmup_ns: plan.warmup_ns,
            send_end_ns: plan.send_end_ns,
            total: Counters::new(),
            interval: Counters::new(),
            interval_index: 0,
            log_buffer: LogBuffer::new(),
            sender,
            errors_printed: 0,
            protocol: plan.protocol,
            write_flags: plan.write_flags,
            waiting: Vec::with_capacity(ledgers.len()),
            rollover: plan.rollover,
            ledger_count: plan.ledger_count,
            ledgers,
        }
    }

    fn now_ns(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    fn run_loop(&mut self, connections: &mut Connections, shared: &Shared) -> Result<(), String> {
        let log = shared.log.as_ref();
        loop {
            let now = self.now_ns();
            self.tick(now, log)?;
            let sending = now < self.send_end_ns;
            if shared.stop.load(Ordering::Relaxed) || (!sending && self.outstanding == 0) {
                return Ok(());
            }
            if !sending && now >= self.send_end_ns + DRAIN_NS_MAX {
                return Err(format!(
                    "{} adds still unacknowledged 30 s after sending stopped",
                    self.outstanding
                ));
            }
            if sending {
                self.fill(connections, now);
                if self.sent >= self.sent_max {
                    // The count is reached: sending ends now, and the drain and its 30 s
                    // limit start from here as they would at the end of `--seconds`.
                    self.send_end_ns = now;
                }
            }
            let timeout = Duration::from_nanos(self.deadline_ns(now, sending) - now);
            let mut on_response =
                |index: usize, response: Response<'_>| self.on_response(index, response, log);
            connections
                .turn(timeout, &mut on_response)
                .map_err(|error| {
                    format!(
                        "{error}; {} adds were outstanding on this client thread",
                        self.outstanding
                    )
                })?;
        }
    }

    /// When the loop must look again even if nothing arrives: the next second, the end of
    /// sending or of the drain, and in open loop the next intended send.
    fn deadline_ns(&self, now: u64, sending: bool) -> u64 {
        let mut deadline = (self.interval_index + 1) * SECOND_NS;
        if sending {
            deadline = deadline.min(self.send_end_ns);
            let can_send = self.outstanding < self.throttle && !self.blocked;
            if let (Some(period), true) = (self.period_ns, can_send) {
                deadline = deadline.min(intended_ns(self.scheduled, period));
            }
            if !self.waiting.is_empty() {
                // Nothing may arrive to wake the loop when the metadata comes.
                deadline = deadline.min(now + WAITING_RECHECK_NS);
            }
        } else {
            deadline = deadline.min(self.send_end_ns + DRAIN_NS_MAX);
        }
        deadline.max(now)
    }

    /// Sends adds until the throttle is reached, no connection or ledger has room, or (open
    /// loop) no add is due yet.
    fn fill(&mut self, connections: &mut Connections, now: u64) {
        self.blocked = false;
        self.reopen_ready();
        while self.outstanding < self.throttle && self.sent < self.sent_max {
            let sent_ns = match self.period_ns {
                Some(period) => {
                    let due = intended_ns(self.scheduled, period);
                    if due > now || due >= self.send_end_ns {
                        return;
                    }
                    due
                }
                None => self.now_ns(),
            };
            let Some(local) = self.pick_ledger(connections) else {
                // A completion (ack or finished send) makes room; until then the loop waits
                // for one instead of spinning on the due time.
                self.blocked = true;
                return;
            };
            self.send_add(connections, local, sent_ns);
            self.scheduled += 1;
        }
    }

    /// A random ledger (xorshift64, seeded per thread); if its ring or connection is full,
    /// the next one that has room.
    fn pick_ledger(&mut self, connections: &Connections) -> Option<usize> {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        let count = self.ledgers.len();
        let first = (self.rng % count as u64) as usize;
        (0..count)
            .map(|step| (first + step) % count)
            .find(|&local| {
                let ledger = &self.ledgers[local];
                ledger.has_room() && connections.has_room(ledger.connection)
            })
    }

    fn send_add(&mut self, connections: &mut Connections, local: usize, sent_ns: u64) {
        let ledger = &mut self.ledgers[local];
        let entry_id = ledger.next_entry;
        payload_fill(ledger.id, entry_id, &mut self.payload);
        let payload_crc32c = crc32c::crc32c(&self.payload);
        ledger.length += self.entry_size as i64;
        self.body.clear();
        let (id, lac, length) = (ledger.id, ledger.lac, ledger.length);
        encode_entry_body_crc32c(&mut self.body, id, entry_id, lac, length, &self.payload);
        let frames = connections.pending(ledger.connection);
        match self.protocol {
            super::Protocol::V2 => {
                encode_add_request(frames, 0, &MASTER_KEY_BENCH_PASSWORD, &self.body);
            }
            super::Protocol::V3 => {
                let fields = wire::client::v3::AddRequestFields {
                    ledger_id: id,
                    entry_id,
                    master_key: &MASTER_KEY_BENCH_PASSWORD,
                    body: &self.body,
                    write_flags: self.write_flags,
                    recovery: false,
                };
                // Responses are matched by (ledger, entry), so the txn id is only a label.
                wire::client::v3::encode_add_request(frames, self.sent, &fields);
            }
        }
        let slot = ledger.slot(entry_id);
        assert!(
            slot.state == SlotState::Free,
            "ring slot reused while in flight"
        );
        *slot = Slot {
            sent_ns,
            payload_crc32c,
            state: SlotState::Pending,
        };
        ledger.next_entry += 1;
        self.outstanding += 1;
        self.sent += 1;
    }

    fn on_response(
        &mut self,
        connection: usize,
        response: Response<'_>,
        log: Option<&LogFile>,
    ) -> Result<(), String> {
        let Response::Add {
            code: result,
            ledger_id,
            entry_id,
            ..
        } = response
        else {
            return Err("the server sent a response that is not an ADD".into());
        };
        let local = self.local_ledger(ledger_id, connection)?;
        let ledger = &mut self.ledgers[local];
        let Some(slot) = ledger.ack(entry_id, result == code::EOK) else {
            return Err(format!(
                "ack for ledger {ledger_id} entry {entry_id}, not in flight"
            ));
        };
        ledger.advance();
        if result == code::EOK {
            ledger.acked_ok += 1;
        } else {
            ledger.acked_failed += 1;
        }
        let finished = ledger.finished();
        if finished {
            self.close(local);
        }
        assert!(self.outstanding > 0);
        self.outstanding -= 1;
        if result != code::EOK {
            self.failed(ledger_id, entry_id, result);
            return Ok(());
        }
        let latency_us = (self.now_ns().saturating_sub(slot.sent_ns) / 1000).max(1);
        let bytes = self.entry_size as u64;
        self.interval.count += 1;
        self.interval.bytes += bytes;
        self.interval.histogram.saturating_record(latency_us);
        if slot.sent_ns >= self.warmup_ns {
            self.total.count += 1;
            self.total.bytes += bytes;
            self.total.histogram.saturating_record(latency_us);
        }
        if let Some(file) = log {
            let payload_len = u32::try_from(self.entry_size).expect("entry size < frame max");
            let payload_crc32c = slot.payload_crc32c;
            let entry = LoggedEntry {
                ledger_id,
                entry_id,
                payload_crc32c,
                payload_len,
            };
            self.log_buffer.push(file, &entry)?;
        }
        Ok(())
    }

    /// The local index of an acked ledger, checking that it is the slot's current ledger and
    /// belongs to this connection.
    fn local_ledger(&self, ledger_id: i64, connection: usize) -> Result<usize, String> {
        let local = usize::try_from(ledger_id.wrapping_sub(self.ledger_id_base))
            .ok()
            .and_then(|global| self.local_of.get(global % self.ledger_count))
            .filter(|&&local| local != u32::MAX)
            .map(|&local| local as usize);
        match local {
            Some(local)
                if self.ledgers[local].id == ledger_id
                    && self.ledgers[local].connection == connection =>
            {
                Ok(local)
            }
            _ => Err(format!(
                "ack for ledger {ledger_id}, never sent on this connection"
            )),
        }
    }

    /// A finished ledger: reported closed, then reopened as the next generation's ledger
    /// if its metadata exists, else left waiting for it.
    fn close(&mut self, local: usize) {
        let ledger = &self.ledgers[local];
        let closed = Message::LedgerClosed {
            id: ledger.id,
            bytes: ledger.acked_ok * self.entry_size as u64,
            errors: ledger.acked_failed,
        };
        // `run` outlives every thread; a send can only fail if it panicked.
        let _ = self.sender.send(closed);
        assert!(self.waiting.len() < self.waiting.capacity());
        self.waiting.push(local);
        self.reopen_ready();
    }

    /// Reopens every waiting ledger whose next generation's metadata exists.
    fn reopen_ready(&mut self) {
        let Some(rollover) = &self.rollover else {
            return;
        };
        if self.waiting.is_empty() {
            return;
        }
        let ready = rollover.generation_ready.load(Ordering::Acquire);
        let (base, count) = (self.ledger_id_base, self.ledger_count);
        let ledgers = &mut self.ledgers;
        self.waiting.retain(|&local| {
            let ledger = &mut ledgers[local];
            let generation = ledger.generation + 1;
            if generation > ready {
                return true;
            }
            ledger.reopen(
                ledger_id_of(base, count, generation, ledger.index),
                generation,
            );
            false
        });
    }

    fn failed(&mut self, ledger_id: i64, entry_id: i64, result: i32) {
        self.interval.errors += 1;
        self.total.errors += 1;
        if self.errors_printed < ERRORS_PRINTED_MAX {
            self.errors_printed += 1;
            let name = code_name(result);
            eprintln!("writes: ledger {ledger_id} entry {entry_id}: {name} ({result})");
            if self.errors_printed == ERRORS_PRINTED_MAX {
                eprintln!(
                    "writes: thread {}: further errors are only counted",
                    self.thread
                );
            }
        }
    }

    /// Reports every second that has passed, and flushes the verify log once per second.
    fn tick(&mut self, now: u64, log: Option<&LogFile>) -> Result<(), String> {
        let mut ticked = false;
        while now >= (self.interval_index + 1) * SECOND_NS {
            self.send_interval((self.interval_index + 1) * SECOND_NS);
            self.interval_index += 1;
            ticked = true;
        }
        match (ticked, log) {
            (true, Some(file)) => self.log_buffer.flush(file),
            _ => Ok(()),
        }
    }

    fn send_interval(&mut self, end_ns: u64) {
        let sample = Sample {
            start_ns: self.interval_index * SECOND_NS,
            end_ns,
            count: self.interval.count,
            bytes: self.interval.bytes,
            errors: self.interval.errors,
            histogram: self.interval.histogram.clone(),
        };
        self.interval.histogram.reset();
        (
            self.interval.count,
            self.interval.bytes,
            self.interval.errors,
        ) = (0, 0, 0);
        // `run` outlives every thread; a send can only fail if it panicked.
        let _ = self.sender.send(Message::Interval {
            index: self.interval_index,
            sample,
        });
    }

    /// Last partial second, `Done`, the final log flush, and the totals.
    fn finish(mut self, log: Option<&LogFile>, mut failure: Option<String>) -> Outcome {
        let end_ns = self.now_ns();
        if end_ns > self.interval_index * SECOND_NS {
            self.send_interval(end_ns);
        }
        let done = Message::Done {
            thread: self.thread,
            last_index: self.interval_index,
        };
        let _ = self.sender.send(done);
        if let Some(file) = log {
            if let Err(error) = self.log_buffer.flush(file) {
                failure.get_or_insert(error);
            }
        }
        Outcome {
            count: self.total.count,
            bytes: self.total.bytes,
            errors: self.total.errors,
            histogram: self.total.histogram,
            end_ns,
            sent: self.sent,
            abandoned: self.outstanding as u64,
            failure: failure.map(|error| format!("client thread {}: {error}", self.thread)),
        }
    }
}

/// Open loop: when add number `scheduled` of this thread is due, in ns since the start.
fn intended_ns(scheduled: u64, period_ns: f64) -> u64 {
    (scheduled as f64 * period_ns) as u64
}

/// Pins the calling thread to `core`, if one was asked for.
fn pin(core: Option<usize>) -> Result<(), String> {
    match core {
        Some(id) if !core_affinity::set_for_current(core_affinity::CoreId { id }) => {
            Err(format!("cannot pin a client thread to core {id}"))
        }
        _ => Ok(()),
    }
}
