# ringlog: every target is one or two commands; CI runs `make test` and nothing else.
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
CARGO ?= cargo
EXTRA_CARGO_ARGS ?=
SEEDS ?= 2000
CYCLES ?= 200
CRASH_DIR ?= $(CURDIR)/target/crash-data
BENCH_SECONDS ?= 10
# Seconds per point of the latency-vs-load curve in `make bench`.
CURVE_SECONDS ?= 5
NEIGHBOUR_SECONDS ?= 30
NEIGHBOUR_RATE ?= 20000
BENCH_DIR ?= $(CURDIR)/target/bench-data
RELEASE := target/release
BOOKIE ?= ringlog
QUICK ?= false
RINGLOG_BIN ?= $(CURDIR)/$(RELEASE)/ringlog
INTEROP_ARGS ?=
INTEROP_PULSAR_ARGS ?=
RETENTION_ENTRIES ?= 200000000
RETENTION_SERVER_ARGS ?=
DISK_FULL_MIB ?= 1024
DISK_PRESSURE_MIB ?= 3072
CHURN_SECONDS ?= 600
METRICS_PAIRS ?= 3
METRICS_SECONDS ?= 10

.PHONY: help deps shellcheck-deps zk-deps fuzz-smoke build check test sim crash crash-deletes bench bench-disk bench-journal latency-stages neighbour retention churn interop interop-pulsar interop-pulsar-tls tls-bench disk-full disk-pressure compare compare-catchup compare-pulsar compare-busy compare-tls metrics-check metrics-overhead busy-reads scrub-overhead digest-overhead commit-block hostile-load ci clean
COMPARE_PAIRS ?= 3
COMPARE_SECONDS ?= 20
# The catch-up read workload of `make compare` (issue 15); QUICK=true makes it small.
CATCHUP_GB ?= $(if $(filter true,$(QUICK)),0.25,4)
CATCHUP_SETTLE_S ?= $(if $(filter true,$(QUICK)),5,180)
RESULTS_DIR ?= $(CURDIR)/results

## Show this help.
help:
	@awk '/^## /{doc=substr($$0,4); next} /^[a-z-]+:/{if(doc){split($$0,t,":"); printf "  %-16s %s\n", t[1], doc}; doc=""}' $(MAKEFILE_LIST)

## Check the toolchain this repo needs (Rust from rustup; pinned in rust-toolchain.toml).
deps:
	@command -v $(CARGO) >/dev/null || { echo "cargo not found: install Rust with rustup" >&2; exit 1; }
	@$(CARGO) --version

## Fetch ZooKeeper (Maven Central, via mvn) for the registration tests; needs java and mvn. Installs openssl (the TLS tests' certificates, scripts/tls_certs.sh) if missing.
zk-deps:
	scripts/zk.sh deps
	@command -v openssl >/dev/null || { apt-get update -qq && apt-get install -y -qq openssl; }

## Release build of ringlog and ringlog-bench.
build: deps
	$(CARGO) build --release --workspace $(EXTRA_CARGO_ARGS)

## Install shellcheck from Debian if missing (used by `check`).
shellcheck-deps:
	@command -v shellcheck >/dev/null || { apt-get update -qq && apt-get install -y -qq shellcheck; }

## Format check, clippy with warnings denied, shellcheck of scripts/, pin-cores dry run, no source file above 800 lines, every path ARCHITECTURE.md's code map names exists.
check: deps shellcheck-deps
	shellcheck scripts/*.sh
	scripts/pin-cores.sh >/dev/null
	scripts/source_size_check.sh
	scripts/architecture_map_check.sh
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets --release $(EXTRA_CARGO_ARGS) -- -D warnings

## Everything CI runs: lints, all tests (io_uring required), sim seeds, 20 + 10 crash cycles, fuzz smoke.
test: check zk-deps
	REQUIRE_URING=1 $(CARGO) test --workspace --release $(EXTRA_CARGO_ARGS)
	$(MAKE) metrics-check
	$(MAKE) sim
	$(MAKE) neighbour NEIGHBOUR_SECONDS=10
	$(MAKE) latency-stages CURVE_SECONDS=1
	$(MAKE) crash CYCLES=20
	$(MAKE) crash-deletes CYCLES=10
	$(MAKE) retention RETENTION_ENTRIES=2000000 RETENTION_SERVER_ARGS="--segment-size 67108864" \
	  RETENTION_ENFORCE=$(or $(RETENTION_ENFORCE),1)
	$(MAKE) churn CHURN_SECONDS=60
	BUSY_LEDGERS=50 BUSY_FILL_S=10 BUSY_CONTROL_S=3 $(MAKE) busy-reads RESULTS_DIR=$(CURDIR)/target/test-results
	$(MAKE) interop QUICK=true
	$(MAKE) interop-pulsar QUICK=true
	$(MAKE) interop-pulsar-tls QUICK=true
	$(MAKE) disk-full DISK_FULL_MIB=512
	DISK_PRESSURE_GIB=3 $(MAKE) disk-pressure DISK_PRESSURE_MIB=1536
	$(MAKE) fuzz-smoke

## Seeded crash simulation of the engine: SEEDS=N seeds (default 2000); SEED=n replays one.
sim: deps
	RINGLOG_SIM_SEEDS=$(SEEDS) $(if $(SEED),RINGLOG_SIM_SEED=$(SEED)) \
	  $(CARGO) test -p engine --release $(EXTRA_CARGO_ARGS) -- tests::simulation --nocapture
	RINGLOG_SCRUB_SEEDS=$(SEEDS) \
	  $(CARGO) test -p engine --release $(EXTRA_CARGO_ARGS) -- tests::scrub::every_flipped --nocapture

## Real crash loop: CYCLES (default 200) x {serve, writes --verify-log, SIGKILL, restart, reads}; 0 entries lost or it fails.
crash: build
	scripts/crash_loop.sh $(RELEASE) $(CRASH_DIR) $(CYCLES)

## Crash loop with deletions (issue 14): CYCLES (200) x {znodes created and half the older ones deleted, writes, SIGKILL during collection/compaction, restart, checks}; 0 live entries lost, no deleted ledger back.
crash-deletes: build zk-deps
	CRASH_DELETES=1 scripts/crash_loop.sh $(RELEASE) $(CRASH_DIR) $(CYCLES)

## The physical floor alone: QD1 O_DIRECT 4 KiB write + linked fdatasync (a 1 KiB entry commits one 4 KiB sector).
bench-disk: build
	mkdir -p $(BENCH_DIR)
	$(RELEASE)/ringlog-bench disk --dir $(BENCH_DIR) --size 4096 --seconds 5 --json $(BENCH_DIR)/disk.json

## The engine in-process: 1 and 256 outstanding 1 KiB appends, with ratios to the floor.
bench-journal: build
	scripts/bench_journal.sh $(RELEASE) $(BENCH_DIR) 5

## Main job: build, start a bookie on a temporary data dir, disk floor + seed workload + latency-vs-load curve (BENCH_DIR/latency-curve/, JSON and PNG), report; then the neighbour run.
bench: build
	CURVE_SECONDS=$(CURVE_SECONDS) scripts/bench.sh $(RELEASE) $(BENCH_DIR) $(BENCH_SECONDS)
	scripts/neighbour.sh $(RELEASE) $(BENCH_DIR) $(NEIGHBOUR_SECONDS) $(NEIGHBOUR_RATE) || \
	  echo "== neighbour: a check failed (see above)"

## Issue 18: where an add's time goes (server stages beside client latency) at 50/75/90% of the closed-loop max and 250k adds/s, in three layouts of server and client; docs/latency.md.
latency-stages: build
	scripts/latency_stages.sh $(RELEASE) $(BENCH_DIR) $(CURVE_SECONDS)

## Pinned shards sharing every core with a busy-loop neighbour, open loop NEIGHBOUR_RATE adds/s for NEIGHBOUR_SECONDS (30): fails on an add slower than the disk's worst write + 100 ms or a second without acks.
neighbour: build
	scripts/neighbour.sh $(RELEASE) $(BENCH_DIR) $(NEIGHBOUR_SECONDS) $(NEIGHBOUR_RATE)

## Issue 13: RETENTION_ENTRIES (200M) 64 B entries retained; RSS <= idle + 256 MiB, restart <= 2 s (SIGTERM) / 5 s (SIGKILL), reads verified; docs/retention.md.
retention: build
	RETENTION_ENTRIES=$(RETENTION_ENTRIES) RETENTION_SERVER_ARGS="$(RETENTION_SERVER_ARGS)" \
	  RETENTION_ENFORCE=$(or $(RETENTION_ENFORCE),1) scripts/retention.sh $(RELEASE) $(BENCH_DIR)

## Issue 14: ledgers created, written at half the seed throughput and deleted (ZooKeeper + gc) for CHURN_SECONDS (600) between two no-delete baselines; disk vs live, p99 vs baseline, write amplification; CHURN_ENFORCE=1 fails on a missed target; docs/churn.md.
churn: build zk-deps
	scripts/churn.sh $(RELEASE) $(BENCH_DIR) $(CHURN_SECONDS)

## Real Java BookKeeper client vs real bookies (interop/README.md): BOOKIE=ringlog|java, QUICK=true.
interop:
	$(if $(filter ringlog,$(BOOKIE)),$(CARGO) build --release --workspace $(EXTRA_CARGO_ARGS))
	cd interop && mvn -B -q compile
	java -cp "interop/target/classes:$$(cat interop/target/classpath.txt)" -Dbookie=$(BOOKIE) \
	  -Dquick=$(QUICK) -Dringlog.bin=$(RINGLOG_BIN) $(INTEROP_ARGS) ringlog.interop.Main

## Issue 16: a real Pulsar 4.2.4 broker on three bookies, E2/W2/A2 (interop-pulsar/README.md): BOOKIE=ringlog|java, QUICK=true.
interop-pulsar:
	$(if $(filter ringlog,$(BOOKIE)),$(CARGO) build --release --workspace $(EXTRA_CARGO_ARGS))
	cd interop-pulsar && mvn -B -q compile
	java -Xmx512m -cp "interop-pulsar/target/classes:$$(cat interop-pulsar/target/classpath.txt)" \
	  -Dbookie=$(BOOKIE) -Dquick=$(QUICK) -Dringlog.bin=$(RINGLOG_BIN) $(INTEROP_PULSAR_ARGS) \
	  ringlog.pulsar.Main

## Issue 34: TLS against plaintext on one bookie, A/B in TLS_BENCH_PAIRS (3) alternating pairs: one outstanding add p50, the seed workload's ops/s and server CPU per add, batch reads' MB/s; results/tls-bench-*.json.
tls-bench: build
	scripts/tls_bench.sh $(RELEASE) $(BENCH_DIR) $(or $(TLS_BENCH_PAIRS),3) $(or $(TLS_BENCH_SECONDS),5)

## Issue 34: the same broker and three bookies with TLS, client certificates and roles (docs/security.md): producing, consuming, a bookie SIGKILL and restart; certificates from scripts/tls_certs.sh.
interop-pulsar-tls:
	$(if $(filter ringlog,$(BOOKIE)),$(CARGO) build --release --workspace $(EXTRA_CARGO_ARGS))
	cd interop-pulsar && mvn -B -q compile
	certs=$$(mktemp -d) && trap 'rm -rf "$$certs"' EXIT && scripts/tls_certs.sh "$$certs" && \
	java -Xmx512m -cp "interop-pulsar/target/classes:$$(cat interop-pulsar/target/classpath.txt)" \
	  -Dbookie=$(BOOKIE) -Dquick=$(QUICK) -Dringlog.bin=$(RINGLOG_BIN) -Dtls.dir="$$certs" \
	  -Donly=produce-consume,bookie-kill-ensemble-change $(INTEROP_PULSAR_ARGS) ringlog.pulsar.Main

## Issue 14 item 4: a DISK_FULL_MIB (1024) ext4 on a loop device fills, ringlog goes read-only, ledgers are deleted, adds come back without a restart (root).
disk-full:
	$(CARGO) build --release --workspace $(EXTRA_CARGO_ARGS)
	cd interop && mvn -B -q compile
	scripts/disk_full.sh $(RELEASE) $(DISK_FULL_MIB)

## Issue 33: DISK_PRESSURE_MIB (3072) ext4 on a loop device, two interleaved streams (half the disk live) until DISK_PRESSURE_GIB (10) are acked, per pace of DISK_PRESSURE_PACES ("full 60"): no add refused, never read-only, kept ledgers verified before/after SIGKILL; BOOKIE=java, JAVA_TUNED=1 (root).
disk-pressure:
	cd interop && mvn -B -q compile
	BOOKIE=$(BOOKIE) scripts/disk_pressure.sh $(RELEASE) $(DISK_PRESSURE_MIB)

## Java bookie vs ringlog, same clients and workload (also a Pulsar producer, the catch-up reads of compare-catchup and the busy-bookie reads of compare-busy), COMPARE_PAIRS (3) alternating pairs of COMPARE_SECONDS (20) runs; report in results/.
compare: build
	cd interop && mvn -B -q compile
	cd interop-pulsar && mvn -B -q compile
	python3 -c 'import matplotlib, hdrh' 2>/dev/null || pip install -q matplotlib hdrhistogram
	CATCHUP_GB=$(CATCHUP_GB) CATCHUP_SETTLE_S=$(CATCHUP_SETTLE_S) \
	  scripts/compare.sh $(RELEASE) $(RESULTS_DIR) $(COMPARE_PAIRS) $(COMPARE_SECONDS)

## Issue 15: only compare's catch-up reads: CATCHUP_GB (4) written, restart, cold reads all/batch/one ledger, then the seed workload alone and beside them; PAIRS (COMPARE_PAIRS), QUICK=true (0.25 GB, 5 s runs); root.
compare-catchup: build
	cd interop && mvn -B -q compile
	COMPARE_WORKLOADS=catchup CATCHUP_GB=$(CATCHUP_GB) CATCHUP_SETTLE_S=$(CATCHUP_SETTLE_S) \
	  scripts/compare.sh $(RELEASE) $(RESULTS_DIR) $(or $(PAIRS),$(COMPARE_PAIRS)) \
	  $(if $(filter true,$(QUICK)),5,$(COMPARE_SECONDS))

## Issue 16: only compare's Pulsar producer benchmark (batching off/on, 100/1,000 outstanding; ringlog unpinned and pinned against Java bookies); PAIRS (COMPARE_PAIRS), COMPARE_SECONDS per run.
compare-pulsar: build
	cd interop && mvn -B -q compile
	cd interop-pulsar && mvn -B -q compile
	COMPARE_WORKLOADS=pulsar scripts/compare.sh $(RELEASE) $(RESULTS_DIR) \
	  $(or $(PAIRS),$(COMPARE_PAIRS)) $(COMPARE_SECONDS)

## Issue 34: only compare's runs over TLS with client certificates (seed workload closed loop, one outstanding add), Java bookie and ringlog; PAIRS (COMPARE_PAIRS), COMPARE_SECONDS per run.
compare-tls: build
	cd interop && mvn -B -q compile
	COMPARE_WORKLOADS=tls scripts/compare.sh $(RELEASE) $(RESULTS_DIR) \
	  $(or $(PAIRS),$(COMPARE_PAIRS)) $(COMPARE_SECONDS)

## Issue 32: only compare's busy-bookie reads: make busy-reads on the Java bookie, then on ringlog (COMPARE_BUSY_LEDGERS "50"), and their ratios in one report.
compare-busy: build
	cd interop && mvn -B -q compile
	python3 -c 'import matplotlib, hdrh' 2>/dev/null || pip install -q matplotlib hdrhistogram
	COMPARE_WORKLOADS=busy scripts/compare.sh $(RELEASE) $(RESULTS_DIR) 1 $(COMPARE_SECONDS)

## Issue 32: catch-up reads beside 60k adds/s (BUSY_LEDGERS "50 500"): one ledger, then all, read cold after a restart; write p99 with and without, disk bytes per byte served, WA; results/busy-reads-*/ (JSON, MD, PNG); BOOKIE=java for the Java bookie.
busy-reads: build
	python3 -c 'import matplotlib, hdrh' 2>/dev/null || pip install -q matplotlib hdrhistogram
	$(if $(filter java,$(BOOKIE)),cd interop && mvn -B -q compile)
	BOOKIE=$(BOOKIE) scripts/busy_reads.sh $(RELEASE) $(RESULTS_DIR)

## Issue 17: a short load, then /metrics parsed by the Prometheus Python client's parser (pip prometheus-client).
metrics-check: build
	scripts/metrics_check.sh $(RELEASE) $(BENCH_DIR)

## Issue 17: seed workload without and with /metrics scraped every 100 ms, METRICS_PAIRS (3) alternating pairs of METRICS_SECONDS (10); docs/metrics.md.
metrics-overhead: build
	scripts/metrics_overhead.sh $(RELEASE) $(BENCH_DIR) $(METRICS_PAIRS) $(METRICS_SECONDS)

## Issue 35: what the scrubber costs the seed workload, A/B in FLAG_PAIRS (3) alternating pairs of FLAG_SECONDS (5): off against its default highest rate (4 MiB/s a shard); results/scrub-overhead-*.json.
scrub-overhead: build
	FLAG_CHECK=scrub_bytes FLAG_TARGETS="ops/s on/off >= 0.95, p99 on/off <= 1.2x (issue 35)" \
	  scripts/flag_overhead.sh scrub-overhead $(RELEASE) $(BENCH_DIR) $(or $(FLAG_PAIRS),3) $(or $(FLAG_SECONDS),5) \
	  "--scrub-rate-mib 0" "--scrub-rate-mib 4 --scrub-cycle-hours 0.0001"

## Issue 35: what --verify-digest-on-add costs the seed workload (CRC32C bodies), A/B as scrub-overhead; results/digest-overhead-*.json.
digest-overhead: build
	scripts/flag_overhead.sh digest-overhead $(RELEASE) $(BENCH_DIR) $(or $(FLAG_PAIRS),3) $(or $(FLAG_SECONDS),5) \
	  "--verify-digest-on-add false" "--verify-digest-on-add true"

## Issue 32: commits padded to 512 bytes against the 4 KiB sector, 60k 1 KiB adds/s over 50 ledgers from an empty data dir, A/B in FLAG_PAIRS (3) alternating pairs of FLAG_SECONDS (20): journal bytes per payload byte, ops/s, p50/p99; results/commit-block-*.json.
commit-block: build
	FLAG_CHECK=bytes_written FLAG_PER_PAYLOAD=1 FLAG_FRESH=1 FLAG_RATE=60000 \
	  scripts/flag_overhead.sh commit-block $(RELEASE) $(BENCH_DIR) $(or $(FLAG_PAIRS),3) $(or $(FLAG_SECONDS),20) \
	  "--commit-block-bytes 4096" "--commit-block-bytes 512"

## Hostile clients beside a good one (reliability.md N1-N6), the test alone on the host with its speed goal enforced (the good client's p99 within 5x its baseline of the same run); results/hostile-load-*.json.
hostile-load: deps
	mkdir -p $(RESULTS_DIR)
	REQUIRE_URING=1 RINGLOG_HOSTILE_LATENCY_ENFORCE=1 \
	  RINGLOG_HOSTILE_RESULTS=$(RESULTS_DIR)/hostile-load-$$(date -u +%Y%m%d-%H%M%S).json \
	  $(CARGO) test -p server --release --test it $(EXTRA_CARGO_ARGS) -- hostile_load --test-threads=1 --nocapture

## Fuzz every target for FUZZ_SECONDS (default 60) each with cargo-fuzz on nightly.
fuzz-smoke:
	scripts/fuzz_smoke.sh

## Same as CI.
ci: test

## Remove build output and bench data.
clean:
	$(CARGO) clean
