/*
 * norm_split.cl - strategy "split": a row is cut into `chunks` chunks of chunk_len columns,
 * each taken by one work-group, so few very long rows (16 x 1,048,576) still fill the device.
 *   norm_split_stats: per (row, chunk) the chunk's mean of (x - K) and M2 = sum of squared
 *                     deviations from it (two-pass inside the chunk); K = the row's x[0],
 *                     saved by chunk 0, the same shift for every chunk.
 *   norm_split_apply: every group merges its row's chunk statistics in chunk order (Chan et
 *                     al.'s pairwise update; fixed order, so bit-reproducible) and normalizes
 *                     its own chunk.
 * part holds, per row, 1 + 2 * chunks values of A: K, then (mean, M2) of each chunk. K travels
 * through part rather than being re-read from x, because in place the chunk-0 group of the
 * apply kernel may already have overwritten x[0].
 * Needs common.cl before it.
 */
__kernel void norm_split_stats(__global const T *x, ulong x_off, ulong x_stride,
                               __global A *part, ulong rows, ulong cols, ulong chunk_len,
                               uint chunks, uint flags, __local A *scratch)
{
    const uint c = get_group_id(0);
    const uint lid = get_local_id(0);
    const uint L = get_local_size(0);
    const ulong b = (ulong)c * chunk_len;
    const ulong e = min(cols, b + chunk_len);
    for (ulong row = get_group_id(1); row < rows; row += get_num_groups(1)) {
        __global const T *xr = x + x_off + row * x_stride;
        __global A *pr = part + row * (1 + 2 * (ulong)chunks);
        A K = 0, mc = 0;
        if ((flags & FLAG_RMS) == 0) {
            K = LOAD1(xr);
            mc = wg_sum(seg_sum_shift(xr, b, e, lid, L, K), scratch, lid, L) / (A)(e - b);
        }
        const A m2 = wg_sum(seg_sum_sq(xr, b, e, lid, L, K, mc), scratch, lid, L);
        if (lid == 0) {
            if (c == 0)
                pr[0] = K;
            pr[1 + 2 * c] = mc;
            pr[2 + 2 * c] = m2;
        }
    }
}

__kernel void norm_split_apply(__global const T *x, ulong x_off, ulong x_stride,
                               __global T *y, ulong y_off, ulong y_stride,
                               __global const P *gamma, ulong g_off,
                               __global const P *beta, ulong b_off,
                               __global P *mean, ulong m_off,
                               __global P *rstd, ulong r_off,
                               __global const A *part, ulong rows, ulong cols,
                               ulong chunk_len, uint chunks, A eps, uint flags)
{
    const uint c = get_group_id(0);
    const uint lid = get_local_id(0);
    const uint L = get_local_size(0);
    const ulong b = (ulong)c * chunk_len;
    const ulong e = min(cols, b + chunk_len);
    for (ulong row = get_group_id(1); row < rows; row += get_num_groups(1)) {
        __global const A *pr = part + row * (1 + 2 * (ulong)chunks);
        const A K = pr[0];
        A na = (A)min(chunk_len, cols);
        A ma = pr[1], m2 = pr[2];
        for (uint k = 1; k < chunks; k++) {
            const A nb = (A)(min(cols, (ulong)(k + 1) * chunk_len) - (ulong)k * chunk_len);
            const A mb = pr[1 + 2 * k];
            const A n = na + nb;
            const A delta = mb - ma;
            ma += delta * (nb / n);
            m2 += pr[2 + 2 * k] + delta * delta * (na * (nb / n));
            na = n;
        }
        const A r = rsqrt(m2 / (A)cols + eps);
        if (c == 0 && lid == 0)
            store_stats((flags & FLAG_MEAN) ? mean + m_off : 0,
                        (flags & FLAG_RSTD) ? rstd + r_off : 0, row, K, ma, r, flags);
        seg_apply(x + x_off + row * x_stride, y + y_off + row * y_stride,
                  (flags & FLAG_GAMMA) ? gamma + g_off : 0, (flags & FLAG_BETA) ? beta + b_off : 0,
                  b, e, lid, L, K, ma, r, flags, 0);
    }
}
