/*
 * norm_split.cl - strategy "split": a row is cut into `chunks` chunks of chunk_len columns,
 * each taken by one work-group, so few very long rows (16 x 1,048,576) still fill the device.
 *   norm_split_stats: per (row, chunk) the chunk's mean of the deviations v * sc - K, M2 (the
 *                     sum of squared deviations from that mean, two-pass inside the chunk),
 *                     its scale sc and its largest input magnitude; K = the row's shift
 *                     (row_shift), saved by chunk 0. A chunk whose squares overflow (|x|
 *                     above about 1e19 in float) is redone scaled by a power of two.
 *   norm_split_apply: every group merges its row's chunk statistics in chunk order (Chan et
 *                     al.'s pairwise update; fixed order, so bit-reproducible) and normalizes
 *                     its own chunk. When a chunk was scaled, or the merge overflows, the merge
 *                     is redone at the row's scale (from the largest magnitude of all chunks),
 *                     into which every chunk's statistics convert exactly.
 * part holds, per row, 2 + 4 * chunks values of A: K (two), then (mean, M2, sc, max) of each
 * chunk. K travels through part rather than being re-read from x, because in place the
 * chunk-0 group of the apply kernel may already have overwritten x[0].
 * Needs common.cl, an op_*.cl and row_stats.cl before it.
 */
#define SPLIT_ROW_LEN(chunks) (2 + 4 * (ulong)(chunks))

/* A chunk's mean and M2 at scale sc (its largest input magnitude into *amax). */
inline A chunk_m2(row_in in, ulong b, ulong e, uint lid, uint L, __local A *scratch, int rms,
                  A2 K, A sc, A *mean, A *amax)
{
    A mx, m2;
    *mean = 0;
    if (!rms) {
        A n, S, M2;
        seg_moments(in, b, e, lid, L, K, sc, &n, &S, &M2, &mx);
        m2 = group_m2(n, S, M2, e - b, scratch, lid, L, mean);
    } else {
        mx = seg_absmax(in, b, e, lid, L);
        m2 = wg_sum(seg_sum_sq(in, b, e, lid, L, K, 0, sc), scratch, lid, L);
    }
    *amax = wg_max(mx, scratch, lid, L);
    return m2;
}

__kernel void norm_split_stats(IN_PTRS, __global A *part, __local A *scratch, KS_PARAM)
{
    KS_BEGIN;
    IN_UNPACK
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
    const int rms = (flags & CLNORM_KF_RMS) != 0;
    for (ulong row = get_group_id(1); row < rows; row += get_num_groups(1)) {
        const row_in in = make_row_in(IN_ARGS, row);
        __global A *pr = part + row * SPLIT_ROW_LEN(chunks);
        const A2 K = row_shift(in, cols, 1, rms);
        A mc, amax, sc = 1, m2;
        /* The redo at a scale is a second pass of a loop, as in row_stats (which says why);
         * the exit is the same for every item of the group (m2 comes from wg_sum). */
        for (int pass = 0;; pass++) {
            m2 = chunk_m2(in, b, e, lid, L, scratch, rms, pass ? K * sc : K, sc, &mc, &amax);
            if (pass == 1 || !needs_rescale(m2))
                break;
            /* the chunk's deviations are from the row's shift, which may lie far outside the
             * chunk's own values: the scale must bring both into range */
            sc = rescale_factor(fmax(amax, fabs(K.s0) + fabs(K.s1)));
        }
        if (lid == 0) {
            if (c == 0) {
                pr[0] = K.s0;
                pr[1] = K.s1;
            }
            pr[2 + 4 * c] = mc;
            pr[3 + 4 * c] = m2;
            pr[4 + 4 * c] = sc;
            pr[5 + 4 * c] = amax;
        }
    }
}

/* Chan's merge of a row's chunks in chunk order, each converted from its own scale to S. */
inline A merge_chunks(__global const A *pr, ulong cols, ulong chunk_len, uint chunks, A S,
                      A *mean)
{
    A na = (A)min(chunk_len, cols);
    A f = S / pr[4];
    A ma = pr[2] * f, m2 = pr[3] * (f * f);
    for (uint k = 1; k < chunks; k++) {
        const A nb = (A)(min(cols, (ulong)(k + 1) * chunk_len) - (ulong)k * chunk_len);
        f = S / pr[4 + 4 * k];
        const A mb = pr[2 + 4 * k] * f;
        const A n = na + nb;
        const A delta = mb - ma;
        ma += delta * (nb / n);
        m2 += pr[3 + 4 * k] * (f * f) + delta * delta * (na * (nb / n));
        na = n;
    }
    *mean = ma;
    return m2;
}

__kernel void norm_split_apply(FWD_PTRS, __global const A *part, KS_PARAM)
{
    KS_BEGIN;
    FWD_UNPACK
    KS_UL(rows);
    KS_UL(cols);
    KS_UL(chunk_len);
    KS_UI(chunks);
    KS_A(eps);
    KS_UI(flags);
    const uint c = get_group_id(0);
    const uint lid = get_local_id(0);
    const uint L = get_local_size(0);
    const ulong b = (ulong)c * chunk_len;
    const ulong e = min(cols, b + chunk_len);
    for (ulong row = get_group_id(1); row < rows; row += get_num_groups(1)) {
        __global const A *pr = part + row * SPLIT_ROW_LEN(chunks);
        A2 K = (A2)(pr[0], pr[1]);
        int scaled = 0;
        A amax = 0;
        for (uint k = 0; k < chunks; k++) {
            scaled |= pr[4 + 4 * k] != (A)1;
            amax = fmax(amax, pr[5 + 4 * k]);
        }
        A sc = 1, m;
        A m2 = merge_chunks(pr, cols, chunk_len, chunks, 1, &m);
        if (scaled || needs_rescale(m2)) {
            sc = rescale_factor(amax);
            K *= sc;
            m2 = merge_chunks(pr, cols, chunk_len, chunks, sc, &m);
        }
        const A r = rsqrt(m2 / (A)cols + eps * sc * sc);
        if (c == 0 && lid == 0)
            store_stats(FWD_MEAN, FWD_RSTD, row, K, m, r, sc, flags);
        const row_in in = make_row_in(IN_ARGS, row);
        seg_apply(make_row_out(FWD_OUT_ARGS, row, flags), in, b, e, lid, L, K, m, r, sc, in,
                  PREFETCH_NONE);
    }
}
