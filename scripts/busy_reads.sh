#!/usr/bin/env bash
# `make busy-reads` (issue 32): catch-up reads on a busy bookie. For each ledger count of
# BUSY_LEDGERS (50 and 500), on a fresh data dir and one `ringlog serve` (2 shards, default
# flags plus BUSY_SERVER_ARGS):
#   1. fill: open-loop 1 KiB adds at BUSY_RATE (60,000/s) over the ledgers for BUSY_FILL_S (60),
#      every acked entry logged (`writes --verify-log`);
#   2. restart (SIGTERM, start again on the data), page cache dropped, and the same write load
#      starts again (new ledgers, one HdrHistogram interval a second);
#   3. BUSY_READ_DELAY_S (4) later, one ledger of the fill (its first) is read alone, in entry
#      order, every entry checked (`reads --ledger ID`), and, where it holds less than
#      BUSY_ONE_READ_MIN_MB (640, about 3 s of reading; one ledger of 50 holds 72 MB, of 500
#      7.6 MB), the next ledgers after it, one at a time (`--ledger A,B,...`);
#      BUSY_CONTROL_S (10) of writes alone;
#   4. every ledger of the fill read at once (`reads`, all checked); BUSY_CONTROL_S alone again;
#   5. the writer stopped, the server stopped.
# Measured, all in that one server run: the writers' p99 before the first read, during each
# read and after each (the controls), per second and per phase; each read's MB/s, per second
# from its progress lines and in all; the bytes the server read from the disk during each read
# (/proc/PID/io read_bytes, which counts O_DIRECT reads, and the engine's own split: reads'
# windows and index pages against compaction's read-back) per byte served; and the write
# amplification of the whole run: bytes the two server processes wrote (/proc/PID/io
# write_bytes: journal, zero-ahead, indexes, checkpoints, sorted copies) per payload byte
# acked; and the host's CPU use per phase (/proc/stat each second: the clients run on the
# bookie's cores here). scripts/busy_reads_report.py writes busy-reads.json, busy-reads.md and
# busy-reads.png (write p99 and read MB/s per second) into the results dir.
#
# BOOKIE=java runs the same scenario on the Java bookie 4.18.2 (DbLedgerStorage, as
# `make compare-catchup`) through interop's Serve; its disk bytes are the bookie JVM's.
#
# Usage: scripts/busy_reads.sh RELEASE_DIR RESULTS_DIR
# Env: BUSY_LEDGERS ("50 500"), BUSY_RATE (60000), BUSY_FILL_S (60), BUSY_READ_DELAY_S (4),
#   BUSY_CONTROL_S (10), BUSY_ONE_READ_MIN_MB (640), BUSY_SERVER_ARGS (extra `ringlog serve`
#   flags), BOOKIE (ringlog),
#   BUSY_READER_NICE (0: the reader's nice level; on a host where the clients share the
#   bookie's cores, 19 shows how much of the writers' p99 during a read is the reader
#   client's CPU, which in production runs on another machine),
#   BUSY_WRITER_POLL_US (0: the writers' `--busy-poll-us`; 0 sleeps on the socket as the
#   Java client's Netty does, where the bench's default 200 would spin a core of this 2-core
#   host beside the bookie), BUSY_LOAD_SETTLE_S (3: the reader loads its verify log, then waits
#   this long before its first request, so that the load's second of CPU is not in the read),
#   BUSY_DIR (the parent of the data dirs: target/), BUSY_ENFORCE=1 (fail on a missed target:
#   one-ledger MB/s, bytes read per byte served, p99 ratio; see the report).
set -euo pipefail
export LC_ALL=C
release=${1:?release dir} results_root=${2:?results dir}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
release=$(cd "$release" && pwd)
ledger_counts=${BUSY_LEDGERS:-50 500} rate=${BUSY_RATE:-60000} fill_s=${BUSY_FILL_S:-60}
read_delay_s=${BUSY_READ_DELAY_S:-4} control_s=${BUSY_CONTROL_S:-10}
reader_nice=${BUSY_READER_NICE:-0} writer_poll_us=${BUSY_WRITER_POLL_US:-0}
load_settle_s=${BUSY_LOAD_SETTLE_S:-3} one_read_min_mb=${BUSY_ONE_READ_MIN_MB:-640}
bookie=${BOOKIE:-ringlog}
read -ra server_args <<<"${BUSY_SERVER_ARGS:-}"

die() {
  echo "busy-reads: $*" >&2
  exit 1
}
read -ra counts <<<"$ledger_counts"
[[ $reader_nice =~ ^[0-9]+$ && $reader_nice -le 19 ]] ||
  die "BUSY_READER_NICE must be a nice level 0..19, not '$reader_nice'"
[[ $writer_poll_us =~ ^[0-9]+$ && $writer_poll_us -le 10000 ]] ||
  die "BUSY_WRITER_POLL_US must be 0..10000 microseconds, not '$writer_poll_us'"
[[ $one_read_min_mb =~ ^[0-9]+$ && $one_read_min_mb -le 1000000 ]] ||
  die "BUSY_ONE_READ_MIN_MB must be 0..1000000 MB, not '$one_read_min_mb'"
[[ $load_settle_s =~ ^[0-9]+$ && $load_settle_s -le 600 ]] ||
  die "BUSY_LOAD_SETTLE_S must be 0..600 seconds, not '$load_settle_s'"
for value in "${counts[@]}" "$rate" "$fill_s" "$read_delay_s" "$control_s"; do
  [[ $value =~ ^[1-9][0-9]*$ ]] || die "BUSY_LEDGERS and the BUSY_* numbers must be positive integers, not '$value'"
done
case $bookie in
  ringlog | java) ;;
  *) die "BOOKIE must be ringlog or java, not '$bookie'" ;;
esac
for binary in ringlog ringlog-bench; do
  [[ -x $release/$binary ]] || die "$release/$binary missing: cargo build --release --workspace"
done
if [[ $bookie == java && ! -s $root/interop/target/classpath.txt ]]; then
  die "BOOKIE=java needs interop built: cd interop && mvn -B -q compile"
fi
results="$results_root/busy-reads-$bookie-$(date -u +%Y%m%d-%H%M%S)"
mkdir -p "$results" "${BUSY_DIR:-$root/target}"
work=$(mktemp -d "${BUSY_DIR:-$root/target}/busy-reads.XXXXXX")

server_pid='' writer_pid='' serve_pid='' cpu_pid='' read_failures=0
cleanup() {
  [[ -n $cpu_pid ]] && kill "$cpu_pid" 2>/dev/null
  [[ -n $writer_pid ]] && kill "$writer_pid" 2>/dev/null
  [[ -n $server_pid ]] && kill -TERM "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
  if [[ -n $serve_pid ]]; then
    exec 7>&-
    wait "$serve_pid" 2>/dev/null
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# Drops the page cache (the Java bookie reads through it; ringlog's O_DIRECT reads never
# do). Dropping a large cache stalls other processes for up to a few hundred ms here, so
# while a writer runs its span goes to $prefix-drops.txt and the report leaves those seconds
# (and the next) out of every phase.
drop_caches() {
  local began
  began=$(date +%s.%N)
  sync
  echo 3 2>/dev/null >/proc/sys/vm/drop_caches ||
    echo "busy-reads: could not drop the page cache (not root?): reads may be warm" >&2
  [[ -n $writer_pid ]] && echo "$began $(date +%s.%N)" >>"$prefix-drops.txt"
  return 0
}

# Bytes read and written by the process $1 so far (storage layer: O_DIRECT counts).
process_io() {
  awk '/^read_bytes/ {r = $2} /^write_bytes/ {w = $2} END {print r " " w}' "/proc/$1/io"
}

# The server's counters this script needs, from its /metrics (ringlog only), as key=value.
server_counters() {
  [[ $bookie == ringlog ]] || return 0
  python3 - "$http" <<'EOF'
import sys, urllib.request
wanted = {
    "bookie_WRITE_BYTES": "add_bytes",
    "ringlog_read_bytes_total": "read_bytes",
    "ringlog_read_disk_bytes_total": "read_disk_bytes",
    "ringlog_gc_compaction_bytes_read_total": "compaction_bytes_read",
    "ringlog_gc_compaction_bytes_written_total": "compaction_bytes_written",
    "ringlog_journal_write_bytes_total": "journal_bytes",
    "ringlog_journal_zero_ahead_bytes_total": "zero_ahead_bytes",
    "ringlog_commits_total": "commits",
    "ringlog_reads_paced_total": "reads_paced",
    "ringlog_read_ahead_windows_total": "read_ahead_windows",
    "ringlog_gc_compactions_sorting_total": "sorts_started",
}
totals = dict.fromkeys(wanted.values(), 0)
body = urllib.request.urlopen(f"http://{sys.argv[1]}/metrics", timeout=10).read().decode()
for line in body.splitlines():
    if line.startswith("#") or not line.strip():
        continue
    name = line.split("{")[0].split(" ")[0]
    if name in wanted:
        totals[wanted[name]] += int(float(line.rsplit(" ", 1)[1]))
print(" ".join(f"{k}={v}" for k, v in totals.items()))
EOF
}

# Starts the bookie on $data (ringlog directly; the Java bookie through Serve, whose first
# start makes its own data dir). Sets port, pid, http.
bookie_start() {
  local log=$1
  if [[ $bookie == ringlog ]]; then
    # A restart keeps the port: the clients' and the verify log's target stays valid.
    "$release/ringlog" serve --data-dir "$data" --shards 2 --listen "127.0.0.1:${port:-0}" \
      --http-listen 127.0.0.1:0 "${server_args[@]}" >>"$log" 2>&1 &
    server_pid=$!
    for _ in $(seq 1 300); do
      [[ $(grep -c "^ringlog listening on" "$log") -gt $starts ]] && break
      kill -0 "$server_pid" 2>/dev/null || { tail -n 20 "$log" >&2; die "the server exited"; }
      sleep 0.1
    done
    starts=$((starts + 1))
    port=$(grep "^ringlog listening on" "$log" | tail -n 1 | sed -E 's/.*listening on [^:]+:([0-9]+).*/\1/')
    http=$(sed -n 's/^ringlog http on //p' "$log" | tail -n 1)
    pid=$server_pid
  else
    rm -f "$work/serve.in"
    mkfifo "$work/serve.in"
    java -cp "$root/interop/target/classes:$(cat "$root/interop/target/classpath.txt")" \
      -Dbookie=java -Dinterop.dir="$work" \
      -Djava.bookie.conf=ledgerStorageClass=org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage \
      ringlog.interop.Serve <"$work/serve.in" >"$log" 2>&1 &
    serve_pid=$!
    exec 7>"$work/serve.in"
    serve_line READY "$log"
  fi
}

# Waits for Serve's line starting with $1 in $2; sets port and pid from it.
serve_line() {
  local word=$1 log=$2 line
  for _ in $(seq 1 1200); do
    line=$(grep -E "^($word|FAILED)" "$log" | tail -n 1 || true)
    [[ -n $line ]] && break
    sleep 0.1
  done
  [[ $line == "$word"* ]] || { tail -n 20 "$log" >&2; die "no $word from Serve: ${line:-timeout}"; }
  read -r _ port pid _ <<<"$line"
}

# Stops the bookie for good (ringlog: SIGTERM and its shutdown summary in the log).
bookie_stop() {
  if [[ $bookie == ringlog ]]; then
    kill -TERM "$server_pid"
    wait "$server_pid" || echo "busy-reads: the server exited with status $?" >&2
    server_pid=''
  else
    exec 7>&-
    wait "$serve_pid" || true
    serve_pid=''
  fi
}

bookie_restart() {
  local log=$1
  if [[ $bookie == ringlog ]]; then
    bookie_stop
    bookie_start "$log"
  else
    echo RESTART >&7
    serve_line RESTARTED "$log"
  fi
}

# The ledgers the one-ledger read reads in turn, comma-separated: the fill's first, and the
# ones after it (in the log's order) until their payload is BUSY_ONE_READ_MIN_MB. One ledger
# of 500 is 7.6 MB, read in about 25 ms, one of 50 in about 0.4 s: too short a phase to set
# the writers' p99 beside (one or two interval histograms), so the read goes on into the next
# ledgers, as a consumer of one topic reads its ledgers in turn.
one_read_ledgers() {
  awk -v min="$((one_read_min_mb * 1000000))" '
    /^#/ { next }
    !($1 in bytes) { order[count++] = $1 }
    { bytes[$1] += $4 }
    END {
      for (i = 0; i < count; i++) {
        line = line (i ? "," : "") order[i]
        total += bytes[order[i]]
        if (total >= min) break
      }
      print line
    }' "$fill_log"
}

# One catch-up read, $1 = one | all, of the fill's log; its lines time-stamped, its JSON and
# the disk bytes around it in $prefix-read-$1.*.
catchup_read() {
  local kind=$1 flags=() before after counters_before counters_after started ended
  [[ $kind == one ]] && flags=(--ledger "$(one_read_ledgers)")
  before=$(process_io "$pid")
  counters_before=$(server_counters)
  started=$(date +%s.%N)
  nice -n "$reader_nice" "$release/ringlog-bench" reads --target "127.0.0.1:$port" \
    --start-delay-ms "$((load_settle_s * 1000))" --verify-log "$fill_log" "${flags[@]}" --json "$prefix-read-$kind.json" 2>&1 |
    while IFS= read -r line; do echo "$(date +%s.%N) $line"; done >"$prefix-read-$kind.txt" || {
    echo "busy-reads: the $kind read failed (see $prefix-read-$kind.txt)" >&2
    read_failures=$((read_failures + 1))
  }
  ended=$(date +%s.%N)
  after=$(process_io "$pid")
  counters_after=$(server_counters)
  echo "started=$started ended=$ended io_before='$before' io_after='$after'" \
    "counters_before='$counters_before' counters_after='$counters_after'" >"$prefix-read-$kind.env"
  grep -E "entries checked OK|MB/s|errors|problems" "$prefix-read-$kind.txt" | tail -n 2
}

{
  echo "date: $(date -u +%FT%TZ)"
  echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), kernel $(uname -r), $(df -T "$work" | awk 'NR==2 {print $2}') on $(df "$work" | awk 'NR==2 {print $1}')"
  echo "bookie: $bookie; ringlog $(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet || echo '+changes')"
  echo "server args: ${server_args[*]:-defaults}"
  echo "reader nice level: $reader_nice"
  echo "scenario: rate $rate adds/s of 1 KiB, fill $fill_s s, read $read_delay_s s after the writes restart, controls $control_s s"
} >"$results/machine.txt"
cat "$results/machine.txt"

for ledgers in "${counts[@]}"; do
  prefix="$results/ledgers$ledgers"
  data="$work/data-$ledgers" fill_log="$work/fill-$ledgers.log" server_log="$prefix-server.log"
  starts=0 port=''
  rm -rf "$data"
  bookie_start "$server_log"
  echo "== $ledgers ledgers: $bookie on 127.0.0.1:$port (pid $pid); fill: $rate adds/s for $fill_s s"
  "$release/ringlog-bench" writes --target "127.0.0.1:$port" --ledgers "$ledgers" --rate "$rate" \
    --busy-poll-us "$writer_poll_us" --seconds "$fill_s" --warmup-seconds 0 --verify-log "$fill_log" \
    --json "$prefix-fill.json" >"$prefix-fill.txt" || die "the fill failed (see $prefix-fill.txt)"
  tail -n 3 "$prefix-fill.txt"
  fill_counters=$(server_counters)
  fill_io=$(process_io "$pid")
  bookie_restart "$server_log"
  drop_caches
  echo "== $ledgers ledgers: restarted (pid $pid); the same writes again, reads in $read_delay_s s"
  writer_started=$(date +%s.%N)
  "$release/ringlog-bench" writes --target "127.0.0.1:$port" --ledgers "$ledgers" --rate "$rate" \
    --busy-poll-us "$writer_poll_us" --seconds 3600 --hdr-log "$prefix-writes.hlog" >"$prefix-writes.txt" 2>&1 &
  writer_pid=$!
  # The host's CPU time each second (/proc/stat's first line): the bookie, its writer and
  # its reader share this host's cores, so a phase whose CPU is all busy says the clients
  # and the bookie competed for it, whatever the disk did.
  while :; do
    echo "$(date +%s.%N) $(head -n 1 /proc/stat)"
    sleep 1
  done >"$prefix-cpu.txt" &
  cpu_pid=$!
  sleep "$read_delay_s"
  echo "== $ledgers ledgers: one ledger read alone beside the writes"
  catchup_read one
  sleep "$control_s"
  drop_caches
  echo "== $ledgers ledgers: every ledger read beside the writes"
  catchup_read all
  sleep "$control_s"
  end_counters=$(server_counters)
  end_io=$(process_io "$pid")
  # SIGTERM: a background job of a non-interactive shell ignores SIGINT. The interval log is
  # flushed a line at a time, so nothing measured is lost.
  kill -TERM "$writer_pid" 2>/dev/null || true
  wait "$writer_pid" 2>/dev/null || true
  writer_pid=''
  kill "$cpu_pid" 2>/dev/null || true
  wait "$cpu_pid" 2>/dev/null || true
  cpu_pid=''
  bookie_stop
  {
    echo "writer_started=$writer_started"
    echo "fill_counters='$fill_counters'"
    echo "fill_io='$fill_io'"
    echo "end_counters='$end_counters'"
    echo "end_io='$end_io'"
  } >"$prefix-run.env"
  rm -rf "$data" "$fill_log"
done

read -ra counts <<<"$ledger_counts"
python3 "$root/scripts/busy_reads_report.py" "$results" "$bookie" "${counts[@]}"
# A read that failed (an entry missing, corrupt or unreadable, or the reader's error) fails
# the run, whatever the rates: `make test` runs a short one for that.
((read_failures == 0)) || die "$read_failures catch-up reads failed (see $results)"
