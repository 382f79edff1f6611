#!/usr/bin/python3
"""Writes the golden cases of tests/golden: PyTorch autograd in float64 from float32 inputs.

Run with Debian's python3-torch (Debian's /usr/bin/python3 has it), from anywhere:

    /usr/bin/python3 tests/golden/make_golden.py           # (re)write every case, manifest.json
    /usr/bin/python3 tests/golden/make_golden.py --check   # recompute, compare, write nothing

Each case is one folder of C-order little-endian .npy files (README.md). The inputs of the
cases made before this script existed ("legacy": their generator is gone) are the committed
files: the script reads them and recomputes the outputs, which it reproduces bit for bit.
Every other case draws its inputs from numpy's RandomState(seed) (a stream numpy keeps
stable across versions), rounded to float32. --check recomputes every case and fails unless
each output matches the committed file exactly (and the manifest is the one it would write).

The fused residual cases (residual: true) compute s = x + residual in float64 (exact for
float32 operands), y = norm(s), and the gradients of
    L = sum(y * dy) + sum(s * dsum)          (the dsum term only where the case has dsum)
with respect to x (stored as dx; it equals the gradient of the residual, which is checked),
gamma and beta. RMSNorm is y = s * rsqrt(mean(s^2) + eps) * gamma (+ beta).

The GroupNorm cases (norm: "group") are F.group_norm of x (N, C, *spatial) with `groups`
groups, gamma / beta of shape (C,), and with silu y = F.silu(F.group_norm(...)); the
gradients are those of L = sum(y * dy). mean and rstd are stored as (N, G). Their inputs are
drawn and computed in NCHW; the layout "nhwc" cases store x, y, dy and dx channels-last,
(N, *spatial, C). The script checks G = 1 against F.layer_norm over (C, *spatial) with the
per-channel affine broadcast, G = C against F.instance_norm, and every case's statistics
against aten's native_group_norm. With samples: B and scale / shift (a diffusion UNet's
scale-shift norm) the GroupNorm output z is modulated per batch entry n of sample
b = n / (N / B), u = z * (1 + scale[b]) + shift[b] (scale, shift (B, C) broadcast over the
positions; checked against addcmul entry by entry), and y = u, or F.silu(u) with silu: the
SiLU comes after the modulation. dscale and dshift (B, C) come from the same autograd pass.

The modulated cases (samples: B; scale and / or shift: true) are the row kinds' conditional
LayerNorm / DiT adaLN: x is (B, T..., C...), z = norm(x) * gamma + beta as above, and sample
b's rows are y = z * (1 + scale[b]) + shift[b], scale and shift float32 inputs of shape
(B, cols), cols the product of the normalized dims. Their gradients dscale and dshift (B, cols)
come from the same autograd pass as dx, dgamma, dbeta.

The precomputed-statistics cases (global_stats: true; oneDNN's use_global_stats) take mean
(LayerNorm) and rstd as float32 inputs of the leading dims' shape: the statistics of other
data (a second draw, as running statistics are), never the rows' own, which the script checks.
y = (x - mean) * rstd * gamma + beta (RMSNorm: x * rstd * gamma + beta), mean and rstd constants
of the autograd graph (leaves without grad): dx = rstd * dy * gamma (through the modulation
where there is one), which is checked. xhat is checked against F.batch_norm in eval mode over
the rows as channels (running_mean = mean, 0 for RMSNorm; running_var = 1 / rstd^2 - eps),
PyTorch's own use of frozen statistics.
"""
import json
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
GENERATOR = "PyTorch %s autograd in float64 from the float32 inputs" % torch.__version__

# Every case, in manifest order. Legacy cases (no "seed") keep their committed inputs.
CASES = [
    dict(name="seed_example_2x5", shape=[2, 5], nd=1, eps=1e-5, norm="layer", gamma=True,
         beta=True),
    dict(name="ln_3x4x8_last2", shape=[3, 4, 8], nd=2, eps=1e-5, norm="layer", gamma=True,
         beta=True),
    dict(name="ln_16x100_eps1e-3", shape=[16, 100], nd=1, eps=1e-3, norm="layer", gamma=True,
         beta=True),
    dict(name="ln_8x257_noaffine", shape=[8, 257], nd=1, eps=1e-5, norm="layer", gamma=False,
         beta=False),
    dict(name="ln_5x33_gamma_only", shape=[5, 33], nd=1, eps=1e-5, norm="layer", gamma=True,
         beta=False),
    dict(name="ln_4x1_cols1", shape=[4, 1], nd=1, eps=1e-5, norm="layer", gamma=True,
         beta=True),
    dict(name="ln_2x3000_mean1e4", shape=[2, 3000], nd=1, eps=1e-5, norm="layer", gamma=True,
         beta=True),
    dict(name="rms_6x64", shape=[6, 64], nd=1, eps=1e-6, norm="rms", gamma=True, beta=False),
    dict(name="rms_3x2x10_noaffine_last2", shape=[3, 2, 10], nd=2, eps=1e-5, norm="rms",
         gamma=False, beta=False),
    # s = x + residual, y = norm(s): with and without gamma / beta and dsum.
    dict(name="add_ln_4x96", shape=[4, 96], nd=1, eps=1e-5, norm="layer", gamma=True,
         beta=True, residual=True, dsum=True, seed=101),
    dict(name="add_ln_6x50_noaffine", shape=[6, 50], nd=1, eps=1e-5, norm="layer",
         gamma=False, beta=False, residual=True, dsum=False, seed=102),
    dict(name="add_rms_5x64", shape=[5, 64], nd=1, eps=1e-6, norm="rms", gamma=True,
         beta=False, residual=True, dsum=True, seed=103),
    dict(name="add_rms_3x33_noaffine", shape=[3, 33], nd=1, eps=1e-5, norm="rms",
         gamma=False, beta=False, residual=True, dsum=False, seed=104),
    dict(name="add_rms_4x48_affine", shape=[4, 48], nd=1, eps=1e-5, norm="rms", gamma=True,
         beta=True, residual=True, dsum=True, seed=105),
    # x ~ 1e4 + N(0,1), residual ~ -1e4 + N(0,1): the sum's large common offsets cancel.
    dict(name="add_ln_2x3000_offset1e4", shape=[2, 3000], nd=1, eps=1e-5, norm="layer",
         gamma=True, beta=True, residual=True, dsum=True, seed=106, x_offset=1e4,
         r_offset=-1e4),
    # 3-D, the last two dims normalized; the C tests lay its row tensors out with row_pad
    # extra elements per row (a strided layout).
    dict(name="add_ln_2x3x40_last2_strided", shape=[2, 3, 40], nd=2, eps=1e-5, norm="layer",
         gamma=True, beta=True, residual=True, dsum=True, seed=107, row_pad=5),
    # GroupNorm: shape is PyTorch's (N, C, *spatial); layout "nhwc" stores the row tensors
    # channels-last. row_pad as above (extra elements per sample).
    dict(name="gn_2x6x4x5_g3", shape=[2, 6, 4, 5], groups=3, layout="nchw", eps=1e-5,
         norm="group", gamma=True, beta=True, silu=False, seed=201),
    dict(name="gn_2x6x4x5_g3_nhwc", shape=[2, 6, 4, 5], groups=3, layout="nhwc", eps=1e-5,
         norm="group", gamma=True, beta=True, silu=False, seed=202),
    # G = 1: LayerNorm over (C, H, W) with a per-channel affine (checked).
    dict(name="gn_2x6x4x5_g1", shape=[2, 6, 4, 5], groups=1, layout="nchw", eps=1e-5,
         norm="group", gamma=True, beta=True, silu=False, seed=203),
    # G = C: InstanceNorm (checked).
    dict(name="gn_3x4x3x5_g4_instance", shape=[3, 4, 3, 5], groups=4, layout="nchw",
         eps=1e-5, norm="group", gamma=True, beta=True, silu=False, seed=204),
    dict(name="gn_3x4x3x5_g4_instance_nhwc", shape=[3, 4, 3, 5], groups=4, layout="nhwc",
         eps=1e-5, norm="group", gamma=True, beta=True, silu=False, seed=205),
    # 3-D spatial (N, C, D, H, W)
    dict(name="gn_2x4x3x4x5_g2_3d", shape=[2, 4, 3, 4, 5], groups=2, layout="nchw", eps=1e-5,
         norm="group", gamma=True, beta=True, silu=False, seed=206),
    dict(name="gn_2x4x3x4x5_g2_3d_nhwc", shape=[2, 4, 3, 4, 5], groups=2, layout="nhwc",
         eps=1e-5, norm="group", gamma=True, beta=True, silu=False, seed=207),
    # no spatial dims: (N, C)
    dict(name="gn_3x8_g4_nospatial", shape=[3, 8], groups=4, layout="nchw", eps=1e-5,
         norm="group", gamma=True, beta=True, silu=False, seed=208),
    # no gamma / beta, samples laid out with row_pad extra elements
    dict(name="gn_2x6x5x5_g2_noaffine_strided", shape=[2, 6, 5, 5], groups=2, layout="nchw",
         eps=1e-5, norm="group", gamma=False, beta=False, silu=False, seed=209, row_pad=7),
    dict(name="gn_2x6x5x5_g2_noaffine_nhwc", shape=[2, 6, 5, 5], groups=2, layout="nhwc",
         eps=1e-5, norm="group", gamma=False, beta=False, silu=False, seed=210),
    # GroupNorm + SiLU (a diffusion UNet's block), with and without gamma / beta
    dict(name="gn_2x8x4x4_g4_silu", shape=[2, 8, 4, 4], groups=4, layout="nchw", eps=1e-5,
         norm="group", gamma=True, beta=True, silu=True, seed=211),
    dict(name="gn_2x8x4x4_g4_silu_nhwc", shape=[2, 8, 4, 4], groups=4, layout="nhwc",
         eps=1e-5, norm="group", gamma=True, beta=True, silu=True, seed=212),
    dict(name="gn_2x8x4x4_g2_silu_noaffine", shape=[2, 8, 4, 4], groups=2, layout="nchw",
         eps=1e-5, norm="group", gamma=False, beta=False, silu=True, seed=213),
    dict(name="gn_2x8x4x4_g2_silu_noaffine_nhwc", shape=[2, 8, 4, 4], groups=2,
         layout="nhwc", eps=1e-5, norm="group", gamma=False, beta=False, silu=True,
         seed=214),
    dict(name="gn_2x6x3x3_g3_eps1e-2", shape=[2, 6, 3, 3], groups=3, layout="nchw",
         eps=1e-2, norm="group", gamma=True, beta=True, silu=False, seed=215),
    # x ~ 1e3 + N(0, 1): the float32 statistics of a large mean
    dict(name="gn_2x6x8x8_g3_mean1e3", shape=[2, 6, 8, 8], groups=3, layout="nchw", eps=1e-5,
         norm="group", gamma=True, beta=True, silu=False, seed=216, x_offset=1e3),
    dict(name="gn_2x6x8x8_g3_mean1e3_nhwc", shape=[2, 6, 8, 8], groups=3, layout="nhwc",
         eps=1e-5, norm="group", gamma=True, beta=True, silu=False, seed=217, x_offset=1e3),
    # Per-sample modulation: y = (norm(x) * gamma + beta) * (1 + scale[b]) + shift[b], x of
    # shape (B, T..., C...), B = samples = shape[0].
    dict(name="mod_ln_2x3x40", shape=[2, 3, 40], nd=1, eps=1e-5, norm="layer", gamma=True,
         beta=True, samples=2, scale=True, shift=True, seed=301),
    dict(name="mod_rms_3x5x64", shape=[3, 5, 64], nd=1, eps=1e-6, norm="rms", gamma=True,
         beta=False, samples=3, scale=True, shift=True, seed=302),
    dict(name="mod_ln_3x5x64_scale_only", shape=[3, 5, 64], nd=1, eps=1e-5, norm="layer",
         gamma=True, beta=True, samples=3, scale=True, shift=False, seed=303),
    dict(name="mod_ln_2x4x48_shift_only", shape=[2, 4, 48], nd=1, eps=1e-5, norm="layer",
         gamma=True, beta=True, samples=2, scale=False, shift=True, seed=304),
    dict(name="mod_rms_2x3x40_scale_only_noaffine", shape=[2, 3, 40], nd=1, eps=1e-5,
         norm="rms", gamma=False, beta=False, samples=2, scale=True, shift=False, seed=305),
    # conditional LayerNorm: the modulation is the only affine
    dict(name="mod_ln_4x6x32_noaffine", shape=[4, 6, 32], nd=1, eps=1e-5, norm="layer",
         gamma=False, beta=False, samples=4, scale=True, shift=True, seed=306),
    # one row per sample (T = 1); z without beta
    dict(name="mod_ln_4x24_t1_gamma_only", shape=[4, 24], nd=1, eps=1e-5, norm="layer",
         gamma=True, beta=False, samples=4, scale=True, shift=True, seed=307),
    # fused residual add + norm + modulation
    dict(name="mod_add_ln_2x3x40", shape=[2, 3, 40], nd=1, eps=1e-5, norm="layer",
         gamma=True, beta=True, residual=True, dsum=True, samples=2, scale=True, shift=True,
         seed=308),
    dict(name="mod_add_rms_3x4x64_scale_only", shape=[3, 4, 64], nd=1, eps=1e-6, norm="rms",
         gamma=True, beta=False, residual=True, dsum=False, samples=3, scale=True,
         shift=False, seed=309),
    # the last two dims normalized (scale (B, 40) is (B, 2, 20)); the C tests lay its row
    # tensors out with row_pad extra elements per row and scale / shift / dscale / dshift
    # with a sample stride above cols
    dict(name="mod_ln_2x3x2x20_last2_strided", shape=[2, 3, 2, 20], nd=2, eps=1e-5,
         norm="layer", gamma=True, beta=True, samples=2, scale=True, shift=True, seed=310,
         row_pad=5),
    # GroupNorm with a per-sample modulation (a diffusion UNet's scale-shift norm):
    # u = group_norm(x) * (1 + scale[b(n)]) + shift[b(n)], y = u or silu(u), scale / shift
    # (B, C), batch entry n of sample b(n) = n / (N / B)
    dict(name="gn_mod_2x8x4x4_g4_silu", shape=[2, 8, 4, 4], groups=4, layout="nchw",
         eps=1e-5, norm="group", gamma=True, beta=True, silu=True, samples=2, scale=True,
         shift=True, seed=501),
    dict(name="gn_mod_2x8x4x4_g4_silu_nhwc", shape=[2, 8, 4, 4], groups=4, layout="nhwc",
         eps=1e-5, norm="group", gamma=True, beta=True, silu=True, samples=2, scale=True,
         shift=True, seed=502),
    # the modulation as the only affine, no SiLU
    dict(name="gn_mod_3x6x3x5_g3_scale_only_noaffine", shape=[3, 6, 3, 5], groups=3,
         layout="nchw", eps=1e-5, norm="group", gamma=False, beta=False, silu=False,
         samples=3, scale=True, shift=False, seed=503),
    # B = 2 samples of two batch entries each (N = 4)
    dict(name="gn_mod_4x6x3x3_g2_b2_silu_nhwc", shape=[4, 6, 3, 3], groups=2, layout="nhwc",
         eps=1e-5, norm="group", gamma=True, beta=True, silu=True, samples=2, scale=True,
         shift=True, seed=504),
    # shift alone through the SiLU (the backward reads shift, not scale), gamma without
    # beta, one sample for both batch entries
    dict(name="gn_mod_2x4x5x5_g2_shift_only_silu_b1", shape=[2, 4, 5, 5], groups=2,
         layout="nchw", eps=1e-5, norm="group", gamma=True, beta=False, silu=True,
         samples=1, scale=False, shift=True, seed=505),
    # Precomputed statistics (use_global_stats): mean / rstd are float32 inputs, the
    # statistics of other data
    dict(name="gs_ln_6x48", shape=[6, 48], nd=1, eps=1e-5, norm="layer", gamma=True,
         beta=True, global_stats=True, seed=401),
    dict(name="gs_rms_5x64", shape=[5, 64], nd=1, eps=1e-6, norm="rms", gamma=True,
         beta=False, global_stats=True, seed=402),
    dict(name="gs_ln_3x4x32_noaffine", shape=[3, 4, 32], nd=1, eps=1e-5, norm="layer",
         gamma=False, beta=False, global_stats=True, seed=403),
    dict(name="gs_rms_2x3x2x16_last2_affine", shape=[2, 3, 2, 16], nd=2, eps=1e-5,
         norm="rms", gamma=True, beta=True, global_stats=True, seed=404),
    # both: frozen statistics and adaLN
    dict(name="gs_mod_ln_2x3x40", shape=[2, 3, 40], nd=1, eps=1e-5, norm="layer", gamma=True,
         beta=True, samples=2, scale=True, shift=True, global_stats=True, seed=405),
    # GroupNorm with precomputed statistics: mean / rstd (N, G) float32 inputs, those of
    # other data; "eval_instance": G = C with each channel's running statistics repeated over
    # the batch, torch's instance_norm(use_input_stats=False)
    dict(name="gn_gs_2x6x4x4_g3", shape=[2, 6, 4, 4], groups=3, layout="nchw", eps=1e-5,
         norm="group", gamma=True, beta=True, silu=False, global_stats=True, seed=601),
    dict(name="gn_gs_2x6x4x4_g3_silu_nhwc", shape=[2, 6, 4, 4], groups=3, layout="nhwc",
         eps=1e-5, norm="group", gamma=True, beta=False, silu=True, global_stats=True,
         seed=602),
    dict(name="gn_gs_3x4x5x5_g4_instance_eval", shape=[3, 4, 5, 5], groups=4, layout="nchw",
         eps=1e-3, norm="group", gamma=True, beta=True, silu=False, global_stats=True,
         eval_instance=True, seed=603),
    dict(name="gn_gs_mod_2x8x3x3_g4_silu_nhwc", shape=[2, 8, 3, 3], groups=4, layout="nhwc",
         eps=1e-5, norm="group", gamma=True, beta=True, silu=True, samples=2, scale=True,
         shift=True, global_stats=True, seed=604),
]


def f64(a):
    return torch.tensor(np.asarray(a, dtype=np.float64), dtype=torch.float64)


def load(case, f):
    return np.load(os.path.join(HERE, case["name"], f + ".npy"))


def make_inputs(c):
    """float32 inputs: the committed ones (legacy) or drawn from the case's seed."""
    shape = c["shape"]
    # the parameters' shape: the normalized dims, GroupNorm's channels
    nshape = shape[1:2] if c["norm"] == "group" else shape[len(shape) - c["nd"]:]
    if "seed" not in c:
        inp = {"x": load(c, "x"), "dy": load(c, "dy")}
        for k in ("gamma", "beta"):
            if c[k]:
                inp[k] = load(c, k)
        return inp
    rs = np.random.RandomState(c["seed"])
    f32 = lambda a: np.asarray(a, dtype=np.float32)
    inp = {"x": f32(c.get("x_offset", 0.3) + rs.standard_normal(shape))}
    if c.get("residual"):
        inp["residual"] = f32(c.get("r_offset", -0.2) + rs.standard_normal(shape))
    if c["gamma"]:
        inp["gamma"] = f32(1.0 + 0.5 * rs.standard_normal(nshape))
    if c["beta"]:
        inp["beta"] = f32(0.5 * rs.standard_normal(nshape))
    inp["dy"] = f32(rs.standard_normal(shape))
    if c.get("dsum"):
        inp["dsum"] = f32(rs.standard_normal(shape))
    # per-sample modulation, (B, cols): 1 + scale around 1, as an adaLN projection gives
    cols = int(np.prod(nshape))
    if c.get("scale"):
        inp["scale"] = f32(0.3 * rs.standard_normal((c["samples"], cols)))
    if c.get("shift"):
        inp["shift"] = f32(0.5 * rs.standard_normal((c["samples"], cols)))
    if c.get("global_stats"):
        inp.update(other_group_stats(c, rs, shape) if c["norm"] == "group"
                   else other_stats(c, rs, shape, nshape))
    return inp


def other_group_stats(c, rs, shape):
    """float32 mean and rstd (N, G) of a GroupNorm case: the groups' statistics of a second
    draw ~ 0.8 + 2 N(0,1); with eval_instance (G = C) running statistics instead, a mean and
    a variance per channel, the same for every batch entry, rstd = 1 / sqrt(var + eps) (in
    float64, rounded once)."""
    N, G = shape[0], c["groups"]
    if c.get("eval_instance"):
        rm = 0.8 + 0.5 * rs.standard_normal(G)
        rv = 2.5 + 2.0 * rs.random_sample(G)  # rstd 0.45-0.63: never the groups' own (~1)
        return {"mean": np.asarray(np.tile(rm, (N, 1)), dtype=np.float32),
                "rstd": np.asarray(np.tile(1.0 / np.sqrt(rv + c["eps"]), (N, 1)),
                                   dtype=np.float32),
                "running_var": rv}
    v = (0.8 + 2.0 * rs.standard_normal(shape)).reshape(N, G, -1)
    m = v.mean(axis=-1)
    return {"mean": np.asarray(m, dtype=np.float32),
            "rstd": np.asarray(1.0 / np.sqrt(((v - m[..., None]) ** 2).mean(axis=-1)
                                             + c["eps"]), dtype=np.float32)}


def other_stats(c, rs, shape, nshape):
    """float32 mean (LayerNorm) and rstd of the leading dims' shape: the statistics of a
    second draw ~ 0.8 + 2 N(0,1) (other data, as running statistics are), so neither is
    the statistic of x's own rows."""
    lead = shape[:len(shape) - len(nshape)]
    v = (0.8 + 2.0 * rs.standard_normal(shape)).reshape(lead + [-1])
    if c["norm"] == "layer":
        m = v.mean(axis=-1)
        return {"mean": np.asarray(m, dtype=np.float32),
                "rstd": np.asarray(1.0 / np.sqrt(((v - m[..., None]) ** 2).mean(axis=-1)
                                                 + c["eps"]), dtype=np.float32)}
    return {"rstd": np.asarray(1.0 / np.sqrt((v * v).mean(axis=-1) + c["eps"]),
                               dtype=np.float32)}


def channels_last(a):
    """(N, C, *spatial) -> (N, *spatial, C), C-contiguous."""
    return np.ascontiguousarray(np.moveaxis(np.asarray(a), 1, -1))


def check_close(c, what, got, want):
    if not torch.allclose(got, want, rtol=1e-12, atol=1e-12):
        raise SystemExit("%s: %s differs by %.3g" % (c["name"], what,
                                                      (got - want).abs().max().item()))


def compute_group(c, inp):
    """float64 outputs of a GroupNorm case from its NCHW inputs; for layout "nhwc" the row
    tensors (y and dx here, x and dy of inp in place) are turned channels-last, as stored."""
    F = torch.nn.functional
    G, eps = c["groups"], c["eps"]
    x = f64(inp["x"]).requires_grad_(True)
    g = f64(inp["gamma"]).requires_grad_(True) if "gamma" in inp else None
    b = f64(inp["beta"]).requires_grad_(True) if "beta" in inp else None
    sc = f64(inp["scale"]).requires_grad_(True) if "scale" in inp else None
    sh = f64(inp["shift"]).requires_grad_(True) if "shift" in inp else None
    N, C = x.shape[0], x.shape[1]
    if c.get("global_stats"):
        return compute_group_given(c, inp, x, g, b, sc, sh)
    z = F.group_norm(x, G, g, b, eps)
    u = modulate_group(c, z, sc, sh)
    y = F.silu(u) if c["silu"] else u
    xg = x.detach().reshape(N, G, -1)
    mu = xg.mean(dim=2)
    rstd = torch.rsqrt(((xg - mu.unsqueeze(2)) ** 2).mean(dim=2) + eps)
    with torch.no_grad():
        # the statistics as aten's own GroupNorm saves them
        hw = xg.shape[2] * G // C
        _, amu, arstd = torch.native_group_norm(x, g, b, N, C, hw, G, eps)
        check_close(c, "mean vs native_group_norm", amu.reshape(N, G), mu)
        check_close(c, "rstd vs native_group_norm", arstd.reshape(N, G), rstd)
        bshape = [C] + [1] * (x.dim() - 2)
        if G == 1:
            ln = F.layer_norm(x, list(x.shape[1:]), None, None, eps)
            if g is not None:
                ln = ln * g.reshape(bshape)
            if b is not None:
                ln = ln + b.reshape(bshape)
            check_close(c, "G = 1 vs layer_norm over (C, *spatial)", z, ln)
        if G == C and x.dim() > 2:
            check_close(c, "G = C vs instance_norm", z,
                        F.instance_norm(x, weight=g, bias=b, use_input_stats=True, eps=eps))
    loss = (y * f64(inp["dy"])).sum()
    loss.backward()
    out = {"y": y, "mean": mu, "rstd": rstd, "dx": x.grad}
    if g is not None:
        out["dgamma"] = g.grad
    if b is not None:
        out["dbeta"] = b.grad
    if sc is not None:
        out["dscale"] = sc.grad
    if sh is not None:
        out["dshift"] = sh.grad
    out = {k: v.detach().numpy().astype(np.float64) for k, v in out.items()}
    if c["layout"] == "nhwc":
        for k in ("y", "dx"):
            out[k] = channels_last(out[k])
        for k in ("x", "dy"):
            inp[k] = channels_last(inp[k])
    return out


def compute_group_given(c, inp, x, g, b, sc, sh):
    """A GroupNorm case with precomputed statistics: z = (x - mean[n, g]) * rstd[n, g] *
    gamma_c + beta_c per group, mean and rstd constants of the graph, then the modulation and
    the SiLU. Checked not to be the groups' own statistics, xhat against F.batch_norm in eval
    mode over the groups as channels, eval_instance cases against F.instance_norm with
    use_input_stats=False, and without the SiLU dx against rstd * dy * (1 + scale) * gamma.
    running_var of eval_instance cases is dropped from the stored inputs."""
    F = torch.nn.functional
    G, eps = c["groups"], c["eps"]
    N, C = x.shape[0], x.shape[1]
    mean, rstd = f64(inp["mean"]), f64(inp["rstd"])
    running_var = inp.pop("running_var", None)
    xg = x.reshape(N, G, -1)
    xhat = ((xg - mean.unsqueeze(2)) * rstd.unsqueeze(2)).reshape(x.shape)
    bshape = [C] + [1] * (x.dim() - 2)
    z = xhat
    if g is not None:
        z = z * g.reshape(bshape)
    if b is not None:
        z = z + b.reshape(bshape)
    with torch.no_grad():
        v = xg.detach()
        own = torch.rsqrt(v.var(dim=2, unbiased=False) + eps)
        if not bool(((rstd / own - 1.0).abs() > 0.05).all()):
            raise SystemExit("%s: a given rstd is within 5%% of its group's own" % c["name"])
        bn = F.batch_norm(v.reshape(1, N * G, -1), mean.reshape(N * G),
                          1.0 / (rstd.reshape(N * G) ** 2) - eps, training=False, eps=eps)
        check_close(c, "xhat vs batch_norm with running statistics", xhat.detach(),
                    bn.reshape(x.shape))
        if c.get("eval_instance"):
            if G != C:
                raise SystemExit("%s: eval_instance needs G = C" % c["name"])
            # rstd went through float32: torch's running_var that gives it
            rv = 1.0 / rstd[0] ** 2 - eps
            if not torch.allclose(rv, f64(running_var), rtol=1e-6):
                raise SystemExit("%s: rstd is not the running variance's" % c["name"])
            check_close(c, "vs instance_norm(use_input_stats=False)", z.detach(),
                        F.instance_norm(x.detach(), mean[0], rv, g, b, use_input_stats=False,
                                        eps=eps))
    u = modulate_group(c, z, sc, sh)
    y = F.silu(u) if c["silu"] else u
    loss = (y * f64(inp["dy"])).sum()
    loss.backward()
    if not c["silu"]:
        view = [N, C] + [1] * (x.dim() - 2)
        dz = f64(inp["dy"])
        if sc is not None:
            dz = dz * (1.0 + sc.detach().repeat_interleave(N // c["samples"], 0).reshape(view))
        want = (rstd.unsqueeze(2) * dz.reshape(N, G, -1)).reshape(x.shape)
        if g is not None:
            want = want * g.detach().reshape(bshape)
        check_close(c, "dx vs rstd * dy * gamma", x.grad, want)
    out = {"y": y, "dx": x.grad}
    for k, t in (("dgamma", g), ("dbeta", b), ("dscale", sc), ("dshift", sh)):
        if t is not None:
            out[k] = t.grad
    out = {k: v.detach().numpy().astype(np.float64) for k, v in out.items()}
    if c["layout"] == "nhwc":
        for k in ("y", "dx"):
            out[k] = channels_last(out[k])
        for k in ("x", "dy"):
            inp[k] = channels_last(inp[k])
    return out


def modulate_group(c, z, sc, sh):
    """z * (1 + scale[b(n)]) + shift[b(n)] of a GroupNorm case: scale / shift (B, C), batch
    entry n of sample b(n) = n / (N / B), broadcast over the positions. Checked against
    EDM's addcmul(shift, z, scale + 1) sample by sample."""
    if sc is None and sh is None:
        return z
    N, B = z.shape[0], c["samples"]
    if N % B != 0:
        raise SystemExit("%s: samples does not divide N" % c["name"])
    view = [N, z.shape[1]] + [1] * (z.dim() - 2)
    per = lambda t: t.repeat_interleave(N // B, dim=0).reshape(view)
    u = z
    if sc is not None:
        u = u * (1.0 + per(sc))
    if sh is not None:
        u = u + per(sh)
    with torch.no_grad():
        pshape = view[1:]
        zero = z.new_zeros(z.shape[1])
        for n in range(N):
            k = n // (N // B)
            scale = (sc[k] if sc is not None else zero).reshape(pshape)
            shift = (sh[k] if sh is not None else zero).reshape(pshape)
            check_close(c, "modulation vs addcmul of entry %d" % n, u[n],
                        torch.addcmul(shift, z[n], scale + 1.0))
    return u


def global_stats_norm(c, s, g, b, inp):
    """z = (s - mean) * rstd * gamma + beta with the case's given statistics (RMSNorm: no
    mean), mean and rstd constants; checked against F.batch_norm in eval mode over the rows
    as channels, and checked not to be the rows' own statistics."""
    nd = c["nd"]
    lead = list(s.shape[:s.dim() - nd])
    rows = int(np.prod(lead))
    rstd = f64(inp["rstd"])
    mean = f64(inp["mean"]) if c["norm"] == "layer" else torch.zeros_like(rstd)
    bshape = lead + [1] * nd
    z = (s - mean.reshape(bshape)) * rstd.reshape(bshape)
    with torch.no_grad():
        v = s.reshape(rows, -1)
        if c["norm"] == "layer":
            own = torch.rsqrt(v.var(dim=1, unbiased=False) + c["eps"])
        else:
            own = torch.rsqrt((v * v).mean(dim=1) + c["eps"])
        if not bool(((rstd.reshape(rows) / own - 1.0).abs() > 0.05).all()):
            raise SystemExit("%s: a given rstd is within 5%% of its row's own" % c["name"])
        bn = torch.nn.functional.batch_norm(
            v.unsqueeze(0), mean.reshape(rows), 1.0 / (rstd.reshape(rows) ** 2) - c["eps"],
            training=False, eps=c["eps"])
        check_close(c, "xhat vs batch_norm with running statistics", z.reshape(rows, -1),
                    bn.squeeze(0))
    if g is not None:
        z = z * g
    if b is not None:
        z = z + b
    return z


def modulate(c, z, sc, sh):
    """z * (1 + scale[b]) + shift[b]: scale / shift (B, cols) broadcast over sample b's rows
    and viewed in the normalized dims' shape."""
    nd = c["nd"]
    if (sc is not None or sh is not None) and c["samples"] != z.shape[0]:
        raise SystemExit("%s: samples is not x's first dim" % c["name"])
    view = [c.get("samples", 1)] + [1] * (z.dim() - 1 - nd) + list(z.shape[z.dim() - nd:])
    y = z
    if sc is not None:
        y = y * (1.0 + sc.reshape(view))
    if sh is not None:
        y = y + sh.reshape(view)
    return y


def compute(c, inp):
    """float64 outputs of one case."""
    if c["norm"] == "group":
        return compute_group(c, inp)
    nd, eps = c["nd"], c["eps"]
    leaf = lambda k: f64(inp[k]).requires_grad_(True) if k in inp else None
    x = leaf("x")
    r, g, b = leaf("residual"), leaf("gamma"), leaf("beta")
    sc, sh = leaf("scale"), leaf("shift")
    s = x + r if r is not None else x
    dims = tuple(range(s.dim() - nd, s.dim()))
    out = {}
    if c.get("global_stats"):
        z = global_stats_norm(c, s, g, b, inp)
    elif c["norm"] == "layer":
        z = torch.nn.functional.layer_norm(s, list(s.shape[s.dim() - nd:]), g, b, eps)
        mu = s.mean(dim=dims, keepdim=True)
        out["mean"] = mu.reshape(s.shape[:s.dim() - nd])
        out["rstd"] = torch.rsqrt(((s - mu) ** 2).mean(dim=dims) + eps)
    else:
        rs = torch.rsqrt((s * s).mean(dim=dims, keepdim=True) + eps)
        z = s * rs
        if g is not None:
            z = z * g
        if b is not None:
            z = z + b
        out["rstd"] = rs.reshape(s.shape[:s.dim() - nd])
    y = modulate(c, z, sc, sh)
    loss = (y * f64(inp["dy"])).sum()
    if "dsum" in inp:
        loss = loss + (s * f64(inp["dsum"])).sum()
    loss.backward()
    out["y"] = y
    if r is not None:
        out["sum"] = s
        if not torch.equal(x.grad, r.grad):
            raise SystemExit("%s: d/dx and d/dresidual differ" % c["name"])
    if c.get("global_stats"):
        check_global_stats_dx(c, inp, x.grad)
    out["dx"] = x.grad
    for k, t in (("dgamma", g), ("dbeta", b), ("dscale", sc), ("dshift", sh)):
        if t is not None:
            out[k] = t.grad
    return {k: v.detach().numpy().astype(np.float64) for k, v in out.items()}


def check_global_stats_dx(c, inp, dx):
    """With constant statistics the gradient has no mean terms: dx = rstd * dz * gamma
    (+ dsum), dz = dy * (1 + scale[b])."""
    nd = c["nd"]
    lead = list(dx.shape[:dx.dim() - nd])
    dz = f64(inp["dy"])
    if "scale" in inp:
        view = [c["samples"]] + [1] * (dx.dim() - 1 - nd) + list(dx.shape[dx.dim() - nd:])
        dz = dz * (1.0 + f64(inp["scale"]).reshape(view))
    want = f64(inp["rstd"]).reshape(lead + [1] * nd) * dz
    if "gamma" in inp:
        want = want * f64(inp["gamma"])
    if "dsum" in inp:
        want = want + f64(inp["dsum"])
    check_close(c, "dx vs rstd * dy * gamma", dx, want)


def manifest_entry(c):
    if c["norm"] == "group":
        e = {"name": c["name"], "shape": c["shape"], "groups": c["groups"],
             "layout": c["layout"], "eps": c["eps"], "norm": "group", "gamma": c["gamma"],
             "beta": c["beta"], "silu": c["silu"], "seed": c["seed"]}
        if c.get("x_offset"):
            e["x_offset"] = c["x_offset"]
        if c.get("row_pad"):
            e["row_pad"] = c["row_pad"]
        if c.get("samples"):
            e["samples"] = c["samples"]
            e["scale"] = bool(c.get("scale"))
            e["shift"] = bool(c.get("shift"))
        if c.get("global_stats"):
            e["global_stats"] = True
        return e
    e = {"name": c["name"], "shape": c["shape"], "normalized_dims": c["nd"], "eps": c["eps"],
         "norm": c["norm"], "gamma": c["gamma"], "beta": c["beta"]}
    if c.get("residual"):
        e["residual"] = True
        e["dsum"] = bool(c.get("dsum"))
    if c.get("samples"):
        e["samples"] = c["samples"]
        e["scale"] = bool(c.get("scale"))
        e["shift"] = bool(c.get("shift"))
    if c.get("global_stats"):
        e["global_stats"] = True
    if "seed" in c:
        e["seed"] = c["seed"]
    if c.get("row_pad"):
        e["row_pad"] = c["row_pad"]
    return e


def main():
    check = "--check" in sys.argv[1:]
    bad = 0
    for c in CASES:
        inp = make_inputs(c)
        out = compute(c, inp)
        folder = os.path.join(HERE, c["name"])
        files = dict(inp)
        files.update(out)
        if check:
            for k, v in sorted(files.items()):
                ref = np.load(os.path.join(folder, k + ".npy"))
                if ref.dtype != v.dtype or ref.shape != v.shape or not np.array_equal(ref, v):
                    print("%s/%s.npy differs" % (c["name"], k))
                    bad += 1
            present = {f[:-4] for f in os.listdir(folder) if f.endswith(".npy")}
            if present != set(files):
                print("%s: files %s, expected %s" % (c["name"], sorted(present), sorted(files)))
                bad += 1
            continue
        os.makedirs(folder, exist_ok=True)
        for f in os.listdir(folder):
            if f.endswith(".npy") and f[:-4] not in files:
                os.remove(os.path.join(folder, f))
        for k, v in files.items():
            np.save(os.path.join(folder, k + ".npy"), v)
    manifest = json.dumps({"generator": GENERATOR, "cases": [manifest_entry(c) for c in CASES]},
                          indent=1) + "\n"
    path = os.path.join(HERE, "manifest.json")
    if check:
        with open(path) as f:
            if f.read() != manifest:
                print("manifest.json differs")
                bad += 1
        print("%d cases checked, %d differences" % (len(CASES), bad))
        sys.exit(1 if bad else 0)
    with open(path, "w") as f:
        f.write(manifest)
    print("wrote %d cases" % len(CASES))


if __name__ == "__main__":
    main()
