/*
 * norm_row.cl - strategy "row": one work-item normalizes a whole row with vector loads.
 * Suited to CPU devices (PoCL, Intel CPU runtime): a work-item is a loop iteration there, and
 * a row stays in the core's cache for the three passes (mean, variance, apply). On GPUs its
 * loads do not coalesce; the dispatcher does not choose it there.
 * Needs common.cl and norm_body.cl before it.
 */
__kernel void norm_row(__global const T *x, ulong x_off, ulong x_stride,
                       __global T *y, ulong y_off, ulong y_stride,
                       __global const P *gamma, ulong g_off,
                       __global const P *beta, ulong b_off,
                       __global P *mean, ulong m_off,
                       __global P *rstd, ulong r_off,
                       ulong rows, ulong cols, A eps, uint flags)
{
    /* Grid-stride over rows, so any number of rows runs on a bounded NDRange. */
    for (ulong row = get_global_id(0); row < rows; row += get_global_size(0)) {
        norm_full_row(x + x_off + row * x_stride, y + y_off + row * y_stride,
                      offset_or_null(gamma, g_off, flags & FLAG_GAMMA),
                      offset_or_null(beta, b_off, flags & FLAG_BETA),
                      mean_or_null(mean, m_off, flags & FLAG_MEAN),
                      mean_or_null(rstd, r_off, flags & FLAG_RSTD),
                      row, cols, eps, flags, 0, 1, 0, x_stride);
    }
}
