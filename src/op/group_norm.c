/*
 * GroupNorm (torch.nn.functional.group_norm): x is (N, C, *spatial) in NCHW or (N, *spatial,
 * C) in NHWC; statistics per sample n and group g of C/G channels over (C/G) x spatial
 * elements (biased variance, eps inside the root); gamma and beta per channel; optionally
 * a per-sample modulation u = z * (1 + scale[b, c]) + shift[b, c] of the normalized z (a
 * diffusion UNet's scale-shift norm) and y = silu(u). InstanceNorm is G = C, LayerNorm over
 * (C, *spatial) G = 1.
 *
 * The kernels see N x G rows of (C/G) x spatial elements (kernel_view), the row n * G + g
 * being the group, and take G, C/G and spatial as scalars (KA_OP 0, 1, 2):
 *   NCHW forward: a group is one contiguous block, so the row strategies (row, workgroup,
 *     subgroup, split: kernels/norm_*.cl) run unchanged with GroupNorm's hooks
 *     (kernels/op_group_norm.cl: where a group row starts, gamma/beta per channel, SiLU).
 *   NHWC forward, strategy "split": tiles of positions x all C channels, so that loads
 *     coalesce along the channels (kernels/group_nhwc.cl): per-(sample, tile, channel)
 *     moments, their merge per group into a per-channel table (K, scale, shift), the apply.
 *     On CPU devices with enough samples for the cores, or small ones, one work-item per
 *     sample does all three in one launch (gn_nhwc_sample).
 *   NHWC, strategy "workgroup" (GPUs, where group_nhwc_choice.h says): a work-group per group,
 *     its items as channel lanes by position lanes, one launch forward
 *     (kernels/group_nhwc_wg.cl) and one plus the parameter pass backward
 *     (kernels/group_backward_wg.cl).
 *   Backward, both layouts (kernels/group_backward.cl): per-(sample, channel) sums of dz * xhat
 *     and dz (dz = dy, or dy * silu'(z)), which give dgamma and dbeta and, weighted by gamma,
 *     the group sums of dx; then dx elementwise.
 *   Modulation: the NCHW forward modulates z as it writes y (op_group_norm.cl, out_yv); the
 *     other kernels fold (1 + scale) and shift into each channel's gamma and beta
 *     (gn_fold_mod), the backward's parameter pass weights the tiles' sums by (1 + scale),
 *     and a modulated backward chain ends with dscale and dshift (gn_bwd_mod_params). The
 *     host loop folds them the same way, per modulation sample (group_norm_host_body.h,
 *     HN(fold_mod)), and takes modulated calls as it takes plain ones (host_bytes).
 *   Precomputed statistics (CLNORM_USE_GLOBAL_STATS: mean and rstd N x G inputs, eval-mode
 *     InstanceNorm, a tiled decode's whole-image statistics): the forward is the apply alone
 *     in any strategy (nchw_apply_stats: norm_apply.cl over the group rows; nhwc_apply_stats:
 *     gn_nhwc_stats_table, then gn_nhwc_apply); the backward runs its chains with dx = rstd
 *     * g (gn_coef_of gives 0 for the group means, and gn_bwd_coef does not run), and for dx
 *     alone without its sums pass either (RUN_GRAD_SUMS).
 * The CPU reference is ref/ref_group_norm.c.
 */
#include "group_nhwc_choice.h"
#include "op.h"
#include "row_norm.h"

#include <stdint.h>
#include <stdio.h>

#define B(s) SLOT_BIT(CLNORM_ARG_##s)

/* Channels-last data with a spatial extent (NHWC with spatial 1 is NCHW in memory). */
static int is_nhwc(const clnorm_desc *d)
{
    return d->layout == CLNORM_NHWC && d->spatial > 1;
}

/* The float32 and float64 backward of contiguous groups (NCHW, or no spatial extent) of at
 * most CLNORM_GN_SMALL_BWD_ELEMS elements without the SiLU: one work-item per group in one
 * launch, in double where the device has it, then the parameter pass, in every strategy
 * (kernels/group_backward_small.cl says why, and why not NHWC, the SiLU, float16 or
 * bfloat16). */
static int small_backward(const clnorm_desc *d)
{
    return d->groups && (d->dtype == CLNORM_F32 || d->dtype == CLNORM_F64) &&
           !(d->flags & CLNORM_SILU) && !is_nhwc(d) &&
           clnorm_row_len(d) / d->groups <= CLNORM_GN_SMALL_BWD_ELEMS;
}

/* A per-sample modulation (scale-shift norm) is asked for. */
static int modulated(const clnorm_desc *d)
{
    return (d->flags & (CLNORM_SCALE | CLNORM_SHIFT)) != 0;
}

static clnorm_status check_desc(const clnorm_desc *d, char *msg, size_t msg_size)
{
    if (d->groups == 0) {
        snprintf(msg, msg_size, "desc.groups is 0: GroupNorm needs at least one group");
        return CLNORM_INVALID_ARGUMENT;
    }
    if (d->cols % d->groups != 0) {
        snprintf(msg, msg_size,
                 "desc.groups = %zu does not divide the channels (desc.cols = %zu)", d->groups,
                 d->cols);
        return CLNORM_INVALID_ARGUMENT;
    }
    if (d->layout != CLNORM_NCHW && d->layout != CLNORM_NHWC) {
        snprintf(msg, msg_size, "desc.layout = %d is not CLNORM_NCHW or CLNORM_NHWC",
                 (int)d->layout);
        return CLNORM_INVALID_ARGUMENT;
    }
    if (d->flags & CLNORM_RESIDUAL_F32) {
        snprintf(msg, msg_size, "CLNORM_RESIDUAL_F32 is for the ADD kinds; group_norm has no "
                                "residual");
        return CLNORM_INVALID_ARGUMENT;
    }
    const size_t spatial = d->spatial ? d->spatial : 1;
    /* The kernels index within a group and a sample's channels in 32 bits. */
    if ((d->cols / d->groups) * spatial > UINT32_MAX || d->cols > UINT32_MAX) {
        snprintf(msg, msg_size,
                 "a group of %zu channels x %zu positions is more than 2^32 - 1 elements",
                 d->cols / d->groups, spatial);
        return CLNORM_INVALID_ARGUMENT;
    }
    if (d->rows > SIZE_MAX / d->groups / 8) {
        snprintf(msg, msg_size, "desc: rows = %zu x groups = %zu overflows size_t", d->rows,
                 d->groups);
        return CLNORM_INVALID_ARGUMENT;
    }
    return CLNORM_OK;
}

static void slot_info(const clnorm_op *op, const clnorm_desc *d, clnorm_direction dir,
                      clnorm_arg_slot slot, clnorm_slot_info *info)
{
    const int fwd = dir == CLNORM_FORWARD;
    const unsigned takes = fwd ? op->fwd_slots : op->bwd_slots;
    const int has_g = !(d->flags & CLNORM_NO_GAMMA), has_b = !(d->flags & CLNORM_NO_BETA);
    const int stats = (d->flags & CLNORM_SAVE_STATS) != 0, silu = (d->flags & CLNORM_SILU) != 0;
    const int global = (d->flags & CLNORM_USE_GLOBAL_STATS) != 0;
    const int has_scale = (d->flags & CLNORM_SCALE) != 0, has_shift = (d->flags & CLNORM_SHIFT) != 0;
    const clnorm_dtype t = d->dtype, pt = clnorm_param_dtype(t);
    const size_t len = clnorm_row_len(d);
    const clnorm_slot_use req = CLNORM_SLOT_REQUIRED, opt = CLNORM_SLOT_OPTIONAL,
                          none = CLNORM_SLOT_UNUSED;
    info->is_output = 0;
    info->use = none;
    clnorm_slot_layout(info, t, 0, 0, 0);
    if (!(takes & SLOT_BIT(slot)))
        return;
    switch (slot) {
    case CLNORM_ARG_X:
    case CLNORM_ARG_DY:
    case CLNORM_ARG_Y:
    case CLNORM_ARG_DX:
        info->use = slot == CLNORM_ARG_DX ? opt : req;
        info->is_output = slot == CLNORM_ARG_Y || slot == CLNORM_ARG_DX;
        clnorm_slot_layout(info, t, d->rows, len,
               (slot == CLNORM_ARG_X || slot == CLNORM_ARG_DX) ? d->x_stride : d->y_stride);
        return;
    case CLNORM_ARG_GAMMA:
        info->use = has_g ? req : none;
        clnorm_slot_layout(info, pt, 1, d->cols, d->cols);
        return;
    case CLNORM_ARG_BETA:
        /* the backward reads beta through the SiLU (z = xhat * gamma + beta) and for dscale
         * (sum du * z) */
        info->use = has_b && (fwd || silu || has_scale) ? req : none;
        clnorm_slot_layout(info, pt, 1, d->cols, d->cols);
        return;
    case CLNORM_ARG_SCALE:
        info->use = has_scale ? req : none;
        clnorm_slot_layout(info, pt, d->samples, d->cols, d->mod_stride);
        return;
    case CLNORM_ARG_SHIFT:
        /* the backward recomputes u = z * (1 + scale) + shift for the SiLU's derivative */
        info->use = has_shift && (fwd || silu) ? req : none;
        clnorm_slot_layout(info, pt, d->samples, d->cols, d->mod_stride);
        return;
    case CLNORM_ARG_DSCALE:
    case CLNORM_ARG_DSHIFT:
        info->use = (slot == CLNORM_ARG_DSCALE ? has_scale : has_shift) ? opt : none;
        info->is_output = 1;
        clnorm_slot_layout(info, pt, d->samples, d->cols, d->mod_stride);
        return;
    case CLNORM_ARG_MEAN:
    case CLNORM_ARG_RSTD:
        /* precomputed statistics: inputs of both directions; else written by a forward with
         * SAVE_STATS, read when given by the backward */
        info->use = global ? req : fwd ? (stats ? req : none) : opt;
        info->is_output = fwd && !global;
        clnorm_slot_layout(info, pt, d->rows ? 1 : 0, d->rows * d->groups, d->rows * d->groups);
        return;
    case CLNORM_ARG_DGAMMA:
    case CLNORM_ARG_DBETA:
        info->use = (slot == CLNORM_ARG_DGAMMA ? has_g : has_b) ? opt : none;
        info->is_output = 1;
        clnorm_slot_layout(info, pt, 1, d->cols, d->cols);
        return;
    default: return;
    }
}

/* A modulated plan's programs are builds of their own (CLNORM_GN_MOD): without it the kernels
 * hold no modulation code at all, which cost the NCHW forward with SiLU 20-30% on PoCL as a
 * branch on a null pointer (clnorm-lib-ab, 8x320x32x32 and 1x1280x16x16). */
static void build_defines(const clnorm_op *op, const clnorm_desc *d, char *buf, size_t size)
{
    (void)op;
    snprintf(buf, size, "%s", modulated(d) ? " -DCLNORM_GN_MOD" : "");
}

static unsigned kernel_flags(const clnorm_op *op, const clnorm_desc *d, clnorm_direction dir,
                             unsigned present)
{
    unsigned f = clnorm_row_norm_flags(op, d, dir, present);
    if (present & B(BETA))
        f |= CLNORM_KF_BETA; /* the backward's SiLU reads it too */
    if (present & B(SHIFT))
        f |= CLNORM_KF_SHIFT; /* and u = z * (1 + scale) + shift */
    if (d->flags & CLNORM_SILU)
        f |= CLNORM_KF_SILU;
    /* saved float32 statistics: checked, and a mean whose rounding would reach xhat
     * corrected, before the backward's sums (gn_refine_stats; the small groups' and the NHWC
     * work-group kernels in themselves); host calls have checked them already (execute.c) */
    if (dir == CLNORM_BACKWARD && (present & B(MEAN)) && (present & B(RSTD)) &&
        !(d->flags & CLNORM_USE_GLOBAL_STATS) && d->dtype != CLNORM_F64)
        f |= CLNORM_KF_REFINED;
    return f;
}

static void kernel_view(const clnorm_desc *d, clnorm_desc *v)
{
    *v = *d;
    v->rows = d->rows * d->groups;
    v->cols = (d->cols / d->groups) * d->spatial;
    v->x_stride = v->y_stride = v->residual_stride = v->sum_stride = v->cols;
    v->groups = v->spatial = 1;
    v->layout = CLNORM_NCHW;
}

/* The forward in parts on the latency path's threads (latency.c; op.h, part_units), NCHW
 * only (NHWC runs its own tiles): whole samples, or with one sample its groups, each a
 * contiguous block of x with its own channels' parameters and its own statistics. A
 * modulated part holds whole modulation samples (one entry each, or the one entry's groups)
 * with their scale and shift rows; several entries per modulation sample run uncut. */
static size_t part_units(const clnorm_desc *d, size_t step[])
{
    for (unsigned s = 0; s < CLNORM_ARG_SLOT_COUNT; s++)
        step[s] = 0;
    if (is_nhwc(d))
        return 0;
    const size_t cpg = d->cols / d->groups;
    if (d->rows == 1) {
        step[CLNORM_ARG_X] = step[CLNORM_ARG_Y] = cpg * d->spatial;
        step[CLNORM_ARG_GAMMA] = step[CLNORM_ARG_BETA] = cpg;
        step[CLNORM_ARG_SCALE] = step[CLNORM_ARG_SHIFT] = cpg;
        step[CLNORM_ARG_MEAN] = step[CLNORM_ARG_RSTD] = 1;
        return d->groups;
    }
    if (modulated(d) && d->samples != d->rows)
        return 0;
    step[CLNORM_ARG_X] = d->x_stride;
    step[CLNORM_ARG_Y] = d->y_stride;
    step[CLNORM_ARG_SCALE] = step[CLNORM_ARG_SHIFT] = d->mod_stride;
    step[CLNORM_ARG_MEAN] = step[CLNORM_ARG_RSTD] = d->groups;
    return d->rows;
}

static void part_desc(const clnorm_desc *d, size_t units, clnorm_desc *part)
{
    *part = *d;
    if (d->rows == 1) {
        part->cols = units * (d->cols / d->groups);
        part->groups = units;
    } else {
        part->rows = units;
        if (modulated(d))
            part->samples = units; /* one entry per modulation sample (part_units) */
    }
}

/* NHWC has two forwards of its own: the tiles ("split", group_nhwc.cl) and a work-group per
 * group ("workgroup", group_nhwc_wg.cl); NCHW runs the row strategies. */
static unsigned strategies(const clnorm_desc *d)
{
    return is_nhwc(d) ? (1u << CLNORM_STRATEGY_SPLIT) | (1u << CLNORM_STRATEGY_WORKGROUP) : 0;
}

/* CPU devices keep the tiles everywhere: their one-item work-groups walk a tile in memory
 * order, where a group alone is C/G channels strided by C. GPUs take a work-group per group
 * where group_nhwc_choice.h says so, measured on an H200 (bench/RESULTS.md, "GroupNorm on a
 * GPU: NVIDIA H200, both NHWC strategies"); CLNORM_STRATEGY=split or =workgroup runs either
 * one, and the bench's clnorm_split and clnorm_workgroup rows time both. */
static clnorm_strategy auto_strategy(const clnorm_device_profile *p, const clnorm_desc *d)
{
    if (!is_nhwc(d))
        return CLNORM_STRATEGY_AUTO;
    const int cpu = (p->type & CL_DEVICE_TYPE_CPU) != 0;
    return !cpu && gn_nhwc_gpu_runs_workgroups(p->compute_units, d->rows, d->cols, d->groups,
                                               d->spatial)
               ? CLNORM_STRATEGY_WORKGROUP
               : CLNORM_STRATEGY_SPLIT;
}

static size_t scalar(const clnorm_desc *d, unsigned k)
{
    switch (k) {
    case 0: return d->groups;
    case 1: return d->cols / d->groups;
    case 2: return d->spatial;
    case 3: return d->samples ? d->rows / d->samples : 0; /* entries per modulation sample */
    default: return d->samples; /* modulation samples (an empty batch may have some) */
    }
}

/* A sample of at most this many bytes runs the CPU forward as one item even when the samples
 * are fewer than the cores (geometry): one launch on one core against the tiles' three on all
 * of them. 1 MiB until the tiles' loops got faster; then the two single 1.3 MB float32
 * samples ran faster as one item on PoCL's multi-threaded device in 13 of 14 rounds (1.27x
 * at the median), and no slower on the in-thread one. Samples of 2.6 and 5.2 MB were even or
 * slower as one item (bench/RESULTS.md, "One item per sample up to 2 MiB"). */
#define NHWC_SAMPLE_ITEM_BYTES ((size_t)2 << 20)

/* ---- geometry of the op's own kernels (the NCHW forward's is the policy's, of the view) ---- */

static void geometry(const clnorm_device_profile *p, const clnorm_desc *d, clnorm_strategy s,
                     const clnorm_tuning *t, const size_t kmax[2], clnorm_geometry *g)
{
    const int cpu = (p->type & CL_DEVICE_TYPE_CPU) != 0;
    const size_t cu = p->compute_units, C = d->cols, hw = d->spatial;
    const size_t km = kmax[CLNORM_BACKWARD] && kmax[CLNORM_BACKWARD] < kmax[CLNORM_FORWARD]
                          ? kmax[CLNORM_BACKWARD]
                          : kmax[CLNORM_FORWARD];
    /* Work-groups of one item on CPU devices (a work-group is a loop there: the kernels then
     * run their own loops in memory order). On GPUs the NHWC tiles take cpg x (a divisor of
     * G) items, whole groups, whose channel moments meet in local memory (group_nhwc.cl);
     * CLNORM_LOCAL_SIZE bounds that (tests put the GPU path on PoCL with it). A group wider
     * than a work-group takes the one-item path. */
    const size_t cpg = C / d->groups;
    size_t limit = t->local_size ? t->local_size : (cpu ? 1 : 1024);
    limit = clnorm_fit_local(limit, km, p);
    size_t gpr = 0;
    for (size_t k = 1; k <= d->groups; k++)
        if (d->groups % k == 0 && cpg * k <= limit)
            gpr = k;
    const size_t local = gpr ? cpg * gpr : 1;
    g->items = d->rows * d->groups; /* the per-group kernels: one work-group per (n, g) */
    g->items_local = clnorm_fit_local(t->local_size ? t->local_size : (cpu ? 1 : 256), km, p);
    if (is_nhwc(d)) {
        /* Tiles of chunk_len positions x C channels: enough of them for the device, no
         * shorter than 16 positions (the merges add every tile's moments). On CPUs, where a
         * tile is one item's loop reading it once, no shorter than 32 positions and with no
         * cap on its elements (the former 32K kept two passes in L2): each tile also folds
         * its C channel moments into group moments (and the backward lays out per-channel
         * tables), a cost per tile; 8K-element tiles made the moments 1.1-2x slower than 32K
         * ones on PoCL (bench/RESULTS.md, GroupNorm). */
        const size_t min_len = cpu ? 32 : GN_NHWC_GPU_MIN_TILE;
        const size_t chunks = gn_nhwc_tiles_per_sample(cu, d->rows, hw, min_len);
        g->chunk_len = clnorm_div_up(hw, chunks);
        g->chunks = clnorm_div_up(hw, g->chunk_len);
        g->local = local;
        g->groups = clnorm_row_groups(d->rows, 65535, t);
        g->bwd_chunks = g->chunks;
        g->bwd_chunk_len = g->chunk_len;
        /* CPU devices: the forward runs one item per sample (gn_nhwc_sample: one launch, not
         * three, and the sample's second read from the core's caches when it fits them)
         * where the samples alone keep the cores evenly busy (a multiple of the cores, or
         * enough that the last round's idle cores matter little), or where a sample is small
         * enough that the tiles' two extra launches cost more than the one core loses
         * (bench/RESULTS.md, "NHWC on CPU devices: one item per sample", "One item per sample up
         * to 2 MiB"). */
        const size_t sample_bytes = C * hw * clnorm_dtype_size(d->dtype);
        const int even = d->rows >= cu && (d->rows % cu == 0 || d->rows >= 4 * cu);
        if (cpu && local == 1 && !t->no_samples &&
            (even || sample_bytes <= NHWC_SAMPLE_ITEM_BYTES))
            g->samples = clnorm_row_groups(d->rows, 65535, t);
        if (s == CLNORM_STRATEGY_WORKGROUP) {
            /* A work-group per group row in both directions (group_nhwc_wg.cl,
             * group_backward_wg.cl; GEOM_ITEMS): on GPUs about 16 elements per item, 64 to
             * 1024 items (the longest groups, 64K elements, at 64 per item). The backward's
             * sums are one tile per sample, which the parameter pass adds. */
            size_t wl = 64;
            while (wl < 1024 && wl * 16 < cpg * hw)
                wl *= 2;
            g->items_local = clnorm_fit_local(t->local_size ? t->local_size : (cpu ? 1 : wl),
                                              km, p);
            g->items = clnorm_row_groups(d->rows * d->groups, 65535, t);
            g->samples = 0;
            g->whole_groups = 1;
            g->bwd_chunks = 1;
            g->bwd_chunk_len = hw;
        }
    } else {
        g->bwd_chunks = 1;
        g->bwd_chunk_len = hw;
        if (d->flags & CLNORM_USE_GLOBAL_STATS) {
            /* The elementwise apply of the group rows (nchw_apply_stats), as the row kinds'
             * (row_norm.c): an item per row on CPUs; on GPUs a work-group per row of up to
             * 256 items, each every L-th vector. Nothing else of such a plan takes
             * GEOM_ITEMS: the backward's gn_bwd_coef does not run (RUN_DX_SUMS). */
            const size_t vecs = clnorm_div_up(cpg * hw, g->vw);
            const size_t want = t->local_size ? t->local_size
                                : cpu            ? 1
                                                 : clnorm_clamp(vecs, 32, 256);
            g->items_local = clnorm_fit_local(want, km, p);
            g->items = clnorm_row_groups(d->rows * d->groups, cpu ? 64 * cu : 65536, t);
        }
    }
    /* NCHW backward: a work-group per (n, c) channel row (and per group row when the
     * statistics are recomputed), striding over them. */
    size_t bl = 1;
    if (!cpu) {
        bl = 32;
        while (bl < 256 && bl * 4 < hw)
            bl *= 2;
    }
    g->bwd_local = clnorm_fit_local(t->local_size ? t->local_size : bl, km, p);
    g->bwd_stats_groups = clnorm_row_groups(d->rows * C, cpu ? 64 * cu : 65536, t);
    /* parameters: CB = 8 channels x L / 8 slices of the tiles per work-group on GPUs
     * (group_backward.cl, gn_bwd_params), one item per VW channels on CPUs in one-item
     * work-groups (gn_bwd_params_lanes; CLNORM_PARAMS_VEC, policy.c) */
    const size_t pl = clnorm_fit_local(t->local_size ? t->local_size : (cpu ? 1 : 256), km, p);
    const size_t slices = pl >= 8 ? pl / 8 : 1; /* the kernel's S; pl / slices is its CB */
    g->bwd_param_local = pl;
    g->param_lanes = cpu && pl == 1;
    g->param_items = g->param_lanes ? clnorm_div_up(C, g->vw) : clnorm_div_up(C, pl / slices) * pl;
}

/* Values per (sample, tile) of the NHWC tiles' moments (kernels/group_nhwc.cl, GN_TILE_LEN):
 * per channel its mean and M2, per group its S and M2, per channel a staging row, its shift
 * and the four running totals of the CPU devices' blocks (sum, M2, their compensations), per
 * group what its float S and M2 leave of them in double. */
static size_t nhwc_tile_len(const clnorm_desc *d)
{
    return 8 * d->cols + 4 * d->groups;
}

static void scratch_bytes(const clnorm_desc *d, const clnorm_geometry *g, clnorm_direction dir,
                          size_t bytes[])
{
    const size_t acc = clnorm_param_size(d->dtype);
    const size_t ng = d->rows * d->groups;
    for (int i = 0; i < CLNORM_MAX_SCRATCH; i++)
        bytes[i] = 0;
    if (dir == CLNORM_FORWARD) {
        if (d->flags & CLNORM_USE_GLOBAL_STATS) { /* the apply alone: NHWC's table per (n, c) */
            if (is_nhwc(d))
                bytes[2] = clnorm_bytes3(d->rows, 3 * d->cols, acc);
            return;
        }
        if (g->whole_groups)
            return; /* a work-group per group (strategy workgroup): none */
        if (is_nhwc(d)) { /* moments per (n, tile, c), statistics per (n, g), table per (n, c) */
            bytes[0] = clnorm_bytes3(d->rows * g->chunks, nhwc_tile_len(d), acc);
            bytes[1] = clnorm_bytes3(ng, CLNORM_STATS_PER_ROW, acc);
            bytes[2] = clnorm_bytes3(d->rows, 3 * d->cols, acc);
        } else {
            clnorm_desc v;
            kernel_view(d, &v);
            clnorm_row_norm_scratch(&v, g, dir, bytes);
        }
        return;
    }
    if (small_backward(d)) { /* sums per (n, c) alone (kernels/group_backward_small.cl) */
        bytes[1] = clnorm_bytes3(d->rows, 2 * d->cols, CLNORM_W_SIZE);
        return;
    }
    if (g->whole_groups) { /* statistics per (n, g), sums per (n, c): no tiles */
        bytes[0] = clnorm_bytes3(ng, CLNORM_STATS_PER_ROW, acc);
        bytes[1] = clnorm_bytes3(d->rows, 2 * d->cols, CLNORM_W_SIZE);
        return;
    }
    /* statistics per (n, g); sums of W (or first the recomputed moments) per (n, tile, c);
     * dx's group coefficients per (n, g) */
    bytes[0] = clnorm_bytes3(ng, CLNORM_STATS_PER_ROW, acc);
    const size_t moments = clnorm_bytes3(d->rows * g->bwd_chunks, nhwc_tile_len(d), acc);
    const size_t sums = clnorm_bytes3(d->rows * g->bwd_chunks, 2 * d->cols, CLNORM_W_SIZE);
    bytes[1] = moments > sums ? moments : sums;
    bytes[2] = clnorm_bytes3(ng, 4, acc); /* (GN_COEF_PER_ROW, group_backward.cl) */
    /* NHWC on one-item work-groups (CPU devices): per-channel tables per (n, tile), which
     * let the sums and dx loops run in vectors (group_backward.cl, GN_BT_LEN) */
    if (is_nhwc(d) && g->local == 1)
        bytes[4] = clnorm_bytes3(d->rows * g->bwd_chunks, CLNORM_GN_TABLE_ROWS * d->cols, acc);
}

/* ---- kernel chains ---- */

#define OPS {KA_OP, 0}, {KA_OP, 1}, {KA_OP, 2}, {KA_OP, 3}
/* NCHW forward: the row strategies' steps (row_norm.c), with the op's scalars first. */
static const clnorm_karg fwd_args[] = {OPS, {KA_ROWS, 0}, {KA_COLS, 0}, {KA_EPS, 0},
                                       {KA_FLAGS, 0}, {KA_END, 0}};
static const clnorm_karg fwd_local_args[] = {OPS, {KA_ROWS, 0}, {KA_COLS, 0}, {KA_EPS, 0},
                                             {KA_FLAGS, 0}, {KA_LOCAL_ACC, 0}, {KA_END, 0}};
static const clnorm_karg split_stats_args[] = {OPS, {KA_SCRATCH, 0}, {KA_ROWS, 0},
                                               {KA_COLS, 0}, {KA_CHUNK_LEN, 0}, {KA_CHUNKS, 0},
                                               {KA_FLAGS, 0}, {KA_LOCAL_ACC, 0}, {KA_END, 0}};
static const clnorm_karg split_apply_args[] = {OPS, {KA_SCRATCH, 0}, {KA_ROWS, 0},
                                               {KA_COLS, 0}, {KA_CHUNK_LEN, 0}, {KA_CHUNKS, 0},
                                               {KA_EPS, 0}, {KA_FLAGS, 0}, {KA_END, 0}};
#define MOD_T (B(SCALE) | B(SHIFT))
#define FWD_T (B(X) | B(Y) | B(GAMMA) | B(BETA) | B(MEAN) | B(RSTD) | MOD_T)
#define ROW_FILES "common.cl", "op_group_norm.cl", "row_stats.cl"

static const clnorm_chain nchw_row = {{ROW_FILES, "norm_body.cl", "norm_row.cl", NULL},
                                      {{"norm_row", FWD_T, fwd_args, GEOM_FWD, 0}}, 1};
static const clnorm_chain nchw_workgroup = {
    {ROW_FILES, "norm_body.cl", "norm_workgroup.cl", NULL},
    {{"norm_workgroup", FWD_T, fwd_local_args, GEOM_FWD, 0}}, 1};
static const clnorm_chain nchw_subgroup = {
    {ROW_FILES, "norm_subgroup.cl", NULL},
    {{"norm_subgroup", FWD_T, fwd_local_args, GEOM_FWD, 0}}, 1};
static const clnorm_chain nchw_split = {
    {ROW_FILES, "norm_split.cl", NULL},
    {{"norm_split_stats", B(X), split_stats_args, GEOM_SPLIT, 0},
     {"norm_split_apply", FWD_T, split_apply_args, GEOM_SPLIT, 0}},
    2};

/* NHWC (kernels/group_nhwc.cl). Forward scratch: 0 moments, 1 statistics. The moments and
 * the apply (the backward's sums and dx too) take their first tile (KA_FIRST_BLOCK): the
 * latency path runs their tiles in parts (src/latency.c). */
static const clnorm_karg part_args[] = {OPS, {KA_SCRATCH, 0}, {KA_ROWS, 0}, {KA_CHUNK_LEN, 0},
                                        {KA_CHUNKS, 0}, {KA_FIRST_BLOCK, 0}, {KA_LOCAL_ACC, 0},
                                        {KA_END, 0}};
static const clnorm_karg merge_args[] = {OPS, {KA_SCRATCH, 0}, {KA_SCRATCH, 1}, {KA_SCRATCH, 2},
                                         {KA_ROWS, 0}, {KA_CHUNK_LEN, 0}, {KA_CHUNKS, 0},
                                         {KA_EPS, 0}, {KA_FLAGS, 0}, {KA_LOCAL_ACC, 0},
                                         {KA_LOCAL_ACC, 0}, {KA_END, 0}};
static const clnorm_karg apply_args[] = {OPS, {KA_SCRATCH, 2}, {KA_ROWS, 0}, {KA_CHUNK_LEN, 0},
                                         {KA_FLAGS, 0}, {KA_FIRST_BLOCK, 0}, {KA_END, 0}};
static const clnorm_karg group_wg_args[] = {OPS, {KA_ROWS, 0}, {KA_EPS, 0}, {KA_FLAGS, 0},
                                            {KA_LOCAL_ACC, 0}, {KA_END, 0}};
static const clnorm_karg sample_args[] = {OPS, {KA_SCRATCH, 0}, {KA_SCRATCH, 1},
                                          {KA_SCRATCH, 2}, {KA_ROWS, 0}, {KA_EPS, 0},
                                          {KA_FLAGS, 0}, {KA_LOCAL_ACC, 0}, {KA_END, 0}};
#define MERGE_T (B(X) | B(GAMMA) | B(BETA) | B(MEAN) | B(RSTD) | MOD_T)
/* The tiles (moments, merge, apply), or on CPU devices one item per sample doing all three
 * (geometry: samples). */
static const clnorm_chain nhwc_forward = {
    {"common.cl", "op_group_norm.cl", "group_nhwc.cl", NULL},
    {{"gn_nhwc_moments", B(X), part_args, GEOM_SPLIT, RUN_TILES},
     {"gn_nhwc_merge", MERGE_T, merge_args, GEOM_ITEMS, RUN_TILES},
     {"gn_nhwc_apply", B(X) | B(Y), apply_args, GEOM_SPLIT, RUN_TILES},
     {"gn_nhwc_sample", FWD_T, sample_args, GEOM_SAMPLES, RUN_SAMPLES}},
    4};

/* Precomputed statistics (CLNORM_USE_GLOBAL_STATS): the elementwise apply alone, whatever
 * the strategy. NCHW: the row kinds' norm_apply_stats (kernels/norm_apply.cl) over the group
 * rows, a work-group each; NHWC: each sample's table from the statistics
 * (gn_nhwc_stats_table), then the tiles' apply. */
static const clnorm_karg apply_stats_args[] = {OPS, {KA_ROWS, 0}, {KA_COLS, 0}, {KA_FLAGS, 0},
                                               {KA_END, 0}};
static const clnorm_chain nchw_apply_stats = {
    {ROW_FILES, "norm_apply.cl", NULL},
    {{"norm_apply_stats", FWD_T, apply_stats_args, GEOM_ITEMS, 0}},
    1};
static const clnorm_karg stats_table_args[] = {OPS, {KA_SCRATCH, 2}, {KA_ROWS, 0},
                                               {KA_FLAGS, 0}, {KA_END, 0}};
static const clnorm_chain nhwc_apply_stats = {
    {"common.cl", "op_group_norm.cl", "group_nhwc.cl", NULL},
    {{"gn_nhwc_stats_table", B(GAMMA) | B(BETA) | B(MEAN) | B(RSTD) | MOD_T, stats_table_args,
      GEOM_ITEMS, 0},
     {"gn_nhwc_apply", B(X) | B(Y), apply_args, GEOM_SPLIT, 0}},
    2};

/* A work-group per group (kernels/group_nhwc_wg.cl), in one launch. */
static const clnorm_chain nhwc_workgroup = {
    {"common.cl", "op_group_norm.cl", "row_stats.cl", "group_nhwc.cl", "group_nhwc_wg.cl",
     NULL},
    {{"gn_nhwc_group", FWD_T, group_wg_args, GEOM_ITEMS, 0}},
    1};

/* Backward (kernels/group_backward.cl). Scratch: 0 statistics per (n, g), 1 sums per
 * (n, tile, c) (first the recomputed moments in NHWC), 2 dx coefficients per (n, g), 4 (NHWC
 * on CPU devices) per-channel tables per (n, tile). */
#define BWD_IN (B(X) | B(GAMMA) | B(BETA) | B(MEAN) | B(RSTD) | B(DY) | MOD_T)
/* (two local arrays: gn_nchw_stats' statistics again in double use both, gn_stats_w in
 * op_group_norm.cl) */
static const clnorm_karg stats_args[] = {OPS, {KA_SCRATCH, 0}, {KA_ROWS, 0}, {KA_COLS, 0},
                                         {KA_EPS, 0}, {KA_FLAGS, 0}, {KA_LOCAL_ACC, 0},
                                         {KA_LOCAL_ACC, 0}, {KA_END, 0}};
/* Saved statistics checked into scratch 0 (CLNORM_KF_REFINED; group_backward.cl,
 * gn_refine_stats): a work-group per group row. */
#define REFINE_T (B(X) | B(MEAN) | B(RSTD))
static const clnorm_karg refine_args[] = {OPS, {KA_SCRATCH, 0}, {KA_ROWS, 0},
                                          {KA_LOCAL_ACC, 0}, {KA_LOCAL_ACC, 0}, {KA_END, 0}};
static const clnorm_karg bpart_args[] = {OPS, {KA_SCRATCH, 1}, {KA_ROWS, 0}, {KA_CHUNK_LEN, 0},
                                         {KA_CHUNKS, 0}, {KA_FIRST_BLOCK, 0}, {KA_LOCAL_ACC, 0},
                                         {KA_END, 0}};
/* (scratch 3 is never allocated: the merge gets no table) */
static const clnorm_karg bmerge_args[] = {OPS, {KA_SCRATCH, 1}, {KA_SCRATCH, 0}, {KA_SCRATCH, 3},
                                          {KA_ROWS, 0}, {KA_CHUNK_LEN, 0}, {KA_CHUNKS, 0},
                                          {KA_EPS, 0}, {KA_FLAGS, 0}, {KA_LOCAL_ACC, 0},
                                          {KA_LOCAL_ACC, 0}, {KA_END, 0}};
static const clnorm_karg sums_nchw_args[] = {OPS, {KA_SCRATCH, 0}, {KA_SCRATCH, 1},
                                             {KA_ROWS, 0}, {KA_FLAGS, 0}, {KA_LOCAL_ACC, 0},
                                             {KA_LOCAL_ACC, 0}, {KA_END, 0}};
static const clnorm_karg sums_nhwc_args[] = {OPS, {KA_SCRATCH, 0}, {KA_SCRATCH, 1},
                                             {KA_SCRATCH, 4}, {KA_ROWS, 0},
                                             {KA_CHUNK_LEN, 0}, {KA_CHUNKS, 0}, {KA_FLAGS, 0},
                                             {KA_FIRST_BLOCK, 0}, {KA_END, 0}};
static const clnorm_karg coef_args[] = {OPS, {KA_SCRATCH, 1}, {KA_SCRATCH, 2}, {KA_ROWS, 0},
                                        {KA_CHUNKS, 0}, {KA_FLAGS, 0}, {KA_LOCAL_ACC, 0},
                                        {KA_LOCAL_ACC, 0}, {KA_END, 0}};
static const clnorm_karg params_args[] = {OPS, {KA_SCRATCH, 1}, {KA_ROWS, 0}, {KA_CHUNKS, 0},
                                          {KA_FLAGS, 0}, {KA_LOCAL_ACC, 0}, {KA_LOCAL_ACC, 0},
                                          {KA_END, 0}};
static const clnorm_karg lanes_args[] = {OPS, {KA_SCRATCH, 1}, {KA_ROWS, 0}, {KA_CHUNKS, 0},
                                         {KA_FLAGS, 0}, {KA_END, 0}};
static const clnorm_karg mod_params_args[] = {OPS, {KA_OP, 4}, {KA_SCRATCH, 1}, {KA_ROWS, 0},
                                              {KA_CHUNKS, 0}, {KA_FLAGS, 0}, {KA_END, 0}};
static const clnorm_karg dx_nchw_args[] = {OPS, {KA_SCRATCH, 0}, {KA_SCRATCH, 2}, {KA_ROWS, 0},
                                           {KA_FLAGS, 0}, {KA_END, 0}};
static const clnorm_karg dx_nhwc_args[] = {OPS, {KA_SCRATCH, 0}, {KA_SCRATCH, 2},
                                           {KA_SCRATCH, 4}, {KA_ROWS, 0}, {KA_CHUNK_LEN, 0},
                                           {KA_CHUNKS, 0}, {KA_FLAGS, 0}, {KA_FIRST_BLOCK, 0},
                                           {KA_END, 0}};

/* dx's group means: not with precomputed statistics, whose dx is rstd * g (RUN_DX_SUMS); the
 * sums before them run for these or a parameter gradient (RUN_GRAD_SUMS), not for such a dx
 * alone, which the dx kernels make from the statistics (the NHWC CPU tables too) */
#define COEF_STEP {"gn_bwd_coef", B(GAMMA) | B(SCALE), coef_args, GEOM_ITEMS, RUN_DX_SUMS}
/* the parameter pass, in slices of work-groups or in lanes of one item (geometry) */
#define PARAMS_T (B(DGAMMA) | B(DBETA) | B(SCALE))
#define PARAMS_STEPS                                                                        \
    {"gn_bwd_params", PARAMS_T, params_args, GEOM_BWD_PARAMS,                               \
     RUN_PARAM_GRADS | RUN_PARAM_GROUPS},                                                   \
    {"gn_bwd_params_lanes", PARAMS_T, lanes_args, GEOM_BWD_PARAMS,                          \
     RUN_PARAM_GRADS | RUN_PARAM_LANES}
/* a modulated chain's last step: dscale and dshift from the same sums */
#define MOD_PARAMS_STEP                                                                     \
    {"gn_bwd_mod_params", B(GAMMA) | B(BETA) | B(DSCALE) | B(DSHIFT), mod_params_args,      \
     GEOM_BWD_PARAMS, RUN_PARAM_GRADS}

/* Each backward chain twice: as is, and with a per-sample modulation's dscale and dshift
 * last (MOD_PARAMS_STEP), so that a plain plan launches nothing for them. */
#define NCHW_BWD_FILES "common.cl", "op_group_norm.cl", "row_stats.cl", "group_backward.cl", NULL
#define NCHW_BWD_STEPS                                                                      \
    {"gn_refine_stats", REFINE_T, refine_args, GEOM_ITEMS, RUN_REFINED},                    \
        {"gn_nchw_stats", B(X), stats_args, GEOM_BWD_STATS, RUN_RECOMPUTE},                 \
        {"gn_nchw_bwd_sums", BWD_IN, sums_nchw_args, GEOM_BWD_STATS, RUN_GRAD_SUMS},        \
        COEF_STEP, PARAMS_STEPS,                                                            \
        {"gn_nchw_bwd_dx", BWD_IN | B(DX), dx_nchw_args, GEOM_BWD_STATS, RUN_GRAD_X}
static const clnorm_chain nchw_backward = {{NCHW_BWD_FILES}, {NCHW_BWD_STEPS}, 7};
static const clnorm_chain nchw_backward_mod = {{NCHW_BWD_FILES},
                                               {NCHW_BWD_STEPS, MOD_PARAMS_STEP}, 8};
#define NHWC_BWD_FILES                                                                      \
    "common.cl", "op_group_norm.cl", "row_stats.cl", "group_nhwc.cl", "group_backward.cl", NULL
#define NHWC_BWD_STEPS                                                                      \
    {"gn_nhwc_refine_stats", REFINE_T, refine_args, GEOM_ITEMS, RUN_REFINED},               \
        {"gn_nhwc_moments", B(X), bpart_args, GEOM_SPLIT, RUN_RECOMPUTE},                   \
        {"gn_nhwc_merge", MERGE_T, bmerge_args, GEOM_ITEMS, RUN_RECOMPUTE},                 \
        {"gn_nhwc_bwd_sums", BWD_IN, sums_nhwc_args, GEOM_SPLIT, RUN_GRAD_SUMS},            \
        COEF_STEP, PARAMS_STEPS,                                                            \
        {"gn_nhwc_bwd_dx", BWD_IN | B(DX), dx_nhwc_args, GEOM_SPLIT, RUN_GRAD_X}
static const clnorm_chain nhwc_backward = {{NHWC_BWD_FILES}, {NHWC_BWD_STEPS}, 8};
static const clnorm_chain nhwc_backward_mod = {{NHWC_BWD_FILES},
                                               {NHWC_BWD_STEPS, MOD_PARAMS_STEP}, 9};

/* NHWC, strategy workgroup (kernels/group_nhwc_wg.cl, group_backward_wg.cl): a work-group per
 * group row, first its statistics into scratch 0 when they are not given, then its
 * channels' sums (scratch 1, one tile per sample) and dx; then the parameter pass. */
/* (two local arrays, as stats_args) */
static const clnorm_karg gstats_args[] = {OPS, {KA_SCRATCH, 0}, {KA_ROWS, 0}, {KA_EPS, 0},
                                          {KA_LOCAL_ACC, 0}, {KA_LOCAL_ACC, 0}, {KA_END, 0}};
static const clnorm_karg bgroup_args[] = {OPS, {KA_SCRATCH, 0}, {KA_SCRATCH, 1}, {KA_ROWS, 0},
                                          {KA_FLAGS, 0}, {KA_LOCAL_ACC, 0}, {KA_LOCAL_ACC, 0},
                                          {KA_END, 0}};
#define WG_BWD_FILES                                                                        \
    "common.cl", "op_group_norm.cl", "row_stats.cl", "group_nhwc.cl", "group_backward.cl",     \
        "group_nhwc_wg.cl", "group_backward_wg.cl", NULL
/* (saved float32 statistics: the group kernel corrects their mean itself, no refine step) */
#define WG_BWD_STEPS                                                                        \
    {"gn_nhwc_group_stats", B(X), gstats_args, GEOM_ITEMS, RUN_RECOMPUTE},                  \
        {"gn_nhwc_bwd_group", BWD_IN | B(DX), bgroup_args, GEOM_ITEMS, 0}, PARAMS_STEPS
static const clnorm_chain nhwc_backward_workgroup = {{WG_BWD_FILES}, {WG_BWD_STEPS}, 4};
static const clnorm_chain nhwc_backward_workgroup_mod = {{WG_BWD_FILES},
                                                         {WG_BWD_STEPS, MOD_PARAMS_STEP}, 5};

/* Small contiguous groups without the SiLU (small_backward; kernels/group_backward_small.cl):
 * one item per group row does the statistics, the sums (scratch 1, one tile per sample) and
 * dx; then the parameter pass. */
static const clnorm_karg small_args[] = {OPS, {KA_SCRATCH, 1}, {KA_ROWS, 0}, {KA_EPS, 0},
                                         {KA_FLAGS, 0}, {KA_END, 0}};
#define SMALL_BWD_FILES                                                                     \
    "common.cl", "op_group_norm.cl", "row_stats.cl", "group_backward.cl",                   \
        "group_backward_small.cl", NULL
#define SMALL_BWD_STEPS                                                                     \
    {"gn_small_bwd", BWD_IN | B(DX), small_args, GEOM_BWD_STATS, 0}, PARAMS_STEPS
static const clnorm_chain small_backward_chain = {{SMALL_BWD_FILES}, {SMALL_BWD_STEPS}, 3};
static const clnorm_chain small_backward_mod = {{SMALL_BWD_FILES},
                                                {SMALL_BWD_STEPS, MOD_PARAMS_STEP}, 4};

static const clnorm_chain *chain(const clnorm_desc *d, clnorm_strategy s, clnorm_direction dir)
{
    const int mod = modulated(d);
    if (dir == CLNORM_BACKWARD && small_backward(d))
        return mod ? &small_backward_mod : &small_backward_chain;
    if (dir == CLNORM_BACKWARD && is_nhwc(d)) {
        if (s == CLNORM_STRATEGY_WORKGROUP)
            return mod ? &nhwc_backward_workgroup_mod : &nhwc_backward_workgroup;
        return mod ? &nhwc_backward_mod : &nhwc_backward;
    }
    if (dir == CLNORM_BACKWARD)
        return mod ? &nchw_backward_mod : &nchw_backward;
    if (d->flags & CLNORM_USE_GLOBAL_STATS)
        return is_nhwc(d) ? &nhwc_apply_stats : &nchw_apply_stats;
    if (is_nhwc(d))
        return s == CLNORM_STRATEGY_SPLIT       ? &nhwc_forward
               : s == CLNORM_STRATEGY_WORKGROUP ? &nhwc_workgroup
                                                : NULL;
    switch (s) {
    case CLNORM_STRATEGY_ROW: return &nchw_row;
    case CLNORM_STRATEGY_WORKGROUP: return &nchw_workgroup;
    case CLNORM_STRATEGY_SUBGROUP: return &nchw_subgroup;
    case CLNORM_STRATEGY_SPLIT: return &nchw_split;
    default: return NULL;
    }
}

/* The host loop's default thresholds (bench/RESULTS.md, "GroupNorm's host loop" and "SiLU in
 * GroupNorm's host loop"). Without SiLU the loop beat the kernels at every size measured up
 * to 10 MiB, both directions (the backward chain launches three to five kernels): 16 MiB,
 * which the forward keeps (the backward: below).
 * With it, each element also takes an exponential and a division, which the kernels
 * vectorize as the loop does, so the loop's lead ends sooner: forward between 0.66 and 1.3 MB
 * in NCHW (1 MiB; it was 4 MiB until 2026-12-03, when the kernels ran 1x320x32x32 1.58x and
 * 8x320x16x16 1.83x faster than the loop's AVX2 clone, 1.13x and 1.15x than its AVX-512 one:
 * "GroupNorm's SiLU in the host loop: an AVX-512 clone, and 1 MiB in NCHW"); the NHWC
 * backward between 0.33 and 1.3 MB (512 KiB); the NCHW backward between 1.3 and 2.6 MB
 * (2 MiB; "The NCHW backward on CPU devices, in vectors": before its kernels ran in
 * vectors, the loop won at every size; rechecked with the AVX-512 clone, the backwards'
 * crossovers held). The NHWC forward's kernels run one
 * item per sample on CPU devices ("NHWC on CPU devices: one item per sample"): the loop's
 * lead ends at about 2 MB without SiLU (2 MiB) and between 0.66 and 1.3 MB with it
 * (1 MiB). A single float32 sample without SiLU, whose y of 4 MiB and more the loop writes
 * with streaming stores, stays with the loop up to 6 MiB: the kernels then run their tiles
 * (three launches, x read twice from memory). At 2.6 MB the loop was 1.19-1.21x faster
 * (clnorm-lib-ab) and 1.36-1.58x (clnorm-bench), at 5.2 MB 1.11-1.14x and 1.05x; at 10.5 MB
 * 1.01-1.05x in one and 0.88-0.99x in the other, and at 21 MB 0.90-0.92x; several samples of
 * 2.6 or 5.2 MB ran 0.93-1.01x ("GroupNorm's NHWC loop: y streamed, a single sample up to 6
 * MiB"). A per-sample modulation changes neither side's work per element (the loop folds it
 * into each sample's gamma and beta), and modulated calls take the same thresholds: with SiLU
 * the loop led the kernels at 320 KiB in every layout and direction and lost the forward at
 * 1.25 MiB, the NHWC backward was even at 720 KiB and 1.25 MiB and lost at 2.5 MiB, the NCHW
 * backward led at 2.5 MiB ("GroupNorm's host loop takes the scale-shift norm").
 * The backward without SiLU, measured again on 2026-12-04 with the loop and the kernels in
 * one process ("The GroupNorm thresholds with precomputed statistics, and the backward's"):
 * the kernels led from 2.6 MB or 4 MiB on (1.15-1.71x at 4-10.5 MB in NCHW, 1.17-1.64x in
 * NHWC; even or mixed at 2.6 MB; the loop led or was even at 1.3 MB): 2 MiB, no longer 16
 * (the kernels have gained since the loop beat them at every size). With precomputed
 * statistics the same in NCHW (the kernels 1.1-1.7x from 2.6 MB), but the NHWC backward's
 * loop kept up to 10.5 MB (led or even in 7 of 8 cells): 16 MiB there. */

static size_t host_bytes(const clnorm_desc *d, clnorm_direction dir)
{
    if (dir == CLNORM_FORWARD && is_nhwc(d)) {
        if (d->flags & CLNORM_SILU)
            return (size_t)1 << 20;
        return d->rows == 1 && d->dtype == CLNORM_F32 ? (size_t)6 << 20 : (size_t)2 << 20;
    }
    if (dir == CLNORM_BACKWARD && !(d->flags & CLNORM_SILU))
        return is_nhwc(d) && (d->flags & CLNORM_USE_GLOBAL_STATS) ? (size_t)16 << 20
                                                                   : (size_t)2 << 20;
    if (!(d->flags & CLNORM_SILU))
        return (size_t)16 << 20;
    if (dir == CLNORM_FORWARD)
        return (size_t)1 << 20; /* NCHW, and NHWC of spatial 1 (the same memory) */
    return d->layout == CLNORM_NHWC ? (size_t)512 << 10 : (size_t)2 << 20;
}

/* Latency plans (src/latency.c):
 *  - NHWC without SiLU up to 2 MiB of x, where its kernels on the in-thread device (the tiles
 *    in parts on the host pool's threads) beat the multi-threaded device's launches in every
 *    round at 1.3 MB: the forward's tiles 1.13-1.32x, the backward even or faster
 *    (bench/RESULTS.md, "GroupNorm's NHWC tiles on the latency path"); the forward now runs
 *    one item per sample up to 2 MiB (NHWC_SAMPLE_ITEM_BYTES), in the calling thread 1.26x
 *    and 1.69x faster than as one launch on the multi-threaded device ("One item per sample
 *    up to 2 MiB"). Not with SiLU, whose exponentials on one thread (one item per sample)
 *    were 20% slower at N = 2 and 4: those keep the default.
 *  - NCHW up to 4 MiB, SiLU or not: its groups in parts on the host pool's threads ran the
 *    forward 1.25-1.59x faster than the multi-threaded device at 1.3 and 2.6 MB, the
 *    backward even; at 5.2 MB the two were within noise ("GroupNorm NCHW on the latency path
 *    up to 4 MiB"). */
static size_t latency_bytes(const clnorm_desc *d)
{
    if (!is_nhwc(d))
        return (size_t)4 << 20;
    return !(d->flags & CLNORM_SILU) ? (size_t)2 << 20 : 0;
}

const clnorm_op clnorm_op_group_norm = {
    .kind = CLNORM_GROUP,
    .name = "group_norm",
    .summary = "y = (x - mean) / sqrt(var + eps) * gamma + beta per sample and group of "
               "channels (NCHW or NHWC), optionally modulated per sample and silu(y)",
    .base_kind = CLNORM_GROUP,
    .fwd_slots = FWD_T,
    .bwd_slots = BWD_IN | B(DX) | B(DGAMMA) | B(DBETA) | B(DSCALE) | B(DSHIFT),
    .has_mean = 1,
    .residual = 0,
    .row_slots = B(X) | B(Y) | B(DY) | B(DX),
    .check_desc = check_desc,
    .slot_info = slot_info,
    .check_present = clnorm_row_norm_check_present,
    .build_defines = build_defines,
    .kernel_flags = kernel_flags,
    .chain = chain,
    .kernel_view = kernel_view,
    .strategies = strategies,
    .auto_strategy = auto_strategy,
    .geometry = geometry,
    .scalar = scalar,
    .part_units = part_units,
    .part_desc = part_desc,
    .scratch_bytes = scratch_bytes,
    .ref = clnorm_group_norm_ref,
    .host = clnorm_group_norm_host,
    .host_bytes = host_bytes,
    .latency_bytes = latency_bytes,
};
