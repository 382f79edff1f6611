"""GroupNorm's gradients through `clnorm grad --groups` against torch's float64 autograd, beside
torch's own float32, as max |a - ref| / (1 + |ref|) per output (dgamma, dbeta, dx) and run.

    python3 bench/python/group_grad_accuracy.py OUT.csv LABEL=path/to/clnorm [LABEL=...]

Each clnorm runs twice per case: through its host loop (clnorm's choice on a CPU device) and
through its kernels (CLNORM_HOST_BYTES=0). Inputs are float32 (torch computes from the same
float32 values widened); x ~ N(1, 2^2), dy ~ N(0, 1), gamma and beta ~ N(0, 1), two seeds,
with and without the fused SiLU, NCHW and NHWC. The small groups (2 to 4 elements, where dx
is a difference of nearly equal terms) also run with x ~ 1 + N(0, 0.01^2), whose rstd is
near 100. Needs numpy and torch (Debian's
python3-numpy, python3-torch)."""
import csv
import itertools
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

SHAPES = [(2, 64, 32, 32, 32), (8, 320, 32, 16, 16), (1, 16, 1, 50, 40)]  # N, C, G, H, W
SMALL = [(16, 512, 512, 1, 2), (8, 48, 48, 1, 3), (4, 64, 64, 2, 2)]  # InstanceNorm


def rel(a, ref):
    return float(np.max(np.abs(a - ref) / (1 + np.abs(ref))))


def torch_grads(x, dy, g, b, groups, silu, dtype):
    xt, gt, bt = (torch.tensor(v, dtype=dtype, requires_grad=True) for v in (x, g, b))
    y = torch.nn.functional.group_norm(xt, groups, gt, bt, 1e-5)
    if silu:
        y = torch.nn.functional.silu(y)
    y.backward(torch.tensor(dy, dtype=dtype))
    return [t.grad.double().numpy() for t in (gt, bt, xt)]


def main():
    if len(sys.argv) < 3 or any("=" not in a for a in sys.argv[2:]):
        sys.exit("usage: group_grad_accuracy.py OUT.csv LABEL=path/to/clnorm [LABEL=...]")
    builds = [a.split("=", 1) for a in sys.argv[2:]]
    out = csv.writer(open(sys.argv[1], "w", newline=""))
    out.writerow(["shape", "spread", "layout", "silu", "path", "build", "seed", "dgamma", "dbeta",
                  "dx"])
    tmp = tempfile.mkdtemp()
    f = {k: os.path.join(tmp, k + ".npy") for k in ("x", "dy", "g", "b", "dx", "dg", "db")}
    cases = [(s, 2.0) for s in SHAPES] + [(s, v) for s in SMALL for v in (1.0, 0.01)]
    for ((n, c, groups, h, w), spread), layout, silu, seed in itertools.product(
            cases, ("nchw", "nhwc"), (0, 1), (1, 2)):
        rng = np.random.default_rng(seed)
        x32 = (rng.standard_normal((n, c, h, w)) * spread + 1).astype(np.float32)
        dy32 = rng.standard_normal((n, c, h, w)).astype(np.float32)
        g32, b32 = (rng.standard_normal(c).astype(np.float32) for _ in range(2))
        wide = [v.astype(np.float64) for v in (x32, dy32, g32, b32)]
        ref = torch_grads(wide[0], wide[1], wide[2], wide[3], groups, silu, torch.float64)
        low = torch_grads(wide[0], wide[1], wide[2], wide[3], groups, silu, torch.float32)
        shape = f"{n}x{c}x{h}x{w}:{groups}"
        out.writerow([shape, spread, layout, silu, "torch_f32", "-", seed] +
                     [f"{rel(a, r):.3g}" for a, r in zip(low, ref)])
        to_file = (lambda a: a) if layout == "nchw" else (lambda a: a.transpose(0, 2, 3, 1))
        from_file = (lambda a: a) if layout == "nchw" else (lambda a: a.transpose(0, 3, 1, 2))
        for key, v in (("x", x32), ("dy", dy32)):
            np.save(f[key], np.ascontiguousarray(to_file(v)))
        np.save(f["g"], g32)
        np.save(f["b"], b32)
        for path, (label, clnorm) in itertools.product(("host_loop", "kernels"), builds):
            env = dict(os.environ)
            if path == "kernels":
                env["CLNORM_HOST_BYTES"] = "0"
            subprocess.run([clnorm, "grad", "--groups", str(groups), "--layout", layout,
                            "--input", f["x"], "--grad-output", f["dy"], "--gamma", f["g"],
                            "--beta", f["b"], "--grad-input", f["dx"], "--grad-gamma", f["dg"],
                            "--grad-beta", f["db"]] + (["--silu"] if silu else []),
                           check=True, env=env)
            got = [np.load(f["dg"]), np.load(f["db"]), from_file(np.load(f["dx"]))]
            out.writerow([shape, spread, layout, silu, path, label, seed] +
                         [f"{rel(a, r):.3g}" for a, r in zip(got, ref)])


if __name__ == "__main__":
    main()
