/* The device's bandwidth limit, measured in the same run: a copy of x into y (the output
 * array of the sets: dx for a backward op), the bytes of x read once and written once at the
 * case's dtype. frac_of_copy of every OpenCL contender is relative to this row. The copy
 * moves 32-bit words whatever the dtype, one uint4 per work-item, the last item also the 1-3
 * words of a tail; an odd count of 16-bit elements rounds up to a whole word, which the set
 * padding holds (every set starts 64 elements apart). */
#include "bench.h"

#include <stdlib.h>

static const char copy_source[] =
    "kernel void bench_copy4(global const uint *x, global uint *y, ulong offset, ulong n)\n"
    "{\n"
    "    const size_t i = get_global_id(0);\n"
    "    const size_t n4 = n / 4;\n"
    "    x += offset;\n"
    "    y += offset;\n"
    "    if (i < n4)\n"
    "        vstore4(vload4(i, x), i, y);\n"
    "    if (i == n4)\n"
    "        for (size_t k = 4 * n4; k < n; k++)\n"
    "            y[k] = x[k];\n"
    "}\n";

typedef struct {
    const bench_env *env;
    cl_program program;
    cl_kernel kernel;
    size_t global;
} copy_state;

static void destroy(void *state)
{
    copy_state *s = state;
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
    copy_state *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(msg, msg_size, "out of host memory");
        return BENCH_FAIL;
    }
    s->env = env;
    const bench_problem *p = env->p;
    const cl_ulong n = ((cl_ulong)p->n_elems * p->elem + 3) / 4; /* words */
    s->global = bench_round_up((size_t)(n / 4 + 1), 64);
    int rc = bench_cl_program(env->context, env->device, copy_source, NULL, &s->program,
                          msg, msg_size);
    if (rc == BENCH_OK)
        rc = bench_cl_kernel(s->program, "bench_copy4", &s->kernel, msg, msg_size);
    if (rc == BENCH_OK)
        rc = bench_set_arg(s->kernel, 3, sizeof n, &n, msg, msg_size);
    if (rc != BENCH_OK) {
        destroy(s);
        return rc;
    }
    *out = s;
    return BENCH_OK;
}

static int run(void *state, size_t set, char *msg, size_t msg_size)
{
    copy_state *s = state;
    cl_mem x, y;
    size_t off;
    bench_dev_set(s->env->dev, set, &x, &y, &off);
    const cl_ulong offset = off * s->env->p->elem / 4; /* words: off is a multiple of 64 */
    int rc = bench_set_arg(s->kernel, 0, sizeof x, &x, msg, msg_size);
    if (rc == BENCH_OK)
        rc = bench_set_arg(s->kernel, 1, sizeof y, &y, msg, msg_size);
    if (rc == BENCH_OK)
        rc = bench_set_arg(s->kernel, 2, sizeof offset, &offset, msg, msg_size);
    if (rc != BENCH_OK)
        return rc;
    cl_int err = clEnqueueNDRangeKernel(s->env->queue, s->kernel, 1, NULL, &s->global, NULL, 0,
                                        NULL, NULL);
    if (err != CL_SUCCESS)
        return bench_cl_fail(err, "clEnqueueNDRangeKernel(bench_copy4)", msg, msg_size);
    err = clFinish(s->env->queue);
    return err == CL_SUCCESS ? BENCH_OK : bench_cl_fail(err, "clFinish", msg, msg_size);
}

const bench_contender bench_copy_device = {.name = "copy_device", .side = BENCH_DEVICE,
                                           .role = BENCH_ROLE_COPY, .slots = BENCH_ANY_SLOT,
                                           .forms = BENCH_ANY_FORM, .create = create,
                                           .run = run, .destroy = destroy};
