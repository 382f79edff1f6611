/*
 * test_cli_group.c - `clnorm run` and `clnorm grad` with --groups (GroupNorm, CLNORM_GROUP):
 * y (and the saved mean and rstd, (N, G)) in NCHW and NHWC, with and without the fused SiLU,
 * gamma and beta, in float32 and in bfloat16 storage, and dx, dgamma and dbeta (statistics
 * recomputed, or the forward's read back with --mean / --rstd), each against the library's
 * CPU reference (clnorm_ref_execute) run here on the same description and the same inputs
 * rounded as the tool rounds them; `grad --mean/--rstd` for LayerNorm too; and every bad
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
 * Help, and bad combinations: one stderr line, a non-zero exit, no output file.
 * ---------------------------------------------------------------------------------------- */
static void test_group_help(void **state)
{
    (void)state;
    expect_ok(cli("run", "--help", NULL));
    assert_non_null(strstr(g_out, "--groups G"));
    assert_non_null(strstr(g_out, "--layout"));
    assert_non_null(strstr(g_out, "--silu"));
    expect_ok(cli("grad", "--help", NULL));
    assert_non_null(strstr(g_out, "--groups G"));
    assert_non_null(strstr(g_out, "--mean M.npy"));
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
        cmocka_unit_test(test_group_help),
        cmocka_unit_test(test_group_run_refusals),
        cmocka_unit_test(test_group_grad_refusals),
    };
    return cmocka_run_group_tests_name("cli_group", tests, NULL, NULL);
}
