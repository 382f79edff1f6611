/*
 * norm_row.cl - strategy "row": one work-item normalizes a whole row with vector loads.
 * Suited to CPU devices (PoCL, Intel CPU runtime): a work-item is a loop iteration there, and
 * a row stays in the core's cache for the three passes (mean, variance, apply). On GPUs its
 * loads do not coalesce; the policy does not choose it there.
 * Needs common.cl, an op_*.cl, row_stats.cl and norm_body.cl before it.
 */
__kernel void norm_row(FWD_PTRS, KS_PARAM)
{
    KS_BEGIN;
    FWD_UNPACK
    KS_ROW_SCALARS;
    /* Grid-stride over rows, so any number of rows runs on a bounded NDRange. */
    for (ulong row = get_global_id(0); row < rows; row += get_global_size(0)) {
        /* The next row in memory is the next work-item's: run by the same thread on PoCL. */
        norm_full_row(make_row_in(IN_ARGS, row), make_row_out(FWD_OUT_ARGS, row, flags),
                      FWD_MEAN, FWD_RSTD, row, cols, eps, flags, 0, 1, 0,
                      make_row_in(IN_ARGS, row + 1), row_prefetch_hint(cols));
    }
}
