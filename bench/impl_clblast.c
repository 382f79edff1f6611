/* A BLAS baseline, built where CLBlast was found (CLNORM_WITH_CLBLAST). Row statistics come
 * from CLBlastSgemv with a vector of ones:
 *   sums  = X  . ones   (one GEMV over x)
 *   sumsq = X2 . ones   (X2 = x*x, written by a tiny elementwise kernel into a scratch buffer
 *                        of rows*cols floats, then a second GEMV over it)
 * and a small kernel applies y = (x - mean) * rstd * gamma + beta with mean = sums/cols and
 * var = sumsq/cols - mean^2 (one-pass algebra, like the naive kernel: off by far more than
 * the tolerance on the offset rows of data.c, and labelled an inexact baseline). For --op
 * rms the first GEMV is skipped (mean 0). Its bytes are counted as the bytes a normalization
 * must move (x + y + gamma + beta), not the extra traffic of the scratch and the second
 * GEMV: the row shows what the BLAS route costs.
 * float32 only (Sgemv): other dtypes show it skipped. */
#include "bench.h"

#include <clblast_c.h>
#include <stdlib.h>

static const char clblast_source[] =
    "kernel void clblast_square(global const float *x, global float *sq, ulong offset,\n"
    "                           ulong n)\n"
    "{\n"
    "    const size_t i = get_global_id(0);\n"
    "    if (i < n) {\n"
    "        const float v = x[offset + i];\n"
    "        sq[i] = v * v;\n"
    "    }\n"
    "}\n"
    "kernel void clblast_apply(global const float *x, global float *y,\n"
    "                          global const float *sums, global const float *sumsq,\n"
    "                          global const float *gamma, global const float *beta,\n"
    "                          ulong offset, ulong cols, float eps, int rms)\n"
    "{\n"
    "    const size_t c = get_global_id(0), r = get_global_id(1);\n"
    "    if (c >= cols)\n"
    "        return;\n"
    "    const float mean = rms ? 0.0f : sums[r] / (float)cols;\n"
    "    const float var = sumsq[r] / (float)cols - mean * mean;\n"
    "    const float rstd = rsqrt(var + eps);\n"
    "    const size_t i = offset + r * cols + c;\n"
    "    y[i] = (x[i] - mean) * rstd * gamma[c] + beta[c];\n"
    "}\n";

typedef struct {
    const bench_env *env;
    cl_program program;
    cl_kernel square, apply;
    cl_mem ones, sums, sumsq, sq;
} clblast_state;

void bench_clblast_release_cache(void)
{
    CLBlastClearCache();
}

static int blas_fail(CLBlastStatusCode st, const char *what, char *msg, size_t msg_size)
{
    if ((int)st > -1000)
        return bench_cl_fail((cl_int)st, what, msg, msg_size);
    snprintf(msg, msg_size, "%s: CLBlast status %d", what, (int)st);
    return BENCH_FAIL;
}

static void destroy(void *state)
{
    clblast_state *s = state;
    if (!s)
        return;
    if (s->square)
        clReleaseKernel(s->square);
    if (s->apply)
        clReleaseKernel(s->apply);
    if (s->program)
        clReleaseProgram(s->program);
    cl_mem mems[] = {s->ones, s->sums, s->sumsq, s->sq};
    for (size_t i = 0; i < sizeof mems / sizeof mems[0]; i++)
        if (mems[i])
            clReleaseMemObject(mems[i]);
    free(s);
}

static int make_buffer(cl_context context, size_t floats, cl_mem *mem, const char *what,
                       char *msg, size_t msg_size)
{
    cl_int err;
    *mem = clCreateBuffer(context, CL_MEM_READ_WRITE, floats * sizeof(float), NULL, &err);
    if (err != CL_SUCCESS) {
        *mem = NULL;
        return bench_cl_fail(err, what, msg, msg_size);
    }
    return BENCH_OK;
}

static int create(const bench_env *env, void **out, char *note, size_t note_size, char *msg,
                  size_t msg_size)
{
    (void)note;
    (void)note_size;
    const bench_problem *p = env->p;
    int rc = bench_f32_only(p, "the CLBlast baseline", msg, msg_size);
    if (rc != BENCH_OK)
        return rc;
    clblast_state *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(msg, msg_size, "out of host memory");
        return BENCH_FAIL;
    }
    s->env = env;
    rc = bench_cl_program(env->context, env->device, clblast_source, NULL, &s->program,
                          msg, msg_size);
    if (rc == BENCH_OK)
        rc = bench_cl_kernel(s->program, "clblast_square", &s->square, msg, msg_size);
    if (rc == BENCH_OK)
        rc = bench_cl_kernel(s->program, "clblast_apply", &s->apply, msg, msg_size);
    if (rc == BENCH_OK)
        rc = make_buffer(env->context, p->cols, &s->ones, "clCreateBuffer(ones)", msg,
                         msg_size);
    if (rc == BENCH_OK)
        rc = make_buffer(env->context, p->rows, &s->sums, "clCreateBuffer(sums)", msg,
                         msg_size);
    if (rc == BENCH_OK)
        rc = make_buffer(env->context, p->rows, &s->sumsq, "clCreateBuffer(sumsq)", msg,
                         msg_size);
    if (rc == BENCH_OK)
        rc = make_buffer(env->context, p->rows * p->cols, &s->sq, "clCreateBuffer(x*x)", msg,
                         msg_size);
    if (rc == BENCH_OK) {
        const float one = 1.0f, zero = 0.0f;
        cl_int err = clEnqueueFillBuffer(env->queue, s->ones, &one, sizeof one, 0,
                                         p->cols * sizeof(float), 0, NULL, NULL);
        /* CLBlast computes beta * y even for beta = 0, so y must not hold NaN garbage:
         * both outputs start at 0 (the sums of an RMS run stay 0 and unused). */
        if (err == CL_SUCCESS)
            err = clEnqueueFillBuffer(env->queue, s->sums, &zero, sizeof zero, 0,
                                      p->rows * sizeof(float), 0, NULL, NULL);
        if (err == CL_SUCCESS)
            err = clEnqueueFillBuffer(env->queue, s->sumsq, &zero, sizeof zero, 0,
                                      p->rows * sizeof(float), 0, NULL, NULL);
        if (err == CL_SUCCESS)
            err = clFinish(env->queue);
        if (err != CL_SUCCESS)
            rc = bench_cl_fail(err, "clEnqueueFillBuffer(ones, sums)", msg, msg_size);
    }
    if (rc == BENCH_OK) {
        const cl_mem *vec = env->dev->vec;
        const cl_ulong n = (cl_ulong)p->rows * p->cols, cols = p->cols;
        const cl_float eps = p->eps;
        const cl_int rms = !p->info->has_mean;
        rc = bench_set_arg(s->square, 1, sizeof(cl_mem), &s->sq, msg, msg_size);
        if (rc == BENCH_OK)
            rc = bench_set_arg(s->square, 3, sizeof n, &n, msg, msg_size);
        if (rc == BENCH_OK)
            rc = bench_set_arg(s->apply, 2, sizeof(cl_mem), &s->sums, msg, msg_size);
        if (rc == BENCH_OK)
            rc = bench_set_arg(s->apply, 3, sizeof(cl_mem), &s->sumsq, msg, msg_size);
        if (rc == BENCH_OK)
            rc = bench_set_arg(s->apply, 4, sizeof(cl_mem), &vec[CLNORM_ARG_GAMMA], msg,
                               msg_size);
        if (rc == BENCH_OK)
            rc = bench_set_arg(s->apply, 5, sizeof(cl_mem), &vec[CLNORM_ARG_BETA], msg,
                               msg_size);
        if (rc == BENCH_OK)
            rc = bench_set_arg(s->apply, 7, sizeof cols, &cols, msg, msg_size);
        if (rc == BENCH_OK)
            rc = bench_set_arg(s->apply, 8, sizeof eps, &eps, msg, msg_size);
        if (rc == BENCH_OK)
            rc = bench_set_arg(s->apply, 9, sizeof rms, &rms, msg, msg_size);
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
    clblast_state *s = state;
    const bench_problem *p = s->env->p;
    cl_command_queue queue = s->env->queue;
    cl_mem x, y;
    size_t off;
    bench_dev_set(s->env->dev, set, &x, &y, &off);
    const cl_ulong offset = off;

    int rc = bench_set_arg(s->square, 0, sizeof x, &x, msg, msg_size);
    if (rc == BENCH_OK)
        rc = bench_set_arg(s->square, 2, sizeof offset, &offset, msg, msg_size);
    if (rc == BENCH_OK)
        rc = bench_set_arg(s->apply, 0, sizeof x, &x, msg, msg_size);
    if (rc == BENCH_OK)
        rc = bench_set_arg(s->apply, 1, sizeof y, &y, msg, msg_size);
    if (rc == BENCH_OK)
        rc = bench_set_arg(s->apply, 6, sizeof offset, &offset, msg, msg_size);
    if (rc != BENCH_OK)
        return rc;

    CLBlastStatusCode st;
    if (p->info->has_mean) {
        st = CLBlastSgemv(CLBlastLayoutRowMajor, CLBlastTransposeNo, p->rows, p->cols, 1.0f, x,
                          off, p->cols, s->ones, 0, 1, 0.0f, s->sums, 0, 1, &queue, NULL);
        if (st != CLBlastSuccess)
            return blas_fail(st, "CLBlastSgemv(sums)", msg, msg_size);
    }
    const size_t n = p->rows * p->cols, global_sq = bench_round_up(n, 64);
    cl_int err = clEnqueueNDRangeKernel(queue, s->square, 1, NULL, &global_sq, NULL, 0, NULL,
                                        NULL);
    if (err != CL_SUCCESS)
        return bench_cl_fail(err, "clEnqueueNDRangeKernel(clblast_square)", msg, msg_size);
    st = CLBlastSgemv(CLBlastLayoutRowMajor, CLBlastTransposeNo, p->rows, p->cols, 1.0f, s->sq,
                      0, p->cols, s->ones, 0, 1, 0.0f, s->sumsq, 0, 1, &queue, NULL);
    if (st != CLBlastSuccess)
        return blas_fail(st, "CLBlastSgemv(sums of squares)", msg, msg_size);
    const size_t global[2] = {bench_round_up(p->cols, 64), p->rows};
    err = clEnqueueNDRangeKernel(queue, s->apply, 2, NULL, global, NULL, 0, NULL, NULL);
    if (err != CL_SUCCESS)
        return bench_cl_fail(err, "clEnqueueNDRangeKernel(clblast_apply)", msg, msg_size);
    err = clFinish(queue);
    return err == CL_SUCCESS ? BENCH_OK : bench_cl_fail(err, "clFinish", msg, msg_size);
}

/* x, y, gamma, beta: the plain forward ops (layer, rms) */
#define CLBLAST_SLOTS                                                                        \
    (BENCH_SLOT(CLNORM_ARG_X) | BENCH_SLOT(CLNORM_ARG_Y) | BENCH_SLOT(CLNORM_ARG_GAMMA) |    \
     BENCH_SLOT(CLNORM_ARG_BETA))

const bench_contender bench_clblast_gemv = {.name = "clblast_gemv", .side = BENCH_DEVICE,
                                            .slots = CLBLAST_SLOTS, .inexact = "one-pass",
                                            .create = create, .run = run, .destroy = destroy};
