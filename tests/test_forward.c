/*
 * test_forward.c - the 0.1 forward entry points (clnorm_forward, clnorm_forward_host) of
 * LayerNorm and RMSNorm on every device strategy (the subgroup one only where it takes the
 * row length) against the CPU reference: every flag combination, strided tensors at non-zero
 * cl_mem offsets with sentinels around every output, in place, the host-pointer API (also the
 * reference strategy), events and wait lists, determinism, the automatic choice.
 * The shape sweep of every operation through the generic calls is test_ops's; non-power-of-
 * two work-groups and more rows than a launch has groups are test_geometry's.
 * Tolerances: tu_problem.h (f32: 2e-5 abs + 2e-5 rel per element and normwise 1e-5).
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep, pthreads */

#include "tu_problem.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static clnorm_ctx *g_ctx; /* one context per binary: kernels are built once per strategy */

#define Y_SLOT TU_SLOT(CLNORM_ARG_Y)

/* A float32 forward problem of LayerNorm (kind 0) or RMSNorm (kind 1). */
static void make(tu_problem *p, int kind, size_t rows, size_t cols, size_t xs, size_t ys,
                 unsigned flags, uint64_t seed)
{
    clnorm_desc d;
    clnorm_desc_init(&d, kind ? CLNORM_RMS : CLNORM_LAYER, rows, cols);
    d.x_stride = xs;
    d.y_stride = ys;
    d.flags = flags;
    tu_problem_make(p, &d, CLNORM_FORWARD, TU_ALL_OPTIONAL, seed, NULL);
}

/* The 0.1 call at distinct non-zero offsets, y in place of x or not. */
static tu_launch v01_launch(int in_place)
{
    tu_launch l = tu_launch_offsets();
    l.v01 = 1;
    if (in_place)
        tu_launch_in_place(&l, CLNORM_ARG_Y, CLNORM_ARG_X);
    return l;
}

/* One plan of the problem on `strategy`, one layer-1 run (nothing when the subgroup strategy
 * cannot hold such long rows). */
static void run_cl_strategy(const tu_problem *p, clnorm_strategy strategy, const tu_launch *l)
{
    clnorm_plan *plan = tu_plan_if(g_ctx, &p->desc, strategy);
    if (plan == NULL)
        return;
    assert_int_equal(clnorm_plan_strategy(plan), strategy);
    tu_problem_run_cl(g_ctx, p, plan, l, 0, NULL);
    clnorm_plan_free(plan);
}

static void require_device(void)
{
    if (!tu_has_device(g_ctx))
        skip();
}

/* ------------------------------------------------------------------------------------------ */
/* Every flag combination on representative shapes.                                            */

/* 1001 x 16: rows of one vector (with AVX-512) take four rows per item on CPU devices
 * (src/policy.c), and 1001 leaves one. */
static const size_t rep_shapes[][2] = {{1, 1},     {2, 3},    {17, 7},   {3, 768},
                                       {1000, 31}, {1001, 16}, {2, 4097}, {1, 65537}};

static void test_flag_combinations(void **state)
{
    (void)state;
    require_device();
    const tu_launch l = v01_launch(0);
    for (size_t s = 0; s < TU_COUNT(rep_shapes); s++)
        for (int kind = 0; kind < 2; kind++)
            for (unsigned flags = 0; flags < 8; flags++) {
                tu_problem p;
                make(&p, kind, rep_shapes[s][0], rep_shapes[s][1], 0, 0, flags,
                     1000 + 16 * s + 8 * (uint64_t)kind + flags);
                for (int i = 0; i < TU_NUM_STRATEGIES; i++)
                    run_cl_strategy(&p, tu_strategies[i], &l);
                tu_problem_free(&p);
            }
}

/* ------------------------------------------------------------------------------------------ */
/* Strided x and y (each wider than cols, x wider or narrower than y).                         */

static void test_strided(void **state)
{
    (void)state;
    require_device();
    static const size_t shapes[][2] = {{1, 1},    {3, 3},    {17, 7},   {2, 64},
                                       {17, 127}, {7, 16},   {5, 768},  {3, 1000},
                                       {2, 4097}, {2, 65537}, {1000, 31}};
    const tu_launch l = v01_launch(0);
    for (size_t s = 0; s < TU_COUNT(shapes); s++) {
        const size_t rows = shapes[s][0], cols = shapes[s][1];
        const size_t pads[][2] = {{3, 9}, {17, 1}};
        for (size_t k = 0; k < TU_COUNT(pads); k++)
            for (int kind = 0; kind < 2; kind++) {
                const unsigned flags = k == 0 ? CLNORM_SAVE_STATS
                                              : CLNORM_NO_GAMMA | CLNORM_NO_BETA;
                tu_problem p;
                make(&p, kind, rows, cols, cols + pads[k][0], cols + pads[k][1], flags,
                     2000 + 10 * s + 2 * k + (uint64_t)kind);
                for (int i = 0; i < TU_NUM_STRATEGIES; i++)
                    run_cl_strategy(&p, tu_strategies[i], &l);
                tu_problem_free(&p);
            }
    }
}

/* ------------------------------------------------------------------------------------------ */
/* In place: the same cl_mem (and offset) for x and y, dense and strided.                      */

static void test_in_place(void **state)
{
    (void)state;
    require_device();
    static const size_t shapes[][3] = {
        {1, 1, 0}, {17, 7, 0}, {5, 768, 0}, {3, 1000, 1003}, {2, 4097, 4100}, {1, 65537, 0},
        {2, 1048576, 0}};
    const tu_launch l = v01_launch(1);
    for (size_t s = 0; s < TU_COUNT(shapes); s++)
        for (int kind = 0; kind < 2; kind++) {
            tu_problem p;
            make(&p, kind, shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][2],
                 CLNORM_SAVE_STATS, 3000 + 2 * s + (uint64_t)kind);
            for (int i = 0; i < TU_NUM_STRATEGIES; i++)
                run_cl_strategy(&p, tu_strategies[i], &l);
            tu_problem_free(&p);
        }
}

/* ------------------------------------------------------------------------------------------ */
/* Host-pointer API: strided and in place, sentinels after every output.                       */

static void test_host_api(void **state)
{
    (void)state;
    if (g_ctx == NULL)
        skip();
    /* On a context without a device only the plan clnorm picks (the reference) exists. */
    const int dev = tu_has_device(g_ctx);
    static const size_t shapes[][3] = {{1, 1, 0}, {17, 7, 9}, {3, 768, 800}, {1000, 31, 0},
                                       {2, 4097, 0}, {1, 65537, 65540}};
    static const unsigned host_flags[] = {CLNORM_SAVE_STATS, CLNORM_NO_GAMMA | CLNORM_NO_BETA,
                                          CLNORM_NO_BETA | CLNORM_SAVE_STATS};
    const tu_launch out_of_place = v01_launch(0), in_place = v01_launch(1);
    for (size_t s = 0; s < TU_COUNT(shapes); s++)
        for (int kind = 0; kind < 2; kind++)
            for (size_t f = 0; f < TU_COUNT(host_flags); f++) {
                tu_problem p;
                make(&p, kind, shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][2],
                     host_flags[f], 4000 + 16 * s + 8 * (uint64_t)kind + f);
                /* -2: the plan clnorm picks, -1: the reference strategy (any context). */
                for (int i = -2; i < (dev ? TU_NUM_STRATEGIES : 0); i++) {
                    clnorm_plan *plan = NULL;
                    if (i == -2)
                        assert_int_equal(clnorm_plan_create(g_ctx, &p.desc, &plan), CLNORM_OK);
                    else
                        plan = tu_plan_if(g_ctx, &p.desc,
                                          i < 0 ? CLNORM_STRATEGY_REFERENCE : tu_strategies[i]);
                    if (plan == NULL)
                        continue;
                    tu_problem_run_host(g_ctx, &p, plan, &out_of_place, 0, NULL);
                    tu_problem_run_host(g_ctx, &p, plan, &in_place, 0, NULL);
                    clnorm_plan_free(plan);
                }
                tu_problem_free(&p);
            }
}

/* ------------------------------------------------------------------------------------------ */
/* Events and wait lists.                                                                      */

/* Sets a user event complete after 30 s unless told to stop first: if clnorm_forward ever
 * blocked on its wait list, the test fails instead of hanging. */
typedef struct {
    cl_event user;
    atomic_int stop, fired;
} watchdog;

static void *watchdog_main(void *arg)
{
    watchdog *w = arg;
    for (int i = 0; i < 3000 && !atomic_load(&w->stop); i++) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (!atomic_load(&w->stop)) {
        atomic_store(&w->fired, 1);
        clSetUserEventStatus(w->user, CL_COMPLETE);
    }
    return NULL;
}

static void test_events_and_wait_lists(void **state)
{
    (void)state;
    require_device();
    cl_context context = clnorm_get_cl_context(g_ctx);
    cl_command_queue q0 = clnorm_get_queue(g_ctx);
    cl_device_id dev = NULL;
    assert_int_equal(clGetCommandQueueInfo(q0, CL_QUEUE_DEVICE, sizeof dev, &dev, NULL),
                     CL_SUCCESS);
    cl_int err = CL_SUCCESS;
    /* A second queue of the same context: clnorm runs there, we read back on q0, so only the
     * returned event orders the two (it must cover the last kernel, e.g. split's apply). */
    cl_command_queue q1 = clCreateCommandQueue(context, dev, 0, &err);
    assert_int_equal(err, CL_SUCCESS);

    for (int i = 0; i < TU_NUM_STRATEGIES; i++) {
        for (int gated = 0; gated < 2; gated++) {
            tu_problem p;
            make(&p, 0, 3, 65537, 0, 0, CLNORM_NO_GAMMA | CLNORM_NO_BETA, 6000 + (uint64_t)i);
            const size_t n = p.desc.rows * p.desc.cols;
            clnorm_plan *plan = tu_plan_if(g_ctx, &p.desc, tu_strategies[i]);
            if (plan == NULL) {
                tu_problem_free(&p);
                continue;
            }
            cl_mem x = clCreateBuffer(context, CL_MEM_READ_WRITE, n * sizeof(float), NULL, &err);
            assert_int_equal(err, CL_SUCCESS);
            cl_mem y = tu_buffer(context, q0, NULL, n, TU_SENTINEL_OUT_BITS);
            cl_event wait[2] = {NULL, NULL}, done = NULL;
            /* Wait-list entry 1: a non-blocking upload of x on q0 (clnorm runs on q1). */
            assert_int_equal(clEnqueueWriteBuffer(q0, x, CL_FALSE, 0, n * sizeof(float),
                                                  p.in.p[CLNORM_ARG_X], 0, NULL, &wait[0]),
                             CL_SUCCESS);
            clFlush(q0);
            cl_uint nwait = 1;
            watchdog w;
            pthread_t thread;
            memset(&w, 0, sizeof w);
            memset(&thread, 0, sizeof thread);
            if (gated) { /* entry 2: a user event that we complete only after the call */
                wait[1] = clCreateUserEvent(context, &err);
                assert_int_equal(err, CL_SUCCESS);
                nwait = 2;
                w.user = wait[1];
                atomic_init(&w.stop, 0);
                atomic_init(&w.fired, 0);
                assert_int_equal(pthread_create(&thread, NULL, watchdog_main, &w), 0);
            }
            const clnorm_status st = clnorm_forward(plan, x, 0, y, 0, NULL, 0, NULL, 0, NULL, 0,
                                                    NULL, 0, q1, nwait, wait, &done);
            if (gated) {
                const int fired = atomic_load(&w.fired);
                cl_int s = CL_COMPLETE;
                if (st == CLNORM_OK && done != NULL)
                    clGetEventInfo(done, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof s, &s, NULL);
                atomic_store(&w.stop, 1);
                clSetUserEventStatus(wait[1], CL_COMPLETE);
                pthread_join(thread, NULL);
                if (fired)
                    fail_msg("%s: clnorm_forward blocked on its wait list",
                             clnorm_strategy_name(tu_strategies[i]));
                if (s == CL_COMPLETE)
                    fail_msg("%s: the returned event completed before its wait list",
                             clnorm_strategy_name(tu_strategies[i]));
            }
            if (st != CLNORM_OK)
                fail_msg("clnorm_forward with a wait list = %d (%s): %s", st,
                         clnorm_status_string(st), clnorm_last_error(g_ctx));
            assert_non_null(done);
            assert_int_equal(clWaitForEvents(1, &done), CL_SUCCESS);
            cl_int s = CL_QUEUED;
            assert_int_equal(clGetEventInfo(done, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof s,
                                            &s, NULL),
                             CL_SUCCESS);
            assert_int_equal(s, CL_COMPLETE);
            /* Read on q0 with no other ordering than the event. */
            tu_args out = {{NULL}};
            out.p[CLNORM_ARG_Y] = tu_alloc_filled(n, 0);
            assert_int_equal(clEnqueueReadBuffer(q0, y, CL_TRUE, 0, n * sizeof(float),
                                                 out.p[CLNORM_ARG_Y], 0, NULL, NULL),
                             CL_SUCCESS);
            tu_problem_check(&p, &out, Y_SLOT,
                             gated ? "event, user wait" : "event, wait for the upload");
            tu_args_free(&out);
            clReleaseEvent(done);
            for (cl_uint k = 0; k < nwait; k++)
                clReleaseEvent(wait[k]);
            clReleaseMemObject(x);
            clReleaseMemObject(y);
            clnorm_plan_free(plan);
            tu_problem_free(&p);
        }
    }
    clFinish(q1);
    clReleaseCommandQueue(q1);
}

/* ------------------------------------------------------------------------------------------ */
/* Plans: getters, reuse, determinism, the automatic choice.                                   */

static void test_plan_reuse_and_determinism(void **state)
{
    (void)state;
    require_device();
    static const size_t shapes[][2] = {{3, 4097}, {1, 65537}, {1000, 127}};
    const tu_launch l = v01_launch(0);
    for (size_t s = 0; s < TU_COUNT(shapes); s++)
        for (int i = 0; i < TU_NUM_STRATEGIES; i++) {
            tu_problem p;
            make(&p, 0, shapes[s][0], shapes[s][1], 0, 0, CLNORM_SAVE_STATS, 7000 + (uint64_t)s);
            clnorm_plan *plan = tu_plan_if(g_ctx, &p.desc, tu_strategies[i]);
            if (plan == NULL) {
                tu_problem_free(&p);
                continue;
            }
            const clnorm_desc *pd = clnorm_plan_desc(plan);
            assert_non_null(pd);
            assert_int_equal(pd->rows, p.desc.rows);
            assert_int_equal(pd->cols, p.desc.cols);
            assert_int_equal(pd->flags, p.desc.flags);
            assert_string_equal(clnorm_strategy_name(clnorm_plan_strategy(plan)),
                                clnorm_strategy_name(tu_strategies[i]));
            /* The same plan three times (host, layer 1, host): the same bits. */
            tu_args r1, r2;
            tu_problem_run_host(g_ctx, &p, plan, &l, 0, &r1);
            tu_problem_run_cl(g_ctx, &p, plan, &l, 0, NULL);
            tu_problem_run_host(g_ctx, &p, plan, &l, 0, &r2);
            size_t bad = 0;
            for (unsigned k = 0; k < CLNORM_ARG_SLOT_COUNT; k++)
                if (r1.p[k] != NULL)
                    bad += tu_cmp_exact(p.info[k].dtype, r2.p[k], r1.p[k], p.info[k].extent,
                                        clnorm_arg_name((clnorm_arg_slot)k));
            tu_args_free(&r1);
            tu_args_free(&r2);
            clnorm_plan_free(plan);
            tu_problem_free(&p);
            if (bad)
                fail_msg("%s: %zu elements differ between runs of one plan",
                         clnorm_strategy_name(tu_strategies[i]), bad);
        }
}

static void test_auto_strategy(void **state)
{
    (void)state;
    require_device();
    static const size_t shapes[][2] = {{1, 768}, {1000, 1024}, {2, 1048576}, {17, 7}};
    const tu_launch l = v01_launch(0);
    for (size_t s = 0; s < TU_COUNT(shapes); s++) {
        tu_problem p;
        make(&p, 0, shapes[s][0], shapes[s][1], 0, 0, CLNORM_SAVE_STATS, 8000 + (uint64_t)s);
        clnorm_plan *plan = NULL;
        assert_int_equal(clnorm_plan_create(g_ctx, &p.desc, &plan), CLNORM_OK);
        const clnorm_strategy chosen = clnorm_plan_strategy(plan);
        assert_true(chosen == CLNORM_STRATEGY_ROW || chosen == CLNORM_STRATEGY_WORKGROUP ||
                    chosen == CLNORM_STRATEGY_SPLIT || chosen == CLNORM_STRATEGY_SUBGROUP);
        tu_problem_run_cl(g_ctx, &p, plan, &l, 0, NULL);
        clnorm_plan_free(plan);
        tu_problem_free(&p);
    }
}

/* ------------------------------------------------------------------------------------------ */

static int group_setup(void **state)
{
    (void)state;
    g_ctx = tu_context("forward");
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
        cmocka_unit_test(test_flag_combinations),
        cmocka_unit_test(test_strided),
        cmocka_unit_test(test_in_place),
        cmocka_unit_test(test_host_api),
        cmocka_unit_test(test_events_and_wait_lists),
        cmocka_unit_test(test_plan_reuse_and_determinism),
        cmocka_unit_test(test_auto_strategy),
    };
    return cmocka_run_group_tests_name("forward", tests, group_setup, group_teardown);
}
