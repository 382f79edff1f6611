/*
 * row_stats.cl - a row's statistics and its apply, through the operation's hooks (row_in,
 * IN_DEVV/IN_DEV1, IN_ABSMAXV, out_applyv/out_apply1 of op_*.cl), for the L items of a
 * work-group (L = 1: one item does it all). Items take vectors lid, lid + L, lid + 2L, ...
 * of the segment [b, e), so neighbouring items touch neighbouring memory (coalesced on GPUs;
 * with L == 1 it is a plain vector loop); the tail after the last whole vector goes element
 * by element, also strided by L.
 */

/* rstd from var and eps: rsqrt, unless the operation says otherwise (op_group_norm.cl). */
#ifndef ROW_STATS_RSTD
#define ROW_STATS_RSTD(var, eps) rsqrt((var) + (eps))
#endif

/* Sum of ((v * sc - K) - m)^2 over [b, e); with K = m = 0 and sc = 1 the sum of squares. */
inline A seg_sum_sq(row_in in, ulong b, ulong e, uint lid, uint L, A2 K, A m, A sc)
{
    const ulong nv = (e - b) / VW;
    A s = 0, c = 0;
    for (ulong v0 = lid; v0 < nv; v0 += (ulong)L * BLOCK_V) {
        const ulong vend = min(nv, v0 + (ulong)L * BLOCK_V);
        AV a0 = (AV)(0), a1 = (AV)(0), a2 = (AV)(0), a3 = (AV)(0);
        ulong v = v0;
        for (; v + 3 * (ulong)L < vend; v += 4 * (ulong)L) {
            const AV d0 = IN_DEVV(in, b + v * VW, K, sc) - m;
            const AV d1 = IN_DEVV(in, b + (v + L) * VW, K, sc) - m;
            const AV d2 = IN_DEVV(in, b + (v + 2 * (ulong)L) * VW, K, sc) - m;
            const AV d3 = IN_DEVV(in, b + (v + 3 * (ulong)L) * VW, K, sc) - m;
            a0 = fma(d0, d0, a0);
            a1 = fma(d1, d1, a1);
            a2 = fma(d2, d2, a2);
            a3 = fma(d3, d3, a3);
        }
        for (; v < vend; v += L) {
            const AV d = IN_DEVV(in, b + v * VW, K, sc) - m;
            a0 = fma(d, d, a0);
        }
        kahan_add(&s, &c, HSUM((a0 + a1) + (a2 + a3)));
    }
    A t = 0;
    for (ulong i = b + nv * VW + lid; i < e; i += L) {
        const A d = IN_DEV1(in, i, K, sc) - m;
        t = fma(d, d, t);
    }
    kahan_add(&s, &c, t);
    return s;
}

/* Largest magnitude of the inputs over [b, e): the rescaled path's scale. */
inline A seg_absmax(row_in in, ulong b, ulong e, uint lid, uint L)
{
    const ulong nv = (e - b) / VW;
    AV a = (AV)(0);
    for (ulong v = lid; v < nv; v += L)
        a = fmax(a, IN_ABSMAXV(in, b + v * VW));
    A t = HMAX(a);
    for (ulong i = b + nv * VW + lid; i < e; i += L)
        t = fmax(t, IN_ABSMAX1(in, i));
    return t;
}

/*
 * The moments of the item's share of [b, e): its element count n, the sum S of its deviations
 * v * sc - K (Kahan-compensated over blocks) and M2, the sum of squared deviations from the
 * share's own mean. Each block of BLOCK_V vectors is read from memory once, then again from
 * the L1 cache for its own two-pass M2 around its own mean, and the blocks are merged in order
 * with Chan et al.'s update. So a row is read from memory once for its statistics (not twice:
 * its mean, then its squares), with the accuracy of a two-pass sum inside every block. *amax
 * gets the largest input magnitude, when amax is not 0.
 */
inline void seg_moments(row_in in, ulong b, ulong e, uint lid, uint L, A2 K, A sc, A *n_out,
                        A *S_out, A *M2_out, A *amax)
{
    const ulong nv = (e - b) / VW;
    A n = 0, S = 0, cs = 0, M2 = 0, cm = 0;
    AV mx = (AV)(0);
    for (ulong v0 = lid; v0 < nv; v0 += (ulong)L * BLOCK_V) {
        const ulong vend = min(nv, v0 + (ulong)L * BLOCK_V);
        /* Four independent accumulators: one would chain every add on the previous one's
         * latency (4 cycles on x86), leaving a row that sits in L1 compute-bound. */
        AV a0 = (AV)(0), a1 = (AV)(0), a2 = (AV)(0), a3 = (AV)(0);
        ulong v = v0;
        /* The largest magnitude only where it is asked for: PoCL keeps this function out of
         * line, so an unused maximum is not dropped, and its NaN-aware fmax (compare, mask,
         * blend per vector) made LayerNorm's row kernel 1.3x RMSNorm's time on PoCL. */
        if (amax) {
            for (; v + 3 * (ulong)L < vend; v += 4 * (ulong)L) {
                a0 += IN_DEVV(in, b + v * VW, K, sc);
                a1 += IN_DEVV(in, b + (v + L) * VW, K, sc);
                a2 += IN_DEVV(in, b + (v + 2 * (ulong)L) * VW, K, sc);
                a3 += IN_DEVV(in, b + (v + 3 * (ulong)L) * VW, K, sc);
                mx = fmax(fmax(mx, IN_ABSMAXV(in, b + v * VW)),
                          fmax(IN_ABSMAXV(in, b + (v + L) * VW),
                               IN_ABSMAXV(in, b + (v + 2 * (ulong)L) * VW)));
                mx = fmax(mx, IN_ABSMAXV(in, b + (v + 3 * (ulong)L) * VW));
            }
            for (; v < vend; v += L) {
                a0 += IN_DEVV(in, b + v * VW, K, sc);
                mx = fmax(mx, IN_ABSMAXV(in, b + v * VW));
            }
        } else {
            for (; v + 3 * (ulong)L < vend; v += 4 * (ulong)L) {
                a0 += IN_DEVV(in, b + v * VW, K, sc);
                a1 += IN_DEVV(in, b + (v + L) * VW, K, sc);
                a2 += IN_DEVV(in, b + (v + 2 * (ulong)L) * VW, K, sc);
                a3 += IN_DEVV(in, b + (v + 3 * (ulong)L) * VW, K, sc);
            }
            for (; v < vend; v += L)
                a0 += IN_DEVV(in, b + v * VW, K, sc);
        }
        const A nb = (A)(((vend - v0) + L - 1) / L * VW);
        const A Sb = HSUM((a0 + a1) + (a2 + a3));
        const A mb = Sb / nb;
        AV q0 = (AV)(0), q1 = (AV)(0);
        for (v = v0; v + (ulong)L < vend; v += 2 * (ulong)L) {
            const AV d0 = IN_DEVV(in, b + v * VW, K, sc) - mb;
            const AV d1 = IN_DEVV(in, b + (v + L) * VW, K, sc) - mb;
            q0 = fma(d0, d0, q0);
            q1 = fma(d1, d1, q1);
        }
        for (; v < vend; v += L) {
            const AV d = IN_DEVV(in, b + v * VW, K, sc) - mb;
            q0 = fma(d, d, q0);
        }
        A M2b = HSUM(q0 + q1);
        if (n > 0) { /* Chan: the block's mean against the mean so far */
            const A delta = mb - S / n;
            M2b = fma(delta * delta, n * (nb / (n + nb)), M2b);
        }
        kahan_add(&M2, &cm, M2b);
        kahan_add(&S, &cs, Sb);
        n += nb;
    }
    /* The tail after the last whole vector, one element per item, as one more block. */
    A nt = 0, St = 0, tm = HMAX(mx);
    for (ulong i = b + nv * VW + lid; i < e; i += L) {
        St += IN_DEV1(in, i, K, sc);
        if (amax)
            tm = fmax(tm, IN_ABSMAX1(in, i));
        nt += 1;
    }
    if (nt > 0) {
        const A mt = St / nt;
        A M2t = 0;
        for (ulong i = b + nv * VW + lid; i < e; i += L) {
            const A d = IN_DEV1(in, i, K, sc) - mt;
            M2t = fma(d, d, M2t);
        }
        if (n > 0) {
            const A delta = mt - S / n;
            M2t = fma(delta * delta, n * (nt / (n + nt)), M2t);
        }
        kahan_add(&M2, &cm, M2t);
        kahan_add(&S, &cs, St);
        n += nt;
    }
    *n_out = n;
    *S_out = S;
    *M2_out = M2;
    if (amax)
        *amax = tm;
}

/* An item's term of the group's sum of squared deviations from the group's mean m: its own
 * M2 (over n elements, sum S) plus n (S / n - m)^2; with one item, its M2 as it is. */
inline A m2_term(A n, A S, A M2, A m, uint L)
{
    if (L == 1)
        return M2;
    const A d = n > 0 ? S / n - m : 0;
    return fma(d * d, n, M2);
}

/* The L items' moments merged: the mean of the deviations over [b, e) into *m, and the sum
 * of squared deviations from it returned. Every item of the group must call it. */
inline A group_m2(A n, A S, A M2, ulong count, __local A *scratch, uint lid, uint L, A *m)
{
    *m = wg_sum(S, scratch, lid, L) / (A)count;
    return wg_sum(m2_term(n, S, M2, *m, L), scratch, lid, L);
}

/* Statistics of columns [0, cols) at scale sc: the shift K, the mean m of the deviations and
 * their variance. RMSNorm has neither shift nor mean: the mean of the squares. */
inline A row_var(row_in in, ulong cols, uint lid, uint L, __local A *scratch, int rms, A sc,
                 A2 *K, A *m)
{
    *K = row_shift(in, cols, sc, rms);
    A n = 0, S = 0, M2;
    if (rms)
        M2 = seg_sum_sq(in, 0, cols, lid, L, *K, 0, sc);
    else
        seg_moments(in, 0, cols, lid, L, *K, sc, &n, &S, &M2, 0);
    /* LayerNorm's two reductions (the mean, then the squares about it) or RMSNorm's one as
     * a loop, not a branch around barriers (row_stats says why). */
    A mean = 0, red = 0;
    for (int k = 0; k < (rms ? 1 : 2); k++) {
        const A v = rms ? M2 : k == 0 ? S : m2_term(n, S, M2, mean, L);
        red = wg_sum(v, scratch, lid, L);
        if (k == 0)
            mean = red / (A)cols;
    }
    *m = rms ? (A)0 : mean;
    return red / (A)cols;
}

/*
 * A whole row's statistics for the L items of a group (every item must call it: it holds
 * barriers when L > 1): (K, m, r, sc) with xhat = ((v * sc - K) - m) * r. When the squares
 * overflow although the row is finite, the row is redone scaled so that its largest
 * magnitude lies in [1, 2); eps is scaled with it (sc^2 eps), so r * sc is the true rstd.
 * The redo is a second pass of a loop, not a branch holding a second row_var: PoCL's
 * work-group compiler copies the code between barriers for each path through a branch that
 * holds barriers. With the branch, a cold `clnorm run` on the workgroup strategy (64 items,
 * PoCL's "loops" method) took 9.2 s, as a loop 2.5 s; `clnorm grad` (norm_bwd_stats) 11.9 s
 * and 4.6 s; the same bits (bench/RESULTS.md). The exit is the same for every item of the
 * group (var comes from wg_sum).
 */
inline void row_stats(row_in in, ulong cols, uint lid, uint L, __local A *scratch, int rms,
                      A eps, A2 *K, A *m, A *r, A *sc)
{
    *sc = 1;
    A var;
    for (int pass = 0;; pass++) {
        var = row_var(in, cols, lid, L, scratch, rms, *sc, K, m);
        if (pass == 1 || !needs_rescale(var))
            break;
        *sc = rescale_factor(wg_max(seg_absmax(in, 0, cols, lid, L), scratch, lid, L));
    }
    *r = ROW_STATS_RSTD(var, eps * *sc * *sc);
}

/* What the row kernels prefetch of the next row while applying this one (CPU devices): into
 * L1 where this row and the next fit its half (x, and the residual, at most 8 KiB a row),
 * else, where the op asks for it (OP_ROW_PREFETCH_L2), into L2 only, which leaves this row in
 * L1 for its passes. The row after the next goes into L2 in both cases (seg_apply_stream). Measured on PoCL (AMD EPYC, bench/RESULTS.md): L2 prefetches took the
 * LayerNorm forward at 4096 and 12288 columns from 0.71-0.86 to 0.83-0.98 of the copy but
 * slowed it at 768 and 1024 columns by about 10%. */
#define PREFETCH_NONE 0
#define PREFETCH_TO_L1 1
#define PREFETCH_TO_L2 2
#if defined(CLNORM_RESIDUAL)
#define ROW_COL_BYTES (sizeof(T) + sizeof(R))
#else
#define ROW_COL_BYTES sizeof(T)
#endif
inline int row_prefetch_hint(ulong cols)
{
    return OP_ROW_PREFETCH_L2 && cols * ROW_COL_BYTES > 8192 ? PREFETCH_TO_L2 : PREFETCH_TO_L1;
}
/* The line at p of the next row, into L1 or L2 as `prefetch` says, and the same column of the
 * row after it (`stride` elements on) into L2. */
#define PREFETCH_NEXT_ROWS(p, stride, prefetch)                                             \
    do {                                                                                    \
        if ((prefetch) == PREFETCH_TO_L1)                                                   \
            __builtin_prefetch(p);                                                          \
        else                                                                                \
            PREFETCH_L2(p);                                                                 \
        PREFETCH_L2((p) + (stride));                                                        \
    } while (0)

#if defined(STREAM_STORE)
#define SUM_NONE 0
#define SUM_PLAIN 1
#define SUM_STREAM 2
/* The vector part of seg_apply with streaming stores, one work-item: columns from i (y + i
 * aligned) while a whole vector remains; returns where it stopped. sum_mode says whether and
 * how the sum is written. */
inline ulong seg_apply_stream(row_out out, row_in in, ulong i, ulong e, A2 K, A m, A r, A sc,
                              row_in nxt, int prefetch, const int sum_mode)
{
    for (; i + VW <= e; i += VW) {
        const AV d = IN_DEVV(in, i, K, sc);
        if (sum_mode != SUM_NONE)
            out_sumv_stream(out, in, i, sum_mode == SUM_STREAM);
        storev_stream(out_yv(out, i, d, m, r), out.y + i);
#if defined(PREFETCH_NEXT)
        /* While this row is computed from cache, fetch the same columns of the next row the
         * work-item (or the next work-item of the group, run by the same thread) will read,
         * so memory is busy during the compute too: into L1 where both rows fit it, else into
         * L2 only (row_prefetch_hint). Both also fetch the row after the next into L2 (rows
         * are a constant stride apart), so memory stays busy while the next row's statistics
         * are computed: 5-14% on rows of 768-1152 columns; on rows of 4096 and 8192 the
         * fused adds 10-19%, at 12288 and in the plain norm within noise (bench/RESULTS.md).
         * A prefetch never faults, so the last rows' look past the end is harmless. */
        if (prefetch != PREFETCH_NONE) {
            PREFETCH_NEXT_ROWS(nxt.x + i, nxt.x - in.x, prefetch);
#if defined(CLNORM_RESIDUAL)
            PREFETCH_NEXT_ROWS(nxt.r + i, nxt.r - in.r, prefetch);
#endif
        }
#endif
    }
    return i;
}
#endif

/* Applies a row's statistics to columns [b, e). With `prefetch` (PREFETCH_TO_L1 or _L2), the
 * same columns of the row `nxt` are prefetched while this one computes (PoCL CPU devices). */
inline void seg_apply(row_out out, row_in in, ulong b, ulong e, uint lid, uint L, A2 K, A m,
                      A r, A sc, row_in nxt, int prefetch)
{
#if defined(STREAM_STORE)
    if (L == 1) {
        ulong i = b;
        for (; i < e && ((ulong)(out.y + i) % (VW * sizeof(T))) != 0; i++)
            out_apply1(out, in, i, K, m, r, sc);
        /* y + i is aligned from here on; the sum's phase is fixed too (i steps by VW), so
         * whether the sum can stream is decided once per row. */
#if defined(CLNORM_RESIDUAL)
#if defined(CLNORM_R_F16)
        const int sum_stream = 0; /* see out_sumv_stream */
#else
        const int sum_stream = ((ulong)(out.s + i) % (VW * sizeof(R))) == 0;
#endif
        if (out.s == 0)
            i = seg_apply_stream(out, in, i, e, K, m, r, sc, nxt, prefetch, SUM_NONE);
        else if (sum_stream)
            i = seg_apply_stream(out, in, i, e, K, m, r, sc, nxt, prefetch, SUM_STREAM);
        else
            i = seg_apply_stream(out, in, i, e, K, m, r, sc, nxt, prefetch, SUM_PLAIN);
#else
        i = seg_apply_stream(out, in, i, e, K, m, r, sc, nxt, prefetch, SUM_NONE);
#endif
        for (; i < e; i++)
            out_apply1(out, in, i, K, m, r, sc);
        return;
    }
#endif
    const ulong nv = (e - b) / VW;
    /* Two vectors' inputs loaded before either is stored: y may be x (in place), so a
     * compiler keeps each load behind the store before it, one vector in flight per item (on
     * GPUs, with few items per compute unit, too few bytes in flight for the memory). They
     * are the item's own elements, read before it writes them; the same operations per
     * element, so the same bits. */
    ulong v = lid;
    for (; v + L < nv; v += 2 * (ulong)L) {
        const ulong i0 = b + v * VW, i1 = b + (v + L) * VW;
        const AV d0 = IN_DEVV(in, i0, K, sc), d1 = IN_DEVV(in, i1, K, sc);
        out_putv(out, in, i0, d0, m, r);
        out_putv(out, in, i1, d1, m, r);
    }
    if (v < nv)
        out_applyv(out, in, b + v * VW, K, m, r, sc);
    for (ulong i = b + nv * VW + lid; i < e; i += L)
        out_apply1(out, in, i, K, m, r, sc);
}
