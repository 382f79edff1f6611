"""What the Python call adds to the C call (issue #13: at most 20 us at 1x768, at most 5% at
8192x768), LayerNorm float32 with gamma and beta, on the default context's device.

The C calls run through ctypes with everything prepared beforehand (plan, argument arrays,
buffers), so each is one foreign call; the cost of a bare foreign call is measured too
(`ctypes floor`) and is included in the C numbers, which it raises by that much.
  c_host     clnorm_execute_host (layer 2) on the host arrays: the C library's host-pointer
             call, and what the package runs below its zero-copy size (_core.ZERO_COPY_FROM)
  c_device   clnorm_execute (layer 1) on buffers made once over the same host arrays
             (CL_MEM_USE_HOST_PTR), then a wait: the C library on device buffers, no copies
  py_numpy   clnorm.layer_norm(x, (cols,), w, b, out=y) on NumPy arrays, into the same y as
             the C calls: the Python call doing what the C call does
  py_torch   the same on torch CPU tensors (views of the same memory)
  py_new     clnorm.layer_norm(x, (cols,), w, b) on NumPy arrays, a new y each call (as torch's
             functions return): on PoCL a fresh output costs the C call itself 10-25 us more
             at 1x768 (clnorm_execute_host into a just-allocated array, measured), which is
             not the binding's
All are timed in turn, call by call (interleaved), and the medians compared; the issue's
limit is read on py_numpy against the C call of the same path (c_host at 1x768, where the
package runs layer 2; c_device at 8192x768, where it runs zero-copy).

    python3 bench/python/overhead.py [--csv out.csv] [--reps N]
"""
import argparse
import ctypes
import os
import sys

import numpy as np
import torch

import clnorm
from clnorm import _core, _lib, _opencl

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import interleaved_us, write_csv  # noqa: E402

SHAPES = [(1, 768), (8192, 768)]
LIMITS = {(1, 768): "<= 20 us", (8192, 768): "<= 5%"}


def c_calls(ctx, x, y, w, b):
    """The two C calls on these arrays, ready to time; and what to free afterwards."""
    rows, cols = x.shape
    key = _core.desc_key(_lib.LAYER, _lib.F32, rows, cols, 1e-5, 0, x_stride=cols,
                         y_stride=cols)
    plan = ctx.plan(key)  # the very plan the Python call uses
    lib = _lib.lib
    arrays = (x, y, w, b)
    host = (_lib.HostArg * 4)(*[(s, a.ctypes.data) for s, a in enumerate(arrays)])

    def c_host():
        if lib.clnorm_execute_host(plan.handle, _lib.FORWARD, host, 4):
            raise RuntimeError("clnorm_execute_host failed")

    mems = [_opencl.wrap_host(ctx.cl_context, a.ctypes.data, a.nbytes) for a in arrays]
    dev = (_lib.Arg * 4)(*[(s, m, 0) for s, m in enumerate(mems)])
    event = ctypes.c_void_p()

    def c_device():
        if lib.clnorm_execute(plan.handle, _lib.FORWARD, dev, 4, None, 0, None,
                              ctypes.byref(event)):
            raise RuntimeError("clnorm_execute failed")
        _opencl._cl.clWaitForEvents(1, ctypes.byref(event))
        _opencl.release_event(event)

    def free():
        for m in mems:
            _opencl.release(m)

    return c_host, c_device, free


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--csv", default=None)
    ap.add_argument("--reps", type=int, default=0, help="reps per shape (default: by shape)")
    args = ap.parse_args()
    ctx = clnorm.current_context()
    if ctx.backend != "opencl":
        sys.exit("overhead.py: no OpenCL device (the C calls compared need one)")
    floor = interleaved_us([_lib.lib.clnorm_op_count], 20000)[0]
    print("device: %s; ctypes floor (a bare foreign call): %.2f us" % (ctx.device_name, floor))
    out = []
    for rows, cols in SHAPES:
        rng = np.random.default_rng(rows)
        x = rng.standard_normal((rows, cols)).astype(np.float32)
        w = (1 + 0.1 * rng.standard_normal(cols)).astype(np.float32)
        b = (0.1 * rng.standard_normal(cols)).astype(np.float32)
        # y for the C calls page-aligned like the package's own large outputs
        y = clnorm.layer_norm(x, cols, w, b)
        xt, wt, bt = (torch.from_numpy(a) for a in (x, w, b))
        c_host, c_device, free = c_calls(ctx, x, y, w, b)
        yt = torch.from_numpy(y)
        fns = [c_host, c_device, lambda: clnorm.layer_norm(x, (cols,), w, b, out=y),
               lambda: clnorm.layer_norm(xt, (cols,), wt, bt, out=yt),
               lambda: clnorm.layer_norm(x, (cols,), w, b)]
        reps = args.reps or (3000 if rows * cols < 100000 else 150)
        t = interleaved_us(fns, reps)
        free()
        path = "zero-copy" if ctx.plan(_core.desc_key(
            _lib.LAYER, _lib.F32, rows, cols, 1e-5, 0, x_stride=cols, y_stride=cols)) \
            .row_bytes >= _core.ZERO_COPY_FROM else "layer 2"
        c_same = t[0] if path == "layer 2" else t[1]
        print("%dx%d (Python path: %s, %d reps): c_host %.1f us, c_device %.1f us, "
              "py_numpy %.1f us, py_torch %.1f us, py_new %.1f us" % (rows, cols, path, reps, *t))
        for name, v in (("py_numpy", t[2]), ("py_torch", t[3]), ("py_new", t[4])):
            print("  %-8s - C call of its path = %+7.1f us (%+6.1f%%)   [issue #13: %s]"
                  % (name, v - c_same, 100 * (v - c_same) / c_same, LIMITS[(rows, cols)]))
        out.append(["%dx%d" % (rows, cols), path, "%.2f" % floor] + ["%.1f" % v for v in t] +
                   ["%.1f" % (t[2] - c_same), "%.2f" % (100 * (t[2] - c_same) / c_same)])
    if args.csv:
        write_csv(args.csv, ["shape", "python_path", "ctypes_floor_us", "c_host_us",
                             "c_device_us", "py_numpy_us", "py_torch_us", "py_new_us",
                             "py_numpy_minus_c_us", "py_numpy_over_c_pct"], out)


if __name__ == "__main__":
    main()
