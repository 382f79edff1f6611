/*
 * test_cli_grad.c - `clnorm grad` in float32: the gradients against the independent float64
 * backward pass of cli_test_util (on a device and on the CPU reference, over one and two
 * normalized dims, LayerNorm and RMSNorm, with and without gamma / beta), and every bad input
 * failing cleanly with no output file.
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

/* ------------------------------------------------------------------------------------------
 * Results
 * ---------------------------------------------------------------------------------------- */
typedef struct {
    int ndim;
    size_t shape[3];
    const char *axes; /* "1", "2" */
    int rms, gamma, beta;
    int want_dx, want_dgamma, want_dbeta;
    const char *eps;  /* NULL: the default 1e-5 */
    const char *mode; /* NULL (the default device), "--cpu" or "--device=0:0" */
} grad_case;

static void check_grad_case(const grad_case *c)
{
    const int axes = atoi(c->axes), lead = c->ndim - axes;
    const double eps = c->eps ? atof(c->eps) : 1e-5;
    const char *xp = P("g_x.npy"), *dyp = P("g_dy.npy"), *gp = P("g_g.npy"), *bp = P("g_b.npy"),
               *dxp = P("g_dx.npy"), *dgp = P("g_dg.npy"), *dbp = P("g_db.npy");
    const char *args[32];
    size_t rows = 1, cols = 1, n = 0;
    float *x, *dy, *g, *b;
    double *xd, *dyd, *gd;
    grad_result r;
    int k;

    for (k = 0; k < lead; k++)
        rows *= c->shape[k];
    for (k = lead; k < c->ndim; k++)
        cols *= c->shape[k];
    x = make_rows(rows, cols);
    dy = make_params(rows * cols, 0.0, 1.0);
    g = make_params(cols, 1.0, 0.5);
    b = make_params(cols, 0.0, 1.0);
    xd = widen(x, rows * cols);
    dyd = widen(dy, rows * cols);
    gd = widen(g, cols);
    rm(dxp, dgp, dbp, NULL);
    save_f32(xp, c->ndim, c->shape, x);
    save_f32(dyp, c->ndim, c->shape, dy);
    save_f32(gp, axes, c->shape + lead, g);
    save_f32(bp, axes, c->shape + lead, b);

    args[n++] = "grad";
    args[n++] = "--input";
    args[n++] = xp;
    args[n++] = "--grad-output";
    args[n++] = dyp;
    args[n++] = "--axes";
    args[n++] = c->axes;
    if (c->gamma) {
        args[n++] = "--gamma";
        args[n++] = gp;
    }
    if (c->beta) {
        args[n++] = "--beta";
        args[n++] = bp;
    }
    if (c->want_dx) {
        args[n++] = "--grad-input";
        args[n++] = dxp;
    }
    if (c->want_dgamma) {
        args[n++] = "--grad-gamma";
        args[n++] = dgp;
    }
    if (c->want_dbeta) {
        args[n++] = "--grad-beta";
        args[n++] = dbp;
    }
    if (c->rms)
        args[n++] = "--rms";
    if (c->eps) {
        args[n++] = "--eps";
        args[n++] = c->eps;
    }
    if (c->mode)
        args[n++] = c->mode;
    args[n] = NULL;
    expect_ok(cli_v(args));

    r = grad_reference(xd, dyd, rows, cols, c->gamma ? gd : NULL, eps, c->rms);
    if (c->want_dx) {
        double *got = load_values(dxp, NPY_F32, c->ndim, c->shape);
        check_max_err("dx", got, r.dx, rows * cols, 1e-5);
        free(got);
    } else {
        assert_false(file_exists(dxp));
    }
    if (c->want_dgamma) {
        double *got = load_values(dgp, NPY_F32, axes, c->shape + lead);
        check_norm_err("dgamma", got, r.dgamma, cols, 1e-5);
        free(got);
    } else {
        assert_false(file_exists(dgp));
    }
    if (c->want_dbeta) {
        double *got = load_values(dbp, NPY_F32, axes, c->shape + lead);
        check_norm_err("dbeta", got, r.dbeta, cols, 1e-5);
        free(got);
    } else {
        assert_false(file_exists(dbp));
    }
    grad_free(&r);
    free(x);
    free(dy);
    free(g);
    free(b);
    free(xd);
    free(dyd);
    free(gd);
}

/* Each case on the default device and on the CPU reference. */
static void check_both(grad_case c)
{
    c.mode = NULL;
    check_grad_case(&c);
    c.mode = "--cpu";
    check_grad_case(&c);
}

static void test_grad_layer_affine(void **state)
{
    grad_case c = {2, {37, 300, 0}, "1", 0, 1, 1, 1, 1, 1, NULL, NULL};
    (void)state;
    check_both(c);
    c.eps = "1e-2";
    check_both(c);
}

static void test_grad_layer_plain(void **state)
{
    grad_case c = {2, {21, 129, 0}, "1", 0, 0, 0, 1, 0, 0, NULL, NULL};
    (void)state;
    check_both(c);
}

static void test_grad_rms(void **state)
{
    grad_case c = {2, {9, 64, 0}, "1", 1, 1, 0, 1, 1, 0, NULL, NULL};
    (void)state;
    check_both(c);
    c.gamma = 0;
    c.want_dgamma = 0;
    check_both(c);
    /* RMSNorm with a beta: dbeta is still the sum of dy. */
    c.gamma = c.beta = c.want_dgamma = c.want_dbeta = 1;
    check_both(c);
}

static void test_grad_axes2(void **state)
{
    grad_case c = {3, {3, 4, 8}, "2", 0, 1, 1, 1, 1, 1, NULL, NULL};
    (void)state;
    check_both(c);
    c.rms = 1;
    check_both(c);
    c.gamma = c.beta = c.want_dgamma = c.want_dbeta = 0;
    check_both(c);
    c.rms = 0;
    check_both(c);
}

static void test_grad_explicit_device(void **state)
{
    grad_case c = {2, {5, 40, 0}, "1", 0, 1, 1, 1, 1, 1, NULL, "--device=0:0"};
    (void)state;
    if (!g_have_device) {
        skip();
        return;
    }
    check_grad_case(&c);
}

/* Some of the gradients only: what was not asked for is not written. */
static void test_grad_subsets(void **state)
{
    grad_case c = {2, {6, 33, 0}, "1", 0, 1, 1, 0, 1, 0, NULL, NULL};
    (void)state;
    check_both(c); /* dgamma only */
    c.want_dgamma = 0;
    c.want_dbeta = 1;
    check_both(c); /* dbeta only */
    c.want_dx = 1;
    check_both(c); /* dx and dbeta, gamma given */
}

/* No rows: dx is empty, dgamma and dbeta are sums over nothing (zeros). */
static void test_grad_zero_rows(void **state)
{
    size_t shape[2] = {0, 5}, pshape[1] = {5};
    const double zeros[5] = {0, 0, 0, 0, 0};
    float g[5] = {1, 2, 3, 4, 5};
    const char *xp = P("gz_x.npy"), *gp = P("gz_g.npy"), *dxp = P("gz_dx.npy"),
               *dgp = P("gz_dg.npy"), *dbp = P("gz_db.npy");
    int pass;
    (void)state;
    save_f32(xp, 2, shape, NULL);
    save_f32(gp, 1, pshape, g);
    for (pass = 0; pass < 2; pass++) {
        rm(dxp, dgp, dbp, NULL);
        expect_ok(cli("grad", "--input", xp, "--grad-output", xp, "--gamma", gp, "--beta", gp,
                      "--grad-input", dxp, "--grad-gamma", dgp, "--grad-beta", dbp,
                      pass ? "--cpu" : NULL, NULL));
        check_output(dxp, 2, shape, NULL, 0, 0);
        check_output(dgp, 1, pshape, zeros, 0, 0);
        check_output(dbp, 1, pshape, zeros, 0, 0);
    }
}

/* ------------------------------------------------------------------------------------------
 * Bad input: one stderr line, no output file.
 * ---------------------------------------------------------------------------------------- */
typedef struct {
    const char *x, *dy, *dy42, *dy12, *g, *g2, *dx, *dg, *db;
} grad_files;

static grad_files prepare_grad_files(void)
{
    grad_files f;
    size_t shape[2] = {4, 3}, s42[2] = {4, 2}, s12[1] = {12}, s3[1] = {3}, s2[1] = {2};
    float x[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 0, 1}, g[3] = {1, 1, 1};
    f.x = P("gbad_x.npy");
    f.dy = P("gbad_dy.npy");
    f.dy42 = P("gbad_dy42.npy");
    f.dy12 = P("gbad_dy12.npy");
    f.g = P("gbad_g.npy");
    f.g2 = P("gbad_g2.npy");
    f.dx = P("gbad_dx.npy");
    f.dg = P("gbad_dg.npy");
    f.db = P("gbad_db.npy");
    save_f32(f.x, 2, shape, x);
    save_f32(f.dy, 2, shape, x);
    save_f32(f.dy42, 2, s42, x);
    save_f32(f.dy12, 1, s12, x);
    save_f32(f.g, 1, s3, g);
    save_f32(f.g2, 1, s2, g);
    rm(f.dx, f.dg, f.db, NULL);
    return f;
}

#define GRAD_FAIL(needle, ...)                                                               \
    do {                                                                                     \
        int rc_ = cli(__VA_ARGS__, NULL);                                                    \
        expect_one_error_line(rc_, needle);                                                  \
        if (file_exists(f.dx) || file_exists(f.dg) || file_exists(f.db))                     \
            fail_msg("an output file was created (stderr: %s)", g_err);                      \
    } while (0)

static void test_grad_bad_flags(void **state)
{
    grad_files f = prepare_grad_files();
    (void)state;
    GRAD_FAIL("--grad-output", "grad", "--input", f.x, "--grad-input", f.dx);
    GRAD_FAIL("--input", "grad", "--grad-output", f.dy, "--grad-input", f.dx);
    GRAD_FAIL("writes nothing", "grad", "--input", f.x, "--grad-output", f.dy);
    GRAD_FAIL("writes nothing", "grad", "--input", f.x, "--grad-output", f.dy, "--gamma", f.g);
    GRAD_FAIL("--grad-gamma needs --gamma", "grad", "--input", f.x, "--grad-output", f.dy,
              "--grad-input", f.dx, "--grad-gamma", f.dg);
    GRAD_FAIL("--grad-beta needs --beta", "grad", "--input", f.x, "--grad-output", f.dy,
              "--gamma", f.g, "--grad-beta", f.db);
    GRAD_FAIL("same file", "grad", "--input", f.x, "--grad-output", f.dy, "--gamma", f.g,
              "--grad-input", f.dx, "--grad-gamma", f.dx);
    GRAD_FAIL("--grad-output", "grad", "--input", f.x, "--grad-input", f.dx, "--grad-output");
    GRAD_FAIL("more than once", "grad", "--input", f.x, "--grad-output", f.dy, "--grad-input",
              f.dx, "--grad-output", f.dy);
    GRAD_FAIL("--mean", "grad", "--input", f.x, "--grad-output", f.dy, "--grad-input", f.dx,
              "--mean", f.dg);
    GRAD_FAIL("stray", "grad", "--input", f.x, "--grad-output", f.dy, "--grad-input", f.dx,
              "stray");
    GRAD_FAIL("--cpu", "grad", "--input", f.x, "--grad-output", f.dy, "--grad-input", f.dx,
              "--cpu", "--device", "cpu");
    GRAD_FAIL("--eps", "grad", "--input", f.x, "--grad-output", f.dy, "--grad-input", f.dx,
              "--eps", "0");
    GRAD_FAIL("--axes", "grad", "--input", f.x, "--grad-output", f.dy, "--grad-input", f.dx,
              "--axes", "3");
    GRAD_FAIL("--dtype", "grad", "--input", f.x, "--grad-output", f.dy, "--grad-input", f.dx,
              "--dtype", "f128");
}

static void test_grad_bad_files(void **state)
{
    grad_files f = prepare_grad_files();
    const char *txt = P("gbad_text.npy"), *i4 = P("gbad_i4.npy"), *u2 = P("gbad_u2.npy");
    size_t shape[2] = {4, 3};
    uint16_t u[12] = {0};
    (void)state;
    write_text(txt, "not numpy\n");
    write_npy_by_hand(i4, "{'descr': '<i4', 'fortran_order': False, 'shape': (4, 3), }", 48);
    save_as(u2, NPY_U16, 2, shape, u);

    /* DY's shape must be X's. */
    GRAD_FAIL("(4, 2)", "grad", "--input", f.x, "--grad-output", f.dy42, "--grad-input", f.dx);
    GRAD_FAIL("expected (4, 3)", "grad", "--input", f.x, "--grad-output", f.dy42,
              "--grad-input", f.dx);
    GRAD_FAIL("(12,)", "grad", "--input", f.x, "--grad-output", f.dy12, "--grad-input", f.dx,
              "--axes", "2");
    /* Bad .npy files as X, DY or gamma. */
    GRAD_FAIL("not a .npy file", "grad", "--input", f.x, "--grad-output", txt, "--grad-input",
              f.dx);
    GRAD_FAIL("not a .npy file", "grad", "--input", txt, "--grad-output", f.dy, "--grad-input",
              f.dx);
    GRAD_FAIL("'<i4'", "grad", "--input", i4, "--grad-output", f.dy, "--grad-input", f.dx);
    GRAD_FAIL("'<i4'", "grad", "--input", f.x, "--grad-output", i4, "--grad-input", f.dx);
    GRAD_FAIL("missing_dy.npy", "grad", "--input", f.x, "--grad-output", P("missing_dy.npy"),
              "--grad-input", f.dx);
    GRAD_FAIL("--dtype bf16", "grad", "--input", f.x, "--grad-output", u2, "--grad-input", f.dx);
    GRAD_FAIL("--dtype bf16", "grad", "--input", u2, "--grad-output", f.dy, "--grad-input", f.dx);
    GRAD_FAIL("(2,)", "grad", "--input", f.x, "--grad-output", f.dy, "--gamma", f.g2,
              "--grad-gamma", f.dg);
    GRAD_FAIL("no-such-device-xyz", "grad", "--input", f.x, "--grad-output", f.dy,
              "--grad-input", f.dx, "--device", "no-such-device-xyz");
}

static void test_grad_unwritable_outputs(void **state)
{
    grad_files f = prepare_grad_files();
    const char *nodir_dx = P("no_such_dir/dx.npy"), *nodir_db = P("no_such_dir/db.npy");
    int before;
    (void)state;
    GRAD_FAIL("no_such_dir/dx.npy", "grad", "--input", f.x, "--grad-output", f.dy,
              "--grad-input", nodir_dx);
    /* The last output fails: the earlier ones are not left behind, nor any temporary. */
    before = count_dir_entries(g_dir);
    GRAD_FAIL("no_such_dir/db.npy", "grad", "--input", f.x, "--grad-output", f.dy, "--gamma",
              f.g, "--beta", f.g, "--grad-input", f.dx, "--grad-gamma", f.dg, "--grad-beta",
              nodir_db);
    assert_int_equal(count_dir_entries(g_dir), before);
    assert_int_equal(mkdir(P("g_dir.npy"), 0700), 0);
    GRAD_FAIL("g_dir.npy", "grad", "--input", f.x, "--grad-output", f.dy, "--grad-input",
              P("g_dir.npy"), "--cpu");
}

int cli_grad_tests(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grad_layer_affine),
        cmocka_unit_test(test_grad_layer_plain),
        cmocka_unit_test(test_grad_rms),
        cmocka_unit_test(test_grad_axes2),
        cmocka_unit_test(test_grad_explicit_device),
        cmocka_unit_test(test_grad_subsets),
        cmocka_unit_test(test_grad_zero_rows),
        cmocka_unit_test(test_grad_bad_flags),
        cmocka_unit_test(test_grad_bad_files),
        cmocka_unit_test(test_grad_unwritable_outputs),
    };
    return cmocka_run_group_tests_name("cli_grad", tests, NULL, NULL);
}
