/*
 * norm_workgroup.cl - strategy "workgroup": the L items of one work-group share a row; each
 * item takes every L-th vector (coalesced on GPUs) and the partial sums meet in a local-memory
 * tree (wg_sum, exact for any L). For GPUs and long rows. Needs common.cl and norm_body.cl.
 */
__kernel void norm_workgroup(__global const T *x, ulong x_off, ulong x_stride,
                             __global T *y, ulong y_off, ulong y_stride,
                             __global const P *gamma, ulong g_off,
                             __global const P *beta, ulong b_off,
                             __global P *mean, ulong m_off,
                             __global P *rstd, ulong r_off,
                             ulong rows, ulong cols, A eps, uint flags,
                             __local A *scratch)
{
    const uint lid = get_local_id(0);
    const uint L = get_local_size(0);
    /* Group-stride over rows: the loop condition is the same for every item of a group, so
     * the barriers inside are reached by all of them. */
    for (ulong row = get_group_id(0); row < rows; row += get_num_groups(0)) {
        norm_full_row(x + x_off + row * x_stride, y + y_off + row * y_stride,
                      offset_or_null(gamma, g_off, flags & FLAG_GAMMA),
                      offset_or_null(beta, b_off, flags & FLAG_BETA),
                      mean_or_null(mean, m_off, flags & FLAG_MEAN),
                      mean_or_null(rstd, r_off, flags & FLAG_RSTD),
                      row, cols, eps, flags, lid, L, scratch, 0);
    }
}
