#!/usr/bin/env python3
"""bench-table: the GPU benchmark table of BENCHMARKS.md from one run.

    python3 tools/gpu/bench-table.py BENCH.log TORCH-BENCH.log

BENCH.log is the output of the engine's GPU benchmarks (go test -bench GPU,
several counts), TORCH-BENCH.log that of tools/gpu/torch-bench.py from the
same run. Prints the medians and the ratios against their targets as a
Markdown table.
"""
import re
import statistics
import sys


def medians(path):
    runs = {}
    for line in open(path):
        m = re.match(r"(Benchmark\w+)-\d+\s+\d+\s+([\d.]+) ns/op", line)
        if m:
            runs.setdefault(m.group(1), []).append(float(m.group(2)))
    return {k: statistics.median(v) for k, v in runs.items()}


def torch_us(path):
    out = {}
    for line in open(path):
        m = re.match(r"torch (.+?): ([\d.]+) us", line)
        if m:
            out[m.group(1)] = float(m.group(2))
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    b = medians(sys.argv[1])
    t = torch_us(sys.argv[2])
    need = ["BenchmarkGPUReplay", "BenchmarkGPUBareLaunch", "BenchmarkGPUStep", "BenchmarkGPUBareTwoLaunches"]
    missing = [n for n in need if n not in b]
    if missing:
        sys.exit("bench-table: %s: no figures for %s" % (sys.argv[1], ", ".join(missing)))
    rows = [
        ("engine replay / bare cuGraphLaunch", b["BenchmarkGPUReplay"] / b["BenchmarkGPUBareLaunch"], "x", "at most 1.5x",
         "%.0f / %.0f ns" % (b["BenchmarkGPUReplay"], b["BenchmarkGPUBareLaunch"])),
        ("engine foo->fee step / two bare launches", b["BenchmarkGPUStep"] / b["BenchmarkGPUBareTwoLaunches"], "x", "at most 2x",
         "%.0f / %.0f ns" % (b["BenchmarkGPUStep"], b["BenchmarkGPUBareTwoLaunches"])),
    ]
    for key, bench in (("replay 1-in/1-out (mark_step + compiled call)", "BenchmarkGPUReplay"), ("foo->fee step", "BenchmarkGPUStep")):
        if key in t:
            rows.append(("PyTorch %s / engine" % key, t[key] * 1000 / b[bench], "x faster", "10x",
                         "%.1f us / %.2f us" % (t[key], b[bench] / 1000)))
    print("| ratio (one run) | figure | medians | target |")
    print("| --- | --- | --- | --- |")
    for name, ratio, unit, target, detail in rows:
        print("| %s | %.2f%s | %s | %s |" % (name, ratio, unit, detail, target))


if __name__ == "__main__":
    main()
