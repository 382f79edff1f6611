"""pyopencl arrays stay on the device and run on their own queue."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import clnorm
from conftest import assert_close, rms_norm_ref, to64

cl = pytest.importorskip("pyopencl")
cla = pytest.importorskip("pyopencl.array")


@pytest.fixture(scope="module")
def queue():
    if not clnorm.devices():
        pytest.skip("no OpenCL device")
    ctx = cl.Context([cl.get_platforms()[0].get_devices()[0]])
    return cl.CommandQueue(ctx)


def host(seed, shape, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def test_layer_norm_stays_on_device(queue):
    xh, wh, bh = host(1, (6, 40)), host(2, 40), host(3, 40)
    x, w, b = (cla.to_device(queue, a) for a in (xh, wh, bh))
    y = clnorm.layer_norm(x, 40, w, b)
    assert isinstance(y, cla.Array) and y.queue is queue and y.dtype == np.float32
    assert y.context.int_ptr == queue.context.int_ptr and y.shape == (6, 40)
    assert y.events  # the call's event: whoever uses y next waits for it
    ref = F.layer_norm(to64(xh), (40,), to64(wh), to64(bh))
    assert_close(y.get(), ref, "float32", "pyopencl layer_norm")
    # the fused add: y and the sum both on the device; NumPy parameters are uploaded
    r = cla.to_device(queue, host(4, (6, 40)))
    y, s = clnorm.rms_norm(x, 40, wh, 1e-6, residual=r, return_sum=True)
    assert isinstance(y, cla.Array) and isinstance(s, cla.Array)
    s64 = to64(xh) + to64(r.get())
    assert_close(s.get(), s64, "float32", "sum")
    assert_close(y.get(), rms_norm_ref(s64, (40,), to64(wh), 1e-6), "float32", "add + rms")


def test_stats_on_device(queue):
    """Statistics returned as device arrays, then given back as precomputed ones."""
    xh = host(6, (2, 3, 40)) + 3
    x = cla.to_device(queue, xh)
    y, mean, rstd = clnorm.layer_norm(x, 40, return_stats=True)
    assert isinstance(mean, cla.Array) and mean.shape == (2, 3, 1) and mean.queue is queue
    _, mr, rr = torch.native_layer_norm(to64(xh), (40,), None, None, 1e-5)
    assert_close(mean.get(), mr, "float32", "mean")
    assert_close(rstd.get(), rr, "float32", "rstd")
    y2 = clnorm.layer_norm(x, 40, mean=mean, rstd=rstd)  # waits for the events of both
    assert_close(y2.get(), to64(y.get()), "float32", "precomputed on the device")


def test_offsets_and_row_strides_read_in_place(queue):
    wide = host(5, (8, 80))
    xd = cla.to_device(queue, wide)
    x = xd[2:, 40:]  # an element offset into the buffer and rows 80 apart
    assert not x.flags.c_contiguous
    y = clnorm.layer_norm(x, 40)
    assert_close(y.get(), F.layer_norm(to64(wide[2:, 40:]), (40,)), "float32", "strided")


def test_group_norm_and_float64_on_device(queue):
    xh = host(6, (2, 4, 3, 3), np.float64)
    x = cla.to_device(queue, xh)
    y = clnorm.group_norm(x, 2, silu=True)
    assert isinstance(y, cla.Array) and y.dtype == np.float64
    assert_close(y.get(), F.silu(F.group_norm(to64(xh), 2)), "float64", "group_norm")
    xl = cla.to_device(queue, np.ascontiguousarray(xh.transpose(0, 2, 3, 1)))
    y = clnorm.group_norm(xl, 2, channels_last=True)
    assert_close(y.get(), F.group_norm(to64(xh), 2).permute(0, 2, 3, 1), "float64", "NHWC")


def test_group_norm_modulation_on_device(queue):
    # scale and shift chunks of one (B, 2C) device array (rows 2C apart, the shift at an
    # element offset), B = 2 rows for N = 4 samples
    xh, eh = host(11, (4, 8, 3, 3)), host(12, (2, 16))
    x, e = cla.to_device(queue, xh), cla.to_device(queue, eh)
    s = to64(eh[:, :8]).repeat_interleave(2, 0)[:, :, None, None]
    h = to64(eh[:, 8:]).repeat_interleave(2, 0)[:, :, None, None]
    ref = F.group_norm(to64(xh), 4) * (1 + s) + h
    y = clnorm.group_norm(x, 4, silu=True, scale=e[:, :8], shift=e[:, 8:])
    assert isinstance(y, cla.Array) and y.queue is queue
    assert_close(y.get(), F.silu(ref), "float32", "chunks on the device")
    # (B, C, 1, 1) on the device beside a NumPy (B, C) shift, which is uploaded
    sd = cla.to_device(queue, np.ascontiguousarray(eh[:, :8]).reshape(2, 8, 1, 1))
    y = clnorm.group_norm(x, 4, scale=sd, shift=eh[:, 8:])
    assert_close(y.get(), ref, "float32", "(B, C, 1, 1) on the device")


def test_instance_norm_eval_on_device(queue):
    # eval-mode InstanceNorm: the running statistics on the device too (read back to form
    # the precomputed statistics, which go up again), the result on the device
    xh, rm, rv = host(13, (2, 6, 4, 5)), host(14, (6,)), 1.0 + np.abs(host(15, (6,)))
    x, rmd, rvd = (cla.to_device(queue, a) for a in (xh, rm, rv))
    y = clnorm.instance_norm(x, rmd, rvd, use_input_stats=False)
    assert isinstance(y, cla.Array) and y.queue is queue
    ref = F.instance_norm(to64(xh), to64(rm), to64(rv), use_input_stats=False)
    assert_close(y.get(), ref, "float32", "eval-mode instance_norm")
    assert (rmd.get() == rm).all() and (rvd.get() == rv).all()


def test_context_adopts_the_arrays_queue(queue):
    x = cla.to_device(queue, host(7, (3, 16)))
    clnorm.layer_norm(x, 16)
    ctx = clnorm.context.context_for_queue(queue)
    builds, plans = ctx.program_builds, ctx.plan_count
    y = clnorm.layer_norm(x, 16)  # same queue, same description: the cached plan
    assert ctx is clnorm.context.context_for_queue(queue)
    assert (ctx.program_builds, ctx.plan_count) == (builds, plans)
    queue.finish()
    assert_close(y.get(), F.layer_norm(to64(x.get()), (16,)), "float32", "again")


def test_layouts_it_cannot_read_in_place_are_refused(queue):
    x = cla.to_device(queue, host(8, (16, 8))).transpose()
    with pytest.raises(ValueError, match="contiguous copy"):
        clnorm.layer_norm(x, 16)
    other = cl.CommandQueue(cl.Context([queue.device]))
    w = cla.to_device(other, host(9, 16))
    # the library's own check, and its sentence
    with pytest.raises(ValueError, match="gamma belongs to another cl_context"):
        clnorm.layer_norm(cla.to_device(queue, host(10, (2, 16))), 16, w)
