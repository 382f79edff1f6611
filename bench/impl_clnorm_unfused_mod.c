/* The unfused pair on the device for a modulated forward op (layer-mod, rms-mod,
 * add-layer-mod, add-rms-mod): a clnorm plan of the same op without the modulation (auto
 * strategy) writes y = norm(x) * gamma + beta, then a modulation kernel of the bench's own
 * rewrites y in place, y = y * (1 + scale[b]) + shift[b], with b the sample of the row. Two
 * launches on the context's in-order queue, timed together up to one clFinish: what a caller
 * runs whose norm has no modulation (DiT's `modulate(norm(x), shift, scale)` in PyTorch is
 * this pair). It moves the fused op's bytes and y once more (read and written again), which
 * is what the fused op saves.
 *
 * The kernel is meant as a fair contender, as fast as an elementwise pass over y gets: the
 * rows are read and written in place (no second array, no read for ownership of a fresh
 * output), consecutive work-items take consecutive vectors of 4 elements of a row (the
 * device copy's access pattern, impl_copy_device.c: coalesced on GPUs, and what PoCL
 * vectorizes across work-items), the grid is (vectors of a row, groups of rows, samples), so
 * no work-item divides to find its sample, and each work-item keeps its 4 columns of
 * 1 + scale and shift in registers for ROWS_PER_ITEM rows of its sample. The last vector
 * item of a row also does the 1-3 elements of a partial vector.
 *
 * y is rounded to the storage type between the two launches (the fused kernel modulates the
 * unrounded value), so with f16/bf16 storage it can be off by more than the tolerance: an
 * inexact baseline there. */
#include "bench.h"
#include "cl_storage.h"

#include <stdlib.h>

/* Rows of one sample per work-item: the scale and shift loads and the address set-up are
 * paid once per 8 rows, and PoCL's work-group loops run 8x fewer items. On the 2-core PoCL
 * VM of bench/RESULTS.md (the kernel alone, f32, medians of 9 interleaved rounds, two
 * sessions) 8 rows per item moved y at 33-34 GB/s at 8x1024x1152 and 21-59 GB/s at
 * 16x4096x768, 1.1-1.5x one row per item in each session; 16 rows were within noise of 8,
 * 32 rows slower than one. */
#define ROWS_PER_ITEM 8

static const char modulate_source[] =
    BENCH_CL_STORAGE_SOURCE
    "kernel void bench_modulate(global T *y, ulong y_off, ulong y_stride,\n"
    "                           global const P *scale, ulong scale_off,\n"
    "                           global const P *shift, ulong shift_off, ulong mod_stride,\n"
    "                           ulong cols, ulong rows_per_sample, ulong rows_per_item)\n"
    "{\n"
    "    const size_t v = get_global_id(0);\n"
    "    const ulong t0 = get_global_id(1) * rows_per_item;\n"
    "    const ulong b = get_global_id(2);\n"
    "    const ulong n4 = cols / 4;\n"
    "    const ulong t1 = min(t0 + rows_per_item, rows_per_sample);\n"
    "    global const P *sc = scale + scale_off + b * mod_stride;\n"
    "    global const P *sh = shift + shift_off + b * mod_stride;\n"
    "    y += y_off + b * rows_per_sample * y_stride;\n"
    "    if (v < n4) {\n"
    "        const P4 s = (P4)(1) + vload4(v, sc), h = vload4(v, sh);\n"
    "        for (ulong t = t0; t < t1; t++) {\n"
    "            global T *row = y + t * y_stride;\n"
    "            STORE4(LOAD4(row, v) * s + h, row, v);\n"
    "        }\n"
    "    } else if (v == n4) {\n"
    "        for (ulong t = t0; t < t1; t++) {\n"
    "            global T *row = y + t * y_stride;\n"
    "            for (ulong k = 4 * n4; k < cols; k++)\n"
    "                STORE1(LOAD1(row, k) * ((P)1 + sc[k]) + sh[k], row, k);\n"
    "        }\n"
    "    }\n"
    "}\n";

typedef struct {
    const bench_env *env;
    clnorm_plan *plan;
    cl_program program;
    cl_kernel kernel;
    size_t global[3], local[3];
} mod_state;

static void destroy(void *state)
{
    mod_state *s = state;
    if (!s)
        return;
    if (s->kernel)
        clReleaseKernel(s->kernel);
    if (s->program)
        clReleaseProgram(s->program);
    clnorm_plan_free(s->plan);
    free(s);
}

/* The work-group width along a row of `items` vector items: the whole row when it fits in
 * `limit` (no idle item), else the widest multiple of 32 (a GPU's warp) dividing it, else
 * 64 with the grid rounded up (the items past the row return at once). */
static size_t row_group(size_t items, size_t limit)
{
    if (items <= limit)
        return items;
    for (size_t w = limit / 32 * 32; w >= 32; w -= 32)
        if (items % w == 0)
            return w;
    return limit < 64 ? limit : 64;
}

/* The kernel's constant arguments (y, its offset, scale and shift are bound per run). */
static int set_constants(mod_state *s, const bench_problem *p, char *msg, size_t msg_size)
{
    const clnorm_slot_info *y = &p->slot[CLNORM_ARG_Y], *sc = &p->slot[CLNORM_ARG_SCALE];
    const cl_ulong y_stride = y->stride, mod_stride = sc->stride, cols = p->cols;
    const cl_ulong per_sample = p->rows / p->shape.samples, per_item = ROWS_PER_ITEM;
    int rc = bench_set_arg(s->kernel, 2, sizeof y_stride, &y_stride, msg, msg_size);
    if (rc == BENCH_OK)
        rc = bench_set_arg(s->kernel, 7, sizeof mod_stride, &mod_stride, msg, msg_size);
    if (rc == BENCH_OK)
        rc = bench_set_arg(s->kernel, 8, sizeof cols, &cols, msg, msg_size);
    if (rc == BENCH_OK)
        rc = bench_set_arg(s->kernel, 9, sizeof per_sample, &per_sample, msg, msg_size);
    if (rc == BENCH_OK)
        rc = bench_set_arg(s->kernel, 10, sizeof per_item, &per_item, msg, msg_size);
    return rc;
}

/* The grid: (vector items of a row, groups of ROWS_PER_ITEM rows, samples), work-groups
 * along the row only. */
static int set_geometry(mod_state *s, const bench_env *env, char *msg, size_t msg_size)
{
    const bench_problem *p = env->p;
    size_t max_wg = 0;
    cl_int err = clGetKernelWorkGroupInfo(s->kernel, env->device, CL_KERNEL_WORK_GROUP_SIZE,
                                          sizeof max_wg, &max_wg, NULL);
    if (err != CL_SUCCESS)
        return bench_cl_fail(err, "clGetKernelWorkGroupInfo(bench_modulate)", msg, msg_size);
    const size_t items = p->cols / 4 + (p->cols % 4 != 0);
    const size_t per_sample = p->rows / p->shape.samples;
    s->local[0] = row_group(items, max_wg < 512 ? max_wg : 512);
    s->local[1] = s->local[2] = 1;
    s->global[0] = bench_round_up(items, s->local[0]);
    s->global[1] = (per_sample + ROWS_PER_ITEM - 1) / ROWS_PER_ITEM;
    s->global[2] = p->shape.samples;
    return BENCH_OK;
}

static int create(const bench_env *env, void **out, char *note, size_t note_size, char *msg,
                  size_t msg_size)
{
    const bench_problem *p = env->p;
    const unsigned both = CLNORM_SCALE | CLNORM_SHIFT;
    if ((p->info->mod_flags & both) != both || p->shape.samples == 0) {
        snprintf(msg, msg_size, "the modulation kernel takes scale and shift both");
        return BENCH_SKIP;
    }
    mod_state *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(msg, msg_size, "out of host memory");
        return BENCH_FAIL;
    }
    s->env = env;
    clnorm_desc d = p->desc; /* the same op and layout, without the modulation */
    d.flags &= ~both;
    d.samples = 0;
    d.mod_stride = 0;
    char auto_note[64] = "";
    int rc = bench_clnorm_plan(env, &d, CLNORM_STRATEGY_AUTO, &s->plan, auto_note,
                               sizeof auto_note, msg, msg_size);
    if (rc == BENCH_OK)
        rc = bench_cl_program(env->context, env->device, modulate_source,
                              bench_cl_storage_option(p->slot[CLNORM_ARG_Y].dtype),
                              &s->program, msg, msg_size);
    if (rc == BENCH_OK)
        rc = bench_cl_kernel(s->program, "bench_modulate", &s->kernel, msg, msg_size);
    if (rc == BENCH_OK)
        rc = set_constants(s, p, msg, msg_size);
    if (rc == BENCH_OK)
        rc = set_geometry(s, env, msg, msg_size);
    if (rc != BENCH_OK) {
        destroy(s);
        return rc;
    }
    snprintf(note, note_size, "clnorm %s + modulation kernel", auto_note);
    *out = s;
    return BENCH_OK;
}

/* Binds tensor slot `slot` of set `set` to the kernel's (pointer, offset) pair at `index`. */
static int bind(mod_state *s, size_t set, clnorm_arg_slot slot, cl_uint index, char *msg,
                size_t msg_size)
{
    cl_mem mem;
    size_t off;
    bench_dev_arg(s->env->dev, set, slot, &mem, &off);
    const cl_ulong offset = off;
    int rc = bench_set_arg(s->kernel, index, sizeof mem, &mem, msg, msg_size);
    return rc == BENCH_OK ? bench_set_arg(s->kernel, index + 1, sizeof offset, &offset, msg,
                                          msg_size)
                          : rc;
}

static int run(void *state, size_t set, char *msg, size_t msg_size)
{
    mod_state *s = state;
    const bench_env *env = s->env;
    const bench_problem *p = env->p;
    /* The norm: every slot the op takes but the modulation's. */
    const unsigned mod_slots = BENCH_SLOT(CLNORM_ARG_SCALE) | BENCH_SLOT(CLNORM_ARG_SHIFT);
    clnorm_arg args[BENCH_N_SLOTS];
    size_t n = 0;
    for (int a = 0; a < BENCH_N_SLOTS; a++) {
        if (!(p->info->given & ~mod_slots & BENCH_SLOT(a)))
            continue;
        args[n].slot = (clnorm_arg_slot)a;
        bench_dev_arg(env->dev, set, args[n].slot, &args[n].mem, &args[n].offset);
        n++;
    }
    int rc = bind(s, set, CLNORM_ARG_Y, 0, msg, msg_size);
    if (rc == BENCH_OK)
        rc = bind(s, set, CLNORM_ARG_SCALE, 3, msg, msg_size);
    if (rc == BENCH_OK)
        rc = bind(s, set, CLNORM_ARG_SHIFT, 5, msg, msg_size);
    if (rc != BENCH_OK)
        return rc;
    clnorm_status st = clnorm_execute(s->plan, CLNORM_FORWARD, args, n, env->queue, 0, NULL,
                                      NULL);
    if (st != CLNORM_OK) {
        bench_clnorm_msg(env->ctx, st, "clnorm_execute", msg, msg_size);
        return BENCH_FAIL;
    }
    /* The in-order queue runs the modulation after the norm. */
    cl_int err = clEnqueueNDRangeKernel(env->queue, s->kernel, 3, NULL, s->global, s->local, 0,
                                        NULL, NULL);
    if (err != CL_SUCCESS) {
        (void)clFinish(env->queue); /* the norm must be done before the next run's */
        return bench_cl_fail(err, "clEnqueueNDRangeKernel(bench_modulate)", msg, msg_size);
    }
    err = clFinish(env->queue);
    return err == CL_SUCCESS ? BENCH_OK : bench_cl_fail(err, "clFinish", msg, msg_size);
}

/* The forward slots of every modulated op (x, y, gamma, beta; residual and sum for the ADD
 * kinds; scale and shift), scale and shift among them: no backward op qualifies. */
#define MOD_UNFUSED_SLOTS                                                                    \
    (BENCH_SLOT(CLNORM_ARG_X) | BENCH_SLOT(CLNORM_ARG_Y) | BENCH_SLOT(CLNORM_ARG_GAMMA) |    \
     BENCH_SLOT(CLNORM_ARG_BETA) | BENCH_SLOT(CLNORM_ARG_RESIDUAL) |                         \
     BENCH_SLOT(CLNORM_ARG_SUM) | BENCH_SLOT(CLNORM_ARG_SCALE) | BENCH_SLOT(CLNORM_ARG_SHIFT))
#define MOD_UNFUSED_NEEDS (BENCH_SLOT(CLNORM_ARG_SCALE) | BENCH_SLOT(CLNORM_ARG_SHIFT))

const bench_contender bench_clnorm_unfused_mod = {
    .name = "clnorm_unfused", .side = BENCH_DEVICE, .role = BENCH_ROLE_UNFUSED,
    .slots = MOD_UNFUSED_SLOTS, .needs = MOD_UNFUSED_NEEDS, .forms = BENCH_FORM_SAMPLES,
    .inexact = "y rounded before the modulation", .create = create, .run = run,
    .destroy = destroy};
