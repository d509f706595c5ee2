#!/usr/bin/env python3
"""Latency against offered load (issue 18), against a running ringlog bookie.

Runs `ringlog-bench writes` open loop (latency from each add's intended send time) at
fractions of a measured closed-loop maximum, and at fixed rates, one run per point. Around
each run it reads the server's /metrics, so every point also says where an add's time went
inside the server (the `ringlog_add_stage_seconds` histograms, docs/metrics.md) and how
much of the client's latency the server accounts for. Writes latency-curve.json and, when
matplotlib is importable, latency-curve.png (p50/p99/p99.9 against offered load, the disk
floor drawn), and prints a table and the issue's targets.

Usage: latency_curve.py --bench BIN --target HOST:PORT --metrics URL --max-ops N
       [--disk-json FILE ...] [--fractions 0.1,0.25,...] [--rates 250000] [--seconds S]
       [--client-args '--cores 1'] --out DIR
"""
import argparse
import json
import os
import re
import subprocess
import sys
import urllib.request

STAGES = ["received_to_staged", "staged_to_submitted", "submitted_to_durable", "durable_to_sent"]
SAMPLE = re.compile(r'^(?P<name>[a-z_]+)(\{(?P<labels>[^}]*)\})? (?P<value>\S+)$')


def scrape(url):
    """Every sample of the exposition, keyed by (name, labels string)."""
    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode()
    samples = {}
    for line in text.splitlines():
        match = SAMPLE.match(line)
        if match:
            samples[(match["name"], match["labels"] or "")] = float(match["value"])
    return samples


def histogram(before, after, name, stage=None):
    """Count, sum and cumulative buckets (le, count) of a histogram between two scrapes."""
    prefix = f'stage="{stage}",' if stage else ""
    label = f'stage="{stage}"' if stage else ""

    def delta(key):
        return after.get(key, 0.0) - before.get(key, 0.0)

    count = delta((name + "_count", label))
    total = delta((name + "_sum", label))
    buckets = []
    for (sample, labels), _ in after.items():
        if sample == name + "_bucket" and labels.startswith(prefix + "le="):
            bound = labels[len(prefix) + 4:-1]
            upper = float("inf") if bound == "+Inf" else float(bound)
            buckets.append((upper, delta((sample, labels))))
    buckets.sort()
    return count, total, buckets


def quantile_bound_us(buckets, count, q):
    """The upper bound of the bucket holding quantile q (log2 buckets: within 2x)."""
    for upper, cumulative in buckets:
        if count and cumulative >= q * count:
            return upper * 1e6
    return float("nan")


def run_point(args, rate, label):
    before = scrape(args.metrics)
    report_path = os.path.join(args.out, f"point-{label}.json")
    command = [args.bench, "writes", "--target", args.target, "--entry-size", "1024",
               "--ledgers", "50", "--rate", str(int(rate)), "--seconds", str(args.seconds),
               "--json", report_path] + args.client_args.split()
    completed = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, check=False)
    after = scrape(args.metrics)
    if completed.returncode != 0:
        print(completed.stdout[-2000:], file=sys.stderr)
        raise SystemExit(f"latency curve: ringlog-bench failed at {rate:.0f} adds/s")
    with open(report_path, encoding="utf-8") as handle:
        client = json.load(handle)
    stages = {}
    for stage in STAGES:
        count, total, buckets = histogram(before, after, "ringlog_add_stage_seconds", stage)
        stages[stage] = {
            "count": int(count),
            "avg_us": total / count * 1e6 if count else None,
            "p99_us_at_most": quantile_bound_us(buckets, count, 0.99) if count else None,
        }
    count, total, buckets = histogram(before, after, "ringlog_add_seconds")
    server = {
        "count": int(count),
        "avg_us": total / count * 1e6 if count else None,
        "p99_us_at_most": quantile_bound_us(buckets, count, 0.99) if count else None,
    }
    return {
        "label": label,
        "offered_per_sec": rate,
        "achieved_per_sec": client["ops_per_sec"],
        "avg_us": client["avg_us"],
        "p50_us": client["p50_us"],
        "p95_us": client["p95_us"],
        "p99_us": client["p99_us"],
        "p999_us": client["p999_us"],
        "max_us": client["max_us"],
        "errors": client["errors"],
        "server_add": server,
        "server_stages": stages,
    }


def disk_floor(paths):
    """Median p50/p99 of the disk floor runs (QD1 4 KiB durable writes) given."""
    reports = []
    for path in paths:
        try:
            with open(path, encoding="utf-8") as handle:
                reports.append(json.load(handle))
        except (OSError, ValueError):
            continue
    if not reports:
        return None

    def median(key):
        values = sorted(report[key] for report in reports)
        return values[len(values) // 2]

    return {"p50_us": median("p50_us"), "p99_us": median("p99_us"), "runs": len(reports)}


def plot(result, path):
    try:
        import matplotlib  # pylint: disable=import-outside-toplevel
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # pylint: disable=import-outside-toplevel
    except ImportError:
        print("latency curve: matplotlib not importable, no PNG (the JSON has every number)")
        return False
    points = sorted(result["points"], key=lambda point: point["offered_per_sec"])
    offered = [point["offered_per_sec"] / 1000 for point in points]
    figure, axes = plt.subplots(figsize=(8, 5))
    for key, name in [("p50_us", "p50"), ("p99_us", "p99"), ("p999_us", "p99.9")]:
        axes.plot(offered, [point[key] / 1000 for point in points], marker="o", label=name)
    floor = result.get("disk_floor")
    if floor:
        axes.axhline(floor["p50_us"] / 1000, color="grey", linestyle="--",
                     label="disk floor p50 (QD1 4 KiB durable write)")
        axes.axhline(floor["p99_us"] / 1000, color="grey", linestyle=":",
                     label="disk floor p99")
    axes.set_yscale("log")
    axes.set_xlabel("offered load, thousand 1 KiB adds/s (open loop, 50 ledgers, sync)")
    axes.set_ylabel("latency from intended send, ms (log)")
    axes.set_title(f"ringlog latency against load (closed-loop max "
                   f"{result['max_ops_per_sec'] / 1000:.0f}k adds/s)")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    return True


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench", required=True)
    parser.add_argument("--target", required=True)
    parser.add_argument("--metrics", required=True, help="the server's /metrics URL")
    parser.add_argument("--max-ops", type=float, required=True,
                        help="closed-loop adds/s of the same workload (the 100%% point)")
    parser.add_argument("--disk-json", nargs="*", default=[])
    parser.add_argument("--fractions", default="0.1,0.25,0.5,0.75,0.9")
    parser.add_argument("--rates", default="250000", help="fixed offered loads, adds/s")
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--client-args", default="",
                        help="more ringlog-bench writes options, e.g. '--cores 1'")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    plan = [(fraction * args.max_ops, f"{fraction:.0%}")
            for fraction in (float(f) for f in args.fractions.split(",") if f)]
    plan += [(float(rate), f"{float(rate) / 1000:.0f}k")
             for rate in args.rates.split(",") if rate and float(rate) < args.max_ops]
    plan.sort()
    result = {
        "max_ops_per_sec": args.max_ops,
        "seconds_per_point": args.seconds,
        "disk_floor": disk_floor(args.disk_json),
        "points": [],
    }
    for rate, label in plan:
        what = f"{label} of the closed-loop max" if label.endswith("%") else "fixed rate"
        print(f"== latency curve: {what}, {rate:.0f} adds/s offered, open loop, "
              f"{args.seconds} s", flush=True)
        result["points"].append(run_point(args, rate, label.replace("%", "pct")))
    json_path = os.path.join(args.out, "latency-curve.json")
    with open(json_path, "w", encoding="utf-8") as handle:
        json.dump(result, handle, indent=1)
    png_path = os.path.join(args.out, "latency-curve.png")
    drew = plot(result, png_path)
    print()
    print(f"{'point':<8}{'offered/s':>11}{'acked/s':>10}{'avg us':>9}{'p50 us':>8}"
          f"{'p99 us':>8}{'p99.9 us':>10}{'max us':>8} | server avg us: {'add':>6}"
          f"{'staged':>8}{'wait':>8}{'disk':>8}{'send':>8}")

    def cell(value, width):
        return f"{value:>{width}.0f}" if value is not None else f"{'-':>{width}}"

    for point in result["points"]:
        stages = point["server_stages"]
        print(f"{point['label']:<8}{point['offered_per_sec']:>11.0f}"
              f"{point['achieved_per_sec']:>10.0f}{point['avg_us']:>9.0f}{point['p50_us']:>8}"
              f"{point['p99_us']:>8}{point['p999_us']:>10}{point['max_us']:>8} | "
              f"{'':>14}{cell(point['server_add']['avg_us'], 6)}"
              + "".join(cell(stages[stage]["avg_us"], 8) for stage in STAGES))
    print("server columns (averages, us): add = received to answered; staged = received to "
          "staged (per add); wait = staged to submitted and disk = submitted to durable "
          "(per commit); send = durable to sent")
    targets(result)
    print(f"== latency curve: {json_path}" + (f", {png_path}" if drew else ""))


def targets(result):
    """Issue 18's targets, as measured by this run (reported, not enforced)."""
    for point in result["points"]:
        if point["label"] == "250k":
            ok = point["avg_us"] <= 1150 and point["p99_us"] <= 5000
            print(f"target 250k adds/s: avg {point['avg_us'] / 1000:.2f} ms (<= 1.15), "
                  f"p99 {point['p99_us'] / 1000:.2f} ms (<= 5): {'PASS' if ok else 'FAIL'}")
    floor = result.get("disk_floor")
    half = [point for point in result["points"] if point["label"] == "50pct"]
    if floor and half:
        ratio = half[0]["p99_us"] / floor["p99_us"] if floor["p99_us"] else float("inf")
        print(f"target 50% of max: p99 {half[0]['p99_us']} us = {ratio:.1f}x the disk floor's "
              f"p99 {floor['p99_us']} us (<= 3x): {'PASS' if ratio <= 3 else 'FAIL'}")


if __name__ == "__main__":
    main()
