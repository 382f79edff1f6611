"""What the memoized repeated call (functional's shortcut) saves: clnorm.group_norm and
clnorm.layer_norm on torch CPU float32 tensors, each timed with the shortcut and with it
turned off (every call on the general path), beside torch's own function, interleaved call
by call in one process on one context (the same host pool and plans), each clnorm call
right after a torch call, medians in us.

    python3 bench/python/shortcut.py [--reps N] [--csv out.csv] [--shape 1x320x8x8 ...]
        [--silu] [--channels-last]

Shapes: NxCxHxW runs group_norm (G = 32, NCHW; with --channels-last on torch.channels_last
tensors; with --silu its fused SiLU against F.silu(F.group_norm)); RxC runs layer_norm. Default: small UNet GroupNorms and one 1x768 row.
"""
import argparse
import os
import sys

import torch
import torch.nn.functional as F

import clnorm
from clnorm import functional as cf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import interleaved_us, parse_shape, write_csv  # noqa: E402

DEFAULT = ["1x64x4x4", "1x320x8x8", "2x320x8x8", "1x640x16x16", "1x768"]


def case(shape, silu, channels_last):
    g = torch.Generator().manual_seed(sum(shape))
    x = torch.randn(shape, generator=g)
    if channels_last and len(shape) == 4:
        x = x.contiguous(memory_format=torch.channels_last)
    c = shape[1]
    w = 1 + 0.1 * torch.randn(c, generator=g)
    b = 0.1 * torch.randn(c, generator=g)
    if len(shape) == 2:
        return (lambda: F.layer_norm(x, (c,), w, b),
                lambda: clnorm.layer_norm(x, (c,), w, b))
    if silu:
        return (lambda: F.silu(F.group_norm(x, 32, w, b)),
                lambda: clnorm.group_norm(x, 32, w, b, silu=True))
    return lambda: F.group_norm(x, 32, w, b), lambda: clnorm.group_norm(x, 32, w, b)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shape", action="append", type=parse_shape, default=[])
    ap.add_argument("--silu", action="store_true", help="group_norm with its fused SiLU")
    ap.add_argument("--channels-last", action="store_true",
                    help="group_norm on torch.channels_last tensors (NHWC in memory)")
    ap.add_argument("--reps", type=int, default=3000)
    ap.add_argument("--csv", default=None)
    args = ap.parse_args()
    shapes = args.shape or [parse_shape(s) for s in DEFAULT]
    signature = cf._fast_signature

    def general(fn):
        def run():
            cf._fast_signature = lambda *a: None  # no signature: the general path, every call
            try:
                return fn()
            finally:
                cf._fast_signature = signature
        return run

    print("clnorm on %s; torch %s with %d threads; medians of %d interleaved calls (us)"
          % (clnorm.current_context().device_name, torch.__version__, torch.get_num_threads(),
             args.reps))
    print("%-14s %10s %12s %12s %9s" % ("shape", "torch", "general", "shortcut", "saved"))
    rows = []
    for shape in shapes:
        ref, ours = case(shape, args.silu, args.channels_last)
        # torch before each clnorm call, so that both find the machine as torch leaves it
        # (after a long torch call the host pool's workers have stopped spinning and sleep)
        t_ref, t_general, _, t_fast = interleaved_us([ref, general(ours), ref, ours],
                                                     args.reps)
        label = "x".join(str(d) for d in shape)
        print("%-14s %10.1f %12.1f %12.1f %9.1f" % (label, t_ref, t_general, t_fast,
                                                  t_general - t_fast), flush=True)
        group = len(shape) == 4
        rows.append([label, "group-silu" if args.silu and group else
                     ("group" if group else "layer"),
                     ("nhwc" if args.channels_last else "nchw") if group else "",
                     "%.1f" % t_ref, "%.1f" % t_general, "%.1f" % t_fast])
    if args.csv:
        write_csv(args.csv, ["shape", "op", "layout", "torch_us", "general_us",
                             "shortcut_us"], rows)


if __name__ == "__main__":
    main()
