#!/usr/bin/env bash
# `make crash`: the real crash loop. Each cycle starts `ringlog serve` on the same data dir
# (so every start after the first runs recovery on a journal torn by SIGKILL), drives it with
# `ringlog-bench writes --verify-log`, kills it with SIGKILL at a random moment, restarts it
# and checks with `ringlog-bench reads` that every entry acked in that cycle reads back byte
# for byte. At the end every entry acked in any cycle is read back once more, after all the
# later recoveries. Prints cycles run and entries lost; exits 1 if anything was lost, corrupt
# or unreadable.
#
# `make crash-deletes` (CRASH_DELETES=1): the same loop with ledgers deleted, so the kills
# land while garbage collection, tombstone checkpoints, segment removal and compaction run.
# A ZooKeeper (scripts/zk.sh) holds the ledgers' metadata; the server runs with --zk, a
# collector round every CRASH_GC_INTERVAL_MS (1000), CRASH_SEGMENT_SIZE (4 MiB) segments and
# compaction at 512 MiB/s. Each cycle:
#   1. `ringlog-bench ledgers` creates the znodes of this cycle's ledgers (before any add: a
#      ledger without metadata is the collector's to delete) and deletes the znodes of each
#      live ledger of earlier cycles with probability 1/2, except the first ledger of every
#      cycle, which is never deleted: its entries stay in every segment, so segments are
#      compacted around them, not only removed, and the checks read entries that lived
#      through every later compaction;
#   2. writes as above, then SIGKILL: in half the cycles at a random moment of the writes,
#      in the other half at a random moment within 1.5 s after the collector's first deletion
#      of this start (the checkpoint, the removals and the compactions follow it);
#   3. restart, then the settled check: `reads --deleted --deleted-only` on every deleted
#      ledger before the collector's first round of this start can run (it sleeps one
#      interval after registering, which follows the "listening" line, so before that line +
#      one interval; a check that ends later proves nothing and is only counted). What
#      recovery brought back is then all there is: a deleted ledger must read back whole or
#      not at all, and one read back not at all becomes "collected": from then on it must
#      answer missing after every restart;
#   4. the full check: every acked entry of every live ledger byte for byte, the deleted
#      ones correct or missing (the collector runs meanwhile), collected ones missing.
#   At the end the collector gets a few rounds, the server stops with SIGTERM and starts once
#   more (again, up to three times, while the check is late): every deleted ledger with an
#   acked entry must then be collected.
#   Segments removed and compacted are counted from the data dir (a segment file gone, or
#   replaced by another inode under its name) between kills.
#
# Usage: scripts/crash_loop.sh RELEASE_DIR WORK_DIR CYCLES
# Env: CRASH_PORT (default 3199), CRASH_SHARDS (default 2), CRASH_KEEP=1 keeps WORK_DIR/run.*,
#   CRASH_DELETES=1, and with it CRASH_ZK_PORT (a free one), CRASH_GC_INTERVAL_MS (1000),
#   CRASH_SEGMENT_SIZE (4194304), CRASH_LEDGERS (10 a cycle), CRASH_SEED (random; replays
#   the choices, not the timing), CRASH_SERVER_ARGS (extra `ringlog serve` flags).
set -euo pipefail
export LC_ALL=C # awk's number formats, whatever the locale
release=${1:?release dir} dir=${2:?work dir} cycles=${3:-200}
port=${CRASH_PORT:-3199} shards=${CRASH_SHARDS:-2}
deletes=${CRASH_DELETES:-0}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mkdir -p "$dir"
run=$(mktemp -d "$dir/run.XXXXXX")
data=$run/data all_log=$run/acked-all.log
server_pid='' writer_pid='' zk_dir=''
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
  for pid in $writer_pid $server_pid; do
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  if [[ -n $zk_dir ]]; then "$root/scripts/zk.sh" stop "$zk_dir" || true; fi
  if [[ ${CRASH_KEEP:-0} != 1 ]]; then rm -rf "$run"; else echo "kept $run"; fi
}
trap cleanup EXIT

die() {
  echo "crash loop: $*" >&2
  exit 1
}

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# Starts the server and returns once this start's "listening" line is in the log. Sets
# listening_after_ms to a time the line was written after: the last look that did not find it
# (the launch, if the first look did). The server registers only after printing it, and the
# collector's first round comes one interval after registering.
server_args=() listening_after_ms=0
server_start() {
  local look_ms
  listening_after_ms=$(now_ms)
  "$release/ringlog" serve --data-dir "$data" --listen "127.0.0.1:$port" --http-listen 127.0.0.1:0 \
    --shards "$shards" "${server_args[@]}" >>"$run/server.log" 2>&1 &
  server_pid=$!
  local start_lines=$1
  for _ in $(seq 1 1200); do
    look_ms=$(now_ms)
    # One "ringlog listening on" line per start: wait for this start's line, not an earlier one.
    if (($(grep -c "^ringlog listening on" "$run/server.log") > start_lines)); then return 0; fi
    listening_after_ms=$look_ms
    if ! kill -0 "$server_pid" 2>/dev/null; then
      tail -n 30 "$run/server.log" >&2
      die "the server exited during start (recovery refused the journal?)"
    fi
    sleep 0.05
  done
  die "the server did not start within 60 s"
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

# A random kill delay in seconds: FIRST_MS plus up to SPAN_MS, from bash's seeded RANDOM.
delay() { # FIRST_MS SPAN_MS
  awk -v r="$RANDOM" -v f="$1" -v s="$2" 'BEGIN { printf "%.3f", (f + r % s) / 1000 }'
}

# The original loop: no metadata, no deletions.
crash_loop() {
  echo "== crash loop: $cycles cycles, $shards shards, data dir $data"
  local starts=0 lost_total=0 acked_total=0 started cycle log acked lost final_lost elapsed
  started=$(date +%s)
  server_start "$starts"
  starts=$((starts + 1))
  for cycle in $(seq 1 "$cycles"); do
    log=$run/acked-$cycle.log
    "$release/ringlog-bench" writes --target "127.0.0.1:$port" --entry-size 1024 --ledgers 20 \
      --throttle 1000 --rate 10000 --seconds 60 --warmup-seconds 0 \
      --ledger-id-base $((cycle * 1000)) --verify-log "$log" >"$run/writer.log" 2>&1 &
    writer_pid=$!
    # Kill at a random moment within the first 1.5 s of load: early kills land in the first
    # segment's preparation and the first commits, later ones in the steady group commit.
    sleep "$(delay 50 1450)"
    kill -KILL "$server_pid"
    wait "$server_pid" 2>/dev/null || true
    # The writer sees the connection drop, flushes its verify log and exits.
    wait "$writer_pid" 2>/dev/null || true
    writer_pid=
    server_start "$starts"
    starts=$((starts + 1))
    acked=0
    # Lines but the header comment.
    [[ -f $log ]] && acked=$(grep -vc '^#' "$log" || true)
    lost=$(verify "$log" "$run/reads-$cycle.json")
    lost_total=$((lost_total + lost)) acked_total=$((acked_total + acked))
    [[ -f $log ]] && cat "$log" >>"$all_log"
    echo "cycle $cycle/$cycles: $acked entries acked before SIGKILL, $lost lost"
  done
  echo "== final check: every entry acked in any cycle, after $((starts - 1)) recoveries"
  final_lost=$(verify "$all_log" "$run/reads-all.json")
  kill -TERM "$server_pid"
  wait "$server_pid" || die "the server's final graceful stop failed"
  server_pid=
  verify_offline
  elapsed=$(($(date +%s) - started))
  echo "crash loop: cycles run $cycles, entries acked $acked_total, entries lost $lost_total" \
    "(final re-check: $final_lost), $elapsed s"
  ((lost_total == 0 && final_lost == 0))
}

# `ringlog verify` on the stopped server's data: every record, sealed index and checkpoint
# checksummed, offline (exit 0 only when nothing is damaged).
verify_offline() {
  local out
  if ! out=$("$release/ringlog" verify --data-dir "$data" 2>&1); then
    echo "$out" | grep -v "status=ok" | head -n 20 >&2
    die "ringlog verify found damage in $data"
  fi
  echo "   $(echo "$out" | tail -n 1)"
}

# --- CRASH_DELETES=1 -------------------------------------------------------------------------

# `KEY=VALUE ...` of the numbers of a reads JSON report (absent keys are 0).
json_numbers() { # FILE KEY...
  python3 - "$@" <<'EOF'
import json, sys
report = json.load(open(sys.argv[1]))
print(" ".join("%s=%d" % (key, int(report.get(key, 0))) for key in sys.argv[2:]))
EOF
}

# Runs `reads` on the whole acked log with the deleted list; its JSON goes to FILE. A failure
# the report counts (lost, corrupt, resurrected...) is the caller's to judge from the counts;
# any other (no report, a connection lost, no answer for 30 s) ends the loop here, since the
# report's counts would then be those of a run cut short.
reads_deleted() { # JSON_FILE, then extra `reads` flags
  local json=$1 status=0 errors
  shift
  rm -f "$json"
  "$release/ringlog-bench" reads --target "127.0.0.1:$port" --verify-log "$all_log" \
    --deleted "$run/deleted.list" --json "$json" "$@" >>"$run/reads.log" 2>&1 || status=$?
  if [[ ! -s $json ]]; then
    tail -n 20 "$run/reads.log" >&2
    die "ringlog-bench reads wrote no report ($json)"
  fi
  errors=$(json_numbers "$json" errors)
  if ((status != 0)) && [[ $errors == errors=0 ]]; then
    tail -n 20 "$run/reads.log" >&2
    die "ringlog-bench reads failed before it checked everything ($json)"
  fi
}

# Segment files of the data dir as `PATH INODE` lines, sorted.
segments_list() {
  find "$data" -name '*.segment' -printf '%p %i\n' | sort
}

# Compares two segments_list outputs: prints `REMOVED COMPACTED`, a segment gone from the
# later list, and one whose name holds another inode (a compacted copy renamed over it).
segments_diff() { # EARLIER LATER
  awk 'FILENAME == ARGV[1] { inode[$1] = $2; next }
       { seen[$1] = 1; if (($1 in inode) && inode[$1] != $2) compacted++ }
       END { for (path in inode) if (!(path in seen)) removed++
             printf "%d %d\n", removed, compacted }' "$1" "$2"
}

# Sum of `gc: deleting N ledgers` over the server log: deletions the collector mailed,
# counting again the ones recovery brought back and the collector deleted again.
collector_deletions() {
  { grep -o "^ringlog: gc: deleting [0-9]* ledgers" "$run/server.log" || true; } |
    awk '{ sum += $4 } END { printf "%d\n", sum }'
}

# Kills the server at a random moment: of the writes (KIND writes), or after the collector's
# first deletion of this start (KIND gc; if none comes within 8 s, then).
kill_server() { # KIND GC_LINES_BEFORE
  local kind=$1 gc_lines=$2
  if [[ $kind == gc ]]; then
    for _ in $(seq 1 160); do
      if (($(grep -c "^ringlog: gc: deleting" "$run/server.log") > gc_lines)); then break; fi
      sleep 0.05
    done
    # Half of these within 300 ms: the checkpoint and the compactions (4 MiB at 512 MiB/s)
    # come first and fast; the removals follow at one per shard per 100 ms.
    sleep "$(delay 0 $((RANDOM % 2 == 0 ? 300 : 1500)))"
  else
    sleep "$(delay 50 2950)"
  fi
  kill -KILL "$server_pid"
  wait "$server_pid" 2>/dev/null || true
  server_pid=
}

crash_loop_deletes() {
  local zk_port=${CRASH_ZK_PORT:-} gc_interval_ms=${CRASH_GC_INTERVAL_MS:-1000}
  local segment_size=${CRASH_SEGMENT_SIZE:-4194304} ledgers=${CRASH_LEDGERS:-10}
  local seed=${CRASH_SEED:-$((RANDOM * 32768 + RANDOM))} zk_root=/crash-deletes
  local extra_args value
  read -ra extra_args <<<"${CRASH_SERVER_ARGS:-}"
  for value in "$gc_interval_ms" "$segment_size" "$ledgers" "$seed"; do
    [[ $value =~ ^[0-9]+$ ]] || die "CRASH_* numbers must be non-negative integers, not '$value'"
  done
  ((ledgers >= 2 && ledgers <= 1000)) || die "CRASH_LEDGERS must be 2 to 1000"
  RANDOM=$seed
  if [[ -z $zk_port ]]; then
    zk_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])')
  fi
  zk_dir=$run/zk
  ZK_WATCH_PID=$$ "$root/scripts/zk.sh" start "$zk_port" "$zk_dir" | sed 's/^/   /'
  local zk=127.0.0.1:$zk_port
  # A short ZooKeeper session: a SIGKILLed bookie's registration znode lives until its session
  # expires, the restarted bookie waits for that before registering, and the collector's
  # first round comes one interval after registering. With the 10 s default the collector
  # would barely run between kills.
  server_args=(--zk "$zk" --zk-root "$zk_root" --zk-session-timeout-ms 1000
    --gc-interval-ms "$gc_interval_ms" --segment-size "$segment_size"
    --compaction-rate-mib 512 "${extra_args[@]}")
  echo "== crash loop with deletions: $cycles cycles, $shards shards, $ledgers ledgers a" \
    "cycle, gc every $gc_interval_ms ms, $((segment_size >> 10)) KiB segments, seed $seed," \
    "data dir $data"
  : >"$run/deleted.list"
  : >"$all_log"
  : >"$run/segments.prev"
  local starts=0 started cycle log acked acked_total=0 kind gc_lines settled_last=
  local deletable=() kept=() deleting=() id lost=0 removed=0 compacted=0 late=0
  local removed_cycle compacted_cycle deleted_total=0 first_id ids_delete numbers
  local missing corrupt read_errors resurrected collected count deleted_ledgers_collected
  started=$(date +%s)
  server_start "$starts"
  starts=$((starts + 1))
  for cycle in $(seq 1 "$cycles"); do
    log=$run/acked-$cycle.log
    first_id=$((cycle * 1000))
    # Each deletable live ledger of the earlier cycles goes with probability 1/2.
    deleting=() kept=()
    for id in "${deletable[@]}"; do
      if ((RANDOM % 2 == 0)); then deleting+=("$id"); else kept+=("$id"); fi
    done
    deletable=("${kept[@]}")
    ids_delete=$(
      IFS=,
      echo "${deleting[*]}"
    )
    # Counted before the znodes go: the collector may delete them before `ledgers` returns.
    gc_lines=$(grep -c "^ringlog: gc: deleting" "$run/server.log" || true)
    "$release/ringlog-bench" ledgers --zk "$zk" --zk-root "$zk_root" \
      --create "$first_id-$((first_id + ledgers - 1))" ${ids_delete:+--delete "$ids_delete"} \
      >>"$run/ledgers.log" 2>&1 || {
      tail -n 5 "$run/ledgers.log" >&2
      die "ringlog-bench ledgers failed"
    }
    for id in "${deleting[@]}"; do echo "$id" >>"$run/deleted.list"; done
    deleted_total=$((deleted_total + ${#deleting[@]}))
    "$release/ringlog-bench" writes --target "127.0.0.1:$port" --entry-size 1024 \
      --ledgers "$ledgers" --throttle 1000 --rate 10000 --seconds 60 --warmup-seconds 0 \
      --ledger-id-base "$first_id" --verify-log "$log" >"$run/writer.log" 2>&1 &
    writer_pid=$!
    kind=writes
    if ((RANDOM % 2 == 0 && ${#deleting[@]} > 0)); then kind=gc; fi
    kill_server "$kind" "$gc_lines"
    wait "$writer_pid" 2>/dev/null || true
    writer_pid=
    segments_list >"$run/segments.now"
    read -r removed_cycle compacted_cycle \
      < <(segments_diff "$run/segments.prev" "$run/segments.now")
    mv "$run/segments.now" "$run/segments.prev"
    removed=$((removed + removed_cycle)) compacted=$((compacted + compacted_cycle))
    for id in $(seq $((first_id + 1)) $((first_id + ledgers - 1))); do deletable+=("$id"); done
    acked=0
    [[ -f $log ]] && acked=$(grep -vc '^#' "$log" || true) && cat "$log" >>"$all_log"
    acked_total=$((acked_total + acked))

    server_start "$starts"
    starts=$((starts + 1))
    settled_check "settled-$cycle" "$gc_interval_ms"
    reads_deleted "$run/reads-$cycle.json"
    numbers=$(json_numbers "$run/reads-$cycle.json" count missing corrupt read_errors \
      resurrected deleted_ledgers_collected)
    eval "$numbers" # count= missing= ... from our own JSON report
    if ((missing + corrupt + read_errors + resurrected > 0)); then
      tail -n 25 "$run/reads.log" >&2
      die "cycle $cycle: $missing live entries lost, $corrupt corrupt, $read_errors read" \
        "errors, $resurrected deleted ledgers resurrected (seed $seed; CRASH_KEEP=1 keeps the data)"
    fi
    collected=$deleted_ledgers_collected
    echo "cycle $cycle/$cycles: $acked acked before SIGKILL ($kind kill), $count live entries" \
      "verified, 0 lost; deleted ${#deleting[@]} (total $deleted_total), collected" \
      "$collected, resurrected 0; segments removed $removed_cycle, compacted $compacted_cycle"
    echo "   settled check: deleted ledgers $settled_last"
  done
  finish_deletes
}

# The check right after a restart, before the collector's first round of this start (see the
# header; server_start's listening_after_ms bounds when the server registered from below).
# Promotes the deleted ledgers it found gone to collected; fails on a deleted ledger read back
# partly, on wrong bytes and on a resurrection.
settled_check() { # LABEL GC_INTERVAL_MS
  local label=$1 gc_interval_ms=$2 json=$run/$1.json settled_ms numbers
  reads_deleted "$json" --deleted-only --deleted-out "$run/deleted.next"
  settled_ms=$(($(now_ms) - listening_after_ms))
  numbers=$(json_numbers "$json" corrupt read_errors resurrected deleted_ledgers_partial \
    deleted_ledgers_readable deleted_ledgers_missing deleted_ledgers_unread)
  local corrupt read_errors resurrected deleted_ledgers_partial deleted_ledgers_readable
  local deleted_ledgers_missing deleted_ledgers_unread
  eval "$numbers"
  if ((corrupt + read_errors + resurrected > 0)); then
    tail -n 25 "$run/reads.log" >&2
    die "$label: deleted ledgers: $corrupt corrupt, $read_errors read errors, $resurrected" \
      "resurrected"
  fi
  if ((settled_ms >= gc_interval_ms)); then
    # The collector may have run: what it deleted in memory is not yet what a crash keeps.
    late=$((late + 1))
    settled_last="not counted: it ended $settled_ms ms after the listening line, when the"
    settled_last+=" collector may have run"
    return 0
  fi
  if ((deleted_ledgers_partial > 0)); then
    tail -n 25 "$run/reads.log" >&2
    die "$label: $deleted_ledgers_partial deleted ledgers came back partly after recovery" \
      "(see reads.log's note for their ids)"
  fi
  mv "$run/deleted.next" "$run/deleted.list"
  settled_last="$deleted_ledgers_readable readable, $deleted_ledgers_missing missing,"
  settled_last+=" $deleted_ledgers_unread without acked entries ($settled_ms ms after the"
  settled_last+=" listening line)"
}

# The end: rounds of the collector, a graceful stop and one more start; every deleted ledger
# with an acked entry must then be collected, and every live entry still there.
finish_deletes() {
  local gc_interval_ms=${CRASH_GC_INTERVAL_MS:-1000} numbers summary elapsed attempt
  sleep "$(awk -v g="$gc_interval_ms" 'BEGIN { printf "%.3f", 3 * g / 1000 + 1 }')"
  kill -TERM "$server_pid"
  wait "$server_pid" || die "the server's graceful stop failed"
  server_pid=
  segments_list >"$run/segments.now"
  read -r removed_cycle compacted_cycle < <(segments_diff "$run/segments.prev" "$run/segments.now")
  removed=$((removed + removed_cycle)) compacted=$((compacted + compacted_cycle))
  summary=$(grep " summary: " "$run/server.log" | tail -n "$shards")
  # A late check proves nothing; after a graceful stop another start is as good a witness.
  for attempt in 1 2 3; do
    server_start "$starts"
    starts=$((starts + 1))
    settled_check "settled-final" "$gc_interval_ms"
    [[ $settled_last == "not counted"* ]] || break
    echo "   final settled check, attempt $attempt: $settled_last"
    ((attempt < 3)) || die "the final settled check was late three times: rerun on a quieter host"
    kill -TERM "$server_pid"
    wait "$server_pid" || die "the server's graceful stop failed"
    server_pid=
  done
  numbers=$(json_numbers "$run/settled-final.json" deleted_ledgers_readable \
    deleted_ledgers_missing deleted_ledgers_unread)
  local deleted_ledgers_readable deleted_ledgers_missing deleted_ledgers_unread
  eval "$numbers"
  reads_deleted "$run/reads-final.json"
  numbers=$(json_numbers "$run/reads-final.json" count missing corrupt read_errors resurrected \
    deleted_ledgers_collected)
  eval "$numbers"
  kill -TERM "$server_pid"
  wait "$server_pid" || die "the server's final graceful stop failed"
  server_pid=
  verify_offline
  elapsed=$(($(date +%s) - started))
  echo "== final check after $((starts - 1)) restarts ($cycles SIGKILLs, then SIGTERMs):" \
    "$count live entries verified, $missing lost, $corrupt corrupt, $read_errors read errors;" \
    "deleted ledgers: $deleted_ledgers_missing collected, $deleted_ledgers_readable still" \
    "readable after a graceful restart, $deleted_ledgers_unread without acked entries," \
    "$resurrected resurrected"
  # A SIGKILLed server prints no summary: only the run stopped by SIGTERM has one.
  echo "   the SIGTERMed run's shard summaries (the collector's last rounds):"
  echo "$summary" | awk '{ line = "     " $1 " " $2 ":"
    for (i = 3; i <= NF; i++)
      if ($i ~ /^(ledgers_deleted|checkpoints_written|segments_removed|compactions_done)=/)
        line = line " " $i
    print line }'
  echo "crash loop with deletions: cycles run $cycles, entries acked $acked_total, live entries" \
    "verified $count, entries lost $missing, corrupt $corrupt; ledgers deleted $deleted_total," \
    "deletions collected $deleted_ledgers_collected, resurrected $resurrected; collector" \
    "deletions logged $(collector_deletions); segments removed $removed, compacted $compacted" \
    "(seen in the data dir between kills); settled checks too late to count $late; $elapsed s"
  ((missing + corrupt + read_errors + resurrected == 0)) || exit 1
  ((deleted_ledgers_readable == 0)) ||
    die "$deleted_ledgers_readable deleted ledgers still read back after the collector's" \
      "rounds and a graceful restart"
}

if [[ $deletes == 1 ]]; then
  for binary in ringlog ringlog-bench; do
    [[ -x $release/$binary ]] || die "$release/$binary missing: cargo build --release --workspace"
  done
  crash_loop_deletes
else
  crash_loop
fi
