/*
 * bench.h - declarations shared by the files of clnorm-bench, the side-by-side benchmark.
 *
 * One run measures every contender on the same input data: clnorm (auto and each forced
 * strategy), a naive one-pass OpenCL kernel, a CLBlast GEMV baseline, the CPU reference,
 * oneDNN, and the copy bandwidth of the device and of the host. Each file does one job:
 *   options.c   command line             threads.c   one thread count for everyone
 *   data.c      inputs + reference y     buffers.c   rotated buffer sets (device and host)
 *   timing.c    clock, median, rotation  check.c     max abs error against the reference
 *   clutil.c    OpenCL helpers           latency.c   empty-kernel enqueue-to-finish time
 *   impl_*.c    one contender each       registry.c  the list of contenders
 *   report.c    the table on stdout      csv.c, plot.c  CSV file, gnuplot PNG
 *   main.c      the run: shapes x contenders
 */
#ifndef CLNORM_BENCH_H
#define CLNORM_BENCH_H

#include "clnorm.h"

#include <stddef.h>
#include <stdio.h>

#define BENCH_MAX_SHAPES 64
#define BENCH_MSG 512

/* ---- command line (options.c) ---------------------------------------------------------- */
typedef struct {
    size_t rows, cols;
} bench_shape;

typedef struct {
    clnorm_kind op;                       /* --op layer|rms */
    bench_shape shapes[BENCH_MAX_SHAPES]; /* --shape RxC (repeatable), else the default set */
    size_t n_shapes;
    int quick;                            /* --quick: few small shapes, few reps */
    int reps, warmup;                     /* --reps, --warmup */
    int threads;                          /* --threads N (0: not given) */
    const char *device;                   /* --device SPEC (NULL: clnorm's default) */
    const char *csv_path;                 /* --csv FILE */
    const char *plot_path;                /* --plot FILE.png */
    unsigned long long only;              /* --only: bit i selects contender i; 0 = all */
    size_t rotate_mib;                    /* --rotate-mib N (0: default) */
    double tol;                           /* --tol: max abs error beyond which WRONG */
    double ref_seconds;                   /* time budget of the CPU reference per shape */
} bench_options;

/* Parses argv. Returns 0 to run, 1 when --help/--list printed what was asked (exit 0), and
 * 2 after one line on stderr for a bad flag (exit 2). */
int bench_parse_options(int argc, char **argv, bench_options *opt);

/* ---- threads (threads.c) --------------------------------------------------------------- */
typedef struct {
    int threads;        /* the count everyone uses (POCL_CPU_MAX_CU_COUNT after set-up) */
    int pocl_was_set;   /* POCL_CPU_MAX_CU_COUNT came from the environment */
    int omp_was_set;    /* OMP_NUM_THREADS came from the environment */
    int omp_threads;    /* OMP_NUM_THREADS after set-up */
} bench_threads;

/* Sets POCL_CPU_MAX_CU_COUNT and OMP_NUM_THREADS when unset (before any OpenCL context or
 * oneDNN engine exists) and fills *t. */
void bench_threads_setup(const bench_options *opt, bench_threads *t);
int bench_online_cores(void);

/* ---- input data and reference (data.c) ------------------------------------------------- */
typedef struct {
    clnorm_kind op;
    size_t rows, cols;
    float eps;
    float *x;     /* rows*cols: N(0,1) plus a per-row offset in [-10, 10] */
    float *gamma; /* cols: U(0.5, 1.5) */
    float *beta;  /* cols: U(-0.5, 0.5) */
    float *y_ref; /* rows*cols: clnorm_ref_forward of the above (double accumulation) */
    double bytes;      /* bytes a normalization must move: x + y + gamma + beta */
    double copy_bytes; /* bytes the copy contenders move: x read + y written */
} bench_problem;

/* Allocates and fills the inputs, computes the reference. 0 or -1 (msg says why). */
int bench_problem_init(bench_problem *p, clnorm_kind op, size_t rows, size_t cols, char *msg,
                       size_t msg_size);
void bench_problem_free(bench_problem *p);

/* ---- rotated buffer sets (buffers.c) --------------------------------------------------- */
/* n_sets copies of x (and room for y) whose total exceeds the last-level cache. Set i lives
 * in chunk i / per_chunk at element offset (i % per_chunk) * stride; stride is rows*cols
 * rounded up to 64 elements (256 bytes), so every set starts as aligned as the chunk. */
typedef struct {
    size_t n_sets, stride, per_chunk, n_chunks;
    cl_mem *x, *y; /* n_chunks each */
    cl_mem gamma, beta;
} bench_dev_sets;

typedef struct {
    size_t n_sets, stride;
    float *x, *y; /* n_sets * stride each, 64-byte aligned */
    float *gamma, *beta;
} bench_host_sets;

/* How many sets: enough that x + y of all of them exceed target_bytes, and at least 4. */
size_t bench_sets_needed(size_t rows, size_t cols, size_t target_bytes);
/* The default rotation target: max(256 MiB, 2 x the last-level cache). */
size_t bench_default_rotation_bytes(void);

int bench_dev_sets_create(bench_dev_sets *s, cl_context context, cl_command_queue queue,
                          cl_device_id device, const bench_problem *p, size_t n_sets,
                          char *msg, size_t msg_size);
void bench_dev_sets_release(bench_dev_sets *s);
/* The cl_mem objects and element offset of set i. */
void bench_dev_set(const bench_dev_sets *s, size_t i, cl_mem *x, cl_mem *y, size_t *offset);

int bench_host_sets_create(bench_host_sets *s, const bench_problem *p, size_t n_sets,
                           char *msg, size_t msg_size);
void bench_host_sets_free(bench_host_sets *s);

/* ---- contenders (impl_*.c, registry.c) ------------------------------------------------- */
typedef enum { BENCH_DEVICE = 0, BENCH_HOST = 1 } bench_side;

/* What a contender sees of the run; one side's fields are NULL during the other side. */
typedef struct {
    const bench_problem *p;
    const bench_options *opt;
    const bench_threads *threads;
    /* device side */
    clnorm_ctx *ctx;
    cl_context context;
    cl_command_queue queue;
    cl_device_id device;
    const bench_dev_sets *dev;
    /* host side */
    const bench_host_sets *host;
} bench_env;

/* Return codes of create/run. */
enum { BENCH_OK = 0, BENCH_FAIL = -1, BENCH_SKIP = 1 };

typedef struct {
    const char *name;   /* as in the CSV and --only: clnorm_auto, naive_onepass, ... */
    bench_side side;
    int is_copy;        /* a bandwidth limit: bytes = copy_bytes, checked against x */
    /* Prepares everything a run needs for the problem (programs, plans, scratch). Returns
     * BENCH_OK, BENCH_SKIP (not applicable; msg says why) or BENCH_FAIL (msg says why).
     * note (may be empty) is shown in the table, e.g. the strategy auto chose. */
    int (*create)(const bench_env *env, void **state, char *note, size_t note_size, char *msg,
                  size_t msg_size);
    /* One execution on buffer set `set`, synchronous: OpenCL contenders end with clFinish. */
    int (*run)(void *state, size_t set, char *msg, size_t msg_size);
    void (*destroy)(void *state);
} bench_contender;

/* All contenders compiled in, in table order. */
const bench_contender *const *bench_contenders(size_t *count);
/* Index of the contender named `name`, or -1. */
int bench_contender_index(const char *name);

extern const bench_contender bench_copy_device, bench_copy_host;
extern const bench_contender bench_clnorm_auto, bench_clnorm_row, bench_clnorm_workgroup,
    bench_clnorm_split;
extern const bench_contender bench_naive_onepass;
extern const bench_contender bench_ref_cpu;
#ifdef CLNORM_HAVE_CLBLAST
extern const bench_contender bench_clblast_gemv;
void bench_clblast_release_cache(void);
#endif
#ifdef CLNORM_HAVE_DNNL
extern const bench_contender bench_onednn;
#endif

/* ---- timing (timing.c) ----------------------------------------------------------------- */
double bench_now_s(void); /* monotonic clock, seconds */

typedef struct {
    double median_s, min_s;
    int reps;
} bench_stats;

/* warmup runs, then reps timed runs, each on the next set of the rotation (*cursor counts
 * on across contenders, modulo n_sets). Each run is bounded by the contender itself
 * (clFinish for OpenCL). BENCH_OK or BENCH_FAIL (msg). */
int bench_time(const bench_contender *c, void *state, size_t *cursor, size_t n_sets,
               int warmup, int reps, bench_stats *out, char *msg, size_t msg_size);
double bench_median(double *v, size_t n); /* sorts v */

/* ---- checking (check.c) ---------------------------------------------------------------- */
/* Max abs difference of y (n elements) from want; a NaN/Inf mismatch counts as +inf. */
double bench_max_abs_err(const float *y, const float *want, size_t n);
/* Reads y of set 0 back (device side) or takes it (host side) and compares it with the
 * reference (or with x for a copy). *err gets the max abs error. */
int bench_check(const bench_env *env, bench_side side, int is_copy, float *scratch,
                double *err, char *msg, size_t msg_size);

/* ---- OpenCL helpers (clutil.c) --------------------------------------------------------- */
/* "clEnqueueNDRangeKernel: CL_OUT_OF_RESOURCES" into msg; returns BENCH_FAIL. */
int bench_cl_fail(cl_int err, const char *what, char *msg, size_t msg_size);
/* Builds a program from one source string; the build log goes to msg on failure. */
int bench_cl_program(cl_context context, cl_device_id device, const char *source,
                     cl_program *program, char *msg, size_t msg_size);
int bench_cl_kernel(cl_program program, const char *name, cl_kernel *kernel, char *msg,
                    size_t msg_size);
/* clSetKernelArg with the kernel's name and the argument index in msg on failure. */
int bench_set_arg(cl_kernel kernel, cl_uint index, size_t size, const void *value, char *msg,
                  size_t msg_size);
size_t bench_round_up(size_t n, size_t m);

/* ---- latency (latency.c) --------------------------------------------------------------- */
/* Median enqueue-to-clFinish time of an empty kernel on queue, in seconds. */
int bench_empty_kernel_latency(cl_context context, cl_device_id device, cl_command_queue queue,
                               int reps, double *median_s, char *msg, size_t msg_size);

/* ---- results and output (report.c, csv.c, plot.c) -------------------------------------- */
typedef enum { BENCH_R_OK, BENCH_R_WRONG, BENCH_R_FAILED, BENCH_R_SKIPPED } bench_rstatus;

typedef struct {
    size_t rows, cols;
    const char *impl;
    bench_side side;
    int is_copy;
    bench_rstatus status;
    double median_us, gbps;
    double frac_of_copy;  /* < 0 when the copy row of its side is missing */
    double vs_onednn;     /* impl GB/s / oneDNN GB/s; < 0 when oneDNN has no row */
    double max_err;       /* < 0 when not checked */
    int reps;
    char note[160];
} bench_result;

typedef struct {
    bench_result *v;
    size_t n, cap;
} bench_results;

int bench_results_push(bench_results *r, const bench_result *res);
void bench_results_free(bench_results *r);
/* Fills frac_of_copy and vs_onednn of the results [first, r->n) (one shape). */
void bench_results_derive(bench_results *r, size_t first);

void bench_report_header(FILE *out);
void bench_report_rows(FILE *out, const bench_results *r, size_t first);
int bench_write_csv(const char *path, const char *op, const bench_results *r);
/* 0 on success, 1 when gnuplot is missing (a note was printed), -1 on failure. */
int bench_write_plot(const char *path, const char *title, const bench_results *r);

#endif /* CLNORM_BENCH_H */
