#!/usr/bin/env bash
# `make crash`: the real crash loop. Each cycle starts `ringlog serve` on the same data dir
# (so every start after the first runs recovery on a journal torn by SIGKILL), drives it with
# `ringlog-bench writes --verify-log`, kills it with SIGKILL at a random moment, restarts it
# and checks with `ringlog-bench reads` that every entry acked in that cycle reads back byte
# for byte. At the end every entry acked in any cycle is read back once more, after all the
# later recoveries. Prints cycles run and entries lost; exits 1 if anything was lost, corrupt
# or unreadable.
# Usage: scripts/crash_loop.sh RELEASE_DIR WORK_DIR CYCLES
# Env: CRASH_PORT (default 3199), CRASH_SHARDS (default 2), CRASH_KEEP=1 keeps WORK_DIR/run.*
set -euo pipefail
release=${1:?release dir} dir=${2:?work dir} cycles=${3:-200}
port=${CRASH_PORT:-3199} shards=${CRASH_SHARDS:-2}
mkdir -p "$dir"
run=$(mktemp -d "$dir/run.XXXXXX")
data=$run/data all_log=$run/acked-all.log
server_pid='' writer_pid=''
cleanup() {
  for pid in $writer_pid $server_pid; do
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  if [[ ${CRASH_KEEP:-0} != 1 ]]; then rm -rf "$run"; else echo "kept $run"; fi
}
trap cleanup EXIT

server_start() {
  "$release/ringlog" serve --data-dir "$data" --listen "127.0.0.1:$port" --http-listen 127.0.0.1:0 --shards "$shards" \
    >>"$run/server.log" 2>&1 &
  server_pid=$!
  local start_lines=$1
  for _ in $(seq 1 1200); do
    # One "ringlog listening on" line per start: wait for this start's line, not an earlier one.
    if (($(grep -c "^ringlog listening on" "$run/server.log") > start_lines)); then return 0; fi
    if ! kill -0 "$server_pid" 2>/dev/null; then
      tail -n 30 "$run/server.log" >&2
      echo "crash loop: the server exited during start (recovery refused the journal?)" >&2
      exit 1
    fi
    sleep 0.05
  done
  echo "crash loop: the server did not start within 60 s" >&2
  exit 1
}

# Verifies one verify log; prints the lost count, exits on a read problem other than loss.
verify() {
  local log=$1 json=$2
  if [[ ! -s $log ]]; then
    echo 0
    return 0
  fi
  if ! "$release/ringlog-bench" reads --target "127.0.0.1:$port" --verify-log "$log" \
    --json "$json" >>"$run/reads.log" 2>&1; then
    tail -n 20 "$run/reads.log" >&2
  fi
  python3 - "$json" <<'EOF'
import json, sys
report = json.load(open(sys.argv[1]))
print(int(report["missing"] + report["corrupt"] + report["read_errors"]))
EOF
}

echo "== crash loop: $cycles cycles, $shards shards, data dir $data"
starts=0 lost_total=0 acked_total=0 started=$(date +%s)
server_start "$starts"
starts=$((starts + 1))
for cycle in $(seq 1 "$cycles"); do
  log=$run/acked-$cycle.log
  "$release/ringlog-bench" writes --target "127.0.0.1:$port" --entry-size 1024 --ledgers 20 \
    --throttle 1000 --rate 10000 --seconds 60 --warmup-seconds 0 --ledger-id-base $((cycle * 1000)) \
    --verify-log "$log" >"$run/writer.log" 2>&1 &
  writer_pid=$!
  # Kill at a random moment within the first 1.5 s of load: early kills land in the first
  # segment's preparation and the first commits, later ones in the steady group commit.
  sleep "$(awk -v r="$RANDOM" 'BEGIN { printf "%.3f", 0.05 + (r % 1450) / 1000 }')"
  kill -KILL "$server_pid"
  wait "$server_pid" 2>/dev/null || true
  # The writer sees the connection drop, flushes its verify log and exits.
  wait "$writer_pid" 2>/dev/null || true
  writer_pid=
  server_start "$starts"
  starts=$((starts + 1))
  acked=0
  [[ -f $log ]] && acked=$(wc -l <"$log")
  lost=$(verify "$log" "$run/reads-$cycle.json")
  lost_total=$((lost_total + lost)) acked_total=$((acked_total + acked))
  [[ -f $log ]] && cat "$log" >>"$all_log"
  echo "cycle $cycle/$cycles: $acked entries acked before SIGKILL, $lost lost"
done
echo "== final check: every entry acked in any cycle, after $((starts - 1)) recoveries"
final_lost=$(verify "$all_log" "$run/reads-all.json")
kill -TERM "$server_pid"
wait "$server_pid" || { echo "crash loop: the server's final graceful stop failed" >&2; exit 1; }
server_pid=
elapsed=$(($(date +%s) - started))
echo "crash loop: cycles run $cycles, entries acked $acked_total, entries lost $lost_total" \
  "(final re-check: $final_lost), $elapsed s"
((lost_total == 0 && final_lost == 0))
