/*
 * The CPU reference of GroupNorm, forward and backward: the tests' oracle and the fallback of
 * a context without an OpenCL device. Every element read as double, exact two-pass
 * statistics per (sample, group) of the group shifted as the kernels shift it (the median of
 * its first three elements; in exact arithmetic any shift gives the same statistics, and the
 * same one the same NaN / Inf pattern), one rounding to the storage type at the end.
 *
 * Forward: z = xhat * gamma_c + beta_c, then the per-sample modulation (CLNORM_SCALE /
 * CLNORM_SHIFT; batch entry n is sample b = n / (N / B), its scale and shift rows b *
 * mod_stride) u = z * (1 + scale[b, c]) + shift[b, c], and y = u, or silu(u) = u * s(u) with
 * CLNORM_SILU (s the sigmoid: the SiLU comes after the modulation, as in a diffusion UNet's
 * scale-shift norm).
 *
 * Backward: du = dy * y'(u), with silu'(u) = s(u) * (1 + u * (1 - s(u))), and dz = du * (1 +
 * scale[b, c]). Within a group xhat is LayerNorm's over the group's elements, so with
 * g = dz * gamma_c:
 *   dx = rstd * (g - mean(g) - xhat * mean(g * xhat))   (means over the group),
 *   dgamma_c = sum over samples and positions of dz * xhat, dbeta_c = the same of dz,
 *   dscale[b, c] = sum over sample b's batch entries and positions of du * z, dshift[b, c]
 *   the same of du.
 * With precomputed statistics (CLNORM_USE_GLOBAL_STATS) mean and rstd (N, G) are inputs,
 * xhat = (x - mean) * rstd, and the backward treats them as constants: dx = rstd * g, with
 * no mean(g) and mean(g * xhat) terms (oneDNN's use_global_stats, the row kinds' rule).
 * Checked against finite differences and PyTorch's autograd in the tests.
 */
#include "../dtype.h"
#include "../op/op.h"
#include "ref_modulation.h"

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
    const int global = (d->flags & CLNORM_USE_GLOBAL_STATS) != 0;
    for (size_t n = 0; n < d->rows; n++) {
        const clnorm_ref_mod md = clnorm_ref_mod_of(d, a, n);
        for (size_t g = 0; g < d->groups; g++) {
            double K, m = 0.0, r;
            if (global) { /* precomputed: inputs, xhat = (x - mean) * rstd */
                K = clnorm_elem_load(pt, mean, n * d->groups + g);
                r = clnorm_elem_load(pt, rstd, n * d->groups + g);
            } else {
                group_stats(d, x, n, g, eps, &K, &m, &r);
                if (mean)
                    clnorm_elem_store(pt, mean, n * d->groups + g, K + m);
                if (rstd)
                    clnorm_elem_store(pt, rstd, n * d->groups + g, r);
            }
            /* In place (y is x): each element is read before it is written. */
            for (size_t c = g * cpg; c < (g + 1) * cpg; c++) {
                const double gam = gamma ? clnorm_elem_load(pt, gamma, c) : 1.0;
                const double bet = beta ? clnorm_elem_load(pt, beta, c) : 0.0;
                const double ops = clnorm_ref_one_plus_scale(d, &md, c);
                const double sh = clnorm_ref_shift(d, &md, c);
                for (size_t p = 0; p < d->spatial; p++) {
                    const double xh =
                        ((clnorm_elem_load(t, x, at(d, d->x_stride, n, c, p)) - K) - m) * r;
                    /* each term only where it exists: an unmodulated y is bit for bit
                     * the plain GroupNorm's (a zero's sign included) */
                    double u = xh;
                    if (gamma)
                        u *= gam;
                    if (beta)
                        u += bet;
                    if (md.scale)
                        u *= ops;
                    if (md.shift)
                        u += sh;
                    clnorm_elem_store(t, y, at(d, d->y_stride, n, c, p),
                                      silu ? u * sigmoid(u) : u);
                }
            }
        }
    }
}

/* A group's statistics (K, m, r) and the data one element's gradient terms are made of. */
typedef struct {
    const clnorm_desc *d;
    const void *x, *dy;
    double K, m, r;
} group_ctx;

/* One channel's parameters: gamma, beta, 1 + scale and shift of its sample. */
typedef struct {
    double gam, bet, ops, sh;
} chan_params;

static chan_params channel(const clnorm_desc *d, const clnorm_host_ptrs *a,
                           const clnorm_ref_mod *md, size_t c)
{
    const clnorm_dtype pt = clnorm_param_dtype(d->dtype);
    const void *gamma = a->p[CLNORM_ARG_GAMMA], *beta = a->p[CLNORM_ARG_BETA];
    chan_params cp = {gamma ? clnorm_elem_load(pt, gamma, c) : 1.0,
                      beta ? clnorm_elem_load(pt, beta, c) : 0.0,
                      clnorm_ref_one_plus_scale(d, md, c), clnorm_ref_shift(d, md, c)};
    return cp;
}

/* One element's gradient terms, given its group's statistics and its channel's parameters. */
typedef struct {
    double xh; /* xhat */
    double z;  /* xhat * gamma + beta (beta 0 where the backward is not given it: then z is
                  read by nothing) */
    double du; /* dy through the SiLU when there is one */
    double dz; /* du * (1 + scale) */
} elem_grad;

static elem_grad element(const group_ctx *gc, const chan_params *cp, size_t n, size_t c,
                         size_t p)
{
    const clnorm_desc *d = gc->d;
    elem_grad e;
    e.xh = ((clnorm_elem_load(d->dtype, gc->x, at(d, d->x_stride, n, c, p)) - gc->K) - gc->m) *
           gc->r;
    e.z = e.xh * cp->gam + cp->bet;
    e.du = clnorm_elem_load(d->dtype, gc->dy, at(d, d->y_stride, n, c, p));
    if (d->flags & CLNORM_SILU) {
        /* the SiLU is of u, after the modulation: the backward is given shift for it */
        const double u = e.z * cp->ops + cp->sh, s = sigmoid(u);
        e.du = e.du * s * (1.0 + u * (1.0 - s));
    }
    e.dz = e.du * cp->ops;
    return e;
}

/* Sums of the parameter gradients in double, rounded once at the end: dgamma and dbeta over
 * all batch entries (the first 2 C), dscale and dshift over the current sample's (the last
 * 2 C). */
typedef struct {
    double *sum;
    size_t cols;
} grad_acc;

/* Stores the current sample's dscale and dshift as sample b's, and restarts their sums. */
static void flush_sample(const clnorm_desc *d, const clnorm_host_ptrs *a, grad_acc *acc,
                         size_t b)
{
    const clnorm_dtype pt = clnorm_param_dtype(d->dtype);
    void *dscale = a->p[CLNORM_ARG_DSCALE], *dshift = a->p[CLNORM_ARG_DSHIFT];
    double *ms = acc->sum + 2 * acc->cols, *mh = ms + acc->cols;
    for (size_t c = 0; c < acc->cols; c++) {
        if (dscale)
            clnorm_elem_store(pt, dscale, b * d->mod_stride + c, ms[c]);
        if (dshift)
            clnorm_elem_store(pt, dshift, b * d->mod_stride + c, mh[c]);
        ms[c] = mh[c] = 0.0;
    }
}

/* Group (n, g): adds its terms to the parameter sums and writes its dx. */
static void backward_group(const clnorm_desc *d, const clnorm_host_ptrs *a,
                           const clnorm_ref_mod *md, grad_acc *acc, size_t n, size_t g)
{
    const clnorm_dtype t = d->dtype, pt = clnorm_param_dtype(t);
    const void *mean = a->p[CLNORM_ARG_MEAN], *rstd = a->p[CLNORM_ARG_RSTD];
    void *dx = a->p[CLNORM_ARG_DX];
    const size_t cpg = d->cols / d->groups, cnt = cpg * d->spatial, C = d->cols;
    group_ctx gc = {d, a->p[CLNORM_ARG_X], a->p[CLNORM_ARG_DY], 0.0, 0.0, 0.0};
    if (rstd) {
        gc.K = clnorm_elem_load(pt, mean, n * d->groups + g);
        gc.r = clnorm_elem_load(pt, rstd, n * d->groups + g);
    } else {
        group_stats(d, gc.x, n, g, clnorm_arith_eps(d), &gc.K, &gc.m, &gc.r);
    }
    double sg = 0.0, sgx = 0.0;
    for (size_t c = g * cpg; c < (g + 1) * cpg; c++) {
        const chan_params cp = channel(d, a, md, c);
        for (size_t p = 0; p < d->spatial; p++) {
            const elem_grad e = element(&gc, &cp, n, c, p);
            sg += e.dz * cp.gam;
            sgx += e.dz * cp.gam * e.xh;
            if (acc->sum) {
                acc->sum[c] += e.dz * e.xh;
                acc->sum[C + c] += e.dz;
                acc->sum[2 * C + c] += e.du * e.z;
                acc->sum[3 * C + c] += e.du;
            }
        }
    }
    if (!dx)
        return;
    /* precomputed statistics are constants: dx = rstd * g (as oneDNN's use_global_stats) */
    const int global = (d->flags & CLNORM_USE_GLOBAL_STATS) != 0;
    const double mg = global ? 0.0 : sg / (double)cnt, mgx = global ? 0.0 : sgx / (double)cnt;
    /* In place (dx is dy or x): each element is read before it is written. */
    for (size_t c = g * cpg; c < (g + 1) * cpg; c++) {
        const chan_params cp = channel(d, a, md, c);
        for (size_t p = 0; p < d->spatial; p++) {
            const elem_grad e = element(&gc, &cp, n, c, p);
            clnorm_elem_store(t, dx, at(d, d->x_stride, n, c, p),
                              gc.r * (e.dz * cp.gam - mg - e.xh * mgx));
        }
    }
}

static clnorm_status backward(const clnorm_desc *d, const clnorm_host_ptrs *a)
{
    const clnorm_dtype pt = clnorm_param_dtype(d->dtype);
    void *dgamma = a->p[CLNORM_ARG_DGAMMA], *dbeta = a->p[CLNORM_ARG_DBETA];
    const int mod_out = a->p[CLNORM_ARG_DSCALE] || a->p[CLNORM_ARG_DSHIFT];
    const size_t T = d->samples ? d->rows / d->samples : 0;
    grad_acc acc = {NULL, d->cols};
    if (dgamma || dbeta || mod_out) {
        acc.sum = calloc(4 * d->cols, sizeof *acc.sum);
        if (!acc.sum)
            return CLNORM_OUT_OF_MEMORY;
    }
    for (size_t n = 0; n < d->rows && (acc.sum || a->p[CLNORM_ARG_DX]); n++) {
        const clnorm_ref_mod md = clnorm_ref_mod_of(d, a, n);
        for (size_t g = 0; g < d->groups; g++)
            backward_group(d, a, &md, &acc, n, g);
        if (mod_out && (n + 1) % T == 0) /* the sample's last batch entry */
            flush_sample(d, a, &acc, n / T);
    }
    /* Samples of no batch entries (rows 0, T = 0): their dscale and dshift are zeros. */
    for (size_t b = 0; T == 0 && mod_out && b < d->samples; b++)
        flush_sample(d, a, &acc, b);
    for (size_t c = 0; acc.sum && c < d->cols; c++) {
        if (dgamma)
            clnorm_elem_store(pt, dgamma, c, acc.sum[c]);
        if (dbeta)
            clnorm_elem_store(pt, dbeta, c, acc.sum[d->cols + c]);
    }
    free(acc.sum);
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
