//! What the scrubber's buffer holds, checked (`segment_check.rs`'s rules), and what to read
//! next: one segment's phases, index file first, records second, and the second pass over the
//! slot pages that names the entries of damaged records.

use super::{DamageFound, DamagedRange, Job, Next, Phase};
use crate::constants::{
    RECORD_HEADER_SIZE, SCRUB_DAMAGED_RANGES_MAX, SCRUB_DAMAGE_EVENTS_PER_READ_MAX,
    SCRUB_LEARNED_MAX, SCRUB_READ_SIZE, SECTOR_SIZE, SEGMENT_HEADER_SIZE,
};
use crate::digest::{digest_check, DigestCheck, DigestKind};
use crate::disk::Disk;
use crate::ids::{EntryId, FileId, LedgerId};
use crate::index_file::{self, Run, RUN_TABLE_OFFSET};
use crate::journal::{Event, Journal};
use crate::record::RecordError;
use crate::record::RecordKind;
use crate::segment::decode_segment_header;
use crate::segment_check::{
    index_header_check, index_page_check, index_runs_check, Chunk, Damage, Found, RecordScan,
    RunsHeld, ScanStep, WalkBad, WalkEnd,
};
use crate::stdx::{align_up_u64, to_u64, to_usize};

impl<D: Disk> Journal<D> {
    /// Checks what the buffer holds and says what to read next.
    pub(super) fn scrub_next(&mut self) -> Next {
        let mut damage_events = 0usize;
        let no_runs = RunsHeld::default();
        let Journal {
            scrub,
            disk,
            stats,
            events,
            index,
            ..
        } = self;
        let job = scrub.job.as_mut().expect("a job runs");
        let held = &disk.buffer(scrub.buffer)[..job.chunk_length];
        let mut report = |found: Found, file: FileId, entry: Option<(LedgerId, EntryId)>| {
            // A damaged record whose entry a repair has since written again elsewhere: reads
            // find the new copy first, so the old damage no longer matters.
            let superseded = match (file, entry) {
                (FileId::Segment(segment) | FileId::Index(segment), Some((ledger, entry))) => {
                    !index.entry_current_in(ledger, entry, segment)
                }
                _ => false,
            };
            if superseded {
                stats.scrub_damage_superseded += 1;
                return;
            }
            match (found.1, entry) {
                // An entry a damaged page made unreadable: the page is counted once, alone.
                (Damage::IndexPage { .. }, Some(_)) => {}
                (
                    Damage::IndexFile(_)
                    | Damage::IndexGeneration { .. }
                    | Damage::IndexPage { .. }
                    | Damage::IndexPagePadding { .. }
                    | Damage::IndexSlots,
                    _,
                ) => stats.scrub_damage_index += 1,
                _ => stats.scrub_damage_records += 1,
            }
            // Every finding that names an entry is reported: each is a repair to ask for.
            // Others are capped per read (a segment of garbage would flood the log).
            if entry.is_some() || damage_events < SCRUB_DAMAGE_EVENTS_PER_READ_MAX {
                damage_events += usize::from(entry.is_none());
                events.push(Event::Damage(DamageFound {
                    file,
                    position: found.0,
                    damage: found.1,
                    entry,
                }));
            }
        };
        let index_file = FileId::Index(job.segment);
        let segment_file = FileId::Segment(job.segment);
        loop {
            let chunk = if job.chunk_file.is_some() {
                Chunk {
                    bytes: held,
                    start: job.chunk_start,
                }
            } else {
                Chunk::EMPTY
            };
            match job.phase {
                Phase::IndexHead => {
                    let table_end = job.slot_table_offset;
                    let wanted = to_usize(table_end.min(to_u64(scrub_buffer_size())));
                    if job.chunk_file != Some(index_file) || chunk.start != 0 {
                        return Next::Read {
                            file: index_file,
                            start: 0,
                            length: wanted,
                        };
                    }
                    let sector = &chunk.bytes[..SECTOR_SIZE.min(chunk.bytes.len())];
                    match index_header_check(
                        sector,
                        job.segment,
                        job.index_size,
                        job.generation,
                        job.file_size,
                    ) {
                        Ok(header) => job.header = Some(header),
                        Err(found) => {
                            report(found, index_file, None);
                            // No trustworthy end of data: the records wait for a rebuilt index.
                            return Next::Done;
                        }
                    }
                    let header = job.header.expect("set");
                    if to_u64(chunk.bytes.len()) >= table_end {
                        let table = &chunk.bytes[to_usize(RUN_TABLE_OFFSET)..to_usize(table_end)];
                        match index_runs_check(table, &header) {
                            Ok(runs) => {
                                let held = RunsHeld::new(&runs, |ledger| index.is_deleted(ledger));
                                job.held_expected = Some(held);
                                job.runs = runs;
                            }
                            Err(found) => report(found, index_file, None),
                        }
                    }
                    job.phase = Phase::IndexPages { page: 0 };
                }
                Phase::IndexPages { page } => {
                    if page >= job.pages {
                        let expected = job.held_expected.as_ref().map(|held| held.expected);
                        if expected.is_some_and(|expected| expected != job.held) {
                            report((None, Damage::IndexSlots), index_file, None);
                        }
                        job.phase = Phase::SegmentHeader;
                        continue;
                    }
                    let page_bytes = match slot_page(job, chunk, index_file, page) {
                        Ok(page_bytes) => page_bytes,
                        Err(read) => return read,
                    };
                    let header = job.header.expect("pages follow the header");
                    let counted = job.held_expected.as_ref().unwrap_or(&no_runs);
                    match index_page_check(page_bytes, page, &header, counted) {
                        Ok(count) => job.held += count,
                        Err(found @ (_, Damage::IndexPagePadding { .. })) => {
                            // Its slots are sound (counted) and read as before.
                            job.held_expected = None;
                            report(found, index_file, None);
                        }
                        Err(found) => {
                            // The count cannot be compared any more: this page is reported.
                            job.held_expected = None;
                            report(found, index_file, None);
                            // Reads of the entries whose slots the page holds fail now: each
                            // is named, so a repair writes it again elsewhere, where the index
                            // finds it first (the run table in memory says which they are;
                            // ids the runs span but this bookie never held are the
                            // repairer's to tell apart).
                            let slots = page * to_u64(index_file::PAGE_SLOTS)
                                ..((page + 1) * to_u64(index_file::PAGE_SLOTS))
                                    .min(header.slot_count);
                            for slot in slots {
                                if let Some(entry) = slot_entry(&job.runs, slot) {
                                    report(found, index_file, Some(entry));
                                }
                            }
                        }
                    }
                    job.phase = Phase::IndexPages { page: page + 1 };
                }
                Phase::SegmentHeader => {
                    if job.chunk_file != Some(segment_file) || chunk.start != 0 {
                        let length = job.file_size.min(to_u64(SCRUB_READ_SIZE));
                        return Next::Read {
                            file: segment_file,
                            start: 0,
                            length: to_usize(length),
                        };
                    }
                    let sector = &chunk.bytes[..SECTOR_SIZE.min(chunk.bytes.len())];
                    let header = decode_segment_header(sector, job.segment)
                        .ok()
                        .filter(|header| header.generation == job.generation);
                    match header {
                        // Where the segment's padding ends depends on its commit block.
                        Some(header) => {
                            job.scan = RecordScan::new(
                                job.segment,
                                job.file_size,
                                to_u64(SEGMENT_HEADER_SIZE),
                                header.commit_block,
                            );
                        }
                        None => report((Some(0), Damage::SegmentHeader), segment_file, None),
                    }
                    job.phase = Phase::Records;
                }
                Phase::Records => {
                    let header = job.header.expect("records follow the index");
                    let data_end = header.data_end;
                    let chunk = if job.chunk_file == Some(segment_file) {
                        chunk
                    } else {
                        Chunk::EMPTY
                    };
                    let end = match job.scan.next_step(chunk) {
                        ScanStep::Need { start, length } => {
                            return Next::Read {
                                file: segment_file,
                                start,
                                length: scrub_read_length(start, length, job.file_size),
                            };
                        }
                        ScanStep::Record(record) if record.position.0 < data_end => {
                            let entry = (record.header.kind == RecordKind::Entry)
                                .then_some((record.header.ledger, record.header.entry));
                            let chained = job.chain.record(&record);
                            let record_start = job.record_end;
                            job.record_end = record.position.0 + record.size;
                            if let Err((_, Damage::Sequence { expected, found })) = chained {
                                // Records missing before this sound one (a lost sector the
                                // scan took for padding): the index names them.
                                if found > expected {
                                    let gap = (record_start, record.position.0);
                                    if let Some(found) = job.damage_range_closed(gap) {
                                        report(found, segment_file, None);
                                    }
                                    continue;
                                }
                            }
                            if let Err(found) = chained {
                                job.records_damaged = true;
                                report(found, segment_file, entry);
                            } else if let Some((ledger, _)) = entry {
                                // Sound as stored: is it what the client sent?
                                let start =
                                    to_usize(record.position.0 - chunk.start) + RECORD_HEADER_SIZE;
                                let body = &chunk.bytes
                                    [start..start + record.header.payload_size as usize];
                                let learned = job.learned.iter().position(|l| l.0 == ledger);
                                let (kind, tries) = match learned {
                                    Some(at) => (job.learned[at].1, job.learned[at].2),
                                    None => index
                                        .ledger(ledger)
                                        .map_or((DigestKind::Unverifiable, 0), |state| {
                                            (state.digest, state.digest_tries)
                                        }),
                                };
                                let (check, kind_now, tries_now) = digest_check(kind, tries, body);
                                if (kind_now, tries_now) != (kind, tries) {
                                    match learned {
                                        Some(at) => job.learned[at] = (ledger, kind_now, tries_now),
                                        None if job.learned.len() < SCRUB_LEARNED_MAX => {
                                            job.learned.push((ledger, kind_now, tries_now));
                                        }
                                        None => {}
                                    }
                                }
                                if check == DigestCheck::Mismatch {
                                    stats.scrub_damage_digests += 1;
                                    let found = (Some(record.position.0), Damage::Digest);
                                    report(found, segment_file, entry);
                                }
                            }
                            continue;
                        }
                        ScanStep::Record(record) => record.position.0,
                        ScanStep::End(WalkEnd::Clean { position }) if position.0 >= data_end => {
                            position.0
                        }
                        ScanStep::End(WalkEnd::Bad { position, .. }) if position.0 >= data_end => {
                            position.0
                        }
                        // Zeros at a sector boundary where the index says data is (a zeroed
                        // sector) are damage like a bad record, and the records past them are
                        // still checked.
                        ScanStep::End(WalkEnd::Clean { position }) => {
                            let reason = WalkBad::Record(RecordError::Zero);
                            if let Some(found) = job.damage_range_open(position.0, reason) {
                                report(found, segment_file, None);
                            }
                            continue;
                        }
                        ScanStep::End(WalkEnd::Bad { position, reason }) => {
                            if let Some(found) = job.damage_range_open(position.0, reason) {
                                report(found, segment_file, None);
                            }
                            continue;
                        }
                    };
                    if !job.records_damaged {
                        if let Err(found) = job.chain.index_agrees(&header, end) {
                            report(found, segment_file, None);
                        }
                    } else if job
                        .chain
                        .sequence_last()
                        .is_some_and(|last| last < header.sequence_last)
                    {
                        // Records missing after the last sound one (a lost sector at the
                        // data's end reads as the commit's padding): the index names them.
                        let gap = (job.record_end, data_end.max(job.record_end));
                        if let Some(found) = job.damage_range_closed(gap) {
                            report(found, segment_file, None);
                        }
                    }
                    if job.damaged.is_empty() {
                        return Next::Done;
                    }
                    job.phase = Phase::Identify { page: 0 };
                }
                Phase::Resync { from } => {
                    let data_end = job.header.expect("records follow the index").data_end;
                    let chunk = if job.chunk_file == Some(segment_file) {
                        chunk
                    } else {
                        Chunk::EMPTY
                    };
                    match job.scan.resync(chunk, from, data_end) {
                        Ok(found) => {
                            let to = found.unwrap_or(data_end);
                            job.record_end = to;
                            if let Some(range) = job.damaged.last_mut().filter(|r| r.to == u64::MAX)
                            {
                                range.to = to;
                            }
                            job.phase = match found {
                                Some(_) => Phase::Records,
                                None if job.damaged.is_empty() => return Next::Done,
                                None => Phase::Identify { page: 0 },
                            };
                        }
                        Err(need) => {
                            job.phase = Phase::Resync { from: need.from };
                            return Next::Read {
                                file: segment_file,
                                start: need.start,
                                length: scrub_read_length(need.start, need.length, job.file_size),
                            };
                        }
                    }
                }
                Phase::Identify { page } => {
                    if page >= job.pages {
                        // Damage where the index places no entry: padding, or bytes no read
                        // uses. Reported as it is, with nothing to repair.
                        for range in job.damaged.iter().filter(|range| !range.identified) {
                            let found = (Some(range.from), Damage::Record(range.reason));
                            report(found, segment_file, None);
                        }
                        return Next::Done;
                    }
                    let page_bytes = match slot_page(job, chunk, index_file, page) {
                        Ok(page_bytes) => page_bytes,
                        Err(read) => return read,
                    };
                    // A damaged page was reported already: its entries cannot be told.
                    if index_file::page_verify(page_bytes) {
                        for (slot, position) in page_positions(page_bytes, page) {
                            let Some(range) = job
                                .damaged
                                .iter_mut()
                                .find(|range| (range.from..range.to).contains(&position))
                            else {
                                continue;
                            };
                            range.identified = true;
                            let reason = range.reason;
                            if let Some(entry) = slot_entry(&job.runs, slot) {
                                let found = (Some(position), Damage::Record(reason));
                                report(found, segment_file, Some(entry));
                            }
                        }
                    }
                    job.phase = Phase::Identify { page: page + 1 };
                }
            }
        }
    }
}

impl Job {
    /// Damage at `position` where a record should start: the records stop being chained, a
    /// damaged range opens (its entries named from the index later), and the scan looks for
    /// the next sound record. Returns a finding to report now when the range cannot be kept
    /// (no runs to name entries with, or `SCRUB_DAMAGED_RANGES_MAX` reached).
    fn damage_range_open(&mut self, position: u64, reason: WalkBad) -> Option<Found> {
        self.records_damaged = true;
        self.chain.break_chain();
        self.phase = Phase::Resync { from: position + 8 };
        if self.runs.is_empty() || self.damaged.len() >= SCRUB_DAMAGED_RANGES_MAX {
            return Some((Some(position), Damage::Record(reason)));
        }
        self.damaged.push(DamagedRange {
            from: self.record_end.min(position),
            to: u64::MAX,
            reason,
            identified: false,
        });
        None
    }

    /// Records missing in `[from, to)`: a damaged range whose end is known (the sound record
    /// at `to`); the scan goes on. Returns a finding to report now when the range cannot be
    /// kept.
    fn damage_range_closed(&mut self, (from, to): (u64, u64)) -> Option<Found> {
        self.records_damaged = true;
        let reason = WalkBad::Record(RecordError::Zero);
        if self.runs.is_empty() || self.damaged.len() >= SCRUB_DAMAGED_RANGES_MAX {
            return Some((Some(from), Damage::Record(reason)));
        }
        self.damaged.push(DamagedRange {
            from,
            to,
            reason,
            identified: false,
        });
        None
    }
}

/// Slot page `page` of the job's index, from the chunk, or the read that brings it.
fn slot_page<'a>(
    job: &Job,
    chunk: Chunk<'a>,
    index_file: FileId,
    page: u64,
) -> Result<&'a [u8], Next> {
    let start = job.slot_table_offset + page * to_u64(SECTOR_SIZE);
    let chunk_end = chunk.start + to_u64(chunk.bytes.len());
    let inside = job.chunk_file == Some(index_file)
        && start >= chunk.start
        && start + to_u64(SECTOR_SIZE) <= chunk_end;
    if !inside {
        let length = (job.index_size - start).min(to_u64(SCRUB_READ_SIZE));
        return Err(Next::Read {
            file: index_file,
            start,
            length: to_usize(length),
        });
    }
    let offset = to_usize(start - chunk.start);
    Ok(&chunk.bytes[offset..offset + SECTOR_SIZE])
}

/// The held slots of slot page `page`: (slot, record position).
fn page_positions(page_bytes: &[u8], page: u64) -> impl Iterator<Item = (u64, u64)> + '_ {
    (0..index_file::PAGE_SLOTS).filter_map(move |index| {
        let (position, _) = index_file::page_slot(page_bytes, index)?;
        let slot = page * to_u64(index_file::PAGE_SLOTS) + to_u64(index);
        Some((slot, u64::from(position)))
    })
}

/// The entry slot `slot` holds, from the runs (sorted by their first slot).
fn slot_entry(runs: &[Run], slot: u64) -> Option<(LedgerId, EntryId)> {
    let after = runs.partition_point(|run| run.slot_first <= slot);
    let run = runs.get(after.checked_sub(1)?)?;
    let offset = slot - run.slot_first;
    (offset < run.slot_count()).then(|| {
        let entry = run.entry_first.0 + i64::try_from(offset).expect("a run's span fits i64");
        (run.ledger, EntryId(entry))
    })
}

/// The scrubber's buffer: a whole record of the largest size and a sector, at least.
#[must_use]
pub(super) const fn scrub_buffer_size() -> usize {
    crate::constants::SCRUB_BUFFER_SIZE
}

/// A read from `start` of at least `length` bytes: `SCRUB_READ_SIZE` when that is more, whole
/// sectors, within the file.
fn scrub_read_length(start: u64, length: usize, file_size: u64) -> usize {
    let wanted = align_up_u64(to_u64(length.max(SCRUB_READ_SIZE)), to_u64(SECTOR_SIZE));
    to_usize(
        wanted
            .min(file_size.saturating_sub(start))
            .min(to_u64(scrub_buffer_size())),
    )
}
