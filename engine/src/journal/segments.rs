//! Segment preparation: creates, zero-fills (if configured), writes the header of and syncs
//! the next segment in the background, keeps the published spares the write head rolls over
//! to, and holds the read-only state while no segment can be created (disk full).
//!
//! A preparation moves Creating -> Zeroing -> Header -> Syncing -> Publishing -> PublishSync
//! -> published spare (a recycled file: Recycling -> Header -> ...). Creating, renaming and
//! the directory's fsyncs go through the ring (`Disk::submit_file_ops`): as blocking calls
//! they stalled the shard for as long as the file system's journal took. Any failure abandons
//! the segment (its temporary file is deleted at the next open) and the next `submit` starts
//! over with a new id; while no spare is left the journal is read-only, and creation is
//! retried every `SEGMENT_RETRY_INTERVAL_SUBMITS` submits (or at once on `retry_now`).
//!
//! A segment is not even tried while creating it would leave less than `Config::disk_reserve`
//! free (`Disk::space_free`): the journal turns read-only with the reserve still free, so the
//! index files and checkpoints that sealing and deletions write always have room, deletions
//! become durable, dead segments are removed, and the retry that follows succeeds. Without
//! it, the last segment that fits can leave less than the next index file needs: nothing
//! seals, no deletion becomes durable, nothing is removed, and the disk stays full for good.
//!
//! A preparation may also reuse a removed segment's file (`start` with `recycled_from`, chosen
//! by `journal/dead.rs`): the file is renamed to the new segment's temporary and gets a header
//! with the recycled flag; no allocation, no zeroing. Its blocks were written in its earlier
//! life, so commits need no extent conversion and zero-ahead skips it.

use super::{Stats, TOKEN_PREPARE};
use crate::config::Config;
use crate::constants::{SEGMENT_HEADER_SIZE, ZERO_CHUNK_SIZE, ZERO_WRITES_IN_FLIGHT_MAX};
use crate::disk::{BufferId, Disk, DiskOp, FileOp, WriteSync};
use crate::ids::{FileId, SegmentId};
use crate::segment::CommitBlock;
use crate::stdx::{to_u64, to_usize};
use std::collections::VecDeque;

/// How many `submit` calls pass between retries of segment creation while read-only.
const SEGMENT_RETRY_INTERVAL_SUBMITS: u32 = 256;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PreparePhase {
    /// The new file being created and allocated.
    Creating,
    /// The file of `from` (a dead segment: its index unlinked first) renamed to the new
    /// segment's temporary, and the directory's fsync, which must complete before the new
    /// header is written into it (a crash must never show `from`'s name on the new contents).
    Recycling {
        from: RecycleSource,
    },
    Zeroing,
    Header,
    Syncing,
    /// Being renamed to its published name.
    Publishing,
    /// Renamed to its published name: the directory's fsync must complete before the write
    /// head may use it (acknowledged records in a segment whose name a crash can lose would
    /// be lost with it).
    PublishSync,
}

/// A file segment preparation may reuse instead of allocating one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum RecycleSource {
    /// A dead sealed segment kept for reuse (`journal/dead.rs`).
    Dead(SegmentId),
    /// The old file of a segment its compacted copy replaced, kept by the swap under the
    /// copy's temporary name (`FileOp::Replace` with `keep`).
    Replaced(SegmentId),
}

#[derive(Clone, Copy, Debug)]
struct Prepare {
    segment: SegmentId,
    recycled: bool,
    position_submitted: u64,
    bytes_completed: u64,
    phase: PreparePhase,
    in_flight: usize,
}

/// A published segment the write head has not reached yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Spare {
    pub segment: SegmentId,
    /// Its file held a removed segment (stale records, not zeros, past its data).
    pub recycled: bool,
    /// What its commits are padded to (its header says so).
    pub commit_block: CommitBlock,
}

/// The segments of one journal beyond the active one.
#[derive(Debug)]
pub(super) struct Segments {
    /// Published segments holding no record yet, which the write head rolls over to, oldest
    /// first.
    spares: VecDeque<Spare>,
    /// The highest segment id created or tried; ids never repeat.
    id_max: SegmentId,
    /// The preparation running, if any (at most one).
    prepare: Option<Prepare>,
    /// True while no segment can be created and no spare is left: adds get `ReadOnly`.
    read_only: bool,
    submits_since_create_failure: u32,
    /// The directory fsync of a published segment failed: it is retried after
    /// `SEGMENT_RETRY_INTERVAL_SUBMITS` submits. The segment is never given up, since a
    /// segment id left out would read as a gap in the journal at the next open.
    publish_sync_failed: bool,
    /// One sector for the header of the segment being prepared.
    header_buffer: BufferId,
    /// The block the segments prepared from now on pad their commits to (`Config`).
    commit_block: CommitBlock,
}

impl Segments {
    pub(super) fn new(
        spares: Vec<Spare>,
        id_max: SegmentId,
        header_buffer: BufferId,
        commit_block: CommitBlock,
    ) -> Segments {
        assert!(spares.iter().all(|spare| spare.segment <= id_max));
        Segments {
            spares: spares.into_iter().collect(),
            id_max,
            prepare: None,
            read_only: false,
            submits_since_create_failure: 0,
            publish_sync_failed: false,
            header_buffer,
            commit_block,
        }
    }

    /// True while no segment can be created (disk full).
    pub(super) fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// Makes the next `drive` retry creating a segment if the journal is read-only.
    pub(super) fn retry_now(&mut self) {
        if self.read_only {
            self.submits_since_create_failure = SEGMENT_RETRY_INTERVAL_SUBMITS;
        }
    }

    /// The oldest spare, for the write head to roll over to.
    pub(super) fn spare_take(&mut self) -> Option<Spare> {
        self.spares.pop_front()
    }

    /// True when a preparation should start now (`start`): none runs, no spare is left, and
    /// while read-only, the retry interval has passed. Counts the submits of that interval.
    pub(super) fn start_due(&mut self) -> bool {
        if self.prepare.is_some() || !self.spares.is_empty() {
            return false;
        }
        if self.read_only {
            self.submits_since_create_failure += 1;
            if self.submits_since_create_failure < SEGMENT_RETRY_INTERVAL_SUBMITS {
                return false;
            }
        }
        true
    }

    /// Submits what the running preparation needs next.
    pub(super) fn drive<D: Disk>(&mut self, disk: &mut D, config: &Config) {
        let Some(prepare) = self.prepare else { return };
        let size = config.segment_size;
        let file = FileId::Segment(prepare.segment);
        match prepare.phase {
            PreparePhase::Zeroing => {
                // Zero at full speed, several chunks in flight: the interference with commits'
                // flushes lasts a short burst per segment instead of spreading over all of them.
                let mut prepare = prepare;
                while prepare.in_flight < ZERO_WRITES_IN_FLIGHT_MAX
                    && prepare.position_submitted < size
                {
                    let position = prepare.position_submitted;
                    let length = (size - position).min(to_u64(ZERO_CHUNK_SIZE));
                    let length = to_usize(length);
                    if disk
                        .submit_zero(TOKEN_PREPARE, file, position, length)
                        .is_err()
                    {
                        break;
                    }
                    prepare.position_submitted += to_u64(length);
                    prepare.in_flight += 1;
                }
                self.prepare = Some(prepare);
            }
            PreparePhase::Header if prepare.in_flight == 0 => {
                let header = disk.buffer_mut(self.header_buffer);
                crate::segment::encode_segment_header(
                    header,
                    prepare.segment,
                    size,
                    prepare.recycled,
                    self.commit_block,
                );
                let buffer = self.header_buffer;
                let (length, sync) = (SEGMENT_HEADER_SIZE, WriteSync::Dsync);
                if disk
                    .submit_write(TOKEN_PREPARE, file, 0, buffer, length, sync)
                    .is_ok()
                {
                    self.prepare.as_mut().expect("present").in_flight = 1;
                }
            }
            PreparePhase::Syncing if prepare.in_flight == 0 => {
                if disk.submit_sync(TOKEN_PREPARE, file).is_ok() {
                    self.prepare.as_mut().expect("present").in_flight = 1;
                }
            }
            PreparePhase::Creating if prepare.in_flight == 0 => {
                let create = FileOp::Create { id: file, size };
                if disk.submit_file_ops(TOKEN_PREPARE, &[create]).is_ok() {
                    self.prepare.as_mut().expect("present").in_flight = 1;
                }
            }
            PreparePhase::Recycling { from } if prepare.in_flight == 0 => {
                let submitted = match from {
                    RecycleSource::Dead(from) => disk.submit_file_ops(
                        TOKEN_PREPARE,
                        &[
                            FileOp::Remove {
                                id: FileId::Index(from),
                            },
                            FileOp::Recycle {
                                from: FileId::Segment(from),
                                to: file,
                            },
                            FileOp::SyncDirectory,
                        ],
                    ),
                    // Its index is the copy's, which stays: only the file moves.
                    RecycleSource::Replaced(from) => disk.submit_file_ops(
                        TOKEN_PREPARE,
                        &[
                            FileOp::Recycle {
                                from: FileId::SegmentCompacted(from),
                                to: file,
                            },
                            FileOp::SyncDirectory,
                        ],
                    ),
                };
                if submitted.is_ok() {
                    self.prepare.as_mut().expect("present").in_flight = 1;
                }
            }
            PreparePhase::Publishing if prepare.in_flight == 0 => {
                let publish = FileOp::Publish { id: file };
                if disk.submit_file_ops(TOKEN_PREPARE, &[publish]).is_ok() {
                    self.prepare.as_mut().expect("present").in_flight = 1;
                }
            }
            PreparePhase::PublishSync if prepare.in_flight == 0 => {
                if self.publish_sync_failed {
                    self.submits_since_create_failure += 1;
                    if self.submits_since_create_failure < SEGMENT_RETRY_INTERVAL_SUBMITS {
                        return;
                    }
                    self.submits_since_create_failure = 0;
                }
                if disk.submit_sync_directory(TOKEN_PREPARE).is_ok() {
                    self.prepare.as_mut().expect("present").in_flight = 1;
                }
            }
            PreparePhase::Creating
            | PreparePhase::Recycling { .. }
            | PreparePhase::Publishing
            | PreparePhase::Header
            | PreparePhase::Syncing
            | PreparePhase::PublishSync => {}
        }
    }

    /// Starts preparing the next segment: in the file `recycled_from` (which must be
    /// `segment_size` long and hold nothing live), or in a new one. The completion of a
    /// reuse's rename is reported by `on_complete`.
    pub(super) fn start<D: Disk>(
        &mut self,
        disk: &mut D,
        stats: &mut Stats,
        config: &Config,
        recycled_from: Option<RecycleSource>,
    ) {
        assert!(self.prepare.is_none());
        self.submits_since_create_failure = 0;
        let size = config.segment_size;
        if let Some(from) = recycled_from {
            let segment = self.id_max.next();
            self.id_max = segment;
            self.prepare = Some(Prepare {
                segment,
                recycled: true,
                position_submitted: size,
                bytes_completed: size,
                phase: PreparePhase::Recycling { from },
                in_flight: 0,
            });
            return;
        }
        if !stats.metadata_timed(|| room_left(disk, config)) {
            // Refused before any file exists (the id is not used): read-only, as if the
            // allocation had failed, with the reserve left for sealing and deletions.
            self.read_only = self.spares.is_empty();
            stats.segment_create_failures += 1;
            return;
        }
        let segment = self.id_max.next();
        self.id_max = segment;
        let done = if config.segment_zero_fill { 0 } else { size };
        self.prepare = Some(Prepare {
            segment,
            recycled: false,
            position_submitted: done,
            bytes_completed: done,
            phase: PreparePhase::Creating,
            in_flight: 0,
        });
    }

    /// An operation of the running preparation completed with `result`. Returns, for the
    /// rename of a reused dead segment, whether it was done (`Journal::segment_recycle_done`).
    pub(super) fn on_complete<D: Disk>(
        &mut self,
        disk: &mut D,
        stats: &mut Stats,
        config: &Config,
        op: DiskOp,
        result: i32,
    ) -> Option<bool> {
        let prepare = self.prepare.as_mut().expect("a preparation is running");
        assert!(prepare.in_flight > 0);
        prepare.in_flight -= 1;
        let recycle =
            matches!(prepare.phase, PreparePhase::Recycling { .. }).then_some(result >= 0);
        if result < 0 && prepare.phase == PreparePhase::PublishSync {
            // Published but maybe not durable under its name: retried, never abandoned.
            self.publish_sync_failed = true;
            self.submits_since_create_failure = 0;
            self.read_only = self.spares.is_empty();
            stats.segment_create_failures += 1;
            return None;
        }
        if result < 0 {
            // Abandon this segment once its last write is back; `drive` starts over with a
            // new id. Its temporary is deleted now: each retry allocates a whole segment, so
            // a persistent error would otherwise fill the disk with them until a restart.
            if prepare.in_flight == 0 {
                let segment = prepare.segment;
                self.prepare = None;
                disk.file_discard(FileId::Segment(segment));
            } else {
                prepare.position_submitted = u64::MAX;
            }
            // Disk full (or unwritable): read-only once no spare is left; reads go on, and
            // creation is retried.
            self.read_only = self.spares.is_empty();
            stats.segment_create_failures += 1;
            return recycle;
        }
        let size = config.segment_size;
        match (prepare.phase, op) {
            (PreparePhase::Creating, DiskOp::File) => {
                prepare.phase = if config.segment_zero_fill {
                    PreparePhase::Zeroing
                } else {
                    PreparePhase::Header
                };
            }
            (PreparePhase::Recycling { .. }, DiskOp::File) => {
                stats.segments_recycled += 1;
                prepare.phase = PreparePhase::Header;
            }
            (PreparePhase::Zeroing, DiskOp::Write) => {
                prepare.bytes_completed += u64::try_from(result).expect("non-negative");
                if prepare.bytes_completed == size && prepare.in_flight == 0 {
                    prepare.phase = PreparePhase::Header;
                }
                if prepare.position_submitted == u64::MAX && prepare.in_flight == 0 {
                    let segment = prepare.segment;
                    self.prepare = None;
                    disk.file_discard(FileId::Segment(segment));
                }
            }
            (PreparePhase::Header, DiskOp::Write) => prepare.phase = PreparePhase::Syncing,
            (PreparePhase::Syncing, DiskOp::Sync) => prepare.phase = PreparePhase::Publishing,
            (PreparePhase::Publishing, DiskOp::File) => prepare.phase = PreparePhase::PublishSync,
            (PreparePhase::PublishSync, DiskOp::Sync) => {
                let (segment, recycled) = (prepare.segment, prepare.recycled);
                self.prepare = None;
                self.publish_sync_failed = false;
                let commit_block = self.commit_block;
                self.spares.push_back(Spare {
                    segment,
                    recycled,
                    commit_block,
                });
                self.read_only = false;
                stats.segments_created += 1;
            }
            (phase, op) => unreachable!("prepare {phase:?} got {op:?}"),
        }
        recycle
    }
}

/// True when a new segment leaves at least `config.disk_reserve` bytes free. A reserve of 0
/// leaves it to the allocation, and so does a disk that cannot tell its free space (statvfs
/// failed): refusing would make a journal read-only for an error that says nothing of space.
/// Open asks too before it creates a spare, so a journal restarted on a full disk opens
/// read-only instead of failing.
pub(super) fn room_left<D: Disk>(disk: &mut D, config: &Config) -> bool {
    let (size, reserve) = (config.segment_size, config.disk_reserve);
    assert!(size > 0);
    assert!(
        reserve <= crate::constants::DISK_RESERVE_MAX,
        "validated at open"
    );
    if reserve == 0 {
        return true;
    }
    match disk.space_free() {
        Ok(free) => free >= size.saturating_add(reserve),
        Err(_) => true,
    }
}
