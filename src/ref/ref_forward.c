/* CPU reference of the forward pass: the oracle of every test and the fallback of a context
 * without an OpenCL device. Plain and obviously right rather than fast: every element read as
 * double, exact two-pass statistics (mean, then squared deviations from it) of the row shifted
 * by its first element, one rounding to the storage type at the end. */
#include "ref_elem.h"

#include <math.h>

clnorm_status clnorm_ref_forward(const clnorm_desc *desc, const void *x, void *y,
                                 const void *gamma, const void *beta, void *mean, void *rstd)
{
    clnorm_status st = clnorm_desc_check(desc, NULL, 0);
    if (st != CLNORM_OK)
        return st;
    if (desc->rows == 0)
        return CLNORM_OK;
    st = clnorm_check_operands(NULL, desc, x, y, gamma, beta, mean, rstd);
    if (st != CLNORM_OK)
        return st;
    const clnorm_desc d = clnorm_desc_normalized(desc);
    const size_t es = clnorm_dtype_size(d.dtype);
    size_t ex, ey;
    clnorm_extent(d.rows, d.cols, d.x_stride, &ex);
    clnorm_extent(d.rows, d.cols, d.y_stride, &ey);
    if (x != y && clnorm_ranges_overlap((uintptr_t)x, ex * es, (uintptr_t)y, ey * es))
        return CLNORM_INVALID_ARGUMENT; /* partial overlap: neither in place nor disjoint */

    const clnorm_dtype t = d.dtype;
    const int rms = d.kind == CLNORM_RMS;
    for (size_t r = 0; r < d.rows; r++) {
        const size_t xo = r * d.x_stride, yo = r * d.y_stride;
        double K, m, rs;
        ref_row_stats(t, x, xo, d.cols, rms, d.eps, &K, &m, &rs);
        if (mean)
            ref_param_store(t, mean, r, K + m);
        if (rstd)
            ref_param_store(t, rstd, r, rs);
        /* In place (y is x): each element is read before it is written. */
        for (size_t j = 0; j < d.cols; j++) {
            double v = ((ref_load(t, x, xo + j) - K) - m) * rs;
            if (gamma)
                v *= ref_param(t, gamma, j);
            if (beta)
                v += ref_param(t, beta, j);
            ref_store(t, y, yo + j, v);
        }
    }
    return CLNORM_OK;
}
