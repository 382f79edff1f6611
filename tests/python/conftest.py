"""Shared helpers of the Python package's tests: float64 references written with torch, and
comparisons whose tolerance follows the storage type."""
import numpy as np
import torch

# Max abs error allowed against a float64 reference, relative to max(1, max |ref|): the
# storage type's rounding of one result (float32 results are within 1e-5 of float64 in the C
# library's own tests; 16-bit types are rounded once on store).
TOL = {"float64": 1e-10, "float32": 2e-5, "float16": 2e-3, "bfloat16": 1.6e-2}

NP_DTYPES = [np.float32, np.float16, np.float64]
TORCH_DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64]


def dtype_name(a):
    return str(a.dtype).replace("torch.", "")


def to64(a):
    """Any array (NumPy, torch, pyopencl) as a float64 torch tensor on the host."""
    if isinstance(a, torch.Tensor):
        return a.detach().to(torch.float64)
    if hasattr(a, "get") and not isinstance(a, np.ndarray):
        a = a.get()
    return torch.from_numpy(np.asarray(a, dtype=np.float64))


def make(kind, dtype, shape, seed, offset=0.0, spread=1.0):
    """offset + spread * N(0, 1) of a seeded torch generator, as a "numpy" array or a torch
    tensor of dtype."""
    g = torch.Generator().manual_seed(seed)
    t = spread * torch.randn(shape, generator=g, dtype=torch.float64) + offset
    if kind == "numpy":
        return t.numpy().astype(dtype)
    return t.to(dtype)


def param_as(kind, p, like):
    """A float64 tensor as a caller of that kind holds parameters: float32 beside 16-bit x."""
    wide = like.dtype == (np.float64 if kind == "numpy" else torch.float64)
    if kind == "numpy":
        return p.numpy().astype(np.float64 if wide else np.float32)
    return p.to(torch.float64 if wide else torch.float32)


def assert_close(got, ref, dtype, what=""):
    got64, ref64 = to64(got), to64(ref)
    assert got64.shape == ref64.shape, (what, got64.shape, ref64.shape)
    scale = max(1.0, ref64.abs().max().item()) if ref64.numel() else 1.0
    err = (got64 - ref64).abs().max().item() if ref64.numel() else 0.0
    assert err <= TOL[dtype] * scale, "%s: max abs error %g > %g (%s)" % (
        what, err, TOL[dtype] * scale, dtype)


def rms_norm_ref(x, ns, weight=None, eps=1e-6):
    dims = tuple(range(-len(ns), 0))
    y = x * torch.rsqrt(x.pow(2).mean(dims, keepdim=True) + eps)
    return y * weight if weight is not None else y

