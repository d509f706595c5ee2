#!/usr/bin/env python3
"""Report of scripts/compare.sh: one Markdown table per workload with the median over the
pairs for the Java bookie and ringlog, the per-pair ratios ringlog/Java and their median, and
a PNG of the latency percentile spectrum of the closed-loop runs.

Usage: compare_report.py RESULTS_DIR PAIRS
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
    machine = (results / "machine.txt").read_text().strip().splitlines()
    lines = ["# ringlog vs the Apache BookKeeper bookie", ""]
    lines += [f"- {line}" for line in machine]
    lines += ["- runs alternate java, ringlog per pair; ratios are ringlog / Java of the same pair",
              "- Java bookie: bookkeeper-server 4.18.2 defaults, journalSyncData=true, "
              "maxPendingAddRequestsPerThread=40000 (interop/README.md)", ""]
    lines += btl_table(results, pairs, "v3")
    lines += btl_table(results, pairs, "v2")
    lines += table(results, pairs, "closed",
                   "ringlog-bench writes, seed workload, closed loop (v2)", True)
    lines += table(results, pairs, "open50", "open loop at 50% of the Java bookie's ops/s", False)
    lines += table(results, pairs, "open90", "open loop at 90% of the Java bookie's ops/s", False)
    lines += table(results, pairs, "qd1", "one outstanding add", False)
    lines += pulsar_table(results, pairs, "ringlog", "unpinned")
    lines += pulsar_table(results, pairs, "ringlog-pinned", "pinned (bookie N's shard on core N)")
    lines += floor_lines(results, pairs)
    lines += [f"![latency spectrum]({plot(results, pairs)})", ""]
    (results / "report.md").write_text("\n".join(lines))
    print("\n".join(lines))
    print(f"report: {results / 'report.md'}")


if __name__ == "__main__":
    main()
