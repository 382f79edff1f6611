"""Every operation written in torch operations, for the graph of its gradients.

The library's backward gives first-order gradients as numbers, without a graph. A caller who
differentiates them again (torch.autograd.grad(..., create_graph=True): gradient penalties
such as WGAN-GP's, whose critic uses LayerNorm because batch statistics would break the
penalty; R1 regularization; MAML's inner steps; Hessian-vector products) needs their graph.
_autograd's backward then builds it from these formulas: the same function of the same inputs
(the description's kind, flags, groups, layout and modulation), in the math type the kernels
use (float32 for 16-bit storage, float64 for float64), differentiated by torch. The values
the caller gets stay the library's; only their derivatives come from here.
"""
import torch

from . import _lib

S = _lib.SLOT


def outputs(key, slots, tensors, out_specs):
    """{slot: tensor} of the differentiable outputs (y, and the fused add's sum), as functions
    of the call's inputs. key: the call's description (_core.desc_key's order); slots and
    tensors: the inputs the autograd Function received; out_specs: (slot, shape, order) of its
    outputs (order: the physical permutation of a channels-last y, else None)."""
    kind, flags, eps = key[0], key[7], key[6]
    given = dict(zip(slots, tensors))
    x = given[S["x"]]
    math_type = torch.float64 if x.dtype == torch.float64 else torch.float32

    def param(name):  # a parameter or modulation input in the math type, or None
        t = given.get(S[name])
        return None if t is None else t.to(math_type)

    def stat(name):  # precomputed statistics: constants (functional.py refuses a gradient)
        return given[S[name]].detach().to(math_type)

    if kind == _lib.GROUP:
        order = out_specs[0][2]
        y = _group(x, key, flags, eps, param, stat, math_type,
                   channels_last=key[12] == _lib.NHWC and order is None)
        return {S["y"]: y}
    return _rows(x, given.get(S["residual"]), key, kind, flags, eps, param, stat, math_type)


def _affine(z, gamma, beta):
    if gamma is not None:
        z = z * gamma
    if beta is not None:
        z = z + beta
    return z


def _modulate(z, scale, shift):
    """y = z * (1 + scale) + shift, each term present when given (broadcast by the caller)."""
    if scale is not None:
        z = z * (1 + scale)
    if shift is not None:
        z = z + shift
    return z


def _rows(x, residual, key, kind, flags, eps, param, stat, math_type):
    """LayerNorm and RMSNorm over rows of `cols` elements, with the fused add and the
    per-sample modulation (sample b owns rows/B consecutive rows)."""
    rows, cols, samples = key[2], key[3], key[13]
    s = x.reshape(rows, cols).to(math_type)
    out = {}
    if residual is not None:
        s = s + residual.reshape(rows, cols).to(math_type)
        out[S["sum"]] = s.to(residual.dtype).reshape(x.shape)
    global_stats = flags & _lib.USE_GLOBAL_STATS
    if kind in (_lib.LAYER, _lib.ADD_LAYER):
        if global_stats:
            mean, rstd = stat("mean").reshape(rows, 1), stat("rstd").reshape(rows, 1)
        else:
            mean = s.mean(dim=1, keepdim=True)
            rstd = torch.rsqrt(((s - mean) ** 2).mean(dim=1, keepdim=True) + eps)
        z = (s - mean) * rstd
    else:
        if global_stats:
            rstd = stat("rstd").reshape(rows, 1)
        else:
            rstd = torch.rsqrt((s * s).mean(dim=1, keepdim=True) + eps)
        z = s * rstd
    gamma, beta = param("gamma"), param("beta")
    z = _affine(z, None if gamma is None else gamma.reshape(cols),
                None if beta is None else beta.reshape(cols))
    if samples:
        scale, shift = param("scale"), param("shift")
        z = _modulate(z.reshape(samples, rows // samples, cols),
                      None if scale is None else scale.reshape(samples, 1, cols),
                      None if shift is None else shift.reshape(samples, 1, cols))
    out[S["y"]] = z.reshape(x.shape).to(x.dtype)
    return out


def _group(x, key, flags, eps, param, stat, math_type, channels_last):
    """GroupNorm over (N, C, *spatial), read from x's logical shape: (N, *spatial, C) when the
    call said channels_last, else (N, C, *spatial) whatever x's memory format. Then the
    per-sample modulation (sample n takes row n // (N // B)) and the SiLU."""
    n, c, groups, samples = key[2], key[3], key[10], key[13]
    xl = x.movedim(-1, 1) if channels_last else x
    g = xl.to(math_type).reshape(n, groups, -1)
    if flags & _lib.USE_GLOBAL_STATS:
        mean, rstd = stat("mean").reshape(n, groups, 1), stat("rstd").reshape(n, groups, 1)
    else:
        mean = g.mean(dim=2, keepdim=True)
        rstd = torch.rsqrt(((g - mean) ** 2).mean(dim=2, keepdim=True) + eps)
    z = ((g - mean) * rstd).reshape(n, c, -1)
    gamma, beta = param("gamma"), param("beta")
    z = _affine(z, None if gamma is None else gamma.reshape(1, c, 1),
                None if beta is None else beta.reshape(1, c, 1))
    if samples:
        def per_sample(t):
            return None if t is None else \
                t.reshape(samples, c).repeat_interleave(n // samples, dim=0).reshape(n, c, 1)

        z = _modulate(z, per_sample(param("scale")), per_sample(param("shift")))
    if flags & _lib.SILU:
        z = z * torch.sigmoid(z)
    y = z.reshape(xl.shape)
    return (y.movedim(1, -1) if channels_last else y).to(x.dtype)
