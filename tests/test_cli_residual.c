/*
 * test_cli_residual.c - `clnorm run` and `clnorm grad` with --residual (the fused residual add,
 * CLNORM_ADD_LAYER / CLNORM_ADD_RMS): y = norm(x + r) and the sum s = x + r against a float64
 * computation done here (s formed in double, then normalized in double; s checked exactly
 * against x + r rounded once to the residual's type by an independent rounding) in every
 * storage type and with the float32 residual of f16 storage; dx = dnorm(dy) + ds against the
 * float64 backward pass (float32, and f16 with a float32 residual); and every bad combination
 * failing cleanly with no output file. Each run is made on the default device and on the CPU
 * reference; the cases share one row length so that few kernel programs are built.
 *
 * The inputs are exact in their storage type and small enough that x + r is exact in float32:
 * the device then normalizes exactly the sum the double reference normalizes.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "cli_test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *const modes[2] = {NULL, "--cpu"}; /* the default device, the reference */

/* ------------------------------------------------------------------------------------------
 * Values exact in a storage type, written in any file type
 * ---------------------------------------------------------------------------------------- */

/* A value exact in the storage `t` (NPY_U16: bfloat16): float32 on a 2^-14 grid below 128,
 * halves and bfloat16 values in [1/8, 8) and [1/2, 4), doubles that are not floats. Any two
 * of them (but doubles) add exactly in float32. */
static double exact_value(npy_dtype t)
{
    double v;
    switch (t) {
    case NPY_F16:
        random_half(&v);
        return v;
    case NPY_U16: {
        int e;
        double f = frexp(0.5 + 3.5 * uniform01(), &e); /* f in [1/2, 1) */
        v = ldexp(rint(ldexp(f, 8)), e - 8);           /* 8 significant bits */
        return uniform01() < 0.5 ? -v : v;
    }
    case NPY_F64:
        return 3.0 + 2.0 * normal01() + 1e-9;
    case NPY_F32:
        break;
    }
    return ldexp(rint(ldexp(20.0 * normal01(), 14)), -14);
}

static double *exact_values(npy_dtype t, size_t n)
{
    double *v = malloc((n ? n : 1) * sizeof *v);
    size_t i;
    assert_non_null(v);
    for (i = 0; i < n; i++)
        v[i] = exact_value(t);
    return v;
}

/* The binary16 bits of a value that is an exact normal half (by frexp, not the library). */
static uint16_t half_bits(double v)
{
    int e;
    double f = frexp(fabs(v), &e); /* |v| = f 2^e, f in [1/2, 1) */
    int biased = e - 1 + 15;
    double m = (2.0 * f - 1.0) * 1024.0;
    assert_true(biased >= 1 && biased <= 30 && m == rint(m));
    return (uint16_t)((v < 0 ? 0x8000u : 0u) | ((unsigned)biased << 10) | (unsigned)m);
}

/* The bfloat16 bits of a value that is an exact bfloat16: the high half of its float. */
static uint16_t bf16_bits(double v)
{
    float f = (float)v;
    uint32_t u;
    assert_true((double)f == v);
    memcpy(&u, &f, sizeof u);
    assert_true((u & 0xffffu) == 0);
    return (uint16_t)(u >> 16);
}

/* Saves values (exact in the file type) as a .npy of type t. */
static void save_values(const char *path, npy_dtype t, int ndim, const size_t *shape,
                        const double *v, size_t n)
{
    void *buf = malloc((n ? n : 1) * 8);
    size_t i;
    assert_non_null(buf);
    for (i = 0; i < n; i++) {
        switch (t) {
        case NPY_F32:
            ((float *)buf)[i] = (float)v[i];
            assert_true((double)((float *)buf)[i] == v[i]);
            break;
        case NPY_F64:
            ((double *)buf)[i] = v[i];
            break;
        case NPY_F16:
            ((uint16_t *)buf)[i] = half_bits(v[i]);
            break;
        case NPY_U16:
            ((uint16_t *)buf)[i] = bf16_bits(v[i]);
            break;
        }
    }
    save_as(path, t, ndim, shape, buf);
    free(buf);
}

/* v rounded once to t, to nearest even: a multiple of the type's spacing at |v| (finite
 * normal results only, which these tests keep to). */
static double round_to(npy_dtype t, double v)
{
    double ulp;
    switch (t) {
    case NPY_F64:
        return v;
    case NPY_F32:
        return (double)(float)v;
    case NPY_F16:
        ulp = half_ulp(v);
        break;
    case NPY_U16:
    default:
        ulp = bf16_ulp(v);
        break;
    }
    return rint(v / ulp) * ulp; /* rint: ties to even in the default rounding mode */
}

static npy_dtype storage_of(const char *dtype, npy_dtype x_file)
{
    if (dtype == NULL)
        return x_file;
    if (strcmp(dtype, "f16") == 0)
        return NPY_F16;
    if (strcmp(dtype, "bf16") == 0)
        return NPY_U16;
    if (strcmp(dtype, "f64") == 0)
        return NPY_F64;
    return NPY_F32;
}

/* The residual's type: float32 for a float32 residual file with f16 / bf16, else the storage. */
static npy_dtype residual_of(npy_dtype storage, npy_dtype r_file)
{
    if (r_file == NPY_F32 && (storage == NPY_F16 || storage == NPY_U16))
        return NPY_F32;
    return storage;
}


/* ------------------------------------------------------------------------------------------
 * A problem: x (and dy) exact in the storage, r (and ds) in the residual's type, float32
 * gamma and beta, written as files of the case's types.
 * ---------------------------------------------------------------------------------------- */
typedef struct {
    npy_dtype x_file, r_file; /* the .npy types of X (and DY) and of R (and DS) */
    const char *dtype;        /* --dtype, or NULL */
    int ndim;
    size_t shape[3];
    const char *axes; /* "1", "2" */
    int rms, gamma, beta;
} res_case;

typedef struct {
    npy_dtype st, rt; /* storage, residual type */
    size_t rows, cols, n;
    int lead;
    double *x, *r, *s, *g, *b; /* s = x + r, exact */
    const char *xp, *rp, *gp, *bp;
} res_problem;

static res_problem make_problem(const res_case *c)
{
    res_problem p;
    const int axes = atoi(c->axes);
    float *g = make_params(16 * 16, 1.0, 0.5), *b = make_params(16 * 16, 0.0, 1.0);
    size_t i;
    int k;
    memset(&p, 0, sizeof p);
    p.st = storage_of(c->dtype, c->x_file);
    p.rt = residual_of(p.st, c->r_file);
    p.lead = c->ndim - axes;
    p.rows = p.cols = 1;
    for (k = 0; k < p.lead; k++)
        p.rows *= c->shape[k];
    for (k = p.lead; k < c->ndim; k++)
        p.cols *= c->shape[k];
    p.n = p.rows * p.cols;
    assert_true(p.cols <= 16 * 16);
    p.x = exact_values(p.st, p.n);
    p.r = exact_values(p.rt, p.n);
    p.s = malloc(p.n * sizeof *p.s);
    assert_non_null(p.s);
    for (i = 0; i < p.n; i++)
        p.s[i] = p.x[i] + p.r[i];
    p.g = widen(g, p.cols);
    p.b = widen(b, p.cols);
    p.xp = P("res_x.npy");
    p.rp = P("res_r.npy");
    p.gp = P("res_g.npy");
    p.bp = P("res_b.npy");
    save_values(p.xp, c->x_file, c->ndim, c->shape, p.x, p.n);
    save_values(p.rp, c->r_file, c->ndim, c->shape, p.r, p.n);
    save_f32(p.gp, axes, c->shape + p.lead, g);
    save_f32(p.bp, axes, c->shape + p.lead, b);
    free(g);
    free(b);
    return p;
}

static void free_problem(res_problem *p)
{
    free(p->x);
    free(p->r);
    free(p->s);
    free(p->g);
    free(p->b);
}

/* A storage output of the case's shape: 1e-5 (f32), 1e-12 (f64), or one ulp + 1e-5. */
static void check_rows(const char *path, npy_dtype st, const res_case *c, const double *want)
{
    if (st == NPY_F16 || st == NPY_U16)
        check_output_ulp(path, st, c->ndim, c->shape, want, 1e-5);
    else if (st == NPY_F64)
        check_output_as(path, NPY_F64, c->ndim, c->shape, want, 1e-12, 1e-12);
    else
        check_output(path, c->ndim, c->shape, want, 1e-5, 1e-5);
}

/* ------------------------------------------------------------------------------------------
 * run --residual
 * ---------------------------------------------------------------------------------------- */

/* Runs the forward of a case on the device and the reference, with and without the sum
 * output (and the statistics when asked), checking y, s, mean and rstd. */
static void check_forward(const res_case *c, int stats)
{
    res_problem p = make_problem(c);
    ref_result want = reference_d(p.s, p.rows, p.cols, c->gamma ? p.g : NULL,
                                  c->beta ? p.b : NULL, 1e-5, c->rms);
    const npy_dtype pt = p.st == NPY_F64 ? NPY_F64 : NPY_F32;
    const char *yp = P("res_y.npy"), *sp = P("res_s.npy"), *mp = P("res_m.npy"),
               *dp = P("res_d.npy");
    double *s_want = malloc(p.n * sizeof *s_want);
    size_t i;
    int m, with_sum;
    assert_non_null(s_want);
    for (i = 0; i < p.n; i++)
        s_want[i] = round_to(p.rt, p.s[i]);
    for (m = 0; m < 2; m++) {
        for (with_sum = 0; with_sum < 2; with_sum++) {
            argv_list l = {{NULL}, 0};
            rm(yp, sp, mp, dp, NULL);
            add(&l, "run");
            add_opt(&l, "--input", p.xp, 1);
            add_opt(&l, "--residual", p.rp, 1);
            add_opt(&l, "--output", yp, 1);
            add_opt(&l, "--sum-output", sp, with_sum);
            add_opt(&l, "--axes", c->axes, 1);
            add_opt(&l, "--dtype", c->dtype, c->dtype != NULL);
            add_opt(&l, "--gamma", p.gp, c->gamma);
            add_opt(&l, "--beta", p.bp, c->beta);
            add_opt(&l, "--mean", mp, stats && !c->rms);
            add_opt(&l, "--rstd", dp, stats);
            add(&l, c->rms ? "--rms" : NULL);
            add(&l, modes[m]);
            expect_ok(cli_v(l.a));
            check_rows(yp, p.st, c, want.y);
            if (with_sum)
                check_output_as(sp, p.rt, c->ndim, c->shape, s_want, 0.0, 0.0);
            else
                assert_false(file_exists(sp));
            if (stats && !c->rms)
                check_output_as(mp, pt, p.lead, c->shape, want.mean, 1e-5, 1e-6);
            if (stats)
                check_output_as(dp, pt, p.lead, c->shape, want.rstd, 0.0, 1e-5);
        }
    }
    free(s_want);
    ref_free(&want);
    free_problem(&p);
}

static void test_run_residual_f32(void **state)
{
    res_case c = {NPY_F32, NPY_F32, NULL, 2, {7, 48, 0}, "1", 0, 1, 1};
    (void)state;
    check_forward(&c, 1);
    c.rms = 1;
    c.beta = 0;
    check_forward(&c, 1);
}

/* Over the last two dims of a 3-d tensor: gamma and beta (4, 12), the statistics (3,). */
static void test_run_residual_axes2(void **state)
{
    res_case c = {NPY_F32, NPY_F32, NULL, 3, {3, 4, 12}, "2", 0, 1, 1};
    (void)state;
    check_forward(&c, 1);
    c.rms = 1;
    check_forward(&c, 0);
}

static void test_run_residual_f16_bf16(void **state)
{
    res_case h = {NPY_F16, NPY_F16, NULL, 2, {6, 48, 0}, "1", 0, 1, 1};
    res_case b = {NPY_U16, NPY_U16, "bf16", 2, {6, 48, 0}, "1", 1, 1, 0};
    (void)state;
    check_forward(&h, 0);
    check_forward(&b, 0);
}

static void test_run_residual_f64(void **state)
{
    res_case c = {NPY_F64, NPY_F64, NULL, 2, {6, 48, 0}, "1", 0, 1, 1};
    (void)state;
    check_forward(&c, 1);
}

/* f16 storage with a float32 residual: the sum is formed and written in float32. The same
 * with --dtype f16 given, and with float32 files for both X and R: --dtype rounds X to f16,
 * the residual stays float32. */
static void test_run_residual_f32_with_short_storage(void **state)
{
    res_case h = {NPY_F16, NPY_F32, NULL, 2, {6, 48, 0}, "1", 0, 1, 1};
    res_case f = {NPY_F32, NPY_F32, "f16", 2, {6, 48, 0}, "1", 0, 1, 0};
    (void)state;
    check_forward(&h, 1);
    h.dtype = "f16";
    h.rms = 1;
    check_forward(&h, 0);
    check_forward(&f, 0);
}

/* --dtype converts the residual as it converts X (float64 files to float32 storage: the sum
 * is then float32); a residual already in the storage is taken as it is. */
static void test_run_residual_dtype_conversion(void **state)
{
    res_case c = {NPY_F64, NPY_F64, "f32", 2, {5, 48, 0}, "1", 0, 0, 0};
    (void)state;
    check_forward(&c, 0);
    c.r_file = NPY_F32;
    check_forward(&c, 0);
}

/* The sum may replace the residual file: in place, as vLLM's fused_add_rms_norm updates the
 * residual stream. */
static void test_run_residual_in_place(void **state)
{
    res_case c = {NPY_F32, NPY_F32, NULL, 2, {4, 48, 0}, "1", 1, 1, 0};
    res_problem p = make_problem(&c);
    ref_result want = reference_d(p.s, p.rows, p.cols, p.g, NULL, 1e-5, 1);
    const char *yp = P("rip_y.npy");
    (void)state;
    rm(yp, NULL);
    expect_ok(cli("run", "--input", p.xp, "--residual", p.rp, "--output", yp, "--sum-output",
                  p.rp, "--gamma", p.gp, "--rms", NULL));
    check_rows(yp, NPY_F32, &c, want.y);
    check_output(p.rp, c.ndim, c.shape, p.s, 0.0, 0.0);
    ref_free(&want);
    free_problem(&p);
}

/* ------------------------------------------------------------------------------------------
 * grad --residual
 * ---------------------------------------------------------------------------------------- */

/* dx = dnorm(dy) at s = x + r, plus ds; dgamma and dbeta of s. On the device and the
 * reference, with and without --grad-sum-output. */
static void check_backward(const res_case *c)
{
    res_problem p = make_problem(c);
    double *dy = exact_values(p.st, p.n), *ds = exact_values(p.rt, p.n);
    double *dx = malloc(p.n * sizeof *dx), scale = 1.0;
    const double rel = p.st == NPY_F64 ? 1e-12 : 1e-5;
    const npy_dtype pt = p.st == NPY_F64 ? NPY_F64 : NPY_F32;
    const char *dyp = P("rg_dy.npy"), *dsp = P("rg_ds.npy"), *dxp = P("rg_dx.npy"),
               *dgp = P("rg_dg.npy"), *dbp = P("rg_db.npy");
    grad_result want = grad_reference(p.s, dy, p.rows, p.cols, c->gamma ? p.g : NULL, 1e-5,
                                      c->rms);
    size_t i;
    int m, with_ds;
    assert_non_null(dx);
    save_values(dyp, c->x_file, c->ndim, c->shape, dy, p.n);
    save_values(dsp, c->r_file, c->ndim, c->shape, ds, p.n);
    for (m = 0; m < 2; m++) {
        for (with_ds = 0; with_ds < 2; with_ds++) {
            argv_list l = {{NULL}, 0};
            double *got;
            for (i = 0; i < p.n; i++) {
                dx[i] = want.dx[i] + (with_ds ? ds[i] : 0.0);
                if (fabs(dx[i]) > scale)
                    scale = fabs(dx[i]);
            }
            rm(dxp, dgp, dbp, NULL);
            add(&l, "grad");
            add_opt(&l, "--input", p.xp, 1);
            add_opt(&l, "--residual", p.rp, 1);
            add_opt(&l, "--grad-output", dyp, 1);
            add_opt(&l, "--grad-sum-output", dsp, with_ds);
            add_opt(&l, "--grad-input", dxp, 1);
            add_opt(&l, "--axes", c->axes, 1);
            add_opt(&l, "--dtype", c->dtype, c->dtype != NULL);
            add_opt(&l, "--gamma", p.gp, c->gamma);
            add_opt(&l, "--beta", p.bp, c->beta);
            add_opt(&l, "--grad-gamma", dgp, c->gamma);
            add_opt(&l, "--grad-beta", dbp, c->beta);
            add(&l, c->rms ? "--rms" : NULL);
            add(&l, modes[m]);
            expect_ok(cli_v(l.a));
            if (p.st == NPY_F16 || p.st == NPY_U16) {
                check_output_ulp(dxp, p.st, c->ndim, c->shape, dx, rel * scale);
            } else {
                got = load_values(dxp, p.st, c->ndim, c->shape);
                check_max_err("dx", got, dx, p.n, rel);
                free(got);
            }
            if (c->gamma) {
                got = load_values(dgp, pt, c->ndim - p.lead, c->shape + p.lead);
                check_norm_err("dgamma", got, want.dgamma, p.cols, rel);
                free(got);
            }
            if (c->beta) {
                got = load_values(dbp, pt, c->ndim - p.lead, c->shape + p.lead);
                check_norm_err("dbeta", got, want.dbeta, p.cols, rel);
                free(got);
            }
        }
    }
    grad_free(&want);
    free(dy);
    free(ds);
    free(dx);
    free_problem(&p);
}

static void test_grad_residual_f32(void **state)
{
    res_case c = {NPY_F32, NPY_F32, NULL, 2, {7, 48, 0}, "1", 0, 1, 1};
    res_case a = {NPY_F32, NPY_F32, NULL, 3, {3, 4, 12}, "2", 1, 1, 0};
    (void)state;
    check_backward(&c);
    check_backward(&a); /* RMSNorm over two dims */
}

static void test_grad_residual_f16_f32(void **state)
{
    res_case c = {NPY_F16, NPY_F32, NULL, 2, {6, 48, 0}, "1", 0, 1, 1};
    (void)state;
    check_backward(&c);
}

/* ------------------------------------------------------------------------------------------
 * Help, and bad combinations: one stderr line, a non-zero exit, no output file.
 * ---------------------------------------------------------------------------------------- */
static void test_residual_help(void **state)
{
    (void)state;
    expect_ok(cli("--help", NULL));
    assert_non_null(strstr(g_out, "--residual"));
    expect_ok(cli("run", "--help", NULL));
    assert_non_null(strstr(g_out, "--residual R.npy"));
    assert_non_null(strstr(g_out, "--sum-output S.npy"));
    expect_ok(cli("grad", "--help", NULL));
    assert_non_null(strstr(g_out, "--residual R.npy"));
    assert_non_null(strstr(g_out, "--grad-sum-output DS.npy"));
}

typedef struct {
    const char *x, *r, *r42, *r64, *r16, *ru2, *h, *g;
    const char *y, *s, *m, *dx, *dg, *ds16, *ds32;
} bad_res_files;

static bad_res_files prepare(void)
{
    bad_res_files f;
    size_t shape[2] = {4, 3}, s42[2] = {4, 2}, s3[1] = {3};
    float x[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 0, 1}, g[3] = {1, 1, 1};
    double d[12] = {0.5, 1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 0};
    uint16_t h[12];
    size_t i;
    for (i = 0; i < 12; i++)
        h[i] = half_bits(x[i] != 0.0f ? (double)x[i] : 1.0);
    f.x = P("rb_x.npy");
    f.r = P("rb_r.npy");
    f.r42 = P("rb_r42.npy");
    f.r64 = P("rb_r64.npy");
    f.r16 = P("rb_r16.npy");
    f.ru2 = P("rb_ru2.npy");
    f.h = P("rb_h.npy");
    f.g = P("rb_g.npy");
    f.y = P("rb_y.npy");
    f.s = P("rb_s.npy");
    f.m = P("rb_m.npy");
    f.dx = P("rb_dx.npy");
    f.dg = P("rb_dg.npy");
    f.ds16 = f.h; /* a float16 DS */
    f.ds32 = f.r; /* a float32 DS */
    save_f32(f.x, 2, shape, x);
    save_f32(f.r, 2, shape, x);
    save_f32(f.r42, 2, s42, x);
    save_as(f.r64, NPY_F64, 2, shape, d);
    save_as(f.r16, NPY_F16, 2, shape, h);
    save_as(f.ru2, NPY_U16, 2, shape, h);
    save_as(f.h, NPY_F16, 2, shape, h);
    save_f32(f.g, 1, s3, g);
    rm(f.y, f.s, f.m, f.dx, f.dg, NULL);
    return f;
}

/* The CLI fails as expected (exit `code`, one line with needle) and writes no output. */
#define RES_FAIL(code, needle, ...)                                                          \
    do {                                                                                     \
        int rc_ = cli(__VA_ARGS__, NULL);                                                    \
        expect_one_error_line(rc_, needle);                                                  \
        assert_int_equal(rc_, code);                                                         \
        if (file_exists(f.y) || file_exists(f.s) || file_exists(f.m) || file_exists(f.dx) || \
            file_exists(f.dg))                                                               \
            fail_msg("an output file was created (stderr: %s)", g_err);                      \
    } while (0)

static void test_run_residual_refusals(void **state)
{
    bad_res_files f = prepare();
    int before;
    (void)state;
    /* Usage (exit 2): a sum without a residual, outputs on one file, a mean with RMSNorm. */
    RES_FAIL(2, "--sum-output needs --residual", "run", "--input", f.x, "--output", f.y,
             "--sum-output", f.s);
    RES_FAIL(2, "--sum-output needs --residual", "run", "--input", f.x, "--output", f.y,
             "--sum-output", f.s, "--rms", "--cpu");
    RES_FAIL(2, "same file", "run", "--input", f.x, "--residual", f.r, "--output", f.y,
             "--sum-output", f.y);
    RES_FAIL(2, "same file", "run", "--input", f.x, "--residual", f.r, "--output", f.y,
             "--mean", f.m, "--sum-output", f.m);
    RES_FAIL(2, "--mean cannot be used with --rms", "run", "--input", f.x, "--residual", f.r,
             "--output", f.y, "--rms", "--mean", f.m);
    RES_FAIL(2, "--residual needs a value", "run", "--input", f.x, "--output", f.y,
             "--residual");
    RES_FAIL(2, "more than once", "run", "--input", f.x, "--residual", f.r, "--residual", f.r,
             "--output", f.y);
    /* Files (exit 1): the residual's shape, a third type, uint16 without bf16, missing. */
    RES_FAIL(1, "expected (4, 3)", "run", "--input", f.x, "--residual", f.r42, "--output", f.y,
             "--sum-output", f.s);
    RES_FAIL(1, "residual", "run", "--input", f.x, "--residual", f.r64, "--output", f.y,
             "--sum-output", f.s);
    RES_FAIL(1, "float64", "run", "--input", f.h, "--residual", f.r64, "--output", f.y,
             "--sum-output", f.s);
    RES_FAIL(1, "float16", "run", "--input", f.x, "--residual", f.r16, "--output", f.y,
             "--cpu");
    RES_FAIL(1, "--dtype bf16", "run", "--input", f.x, "--residual", f.ru2, "--output", f.y);
    RES_FAIL(1, "missing_r.npy", "run", "--input", f.x, "--residual", P("missing_r.npy"),
             "--output", f.y, "--sum-output", f.s);
    /* The sum's file cannot be written: Y is not left behind either, nor a temporary. */
    before = count_dir_entries(g_dir);
    RES_FAIL(1, "no_such_dir/s.npy", "run", "--input", f.x, "--residual", f.r, "--output", f.y,
             "--sum-output", P("no_such_dir/s.npy"));
    assert_int_equal(count_dir_entries(g_dir), before);
}

static void test_grad_residual_refusals(void **state)
{
    bad_res_files f = prepare();
    (void)state;
    RES_FAIL(2, "--grad-sum-output needs --residual", "grad", "--input", f.x, "--grad-output",
             f.x, "--grad-sum-output", f.ds32, "--grad-input", f.dx);
    RES_FAIL(2, "--grad-sum-output needs --grad-input", "grad", "--input", f.x, "--residual",
             f.r, "--grad-output", f.x, "--grad-sum-output", f.ds32, "--gamma", f.g,
             "--grad-gamma", f.dg);
    RES_FAIL(2, "--sum-output", "grad", "--input", f.x, "--residual", f.r, "--grad-output", f.x,
             "--grad-input", f.dx, "--sum-output", f.s); /* a forward option */
    RES_FAIL(2, "same file", "grad", "--input", f.x, "--residual", f.r, "--grad-output", f.x,
             "--gamma", f.g, "--grad-input", f.dx, "--grad-gamma", f.dx);
    RES_FAIL(1, "expected (4, 3)", "grad", "--input", f.x, "--residual", f.r42, "--grad-output",
             f.x, "--grad-input", f.dx);
    RES_FAIL(1, "residual", "grad", "--input", f.x, "--residual", f.r64, "--grad-output", f.x,
             "--grad-input", f.dx);
    /* DS has the residual's shape and type: float32 here (f16 storage, float32 residual). */
    RES_FAIL(1, "expected (4, 3)", "grad", "--input", f.h, "--residual", f.r, "--grad-output",
             f.h, "--grad-sum-output", f.r42, "--grad-input", f.dx);
    RES_FAIL(1, "grad-sum-output", "grad", "--input", f.h, "--residual", f.r, "--grad-output",
             f.h, "--grad-sum-output", f.ds16, "--grad-input", f.dx);
    RES_FAIL(1, "missing_ds.npy", "grad", "--input", f.x, "--residual", f.r, "--grad-output",
             f.x, "--grad-sum-output", P("missing_ds.npy"), "--grad-input", f.dx);
}

int cli_residual_tests(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_run_residual_f32),
        cmocka_unit_test(test_run_residual_axes2),
        cmocka_unit_test(test_run_residual_f16_bf16),
        cmocka_unit_test(test_run_residual_f64),
        cmocka_unit_test(test_run_residual_f32_with_short_storage),
        cmocka_unit_test(test_run_residual_dtype_conversion),
        cmocka_unit_test(test_run_residual_in_place),
        cmocka_unit_test(test_grad_residual_f32),
        cmocka_unit_test(test_grad_residual_f16_f32),
        cmocka_unit_test(test_residual_help),
        cmocka_unit_test(test_run_residual_refusals),
        cmocka_unit_test(test_grad_residual_refusals),
    };
    return cmocka_run_group_tests_name("cli_residual", tests, NULL, NULL);
}
