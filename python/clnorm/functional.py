"""layer_norm, rms_norm and group_norm with torch.nn.functional's argument names and defaults,
plus clnorm's extras as keywords (the fused residual add, per-sample modulation, channels-last
GroupNorm and its fused SiLU, the statistics as results, precomputed statistics).

Each function only maps its arguments to a description and named slots (a _core.Call); the
generic core runs it, and torch tensors that need gradients go through the generic autograd
Function. Layouts: x is read in place when its normalized block (row kinds: the trailing
normalized_shape; GroupNorm: a sample) is contiguous and the blocks are one constant stride
apart (e.g. x[:, :768] of a wider matrix, x[::2], a torch channels_last tensor); any other
layout is copied to a contiguous array first. Results are always new contiguous arrays (a
channels-last x gives a channels-last result).
"""
import math
import numbers
import sys

from . import _core, _lib
from ._kinds import _to_numpy, kind_of, row_layout

try:
    from numpy import ndarray as _np_ndarray
except ImportError:  # the package imports without NumPy (pyopencl and torch need it anyway)
    _np_ndarray = None
_torch_tensor = None  # torch.Tensor once torch is imported (never imported here)
_torch_strided = None  # torch.strided, with it

_PARAM = {_lib.F32: _lib.F32, _lib.F16: _lib.F32, _lib.BF16: _lib.F32, _lib.F64: _lib.F64}
_X, _Y, _RESIDUAL, _SUM = (_lib.SLOT[n] for n in ("x", "y", "residual", "sum"))
_MEAN, _RSTD = _lib.SLOT["mean"], _lib.SLOT["rstd"]


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5, *, residual=None,
               return_sum=False, scale=None, shift=None, return_stats=False, mean=None,
               rstd=None, out=None):
    """LayerNorm over the trailing `normalized_shape` dims of x, as F.layer_norm.

    residual: normalize x + residual instead (one pass; same shape as x, same dtype, or
    float32 for a float16/bfloat16 x); with return_sum=True returns (y, x + residual).
    scale, shift: per-sample modulation, y = LN(x) * (1 + scale[b]) + shift[b] (DiT's adaLN),
    each of shape (B, *normalized_shape) or (B, 1, ..., *normalized_shape) with B = x.shape[0].
    return_stats=True: also returns each row's mean and rstd = 1 / sqrt(var + eps), as
    torch.native_layer_norm does (shape x.shape[:-k] + (1,) * k for k normalized dims;
    float32 beside a 16-bit x): (y, mean, rstd), or (y, sum, mean, rstd) with return_sum.
    They carry no gradient.
    mean, rstd: precomputed statistics (oneDNN's use_global_stats), both given: y = (x - mean)
    * rstd * weight + bias, with x's rows' own statistics not computed. Shape x.shape[:-k] or
    x.shape[:-k] + (1,) * k. The backward treats them as constants (dx = rstd * dy * weight,
    through the modulation), so they must not require a gradient.
    out: an array to write y into (with return_sum, a pair (y, sum)) instead of new ones: of
    x's kind, shape and dtype (the sum's: the residual's), contiguous; it may be x itself (in
    place). Not with autograd.
    """
    return _row_norm(_lib.LAYER, "layer_norm", x, normalized_shape, weight, bias, eps,
                     residual, return_sum, scale, shift, out, return_stats, mean, rstd)


def rms_norm(x, normalized_shape, weight=None, eps=None, *, residual=None, return_sum=False,
             scale=None, shift=None, return_stats=False, rstd=None, out=None):
    """RMSNorm over the trailing `normalized_shape` dims of x, as F.rms_norm (eps None: the
    dtype's machine epsilon, torch.finfo(x.dtype).eps). residual/return_sum/scale/shift/out as
    layer_norm. return_stats=True also returns each row's rstd = 1 / sqrt(mean(x^2) + eps):
    (y, rstd), or (y, sum, rstd). rstd given: precomputed, y = x * rstd * weight (as
    layer_norm's mean/rstd; RMSNorm has no mean)."""
    return _row_norm(_lib.RMS, "rms_norm", x, normalized_shape, weight, None, eps, residual,
                     return_sum, scale, shift, out, return_stats, None, rstd)


def group_norm(x, num_groups, weight=None, bias=None, eps=1e-5, *, channels_last=False,
               silu=False, scale=None, shift=None, mean=None, rstd=None, return_stats=False,
               out=None):
    """GroupNorm as F.group_norm: x of shape (N, C, *spatial), statistics per sample and group
    of C / num_groups channels, weight and bias of shape (C,).

    channels_last=True: x has shape (N, *spatial, C) (channels in the last dim, NHWC).
    A (N, C, *spatial) x stored channels-last (torch.channels_last) is read in place too, and
    its result is stored the same way. silu=True: returns silu(group_norm(x)), fused.
    scale, shift: per-sample modulation (a diffusion UNet's scale-shift norm), fused:
    u = group_norm(x) * (1 + scale[b]) + shift[b], and with silu=True silu(u). Each of shape
    (B, C), or of x's rank with every dim but the first and the channels' 1: (B, C, 1, ..., 1),
    or (B, 1, ..., 1, C) with channels_last=True (as emb[:, :, None, None] broadcasts in the
    model). B divides N: sample n takes row n // (N // B), so B = N is one row per sample and
    B = 1 broadcasts one row over the batch, as torch would. Chunks of one projection
    (emb.chunk(2, dim=1)) are read in place (with autograd, copied densely first).
    mean, rstd: precomputed statistics (oneDNN's use_global_stats), both given, of shape
    (N, num_groups): y = (x - mean) * rstd * weight + bias per group (then the modulation and
    the SiLU), with nothing reduced; statistics gathered elsewhere (over the tiles of an image
    decoded in tiles, over devices) or running ones (instance_norm(use_input_stats=False)).
    They are constants: no gradient flows to them (pass them detached), and the backward's dx
    is rstd * dy * weight, without the terms through the statistics. Not with return_stats.
    return_stats=True: returns (y, mean, rstd), the statistics of shape (N, num_groups) as
    torch.native_group_norm gives them (float32 beside a 16-bit x); they carry no gradient.
    out: as layer_norm's (laid out as the result would be).
    """
    sig = None
    if not return_stats and scale is None and shift is None and mean is None and \
            rstd is None and type(num_groups) is int and _dense(x):
        # The repeated call (a UNet's many small GroupNorms): as layer_norm's, keyed by
        # everything the general path reads. Only for an x stored densely (C order, or a
        # torch channels_last tensor): other layouts are copied, never memoized, and would
        # pay the signature for nothing. As layer_norm's, not for a modulated call: the
        # signature has no scale or shift, so it must neither serve nor remember one.
        sig = _fast_signature(_lib.GROUP, x, (num_groups, channels_last, silu), weight, bias,
                              eps, out)
        if sig is not None:
            y, sig = _fast_call(sig, x, weight, bias, out)
            if y is not _MISS:
                return y
    x_given = x  # the caller's x: a layout the library cannot read is replaced by a copy
    kind = kind_of(x)
    code = kind.code(x)
    shape = tuple(x.shape)
    if len(shape) < 2:
        raise ValueError("clnorm.group_norm: x must have at least 2 dims (N, C, ...), got "
                         "shape %s" % (shape,))
    if isinstance(num_groups, bool) or not isinstance(num_groups, int) or num_groups < 1:
        raise ValueError("clnorm.group_norm: num_groups must be a positive int, got %r"
                         % (num_groups,))
    _check_eps(eps, "group_norm")
    grad = _needs_grad(kind, x, weight, bias, scale, shift)
    nd = len(shape)
    dims = shape[1:-1] if channels_last else shape[2:]
    spatial = 1
    for d in dims:
        spatial *= d
    c = shape[-1] if channels_last else shape[1]
    layout = _lib.NHWC if channels_last else _lib.NCHW
    order = None
    strides = kind.strides(x)
    lay = row_layout(shape, strides, nd - 1)
    if lay is None and not channels_last and nd > 2 and strides is not None:
        # Stored channels-last (torch.channels_last, or a transposed NHWC array): read it as
        # NHWC where it lies, and write the result the same way.
        perm = (0,) + tuple(range(2, nd)) + (1,)
        lay = row_layout(tuple(shape[i] for i in perm), tuple(strides[i] for i in perm), nd - 1)
        if lay is not None:
            order, layout = perm, _lib.NHWC
    if lay is None or (grad and lay[2] != lay[1] and lay[0] > 1):
        x = kind.contiguous(x)
        order, layout = None, (_lib.NHWC if channels_last else _lib.NCHW)
        lay = row_layout(shape, kind.strides(x), nd - 1)
    n, x_stride = shape[0], lay[2]
    if c % num_groups:
        raise ValueError("clnorm.group_norm: the %d channels are not divisible by num_groups=%d"
                         % (c, num_groups))
    pcode = _PARAM[code]
    flags = _lib.SILU if silu else 0
    inputs = [(_X, x)]
    flags |= _param_slot(kind, inputs, "gamma", weight, (c,), pcode, x, _lib.NO_GAMMA,
                         "weight")
    flags |= _param_slot(kind, inputs, "beta", bias, (c,), pcode, x, _lib.NO_BETA, "bias")
    samples = mod_stride = 0
    if scale is not None or shift is not None:
        samples, mod_stride = _group_modulation(kind, inputs, scale, shift, shape, c,
                                                channels_last, pcode, x, grad)
        flags |= (_lib.SCALE if scale is not None else 0) | \
            (_lib.SHIFT if shift is not None else 0)
    if mean is not None or rstd is not None:
        if return_stats:
            raise ValueError("clnorm.group_norm: return_stats=True and precomputed statistics "
                             "exclude each other (the statistics given are the ones used)")
        flags |= _lib.USE_GLOBAL_STATS
        _stats_inputs(kind, inputs, _lib.LAYER, mean, rstd, (n, num_groups), 0,
                      n * num_groups, pcode, x, "group_norm", "one value per sample and group")
    outputs = [(_Y, shape, order)]
    if return_stats:
        flags |= _lib.SAVE_STATS
        outputs += [(_MEAN, (n, num_groups), None), (_RSTD, (n, num_groups), None)]
    key = _core.desc_key(_lib.GROUP, code, n, c, eps, flags, x_stride=x_stride,
                         y_stride=lay[1], groups=num_groups, spatial=spatial, layout=layout,
                         samples=samples, mod_stride=mod_stride)
    call = _core.Call(kind, x, key, inputs, outputs, _given(out, False, grad))
    if grad:
        from . import _autograd

        result = _autograd.apply(call)
    else:
        result = _core.run(call)
        if sig is not None:
            _fast_remember(sig, call, inputs, (x_given, weight, bias), out)
    return tuple(result) if return_stats else result[0]


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5, *, channels_last=False,
                  silu=False, out=None):
    """InstanceNorm as F.instance_norm: x of shape (N, C, *spatial), statistics per sample and
    channel over at least two spatial elements; GroupNorm with one group per channel.

    running_mean, running_var: (C,) buffers (as torch's modules keep them), updated in place
    as torch updates them: running = (1 - momentum) * running + momentum * the batch's mean of
    the samples' means, resp. unbiased variances. They are read only after y was computed, so
    a call that fails leaves them as they were.
    use_input_stats=False (eval mode with tracked statistics): normalizes by the running
    statistics instead, y = (x - running_mean) / sqrt(running_var + eps) * weight + bias,
    leaving them as they are: GroupNorm with precomputed statistics (group_norm's mean and
    rstd), which are constants for autograd as in torch.
    channels_last, silu, out: as group_norm's.
    """
    kind_of(input)  # a clear TypeError for what clnorm does not take, before its shape
    shape = tuple(input.shape)
    if len(shape) < 2:
        raise ValueError("clnorm.instance_norm: x must have at least 2 dims (N, C, ...), got "
                         "shape %s" % (shape,))
    dims = shape[1:-1] if channels_last else shape[2:]
    c = shape[-1] if channels_last else shape[1]
    if not use_input_stats:
        return _instance_norm_eval(input, running_mean, running_var, weight, bias, eps,
                                   shape[0], c, channels_last, silu, out)
    if math.prod(dims) == 1:  # torch's own check (its unbiased variance divides by n - 1)
        raise ValueError("clnorm.instance_norm: expected more than 1 spatial element when "
                         "training, got input size %s" % (list(shape),))
    stats = []
    for name, r in (("running_mean", running_mean), ("running_var", running_var)):
        if r is None:
            continue
        if tuple(r.shape) != (c,):
            raise ValueError("clnorm.instance_norm: %s must have shape [%d] (got %s)"
                             % (name, c, list(r.shape)))
        stats.append((name, r))
    if stats and (isinstance(momentum, bool) or not isinstance(momentum, numbers.Real)):
        raise TypeError("clnorm.instance_norm: momentum must be a real number (got %s)"
                        % type(momentum).__name__)
    if not stats:
        return group_norm(input, c, weight, bias, eps, channels_last=channels_last, silu=silu,
                          out=out)
    y, mean, rstd = group_norm(input, c, weight, bias, eps, channels_last=channels_last,
                               silu=silu, return_stats=True, out=out)
    import numpy as np

    def host64(a, name):  # a small array of any kind, as NumPy float64
        return np.asarray(_to_numpy(a, name), dtype=np.float64)

    n = math.prod(dims)
    mean, rstd = host64(mean, "mean"), host64(rstd, "rstd")
    # The samples' unbiased variances from var + eps = 1 / rstd^2 (a variance far below eps
    # keeps rstd's relative rounding times eps, 1e-12 at float32 and the default eps).
    var = np.maximum(1.0 / (rstd * rstd) - float(eps), 0.0) * (n / (n - 1.0))
    batch = {"running_mean": mean.mean(axis=0), "running_var": var.mean(axis=0)}
    m = float(momentum)
    for name, r in stats:
        _host_assign(r, (1.0 - m) * host64(r, name) + m * batch[name])
    return y


def _instance_norm_eval(x, running_mean, running_var, weight, bias, eps, n, c, channels_last,
                        silu, out):
    """instance_norm(use_input_stats=False): every sample's channel c normalized by
    running_mean[c] and running_var[c], as group_norm with one group per channel and the
    precomputed statistics mean[n, c] = running_mean[c], rstd[n, c] = 1 / sqrt(running_var[c]
    + eps), formed in float64 (rounded once to the parameter type)."""
    import numpy as np

    if running_mean is None or running_var is None:
        raise ValueError("clnorm.instance_norm: use_input_stats=False normalizes by the running "
                         "statistics: running_mean and running_var must be given")
    _check_eps(eps, "instance_norm")
    host = []
    for name, r in (("running_mean", running_mean), ("running_var", running_var)):
        if tuple(r.shape) != (c,):
            raise ValueError("clnorm.instance_norm: %s must have shape [%d] (got %s)"
                             % (name, c, list(r.shape)))
        host.append(np.asarray(_to_numpy(r, name), dtype=np.float64))
    mean = np.ascontiguousarray(np.broadcast_to(host[0], (n, c)))
    rstd = np.ascontiguousarray(np.broadcast_to(1.0 / np.sqrt(host[1] + float(eps)), (n, c)))
    return group_norm(x, c, weight, bias, eps, channels_last=channels_last, silu=silu,
                      mean=mean, rstd=rstd, out=out)


def _host_assign(a, values):
    """Writes values (NumPy float64) into a small array of any kind, in place."""
    if _np_ndarray is not None and isinstance(a, _np_ndarray):
        a[...] = values
    elif hasattr(a, "detach"):  # torch: a buffer, written outside autograd
        import torch

        with torch.no_grad():
            a.copy_(torch.from_numpy(values))
    else:  # pyopencl
        a.set(values.astype(a.dtype))


def _row_norm(base, fname, x, normalized_shape, weight, bias, eps, residual, return_sum,
              scale, shift, out, return_stats=False, mean=None, rstd=None):
    if residual is None and scale is None and shift is None and not return_stats and \
            mean is None and rstd is None:
        sig = _fast_signature(base, x, normalized_shape, weight, bias, eps, out)
        if sig is not None:
            y, sig = _fast_call(sig, x, weight, bias, out)
            if y is not _MISS:
                return y
    else:
        sig = None
    x_given = x  # the caller's x: _rows may replace it by a contiguous copy
    kind = kind_of(x)
    code = kind.code(x)
    ns = _normalized_shape(normalized_shape, fname)
    shape = tuple(x.shape)
    k = len(ns)
    if k > len(shape) or shape[len(shape) - k:] != ns:
        raise ValueError("clnorm.%s: normalized_shape %s does not match the last dims of x, "
                         "of shape %s" % (fname, list(ns), list(shape)))
    if eps is None:
        eps = _machine_eps(kind, x)
    _check_eps(eps, fname)
    grad = _needs_grad(kind, x, weight, bias, residual, scale, shift)
    x, (rows, cols, x_stride) = _rows(kind, x, k, grad)
    pcode = _PARAM[code]
    inputs = [(_X, x)]
    flags = _param_slot(kind, inputs, "gamma", weight, ns, pcode, x, _lib.NO_GAMMA, "weight")
    flags |= _param_slot(kind, inputs, "beta", bias, ns, pcode, x, _lib.NO_BETA, "bias")
    op = base
    residual_stride = 0
    if residual is not None:
        op = _lib.ADD_LAYER if base == _lib.LAYER else _lib.ADD_RMS
        if kind_of(residual) is not kind or tuple(residual.shape) != shape:
            raise ValueError("clnorm.%s: residual must be a %s of x's shape %s"
                             % (fname, kind.name, list(shape)))
        rcode = kind.code(residual)
        if rcode != code:
            if rcode == _lib.F32 and code in (_lib.F16, _lib.BF16):
                flags |= _lib.RESIDUAL_F32  # residual_in_fp32: the stream and the sum stay f32
            else:
                raise TypeError("clnorm.%s: residual must have x's dtype (%s), or float32 for a "
                                "float16/bfloat16 x (got %s)" % (fname, x.dtype, residual.dtype))
        residual, (_, _, residual_stride) = _rows(kind, residual, k, grad)
        inputs.append((_RESIDUAL, residual))
    elif return_sum:
        raise ValueError("clnorm.%s: return_sum=True needs a residual" % fname)
    samples = mod_stride = 0
    if scale is not None or shift is not None:
        samples, mod_stride = _modulation(kind, inputs, scale, shift, shape, ns, pcode, x, grad,
                                          fname)
        flags |= (_lib.SCALE if scale is not None else 0) | \
            (_lib.SHIFT if shift is not None else 0)
    if mean is not None or rstd is not None:
        if return_stats:
            raise ValueError("clnorm.%s: return_stats=True and precomputed statistics exclude "
                             "each other (the statistics given are the ones used)" % fname)
        flags |= _lib.USE_GLOBAL_STATS
        _stats_inputs(kind, inputs, base, mean, rstd, shape, k, rows, pcode, x, fname)
    outputs = [(_Y, shape, None)]
    if return_sum:
        outputs.append((_SUM, shape, None))
    if return_stats:
        flags |= _lib.SAVE_STATS
        stats_shape = shape[:len(shape) - k] + (1,) * k  # torch.native_layer_norm's
        if base == _lib.LAYER:
            outputs.append((_MEAN, stats_shape, None))
        outputs.append((_RSTD, stats_shape, None))
    # clnorm_desc's fields in order (_core.desc_key), spelled out: this is the hot path
    key = (op, code, rows, cols, x_stride, cols, float(eps), flags, residual_stride,
           cols if return_sum else 0, 0, 0, _lib.NCHW, samples, mod_stride)
    call = _core.Call(kind, x, key, inputs, outputs, _given(out, return_sum, grad))
    if grad:
        from . import _autograd

        out = _autograd.apply(call)
    else:
        given = out
        out = _core.run(call)
        if sig is not None:
            _fast_remember(sig, call, inputs, (x_given, weight, bias), given)
    if len(outputs) > 1:
        return tuple(out)
    return out[0]


def _stats_inputs(kind, inputs, base, mean, rstd, shape, k, rows, pcode, x, fname,
                  per="one value per row of x"):
    """Adds the MEAN and RSTD slots of precomputed statistics (CLNORM_USE_GLOBAL_STATS): one
    value per row (GroupNorm: per sample and group, shape (N, G) with k = 0), in the
    parameter type."""
    given = (("mean", mean), ("rstd", rstd)) if base == _lib.LAYER else (("rstd", rstd),)
    if base != _lib.LAYER and mean is not None:
        raise ValueError("clnorm.%s: RMSNorm has no mean; give rstd alone" % fname)
    lead = shape[:len(shape) - k]
    for name, t in given:
        if t is None:
            raise ValueError("clnorm.%s: precomputed statistics need both mean and rstd"
                             % fname)
        if _needs_grad(kind, t):
            raise ValueError("clnorm.%s: precomputed %s is a constant here (no gradient flows "
                             "to it, as in oneDNN's use_global_stats): pass it detached"
                             % (fname, name))
        if not (kind.matches(t, pcode) and kind.is_contiguous(t)):
            t = kind.convert(t, pcode, x, name)  # as the parameters: type, then contiguous
        tshape = tuple(t.shape)
        if tshape != lead and tshape != lead + (1,) * k:
            if k == 0:
                raise ValueError("clnorm.%s: %s must have shape %s (%s), got %s"
                                 % (fname, name, list(lead), per, list(tshape)))
            raise ValueError("clnorm.%s: %s must have shape %s or %s (%s), got %s"
                             % (fname, name, list(lead), list(lead + (1,) * k), per,
                                list(tshape)))
        inputs.append((_lib.SLOT[name], t.reshape((rows,))))


# The repeated small host call, memoized. A training or decoding loop calls with arrays of the
# same kinds, dtypes, shapes and strides every time; the general path above re-derives the
# description, the plan and the checks from them each call, which at 1x768 costs as much
# Python as the C call it wraps costs in C once caches are cold between kernel runs (issue
# #13: at most 20 us over the C call). So a call whose arrays went in unconverted and ran
# through the host-pointer layer leaves an entry keyed by everything the general path read
# of them (the signature), and the next call with the same signature only packs the
# pointers and calls the library. A signature whose call cannot be memoized (an input
# converted or copied, a zero-copy device call, a channels-last result given as out=) gets
# GENERAL, so that its next calls go straight to the general path without trying again (the
# signature decides all of that). Per context (Context.fast_calls, cleared when it closes),
# at most FAST_CALLS entries.
FAST_CALLS = 256
GENERAL = "general path"


def _array_signature(a):
    """What the general path reads of an array: its type, dtype, shape and strides; None for
    an array it must not memoize (a tensor that takes part in autograd, not on the CPU)."""
    t = type(a)
    if t is _torch_tensor:
        if a.requires_grad or not a.is_cpu or a.is_neg() or a.is_conj() or a.is_sparse or \
                a.layout is not _torch_strided:
            return None
        return (t, a.dtype, a.shape, a.stride())
    return (t, a.dtype, a.shape, a.strides)


def _dense(x):
    """Whether x is a C-contiguous NumPy array, or a torch tensor contiguous in C order or as
    torch.channels_last (cheaply; False for other arrays)."""
    flags = getattr(x, "flags", None)
    if flags is not None:
        return flags.c_contiguous is True
    is_contiguous = getattr(x, "is_contiguous", None)
    if is_contiguous is None:
        return False
    if is_contiguous() is True:
        return True
    torch = sys.modules.get("torch")
    return torch is not None and x.dim() == 4 and \
        is_contiguous(memory_format=torch.channels_last) is True


def _fast_signature(base, x, ns, weight, bias, eps, out):
    global _torch_tensor, _torch_strided
    if _torch_tensor is None and "torch" in sys.modules:
        _torch_tensor = sys.modules["torch"].Tensor
        _torch_strided = sys.modules["torch"].strided
    t = type(x)
    if t is not _np_ndarray and t is not _torch_tensor:
        return None
    if type(ns) is not tuple and type(ns) is not int:
        return None
    try:
        sx = _array_signature(x)
        sw = None if weight is None else _array_signature(weight)
        sb = None if bias is None else _array_signature(bias)
        so = None if out is None else _array_signature(out)
    except AttributeError:  # not arrays: the general path says what is wrong
        return None
    if sx is None or (weight is not None and sw is None) or (bias is not None and sb is None) \
            or (out is not None and so is None):
        return None
    return (base, sx, ns, eps, sw, sb, so)


def _fast_remember(sig, call, inputs, given_arrays, out):
    """Keeps the call's plan and argument layout under sig, when nothing was converted and it
    ran through the host-pointer layer. given_arrays are the caller's own x, weight and bias:
    an input the call replaced by a copy (a layout the library cannot read in place, another
    dtype) is not the caller's, and its signature must not be remembered for a plan made for
    the copy's layout."""
    ctx = _core.current_context()
    fast = ctx.fast_calls
    if len(fast) >= FAST_CALLS:
        fast.clear()
    fast[sig] = GENERAL
    passed = [a for a in given_arrays if a is not None]
    if len(inputs) != len(passed) or any(a is not b for (_, a), b in zip(inputs, passed)):
        return  # an input was copied or converted: its pointer is not the caller's
    plan = ctx.plan(call.key)
    if not call.kind.on_device and (ctx.backend != "opencl" or plan.host_loop[_lib.FORWARD] or
                                   plan.row_bytes < _core.ZERO_COPY_FROM):
        slots = tuple(slot for slot, _ in inputs) + (_Y,)
        shape, order = call.outputs[0][1], call.outputs[0][2]
        if order is None or out is None:  # a channels-last y made as the general path does
            code = plan.infos[_lib.FORWARD][_Y][2]
            fast[sig] = (plan, slots, shape, code, call.kind, _core.HOST_FORMATS[len(slots)],
                         order)


_MISS = object()


def _fast_call(sig, x, weight, bias, out):
    """The memoized call of signature sig, if there is one: (its result, None); else (_MISS,
    the signature to remember after the general path, or None when there is nothing to
    remember: an unhashable eps, shape or flag, or a signature marked GENERAL)."""
    ctx = _core.current_context()
    try:
        hit = ctx.fast_calls.get(sig)
    except TypeError:  # the general path reads (and refuses) what cannot be hashed
        return _MISS, None
    if hit is None:
        return _MISS, sig
    if hit is GENERAL:
        return _MISS, None
    return _fast_run(ctx, hit, x, weight, bias, out), None


def _fast_run(ctx, hit, x, weight, bias, out):
    plan, slots, shape, code, kind, fmt, order = hit
    y = kind.empty(shape, code, x, order) if out is None else out
    ptr = kind.ptr
    fields = [slots[0], 0, ptr(x)]
    i = 1
    if weight is not None:
        fields += (slots[i], 0, ptr(weight))
        i += 1
    if bias is not None:
        fields += (slots[i], 0, ptr(bias))
        i += 1
    fields += (slots[i], 0, ptr(y))
    if out is not None:
        kind.check_out(out, "y")
    _core.run_host_packed(ctx, plan, fmt, fields, i + 1)
    if out is not None:
        kind.written(out)
    return y


def _given(out, pair, grad):
    """The out= argument as {slot: array}, or None."""
    if out is None:
        return None
    if grad:
        raise ValueError("clnorm: out= does not take part in autograd (as in torch); call "
                         "without it, or under torch.no_grad()")
    if pair:
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise ValueError("clnorm: with return_sum=True, out must be a pair (y, sum)")
        return {_Y: out[0], _SUM: out[1]}
    return {_Y: out}


def _rows(kind, a, k, dense):
    """a as rows of its trailing k dims: (array, (rows, cols, row_stride)), copied to a
    contiguous array when the library cannot read it in place (or when dense is asked)."""
    if kind.is_contiguous(a):  # the common case, without the stride walk
        shape = a.shape
        cols = 1
        for d in shape[len(shape) - k:]:
            cols *= d
        if cols:
            return a, (kind.size(a) // cols, cols, cols)
    lay = row_layout(tuple(a.shape), kind.strides(a), k)
    if lay is None or (dense and lay[2] != lay[1] and lay[0] > 1):
        a = kind.contiguous(a)
        lay = row_layout(tuple(a.shape), kind.strides(a), k)
    return a, lay


def _modulation(kind, inputs, scale, shift, shape, ns, pcode, x, dense, fname):
    """Adds the scale/shift slots of a row kind; returns (samples, mod_stride)."""
    k = len(ns)
    if len(shape) <= k:
        raise ValueError("clnorm.%s: scale/shift need x to have a leading sample dim" % fname)
    b = shape[0]

    def as_rows(name, t):
        tshape = tuple(t.shape)
        lead = tshape[:len(tshape) - k]
        if tshape[len(tshape) - k:] != ns or not lead or lead[0] != b or \
                any(d != 1 for d in lead[1:]) or len(tshape) > len(shape):
            raise ValueError("clnorm.%s: %s must have shape (B, *normalized_shape) or (B, 1, ..., "
                             "*normalized_shape) with B = x.shape[0] = %d (got %s)"
                             % (fname, name, b, list(tshape)))
        return t.reshape((b,) + ns) if len(lead) > 1 else t

    return b, _mod_slots(kind, inputs, scale, shift, pcode, x, dense, k, as_rows)


def _group_modulation(kind, inputs, scale, shift, shape, c, channels_last, pcode, x, dense):
    """Adds GroupNorm's scale/shift slots; returns (samples, mod_stride). Each is (B, C), or
    of x's rank with 1 in every dim but the first and the channels' (the shape that
    broadcasts against x in the model), read as (B, C); B divides the batch N and is the
    same for both."""
    n, nd = shape[0], len(shape)
    cdim = nd - 1 if channels_last else 1
    samples = []

    def as_rows(name, t):
        tshape = tuple(t.shape)
        full = len(tshape) == nd and all(d == 1 for i, d in enumerate(tshape)
                                         if i not in (0, cdim))
        if not (len(tshape) == 2 and tshape[1] == c) and not (full and tshape[cdim] == c):
            raise ValueError("clnorm.group_norm: %s must have shape (B, C) or %s, C = %d "
                             "channels and B dividing the batch N = %d (got %s)"
                             % (name, "(B, 1, ..., 1, C)" if channels_last
                                else "(B, C, 1, ..., 1)", c, n, list(tshape)))
        b = tshape[0]
        if (n % b if b else n):
            raise ValueError("clnorm.group_norm: %s has B = %d rows, which do not divide the "
                             "batch N = %d (sample n takes row n // (N // B))" % (name, b, n))
        if samples and samples[0] != b:
            raise ValueError("clnorm.group_norm: scale and shift must have the same B (got %d "
                             "and %d)" % (samples[0], b))
        samples.append(b)
        return t if len(tshape) == 2 else t.reshape((b, c))

    mod_stride = _mod_slots(kind, inputs, scale, shift, pcode, x, dense, 1, as_rows)
    return samples[0], mod_stride


def _mod_slots(kind, inputs, scale, shift, pcode, x, dense, k, as_rows):
    """Adds the given scale and shift slots: each converted to the parameter type, shaped by
    as_rows(name, t) into (B, *normalized dims) (it raises for a wrong shape), and read in
    place when its rows of the trailing k dims are contiguous at one stride that both share
    (else made dense). Returns that stride, the description's mod_stride."""
    prepared = []
    for name, t in (("scale", scale), ("shift", shift)):
        if t is None:
            continue
        if not kind.matches(t, pcode):
            t = kind.convert(t, pcode, x, name)
        t, lay = _rows(kind, as_rows(name, t), k, dense)
        prepared.append((name, t, lay[1], lay[2]))
    strides = {s for _, _, _, s in prepared}
    if len(strides) > 1:  # one mod_stride serves both: make both dense
        prepared = [(name, kind.contiguous(t), cols, cols) for name, t, cols, _ in prepared]
        strides = {prepared[0][2]}
    for name, t, _, _ in prepared:
        inputs.append((_lib.SLOT[name], t))
    return strides.pop()


def _param_slot(kind, inputs, slot, p, shape, pcode, x, absent_flag, what):
    """Adds a parameter's slot (converted to the parameter type, contiguous) or returns the
    flag that says it is absent."""
    if p is None:
        return absent_flag
    if not (kind.matches(p, pcode) and kind.is_contiguous(p)):
        p = kind.convert(p, pcode, x, what)
    if tuple(p.shape) != tuple(shape):
        raise ValueError("clnorm: %s must have shape %s (got %s)"
                         % (what, list(shape), list(p.shape)))
    inputs.append((_lib.SLOT[slot], p))
    return 0


def _normalized_shape(ns, fname):
    if type(ns) is tuple or type(ns) is int:  # the modules' and most callers' (fast path)
        if type(ns) is int:
            return (ns,)
        if ns and all(type(d) is int for d in ns):
            return ns
    if isinstance(ns, int) and not isinstance(ns, bool):
        return (int(ns),)
    try:
        out = tuple(int(d) for d in ns)
    except TypeError:
        raise TypeError("clnorm.%s: normalized_shape must be an int or a sequence of ints "
                        "(got %r)" % (fname, ns)) from None
    if not out:
        raise ValueError("clnorm.%s: normalized_shape must not be empty" % fname)
    return out


def _check_eps(eps, fname):
    """eps must be a real number (a string would be read as one, a tensor not at all)."""
    if isinstance(eps, (str, bytes)) or not isinstance(eps, numbers.Real):
        raise TypeError("clnorm.%s: eps must be a real number (got %s)"
                        % (fname, type(eps).__name__))


def _machine_eps(kind, x):
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        return torch.finfo(x.dtype).eps
    import numpy as np

    return float(np.finfo(x.dtype).eps)


def _needs_grad(kind, *tensors):
    if kind.name != "torch tensor":
        return False
    torch = kind.torch
    if not torch.is_grad_enabled():
        return False
    for t in tensors:
        if t is not None and isinstance(t, torch.Tensor) and t.requires_grad:
            return True
    return False
