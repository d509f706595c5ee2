//! Compaction's planning: which sealed segment a job rewrites (for space, or for order), and
//! the copy's runs, size and header.

use super::{Job, Phase};
use crate::constants::{SECTOR_SIZE, SEGMENT_HEADER_SIZE};
use crate::disk::Disk;
use crate::ids::Sequence;
use crate::index_file::Run;
use crate::journal::Journal;
use crate::stdx::{align_up_u64, to_u64, to_usize};

impl<D: Disk> Journal<D> {
    /// Picks the sealed segment with the least live data under the threshold (which disk
    /// pressure raises, `journal/pressure.rs`) whose copy fits the free space, or else, with
    /// `Config::sort_sealed`, room on the disk and no pressure, the newest segment still in
    /// commit order, and plans its copy. Returns whether a job runs.
    pub(super) fn compact_plan(&mut self) -> bool {
        let blocked = self.segments.is_read_only();
        let per_mille = self.compaction_threshold_per_mille();
        self.compaction.threshold_planned = per_mille;
        let sort = self.config.sort_sealed
            && !blocked
            && self.pressure.per_mille() == 0
            && !self.compaction.sorting_paused;
        if per_mille == 0 && !sort {
            // Off: nothing to plan until the threshold changes (the disk fills or empties).
            self.compaction.plan_pending = false;
            self.compaction.frees_space = false;
            return false;
        }
        if !self.compaction.credit_left() {
            return false;
        }
        let resume = self.seal.resume().segment;
        let refused = &self.compaction.refused;
        // A segment whose last copy's swap kept its old file waits until that file is reused
        // or removed: it rests under the name the next copy would be written to.
        let kept = &self.dead;
        let excluded = |segment| refused.contains(&segment) || kept.is_replaced(segment);
        // A copy for space needs its own size beyond the reserve, or half the reserve (the
        // rest stays for index files and checkpoints) once the write head waits for it: the
        // least live segment whose copy fits, not the least live one. A sorted copy is as
        // large as its segment's live data: it needs that much room beyond the reserve and
        // the next segment, or the journal would turn read-only for it. A file system that
        // cannot tell its free space leaves it to the allocation, as segment creation does.
        let free = self.disk.space_free().unwrap_or(u64::MAX);
        let reserve = self.config.disk_reserve;
        let copy_size_max = free.saturating_sub(if blocked { reserve / 2 } else { reserve });
        let threshold = f64::from(per_mille) / 1000.0;
        let mut candidate = (per_mille > 0)
            .then(|| {
                self.index
                    .compaction_candidate(resume, threshold, copy_size_max, excluded)
            })
            .flatten();
        let mut sorting = false;
        if candidate.is_none() && sort && free >= 2 * self.config.segment_size + reserve {
            candidate = self.index.sort_candidate(resume, excluded);
            sorting = candidate.is_some();
        }
        let Some(segment) = candidate else {
            self.compaction.plan_pending = false;
            self.compaction.frees_space = false;
            return false;
        };
        self.compaction.frees_space = !sorting;
        let table = self
            .index
            .sealed_segment(segment)
            .expect("a candidate is sealed");
        let runs = self.index.sealed_runs_live(segment);
        let mut runs_new = Vec::with_capacity(runs.len());
        let mut slot_next = 0u64;
        let mut bytes = 0u64;
        for (ledger, run) in &runs {
            let new = Run {
                ledger: *ledger,
                entry_first: crate::ids::EntryId(run.entry_first),
                entry_last: crate::ids::EntryId(run.entry_last),
                slot_first: slot_next,
                entries: run.entries,
                bytes: run.bytes,
            };
            slot_next += new.slot_count();
            bytes += run.bytes;
            runs_new.push(new);
        }
        let file_size = align_up_u64(to_u64(SEGMENT_HEADER_SIZE) + bytes, to_u64(SECTOR_SIZE));
        let generation = table.generation + 1;
        let header = &mut self.disk.buffer_mut(self.compaction.buffer)[..SEGMENT_HEADER_SIZE];
        crate::segment::encode_segment_header_generation(
            header,
            segment,
            self.config.segment_size,
            generation,
            0,
        );
        self.compaction.job = Some(Job {
            segment,
            sorting,
            generation,
            table,
            runs,
            runs_new,
            slots: Vec::with_capacity(to_usize(slot_next)),
            order: Vec::new(),
            slot_next: 0,
            batch: Vec::new(),
            file_size,
            buffer_position: 0,
            buffer_length: SEGMENT_HEADER_SIZE,
            sequence_next: Sequence(1),
            checksum_previous: 0,
            keep: false,
            phase: Phase::CopyCreate,
        });
        self.stats.compactions_started += 1;
        self.stats.compactions_sorting += u64::from(sorting);
        true
    }
}
