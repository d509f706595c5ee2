#!/usr/bin/env bash
# `make latency-stages` (issue 18): where an add's time goes under open-loop load, in three
# layouts of server and load generator on this machine's cores. For each layout: a fresh
# bookie, the seed workload closed loop (its maximum), then open loop at 50%, 75% and 90% of
# it and at 250k adds/s, each with the server's stage averages (latency_curve.py) beside the
# client's latency. docs/latency.md explains the figures.
# Usage: scripts/latency_stages.sh RELEASE_DIR WORK_DIR SECONDS
set -euo pipefail
release=${1:?release dir} dir=${2:?work dir} seconds=${3:-5}
port=${STAGES_PORT:-3191}
mkdir -p "$dir"
run=$(mktemp -d "$dir/stages.XXXXXX")
server_pid=
stop() {
  if [[ -n $server_pid ]] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  server_pid=
}
trap 'stop; rm -rf "$run"' EXIT

# name | server options | client options
layouts=(
  "2 shards, client unpinned (make bench)||"
  "1 shard on core 0, client on core 1|--shards 1 --cores 0|--cores 1"
  "2 shards, client on core 1 beside shard 1|--cores 0,1|--cores 1"
)
nproc_cores=$(nproc)
if ((nproc_cores < 2)); then
  echo "latency-stages: needs 2 cores to pin server and client apart" >&2
  exit 1
fi
for layout in "${layouts[@]}"; do
  IFS='|' read -r name server_args client_args <<<"$layout"
  echo "== layout: $name"
  rm -rf "$run/data" "$run/server.log"
  # shellcheck disable=SC2086 # the options are words
  "$release/ringlog" serve --data-dir "$run/data" --listen "127.0.0.1:$port" \
    --http-listen 127.0.0.1:0 $server_args >"$run/server.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 1 600); do
    grep -q "listening on" "$run/server.log" && break
    kill -0 "$server_pid" 2>/dev/null || { cat "$run/server.log"; exit 1; }
    sleep 0.1
  done
  http=$(sed -n 's/^ringlog http on //p' "$run/server.log" | head -n 1)
  # shellcheck disable=SC2086
  "$release/ringlog-bench" writes --target "127.0.0.1:$port" --entry-size 1024 --ledgers 50 \
    --throttle 20000 --seconds "$seconds" --json "$run/max.json" $client_args >/dev/null
  max_ops=$(python3 -c 'import json, sys; print(int(json.load(open(sys.argv[1]))["ops_per_sec"]))' "$run/max.json")
  echo "   closed loop (seed workload): $max_ops adds/s"
  python3 "$(dirname "$0")/latency_curve.py" --bench "$release/ringlog-bench" \
    --target "127.0.0.1:$port" --metrics "http://$http/metrics" --max-ops "$max_ops" \
    --fractions 0.5,0.75,0.9 --rates 250000 --seconds "$seconds" \
    --client-args "$client_args" --out "$run/curve" | sed -n '/^point/,/^server columns/p'
  stop
done
