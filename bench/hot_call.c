/*
 * clnorm-hot-call: the cost of one layer-1 call on hot buffers. A LayerNorm plan (float32,
 * gamma, beta, mean and rstd) is executed again and again on the same cl_mem buffers, each
 * call waited for before the next; prints the median, 10th and 90th percentile in µs. With
 * --host the same plan runs through the host-pointer call (clnorm_execute_host) on the same
 * host arrays: on a CPU device, the host loop's own cost (CLNORM_HOST_THREADS sets its
 * threads), which on hot data is its arithmetic rather than the memory's.
 *
 * clnorm-bench measures on rotated buffers larger than the cache, as the issues ask; this is
 * the floor under it, the launch path alone: what the library and the runtime spend per call.
 * Under `valgrind --tool=callgrind --toggle-collect=clnorm_execute` it counts the
 * instructions of the calls only, a number that does not move with the machine's load
 * (bench/RESULTS.md, "Kernel scalars in one struct"); under
 * `--toggle-collect=clnorm_execute_host`, with --host, those of the host loop.
 *
 * With --rotate-mib N the calls take their tensors from sets of buffers of N MiB in all, one
 * set after the other, as an application's stream of calls on fresh data does (and as
 * clnorm-bench rotates): the same calls with nothing else in the process between them, which
 * clnorm-bench's interleaved contenders are.
 *
 *   clnorm-hot-call [--shape RxC] [--backward] [--host] [--reps N] [--rotate-mib N]
 */
#include <clnorm.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int usage(const char *msg)
{
    fprintf(stderr, "clnorm-hot-call: %s\nusage: clnorm-hot-call [--shape RxC] [--backward] "
                    "[--host] [--reps N] [--rotate-mib N]\n", msg);
    return 2;
}

/* A whole number in [1, max] from text, or 0. */
static size_t parse_count(const char *s, size_t max)
{
    char *end;
    if (!s || *s < '0' || *s > '9')
        return 0;
    const unsigned long long v = strtoull(s, &end, 10);
    return (*end == '\0' && v >= 1 && v <= max) ? (size_t)v : 0;
}

/* One call of `dir` on one set of the tensors: cl_mem m through clnorm_execute, waited for,
 * or with host_call the host arrays a through clnorm_execute_host. m and a: x, y (also dy),
 * gamma, beta, mean, rstd, dx, dgamma, dbeta. */
static clnorm_status call_once(clnorm_plan *plan, clnorm_direction dir, cl_mem *m, float **a,
                               int host_call)
{
    const int bwd = dir == CLNORM_BACKWARD;
    if (host_call) {
        const clnorm_host_arg f[] = {{CLNORM_ARG_X, a[0]},     {CLNORM_ARG_Y, a[1]},
                                     {CLNORM_ARG_GAMMA, a[2]}, {CLNORM_ARG_BETA, a[3]},
                                     {CLNORM_ARG_MEAN, a[4]},  {CLNORM_ARG_RSTD, a[5]}};
        const clnorm_host_arg b[] = {{CLNORM_ARG_X, a[0]},      {CLNORM_ARG_DY, a[1]},
                                     {CLNORM_ARG_GAMMA, a[2]},  {CLNORM_ARG_MEAN, a[4]},
                                     {CLNORM_ARG_RSTD, a[5]},   {CLNORM_ARG_DX, a[6]},
                                     {CLNORM_ARG_DGAMMA, a[7]}, {CLNORM_ARG_DBETA, a[8]}};
        return clnorm_execute_host(plan, dir, bwd ? b : f, bwd ? 8 : 6);
    }
    const clnorm_arg f[] = {{CLNORM_ARG_X, m[0], 0},    {CLNORM_ARG_Y, m[1], 0},
                            {CLNORM_ARG_GAMMA, m[2], 0}, {CLNORM_ARG_BETA, m[3], 0},
                            {CLNORM_ARG_MEAN, m[4], 0},  {CLNORM_ARG_RSTD, m[5], 0}};
    const clnorm_arg b[] = {{CLNORM_ARG_X, m[0], 0},      {CLNORM_ARG_DY, m[1], 0},
                            {CLNORM_ARG_GAMMA, m[2], 0},   {CLNORM_ARG_MEAN, m[4], 0},
                            {CLNORM_ARG_RSTD, m[5], 0},    {CLNORM_ARG_DX, m[6], 0},
                            {CLNORM_ARG_DGAMMA, m[7], 0}, {CLNORM_ARG_DBETA, m[8], 0}};
    cl_event done = NULL;
    clnorm_status st = clnorm_execute(plan, dir, bwd ? b : f, bwd ? 8 : 6, NULL, 0, NULL, &done);
    if (st == CLNORM_OK && clWaitForEvents(1, &done) != CL_SUCCESS)
        st = CLNORM_OPENCL_ERROR;
    if (done)
        clReleaseEvent(done);
    return st;
}

int main(int argc, char **argv)
{
    size_t rows = 1, cols = 768, reps = 20000, rotate_mib = 0;
    int backward = 0, host_call = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--backward") == 0) {
            backward = 1;
        } else if (strcmp(argv[i], "--host") == 0) {
            host_call = 1;
        } else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
            if (!(reps = parse_count(argv[++i], 100000000)))
                return usage("--reps takes a whole number from 1 to 1e8");
        } else if (strcmp(argv[i], "--rotate-mib") == 0 && i + 1 < argc) {
            if (!(rotate_mib = parse_count(argv[++i], 65536)))
                return usage("--rotate-mib takes a whole number from 1 to 65536");
        } else if (strcmp(argv[i], "--shape") == 0 && i + 1 < argc) {
            const char *s = argv[++i], *x = strchr(s, 'x');
            char r[32];
            if (!x || (size_t)(x - s) >= sizeof r)
                return usage("--shape takes RxC");
            memcpy(r, s, (size_t)(x - s));
            r[x - s] = '\0';
            rows = parse_count(r, (size_t)1 << 24);
            cols = parse_count(x + 1, (size_t)1 << 24);
            if (!rows || !cols || rows * cols > ((size_t)1 << 26))
                return usage("--shape: rows and columns from 1, at most 2^26 elements");
        } else {
            return usage("unknown argument");
        }
    }

    clnorm_ctx *ctx = NULL;
    clnorm_status st = clnorm_create(NULL, &ctx);
    if (st != CLNORM_OK || clnorm_get_backend(ctx) != CLNORM_BACKEND_OPENCL) {
        fprintf(stderr, "clnorm-hot-call: no OpenCL device: %s\n", clnorm_status_string(st));
        clnorm_free(ctx);
        return 1;
    }
    cl_context cl = clnorm_get_cl_context(ctx);
    cl_command_queue queue = clnorm_get_queue(ctx);
    clnorm_desc desc;
    clnorm_desc_init(&desc, CLNORM_LAYER, rows, cols);
    desc.flags |= CLNORM_SAVE_STATS | CLNORM_WITH_BACKWARD;
    clnorm_plan *plan = NULL;
    float *host = malloc(rows * cols * sizeof *host);
    double *t = malloc(reps * sizeof *t);
    /* x, y (also dy), gamma, beta, mean, rstd, dx, dgamma, dbeta */
    const size_t bytes[9] = {rows * cols * 4, rows * cols * 4, cols * 4, cols * 4, rows * 4,
                             rows * 4,        rows * cols * 4, cols * 4, cols * 4};
    size_t set_bytes = 0;
    for (int i = 0; i < 9; i++)
        set_bytes += bytes[i];
    /* One set of the tensors, or with --rotate-mib as many as fill it (at least two). */
    size_t sets = 1;
    if (rotate_mib) {
        sets = (rotate_mib << 20) / set_bytes;
        sets = sets < 2 ? 2 : sets > 65536 ? 65536 : sets;
    }
    cl_mem(*mem)[9] = calloc(sets, sizeof *mem);
    float *(*arr)[9] = calloc(sets, sizeof *arr); /* --host: the same tensors as host arrays */
    int rc = 1;
    if (!host || !t || !mem || !arr) {
        fprintf(stderr, "clnorm-hot-call: out of host memory\n");
        goto out;
    }
    if ((st = clnorm_plan_create(ctx, &desc, &plan)) != CLNORM_OK) {
        fprintf(stderr, "clnorm-hot-call: plan: %s\n", clnorm_last_error(ctx));
        goto out;
    }
    for (size_t i = 0; i < rows * cols; i++)
        host[i] = (float)(i % 13) * 0.25f;
    for (size_t k = 0; host_call && k < sets; k++)
        for (int i = 0; i < 9; i++) {
            arr[k][i] = malloc(bytes[i]);
            if (!arr[k][i]) {
                fprintf(stderr, "clnorm-hot-call: out of host memory\n");
                goto out;
            }
            /* every array written once, so that no timed call pays its pages' first touch */
            memcpy(arr[k][i], host, bytes[i]);
        }
    for (size_t k = 0; !host_call && k < sets; k++)
        for (int i = 0; i < 9; i++) {
            /* Every buffer holds data from the start (outputs too: no timed call pays the
             * first touch of its pages); the forward below writes mean and rstd. */
            cl_int err;
            mem[k][i] = clCreateBuffer(cl, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes[i],
                                       host, &err);
            if (err != CL_SUCCESS) {
                fprintf(stderr, "clnorm-hot-call: clCreateBuffer failed (%d)\n", (int)err);
                goto out;
            }
        }
    /* One forward on every set first: the backward reads its mean and rstd. */
    for (size_t k = 0; st == CLNORM_OK && k < sets; k++)
        st = call_once(plan, CLNORM_FORWARD, mem[k], arr[k], host_call);
    const clnorm_direction dir = backward ? CLNORM_BACKWARD : CLNORM_FORWARD;
    for (size_t i = 0; st == CLNORM_OK && i < reps; i++) {
        const double t0 = now_us();
        st = call_once(plan, dir, mem[i % sets], arr[i % sets], host_call);
        t[i] = now_us() - t0;
    }
    if (st != CLNORM_OK) {
        fprintf(stderr, "clnorm-hot-call: %s: %s\n", clnorm_status_string(st),
                clnorm_last_error(ctx));
        goto out;
    }
    qsort(t, reps, sizeof *t, cmp_double);
    /* The context's device (CLNORM_VERBOSE=1 says whether a call ran on its in-thread
     * device, the latency path) */
    cl_device_id device = NULL;
    char name[128] = "?";
    if (clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, sizeof device, &device, NULL) !=
            CL_SUCCESS ||
        clGetDeviceInfo(device, CL_DEVICE_NAME, sizeof name, name, NULL) != CL_SUCCESS)
        strcpy(name, "?");
    name[sizeof name - 1] = '\0';
    char rotation[64] = "";
    if (sets > 1)
        snprintf(rotation, sizeof rotation, ", %zu sets of buffers in turn", sets);
    printf("%s %zux%zu, context on %s%s: median %.2f us, p10 %.2f, p90 %.2f (%zu calls%s)\n",
           backward ? "backward" : "forward", rows, cols, name,
           !host_call                                ? ""
           : clnorm_plan_uses_host_loop(plan, dir) ? ", host-pointer call, host loop"
                                                   : ", host-pointer call, through the device",
           t[reps / 2], t[reps / 10], t[reps * 9 / 10], reps, rotation);
    rc = 0;
out:
    for (size_t k = 0; k < sets && mem && arr; k++)
        for (int i = 0; i < 9; i++) {
            if (mem[k][i])
                clReleaseMemObject(mem[k][i]);
            free(arr[k][i]);
        }
    free(mem);
    free(arr);
    clnorm_plan_free(plan);
    clnorm_free(ctx);
    free(host);
    free(t);
    return rc;
}
