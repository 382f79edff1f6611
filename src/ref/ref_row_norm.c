/*
 * The CPU reference of the row-normalization family (LayerNorm, RMSNorm, their fused
 * residual add), forward and backward: the oracle of every test and the fallback of a
 * context without an OpenCL device. Plain and obviously right rather than fast: every
 * element read as double, exact two-pass statistics (mean, then squared deviations from it)
 * of the row shifted as the kernels shift it (row_shift: the median of its first three
 * elements from CLNORM_SHIFT_MEDIAN_COLS columns, else its first; in exact arithmetic any
 * shift gives the same statistics, and the same one gives the same NaN / Inf pattern when a
 * row holds an Inf), one rounding to the storage type at the end.
 *
 * Backward, derivation (LayerNorm): y = xhat * gamma + beta with xhat = (v - mu) * rstd.
 * Through mu and rstd every v_j reaches every xhat_i: d xhat_i / d v_j = rstd * (delta_ij -
 * 1/N - xhat_i * xhat_j / N). Contracting with g_i = dy_i * gamma_i gives dv_j = rstd * (g_j -
 * mean(g) - xhat_j * mean(g xhat)). RMSNorm has no mu, so the mean(g) term is absent. With a
 * residual, v = x + residual, so dx = dresidual = dv, plus the gradient dsum that reaches the
 * sum output from its other uses. Both are checked against finite differences in the tests.
 *
 * Modulation: y = z * (1 + scale[b]) + shift[b] with z = xhat * gamma + beta, so everything
 * above holds with dy replaced by dz = dy * (1 + scale[b]), and dscale[b] = sum over the
 * sample's rows of dy * z, dshift[b] = sum of dy. Global statistics are constants: dx =
 * rstd * g, without the mean(g) and mean(g xhat) terms that come from differentiating them.
 */
#include "../dtype.h"
#include "../op/row_norm.h"
#include "ref_modulation.h"

#include <math.h>
#include <stdlib.h>

/* One row of the input v = x (+ residual). */
typedef struct {
    clnorm_dtype t, rt;
    const void *x, *r; /* r NULL: no residual */
    size_t xo, ro;     /* the row's first element */
} row_src;

/* v_j * sc - K, formed per operand as the kernels do (exact in double for float inputs). */
static double dev(const row_src *s, size_t j, const double K[2], double sc)
{
    double d = clnorm_elem_load(s->t, s->x, s->xo + j) * sc - K[0];
    if (s->r)
        d += clnorm_elem_load(s->rt, s->r, s->ro + j) * sc - K[1];
    return d;
}

static double absmax(const row_src *s, size_t cols)
{
    double M = 0.0;
    for (size_t j = 0; j < cols; j++) {
        M = fmax(M, fabs(clnorm_elem_load(s->t, s->x, s->xo + j)));
        if (s->r)
            M = fmax(M, fabs(clnorm_elem_load(s->rt, s->r, s->ro + j)));
    }
    return M;
}

/* The kernels' shift of operand p of a row (row_shift, kernels/op_row_norm.cl). */
static double shift_of(clnorm_dtype t, const void *p, size_t off, size_t cols)
{
    const double x0 = clnorm_elem_load(t, p, off);
    if (cols < CLNORM_SHIFT_MEDIAN_COLS)
        return x0;
    return clnorm_med3(x0, clnorm_elem_load(t, p, off + 1), clnorm_elem_load(t, p, off + 2));
}

/* Variance of the row at scale sc, with its shift K (shift_of each operand, scaled; 0 for
 * RMSNorm) and the mean m of the deviations. */
static double var_at(const row_src *s, size_t cols, int rms, double sc, double K[2], double *m)
{
    K[0] = K[1] = 0.0;
    if (!rms) {
        K[0] = shift_of(s->t, s->x, s->xo, cols) * sc;
        if (s->r)
            K[1] = shift_of(s->rt, s->r, s->ro, cols) * sc;
    }
    *m = 0.0;
    if (!rms) {
        for (size_t j = 0; j < cols; j++)
            *m += dev(s, j, K, sc);
        *m /= (double)cols;
    }
    double ss = 0.0;
    for (size_t j = 0; j < cols; j++) {
        const double d = dev(s, j, K, sc) - *m;
        ss += d * d;
    }
    return ss / (double)cols;
}

/* A row's statistics: xhat = (dev(j, K, sc) - m) * r, the true rstd is r * sc. A row whose
 * squares overflow (F64 data above about 1e154) is redone scaled by a power of two. */
static void row_stats(const row_src *s, size_t cols, int rms, double eps, double K[2],
                      double *m, double *r, double *sc)
{
    *sc = 1.0;
    double var = var_at(s, cols, rms, 1.0, K, m);
    if (!isfinite(var)) {
        const double M = absmax(s, cols);
        if (isfinite(M) && M > 0.0) {
            *sc = ldexp(1.0, -ilogb(M));
            var = var_at(s, cols, rms, *sc, K, m);
        }
    }
    *r = 1.0 / sqrt(var + eps * *sc * *sc);
}

static row_src source(const clnorm_desc *d, const clnorm_host_ptrs *a, size_t row)
{
    row_src s = {d->dtype, clnorm_residual_dtype(d), a->p[CLNORM_ARG_X],
                 a->p[CLNORM_ARG_RESIDUAL], row * d->x_stride, row * d->residual_stride};
    return s;
}

/* Precomputed statistics of a row (CLNORM_USE_GLOBAL_STATS, or the backward's saved ones):
 * xhat = (v - mean) * rstd as dev(K = mean, m = 0) * r. */
static void given_stats(const clnorm_desc *d, const void *mean, const void *rstd, int rms,
                        size_t row, double K[2], double *m, double *r, double *sc)
{
    const clnorm_dtype pt = clnorm_param_dtype(d->dtype);
    K[0] = rms ? 0.0 : clnorm_elem_load(pt, mean, row);
    K[1] = 0.0;
    *m = 0.0;
    *r = clnorm_elem_load(pt, rstd, row);
    *sc = 1.0;
}

static void forward(const clnorm_op *op, const clnorm_desc *d, const clnorm_host_ptrs *a)
{
    const clnorm_dtype t = d->dtype, pt = clnorm_param_dtype(t), rt = clnorm_residual_dtype(d);
    const void *gamma = a->p[CLNORM_ARG_GAMMA], *beta = a->p[CLNORM_ARG_BETA];
    void *y = a->p[CLNORM_ARG_Y], *sum = a->p[CLNORM_ARG_SUM];
    void *mean = a->p[CLNORM_ARG_MEAN], *rstd = a->p[CLNORM_ARG_RSTD];
    const int global = (d->flags & CLNORM_USE_GLOBAL_STATS) != 0;
    const double eps = clnorm_arith_eps(d);
    for (size_t row = 0; row < d->rows; row++) {
        const row_src s = source(d, a, row);
        const clnorm_ref_mod md = clnorm_ref_mod_of(d, a, row);
        double K[2], m, r, sc;
        if (global) {
            given_stats(d, mean, rstd, !op->has_mean, row, K, &m, &r, &sc);
        } else {
            row_stats(&s, d->cols, !op->has_mean, eps, K, &m, &r, &sc);
            if (mean)
                clnorm_elem_store(pt, mean, row, ((K[0] + K[1]) + m) / sc);
            if (rstd)
                clnorm_elem_store(pt, rstd, row, r * sc);
        }
        /* In place (y is x, the sum is the residual): each element is read before it is
         * written. */
        for (size_t j = 0; j < d->cols; j++) {
            double v = (dev(&s, j, K, sc) - m) * r;
            if (gamma)
                v *= clnorm_elem_load(pt, gamma, j);
            if (beta)
                v += clnorm_elem_load(pt, beta, j);
            v *= clnorm_ref_one_plus_scale(d, &md, j);
            if (md.shift)
                v += clnorm_ref_shift(d, &md, j);
            if (sum)
                clnorm_elem_store(rt, sum, row * d->sum_stride + j,
                                  clnorm_elem_load(t, s.x, s.xo + j) +
                                      clnorm_elem_load(rt, s.r, s.ro + j));
            clnorm_elem_store(t, y, row * d->y_stride + j, v);
        }
    }
}

static clnorm_status backward(const clnorm_op *op, const clnorm_desc *d,
                              const clnorm_host_ptrs *a)
{
    const clnorm_dtype t = d->dtype, pt = clnorm_param_dtype(t), rt = clnorm_residual_dtype(d);
    const void *dy = a->p[CLNORM_ARG_DY], *gamma = a->p[CLNORM_ARG_GAMMA];
    const void *mean = a->p[CLNORM_ARG_MEAN], *rstd = a->p[CLNORM_ARG_RSTD];
    const void *ds = a->p[CLNORM_ARG_DSUM];
    void *dx = a->p[CLNORM_ARG_DX], *dgamma = a->p[CLNORM_ARG_DGAMMA];
    void *dbeta = a->p[CLNORM_ARG_DBETA];
    const void *beta = a->p[CLNORM_ARG_BETA];
    void *dscale = a->p[CLNORM_ARG_DSCALE], *dshift = a->p[CLNORM_ARG_DSHIFT];
    const int rms = !op->has_mean, global = (d->flags & CLNORM_USE_GLOBAL_STATS) != 0;
    const size_t T = d->samples ? d->rows / d->samples : 0;
    /* Sums of the parameter gradients in double, rounded once at the end: dgamma and dbeta
     * over all rows, dscale and dshift over the current sample's. */
    double *acc = NULL;
    if (dgamma || dbeta || dscale || dshift) {
        acc = calloc(4 * d->cols, sizeof *acc);
        if (!acc)
            return CLNORM_OUT_OF_MEMORY;
    }
    double *mod_acc = acc ? acc + 2 * d->cols : NULL;
    const double eps = clnorm_arith_eps(d);
    for (size_t row = 0; row < d->rows && (acc || dx); row++) {
        const row_src s = source(d, a, row);
        const clnorm_ref_mod md = clnorm_ref_mod_of(d, a, row);
        const size_t yo = row * d->y_stride;
        double K[2] = {0.0, 0.0}, m = 0.0, r, sc = 1.0;
        if (rstd) /* saved or global statistics: xhat = (v - mean) * rstd */
            given_stats(d, mean, rstd, rms, row, K, &m, &r, &sc);
        else
            row_stats(&s, d->cols, rms, eps, K, &m, &r, &sc);
        double sg = 0.0, sgx = 0.0;
        for (size_t j = 0; j < d->cols; j++) {
            const double dyv = clnorm_elem_load(t, dy, yo + j);
            const double dz = dyv * clnorm_ref_one_plus_scale(d, &md, j);
            const double gm = gamma ? clnorm_elem_load(pt, gamma, j) : 1.0;
            const double g = dz * gm;
            const double xh = (dev(&s, j, K, sc) - m) * r;
            sg += g;
            sgx += g * xh;
            if (acc) {
                acc[j] += dz * xh;
                acc[d->cols + j] += dz;
                const double z = xh * gm + (beta ? clnorm_elem_load(pt, beta, j) : 0.0);
                mod_acc[j] += dyv * z;
                mod_acc[d->cols + j] += dyv;
            }
        }
        if (acc && (row + 1) % T == 0) { /* the sample's last row: its dscale and dshift */
            const size_t b = row / T;
            for (size_t j = 0; j < d->cols; j++) {
                if (dscale)
                    clnorm_elem_store(pt, dscale, b * d->mod_stride + j, mod_acc[j]);
                if (dshift)
                    clnorm_elem_store(pt, dshift, b * d->mod_stride + j, mod_acc[d->cols + j]);
                mod_acc[j] = mod_acc[d->cols + j] = 0.0;
            }
        }
        if (!dx)
            continue;
        /* global statistics are constants: their terms are absent */
        const double mg = rms || global ? 0.0 : sg / (double)d->cols;
        const double mgx = global ? 0.0 : sgx / (double)d->cols;
        const double rs = r * sc;
        /* In place (dx is dy, x, the residual or dsum): each element is read before it is
         * written. */
        for (size_t j = 0; j < d->cols; j++) {
            const double g = clnorm_elem_load(t, dy, yo + j) *
                             clnorm_ref_one_plus_scale(d, &md, j) *
                             (gamma ? clnorm_elem_load(pt, gamma, j) : 1.0);
            const double xh = (dev(&s, j, K, sc) - m) * r;
            double v = rs * (g - mg - xh * mgx);
            if (ds)
                v += clnorm_elem_load(rt, ds, row * d->sum_stride + j);
            clnorm_elem_store(t, dx, s.xo + j, v);
        }
    }
    /* Samples of no rows (T = 0): their dscale and dshift are zeros. */
    for (size_t b = 0; T == 0 && (dscale || dshift) && b < d->samples; b++)
        for (size_t j = 0; j < d->cols; j++) {
            if (dscale)
                clnorm_elem_store(pt, dscale, b * d->mod_stride + j, 0.0);
            if (dshift)
                clnorm_elem_store(pt, dshift, b * d->mod_stride + j, 0.0);
        }
    for (size_t j = 0; acc && j < d->cols; j++) {
        if (dgamma)
            clnorm_elem_store(pt, dgamma, j, acc[j]);
        if (dbeta)
            clnorm_elem_store(pt, dbeta, j, acc[d->cols + j]);
    }
    free(acc);
    return CLNORM_OK;
}

clnorm_status clnorm_row_norm_ref(const clnorm_op *op, const clnorm_desc *d,
                                  clnorm_direction dir, const clnorm_host_ptrs *a)
{
    if (dir == CLNORM_FORWARD) {
        forward(op, d, a);
        return CLNORM_OK;
    }
    return backward(op, d, a);
}
