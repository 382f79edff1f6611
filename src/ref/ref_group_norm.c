/*
 * The CPU reference of GroupNorm, forward and backward: the tests' oracle and the fallback of
 * a context without an OpenCL device. Every element read as double, exact two-pass
 * statistics per (sample, group) of the group shifted as the kernels shift it (the median of
 * its first three elements; in exact arithmetic any shift gives the same statistics, and the
 * same one the same NaN / Inf pattern), one rounding to the storage type at the end.
 *
 * Backward: z = xhat * gamma_c + beta_c, y = z (or silu(z) = z * s(z), s the sigmoid, whose
 * derivative is s(z) * (1 + z * (1 - s(z)))), dz = dy * y'(z). Within a group xhat is
 * LayerNorm's over the group's elements, so with g = dz * gamma_c:
 *   dx = rstd * (g - mean(g) - xhat * mean(g * xhat))   (means over the group),
 *   dgamma_c = sum over samples and positions of dz * xhat, dbeta_c = the same of dz.
 * Checked against finite differences and PyTorch's autograd in the tests.
 */
#include "../dtype.h"
#include "../op/op.h"

#include <math.h>
#include <stdlib.h>

/* Element (n, c, p) of a tensor whose samples are `stride` apart. */
static size_t at(const clnorm_desc *d, size_t stride, size_t n, size_t c, size_t p)
{
    return n * stride + (d->layout == CLNORM_NHWC ? p * d->cols + c : c * d->spatial + p);
}

static double sigmoid(double z)
{
    return 1.0 / (1.0 + exp(-z));
}

/* The kernels' shift of group (n, g): the median of the three elements
 * clnorm_group_shift_elem names, as the host loop takes it. */
static double group_shift(const clnorm_desc *d, const void *x, size_t n, size_t c0, size_t cpg)
{
    double v[3];
    if (cpg * d->spatial == 0)
        return 0.0;
    for (size_t k = 0; k < 3; k++) {
        size_t c, p;
        clnorm_group_shift_elem(d->layout == CLNORM_NHWC, cpg, d->spatial, k, &c, &p);
        v[k] = clnorm_elem_load(d->dtype, x, at(d, d->x_stride, n, c0 + c, p));
    }
    return clnorm_med3(v[0], v[1], v[2]);
}

/* Group (n, g)'s variance at scale sc: its shift *K (group_shift, scaled) and the mean *m of
 * its deviations x * sc - K. */
static double group_var_at(const clnorm_desc *d, const void *x, size_t n, size_t g, double sc,
                           double *K, double *m)
{
    const size_t cpg = d->cols / d->groups, c0 = g * cpg, cnt = cpg * d->spatial;
    *K = group_shift(d, x, n, c0, cpg) * sc;
    double s = 0.0;
    for (size_t c = c0; c < c0 + cpg; c++)
        for (size_t p = 0; p < d->spatial; p++)
            s += clnorm_elem_load(d->dtype, x, at(d, d->x_stride, n, c, p)) * sc - *K;
    *m = s / (double)cnt;
    double q = 0.0;
    for (size_t c = c0; c < c0 + cpg; c++)
        for (size_t p = 0; p < d->spatial; p++) {
            const double v =
                (clnorm_elem_load(d->dtype, x, at(d, d->x_stride, n, c, p)) * sc - *K) - *m;
            q += v * v;
        }
    return q / (double)cnt;
}

/* The statistics of group (n, g): xhat = (x - K - m) * r. A group whose squares overflow
 * (float64 data above about 1e154) is redone scaled by the power of two that brings its
 * largest magnitude near 1, as rows are (ref_row_norm.c), and its statistics are then given
 * back in x's own units (exact: the scale is a power of two). */
static void group_stats(const clnorm_desc *d, const void *x, size_t n, size_t g, double eps,
                        double *K, double *m, double *r)
{
    const double var = group_var_at(d, x, n, g, 1.0, K, m);
    if (isfinite(var)) {
        *r = 1.0 / sqrt(var + eps);
        return;
    }
    const size_t cpg = d->cols / d->groups;
    double M = 0.0;
    for (size_t c = g * cpg; c < (g + 1) * cpg; c++)
        for (size_t p = 0; p < d->spatial; p++)
            M = fmax(M, fabs(clnorm_elem_load(d->dtype, x, at(d, d->x_stride, n, c, p))));
    if (!isfinite(M) || M <= 0.0) { /* an Inf or NaN: the statistics are not finite */
        *r = 1.0 / sqrt(var + eps);
        return;
    }
    const double sc = ldexp(1.0, -ilogb(M));
    const double vs = group_var_at(d, x, n, g, sc, K, m);
    *K /= sc;
    *m /= sc;
    *r = sc / sqrt(vs + eps * sc * sc);
}

static void forward(const clnorm_desc *d, const clnorm_host_ptrs *a)
{
    const clnorm_dtype t = d->dtype, pt = clnorm_param_dtype(t);
    const void *x = a->p[CLNORM_ARG_X], *gamma = a->p[CLNORM_ARG_GAMMA];
    const void *beta = a->p[CLNORM_ARG_BETA];
    void *y = a->p[CLNORM_ARG_Y], *mean = a->p[CLNORM_ARG_MEAN], *rstd = a->p[CLNORM_ARG_RSTD];
    const size_t cpg = d->cols / d->groups;
    const int silu = (d->flags & CLNORM_SILU) != 0;
    const double eps = clnorm_arith_eps(d);
    for (size_t n = 0; n < d->rows; n++)
        for (size_t g = 0; g < d->groups; g++) {
            double K, m, r;
            group_stats(d, x, n, g, eps, &K, &m, &r);
            if (mean)
                clnorm_elem_store(pt, mean, n * d->groups + g, K + m);
            if (rstd)
                clnorm_elem_store(pt, rstd, n * d->groups + g, r);
            /* In place (y is x): each element is read before it is written. */
            for (size_t c = g * cpg; c < (g + 1) * cpg; c++)
                for (size_t p = 0; p < d->spatial; p++) {
                    double z = ((clnorm_elem_load(t, x, at(d, d->x_stride, n, c, p)) - K) - m) * r;
                    if (gamma)
                        z *= clnorm_elem_load(pt, gamma, c);
                    if (beta)
                        z += clnorm_elem_load(pt, beta, c);
                    clnorm_elem_store(t, y, at(d, d->y_stride, n, c, p), silu ? z * sigmoid(z) : z);
                }
        }
}

/* One element's xhat and dz (dy through the SiLU when there is one), given its group's
 * statistics (K, m, r) and its channel's gamma and beta. */
typedef struct {
    const clnorm_desc *d;
    const void *x, *dy;
    double K, m, r;
} group_ctx;

static void xhat_dz(const group_ctx *gc, size_t n, size_t c, size_t p, double gam, double bet,
                    double *xh, double *dz)
{
    const clnorm_desc *d = gc->d;
    *xh = ((clnorm_elem_load(d->dtype, gc->x, at(d, d->x_stride, n, c, p)) - gc->K) - gc->m) *
          gc->r;
    const double dyv = clnorm_elem_load(d->dtype, gc->dy, at(d, d->y_stride, n, c, p));
    if (!(d->flags & CLNORM_SILU)) {
        *dz = dyv;
        return;
    }
    const double z = *xh * gam + bet, s = sigmoid(z);
    *dz = dyv * s * (1.0 + z * (1.0 - s));
}

static clnorm_status backward(const clnorm_desc *d, const clnorm_host_ptrs *a)
{
    const clnorm_dtype t = d->dtype, pt = clnorm_param_dtype(t);
    const void *x = a->p[CLNORM_ARG_X], *dy = a->p[CLNORM_ARG_DY];
    const void *gamma = a->p[CLNORM_ARG_GAMMA], *beta = a->p[CLNORM_ARG_BETA];
    const void *mean = a->p[CLNORM_ARG_MEAN], *rstd = a->p[CLNORM_ARG_RSTD];
    void *dx = a->p[CLNORM_ARG_DX], *dgamma = a->p[CLNORM_ARG_DGAMMA];
    void *dbeta = a->p[CLNORM_ARG_DBETA];
    const size_t cpg = d->cols / d->groups, cnt = cpg * d->spatial;
    double *acc = NULL;
    if (dgamma || dbeta) {
        acc = calloc(2 * d->cols, sizeof *acc);
        if (!acc)
            return CLNORM_OUT_OF_MEMORY;
    }
    const double eps = clnorm_arith_eps(d);
    for (size_t n = 0; n < d->rows && (acc || dx); n++)
        for (size_t g = 0; g < d->groups; g++) {
            group_ctx gc = {d, x, dy, 0.0, 0.0, 0.0};
            if (rstd) {
                gc.K = clnorm_elem_load(pt, mean, n * d->groups + g);
                gc.r = clnorm_elem_load(pt, rstd, n * d->groups + g);
            } else {
                group_stats(d, x, n, g, eps, &gc.K, &gc.m, &gc.r);
            }
            double sg = 0.0, sgx = 0.0;
            for (size_t c = g * cpg; c < (g + 1) * cpg; c++) {
                const double gam = gamma ? clnorm_elem_load(pt, gamma, c) : 1.0;
                const double bet = beta ? clnorm_elem_load(pt, beta, c) : 0.0;
                for (size_t p = 0; p < d->spatial; p++) {
                    double xh, dz;
                    xhat_dz(&gc, n, c, p, gam, bet, &xh, &dz);
                    sg += dz * gam;
                    sgx += dz * gam * xh;
                    if (acc) {
                        acc[c] += dz * xh;
                        acc[d->cols + c] += dz;
                    }
                }
            }
            if (!dx)
                continue;
            const double mg = sg / (double)cnt, mgx = sgx / (double)cnt;
            /* In place (dx is dy or x): each element is read before it is written. */
            for (size_t c = g * cpg; c < (g + 1) * cpg; c++) {
                const double gam = gamma ? clnorm_elem_load(pt, gamma, c) : 1.0;
                const double bet = beta ? clnorm_elem_load(pt, beta, c) : 0.0;
                for (size_t p = 0; p < d->spatial; p++) {
                    double xh, dz;
                    xhat_dz(&gc, n, c, p, gam, bet, &xh, &dz);
                    clnorm_elem_store(t, dx, at(d, d->x_stride, n, c, p),
                                      gc.r * (dz * gam - mg - xh * mgx));
                }
            }
        }
    for (size_t c = 0; acc && c < d->cols; c++) {
        if (dgamma)
            clnorm_elem_store(pt, dgamma, c, acc[c]);
        if (dbeta)
            clnorm_elem_store(pt, dbeta, c, acc[d->cols + c]);
    }
    free(acc);
    return CLNORM_OK;
}

clnorm_status clnorm_group_norm_ref(const clnorm_op *op, const clnorm_desc *d,
                                    clnorm_direction dir, const clnorm_host_ptrs *a)
{
    (void)op;
    if (dir == CLNORM_FORWARD) {
        forward(d, a);
        return CLNORM_OK;
    }
    return backward(d, a);
}
