#!/usr/bin/env python3
"""What a 512-byte commit block costs a disk: O_DIRECT|O_DSYNC write latency of aligned 4 KiB
writes against 1 KiB writes that start 512 bytes into a 4 KiB sector, as commits do with
`--commit-block-bytes 512`, alternating, one in flight, on blocks written once before (as
zero-ahead leaves them). A disk that emulates 512-byte blocks by read-modify-write shows it
here as a higher latency for the partial writes.

Usage: scripts/commit_block_probe.py FILE [WRITES]   (FILE on the data disk; 64 MiB, removed)
"""
import mmap
import os
import sys
import time

SIZE = 64 << 20


def main():
    path = sys.argv[1]
    writes = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_DIRECT | os.O_DSYNC, 0o644)
    try:
        os.posix_fallocate(fd, 0, SIZE)
        zeros = mmap.mmap(-1, 1 << 20)
        for offset in range(0, SIZE, 1 << 20):
            os.pwritev(fd, [zeros], offset)
        data = mmap.mmap(-1, 4096)
        data.write(b"r" * 4096)
        latency_us = {"sector": [], "partial": []}
        position = 0
        for _ in range(writes):
            for kind in ("sector", "partial"):
                if kind == "sector":
                    view, offset = memoryview(data)[:4096], (position // 4096 + 1) * 4096
                else:
                    view, offset = memoryview(data)[:1024], position + 512
                start = time.perf_counter_ns()
                os.pwritev(fd, [view], offset)
                latency_us[kind].append((time.perf_counter_ns() - start) / 1000)
                position = offset + len(view)
            if position > SIZE - (1 << 20):
                position = 0
        for kind, values in latency_us.items():
            values.sort()
            pick = lambda q: values[min(len(values) - 1, int(len(values) * q))]
            print(f"{kind:8} p50 {pick(0.5):.0f} us  p90 {pick(0.9):.0f} us  "
                  f"p99 {pick(0.99):.0f} us  ({len(values)} writes)")
    finally:
        os.close(fd)
        os.unlink(path)


if __name__ == "__main__":
    main()
