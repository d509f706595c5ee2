#!/usr/bin/env bash
# What a server option costs the seed workload (1 KiB, 50 ledgers, throttle 20000, sync), A/B
# in one run: `make scrub-overhead` (issue 35: the scrubber off, against its default highest
# rate, 4 MiB/s a shard, with the cycle shortened so that rate is what it reads: the worst
# case of the defaults) and `make digest-overhead` (--verify-digest-on-add off and on). A
# journal is first filled for FLAG_PREFILL_SECONDS (5) so there are sealed segments; then
# PAIRS alternating pairs (A B, B A, ...) restart the bookie on that same data with the "off"
# or the "on" flags. FLAG_CHECK names a shutdown-summary field that must be above 0 after
# every "on" run (scrub_bytes: the scrubber really read); FLAG_TARGETS, text printed with the
# ratios (the issue's targets). Prints ops/s and p99 per run, the
# medians and the ratios on / off; results JSON in RESULTS_DIR as NAME-*.json.
# Usage: scripts/flag_overhead.sh NAME RELEASE_DIR BENCH_DIR PAIRS SECONDS "OFF FLAGS" "ON FLAGS"
set -euo pipefail
name=${1:?name} release=${2:?release dir} dir=${3:?bench dir} pairs=${4:-3} seconds=${5:-5}
read -ra off_flags <<<"${6:-}"
read -ra on_flags <<<"${7:-}"
prefill=${FLAG_PREFILL_SECONDS:-5}
check=${FLAG_CHECK:-}
port=${FLAG_BENCH_PORT:-3192}
results=${RESULTS_DIR:-$(cd "$(dirname "$0")/.." && pwd)/results}
mkdir -p "$dir" "$results"
run=$(mktemp -d "$dir/$name.XXXXXX")
server_pid=
cleanup() {
  if [[ -n $server_pid ]] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$run"
}
trap cleanup EXIT

server_start() {
  local log=$1
  shift
  "$release/ringlog" serve --data-dir "$run/data" --listen "127.0.0.1:$port" --http-listen off \
    "$@" >"$log" 2>&1 &
  server_pid=$!
  for _ in $(seq 1 600); do
    grep -q "listening on" "$log" && return 0
    kill -0 "$server_pid" 2>/dev/null || { cat "$log"; echo "server exited" >&2; exit 1; }
    sleep 0.1
  done
  echo "server did not start" >&2
  exit 1
}

server_stop() {
  kill -TERM "$server_pid"
  wait "$server_pid" || { echo "server exited with status $?" >&2; exit 1; }
  server_pid=
}

seed() {
  "$release/ringlog-bench" writes --target "127.0.0.1:$port" --entry-size 1024 --ledgers 50 \
    --throttle 20000 --seconds "$1" --json "$2" >"$2.log" 2>&1
}

# The sum of a shutdown-summary field over the shards.
summary_sum() {
  grep -o "$1=[0-9]*" "$2" | awk -F= '{sum += $2} END {print sum + 0}'
}

echo "== $name, machine: $(nproc) cores, kernel $(uname -r); prefill ${prefill} s of the seed workload"
echo "== off: ${off_flags[*]:-(defaults)}; on: ${on_flags[*]:-(defaults)}"
server_start "$run/prefill.log" "${off_flags[@]}"
seed "$prefill" "$run/prefill.json"
server_stop
for pair in $(seq 1 "$pairs"); do
  order=(off on)
  ((pair % 2 == 0)) && order=(on off)
  for arm in "${order[@]}"; do
    flags=("${off_flags[@]}")
    [[ $arm == on ]] && flags=("${on_flags[@]}")
    log="$run/server-$arm-$pair.log"
    server_start "$log" "${flags[@]}"
    seed "$seconds" "$run/seed-$arm-$pair.json"
    server_stop
    checked=0
    if [[ -n $check ]]; then
      checked=$(summary_sum "$check" "$log")
      if [[ $arm == on ]] && ((checked == 0)); then
        cat "$log" >&2
        echo "$check is 0 after the \"on\" run of pair $pair" >&2
        exit 1
      fi
    fi
    echo "$checked" >"$run/checked-$arm-$pair"
    python3 - "$run/seed-$arm-$pair.json" "$pair" "$arm" "${check:-check}" "$checked" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
print(f"pair {sys.argv[2]} {sys.argv[3]:>3}: {report['ops_per_sec']:>9.0f} ops/s  "
      f"p99 {report['p99_us']} us  {sys.argv[4]}={sys.argv[5]}")
PY
  done
done

out="$results/$name-$(date -u +%Y%m%d-%H%M%S).json"
python3 - "$run" "$pairs" "$seconds" "$out" "${off_flags[*]:-}" "${on_flags[*]:-}" "$check" <<'PY'
import json, os, statistics, sys
run, pairs, seconds, out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
off_flags, on_flags, check = sys.argv[5], sys.argv[6], sys.argv[7]
rows = []
for pair in range(1, pairs + 1):
    for arm in ("off", "on"):
        report = json.load(open(f"{run}/seed-{arm}-{pair}.json"))
        checked = int(open(f"{run}/checked-{arm}-{pair}").read())
        rows.append({"pair": pair, "arm": arm, "ops_per_sec": report["ops_per_sec"],
                     "p99_us": report["p99_us"], check or "check": checked})
def median(arm, key):
    return statistics.median(row[key] for row in rows if row["arm"] == arm)
ratios = {"ops_per_sec": median("on", "ops_per_sec") / median("off", "ops_per_sec"),
          "p99_us": median("on", "p99_us") / median("off", "p99_us")}
targets = os.environ.get("FLAG_TARGETS", "")
print(f"median ops/s: off {median('off', 'ops_per_sec'):.0f}, on {median('on', 'ops_per_sec'):.0f}: "
      f"on/off {ratios['ops_per_sec']:.3f}")
print(f"median p99: off {median('off', 'p99_us'):.0f} us, on {median('on', 'p99_us'):.0f} us: "
      f"on/off {ratios['p99_us']:.2f}x")
if targets:
    print(f"targets: {targets}")
json.dump({"pairs": pairs, "seconds": seconds, "off_flags": off_flags, "on_flags": on_flags,
           "rows": rows, "ratios": ratios}, open(out, "w"), indent=1)
print(f"results: {out}")
PY
