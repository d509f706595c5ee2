#!/usr/bin/env bash
# `make scrub-overhead` (issue 35): what the scrubber costs the seed workload (1 KiB, 50
# ledgers, throttle 20000, sync), A/B in one run. A journal is first filled for
# SCRUB_PREFILL_SECONDS (5) so there are sealed segments to scrub; then PAIRS alternating
# pairs (A B, B A, ...) restart the bookie on that same data with the scrubber off
# (--scrub-rate-mib 0) or at its default highest rate (4 MiB/s a shard) with the cycle
# shortened so that rate is what it reads (--scrub-cycle-hours 0.0001: the worst case of the
# defaults; at the default week a small journal is scrubbed far slower). Each run's server
# summary shows the bytes scrubbed, so a run whose scrubber read nothing fails. Prints ops/s
# and p99 per run, the medians and the ratios on / off; results JSON in RESULTS_DIR.
# SCRUB_BENCH_RATE_MIB (4) sets the rate of the "on" arm, to see the cost at higher rates.
# Usage: scripts/scrub_overhead.sh RELEASE_DIR BENCH_DIR [PAIRS] [SECONDS]
set -euo pipefail
release=${1:?release dir} dir=${2:?bench dir} pairs=${3:-3} seconds=${4:-5}
prefill=${SCRUB_PREFILL_SECONDS:-5}
rate=${SCRUB_BENCH_RATE_MIB:-4}
port=${SCRUB_BENCH_PORT:-3192}
results=${RESULTS_DIR:-$(cd "$(dirname "$0")/.." && pwd)/results}
mkdir -p "$dir" "$results"
run=$(mktemp -d "$dir/scrub-overhead.XXXXXX")
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

echo "== machine: $(nproc) cores, kernel $(uname -r); prefill ${prefill} s of the seed workload"
server_start "$run/prefill.log" --scrub-rate-mib 0
seed "$prefill" "$run/prefill.json"
server_stop
for pair in $(seq 1 "$pairs"); do
  order=(off on)
  ((pair % 2 == 0)) && order=(on off)
  for arm in "${order[@]}"; do
    flags=(--scrub-rate-mib 0)
    [[ $arm == on ]] && flags=(--scrub-rate-mib "$rate" --scrub-cycle-hours 0.0001)
    log="$run/server-$arm-$pair.log"
    server_start "$log" "${flags[@]}"
    seed "$seconds" "$run/seed-$arm-$pair.json"
    server_stop
    scrubbed=$(summary_sum scrub_bytes "$log")
    if [[ $arm == on ]] && ((scrubbed == 0)); then
      cat "$log" >&2
      echo "the scrubber read nothing in pair $pair" >&2
      exit 1
    fi
    echo "$scrubbed" >"$run/scrubbed-$arm-$pair"
    python3 - "$run/seed-$arm-$pair.json" "$pair" "$arm" "$scrubbed" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
print(f"pair {sys.argv[2]} scrub {sys.argv[3]:>3}: {report['ops_per_sec']:>9.0f} ops/s  "
      f"p99 {report['p99_us']} us  scrubbed {int(sys.argv[4]) / 1048576:.1f} MiB")
PY
  done
done

out="$results/scrub-overhead-$(date -u +%Y%m%d-%H%M%S).json"
python3 - "$run" "$pairs" "$seconds" "$out" <<'PY'
import json, statistics, sys
run, pairs, seconds, out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
rows = []
for pair in range(1, pairs + 1):
    for arm in ("off", "on"):
        report = json.load(open(f"{run}/seed-{arm}-{pair}.json"))
        scrubbed = int(open(f"{run}/scrubbed-{arm}-{pair}").read())
        rows.append({"pair": pair, "scrub": arm, "ops_per_sec": report["ops_per_sec"],
                     "p99_us": report["p99_us"], "scrub_bytes": scrubbed})
def median(arm, key):
    return statistics.median(row[key] for row in rows if row["scrub"] == arm)
ratios = {"ops_per_sec": median("on", "ops_per_sec") / median("off", "ops_per_sec"),
          "p99_us": median("on", "p99_us") / median("off", "p99_us")}
print(f"median ops/s: off {median('off', 'ops_per_sec'):.0f}, on {median('on', 'ops_per_sec'):.0f}: "
      f"on/off {ratios['ops_per_sec']:.3f} (target >= 0.95)")
print(f"median p99: off {median('off', 'p99_us'):.0f} us, on {median('on', 'p99_us'):.0f} us: "
      f"on/off {ratios['p99_us']:.2f}x (target <= 1.2x)")
json.dump({"pairs": pairs, "seconds": seconds, "rows": rows, "ratios": ratios}, open(out, "w"), indent=1)
print(f"results: {out}")
PY
