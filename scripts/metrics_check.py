#!/usr/bin/env python3
"""Validates a /metrics exposition with the official Prometheus Python client's parser.

Usage: metrics_check.py URL_OR_FILE [FAMILY ...]
Fails (exit 1) when the text does not parse, a histogram's buckets are not cumulative or
disagree with its count, or a FAMILY named on the command line is missing. Prints the
number of families and samples. `make test` runs it through scripts/metrics_check.sh.
"""
import sys
import urllib.request

from prometheus_client.parser import text_string_to_metric_families


def load(source):
    if source.startswith("http://"):
        with urllib.request.urlopen(source, timeout=5) as response:
            return response.read().decode("utf-8")
    with open(source, encoding="utf-8") as file:
        return file.read()


def histogram_check(family):
    series = {}
    for sample in family.samples:
        labels = {k: v for k, v in sample.labels.items() if k != "le"}
        key = tuple(sorted(labels.items()))
        entry = series.setdefault(key, {"buckets": [], "count": None})
        if sample.name.endswith("_bucket"):
            entry["buckets"].append((float(sample.labels["le"]), sample.value))
        elif sample.name.endswith("_count"):
            entry["count"] = sample.value
    for key, entry in series.items():
        buckets = sorted(entry["buckets"])
        values = [value for _, value in buckets]
        if values != sorted(values):
            sys.exit(f"{family.name}{dict(key)}: buckets are not cumulative")
        if not buckets or buckets[-1][0] != float("inf"):
            sys.exit(f"{family.name}{dict(key)}: no +Inf bucket")
        if entry["count"] != buckets[-1][1]:
            sys.exit(f"{family.name}{dict(key)}: _count differs from the +Inf bucket")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    text = load(sys.argv[1])
    families = list(text_string_to_metric_families(text))
    names = {family.name for family in families}
    for family in families:
        if family.type == "histogram":
            histogram_check(family)
    # The parser drops a counter's `_total` from its family name.
    missing = [
        name for name in sys.argv[2:] if name not in names and name.removesuffix("_total") not in names
    ]
    if missing:
        sys.exit(f"missing families: {missing}")
    samples = sum(len(family.samples) for family in families)
    print(f"metrics_check: {len(families)} families, {samples} samples parse")


if __name__ == "__main__":
    main()
