#!/usr/bin/env bash
# `make compare`: the real Apache BookKeeper bookie (bookkeeper-server 4.18.2, journalSyncData
# =true, journal and ledger dirs on the same disk as ringlog's) and a ringlog bookie, each in
# turn, driven by the same clients with the same workload, alternating java, ringlog, java,
# ringlog, ... so that machine drift cancels in the per-pair ratios.
#
# Per bookie and pair:
#   1. BenchThroughputLatency-equivalent (interop bench-writes: the real Java client, 50
#      ledgers, throttle 20000, 1 KiB), v3 and v2 wire, SECONDS each;
#   2. ringlog-bench writes, the same workload closed loop, then open loop at 50% and 90% of
#      the Java bookie's closed-loop throughput in this pair;
#   3. ringlog-bench writes with one outstanding add (the latency floor);
#   4. the Pulsar producer benchmark (interop-pulsar Bench: a Pulsar 4.2.4 broker on two
#      bookies of the kind, E2/W2/A2, pulsar-client producing 1 KiB messages with batching off
#      and on, 100 and 1,000 outstanding, SECONDS each after 5 s of warm-up), ringlog both
#      unpinned and pinned (bookie N's one shard on core N);
# and once per pair ringlog-bench disk (the physical floor).
# Each bookie's CPU seconds, voluntary context switches (all its threads) and peak RSS are
# read from /proc around the closed-loop run. scripts/compare_report.py writes the Markdown
# report (per-pair ratios and their median) and the latency-spectrum PNG.
#
# Usage: scripts/compare.sh RELEASE_DIR RESULTS_DIR [PAIRS=3] [SECONDS=20]
set -euo pipefail
release=${1:?release dir} results_root=${2:?results dir} pairs=${3:-3} seconds=${4:-20}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
release=$(cd "$release" && pwd)
classpath="$root/interop/target/classes:$(cat "$root/interop/target/classpath.txt")"
pulsar_classpath="$root/interop-pulsar/target/classes:$(cat "$root/interop-pulsar/target/classpath.txt")"
results="$results_root/compare-$(date -u +%Y%m%d-%H%M%S)"
work=$(mktemp -d "${TMPDIR:-/tmp}/ringlog-compare.XXXXXX")
mkdir -p "$results"
serve_pid=''
cleanup() {
  if [[ -n $serve_pid ]] && kill -0 "$serve_pid" 2>/dev/null; then
    kill "$serve_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

java_props=("-Dringlog.bin=$release/ringlog" "-Dinterop.dir=$work")

# CPU ticks (user+system) and voluntary context switches summed over every thread of $1.
process_counters() {
  local pid=$1 ticks switches=0 task
  ticks=$(awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$pid/stat")
  for task in /proc/"$pid"/task/*; do
    switches=$((switches + $(awk '/^voluntary_ctxt_switches/ {print $2}' "$task/status" 2>/dev/null || echo 0)))
  done
  echo "$ticks $switches"
}

bench_writes() {
  local bookie=$1 wire=$2 out=$3 v2=false
  [[ $wire == v2 ]] && v2=true
  java -cp "$classpath" -Dbookie="$bookie" -Donly=bench-writes -Dbench.time="$seconds" \
    -Dbench.v2="$v2" "${java_props[@]}" ringlog.interop.Main >"$out.log" 2>&1 || true
  grep -E "^(PASS|FAIL) bench-writes" "$out.log" >"$out.txt" || echo "FAIL bench-writes no result line" >"$out.txt"
  cat "$out.txt"
}

# The Pulsar producer benchmark on two bookies of one kind: four BENCH lines. pinned=true
# pins ringlog bookie N's shard to core N.
pulsar_bench() {
  local bookie=$1 out=$2 pinned=${3:-false}
  java -Xmx512m -cp "$pulsar_classpath" -Dbookie="$bookie" -Dbench.seconds="$seconds" \
    -Dringlog.pinned="$pinned" "${java_props[@]}" ringlog.pulsar.Bench >"$out.log" 2>&1 || true
  grep -E "^BENCH " "$out.log" >"$out.txt" || echo "FAILED no BENCH line (see $out.log)" >"$out.txt"
  cat "$out.txt"
}

# Starts one bookie through interop's Serve (which stops when its stdin, a FIFO, closes),
# drives it with ringlog-bench, stops it.
drive() {
  local bookie=$1 pair=$2 java_ops=$3 prefix line port pid before after
  prefix="$results/pair$pair-$bookie"
  rm -f "$work/serve.in"
  mkfifo "$work/serve.in"
  java -cp "$classpath" -Dbookie="$bookie" "${java_props[@]}" ringlog.interop.Serve \
    <"$work/serve.in" >"$prefix-serve.log" 2>&1 &
  serve_pid=$!
  exec 7>"$work/serve.in"
  line=''
  for _ in $(seq 1 1200); do
    line=$(grep -m 1 -E "^(READY|FAILED)" "$prefix-serve.log" || true)
    [[ -n $line ]] && break
    sleep 0.1
  done
  if [[ $line != READY* ]]; then
    echo "compare: the $bookie bookie did not start: ${line:-timeout}" >&2
    tail -n 20 "$prefix-serve.log" >&2
    exit 1
  fi
  read -r _ port pid _ <<<"$line"
  echo "== pair $pair, $bookie bookie on 127.0.0.1:$port (pid $pid)"
  local target=(--target "127.0.0.1:$port" --entry-size 1024)
  before=$(process_counters "$pid")
  "$release/ringlog-bench" writes "${target[@]}" --ledgers 50 --throttle 20000 \
    --seconds "$seconds" --json "$prefix-closed.json" | tail -n 4
  after=$(process_counters "$pid")
  echo "$before $after $(getconf CLK_TCK)" >"$prefix-closed.counters"
  # The Java bookie runs first in each pair, so its own closed loop sets the rates.
  if [[ $bookie == java ]]; then
    java_ops=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['ops_per_sec'])" \
      "$prefix-closed.json")
  fi
  local rate percent
  for percent in 50 90; do
    rate=$(awk -v ops="$java_ops" -v p="$percent" 'BEGIN { printf "%.0f", ops * p / 100 }')
    if ((rate > 0)); then
      "$release/ringlog-bench" writes "${target[@]}" --ledgers 50 --throttle 20000 \
        --rate "$rate" --seconds "$seconds" --json "$prefix-open$percent.json" | tail -n 3
    fi
  done
  # The floor is measured right before ringlog's one-outstanding run: this VM's floor drifts
  # by up to 2x within minutes, and that ratio is a target.
  if [[ $bookie == ringlog ]]; then
    "$release/ringlog-bench" disk --dir "$work" --size 4096 --seconds 5 \
      --json "$results/pair$pair-disk.json" | tail -n 3
    "$release/ringlog-bench" disk --dir "$work" --size 4096 --seconds 5 --dsync \
      --json "$results/pair$pair-disk-dsync.json" | tail -n 3
  fi
  "$release/ringlog-bench" writes "${target[@]}" --ledgers 1 --throttle 1 \
    --seconds "$seconds" --json "$prefix-qd1.json" | tail -n 3
  exec 7>&-
  wait "$serve_pid" || true
  serve_pid=''
  grep -m 1 "^USAGE" "$prefix-serve.log" >"$prefix-usage.txt" || true
}

echo "== compare: $pairs pairs (java, ringlog), $seconds s per run; results in $results"
{
  echo "date: $(date -u +%FT%TZ)"
  echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), kernel $(uname -r), $(df -T "$work" | awk 'NR==2 {print $2}') on $(df "$work" | awk 'NR==2 {print $1}')"
  echo "java: $(java -version 2>&1 | head -n 1)"
  echo "ringlog: $(git -C "$root" rev-parse --short HEAD) default settings"
} >"$results/machine.txt"
cat "$results/machine.txt"
for pair in $(seq 1 "$pairs"); do
  java_ops=0
  for bookie in java ringlog; do
    for wire in v3 v2; do
      echo "== pair $pair, $bookie, BenchThroughputLatency-equivalent $wire"
      bench_writes "$bookie" "$wire" "$results/pair$pair-$bookie-btl-$wire"
    done
    drive "$bookie" "$pair" "$java_ops"
    echo "== pair $pair, $bookie, Pulsar producer benchmark"
    pulsar_bench "$bookie" "$results/pair$pair-$bookie-pulsar"
    if [[ $bookie == ringlog ]]; then
      echo "== pair $pair, ringlog pinned (bookie N on core N), Pulsar producer benchmark"
      pulsar_bench ringlog "$results/pair$pair-ringlog-pinned-pulsar" true
    fi
    if [[ $bookie == java ]]; then
      java_ops=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['ops_per_sec'])" \
        "$results/pair$pair-java-closed.json")
    fi
  done
done
python3 "$root/scripts/compare_report.py" "$results" "$pairs"
