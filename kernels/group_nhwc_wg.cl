/*
 * group_nhwc_wg.cl - GroupNorm forward in channels-last layout, (N, *spatial, C), strategy
 * "workgroup": a work-group per group row n * G + g, its statistics and its apply in one
 * launch (gn_nhwc_group), where the tiles (group_nhwc.cl, strategy "split") take three. Its
 * lanes and statistics serve the backward of the same strategy too (gn_nhwc_group_stats
 * when it recomputes them, and group_backward_wg.cl). For GPUs and groups
 * that one work-group reads quickly (group_norm.c, auto_strategy): the tiles' three launches
 * cost a GPU more than a group of up to a few hundred KiB takes to read, and their work-groups
 * walk all C channels of a tile in rounds, so that few positions make few, long-running
 * work-groups (bench/RESULTS.md, "GroupNorm on a GPU").
 *
 * The L items of the work-group are cw = min(C/G, L) channel lanes by PL = L / cw position
 * lanes: item lid takes channels k0, k0 + cw, ... of the group (k0 = lid % cw) at positions
 * q0, q0 + PL, ... (q0 = lid / cw); items from cw * PL on take nothing. Neighbouring items read
 * neighbouring channels of one position and then the next position's first ones, so a warp
 * reads a few contiguous runs of the channels-last rows (coalesced) without dividing an
 * element index by C/G.
 *
 * Statistics as rows have them (row_stats.cl): every value around the group's shift K (the
 * median of its first channel's values at positions 0, 1 and 2, gn_shift1: the element a row
 * of the same group in NCHW would take), each item's share read twice, its sum S, then from
 * cache its M2 around its own mean, and the items' moments merged exactly (group_m2's
 * terms); a group whose squares overflow is redone scaled (gn_group_scaled_part). Then
 * y = (x - K) * a_c + b_c (a_c = rstd * gamma_c, b_c = beta_c - mean * a_c, in x's units: the
 * tiles' table) and the SiLU, each element read (from cache) just before it is written, so in
 * place is safe: every read of the statistics is behind wg_sum's barriers before any item
 * writes.
 * Needs common.cl, op_group_norm.cl, row_stats.cl and group_nhwc.cl before it.
 */

/* Item (k0, q0)'s sum of x - K over its share (positions from q0 by PL, channels from k0 by
 * cw); with mb = the share's mean, the sum of squared deviations from it instead (the second
 * pass). Four accumulators, so the loads of four positions are in flight at once, added into
 * a compensated sum every GN_SUM_BLOCK positions: a share is 16-64 elements on GPUs, but a
 * whole group with one item (a CPU device asked for this strategy), whose plain float32 sum
 * of squares would lose digits with the count. */
inline A gn_wg_share_sum(__global const T *xc, ulong C, ulong cpg, ulong hw, ulong k0,
                         ulong q0, ulong cw, ulong PL, A K, A mb, const int squares, A *comp)
{
    A s = 0, cs = 0;
    for (ulong k = k0; k < cpg; k += cw) {
        __global const T *xk = xc + k;
        for (ulong pb = q0; pb < hw; pb += GN_SUM_BLOCK * PL) {
            const ulong pe = min(hw, pb + GN_SUM_BLOCK * PL);
            A a0 = 0, a1 = 0, a2 = 0, a3 = 0;
            ulong p = pb;
            for (; p + 3 * PL < pe; p += 4 * PL) {
                const A d0 = (LOAD1(xk + p * C) - K) - mb;
                const A d1 = (LOAD1(xk + (p + PL) * C) - K) - mb;
                const A d2 = (LOAD1(xk + (p + 2 * PL) * C) - K) - mb;
                const A d3 = (LOAD1(xk + (p + 3 * PL) * C) - K) - mb;
                a0 = squares ? fma(d0, d0, a0) : a0 + d0;
                a1 = squares ? fma(d1, d1, a1) : a1 + d1;
                a2 = squares ? fma(d2, d2, a2) : a2 + d2;
                a3 = squares ? fma(d3, d3, a3) : a3 + d3;
            }
            for (; p < pe; p += PL) {
                const A d0 = (LOAD1(xk + p * C) - K) - mb;
                a0 = squares ? fma(d0, d0, a0) : a0 + d0;
            }
            kahan_add(&s, &cs, (a0 + a1) + (a2 + a3));
        }
    }
    *comp = cs; /* the sum is s - cs */
    return s;
}

/* The lanes of a work-group over one group (see above), and the item's share. */
typedef struct {
    ulong cw, PL, k0, q0; /* channel lanes, position lanes, the item's lanes */
    ulong rounds;         /* rounds of cw channels: the same for every item */
    ulong npos;           /* the item's positions (0: none, past the lanes) */
    A nshare;             /* the item's elements */
} gn_wg_lanes;

inline gn_wg_lanes gn_wg_lanes_of(ulong cpg, ulong hw, uint lid, uint L)
{
    gn_wg_lanes w;
    w.cw = min(cpg, (ulong)L);
    w.PL = L / w.cw;
    w.k0 = lid % w.cw;
    w.q0 = lid / w.cw;
    w.rounds = (cpg + w.cw - 1) / w.cw;
    const ulong nk = w.q0 < w.PL ? (cpg - w.k0 + w.cw - 1) / w.cw : 0;
    w.npos = w.q0 < w.PL && w.q0 < hw ? (hw - w.q0 + w.PL - 1) / w.PL : 0;
    w.nshare = (A)(nk * w.npos);
    return w;
}

/* An item's share of a group's moments, as its float sums took them: S around K and M2
 * around S / n, each a compensated sum (the sum less its compensation); valid unless the
 * group was redone at a scale. */
typedef struct {
    A S, cS, M2, cM2;
    int valid;
} gn_wg_share;

/* The statistics (K, m, r, sc) of the group of channels [c0, c0 + cpg) of the sample at xs
 * (its position 0), xhat = ((x * sc - K) - m) * r, and the item's share of the moments in
 * *sh. Every item of the group must call it. */
inline void gn_wg_stats(__global const T *xs, ulong c0, ulong C, ulong cpg, ulong hw,
                        gn_wg_lanes w, A eps, __local A *scratch, uint lid, uint L, A *K,
                        A *m, A *r, A *sc, gn_wg_share *sh)
{
    sh->S = sh->cS = sh->M2 = sh->cM2 = 0;
    sh->valid = 1;
    const A total = (A)(cpg * hw);
    *K = gn_shift1(xs, c0, C, hw);
    *sc = 1;
    A var;
    /* pass 0 from the item's share; pass 1, the redo at a scale (gn_group_scaled_part), from
     * every L-th position: one loop, no barrier under a branch (group_nhwc.cl says why) */
    for (int pass = 0;; pass++) {
        A S = 0, M2 = 0;
        if (pass == 0 && w.nshare > 0) {
            S = gn_wg_share_sum(xs + c0, C, cpg, hw, w.k0, w.q0, w.cw, w.PL, *K, 0, 0, &sh->cS);
            M2 = gn_wg_share_sum(xs + c0, C, cpg, hw, w.k0, w.q0, w.cw, w.PL, *K, S / w.nshare,
                                 1, &sh->cM2);
            sh->S = S;
            sh->M2 = M2;
        } else if (pass == 1) {
            S = gn_group_scaled_part(xs, c0, cpg, C, hw, lid, L, *sc, *K, 0, 0);
            sh->valid = 0;
        }
        *m = wg_sum(S, scratch, lid, L) / total;
        if (pass == 0)
            M2 = m2_term(w.nshare, S, M2, *m, L); /* the items' moments merged (group_m2) */
        else
            M2 = gn_group_scaled_part(xs, c0, cpg, C, hw, lid, L, *sc, *K, *m, 1);
        var = wg_sum(M2, scratch, lid, L) / total;
        if (pass == 1 || !needs_rescale(var)) /* the same for every item of the group */
            break;
        *sc = rescale_factor(wg_max(gn_group_absmax_part(xs, c0, cpg, C, hw, lid, L), scratch,
                                    lid, L));
        *K = *K * *sc; /* the shift, scaled */
    }
    *r = rstd_rounded(var, eps * *sc * *sc);
}

__kernel void gn_nhwc_group(FWD_PTRS, __local A *scratch, KS_PARAM)
{
    KS_BEGIN;
    FWD_UNPACK
    KS_UL(rows);
    KS_A(eps);
    KS_UI(flags);
    const ulong G = gn_groups, cpg = gn_cpg, hw = gn_hw, C = G * cpg;
    const uint lid = get_local_id(0), L = get_local_size(0);
    const gn_wg_lanes w = gn_wg_lanes_of(cpg, hw, lid, L);
    const int silu = (flags & CLNORM_KF_SILU) != 0;
    for (ulong row = get_group_id(0); row < rows; row += get_num_groups(0)) {
        const ulong n = row / G, c0 = (row % G) * cpg;
        __global const T *xs = x + x_off + n * x_stride; /* position 0 */
        __global T *yc = y + y_off + n * y_stride + c0;
        A K, m, r, sc;
        gn_wg_share sh;
        gn_wg_stats(xs, c0, C, cpg, hw, w, eps, scratch, lid, L, &K, &m, &r, &sc, &sh);
        if (lid == 0) {
            if ((flags & CLNORM_KF_MEAN) != 0)
                mean[mean_off + row] = (K + m) / sc;
            if ((flags & CLNORM_KF_RSTD) != 0)
                rstd[rstd_off + row] = r * sc;
        }
        /* the apply, in x's own units (as the tiles' table, gn_merge_row) */
        const A Kx = K / sc, mx = m / sc, rs = r * sc;
        __global const P *sr = GN_SCALE_ROW(n), *hr = GN_SHIFT_ROW(n);
        for (ulong k = w.k0; k < cpg && w.npos > 0; k += w.cw) {
            const ulong c = c0 + k;
            A gam = (flags & CLNORM_KF_GAMMA) ? gamma[gamma_off + c] : (A)1;
            A bet = (flags & CLNORM_KF_BETA) ? beta[beta_off + c] : (A)0;
            gn_fold_mod(&gam, &bet, sr, hr, c);
            const A a = rs * gam;
            const A b = fma(-mx, a, bet);
            __global const T *xk = xs + c;
            __global T *yk = yc + k;
            const ulong PL = w.PL;
            ulong p = w.q0;
            /* four positions' loads before their stores: y may be x, so a compiler keeps
             * each load after the store before it, one load in flight per item; these four
             * elements are the item's own, read before it writes them */
            for (; p + 3 * PL < hw; p += 4 * PL) {
                const A v0 = LOAD1(xk + p * C), v1 = LOAD1(xk + (p + PL) * C);
                const A v2 = LOAD1(xk + (p + 2 * PL) * C), v3 = LOAD1(xk + (p + 3 * PL) * C);
                STORE1(gn_apply1(v0, Kx, a, b, silu), yk + p * C);
                STORE1(gn_apply1(v1, Kx, a, b, silu), yk + (p + PL) * C);
                STORE1(gn_apply1(v2, Kx, a, b, silu), yk + (p + 2 * PL) * C);
                STORE1(gn_apply1(v3, Kx, a, b, silu), yk + (p + 3 * PL) * C);
            }
            for (; p < hw; p += PL)
                STORE1(gn_apply1(LOAD1(xk + p * C), Kx, a, b, silu), yk + p * C);
        }
    }
}

/* The backward's statistics when mean and rstd are not given (RUN_RECOMPUTE): a group's
 * (K, m, r, sc) as the forward computes them, into the stats scratch (gn_put_stats). A
 * kernel of its own rather than a branch of the backward's: barriers under a branch cost
 * PoCL's work-group compiler tens of minutes there (group_backward_wg.cl). */
__kernel void gn_nhwc_group_stats(__global const T *x, __global A *stats, __local A *scratch,
                                  __local A *scratch2, KS_PARAM)
{
    KS_BEGIN;
    KS_TENSOR(x);
    GN_UNPACK
    KS_UL(rows);
    KS_A(eps);
    const ulong G = gn_groups, cpg = gn_cpg, hw = gn_hw, C = G * cpg;
    const uint lid = get_local_id(0), L = get_local_size(0);
    const gn_wg_lanes w = gn_wg_lanes_of(cpg, hw, lid, L);
    for (ulong row = get_group_id(0); row < rows; row += get_num_groups(0)) {
        const ulong n = row / G, c0 = (row % G) * cpg;
        A K, m, r, sc, rlo = 0, mlo = 0;
        __global const T *xs = x + x_off + n * x_stride;
        gn_wg_share sh;
        gn_wg_stats(xs, c0, C, cpg, hw, w, eps, scratch, lid, L, &K, &m, &r, &sc, &sh);
#if W_DOUBLE
        /* again in double, from the elements where r * sc is at least CLNORM_GN_VAR_WIDE;
         * elsewhere what m's and r's roundings left (mlo, rlo, for the backward's double
         * sums), from the items' shares in W, as the tiles' merge takes its tiles' moments
         * (gn_group_stats_w): float ones put NHWC dgamma at 16x64x112x112 2.6x the bound */
        const gn_tile_moments none = {0, 0, 0, 0};
        const int wide = r * sc >= (A)CLNORM_GN_VAR_WIDE;
        W S = 0, Q = 0;
        int pass = 1;
        if (wide || !sh.valid) {
            pass = gn_group_part_w(xs, c0, cpg, C, hw, lid, L, K, m, sc, wide, none, &S, &Q);
        } else if (w.nshare > 0) { /* the share's moments, M2 around their exact mean */
            const W nw = (W)w.nshare, Sw = (W)sh.S - (W)sh.cS;
            const W dm = Sw / nw - (W)(sh.S / w.nshare); /* M2's centre, as taken */
            gn_moments_around(Sw, ((W)sh.M2 - (W)sh.cM2) - nw * dm * dm, nw, m, &S, &Q);
        }
        /* (no barrier under the branch: gn_stats_w's sums for every item) */
        gn_stats_w(S, Q, cpg * hw, lid, L, scratch, scratch2, &K, &m, &r, &rlo, &mlo, sc, eps,
                   wide, pass);
#endif
        if (lid == 0)
            gn_put_stats(stats, row, K, m, r, rlo, sc, mlo);
    }
}
