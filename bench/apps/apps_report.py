#!/usr/bin/env python3
"""Merges the programs' clnorm-time lines and torch_apps.py's rows into one CSV and prints a
markdown table. Standard library only (any python3); bench/apps/run.sh calls it.

    apps_report.py --out CSV [--torch TORCH_CSV] LOG...

Each LOG is a program's output; every line starting with "clnorm-time " in it becomes a row.
Such a line is space-separated key=value pairs, values optionally double-quoted (device="...");
the keys the CSV has columns for are taken by name, the shape from the size keys in the order
the line gives them, and any other key is kept in the extra column, so a program that adds
keys loses nothing and breaks nothing. The torch rows are copied as torch_apps.py wrote them.
"""
import argparse
import csv
import shlex
import sys

COLUMNS = ("source", "app", "variant", "fused", "shape", "runs", "threads", "total_ms", "norm_ms",
           "norm_share", "per_step_us", "device", "extra")
SIZE_KEYS = ("T", "B", "I", "H", "d", "heads", "f", "k")
PREFIX = "clnorm-time "


def parse_time_line(line):
    """The row of one clnorm-time line; raises ValueError on a token that is not key=value."""
    pairs = []
    for token in shlex.split(line[len(PREFIX):]):
        key, eq, value = token.partition("=")
        if not eq or not key:
            raise ValueError("not key=value: %r" % token)
        pairs.append((key, value))
    kv = dict(pairs)
    row = {c: "" for c in COLUMNS}
    row["source"] = "clnorm"
    for c in ("app", "variant", "fused", "runs", "threads", "total_ms", "norm_ms", "norm_share",
              "per_step_us", "device"):
        row[c] = kv.get(c, "")
    row["variant"] = row["variant"] or "-"
    row["shape"] = " ".join("%s=%s" % (k, v) for k, v in pairs if k in SIZE_KEYS)
    row["extra"] = " ".join("%s=%s" % (k, v) for k, v in pairs
                            if k not in SIZE_KEYS and k not in row)
    if not row["app"] or not row["total_ms"]:
        raise ValueError("no app= or total_ms=")
    return row


def read_logs(paths):
    rows = []
    for path in paths:
        with open(path, errors="replace") as f:
            for n, line in enumerate(f, 1):
                if line.startswith(PREFIX):
                    try:
                        rows.append(parse_time_line(line.strip()))
                    except ValueError as e:
                        print("apps_report: %s:%d: unreadable clnorm-time line (%s)" % (path, n, e),
                              file=sys.stderr)
    return rows


def num(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def fmt_ms(v):
    return "%.1f" % v if v is not None else "-"


def fmt_share(v):
    return "%.1f%%" % (100 * v) if v is not None else "-"


def precision(row):
    """The precision= key of a program's line (kept in extra), "-" without one."""
    for pair in (row["extra"].split() if row else []):
        if pair.startswith("precision="):
            return pair[len("precision="):]
    return "-"


def table(rows):
    """One markdown row per (app, variant, precision) the programs timed, each beside torch's
    rows of that (app, variant): torch computes in float32 whatever precision the program
    used."""
    clnorm = [r for r in rows if r["source"] == "clnorm"]
    torch_rows = [r for r in rows if r["source"].startswith("torch")]
    keys = []
    for r in clnorm:
        if (r["app"], r["variant"], precision(r)) not in keys:
            keys.append((r["app"], r["variant"], precision(r)))
    for r in torch_rows:
        if not any(k[:2] == (r["app"], r["variant"]) for k in keys):
            keys.append((r["app"], r["variant"], "-"))
    out = ["| app | variant | shape | clnorm precision | clnorm ms (fused) | clnorm ms (unfused) "
           "| torch ms (F.linear) | torch ms (oneDNN) | torch/clnorm (F.linear / oneDNN) | norm "
           "share clnorm fused / unfused | norm share torch (F.linear / oneDNN) |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    notes = []
    for app, variant, prec in keys:
        mine = [r for r in clnorm if (r["app"], r["variant"], precision(r)) == (app, variant, prec)]
        fused = next((r for r in mine if r["fused"] != "0"), None)
        unfused = next((r for r in mine if r["fused"] == "0"), None)
        tb = next((r for r in torch_rows if (r["app"], r["variant"], r["source"])
                   == (app, variant, "torch")), None)
        to = next((r for r in torch_rows if (r["app"], r["variant"], r["source"])
                   == (app, variant, "torch-onednn")), None)
        get = lambda r, c: num(r[c]) if r else None  # noqa: E731
        base = get(fused, "total_ms")

        def ratio(t):
            v = get(t, "total_ms")
            return "%.2f" % (v / base) if v is not None and base else "-"

        shape = (fused or unfused or tb or to)["shape"]
        for r in (unfused, tb, to):
            if r and set(r["shape"].split()) != set(shape.split()):
                notes.append("%s %s: %s timed %s, not %s" % (app, variant, r["source"],
                                                             r["shape"], shape))
        out.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s / %s | %s / %s | %s / %s |" % (
            app, variant, shape, precision(fused or unfused), fmt_ms(base),
            fmt_ms(get(unfused, "total_ms")),
            fmt_ms(get(tb, "total_ms")), fmt_ms(get(to, "total_ms")), ratio(tb), ratio(to),
            fmt_share(get(fused, "norm_share")), fmt_share(get(unfused, "norm_share")),
            fmt_share(get(tb, "norm_share")), fmt_share(get(to, "norm_share"))))
    if notes:
        out += [""] + ["Note: " + n for n in notes]
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="the merged CSV")
    ap.add_argument("--torch", help="torch_apps.py's CSV")
    ap.add_argument("logs", nargs="*")
    a = ap.parse_args()
    rows = read_logs(a.logs)
    if a.torch:
        with open(a.torch, newline="") as f:
            for r in csv.DictReader(f):
                rows.append({c: r.get(c) or "" for c in COLUMNS})
    if not rows:
        print("apps_report: no clnorm-time lines and no torch rows", file=sys.stderr)
        return 1
    with open(a.out, "w", newline="") as f:
        w = csv.DictWriter(f, COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
