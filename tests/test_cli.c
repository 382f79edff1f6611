/*
 * test_cli.c - the `clnorm` command-line tool, run as a separate process (posix_spawn) with
 * inputs written by npy_save into a temporary directory. Results are checked against an
 * independent float64 two-pass layer norm / RMS norm computed here; every bad input must exit
 * non-zero with exactly one "clnorm: " line on stderr and create no output file.
 *
 * This file: the top level and `clnorm run` in float32, and main(), which runs every suite of
 * the tool (test_cli_grad.c, test_cli_dtype.c, test_cli_bench.c, test_cli_residual.c,
 * test_cli_group.c, test_cli_modulation.c) as cmocka groups.
 *
 * usage: test_cli PATH_TO_CLNORM_BINARY [PATH_TO_CLNORM_BENCH_BINARY]
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
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------------------------------------
 * Top level
 * ---------------------------------------------------------------------------------------- */
static void test_help_and_version(void **state)
{
    char want[64];
    (void)state;
    expect_ok(cli("--help", NULL));
    assert_non_null(strstr(g_out, "usage: clnorm"));
    assert_string_equal(g_err, "");
    expect_ok(cli("-h", NULL));
    assert_non_null(strstr(g_out, "usage: clnorm"));
    expect_ok(cli("--version", NULL));
    snprintf(want, sizeof want, "clnorm %d.%d.%d\n", CLNORM_VERSION_MAJOR, CLNORM_VERSION_MINOR,
             CLNORM_VERSION_PATCH);
    assert_string_equal(g_out, want);
    expect_ok(cli("run", "--help", NULL));
    assert_non_null(strstr(g_out, "--input"));
    expect_ok(cli("demo", "-h", NULL));
    assert_non_null(strstr(g_out, "--rows"));
    expect_ok(cli("devices", "--help", NULL));
    expect_ok(cli("--help", NULL));
    assert_non_null(strstr(g_out, "grad"));
    assert_non_null(strstr(g_out, "bench"));
    assert_non_null(strstr(g_out, "--dtype"));
    expect_ok(cli("grad", "--help", NULL));
    assert_non_null(strstr(g_out, "--grad-output"));
    assert_non_null(strstr(g_out, "--dtype"));
    expect_ok(cli("run", "--help", NULL));
    assert_non_null(strstr(g_out, "bf16"));
}

static void test_unknown_command_and_flags(void **state)
{
    (void)state;
    int rc = cli("frobnicate", NULL);
    assert_int_equal(rc, 2);
    expect_one_error_line(rc, "frobnicate");
    assert_non_null(strstr(g_err, "--help"));
    rc = cli("--frobnicate", NULL);
    assert_int_equal(rc, 2);
    expect_one_error_line(rc, "--frobnicate");
    rc = cli("run", "--input", P("x.npy"), "--output", P("y.npy"), "--frobnicate", NULL);
    assert_int_equal(rc, 2);
    expect_one_error_line(rc, "--frobnicate");
    assert_false(file_exists(P("y.npy")));
    rc = cli("devices", "--all", NULL);
    assert_int_equal(rc, 2);
    expect_one_error_line(rc, "--all");
    rc = cli("demo", "--rows", "0", NULL);
    expect_one_error_line(rc, "--rows");
    rc = cli("demo", "--cols", "many", NULL);
    expect_one_error_line(rc, "--cols");
}

static void test_devices(void **state)
{
    (void)state;
    expect_ok(cli("devices", NULL));
    assert_true(strlen(g_out) > 0);
    if (g_have_device) {
        assert_non_null(strstr(g_out, "0:0"));
        assert_non_null(strstr(g_out, "*"));
        assert_non_null(strstr(g_out, "compute units"));
    } else {
        assert_non_null(strstr(g_out, "No OpenCL device"));
    }
}

static void test_demo_small(void **state)
{
    (void)state;
    expect_ok(cli("demo", "--rows", "256", "--cols", "768", "--reps", "3", NULL));
    assert_non_null(strstr(g_out, "max abs error"));
    assert_non_null(strstr(g_out, "GB/s"));
    assert_non_null(strstr(g_out, "strategy"));
    assert_non_null(strstr(g_out, "CPU reference"));
}

/* ------------------------------------------------------------------------------------------
 * run: results
 * ---------------------------------------------------------------------------------------- */

/* LayerNorm without affine, device path (default device) and --cpu, with statistics. */
static void layer_plain(const char *mode)
{
    size_t rows = 37, cols = 300, shape[2] = {37, 300};
    float *x = make_rows(rows, cols);
    ref_result r = reference(x, rows, cols, NULL, NULL, 1e-5, 0);
    const char *xp = P("lp_x.npy"), *yp = P("lp_y.npy"), *mp = P("lp_m.npy"),
               *sp = P("lp_s.npy");
    rm(yp, mp, sp, NULL);
    save_f32(xp, 2, shape, x);
    expect_ok(mode ? cli("run", "--input", xp, "--output", yp, "--mean", mp, "--rstd", sp, mode,
                         NULL)
                   : cli("run", "--input", xp, "--output", yp, "--mean", mp, "--rstd", sp,
                         NULL));
    check_output(yp, 2, shape, r.y, 1e-5, 0.0);
    check_output(mp, 1, shape, r.mean, 1e-5, 1e-6);
    check_output(sp, 1, shape, r.rstd, 0.0, 1e-5);
    ref_free(&r);
    free(x);
}

static void test_run_layer_device(void **state)
{
    (void)state;
    layer_plain(NULL);
}

static void test_run_layer_cpu(void **state)
{
    (void)state;
    layer_plain("--cpu");
}

static void test_run_layer_explicit_device(void **state)
{
    (void)state;
    if (!g_have_device) {
        skip();
        return;
    }
    layer_plain("--device=0:0");
}

static void test_run_affine_eps(void **state)
{
    size_t rows = 20, cols = 129, shape[2] = {20, 129}, pshape[1] = {129};
    float *x = make_rows(rows, cols), *g = make_params(cols, 1.0, 0.5),
          *b = make_params(cols, 0.0, 2.0);
    ref_result r = reference(x, rows, cols, g, b, 1e-2, 0);
    const char *xp = P("af_x.npy"), *gp = P("af_g.npy"), *bp = P("af_b.npy"),
               *yp = P("af_y.npy"), *yc = P("af_yc.npy");
    (void)state;
    rm(yp, yc, NULL);
    save_f32(xp, 2, shape, x);
    save_f32(gp, 1, pshape, g);
    save_f32(bp, 1, pshape, b);
    expect_ok(cli("run", "--input", xp, "--output", yp, "--gamma", gp, "--beta", bp, "--eps",
                  "1e-2", NULL));
    check_output(yp, 2, shape, r.y, 1e-5, 1e-5);
    expect_ok(cli("run", "--cpu", "--input", xp, "--output", yc, "--gamma", gp, "--beta", bp,
                  "--eps=0.01", NULL));
    check_output(yc, 2, shape, r.y, 1e-5, 1e-5);
    /* gamma only, beta only */
    {
        ref_result rg = reference(x, rows, cols, g, NULL, 1e-2, 0);
        ref_result rb = reference(x, rows, cols, NULL, b, 1e-2, 0);
        expect_ok(cli("run", "--input", xp, "--output", yp, "--gamma", gp, "--eps", "1e-2",
                      NULL));
        check_output(yp, 2, shape, rg.y, 1e-5, 1e-5);
        expect_ok(cli("run", "--input", xp, "--output", yp, "--beta", bp, "--eps", "1e-2", NULL));
        check_output(yp, 2, shape, rb.y, 1e-5, 1e-5);
        ref_free(&rg);
        ref_free(&rb);
    }
    ref_free(&r);
    free(x);
    free(g);
    free(b);
}

static void test_run_rms(void **state)
{
    size_t rows = 9, cols = 64, shape[2] = {9, 64}, pshape[1] = {64};
    float *x = make_rows(rows, cols), *g = make_params(cols, 1.0, 0.3),
          *b = make_params(cols, 0.0, 1.0);
    ref_result r = reference(x, rows, cols, g, NULL, 1e-5, 1);
    ref_result rb = reference(x, rows, cols, g, b, 1e-5, 1);
    const char *xp = P("rms_x.npy"), *gp = P("rms_g.npy"), *bp = P("rms_b.npy"),
               *yp = P("rms_y.npy"), *sp = P("rms_s.npy");
    int pass;
    (void)state;
    save_f32(xp, 2, shape, x);
    save_f32(gp, 1, pshape, g);
    save_f32(bp, 1, pshape, b);
    for (pass = 0; pass < 2; pass++) {
        rm(yp, sp, NULL);
        expect_ok(cli("run", "--rms", "--input", xp, "--output", yp, "--gamma", gp, "--rstd", sp,
                      pass ? "--cpu" : NULL, NULL));
        check_output(yp, 2, shape, r.y, 1e-5, 1e-5);
        check_output(sp, 1, shape, r.rstd, 0.0, 1e-5);
        expect_ok(cli("run", "--rms", "--input", xp, "--output", yp, "--gamma", gp, "--beta", bp,
                      pass ? "--cpu" : NULL, NULL));
        check_output(yp, 2, shape, rb.y, 1e-5, 1e-5);
    }
    ref_free(&r);
    ref_free(&rb);
    free(x);
    free(g);
    free(b);
}

static void test_run_axes2_3d(void **state)
{
    size_t shape[3] = {3, 4, 8}, pshape[2] = {4, 8}, rows = 3, cols = 32;
    float *x = make_rows(rows, cols), *g = make_params(cols, 1.0, 0.5),
          *b = make_params(cols, 0.5, 0.5);
    ref_result r = reference(x, rows, cols, g, b, 1e-5, 0);
    const char *xp = P("ax_x.npy"), *gp = P("ax_g.npy"), *bp = P("ax_b.npy"),
               *yp = P("ax_y.npy"), *mp = P("ax_m.npy"), *sp = P("ax_s.npy");
    int pass;
    (void)state;
    save_f32(xp, 3, shape, x);
    save_f32(gp, 2, pshape, g);
    save_f32(bp, 2, pshape, b);
    for (pass = 0; pass < 2; pass++) {
        rm(yp, mp, sp, NULL);
        expect_ok(cli("run", "--input", xp, "--output", yp, "--gamma", gp, "--beta", bp, "--axes",
                      "2", "--mean", mp, "--rstd", sp, pass ? "--cpu" : NULL, NULL));
        check_output(yp, 3, shape, r.y, 1e-5, 1e-5);
        check_output(mp, 1, shape, r.mean, 1e-5, 1e-6);
        check_output(sp, 1, shape, r.rstd, 0.0, 1e-5);
    }
    ref_free(&r);
    /* --axes 3: the whole tensor is one row; statistics are 0-d. */
    {
        ref_result r3 = reference(x, 1, 96, NULL, NULL, 1e-5, 0);
        rm(yp, mp, sp, NULL);
        expect_ok(cli("run", "--input", xp, "--output", yp, "--axes", "3", "--mean", mp, "--rstd",
                      sp, NULL));
        check_output(yp, 3, shape, r3.y, 1e-5, 0.0);
        check_output(mp, 0, NULL, r3.mean, 1e-5, 1e-6);
        check_output(sp, 0, NULL, r3.rstd, 0.0, 1e-5);
        ref_free(&r3);
    }
    free(x);
    free(g);
    free(b);
}

static void test_run_1d_gives_scalar_stats(void **state)
{
    size_t shape[1] = {10};
    float *x = make_rows(1, 10);
    ref_result r = reference(x, 1, 10, NULL, NULL, 1e-5, 0);
    const char *xp = P("1d_x.npy"), *yp = P("1d_y.npy"), *mp = P("1d_m.npy"),
               *sp = P("1d_s.npy");
    (void)state;
    rm(yp, mp, sp, NULL);
    save_f32(xp, 1, shape, x);
    expect_ok(cli("run", "--input", xp, "--output", yp, "--mean", mp, "--rstd", sp, NULL));
    check_output(yp, 1, shape, r.y, 1e-5, 0.0);
    check_output(mp, 0, NULL, r.mean, 1e-5, 1e-6);
    check_output(sp, 0, NULL, r.rstd, 0.0, 1e-5);
    ref_free(&r);
    free(x);
}

/* The float32 outputs at a and b, of n elements of this shape, are the same values. */
static void expect_same_outputs(const char *a, const char *b, int ndim, const size_t *shape,
                                size_t n)
{
    double *va = load_values(a, NPY_F32, ndim, shape), *vb = load_values(b, NPY_F32, ndim, shape);
    assert_memory_equal(va, vb, n * sizeof(double));
    free(va);
    free(vb);
}

/* A Fortran-order input (np.save writes one for an F-contiguous array: a transposed matrix,
 * or np.moveaxis(x, 1, -1) of a single sample with one spatial dimension) and a big-endian
 * one ('>f4') are read as np.load reads them: the same outputs, byte for byte, as from the
 * C-order little-endian copy. LayerNorm over 2-D rows, and GroupNorm in NHWC of shape
 * (1, L, C). */
static void test_run_fortran_and_big_endian_input(void **state)
{
    size_t shape[2] = {5, 7}, g3[3] = {1, 6, 4}, i, j, k;
    float *x = make_rows(5, 7), xf[35], xg[24], xgf[24];
    const char *xc = P("fo_xc.npy"), *xfp = P("fo_xf.npy"), *yc = P("fo_yc.npy"),
               *yf = P("fo_yf.npy"), *mc = P("fo_mc.npy"), *mf = P("fo_mf.npy");
    (void)state;
    for (i = 0; i < 5; i++) /* column-major: element (i, j) at i + 5 j */
        for (j = 0; j < 7; j++)
            xf[i + 5 * j] = x[i * 7 + j];
    save_f32(xc, 2, shape, x);
    write_npy_raw(xfp, "{'descr': '<f4', 'fortran_order': True, 'shape': (5, 7), }", xf,
                  sizeof xf);
    expect_ok(cli("run", "--input", xc, "--output", yc, "--mean", mc, NULL));
    expect_ok(cli("run", "--input", xfp, "--output", yf, "--mean", mf, NULL));
    expect_same_outputs(yc, yf, 2, shape, 35);
    expect_same_outputs(mc, mf, 1, shape, 5);
    { /* the same x big-endian, in C order */
        unsigned char be[35 * 4];
        for (i = 0; i < 35; i++) {
            uint32_t bits;
            memcpy(&bits, &x[i], 4);
            for (k = 0; k < 4; k++) /* most significant byte first */
                be[4 * i + k] = (unsigned char)(bits >> (24 - 8 * k));
        }
        write_npy_raw(xfp, "{'descr': '>f4', 'fortran_order': False, 'shape': (5, 7), }", be,
                      sizeof be);
        expect_ok(cli("run", "--input", xfp, "--output", yf, NULL));
        expect_same_outputs(yc, yf, 2, shape, 35);
    }
    /* (1, 6, 4): positions l, channels c; Fortran order puts (0, l, c) at l + 6 c */
    for (k = 0; k < 24; k++)
        xg[k] = (float)(k % 5) * 0.75f - (float)(k / 6);
    for (j = 0; j < 6; j++)
        for (k = 0; k < 4; k++)
            xgf[j + 6 * k] = xg[j * 4 + k];
    save_f32(xc, 3, g3, xg);
    write_npy_raw(xfp, "{'descr': '<f4', 'fortran_order': True, 'shape': (1, 6, 4), }", xgf,
                  sizeof xgf);
    expect_ok(cli("run", "--groups", "2", "--layout", "nhwc", "--input", xc, "--output", yc,
                  NULL));
    expect_ok(cli("run", "--groups", "2", "--layout", "nhwc", "--input", xfp, "--output", yf,
                  NULL));
    expect_same_outputs(yc, yf, 3, g3, 24);
    free(x);
}

static void test_run_zero_rows(void **state)
{
    size_t shape[3] = {2, 0, 5}, sshape[2] = {2, 0}, pshape[1] = {5};
    float g[5] = {1, 2, 3, 4, 5};
    const char *xp = P("z_x.npy"), *gp = P("z_g.npy"), *yp = P("z_y.npy"), *mp = P("z_m.npy"),
               *sp = P("z_s.npy");
    int pass;
    (void)state;
    save_f32(xp, 3, shape, NULL);
    save_f32(gp, 1, pshape, g);
    for (pass = 0; pass < 2; pass++) {
        rm(yp, mp, sp, NULL);
        expect_ok(cli("run", "--input", xp, "--output", yp, "--gamma", gp, "--mean", mp, "--rstd",
                      sp, pass ? "--cpu" : NULL, NULL));
        check_output(yp, 3, shape, NULL, 0, 0);
        check_output(mp, 2, sshape, NULL, 0, 0);
        check_output(sp, 2, sshape, NULL, 0, 0);
    }
}

static void test_run_replaces_existing_output(void **state)
{
    size_t shape[2] = {2, 3};
    float x[6] = {1, 2, 3, 4, 6, 8};
    ref_result r = reference(x, 2, 3, NULL, NULL, 1e-5, 0);
    const char *xp = P("re_x.npy"), *yp = P("re_y.npy");
    (void)state;
    save_f32(xp, 2, shape, x);
    write_text(yp, "old contents\n");
    expect_ok(cli("run", "--input", xp, "--output", yp, NULL));
    check_output(yp, 2, shape, r.y, 1e-5, 0.0);
    /* In place: the output may be the input. */
    expect_ok(cli("run", "--input", yp, "--output", yp, NULL));
    ref_free(&r);
}

/* ------------------------------------------------------------------------------------------
 * run: bad input. Each must fail with one stderr line and leave no output file.
 * ---------------------------------------------------------------------------------------- */

typedef struct {
    const char *x, *g2, *g3, *g1x3, *y, *m, *s;
} bad_files;

static bad_files prepare_bad_inputs(void)
{
    bad_files f;
    size_t shape[2] = {4, 3}, s3[1] = {3}, s2[1] = {2}, s13[2] = {1, 3};
    float x[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 0, 1}, g[3] = {1, 1, 1};
    f.x = P("bad_x.npy");
    f.g3 = P("bad_g3.npy");
    f.g2 = P("bad_g2.npy");
    f.g1x3 = P("bad_g1x3.npy");
    f.y = P("bad_y.npy");
    f.m = P("bad_m.npy");
    f.s = P("bad_s.npy");
    save_f32(f.x, 2, shape, x);
    save_f32(f.g3, 1, s3, g);
    save_f32(f.g2, 1, s2, g);
    save_f32(f.g1x3, 2, s13, g);
    rm(f.y, f.m, f.s, NULL);
    return f;
}

/* Runs the CLI (args NULL-terminated), expects a clean failure and no outputs. */
#define EXPECT_FAIL(needle, ...)                                                             \
    do {                                                                                     \
        int rc_ = cli(__VA_ARGS__, NULL);                                                    \
        expect_one_error_line(rc_, needle);                                                  \
        if (file_exists(f.y) || file_exists(f.m) || file_exists(f.s))                        \
            fail_msg("an output file was created (stderr: %s)", g_err);                      \
    } while (0)

static void test_bad_flags(void **state)
{
    bad_files f = prepare_bad_inputs();
    (void)state;
    EXPECT_FAIL("--input", "run", "--output", f.y);
    EXPECT_FAIL("--output", "run", "--input", f.x);
    EXPECT_FAIL("--input", "run", "--input", "--output", f.y);       /* missing value */
    EXPECT_FAIL("--eps", "run", "--input", f.x, "--output", f.y, "--eps");
    EXPECT_FAIL("--eps", "run", "--input", f.x, "--output", f.y, "--eps=");
    EXPECT_FAIL("--eps", "run", "--input", f.x, "--output", f.y, "--eps", "abc");
    EXPECT_FAIL("--eps", "run", "--input", f.x, "--output", f.y, "--eps", "1e-5x");
    EXPECT_FAIL("--eps", "run", "--input", f.x, "--output", f.y, "--eps", "0");
    EXPECT_FAIL("--eps", "run", "--input", f.x, "--output", f.y, "--eps", "-1e-5");
    EXPECT_FAIL("--eps", "run", "--input", f.x, "--output", f.y, "--eps", "nan");
    EXPECT_FAIL("--eps", "run", "--input", f.x, "--output", f.y, "--eps", "inf");
    EXPECT_FAIL("--eps", "run", "--input", f.x, "--output", f.y, "--eps", "1e-60");
    EXPECT_FAIL("--eps", "run", "--input", f.x, "--output", f.y, "--eps", "1e300");
    EXPECT_FAIL("--axes", "run", "--input", f.x, "--output", f.y, "--axes", "0");
    EXPECT_FAIL("--axes", "run", "--input", f.x, "--output", f.y, "--axes", "x");
    EXPECT_FAIL("--axes", "run", "--input", f.x, "--output", f.y, "--axes", "-1");
    EXPECT_FAIL("--axes", "run", "--input", f.x, "--output", f.y, "--axes", "3");
    EXPECT_FAIL("--mean", "run", "--input", f.x, "--output", f.y, "--rms", "--mean", f.m);
    EXPECT_FAIL("--cpu", "run", "--input", f.x, "--output", f.y, "--cpu", "--device", "cpu");
    EXPECT_FAIL("more than once", "run", "--input", f.x, "--output", f.y, "--eps", "1", "--eps",
                "2");
    EXPECT_FAIL("more than once", "run", "--input", f.x, "--output", f.y, "--rms", "--rms");
    EXPECT_FAIL("same file", "run", "--input", f.x, "--output", f.y, "--mean", f.y);
    EXPECT_FAIL("stray", "run", "--input", f.x, "--output", f.y, "stray");
    EXPECT_FAIL("--bogus", "run", "--input", f.x, "--output", f.y, "--bogus");
    EXPECT_FAIL("--dtype", "run", "--input", f.x, "--output", f.y, "--dtype", "f8");
    EXPECT_FAIL("--dtype", "run", "--input", f.x, "--output", f.y, "--dtype", "F32");
    EXPECT_FAIL("--dtype", "run", "--input", f.x, "--output", f.y, "--dtype");
    EXPECT_FAIL("more than once", "run", "--input", f.x, "--output", f.y, "--dtype", "f32",
                "--dtype", "f32");
}

static void test_bad_files(void **state)
{
    bad_files f = prepare_bad_inputs();
    const char *txt = P("bad_text.npy"), *i4 = P("bad_i4.npy"),
               *u2 = P("bad_u2.npy"), *be = P("bad_be.npy"), *scalar = P("bad_scalar.npy"),
               *trunc = P("bad_trunc.npy"), *nocols = P("bad_nocols.npy");
    size_t s2[2] = {3, 0}, su[1] = {2};
    uint16_t u[2] = {0, 0};
    float one = 1.0f;
    (void)state;
    write_text(txt, "just,some,csv\n1,2,3\n");
    write_npy_by_hand(i4, "{'descr': '<i4', 'fortran_order': False, 'shape': (4, 3), }", 48);
    write_npy_by_hand(be, "{'descr': '>i8', 'fortran_order': False, 'shape': (4, 3), }", 96);
    write_npy_by_hand(trunc, "{'descr': '<f4', 'fortran_order': False, 'shape': (4, 3), }", 40);
    assert_int_equal(npy_save(u2, NPY_U16, 1, su, u, NULL, 0), 0);
    save_f32(scalar, 0, NULL, &one);
    save_f32(nocols, 2, s2, NULL);

    EXPECT_FAIL("not a .npy file", "run", "--input", txt, "--output", f.y);
    EXPECT_FAIL("'<i4'", "run", "--input", i4, "--output", f.y);
    EXPECT_FAIL("'>i8'", "run", "--input", be, "--output", f.y);
    EXPECT_FAIL("truncated", "run", "--input", trunc, "--output", f.y);
    EXPECT_FAIL("--dtype bf16", "run", "--input", u2, "--output", f.y);
    EXPECT_FAIL("0-d", "run", "--input", scalar, "--output", f.y);
    EXPECT_FAIL(nocols, "run", "--input", nocols, "--output", f.y);
    EXPECT_FAIL("missing.npy", "run", "--input", P("missing.npy"), "--output", f.y);
    EXPECT_FAIL("missing_g.npy", "run", "--input", f.x, "--output", f.y, "--gamma",
                P("missing_g.npy"));
    EXPECT_FAIL("not a .npy file", "run", "--input", f.x, "--output", f.y, "--beta", txt);
    EXPECT_FAIL("'<i4'", "run", "--input", f.x, "--output", f.y, "--gamma", i4);
    /* gamma / beta shape mismatch */
    EXPECT_FAIL("(2,)", "run", "--input", f.x, "--output", f.y, "--gamma", f.g2);
    EXPECT_FAIL("(2,)", "run", "--input", f.x, "--output", f.y, "--beta", f.g2);
    EXPECT_FAIL("(1, 3)", "run", "--input", f.x, "--output", f.y, "--gamma", f.g1x3);
    EXPECT_FAIL("(4, 3)", "run", "--input", f.x, "--output", f.y, "--gamma", f.g3, "--axes",
                "2");
    /* a device that does not exist */
    EXPECT_FAIL("no-such-device-xyz", "run", "--input", f.x, "--output", f.y, "--device",
                "no-such-device-xyz");
}

static void test_unwritable_outputs(void **state)
{
    bad_files f = prepare_bad_inputs();
    const char *nodir_y = P("no_such_dir/y.npy"), *nodir_s = P("no_such_dir/s.npy");
    int before;
    char *kept;
    (void)state;
    EXPECT_FAIL("no_such_dir/y.npy", "run", "--input", f.x, "--output", nodir_y);
    assert_false(file_exists(nodir_y));
    /* The output is a directory. */
    assert_int_equal(mkdir(P("a_dir.npy"), 0700), 0);
    EXPECT_FAIL("a_dir.npy", "run", "--input", f.x, "--output", P("a_dir.npy"));
    /* A later output fails: the earlier ones of this run are not left behind, and nothing
     * else (no temporary) either. */
    before = count_dir_entries(g_dir);
    EXPECT_FAIL("no_such_dir/s.npy", "run", "--input", f.x, "--output", f.y, "--mean", f.m,
                "--rstd", nodir_s);
    assert_int_equal(count_dir_entries(g_dir), before);
    /* ... and a file already at the output path is left as it was. */
    write_text(f.y, "keep me\n");
    {
        int rc = cli("run", "--input", f.x, "--output", f.y, "--rstd", nodir_s, NULL);
        expect_one_error_line(rc, "no_such_dir/s.npy");
    }
    kept = read_text(f.y);
    assert_non_null(kept);
    assert_string_equal(kept, "keep me\n");
    free(kept);
    /* A later output that is a directory: refused before anything is written, so the file
     * already at an earlier output keeps its contents. */
    write_text(f.y, "keep me\n");
    {
        int rc = cli("run", "--input", f.x, "--output", f.y, "--mean", P("a_dir.npy"), NULL);
        expect_one_error_line(rc, "a_dir.npy");
    }
    kept = read_text(f.y);
    assert_non_null(kept);
    assert_string_equal(kept, "keep me\n");
    free(kept);
    rm(f.y, NULL);
    assert_int_equal(count_dir_entries(g_dir), before);
}

/* Outputs named through other spellings, links and devices: two names of one file are
 * refused; a symbolic link is written through (it stays a link); a device such as /dev/null
 * is written through, not replaced; a name near the file system's limit works (the
 * temporaries' names do not grow with it). */
static void test_output_paths(void **state)
{
    bad_files f = prepare_bad_inputs();
    char dot_y[1024], target[1024], longname[300];
    int before;
    struct stat st;
    (void)state;
    snprintf(dot_y, sizeof dot_y, "%s/./bad_y.npy", g_dir);
    EXPECT_FAIL("same file", "run", "--input", f.x, "--output", f.y, "--mean", dot_y);
    /* a link to the first output's (new) name, and to an existing file */
    snprintf(target, sizeof target, "%s", P("link_target.npy"));
    rm(target, P("link.npy"), NULL);
    assert_int_equal(symlink("link_target.npy", P("link.npy")), 0);
    EXPECT_FAIL("same file", "run", "--input", f.x, "--output", target, "--mean", P("link.npy"));
    expect_ok(cli("run", "--input", f.x, "--output", P("link.npy"), NULL));
    assert_int_equal(lstat(P("link.npy"), &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_true(file_exists(target)); /* a link to nothing: its target was created */
    expect_ok(cli("run", "--input", f.x, "--output", P("link.npy"), NULL));
    assert_int_equal(lstat(P("link.npy"), &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    EXPECT_FAIL("same file", "run", "--input", f.x, "--output", target, "--mean", P("link.npy"));
    rm(target, P("link.npy"), NULL);
    /* /dev/null takes an output and stays a device */
    expect_ok(cli("run", "--input", f.x, "--output", "/dev/null", NULL));
    assert_int_equal(stat("/dev/null", &st), 0);
    assert_true(S_ISCHR(st.st_mode));
    /* a 250-byte name */
    memset(longname, 'n', 246);
    memcpy(longname + 246, ".npy", 5);
    before = count_dir_entries(g_dir);
    expect_ok(cli("run", "--input", f.x, "--output", P(longname), NULL));
    assert_true(file_exists(P(longname)));
    rm(P(longname), NULL);
    assert_int_equal(count_dir_entries(g_dir), before);
}

int cli_run_tests(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_help_and_version),
        cmocka_unit_test(test_unknown_command_and_flags),
        cmocka_unit_test(test_devices),
        cmocka_unit_test(test_demo_small),
        cmocka_unit_test(test_run_layer_device),
        cmocka_unit_test(test_run_layer_cpu),
        cmocka_unit_test(test_run_layer_explicit_device),
        cmocka_unit_test(test_run_affine_eps),
        cmocka_unit_test(test_run_rms),
        cmocka_unit_test(test_run_axes2_3d),
        cmocka_unit_test(test_run_1d_gives_scalar_stats),
        cmocka_unit_test(test_run_fortran_and_big_endian_input),
        cmocka_unit_test(test_run_zero_rows),
        cmocka_unit_test(test_run_replaces_existing_output),
        cmocka_unit_test(test_bad_flags),
        cmocka_unit_test(test_bad_files),
        cmocka_unit_test(test_unwritable_outputs),
        cmocka_unit_test(test_output_paths),
    };
    return cmocka_run_group_tests_name("cli", tests, NULL, NULL);
}

int main(int argc, char **argv)
{
    int failed;
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: %s PATH_TO_CLNORM [PATH_TO_CLNORM_BENCH]\n", argv[0]);
        return 2;
    }
    g_cli = argv[1];
    g_bench = argc > 2 ? argv[2] : NULL;
    if (cli_test_init() != 0) {
        fprintf(stderr, "cannot create a scratch directory\n");
        return 1;
    }
    failed = cli_run_tests();
    failed += cli_grad_tests();
    failed += cli_dtype_tests();
    failed += cli_bench_tests();
    failed += cli_residual_tests();
    failed += cli_group_tests();
    failed += cli_modulation_tests();
    cli_test_done();
    return failed;
}
