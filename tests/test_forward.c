/*
 * test_forward.c - every device strategy (row, workgroup, split, subgroup; the subgroup one
 * only where it takes the row length) against the CPU reference clnorm_ref_forward:
 * a sweep of shapes, more rows than a launch has groups, every flag combination, strided
 * tensors at non-zero cl_mem offsets with sentinels around every output, in place, the
 * host-pointer API (also the reference strategy), non-power-of-two work-group sizes
 * (CLNORM_LOCAL_SIZE), events and wait lists, determinism, the automatic choice.
 * Tolerance: 2e-5 abs + 2e-5 rel for N(0,1) data with random gamma/beta.
 */
#define _POSIX_C_SOURCE 200809L /* setenv, unsetenv, nanosleep, pthreads */

#include "test_util.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FWD_ATOL 2e-5
#define FWD_RTOL 2e-5
/* Shapes of the sweep whose rows * cols exceed this are left out (1000 x 65537, ...). */
#define MAX_ELEMENTS ((size_t)4200000)

static clnorm_ctx *g_ctx; /* one context per binary: kernels are built once per strategy */

static const size_t sweep_cols[] = {1, 2, 3, 7, 31, 64, 127, 768, 1000, 1024, 4097, 65537,
                                    1048576};
static const size_t sweep_rows[] = {1, 2, 17, 1000};
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* ------------------------------------------------------------------------------------------ */
/* One problem: inputs, the reference's answer, and the check of a device answer.              */

typedef struct {
    clnorm_desc desc; /* x_stride / y_stride as the device run will use them */
    float *x, *gamma, *beta;
    float *y_ref, *mean_ref, *rstd_ref; /* y_ref dense (rows x cols) */
} problem;

static void problem_make(problem *p, clnorm_kind kind, size_t rows, size_t cols, size_t xs,
                         size_t ys, unsigned flags, uint64_t seed)
{
    tu_rng rng;
    tu_rng_seed(&rng, seed);
    memset(p, 0, sizeof *p);
    clnorm_desc_init(&p->desc, kind, rows, cols);
    p->desc.x_stride = xs;
    p->desc.y_stride = ys;
    p->desc.flags = flags;
    p->x = tu_make_input(&rng, rows, cols, xs ? xs : cols, 0.0, 1.0);
    if (!(flags & CLNORM_NO_GAMMA)) {
        p->gamma = tu_alloc_filled(cols, 0);
        tu_fill_normal(&rng, p->gamma, cols, 1.0, 0.5);
    }
    if (!(flags & CLNORM_NO_BETA)) {
        p->beta = tu_alloc_filled(cols, 0);
        tu_fill_normal(&rng, p->beta, cols, 0.0, 0.5);
    }
    /* The reference writes y densely: same description with y_stride = cols. */
    clnorm_desc rd = p->desc;
    rd.y_stride = 0;
    p->y_ref = tu_alloc_filled(rows * cols, TU_SENTINEL_OUT_BITS);
    p->mean_ref = tu_alloc_filled(rows, TU_SENTINEL_OUT_BITS);
    p->rstd_ref = tu_alloc_filled(rows, TU_SENTINEL_OUT_BITS);
    const int stats = (flags & CLNORM_SAVE_STATS) != 0;
    const clnorm_status st =
        clnorm_ref_forward(&rd, p->x, p->y_ref, p->gamma, p->beta,
                           stats && kind == CLNORM_LAYER ? p->mean_ref : NULL,
                           stats ? p->rstd_ref : NULL);
    if (st != CLNORM_OK)
        fail_msg("clnorm_ref_forward = %d (%s)", st, clnorm_status_string(st));
}

static void problem_free(problem *p)
{
    free(p->x);
    free(p->gamma);
    free(p->beta);
    free(p->y_ref);
    free(p->mean_ref);
    free(p->rstd_ref);
}

/* y in the problem's y_stride layout; mean/rstd may be NULL when not asked for. */
static void problem_check(const problem *p, clnorm_strategy strategy, const char *how,
                          const float *y, const float *mean, const float *rstd)
{
    const clnorm_desc *d = &p->desc;
    const int stats = (d->flags & CLNORM_SAVE_STATS) != 0;
    char what[200], prefix[160];
    snprintf(prefix, sizeof prefix, "%s %s %s %zux%zu strides %zu/%zu flags %u",
             clnorm_strategy_name(strategy), how, d->kind == CLNORM_LAYER ? "layer" : "rms",
             d->rows, d->cols, tu_x_stride(d), tu_y_stride(d), d->flags);
    size_t bad = 0;
    snprintf(what, sizeof what, "%s: y", prefix);
    bad += tu_cmp_f32(y, tu_y_stride(d), p->y_ref, d->cols, d->rows, d->cols, FWD_ATOL,
                      FWD_RTOL, what);
    if (stats) {
        snprintf(what, sizeof what, "%s: rstd", prefix);
        bad += tu_cmp_f32(rstd, 1, p->rstd_ref, 1, d->rows, 1, FWD_ATOL, FWD_RTOL, what);
        if (d->kind == CLNORM_LAYER) {
            snprintf(what, sizeof what, "%s: mean", prefix);
            bad += tu_cmp_f32(mean, 1, p->mean_ref, 1, d->rows, 1, FWD_ATOL, FWD_RTOL, what);
        }
    }
    if (bad)
        fail_msg("%s: %zu mismatches against clnorm_ref_forward", prefix, bad);
}

/* Runs a problem on a plan through layer 1 (tu_forward_cl checks all sentinels). */
static void run_cl(const problem *p, clnorm_plan *plan, const tu_launch *launch)
{
    const clnorm_desc *d = &p->desc;
    const size_t yn = tu_extent(d->rows, d->cols, tu_y_stride(d));
    float *y = tu_alloc_filled(yn, TU_SENTINEL_OUT_BITS);
    float *mean = tu_alloc_filled(d->rows, TU_SENTINEL_OUT_BITS);
    float *rstd = tu_alloc_filled(d->rows, TU_SENTINEL_OUT_BITS);
    tu_forward_cl(g_ctx, plan, launch, p->x, p->gamma, p->beta, y, mean, rstd);
    problem_check(p, clnorm_plan_strategy(plan), launch->in_place ? "cl_mem in place" : "cl_mem",
                  y, mean, rstd);
    free(y);
    free(mean);
    free(rstd);
}

/* Creates the plan for a problem, runs it once through layer 1, frees it (nothing when the
 * subgroup strategy cannot hold such long rows). */
static void run_cl_strategy(const problem *p, clnorm_strategy strategy, const tu_launch *launch)
{
    clnorm_plan *plan = tu_plan_if(g_ctx, &p->desc, strategy);
    if (plan == NULL)
        return;
    assert_int_equal(clnorm_plan_strategy(plan), strategy);
    run_cl(p, plan, launch);
    clnorm_plan_free(plan);
}

/* ------------------------------------------------------------------------------------------ */
/* The sweep: every (rows, cols) of the lists, both kinds, affine with stats, dense rows at    */
/* non-zero cl_mem offsets. One test per strategy, so a failure names it.                      */

static void sweep(clnorm_strategy strategy)
{
    if (!tu_has_device(g_ctx))
        skip();
    const tu_launch launch = tu_launch_offsets();
    for (size_t ci = 0; ci < COUNT(sweep_cols); ci++) {
        for (size_t ri = 0; ri < COUNT(sweep_rows); ri++) {
            const size_t rows = sweep_rows[ri], cols = sweep_cols[ci];
            if (rows * cols > MAX_ELEMENTS)
                continue;
            for (int kind = 0; kind < 2; kind++) {
                problem p;
                problem_make(&p, (clnorm_kind)kind, rows, cols, 0, 0, CLNORM_SAVE_STATS,
                             100 * ci + 10 * ri + (uint64_t)kind);
                run_cl_strategy(&p, strategy, &launch);
                problem_free(&p);
            }
        }
    }
}

static void test_sweep_row(void **state)
{
    (void)state;
    sweep(CLNORM_STRATEGY_ROW);
}

static void test_sweep_workgroup(void **state)
{
    (void)state;
    sweep(CLNORM_STRATEGY_WORKGROUP);
}

static void test_sweep_split(void **state)
{
    (void)state;
    sweep(CLNORM_STRATEGY_SPLIT);
}

static void test_sweep_subgroup(void **state)
{
    (void)state;
    sweep(CLNORM_STRATEGY_SUBGROUP);
}

/* More rows than a launch has groups (workgroup: 2^20, split: 2^16): the kernels' row loops
 * must pick up the rest. */
static void test_many_rows(void **state)
{
    (void)state;
    if (!tu_has_device(g_ctx))
        skip();
    const tu_launch launch = tu_launch_offsets();
    problem p;
    problem_make(&p, CLNORM_LAYER, ((size_t)1 << 20) + 3, 3, 0, 0, CLNORM_SAVE_STATS, 99);
    for (int i = 0; i < TU_NUM_STRATEGIES; i++)
        run_cl_strategy(&p, tu_strategies[i], &launch);
    problem_free(&p);
}

/* ------------------------------------------------------------------------------------------ */
/* Every flag combination on representative shapes.                                            */

static const size_t rep_shapes[][2] = {{1, 1}, {2, 3}, {17, 7}, {3, 768}, {1000, 31},
                                       {2, 4097}, {1, 65537}};

static void test_flag_combinations(void **state)
{
    (void)state;
    if (!tu_has_device(g_ctx))
        skip();
    const tu_launch launch = tu_launch_offsets();
    for (size_t s = 0; s < COUNT(rep_shapes); s++)
        for (int kind = 0; kind < 2; kind++)
            for (unsigned flags = 0; flags < 8; flags++) {
                problem p;
                problem_make(&p, (clnorm_kind)kind, rep_shapes[s][0], rep_shapes[s][1], 0, 0,
                             flags, 1000 + 16 * s + 8 * (uint64_t)kind + flags);
                for (int i = 0; i < TU_NUM_STRATEGIES; i++)
                    run_cl_strategy(&p, tu_strategies[i], &launch);
                problem_free(&p);
            }
}

/* ------------------------------------------------------------------------------------------ */
/* Strided x and y (each wider than cols, x wider or narrower than y).                         */

static void test_strided(void **state)
{
    (void)state;
    if (!tu_has_device(g_ctx))
        skip();
    static const size_t shapes[][2] = {{1, 1},   {3, 3},    {17, 7},   {2, 64},  {17, 127},
                                       {5, 768}, {3, 1000}, {2, 4097}, {2, 65537}, {1000, 31}};
    const tu_launch launch = tu_launch_offsets();
    for (size_t s = 0; s < COUNT(shapes); s++) {
        const size_t rows = shapes[s][0], cols = shapes[s][1];
        const size_t pads[][2] = {{3, 9}, {17, 1}};
        for (size_t k = 0; k < COUNT(pads); k++)
            for (int kind = 0; kind < 2; kind++) {
                const unsigned flags = k == 0 ? CLNORM_SAVE_STATS
                                              : CLNORM_NO_GAMMA | CLNORM_NO_BETA;
                problem p;
                problem_make(&p, (clnorm_kind)kind, rows, cols, cols + pads[k][0],
                             cols + pads[k][1], flags, 2000 + 10 * s + 2 * k + (uint64_t)kind);
                for (int i = 0; i < TU_NUM_STRATEGIES; i++)
                    run_cl_strategy(&p, tu_strategies[i], &launch);
                problem_free(&p);
            }
    }
}

/* ------------------------------------------------------------------------------------------ */
/* In place: the same cl_mem (and offset) for x and y, dense and strided.                      */

static void test_in_place(void **state)
{
    (void)state;
    if (!tu_has_device(g_ctx))
        skip();
    static const size_t shapes[][3] = {
        {1, 1, 0}, {17, 7, 0}, {5, 768, 0}, {3, 1000, 1003}, {2, 4097, 4100}, {1, 65537, 0},
        {2, 1048576, 0}};
    tu_launch launch = tu_launch_offsets();
    launch.in_place = 1;
    for (size_t s = 0; s < COUNT(shapes); s++)
        for (int kind = 0; kind < 2; kind++) {
            problem p;
            problem_make(&p, (clnorm_kind)kind, shapes[s][0], shapes[s][1], shapes[s][2],
                         shapes[s][2], CLNORM_SAVE_STATS, 3000 + 2 * s + (uint64_t)kind);
            for (int i = 0; i < TU_NUM_STRATEGIES; i++)
                run_cl_strategy(&p, tu_strategies[i], &launch);
            problem_free(&p);
        }
}

/* ------------------------------------------------------------------------------------------ */
/* Host-pointer API: strided and in place, sentinels after every output.                       */

static void run_host(const problem *p, clnorm_plan *plan, int in_place)
{
    const clnorm_desc *d = &p->desc;
    const size_t ys = tu_y_stride(d), yn = tu_extent(d->rows, d->cols, ys);
    const int stats = (d->flags & CLNORM_SAVE_STATS) != 0;
    float *y = tu_alloc_filled(yn + TU_PAD, TU_SENTINEL_OUT_BITS);
    float *mean = tu_alloc_filled(d->rows + TU_PAD, TU_SENTINEL_OUT_BITS);
    float *rstd = tu_alloc_filled(d->rows + TU_PAD, TU_SENTINEL_OUT_BITS);
    const uint32_t gap_bits = in_place ? TU_SENTINEL_IN_BITS : TU_SENTINEL_OUT_BITS;
    if (in_place) /* y starts as a copy of x, gaps (input sentinels) included */
        memcpy(y, p->x, yn * sizeof *y);
    float *mp = stats && d->kind == CLNORM_LAYER ? mean : NULL, *rp = stats ? rstd : NULL;
    const clnorm_status st =
        clnorm_forward_host(plan, in_place ? y : p->x, y, p->gamma, p->beta, mp, rp);
    if (st != CLNORM_OK)
        fail_msg("clnorm_forward_host(%s) = %d (%s): %s",
                 clnorm_strategy_name(clnorm_plan_strategy(plan)), st, clnorm_status_string(st),
                 clnorm_last_error(g_ctx));
    size_t bad = tu_count_gap_changes(y, d->rows, d->cols, ys, gap_bits, "host y");
    bad += tu_count_not_bits(y + yn, TU_PAD, TU_SENTINEL_OUT_BITS, "host y tail");
    bad += tu_count_not_bits(mean + d->rows, TU_PAD, TU_SENTINEL_OUT_BITS, "host mean tail");
    bad += tu_count_not_bits(rstd + d->rows, TU_PAD, TU_SENTINEL_OUT_BITS, "host rstd tail");
    if (mp == NULL)
        bad += tu_count_not_bits(mean, d->rows, TU_SENTINEL_OUT_BITS, "host mean");
    if (rp == NULL)
        bad += tu_count_not_bits(rstd, d->rows, TU_SENTINEL_OUT_BITS, "host rstd");
    assert_int_equal(bad, 0);
    problem_check(p, clnorm_plan_strategy(plan), in_place ? "host in place" : "host", y, mean,
                  rstd);
    free(y);
    free(mean);
    free(rstd);
}

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
    for (size_t s = 0; s < COUNT(shapes); s++)
        for (int kind = 0; kind < 2; kind++)
            for (size_t f = 0; f < COUNT(host_flags); f++) {
                problem p;
                problem_make(&p, (clnorm_kind)kind, shapes[s][0], shapes[s][1], shapes[s][2],
                             shapes[s][2], host_flags[f], 4000 + 16 * s + 8 * (uint64_t)kind + f);
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
                    run_host(&p, plan, 0);
                    run_host(&p, plan, 1);
                    clnorm_plan_free(plan);
                }
                problem_free(&p);
            }
}

/* ------------------------------------------------------------------------------------------ */
/* Non-power-of-two work-group sizes: the tree reductions must be exact for any size.         */

static void test_odd_local_sizes(void **state)
{
    (void)state;
    if (!tu_has_device(g_ctx))
        skip();
    static const char *sizes[] = {"3", "7", "100"};
    static const size_t shapes[][2] = {{5, 7}, {17, 127}, {3, 1000}, {2, 4097}, {1, 65537},
                                       {1, 1048576}};
    /* The row strategy reads it too (several rows per work-group). */
    static const clnorm_strategy strategies[] = {CLNORM_STRATEGY_WORKGROUP,
                                                 CLNORM_STRATEGY_SPLIT, CLNORM_STRATEGY_ROW};
    const tu_launch launch = tu_launch_offsets();
    for (size_t z = 0; z < COUNT(sizes); z++)
        for (size_t s = 0; s < COUNT(shapes); s++)
            for (int kind = 0; kind < 2; kind++) {
                problem p;
                problem_make(&p, (clnorm_kind)kind, shapes[s][0], shapes[s][1], 0, 0,
                             CLNORM_SAVE_STATS, 5000 + 100 * z + 2 * s + (uint64_t)kind);
                for (size_t i = 0; i < COUNT(strategies); i++) {
                    /* Read at plan creation only: set it around the creation. */
                    setenv("CLNORM_LOCAL_SIZE", sizes[z], 1);
                    clnorm_plan *plan = NULL;
                    const clnorm_status st =
                        clnorm_plan_create_with(g_ctx, &p.desc, strategies[i], &plan);
                    unsetenv("CLNORM_LOCAL_SIZE");
                    if (st != CLNORM_OK)
                        fail_msg("plan %s with CLNORM_LOCAL_SIZE=%s: %d (%s): %s",
                                 clnorm_strategy_name(strategies[i]), sizes[z], st,
                                 clnorm_status_string(st), clnorm_last_error(g_ctx));
                    run_cl(&p, plan, &launch);
                    clnorm_plan_free(plan);
                }
                problem_free(&p);
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
    if (!tu_has_device(g_ctx))
        skip();
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
            problem p;
            problem_make(&p, CLNORM_LAYER, 3, 65537, 0, 0, CLNORM_NO_GAMMA | CLNORM_NO_BETA,
                         6000 + (uint64_t)i);
            const size_t n = p.desc.rows * p.desc.cols;
            clnorm_plan *plan = tu_plan_if(g_ctx, &p.desc, tu_strategies[i]);
            if (plan == NULL) {
                problem_free(&p);
                continue;
            }
            cl_mem x = clCreateBuffer(context, CL_MEM_READ_WRITE, n * sizeof(float), NULL, &err);
            assert_int_equal(err, CL_SUCCESS);
            cl_mem y = tu_buffer(context, q0, NULL, n, TU_SENTINEL_OUT_BITS);
            cl_event wait[2] = {NULL, NULL}, done = NULL;
            /* Wait-list entry 1: a non-blocking upload of x on q0 (clnorm runs on q1). */
            assert_int_equal(clEnqueueWriteBuffer(q0, x, CL_FALSE, 0, n * sizeof(float), p.x, 0,
                                                  NULL, &wait[0]),
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
            float *out = tu_alloc_filled(n, 0);
            assert_int_equal(clEnqueueReadBuffer(q0, y, CL_TRUE, 0, n * sizeof(float), out, 0,
                                                 NULL, NULL),
                             CL_SUCCESS);
            problem_check(&p, tu_strategies[i], gated ? "event, user wait" : "event", out, NULL,
                          NULL);
            free(out);
            clReleaseEvent(done);
            for (cl_uint k = 0; k < nwait; k++)
                clReleaseEvent(wait[k]);
            clReleaseMemObject(x);
            clReleaseMemObject(y);
            clnorm_plan_free(plan);
            problem_free(&p);
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
    if (!tu_has_device(g_ctx))
        skip();
    static const size_t shapes[][2] = {{3, 4097}, {1, 65537}, {1000, 127}};
    const tu_launch launch = tu_launch_offsets();
    for (size_t s = 0; s < COUNT(shapes); s++)
        for (int i = 0; i < TU_NUM_STRATEGIES; i++) {
            problem p;
            problem_make(&p, CLNORM_LAYER, shapes[s][0], shapes[s][1], 0, 0, CLNORM_SAVE_STATS,
                         7000 + (uint64_t)s);
            clnorm_plan *plan = tu_plan_if(g_ctx, &p.desc, tu_strategies[i]);
            if (plan == NULL) {
                problem_free(&p);
                continue;
            }
            const clnorm_desc *pd = clnorm_plan_desc(plan);
            assert_non_null(pd);
            assert_int_equal(pd->rows, p.desc.rows);
            assert_int_equal(pd->cols, p.desc.cols);
            assert_int_equal(pd->flags, p.desc.flags);
            assert_string_equal(clnorm_strategy_name(clnorm_plan_strategy(plan)),
                                clnorm_strategy_name(tu_strategies[i]));
            const size_t n = p.desc.rows * p.desc.cols;
            float *y1 = tu_alloc_filled(n, 0), *y2 = tu_alloc_filled(n, 0);
            float m1[1000], m2[1000], r1[1000], r2[1000];
            assert_int_equal(clnorm_forward_host(plan, p.x, y1, p.gamma, p.beta, m1, r1),
                             CLNORM_OK);
            /* The same plan again, and through layer 1, must agree bit for bit. */
            run_cl(&p, plan, &launch);
            assert_int_equal(clnorm_forward_host(plan, p.x, y2, p.gamma, p.beta, m2, r2),
                             CLNORM_OK);
            assert_int_equal(tu_cmp_bits(y2, y1, n, "y run 2 vs run 1"), 0);
            assert_int_equal(tu_cmp_bits(m2, m1, p.desc.rows, "mean run 2 vs run 1"), 0);
            assert_int_equal(tu_cmp_bits(r2, r1, p.desc.rows, "rstd run 2 vs run 1"), 0);
            problem_check(&p, tu_strategies[i], "host reuse", y1, m1, r1);
            free(y1);
            free(y2);
            clnorm_plan_free(plan);
            problem_free(&p);
        }
}

static void test_auto_strategy(void **state)
{
    (void)state;
    if (!tu_has_device(g_ctx))
        skip();
    static const size_t shapes[][2] = {{1, 768}, {1000, 1024}, {2, 1048576}, {17, 7}};
    const tu_launch launch = tu_launch_offsets();
    for (size_t s = 0; s < COUNT(shapes); s++) {
        problem p;
        problem_make(&p, CLNORM_LAYER, shapes[s][0], shapes[s][1], 0, 0, CLNORM_SAVE_STATS,
                     8000 + (uint64_t)s);
        clnorm_plan *plan = NULL;
        assert_int_equal(clnorm_plan_create(g_ctx, &p.desc, &plan), CLNORM_OK);
        const clnorm_strategy chosen = clnorm_plan_strategy(plan);
        assert_true(chosen == CLNORM_STRATEGY_ROW || chosen == CLNORM_STRATEGY_WORKGROUP ||
                    chosen == CLNORM_STRATEGY_SPLIT);
        run_cl(&p, plan, &launch);
        clnorm_plan_free(plan);
        problem_free(&p);
    }
}

/* ------------------------------------------------------------------------------------------ */

static int group_setup(void **state)
{
    (void)state;
    if (clnorm_create(NULL, &g_ctx) != CLNORM_OK)
        g_ctx = NULL; /* device tests skip */
    else
        print_message("forward: running on %s\n", clnorm_device_name(g_ctx));
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
        cmocka_unit_test(test_sweep_row),
        cmocka_unit_test(test_sweep_workgroup),
        cmocka_unit_test(test_sweep_split),
        cmocka_unit_test(test_sweep_subgroup),
        cmocka_unit_test(test_many_rows),
        cmocka_unit_test(test_flag_combinations),
        cmocka_unit_test(test_strided),
        cmocka_unit_test(test_in_place),
        cmocka_unit_test(test_host_api),
        cmocka_unit_test(test_odd_local_sizes),
        cmocka_unit_test(test_events_and_wait_lists),
        cmocka_unit_test(test_plan_reuse_and_determinism),
        cmocka_unit_test(test_auto_strategy),
    };
    return cmocka_run_group_tests_name("forward", tests, group_setup, group_teardown);
}
