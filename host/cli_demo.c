/*
 * cli_demo.c - `clnorm demo`: LayerNorm of a seeded random batch (8192 x 768 by default) on
 * the default device through the cl_mem API (layer 1), checked against the CPU reference and
 * timed (median of clFinish-timed repetitions after warm-up), beside the CPU reference's own
 * time. On a context without an OpenCL device it runs the reference through the host API.
 */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "cli_demo.h"

#include "cli_args.h"
#include "cli_engine.h"

#include <clnorm.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEMO_MAX_ERROR 1e-4
#define DEMO_CPU_REPS 5
#define DEMO_WARMUP 3

typedef struct {
    size_t rows, cols, reps;
    const char *device;
} demo_opts;

typedef struct {
    float *x, *y, *y_ref, *gamma, *beta;
} demo_data;

static void demo_usage(FILE *out)
{
    fputs("usage: clnorm demo [--rows R] [--cols C] [--reps N] [--device SPEC]\n"
          "\n"
          "Runs LayerNorm on a seeded random batch (default 8192 x 768, a transformer's hidden\n"
          "states) on the default OpenCL device, checks it against the CPU reference, and\n"
          "prints the median time and GB/s of both. 'clnorm' with no arguments runs this.\n"
          "\n"
          "  --rows R       rows of the batch (default 8192)\n"
          "  --cols C       normalized length of each row (default 768)\n"
          "  --reps N       timed repetitions on the device (default 30)\n"
          "  --device SPEC  cpu, gpu, accelerator, P:D or a name substring\n"
          "  -h, --help     this help\n",
          out);
}

/* 1 parsed, 0 help printed, -1 error printed. */
static int parse_demo_args(int argc, char **argv, demo_opts *o)
{
    const char *rows = NULL, *cols = NULL, *reps = NULL;
    int i;
    o->rows = 8192;
    o->cols = 768;
    o->reps = 30;
    o->device = NULL;
    for (i = 0; i < argc; i++) {
        const char *v = NULL;
        int r;
        if (cli_is_help(argv[i])) {
            demo_usage(stdout);
            return 0;
        }
        if ((r = cli_take_value(argc, argv, &i, "rows", "demo", &v)) != 0) {
            if (r < 0 || cli_set_once(&rows, v, "rows") != 0)
                return -1;
        } else if ((r = cli_take_value(argc, argv, &i, "cols", "demo", &v)) != 0) {
            if (r < 0 || cli_set_once(&cols, v, "cols") != 0)
                return -1;
        } else if ((r = cli_take_value(argc, argv, &i, "reps", "demo", &v)) != 0) {
            if (r < 0 || cli_set_once(&reps, v, "reps") != 0)
                return -1;
        } else if ((r = cli_take_value(argc, argv, &i, "device", "demo", &v)) != 0) {
            if (r < 0 || cli_set_once(&o->device, v, "device") != 0)
                return -1;
        } else {
            cli_unknown_argument("demo", argv[i]);
            return -1;
        }
    }
    /* A bound that keeps rows * cols * 4 bytes far from overflow on any size_t. */
    if (rows != NULL && cli_parse_size("rows", rows, 1, (size_t)1 << 24, &o->rows) != 0)
        return -1;
    if (cols != NULL && cli_parse_size("cols", cols, 1, (size_t)1 << 24, &o->cols) != 0)
        return -1;
    if (reps != NULL && cli_parse_size("reps", reps, 1, 100000, &o->reps) != 0)
        return -1;
    if (o->rows > ((size_t)1 << 31) / o->cols) {
        cli_error("--rows %zu x --cols %zu is more than 2^31 elements", o->rows, o->cols);
        return -1;
    }
    return 1;
}

/* ------------------------------------------------------------------------------------------
 * Data: splitmix64, Box-Muller normals.
 * ---------------------------------------------------------------------------------------- */
static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in (0, 1). */
static double uniform01(uint64_t *s)
{
    return ((double)(splitmix64(s) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

static double normal01(uint64_t *s)
{
    const double two_pi = 6.283185307179586;
    double u1 = uniform01(s), u2 = uniform01(s);
    return sqrt(-2.0 * log(u1)) * cos(two_pi * u2);
}

static void fill_data(const demo_opts *o, demo_data *d)
{
    uint64_t s = 0x636c6e6f726d2021ull; /* fixed seed: the same batch every run */
    size_t r, c;
    for (r = 0; r < o->rows; r++) {
        double offset = 4.0 * normal01(&s), scale = 0.5 + uniform01(&s);
        for (c = 0; c < o->cols; c++)
            d->x[r * o->cols + c] = (float)(offset + scale * normal01(&s));
    }
    for (c = 0; c < o->cols; c++) {
        d->gamma[c] = (float)(1.0 + 0.1 * normal01(&s));
        d->beta[c] = (float)(0.1 * normal01(&s));
    }
}

/* ------------------------------------------------------------------------------------------
 * Timing
 * ---------------------------------------------------------------------------------------- */
static double now_seconds(void)
{
    struct timespec ts;
#if defined(CLOCK_MONOTONIC)
    clock_gettime(CLOCK_MONOTONIC, &ts);
#else
    timespec_get(&ts, TIME_UTC);
#endif
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static double max_abs_error(const float *a, const float *b, size_t n)
{
    double m = 0.0;
    size_t i;
    for (i = 0; i < n; i++) {
        double e = fabs((double)a[i] - (double)b[i]);
        if (!(e <= m)) /* NaN counts as infinitely wrong */
            m = isnan(e) ? INFINITY : e;
    }
    return m;
}

/* Bytes that must move: read x, write y, read gamma and beta. */
static double bytes_moved(const demo_opts *o)
{
    return (2.0 * (double)o->rows * (double)o->cols + 2.0 * (double)o->cols) * sizeof(float);
}

static void print_timing(const char *label, double seconds, size_t reps, const demo_opts *o)
{
    printf("  %-22s %10.3f ms %9.2f GB/s   (median of %zu)\n", label, seconds * 1e3,
           bytes_moved(o) / seconds / 1e9, reps);
}

/* Runs and times the CPU reference; its first result is the oracle in d->y_ref. */
static int time_reference(const demo_opts *o, const clnorm_desc *desc, demo_data *d,
                          double *median_s)
{
    double t[DEMO_CPU_REPS];
    size_t i;
    for (i = 0; i < DEMO_CPU_REPS; i++) {
        double t0 = now_seconds();
        clnorm_status st = clnorm_ref_forward(desc, d->x, d->y_ref, d->gamma, d->beta, NULL, NULL);
        t[i] = now_seconds() - t0;
        if (st != CLNORM_OK) {
            cli_error("CPU reference failed: %s", clnorm_status_string(st));
            return -1;
        }
    }
    (void)o;
    *median_s = median(t, DEMO_CPU_REPS);
    return 0;
}

/* The library's whole detail: after a build failure that is the kernel build log, which says
 * what failed, printed indented under the one `clnorm:` line. */
static void report_lib_error(const char *what, clnorm_status st, const clnorm_ctx *ctx)
{
    cli_error_detail(stderr, clnorm_last_error(ctx), "%s: %s", what, clnorm_status_string(st));
}

/* The reference backend: no OpenCL device, so the host API runs the reference. */
static int run_host_reference(const demo_opts *o, clnorm_ctx *ctx, clnorm_plan *plan,
                              demo_data *d, double *median_s, size_t *reps_done)
{
    double t[DEMO_CPU_REPS];
    size_t i;
    for (i = 0; i < DEMO_CPU_REPS; i++) {
        double t0 = now_seconds();
        clnorm_status st = clnorm_forward_host(plan, d->x, d->y, d->gamma, d->beta, NULL, NULL);
        t[i] = now_seconds() - t0;
        if (st != CLNORM_OK) {
            report_lib_error("clnorm_forward_host", st, ctx);
            return -1;
        }
    }
    (void)o;
    *median_s = median(t, DEMO_CPU_REPS);
    *reps_done = DEMO_CPU_REPS;
    return 0;
}

/* Layer 1: cl_mem buffers on the context's cl_context, the context's queue. */
static int run_opencl(const demo_opts *o, clnorm_ctx *ctx, clnorm_plan *plan, demo_data *d,
                      double *median_s)
{
    cl_context clctx = clnorm_get_cl_context(ctx);
    cl_command_queue q = clnorm_get_queue(ctx);
    size_t n = o->rows * o->cols, i;
    cl_mem bx = NULL, by = NULL, bg = NULL, bb = NULL;
    cl_int err = CL_SUCCESS;
    double *t = NULL;
    int rc = -1;

    bx = clCreateBuffer(clctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, n * sizeof(float), d->x,
                        &err);
    if (err == CL_SUCCESS)
        by = clCreateBuffer(clctx, CL_MEM_WRITE_ONLY, n * sizeof(float), NULL, &err);
    if (err == CL_SUCCESS)
        bg = clCreateBuffer(clctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                            o->cols * sizeof(float), d->gamma, &err);
    if (err == CL_SUCCESS)
        bb = clCreateBuffer(clctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                            o->cols * sizeof(float), d->beta, &err);
    if (err != CL_SUCCESS) {
        cli_error("clCreateBuffer: %s", clnorm_status_string(err));
        goto out;
    }
    t = malloc(o->reps * sizeof *t);
    if (t == NULL) {
        cli_error("out of memory");
        goto out;
    }
    for (i = 0; i < DEMO_WARMUP + o->reps; i++) {
        double t0 = now_seconds();
        clnorm_status st = clnorm_forward(plan, bx, 0, by, 0, bg, 0, bb, 0, NULL, 0, NULL, 0,
                                          NULL, 0, NULL, NULL);
        if (st != CLNORM_OK) {
            report_lib_error("clnorm_forward", st, ctx);
            goto out;
        }
        err = clFinish(q);
        if (err != CL_SUCCESS) {
            cli_error("clFinish: %s", clnorm_status_string(err));
            goto out;
        }
        if (i >= DEMO_WARMUP)
            t[i - DEMO_WARMUP] = now_seconds() - t0;
    }
    err = clEnqueueReadBuffer(q, by, CL_TRUE, 0, n * sizeof(float), d->y, 0, NULL, NULL);
    if (err != CL_SUCCESS) {
        cli_error("clEnqueueReadBuffer: %s", clnorm_status_string(err));
        goto out;
    }
    *median_s = median(t, o->reps);
    rc = 0;
out:
    free(t);
    if (bx)
        clReleaseMemObject(bx);
    if (by)
        clReleaseMemObject(by);
    if (bg)
        clReleaseMemObject(bg);
    if (bb)
        clReleaseMemObject(bb);
    return rc;
}

int cli_demo(int argc, char **argv)
{
    demo_opts o;
    demo_data d;
    clnorm_desc desc;
    clnorm_ctx *ctx = NULL;
    clnorm_plan *plan = NULL;
    clnorm_status st;
    double ref_s = 0.0, dev_s = 0.0, error;
    size_t n, dev_reps = 0;
    int r, rc = CLI_EXIT_FAIL, reference_backend;

    r = parse_demo_args(argc, argv, &o);
    if (r <= 0)
        return r == 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;

    memset(&d, 0, sizeof d);
    n = o.rows * o.cols;
    d.x = malloc(n * sizeof(float));
    d.y = malloc(n * sizeof(float));
    d.y_ref = malloc(n * sizeof(float));
    d.gamma = malloc(o.cols * sizeof(float));
    d.beta = malloc(o.cols * sizeof(float));
    if (!d.x || !d.y || !d.y_ref || !d.gamma || !d.beta) {
        cli_error("out of memory for a %zu x %zu batch", o.rows, o.cols);
        goto done;
    }
    fill_data(&o, &d);
    clnorm_desc_init(&desc, CLNORM_LAYER, o.rows, o.cols);

    st = clnorm_create(o.device, &ctx);
    if (st != CLNORM_OK) {
        const char *spec = o.device ? o.device : getenv("CLNORM_DEVICE");
        if (spec != NULL && *spec != '\0')
            cli_error("cannot open device '%s': %s (see 'clnorm devices')", spec,
                      clnorm_status_string(st));
        else
            cli_error("cannot open an OpenCL device: %s", clnorm_status_string(st));
        goto done;
    }
    reference_backend = clnorm_get_backend(ctx) == CLNORM_BACKEND_REFERENCE;
    st = clnorm_plan_create(ctx, &desc, &plan);
    if (st != CLNORM_OK) {
        report_lib_error("clnorm_plan_create", st, ctx);
        goto done;
    }

    printf("clnorm %d.%d.%d demo: LayerNorm of %zu x %zu float32 (gamma, beta, eps %g)\n",
           CLNORM_VERSION_MAJOR, CLNORM_VERSION_MINOR, CLNORM_VERSION_PATCH, o.rows, o.cols,
           (double)desc.eps);
    if (reference_backend)
        printf("No OpenCL device was found: running the CPU reference through "
               "clnorm_forward_host.\n");
    printf("  device:   %s\n", clnorm_device_name(ctx));
    printf("  strategy: %s\n", clnorm_strategy_name(clnorm_plan_strategy(plan)));
    fflush(stdout);

    if (time_reference(&o, &desc, &d, &ref_s) != 0)
        goto done;
    if (reference_backend) {
        if (run_host_reference(&o, ctx, plan, &d, &dev_s, &dev_reps) != 0)
            goto done;
    } else {
        if (run_opencl(&o, ctx, plan, &d, &dev_s) != 0)
            goto done;
        dev_reps = o.reps;
    }
    error = max_abs_error(d.y, d.y_ref, n);
    printf("  max abs error vs CPU reference: %.3g (limit %g)\n", error, DEMO_MAX_ERROR);
    printf("  %-22s %13s %14s\n", "", "median time", "bandwidth");
    print_timing(reference_backend ? "clnorm (host API)" : "clnorm (OpenCL)", dev_s, dev_reps,
                 &o);
    print_timing("CPU reference", ref_s, DEMO_CPU_REPS, &o);
    fflush(stdout);
    if (!(error <= DEMO_MAX_ERROR)) {
        cli_error("max abs error %.3g exceeds %g: the device result is wrong", error,
                  DEMO_MAX_ERROR);
        goto done;
    }
    rc = CLI_EXIT_OK;
done:
    clnorm_plan_free(plan);
    clnorm_free(ctx);
    free(d.x);
    free(d.y);
    free(d.y_ref);
    free(d.gamma);
    free(d.beta);
    return rc;
}
