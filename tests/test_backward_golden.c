/*
 * test_backward_golden.c - the PyTorch float64 golden gradients of tests/golden (dx, dgamma,
 * dbeta, and dscale / dshift of the modulated cases, from the golden's own x, residual, dy,
 * dsum, gamma, beta, scale and its float64 mean / rstd) through the CPU reference, the host
 * layer on clnorm's choice and every device strategy through layer 1 (the 0.1 call for
 * LayerNorm / RMSNorm without modulation or precomputed statistics, the generic one for the
 * others; GroupNorm in NHWC has only clnorm's choice, split and workgroup, the others must
 * refuse it as unsupported; in float64 on a CPU device it runs on split only,
 * golden_device_run_left_out). Each twice: from the saved statistics, and with them
 * recomputed from x (mean / rstd not given); the precomputed-statistics cases only from
 * theirs, which are inputs of the computation (float32 in the files, so exact in both types).
 *
 * float32 (F32 dtype): the statistics are the golden ones rounded to float32, as the API takes
 * them. That rounding alone moves the exact answer: at a mean of 1e4 (ln_2x3000_mean1e4) the
 * float32 mean is off by up to 5e-4, which shifts every xhat of its row and dgamma by ~6e-5 of
 * its norm. So each result must be
 *   - within 1e-5 (normwise: max abs error / max(1, max |ref|)) of the float64 oracle
 *     (golden_oracle) fed the same float32 statistics, and
 *   - within 1e-5 + (what the rounding of the statistics moves the exact answer) of the golden.
 * float64 (F64 dtype, when the device has fp64): the golden statistics as they are; every
 * result within 1e-10 of the golden.
 * Recomputed statistics: every result within 1e-5 (F32) or 1e-10 (F64) of the golden. So
 * are the host calls' from the saved statistics of LayerNorm, the fused add and GroupNorm
 * (clnorm's choice, test_host_auto), and the row ops' layer-1 calls, where the library
 * corrects their mean, a row's or group's |mean| * rstd being above 16 (src/execute.c,
 * kernels/norm_backward.cl): there ln_2x3000_mean1e4's dgamma is 6e-5 normwise from the
 * oracle of the rounded statistics and within the golden's 1e-5.
 * The oracle (golden_oracle.h) must itself reproduce the golden within 1e-10 from the exact
 * statistics.
 */
#include "golden_cases.h"
#include "golden_oracle.h"
#include "tu_runner.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS CLNORM_ARG_SLOT_COUNT
#define TOL32 1e-5
#define TOL64 1e-10

static clnorm_ctx *g_ctx;

/* One case with its oracle answers. */
typedef struct {
    golden_data g;
    double *oracle[SLOTS]; /* the oracle's gradients from the float32 statistics */
    double shift[SLOTS];   /* how far that rounding alone moves them from the golden */
} golden;

static double normwise(const double *got, const double *want, size_t n)
{
    double worst = 0.0, max_ref = 0.0;
    for (size_t i = 0; i < n; i++) {
        worst = fmax(worst, fabs(got[i] - want[i]));
        max_ref = fmax(max_ref, fabs(want[i]));
    }
    return worst / fmax(1.0, max_ref);
}

static void golden_open(const golden_case *gc, golden *o)
{
    memset(o, 0, sizeof *o);
    golden_data *g = &o->g;
    golden_load(gc, g);
    /* The oracle from the exact statistics must be the golden (it is the yardstick below). */
    double *exact[SLOTS] = {NULL};
    golden_oracle(g, g->a[CLNORM_ARG_MEAN], g->a[CLNORM_ARG_RSTD], exact);
    double e = 0.0;
    for (size_t k = 0; k < golden_grad_slots; k++) {
        const clnorm_arg_slot s = golden_grads[k];
        if (g->a[s] != NULL)
            e = fmax(e, normwise(exact[s], g->a[s], golden_grad_count(g, s)));
        free(exact[s]);
    }
    if (!(e <= TOL64))
        fail_msg("%s: the float64 oracle is %.3g from the golden gradients", gc->name, e);

    /* The oracle from the float32 statistics, and how far that alone moves the answer
     * (nothing for precomputed statistics, float32 in the files). */
    const size_t nstats = g->rows * g->groups;
    double *m = NULL, *r = malloc(nstats * sizeof *r + 1);
    assert_non_null(r);
    if (g->a[CLNORM_ARG_MEAN] != NULL) {
        m = malloc(nstats * sizeof *m + 1);
        assert_non_null(m);
    }
    for (size_t i = 0; i < nstats; i++) {
        if (m)
            m[i] = (float)g->a[CLNORM_ARG_MEAN][i];
        r[i] = (float)g->a[CLNORM_ARG_RSTD][i];
    }
    golden_oracle(g, m, r, o->oracle);
    free(m);
    free(r);
    for (size_t k = 0; k < golden_grad_slots; k++) {
        const clnorm_arg_slot s = golden_grads[k];
        if (g->a[s] != NULL)
            o->shift[s] = normwise(o->oracle[s], g->a[s], golden_grad_count(g, s));
    }
}

static void golden_close(golden *o)
{
    for (unsigned s = 0; s < SLOTS; s++)
        free(o->oracle[s]);
    golden_free(&o->g);
}

/* Runs the case's backward in storage type t through `strategy` (REFERENCE:
 * clnorm_ref_execute; AUTO: the host layer; a device strategy: layer 1), from the golden
 * statistics or (recompute) without them, and returns the arguments with the outputs filled
 * (0 when the strategy cannot take the case; the caller frees a->p either way). *loop_own:
 * given statistics whose mean the library corrected, so that the result is the golden's, not
 * the oracle's of the rounded statistics: float32 saved ones of an op with a mean where a
 * row's or group's |mean| * rstd is above 16, which host calls recompute from x
 * (src/execute.c, recompute_saved) and the row ops' kernels, layer 1 too, correct by the mean
 * of the row's deviations (kernels/norm_backward.cl, bwd_refines; GroupNorm's layer-1 calls
 * take them as given). */
static int run(const golden *o, clnorm_strategy strategy, clnorm_dtype t, int recompute,
               clnorm_slot_info info[SLOTS], tu_args *a, int *loop_own)
{
    *loop_own = 0;
    const golden_data *g = &o->g;
    const clnorm_desc d = golden_desc(g, t, CLNORM_WITH_BACKWARD);
    tu_slot_infos(&d, CLNORM_BACKWARD, info);
    memset(a, 0, sizeof *a);
    if (strategy != CLNORM_STRATEGY_REFERENCE && !golden_strategy_applies(g_ctx, &d, strategy))
        return 0; /* NHWC GroupNorm on a strategy not its own: refused, as it must be */
    if (strategy != CLNORM_STRATEGY_REFERENCE && golden_device_run_left_out(g_ctx, &d, strategy))
        return 0; /* GroupNorm f64 on a CPU device: split only (program builds) */
    for (unsigned s = 0; s < SLOTS; s++) {
        if (info[s].use == CLNORM_SLOT_UNUSED || g->a[s] == NULL)
            continue; /* dsum where the case has none */
        if (recompute && (s == CLNORM_ARG_MEAN || s == CLNORM_ARG_RSTD))
            continue;
        /* the statistics as the API takes them: rounded once to the parameter type */
        a->p[s] = info[s].is_output ? tu_alloc_sentinel(info[s].dtype, info[s].extent, 1)
                                    : golden_tensor(g, (clnorm_arg_slot)s, &info[s]);
    }
    tu_launch l = tu_launch_offsets();
    /* the 0.1 call where it takes the arguments: it has no scale, dscale, dshift, and reads
     * no statistics as constants */
    l.v01 = (g->gc->kind == CLNORM_LAYER || g->gc->kind == CLNORM_RMS) &&
            !(d.flags & (CLNORM_SCALE | CLNORM_SHIFT | CLNORM_USE_GLOBAL_STATS));
    if (strategy == CLNORM_STRATEGY_REFERENCE) {
        tu_run_host(NULL, NULL, &d, CLNORM_BACKWARD, &l, a);
        return 1;
    }
    clnorm_plan *plan = tu_plan_if(g_ctx, &d, strategy);
    if (plan == NULL)
        return 0; /* no fp64, or subgroup too short */
    clnorm_op_info op;
    if (!recompute && t == CLNORM_F32 && clnorm_op_query(d.kind, &op) == CLNORM_OK &&
        op.has_mean &&
        !(d.flags & CLNORM_USE_GLOBAL_STATS)) {
        const clnorm_slot_info *mi = &info[CLNORM_ARG_MEAN], *ri = &info[CLNORM_ARG_RSTD];
        const float *m = a->p[CLNORM_ARG_MEAN], *r = a->p[CLNORM_ARG_RSTD];
        for (size_t i = 0; i < mi->rows && !*loop_own; i++)
            for (size_t j = 0; j < mi->cols && !*loop_own; j++)
                *loop_own = fabs((double)m[i * mi->stride + j] * r[i * ri->stride + j]) > 16;
    }
    if (strategy == CLNORM_STRATEGY_AUTO)
        tu_run_host(g_ctx, plan, &d, CLNORM_BACKWARD, &l, a);
    else
        tu_run_cl(g_ctx, plan, CLNORM_BACKWARD, &l, a);
    clnorm_plan_free(plan);
    return 1;
}

static void run32(const golden *o, clnorm_strategy strategy, int recompute)
{
    clnorm_slot_info info[SLOTS];
    tu_args a;
    char who[200];
    snprintf(who, sizeof who, "f32 %s %s%s", clnorm_strategy_name(strategy), o->g.gc->name,
             recompute ? " (statistics recomputed)" : "");
    int own;
    const int ran = run(o, strategy, CLNORM_F32, recompute, info, &a, &own);
    size_t bad = 0;
    for (size_t k = 0; ran && k < golden_grad_slots; k++) {
        const clnorm_arg_slot s = golden_grads[k];
        if (a.p[s] == NULL)
            continue;
        const clnorm_slot_info *i = &info[s];
        char what[300];
        if (recompute || own) {
            snprintf(what, sizeof what, "%s: %s vs the golden", who, clnorm_arg_name(s));
            bad += tu_cmp_norm(CLNORM_F32, a.p[s], i->stride, CLNORM_F64, o->g.a[s], i->cols,
                               i->rows, i->cols, TOL32, NULL, what);
            continue;
        }
        snprintf(what, sizeof what, "%s: %s vs the float64 oracle", who, clnorm_arg_name(s));
        bad += tu_cmp_norm(CLNORM_F32, a.p[s], i->stride, CLNORM_F64, o->oracle[s], i->cols,
                           i->rows, i->cols, TOL32, NULL, what);
        snprintf(what, sizeof what, "%s: %s vs the golden (statistics rounding moves it %.3g)",
                 who, clnorm_arg_name(s), o->shift[s]);
        bad += tu_cmp_norm(CLNORM_F32, a.p[s], i->stride, CLNORM_F64, o->g.a[s], i->cols,
                           i->rows, i->cols, TOL32 + o->shift[s], NULL, what);
    }
    for (unsigned s = 0; s < SLOTS; s++)
        free(a.p[s]);
    if (bad)
        fail_msg("%s: %zu mismatches", who, bad);
}

static void run64(const golden *o, clnorm_strategy strategy, int recompute)
{
    clnorm_slot_info info[SLOTS];
    tu_args a;
    char who[200];
    snprintf(who, sizeof who, "f64 %s %s%s", clnorm_strategy_name(strategy), o->g.gc->name,
             recompute ? " (statistics recomputed)" : "");
    int own; /* the golden's within TOL64 either way */
    const int ran = run(o, strategy, CLNORM_F64, recompute, info, &a, &own);
    size_t bad = 0;
    for (size_t k = 0; ran && k < golden_grad_slots; k++) {
        const clnorm_arg_slot s = golden_grads[k];
        if (a.p[s] == NULL)
            continue;
        const clnorm_slot_info *i = &info[s];
        char what[300];
        snprintf(what, sizeof what, "%s: %s", who, clnorm_arg_name(s));
        bad += tu_cmp_norm(CLNORM_F64, a.p[s], i->stride, CLNORM_F64, o->g.a[s], i->cols,
                           i->rows, i->cols, TOL64, NULL, what);
    }
    for (unsigned s = 0; s < SLOTS; s++)
        free(a.p[s]);
    if (bad)
        fail_msg("%s: %zu mismatches", who, bad);
}

static void run_all(clnorm_strategy strategy)
{
    if (strategy != CLNORM_STRATEGY_REFERENCE && !tu_has_device(g_ctx) &&
        !(strategy == CLNORM_STRATEGY_AUTO && g_ctx != NULL))
        skip();
    for (size_t i = 0; i < golden_case_count; i++) {
        golden o;
        golden_open(&golden_cases[i], &o);
        /* precomputed statistics are required inputs: there is nothing to recompute */
        const int passes = golden_cases[i].cond.global_stats ? 1 : 2;
        for (int recompute = 0; recompute < passes; recompute++) {
            run32(&o, strategy, recompute);
            if (strategy != CLNORM_STRATEGY_AUTO)
                run64(&o, strategy, recompute);
        }
        golden_close(&o);
    }
}

static void test_manifest(void **state)
{
    (void)state;
    golden_check_manifest();
}

static void test_reference(void **state)
{
    (void)state;
    run_all(CLNORM_STRATEGY_REFERENCE);
}

static void test_host_auto(void **state)
{
    (void)state;
    run_all(CLNORM_STRATEGY_AUTO);
}

static void test_row(void **state)
{
    (void)state;
    run_all(CLNORM_STRATEGY_ROW);
}

static void test_workgroup(void **state)
{
    (void)state;
    run_all(CLNORM_STRATEGY_WORKGROUP);
}

static void test_split(void **state)
{
    (void)state;
    run_all(CLNORM_STRATEGY_SPLIT);
}

static void test_subgroup(void **state)
{
    (void)state;
    run_all(CLNORM_STRATEGY_SUBGROUP);
}

static int group_setup(void **state)
{
    (void)state;
    g_ctx = tu_context("backward golden");
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
        cmocka_unit_test(test_manifest), cmocka_unit_test(test_reference),
        cmocka_unit_test(test_host_auto), cmocka_unit_test(test_row),
        cmocka_unit_test(test_workgroup), cmocka_unit_test(test_split),
        cmocka_unit_test(test_subgroup),
    };
    return cmocka_run_group_tests_name("backward golden", tests, group_setup, group_teardown);
}
