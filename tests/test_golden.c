/*
 * test_golden.c - the PyTorch float64 golden cases of tests/golden (see its README.md) through
 * the CPU reference and through the device (host-pointer API, every strategy). y must be within
 * 1e-5 abs + 1e-5 rel of the golden y, mean likewise, rstd within 1e-5 relative; in float64
 * (F64, from the same inputs widened), everything within 1e-10. The backward
 * files (dy, dx, dgamma, dbeta) belong to a later issue and are not read.
 */
#include "test_util.h"

#include "npy.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GOLD_ATOL 1e-5
#define GOLD_RTOL 1e-5

/* The cases of manifest.json (test_manifest checks the list is complete). */
typedef struct {
    const char *name;
    clnorm_kind kind;
    int normalized_dims;
    double eps; /* as the manifest says; the desc holds it rounded to float */
    int gamma, beta;
} golden_case;

static const golden_case cases[] = {
    {"seed_example_2x5", CLNORM_LAYER, 1, 1e-5, 1, 1},
    {"ln_3x4x8_last2", CLNORM_LAYER, 2, 1e-5, 1, 1},
    {"ln_16x100_eps1e-3", CLNORM_LAYER, 1, 1e-3, 1, 1},
    {"ln_8x257_noaffine", CLNORM_LAYER, 1, 1e-5, 0, 0},
    {"ln_5x33_gamma_only", CLNORM_LAYER, 1, 1e-5, 1, 0},
    {"ln_4x1_cols1", CLNORM_LAYER, 1, 1e-5, 1, 1},
    {"ln_2x3000_mean1e4", CLNORM_LAYER, 1, 1e-5, 1, 1},
    {"rms_6x64", CLNORM_RMS, 1, 1e-6, 1, 0},
    {"rms_3x2x10_noaffine_last2", CLNORM_RMS, 2, 1e-5, 0, 0},
};
#define NUM_CASES (sizeof cases / sizeof cases[0])

/* One case loaded from disk. */
typedef struct {
    const golden_case *gc;
    clnorm_desc desc;
    float *x, *gamma, *beta;          /* float32 inputs */
    npy_array y, mean, rstd;          /* float64 expectations (mean: LAYER only) */
} golden_data;

static clnorm_ctx *g_ctx; /* one context for the whole binary, made in group setup */

static void load(const char *dir, const char *name, const char *file, npy_array *out)
{
    char path[1024], err[256] = "";
    snprintf(path, sizeof path, "%s/%s/%s", dir, name, file);
    if (npy_load(path, out, err, sizeof err) != 0)
        fail_msg("cannot load %s: %s", path, err);
}

static float *load_f32(const char *dir, const char *name, const char *file, size_t want_count)
{
    npy_array a;
    char err[256] = "";
    float *f = NULL;
    load(dir, name, file, &a);
    if (a.count != want_count) {
        npy_free(&a);
        fail_msg("%s/%s: %zu elements, expected %zu", name, file, a.count, want_count);
    }
    if (npy_to_f32(&a, &f, err, sizeof err) != 0) {
        npy_free(&a);
        fail_msg("%s/%s: %s", name, file, err);
    }
    npy_free(&a);
    return f;
}

static void load_f64(const char *dir, const char *name, const char *file, size_t want_count,
                     npy_array *out)
{
    load(dir, name, file, out);
    if (out->dtype != NPY_F64 || out->count != want_count)
        fail_msg("%s/%s: expected %zu float64 values (dtype %d, %zu values)", name, file,
                 want_count, (int)out->dtype, out->count);
}

static void golden_load(const golden_case *gc, golden_data *g)
{
    const char *dir = tu_golden_dir();
    if (dir == NULL)
        fail_msg("CLNORM_GOLDEN_DIR is not set");
    memset(g, 0, sizeof *g);
    g->gc = gc;

    /* rows = product of the leading dims, cols = of the normalized ones. */
    npy_array xa;
    load(dir, gc->name, "x.npy", &xa);
    if (xa.ndim < gc->normalized_dims) {
        const int nd = xa.ndim;
        npy_free(&xa);
        fail_msg("%s: x has %d dims, %d normalized", gc->name, nd, gc->normalized_dims);
    }
    size_t rows = 1, cols = 1;
    for (int i = 0; i < xa.ndim; i++) {
        if (i < xa.ndim - gc->normalized_dims)
            rows *= xa.shape[i];
        else
            cols *= xa.shape[i];
    }
    npy_free(&xa);

    clnorm_desc_init(&g->desc, gc->kind, rows, cols);
    g->desc.eps = (float)gc->eps;
    g->desc.flags = CLNORM_SAVE_STATS | (gc->gamma ? 0u : CLNORM_NO_GAMMA) |
                    (gc->beta ? 0u : CLNORM_NO_BETA);
    g->x = load_f32(dir, gc->name, "x.npy", rows * cols);
    if (gc->gamma)
        g->gamma = load_f32(dir, gc->name, "gamma.npy", cols);
    if (gc->beta)
        g->beta = load_f32(dir, gc->name, "beta.npy", cols);
    load_f64(dir, gc->name, "y.npy", rows * cols, &g->y);
    if (gc->kind == CLNORM_LAYER)
        load_f64(dir, gc->name, "mean.npy", rows, &g->mean);
    load_f64(dir, gc->name, "rstd.npy", rows, &g->rstd);
}

static void golden_free(golden_data *g)
{
    free(g->x);
    free(g->gamma);
    free(g->beta);
    npy_free(&g->y);
    if (g->gc->kind == CLNORM_LAYER)
        npy_free(&g->mean);
    npy_free(&g->rstd);
}

/* Golden values against outputs of any storage type (tu_load reads them). */
static size_t cmp_any(clnorm_dtype t, const void *got, const double *want, size_t n,
                      double atol, double rtol, const char *what)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        const double g = tu_load(t, got, i), w = want[i];
        const int ok = (isnan(g) || isnan(w)) ? (isnan(g) && isnan(w))
                                              : fabs(g - w) <= atol + rtol * fabs(w);
        if (ok)
            continue;
        if (bad < 8)
            print_error("%s: [%zu] got %.17g want %.17g (diff %.3g)\n", what, i, g, w,
                        fabs(g - w));
        bad++;
    }
    return bad;
}

/* Compares one run's outputs with the golden ones; y/mean/rstd have TU_PAD sentinels after.
 * dtype F32: 1e-5 abs + 1e-5 rel (rstd 1e-5 rel); F64: 1e-10, plus what eps's rounding to
 * float (the API's type) moves rstd: 0.5 * |eps_f - eps| * rstd^2 relative (1.3e-8 for a
 * zero-variance row at eps 1e-5, ~1e-13 otherwise). */
static void golden_check(const golden_data *g, clnorm_dtype t, const void *y, const void *mean,
                         const void *rstd, const char *who)
{
    const size_t rows = g->desc.rows, cols = g->desc.cols;
    const size_t es = tu_dtype_size(t), ps = tu_param_size(t);
    const clnorm_dtype pt = t == CLNORM_F64 ? CLNORM_F64 : CLNORM_F32; /* parameters */
    double eps_shift = 0.0;
    for (size_t r = 0; r < rows; r++) {
        const double rs = ((const double *)g->rstd.data)[r];
        const double e = 0.5 * fabs((double)(float)g->gc->eps - g->gc->eps) * rs * rs;
        if (e > eps_shift)
            eps_shift = e;
    }
    const double atol = t == CLNORM_F64 ? 1e-10 + 10.0 * eps_shift : GOLD_ATOL;
    const double rtol = t == CLNORM_F64 ? 1e-10 + eps_shift : GOLD_RTOL;
    char what[160];
    size_t bad = 0;
    snprintf(what, sizeof what, "%s %s %s y", who, t == CLNORM_F64 ? "F64" : "F32",
             g->gc->name);
    bad += cmp_any(t, y, g->y.data, rows * cols, atol, rtol, what);
    bad += tu_count_not_sentinel((const char *)y + rows * cols * es, TU_PAD, es, 1, what);
    snprintf(what, sizeof what, "%s %s rstd", who, g->gc->name);
    bad += cmp_any(pt, rstd, g->rstd.data, rows, 0.0, rtol, what);
    bad += tu_count_not_sentinel((const char *)rstd + rows * ps, TU_PAD, ps, 1, what);
    snprintf(what, sizeof what, "%s %s mean", who, g->gc->name);
    if (g->gc->kind == CLNORM_LAYER)
        bad += cmp_any(pt, mean, g->mean.data, rows, atol, rtol, what);
    else /* RMS has no mean: the buffer was not passed and must be as it was */
        bad += tu_count_not_sentinel(mean, rows, ps, 1, what);
    bad += tu_count_not_sentinel((const char *)mean + rows * ps, TU_PAD, ps, 1, what);
    if (bad)
        fail_msg("%s: golden case %s: %zu mismatches", who, g->gc->name, bad);
}

/* A float32 array widened to double (exact), or NULL for NULL. */
static double *widen(const float *f, size_t n)
{
    if (f == NULL)
        return NULL;
    double *d = malloc(n * sizeof *d);
    assert_non_null(d);
    for (size_t i = 0; i < n; i++)
        d[i] = (double)f[i];
    return d;
}

static void *alloc_out(size_t n, size_t size)
{
    void *p = malloc((n + TU_PAD) * size);
    assert_non_null(p);
    tu_fill_sentinel(p, n + TU_PAD, size, 1);
    return p;
}

/* Runs one case through `strategy` (REFERENCE: clnorm_ref_forward) in storage type t (F32, or
 * F64 from the same float32 inputs widened exactly) and checks it. */
static void golden_run_as(const golden_case *gc, clnorm_strategy strategy, clnorm_dtype t)
{
    golden_data g;
    golden_load(gc, &g);
    const size_t rows = g.desc.rows, cols = g.desc.cols;
    g.desc.dtype = t;
    const size_t es = tu_dtype_size(t), ps = tu_param_size(t);
    void *y = alloc_out(rows * cols, es), *mean = alloc_out(rows, ps);
    void *rstd = alloc_out(rows, ps);
    void *mp = gc->kind == CLNORM_LAYER ? mean : NULL;
    double *xd = NULL, *gd = NULL, *bd = NULL;
    const void *x = g.x, *gamma = g.gamma, *beta = g.beta;
    if (t == CLNORM_F64) {
        x = xd = widen(g.x, rows * cols);
        gamma = gd = widen(g.gamma, cols);
        beta = bd = widen(g.beta, cols);
    }
    clnorm_status st = CLNORM_OK;
    clnorm_plan *plan = NULL;
    if (strategy == CLNORM_STRATEGY_REFERENCE) {
        st = clnorm_ref_forward(&g.desc, x, y, gamma, beta, mp, rstd);
        if (st != CLNORM_OK)
            fail_msg("clnorm_ref_forward(%s) = %d (%s)", gc->name, st, clnorm_status_string(st));
    } else {
        /* NULL: the subgroup strategy does not take rows this long */
        plan = tu_plan_if(g_ctx, &g.desc, strategy);
        if (plan != NULL)
            st = clnorm_forward_host(plan, x, y, gamma, beta, mp, rstd);
        if (st != CLNORM_OK)
            fail_msg("clnorm_forward_host(%s, %s) = %d (%s): %s", gc->name,
                     clnorm_strategy_name(strategy), st, clnorm_status_string(st),
                     clnorm_last_error(g_ctx));
    }
    if (strategy == CLNORM_STRATEGY_REFERENCE || plan != NULL)
        golden_check(&g, t, y, mean, rstd, clnorm_strategy_name(strategy));
    clnorm_plan_free(plan);
    free(y);
    free(mean);
    free(rstd);
    free(xd);
    free(gd);
    free(bd);
    golden_free(&g);
}

static void golden_run(const golden_case *gc, clnorm_strategy strategy)
{
    golden_run_as(gc, strategy, CLNORM_F32);
}

/* The hard-coded list must name every case of manifest.json, and only those. */
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
    for (size_t i = 0; i < NUM_CASES; i++)
        golden_run(&cases[i], CLNORM_STRATEGY_REFERENCE);
}

static void run_device(clnorm_strategy strategy)
{
    if (!tu_has_device(g_ctx))
        skip();
    for (size_t i = 0; i < NUM_CASES; i++)
        golden_run(&cases[i], strategy);
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

/* Whether the context's device does double precision (what F64 plans need). */
static int device_has_fp64(void)
{
    cl_device_id dev = NULL;
    char ext[8192] = "";
    if (clGetCommandQueueInfo(clnorm_get_queue(g_ctx), CL_QUEUE_DEVICE, sizeof dev, &dev,
                              NULL) != CL_SUCCESS ||
        clGetDeviceInfo(dev, CL_DEVICE_EXTENSIONS, sizeof ext - 1, ext, NULL) != CL_SUCCESS)
        fail_msg("cannot query the device's extensions");
    return strstr(ext, "cl_khr_fp64") != NULL;
}

/* F64 from the widened float32 inputs computes what PyTorch's float64 did: within 1e-10,
 * through the reference and every strategy (devices with cl_khr_fp64). */
static void test_f64(void **state)
{
    (void)state;
    for (size_t i = 0; i < NUM_CASES; i++)
        golden_run_as(&cases[i], CLNORM_STRATEGY_REFERENCE, CLNORM_F64);
    if (!tu_has_device(g_ctx) || !device_has_fp64())
        skip();
    for (int s = 0; s < TU_NUM_STRATEGIES; s++)
        for (size_t i = 0; i < NUM_CASES; i++)
            golden_run_as(&cases[i], tu_strategies[s], CLNORM_F64);
}

/* The plan clnorm chooses by itself, also on a context without a device. */
static void test_host_auto(void **state)
{
    (void)state;
    if (g_ctx == NULL)
        skip();
    for (size_t i = 0; i < NUM_CASES; i++)
        golden_run(&cases[i], CLNORM_STRATEGY_AUTO);
}

/* The device comes from CLNORM_DEVICE; no device is not a failure (device tests skip). */
static int group_setup(void **state)
{
    (void)state;
    if (clnorm_create(NULL, &g_ctx) != CLNORM_OK)
        g_ctx = NULL;
    else
        print_message("golden: running on %s\n", clnorm_device_name(g_ctx));
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
