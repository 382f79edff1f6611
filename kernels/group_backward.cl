/*
 * group_backward.cl - GroupNorm's gradients, both layouts. With xhat = ((x * sc - K) - m) * r
 * (gn_stats_of), z = xhat * gamma_c + beta_c and dz = dy, or dy * s(z) * (1 + z (1 - s(z)))
 * through the SiLU (s the sigmoid):
 *   dgamma_c = sum over samples and positions of dz * xhat,  dbeta_c = the same of dz;
 *   dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dz * gamma_c, means over the group.
 * The group's sums of g and g * xhat are sum_c gamma_c * (sum of dz) and sum_c gamma_c *
 * (sum of dz * xhat) over its channels, so one set of per-(sample, tile, channel) sums serves
 * both:
 *   gn_*_bwd_sums  per (n, tile, c): dz * xhat and dz summed (NCHW: one tile, the channel's
 *                  contiguous positions; NHWC: group_nhwc.cl's tiles). Layout per (n, tile):
 *                  2 C values of W, the dz * xhat sums of every channel, then the dz sums;
 *   gn_bwd_coef    per (n, g): mean(g) and mean(g * xhat) into coef (not with precomputed
 *                  statistics, whose dx is rstd * g: gn_coef_of);
 *   gn_bwd_params  per c: dgamma, dbeta, adding samples and tiles in order (in W; Kahan
 *                  without double): fixed order, so the same bits run after run;
 *   gn_*_bwd_dx    dx, elementwise.
 * gn_nchw_stats recomputes the statistics when mean/rstd are not given (NCHW; NHWC uses
 * group_nhwc.cl's moments and merge).
 * With a per-sample modulation (op_group_norm.cl), u = xhat * gam + bet with gamma_c and
 * beta_c folded with the entry's (1 + scale) and shift (gn_fold_mod), and dz is the gradient
 * of u (through the SiLU of u): every formula above holds with gam and bet in place of
 * gamma_c and beta_c, except the parameters' own, which the parameter pass forms:
 *   dgamma_c = sum over tiles of (1 + scale) * (sum of dz * xhat), dbeta_c likewise of dz;
 *   dscale[b, c] = gamma_c * (its tiles' sum of dz * xhat) + beta_c * (sum of dz), dz * z
 *   summed with z = xhat * gamma_c + beta_c; dshift[b, c] = the tiles' sum of dz
 *   (gn_bwd_mod_params).
 * The sums are dgamma and dbeta themselves, of up to every position of every sample, and
 * their true values are often small against their terms (a sum of N x spatial values of
 * dy): without double every loop adds each term into a compensated sum (Kahan; dz * xhat
 * through gn_kahan_fma). Plain sums over a whole tile (256 positions) put the NHWC dgamma and dbeta
 * up to 2.4e-5 away from torch's float64 (relative to 1 + |value|), torch's own float32
 * 2.6e-5 (bench/RESULTS.md, "GroupNorm's parameter gradients in compensated blocks"). Plain
 * blocks of 16 positions, each then compensated, left dbeta 1.3e-5 off, 1.18x the bound
 * 1e-5 + 1e-5 |ref|, on 3x64x16x64 NHWC with SiLU, 3,072 positions a channel
 * (tests/torch_group_sweep.py, seed 1, case 98); blocks of 2 left 0.66x, every term 0.14x.
 * Where the device has double, every loop's sums are double instead, xhat too, and stay so
 * up to dgamma (gn_channel_sums, gn_chan_sums_cv say why).
 * (bench/RESULTS.md, "GroupNorm's parameter gradients in double on the host, every term
 * compensated on the kernels".)
 * Needs common.cl, op_group_norm.cl and row_stats.cl (and for NHWC group_nhwc.cl) before it.
 */

/* Backward tensors, in slot order: X, GAMMA, BETA, MEAN, RSTD, DY (and DX), SCALE, SHIFT: the
 * pointers, and their offsets and strides from the kernel's scalar struct (common.cl,
 * KS_PARAM). */
#define GN_BWD_BASE_PTRS                                                                    \
    __global const T *x, __global const P *gamma, __global const P *beta,                   \
        __global const P *mean, __global const P *rstd, __global const T *dy
#define GN_BWD_BASE_UNPACK                                                                  \
    KS_TENSOR(x); KS_TENSOR(gamma); KS_TENSOR(beta); KS_TENSOR(mean); KS_TENSOR(rstd);     \
    KS_TENSOR(dy);
#define GN_BWD_IN_PTRS GN_BWD_BASE_PTRS GN_MOD_PTRS
#define GN_BWD_IN_UNPACK GN_BWD_BASE_UNPACK GN_MOD_UNPACK
#define GN_BWD_PTRS GN_BWD_BASE_PTRS, __global T *dx GN_MOD_PTRS
#define GN_BWD_UNPACK GN_BWD_BASE_UNPACK KS_TENSOR(dx); GN_MOD_UNPACK

/* W (common.cl), double where the device has it, serves the work-group kernels' sums
 * (gn_channel_sums says why) and the SiLU's dz of a channel whose rstd * |gamma| is at least
 * CLNORM_GN_SILU_WIDE (flags.h; gn_dz says why); WV (common.cl) is its vector for the CPU
 * devices' loops. */
#if W_DOUBLE
typedef double2 W2;
#else
typedef A2 W2;
#endif

/* The statistics and parameters of one channel of one sample. */
typedef struct {
    A K, m, r, sc; /* xhat = ((x * sc - K) - m) * r */
    A rlo, mlo;    /* what r's and m's roundings left, for the double paths (gn_stats_w) */
    A gam, bet;
    A glo, blo; /* what the modulation's float fold left of gam and bet (gn_fold_rest) */
    int silu;
    int wide; /* rstd * |gamma| large: dz (gn_dz) and dx (gn_dx_of_w) in double */
} gn_chan;

/* gam and bet in W for the wide paths (gn_dz_w, gn_dx_of_w and their vector loops). With a
 * modulation, gn_fold_mod rounds gamma_c * (1 + scale) and beta_c * (1 + scale) + shift to
 * A, and where rstd * |gam| is large dx carries that rounding times rstd: through z into the
 * SiLU's dz, and through g = dz * gam. The kernels' dx of the scale-shift norm with SiLU was
 * 4.8x the bound 1e-5 + 1e-5 |ref| from torch's float64 at spread 3e-3 about 300
 * (tests/torch_group_mod_spread.py; bench/RESULTS.md, "The kernels' modulated GroupNorm of a
 * large rstd * |gamma|"). gn_fold_rest folds again in W and keeps what the float fold left
 * in glo and blo; gam and bet stay the float fold, so that every float path keeps its bits,
 * and the group means keep a float word of their own (gn_bwd_coef). */
#if W_DOUBLE && defined(CLNORM_GN_MOD)
/* What the float gam, gamma_c (g0) times (1 + sr[c]), left of the product in W (also
 * gn_bwd_coef's). */
inline A gn_gam_rest(A g0, A gam, __global const P *sr, ulong c)
{
    return sr ? (A)((W)g0 * ((W)1 + (W)sr[c]) - (W)gam) : (A)0;
}

inline void gn_fold_rest(gn_chan *ch, A g0, A b0, __global const P *sr, __global const P *hr,
                         ulong c)
{
    W bw = b0;
    if (sr)
        bw *= (W)1 + (W)sr[c];
    if (hr)
        bw += (W)hr[c];
    ch->glo = gn_gam_rest(g0, ch->gam, sr, c);
    ch->blo = (A)(bw - (W)ch->bet);
}
#define GN_GAM_W(ch) ((W)(ch).gam + (W)(ch).glo)
#define GN_BET_W(ch) ((W)(ch).bet + (W)(ch).blo)
#else /* no modulation, or no double: the fold is exact, or there is no W to fold in */
inline void gn_fold_rest(gn_chan *ch, A g0, A b0, __global const P *sr, __global const P *hr,
                         ulong c)
{
    ch->glo = ch->blo = 0;
}
#define GN_GAM_W(ch) ((W)(ch).gam)
#define GN_BET_W(ch) ((W)(ch).bet)
#endif

/* ch with channel c's gamma and beta, folded with the modulation rows sr and hr of ch's
 * batch entry (0 when absent; gn_fold_mod, gn_fold_rest); the statistics stay those of ch's
 * group. */
inline gn_chan gn_chan_at(gn_chan ch, __global const P *gamma, ulong gamma_off,
                          __global const P *beta, ulong beta_off, __global const P *sr,
                          __global const P *hr, ulong c, uint flags)
{
    ch.gam = (flags & CLNORM_KF_GAMMA) ? gamma[gamma_off + c] : (A)1;
    ch.bet = (flags & CLNORM_KF_BETA) ? beta[beta_off + c] : (A)0;
    const A g0 = ch.gam, b0 = ch.bet;
    gn_fold_mod(&ch.gam, &ch.bet, sr, hr, c);
    gn_fold_rest(&ch, g0, b0, sr, hr, c);
    ch.wide = W_DOUBLE && fabs(ch.r * ch.sc * ch.gam) >= (A)CLNORM_GN_SILU_WIDE;
    return ch;
}
#define GN_CHAN_AT(ch, n, c)                                                                \
    gn_chan_at(ch, gamma, gamma_off, beta, beta_off, GN_SCALE_ROW(n), GN_SHIFT_ROW(n), c,    \
               flags)

inline gn_chan gn_chan_of(__global const P *gamma, ulong gamma_off, __global const P *beta,
                          ulong beta_off, __global const P *mean, ulong mean_off,
                          __global const P *rstd, ulong rstd_off, __global const A *stats,
                          __global const P *sr, __global const P *hr, ulong n, ulong c,
                          ulong groups, ulong cpg, uint flags)
{
    gn_chan ch;
    gn_stats_of(mean, mean_off, rstd, rstd_off, stats, n * groups + c / cpg, flags, &ch.K,
                &ch.m, &ch.r, &ch.sc);
    ch.rlo = gn_stats_rlo(stats, n * groups + c / cpg, flags);
    ch.mlo = gn_stats_mlo(stats, n * groups + c / cpg, flags);
    ch.silu = (flags & CLNORM_KF_SILU) != 0;
    return gn_chan_at(ch, gamma, gamma_off, beta, beta_off, sr, hr, c, flags);
}
#define GN_CHAN(n, c)                                                                       \
    gn_chan_of(gamma, gamma_off, beta, beta_off, mean, mean_off, rstd, rstd_off, stats,      \
               GN_SCALE_ROW(n), GN_SHIFT_ROW(n), n, c, gn_groups, gn_cpg, flags)

inline A gn_xhat(gn_chan ch, A v) { return ((v * ch.sc - ch.K) - ch.m) * ch.r; }

/* r and m in W: each and what its rounding left. */
inline W gn_r_w(gn_chan ch) { return (W)ch.r + (W)ch.rlo; }
inline W gn_m_w(gn_chan ch) { return (W)ch.m + (W)ch.mlo; }

/* xhat in W, from x unrounded. */
inline W gn_xhat_w(gn_chan ch, A v)
{
    return (((W)v * (W)ch.sc - (W)ch.K) - gn_m_w(ch)) * gn_r_w(ch);
}

/* dz of one element v with its xhat. A channel with ch.wide takes z = xhat * gamma + beta and
 * the SiLU's gradient in double, from x, rounded once (gn_dz_w, out of line on CPU devices
 * as the vector loops' double copies below): dx = rstd * (dz * gamma - ...) scales dz's
 * error by rstd * |gamma|, and with xhat, z and the sigmoid each rounded to float a dx
 * element near 0 was 1.4-1.9x from torch's float64 within 1e-5 + 1e-5 |ref| at spread 1e-2
 * (rstd 100; bench/RESULTS.md, "The SiLU's dz in double where rstd * |gamma| is large"). */
#if W_DOUBLE
#if defined(CLNORM_PARAMS_VEC) /* CPU devices (policy.c): as measured on PoCL; GPUs inline */
NOINLINE
#else
inline
#endif
A gn_dz_w(gn_chan ch, A dyv, A v)
{
    const W zw = fma(gn_xhat_w(ch, v), GN_GAM_W(ch), GN_BET_W(ch));
    const W sw = (W)1 / ((W)1 + exp(-zw));
    return (A)((W)dyv * sw * fma(zw, (W)1 - sw, (W)1));
}
#endif

inline A gn_dz(gn_chan ch, A dyv, A v, A xh)
{
    if (!ch.silu)
        return dyv;
#if W_DOUBLE
    if (ch.wide)
        return gn_dz_w(ch, dyv, v);
#endif
    const A z = fma(xh, ch.gam, ch.bet);
    const A s = (A)1 / ((A)1 + exp(-z));
    return dyv * s * fma(z, (A)1 - s, (A)1);
}

/* dx of one element, given its group's mean(g) and mean(g * xhat). */
inline A gn_dx_of(gn_chan ch, A mg, A mgx, A v, A dyv)
{
#pragma OPENCL FP_CONTRACT OFF
    const A xh = gn_xhat(ch, v);
    /* g rounded on its own (a statement, so it is not contracted into an fma with - mean(g)):
     * a one-element group has g == mean(g) exactly, and dx must come out 0 there, not the
     * product's rounding error times rstd = 1 / sqrt(eps). */
    const A g = gn_dz(ch, dyv, v, xh) * ch.gam;
    return (ch.r * ch.sc) * ((g - mg) - xh * mgx);
}

/* dx of one element of a channel with ch.wide (rstd * |gamma| at least CLNORM_GN_SILU_WIDE,
 * flags.h), given the group's mean(g) and mean(g * xhat) in W: xhat in W, g = dz * gamma_c
 * with dz (the SiLU's in double, gn_dz) rounded to A as the sums took it, the formula in W,
 * rounded once. Where rstd * |gamma| is 100 or more
 * the terms rstd * mean(g) and rstd * xhat * mean(g * xhat) are often a hundred times dx and
 * cancel: in float one ulp of either, or of xhat, moved dx by 0.3x the bound 1e-5 + 1e-5
 * |ref| (bench/RESULTS.md, "dx of large rstd * |gamma| in double on the kernels"). */
#if W_DOUBLE
inline A gn_dx_of_w(gn_chan ch, W mg, W mgx, A v, A dyv)
{
    const W xw = gn_xhat_w(ch, v);
    const W g = (W)gn_dz(ch, dyv, v, 0) * GN_GAM_W(ch); /* (a wide dz takes no xhat) */
    return (A)((gn_r_w(ch) * (W)ch.sc) * ((g - mg) - xw * mgx));
}
#endif

/* Group row `row`'s mean(g) and mean(g * xhat) from gn_bwd_coef's coef (per row: the two
 * rounded to A, then what each rounding left, for gn_dx_of_w); with precomputed statistics
 * (CLNORM_KF_GLOBAL_STATS) both 0, so that dx = rstd * g: the statistics are constants, as in
 * oneDNN's use_global_stats and the row kinds' backward (norm_backward.cl), and gn_bwd_coef
 * does not run (RUN_DX_SUMS). gn_coef_lo_of gives the two remainders. */
#define GN_COEF_PER_ROW 4 /* src/op/group_norm.c: the coefficients' scratch */
inline A2 gn_coef_pair(__global const A *coef, ulong row, uint flags, uint word)
{
    if ((flags & CLNORM_KF_GLOBAL_STATS) != 0)
        return (A2)(0);
    return vload2(0, coef + row * GN_COEF_PER_ROW + word);
}
#define gn_coef_of(coef, row, flags) gn_coef_pair(coef, row, flags, 0)
#define gn_coef_lo_of(coef, row, flags) gn_coef_pair(coef, row, flags, 2)

/* The same with the two means in cf (gn_coef_of). */
inline A gn_dx(gn_chan ch, A2 cf, A v, A dyv)
{
    return gn_dx_of(ch, cf.s0, cf.s1, v, dyv);
}

/* GPUs: dx of one channel's elements p * s (p = p0, p0 + step, ... below p1) of the tensors at
 * xk, dk and ok, two elements' x and dy loaded before their stores. dx may be x or dy, so a
 * compiler keeps each load behind the store before it, one pair in flight per item; these
 * are the item's own elements, read before it writes them, each with gn_dx_of's operations:
 * the same bits as one at a time. */
inline void gn_dx_run(gn_chan ch, A2 cf, A2 lo, __global const T *xk, __global const T *dk,
                      __global T *ok, ulong p0, ulong p1, ulong step, ulong s)
{
    ulong p = p0;
    const A mg = cf.s0, mgx = cf.s1;
#if W_DOUBLE
    if (ch.wide) { /* gn_dx_of_w, the means from their two words */
        const W mw = (W)cf.s0 + (W)lo.s0, mxw = (W)cf.s1 + (W)lo.s1;
        for (; p < p1; p += step)
            STORE1(gn_dx_of_w(ch, mw, mxw, LOAD1(xk + p * s), LOAD1(dk + p * s)), ok + p * s);
        return;
    }
#endif
    for (; p + step < p1; p += 2 * step) {
        const A x0 = LOAD1(xk + p * s), d0 = LOAD1(dk + p * s);
        const A x1 = LOAD1(xk + (p + step) * s), d1 = LOAD1(dk + (p + step) * s);
        STORE1(gn_dx_of(ch, mg, mgx, x0, d0), ok + p * s);
        STORE1(gn_dx_of(ch, mg, mgx, x1, d1), ok + (p + step) * s);
    }
    if (p < p1)
        STORE1(gn_dx_of(ch, mg, mgx, LOAD1(xk + p * s), LOAD1(dk + p * s)), ok + p * s);
}

/* ---- CPU devices (one-item work-groups): loops in VW lanes. gn_xhat, gn_dz and gn_dx lane
 * by lane, each lane's statistics and parameters given as vectors: a channel's broadcast
 * (NCHW, positions in the lanes) or a table's row (NHWC, channels in the lanes). */
inline AV gn_xhat_lanes(AV v, AV K, AV m, AV r, AV sc) { return ((v * sc - K) - m) * r; }

/* silu: 0 none, 1 through the SiLU (a loop with a wide channel runs the W loops below). */
ALWAYS_INLINE inline AV gn_dz_lanes(AV dyv, AV v, AV xh, AV K, AV m, AV r, AV sc, AV gam,
                                    AV bet, const int silu)
{
    if (!silu)
        return dyv;
    const AV z = fma(xh, gam, bet);
    const AV s = (AV)(1) / ((AV)(1) + exp(-z));
    return dyv * s * fma(z, (AV)(1) - s, (AV)(1));
}

/* dx from xhat and g = dz * gamma, with rs = r * sc and the group's (mean(g), mean(g * xhat))
 * in c0, c1; g is rounded on its own by the caller, as in gn_dx. */
inline AV gn_dx_lanes(AV xh, AV g, AV rs, AV c0, AV c1)
{
#pragma OPENCL FP_CONTRACT OFF
    return rs * ((g - c0) - xh * c1);
}

/* NCHW: the loops in vectors along a channel's contiguous positions. The work-group loops of
 * the kernels below (GPUs) run one element per item per step; with one item, the compiler
 * kept them scalar (a reduction in fma order, an exp per element through the SiLU), and with
 * the SiLU they took 3-8x the host loop's time. The sums add VW interleaved partial sums,
 * then the lanes (bench/RESULTS.md, "The NCHW backward on CPU devices, in vectors"). */
#define GN_CH_XHAT(ch, v) gn_xhat_lanes(v, (AV)(ch.K), (AV)(ch.m), (AV)(ch.r), (AV)(ch.sc))
#define GN_CH_DZ(ch, dyv, v, xh, silu)                                                      \
    gn_dz_lanes(dyv, v, xh, (AV)(ch.K), (AV)(ch.m), (AV)(ch.r), (AV)(ch.sc), (AV)(ch.gam),  \
                (AV)(ch.bet), silu)

/* kahan_add(s, c, a * b), the product unrounded: fma(a, b, -c) in one rounding. A rounded
 * product in each term cost as much as the blocks' plain sums had: dgamma 1.06x the bound on
 * 4x48x8x16x16 NHWC (8,192 terms a channel; tests/torch_group_sweep.py, seed 1, case 101),
 * 0.55x with the block sums' fma. */
inline void gn_kahan_fma(A *s, A *c, A a, A b)
{
    const A y = fma(a, b, -*c);
    const A t = *s + y;
    *c = isfinite(t) ? (t - *s) - y : (A)0;
    *s = t;
}

inline void gn_kahan_fmav(AV *s, AV *c, AV a, AV b)
{
    const AV y = fma(a, b, -*c);
    const AV t = *s + y;
    *c = select((AV)0, (t - *s) - y, isfinite(t));
    *s = t;
}

/* (sum of dz * xhat, sum of dz) over positions [0, hw) of one channel row. Where W is
 * double: xhat in W from m + mlo and r + rlo (gn_xhat_w; the statistics in double,
 * gn_stats_w), each term dz * xhat and the sums in W, the even and the odd vectors' apart,
 * then the lanes; dz is A's as the dx pass takes it (dy, or the SiLU's from the float xhat).
 * A channel's sum there is dgamma's share of one sample, and the sums stay W up to dgamma
 * (the sums scratch is W): the float xhat of each term, the group's float m and r, and each
 * sum rounded to float had each left about 1e-5 RMS on a channel of 32 x 3,136 terms, and
 * together dgamma 1.6x the bound 1e-5 + 1e-5 |ref| from torch's float64 on 32x256x56x56
 * (issue #10's ResNet shape; tests/torch_layer_params.py, bench/RESULTS.md, "GroupNorm's
 * dgamma over long channels in double"). Without double: each lane's compensated sums
 * (every term: this file's header), two of each, of the even and of the odd vectors (one
 * chain of Kahan steps, four dependent additions a vector, held the SiLU backward to 0.31 of
 * the copy bandwidth at 8x320x32x32 on PoCL's CPU device), then the lanes. */
#if W_DOUBLE
ALWAYS_INLINE inline W2 gn_chan_sums_cv(gn_chan ch, __global const T *xc,
                                        __global const T *dc, ulong hw, const int silu)
{
    const ulong pv = hw / VW * VW;
    const WV sc = (WV)(ch.sc), K = (WV)(ch.K), m = (WV)(gn_m_w(ch)), r = (WV)(gn_r_w(ch));
    WV v1 = (WV)(0), v2 = (WV)(0), w1 = (WV)(0), w2 = (WV)(0);
    ulong p = 0;
    for (; p + 2 * VW <= pv; p += 2 * VW) {
        const AV xv = LOADV(xc + p), xv2 = LOADV(xc + p + VW);
        const WV dz = TO_WV(GN_CH_DZ(ch, LOADV(dc + p), xv, GN_CH_XHAT(ch, xv), silu));
        const WV dz2 = TO_WV(GN_CH_DZ(ch, LOADV(dc + p + VW), xv2, GN_CH_XHAT(ch, xv2), silu));
        v1 = fma(dz, ((TO_WV(xv) * sc - K) - m) * r, v1);
        w1 = fma(dz2, ((TO_WV(xv2) * sc - K) - m) * r, w1);
        v2 += dz;
        w2 += dz2;
    }
    if (p < pv) {
        const AV xv = LOADV(xc + p);
        const WV dz = TO_WV(GN_CH_DZ(ch, LOADV(dc + p), xv, GN_CH_XHAT(ch, xv), silu));
        v1 = fma(dz, ((TO_WV(xv) * sc - K) - m) * r, v1);
        v2 += dz;
    }
    W s1 = WV_HSUM(v1 + w1), s2 = WV_HSUM(v2 + w2);
    for (p = pv; p < hw; p++) {
        const A v = LOAD1(xc + p);
        const W dz = gn_dz(ch, LOAD1(dc + p), v, gn_xhat(ch, v));
        s1 = fma(dz, gn_xhat_w(ch, v), s1);
        s2 += dz;
    }
    return (W2)(s1, s2);
}
#else
ALWAYS_INLINE inline W2 gn_chan_sums_cv(gn_chan ch, __global const T *xc,
                                        __global const T *dc, ulong hw, const int silu)
{
    const ulong pv = hw / VW * VW;
    AV v1 = (AV)(0), v2 = (AV)(0), k1 = (AV)(0), k2 = (AV)(0);
    AV w1 = (AV)(0), w2 = (AV)(0), j1 = (AV)(0), j2 = (AV)(0);
    ulong p = 0;
    for (; p + 2 * VW <= pv; p += 2 * VW) {
        const AV xv = LOADV(xc + p);
        const AV xh = GN_CH_XHAT(ch, xv);
        const AV dz = GN_CH_DZ(ch, LOADV(dc + p), xv, xh, silu);
        const AV xv2 = LOADV(xc + p + VW);
        const AV xh2 = GN_CH_XHAT(ch, xv2);
        const AV dz2 = GN_CH_DZ(ch, LOADV(dc + p + VW), xv2, xh2, silu);
        gn_kahan_fmav(&v1, &k1, dz, xh);
        kahan_addv(&v2, &k2, dz);
        gn_kahan_fmav(&w1, &j1, dz2, xh2);
        kahan_addv(&w2, &j2, dz2);
    }
    if (p < pv) {
        const AV xv = LOADV(xc + p);
        const AV xh = GN_CH_XHAT(ch, xv);
        const AV dz = GN_CH_DZ(ch, LOADV(dc + p), xv, xh, silu);
        gn_kahan_fmav(&v1, &k1, dz, xh);
        kahan_addv(&v2, &k2, dz);
    }
    /* each chain's total less its compensation, then the lanes and the positions past the
     * last vector */
    A s1 = HSUM((v1 - k1) + (w1 - j1)), s2 = HSUM((v2 - k2) + (w2 - j2)), t1 = 0, t2 = 0;
    for (ulong p = pv; p < hw; p++) {
        const A v = LOAD1(xc + p), xh = gn_xhat(ch, v);
        const A dz = gn_dz(ch, LOAD1(dc + p), v, xh);
        t1 = fma(dz, xh, t1);
        t2 += dz;
    }
    return (W2)(s1 + t1, s2 + t2);
}
#endif

/* The channel rows (n, c) of this work-group: on CPU devices (L == 1) a contiguous block of
 * them, which one core then streams through in memory order (with 16x16 positions, rows of
 * 1 KiB, every 128th row as the GPUs stride made the sums and dx passes read at 4-8 GB/s);
 * on GPUs every num_groups-th. */
inline void gn_chan_rows(ulong rows, uint L, ulong *b, ulong *e, ulong *step)
{
    const ulong g = get_group_id(0), ng = get_num_groups(0);
    if (L == 1) {
        const ulong per = (rows + ng - 1) / ng;
        *b = min(rows, g * per);
        *e = min(rows, *b + per);
        *step = 1;
    } else {
        *b = g;
        *e = rows;
        *step = ng;
    }
}

/* dx of positions [0, hw) of one channel row, given its group's coefficients in cf. */
ALWAYS_INLINE inline void gn_chan_dx_cv(gn_chan ch, A2 cf, __global const T *xc,
                                        __global const T *dc, __global T *oc, ulong hw,
                                        const int silu)
{
#pragma OPENCL FP_CONTRACT OFF
    const ulong pv = hw / VW * VW;
    const AV rs = (AV)(ch.r * ch.sc), c0 = (AV)(cf.s0), c1 = (AV)(cf.s1);
    for (ulong p = 0; p < pv; p += VW) {
        const AV xv = LOADV(xc + p), xh = GN_CH_XHAT(ch, xv);
        const AV g = GN_CH_DZ(ch, LOADV(dc + p), xv, xh, silu) * ch.gam; /* as gn_dx */
        STOREV(gn_dx_lanes(xh, g, rs, c0, c1), oc + p);
    }
    for (ulong p = pv; p < hw; p++)
        STORE1(gn_dx(ch, cf, LOAD1(xc + p), LOAD1(dc + p)), oc + p);
}

/* NHWC: the loops in vectors along a position's contiguous channels. Such a vector may span
 * two groups, so each (n, tile) item first lays out every channel's statistics and
 * parameters as rows of C values (tables, GN_BT_LEN(C) per item): K, m, r, sc, gamma, beta
 * (gn_bwd_table_put), then its group's mean(g) and mean(g * xhat) (the dx pass,
 * gn_bwd_table_coef), then the compensations of the float sums pass's sums of dz * xhat and
 * dz (two rows; in the dx pass, what the two means' roundings left), then where W is double
 * the centre K + m + mlo in W (rows 10 and 11), what the modulation's fold left of gamma and
 * beta (glo, blo; gn_fold_rest) and r + rlo in W (rows 14 and 15): the W rows lie on 8 bytes,
 * every count of rows before them even (gn_xw_tab). */
#define GN_BT_LEN(C) (CLNORM_GN_TABLE_ROWS * (C)) /* (flags.h) */
#define GN_TBV(tb, k, C, c) GN_LDV((tb) + (k) * (C) + (c))
#if W_DOUBLE
#define GN_TBW(tb, k, C) ((__global W *)((tb) + (k) * (C))) /* a W row from row k */
#endif

inline void gn_bwd_table_put(__global A *tb, ulong C, ulong c, gn_chan ch)
{
    tb[c] = ch.K;
    tb[C + c] = ch.m;
    tb[2 * C + c] = ch.r;
    tb[3 * C + c] = ch.sc;
    tb[4 * C + c] = ch.gam;
    tb[5 * C + c] = ch.bet;
    tb[12 * C + c] = ch.glo; /* (gn_gam_w_tab) */
    tb[13 * C + c] = ch.blo;
#if W_DOUBLE
    GN_TBW(tb, 10, C)[c] = (W)ch.K + gn_m_w(ch); /* (gn_xw_tab) */
    GN_TBW(tb, 14, C)[c] = gn_r_w(ch);
#endif
}

inline void gn_bwd_table_coef(__global A *tb, ulong C, ulong c, A2 cf, A2 lo)
{
    tb[6 * C + c] = cf.s0;
    tb[7 * C + c] = cf.s1;
    tb[8 * C + c] = lo.s0; /* (gn_bwd_dx_vec_wide) */
    tb[9 * C + c] = lo.s1;
}

#if W_DOUBLE
inline WV gn_rw_tab(__global const A *tb, ulong C, ulong c) /* r in W (gn_r_w) */
{
    return GN_LDW(GN_TBW(tb, 14, C) + c);
}

/* xhat in W: x * sc (exact: sc is a power of two) less the centre K + m + mlo (rounded in W,
 * 2^-53 of |K|), times r + rlo. */
inline WV gn_xw_tab(__global const A *tb, ulong C, ulong c, AV xv)
{
    return (TO_WV(xv) * TO_WV(GN_TBV(tb, 3, C, c)) - GN_LDW(GN_TBW(tb, 10, C) + c)) *
           gn_rw_tab(tb, C, c);
}
#endif

inline AV gn_xhatv(__global const A *tb, ulong C, ulong c, AV v)
{
    return gn_xhat_lanes(v, GN_TBV(tb, 0, C, c), GN_TBV(tb, 1, C, c), GN_TBV(tb, 2, C, c),
                         GN_TBV(tb, 3, C, c));
}

inline AV gn_dzv(__global const A *tb, ulong C, ulong c, AV dyv, AV v, AV xh, const int silu)
{
    return gn_dz_lanes(dyv, v, xh, GN_TBV(tb, 0, C, c), GN_TBV(tb, 1, C, c),
                       GN_TBV(tb, 2, C, c), GN_TBV(tb, 3, C, c), GN_TBV(tb, 4, C, c),
                       GN_TBV(tb, 5, C, c), silu);
}

inline AV gn_dxv(__global const A *tb, ulong C, ulong c, AV v, AV dyv, const int silu)
{
#pragma OPENCL FP_CONTRACT OFF
    const AV xh = gn_xhatv(tb, C, c, v);
    const AV g = gn_dzv(tb, C, c, dyv, v, xh, silu) * GN_TBV(tb, 4, C, c); /* as gn_dx */
    return gn_dx_lanes(xh, g, GN_TBV(tb, 2, C, c) * GN_TBV(tb, 3, C, c), GN_TBV(tb, 6, C, c),
                       GN_TBV(tb, 7, C, c));
}

/* Positions [p0, p1) of a sample: the sums of dz * xhat and dz of each whole vector of
 * channels into st (st[c], st[C + c]), position by position as the scalar loop adds them.
 * Where W is double, xhat (gn_xw_tab), each term and the sums in W (gn_chan_sums_cv says
 * why), dz A's as the dx pass takes it; else every term compensated (this file's header; the
 * compensations in the table's rows 8 and 9). st starts at zero. */
ALWAYS_INLINE inline void gn_bwd_sums_vec(__global const T *xs, __global const T *ds,
                                          __global A *tb, __global W *st, ulong p0, ulong p1,
                                          ulong C, const int silu)
{
    const ulong cv = C / VW * VW;
#if !W_DOUBLE
    __global A *k1 = tb + 8 * C, *k2 = tb + 9 * C;
    for (ulong c = 0; c < cv; c += VW) {
        GN_STV((AV)(0), k1 + c);
        GN_STV((AV)(0), k2 + c);
    }
#endif
    for (ulong p = p0; p < p1; p++) {
        __global const T *xp = xs + p * C, *dp = ds + p * C;
        for (ulong c = 0; c < cv; c += VW) {
#if defined(PREFETCH_NEXT)
            PREFETCH_L2(xp + GN_PD + c);
            PREFETCH_L2(dp + GN_PD + c);
#endif
            const AV xv = GN_LDX(xp + c), xh = gn_xhatv(tb, C, c, xv);
            const AV dz = gn_dzv(tb, C, c, GN_LDX(dp + c), xv, xh, silu);
#if W_DOUBLE
            const WV dw = TO_WV(dz);
            GN_STW(fma(dw, gn_xw_tab(tb, C, c, xv), GN_LDW(st + c)), st + c);
            GN_STW(GN_LDW(st + C + c) + dw, st + C + c);
#else
            AV s = GN_LDV(st + c), k = GN_LDV(k1 + c);
            gn_kahan_fmav(&s, &k, dz, xh);
            GN_STV(s, st + c);
            GN_STV(k, k1 + c);
            s = GN_LDV(st + C + c);
            k = GN_LDV(k2 + c);
            kahan_addv(&s, &k, dz);
            GN_STV(s, st + C + c);
            GN_STV(k, k2 + c);
#endif
        }
    }
#if !W_DOUBLE
    for (ulong c = 0; c < cv; c += VW) { /* each total less its compensation */
        GN_STV(GN_LDV(st + c) - GN_LDV(k1 + c), st + c);
        GN_STV(GN_LDV(st + C + c) - GN_LDV(k2 + c), st + C + c);
    }
#endif
}

/* dx of positions [p0, p1) of a sample, whole vectors of channels. */
ALWAYS_INLINE inline void gn_bwd_dx_vec(__global const T *xs, __global const T *ds,
                                        __global T *os, __global const A *tb, ulong p0,
                                        ulong p1, ulong C, const int silu)
{
    const ulong cv = C / VW * VW;
    for (ulong p = p0; p < p1; p++) {
        __global const T *xp = xs + p * C, *dp = ds + p * C;
        __global T *op = os + p * C;
        for (ulong c = 0; c < cv; c += VW) {
#if defined(PREFETCH_NEXT)
            PREFETCH_L2(xp + GN_PD + c);
            PREFETCH_L2(dp + GN_PD + c);
#endif
            GN_STX(gn_dxv(tb, C, c, GN_LDX(xp + c), GN_LDX(dp + c), silu), op + c);
        }
    }
}

/* The vector loops of wide channels (gn_chan's wide), in W and out of line. The loops above
 * are always inlined, silu a constant in each copy: with a third caller PoCL stopped inlining
 * gn_chan_sums_cv, and the NCHW SiLU backward's sums kernel took 15% longer where no channel
 * is wide (2x640x32x32, bench/kernel_times.sh). */
#if W_DOUBLE
/* NCHW, a wide channel: gn_channel_sums' sums and gn_dx_of_w's dx in W vectors. xhat in W,
 * dz (through the SiLU in W) rounded to A, the sums of dz * xhat and dz in W, rounded once;
 * dx's formula in W. */
inline WV gn_dz_w_lanes(WV xw, AV dyv, WV gam, WV bet, int silu)
{
    if (!silu)
        return TO_WV(dyv);
    const WV zw = fma(xw, gam, bet);
    const WV sw = (WV)(1) / ((WV)(1) + exp(-zw));
    return TO_WV(FROM_WV(TO_WV(dyv) * sw * fma(zw, (WV)(1) - sw, (WV)(1))));
}

/* gn_dx_of_w's formula in lanes: dz as the sums took it, gamma, rs = r * sc and the means in
 * W. */
inline AV gn_dx_w_lanes(WV xw, WV dz, WV gam, WV rs, WV mg, WV mgx)
{
    return FROM_WV(rs * ((dz * gam - mg) - xw * mgx));
}

inline WV gn_dz_xw_lanes(gn_chan ch, AV xv, AV dyv, WV *xw)
{
    *xw = ((TO_WV(xv) * (WV)(ch.sc) - (WV)(ch.K)) - (WV)(ch.m)) * (WV)(gn_r_w(ch));
    return gn_dz_w_lanes(*xw, dyv, (WV)(GN_GAM_W(ch)), (WV)(GN_BET_W(ch)), ch.silu);
}

NOINLINE W2 gn_chan_sums_cv_wide(gn_chan ch, __global const T *xc, __global const T *dc,
                                 ulong hw)
{
    const ulong pv = hw / VW * VW;
    WV s1 = (WV)(0), s2 = (WV)(0), xw;
    for (ulong p = 0; p < pv; p += VW) {
        const WV dz = gn_dz_xw_lanes(ch, LOADV(xc + p), LOADV(dc + p), &xw);
        s1 = fma(dz, xw, s1);
        s2 += dz;
    }
    W t1 = pv > 0 ? WV_HSUM(s1) : 0, t2 = pv > 0 ? WV_HSUM(s2) : 0;
    for (ulong p = pv; p < hw; p++) {
        const A v = LOAD1(xc + p);
        const W dz = gn_dz(ch, LOAD1(dc + p), v, 0);
        t1 = fma(dz, gn_xhat_w(ch, v), t1);
        t2 += dz;
    }
    return (W2)(t1, t2);
}

NOINLINE void gn_chan_dx_cv_wide(gn_chan ch, A2 cf, A2 lo, __global const T *xc,
                                 __global const T *dc, __global T *oc, ulong hw)
{
    const ulong pv = hw / VW * VW;
    const W mw = (W)cf.s0 + (W)lo.s0, mxw = (W)cf.s1 + (W)lo.s1;
    const WV rs = (WV)(gn_r_w(ch) * (W)ch.sc), gam = (WV)(GN_GAM_W(ch));
    for (ulong p = 0; p < pv; p += VW) {
        WV xw;
        const WV dz = gn_dz_xw_lanes(ch, LOADV(xc + p), LOADV(dc + p), &xw);
        STOREV(gn_dx_w_lanes(xw, dz, gam, rs, (WV)(mw), (WV)(mxw)), oc + p);
    }
    for (ulong p = pv; p < hw; p++)
        STORE1(gn_dx_of_w(ch, mw, mxw, LOAD1(xc + p), LOAD1(dc + p)), oc + p);
}
#else /* (never called: no channel is wide without double) */
NOINLINE W2 gn_chan_sums_cv_wide(gn_chan ch, __global const T *xc, __global const T *dc,
                                 ulong hw)
{
    return ch.silu ? gn_chan_sums_cv(ch, xc, dc, hw, 1) : gn_chan_sums_cv(ch, xc, dc, hw, 0);
}

NOINLINE void gn_chan_dx_cv_wide(gn_chan ch, A2 cf, A2 lo, __global const T *xc,
                                 __global const T *dc, __global T *oc, ulong hw)
{
    if (ch.silu)
        gn_chan_dx_cv(ch, cf, xc, dc, oc, hw, 1);
    else
        gn_chan_dx_cv(ch, cf, xc, dc, oc, hw, 0);
}
#endif

#if W_DOUBLE
/* NHWC, a tile one of whose channels is wide: every channel's xhat, dz, sums and dx in W
 * vectors, as gn_chan_sums_cv_wide and gn_chan_dx_cv_wide, the statistics and parameters
 * from the table (gn_bwd_table_put); the dx pass finds the group means' remainders in rows 8
 * and 9 (gn_bwd_table_coef). */
/* gam and bet in W (GN_GAM_W, GN_BET_W) */
#if defined(CLNORM_GN_MOD)
inline WV gn_gam_w_tab(__global const A *tb, ulong C, ulong c)
{
    return TO_WV(GN_TBV(tb, 4, C, c)) + TO_WV(GN_TBV(tb, 12, C, c));
}
inline WV gn_bet_w_tab(__global const A *tb, ulong C, ulong c)
{
    return TO_WV(GN_TBV(tb, 5, C, c)) + TO_WV(GN_TBV(tb, 13, C, c));
}
#else
#define gn_gam_w_tab(tb, C, c) TO_WV(GN_TBV(tb, 4, C, c))
#define gn_bet_w_tab(tb, C, c) TO_WV(GN_TBV(tb, 5, C, c))
#endif

NOINLINE void gn_bwd_sums_vec_wide(__global const T *xs, __global const T *ds, __global A *tb,
                                   __global W *st, ulong p0, ulong p1, ulong C, int silu)
{
    const ulong cv = C / VW * VW;
    for (ulong p = p0; p < p1; p++) {
        __global const T *xp = xs + p * C, *dp = ds + p * C;
        for (ulong c = 0; c < cv; c += VW) {
            const AV xv = GN_LDX(xp + c);
            const WV xw = gn_xw_tab(tb, C, c, xv);
            const WV dz = gn_dz_w_lanes(xw, GN_LDX(dp + c), gn_gam_w_tab(tb, C, c),
                                        gn_bet_w_tab(tb, C, c), silu);
            GN_STW(fma(dz, xw, GN_LDW(st + c)), st + c);
            GN_STW(GN_LDW(st + C + c) + dz, st + C + c);
        }
    }
}

NOINLINE void gn_bwd_dx_vec_wide(__global const T *xs, __global const T *ds, __global T *os,
                                 __global const A *tb, ulong p0, ulong p1, ulong C, int silu)
{
    const ulong cv = C / VW * VW;
    for (ulong p = p0; p < p1; p++) {
        __global const T *xp = xs + p * C, *dp = ds + p * C;
        __global T *op = os + p * C;
        for (ulong c = 0; c < cv; c += VW) {
            const AV xv = GN_LDX(xp + c);
            const WV xw = gn_xw_tab(tb, C, c, xv);
            const WV gam = gn_gam_w_tab(tb, C, c);
            const WV dz = gn_dz_w_lanes(xw, GN_LDX(dp + c), gam, gn_bet_w_tab(tb, C, c), silu);
            const WV mg = TO_WV(GN_TBV(tb, 6, C, c)) + TO_WV(GN_TBV(tb, 8, C, c));
            const WV mgx = TO_WV(GN_TBV(tb, 7, C, c)) + TO_WV(GN_TBV(tb, 9, C, c));
            const WV rs = gn_rw_tab(tb, C, c) * TO_WV(GN_TBV(tb, 3, C, c));
            GN_STX(gn_dx_w_lanes(xw, dz, gam, rs, mg, mgx), op + c);
        }
    }
}
#else /* (never called: no channel is wide without double) */
NOINLINE void gn_bwd_sums_vec_wide(__global const T *xs, __global const T *ds, __global A *tb,
                                   __global W *st, ulong p0, ulong p1, ulong C, int silu)
{
    if (silu)
        gn_bwd_sums_vec(xs, ds, tb, st, p0, p1, C, 1);
    else
        gn_bwd_sums_vec(xs, ds, tb, st, p0, p1, C, 0);
}

NOINLINE void gn_bwd_dx_vec_wide(__global const T *xs, __global const T *ds, __global T *os,
                                 __global const A *tb, ulong p0, ulong p1, ulong C, int silu)
{
    if (silu)
        gn_bwd_dx_vec(xs, ds, os, tb, p0, p1, C, 1);
    else
        gn_bwd_dx_vec(xs, ds, os, tb, p0, p1, C, 0);
}
#endif

#if W_DOUBLE
/* gn_stats_w (op_group_norm.cl) of an NCHW group row: its contiguous elements in W vectors,
 * two vectors a step (their own sums: the chain of dependent double additions, not the
 * loads, bounds a row that is in cache). */
inline void gn_row_stats_w(row_in in, ulong cols, uint lid, uint L, __local A *lo,
                           __local A *hi, A *K, A *m, A *r, A *rlo, A *mlo, A sc, A eps,
                           int wide)
{
    const W Kw = *K, mw = *m, sw = sc;
    const ulong nv = cols / VW;
    WV s1 = (WV)(0), q1 = (WV)(0), s2 = (WV)(0), q2 = (WV)(0);
    ulong v = lid;
    for (; v + L < nv; v += 2 * L) {
        const WV d1 = (TO_WV(LOADV(in.x + v * VW)) * (WV)(sw) - (WV)(Kw)) - (WV)(mw);
        const WV d2 = (TO_WV(LOADV(in.x + (v + L) * VW)) * (WV)(sw) - (WV)(Kw)) - (WV)(mw);
        s1 += d1;
        s2 += d2;
        q1 = fma(d1, d1, q1);
        q2 = fma(d2, d2, q2);
    }
    if (v < nv) {
        const WV d1 = (TO_WV(LOADV(in.x + v * VW)) * (WV)(sw) - (WV)(Kw)) - (WV)(mw);
        s1 += d1;
        q1 = fma(d1, d1, q1);
    }
    W S = WV_HSUM(s1 + s2), Q = WV_HSUM(q1 + q2);
    for (ulong i = nv * VW + lid; i < cols; i += L) {
        const W d = gn_dev_w(LOAD1(in.x + i), sw, Kw, mw);
        S += d;
        Q = fma(d, d, Q);
    }
    gn_stats_w(S, Q, cols, lid, L, lo, hi, K, m, r, rlo, mlo, sc, eps, wide, 1);
}
#endif

/*
 * Saved float32 statistics of a backward (CLNORM_KF_REFINED, group_norm.c: layer-1 calls;
 * host calls recompute such statistics before, src/execute.c): gn_refine_stats writes them
 * into the stats scratch, where the chain's kernels read them as they read recomputed ones
 * (gn_stats_of); the NHWC work-group kernel (gn_nhwc_bwd_group, group_backward_wg.cl) calls
 * gn_refined_mean itself, one launch fewer. A float32 mean is the group's rounded, up to
 * |mean| 2^-24 off, which xhat carries times rstd into dx, dgamma and through the SiLU into
 * dz: where a group's |mean| * rstd is above CLNORM_SAVED_MEAN_SPAN (flags.h) it is taken
 * around its shift K (the median of its first three elements, an element of the group, so
 * x - K is exact) with m = (mean - K) plus the mean of the deviations ((x - K) - (mean - K)),
 * read here: the group's mean to the rounding of its deviations. rstd stays as given (its
 * rounding is relative). Other groups go in as given (K 0, m the mean), the same values the
 * kernels read without this step. nhwc: the group is cpg channels strided by C over the
 * positions, else one contiguous block.
 *
 * gn_refined_mean: where fix, (*K_out, *m_out) the corrected pair, else left as they are. A
 * work-group per group row, every item getting the result; every item must call it, fix or
 * not, since its sum's barriers may not lie under a branch on the data (gn_nhwc_group_stats
 * says why).
 */
inline void gn_refined_mean(__global const T *xs, A mu, int fix, ulong g, ulong C, ulong cpg,
                            ulong hw, const int nhwc, __local A *scratch, __local A *scratch2,
                            uint lid, uint L, A *K_out, A *m_out)
{
    const ulong len = cpg * hw;
    __global const T *xg = xs + (nhwc ? g * cpg : g * len);
    fix = fix && len > 0;
    /* element j of the group: NCHW contiguous; NHWC position j / cpg, channel j % cpg */
#define GN_REFINE_AT(j) LOAD1(xg + (nhwc ? ((j) / cpg) * C + (j) % cpg : (j)))
    const A K = !fix ? 0
                : len >= 3 ? med3(GN_REFINE_AT(0), GN_REFINE_AT(1), GN_REFINE_AT(2))
                           : GN_REFINE_AT(0);
#undef GN_REFINE_AT
    const A m0 = mu - K;
    /* the deviations' sum: float vectors (NCHW) or a position's channels (NHWC) at a time,
     * each then Kahan-added; the item's positions or vectors every L-th */
    A s = 0, c = 0;
    if (fix && !nhwc) {
        const ulong nv = len / VW;
        for (ulong v0 = lid; v0 < nv; v0 += (ulong)L * BLOCK_V) {
            const ulong vend = min(nv, v0 + (ulong)L * BLOCK_V);
            AV a = (AV)(0);
            for (ulong v = v0; v < vend; v += L)
                a += (LOADV(xg + v * VW) - K) - m0;
            kahan_add(&s, &c, HSUM(a));
        }
        for (ulong j = nv * VW + lid; j < len; j += L)
            kahan_add(&s, &c, (LOAD1(xg + j) - K) - m0);
    } else if (fix) {
        for (ulong p = lid; p < hw; p += L) {
            __global const T *xp = xg + p * C;
            A a0 = 0, a1 = 0;
            ulong k = 0;
            for (; k + 1 < cpg; k += 2) {
                a0 += (LOAD1(xp + k) - K) - m0;
                a1 += (LOAD1(xp + k + 1) - K) - m0;
            }
            if (k < cpg)
                a0 += (LOAD1(xp + k) - K) - m0;
            kahan_add(&s, &c, a0 + a1);
        }
    }
#if W_DOUBLE
    const W tot = wg_sum_w((W)s, scratch, scratch2, lid, L);
#else
    const W tot = wg_sum(s, scratch, lid, L);
#endif
    if (fix) {
        *K_out = K;
        *m_out = (A)((W)m0 + tot / (W)len);
    }
}

/* gn_refined_mean of group row `row` (group g of the sample at xs) into the stats scratch. */
inline void gn_refine_group(__global const T *xs, __global const P *mean, __global const P *rstd,
                            __global A *stats, ulong row, ulong g, ulong C, ulong cpg, ulong hw,
                            const int nhwc, __local A *scratch, __local A *scratch2, uint lid,
                            uint L)
{
    const A mu = mean[row], r = rstd[row];
    A K = 0, m = mu;
    gn_refined_mean(xs, mu, saved_mean_off(mu, r), g, C, cpg, hw, nhwc, scratch, scratch2, lid,
                    L, &K, &m);
    if (lid == 0)
        gn_put_stats(stats, row, K, m, r, 0, 1, 0);
}

/* gn_refine_group over every group row: name's kernel for one layout (nhwc 0 or 1). */
#define GN_REFINE_KERNEL(name, nhwc)                                                        \
    __kernel void name(__global const T *x, __global const P *mean, __global const P *rstd,  \
                       __global A *stats, __local A *scratch, __local A *scratch2, KS_PARAM) \
    {                                                                                       \
        KS_BEGIN;                                                                           \
        KS_TENSOR(x);                                                                       \
        KS_TENSOR(mean);                                                                    \
        KS_TENSOR(rstd);                                                                    \
        GN_UNPACK                                                                           \
        KS_UL(rows);                                                                        \
        const ulong G = gn_groups, cpg = gn_cpg, hw = gn_hw;                                \
        const uint lid = get_local_id(0), L = get_local_size(0);                            \
        for (ulong row = get_group_id(0); row < rows; row += get_num_groups(0))             \
            gn_refine_group(x + x_off + (row / G) * x_stride, mean + mean_off,              \
                            rstd + rstd_off, stats, row, row % G, G * cpg, cpg, hw, (nhwc),  \
                            scratch, scratch2, lid, L);                                     \
    }
GN_REFINE_KERNEL(gn_refine_stats, 0)
GN_REFINE_KERNEL(gn_nhwc_refine_stats, 1)

/* Statistics of every group row, as the NCHW forward computes them; where the device has
 * double, again in double (gn_stats_w, op_group_norm.cl): replacing the float ones where rstd
 * is at least CLNORM_GN_VAR_WIDE, elsewhere what their roundings left (rlo, mlo) for the
 * double sums (gn_chan_sums_cv). The row again from cache: on PoCL's CPU device a group row
 * of up to a few hundred KiB is still in the core's L2 (bench/RESULTS.md, "GroupNorm's dgamma
 * over long channels in double"). */
__kernel void gn_nchw_stats(IN_PTRS, __global A *stats, __local A *scratch, __local A *scratch2,
                            KS_PARAM)
{
    KS_BEGIN;
    IN_UNPACK
    KS_ROW_SCALARS;
    const uint lid = get_local_id(0), L = get_local_size(0);
    for (ulong row = get_group_id(0); row < rows; row += get_num_groups(0)) {
        A2 K;
        A m, r, sc;
        const row_in in = make_row_in(IN_ARGS, row);
        row_stats(in, cols, lid, L, scratch, 0, eps, &K, &m, &r, &sc);
        A k = K.s0, rlo = 0, mlo = 0;
#if W_DOUBLE
        gn_row_stats_w(in, cols, lid, L, scratch, scratch2, &k, &m, &r, &rlo, &mlo, sc, eps,
                       r * sc >= (A)CLNORM_GN_VAR_WIDE);
#endif
        if (lid == 0)
            gn_put_stats(stats, row, k, m, r, rlo, sc, mlo);
    }
}

/* The work-group kernels' sums (gn_channel_sums) in W: double where the device has it
 * (cl_khr_fp64) and the storage is not float64 already, xhat in them too, from x unrounded
 * (gn_xhat_w). In float each term's xhat carries its rounding into the sum, which Kahan's
 * step cannot remove: over 8,192 terms a channel it put dgamma at 1.40x the bound on
 * 4x48x8x16x16 NHWC in the GPU geometry (tests/torch_group_sweep.py, seed 1, case 101), 0.72x
 * in double. Without double, W is A and each term goes into a Kahan sum (gn_kahan_fma). The
 * CPU devices' vector loops (gn_chan_sums_cv, gn_bwd_sums_vec) take W too, with the
 * statistics' remainders (mlo, rlo), since 2026-12-06. dz stays A (dy itself, or through the
 * SiLU: gn_dz). */
#if W_DOUBLE
inline void gn_wsum_prod(W *s, W *c, W a, W b) { *s = fma(a, b, *s); } /* c: unused */
#else
#define gn_wsum_prod gn_kahan_fma
#endif

/* (sum of dz * xhat, sum of dz) of one channel at positions p0, p0 + step, ... < p1 of the
 * channel's data xc, dc (position p at p * pstride), in W. */
inline W2 gn_channel_sums(gn_chan ch, __global const T *xc, __global const T *dc, ulong p0,
                          ulong p1, ulong step, ulong pstride)
{
    W s1 = 0, s2 = 0, k1 = 0, k2 = 0;
    for (ulong p = p0; p < p1; p += step) {
        const A v = LOAD1(xc + p * pstride);
        const W dz = (W)gn_dz(ch, LOAD1(dc + p * pstride), v, gn_xhat(ch, v));
        gn_wsum_prod(&s1, &k1, dz, gn_xhat_w(ch, v));
        w_add(&s2, &k2, dz);
    }
    return (W2)(s1, s2);
}

/* wg_sum of a W (two local arrays of L values of A; wg_sum_w, common.cl): the
 * work-group sums of the backward's sums and of its group means, rounded to A once. */
#if W_DOUBLE
#define GN_WG_SUM_W(v, lo, hi, lid, L) wg_sum_w(v, lo, hi, lid, L)
#else
#define GN_WG_SUM_W(v, lo, hi, lid, L) wg_sum(v, lo, lid, L)
#endif

/* A work-group per channel row (n, c) of hw contiguous positions. */
__kernel void gn_nchw_bwd_sums(GN_BWD_IN_PTRS, __global const A *stats, __global W *sums,
                               __local A *scratch, __local A *scratch2, KS_PARAM)
{
    KS_BEGIN;
    GN_BWD_IN_UNPACK
    GN_UNPACK
    KS_UL(rows);
    KS_UI(flags);
    const ulong G = gn_groups, cpg = gn_cpg, hw = gn_hw, C = G * cpg, N = rows / G;
    const uint lid = get_local_id(0), L = get_local_size(0);
    ulong nc0, nc1, step;
    gn_chan_rows(N * C, L, &nc0, &nc1, &step);
    for (ulong nc = nc0; nc < nc1; nc += step) {
        const ulong n = nc / C, c = nc % C;
        const gn_chan ch = GN_CHAN(n, c);
        __global const T *xc = x + x_off + n * x_stride + c * hw;
        __global const T *dc = dy + dy_off + n * dy_stride + c * hw;
        if (L == 1) {
            const W2 s = ch.wide   ? gn_chan_sums_cv_wide(ch, xc, dc, hw)
                         : ch.silu ? gn_chan_sums_cv(ch, xc, dc, hw, 1)
                                   : gn_chan_sums_cv(ch, xc, dc, hw, 0);
            sums[n * 2 * C + c] = s.s0;
            sums[n * 2 * C + C + c] = s.s1;
            continue;
        }
        const W2 s = gn_channel_sums(ch, xc, dc, lid, hw, L, 1);
        const W s1 = GN_WG_SUM_W(s.s0, scratch, scratch2, lid, L);
        const W s2 = GN_WG_SUM_W(s.s1, scratch, scratch2, lid, L);
        if (lid == 0) {
            sums[n * 2 * C + c] = s1;
            sums[n * 2 * C + C + c] = s2;
        }
    }
}

/* A work-group per tile of positions x all channels of a sample (group_nhwc.cl). */
__kernel void gn_nhwc_bwd_sums(GN_BWD_IN_PTRS, __global const A *stats, __global W *sums,
                               __global A *tables, KS_PARAM)
{
    KS_BEGIN;
    GN_BWD_IN_UNPACK
    GN_UNPACK
    KS_UL(rows);
    KS_UL(chunk_len);
    KS_UI(chunks);
    KS_UI(flags);
    KS_UL(first_block);
    const ulong G = gn_groups, cpg = gn_cpg, hw = gn_hw, C = G * cpg, N = rows / G;
    /* tile t as in gn_nhwc_moments (group_nhwc.cl): first_block is 0 unless the host runs
     * the tiles in parts (src/latency.c); none past the last tile */
    const ulong t = first_block + get_group_id(0);
    const uint lid = get_local_id(0), L = get_local_size(0);
    if (t >= chunks)
        return;
    const ulong p0 = t * chunk_len, p1 = min(hw, p0 + chunk_len);
    for (ulong n = get_group_id(1); n < N; n += get_num_groups(1)) {
        __global const T *xs = x + x_off + n * x_stride;
        __global const T *ds = dy + dy_off + n * dy_stride;
        __global W *st = sums + (n * chunks + t) * 2 * C;
        if (L == 1) {
            __global A *tb = tables + (n * chunks + t) * GN_BT_LEN(C);
            int wide = 0; /* a channel's dz in double: the vectors' in double */
            for (ulong c0 = 0; c0 < C; c0 += cpg) {
                const gn_chan cg = GN_CHAN(n, c0); /* the group's statistics, once */
                for (ulong c = c0; c < c0 + cpg; c++) {
                    const gn_chan ch = GN_CHAN_AT(cg, n, c);
                    wide |= ch.wide;
                    gn_bwd_table_put(tb, C, c, ch);
                }
            }
            for (ulong c = 0; c < 2 * C; c++)
                st[c] = 0;
            if (wide) /* decided once, not per vector */
                gn_bwd_sums_vec_wide(xs, ds, tb, st, p0, p1, C, (flags & CLNORM_KF_SILU) != 0);
            else if ((flags & CLNORM_KF_SILU) != 0)
                gn_bwd_sums_vec(xs, ds, tb, st, p0, p1, C, 1);
            else
                gn_bwd_sums_vec(xs, ds, tb, st, p0, p1, C, 0);
            /* channels past the last whole vector */
            for (ulong c = C / VW * VW; c < C; c++) {
                const W2 s = gn_channel_sums(GN_CHAN(n, c), xs + c, ds + c, p0, p1, 1, C);
                st[c] = s.s0;
                st[C + c] = s.s1;
            }
            continue;
        }
        for (ulong c = lid; c < C; c += L) {
            const W2 s = gn_channel_sums(GN_CHAN(n, c), xs + c, ds + c, p0, p1, 1, C);
            st[c] = s.s0;
            st[C + c] = s.s1;
        }
    }
}

/* A work-group per group row n * G + g: coef[row] = (mean(g), mean(g * xhat)), g = dz *
 * gamma_c (* (1 + scale) with a modulation), rounded to A, then what each rounding left. With
 * a modulation where W is double, the two words are the means of gn_fold_mod's float fold,
 * which the float paths' g = dz * gam take (a one-element group's dx is 0 only where g and
 * mean(g) have the same gam), and the remainders those of the means of the fold in W, which
 * the wide paths' g takes (GN_GAM_W): the sums of dz and dz * xhat weighted by what the float
 * fold left (gn_fold_rest) go into the remainders alone. */
__kernel void gn_bwd_coef(__global const P *gamma, __global const P *scale,
                          __global const W *sums, __global A *coef, __local A *scratch,
                          __local A *scratch2, KS_PARAM)
{
    KS_BEGIN;
    KS_TENSOR(gamma);
    KS_TENSOR(scale);
    GN_UNPACK
    KS_UL(rows);
    KS_UI(chunks);
    KS_UI(flags);
    const ulong G = gn_groups, cpg = gn_cpg, hw = gn_hw, C = G * cpg;
    const uint lid = get_local_id(0), L = get_local_size(0);
    const ulong entries = (ulong)chunks * cpg;
    const A total = (A)(cpg * hw);
    for (ulong row = get_group_id(0); row < rows; row += get_num_groups(0)) {
        const ulong n = row / G, c0 = (row % G) * cpg;
        __global const W *sn = sums + n * chunks * 2 * C + c0;
        __global const P *sr = GN_SCALE_ROW(n);
        W sg = 0, cg = 0, sgx = 0, cgx = 0;
#if W_DOUBLE && defined(CLNORM_GN_MOD)
        W rg = 0, rgx = 0; /* the same weighted by what the float fold left */
#endif
        for (ulong j = lid; j < entries; j += L) {
            const ulong k = j % cpg;
            __global const W *e = sn + (j / cpg) * 2 * C + k;
            const A g0 = (flags & CLNORM_KF_GAMMA) ? gamma[gamma_off + c0 + k] : (A)1;
            A gam = g0;
            if (sr)
                gam *= (A)1 + sr[c0 + k];
            gn_wsum_prod(&sgx, &cgx, (W)gam, e[0]);
            gn_wsum_prod(&sg, &cg, (W)gam, e[C]);
#if W_DOUBLE && defined(CLNORM_GN_MOD)
            if (sr) { /* (gn_fold_rest's glo) */
                const W rest = gn_gam_rest(g0, gam, sr, c0 + k);
                rgx = fma(rest, e[0], rgx);
                rg = fma(rest, e[C], rg);
            }
#endif
        }
        sg = GN_WG_SUM_W(sg, scratch, scratch2, lid, L);
        sgx = GN_WG_SUM_W(sgx, scratch, scratch2, lid, L);
        W fg = sg, fgx = sgx; /* the sums of the wide paths' g */
#if W_DOUBLE && defined(CLNORM_GN_MOD)
        fg += GN_WG_SUM_W(rg, scratch, scratch2, lid, L);
        fgx += GN_WG_SUM_W(rgx, scratch, scratch2, lid, L);
#endif
        if (lid == 0) { /* rounded once (gn_chan_sums_cv says why), and the remainders */
            const W mg = sg / (W)total, mgx = sgx / (W)total;
            __global A *cr = coef + row * GN_COEF_PER_ROW;
            cr[0] = (A)mg;
            cr[1] = (A)mgx;
            cr[2] = (A)(fg / (W)total - (W)cr[0]);
            cr[3] = (A)(fgx / (W)total - (W)cr[1]);
        }
    }
}

/* The weights of dgamma's and dbeta's tiles under a modulation: tile i's (1 + scale) is
 * sw[(i / tpb) * stride], tpb the tiles of one modulation sample (its entries x the tiles per
 * entry); sw 0 (no scale): every weight 1. */
typedef struct {
    __global const P *sw; /* the scale of channel c (or lane 0) in sample 0 */
    ulong stride, tpb;
} gn_tile_weights;

inline gn_tile_weights gn_weights_of(__global const P *scale, ulong scale_off,
                                     ulong scale_stride, ulong c, ulong srows, uint chunks,
                                     uint flags)
{
    gn_tile_weights w;
#if defined(CLNORM_GN_MOD)
    w.sw = (flags & CLNORM_KF_SCALE) ? scale + scale_off + c : 0;
#else
    w.sw = 0; /* (op_group_norm.cl, GN_SCALE_ROW) */
#endif
    w.stride = scale_stride;
    w.tpb = srows * chunks;
    return w;
}
#define GN_WEIGHTS(c) gn_weights_of(scale, scale_off, scale_stride, c, gn_srows, chunks, flags)

/* One column of sums (which: 0 dz * xhat, 1 dz) of channel c over tiles first, first + step,
 * ... in order, each tile weighted by its (1 + scale) under a modulation: in W, plain where
 * that is double (a few thousand tiles at most, each 2^-53 off), else Kahan (w_add). */
inline W gn_param_slice(__global const W *sums, ulong C, ulong c, uint which, ulong first,
                        ulong step, ulong tiles, gn_tile_weights w)
{
    W s = 0, k = 0;
    for (ulong i = first; i < tiles; i += step) {
        W v = sums[i * 2 * C + (ulong)which * C + c];
        if (w.sw)
            v *= (W)1 + (W)w.sw[(i / w.tpb) * w.stride];
        w_add(&s, &k, v);
    }
    return s;
}

/* The column over the tiles of slice sl, then the S slices added in slice order; the total to
 * items of slice 0. Every item of the group must call it. A slice's W crosses local memory as
 * two words of A, itself rounded (hi) and what that left (lo). */
inline W gn_param_sum(__global const W *sums, ulong C, ulong c, int valid, ulong tiles,
                      uint which, uint sl, uint S, uint cl, uint CB, __local A *hi,
                      __local A *lo, uint lid, uint L, gn_tile_weights w)
{
    W s = valid ? gn_param_slice(sums, C, c, which, sl, S, tiles, w) : (W)0, k;
    if (L == 1)
        return s;
    hi[lid] = (A)s;
    lo[lid] = (A)(s - (W)(A)s);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (sl == 0) {
        k = 0;
        for (uint j = 1; j < S; j++)
            w_add(&s, &k, (W)hi[j * CB + cl] + (W)lo[j * CB + cl]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    return s;
}

/* The parameter kernels' arguments after their pointers: dgamma's, dbeta's and scale's
 * offsets and strides, GroupNorm's scalars, rows, the tiles per sample and the flags. */
#define GN_PARAMS_UNPACK                                                                    \
    KS_BEGIN;                                                                               \
    KS_TENSOR(dgamma);                                                                      \
    KS_TENSOR(dbeta);                                                                       \
    KS_TENSOR(scale);                                                                       \
    GN_UNPACK                                                                               \
    KS_UL(rows);                                                                            \
    KS_UI(chunks);                                                                          \
    KS_UI(flags);

/* dgamma and dbeta: work-group b takes channels [b * CB, (b + 1) * CB), its L = CB x S items
 * each adding every S-th tile of one channel (Kahan), the S slices then added in slice order
 * in local memory (CB = 8 on GPUs, where a channel's tiles are many; CPU devices run
 * gn_bwd_params_lanes, and this kernel with L = 1 only under a forced work-group size). */
__kernel void gn_bwd_params(__global P *dgamma, __global P *dbeta, __global const P *scale,
                            __global const W *sums, __local A *scratch, __local A *scratch2,
                            KS_PARAM)
{
    GN_PARAMS_UNPACK
    const ulong C = gn_groups * gn_cpg, N = rows / gn_groups;
    const uint lid = get_local_id(0), L = get_local_size(0);
    const uint S = L >= 8 ? L / 8 : 1, CB = L / S;
    const uint cl = lid % CB, sl = lid / CB;
    const ulong c = get_group_id(0) * CB + cl;
    const int valid = c < C;
    const ulong tiles = N * chunks;
    const gn_tile_weights w = GN_WEIGHTS(c);
    /* the flags are the same for every item: every item reaches the same barriers */
    if ((flags & CLNORM_KF_GRAD_GAMMA) != 0) {
        const W s =
            gn_param_sum(sums, C, c, valid, tiles, 0, sl, S, cl, CB, scratch, scratch2, lid, L, w);
        if (sl == 0 && valid)
            dgamma[dgamma_off + c] = (A)s;
    }
    if ((flags & CLNORM_KF_GRAD_BETA) != 0) {
        const W s =
            gn_param_sum(sums, C, c, valid, tiles, 1, sl, S, cl, CB, scratch, scratch2, lid, L, w);
        if (sl == 0 && valid)
            dbeta[dbeta_off + c] = (A)s;
    }
}

/* dgamma and dbeta, one work-item (a work-group of one) per PW channels from PW x its index,
 * each adding the channel's tiles in order (Kahan): on CPU devices (CLNORM_PARAMS_VEC) VW
 * channels in vector lanes (the rest one by one), each lane with gn_param_slice's operations,
 * so the same bits as gn_bwd_params there. One item per channel made the pass a Kahan chain
 * per work-group, 10-70 us of a single 1.3 MB sample's backward on PoCL
 * (bench/kernel_times.sh). No local memory and no barrier: a kernel of its own (group_norm.c:
 * param_lanes), since PoCL 3.1 miscompiled this path beside gn_bwd_params' barriers in one
 * kernel (heap corruption under four-item work-groups). */
#if defined(CLNORM_PARAMS_VEC)
#define GN_PW VW
inline AV gn_param_sumv(__global const W *sums, ulong C, ulong c, ulong tiles, uint which,
                        gn_tile_weights w)
{
    WV s = 0, k = 0;
    for (ulong i = 0; i < tiles; i++) {
        WV v = GN_LDW(sums + i * 2 * C + (ulong)which * C + c);
        if (w.sw)
            v *= (WV)(1) + TO_WV(CAT(vload, VW)(0, w.sw + (i / w.tpb) * w.stride));
        w_addv(&s, &k, v);
    }
    return FROM_WV(s);
}
#else
#define GN_PW 1
#endif

__kernel void gn_bwd_params_lanes(__global P *dgamma, __global P *dbeta,
                                  __global const P *scale, __global const W *sums, KS_PARAM)
{
    GN_PARAMS_UNPACK
    const ulong C = gn_groups * gn_cpg, tiles = rows / gn_groups * chunks;
    const ulong c0 = get_global_id(0) * GN_PW;
    const int gg = (flags & CLNORM_KF_GRAD_GAMMA) != 0, gb = (flags & CLNORM_KF_GRAD_BETA) != 0;
    if (c0 >= C)
        return;
#if defined(CLNORM_PARAMS_VEC)
    if (c0 + VW <= C) {
        const gn_tile_weights w = GN_WEIGHTS(c0);
        if (gg)
            CAT(vstore, VW)(gn_param_sumv(sums, C, c0, tiles, 0, w), 0,
                            dgamma + dgamma_off + c0);
        if (gb)
            CAT(vstore, VW)(gn_param_sumv(sums, C, c0, tiles, 1, w), 0, dbeta + dbeta_off + c0);
        return;
    }
#endif
    for (ulong c = c0; c < min(C, c0 + GN_PW); c++) {
        const gn_tile_weights w = GN_WEIGHTS(c);
        if (gg)
            dgamma[dgamma_off + c] = (A)gn_param_slice(sums, C, c, 0, 0, 1, tiles, w);
        if (gb)
            dbeta[dbeta_off + c] = (A)gn_param_slice(sums, C, c, 1, 0, 1, tiles, w);
    }
}

/* dscale and dshift of a modulation: entry e = b * C + c of the (samples, C) outputs for
 * e = the item's global index, stepping by the grid, each the sums of sample b's tiles (its
 * gn_srows entries x chunks tiles) in order (Kahan), so the same bits on every geometry:
 * dshift = the sum of dz, dscale = gamma_c * (sum of dz * xhat) + beta_c * (sum of dz), the
 * sum of dz * z. An empty batch (rows 0) may have samples, of no entries: zeros. */
__kernel void gn_bwd_mod_params(__global const P *gamma, __global const P *beta,
                                __global P *dscale, __global P *dshift,
                                __global const W *sums, KS_PARAM)
{
    KS_BEGIN;
    KS_TENSOR(gamma);
    KS_TENSOR(beta);
    KS_TENSOR(dscale);
    KS_TENSOR(dshift);
    GN_UNPACK
    KS_UL(B);
    KS_UL(rows);
    KS_UI(chunks);
    KS_UI(flags);
    const ulong C = gn_groups * gn_cpg, tpb = gn_srows * chunks;
    const int gs = (flags & CLNORM_KF_GRAD_SCALE) != 0, gh = (flags & CLNORM_KF_GRAD_SHIFT) != 0;
    if (!gs && !gh)
        return;
    for (ulong e = get_global_id(0); e < B * C; e += get_global_size(0)) {
        const ulong b = e / C, c = e % C;
        W s1 = 0, k1 = 0, s0 = 0, k0 = 0;
        for (ulong i = b * tpb; i < (b + 1) * tpb; i++) {
            w_add(&s1, &k1, sums[i * 2 * C + c]);
            w_add(&s0, &k0, sums[i * 2 * C + C + c]);
        }
        if (gs) {
            const W gam = (flags & CLNORM_KF_GAMMA) ? (W)gamma[gamma_off + c] : (W)1;
            const W bet = (flags & CLNORM_KF_BETA) ? (W)beta[beta_off + c] : (W)0;
            dscale[dscale_off + b * dscale_stride + c] = tpb ? (A)(gam * s1 + bet * s0) : (A)0;
        }
        if (gh)
            dshift[dshift_off + b * dshift_stride + c] = (A)s0;
    }
}

/* In place (dx is x or dy) is safe in both dx kernels: each element is read by the item
 * that writes it, just before. */
__kernel void gn_nchw_bwd_dx(GN_BWD_PTRS, __global const A *stats, __global const A *coef,
                             KS_PARAM)
{
    KS_BEGIN;
    GN_BWD_UNPACK
    GN_UNPACK
    KS_UL(rows);
    KS_UI(flags);
    const ulong G = gn_groups, cpg = gn_cpg, hw = gn_hw, C = G * cpg, N = rows / G;
    const uint lid = get_local_id(0), L = get_local_size(0);
    ulong nc0, nc1, step;
    gn_chan_rows(N * C, L, &nc0, &nc1, &step);
    for (ulong nc = nc0; nc < nc1; nc += step) {
        const ulong n = nc / C, c = nc % C;
        const gn_chan ch = GN_CHAN(n, c);
        const A2 cf = gn_coef_of(coef, n * G + c / cpg, flags);
        const A2 lo = gn_coef_lo_of(coef, n * G + c / cpg, flags);
        __global const T *xc = x + x_off + n * x_stride + c * hw;
        __global const T *dc = dy + dy_off + n * dy_stride + c * hw;
        __global T *oc = dx + dx_off + n * dx_stride + c * hw;
        if (L == 1) {
            if (ch.wide)
                gn_chan_dx_cv_wide(ch, cf, lo, xc, dc, oc, hw);
            else if (ch.silu)
                gn_chan_dx_cv(ch, cf, xc, dc, oc, hw, 1);
            else
                gn_chan_dx_cv(ch, cf, xc, dc, oc, hw, 0);
            continue;
        }
        gn_dx_run(ch, cf, lo, xc, dc, oc, lid, hw, L, 1);
    }
}

__kernel void gn_nhwc_bwd_dx(GN_BWD_PTRS, __global const A *stats, __global const A *coef,
                             __global A *tables, KS_PARAM)
{
    KS_BEGIN;
    GN_BWD_UNPACK
    GN_UNPACK
    KS_UL(rows);
    KS_UL(chunk_len);
    KS_UI(chunks);
    KS_UI(flags);
    KS_UL(first_block);
    const ulong G = gn_groups, cpg = gn_cpg, hw = gn_hw, C = G * cpg, N = rows / G;
    /* tile t as in gn_nhwc_bwd_sums */
    const ulong t = first_block + get_group_id(0);
    const uint lid = get_local_id(0), L = get_local_size(0);
    if (t >= chunks)
        return;
    const ulong p0 = t * chunk_len, p1 = min(hw, p0 + chunk_len);
    for (ulong n = get_group_id(1); n < N; n += get_num_groups(1)) {
        __global const T *xs = x + x_off + n * x_stride;
        __global const T *ds = dy + dy_off + n * dy_stride;
        __global T *os = dx + dx_off + n * dx_stride;
        if (L == 1) {
            __global A *tb = tables + (n * chunks + t) * GN_BT_LEN(C);
            int wide = 0; /* as gn_nhwc_bwd_sums */
            for (ulong c0 = 0; c0 < C; c0 += cpg) {
                const gn_chan cg = GN_CHAN(n, c0); /* the group's statistics, once */
                const A2 cf = gn_coef_of(coef, n * G + c0 / cpg, flags);
                const A2 lo = gn_coef_lo_of(coef, n * G + c0 / cpg, flags);
                for (ulong c = c0; c < c0 + cpg; c++) {
                    const gn_chan ch = GN_CHAN_AT(cg, n, c);
                    wide |= ch.wide;
                    gn_bwd_table_put(tb, C, c, ch);
                    gn_bwd_table_coef(tb, C, c, cf, lo);
                }
            }
            if (wide)
                gn_bwd_dx_vec_wide(xs, ds, os, tb, p0, p1, C, (flags & CLNORM_KF_SILU) != 0);
            else if ((flags & CLNORM_KF_SILU) != 0)
                gn_bwd_dx_vec(xs, ds, os, tb, p0, p1, C, 1);
            else
                gn_bwd_dx_vec(xs, ds, os, tb, p0, p1, C, 0);
            for (ulong c = C / VW * VW; c < C; c++) { /* as the GPUs' (gn_dx_run) */
                const ulong row = n * G + c / cpg;
                gn_dx_run(GN_CHAN(n, c), gn_coef_of(coef, row, flags),
                          gn_coef_lo_of(coef, row, flags), xs + c, ds + c, os + c, p0, p1, 1,
                          C);
            }
            continue;
        }
        for (ulong c = lid; c < C; c += L) {
            const gn_chan ch = GN_CHAN(n, c);
            const A2 cf = gn_coef_of(coef, n * G + c / cpg, flags);
            gn_dx_run(ch, cf, gn_coef_lo_of(coef, n * G + c / cpg, flags), xs + c, ds + c,
                      os + c, p0, p1, 1, C);
        }
    }
}
