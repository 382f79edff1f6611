/*
 * norm_apply.cl - the forward with precomputed statistics (CLNORM_USE_GLOBAL_STATS, oneDNN's
 * use_global_stats): mean and rstd are inputs, so a row is one elementwise pass,
 * y = (v - mean) * rstd * gamma + beta (modulated), with no reduction at all. The same kernel
 * serves every strategy: on GPUs work-group g takes rows g, g + groups, ... and its L items
 * every L-th vector of a row; on CPUs (L = 1: a work-item per row, vector loads) work-item g
 * takes the g-th contiguous block of rows, so that each thread reads and writes one stream in
 * memory order (rows g, g + groups, ... jumped groups rows at a time: 262144 rows of 64
 * floats ran at 0.46 of the copy that way, against 0.93 for the plain forward). Needs
 * common.cl, op_row_norm.cl and row_stats.cl (seg_apply) before it.
 *
 * The statistics enter as K = 0, m = mean, r = rstd, sc = 1 in the strategies' apply: the
 * sum of x and a residual is formed first, then the mean is subtracted.
 */
__kernel void norm_apply_stats(FWD_PTRS, KS_PARAM)
{
    KS_BEGIN;
    FWD_UNPACK
    KS_UL(rows);
    KS_UL(cols);
    KS_UI(flags);
    const uint lid = get_local_id(0);
    const uint L = get_local_size(0);
    const int rms = (flags & CLNORM_KF_RMS) != 0;
    /* CPUs: blocks of rows / groups rows, rounded down or up, so that every work-item has
     * work (a runtime may hand a thread a fixed share of the work-groups) */
    const ulong groups = get_num_groups(0), g = get_group_id(0);
    const ulong step = L == 1 ? 1 : groups;
    const ulong first = L == 1 ? g * rows / groups : g;
    const ulong end = L == 1 ? (g + 1) * rows / groups : rows;
    for (ulong row = first; row < end; row += step) {
        const A m = rms ? (A)0 : mean[mean_off + row];
        const A r = rstd[rstd_off + row];
        const row_in in = make_row_in(IN_ARGS, row);
        seg_apply(make_row_out(FWD_OUT_ARGS, row, flags), in, 0, cols, lid, L, (A2)(0), m, r,
                  (A)1, make_row_in(IN_ARGS, row + step),
                  L == 1 ? row_prefetch_hint(cols) : PREFETCH_NONE);
    }
}
