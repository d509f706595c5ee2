//! `ringlog-bench disk`: the physical floor. Queue depth 1, one O_DIRECT write linked to an
//! fdatasync per operation, on a preallocated, zero-filled file, through the engine's own
//! io_uring driver (so the floor and the journal pay the same submission costs).

use crate::report::Report;
use engine::disk::{BufferId, Disk, WriteSync};
use engine::ids::FileId;
use engine::uring::{Ring, UringDisk};
use engine::SegmentId;
use std::cell::RefCell;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// Flags of `ringlog-bench disk`.
#[derive(clap::Args, Debug)]
pub struct DiskArgs {
    /// Directory for the test file (on the disk you want to measure; not tmpfs).
    #[arg(long)]
    pub dir: PathBuf,
    /// Bytes per write, a multiple of 4096 (O_DIRECT). Default: 4096.
    #[arg(long, default_value_t = 4096)]
    pub size: usize,
    /// Seconds to measure after a 1 s warm-up. Default: 5.
    #[arg(long, default_value_t = 5)]
    pub seconds: u64,
    /// Size of the preallocated, zeroed file the writes cycle through. Default: 256 MiB.
    #[arg(long, default_value_t = 256 * 1024 * 1024)]
    pub file_size: u64,
    /// Use one RWF_DSYNC write instead of write + linked fdatasync.
    #[arg(long)]
    pub dsync: bool,
    /// Write the report as one JSON object to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// Runs the floor measurement and prints its report.
pub fn run(args: &DiskArgs) -> Result<(), String> {
    if args.size == 0 || args.size % 4096 != 0 || args.size > 8 * 1024 * 1024 {
        return Err("--size must be a multiple of 4096 between 4096 and 8 MiB".into());
    }
    let file_size = args.file_size / 4096 * 4096;
    if file_size < args.size as u64 * 2 {
        return Err("--file-size must hold at least two writes".into());
    }
    let dir = args
        .dir
        .join(format!("ringlog-disk-floor-{}", std::process::id()));
    let result = measure(args, &dir, file_size);
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

fn measure(args: &DiskArgs, dir: &std::path::Path, file_size: u64) -> Result<Report, String> {
    let ring = Rc::new(RefCell::new(
        Ring::new(64).map_err(|e| format!("io_uring: {e}"))?,
    ));
    let mut disk = UringDisk::open(ring.clone(), dir, true)
        .map_err(|error| format!("opening {}: {error}", dir.display()))?;
    let chunk = 8 * 1024 * 1024;
    disk.buffers_allocate(&[chunk]);
    // The floor's file is an ordinary segment file, as the journal's are.
    let segment = FileId::Segment(SegmentId(0));
    let buffer = BufferId(0);
    disk.file_create(segment, file_size)
        .map_err(|e| format!("creating file: {e}"))?;
    // Zero-fill and sync: no unwritten extents, so no write pays for metadata.
    let mut position = 0;
    while position < file_size {
        let length = (file_size - position).min(chunk as u64) as usize;
        disk.write_blocking(segment, position, buffer, length)
            .map_err(|e| e.to_string())?;
        position += length as u64;
    }
    disk.sync_blocking(segment).map_err(|e| e.to_string())?;
    let payload = disk.buffer_mut(buffer);
    for (index, byte) in payload.iter_mut().take(args.size).enumerate() {
        *byte = (index % 251) as u8 + 1;
    }
    let sync = if args.dsync {
        WriteSync::Dsync
    } else {
        WriteSync::LinkedFdatasync
    };
    let mut report = Report::new("disk");
    let warmup_end = Instant::now() + Duration::from_secs(1);
    let mut measure_start = None;
    let mut position = 0u64;
    let mut completions = Vec::new();
    loop {
        let now = Instant::now();
        if now >= warmup_end && measure_start.is_none() {
            measure_start = Some(now);
        }
        if measure_start.is_some_and(|start| now - start >= Duration::from_secs(args.seconds)) {
            break;
        }
        let start = Instant::now();
        disk.submit_write(0, segment, position, buffer, args.size, sync)
            .map_err(|error| format!("submit: {error:?}"))?;
        let expected = if args.dsync { 1 } else { 2 };
        let mut ok = true;
        let mut seen = 0;
        while seen < expected {
            ring.borrow_mut()
                .submit_and_wait(1)
                .map_err(|e| e.to_string())?;
            ring.borrow_mut().reap(&mut Vec::new());
            disk.poll(&mut completions);
            for completion in completions.drain(..) {
                seen += 1;
                ok &= completion.result >= 0;
            }
        }
        let latency_us = start.elapsed().as_micros() as u64;
        if measure_start.is_some() {
            if ok {
                report.count += 1;
                report.bytes += args.size as u64;
                let _ = report.latency_us.record(latency_us.max(1));
            } else {
                report.errors += 1;
            }
        }
        position += args.size as u64;
        if position + args.size as u64 > file_size {
            position = 0;
        }
    }
    report.elapsed = measure_start.map_or(Duration::ZERO, |start| start.elapsed());
    let mode = if args.dsync {
        "O_DIRECT write with RWF_DSYNC"
    } else {
        "O_DIRECT write + linked fdatasync"
    };
    report.notes.push(format!(
        "{mode}, QD1, {} B writes, preallocated zeroed file",
        args.size
    ));
    report.extra.push(("write_size", args.size as f64));
    Ok(report)
}
