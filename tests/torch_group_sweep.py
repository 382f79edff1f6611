#!/usr/bin/python3
"""GroupNorm through the clnorm CLI against PyTorch float64 autograd, on random cases.

The form of issue #10's hidden check: `clnorm run --groups G` and `clnorm grad --groups G` on
.npy files, both layouts, compared with torch in float64 within 1e-5 (float32). Each case
draws N, C, a divisor G of C, 0-3 spatial dims, the layout, SiLU, gamma/beta present or not,
eps and one of five kinds of data (normal, a large common offset, uniform +-1e3, three
outliers x 1e3, values rounded to quarters, which makes ties and constant groups), from
numpy's default_rng(seed), so a seed is the same cases on every run. y, mean, rstd, dx,
dgamma and dbeta must each lie within 1e-5 + 1e-5 |ref| of torch's (mean within that plus
1e-6 max |x|: a float32 mean of values near 1e3 rounds at 6e-5).

    /usr/bin/python3 tests/torch_group_sweep.py --clnorm build/host/clnorm --cases 300 --seed 2

With --saved-stats `clnorm grad` takes the statistics `clnorm run --mean --rstd` saved (float32
files) instead of recomputing them, as a training step's backward does.

Exit status: 0 when every case agrees, 1 when one differs or the CLI fails, 2 for bad
arguments, 77 (CTest's skip) without numpy and torch. Prints each failing case and, at the
end, the largest error of each output as a fraction of its bound.
"""
import argparse
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import torch
except ImportError as e:  # pragma: no cover - depends on the machine
    print(f"torch_group_sweep.py: skipped, {e}", file=sys.stderr)
    sys.exit(77)

TOL = 1e-5


def positive(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def draw_case(rng):
    """One case's parameters and float32 data, in NCHW."""
    n = int(rng.choice([1, 1, 2, 3, 4, 7]))
    c = int(rng.choice([1, 2, 3, 4, 6, 8, 12, 16, 20, 32, 48, 64, 96, 100, 128, 320]))
    g = int(rng.choice([d for d in range(1, c + 1) if c % d == 0]))
    nd = int(rng.choice([0, 1, 1, 2, 2, 2, 3]))
    sp = [int(rng.choice([1, 2, 3, 5, 7, 8, 13, 16, 31, 33, 64])) for _ in range(nd)]
    while int(np.prod(sp)) * c * n > 400000:  # at most 400K elements: halve the longest
        k = int(np.argmax(sp))
        sp[k] = max(1, sp[k] // 2)
    case = {
        "n": n, "c": c, "g": g, "sp": sp,
        "layout": str(rng.choice(["nchw", "nhwc"])),
        "silu": bool(rng.random() < 0.35),
        "gamma": bool(rng.random() < 0.8),
        "beta": bool(rng.random() < 0.7),
        "eps": float(rng.choice([1e-5, 1e-6, 1e-3, 0.1])),
        "kind": int(rng.integers(0, 5)),
    }
    shape = [n, c] + sp
    kind = case["kind"]
    if kind == 0:
        x = rng.standard_normal(shape)
    elif kind == 1:
        x = rng.standard_normal(shape) * 1e-2 + 1e3 * rng.standard_normal()
    elif kind == 2:
        x = rng.uniform(-1, 1, shape) * 1e3
    elif kind == 3:
        x = rng.standard_normal(shape)
        flat = x.reshape(-1)
        flat[rng.integers(0, flat.size, 3)] *= 1e3
    else:
        x = np.round(rng.standard_normal(shape) * 4) / 4
    case["x"] = x.astype(np.float32)
    case["w"] = (rng.standard_normal(c) * 0.5 + 1).astype(np.float32)
    case["b"] = rng.standard_normal(c).astype(np.float32)
    case["dy"] = rng.standard_normal(shape).astype(np.float32)
    return case


def torch_reference(case):
    """y, mean, rstd and the gradients of sum(y * dy), in float64 (NCHW)."""
    n, c, g, nd = case["n"], case["c"], case["g"], len(case["sp"])
    x = torch.tensor(case["x"].astype(np.float64), requires_grad=True)
    w = torch.tensor(case["w"].astype(np.float64), requires_grad=True)
    b = torch.tensor(case["b"].astype(np.float64), requires_grad=True)
    xg = x.reshape(n, g, -1)
    mu = xg.mean(-1, keepdim=True)
    var = ((xg - mu) ** 2).mean(-1, keepdim=True)
    y = ((xg - mu) / torch.sqrt(var + case["eps"])).reshape(x.shape)
    bshape = [1, c] + [1] * nd
    if case["gamma"]:
        y = y * w.reshape(bshape)
    if case["beta"]:
        y = y + b.reshape(bshape)
    if case["silu"]:
        y = torch.nn.functional.silu(y)
    y.backward(torch.tensor(case["dy"].astype(np.float64)))
    out = {
        "y": y.detach().numpy(),
        "mean": mu.reshape(n, g).detach().numpy(),
        "rstd": (1 / torch.sqrt(var + case["eps"])).reshape(n, g).detach().numpy(),
        "dx": x.grad.numpy(),
    }
    if case["gamma"]:
        out["dgamma"] = w.grad.numpy()
    if case["beta"]:
        out["dbeta"] = b.grad.numpy()
    return out


def run_clnorm(clnorm, case, work, device, saved=False):
    """The CLI's outputs (NCHW), or an error message; with saved, grad reads the statistics
    run wrote."""
    channels_last = case["layout"] == "nhwc" and case["sp"]

    def to_file(a):
        return np.ascontiguousarray(np.moveaxis(a, 1, -1)) if channels_last else a

    def from_file(a):
        return np.moveaxis(a, -1, 1) if channels_last else a

    f = {k: os.path.join(work, k + ".npy")
         for k in ["x", "dy", "w", "b", "y", "mean", "rstd", "dx", "dgamma", "dbeta"]}
    for k in ["y", "mean", "rstd", "dx", "dgamma", "dbeta"]:
        if os.path.exists(f[k]):
            os.remove(f[k])
    np.save(f["x"], to_file(case["x"]))
    np.save(f["dy"], to_file(case["dy"]))
    np.save(f["w"], case["w"])
    np.save(f["b"], case["b"])
    common = ["--groups", str(case["g"]), "--layout", case["layout"], "--input", f["x"],
              "--eps", repr(case["eps"])]
    if device:
        common += ["--device", device]
    if case["silu"]:
        common.append("--silu")
    if case["gamma"]:
        common += ["--gamma", f["w"]]
    if case["beta"]:
        common += ["--beta", f["b"]]
    grads = ["--grad-output", f["dy"], "--grad-input", f["dx"]]
    if case["gamma"]:
        grads += ["--grad-gamma", f["dgamma"]]
    if case["beta"]:
        grads += ["--grad-beta", f["dbeta"]]
    if saved:
        grads += ["--mean", f["mean"], "--rstd", f["rstd"]]
    for cmd in (["run"] + common + ["--output", f["y"], "--mean", f["mean"], "--rstd", f["rstd"]],
                ["grad"] + common + grads):
        p = subprocess.run([clnorm] + cmd, capture_output=True, text=True)
        if p.returncode != 0:
            return None, f"clnorm {cmd[0]} exit {p.returncode}: {p.stderr.strip()[-300:]}"
    out = {"y": from_file(np.load(f["y"])), "mean": np.load(f["mean"]),
           "rstd": np.load(f["rstd"]), "dx": from_file(np.load(f["dx"]))}
    if case["gamma"]:
        out["dgamma"] = np.load(f["dgamma"])
    if case["beta"]:
        out["dbeta"] = np.load(f["dbeta"])
    return out, None


def common_arguments(ap, seed):
    """The options of every script that runs cases through the CLI (torch_group_spread.py)."""
    ap.add_argument("--clnorm", default="build/host/clnorm", help="the CLI")
    ap.add_argument("--seed", type=int, default=seed)
    ap.add_argument("--device", default=None, help="the CLI's --device (default its own)")
    ap.add_argument("--workdir", default=None, help="for the .npy files (default: a temporary one)")


def prepare(args, name):
    """The work directory, torch in float64; None (after a message) when the CLI is missing."""
    if not (os.path.isfile(args.clnorm) and os.access(args.clnorm, os.X_OK)):
        print(f"{name}.py: no executable clnorm at {args.clnorm}", file=sys.stderr)
        return None
    work = args.workdir or tempfile.mkdtemp(prefix=name + "_")
    os.makedirs(work, exist_ok=True)
    torch.set_default_dtype(torch.float64)
    return work


def compare(case, got, ref):
    """Each output's largest error as a fraction of its bound, and a message for each output
    off (past its bound, NaN, or of another shape)."""
    ratios, msgs = {}, []
    for k, r in ref.items():
        a = got[k]
        if a.shape != r.shape:
            msgs.append(f"{k} of shape {a.shape}, torch's {r.shape}")
            continue
        bound = TOL + TOL * np.abs(r)
        if k == "mean":
            bound = bound + 1e-6 * float(np.abs(case["x"]).max(initial=0))
        err = np.abs(a.astype(np.float64) - r)
        ratios[k] = float((err / bound).max(initial=0))
        if not ratios[k] <= 1:  # NaN fails too
            msgs.append(f"{k} off by {float(err.max()):.3g} ({ratios[k]:.2f} of the bound)")
    return ratios, msgs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=positive, default=100)
    common_arguments(ap, 1)
    ap.add_argument("--saved-stats", action="store_true",
                    help="grad takes the mean and rstd that run saved (float32 files)")
    args = ap.parse_args()
    work = prepare(args, "torch_group_sweep")
    if work is None:
        return 2
    rng = np.random.default_rng(args.seed)
    worst, bad = {}, 0
    for i in range(args.cases):
        case = draw_case(rng)
        what = (f"case {i}: x {case['n']}x{case['c']}x{case['sp']} G={case['g']} "
                f"{case['layout']} silu={case['silu']} gamma={case['gamma']} "
                f"beta={case['beta']} eps={case['eps']} kind={case['kind']}")
        got, err = run_clnorm(args.clnorm, case, work, args.device, args.saved_stats)
        if err:
            print(f"FAILED {what}: {err}")
            bad += 1
            continue
        ratios, msgs = compare(case, got, torch_reference(case))
        for k, ratio in ratios.items():
            worst[k] = max(worst.get(k, 0.0), ratio)
        if msgs:
            print(f"MISMATCH {what}: " + "; ".join(msgs))
            bad += 1
    print(f"torch_group_sweep.py: {args.cases - bad} of {args.cases} cases agree (seed "
          f"{args.seed}); the largest error of each output as a fraction of its bound: " +
          ", ".join(f"{k} {v:.3f}" for k, v in sorted(worst.items())))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
