# ringlog: every target is one or two commands; CI runs `make test` and nothing else.
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
CARGO ?= cargo
EXTRA_CARGO_ARGS ?=
SEEDS ?= 2000
BENCH_SECONDS ?= 10
BENCH_DIR ?= $(CURDIR)/target/bench-data
RELEASE := target/release
BOOKIE ?= ringlog
QUICK ?= false
RINGLOG_BIN ?= $(CURDIR)/$(RELEASE)/ringlog
INTEROP_ARGS ?=

.PHONY: help deps shellcheck-deps fuzz-smoke build check test sim bench bench-disk bench-journal interop ci clean

## Show this help.
help:
	@awk '/^## /{doc=substr($$0,4); next} /^[a-z-]+:/{if(doc){split($$0,t,":"); printf "  %-16s %s\n", t[1], doc}; doc=""}' $(MAKEFILE_LIST)

## Check the toolchain this repo needs (Rust from rustup; pinned in rust-toolchain.toml).
deps:
	@command -v $(CARGO) >/dev/null || { echo "cargo not found: install Rust with rustup" >&2; exit 1; }
	@$(CARGO) --version

## Release build of ringlog and ringlog-bench.
build: deps
	$(CARGO) build --release --workspace $(EXTRA_CARGO_ARGS)

## Install shellcheck from Debian if missing (used by `check`).
shellcheck-deps:
	@command -v shellcheck >/dev/null || { apt-get update -qq && apt-get install -y -qq shellcheck; }

## Format check, clippy with warnings denied, shellcheck of scripts/, pin-cores dry run.
check: deps shellcheck-deps
	shellcheck scripts/*.sh
	scripts/pin-cores.sh >/dev/null
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets --release $(EXTRA_CARGO_ARGS) -- -D warnings

## Everything CI runs: lints, unit + integration tests (io_uring required), simulation seeds.
test: check
	REQUIRE_URING=1 $(CARGO) test --workspace --release $(EXTRA_CARGO_ARGS)
	$(MAKE) sim

## Seeded crash simulation of the engine: SEEDS=N seeds (default 2000); SEED=n replays one.
sim: deps
	RINGLOG_SIM_SEEDS=$(SEEDS) $(if $(SEED),RINGLOG_SIM_SEED=$(SEED)) \
	  $(CARGO) test -p engine --release $(EXTRA_CARGO_ARGS) -- tests::simulation --nocapture

## The physical floor alone: QD1 O_DIRECT 4 KiB write + linked fdatasync (a 1 KiB entry commits one 4 KiB sector).
bench-disk: build
	mkdir -p $(BENCH_DIR)
	$(RELEASE)/ringlog-bench disk --dir $(BENCH_DIR) --size 4096 --seconds 5 --json $(BENCH_DIR)/disk.json

## The engine in-process: 1 and 256 outstanding 1 KiB appends, with ratios to the floor.
bench-journal: build
	scripts/bench_journal.sh $(RELEASE) $(BENCH_DIR) 5

## Main job: build, start a bookie on a temporary data dir, disk floor + seed workload, report.
bench: build
	scripts/bench.sh $(RELEASE) $(BENCH_DIR) $(BENCH_SECONDS)

## Real Java BookKeeper client vs real bookies (interop/README.md): BOOKIE=ringlog|java, QUICK=true.
interop:
	$(if $(filter ringlog,$(BOOKIE)),$(CARGO) build --release -p server $(EXTRA_CARGO_ARGS))
	cd interop && mvn -B -q compile
	java -cp "interop/target/classes:$$(cat interop/target/classpath.txt)" -Dbookie=$(BOOKIE) \
	  -Dquick=$(QUICK) -Dringlog.bin=$(RINGLOG_BIN) $(INTEROP_ARGS) ringlog.interop.Main

## Fuzz every target for FUZZ_SECONDS (default 60) each with cargo-fuzz on nightly.
fuzz-smoke:
	scripts/fuzz_smoke.sh

## Same as CI.
ci: test

## Remove build output and bench data.
clean:
	$(CARGO) clean
