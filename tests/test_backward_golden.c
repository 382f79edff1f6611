/*
 * test_backward_golden.c - the PyTorch float64 golden gradients of tests/golden (dx, dgamma,
 * dbeta of every case, from the golden's own x, dy, gamma and its float64 mean / rstd) through
 * the CPU reference and every device strategy.
 *
 * float32 (F32 dtype): the statistics are the golden ones rounded to float32, as the API takes
 * them. That rounding alone moves the exact answer: at a mean of 1e4 (ln_2x3000_mean1e4) the
 * float32 mean is off by up to 5e-4, which shifts every xhat of its row and dgamma by ~6e-5 of
 * its norm. So each result must be
 *   - within 1e-5 (normwise: max abs error / max(1, max |ref|)) of a float64 oracle
 *     (gu_oracle_backward) fed the same float32 statistics, and
 *   - within 1e-5 + (what the rounding of the statistics moves the exact answer) of the golden.
 * float64 (F64 dtype, when the device has fp64): the golden statistics as they are; every
 * result within 1e-10 of the golden.
 * The oracle itself must reproduce the golden within 1e-10 from the exact statistics.
 */
#include "grad_util.h"

#include "npy.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOL32 1e-5
#define TOL64 1e-10

typedef struct {
    const char *name;
    clnorm_kind kind;
    int normalized_dims;
    float eps;
    int gamma, beta;
} golden_case;

/* manifest.json's cases (test_manifest checks the list is complete) */
static const golden_case cases[] = {
    {"seed_example_2x5", CLNORM_LAYER, 1, 1e-5f, 1, 1},
    {"ln_3x4x8_last2", CLNORM_LAYER, 2, 1e-5f, 1, 1},
    {"ln_16x100_eps1e-3", CLNORM_LAYER, 1, 1e-3f, 1, 1},
    {"ln_8x257_noaffine", CLNORM_LAYER, 1, 1e-5f, 0, 0},
    {"ln_5x33_gamma_only", CLNORM_LAYER, 1, 1e-5f, 1, 0},
    {"ln_4x1_cols1", CLNORM_LAYER, 1, 1e-5f, 1, 1},
    {"ln_2x3000_mean1e4", CLNORM_LAYER, 1, 1e-5f, 1, 1},
    {"rms_6x64", CLNORM_RMS, 1, 1e-6f, 1, 0},
    {"rms_3x2x10_noaffine_last2", CLNORM_RMS, 2, 1e-5f, 0, 0},
};
#define NUM_CASES (sizeof cases / sizeof cases[0])

static clnorm_ctx *g_ctx;

/* One case: float64 copies of everything, float32 inputs and statistics. */
typedef struct {
    const golden_case *gc;
    size_t rows, cols;
    unsigned mask;
    double *x, *dy, *gamma, *mean, *rstd;  /* float64 (inputs exactly widened) */
    double *dx, *dgamma, *dbeta;           /* golden outputs */
    float *x32, *dy32, *gamma32, *mean32, *rstd32;
    double *odx, *odg, *odb; /* the oracle from the float32 statistics */
    double shift_dx, shift_dg, shift_db; /* what rounding the statistics moved (normwise) */
} golden;

static double *load_f64(const char *name, const char *file, size_t count, int as_f32)
{
    char path[1024], err[256] = "";
    snprintf(path, sizeof path, "%s/%s/%s", tu_golden_dir(), name, file);
    npy_array a;
    if (npy_load(path, &a, err, sizeof err) != 0)
        fail_msg("cannot load %s: %s", path, err);
    if (a.count != count || a.dtype != (as_f32 ? NPY_F32 : NPY_F64)) {
        npy_free(&a);
        fail_msg("%s: expected %zu %s values", path, count, as_f32 ? "float32" : "float64");
    }
    double *d = malloc(count * sizeof *d + 1);
    assert_non_null(d);
    for (size_t i = 0; i < count; i++)
        d[i] = as_f32 ? (double)((const float *)a.data)[i] : ((const double *)a.data)[i];
    npy_free(&a);
    return d;
}

static float *to_f32(const double *d, size_t n)
{
    if (d == NULL)
        return NULL;
    float *f = malloc(n * sizeof *f + 1);
    assert_non_null(f);
    for (size_t i = 0; i < n; i++)
        f[i] = (float)d[i];
    return f;
}

static double normwise(const double *got, const double *want, size_t n)
{
    double worst = 0.0, max_ref = 0.0;
    for (size_t i = 0; i < n; i++) {
        worst = fmax(worst, fabs(got[i] - want[i]));
        max_ref = fmax(max_ref, fabs(want[i]));
    }
    return worst / fmax(1.0, max_ref);
}

static void golden_load(const golden_case *gc, golden *g)
{
    memset(g, 0, sizeof *g);
    g->gc = gc;
    const char *dir = tu_golden_dir();
    if (dir == NULL)
        fail_msg("CLNORM_GOLDEN_DIR is not set");
    char path[1024], err[256] = "";
    snprintf(path, sizeof path, "%s/%s/x.npy", dir, gc->name);
    npy_array xa;
    if (npy_load(path, &xa, err, sizeof err) != 0)
        fail_msg("cannot load %s: %s", path, err);
    g->rows = g->cols = 1;
    for (int i = 0; i < xa.ndim; i++) {
        if (i < xa.ndim - gc->normalized_dims)
            g->rows *= xa.shape[i];
        else
            g->cols *= xa.shape[i];
    }
    npy_free(&xa);
    const size_t n = g->rows * g->cols, rows = g->rows, cols = g->cols;
    g->mask = CLNORM_GRAD_X | (gc->gamma ? CLNORM_GRAD_GAMMA : 0u) |
              (gc->beta ? CLNORM_GRAD_BETA : 0u);
    g->x = load_f64(gc->name, "x.npy", n, 1);
    g->dy = load_f64(gc->name, "dy.npy", n, 1);
    g->gamma = gc->gamma ? load_f64(gc->name, "gamma.npy", cols, 1) : NULL;
    g->mean = gc->kind == CLNORM_LAYER ? load_f64(gc->name, "mean.npy", rows, 0) : NULL;
    g->rstd = load_f64(gc->name, "rstd.npy", rows, 0);
    g->dx = load_f64(gc->name, "dx.npy", n, 0);
    g->dgamma = gc->gamma ? load_f64(gc->name, "dgamma.npy", cols, 0) : NULL;
    g->dbeta = gc->beta ? load_f64(gc->name, "dbeta.npy", cols, 0) : NULL;
    g->x32 = to_f32(g->x, n);
    g->dy32 = to_f32(g->dy, n);
    g->gamma32 = to_f32(g->gamma, cols);
    g->mean32 = to_f32(g->mean, rows);
    g->rstd32 = to_f32(g->rstd, rows);

    /* The oracle from the exact statistics must be the golden (it is the yardstick below). */
    double *ex = malloc(n * sizeof *ex), *eg = malloc(cols * sizeof *eg),
           *eb = malloc(cols * sizeof *eb);
    assert_true(ex && eg && eb);
    gu_oracle_backward(gc->kind, rows, cols, g->x, g->dy, g->mean, g->rstd, g->gamma, ex, eg, eb);
    double e = normwise(ex, g->dx, n);
    if (g->dgamma)
        e = fmax(e, normwise(eg, g->dgamma, cols));
    if (g->dbeta)
        e = fmax(e, normwise(eb, g->dbeta, cols));
    free(ex);
    free(eg);
    free(eb);
    if (!(e <= TOL64))
        fail_msg("%s: the float64 oracle is %.3g from the golden gradients", gc->name, e);

    /* The oracle from the float32 statistics, and how far that alone moves the answer. */
    double *m = g->mean ? malloc(rows * sizeof *m) : NULL, *r = malloc(rows * sizeof *r);
    assert_non_null(r);
    for (size_t i = 0; i < rows; i++) {
        if (m)
            m[i] = g->mean32[i];
        r[i] = g->rstd32[i];
    }
    g->odx = malloc(n * sizeof *g->odx);
    g->odg = malloc(cols * sizeof *g->odg);
    g->odb = malloc(cols * sizeof *g->odb);
    assert_true(g->odx && g->odg && g->odb);
    gu_oracle_backward(gc->kind, rows, cols, g->x, g->dy, m, r, g->gamma, g->odx, g->odg,
                       g->odb);
    free(m);
    free(r);
    g->shift_dx = normwise(g->odx, g->dx, n);
    g->shift_dg = g->dgamma ? normwise(g->odg, g->dgamma, cols) : 0.0;
    g->shift_db = g->dbeta ? normwise(g->odb, g->dbeta, cols) : 0.0;
}

static void golden_free(golden *g)
{
    double *d[] = {g->x, g->dy, g->gamma, g->mean, g->rstd, g->dx, g->dgamma, g->dbeta,
                   g->odx, g->odg, g->odb};
    for (size_t i = 0; i < sizeof d / sizeof d[0]; i++)
        free(d[i]);
    float *f[] = {g->x32, g->dy32, g->gamma32, g->mean32, g->rstd32};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        free(f[i]);
}

static clnorm_desc golden_desc(const golden *g, clnorm_dtype dtype)
{
    clnorm_desc d;
    clnorm_desc_init(&d, g->gc->kind, g->rows, g->cols);
    d.dtype = dtype;
    d.eps = g->gc->eps;
    d.flags = CLNORM_WITH_BACKWARD | (g->gc->gamma ? 0u : CLNORM_NO_GAMMA) |
              (g->gc->beta ? 0u : CLNORM_NO_BETA);
    return d;
}

/* One output of a float32 run: against the oracle (1e-5) and the golden (1e-5 + shift). */
static size_t check32(const float *got, const double *oracle, const double *gold, size_t n,
                      double shift, const char *who, const char *name)
{
    char what[256];
    snprintf(what, sizeof what, "%s: %s vs the float64 oracle", who, name);
    size_t bad = gu_cmp_norm(CLNORM_F32, got, n, CLNORM_F64, oracle, n, 1, n, TOL32, NULL, what);
    snprintf(what, sizeof what, "%s: %s vs the golden (statistics rounding moves it %.3g)", who,
             name, shift);
    bad += gu_cmp_norm(CLNORM_F32, got, n, CLNORM_F64, gold, n, 1, n, TOL32 + shift, NULL, what);
    return bad;
}

/* Runs one case in float32 through `strategy` (REFERENCE: clnorm_ref_backward; device
 * strategies through layer 1, AUTO through the host layer). */
static void run32(const golden *g, clnorm_strategy strategy)
{
    const size_t n = g->rows * g->cols, cols = g->cols;
    const clnorm_desc d = golden_desc(g, CLNORM_F32);
    float *dx = tu_alloc_filled(n, TU_SENTINEL_OUT_BITS);
    float *dg = g->dgamma ? tu_alloc_filled(cols, TU_SENTINEL_OUT_BITS) : NULL;
    float *db = g->dbeta ? tu_alloc_filled(cols, TU_SENTINEL_OUT_BITS) : NULL;
    char who[200];
    snprintf(who, sizeof who, "f32 %s %s", clnorm_strategy_name(strategy), g->gc->name);
    if (strategy == CLNORM_STRATEGY_REFERENCE) {
        const clnorm_status st = clnorm_ref_backward(&d, g->mask, g->x32, g->dy32, g->mean32,
                                                     g->rstd32, g->gamma32, dx, dg, db);
        if (st != CLNORM_OK)
            fail_msg("%s: clnorm_ref_backward = %d", who, st);
    } else {
        clnorm_plan *plan = tu_plan_if(g_ctx, &d, strategy);
        if (plan == NULL) {
            free(dx);
            free(dg);
            free(db);
            return;
        }
        if (strategy == CLNORM_STRATEGY_AUTO) {
            const clnorm_status st = clnorm_backward_host(plan, g->mask, g->x32, g->dy32,
                                                          g->mean32, g->rstd32, g->gamma32, dx,
                                                          dg, db);
            if (st != CLNORM_OK)
                fail_msg("%s: clnorm_backward_host = %d: %s", who, st, clnorm_last_error(g_ctx));
        } else {
            const gu_bwd_launch launch = gu_bwd_offsets();
            gu_backward_cl(g_ctx, plan, g->mask, &launch, g->x32, g->dy32, g->mean32, g->rstd32,
                           g->gamma32, dx, dg, db);
        }
        clnorm_plan_free(plan);
    }
    size_t bad = check32(dx, g->odx, g->dx, n, g->shift_dx, who, "dx");
    if (dg)
        bad += check32(dg, g->odg, g->dgamma, cols, g->shift_dg, who, "dgamma");
    if (db)
        bad += check32(db, g->odb, g->dbeta, cols, g->shift_db, who, "dbeta");
    free(dx);
    free(dg);
    free(db);
    if (bad)
        fail_msg("%s: %zu mismatches", who, bad);
}

/* The same in float64 with the exact golden statistics. */
static void run64(const golden *g, clnorm_strategy strategy)
{
    const size_t n = g->rows * g->cols, cols = g->cols;
    const clnorm_desc d = golden_desc(g, CLNORM_F64);
    double *dx = gu_alloc_sentinel(CLNORM_F64, n, 1);
    double *dg = g->dgamma ? gu_alloc_sentinel(CLNORM_F64, cols, 1) : NULL;
    double *db = g->dbeta ? gu_alloc_sentinel(CLNORM_F64, cols, 1) : NULL;
    char who[200];
    snprintf(who, sizeof who, "f64 %s %s", clnorm_strategy_name(strategy), g->gc->name);
    if (strategy == CLNORM_STRATEGY_REFERENCE) {
        const clnorm_status st = clnorm_ref_backward(&d, g->mask, g->x, g->dy, g->mean, g->rstd,
                                                     g->gamma, dx, dg, db);
        if (st != CLNORM_OK)
            fail_msg("%s: clnorm_ref_backward = %d", who, st);
    } else {
        clnorm_plan *plan = NULL;
        const clnorm_status st = clnorm_plan_create_with(g_ctx, &d, strategy, &plan);
        if (st != CLNORM_OK) {
            free(dx);
            free(dg);
            free(db);
            if (st == CLNORM_UNSUPPORTED)
                return; /* no fp64 (test_dtypes checks that claim), or subgroup too short */
            fail_msg("%s: plan = %d: %s", who, st, clnorm_last_error(g_ctx));
        }
        const gu_bwd_launch launch = gu_bwd_offsets();
        gu_backward_cl(g_ctx, plan, g->mask, &launch, g->x, g->dy, g->mean, g->rstd, g->gamma,
                       dx, dg, db);
        clnorm_plan_free(plan);
    }
    char what[256];
    snprintf(what, sizeof what, "%s: dx", who);
    size_t bad = gu_cmp_norm(CLNORM_F64, dx, n, CLNORM_F64, g->dx, n, 1, n, TOL64, NULL, what);
    if (dg) {
        snprintf(what, sizeof what, "%s: dgamma", who);
        bad += gu_cmp_norm(CLNORM_F64, dg, cols, CLNORM_F64, g->dgamma, cols, 1, cols, TOL64,
                           NULL, what);
    }
    if (db) {
        snprintf(what, sizeof what, "%s: dbeta", who);
        bad += gu_cmp_norm(CLNORM_F64, db, cols, CLNORM_F64, g->dbeta, cols, 1, cols, TOL64,
                           NULL, what);
    }
    free(dx);
    free(dg);
    free(db);
    if (bad)
        fail_msg("%s: %zu mismatches", who, bad);
}

static void run_all(clnorm_strategy strategy)
{
    if (strategy != CLNORM_STRATEGY_REFERENCE && !tu_has_device(g_ctx) &&
        !(strategy == CLNORM_STRATEGY_AUTO && g_ctx != NULL))
        skip();
    for (size_t i = 0; i < NUM_CASES; i++) {
        golden g;
        golden_load(&cases[i], &g);
        run32(&g, strategy);
        if (strategy != CLNORM_STRATEGY_AUTO)
            run64(&g, strategy);
        golden_free(&g);
    }
}

/* The hard-coded list names every case of manifest.json, and only those. */
static void test_manifest(void **state)
{
    (void)state;
    const char *dir = tu_golden_dir();
    assert_non_null(dir);
    char path[1024];
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        fail_msg("cannot open %s", path);
    static char text[1 << 16];
    const size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    size_t names = 0;
    for (const char *p = text; (p = strstr(p, "\"name\"")) != NULL; p++)
        names++;
    assert_int_equal(names, NUM_CASES);
    for (size_t i = 0; i < NUM_CASES; i++) {
        char quoted[128];
        snprintf(quoted, sizeof quoted, "\"%s\"", cases[i].name);
        if (strstr(text, quoted) == NULL)
            fail_msg("%s is not in manifest.json", cases[i].name);
    }
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
    g_ctx = gu_context("backward golden");
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
