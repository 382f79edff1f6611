/* CPU reference of the forward pass: the oracle of every test and the fallback of a context
 * without an OpenCL device. Plain and obviously right rather than fast: double accumulation,
 * exact two-pass statistics (mean, then squared deviations from it), one rounding at the end. */
#include "../internal.h"

#include <math.h>
#include <stdint.h>

clnorm_status clnorm_ref_forward(const clnorm_desc *desc, const void *x, void *y,
                                 const void *gamma, const void *beta, void *mean, void *rstd)
{
    clnorm_status st = clnorm_desc_check(desc, NULL, 0);
    if (st != CLNORM_OK)
        return st;
    if (desc->dtype != CLNORM_F32)
        return CLNORM_UNSUPPORTED;
    if (desc->rows == 0)
        return CLNORM_OK;
    st = clnorm_check_operands(NULL, desc, x, y, gamma, beta, mean, rstd);
    if (st != CLNORM_OK)
        return st;
    const clnorm_desc d = clnorm_desc_normalized(desc);
    size_t ex, ey;
    clnorm_extent(d.rows, d.cols, d.x_stride, &ex);
    clnorm_extent(d.rows, d.cols, d.y_stride, &ey);
    if (x != y && clnorm_ranges_overlap((uintptr_t)x, ex * 4, (uintptr_t)y, ey * 4))
        return CLNORM_INVALID_ARGUMENT; /* partial overlap: neither in place nor disjoint */

    const float *g = gamma, *b = beta;
    float *mo = mean, *ro = rstd;
    const int rms = d.kind == CLNORM_RMS;
    for (size_t r = 0; r < d.rows; r++) {
        const float *xr = (const float *)x + r * d.x_stride;
        float *yr = (float *)y + r * d.y_stride;
        double mu = 0.0;
        if (!rms) {
            for (size_t j = 0; j < d.cols; j++)
                mu += xr[j];
            mu /= (double)d.cols;
        }
        double ss = 0.0;
        for (size_t j = 0; j < d.cols; j++) {
            const double dev = (double)xr[j] - mu;
            ss += dev * dev;
        }
        const double rs = 1.0 / sqrt(ss / (double)d.cols + (double)d.eps);
        if (mo)
            mo[r] = (float)mu;
        if (ro)
            ro[r] = (float)rs;
        for (size_t j = 0; j < d.cols; j++) {
            double v = ((double)xr[j] - mu) * rs;
            if (g)
                v *= g[j];
            if (b)
                v += b[j];
            yr[j] = (float)v;
        }
    }
    return CLNORM_OK;
}
