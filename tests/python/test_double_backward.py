"""Second derivatives (torch.autograd.grad with create_graph=True): gradgradcheck in float64
over every operation's inputs and incoming gradients, a WGAN-GP gradient penalty against
torch's own modules, and the first-order values unchanged by create_graph."""
import pytest
import torch
import torch.nn.functional as F

import clnorm
import clnorm.nn as cnn
from conftest import assert_close


def rand(*shape, seed=0, dtype=torch.float64, offset=0.0, grad=True):
    g = torch.Generator().manual_seed(seed)
    t = (torch.randn(*shape, generator=g, dtype=torch.float64) + offset).to(dtype)
    return t.requires_grad_() if grad else t


def near_one(*shape, seed):
    return (1 + 0.5 * rand(*shape, seed=seed, grad=False)).requires_grad_()


def gradgrad(f, inputs):
    """gradcheck and gradgradcheck: the second derivatives by every input and by the incoming
    gradients (gradgradcheck perturbs those too), against finite differences of the
    library's first-order backward."""
    assert torch.autograd.gradcheck(f, inputs)
    assert torch.autograd.gradgradcheck(f, inputs)


def test_layer_norm():
    x, w, b = rand(3, 2, 5, seed=1, offset=3.0), near_one(2, 5, seed=2), rand(2, 5, seed=3)
    gradgrad(lambda x, w, b: clnorm.layer_norm(x, (2, 5), w, b), (x, w, b))
    gradgrad(lambda x: clnorm.layer_norm(x, (2, 5)), (x,))  # no weight, no bias
    gradgrad(lambda x, w: clnorm.layer_norm(x, 5, w[0]), (x, w))  # bias=False


def test_rms_norm():
    x, w = rand(4, 6, seed=4), near_one(6, seed=5)
    gradgrad(lambda x, w: clnorm.rms_norm(x, 6, w, 1e-6), (x, w))
    gradgrad(lambda x: clnorm.rms_norm(x, 6), (x,))


@pytest.mark.parametrize("base", ["layer", "rms"])
def test_fused_add_and_sum(base):
    x, r, w = rand(3, 5, seed=6), rand(3, 5, seed=7), near_one(5, seed=8)
    b = rand(5, seed=9)

    def f(x, r, w, b):
        if base == "layer":
            y, s = clnorm.layer_norm(x, 5, w, b, residual=r, return_sum=True)
        else:
            y, s = clnorm.rms_norm(x, 5, w, 1e-6, residual=r, return_sum=True)
            y = y + 0 * b
        return y, s * s  # the sum's gradient flows back through dsum

    gradgrad(f, (x, r, w, b))


@pytest.mark.parametrize("base", ["layer", "rms"])
def test_modulation(base):
    x = rand(2, 3, 4, seed=10)
    scale, shift, w = rand(2, 4, seed=11), rand(2, 1, 4, seed=12), near_one(4, seed=13)
    norm = clnorm.layer_norm if base == "layer" else clnorm.rms_norm
    gradgrad(lambda x, s, t, w: norm(x, 4, w, scale=s, shift=t), (x, scale, shift, w))


def test_row_precomputed_statistics():
    x, w, b = rand(3, 6, seed=14), near_one(6, seed=15), rand(6, seed=16)
    mean = rand(3, seed=17, grad=False)
    rstd = 1 + rand(3, seed=18, grad=False).abs()
    gradgrad(lambda x, w, b: clnorm.layer_norm(x, 6, w, b, mean=mean, rstd=rstd), (x, w, b))
    gradgrad(lambda x, w: clnorm.rms_norm(x, 6, w, rstd=rstd), (x, w))


@pytest.mark.parametrize("layout", ["nchw", "channels_last_arg", "channels_last_memory"])
@pytest.mark.parametrize("silu", [False, True])
def test_group_norm(layout, silu):
    x = rand(2, 4, 3, 2, seed=19)
    if layout == "channels_last_arg":  # (N, *spatial, C), read as NHWC
        x = rand(2, 3, 2, 4, seed=19)
    elif layout == "channels_last_memory":  # (N, C, H, W) stored NHWC, read in place
        x = x.detach().contiguous(memory_format=torch.channels_last).requires_grad_()
    w, b = near_one(4, seed=20), rand(4, seed=21)
    gradgrad(lambda x, w, b: clnorm.group_norm(
        x, 2, w, b, silu=silu, channels_last=layout == "channels_last_arg"), (x, w, b))


@pytest.mark.parametrize("channels_last", [False, True])
def test_group_norm_modulation(channels_last):
    # B = 2 rows of scale and shift for N = 4 samples, then the SiLU
    x = rand(4, 4, 3, seed=22)
    if channels_last:
        x = rand(4, 3, 4, seed=22)
    w, b = near_one(4, seed=23), rand(4, seed=24)
    scale, shift = rand(2, 4, seed=25), rand(2, 4, seed=26)
    gradgrad(lambda x, w, b, s, t: clnorm.group_norm(
        x, 2, w, b, silu=True, scale=s, shift=t, channels_last=channels_last),
        (x, w, b, scale, shift))


def test_group_norm_precomputed_and_instance_norm_eval():
    x, w, b = rand(2, 4, 5, seed=27), near_one(4, seed=28), rand(4, seed=29)
    mean = rand(2, 2, seed=30, grad=False)
    rstd = 1 + rand(2, 2, seed=31, grad=False).abs()
    gradgrad(lambda x, w, b: clnorm.group_norm(x, 2, w, b, mean=mean, rstd=rstd, silu=True),
             (x, w, b))
    m = cnn.InstanceNorm1d(4, affine=True, track_running_stats=True, dtype=torch.float64)
    with torch.no_grad():
        m.running_mean.copy_(rand(4, seed=32, grad=False))
        m.running_var.copy_(1 + rand(4, seed=33, grad=False).abs())
    m.eval()
    gradgrad(m, (x,))


def test_instance_norm_training():
    m = cnn.InstanceNorm2d(3, affine=True, dtype=torch.float64)
    gradgrad(m, (rand(2, 3, 2, 3, seed=34),))


def critic(norm):
    """A small WGAN-GP critic: the paper (Gulrajani et al., 2017) replaces batch
    normalization by layer normalization in it, since the penalty is per sample."""
    torch.manual_seed(35)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), norm(16), torch.nn.SiLU(),
                               torch.nn.Linear(16, 16), norm(16), torch.nn.SiLU(),
                               torch.nn.Linear(16, 1))


def penalty_gradients(model, x):
    x = x.detach().requires_grad_()
    (gx,) = torch.autograd.grad(model(x).sum(), x, create_graph=True)
    penalty = ((gx.norm(dim=1) - 1) ** 2).mean()
    penalty.backward()
    # the last layer's bias does not reach the penalty: no gradient, in either model
    return [p.grad for p in model.parameters() if p.grad is not None]


@pytest.mark.parametrize("norm", ["layer", "rms"])
def test_gradient_penalty_against_torch(norm):
    x = rand(32, 8, seed=36, dtype=torch.float32, grad=False)
    if norm == "layer":
        ours, theirs = critic(cnn.LayerNorm), critic(torch.nn.LayerNorm)
    else:  # torch 1.13 has no RMSNorm module: our module beside its formula in torch ops
        class TorchRMSNorm(torch.nn.Module):
            def __init__(self, n):
                super().__init__()
                self.weight = torch.nn.Parameter(torch.ones(n))

            def forward(self, x):
                return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight

        ours = critic(lambda n: cnn.RMSNorm(n, eps=1e-6))
        theirs = critic(TorchRMSNorm)
    theirs.load_state_dict(ours.state_dict())
    compare_penalties(ours, theirs, x)


def compare_penalties(ours, theirs, x):
    got, ref = penalty_gradients(ours, x), penalty_gradients(theirs, x)
    assert len(got) == len(ref) == len(list(ours.parameters())) - 1
    for g, r in zip(got, ref):
        assert_close(g, r, "float32", "penalty gradient")


def test_group_norm_penalty_against_torch():
    """A convolutional critic with GroupNorm + SiLU, channels-last as a UNet runs it."""
    torch.manual_seed(37)
    ours = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), cnn.GroupNorm(4, 8), torch.nn.SiLU(),
                               torch.nn.Flatten(), torch.nn.Linear(8 * 4 * 4, 1))
    theirs = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.GroupNorm(4, 8),
                                 torch.nn.SiLU(), torch.nn.Flatten(),
                                 torch.nn.Linear(8 * 4 * 4, 1))
    theirs.load_state_dict(ours.state_dict())
    with torch.no_grad():
        ours[1].weight.uniform_(0.5, 1.5)
        ours[1].bias.uniform_(-0.5, 0.5)
        theirs[1].weight.copy_(ours[1].weight)
        theirs[1].bias.copy_(ours[1].bias)
    x = rand(4, 3, 6, 6, seed=38, dtype=torch.float32, grad=False)
    compare_penalties(ours, theirs, x.contiguous(memory_format=torch.channels_last))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_first_order_values_are_the_librarys(dtype):
    """create_graph=True changes the gradients' graph, not their values: the same bits as
    without it (the library's), in every storage type."""
    x = rand(6, 40, seed=39, dtype=dtype)
    w, b = near_one(40, seed=40).float(), rand(40, seed=41, dtype=torch.float32)
    dy = rand(6, 40, seed=42, dtype=dtype, grad=False)
    plain = torch.autograd.grad(clnorm.layer_norm(x, 40, w, b), (x, w, b), dy)
    graph = torch.autograd.grad(clnorm.layer_norm(x, 40, w, b), (x, w, b), dy,
                                create_graph=True)
    # dx and dgamma depend on x; dbeta = sum(dy) on nothing that requires a gradient
    assert [g.requires_grad for g in graph] == [True, True, False]
    for p, g in zip(plain, graph):
        assert g.dtype == p.dtype and torch.equal(p, g.detach())


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_second_derivatives_in_16_bit_storage(dtype):
    """The graph's math type is float32, as the kernels': a Hessian-vector product of a 16-bit
    GroupNorm + SiLU against float64 within the storage type's rounding."""
    x = rand(2, 4, 6, seed=43, dtype=dtype)
    w = near_one(4, seed=44).float()
    v = rand(2, 4, 6, seed=45, dtype=dtype, grad=False)
    (gx,) = torch.autograd.grad((clnorm.group_norm(x, 2, w, silu=True) ** 2).sum(), x,
                                create_graph=True)
    (hv,) = torch.autograd.grad(gx, x, v)
    x64 = x.detach().double().requires_grad_()
    y64 = F.silu(F.group_norm(x64, 2, w.detach().double()))
    (g64,) = torch.autograd.grad((y64 ** 2).sum(), x64, create_graph=True)
    (h64,) = torch.autograd.grad(g64, x64, v.double())
    assert hv.dtype == dtype
    assert_close(hv, h64, str(dtype)[6:], "Hessian-vector product")


def test_empty_batch():
    x = rand(0, 4, 3, seed=46)
    w = near_one(4, seed=47)
    y = clnorm.group_norm(x, 2, w)
    gx, gw = torch.autograd.grad(y.sum() + w.sum(), (x, w), create_graph=True)
    assert gx.shape == (0, 4, 3) and torch.equal(gw.detach(), torch.ones(4, dtype=torch.float64))
