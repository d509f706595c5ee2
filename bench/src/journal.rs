//! `ringlog-bench journal`: drives the engine in-process (no network) with N appends always
//! outstanding and measures staging-to-durable latency, throughput and batch size.

use crate::report::Report;
use engine::journal::{AddOptions, Event, Journal};
use engine::uring::{PollEnd, Ring, UringDisk};
use engine::{AddError, Config, EntryId, LedgerId, SyncMode};
use std::cell::RefCell;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// Flags of `ringlog-bench journal`.
#[derive(clap::Args, Debug)]
pub struct JournalArgs {
    /// Directory for the journal (a fresh subdirectory is created and removed).
    #[arg(long)]
    pub dir: PathBuf,
    /// Bytes per entry body. Default: 1024.
    #[arg(long, default_value_t = 1024)]
    pub entry_size: usize,
    /// Appends kept outstanding at all times (closed loop). Default: 1.
    #[arg(long, default_value_t = 1)]
    pub outstanding: usize,
    /// Seconds to measure after a 1 s warm-up. Default: 5.
    #[arg(long, default_value_t = 5)]
    pub seconds: u64,
    /// Commits in flight (engine default 2).
    #[arg(long, default_value_t = 2)]
    pub commits_in_flight: usize,
    /// How commits become durable, as `ringlog serve --sync-mode`: `dsync` (one RWF_DSYNC
    /// write) or `linked-fdatasync` (the write linked to an fdatasync). Default: dsync, the
    /// server's default.
    #[arg(long, value_enum, default_value_t = SyncModeArg::Dsync)]
    pub sync_mode: SyncModeArg,
    /// Segment size in bytes. Default: the server's (256 MiB).
    #[arg(long, default_value_t = engine::constants::SEGMENT_SIZE_DEFAULT)]
    pub segment_size: u64,
    /// Zero-fill each new segment before use (`true`), or leave it as fallocated, unwritten
    /// extents (`false`), as `ringlog serve --segment-zero-fill`. Unwritten extents make each
    /// commit's fdatasync also commit the extent conversion. Default: the server's default.
    #[arg(long, default_value_t = engine::config::SEGMENT_ZERO_FILL_DEFAULT, action = clap::ArgAction::Set)]
    pub segment_zero_fill: bool,
    /// Zero ahead of the write head while the journal is not busy, as `ringlog serve
    /// --zero-ahead`. Default: true.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub zero_ahead: bool,
    /// Microseconds the loop polls the ring before it sleeps waiting for a completion, as
    /// `ringlog serve --busy-poll-us` (same default), so this measures the engine as the
    /// server drives it. 0 always sleeps, as `ringlog-bench disk` does. Default: 200.
    #[arg(long, default_value_t = 200)]
    pub busy_poll_us: u64,
    /// Write the report as one JSON object to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// `--sync-mode` values (the engine's `SyncMode`).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncModeArg {
    /// One O_DIRECT write with RWF_DSYNC.
    Dsync,
    /// One O_DIRECT write linked to an fdatasync.
    LinkedFdatasync,
}

/// Runs the in-process journal benchmark and prints its report.
pub fn run(args: &JournalArgs) -> Result<(), String> {
    if args.outstanding == 0 || args.outstanding > 1_000_000 {
        return Err("--outstanding must be between 1 and 1000000".into());
    }
    if args.busy_poll_us > engine::constants::BUSY_POLL_US_MAX {
        return Err(format!(
            "--busy-poll-us must be at most {}",
            engine::constants::BUSY_POLL_US_MAX
        ));
    }
    let dir = args
        .dir
        .join(format!("ringlog-journal-bench-{}", std::process::id()));
    let result = measure(args, &dir);
    let _ = std::fs::remove_dir_all(&dir);
    let report = result?;
    report.print();
    if let Some(path) = &args.json {
        report
            .write_json(path)
            .map_err(|error| format!("writing {}: {error}", path.display()))?;
    }
    Ok(())
}

struct Loop {
    ring: Rc<RefCell<Ring>>,
    journal: Journal<UringDisk>,
    started: Vec<Option<Instant>>,
    events: Vec<Event>,
    next_entry: i64,
    outstanding: usize,
}

fn measure(args: &JournalArgs, dir: &std::path::Path) -> Result<Report, String> {
    let ring = Rc::new(RefCell::new(
        Ring::new(1024).map_err(|e| format!("io_uring: {e}"))?,
    ));
    let disk = UringDisk::open(ring.clone(), dir, true).map_err(|e| e.to_string())?;
    let config = Config {
        segment_size: args.segment_size,
        commits_in_flight_max: args.commits_in_flight,
        segment_zero_fill: args.segment_zero_fill,
        zero_ahead: args.zero_ahead,
        sync_mode: match args.sync_mode {
            SyncModeArg::Dsync => SyncMode::Dsync,
            SyncModeArg::LinkedFdatasync => SyncMode::LinkedFdatasync,
        },
        ..Config::default()
    };
    let journal = Journal::open(disk, config).map_err(|error| error.to_string())?;
    let mut state = Loop {
        ring,
        journal,
        started: vec![None; args.outstanding.next_power_of_two()],
        events: Vec::with_capacity(1 << 16),
        next_entry: 0,
        outstanding: 0,
    };
    let body = vec![0x5Au8; args.entry_size];
    let mut report = Report::new("journal");
    let warmup_end = Instant::now() + Duration::from_secs(1);
    let mut measure_start: Option<Instant> = None;
    let (commits_at_start, entries_at_start) = (0u64, 0u64);
    let mut baseline = (commits_at_start, entries_at_start);
    loop {
        let now = Instant::now();
        if measure_start.is_none() && now >= warmup_end {
            measure_start = Some(now);
            let stats = state.journal.stats();
            baseline = (stats.commits_durable, stats.entries_durable);
        }
        if measure_start.is_some_and(|start| now - start >= Duration::from_secs(args.seconds)) {
            break;
        }
        fill(&mut state, args.outstanding, &body)?;
        state.journal.submit();
        let busy_poll = Duration::from_micros(args.busy_poll_us);
        let polled = !busy_poll.is_zero()
            && state
                .ring
                .borrow_mut()
                .busy_poll(busy_poll)
                .map_err(|e| e.to_string())?
                == PollEnd::Ready;
        if !polled {
            state
                .ring
                .borrow_mut()
                .submit_and_wait(1)
                .map_err(|e| e.to_string())?;
        }
        state.ring.borrow_mut().reap(&mut Vec::new());
        state.journal.poll();
        drain(
            &mut state,
            &mut report,
            measure_start.is_some(),
            args.entry_size,
        )?;
    }
    report.elapsed = measure_start.map_or(Duration::ZERO, |start| start.elapsed());
    let stats = state.journal.stats();
    let commits = stats.commits_durable - baseline.0;
    let entries = stats.entries_durable - baseline.1;
    let batch_mean = if commits == 0 {
        0.0
    } else {
        entries as f64 / commits as f64
    };
    report.extra.push(("batch_entries_mean", batch_mean));
    report.extra.push((
        "commits_per_sec",
        commits as f64 / report.elapsed.as_secs_f64().max(1e-9),
    ));
    report.extra.push(("outstanding", args.outstanding as f64));
    report.extra.push(("entry_size", args.entry_size as f64));
    let mode = match args.sync_mode {
        SyncModeArg::Dsync => "RWF_DSYNC write",
        SyncModeArg::LinkedFdatasync => "write + linked fdatasync",
    };
    report.notes.push(format!(
        "engine in-process, {} outstanding, {} B entries, {mode}, {} commits in flight, \
         busy-poll {} µs",
        args.outstanding, args.entry_size, args.commits_in_flight, args.busy_poll_us
    ));
    Ok(report)
}

fn fill(state: &mut Loop, outstanding: usize, body: &[u8]) -> Result<(), String> {
    let mask = state.started.len() - 1;
    while state.outstanding < outstanding {
        let entry = state.next_entry;
        let token = entry as u64;
        let options = AddOptions::default();
        match state.journal.add(
            token,
            LedgerId(1),
            EntryId(entry),
            &[0u8; 20],
            body,
            options,
        ) {
            Ok(()) => {
                state.started[token as usize & mask] = Some(Instant::now());
                state.next_entry += 1;
                state.outstanding += 1;
            }
            Err(AddError::StagingFull) => return Ok(()),
            Err(error) => return Err(format!("append failed: {error:?}")),
        }
    }
    Ok(())
}

fn drain(
    state: &mut Loop,
    report: &mut Report,
    measuring: bool,
    size: usize,
) -> Result<(), String> {
    let mask = state.started.len() - 1;
    state.journal.events_swap(&mut state.events);
    for event in state.events.drain(..) {
        let (token, ok) = match event {
            Event::Durable { token } | Event::Written { token } => (token, true),
            Event::Failed { token } => (token, false),
            Event::ReadDone { .. } | Event::Damage(_) => continue,
        };
        state.outstanding -= 1;
        let started = state.started[token as usize & mask]
            .take()
            .expect("token was staged");
        if !measuring {
            continue;
        }
        if ok {
            report.count += 1;
            report.bytes += size as u64;
            let _ = report
                .latency_us
                .record((started.elapsed().as_micros() as u64).max(1));
        } else {
            report.errors += 1;
        }
    }
    if state.journal.is_poisoned() {
        return Err("journal poisoned: a write or fdatasync failed".into());
    }
    Ok(())
}
