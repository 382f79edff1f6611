/*
 * test_modulation.c - per-sample modulation (CLNORM_SCALE / CLNORM_SHIFT: conditional
 * LayerNorm, DiT's adaLN) and precomputed statistics (CLNORM_USE_GLOBAL_STATS) on the device,
 * against the CPU reference (tu_problem.h tolerances), for every row operation of the
 * registry (those whose forward takes a SCALE):
 *   - samples of many rows (more than a backward row block: blocks inside a sample), of a
 *     few, and of one row (blocks of whole samples), scale and shift alone and together, with
 *     and without gamma / beta, dense and strided (mod_stride) scale rows, every strategy,
 *     both directions (dx, dgamma, dbeta, dscale, dshift);
 *   - f16 and bf16 storage with float32 scale / shift, and f64;
 *   - precomputed statistics, forward and backward (dx without the statistics' terms), with
 *     and without a modulation;
 *   - determinism: the backward's dscale and dshift are the same bits run after run;
 *   - the descriptions and calls that must be refused, and that nothing is written then.
 * The finite-difference check of the reference's backward is test_gradcheck's, the PyTorch
 * float64 cases test_golden's and test_backward_golden's.
 */
#include "tu_problem.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS CLNORM_ARG_SLOT_COUNT

static clnorm_ctx *g_ctx;

static const clnorm_direction dirs[2] = {CLNORM_FORWARD, CLNORM_BACKWARD};
static const clnorm_strategy all_strategies[] = {
    CLNORM_STRATEGY_AUTO, CLNORM_STRATEGY_ROW, CLNORM_STRATEGY_WORKGROUP,
    CLNORM_STRATEGY_SPLIT, CLNORM_STRATEGY_SUBGROUP};

static void require_device(void)
{
    if (!tu_has_device(g_ctx))
        skip();
}

/* The operations with a per-sample modulation (the registry says which). */
static size_t modulated_ops(clnorm_kind out[8])
{
    size_t n = 0;
    for (size_t op = 0; op < clnorm_op_count() && n < 8; op++) {
        clnorm_op_info info;
        assert_int_equal(clnorm_op_query((clnorm_kind)op, &info), CLNORM_OK);
        if (info.forward_slots & TU_SLOT(CLNORM_ARG_SCALE))
            out[n++] = (clnorm_kind)op;
    }
    if (n < 5)
        fail_msg("the registry has %zu operations with a modulation, expected the 4 row kinds "
                 "and GroupNorm", n);
    return n;
}

typedef struct {
    size_t samples, rows_per_sample, cols, mod_stride;
    unsigned flags; /* CLNORM_SCALE | CLNORM_SHIFT | CLNORM_NO_* | CLNORM_USE_GLOBAL_STATS */
} mod_case;

static clnorm_desc make_desc(clnorm_kind kind, clnorm_dtype t, const mod_case *c)
{
    clnorm_desc d;
    clnorm_desc_init(&d, kind, c->samples * c->rows_per_sample, c->cols);
    d.dtype = t;
    d.samples = c->samples;
    d.mod_stride = c->mod_stride;
    d.flags = c->flags | CLNORM_WITH_BACKWARD |
              ((c->flags & CLNORM_USE_GLOBAL_STATS) ? 0u : CLNORM_SAVE_STATS);
    return d;
}

/* Every case on every op, both directions, on the strategies given; returns the failures. */
static size_t run_cases(const mod_case *cases, size_t n, clnorm_dtype t,
                        const clnorm_strategy *st, size_t ns, uint64_t seed)
{
    clnorm_kind ops[8];
    const size_t nops = modulated_ops(ops);
    size_t failed = 0;
    tu_launch l = tu_launch_offsets();
    for (size_t o = 0; o < nops; o++)
        for (size_t i = 0; i < n; i++) {
            const clnorm_desc d = make_desc(ops[o], t, &cases[i]);
            tu_problem p[2];
            for (int k = 0; k < 2; k++)
                tu_problem_make(&p[k], &d, dirs[k], TU_ALL_OPTIONAL,
                                seed + 100 * o + 2 * i + (uint64_t)k, NULL);
            for (size_t s = 0; s < ns; s++) {
                clnorm_plan *plan = tu_plan_if(g_ctx, &d, st[s]);
                if (plan == NULL)
                    continue; /* subgroup: rows too long; f64: no fp64 */
                l.explicit_queue = (int)(s & 1);
                for (int k = 0; k < 2; k++)
                    failed += tu_problem_try_cl(g_ctx, &p[k], plan, &l, 0) != 0;
                clnorm_plan_free(plan);
            }
            tu_problem_free(&p[0]);
            tu_problem_free(&p[1]);
        }
    return failed;
}

static void all_passed(size_t failed, const char *what)
{
    if (failed)
        fail_msg("%s: %zu runs mismatched (the FAILED CASE lines above)", what, failed);
}

#define SS (CLNORM_SCALE | CLNORM_SHIFT)
#define NO_AFFINE (CLNORM_NO_GAMMA | CLNORM_NO_BETA)

/* Samples longer than a backward block (300 rows), a few rows, one row; scale and shift in
 * every combination, with and without gamma / beta, a strided modulation. The last three have
 * more than CLNORM_PARAM_SLICED_MIN parameter partials per column, so the backward adds them
 * in slices first: one partial per slice (96 one-row samples), several slices per sample
 * (samples of 10000 rows: 40 blocks of 256 on a CPU), and the same without a modulation. */
static const mod_case f32_cases[] = {
    {96, 1, 40, 0, SS},
    {2, 10000, 8, 0, SS},
    {1, 20000, 8, 0, 0},
    {3, 300, 40, 0, SS},
    {4, 7, 33, 0, SS | NO_AFFINE},
    {5, 3, 64, 70, CLNORM_SCALE},
    {3, 4, 17, 0, CLNORM_SHIFT | CLNORM_NO_GAMMA},
    {64, 1, 96, 0, SS},
    {2, 2, 1000, 1003, SS | CLNORM_NO_BETA},
    {2, 1, 4099, 0, SS},
};

static void test_modulation_f32(void **state)
{
    (void)state;
    require_device();
    all_passed(run_cases(f32_cases, TU_COUNT(f32_cases), CLNORM_F32, all_strategies,
                         TU_COUNT(all_strategies), 100),
               "f32 modulation");
}

/* Other storage types: the automatic strategy and split (PoCL builds each program in 10-20 s;
 * the strategies' modulation code is the f32 one). */
static const mod_case typed_cases[] = {
    {3, 5, 48, 0, SS},
    {4, 1, 31, 35, CLNORM_SCALE | NO_AFFINE},
};
static const clnorm_strategy few[] = {CLNORM_STRATEGY_AUTO, CLNORM_STRATEGY_SPLIT};

static void test_modulation_f16(void **state)
{
    (void)state;
    require_device();
    all_passed(run_cases(typed_cases, TU_COUNT(typed_cases), CLNORM_F16, few, TU_COUNT(few), 200),
               "f16 modulation");
}

static void test_modulation_bf16(void **state)
{
    (void)state;
    require_device();
    all_passed(run_cases(typed_cases, TU_COUNT(typed_cases), CLNORM_BF16, few, TU_COUNT(few),
                         300),
               "bf16 modulation");
}

static void test_modulation_f64(void **state)
{
    (void)state;
    require_device();
    all_passed(run_cases(typed_cases, TU_COUNT(typed_cases), CLNORM_F64, few, TU_COUNT(few), 400),
               "f64 modulation");
}

/* Precomputed statistics: random mean and rstd (not the rows' own), with and without
 * gamma / beta and a modulation; every strategy (the forward is one apply kernel for all). */
static const mod_case global_cases[] = {
    {1, 9, 40, 0, CLNORM_USE_GLOBAL_STATS},
    {1, 5, 1000, 0, CLNORM_USE_GLOBAL_STATS | NO_AFFINE},
    {3, 4, 33, 0, CLNORM_USE_GLOBAL_STATS | SS},
};

static void test_global_stats_f32(void **state)
{
    (void)state;
    require_device();
    all_passed(run_cases(global_cases, TU_COUNT(global_cases), CLNORM_F32, all_strategies,
                         TU_COUNT(all_strategies), 500),
               "f32 global statistics");
}

static void test_global_stats_f16(void **state)
{
    (void)state;
    require_device();
    all_passed(run_cases(global_cases, 1, CLNORM_F16, few, 1, 600), "f16 global statistics");
}

/* The backward's dscale and dshift (and dgamma, dbeta) are the same bits on every run. */
static void test_backward_deterministic(void **state)
{
    (void)state;
    require_device();
    const mod_case c = {8, 40, 300, 0, SS};
    const clnorm_desc d = make_desc(CLNORM_LAYER, CLNORM_F32, &c);
    tu_problem p;
    tu_problem_make(&p, &d, CLNORM_BACKWARD, TU_ALL_OPTIONAL, 700, NULL);
    clnorm_plan *plan = tu_plan_if(g_ctx, &d, CLNORM_STRATEGY_AUTO);
    assert_non_null(plan);
    const tu_launch l = tu_launch_offsets();
    tu_args a, b;
    tu_problem_run_cl(g_ctx, &p, plan, &l, 0, &a);
    tu_problem_run_cl(g_ctx, &p, plan, &l, 0, &b);
    static const clnorm_arg_slot outs[] = {CLNORM_ARG_DGAMMA, CLNORM_ARG_DBETA,
                                           CLNORM_ARG_DSCALE, CLNORM_ARG_DSHIFT};
    for (size_t i = 0; i < TU_COUNT(outs); i++) {
        const clnorm_slot_info *info = &p.info[outs[i]];
        assert_non_null(a.p[outs[i]]);
        if (memcmp(a.p[outs[i]], b.p[outs[i]], info->extent * 4) != 0)
            fail_msg("%s differs between two runs", clnorm_arg_name(outs[i]));
    }
    tu_args_free(&a);
    tu_args_free(&b);
    clnorm_plan_free(plan);
    tu_problem_free(&p);
}

/* ------------------------------------------------------------------------------------------ */
/* Refusals                                                                                    */

static void refused(const clnorm_desc *d, const char *needle)
{
    char msg[256];
    assert_int_equal(clnorm_desc_check(d, msg, sizeof msg), CLNORM_INVALID_ARGUMENT);
    if (!strstr(msg, needle))
        fail_msg("the refusal '%s' does not name '%s'", msg, needle);
    clnorm_plan *plan = (clnorm_plan *)1;
    assert_int_equal(clnorm_plan_create(g_ctx, d, &plan), CLNORM_INVALID_ARGUMENT);
    assert_null(plan);
}

static void test_desc_refusals(void **state)
{
    (void)state;
    clnorm_desc d;
    clnorm_desc_init(&d, CLNORM_LAYER, 12, 8);
    d.flags = CLNORM_SCALE;
    d.samples = 5;
    refused(&d, "does not divide");
    d.samples = 3;
    d.mod_stride = 7;
    refused(&d, "mod_stride");
    d.flags = 0;
    d.mod_stride = 0;
    refused(&d, "samples");
    d.samples = 1;
    d.flags = CLNORM_SAVE_STATS | CLNORM_USE_GLOBAL_STATS;
    refused(&d, "exclude");
    /* GroupNorm takes both too (test_group_modulation, test_group_global_stats) */
    clnorm_desc_init(&d, CLNORM_GROUP, 2, 8);
    d.groups = 2;
    d.flags = CLNORM_SHIFT | CLNORM_USE_GLOBAL_STATS;
    assert_int_equal(clnorm_desc_check(&d, NULL, 0), CLNORM_OK);
    /* an empty batch of no samples is valid; of three samples too (rows per sample 0) */
    clnorm_desc_init(&d, CLNORM_RMS, 0, 8);
    d.flags = CLNORM_SCALE;
    d.samples = 0;
    assert_int_equal(clnorm_desc_check(&d, NULL, 0), CLNORM_OK);
    d.samples = 3;
    assert_int_equal(clnorm_desc_check(&d, NULL, 0), CLNORM_OK);
}

/* A call that is refused leaves every output as it was. */
static void expect_refused_call(clnorm_plan *plan, clnorm_direction dir, const clnorm_host_arg *a,
                                size_t n, const char *needle, const float *out, size_t count)
{
    float before[64];
    memcpy(before, out, count * sizeof *out);
    assert_int_equal(clnorm_execute_host(plan, dir, a, n), CLNORM_INVALID_ARGUMENT);
    const char *msg = clnorm_last_error(g_ctx);
    if (!strstr(msg, needle))
        fail_msg("the refusal '%s' does not name '%s'", msg, needle);
    assert_memory_equal(before, out, count * sizeof *out);
}

static void test_call_refusals(void **state)
{
    (void)state;
    clnorm_desc d;
    clnorm_desc_init(&d, CLNORM_LAYER, 4, 8);
    d.samples = 2;
    d.flags = CLNORM_SCALE | CLNORM_WITH_BACKWARD;
    clnorm_plan *plan = NULL;
    assert_int_equal(clnorm_plan_create(g_ctx, &d, &plan), CLNORM_OK);
    float x[32], y[32], g[8], b[8], sc[16], sh[16], dy[32], dsc[16];
    for (int i = 0; i < 32; i++)
        x[i] = y[i] = dy[i] = (float)(i % 7) - 3.0f;
    for (int i = 0; i < 16; i++)
        sc[i] = sh[i] = dsc[i] = 0.25f;
    for (int i = 0; i < 8; i++)
        g[i] = b[i] = 1.0f;
    /* the forward without its scale; with a shift the plan does not have */
    const clnorm_host_arg no_scale[] = {{CLNORM_ARG_X, x}, {CLNORM_ARG_Y, y},
                                        {CLNORM_ARG_GAMMA, g}, {CLNORM_ARG_BETA, b}};
    expect_refused_call(plan, CLNORM_FORWARD, no_scale, 4, "scale", y, 32);
    const clnorm_host_arg with_shift[] = {{CLNORM_ARG_X, x},     {CLNORM_ARG_Y, y},
                                          {CLNORM_ARG_GAMMA, g}, {CLNORM_ARG_BETA, b},
                                          {CLNORM_ARG_SCALE, sc}, {CLNORM_ARG_SHIFT, sh}};
    expect_refused_call(plan, CLNORM_FORWARD, with_shift, 6, "shift", y, 32);
    /* dscale without beta (the plan has beta): dscale reads it */
    const clnorm_host_arg no_beta[] = {{CLNORM_ARG_X, x},      {CLNORM_ARG_GAMMA, g},
                                       {CLNORM_ARG_SCALE, sc}, {CLNORM_ARG_DY, dy},
                                       {CLNORM_ARG_DSCALE, dsc}};
    expect_refused_call(plan, CLNORM_BACKWARD, no_beta, 5, "beta", dsc, 16);
    /* dscale over the scale it reads */
    const clnorm_host_arg aliased[] = {{CLNORM_ARG_X, x},      {CLNORM_ARG_GAMMA, g},
                                       {CLNORM_ARG_BETA, b},   {CLNORM_ARG_SCALE, sc},
                                       {CLNORM_ARG_DY, dy},    {CLNORM_ARG_DSCALE, sc}};
    assert_int_equal(clnorm_execute_host(plan, CLNORM_BACKWARD, aliased, 6),
                     CLNORM_INVALID_ARGUMENT);
    /* the same with beta runs */
    const clnorm_host_arg ok[] = {{CLNORM_ARG_X, x},      {CLNORM_ARG_GAMMA, g},
                                  {CLNORM_ARG_BETA, b},   {CLNORM_ARG_SCALE, sc},
                                  {CLNORM_ARG_DY, dy},    {CLNORM_ARG_DSCALE, dsc}};
    assert_int_equal(clnorm_execute_host(plan, CLNORM_BACKWARD, ok, 6), CLNORM_OK);
    clnorm_plan_free(plan);

    /* global statistics: mean and rstd are required inputs */
    clnorm_desc_init(&d, CLNORM_LAYER, 4, 8);
    d.flags = CLNORM_USE_GLOBAL_STATS | CLNORM_NO_GAMMA | CLNORM_NO_BETA;
    assert_int_equal(clnorm_plan_create(g_ctx, &d, &plan), CLNORM_OK);
    float mean[4] = {0, 1, 2, 3}, rstd[4] = {1, 1, 1, 1};
    const clnorm_host_arg no_mean[] = {{CLNORM_ARG_X, x}, {CLNORM_ARG_Y, y},
                                       {CLNORM_ARG_RSTD, rstd}};
    expect_refused_call(plan, CLNORM_FORWARD, no_mean, 3, "mean", y, 32);
    const clnorm_host_arg full[] = {{CLNORM_ARG_X, x}, {CLNORM_ARG_Y, y},
                                    {CLNORM_ARG_MEAN, mean}, {CLNORM_ARG_RSTD, rstd}};
    assert_int_equal(clnorm_execute_host(plan, CLNORM_FORWARD, full, 4), CLNORM_OK);
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 8; c++)
            assert_float_equal(y[r * 8 + c], x[r * 8 + c] - mean[r], 0.0f);
    clnorm_plan_free(plan);
}

static int group_setup(void **state)
{
    (void)state;
    g_ctx = tu_context("modulation");
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    clnorm_free(g_ctx);
    g_ctx = NULL;
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_modulation_f32),
        cmocka_unit_test(test_modulation_f16),
        cmocka_unit_test(test_modulation_bf16),
        cmocka_unit_test(test_modulation_f64),
        cmocka_unit_test(test_global_stats_f32),
        cmocka_unit_test(test_global_stats_f16),
        cmocka_unit_test(test_backward_deterministic),
        cmocka_unit_test(test_desc_refusals),
        cmocka_unit_test(test_call_refusals),
    };
    return cmocka_run_group_tests_name("modulation", tests, group_setup, group_teardown);
}
