/*
 * test_backward.c - the backward pass of every device strategy against the CPU reference
 * clnorm_ref_backward (float32): a sweep of shapes for LayerNorm and RMSNorm, every output
 * mask, gamma / beta absent, strided x and dy, dx in place of dy, the cl_mem layer at non-zero
 * offsets between sentinels and the host layer, two hard data families, odd work-group sizes
 * (CLNORM_LOCAL_SIZE), bitwise determinism and empty batches. Statistics always come from the
 * reference forward. Tolerance: normwise 1e-5 (max abs error / max(1, max |ref|)) for dx,
 * dgamma and dbeta.
 * The golden PyTorch cases are in test_backward_golden.c, error paths in
 * test_backward_errors.c.
 */
#define _POSIX_C_SOURCE 200809L /* setenv, unsetenv, strdup */

#include "grad_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define MAX_ELEMENTS ((size_t)2100000) /* sweep shapes above this are left out */
#define ALL_GRADS (CLNORM_GRAD_X | CLNORM_GRAD_GAMMA | CLNORM_GRAD_BETA)

static clnorm_ctx *g_ctx;

static const size_t sweep_cols[] = {1, 2, 3, 7, 31, 64, 127, 768, 1000, 1024, 4097, 65537};
static const size_t sweep_rows[] = {1, 2, 17, 1000};

/* A float32 problem, N(0.3, 1) data unless said otherwise. */
static void make(gu_bwd_problem *p, clnorm_kind kind, size_t rows, size_t cols, size_t xs,
                 size_t ys, unsigned flags, uint64_t seed)
{
    gu_bwd_make(p, CLNORM_F32, kind, rows, cols, xs, ys, flags, seed, 0.3, 1.0);
}

/* One plan of the problem's description on `strategy`, one layer-1 run, checked. */
static void run_strategy(const gu_bwd_problem *p, clnorm_strategy strategy, unsigned mask,
                         const gu_bwd_launch *launch)
{
    clnorm_plan *plan = tu_plan_if(g_ctx, &p->desc, strategy);
    if (plan == NULL)
        return; /* subgroup: the row does not fit its registers on this device */
    if (strategy != CLNORM_STRATEGY_AUTO)
        assert_int_equal(clnorm_plan_strategy(plan), strategy);
    gu_bwd_run_cl(g_ctx, p, plan, mask, launch, NULL, NULL, NULL);
    clnorm_plan_free(plan);
}

/* ------------------------------------------------------------------------------------------ */
/* The sweep: every (rows, cols) of the lists, both kinds, full affine, all gradients, dense    */
/* rows at non-zero offsets. One test per strategy.                                            */

static void sweep(clnorm_strategy strategy)
{
    if (!tu_has_device(g_ctx))
        skip();
    gu_bwd_launch launch = gu_bwd_offsets();
    for (size_t ci = 0; ci < COUNT(sweep_cols); ci++) {
        for (size_t ri = 0; ri < COUNT(sweep_rows); ri++) {
            const size_t rows = sweep_rows[ri], cols = sweep_cols[ci];
            if (rows * cols > MAX_ELEMENTS)
                continue;
            for (int kind = 0; kind < 2; kind++) {
                gu_bwd_problem p;
                make(&p, (clnorm_kind)kind, rows, cols, 0, 0, 0,
                     100 * ci + 10 * ri + (uint64_t)kind);
                launch.explicit_queue = (int)((ci + ri) & 1);
                run_strategy(&p, strategy, ALL_GRADS, &launch);
                gu_bwd_free(&p);
            }
        }
    }
}

static void test_sweep_row(void **state)
{
    (void)state;
    sweep(CLNORM_STRATEGY_ROW);
}

static void test_sweep_workgroup(void **state)
{
    (void)state;
    sweep(CLNORM_STRATEGY_WORKGROUP);
}

static void test_sweep_split(void **state)
{
    (void)state;
    sweep(CLNORM_STRATEGY_SPLIT);
}

static void test_sweep_subgroup(void **state)
{
    (void)state;
    sweep(CLNORM_STRATEGY_SUBGROUP);
}

/* Tall-thin and wide: once each, the row strategy (layer 1) and auto (host layer). */
static void test_large_shapes(void **state)
{
    (void)state;
    if (!tu_has_device(g_ctx))
        skip();
    static const size_t shapes[][2] = {{262144, 64}, {4, 1048576}};
    const gu_bwd_launch launch = gu_bwd_offsets();
    for (size_t s = 0; s < COUNT(shapes); s++) {
        gu_bwd_problem p;
        make(&p, s ? CLNORM_RMS : CLNORM_LAYER, shapes[s][0], shapes[s][1], 0, 0, 0, 7000 + s);
        run_strategy(&p, CLNORM_STRATEGY_ROW, ALL_GRADS, &launch);
        clnorm_plan *plan = tu_plan(g_ctx, &p.desc, CLNORM_STRATEGY_AUTO);
        gu_bwd_run_host(g_ctx, &p, plan, ALL_GRADS, 0);
        clnorm_plan_free(plan);
        gu_bwd_free(&p);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Masks, absent parameters, layouts.                                                          */

static const size_t mask_shapes[][2] = {{1, 7}, {17, 127}, {3, 1000}, {2, 4097}};

/* Every non-empty subset of dx / dgamma / dbeta, on a plan with gamma and beta. */
static void test_masks(void **state)
{
    (void)state;
    if (!tu_has_device(g_ctx))
        skip();
    const gu_bwd_launch launch = gu_bwd_offsets();
    for (size_t s = 0; s < COUNT(mask_shapes); s++) {
        for (int kind = 0; kind < 2; kind++) {
            gu_bwd_problem p;
            make(&p, (clnorm_kind)kind, mask_shapes[s][0], mask_shapes[s][1], 0, 0, 0,
                 200 + 2 * s + (uint64_t)kind);
            for (int i = 0; i < TU_NUM_STRATEGIES; i++) {
                clnorm_plan *plan = tu_plan_if(g_ctx, &p.desc, tu_strategies[i]);
                if (plan == NULL)
                    continue;
                for (unsigned mask = 1; mask <= ALL_GRADS; mask++)
                    gu_bwd_run_cl(g_ctx, &p, plan, mask, &launch, NULL, NULL, NULL);
                clnorm_plan_free(plan);
            }
            gu_bwd_free(&p);
        }
    }
}

/* No gamma (g = dy), no beta, neither: every mask the plan allows. */
static void test_absent_parameters(void **state)
{
    (void)state;
    if (!tu_has_device(g_ctx))
        skip();
    static const unsigned flag_sets[] = {CLNORM_NO_GAMMA, CLNORM_NO_BETA,
                                         CLNORM_NO_GAMMA | CLNORM_NO_BETA};
    const gu_bwd_launch launch = gu_bwd_offsets();
    for (size_t s = 0; s < COUNT(mask_shapes); s++) {
        for (int kind = 0; kind < 2; kind++) {
            for (size_t f = 0; f < COUNT(flag_sets); f++) {
                gu_bwd_problem p;
                make(&p, (clnorm_kind)kind, mask_shapes[s][0], mask_shapes[s][1], 0, 0,
                     flag_sets[f], 300 + 8 * s + 4 * (uint64_t)kind + f);
                const unsigned full = gu_bwd_full_mask(&p);
                for (int i = 0; i < TU_NUM_STRATEGIES; i++) {
                    clnorm_plan *plan = tu_plan_if(g_ctx, &p.desc, tu_strategies[i]);
                    if (plan == NULL)
                        continue;
                    for (unsigned mask = 1; mask <= ALL_GRADS; mask++)
                        if ((mask & full) == mask)
                            gu_bwd_run_cl(g_ctx, &p, plan, mask, &launch, NULL, NULL, NULL);
                    clnorm_plan_free(plan);
                }
                gu_bwd_free(&p);
            }
        }
    }
}

/* x and dy with their own strides: dx takes x's, dy y's. Gaps hold NaN sentinels, so a kernel
 * that reads one poisons its row; the runner checks dx's gaps were not written. */
static void test_strided(void **state)
{
    (void)state;
    if (!tu_has_device(g_ctx))
        skip();
    static const size_t shapes[][4] = {/* rows, cols, x_stride, y_stride */
                                       {3, 1, 2, 5},      {17, 7, 9, 8},
                                       {5, 64, 67, 80},   {17, 127, 130, 128},
                                       {4, 1000, 1003, 1024}, {2, 4097, 4100, 4099}};
    const gu_bwd_launch launch = gu_bwd_offsets();
    for (size_t s = 0; s < COUNT(shapes); s++) {
        for (int kind = 0; kind < 2; kind++) {
            gu_bwd_problem p;
            make(&p, (clnorm_kind)kind, shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3],
                 0, 400 + 2 * s + (uint64_t)kind);
            for (int i = 0; i < TU_NUM_STRATEGIES; i++) {
                clnorm_plan *plan = tu_plan_if(g_ctx, &p.desc, tu_strategies[i]);
                if (plan == NULL)
                    continue;
                gu_bwd_run_cl(g_ctx, &p, plan, ALL_GRADS, &launch, NULL, NULL, NULL);
                gu_bwd_run_cl(g_ctx, &p, plan, CLNORM_GRAD_X, &launch, NULL, NULL, NULL);
                gu_bwd_run_host(g_ctx, &p, plan, ALL_GRADS, 0);
                clnorm_plan_free(plan);
            }
            gu_bwd_free(&p);
        }
    }
}

/* dx is dy (same cl_mem and offset, or same host pointer), equal strides, dense and not. */
static void test_in_place(void **state)
{
    (void)state;
    if (!tu_has_device(g_ctx))
        skip();
    static const size_t shapes[][3] = {/* rows, cols, stride (both) */
                                       {1, 1, 0},    {17, 7, 0},      {17, 7, 11},
                                       {5, 768, 0},  {3, 1000, 1001}, {2, 4097, 0}};
    gu_bwd_launch launch = gu_bwd_offsets();
    launch.in_place = 1;
    for (size_t s = 0; s < COUNT(shapes); s++) {
        for (int kind = 0; kind < 2; kind++) {
            gu_bwd_problem p;
            make(&p, (clnorm_kind)kind, shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][2],
                 0, 500 + 2 * s + (uint64_t)kind);
            for (int i = 0; i < TU_NUM_STRATEGIES; i++) {
                clnorm_plan *plan = tu_plan_if(g_ctx, &p.desc, tu_strategies[i]);
                if (plan == NULL)
                    continue;
                gu_bwd_run_cl(g_ctx, &p, plan, ALL_GRADS, &launch, NULL, NULL, NULL);
                gu_bwd_run_cl(g_ctx, &p, plan, CLNORM_GRAD_X, &launch, NULL, NULL, NULL);
                gu_bwd_run_host(g_ctx, &p, plan, ALL_GRADS, 1);
                clnorm_plan_free(plan);
            }
            gu_bwd_free(&p);
        }
    }
}

/* The host layer on dense shapes, every strategy and auto. */
static void test_host_api(void **state)
{
    (void)state;
    if (g_ctx == NULL)
        skip();
    static const size_t shapes[][2] = {{1, 1}, {2, 3}, {17, 31}, {1000, 64}, {3, 4097}};
    for (size_t s = 0; s < COUNT(shapes); s++) {
        for (int kind = 0; kind < 2; kind++) {
            gu_bwd_problem p;
            make(&p, (clnorm_kind)kind, shapes[s][0], shapes[s][1], 0, 0, 0,
                 600 + 2 * s + (uint64_t)kind);
            clnorm_plan *plan = tu_plan(g_ctx, &p.desc, CLNORM_STRATEGY_AUTO);
            gu_bwd_run_host(g_ctx, &p, plan, ALL_GRADS, 0);
            gu_bwd_run_host(g_ctx, &p, plan, CLNORM_GRAD_GAMMA | CLNORM_GRAD_BETA, 0);
            clnorm_plan_free(plan);
            for (int i = 0; tu_has_device(g_ctx) && i < TU_NUM_STRATEGIES; i++) {
                plan = tu_plan_if(g_ctx, &p.desc, tu_strategies[i]);
                if (plan == NULL)
                    continue;
                gu_bwd_run_host(g_ctx, &p, plan, ALL_GRADS, 0);
                clnorm_plan_free(plan);
            }
            gu_bwd_free(&p);
        }
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Hard data: a mean 1e4 times the spread, and a spread of 1e-3 at 1e3 (eps dominates).        */

static void test_data_families(void **state)
{
    (void)state;
    if (!tu_has_device(g_ctx))
        skip();
    static const double families[][2] = {{1e4, 1.0}, {1e3, 1e-3}};
    static const size_t shapes[][2] = {{17, 127}, {2, 4097}, {1000, 64}, {3, 65537}};
    const gu_bwd_launch launch = gu_bwd_offsets();
    for (size_t f = 0; f < COUNT(families); f++) {
        for (size_t s = 0; s < COUNT(shapes); s++) {
            for (int kind = 0; kind < 2; kind++) {
                gu_bwd_problem p;
                gu_bwd_make(&p, CLNORM_F32, (clnorm_kind)kind, shapes[s][0], shapes[s][1], 0, 0,
                            0, 800 + 16 * f + 2 * s + (uint64_t)kind, families[f][0],
                            families[f][1]);
                for (int i = 0; i < TU_NUM_STRATEGIES; i++)
                    run_strategy(&p, tu_strategies[i], ALL_GRADS, &launch);
                gu_bwd_free(&p);
            }
        }
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Work-group sizes, determinism, empty batches.                                               */

static const size_t local_shapes[][2] = {{3, 1}, {5, 31}, {17, 1000}, {2, 4097}, {300, 64}};

static void run_local_size(const char *value)
{
    if (!tu_has_device(g_ctx))
        skip();
    const gu_bwd_launch launch = gu_bwd_offsets();
    for (size_t s = 0; s < COUNT(local_shapes); s++) {
        for (int kind = 0; kind < 2; kind++) {
            gu_bwd_problem p;
            make(&p, (clnorm_kind)kind, local_shapes[s][0], local_shapes[s][1], 0, 0, 0,
                 900 + 2 * s + (uint64_t)kind);
            /* read at plan creation only; whatever the environment said is put back */
            const char *env = getenv("CLNORM_LOCAL_SIZE");
            char *saved = env ? strdup(env) : NULL;
            setenv("CLNORM_LOCAL_SIZE", value, 1);
            clnorm_plan *wg = NULL, *split = NULL;
            const clnorm_status s1 =
                clnorm_plan_create_with(g_ctx, &p.desc, CLNORM_STRATEGY_WORKGROUP, &wg);
            const clnorm_status s2 =
                clnorm_plan_create_with(g_ctx, &p.desc, CLNORM_STRATEGY_SPLIT, &split);
            if (saved)
                setenv("CLNORM_LOCAL_SIZE", saved, 1);
            else
                unsetenv("CLNORM_LOCAL_SIZE");
            free(saved);
            if (s1 != CLNORM_OK || s2 != CLNORM_OK)
                fail_msg("CLNORM_LOCAL_SIZE=%s: plan creation = %d / %d: %s", value, s1, s2,
                         clnorm_last_error(g_ctx));
            gu_bwd_run_cl(g_ctx, &p, wg, ALL_GRADS, &launch, NULL, NULL, NULL);
            gu_bwd_run_cl(g_ctx, &p, split, ALL_GRADS, &launch, NULL, NULL, NULL);
            clnorm_plan_free(wg);
            clnorm_plan_free(split);
            gu_bwd_free(&p);
        }
    }
}

static void test_local_size_3(void **state)
{
    (void)state;
    run_local_size("3");
}

static void test_local_size_100(void **state)
{
    (void)state;
    run_local_size("100");
}

/* The same plan twice and a second plan of the same description: the same bits. */
static void test_determinism(void **state)
{
    (void)state;
    if (!tu_has_device(g_ctx))
        skip();
    static const size_t shapes[][2] = {{1000, 127}, {17, 4097}, {4, 65537}, {2000, 3}};
    const gu_bwd_launch launch = gu_bwd_offsets();
    for (size_t s = 0; s < COUNT(shapes); s++) {
        gu_bwd_problem p;
        make(&p, s & 1 ? CLNORM_RMS : CLNORM_LAYER, shapes[s][0], shapes[s][1], 0, 0, 0,
             1000 + s);
        const size_t xn = shapes[s][0] * shapes[s][1], cols = shapes[s][1];
        for (int i = 0; i < TU_NUM_STRATEGIES; i++) {
            clnorm_plan *a = tu_plan_if(g_ctx, &p.desc, tu_strategies[i]);
            if (a == NULL)
                continue;
            clnorm_plan *b = tu_plan(g_ctx, &p.desc, tu_strategies[i]);
            void *dx[3], *dg[3], *db[3];
            gu_bwd_run_cl(g_ctx, &p, a, ALL_GRADS, &launch, &dx[0], &dg[0], &db[0]);
            gu_bwd_run_cl(g_ctx, &p, a, ALL_GRADS, &launch, &dx[1], &dg[1], &db[1]);
            gu_bwd_run_cl(g_ctx, &p, b, ALL_GRADS, &launch, &dx[2], &dg[2], &db[2]);
            size_t bad = 0;
            for (int k = 1; k < 3; k++) {
                bad += gu_cmp_exact(CLNORM_F32, dx[k], dx[0], xn, "dx (determinism)");
                bad += gu_cmp_exact(CLNORM_F32, dg[k], dg[0], cols, "dgamma (determinism)");
                bad += gu_cmp_exact(CLNORM_F32, db[k], db[0], cols, "dbeta (determinism)");
            }
            for (int k = 0; k < 3; k++) {
                free(dx[k]);
                free(dg[k]);
                free(db[k]);
            }
            clnorm_plan_free(a);
            clnorm_plan_free(b);
            if (bad)
                fail_msg("%s %zu x %zu: %zu elements differ between runs",
                         clnorm_strategy_name(tu_strategies[i]), shapes[s][0], shapes[s][1],
                         bad);
        }
        gu_bwd_free(&p);
    }
}

/* rows = 0: dgamma and dbeta are sums over nothing, zeros; the row tensors may be NULL. */
static void check_zeros(const float *p, size_t cols, const char *what)
{
    size_t bad = 0;
    for (size_t i = 0; i < cols; i++)
        if (tu_float_bits(p[i]) != 0) {
            if (bad < 8)
                print_error("%s[%zu] = %g (0x%08x), expected +0\n", what, i, (double)p[i],
                            (unsigned)tu_float_bits(p[i]));
            bad++;
        }
    bad += tu_count_not_bits(p + cols, TU_PAD, TU_SENTINEL_OUT_BITS, what);
    if (bad)
        fail_msg("%s: %zu bad elements with rows = 0", what, bad);
}

static void test_empty_batch(void **state)
{
    (void)state;
    const size_t cols = 37;
    for (int kind = 0; kind < 2; kind++) {
        clnorm_desc d;
        clnorm_desc_init(&d, (clnorm_kind)kind, 0, cols);
        d.flags = CLNORM_WITH_BACKWARD;
        float *gamma = tu_alloc_filled(cols, 0x3f800000u);
        float *dg = tu_alloc_filled(cols + TU_PAD, TU_SENTINEL_OUT_BITS);
        float *db = tu_alloc_filled(cols + TU_PAD, TU_SENTINEL_OUT_BITS);
        /* the reference */
        assert_int_equal(clnorm_ref_backward(&d, ALL_GRADS, NULL, NULL, NULL, NULL, gamma, NULL,
                                             dg, db),
                         CLNORM_OK);
        check_zeros(dg, cols, "reference dgamma");
        check_zeros(db, cols, "reference dbeta");
        for (int i = -1; g_ctx != NULL && i < TU_NUM_STRATEGIES; i++) {
            if (i >= 0 && !tu_has_device(g_ctx))
                break;
            const clnorm_strategy s = i < 0 ? CLNORM_STRATEGY_AUTO : tu_strategies[i];
            clnorm_plan *plan = tu_plan_if(g_ctx, &d, s);
            if (plan == NULL)
                continue;
            for (unsigned mask = CLNORM_GRAD_GAMMA; mask <= ALL_GRADS; mask++) {
                if (!(mask & (CLNORM_GRAD_GAMMA | CLNORM_GRAD_BETA)))
                    continue;
                tu_fill_bits(dg, cols, TU_SENTINEL_OUT_BITS);
                tu_fill_bits(db, cols, TU_SENTINEL_OUT_BITS);
                float *pg = mask & CLNORM_GRAD_GAMMA ? dg : NULL;
                float *pb = mask & CLNORM_GRAD_BETA ? db : NULL;
                const clnorm_status st =
                    clnorm_backward_host(plan, mask, NULL, NULL, NULL, NULL, gamma, NULL, pg, pb);
                if (st != CLNORM_OK)
                    fail_msg("rows = 0, %s, mask %u: clnorm_backward_host = %d (%s): %s",
                             clnorm_strategy_name(s), mask, st, clnorm_status_string(st),
                             clnorm_last_error(g_ctx));
                if (pg)
                    check_zeros(dg, cols, "host dgamma");
                if (pb)
                    check_zeros(db, cols, "host dbeta");
                if (tu_has_device(g_ctx) && i >= 0) {
                    /* layer 1: the outputs at offsets between sentinels */
                    float *cg = tu_alloc_filled(cols, TU_SENTINEL_OUT_BITS);
                    float *cb = tu_alloc_filled(cols, TU_SENTINEL_OUT_BITS);
                    const gu_bwd_launch launch = gu_bwd_offsets();
                    gu_backward_cl(g_ctx, plan, mask, &launch, NULL, NULL, NULL, NULL, gamma,
                                   NULL, cg, cb);
                    for (size_t k = 0; k < cols; k++)
                        if ((pg && tu_float_bits(cg[k]) != 0) || (pb && tu_float_bits(cb[k]) != 0))
                            fail_msg("rows = 0, %s, mask %u, cl_mem: column %zu is %g / %g, "
                                     "expected 0",
                                     clnorm_strategy_name(s), mask, k, (double)cg[k],
                                     (double)cb[k]);
                    free(cg);
                    free(cb);
                }
            }
            clnorm_plan_free(plan);
        }
        free(gamma);
        free(dg);
        free(db);
    }
}

static int group_setup(void **state)
{
    (void)state;
    g_ctx = gu_context("backward");
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
        cmocka_unit_test(test_sweep_row),
        cmocka_unit_test(test_sweep_workgroup),
        cmocka_unit_test(test_sweep_split),
        cmocka_unit_test(test_sweep_subgroup),
        cmocka_unit_test(test_large_shapes),
        cmocka_unit_test(test_masks),
        cmocka_unit_test(test_absent_parameters),
        cmocka_unit_test(test_strided),
        cmocka_unit_test(test_in_place),
        cmocka_unit_test(test_host_api),
        cmocka_unit_test(test_data_families),
        cmocka_unit_test(test_local_size_3),
        cmocka_unit_test(test_local_size_100),
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_empty_batch),
    };
    return cmocka_run_group_tests_name("backward", tests, group_setup, group_teardown);
}
