/*
 * policy.c - strategy and launch geometry: pure functions of (device profile, description,
 * strategy, tuning, the kernels' work-group limits). Nothing here touches OpenCL or the
 * environment, except clnorm_read_tuning, which reads the overrides once per plan.
 *
 * The rules (also the README's table):
 *   CPU devices:   "row", except few long rows (rows < 4 x compute units, cols >= 32768):
 *                  "split", in chunks of at most 32768 columns (a core's L2 holds one).
 *   GPUs / others: few long rows (rows < 2 x CUs, cols >= 16384): "split"; rows that fit in
 *                  registers (cols <= 16 vectors x 256 lanes: 16384 with 4-lane vectors):
 *                  "subgroup"; else "workgroup".
 * Measured on PoCL (README, "Strategies"): one work-item per row runs ~7x faster than a tree
 * reduction per row on CPU devices, where a work-item is a loop iteration and local memory
 * is ordinary cache; on GPUs a row per work-item cannot coalesce its loads.
 */
#include "internal.h"
#include "op/op.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is_cpu(const clnorm_device_profile *p)
{
    return (p->type & CL_DEVICE_TYPE_CPU) != 0;
}

size_t clnorm_clamp(size_t v, size_t lo, size_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

size_t clnorm_div_up(size_t a, size_t b)
{
    return a / b + (a % b != 0);
}

/* An unsigned decimal environment value in [lo, hi]; 0 when unset or empty. */
static clnorm_status env_size(clnorm_ctx *ctx, const char *name, size_t lo, size_t hi,
                              size_t *out)
{
    *out = 0;
    const char *env = getenv(name);
    if (!env || !*env)
        return CLNORM_OK;
    char *end;
    const unsigned long long v = strtoull(env, &end, 10);
    RETURN_IF(*end != '\0' || env[0] == '-' || v < lo || v > hi, ctx, CLNORM_INVALID_ARGUMENT,
              "%s=%s is not a whole number between %zu and %zu", name, env, lo, hi);
    *out = (size_t)v;
    return CLNORM_OK;
}

clnorm_status clnorm_read_tuning(clnorm_ctx *ctx, clnorm_tuning *t)
{
    memset(t, 0, sizeof *t);
    t->strategy = CLNORM_STRATEGY_AUTO;
    const char *env = getenv("CLNORM_STRATEGY");
    if (env && *env && strcmp(env, "auto") != 0) {
        int found = 0;
        for (int s = CLNORM_STRATEGY_ROW; s <= CLNORM_STRATEGY_SUBGROUP; s++)
            if (strcmp(env, clnorm_strategy_name((clnorm_strategy)s)) == 0) {
                t->strategy = (clnorm_strategy)s;
                found = 1;
            }
        RETURN_IF(!found, ctx, CLNORM_INVALID_ARGUMENT,
                  "CLNORM_STRATEGY=%s is not one of auto, row, workgroup, split, subgroup, "
                  "reference",
                  env);
    }
    TRY(env_size(ctx, "CLNORM_LOCAL_SIZE", 1, 65536, &t->local_size));
    TRY(env_size(ctx, "CLNORM_VECTOR_WIDTH", 2, 16, &t->vector_width));
    RETURN_IF(t->vector_width && (t->vector_width & (t->vector_width - 1)), ctx,
              CLNORM_INVALID_ARGUMENT, "CLNORM_VECTOR_WIDTH=%zu is not one of 2, 4, 8, 16",
              t->vector_width);
    TRY(env_size(ctx, "CLNORM_MAX_GROUPS", 1, (size_t)1 << 30, &t->max_groups));
    t->no_stream_stores = getenv("CLNORM_NO_STREAM_STORES") != NULL;
    t->no_prefetch = getenv("CLNORM_NO_PREFETCH") != NULL;
    t->no_elem_loads = getenv("CLNORM_NO_ELEM_LOADS") != NULL;
    t->no_samples = getenv("CLNORM_NO_SAMPLE_ITEMS") != NULL;
    return CLNORM_OK;
}

/* Vector width of the kernels' loops: 64 bytes of accumulators per vector on CPUs (one
 * AVX-512 register, two AVX2 ones), 16 bytes on GPUs, where each work-item's load should stay
 * one coalesced transaction. CLNORM_VECTOR_WIDTH lets the tests run a GPU's width on a CPU
 * device, so the code paths a GPU takes are exercised where CI runs. */
static size_t vector_width(const clnorm_device_profile *p, const clnorm_desc *d,
                           const clnorm_tuning *t)
{
    if (t->vector_width)
        return t->vector_width;
    return is_cpu(p) ? (d->dtype == CLNORM_F64 ? 8 : 16) : 4;
}

/* The subgroup strategy holds a row in registers: SEG lanes per row, up to 16 vectors each.
 * SEG starts at the device's lockstep width (a warp: the reductions stay within it) and
 * doubles, up to 256 lanes (one work-group of any GPU), while the row would need more than 8
 * vectors per lane, so that rows up to 256 x VW x 16 (16384 on GPUs) are still read from
 * memory once, rather than twice as the workgroup strategy reads them. */
enum { SUBGROUP_MAX_REG_VECS = 16, SUBGROUP_SPREAD_REG_VECS = 8, SUBGROUP_MAX_SEG = 256 };

/* CPU devices: rows of at most this many whole vectors are held by one work-item (SEG = 1):
 * the subgroup kernel without barriers, the row loaded once into registers. Each item takes
 * CPU_ITEM_ROWS consecutive rows in lockstep, so that the core overlaps their statistics'
 * dependent steps (kernels/norm_subgroup.cl, ITEM_ROWS): 1.07-1.14x one row's speed on rows
 * in the L3 cache (bench/RESULTS.md); two rows of the fused add at 128 columns already take
 * AVX-512's 32 registers. A row of one vector (16 float32 columns with AVX-512) holds so
 * little that those steps are the item's whole cost: CPU_ITEM_ROWS_ONE_VEC = 4 rows ran
 * LayerNorm at 1048576x16 about 1.1x faster than two, eight slower again (bench/RESULTS.md,
 * "Rows of one vector: four per item"). */
enum { CPU_SHORT_ROW_VECS = 8, CPU_ITEM_ROWS = 2, CPU_ITEM_ROWS_ONE_VEC = 4 };

static int cpu_short_row(const clnorm_device_profile *p, size_t cols, size_t vw)
{
    return is_cpu(p) && cols % vw == 0 && cols <= vw * CPU_SHORT_ROW_VECS;
}

static size_t subgroup_seg(const clnorm_device_profile *p, size_t cols, size_t vw)
{
    if (cpu_short_row(p, cols, vw))
        return 1;
    size_t seg = p->simd_width;
    while (seg * vw * SUBGROUP_SPREAD_REG_VECS < cols && seg * 2 <= SUBGROUP_MAX_SEG)
        seg *= 2;
    /* Short rows on GPUs: no more lanes than the row has vectors (64 columns: 16 lanes, two
     * rows per warp), but at least VW, since a row's tail elements go one per lane. Not on
     * CPUs, where this strategy runs only when forced and more segment widths would only
     * mean more programs to build. */
    if (!is_cpu(p))
        while (seg / 2 >= vw && (seg / 2) * vw >= cols)
            seg /= 2;
    return seg;
}

static size_t subgroup_max_cols(const clnorm_device_profile *p, size_t vw)
{
    const size_t seg = p->simd_width > SUBGROUP_MAX_SEG ? p->simd_width : SUBGROUP_MAX_SEG;
    return seg * vw * SUBGROUP_MAX_REG_VECS;
}

clnorm_strategy clnorm_policy_strategy(const clnorm_device_profile *p, const clnorm_desc *d,
                                       const clnorm_tuning *t)
{
    if (t->strategy != CLNORM_STRATEGY_AUTO)
        return t->strategy;
    const size_t cu = p->compute_units;
    if (is_cpu(p)) {
        if (d->rows < 4 * cu && d->cols >= 32768)
            return CLNORM_STRATEGY_SPLIT;
        /* Short rows: one item per row with the row in registers (SEG = 1), 1.8x the row
         * strategy's blocked loops at 262144 x 64 (bench/RESULTS.md). */
        return cpu_short_row(p, d->cols, vector_width(p, d, t)) ? CLNORM_STRATEGY_SUBGROUP
                                                                : CLNORM_STRATEGY_ROW;
    }
    if (d->rows < 2 * cu && d->cols >= 16384)
        return CLNORM_STRATEGY_SPLIT;
    if (d->cols <= subgroup_max_cols(p, vector_width(p, d, t)))
        return CLNORM_STRATEGY_SUBGROUP;
    return CLNORM_STRATEGY_WORKGROUP;
}

clnorm_status clnorm_policy_build(const clnorm_device_profile *p, const clnorm_desc *d,
                                  clnorm_strategy s, const clnorm_tuning *t, clnorm_geometry *g,
                                  char *msg, size_t msg_size)
{
    memset(g, 0, sizeof *g);
    g->vw = vector_width(p, d, t);
    if (s != CLNORM_STRATEGY_SUBGROUP)
        return CLNORM_OK;
    g->seg = subgroup_seg(p, d->cols, g->vw);
    if (d->cols > subgroup_max_cols(p, g->vw)) {
        snprintf(msg, msg_size,
                 "the subgroup strategy holds rows of at most %zu elements in registers on "
                 "this device; cols = %zu",
                 subgroup_max_cols(p, g->vw), d->cols);
        return CLNORM_UNSUPPORTED;
    }
    /* Vectors per item: exactly what the row needs. Rounding up to a power of two would
     * serve more widths with one program, but the unused registers cost occupancy: 12288
     * columns on an H100 took 8% longer with 16 vectors per lane than with the 12 it uses,
     * the fused add (two vectors per position) 35% (bench/RESULTS.md). */
    g->reg_vecs = clnorm_div_up(d->cols, g->seg * g->vw);
    g->item_rows = 1;
    if (g->seg == 1) /* whole rows per item: CPU devices */
        g->item_rows = g->reg_vecs == 1 ? CPU_ITEM_ROWS_ONE_VEC : CPU_ITEM_ROWS;
    return CLNORM_OK;
}

void clnorm_policy_options(const clnorm_device_profile *p, const clnorm_desc *d,
                           const clnorm_geometry *g, const clnorm_tuning *t,
                           clnorm_direction dir, char *buf, size_t size)
{
    static const char *const fmt[] = {"F32", "F16", "BF16", "F64"};
    const char *x = fmt[d->dtype];
    /* Streaming stores and prefetch use Clang builtins: PoCL's CPU device only. The two
     * switches exist to measure what each brings (README). */
    const int stream = p->clang_cpu && !t->no_stream_stores;
    const int prefetch = stream && !t->no_prefetch;
    /* Float vectors read through a type aligned to one element rather than with vloadn
     * (kernels/common.cl, CLNORM_ELEM_LOADS): on PoCL's CPU device LLVM then emits one
     * unaligned vector load. Measured (bench/RESULTS.md) on rows of at most 8 KiB, the rows
     * whose next row the kernels prefetch into L1: the fused add 5-10% faster at 8192x1024,
     * the backward too. Rows of 4096 and 12288 columns were 5-10% slower, and the forward of
     * short rows held in registers (the subgroup geometry: 262144x64) about 20% slower, so
     * those keep vloadn; that geometry's backward (row kernels) takes the loads. The widest
     * row tensor counts: a float32 residual beside 16-bit x. */
    const size_t elem = (d->flags & CLNORM_RESIDUAL_F32) && clnorm_dtype_size(d->dtype) < 4
                            ? 4
                            : clnorm_dtype_size(d->dtype);
    const int elem_loads = p->clang_cpu && !t->no_elem_loads && d->cols <= 8192 / elem &&
                           (dir == CLNORM_BACKWARD || !g->seg);
    /* CPU devices: the backward's parameter pass takes VW columns per work-item, in lanes
     * (kernels/norm_backward.cl, norm_bwd_params; param_items below). */
    int n = snprintf(buf, size,
                     "-cl-std=CL1.2 -DVW=%zu -DCLNORM_X_FMT=%s -DCLNORM_X_%s=1%s%s%s%s%s%s", g->vw,
                     x, x, d->dtype == CLNORM_F64 ? " -DCLNORM_F64" : "",
                     p->has_fp64 ? "" : " -DCLNORM_NO_FP64",
                     stream ? " -DCLNORM_STREAM_STORES" : "",
                     stream && !prefetch ? " -DCLNORM_NO_PREFETCH" : "",
                     is_cpu(p) ? " -DCLNORM_PARAMS_VEC" : "",
                     elem_loads ? " -DCLNORM_ELEM_LOADS" : "");
    if (g->seg && n > 0 && (size_t)n < size)
        snprintf(buf + n, size - (size_t)n, " -DSEG=%zu -DREG_VECS=%zu -DITEM_ROWS=%zu%s", g->seg,
                 g->reg_vecs, g->item_rows, p->nv_ptx ? " -DCLNORM_NV_SHFL" : "");
}

/* Work-group size for the cooperative strategies: CLNORM_LOCAL_SIZE when set (tests use it
 * for odd sizes), else 256 on GPUs (64 on CPUs), no more than the row needs. */
static size_t cooperative_local(const clnorm_device_profile *p, const clnorm_desc *d,
                                clnorm_strategy s, const clnorm_tuning *t, size_t vw)
{
    if (t->local_size)
        return t->local_size;
    if (s == CLNORM_STRATEGY_SPLIT && is_cpu(p))
        return 1; /* a CPU work-group is a loop: one item per chunk avoids barriers */
    const size_t want = is_cpu(p) ? 64 : 256;
    size_t need = 1;
    while (need < want && need * vw < d->cols)
        need *= 2;
    return is_cpu(p) ? want : clnorm_clamp(need, 32, want);
}

/* The most items a group of these kernels may have on this device. */
size_t clnorm_fit_local(size_t local, size_t kmax, const clnorm_device_profile *p)
{
    if (kmax > 0 && local > kmax)
        local = kmax;
    if (local > p->max_work_group_size)
        local = p->max_work_group_size;
    return local ? local : 1;
}

/* Work-groups along the row axis: at most `most`, and the test cap CLNORM_MAX_GROUPS. */
size_t clnorm_row_groups(size_t want, size_t most, const clnorm_tuning *t)
{
    size_t g = clnorm_clamp(want, 1, most);
    return t->max_groups && g > t->max_groups ? t->max_groups : g;
}

/* One row per work-item: enough work-groups to keep every compute unit busy several times
 * over, few enough that a CPU runtime's per-group cost stays small next to a group's rows. */
static void item_rows_geometry(const clnorm_device_profile *p, const clnorm_desc *d,
                               const clnorm_tuning *t, size_t kmax, clnorm_geometry *g)
{
    const size_t cu = p->compute_units;
    g->local = clnorm_fit_local(
        t->local_size ? t->local_size : clnorm_clamp(d->rows / (4 * cu), 1, 64), kmax, p);
    g->groups = clnorm_row_groups(clnorm_div_up(d->rows, g->local), (size_t)1 << 20, t);
}

static clnorm_status forward_geometry(const clnorm_device_profile *p, const clnorm_desc *d,
                                      clnorm_strategy s, const clnorm_tuning *t, size_t kmax,
                                      clnorm_geometry *g, char *msg, size_t msg_size)
{
    const size_t cu = p->compute_units, vw = g->vw;
    switch (s) {
    case CLNORM_STRATEGY_ROW:
        item_rows_geometry(p, d, t, kmax, g);
        return CLNORM_OK;
    case CLNORM_STRATEGY_WORKGROUP:
        g->local = clnorm_fit_local(cooperative_local(p, d, s, t, vw), kmax, p);
        g->groups = clnorm_row_groups(d->rows, (size_t)1 << 20, t);
        return CLNORM_OK;
    case CLNORM_STRATEGY_SUBGROUP: {
        /* 256 items per work-group on GPUs (8 rows of 32-lane segments, 1 row of 256), 2
         * rows on CPUs, where segments of more than one item only run when forced (tests). */
        const size_t seg = g->seg;
        if (seg == 1) { /* whole rows per item (CPU, short rows), laid out as the row
                           * strategy's one per item, counted in blocks of item_rows */
            clnorm_desc blocks = *d;
            blocks.rows = clnorm_div_up(d->rows, g->item_rows);
            item_rows_geometry(p, &blocks, t, kmax, g);
            return CLNORM_OK;
        }
        g->local = clnorm_fit_local(seg * (is_cpu(p) ? 2 : (256 / seg > 0 ? 256 / seg : 1)), kmax, p);
        if (g->local < seg) {
            snprintf(msg, msg_size,
                     "the subgroup strategy needs work-groups of %zu items; the kernel allows %zu",
                     seg, g->local);
            return CLNORM_UNSUPPORTED;
        }
        g->local -= g->local % seg;
        g->groups = clnorm_row_groups(clnorm_div_up(d->rows, g->local / seg), (size_t)1 << 20, t);
        return CLNORM_OK;
    }
    case CLNORM_STRATEGY_SPLIT: {
        g->local = clnorm_fit_local(cooperative_local(p, d, s, t, vw), kmax, p);
        /* Chunks per row: enough groups in all for the device, no chunk shorter than what
         * amortizes a group's start, at most 1024 (the merge loop reads them all). */
        const size_t target = (is_cpu(p) ? 4 : 8) * cu;
        const size_t min_len = is_cpu(p) ? 4096 : g->local * vw * 4;
        size_t chunks = clnorm_div_up(target, d->rows ? d->rows : 1);
        /* On CPUs also keep a chunk within a core's L2 (the stats pass reads it twice):
         * 32768 elements, 128 KiB of float32. */
        const size_t max_len = 32768;
        if (is_cpu(p) && chunks < clnorm_div_up(d->cols, max_len))
            chunks = clnorm_div_up(d->cols, max_len);
        chunks = clnorm_clamp(chunks, 1, 1024);
        chunks = clnorm_clamp(chunks, 1, clnorm_div_up(d->cols, min_len));
        g->chunk_len = clnorm_div_up(clnorm_div_up(d->cols, chunks), vw) * vw;
        g->chunks = clnorm_div_up(d->cols, g->chunk_len);
        g->groups = clnorm_row_groups(d->rows, (size_t)1 << 16, t);
        return CLNORM_OK;
    }
    default:
        snprintf(msg, msg_size, "strategy %d cannot run on a device", (int)s);
        return CLNORM_INVALID_ARGUMENT;
    }
}

/* The backward pass: blocks of at most 256 rows per work-group (each a partial row of
 * dgamma/dbeta, in double where the device has it: kernels/norm_backward.cl, W), at least a
 * few groups per compute unit. Items per group: 1 with the row strategy, else the
 * cooperative size. */
static void backward_geometry(const clnorm_device_profile *p, const clnorm_desc *d,
                              clnorm_strategy s, const clnorm_tuning *t, size_t kmax,
                              clnorm_geometry *g)
{
    const size_t vw = g->vw, cu = p->compute_units;
    const int item_rows = s == CLNORM_STRATEGY_ROW || (s == CLNORM_STRATEGY_SUBGROUP && g->seg == 1);
    g->bwd_local = clnorm_fit_local(item_rows ? 1 : cooperative_local(p, d, s, t, vw), kmax, p);
    g->bwd_param_local = clnorm_fit_local(64, kmax, p);
    const size_t min_groups = (is_cpu(p) ? 4 : 8) * cu;
    /* Work-groups: blocks of rows x column chunks, about min_groups of them. Each block
     * writes one partial row of dgamma and one of dbeta, so a block of r rows adds 2/(3r) to
     * the traffic of x, dy and dx: blocks of at least 16 rows where rows allow. With fewer
     * rows the parallelism comes from cutting rows into column chunks (none shorter than what
     * amortizes a group's start, as in the forward's split), then from smaller blocks. */
    const size_t min_len = is_cpu(p) ? 4096 : g->bwd_local * vw * 4;
    size_t chunks = 1;
    if (d->rows >= 16 * min_groups) {
        g->bwd_rows_per_group = clnorm_clamp(clnorm_div_up(d->rows, min_groups), 16, 256);
    } else {
        chunks = clnorm_clamp(min_groups, 1, clnorm_clamp(d->cols / min_len, 1, 1024));
        /* Blocks of >= 16 rows, unless that leaves compute units idle. */
        const size_t busy = d->rows < cu ? d->rows : cu;
        const size_t most = d->rows / 16 > busy ? d->rows / 16 : busy;
        const size_t blocks = clnorm_clamp(clnorm_div_up(min_groups, chunks), 1, most ? most : 1);
        g->bwd_rows_per_group = clnorm_clamp(clnorm_div_up(d->rows, blocks), 1, 256);
    }
    g->bwd_groups = clnorm_div_up(d->rows, g->bwd_rows_per_group);
    /* Statistics recomputed from x (mean/rstd not given): a row per group, groups striding
     * over rows; with one item per group (CPU) few enough groups to keep a runtime's
     * per-group cost small. */
    g->bwd_stats_groups =
        clnorm_row_groups(d->rows, g->bwd_local == 1 ? 64 * cu : 65536, t);
    g->bwd_sums_groups = clnorm_row_groups(d->rows, (size_t)1 << 16, t);
    g->bwd_chunk_len = clnorm_div_up(clnorm_div_up(d->cols, chunks), vw) * vw;
    g->bwd_chunks = clnorm_div_up(d->cols, g->bwd_chunk_len);
    g->param_items = is_cpu(p) ? clnorm_div_up(d->cols, vw) : d->cols;
    g->slice_items = d->cols;
}

clnorm_status clnorm_policy_geometry(const clnorm_device_profile *p, const clnorm_desc *d,
                                     clnorm_strategy s, const clnorm_tuning *t,
                                     const size_t kmax[2], clnorm_geometry *g, char *msg,
                                     size_t msg_size)
{
    TRY(forward_geometry(p, d, s, t, kmax[CLNORM_FORWARD], g, msg, msg_size));
    if (d->flags & CLNORM_WITH_BACKWARD)
        backward_geometry(p, d, s, t, kmax[CLNORM_BACKWARD], g);
    return CLNORM_OK;
}

void clnorm_policy_ndrange(const clnorm_geometry *g, const clnorm_desc *d, int geom,
                           cl_uint *dims, size_t global[2], size_t local[2])
{
    *dims = 1;
    global[1] = local[1] = 1;
    switch ((clnorm_geom_kind)geom) {
    case GEOM_FWD:
        global[0] = g->groups * g->local;
        local[0] = g->local;
        return;
    case GEOM_SPLIT:
        *dims = 2;
        global[0] = g->chunks * g->local;
        local[0] = g->local;
        global[1] = g->groups;
        return;
    case GEOM_BWD_STATS:
        global[0] = g->bwd_stats_groups * g->bwd_local;
        local[0] = g->bwd_local;
        return;
    case GEOM_BWD_CHUNKS:
        *dims = 2;
        global[0] = g->bwd_chunks * g->bwd_local;
        local[0] = g->bwd_local;
        global[1] = g->bwd_sums_groups;
        return;
    case GEOM_BWD_ROWS:
        *dims = 2;
        global[0] = g->bwd_chunks * g->bwd_local;
        local[0] = g->bwd_local;
        global[1] = g->bwd_groups;
        return;
    case GEOM_BWD_SAMPLES:
        global[0] = (d->samples < g->bwd_stats_groups ? d->samples : g->bwd_stats_groups) *
                    g->bwd_local;
        local[0] = g->bwd_local;
        return;
    case GEOM_BWD_PARAMS:
        global[0] = clnorm_div_up(g->param_items, g->bwd_param_local) * g->bwd_param_local;
        local[0] = g->bwd_param_local;
        return;
    case GEOM_BWD_SLICES:
        *dims = 2;
        global[0] = clnorm_div_up(g->slice_items, g->bwd_param_local) * g->bwd_param_local;
        local[0] = g->bwd_param_local;
        global[1] = g->bwd_slices;
        return;
    case GEOM_ITEMS:
        global[0] = g->items * g->items_local;
        local[0] = g->items_local;
        return;
    case GEOM_SAMPLES:
        global[0] = g->samples;
        local[0] = 1;
        return;
    case GEOM_COUNT:
        break;
    }
    global[0] = local[0] = 1;
}
