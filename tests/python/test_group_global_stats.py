"""GroupNorm with precomputed statistics (group_norm's mean=, rstd=: oneDNN's
use_global_stats) and eval-mode InstanceNorm built on it (instance_norm(use_input_stats=False),
clnorm.nn's InstanceNorm modules in eval mode), against torch float64: the forward, the
gradients against torch's autograd with the statistics held constant, the layouts, and the
refusals.

Few and small shapes: PoCL compiles each program specialization once per machine.
"""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import clnorm
import clnorm.nn
from conftest import NP_DTYPES, TORCH_DTYPES, assert_close, dtype_name, make, param_as, to64

N, C, H, W, G = 4, 8, 3, 5, 4


def stats(n, g, seed=11):
    """A mean and an rstd of shape (n, g), float64: statistics gathered elsewhere."""
    gen = torch.Generator().manual_seed(seed)
    return (0.5 * torch.randn(n, g, generator=gen, dtype=torch.float64),
            1 + 0.2 * torch.rand(n, g, generator=gen, dtype=torch.float64))


def reference(x, groups, w, b, mean, rstd, silu=False):
    """The float64 model, NCHW: each group's elements (x - mean[n, g]) * rstd[n, g], then the
    affine and the SiLU. Differentiable in x, w and b only (the statistics are constants)."""
    x = x.to(torch.float64) if isinstance(x, torch.Tensor) else to64(x)
    n, c = x.shape[:2]
    xg = x.reshape(n, groups, -1)
    y = ((xg - to64(mean)[:, :, None]) * to64(rstd)[:, :, None]).reshape(x.shape)
    bcast = (None, slice(None)) + (None,) * (x.dim() - 2)
    if w is not None:
        y = y * w[bcast]
    if b is not None:
        y = y + b[bcast]
    return F.silu(y) if silu else y


CASES = [("numpy", d) for d in NP_DTYPES] + [("torch", d) for d in TORCH_DTYPES]
IDS = ["%s-%s" % (k, np.dtype(d).name if k == "numpy" else str(d)[6:]) for k, d in CASES]


@pytest.mark.parametrize("kind,dtype", CASES, ids=IDS)
def test_forward(kind, dtype):
    x = make(kind, dtype, (N, C, H, W), 1, offset=0.5)
    w, b = 1 + 0.5 * torch.randn(C, dtype=torch.float64), 0.5 * torch.randn(C, dtype=torch.float64)
    mean, rstd = stats(N, G)
    y = clnorm.group_norm(x, G, param_as(kind, w, x), param_as(kind, b, x), silu=True,
                          mean=param_as(kind, mean, x), rstd=param_as(kind, rstd, x))
    assert type(y) is type(x) and y.dtype == x.dtype and tuple(y.shape) == (N, C, H, W)
    ref = reference(x, G, w, b, param_as(kind, mean, x), param_as(kind, rstd, x), silu=True)
    assert_close(y, ref, dtype_name(x), "precomputed statistics")


def test_own_statistics_give_group_norm():
    # given back the statistics a call computed, the forward is that call's (to rounding: the
    # call itself normalizes about a shift, and the mean it returns is rounded once more)
    x = make("torch", torch.float32, (N, C, H, W), 2, offset=-1.0)
    y, mean, rstd = clnorm.group_norm(x, G, return_stats=True)
    assert_close(clnorm.group_norm(x, G, mean=mean, rstd=rstd), y, "float32", "own statistics")


@pytest.mark.parametrize("silu", [False, True])
def test_channels_last_and_modulated(silu):
    x = make("torch", torch.float64, (N, H, W, C), 3)
    scale, shift = make("torch", torch.float64, (N, C), 4, spread=0.5), \
        make("torch", torch.float64, (N, C), 5)
    mean, rstd = stats(N, G, 6)
    y = clnorm.group_norm(x, G, channels_last=True, silu=silu, scale=scale, shift=shift,
                          mean=mean, rstd=rstd)
    nchw = x.permute(0, 3, 1, 2)
    z = reference(nchw, G, None, None, mean, rstd) * (1 + scale[:, :, None, None]) \
        + shift[:, :, None, None]
    ref = (F.silu(z) if silu else z).permute(0, 2, 3, 1)
    assert_close(y, ref, "float64", "channels_last, modulated")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_gradients(dtype):
    # dx, dweight, dbias against autograd of the float64 model with the statistics constant
    x = make("torch", dtype, (N, C, H, W), 7).requires_grad_()
    w = (1 + 0.5 * torch.randn(C, dtype=torch.float64)).to(dtype).requires_grad_()
    b = (0.5 * torch.randn(C, dtype=torch.float64)).to(dtype).requires_grad_()
    mean, rstd = (t.to(dtype) for t in stats(N, G, 8))
    dy = make("torch", torch.float64, (N, C, H, W), 9)
    y = clnorm.group_norm(x, G, w, b, silu=True, mean=mean, rstd=rstd)
    gx, gw, gb = torch.autograd.grad(y, (x, w, b), dy.to(dtype))
    x64, w64, b64 = (t.detach().to(torch.float64).requires_grad_() for t in (x, w, b))
    ref = reference(x64, G, w64, b64, mean, rstd, silu=True)
    rx, rw, rb = torch.autograd.grad(ref, (x64, w64, b64), dy)
    name = dtype_name(x)
    assert_close(gx, rx, name, "dx")
    assert_close(gw, rw, name, "dweight")
    assert_close(gb, rb, name, "dbias")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
@pytest.mark.parametrize("channels_last", [False, True])
def test_instance_norm_eval(dtype, channels_last):
    # torch's F.instance_norm(use_input_stats=False): the running statistics per channel
    x = make("torch", dtype, (N, C, H, W), 10, offset=1.0)
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    rm = make("torch", torch.float32, (C,), 11, offset=1.0, spread=0.3)
    rv = make("torch", torch.float32, (C,), 12, offset=1.5, spread=0.2)
    w, b = make("torch", torch.float32, (C,), 13, 1.0, 0.5), make("torch", torch.float32, (C,), 14)
    rm0, rv0 = rm.clone(), rv.clone()
    y = clnorm.instance_norm(x, rm, rv, w, b, use_input_stats=False, eps=1e-3)
    ref = F.instance_norm(x.to(torch.float64), rm.double(), rv.double(), w.double(), b.double(),
                          use_input_stats=False, eps=1e-3)
    assert y.dtype == x.dtype
    assert_close(y, ref, dtype_name(x), "eval-mode instance_norm")
    assert torch.equal(rm, rm0) and torch.equal(rv, rv0)  # read, never updated


def test_instance_norm_eval_gradients():
    x = make("torch", torch.float64, (2, 3, 4, 1), 15).requires_grad_()
    rm, rv = torch.tensor([0.1, -0.2, 0.3]), torch.tensor([1.0, 2.0, 0.5])
    w = torch.tensor([1.5, 0.5, -1.0], dtype=torch.float64, requires_grad=True)
    b = torch.tensor([0.0, 0.25, -0.5], dtype=torch.float64, requires_grad=True)
    dy = make("torch", torch.float64, (2, 3, 4, 1), 16)
    got = torch.autograd.grad(clnorm.instance_norm(x, rm, rv, w, b, use_input_stats=False),
                              (x, w, b), dy)
    want = torch.autograd.grad(F.instance_norm(x, rm.double(), rv.double(), w, b,
                                               use_input_stats=False), (x, w, b), dy)
    for g, r, what in zip(got, want, ("dx", "dweight", "dbias")):
        assert_close(g, r, "float64", what)


def test_instance_norm_module_eval():
    # clnorm.nn.InstanceNorm2d in eval mode with tracked statistics: torch's module's answer
    torch.manual_seed(0)
    ref = torch.nn.InstanceNorm2d(C, affine=True, track_running_stats=True).double()
    mine = clnorm.nn.InstanceNorm2d(C, affine=True, track_running_stats=True).double()
    x = make("torch", torch.float64, (N, C, H, W), 17, offset=2.0)
    mine.load_state_dict(ref.state_dict())
    for m in (ref, mine):  # a training step gives them running statistics
        m.train()
        m(x)
        m.eval()
    assert_close(mine.running_mean, ref.running_mean, "float64", "running_mean")
    x2 = make("torch", torch.float64, (N, C, H, W), 18)
    assert_close(mine(x2), ref(x2), "float64", "eval")


def test_refusals():
    x = np.ones((N, C, H, W), np.float32)
    m, r = np.zeros((N, G), np.float32), np.ones((N, G), np.float32)
    with pytest.raises(ValueError, match="need both mean and rstd"):
        clnorm.group_norm(x, G, mean=m)
    with pytest.raises(ValueError, match=r"rstd must have shape \[4, 4\] \(one value per "
                                         r"sample and group\)"):
        clnorm.group_norm(x, G, mean=m, rstd=np.ones((N, C), np.float32))
    with pytest.raises(ValueError, match="return_stats=True and precomputed statistics"):
        clnorm.group_norm(x, G, mean=m, rstd=r, return_stats=True)
    t = torch.ones(N, C, H, W, requires_grad=True)
    with pytest.raises(ValueError, match="mean is a constant here"):
        clnorm.group_norm(t, G, mean=torch.zeros(N, G, requires_grad=True),
                          rstd=torch.ones(N, G))
    y = np.full((N, C, H, W), 7.0, np.float32)
    with pytest.raises(ValueError):
        clnorm.group_norm(x, G, mean=m, rstd=r[:, :2], out=y)
    assert (y == 7.0).all()  # nothing written
