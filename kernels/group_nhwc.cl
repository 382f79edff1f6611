/*
 * group_nhwc.cl - GroupNorm forward in channels-last layout, (N, *spatial, C). A group is
 * C/G channels strided by C, so reading one group alone would use a fraction of every cache
 * line or memory transaction; instead a work-group takes a tile of chunk_len positions x all
 * C channels of one sample, whose rows of C channels are contiguous (Apex's group_norm_nhwc
 * does the same). Three steps:
 *   gn_nhwc_moments: per (sample, tile, channel) the sum S of x - K_c (K_c: the median of
 *                    the channel's values at positions 0, 1 and 2, gn_shift1, so that a row
 *                    of shifts is three vector loads and a lone outlier is never one; CPU
 *                    devices keep the mean S / n instead) and M2, the sum of squared
 *                    deviations from the tile's own mean
 *                    (GPUs: two-pass over the tile, the second pass from cache; CPU devices:
 *                    one pass, pairs of positions merged by Chan's update); then per (sample,
 *                    tile, group) the same of the group's channels, around the group's shift
 *                    K, its first channel's K_c: with S'_c = S_c + n (K_c - K), S = sum S'_c and
 *                    M2 = sum (M2_c + n (S'_c / n - S / (n cpg))^2) (exact, fixed order);
 *   gn_nhwc_merge:   per group, its tiles' moments merged the same way (a group whose
 *                    squares overflowed read again, scaled: gn_group_scaled_part); statistics
 *                    (K, m, r, sc) into the stats scratch and the saved mean/rstd, and
 *                    (forward) every channel's K, a = r * gamma_c and b = beta_c - m * a into
 *                    the table;
 *   gn_nhwc_apply:   y = (x - K) * a_c + b_c, then the SiLU;
 *   gn_nhwc_sample:  CPU devices, in place of the three: one work-item per sample runs them
 *                    in turn with the sample as one tile (group_norm.c chooses it).
 * With precomputed statistics (CLNORM_USE_GLOBAL_STATS) gn_nhwc_stats_table makes the table
 * from them, and gn_nhwc_apply runs alone after it.
 * On GPUs the work-items of a group take consecutive channels (coalesced), each walking the
 * tile's positions (the float32 apply: the tile's float4s over all items, gn_apply_tile4);
 * on CPU devices (one work-item per tile) the loops run position by
 * position over the contiguous channels in vectors of VW, prefetching ahead.
 * On GPUs a work-group holds whole groups (cpg x groups-per-round items, group_norm.c), whose
 * channel moments meet in local memory, the group's first item adding them in channel order.
 * Moments per (n, tile): GN_TILE_LEN values of A: the mean and M2 of every channel (CPU
 * devices; scratch space on GPUs), then the S and M2 of every group, then C values of
 * staging space, the C shifts K_c and 4 C running totals (S, its compensation, M2, its
 * compensation; CPU devices, gn_tile_moments_rows; on GPUs each channel's S and M2 in W as
 * two values, gn_channel_moments), then per group what its float S and M2 leave of them in
 * double (gn_group_moments_w; 0 without double), which the backward's merge adds
 * (gn_group_stats_w). The table per sample: 3 C values, the K of every
 * channel, then the a, then the b.
 * Needs common.cl and op_group_norm.cl before it.
 */

#define GN_TILE_LEN(C, G) (8 * (C) + 4 * (G)) /* src/op/group_norm.c, nhwc_tile_len */
#define GN_TILE_LO(C, G) (8 * (C) + 2 * (G))  /* the groups' S and M2 remainders (below) */

/* Channel c's shift K_c (xs: the sample's position 0): the median of its values at positions
 * 0, 1 and 2 (the first three rows of the sample, contiguous), an element of the channel but
 * never a lone outlier, whose rounding (|K_c| 2^-24 per deviation) would reach y (as
 * row_shift for rows, op_row_norm.cl). The group's shift K is its first channel's K_c. */
inline A gn_shift1(__global const T *xs, ulong c, ulong C, ulong hw)
{
    if (hw == 0)
        return 0;
    return med3(LOAD1(xs + c), LOAD1(xs + min(hw - 1, (ulong)1) * C + c),
                LOAD1(xs + min(hw - 1, (ulong)2) * C + c));
}
/* The same for the VW channels from c (med3's formula in vectors: common.cl's med3 takes
 * scalars), once per tile (gn_tile_moments_rows). */
inline AV gn_shiftv(__global const T *xs, ulong c, ulong C, ulong hw)
{
    if (hw == 0)
        return (AV)(0);
    const AV a = LOADV(xs + c), b = LOADV(xs + min(hw - 1, (ulong)1) * C + c),
             d = LOADV(xs + min(hw - 1, (ulong)2) * C + c);
    return fmax(fmin(a, b), fmin(fmax(a, b), d));
}

/* Channel c's moments over positions [p0, p1) (cnt of them) around its shift K_c: the
 * sum of x - K_c, then (the positions again, from cache) the sum of squared deviations from
 * the tile's own mean. Two accumulators each, for the loads' latency, over blocks of
 * GN_SUM_BLOCK positions, each block then Kahan-added: a plain sum over a long tile (a few
 * channels over millions of positions) lost its last bits (rstd 8e-5 off at 3 x 2000 x 2000
 * on the CPU tiles, which had the same plain sums). */
inline A gn_channel_sum(__global const T *xs, ulong c, ulong C, ulong p0, ulong p1, A K, A mc,
                        const int sq, A *comp)
{
    A s = 0, cs = 0;
    for (ulong pb = p0; pb < p1; pb += GN_SUM_BLOCK) {
        const ulong pe = min(p1, pb + GN_SUM_BLOCK);
        A b0 = 0, b1 = 0;
        ulong p = pb;
        for (; p + 1 < pe; p += 2) {
            const A d0 = (LOAD1(xs + p * C + c) - K) - mc;
            const A d1 = (LOAD1(xs + (p + 1) * C + c) - K) - mc;
            b0 = sq ? fma(d0, d0, b0) : b0 + d0;
            b1 = sq ? fma(d1, d1, b1) : b1 + d1;
        }
        if (p < pe) {
            const A d0 = (LOAD1(xs + p * C + c) - K) - mc;
            b0 = sq ? fma(d0, d0, b0) : b0 + d0;
        }
        kahan_add(&s, &cs, b0 + b1);
    }
    *comp = cs; /* the sum is s - cs */
    return s;
}

/* v in W as two values of A, hi - lo (at pair[0] and pair[C]: the layout of the CPU tiles'
 * running totals and their compensations, which gn_group_moments_w reads). */
#if W_DOUBLE
inline void gn_put_w(__global A *pair, ulong C, W v)
{
    const A hi = (A)v;
    pair[0] = hi;
    pair[C] = (A)((W)hi - v);
}
#endif

/* GPUs: channel c's S (around K_c, stored in kr[c]) and M2 in *s_out and *q_out and, where W
 * is double, in W into tot (gn_put_w; M2 around the channel's mean in W, where the float
 * pass took it around the float s / cnt), for gn_group_moments_w as on CPU devices. */
inline void gn_channel_moments(__global const T *xs, ulong c, ulong C, ulong hw, ulong p0,
                               ulong p1, A cnt, A *s_out, A *q_out, __global A *kr,
                               __global A *tot)
{
    const A K = gn_shift1(xs, c, C, hw);
    A cs, cq;
    const A s = gn_channel_sum(xs, c, C, p0, p1, K, 0, 0, &cs), mc = s / cnt;
    const A q = gn_channel_sum(xs, c, C, p0, p1, K, mc, 1, &cq);
    *s_out = s;
    *q_out = q;
    kr[c] = K;
#if W_DOUBLE
    const W S = (W)s - (W)cs, dm = S / (W)cnt - (W)mc;
    gn_put_w(tot + c, C, S);
    gn_put_w(tot + 2 * C + c, C, ((W)q - (W)cq) - (W)cnt * dm * dm);
#else
    (void)tot;
#endif
}

/* The moments (S, M2) of one tile of the group of channels [c0, c0 + cpg) into out, from its
 * channels' means (mu_c at mc[c], around K_c, kr[c]) and M2 (at mc[C + c]), cnt positions:
 * one work-item, channels in order. Around the group's K, channel c's mean is
 * mu_c + (K_c - K); M2 = sum (M2_c + cnt (mean_c - mean)^2) (exact). */
inline void gn_group_moments(__global const A *kr, __global const A *mc, ulong c0, ulong cpg,
                             ulong C, A cnt, __global A *out)
{
    const A K = kr[c0];
    A s = 0;
    for (ulong k = 0; k < cpg; k++)
        s += mc[c0 + k] + (kr[c0 + k] - K);
    const A mg = s / (A)cpg;
    A q = 0;
    for (ulong k = 0; k < cpg; k++) {
        const A d = (mc[c0 + k] + (kr[c0 + k] - K)) - mg;
        q += fma(d * d, cnt, mc[C + c0 + k]);
    }
    out[0] = s * cnt;
    out[1] = q;
}

#if W_DOUBLE
/* The same group's S and M2 in W from the tile's running totals (tot: gn_tile_moments_rows,
 * or on GPUs gn_channel_moments; each total less its compensation, M2 around the channel's
 * mean), lo what out's float ones leave of them. The float S is cnt times a mean of float
 * channel means (CPU devices; on GPUs a sum of float channel sums): one rounding of about
 * 2^-24 |mean - K| a tile, which at one tile a sample put the backward's mean (gn_stats_w's
 * m + mlo) as far off as the float m, and GroupNorm's NHWC dgamma at 32x256x56x56 2.4x the
 * bound (group_backward.cl, gn_chan_sums_cv; GPU tiles 0.41-0.88x with float moments). */
inline void gn_group_moments_w(__global const A *kr, __global const A *tot, ulong c0,
                               ulong cpg, ulong C, A cnt, __global const A *out,
                               __global A *lo)
{
    const W K = kr[c0], n = cnt;
    W s = 0;
    for (ulong k = 0; k < cpg; k++)
        s += ((W)tot[c0 + k] - (W)tot[C + c0 + k]) + n * ((W)kr[c0 + k] - K);
    const W mg = s / (n * (W)cpg);
    W q = 0;
    for (ulong k = 0; k < cpg; k++) {
        const W S = ((W)tot[c0 + k] - (W)tot[C + c0 + k]) + n * ((W)kr[c0 + k] - K);
        const W d = S / n - mg;
        q += ((W)tot[2 * C + c0 + k] - (W)tot[3 * C + c0 + k]) + n * d * d;
    }
    lo[0] = (A)(s - (W)out[0]);
    lo[1] = (A)(q - (W)out[1]);
}
#endif

/* CPU devices, one work-item per tile: the moments of every channel of positions [p0, p1),
 * the mean mu_c into sc[c] and M2_c into sc[C + c], in one read of the tile.
 *
 * The tile is one contiguous run of (p1 - p0) x C values, read in memory order: walking one
 * channel vector down the positions instead touches a new page at every step (stride C),
 * which the hardware prefetchers do not follow. A second pass for M2 would read the tile
 * again, so the positions come in pairs, each pair's exact moments (mean (a + b) / 2, M2
 * (a - b)^2 / 2) merged into the channel's running mean and M2 with Chan's update, the
 * stable one-pass form of the two-pass moments. Values are taken around K_c, as the merge
 * across tiles expects: the channels' shifts are computed once, into kr (C values, kept for
 * gn_group_moments), where each pair used to compute them again from three loads; the
 * running mean and M2 stay in sc, which stays in L1.
 *
 * A pair's first row is read whole into stage (C values, in L1), then the second row with it,
 * so the tile is still read in memory order. Reading the two rows side by side makes two
 * streams C apart, each skipping every other row, which the hardware prefetchers follow badly:
 * 7.5-9 GB/s from memory on one core where the staged pairs read 12-14.5 (bench/RESULTS.md,
 * "one item per sample"). The values staged are those loaded, so the bits are the same.
 *
 * The pairs merge from zero within blocks of GN_TILE_BLOCK positions; each block then joins
 * the tile's totals in tot (the sum of the deviations and M2, Kahan-added, Chan's update
 * around the totals' mean so far). One running mean and M2 over the whole tile, updated in
 * float pair after pair, drifted with the tile's length: a sample of 3 channels x 2000 x 2000
 * came out with rstd 8e-5 and y 7e-5 off torch float64. */
#define GN_TILE_BLOCK (2 * GN_SUM_BLOCK)

/* The block's moments (nb positions; mean at sc, M2 at sq, per channel) into the totals,
 * of nt positions so far; then the block's moments back to zero for the next. */
inline void gn_tile_block_join(__global A *sc, __global A *tot, ulong C, A nt, A nb)
{
    const ulong cv = C / VW * VW;
    __global A *sq = sc + C, *ts = tot, *tsc = tot + C, *tq = tot + 2 * C, *tqc = tot + 3 * C;
    const A wt = nt * nb / (nt + nb), rnt = nt > 0 ? (A)1 / nt : (A)0;
    for (ulong c = 0; c < cv; c += VW) {
        AV S = GN_LDV(ts + c), cS = GN_LDV(tsc + c), Q = GN_LDV(tq + c), cQ = GN_LDV(tqc + c);
        const AV bm = GN_LDV(sc + c), delta = bm - S * rnt;
        kahan_addv(&Q, &cQ, fma(delta * delta, wt, GN_LDV(sq + c)));
        kahan_addv(&S, &cS, bm * nb);
        GN_STV(S, ts + c);
        GN_STV(cS, tsc + c);
        GN_STV(Q, tq + c);
        GN_STV(cQ, tqc + c);
        GN_STV((AV)(0), sc + c);
        GN_STV((AV)(0), sq + c);
    }
    for (ulong c = cv; c < C; c++) {
        A S = ts[c], cS = tsc[c], Q = tq[c], cQ = tqc[c];
        const A delta = sc[c] - S * rnt;
        kahan_add(&Q, &cQ, fma(delta * delta, wt, sq[c]));
        kahan_add(&S, &cS, sc[c] * nb);
        ts[c] = S;
        tsc[c] = cS;
        tq[c] = Q;
        tqc[c] = cQ;
        sc[c] = sq[c] = 0;
    }
}

inline void gn_tile_moments_rows(__global const T *xs, __global A *sc, __global A *stage,
                                 __global A *kr, __global A *tot, ulong p0, ulong p1, ulong C,
                                 ulong hw)
{
    const ulong cv = C / VW * VW;
    __global A *sq = sc + C;
    for (ulong c = 0; c < cv; c += VW)
        GN_STV(gn_shiftv(xs, c, C, hw), kr + c);
    for (ulong c = cv; c < C; c++)
        kr[c] = gn_shift1(xs, c, C, hw);
    /* From zero moments, a block's first pair's update (n = 0: w = 1, wn = 0) is its own
     * moments. */
    for (ulong c = 0; c < 2 * C; c++)
        sc[c] = 0;
    for (ulong c = 0; c < 4 * C; c++)
        tot[c] = 0;
    for (ulong pb = p0; pb < p1; pb += GN_TILE_BLOCK) {
        const ulong pe = min(p1, pb + GN_TILE_BLOCK);
        ulong p = pb;
        for (; p + 1 < pe; p += 2) {
            /* n elements so far, 2 more: mean += delta * 2 / (n + 2),
             * M2 += M2_pair + delta^2 * n * 2 / (n + 2) */
            const A n = (A)(p - pb), w = (A)2 / (n + (A)2), wn = w * n;
            __global const T *x0 = xs + p * C, *x1 = x0 + C;
            for (ulong c = 0; c < cv; c += VW) {
#if defined(PREFETCH_NEXT)
                PREFETCH_L2(x0 + GN_PD + c);
#endif
                GN_STV(GN_LDX(x0 + c), stage + c);
            }
            for (ulong c = 0; c < cv; c += VW) {
#if defined(PREFETCH_NEXT)
                PREFETCH_L2(x1 + GN_PD + c);
#endif
                const AV K = GN_LDV(kr + c), a = GN_LDV(stage + c) - K, b = GN_LDX(x1 + c) - K;
                const AV m = GN_LDV(sc + c), d = a - b;
                const AV delta = (a + b) * (A)0.5 - m;
                GN_STV(fma(delta, w, m), sc + c);
                GN_STV(fma(delta * delta, wn, fma(d * d, (A)0.5, GN_LDV(sq + c))), sq + c);
            }
            for (ulong c = cv; c < C; c++) {
                const A K = kr[c], a = LOAD1(x0 + c) - K, b = LOAD1(x1 + c) - K;
                const A m = sc[c], d = a - b, delta = (a + b) * (A)0.5 - m;
                sc[c] = fma(delta, w, m);
                sq[c] = fma(delta * delta, wn, fma(d * d, (A)0.5, sq[c]));
            }
        }
        if (p < pe) { /* a lone last position (or the tile's only one): n so far, 1 more */
            const A n = (A)(p - pb), w = (A)1 / (n + (A)1), wn = w * n;
            __global const T *x0 = xs + p * C;
            for (ulong c = 0; c < cv; c += VW) {
                const AV m = GN_LDV(sc + c);
                const AV delta = (GN_LDX(x0 + c) - GN_LDV(kr + c)) - m;
                GN_STV(fma(delta, w, m), sc + c);
                GN_STV(fma(delta * delta, wn, GN_LDV(sq + c)), sq + c);
            }
            for (ulong c = cv; c < C; c++) {
                const A m = sc[c], delta = (LOAD1(x0 + c) - kr[c]) - m;
                sc[c] = fma(delta, w, m);
                sq[c] = fma(delta * delta, wn, sq[c]);
            }
        }
        gn_tile_block_join(sc, tot, C, (A)(pb - p0), (A)(pe - pb));
    }
    /* the tile's mean and M2 where gn_group_moments and the merges read them */
    if (p1 > p0)
        for (ulong c = 0; c < C; c++) {
            sc[c] = tot[c] / (A)(p1 - p0);
            sq[c] = tot[2 * C + c];
        }
}

/* CPU devices: a tile's moments into its GN_TILE_LEN values at pt (the layout above: the
 * channels' mean and M2, the groups' S and M2, the staging row, the shifts K_c), positions
 * [p0, p1): the channels' in one read (gn_tile_moments_rows), then each group's from them. */
inline void gn_tile_moments_cpu(__global const T *xs, __global A *pt, ulong p0, ulong p1,
                                ulong G, ulong cpg, ulong hw)
{
    const ulong C = G * cpg;
    __global A *kr = pt + 3 * C + 2 * G;
    gn_tile_moments_rows(xs, pt, pt + 2 * C + 2 * G, kr, pt + 4 * C + 2 * G, p0, p1, C, hw);
    for (ulong g = 0; g < G; g++) {
        __global A *out = pt + 2 * C + 2 * g, *lo = pt + GN_TILE_LO(C, G) + 2 * g;
        gn_group_moments(kr, pt, g * cpg, cpg, C, (A)(p1 - p0), out);
#if W_DOUBLE
        if (p1 > p0) {
            gn_group_moments_w(kr, pt + 4 * C + 2 * G, g * cpg, cpg, C, (A)(p1 - p0), out, lo);
            continue;
        }
#endif
        lo[0] = lo[1] = 0;
    }
}

__kernel void gn_nhwc_moments(IN_PTRS, __global A *part, __local A *scratch, KS_PARAM)
{
    KS_BEGIN;
    IN_UNPACK
    KS_UL(rows);
    KS_UL(chunk_len);
    KS_UI(chunks);
    KS_UL(first_block);
    const ulong G = gn_groups, cpg = gn_cpg, hw = gn_hw, C = G * cpg, N = rows / G;
    /* Tile t = first_block + the group's index: first_block is 0 unless the host launches
     * some of the tiles only (src/latency.c, parts), whose last part may hold tiles past
     * the end, which do nothing (the whole work-group alike, so no barrier is split). */
    const ulong t = first_block + get_group_id(0);
    const uint lid = get_local_id(0), L = get_local_size(0);
    if (t >= chunks)
        return;
    const ulong p0 = t * chunk_len, p1 = min(hw, p0 + chunk_len);
    const A cnt = (A)(p1 - p0);
    for (ulong n = get_group_id(1); n < N; n += get_num_groups(1)) {
        __global const T *xs = x + x_off + n * x_stride; /* position 0 */
        __global A *pt = part + (n * chunks + t) * GN_TILE_LEN(C, G);
        if (L == 1) {
            gn_tile_moments_cpu(xs, pt, p0, p1, G, cpg, hw);
            continue;
        }
        /* GPUs: L is a multiple of cpg dividing C (group_norm.c), so each round of L
         * channels holds whole groups; item lid's group starts at item lid - lid % cpg. The
         * channels' shifts and moments in W lie where CPU devices keep theirs. */
        const uint lead = lid - lid % (uint)cpg;
        __global A *kr = pt + 3 * C + 2 * G, *tot = pt + 4 * C + 2 * G;
        for (ulong c0 = 0; c0 < C; c0 += L) {
            const ulong c = c0 + lid;
            A s, q;
            gn_channel_moments(xs, c, C, hw, p0, p1, cnt, &s, &q, kr, tot);
            const A K = kr[c];
            /* the group's S: S'_c added in channel order by the group's first item */
            const A Kg = gn_shift1(xs, c0 + lead, C, hw);
            const A sh = fma(cnt, K - Kg, s); /* S'_c */
            scratch[lid] = sh;
            /* (the global fence: the lead reads the group's kr and tot, below) */
            barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
            A Sg = 0;
            if (lid == lead)
                for (uint k = 0; k < cpg; k++)
                    Sg += scratch[lid + k];
            barrier(CLK_LOCAL_MEM_FENCE);
            if (lid == lead)
                scratch[lid] = Sg;
            barrier(CLK_LOCAL_MEM_FENCE);
            const A d = sh / cnt - scratch[lead] / (cnt * (A)cpg);
            barrier(CLK_LOCAL_MEM_FENCE);
            scratch[lid] = fma(d * d, cnt, q);
            barrier(CLK_LOCAL_MEM_FENCE);
            if (lid == lead) {
                A M2 = 0;
                for (uint k = 0; k < cpg; k++)
                    M2 += scratch[lid + k];
                const ulong g = (c0 + lid) / cpg;
                __global A *out = pt + 2 * C + 2 * g, *lo = pt + GN_TILE_LO(C, G) + 2 * g;
                out[0] = Sg;
                out[1] = M2;
#if W_DOUBLE
                gn_group_moments_w(kr, tot, g * cpg, cpg, C, cnt, out, lo);
#else
                lo[0] = lo[1] = 0;
#endif
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
    }
}

/* A group whose squared deviations overflow A although its elements are finite (|x| above
 * about 1e19 in float32) is redone from every element, scaled by the power of two sc that
 * brings its largest magnitude into [1, 2), as rows are (row_stats), around K = the group's
 * shift (gn_shift1 of its first channel) * sc: the L items take every L-th position of the
 * group's cpg channels; rare, so plain loops. The redo is the second pass of its caller's
 * loop, whose reductions both passes share, not a branch around reductions of its own: PoCL's
 * work-group compiler copies the code between barriers for each path through a branch that
 * holds barriers (gn_nhwc_merge at 32 items took 25 s to build with the branch, 1.0 s
 * without; bench/RESULTS.md, "Kernel builds"). */

/* The item's largest magnitude among the group's elements (a NaN wins). */
inline A gn_group_absmax_part(__global const T *xs, ulong c0, ulong cpg, ulong C, ulong hw,
                              uint lid, uint L)
{
    A M = 0;
    for (ulong p = lid; p < hw; p += L)
        for (ulong k = 0; k < cpg; k++)
            M = max_nan(M, fabs(LOAD1(xs + p * C + c0 + k)));
    return M;
}

/* The item's compensated sum of the scaled deviations (x * sc - Ks) - mc, or (sq) of their
 * squares. */
inline A gn_group_scaled_part(__global const T *xs, ulong c0, ulong cpg, ulong C, ulong hw,
                              uint lid, uint L, A sc, A Ks, A mc, const int sq)
{
    A sum = 0, cs = 0;
    for (ulong p = lid; p < hw; p += L)
        for (ulong k = 0; k < cpg; k++) {
            const A d = (LOAD1(xs + p * C + c0 + k) * sc - Ks) - mc;
            kahan_add(&sum, &cs, sq ? d * d : d);
        }
    return sum;
}

/* A group's channels [c0, c0 + cpg) in its sample's table tn (rows of C: the K, the a, the
 * b): K, a = rs * gamma_c and b = beta_c - m * a, gamma_c and beta_c folded with the entry's
 * modulation rows sr and hr (gn_fold_mod; 0 when absent); a work-group's L items take every
 * L-th channel. */
inline void gn_table_group(__global A *tn, ulong C, ulong c0, ulong cpg, A K, A m, A rs,
                           __global const P *gamma, ulong gamma_off, __global const P *beta,
                           ulong beta_off, __global const P *sr, __global const P *hr,
                           uint flags, uint lid, uint L)
{
    for (ulong k = lid; k < cpg; k += L) {
        const ulong c = c0 + k;
        A gam = (flags & CLNORM_KF_GAMMA) ? gamma[gamma_off + c] : (A)1;
        A b = (flags & CLNORM_KF_BETA) ? beta[beta_off + c] : (A)0;
        gn_fold_mod(&gam, &b, sr, hr, c);
        const A a = rs * gam;
        tn[c] = K;
        tn[C + c] = a;
        tn[2 * C + c] = fma(-m, a, b);
    }
}

#if W_DOUBLE
/* A group's moments in its tiles (gn_merge_row): pn the first tile's S and M2 (GN_TILE_LEN
 * apart), or 0 where there are none to read (the workgroup strategy, or a group redone at a
 * scale, whose tiles' moments are not in its units). */
typedef struct {
    __global const A *pn, *lo; /* lo: the same tile's remainders (GN_TILE_LO) */
    ulong chunk_len;
    uint chunks;
} gn_tile_moments;

/* A part's moments (St its sum of x * sc - K, M2t its M2 around its own mean, nt its count)
 * added to sums S and Q around K + m (mw): S += St - nt m, Q += M2t + nt (St / nt - m)^2. */
inline void gn_moments_around(W St, W M2t, W nt, W mw, W *S, W *Q)
{
    const W d = St / nt - mw;
    *S += St - nt * mw;
    *Q += fma(d * d, nt, M2t);
}

/* The item's part (S, Q: the sums of d and d^2, d = x * sc - K - m, in W; returned: whether
 * there is one) of gn_stats_w (op_group_norm.cl) of an NHWC group: where wide, from its
 * channels [c0, c0 + cpg) of every position, an item every L-th position
 * (gn_nhwc_group_stats, group_nhwc_wg.cl, and the backward's merge of the tiles,
 * gn_merge_row), else from the tiles' moments (tm) where there are. In the merge it reads
 * the group's channels strided by C, scalar: on PoCL's CPU device 2-2.5 ms more on
 * 8x320x32x32 around 300 at spread 1e-2 (the merge had 12 us), 18-70% of that backward, paid
 * only where a group's float rstd * sc is at least CLNORM_GN_VAR_WIDE; without it the tiles'
 * float statistics left dx 1.10x the bound there (bench/RESULTS.md, "dx of large rstd *
 * |gamma| in double on the kernels"). Other groups of the merge take their tiles' moments
 * (tm) in double instead, which costs nothing: that gives mlo and rlo, what the float m and r
 * leave of the merged mean and rstd, for the backward's double sums (group_backward.cl,
 * gn_chan_sums_cv; the workgroup strategy's take its items' shares, gn_nhwc_group_stats).
 * No barrier. */
inline int gn_group_part_w(__global const T *xs, ulong c0, ulong cpg, ulong C, ulong hw,
                           uint lid, uint L, A K, A m, A sc, int wide, gn_tile_moments tm,
                           W *S_out, W *Q_out)
{
    W S = 0, Q = 0;
    const W Kw = K, mw = m, sw = sc;
    if (!wide && tm.pn) {
        /* the tiles' moments (S_t of x - K, M2_t around the tile's mean) in double, around
         * K + m: S = sum S_t - n m, Q = sum M2_t + n_t (S_t / n_t - m)^2 */
        for (uint t = lid; t < tm.chunks; t += L) {
            const W nt = (W)((min(hw, (t + 1) * tm.chunk_len) - t * tm.chunk_len) * cpg);
            __global const A *e = tm.pn + t * GN_TILE_LEN(C, C / cpg);
            __global const A *el = tm.lo + t * GN_TILE_LEN(C, C / cpg);
            gn_moments_around((W)e[0] + (W)el[0], (W)e[1] + (W)el[1], nt, mw, &S, &Q);
        }
    } else if (wide) {
        /* four positions a step, each its own sums: one chain of dependent double additions
         * took 4.6 ms of the merge at 8x320x32x32 on PoCL's CPU device, four 2.0-2.5 */
        W S1 = 0, S2 = 0, S3 = 0, Q1 = 0, Q2 = 0, Q3 = 0;
        ulong p = lid;
        for (; p + 3 * L < hw; p += 4 * L) {
            __global const T *x0 = xs + p * C + c0, *x1 = x0 + L * C, *x2 = x1 + L * C,
                             *x3 = x2 + L * C;
            for (ulong k = 0; k < cpg; k++) {
                const W d0 = gn_dev_w(LOAD1(x0 + k), sw, Kw, mw);
                const W d1 = gn_dev_w(LOAD1(x1 + k), sw, Kw, mw);
                const W d2 = gn_dev_w(LOAD1(x2 + k), sw, Kw, mw);
                const W d3 = gn_dev_w(LOAD1(x3 + k), sw, Kw, mw);
                S += d0;
                S1 += d1;
                S2 += d2;
                S3 += d3;
                Q = fma(d0, d0, Q);
                Q1 = fma(d1, d1, Q1);
                Q2 = fma(d2, d2, Q2);
                Q3 = fma(d3, d3, Q3);
            }
        }
        for (; p < hw; p += L)
            for (ulong k = 0; k < cpg; k++) {
                const W d = gn_dev_w(LOAD1(xs + p * C + c0 + k), sw, Kw, mw);
                S += d;
                Q = fma(d, d, Q);
            }
        S = (S + S1) + (S2 + S3);
        Q = (Q + Q1) + (Q2 + Q3);
    }
    *S_out = S;
    *Q_out = Q;
    return wide || tm.pn;
}

/* The group's statistics so (gn_group_part_w, then gn_stats_w). Every item must call it. */
inline void gn_group_stats_w(__global const T *xs, ulong c0, ulong cpg, ulong C, ulong hw,
                             uint lid, uint L, __local A *lo, __local A *hi, A *K, A *m, A *r,
                             A *rlo, A *mlo, A sc, A eps, int wide, gn_tile_moments tm)
{
    W S, Q;
    const int pass = gn_group_part_w(xs, c0, cpg, C, hw, lid, L, *K, *m, sc, wide, tm, &S, &Q);
    gn_stats_w(S, Q, cpg * hw, lid, L, lo, hi, K, m, r, rlo, mlo, sc, eps, wide, pass);
}
#endif

/* Group row `row` = n * G + g: its tiles' moments merged (the work-group's L items taking
 * every L-th tile, then adding), its statistics (K, m, r, sc) into the stats scratch and the
 * saved mean/rstd and, with a table (the forward), every channel's K, a = r * gamma_c and
 * b = beta_c - m * a (in x's own units: K / sc, r * sc * gamma_c and m / sc, where a group
 * was redone scaled), gamma_c and beta_c folded with the entry's modulation rows sr and hr
 * (gn_fold_mod; 0 when absent). The moments of the group: entries j = tile * cpg + k, channel
 * g * cpg + k. */
inline void gn_merge_row(__global const T *x, ulong x_off, ulong x_stride,
                         __global const P *gamma, ulong gamma_off, __global const P *beta,
                         ulong beta_off, __global P *mean, ulong mean_off, __global P *rstd,
                         ulong rstd_off, ulong G, ulong cpg, ulong hw,
                         __global const A *part, __global A *stats, __global A *table,
                         ulong row, ulong chunk_len, uint chunks, A eps, uint flags,
                         __local A *scratch, __local A *scratch2, uint lid, uint L,
                         __global const P *sr, __global const P *hr)
{
    const ulong C = G * cpg, n = row / G, c0 = (row % G) * cpg;
    const A total = (A)(cpg * hw);
    __global const T *xs = x + x_off + n * x_stride;
    A K = gn_shift1(xs, c0, C, hw), sc = 1, m, var;
    int redone = 0; /* the same for every item of the group */
    /* the group's moments of tile t: pn[t * GN_TILE_LEN] (S, then M2), all around K */
    __global const A *pn = part + n * chunks * GN_TILE_LEN(C, G) + 2 * C + 2 * (row % G);
    /* pass 0 from the tiles' moments; pass 1, the redo at a scale, from the elements */
    for (int pass = 0;; pass++) {
        A s = 0, cs = 0;
        if (pass == 0)
            for (uint t = lid; t < chunks; t += L)
                kahan_add(&s, &cs, pn[t * GN_TILE_LEN(C, G)]);
        else
            s = gn_group_scaled_part(xs, c0, cpg, C, hw, lid, L, sc, K, 0, 0);
        m = wg_sum(s, scratch, lid, L) / total;
        A q = 0, cq = 0;
        if (pass == 0)
            for (uint t = lid; t < chunks; t += L) {
                const A nt = (A)((min(hw, (t + 1) * chunk_len) - t * chunk_len) * cpg);
                __global const A *e = pn + t * GN_TILE_LEN(C, G);
                const A d = e[0] / nt - m;
                kahan_add(&q, &cq, fma(d * d, nt, e[1]));
            }
        else
            q = gn_group_scaled_part(xs, c0, cpg, C, hw, lid, L, sc, K, m, 1);
        var = wg_sum(q, scratch, lid, L) / total;
        if (pass == 1 || !needs_rescale(var)) /* the same for every item of the group */
            break;
        sc = rescale_factor(wg_max(gn_group_absmax_part(xs, c0, cpg, C, hw, lid, L), scratch,
                                   lid, L));
        K = K * sc; /* the shift, scaled */
        redone = 1;
    }
    A r = rstd_rounded(var, eps * sc * sc), rlo = 0;
    A mlo = 0;
#if W_DOUBLE /* the backward (no table): again in double (gn_group_stats_w) */
    if (!table) {
        /* (the group's remainders lie GN_TILE_LO - 2 C past its S and M2) */
        const gn_tile_moments tm = {redone ? 0 : pn, pn + GN_TILE_LO(C, G) - 2 * C, chunk_len,
                                    chunks};
        gn_group_stats_w(xs, c0, cpg, C, hw, lid, L, scratch, scratch2, &K, &m, &r, &rlo, &mlo,
                         sc, eps, r * sc >= (A)CLNORM_GN_VAR_WIDE, tm);
    }
#endif
    if (lid == 0) {
        gn_put_stats(stats, row, K, m, r, rlo, sc, mlo);
        if ((flags & CLNORM_KF_MEAN) != 0)
            mean[mean_off + row] = (K + m) / sc;
        if ((flags & CLNORM_KF_RSTD) != 0)
            rstd[rstd_off + row] = r * sc;
    }
    if (table) /* in x's own units */
        gn_table_group(table + n * 3 * C, C, c0, cpg, K / sc, m / sc, r * sc, gamma, gamma_off,
                       beta, beta_off, sr, hr, flags, lid, L);
}

/* Work-group per group row (gn_merge_row). table: NULL in the backward (statistics only). */
__kernel void gn_nhwc_merge(__global const T *x, __global const P *gamma,
                            __global const P *beta, __global P *mean, __global P *rstd
                            GN_MOD_PTRS, __global const A *part, __global A *stats,
                            __global A *table, __local A *scratch, __local A *scratch2,
                            KS_PARAM)
{
    KS_BEGIN;
    KS_TENSOR(x);
    KS_TENSOR(gamma);
    KS_TENSOR(beta);
    KS_TENSOR(mean);
    KS_TENSOR(rstd);
    GN_MOD_UNPACK
    GN_UNPACK
    KS_UL(rows);
    KS_UL(chunk_len);
    KS_UI(chunks);
    KS_A(eps);
    KS_UI(flags);
    const uint lid = get_local_id(0), L = get_local_size(0);
    for (ulong row = get_group_id(0); row < rows; row += get_num_groups(0))
        gn_merge_row(x, x_off, x_stride, gamma, gamma_off, beta, beta_off, mean, mean_off, rstd,
                     rstd_off, gn_groups, gn_cpg, gn_hw, part, stats, table, row, chunk_len,
                     chunks, eps, flags, scratch, scratch2, lid, L, GN_SCALE_ROW(row / gn_groups),
                     GN_SHIFT_ROW(row / gn_groups));
}

/* The forward with precomputed statistics (CLNORM_USE_GLOBAL_STATS): no moments and no
 * merge, only each sample's table from the given mean and rstd of its groups, a work-group
 * per group row, its items taking every L-th channel: K = mean (so that the apply forms x -
 * mean first, as the NCHW forward does), a = rstd * gamma_c and b = beta_c, gamma_c and beta_c
 * folded with the entry's modulation (gn_fold_mod). Then gn_nhwc_apply. */
__kernel void gn_nhwc_stats_table(__global const P *gamma, __global const P *beta,
                                  __global const P *mean, __global const P *rstd GN_MOD_PTRS,
                                  __global A *table, KS_PARAM)
{
    KS_BEGIN;
    KS_TENSOR(gamma);
    KS_TENSOR(beta);
    KS_TENSOR(mean);
    KS_TENSOR(rstd);
    GN_MOD_UNPACK
    GN_UNPACK
    KS_UL(rows);
    KS_UI(flags);
    const ulong G = gn_groups, cpg = gn_cpg, C = G * cpg;
    const uint lid = get_local_id(0), L = get_local_size(0);
    for (ulong row = get_group_id(0); row < rows; row += get_num_groups(0)) {
        const ulong n = row / G;
        /* K = mean and m = 0: b = beta_c, as given */
        gn_table_group(table + n * 3 * C, C, (row % G) * cpg, cpg, mean[mean_off + row], 0,
                       rstd[rstd_off + row], gamma, gamma_off, beta, beta_off,
                       GN_SCALE_ROW(n), GN_SHIFT_ROW(n), flags, lid, L);
    }
}

/* y of one element from its channel's K, a and b. */
inline A gn_apply1(A v, A K, A a, A b, int silu)
{
    A z = fma(v - K, a, b);
    if (silu)
        z = gn_silu1(z);
    return z;
}

/* The whole vectors of channels of one position; stream: non-temporal stores; al: x and the
 * table rows sit on multiples of the vector's size, so whole-vector loads (PoCL builds
 * vloadn from pieces where LLVM does not merge them: the apply's share of the time fell from
 * 0.53-0.64 to 0.43-0.45 of the copy's in perf, bench/RESULTS.md). Both are constants at each
 * call, so each copy has one kind of access. */
inline void gn_apply_vectors(__global const T *xp, __global T *yp, __global const A *tk,
                             __global const A *ta, __global const A *tb, ulong cv,
                             const int silu, const int stream, const int al)
{
    for (ulong c = 0; c < cv; c += VW) {
#if defined(PREFETCH_NEXT)
        PREFETCH_L2(xp + GN_PD + c);
#endif
        AV z;
        if (al)
            z = fma(CAT(LOADA_, CLNORM_X_FMT)(xp + c) - *(__global const AV *)(tk + c),
                    *(__global const AV *)(ta + c), *(__global const AV *)(tb + c));
        else
            z = fma(LOADV(xp + c) - CAT(vload, VW)(0, tk + c), CAT(vload, VW)(0, ta + c),
                    CAT(vload, VW)(0, tb + c));
        if (silu)
            z = gn_siluv(z);
#if defined(STREAM_STORE)
        if (stream)
            storev_stream(z, yp + c);
        else
#endif
            STOREV(z, yp + c);
    }
}

/* Positions [p0, p1) of a sample, one work-item, in vectors along the channels. In place (y
 * is x) is safe: each element is read just before it is written. A position's vectors are
 * all aligned to their size or none is (each starts VW elements after the last), so the kind
 * of store is chosen once per position. (Choosing it per vector, in one loop, had PoCL's
 * compiler (LLVM 15) emit an aligned 16-byte store on the plain path for float16 storage: a
 * crash at C >= 16.) */
inline void gn_apply_positions(__global const T *xs, __global T *ys, __global const A *tk,
                               ulong p0, ulong p1, ulong C, const int silu)
{
    __global const A *ta = tk + C, *tb = ta + C;
    const ulong cv = C / VW * VW;
    const ulong VA = VW * sizeof(A), VT = VW * sizeof(T);
    /* the table's rows are C apart: all aligned or none */
    const int tal = ((ulong)tk % VA) == 0 && (C * sizeof(A)) % VA == 0;
    for (ulong p = p0; p < p1; p++) {
        __global const T *xp = xs + p * C;
        __global T *yp = ys + p * C;
        const int al = tal && ((ulong)xp % VT) == 0;
#if defined(STREAM_STORE)
        if (((ulong)yp % VT) == 0) {
            if (al)
                gn_apply_vectors(xp, yp, tk, ta, tb, cv, silu, 1, 1);
            else
                gn_apply_vectors(xp, yp, tk, ta, tb, cv, silu, 1, 0);
        } else
#endif
        if (al)
            gn_apply_vectors(xp, yp, tk, ta, tb, cv, silu, 0, 1);
        else
            gn_apply_vectors(xp, yp, tk, ta, tb, cv, silu, 0, 0);
        for (ulong c = cv; c < C; c++)
            STORE1(gn_apply1(LOAD1(xp + c), tk[c], ta[c], tb[c], silu), yp + c);
    }
}

#if defined(CLNORM_X_F32) && !defined(CLNORM_F64)
/* GPUs, float32 storage: positions [p0, p1) of one sample are one contiguous run of
 * (p1 - p0) x C values, which the L items take as float4s i = lid, lid + L, ... (channels
 * 4 * (i mod C/4) on, whose K, a and b are float4s of the table too), two at a time: every
 * item busy whatever C, and 16-byte loads, two in flight, where an item per channel loaded
 * one value per position. Each value gets gn_apply1's operations in the same order, so the
 * same bits. In place is safe: an item writes the elements it has just read. Returns 0 (and
 * does nothing) where C is not a multiple of 4 or x, y or the table is off a 16-byte
 * boundary: the caller's loop over channels then. */
inline float4 gn_apply4(float4 v, float4 K, float4 a, float4 b, int silu)
{
    float4 z = fma(v - K, a, b);
    if (silu) /* per lane, as gn_apply1 */
        z = (float4)(gn_silu1(z.s0), gn_silu1(z.s1), gn_silu1(z.s2), gn_silu1(z.s3));
    return z;
}

inline int gn_apply_tile4(__global const float *xs, __global float *ys, __global const float *tk,
                          ulong p0, ulong p1, ulong C, int silu, uint lid, uint L)
{
    __global const float *xt = xs + p0 * C;
    __global float *yt = ys + p0 * C;
    if (C % 4 != 0 || (ulong)xt % 16 != 0 || (ulong)yt % 16 != 0 || (ulong)tk % 16 != 0)
        return 0;
    const ulong CV = C / 4, nv = (p1 > p0 ? p1 - p0 : 0) * CV, step = (ulong)L % CV;
    __global const float4 *xv = (__global const float4 *)xt;
    __global float4 *yv = (__global float4 *)yt;
    __global const float4 *kv = (__global const float4 *)tk, *av = kv + CV, *bv = av + CV;
    ulong i = lid, c0 = (ulong)lid % CV; /* c0: float4 i's channels, advanced by step per i */
    for (; i + L < nv; i += 2 * (ulong)L) {
        ulong c1 = c0 + step;
        c1 = c1 >= CV ? c1 - CV : c1;
        const float4 v0 = xv[i], v1 = xv[i + L];
        yv[i] = gn_apply4(v0, kv[c0], av[c0], bv[c0], silu);
        yv[i + L] = gn_apply4(v1, kv[c1], av[c1], bv[c1], silu);
        c0 = c1 + step;
        c0 = c0 >= CV ? c0 - CV : c0;
    }
    if (i < nv)
        yv[i] = gn_apply4(xv[i], kv[c0], av[c0], bv[c0], silu);
    return 1;
}
#endif

__kernel void gn_nhwc_apply(__global const T *x, __global T *y, __global const A *table,
                            KS_PARAM)
{
    KS_BEGIN;
    KS_TENSOR(x);
    KS_TENSOR(y);
    GN_UNPACK
    KS_UL(rows);
    KS_UL(chunk_len);
    KS_UI(flags);
    KS_UL(first_block);
    const ulong G = gn_groups, cpg = gn_cpg, hw = gn_hw, C = G * cpg, N = rows / G;
    /* tile t as in gn_nhwc_moments; one past the end has no positions (p0 >= hw) */
    const ulong t = first_block + get_group_id(0);
    const uint lid = get_local_id(0), L = get_local_size(0);
    const ulong p0 = t * chunk_len, p1 = min(hw, p0 + chunk_len);
    const int silu = (flags & CLNORM_KF_SILU) != 0;
    for (ulong n = get_group_id(1); n < N; n += get_num_groups(1)) {
        __global const T *xs = x + x_off + n * x_stride;
        __global T *ys = y + y_off + n * y_stride;
        __global const A *tk = table + n * 3 * C, *ta = tk + C, *tb = ta + C;
        if (L == 1) {
            /* The SiLU decided once per sample, not per vector: a select would compute the
             * exponentials either way. */
            if (silu)
                gn_apply_positions(xs, ys, tk, p0, p1, C, 1);
            else
                gn_apply_positions(xs, ys, tk, p0, p1, C, 0);
            continue;
        }
#if defined(CLNORM_X_F32) && !defined(CLNORM_F64)
        if (gn_apply_tile4(xs, ys, tk, p0, p1, C, silu, lid, L))
            continue;
#endif
        for (ulong c = lid; c < C; c += L) {
            const A K = tk[c], a = ta[c], b = tb[c];
            ulong p = p0;
            for (; p + 1 < p1; p += 2) {
                const A v0 = LOAD1(xs + p * C + c), v1 = LOAD1(xs + (p + 1) * C + c);
                STORE1(gn_apply1(v0, K, a, b, silu), ys + p * C + c);
                STORE1(gn_apply1(v1, K, a, b, silu), ys + (p + 1) * C + c);
            }
            if (p < p1)
                STORE1(gn_apply1(LOAD1(xs + p * C + c), K, a, b, silu), ys + p * C + c);
        }
    }
}

/* CPU devices, one work-item per sample (group_norm.c chooses it: enough samples for the
 * cores, or a small one): the sample's moments as one tile, its groups' statistics and table,
 * then the apply, in one launch where the tiles take three, and with the sample's second read
 * from the core's caches when it fits them. The same code as the tile chain run with a single
 * tile per sample, so the same bits as that chain. In place is safe: the sample's K values are
 * read before its apply writes, and no other item touches the sample. */
__kernel void gn_nhwc_sample(FWD_PTRS, __global A *part, __global A *stats,
                             __global A *table, __local A *scratch, KS_PARAM)
{
    KS_BEGIN;
    FWD_UNPACK
    KS_UL(rows);
    KS_A(eps);
    KS_UI(flags);
    const ulong G = gn_groups, cpg = gn_cpg, hw = gn_hw, C = G * cpg, N = rows / G;
    for (ulong n = get_group_id(0); n < N; n += get_num_groups(0)) {
        __global const T *xs = x + x_off + n * x_stride;
        __global T *ys = y + y_off + n * y_stride;
        __global A *pt = part + n * GN_TILE_LEN(C, G);
        gn_tile_moments_cpu(xs, pt, 0, hw, G, cpg, hw);
        for (ulong g = 0; g < G; g++)
            gn_merge_row(x, x_off, x_stride, gamma, gamma_off, beta, beta_off, mean, mean_off,
                         rstd, rstd_off, G, cpg, hw, part, stats, table, n * G + g, hw, 1, eps,
                         flags, scratch, scratch, 0, 1, GN_SCALE_ROW(n), GN_SHIFT_ROW(n));
        __global const A *tk = table + n * 3 * C;
        if ((flags & CLNORM_KF_SILU) != 0)
            gn_apply_positions(xs, ys, tk, 0, hw, C, 1);
        else
            gn_apply_positions(xs, ys, tk, 0, hw, C, 0);
    }
}
