//! `ringlog verify`: every journal's records, sealed indexes and checkpoint checked, and the
//! tail judged as recovery judges it (`engine::inspect::verify`). Exit status 0 only when
//! nothing is damaged; a torn tail, a missing index an open rebuilds, and leftover temporary
//! files are what a crash leaves and an open repairs, so they are printed but not damage.

use super::{line, AdminError, DataDirArgs, Outcome};
use clap::Args;
use engine::inspect::verify::{self, Finding, Problem, ProblemReason};
use engine::{FileId, OpenError};
use std::io::Write;

/// Flags of `ringlog verify`.
#[derive(Args, Debug)]
pub struct VerifyArgs {
    #[command(flatten)]
    pub data: DataDirArgs,
}

/// Prints one line per finding (`checkpoint`, `index`, `segment`, `tail`, `torn-tail`,
/// `index-missing`, `temporary`, `damaged`), each `KIND shard=K file=NAME ...`, then
/// `verify result=ok|damaged shards=N problems=P`.
pub fn run(args: &VerifyArgs, out: &mut impl Write) -> Result<Outcome, AdminError> {
    let (_locks, journals) = args.data.open()?;
    let mut problems = 0usize;
    for journal in &journals {
        let findings = verify::verify(&journal.path);
        for finding in &findings {
            if matches!(finding, Finding::Problem(_)) {
                problems += 1;
            }
            line(
                out,
                format_args!("{}", finding_text(journal.shard, finding)),
            )?;
        }
    }
    let result = if problems == 0 { "ok" } else { "damaged" };
    line(
        out,
        format_args!(
            "verify result={result} shards={} problems={problems}",
            journals.len()
        ),
    )?;
    Ok(if problems == 0 {
        Outcome::Clean
    } else {
        Outcome::Damaged
    })
}

fn finding_text(shard: usize, finding: &Finding) -> String {
    match finding {
        Finding::SegmentOk {
            segment,
            records,
            data_end,
        } => format!(
            "segment shard={shard} file={} status=ok records={records} data_end={data_end}",
            FileId::Segment(*segment)
        ),
        Finding::IndexOk {
            segment,
            runs,
            pages,
        } => format!(
            "index shard={shard} file={} status=ok runs={runs} pages={pages}",
            FileId::Index(*segment)
        ),
        Finding::IndexMissing { segment } => format!(
            "index-missing shard={shard} file={} status=repairable (the next open rebuilds it \
             from its segment)",
            FileId::Index(*segment)
        ),
        Finding::CheckpointOk {
            generation,
            resume,
            scrub,
        } => {
            let scrub = scrub.map_or(String::new(), |scrub| {
                format!(
                    " scrub_next={} scrub_cycle_start={} scrub_cycles={}",
                    FileId::Segment(scrub.segment_next),
                    FileId::Segment(scrub.cycle_start),
                    scrub.cycles_completed
                )
            });
            format!(
                "checkpoint shard={shard} file={} status=ok generation={generation} resume={}\
                 {scrub}",
                FileId::Checkpoint,
                FileId::Segment(*resume)
            )
        }
        Finding::TailOk {
            segments,
            append_at,
        } => format!(
            "tail shard={shard} status=ok segments_scanned={segments} append_segment={} \
             append_position={}",
            FileId::Segment(append_at.segment),
            append_at.position.0
        ),
        Finding::TornTail { start, end } => format!(
            "torn-tail shard={shard} file={} position={} end={end} status=repairable (a crash \
             tail, never acknowledged: the next open zeroes it)",
            FileId::Segment(start.segment),
            start.position.0
        ),
        Finding::Temporary { name } => format!(
            "temporary shard={shard} file={name} status=repairable (the next open deletes it)"
        ),
        Finding::Problem(problem) => problem_text(shard, problem),
    }
}

fn problem_text(shard: usize, problem: &Problem) -> String {
    let position = problem
        .position
        .map_or(String::new(), |position| format!(" position={position}"));
    let reason = match &problem.reason {
        ProblemReason::Segment(error) => format!("segment unreadable: {error}"),
        ProblemReason::Damage(damage) => damage.to_string(),
        ProblemReason::Checkpoint(error) => format!("checkpoint: {error}"),
        ProblemReason::Io(error) => format!("read failed: {error}"),
        ProblemReason::Open(error) => open_reason(error),
        _ => format!("{:?}", problem.reason),
    };
    format!(
        "damaged shard={shard} file={}{position} reason=\"{reason}\"",
        problem.file
    )
}

fn open_reason(error: &OpenError) -> String {
    format!("a server's open refuses the journal: {error}")
}

#[cfg(test)]
mod tests {
    use super::finding_text;
    use engine::checkpoint::ScrubPosition;
    use engine::inspect::verify::Finding;
    use engine::SegmentId;

    #[test]
    fn the_checkpoint_line_names_the_scrub_position_when_there_is_one() {
        let finding = |scrub| Finding::CheckpointOk {
            generation: 4,
            resume: SegmentId(9),
            scrub,
        };
        assert_eq!(
            finding_text(0, &finding(None)),
            "checkpoint shard=0 file=checkpoint status=ok generation=4 resume=0000000009.segment"
        );
        let scrub = ScrubPosition {
            segment_next: SegmentId(3),
            cycle_start: SegmentId(1),
            cycles_completed: 2,
        };
        assert_eq!(
            finding_text(1, &finding(Some(scrub))),
            "checkpoint shard=1 file=checkpoint status=ok generation=4 resume=0000000009.segment \
             scrub_next=0000000003.segment scrub_cycle_start=0000000001.segment scrub_cycles=2"
        );
    }
}
