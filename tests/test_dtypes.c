/*
 * test_dtypes.c - the storage formats F16, BF16 and F64, forward and backward, on every device
 * strategy against the CPU reference (which computes in double and rounds once):
 *   F16 / BF16: x, y, dy, dx within 1 ulp of the reference's value (ulp of the storage format
 *               at that value) + 1e-5; gamma, beta, mean, rstd, dgamma, dbeta are float,
 *               normwise 1e-5 (max abs error / max(1, max |ref|));
 *   F64:        everything normwise 1e-12.
 * Also strided and in-place layouts at byte offsets of 2- and 8-byte elements, the host layer,
 * and whether F64 plans are refused exactly when the device lacks cl_khr_fp64.
 * Special values (constant rows, NaN / Inf rows, subnormal halves) are in
 * test_dtypes_special.c.
 */
#include "tu_problem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define ALL_GRADS (CLNORM_GRAD_X | CLNORM_GRAD_GAMMA | CLNORM_GRAD_BETA)

static clnorm_ctx *g_ctx;

static const clnorm_dtype dtypes[] = {CLNORM_F16, CLNORM_BF16, CLNORM_F64};
static const size_t shapes[][2] = {{1, 1},    {2, 3},    {17, 7},   {3, 64},
                                   {17, 127}, {5, 1000}, {2, 4097}, {1000, 64},
                                   {4, 20000}};

/* Plan or NULL: the subgroup strategy may refuse long rows, and an F64 plan is refused on a
 * device without fp64 (test_fp64_support checks that claim). */
static clnorm_plan *plan_if(const clnorm_desc *d, clnorm_strategy s)
{
    return tu_plan_if(g_ctx, d, s);
}

/* One run through layer 1 (the 0.1 call) or the host layer, with the outputs of `mask`
 * (backward) or all of them (forward), checked against the reference. */
static void run_cl(const tu_problem *p, clnorm_plan *plan, unsigned mask, int in_place)
{
    const tu_launch l = tu_launch_v01(p->dir, in_place);
    tu_problem_run_cl(g_ctx, p, plan, &l, tu_grad_slots(mask), NULL);
}

static void run_host(const tu_problem *p, clnorm_plan *plan, unsigned mask, int in_place)
{
    const tu_launch l = tu_launch_v01(p->dir, in_place);
    tu_problem_run_host(g_ctx, p, plan, &l, tu_grad_slots(mask), NULL);
}

static unsigned full_mask(const tu_problem *p)
{
    return CLNORM_GRAD_X | (p->desc.flags & CLNORM_NO_GAMMA ? 0u : CLNORM_GRAD_GAMMA) |
           (p->desc.flags & CLNORM_NO_BETA ? 0u : CLNORM_GRAD_BETA);
}

/* ------------------------------------------------------------------------------------------ */
/* Forward                                                                                     */

static void forward_strategy(clnorm_strategy strategy)
{
    if (!tu_has_device(g_ctx))
        skip();
    for (size_t t = 0; t < COUNT(dtypes); t++) {
        for (size_t s = 0; s < COUNT(shapes); s++) {
            for (int kind = 0; kind < 2; kind++) {
                tu_problem p;
                tu_problem_make_rows(&p, CLNORM_FORWARD, dtypes[t], (clnorm_kind)kind, shapes[s][0],
                                     shapes[s][1], 0, 0, CLNORM_SAVE_STATS,
                                     100 * t + 2 * s + (uint64_t)kind, NULL);
                clnorm_plan *plan = plan_if(&p.desc, strategy);
                if (plan != NULL)
                    run_cl(&p, plan, 0, 0);
                clnorm_plan_free(plan);
                tu_problem_free(&p);
            }
        }
    }
}

static void test_forward_row(void **state)
{
    (void)state;
    forward_strategy(CLNORM_STRATEGY_ROW);
}

static void test_forward_workgroup(void **state)
{
    (void)state;
    forward_strategy(CLNORM_STRATEGY_WORKGROUP);
}

static void test_forward_split(void **state)
{
    (void)state;
    forward_strategy(CLNORM_STRATEGY_SPLIT);
}

static void test_forward_subgroup(void **state)
{
    (void)state;
    forward_strategy(CLNORM_STRATEGY_SUBGROUP);
}

/* Every flag combination, strided, in place (layer 1 and host layer). */
static void test_forward_layouts(void **state)
{
    (void)state;
    if (g_ctx == NULL)
        skip();
    static const size_t lay[][4] = {/* rows, cols, x_stride, y_stride */
                                    {3, 5, 7, 6},   {17, 31, 33, 40}, {4, 1000, 1003, 1001},
                                    {5, 9, 11, 11}, {2, 4097, 0, 0}};
    for (size_t t = 0; t < COUNT(dtypes); t++) {
        for (size_t s = 0; s < COUNT(lay); s++) {
            for (unsigned flags = 0; flags < 8; flags++) {
                const clnorm_kind kind = (flags + s) & 1 ? CLNORM_RMS : CLNORM_LAYER;
                tu_problem p;
                tu_problem_make_rows(&p, CLNORM_FORWARD, dtypes[t], kind, lay[s][0], lay[s][1],
                                     lay[s][2], lay[s][3], flags, 500 + 100 * t + 8 * s + flags,
                                     NULL);
                const int same = tu_x_stride(&p.desc) == tu_y_stride(&p.desc);
                for (int i = -1; i < TU_NUM_STRATEGIES; i++) {
                    if (i >= 0 && !tu_has_device(g_ctx))
                        break;
                    const clnorm_strategy st = i < 0 ? CLNORM_STRATEGY_AUTO : tu_strategies[i];
                    clnorm_plan *plan = plan_if(&p.desc, st);
                    if (plan == NULL)
                        continue;
                    run_host(&p, plan, 0, 0);
                    if (same)
                        run_host(&p, plan, 0, 1);
                    if (i >= 0) {
                        run_cl(&p, plan, 0, 0);
                        if (same)
                            run_cl(&p, plan, 0, 1);
                    }
                    clnorm_plan_free(plan);
                }
                tu_problem_free(&p);
            }
        }
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Backward                                                                                    */

static void backward_strategy(clnorm_strategy strategy)
{
    if (!tu_has_device(g_ctx))
        skip();
    for (size_t t = 0; t < COUNT(dtypes); t++) {
        for (size_t s = 0; s < COUNT(shapes); s++) {
            for (int kind = 0; kind < 2; kind++) {
                tu_problem p;
                tu_problem_make_rows(&p, CLNORM_BACKWARD, dtypes[t], (clnorm_kind)kind,
                                     shapes[s][0], shapes[s][1], 0, 0, 0,
                                     200 + 100 * t + 2 * s + (uint64_t)kind, NULL);
                clnorm_plan *plan = plan_if(&p.desc, strategy);
                if (plan != NULL) {
                    run_cl(&p, plan, ALL_GRADS, 0);
                    run_cl(&p, plan, CLNORM_GRAD_X, 0);
                    run_cl(&p, plan, CLNORM_GRAD_GAMMA, 0);
                }
                clnorm_plan_free(plan);
                tu_problem_free(&p);
            }
        }
    }
}

static void test_backward_row(void **state)
{
    (void)state;
    backward_strategy(CLNORM_STRATEGY_ROW);
}

static void test_backward_workgroup(void **state)
{
    (void)state;
    backward_strategy(CLNORM_STRATEGY_WORKGROUP);
}

static void test_backward_split(void **state)
{
    (void)state;
    backward_strategy(CLNORM_STRATEGY_SPLIT);
}

static void test_backward_subgroup(void **state)
{
    (void)state;
    backward_strategy(CLNORM_STRATEGY_SUBGROUP);
}

/* No gamma / beta, strided, in place (dx is dy), layer 1 and host layer. */
static void test_backward_layouts(void **state)
{
    (void)state;
    if (g_ctx == NULL)
        skip();
    static const size_t lay[][4] = {/* rows, cols, x_stride, y_stride */
                                    {3, 5, 7, 6},   {17, 31, 33, 40}, {4, 1000, 1003, 1001},
                                    {5, 9, 11, 11}, {2, 4097, 0, 0}};
    static const unsigned flag_sets[] = {0, CLNORM_NO_GAMMA, CLNORM_NO_BETA,
                                         CLNORM_NO_GAMMA | CLNORM_NO_BETA};
    for (size_t t = 0; t < COUNT(dtypes); t++) {
        for (size_t s = 0; s < COUNT(lay); s++) {
            for (size_t f = 0; f < COUNT(flag_sets); f++) {
                const clnorm_kind kind = (f + s) & 1 ? CLNORM_RMS : CLNORM_LAYER;
                tu_problem p;
                tu_problem_make_rows(&p, CLNORM_BACKWARD, dtypes[t], kind, lay[s][0], lay[s][1],
                                     lay[s][2], lay[s][3], flag_sets[f], 700 + 100 * t + 4 * s + f,
                                     NULL);
                const unsigned mask = full_mask(&p);
                const int same = tu_x_stride(&p.desc) == tu_y_stride(&p.desc);
                for (int i = -1; i < TU_NUM_STRATEGIES; i++) {
                    if (i >= 0 && !tu_has_device(g_ctx))
                        break;
                    const clnorm_strategy st = i < 0 ? CLNORM_STRATEGY_AUTO : tu_strategies[i];
                    clnorm_plan *plan = plan_if(&p.desc, st);
                    if (plan == NULL)
                        continue;
                    run_host(&p, plan, mask, 0);
                    if (same)
                        run_host(&p, plan, mask, 1);
                    if (i >= 0) {
                        run_cl(&p, plan, mask, 0);
                        if (same)
                            run_cl(&p, plan, mask, 1);
                    }
                    clnorm_plan_free(plan);
                }
                tu_problem_free(&p);
            }
        }
    }
}

/* ------------------------------------------------------------------------------------------ */
/* fp64 support                                                                                */

/* F64 plans: OK exactly when the context's device reports cl_khr_fp64, else
 * CLNORM_UNSUPPORTED at plan creation (for every strategy). */
static void test_fp64_support(void **state)
{
    (void)state;
    if (!tu_has_device(g_ctx))
        skip();
    size_t count = 0;
    assert_int_equal(clnorm_list_devices(NULL, 0, &count), CLNORM_OK);
    assert_true(count > 0);
    clnorm_device_info *infos = calloc(count, sizeof *infos);
    assert_non_null(infos);
    size_t got = 0;
    assert_int_equal(clnorm_list_devices(infos, count, &got), CLNORM_OK);
    /* the context's device: its "platform / device" name */
    int has_fp64 = -1;
    for (size_t i = 0; i < got && i < count; i++) {
        char name[300];
        snprintf(name, sizeof name, "%s / %s", infos[i].platform_name, infos[i].device_name);
        if (strcmp(name, clnorm_device_name(g_ctx)) == 0) {
            if (has_fp64 >= 0 && has_fp64 != (infos[i].has_fp64 != 0))
                has_fp64 = -2; /* two devices of that name disagree: cannot tell */
            else if (has_fp64 != -2)
                has_fp64 = infos[i].has_fp64 != 0;
        }
    }
    free(infos);
    if (has_fp64 == -1)
        fail_msg("the context's device \"%s\" is not in clnorm_list_devices",
                 clnorm_device_name(g_ctx));
    print_message("fp64: %s (%s cl_khr_fp64)\n", clnorm_device_name(g_ctx),
                  has_fp64 == 1 ? "has" : has_fp64 == 0 ? "lacks" : "ambiguous");
    clnorm_desc d;
    clnorm_desc_init(&d, CLNORM_LAYER, 4, 100);
    d.dtype = CLNORM_F64;
    d.flags = CLNORM_WITH_BACKWARD;
    const clnorm_strategy all[] = {CLNORM_STRATEGY_AUTO, CLNORM_STRATEGY_ROW,
                                   CLNORM_STRATEGY_WORKGROUP, CLNORM_STRATEGY_SPLIT,
                                   CLNORM_STRATEGY_SUBGROUP};
    for (size_t i = 0; i < COUNT(all); i++) {
        clnorm_plan *plan = NULL;
        const clnorm_status st = clnorm_plan_create_with(g_ctx, &d, all[i], &plan);
        const int ok = st == CLNORM_OK && plan != NULL;
        const int refused = st == CLNORM_UNSUPPORTED && plan == NULL;
        clnorm_plan_free(plan);
        if (!ok && !refused)
            fail_msg("f64 plan (%s) = %d (%s): %s", clnorm_strategy_name(all[i]), st,
                     clnorm_status_string(st), clnorm_last_error(g_ctx));
        if (has_fp64 == 1 && !ok)
            fail_msg("f64 plan (%s) refused on a device with cl_khr_fp64: %s",
                     clnorm_strategy_name(all[i]), clnorm_last_error(g_ctx));
        if (has_fp64 == 0 && !refused)
            fail_msg("f64 plan (%s) = %d on a device without cl_khr_fp64, expected "
                     "CLNORM_UNSUPPORTED",
                     clnorm_strategy_name(all[i]), st);
    }
}

static int group_setup(void **state)
{
    (void)state;
    g_ctx = tu_context("dtypes");
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
        cmocka_unit_test(test_forward_row),
        cmocka_unit_test(test_forward_workgroup),
        cmocka_unit_test(test_forward_split),
        cmocka_unit_test(test_forward_subgroup),
        cmocka_unit_test(test_forward_layouts),
        cmocka_unit_test(test_backward_row),
        cmocka_unit_test(test_backward_workgroup),
        cmocka_unit_test(test_backward_split),
        cmocka_unit_test(test_backward_subgroup),
        cmocka_unit_test(test_backward_layouts),
        cmocka_unit_test(test_fp64_support),
    };
    return cmocka_run_group_tests_name("dtypes", tests, group_setup, group_teardown);
}
