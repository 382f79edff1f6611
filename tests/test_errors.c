/*
 * test_errors.c - every error path: the right status, nothing written (outputs hold their
 * sentinels afterwards), *plan / *ctx set to NULL on failure, and clnorm_last_error() naming
 * the problem. Covers clnorm_desc_check, plan creation, both execution layers, the reference,
 * context creation, status strings and the NULL-tolerant destroy functions.
 */
#define _POSIX_C_SOURCE 200809L /* setenv, unsetenv, strdup */

#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static clnorm_ctx *g_ctx;

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* The call returned `want`; the context's message is non-empty and names `word` (if any). */
static void expect_status(clnorm_status got, clnorm_status want, const clnorm_ctx *ctx,
                          const char *word, const char *what)
{
    if (got != want)
        fail_msg("%s: got %d (%s), expected %d (%s)", what, got, clnorm_status_string(got), want,
                 clnorm_status_string(want));
    if (ctx == NULL)
        return;
    const char *msg = clnorm_last_error(ctx);
    if (msg == NULL || msg[0] == '\0')
        fail_msg("%s: clnorm_last_error() is empty after a failure", what);
    if (word != NULL && !tu_mentions(msg, word))
        fail_msg("%s: clnorm_last_error() = \"%s\" does not name \"%s\"", what, msg, word);
}

/* A plan that must not exist: failing calls set *plan to NULL. */
static clnorm_plan *const NOT_NULL_PLAN = (clnorm_plan *)&g_ctx;

/* ------------------------------------------------------------------------------------------ */
/* Descriptions                                                                                */

typedef struct {
    const char *what;
    const char *field; /* the word the message must contain, NULL: any message */
    clnorm_desc desc;
} bad_desc;

/* Every invalid description, each with one field wrong. */
static size_t make_bad_descs(bad_desc *out)
{
    size_t n = 0;
    clnorm_desc base;
    clnorm_desc_init(&base, CLNORM_LAYER, 3, 10);
#define BAD(label, word, stmt)                                                                 \
    do {                                                                                       \
        out[n].what = label;                                                                   \
        out[n].field = word;                                                                   \
        out[n].desc = base;                                                                    \
        clnorm_desc *d = &out[n].desc;                                                         \
        stmt;                                                                                  \
        n++;                                                                                   \
    } while (0)
    BAD("cols = 0", "cols", d->cols = 0);
    BAD("rows * cols * 4 overflows size_t", NULL, (d->rows = SIZE_MAX / 2, d->cols = 4));
    BAD("rows * cols overflows size_t", NULL, (d->rows = SIZE_MAX / 2, d->cols = SIZE_MAX / 4));
    BAD("x extent overflows size_t", NULL, (d->rows = 3, d->x_stride = SIZE_MAX / 2));
    BAD("y extent overflows size_t", NULL, (d->rows = 3, d->y_stride = SIZE_MAX / 2));
    BAD("x_stride < cols", "x_stride", d->x_stride = 9);
    BAD("y_stride < cols", "y_stride", d->y_stride = 1);
    BAD("eps = 0", "eps", d->eps = 0.0f);
    BAD("eps < 0", "eps", d->eps = -1e-5f);
    BAD("eps = NaN", "eps", d->eps = NAN);
    BAD("eps = +Inf", "eps", d->eps = INFINITY);
    BAD("eps = -Inf", "eps", d->eps = -INFINITY);
    BAD("kind = 7", "kind", d->kind = (clnorm_kind)7);
    BAD("kind = -1", "kind", d->kind = (clnorm_kind)-1);
    BAD("dtype = 9", "dtype", d->dtype = (clnorm_dtype)9);
    BAD("dtype = -1", "dtype", d->dtype = (clnorm_dtype)-1);
    BAD("unknown flag bit 30", "flag", d->flags = 1u << 30);
    BAD("unknown flag bit 31", "flag", d->flags = CLNORM_SAVE_STATS | (1u << 31));
#undef BAD
    return n;
}
#define MAX_BAD 32

static void test_desc_check(void **state)
{
    (void)state;
    bad_desc bad[MAX_BAD];
    const size_t n = make_bad_descs(bad);
    for (size_t i = 0; i < n; i++) {
        char msg[256];
        memset(msg, 0, sizeof msg);
        const clnorm_status st = clnorm_desc_check(&bad[i].desc, msg, sizeof msg);
        if (st != CLNORM_INVALID_ARGUMENT)
            fail_msg("desc_check(%s) = %d (%s)", bad[i].what, st, clnorm_status_string(st));
        if (msg[0] == '\0')
            fail_msg("desc_check(%s): empty message", bad[i].what);
        if (bad[i].field != NULL && !tu_mentions(msg, bad[i].field))
            fail_msg("desc_check(%s): \"%s\" does not name %s", bad[i].what, msg, bad[i].field);
        /* msg may be NULL, whatever msg_size says */
        assert_int_equal(clnorm_desc_check(&bad[i].desc, NULL, 0), CLNORM_INVALID_ARGUMENT);
        assert_int_equal(clnorm_desc_check(&bad[i].desc, NULL, 256), CLNORM_INVALID_ARGUMENT);
    }
    /* an op's own check (row_norm.c: GroupNorm's fields on a row kind) with no buffer */
    clnorm_desc g;
    clnorm_desc_init(&g, CLNORM_LAYER, 4, 8);
    g.groups = 2;
    assert_int_equal(clnorm_desc_check(&g, NULL, 256), CLNORM_INVALID_ARGUMENT);
    assert_int_equal(clnorm_desc_check(NULL, NULL, 0), CLNORM_INVALID_ARGUMENT);
    char msg[64] = "";
    assert_int_equal(clnorm_desc_check(NULL, msg, sizeof msg), CLNORM_INVALID_ARGUMENT);
    assert_true(msg[0] != '\0');

    /* Valid descriptions: dense, strided, rows = 0, both kinds, all flags. */
    clnorm_desc d;
    clnorm_desc_init(&d, CLNORM_LAYER, 0, 10);
    assert_int_equal(clnorm_desc_check(&d, NULL, 0), CLNORM_OK);
    clnorm_desc_init(&d, CLNORM_RMS, 3, 1);
    d.flags = CLNORM_NO_GAMMA | CLNORM_NO_BETA | CLNORM_SAVE_STATS;
    d.x_stride = 1;
    d.y_stride = 5;
    d.eps = 1e-30f;
    assert_int_equal(clnorm_desc_check(&d, NULL, 0), CLNORM_OK);
    /* Every storage type and the backward flag are well-formed. */
    static const clnorm_dtype dtypes[] = {CLNORM_F16, CLNORM_BF16, CLNORM_F64};
    for (size_t i = 0; i < COUNT(dtypes); i++) {
        d.dtype = dtypes[i];
        assert_int_equal(clnorm_desc_check(&d, NULL, 0), CLNORM_OK);
    }
    d.flags |= CLNORM_WITH_BACKWARD;
    assert_int_equal(clnorm_desc_check(&d, NULL, 0), CLNORM_OK);

    /* A short message buffer is truncated and terminated, never overrun; size 0 writes
     * nothing. */
    char small[32];
    memset(small, 'Z', sizeof small);
    assert_int_equal(clnorm_desc_check(&bad[0].desc, small, 6), CLNORM_INVALID_ARGUMENT);
    assert_true(memchr(small, '\0', 6) != NULL);
    for (size_t i = 6; i < sizeof small; i++)
        assert_int_equal(small[i], 'Z');
    memset(small, 'Z', sizeof small);
    assert_int_equal(clnorm_desc_check(&bad[0].desc, small, 0), CLNORM_INVALID_ARGUMENT);
    for (size_t i = 0; i < sizeof small; i++)
        assert_int_equal(small[i], 'Z');
}

/* ------------------------------------------------------------------------------------------ */
/* Plan creation                                                                               */

static void plan_expect_fail(const clnorm_desc *d, clnorm_strategy strategy, int with,
                             clnorm_status want, const char *field, const char *what)
{
    clnorm_plan *plan = NOT_NULL_PLAN;
    const clnorm_status st = with ? clnorm_plan_create_with(g_ctx, d, strategy, &plan)
                                  : clnorm_plan_create(g_ctx, d, &plan);
    if (st == CLNORM_OK)
        clnorm_plan_free(plan);
    char label[160];
    snprintf(label, sizeof label, "plan_create%s(%s): %s", with ? "_with" : "",
             with ? clnorm_strategy_name(strategy) : "", what);
    expect_status(st, want, g_ctx, field, label);
    if (plan != NULL)
        fail_msg("%s: *plan is not NULL after a failure", label);
}

/* Whether the context's device has cl_khr_fp64 (what F64 plans need). */
static int device_has_fp64(clnorm_ctx *ctx)
{
    cl_device_id dev = NULL;
    char ext[8192] = "";
    if (clGetCommandQueueInfo(clnorm_get_queue(ctx), CL_QUEUE_DEVICE, sizeof dev, &dev, NULL) !=
            CL_SUCCESS ||
        clGetDeviceInfo(dev, CL_DEVICE_EXTENSIONS, sizeof ext - 1, ext, NULL) != CL_SUCCESS)
        fail_msg("cannot query the device's extensions");
    return strstr(ext, "cl_khr_fp64") != NULL;
}

static void test_plan_create_errors(void **state)
{
    (void)state;
    if (g_ctx == NULL)
        skip();
    clnorm_desc good;
    clnorm_desc_init(&good, CLNORM_LAYER, 3, 10);
    clnorm_plan *plan = NOT_NULL_PLAN;

    assert_int_equal(clnorm_plan_create(NULL, &good, &plan), CLNORM_INVALID_ARGUMENT);
    assert_null(plan);
    plan = NOT_NULL_PLAN;
    assert_int_equal(clnorm_plan_create_with(NULL, &good, CLNORM_STRATEGY_AUTO, &plan),
                     CLNORM_INVALID_ARGUMENT);
    assert_null(plan);
    plan_expect_fail(NULL, CLNORM_STRATEGY_AUTO, 0, CLNORM_INVALID_ARGUMENT, NULL, "NULL desc");
    expect_status(clnorm_plan_create(g_ctx, &good, NULL), CLNORM_INVALID_ARGUMENT, g_ctx, NULL,
                  "plan_create(NULL plan pointer)");
    plan_expect_fail(&good, (clnorm_strategy)99, 1, CLNORM_INVALID_ARGUMENT, NULL,
                     "strategy 99");
    plan_expect_fail(&good, (clnorm_strategy)-1, 1, CLNORM_INVALID_ARGUMENT, NULL,
                     "strategy -1");

    bad_desc bad[MAX_BAD];
    const size_t n = make_bad_descs(bad);
    const int dev = tu_has_device(g_ctx);
    for (size_t i = 0; i < n; i++) {
        plan_expect_fail(&bad[i].desc, CLNORM_STRATEGY_AUTO, 0, CLNORM_INVALID_ARGUMENT,
                         bad[i].field, bad[i].what);
        for (int s = 0; dev && s < TU_NUM_STRATEGIES; s++)
            plan_expect_fail(&bad[i].desc, tu_strategies[s], 1, CLNORM_INVALID_ARGUMENT,
                             bad[i].field, bad[i].what);
    }

    /* F64 needs cl_khr_fp64: a device without it says CLNORM_UNSUPPORTED. */
    if (dev && !device_has_fp64(g_ctx)) {
        clnorm_desc d = good;
        d.dtype = CLNORM_F64;
        plan_expect_fail(&d, CLNORM_STRATEGY_AUTO, 0, CLNORM_UNSUPPORTED, NULL,
                         "F64 without cl_khr_fp64");
        for (int s = 0; s < TU_NUM_STRATEGIES; s++)
            plan_expect_fail(&d, tu_strategies[s], 1, CLNORM_UNSUPPORTED, NULL,
                             "F64 without cl_khr_fp64");
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Host-pointer API                                                                            */

#define R 3
#define C 10

/* Host outputs with sentinels, checked after every failing call. */
typedef struct {
    float y[R * 16 + TU_PAD], mean[R + TU_PAD], rstd[R + TU_PAD];
} host_out;

static void host_out_reset(host_out *o)
{
    tu_fill_bits(o->y, COUNT(o->y), TU_SENTINEL_OUT_BITS);
    tu_fill_bits(o->mean, COUNT(o->mean), TU_SENTINEL_OUT_BITS);
    tu_fill_bits(o->rstd, COUNT(o->rstd), TU_SENTINEL_OUT_BITS);
}

static void host_out_untouched(const host_out *o, const char *what)
{
    size_t bad = tu_count_not_bits(o->y, COUNT(o->y), TU_SENTINEL_OUT_BITS, "y");
    bad += tu_count_not_bits(o->mean, COUNT(o->mean), TU_SENTINEL_OUT_BITS, "mean");
    bad += tu_count_not_bits(o->rstd, COUNT(o->rstd), TU_SENTINEL_OUT_BITS, "rstd");
    if (bad)
        fail_msg("%s: a failing call wrote %zu output elements", what, bad);
}

static clnorm_plan *make_plan(clnorm_kind kind, size_t rows, unsigned flags, size_t xs,
                              size_t ys, clnorm_strategy strategy)
{
    clnorm_desc d;
    clnorm_desc_init(&d, kind, rows, C);
    d.flags = flags;
    d.x_stride = xs;
    d.y_stride = ys;
    return tu_plan(g_ctx, &d, strategy);
}

/* Error paths of clnorm_forward_host on one strategy (AUTO on a context without device). */
static void host_errors_on(clnorm_strategy strategy)
{
    float x[R * 16], g[C], b[C];
    tu_rng rng;
    tu_rng_seed(&rng, 1);
    tu_fill_normal(&rng, x, COUNT(x), 0.0, 1.0);
    tu_fill_normal(&rng, g, C, 1.0, 0.5);
    tu_fill_normal(&rng, b, C, 0.0, 0.5);
    host_out o;
    const unsigned ALL = CLNORM_SAVE_STATS, NONE = CLNORM_NO_GAMMA | CLNORM_NO_BETA;
    clnorm_plan *full = make_plan(CLNORM_LAYER, R, ALL, 0, 0, strategy);
    clnorm_plan *bare = make_plan(CLNORM_LAYER, R, NONE, 0, 0, strategy);
    clnorm_plan *rms = make_plan(CLNORM_RMS, R, ALL, 0, 0, strategy);
    clnorm_plan *strided = make_plan(CLNORM_LAYER, R, 0, C + 1, C + 2, strategy);
    clnorm_plan *empty = make_plan(CLNORM_LAYER, 0, ALL, 0, 0, strategy);

#define HOST_FAIL(call, want, word, label)                                                     \
    do {                                                                                       \
        host_out_reset(&o);                                                                    \
        expect_status(call, want, g_ctx, word, label);                                         \
        host_out_untouched(&o, label);                                                         \
    } while (0)
    host_out_reset(&o);
    assert_int_equal(clnorm_forward_host(NULL, x, o.y, g, b, o.mean, o.rstd),
                     CLNORM_INVALID_ARGUMENT);
    host_out_untouched(&o, "NULL plan");
    HOST_FAIL(clnorm_forward_host(full, NULL, o.y, g, b, o.mean, o.rstd),
              CLNORM_INVALID_ARGUMENT, NULL, "NULL x");
    HOST_FAIL(clnorm_forward_host(full, x, NULL, g, b, o.mean, o.rstd), CLNORM_INVALID_ARGUMENT,
              NULL, "NULL y");
    HOST_FAIL(clnorm_forward_host(full, x, o.y, NULL, b, o.mean, o.rstd),
              CLNORM_INVALID_ARGUMENT, "gamma", "gamma missing");
    HOST_FAIL(clnorm_forward_host(full, x, o.y, g, NULL, o.mean, o.rstd),
              CLNORM_INVALID_ARGUMENT, "beta", "beta missing");
    HOST_FAIL(clnorm_forward_host(bare, x, o.y, g, NULL, NULL, NULL), CLNORM_INVALID_ARGUMENT,
              "gamma", "gamma given with NO_GAMMA");
    HOST_FAIL(clnorm_forward_host(bare, x, o.y, NULL, b, NULL, NULL), CLNORM_INVALID_ARGUMENT,
              "beta", "beta given with NO_BETA");
    HOST_FAIL(clnorm_forward_host(full, x, o.y, g, b, NULL, o.rstd), CLNORM_INVALID_ARGUMENT,
              "mean", "mean missing with SAVE_STATS");
    HOST_FAIL(clnorm_forward_host(full, x, o.y, g, b, o.mean, NULL), CLNORM_INVALID_ARGUMENT,
              "rstd", "rstd missing with SAVE_STATS");
    HOST_FAIL(clnorm_forward_host(rms, x, o.y, g, b, o.mean, o.rstd), CLNORM_INVALID_ARGUMENT,
              "mean", "mean given for RMS");
    HOST_FAIL(clnorm_forward_host(rms, x, o.y, g, b, NULL, NULL), CLNORM_INVALID_ARGUMENT,
              "rstd", "rstd missing for RMS with SAVE_STATS");
    HOST_FAIL(clnorm_forward_host(bare, x, o.y, NULL, NULL, o.mean, NULL),
              CLNORM_INVALID_ARGUMENT, "mean", "mean given without SAVE_STATS");
    HOST_FAIL(clnorm_forward_host(bare, x, o.y, NULL, NULL, NULL, o.rstd),
              CLNORM_INVALID_ARGUMENT, "rstd", "rstd given without SAVE_STATS");
    /* y overlapping x without being x. */
    host_out_reset(&o);
    memcpy(o.y, x, sizeof x);
    expect_status(clnorm_forward_host(bare, o.y, o.y + 1, NULL, NULL, NULL, NULL),
                  CLNORM_INVALID_ARGUMENT, g_ctx, NULL, "x and y overlap");
    assert_int_equal(tu_cmp_bits(o.y, x, COUNT(x), "overlapping input after a failure"), 0);
    /* In place needs equal strides. */
    host_out_reset(&o);
    memcpy(o.y, x, sizeof x);
    expect_status(clnorm_forward_host(strided, o.y, o.y, g, b, NULL, NULL),
                  CLNORM_INVALID_ARGUMENT, g_ctx, NULL, "in place, different strides");
    assert_int_equal(tu_cmp_bits(o.y, x, COUNT(x), "in-place input after a failure"), 0);
#undef HOST_FAIL

    /* rows = 0: success, nothing written. */
    host_out_reset(&o);
    assert_int_equal(clnorm_forward_host(empty, x, o.y, g, b, o.mean, o.rstd), CLNORM_OK);
    host_out_untouched(&o, "rows = 0");

    /* The plans still work after all those failures. */
    host_out_reset(&o);
    assert_int_equal(clnorm_forward_host(full, x, o.y, g, b, o.mean, o.rstd), CLNORM_OK);
    clnorm_plan_free(full);
    clnorm_plan_free(bare);
    clnorm_plan_free(rms);
    clnorm_plan_free(strided);
    clnorm_plan_free(empty);
}

static void test_forward_host_errors(void **state)
{
    (void)state;
    if (g_ctx == NULL)
        skip();
    host_errors_on(CLNORM_STRATEGY_AUTO);
    for (int s = 0; tu_has_device(g_ctx) && s < TU_NUM_STRATEGIES; s++)
        host_errors_on(tu_strategies[s]);
}

/* ------------------------------------------------------------------------------------------ */
/* Device buffers                                                                              */

/* The buffers of one clnorm_forward call. */
typedef struct {
    cl_mem x, y, g, b, m, r;
    size_t xo, yo, go, bo, mo, ro;
    cl_command_queue queue;
    cl_uint nwait;
    const cl_event *wait;
} cl_args;

static clnorm_status call_cl(clnorm_plan *plan, const cl_args *a)
{
    return clnorm_forward(plan, a->x, a->xo, a->y, a->yo, a->g, a->go, a->b, a->bo, a->m, a->mo,
                          a->r, a->ro, a->queue, a->nwait, a->wait, NULL);
}

/* Every output buffer of the test, all pre-filled with sentinels. */
typedef struct {
    cl_mem mem;
    size_t n;
} out_buf;

static void outputs_untouched(cl_command_queue q, const out_buf *outs, size_t n,
                              const char *what)
{
    clFinish(q);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        float host[64];
        assert_true(outs[i].n <= COUNT(host));
        tu_read(q, outs[i].mem, host, outs[i].n);
        bad += tu_count_not_bits(host, outs[i].n, TU_SENTINEL_OUT_BITS, what);
    }
    if (bad)
        fail_msg("%s: a failing clnorm_forward wrote %zu output elements", what, bad);
}

static void cl_errors_on(clnorm_strategy strategy)
{
    cl_context context = clnorm_get_cl_context(g_ctx);
    cl_command_queue q = clnorm_get_queue(g_ctx);
    const size_t N = R * C;
    float x[R * C], g[C];
    tu_rng rng;
    tu_rng_seed(&rng, 2);
    tu_fill_normal(&rng, x, N, 0.0, 1.0);
    tu_fill_normal(&rng, g, C, 1.0, 0.5);

    /* Exactly sized buffers (so that offset 1 already overruns) and one-short ones. */
    cl_mem bx = tu_buffer(context, q, x, N, 0), bx_s = tu_buffer(context, q, x, N - 1, 0);
    cl_mem bg = tu_buffer(context, q, g, C, 0), bg_s = tu_buffer(context, q, g, C - 1, 0);
    cl_mem bb = tu_buffer(context, q, g, C, 0), bb_s = tu_buffer(context, q, g, C - 1, 0);
    const uint32_t S = TU_SENTINEL_OUT_BITS;
    cl_mem by = tu_buffer(context, q, NULL, N, S), by_s = tu_buffer(context, q, NULL, N - 1, S);
    cl_mem bm = tu_buffer(context, q, NULL, R, S), bm_s = tu_buffer(context, q, NULL, R - 1, S);
    cl_mem br = tu_buffer(context, q, NULL, R, S), br_s = tu_buffer(context, q, NULL, R - 1, S);
    cl_mem bxy = tu_buffer(context, q, NULL, 2 * N, S); /* room for x and y side by side */
    const out_buf outs[] = {{by, N},     {by_s, N - 1}, {bm, R},     {bm_s, R - 1},
                            {br, R},     {br_s, R - 1}, {bxy, 2 * N}};

    const unsigned ALL = CLNORM_SAVE_STATS, NONE = CLNORM_NO_GAMMA | CLNORM_NO_BETA;
    clnorm_plan *full = make_plan(CLNORM_LAYER, R, ALL, 0, 0, strategy);
    clnorm_plan *bare = make_plan(CLNORM_LAYER, R, NONE, 0, 0, strategy);
    clnorm_plan *rms = make_plan(CLNORM_RMS, R, ALL, 0, 0, strategy);
    clnorm_plan *strided = make_plan(CLNORM_LAYER, 2, NONE, C + 1, C + 2, strategy);
    clnorm_plan *empty = make_plan(CLNORM_LAYER, 0, ALL, 0, 0, strategy);

    const cl_args good = {bx, by, bg, bb, bm, br, 0, 0, 0, 0, 0, 0, NULL, 0, NULL};
    cl_args a;
    char label[160];
#define CL_FAIL(plan, mutate, want, word, text)                                                \
    do {                                                                                       \
        a = good;                                                                              \
        mutate;                                                                                \
        snprintf(label, sizeof label, "%s: %s", clnorm_strategy_name(strategy), text);         \
        expect_status(call_cl(plan, &a), want, g_ctx, word, label);                            \
        outputs_untouched(q, outs, COUNT(outs), label);                                        \
    } while (0)
    const clnorm_status INV = CLNORM_INVALID_ARGUMENT, SMALL = CLNORM_BUFFER_TOO_SMALL;

    a = good;
    assert_int_equal(call_cl(NULL, &a), INV);
    outputs_untouched(q, outs, COUNT(outs), "NULL plan");
    CL_FAIL(full, a.x = NULL, INV, NULL, "NULL x");
    CL_FAIL(full, a.y = NULL, INV, NULL, "NULL y");
    CL_FAIL(full, a.g = NULL, INV, "gamma", "gamma missing");
    CL_FAIL(full, a.b = NULL, INV, "beta", "beta missing");
    CL_FAIL(bare, (a.b = NULL, a.m = NULL, a.r = NULL), INV, "gamma", "gamma given, NO_GAMMA");
    CL_FAIL(bare, (a.g = NULL, a.m = NULL, a.r = NULL), INV, "beta", "beta given, NO_BETA");
    CL_FAIL(full, a.m = NULL, INV, "mean", "mean missing with SAVE_STATS");
    CL_FAIL(full, a.r = NULL, INV, "rstd", "rstd missing with SAVE_STATS");
    CL_FAIL(rms, (void)0, INV, "mean", "mean given for RMS");
    CL_FAIL(rms, (a.m = NULL, a.r = NULL), INV, "rstd", "rstd missing for RMS");

    /* Too small: one element short at offset 0, and exact size at offset 1. */
    CL_FAIL(full, a.x = bx_s, SMALL, NULL, "x one element short");
    CL_FAIL(full, a.xo = 1, SMALL, NULL, "x offset past the end");
    CL_FAIL(full, a.y = by_s, SMALL, NULL, "y one element short");
    CL_FAIL(full, a.yo = 1, SMALL, NULL, "y offset past the end");
    CL_FAIL(full, a.g = bg_s, SMALL, "gamma", "gamma one element short");
    CL_FAIL(full, a.go = 1, SMALL, "gamma", "gamma offset past the end");
    CL_FAIL(full, a.b = bb_s, SMALL, "beta", "beta one element short");
    CL_FAIL(full, a.bo = 1, SMALL, "beta", "beta offset past the end");
    CL_FAIL(full, a.m = bm_s, SMALL, "mean", "mean one element short");
    CL_FAIL(full, a.mo = 1, SMALL, "mean", "mean offset past the end");
    CL_FAIL(full, a.r = br_s, SMALL, "rstd", "rstd one element short");
    CL_FAIL(full, a.ro = 1, SMALL, "rstd", "rstd offset past the end");
    /* An offset so large that offset + extent wraps around. */
    CL_FAIL(full, a.yo = SIZE_MAX - 5, SMALL, NULL, "y offset wraps around");
    CL_FAIL(full, a.xo = SIZE_MAX / 2, SMALL, NULL, "x offset * 4 overflows");

    CL_FAIL(bare, (a.g = a.b = a.r = NULL), INV, "mean", "mean given without SAVE_STATS");
    CL_FAIL(bare, (a.g = a.b = a.m = NULL), INV, "rstd", "rstd given without SAVE_STATS");

    /* In place (same cl_mem, same offset) with x_stride != y_stride. */
    CL_FAIL(strided, (a.y = a.x = by, a.g = a.b = a.m = a.r = NULL), INV, NULL,
            "in place with different strides");
    /* x and y in one cl_mem, overlapping at different offsets. */
    CL_FAIL(bare, (a.y = a.x = bxy, a.yo = 7, a.g = a.b = a.m = a.r = NULL), INV, NULL,
            "x and y overlap in one cl_mem");

    /* A wait list count without events, and events without a count. */
    a = good;
    a.nwait = 1;
    {
        const clnorm_status st = call_cl(full, &a);
        if (st != INV && st != CL_INVALID_EVENT_WAIT_LIST)
            fail_msg("1 wait event, NULL list: %d (%s)", st, clnorm_status_string(st));
        outputs_untouched(q, outs, COUNT(outs), "NULL wait list");
    }
    {
        cl_int err = CL_SUCCESS;
        cl_event user = clCreateUserEvent(context, &err);
        assert_int_equal(err, CL_SUCCESS);
        clSetUserEventStatus(user, CL_COMPLETE);
        a = good;
        a.wait = &user;
        const clnorm_status st = call_cl(full, &a);
        clReleaseEvent(user);
        if (st != INV && st != CL_INVALID_EVENT_WAIT_LIST)
            fail_msg("0 wait events, non-NULL list: %d (%s)", st, clnorm_status_string(st));
        outputs_untouched(q, outs, COUNT(outs), "wait list without a count");
    }
    {
        /* A NULL entry, and an event of another cl_context (PoCL runs such calls without
         * waiting unless the library refuses them). */
        cl_event none = NULL;
        a = good;
        a.nwait = 1;
        a.wait = &none;
        clnorm_status st = call_cl(full, &a);
        if (st != INV)
            fail_msg("a NULL wait event: %d (%s)", st, clnorm_status_string(st));
        outputs_untouched(q, outs, COUNT(outs), "NULL wait event");
        cl_int err = CL_SUCCESS;
        cl_device_id dev = NULL;
        assert_int_equal(clGetCommandQueueInfo(q, CL_QUEUE_DEVICE, sizeof dev, &dev, NULL),
                         CL_SUCCESS);
        cl_context other = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
        assert_int_equal(err, CL_SUCCESS);
        cl_event foreign = clCreateUserEvent(other, &err);
        assert_int_equal(err, CL_SUCCESS);
        clSetUserEventStatus(foreign, CL_COMPLETE);
        a.wait = &foreign;
        st = call_cl(full, &a);
        if (st != INV || !tu_mentions(clnorm_last_error(g_ctx), "cl_context"))
            fail_msg("a wait event of another context: %d (%s) \"%s\"", st,
                     clnorm_status_string(st), clnorm_last_error(g_ctx));
        outputs_untouched(q, outs, COUNT(outs), "wait event of another context");
        clReleaseEvent(foreign);
        clReleaseContext(other);
    }

    /* A plan of the reference strategy has no kernels: host API only. */
    {
        clnorm_desc d;
        clnorm_desc_init(&d, CLNORM_LAYER, R, C);
        d.flags = ALL;
        clnorm_plan *ref = NULL;
        if (clnorm_plan_create_with(g_ctx, &d, CLNORM_STRATEGY_REFERENCE, &ref) == CLNORM_OK) {
            a = good;
            expect_status(call_cl(ref, &a), CLNORM_UNSUPPORTED, g_ctx, NULL,
                          "cl_mem call on a reference plan");
            outputs_untouched(q, outs, COUNT(outs), "cl_mem call on a reference plan");
            clnorm_plan_free(ref);
        }
    }

    /* A queue of another cl_context (on the same device). */
    {
        cl_device_id dev = NULL;
        cl_int err = clGetCommandQueueInfo(q, CL_QUEUE_DEVICE, sizeof dev, &dev, NULL);
        assert_int_equal(err, CL_SUCCESS);
        cl_context other = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
        assert_int_equal(err, CL_SUCCESS);
        cl_command_queue oq = clCreateCommandQueue(other, dev, 0, &err);
        assert_int_equal(err, CL_SUCCESS);
        a = good;
        a.queue = oq;
        const clnorm_status st = call_cl(full, &a);
        clFinish(oq);
        if (st != INV && st != CL_INVALID_CONTEXT)
            fail_msg("queue of another context: %d (%s)", st, clnorm_status_string(st));
        const char *msg = clnorm_last_error(g_ctx);
        assert_true(msg != NULL && msg[0] != '\0');
        outputs_untouched(q, outs, COUNT(outs), "queue of another context");
        /* A buffer of the other context, as x and as y. */
        cl_mem foreign = tu_buffer(other, oq, x, N, 0);
        a = good;
        a.x = foreign;
        expect_status(call_cl(full, &a), INV, g_ctx, NULL, "x of another cl_context");
        outputs_untouched(q, outs, COUNT(outs), "x of another cl_context");
        a = good;
        a.y = foreign;
        expect_status(call_cl(full, &a), INV, g_ctx, NULL, "y of another cl_context");
        outputs_untouched(q, outs, COUNT(outs), "y of another cl_context");
        clReleaseMemObject(foreign);
        clReleaseCommandQueue(oq);
        clReleaseContext(other);
    }
#undef CL_FAIL

    /* rows = 0: success, nothing written (even with the one-short output buffers). */
    a = good;
    a.y = by_s;
    a.m = bm_s;
    a.r = br_s;
    cl_event ev = NULL;
    assert_int_equal(clnorm_forward(empty, a.x, 0, a.y, 0, a.g, 0, a.b, 0, a.m, 0, a.r, 0, NULL,
                                    0, NULL, &ev),
                     CLNORM_OK);
    if (ev != NULL) { /* an event, if any, must still complete */
        assert_int_equal(clWaitForEvents(1, &ev), CL_SUCCESS);
        clReleaseEvent(ev);
    }
    outputs_untouched(q, outs, COUNT(outs), "rows = 0");

    /* The plan still runs after all those failures. */
    a = good;
    assert_int_equal(call_cl(full, &a), CLNORM_OK);
    clFinish(q);

    /* x and y side by side in one cl_mem, not overlapping: allowed, and right. */
    {
        assert_int_equal(clEnqueueWriteBuffer(q, bxy, CL_TRUE, 0, N * sizeof(float), x, 0,
                                              NULL, NULL),
                         CL_SUCCESS);
        a = good;
        a.x = a.y = bxy;
        a.yo = N;
        a.g = a.b = a.m = a.r = NULL;
        assert_int_equal(call_cl(bare, &a), CLNORM_OK);
        float got[2 * R * C], want[R * C];
        tu_read(q, bxy, got, 2 * N);
        clnorm_desc d = *clnorm_plan_desc(bare);
        assert_int_equal(clnorm_ref_forward(&d, x, want, NULL, NULL, NULL, NULL), CLNORM_OK);
        assert_int_equal(tu_cmp_bits(got, x, N, "x beside y"), 0);
        assert_int_equal(tu_cmp_f32(got + N, C, want, C, R, C, 2e-5, 2e-5, "y beside x"), 0);
    }

    clnorm_plan_free(full);
    clnorm_plan_free(bare);
    clnorm_plan_free(rms);
    clnorm_plan_free(strided);
    clnorm_plan_free(empty);
    cl_mem all[] = {bx, bx_s, bg, bg_s, bb, bb_s, by, by_s, bm, bm_s, br, br_s, bxy};
    for (size_t i = 0; i < COUNT(all); i++)
        clReleaseMemObject(all[i]);
}

static void test_forward_cl_errors(void **state)
{
    (void)state;
    if (!tu_has_device(g_ctx))
        skip();
    for (int s = 0; s < TU_NUM_STRATEGIES; s++)
        cl_errors_on(tu_strategies[s]);
}

/* ------------------------------------------------------------------------------------------ */
/* The reference validates on its own (it is also the fallback of a context without device). */

static void test_ref_errors(void **state)
{
    (void)state;
    float x[R * 16], g[C], b[C];
    tu_rng rng;
    tu_rng_seed(&rng, 3);
    tu_fill_normal(&rng, x, COUNT(x), 0.0, 1.0);
    tu_fill_normal(&rng, g, C, 1.0, 0.5);
    tu_fill_normal(&rng, b, C, 0.0, 0.5);
    host_out o;
    clnorm_desc full, bare, rms, strided;
    clnorm_desc_init(&full, CLNORM_LAYER, R, C);
    full.flags = CLNORM_SAVE_STATS;
    bare = full;
    bare.flags = CLNORM_NO_GAMMA | CLNORM_NO_BETA;
    rms = full;
    rms.kind = CLNORM_RMS;
    strided = bare;
    strided.x_stride = C + 1;
    strided.y_stride = C + 2;
    const clnorm_status INV = CLNORM_INVALID_ARGUMENT;

#define REF_FAIL(call, want, label)                                                            \
    do {                                                                                       \
        host_out_reset(&o);                                                                    \
        expect_status(call, want, NULL, NULL, label);                                          \
        host_out_untouched(&o, label);                                                         \
    } while (0)
    REF_FAIL(clnorm_ref_forward(NULL, x, o.y, g, b, o.mean, o.rstd), INV, "NULL desc");
    REF_FAIL(clnorm_ref_forward(&full, NULL, o.y, g, b, o.mean, o.rstd), INV, "NULL x");
    REF_FAIL(clnorm_ref_forward(&full, x, NULL, g, b, o.mean, o.rstd), INV, "NULL y");
    REF_FAIL(clnorm_ref_forward(&full, x, o.y, NULL, b, o.mean, o.rstd), INV, "gamma missing");
    REF_FAIL(clnorm_ref_forward(&full, x, o.y, g, NULL, o.mean, o.rstd), INV, "beta missing");
    REF_FAIL(clnorm_ref_forward(&bare, x, o.y, g, NULL, NULL, NULL), INV, "gamma, NO_GAMMA");
    REF_FAIL(clnorm_ref_forward(&bare, x, o.y, NULL, b, NULL, NULL), INV, "beta, NO_BETA");
    REF_FAIL(clnorm_ref_forward(&full, x, o.y, g, b, NULL, o.rstd), INV, "mean missing");
    REF_FAIL(clnorm_ref_forward(&full, x, o.y, g, b, o.mean, NULL), INV, "rstd missing");
    REF_FAIL(clnorm_ref_forward(&rms, x, o.y, g, b, o.mean, o.rstd), INV, "mean for RMS");
    REF_FAIL(clnorm_ref_forward(&bare, x, o.y, NULL, NULL, o.mean, NULL), INV,
             "mean without SAVE_STATS");
    REF_FAIL(clnorm_ref_forward(&bare, x, o.y, NULL, NULL, NULL, o.rstd), INV,
             "rstd without SAVE_STATS");
    host_out_reset(&o);
    memcpy(o.y, x, sizeof x);
    expect_status(clnorm_ref_forward(&bare, o.y, o.y + 3, NULL, NULL, NULL, NULL), INV, NULL,
                  NULL, "ref x and y overlap");
    assert_int_equal(tu_cmp_bits(o.y, x, COUNT(x), "overlapping input after a failure"), 0);
    host_out_reset(&o);
    memcpy(o.y, x, sizeof x);
    expect_status(clnorm_ref_forward(&strided, o.y, o.y, NULL, NULL, NULL, NULL), INV, NULL,
                  NULL, "ref in place, different strides");
    assert_int_equal(tu_cmp_bits(o.y, x, COUNT(x), "in-place input after a failure"), 0);

    bad_desc bad[MAX_BAD];
    const size_t n = make_bad_descs(bad);
    for (size_t i = 0; i < n; i++)
        REF_FAIL(clnorm_ref_forward(&bad[i].desc, x, o.y, g, b, o.mean, o.rstd), INV,
                 bad[i].what);
#undef REF_FAIL
}

/* ------------------------------------------------------------------------------------------ */
/* Contexts                                                                                    */

static void expect_no_device(const char *spec, int via_env)
{
    clnorm_ctx *ctx = (clnorm_ctx *)&g_ctx; /* must come back NULL */
    clnorm_status st;
    if (via_env) {
        setenv("CLNORM_DEVICE", spec, 1);
        st = clnorm_create(NULL, &ctx);
    } else {
        st = clnorm_create(spec, &ctx);
    }
    if (st == CLNORM_OK)
        clnorm_free(ctx);
    if (st != CLNORM_NO_DEVICE)
        fail_msg("clnorm_create(%s\"%s\") = %d (%s), expected CLNORM_NO_DEVICE",
                 via_env ? "CLNORM_DEVICE=" : "", spec, st, clnorm_status_string(st));
    if (ctx != NULL)
        fail_msg("clnorm_create(\"%s\") failed but left *ctx non-NULL", spec);
}

static void test_create_errors(void **state)
{
    (void)state;
    /* Keep whatever CLNORM_DEVICE the run was given, and put it back. */
    const char *env = getenv("CLNORM_DEVICE");
    char *saved = env ? strdup(env) : NULL;
    static const char *specs[] = {"99:0", "0:99", "nonexistent-device-xyz"};
    for (size_t i = 0; i < COUNT(specs); i++) {
        expect_no_device(specs[i], 0);
        expect_no_device(specs[i], 1);
    }
    if (saved) {
        setenv("CLNORM_DEVICE", saved, 1);
        free(saved);
    } else {
        unsetenv("CLNORM_DEVICE");
    }

    assert_int_equal(clnorm_create(NULL, NULL), CLNORM_INVALID_ARGUMENT);
    clnorm_ctx *ctx = (clnorm_ctx *)&g_ctx;
    assert_int_not_equal(clnorm_create_from_queue(NULL, &ctx), CLNORM_OK);
    assert_null(ctx);
    size_t count = 0;
    assert_int_equal(clnorm_list_devices(NULL, 0, NULL), CLNORM_INVALID_ARGUMENT);
    assert_int_equal(clnorm_list_devices(NULL, 3, &count), CLNORM_INVALID_ARGUMENT);
}

/* ------------------------------------------------------------------------------------------ */
/* Status strings and destroy functions                                                        */

static void test_status_strings(void **state)
{
    (void)state;
    /* Every library code, OpenCL's CL_OUT_OF_RESOURCES (-5) and CL_INVALID_VALUE (-30), and
     * two codes nobody defines: all non-NULL, non-empty, and distinct from one another. */
    static const clnorm_status codes[] = {
        CLNORM_OK,          CLNORM_INVALID_ARGUMENT, CLNORM_BUFFER_TOO_SMALL,
        CLNORM_UNSUPPORTED, CLNORM_OUT_OF_MEMORY,    CLNORM_BUILD_FAILURE,
        CLNORM_NO_DEVICE,   CLNORM_OPENCL_ERROR,     -5,
        -30,                12345};
    for (size_t i = 0; i < COUNT(codes); i++) {
        const char *s = clnorm_status_string(codes[i]);
        assert_non_null(s);
        assert_true(s[0] != '\0');
        for (size_t j = 0; j < i; j++)
            if (strcmp(s, clnorm_status_string(codes[j])) == 0)
                fail_msg("status %d and %d share the string \"%s\"", codes[i], codes[j], s);
    }
    /* Extension codes (CL_PLATFORM_NOT_FOUND_KHR = -1001) pass through too: some phrase. */
    assert_non_null(clnorm_status_string(-1001));
    assert_true(clnorm_status_string(-1001)[0] != '\0');
    const char *unknown = clnorm_status_string(-4321);
    assert_non_null(unknown);
    assert_true(unknown[0] != '\0');
    for (size_t i = 0; i + 1 < COUNT(codes); i++) /* all but the other unknown one */
        assert_true(strcmp(unknown, clnorm_status_string(codes[i])) != 0);
}

static void test_destroy_null(void **state)
{
    (void)state;
    clnorm_free(NULL);
    clnorm_plan_free(NULL);
}

static int group_setup(void **state)
{
    (void)state;
    if (clnorm_create(NULL, &g_ctx) != CLNORM_OK)
        g_ctx = NULL;
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
        cmocka_unit_test(test_status_strings),
        cmocka_unit_test(test_destroy_null),
        cmocka_unit_test(test_desc_check),
        cmocka_unit_test(test_plan_create_errors),
        cmocka_unit_test(test_forward_host_errors),
        cmocka_unit_test(test_forward_cl_errors),
        cmocka_unit_test(test_ref_errors),
        cmocka_unit_test(test_create_errors),
    };
    return cmocka_run_group_tests_name("errors", tests, group_setup, group_teardown);
}
