#!/usr/bin/env bash
# `make metrics-overhead` (issue 17): what scraping /metrics costs the seed workload. One
# bookie on a temporary data dir; the seed workload (scripts/bench.sh: 1 KiB, 50 ledgers,
# throttle 20000, sync) runs PAIRS times without scraping and PAIRS times while a scraper
# GETs /metrics every 100 ms, alternating (A B, B A, A B, ...) so drift of the shared VM hits
# both sides alike. Each run gets a fresh server and data dir: at the seed's 5 GB per run, a
# journal kept across runs (nothing deletes its ledgers) would fill the disk. Prints ops/s
# per run, the means, the ratios scraped / unscraped, and the HTTP thread's CPU per scrape.
# Usage: scripts/metrics_overhead.sh RELEASE_DIR BENCH_DIR PAIRS SECONDS
# Env: METRICS_PORT (3410), METRICS_HTTP_PORT (8410).
set -euo pipefail
release=${1:?release dir} dir=${2:?bench dir} pairs=${3:-3} seconds=${4:-10}
port=${METRICS_PORT:-3410} http_port=${METRICS_HTTP_PORT:-8410}
mkdir -p "$dir"
run=$(mktemp -d "$dir/metrics.XXXXXX")
server_pid=''
scraper_pid=''
cleanup() {
  if [[ -n $scraper_pid ]]; then kill "$scraper_pid" 2>/dev/null || true; fi
  if [[ -n $server_pid ]] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$run"
}
trap cleanup EXIT

server_start() {
  rm -rf "$run/data"
  "$release/ringlog" serve --data-dir "$run/data" --listen "127.0.0.1:$port" \
    --http-listen "127.0.0.1:$http_port" >"$run/server.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 1 600); do
    grep -q "listening on" "$run/server.log" && return 0
    kill -0 "$server_pid" 2>/dev/null || { cat "$run/server.log"; echo "server exited" >&2; exit 1; }
    sleep 0.1
  done
  echo "server did not start" >&2
  exit 1
}

server_stop() {
  kill -TERM "$server_pid"
  wait "$server_pid" || { cat "$run/server.log"; echo "server exited with status $?" >&2; exit 1; }
  server_pid=''
}

# One process scraping in a loop (a fork per scrape would cost the 2-core VM more than
# Prometheus, which runs elsewhere, ever would); counts its scrapes on exit.
# `exec`: started with `&`, the subshell becomes python, so `$!` is the scraper to stop.
scraper() {
  exec python3 - "http://127.0.0.1:$http_port/metrics" "$1" <<'PY'
import signal, sys, time, urllib.request
url, count_file = sys.argv[1], sys.argv[2]
scrapes = 0
def stop(*_):
    open(count_file, "w").write(str(scrapes))
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
while True:
    started = time.monotonic()
    with urllib.request.urlopen(url, timeout=5) as response:
        response.read()
    scrapes += 1
    time.sleep(max(0.0, 0.1 - (time.monotonic() - started)))
PY
}

seed() {
  "$release/ringlog-bench" writes --target "127.0.0.1:$port" --entry-size 1024 --ledgers 50 \
    --throttle 20000 --seconds "$seconds" --json "$1" >"$1.log" 2>&1
}

# CPU time (user+system, clock ticks) of the server's ringlog-http thread: what scrapes cost
# the server, free of the run-to-run noise of a shared VM.
http_ticks() {
  local task
  for task in /proc/"$server_pid"/task/*; do
    if [[ $(cat "$task/comm") == ringlog-http ]]; then
      awk '{print $14 + $15}' "$task/stat"
      return
    fi
  done
  echo 0
}

ops() {
  local value
  value=$(python3 -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["ops_per_sec"]))' "$1")
  ((value > 0)) || { cat "$1.log" "$run/server.log" >&2; echo "no adds in $1" >&2; exit 1; }
  echo "$value"
}

plain=() scraped=() scrapes=0 ticks=0
for pair in $(seq 1 "$pairs"); do
  order=(plain scraped)
  ((pair % 2 == 0)) && order=(scraped plain)
  for arm in "${order[@]}"; do
    json="$run/$arm-$pair.json"
    server_start
    if [[ $arm == scraped ]]; then
      scraper "$run/scrapes-$pair" &
      scraper_pid=$!
      seed "$json"
      kill -TERM "$scraper_pid"
      wait "$scraper_pid" || true
      scraper_pid=
      value=$(ops "$json")
      scraped+=("$value")
      scrapes=$((scrapes + $(cat "$run/scrapes-$pair")))
      ticks=$((ticks + $(http_ticks)))
      echo "pair $pair: scraped every 100 ms: $value ops/s ($(cat "$run/scrapes-$pair") scrapes)"
    else
      seed "$json"
      value=$(ops "$json")
      plain+=("$value")
      echo "pair $pair: no scraping:          $value ops/s"
    fi
    server_stop
  done
done
python3 - "${plain[*]}" "${scraped[*]}" "$scrapes" "$ticks" "$(getconf CLK_TCK)" <<'PY'
import statistics, sys
plain = [float(v) for v in sys.argv[1].split()]
scraped = [float(v) for v in sys.argv[2].split()]
scrapes, ticks, hz = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
a, b = statistics.mean(plain), statistics.mean(scraped)
ratios = [s / p for p, s in zip(plain, scraped)]
print(f"no scraping: mean {a:.0f} ops/s; scraped: mean {b:.0f} ops/s; ratio of means {b / a:.4f}")
print("per-pair ratios " + " ".join(f"{r:.3f}" for r in ratios)
      + f"; median {statistics.median(ratios):.4f}")
per_scrape_ms = ticks * 1000 / hz / max(scrapes, 1)
print(f"ringlog-http thread: {ticks / hz:.2f} s CPU for {scrapes} scrapes, "
      f"{per_scrape_ms:.2f} ms per scrape, {per_scrape_ms / 10:.3f}% of one core at 10 scrapes/s")
PY
