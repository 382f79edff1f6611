/*
 * test_cli_modulation.c - `clnorm run` and `clnorm grad` with the per-sample modulation
 * (--scale S.npy, --shift H.npy: conditional LayerNorm, DiT's adaLN) and with precomputed
 * statistics (--mean-input M.npy, --rstd-input R.npy: oneDNN's use_global_stats), against a
 * float64 computation of the formulas done here, independent of the library:
 *
 *   s = x (+ r),  sample b = row / T (T = rows / B, B = X's first dim)
 *   mean, rstd of s's row (RMSNorm: mean 0), or the given M and R
 *   xhat = (s - mean) * rstd,  z = xhat * gamma + beta,  y = z * (1 + S[b]) + H[b]
 *   dz = dy * (1 + S[b]),  g = dz * gamma
 *   dx = rstd * (g - mean(g) - xhat * mean(g * xhat))   (RMS: no mean(g); given M and R:
 *        dx = rstd * g, the statistics being constants)
 *   dgamma = sum of dz * xhat,  dbeta = sum of dz,  over all rows
 *   dscale[b] = sum of dy * z,  dshift[b] = sum of dy,  over sample b's rows
 *
 * LayerNorm, RMSNorm and the fused residual add, with and without gamma / beta, over one and
 * two normalized dims (the modulation sees them flattened), in float32, float16 and float64;
 * and every bad combination failing with one stderr line and no output file. Each run is made
 * on the default device and on the CPU reference (--cpu).
 */
#define _POSIX_C_SOURCE 200809L

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <clnorm.h>

#include "cli_test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const modes[2] = {NULL, "--cpu"}; /* the default device, the reference */

static const double EPS = 1e-5; /* the tool's default --eps */


/* ------------------------------------------------------------------------------------------
 * A problem: its files and the exact values they hold
 * ---------------------------------------------------------------------------------------- */
typedef struct {
    int ndim;
    size_t shape[4];
    int axes; /* normalized trailing dims */
    int rms, residual, gamma, beta, scale, shift;
    int global;    /* --mean-input / --rstd-input instead of computed statistics */
    npy_dtype xt;  /* the files of x, r and dy: NPY_F32, NPY_F16 or NPY_F64 (the storage) */
} mod_case;

typedef struct {
    size_t rows, cols, B, T, n;
    int lead;
    size_t mshape[2]; /* (B, C) */
    npy_dtype pt;     /* the parameter files' type: float64 for f64 storage, else float32 */
    double *x, *r, *g, *b, *s, *h, *m, *rs, *dy; /* NULL when the case has no such file */
    const char *xp, *rp, *gp, *bp, *sp, *hp, *mp, *rsp, *dyp;
} mod_problem;

/* n values, each rounded to the file type t and written to path with the given shape; the
 * returned doubles are exactly what the file holds (decoded independently of the library). */
static double *save_values(const char *path, npy_dtype t, int ndim, const size_t *shape,
                           const double *v, size_t n)
{
    double *exact = malloc((n ? n : 1) * sizeof *exact);
    void *buf = malloc((n ? n : 1) * sizeof(double));
    size_t i;
    assert_non_null(exact);
    assert_non_null(buf);
    for (i = 0; i < n; i++) {
        switch (t) {
        case NPY_F64:
            ((double *)buf)[i] = exact[i] = v[i];
            break;
        case NPY_F16: {
            const uint16_t h = clnorm_f32_to_f16((float)v[i]);
            ((uint16_t *)buf)[i] = h;
            exact[i] = half_value(h);
            break;
        }
        case NPY_U16:
        case NPY_F32:
            ((float *)buf)[i] = (float)v[i];
            exact[i] = (float)v[i];
            break;
        }
    }
    save_as(path, t, ndim, shape, buf);
    free(buf);
    return exact;
}

/* Rows with offsets and scales of their own (so rows' statistics differ), on a 2^-14 grid
 * below 64 in magnitude: x + r is then exact in float32, and the device normalizes exactly the
 * sum the double reference does. */
static double *make_rows_d(size_t rows, size_t cols)
{
    double *v = malloc((rows * cols > 0 ? rows * cols : 1) * sizeof *v);
    size_t i, j;
    assert_non_null(v);
    for (i = 0; i < rows; i++) {
        const double off = 4.0 * (2.0 * uniform01() - 1.0), sc = 0.5 + 2.0 * uniform01();
        for (j = 0; j < cols; j++)
            v[i * cols + j] = ldexp(rint(ldexp(off + sc * normal01(), 14)), -14);
    }
    return v;
}

static double *make_vec(size_t n, double center, double spread)
{
    double *v = malloc((n ? n : 1) * sizeof *v);
    size_t i;
    assert_non_null(v);
    for (i = 0; i < n; i++)
        v[i] = center + spread * normal01();
    return v;
}

/* Saves a generated vector and keeps the exact values. */
static double *saved(const char *path, npy_dtype t, int ndim, const size_t *shape, double *v,
                     size_t n)
{
    double *exact = save_values(path, t, ndim, shape, v, n);
    free(v);
    return exact;
}

/* The row statistics of s = x (+ r) in float64 (two passes). */
static void row_stats(const mod_case *c, const mod_problem *p, size_t i, double *mean,
                      double *rstd)
{
    double m = 0.0, v = 0.0;
    size_t j;
    for (j = 0; j < p->cols; j++)
        m += p->x[i * p->cols + j] + (p->r ? p->r[i * p->cols + j] : 0.0);
    m = c->rms ? 0.0 : m / (double)p->cols;
    for (j = 0; j < p->cols; j++) {
        const double d = p->x[i * p->cols + j] + (p->r ? p->r[i * p->cols + j] : 0.0) - m;
        v += d * d;
    }
    *mean = m;
    *rstd = 1.0 / sqrt(v / (double)p->cols + EPS);
}

static mod_problem make_problem(const mod_case *c)
{
    mod_problem p;
    size_t i;
    int k;
    memset(&p, 0, sizeof p);
    p.lead = c->ndim - c->axes;
    p.rows = p.cols = 1;
    for (k = 0; k < p.lead; k++)
        p.rows *= c->shape[k];
    for (k = p.lead; k < c->ndim; k++)
        p.cols *= c->shape[k];
    p.B = c->shape[0];
    p.T = p.B ? p.rows / p.B : 0;
    p.n = p.rows * p.cols;
    p.mshape[0] = p.B;
    p.mshape[1] = p.cols;
    p.pt = c->xt == NPY_F64 ? NPY_F64 : NPY_F32;
    p.xp = P("md_x.npy");
    p.rp = P("md_r.npy");
    p.gp = P("md_g.npy");
    p.bp = P("md_b.npy");
    p.sp = P("md_s.npy");
    p.hp = P("md_h.npy");
    p.mp = P("md_mi.npy");
    p.rsp = P("md_ri.npy");
    p.dyp = P("md_dy.npy");
    p.x = saved(p.xp, c->xt, c->ndim, c->shape, make_rows_d(p.rows, p.cols), p.n);
    if (c->residual)
        p.r = saved(p.rp, c->xt, c->ndim, c->shape, make_rows_d(p.rows, p.cols), p.n);
    p.dy = saved(p.dyp, c->xt, c->ndim, c->shape, make_vec(p.n, 0.0, 1.0), p.n);
    if (c->gamma)
        p.g = saved(p.gp, p.pt, c->axes, c->shape + p.lead, make_vec(p.cols, 1.0, 0.5), p.cols);
    if (c->beta)
        p.b = saved(p.bp, p.pt, c->axes, c->shape + p.lead, make_vec(p.cols, 0.0, 1.0), p.cols);
    if (c->scale)
        p.s = saved(p.sp, p.pt, 2, p.mshape, make_vec(p.B * p.cols, 0.0, 0.5), p.B * p.cols);
    if (c->shift)
        p.h = saved(p.hp, p.pt, 2, p.mshape, make_vec(p.B * p.cols, 0.0, 1.0), p.B * p.cols);
    if (c->global) {
        /* Near the rows' own statistics but not them, so that a tool which recomputed them
         * from X would fail the comparison. */
        double *m = make_vec(p.rows, 0.0, 1.0), *rs = make_vec(p.rows, 0.0, 1.0);
        for (i = 0; i < p.rows; i++) {
            double tm, trs;
            row_stats(c, &p, i, &tm, &trs);
            m[i] = c->rms ? 0.0 : tm + 0.3 * m[i];
            rs[i] = trs * (0.6 + 0.8 * uniform01());
        }
        if (!c->rms)
            p.m = save_values(p.mp, p.pt, p.lead, c->shape, m, p.rows);
        p.rs = save_values(p.rsp, p.pt, p.lead, c->shape, rs, p.rows);
        free(m);
        free(rs);
    }
    return p;
}

static void free_problem(mod_problem *p)
{
    free(p->x);
    free(p->r);
    free(p->g);
    free(p->b);
    free(p->s);
    free(p->h);
    free(p->m);
    free(p->rs);
    free(p->dy);
}

/* The statistics a row is normalized with: the given ones, or its own. */
static void stats_of(const mod_case *c, const mod_problem *p, size_t i, double *mean,
                     double *rstd)
{
    if (c->global) {
        *mean = p->m ? p->m[i] : 0.0;
        *rstd = p->rs[i];
    } else {
        row_stats(c, p, i, mean, rstd);
    }
}

/* ------------------------------------------------------------------------------------------
 * The float64 reference
 * ---------------------------------------------------------------------------------------- */
typedef struct {
    double *y, *mean, *rstd;
} fwd_ref;

typedef struct {
    double *dx, *dg, *db, *ds, *dh;
} bwd_ref;

static double *zeros(size_t n)
{
    double *v = calloc(n ? n : 1, sizeof *v);
    assert_non_null(v);
    return v;
}

static fwd_ref forward_ref(const mod_case *c, const mod_problem *p)
{
    fwd_ref f;
    size_t i, j;
    f.y = zeros(p->n);
    f.mean = zeros(p->rows);
    f.rstd = zeros(p->rows);
    for (i = 0; i < p->rows; i++) {
        const size_t b = i / p->T;
        double m, rs;
        stats_of(c, p, i, &m, &rs);
        f.mean[i] = m;
        f.rstd[i] = rs;
        for (j = 0; j < p->cols; j++) {
            const size_t e = i * p->cols + j, bj = b * p->cols + j;
            const double xhat = (p->x[e] + (p->r ? p->r[e] : 0.0) - m) * rs;
            const double z = xhat * (p->g ? p->g[j] : 1.0) + (p->b ? p->b[j] : 0.0);
            f.y[e] = z * (1.0 + (p->s ? p->s[bj] : 0.0)) + (p->h ? p->h[bj] : 0.0);
        }
    }
    return f;
}

static bwd_ref backward_ref(const mod_case *c, const mod_problem *p)
{
    bwd_ref r;
    size_t i, j;
    r.dx = zeros(p->n);
    r.dg = zeros(p->cols);
    r.db = zeros(p->cols);
    r.ds = zeros(p->B * p->cols);
    r.dh = zeros(p->B * p->cols);
    for (i = 0; i < p->rows; i++) {
        const size_t b = i / p->T;
        double m, rs, mg = 0.0, mgx = 0.0;
        stats_of(c, p, i, &m, &rs);
        for (j = 0; j < p->cols; j++) {
            const size_t e = i * p->cols + j, bj = b * p->cols + j;
            const double xhat = (p->x[e] + (p->r ? p->r[e] : 0.0) - m) * rs;
            const double gam = p->g ? p->g[j] : 1.0;
            const double z = xhat * gam + (p->b ? p->b[j] : 0.0);
            const double dz = p->dy[e] * (1.0 + (p->s ? p->s[bj] : 0.0));
            r.dg[j] += dz * xhat;
            r.db[j] += dz;
            r.ds[bj] += p->dy[e] * z;
            r.dh[bj] += p->dy[e];
            mg += dz * gam;
            mgx += dz * gam * xhat;
        }
        mg = c->rms ? 0.0 : mg / (double)p->cols;
        mgx /= (double)p->cols;
        for (j = 0; j < p->cols; j++) {
            const size_t e = i * p->cols + j, bj = b * p->cols + j;
            const double xhat = (p->x[e] + (p->r ? p->r[e] : 0.0) - m) * rs;
            const double g = p->dy[e] * (1.0 + (p->s ? p->s[bj] : 0.0)) * (p->g ? p->g[j] : 1.0);
            r.dx[e] = c->global ? rs * g : rs * (g - mg - xhat * mgx);
        }
    }
    return r;
}

static void free_fwd(fwd_ref *f)
{
    free(f->y);
    free(f->mean);
    free(f->rstd);
}

static void free_bwd(bwd_ref *r)
{
    free(r->dx);
    free(r->dg);
    free(r->db);
    free(r->ds);
    free(r->dh);
}

/* An output of X's shape against want: float32 and float64 to a fraction of the largest
 * value, float16 to one unit in the last place of each value (the rounding of a float32
 * result) plus the float32 error. */
static void check_like_x(const mod_case *c, const char *path, const double *want, size_t n)
{
    double scale = 1.0;
    size_t i;
    for (i = 0; i < n; i++)
        if (fabs(want[i]) > scale)
            scale = fabs(want[i]);
    if (c->xt == NPY_F16) {
        check_output_ulp(path, NPY_F16, c->ndim, c->shape, want, 1e-5 * scale);
    } else {
        double *got = load_values(path, c->xt, c->ndim, c->shape);
        check_max_err(path, got, want, n, c->xt == NPY_F64 ? 1e-12 : 1e-5);
        free(got);
    }
}

/* A parameter-typed output (a sum over rows) against want, by the norm of the error. */
static void check_param(const mod_problem *p, const char *path, int ndim, const size_t *shape,
                        const double *want, size_t n)
{
    double *got = load_values(path, p->pt, ndim, shape);
    check_norm_err(path, got, want, n, p->pt == NPY_F64 ? 1e-12 : 1e-5);
    free(got);
}

/* ------------------------------------------------------------------------------------------
 * run
 * ---------------------------------------------------------------------------------------- */
static void check_run(const mod_case *c)
{
    mod_problem p = make_problem(c);
    fwd_ref want = forward_ref(c, &p);
    const char *yp = P("md_y.npy"), *mo = P("md_mo.npy"), *ro = P("md_ro.npy");
    char axes[8];
    int m;
    snprintf(axes, sizeof axes, "%d", c->axes);
    for (m = 0; m < 2; m++) {
        argv_list l = {{NULL}, 0};
        const int save_mean = !c->global && !c->rms, save_rstd = !c->global;
        rm(yp, mo, ro, NULL);
        add(&l, "run");
        add_opt(&l, "--input", p.xp, 1);
        add_opt(&l, "--output", yp, 1);
        add_opt(&l, "--axes", axes, 1);
        add_opt(&l, "--residual", p.rp, c->residual);
        add_opt(&l, "--gamma", p.gp, c->gamma);
        add_opt(&l, "--beta", p.bp, c->beta);
        add_opt(&l, "--scale", p.sp, c->scale);
        add_opt(&l, "--shift", p.hp, c->shift);
        add_opt(&l, "--mean-input", p.mp, c->global && !c->rms);
        add_opt(&l, "--rstd-input", p.rsp, c->global);
        /* the saved statistics are the normalization's, untouched by the modulation */
        add_opt(&l, "--mean", mo, save_mean);
        add_opt(&l, "--rstd", ro, save_rstd);
        add(&l, c->rms ? "--rms" : NULL);
        add(&l, modes[m]);
        expect_ok(cli_v(l.a));
        check_like_x(c, yp, want.y, p.n);
        if (save_mean)
            check_param(&p, mo, p.lead, c->shape, want.mean, p.rows);
        if (save_rstd)
            check_param(&p, ro, p.lead, c->shape, want.rstd, p.rows);
    }
    free_fwd(&want);
    free_problem(&p);
}

/* LayerNorm of x (B, T, C), every parameter, on one and two normalized dims. */
static void test_run_layer(void **state)
{
    const mod_case full = {3, {3, 4, 16}, 1, 0, 0, 1, 1, 1, 1, 0, NPY_F32};
    const mod_case axes2 = {4, {2, 3, 4, 5}, 2, 0, 0, 0, 0, 1, 0, 0, NPY_F32};
    const mod_case shift_only = {3, {4, 2, 16}, 1, 0, 0, 0, 1, 0, 1, 0, NPY_F32};
    const mod_case t1 = {2, {5, 16}, 1, 0, 0, 1, 0, 1, 1, 0, NPY_F32}; /* one row a sample */
    (void)state;
    check_run(&full);
    check_run(&axes2);
    check_run(&shift_only);
    check_run(&t1);
}

static void test_run_rms_and_add(void **state)
{
    const mod_case rms = {3, {2, 3, 16}, 1, 1, 0, 1, 0, 1, 1, 0, NPY_F32};
    const mod_case add_layer = {3, {2, 3, 16}, 1, 0, 1, 1, 1, 1, 1, 0, NPY_F32};
    const mod_case add_rms = {3, {3, 2, 16}, 1, 1, 1, 0, 0, 0, 1, 0, NPY_F32};
    (void)state;
    check_run(&rms);
    check_run(&add_layer);
    check_run(&add_rms);
}

/* float16 storage with float32 S and H; float64 storage with float64 S and H. */
static void test_run_dtypes(void **state)
{
    const mod_case f16 = {3, {2, 3, 16}, 1, 0, 0, 1, 1, 1, 1, 0, NPY_F16};
    const mod_case f64 = {3, {2, 3, 16}, 1, 0, 0, 1, 1, 1, 1, 0, NPY_F64};
    (void)state;
    check_run(&f16);
    check_run(&f64);
}

static void test_run_global_stats(void **state)
{
    const mod_case layer = {3, {2, 3, 16}, 1, 0, 0, 1, 1, 0, 0, 1, NPY_F32};
    const mod_case layer_mod = {3, {2, 3, 16}, 1, 0, 0, 1, 1, 1, 1, 1, NPY_F32};
    const mod_case rms = {4, {2, 3, 4, 4}, 2, 1, 0, 1, 0, 0, 0, 1, NPY_F32};
    const mod_case add_layer = {2, {6, 16}, 1, 0, 1, 0, 1, 0, 0, 1, NPY_F32};
    (void)state;
    check_run(&layer);
    check_run(&layer_mod);
    check_run(&rms);
    check_run(&add_layer);
}

/* ------------------------------------------------------------------------------------------
 * grad
 * ---------------------------------------------------------------------------------------- */

/* Runs grad for every gradient the case has (dx always; dgamma, dbeta, dscale, dshift when
 * their parameter is given) and checks each. only_dshift: ask for dshift alone. */
static void check_grad(const mod_case *c, int only_dshift)
{
    mod_problem p = make_problem(c);
    bwd_ref want = backward_ref(c, &p);
    const char *dxp = P("md_dx.npy"), *dgp = P("md_dg.npy"), *dbp = P("md_db.npy"),
               *dsp = P("md_ds.npy"), *dhp = P("md_dh.npy");
    const int dx = !only_dshift, dg = c->gamma && !only_dshift, db = c->beta && !only_dshift,
              ds = c->scale && !only_dshift, dh = c->shift;
    char axes[8];
    int m;
    snprintf(axes, sizeof axes, "%d", c->axes);
    for (m = 0; m < 2; m++) {
        argv_list l = {{NULL}, 0};
        rm(dxp, dgp, dbp, dsp, dhp, NULL);
        add(&l, "grad");
        add_opt(&l, "--input", p.xp, 1);
        add_opt(&l, "--grad-output", p.dyp, 1);
        add_opt(&l, "--axes", axes, 1);
        add_opt(&l, "--residual", p.rp, c->residual);
        add_opt(&l, "--gamma", p.gp, c->gamma);
        add_opt(&l, "--beta", p.bp, c->beta);
        add_opt(&l, "--scale", p.sp, c->scale);
        add_opt(&l, "--shift", p.hp, c->shift);
        add_opt(&l, "--mean-input", p.mp, c->global && !c->rms);
        add_opt(&l, "--rstd-input", p.rsp, c->global);
        add_opt(&l, "--grad-input", dxp, dx);
        add_opt(&l, "--grad-gamma", dgp, dg);
        add_opt(&l, "--grad-beta", dbp, db);
        add_opt(&l, "--grad-scale", dsp, ds);
        add_opt(&l, "--grad-shift", dhp, dh);
        add(&l, c->rms ? "--rms" : NULL);
        add(&l, modes[m]);
        expect_ok(cli_v(l.a));
        if (dx)
            check_like_x(c, dxp, want.dx, p.n);
        if (dg)
            check_param(&p, dgp, c->axes, c->shape + p.lead, want.dg, p.cols);
        if (db)
            check_param(&p, dbp, c->axes, c->shape + p.lead, want.db, p.cols);
        if (ds)
            check_param(&p, dsp, 2, p.mshape, want.ds, p.B * p.cols);
        if (dh)
            check_param(&p, dhp, 2, p.mshape, want.dh, p.B * p.cols);
        assert_int_equal(file_exists(dxp), dx);
        assert_int_equal(file_exists(dgp), dg);
        assert_int_equal(file_exists(dbp), db);
        assert_int_equal(file_exists(dsp), ds);
        assert_int_equal(file_exists(dhp), dh);
    }
    free_bwd(&want);
    free_problem(&p);
}

static void test_grad_layer(void **state)
{
    const mod_case full = {3, {3, 4, 16}, 1, 0, 0, 1, 1, 1, 1, 0, NPY_F32};
    const mod_case bare = {3, {2, 3, 16}, 1, 0, 0, 0, 0, 1, 0, 0, NPY_F32};
    const mod_case axes2 = {4, {2, 3, 4, 4}, 2, 0, 0, 1, 1, 1, 1, 0, NPY_F32};
    (void)state;
    check_grad(&full, 0);
    check_grad(&bare, 0);
    check_grad(&axes2, 0);
    check_grad(&full, 1); /* dshift alone */
}

static void test_grad_rms_and_add(void **state)
{
    const mod_case rms = {3, {2, 3, 16}, 1, 1, 0, 1, 0, 1, 1, 0, NPY_F32};
    const mod_case add_rms = {3, {3, 2, 16}, 1, 1, 1, 1, 0, 1, 0, 0, NPY_F32};
    const mod_case add_layer = {3, {2, 3, 16}, 1, 0, 1, 1, 1, 1, 1, 0, NPY_F32};
    (void)state;
    check_grad(&rms, 0);
    check_grad(&add_rms, 0);
    check_grad(&add_layer, 0);
}

static void test_grad_f16(void **state)
{
    const mod_case f16 = {3, {2, 3, 16}, 1, 0, 0, 1, 1, 1, 1, 0, NPY_F16};
    (void)state;
    check_grad(&f16, 0);
}

static void test_grad_global_stats(void **state)
{
    const mod_case layer = {3, {2, 3, 16}, 1, 0, 0, 1, 1, 0, 0, 1, NPY_F32};
    const mod_case layer_mod = {3, {2, 3, 16}, 1, 0, 0, 1, 1, 1, 1, 1, NPY_F32};
    const mod_case rms = {3, {2, 3, 16}, 1, 1, 0, 1, 0, 1, 0, 1, NPY_F32};
    (void)state;
    check_grad(&layer, 0);
    check_grad(&layer_mod, 0);
    check_grad(&rms, 0);
}

/* Empty batches: no samples (B = 0, S and H of (0, C)) and samples without rows (T = 0): y is
 * empty, dscale and dshift (and dgamma) are zeros (sums over no rows). */
static void test_modulation_empty_batch(void **state)
{
    const size_t x0[3] = {0, 3, 8}, s0[2] = {0, 8}, xt0[3] = {2, 0, 8}, s2[2] = {2, 8},
                 c8[1] = {8};
    const char *x0p = P("me_x0.npy"), *s0p = P("me_s0.npy"), *xt0p = P("me_xt0.npy"),
               *s2p = P("me_s2.npy"), *gp = P("me_g.npy"), *yp = P("me_y.npy"),
               *dxp = P("me_dx.npy"), *dsp = P("me_ds.npy"), *dhp = P("me_dh.npy"),
               *dgp = P("me_dg.npy");
    const double zero[16] = {0};
    float v[16];
    size_t i;
    int m;
    (void)state;
    for (i = 0; i < 16; i++)
        v[i] = 0.25f * (float)i - 1.0f;
    save_f32(x0p, 3, x0, v);
    save_f32(s0p, 2, s0, v);
    save_f32(xt0p, 3, xt0, v);
    save_f32(s2p, 2, s2, v);
    save_f32(gp, 1, c8, v);
    for (m = 0; m < 2; m++) {
        rm(yp, dxp, dsp, dhp, dgp, NULL);
        expect_ok(cli("run", "--input", x0p, "--output", yp, "--scale", s0p, "--shift", s0p,
                      modes[m], NULL));
        check_output(yp, 3, x0, NULL, 0.0, 0.0);
        expect_ok(cli("grad", "--input", x0p, "--grad-output", x0p, "--scale", s0p, "--shift",
                      s0p, "--grad-input", dxp, "--grad-scale", dsp, "--grad-shift", dhp,
                      modes[m], NULL));
        check_output(dxp, 3, x0, NULL, 0.0, 0.0);
        check_output(dsp, 2, s0, NULL, 0.0, 0.0);
        check_output(dhp, 2, s0, NULL, 0.0, 0.0);
        rm(yp, dxp, dsp, dhp, NULL);
        expect_ok(cli("run", "--input", xt0p, "--output", yp, "--scale", s2p, modes[m], NULL));
        check_output(yp, 3, xt0, NULL, 0.0, 0.0);
        expect_ok(cli("grad", "--input", xt0p, "--grad-output", xt0p, "--scale", s2p,
                      "--shift", s2p, "--gamma", gp, "--grad-scale", dsp, "--grad-shift", dhp,
                      "--grad-gamma", dgp, modes[m], NULL));
        check_output(dsp, 2, s2, zero, 0.0, 0.0);
        check_output(dhp, 2, s2, zero, 0.0, 0.0);
        check_output(dgp, 1, c8, zero, 0.0, 0.0);
    }
}

/* ------------------------------------------------------------------------------------------
 * Help, and bad combinations: one stderr line, a non-zero exit, no output file.
 * ---------------------------------------------------------------------------------------- */
static void test_modulation_help(void **state)
{
    (void)state;
    expect_ok(cli("run", "--help", NULL));
    assert_non_null(strstr(g_out, "--scale SCALE.npy"));
    assert_non_null(strstr(g_out, "--shift SHIFT.npy"));
    assert_non_null(strstr(g_out, "--mean-input MEAN.npy"));
    assert_non_null(strstr(g_out, "--rstd-input RSTD.npy"));
    expect_ok(cli("grad", "--help", NULL));
    assert_non_null(strstr(g_out, "--grad-scale"));
    assert_non_null(strstr(g_out, "--grad-shift"));
    assert_non_null(strstr(g_out, "--mean-input MEAN.npy"));
}

typedef struct {
    /* inputs: x (2, 3, 8), and files of the right and of wrong shapes or types */
    const char *x, *x1d, *g, *dy, *s, *s_b3, *s_c9, *s_3d, *s_flat, *s_u16, *m, *m32, *m_flat,
        *m_u16;
    /* outputs, none of which may appear */
    const char *y, *mo, *ro, *dx, *dg, *ds, *dh;
} bad_files;

static bad_files prepare(void)
{
    bad_files f;
    const size_t sx[3] = {2, 3, 8}, s1[1] = {8}, s28[2] = {2, 8}, s38[2] = {3, 8},
                 s29[2] = {2, 9}, s23[2] = {2, 3}, s32[2] = {3, 2}, s6[1] = {6}, s16[1] = {16};
    float v[64];
    uint16_t u[64];
    size_t i;
    for (i = 0; i < 64; i++) {
        v[i] = (float)(i % 7) - 3.0f;
        u[i] = (uint16_t)(0x3c00u + i);
    }
    f.x = P("mb_x.npy");
    f.x1d = P("mb_x1d.npy");
    f.g = P("mb_g.npy");
    f.dy = P("mb_dy.npy");
    f.s = P("mb_s.npy");
    f.s_b3 = P("mb_s_b3.npy");
    f.s_c9 = P("mb_s_c9.npy");
    f.s_3d = P("mb_s_3d.npy");
    f.s_flat = P("mb_s_flat.npy");
    f.s_u16 = P("mb_s_u16.npy");
    f.m = P("mb_m.npy");
    f.m32 = P("mb_m32.npy");
    f.m_flat = P("mb_m_flat.npy");
    f.m_u16 = P("mb_m_u16.npy");
    f.y = P("mb_y.npy");
    f.mo = P("mb_mo.npy");
    f.ro = P("mb_ro.npy");
    f.dx = P("mb_dx.npy");
    f.dg = P("mb_dg.npy");
    f.ds = P("mb_ds.npy");
    f.dh = P("mb_dh.npy");
    save_f32(f.x, 3, sx, v);
    save_f32(f.x1d, 1, s1, v);
    save_f32(f.g, 1, s1, v);
    save_f32(f.dy, 3, sx, v);
    save_f32(f.s, 2, s28, v);
    save_f32(f.s_b3, 2, s38, v);
    save_f32(f.s_c9, 2, s29, v);
    save_f32(f.s_3d, 3, sx, v);
    save_f32(f.s_flat, 1, s16, v);
    save_as(f.s_u16, NPY_U16, 2, s28, u);
    save_f32(f.m, 2, s23, v);
    save_f32(f.m32, 2, s32, v);
    save_f32(f.m_flat, 1, s6, v);
    save_as(f.m_u16, NPY_U16, 2, s23, u);
    rm(f.y, f.mo, f.ro, f.dx, f.dg, f.ds, f.dh, NULL);
    return f;
}

/* The CLI fails as expected (exit `code`, one line with needle) and writes no output. */
#define MOD_FAIL(code, needle, ...)                                                          \
    do {                                                                                     \
        int rc_ = cli(__VA_ARGS__, NULL);                                                    \
        expect_one_error_line(rc_, needle);                                                  \
        assert_int_equal(rc_, code);                                                         \
        if (file_exists(f.y) || file_exists(f.mo) || file_exists(f.ro) ||                    \
            file_exists(f.dx) || file_exists(f.dg) || file_exists(f.ds) ||                   \
            file_exists(f.dh))                                                               \
            fail_msg("an output file was created (stderr: %s)", g_err);                      \
    } while (0)

static void test_modulation_run_refusals(void **state)
{
    bad_files f = prepare();
    (void)state;
    /* Files (exit 1): S and H not (B, C), B not X's first dim, no sample dim, a wrong type. */
    MOD_FAIL(1, "scale", "run", "--input", f.x, "--output", f.y, "--scale", f.s_b3);
    MOD_FAIL(1, "has shape (3, 8), expected (2, 8) ((B, C): B the first dim of input", "run",
             "--input", f.x, "--output", f.y, "--scale", f.s_b3, "--cpu");
    MOD_FAIL(1, "expected (2, 8)", "run", "--input", f.x, "--output", f.y, "--scale", f.s_c9,
             "--mean", f.mo, "--rstd", f.ro);
    MOD_FAIL(1, "expected (2, 8)", "run", "--input", f.x, "--output", f.y, "--scale", f.s_3d);
    MOD_FAIL(1, "expected (2, 8)", "run", "--input", f.x, "--output", f.y, "--shift",
             f.s_flat);
    MOD_FAIL(1, "shift", "run", "--input", f.x, "--output", f.y, "--scale", f.s, "--shift",
             f.s_b3, "--gamma", f.g, "--rms");
    /* --axes 2: C is 24, so a (2, 8) S is wrong, named with the flattened (2, 24) */
    MOD_FAIL(1, "expected (2, 24)", "run", "--input", f.x, "--output", f.y, "--axes", "2",
             "--scale", f.s);
    MOD_FAIL(1, "needs the samples as X's first dim", "run", "--input", f.x1d, "--output",
             f.y, "--scale", f.s);
    MOD_FAIL(1, "needs the samples as X's first dim", "run", "--input", f.x, "--output", f.y,
             "--axes", "3", "--shift", f.s);
    MOD_FAIL(1, "uint16", "run", "--input", f.x, "--output", f.y, "--scale", f.s_u16);
    MOD_FAIL(1, "uint16", "run", "--input", f.x, "--output", f.y, "--residual", f.x, "--shift",
             f.s_u16, "--sum-output", f.mo);
    MOD_FAIL(1, "missing_s.npy", "run", "--input", f.x, "--output", f.y, "--scale",
             P("missing_s.npy"));
    /* Precomputed statistics of the wrong shape or type (exit 1). */
    MOD_FAIL(1, "mean-input", "run", "--input", f.x, "--output", f.y, "--mean-input", f.m32,
             "--rstd-input", f.m);
    MOD_FAIL(1, "expected (2, 3) (the leading dims of input", "run", "--input", f.x,
             "--output", f.y, "--mean-input", f.m, "--rstd-input", f.m_flat);
    MOD_FAIL(1, "expected (2, 3)", "run", "--input", f.x, "--output", f.y, "--rms",
             "--rstd-input", f.m32, "--cpu");
    MOD_FAIL(1, "expected (2,)", "run", "--input", f.x, "--output", f.y, "--axes", "2",
             "--mean-input", f.m, "--rstd-input", f.m);
    MOD_FAIL(1, "uint16", "run", "--input", f.x, "--output", f.y, "--mean-input", f.m_u16,
             "--rstd-input", f.m);
    /* With --groups S and H are (B, C) of the channels (3 here), not of the last dim. */
    MOD_FAIL(1, "expected (B, 3)", "run", "--groups", "1", "--input", f.x, "--output", f.y,
             "--scale", f.s);
    MOD_FAIL(1, "expected (B, 3)", "run", "--groups", "1", "--input", f.x, "--output", f.y,
             "--shift", f.s);
    /* Usage (exit 2): options that exclude or need each other. */
    /* With --groups mean and rstd are (N, G): (2, 1) here, not the leading dims (2, 3). */
    MOD_FAIL(1, "expected (2, 1)", "run", "--groups", "1", "--input", f.x, "--output", f.y,
             "--mean-input", f.m, "--rstd-input", f.m);
    MOD_FAIL(2, "--mean-input cannot be used with --rms", "run", "--input", f.x, "--output",
             f.y, "--rms", "--mean-input", f.m, "--rstd-input", f.m);
    MOD_FAIL(2, "--mean-input needs --rstd-input", "run", "--input", f.x, "--output", f.y,
             "--mean-input", f.m);
    MOD_FAIL(2, "--rstd-input needs --mean-input", "run", "--input", f.x, "--output", f.y,
             "--rstd-input", f.m, "--residual", f.x);
    MOD_FAIL(2, "--mean-input and --mean exclude each other", "run", "--input", f.x,
             "--output", f.y, "--mean-input", f.m, "--rstd-input", f.m, "--mean", f.mo);
    MOD_FAIL(2, "--mean-input and --rstd exclude each other", "run", "--input", f.x,
             "--output", f.y, "--mean-input", f.m, "--rstd-input", f.m, "--rstd", f.ro);
    MOD_FAIL(2, "--rstd-input and --rstd exclude each other", "run", "--input", f.x,
             "--output", f.y, "--rms", "--rstd-input", f.m, "--rstd", f.ro);
    MOD_FAIL(2, "--scale given more than once", "run", "--input", f.x, "--output", f.y,
             "--scale", f.s, "--scale", f.s);
    MOD_FAIL(2, "--shift needs a value", "run", "--input", f.x, "--output", f.y, "--shift");
    MOD_FAIL(2, "unknown option '--grad-scale'", "run", "--input", f.x, "--output", f.y,
             "--scale", f.s, "--grad-scale", f.ds);
}

static void test_modulation_grad_refusals(void **state)
{
    bad_files f = prepare();
    (void)state;
    /* Usage (exit 2). */
    MOD_FAIL(2, "--grad-scale needs --scale", "grad", "--input", f.x, "--grad-output", f.dy,
             "--grad-scale", f.ds);
    MOD_FAIL(2, "--grad-shift needs --shift", "grad", "--input", f.x, "--grad-output", f.dy,
             "--scale", f.s, "--grad-input", f.dx, "--grad-shift", f.dh);
    MOD_FAIL(2, "same file", "grad", "--input", f.x, "--grad-output", f.dy, "--scale", f.s,
             "--shift", f.s, "--grad-scale", f.ds, "--grad-shift", f.ds);
    MOD_FAIL(2, "grad writes nothing", "grad", "--input", f.x, "--grad-output", f.dy,
             "--scale", f.s, "--shift", f.s);
    MOD_FAIL(2, "--mean-input and --mean exclude each other", "grad", "--input", f.x,
             "--grad-output", f.dy, "--grad-input", f.dx, "--mean-input", f.m, "--rstd-input",
             f.m, "--mean", f.m, "--rstd", f.m);
    MOD_FAIL(2, "--rstd-input and --rstd exclude each other", "grad", "--input", f.x,
             "--grad-output", f.dy, "--grad-input", f.dx, "--rms", "--rstd-input", f.m,
             "--rstd", f.m);
    MOD_FAIL(2, "--mean-input cannot be used with --rms", "grad", "--input", f.x,
             "--grad-output", f.dy, "--grad-input", f.dx, "--rms", "--mean-input", f.m,
             "--rstd-input", f.m);
    MOD_FAIL(2, "--rstd-input needs --mean-input", "grad", "--input", f.x, "--grad-output",
             f.dy, "--grad-input", f.dx, "--rstd-input", f.m);
    /* Files (exit 1): S, H (read for its shape although the backward does not use it), the
     * statistics. */
    MOD_FAIL(1, "expected (2, 8)", "grad", "--input", f.x, "--grad-output", f.dy, "--scale",
             f.s_b3, "--grad-scale", f.ds, "--grad-input", f.dx);
    MOD_FAIL(1, "expected (2, 8)", "grad", "--input", f.x, "--grad-output", f.dy, "--scale",
             f.s, "--shift", f.s_c9, "--grad-shift", f.dh, "--grad-scale", f.ds);
    MOD_FAIL(1, "uint16", "grad", "--input", f.x, "--grad-output", f.dy, "--scale", f.s_u16,
             "--grad-input", f.dx, "--cpu");
    MOD_FAIL(1, "needs the samples as X's first dim", "grad", "--input", f.x1d,
             "--grad-output", f.x1d, "--scale", f.s, "--grad-scale", f.ds);
    MOD_FAIL(1, "expected (2, 3)", "grad", "--input", f.x, "--grad-output", f.dy,
             "--grad-input", f.dx, "--mean-input", f.m32, "--rstd-input", f.m);
    MOD_FAIL(1, "expected (2, 3)", "grad", "--input", f.x, "--grad-output", f.dy,
             "--grad-input", f.dx, "--gamma", f.g, "--grad-gamma", f.dg, "--rms",
             "--rstd-input", f.m_flat);
    MOD_FAIL(1, "uint16", "grad", "--input", f.x, "--grad-output", f.dy, "--grad-input", f.dx,
             "--mean-input", f.m, "--rstd-input", f.m_u16);
    MOD_FAIL(1, "expected (2, 3, 8)", "grad", "--input", f.x, "--grad-output", f.s,
             "--scale", f.s, "--grad-scale", f.ds);
    MOD_FAIL(1, "expected (B, 3)", "grad", "--groups", "1", "--input", f.x, "--grad-output",
             f.dy, "--scale", f.s, "--grad-scale", f.ds);
}

int cli_modulation_tests(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_run_layer),
        cmocka_unit_test(test_run_rms_and_add),
        cmocka_unit_test(test_run_dtypes),
        cmocka_unit_test(test_run_global_stats),
        cmocka_unit_test(test_grad_layer),
        cmocka_unit_test(test_grad_rms_and_add),
        cmocka_unit_test(test_grad_f16),
        cmocka_unit_test(test_grad_global_stats),
        cmocka_unit_test(test_modulation_empty_batch),
        cmocka_unit_test(test_modulation_help),
        cmocka_unit_test(test_modulation_run_refusals),
        cmocka_unit_test(test_modulation_grad_refusals),
    };
    return cmocka_run_group_tests_name("cli_modulation", tests, NULL, NULL);
}
