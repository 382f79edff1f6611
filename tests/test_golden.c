/*
 * test_golden.c - the forward of the PyTorch float64 golden cases of tests/golden (see its
 * README.md; golden_cases.c loads them) through the CPU reference and through the device
 * (host-pointer API: the 0.1 call for plain LayerNorm / RMSNorm, the generic one for the
 * residual kinds, GroupNorm, the modulated cases and those with precomputed statistics,
 * which are inputs there like scale and shift; every strategy and clnorm's own choice;
 * GroupNorm in NHWC has only clnorm's choice, split and workgroup, the others must refuse
 * it as unsupported; GroupNorm in float64 on a CPU device runs on split only,
 * golden_device_run_left_out). y and the sum output must be within 1e-5 abs + 1e-5 rel of
 * the golden ones, mean likewise (GroupNorm's mean and rstd are per sample and group), rstd
 * within 1e-5 relative; in float64 (F64, from the same inputs widened), everything within
 * 1e-10. Strided cases are laid out with their row_pad (and scale / shift with a sample
 * stride above cols); sentinels after every output and in every gap (tu_run_host).
 * The gradients are test_backward_golden's.
 */
#include "golden_cases.h"
#include "tu_runner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS CLNORM_ARG_SLOT_COUNT
#define GOLD_TOL32 1e-5
#define GOLD_TOL64 1e-10

static clnorm_ctx *g_ctx; /* one context for the whole binary, made in group setup */

/* One output against its golden values, per element (abs + rel); rstd relative only. */
static size_t check_output(const golden_data *g, clnorm_arg_slot s, const clnorm_slot_info *i,
                           const void *got, clnorm_dtype t, const char *who)
{
    const double tol = t == CLNORM_F64 ? GOLD_TOL64 : GOLD_TOL32;
    char what[300];
    snprintf(what, sizeof what, "%s %s %s %s", who, tu_dtype_name(t), g->gc->name,
             clnorm_arg_name(s));
    return tu_cmp_elem(i->dtype, got, i->stride, CLNORM_F64, g->a[s], i->cols, i->rows, i->cols,
                       s == CLNORM_ARG_RSTD ? 0.0 : tol, tol, what);
}

/* Runs one case through `strategy` (REFERENCE: clnorm_ref_execute) in storage type t (F32,
 * or F64 from the same float32 inputs widened exactly) and checks every output. */
static void golden_run_as(const golden_case *gc, clnorm_strategy strategy, clnorm_dtype t)
{
    golden_data g;
    golden_load(gc, &g);
    const clnorm_desc d = golden_desc(&g, t, CLNORM_SAVE_STATS);
    clnorm_slot_info info[SLOTS];
    tu_slot_infos(&d, CLNORM_FORWARD, info);
    tu_args a = {{NULL}};
    for (unsigned s = 0; s < SLOTS; s++) {
        if (info[s].use == CLNORM_SLOT_UNUSED)
            continue;
        a.p[s] = info[s].is_output ? tu_alloc_sentinel(info[s].dtype, info[s].extent, 1)
                                   : golden_tensor(&g, (clnorm_arg_slot)s, &info[s]);
    }
    tu_launch l = tu_launch_offsets();
    /* the 0.1 call where it takes the arguments: it has no scale and shift, and writes the
     * statistics rather than reading them */
    l.v01 = (gc->kind == CLNORM_LAYER || gc->kind == CLNORM_RMS) &&
            !(d.flags & (CLNORM_SCALE | CLNORM_SHIFT | CLNORM_USE_GLOBAL_STATS));
    clnorm_plan *plan = NULL;
    int ran = 1;
    if (strategy == CLNORM_STRATEGY_REFERENCE) {
        tu_run_host(NULL, NULL, &d, CLNORM_FORWARD, &l, &a);
    } else if (!golden_strategy_applies(g_ctx, &d, strategy)) {
        ran = 0; /* NHWC GroupNorm on a strategy not its own: refused, as it must be */
    } else if (golden_device_run_left_out(g_ctx, &d, strategy)) {
        ran = 0; /* GroupNorm f64 on a CPU device: split only (program builds) */
    } else {
        plan = tu_plan_if(g_ctx, &d, strategy); /* NULL: subgroup too short, or no fp64 */
        if (plan != NULL)
            tu_run_host(g_ctx, plan, &d, CLNORM_FORWARD, &l, &a);
        ran = plan != NULL;
    }
    size_t bad = 0;
    for (unsigned s = 0; ran && s < SLOTS; s++)
        if (a.p[s] != NULL && info[s].is_output)
            bad += check_output(&g, (clnorm_arg_slot)s, &info[s], a.p[s], t,
                                clnorm_strategy_name(strategy));
    clnorm_plan_free(plan);
    for (unsigned s = 0; s < SLOTS; s++)
        free(a.p[s]);
    golden_free(&g);
    if (bad)
        fail_msg("%s: golden case %s (%s): %zu mismatches", clnorm_strategy_name(strategy),
                 gc->name, tu_dtype_name(t), bad);
}

static void run_all(clnorm_strategy strategy, clnorm_dtype t)
{
    for (size_t i = 0; i < golden_case_count; i++)
        golden_run_as(&golden_cases[i], strategy, t);
}

static void test_manifest(void **state)
{
    (void)state;
    golden_check_manifest();
}

static void test_reference(void **state)
{
    (void)state;
    run_all(CLNORM_STRATEGY_REFERENCE, CLNORM_F32);
}

static void run_device(clnorm_strategy strategy)
{
    if (!tu_has_device(g_ctx))
        skip();
    run_all(strategy, CLNORM_F32);
}

static void test_device_row(void **state)
{
    (void)state;
    run_device(CLNORM_STRATEGY_ROW);
}

static void test_device_workgroup(void **state)
{
    (void)state;
    run_device(CLNORM_STRATEGY_WORKGROUP);
}

static void test_device_split(void **state)
{
    (void)state;
    run_device(CLNORM_STRATEGY_SPLIT);
}

static void test_device_subgroup(void **state)
{
    (void)state;
    run_device(CLNORM_STRATEGY_SUBGROUP);
}

/* F64 from the widened float32 inputs computes what PyTorch's float64 did: within 1e-10,
 * through the reference and every strategy (devices with cl_khr_fp64). */
static void test_f64(void **state)
{
    (void)state;
    run_all(CLNORM_STRATEGY_REFERENCE, CLNORM_F64);
    if (!tu_has_device(g_ctx) || !tu_device_has_fp64(g_ctx))
        skip();
    for (int s = 0; s < TU_NUM_STRATEGIES; s++)
        run_all(tu_strategies[s], CLNORM_F64);
}

/* The plan clnorm chooses by itself, also on a context without a device. */
static void test_host_auto(void **state)
{
    (void)state;
    if (g_ctx == NULL)
        skip();
    run_all(CLNORM_STRATEGY_AUTO, CLNORM_F32);
}

/* The device comes from CLNORM_DEVICE; no device is not a failure (device tests skip). */
static int group_setup(void **state)
{
    (void)state;
    g_ctx = tu_context("golden");
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
        cmocka_unit_test(test_manifest),
        cmocka_unit_test(test_reference),
        cmocka_unit_test(test_host_auto),
        cmocka_unit_test(test_device_row),
        cmocka_unit_test(test_device_workgroup),
        cmocka_unit_test(test_device_split),
        cmocka_unit_test(test_device_subgroup),
        cmocka_unit_test(test_f64),
    };
    return cmocka_run_group_tests_name("golden", tests, group_setup, group_teardown);
}
