/*
 * row_norm.c - what LayerNorm, RMSNorm and their fused residual add share: the layout of
 * their slots, their checks, their kernel chains per strategy and direction, the flags their
 * kernels take and the scratch they need. kernels/op_row_norm.cl is the kernel side: its
 * FWD_PARAMS / BWD_PARAMS list the same slots in the same (ascending) order as the chains
 * below, and the CPU reference is ref/ref_row_norm.c.
 */
#include "row_norm.h"

#include <stdint.h>
#include <stdio.h>

#define B(s) SLOT_BIT(CLNORM_ARG_##s)

clnorm_status clnorm_row_norm_check_desc(const clnorm_desc *d, char *msg, size_t msg_size)
{
    const clnorm_op *op = clnorm_op_of(d->kind);
    if ((d->groups > 1 || d->spatial > 1 || d->layout != CLNORM_NCHW)) {
        snprintf(msg, msg_size,
                 "desc.groups, desc.spatial and desc.layout are for CLNORM_GROUP; %s needs "
                 "groups and spatial 0 or 1 and layout CLNORM_NCHW",
                 op->name);
        return CLNORM_INVALID_ARGUMENT;
    }
    if (d->flags & CLNORM_SILU) {
        snprintf(msg, msg_size, "CLNORM_SILU is for CLNORM_GROUP; %s has no fused SiLU",
                 op->name);
        return CLNORM_INVALID_ARGUMENT;
    }
    if (d->flags & CLNORM_RESIDUAL_F32) {
        if (!op->residual) {
            snprintf(msg, msg_size, "CLNORM_RESIDUAL_F32 is for the ADD kinds; %s has no residual",
                     op->name);
            return CLNORM_INVALID_ARGUMENT;
        }
        if (d->dtype != CLNORM_F16 && d->dtype != CLNORM_BF16) {
            snprintf(msg, msg_size,
                     "CLNORM_RESIDUAL_F32 needs f16 or bf16 storage (dtype is %s: the residual "
                     "already has its type)",
                     clnorm_dtype_name(d->dtype));
            return CLNORM_INVALID_ARGUMENT;
        }
    }
    if (!op->residual)
        return CLNORM_OK;
    const size_t es = clnorm_dtype_size(clnorm_residual_dtype(d));
    const size_t strides[2] = {d->residual_stride, d->sum_stride};
    const char *names[2] = {"residual_stride", "sum_stride"};
    for (int i = 0; i < 2; i++) {
        const size_t s = strides[i] ? strides[i] : d->cols;
        size_t ex;
        if (s < d->cols) {
            snprintf(msg, msg_size, "desc.%s = %zu is smaller than desc.cols = %zu", names[i], s,
                     d->cols);
            return CLNORM_INVALID_ARGUMENT;
        }
        if (!clnorm_extent(d->rows, d->cols, s, &ex) || ex > SIZE_MAX / es) {
            snprintf(msg, msg_size, "desc: rows = %zu x %s = %zu overflows size_t", d->rows,
                     names[i], s);
            return CLNORM_INVALID_ARGUMENT;
        }
    }
    return CLNORM_OK;
}

void clnorm_row_norm_slot_info(const clnorm_op *op, const clnorm_desc *d, clnorm_direction dir,
                               clnorm_arg_slot slot, clnorm_slot_info *info)
{
    const int fwd = dir == CLNORM_FORWARD;
    const unsigned takes = fwd ? op->fwd_slots : op->bwd_slots;
    const int has_g = !(d->flags & CLNORM_NO_GAMMA), has_b = !(d->flags & CLNORM_NO_BETA);
    const int stats = (d->flags & CLNORM_SAVE_STATS) != 0;
    const int global = (d->flags & CLNORM_USE_GLOBAL_STATS) != 0;
    const int has_scale = (d->flags & CLNORM_SCALE) != 0, has_shift = (d->flags & CLNORM_SHIFT) != 0;
    const clnorm_dtype t = d->dtype, pt = clnorm_param_dtype(t), rt = clnorm_residual_dtype(d);
    const clnorm_slot_use req = CLNORM_SLOT_REQUIRED, opt = CLNORM_SLOT_OPTIONAL,
                          none = CLNORM_SLOT_UNUSED;
    info->is_output = 0;
    info->use = none;
    clnorm_slot_layout(info, t, 0, 0, 0);
    if (!(takes & SLOT_BIT(slot)))
        return;
    switch (slot) {
    case CLNORM_ARG_X:
        info->use = req;
        clnorm_slot_layout(info, t, d->rows, d->cols, d->x_stride);
        return;
    case CLNORM_ARG_Y:
        info->use = req;
        info->is_output = 1;
        clnorm_slot_layout(info, t, d->rows, d->cols, d->y_stride);
        return;
    case CLNORM_ARG_GAMMA:
        info->use = has_g ? req : none;
        clnorm_slot_layout(info, pt, 1, d->cols, d->cols);
        return;
    case CLNORM_ARG_BETA:
        /* the backward reads beta for dscale = sum dy * (xhat * gamma + beta) alone */
        info->use = !has_b ? none : fwd ? req : has_scale ? opt : none;
        clnorm_slot_layout(info, pt, 1, d->cols, d->cols);
        return;
    case CLNORM_ARG_MEAN:
    case CLNORM_ARG_RSTD:
        /* global statistics: inputs of both directions; else written by a forward with
         * SAVE_STATS, read when given by the backward */
        info->use = global ? req : fwd ? (stats ? req : none) : opt;
        info->is_output = fwd && !global;
        clnorm_slot_layout(info, pt, d->rows ? 1 : 0, d->rows, d->rows);
        return;
    case CLNORM_ARG_SCALE:
        info->use = has_scale ? req : none;
        clnorm_slot_layout(info, pt, d->samples, d->cols, d->mod_stride);
        return;
    case CLNORM_ARG_SHIFT:
        info->use = has_shift ? req : none;
        clnorm_slot_layout(info, pt, d->samples, d->cols, d->mod_stride);
        return;
    case CLNORM_ARG_DSCALE:
        info->use = has_scale ? opt : none;
        info->is_output = 1;
        clnorm_slot_layout(info, pt, d->samples, d->cols, d->mod_stride);
        return;
    case CLNORM_ARG_DSHIFT:
        info->use = has_shift ? opt : none;
        info->is_output = 1;
        clnorm_slot_layout(info, pt, d->samples, d->cols, d->mod_stride);
        return;
    case CLNORM_ARG_RESIDUAL:
        info->use = req;
        clnorm_slot_layout(info, rt, d->rows, d->cols, d->residual_stride);
        return;
    case CLNORM_ARG_SUM:
        info->use = opt;
        info->is_output = 1;
        clnorm_slot_layout(info, rt, d->rows, d->cols, d->sum_stride);
        return;
    case CLNORM_ARG_DSUM:
        info->use = opt;
        clnorm_slot_layout(info, rt, d->rows, d->cols, d->sum_stride);
        return;
    case CLNORM_ARG_DY:
        info->use = req;
        clnorm_slot_layout(info, t, d->rows, d->cols, d->y_stride);
        return;
    case CLNORM_ARG_DX:
        info->use = opt;
        info->is_output = 1;
        clnorm_slot_layout(info, t, d->rows, d->cols, d->x_stride);
        return;
    case CLNORM_ARG_DGAMMA:
        info->use = has_g ? opt : none;
        info->is_output = 1;
        clnorm_slot_layout(info, pt, 1, d->cols, d->cols);
        return;
    case CLNORM_ARG_DBETA:
        info->use = has_b ? opt : none;
        info->is_output = 1;
        clnorm_slot_layout(info, pt, 1, d->cols, d->cols);
        return;
    }
}

clnorm_status clnorm_row_norm_check_present(clnorm_ctx *ctx, const clnorm_op *op,
                                            const clnorm_desc *d, clnorm_direction dir,
                                            unsigned present)
{
    if (dir != CLNORM_BACKWARD || d->rows == 0)
        return CLNORM_OK;
    RETURN_IF((present & B(DSUM)) && !(present & B(DX)), ctx, CLNORM_INVALID_ARGUMENT,
              "dsum is given without dx: it is only ever added to dx");
    RETURN_IF((present & B(DSCALE)) && !(d->flags & CLNORM_NO_BETA) && !(present & B(BETA)),
              ctx, CLNORM_INVALID_ARGUMENT,
              "dscale is asked for but beta is NULL: dscale = sum dy * (xhat * gamma + beta) "
              "reads the forward's beta");
    if (!op->has_mean)
        return CLNORM_OK;
    const int m = (present & B(MEAN)) != 0, r = (present & B(RSTD)) != 0;
    RETURN_IF(m != r, ctx, CLNORM_INVALID_ARGUMENT,
              "%s is NULL but %s is given: pass both saved statistics, or neither to have "
              "them recomputed from x",
              m ? "rstd" : "mean", m ? "mean" : "rstd");
    return CLNORM_OK;
}

void clnorm_row_norm_defines(const clnorm_op *op, const clnorm_desc *d, char *buf, size_t size)
{
    static const char *const fmt[] = {"F32", "F16", "BF16", "F64"};
    const char *r = fmt[clnorm_residual_dtype(d)];
    if (op->residual)
        snprintf(buf, size, " -DCLNORM_RESIDUAL -DCLNORM_R_FMT=%s -DCLNORM_R_%s=1", r, r);
    else if (size)
        buf[0] = '\0';
}

unsigned clnorm_row_norm_flags(const clnorm_op *op, const clnorm_desc *d, clnorm_direction dir,
                               unsigned present)
{
    unsigned f = op->has_mean ? 0u : CLNORM_KF_RMS;
    if (present & B(GAMMA))
        f |= CLNORM_KF_GAMMA;
    if (present & B(SCALE))
        f |= CLNORM_KF_SCALE;
    if (d->flags & CLNORM_USE_GLOBAL_STATS) {
        f |= CLNORM_KF_GLOBAL_STATS; /* inputs: never written, never recomputed */
        if (dir == CLNORM_BACKWARD)
            f |= (present & B(MEAN) ? CLNORM_KF_MEAN : 0u) | CLNORM_KF_RSTD;
    } else {
        if (present & B(MEAN))
            f |= CLNORM_KF_MEAN;
        if (present & B(RSTD))
            f |= CLNORM_KF_RSTD;
    }
    if (dir == CLNORM_FORWARD) {
        if (present & B(SHIFT))
            f |= CLNORM_KF_SHIFT;
        if (present & B(BETA))
            f |= CLNORM_KF_BETA;
        if (present & B(SUM))
            f |= CLNORM_KF_SUM;
        return f;
    }
    if (present & B(DX))
        f |= CLNORM_KF_GRAD_X;
    if (present & B(DGAMMA))
        f |= CLNORM_KF_GRAD_GAMMA;
    if (present & B(DBETA))
        f |= CLNORM_KF_GRAD_BETA;
    if (present & B(DSUM))
        f |= CLNORM_KF_DSUM;
    if (present & B(BETA))
        f |= CLNORM_KF_BETA;
    if (present & B(DSCALE))
        f |= CLNORM_KF_GRAD_SCALE;
    if (present & B(DSHIFT))
        f |= CLNORM_KF_GRAD_SHIFT;
    if (!(present & B(RSTD)))
        f |= CLNORM_KF_RECOMPUTE;
    return f;
}

/* One block of rows holding the only sample, no modulation: the block's partial sums are
 * dgamma and dbeta, so the rows kernel stores them there and one launch is saved. On a
 * CPU's latency path that launch is half of a small backward's time. */
unsigned clnorm_row_norm_geometry_flags(const clnorm_op *op, const clnorm_desc *d,
                                        const struct clnorm_geometry *g, clnorm_direction dir,
                                        unsigned flags)
{
    (void)op;
    const unsigned modulated =
        CLNORM_KF_SCALE | CLNORM_KF_GRAD_SCALE | CLNORM_KF_GRAD_SHIFT;
    if (dir != CLNORM_BACKWARD)
        return flags;
    if ((flags & (CLNORM_KF_GRAD_GAMMA | CLNORM_KF_GRAD_BETA)) && !(flags & modulated) &&
        d->samples <= 1 && g->bwd_groups == 1)
        flags |= CLNORM_KF_PARAMS_DIRECT;
    /* The wide rows' factors (kernels/norm_backward.cl, BWD_GF): only where a row can be
     * wide (LayerNorm's dx from its own statistics) and gamma or a scale makes the factor
     * other than 1. The rows kernel's one-item work-groups (CPU devices) of rows not cut into
     * chunks take it themselves, once per block and sample, with no barrier; otherwise
     * norm_bwd_gmax, one launch more, reads gamma and the scale once (on the in-thread
     * device that launch had taken 1x768's backward from 3.1-3.3 to 4.3-4.4 us). */
    if (g->bwd_gmax && (flags & (CLNORM_KF_GAMMA | CLNORM_KF_SCALE)) &&
        (flags & (CLNORM_KF_RMS | CLNORM_KF_GLOBAL_STATS | CLNORM_KF_GRAD_X)) ==
            CLNORM_KF_GRAD_X)
        flags |= g->bwd_local == 1 && g->bwd_chunks <= 1 ? CLNORM_KF_GMAX_HERE : CLNORM_KF_GMAX;
    if ((flags & CLNORM_KF_RECOMPUTE) && g->bwd_stats_here)
        flags |= CLNORM_KF_STATS_HERE;
    return flags;
}

/* ---- kernel chains ---- */

/* The kernels that apply or differentiate a modulation take the rows per sample (KA_OP 0)
 * right after their tensors (kernels/op_row_norm.cl, MOD_PARAM and BWD_SCALE_PARAM). */
#define SAMPLE_ROWS {KA_OP, 0}
static const clnorm_karg fwd_args[] = {SAMPLE_ROWS, {KA_ROWS, 0}, {KA_COLS, 0}, {KA_EPS, 0},
                                       {KA_FLAGS, 0}, {KA_END, 0}};
static const clnorm_karg fwd_local_args[] = {SAMPLE_ROWS, {KA_ROWS, 0}, {KA_COLS, 0},
                                             {KA_EPS, 0}, {KA_FLAGS, 0}, {KA_LOCAL_ACC, 0},
                                             {KA_END, 0}};
static const clnorm_karg split_stats_args[] = {{KA_SCRATCH, 0}, {KA_ROWS, 0}, {KA_COLS, 0},
                                               {KA_CHUNK_LEN, 0}, {KA_CHUNKS, 0}, {KA_FLAGS, 0},
                                               {KA_LOCAL_ACC, 0}, {KA_END, 0}};
static const clnorm_karg split_apply_args[] = {SAMPLE_ROWS, {KA_SCRATCH, 0}, {KA_ROWS, 0},
                                               {KA_COLS, 0}, {KA_CHUNK_LEN, 0}, {KA_CHUNKS, 0},
                                               {KA_EPS, 0}, {KA_FLAGS, 0}, {KA_END, 0}};
static const clnorm_karg apply_stats_args[] = {SAMPLE_ROWS, {KA_ROWS, 0}, {KA_COLS, 0},
                                               {KA_FLAGS, 0}, {KA_END, 0}};
/* Backward scratch: 0 recomputed statistics, 1 parameter partials, 2 chunk sums, 4 the wide
 * rows' factor per sample (norm_bwd_gmax). Two local arrays each: a wide row's sums in
 * double (kernels/norm_backward.cl, BWD_WG_SUM_W). */
static const clnorm_karg bwd_gmax_args[] = {{KA_OP, 1}, {KA_SCRATCH, 4}, {KA_COLS, 0},
                                            {KA_FLAGS, 0}, {KA_LOCAL_ACC, 0}, {KA_END, 0}};
static const clnorm_karg bwd_stats_args[] = {{KA_SCRATCH, 0}, {KA_ROWS, 0}, {KA_COLS, 0},
                                             {KA_EPS, 0}, {KA_FLAGS, 0}, {KA_LOCAL_ACC, 0},
                                             {KA_LOCAL_ACC, 0}, {KA_END, 0}};
static const clnorm_karg bwd_sums_args[] = {SAMPLE_ROWS, {KA_SCRATCH, 0}, {KA_SCRATCH, 2},
                                            {KA_SCRATCH, 4}, {KA_ROWS, 0}, {KA_COLS, 0},
                                            {KA_CHUNK_LEN, 0}, {KA_CHUNKS, 0}, {KA_FLAGS, 0},
                                            {KA_LOCAL_ACC, 0}, {KA_LOCAL_ACC, 0}, {KA_END, 0}};
static const clnorm_karg bwd_rows_args[] = {SAMPLE_ROWS, {KA_SCRATCH, 0}, {KA_SCRATCH, 1},
                                            {KA_SCRATCH, 2}, {KA_SCRATCH, 4}, {KA_ROWS, 0},
                                            {KA_COLS, 0},
                                            {KA_ROWS_PER_GROUP, 0}, {KA_CHUNK_LEN, 0},
                                            {KA_CHUNKS, 0}, {KA_FLAGS, 0}, {KA_EPS, 0},
                                            {KA_FIRST_BLOCK, 0}, {KA_LOCAL_ACC, 0},
                                            {KA_LOCAL_ACC, 0}, {KA_END, 0}};
/* Backward scratch 3: the partials' slice sums (RUN_SLICED). */
static const clnorm_karg bwd_slices_args[] = {SAMPLE_ROWS, {KA_OP, 1}, {KA_SCRATCH, 1},
                                              {KA_SCRATCH, 3}, {KA_ROWS_PER_GROUP, 0},
                                              {KA_COLS, 0}, {KA_FLAGS, 0}, {KA_END, 0}};
static const clnorm_karg bwd_params_args[] = {SAMPLE_ROWS, {KA_OP, 1}, {KA_SCRATCH, 1},
                                              {KA_SCRATCH, 3}, {KA_ROWS_PER_GROUP, 0},
                                              {KA_COLS, 0}, {KA_FLAGS, 0}, {KA_END, 0}};

/* The kernels' tensor parameters (kernels/op_row_norm.cl), without and with a residual. */
#define FWD_T (B(X) | B(Y) | B(GAMMA) | B(BETA) | B(MEAN) | B(RSTD) | B(SCALE) | B(SHIFT))
#define BWD_IN_T (B(X) | B(GAMMA) | B(MEAN) | B(RSTD) | B(DY) | B(SCALE))
#define PARAMS_T                                                                            \
    (B(GAMMA) | B(BETA) | B(DGAMMA) | B(DBETA) | B(SCALE) | B(DSCALE) | B(DSHIFT))

#define COMMON_FILES "common.cl", "op_row_norm.cl", "row_stats.cl"

/* One family of chains per kernel signature: R is 0, or the residual's extra slots. With
 * precomputed statistics every strategy's forward is the one elementwise apply. */
#define CHAINS(name, RIN, RFWD, RBWD)                                                       \
    static const clnorm_chain name##_row = {                                                \
        {COMMON_FILES, "norm_body.cl", "norm_row.cl", NULL},                                \
        {{"norm_row", FWD_T | (RFWD), fwd_args, GEOM_FWD, 0}}, 1};                          \
    static const clnorm_chain name##_workgroup = {                                          \
        {COMMON_FILES, "norm_body.cl", "norm_workgroup.cl", NULL},                          \
        {{"norm_workgroup", FWD_T | (RFWD), fwd_local_args, GEOM_FWD, 0}}, 1};              \
    static const clnorm_chain name##_subgroup = {                                           \
        {COMMON_FILES, "norm_subgroup.cl", NULL},                                           \
        {{"norm_subgroup", FWD_T | (RFWD), fwd_local_args, GEOM_FWD, 0}}, 1};               \
    static const clnorm_chain name##_split = {                                              \
        {COMMON_FILES, "norm_split.cl", NULL},                                              \
        {{"norm_split_stats", B(X) | (RIN), split_stats_args, GEOM_SPLIT, 0},               \
         {"norm_split_apply", FWD_T | (RFWD), split_apply_args, GEOM_SPLIT, 0}},            \
        2};                                                                                 \
    static const clnorm_chain name##_apply_stats = {                                        \
        {COMMON_FILES, "norm_apply.cl", NULL},                                              \
        {{"norm_apply_stats", FWD_T | (RFWD), apply_stats_args, GEOM_ITEMS, 0}}, 1};        \
    static const clnorm_chain name##_backward = {                                           \
        {COMMON_FILES, "norm_backward.cl", NULL},                                           \
        {{"norm_bwd_gmax", B(GAMMA) | B(SCALE), bwd_gmax_args, GEOM_BWD_SAMPLES, RUN_GMAX},  \
         {"norm_bwd_stats", B(X) | (RIN), bwd_stats_args, GEOM_BWD_STATS, RUN_RECOMPUTE},   \
         {"norm_bwd_sums", BWD_IN_T | (RIN), bwd_sums_args, GEOM_BWD_CHUNKS,                \
          RUN_CHUNKED | RUN_ROW_SUMS},                                                      \
         {"norm_bwd_rows", BWD_IN_T | B(DX) | B(DGAMMA) | B(DBETA) | (RBWD), bwd_rows_args,   \
          GEOM_BWD_ROWS, 0},                                                                \
         {"norm_bwd_slices", 0u, bwd_slices_args, GEOM_BWD_SLICES,                          \
          RUN_PARAM_GRADS | RUN_SLICED},                                                    \
         {"norm_bwd_params", PARAMS_T, bwd_params_args, GEOM_BWD_PARAMS,                    \
          RUN_PARAM_GRADS}},                                                                \
        6};                                                                                 \
    const clnorm_chain *name##_chain(const clnorm_desc *d, clnorm_strategy s,               \
                                     clnorm_direction dir)                                  \
    {                                                                                       \
        if (dir == CLNORM_BACKWARD)                                                         \
            return &name##_backward;                                                        \
        if (d->flags & CLNORM_USE_GLOBAL_STATS)                                             \
            return &name##_apply_stats;                                                     \
        switch (s) {                                                                        \
        case CLNORM_STRATEGY_ROW: return &name##_row;                                       \
        case CLNORM_STRATEGY_WORKGROUP: return &name##_workgroup;                           \
        case CLNORM_STRATEGY_SUBGROUP: return &name##_subgroup;                             \
        case CLNORM_STRATEGY_SPLIT: return &name##_split;                                   \
        default: return NULL;                                                               \
        }                                                                                   \
    }

CHAINS(clnorm_row_norm, 0u, 0u, 0u)
CHAINS(clnorm_add_norm, B(RESIDUAL), B(RESIDUAL) | B(SUM), B(RESIDUAL) | B(DSUM))

size_t clnorm_row_norm_scalar(const clnorm_desc *d, unsigned k)
{
    return k == 0 ? (d->samples ? d->rows / d->samples : 0) : d->samples;
}

/* Units of rows, or with a modulation of samples. */
static size_t part_unit_rows(const clnorm_desc *d)
{
    const int modulated = (d->flags & (CLNORM_SCALE | CLNORM_SHIFT)) != 0;
    return !modulated ? 1 : d->samples > 1 ? d->rows / d->samples : d->rows;
}

size_t clnorm_row_norm_part_units(const clnorm_desc *d, size_t step[])
{
    /* A modulated part holds whole samples, so that its scale and shift rows are its own. */
    const size_t q = part_unit_rows(d);
    for (unsigned s = 0; s < CLNORM_ARG_SLOT_COUNT; s++)
        step[s] = 0; /* the parameters: every part reads them whole */
    step[CLNORM_ARG_X] = q * d->x_stride;
    step[CLNORM_ARG_Y] = q * d->y_stride;
    step[CLNORM_ARG_RESIDUAL] = q * d->residual_stride;
    step[CLNORM_ARG_SUM] = q * d->sum_stride;
    step[CLNORM_ARG_MEAN] = step[CLNORM_ARG_RSTD] = q;
    step[CLNORM_ARG_SCALE] = step[CLNORM_ARG_SHIFT] = d->mod_stride;
    return q ? d->rows / q : 0;
}

void clnorm_row_norm_part_desc(const clnorm_desc *d, size_t units, clnorm_desc *part)
{
    *part = *d;
    part->rows = units * part_unit_rows(d);
    if ((d->flags & (CLNORM_SCALE | CLNORM_SHIFT)) && d->samples > 1)
        part->samples = units;
}

/* Partial rows per sample of the backward: one per block of rpg rows inside a sample, or one
 * when a block holds whole samples (kernels/norm_backward.cl, block_rows); 0 without rows. */
static size_t bwd_partials_per_sample(const clnorm_desc *d, const clnorm_geometry *g)
{
    const size_t T = clnorm_row_norm_scalar(d, 0), rpg = g->bwd_rows_per_group;
    if (T == 0)
        return 0;
    return T >= rpg ? clnorm_div_up(T, rpg) : 1;
}

/* The host loop's thresholds: the defaults (internal.h), but for a forward with precomputed
 * statistics. That forward is one elementwise pass on both sides, and on the 2-core EPYC VM
 * the device path on the arrays caught up with the loop at 1 MiB of float32 x (1024-column
 * rows: 121-128 against 132-134 µs) and passed it from 2 MiB (260-262 against 200-209 µs; 16
 * MiB 1227 against 908), while the loop led below (256 KiB: 32-37 against 88-96 µs; bench's
 * layer-stats, bench/RESULTS.md). Its backward kept the default: the loop led at 512 KiB and
 * was even at 1 MiB. */
size_t clnorm_row_norm_host_bytes(const clnorm_desc *d, clnorm_direction dir)
{
    if (dir == CLNORM_FORWARD)
        return d->flags & CLNORM_USE_GLOBAL_STATS ? (size_t)1 << 20 : CLNORM_HOST_DEFAULT_BYTES;
    return CLNORM_HOST_BACKWARD_DEFAULT_BYTES;
}

/* Slices the partials are added in first (flags.h, CLNORM_PARAM_SLICE), or 0: the same rule
 * as norm_bwd_params'. */
static size_t bwd_slices(const clnorm_desc *d, const clnorm_geometry *g)
{
    const size_t per = bwd_partials_per_sample(d, g);
    if (d->samples * per <= CLNORM_PARAM_SLICED_MIN)
        return 0;
    return d->samples * clnorm_div_up(per, CLNORM_PARAM_SLICE);
}

void clnorm_row_norm_geometry(const clnorm_device_profile *p, const clnorm_desc *d,
                              clnorm_strategy s, const clnorm_tuning *t, const size_t kmax[2],
                              clnorm_geometry *g)
{
    (void)s; /* the policy's geometry for s is already in g */
    if (d->flags & CLNORM_USE_GLOBAL_STATS) {
        /* The elementwise apply: a work-item per row on CPUs; on GPUs a work-group per row
         * of up to 256 items, each every L-th vector, so loads coalesce. */
        const int cpu = (p->type & CL_DEVICE_TYPE_CPU) != 0;
        const size_t vecs = clnorm_div_up(d->cols, g->vw);
        g->items_local = cpu ? 1 : clnorm_fit_local(clnorm_clamp(vecs, 32, 256), kmax[0], p);
        g->items = clnorm_row_groups(d->rows, cpu ? 64 * (size_t)p->compute_units : 65536, t);
    }
    /* Float32 LayerNorm rows of a large rstd * |gamma (1 + scale)| go to double where the
     * device has it (kernels/norm_backward.cl, norm_bwd_gmax). */
    g->bwd_gmax = p->has_fp64 && d->dtype == CLNORM_F32;
    /* Recomputed statistics in the rows kernel itself (kernels/norm_backward.cl,
     * bwd_row_stats_here): one pass over the row in double, no barrier, so only one-item
     * work-groups (CPU devices) of rows not cut into chunks; the separate statistics kernel
     * read x once more (a backward without statistics took 1.65-1.85x the time of one given
     * them at 16384x256 and 8192x768 on PoCL's CPU device). */
    g->bwd_stats_here =
        p->has_fp64 && d->dtype != CLNORM_F64 && g->bwd_local == 1 && g->bwd_chunks <= 1;
    if ((d->flags & CLNORM_WITH_BACKWARD) && d->rows) {
        /* Row blocks never straddle samples: rpg rows inside one, or whole short samples. */
        const size_t T = d->rows / d->samples, rpg = g->bwd_rows_per_group;
        g->bwd_groups = T >= rpg ? d->samples * clnorm_div_up(T, rpg)
                                 : clnorm_div_up(d->samples, rpg / T);
        g->bwd_slices = bwd_slices(d, g);
    }
}

void clnorm_row_norm_scratch(const clnorm_desc *d, const clnorm_geometry *g,
                             clnorm_direction dir, size_t bytes[])
{
    const size_t acc = clnorm_param_size(d->dtype); /* the arithmetic type A */
    for (int i = 0; i < CLNORM_MAX_SCRATCH; i++)
        bytes[i] = 0;
    if (dir == CLNORM_FORWARD) {
        if (g->chunks) /* split: per row K (two), then (mean, M2, scale, max) per chunk */
            bytes[0] = clnorm_bytes3(d->rows, 2 + 4 * g->chunks, acc);
        return;
    }
    bytes[0] = clnorm_bytes3(d->rows, CLNORM_STATS_PER_ROW, acc);
    /* the parameter partials and their slices: W (kernels/norm_backward.cl) */
    bytes[1] = clnorm_bytes3(d->samples * bwd_partials_per_sample(d, g), 2 * d->cols,
                             CLNORM_W_SIZE);
    bytes[3] = clnorm_bytes3(g->bwd_slices, 2 * d->cols, CLNORM_W_SIZE);
    if (g->bwd_chunks > 1) /* (kernels/norm_backward.cl, BWD_SUMS_PER_CHUNK) */
        bytes[2] = clnorm_bytes3(d->rows, CLNORM_ROW_SUMS_PER_CHUNK * g->bwd_chunks, acc);
    bytes[4] = clnorm_bytes3(d->samples, 1, acc); /* (norm_bwd_gmax) */
}
