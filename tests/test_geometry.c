/*
 * test_geometry.c - launch geometries the policy would not choose by itself, LayerNorm and
 * RMSNorm, forward and backward, against the CPU reference:
 *   - non-power-of-two work-group sizes (CLNORM_LOCAL_SIZE = 3, 7, 100): the tree reductions
 *     must be exact for any size (row, workgroup and split forward; workgroup and split
 *     backward);
 *   - more rows than a launch has groups (2^20 + 3 rows): the kernels' row loops pick up the
 *     rest;
 *   - a tall-thin and a wide backward.
 * These compile programs of their own (a work-group function per size) and do not depend on
 * the vector width, so CTest runs this suite once (not in the CLNORM_VECTOR_WIDTH=4 pass).
 * PoCL takes minutes to build the split strategy's kernels for a work-group of more than one
 * item (the policy gives CPU devices one), so the split strategy gets one odd size per
 * direction, and CTest runs this suite, like every cmocka suite, with
 * POCL_WORK_GROUP_METHOD=loops, which builds them about five times faster (the top-level
 * CMakeLists.txt says why).
 */
#define _POSIX_C_SOURCE 200809L /* setenv, unsetenv, strdup */

#include "tu_problem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ALL_GRADS (CLNORM_GRAD_X | CLNORM_GRAD_GAMMA | CLNORM_GRAD_BETA)

static clnorm_ctx *g_ctx;

static void require_device(void)
{
    if (!tu_has_device(g_ctx))
        skip();
}

static clnorm_desc make_desc(int kind, size_t rows, size_t cols, unsigned flags)
{
    clnorm_desc d;
    clnorm_desc_init(&d, kind ? CLNORM_RMS : CLNORM_LAYER, rows, cols);
    d.flags = flags;
    return d;
}

static tu_launch v01_launch(void)
{
    tu_launch l = tu_launch_offsets();
    l.v01 = 1;
    return l;
}

/* A plan made while CLNORM_LOCAL_SIZE says `value` (it is read at plan creation only);
 * whatever the environment said before is put back. */
static clnorm_plan *plan_with_local(const clnorm_desc *d, clnorm_strategy s, const char *value)
{
    const char *env = getenv("CLNORM_LOCAL_SIZE");
    char *saved = env ? strdup(env) : NULL;
    setenv("CLNORM_LOCAL_SIZE", value, 1);
    clnorm_plan *plan = NULL;
    const clnorm_status st = clnorm_plan_create_with(g_ctx, d, s, &plan);
    if (saved)
        setenv("CLNORM_LOCAL_SIZE", saved, 1);
    else
        unsetenv("CLNORM_LOCAL_SIZE");
    free(saved);
    if (st != CLNORM_OK)
        fail_msg("plan %s with CLNORM_LOCAL_SIZE=%s: %d (%s): %s", clnorm_strategy_name(s),
                 value, st, clnorm_status_string(st), clnorm_last_error(g_ctx));
    return plan;
}

/* ------------------------------------------------------------------------------------------ */
/* Non-power-of-two work-group sizes                                                           */

static void test_odd_local_sizes_forward(void **state)
{
    (void)state;
    require_device();
    static const char *sizes[] = {"3", "7", "100"};
    static const size_t shapes[][2] = {{5, 7}, {17, 127}, {3, 1000}, {2, 4097}, {1, 65537},
                                       {1, 1048576}};
    /* The row strategy reads it too (several rows per work-group). */
    static const clnorm_strategy strategies[] = {CLNORM_STRATEGY_WORKGROUP,
                                                 CLNORM_STRATEGY_SPLIT, CLNORM_STRATEGY_ROW};
    const tu_launch l = v01_launch();
    for (size_t z = 0; z < TU_COUNT(sizes); z++)
        for (size_t s = 0; s < TU_COUNT(shapes); s++)
            for (int kind = 0; kind < 2; kind++) {
                const clnorm_desc d =
                    make_desc(kind, shapes[s][0], shapes[s][1], CLNORM_SAVE_STATS);
                tu_problem p;
                tu_problem_make(&p, &d, CLNORM_FORWARD, TU_ALL_OPTIONAL,
                                5000 + 100 * z + 2 * s + (uint64_t)kind, NULL);
                for (size_t i = 0; i < TU_COUNT(strategies); i++) {
                    if (strategies[i] == CLNORM_STRATEGY_SPLIT && z != 1)
                        continue; /* split: 7 only (see the top) */
                    clnorm_plan *plan = plan_with_local(&d, strategies[i], sizes[z]);
                    tu_problem_run_cl(g_ctx, &p, plan, &l, 0, NULL);
                    clnorm_plan_free(plan);
                }
                tu_problem_free(&p);
            }
}

static void odd_local_backward(const char *value)
{
    require_device();
    static const size_t shapes[][2] = {{3, 1}, {5, 31}, {17, 1000}, {2, 4097}, {300, 64}};
    static const clnorm_strategy strategies[] = {CLNORM_STRATEGY_WORKGROUP,
                                                 CLNORM_STRATEGY_SPLIT};
    const tu_launch l = v01_launch();
    for (size_t s = 0; s < TU_COUNT(shapes); s++)
        for (int kind = 0; kind < 2; kind++) {
            const clnorm_desc d =
                make_desc(kind, shapes[s][0], shapes[s][1], CLNORM_WITH_BACKWARD);
            tu_problem p;
            tu_problem_make(&p, &d, CLNORM_BACKWARD, TU_ALL_OPTIONAL,
                            900 + 2 * s + (uint64_t)kind, NULL);
            for (size_t i = 0; i < TU_COUNT(strategies); i++) {
                if (strategies[i] == CLNORM_STRATEGY_SPLIT && strcmp(value, "3") != 0)
                    continue; /* split: 3 only (see the top) */
                clnorm_plan *plan = plan_with_local(&d, strategies[i], value);
                tu_problem_run_cl(g_ctx, &p, plan, &l, tu_grad_slots(ALL_GRADS), NULL);
                clnorm_plan_free(plan);
            }
            tu_problem_free(&p);
        }
}

static void test_odd_local_sizes_backward_3(void **state)
{
    (void)state;
    odd_local_backward("3");
}

static void test_odd_local_sizes_backward_100(void **state)
{
    (void)state;
    odd_local_backward("100");
}

/* ------------------------------------------------------------------------------------------ */
/* Large grids                                                                                 */

/* More rows than a launch has groups (workgroup: 2^20, split: 2^16): the kernels' row loops
 * must pick up the rest. */
static void test_many_rows(void **state)
{
    (void)state;
    require_device();
    const tu_launch l = v01_launch();
    const clnorm_desc d = make_desc(0, ((size_t)1 << 20) + 3, 3, CLNORM_SAVE_STATS);
    tu_problem p;
    tu_problem_make(&p, &d, CLNORM_FORWARD, TU_ALL_OPTIONAL, 99, NULL);
    for (int i = 0; i < TU_NUM_STRATEGIES; i++) {
        clnorm_plan *plan = tu_plan_if(g_ctx, &d, tu_strategies[i]);
        if (plan == NULL)
            continue;
        tu_problem_run_cl(g_ctx, &p, plan, &l, 0, NULL);
        clnorm_plan_free(plan);
    }
    tu_problem_free(&p);
}

/* Tall-thin and wide backward: once each, the row strategy (layer 1) and auto (host layer). */
static void test_large_backward(void **state)
{
    (void)state;
    require_device();
    static const size_t shapes[][2] = {{262144, 64}, {4, 1048576}};
    const tu_launch l = v01_launch();
    for (size_t s = 0; s < TU_COUNT(shapes); s++) {
        const clnorm_desc d = make_desc((int)s, shapes[s][0], shapes[s][1], CLNORM_WITH_BACKWARD);
        tu_problem p;
        tu_problem_make(&p, &d, CLNORM_BACKWARD, TU_ALL_OPTIONAL, 7000 + s, NULL);
        const unsigned grads = tu_grad_slots(ALL_GRADS);
        clnorm_plan *plan = tu_plan(g_ctx, &d, CLNORM_STRATEGY_ROW);
        tu_problem_run_cl(g_ctx, &p, plan, &l, grads, NULL);
        clnorm_plan_free(plan);
        plan = tu_plan(g_ctx, &d, CLNORM_STRATEGY_AUTO);
        tu_problem_run_host(g_ctx, &p, plan, &l, grads, NULL);
        clnorm_plan_free(plan);
        tu_problem_free(&p);
    }
}

static int group_setup(void **state)
{
    (void)state;
    g_ctx = tu_context("geometry");
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
        cmocka_unit_test(test_odd_local_sizes_forward),
        cmocka_unit_test(test_odd_local_sizes_backward_3),
        cmocka_unit_test(test_odd_local_sizes_backward_100),
        cmocka_unit_test(test_many_rows),
        cmocka_unit_test(test_large_backward),
    };
    return cmocka_run_group_tests_name("geometry", tests, group_setup, group_teardown);
}
