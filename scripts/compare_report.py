#!/usr/bin/env python3
"""Report of scripts/compare.sh: one Markdown table per workload with the median over the
pairs for the Java bookie and ringlog, the per-pair ratios ringlog/Java and their median, and
a PNG of the latency percentile spectrum of the closed-loop runs.

With WORKLOADS "catchup" (`make compare-catchup`) only the catch-up read section is written;
with "busy" (`make compare-busy`) only the busy-bookie reads (scripts/busy_reads.sh's JSON of
each bookie); with "tls" (`make compare-tls`) only the runs over TLS; with "writes" everything
but those three; "all" (the default) every section.

Usage: compare_report.py RESULTS_DIR PAIRS [WORKLOADS]
"""
import json
import re
import statistics
import sys
from pathlib import Path

BOOKIES = ("java", "ringlog")


def load_json(path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def btl(results, pair, bookie, wire):
    """key=value pairs of the bench-writes PASS line, or None for a FAIL."""
    path = results / f"pair{pair}-{bookie}-btl-{wire}.txt"
    try:
        line = path.read_text().strip()
    except OSError:
        return None
    if not line.startswith("PASS"):
        return {"failed": line}
    return dict(re.findall(r"(\w+)=([^\s]+)", line))


def counters(results, pair, bookie, adds):
    """CPU s per 100k adds and voluntary context switches per 1k adds around the closed run."""
    path = results / f"pair{pair}-{bookie}-closed.counters"
    try:
        ticks0, switches0, ticks1, switches1, hz = map(int, path.read_text().split())
    except (OSError, ValueError):
        return None, None
    if not adds:
        return None, None
    cpu_s = (ticks1 - ticks0) / hz
    return cpu_s / adds * 100_000, (switches1 - switches0) / adds * 1000


def rss_mib(results, pair, bookie):
    try:
        text = (results / f"pair{pair}-{bookie}-usage.txt").read_text()
    except OSError:
        return None
    match = re.search(r"rss_peak_kib=(\d+)", text)
    return int(match.group(1)) / 1024 if match else None


def median(values):
    values = [value for value in values if value is not None]
    return statistics.median(values) if values else None


def fmt(value, digits=0):
    if value is None:
        return "n/a"
    if digits == 0:
        return f"{value:,.0f}"
    return f"{value:,.{digits}f}"


def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def bench_rows(results, pairs, kind):
    """Per bookie per pair: the ringlog-bench JSON of one run kind (closed, open50, ...)."""
    rows = {}
    for bookie in BOOKIES:
        rows[bookie] = [load_json(results / f"pair{pair}-{bookie}-{kind}.json")
                        for pair in range(1, pairs + 1)]
    return rows


METRICS = [
    ("ops/s", "ops_per_sec", 0, 1),
    ("MB/s", "mb_per_sec", 1, 1),
    ("p50 ms", "p50_us", 2, 1e-3),
    ("p95 ms", "p95_us", 2, 1e-3),
    ("p99 ms", "p99_us", 2, 1e-3),
    ("p99.9 ms", "p999_us", 2, 1e-3),
    ("max ms", "max_us", 2, 1e-3),
]


def table(results, pairs, kind, title, with_process):
    rows = bench_rows(results, pairs, kind)
    lines = [f"### {title}", "",
             "| metric | Java bookie | ringlog | ringlog / Java, per pair | median ratio |",
             "|---|---|---|---|---|"]
    for label, key, digits, scale in METRICS:
        per_bookie = {}
        for bookie in BOOKIES:
            per_bookie[bookie] = [row[key] * scale if row else None for row in rows[bookie]]
        ratios = [ratio(r, j) for r, j in zip(per_bookie["ringlog"], per_bookie["java"])]
        lines.append(f"| {label} | {fmt(median(per_bookie['java']), digits)} | "
                     f"{fmt(median(per_bookie['ringlog']), digits)} | "
                     f"{', '.join(fmt(r, 2) for r in ratios)} | {fmt(median(ratios), 2)} |")
    if with_process:
        extra = {"CPU s per 100k adds": {}, "voluntary ctx switches per 1k adds": {},
                 "peak RSS MiB": {}}
        for bookie in BOOKIES:
            cpu, switches, rss = [], [], []
            for pair, row in zip(range(1, pairs + 1), rows[bookie]):
                adds = row["count"] if row else None
                c, s = counters(results, pair, bookie, adds)
                cpu.append(c)
                switches.append(s)
                rss.append(rss_mib(results, pair, bookie))
            extra["CPU s per 100k adds"][bookie] = cpu
            extra["voluntary ctx switches per 1k adds"][bookie] = switches
            extra["peak RSS MiB"][bookie] = rss
        for label, values in extra.items():
            ratios = [ratio(r, j) for r, j in zip(values["ringlog"], values["java"])]
            lines.append(f"| {label} | {fmt(median(values['java']), 2)} | "
                         f"{fmt(median(values['ringlog']), 2)} | "
                         f"{', '.join(fmt(r, 2) for r in ratios)} | {fmt(median(ratios), 2)} |")
    lines.append("")
    return lines


def btl_table(results, pairs, wire):
    lines = [f"### BenchThroughputLatency-equivalent (real Java client), {wire}", "",
             "| metric | Java bookie | ringlog | ringlog / Java, per pair | median ratio |",
             "|---|---|---|---|---|"]
    for label, key in (("ops/s", "ops_per_s"), ("p95 ms", "p95_ms"), ("p99 ms", "p99_ms"),
                       ("bookie CPU s", "bookie_cpu_s"), ("bookie peak RSS MiB",
                                                          "bookie_rss_peak_mib")):
        values = {}
        for bookie in BOOKIES:
            values[bookie] = []
            for pair in range(1, pairs + 1):
                row = btl(results, pair, bookie, wire)
                values[bookie].append(float(row[key]) if row and key in row else None)
        ratios = [ratio(r, j) for r, j in zip(values["ringlog"], values["java"])]
        lines.append(f"| {label} | {fmt(median(values['java']), 2)} | "
                     f"{fmt(median(values['ringlog']), 2)} | "
                     f"{', '.join(fmt(r, 2) for r in ratios)} | {fmt(median(ratios), 2)} |")
    failures = [f"pair {pair} {bookie}: {row['failed']}"
                for pair in range(1, pairs + 1) for bookie in BOOKIES
                for row in [btl(results, pair, bookie, wire)] if row and "failed" in row]
    lines += [""] + [f"- {failure}" for failure in failures] + ([""] if failures else [])
    return lines


def pulsar_runs(results, pair, bookie):
    """{(batching, outstanding): key=value dict} of one Pulsar benchmark run's BENCH lines."""
    try:
        text = (results / f"pair{pair}-{bookie}-pulsar.txt").read_text()
    except OSError:
        return {}
    runs = {}
    for line in text.splitlines():
        if line.startswith("BENCH "):
            values = dict(re.findall(r"(\w+)=([^\s]+)", line))
            runs[(values["batching"], values["outstanding"])] = values
    return runs


def pulsar_table(results, pairs, ringlog_kind, layout):
    """ringlog_kind: "ringlog" (unpinned) or "ringlog-pinned", against the same Java runs."""
    lines = ["### Pulsar producer (interop-pulsar Bench: Pulsar 4.2.4 broker, 2 bookies, "
             f"E2/W2/A2, 1 KiB), ringlog {layout}", "",
             "Broker and bookies with their defaults, not the interop-pulsar scenarios' small "
             "ledgers and segments (Bench.java, Options.forBenchmark); the JVMs' memory as in "
             "interop-pulsar/README.md.", "",
             "| batching, outstanding | metric | Java bookie | ringlog | "
             "ringlog / Java, per pair | median ratio |",
             "|---|---|---|---|---|---|"]
    runs = {bookie: [pulsar_runs(results, pair, kind) for pair in range(1, pairs + 1)]
            for bookie, kind in (("java", "java"), ("ringlog", ringlog_kind))}
    for batching in ("off", "on"):
        for outstanding in ("100", "1000"):
            for label, key, digits in (("msgs/s", "msgs_s", 0), ("p50 ms", "p50_ms", 2),
                                       ("p99 ms", "p99_ms", 2), ("max ms", "max_ms", 2),
                                       ("errors", "errors", 0)):
                values = {}
                for bookie in BOOKIES:
                    values[bookie] = [float(run[(batching, outstanding)][key])
                                      if (batching, outstanding) in run else None
                                      for run in runs[bookie]]
                ratios = [ratio(r, j) for r, j in zip(values["ringlog"], values["java"])]
                lines.append(f"| {batching}, {outstanding} | {label} | "
                             f"{fmt(median(values['java']), digits)} | "
                             f"{fmt(median(values['ringlog']), digits)} | "
                             f"{', '.join(fmt(r, 2) for r in ratios)} | "
                             f"{fmt(median(ratios), 2)} |")
    lines.append("")
    return lines


def floor_lines(results, pairs):
    disk = [load_json(results / f"pair{pair}-disk.json") for pair in range(1, pairs + 1)]
    dsync = [load_json(results / f"pair{pair}-disk-dsync.json") for pair in range(1, pairs + 1)]
    qd1 = bench_rows(results, pairs, "qd1")["ringlog"]
    ratios = [ratio(q["p50_us"], d["p50_us"]) if q and d else None for q, d in zip(qd1, disk)]
    ratios_dsync = [ratio(q["p50_us"], d["p50_us"]) if q and d else None
                    for q, d in zip(qd1, dsync)]

    def row(label, reports):
        values = [r["p50_us"] if r else None for r in reports]
        return (f"| {label} | {', '.join(fmt(v) for v in values)} | {fmt(median(values))} |")

    return ["### Latency floor", "",
            "Both floors are measured right before ringlog's one-outstanding run of the pair.", "",
            "| | per pair | median |", "|---|---|---|",
            row("disk floor p50 µs (ringlog-bench disk, 4 KiB QD1 write + linked fdatasync)", disk),
            row("disk floor with RWF_DSYNC p50 µs (disk --dsync, ringlog's default sync mode)",
                dsync),
            row("ringlog one outstanding add p50 µs", qd1),
            f"| ratio to the floor (target ≤ 1.15) | {', '.join(fmt(r, 2) for r in ratios)} | "
            f"{fmt(median(ratios), 2)} |",
            f"| ratio to the RWF_DSYNC floor | {', '.join(fmt(r, 2) for r in ratios_dsync)} | "
            f"{fmt(median(ratios_dsync), 2)} |", ""]


CATCHUP_READS = [
    ("all", "(a) all 50 ledgers at once, READ_ENTRY"),
    ("batch", "(b) all 50 ledgers at once, BATCH_READ_ENTRY (p99 per batch request)"),
    ("ledger", "(c) one ledger alone, in entry order, READ_ENTRY"),
]

CATCHUP_METRICS = [
    ("MB/s", "mb_per_sec", 1, 1),
    ("entries/s", "ops_per_sec", 0, 1),
    ("p99 ms", "p99_us", 2, 1e-3),
    ("errors", "errors", 0, 1),
]


def catchup_fill(results, pair, bookie):
    """key=value pairs compare.sh wrote after the fill and the restart, or {}."""
    try:
        text = (results / f"pair{pair}-{bookie}-catchup-fill.txt").read_text()
    except OSError:
        return {}
    return dict(re.findall(r"(\w+)=([^\s]+)", text))


def catchup_rows(results, pairs, bookie, kind):
    return [load_json(results / f"pair{pair}-{bookie}-catchup-{kind}.json")
            for pair in range(1, pairs + 1)]


def catchup_setup_lines(results, pairs):
    lines = ["| bookie, pair | entries acked | fill: s (MB/s) | settle s | stop s | start s |",
             "|---|---|---|---|---|---|"]
    for pair in range(1, pairs + 1):
        for bookie in BOOKIES:
            fill = catchup_fill(results, pair, bookie)
            entries = float(fill["entries_acked"]) if "entries_acked" in fill else None
            seconds = float(fill["fill_s"]) if "fill_s" in fill else None
            rate = entries * 1024 / 1e6 / seconds if entries and seconds else None
            lines.append(f"| {bookie}, {pair} | {fmt(entries)} | {fmt(seconds, 1)} "
                         f"({fmt(rate, 1)}) | {fill.get('settle_s', 'n/a')} | "
                         f"{fill.get('stop_s', 'n/a')} | {fill.get('start_s', 'n/a')} |")
    return lines + [""]


def catchup_read_lines(results, pairs):
    lines = ["| reads | metric | Java bookie | ringlog | ringlog / Java, per pair | "
             "median ratio |", "|---|---|---|---|---|---|"]
    for kind, title in CATCHUP_READS:
        rows = {bookie: catchup_rows(results, pairs, bookie, kind) for bookie in BOOKIES}
        for label, key, digits, scale in CATCHUP_METRICS:
            values = {bookie: [row[key] * scale if row else None for row in rows[bookie]]
                      for bookie in BOOKIES}
            ratios = [ratio(r, j) for r, j in zip(values["ringlog"], values["java"])]
            lines.append(f"| {title} | {label} | {fmt(median(values['java']), digits)} | "
                         f"{fmt(median(values['ringlog']), digits)} | "
                         f"{', '.join(fmt(r, 2) for r in ratios)} | {fmt(median(ratios), 2)} |")
    return lines + [""]


def mixed_read_passes(results, pair, bookie):
    """(entries, entries/s, complete) of each catch-up read pass of the mixed run: from its
    JSON when it completed, else from the last per-second progress line of the pass stopped
    when the writes ended."""
    passes = []
    paths = results.glob(f"pair{pair}-{bookie}-catchup-mixed-reads-*.txt")
    for path in sorted(paths, key=lambda path: int(path.stem.rsplit("-", 1)[1])):
        row = load_json(path.with_suffix(".json"))
        if row:
            passes.append((row["count"], row["ops_per_sec"], True))
            continue
        progress = re.findall(r"^(\d+) entries checked OK, ([\d.]+) entries/sec",
                              path.read_text(errors="replace"), re.MULTILINE)
        if progress:
            passes.append((int(progress[-1][0]), float(progress[-1][1]), False))
    return passes


def mixed_read_mb_per_sec(passes):
    """Payload MB/s of the mixed run's reads over all passes (1 KiB entries)."""
    entries = sum(count for count, _, _ in passes)
    seconds = sum(count / rate for count, rate, _ in passes if rate > 0)
    return entries * 1024 / 1e6 / seconds if seconds > 0 else None


def catchup_mixed_lines(results, pairs):
    lines = ["| bookie | metric | alone | mixed | mixed / alone, per pair | "
             "median ratio | target (issue 15, ringlog) |", "|---|---|---|---|---|---|---|"]
    for bookie in BOOKIES:
        alone = catchup_rows(results, pairs, bookie, "mixed-alone")
        mixed = catchup_rows(results, pairs, bookie, "mixed")
        for label, key, digits, scale, target in (("writes ops/s", "ops_per_sec", 0, 1, "≥ 0.80"),
                                                  ("writes p99 ms", "p99_us", 2, 1e-3, "≤ 2.00")):
            before = [row[key] * scale if row else None for row in alone]
            during = [row[key] * scale if row else None for row in mixed]
            ratios = [ratio(d, b) for d, b in zip(during, before)]
            lines.append(f"| {bookie} | {label} | {fmt(median(before), digits)} | "
                         f"{fmt(median(during), digits)} | "
                         f"{', '.join(fmt(r, 2) for r in ratios)} | {fmt(median(ratios), 2)} | "
                         f"{target if bookie == 'ringlog' else ''} |")
        cold = [row["mb_per_sec"] if row else None
                for row in catchup_rows(results, pairs, bookie, "all")]
        during = [mixed_read_mb_per_sec(mixed_read_passes(results, pair, bookie))
                  for pair in range(1, pairs + 1)]
        ratios = [ratio(d, c) for d, c in zip(during, cold)]
        lines.append(f"| {bookie} | reads (a) MB/s (alone: the cold run) | "
                     f"{fmt(median(cold), 1)} | {fmt(median(during), 1)} | "
                     f"{', '.join(fmt(r, 2) for r in ratios)} | {fmt(median(ratios), 2)} | |")
    lines += ["", "Catch-up read passes during the mixed run's writes (entries read, MB/s; the "
              "last pass is stopped when the writes end, its rate from its last progress line):",
              ""]
    for pair in range(1, pairs + 1):
        for bookie in BOOKIES:
            passes = mixed_read_passes(results, pair, bookie)
            described = [f"{fmt(count)} at {fmt(rate * 1024 / 1e6, 1)}"
                         + ("" if complete else " (stopped)") for count, rate, complete in passes]
            lines.append(f"- pair {pair}, {bookie}: {'; '.join(described) or 'none'}")
    return lines + [""]


def catchup_lines(results, pairs):
    """The catch-up read workload (issue 15): cold reads after a restart, and the mixed run."""
    return (["## Catch-up reads (issue 15)", "",
             "Per bookie: a fresh data dir filled with 1 KiB entries over 50 ledgers "
             "(ringlog-bench writes --verify-log, v2, throttle 20000), a settle wait, a restart "
             "on the same data, then each read after a page-cache drop, every entry checked "
             "against the log. The Java bookie runs with the keys on the `workloads` line above "
             "(DbLedgerStorage by default). Targets (issue 15, ≥ 4 GB): (a) ≥ 600 MB/s, "
             "(c) ≥ 200 MB/s, (b) ≥ (a), ringlog ≥ 3x the Java bookie.", "",
             "### Data set and restart", ""]
            + catchup_setup_lines(results, pairs)
            + ["### Cold reads after the restart", ""]
            + catchup_read_lines(results, pairs)
            + ["### Mixed run: the seed workload (closed loop, 50 new ledgers) alone, then beside "
               "catch-up reads (a)", ""]
            + catchup_mixed_lines(results, pairs))


def busy_run(results, bookie):
    """The newest busy-reads JSON of `bookie` in the results dir, or None."""
    paths = sorted(results.glob(f"busy-reads-{bookie}-*/busy-reads.json"))
    return load_json(paths[-1]) if paths else None


def busy_lines(results):
    """The busy-bookie reads (scripts/busy_reads.sh) of both bookies, side by side."""
    runs = {bookie: busy_run(results, bookie) for bookie in BOOKIES}
    lines = ["## Catch-up reads on a busy bookie (`make compare-busy`, scripts/busy_reads.sh)", "",
             "60k 1 KiB adds/s open loop, restart, the same writes again; 4 s later one ledger "
             "of the fill read cold, then every ledger; the writers' p99 during each read "
             "against the same run's controls (seconds without a read). One run per bookie.", ""]
    if any(run is None for run in runs.values()):
        missing = [bookie for bookie, run in runs.items() if run is None]
        return lines + [f"- no busy-reads result for {', '.join(missing)}", ""]
    by_count = {bookie: {run["ledgers"]: run for run in runs[bookie]["runs"]} for bookie in BOOKIES}
    lines += ["| ledgers | read | Java MB/s | ringlog MB/s | ringlog / Java | Java write p99 "
              "during / control (ms) | ringlog write p99 during / control (ms) |",
              "|---|---|---|---|---|---|---|"]
    for count in sorted(set(by_count["java"]) & set(by_count["ringlog"])):
        java, ringlog = by_count["java"][count], by_count["ringlog"][count]
        for kind in ("one", "all"):
            java_read, ringlog_read = java["reads"].get(kind), ringlog["reads"].get(kind)
            if not java_read or not ringlog_read:
                continue
            lines.append(
                f"| {count} | {kind} | {fmt(java_read['mb_per_s'], 1)} | "
                f"{fmt(ringlog_read['mb_per_s'], 1)} | "
                f"{fmt(ratio(ringlog_read['mb_per_s'], java_read['mb_per_s']), 2)} | "
                f"{fmt(java_read['writes_p99_ms'], 1)} / {fmt(java['writes_p99_control_ms'], 1)} | "
                f"{fmt(ringlog_read['writes_p99_ms'], 1)} / "
                f"{fmt(ringlog['writes_p99_control_ms'], 1)} |")
    for bookie in BOOKIES:
        for run in runs[bookie]["runs"]:
            lines.append(f"- {bookie}, {run['ledgers']} ledgers: write amplification "
                         f"{fmt(run['write_amplification'], 2)}")
    return lines + [""]


def plot(results, pairs):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is missing: no plot (pip install matplotlib)"
    rows = bench_rows(results, pairs, "closed")
    figure, axes = plt.subplots(figsize=(8, 5))
    for bookie, style in zip(BOOKIES, ("--", "-")):
        for pair, row in zip(range(1, pairs + 1), rows[bookie]):
            if not row:
                continue
            points = [(p, v) for p, v in row["spectrum_us"] if p < 100]
            xs = [1 / (1 - p / 100) for p, _ in points]
            ys = [v / 1000 for _, v in points]
            axes.plot(xs, ys, style, label=f"{bookie} pair {pair}")
    axes.set_xscale("log")
    ticks = [1, 2, 10, 100, 1000, 10000, 100000]
    axes.set_xticks(ticks)
    axes.set_xticklabels(["p0", "p50", "p90", "p99", "p99.9", "p99.99", "p99.999"])
    axes.set_ylabel("add latency, ms")
    axes.set_title("Seed workload, closed loop (ringlog-bench writes, 50 ledgers, throttle 20000)")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend()
    figure.tight_layout()
    figure.savefig(results / "latency-spectrum.png", dpi=110)
    return "latency-spectrum.png"


def main():
    results = Path(sys.argv[1])
    pairs = int(sys.argv[2])
    workloads = sys.argv[3] if len(sys.argv) > 3 else "all"
    machine = (results / "machine.txt").read_text().strip().splitlines()
    lines = ["# ringlog vs the Apache BookKeeper bookie", ""]
    lines += [f"- {line}" for line in machine]
    lines += ["- runs alternate java, ringlog per pair; ratios are ringlog / Java of the same pair",
              "- Java bookie: bookkeeper-server 4.18.2 defaults, journalSyncData=true, "
              "maxPendingAddRequestsPerThread=40000 (interop/README.md)", ""]
    if workloads == "pulsar":
        lines += pulsar_table(results, pairs, "ringlog", "unpinned")
        lines += pulsar_table(results, pairs, "ringlog-pinned",
                              "pinned (bookie N's shard on core N)")
    elif workloads not in ("catchup", "busy", "tls"):
        lines += btl_table(results, pairs, "v3")
        lines += btl_table(results, pairs, "v2")
        lines += table(results, pairs, "closed",
                       "ringlog-bench writes, seed workload, closed loop (v2)", True)
        lines += table(results, pairs, "open50", "open loop at 50% of the Java bookie's ops/s",
                       False)
        lines += table(results, pairs, "open90", "open loop at 90% of the Java bookie's ops/s",
                       False)
        lines += table(results, pairs, "qd1", "one outstanding add", False)
        lines += pulsar_table(results, pairs, "ringlog", "unpinned")
        lines += pulsar_table(results, pairs, "ringlog-pinned",
                              "pinned (bookie N's shard on core N)")
        lines += floor_lines(results, pairs)
        lines += [f"![latency spectrum]({plot(results, pairs)})", ""]
    if workloads in ("all", "catchup"):
        lines += catchup_lines(results, pairs)
    if workloads in ("all", "tls"):
        lines += table(results, pairs, "tls-closed",
                       "over TLS with client certificates: seed workload, closed loop (v2)", False)
        lines += table(results, pairs, "tls-qd1",
                       "over TLS with client certificates: one outstanding add", False)
    if workloads in ("all", "busy"):
        lines += busy_lines(results)
    (results / "report.md").write_text("\n".join(lines))
    print("\n".join(lines))
    print(f"report: {results / 'report.md'}")


if __name__ == "__main__":
    main()
