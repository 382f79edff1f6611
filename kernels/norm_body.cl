/*
 * norm_body.cl - the per-row algorithm shared by the "row" and "workgroup" strategies:
 * shift by the first element, two-pass statistics reduced over the L items of the group,
 * then the affine apply. Needs common.cl before it.
 */

/* Base + offset for an optional input, NULL (never dereferenced) when absent. */
inline __global const P *offset_or_null(__global const P *p, ulong off, uint present)
{
    return present ? p + off : 0;
}
inline __global P *mean_or_null(__global P *p, ulong off, uint present)
{
    return present ? p + off : 0;
}

/*
 * Normalizes one row of `cols` elements with the L items of a work-group (L = 1: one item).
 * Every item of the group must call it (it holds barriers when L > 1). In place is safe: the
 * statistics passes finish (behind the barriers of wg_sum) before any item writes.
 * next_row: elements from this row to the one to prefetch during the apply (0: none).
 */
inline void norm_full_row(__global const T *xr, __global T *yr, __global const P *gamma,
                          __global const P *beta, __global P *mean,
                          __global P *rstd, ulong row, ulong cols, A eps, uint flags,
                          uint lid, uint L, __local A *scratch, ulong next_row)
{
    A K = 0, m = 0;
    if ((flags & FLAG_RMS) == 0) {
        K = LOAD1(xr);
        m = wg_sum(seg_sum_shift(xr, 0, cols, lid, L, K), scratch, lid, L) / (A)cols;
    }
    const A var = wg_sum(seg_sum_sq(xr, 0, cols, lid, L, K, m), scratch, lid, L) / (A)cols;
    const A r = rsqrt(var + eps);
    if (lid == 0)
        store_stats(mean, rstd, row, K, m, r, flags);
    seg_apply(xr, yr, gamma, beta, 0, cols, lid, L, K, m, r, flags, next_row);
}
