"""Every function, on every kind of host array and dtype, against torch float64.

Shapes are few and small on purpose: PoCL compiles each program specialization (op, dtype,
build options) once per machine, a few seconds each, so the tests reuse them.
"""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import clnorm
from conftest import NP_DTYPES, TORCH_DTYPES, assert_close, dtype_name, rms_norm_ref, to64

ROWS, COLS = 6, 40


def make(kind, dtype, shape, seed, offset=0.0):
    g = torch.Generator().manual_seed(seed)
    t = torch.randn(shape, generator=g, dtype=torch.float64) + offset
    if kind == "numpy":
        return t.numpy().astype(dtype)
    return t.to(dtype)


def params(cols, seed=7):
    g = torch.Generator().manual_seed(seed)
    return (1 + 0.5 * torch.randn(cols, generator=g, dtype=torch.float64),
            0.5 * torch.randn(cols, generator=g, dtype=torch.float64))


def param_as(kind, p, like):
    """Parameters as the caller of that kind would hold them: float32 beside 16-bit x."""
    if kind == "numpy":
        return p.numpy().astype(np.float64 if like.dtype == np.float64 else np.float32)
    return p.to(torch.float64 if like.dtype == torch.float64 else torch.float32)


CASES = [("numpy", d) for d in NP_DTYPES] + [("torch", d) for d in TORCH_DTYPES]
IDS = ["%s-%s" % (k, np.dtype(d).name if k == "numpy" else str(d)[6:]) for k, d in CASES]


@pytest.mark.parametrize("kind,dtype", CASES, ids=IDS)
def test_layer_norm(kind, dtype):
    x = make(kind, dtype, (2, 3, COLS), 1, offset=3.0)
    w, b = params(COLS)
    y = clnorm.layer_norm(x, (COLS,), param_as(kind, w, x), param_as(kind, b, x), eps=1e-5)
    assert type(y) is type(x) and y.dtype == x.dtype and tuple(y.shape) == tuple(x.shape)
    assert_close(y, F.layer_norm(to64(x), (COLS,), w, b, 1e-5), dtype_name(x), "layer_norm")
    # no affine, two normalized dims
    y = clnorm.layer_norm(x, (3, COLS))
    assert_close(y, F.layer_norm(to64(x), (3, COLS)), dtype_name(x), "layer_norm 2 dims")


@pytest.mark.parametrize("kind,dtype", CASES, ids=IDS)
def test_rms_norm(kind, dtype):
    x = make(kind, dtype, (ROWS, COLS), 2)
    w, _ = params(COLS)
    y = clnorm.rms_norm(x, [COLS], param_as(kind, w, x), eps=1e-6)
    assert type(y) is type(x) and y.dtype == x.dtype
    assert_close(y, rms_norm_ref(to64(x), (COLS,), w, 1e-6), dtype_name(x), "rms_norm")
    # eps None is the dtype's machine epsilon, as F.rms_norm
    eps = float(np.finfo(x.dtype).eps) if kind == "numpy" else torch.finfo(x.dtype).eps
    assert_close(clnorm.rms_norm(x, COLS), rms_norm_ref(to64(x), (COLS,), None, eps),
                 dtype_name(x), "rms_norm eps None")


@pytest.mark.parametrize("kind,dtype", CASES, ids=IDS)
@pytest.mark.parametrize("op", ["layer", "rms"])
def test_fused_add(kind, dtype, op):
    x = make(kind, dtype, (ROWS, COLS), 3)
    r = make(kind, dtype, (ROWS, COLS), 4, offset=1.0)
    w, b = params(COLS)
    s64 = to64(x) + to64(r)
    if op == "layer":
        y, s = clnorm.layer_norm(x, COLS, param_as(kind, w, x), param_as(kind, b, x),
                                 residual=r, return_sum=True)
        ref = F.layer_norm(s64, (COLS,), w, b, 1e-5)
    else:
        y, s = clnorm.rms_norm(x, COLS, param_as(kind, w, x), 1e-6, residual=r,
                               return_sum=True)
        ref = rms_norm_ref(s64, (COLS,), w, 1e-6)
    assert s.dtype == x.dtype and y.dtype == x.dtype
    assert_close(s, s64, dtype_name(x), "sum")
    # y normalizes the exact sum, not the rounded one
    assert_close(y, ref, dtype_name(x), "add + norm")
    y_only = (clnorm.layer_norm(x, COLS, residual=r) if op == "layer"
              else clnorm.rms_norm(x, COLS, None, 1e-6, residual=r))
    ref = (F.layer_norm(s64, (COLS,)) if op == "layer" else rms_norm_ref(s64, (COLS,), None, 1e-6))
    assert_close(y_only, ref, dtype_name(x), "add + norm, no sum")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_fused_add_residual_in_fp32(dtype):
    x = make("torch", dtype, (ROWS, COLS), 5)
    r = make("torch", torch.float32, (ROWS, COLS), 6)
    y, s = clnorm.layer_norm(x, COLS, residual=r, return_sum=True)
    assert y.dtype == dtype and s.dtype == torch.float32
    s64 = to64(x) + to64(r)
    assert_close(s, s64, "float32", "float32 sum")
    assert_close(y, F.layer_norm(s64, (COLS,)), dtype_name(x), "y")


@pytest.mark.parametrize("kind,dtype", CASES, ids=IDS)
def test_group_norm(kind, dtype):
    n, c, h, w_, g = 2, 8, 3, 5, 4
    x = make(kind, dtype, (n, c, h, w_), 8, offset=-2.0)
    w, b = params(c)
    y = clnorm.group_norm(x, g, param_as(kind, w, x), param_as(kind, b, x), 1e-5)
    ref = F.group_norm(to64(x), g, w, b, 1e-5)
    assert type(y) is type(x) and y.dtype == x.dtype
    assert_close(y, ref, dtype_name(x), "group_norm")
    y = clnorm.group_norm(x, g, param_as(kind, w, x), param_as(kind, b, x), silu=True)
    assert_close(y, F.silu(ref), dtype_name(x), "group_norm + silu")
    # channels last: x of shape (N, H, W, C)
    xl = x.transpose(0, 2, 3, 1).copy() if kind == "numpy" else x.permute(0, 2, 3, 1).contiguous()
    y = clnorm.group_norm(xl, g, param_as(kind, w, x), param_as(kind, b, x), channels_last=True)
    assert tuple(y.shape) == (n, h, w_, c)
    assert_close(y, ref.permute(0, 2, 3, 1), dtype_name(x), "group_norm channels_last")


def test_group_norm_torch_channels_last_memory_format():
    x = make("torch", torch.float32, (2, 8, 4, 3), 9).contiguous(memory_format=torch.channels_last)
    w, b = params(8)
    y = clnorm.group_norm(x, 2, w.float(), b.float())
    assert y.is_contiguous(memory_format=torch.channels_last)  # read and written in place
    assert_close(y, F.group_norm(to64(x), 2, w, b), "float32", "channels_last memory format")
    # no spatial dims, and instance norm (G = C)
    x2 = make("torch", torch.float64, (3, 8), 10)
    assert_close(clnorm.group_norm(x2, 8), F.group_norm(x2, 8), "float64", "(N, C), G = C")


@pytest.mark.parametrize("kind,dtype", [("numpy", np.float32), ("torch", torch.float32),
                                        ("torch", torch.bfloat16), ("numpy", np.float64)])
def test_instance_norm(kind, dtype):
    n, c, h, w_ = 3, 5, 4, 3
    x = make(kind, dtype, (n, c, h, w_), 21, offset=1.5)
    w, b = params(c, seed=22)
    rtype = np.float64 if dtype == np.float64 else np.float32
    g = torch.Generator().manual_seed(23)
    rm0, rv0 = torch.randn(c, generator=g, dtype=torch.float64), \
        torch.rand(c, generator=g, dtype=torch.float64) + 0.5
    if kind == "numpy":
        rm, rv = rm0.numpy().astype(rtype), rv0.numpy().astype(rtype)
    else:
        rm, rv = rm0.float(), rv0.float()
    rm_ref, rv_ref = rm0.clone(), rv0.clone()
    y = clnorm.instance_norm(x, rm, rv, param_as(kind, w, x), param_as(kind, b, x),
                             momentum=0.3, eps=1e-4)
    ref = F.instance_norm(to64(x), rm_ref, rv_ref, w, b, True, 0.3, 1e-4)
    assert type(y) is type(x) and y.dtype == x.dtype
    assert_close(y, ref, dtype_name(x), "instance_norm")
    # the running statistics, updated in place as torch updates them (unbiased variances)
    rtol = "float64" if dtype == np.float64 else "float32"
    assert_close(rm, rm_ref, rtol, "running_mean")
    assert_close(rv, rv_ref, rtol, "running_var")
    # no running statistics, channels last, fused SiLU
    xl = x.transpose(0, 2, 3, 1).copy() if kind == "numpy" else x.permute(0, 2, 3, 1).contiguous()
    y = clnorm.instance_norm(xl, channels_last=True, silu=True)
    assert_close(y, F.silu(F.instance_norm(to64(x))).permute(0, 2, 3, 1), dtype_name(x),
                 "instance_norm channels_last + silu")


@pytest.mark.parametrize("kind,dtype", [("torch", torch.float32), ("torch", torch.bfloat16),
                                        ("numpy", np.float64)])
def test_modulation(kind, dtype):
    b_, t_, c = 3, 4, COLS
    x = make(kind, dtype, (b_, t_, c), 11)
    proj = make(kind, np.float32 if kind == "numpy" and dtype != np.float64 else
                (np.float64 if kind == "numpy" else torch.float32), (b_, 6 * c), 12)
    # adaLN: shift and scale are chunks of one (B, 6C) projection, read in place (mod_stride)
    shift, scale = proj[:, :c], proj[:, c:2 * c]
    w, bias = params(c)
    y = clnorm.layer_norm(x, c, param_as(kind, w, x), param_as(kind, bias, x), scale=scale,
                          shift=shift)
    ref = F.layer_norm(to64(x), (c,), w, bias) * (1 + to64(scale)[:, None]) + to64(shift)[:, None]
    assert_close(y, ref, dtype_name(x), "modulated layer_norm")
    # scale alone, given as (B, 1, C)
    s3 = scale.reshape(b_, 1, c)
    y = clnorm.layer_norm(x, c, scale=s3)
    assert_close(y, F.layer_norm(to64(x), (c,)) * (1 + to64(s3)), dtype_name(x), "scale only")


@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_strided_and_noncontiguous(kind):
    wide = make(kind, np.float32 if kind == "numpy" else torch.float32, (ROWS, 2 * COLS), 13)
    w, b = params(COLS)
    wp, bp = param_as(kind, w, wide), param_as(kind, b, wide)
    # rows strided: read in place
    x = wide[:, :COLS]
    assert_close(clnorm.layer_norm(x, COLS, wp, bp), F.layer_norm(to64(x), (COLS,), w, b),
                 "float32", "strided rows")
    x = wide[::2, COLS:]
    assert_close(clnorm.rms_norm(x, COLS, wp, 1e-6), rms_norm_ref(to64(x), (COLS,), w, 1e-6),
                 "float32", "every other row")
    # a transpose: copied first
    sq = wide[:, :ROWS].T if kind == "numpy" else wide[:, :ROWS].t()
    assert_close(clnorm.layer_norm(sq, ROWS), F.layer_norm(to64(sq), (ROWS,)), "float32",
                 "transposed")
    # a broadcast (stride 0) residual: copied
    r = (np.broadcast_to(wide[0, :COLS], (ROWS, COLS)) if kind == "numpy"
         else wide[0, :COLS].expand(ROWS, COLS))
    x = wide[:, COLS:]
    y = clnorm.layer_norm(x, COLS, wp, bp, residual=r)
    assert_close(y, F.layer_norm(to64(x) + to64(r), (COLS,), w, b), "float32", "broadcast residual")


def test_large_rows_zero_copy_path():
    # Large enough for the zero-copy path (CL_MEM_USE_HOST_PTR buffers over the arrays).
    x = make("numpy", np.float32, (512, 256), 14)
    x_before = x.copy()
    r = make("numpy", np.float32, (512, 256), 15)
    y, s = clnorm.layer_norm(x, 256, residual=r, return_sum=True)
    s64 = to64(x) + to64(r)
    assert_close(s, s64, "float32", "sum")
    assert_close(y, F.layer_norm(s64, (256,)), "float32", "y")
    assert np.array_equal(x, x_before)  # inputs are only read
    xt = torch.from_numpy(x)[:, :128]  # strided, zero-copy
    assert_close(clnorm.rms_norm(xt, 128, None, 1e-6), rms_norm_ref(to64(xt), (128,), None, 1e-6),
                 "float32", "strided zero-copy")


def test_empty_batch():
    x = np.zeros((0, COLS), np.float32)
    y = clnorm.layer_norm(x, COLS)
    assert y.shape == (0, COLS)
    assert clnorm.group_norm(torch.zeros(0, 8, 2), 2).shape == (0, 8, 2)


def test_parameters_of_other_dtypes_and_lists():
    x = make("torch", torch.float16, (ROWS, COLS), 16)
    w, b = params(COLS)
    # float16 parameters (a .half() model) are taken as float32
    y = clnorm.layer_norm(x, COLS, w.half(), b.half())
    assert_close(y, F.layer_norm(to64(x), (COLS,), to64(w.half()), to64(b.half())), "float16",
                 "half params")
    xn = make("numpy", np.float64, (2, 3), 17)
    assert_close(clnorm.layer_norm(xn, 3, [1.0, 2.0, 3.0]),
                 F.layer_norm(to64(xn), (3,), torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)),
                 "float64", "list weight")


def test_out_arrays():
    x = make("numpy", np.float32, (ROWS, COLS), 18)
    r = make("numpy", np.float32, (ROWS, COLS), 19)
    y = np.empty_like(x)
    assert clnorm.layer_norm(x, COLS, out=y) is y
    assert_close(y, F.layer_norm(to64(x), (COLS,)), "float32", "out")
    y2, s2 = np.empty_like(x), np.empty_like(x)
    got = clnorm.rms_norm(x, COLS, None, 1e-6, residual=r, return_sum=True, out=(y2, s2))
    assert got[0] is y2 and got[1] is s2
    assert_close(s2, to64(x) + to64(r), "float32", "out sum")
    xt = make("torch", torch.float32, (2, 8, 3, 3), 20).contiguous(memory_format=torch.channels_last)
    yt = torch.empty_like(xt)  # channels-last like x
    assert clnorm.group_norm(xt, 4, out=yt) is yt
    assert_close(yt, F.group_norm(to64(xt), 4), "float32", "out channels_last")
    # in place: y is x
    xi = x.copy()
    clnorm.layer_norm(xi, COLS, out=xi)
    assert_close(xi, F.layer_norm(to64(x), (COLS,)), "float32", "in place")
    with pytest.raises(ValueError, match=r"out \(y\) must have shape"):
        clnorm.layer_norm(x, COLS, out=np.empty((ROWS, COLS + 1), np.float32))
    with pytest.raises(TypeError, match=r"out \(y\) must be float32"):
        clnorm.layer_norm(x, COLS, out=np.empty((ROWS, COLS), np.float64))
    with pytest.raises(ValueError, match="contiguous"):
        clnorm.layer_norm(x, COLS, out=np.empty((COLS, ROWS), np.float32).T)
    with pytest.raises(ValueError, match="autograd"):
        clnorm.layer_norm(torch.ones(2, 3, requires_grad=True), 3, out=torch.empty(2, 3))
