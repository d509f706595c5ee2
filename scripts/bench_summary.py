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
    disk = reports.get("disk")
    if disk:
        for name, report in reports.items():
            if name == "disk":
                continue
            p50 = report["p50_us"] / disk["p50_us"] if disk["p50_us"] else float("nan")
            ops = report["ops_per_sec"] / disk["ops_per_sec"] if disk["ops_per_sec"] else 0
            print(f"{name:<22} p50 / disk p50 = {p50:.2f}   ops/s / disk QD1 ops/s = {ops:.1f}")
    extra = [(n, r) for n, r in reports.items() if "batch_entries_mean" in r]
    for name, report in extra:
        print(f"{name:<22} mean entries per commit = {report['batch_entries_mean']:.1f}")


if __name__ == "__main__":
    main()
