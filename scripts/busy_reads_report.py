#!/usr/bin/env python3
"""`make busy-reads` report: busy-reads.json, busy-reads.md and busy-reads.png from the files
scripts/busy_reads.sh left in RESULTS_DIR (see that script for the scenario).

Usage: busy_reads_report.py RESULTS_DIR BOOKIE LEDGER_COUNT...

Phases of the writer's run, by wall clock: `before` (from the end of its warm-up to the first
read), `one` (the one-ledger read: of the fill's first ledger, and of the next ones in turn
where it is too small to time), `after_one` (the control after it), `all` (every ledger
read), `after_all`. A read phase runs from the reader's first line (printed once it loaded its
verify log, so just before its first request) to its end, and its p99 is that of the merged
per-second histograms that overlap it: a read shorter than a second still has one, and every
second it touched counts against it. A control phase's p99 is that of the seconds wholly
inside it; `control` merges before, after_one and after_all. Seconds that overlap a page
cache drop of the script (`-drops.txt`, up to a second after it) count in no phase: dropping
the cache stalls every process on the host for a moment, the bookie's or not. Nor do seconds that overlap the reader loading its verify log (from its
start to "verify log loaded", up to a second after): the script gives it `--start-delay-ms`
so that the load ends before the measured read begins.
"""

import json
import os
import shlex
import sys

from hdrh.histogram import HdrHistogram

ENTRY_PAYLOAD_BYTES = 1024
# Issue 32's targets, by ledger count (one-ledger MB/s); bytes per byte and the p99 ratio
# are the same for every count.
TARGET_ONE_MB_S = {50: 200.0, 500: 100.0}
TARGET_BYTES_PER_BYTE = 2.0
TARGET_P99_RATIO = 2.0


def env_file(path):
    """key=value pairs of a shell-quoted line file."""
    values = {}
    with open(path) as handle:
        for token in shlex.split(handle.read()):
            key, _, value = token.partition("=")
            values[key] = value
    return values


def counters(text):
    return {k: int(v) for k, v in (item.split("=") for item in text.split())} if text else {}


def hdr_intervals(path):
    """[(start_epoch_s, end_epoch_s, histogram)] of an HdrHistogram interval log."""
    base = None
    intervals = []
    with open(path) as handle:
        for line in handle:
            if line.startswith("#[StartTime:"):
                base = float(line.split()[1])
            elif line.startswith("#") or line.startswith('"') or not line.strip():
                continue
            else:
                start, length, _max, encoded = line.strip().split(",")
                histogram = HdrHistogram.decode(encoded.encode())
                begin = base + float(start)
                intervals.append((begin, begin + float(length), histogram))
    return intervals


def merged_p99_ms(intervals, begin, end, overlapping=False):
    merged = None
    for start, stop, histogram in intervals:
        inside = (stop > begin and start < end) if overlapping else (start >= begin and stop <= end)
        if inside:
            if merged is None:
                merged = HdrHistogram(1, 3600 * 1000 * 1000, 3)
            merged.add(histogram)
    if merged is None or merged.get_total_count() == 0:
        return None, 0
    return merged.get_value_at_percentile(99) / 1000.0, merged.get_total_count()


def line_time(path, marker, default):
    """The time stamp of a read's first line holding `marker`: "verify log loaded" (printed
    once the log is loaded, before `--start-delay-ms`) or " entries of " (its header, printed
    just before its first request)."""
    with open(path) as handle:
        for line in handle:
            if marker not in line:
                continue
            try:
                return float(line.split()[0])
            except (ValueError, IndexError):
                break
    return default


def read_rate_series(path, started):
    """[(epoch_s, MB/s over the second before)] from a read's time-stamped progress lines."""
    series = []
    previous_t, previous_n = started, 0
    with open(path) as handle:
        for line in handle:
            parts = line.split()
            if len(parts) > 3 and parts[2:5] == ["entries", "checked", "OK,"]:
                t, n = float(parts[0]), int(parts[1])
                if t > previous_t:
                    series.append((t, (n - previous_n) * ENTRY_PAYLOAD_BYTES / 1e6 / (t - previous_t)))
                previous_t, previous_n = t, n
    return series


def cpu_samples(path):
    """[(epoch_s, busy_jiffies, total_jiffies)] from the script's /proc/stat samples."""
    samples = []
    if not os.path.exists(path):
        return samples
    with open(path) as handle:
        for line in handle:
            parts = line.split()
            if len(parts) < 6 or parts[1] != "cpu":
                continue
            jiffies = [int(x) for x in parts[2:]]
            idle = jiffies[3] + (jiffies[4] if len(jiffies) > 4 else 0)
            samples.append((float(parts[0]), sum(jiffies) - idle, sum(jiffies)))
    return samples


def cpu_busy_percent(samples, begin, end):
    """The host's CPU busy share between the samples nearest `begin` and `end` (at least one
    sample apart), or None."""
    if len(samples) < 2:
        return None
    first = min(samples, key=lambda sample: abs(sample[0] - begin))
    last = min(samples, key=lambda sample: abs(sample[0] - end))
    if last[0] <= first[0]:
        later = [sample for sample in samples if sample[0] > first[0]]
        if not later:
            return None
        last = later[0]
    total = last[2] - first[2]
    return round(100.0 * (last[1] - first[1]) / total, 1) if total else None


def analyse(results, bookie, ledgers):
    prefix = os.path.join(results, f"ledgers{ledgers}")
    run = env_file(prefix + "-run.env")
    intervals = hdr_intervals(prefix + "-writes.hlog")
    drops = []
    if os.path.exists(prefix + "-drops.txt"):
        with open(prefix + "-drops.txt") as handle:
            drops = [tuple(float(x) for x in line.split()) for line in handle if line.strip()]
    reads = {kind: env_file(f"{prefix}-read-{kind}.env") for kind in ("one", "all")}
    for kind in ("one", "all"):
        started = float(reads[kind]["started"])
        path = f"{prefix}-read-{kind}.txt"
        reads[kind]["reading"] = line_time(path, " entries of ", started)
        # The reader loading its verify log (a second of one core, hundreds of MB) is the
        # benchmark's own load, not the read: like a page cache drop, it counts in no phase.
        loaded = line_time(path, "verify log loaded", None)
        if loaded is not None:
            drops.append((started, loaded))
    intervals = [(start, stop, histogram) for start, stop, histogram in intervals
                 if not any(stop > began and start < ended + 1.0 for began, ended in drops)]
    first_interval = intervals[0][0] if intervals else float(run["writer_started"])
    bounds = {
        "before": (first_interval, float(reads["one"]["started"])),
        "one": (reads["one"]["reading"], float(reads["one"]["ended"])),
        "after_one": (float(reads["one"]["ended"]), float(reads["all"]["started"])),
        "all": (reads["all"]["reading"], float(reads["all"]["ended"])),
        "after_all": (float(reads["all"]["ended"]), intervals[-1][1] if intervals else 0),
    }
    cpu = cpu_samples(prefix + "-cpu.txt")
    phases = {}
    for name, (begin, end) in bounds.items():
        p99, count = merged_p99_ms(intervals, begin, end, overlapping=name in ("one", "all"))
        phases[name] = {"seconds": round(end - begin, 1), "writes_p99_ms": p99, "writes": count,
                        "host_cpu_busy_percent": cpu_busy_percent(cpu, begin, end)}
    control = None
    merged = HdrHistogram(1, 3600 * 1000 * 1000, 3)
    for name in ("before", "after_one", "after_all"):
        begin, end = bounds[name]
        for start, stop, histogram in intervals:
            if start >= begin and stop <= end:
                merged.add(histogram)
    if merged.get_total_count():
        control = merged.get_value_at_percentile(99) / 1000.0
    out = {"ledgers": ledgers, "writes_p99_control_ms": control, "phases": phases, "reads": {}}
    for kind in ("one", "all"):
        with open(f"{prefix}-read-{kind}.json") as handle:
            report = json.load(handle)
        env = reads[kind]
        io_before = [int(x) for x in env["io_before"].split()]
        io_after = [int(x) for x in env["io_after"].split()]
        served = report.get("count", 0) * ENTRY_PAYLOAD_BYTES
        disk_read = io_after[0] - io_before[0]
        c0, c1 = counters(env.get("counters_before", "")), counters(env.get("counters_after", ""))
        delta = {key: c1[key] - c0.get(key, 0) for key in c1}
        p99 = phases[kind]["writes_p99_ms"]
        entry = {
            "mb_per_s": report.get("mb_per_sec"),
            "entries_ok": report.get("count"),
            "entries_logged": report.get("entries_logged"),
            "errors": report.get("errors"),
            "seconds": report.get("seconds"),
            # The one-ledger read goes on into the next ledgers, one at a time, where one is
            # too small to time (BUSY_ONE_READ_MIN_MB): how many it read.
            "ledgers_read": report.get("ledgers"),
            "process_disk_read_bytes": disk_read,
            "process_disk_read_per_byte_served": disk_read / served if served else None,
            "writes_p99_ms": p99,
            "writes_p99_ratio": (p99 / control) if (p99 and control) else None,
        }
        if delta:
            entry["reads_disk_bytes"] = delta.get("read_disk_bytes")
            entry["reads_disk_per_byte_served"] = (
                delta.get("read_disk_bytes", 0) / served if served else None)
            entry["compaction_read_bytes"] = delta.get("compaction_bytes_read")
            entry["reads_paced"] = delta.get("reads_paced")
            entry["read_ahead_windows"] = delta.get("read_ahead_windows")
        out["reads"][kind] = entry
    # Write amplification of the whole run: both server processes' disk writes per payload
    # byte acked (fill, and the writes of the reads' run).
    acked = 0
    for name in ("fill.txt", "writes.txt"):
        with open(f"{prefix}-{name}") as handle:
            for line in handle:
                parts = line.split()
                if len(parts) > 2 and parts[1:3] == ["records", "sent,"]:
                    acked += int(parts[0]) * ENTRY_PAYLOAD_BYTES
    written = int(run["fill_io"].split()[1]) + int(run["end_io"].split()[1])
    out["payload_acked_bytes"] = acked
    out["disk_written_bytes"] = written
    out["write_amplification"] = written / acked if acked else None
    end = counters(run.get("end_counters", ""))
    fill = counters(run.get("fill_counters", ""))
    if end:
        journal = fill.get("journal_bytes", 0) + end.get("journal_bytes", 0)
        copies = fill.get("compaction_bytes_written", 0) + end.get("compaction_bytes_written", 0)
        out["journal_bytes"] = journal
        out["zero_ahead_bytes"] = (fill.get("zero_ahead_bytes", 0)
                                   + end.get("zero_ahead_bytes", 0))
        out["commits"] = fill.get("commits", 0) + end.get("commits", 0)
        out["sorted_copy_bytes"] = copies
        out["sorts_started"] = fill.get("sorts_started", 0) + end.get("sorts_started", 0)
    out["targets"] = targets(out, bookie)
    out["series"] = {
        "writes_p99_ms": [(start, h.get_value_at_percentile(99) / 1000.0)
                          for start, _stop, h in intervals],
        "read_mb_s": {kind: read_rate_series(f"{prefix}-read-{kind}.txt",
                                              float(reads[kind]["started"]))
                      for kind in ("one", "all")},
        "bounds": bounds,
        "origin": first_interval,
    }
    return out


def targets(out, bookie):
    one = out["reads"]["one"]
    per_byte = one.get("reads_disk_per_byte_served", one["process_disk_read_per_byte_served"])
    checks = {
        "one_ledger_mb_s": (one["mb_per_s"], TARGET_ONE_MB_S.get(out["ledgers"], 100.0), ">="),
        "one_ledger_disk_bytes_per_byte": (per_byte, TARGET_BYTES_PER_BYTE, "<="),
    }
    for kind in ("one", "all"):
        checks[f"writes_p99_ratio_{kind}"] = (
            out["reads"][kind]["writes_p99_ratio"], TARGET_P99_RATIO, "<=")
    checks["reads_intact"] = (
        sum(out["reads"][k]["errors"] or 0 for k in ("one", "all")), 0, "<=")
    result = {}
    for name, (value, target, op) in checks.items():
        met = value is not None and (value >= target if op == ">=" else value <= target)
        result[name] = {"value": value, "target": f"{op} {target}", "met": met}
    return result


def plot(results, runs):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("busy-reads: no matplotlib, no PNG (pip install matplotlib)")
        return
    figure, axes = plt.subplots(len(runs), 1, figsize=(11, 4 * len(runs)), squeeze=False)
    for axis, run in zip(axes[:, 0], runs):
        series, origin = run["series"], run["series"]["origin"]
        xs = [t - origin for t, _ in series["writes_p99_ms"]]
        axis.plot(xs, [v for _, v in series["writes_p99_ms"]], color="tab:red",
                  label="writes p99 (ms, per second)")
        axis.set_ylabel("write p99 ms")
        axis.set_yscale("log")
        right = axis.twinx()
        for kind, colour in (("one", "tab:blue"), ("all", "tab:green")):
            points = series["read_mb_s"][kind]
            right.plot([t - origin for t, _ in points], [v for _, v in points], color=colour,
                       marker=".", label=f"read {kind} ledger{'s' if kind == 'all' else ''} MB/s")
            begin, end = series["bounds"][kind]
            axis.axvspan(begin - origin, end - origin, color=colour, alpha=0.1)
        right.set_ylabel("read MB/s")
        axis.set_xlabel("seconds since the writes restarted (measured)")
        one = run["reads"]["one"]["mb_per_s"]
        axis.set_title(f"{run['ledgers']} ledgers: control p99 {run['writes_p99_control_ms']:.2f}"
                       f" ms; one ledger read at {one:.0f} MB/s (shaded: the reads)")
        lines = axis.get_legend_handles_labels()
        more = right.get_legend_handles_labels()
        axis.legend(lines[0] + more[0], lines[1] + more[1], loc="upper right", fontsize=8)
    figure.tight_layout()
    figure.savefig(os.path.join(results, "busy-reads.png"), dpi=90)


def markdown(runs, bookie):
    lines = [f"# busy-reads ({bookie})", "",
             "| ledgers | read | MB/s | disk bytes per byte served (engine / process) | "
             "write p99 during (ms) | control p99 (ms) | ratio | entries OK | paced |",
             "|---|---|---|---|---|---|---|---|---|"]
    for run in runs:
        for kind in ("one", "all"):
            r = run["reads"][kind]
            engine = r.get("reads_disk_per_byte_served")
            read = kind
            if kind == "one" and (r.get("ledgers_read") or 1) > 1:
                read = f"one ({r['ledgers_read']} in turn)"
            lines.append(
                f"| {run['ledgers']} | {read} | {fmt(r['mb_per_s'])} | {fmt(engine)} / "
                f"{fmt(r['process_disk_read_per_byte_served'])} | {fmt(r['writes_p99_ms'])} | "
                f"{fmt(run['writes_p99_control_ms'])} | {fmt(r['writes_p99_ratio'])} | "
                f"{r['entries_ok']}/{r['entries_logged']} | {r.get('reads_paced', '-')} |")
    lines.append("")
    for run in runs:
        lines.append(f"- {run['ledgers']} ledgers: write amplification "
                     f"{fmt(run['write_amplification'])} ({run['disk_written_bytes']} bytes "
                     f"written for {run['payload_acked_bytes']} acked); phases: "
                     + ", ".join(f"{k} {v['seconds']} s p99 {fmt(v['writes_p99_ms'])} ms"
                                 + (f" host CPU {v['host_cpu_busy_percent']}%"
                                    if v.get("host_cpu_busy_percent") is not None else "")
                                 for k, v in run["phases"].items()))
        missed = [k for k, v in run["targets"].items() if not v["met"]]
        lines.append(f"  targets missed: {', '.join(missed) if missed else 'none'}")
    return "\n".join(lines) + "\n"


def fmt(value):
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def main():
    results, bookie, counts = sys.argv[1], sys.argv[2], [int(x) for x in sys.argv[3:]]
    runs = [analyse(results, bookie, ledgers) for ledgers in counts]
    plot(results, runs)
    text = markdown(runs, bookie)
    with open(os.path.join(results, "busy-reads.md"), "w") as handle:
        handle.write(text)
    for run in runs:
        del run["series"]
    with open(os.path.join(results, "busy-reads.json"), "w") as handle:
        json.dump({"bookie": bookie, "runs": runs}, handle, indent=1)
    print(text)
    print(f"busy-reads: report in {results}")
    if os.environ.get("BUSY_ENFORCE") == "1" and bookie == "ringlog":
        missed = [(run["ledgers"], name) for run in runs
                  for name, v in run["targets"].items() if not v["met"]]
        if missed:
            sys.exit(f"busy-reads: targets missed: {missed}")


if __name__ == "__main__":
    main()
