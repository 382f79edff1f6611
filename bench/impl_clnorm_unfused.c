/* The unfused pair on the device, for a forward op with a residual (add-layer, add-rms): an
 * add kernel of the bench's own, s = x + residual written to the sum array of the set, then
 * a clnorm plan of the op without the residual (ops.c: LayerNorm for add-layer, RMSNorm for
 * add-rms; auto strategy) from s into y. Two launches on the context's in-order queue, timed
 * together up to one clFinish: what a caller without the fused kernel runs. It moves the
 * same bytes as the fused op and then some (s is written, then read again), which is the
 * point of the comparison.
 *
 * The add kernel has the shape of the device copy (impl_copy_device.c): one vector of 4
 * elements per work-item, the last item also the tail, plain stores. s is rounded to the
 * storage type before it is normalized (the fused kernel normalizes the unrounded sum), so
 * with f16/bf16 storage y can be off by more than the tolerance: an inexact baseline there. */
#include "bench.h"
#include "cl_storage.h"

#include <stdlib.h>

static const char add_source[] =
    BENCH_CL_STORAGE_SOURCE
    "kernel void bench_add(global const T *x, ulong x_off, global const T *r, ulong r_off,\n"
    "                      global T *s, ulong s_off, ulong n)\n"
    "{\n"
    "    const size_t i = get_global_id(0);\n"
    "    const ulong n4 = n / 4;\n"
    "    x += x_off;\n"
    "    r += r_off;\n"
    "    s += s_off;\n"
    "    if (i < n4)\n"
    "        STORE4(LOAD4(x, i) + LOAD4(r, i), s, i);\n"
    "    if (i == n4)\n"
    "        for (ulong k = 4 * n4; k < n; k++)\n"
    "            STORE1(LOAD1(x, k) + LOAD1(r, k), s, k);\n"
    "}\n";

typedef struct {
    const bench_env *env;
    clnorm_plan *plan;
    cl_program program;
    cl_kernel kernel;
    size_t global;
} unfused_state;

static void destroy(void *state)
{
    unfused_state *s = state;
    if (!s)
        return;
    if (s->kernel)
        clReleaseKernel(s->kernel);
    if (s->program)
        clReleaseProgram(s->program);
    clnorm_plan_free(s->plan);
    free(s);
}

static int create(const bench_env *env, void **out, char *note, size_t note_size, char *msg,
                  size_t msg_size)
{
    const bench_problem *p = env->p;
    const clnorm_dtype t = p->slot[CLNORM_ARG_X].dtype;
    if (!p->info->has_unfused) {
        snprintf(msg, msg_size, "%s has no op without its residual in clnorm's table",
                 p->info->name);
        return BENCH_SKIP;
    }
    if (p->slot[CLNORM_ARG_SUM].dtype != t || p->slot[CLNORM_ARG_RESIDUAL].dtype != t) {
        snprintf(msg, msg_size, "the residual's type differs from x's: no plain norm takes s");
        return BENCH_SKIP;
    }
    unfused_state *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(msg, msg_size, "out of host memory");
        return BENCH_FAIL;
    }
    s->env = env;
    clnorm_desc d = p->desc;
    d.kind = p->info->unfused_kind;
    char auto_note[64] = "";
    int rc = bench_clnorm_plan(env, &d, CLNORM_STRATEGY_AUTO, &s->plan, auto_note,
                               sizeof auto_note, msg, msg_size);
    if (rc == BENCH_OK)
        rc = bench_cl_program(env->context, env->device, add_source,
                              bench_cl_storage_option(t), &s->program, msg, msg_size);
    if (rc == BENCH_OK)
        rc = bench_cl_kernel(s->program, "bench_add", &s->kernel, msg, msg_size);
    const cl_ulong n = (cl_ulong)p->rows * p->cols;
    if (rc == BENCH_OK)
        rc = bench_set_arg(s->kernel, 6, sizeof n, &n, msg, msg_size);
    if (rc != BENCH_OK) {
        destroy(s);
        return rc;
    }
    s->global = bench_round_up((size_t)(n / 4 + 1), 64);
    snprintf(note, note_size, "add kernel + clnorm %s", auto_note);
    *out = s;
    return BENCH_OK;
}

static int run(void *state, size_t set, char *msg, size_t msg_size)
{
    unfused_state *s = state;
    const bench_env *env = s->env;
    const clnorm_arg_slot add_slots[3] = {CLNORM_ARG_X, CLNORM_ARG_RESIDUAL, CLNORM_ARG_SUM};
    clnorm_arg norm[4];
    int rc = BENCH_OK;
    for (cl_uint k = 0; k < 3 && rc == BENCH_OK; k++) {
        cl_mem mem;
        size_t off;
        bench_dev_arg(env->dev, set, add_slots[k], &mem, &off);
        const cl_ulong offset = off;
        rc = bench_set_arg(s->kernel, 2 * k, sizeof mem, &mem, msg, msg_size);
        if (rc == BENCH_OK)
            rc = bench_set_arg(s->kernel, 2 * k + 1, sizeof offset, &offset, msg, msg_size);
        if (add_slots[k] == CLNORM_ARG_SUM) { /* the norm's input */
            norm[0] = (clnorm_arg){CLNORM_ARG_X, mem, off};
        }
    }
    if (rc != BENCH_OK)
        return rc;
    const clnorm_arg_slot rest[3] = {CLNORM_ARG_Y, CLNORM_ARG_GAMMA, CLNORM_ARG_BETA};
    for (int k = 0; k < 3; k++) {
        norm[k + 1].slot = rest[k];
        bench_dev_arg(env->dev, set, rest[k], &norm[k + 1].mem, &norm[k + 1].offset);
    }
    cl_int err = clEnqueueNDRangeKernel(env->queue, s->kernel, 1, NULL, &s->global, NULL, 0,
                                        NULL, NULL);
    if (err != CL_SUCCESS)
        return bench_cl_fail(err, "clEnqueueNDRangeKernel(bench_add)", msg, msg_size);
    /* The in-order queue runs the norm after the add. */
    clnorm_status st = clnorm_execute(s->plan, CLNORM_FORWARD, norm, 4, env->queue, 0, NULL,
                                      NULL);
    if (st != CLNORM_OK) {
        (void)clFinish(env->queue); /* the add must be done before the next run's */
        bench_clnorm_msg(env->ctx, st, "clnorm_execute", msg, msg_size);
        return BENCH_FAIL;
    }
    err = clFinish(env->queue);
    return err == CL_SUCCESS ? BENCH_OK : bench_cl_fail(err, "clFinish", msg, msg_size);
}

/* x, residual, gamma, beta in; y and the sum out: the fused residual forward ops */
#define UNFUSED_SLOTS                                                                        \
    (BENCH_SLOT(CLNORM_ARG_X) | BENCH_SLOT(CLNORM_ARG_Y) | BENCH_SLOT(CLNORM_ARG_GAMMA) |    \
     BENCH_SLOT(CLNORM_ARG_BETA) | BENCH_SLOT(CLNORM_ARG_RESIDUAL) | BENCH_SLOT(CLNORM_ARG_SUM))
#define UNFUSED_NEEDS (BENCH_SLOT(CLNORM_ARG_RESIDUAL) | BENCH_SLOT(CLNORM_ARG_SUM))

const bench_contender bench_clnorm_unfused = {
    .name = "clnorm_unfused", .side = BENCH_DEVICE, .role = BENCH_ROLE_UNFUSED,
    .slots = UNFUSED_SLOTS, .needs = UNFUSED_NEEDS, .inexact = "s rounded before the norm",
    .create = create, .run = run, .destroy = destroy};
