/*
 * group_backward_small.cl - GroupNorm's float32 and float64 backward of small contiguous
 * groups without the SiLU: at most CLNORM_GN_SMALL_BWD_ELEMS elements (flags.h), NCHW (or no
 * spatial extent, the same memory); src/op/group_norm.c, small_backward. One work-item per
 * group row, in one launch before the parameter pass (gn_bwd_params, group_backward.cl): the
 * group's statistics from x (or the given mean and rstd), its channels' sums of dy * xhat and
 * dy (into the sums scratch as one tile per sample, which the parameter pass adds), the group
 * means mean(g) and mean(g * xhat), then dx: all in W, double where the device has it, from x
 * and dy, each result rounded once.
 *
 * Why: dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) is a difference of terms of up to
 * rstd * |g| that nearly cancel in a small group (in a group of two elements, entirely), so
 * every float rounding on the way (the statistics, xhat, the means) comes out multiplied by
 * rstd. The float chain (statistics, sums, group means, dx: four launches) left dx up to 1.6x
 * the bound 1e-5 + 1e-5 |ref| from torch's float64 on groups of 4 to 7 elements of spread
 * 1e-2 around 1e3 (tests/torch_group_sweep.py with CLNORM_HOST_BYTES=0: seed 2 case 10, seed
 * 5 cases 75 and 187); here 0.04-0.05x. The host loop computes such groups in double too
 * (src/op/group_norm_host.c, gn_wide), from the same threshold. On PoCL's CPU device this one
 * launch also ran 1.4-2.4x faster than the chain at 1 to 16 elements a group, and as fast at
 * 64 (bench/RESULTS.md, "Small groups' backward on the kernels, in one launch"). NHWC, the
 * SiLU, float16 and bfloat16 keep the chain: one item a group reading strided channels, a
 * double exp per element, or scalar half conversions ran at 0.1-0.4x its speed there.
 *
 * A group row is L = cpg x hw contiguous elements, channel k's at [k * hw, (k + 1) * hw); at
 * most 64: the item's later passes read it from its cache.
 * Needs common.cl, op_group_norm.cl and group_backward.cl (GN_BWD_PTRS) before it.
 */

#pragma OPENCL FP_CONTRACT OFF

/* The statistics of a group in W: xhat = ((x * sc - K) - m) * r, r * sc the true rstd. */
typedef struct {
    W K, m, r, sc;
} gn_small_stats;

/* 1 / sqrt(v): rounded once from double where W is double; else rsqrt, as rstd_rounded. */
inline W gn_small_rstd(W v)
{
#if W_DOUBLE || defined(CLNORM_F64)
    return (W)1 / sqrt(v);
#else
    return rsqrt(v);
#endif
}

inline W gn_small_dev(__global const T *xg, ulong i, W sc, W K)
{
    return (W)LOAD1(xg + i) * sc - K;
}

/* A group's statistics from its L elements at xg, as row_stats takes a row's (row_stats.cl):
 * shifted by the median of its first three elements (its first for fewer), two passes over
 * x * sc - K, redone scaled by a power of two when the squares overflow while the values are
 * finite (only possible in float without double, or with float64 storage). Each pass in two
 * interleaved sums: one chain of dependent additions held the kernel to a third of its speed. */
inline gn_small_stats gn_small_moments(__global const T *xg, ulong L, W eps)
{
    gn_small_stats s;
    s.sc = 1;
    for (int pass = 0;; pass++) {
        const A k0 = LOAD1(xg);
        s.K = (W)(L >= 3 ? med3(k0, LOAD1(xg + 1), LOAD1(xg + 2)) : k0) * s.sc;
        W S0 = 0, S1 = 0;
        ulong i = 0;
        for (; i + 1 < L; i += 2) {
            S0 += gn_small_dev(xg, i, s.sc, s.K);
            S1 += gn_small_dev(xg, i + 1, s.sc, s.K);
        }
        if (i < L)
            S0 += gn_small_dev(xg, i, s.sc, s.K);
        s.m = (S0 + S1) / (W)L;
        W Q0 = 0, Q1 = 0;
        for (i = 0; i + 1 < L; i += 2) {
            const W d0 = gn_small_dev(xg, i, s.sc, s.K) - s.m;
            const W d1 = gn_small_dev(xg, i + 1, s.sc, s.K) - s.m;
            Q0 = fma(d0, d0, Q0);
            Q1 = fma(d1, d1, Q1);
        }
        if (i < L) {
            const W d = gn_small_dev(xg, i, s.sc, s.K) - s.m;
            Q0 = fma(d, d, Q0);
        }
        const W var = (Q0 + Q1) / (W)L;
        if (pass == 1 || isfinite(var)) {
            s.r = gn_small_rstd(var + eps * s.sc * s.sc);
            return s;
        }
        A M = 0; /* the largest magnitude, exact in A */
        for (i = 0; i < L; i++)
            M = fmax(M, fabs(LOAD1(xg + i)));
        s.sc = rescale_factor(M);
    }
}

/* Channel c's gamma in W, with the entry's modulation row sr (0 when absent) folded in as
 * gn_fold_mod folds it; without the SiLU the backward needs no beta nor shift. */
inline W gn_small_gamma(__global const P *gamma, ulong gamma_off, __global const P *sr, ulong c,
                        uint flags)
{
    const W gam = (flags & CLNORM_KF_GAMMA) ? (W)gamma[gamma_off + c] : (W)1;
    return sr ? gam * ((W)1 + (W)sr[c]) : gam;
}

/* The backward of one group: its L = cpg * hw elements of x, dy and dx at xg, dg and og, its
 * statistics s, its first channel c0 of C, the sums of its sample at sn (2 C values: the
 * dy * xhat sums of every channel, then the dy sums, as gn_*_bwd_sums lay them out). In place
 * (dx is x or dy) is safe: a group's elements are read and written by its item alone, each
 * read before its store. */
inline void gn_small_group(__global const T *xg, __global const T *dg, __global T *og,
                           gn_small_stats s, __global const P *gamma, ulong gamma_off,
                           __global const P *sr, __global W *sn, ulong C, ulong c0, ulong cpg,
                           ulong hw, uint flags)
{
    W sg = 0, sgx = 0;
    for (ulong k = 0; k < cpg; k++) {
        const ulong b = k * hw, e = b + hw;
        W s1 = 0, s2 = 0, t1 = 0, t2 = 0;
        ulong i = b;
        for (; i + 1 < e; i += 2) {
            const W xh0 = (gn_small_dev(xg, i, s.sc, s.K) - s.m) * s.r;
            const W xh1 = (gn_small_dev(xg, i + 1, s.sc, s.K) - s.m) * s.r;
            const W d0 = (W)LOAD1(dg + i), d1 = (W)LOAD1(dg + i + 1);
            s1 = fma(d0, xh0, s1);
            t1 = fma(d1, xh1, t1);
            s2 += d0;
            t2 += d1;
        }
        if (i < e) {
            const W xh = (gn_small_dev(xg, i, s.sc, s.K) - s.m) * s.r;
            const W d = (W)LOAD1(dg + i);
            s1 = fma(d, xh, s1);
            s2 += d;
        }
        s1 += t1;
        s2 += t2;
        sn[c0 + k] = s1;
        sn[C + c0 + k] = s2;
        const W gam = gn_small_gamma(gamma, gamma_off, sr, c0 + k, flags);
        sgx = fma(gam, s1, sgx);
        sg = fma(gam, s2, sg);
    }
    if ((flags & CLNORM_KF_GRAD_X) == 0)
        return;
    /* precomputed statistics are constants: dx = rstd * g (gn_coef_of) */
    const W L = (W)(cpg * hw);
    const int given = (flags & CLNORM_KF_GLOBAL_STATS) != 0;
    const W mg = given ? (W)0 : sg / L, mgx = given ? (W)0 : sgx / L;
    const W rs = s.r * s.sc;
    for (ulong k = 0; k < cpg; k++) {
        const W gam = gn_small_gamma(gamma, gamma_off, sr, c0 + k, flags);
        for (ulong i = k * hw; i < (k + 1) * hw; i++) {
            const W xh = (gn_small_dev(xg, i, s.sc, s.K) - s.m) * s.r;
            /* g rounded on its own (gn_dx_of says why) */
            const W g = (W)LOAD1(dg + i) * gam;
            STORE1((A)(rs * ((g - mg) - xh * mgx)), og + i);
        }
    }
}

/* Group rows [b, e) by `step`: on CPU devices (one-item work-groups) a contiguous block per
 * work-group, as gn_chan_rows (group_backward.cl) takes them; on GPUs one row per item,
 * neighbouring items neighbouring groups. */
inline void gn_small_rows(ulong rows, ulong *b, ulong *e, ulong *step)
{
    if (get_local_size(0) == 1) {
        gn_chan_rows(rows, 1, b, e, step);
    } else {
        *b = get_global_id(0);
        *e = rows;
        *step = get_global_size(0);
    }
}

__kernel void gn_small_bwd(GN_BWD_PTRS, __global W *sums, KS_PARAM)
{
    KS_BEGIN;
    GN_BWD_UNPACK
    GN_UNPACK
    KS_UL(rows);
    KS_A(eps);
    KS_UI(flags);
    const ulong G = gn_groups, cpg = gn_cpg, hw = gn_hw, C = G * cpg, L = cpg * hw;
    ulong b, e, step;
    gn_small_rows(rows, &b, &e, &step);
    for (ulong row = b; row < e; row += step) {
        const ulong n = row / G, c0 = (row - n * G) * cpg;
        __global const T *xg = x + x_off + n * x_stride + c0 * hw;
        gn_small_stats s;
        if ((flags & CLNORM_KF_RECOMPUTE) != 0) {
            s = gn_small_moments(xg, L, (W)eps);
        } else { /* the saved or precomputed statistics (no stats scratch here) */
            A K, m, r, sc;
            gn_stats_of(mean, mean_off, rstd, rstd_off, 0, row, flags & ~CLNORM_KF_REFINED, &K,
                        &m, &r, &sc);
            s.K = K;
            s.m = m;
            s.r = r;
            s.sc = sc;
            /* saved float32 ones whose mean's rounding would reach xhat (gn_refine_stats,
             * group_backward.cl): around the group's first element, the mean of the
             * deviations added */
            if ((flags & CLNORM_KF_REFINED) != 0 && saved_mean_off(m, r)) {
                const W K0 = LOAD1(xg), m0 = (W)m - K0;
                W d = 0;
                for (ulong i = 0; i < L; i++)
                    d += ((W)LOAD1(xg + i) - K0) - m0;
                s.K = K0;
                s.m = m0 + d / (W)L;
            }
        }
        /* dx only where it is asked for (no pointer arithmetic on an absent one) */
        __global T *og = (flags & CLNORM_KF_GRAD_X) ? dx + dx_off + n * dx_stride + c0 * hw : dx;
        gn_small_group(xg, dy + dy_off + n * dy_stride + c0 * hw, og, s, gamma, gamma_off,
                       GN_SCALE_ROW(n), sums + n * 2 * C, C, c0, cpg, hw, flags);
    }
}
