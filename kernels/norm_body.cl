/*
 * norm_body.cl - the per-row algorithm shared by the "row" and "workgroup" strategies: the
 * row's statistics reduced over the L items of the group, then the apply. Needs common.cl,
 * an op_*.cl and row_stats.cl before it.
 *
 * Every item of the group must call it (it holds barriers when L > 1). In place is safe: the
 * statistics passes finish (behind the barriers of wg_sum) before any item writes.
 */
inline void norm_full_row(row_in in, row_out out, __global P *mean, __global P *rstd,
                          ulong row, ulong cols, A eps, uint flags, uint lid, uint L,
                          __local A *scratch, row_in nxt, int prefetch)
{
    A2 K;
    A m, r, sc;
    row_stats(in, cols, lid, L, scratch, (flags & CLNORM_KF_RMS) != 0, eps, &K, &m, &r, &sc);
    if (lid == 0)
        store_stats(mean, rstd, row, K, m, r, sc, flags);
    seg_apply(out, in, 0, cols, lid, L, K, m, r, sc, nxt, prefetch);
}
