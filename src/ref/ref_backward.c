/* CPU reference of the backward pass, double accumulation:
 *   xhat = (x - mean) * rstd (RMS: x * rstd), g = dy * gamma,
 *   dx = rstd * (g - mean(g) - xhat * mean(g * xhat))  (RMS: without mean(g)),
 *   dgamma = sum over rows of dy * xhat, dbeta = sum over rows of dy.
 * Derivation (LayerNorm): y = xhat * gamma + beta with xhat = (x - mu) * rstd. Through mu and
 * rstd every x_j reaches every xhat_i: d xhat_i / d x_j = rstd * (delta_ij - 1/N - xhat_i *
 * xhat_j / N). Contracting with g_i gives dx_j = rstd * (g_j - mean(g) - xhat_j * mean(g xhat)).
 * RMSNorm has no mu, so d xhat_i / d x_j = rstd * (delta_ij - xhat_i xhat_j / N) and the
 * mean(g) term is absent. Both are checked against central finite differences in the tests. */
#include "ref_elem.h"

#include <math.h>
#include <stdlib.h>

clnorm_status clnorm_ref_backward(const clnorm_desc *desc, unsigned mask, const void *x,
                                  const void *dy, const void *mean, const void *rstd,
                                  const void *gamma, void *dx, void *dgamma, void *dbeta)
{
    clnorm_status st = clnorm_desc_check(desc, NULL, 0);
    if (st != CLNORM_OK)
        return st;
    st = clnorm_check_backward_operands(NULL, desc, mask, x, dy, mean, rstd, gamma, dx, dgamma,
                                        dbeta);
    if (st != CLNORM_OK)
        return st;
    const clnorm_desc d = clnorm_desc_normalized(desc);
    const clnorm_dtype t = d.dtype;
    /* Sums of the parameter gradients in double, rounded once at the end. */
    double *acc = NULL;
    if (mask & (CLNORM_GRAD_GAMMA | CLNORM_GRAD_BETA)) {
        acc = calloc(2 * d.cols, sizeof *acc);
        if (!acc)
            return CLNORM_OUT_OF_MEMORY;
    }
    const int rms = d.kind == CLNORM_RMS;
    for (size_t r = 0; r < d.rows; r++) {
        const size_t xo = r * d.x_stride, yo = r * d.y_stride;
        /* xhat = ((x - K) - m) * rs: saved statistics give K = mean, m = 0; without them the
         * statistics are recomputed in double, shifted by the row's first element as the
         * forward does. */
        double K, m = 0.0, rs;
        if (rstd) {
            K = rms ? 0.0 : ref_param(t, mean, r);
            rs = ref_param(t, rstd, r);
        } else {
            ref_row_stats(t, x, xo, d.cols, rms, d.eps, &K, &m, &rs);
        }
        double sg = 0.0, sgx = 0.0;
        for (size_t j = 0; j < d.cols; j++) {
            const double g = ref_load(t, dy, yo + j) * (gamma ? ref_param(t, gamma, j) : 1.0);
            const double xh = ((ref_load(t, x, xo + j) - K) - m) * rs;
            sg += g;
            sgx += g * xh;
            if (acc) {
                acc[j] += ref_load(t, dy, yo + j) * xh;
                acc[d.cols + j] += ref_load(t, dy, yo + j);
            }
        }
        if (!(mask & CLNORM_GRAD_X))
            continue;
        const double mg = rms ? 0.0 : sg / (double)d.cols, mgx = sgx / (double)d.cols;
        /* In place (dx is dy): each element is read before it is written. */
        for (size_t j = 0; j < d.cols; j++) {
            const double g = ref_load(t, dy, yo + j) * (gamma ? ref_param(t, gamma, j) : 1.0);
            const double xh = ((ref_load(t, x, xo + j) - K) - m) * rs;
            ref_store(t, dx, xo + j, rs * (g - mg - xh * mgx));
        }
    }
    for (size_t j = 0; acc && j < d.cols; j++) {
        if (dgamma)
            ref_param_store(t, dgamma, j, acc[j]);
        if (dbeta)
            ref_param_store(t, dbeta, j, acc[d.cols + j]);
    }
    free(acc);
    return CLNORM_OK;
}
