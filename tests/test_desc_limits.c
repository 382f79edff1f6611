/*
 * test_desc_limits.c - two edges of a description.
 *   eps is a double: a float64 LayerNorm uses it unrounded (with eps = 1e-3 a float eps was
 *   1.3e-10 off the float64 result), while float32/f16/bf16 storage uses eps rounded to float,
 *   so an eps that rounds to 0 or Inf there is rejected, with a message, before any plan.
 *   The empty batch (rows = 0) with CLNORM_WITH_BACKWARD, rows short and very long: every
 *   strategy makes a plan (plans once asked the device for 0-byte scratch buffers), the
 *   forward writes nothing and the backward writes zero dgamma and dbeta (a sum over no rows).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "clnorm.h"
#include "dtype.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    clnorm_ctx *ctx; /* NULL when CLNORM_DEVICE names no device */
    int device;      /* an OpenCL device to run the strategies on */
} suite;

static int group_setup(void **state)
{
    suite *s = calloc(1, sizeof *s);
    if (!s)
        return -1;
    if (clnorm_create(NULL, &s->ctx) == CLNORM_OK &&
        clnorm_get_backend(s->ctx) == CLNORM_BACKEND_OPENCL)
        s->device = 1;
    *state = s;
    return 0;
}

static int group_teardown(void **state)
{
    suite *s = *state;
    clnorm_free(s->ctx);
    free(s);
    return 0;
}

static const clnorm_strategy device_strategies[] = {CLNORM_STRATEGY_ROW,
                                                    CLNORM_STRATEGY_WORKGROUP,
                                                    CLNORM_STRATEGY_SPLIT,
                                                    CLNORM_STRATEGY_SUBGROUP};
#define NUM_DEVICE_STRATEGIES (sizeof device_strategies / sizeof device_strategies[0])

static uint64_t mix(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static double normal(uint64_t *s)
{
    const double u = ((double)(mix(s) >> 11) + 0.5) * 0x1p-53;
    const double v = ((double)(mix(s) >> 11) + 0.5) * 0x1p-53;
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

/* ---- eps ---- */

/* float64 rows whose variance (1e-4) is a tenth of eps = 1e-3: eps is most of the
 * denominator, so a float eps (off by 4.7e-11 relative) shows in every output. */
static void test_eps_f64_exact(void **state)
{
    suite *s = *state;
    enum { ROWS = 16, COLS = 333 };
    clnorm_desc d;
    clnorm_desc_init(&d, CLNORM_LAYER, ROWS, COLS);
    d.dtype = CLNORM_F64;
    d.eps = 1e-3;
    d.flags = CLNORM_SAVE_STATS;
    double *x = malloc(ROWS * COLS * sizeof *x), *y = malloc(ROWS * COLS * sizeof *y);
    double *g = malloc(COLS * sizeof *g), *b = malloc(COLS * sizeof *b);
    double *want = malloc(ROWS * COLS * sizeof *want), mean[ROWS], rstd[ROWS], wm[ROWS], wr[ROWS];
    assert_true(x && y && g && b && want);
    uint64_t seed = 11;
    for (size_t i = 0; i < ROWS * COLS; i++)
        x[i] = 0.5 + 0.01 * normal(&seed);
    for (size_t j = 0; j < COLS; j++) {
        g[j] = 1.0 + 0.3 * normal(&seed);
        b[j] = 0.3 * normal(&seed);
    }
    /* The oracle: two passes in long double (x87's 64-bit significand where there is one),
     * eps as given: float64 sums of 333 values of 0.5 would themselves be off by ~1e-14. */
    for (size_t i = 0; i < ROWS; i++) {
        const double *r = x + i * COLS;
        long double m = 0.0L, v = 0.0L;
        for (size_t j = 0; j < COLS; j++)
            m += r[j];
        m /= COLS;
        for (size_t j = 0; j < COLS; j++)
            v += (r[j] - m) * (r[j] - m);
        v /= COLS;
        const long double rs = 1.0L / sqrtl(v + 1e-3L);
        wm[i] = (double)m;
        wr[i] = (double)rs;
        for (size_t j = 0; j < COLS; j++)
            want[i * COLS + j] = (double)((r[j] - m) * rs * g[j] + b[j]);
    }
    const clnorm_strategy all[] = {CLNORM_STRATEGY_ROW, CLNORM_STRATEGY_WORKGROUP,
                                   CLNORM_STRATEGY_SPLIT, CLNORM_STRATEGY_SUBGROUP,
                                   CLNORM_STRATEGY_REFERENCE};
    int ran = 0;
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) {
        clnorm_plan *plan = NULL;
        if (all[k] != CLNORM_STRATEGY_REFERENCE) {
            if (!s->device)
                continue;
            const clnorm_status st = clnorm_plan_create_with(s->ctx, &d, all[k], &plan);
            if (st == CLNORM_UNSUPPORTED) { /* no cl_khr_fp64 */
                printf("    (%s skipped: %s)\n", clnorm_strategy_name(all[k]),
                       clnorm_last_error(s->ctx));
                continue;
            }
            assert_int_equal(st, CLNORM_OK);
        }
        const clnorm_host_arg a[6] = {{CLNORM_ARG_X, x},     {CLNORM_ARG_Y, y},
                                      {CLNORM_ARG_GAMMA, g}, {CLNORM_ARG_BETA, b},
                                      {CLNORM_ARG_MEAN, mean}, {CLNORM_ARG_RSTD, rstd}};
        assert_int_equal(plan ? clnorm_execute_host(plan, CLNORM_FORWARD, a, 6)
                              : clnorm_ref_execute(&d, CLNORM_FORWARD, a, 6),
                         CLNORM_OK);
        double ey = 0.0, er = 0.0, em = 0.0;
        for (size_t i = 0; i < ROWS * COLS; i++)
            ey = fmax(ey, fabs(y[i] - want[i]));
        for (size_t i = 0; i < ROWS; i++) {
            er = fmax(er, fabs(rstd[i] - wr[i]) / wr[i]);
            em = fmax(em, fabs(mean[i] - wm[i]) / fabs(wm[i]));
        }
        if (ey > 1e-14 || er > 1e-14 || em > 1e-15)
            print_error("%s: y off by %.3g, rstd by %.3g (relative), mean by %.3g (relative)\n",
                        clnorm_strategy_name(all[k]), ey, er, em);
        assert_true(ey <= 1e-14 && er <= 1e-14 && em <= 1e-15);
        clnorm_plan_free(plan);
        ran++;
    }
    assert_true(ran > 0);
    free(x);
    free(y);
    free(g);
    free(b);
    free(want);
}

/* An eps that float arithmetic cannot hold: rejected for float32, f16 and bf16 by the
 * description check (with a message naming eps), by plan creation and by the reference;
 * accepted for float64, which uses it as it is. */
static void test_eps_rounding_to_float(void **state)
{
    suite *s = *state;
    const double bad[] = {1e-50, 1e39};
    const clnorm_dtype narrow[] = {CLNORM_F32, CLNORM_F16, CLNORM_BF16};
    for (size_t e = 0; e < sizeof bad / sizeof bad[0]; e++) {
        for (size_t t = 0; t < sizeof narrow / sizeof narrow[0]; t++) {
            clnorm_desc d;
            clnorm_desc_init(&d, CLNORM_LAYER, 2, 8);
            d.dtype = narrow[t];
            d.eps = bad[e];
            char msg[256] = "";
            assert_int_equal(clnorm_desc_check(&d, msg, sizeof msg), CLNORM_INVALID_ARGUMENT);
            if (!strstr(msg, "eps"))
                print_error("eps = %g, dtype %d: message \"%s\"\n", bad[e], (int)narrow[t], msg);
            assert_non_null(strstr(msg, "eps"));
            if (s->ctx) {
                clnorm_plan *plan = (clnorm_plan *)&d; /* must come back NULL */
                assert_int_equal(clnorm_plan_create(s->ctx, &d, &plan), CLNORM_INVALID_ARGUMENT);
                assert_null(plan);
                assert_non_null(strstr(clnorm_last_error(s->ctx), "eps"));
            }
            unsigned char x[64] = {0}, y[64], g[64] = {0}, b[64] = {0};
            const clnorm_host_arg a[4] = {{CLNORM_ARG_X, x},
                                          {CLNORM_ARG_Y, y},
                                          {CLNORM_ARG_GAMMA, g},
                                          {CLNORM_ARG_BETA, b}};
            assert_int_equal(clnorm_ref_execute(&d, CLNORM_FORWARD, a, 4),
                             CLNORM_INVALID_ARGUMENT);
        }
        clnorm_desc d;
        clnorm_desc_init(&d, CLNORM_LAYER, 2, 8);
        d.dtype = CLNORM_F64;
        d.eps = bad[e];
        assert_int_equal(clnorm_desc_check(&d, NULL, 0), CLNORM_OK);
    }
}

/* ---- the empty batch ---- */

#define SENTINEL 0x7FC0BEEFu /* a NaN: an output element that keeps it was not written */

static void fill_bits(float *p, size_t n, uint32_t bits)
{
    for (size_t i = 0; i < n; i++)
        memcpy(&p[i], &bits, sizeof bits);
}

static size_t count_not_bits(const float *p, size_t n, uint32_t bits)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &p[i], sizeof u);
        bad += u != bits;
    }
    return bad;
}

static size_t count_not_zero(const float *p, size_t n)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += p[i] != 0.0f;
    return bad;
}

/* The plan of a strategy for an empty batch. The subgroup strategy holds a row in registers,
 * so it may refuse (CLNORM_UNSUPPORTED) columns beyond its limit: then it must refuse one row
 * of them too, since an empty batch must never be what a plan fails on. */
static clnorm_plan *empty_plan(suite *s, const clnorm_desc *d, clnorm_strategy st)
{
    clnorm_plan *plan = NULL;
    const clnorm_status rc = clnorm_plan_create_with(s->ctx, d, st, &plan);
    if (rc == CLNORM_UNSUPPORTED && st == CLNORM_STRATEGY_SUBGROUP) {
        clnorm_desc one = *d;
        one.rows = 1;
        clnorm_plan *p1 = NULL;
        assert_int_equal(clnorm_plan_create_with(s->ctx, &one, st, &p1), CLNORM_UNSUPPORTED);
        return NULL;
    }
    if (rc != CLNORM_OK)
        print_error("0 x %zu, %s, with backward: %s\n", d->cols, clnorm_strategy_name(st),
                    clnorm_last_error(s->ctx));
    assert_int_equal(rc, CLNORM_OK);
    return plan;
}

/* Host layer: the forward leaves its (zero-element) outputs alone, both backwards (saved
 * statistics given, or recomputed) write dgamma = dbeta = 0 over every column. gamma: cols
 * ones (gamma and beta have cols elements even without rows). */
static void empty_host(clnorm_plan *plan, int has_mean, size_t cols, const float *gamma,
                       float *dg, float *db)
{
    float small[16]; /* x, y, dy, dx, mean, rstd: no elements, so any address will do */
    fill_bits(small, 16, SENTINEL);
    clnorm_host_arg f[6] = {{CLNORM_ARG_X, small},
                            {CLNORM_ARG_Y, small + 4},
                            {CLNORM_ARG_GAMMA, (void *)gamma},
                            {CLNORM_ARG_BETA, (void *)gamma},
                            {CLNORM_ARG_RSTD, small + 12}};
    size_t nf = 5;
    if (has_mean)
        f[nf++] = (clnorm_host_arg){CLNORM_ARG_MEAN, small + 8};
    assert_int_equal(clnorm_execute_host(plan, CLNORM_FORWARD, f, nf), CLNORM_OK);
    assert_int_equal(count_not_bits(small, 16, SENTINEL), 0);
    for (int saved = 0; saved < 2; saved++) {
        fill_bits(dg, cols, SENTINEL);
        fill_bits(db, cols, SENTINEL);
        clnorm_host_arg b[8] = {{CLNORM_ARG_X, small},
                                {CLNORM_ARG_DY, small + 4},
                                {CLNORM_ARG_GAMMA, (void *)gamma},
                                {CLNORM_ARG_DX, small + 8},
                                {CLNORM_ARG_DGAMMA, dg},
                                {CLNORM_ARG_DBETA, db}};
        size_t nb = 6;
        if (saved) {
            b[nb++] = (clnorm_host_arg){CLNORM_ARG_RSTD, small + 14};
            if (has_mean)
                b[nb++] = (clnorm_host_arg){CLNORM_ARG_MEAN, small + 12};
        }
        assert_int_equal(clnorm_execute_host(plan, CLNORM_BACKWARD, b, nb), CLNORM_OK);
        assert_int_equal(count_not_zero(dg, cols), 0);
        assert_int_equal(count_not_zero(db, cols), 0);
        assert_int_equal(count_not_bits(small, 16, SENTINEL), 0);
    }
}

static cl_mem buffer(cl_context c, const float *init, size_t n)
{
    cl_int err;
    cl_mem m = clCreateBuffer(c, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, n * sizeof *init,
                              (void *)init, &err);
    assert_int_equal(err, CL_SUCCESS);
    return m;
}

/* Layer 1: the same through cl_mem buffers; the events exist and complete. */
static void empty_mem(suite *s, clnorm_plan *plan, int has_mean, size_t cols,
                      const float *gamma, float *dg, float *db)
{
    const cl_context c = clnorm_get_cl_context(s->ctx);
    const cl_command_queue q = clnorm_get_queue(s->ctx);
    float small[16];
    fill_bits(small, 16, SENTINEL);
    fill_bits(dg, cols, SENTINEL);
    cl_mem buf = buffer(c, small, 16), mgamma = buffer(c, gamma, cols);
    cl_mem mg = buffer(c, dg, cols), mb = buffer(c, dg, cols);
    clnorm_arg f[6] = {{CLNORM_ARG_X, buf, 0},      {CLNORM_ARG_Y, buf, 4},
                       {CLNORM_ARG_GAMMA, mgamma, 0}, {CLNORM_ARG_BETA, mgamma, 0},
                       {CLNORM_ARG_RSTD, buf, 12}};
    size_t nf = 5;
    if (has_mean)
        f[nf++] = (clnorm_arg){CLNORM_ARG_MEAN, buf, 8};
    cl_event ev = NULL;
    assert_int_equal(clnorm_execute(plan, CLNORM_FORWARD, f, nf, NULL, 0, NULL, &ev), CLNORM_OK);
    assert_non_null(ev);
    assert_int_equal(clWaitForEvents(1, &ev), CL_SUCCESS);
    clReleaseEvent(ev);
    const clnorm_arg b[6] = {{CLNORM_ARG_X, buf, 0},        {CLNORM_ARG_DY, buf, 4},
                             {CLNORM_ARG_GAMMA, mgamma, 0}, {CLNORM_ARG_DX, buf, 8},
                             {CLNORM_ARG_DGAMMA, mg, 0},    {CLNORM_ARG_DBETA, mb, 0}};
    ev = NULL;
    assert_int_equal(clnorm_execute(plan, CLNORM_BACKWARD, b, 6, NULL, 0, NULL, &ev), CLNORM_OK);
    assert_non_null(ev);
    assert_int_equal(clEnqueueReadBuffer(q, mg, CL_TRUE, 0, cols * sizeof(float), dg, 1, &ev,
                                         NULL),
                     CL_SUCCESS);
    assert_int_equal(clEnqueueReadBuffer(q, mb, CL_TRUE, 0, cols * sizeof(float), db, 1, &ev,
                                         NULL),
                     CL_SUCCESS);
    assert_int_equal(clEnqueueReadBuffer(q, buf, CL_TRUE, 0, sizeof small, small, 1, &ev, NULL),
                     CL_SUCCESS);
    clReleaseEvent(ev);
    assert_int_equal(count_not_zero(dg, cols), 0);
    assert_int_equal(count_not_zero(db, cols), 0);
    assert_int_equal(count_not_bits(small, 16, SENTINEL), 0);
    clReleaseMemObject(buf);
    clReleaseMemObject(mgamma);
    clReleaseMemObject(mg);
    clReleaseMemObject(mb);
}

static void empty_batch(void **state, clnorm_kind kind, size_t cols)
{
    suite *s = *state;
    if (!s->device)
        skip();
    clnorm_desc d;
    clnorm_desc_init(&d, kind, 0, cols);
    d.flags = CLNORM_WITH_BACKWARD | CLNORM_SAVE_STATS;
    const int has_mean = kind == CLNORM_LAYER;
    float *gamma = malloc(cols * sizeof *gamma);
    float *dg = malloc(cols * sizeof *dg), *db = malloc(cols * sizeof *db);
    assert_true(gamma && dg && db);
    for (size_t j = 0; j < cols; j++)
        gamma[j] = 1.0f;
    for (size_t k = 0; k < NUM_DEVICE_STRATEGIES; k++) {
        clnorm_plan *plan = empty_plan(s, &d, device_strategies[k]);
        if (!plan)
            continue;
        empty_host(plan, has_mean, cols, gamma, dg, db);
        empty_mem(s, plan, has_mean, cols, gamma, dg, db);
        clnorm_plan_free(plan);
    }
    free(gamma);
    free(dg);
    free(db);
}

static void test_empty_37(void **state)
{
    empty_batch(state, CLNORM_LAYER, 37);
}

/* 8192 columns and more: the first widths at which the split strategy and the chunked
 * backward made scratch buffers of rows x chunks = 0 bytes. */
static void test_empty_8192(void **state)
{
    empty_batch(state, CLNORM_LAYER, 8192);
}

static void test_empty_1048576(void **state)
{
    empty_batch(state, CLNORM_RMS, 1048576);
}

/* An empty batch of 2^40 columns (a 128-byte .npy can say so): a plan is made in moments
 * (its warm-up launches one work-group per kernel, not the backward's column pass over every
 * column) and the calls that write nothing return at once, on the host too (no scratch sized
 * by the columns: 48 TB). Only dx is asked for, which has no elements. */
static void test_empty_huge_cols(void **state)
{
    suite *s = *state;
    if (!s->device)
        skip();
    clnorm_desc d;
    clnorm_desc_init(&d, CLNORM_LAYER, 0, (size_t)1 << 40);
    d.flags = CLNORM_WITH_BACKWARD | CLNORM_NO_GAMMA | CLNORM_NO_BETA;
    clnorm_plan *plan = NULL;
    const clnorm_status st = clnorm_plan_create(s->ctx, &d, &plan);
    if (st == CLNORM_UNSUPPORTED) /* a device whose largest allocation is below a scratch */
        skip();
    assert_int_equal(st, CLNORM_OK);
    float none = 0;
    assert_int_equal(clnorm_forward_host(plan, &none, &none, NULL, NULL, NULL, NULL), CLNORM_OK);
    const clnorm_host_arg args[] = {{CLNORM_ARG_X, &none}, {CLNORM_ARG_DY, &none},
                                    {CLNORM_ARG_DX, &none}};
    assert_int_equal(clnorm_execute_host(plan, CLNORM_BACKWARD, args, 3), CLNORM_OK);
    assert_int_equal(clnorm_ref_execute(&d, CLNORM_BACKWARD, args, 3), CLNORM_OK);
    clnorm_plan_free(plan);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_eps_f64_exact),
        cmocka_unit_test(test_eps_rounding_to_float),
        cmocka_unit_test(test_empty_37),
        cmocka_unit_test(test_empty_8192),
        cmocka_unit_test(test_empty_1048576),
        cmocka_unit_test(test_empty_huge_cols),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
