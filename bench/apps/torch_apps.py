#!/usr/bin/python3
"""Times the computations of clnorm-block and clnorm-lnlstm in PyTorch, CPU, float32.

Run with Debian's /usr/bin/python3 (PyTorch), from anywhere:

    torch_apps.py [--csv FILE] [--runs N] [--warmup N] [--threads N] [--only block|lnlstm]
                  [--gemm default|onednn|both] [--block-size B,T,d,heads,f]
                  [--lstm-size T,B,I,H] [--causal] [--profile]

The models are those the tests compare the programs with (tests/apps/app_models.py), run
eagerly under torch.no_grad() with torch's default thread count unless --threads is given:
one pre-LN block at the programs' demo size (B=4, T=256, d=768, 12 heads, f=3072) and one
LSTM sequence at the demo size (T=784, B=16, I=1, H=128; W_x x_t for all t as one product and
one LayerNorm up front, as clnorm-lnlstm does). Each is warmed up, then timed --runs times;
the median is reported.

Two ways to run the products x W^T + b (--gemm, both by default, one CSV row each):
- default (source "torch"): F.linear, that is torch's BLAS. Debian's torch is built with
  BLAS_INFO=generic and calls whatever libblas.so.3 the system's alternatives select; with
  only Debian's reference (netlib) BLAS installed that is an unoptimized triple loop, about
  2 GFLOP/s on one core, which says more about the packaging than about torch.
- onednn (source "torch-onednn"): the same products through oneDNN, which every torch CPU
  build carries (torch.utils.mkldnn's MkldnnLinear path: weights converted once, activations
  to and from oneDNN's layout at every call, conversions included in the time). The
  attention's batched products (q k^T, p v) stay on torch's BLAS in both: torch 1.13 has no
  oneDNN float32 bmm.

The normalization time is measured in separate runs of the same model whose LayerNorm calls
(F.layer_norm) are wrapped in a timer: torch on the CPU returns from an op when it is done, so
the wall time around each call is that call's time. The share is that median sum over the
median of the plain runs (the wrapper itself adds ~1 us a call; the instrumented runs' total
is printed to show it). --profile also reports aten::layer_norm's share from torch.profiler
as a cross-check.

The CSV has the columns bench/apps/run.sh merges with the programs' clnorm-time lines:
source,app,variant,fused,shape,runs,threads,total_ms,norm_ms,norm_share,per_step_us,device
"""
import argparse
import csv
import io
import os
import platform
import statistics
import sys
import time

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
# No __pycache__ beside app_models.py: the tests run it from the source tree.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "apps"))
import app_models as M  # noqa: E402

COLUMNS = ("source", "app", "variant", "fused", "shape", "runs", "threads", "total_ms", "norm_ms",
           "norm_share", "per_step_us", "device")


class TimedLayerNorm:
    """M.layer_norm with the wall time of every call added up."""

    def __init__(self):
        self.seconds = 0.0

    def __call__(self, x, gamma, beta):
        t0 = time.perf_counter()
        y = M.layer_norm(x, gamma, beta)
        self.seconds += time.perf_counter() - t0
        return y


class OneDNNLinear:
    """x W^T + b through oneDNN: torch._C._nn.mkldnn_linear, the op behind MkldnnLinear.
    Each weight is converted to oneDNN's layout once (cached by the tensor's identity; the
    tensor is kept so the identity cannot be reused), the activation at every call."""

    def __init__(self):
        self.cache = {}

    def __call__(self, x, W, b=None):
        key = (id(W), id(b))
        if key not in self.cache:
            bias = b if b is not None else W.new_zeros(W.shape[0])
            self.cache[key] = (W, b, W.to_mkldnn(), bias.to_mkldnn())
        _, _, Wm, bm = self.cache[key]
        lead = x.shape[:-1]
        y = torch._C._nn.mkldnn_linear(x.reshape(-1, x.shape[-1]).contiguous().to_mkldnn(), Wm, bm)
        return y.to_dense().reshape(*lead, W.shape[0])


def check_onednn():
    """OneDNNLinear computes what F.linear does (float32 rounding apart), on small models."""
    w, inp = M.block_arrays(2, 9, 48, 4, 96, 5, 2)
    w = {k: torch.from_numpy(v) for k, v in w.items()}
    x, c = torch.from_numpy(inp["X"]), torch.from_numpy(inp["C"])
    ref = M.block_forward(x, w, 4, cond=c)
    y = M.block_forward(x, w, 4, cond=c, linear=OneDNNLinear())
    err = float((y - ref).abs().max() / ref.abs().max())
    lw, X = M.lnlstm_arrays(20, 3, 2, 16, 2, True)
    lw = {k: torch.from_numpy(v) for k, v in lw.items()}
    X = torch.from_numpy(X)
    h_ref, _ = M.lnlstm_forward(X, lw)
    h, _ = M.lnlstm_forward(X, lw, linear=OneDNNLinear())
    err = max(err, float((h - h_ref).abs().max()))
    if not err < 1e-4:
        raise SystemExit("torch_apps: the oneDNN products differ from F.linear by %.3g" % err)


def median_ms(fn, warmup, runs):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(times)


def norm_ms(model, warmup, runs):
    """Medians of (LayerNorm time, total time) over instrumented runs of model(ln)."""
    for _ in range(warmup):
        model(TimedLayerNorm())
    norms, totals = [], []
    for _ in range(runs):
        ln = TimedLayerNorm()
        t0 = time.perf_counter()
        model(ln)
        totals.append(time.perf_counter() - t0)
        norms.append(ln.seconds)
    return 1e3 * statistics.median(norms), 1e3 * statistics.median(totals)


def profiler_share(model):
    """aten::layer_norm's share of the CPU time of one run, from torch.profiler."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        model(M.layer_norm)
    events = prof.key_averages()
    ln = sum(e.cpu_time_total for e in events if e.key == "aten::layer_norm")
    # The top-level ops' self times add up to the run's op time (children are inside them).
    total = sum(e.self_cpu_time_total for e in events)
    return ln / total if total else 0.0


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def parse_size(text, n, what):
    parts = text.split(",")
    if len(parts) != n or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise SystemExit("torch_apps: %s wants %d positive integers separated by commas"
                         % (what, n))
    return [int(p) for p in parts]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--csv", help="write the rows here (and print them)")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, help="torch.set_num_threads (default: torch's own)")
    ap.add_argument("--only", choices=("block", "lnlstm"))
    ap.add_argument("--gemm", choices=("default", "onednn", "both"), default="both")
    ap.add_argument("--block-size", default="4,256,768,12,3072", metavar="B,T,d,heads,f")
    ap.add_argument("--lstm-size", default="784,16,1,128", metavar="T,B,I,H")
    ap.add_argument("--causal", action="store_true", help="time the causal block")
    ap.add_argument("--profile", action="store_true",
                    help="cross-check the share with torch.profiler")
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    threads = torch.get_num_threads()
    print("torch %s, torch.get_num_threads() = %d, %s" % (torch.__version__, threads, cpu_name()))
    gemms = ("default", "onednn") if a.gemm == "both" else (a.gemm,)
    if "onednn" in gemms:
        with torch.no_grad():
            check_onednn()

    models = []
    if a.only in (None, "block"):
        B, T, d, heads, f = parse_size(a.block_size, 5, "--block-size")
        w, inp = M.block_arrays(B, T, d, heads, f, None, 1)
        bw = {k: torch.from_numpy(v) for k, v in w.items()}
        x = torch.from_numpy(inp["X"])
        models.append(("block", "pre-causal" if a.causal else "pre",
                       "B=%d T=%d d=%d heads=%d f=%d" % (B, T, d, heads, f), None,
                       lambda ln, linear: M.block_forward(x, bw, heads, causal=a.causal, ln=ln,
                                                          linear=linear)))
    if a.only in (None, "lnlstm"):
        T, B, I, H = parse_size(a.lstm_size, 4, "--lstm-size")
        w, X = M.lnlstm_arrays(T, B, I, H, 1, False)
        lw = {k: torch.from_numpy(v) for k, v in w.items()}
        X = torch.from_numpy(X)
        models.append(("lnlstm", "-", "T=%d B=%d I=%d H=%d" % (T, B, I, H), T,
                       lambda ln, linear: M.lnlstm_forward(X, lw, ln=ln, linear=linear)))

    rows = []
    with torch.no_grad():
        for app, variant, shape, steps, run in models:
            for gemm in gemms:
                linear = F.linear if gemm == "default" else OneDNNLinear()
                source = "torch" if gemm == "default" else "torch-onednn"
                device = "torch %s CPU float32, %d threads, products via %s (%s)" % (
                    torch.__version__, threads, "F.linear/BLAS" if gemm == "default" else "oneDNN",
                    cpu_name())
                rows.append(measure(a, lambda ln: run(ln, linear), source, app, variant, shape,
                                    steps, threads, device))

    out = io.StringIO()
    writer = csv.DictWriter(out, COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    if a.csv:
        with open(a.csv, "w") as f:
            f.write(out.getvalue())
    sys.stdout.write(out.getvalue())


def measure(a, model, source, app, variant, shape, steps, threads, device):
    total = median_ms(lambda: model(M.layer_norm), a.warmup, a.runs)
    norm, total_instrumented = norm_ms(model, a.warmup, a.runs)
    share = norm / total
    print("%s %s %s (%s): %.3f ms (median of %d, %d threads), LayerNorm %.3f ms = %.1f%% "
          "(instrumented runs %.3f ms)" % (source, app, variant, shape, total, a.runs, threads,
                                           norm, 100 * share, total_instrumented))
    if a.profile:
        print("%s %s %s: torch.profiler aten::layer_norm share %.1f%%"
              % (source, app, variant, 100 * profiler_share(model)))
    return {"source": source, "app": app, "variant": variant, "fused": "", "shape": shape,
            "runs": a.runs, "threads": threads, "total_ms": "%.4f" % total,
            "norm_ms": "%.4f" % norm, "norm_share": "%.4f" % share,
            "per_step_us": "%.3f" % (1e3 * total / steps) if steps else "", "device": device}


if __name__ == "__main__":
    main()
