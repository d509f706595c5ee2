#!/usr/bin/env bash
# `make bench`: a ringlog bookie on a temporary data dir; the disk floor and one outstanding add in
# alternating pairs, then the seed workload; prints every report and the
# ratios, stops the server and prints its shutdown summary.
# Usage: scripts/bench.sh RELEASE_DIR BENCH_DIR SECONDS
set -euo pipefail
release=${1:?release dir} dir=${2:?bench dir} seconds=${3:-10}
port=${BENCH_PORT:-3181}
mkdir -p "$dir"
run=$(mktemp -d "$dir/run.XXXXXX")
server_pid=
cleanup() {
  if [[ -n $server_pid ]] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$run"
}
trap cleanup EXIT

echo "== machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), kernel $(uname -r), $(df -T "$dir" | awk 'NR==2 {print $2}') on $(df "$dir" | awk 'NR==2 {print $1}')"
echo "== starting ringlog serve on 127.0.0.1:$port"
"$release/ringlog" serve --data-dir "$run/data" --listen "127.0.0.1:$port" --http-listen 127.0.0.1:0 >"$run/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 600); do
  grep -q "listening on" "$run/server.log" && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$run/server.log"; echo "server exited" >&2; exit 1; }
  sleep 0.1
done
grep "listening on" "$run/server.log" || { cat "$run/server.log"; echo "server did not start" >&2; exit 1; }

# The disk floor and one outstanding add alternate (A B A B ...): this VM's floor drifts by up
# to 2x within minutes, so each ratio compares runs taken seconds apart.
pairs=${BENCH_PAIRS:-5}
summary_args=()
for pair in $(seq 1 "$pairs"); do
  echo "== pair $pair/$pairs: disk floor, QD1 O_DIRECT 4 KiB write + linked fdatasync"
  "$release/ringlog-bench" disk --dir "$run" --size 4096 --seconds 3 --json "$run/disk-$pair.json"
  echo "== pair $pair/$pairs: disk floor with RWF_DSYNC (the server's default sync mode)"
  "$release/ringlog-bench" disk --dir "$run" --size 4096 --seconds 3 --dsync \
    --json "$run/disk-dsync-$pair.json"
  echo "== pair $pair/$pairs: one outstanding add (latency floor), 1 KiB, sync"
  "$release/ringlog-bench" writes --target "127.0.0.1:$port" --entry-size 1024 --ledgers 1 \
    --throttle 1 --seconds 3 --json "$run/throttle-1-$pair.json"
  summary_args+=("disk#$pair=$run/disk-$pair.json" "disk-dsync#$pair=$run/disk-dsync-$pair.json"
    "writes-throttle-1#$pair=$run/throttle-1-$pair.json")
done
echo "== seed workload: 1 KiB, 50 ledgers, throttle 20000, sync"
"$release/ringlog-bench" writes --target "127.0.0.1:$port" --entry-size 1024 --ledgers 50 \
  --throttle 20000 --seconds "$seconds" --json "$run/seed.json"

# Latency against offered load (issue 18): open loop at fractions of the seed workload's
# closed-loop rate and at 250k adds/s, with the server's stage histograms around each point.
curve_dir="$dir/latency-curve"
http=$(sed -n 's/^ringlog http on //p' "$run/server.log" | head -n 1)
max_ops=$(python3 -c 'import json, sys; print(int(json.load(open(sys.argv[1]))["ops_per_sec"]))' "$run/seed.json")
disk_jsons=("$run"/disk-dsync-*.json)
if python3 -c 'import matplotlib' 2>/dev/null || python3 -m pip install --quiet matplotlib >/dev/null 2>&1; then
  :
else
  echo "== latency curve: matplotlib could not be installed (pip); the curve is written as JSON only"
fi
python3 "$(dirname "$0")/latency_curve.py" --bench "$release/ringlog-bench" \
  --target "127.0.0.1:$port" --metrics "http://$http/metrics" --max-ops "$max_ops" \
  --disk-json "${disk_jsons[@]}" --seconds "${CURVE_SECONDS:-5}" --out "$curve_dir"

# Peak RSS and CPU time of the whole server run (all workloads), read before it exits.
hwm_kib=$(awk '/^VmHWM:/ {print $2}' "/proc/$server_pid/status")
cpu_ticks=$(awk '{print $14 + $15}' "/proc/$server_pid/stat")
echo "== server: peak RSS $((hwm_kib / 1024)) MiB, CPU $(awk -v t="$cpu_ticks" -v hz="$(getconf CLK_TCK)" 'BEGIN {printf "%.2f", t / hz}') s (user+system, both workloads)"
kill -TERM "$server_pid"
wait "$server_pid" || echo "server exited with status $?" >&2
server_pid=
# Everything the run wrote, checked offline: every record, sealed index and checkpoint.
"$release/ringlog" verify --data-dir "$run/data" >"$run/verify.txt" 2>&1 ||
  { grep -v "status=ok" "$run/verify.txt" | head -n 20 >&2; echo "ringlog verify found damage" >&2; exit 1; }
echo "== $(tail -n 1 "$run/verify.txt")"
echo "== server shutdown summary"
cat "$run/server.log"
python3 "$(dirname "$0")/bench_summary.py" "${summary_args[@]}" writes-seed="$run/seed.json"
