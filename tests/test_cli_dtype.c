/*
 * test_cli_dtype.c - `clnorm run` and `clnorm grad` with --dtype: float16 files stay float16,
 * bfloat16 travels as raw bits in uint16 files, float64 stays float64 (to 1e-12), --dtype
 * converts (rounding to nearest even, checked exactly), and the refusals.
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

#define ROWS 6
#define COLS 40
#define N (ROWS * COLS)

static const char *const modes[2] = {NULL, "--cpu"}; /* the default device, the reference */

/* bfloat16 bits of a float, truncated: an exact bfloat16 value. */
static uint16_t bf16_trunc(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return (uint16_t)(u >> 16);
}

/* ------------------------------------------------------------------------------------------
 * run
 * ---------------------------------------------------------------------------------------- */
static void test_run_f16(void **state)
{
    size_t shape[2] = {ROWS, COLS}, pshape[1] = {COLS}, i;
    uint16_t xh[N], bh[COLS];
    double xd[N], bd[COLS], gd[COLS];
    float xf[N], gf[COLS];
    const char *xp = P("h_x.npy"), *xfp = P("h_xf.npy"), *gp = P("h_g.npy"),
               *bp = P("h_b.npy"), *yp = P("h_y.npy"), *sp = P("h_s.npy");
    ref_result r;
    int m;
    (void)state;
    for (i = 0; i < N; i++) {
        xh[i] = random_half(&xd[i]);
        xf[i] = (float)xd[i];
    }
    for (i = 0; i < COLS; i++) {
        gf[i] = (float)(1.0 + 0.25 * normal01());
        gd[i] = gf[i];
        bh[i] = random_half(&bd[i]);
    }
    save_as(xp, NPY_F16, 2, shape, xh);
    save_f32(xfp, 2, shape, xf);
    save_f32(gp, 1, pshape, gf);
    save_as(bp, NPY_F16, 1, pshape, bh);
    r = reference_d(xd, ROWS, COLS, gd, bd, 1e-5, 0);
    for (m = 0; m < 2; m++) {
        /* float16 in, float16 out; rstd in float32. */
        rm(yp, sp, NULL);
        expect_ok(cli("run", "--input", xp, "--output", yp, "--gamma", gp, "--beta", bp,
                      "--rstd", sp, modes[m], NULL));
        check_output_ulp(yp, NPY_F16, 2, shape, r.y, 1e-5);
        check_output(sp, 1, shape, r.rstd, 0.0, 1e-5);
        /* --dtype f32 with a float16 input: float32 out. */
        expect_ok(cli("run", "--input", xp, "--output", yp, "--gamma", gp, "--beta", bp,
                      "--dtype", "f32", modes[m], NULL));
        check_output(yp, 2, shape, r.y, 1e-5, 1e-5);
        /* --dtype f16 with a float32 input (exact half values): float16 out. */
        expect_ok(cli("run", "--input", xfp, "--output", yp, "--gamma", gp, "--beta", bp,
                      "--dtype=f16", modes[m], NULL));
        check_output_ulp(yp, NPY_F16, 2, shape, r.y, 1e-5);
    }
    ref_free(&r);
}

static void test_run_bf16(void **state)
{
    size_t shape[2] = {ROWS, COLS}, i;
    uint16_t xb[N];
    double xd[N], *y1;
    float *xf = make_rows(ROWS, COLS), xbf[N];
    const char *xp = P("b_x.npy"), *xfp = P("b_xf.npy"), *yp = P("b_y.npy"),
               *y2p = P("b_y2.npy");
    ref_result r, r2;
    int m;
    (void)state;
    for (i = 0; i < N; i++) {
        xb[i] = bf16_trunc(xf[i]);
        xd[i] = bf16_value(xb[i]);
        xbf[i] = (float)xd[i];
    }
    save_as(xp, NPY_U16, 2, shape, xb);
    save_f32(xfp, 2, shape, xbf);
    r = reference_d(xd, ROWS, COLS, NULL, NULL, 1e-5, 0);
    for (m = 0; m < 2; m++) {
        /* Raw bfloat16 bits in, raw bits out. */
        rm(yp, y2p, NULL);
        expect_ok(cli("run", "--input", xp, "--output", yp, "--dtype", "bf16", modes[m], NULL));
        check_output_ulp(yp, NPY_U16, 2, shape, r.y, 1e-5);
        /* Round trip: the output is a valid bf16 input. */
        y1 = load_values(yp, NPY_U16, 2, shape);
        r2 = reference_d(y1, ROWS, COLS, NULL, NULL, 1e-5, 0);
        expect_ok(cli("run", "--input", yp, "--output", y2p, "--dtype", "bf16", modes[m], NULL));
        check_output_ulp(y2p, NPY_U16, 2, shape, r2.y, 1e-5);
        ref_free(&r2);
        free(y1);
        /* A float32 input (exact bfloat16 values) with --dtype bf16. */
        expect_ok(cli("run", "--input", xfp, "--output", yp, "--dtype", "bf16", modes[m], NULL));
        check_output_ulp(yp, NPY_U16, 2, shape, r.y, 1e-5);
    }
    ref_free(&r);
    free(xf);
}

static void test_run_f64(void **state)
{
    size_t shape[2] = {ROWS, COLS}, pshape[1] = {COLS}, i;
    double xd[N], gd[COLS], bd[COLS];
    float bf[COLS];
    const char *xp = P("d_x.npy"), *gp = P("d_g.npy"), *bp = P("d_b.npy"), *yp = P("d_y.npy"),
               *mp = P("d_m.npy"), *sp = P("d_s.npy");
    ref_result r;
    int m;
    (void)state;
    for (i = 0; i < N; i++)
        xd[i] = 3.0 + 2.0 * normal01() + 1e-9; /* not float values */
    for (i = 0; i < COLS; i++) {
        gd[i] = 1.0 + 0.25 * normal01();
        bf[i] = (float)normal01();
        bd[i] = bf[i];
    }
    save_as(xp, NPY_F64, 2, shape, xd);
    save_as(gp, NPY_F64, 1, pshape, gd);
    save_f32(bp, 1, pshape, bf); /* a float32 beta is widened */
    r = reference_d(xd, ROWS, COLS, gd, bd, 1e-5, 0);
    for (m = 0; m < 2; m++) {
        rm(yp, mp, sp, NULL);
        expect_ok(cli("run", "--input", xp, "--output", yp, "--gamma", gp, "--beta", bp,
                      "--mean", mp, "--rstd", sp, modes[m], NULL));
        check_output_as(yp, NPY_F64, 2, shape, r.y, 1e-12, 1e-12);
        check_output_as(mp, NPY_F64, 1, shape, r.mean, 1e-12, 1e-12);
        check_output_as(sp, NPY_F64, 1, shape, r.rstd, 0.0, 1e-12);
        /* --dtype f32 with a float64 input: float32 out. */
        expect_ok(cli("run", "--input", xp, "--output", yp, "--gamma", gp, "--beta", bp,
                      "--dtype", "f32", modes[m], NULL));
        check_output(yp, 2, shape, r.y, 1e-5, 1e-5);
    }
    ref_free(&r);
}

/* float64 storage computes with eps as given, the default 1e-5 included, not rounded to
 * float32 first: rows whose variance (1e-6) is below eps show the difference at 1e-8 of rstd
 * (float32(1e-5) is 1e-5 - 2.5e-13), where float64 keeps 1e-12. An eps of 1e-60 is valid
 * in float64 and refused for float32 storage, whose arithmetic would make it 0. */
static void test_run_f64_eps(void **state)
{
    size_t shape[2] = {ROWS, COLS}, i;
    double xd[N];
    const char *xp = P("de_x.npy"), *yp = P("de_y.npy"), *sp = P("de_s.npy");
    const char *eps_text[] = {NULL, "1e-5", "3e-7", "1e-60"};
    const double eps[] = {1e-5, 1e-5, 3e-7, 1e-60};
    ref_result r;
    int m;
    size_t e;
    (void)state;
    for (i = 0; i < N; i++)
        xd[i] = 3.0 + 1e-3 * normal01();
    save_as(xp, NPY_F64, 2, shape, xd);
    for (e = 0; e < sizeof eps / sizeof eps[0]; e++) {
        r = reference_d(xd, ROWS, COLS, NULL, NULL, eps[e], 0);
        for (m = 0; m < 2; m++) {
            rm(yp, sp, NULL);
            if (eps_text[e] != NULL)
                expect_ok(cli("run", "--input", xp, "--output", yp, "--rstd", sp, "--eps",
                              eps_text[e], modes[m], NULL));
            else
                expect_ok(cli("run", "--input", xp, "--output", yp, "--rstd", sp, modes[m],
                              NULL));
            check_output_as(sp, NPY_F64, 1, shape, r.rstd, 0.0, 1e-12);
            check_output_as(yp, NPY_F64, 2, shape, r.y, 1e-10, 1e-10);
        }
        ref_free(&r);
    }
    rm(yp, NULL);
    expect_one_error_line(cli("run", "--input", xp, "--output", yp, "--eps", "1e-60", "--dtype",
                              "f32", NULL),
                          "rounds to 0 in float32");
    if (file_exists(yp))
        fail_msg("--eps 1e-60 with --dtype f32 wrote %s", yp);
}

/* ------------------------------------------------------------------------------------------
 * grad
 * ---------------------------------------------------------------------------------------- */

/* dx, dgamma, dbeta of float64 inputs by the float64 formulas (LayerNorm). */
static void grad_ref(const double *x, const double *dy, const double *gamma, double *dx,
                     double *dgamma, double *dbeta)
{
    ref_result f = reference_d(x, ROWS, COLS, NULL, NULL, 1e-5, 0);
    size_t i, j;
    memset(dgamma, 0, COLS * sizeof *dgamma);
    memset(dbeta, 0, COLS * sizeof *dbeta);
    for (i = 0; i < ROWS; i++) {
        double mg = 0.0, mgx = 0.0;
        for (j = 0; j < COLS; j++) {
            double xh = (x[i * COLS + j] - f.mean[i]) * f.rstd[i], g = dy[i * COLS + j] * gamma[j];
            mg += g / COLS;
            mgx += g * xh / COLS;
            dgamma[j] += dy[i * COLS + j] * xh;
            dbeta[j] += dy[i * COLS + j];
        }
        for (j = 0; j < COLS; j++) {
            double xh = (x[i * COLS + j] - f.mean[i]) * f.rstd[i], g = dy[i * COLS + j] * gamma[j];
            dx[i * COLS + j] = f.rstd[i] * (g - mg - xh * mgx);
        }
    }
    ref_free(&f);
}

/* Runs grad on x, dy (files of the given types, values xd, dyd) and checks dx in the storage
 * `st` (tolerance: rel * max(1, max|dx|), plus one ulp for half / bfloat16) and dgamma /
 * dbeta in the parameter type `pt` (norm-relative rel). */
static void check_grad(const char *xp, const char *dyp, const char *dtype, const double *xd,
                       const double *dyd, npy_dtype st, npy_dtype pt, double rel)
{
    size_t shape[2] = {ROWS, COLS}, pshape[1] = {COLS}, i;
    float gf[COLS], bf[COLS];
    double gd[COLS], dx[N], dg[COLS], db[COLS], scale = 1.0, *got;
    const char *gp = P("gd_g.npy"), *bp = P("gd_b.npy"), *dxp = P("gd_dx.npy"),
               *dgp = P("gd_dg.npy"), *dbp = P("gd_db.npy");
    int m;
    for (i = 0; i < COLS; i++) {
        gf[i] = (float)(1.0 + 0.5 * normal01());
        gd[i] = gf[i];
        bf[i] = 0.0f;
    }
    save_f32(gp, 1, pshape, gf);
    save_f32(bp, 1, pshape, bf);
    grad_ref(xd, dyd, gd, dx, dg, db);
    for (i = 0; i < N; i++)
        if (fabs(dx[i]) > scale)
            scale = fabs(dx[i]);
    for (m = 0; m < 2; m++) {
        rm(dxp, dgp, dbp, NULL);
        expect_ok(cli("grad", "--input", xp, "--grad-output", dyp, "--gamma", gp, "--beta", bp,
                      "--grad-input", dxp, "--grad-gamma", dgp, "--grad-beta", dbp, "--dtype",
                      dtype, modes[m], NULL));
        if (st == NPY_F16 || st == NPY_U16)
            check_output_ulp(dxp, st, 2, shape, dx, rel * scale);
        else
            check_output_as(dxp, st, 2, shape, dx, rel * scale, 0.0);
        got = load_values(dgp, pt, 1, pshape);
        check_norm_err("dgamma", got, dg, COLS, rel);
        free(got);
        got = load_values(dbp, pt, 1, pshape);
        check_norm_err("dbeta", got, db, COLS, rel);
        free(got);
    }
}

static void test_grad_f64(void **state)
{
    size_t shape[2] = {ROWS, COLS}, i;
    double xd[N], dyd[N];
    const char *xp = P("gd_x.npy"), *dyp = P("gd_dy.npy");
    (void)state;
    for (i = 0; i < N; i++) {
        xd[i] = 1.0 + 3.0 * normal01() + 1e-9;
        dyd[i] = normal01();
    }
    save_as(xp, NPY_F64, 2, shape, xd);
    save_as(dyp, NPY_F64, 2, shape, dyd);
    check_grad(xp, dyp, "f64", xd, dyd, NPY_F64, NPY_F64, 1e-12);
}

static void test_grad_f16_bf16(void **state)
{
    size_t shape[2] = {ROWS, COLS}, i;
    uint16_t xh[N], dyh[N], xb[N], dyb[N];
    double xd[N], dyd[N];
    const char *xp = P("gh_x.npy"), *dyp = P("gh_dy.npy");
    (void)state;
    for (i = 0; i < N; i++) {
        xh[i] = random_half(&xd[i]);
        dyh[i] = random_half(&dyd[i]);
    }
    save_as(xp, NPY_F16, 2, shape, xh);
    save_as(dyp, NPY_F16, 2, shape, dyh);
    check_grad(xp, dyp, "f16", xd, dyd, NPY_F16, NPY_F32, 1e-5);
    for (i = 0; i < N; i++) {
        xb[i] = bf16_trunc((float)(2.0 * normal01()));
        dyb[i] = bf16_trunc((float)normal01());
        xd[i] = bf16_value(xb[i]);
        dyd[i] = bf16_value(dyb[i]);
    }
    save_as(xp, NPY_U16, 2, shape, xb);
    save_as(dyp, NPY_U16, 2, shape, dyb);
    check_grad(xp, dyp, "bf16", xd, dyd, NPY_U16, NPY_F32, 1e-5);
}

/* ------------------------------------------------------------------------------------------
 * Conversions. With one row, dbeta is dy itself, as stored: the float32 dbeta shows exactly
 * how each dy value was rounded to half or bfloat16.
 * ---------------------------------------------------------------------------------------- */
typedef struct {
    double in, want;
} conv_case;

static void check_conversions(const char *dtype, npy_dtype file_type, const conv_case *c,
                              size_t n)
{
    size_t shape[2] = {1, 0}, pshape[1], i;
    double xd[16], dd[16], want[16];
    float df[16], zero[16] = {0};
    const char *xp = P("cv_x.npy"), *dyp = P("cv_dy.npy"), *bp = P("cv_b.npy"),
               *dbp = P("cv_db.npy");
    int m;
    assert_true(n <= 16);
    shape[1] = pshape[0] = n;
    for (i = 0; i < n; i++) {
        xd[i] = 0.25 * (double)i;
        dd[i] = c[i].in;
        df[i] = file_type == NPY_F32 ? (float)c[i].in : 0.0f; /* the f32 cases are floats */
        want[i] = c[i].want;
    }
    save_as(xp, NPY_F64, 2, shape, xd);
    if (file_type == NPY_F64)
        save_as(dyp, NPY_F64, 2, shape, dd);
    else
        save_f32(dyp, 2, shape, df);
    save_f32(bp, 1, pshape, zero);
    for (m = 0; m < 2; m++) {
        rm(dbp, NULL);
        expect_ok(cli("grad", "--input", xp, "--grad-output", dyp, "--beta", bp, "--grad-beta",
                      dbp, "--dtype", dtype, modes[m], NULL));
        check_output(dbp, 1, pshape, want, 0.0, 0.0);
    }
}

static void test_conversion_rounding(void **state)
{
    const conv_case f16_from_f64[] = {
        {1.0 + 0x1p-11 + 0x1p-40, 1.0 + 0x1p-10}, /* just above a tie: up (not a double
                                                     rounding through float, which ties) */
        {1.0 + 0x1p-11, 1.0},                     /* a tie: to even */
        {1.0 + 3 * 0x1p-11, 1.0 + 0x1p-9},        /* a tie: to even, up */
        {65519.99, 65504.0},                      /* below half an ulp past the largest */
        {65520.0, INFINITY},                      /* a tie past the largest: overflow */
        {-(0x1p-25 + 0x1p-60), -0x1p-24},         /* above half the smallest subnormal */
        {0x1p-25, 0.0},                           /* exactly half of it: to even (zero) */
        {-3.0, -3.0},
    };
    const conv_case f16_from_f32[] = {
        {1.0 + 0x1p-11 + 0x1p-23, 1.0 + 0x1p-10},
        {1.0 + 0x1p-11, 1.0},
        {-1.0 - 3 * 0x1p-11, -1.0 - 0x1p-9},
        {1e6, INFINITY},
    };
    const conv_case bf16_from_f64[] = {
        {1.0 + 0x1p-8 + 0x1p-40, 1.0 + 0x1p-7},
        {1.0 + 0x1p-8, 1.0},
        {1.0 + 3 * 0x1p-8, 1.0 + 0x1p-6},
        {-1e39, -INFINITY}, /* beyond float32 too */
        {0.1, 0x1.9ap-4},
    };
    const conv_case bf16_from_f32[] = {
        {1.0 + 0x1p-8 + 0x1p-23, 1.0 + 0x1p-7},
        {1.0 + 0x1p-8, 1.0},
        {-(1.0 + 3 * 0x1p-8), -(1.0 + 0x1p-6)},
    };
    (void)state;
    check_conversions("f16", NPY_F64, f16_from_f64, sizeof f16_from_f64 / sizeof f16_from_f64[0]);
    check_conversions("f16", NPY_F32, f16_from_f32, sizeof f16_from_f32 / sizeof f16_from_f32[0]);
    check_conversions("bf16", NPY_F64, bf16_from_f64,
                      sizeof bf16_from_f64 / sizeof bf16_from_f64[0]);
    check_conversions("bf16", NPY_F32, bf16_from_f32,
                      sizeof bf16_from_f32 / sizeof bf16_from_f32[0]);
}

/* ------------------------------------------------------------------------------------------
 * Refusals
 * ---------------------------------------------------------------------------------------- */
static void test_dtype_refusals(void **state)
{
    size_t shape[2] = {2, 3}, pshape[1] = {3};
    uint16_t u[6] = {0x3f80, 0x4000, 0x4040, 0x3f80, 0x3f80, 0x4080};
    float x[6] = {1, 2, 3, 1, 1, 4};
    const char *up = P("r_u2.npy"), *xp = P("r_x.npy"), *gup = P("r_gu2.npy"), *yp = P("r_y.npy");
    (void)state;
    save_as(up, NPY_U16, 2, shape, u);
    save_as(gup, NPY_U16, 1, pshape, u);
    save_f32(xp, 2, shape, x);
    rm(yp, NULL);
    /* uint16 needs --dtype bf16, even with another --dtype given. */
    expect_one_error_line(cli("run", "--input", up, "--output", yp, NULL), "--dtype bf16");
    expect_one_error_line(cli("run", "--input", up, "--output", yp, "--dtype", "f32", NULL),
                          "--dtype bf16");
    expect_one_error_line(cli("run", "--input", up, "--output", yp, "--dtype", "f16", "--cpu",
                              NULL),
                          "--dtype bf16");
    /* gamma / beta are float files, whatever the storage. */
    expect_one_error_line(cli("run", "--input", up, "--output", yp, "--dtype", "bf16", "--gamma",
                              gup, NULL),
                          "uint16");
    expect_one_error_line(cli("run", "--input", xp, "--output", yp, "--beta", gup, NULL),
                          "uint16");
    expect_one_error_line(cli("run", "--input", xp, "--output", yp, "--dtype", "half", NULL),
                          "--dtype");
    assert_false(file_exists(yp));
    /* ... and with --dtype bf16 the raw bits are taken. */
    expect_ok(cli("run", "--input", up, "--output", yp, "--dtype", "bf16", NULL));
}

/* F64 on a device without cl_khr_fp64: the library's "unsupported" message, exit 1. */
static void test_f64_unsupported_device(void **state)
{
    clnorm_device_info infos[32];
    size_t count = 0, i;
    size_t shape[2] = {2, 3};
    double x[6] = {1, 2, 3, 4, 5, 7};
    const char *xp = P("u_x.npy"), *yp = P("u_y.npy");
    char spec[32];
    (void)state;
    if (clnorm_list_devices(infos, 32, &count) != CLNORM_OK)
        count = 0;
    for (i = 0; i < count && i < 32 && infos[i].has_fp64; i++)
        ;
    if (i >= count || i >= 32) {
        skip(); /* every device here has fp64 */
        return;
    }
    snprintf(spec, sizeof spec, "%u:%u", infos[i].platform_index, infos[i].device_index);
    save_as(xp, NPY_F64, 2, shape, x);
    rm(yp, NULL);
    {
        int rc = cli("run", "--input", xp, "--output", yp, "--device", spec, NULL);
        assert_int_equal(rc, 1);
        expect_one_error_line(rc, "unsupported on this device");
    }
    assert_false(file_exists(yp));
}

int cli_dtype_tests(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_run_f16),
        cmocka_unit_test(test_run_bf16),
        cmocka_unit_test(test_run_f64),
        cmocka_unit_test(test_run_f64_eps),
        cmocka_unit_test(test_grad_f64),
        cmocka_unit_test(test_grad_f16_bf16),
        cmocka_unit_test(test_conversion_rounding),
        cmocka_unit_test(test_dtype_refusals),
        cmocka_unit_test(test_f64_unsupported_device),
    };
    return cmocka_run_group_tests_name("cli_dtype", tests, NULL, NULL);
}
