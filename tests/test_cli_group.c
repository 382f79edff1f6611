/*
 * test_cli_group.c - `clnorm run` and `clnorm grad` with --groups (GroupNorm, CLNORM_GROUP):
 * y (and the saved mean and rstd, (N, G)) in NCHW and NHWC, with and without the fused SiLU,
 * gamma and beta, in float32 and in bfloat16 storage, and dx, dgamma and dbeta (statistics
 * recomputed, or the forward's read back with --mean / --rstd), each against the library's
 * CPU reference (clnorm_ref_execute) run here on the same description and the same inputs
 * rounded as the tool rounds them; `grad --mean/--rstd` for LayerNorm too; the per-sample
 * modulation (--scale / --shift, with and without the SiLU after it, B = N and B < N, float32
 * and float64) against a float64 computation of its formulas done here; and every bad
 * combination failing cleanly with no output file.
 *
 * Each run is made on the default device and on the CPU reference (--cpu). The shapes are
 * small and the device cases keep to float32 and one bf16 forward per layout, so that few
 * kernel programs are built (each costs seconds on PoCL).
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


/* ------------------------------------------------------------------------------------------
 * A GroupNorm problem: x (and dy) written as float32, rounded to the storage as the tool
 * rounds them (--dtype bf16: to nearest even); float32 gamma and beta per channel.
 * ---------------------------------------------------------------------------------------- */
typedef struct {
    int ndim;
    size_t shape[4];
    size_t groups;
    int nhwc, silu, gamma, beta, stats;
    int bf16; /* --dtype bf16 (the output files hold bfloat16 bits) */
} gn_case;

typedef struct {
    clnorm_desc d; /* the description the tool must build */
    size_t n;      /* elements of x */
    float *x, *g, *b;
    void *xs;      /* x in the storage: floats, or bfloat16 bits */
    char groups[24];
    const char *xp, *gp, *bp;
} gn_problem;

/* Samples with offsets and scales of their own, so that the groups' statistics differ. */
static float *make_input(size_t rows, size_t len)
{
    float *x = malloc((rows * len > 0 ? rows * len : 1) * sizeof *x);
    size_t r, i;
    assert_non_null(x);
    for (r = 0; r < rows; r++) {
        const double off = 4.0 * (2.0 * uniform01() - 1.0), sc = 0.5 + 2.0 * uniform01();
        for (i = 0; i < len; i++)
            x[r * len + i] = (float)(off + sc * normal01());
    }
    return x;
}

/* n floats in the storage of d (a new buffer). */
static void *to_storage(const clnorm_desc *d, const float *f, size_t n)
{
    void *s = malloc((n ? n : 1) * sizeof(float));
    size_t i;
    assert_non_null(s);
    for (i = 0; i < n; i++) {
        if (d->dtype == CLNORM_BF16)
            ((uint16_t *)s)[i] = clnorm_f32_to_bf16(f[i]);
        else
            ((float *)s)[i] = f[i];
    }
    return s;
}

/* n storage values of d as doubles (a new buffer), decoded independently of the library. */
static double *from_storage(const clnorm_desc *d, const void *s, size_t n)
{
    double *v = malloc((n ? n : 1) * sizeof *v);
    size_t i;
    assert_non_null(v);
    for (i = 0; i < n; i++)
        v[i] = d->dtype == CLNORM_BF16 ? bf16_value(((const uint16_t *)s)[i])
                                       : (double)((const float *)s)[i];
    return v;
}

static gn_problem make_problem(const gn_case *c)
{
    gn_problem p;
    const size_t N = c->shape[0], C = c->nhwc ? c->shape[c->ndim - 1] : c->shape[1];
    size_t spatial = 1, cshape[1];
    int k;
    memset(&p, 0, sizeof p);
    for (k = 1; k < c->ndim; k++)
        if (k != (c->nhwc ? c->ndim - 1 : 1))
            spatial *= c->shape[k];
    clnorm_desc_init(&p.d, CLNORM_GROUP, N, C);
    p.d.groups = c->groups;
    p.d.spatial = spatial;
    p.d.layout = c->nhwc ? CLNORM_NHWC : CLNORM_NCHW;
    p.d.dtype = c->bf16 ? CLNORM_BF16 : CLNORM_F32;
    p.d.flags = (c->gamma ? 0u : CLNORM_NO_GAMMA) | (c->beta ? 0u : CLNORM_NO_BETA) |
                (c->silu ? CLNORM_SILU : 0u);
    p.n = N * C * spatial;
    p.x = make_input(N, C * spatial);
    p.xs = to_storage(&p.d, p.x, p.n);
    p.g = make_params(C, 1.0, 0.5);
    p.b = make_params(C, 0.0, 1.0);
    snprintf(p.groups, sizeof p.groups, "%zu", c->groups);
    p.xp = P("gn_x.npy");
    p.gp = P("gn_g.npy");
    p.bp = P("gn_b.npy");
    cshape[0] = C;
    save_f32(p.xp, c->ndim, c->shape, p.x);
    save_f32(p.gp, 1, cshape, p.g);
    save_f32(p.bp, 1, cshape, p.b);
    return p;
}

static void free_problem(gn_problem *p)
{
    free(p->x);
    free(p->xs);
    free(p->g);
    free(p->b);
}

/* The reference forward of the problem: y decoded to doubles, mean and rstd (N x G). */
typedef struct {
    double *y, *mean, *rstd;
} gn_forward;

static gn_forward ref_forward(const gn_problem *p)
{
    clnorm_desc d = p->d;
    const size_t stats = d.rows * d.groups;
    void *y = malloc((p->n ? p->n : 1) * sizeof(float));
    float *mean = malloc((stats ? stats : 1) * sizeof *mean);
    float *rstd = malloc((stats ? stats : 1) * sizeof *rstd);
    clnorm_host_arg args[6];
    size_t n = 0;
    gn_forward r;
    assert_non_null(y);
    assert_non_null(mean);
    assert_non_null(rstd);
    d.flags |= CLNORM_SAVE_STATS;
    args[n++] = (clnorm_host_arg){CLNORM_ARG_X, p->xs};
    args[n++] = (clnorm_host_arg){CLNORM_ARG_Y, y};
    if (!(d.flags & CLNORM_NO_GAMMA))
        args[n++] = (clnorm_host_arg){CLNORM_ARG_GAMMA, p->g};
    if (!(d.flags & CLNORM_NO_BETA))
        args[n++] = (clnorm_host_arg){CLNORM_ARG_BETA, p->b};
    args[n++] = (clnorm_host_arg){CLNORM_ARG_MEAN, mean};
    args[n++] = (clnorm_host_arg){CLNORM_ARG_RSTD, rstd};
    assert_int_equal(clnorm_ref_execute(&d, CLNORM_FORWARD, args, n), CLNORM_OK);
    r.y = from_storage(&d, y, p->n);
    r.mean = widen(mean, stats);
    r.rstd = widen(rstd, stats);
    free(y);
    free(mean);
    free(rstd);
    return r;
}

static void free_forward(gn_forward *r)
{
    free(r->y);
    free(r->mean);
    free(r->rstd);
}

/* ------------------------------------------------------------------------------------------
 * run --groups
 * ---------------------------------------------------------------------------------------- */
static void check_forward(const gn_case *c)
{
    gn_problem p = make_problem(c);
    gn_forward want = ref_forward(&p);
    const char *yp = P("gn_y.npy"), *mp = P("gn_m.npy"), *rp = P("gn_r.npy");
    const size_t stat_shape[2] = {p.d.rows, p.d.groups};
    int m;
    for (m = 0; m < 2; m++) {
        argv_list l = {{NULL}, 0};
        rm(yp, mp, rp, NULL);
        add(&l, "run");
        add_opt(&l, "--groups", p.groups, 1);
        add_opt(&l, "--layout", c->nhwc ? "nhwc" : "nchw", c->nhwc || m == 1);
        add_opt(&l, "--input", p.xp, 1);
        add_opt(&l, "--output", yp, 1);
        add_opt(&l, "--gamma", p.gp, c->gamma);
        add_opt(&l, "--beta", p.bp, c->beta);
        add_opt(&l, "--mean", mp, c->stats);
        add_opt(&l, "--rstd", rp, c->stats);
        add_opt(&l, "--dtype", "bf16", c->bf16);
        add(&l, c->silu ? "--silu" : NULL);
        add(&l, modes[m]);
        expect_ok(cli_v(l.a));
        if (c->bf16)
            check_output_ulp(yp, NPY_U16, c->ndim, c->shape, want.y, 1e-5);
        else
            check_output(yp, c->ndim, c->shape, want.y, 1e-5, 1e-5);
        if (c->stats) {
            check_output(mp, 2, stat_shape, want.mean, 1e-5, 1e-5);
            check_output(rp, 2, stat_shape, want.rstd, 0.0, 1e-5);
        } else {
            assert_false(file_exists(mp));
        }
    }
    free_forward(&want);
    free_problem(&p);
}

static void test_group_run_nchw(void **state)
{
    const gn_case affine = {4, {2, 6, 3, 5}, 3, 0, 0, 1, 1, 1, 0};
    const gn_case silu = {4, {2, 6, 3, 5}, 2, 0, 1, 1, 0, 0, 0};
    const gn_case plain = {3, {3, 4, 7, 0}, 4, 0, 0, 0, 0, 1, 0}; /* InstanceNorm: G = C */
    (void)state;
    check_forward(&affine);
    check_forward(&silu);
    check_forward(&plain);
}

static void test_group_run_nhwc(void **state)
{
    const gn_case silu = {4, {2, 3, 5, 6}, 3, 1, 1, 1, 1, 1, 0};
    const gn_case flat = {2, {5, 6, 0, 0}, 2, 1, 0, 1, 1, 1, 0}; /* (N, C): layouts coincide */
    const gn_case one = {3, {2, 4, 8, 0}, 1, 1, 0, 0, 1, 0, 0};  /* G = 1 */
    (void)state;
    check_forward(&silu);
    check_forward(&flat);
    check_forward(&one);
}

static void test_group_run_bf16(void **state)
{
    const gn_case nchw = {4, {2, 8, 2, 3}, 4, 0, 1, 1, 1, 1, 1};
    const gn_case nhwc = {4, {2, 2, 3, 8}, 2, 1, 1, 1, 1, 1, 1};
    (void)state;
    check_forward(&nchw);
    check_forward(&nhwc);
}

/* An empty batch: empty Y, and mean / rstd of shape (0, G). */
static void test_group_run_empty_batch(void **state)
{
    const size_t shape[3] = {0, 6, 4}, stat_shape[2] = {0, 3};
    const char *xp = P("gn0_x.npy"), *yp = P("gn0_y.npy"), *mp = P("gn0_m.npy"),
               *rp = P("gn0_r.npy");
    float none = 0.0f;
    int m;
    (void)state;
    save_f32(xp, 3, shape, &none);
    for (m = 0; m < 2; m++) {
        rm(yp, mp, rp, NULL);
        expect_ok(cli("run", "--groups", "3", "--input", xp, "--output", yp, "--mean", mp,
                      "--rstd", rp, modes[m], NULL));
        check_output(yp, 3, shape, NULL, 0.0, 0.0);
        check_output(mp, 2, stat_shape, NULL, 0.0, 0.0);
        check_output(rp, 2, stat_shape, NULL, 0.0, 0.0);
    }
}

/* ------------------------------------------------------------------------------------------
 * grad --groups
 * ---------------------------------------------------------------------------------------- */

/* The reference backward: dx, dgamma, dbeta (NULL when not computed); saved statistics when
 * mean and rstd are given. */
typedef struct {
    double *dx, *dg, *db;
} gn_backward;

static gn_backward ref_backward(const gn_problem *p, const void *dys, const float *mean,
                                const float *rstd)
{
    const clnorm_desc *d = &p->d;
    const size_t C = d->cols;
    void *dx = malloc((p->n ? p->n : 1) * sizeof(float));
    float *dg = malloc(C * sizeof *dg), *db = malloc(C * sizeof *db);
    const int has_g = !(d->flags & CLNORM_NO_GAMMA), has_b = !(d->flags & CLNORM_NO_BETA);
    clnorm_host_arg args[10];
    size_t n = 0;
    gn_backward r;
    assert_non_null(dx);
    assert_non_null(dg);
    assert_non_null(db);
    args[n++] = (clnorm_host_arg){CLNORM_ARG_X, p->xs};
    args[n++] = (clnorm_host_arg){CLNORM_ARG_DY, (void *)(uintptr_t)dys};
    args[n++] = (clnorm_host_arg){CLNORM_ARG_DX, dx};
    if (has_g) {
        args[n++] = (clnorm_host_arg){CLNORM_ARG_GAMMA, p->g};
        args[n++] = (clnorm_host_arg){CLNORM_ARG_DGAMMA, dg};
    }
    if (has_b) {
        args[n++] = (clnorm_host_arg){CLNORM_ARG_DBETA, db};
        if (d->flags & CLNORM_SILU) /* the backward reads beta only through the SiLU */
            args[n++] = (clnorm_host_arg){CLNORM_ARG_BETA, p->b};
    }
    if (mean != NULL) {
        args[n++] = (clnorm_host_arg){CLNORM_ARG_MEAN, (void *)(uintptr_t)mean};
        args[n++] = (clnorm_host_arg){CLNORM_ARG_RSTD, (void *)(uintptr_t)rstd};
    }
    assert_int_equal(clnorm_ref_execute(d, CLNORM_BACKWARD, args, n), CLNORM_OK);
    r.dx = from_storage(d, dx, p->n);
    r.dg = has_g ? widen(dg, C) : NULL;
    r.db = has_b ? widen(db, C) : NULL;
    free(dx);
    free(dg);
    free(db);
    return r;
}

static void free_backward(gn_backward *r)
{
    free(r->dx);
    free(r->dg);
    free(r->db);
}

/* A float32 .npy file as floats (its shape checked). */
static float *load_floats(const char *path, int ndim, const size_t *shape)
{
    size_t n = 1, i;
    double *v = load_values(path, NPY_F32, ndim, shape);
    float *f;
    int k;
    for (k = 0; k < ndim; k++)
        n *= shape[k];
    f = malloc((n ? n : 1) * sizeof *f);
    assert_non_null(f);
    for (i = 0; i < n; i++)
        f[i] = (float)v[i];
    free(v);
    return f;
}

/* dx, dgamma and dbeta of the tool against the reference, on the device and on --cpu: once
 * with the statistics recomputed, once with those `run --mean --rstd` saved (read by the
 * reference too). */
static void check_backward(const gn_case *c)
{
    gn_problem p = make_problem(c);
    const size_t C = p.d.cols, stat_shape[2] = {p.d.rows, p.d.groups}, cshape[1] = {C};
    float *dy = make_input(p.d.rows, p.n / (p.d.rows ? p.d.rows : 1));
    void *dys = to_storage(&p.d, dy, p.n);
    const char *dyp = P("gg_dy.npy"), *yp = P("gg_y.npy"), *mp = P("gg_m.npy"),
               *rp = P("gg_r.npy"), *dxp = P("gg_dx.npy"), *dgp = P("gg_dg.npy"),
               *dbp = P("gg_db.npy");
    const double rel = c->bf16 ? 1e-2 : 1e-4;
    int m, saved;
    save_f32(dyp, c->ndim, c->shape, dy);
    for (saved = 0; saved < 2; saved++) {
        for (m = 0; m < 2; m++) {
            argv_list l = {{NULL}, 0};
            float *mean = NULL, *rstd = NULL;
            gn_backward want;
            double *got;
            if (saved) { /* the statistics of this mode's forward */
                rm(yp, mp, rp, NULL);
                expect_ok(cli("run", "--groups", p.groups, "--layout", c->nhwc ? "nhwc" : "nchw",
                              "--input", p.xp, "--output", yp, "--mean", mp, "--rstd", rp,
                              "--dtype", c->bf16 ? "bf16" : "f32", modes[m], NULL));
                mean = load_floats(mp, 2, stat_shape);
                rstd = load_floats(rp, 2, stat_shape);
            }
            want = ref_backward(&p, dys, mean, rstd);
            rm(dxp, dgp, dbp, NULL);
            add(&l, "grad");
            add_opt(&l, "--groups", p.groups, 1);
            add_opt(&l, "--layout", "nhwc", c->nhwc);
            add_opt(&l, "--input", p.xp, 1);
            add_opt(&l, "--grad-output", dyp, 1);
            add_opt(&l, "--grad-input", dxp, 1);
            add_opt(&l, "--gamma", p.gp, c->gamma);
            add_opt(&l, "--beta", p.bp, c->beta);
            add_opt(&l, "--grad-gamma", dgp, c->gamma);
            add_opt(&l, "--grad-beta", dbp, c->beta);
            add_opt(&l, "--mean", mp, saved);
            add_opt(&l, "--rstd", rp, saved);
            add_opt(&l, "--dtype", "bf16", c->bf16);
            add(&l, c->silu ? "--silu" : NULL);
            add(&l, modes[m]);
            expect_ok(cli_v(l.a));
            got = load_values(dxp, c->bf16 ? NPY_U16 : NPY_F32, c->ndim, c->shape);
            check_max_err("dx", got, want.dx, p.n, rel);
            free(got);
            if (c->gamma) {
                got = load_values(dgp, NPY_F32, 1, cshape);
                check_norm_err("dgamma", got, want.dg, C, rel);
                free(got);
            }
            if (c->beta) {
                got = load_values(dbp, NPY_F32, 1, cshape);
                check_norm_err("dbeta", got, want.db, C, rel);
                free(got);
            }
            free_backward(&want);
            free(mean);
            free(rstd);
        }
    }
    free(dy);
    free(dys);
    free_problem(&p);
}

static void test_group_grad_nchw(void **state)
{
    const gn_case silu = {4, {2, 6, 3, 5}, 3, 0, 1, 1, 1, 0, 0};
    const gn_case plain = {3, {3, 4, 6, 0}, 2, 0, 0, 0, 1, 0, 0};
    (void)state;
    check_backward(&silu);
    check_backward(&plain);
}

static void test_group_grad_nhwc(void **state)
{
    const gn_case silu = {4, {2, 3, 5, 6}, 2, 1, 1, 1, 1, 0, 0};
    (void)state;
    check_backward(&silu);
}

/* grad --mean/--rstd is not GroupNorm's alone: LayerNorm reads the saved statistics too. */
static void test_grad_saved_stats_layer(void **state)
{
    const size_t rows = 5, cols = 12, shape[2] = {5, 12}, rshape[1] = {5}, cshape[1] = {12};
    float *x = make_input(rows, cols), *dy = make_input(rows, cols), *g = make_params(cols, 1, 0.5);
    float *mean, *rstd, *dx = malloc(rows * cols * sizeof *dx), *dg = malloc(cols * sizeof *dg);
    const char *xp = P("ls_x.npy"), *dyp = P("ls_dy.npy"), *gp = P("ls_g.npy"),
               *yp = P("ls_y.npy"), *mp = P("ls_m.npy"), *rp = P("ls_r.npy"),
               *dxp = P("ls_dx.npy"), *dgp = P("ls_dg.npy");
    clnorm_desc d;
    double *want_dx, *want_dg;
    int m;
    (void)state;
    assert_non_null(dx);
    assert_non_null(dg);
    save_f32(xp, 2, shape, x);
    save_f32(dyp, 2, shape, dy);
    save_f32(gp, 1, cshape, g);
    clnorm_desc_init(&d, CLNORM_LAYER, rows, cols);
    d.flags = CLNORM_NO_BETA;
    for (m = 0; m < 2; m++) {
        rm(yp, mp, rp, dxp, dgp, NULL);
        expect_ok(cli("run", "--input", xp, "--output", yp, "--gamma", gp, "--mean", mp,
                      "--rstd", rp, modes[m], NULL));
        mean = load_floats(mp, 1, rshape);
        rstd = load_floats(rp, 1, rshape);
        {
            const clnorm_host_arg args[] = {
                {CLNORM_ARG_X, x},       {CLNORM_ARG_DY, dy},   {CLNORM_ARG_GAMMA, g},
                {CLNORM_ARG_MEAN, mean}, {CLNORM_ARG_RSTD, rstd}, {CLNORM_ARG_DX, dx},
                {CLNORM_ARG_DGAMMA, dg}};
            assert_int_equal(clnorm_ref_execute(&d, CLNORM_BACKWARD, args, 7), CLNORM_OK);
        }
        want_dx = widen(dx, rows * cols);
        want_dg = widen(dg, cols);
        expect_ok(cli("grad", "--input", xp, "--grad-output", dyp, "--gamma", gp, "--mean", mp,
                      "--rstd", rp, "--grad-input", dxp, "--grad-gamma", dgp, modes[m], NULL));
        check_output(dxp, 2, shape, want_dx, 1e-4, 1e-4);
        check_output(dgp, 1, cshape, want_dg, 1e-4, 1e-4);
        free(want_dx);
        free(want_dg);
        free(mean);
        free(rstd);
    }
    free(x);
    free(dy);
    free(g);
    free(dx);
    free(dg);
}

/* ------------------------------------------------------------------------------------------
 * The per-sample modulation (--scale / --shift with --groups: a diffusion UNet's scale-shift
 * norm), against a float64 computation of the formulas done here, independent of the
 * library (whose CPU reference --cpu runs):
 *
 *   xhat = (x - mean) * rstd per sample n and group,  z = xhat * gamma[c] + beta[c]
 *   u = z * (1 + S[b, c]) + H[b, c],  b = n / (N / B),  y = u, or silu(u) with --silu
 *   du = dy, or dy * silu'(u);  dz = du * (1 + S[b, c]),  g = dz * gamma[c]
 *   dx = rstd * (g - mean(g) - xhat * mean(g * xhat))   (means over the group)
 *   dgamma = sum of dz * xhat, dbeta = sum of dz, over all entries and positions
 *   dscale[b] = sum of du * z, dshift[b] = sum of du, over entry n's of b and positions
 * ---------------------------------------------------------------------------------------- */
static const double EPS_GN = 1e-5; /* the tool's default --eps */

typedef struct {
    int ndim;
    size_t shape[4];
    size_t groups;
    int nhwc, silu, gamma, beta, scale, shift;
    size_t B;     /* the modulation's samples, dividing N */
    npy_dtype xt; /* the files of x and dy: NPY_F32 or NPY_F64 (the storage) */
    int global;   /* precomputed statistics: --mean-input / --rstd-input, (N, G) */
} gm_case;

typedef struct {
    size_t N, C, S, G, n; /* batch, channels, positions per channel, groups, elements */
    size_t mshape[2];     /* (B, C) */
    npy_dtype pt;         /* the parameter files' type: float64 for f64 storage, else float32 */
    double *x, *dy, *g, *b, *s, *h; /* exactly what the files hold; NULL when not given */
    double *m, *r;                  /* precomputed mean and rstd (global cases), (N, G) */
    char groups[24];
    const char *xp, *dyp, *gp, *bp, *sp, *hp, *mp, *rp;
} gm_problem;

/* n values rounded to the file type t (float32 or float64) in place, then saved. */
static void gm_save(const char *path, npy_dtype t, int ndim, const size_t *shape, double *v,
                    size_t n)
{
    size_t i;
    if (t == NPY_F64) {
        save_as(path, NPY_F64, ndim, shape, v);
        return;
    }
    {
        float *f = malloc((n ? n : 1) * sizeof *f);
        assert_non_null(f);
        for (i = 0; i < n; i++)
            v[i] = f[i] = (float)v[i];
        save_as(path, NPY_F32, ndim, shape, f);
        free(f);
    }
}

/* center + spread * N(0, 1), n values. */
static double *gm_vec(size_t n, double center, double spread)
{
    double *v = malloc((n ? n : 1) * sizeof *v);
    size_t i;
    assert_non_null(v);
    for (i = 0; i < n; i++)
        v[i] = center + spread * normal01();
    return v;
}

static gm_problem gm_make(const gm_case *c)
{
    gm_problem p;
    const size_t cdim = c->nhwc ? (size_t)c->ndim - 1 : 1;
    size_t i, k, cshape[1];
    memset(&p, 0, sizeof p);
    p.N = c->shape[0];
    p.C = c->shape[cdim];
    p.S = 1;
    for (k = 1; k < (size_t)c->ndim; k++)
        if (k != cdim)
            p.S *= c->shape[k];
    p.G = c->groups;
    p.n = p.N * p.C * p.S;
    p.mshape[0] = c->B;
    p.mshape[1] = p.C;
    p.pt = c->xt == NPY_F64 ? NPY_F64 : NPY_F32;
    snprintf(p.groups, sizeof p.groups, "%zu", c->groups);
    p.xp = P("gm_x.npy");
    p.dyp = P("gm_dy.npy");
    p.gp = P("gm_g.npy");
    p.bp = P("gm_b.npy");
    p.sp = P("gm_s.npy");
    p.hp = P("gm_h.npy");
    /* samples with offsets and scales of their own, so that the groups' statistics differ */
    p.x = gm_vec(p.n, 0.0, 1.0);
    for (i = 0; i < p.N; i++) {
        const double off = 4.0 * (2.0 * uniform01() - 1.0), sc = 0.5 + 2.0 * uniform01();
        for (k = 0; k < p.C * p.S; k++)
            p.x[i * p.C * p.S + k] = off + sc * p.x[i * p.C * p.S + k];
    }
    gm_save(p.xp, c->xt, c->ndim, c->shape, p.x, p.n);
    p.dy = gm_vec(p.n, 0.0, 1.0);
    gm_save(p.dyp, c->xt, c->ndim, c->shape, p.dy, p.n);
    cshape[0] = p.C;
    if (c->gamma) {
        p.g = gm_vec(p.C, 1.0, 0.5);
        gm_save(p.gp, p.pt, 1, cshape, p.g, p.C);
    }
    if (c->beta) {
        p.b = gm_vec(p.C, 0.0, 1.0);
        gm_save(p.bp, p.pt, 1, cshape, p.b, p.C);
    }
    if (c->scale) {
        p.s = gm_vec(c->B * p.C, 0.0, 0.5);
        gm_save(p.sp, p.pt, 2, p.mshape, p.s, c->B * p.C);
    }
    if (c->shift) {
        p.h = gm_vec(c->B * p.C, 0.0, 1.0);
        gm_save(p.hp, p.pt, 2, p.mshape, p.h, c->B * p.C);
    }
    if (c->global) { /* a mean near the data's range, rstd in about [0.6, 1.4] */
        const size_t sshape[2] = {p.N, p.G};
        p.mp = P("gm_mi.npy");
        p.rp = P("gm_ri.npy");
        p.m = gm_vec(p.N * p.G, 0.0, 2.0);
        p.r = gm_vec(p.N * p.G, 1.0, 0.2);
        gm_save(p.mp, p.pt, 2, sshape, p.m, p.N * p.G);
        gm_save(p.rp, p.pt, 2, sshape, p.r, p.N * p.G);
    }
    return p;
}

static void gm_free(gm_problem *p)
{
    free(p->x);
    free(p->dy);
    free(p->g);
    free(p->b);
    free(p->s);
    free(p->h);
    free(p->m);
    free(p->r);
}

/* The element of entry n, channel ch, position q in the case's layout. */
static size_t gm_at(const gm_case *c, const gm_problem *p, size_t n, size_t ch, size_t q)
{
    return c->nhwc ? (n * p->S + q) * p->C + ch : (n * p->C + ch) * p->S + q;
}

typedef struct {
    double *y, *mean, *rstd, *dx, *dg, *db, *ds, *dh;
} gm_ref;

static double sigmoid(double u)
{
    return 1.0 / (1.0 + exp(-u));
}

/* The forward and the backward in float64 (two-pass statistics). */
static gm_ref gm_reference(const gm_case *c, const gm_problem *p)
{
    const size_t cg = p->C / p->G, len = cg * p->S, per = c->B ? p->N / c->B : 0;
    const size_t nb = c->B * p->C;
    gm_ref r;
    size_t n, grp, ch, q;
    r.y = calloc(p->n + 1, sizeof(double));
    r.dx = calloc(p->n + 1, sizeof(double));
    r.mean = calloc(p->N * p->G + 1, sizeof(double));
    r.rstd = calloc(p->N * p->G + 1, sizeof(double));
    r.dg = calloc(p->C + 1, sizeof(double));
    r.db = calloc(p->C + 1, sizeof(double));
    r.ds = calloc(nb + 1, sizeof(double));
    r.dh = calloc(nb + 1, sizeof(double));
    assert_true(r.y && r.dx && r.mean && r.rstd && r.dg && r.db && r.ds && r.dh);
    for (n = 0; n < p->N; n++) {
        const size_t b = n / per;
        for (grp = 0; grp < p->G; grp++) {
            double m = 0.0, v = 0.0, rs, mg = 0.0, mgx = 0.0;
            for (ch = grp * cg; ch < (grp + 1) * cg; ch++)
                for (q = 0; q < p->S; q++)
                    m += p->x[gm_at(c, p, n, ch, q)];
            m /= (double)len;
            for (ch = grp * cg; ch < (grp + 1) * cg; ch++)
                for (q = 0; q < p->S; q++) {
                    const double d = p->x[gm_at(c, p, n, ch, q)] - m;
                    v += d * d;
                }
            rs = 1.0 / sqrt(v / (double)len + EPS_GN);
            if (p->m) { /* precomputed: used as given */
                m = p->m[n * p->G + grp];
                rs = p->r[n * p->G + grp];
            }
            r.mean[n * p->G + grp] = m;
            r.rstd[n * p->G + grp] = rs;
            for (ch = grp * cg; ch < (grp + 1) * cg; ch++) {
                const double gam = p->g ? p->g[ch] : 1.0, bet = p->b ? p->b[ch] : 0.0;
                const double s1 = 1.0 + (p->s ? p->s[b * p->C + ch] : 0.0);
                const double sh = p->h ? p->h[b * p->C + ch] : 0.0;
                for (q = 0; q < p->S; q++) {
                    const size_t e = gm_at(c, p, n, ch, q);
                    const double xhat = (p->x[e] - m) * rs, z = xhat * gam + bet;
                    const double u = z * s1 + sh, sg = sigmoid(u);
                    const double du = c->silu ? p->dy[e] * sg * (1.0 + u * (1.0 - sg)) : p->dy[e];
                    r.y[e] = c->silu ? u * sg : u;
                    r.dh[b * p->C + ch] += du;
                    r.ds[b * p->C + ch] += du * z;
                    r.dg[ch] += du * s1 * xhat;
                    r.db[ch] += du * s1;
                    r.dx[e] = du * s1 * gam; /* g, until the group's means are known */
                    mg += r.dx[e];
                    mgx += r.dx[e] * xhat;
                }
            }
            /* precomputed statistics are constants: dx = rstd * g */
            mg = p->m ? 0.0 : mg / (double)len;
            mgx = p->m ? 0.0 : mgx / (double)len;
            for (ch = grp * cg; ch < (grp + 1) * cg; ch++)
                for (q = 0; q < p->S; q++) {
                    const size_t e = gm_at(c, p, n, ch, q);
                    const double xhat = (p->x[e] - m) * rs;
                    r.dx[e] = rs * (r.dx[e] - mg - xhat * mgx);
                }
        }
    }
    return r;
}

static void gm_ref_free(gm_ref *r)
{
    free(r->y);
    free(r->mean);
    free(r->rstd);
    free(r->dx);
    free(r->dg);
    free(r->db);
    free(r->ds);
    free(r->dh);
}

/* An output against want: float32 to 1e-5 of the largest value (or of the norm, for the sums
 * over entries), float64 to 1e-12. */
static void gm_check(const char *path, npy_dtype t, int ndim, const size_t *shape,
                     const double *want, size_t n, int by_norm)
{
    double *got = load_values(path, t, ndim, shape);
    const double rel = t == NPY_F64 ? 1e-12 : 1e-5;
    if (by_norm)
        check_norm_err(path, got, want, n, rel);
    else
        check_max_err(path, got, want, n, rel);
    free(got);
}

/* The options every modulated command shares. */
static void gm_common(argv_list *l, const gm_case *c, const gm_problem *p)
{
    add_opt(l, "--groups", p->groups, 1);
    add_opt(l, "--layout", "nhwc", c->nhwc);
    add_opt(l, "--input", p->xp, 1);
    add_opt(l, "--gamma", p->gp, c->gamma);
    add_opt(l, "--beta", p->bp, c->beta);
    add_opt(l, "--scale", p->sp, c->scale);
    add_opt(l, "--shift", p->hp, c->shift);
    add_opt(l, "--mean-input", p->mp, c->global);
    add_opt(l, "--rstd-input", p->rp, c->global);
    add(l, c->silu ? "--silu" : NULL);
}

/* run: y, and the saved statistics, which are the normalization's, untouched by the
 * modulation (with precomputed ones, y alone). */
static void check_mod_run(const gm_case *c)
{
    gm_problem p = gm_make(c);
    gm_ref want = gm_reference(c, &p);
    const char *yp = P("gm_y.npy"), *mp = P("gm_m.npy"), *rp = P("gm_r.npy");
    const size_t stat_shape[2] = {p.N, p.G};
    int m;
    for (m = 0; m < 2; m++) {
        argv_list l = {{NULL}, 0};
        rm(yp, mp, rp, NULL);
        add(&l, "run");
        gm_common(&l, c, &p);
        add_opt(&l, "--output", yp, 1);
        add_opt(&l, "--mean", mp, !c->global);
        add_opt(&l, "--rstd", rp, !c->global);
        add(&l, modes[m]);
        expect_ok(cli_v(l.a));
        gm_check(yp, c->xt, c->ndim, c->shape, want.y, p.n, 0);
        if (c->global)
            continue;
        gm_check(mp, p.pt, 2, stat_shape, want.mean, p.N * p.G, 0);
        gm_check(rp, p.pt, 2, stat_shape, want.rstd, p.N * p.G, 0);
    }
    gm_ref_free(&want);
    gm_free(&p);
}

/* grad: every gradient the case has (dx always; dgamma, dbeta, dscale, dshift when their
 * parameter is given), or with only_mod dscale and dshift alone. */
static void check_mod_grad(const gm_case *c, int only_mod)
{
    gm_problem p = gm_make(c);
    gm_ref want = gm_reference(c, &p);
    const char *dxp = P("gm_dx.npy"), *dgp = P("gm_dg.npy"), *dbp = P("gm_db.npy"),
               *dsp = P("gm_ds.npy"), *dhp = P("gm_dh.npy");
    const size_t cshape[1] = {p.C}, nb = c->B * p.C;
    const int dx = !only_mod, dg = c->gamma && !only_mod, db = c->beta && !only_mod,
              ds = c->scale, dh = c->shift;
    int m;
    for (m = 0; m < 2; m++) {
        argv_list l = {{NULL}, 0};
        rm(dxp, dgp, dbp, dsp, dhp, NULL);
        add(&l, "grad");
        gm_common(&l, c, &p);
        add_opt(&l, "--grad-output", p.dyp, 1);
        add_opt(&l, "--grad-input", dxp, dx);
        add_opt(&l, "--grad-gamma", dgp, dg);
        add_opt(&l, "--grad-beta", dbp, db);
        add_opt(&l, "--grad-scale", dsp, ds);
        add_opt(&l, "--grad-shift", dhp, dh);
        add(&l, modes[m]);
        expect_ok(cli_v(l.a));
        if (dx)
            gm_check(dxp, c->xt, c->ndim, c->shape, want.dx, p.n, 0);
        if (dg)
            gm_check(dgp, p.pt, 1, cshape, want.dg, p.C, 1);
        if (db)
            gm_check(dbp, p.pt, 1, cshape, want.db, p.C, 1);
        if (ds)
            gm_check(dsp, p.pt, 2, p.mshape, want.ds, nb, 1);
        if (dh)
            gm_check(dhp, p.pt, 2, p.mshape, want.dh, nb, 1);
        assert_int_equal(file_exists(dxp), dx);
        assert_int_equal(file_exists(dgp), dg);
        assert_int_equal(file_exists(dbp), db);
        assert_int_equal(file_exists(dsp), ds);
        assert_int_equal(file_exists(dhp), dh);
    }
    gm_ref_free(&want);
    gm_free(&p);
}

/* NCHW with the SiLU after the modulation (the ResBlock's out_norm), one modulation row per
 * entry and one per two entries; scale or shift alone; no affine parameters. */
static void test_group_mod_run_nchw(void **state)
{
    const gm_case full = {4, {2, 6, 3, 5}, 3, 0, 1, 1, 1, 1, 1, 2, NPY_F32, 0};
    const gm_case half = {4, {4, 4, 2, 3}, 2, 0, 1, 1, 1, 1, 1, 2, NPY_F32, 0};
    const gm_case scale = {3, {3, 4, 5, 0}, 2, 0, 0, 1, 0, 1, 0, 3, NPY_F32, 0};
    const gm_case shift = {4, {2, 6, 2, 2}, 6, 0, 1, 0, 0, 0, 1, 1, NPY_F32, 0};
    (void)state;
    check_mod_run(&full);
    check_mod_run(&half);
    check_mod_run(&scale);
    check_mod_run(&shift);
}

/* NHWC: the same (B, C) rows, the channels last. */
static void test_group_mod_run_nhwc(void **state)
{
    const gm_case silu = {4, {2, 3, 5, 6}, 3, 1, 1, 1, 1, 1, 1, 2, NPY_F32, 0};
    const gm_case one = {3, {4, 5, 4, 0}, 1, 1, 0, 1, 0, 1, 1, 1, NPY_F32, 0}; /* B = 1 < N */
    (void)state;
    check_mod_run(&silu);
    check_mod_run(&one);
}

static void test_group_mod_run_f64(void **state)
{
    const gm_case f64 = {4, {2, 6, 2, 3}, 2, 0, 1, 1, 1, 1, 1, 2, NPY_F64, 0};
    (void)state;
    check_mod_run(&f64);
}

static void test_group_mod_grad_nchw(void **state)
{
    const gm_case full = {4, {2, 6, 3, 5}, 3, 0, 1, 1, 1, 1, 1, 2, NPY_F32, 0};
    const gm_case plain = {4, {4, 4, 2, 3}, 2, 0, 0, 1, 1, 1, 1, 2, NPY_F32, 0};
    const gm_case bare = {3, {2, 4, 6, 0}, 2, 0, 0, 0, 0, 1, 0, 2, NPY_F32, 0};
    /* the SiLU's backward reads the shift (u = z * (1 + scale) + shift) with no scale */
    const gm_case shift = {4, {2, 6, 2, 2}, 3, 0, 1, 1, 1, 0, 1, 1, NPY_F32, 0};
    (void)state;
    check_mod_grad(&full, 0);
    check_mod_grad(&full, 1);
    check_mod_grad(&plain, 0);
    check_mod_grad(&bare, 0);
    check_mod_grad(&shift, 0);
}

static void test_group_mod_grad_nhwc(void **state)
{
    const gm_case silu = {4, {2, 3, 5, 6}, 3, 1, 1, 1, 1, 1, 1, 2, NPY_F32, 0};
    const gm_case one = {3, {4, 5, 4, 0}, 2, 1, 1, 1, 0, 1, 1, 1, NPY_F32, 0};
    (void)state;
    check_mod_grad(&silu, 0);
    check_mod_grad(&one, 0);
}

static void test_group_mod_grad_f64(void **state)
{
    const gm_case f64 = {4, {2, 6, 2, 3}, 2, 0, 1, 1, 1, 1, 1, 2, NPY_F64, 0};
    (void)state;
    check_mod_grad(&f64, 0);
}

/* Precomputed statistics (--mean-input / --rstd-input with --groups, (N, G)): y = (x - mean)
 * * rstd per group, then the affine, modulation and SiLU; the backward holds them constant
 * (dx = rstd * g). Eval-mode InstanceNorm is G = C with the running statistics per channel
 * repeated over N. */
static void test_group_global_run(void **state)
{
    const gm_case mod = {4, {2, 6, 3, 5}, 3, 0, 1, 1, 1, 1, 1, 2, NPY_F32, 1};
    const gm_case inst = {4, {3, 5, 2, 4}, 4, 1, 0, 1, 1, 0, 0, 3, NPY_F32, 1};
    const gm_case bare = {3, {2, 6, 7, 0}, 6, 0, 0, 0, 0, 0, 0, 2, NPY_F32, 1};
    const gm_case f64 = {4, {2, 2, 3, 6}, 2, 1, 1, 1, 1, 0, 1, 2, NPY_F64, 1};
    (void)state;
    check_mod_run(&mod);
    check_mod_run(&inst);
    check_mod_run(&bare);
    check_mod_run(&f64);
}

static void test_group_global_grad(void **state)
{
    const gm_case mod = {4, {2, 6, 3, 5}, 3, 0, 1, 1, 1, 1, 1, 2, NPY_F32, 1};
    const gm_case inst = {4, {3, 5, 2, 4}, 4, 1, 0, 1, 1, 0, 0, 3, NPY_F32, 1};
    const gm_case f64 = {4, {2, 2, 3, 6}, 2, 1, 1, 1, 1, 0, 1, 2, NPY_F64, 1};
    (void)state;
    check_mod_grad(&mod, 0);
    check_mod_grad(&inst, 0);
    check_mod_grad(&f64, 0);
}

/* An empty batch: y and dx empty; (0, C) rows modulate nothing, and B rows for no entries get
 * zero gradients (sums over nothing). */
static void test_group_mod_empty_batch(void **state)
{
    const size_t x0[3] = {0, 6, 4}, s0[2] = {0, 6}, s2[2] = {2, 6}, c6[1] = {6};
    const char *xp = P("gme_x.npy"), *s0p = P("gme_s0.npy"), *s2p = P("gme_s2.npy"),
               *gp = P("gme_g.npy"), *yp = P("gme_y.npy"), *dxp = P("gme_dx.npy"),
               *dsp = P("gme_ds.npy"), *dhp = P("gme_dh.npy"), *dgp = P("gme_dg.npy");
    const double zero[12] = {0};
    float v[12];
    size_t i;
    int m;
    (void)state;
    for (i = 0; i < 12; i++)
        v[i] = 0.25f * (float)i - 1.0f;
    save_f32(xp, 3, x0, v);
    save_f32(s0p, 2, s0, v);
    save_f32(s2p, 2, s2, v);
    save_f32(gp, 1, c6, v);
    for (m = 0; m < 2; m++) {
        rm(yp, dxp, dsp, dhp, dgp, NULL);
        expect_ok(cli("run", "--groups", "3", "--silu", "--input", xp, "--output", yp,
                      "--scale", s0p, "--shift", s0p, modes[m], NULL));
        check_output(yp, 3, x0, NULL, 0.0, 0.0);
        expect_ok(cli("grad", "--groups", "3", "--input", xp, "--grad-output", xp, "--scale",
                      s0p, "--shift", s0p, "--grad-input", dxp, "--grad-scale", dsp,
                      "--grad-shift", dhp, modes[m], NULL));
        check_output(dxp, 3, x0, NULL, 0.0, 0.0);
        check_output(dsp, 2, s0, NULL, 0.0, 0.0);
        check_output(dhp, 2, s0, NULL, 0.0, 0.0);
        rm(dsp, dhp, NULL);
        expect_ok(cli("grad", "--groups", "3", "--silu", "--input", xp, "--grad-output", xp,
                      "--scale", s2p, "--shift", s2p, "--gamma", gp, "--grad-scale", dsp,
                      "--grad-shift", dhp, "--grad-gamma", dgp, modes[m], NULL));
        check_output(dsp, 2, s2, zero, 0.0, 0.0);
        check_output(dhp, 2, s2, zero, 0.0, 0.0);
        check_output(dgp, 1, c6, zero, 0.0, 0.0);
    }
}

typedef struct {
    /* x (4, 6, 2, 3): N 4, C 6 (NCHW) or 3 (NHWC); files of the right and of wrong shapes */
    const char *x, *dy, *b, *s, *s1, *s2, *s3, *s5, *s_c3, *s_c4, *s_3d, *s_flat, *s_u16;
    /* outputs, none of which may appear */
    const char *y, *dx, *dg, *db, *ds, *dh;
} gm_bad_files;

static gm_bad_files gm_prepare(void)
{
    gm_bad_files f;
    const size_t sx[4] = {4, 6, 2, 3}, s46[2] = {4, 6}, s16[2] = {1, 6}, s26[2] = {2, 6},
                 s36[2] = {3, 6}, s56[2] = {5, 6}, s43[2] = {4, 3}, s44[2] = {4, 4},
                 s461[3] = {4, 6, 1}, s24[1] = {24}, c6[1] = {6};
    float v[144];
    uint16_t u[24];
    size_t i;
    for (i = 0; i < 144; i++)
        v[i] = (float)(i % 7) - 3.0f;
    for (i = 0; i < 24; i++)
        u[i] = (uint16_t)(0x3c00u + i);
    f.x = P("gmb_x.npy");
    f.dy = P("gmb_dy.npy");
    f.b = P("gmb_b.npy");
    f.s = P("gmb_s.npy");
    f.s1 = P("gmb_s1.npy");
    f.s2 = P("gmb_s2.npy");
    f.s3 = P("gmb_s3.npy");
    f.s5 = P("gmb_s5.npy");
    f.s_c3 = P("gmb_s_c3.npy");
    f.s_c4 = P("gmb_s_c4.npy");
    f.s_3d = P("gmb_s_3d.npy");
    f.s_flat = P("gmb_s_flat.npy");
    f.s_u16 = P("gmb_s_u16.npy");
    f.y = P("gmb_y.npy");
    f.dx = P("gmb_dx.npy");
    f.dg = P("gmb_dg.npy");
    f.db = P("gmb_db.npy");
    f.ds = P("gmb_ds.npy");
    f.dh = P("gmb_dh.npy");
    save_f32(f.x, 4, sx, v);
    save_f32(f.dy, 4, sx, v);
    save_f32(f.b, 1, c6, v);
    save_f32(f.s, 2, s46, v);
    save_f32(f.s1, 2, s16, v);
    save_f32(f.s2, 2, s26, v);
    save_f32(f.s3, 2, s36, v);
    save_f32(f.s5, 2, s56, v);
    save_f32(f.s_c3, 2, s43, v);
    save_f32(f.s_c4, 2, s44, v);
    save_f32(f.s_3d, 3, s461, v);
    save_f32(f.s_flat, 1, s24, v);
    save_as(f.s_u16, NPY_U16, 2, s46, u);
    rm(f.y, f.dx, f.dg, f.db, f.ds, f.dh, NULL);
    return f;
}

/* The CLI fails as expected (exit `code`, one line with needle) and writes no output. */
#define GM_FAIL(code, needle, ...)                                                           \
    do {                                                                                     \
        int rc_ = cli(__VA_ARGS__, NULL);                                                    \
        expect_one_error_line(rc_, needle);                                                  \
        assert_int_equal(rc_, code);                                                         \
        if (file_exists(f.y) || file_exists(f.dx) || file_exists(f.dg) ||                    \
            file_exists(f.db) || file_exists(f.ds) || file_exists(f.dh))                     \
            fail_msg("an output file was created (stderr: %s)", g_err);                      \
    } while (0)

static void test_group_mod_refusals(void **state)
{
    gm_bad_files f = gm_prepare();
    (void)state;
    /* run, files (exit 1): S and H not (B, C), B not dividing N, H not S's shape, a wrong
     * type, a missing file. */
    GM_FAIL(1, "scale", "run", "--groups", "3", "--input", f.x, "--output", f.y, "--scale",
            f.s_c4);
    GM_FAIL(1, "has shape (4, 4), expected (B, 6): B samples dividing the batch N = 4 of "
            "input", "run", "--groups", "3", "--input", f.x, "--output", f.y, "--scale",
            f.s_c4, "--cpu");
    GM_FAIL(1, "expected (B, 6)", "run", "--groups", "3", "--input", f.x, "--output", f.y,
            "--shift", f.s_3d, "--mean", f.dg, "--rstd", f.db);
    GM_FAIL(1, "expected (B, 6)", "run", "--groups", "3", "--input", f.x, "--output", f.y,
            "--scale", f.s_flat, "--silu");
    /* NHWC: the channels are the last dim (3) */
    GM_FAIL(1, "expected (B, 3)", "run", "--groups", "3", "--layout", "nhwc", "--input", f.x,
            "--output", f.y, "--scale", f.s);
    GM_FAIL(1, "its B = 3 samples do not divide the batch N = 4 of input", "run", "--groups",
            "3", "--input", f.x, "--output", f.y, "--scale", f.s3);
    GM_FAIL(1, "B = 5 samples do not divide", "run", "--groups", "3", "--input", f.x,
            "--output", f.y, "--shift", f.s5, "--cpu");
    GM_FAIL(1, "shift", "run", "--groups", "3", "--input", f.x, "--output", f.y, "--scale",
            f.s2, "--shift", f.s);
    GM_FAIL(1, "has shape (4, 6), expected (2, 6) ((B, C) as the --scale file", "run",
            "--groups", "3", "--input", f.x, "--output", f.y, "--scale", f.s2, "--shift", f.s);
    GM_FAIL(1, "expected (1, 6)", "run", "--groups", "3", "--input", f.x, "--output", f.y,
            "--scale", f.s1, "--shift", f.s_c4);
    GM_FAIL(1, "uint16", "run", "--groups", "3", "--input", f.x, "--output", f.y, "--scale",
            f.s_u16);
    GM_FAIL(1, "missing_s.npy", "run", "--groups", "3", "--input", f.x, "--output", f.y,
            "--shift", P("missing_s.npy"));
    /* run, usage (exit 2) */
    GM_FAIL(2, "--scale given more than once", "run", "--groups", "3", "--input", f.x,
            "--output", f.y, "--scale", f.s, "--scale", f.s);
    GM_FAIL(2, "unknown option '--grad-shift'", "run", "--groups", "3", "--input", f.x,
            "--output", f.y, "--shift", f.s, "--grad-shift", f.dh);
    /* grad, usage (exit 2): a gradient without its parameter, one file twice */
    GM_FAIL(2, "--grad-scale needs --scale", "grad", "--groups", "3", "--input", f.x,
            "--grad-output", f.dy, "--grad-scale", f.ds);
    GM_FAIL(2, "--grad-scale needs --scale", "grad", "--groups", "3", "--input", f.x,
            "--grad-output", f.dy, "--shift", f.s, "--grad-shift", f.dh, "--grad-scale", f.ds);
    GM_FAIL(2, "--grad-shift needs --shift", "grad", "--groups", "3", "--silu", "--input", f.x,
            "--grad-output", f.dy, "--scale", f.s, "--grad-input", f.dx, "--grad-shift", f.dh);
    GM_FAIL(2, "same file", "grad", "--groups", "3", "--input", f.x, "--grad-output", f.dy,
            "--scale", f.s, "--shift", f.s, "--grad-scale", f.ds, "--grad-shift", f.ds);
    /* grad, files (exit 1) */
    GM_FAIL(1, "expected (B, 6)", "grad", "--groups", "3", "--input", f.x, "--grad-output",
            f.dy, "--scale", f.s_c3, "--grad-scale", f.ds, "--grad-input", f.dx);
    GM_FAIL(1, "do not divide the batch N = 4", "grad", "--groups", "3", "--silu", "--input",
            f.x, "--grad-output", f.dy, "--beta", f.b, "--scale", f.s3, "--shift", f.s3,
            "--grad-scale", f.ds, "--grad-shift", f.dh);
    GM_FAIL(1, "expected (2, 6)", "grad", "--groups", "3", "--input", f.x, "--grad-output",
            f.dy, "--scale", f.s2, "--shift", f.s1, "--grad-shift", f.dh, "--cpu");
    GM_FAIL(1, "expected (4, 6, 2, 3)", "grad", "--groups", "3", "--input", f.x,
            "--grad-output", f.s, "--scale", f.s, "--grad-scale", f.ds);
}

/* ------------------------------------------------------------------------------------------
 * Help, and bad combinations: one stderr line, a non-zero exit, no output file.
 * ---------------------------------------------------------------------------------------- */
static void test_group_help(void **state)
{
    (void)state;
    expect_ok(cli("run", "--help", NULL));
    assert_non_null(strstr(g_out, "--groups G"));
    assert_non_null(strstr(g_out, "--layout"));
    assert_non_null(strstr(g_out, "--silu"));
    assert_non_null(strstr(g_out, "With --groups C is the channels"));
    expect_ok(cli("grad", "--help", NULL));
    assert_non_null(strstr(g_out, "--groups G"));
    assert_non_null(strstr(g_out, "--mean M.npy"));
    assert_non_null(strstr(g_out, "pass the forward's --beta and --shift"));
}

typedef struct {
    const char *x, *x0d, *x1d, *x0s, *x0c, *g, *g5, *b7, *dy, *m, *m32, *r;
    const char *y, *dx, *dg, *db, *ym, *yr;
} bad_files;

static bad_files prepare(void)
{
    bad_files f;
    const size_t shape[4] = {2, 6, 3, 5}, s1[1] = {6}, s0s[3] = {2, 6, 0}, s0c[3] = {2, 0, 3},
                 s5[1] = {5}, s7[1] = {7}, sdy[4] = {2, 6, 5, 3}, sm[2] = {2, 3},
                 sm32[2] = {3, 2};
    float v[180];
    size_t i;
    for (i = 0; i < 180; i++)
        v[i] = (float)(i % 7) - 3.0f;
    f.x = P("gb_x.npy");
    f.x0d = P("gb_x0d.npy");
    f.x1d = P("gb_x1d.npy");
    f.x0s = P("gb_x0s.npy");
    f.x0c = P("gb_x0c.npy");
    f.g = P("gb_g.npy");
    f.g5 = P("gb_g5.npy");
    f.b7 = P("gb_b7.npy");
    f.dy = P("gb_dy.npy");
    f.m = P("gb_m.npy");
    f.m32 = P("gb_m32.npy");
    f.r = P("gb_r.npy");
    f.y = P("gb_y.npy");
    f.dx = P("gb_dx.npy");
    f.dg = P("gb_dg.npy");
    f.db = P("gb_db.npy");
    f.ym = P("gb_ym.npy");
    f.yr = P("gb_yr.npy");
    save_f32(f.x, 4, shape, v);
    save_f32(f.x0d, 0, s1, v);
    save_f32(f.x1d, 1, s1, v);
    save_f32(f.x0s, 3, s0s, v);
    save_f32(f.x0c, 3, s0c, v);
    save_f32(f.g, 1, s1, v);
    save_f32(f.g5, 1, s5, v);
    save_f32(f.b7, 1, s7, v);
    save_f32(f.dy, 4, sdy, v);
    save_f32(f.m, 2, sm, v);
    save_f32(f.m32, 2, sm32, v);
    save_f32(f.r, 2, sm, v);
    rm(f.y, f.dx, f.dg, f.db, f.ym, f.yr, NULL);
    return f;
}

/* The CLI fails as expected (exit `code`, one line with needle) and writes no output. */
#define GN_FAIL(code, needle, ...)                                                           \
    do {                                                                                     \
        int rc_ = cli(__VA_ARGS__, NULL);                                                    \
        expect_one_error_line(rc_, needle);                                                  \
        assert_int_equal(rc_, code);                                                         \
        if (file_exists(f.y) || file_exists(f.dx) || file_exists(f.dg) ||                    \
            file_exists(f.db) || file_exists(f.ym) || file_exists(f.yr))                     \
            fail_msg("an output file was created (stderr: %s)", g_err);                      \
    } while (0)

static void test_group_run_refusals(void **state)
{
    bad_files f = prepare();
    (void)state;
    /* Usage (exit 2): options that exclude or need each other, bad values. */
    GN_FAIL(2, "--groups and --residual exclude each other", "run", "--groups", "3",
            "--input", f.x, "--residual", f.x, "--output", f.y);
    GN_FAIL(2, "--groups and --residual exclude each other", "run", "--groups", "3",
            "--input", f.x, "--residual", f.x, "--output", f.y, "--sum-output", f.ym);
    GN_FAIL(2, "--groups and --rms exclude each other", "run", "--groups", "3", "--input", f.x,
            "--output", f.y, "--rms");
    GN_FAIL(2, "--groups and --rms exclude each other", "run", "--groups", "3", "--input", f.x,
            "--output", f.y, "--rms", "--mean", f.ym);
    GN_FAIL(2, "--groups and --axes exclude each other", "run", "--groups", "3", "--input",
            f.x, "--output", f.y, "--axes", "2");
    GN_FAIL(2, "--layout needs --groups", "run", "--input", f.x, "--output", f.y, "--layout",
            "nhwc");
    GN_FAIL(2, "--silu needs --groups", "run", "--input", f.x, "--output", f.y, "--silu");
    GN_FAIL(2, "--groups 0", "run", "--groups", "0", "--input", f.x, "--output", f.y);
    GN_FAIL(2, "--groups: 'three' is not a whole number", "run", "--groups", "three",
            "--input", f.x, "--output", f.y);
    GN_FAIL(2, "--groups: '-3'", "run", "--groups=-3", "--input", f.x, "--output", f.y);
    GN_FAIL(2, "--layout: 'nwhc' is not nchw or nhwc", "run", "--groups", "3", "--layout",
            "nwhc", "--input", f.x, "--output", f.y);
    GN_FAIL(2, "--silu given more than once", "run", "--groups", "3", "--silu", "--silu",
            "--input", f.x, "--output", f.y);
    GN_FAIL(2, "--groups given more than once", "run", "--groups", "3", "--groups", "3",
            "--input", f.x, "--output", f.y);
    GN_FAIL(2, "same file", "run", "--groups", "3", "--input", f.x, "--output", f.y, "--mean",
            f.ym, "--rstd", f.ym);
    GN_FAIL(2, "--cpu and --device", "run", "--groups", "3", "--input", f.x, "--output", f.y,
            "--cpu", "--device", "cpu");
    /* Files (exit 1): G not dividing C, too few dims, empty dims, parameters' lengths. */
    GN_FAIL(1, "--groups 4 does not divide the 6 channels", "run", "--groups", "4", "--input",
            f.x, "--output", f.y, "--cpu");
    GN_FAIL(1, "--groups 12 does not divide the 6 channels", "run", "--groups", "12",
            "--input", f.x, "--output", f.y);
    /* NHWC: the channels are the last dim (5), which 3 does not divide. */
    GN_FAIL(1, "--groups 3 does not divide the 5 channels", "run", "--groups", "3", "--layout",
            "nhwc", "--input", f.x, "--output", f.y);
    GN_FAIL(1, "at least 2 dims", "run", "--groups", "2", "--input", f.x1d, "--output", f.y);
    GN_FAIL(1, "has shape (): --groups needs (N, C, *spatial) with at least 2 dims", "run",
            "--groups", "1", "--input", f.x0d, "--output", f.y);
    GN_FAIL(1, "(N, *spatial, C) with at least 2 dims", "run", "--groups", "2", "--layout",
            "nhwc", "--input", f.x1d, "--output", f.y);
    GN_FAIL(1, "a spatial dim is 0", "run", "--groups", "2", "--input", f.x0s, "--output",
            f.y);
    GN_FAIL(1, "no channels", "run", "--groups", "1", "--input", f.x0c, "--output", f.y);
    GN_FAIL(1, "expected (6,) (the channels of input", "run", "--groups", "3", "--input", f.x,
            "--output", f.y, "--gamma", f.g5);
    GN_FAIL(1, "expected (6,)", "run", "--groups", "3", "--input", f.x, "--output", f.y,
            "--gamma", f.g, "--beta", f.b7, "--mean", f.ym, "--rstd", f.yr);
    GN_FAIL(1, "expected (5,)", "run", "--groups", "1", "--layout", "nhwc", "--input", f.x,
            "--output", f.y, "--gamma", f.g);
    GN_FAIL(1, "missing_x.npy", "run", "--groups", "3", "--input", P("missing_x.npy"),
            "--output", f.y);
}

static void test_group_grad_refusals(void **state)
{
    bad_files f = prepare();
    (void)state;
    /* Usage (exit 2). */
    GN_FAIL(2, "--groups and --residual exclude each other", "grad", "--groups", "3",
            "--input", f.x, "--residual", f.x, "--grad-output", f.x, "--grad-input", f.dx);
    GN_FAIL(2, "--groups and --rms exclude each other", "grad", "--groups", "3", "--input",
            f.x, "--grad-output", f.x, "--grad-input", f.dx, "--rms", "--mean", f.m, "--rstd",
            f.r);
    GN_FAIL(2, "--groups and --axes exclude each other", "grad", "--groups", "3", "--input",
            f.x, "--grad-output", f.x, "--grad-input", f.dx, "--axes", "1");
    GN_FAIL(2, "--silu needs --groups", "grad", "--input", f.x, "--grad-output", f.x,
            "--grad-input", f.dx, "--silu");
    GN_FAIL(2, "--layout needs --groups", "grad", "--input", f.x, "--grad-output", f.x,
            "--grad-input", f.dx, "--layout", "nchw");
    GN_FAIL(2, "--mean needs --rstd", "grad", "--groups", "3", "--input", f.x, "--grad-output",
            f.x, "--grad-input", f.dx, "--mean", f.m);
    GN_FAIL(2, "--rstd needs --mean", "grad", "--groups", "3", "--input", f.x, "--grad-output",
            f.x, "--grad-input", f.dx, "--rstd", f.r);
    GN_FAIL(2, "--rstd needs --mean", "grad", "--input", f.x, "--grad-output", f.x,
            "--grad-input", f.dx, "--rstd", f.r); /* LayerNorm alike */
    GN_FAIL(2, "--mean cannot be used with --rms", "grad", "--input", f.x, "--grad-output",
            f.x, "--grad-input", f.dx, "--rms", "--mean", f.m, "--rstd", f.r);
    GN_FAIL(2, "--grad-beta needs --beta", "grad", "--groups", "3", "--silu", "--input", f.x,
            "--grad-output", f.x, "--grad-input", f.dx, "--grad-beta", f.db);
    GN_FAIL(2, "same file", "grad", "--groups", "3", "--input", f.x, "--grad-output", f.x,
            "--gamma", f.g, "--grad-input", f.dx, "--grad-gamma", f.dx);
    /* Files (exit 1): DY's shape, the saved statistics' shape, G, the parameters. */
    GN_FAIL(1, "expected (2, 6, 3, 5)", "grad", "--groups", "3", "--input", f.x,
            "--grad-output", f.dy, "--grad-input", f.dx);
    GN_FAIL(1, "expected (2, 3) (the samples of input", "grad", "--groups", "3", "--input",
            f.x, "--grad-output", f.x, "--grad-input", f.dx, "--mean", f.m32, "--rstd", f.r);
    GN_FAIL(1, "expected (2, 3)", "grad", "--groups", "3", "--input", f.x, "--grad-output",
            f.x, "--grad-input", f.dx, "--mean", f.m, "--rstd", f.m32, "--cpu");
    GN_FAIL(1, "expected (2, 2)", "grad", "--groups", "2", "--input", f.x, "--grad-output",
            f.x, "--grad-input", f.dx, "--mean", f.m, "--rstd", f.r);
    GN_FAIL(1, "does not divide", "grad", "--groups", "4", "--input", f.x, "--grad-output",
            f.x, "--grad-input", f.dx);
    GN_FAIL(1, "at least 2 dims", "grad", "--groups", "1", "--input", f.x1d, "--grad-output",
            f.x1d, "--grad-input", f.dx);
    GN_FAIL(1, "expected (6,)", "grad", "--groups", "3", "--silu", "--input", f.x,
            "--grad-output", f.x, "--gamma", f.g, "--beta", f.b7, "--grad-input", f.dx,
            "--grad-beta", f.db);
    /* LayerNorm's saved statistics have the leading dims' shape. */
    GN_FAIL(1, "(the leading dims of input", "grad", "--input", f.x, "--grad-output", f.x,
            "--grad-input", f.dx, "--mean", f.m, "--rstd", f.r);
}

int cli_group_tests(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_group_run_nchw),
        cmocka_unit_test(test_group_run_nhwc),
        cmocka_unit_test(test_group_run_bf16),
        cmocka_unit_test(test_group_run_empty_batch),
        cmocka_unit_test(test_group_grad_nchw),
        cmocka_unit_test(test_group_grad_nhwc),
        cmocka_unit_test(test_grad_saved_stats_layer),
        cmocka_unit_test(test_group_mod_run_nchw),
        cmocka_unit_test(test_group_mod_run_nhwc),
        cmocka_unit_test(test_group_mod_run_f64),
        cmocka_unit_test(test_group_mod_grad_nchw),
        cmocka_unit_test(test_group_mod_grad_nhwc),
        cmocka_unit_test(test_group_mod_grad_f64),
        cmocka_unit_test(test_group_mod_empty_batch),
        cmocka_unit_test(test_group_global_run),
        cmocka_unit_test(test_group_global_grad),
        cmocka_unit_test(test_group_help),
        cmocka_unit_test(test_group_run_refusals),
        cmocka_unit_test(test_group_grad_refusals),
        cmocka_unit_test(test_group_mod_refusals),
    };
    return cmocka_run_group_tests_name("cli_group", tests, NULL, NULL);
}
