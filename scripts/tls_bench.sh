#!/usr/bin/env bash
# `make tls-bench` (issue 34): what TLS costs, A/B in one run against one bookie that serves
# plaintext and TLS side by side (--tls-cert without --tls-required). Alternating pairs of
#   - one outstanding add (1 KiB, sync): the latency floor, p50 (TLS_BENCH_ONE_PAIRS, 5, first,
#     on an empty journal);
#   - the seed workload (1 KiB, 50 ledgers, throttle 20000): ops/s, and the server's CPU time
#     per add (utime + stime of the ringlog process over the run / adds);
#   - catch-up batch reads of everything the seed runs wrote (BATCH_READ_ENTRY): MB/s;
#   - a flood of 1,000 TLS handshakes at once beside an open-loop plaintext writer: its p99
#     against a control run without the flood, and against the same flood sent to a second
#     bookie process on this host instead (what the host's CPU and TCP stack cost the writer
#     whichever process does the handshakes: the flood's client shares these cores);
# then the ratios TLS / plaintext, median over the pairs, in results JSON and on stdout.
# TLS_BENCH_SERVER_ARGS and TLS_BENCH_CLIENT_ARGS add flags (e.g. "--shards 1 --cores 0" and
# "--cores 1": the server on one core and the client on the other, so the client's own TLS
# work does not take the server's CPU on a 2-core host).
# Usage: scripts/tls_bench.sh RELEASE_DIR BENCH_DIR [PAIRS] [SECONDS]
set -euo pipefail
release=${1:?release dir} dir=${2:?bench dir} pairs=${3:-3} seconds=${4:-5}
one_pairs=${TLS_BENCH_ONE_PAIRS:-5}
port=${TLS_BENCH_PORT:-3191}
mkdir -p "$dir"
run=$(mktemp -d "$dir/tls-bench.XXXXXX")
server_pid=
decoy_pid=
cleanup() {
  for pid in $server_pid $decoy_pid; do
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid" 2>/dev/null || true
      wait "$pid" 2>/dev/null || true
    fi
  done
  rm -rf "$run"
}
trap cleanup EXIT

"$(dirname "$0")/tls_certs.sh" "$run/certs"
echo "== machine: $(nproc) cores, kernel $(uname -r); ringlog serve with --tls-cert (plaintext and TLS side by side) on 127.0.0.1:$port"
read -ra server_args <<<"${TLS_BENCH_SERVER_ARGS:-}"
# bookie_start NAME PORT: a bookie serving plaintext and TLS on PORT, data in $run/NAME; waits
# until it listens and sets started_pid.
bookie_start() {
  "$release/ringlog" serve --data-dir "$run/$1" --listen "127.0.0.1:$2" --http-listen off \
    --tls-cert "$run/certs/bookie.pem" --tls-key "$run/certs/bookie.key" "${server_args[@]}" \
    >"$run/$1.log" 2>&1 &
  started_pid=$!
  for _ in $(seq 1 600); do
    grep -q "listening on" "$run/$1.log" && return 0
    kill -0 "$started_pid" 2>/dev/null || { cat "$run/$1.log"; echo "bookie $1 exited" >&2; exit 1; }
    sleep 0.1
  done
}
bookie_start data "$port"
server_pid=$started_pid

# The decoy: a second bookie that takes the "elsewhere" flood, started now so that its start
# (zeroing its first segments ahead) is over before anything is measured.
decoy_port=$((port + 1))
bookie_start decoy "$decoy_port"
decoy_pid=$started_pid
sleep 3

# Milliseconds the server's shard threads have waited for a CPU so far (summed), from
# /proc/PID/task/*/schedstat (its second field: run delay in ns).
shards_run_delay_ms() {
  local total=0 task
  for task in /proc/"$server_pid"/task/*; do
    [[ $(cat "$task/comm" 2>/dev/null) == ringlog-shard* ]] || continue
    total=$((total + $(awk '{print int($2 / 1000000)}' "$task/schedstat")))
  done
  echo "$total"
}

# CPU seconds (user + system) of the server so far, from /proc/PID/stat.
server_cpu_s() {
  awk -v hz="$(getconf CLK_TCK)" '{printf "%.3f", ($14 + $15) / hz}' "/proc/$server_pid/stat"
}

tls_flags=(--tls-ca "$run/certs/ca.pem")
read -ra client_args <<<"${TLS_BENCH_CLIENT_ARGS:-}"
# One outstanding add first, on an empty journal: after a seed run the journal sorts and
# compacts what it wrote, and those disk writes would land in the latency floor.
for pair in $(seq 1 "$one_pairs"); do
  for mode in plain tls; do
    flags=("${client_args[@]}")
    [[ $mode == tls ]] && flags+=("${tls_flags[@]}")
    echo "== pair $pair/$one_pairs $mode: one outstanding add, 1 KiB, sync"
    "$release/ringlog-bench" writes --target "127.0.0.1:$port" --entry-size 1024 --ledgers 1 \
      --throttle 1 --seconds 3 --json "$run/one-$mode-$pair.json" "${flags[@]}"
  done
done
for pair in $(seq 1 "$pairs"); do
  for mode in plain tls; do
    flags=("${client_args[@]}")
    [[ $mode == tls ]] && flags+=("${tls_flags[@]}")
    echo "== pair $pair/$pairs $mode: seed workload, 1 KiB, 50 ledgers, throttle 20000"
    before=$(server_cpu_s)
    # The client's CPU too: on this 2-core host it can be the client that sets the rate.
    /usr/bin/time -o "$run/client-cpu-seed-$mode-$pair" -f "%U %S %e" \
      "$release/ringlog-bench" writes --target "127.0.0.1:$port" --entry-size 1024 --ledgers 50 \
      --throttle 20000 --seconds "$seconds" --json "$run/seed-$mode-$pair.json" \
      --verify-log "$run/verify-$mode-$pair.log" "${flags[@]}"
    echo "$(server_cpu_s) $before" >"$run/cpu-seed-$mode-$pair"
  done
done
for pair in $(seq 1 "$pairs"); do
  for mode in plain tls; do
    flags=()
    [[ $mode == tls ]] && flags=("${tls_flags[@]}")
    echo "== pair $pair/$pairs $mode: batch reads of the seed runs' entries"
    "$release/ringlog-bench" reads --target "127.0.0.1:$port" --batch \
      --verify-log "$run/verify-$mode-1.log" --json "$run/reads-$mode-$pair.json" "${flags[@]}"
  done
done

# A handshake flood (1,000 TLS connections at once, as a broker restart brings) beside an
# open-loop plaintext writer: its p99 with and without the flood, control first.
flood_py=$(cat <<'PY'
import socket, ssl, sys, threading
port, ca, count = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
# v3 Request{header{version 3, START_TLS 9, txnId 1}, startTLSRequest{}}, length-prefixed.
start_tls = bytes.fromhex("0000000b0a06080310091801d20600")
context = ssl.create_default_context(cafile=ca)
done, failed = [], []
gate = threading.Barrier(count)
def one():
    try:
        gate.wait(timeout=60)
        sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        sock.sendall(start_tls)
        head = sock.recv(4, socket.MSG_WAITALL)
        sock.recv(int.from_bytes(head, "big"), socket.MSG_WAITALL)
        tls = context.wrap_socket(sock, server_hostname="127.0.0.1")
        done.append(1)
        tls.close()
    except Exception as error:
        failed.append(repr(error))
threads = [threading.Thread(target=one) for _ in range(count)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(f"flood: {len(done)} handshakes completed, {len(failed)} failed" + (f" (first: {failed[0]})" if failed else ""))
PY
)
flood_rounds=${TLS_BENCH_FLOOD_ROUNDS:-3}
for round in $(seq 1 "$flood_rounds"); do
for phase in control flood elsewhere; do
  echo "== handshake flood round $round/$flood_rounds, $phase: open-loop plaintext adds at 50000/s for 8 s"
  "$release/ringlog-bench" writes --target "127.0.0.1:$port" --entry-size 1024 --ledgers 50 \
    --throttle 20000 --rate 50000 --seconds 8 --json "$run/flood-$phase-$round.json" &
  writer=$!
  sleep 3
  # How long the writer's bookie's shards waited for a CPU over the flood (or over a second
  # of the control): the scheduler's run delay, from /proc schedstat.
  delay_before=$(shards_run_delay_ms)
  started=$(date +%s%N)
  if [[ $phase != control ]]; then
    flood_port=$port
    [[ $phase == elsewhere ]] && flood_port=$decoy_port
    python3 -c "$flood_py" "$flood_port" "$run/certs/ca.pem" 1000
  else
    sleep 1
  fi
  echo "$(shards_run_delay_ms) $delay_before $(( ($(date +%s%N) - started) / 1000000 ))" \
    >"$run/run-delay-$phase-$round"
  wait "$writer"
done
done

results=${TLS_BENCH_RESULTS:-results}
mkdir -p "$results"
out="$results/tls-bench-$(date -u +%Y%m%d-%H%M%S).json"
python3 - "$run" "$pairs" "$out" "$one_pairs" "$flood_rounds" <<'PY'
import json, os, statistics, sys
run, pairs, out, one_pairs, flood_rounds = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
def load(name):
    with open(f"{run}/{name}.json") as f:
        return json.load(f)
rows = {}
for mode in ("plain", "tls"):
    one = [load(f"one-{mode}-{p}")["p50_us"] for p in range(1, one_pairs + 1)]
    seed = [load(f"seed-{mode}-{p}") for p in range(1, pairs + 1)]
    cpu = []
    for p in range(1, pairs + 1):
        after, before = map(float, open(f"{run}/cpu-seed-{mode}-{p}").read().split())
        cpu.append((after - before) * 1e6 / seed[p - 1]["count"])
    client_cpu, client_busy = [], []
    for p in range(1, pairs + 1):
        # The whole process (its warm-up second included) over its wall time.
        user, system, wall = map(float, open(f"{run}/client-cpu-seed-{mode}-{p}").read().split()[-3:])
        client_cpu.append((user + system) * 1e6 / seed[p - 1]["count"])
        client_busy.append((user + system) / wall)
    reads = [load(f"reads-{mode}-{p}")["mb_per_sec"] for p in range(1, pairs + 1)]
    rows[mode] = {
        "one_outstanding_p50_us": one,
        "seed_ops_per_sec": [s["ops_per_sec"] for s in seed],
        "seed_p99_us": [s["p99_us"] for s in seed],
        "server_cpu_us_per_add": cpu,
        "client_cpu_us_per_add": client_cpu,
        "server_core_busy": [c * s["ops_per_sec"] / 1e6 for c, s in zip(cpu, seed)],
        "client_core_busy": client_busy,
        "batch_read_mb_per_sec": reads,
    }
median = statistics.median
flood_runs = {phase: [load(f"flood-{phase}-{r}") for r in range(1, flood_rounds + 1)] for phase in ("control", "flood", "elsewhere")}
def run_delay(phase, r):
    after, before, wall = map(int, open(f"{run}/run-delay-{phase}-{r}").read().split())
    return {"shards_run_delay_ms": after - before, "wall_ms": wall}
flood = {phase: {"p99_us": median([x["p99_us"] for x in runs]), "ops_per_sec": median([x["ops_per_sec"] for x in runs]),
                 "p99_us_rounds": [x["p99_us"] for x in runs],
                 "shards_waiting_for_cpu_rounds": [run_delay(phase, r) for r in range(1, flood_rounds + 1)]}
         for phase, runs in flood_runs.items()}
ratios = {
    "writer_p99_during_handshake_flood_over_control": flood["flood"]["p99_us"] / flood["control"]["p99_us"],
    "writer_p99_flood_here_over_flood_elsewhere": flood["flood"]["p99_us"] / flood["elsewhere"]["p99_us"],
    "seed_ops_tls_over_plain": median(rows["tls"]["seed_ops_per_sec"]) / median(rows["plain"]["seed_ops_per_sec"]),
    "one_outstanding_p50_tls_over_plain": median(rows["tls"]["one_outstanding_p50_us"]) / median(rows["plain"]["one_outstanding_p50_us"]),
    "batch_read_tls_over_plain": median(rows["tls"]["batch_read_mb_per_sec"]) / median(rows["plain"]["batch_read_mb_per_sec"]),
    "server_cpu_per_add_tls_over_plain": median(rows["tls"]["server_cpu_us_per_add"]) / median(rows["plain"]["server_cpu_us_per_add"]),
    "client_cpu_per_add_tls_over_plain": median(rows["tls"]["client_cpu_us_per_add"]) / median(rows["plain"]["client_cpu_us_per_add"]),
}
targets = {
    "seed_ops_tls_over_plain": (">=", 0.75),
    "one_outstanding_p50_tls_over_plain": ("<=", 1.1),
    "batch_read_tls_over_plain": (">=", 0.6),
}
print("== TLS / plaintext, median of %d pairs" % pairs)
for mode in ("plain", "tls"):
    r = rows[mode]
    print(f"   {mode:5}  seed {median(r['seed_ops_per_sec']):9.0f} ops/s (p99 {median(r['seed_p99_us']):.0f} us), "
          f"one outstanding p50 {median(r['one_outstanding_p50_us']):.0f} us, "
          f"batch reads {median(r['batch_read_mb_per_sec']):.0f} MB/s, server CPU {median(r['server_cpu_us_per_add']):.2f} us/add "
          f"({median(r['server_core_busy']):.2f} cores busy), client CPU {median(r['client_cpu_us_per_add']):.2f} us/add "
          f"({median(r['client_core_busy']):.2f} cores busy)")
print(f"   handshake flood, median of {flood_rounds} rounds: writer p99 {flood['control']['p99_us']:.0f} us without, {flood['flood']['p99_us']:.0f} us during 1,000 handshakes "
      f"to its bookie, {flood['elsewhere']['p99_us']:.0f} us during the same flood to another bookie on this host")
for phase in ("control", "flood", "elsewhere"):
    waits = "; ".join(f"{w['shards_run_delay_ms']} ms in {w['wall_ms']} ms" for w in flood[phase]["shards_waiting_for_cpu_rounds"])
    print(f"     {phase:9} p99 per round (us): {', '.join(str(v) for v in flood[phase]['p99_us_rounds'])}; "
          f"the bookie's shards waited for a CPU: {waits}")
failed = False
for key, value in ratios.items():
    verdict = "reported"
    if key in targets:
        op, limit = targets[key]
        ok = value >= limit if op == ">=" else value <= limit
        failed |= not ok
        verdict = f"{'PASS' if ok else 'FAIL'} (target {op} {limit})"
    print(f"   {key:38} {value:6.3f}  {verdict}")
with open(out, "w") as f:
    json.dump({"pairs": pairs, "one_pairs": one_pairs, "server_args": os.environ.get("TLS_BENCH_SERVER_ARGS", ""), "client_args": os.environ.get("TLS_BENCH_CLIENT_ARGS", ""), "rows": rows, "flood_rounds": flood_rounds, "flood": flood, "ratios": ratios}, f, indent=1)
print(f"   every number: {out}")
sys.exit(1 if failed and os.environ.get("TLS_BENCH_ENFORCE") == "1" else 0)
PY
