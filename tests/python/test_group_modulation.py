"""group_norm's per-sample modulation (scale=, shift=: a diffusion UNet's scale-shift norm)
against torch float64: F.silu(F.group_norm(x) * (1 + scale) + shift), with row b of scale and
shift modulating samples b * N / B .. (b + 1) * N / B - 1. The shapes it takes, its gradients
against torch's autograd, and its refusals.

Few and small shapes, float32 for most variants: PoCL compiles each program specialization
once per machine, a few seconds each.
"""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import clnorm
from conftest import NP_DTYPES, TORCH_DTYPES, assert_close, dtype_name, make, param_as, to64

N, C, H, W, G = 4, 8, 3, 5, 4


def params(c, seed=7):
    g = torch.Generator().manual_seed(seed)
    return (1 + 0.5 * torch.randn(c, generator=g, dtype=torch.float64),
            0.5 * torch.randn(c, generator=g, dtype=torch.float64))


def wide(a):
    """a in float64, a torch tensor keeping its autograd graph (to64 detaches)."""
    return a.to(torch.float64) if isinstance(a, torch.Tensor) else to64(a)


def reference(x, groups, w, b, scale, shift, silu, eps=1e-5):
    """The float64 model: NCHW x; scale and shift of shape (B, C) or None."""
    x = wide(x)
    n = x.shape[0]
    y = F.group_norm(x, groups, w, b, eps)
    bcast = (slice(None), slice(None)) + (None,) * (x.dim() - 2)
    if scale is not None:
        s = wide(scale).reshape(-1, x.shape[1])
        y = y * (1 + s.repeat_interleave(n // s.shape[0], 0)[bcast])
    if shift is not None:
        h = wide(shift).reshape(-1, x.shape[1])
        y = y + h.repeat_interleave(n // h.shape[0], 0)[bcast]
    return F.silu(y) if silu else y


CASES = [("numpy", d) for d in NP_DTYPES] + [("torch", d) for d in TORCH_DTYPES]
IDS = ["%s-%s" % (k, np.dtype(d).name if k == "numpy" else str(d)[6:]) for k, d in CASES]


@pytest.mark.parametrize("kind,dtype", CASES, ids=IDS)
def test_scale_shift_silu(kind, dtype):
    # the ResBlock's out_norm: one (C,) row of scale and shift per sample, then the SiLU
    x = make(kind, dtype, (N, C, H, W), 1, offset=-2.0)
    w, b = params(C)
    scale = make(kind, dtype, (N, C), 2, spread=0.5)
    shift = make(kind, dtype, (N, C), 3)
    scale, shift = param_as(kind, to64(scale), x), param_as(kind, to64(shift), x)
    y = clnorm.group_norm(x, G, param_as(kind, w, x), param_as(kind, b, x), silu=True,
                          scale=scale, shift=shift)
    assert type(y) is type(x) and y.dtype == x.dtype and tuple(y.shape) == (N, C, H, W)
    assert_close(y, reference(x, G, w, b, scale, shift, True), dtype_name(x), "scale-shift")


@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_variants(kind):
    dt = np.float32 if kind == "numpy" else torch.float32
    x = make(kind, dt, (N, C, H, W), 4, offset=1.0)
    w, b = params(C, 5)
    wk, bk = param_as(kind, w, x), param_as(kind, b, x)
    s2, h2 = make(kind, dt, (2, C), 6, spread=0.5), make(kind, dt, (2, C), 7)
    s1 = make(kind, dt, (1, C), 8, spread=0.5)
    # B = 2 < N: each row modulates two consecutive samples; no SiLU
    assert_close(clnorm.group_norm(x, G, wk, bk, scale=s2, shift=h2),
                 reference(x, G, w, b, s2, h2, False), "float32", "B = 2")
    # B = 1: one row for the whole batch (what torch's broadcasting does)
    assert_close(clnorm.group_norm(x, 2, scale=s1, silu=True),
                 reference(x, 2, None, None, s1, None, True), "float32", "B = 1, scale only")
    # shift alone, without affine parameters, G = C (InstanceNorm)
    assert_close(clnorm.group_norm(x, C, shift=h2, silu=True),
                 reference(x, C, None, None, None, h2, True), "float32", "shift only")
    # the statistics are the normalization's, untouched by the modulation
    y, mean, rstd = clnorm.group_norm(x, G, wk, bk, scale=s2, shift=h2, return_stats=True)
    _, m_ref, r_ref = clnorm.group_norm(x, G, wk, bk, return_stats=True)
    assert_close(mean, m_ref, "float32", "mean")
    assert_close(rstd, r_ref, "float32", "rstd")
    # out=
    o = np.empty_like(x) if kind == "numpy" else torch.empty_like(x)
    assert clnorm.group_norm(x, G, wk, bk, scale=s2, shift=h2, silu=True, out=o) is o
    assert_close(o, reference(x, G, w, b, s2, h2, True), "float32", "out=")


def test_shapes_it_takes():
    x = make("torch", torch.float32, (N, C, H, W), 9)
    w, b = params(C, 10)
    emb = make("torch", torch.float32, (N, 2 * C), 11, spread=0.5)
    scale, shift = emb.chunk(2, dim=1)  # (N, C) views, rows 2C apart: read in place
    ref = reference(x, G, w, b, scale, shift, True)
    for s, h, what in ((scale, shift, "(B, C) chunks"),
                       (scale[:, :, None, None], shift[:, :, None, None], "(B, C, 1, 1)"),
                       (scale.contiguous(), shift, "one dense, one a chunk")):
        assert_close(clnorm.group_norm(x, G, w.float(), b.float(), silu=True, scale=s,
                                       shift=h), ref, "float32", what)
    # a float64 scale beside float32 x is converted to the parameter type
    assert_close(clnorm.group_norm(x, G, w.float(), b.float(), silu=True, scale=scale.double(),
                                   shift=shift), ref, "float32", "float64 scale")
    # (N, C) x: (B, C) is also x's rank
    x2 = make("torch", torch.float32, (N, C), 12)
    assert_close(clnorm.group_norm(x2, 2, scale=scale, shift=shift),
                 reference(x2, 2, None, None, scale, shift, False), "float32", "(N, C)")
    # a 5-d x (video, 3-d UNets): (B, C, 1, 1, 1)
    x5 = make("torch", torch.float32, (2, C, 2, 3, 2), 13)
    s5 = make("torch", torch.float32, (2, C, 1, 1, 1), 14, spread=0.5)
    assert_close(clnorm.group_norm(x5, G, scale=s5, silu=True),
                 reference(x5, G, None, None, s5, None, True), "float32", "5-d")


@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_channels_last(kind):
    dt = np.float32 if kind == "numpy" else torch.float32
    x = make(kind, dt, (N, C, H, W), 15, offset=0.5)
    w, b = params(C, 16)
    wk, bk = param_as(kind, w, x), param_as(kind, b, x)
    scale, shift = make(kind, dt, (2, C), 17, spread=0.5), make(kind, dt, (2, C), 18)
    ref = reference(x, G, w, b, scale, shift, True)
    # channels_last=True: x (N, H, W, C), scale (B, C) or (B, 1, 1, C)
    xl = x.transpose(0, 2, 3, 1).copy() if kind == "numpy" else \
        x.permute(0, 2, 3, 1).contiguous()
    for s, h in ((scale, shift), (scale[:, None, None, :], shift[:, None, None, :])):
        y = clnorm.group_norm(xl, G, wk, bk, channels_last=True, silu=True, scale=s, shift=h)
        assert tuple(y.shape) == (N, H, W, C)
        assert_close(y, ref.permute(0, 2, 3, 1), "float32", "channels_last=True")
    if kind == "torch":  # an NCHW tensor stored channels-last: scale (B, C, 1, 1) as in NCHW
        xt = x.contiguous(memory_format=torch.channels_last)
        y = clnorm.group_norm(xt, G, wk, bk, silu=True, scale=scale[:, :, None, None],
                              shift=shift)
        assert y.is_contiguous(memory_format=torch.channels_last)
        assert_close(y, ref, "float32", "torch.channels_last")


def _grads(fn, tensors, dy):
    leaves = [t.detach().clone().requires_grad_() for t in tensors]
    y = fn(*leaves)
    return y, torch.autograd.grad(y, leaves, dy)


@pytest.mark.parametrize("silu", [False, True])
@pytest.mark.parametrize("b_", [N, 2])
def test_gradients(silu, b_):
    x = make("torch", torch.float64, (N, C, H, W), 19, offset=1.5)
    w, b = params(C, 20)
    scale = make("torch", torch.float64, (b_, C), 21, spread=0.5)
    shift = make("torch", torch.float64, (b_, C), 22)
    dy = make("torch", torch.float64, (N, C, H, W), 23)
    names = ("dx", "dweight", "dbias", "dscale", "dshift")
    y, got = _grads(lambda x, w, b, s, h: clnorm.group_norm(x, G, w, b, silu=silu, scale=s,
                                                            shift=h),
                    (x, w, b, scale, shift), dy)
    y_ref, want = _grads(lambda x, w, b, s, h: reference(x, G, w, b, s, h, silu),
                         (x, w, b, scale, shift), dy)
    assert_close(y, y_ref, "float64", "y")
    for g, r, name in zip(got, want, names):
        assert g.shape == r.shape, name
        assert_close(g, r, "float64", name)


def test_gradients_through_views_and_channels_last():
    # the model's shapes: scale and shift chunks of one embedding projection, broadcast as
    # (B, C, 1, 1); x stored channels-last; the gradient reaches the projection
    x = make("torch", torch.float64, (N, C, H, W), 24).contiguous(memory_format=torch.channels_last)
    w, b = params(C, 25)
    emb = make("torch", torch.float64, (N, 2 * C), 26, spread=0.5)
    dy = make("torch", torch.float64, (N, C, H, W), 27)

    def model(norm):
        def f(x, w, b, emb):
            s, h = emb.chunk(2, dim=1)
            return norm(x, w, b, s[:, :, None, None], h[:, :, None, None])
        return f

    _, got = _grads(model(lambda x, w, b, s, h: clnorm.group_norm(x, G, w, b, silu=True,
                                                                  scale=s, shift=h)),
                    (x, w, b, emb), dy)
    _, want = _grads(model(lambda x, w, b, s, h: reference(x, G, w, b, s, h, True)),
                     (x, w, b, emb), dy)
    for g, r, name in zip(got, want, ("dx", "dweight", "dbias", "demb")):
        assert_close(g, r, "float64", name)


def test_gradients_float32_channels_last():
    # float32 x (N, H, W, C) with channels_last=True and B < N, against float64
    x = make("torch", torch.float32, (N, H, W, C), 28, offset=-1.0)
    w, b = (p.float() for p in params(C, 29))
    scale = make("torch", torch.float32, (2, 1, 1, C), 30, spread=0.5)
    shift = make("torch", torch.float32, (2, C), 31)
    dy = make("torch", torch.float32, (N, H, W, C), 32)
    _, got = _grads(lambda x, w, b, s, h: clnorm.group_norm(x, G, w, b, channels_last=True,
                                                            silu=True, scale=s, shift=h),
                    (x, w, b, scale, shift), dy)

    def ref(x, w, b, s, h):
        return reference(x.permute(0, 3, 1, 2), G, w, b, s.reshape(2, C), h, True) \
            .permute(0, 2, 3, 1)

    _, want = _grads(ref, tuple(to64(t) for t in (x, w, b, scale, shift)), to64(dy))
    for g, r, name in zip(got, want, ("dx", "dweight", "dbias", "dscale", "dshift")):
        assert g.dtype == torch.float32 and g.shape == r.shape, name
        assert_close(g, r, "float32", name)


def test_only_the_gradients_asked_for():
    x = make("torch", torch.float64, (N, C, H, W), 33)
    scale = make("torch", torch.float64, (N, C), 34).requires_grad_()
    shift = make("torch", torch.float64, (N, C), 35)  # no grad: no dshift
    y = clnorm.group_norm(x, G, scale=scale, shift=shift, silu=True)
    (gs,) = torch.autograd.grad(y.sum(), (scale,))
    sr = scale.detach().requires_grad_()
    (want,) = torch.autograd.grad(reference(x, G, None, None, sr, shift, True).sum(), (sr,))
    assert_close(gs, want, "float64", "dscale alone")


def test_shortcut_keeps_modulated_calls_apart():
    # The memoized repeated call is keyed without the modulation: a modulated call with the
    # same x, weight and bias as a remembered plain one must not be served by it, and a
    # modulated call leaves nothing to remember.
    rng = np.random.default_rng(36)
    x = rng.standard_normal((N, C, H, W)).astype(np.float32)
    s = rng.standard_normal((N, C)).astype(np.float32)
    plain = F.group_norm(torch.from_numpy(x).double(), G)
    with clnorm.Context(None) as ctx:
        for i in range(3):
            assert_close(clnorm.group_norm(x, G), plain, "float32", "plain %d" % i)
            assert_close(clnorm.group_norm(x, G, scale=s),
                         reference(x, G, None, None, s, None, False), "float32",
                         "modulated %d" % i)
        assert len(ctx.fast_calls) == 1
        ctx.close()


def test_refusals():
    x = np.ones((N, C, H, W), np.float32)
    xl = np.ones((N, H, W, C), np.float32)
    ok = np.ones((N, C), np.float32)
    with pytest.raises(ValueError, match=r"scale must have shape \(B, C\) or \(B, C, 1, \.\.\., "
                                         r"1\), C = 8 channels"):
        clnorm.group_norm(x, G, scale=np.ones((N, C + 1), np.float32))
    with pytest.raises(ValueError, match=r"shift must have shape"):
        clnorm.group_norm(x, G, shift=np.ones((N, C, 1), np.float32))  # not x's rank
    with pytest.raises(ValueError, match=r"\(B, C, 1, \.\.\., 1\)"):
        clnorm.group_norm(x, G, scale=np.ones((N, 1, 1, C), np.float32))  # NHWC's, on NCHW
    with pytest.raises(ValueError, match=r"\(B, 1, \.\.\., 1, C\)"):
        clnorm.group_norm(xl, G, channels_last=True, scale=np.ones((N, C, 1, 1), np.float32))
    with pytest.raises(ValueError, match=r"\(B, C, 1, \.\.\., 1\)"):
        clnorm.group_norm(x, G, scale=np.ones((N, C, 3, 1), np.float32))
    with pytest.raises(ValueError, match=r"shape"):
        clnorm.group_norm(x, G, scale=np.ones(C, np.float32))
    with pytest.raises(ValueError, match=r"B = 3 rows, which do not divide the batch N = 4"):
        clnorm.group_norm(x, G, scale=np.ones((3, C), np.float32))
    with pytest.raises(ValueError, match=r"B = 0 rows"):
        clnorm.group_norm(x, G, shift=np.ones((0, C), np.float32))
    with pytest.raises(ValueError, match=r"the same B \(got 4 and 2\)"):
        clnorm.group_norm(x, G, scale=ok, shift=np.ones((2, C), np.float32))
    with pytest.raises(TypeError, match=r"scale must hold real numbers"):
        clnorm.group_norm(x, G, scale=np.ones((N, C), np.complex64))
    xt = torch.ones(N, C, H, W, requires_grad=True)
    with pytest.raises(ValueError, match="out= does not take part in autograd"):
        clnorm.group_norm(xt, G, scale=torch.ones(N, C), out=torch.empty(N, C, H, W))


def test_empty_batch():
    # nothing to modulate: (0, C) rows, or rows for samples that are not there
    x = torch.zeros(0, C, 2)
    assert clnorm.group_norm(x, G, scale=torch.ones(0, C), shift=torch.ones(0, C),
                             silu=True).shape == (0, C, 2)
    assert clnorm.group_norm(x, G, scale=torch.ones(2, C)).shape == (0, C, 2)
