/*
 * app_cl.h - the OpenCL side both host applications share: one device, one in-order queue that
 * the application owns and clnorm adopts (clnorm_create_from_queue), so CLBlast GEMMs, clnorm
 * plans and the application's own kernels are chained on it with no host round trip; buffers;
 * the application's kernels; checked CLBlast calls; and a timeline of profiled commands for
 * --time.
 */
#ifndef CLNORM_APP_CL_H
#define CLNORM_APP_CL_H

#include <clnorm.h>

#include <clblast_c.h>

#include <stddef.h>

/* The precision the device computes in: the .npy files stay float32 either way. */
typedef enum {
    APP_F32 = 0,
    APP_F64 = 1, /* needs cl_khr_fp64: CLBlast's D routines, clnorm's F64, kernels in double */
    APP_AUTO = 2 /* F64 where the device has cl_khr_fp64, else F32 */
} app_precision;

/* Parses --precision: f32, f64 or auto. 0 ok; -1 error printed. */
int app_parse_precision(const char *text, app_precision *out);

/* The options both programs share about how they run: --precision (default `fallback`), and
 * --runs (default 5, only with --time). 0 ok; -1 error printed. */
int app_parse_run_options(const char *precision_text, const char *runs_text, int time,
                          app_precision fallback, app_precision *precision, size_t *runs);

typedef struct {
    cl_context context;
    cl_device_id device;
    cl_command_queue queue; /* in-order; with profiling when asked for */
    clnorm_ctx *norm;       /* clnorm's context, adopting `queue` */
    cl_program program;     /* the application's kernels */
    char device_name[256];
    int f64;     /* computing in double */
    size_t elem; /* bytes per element of every device buffer: 4 or 8 */
} app_env;

/* Opens the device `spec` names (NULL: CLNORM_DEVICE, else clnorm's default; the same
 * spellings as `clnorm devices`: "cpu", "gpu", "P:D", a name), creates the application's queue
 * (with CL_QUEUE_PROFILING_ENABLE when `profiling`), has clnorm adopt it and builds the
 * application's kernels from `source` in the precision (F64 on a device without cl_khr_fp64
 * is an error). 0 ok; -1 error printed, env zeroed. */
int app_env_open(app_env *env, const char *spec, int profiling, app_precision precision,
                 const char *source);

/* "f32" or "f64", and clnorm's dtype of the same. */
const char *app_precision_name(const app_env *env);
clnorm_dtype app_dtype(const app_env *env);

/* Releases everything; NULL-safe on a zeroed env. */
void app_env_close(app_env *env);

/* 0 when err is CL_SUCCESS, else prints "<what>: OpenCL error <code> (<phrase>)" and -1. */
int app_cl_check(cl_int err, const char *what);

/* 0 when st is CLBlastSuccess, else prints "<what>: CLBlast status <code>" and -1. */
int app_blas_check(CLBlastStatusCode st, const char *what);

/* A device buffer of `count` elements of the env's precision, filled from the float32 values
 * `init` when not NULL (converted; blocking, at set-up only). NULL on failure (printed). */
cl_mem app_buffer(app_env *env, size_t count, const float *init, const char *what);

/* Reads `count` elements from the start of buf into dst as float32, after everything queued
 * (blocking). 0 ok; -1 error printed. */
int app_read(app_env *env, cl_mem buf, size_t count, float *dst);

/* What a timed command was, for the normalization share. */
typedef enum { APP_GEMM = 0, APP_NORM = 1, APP_OTHER = 2, APP_CATEGORIES = 3 } app_category;

/* Events of one timed run, in enqueue order. When not `on`, app_timeline_add releases at once
 * and events need not be asked for at all (app_timeline_event gives NULL). */
typedef struct {
    int on;
    cl_event *events;
    app_category *cats;
    size_t n, cap;
} app_timeline;

/* Where the next command's event goes: a local the caller passes to the enqueue call and then
 * hands to app_timeline_add, or NULL when the timeline is off (tl may be NULL: never timed).
 * app_gemm, app_launch and app_norm do this themselves. */
cl_event *app_timeline_event(app_timeline *tl, cl_event *slot);

/* Records (takes over) an event of category `cat`; releases it when off. 0 ok; -1 printed. */
int app_timeline_add(app_timeline *tl, cl_event event, app_category cat);

/* One GEMM, or `batch` > 1 of them strided (CLBlast's strided-batched GEMM), row-major:
 *   C = alpha * A B + beta * C,  or A B^T with trans_b (x W^T for W stored (out, in)).
 * Offsets, leading dimensions and strides are in elements. S or D routine by precision. */
typedef struct {
    int trans_b;
    size_t m, n, k;
    double alpha, beta;
    cl_mem a;
    size_t a_off, lda, a_stride;
    cl_mem b;
    size_t b_off, ldb, b_stride;
    cl_mem c;
    size_t c_off, ldc, c_stride;
    size_t batch; /* 0 or 1: one GEMM */
} app_gemm_args;

/* Enqueues it on the env's queue, recorded in tl as APP_GEMM (tl may be NULL). 0 ok; -1
 * printed (naming `what`). */
int app_gemm(app_env *env, const app_gemm_args *g, const char *what, app_timeline *tl);

/* A kernel of the application's program. 0 ok; -1 error printed. */
int app_kernel(app_env *env, const char *name, cl_kernel *out);

/* Sets a kernel's arguments from (size, pointer) pairs: `n` of them. 0 ok; -1 printed. */
typedef struct {
    size_t size;
    const void *value;
} app_karg;
int app_set_args(cl_kernel k, const char *name, const app_karg *args, size_t n);

/* Enqueues a 1-D kernel over `global` work-items (rounded up to APP_LOCAL; the kernel
 * bounds-checks), recorded in tl as `cat` (tl may be NULL). 0 ok; -1 printed. */
int app_launch(app_env *env, cl_kernel k, const char *name, size_t global, app_category cat,
               app_timeline *tl);

/* Creates a clnorm plan, printing clnorm's own sentence on failure. 0 ok; -1 printed. */
int app_plan(app_env *env, const clnorm_desc *desc, const char *what, clnorm_plan **plan);

/* Runs a plan forward over named arguments on the application's queue, recorded in tl as
 * APP_NORM (tl may be NULL). 0 ok; -1 printed. */
int app_norm(app_env *env, clnorm_plan *plan, const clnorm_arg *args, size_t nargs,
             const char *what, app_timeline *tl);

/* After the queue finished: milliseconds per category and in all (device time from the first
 * command's start to the last's end). A command is charged from the later of the previous
 * command's end and its own queued time to its own end: an op of several kernels (a CLBlast
 * GEMM, a split-row norm) gives only its last kernel's event, and this charges it all of them,
 * without charging it the device idling while the host had not yet enqueued it.
 * 0 ok; -1 printed. Releases the events and empties the timeline. */
int app_timeline_sum(app_timeline *tl, double ms[APP_CATEGORIES], double *total_ms);

void app_timeline_free(app_timeline *tl);

/* --time: medians over the timed runs of one whole computation. */
typedef struct {
    int runs;         /* how many timed runs (set by the caller) */
    double wall_ms;   /* host clock, first enqueue to the queue's end */
    double device_ms; /* the device's span, from the profiled events */
    double ms[APP_CATEGORIES]; /* charged per command kind (app_timeline_sum) */
} app_timing;

/* Enqueues one whole computation on env's queue, recording its commands' events in tl (NULL
 * events when tl is off); nothing blocks. */
typedef int (*app_enqueue_fn)(void *state, app_timeline *tl);

/* Runs `enqueue` once and waits: the run that builds CLBlast's kernels and warms the caches.
 * With `timing` (the queue must profile), then timing->runs timed runs, each waited for.
 * 0 ok; -1 printed (the queue is drained either way, so buffers may be released). */
int app_run(app_env *env, app_enqueue_fn enqueue, void *state, app_timing *timing);

/* Work-items per work-group of the applications' elementwise kernels (PoCL's own choice for a
 * NULL local size makes groups of a few items, each a task of its own). */
#define APP_LOCAL 64

#endif /* CLNORM_APP_CL_H */
