/*
 * norm_backward.cl - gradients of the row-normalization family. Needs common.cl, an op_*.cl
 * (op_row_norm.cl: the bwd_row hooks) and row_stats.cl before it.
 *
 *   xhat = (v - mean) * rstd   (RMS: v * rstd),   g = dz * gamma,   v = x (+ residual)
 *   dz   = dy * (1 + scale[b])  (dy without a modulation; b the row's sample)
 *   dx   = rstd * (g - mean(g) - xhat * mean(g * xhat))   (RMS: no mean(g) term)  (+ dsum)
 *          (global statistics: rstd * g, the statistics being constants)
 *   dgamma = sum over rows of dz * xhat,   dbeta = sum over rows of dz
 *   dscale[b] = sum over b's rows of dy * (xhat * gamma + beta),   dshift[b] = sum of dy
 *
 * The row blocks never straddle two samples, and the partials are sums of the raw dy:
 * S1 = sum dy * xhat and S0 = sum dy per block and column. Per sample, norm_bwd_params adds
 * its blocks' S1 and S0, then dscale = gamma S1 + beta S0, dshift = S0, and dgamma and dbeta
 * add (1 + scale[b]) S1 and (1 + scale[b]) S0 over the samples. Without a modulation there is
 * one sample. Many partials per column are added in slices first (norm_bwd_slices).
 *
 * norm_bwd_rows: work-group b takes a block of rows (block_rows below: rpg rows of one
 * sample, or whole samples of fewer than rpg rows, each then a partial of its own). For each row
 *   its L items (L = 1 on CPUs) reduce mean(g) and mean(g * xhat), then, in a second sweep over
 *   the same (now cached) row, write dx and add dy * xhat and dy into the group's own partial
 *   rows part[b][0..cols) and part[b][cols..2 cols). A column always belongs to the same item
 *   (vector v = lid + k L), so the partials need no atomics, and dx and the partials come
 *   from one read of x and dy from memory. Few long rows are also cut into column chunks
 *   (a second NDRange dimension); their sums then come from norm_bwd_sums, merged in chunk
 *   order, and each chunk's group writes only its own columns of the partials.
 * norm_bwd_slices, norm_bwd_params: per column, the groups' partials are added in group
 *   order (P_ADD: in double, or float with each addition's rest kept), in slices of
 *   CLNORM_PARAM_SLICE first when there are many (a work-item per column and slice), then the
 *   slices in order: a fixed order, so dgamma and dbeta are the same bits run after run.
 */

/*
 * A row's statistics as (K, m, r, sc) with xhat = ((v * sc - K) - m) * r; the true rstd is
 * r * sc. Saved statistics give K = 0, m = mean, sc = 1 (RMS: m = 0): xhat = ((x + residual)
 * - mean) * r forms the sum first, exact when large offsets of x and the residual cancel
 * (x ~ 1e4 + N(0,1), residual ~ -1e4 + N(0,1)), where (x - mean) + residual would round x's
 * offset to float32 first and lose ~5e-4 of every element. Recomputed ones
 * (norm_bwd_stats, CLNORM_KF_RECOMPUTE) keep the forward's split: K the row's shift
 * and m the mean of v - K, so that large-mean rows lose nothing to a mean rounded to P (a
 * float32 mean of 1e6 + N(0,1) data is off by up to 0.03), and the forward's rescaling of
 * rows whose squares overflow.
 */
inline void bwd_stats_of(__global const P *mean, ulong m_off, __global const P *rstd,
                         ulong r_off, __global const A *stats, ulong row, uint flags, A2 *K,
                         A *m, A *r, A *sc, A *rlo)
{
    if ((flags & CLNORM_KF_RECOMPUTE) != 0) {
        __global const A *st = stats + row * CLNORM_STATS_PER_ROW;
        *K = (A2)(st[0], st[1]);
        *m = st[2];
        *r = st[3];
        *sc = st[4];
        *rlo = st[5]; /* (row_stats_exact) */
    } else {
        *K = (A2)(0, 0);
        *m = (flags & CLNORM_KF_RMS) ? 0 : mean[m_off + row];
        *r = rstd[r_off + row];
        *sc = 1;
        *rlo = 0;
    }
}
#define BWD_STATS(row, flags, K, m, r, sc, rlo)                                             \
    bwd_stats_of(mean, mean_off, rstd, rstd_off, stats, row, flags, K, m, r, sc, rlo)

/*
 * A saved float32 mean is the row's rounded: up to |mean| 2^-24 off, which xhat carries times
 * rstd and dx and dgamma with it (a row near 300 of spread 1e-3: dx 18,916x torch's float64
 * bound, tests/torch_layer_spread.py --saved-stats). Host calls recompute such statistics
 * (src/execute.c, recompute_saved); a layer-1 call's are in device memory, so the kernels
 * correct them here. A row that refines (bwd_refines: LayerNorm's or the fused add's saved
 * float32 statistics, |mean| * rstd above CLNORM_SAVED_MEAN_SPAN, the same for every item) is
 * taken around its shift K (row_shift: elements of the row, exact differences) with m the
 * given mean around it; a pass of its own sums the deviations d = (v - K) - m
 * (bwd_row_dev_sum), and m + mean(d), the row's mean to float's rounding of the deviations,
 * replaces m, while the sums pass's sum(g * xhat') from m becomes sum(g * xhat') - mean(d) r
 * sum(g) (bwd_refine_sums). rstd stays as given: its rounding is relative, 2^-24 of xhat.
 * Other rows keep the statistics exactly as given and run as before (the same bits).
 */
inline int bwd_refines(uint flags, A m, A r)
{
#if defined(CLNORM_F64)
    return 0;
#else
    return (flags & (CLNORM_KF_RECOMPUTE | CLNORM_KF_RMS | CLNORM_KF_GLOBAL_STATS)) == 0 &&
           saved_mean_off(m, r);
#endif
}

/* A refining row's shift K and its mean m around it (from K = 0 and the given mean). */
inline void bwd_refine_shift(row_in in, ulong cols, A2 *K, A *m)
{
    *K = row_shift(in, cols, 1, 0);
    *m = (*m - (*K).s0) - (*K).s1;
}

/* ... and once its sums are in (sd: of the deviations from m, sg: of g, *sgx: of g * xhat
 * from m): sum(g * xhat) from the row's mean, and that mean into m, in W (rounded once). */
inline void bwd_refine_sums(W sd, W sg, W *sgx, A *m, W rw, ulong cols)
{
    const W dm = sd / (W)cols;
    *sgx -= dm * rw * sg;
    *m = (A)((W)*m + dm);
}

/*
 * Wide rows: a LayerNorm row (not RMSNorm's) whose rstd = r * sc, times its sample's factor
 * gf (BWD_GF: max(1, max |gamma| max |1 + scale|), or 1), is at least CLNORM_ROW_WIDE
 * (flags.h) takes dx in W where that is double: its statistics, when recomputed, in double
 * (row_stats_exact, as every row's), g = dy (1 + scale) gamma, xhat from x unrounded with
 * r's rest, the sums of g and g * xhat, mean(g), mean(g * xhat) and dx, rounded once
 * (bwd_row_sums_w, BWD_ELEM_W). In
 * float, dx = rstd * ((g - mean(g)) - xhat * mean(g * xhat)) near 0 between terms of rstd * |g|
 * carries their roundings times rstd: LayerNorm rows of 64 at spread 3e-4 and 1e-4 about 300
 * (rstd near 316) missed torch's float64 by 1.13x and 1.27x of the bound 1e-5 + 1e-5 |ref|,
 * rows of N(0, 0.005^2) by 1.26x (tests/torch_layer_spread.py; bench/RESULTS.md, "The row
 * kernels' backward of a large rstd in double"). The parameter gradients' terms take xhat in
 * W for every row (BWD_PXV, below). Without double, or with precomputed statistics
 * (dx = rstd * g), no row is wide.
 */
#define BWD_WIDE(rs, gf, flags)                                                             \
    (W_DOUBLE &&                                                                            \
     ((flags) & (CLNORM_KF_RMS | CLNORM_KF_GLOBAL_STATS | CLNORM_KF_GRAD_X)) ==             \
         CLNORM_KF_GRAD_X &&                                                                \
     (rs) * (gf) >= (A)CLNORM_ROW_WIDE)

/* The parameter partials' xhat (S1's terms dy * xhat, for dgamma and dscale): where W is
 * double, from x unrounded and the row's mean and rstd in W (K + m, r + rlo: double
 * statistics where recomputed, norm_bwd_stats or bwd_row_stats_here), as the wide rows' dx
 * takes it; else the float xhat. A float xhat's rounding in each term (and each row's float
 * rstd's, in all of the row's) had put LayerNorm's dgamma at 0.72-0.86x the bound 1e-5 +
 * 1e-5 |ref| at 16384x256 and 1.04x at 32768x256 (bench/RESULTS.md, "The row ops' parameter
 * terms with xhat in double"). In norm_bwd_rows' scope (bw, K, m, sc, rw). */
#if W_DOUBLE
#define BWD_PX1(i, xh) ((IN_DEV_W(bw.in, (i), K, sc) - (W)(m)) * rw)
#define BWD_PXV(i, xh) ((IN_DEV_WV(bw.in, (i), K, sc) - (WV)(m)) * (WV)(rw))
#else
#define BWD_PX1(i, xh) ((W)(xh))
#define BWD_PXV(i, xh) TO_WV(xh)
#endif

/* The item's largest |p[j] + one| over its share of [0, cols), in vectors (a NaN may be
 * passed over: dx is NaN then, wide or not). */
inline A bwd_absmax(__global const P *p, const int one, ulong cols, uint lid, uint L)
{
    const ulong nv = cols / VW;
    AV mv = (AV)(0);
    for (ulong v = lid; v < nv; v += L)
        mv = fmax(mv, fabs(LOADP(p + v * VW) + (A)one));
    A m = HMAX(mv);
    for (ulong j = nv * VW + lid; j < cols; j += L)
        m = fmax(m, fabs((A)p[j] + (A)one));
    return m;
}

/* The factor of sample s from gamma and its scale row (either 0: absent), by one item. */
inline A bwd_gfactor_of(__global const P *gamma, __global const P *scale, ulong cols)
{
    const A g = gamma ? bwd_absmax(gamma, 0, cols, 0, 1) : 1;
    const A o = scale ? bwd_absmax(scale, 1, cols, 0, 1) : 1;
    return fmax(g * o, (A)1);
}

/* The factor of a row's sample, as the kernel's flags say, kept in *gf for the rows before
 * *gend (the sample's end; 0 at first): from norm_bwd_gmax's gm (CLNORM_KF_GMAX); from gamma
 * and the scale by a work-group of one item, which needs no barrier (CLNORM_KF_GMAX_HERE:
 * src/op/row_norm.c sets it for one-item work-groups; any other size would still get the
 * factor, each item reading the whole row); else 1. Rows come in ascending order. */
inline A bwd_gfactor(__global const A *gm, __global const P *gamma, ulong gamma_off,
                     __global const P *scale, ulong scale_off, ulong scale_stride, ulong cols,
                     ulong row, ulong sample_rows, uint flags, A *gf, ulong *gend)
{
    if ((flags & (CLNORM_KF_GMAX | CLNORM_KF_GMAX_HERE)) == 0)
        return 1;
    if (row < *gend)
        return *gf;
    const ulong s = row / sample_rows;
    *gend = (s + 1) * sample_rows;
    if ((flags & CLNORM_KF_GMAX) != 0)
        *gf = gm[s];
    else
        *gf = bwd_gfactor_of((flags & CLNORM_KF_GAMMA) ? gamma + gamma_off : 0,
                             (flags & CLNORM_KF_SCALE) ? scale + scale_off + s * scale_stride : 0,
                             cols);
    return *gf;
}
#define BWD_GF(row, flags)                                                                  \
    bwd_gfactor(gm, gamma, gamma_off, scale, scale_off, scale_stride, cols, row, sample_rows, \
                flags, &gf_here, &gend_here)
/* ... its cache, in a kernel that calls BWD_GF */
#define BWD_GF_CACHE                                                                        \
    A gf_here = 1;                                                                          \
    ulong gend_here = 0

/*
 * The wide rows' factor per sample s, gm[s] = max(1, max |gamma| * max |1 + scale[s]|), with
 * 1 for an absent gamma or scale: a row of rstd r is wide where r * gm[s] is at least
 * CLNORM_ROW_WIDE, as in the host loop (src/op/row_norm_host_body.h, HN(row_wide)). dx's
 * terms are of rstd * |g|, g = dy (1 + scale) gamma: at spread 0.07 (rstd near 14) with
 * gamma of 1 + N(0, 30^2), float32 statistics and sums put dx at 1.5x torch's bound 1e-5 +
 * 1e-5 |ref|, and both had to go to double to bring it to 0.006x (bench/RESULTS.md, "The row
 * kernels' wide rows by rstd * |gamma|"). Runs first, only where that can change a row and
 * the rows kernel cannot take the factor itself (src/op/row_norm.c,
 * clnorm_row_norm_geometry_flags): a float32 LayerNorm dx with gamma or a scale on a device
 * with double, in work-groups of several items (GPUs) or rows cut into chunks. A work-group
 * per sample, grid-stride beyond.
 */
__kernel void norm_bwd_gmax(__global const P *gamma, __global const P *scale, __global A *gm,
                            __local A *lmax, KS_PARAM)
{
    KS_BEGIN;
    KS_TENSOR(gamma);
    KS_TENSOR(scale);
    KS_UL(samples);
    KS_UL(cols);
    KS_UI(flags);
    const uint lid = get_local_id(0);
    const uint L = get_local_size(0);
    /* (every item reduces, whatever the flags: no barrier under a branch, which PoCL's
     * work-group compiler does not take) */
    const int has_g = (flags & CLNORM_KF_GAMMA) != 0, has_s = (flags & CLNORM_KF_SCALE) != 0;
    const A g = wg_max(has_g ? bwd_absmax(gamma + gamma_off, 0, cols, lid, L) : 1, lmax, lid,
                       L);
    for (ulong s = get_group_id(0); s < samples; s += get_num_groups(0)) {
        const A o = wg_max(
            has_s ? bwd_absmax(scale + scale_off + s * scale_stride, 1, cols, lid, L) : 1,
            lmax, lid, L);
        if (lid == 0)
            gm[s] = fmax(g * o, (A)1);
    }
}

/* The chunk sums of few long rows (norm_bwd_sums), per (row, chunk): the sums of g and g *
 * xhat rounded to A, then what each rounding left (wide rows; else what a double sum's
 * rounding left, or 0). */
#define BWD_SUMS_PER_CHUNK CLNORM_ROW_SUMS_PER_CHUNK

/* The work-group sum of a W: in double with its bits in two local arrays (wg_sum_w), or
 * wg_sum. */
#if W_DOUBLE
#define BWD_WG_SUM_W(v) wg_sum_w(v, scratch, scratch2, lid, L)
#else
#define BWD_WG_SUM_W(v) wg_sum(v, scratch, lid, L)
#endif

#if W_DOUBLE
/* The sums of d = v - K and d^2 in double over the item's share of a row (one item: in
 * vectors of double, CPU devices), and the share's largest magnitude (x's or the residual's,
 * as seg_absmax takes it): norm_bwd_stats, bwd_row_stats_here. */
inline void row_stats_w_sums(row_in in, ulong cols, uint lid, uint L, A2 K, W *S, W *Q,
                             A *amax)
{
    W s = 0, q = 0;
    A mx = 0;
    ulong i0 = 0;
    if (L == 1) {
        const ulong nv = cols / VW;
        WV sv = (WV)(0), qv = (WV)(0);
        AV mv = (AV)(0);
        for (ulong v = 0; v < nv; v++) {
            const WV d = IN_DEV_WV(in, v * VW, K, 1);
            sv += d;
            qv = fma(d, d, qv);
            mv = fmax(mv, IN_ABSMAXV(in, v * VW));
        }
        if (nv > 0) {
            s = WV_HSUM(sv);
            q = WV_HSUM(qv);
            mx = HMAX(mv);
        }
        i0 = nv * VW;
    }
    for (ulong i = i0 + lid; i < cols; i += L) {
        const W d = IN_DEV_W(in, i, K, 1);
        s += d;
        q = fma(d, d, q);
        mx = fmax(mx, IN_ABSMAX1(in, i));
    }
    *S = s;
    *Q = q;
    *amax = mx;
}

/* A row's statistics from its double sums around its shift K, unscaled (S of d = v - K, Q of
 * d^2, amax its largest magnitude: row_stats_w_sums; in double no float's square overflows):
 * where the variance overflows float nonetheless, first the scale sc the float statistics
 * take (row_stats: rescale_factor of the largest magnitude), the sums and the shift scaled
 * by it (exact, a power of two), so that the float K, m and xhat stay finite; then K.s0 the
 * float nearest the mean of v * sc - K.s1 (the residual's shift stays), m what is left of it,
 * r = 1 / sqrt(var + eps sc^2) rounded once and *rlo what that left; an RMS row (rms: K 0, so
 * Q is the sum of squares) its rstd alone (m 0). */
inline void row_stats_exact(W S, W Q, A amax, ulong cols, A2 *K, A *m, A *r, A *sc, A *rlo,
                            A eps, int rms)
{
    const W n = (W)cols, dm = rms ? (W)0 : S / n;
    *sc = 1;
    if (needs_rescale((A)(Q / n - dm * dm))) {
        *sc = rescale_factor(amax);
        S *= (W)*sc;
        Q *= (W)*sc * (W)*sc;
        *K *= *sc;
    }
    W var = Q / n;
    *m = 0;
    if (!rms) {
        const W ds = S / n, mean = (W)K->s0 + ds;
        var = fmax(var - ds * ds, (W)0);
        K->s0 = (A)mean;
        *m = (A)(mean - (W)K->s0);
    }
    const W rw = (W)1 / sqrt(var + (W)eps * (W)*sc * (W)*sc);
    *r = (A)rw;
    *rlo = (A)(rw - (W)*r);
}

/* A row's statistics in double, for the rows kernel's one item (CLNORM_KF_STATS_HERE, set
 * where norm_bwd_stats would otherwise recompute them): norm_bwd_stats' with no work-group to
 * add over, so the row comes into cache for the sums and dx passes after it instead of being
 * read by a kernel of its own. */
inline void bwd_row_stats_here(row_in in, ulong cols, A2 *K, A *m, A *r, A *sc, A *rlo, A eps,
                               int rms)
{
    W S, Q;
    A amax;
    *K = row_shift(in, cols, 1, rms);
    row_stats_w_sums(in, cols, 0, 1, *K, &S, &Q, &amax);
    row_stats_exact(S, Q, amax, cols, K, m, r, sc, rlo, eps, rms);
}

/* bwd_row_sums of a wide row in W: g (bwd_g_w), xhat from x unrounded with rw = r + rlo. With
 * one item (CPU devices) in vectors of double (as row_stats_w_sums and norm_bwd_rows' dx): element
 * by element, the backward of wide rows took 2-3.7x the float one's time on PoCL's CPU
 * device, in vectors 1.05-1.2x (bench/RESULTS.md, "The row kernels' backward of a large rstd
 * in double"). */
inline void bwd_row_sums_w(bwd_row bw, ulong b, ulong e, uint lid, uint L, A2 K, A m, W rw,
                           A sc, W *sum_g, W *sum_gx)
{
    W s1 = 0, s2 = 0;
    if (L == 1) {
        const ulong nv = (e - b) / VW;
        WV v1 = (WV)(0), v2 = (WV)(0);
        for (ulong v = 0; v < nv; v++) {
            const ulong i = b + v * VW;
            const WV g = bwd_g_wv(bw, i, LOADV(bw.dy + i));
            const WV xh = (IN_DEV_WV(bw.in, i, K, sc) - (WV)(m)) * (WV)(rw);
            v1 += g;
            v2 = fma(g, xh, v2);
        }
        if (nv > 0) {
            s1 = WV_HSUM(v1);
            s2 = WV_HSUM(v2);
        }
        b += nv * VW;
    }
    for (ulong i = b + lid; i < e; i += L) {
        const W g = bwd_g_w(bw, i, LOAD1(bw.dy + i));
        const W xh = (IN_DEV_W(bw.in, i, K, sc) - (W)m) * rw;
        s1 += g;
        s2 = fma(g, xh, s2);
    }
    *sum_g = s1;
    *sum_gx = s2;
}
#endif

/* Statistics of every row into stats: the backward pass without saved statistics (where
 * the rows kernel does not take them itself, CLNORM_KF_STATS_HERE). Where the device has
 * double, every row's in double (RMS rows: their rstd), whose parameter terms take xhat in
 * double from them (BWD_PXV), the same whatever gradients are asked for (so dx has the same
 * bits with or without dgamma); else as the forward computes them (no row is wide without
 * double). */
__kernel void norm_bwd_stats(IN_PTRS, __global A *stats, __local A *scratch,
                             __local A *scratch2, KS_PARAM)
{
    KS_BEGIN;
    IN_UNPACK
    KS_ROW_SCALARS;
    const uint lid = get_local_id(0);
    const uint L = get_local_size(0);
    const int rms = (flags & CLNORM_KF_RMS) != 0;
    for (ulong row = get_group_id(0); row < rows; row += get_num_groups(0)) {
        A2 K;
        A m = 0, r, sc, rlo = 0;
        const row_in in = make_row_in(IN_ARGS, row);
#if W_DOUBLE
        /* One pass of double sums (row_stats_exact), in place of the float statistics and a
         * double pass after them (which together had taken this kernel 2.5x its time at
         * 16384x256 on PoCL's CPU device; the double pass alone takes 0.9x the float
         * statistics' time). */
        W S, Q;
        A amax;
        K = row_shift(in, cols, 1, rms);
        row_stats_w_sums(in, cols, lid, L, K, &S, &Q, &amax);
        S = wg_sum_w(S, scratch, scratch2, lid, L);
        Q = wg_sum_w(Q, scratch, scratch2, lid, L);
        amax = wg_max(amax, scratch, lid, L);
        row_stats_exact(S, Q, amax, cols, &K, &m, &r, &sc, &rlo, eps, rms);
#else
        row_stats(in, cols, lid, L, scratch, rms, eps, &K, &m, &r, &sc);
#endif
        if (lid == 0) {
            __global A *st = stats + row * CLNORM_STATS_PER_ROW;
            st[0] = K.s0;
            st[1] = K.s1;
            st[2] = m;
            st[3] = r;
            st[4] = sc;
            st[5] = rlo;
        }
    }
}

/* Sums of g and g * xhat over the item's share of columns [b, e) of one row. */
inline void bwd_row_sums(bwd_row bw, ulong b, ulong e, uint lid, uint L, A2 K, A m, A r,
                         A sc, A *sum_g, A *sum_gx)
{
    const ulong nv = (e - b) / VW;
    A s1 = 0, c1 = 0, s2 = 0, c2 = 0;
    for (ulong v0 = lid; v0 < nv; v0 += (ulong)L * BLOCK_V) {
        const ulong vend = min(nv, v0 + (ulong)L * BLOCK_V);
        AV a1 = (AV)(0), a2 = (AV)(0);
        for (ulong v = v0; v < vend; v += L) {
            const ulong i = b + v * VW;
            const AV g = bwd_gv(bw, i, LOADV(bw.dy + i));
            const AV xh = (IN_DEVV(bw.in, i, K, sc) - m) * r;
            a1 += g;
            a2 = fma(g, xh, a2);
        }
        kahan_add(&s1, &c1, HSUM(a1));
        kahan_add(&s2, &c2, HSUM(a2));
    }
    A t1 = 0, t2 = 0;
    for (ulong i = b + nv * VW + lid; i < e; i += L) {
        const A g = bwd_g1(bw, i, LOAD1(bw.dy + i));
        const A xh = (IN_DEV1(bw.in, i, K, sc) - m) * r;
        t1 += g;
        t2 = fma(g, xh, t2);
    }
    kahan_add(&s1, &c1, t1);
    kahan_add(&s2, &c2, t2);
    *sum_g = s1;
    *sum_gx = s2;
}

/* The sum of a refining row's deviations (v - K) - m from its given mean (bwd_refines) over
 * the item's share of columns [b, e): a pass of its own, so that rows which keep their
 * statistics (all but data of a large mean) run the sums loop as before; such a row reads x
 * once more, from cache where the row fits. */
inline A bwd_row_dev_sum(row_in in, ulong b, ulong e, uint lid, uint L, A2 K, A m)
{
    const ulong nv = (e - b) / VW;
    A s = 0, c = 0;
    for (ulong v0 = lid; v0 < nv; v0 += (ulong)L * BLOCK_V) {
        const ulong vend = min(nv, v0 + (ulong)L * BLOCK_V);
        AV a = (AV)(0);
        for (ulong v = v0; v < vend; v += L)
            a += IN_DEVV(in, b + v * VW, K, 1) - m;
        kahan_add(&s, &c, HSUM(a));
    }
    A t = 0;
    for (ulong i = b + nv * VW + lid; i < e; i += L)
        t += IN_DEV1(in, i, K, 1) - m;
    kahan_add(&s, &c, t);
    return s;
}

/* Sums of g and g * xhat of every (row, chunk) into sums[(row * chunks + chunk) *
 * BWD_SUMS_PER_CHUNK + 0/1], what their rounding left at + 2/3, and a row that refines its
 * saved mean (bwd_refines) the sum of its deviations at + 4, its rest at + 5: the first step
 * when rows are cut into chunks (few long rows), for dx or, with saved statistics, for the
 * parameters' xhat. */
__kernel void norm_bwd_sums(BWD_IN_PTRS, __global const A *stats, __global A *sums,
                            __global const A *gm, __local A *scratch, __local A *scratch2,
                            KS_PARAM)
{
    KS_BEGIN;
    BWD_IN_UNPACK
    KS_UL(rows);
    KS_UL(cols);
    KS_UL(chunk_len);
    KS_UI(chunks);
    KS_UI(flags);
    const uint c = get_group_id(0);
    const uint lid = get_local_id(0);
    const uint L = get_local_size(0);
    const ulong b = (ulong)c * chunk_len;
    const ulong e = min(cols, b + chunk_len);
    BWD_GF_CACHE;
    for (ulong row = get_group_id(1); row < rows; row += get_num_groups(1)) {
        A2 K;
        A m, r, sc, rlo, fg, fgx;
        BWD_STATS(row, flags, &K, &m, &r, &sc, &rlo);
        const bwd_row bw = BWD_ROW_IN(row, flags);
        const int refine = bwd_refines(flags, m, r);
        if (refine)
            bwd_refine_shift(bw.in, cols, &K, &m);
        W sg, sgx, sd = refine ? bwd_row_dev_sum(bw.in, b, e, lid, L, K, m) : 0;
#if W_DOUBLE
        if (BWD_WIDE(r * sc, BWD_GF(row, flags), flags)) {
            bwd_row_sums_w(bw, b, e, lid, L, K, m, (W)r + (W)rlo, sc, &sg, &sgx);
        } else
#endif
        {
            bwd_row_sums(bw, b, e, lid, L, K, m, r, sc, &fg, &fgx);
            sg = fg;
            sgx = fgx;
        }
        sg = BWD_WG_SUM_W(sg); /* (no barrier under the branch: norm_bwd_rows says why) */
        sgx = BWD_WG_SUM_W(sgx);
        if (refine) /* (the same for every item: a barrier may lie under it) */
            sd = BWD_WG_SUM_W(sd);
        if (lid == 0) {
            __global A *s = sums + (row * chunks + c) * BWD_SUMS_PER_CHUNK;
            s[0] = (A)sg;
            s[1] = (A)sgx;
            s[2] = (A)(sg - (W)s[0]);
            s[3] = (A)(sgx - (W)s[1]);
            s[4] = refine ? (A)sd : 0;
            s[5] = refine ? (A)(sd - (W)s[4]) : 0;
        }
    }
}

/* The rows [*r0, *r1) of row block grp and the index of its partial (the first of them, when
 * the block holds several short samples: partial row / sample_rows for each row). */
inline void block_rows(ulong grp, ulong rows, ulong rpg, ulong sample_rows, ulong *r0,
                       ulong *r1, ulong *p0, int *per_sample)
{
    if (sample_rows >= rpg) { /* blocks of rpg rows inside a sample */
        const ulong bps = (sample_rows + rpg - 1) / rpg;
        const ulong s = grp / bps;
        *r0 = s * sample_rows + (grp % bps) * rpg;
        *r1 = min(min(*r0 + rpg, (s + 1) * sample_rows), rows);
        *p0 = grp;
        *per_sample = 0;
    } else { /* whole samples, rpg / sample_rows of them */
        const ulong spb = rpg / sample_rows;
        *r0 = grp * spb * sample_rows;
        *r1 = min(*r0 + spb * sample_rows, rows);
        *p0 = *r0 / sample_rows;
        *per_sample = 1;
    }
}

/*
 * The parameter partials (a block's S1 and S0 per column, the slices' sums, the parameter
 * pass's) are W, added with P_ADD (below): double where the device has it, else A with each
 * addition's rest kept. Each term dy * xhat is exact in double and the sums then lose
 * nothing that matters, where float32 partials of up to 256 rows, even Kahan-added across
 * the blocks, put dgamma and dbeta of LayerNorm's float32 backward 1.0-4.7x the bound 1e-5 +
 * 1e-5 |ref| away from torch's float64 on batches of 1024x768 to 16384x256 of N(0, 1) data
 * (torch's own float32 1.1-19x; bench/RESULTS.md, "The row backward's parameter partials in
 * double"). What stays is xhat's float32 rounding in each term. With one block
 * (CLNORM_KF_PARAMS_DIRECT) the rows kernel stores its partials as dgamma and dbeta itself.
 *
 * Without double, each partial also keeps what its float additions and products lost (C1,
 * C0: PART_WORDS words per column and block, the scratch sized for double either way,
 * CLNORM_W_SIZE; sum2_add below, and each product's fma rest), and the slices and the
 * parameter pass add the partials the same way (P_ADD), their rests alongside: a value is
 * S + C. Plain float32 partials of 256 rows, Kahan-added across the blocks, had dbeta at 7.1x
 * and dgamma at 2.1x the bound at 32768x256 (CLNORM_NO_FP64=1; bench/RESULTS.md,
 * "Parameter partials with their rests on devices without double"). */
/* PART_RESTS: W is float (no double on the device, float32 or half storage). */
#if !W_DOUBLE && !defined(CLNORM_F64)
#define PART_RESTS 1
#else
#define PART_RESTS 0
#endif
/* The partials' words per column and block (PART_WORDS: S1, S0, and with PART_RESTS their
 * rests C1, C0), the value of word j (S1 at j < cols, S0 after) of the block at p
 * (PART_VALUE: S + C), and the running sums of the slices and the parameter pass (P_ADD,
 * P_ADDV; PART_REST adds a partial's rest r to the running rest *c; P_VALUE). Where W is
 * double, plain sums, C staying 0 (float64 data: Kahan's w_add, as before). */
#if !PART_RESTS
#define PART_WORDS 2
#define PART_VALUE(p, j, cols) ((p)[j])
#define P_ADD w_add
#define P_ADDV w_addv
#define PART_REST(c, r) ((void)0)
#define P_VALUE(s, c) (s)
#else
/* A running sum (*s, *c) whose value is *s + *c: each addition's rounding error, exact by
 * Knuth's two-sum, goes into *c. Unlike kahan_add's remainder, which comes back only through
 * the next term and loses what lies below that term's last bit, *c can also take errors made
 * elsewhere (a product's fma rest, another sum's *c). Once the total is not finite, *c
 * stops. */
inline void sum2_add(A *s, A *c, A v)
{
    const A t = *s + v, bv = t - *s;
    *c += isfinite(t) ? (*s - (t - bv)) + (v - bv) : (A)0;
    *s = t;
}
inline void sum2_addv(AV *s, AV *c, AV v)
{
    const AV t = *s + v, bv = t - *s;
    *c += select((AV)0, (*s - (t - bv)) + (v - bv), isfinite(t));
    *s = t;
}
#define PART_WORDS 4
#define PART_VALUE(p, j, cols) ((p)[j] + (p)[(j) + 2 * (cols)])
#define P_ADD sum2_add
#define P_ADDV sum2_addv
#define PART_REST(c, r) (*(c) += (r))
#define P_VALUE(s, c) ((s) + (c))
#endif

/* The terms' xhat where dgamma is asked for (BWD_PX1, BWD_PXV), taken before dx's store:
 * dx may be x (in place). */
#define BWD_PX1_IF(i, xh) (want_dg ? BWD_PX1(i, xh) : (W)0)
#define BWD_PXV_IF(i, xh) (want_dg ? BWD_PXV(i, xh) : (WV)(0))

/* dx of element i and its share of the parameter partials (one element). */
#define BWD_ELEM(i)                                                                         \
    do {                                                                                    \
        const A dyv = LOAD1(bw.dy + (i));                                                   \
        const A xh = (IN_DEV1(bw.in, (i), K, sc) - m) * r;                                  \
        const W px = BWD_PX1_IF(i, xh);                                                     \
        if (bw.dx)                                                                          \
            STORE1(bwd_dx1(bw, (i), bwd_g1(bw, (i), dyv), xh, rs, mg, mgx), bw.dx + (i));   \
        BWD_ELEM_PARAMS(i, dyv, px);                                                        \
    } while (0)
/* ... the parameter partials' share alone (W; px the term's xhat in W) */
#if !PART_RESTS
#define BWD_ELEM_PARAMS(i, dyv, px)                                                         \
    do {                                                                                    \
        if (want_dg)                                                                        \
            pg[i] = first ? (W)(dyv) * (px) : fma((W)(dyv), (px), pg[i]);                   \
        if (want_db)                                                                        \
            pb[i] = first ? (W)(dyv) : (W)(dyv) + pb[i];                                    \
    } while (0)
#else /* with the two-sum remainders 2 cols on (PART_WORDS) */
#define BWD_ELEM_PARAMS(i, dyv, px)                                                         \
    do {                                                                                    \
        if (want_dg) {                                                                      \
            const A t = (dyv) * (px);                                                       \
            A s = first ? (A)0 : pg[i], c = first ? (A)0 : pg[(i) + 2 * cols];              \
            sum2_add(&s, &c, t);                                                            \
            c += isfinite(t) ? fma((dyv), (px), -t) : (A)0; /* the product's rest */        \
            pg[i] = s;                                                                      \
            pg[(i) + 2 * cols] = c;                                                         \
        }                                                                                   \
        if (want_db) {                                                                      \
            A s = first ? (A)0 : pb[i], c = first ? (A)0 : pb[(i) + 2 * cols];              \
            sum2_add(&s, &c, (dyv));                                                        \
            pb[i] = s;                                                                      \
            pb[(i) + 2 * cols] = c;                                                         \
        }                                                                                   \
    } while (0)
#endif

/* BWD_ELEM of a wide row: dx in W (bwd_g_w, bwd_dx_w), rounded once; the partials in W. */
#define BWD_ELEM_W(i)                                                                       \
    do {                                                                                    \
        const A dyv = LOAD1(bw.dy + (i));                                                   \
        const W xw = BWD_PX1((i), 0); /* (no float xhat) */                                 \
        STORE1(bwd_dx_w(bw, (i), bwd_g_w(bw, (i), dyv), xw, rsw, mgw, mgxw), bw.dx + (i));  \
        BWD_ELEM_PARAMS(i, dyv, xw);                                                        \
    } while (0)

/* dx of the VW elements at i from their dy and xhat, already loaded, and their share of the
 * parameter partials (norm_bwd_rows' two-vector loop on GPUs; its one-vector loop does the
 * same, with streaming stores and prefetches on CPU devices). */
#define BWD_VEC_PUT(i, dyv, xh, px)                                                         \
    do {                                                                                    \
        if (want_dx)                                                                        \
            STOREV(bwd_dxv(bw, (i), bwd_gv(bw, (i), (dyv)), (xh), rs, mg, mgx), bw.dx + (i)); \
        BWD_VEC_PUT_PARAMS(i, dyv, px);                                                     \
    } while (0)
/* ... the parameter partials' share alone (as BWD_ELEM_PARAMS; px the terms' xhat in WV) */
#if !PART_RESTS
#define BWD_VEC_PUT_PARAMS(i, dyv, px)                                                      \
    do {                                                                                    \
        if (want_dg) {                                                                      \
            const WV pd = TO_WV(dyv);                                                       \
            CAT(vstore, VW)(first ? pd * (px) : fma(pd, (px), CAT(vload, VW)(0, pg + (i))), \
                            0, pg + (i));                                                   \
        }                                                                                   \
        if (want_db) {                                                                      \
            const WV pd = TO_WV(dyv);                                                       \
            CAT(vstore, VW)(first ? pd : pd + CAT(vload, VW)(0, pb + (i)), 0, pb + (i));    \
        }                                                                                   \
    } while (0)
#else /* with the two-sum remainders, lane by lane as BWD_ELEM_PARAMS */
#define BWD_VEC_PUT_PARAMS(i, dyv, px)                                                      \
    do {                                                                                    \
        if (want_dg) {                                                                      \
            const AV t = (dyv) * (px);                                                      \
            AV s = first ? (AV)(0) : CAT(vload, VW)(0, pg + (i));                           \
            AV c = first ? (AV)(0) : CAT(vload, VW)(0, pg + (i) + 2 * cols);                \
            sum2_addv(&s, &c, t);                                                           \
            c += select((AV)0, fma((dyv), (px), -t), isfinite(t));                          \
            CAT(vstore, VW)(s, 0, pg + (i));                                                \
            CAT(vstore, VW)(c, 0, pg + (i) + 2 * cols);                                     \
        }                                                                                   \
        if (want_db) {                                                                      \
            AV s = first ? (AV)(0) : CAT(vload, VW)(0, pb + (i));                           \
            AV c = first ? (AV)(0) : CAT(vload, VW)(0, pb + (i) + 2 * cols);                \
            sum2_addv(&s, &c, (dyv));                                                       \
            CAT(vstore, VW)(s, 0, pb + (i));                                                \
            CAT(vstore, VW)(c, 0, pb + (i) + 2 * cols);                                     \
        }                                                                                   \
    } while (0)
#endif

/*
 * Row block grp = first_block + get_group_id(1), chunk c = get_group_id(0) (columns [b, e)):
 * for each row of the block, the sums (computed here when the row is one chunk, else merged in
 * chunk order from norm_bwd_sums), then dx and the partials of the chunk's columns in one
 * sweep. first_block is 0 unless the host launches some of the blocks only (src/latency.c).
 */
__kernel void norm_bwd_rows(BWD_PTRS, __global const A *stats, __global W *part,
                            __global const A *sums, __global const A *gm, __local A *scratch,
                            __local A *scratch2, KS_PARAM)
{
    KS_BEGIN;
    BWD_UNPACK
    KS_UL(rows);
    KS_UL(cols);
    KS_UL(rows_per_group);
    KS_UL(chunk_len);
    KS_UI(chunks);
    KS_UI(flags);
    KS_A(eps);
    KS_UL(first_block);
    const uint c = get_group_id(0);
    const ulong grp = first_block + get_group_id(1);
    const uint lid = get_local_id(0);
    const uint L = get_local_size(0);
    const ulong b = (ulong)c * chunk_len;
    const ulong e = min(cols, b + chunk_len);
    if (sample_rows == 0)
        return;
    ulong r0, r1, p0;
    int per_sample;
    block_rows(grp, rows, rows_per_group, sample_rows, &r0, &r1, &p0, &per_sample);
    /* S1 = sum dy * xhat serves dgamma and dscale, S0 = sum dy dbeta, dshift and dscale. */
    const int want_dx = (flags & CLNORM_KF_GRAD_X) != 0,
              want_dg = (flags & (CLNORM_KF_GRAD_GAMMA | CLNORM_KF_GRAD_SCALE)) != 0,
              want_db = (flags & (CLNORM_KF_GRAD_BETA | CLNORM_KF_GRAD_SHIFT |
                                  CLNORM_KF_GRAD_SCALE)) != 0,
              rms = (flags & CLNORM_KF_RMS) != 0,
              global_stats = (flags & CLNORM_KF_GLOBAL_STATS) != 0;
    const int direct = (flags & CLNORM_KF_PARAMS_DIRECT) != 0;
#if defined(PREFETCH_NEXT)
    const int ahead2 = cols * sizeof(T) >= 1024;
#endif
    BWD_GF_CACHE;
    for (ulong row = r0; row < r1; row++) {
        const ulong p = per_sample ? row / sample_rows : p0;
        /* The block's partial sums (with one block, direct, dgamma and dbeta: below). */
        __global W *pg = part + p * PART_WORDS * cols, *pb = pg + cols;
        A2 K;
        A m, r, sc, rlo;
        const bwd_row bw = BWD_ROW(row, flags);
#if W_DOUBLE
        if ((flags & CLNORM_KF_STATS_HERE) != 0) /* (one item, whole rows: row_norm.c) */
            bwd_row_stats_here(bw.in, cols, &K, &m, &r, &sc, &rlo, eps, rms);
        else
#endif
            BWD_STATS(row, flags, &K, &m, &r, &sc, &rlo);
        /* (the same for every item) */
        const int wide = BWD_WIDE(r * sc, BWD_GF(row, flags), flags);
        const int refine = bwd_refines(flags, m, r);
        if (refine)
            bwd_refine_shift(bw.in, cols, &K, &m);
        const A rs = r * sc; /* the true rstd */
        A mg = 0, mgx = 0; /* stay 0 with global statistics: dx = rstd * g */
        const W rw = (W)r + (W)rlo;
        W mgw = 0, mgxw = 0; /* a wide row's mean(g) and mean(g * xhat) */
        /* The row's sums: for dx, and where the row refines its saved mean for the
         * parameters' xhat too (with precomputed statistics neither: dx = rstd * g). */
        if ((want_dx || refine) && !global_stats) {
            if (chunks == 1) {
                /* The sums in W where the row is wide, else in A; either way added over the
                 * items in W, so that no barrier lies under a branch on the row's data: PoCL's
                 * work-group compiler replicates the code between barriers per path
                 * (group_backward_wg.cl). With one item (CPU devices) the float sums come back
                 * as they were. */
                W sg, sgx, sd = refine ? bwd_row_dev_sum(bw.in, 0, cols, lid, L, K, m) : 0;
#if W_DOUBLE
                if (wide) {
                    bwd_row_sums_w(bw, 0, cols, lid, L, K, m, rw, sc, &sg, &sgx);
                } else
#endif
                {
                    A fg, fgx;
                    bwd_row_sums(bw, 0, cols, lid, L, K, m, r, sc, &fg, &fgx);
                    sg = fg;
                    sgx = fgx;
                }
                sg = BWD_WG_SUM_W(sg);
                sgx = BWD_WG_SUM_W(sgx);
                if (refine) { /* (the same for every item: a barrier may lie under it) */
                    sd = BWD_WG_SUM_W(sd);
                    bwd_refine_sums(sd, sg, &sgx, &m, rw, cols);
                }
                mg = rms ? 0 : (A)sg / (A)cols;
                mgx = (A)sgx / (A)cols;
                mgw = sg / (W)cols;
                mgxw = sgx / (W)cols;
            } else if (wide) { /* the chunks' sums with what their rounding left, in W */
                W sg = 0, sgx = 0, sd = 0;
                for (uint k = 0; k < chunks; k++) {
                    __global const A *s = sums + (row * chunks + k) * BWD_SUMS_PER_CHUNK;
                    sg += (W)s[0] + (W)s[2];
                    sgx += (W)s[1] + (W)s[3];
                    sd += (W)s[4] + (W)s[5];
                }
                if (refine)
                    bwd_refine_sums(sd, sg, &sgx, &m, rw, cols);
                mgw = sg / (W)cols;
                mgxw = sgx / (W)cols;
            } else {
                A sg = 0, sgx = 0, sd = 0, c1 = 0, c2 = 0, c3 = 0;
                for (uint k = 0; k < chunks; k++) {
                    __global const A *s = sums + (row * chunks + k) * BWD_SUMS_PER_CHUNK;
                    kahan_add(&sg, &c1, s[0]);
                    kahan_add(&sgx, &c2, s[1]);
                    kahan_add(&sd, &c3, s[4]);
                }
                if (refine) {
                    W sgxw = sgx;
                    bwd_refine_sums(sd, sg, &sgxw, &m, rw, cols);
                    sgx = (A)sgxw;
                }
                mg = rms ? 0 : sg / (A)cols;
                mgx = sgx / (A)cols;
            }
        }
        /* the first row of a partial initializes it */
        const int first = per_sample ? row % sample_rows == 0 : row == r0;
#if W_DOUBLE
        if (wide) { /* each element as the vector loops give them to the items: a column's
                     * partial stays with its item from row to row (one item: in vectors) */
            const W rsw = rw * (W)sc;
            const ulong nw = (e - b) / VW;
            if (L == 1)
                for (ulong v = 0; v < nw; v++) {
                    const ulong i = b + v * VW;
                    const AV dyv = LOADV(bw.dy + i);
                    const WV xw = BWD_PXV(i, 0); /* (no float xhat) */
                    STOREV(bwd_dx_wv(bw, i, bwd_g_wv(bw, i, dyv), xw, rsw, mgw, mgxw),
                           bw.dx + i);
                    BWD_VEC_PUT_PARAMS(i, dyv, xw);
                }
            else
                for (ulong v = lid; v < nw; v += L)
                    for (uint k = 0; k < VW; k++)
                        BWD_ELEM_W(b + v * VW + k);
            for (ulong i = b + nw * VW + lid; i < e; i += L)
                BWD_ELEM_W(i);
            continue;
        }
#endif
        ulong i0 = b;
#if defined(STREAM_STORE)
        /* One item per group (CPU): peel to the alignment the streaming stores need. With one
         * item the column-to-item mapping may move from row to row without any race. */
        const int stream = L == 1 && want_dx;
        if (stream)
            for (; i0 < e && ((ulong)(bw.dx + i0) % (VW * sizeof(T))) != 0; i0++)
                BWD_ELEM(i0);
#endif
        const ulong nv = (e - i0) / VW;
        ulong v = lid;
        /* Work-groups of several items (GPUs): two of an item's vectors' dy and x loaded
         * before the first's stores. dx may be x or dy, so a compiler keeps each load behind
         * the store before it, one vector in flight per item; these are the item's own
         * elements, read before it writes them, with the same operations each: the same
         * bits. (One item, CPU devices: the loop below, with its prefetches.) */
        if (L > 1)
            for (; v + L < nv; v += 2 * (ulong)L) {
                const ulong ia = i0 + v * VW, ib = i0 + (v + L) * VW;
                const AV dya = LOADV(bw.dy + ia), dyb = LOADV(bw.dy + ib);
                const AV xha = (IN_DEVV(bw.in, ia, K, sc) - m) * r;
                const AV xhb = (IN_DEVV(bw.in, ib, K, sc) - m) * r;
                const WV pxa = BWD_PXV_IF(ia, xha), pxb = BWD_PXV_IF(ib, xhb);
                BWD_VEC_PUT(ia, dya, xha, pxa);
                BWD_VEC_PUT(ib, dyb, xhb, pxb);
            }
        for (; v < nv; v += L) {
            const ulong i = i0 + v * VW;
            const AV dyv = LOADV(bw.dy + i);
            const AV xh = (IN_DEVV(bw.in, i, K, sc) - m) * r;
            const WV px = BWD_PXV_IF(i, xh);
            if (want_dx) {
                const AV d = bwd_dxv(bw, i, bwd_gv(bw, i, dyv), xh, rs, mg, mgx);
#if defined(STREAM_STORE)
                if (stream)
                    storev_stream(d, bw.dx + i);
                else
#endif
                    STOREV(d, bw.dx + i);
            }
#if defined(PREFETCH_NEXT)
            /* One item per group (CPU): while this row is computed from L1, fetch the same
             * columns of the block's next row into L1, and of the row after it into L2, so
             * that memory stays busy while the next row's sums run from L1 (the forward's
             * seg_apply_stream does the same). The second prefetch only where a row holds at
             * least 1 KiB: rows of 64 and 128 float columns were 4-10% slower with it, rows of
             * 768 to 12288 columns 6-22% faster (bench/RESULTS.md). */
            if (L == 1 && row + 1 < r1) {
                __builtin_prefetch(bw.in.x + i + x_stride);
                __builtin_prefetch(bw.dy + i + dy_stride);
                if (ahead2 && row + 2 < r1) {
                    PREFETCH_L2(bw.in.x + i + 2 * x_stride);
                    PREFETCH_L2(bw.dy + i + 2 * dy_stride);
                }
            }
#endif
            BWD_VEC_PUT_PARAMS(i, dyv, px);
        }
        for (ulong i = i0 + nv * VW + lid; i < e; i += L)
            BWD_ELEM(i);
    }
    /* One block (direct): its partials are dgamma and dbeta, each item storing the columns
     * it summed (vectors lid, lid + L, ... and the tail, as every loop above takes them on
     * GPUs; one item, CPU devices, owns them all), rounded once. */
    if (direct) {
        __global const W *pg = part + p0 * PART_WORDS * cols, *pb = pg + cols;
        const ulong nv = (e - b) / VW;
        for (ulong v = lid; v < nv; v += L)
            for (uint k = 0; k < VW; k++) {
                const ulong j = b + v * VW + k;
                if (want_dg)
                    dgamma[dgamma_off + j] = (A)PART_VALUE(pg, j, cols);
                if (want_db)
                    dbeta[dbeta_off + j] = (A)PART_VALUE(pb, j, cols);
            }
        for (ulong j = b + nv * VW + lid; j < e; j += L) {
            if (want_dg)
                dgamma[dgamma_off + j] = (A)PART_VALUE(pg, j, cols);
            if (want_db)
                dbeta[dbeta_off + j] = (A)PART_VALUE(pb, j, cols);
        }
    }
}

/* Partial rows per sample (block_rows): one per block inside a sample, or one when blocks
 * hold whole samples; 0 in an empty batch. */
inline ulong partials_per_sample(ulong sample_rows, ulong rows_per_group)
{
    return sample_rows == 0 ? 0
           : sample_rows >= rows_per_group
               ? (sample_rows + rows_per_group - 1) / rows_per_group
               : 1;
}

/* Whether the partials are added in slices first (norm_bwd_slices), as the host decides
 * (row_norm.c, bwd_slices): more of them per column than CLNORM_PARAM_SLICED_MIN. */
inline int params_sliced(ulong samples, ulong per)
{
    return samples * per > CLNORM_PARAM_SLICED_MIN;
}

/*
 * Slice q of column j: the sums of S1 and S0 (P_ADD, with their rests) over at most
 * CLNORM_PARAM_SLICE partials of one sample, in block order, into slices[q][j] and
 * slices[q][cols + j] (the rests, PART_RESTS, 2 cols on: the partials' layout). Many blocks then
 * cost the parameter pass a few slice sums per column instead of a long dependent chain, and
 * a GPU gets (columns x slices) items rather than one per column.
 */
__kernel void norm_bwd_slices(__global const W *part, __global W *slices, KS_PARAM)
{
    KS_BEGIN;
    KS_UL(sample_rows);
    KS_UL(samples);
    KS_UL(rows_per_group);
    KS_UL(cols);
    KS_UI(flags);
    const ulong j = get_global_id(0), q = get_global_id(1);
    const ulong per = partials_per_sample(sample_rows, rows_per_group);
    if (j >= cols || per == 0)
        return;
    const ulong sps = (per + CLNORM_PARAM_SLICE - 1) / CLNORM_PARAM_SLICE;
    const ulong s = q / sps;
    const ulong k0 = s * per + (q % sps) * CLNORM_PARAM_SLICE;
    const ulong k1 = min(k0 + CLNORM_PARAM_SLICE, (s + 1) * per);
    const int s1_read = (flags & (CLNORM_KF_GRAD_GAMMA | CLNORM_KF_GRAD_SCALE)) != 0,
              s0_read = (flags & (CLNORM_KF_GRAD_BETA | CLNORM_KF_GRAD_SHIFT |
                                  CLNORM_KF_GRAD_SCALE)) != 0;
    W s1 = 0, c1 = 0, s0 = 0, c0 = 0;
    for (ulong k = k0; k < k1; k++) {
        __global const W *pk = part + k * PART_WORDS * cols;
        if (s1_read) {
            P_ADD(&s1, &c1, pk[j]);
            PART_REST(&c1, pk[j + 2 * cols]);
        }
        if (s0_read) {
            P_ADD(&s0, &c0, pk[cols + j]);
            PART_REST(&c0, pk[cols + j + 2 * cols]);
        }
    }
    __global W *sq = slices + q * PART_WORDS * cols;
    sq[j] = s1;
    sq[cols + j] = s0;
#if PART_RESTS
    sq[j + 2 * cols] = c1;
    sq[cols + j + 2 * cols] = c0;
#endif
}

/*
 * Column j of the parameter gradients: per sample, its partials S1 and S0 (or their slice
 * sums) added in order (P_ADD: in double, or float with their rests), then dscale and dshift of
 * the sample, and dgamma and dbeta accumulated over the samples in sample order. A fixed
 * order: the same bits run after run.
 *
 * PARAM_COLUMNS is written once for a type V of N columns (A and 1: one column per call; on
 * CPU devices (CLNORM_PARAMS_VEC) also AV and VW, VW neighbouring columns per work-item in
 * vector lanes: PoCL's own vectorization of the one-column form ran four lanes with the
 * Kahan chains exposed, about 10 ns per column), S its sums' type (W or WV), TO_S and TO_V
 * the conversions. The operations per column are the same in both forms, so the bits are too.
 */
#define PARAM_COLUMNS(NAME, V, S, N, ADD, TO_S, TO_V)                                       \
    inline void NAME(ulong j, __global const P *gamma, ulong gamma_off,                     \
                     __global const P *beta, ulong beta_off, __global P *dgamma,            \
                     ulong dgamma_off, __global P *dbeta, ulong dbeta_off,                  \
                     __global const P *scale, ulong scale_off, ulong scale_stride,          \
                     __global P *dscale, ulong dscale_off, ulong dscale_stride,             \
                     __global P *dshift, ulong dshift_off, ulong dshift_stride,             \
                     ulong samples, ulong per, __global const W *src, ulong cols,          \
                     uint flags)                                                            \
    {                                                                                       \
        const int s1_read = (flags & (CLNORM_KF_GRAD_GAMMA | CLNORM_KF_GRAD_SCALE)) != 0,    \
                  s0_read = (flags & (CLNORM_KF_GRAD_BETA | CLNORM_KF_GRAD_SHIFT |          \
                                      CLNORM_KF_GRAD_SCALE)) != 0;                          \
        const V gj = (flags & CLNORM_KF_GAMMA) ? PLOAD_##N(gamma + gamma_off + j) : (V)1;   \
        const V bj = (flags & CLNORM_KF_BETA) ? PLOAD_##N(beta + beta_off + j) : (V)0;      \
        S sg = 0, cg = 0, sb = 0, cb = 0;                                                   \
        for (ulong s = 0; s < samples; s++) {                                               \
            S s1 = 0, c1 = 0, s0 = 0, c0 = 0;                                               \
            for (ulong k = s * per; k < (s + 1) * per; k++) {                               \
                __global const W *pk = src + k * PART_WORDS * cols + j;                     \
                if (s1_read) {                                                              \
                    ADD(&s1, &c1, PLOAD_##N(pk));                                           \
                    PART_REST(&c1, PLOAD_##N(pk + 2 * cols));                               \
                }                                                                           \
                if (s0_read) {                                                              \
                    ADD(&s0, &c0, PLOAD_##N(pk + cols));                                    \
                    PART_REST(&c0, PLOAD_##N(pk + 3 * cols));                               \
                }                                                                           \
            }                                                                               \
            s1 = P_VALUE(s1, c1);                                                           \
            s0 = P_VALUE(s0, c0);                                                           \
            if ((flags & CLNORM_KF_GRAD_SCALE) != 0)                                        \
                PSTORE_##N(TO_V(TO_S(gj) * s1 + TO_S(bj) * s0),                             \
                           dscale + dscale_off + s * dscale_stride + j);                    \
            if ((flags & CLNORM_KF_GRAD_SHIFT) != 0)                                        \
                PSTORE_##N(TO_V(s0), dshift + dshift_off + s * dshift_stride + j);          \
            /* dz = dy * (1 + scale): (1 + scale) S1 and (1 + scale) S0 */                  \
            const V f = (flags & CLNORM_KF_SCALE)                                           \
                            ? (V)1 + PLOAD_##N(scale + scale_off + s * scale_stride + j)    \
                            : (V)1;                                                         \
            ADD(&sg, &cg, s1 * TO_S(f));                                                    \
            ADD(&sb, &cb, s0 * TO_S(f));                                                    \
        }                                                                                   \
        if ((flags & CLNORM_KF_GRAD_GAMMA) != 0)                                            \
            PSTORE_##N(TO_V(P_VALUE(sg, cg)), dgamma + dgamma_off + j);                     \
        if ((flags & CLNORM_KF_GRAD_BETA) != 0)                                             \
            PSTORE_##N(TO_V(P_VALUE(sb, cb)), dbeta + dbeta_off + j);                       \
    }

#define PLOAD_1(p) (*(p))
#define PSTORE_1(v, p) (*(p) = (v))
#define W_OF1(v) ((W)(v))
#define A_OF1(v) ((A)(v))
PARAM_COLUMNS(param_column, A, W, 1, P_ADD, W_OF1, A_OF1)

#if defined(CLNORM_PARAMS_VEC)
#define PLOAD_VW(p) CAT(vload, VW)(0, (p))
#define PSTORE_VW(v, p) CAT(vstore, VW)((v), 0, (p))
PARAM_COLUMNS(param_columns_v, AV, WV, VW, P_ADDV, TO_WV, FROM_WV)
#endif

/* Work-item i takes columns [i * PARAM_W, (i + 1) * PARAM_W): in lanes where all of them are
 * there, else one by one (the row's tail). */
#if defined(CLNORM_PARAMS_VEC)
#define PARAM_W VW
#else
#define PARAM_W 1
#endif

__kernel void norm_bwd_params(__global const P *gamma, __global const P *beta,
                              __global P *dgamma, __global P *dbeta, __global const P *scale,
                              __global P *dscale, __global P *dshift, __global const W *part,
                              __global const W *slices, KS_PARAM)
{
    KS_BEGIN;
    KS_TENSOR(gamma);
    KS_TENSOR(beta);
    KS_TENSOR(dgamma);
    KS_TENSOR(dbeta);
    KS_TENSOR(scale);
    KS_TENSOR(dscale);
    KS_TENSOR(dshift);
    KS_UL(sample_rows);
    KS_UL(samples);
    KS_UL(rows_per_group);
    KS_UL(cols);
    KS_UI(flags);
    const ulong j0 = get_global_id(0) * PARAM_W;
    if (j0 >= cols)
        return;
    /* partial rows per sample, or their slices; none in an empty batch, whose gradients are
     * zeros */
    const ulong np = partials_per_sample(sample_rows, rows_per_group);
    const int sliced = params_sliced(samples, np);
    const ulong per = sliced ? (np + CLNORM_PARAM_SLICE - 1) / CLNORM_PARAM_SLICE : np;
    __global const W *src = sliced ? slices : part;
#if defined(CLNORM_PARAMS_VEC)
    if (j0 + VW <= cols) {
        param_columns_v(j0, gamma, gamma_off, beta, beta_off, dgamma, dgamma_off, dbeta,
                        dbeta_off, scale, scale_off, scale_stride, dscale, dscale_off,
                        dscale_stride, dshift, dshift_off, dshift_stride, samples, per, src,
                        cols, flags);
        return;
    }
#endif
    for (ulong j = j0; j < min(cols, j0 + PARAM_W); j++)
        param_column(j, gamma, gamma_off, beta, beta_off, dgamma, dgamma_off, dbeta, dbeta_off,
                     scale, scale_off, scale_stride, dscale, dscale_off, dscale_stride, dshift,
                     dshift_off, dshift_stride, samples, per, src, cols, flags);
}
