/*
 * row_stats.cl - a row's statistics and its apply, through the operation's hooks (row_in,
 * IN_DEVV/IN_DEV1, IN_ABSMAXV, out_applyv/out_apply1 of op_*.cl), for the L items of a
 * work-group (L = 1: one item does it all). Items take vectors lid, lid + L, lid + 2L, ...
 * of the segment [b, e), so neighbouring items touch neighbouring memory (coalesced on GPUs;
 * with L == 1 it is a plain vector loop); the tail after the last whole vector goes element
 * by element, also strided by L.
 */

/* Sum of the deviations v * sc - K over [b, e), and in *amax the largest input magnitude
 * (which callers that do not use it leave to the compiler to drop). */
inline A seg_sum_dev(row_in in, ulong b, ulong e, uint lid, uint L, A2 K, A sc, A *amax)
{
    const ulong nv = (e - b) / VW;
    A s = 0, c = 0;
    AV mx = (AV)(0);
    for (ulong v0 = lid; v0 < nv; v0 += (ulong)L * BLOCK_V) {
        const ulong vend = min(nv, v0 + (ulong)L * BLOCK_V);
        /* Four independent accumulators: one would chain every add on the previous one's
         * latency (4 cycles on x86), leaving a row that sits in L1 compute-bound. */
        AV a0 = (AV)(0), a1 = (AV)(0), a2 = (AV)(0), a3 = (AV)(0);
        ulong v = v0;
        for (; v + 3 * (ulong)L < vend; v += 4 * (ulong)L) {
            a0 += IN_DEVV(in, b + v * VW, K, sc);
            a1 += IN_DEVV(in, b + (v + L) * VW, K, sc);
            a2 += IN_DEVV(in, b + (v + 2 * (ulong)L) * VW, K, sc);
            a3 += IN_DEVV(in, b + (v + 3 * (ulong)L) * VW, K, sc);
            mx = fmax(fmax(mx, IN_ABSMAXV(in, b + v * VW)),
                      fmax(IN_ABSMAXV(in, b + (v + L) * VW), IN_ABSMAXV(in, b + (v + 2 * (ulong)L) * VW)));
            mx = fmax(mx, IN_ABSMAXV(in, b + (v + 3 * (ulong)L) * VW));
        }
        for (; v < vend; v += L) {
            a0 += IN_DEVV(in, b + v * VW, K, sc);
            mx = fmax(mx, IN_ABSMAXV(in, b + v * VW));
        }
        kahan_add(&s, &c, HSUM((a0 + a1) + (a2 + a3)));
    }
    A t = 0, tm = HMAX(mx);
    for (ulong i = b + nv * VW + lid; i < e; i += L) {
        t += IN_DEV1(in, i, K, sc);
        tm = fmax(tm, IN_ABSMAX1(in, i));
    }
    kahan_add(&s, &c, t);
    *amax = tm;
    return s;
}

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

/* Two-pass statistics of columns [0, cols) at scale sc: the shift K, the mean m of the
 * deviations and their variance. */
inline A row_var(row_in in, ulong cols, uint lid, uint L, __local A *scratch, int rms, A sc,
                 A2 *K, A *m)
{
    *K = row_shift(in, sc, rms);
    *m = 0;
    A unused;
    if (!rms)
        *m = wg_sum(seg_sum_dev(in, 0, cols, lid, L, *K, sc, &unused), scratch, lid, L) / (A)cols;
    return wg_sum(seg_sum_sq(in, 0, cols, lid, L, *K, *m, sc), scratch, lid, L) / (A)cols;
}

/*
 * A whole row's statistics for the L items of a group (every item must call it: it holds
 * barriers when L > 1): (K, m, r, sc) with xhat = ((v * sc - K) - m) * r. When the squares
 * overflow although the row is finite, the row is redone scaled so that its largest
 * magnitude lies in [1, 2); eps is scaled with it (sc^2 eps), so r * sc is the true rstd.
 */
inline void row_stats(row_in in, ulong cols, uint lid, uint L, __local A *scratch, int rms,
                      A eps, A2 *K, A *m, A *r, A *sc)
{
    *sc = 1;
    A var = row_var(in, cols, lid, L, scratch, rms, 1, K, m);
    if (needs_rescale(var)) { /* the same for every item of the group */
        *sc = rescale_factor(wg_max(seg_absmax(in, 0, cols, lid, L), scratch, lid, L));
        var = row_var(in, cols, lid, L, scratch, rms, *sc, K, m);
    }
    *r = rsqrt(var + eps * *sc * *sc);
}

/* Applies a row's statistics to columns [b, e). With `prefetch`, the same columns of the row
 * `nxt` are prefetched while this one computes (PoCL CPU devices). */
inline void seg_apply(row_out out, row_in in, ulong b, ulong e, uint lid, uint L, A2 K, A m,
                      A r, A sc, row_in nxt, int prefetch)
{
#if defined(STREAM_STORE)
    if (L == 1) {
        ulong i = b;
        for (; i < e && ((ulong)(out.y + i) % (VW * sizeof(T))) != 0; i++)
            out_apply1(out, in, i, K, m, r, sc);
        for (; i + VW <= e; i += VW) {
            const AV d = IN_DEVV(in, i, K, sc);
            out_sumv_stream(out, in, i);
            storev_stream(out_yv(out, i, d, m, r), out.y + i);
#if defined(PREFETCH_NEXT)
            /* While this row is computed from cache, fetch the same columns of the next row
             * the work-item (or the next work-item of the group, run by the same thread)
             * will read, so memory is busy during the compute too. A prefetch never faults,
             * so the last row's look past the end is harmless. */
            if (prefetch) {
                __builtin_prefetch(nxt.x + i);
#if defined(CLNORM_RESIDUAL)
                __builtin_prefetch(nxt.r + i);
#endif
            }
#endif
        }
        for (; i < e; i++)
            out_apply1(out, in, i, K, m, r, sc);
        return;
    }
#endif
    const ulong nv = (e - b) / VW;
    for (ulong v = lid; v < nv; v += L)
        out_applyv(out, in, b + v * VW, K, m, r, sc);
    for (ulong i = b + nv * VW + lid; i < e; i += L)
        out_apply1(out, in, i, K, m, r, sc);
}
