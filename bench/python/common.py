"""What the Python benches share: the C bench's shapes (bench/ops.c), medians of timed runs,
the --shape parser and CSV output."""
import argparse
import csv
import gc
import statistics
import time

# bench/ops.c: rows_shapes (transformers, latency, tall-thin, wide, odd) and groups_shapes
# (diffusion UNet N 1 and 8 x C 320/640/1280 x 64x64/32x32/16x16, G 32; ResNet-50 stage).
ROWS_SHAPES = [(8192, 768), (8192, 1024), (4096, 4096), (2048, 12288), (1, 768), (32, 4096),
               (262144, 64), (16, 1048576), (1000, 1000), (257, 768)]
GROUP_SHAPES = [(n, c, hw, hw) for n in (1, 8) for c in (320, 640, 1280) for hw in (64, 32, 16)]
GROUP_SHAPES.append((32, 256, 56, 56))
QUICK_ROWS = [(1, 768), (257, 768), (1000, 1000), (8192, 768)]
QUICK_GROUPS = [(2, 320, 16, 16)]


def parse_shape(text):
    """A --shape argument: RxC (the row ops) or NxCxHxW (the group ops), as a tuple."""
    try:
        dims = tuple(int(d) for d in text.lower().split("x"))
    except ValueError:
        dims = ()
    if len(dims) not in (2, 4) or any(d < 1 for d in dims):
        raise argparse.ArgumentTypeError("%r is not RxC or NxCxHxW (positive sizes)" % text)
    return dims


def median_us(fn, reps, warmup=3, budget_s=None):
    """Median wall time of fn() in microseconds, after warm-up calls; stops early once
    budget_s seconds are spent (at least 5 reps)."""
    for _ in range(warmup):
        fn()
    gc.disable()  # a collection inside one rep would be charged to whichever ran then
    try:
        times = []
        start = time.perf_counter()
        for i in range(reps):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
            if budget_s is not None and i >= 4 and time.perf_counter() - start > budget_s:
                break
    finally:
        gc.enable()
    return statistics.median(times) * 1e6


def interleaved_us(fns, reps, warmup=3):
    """Medians (us) of several functions timed in turn, call by call, so that a shared
    machine's load changes hit all of them alike."""
    for fn in fns:
        for _ in range(warmup):
            fn()
    times = [[] for _ in fns]
    gc.disable()
    try:
        for _ in range(reps):
            for t, fn in zip(times, fns):
                t0 = time.perf_counter()
                fn()
                t.append(time.perf_counter() - t0)
    finally:
        gc.enable()
    return [statistics.median(t) * 1e6 for t in times]


def write_csv(path, header, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
