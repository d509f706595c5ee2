#!/usr/bin/env python3
"""Prints the ratios the issues set as targets, from the bench JSON files given as name=path."""
import json
import sys


def load(arguments):
    reports = {}
    for argument in arguments:
        name, _, path = argument.partition("=")
        try:
            with open(path, encoding="utf-8") as handle:
                reports[name] = json.load(handle)
        except (OSError, ValueError) as error:
            print(f"summary: cannot read {path}: {error}", file=sys.stderr)
    return reports


def main():
    reports = load(sys.argv[1:])
    print()
    print(f"{'run':<22}{'ops/s':>12}{'MB/s':>9}{'p50 us':>9}{'p95 us':>9}{'p99 us':>9}"
          f"{'p99.9 us':>10}{'max us':>9}{'errors':>8}")
    for name, report in reports.items():
        print(f"{name:<22}{report['ops_per_sec']:>12.0f}{report['mb_per_sec']:>9.1f}"
              f"{report['p50_us']:>9.0f}{report['p95_us']:>9.0f}{report['p99_us']:>9.0f}"
              f"{report['p999_us']:>10.0f}{report['max_us']:>9.0f}{report['errors']:>8}")
    pairs_print(reports)
    disk = reports.get("disk") or disk_median(reports)
    if disk:
        for name, report in reports.items():
            if name == "disk" or "#" in name:
                continue
            p50 = report["p50_us"] / disk["p50_us"] if disk["p50_us"] else float("nan")
            ops = report["ops_per_sec"] / disk["ops_per_sec"] if disk["ops_per_sec"] else 0
            print(f"{name:<22} p50 / disk p50 = {p50:.2f}   ops/s / disk QD1 ops/s = {ops:.1f}"
                  f"{'  (disk: median of the pairs)' if 'disk' not in reports else ''}")
    extra = [(n, r) for n, r in reports.items() if "batch_entries_mean" in r]
    for name, report in extra:
        print(f"{name:<22} mean entries per commit = {report['batch_entries_mean']:.1f}")


def median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def disk_median(reports):
    """The disk floor of the alternating pairs (disk#K): median p50 and median ops/s."""
    floors = [report for name, report in reports.items() if name.startswith("disk#")]
    # (the linked floor, "disk#K", is the one the targets name)
    if not floors:
        return None
    return {"p50_us": median([floor["p50_us"] for floor in floors]),
            "ops_per_sec": median([floor["ops_per_sec"] for floor in floors])}


def pairs_print(reports):
    """Runs named NAME#K were taken right after the floors FLOOR#K (names starting with
    "disk"; alternating pairs, so the host's drift, which moves this VM's disk floor by 2x
    within minutes, cancels): prints each pair's p50 ratio to each floor and the median."""
    floors = sorted({name.partition("#")[0] for name in reports
                     if name.startswith("disk") and "#" in name})
    pairs = {}
    for name, report in reports.items():
        base, hash_sign, index = name.partition("#")
        if not hash_sign or base.startswith("disk"):
            continue
        for floor in floors:
            disk = reports.get(f"{floor}#{index}")
            if disk and disk["p50_us"]:
                pairs.setdefault((base, floor), []).append(report["p50_us"] / disk["p50_us"])
    for (base, floor), ratios in pairs.items():
        listed = " ".join(f"{ratio:.2f}" for ratio in ratios)
        print(f"{base:<22} p50 / {floor} p50 per pair: {listed}; median {median(ratios):.2f} "
              f"over {len(ratios)} pairs")


if __name__ == "__main__":
    main()
