#!/usr/bin/env bash
# The engine in-process against the disk floor: the two ratios issue 2 sets as targets.
# The floor and the one-outstanding run alternate in BENCH_PAIRS (default 5) pairs, because
# this VM's floor drifts by up to 2x within minutes; each ratio compares runs seconds apart.
# Usage: scripts/bench_journal.sh RELEASE_DIR BENCH_DIR SECONDS
set -euo pipefail
release=${1:?release dir} dir=${2:?bench dir} seconds=${3:-5}
mkdir -p "$dir"
run=$(mktemp -d "$dir/journal.XXXXXX")
trap 'rm -rf "$run"' EXIT
pairs=${BENCH_PAIRS:-5}
summary_args=()
for pair in $(seq 1 "$pairs"); do
  "$release/ringlog-bench" disk --dir "$run" --size 4096 --seconds "$seconds" \
    --json "$run/disk-$pair.json"
  "$release/ringlog-bench" disk --dir "$run" --size 4096 --seconds "$seconds" --dsync \
    --json "$run/disk-dsync-$pair.json"
  "$release/ringlog-bench" journal --dir "$run" --entry-size 1024 --outstanding 1 \
    --seconds "$seconds" --json "$run/journal-1-$pair.json"
  summary_args+=("disk#$pair=$run/disk-$pair.json" "disk-dsync#$pair=$run/disk-dsync-$pair.json"
    "journal-outstanding-1#$pair=$run/journal-1-$pair.json")
done
"$release/ringlog-bench" journal --dir "$run" --entry-size 1024 --outstanding 256 \
  --seconds "$seconds" --json "$run/journal-256.json"
python3 "$(dirname "$0")/bench_summary.py" "${summary_args[@]}" \
  journal-outstanding-256="$run/journal-256.json"
