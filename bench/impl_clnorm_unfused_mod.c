/* The unfused pair on the device for a modulated forward op (layer-mod, rms-mod,
 * add-layer-mod, add-rms-mod, group-mod): a clnorm plan of the same op without the modulation
 * (and without the SiLU: group-mod's comes after the modulation; auto strategy) writes y =
 * norm(x) * gamma + beta, then a modulation kernel of the bench's own rewrites y in place,
 * y = y * (1 + scale[b]) + shift[b] (group-mod: then y = silu(y), y / (1 + exp(-y)) as
 * clnorm's kernels write it), with b the sample of the row. Two launches on the context's
 * in-order queue, timed together up to one clFinish: what a caller runs whose norm has no
 * modulation (DiT's `modulate(norm(x), shift, scale)` in PyTorch is this pair; a UNet
 * ResBlock's `silu(norm(h) * (1 + scale) + shift)` too, with the SiLU in the same pass). It
 * moves the fused op's bytes and y once more (read and written again), which is what the
 * fused op saves.
 *
 * The kernels are meant as a fair contender, as fast as an elementwise pass over y gets: the
 * rows are read and written in place (no second array, no read for ownership of a fresh
 * output), consecutive work-items take consecutive vectors of W elements of a row (4: the
 * device copy's access pattern, impl_copy_device.c, coalesced on GPUs; 16 for the SiLU's
 * pass on CPU devices, see vector_width), the grid is (vectors of a row, groups of rows,
 * samples), so no work-item divides to find its sample, and each work-item keeps its W
 * columns of 1 + scale and shift in registers for ROWS_PER_ITEM rows of its sample. The
 * last vector item of a row also does the elements of a partial vector. GroupNorm's (B, C)
 * modulation is per (sample, channel): in NHWC y is N x HW rows of C, the rows kernel's
 * form with HW rows per batch entry; in NCHW a channel's HW positions are one row sharing
 * one scale and shift, so bench_modulate_nchw's grid is (vectors of the HW positions,
 * groups of ROWS_PER_ITEM channels, batch entries), each item its W positions of each of its
 * channels.
 *
 * y is rounded to the storage type between the two launches (the fused kernel modulates the
 * unrounded value), so with f16/bf16 storage it can be off by more than the tolerance: an
 * inexact baseline there. */
#include "bench.h"
#include "cl_storage.h"

#include <stdlib.h>
#include <string.h>

/* Rows of one sample per work-item: the scale and shift loads and the address set-up are
 * paid once per 8 rows, and PoCL's work-group loops run 8x fewer items. On the 2-core PoCL
 * VM of bench/RESULTS.md (the kernel alone, f32, medians of 9 interleaved rounds, two
 * sessions) 8 rows per item moved y at 33-34 GB/s at 8x1024x1152 and 21-59 GB/s at
 * 16x4096x768, 1.1-1.5x one row per item in each session; 16 rows were within noise of 8,
 * 32 rows slower than one. */
#define ROWS_PER_ITEM 8

/* What a work-item takes along a row: W consecutive elements as one vector (PW), 4 or
 * 16 (-DW=16: group-mod's pass on CPU devices, see vector_width), with LOADW/STOREW (y) and
 * LOADP (scale, shift) beside cl_storage.h's LOAD4/STORE4; then the activation after the
 * modulation: the SiLU under -DBENCH_SILU (group-mod), as clnorm's kernels write it. */
static const char width_source[] =
    "#ifndef W\n"
    "#define W 4\n"
    "#endif\n"
    "#if W == 16\n"
    "#if defined(T_F64)\n"
    "typedef double16 PW;\n"
    "#else\n"
    "typedef float16 PW;\n"
    "#endif\n"
    "#define LOADP(p, i) vload16((i), (p))\n"
    "#if defined(T_F16)\n"
    "#define LOADW(p, i) vload_half16((i), (global const half *)(p))\n"
    "#define STOREW(v, p, i) vstore_half16_rte((v), (i), (global half *)(p))\n"
    "#elif defined(T_BF16)\n"
    "#define LOADW(p, i) (PW)(LOAD4(p, 4 * (i)), LOAD4(p, 4 * (i) + 1), \\\n"
    "                        LOAD4(p, 4 * (i) + 2), LOAD4(p, 4 * (i) + 3))\n"
    "#define STOREW(v, p, i) do { const PW w_ = (v); \\\n"
    "    STORE4(w_.s0123, p, 4 * (i)); STORE4(w_.s4567, p, 4 * (i) + 1); \\\n"
    "    STORE4(w_.s89ab, p, 4 * (i) + 2); STORE4(w_.scdef, p, 4 * (i) + 3); } while (0)\n"
    "#else\n"
    "#define LOADW(p, i) vload16((i), (p))\n"
    "#define STOREW(v, p, i) vstore16((v), (i), (p))\n"
    "#endif\n"
    "#else\n"
    "typedef P4 PW;\n"
    "#define LOADP(p, i) vload4((i), (p))\n"
    "#define LOADW LOAD4\n"
    "#define STOREW STORE4\n"
    "#endif\n"
    "#ifdef BENCH_SILU\n"
    "PW actw(PW u) { return u / ((PW)(1) + exp(-u)); }\n"
    "P act1(P u) { return u / ((P)1 + exp(-u)); }\n"
    "#else\n"
    "#define actw(u) (u)\n"
    "#define act1(u) (u)\n"
    "#endif\n";

/* The two kernels, each a program of its own (cl_storage.h's source, width_source, then the
 * kernel's: one string literal of all would pass C's 4095 characters). */
static const char modulate_source[] =
    "kernel void bench_modulate(global T *y, ulong y_off, ulong y_stride,\n"
    "                           global const P *scale, ulong scale_off,\n"
    "                           global const P *shift, ulong shift_off, ulong mod_stride,\n"
    "                           ulong cols, ulong rows_per_sample, ulong rows_per_item)\n"
    "{\n"
    "    const size_t v = get_global_id(0);\n"
    "    const ulong t0 = get_global_id(1) * rows_per_item;\n"
    "    const ulong b = get_global_id(2);\n"
    "    const ulong nw = cols / W;\n"
    "    const ulong t1 = min(t0 + rows_per_item, rows_per_sample);\n"
    "    global const P *sc = scale + scale_off + b * mod_stride;\n"
    "    global const P *sh = shift + shift_off + b * mod_stride;\n"
    "    y += y_off + b * rows_per_sample * y_stride;\n"
    "    if (v < nw) {\n"
    "        const PW s = (PW)(1) + LOADP(sc, v), h = LOADP(sh, v);\n"
    "        for (ulong t = t0; t < t1; t++) {\n"
    "            global T *row = y + t * y_stride;\n"
    "            STOREW(actw(LOADW(row, v) * s + h), row, v);\n"
    "        }\n"
    "    } else if (v == nw) {\n"
    "        for (ulong t = t0; t < t1; t++) {\n"
    "            global T *row = y + t * y_stride;\n"
    "            for (ulong k = W * nw; k < cols; k++)\n"
    "                STORE1(act1(LOAD1(row, k) * ((P)1 + sc[k]) + sh[k]), row, k);\n"
    "        }\n"
    "    }\n"
    "}\n";

static const char modulate_nchw_source[] =
    "/* GroupNorm in NCHW: sample n's channel c is the row of hw positions at n * y_stride +\n"
    " * c * hw, modulated by row n / per_mod of scale and shift */\n"
    "kernel void bench_modulate_nchw(global T *y, ulong y_off, ulong y_stride,\n"
    "                                global const P *scale, ulong scale_off,\n"
    "                                global const P *shift, ulong shift_off, ulong mod_stride,\n"
    "                                ulong hw, ulong channels, ulong per_mod,\n"
    "                                ulong channels_per_item)\n"
    "{\n"
    "    const size_t v = get_global_id(0);\n"
    "    const ulong c0 = get_global_id(1) * channels_per_item;\n"
    "    const ulong n = get_global_id(2);\n"
    "    const ulong nw = hw / W;\n"
    "    const ulong c1 = min(c0 + channels_per_item, channels);\n"
    "    global const P *sc = scale + scale_off + n / per_mod * mod_stride;\n"
    "    global const P *sh = shift + shift_off + n / per_mod * mod_stride;\n"
    "    y += y_off + n * y_stride;\n"
    "    if (v < nw) {\n"
    "        for (ulong c = c0; c < c1; c++) {\n"
    "            global T *row = y + c * hw;\n"
    "            const P s = (P)1 + sc[c], h = sh[c];\n"
    "            STOREW(actw(LOADW(row, v) * s + h), row, v);\n"
    "        }\n"
    "    } else if (v == nw) {\n"
    "        for (ulong c = c0; c < c1; c++) {\n"
    "            global T *row = y + c * hw;\n"
    "            const P s = (P)1 + sc[c], h = sh[c];\n"
    "            for (ulong k = W * nw; k < hw; k++)\n"
    "                STORE1(act1(LOAD1(row, k) * s + h), row, k);\n"
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

/* Where the modulation kernel's rows are, in elements of y: `cols` wide, `stride` apart,
 * `per_sample` of them per row of scale and shift, `samples` such blocks; in GroupNorm's
 * NCHW (`nchw`) the rows are a channel's `cols` = HW positions, `per_sample` (C) channels
 * per batch entry `stride` apart, `samples` (N) batch entries, per_mod of them per row of
 * scale and shift. */
typedef struct {
    int nchw;
    size_t cols, stride, per_sample, samples, per_mod;
    size_t width; /* W: elements per work-item along a row */
} mod_geometry;

/* W: 16 for group-mod's pass (the SiLU after the modulation) on CPU devices, else 4. The
 * SiLU's exponential and division make that pass compute-bound on CPUs, and clnorm's own
 * kernels use 16-wide vectors there (src/policy.c): on the 2-core PoCL VM the float4 pass
 * took about twice as long as float16's at 1x320x32x32 and 8x320x32x32 (bench/RESULTS.md,
 * "GroupNorm's scale-shift norm"). The plain modulation keeps the width it was measured
 * with (4: memory-bound). */
static size_t vector_width(const bench_env *env)
{
    cl_device_type type = 0;
    if (!(env->p->info->act_flags & CLNORM_SILU) ||
        clGetDeviceInfo(env->device, CL_DEVICE_TYPE, sizeof type, &type, NULL) != CL_SUCCESS)
        return 4;
    return (type & CL_DEVICE_TYPE_CPU) ? 16 : 4;
}

static mod_geometry geometry_of(const bench_problem *p)
{
    const clnorm_slot_info *y = &p->slot[CLNORM_ARG_Y];
    mod_geometry g = {0};
    g.samples = p->shape.samples;
    if (p->info->form != BENCH_FORM_GROUPS) { /* B samples of T rows of C */
        g.cols = p->cols;
        g.stride = y->stride;
        g.per_sample = p->rows / p->shape.samples;
        return g;
    }
    const size_t hw = bench_shape_spatial(&p->shape), per_mod = p->rows / p->shape.samples;
    if (p->layout == CLNORM_NHWC && hw > 1) { /* N x HW rows of C (y dense: stride 0) */
        g.cols = g.stride = p->cols;
        g.per_sample = per_mod * hw;
        return g;
    }
    g.nchw = 1;
    g.cols = hw;
    g.stride = y->stride;
    g.per_sample = p->cols;
    g.samples = p->rows;
    g.per_mod = per_mod;
    return g;
}

/* The kernel's constant arguments (y, its offset, scale and shift are bound per run). */
static int set_constants(mod_state *s, const bench_problem *p, const mod_geometry *g, char *msg,
                         size_t msg_size)
{
    const cl_ulong y_stride = g->stride, mod_stride = p->slot[CLNORM_ARG_SCALE].stride;
    const cl_ulong cols = g->cols, per_sample = g->per_sample, per_item = ROWS_PER_ITEM;
    const cl_ulong per_mod = g->per_mod;
    cl_uint i = 8;
    int rc = bench_set_arg(s->kernel, 2, sizeof y_stride, &y_stride, msg, msg_size);
    if (rc == BENCH_OK)
        rc = bench_set_arg(s->kernel, 7, sizeof mod_stride, &mod_stride, msg, msg_size);
    if (rc == BENCH_OK)
        rc = bench_set_arg(s->kernel, i++, sizeof cols, &cols, msg, msg_size);
    if (rc == BENCH_OK)
        rc = bench_set_arg(s->kernel, i++, sizeof per_sample, &per_sample, msg, msg_size);
    if (rc == BENCH_OK && g->nchw)
        rc = bench_set_arg(s->kernel, i++, sizeof per_mod, &per_mod, msg, msg_size);
    if (rc == BENCH_OK)
        rc = bench_set_arg(s->kernel, i++, sizeof per_item, &per_item, msg, msg_size);
    return rc;
}

/* The grid: (vector items of a row, groups of ROWS_PER_ITEM rows, samples), work-groups
 * along the row only. */
static int set_geometry(mod_state *s, const bench_env *env, const mod_geometry *g, char *msg,
                        size_t msg_size)
{
    size_t max_wg = 0;
    cl_int err = clGetKernelWorkGroupInfo(s->kernel, env->device, CL_KERNEL_WORK_GROUP_SIZE,
                                          sizeof max_wg, &max_wg, NULL);
    if (err != CL_SUCCESS)
        return bench_cl_fail(err, "clGetKernelWorkGroupInfo(bench_modulate)", msg, msg_size);
    const size_t items = g->cols / g->width + (g->cols % g->width != 0);
    s->local[0] = row_group(items, max_wg < 512 ? max_wg : 512);
    s->local[1] = s->local[2] = 1;
    s->global[0] = bench_round_up(items, s->local[0]);
    s->global[1] = (g->per_sample + ROWS_PER_ITEM - 1) / ROWS_PER_ITEM;
    s->global[2] = g->samples;
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
    /* the same op and layout, without the modulation and the activation after it */
    clnorm_desc d = p->desc;
    d.flags &= ~(both | p->info->act_flags);
    d.samples = 0;
    d.mod_stride = 0;
    mod_geometry g = geometry_of(p);
    g.width = vector_width(env);
    char auto_note[64] = "", options[64];
    snprintf(options, sizeof options, "%s -DW=%zu%s",
             bench_cl_storage_option(p->slot[CLNORM_ARG_Y].dtype), g.width,
             (p->info->act_flags & CLNORM_SILU) ? " -DBENCH_SILU" : "");
    const char *parts[3] = {BENCH_CL_STORAGE_SOURCE, width_source,
                            g.nchw ? modulate_nchw_source : modulate_source};
    char *source = malloc(strlen(parts[0]) + strlen(parts[1]) + strlen(parts[2]) + 1);
    if (!source) {
        destroy(s);
        snprintf(msg, msg_size, "out of host memory");
        return BENCH_FAIL;
    }
    strcat(strcat(strcpy(source, parts[0]), parts[1]), parts[2]);
    int rc = bench_clnorm_plan(env, &d, CLNORM_STRATEGY_AUTO, &s->plan, auto_note,
                               sizeof auto_note, msg, msg_size);
    if (rc == BENCH_OK)
        rc = bench_cl_program(env->context, env->device, source, options, &s->program, msg,
                              msg_size);
    free(source);
    if (rc == BENCH_OK)
        rc = bench_cl_kernel(s->program, g.nchw ? "bench_modulate_nchw" : "bench_modulate",
                             &s->kernel, msg, msg_size);
    if (rc == BENCH_OK)
        rc = set_constants(s, p, &g, msg, msg_size);
    if (rc == BENCH_OK)
        rc = set_geometry(s, env, &g, msg, msg_size);
    if (rc != BENCH_OK) {
        destroy(s);
        return rc;
    }
    snprintf(note, note_size, "clnorm %s + %s kernel%s", auto_note,
             (p->info->act_flags & CLNORM_SILU) ? "modulation+SiLU" : "modulation",
             g.width == 4 ? "" : ", 16-wide");
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
 * kinds; scale and shift), scale and shift among them: no backward op qualifies. The row
 * kinds' modulated ops are of the samples form, GroupNorm's of the groups form. */
#define MOD_UNFUSED_SLOTS                                                                    \
    (BENCH_SLOT(CLNORM_ARG_X) | BENCH_SLOT(CLNORM_ARG_Y) | BENCH_SLOT(CLNORM_ARG_GAMMA) |    \
     BENCH_SLOT(CLNORM_ARG_BETA) | BENCH_SLOT(CLNORM_ARG_RESIDUAL) |                         \
     BENCH_SLOT(CLNORM_ARG_SUM) | BENCH_SLOT(CLNORM_ARG_SCALE) | BENCH_SLOT(CLNORM_ARG_SHIFT))
#define MOD_UNFUSED_NEEDS (BENCH_SLOT(CLNORM_ARG_SCALE) | BENCH_SLOT(CLNORM_ARG_SHIFT))

const bench_contender bench_clnorm_unfused_mod = {
    .name = "clnorm_unfused", .side = BENCH_DEVICE, .role = BENCH_ROLE_UNFUSED,
    .slots = MOD_UNFUSED_SLOTS, .needs = MOD_UNFUSED_NEEDS,
    .forms = BENCH_FORM_SAMPLES | BENCH_FORM_GROUPS, .inexact = "y rounded before the modulation",
    .create = create, .run = run, .destroy = destroy};
