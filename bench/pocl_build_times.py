#!/usr/bin/env python3
"""pocl_build_times.py - where PoCL's kernel builds took the time, from a log of PoCL's own.

Run CTest (or any program) on an empty PoCL cache with PoCL's timing log on, then read it:

    cd build && POCL_CACHE_DIR=$(mktemp -d) POCL_DEBUG=timing,llvm ctest -j2
    python3 ../bench/pocl_build_times.py Testing/Temporary/LastTest.log

PoCL logs each program's front end ("building from sources" to "Writing program.bc") and each
kernel binary's `llvm_codegen` time, which includes the work-group function's generation, after
a "Temporary kernel.so file for kernel NAME" line. Prints the totals, then per test (CTest's
"N/M Test: NAME" headers; "-" outside CTest) the programs, binaries and their seconds, then per
kernel. The suites that check their stderr fail under the logging; the times stand.
"""
import collections
import datetime
import re
import sys


def stamp(line):
    m = re.match(r"^\[(\d+-\d+-\d+ \d+:\d+:\d+)\.(\d+)\]", line)
    if not m:
        return None
    t = datetime.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S").timestamp()
    return t + float("0." + m.group(2))


def main(path):
    unit = {"ms": 1e-3, "s": 1.0, "us": 1e-6}
    test, name, last, started = "-", None, None, None
    progs = collections.defaultdict(lambda: [0, 0.0])
    bins = collections.defaultdict(lambda: [0, 0.0])
    kern = collections.defaultdict(lambda: [0, 0.0])
    for line in open(path, errors="replace"):
        m = re.match(r"^\d+/\d+ Test: (\S+)", line)
        if m:
            test, name = m.group(1), None
            continue
        t = stamp(line)
        if t is not None:
            last = t
            continue
        if "building from sources for device" in line:
            started = last
        elif "Writing program.bc" in line and started is not None:
            progs[test][0] += 1
            progs[test][1] += last - started
            started = None
        elif (m := re.search(r"Temporary kernel.so file for kernel (\S+)", line)):
            name = m.group(1)
        elif (m := re.search(r">>>\s+([\d.]+)\s+(ms|s|us)\s+API: llvm_codegen", line)):
            v = float(m.group(1)) * unit[m.group(2)]
            bins[test][0] += 1
            bins[test][1] += v
            kern[name or "(unnamed)"][0] += 1
            kern[name or "(unnamed)"][1] += v
            name = None
    if not bins and not progs:
        sys.exit(f"{path}: no PoCL timing lines (run with POCL_DEBUG=timing,llvm)")
    np_, tp = sum(v[0] for v in progs.values()), sum(v[1] for v in progs.values())
    nb, tb = sum(v[0] for v in bins.values()), sum(v[1] for v in bins.values())
    print(f"programs {np_} ({tp:.0f} s of front end); kernel binaries {nb} ({tb:.0f} s)")
    print(f"\n{'test':36s} {'programs':>8s} {'s':>6s} {'binaries':>8s} {'s':>6s}")
    for t in sorted(set(progs) | set(bins), key=lambda t: -(progs[t][1] + bins[t][1])):
        print(f"{t:36s} {progs[t][0]:8d} {progs[t][1]:6.0f} {bins[t][0]:8d} {bins[t][1]:6.0f}")
    print(f"\n{'kernel':36s} {'binaries':>8s} {'s':>6s} {'mean s':>7s}")
    for k, v in sorted(kern.items(), key=lambda kv: -kv[1][1]):
        print(f"{k:36s} {v[0]:8d} {v[1]:6.0f} {v[1] / v[0]:7.2f}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: pocl_build_times.py LOG (PoCL's POCL_DEBUG=timing,llvm output)")
    main(sys.argv[1])
