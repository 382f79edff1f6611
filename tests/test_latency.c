/*
 * test_latency.c - the latency path (src/latency.c): small plans on a CPU device run on the
 * platform's in-thread device. Registered with POCL_DEVICES="pthread basic" so that PoCL lists
 * both; everything skips where the context has no latency device (another platform, or PoCL
 * without `basic`).
 *  - The policy: which plans take it (CLNORM_LATENCY_BYTES), the switch (CLNORM_LATENCY=0),
 *    and that "cpu" still picks the multi-threaded device.
 *  - Same bits as the main device: forward and backward, layer 1 and layer 2, for LayerNorm,
 *    RMSNorm, add + LayerNorm and GroupNorm.
 *  - The queue's order: work enqueued before on the context's queue is done first, work after
 *    sees the result, a pending wait list keeps the call on the queue (and asynchronous).
 *  - Threads sharing one latency plan, through both layers.
 *  - A latency call cut into parts of rows that the host pool's threads run at once: the same
 *    bits as the main device, every slot at an offset and with strided rows, in place, mixed
 *    dtypes and per-sample modulation; its exec line says it was cut.
 */
#define _POSIX_C_SOURCE 200809L /* setenv, unsetenv */
#include "test_util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static clnorm_ctx *make_ctx(void)
{
    clnorm_ctx *ctx = NULL;
    if (clnorm_create("cpu", &ctx) != CLNORM_OK)
        return NULL;
    if (clnorm_get_backend(ctx) != CLNORM_BACKEND_OPENCL) {
        clnorm_free(ctx);
        return NULL;
    }
    return ctx;
}

/* A plan of desc and whether it runs on the latency device (its device differs from the
 * context's). */
static clnorm_plan *plan_of(clnorm_ctx *ctx, const clnorm_desc *d, int *latency)
{
    clnorm_plan *p = NULL;
    if (clnorm_plan_create(ctx, d, &p) != CLNORM_OK)
        fail_msg("plan: %s", clnorm_last_error(ctx));
    *latency = strcmp(clnorm_plan_device_name(p), clnorm_device_name(ctx)) != 0 &&
               strstr(clnorm_device_name(ctx), clnorm_plan_device_name(p)) == NULL;
    return p;
}

/* A context with a latency device, or skip. */
static clnorm_ctx *latency_ctx(void)
{
    unsetenv("CLNORM_LATENCY_BYTES");
    clnorm_ctx *ctx = make_ctx();
    if (!ctx)
        skip();
    clnorm_desc d;
    clnorm_desc_init(&d, CLNORM_LAYER, 1, 64);
    int latency = 0;
    clnorm_plan_free(plan_of(ctx, &d, &latency));
    if (!latency) {
        clnorm_free(ctx);
        skip();
    }
    return ctx;
}

static void test_policy(void **state)
{
    (void)state;
    clnorm_ctx *ctx = latency_ctx();
    /* "cpu" picks the multi-threaded device, though PoCL lists `basic` first. */
    assert_null(strstr(clnorm_device_name(ctx), "/ basic"));
    clnorm_desc small, big;
    clnorm_desc_init(&small, CLNORM_LAYER, 1, 768);
    clnorm_desc_init(&big, CLNORM_LAYER, 4096, 1024); /* 16 MiB of x */
    int lat = 0;
    clnorm_plan *p = plan_of(ctx, &small, &lat);
    assert_true(lat);
    assert_non_null(strstr(clnorm_plan_device_name(p), "basic"));
    clnorm_plan_free(p);
    p = plan_of(ctx, &big, &lat);
    assert_false(lat);
    assert_string_equal(clnorm_plan_device_name(p), clnorm_device_name(ctx));
    clnorm_plan_free(p);
    /* The operations' own defaults: 1 MiB, GroupNorm 2 MiB in NHWC without SiLU (1 MiB with
     * it), 4 MiB in NCHW. x of 1x320x48x48 float32 is 2.81 MiB, of 1x320x64x64 5 MiB. */
    static const struct {
        clnorm_layout layout;
        unsigned silu;
        size_t hw;
        int want;
    } gn[] = {{CLNORM_NCHW, 0, 48 * 48, 1},        {CLNORM_NCHW, CLNORM_SILU, 48 * 48, 1},
              {CLNORM_NCHW, 0, 64 * 64, 0},        {CLNORM_NHWC, 0, 48 * 48, 0},
              {CLNORM_NHWC, 0, 32 * 32, 1},        {CLNORM_NHWC, CLNORM_SILU, 32 * 32, 0}};
    for (size_t i = 0; i < sizeof gn / sizeof gn[0]; i++) {
        clnorm_desc g;
        clnorm_desc_init(&g, CLNORM_GROUP, 1, 320);
        g.spatial = gn[i].hw;
        g.groups = 32;
        g.layout = gn[i].layout;
        g.flags = gn[i].silu;
        clnorm_plan_free(plan_of(ctx, &g, &lat));
        if (lat != gn[i].want)
            fail_msg("GroupNorm case %zu: latency plan %d, expected %d", i, lat, gn[i].want);
    }
    clnorm_desc mid;
    clnorm_desc_init(&mid, CLNORM_LAYER, 1000, 1000); /* 3.8 MiB: over the default */
    clnorm_plan_free(plan_of(ctx, &mid, &lat));
    assert_false(lat);
    /* The threshold is x's bytes: exactly at it, in; one row more, out. */
    setenv("CLNORM_LATENCY_BYTES", "6144", 1); /* 2 rows of 768 float32 */
    clnorm_desc two, three;
    clnorm_desc_init(&two, CLNORM_LAYER, 2, 768);
    clnorm_desc_init(&three, CLNORM_LAYER, 3, 768);
    clnorm_plan_free(plan_of(ctx, &two, &lat));
    assert_true(lat);
    clnorm_plan_free(plan_of(ctx, &three, &lat));
    assert_false(lat);
    setenv("CLNORM_LATENCY_BYTES", "0", 1);
    clnorm_plan_free(plan_of(ctx, &small, &lat));
    assert_false(lat);
    /* A bad value is refused at plan creation, with no plan. */
    setenv("CLNORM_LATENCY_BYTES", "12k", 1);
    p = (clnorm_plan *)&lat;
    assert_int_equal(clnorm_plan_create(ctx, &small, &p), CLNORM_INVALID_ARGUMENT);
    assert_null(p);
    assert_non_null(strstr(clnorm_last_error(ctx), "CLNORM_LATENCY_BYTES"));
    unsetenv("CLNORM_LATENCY_BYTES");
    clnorm_free(ctx);
    /* The switch: a context made with CLNORM_LATENCY=0 has no latency device at all. */
    setenv("CLNORM_LATENCY", "0", 1);
    ctx = make_ctx();
    unsetenv("CLNORM_LATENCY");
    assert_non_null(ctx);
    clnorm_plan_free(plan_of(ctx, &small, &lat));
    assert_false(lat);
    clnorm_free(ctx);
}

/* One case: a description, and its forward (and backward) through layer 2 on a latency plan
 * and on a plan of the main device (CLNORM_LATENCY_BYTES=0): the same kernels, the same
 * geometry, so the same bits. */
static void same_bits(clnorm_ctx *ctx, const clnorm_desc *d, size_t xlen, size_t plen)
{
    int lat = 0, lat0 = 1;
    clnorm_plan *pl = plan_of(ctx, d, &lat);
    setenv("CLNORM_LATENCY_BYTES", "0", 1);
    clnorm_plan *pm = plan_of(ctx, d, &lat0);
    unsetenv("CLNORM_LATENCY_BYTES");
    assert_true(lat);
    assert_false(lat0);
    tu_rng rng;
    tu_rng_seed(&rng, 5);
    float *in[4], *out[2][5];
    for (int i = 0; i < 4; i++) {
        in[i] = malloc(xlen * sizeof(float));
        assert_non_null(in[i]);
        tu_fill_normal(&rng, in[i], xlen, i == 0 ? 2.0 : 0.0, 1.0);
    }
    float *g = malloc(plen * sizeof *g), *b = malloc(plen * sizeof *b);
    assert_true(g && b);
    tu_fill_normal(&rng, g, plen, 1.0, 0.3);
    tu_fill_normal(&rng, b, plen, 0.0, 0.3);
    const size_t stats = d->kind == CLNORM_GROUP ? d->rows * d->groups : d->rows;
    const int add = d->kind == CLNORM_ADD_LAYER;
    for (int k = 0; k < 2; k++) {
        clnorm_plan *p = k ? pm : pl;
        for (int i = 0; i < 5; i++) {
            out[k][i] = calloc(xlen > plen ? xlen : plen, sizeof(float));
            assert_non_null(out[k][i]);
        }
        float *mean = d->kind == CLNORM_RMS ? NULL : calloc(stats, sizeof(float));
        float *rstd = calloc(stats, sizeof(float));
        assert_non_null(rstd);
        clnorm_host_arg fa[8] = {{CLNORM_ARG_X, in[0]}, {CLNORM_ARG_Y, out[k][0]},
                                 {CLNORM_ARG_GAMMA, g},  {CLNORM_ARG_BETA, b},
                                 {CLNORM_ARG_RSTD, rstd}};
        size_t nf = 5;
        if (mean)
            fa[nf++] = (clnorm_host_arg){CLNORM_ARG_MEAN, mean};
        if (add)
            fa[nf++] = (clnorm_host_arg){CLNORM_ARG_RESIDUAL, in[2]};
        if (clnorm_execute_host(p, CLNORM_FORWARD, fa, nf) != CLNORM_OK)
            fail_msg("forward: %s", clnorm_last_error(ctx));
        clnorm_host_arg ba[10] = {{CLNORM_ARG_X, in[0]},     {CLNORM_ARG_DY, in[1]},
                                  {CLNORM_ARG_GAMMA, g},      {CLNORM_ARG_RSTD, rstd},
                                  {CLNORM_ARG_DX, out[k][1]}, {CLNORM_ARG_DGAMMA, out[k][2]},
                                  {CLNORM_ARG_DBETA, out[k][3]}};
        size_t nb = 7;
        if (mean)
            ba[nb++] = (clnorm_host_arg){CLNORM_ARG_MEAN, mean};
        if (add)
            ba[nb++] = (clnorm_host_arg){CLNORM_ARG_RESIDUAL, in[2]};
        if (clnorm_execute_host(p, CLNORM_BACKWARD, ba, nb) != CLNORM_OK)
            fail_msg("backward: %s", clnorm_last_error(ctx));
        free(mean);
        free(rstd);
    }
    assert_int_equal(tu_cmp_bits(out[0][0], out[1][0], xlen, "y, latency vs main device"), 0);
    assert_int_equal(tu_cmp_bits(out[0][1], out[1][1], xlen, "dx"), 0);
    assert_int_equal(tu_cmp_bits(out[0][2], out[1][2], plen, "dgamma"), 0);
    assert_int_equal(tu_cmp_bits(out[0][3], out[1][3], plen, "dbeta"), 0);
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < 5; i++)
            free(out[k][i]);
    for (int i = 0; i < 4; i++)
        free(in[i]);
    free(g);
    free(b);
    clnorm_plan_free(pl);
    clnorm_plan_free(pm);
}

static void test_same_bits(void **state)
{
    (void)state;
    clnorm_ctx *ctx = latency_ctx();
    clnorm_desc d;
    const clnorm_kind kinds[] = {CLNORM_LAYER, CLNORM_RMS, CLNORM_ADD_LAYER};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        clnorm_desc_init(&d, kinds[k], 7, 300);
        d.flags = CLNORM_WITH_BACKWARD | CLNORM_SAVE_STATS;
        same_bits(ctx, &d, 7 * 300, 300);
    }
    clnorm_desc_init(&d, CLNORM_GROUP, 2, 8); /* N=2, C=8, 5x5, 4 groups */
    d.spatial = 25;
    d.groups = 4;
    d.flags = CLNORM_WITH_BACKWARD | CLNORM_SAVE_STATS;
    same_bits(ctx, &d, 2 * 8 * 25, 8);
    clnorm_free(ctx);
}

/* Layer 1 on the context's queue keeps the queue's order. */
static void test_queue_order(void **state)
{
    (void)state;
    clnorm_ctx *ctx = latency_ctx();
    const size_t rows = 3, cols = 768, n = rows * cols;
    clnorm_desc d;
    clnorm_desc_init(&d, CLNORM_LAYER, rows, cols);
    d.flags = CLNORM_NO_GAMMA | CLNORM_NO_BETA;
    int lat = 0;
    clnorm_plan *p = plan_of(ctx, &d, &lat);
    assert_true(lat);
    cl_context c = clnorm_get_cl_context(ctx);
    cl_command_queue q = clnorm_get_queue(ctx);
    tu_rng rng;
    tu_rng_seed(&rng, 9);
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y), *want = malloc(n * sizeof *want);
    assert_true(x && y && want);
    tu_fill_normal(&rng, x, n, 1.0, 2.0);
    assert_int_equal(clnorm_ref_forward(&d, x, want, NULL, NULL, NULL, NULL), CLNORM_OK);
    cl_mem xm = tu_buffer(c, q, NULL, n, 0), ym = tu_buffer(c, q, NULL, n, 0);
    /* Keep the queue busy (64 MiB fill), then write x without blocking: the forward must
     * see x, and a read enqueued after it must see y. */
    const size_t big = (size_t)64 << 20;
    cl_int err;
    cl_mem busy = clCreateBuffer(c, CL_MEM_READ_WRITE, big, NULL, &err);
    assert_int_equal(err, CL_SUCCESS);
    const float one = 1.0f;
    for (int round = 0; round < 3; round++) {
        memset(y, 0, n * sizeof *y);
        assert_int_equal(clEnqueueFillBuffer(q, busy, &one, sizeof one, 0, big, 0, NULL, NULL),
                         CL_SUCCESS);
        assert_int_equal(clEnqueueWriteBuffer(q, xm, CL_FALSE, 0, n * sizeof *x, x, 0, NULL,
                                              NULL),
                         CL_SUCCESS);
        cl_event ev = NULL;
        if (clnorm_forward(p, xm, 0, ym, 0, NULL, 0, NULL, 0, NULL, 0, NULL, 0, NULL, 0, NULL,
                           &ev) != CLNORM_OK)
            fail_msg("forward: %s", clnorm_last_error(ctx));
        cl_int status = CL_QUEUED;
        assert_int_equal(clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status,
                                        &status, NULL),
                         CL_SUCCESS);
        assert_int_equal(status, CL_COMPLETE); /* the latency path returns with it done */
        /* The event works in a wait list of the context's queue. */
        assert_int_equal(clEnqueueReadBuffer(q, ym, CL_FALSE, 0, n * sizeof *y, y, 1, &ev, NULL),
                         CL_SUCCESS);
        assert_int_equal(clFinish(q), CL_SUCCESS);
        clReleaseEvent(ev);
        assert_int_equal(tu_cmp_f32(y, cols, want, cols, rows, cols, 2e-5, 2e-5, "ordered"), 0);
        x[round] += 1.0f; /* a new x each round, so a stale y cannot pass */
        assert_int_equal(clnorm_ref_forward(&d, x, want, NULL, NULL, NULL, NULL), CLNORM_OK);
    }
    /* A wait list with a pending user event: the call returns at once, on the queue, and
     * runs when the event completes. */
    cl_event gate = clCreateUserEvent(c, &err);
    assert_int_equal(err, CL_SUCCESS);
    assert_int_equal(clEnqueueWriteBuffer(q, xm, CL_TRUE, 0, n * sizeof *x, x, 0, NULL, NULL),
                     CL_SUCCESS);
    memset(y, 0, n * sizeof *y);
    cl_event ev = NULL;
    assert_int_equal(clnorm_forward(p, xm, 0, ym, 0, NULL, 0, NULL, 0, NULL, 0, NULL, 0, q, 1,
                                    &gate, &ev),
                     CLNORM_OK);
    cl_int status = CL_COMPLETE;
    assert_int_equal(clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status,
                                    &status, NULL),
                     CL_SUCCESS);
    assert_true(status != CL_COMPLETE);
    assert_int_equal(clSetUserEventStatus(gate, CL_COMPLETE), CL_SUCCESS);
    assert_int_equal(clEnqueueReadBuffer(q, ym, CL_TRUE, 0, n * sizeof *y, y, 1, &ev, NULL),
                     CL_SUCCESS);
    assert_int_equal(tu_cmp_f32(y, cols, want, cols, rows, cols, 2e-5, 2e-5, "gated"), 0);
    clReleaseEvent(ev);
    clReleaseEvent(gate);
    clReleaseMemObject(busy);
    clReleaseMemObject(xm);
    clReleaseMemObject(ym);
    free(x);
    free(y);
    free(want);
    clnorm_plan_free(p);
    clnorm_free(ctx);
}

typedef struct {
    clnorm_plan *plan;
    const clnorm_desc *d;
    int seed, failures;
    cl_command_queue q;
    cl_mem xm, ym;
} worker;

static void *work(void *arg)
{
    worker *w = arg;
    const size_t n = w->d->rows * w->d->cols;
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y), *want = malloc(n * sizeof *want);
    tu_rng rng;
    tu_rng_seed(&rng, (uint64_t)w->seed);
    for (int i = 0; i < 50 && x && y && want; i++) {
        tu_fill_normal(&rng, x, n, 0.5, 1.5);
        clnorm_ref_forward(w->d, x, want, NULL, NULL, NULL, NULL);
        if (i % 2 == 0) {
            if (clnorm_forward_host(w->plan, x, y, NULL, NULL, NULL, NULL) != CLNORM_OK)
                w->failures++;
        } else {
            /* Layer 1 on the context's queue, its event released from this thread. */
            cl_event ev = NULL;
            if (clEnqueueWriteBuffer(w->q, w->xm, CL_TRUE, 0, n * sizeof *x, x, 0, NULL, NULL) !=
                    CL_SUCCESS ||
                clnorm_forward(w->plan, w->xm, 0, w->ym, 0, NULL, 0, NULL, 0, NULL, 0, NULL, 0,
                               NULL, 0, NULL, &ev) != CLNORM_OK ||
                clEnqueueReadBuffer(w->q, w->ym, CL_TRUE, 0, n * sizeof *y, y, 1, &ev, NULL) !=
                    CL_SUCCESS)
                w->failures++;
            if (ev)
                clReleaseEvent(ev);
        }
        for (size_t k = 0; k < n; k++)
            if (!(y[k] - want[k] < 2e-5f && want[k] - y[k] < 2e-5f)) {
                w->failures++;
                break;
            }
    }
    free(x);
    free(y);
    free(want);
    return NULL;
}

static void test_threads_share_plan(void **state)
{
    (void)state;
    clnorm_ctx *ctx = latency_ctx();
    clnorm_desc d;
    clnorm_desc_init(&d, CLNORM_LAYER, 4, 500);
    d.flags = CLNORM_NO_GAMMA | CLNORM_NO_BETA;
    int lat = 0;
    clnorm_plan *p = plan_of(ctx, &d, &lat);
    assert_true(lat);
    pthread_t t[4];
    worker w[4];
    for (int i = 0; i < 4; i++) {
        cl_context c = clnorm_get_cl_context(ctx);
        cl_command_queue q = clnorm_get_queue(ctx);
        w[i] = (worker){p, &d, 100 + i, 0, q, tu_buffer(c, q, NULL, 4 * 500, 0),
                        tu_buffer(c, q, NULL, 4 * 500, 0)};
        assert_int_equal(pthread_create(&t[i], NULL, work, &w[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(w[i].failures, 0);
        clReleaseMemObject(w[i].xm);
        clReleaseMemObject(w[i].ym);
    }
    clnorm_plan_free(p);
    clnorm_free(ctx);
}

/* ---- a latency call cut into parts ---- */

typedef struct {
    clnorm_kind kind;
    clnorm_dtype dtype;
    size_t rows, cols, samples;
    unsigned flags;
    int sum_in_place; /* ADD kinds: the sum output over the residual */
    clnorm_direction dir;
    int recompute; /* backward: mean and rstd not given (recomputed from x first) */
    size_t groups, spatial; /* CLNORM_GROUP: rows are N, cols C */
    int nhwc;               /* CLNORM_GROUP: channels last */
    int tiles;              /* NHWC: the tiles however many samples (CLNORM_NO_SAMPLE_ITEMS),
                               on the latency path at any size (CLNORM_LATENCY_BYTES) */
} part_case;

/* Each slot the forward takes gets a buffer of its own: `pad` elements, then the slot's
 * extent (rows strided as the description says). Inputs hold random values, outputs
 * sentinels, so both the written elements and those left alone are compared. */
typedef struct {
    cl_mem mem[CLNORM_ARG_SLOT_COUNT];
    size_t bytes[CLNORM_ARG_SLOT_COUNT];
    clnorm_slot_info info[CLNORM_ARG_SLOT_COUNT];
    void *init[CLNORM_ARG_SLOT_COUNT];
} part_bufs;

enum { PART_PAD = 3 };

static void part_bufs_make(clnorm_ctx *ctx, const clnorm_desc *d, const part_case *c,
                           part_bufs *b)
{
    memset(b, 0, sizeof *b);
    tu_rng rng;
    tu_rng_seed(&rng, 31);
    for (unsigned s = 0; s < CLNORM_ARG_SLOT_COUNT; s++) {
        clnorm_slot_info *in = &b->info[s];
        assert_int_equal(clnorm_slot_query(d, c->dir, (clnorm_arg_slot)s, in), CLNORM_OK);
        if (in->use == CLNORM_SLOT_UNUSED || (s == CLNORM_ARG_SUM && c->sum_in_place) ||
            (c->recompute && (s == CLNORM_ARG_MEAN || s == CLNORM_ARG_RSTD)))
            continue;
        const size_t n = PART_PAD + in->extent, es = clnorm_elem_size(in->dtype);
        /* x offset from zero; rstd positive, as a forward would save it */
        const double off = s == CLNORM_ARG_X ? 3.0 : s == CLNORM_ARG_RSTD ? 2.0 : 0.5;
        b->init[s] = in->is_output ? tu_alloc_sentinel(in->dtype, n, 1)
                                   : tu_make_vector(&rng, in->dtype, n, off, s == CLNORM_ARG_RSTD ? 0.3 : 1.0);
        b->bytes[s] = n * es;
    }
    (void)ctx;
}

/* Fresh buffers from the initial contents, the forward, and the outputs read back. */
static void part_execute(clnorm_ctx *ctx, clnorm_plan *p, const part_case *c, part_bufs *b,
                         void *out[CLNORM_ARG_SLOT_COUNT])
{
    cl_context cc = clnorm_get_cl_context(ctx);
    cl_command_queue q = clnorm_get_queue(ctx);
    clnorm_arg args[CLNORM_ARG_SLOT_COUNT];
    size_t n = 0;
    for (unsigned s = 0; s < CLNORM_ARG_SLOT_COUNT; s++) {
        b->mem[s] = b->init[s] ? tu_buffer_bytes(cc, q, b->init[s], b->bytes[s]) : NULL;
        if (b->mem[s])
            args[n++] = (clnorm_arg){(clnorm_arg_slot)s, b->mem[s], PART_PAD};
    }
    if (c->sum_in_place)
        args[n++] = (clnorm_arg){CLNORM_ARG_SUM, b->mem[CLNORM_ARG_RESIDUAL], PART_PAD};
    if (clnorm_execute(p, c->dir, args, n, NULL, 0, NULL, NULL) != CLNORM_OK)
        fail_msg("%s: %s", c->dir == CLNORM_FORWARD ? "forward" : "backward",
                 clnorm_last_error(ctx));
    for (unsigned s = 0; s < CLNORM_ARG_SLOT_COUNT; s++) {
        out[s] = NULL;
        if (!b->mem[s])
            continue;
        out[s] = malloc(b->bytes[s]);
        assert_non_null(out[s]);
        tu_read_bytes(q, b->mem[s], out[s], b->bytes[s]);
        clReleaseMemObject(b->mem[s]);
    }
}

typedef struct {
    clnorm_ctx *ctx;
    clnorm_plan *p;
    const part_case *c;
    part_bufs *b;
    void **out;
} part_run;

static void part_run_fn(void *arg)
{
    part_run *r = arg;
    part_execute(r->ctx, r->p, r->c, r->b, r->out);
}

static const char *op_name(clnorm_kind kind)
{
    clnorm_op_info info;
    return clnorm_op_query(kind, &info) == CLNORM_OK ? info.name : "?";
}

static void check_parts(clnorm_ctx *ctx, const part_case *c)
{
    clnorm_desc d;
    clnorm_desc_init(&d, c->kind, c->rows, c->cols);
    d.dtype = c->dtype;
    d.flags = c->flags;
    d.samples = c->samples;
    d.x_stride = d.y_stride = c->cols + 5; /* strided rows: a part starts mid-buffer */
    if (c->kind == CLNORM_GROUP) {
        d.groups = c->groups;
        d.spatial = c->spatial;
        d.layout = c->nhwc ? CLNORM_NHWC : CLNORM_NCHW;
        d.x_stride = d.y_stride = c->cols * c->spatial + 7; /* strided samples */
    }
    if (c->kind == CLNORM_ADD_LAYER || c->kind == CLNORM_ADD_RMS)
        d.residual_stride = d.sum_stride = c->cols + 2;
    if (c->samples > 1)
        d.mod_stride = c->cols + 1;
    int lat = 0, lat0 = 1;
    if (c->tiles) {
        setenv("CLNORM_NO_SAMPLE_ITEMS", "1", 1);
        setenv("CLNORM_LATENCY_BYTES", "1099511627776", 1);
    }
    clnorm_plan *pl = plan_of(ctx, &d, &lat);
    setenv("CLNORM_LATENCY_BYTES", "0", 1);
    clnorm_plan *pm = plan_of(ctx, &d, &lat0);
    unsetenv("CLNORM_LATENCY_BYTES");
    unsetenv("CLNORM_NO_SAMPLE_ITEMS");
    assert_true(lat);
    assert_false(lat0);
    part_bufs b;
    part_bufs_make(ctx, &d, c, &b);
    void *got[CLNORM_ARG_SLOT_COUNT], *want[CLNORM_ARG_SLOT_COUNT];
    char lines[4096];
    part_run r = {ctx, pl, c, &b, got};
    tu_capture_stderr(part_run_fn, &r, lines, sizeof lines);
    if (!strstr(lines, "parts at once"))
        fail_msg("%s %s %zux%zu %s: the call was not cut into parts; CLNORM_VERBOSE said:\n%s",
                 op_name(c->kind), tu_dtype_name(c->dtype), c->rows, c->cols,
                 c->dir == CLNORM_FORWARD ? "forward" : "backward", lines);
    part_execute(ctx, pm, c, &b, want);
    for (unsigned s = 0; s < CLNORM_ARG_SLOT_COUNT; s++) {
        if (!got[s])
            continue;
        const size_t es = clnorm_elem_size(b.info[s].dtype);
        char what[96];
        snprintf(what, sizeof what, "%s %zux%zu %s %s, parts vs main device",
                 op_name(c->kind), c->rows, c->cols,
                 c->dir == CLNORM_FORWARD ? "forward" : "backward",
                 clnorm_arg_name((clnorm_arg_slot)s));
        assert_int_equal(tu_cmp_exact(b.info[s].dtype, got[s], want[s], b.bytes[s] / es, what),
                         0);
        free(got[s]);
        free(want[s]);
        free(b.init[s]);
    }
    clnorm_plan_free(pl);
    clnorm_plan_free(pm);
}

static void test_parts(void **state)
{
    (void)state;
    /* Three threads, so that parts are unequal and one runs on each (the backward's 8 row
     * blocks of 257x768 go 3, 3, 2: PoCL 3.1 aborted when its parts launched different grids
     * at once); verbose exec lines. */
    setenv("CLNORM_HOST_THREADS", "3", 1);
    setenv("CLNORM_VERBOSE", "1", 1);
    clnorm_ctx *ctx = latency_ctx();
    unsetenv("CLNORM_HOST_THREADS");
    unsetenv("CLNORM_VERBOSE");
    const unsigned stats = CLNORM_SAVE_STATS | CLNORM_WITH_BACKWARD;
    const unsigned global = CLNORM_USE_GLOBAL_STATS | CLNORM_WITH_BACKWARD;
    const clnorm_direction F = CLNORM_FORWARD, B = CLNORM_BACKWARD;
    const part_case cases[] = {
        {CLNORM_LAYER, CLNORM_F32, 257, 768, 0, stats, 0, F, 0, 0, 0, 0, 0},
        {CLNORM_RMS, CLNORM_F32, 100, 1000, 0, stats | CLNORM_NO_GAMMA, 0, F, 0, 0, 0, 0, 0},
        {CLNORM_ADD_LAYER, CLNORM_F16, 200, 700, 0, stats | CLNORM_RESIDUAL_F32, 1, F, 0, 0, 0, 0, 0},
        {CLNORM_ADD_RMS, CLNORM_BF16, 300, 512, 0, 0, 0, F, 0, 0, 0, 0, 0},
        /* whole samples per part: 3 samples of 70 rows, 5 of 40 */
        {CLNORM_LAYER, CLNORM_BF16, 210, 512, 3, stats | CLNORM_SCALE | CLNORM_SHIFT, 0, F, 0, 0, 0, 0, 0},
        {CLNORM_ADD_RMS, CLNORM_F32, 200, 256, 5, CLNORM_SCALE | CLNORM_NO_BETA, 1, F, 0, 0, 0, 0, 0},
        /* the backward's row blocks: with the statistics given, and recomputed first */
        {CLNORM_LAYER, CLNORM_F32, 257, 768, 0, stats, 0, B, 0, 0, 0, 0, 0},
        {CLNORM_LAYER, CLNORM_F32, 32, 4096, 0, stats, 0, B, 1, 0, 0, 0, 0},
        {CLNORM_RMS, CLNORM_BF16, 300, 512, 0, stats | CLNORM_NO_GAMMA, 0, B, 0, 0, 0, 0, 0},
        {CLNORM_ADD_LAYER, CLNORM_F16, 200, 700, 0, stats | CLNORM_RESIDUAL_F32, 0, B, 0, 0, 0, 0, 0},
        /* dscale and dshift: blocks inside samples, 3 samples of 70 rows */
        {CLNORM_LAYER, CLNORM_F32, 210, 512, 3, stats | CLNORM_SCALE | CLNORM_SHIFT, 0, B, 0, 0, 0, 0, 0},
        /* GroupNorm NCHW: one sample in parts of its 32 groups (10 channels each), with the
         * SiLU; four samples in parts of samples */
        {CLNORM_GROUP, CLNORM_F32, 1, 320, 0, stats | CLNORM_SILU, 0, F, 0, 32, 256, 0, 0},
        {CLNORM_GROUP, CLNORM_F16, 4, 64, 0, stats | CLNORM_NO_BETA, 0, F, 0, 8, 300, 0, 0},
        /* GroupNorm NHWC: one sample's tiles in parts, forward (forced: up to 2 MiB, the
         * latency path's own threshold, the forward runs one item per sample) and backward
         * (by its size), the statistics given and recomputed; 200 channels (a tail past the
         * last vector) in float16; three samples' tiles in parts (the moments and the apply,
         * the backward's sums and dx) */
        {CLNORM_GROUP, CLNORM_F32, 1, 320, 0, stats, 0, F, 0, 32, 1024, 1, 1},
        {CLNORM_GROUP, CLNORM_F32, 1, 320, 0, stats, 0, B, 0, 32, 1024, 1, 0},
        {CLNORM_GROUP, CLNORM_F32, 1, 320, 0, stats, 0, B, 1, 32, 1024, 1, 0},
        {CLNORM_GROUP, CLNORM_F16, 1, 200, 0, stats | CLNORM_NO_BETA, 0, F, 0, 8, 3000, 1, 1},
        {CLNORM_GROUP, CLNORM_F16, 1, 200, 0, stats | CLNORM_NO_BETA, 0, B, 1, 8, 3000, 1, 0},
        {CLNORM_GROUP, CLNORM_F32, 3, 64, 0, stats | CLNORM_SILU, 0, F, 0, 16, 700, 1, 1},
        {CLNORM_GROUP, CLNORM_F32, 3, 64, 0, stats | CLNORM_SILU, 0, B, 1, 16, 700, 1, 1},
        /* precomputed statistics: the forward's table whole, its apply's tiles in parts; the
         * backward's sums and dx tiles (dx = rstd * g) */
        {CLNORM_GROUP, CLNORM_F32, 1, 320, 0, global, 0, F, 0, 32, 1024, 1, 1},
        {CLNORM_GROUP, CLNORM_F32, 2, 64, 0, global | CLNORM_SILU, 0, B, 0, 16, 700, 1, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_parts(ctx, &cases[i]);
    clnorm_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_policy),
        cmocka_unit_test(test_same_bits),
        cmocka_unit_test(test_queue_order),
        cmocka_unit_test(test_threads_share_plan),
        cmocka_unit_test(test_parts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
