#!/usr/bin/env bash
# The engine in-process against the disk floor: the two ratios issue 2 sets as targets.
# Usage: scripts/bench_journal.sh RELEASE_DIR BENCH_DIR SECONDS
set -euo pipefail
release=${1:?release dir} dir=${2:?bench dir} seconds=${3:-5}
mkdir -p "$dir"
run=$(mktemp -d "$dir/journal.XXXXXX")
trap 'rm -rf "$run"' EXIT
"$release/ringlog-bench" disk --dir "$run" --size 4096 --seconds "$seconds" --json "$run/disk.json"
"$release/ringlog-bench" journal --dir "$run" --entry-size 1024 --outstanding 1 \
  --seconds "$seconds" --json "$run/journal-1.json"
"$release/ringlog-bench" journal --dir "$run" --entry-size 1024 --outstanding 256 \
  --seconds "$seconds" --json "$run/journal-256.json"
python3 "$(dirname "$0")/bench_summary.py" disk="$run/disk.json" \
  journal-outstanding-1="$run/journal-1.json" journal-outstanding-256="$run/journal-256.json"
