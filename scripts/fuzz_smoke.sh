#!/usr/bin/env bash
# Fuzz smoke test (docs/reliability.md N11): runs every cargo-fuzz target of fuzz/ for
# FUZZ_SECONDS, prints the executions per target, and fails if any target crashed, ran out of
# memory or hung. Needs nightly (fuzz/ is its own workspace); installs cargo-fuzz if missing.
#
#   FUZZ_SECONDS=60    fuzzing time per target
#   FUZZ_JOBS=nproc    targets fuzzed at once (libFuzzer uses one core per target)
#   FUZZ_TIMEOUT=10    seconds one input may take before it counts as a hang
#   FUZZ_TARGETS="..." subset of targets, space-separated
#   FUZZ_SANITIZER=    force one sanitizer for all targets (default: address, except
#                      recovery_scan: none, see fuzz/README.md)
#
# New corpus entries go to fuzz/target/corpus/<target> (ignored by git); the committed seeds
# in fuzz/corpus/<target> are only read. Crashes are written to fuzz/artifacts/<target>/.
set -euo pipefail

seconds=${FUZZ_SECONDS:-60}
parallel=${FUZZ_JOBS:-$(nproc)}
timeout_seconds=${FUZZ_TIMEOUT:-10}
read -r -a targets <<<"${FUZZ_TARGETS:-v2_request v3_request v2_response record_decode recovery_scan sealed_open tls_after_start}"

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
fuzz_dir="$root/fuzz"
log_dir="$fuzz_dir/target/fuzz-smoke"

tools_ensure() {
    if ! rustup toolchain list | grep -q '^nightly'; then
        rustup toolchain install nightly --profile minimal
    fi
    if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
        cargo +nightly install cargo-fuzz --locked
    fi
}

# recovery_scan and sealed_open run only safe Rust (SimDisk, recovery, records) and allocate
# ~21 MiB of buffers per execution: ASan maps them fresh each time, 36 instead of 86
# executions/s here.
sanitizer() {
    if [[ -n ${FUZZ_SANITIZER:-} ]]; then
        echo "$FUZZ_SANITIZER"
    elif [[ $1 == recovery_scan || $1 == sealed_open ]]; then
        echo none
    else
        echo address
    fi
}

fuzz_one() {
    local target=$1
    local corpus_working="$fuzz_dir/target/corpus/$target"
    local status=0
    mkdir -p "$corpus_working"
    cargo +nightly fuzz run --sanitizer "$(sanitizer "$target")" "$target" \
        "$corpus_working" "corpus/$target" -- \
        -max_total_time="$seconds" -rss_limit_mb=4096 -timeout="$timeout_seconds" \
        -print_final_stats=1 >"$log_dir/$target.log" 2>&1 || status=$?
    echo "$status" >"$log_dir/$target.status"
}

# libFuzzer's final stats line, else the count of its last status line (`#N DONE`, `#N pulse`).
executions() {
    local log=$1 count
    if [[ ! -f $log ]]; then
        echo unknown
        return 0
    fi
    count=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    if [[ -z $count ]]; then
        count=$(sed -n 's/^#\([0-9][0-9]*\)[[:space:]].*/\1/p' "$log" | tail -n 1)
    fi
    echo "${count:-unknown}"
}

report() {
    local target=$1 log="$log_dir/$1.log" status
    status=$(cat "$log_dir/$target.status" 2>/dev/null || echo "no status")
    printf '%-14s %12s executions  ' "$target" "$(executions "$log")"
    if [[ $status == 0 ]]; then
        echo "ok"
        return 0
    fi
    echo "FAILED (exit $status), log: $log"
    grep -E "ERROR: libFuzzer|panicked at|Test unit written to|^error" "$log" | head -n 8 |
        sed 's/^/    /'
    return 1
}

main() {
    local started=$SECONDS failed=0 target
    tools_ensure
    mkdir -p "$log_dir"
    cd "$fuzz_dir"
    # Build first, one target at a time, so that the parallel runs below only fuzz.
    for target in "${targets[@]}"; do
        cargo +nightly fuzz build --sanitizer "$(sanitizer "$target")" "$target"
    done
    echo "fuzzing ${targets[*]} for ${seconds}s each, $parallel at a time"
    for target in "${targets[@]}"; do
        while (($(jobs -rp | wc -l) >= parallel)); do
            wait -n || true
        done
        fuzz_one "$target" &
    done
    wait
    for target in "${targets[@]}"; do
        report "$target" || failed=1
    done
    echo "fuzz smoke took $((SECONDS - started))s"
    return "$failed"
}

main "$@"
