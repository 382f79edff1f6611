/*
 * group_backward_wg.cl - GroupNorm backward in channels-last layout, strategy "workgroup": a
 * work-group per group row n * G + g (gn_nhwc_bwd_group), in one launch where the tiles take
 * four to six: the group's statistics (saved, a saved float32 mean corrected in the kernel,
 * or recomputed before by gn_nhwc_group_stats, group_nhwc_wg.cl, into the stats scratch), its
 * channels' sums of dz * xhat and dz (into
 * the sums scratch, one tile per sample, for group_backward.cl's parameter pass, which adds
 * them over the samples), the dx coefficients mean(g) and mean(g * xhat), then dx. Each
 * item's share of x and dy (the lanes of group_nhwc_wg.cl) is read once for the sums and
 * again, meant to come from cache, for dx; the formulas are group_backward.cl's (gn_xhat,
 * gn_dz, gn_dx_of). In place (dx over x or dy) is safe: every read for the sums is behind
 * wg_sum's barriers, and the dx pass reads each element just before its item writes it.
 * Needs common.cl, op_group_norm.cl, row_stats.cl, group_nhwc.cl, group_backward.cl and
 * group_nhwc_wg.cl before it.
 */

/* v plus the other position lanes' values of the item's channel lane, added in lane order
 * with Kahan's step, for the lane's first item (q0 == 0); the others get their own v back.
 * Every item of the group must call it. */
inline A gn_wg_lanes_add(A v, gn_wg_lanes w, __local A *scratch, uint lid)
{
    scratch[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    A k = 0;
    if (w.q0 == 0)
        for (ulong q = 1; q < w.PL; q++)
            kahan_add(&v, &k, scratch[q * w.cw + w.k0]);
    barrier(CLK_LOCAL_MEM_FENCE);
    return v;
}

/* gn_wg_lanes_add of a W, its bits in two local arrays (as wg_sum_w, common.cl),
 * the lanes added in lane order in W. */
inline W gn_wg_lanes_add_w(W v, gn_wg_lanes w, __local A *lo, __local A *hi, uint lid)
{
#if W_DOUBLE
    __local uint *l = (__local uint *)lo, *h = (__local uint *)hi;
    const uint2 u = as_uint2(v);
    l[lid] = u.s0;
    h[lid] = u.s1;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (w.q0 == 0)
        for (ulong q = 1; q < w.PL; q++) {
            const ulong i = q * w.cw + w.k0;
            v += as_double((uint2)(l[i], h[i]));
        }
    barrier(CLK_LOCAL_MEM_FENCE);
    return v;
#else
    return gn_wg_lanes_add(v, w, lo, lid);
#endif
}

/* The backward of one group row per work-group. sums: per sample (one tile), the dz * xhat
 * sums of every channel, then the dz sums (group_backward.cl's layout, which its parameter
 * pass adds over the samples). */
__kernel void gn_nhwc_bwd_group(GN_BWD_PTRS, __global const A *stats, __global W *sums,
                                __local A *scratch, __local A *scratch2, KS_PARAM)
{
    KS_BEGIN;
    GN_BWD_UNPACK
    GN_UNPACK
    KS_UL(rows);
    KS_UI(flags);
    const ulong G = gn_groups, cpg = gn_cpg, hw = gn_hw, C = G * cpg;
    const uint lid = get_local_id(0), L = get_local_size(0);
    const gn_wg_lanes w = gn_wg_lanes_of(cpg, hw, lid, L);
    const A total = (A)(cpg * hw);
    for (ulong row = get_group_id(0); row < rows; row += get_num_groups(0)) {
        const ulong n = row / G, c0 = (row % G) * cpg;
        __global const T *xs = x + x_off + n * x_stride; /* position 0 */
        __global const T *ds = dy + dy_off + n * dy_stride;
        gn_chan ch;
        ch.silu = (flags & CLNORM_KF_SILU) != 0;
        /* recomputed ones from the stats scratch, or as given; saved float32 ones whose
         * mean's rounding would reach xhat corrected here (gn_refined_mean, group_backward.cl:
         * the chain has no refine step), its sum run by every group as no barrier may sit
         * under a branch (below) */
        gn_stats_of(mean, mean_off, rstd, rstd_off, stats, row, flags & ~CLNORM_KF_REFINED,
                    &ch.K, &ch.m, &ch.r, &ch.sc);
        ch.rlo = gn_stats_rlo(stats, row, flags & ~CLNORM_KF_REFINED);
        ch.mlo = gn_stats_mlo(stats, row, flags & ~CLNORM_KF_REFINED);
        gn_refined_mean(xs, ch.m,
                        (flags & CLNORM_KF_REFINED) != 0 && saved_mean_off(ch.m, ch.r),
                        row % G, C, cpg, hw, 1, scratch, scratch2, lid, L, &ch.K, &ch.m);
        /* Round by round of cw channels: each item's sums over its positions, then the
         * position lanes' added in lane order by the channel's first item, which writes them
         * and keeps gamma_c times them for the group's sums. */
        __global W *sn = sums + n * 2 * C;
        W sg = 0, sgx = 0; /* sum of gamma_c * (sum of dz), of gamma_c * (sum of dz * xhat) */
#if W_DOUBLE && defined(CLNORM_GN_MOD)
        W rg = 0, rgx = 0; /* the same of what the modulation's fold left (gn_bwd_coef) */
#endif
        for (ulong j = 0; j < w.rounds; j++) {
            const ulong k = w.k0 + j * w.cw, c = c0 + k;
            W2 s = (W2)(0);
            /* (channels past the group's last read nothing: k < cpg guards every use) */
            const gn_chan cc = GN_CHAN_AT(ch, n, k < cpg ? c : c0);
            if (k < cpg && w.npos > 0) /* positions q0, q0 + PL, ... (group_backward.cl) */
                s = gn_channel_sums(cc, xs + c, ds + c, w.q0, hw, w.PL, C);
            /* (no barrier under a branch: PoCL's work-group compiler replicates the code
             * between barriers per path, which a branch around these made run for tens of
             * minutes) */
            const W s1 = gn_wg_lanes_add_w(s.s0, w, scratch, scratch2, lid);
            const W s2 = gn_wg_lanes_add_w(s.s1, w, scratch, scratch2, lid);
            if (w.q0 == 0 && k < cpg) {
                sn[c] = s1;
                sn[C + c] = s2;
                sgx = fma((W)cc.gam, s1, sgx); /* gamma_c, modulated */
                sg = fma((W)cc.gam, s2, sg);
#if W_DOUBLE && defined(CLNORM_GN_MOD)
                rgx = fma((W)cc.glo, s1, rgx);
                rg = fma((W)cc.glo, s2, rg);
#endif
            }
        }
        /* dx's coefficients, mean(g) and mean(g * xhat) (gn_bwd_coef's, for this group),
         * rounded once; 0 with precomputed statistics (gn_coef_of). The sums run either way:
         * a barrier under a branch is what PoCL's work-group compiler handles badly (above). */
        sg = GN_WG_SUM_W(sg, scratch, scratch2, lid, L);
        sgx = GN_WG_SUM_W(sgx, scratch, scratch2, lid, L);
        W fg = sg, fgx = sgx; /* the wide paths' (gn_bwd_coef) */
#if W_DOUBLE && defined(CLNORM_GN_MOD)
        fg += GN_WG_SUM_W(rg, scratch, scratch2, lid, L);
        fgx += GN_WG_SUM_W(rgx, scratch, scratch2, lid, L);
#endif
        W mg = sg / (W)total, mgx = sgx / (W)total, fm = fg / (W)total, fmx = fgx / (W)total;
        if ((flags & CLNORM_KF_GLOBAL_STATS) != 0)
            mg = mgx = fm = fmx = 0;
        /* each rounded once, and what the rounding left (gn_dx_run: gn_dx_of_w) */
        const A2 cf = (A2)((A)mg, (A)mgx);
        const A2 lo = (A2)((A)(fm - (W)cf.s0), (A)(fmx - (W)cf.s1));
        if ((flags & CLNORM_KF_GRAD_X) != 0 && w.npos > 0) {
            __global T *os = dx + dx_off + n * dx_stride;
            for (ulong k = w.k0; k < cpg; k += w.cw) {
                const ulong c = c0 + k;
                gn_dx_run(GN_CHAN_AT(ch, n, c), cf, lo, xs + c, ds + c, os + c, w.q0, hw,
                          w.PL, C);
            }
        }
    }
}
