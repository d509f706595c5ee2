#!/usr/bin/env bash
# What a server option costs the seed workload (1 KiB, 50 ledgers, throttle 20000, sync), A/B
# in one run: `make scrub-overhead` (issue 35: the scrubber off, against its default highest
# rate, 4 MiB/s a shard, with the cycle shortened so that rate is what it reads: the worst
# case of the defaults) and `make digest-overhead` (--verify-digest-on-add off and on). A
# journal is first filled for FLAG_PREFILL_SECONDS (5) so there are sealed segments; then
# PAIRS alternating pairs (A B, B A, ...) restart the bookie on that same data with the "off"
# or the "on" flags. FLAG_CHECK names a shutdown-summary field that must be above 0 after
# every "on" run (scrub_bytes: the scrubber really read); FLAG_TARGETS, text printed with the
# ratios (the issue's targets). FLAG_THROTTLE (20000 adds outstanding), FLAG_RATE (open loop
# at that many adds/s instead) and FLAG_LEDGERS (50) change the workload; FLAG_FRESH=1 starts every run on an empty data dir (no prefill), for a flag that
# applies to segments as they are created; FLAG_PER_PAYLOAD=1 also divides FLAG_CHECK by the payload bytes acked (for
# bytes_written: journal bytes per byte of adds). Prints ops/s and p99 per run, the
# medians and the ratios on / off; results JSON in RESULTS_DIR as NAME-*.json.
# Usage: scripts/flag_overhead.sh NAME RELEASE_DIR BENCH_DIR PAIRS SECONDS "OFF FLAGS" "ON FLAGS"
set -euo pipefail
name=${1:?name} release=${2:?release dir} dir=${3:?bench dir} pairs=${4:-3} seconds=${5:-5}
read -ra off_flags <<<"${6:-}"
read -ra on_flags <<<"${7:-}"
prefill=${FLAG_PREFILL_SECONDS:-5}
check=${FLAG_CHECK:-}
throttle=${FLAG_THROTTLE:-20000}
load=(--throttle "$throttle")
[[ -n ${FLAG_RATE:-} ]] && load=(--rate "$FLAG_RATE")
ledgers=${FLAG_LEDGERS:-50}
per_payload=${FLAG_PER_PAYLOAD:-0}
fresh=${FLAG_FRESH:-0}
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
  "$release/ringlog-bench" writes --target "127.0.0.1:$port" --entry-size 1024 --ledgers "$ledgers" \
    "${load[@]}" --seconds "$1" --json "$2" >"$2.log" 2>&1
}

# The sum of a shutdown-summary field over the shards.
summary_sum() {
  # The whole field name: bytes_written is not index_bytes_written.
  grep -oE "(^| )$1=[0-9]+" "$2" | awk -F= '{sum += $2} END {printf "%d\n", sum}'
}

echo "== $name, machine: $(nproc) cores, kernel $(uname -r); prefill ${prefill} s of the seed workload (${load[*]} over $ledgers ledgers)"
echo "== off: ${off_flags[*]:-(defaults)}; on: ${on_flags[*]:-(defaults)}"
if [[ $fresh != 1 ]]; then
  server_start "$run/prefill.log" "${off_flags[@]}"
  seed "$prefill" "$run/prefill.json"
  server_stop
fi
for pair in $(seq 1 "$pairs"); do
  order=(off on)
  ((pair % 2 == 0)) && order=(on off)
  for arm in "${order[@]}"; do
    flags=("${off_flags[@]}")
    [[ $arm == on ]] && flags=("${on_flags[@]}")
    log="$run/server-$arm-$pair.log"
    [[ $fresh == 1 ]] && rm -rf "$run/data"
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
    python3 - "$run/seed-$arm-$pair.json" "$pair" "$arm" "${check:-check}" "$checked" "$per_payload" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
line = (f"pair {sys.argv[2]} {sys.argv[3]:>3}: {report['ops_per_sec']:>9.0f} ops/s  "
        f"p50 {report['p50_us']} us  p99 {report['p99_us']} us  {sys.argv[4]}={sys.argv[5]}")
if sys.argv[6] == "1":
    line += f" ({int(sys.argv[5]) / (report['count'] * report['entry_size']):.3f} a payload byte)"
print(line)
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
        row = {"pair": pair, "arm": arm, "ops_per_sec": report["ops_per_sec"],
               "p50_us": report["p50_us"], "p99_us": report["p99_us"], check or "check": checked}
        if os.environ.get("FLAG_PER_PAYLOAD") == "1":
            row["per_payload_byte"] = checked / (report["count"] * report["entry_size"])
        rows.append(row)
def median(arm, key):
    return statistics.median(row[key] for row in rows if row["arm"] == arm)
ratios = {"ops_per_sec": median("on", "ops_per_sec") / median("off", "ops_per_sec"),
          "p99_us": median("on", "p99_us") / median("off", "p99_us")}
targets = os.environ.get("FLAG_TARGETS", "")
print(f"median ops/s: off {median('off', 'ops_per_sec'):.0f}, on {median('on', 'ops_per_sec'):.0f}: "
      f"on/off {ratios['ops_per_sec']:.3f}")
print(f"median p99: off {median('off', 'p99_us'):.0f} us, on {median('on', 'p99_us'):.0f} us: "
      f"on/off {ratios['p99_us']:.2f}x")
if os.environ.get("FLAG_PER_PAYLOAD") == "1":
    ratios["per_payload_byte"] = median("on", "per_payload_byte") / median("off", "per_payload_byte")
    print(f"median {check} per payload byte: off {median('off', 'per_payload_byte'):.3f}, "
          f"on {median('on', 'per_payload_byte'):.3f}")
if targets:
    print(f"targets: {targets}")
json.dump({"pairs": pairs, "seconds": seconds, "off_flags": off_flags, "on_flags": on_flags,
           "rows": rows, "ratios": ratios}, open(out, "w"), indent=1)
print(f"results: {out}")
PY
