/*
 * norm_workgroup.cl - strategy "workgroup": the L items of one work-group share a row; each
 * item takes every L-th vector (coalesced on GPUs) and the partial sums meet in a local-memory
 * tree (wg_sum, exact for any L). For GPUs and long rows.
 * Needs common.cl, an op_*.cl, row_stats.cl and norm_body.cl before it.
 */
__kernel void norm_workgroup(FWD_PTRS, __local A *scratch, KS_PARAM)
{
    KS_BEGIN;
    FWD_UNPACK
    KS_ROW_SCALARS;
    const uint lid = get_local_id(0);
    const uint L = get_local_size(0);
    /* Group-stride over rows: the loop condition is the same for every item of a group, so
     * the barriers inside are reached by all of them. */
    for (ulong row = get_group_id(0); row < rows; row += get_num_groups(0)) {
        norm_full_row(make_row_in(IN_ARGS, row), make_row_out(FWD_OUT_ARGS, row, flags),
                      FWD_MEAN, FWD_RSTD, row, cols, eps, flags, lid, L, scratch,
                      make_row_in(IN_ARGS, row), PREFETCH_NONE);
    }
}
