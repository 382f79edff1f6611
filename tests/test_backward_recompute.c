/*
 * test_backward_recompute.c - the backward pass without saved statistics (mean and rstd NULL:
 * recomputed from x). Against a float64 backward written here from the float32 inputs with
 * exact statistics, on the data families of the forward's numerics target (large mean, tiny
 * spread), where a float32 saved mean alone would cost up to 5e-4 in dx. Every strategy,
 * LayerNorm and RMSNorm, rows short and long (65537 columns takes the column-chunked path),
 * and the CPU reference the same way.
 */
#define _POSIX_C_SOURCE 200809L
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static clnorm_ctx *g_ctx;

static int group_setup(void **state)
{
    (void)state;
    if (clnorm_create(NULL, &g_ctx) != CLNORM_OK)
        g_ctx = NULL;
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    clnorm_free(g_ctx);
    return 0;
}

/* dx, dgamma, dbeta in float64 from float32 x, dy, gamma, with exact two-pass statistics. */
static void backward64(int rms, size_t rows, size_t cols, const float *x, const float *dy,
                       const float *g, double eps, double *dx, double *dg, double *db)
{
    memset(dg, 0, cols * sizeof *dg);
    memset(db, 0, cols * sizeof *db);
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols, *dyr = dy + r * cols;
        double mu = 0.0, ss = 0.0;
        if (!rms) {
            for (size_t j = 0; j < cols; j++)
                mu += xr[j];
            mu /= (double)cols;
        }
        for (size_t j = 0; j < cols; j++)
            ss += ((double)xr[j] - mu) * ((double)xr[j] - mu);
        const double rs = 1.0 / sqrt(ss / (double)cols + eps);
        double sg = 0.0, sgx = 0.0;
        for (size_t j = 0; j < cols; j++) {
            const double gg = (double)dyr[j] * (g ? g[j] : 1.0);
            const double xh = ((double)xr[j] - mu) * rs;
            sg += gg;
            sgx += gg * xh;
            dg[j] += (double)dyr[j] * xh;
            db[j] += dyr[j];
        }
        for (size_t j = 0; j < cols; j++) {
            const double gg = (double)dyr[j] * (g ? g[j] : 1.0);
            const double xh = ((double)xr[j] - mu) * rs;
            dx[r * cols + j] = rs * (gg - (rms ? 0.0 : sg / (double)cols) - xh * sgx / (double)cols);
        }
    }
}

/* max |got - want| / max(1, max |want|) */
static double normwise(const float *got, const double *want, size_t n)
{
    double err = 0.0, top = 1.0;
    for (size_t i = 0; i < n; i++) {
        if (!(fabs(got[i] - want[i]) <= err))
            err = fabs(got[i] - want[i]);
        top = fmax(top, fabs(want[i]));
    }
    return err / top;
}

/* max |got - want| / |want|_2 */
static double relnorm(const float *got, const double *want, size_t n)
{
    double err = 0.0, norm = 0.0;
    for (size_t i = 0; i < n; i++) {
        if (!(fabs(got[i] - want[i]) <= err))
            err = fabs(got[i] - want[i]);
        norm += want[i] * want[i];
    }
    return err / fmax(sqrt(norm), 1e-300);
}

/* Fails the test where an error is past 1e-5. */
static void check_limit(const char *what, double edx, double edg, double edb)
{
    if (!(edx <= 1e-5 && edg <= 1e-5 && edb <= 1e-5))
        fail_msg("%s: dx %.3g, dgamma %.3g, dbeta %.3g (limit 1e-5)", what, edx, edg, edb);
}

static void free_all(void *const *p, size_t n)
{
    for (size_t k = 0; k < n; k++)
        free(p[k]);
}

static void run_family(int rms, size_t rows, size_t cols, double offset, double scale,
                       uint64_t seed)
{
    tu_rng rng;
    tu_rng_seed(&rng, seed);
    const size_t n = rows * cols;
    float *x = malloc(n * sizeof *x), *dy = malloc(n * sizeof *dy), *dx = malloc(n * sizeof *dx);
    float *g = malloc(cols * sizeof *g), *dg = malloc(cols * sizeof *dg);
    float *db = malloc(cols * sizeof *db);
    double *dx64 = malloc(n * sizeof *dx64), *dg64 = malloc(cols * sizeof *dg64);
    double *db64 = malloc(cols * sizeof *db64);
    assert_non_null(x);
    assert_non_null(dy);
    assert_non_null(dx);
    assert_non_null(g);
    assert_non_null(dg);
    assert_non_null(db);
    assert_non_null(dx64);
    assert_non_null(dg64);
    assert_non_null(db64);
    tu_fill_normal(&rng, x, n, offset, scale);
    tu_fill_normal(&rng, dy, n, 0.0, 1.0);
    tu_fill_normal(&rng, g, cols, 1.0, 0.5);

    clnorm_desc d;
    clnorm_desc_init(&d, rms ? CLNORM_RMS : CLNORM_LAYER, rows, cols);
    d.flags = CLNORM_WITH_BACKWARD; /* gamma and beta present: all three gradients */
    backward64(rms, rows, cols, x, dy, g, d.eps, dx64, dg64, db64);
    const unsigned mask = CLNORM_GRAD_X | CLNORM_GRAD_GAMMA | CLNORM_GRAD_BETA;

    /* The reference first, then every device strategy. */
    for (int s = -1; s < TU_NUM_STRATEGIES; s++) {
        clnorm_status st;
        char what[160];
        if (s < 0) {
            snprintf(what, sizeof what, "reference %s %zux%zu offset %g scale %g",
                     rms ? "rms" : "layer", rows, cols, offset, scale);
            st = clnorm_ref_backward(&d, mask, x, dy, NULL, NULL, g, dx, dg, db);
        } else {
            if (!tu_has_device(g_ctx))
                continue;
            clnorm_plan *plan = tu_plan_if(g_ctx, &d, tu_strategies[s]);
            if (!plan)
                continue;
            snprintf(what, sizeof what, "%s %s %zux%zu offset %g scale %g",
                     clnorm_strategy_name(tu_strategies[s]), rms ? "rms" : "layer", rows, cols,
                     offset, scale);
            st = clnorm_backward_host(plan, mask, x, dy, NULL, NULL, g, dx, dg, db);
            if (st != CLNORM_OK)
                print_error("%s: %s\n", what, clnorm_last_error(g_ctx));
            clnorm_plan_free(plan);
        }
        assert_int_equal(st, CLNORM_OK);
        check_limit(what, normwise(dx, dx64, n), relnorm(dg, dg64, cols),
                    relnorm(db, db64, cols));
    }
    void *const mem[] = {x, dy, dx, g, dg, db, dx64, dg64, db64};
    free_all(mem, sizeof mem / sizeof mem[0]);
}

/* The forward's numerics families, short and long rows. */
static void test_families(void **state)
{
    (void)state;
    static const struct {
        double offset, scale;
    } fam[] = {{0.0, 1.0}, {1e4, 1.0}, {1e6, 1.0}, {1e3, 1e-3}};
    static const size_t cols[] = {3, 768, 4097};
    uint64_t seed = 100;
    for (int rms = 0; rms < 2; rms++)
        for (size_t f = 0; f < sizeof fam / sizeof fam[0]; f++)
            for (size_t c = 0; c < sizeof cols / sizeof cols[0]; c++)
                run_family(rms, 5, cols[c], fam[f].offset, fam[f].scale, seed++);
}

/* Few long rows: the backward cuts them into column chunks; recomputed statistics must reach
 * every chunk. */
static void test_long_rows(void **state)
{
    (void)state;
    run_family(0, 3, 65537, 1e4, 1.0, 7);
    run_family(1, 2, 65537, 0.0, 1.0, 8);
}

/*
 * Layer 1 given the forward's saved statistics: a float32 mean is the row's rounded, up to
 * |mean| 2^-24 off, which xhat carries times rstd; rows whose |mean| * rstd is above 16 have
 * the kernels correct their mean by the mean of their deviations from it
 * (kernels/norm_backward.cl, bwd_refines), whose data here put dx 1e4-1e5 times past the
 * limit before. Host calls recompute such statistics instead (test_host_loop's
 * test_saved_stats_recomputed). Every strategy; dx with the parameters, the parameters alone
 * (their xhat needs the row's mean too: the chunked rows' sums run for them), dx alone.
 */
static void run_saved(size_t rows, size_t cols, double offset, double scale, unsigned mask,
                      uint64_t seed)
{
    if (!tu_has_device(g_ctx))
        skip();
    tu_rng rng;
    tu_rng_seed(&rng, seed);
    const size_t n = rows * cols;
    float *x = malloc(n * sizeof *x), *dy = malloc(n * sizeof *dy), *dx = malloc(n * sizeof *dx);
    float *g = malloc(cols * sizeof *g), *dg = malloc(cols * sizeof *dg);
    float *db = malloc(cols * sizeof *db), *bt = malloc(cols * sizeof *bt);
    double *dx64 = malloc(n * sizeof *dx64), *dg64 = malloc(cols * sizeof *dg64);
    double *db64 = malloc(cols * sizeof *db64);
    assert_true(x && dy && dx && g && dg && db && bt && dx64 && dg64 && db64);
    tu_fill_normal(&rng, x, n, offset, scale);
    tu_fill_normal(&rng, dy, n, 0.0, 1.0);
    tu_fill_normal(&rng, g, cols, 1.0, 0.5);
    tu_fill_normal(&rng, bt, cols, 0.0, 1.0);
    clnorm_desc d;
    clnorm_desc_init(&d, CLNORM_LAYER, rows, cols);
    d.flags = CLNORM_WITH_BACKWARD | CLNORM_SAVE_STATS;
    backward64(0, rows, cols, x, dy, g, d.eps, dx64, dg64, db64);
    cl_context cx = clnorm_get_cl_context(g_ctx);
    cl_command_queue q = clnorm_get_queue(g_ctx);
    for (int s = 0; s < TU_NUM_STRATEGIES; s++) {
        clnorm_plan *plan = tu_plan_if(g_ctx, &d, tu_strategies[s]);
        if (!plan)
            continue;
        cl_mem bx = tu_buffer(cx, q, x, n, 0), bdy = tu_buffer(cx, q, dy, n, 0);
        cl_mem by = tu_buffer(cx, q, NULL, n, 0), bg = tu_buffer(cx, q, g, cols, 0);
        cl_mem bb = tu_buffer(cx, q, bt, cols, 0), bm = tu_buffer(cx, q, NULL, rows, 0);
        cl_mem br = tu_buffer(cx, q, NULL, rows, 0), bdx = tu_buffer(cx, q, NULL, n, 0);
        cl_mem bdg = tu_buffer(cx, q, NULL, cols, 0), bdb = tu_buffer(cx, q, NULL, cols, 0);
        char what[200];
        snprintf(what, sizeof what, "%s %zux%zu offset %g scale %g mask %u",
                 clnorm_strategy_name(tu_strategies[s]), rows, cols, offset, scale, mask);
        clnorm_status st = clnorm_forward(plan, bx, 0, by, 0, bg, 0, bb, 0, bm, 0, br, 0, q, 0,
                                          NULL, NULL);
        if (st == CLNORM_OK)
            st = clnorm_backward(plan, mask, bx, 0, bdy, 0, bm, 0, br, 0, bg, 0,
                                 (mask & CLNORM_GRAD_X) ? bdx : NULL, 0,
                                 (mask & CLNORM_GRAD_GAMMA) ? bdg : NULL, 0,
                                 (mask & CLNORM_GRAD_BETA) ? bdb : NULL, 0, q, 0, NULL, NULL);
        if (st != CLNORM_OK)
            print_error("%s: %s\n", what, clnorm_last_error(g_ctx));
        assert_int_equal(st, CLNORM_OK);
        tu_read(q, bdx, dx, n);
        tu_read(q, bdg, dg, cols);
        tu_read(q, bdb, db, cols);
        const double edx = (mask & CLNORM_GRAD_X) ? normwise(dx, dx64, n) : 0,
                     edg = (mask & CLNORM_GRAD_GAMMA) ? relnorm(dg, dg64, cols) : 0,
                     edb = (mask & CLNORM_GRAD_BETA) ? relnorm(db, db64, cols) : 0;
        print_message("saved statistics, %s: dx %.3g, dgamma %.3g, dbeta %.3g\n", what, edx,
                      edg, edb);
        cl_mem all[] = {bx, bdy, by, bg, bb, bm, br, bdx, bdg, bdb};
        for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
            clReleaseMemObject(all[k]);
        clnorm_plan_free(plan);
        check_limit(what, edx, edg, edb);
    }
    void *const mem[] = {x, dy, dx, g, dg, db, bt, dx64, dg64, db64};
    free_all(mem, sizeof mem / sizeof mem[0]);
}

static void test_saved_layer1(void **state)
{
    (void)state;
    const unsigned all = CLNORM_GRAD_X | CLNORM_GRAD_GAMMA | CLNORM_GRAD_BETA;
    static const struct {
        double offset, scale;
    } fam[] = {{0.0, 1.0}, {300.0, 1e-3}, {1e4, 1.0}, {-1e6, 3.0}};
    static const size_t cols[] = {3, 768, 4097};
    uint64_t seed = 900;
    for (size_t f = 0; f < sizeof fam / sizeof fam[0]; f++)
        for (size_t c = 0; c < sizeof cols / sizeof cols[0]; c++)
            run_saved(5, cols[c], fam[f].offset, fam[f].scale, all, seed++);
    run_saved(64, 768, 300.0, 1e-3, CLNORM_GRAD_GAMMA | CLNORM_GRAD_BETA, seed++);
    run_saved(64, 768, 300.0, 1e-3, CLNORM_GRAD_X, seed++);
    /* few long rows: their sums in column chunks (norm_bwd_sums), for dx and for dgamma */
    run_saved(3, 65537, 1e4, 1.0, all, seed++);
    run_saved(3, 65537, 300.0, 1e-3, CLNORM_GRAD_GAMMA, seed++);
}

/* One saved statistic without the other is refused, and refused before anything is
 * written. */
static void test_half_given(void **state)
{
    (void)state;
    clnorm_desc d;
    clnorm_desc_init(&d, CLNORM_LAYER, 2, 4);
    d.flags = CLNORM_WITH_BACKWARD | CLNORM_NO_GAMMA | CLNORM_NO_BETA;
    float x[8] = {1, 2, 3, 4, 5, 6, 7, 9}, dy[8] = {1, 0, 0, 1, 0, 1, 1, 0}, stat[2] = {1, 1};
    float dx[8];
    tu_fill_bits(dx, 8, 0x7fc00123u);
    assert_int_equal(clnorm_ref_backward(&d, CLNORM_GRAD_X, x, dy, stat, NULL, NULL, dx, NULL,
                                         NULL),
                     CLNORM_INVALID_ARGUMENT);
    assert_int_equal(clnorm_ref_backward(&d, CLNORM_GRAD_X, x, dy, NULL, stat, NULL, dx, NULL,
                                         NULL),
                     CLNORM_INVALID_ARGUMENT);
    assert_int_equal(tu_count_not_bits(dx, 8, 0x7fc00123u, "dx after a refused call"), 0);
}

int main(int argc, char **argv)
{
    if (argc > 1) /* a pattern of the tests to run (CTest's GPU-geometry run) */
        cmocka_set_test_filter(argv[1]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_families),
        cmocka_unit_test(test_long_rows),
        cmocka_unit_test(test_saved_layer1),
        cmocka_unit_test(test_half_given),
    };
    return cmocka_run_group_tests_name("backward, recomputed statistics", tests, group_setup,
                                       group_teardown);
}
