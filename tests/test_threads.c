/*
 * test_threads.c - the thread-safety contract of include/clnorm.h: a plan may be executed from
 * any number of threads at once, on the same queue or on different queues of its context, and
 * clnorm_last_error is per thread.
 *   own plans:   8 threads on one context, each creating and running plans of its own
 *                (LayerNorm, RMSNorm and both ADD kinds, every strategy), forward and backward.
 *   shared plan: 4 threads on one plan (every strategy; split and the backward use scratch
 *                buffers), forward, backward with saved statistics and backward recomputing
 *                them, through the host layer, the context's queue, a private queue per
 *                thread and one out-of-order queue shared by all.
 *   verbose:     CLNORM_VERBOSE=1 with 8 threads prints exactly one line per call, and still
 *                prints after the threads are gone.
 *   last error:  a thread's failure is its own: other threads' messages stay as they were.
 * Every result is compared bit for bit with a single-threaded run of the same call on the same
 * plan (results are deterministic), and each thread alternates between two data sets so that
 * a stale output or another thread's scratch shows as a mismatch. scripts/tsan.sh runs this
 * suite under ThreadSanitizer. Worker threads never call cmocka (its failures longjmp into the
 * main thread's test); they count mismatches and keep the first message for the main thread.
 * The threads are POSIX threads: ThreadSanitizer does not follow glibc's C11 thrd_create.
 */
#define _POSIX_C_SOURCE 200809L /* pthreads, dup, dup2, fileno, setenv */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "clnorm.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Calls per thread, mode and strategy: 30, a few seconds in all on 2 CPU cores, or
 * CLNORM_THREADS_ITERS (1 to 1000). scripts/tsan.sh and scripts/asan.sh ask for 8:
 * ThreadSanitizer reports a race from one pair of accesses without an order between them,
 * whatever their timing, AddressSanitizer a bad access on the first call that makes it, and
 * their instrumented copies and comparisons took this suite 254 s (TSan) and 59 s (ASan) on
 * the 2-core Xeon VM. */
static int read_iters(void)
{
    const char *env = getenv("CLNORM_THREADS_ITERS");
    if (!env || !*env)
        return 30;
    char *end = NULL;
    const long v = strtol(env, &end, 10);
    if (*end != '\0' || v < 1 || v > 1000) {
        fprintf(stderr, "CLNORM_THREADS_ITERS=%s is not a whole number from 1 to 1000\n", env);
        exit(2);
    }
    return (int)v;
}

static int g_iters; /* read_iters(), once, before the tests */

/* ---- seeded data (splitmix64 + Box-Muller), independent of the shared test helpers ---- */
static uint64_t mix(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static double normal(uint64_t *s)
{
    const double u = ((double)(mix(s) >> 11) + 0.5) * 0x1p-53;
    const double v = ((double)(mix(s) >> 11) + 0.5) * 0x1p-53;
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

static float *floats(size_t n, uint64_t *seed, double offset, double scale)
{
    float *p = malloc((n ? n : 1) * sizeof *p);
    for (size_t i = 0; p && i < n; i++)
        p[i] = (float)(offset + scale * normal(seed));
    return p;
}

/* ---- a barrier (pthread barriers are optional in POSIX) ---- */
typedef struct {
    pthread_mutex_t m;
    pthread_cond_t c;
    int n, count;
    unsigned long phase;
} barrier;

static void barrier_init(barrier *b, int n)
{
    pthread_mutex_init(&b->m, NULL);
    pthread_cond_init(&b->c, NULL);
    b->n = n;
    b->count = 0;
    b->phase = 0;
}

static void barrier_destroy(barrier *b)
{
    pthread_mutex_destroy(&b->m);
    pthread_cond_destroy(&b->c);
}

static void barrier_wait(barrier *b)
{
    pthread_mutex_lock(&b->m);
    const unsigned long phase = b->phase;
    if (++b->count == b->n) {
        b->count = 0;
        b->phase++;
        pthread_cond_broadcast(&b->c);
    } else {
        while (phase == b->phase)
            pthread_cond_wait(&b->c, &b->m);
    }
    pthread_mutex_unlock(&b->m);
}

/* ---- suite state ---- */
typedef struct {
    clnorm_ctx *ctx;
    cl_context context;
    cl_device_id device;
    int ooo; /* the device takes out-of-order queues */
} suite;

static int group_setup(void **state)
{
    suite *s = calloc(1, sizeof *s);
    if (!s)
        return -1;
    *state = s;
    if (clnorm_create(NULL, &s->ctx) != CLNORM_OK)
        return 0; /* CLNORM_DEVICE names no device: the tests skip */
    if (clnorm_get_backend(s->ctx) != CLNORM_BACKEND_OPENCL)
        return 0;
    s->context = clnorm_get_cl_context(s->ctx);
    if (clGetCommandQueueInfo(clnorm_get_queue(s->ctx), CL_QUEUE_DEVICE, sizeof s->device,
                              &s->device, NULL) != CL_SUCCESS)
        return -1;
    cl_command_queue_properties props = 0;
    if (clGetDeviceInfo(s->device, CL_DEVICE_QUEUE_PROPERTIES, sizeof props, &props, NULL) !=
        CL_SUCCESS)
        return -1;
    s->ooo = (props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) != 0;
    return 0;
}

static int group_teardown(void **state)
{
    suite *s = *state;
    clnorm_free(s->ctx);
    free(s);
    return 0;
}

static suite *device_suite(void **state)
{
    suite *s = *state;
    if (!s->context)
        skip();
    return s;
}

/* ---- one problem (float32) and everything the three calls write ---- */
typedef struct {
    clnorm_desc d;
    int add, mean;                     /* an ADD kind (residual, sum); a mean (LayerNorm kinds) */
    float *x, *res, *gamma, *beta, *dy; /* res: NULL unless add */
} data;

typedef struct {
    float *y, *sum, *mean, *rstd; /* forward */
    float *dx, *dgamma, *dbeta;   /* backward from the saved statistics */
    float *dx2, *dgamma2;         /* backward recomputing them */
} result;

enum { NRESULT = 9 };

static float **result_field(result *r, int i)
{
    float **f[NRESULT] = {&r->y, &r->sum, &r->mean, &r->rstd, &r->dx,
                          &r->dgamma, &r->dbeta, &r->dx2, &r->dgamma2};
    return f[i];
}

static const char *const result_names[NRESULT] = {"y", "sum", "mean", "rstd", "dx",
                                                  "dgamma", "dbeta", "dx2", "dgamma2"};

/* Elements of a slot of the problem (its extent, clnorm_slot_query). */
static size_t slot_len(const clnorm_desc *d, clnorm_direction dir, clnorm_arg_slot slot)
{
    clnorm_slot_info info;
    assert_int_equal(clnorm_slot_query(d, dir, slot, &info), CLNORM_OK);
    return info.extent;
}

static size_t result_len(const data *in, int i)
{
    static const clnorm_arg_slot slots[NRESULT] = {
        CLNORM_ARG_Y,  CLNORM_ARG_SUM,    CLNORM_ARG_MEAN,  CLNORM_ARG_RSTD,  CLNORM_ARG_DX,
        CLNORM_ARG_DGAMMA, CLNORM_ARG_DBETA, CLNORM_ARG_DX, CLNORM_ARG_DGAMMA};
    return slot_len(&in->d, i < 4 ? CLNORM_FORWARD : CLNORM_BACKWARD, slots[i]);
}

/* Inputs of a description (flags get SAVE_STATS and WITH_BACKWARD), sized from its slots. */
static void data_make_desc(data *in, const clnorm_desc *d, uint64_t seed)
{
    in->d = *d;
    in->d.flags |= CLNORM_SAVE_STATS | CLNORM_WITH_BACKWARD;
    clnorm_op_info op;
    assert_int_equal(clnorm_op_query(d->kind, &op), CLNORM_OK);
    in->add = op.has_residual;
    in->mean = op.has_mean;
    const size_t n = slot_len(&in->d, CLNORM_FORWARD, CLNORM_ARG_X);
    const size_t c = slot_len(&in->d, CLNORM_FORWARD, CLNORM_ARG_GAMMA);
    in->x = floats(n, &seed, 2.0, 3.0);
    in->res = in->add ? floats(n, &seed, -1.0, 1.0) : NULL;
    in->dy = floats(n, &seed, 0.0, 1.0);
    in->gamma = floats(c, &seed, 1.0, 0.3);
    in->beta = floats(c, &seed, 0.0, 0.3);
    assert_true(in->x && in->dy && in->gamma && in->beta && (!in->add || in->res));
}

static void data_make(data *in, clnorm_kind kind, size_t rows, size_t cols, uint64_t seed)
{
    clnorm_desc d;
    clnorm_desc_init(&d, kind, rows, cols);
    data_make_desc(in, &d, seed);
}

static void data_free(data *in)
{
    free(in->x);
    free(in->res);
    free(in->dy);
    free(in->gamma);
    free(in->beta);
}

/* Outputs the problem has, pre-filled with a NaN so that one not written shows. */
static int result_make(result *r, const data *in)
{
    memset(r, 0, sizeof *r);
    for (int i = 0; i < NRESULT; i++) {
        if ((i == 1 && !in->add) || (i == 2 && !in->mean))
            continue;
        const size_t n = result_len(in, i);
        float *p = malloc((n ? n : 1) * sizeof *p);
        if (!p)
            return -1;
        for (size_t k = 0; k < n; k++)
            p[k] = NAN;
        *result_field(r, i) = p;
    }
    return 0;
}

static void result_free(result *r)
{
    for (int i = 0; i < NRESULT; i++)
        free(*result_field(r, i));
}

/* The first output whose bits differ, or NULL. */
static const char *result_diff(result *got, result *want, const data *in)
{
    for (int i = 0; i < NRESULT; i++) {
        const float *a = *result_field(got, i), *b = *result_field(want, i);
        if (a && memcmp(a, b, result_len(in, i) * sizeof *a) != 0)
            return result_names[i];
    }
    return NULL;
}

/* ---- the three calls, through the host layer ---- */
static clnorm_status run_host(clnorm_plan *plan, const data *in, result *out)
{
    clnorm_host_arg f[8] = {{CLNORM_ARG_X, in->x},         {CLNORM_ARG_Y, out->y},
                            {CLNORM_ARG_GAMMA, in->gamma}, {CLNORM_ARG_BETA, in->beta},
                            {CLNORM_ARG_RSTD, out->rstd}};
    size_t nf = 5;
    clnorm_host_arg b[10] = {{CLNORM_ARG_X, in->x},           {CLNORM_ARG_DY, in->dy},
                             {CLNORM_ARG_GAMMA, in->gamma},   {CLNORM_ARG_RSTD, out->rstd},
                             {CLNORM_ARG_DX, out->dx},        {CLNORM_ARG_DGAMMA, out->dgamma},
                             {CLNORM_ARG_DBETA, out->dbeta}};
    size_t nb = 7;
    clnorm_host_arg r[6] = {{CLNORM_ARG_X, in->x},
                            {CLNORM_ARG_DY, in->dy},
                            {CLNORM_ARG_GAMMA, in->gamma},
                            {CLNORM_ARG_DX, out->dx2},
                            {CLNORM_ARG_DGAMMA, out->dgamma2}};
    size_t nr = 5;
    if (in->mean) {
        f[nf++] = (clnorm_host_arg){CLNORM_ARG_MEAN, out->mean};
        b[nb++] = (clnorm_host_arg){CLNORM_ARG_MEAN, out->mean};
    }
    if (in->add) {
        f[nf++] = (clnorm_host_arg){CLNORM_ARG_RESIDUAL, in->res};
        f[nf++] = (clnorm_host_arg){CLNORM_ARG_SUM, out->sum};
        b[nb++] = (clnorm_host_arg){CLNORM_ARG_RESIDUAL, in->res};
        r[nr++] = (clnorm_host_arg){CLNORM_ARG_RESIDUAL, in->res};
    }
    clnorm_status st = clnorm_execute_host(plan, CLNORM_FORWARD, f, nf);
    if (st == CLNORM_OK)
        st = clnorm_execute_host(plan, CLNORM_BACKWARD, b, nb);
    if (st == CLNORM_OK)
        st = clnorm_execute_host(plan, CLNORM_BACKWARD, r, nr);
    return st;
}

/* ---- the same through cl_mem buffers on a queue ---- */
typedef struct {
    cl_mem x, res, gamma, beta, dy;  /* inputs */
    cl_mem out[NRESULT];            /* by result_field index; NULL where absent */
} dev_bufs;

static cl_mem upload(cl_context c, const float *p, size_t n)
{
    if (!p)
        return NULL;
    cl_int err;
    cl_mem m = clCreateBuffer(c, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, n * sizeof *p,
                              (void *)p, &err);
    return err == CL_SUCCESS ? m : NULL;
}

static int dev_make(dev_bufs *b, cl_context c, const data *in, result *shape)
{
    memset(b, 0, sizeof *b);
    const size_t n = slot_len(&in->d, CLNORM_FORWARD, CLNORM_ARG_X);
    const size_t nc = slot_len(&in->d, CLNORM_FORWARD, CLNORM_ARG_GAMMA);
    b->x = upload(c, in->x, n);
    b->res = upload(c, in->res, n);
    b->dy = upload(c, in->dy, n);
    b->gamma = upload(c, in->gamma, nc);
    b->beta = upload(c, in->beta, nc);
    if (!b->x || !b->dy || !b->gamma || !b->beta || (in->res && !b->res))
        return -1;
    for (int i = 0; i < NRESULT; i++) {
        if (!*result_field(shape, i))
            continue;
        cl_int err;
        b->out[i] = clCreateBuffer(c, CL_MEM_READ_WRITE, result_len(in, i) * sizeof(float),
                                   NULL, &err);
        if (err != CL_SUCCESS)
            return -1;
    }
    return 0;
}

static void dev_free(dev_bufs *b)
{
    cl_mem all[5] = {b->x, b->res, b->gamma, b->beta, b->dy};
    for (int i = 0; i < 5; i++)
        if (all[i])
            clReleaseMemObject(all[i]);
    for (int i = 0; i < NRESULT; i++)
        if (b->out[i])
            clReleaseMemObject(b->out[i]);
}

/* Forward, then the backward from its statistics (waiting for it by event: the queue may be
 * out of order), the recomputing backward independently, non-blocking reads of every output
 * after the call that wrote it, and one wait for all of them. q NULL: the context's queue,
 * which read_q then is. */
static int run_mem(clnorm_plan *plan, const data *in, const dev_bufs *b, cl_command_queue q,
                   cl_command_queue read_q, result *out)
{
    enum { Y, SUM, MEAN, RSTD, DX, DG, DB, DX2, DG2 };
    clnorm_arg f[8] = {{CLNORM_ARG_X, b->x, 0},         {CLNORM_ARG_Y, b->out[Y], 0},
                       {CLNORM_ARG_GAMMA, b->gamma, 0}, {CLNORM_ARG_BETA, b->beta, 0},
                       {CLNORM_ARG_RSTD, b->out[RSTD], 0}};
    size_t nf = 5;
    clnorm_arg bw[10] = {{CLNORM_ARG_X, b->x, 0},          {CLNORM_ARG_DY, b->dy, 0},
                         {CLNORM_ARG_GAMMA, b->gamma, 0},  {CLNORM_ARG_RSTD, b->out[RSTD], 0},
                         {CLNORM_ARG_DX, b->out[DX], 0},   {CLNORM_ARG_DGAMMA, b->out[DG], 0},
                         {CLNORM_ARG_DBETA, b->out[DB], 0}};
    size_t nb = 7;
    clnorm_arg r[6] = {{CLNORM_ARG_X, b->x, 0},
                       {CLNORM_ARG_DY, b->dy, 0},
                       {CLNORM_ARG_GAMMA, b->gamma, 0},
                       {CLNORM_ARG_DX, b->out[DX2], 0},
                       {CLNORM_ARG_DGAMMA, b->out[DG2], 0}};
    size_t nr = 5;
    if (in->mean) {
        f[nf++] = (clnorm_arg){CLNORM_ARG_MEAN, b->out[MEAN], 0};
        bw[nb++] = (clnorm_arg){CLNORM_ARG_MEAN, b->out[MEAN], 0};
    }
    if (in->add) {
        f[nf++] = (clnorm_arg){CLNORM_ARG_RESIDUAL, b->res, 0};
        f[nf++] = (clnorm_arg){CLNORM_ARG_SUM, b->out[SUM], 0};
        bw[nb++] = (clnorm_arg){CLNORM_ARG_RESIDUAL, b->res, 0};
        r[nr++] = (clnorm_arg){CLNORM_ARG_RESIDUAL, b->res, 0};
    }
    cl_event ev[3] = {NULL, NULL, NULL}, reads[NRESULT];
    cl_uint nreads = 0;
    int bad = clnorm_execute(plan, CLNORM_FORWARD, f, nf, q, 0, NULL, &ev[0]) != CLNORM_OK;
    bad = bad || clnorm_execute(plan, CLNORM_BACKWARD, bw, nb, q, 1, &ev[0], &ev[1]) != CLNORM_OK;
    bad = bad || clnorm_execute(plan, CLNORM_BACKWARD, r, nr, q, 0, NULL, &ev[2]) != CLNORM_OK;
    const int writer[NRESULT] = {0, 0, 0, 0, 1, 1, 1, 2, 2}; /* which call wrote each output */
    for (int i = 0; i < NRESULT && !bad; i++) {
        if (!b->out[i])
            continue;
        bad = clEnqueueReadBuffer(read_q, b->out[i], CL_FALSE, 0, result_len(in, i) * sizeof(float),
                                  *result_field(out, i), 1, &ev[writer[i]],
                                  &reads[nreads]) != CL_SUCCESS;
        nreads += !bad;
    }
    if (nreads && clWaitForEvents(nreads, reads) != CL_SUCCESS)
        bad = 1;
    for (cl_uint i = 0; i < nreads; i++)
        clReleaseEvent(reads[i]);
    for (int i = 0; i < 3; i++)
        if (ev[i])
            clReleaseEvent(ev[i]);
    return bad ? -1 : 0;
}

/* ---- workers ---- */
typedef enum {
    MODE_HOST,          /* clnorm_execute_host: the context's queue, inside the library */
    MODE_CTX_QUEUE,     /* clnorm_execute on the context's queue (queue NULL) */
    MODE_PRIVATE_QUEUE, /* clnorm_execute on an in-order queue of the thread's own */
    MODE_SHARED_OOO,    /* clnorm_execute on one out-of-order queue that every thread uses */
    MODE_COUNT
} mode;

static const char *const mode_names[MODE_COUNT] = {"host", "context queue", "private queue",
                                                   "shared out-of-order queue"};

typedef struct {
    suite *s;
    clnorm_plan *plan;         /* shared plan; NULL: the worker makes its own (in[0]->d) */
    clnorm_strategy strategy;  /* of the worker's own plan */
    mode m;
    cl_command_queue queue;    /* for MODE_PRIVATE_QUEUE / MODE_SHARED_OOO */
    const data *in[2];         /* two data sets, alternated */
    result *want[2];           /* their single-threaded results */
    int iters;
    int fails;
    char msg[256];             /* the first failure */
} worker;

/* Counts a failure; the first one's message is kept for the main thread to print. */
static void worker_fail(worker *w, const char *fmt, ...)
{
    if (w->fails++ == 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(w->msg, sizeof w->msg, fmt, ap);
        va_end(ap);
    }
}

static void *work(void *arg)
{
    worker *w = arg;
    clnorm_plan *plan = w->plan;
    if (!plan && clnorm_plan_create_with(w->s->ctx, &w->in[0]->d, w->strategy, &plan) !=
                     CLNORM_OK) {
        worker_fail(w, "creating the thread's own plan failed: %s", clnorm_last_error(w->s->ctx));
        return NULL;
    }
    result got[2];
    dev_bufs dev[2];
    int ready = 0;
    for (; ready < 2; ready++) {
        if (result_make(&got[ready], w->in[ready]) != 0)
            break;
        if (w->m != MODE_HOST && dev_make(&dev[ready], w->s->context, w->in[ready],
                                          &got[ready]) != 0) {
            result_free(&got[ready]);
            break;
        }
    }
    if (ready < 2)
        worker_fail(w, "allocating the thread's buffers failed");
    const cl_command_queue q = w->m == MODE_CTX_QUEUE ? NULL : w->queue;
    for (int it = 0; it < w->iters && ready == 2; it++) {
        const int k = it % 2;
        for (int i = 0; i < NRESULT; i++) { /* NaN again: an output not written shows */
            float *p = *result_field(&got[k], i);
            for (size_t e = 0; p && e < result_len(w->in[k], i); e++)
                p[e] = NAN;
        }
        const int rc = w->m == MODE_HOST
                           ? (run_host(plan, w->in[k], &got[k]) == CLNORM_OK ? 0 : -1)
                           : run_mem(plan, w->in[k], &dev[k], q,
                                     q ? q : clnorm_get_queue(w->s->ctx), &got[k]);
        if (rc != 0) {
            worker_fail(w, "a call failed: %s (iteration %d)", clnorm_last_error(w->s->ctx), it);
            continue;
        }
        const char *diff = result_diff(&got[k], w->want[k], w->in[k]);
        if (diff)
            worker_fail(w, "%s differs from the single-threaded run (iteration %d)", diff, it);
    }
    for (int k = 0; k < ready; k++) {
        if (w->m != MODE_HOST)
            dev_free(&dev[k]);
        result_free(&got[k]);
    }
    if (!w->plan)
        clnorm_plan_free(plan);
    return NULL;
}

/* Runs the workers on threads of their own and fails the test on any worker's failure. */
static void run_workers(worker *w, int n, const char *what)
{
    pthread_t t[16];
    assert_true(n <= 16);
    for (int i = 0; i < n; i++)
        assert_int_equal(pthread_create(&t[i], NULL, work, &w[i]), 0);
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    int fails = 0;
    for (int i = 0; i < n; i++) {
        if (w[i].fails)
            print_error("%s, thread %d: %d failures; first: %s\n", what, i, w[i].fails,
                        w[i].msg);
        fails += w[i].fails;
    }
    assert_int_equal(fails, 0);
}

/* The single-threaded results of a plan for a data set; y checked against the reference too,
 * so that the threads are not compared with garbage. */
static void expect(clnorm_ctx *ctx, clnorm_plan *plan, const data *in, result *want)
{
    assert_int_equal(result_make(want, in), 0);
    const clnorm_status st = run_host(plan, in, want);
    if (st != CLNORM_OK)
        print_error("single-threaded run: %s\n", clnorm_last_error(ctx));
    assert_int_equal(st, CLNORM_OK);
    const size_t n = slot_len(&in->d, CLNORM_FORWARD, CLNORM_ARG_X);
    float *y = malloc(n * sizeof *y), *sum = malloc(n * sizeof *sum);
    assert_true(y && sum);
    clnorm_host_arg a[6] = {{CLNORM_ARG_X, in->x},
                            {CLNORM_ARG_Y, y},
                            {CLNORM_ARG_GAMMA, in->gamma},
                            {CLNORM_ARG_BETA, in->beta}};
    size_t na = 4;
    if (in->add) {
        a[na++] = (clnorm_host_arg){CLNORM_ARG_RESIDUAL, in->res};
        a[na++] = (clnorm_host_arg){CLNORM_ARG_SUM, sum};
    }
    clnorm_desc d = in->d;
    d.flags = 0; /* y alone */
    assert_int_equal(clnorm_ref_execute(&d, CLNORM_FORWARD, a, na), CLNORM_OK);
    for (size_t i = 0; i < n; i++)
        assert_true(fabsf(y[i] - want->y[i]) <= 1e-4f);
    free(y);
    free(sum);
}

/* (a) 8 threads, each with a plan of its own: every kind, every strategy. The ADD kinds take
 * the row and split strategies, whose programs PoCL compiles fastest (their workgroup and
 * subgroup programs cost tens of seconds on a cold cache, and scripts/tsan.sh runs this). */
static void test_own_plans(void **state)
{
    suite *s = device_suite(state);
    enum { N = 8 };
    static const clnorm_kind kinds[N] = {CLNORM_LAYER,     CLNORM_RMS,    CLNORM_ADD_LAYER,
                                         CLNORM_ADD_RMS,   CLNORM_LAYER,  CLNORM_RMS,
                                         CLNORM_ADD_LAYER, CLNORM_ADD_RMS};
    static const clnorm_strategy strats[N] = {
        CLNORM_STRATEGY_ROW,   CLNORM_STRATEGY_WORKGROUP, CLNORM_STRATEGY_ROW,
        CLNORM_STRATEGY_SPLIT, CLNORM_STRATEGY_SPLIT,     CLNORM_STRATEGY_SUBGROUP,
        CLNORM_STRATEGY_SPLIT, CLNORM_STRATEGY_ROW};
    data in[N][2];
    result want[N][2];
    worker w[N];
    memset(w, 0, sizeof w);
    for (int i = 0; i < N; i++) {
        const clnorm_kind kind = kinds[i];
        const clnorm_strategy st = strats[i];
        for (int k = 0; k < 2; k++)
            data_make(&in[i][k], kind, 37, 300, 1000 + 10 * (uint64_t)i + (uint64_t)k);
        /* The expected bits: a plan made alone, with the same description and strategy. */
        clnorm_plan *plan = NULL;
        assert_int_equal(clnorm_plan_create_with(s->ctx, &in[i][0].d, st, &plan), CLNORM_OK);
        for (int k = 0; k < 2; k++)
            expect(s->ctx, plan, &in[i][k], &want[i][k]);
        clnorm_plan_free(plan);
        w[i] = (worker){s, NULL, st, i % 2 ? MODE_CTX_QUEUE : MODE_HOST, NULL,
                        {&in[i][0], &in[i][1]}, {&want[i][0], &want[i][1]}, g_iters, 0, ""};
    }
    run_workers(w, N, "own plans");
    for (int i = 0; i < N; i++)
        for (int k = 0; k < 2; k++) {
            result_free(&want[i][k]);
            data_free(&in[i][k]);
        }
}

/* (b) 4 threads on one plan of a strategy, in every mode of `modes` (bit m: mode m). */
#define ALL_MODES ((1u << MODE_COUNT) - 1)
static void shared_plan_desc(suite *s, clnorm_strategy st, const clnorm_desc *d, unsigned modes)
{
    enum { N = 4 };
    data in[N][2];
    result want[N][2];
    for (int i = 0; i < N; i++)
        for (int k = 0; k < 2; k++)
            data_make_desc(&in[i][k], d, 2000 + 10 * (uint64_t)i + (uint64_t)k);
    clnorm_plan *plan = NULL;
    assert_int_equal(clnorm_plan_create_with(s->ctx, &in[0][0].d, st, &plan), CLNORM_OK);
    for (int i = 0; i < N; i++)
        for (int k = 0; k < 2; k++)
            expect(s->ctx, plan, &in[i][k], &want[i][k]);
    cl_command_queue ooo = NULL;
    if (s->ooo) {
        cl_int err;
        ooo = clCreateCommandQueue(s->context, s->device, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE,
                                   &err);
        assert_int_equal(err, CL_SUCCESS);
    }
    for (int m = 0; m < MODE_COUNT; m++) {
        if ((m == MODE_SHARED_OOO && !ooo) || !(modes & (1u << m)))
            continue; /* the device has no out-of-order queues, or not asked for */
        worker w[N];
        cl_command_queue own[N] = {NULL};
        for (int i = 0; i < N; i++) {
            if (m == MODE_PRIVATE_QUEUE) {
                cl_int err;
                own[i] = clCreateCommandQueue(s->context, s->device, 0, &err);
                assert_int_equal(err, CL_SUCCESS);
            }
            w[i] = (worker){s, plan, st, (mode)m, m == MODE_SHARED_OOO ? ooo : own[i],
                            {&in[i][0], &in[i][1]}, {&want[i][0], &want[i][1]}, g_iters, 0, ""};
        }
        char what[128];
        snprintf(what, sizeof what, "shared %s plan, %s", clnorm_strategy_name(st),
                 mode_names[m]);
        run_workers(w, N, what);
        for (int i = 0; i < N; i++)
            if (own[i])
                clReleaseCommandQueue(own[i]);
    }
    if (ooo)
        clReleaseCommandQueue(ooo);
    clnorm_plan_free(plan);
    for (int i = 0; i < N; i++)
        for (int k = 0; k < 2; k++) {
            result_free(&want[i][k]);
            data_free(&in[i][k]);
        }
}

static void shared_plan(suite *s, clnorm_strategy st, size_t rows, size_t cols)
{
    clnorm_desc d;
    clnorm_desc_init(&d, CLNORM_LAYER, rows, cols);
    shared_plan_desc(s, st, &d, ALL_MODES);
}

/* Few long rows: split runs several column chunks (scratch: per-chunk statistics) and the
 * backward cuts rows into chunks too (scratch: chunk sums, partials, recomputed statistics). */
static void test_shared_plan_split(void **state)
{
    shared_plan(device_suite(state), CLNORM_STRATEGY_SPLIT, 6, 9000);
}

static void test_shared_plan_row(void **state)
{
    shared_plan(device_suite(state), CLNORM_STRATEGY_ROW, 6, 9000);
}

static void test_shared_plan_workgroup(void **state)
{
    shared_plan(device_suite(state), CLNORM_STRATEGY_WORKGROUP, 6, 9000);
}

/* Rows that fit the subgroup strategy's registers with a GPU's vector width too. */
static void test_shared_plan_subgroup(void **state)
{
    shared_plan(device_suite(state), CLNORM_STRATEGY_SUBGROUP, 6, 500);
}

/* GroupNorm in NHWC: a three-step forward and a six-step backward over three scratch
 * buffers (moments, statistics, the per-channel table; sums, coefficients), shared. */
static void test_shared_plan_group_nhwc(void **state)
{
    clnorm_desc d;
    clnorm_desc_init(&d, CLNORM_GROUP, 6, 64);
    d.groups = 8;
    d.spatial = 150;
    d.layout = CLNORM_NHWC;
    shared_plan_desc(device_suite(state), CLNORM_STRATEGY_SPLIT, &d, ALL_MODES);
}

/* The host loop (strategy auto, host calls on a CPU device): calls of several chunks of rows,
 * each shared with the context's worker threads, from four threads at once, one of which at
 * a time has the workers while the others run their chunks alone; the same bits either way.
 * Host calls only: the loop's bits are its own, not the kernels' that cl_mem calls run. (On
 * other devices the plan launches like any other.) */
static void test_shared_plan_host_loop(void **state)
{
    suite *s = device_suite(state);
    static const clnorm_kind kinds[] = {CLNORM_LAYER, CLNORM_ADD_RMS};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        clnorm_desc d;
        clnorm_desc_init(&d, kinds[i], 200, 300);
        shared_plan_desc(s, CLNORM_STRATEGY_AUTO, &d, 1u << MODE_HOST);
    }
    /* GroupNorm's loop: NHWC blocks of positions, NCHW groups of two runs each (several
     * chunks and phases per call) */
    static const clnorm_layout layouts[] = {CLNORM_NHWC, CLNORM_NCHW};
    for (size_t i = 0; i < 2; i++) {
        clnorm_desc d;
        clnorm_desc_init(&d, CLNORM_GROUP, 2, 600);
        d.groups = 3;
        d.spatial = 100;
        d.layout = layouts[i];
        shared_plan_desc(s, CLNORM_STRATEGY_AUTO, &d, 1u << MODE_HOST);
    }
}

/* ---- (c) CLNORM_VERBOSE with threads ---- */
typedef struct {
    clnorm_plan *plan;
    cl_context context;
    cl_command_queue queue; /* the context's */
    const data *in;
    int calls; /* made successfully */
} verbose_worker;

enum { VERBOSE_THREADS = 8, VERBOSE_ROUNDS = 3 };

/* Per round: a host forward and a host backward (the path that once switched verbose off
 * around its inner call), then the three cl_mem calls of run_mem. */
static void *verbose_work(void *arg)
{
    verbose_worker *v = arg;
    result out;
    dev_bufs dev;
    if (result_make(&out, v->in) != 0)
        return NULL;
    const int have_dev = dev_make(&dev, v->context, v->in, &out) == 0;
    for (int i = 0; i < VERBOSE_ROUNDS; i++) {
        v->calls += clnorm_forward_host(v->plan, v->in->x, out.y, v->in->gamma, v->in->beta,
                                        out.mean, out.rstd) == CLNORM_OK;
        v->calls += clnorm_backward_host(v->plan, CLNORM_GRAD_X, v->in->x, v->in->dy, NULL,
                                         NULL, v->in->gamma, out.dx, NULL, NULL) == CLNORM_OK;
        if (have_dev && run_mem(v->plan, v->in, &dev, NULL, v->queue, &out) == 0)
            v->calls += 3;
    }
    dev_free(&dev);
    result_free(&out);
    return NULL;
}

static size_t count_lines(const char *text, const char *prefix, size_t *others)
{
    size_t n = 0;
    *others = 0;
    for (const char *line = text; *line;) {
        const char *end = strchr(line, '\n');
        const size_t len = end ? (size_t)(end - line) : strlen(line);
        if (len >= strlen(prefix) && strncmp(line, prefix, strlen(prefix)) == 0)
            n++;
        else if (strncmp(line, "clnorm_verbose,", 15) != 0)
            ++*others;
        line += len + (end != NULL);
    }
    return n;
}

static void test_verbose_threads(void **state)
{
    (void)device_suite(state); /* skips without a device; the test makes its own context */
    /* stderr into a file for the test's duration: the library prints nowhere else. */
    fflush(stderr);
    FILE *capture = tmpfile();
    assert_non_null(capture);
    const int saved = dup(2);
    assert_true(saved >= 0);
    assert_true(dup2(fileno(capture), 2) >= 0);

    /* CLNORM_VERBOSE is read when the context is created. */
    setenv("CLNORM_VERBOSE", "1", 1);
    clnorm_ctx *ctx = NULL;
    const clnorm_status created = clnorm_create(NULL, &ctx);
    unsetenv("CLNORM_VERBOSE");
    data in;
    data_make(&in, CLNORM_LAYER, 8, 256, 3000);
    clnorm_plan *plan = NULL;
    clnorm_status planned = created == CLNORM_OK ? clnorm_plan_create(ctx, &in.d, &plan)
                                                 : created;
    verbose_worker w[VERBOSE_THREADS];
    pthread_t t[VERBOSE_THREADS];
    int started = 0;
    if (planned == CLNORM_OK) {
        for (; started < VERBOSE_THREADS; started++) {
            w[started] = (verbose_worker){plan, clnorm_get_cl_context(ctx),
                                          clnorm_get_queue(ctx), &in, 0};
            if (pthread_create(&t[started], NULL, verbose_work, &w[started]) != 0)
                break;
        }
        for (int i = 0; i < started; i++)
            pthread_join(t[i], NULL);
    }
    /* After the threads: the context still prints. */
    result out;
    int after = 0;
    if (planned == CLNORM_OK && result_make(&out, &in) == 0) {
        after = clnorm_forward_host(plan, in.x, out.y, in.gamma, in.beta, out.mean, out.rstd) ==
                CLNORM_OK;
        result_free(&out);
    }
    clnorm_plan_free(plan);
    clnorm_free(ctx);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);

    assert_int_equal(created, CLNORM_OK);
    assert_int_equal(planned, CLNORM_OK);
    assert_int_equal(started, VERBOSE_THREADS);
    size_t calls = (size_t)after;
    for (int i = 0; i < VERBOSE_THREADS; i++)
        calls += (size_t)w[i].calls;
    assert_int_equal(calls, VERBOSE_THREADS * VERBOSE_ROUNDS * 5 + 1);

    const long size = ftell(capture);
    assert_true(size >= 0);
    char *text = calloc((size_t)size + 1, 1);
    assert_non_null(text);
    rewind(capture);
    assert_int_equal(fread(text, 1, (size_t)size, capture), (size_t)size);
    fclose(capture);
    size_t others = 0;
    const size_t exec = count_lines(text, "clnorm_verbose,exec,", &others);
    if (exec != calls || others)
        print_error("%zu exec lines for %zu calls, %zu other lines:\n%s\n", exec, calls, others,
                    text);
    assert_int_equal(exec, calls);
    assert_int_equal(others, 0);
    free(text);
    data_free(&in);
}

/* ---- (d) clnorm_last_error per thread ---- */
enum { ERROR_THREADS = 8, ERROR_ROUNDS = 4 };

typedef struct {
    clnorm_ctx *ctx;
    clnorm_plan *plan; /* a valid plan for the successful calls */
    const data *in;
    barrier *bar;
    int id, fails;
    char msg[256];
} error_worker;

/* A description whose x_stride names the thread: the message says which. */
static void fail_as(error_worker *w, char *number, size_t size)
{
    clnorm_desc d = w->in->d;
    d.cols = 1000;
    d.x_stride = 500 + (size_t)w->id;
    snprintf(number, size, "%zu", d.x_stride);
    clnorm_plan *p = NULL;
    if (clnorm_plan_create(w->ctx, &d, &p) != CLNORM_INVALID_ARGUMENT && w->fails++ == 0)
        snprintf(w->msg, sizeof w->msg, "x_stride %s was accepted", number);
    clnorm_plan_free(p);
}

/* The thread's message names `number`, or is empty when number is NULL. */
static void expect_message(error_worker *w, const char *number, int round)
{
    const char *e = clnorm_last_error(w->ctx);
    const int ok = number ? strstr(e, number) != NULL : e[0] == '\0';
    if (!ok && w->fails++ == 0)
        snprintf(w->msg, sizeof w->msg, "round %d: want %s%s, have \"%s\"", round,
                 number ? "a message naming " : "no message", number ? number : "", e);
}

static void *error_work(void *arg)
{
    error_worker *w = arg;
    char mine[32];
    result out;
    if (result_make(&out, w->in) != 0) {
        w->fails++;
        snprintf(w->msg, sizeof w->msg, "out of memory");
    }
    for (int round = 0; round < ERROR_ROUNDS; round++) {
        /* Everyone fails at once, each with a message of its own. */
        fail_as(w, mine, sizeof mine);
        barrier_wait(w->bar);
        expect_message(w, mine, round);
        barrier_wait(w->bar);
        /* Half of the threads succeed (which clears their own message only). */
        if ((w->id + round) % 2 == 0 && !w->fails &&
            clnorm_forward_host(w->plan, w->in->x, out.y, w->in->gamma, w->in->beta, out.mean,
                                out.rstd) != CLNORM_OK && w->fails++ == 0)
            snprintf(w->msg, sizeof w->msg, "a valid call failed: %s",
                     clnorm_last_error(w->ctx));
        barrier_wait(w->bar);
        expect_message(w, (w->id + round) % 2 == 0 ? NULL : mine, round);
        barrier_wait(w->bar);
    }
    result_free(&out);
    return NULL;
}

static void test_last_error_per_thread(void **state)
{
    suite *s = *state;
    if (!s->ctx)
        skip();
    data in;
    data_make(&in, CLNORM_LAYER, 4, 64, 4000);
    in.d.flags = CLNORM_SAVE_STATS;
    clnorm_plan *plan = NULL;
    assert_int_equal(clnorm_plan_create(s->ctx, &in.d, &plan), CLNORM_OK);
    /* The main thread's own failure, which no worker's may replace. */
    clnorm_desc d = in.d;
    d.x_stride = 999;
    clnorm_plan *p = NULL;
    d.cols = 1000;
    assert_int_equal(clnorm_plan_create(s->ctx, &d, &p), CLNORM_INVALID_ARGUMENT);
    assert_non_null(strstr(clnorm_last_error(s->ctx), "999"));

    barrier bar;
    barrier_init(&bar, ERROR_THREADS);
    error_worker w[ERROR_THREADS];
    pthread_t t[ERROR_THREADS];
    for (int i = 0; i < ERROR_THREADS; i++) {
        w[i] = (error_worker){s->ctx, plan, &in, &bar, i, 0, ""};
        assert_int_equal(pthread_create(&t[i], NULL, error_work, &w[i]), 0);
    }
    for (int i = 0; i < ERROR_THREADS; i++)
        pthread_join(t[i], NULL);
    barrier_destroy(&bar);
    int fails = 0;
    for (int i = 0; i < ERROR_THREADS; i++) {
        if (w[i].fails)
            print_error("thread %d: %s\n", i, w[i].msg);
        fails += w[i].fails;
    }
    assert_int_equal(fails, 0);
    assert_non_null(strstr(clnorm_last_error(s->ctx), "999"));
    clnorm_plan_free(plan);
    data_free(&in);
}

/* A thread that has made no call has no message, even where an earlier thread (whose id the
 * new one may reuse: glibc hands a joined thread's descriptor to the next one) failed. */
typedef struct {
    clnorm_ctx *ctx;
    int fail; /* make a failing call first */
    char seen[256];
} fresh_worker;

static void *fresh_work(void *arg)
{
    fresh_worker *f = arg;
    if (f->fail) {
        clnorm_plan *p = NULL;
        (void)clnorm_plan_create_with(f->ctx, NULL, CLNORM_STRATEGY_AUTO, &p);
    }
    snprintf(f->seen, sizeof f->seen, "%s", clnorm_last_error(f->ctx));
    return NULL;
}

static void test_last_error_new_thread(void **state)
{
    suite *s = *state;
    if (!s->ctx)
        skip();
    for (int round = 0; round < 4; round++) {
        fresh_worker a = {s->ctx, 1, ""}, b = {s->ctx, 0, ""};
        pthread_t t;
        assert_int_equal(pthread_create(&t, NULL, fresh_work, &a), 0);
        pthread_join(t, NULL);
        assert_true(a.seen[0] != '\0');
        assert_int_equal(pthread_create(&t, NULL, fresh_work, &b), 0);
        pthread_join(t, NULL);
        if (b.seen[0])
            print_error("a new thread sees \"%s\", the failure of a thread before it\n", b.seen);
        assert_string_equal(b.seen, "");
    }
}

/* More threads fail on one context than it ever had slots for (64 before the per-thread key):
 * the pointer the main thread got from clnorm_last_error stays valid, with its text, until the
 * main thread's next call on the context, and each thread sees its own message. Run in waves
 * of threads that exit, whose slots the context frees as new ones come (ASan sees a freed or
 * reused block). */
enum { MANY_THREADS = 200, MANY_WAVE = 20 };

static void *many_work(void *arg)
{
    error_worker *w = arg;
    char mine[32];
    fail_as(w, mine, sizeof mine);
    expect_message(w, mine, 0);
    return NULL;
}

static void test_last_error_many_threads(void **state)
{
    suite *s = *state;
    if (!s->ctx)
        skip();
    data in;
    data_make(&in, CLNORM_LAYER, 4, 64, 4100);
    clnorm_desc d = in.d;
    d.x_stride = 999;
    d.cols = 1000;
    clnorm_plan *p = NULL;
    assert_int_equal(clnorm_plan_create(s->ctx, &d, &p), CLNORM_INVALID_ARGUMENT);
    const char *kept = clnorm_last_error(s->ctx);
    char copy[512];
    snprintf(copy, sizeof copy, "%s", kept);
    assert_non_null(strstr(copy, "999"));
    int fails = 0;
    for (int wave = 0; wave < MANY_THREADS / MANY_WAVE; wave++) {
        error_worker w[MANY_WAVE];
        pthread_t t[MANY_WAVE];
        for (int i = 0; i < MANY_WAVE; i++) {
            w[i] = (error_worker){s->ctx, NULL, &in, NULL, wave * MANY_WAVE + i, 0, ""};
            assert_int_equal(pthread_create(&t[i], NULL, many_work, &w[i]), 0);
        }
        for (int i = 0; i < MANY_WAVE; i++) {
            pthread_join(t[i], NULL);
            if (w[i].fails && fails++ == 0)
                print_error("thread %d: %s\n", w[i].id, w[i].msg);
        }
    }
    assert_int_equal(fails, 0);
    assert_string_equal(kept, copy); /* read through the pointer kept from before */
    assert_ptr_equal(clnorm_last_error(s->ctx), kept);
    data_free(&in);
}

int main(void)
{
    g_iters = read_iters();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_own_plans),
        cmocka_unit_test(test_shared_plan_row),
        cmocka_unit_test(test_shared_plan_split),
        cmocka_unit_test(test_shared_plan_workgroup),
        cmocka_unit_test(test_shared_plan_subgroup),
        cmocka_unit_test(test_shared_plan_group_nhwc),
        cmocka_unit_test(test_shared_plan_host_loop),
        cmocka_unit_test(test_verbose_threads),
        cmocka_unit_test(test_last_error_per_thread),
        cmocka_unit_test(test_last_error_new_thread),
        cmocka_unit_test(test_last_error_many_threads),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
