#!/usr/bin/python3
"""LayerNorm's backward on rows of small spread, through the clnorm CLI, against torch.

Rows of x = 300 + N(0, spread^2) with gamma 1 + N(0, gscale^2) and beta N(0, 1): dx, dgamma
and dbeta through `clnorm grad` against torch's float64 `layer_norm` autograd, each within
1e-5 + 1e-5 |ref| (torch_group_sweep.py's comparison), on 64x1024, 16x128, 8x4096 and 256x64
for six seeds from --seed, 0 by default (24 cases, under a
minute; CTest runs it through the host loop and the row kernels, cli_torch_layer_spread_host
and _kernels, and test_host_loop's test_wide_rows checks the same without torch).
At the defaults (spread 1e-3, gscale 1, rstd near 300) the host loop's float32 rows had put
dx at 1.43x the bound before such rows ran in double (src/op/row_norm_host_body.h,
HN(row_wide)); 0.24x after (dbeta). The row kernels (CLNORM_HOST_BYTES=0) were at 0.85x in
float32, 1.13x and 1.27x at --spread 3e-4 and 1e-4; 0.045x, 0.007x and 0.007x since their
rows of rstd 16 or more take dx in double (kernels/norm_backward.cl, BWD_WIDE).

    /usr/bin/python3 tests/torch_layer_spread.py --clnorm build/host/clnorm
    CLNORM_HOST_BYTES=0 /usr/bin/python3 tests/torch_layer_spread.py   # the kernels

With --saved-stats `clnorm run --mean --rstd` runs first and `clnorm grad` takes its float32
statistics, as a training step's backward does: the float32 mean of rows near 300 is rounded
by up to 1.5e-5, which dx multiplies by rstd (host calls, the CLI's, recompute such
statistics from x since 2026-12-05; before, both paths failed this).

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
    print(f"torch_layer_spread.py: skipped, {e}", file=sys.stderr)
    sys.exit(77)


def one_case(args, work, seed, R, K):
    """One case through the CLI against torch: (what, messages, ratios)."""
    f = lambda name: os.path.join(work, name + ".npy")
    rng = np.random.default_rng(seed)
    x = (300 + args.spread * rng.standard_normal((R, K))).astype(np.float32)
    dy = rng.standard_normal(x.shape).astype(np.float32)
    g = (1 + args.gscale * rng.standard_normal(K)).astype(np.float32)
    b = rng.standard_normal(K).astype(np.float32)
    for name, a in dict(x=x, dy=dy, g=g, b=b).items():
        np.save(f(name), a)
    outs = dict(dx="--grad-input", dg="--grad-gamma", db="--grad-beta")
    params = ["--input", f("x"), "--gamma", f("g"), "--beta", f("b")]
    params += ["--device", args.device] if args.device else []
    cmds = [[args.clnorm, "grad", "--grad-output", f("dy")] + params +
            [a for k, o in outs.items() for a in (o, f(k))]]
    if args.saved_stats:  # the forward first, its statistics into the backward
        stats = ["--mean", f("mean"), "--rstd", f("rstd")]
        cmds = [[args.clnorm, "run", "--output", f("y")] + params + stats, cmds[0] + stats]
    what = f"seed {seed} {R}x{K}"
    for cmd in cmds:
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode != 0:
            return what, [run.stderr.strip()], {}
    t = lambda a: torch.tensor(a, dtype=torch.float64, requires_grad=True)
    xt, gt, bt = t(x), t(g), t(b)
    torch.nn.functional.layer_norm(xt, (K,), gt, bt, 1e-5).backward(
        torch.tensor(dy, dtype=torch.float64))
    ref = dict(dx=xt.grad.numpy(), dg=gt.grad.numpy(), db=bt.grad.numpy())
    ratios, msgs = sweep.compare({"x": x}, {k: np.load(f(k)) for k in outs}, ref)
    return what, msgs, ratios


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sweep.common_arguments(ap, 0)
    ap.add_argument("--spread", type=float, default=1e-3)
    ap.add_argument("--gscale", type=float, default=1.0)
    ap.add_argument("--saved-stats", action="store_true",
                    help="grad takes the mean and rstd that `clnorm run` saved (float32 files)")
    args = ap.parse_args()
    work = sweep.prepare(args, "torch_layer_spread")
    if work is None:
        return 2
    bad, worst, n = 0, {}, 0
    for seed in range(args.seed, args.seed + 6):
        for (R, K) in [(64, 1024), (16, 128), (8, 4096), (256, 64)]:
            what, msgs, ratios = one_case(args, work, seed, R, K)
            n += 1
            for k, v in ratios.items():
                worst[k] = max(worst.get(k, 0.0), v)
            if msgs:
                print(f"FAILED {what}: " + "; ".join(msgs))
                bad += 1
    print(f"torch_layer_spread.py: {bad} of {n} cases differ; the largest error of each "
          "output / bound: " + " ".join(f"{k} {v:.3f}" for k, v in sorted(worst.items())))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
