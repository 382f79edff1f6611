"""clnorm through its Python package against PyTorch's CPU kernels, at the C bench's shapes.

Both take and return torch CPU float32 tensors, in the same process, on the same inputs:
  layer      clnorm.layer_norm           vs F.layer_norm
  rms        clnorm.rms_norm             vs F.rms_norm where torch has it, else
                                            x * rsqrt(mean(x^2) + eps) * w (torch 1.13)
  add-layer  layer_norm(residual=, return_sum=True)   vs s = x + r; F.layer_norm(s)
  add-rms    rms_norm(residual=, return_sum=True)     vs s = x + r; the rms above
  group      clnorm.group_norm           vs F.group_norm, NCHW and channels_last (NHWC)
  group-silu group_norm(silu=True)       vs F.silu(F.group_norm(...)), both layouts (a
                                            diffusion UNet resnet block's pair)
GB/s counts the bytes the op must move, as clnorm-bench does (x read and y written; the fused
add also reads the residual and writes the sum; parameters). Each output is compared with
torch's first (max abs difference in the CSV).

    python3 bench/python/bench_torch.py --csv out.csv --svg out.svg [--quick] [--ops layer,rms]
        [--shape 2x320x8x8 --shape 1x768 ...]

--shape (repeatable) runs the ops on these shapes instead of their tables: NxCxHxW for the
group ops (G = 32, as the tables), RxC for the row ops; each op takes the shapes of its kind.
"""
import argparse
import os
import sys

import torch
import torch.nn.functional as F

import clnorm

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import GROUP_SHAPES, QUICK_GROUPS, QUICK_ROWS, ROWS_SHAPES, interleaved_us, \
    parse_shape, write_csv  # noqa: E402
from svgplot import bar_chart  # noqa: E402

EPS = 1e-5


def torch_rms(x, w):
    if hasattr(F, "rms_norm"):
        return F.rms_norm(x, (x.shape[-1],), w, EPS)
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS) * w


def row_case(op, rows, cols):
    g = torch.Generator().manual_seed(rows * 31 + cols)
    x = torch.randn(rows, cols, generator=g)
    r = torch.randn(rows, cols, generator=g)
    w = 1 + 0.1 * torch.randn(cols, generator=g)
    b = 0.1 * torch.randn(cols, generator=g)
    n = rows * cols * 4
    if op == "layer":
        return (lambda: F.layer_norm(x, (cols,), w, b, EPS),
                lambda: clnorm.layer_norm(x, (cols,), w, b, EPS), 2 * n + 2 * cols * 4)
    if op == "rms":
        return (lambda: torch_rms(x, w), lambda: clnorm.rms_norm(x, (cols,), w, EPS),
                2 * n + cols * 4)
    if op == "add-layer":
        def ref():
            s = x + r
            return F.layer_norm(s, (cols,), w, b, EPS), s
        return (ref, lambda: clnorm.layer_norm(x, (cols,), w, b, EPS, residual=r,
                                               return_sum=True), 4 * n + 2 * cols * 4)
    if op == "add-rms":
        def ref():
            s = x + r
            return torch_rms(s, w), s
        return (ref, lambda: clnorm.rms_norm(x, (cols,), w, EPS, residual=r, return_sum=True),
                4 * n + cols * 4)
    raise ValueError(op)


def group_case(shape, layout, groups=32, silu=False):
    n, c, h, w_ = shape
    g = torch.Generator().manual_seed(n * c + h)
    x = torch.randn(shape, generator=g)
    if layout == "nhwc":
        x = x.contiguous(memory_format=torch.channels_last)
    w = 1 + 0.1 * torch.randn(c, generator=g)
    b = 0.1 * torch.randn(c, generator=g)
    nbytes = 2 * x.numel() * 4 + 2 * c * 4
    if silu:
        return (lambda: F.silu(F.group_norm(x, groups, w, b, EPS)),
                lambda: clnorm.group_norm(x, groups, w, b, EPS, silu=True), nbytes)
    return (lambda: F.group_norm(x, groups, w, b, EPS),
            lambda: clnorm.group_norm(x, groups, w, b, EPS), nbytes)


def max_diff(a, b):
    if isinstance(a, tuple):
        return max(max_diff(p, q) for p, q in zip(a, b))
    return (a.double() - b.double()).abs().max().item()


def measure(ref, ours, budget_s):
    # a first call of each (plans, PoCL kernels, torch's allocator) before timing
    diff = max_diff(ref(), ours())
    t_ref, t_ours = interleaved_us([ref, ours], 2)
    reps = int(max(5, min(300, budget_s * 1e6 / (t_ref + t_ours))))
    t_ref, t_ours = interleaved_us([ref, ours], reps, warmup=1)
    return t_ref, t_ours, diff


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ops", default="layer,rms,add-layer,add-rms,group,group-silu")
    ap.add_argument("--quick", action="store_true", help="a few small shapes")
    ap.add_argument("--budget", type=float, default=1.5, help="seconds per shape (default 1.5)")
    ap.add_argument("--shape", action="append", default=[], type=parse_shape,
                    help="a shape to run instead of the tables (repeatable): NxCxHxW for the "
                         "group ops, RxC for the row ops")
    ap.add_argument("--csv", default=None)
    ap.add_argument("--svg", default=None)
    args = ap.parse_args()

    ctx = clnorm.current_context()
    print("clnorm on %s (%s); torch %s with %d threads" % (ctx.device_name, ctx.backend,
                                                           torch.__version__,
                                                           torch.get_num_threads()))
    print("%-10s %-16s %-6s %12s %12s %9s %9s %8s %9s" % (
        "op", "shape", "layout", "torch us", "clnorm us", "torch GB/s", "clnorm GB/s",
        "speedup", "max diff"))
    rows_out = []
    for op in args.ops.split(","):
        group = op in ("group", "group-silu")
        if args.shape:
            table = [s for s in args.shape if (len(s) == 4) == group]
        elif group:
            table = QUICK_GROUPS if args.quick else GROUP_SHAPES
        else:
            table = QUICK_ROWS if args.quick else ROWS_SHAPES
        cases = [(s, lay) for s in table for lay in (("nchw", "nhwc") if group else ("",))]
        for shape, layout in cases:
            if op in ("group", "group-silu"):
                ref, ours, nbytes = group_case(shape, layout, silu=op == "group-silu")
            else:
                ref, ours, nbytes = row_case(op, *shape)
            t_ref, t_ours, diff = measure(ref, ours, args.budget)
            label = "x".join(str(d) for d in shape)
            gb_ref, gb_ours = nbytes / t_ref / 1e3, nbytes / t_ours / 1e3
            print("%-10s %-16s %-6s %12.1f %12.1f %9.2f %9.2f %8.2f %9.2g" % (
                op, label, layout, t_ref, t_ours, gb_ref, gb_ours, t_ref / t_ours, diff),
                flush=True)
            rows_out.append([op, "float32", label, layout, "%.1f" % t_ref, "%.1f" % t_ours,
                             "%.3f" % gb_ref, "%.3f" % gb_ours, "%.3f" % (t_ref / t_ours),
                             "%.3g" % diff])
    if args.csv:
        write_csv(args.csv, ["op", "dtype", "shape", "layout", "torch_us", "clnorm_us",
                             "torch_gbps", "clnorm_gbps", "speedup", "max_abs_diff"], rows_out)
    if args.svg:
        labels = ["%s %s%s" % (r[0], r[2], " " + r[3] if r[3] else "") for r in rows_out]
        bar_chart(args.svg, "clnorm (Python, PoCL) vs PyTorch CPU %s, float32: GB/s"
                  % torch.__version__, labels,
                  [("clnorm", [float(r[7]) for r in rows_out]),
                   ("torch", [float(r[6]) for r in rows_out])], "GB/s")


if __name__ == "__main__":
    main()
