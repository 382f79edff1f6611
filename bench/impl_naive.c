/* The textbook baseline: one work-item per row, sum and sum of squares in one pass, the
 * variance as E[x^2] - E[x]^2 (not clamped), then a second pass writing y. It is as fast as
 * a plain loop can be and visibly wrong on rows whose mean is large against their spread
 * (the per-row offsets of data.c): the cancellation is the reason clnorm does not do this.
 * float32 only: other dtypes show it skipped. */
#include "bench.h"

#include <stdlib.h>

static const char naive_source[] =
    "kernel void naive_onepass(global const float *x, global float *y,\n"
    "                          global const float *gamma, global const float *beta,\n"
    "                          ulong offset, ulong rows, ulong cols, float eps, int rms)\n"
    "{\n"
    "    const size_t r = get_global_id(0);\n"
    "    if (r >= rows)\n"
    "        return;\n"
    "    global const float *xr = x + offset + r * cols;\n"
    "    global float *yr = y + offset + r * cols;\n"
    "    float s = 0.0f, s2 = 0.0f;\n"
    "    for (size_t c = 0; c < cols; c++) {\n"
    "        const float v = xr[c];\n"
    "        s += v;\n"
    "        s2 += v * v;\n"
    "    }\n"
    "    const float mean = rms ? 0.0f : s / (float)cols;\n"
    "    const float var = s2 / (float)cols - mean * mean;\n"
    "    const float rstd = rsqrt(var + eps);\n"
    "    for (size_t c = 0; c < cols; c++)\n"
    "        yr[c] = (xr[c] - mean) * rstd * gamma[c] + beta[c];\n"
    "}\n";

typedef struct {
    const bench_env *env;
    cl_program program;
    cl_kernel kernel;
} naive_state;

static void destroy(void *state)
{
    naive_state *s = state;
    if (!s)
        return;
    if (s->kernel)
        clReleaseKernel(s->kernel);
    if (s->program)
        clReleaseProgram(s->program);
    free(s);
}

static int create(const bench_env *env, void **out, char *note, size_t note_size, char *msg,
                  size_t msg_size)
{
    (void)note;
    (void)note_size;
    int rc = bench_f32_only(env->p, "the naive kernel", msg, msg_size);
    if (rc != BENCH_OK)
        return rc;
    naive_state *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(msg, msg_size, "out of host memory");
        return BENCH_FAIL;
    }
    s->env = env;
    rc = bench_cl_program(env->context, env->device, naive_source, NULL, &s->program,
                          msg, msg_size);
    if (rc == BENCH_OK)
        rc = bench_cl_kernel(s->program, "naive_onepass", &s->kernel, msg, msg_size);
    if (rc == BENCH_OK) {
        const bench_problem *p = env->p;
        const cl_ulong rows = p->rows, cols = p->cols;
        const cl_int rms = !p->info->has_mean;
        const cl_float eps = p->eps;
        cl_kernel k = s->kernel;
        const cl_mem *vec = env->dev->vec;
        rc = bench_set_arg(k, 2, sizeof(cl_mem), &vec[CLNORM_ARG_GAMMA], msg, msg_size);
        if (rc == BENCH_OK)
            rc = bench_set_arg(k, 3, sizeof(cl_mem), &vec[CLNORM_ARG_BETA], msg, msg_size);
        if (rc == BENCH_OK)
            rc = bench_set_arg(k, 5, sizeof rows, &rows, msg, msg_size);
        if (rc == BENCH_OK)
            rc = bench_set_arg(k, 6, sizeof cols, &cols, msg, msg_size);
        if (rc == BENCH_OK)
            rc = bench_set_arg(k, 7, sizeof eps, &eps, msg, msg_size);
        if (rc == BENCH_OK)
            rc = bench_set_arg(k, 8, sizeof rms, &rms, msg, msg_size);
    }
    if (rc != BENCH_OK) {
        destroy(s);
        return rc;
    }
    *out = s;
    return BENCH_OK;
}

static int run(void *state, size_t set, char *msg, size_t msg_size)
{
    naive_state *s = state;
    cl_mem x, y;
    size_t off;
    bench_dev_set(s->env->dev, set, &x, &y, &off);
    const cl_ulong offset = off;
    int rc = bench_set_arg(s->kernel, 0, sizeof x, &x, msg, msg_size);
    if (rc == BENCH_OK)
        rc = bench_set_arg(s->kernel, 1, sizeof y, &y, msg, msg_size);
    if (rc == BENCH_OK)
        rc = bench_set_arg(s->kernel, 4, sizeof offset, &offset, msg, msg_size);
    if (rc != BENCH_OK)
        return rc;
    const size_t global = s->env->p->rows;
    cl_int err = clEnqueueNDRangeKernel(s->env->queue, s->kernel, 1, NULL, &global, NULL, 0,
                                        NULL, NULL);
    if (err != CL_SUCCESS)
        return bench_cl_fail(err, "clEnqueueNDRangeKernel(naive_onepass)", msg, msg_size);
    err = clFinish(s->env->queue);
    return err == CL_SUCCESS ? BENCH_OK : bench_cl_fail(err, "clFinish", msg, msg_size);
}

/* x, y, gamma, beta: the plain forward ops (layer, rms) */
#define NAIVE_SLOTS                                                                          \
    (BENCH_SLOT(CLNORM_ARG_X) | BENCH_SLOT(CLNORM_ARG_Y) | BENCH_SLOT(CLNORM_ARG_GAMMA) |    \
     BENCH_SLOT(CLNORM_ARG_BETA))

const bench_contender bench_naive_onepass = {.name = "naive_onepass", .side = BENCH_DEVICE,
                                             .slots = NAIVE_SLOTS, .inexact = "one-pass",
                                             .create = create, .run = run, .destroy = destroy};
