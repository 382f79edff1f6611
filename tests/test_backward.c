/*
 * test_backward.c - the 0.1 backward entry points (clnorm_backward, clnorm_backward_host) of
 * LayerNorm and RMSNorm on every device strategy against the CPU reference clnorm_ref_backward
 * (float32): every output mask, gamma / beta absent, strided x and dy, dx in place of dy, the
 * cl_mem layer at non-zero offsets between sentinels and the host layer, two hard data
 * families, bitwise determinism and empty batches. Statistics always come from the reference
 * forward. Tolerance: normwise 1e-5 (max abs error / max(1, max |ref|)) for dx, dgamma and
 * dbeta (tu_problem.h).
 * The shape sweep of every operation is test_ops's; odd work-group sizes and large shapes are
 * test_geometry's; the golden PyTorch cases are in test_backward_golden.c, error paths in
 * test_backward_errors.c.
 */
#include "tu_problem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COUNT(a) TU_COUNT(a)
#define ALL_GRADS (CLNORM_GRAD_X | CLNORM_GRAD_GAMMA | CLNORM_GRAD_BETA)

static clnorm_ctx *g_ctx;

/* A float32 backward problem: x = x_offset + x_scale * N(0,1), dy = N(0,1), gamma N(1, 0.5^2),
 * the statistics of the reference forward; flags: CLNORM_NO_GAMMA / CLNORM_NO_BETA. */
static void make_data(tu_problem *p, clnorm_kind kind, size_t rows, size_t cols, size_t xs,
                      size_t ys, unsigned flags, uint64_t seed, double x_offset, double x_scale)
{
    clnorm_desc d;
    clnorm_desc_init(&d, kind, rows, cols);
    d.x_stride = xs;
    d.y_stride = ys;
    d.flags = flags | CLNORM_WITH_BACKWARD;
    tu_data data = tu_data_default();
    data.x_offset = x_offset;
    data.x_scale = x_scale;
    tu_problem_make(p, &d, CLNORM_BACKWARD, TU_ALL_OPTIONAL, seed, &data);
}

/* N(0.3, 1) data. */
static void make(tu_problem *p, clnorm_kind kind, size_t rows, size_t cols, size_t xs,
                 size_t ys, unsigned flags, uint64_t seed)
{
    make_data(p, kind, rows, cols, xs, ys, flags, seed, 0.3, 1.0);
}

/* Every gradient the problem's plan can have. */
static unsigned full_mask(const tu_problem *p)
{
    return CLNORM_GRAD_X | (p->desc.flags & CLNORM_NO_GAMMA ? 0u : CLNORM_GRAD_GAMMA) |
           (p->desc.flags & CLNORM_NO_BETA ? 0u : CLNORM_GRAD_BETA);
}

/* The 0.1 call at distinct non-zero offsets, dx in place of dy or not. */
static tu_launch v01_launch(int in_place)
{
    tu_launch l = tu_launch_offsets();
    l.v01 = 1;
    if (in_place)
        tu_launch_in_place(&l, CLNORM_ARG_DX, CLNORM_ARG_DY);
    return l;
}

/* One layer-1 run with `mask`, checked; the outputs returned when out is not NULL. */
static void run_cl(const tu_problem *p, clnorm_plan *plan, unsigned mask, const tu_launch *l,
                   tu_args *out)
{
    tu_problem_run_cl(g_ctx, p, plan, l, tu_grad_slots(mask), out);
}

static void run_host(const tu_problem *p, clnorm_plan *plan, unsigned mask, int in_place)
{
    const tu_launch l = v01_launch(in_place);
    tu_problem_run_host(g_ctx, p, plan, &l, tu_grad_slots(mask), NULL);
}

/* One plan of the problem's description on `strategy`, one layer-1 run, checked. */
static void run_strategy(const tu_problem *p, clnorm_strategy strategy, unsigned mask,
                         const tu_launch *l)
{
    clnorm_plan *plan = tu_plan_if(g_ctx, &p->desc, strategy);
    if (plan == NULL)
        return; /* subgroup: the row does not fit its registers on this device */
    if (strategy != CLNORM_STRATEGY_AUTO)
        assert_int_equal(clnorm_plan_strategy(plan), strategy);
    run_cl(p, plan, mask, l, NULL);
    clnorm_plan_free(plan);
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
    const tu_launch launch = v01_launch(0);
    for (size_t s = 0; s < COUNT(mask_shapes); s++) {
        for (int kind = 0; kind < 2; kind++) {
            tu_problem p;
            make(&p, (clnorm_kind)kind, mask_shapes[s][0], mask_shapes[s][1], 0, 0, 0,
                 200 + 2 * s + (uint64_t)kind);
            for (int i = 0; i < TU_NUM_STRATEGIES; i++) {
                clnorm_plan *plan = tu_plan_if(g_ctx, &p.desc, tu_strategies[i]);
                if (plan == NULL)
                    continue;
                for (unsigned mask = 1; mask <= ALL_GRADS; mask++)
                    run_cl(&p, plan, mask, &launch, NULL);
                clnorm_plan_free(plan);
            }
            tu_problem_free(&p);
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
    const tu_launch launch = v01_launch(0);
    for (size_t s = 0; s < COUNT(mask_shapes); s++) {
        for (int kind = 0; kind < 2; kind++) {
            for (size_t f = 0; f < COUNT(flag_sets); f++) {
                tu_problem p;
                make(&p, (clnorm_kind)kind, mask_shapes[s][0], mask_shapes[s][1], 0, 0,
                     flag_sets[f], 300 + 8 * s + 4 * (uint64_t)kind + f);
                const unsigned full = full_mask(&p);
                for (int i = 0; i < TU_NUM_STRATEGIES; i++) {
                    clnorm_plan *plan = tu_plan_if(g_ctx, &p.desc, tu_strategies[i]);
                    if (plan == NULL)
                        continue;
                    for (unsigned mask = 1; mask <= ALL_GRADS; mask++)
                        if ((mask & full) == mask)
                            run_cl(&p, plan, mask, &launch, NULL);
                    clnorm_plan_free(plan);
                }
                tu_problem_free(&p);
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
    const tu_launch launch = v01_launch(0);
    for (size_t s = 0; s < COUNT(shapes); s++) {
        for (int kind = 0; kind < 2; kind++) {
            tu_problem p;
            make(&p, (clnorm_kind)kind, shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3],
                 0, 400 + 2 * s + (uint64_t)kind);
            for (int i = 0; i < TU_NUM_STRATEGIES; i++) {
                clnorm_plan *plan = tu_plan_if(g_ctx, &p.desc, tu_strategies[i]);
                if (plan == NULL)
                    continue;
                run_cl(&p, plan, ALL_GRADS, &launch, NULL);
                run_cl(&p, plan, CLNORM_GRAD_X, &launch, NULL);
                run_host(&p, plan, ALL_GRADS, 0);
                clnorm_plan_free(plan);
            }
            tu_problem_free(&p);
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
    const tu_launch launch = v01_launch(1);
    for (size_t s = 0; s < COUNT(shapes); s++) {
        for (int kind = 0; kind < 2; kind++) {
            tu_problem p;
            make(&p, (clnorm_kind)kind, shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][2],
                 0, 500 + 2 * s + (uint64_t)kind);
            for (int i = 0; i < TU_NUM_STRATEGIES; i++) {
                clnorm_plan *plan = tu_plan_if(g_ctx, &p.desc, tu_strategies[i]);
                if (plan == NULL)
                    continue;
                run_cl(&p, plan, ALL_GRADS, &launch, NULL);
                run_cl(&p, plan, CLNORM_GRAD_X, &launch, NULL);
                run_host(&p, plan, ALL_GRADS, 1);
                clnorm_plan_free(plan);
            }
            tu_problem_free(&p);
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
            tu_problem p;
            make(&p, (clnorm_kind)kind, shapes[s][0], shapes[s][1], 0, 0, 0,
                 600 + 2 * s + (uint64_t)kind);
            clnorm_plan *plan = tu_plan(g_ctx, &p.desc, CLNORM_STRATEGY_AUTO);
            run_host(&p, plan, ALL_GRADS, 0);
            run_host(&p, plan, CLNORM_GRAD_GAMMA | CLNORM_GRAD_BETA, 0);
            clnorm_plan_free(plan);
            for (int i = 0; tu_has_device(g_ctx) && i < TU_NUM_STRATEGIES; i++) {
                plan = tu_plan_if(g_ctx, &p.desc, tu_strategies[i]);
                if (plan == NULL)
                    continue;
                run_host(&p, plan, ALL_GRADS, 0);
                clnorm_plan_free(plan);
            }
            tu_problem_free(&p);
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
    const tu_launch launch = v01_launch(0);
    for (size_t f = 0; f < COUNT(families); f++) {
        for (size_t s = 0; s < COUNT(shapes); s++) {
            for (int kind = 0; kind < 2; kind++) {
                tu_problem p;
                make_data(&p, (clnorm_kind)kind, shapes[s][0], shapes[s][1], 0, 0,
                            0, 800 + 16 * f + 2 * s + (uint64_t)kind, families[f][0],
                            families[f][1]);
                if (kind == CLNORM_LAYER) /* the kernels correct the rows' saved mean
                                            * (kernels/norm_backward.cl, bwd_refines) */
                    tu_problem_reference_from_x(&p);
                for (int i = 0; i < TU_NUM_STRATEGIES; i++)
                    run_strategy(&p, tu_strategies[i], ALL_GRADS, &launch);
                tu_problem_free(&p);
            }
        }
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Determinism, empty batches.                                               */

/* The same plan twice and a second plan of the same description: the same bits. */
static void test_determinism(void **state)
{
    (void)state;
    if (!tu_has_device(g_ctx))
        skip();
    static const size_t shapes[][2] = {{1000, 127}, {17, 4097}, {4, 65537}, {2000, 3}};
    const tu_launch launch = v01_launch(0);
    for (size_t s = 0; s < COUNT(shapes); s++) {
        tu_problem p;
        make(&p, s & 1 ? CLNORM_RMS : CLNORM_LAYER, shapes[s][0], shapes[s][1], 0, 0, 0,
             1000 + s);
        const size_t xn = shapes[s][0] * shapes[s][1], cols = shapes[s][1];
        for (int i = 0; i < TU_NUM_STRATEGIES; i++) {
            clnorm_plan *a = tu_plan_if(g_ctx, &p.desc, tu_strategies[i]);
            if (a == NULL)
                continue;
            clnorm_plan *b = tu_plan(g_ctx, &p.desc, tu_strategies[i]);
            tu_args r[3];
            run_cl(&p, a, ALL_GRADS, &launch, &r[0]);
            run_cl(&p, a, ALL_GRADS, &launch, &r[1]);
            run_cl(&p, b, ALL_GRADS, &launch, &r[2]);
            size_t bad = 0;
            for (int k = 1; k < 3; k++) {
                bad += tu_cmp_exact(CLNORM_F32, r[k].p[CLNORM_ARG_DX], r[0].p[CLNORM_ARG_DX], xn,
                                    "dx (determinism)");
                bad += tu_cmp_exact(CLNORM_F32, r[k].p[CLNORM_ARG_DGAMMA],
                                    r[0].p[CLNORM_ARG_DGAMMA], cols, "dgamma (determinism)");
                bad += tu_cmp_exact(CLNORM_F32, r[k].p[CLNORM_ARG_DBETA],
                                    r[0].p[CLNORM_ARG_DBETA], cols, "dbeta (determinism)");
            }
            for (int k = 0; k < 3; k++)
                tu_args_free(&r[k]);
            clnorm_plan_free(a);
            clnorm_plan_free(b);
            if (bad)
                fail_msg("%s %zu x %zu: %zu elements differ between runs",
                         clnorm_strategy_name(tu_strategies[i]), shapes[s][0], shapes[s][1],
                         bad);
        }
        tu_problem_free(&p);
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
                    const tu_launch launch = v01_launch(0);
                    tu_backward_cl(g_ctx, plan, mask, &launch, NULL, NULL, NULL, NULL, gamma,
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
    g_ctx = tu_context("backward");
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
        cmocka_unit_test(test_masks),
        cmocka_unit_test(test_absent_parameters),
        cmocka_unit_test(test_strided),
        cmocka_unit_test(test_in_place),
        cmocka_unit_test(test_host_api),
        cmocka_unit_test(test_data_families),
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_empty_batch),
    };
    return cmocka_run_group_tests_name("backward", tests, group_setup, group_teardown);
}
