#!/usr/bin/env bash
# `make metrics-check` (issue 17, part of `make test`): a bookie on a temporary data dir takes
# a short seed-like load, then its /metrics is parsed by the official Prometheus Python
# client's parser (scripts/metrics_check.py) and must show the adds.
# Usage: scripts/metrics_check.sh RELEASE_DIR BENCH_DIR
set -euo pipefail
release=${1:?release dir} dir=${2:?bench dir}
python3 -c 'import prometheus_client' 2>/dev/null || pip install -q prometheus-client
mkdir -p "$dir"
run=$(mktemp -d "$dir/metrics-check.XXXXXX")
server_pid=
cleanup() {
  if [[ -n $server_pid ]] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$run"
}
trap cleanup EXIT

"$release/ringlog" serve --data-dir "$run/data" --listen 127.0.0.1:0 --http-listen 127.0.0.1:0 \
  --shards 2 >"$run/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 600); do
  grep -q "listening on" "$run/server.log" && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$run/server.log"; echo "server exited" >&2; exit 1; }
  sleep 0.1
done
address=$(sed -n 's/^ringlog listening on \([^ ]*\).*/\1/p' "$run/server.log")
http=$(sed -n 's/^ringlog http on \(.*\)$/\1/p' "$run/server.log")
"$release/ringlog-bench" writes --target "$address" --ledgers 8 --throttle 1000 --seconds 2 \
  >"$run/writes.log"
sleep 0.3 # one shard tick: the counters are published every 100 ms
scripts/metrics_check.py "http://$http/metrics" ringlog_adds_total bookie_SERVER_STATUS \
  bookkeeper_server_ADD_ENTRY_REQUEST bookie_journal_JOURNAL_SYNC ringlog_add_stage_seconds \
  ringlog_commit_records ringlog_request_errors_total ringlog_journal_segments
adds=$(curl -s "http://$http/metrics" | awk '$1 == "ringlog_adds_total" {print $2}')
echo "metrics_check: ringlog_adds_total $adds"
((adds > 0)) || { echo "no adds counted" >&2; exit 1; }
curl -sf "http://$http/api/v1/bookie/is_ready" >/dev/null
