//! Read-ahead: a sequential reader's records come from large windows of a segment, read in
//! one aligned O_DIRECT read each, instead of one small read per record.
//!
//! A catch-up reader reads a ledger in entry order, and in a sorted segment (or when it reads
//! all the ledgers of a segment at once) its next records are the next bytes. So a read that
//! follows the previous read of its ledger (`Streams`) reads `READ_AHEAD_WINDOW_SIZE` bytes
//! from its record on (less where the next window in use begins: bytes are not read twice
//! while a window holds them), and every later read inside that window is served from memory: at
//! once if the window is in, or when it lands if it is in flight. A read past the middle of a
//! window starts the next one, so a steady reader finds its records read before it asks.
//!
//! Windows are a fixed pool (`Config::read_ahead_windows`), reused least recently used first,
//! never while a read still holds bytes in one. At most `READ_AHEAD_IN_FLIGHT_MAX` are in
//! flight, which bounds how much read-ahead a commit can find queued ahead of it on the disk,
//! and while the commits wait on the disk windows start only at the pace of `read_pace.rs`.
//! Nothing here is trusted: every record served from a window is checked against the identity
//! the index expects (`reads.rs`), and one that fails is read alone, so a stale window (a
//! segment replaced by its compacted copy) costs a read, never a wrong answer.

use super::read_pace::ReadPace;
use crate::constants::{
    READ_AHEAD_IN_FLIGHT_MAX, READ_AHEAD_SPARSE_SCANS_MAX, READ_AHEAD_STREAMS_MAX,
    READ_AHEAD_STREAM_GAP_MAX, READ_AHEAD_WINDOW_SIZE, SECTOR_SIZE,
};
use crate::disk::{BufferId, Disk};
use crate::ids::{EntryId, FileId, LedgerId, SegmentId};
use crate::stdx::{align_down_u64, align_up_u64, to_u64, to_usize};

/// Where a window is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum WindowState {
    Free,
    InFlight,
    Ready,
}

/// One window: `length` bytes of `segment` from `start` (`valid` of them read).
#[derive(Clone, Copy, Debug)]
struct Window {
    state: WindowState,
    segment: SegmentId,
    start: u64,
    length: usize,
    valid: usize,
    buffer: BufferId,
    /// Reads waiting on the window or holding a result in it: it is not reused until 0.
    users: u32,
    /// Takes no new reads (its segment was replaced); freed once its users are done.
    stale: bool,
    /// The clock at its last use, for least-recently-used reuse.
    used: u64,
}

impl Window {
    /// Where the bytes it holds end: all it reads while in flight, what it got once read.
    fn held_end(&self) -> u64 {
        self.start
            + to_u64(match self.state {
                WindowState::Free => 0,
                WindowState::InFlight => self.length,
                WindowState::Ready => self.valid,
            })
    }
}

/// One ledger being read: the highest entry read, and when.
#[derive(Clone, Copy, Debug)]
struct Stream {
    ledger: LedgerId,
    entry_last: i64,
    used: u64,
}

/// What a lookup found for a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Found {
    /// The window holds the record's bytes now.
    Ready(u32),
    /// The window that will hold them is in flight.
    InFlight(u32),
}

/// The windows and the streams of one journal. See the module docs.
#[derive(Debug)]
pub(super) struct ReadAhead {
    windows: Vec<Window>,
    /// The windows in use (not free) as (segment, start, index), ascending: a lookup is a
    /// binary search, not a pass over every window (a shard may have 1024, and a pass per
    /// read was a fifth of a shard's CPU in a catch-up read). Capacity for every window is
    /// reserved up front, so keeping it costs no allocation.
    by_position: Vec<(SegmentId, u64, u32)>,
    streams: Vec<Stream>,
    clock: u64,
    in_flight: usize,
    /// Segments a window read failed on: reads of them go alone (and answer the error),
    /// instead of waiting on window after failing window. Few: the oldest is forgotten.
    failed: Vec<SegmentId>,
    /// When a window may start while the commits wait on the disk.
    pace: ReadPace,
}

/// Segments remembered in `ReadAhead::failed`.
const FAILED_SEGMENTS_MAX: usize = 8;

/// How recent (in lookups, two or three per read) a scan's last read must be for it to count
/// as reading now: a client reading 500 ledgers at once comes back to each within about
/// 1,500.
const SCAN_ACTIVE_TICKS: u64 = 16_384;

impl ReadAhead {
    /// True when there are no windows: nothing is read ahead.
    pub(super) fn is_off(&self) -> bool {
        self.windows.is_empty()
    }

    /// Windows over `buffers` (each `READ_AHEAD_WINDOW_SIZE` bytes; none turns read-ahead
    /// off), paced at `pace_percent` of the commits' bytes while pacing is on.
    pub(super) fn new(buffers: impl Iterator<Item = BufferId>, pace_percent: u32) -> ReadAhead {
        let windows: Vec<Window> = buffers
            .map(|buffer| Window {
                state: WindowState::Free,
                segment: SegmentId(0),
                start: 0,
                length: 0,
                valid: 0,
                buffer,
                users: 0,
                stale: false,
                used: 0,
            })
            .collect();
        ReadAhead {
            by_position: Vec::with_capacity(windows.len()),
            windows,
            streams: Vec::with_capacity(READ_AHEAD_STREAMS_MAX),
            clock: 0,
            in_flight: 0,
            failed: Vec::with_capacity(FAILED_SEGMENTS_MAX),
            pace: ReadPace::new(pace_percent),
        }
    }

    /// The pace window starts keep (`read_pace.rs`).
    pub(super) fn pace(&mut self) -> &mut ReadPace {
        &mut self.pace
    }

    /// True when the pace lets a window start now.
    pub(super) fn pace_admits(&self) -> bool {
        self.pace.admits()
    }

    /// Notes a read of `entry` of `ledger` and says whether it follows the ledger's previous
    /// read closely enough to be part of a sequential scan.
    pub(super) fn sequential(&mut self, ledger: LedgerId, entry: EntryId) -> bool {
        if self.windows.is_empty() {
            return false;
        }
        self.clock += 1;
        let clock = self.clock;
        if let Some(stream) = self.streams.iter_mut().find(|s| s.ledger == ledger) {
            // The same entry again is a retry of a read the journal was too busy for.
            let follows =
                entry.0.abs_diff(stream.entry_last) <= READ_AHEAD_STREAM_GAP_MAX.unsigned_abs();
            stream.entry_last = stream.entry_last.max(entry.0);
            if !follows {
                stream.entry_last = entry.0;
            }
            stream.used = clock;
            return follows;
        }
        let stream = Stream {
            ledger,
            entry_last: entry.0,
            used: clock,
        };
        if self.streams.len() < READ_AHEAD_STREAMS_MAX {
            self.streams.push(stream);
        } else if let Some(oldest) = self.streams.iter_mut().min_by_key(|s| s.used) {
            *oldest = stream;
        }
        false
    }

    /// The window, in or in flight, that holds `[position, position + size)` of `segment`.
    pub(super) fn find(&mut self, segment: SegmentId, position: u64, size: usize) -> Option<Found> {
        let end = position + to_u64(size);
        self.clock += 1;
        let clock = self.clock;
        // Windows are at most READ_AHEAD_WINDOW_SIZE long, so only those of `segment` that
        // start at most that far before `position` can hold it.
        let index = self
            .starting_before(segment, position, to_u64(READ_AHEAD_WINDOW_SIZE))
            .find(|&index| {
                let window = &self.windows[to_usize(u64::from(index))];
                !window.stale && end <= window.held_end()
            })?;
        let window = &mut self.windows[to_usize(u64::from(index))];
        window.used = clock;
        Some(match window.state {
            WindowState::Ready => Found::Ready(index),
            WindowState::InFlight => Found::InFlight(index),
            WindowState::Free => unreachable!("found windows are in use"),
        })
    }

    /// The windows in use of `segment` that start at or before `position` and less than
    /// `reach` bytes before it, nearest first: a binary search in `by_position`, then a walk
    /// back, not a pass over every window (a shard may have 1024).
    fn starting_before(
        &self,
        segment: SegmentId,
        position: u64,
        reach: u64,
    ) -> impl Iterator<Item = u32> + '_ {
        let after = self
            .by_position
            .partition_point(|&(at_segment, start, _)| (at_segment, start) <= (segment, position));
        self.by_position[..after]
            .iter()
            .rev()
            .take_while(move |&&(at_segment, start, _)| {
                at_segment == segment && start + reach > position
            })
            .map(|&(_, _, index)| index)
    }

    /// True when a window, in or in flight, holds the first byte at `position` of `segment`
    /// but not all of the `size` bytes from it: the record straddles that window's end.
    /// Records are packed, so nearly every window boundary of a scan cuts one; a window
    /// started for it would read again, a sector later, the next window the scan's prefetch
    /// has already started (1 MiB read twice per 1 MiB window). Such a record is read alone.
    pub(super) fn straddles_end(&self, segment: SegmentId, position: u64, size: usize) -> bool {
        let end = position + to_u64(size);
        self.starting_before(segment, position, to_u64(READ_AHEAD_WINDOW_SIZE))
            .any(|index| {
                let window = &self.windows[to_usize(u64::from(index))];
                let held_end = window.held_end();
                !window.stale && position < held_end && end > held_end
            })
    }

    /// True when `position` of `segment` lies within a window's length after the end of a
    /// window in use: the window a scan's prefetch starts there (at the end, when the scan
    /// passes the middle) will hold it, so a window started at `position` itself would read
    /// most of that one again.
    pub(super) fn follows_window(&self, segment: SegmentId, position: u64) -> bool {
        let window_size = to_u64(READ_AHEAD_WINDOW_SIZE);
        self.starting_before(segment, position, 2 * window_size)
            .any(|index| {
                let window = &self.windows[to_usize(u64::from(index))];
                let end = window.start + to_u64(window.length);
                !window.stale
                    && window.length == READ_AHEAD_WINDOW_SIZE
                    && end <= position
                    && position < end + window_size
            })
    }

    /// True when more than `READ_AHEAD_SPARSE_SCANS_MAX` scans read within the last
    /// `SCAN_ACTIVE_TICKS` lookups: a read of many ledgers at once, whose windows serve them
    /// all.
    pub(super) fn scans_many(&self) -> bool {
        self.streams
            .iter()
            .filter(|stream| self.clock - stream.used < SCAN_ACTIVE_TICKS)
            .nth(READ_AHEAD_SPARSE_SCANS_MAX)
            .is_some()
    }

    /// True when a scan's read of `[position, position + size)` of `segment` may start a
    /// window: none holds it, or the full-length one that does is read past its middle and
    /// nothing holds what follows it (the prefetch starts that). Only then is it worth
    /// looking up how far the scan's ledger reaches (`Journal::read_extent`), which walks
    /// index slots: every read of a scan doing it cost a tenth of a core at 200k reads/s.
    pub(super) fn may_start(&self, segment: SegmentId, position: u64, size: usize) -> bool {
        if self.windows.is_empty() {
            return false;
        }
        let end = position + to_u64(size);
        let window_size = to_u64(READ_AHEAD_WINDOW_SIZE);
        let holding = self
            .starting_before(segment, position, window_size)
            .map(|index| &self.windows[to_usize(u64::from(index))])
            .find(|window| !window.stale && end <= window.held_end());
        let Some(window) = holding else {
            return true;
        };
        let window_end = window.start + to_u64(window.length);
        window.length == READ_AHEAD_WINDOW_SIZE
            && end >= window.start + window_size / 2
            && !self
                .starting_before(segment, window_end, window_size)
                .any(|index| {
                    let next = &self.windows[to_usize(u64::from(index))];
                    !next.stale && window_end < next.held_end() && next.start <= window_end
                })
    }

    /// Where the first window in use of `segment` that begins after `position` begins.
    fn next_held_start(&self, segment: SegmentId, position: u64) -> Option<u64> {
        let after = self
            .by_position
            .partition_point(|&(at_segment, start, _)| (at_segment, start) <= (segment, position));
        self.by_position[after..]
            .iter()
            .take_while(|&&(at_segment, _, _)| at_segment == segment)
            .find(|&&(_, _, index)| !self.windows[to_usize(u64::from(index))].stale)
            .map(|&(_, start, _)| start)
    }

    /// Starts reading the window of `segment` that begins at the sector of `position` (where
    /// a record of `size` bytes is) and ends at most at `segment_end`, with `token`'s kind
    /// (the window's index is added). The window stops where the next window in use begins,
    /// record permitting: scans of neighbouring ledgers start windows at their own runs, and
    /// windows that overran into one another read a third of a sorted segment twice. None if
    /// every window is busy, as many as allowed are in flight (the read then goes alone), or
    /// the pace admits none now.
    pub(super) fn start<D: Disk>(
        &mut self,
        disk: &mut D,
        token_kind: u64,
        segment: SegmentId,
        (position, size): (u64, usize),
        segment_end: u64,
    ) -> Option<u32> {
        if self.in_flight >= READ_AHEAD_IN_FLIGHT_MAX
            || self.failed.contains(&segment)
            || !self.pace.admits()
        {
            return None;
        }
        let start = align_down_u64(position, to_u64(SECTOR_SIZE));
        let record_end = align_up_u64(position + to_u64(size), to_u64(SECTOR_SIZE));
        let next_held = self
            .next_held_start(segment, start)
            .map_or(u64::MAX, |next| next.max(record_end));
        let end = align_up_u64(segment_end, to_u64(SECTOR_SIZE))
            .min(start + to_u64(READ_AHEAD_WINDOW_SIZE))
            .min(next_held);
        if end <= start {
            return None;
        }
        let index = self.reusable()?;
        let length = to_usize(end - start);
        let window = &mut self.windows[index];
        let token = token_kind | to_u64(index);
        if disk
            .submit_read(
                token,
                FileId::Segment(segment),
                start,
                window.buffer,
                length,
            )
            .is_err()
        {
            return None;
        }
        let was_free = window.state == WindowState::Free;
        self.clock += 1;
        *window = Window {
            state: WindowState::InFlight,
            segment,
            start,
            length,
            valid: 0,
            buffer: window.buffer,
            users: 0,
            stale: false,
            used: self.clock,
        };
        self.in_flight += 1;
        self.pace.spend(length);
        let index = u32::try_from(index).expect("few windows");
        if !was_free {
            self.position_remove(index);
        }
        self.position_insert(index);
        Some(index)
    }

    /// Adds window `index`, just put in use, to `by_position`.
    fn position_insert(&mut self, index: u32) {
        let window = &self.windows[to_usize(u64::from(index))];
        let key = (window.segment, window.start, index);
        let at = self.by_position.partition_point(|&entry| entry < key);
        assert!(
            self.by_position.len() < self.by_position.capacity(),
            "one entry per window"
        );
        self.by_position.insert(at, key);
    }

    /// Removes window `index` from `by_position` (found by index: once per window read, so
    /// a pass is cheap, and it works after the window's fields changed).
    fn position_remove(&mut self, index: u32) {
        let at = self
            .by_position
            .iter()
            .position(|&(_, _, at_index)| at_index == index)
            .expect("a window in use is in by_position");
        self.by_position.remove(at);
    }

    /// A free window, or the least recently used one nobody holds.
    fn reusable(&self) -> Option<usize> {
        if let Some(index) = self
            .windows
            .iter()
            .position(|window| window.state == WindowState::Free)
        {
            return Some(index);
        }
        self.windows
            .iter()
            .enumerate()
            .filter(|(_, window)| window.state == WindowState::Ready && window.users == 0)
            .min_by_key(|(_, window)| window.used)
            .map(|(index, _)| index)
    }

    /// When a read at `[position, end)` inside window `index` is past the window's middle,
    /// starts the window that follows it (unless one holds its first bytes already or the
    /// segment ends there).
    pub(super) fn prefetch<D: Disk>(
        &mut self,
        disk: &mut D,
        token_kind: u64,
        index: u32,
        end: u64,
        segment_end: u64,
    ) -> bool {
        let window = self.windows[to_usize(u64::from(index))];
        let window_end = window.start + to_u64(window.length);
        let middle = window.start + to_u64(window.length / 2);
        if end < middle || window_end >= segment_end || window.length < READ_AHEAD_WINDOW_SIZE {
            return false;
        }
        if self.find(window.segment, window_end, 1).is_some() {
            return false;
        }
        self.start(
            disk,
            token_kind,
            window.segment,
            (window_end, 1),
            segment_end,
        )
        .is_some()
    }

    /// Window `index`'s read completed with `result` (bytes read, or a negative errno): it
    /// now serves the bytes it got (none after an error, so its waiting reads go alone).
    pub(super) fn on_complete(&mut self, index: usize, result: i32) {
        let window = &mut self.windows[index];
        assert_eq!(window.state, WindowState::InFlight);
        self.in_flight -= 1;
        window.valid = usize::try_from(result).map_or(0, |read| read.min(window.length));
        window.state = WindowState::Ready;
        if window.valid == 0 {
            window.stale = true;
        }
        if result < 0 && !self.failed.contains(&window.segment) {
            if self.failed.len() == FAILED_SEGMENTS_MAX {
                self.failed.remove(0);
            }
            self.failed.push(window.segment);
        }
        self.free_if_unused(index);
    }

    /// The bytes window `index` holds for `[position, position + size)`, if it holds them.
    pub(super) fn bytes<'d, D: Disk>(
        &self,
        disk: &'d D,
        index: u32,
        position: u64,
        size: usize,
    ) -> Option<&'d [u8]> {
        let window = &self.windows[to_usize(u64::from(index))];
        let offset = to_usize(position.checked_sub(window.start)?);
        if window.state != WindowState::Ready || offset + size > window.valid {
            return None;
        }
        Some(&disk.buffer(window.buffer)[offset..offset + size])
    }

    /// A read starts waiting on, or holding a result in, window `index`.
    pub(super) fn hold(&mut self, index: u32) {
        self.windows[to_usize(u64::from(index))].users += 1;
    }

    /// A read that held window `index` is done with it.
    pub(super) fn unhold(&mut self, index: u32) {
        let index = to_usize(u64::from(index));
        let window = &mut self.windows[index];
        assert!(window.users > 0, "window {index} is not held");
        window.users -= 1;
        self.free_if_unused(index);
    }

    /// Window `index` served a record that failed its check: it takes no more reads.
    pub(super) fn discard(&mut self, index: u32) {
        let index = to_usize(u64::from(index));
        self.windows[index].stale = true;
        self.free_if_unused(index);
    }

    /// `segment`'s file was replaced (or removed): its windows take no more reads.
    pub(super) fn forget(&mut self, segment: SegmentId) {
        self.failed.retain(|&failed| failed != segment);
        for index in 0..self.windows.len() {
            if self.windows[index].state != WindowState::Free
                && self.windows[index].segment == segment
            {
                self.windows[index].stale = true;
                self.free_if_unused(index);
            }
        }
    }

    /// True when a window read of `segment` is in flight.
    pub(super) fn in_flight_on(&self, segment: SegmentId) -> bool {
        self.windows
            .iter()
            .any(|window| window.state == WindowState::InFlight && window.segment == segment)
    }

    fn free_if_unused(&mut self, index: usize) {
        let window = &mut self.windows[index];
        if window.stale && window.users == 0 && window.state == WindowState::Ready {
            window.state = WindowState::Free;
            window.stale = false;
            self.position_remove(u32::try_from(index).expect("few windows"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_is_sequential_from_its_second_close_read() {
        let mut read_ahead = ReadAhead::new([BufferId(0)].into_iter(), 0);
        let ledger = LedgerId(7);
        assert!(!read_ahead.sequential(ledger, EntryId(10)));
        assert!(read_ahead.sequential(ledger, EntryId(11)));
        assert!(read_ahead.sequential(ledger, EntryId(13)));
        // Reordered a little: still the same scan.
        assert!(read_ahead.sequential(ledger, EntryId(12)));
        // A retry of the same entry is still the scan; a jump is not.
        assert!(read_ahead.sequential(ledger, EntryId(13)));
        assert!(!read_ahead.sequential(ledger, EntryId(5000)));
        assert!(read_ahead.sequential(ledger, EntryId(5001)));
        // Concurrent batch reads a few hundred ids apart are one scan.
        assert!(read_ahead.sequential(ledger, EntryId(5700)));
        assert!(read_ahead.sequential(ledger, EntryId(5064)));
    }

    #[test]
    fn without_windows_nothing_is_sequential() {
        let mut read_ahead = ReadAhead::new(std::iter::empty(), 0);
        assert!(!read_ahead.sequential(LedgerId(1), EntryId(0)));
        assert!(!read_ahead.sequential(LedgerId(1), EntryId(1)));
    }

    /// Windows (and their bytes) any window in use holds `[position, end)` in, by a pass over
    /// every window: what `by_position` must agree with.
    fn covering_by_scan(
        read_ahead: &ReadAhead,
        segment: SegmentId,
        position: u64,
        end: u64,
    ) -> bool {
        read_ahead.windows.iter().any(|window| {
            let held = match window.state {
                WindowState::Free => 0,
                WindowState::InFlight => window.length,
                WindowState::Ready => window.valid,
            };
            !window.stale
                && window.segment == segment
                && window.start <= position
                && end <= window.start + to_u64(held)
        })
    }

    #[test]
    fn lookups_by_position_agree_with_a_pass_over_every_window() {
        use crate::disk::sim::{SimDisk, SimRng};
        const SEGMENT_SIZE: u64 = 8 << 20;
        let mut disk = SimDisk::new(1);
        let windows = 6;
        disk.buffers_allocate(&vec![READ_AHEAD_WINDOW_SIZE; windows]);
        for segment in 1..=3 {
            disk.insert_segment(SegmentId(segment), vec![0; to_usize(SEGMENT_SIZE)]);
            disk.file_open(FileId::Segment(SegmentId(segment)))
                .expect("sim file");
        }
        let mut read_ahead = ReadAhead::new(
            (0..windows).map(|i| BufferId(u32::try_from(i).expect("small"))),
            0,
        );
        let mut rng = SimRng::new(7);
        let mut held: Vec<u32> = Vec::new();
        for _ in 0..20_000 {
            let segment = SegmentId(u32::try_from(1 + rng.below(3)).expect("small"));
            let position = rng.below(SEGMENT_SIZE);
            match rng.below(8) {
                0 | 1 => {
                    let end = if rng.chance(200_000) {
                        position + 5000
                    } else {
                        SEGMENT_SIZE
                    };
                    let next = read_ahead.next_held_start(segment, align_down_u64(position, 4096));
                    let started = read_ahead.start(
                        &mut disk,
                        0,
                        segment,
                        (position, 1),
                        end.min(SEGMENT_SIZE),
                    );
                    if let Some(index) = started {
                        // It never reads into the next window in use, but for its one record.
                        let window = read_ahead.windows[to_usize(u64::from(index))];
                        let window_end = window.start + to_u64(window.length);
                        let record_end = align_up_u64(position + 1, 4096);
                        assert!(next.is_none_or(|next| window_end <= next.max(record_end)));
                    }
                }
                2 => {
                    let in_flight = (0..windows)
                        .find(|&i| read_ahead.windows[i].state == WindowState::InFlight);
                    if let Some(index) = in_flight {
                        let length = read_ahead.windows[index].length;
                        let result = if rng.chance(50_000) {
                            -5
                        } else {
                            i32::try_from(length / 2 + to_usize(rng.below(to_u64(length / 2))))
                                .expect("small")
                        };
                        read_ahead.on_complete(index, result);
                    }
                }
                3 => {
                    let index = u32::try_from(rng.below(to_u64(windows))).expect("small");
                    if read_ahead.windows[to_usize(u64::from(index))].state != WindowState::Free {
                        read_ahead.hold(index);
                        held.push(index);
                    }
                }
                4 => {
                    if let Some(index) = held.pop() {
                        read_ahead.unhold(index);
                    }
                }
                5 if rng.chance(100_000) => read_ahead.forget(segment),
                5 => {
                    let index = u32::try_from(rng.below(to_u64(windows))).expect("small");
                    if read_ahead.windows[to_usize(u64::from(index))].state == WindowState::Ready {
                        read_ahead.discard(index);
                    }
                }
                _ => {}
            }
            let in_use = read_ahead
                .windows
                .iter()
                .filter(|w| w.state != WindowState::Free)
                .count();
            assert_eq!(read_ahead.by_position.len(), in_use);
            for _ in 0..4 {
                let position = rng.below(SEGMENT_SIZE);
                let size = 1 + to_usize(rng.below(4096));
                let expected =
                    covering_by_scan(&read_ahead, segment, position, position + to_u64(size));
                let found = read_ahead.find(segment, position, size);
                assert_eq!(
                    found.is_some(),
                    expected,
                    "{segment:?} at {position} size {size}"
                );
                if let Some(Found::Ready(index) | Found::InFlight(index)) = found {
                    let window = read_ahead.windows[to_usize(u64::from(index))];
                    assert!(window.segment == segment && window.start <= position);
                }
            }
        }
    }

    #[test]
    fn a_window_stops_where_the_next_one_in_use_begins() {
        use crate::disk::sim::SimDisk;
        let mut disk = SimDisk::new(1);
        disk.buffers_allocate(&[READ_AHEAD_WINDOW_SIZE; 4]);
        let segment = SegmentId(1);
        disk.insert_segment(segment, vec![0; 8 << 20]);
        disk.file_open(FileId::Segment(segment)).expect("sim file");
        let mut read_ahead = ReadAhead::new((0..4).map(BufferId), 0);
        let segment_end = 8 << 20;
        let mib = 1 << 20;
        let length = |read_ahead: &ReadAhead, index: Option<u32>| {
            read_ahead.windows[to_usize(u64::from(index.expect("started")))].length
        };
        // A neighbour's scan started its window at 1.5 MiB: one started at 1 MiB stops there.
        let next = read_ahead.start(&mut disk, 0, segment, (mib + mib / 2, 100), segment_end);
        assert_eq!(length(&read_ahead, next), READ_AHEAD_WINDOW_SIZE);
        let clipped = read_ahead.start(&mut disk, 0, segment, (mib, 100), segment_end);
        assert_eq!(length(&read_ahead, clipped), to_usize(mib / 2));
        // A record that runs into the next window is still read whole.
        let straddling = read_ahead.start(&mut disk, 0, segment, (mib - 10, 8000), segment_end);
        assert_eq!(length(&read_ahead, straddling), 4096 + 8192);
        // A window of the segment replaced (stale) is no reason to stop.
        read_ahead.forget(segment);
        let after_stale = read_ahead.start(&mut disk, 0, segment, (0, 100), segment_end);
        assert_eq!(length(&read_ahead, after_stale), READ_AHEAD_WINDOW_SIZE);
    }

    #[test]
    fn the_least_recent_stream_is_forgotten_first() {
        let mut read_ahead = ReadAhead::new([BufferId(0)].into_iter(), 0);
        for ledger in 0..READ_AHEAD_STREAMS_MAX {
            read_ahead.sequential(LedgerId(i64::try_from(ledger).expect("small")), EntryId(0));
        }
        // Ledger 0 read again: the oldest is now ledger 1, which the next new ledger replaces.
        assert!(read_ahead.sequential(LedgerId(0), EntryId(1)));
        read_ahead.sequential(LedgerId(1_000_000), EntryId(0));
        assert!(read_ahead.sequential(LedgerId(0), EntryId(2)));
        assert!(!read_ahead.sequential(LedgerId(1), EntryId(1)));
    }
}
