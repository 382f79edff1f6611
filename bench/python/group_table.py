"""clnorm-bench's group ops beside torch's (bench/python/torch_group.py), as Markdown tables
for bench/RESULTS.md: one table per op, a row per shape and layout.

Columns: the device copy's time; for each clnorm contender in the bench CSV (clnorm_auto, and
clnorm_split, clnorm_workgroup, ... where the run had them) its time and its fraction of the
device copy (the bench's frac_of_copy: its GB/s over the copy's, each on its own bytes); for the forward `group` op, whether clnorm_auto meets issue #10's targets (NCHW
at least 0.90 of the copy, NHWC at least 0.80); where a torch CSV has the same op, shape and
layout, torch's time and torch / clnorm_auto (above 1: clnorm is faster). A summary line per
table counts the targets met and gives the range and median of torch / clnorm_auto.

    python3 bench/python/group_table.py BENCH.csv [BENCH2.csv ...] [--torch TORCH.csv]
        [--out TABLE.md]

Several bench CSVs may be given (the main run and group_nhwc_ab.sh's): a later file's row for
the same op, shape, layout and contender replaces an earlier one's. Only the csv module is
used, so it runs where torch is not installed. Exit status 0, 2 for a file that cannot be read
or has none of clnorm-bench's columns.
"""
import argparse
import csv
import statistics
import sys

TARGETS = {"nchw": 0.90, "nhwc": 0.80}  # issue #10: the forward's fraction of the copy
NEEDED = ("op", "dtype", "rows", "cols", "impl", "median_us", "spatial", "groups", "layout")


def fail(msg):
    print("group_table.py: " + msg, file=sys.stderr)
    sys.exit(2)


def read(path):
    """The rows of a CSV with clnorm-bench's columns, as dicts; exit 2 otherwise."""
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        fail("%s: %s" % (path, e.strerror or e))
    if not rows or any(k not in rows[0] for k in NEEDED):
        fail("%s: no rows with clnorm-bench's columns (%s)" % (
            path, ",".join(NEEDED)))
    return rows


def key(r):
    """(op, dtype, shape label, layout) of a row."""
    shape = "%sx%s" % (r["rows"], r["cols"]) + ("x" + r["spatial"] if r["spatial"] else "")
    return r["op"], r["dtype"], "%s:%s" % (shape, r["groups"]), r["layout"]


def fmt_us(v):
    return "%.1f" % v if v is not None else "-"


def tables(bench_rows, torch_rows):
    cases = {}  # key -> {impl: us}, in the order the bench ran them
    for r in bench_rows:
        if not r["op"].startswith("group") or not r["layout"]:
            continue
        try:
            us = float(r["median_us"])
            frac = float(r.get("frac_of_copy") or -1)
        except ValueError:
            continue
        cases.setdefault(key(r), {})[r["impl"]] = (us if us > 0 else None,
                                                   frac if frac >= 0 else None)
    torch_us = {}
    for r in torch_rows:
        if r["impl"] == "torch":
            try:
                torch_us[key(r)] = float(r["median_us"])
            except ValueError:
                pass
    out = []
    for op, dtype in dict.fromkeys((k[0], k[1]) for k in cases):
        keys = [k for k in cases if k[:2] == (op, dtype)]
        impls = [i for i in dict.fromkeys(i for k in keys for i in cases[k])
                 if i.startswith("clnorm_")]
        has_torch = any(k in torch_us for k in keys)
        forward = op == "group"
        head = ["shape", "layout", "copy us"]
        for i in impls:
            head += ["%s us" % i, "%s / copy" % i]
        if forward:
            head.append("target")
        if has_torch:
            head += ["torch us", "torch / clnorm_auto"]
        out.append("### %s, %s" % (op, dtype))
        out.append("")
        out.append("| " + " | ".join(head) + " |")
        out.append("|" + "|".join("---" if h in ("shape", "layout", "target") else "---:"
                                  for h in head) + "|")
        met = judged = 0
        ratios = []
        for k in keys:
            c = cases[k]
            cells = [k[2], k[3], fmt_us(c.get("copy_device", (None,))[0])]
            for i in impls:
                us, frac = c.get(i, (None, None))
                cells += [fmt_us(us), "%.2f" % frac if frac is not None else "-"]
            auto, auto_frac = c.get("clnorm_auto", (None, None))
            if forward:
                if auto_frac is not None:
                    judged += 1
                    ok = auto_frac >= TARGETS[k[3]]
                    met += ok
                    cells.append("met" if ok else "not met")
                else:
                    cells.append("-")
            if has_torch:
                t = torch_us.get(k)
                cells.append(fmt_us(t))
                if t and auto:
                    ratios.append(t / auto)
                    cells.append("%.2f" % (t / auto))
                else:
                    cells.append("-")
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
        notes = []
        if forward:
            notes.append("targets (NCHW >= 0.90, NHWC >= 0.80 of the copy) met on %d of %d" % (
                met, judged))
        if ratios:
            notes.append("torch / clnorm_auto %.2f-%.2f, median %.2f (%d of %d at 1.0 or more)"
                         % (min(ratios), max(ratios), statistics.median(ratios),
                            sum(r >= 1.0 for r in ratios), len(ratios)))
        if notes:
            out.append("%s: %s." % (op, "; ".join(notes)))
            out.append("")
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("bench", nargs="+", help="clnorm-bench CSVs (--csv) with group ops")
    ap.add_argument("--torch", help="bench/python/torch_group.py's CSV")
    ap.add_argument("--out", help="write the tables here too")
    a = ap.parse_args(argv)
    bench_rows = [r for p in a.bench for r in read(p)]
    text = tables(bench_rows, read(a.torch) if a.torch else [])
    if not text:
        fail("no group op with a layout in %s" % ", ".join(a.bench))
    print(text)
    if a.out:
        try:
            with open(a.out, "w") as f:
                f.write(text + "\n")
        except OSError as e:
            fail("%s: %s" % (a.out, e.strerror or e))
    return 0


if __name__ == "__main__":
    sys.exit(main())
