"""Statistics as results (return_stats) and precomputed statistics (mean=, rstd=), against
torch.native_layer_norm / native_group_norm and the formulas in float64; RMSNorm's per-sample
modulation; their gradients and their errors."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import clnorm
from conftest import assert_close, dtype_name, rms_norm_ref, to64
from test_functional import make, param_as, params

COLS = 40


def native_ln(x64, k, w=None, b=None, eps=1e-5):
    """torch.native_layer_norm over the trailing k dims: (y, mean, rstd) in float64."""
    return torch.native_layer_norm(x64, tuple(x64.shape[-k:]), w, b, eps)


def rms_rstd(x64, k, eps):
    dims = tuple(range(-k, 0))
    return torch.rsqrt(x64.pow(2).mean(dims, keepdim=True) + eps)


@pytest.mark.parametrize("kind,dtype", [("numpy", np.float32), ("torch", torch.bfloat16),
                                        ("torch", torch.float64)])
def test_layer_norm_returns_stats(kind, dtype):
    x = make(kind, dtype, (2, 3, COLS), 21, offset=4.0)
    w, b = params(COLS, 22)
    y, mean, rstd = clnorm.layer_norm(x, COLS, param_as(kind, w, x), param_as(kind, b, x),
                                      return_stats=True)
    yr, mr, rr = native_ln(to64(x), 1, w, b)
    assert tuple(mean.shape) == tuple(rstd.shape) == (2, 3, 1)  # native_layer_norm's shape
    # the statistics in the parameter type: float32 beside 16-bit x, as torch keeps them
    assert dtype_name(mean) == ("float64" if dtype_name(x) == "float64" else "float32")
    assert_close(y, yr, dtype_name(x), "y")
    # stats of the stored (rounded) x: float32 math, within float32's rounding of one result
    stats_tol = "float64" if dtype_name(x) == "float64" else "float32"
    assert_close(mean, mr, stats_tol, "mean")
    assert_close(rstd, rr, stats_tol, "rstd")
    # two normalized dims, with the fused add and its sum: (y, sum, mean, rstd)
    r = make(kind, dtype, (2, 3, COLS), 23)
    y, s, mean, rstd = clnorm.layer_norm(x, (3, COLS), residual=r, return_sum=True,
                                         return_stats=True)
    s64 = to64(x) + to64(r)
    yr, mr, rr = native_ln(s64, 2)
    assert tuple(mean.shape) == (2, 1, 1)
    assert_close(s, s64, dtype_name(x), "sum")
    assert_close(y, yr, dtype_name(x), "y of the sum")
    assert_close(mean, mr, stats_tol, "mean of the sum")
    assert_close(rstd, rr, stats_tol, "rstd of the sum")


def test_rms_norm_returns_rstd_and_modulates():
    x = make("torch", torch.float32, (3, 4, COLS), 24)
    w, _ = params(COLS, 25)
    y, rstd = clnorm.rms_norm(x, COLS, w.float(), 1e-6, return_stats=True)
    assert tuple(rstd.shape) == (3, 4, 1)
    assert_close(y, rms_norm_ref(to64(x), (COLS,), w, 1e-6), "float32", "y")
    assert_close(rstd, rms_rstd(to64(x), 1, 1e-6), "float32", "rstd")
    # per-sample modulation: y = rms(x) * w * (1 + scale[b]) + shift[b]
    scale, shift = make("torch", torch.float32, (3, COLS), 26), \
        make("torch", torch.float32, (3, 1, COLS), 27)
    y = clnorm.rms_norm(x, COLS, w.float(), 1e-6, scale=scale, shift=shift)
    ref = rms_norm_ref(to64(x), (COLS,), w, 1e-6) * (1 + to64(scale)[:, None]) + to64(shift)
    assert_close(y, ref, "float32", "modulated rms_norm")


@pytest.mark.parametrize("channels_last", [False, True])
def test_group_norm_returns_stats(channels_last):
    n, c, hw, g = 2, 8, (3, 5), 4
    x = make("torch", torch.float32, (n, c) + hw, 28, offset=2.0)
    w, b = params(c, 29)
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    y, mean, rstd = clnorm.group_norm(x, g, w.float(), b.float(), return_stats=True)
    yr, mr, rr = torch.native_group_norm(to64(x), w, b, n, c, 15, g, 1e-5)
    assert tuple(mean.shape) == tuple(rstd.shape) == (n, g)
    assert_close(y, yr, "float32", "y")
    assert_close(mean, mr, "float32", "mean")
    assert_close(rstd, rr, "float32", "rstd")


@pytest.mark.parametrize("kind,dtype", [("numpy", np.float32), ("torch", torch.float16),
                                        ("torch", torch.float64)])
def test_precomputed_stats(kind, dtype):
    x = make(kind, dtype, (2, 3, COLS), 30)
    w, b = params(COLS, 31)
    # statistics from elsewhere (frozen, or of another tensor): not x's own
    g = torch.Generator().manual_seed(32)
    mean64 = torch.randn(2, 3, 1, generator=g, dtype=torch.float64)
    rstd64 = 0.5 + torch.rand(2, 3, 1, generator=g, dtype=torch.float64)
    pdt = torch.float64 if dtype_name(x) == "float64" else torch.float32
    mean, rstd = mean64.to(pdt), rstd64.to(pdt)
    if kind == "numpy":
        mean, rstd = mean.numpy(), rstd.numpy()
    y = clnorm.layer_norm(x, COLS, param_as(kind, w, x), param_as(kind, b, x), mean=mean,
                          rstd=rstd)
    ref = (to64(x) - to64(mean)) * to64(rstd) * w + b
    assert_close(y, ref, dtype_name(x), "layer_norm, precomputed")
    # the shape without the trailing 1, and RMSNorm's rstd alone
    y = clnorm.rms_norm(x, COLS, rstd=rstd.reshape(2, 3))
    assert_close(y, to64(x) * to64(rstd), dtype_name(x), "rms_norm, precomputed")
    # the statistics returned by one call, given to another: the same y
    y1, m1, r1 = clnorm.layer_norm(x, COLS, return_stats=True)
    assert_close(clnorm.layer_norm(x, COLS, mean=m1, rstd=r1), to64(y1), dtype_name(x),
                 "round trip")


def test_stats_gradients():
    g = torch.Generator().manual_seed(33)
    x = torch.randn(2, 3, 5, generator=g, dtype=torch.float64).requires_grad_()
    w = (1 + torch.randn(5, generator=g, dtype=torch.float64)).requires_grad_()
    b = torch.randn(5, generator=g, dtype=torch.float64).requires_grad_()
    # return_stats keeps y differentiable; the statistics carry no gradient
    y, mean, rstd = clnorm.layer_norm(x, 5, w, b, return_stats=True)
    assert y.requires_grad and not mean.requires_grad and not rstd.requires_grad
    assert torch.autograd.gradcheck(
        lambda x, w, b: clnorm.layer_norm(x, 5, w, b, return_stats=True)[0], (x, w, b))
    assert torch.autograd.gradcheck(
        lambda x, w: clnorm.group_norm(x, 1, w[:3], return_stats=True)[0],
        (x, w))
    # precomputed statistics are constants: dx = rstd * dy * w (oneDNN's use_global_stats)
    mean = torch.randn(2, 3, 1, generator=g, dtype=torch.float64)
    rstd = 0.5 + torch.rand(2, 3, 1, generator=g, dtype=torch.float64)
    assert torch.autograd.gradcheck(
        lambda x, w, b: clnorm.layer_norm(x, 5, w, b, mean=mean, rstd=rstd), (x, w, b))
    assert torch.autograd.gradcheck(
        lambda x, w: clnorm.rms_norm(x, 5, w, rstd=rstd), (x, w))
    y = clnorm.layer_norm(x, 5, w, b, mean=mean, rstd=rstd)
    y.backward(torch.ones_like(y))
    assert_close(x.grad, (rstd * w).expand(2, 3, 5), "float64", "dx = rstd * dy * w")
    # RMSNorm's modulation through autograd
    scale = torch.randn(2, 5, generator=g, dtype=torch.float64).requires_grad_()
    shift = torch.randn(2, 5, generator=g, dtype=torch.float64).requires_grad_()
    assert torch.autograd.gradcheck(
        lambda x, w, s, t: clnorm.rms_norm(x, 5, w, 1e-6, scale=s, shift=t),
        (x, w, scale, shift))


def test_returned_stats_do_not_reach_the_backward():
    """The backward keeps its own copy: changing the returned statistics in place changes
    nothing in the gradients."""
    g = torch.Generator().manual_seed(34)
    x = torch.randn(4, 6, generator=g, dtype=torch.float64).requires_grad_()
    y, mean, rstd = clnorm.layer_norm(x, 6, return_stats=True)
    mean.add_(100.0)
    rstd.mul_(3.0)
    dy = torch.randn(4, 6, generator=g, dtype=torch.float64)
    y.backward(dy)
    xr = x.detach().clone().requires_grad_()
    F.layer_norm(xr, (6,)).backward(dy)
    assert_close(x.grad, xr.grad, "float64", "dx")


def test_stats_errors():
    x = np.random.default_rng(0).standard_normal((4, COLS)).astype(np.float32)
    m = np.zeros((4, 1), np.float32)
    r = np.ones((4, 1), np.float32)
    with pytest.raises(ValueError, match="need both mean and rstd"):
        clnorm.layer_norm(x, COLS, mean=m)
    with pytest.raises(ValueError, match="need both mean and rstd"):
        clnorm.layer_norm(x, COLS, rstd=r)
    with pytest.raises(ValueError, match="exclude each other"):
        clnorm.layer_norm(x, COLS, mean=m, rstd=r, return_stats=True)
    with pytest.raises(ValueError, match=r"rstd must have shape \[4\] or \[4, 1\]"):
        clnorm.layer_norm(x, COLS, mean=m, rstd=np.ones(5, np.float32))
    with pytest.raises(TypeError):
        clnorm.rms_norm(x, COLS, mean=m, rstd=r)  # RMSNorm has no mean argument
    t = torch.from_numpy(x)
    with pytest.raises(ValueError, match="pass it detached"):
        clnorm.layer_norm(t, COLS, mean=torch.zeros(4, 1, requires_grad=True),
                          rstd=torch.ones(4, 1))
    # an empty batch: statistics of no rows
    y, mean, rstd = clnorm.layer_norm(np.zeros((0, 3, COLS), np.float32), COLS,
                                      return_stats=True)
    assert y.shape == (0, 3, COLS) and mean.shape == rstd.shape == (0, 3, 1)
