"""PyTorch's GroupNorm on a device, at clnorm-bench's group shapes: the peer of the bench's
group ops on a GPU (CUDA), where oneDNN is not there to compare with.

For each op, shape and layout it times torch's eager code for the same operation, on the same
device, into a CSV with clnorm-bench's columns, so bench/python/group_table.py can put the two
side by side:
  group                 F.group_norm(x, G, gamma, beta)
  group-silu            F.silu(F.group_norm(...))                   (two kernels in eager torch)
  group-mod             F.silu(F.group_norm(...) * (1 + scale[n]) + shift[n])  (B = N)
  group-stats           x * a + b with a = rstd[n, g] * gamma[c], b = beta[c] - mean[n, g] * a
                        (precomputed statistics: one elementwise pass, torch's best eager form;
                        a and b, (N, C), are formed in each call, as statistics that change
                        per call need)
  <op>-backward         torch.autograd.grad of the forward's output with a random dy, for x,
                        gamma and beta (and scale, shift): the backward alone, its forward
                        recorded before the timer starts
Layouts: nchw is a contiguous (N, C, H, W) tensor, nhwc the same shape in
torch.channels_last, so every torch kernel reads and writes channels-last memory.

Timing: CUDA events around each call on CUDA (the host clock after a synchronize elsewhere),
median of --reps after warm-up, the inputs rotated over copies totalling at least
--rotate-mib, as clnorm-bench rotates its buffers, so a small shape is not served from the
GPU's L2 (50 MB on an H100/H200) on one side only. GB/s counts the tensors read and written
once: x and y (backward: x, dy, dx), gamma, beta, and the -mod ops' scale and shift (their
backward: dscale and dshift too); mean and rstd are not counted, as in clnorm-bench.

    python3 bench/python/torch_group.py --csv torch_group.csv [--device cuda] [--ops LIST]
        [--layout nchw,nhwc] [--shape NxCxHxW[:G] ...] [--dtype f32] [--reps 30]

A case torch cannot run (torch 1.13's CPU GroupNorm has no float16) is printed and left out of
the CSV. Exit status 0, or 2 for a bad option or a device torch does not have.
"""
import argparse
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import GROUP_SHAPES  # noqa: E402

EPS = 1e-5
FORWARD_OPS = ("group", "group-silu", "group-mod", "group-stats")
OPS = FORWARD_OPS + tuple(op + "-backward" for op in FORWARD_OPS)
DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16,
          "f64": torch.float64}
HEADER = ["op", "dtype", "rows", "cols", "impl", "median_us", "gbps", "frac_of_copy",
          "spatial", "groups", "layout", "samples", "reps"]


def parse_shape(text):
    """NxCxHxW[:G] (1 to 3 spatial dims; G 32 when it divides C, else 1), as clnorm-bench."""
    body, _, g = text.partition(":")
    try:
        dims = tuple(int(d) for d in body.lower().split("x"))
        groups = int(g) if g else None
    except ValueError:
        dims, groups = (), None
    if not 3 <= len(dims) <= 5 or any(d < 1 for d in dims) or (groups is not None and (
            groups < 1 or dims[1] % groups)):
        raise argparse.ArgumentTypeError(
            "%r is not NxCxHxW[:G] (1 to 3 spatial dims, positive sizes, G dividing C)" % text)
    if groups is None:
        groups = 32 if dims[1] % 32 == 0 else 1
    return dims, groups


def parse_list(choices, what):
    def parse(text):
        items = [t for t in text.split(",") if t]
        bad = [t for t in items if t not in choices]
        if bad or not items:
            raise argparse.ArgumentTypeError("%s: %s not among %s" % (
                what, ",".join(bad) or "(none)", ",".join(choices)))
        return items
    return parse


def rotated_inputs(dims, layout, dtype, device, rotate_bytes):
    """Copies of x, N(0, 1), in the layout's memory order on the device: enough that the
    backward's four tensors per copy (x, y, dy, dx) total rotate_bytes (2 to 64 copies)."""
    numel = 1
    for d in dims:
        numel *= d
    esize = torch.tensor([], dtype=dtype).element_size()
    sets = max(2, min(64, -(-rotate_bytes // max(4 * numel * esize, 1))))
    torch.manual_seed(numel * 31 + dims[1])
    xs = []
    for _ in range(sets):
        x = torch.randn(dims, device=device).to(dtype)  # float32 draws: any device, any type
        if layout == "nhwc" and len(dims) == 3:  # (N, C, L) stored as (N, L, C)
            x = x.transpose(1, 2).contiguous().transpose(1, 2)
        elif layout == "nhwc":
            x = x.contiguous(memory_format=torch.channels_last if len(dims) == 4
                             else torch.channels_last_3d)
        xs.append(x)
    return xs


class Case:
    """One op on rotated copies of x: its calls, one per copy, and the bytes it moves."""

    def __init__(self, op, dims, groups, xs):
        self.op, self.dims, self.groups = op, dims, groups
        self.backward = op.endswith("-backward")
        self.base = op[:-len("-backward")] if self.backward else op
        n, c = dims[0], dims[1]
        x0 = xs[0]
        dtype, device = x0.dtype, x0.device
        psize = 8 if dtype == torch.float64 else 4
        mod = self.base == "group-mod"
        # the bytes the op must move, clnorm-bench's count
        params = 3 * c if self.backward else 2 * c  # gamma, beta (+ dgamma, dbeta)
        extra = 0
        if mod:  # scale, shift; backward: beta, scale read, dscale, dshift written
            extra = 2 * n * c if not self.backward else (c + n * c + 2 * n * c)
        self.bytes = (3 if self.backward else 2) * x0.numel() * x0.element_size() + \
            (params + extra) * psize
        pdtype = torch.float64 if dtype == torch.float64 else torch.float32
        gamma = 0.5 + torch.rand(c, device=device, dtype=pdtype)
        beta = torch.rand(c, device=device, dtype=pdtype) - 0.5
        scale = 0.2 * torch.randn(n, c, device=device, dtype=pdtype) if mod else None
        shift = 0.2 * torch.randn(n, c, device=device, dtype=pdtype) if mod else None
        self.calls = [self._call(x, gamma, beta, scale, shift) for x in xs]

    def _stats(self, x):
        n, c = self.dims[0], self.dims[1]
        xg = x.detach().to(torch.float64 if x.dtype == torch.float64 else torch.float32)
        xg = xg.reshape(n, self.groups, -1)  # logical (N, C, ...) order in either layout
        var, mean = torch.var_mean(xg, dim=2, unbiased=False)
        return mean, torch.rsqrt(var + EPS)

    def _forward(self, x, gamma, beta, scale, shift, stats):
        n, c = self.dims[0], self.dims[1]
        if self.base == "group-stats":
            mean, rstd = stats
            cpg = c // self.groups
            rc = rstd.repeat_interleave(cpg, dim=1)  # (N, C)
            mc = mean.repeat_interleave(cpg, dim=1)
            a = (rc * gamma).reshape((n, c) + (1,) * (len(self.dims) - 2))
            b = (beta - mc * rc * gamma).reshape(a.shape)
            return x * a.to(x.dtype) + b.to(x.dtype)
        # 16-bit storage: the parameters in x's type, as a model.half() holds them
        y = F.group_norm(x, self.groups, gamma.to(x.dtype), beta.to(x.dtype), EPS)
        if self.base == "group-silu":
            return F.silu(y)
        if self.base == "group-mod":
            s = (1 + scale).to(x.dtype).reshape((n, c) + (1,) * (len(self.dims) - 2))
            t = shift.to(x.dtype).reshape(s.shape)
            return F.silu(y * s + t)
        return y

    def _call(self, x, gamma, beta, scale, shift):
        stats = self._stats(x) if self.base == "group-stats" else None
        if not self.backward:
            return lambda: self._forward(x, gamma, beta, scale, shift, stats)
        leaves = [x.detach().requires_grad_(), gamma.detach().requires_grad_(),
                  beta.detach().requires_grad_()]
        if scale is not None:
            leaves += [scale.detach().requires_grad_(), shift.detach().requires_grad_()]
        y = self._forward(*leaves[:3], *(leaves[3:] or [None, None]), stats)
        dy = torch.empty_like(y).copy_(torch.randn(y.shape, device=y.device))  # y's layout
        return lambda: torch.autograd.grad(y, leaves, dy, retain_graph=True)


def median_us(calls, reps, warmup, device):
    """Median time of calls taken in turn (one per rotated copy), in microseconds: CUDA events
    around each call on CUDA, else the host clock."""
    for i in range(warmup):
        calls[i % len(calls)]()
    times = []
    for i in range(reps):
        fn = calls[i % len(calls)]
        if device.type == "cuda":
            a = torch.cuda.Event(enable_timing=True)
            b = torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b) * 1e3)
        else:
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(times)


def copy_us(dims, dtype, device, reps, warmup, rotate_bytes):
    """A device-to-device copy of x's bytes: the bandwidth the op's bytes are held to."""
    numel = 1
    for d in dims:
        numel *= d
    esize = torch.tensor([], dtype=dtype).element_size()
    sets = max(2, min(64, -(-rotate_bytes // max(2 * numel * esize, 1))))
    pairs = [(torch.randn(numel, device=device).to(dtype),
              torch.empty(numel, dtype=dtype, device=device)) for _ in range(sets)]
    calls = [(lambda s=s, d=d: d.copy_(s)) for s, d in pairs]
    return median_us(calls, reps, warmup, device), 2 * numel * esize


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--csv", required=True, help="output CSV (clnorm-bench's columns)")
    ap.add_argument("--device", default="cuda", help="torch device (default cuda)")
    ap.add_argument("--ops", type=parse_list(OPS, "--ops"), default=["group", "group-backward"])
    ap.add_argument("--layout", type=parse_list(("nchw", "nhwc"), "--layout"),
                    default=["nchw", "nhwc"])
    ap.add_argument("--shape", type=parse_shape, action="append",
                    help="NxCxHxW[:G] (repeatable; default the bench's 19 group shapes)")
    ap.add_argument("--dtype", choices=sorted(DTYPES), default="f32")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--rotate-mib", type=int, default=256)
    a = ap.parse_args(argv)
    if a.reps < 1 or a.warmup < 0 or a.rotate_mib < 0:
        ap.error("--reps from 1, --warmup and --rotate-mib from 0")
    try:
        device = torch.device(a.device)
        torch.empty(1, device=device)
    except (RuntimeError, AssertionError) as e:
        print("torch_group.py: no device %r here: %s" % (a.device, str(e).splitlines()[0]),
              file=sys.stderr)
        return 2
    dtype = DTYPES[a.dtype]
    shapes = a.shape or [(s, 32) for s in GROUP_SHAPES]
    rotate = a.rotate_mib << 20
    rows = []
    skipped = 0
    print("%-16s %-6s %-22s %10s %8s" % ("shape", "layout", "op", "us", "GB/s"))
    for dims, groups in shapes:
        label = "x".join(str(d) for d in dims) + ":%d" % groups
        spatial = "x".join(str(d) for d in dims[2:])
        copy, nbytes = copy_us(dims, dtype, device, a.reps, a.warmup, rotate)
        copy_gbps = nbytes / copy / 1e3
        for layout in a.layout:
            rows.append(["copy", a.dtype, dims[0], dims[1], "torch_copy", "%.3f" % copy,
                         "%.4f" % copy_gbps, "1.0000", spatial, groups, layout, "", a.reps])
            print("%-16s %-6s %-22s %10.1f %8.1f" % (label, layout, "copy", copy, copy_gbps))
            xs = rotated_inputs(dims, layout, dtype, device, rotate)
            for op in a.ops:
                try:
                    case = Case(op, dims, groups, xs)
                    us = median_us(case.calls, a.reps, a.warmup, device)
                except RuntimeError as e:  # e.g. torch 1.13's CPU GroupNorm in float16
                    print("%-16s %-6s %-22s torch cannot: %s" % (
                        label, layout, op, str(e).splitlines()[0]))
                    skipped += 1
                    continue
                gbps = case.bytes / us / 1e3
                rows.append([op, a.dtype, dims[0], dims[1], "torch", "%.3f" % us,
                             "%.4f" % gbps, "%.4f" % (gbps / copy_gbps), spatial, groups,
                             layout, dims[0] if op.startswith("group-mod") else "", a.reps])
                print("%-16s %-6s %-22s %10.1f %8.1f" % (label, layout, op, us, gbps))
                del case
            del xs
            if device.type == "cuda":
                torch.cuda.empty_cache()
    with open(a.csv, "w") as f:
        f.write(",".join(HEADER) + "\n")
        for r in rows:
            f.write(",".join(str(v) for v in r) + "\n")
    print("csv: %s%s" % (a.csv, " (%d cases torch cannot run left out)" % skipped
                           if skipped else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
