#!/usr/bin/python3
"""LayerNorm's (and GroupNorm's) parameter gradients of tall batches through the clnorm CLI,
against torch.

dgamma and dbeta are sums over every row, and where a column's sum is small against its
terms the bound 1e-5 + 1e-5 |ref| (torch_group_sweep.py's comparison, issue #10's check) asks
more of them than of dx. Rows of N(0, 1) data, dy N(0, 1), gamma 1 + N(0, 1), beta N(0, 1):
`clnorm grad` against torch's float64 `layer_norm` autograd, each output's largest error as
a fraction of that bound, and torch's own float32 autograd on the same data for scale. Shapes
from 1024x768 (a BERT-base batch of 8 x 128 tokens) to 65536x16, two seeds each; the CLI
runs whatever path it plans (the host loop up to 1 MiB of x, the kernels above:
CLNORM_HOST_BYTES=0 for the kernels alone, CLNORM_HOST_BACKWARD_BYTES=1099511627776 for
the host loop alone). A shape NxCxHxW:G is GroupNorm through `clnorm grad --groups G` in
--layout (nchw or nhwc), against torch's `group_norm`. With --saved-stats, `clnorm grad`
takes the float32 mean and rstd `clnorm run` saved instead of recomputing them.

    /usr/bin/python3 tests/torch_layer_params.py --clnorm build/host/clnorm
    /usr/bin/python3 tests/torch_layer_params.py --shapes 32x256x56x56:32 --layout nhwc
    /usr/bin/python3 tests/torch_layer_params.py --shapes 8x320x32x32:32 --silu

Float32 partials of up to 256 rows (kernels) or 32 rows (host loop) had dgamma and dbeta at
1.0-4.7x the bound on 1024x768 to 16384x256; in double, 0.005x for dbeta and up to 0.86x for
dgamma, whose terms keep xhat's float32 rounding (bench/RESULTS.md, "The row backward's
parameter partials in double").

Exit status: 0 when every case agrees, 1 when one differs or the CLI fails, 2 without the
CLI, 77 without numpy and torch.
"""
import argparse
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import numpy as np
    import torch
    import torch_group_sweep as sweep
except ImportError as e:  # pragma: no cover - depends on the machine
    print(f"torch_layer_params.py: skipped, {e}", file=sys.stderr)
    sys.exit(77)

SHAPES = "1024x768 2048x512 4096x256 8192x64 16384x256 65536x16 512x4096 4096x1024"


def one_case(args, work, seed, shape, groups):
    """One case through the CLI against torch: (what, messages, ratios, torch f32 ratios).
    shape (R, K): LayerNorm rows; (N, C, H, W) with groups: GroupNorm in args.layout."""
    f = lambda name: os.path.join(work, name + ".npy")
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32)
    dy = rng.standard_normal(shape).astype(np.float32)
    K = shape[-1] if not groups else shape[1]
    g = (1 + rng.standard_normal(K)).astype(np.float32)
    b = rng.standard_normal(K).astype(np.float32)
    nhwc = groups and args.layout == "nhwc"
    stored = (lambda a: np.ascontiguousarray(np.moveaxis(a, 1, -1))) if nhwc else (lambda a: a)
    for name, a in dict(x=stored(x), dy=stored(dy), g=g, b=b).items():
        np.save(f(name), a)
    outs = dict(dx="--grad-input", dg="--grad-gamma", db="--grad-beta")
    cmd = [args.clnorm, "grad", "--grad-output", f("dy"), "--input", f("x"), "--gamma", f("g"),
           "--beta", f("b")] + (["--device", args.device] if args.device else [])
    what = f"seed {seed} {'x'.join(map(str, shape))}" + (
        f":{groups} {args.layout}{' silu' if args.silu else ''}" if groups else "") + (
        " saved" if args.saved_stats else "")
    norm = (["--groups", str(groups), "--layout", args.layout] + (["--silu"] if args.silu else [])
            if groups else [])
    cmd += norm + [a for k, o in outs.items() for a in (o, f(k))]
    if args.saved_stats:
        # the statistics a forward saved (float32 files), as a training step's backward takes
        saved = ["--mean", f("mean"), "--rstd", f("rstd")]
        fwd = [args.clnorm, "run", "--input", f("x"), "--gamma", f("g"), "--beta", f("b"),
               "--output", f("y")] + saved + norm + (
                   ["--device", args.device] if args.device else [])
        run = subprocess.run(fwd, capture_output=True, text=True)
        if run.returncode != 0:
            return what, ["clnorm run: " + run.stderr.strip()], {}, {}
        cmd += saved
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        return what, [run.stderr.strip()], {}, {}
    t = lambda a, dt: torch.tensor(a, dtype=dt, requires_grad=True)
    ref, f32 = {}, {}
    for dt, into in ((torch.float64, ref), (torch.float32, f32)):
        xt, gt, bt = t(x, dt), t(g, dt), t(b, dt)
        if groups:
            y = torch.nn.functional.group_norm(xt, groups, gt, bt, 1e-5)
            if args.silu:
                y = torch.nn.functional.silu(y)
        else:
            y = torch.nn.functional.layer_norm(xt, (K,), gt, bt, 1e-5)
        y.backward(torch.tensor(dy, dtype=dt))
        into.update(dx=stored(xt.grad.numpy()), dg=gt.grad.numpy(), db=bt.grad.numpy())
    ratios, msgs = sweep.compare({"x": x}, {k: np.load(f(k)) for k in outs}, ref)
    torch_ratios, _ = sweep.compare({"x": x}, f32, ref)
    return what, msgs, ratios, torch_ratios


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sweep.common_arguments(ap, 0)
    ap.add_argument("--shapes", default=SHAPES,
                    help="RxC or NxCxHxW:G ... (default: %(default)s)")
    ap.add_argument("--layout", choices=("nchw", "nhwc"), default="nchw",
                    help="GroupNorm shapes' layout")
    ap.add_argument("--seeds", type=int, default=2, help="seeds per shape, from --seed")
    ap.add_argument("--silu", action="store_true", help="GroupNorm shapes through the SiLU")
    ap.add_argument("--saved-stats", action="store_true",
                    help="grad takes the mean and rstd `clnorm run` saved (float32 files)")
    args = ap.parse_args()
    try:
        shapes = []
        for s in args.shapes.split():
            dims, _, g = s.partition(":")
            shape, groups = tuple(int(v) for v in dims.split("x")), int(g) if g else 0
            if (len(shape) != (4 if groups else 2) or min(shape) < 1 or groups < 0 or
                    (groups and shape[1] % groups)):
                raise ValueError
            shapes.append((shape, groups))
        if not shapes:
            raise ValueError
    except ValueError:
        print(f"torch_layer_params.py: --shapes wants RxC or NxCxHxW:G (G dividing C) ..., "
              f"not {args.shapes!r}", file=sys.stderr)
        return 2
    work = sweep.prepare(args, "torch_layer_params")
    if work is None:
        return 2
    bad, n = 0, 0
    for (shape, groups) in shapes:
        for seed in range(args.seed, args.seed + args.seeds):
            what, msgs, ratios, torch_ratios = one_case(args, work, seed, shape, groups)
            n += 1
            print(f"{what}: " + " ".join(f"{k} {v:.3f}" for k, v in sorted(ratios.items())) +
                  "  | torch float32: " +
                  " ".join(f"{k} {v:.3f}" for k, v in sorted(torch_ratios.items())),
                  flush=True)
            if msgs:
                print(f"FAILED {what}: " + "; ".join(msgs))
                bad += 1
    print(f"torch_layer_params.py: {bad} of {n} cases differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
