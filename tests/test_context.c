/*
 * test_context.c - contexts: device choice (default, "cpu", "P:D", a name, CLNORM_DEVICE),
 * adopting an application's queue without stealing references, the device list, the program
 * cache (plans of a strategy share one build, executing never builds), and plans created from
 * several threads on one context.
 */
#define _POSIX_C_SOURCE 200809L /* setenv, unsetenv, strdup, pthread barriers */

#include "tu_runner.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define MAX_DEVICES 64

/* The device list, read once in group setup (count 0: no OpenCL at all). */
static clnorm_device_info g_devs[MAX_DEVICES];
static size_t g_ndev;

static clnorm_ctx *create_ok(const char *spec)
{
    clnorm_ctx *ctx = NULL;
    const clnorm_status st = clnorm_create(spec, &ctx);
    if (st != CLNORM_OK || ctx == NULL)
        fail_msg("clnorm_create(%s) = %d (%s)", spec ? spec : "NULL", st,
                 clnorm_status_string(st));
    return ctx;
}

/* Runs a small LAYER problem on ctx (host API, plan clnorm picks) against the reference. */
static void small_run_ok(clnorm_ctx *ctx, clnorm_strategy strategy)
{
    clnorm_desc d;
    clnorm_desc_init(&d, CLNORM_LAYER, 5, 200);
    tu_rng rng;
    tu_rng_seed(&rng, 77);
    float x[5 * 200], y[5 * 200], want[5 * 200];
    tu_fill_normal(&rng, x, COUNT(x), 2.0, 3.0);
    d.flags = CLNORM_NO_GAMMA | CLNORM_NO_BETA;
    clnorm_plan *plan = tu_plan(ctx, &d, strategy);
    assert_int_equal(clnorm_forward_host(plan, x, y, NULL, NULL, NULL, NULL), CLNORM_OK);
    assert_int_equal(clnorm_ref_forward(&d, x, want, NULL, NULL, NULL, NULL), CLNORM_OK);
    assert_int_equal(tu_cmp_f32(y, 200, want, 200, 5, 200, 2e-5, 2e-5, "small run"), 0);
    clnorm_plan_free(plan);
}

/* ------------------------------------------------------------------------------------------ */

static void test_list_devices(void **state)
{
    (void)state;
    size_t count = 12345;
    assert_int_equal(clnorm_list_devices(NULL, 0, &count), CLNORM_OK);
    assert_int_equal(count, g_ndev);
    if (g_ndev == 0)
        skip(); /* no OpenCL: nothing more to look at */
    size_t defaults = 0;
    for (size_t i = 0; i < g_ndev; i++) {
        const clnorm_device_info *d = &g_devs[i];
        assert_true(d->device_name[0] != '\0');
        assert_true(d->platform_name[0] != '\0');
        assert_non_null(memchr(d->device_name, '\0', sizeof d->device_name));
        assert_true(d->type != 0);
        assert_true(d->compute_units >= 1);
        assert_true(d->global_mem_bytes > 0);
        assert_true(d->is_default == 0 || d->is_default == 1);
        defaults += (size_t)d->is_default;
    }
    assert_int_equal(defaults, 1);

    /* A smaller capacity writes no more than that and still reports the total. */
    clnorm_device_info two[2];
    memset(two, 0xA5, sizeof two);
    count = 0;
    assert_int_equal(clnorm_list_devices(two, 1, &count), CLNORM_OK);
    assert_int_equal(count, g_ndev);
    assert_string_equal(two[0].device_name, g_devs[0].device_name);
    const unsigned char *raw = (const unsigned char *)&two[1];
    for (size_t i = 0; i < sizeof two[1]; i++)
        assert_int_equal(raw[i], 0xA5);
}

static void test_create_default(void **state)
{
    (void)state;
    clnorm_ctx *ctx = create_ok(NULL);
    const char *name = clnorm_device_name(ctx);
    assert_non_null(name);
    assert_true(name[0] != '\0');
    assert_non_null(clnorm_last_error(ctx));
    assert_string_equal(clnorm_last_error(ctx), "");
    assert_int_equal(clnorm_program_builds(ctx), 0);
    if (clnorm_get_backend(ctx) == CLNORM_BACKEND_OPENCL) {
        assert_non_null(clnorm_get_queue(ctx));
        assert_non_null(clnorm_get_cl_context(ctx));
        /* The default device of the list is the one chosen. */
        for (size_t i = 0; i < g_ndev; i++)
            if (g_devs[i].is_default && !tu_mentions(name, g_devs[i].device_name))
                fail_msg("default context on \"%s\", the list's default is \"%s\"", name,
                         g_devs[i].device_name);
    } else {
        /* Only without any OpenCL device (and without CLNORM_DEVICE asking for one). */
        assert_int_equal(g_ndev, 0);
        assert_null(clnorm_get_queue(ctx));
        assert_null(clnorm_get_cl_context(ctx));
    }
    small_run_ok(ctx, CLNORM_STRATEGY_AUTO);
    clnorm_free(ctx);
}

/* "cpu", "P:D", a piece of a device name (in another case), and CLNORM_DEVICE. */
static void test_create_specs(void **state)
{
    (void)state;
    if (g_ndev == 0)
        skip();
    int have_cpu = 0;
    for (size_t i = 0; i < g_ndev; i++)
        have_cpu |= (g_devs[i].type & CL_DEVICE_TYPE_CPU) != 0;
    clnorm_ctx *ctx = NULL;
    if (have_cpu) {
        ctx = create_ok("cpu");
        assert_int_equal(clnorm_get_backend(ctx), CLNORM_BACKEND_OPENCL);
        cl_device_id dev = NULL;
        cl_device_type type = 0;
        assert_int_equal(clGetCommandQueueInfo(clnorm_get_queue(ctx), CL_QUEUE_DEVICE,
                                               sizeof dev, &dev, NULL),
                         CL_SUCCESS);
        assert_int_equal(clGetDeviceInfo(dev, CL_DEVICE_TYPE, sizeof type, &type, NULL),
                         CL_SUCCESS);
        assert_true((type & CL_DEVICE_TYPE_CPU) != 0);
        small_run_ok(ctx, CLNORM_STRATEGY_ROW);
        clnorm_free(ctx);
    } else {
        assert_int_equal(clnorm_create("cpu", &ctx), CLNORM_NO_DEVICE);
        assert_null(ctx);
    }

    /* Every "P:D" of the list opens that very device. */
    for (size_t i = 0; i < g_ndev; i++) {
        char spec[32];
        snprintf(spec, sizeof spec, "%u:%u", g_devs[i].platform_index, g_devs[i].device_index);
        ctx = create_ok(spec);
        if (!tu_mentions(clnorm_device_name(ctx), g_devs[i].device_name))
            fail_msg("\"%s\" opened \"%s\", the list says \"%s\"", spec,
                     clnorm_device_name(ctx), g_devs[i].device_name);
        clnorm_free(ctx);
    }
    ctx = create_ok("0:0");
    clnorm_free(ctx);

    /* A piece of the first device's name, upper-cased: matched case-insensitively. */
    char piece[16];
    const size_t len = strlen(g_devs[0].device_name);
    const size_t take = len < 6 ? len : 6;
    for (size_t i = 0; i < take; i++)
        piece[i] = (char)toupper((unsigned char)g_devs[0].device_name[i]);
    piece[take] = '\0';
    ctx = create_ok(piece);
    assert_true(tu_mentions(clnorm_device_name(ctx), piece));
    clnorm_free(ctx);

    /* CLNORM_DEVICE is what clnorm_create(NULL) honours; put the caller's value back. */
    const char *env = getenv("CLNORM_DEVICE");
    char *saved = env ? strdup(env) : NULL;
    setenv("CLNORM_DEVICE", "0:0", 1);
    ctx = create_ok(NULL);
    if (saved) {
        setenv("CLNORM_DEVICE", saved, 1);
        free(saved);
    } else {
        unsetenv("CLNORM_DEVICE");
    }
    for (size_t i = 0; i < g_ndev; i++)
        if (g_devs[i].platform_index == 0 && g_devs[i].device_index == 0 &&
            !tu_mentions(clnorm_device_name(ctx), g_devs[i].device_name))
            fail_msg("CLNORM_DEVICE=0:0 opened \"%s\", not \"%s\"", clnorm_device_name(ctx),
                     g_devs[i].device_name);
    clnorm_free(ctx);
}

/* ------------------------------------------------------------------------------------------ */

static cl_uint ctx_refs(cl_context c)
{
    cl_uint n = 0;
    assert_int_equal(clGetContextInfo(c, CL_CONTEXT_REFERENCE_COUNT, sizeof n, &n, NULL),
                     CL_SUCCESS);
    return n;
}

static cl_uint queue_refs(cl_command_queue q)
{
    cl_uint n = 0;
    assert_int_equal(clGetCommandQueueInfo(q, CL_QUEUE_REFERENCE_COUNT, sizeof n, &n, NULL),
                     CL_SUCCESS);
    return n;
}

/* The application's queue is used, not stolen: after clnorm_free its context and queue hold
 * exactly the references they had before, and still work. */
static void test_create_from_queue(void **state)
{
    (void)state;
    if (g_ndev == 0)
        skip();
    cl_platform_id platform = NULL;
    cl_device_id dev = NULL;
    cl_uint n = 0;
    assert_int_equal(clGetPlatformIDs(1, &platform, &n), CL_SUCCESS);
    assert_int_equal(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &dev, &n), CL_SUCCESS);
    cl_int err = CL_SUCCESS;
    cl_context context = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    assert_int_equal(err, CL_SUCCESS);
    cl_command_queue queue = clCreateCommandQueue(context, dev, 0, &err);
    assert_int_equal(err, CL_SUCCESS);
    const cl_uint c0 = ctx_refs(context), q0 = queue_refs(queue);

    clnorm_ctx *ctx = NULL;
    assert_int_equal(clnorm_create_from_queue(queue, &ctx), CLNORM_OK);
    assert_non_null(ctx);
    assert_int_equal(clnorm_get_backend(ctx), CLNORM_BACKEND_OPENCL);
    assert_ptr_equal(clnorm_get_queue(ctx), queue);
    assert_ptr_equal(clnorm_get_cl_context(ctx), context);
    assert_true(queue_refs(queue) >= q0 + 1);
    assert_true(ctx_refs(context) >= c0 + 1);

    /* Work through both layers, layer 1 on the default (= the application's) queue. */
    small_run_ok(ctx, CLNORM_STRATEGY_AUTO);
    for (int s = 0; s < TU_NUM_STRATEGIES; s++) {
        small_run_ok(ctx, tu_strategies[s]);
        clnorm_desc d;
        clnorm_desc_init(&d, CLNORM_RMS, 4, 33);
        tu_rng rng;
        tu_rng_seed(&rng, 5);
        float x[4 * 33], g[33], b[33], y[4 * 33], want[4 * 33];
        tu_fill_normal(&rng, x, COUNT(x), 0.0, 1.0);
        tu_fill_normal(&rng, g, 33, 1.0, 0.5);
        tu_fill_normal(&rng, b, 33, 0.0, 0.5);
        clnorm_plan *plan = tu_plan(ctx, &d, tu_strategies[s]);
        const tu_launch launch = tu_launch_offsets();
        tu_forward_cl(ctx, plan, &launch, x, g, b, y, NULL, NULL);
        assert_int_equal(clnorm_ref_forward(&d, x, want, g, b, NULL, NULL), CLNORM_OK);
        assert_int_equal(tu_cmp_f32(y, 33, want, 33, 4, 33, 2e-5, 2e-5, "adopted queue"), 0);
        clnorm_plan_free(plan);
    }
    clnorm_free(ctx);

    /* Events of finished commands hold a reference on their queue until the runtime retires
     * them, which PoCL does on its own thread a little after completion (the spec calls
     * reference counts "immediately stale"). So: finish, then give the count up to 2 s to
     * settle before holding clnorm to it. */
    assert_int_equal(clFinish(queue), CL_SUCCESS);
    for (int tries = 0; tries < 200 && (queue_refs(queue) != q0 || ctx_refs(context) != c0);
         tries++)
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    assert_int_equal(queue_refs(queue), q0);
    assert_int_equal(ctx_refs(context), c0);
    /* The application's objects still work. */
    float in[16], out[16];
    for (int i = 0; i < 16; i++)
        in[i] = (float)i;
    cl_mem mem = clCreateBuffer(context, CL_MEM_READ_WRITE, sizeof in, NULL, &err);
    assert_int_equal(err, CL_SUCCESS);
    assert_int_equal(clEnqueueWriteBuffer(queue, mem, CL_TRUE, 0, sizeof in, in, 0, NULL, NULL),
                     CL_SUCCESS);
    assert_int_equal(clEnqueueReadBuffer(queue, mem, CL_TRUE, 0, sizeof out, out, 0, NULL, NULL),
                     CL_SUCCESS);
    assert_memory_equal(in, out, sizeof in);
    clReleaseMemObject(mem);
    assert_int_equal(clReleaseCommandQueue(queue), CL_SUCCESS);
    assert_int_equal(clReleaseContext(context), CL_SUCCESS);
}

/* ------------------------------------------------------------------------------------------ */

/* Plans of one strategy share the cached program; executing never compiles. */
static void test_program_cache(void **state)
{
    (void)state;
    clnorm_ctx *ctx = create_ok(NULL); /* fresh: its cache starts empty */
    if (clnorm_get_backend(ctx) != CLNORM_BACKEND_OPENCL) {
        clnorm_free(ctx);
        skip();
    }
    assert_int_equal(clnorm_program_builds(ctx), 0);
    tu_rng rng;
    tu_rng_seed(&rng, 9);
    static float x[17 * 1024], y[17 * 1024], g[1000], b[1000];
    tu_fill_normal(&rng, x, COUNT(x), 0.0, 1.0);
    tu_fill_normal(&rng, g, 1000, 1.0, 0.5);
    tu_fill_normal(&rng, b, 1000, 0.0, 0.5);
    for (int s = 0; s < TU_NUM_STRATEGIES; s++) {
        clnorm_desc d1, d2;
        clnorm_desc_init(&d1, CLNORM_LAYER, 3, 1000);
        /* Same kind, dtype and flags; other rows, columns and stride (999 and 1000 share the
         * subgroup strategy's register bucket, which is part of its program). */
        clnorm_desc_init(&d2, CLNORM_LAYER, 17, 999);
        d2.x_stride = 1001;
        clnorm_plan *p1 = tu_plan_if(ctx, &d1, tu_strategies[s]);
        if (p1 == NULL)
            continue;
        const size_t after_first = clnorm_program_builds(ctx);
        assert_true(after_first >= 1);
        clnorm_plan *p2 = tu_plan(ctx, &d2, tu_strategies[s]);
        if (clnorm_program_builds(ctx) != after_first)
            fail_msg("%s: a second plan built again (%zu -> %zu builds)",
                     clnorm_strategy_name(tu_strategies[s]), after_first,
                     clnorm_program_builds(ctx));
        for (int rep = 0; rep < 3; rep++) {
            assert_int_equal(clnorm_forward_host(p1, x, y, g, b, NULL, NULL), CLNORM_OK);
            assert_int_equal(clnorm_forward_host(p2, x, y, g, b, NULL, NULL), CLNORM_OK);
        }
        const tu_launch launch = tu_launch_offsets();
        tu_forward_cl(ctx, p1, &launch, x, g, b, y, NULL, NULL);
        assert_int_equal(clnorm_program_builds(ctx), after_first);
        /* The cache belongs to the context, not to the plans. */
        clnorm_plan_free(p1);
        clnorm_plan_free(p2);
        clnorm_plan *p3 = tu_plan(ctx, &d1, tu_strategies[s]);
        assert_int_equal(clnorm_program_builds(ctx), after_first);
        clnorm_plan_free(p3);
    }
    clnorm_free(ctx);
}

/* ------------------------------------------------------------------------------------------ */

#define NTHREADS 4

typedef struct {
    clnorm_ctx *ctx;
    pthread_barrier_t *start;
    int id;
    clnorm_status status[TU_NUM_STRATEGIES], run_status[TU_NUM_STRATEGIES];
    size_t mismatches;
} worker;

/* No cmocka asserts in here (they longjmp to the main thread): results go to *w. */
static void *worker_main(void *arg)
{
    worker *w = arg;
    const size_t rows = 3 + (size_t)w->id, cols = 100 + 37 * (size_t)w->id;
    float *x = malloc(rows * cols * sizeof *x), *y = malloc(rows * cols * sizeof *y);
    float *want = malloc(rows * cols * sizeof *want);
    tu_rng rng;
    tu_rng_seed(&rng, 1000 + (uint64_t)w->id);
    if (x != NULL)
        tu_fill_normal(&rng, x, rows * cols, 1.0, 2.0);
    clnorm_desc d;
    clnorm_desc_init(&d, w->id % 2 ? CLNORM_RMS : CLNORM_LAYER, rows, cols);
    d.flags = CLNORM_NO_GAMMA | CLNORM_NO_BETA;
    pthread_barrier_wait(w->start); /* all threads hit the cold cache together */
    for (int s = 0; s < TU_NUM_STRATEGIES; s++) {
        const int k = (s + w->id) % TU_NUM_STRATEGIES; /* different orders per thread */
        clnorm_plan *plan = NULL;
        w->status[k] = clnorm_plan_create_with(w->ctx, &d, tu_strategies[k], &plan);
        w->run_status[k] = CLNORM_INVALID_ARGUMENT;
        if (w->status[k] == CLNORM_OK && x != NULL && y != NULL && want != NULL) {
            w->run_status[k] = clnorm_forward_host(plan, x, y, NULL, NULL, NULL, NULL);
            if (clnorm_ref_forward(&d, x, want, NULL, NULL, NULL, NULL) != CLNORM_OK)
                w->mismatches++;
            else
                w->mismatches += tu_cmp_f32(y, cols, want, cols, rows, cols, 2e-5, 2e-5,
                                            "thread");
        }
        clnorm_plan_free(plan);
    }
    free(x);
    free(y);
    free(want);
    return NULL;
}

/* Plans created concurrently on one context all succeed, run right, and the program cache
 * builds each program once, as sequential creation does. */
static void test_threads(void **state)
{
    (void)state;
    clnorm_ctx *ctx = create_ok(NULL);
    if (clnorm_get_backend(ctx) != CLNORM_BACKEND_OPENCL) {
        clnorm_free(ctx);
        skip();
    }
    pthread_barrier_t start;
    assert_int_equal(pthread_barrier_init(&start, NULL, NTHREADS), 0);
    worker w[NTHREADS];
    pthread_t t[NTHREADS];
    memset(w, 0, sizeof w);
    for (int i = 0; i < NTHREADS; i++) {
        w[i].ctx = ctx;
        w[i].start = &start;
        w[i].id = i;
        assert_int_equal(pthread_create(&t[i], NULL, worker_main, &w[i]), 0);
    }
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&start);
    const size_t concurrent_builds = clnorm_program_builds(ctx);
    clnorm_free(ctx);

    for (int i = 0; i < NTHREADS; i++)
        for (int s = 0; s < TU_NUM_STRATEGIES; s++) {
            if (w[i].status[s] != CLNORM_OK)
                fail_msg("thread %d: plan %s = %d (%s)", i,
                         clnorm_strategy_name(tu_strategies[s]), w[i].status[s],
                         clnorm_status_string(w[i].status[s]));
            if (w[i].run_status[s] != CLNORM_OK)
                fail_msg("thread %d: forward %s = %d (%s)", i,
                         clnorm_strategy_name(tu_strategies[s]), w[i].run_status[s],
                         clnorm_status_string(w[i].run_status[s]));
        }
    for (int i = 0; i < NTHREADS; i++)
        assert_int_equal(w[i].mismatches, 0);

    /* The same plans created one after another on a fresh context. */
    ctx = create_ok(NULL);
    for (int i = 0; i < NTHREADS; i++)
        for (int s = 0; s < TU_NUM_STRATEGIES; s++) {
            clnorm_desc d;
            clnorm_desc_init(&d, i % 2 ? CLNORM_RMS : CLNORM_LAYER, 3 + (size_t)i,
                             100 + 37 * (size_t)i);
            d.flags = CLNORM_NO_GAMMA | CLNORM_NO_BETA;
            clnorm_plan_free(tu_plan(ctx, &d, tu_strategies[s]));
        }
    const size_t sequential_builds = clnorm_program_builds(ctx);
    clnorm_free(ctx);
    if (concurrent_builds != sequential_builds)
        fail_msg("concurrent plan creation built %zu programs, sequential %zu: the cache "
                 "let a race build twice",
                 concurrent_builds, sequential_builds);
}

/* ------------------------------------------------------------------------------------------ */

static void test_strategy_names(void **state)
{
    (void)state;
    assert_string_equal(clnorm_strategy_name(CLNORM_STRATEGY_AUTO), "auto");
    assert_string_equal(clnorm_strategy_name(CLNORM_STRATEGY_ROW), "row");
    assert_string_equal(clnorm_strategy_name(CLNORM_STRATEGY_WORKGROUP), "workgroup");
    assert_string_equal(clnorm_strategy_name(CLNORM_STRATEGY_SPLIT), "split");
    assert_string_equal(clnorm_strategy_name(CLNORM_STRATEGY_REFERENCE), "reference");
    assert_non_null(clnorm_strategy_name((clnorm_strategy)99));
}

static int group_setup(void **state)
{
    (void)state;
    g_ndev = 0;
    if (clnorm_list_devices(g_devs, MAX_DEVICES, &g_ndev) != CLNORM_OK)
        g_ndev = 0;
    if (g_ndev > MAX_DEVICES)
        g_ndev = MAX_DEVICES;
    for (size_t i = 0; i < g_ndev; i++)
        print_message("device %u:%u %s / %s%s\n", g_devs[i].platform_index,
                      g_devs[i].device_index, g_devs[i].platform_name, g_devs[i].device_name,
                      g_devs[i].is_default ? " (default)" : "");
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strategy_names),
        cmocka_unit_test(test_list_devices),
        cmocka_unit_test(test_create_default),
        cmocka_unit_test(test_create_specs),
        cmocka_unit_test(test_create_from_queue),
        cmocka_unit_test(test_program_cache),
        cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests_name("context", tests, group_setup, NULL);
}
