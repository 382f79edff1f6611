/*
 * row_norm.h - the row-normalization family: LayerNorm and RMSNorm over the last dims, and
 * their fused residual add. Its members (layer_norm.c, rms_norm.c, add_norm.c) differ in two
 * facts (has_mean, residual); the slots, checks, kernels and reference they share live in
 * row_norm.c and ref/ref_row_norm.c.
 */
#ifndef CLNORM_ROW_NORM_H
#define CLNORM_ROW_NORM_H

#include "op.h"

#define ROW_NORM_FWD_SLOTS                                                                  \
    (SLOT_BIT(CLNORM_ARG_X) | SLOT_BIT(CLNORM_ARG_Y) | SLOT_BIT(CLNORM_ARG_GAMMA) |         \
     SLOT_BIT(CLNORM_ARG_BETA) | SLOT_BIT(CLNORM_ARG_RSTD) | SLOT_BIT(CLNORM_ARG_SCALE) |   \
     SLOT_BIT(CLNORM_ARG_SHIFT))
/* BETA: the backward reads it for dscale only */
#define ROW_NORM_BWD_SLOTS                                                                  \
    (SLOT_BIT(CLNORM_ARG_X) | SLOT_BIT(CLNORM_ARG_GAMMA) | SLOT_BIT(CLNORM_ARG_BETA) |      \
     SLOT_BIT(CLNORM_ARG_RSTD) | SLOT_BIT(CLNORM_ARG_DY) | SLOT_BIT(CLNORM_ARG_DX) |        \
     SLOT_BIT(CLNORM_ARG_DGAMMA) | SLOT_BIT(CLNORM_ARG_DBETA) | SLOT_BIT(CLNORM_ARG_SCALE) | \
     SLOT_BIT(CLNORM_ARG_DSCALE) | SLOT_BIT(CLNORM_ARG_DSHIFT))
#define ROW_NORM_MEAN_SLOTS SLOT_BIT(CLNORM_ARG_MEAN)
#define ROW_NORM_RESIDUAL_FWD_SLOTS (SLOT_BIT(CLNORM_ARG_RESIDUAL) | SLOT_BIT(CLNORM_ARG_SUM))
#define ROW_NORM_RESIDUAL_BWD_SLOTS (SLOT_BIT(CLNORM_ARG_RESIDUAL) | SLOT_BIT(CLNORM_ARG_DSUM))
/* The rows x cols tensors (in place may pair them): everything but parameters, statistics
 * and parameter gradients. */
#define ROW_NORM_ROW_SLOTS                                                                  \
    (SLOT_BIT(CLNORM_ARG_X) | SLOT_BIT(CLNORM_ARG_Y) | SLOT_BIT(CLNORM_ARG_RESIDUAL) |      \
     SLOT_BIT(CLNORM_ARG_SUM) | SLOT_BIT(CLNORM_ARG_DSUM) | SLOT_BIT(CLNORM_ARG_DY) |       \
     SLOT_BIT(CLNORM_ARG_DX))

clnorm_status clnorm_row_norm_check_desc(const clnorm_desc *d, char *msg, size_t msg_size);
void clnorm_row_norm_slot_info(const clnorm_op *op, const clnorm_desc *d, clnorm_direction dir,
                               clnorm_arg_slot slot, clnorm_slot_info *info);
clnorm_status clnorm_row_norm_check_present(clnorm_ctx *ctx, const clnorm_op *op,
                                            const clnorm_desc *d, clnorm_direction dir,
                                            unsigned present);
void clnorm_row_norm_defines(const clnorm_op *op, const clnorm_desc *d, char *buf, size_t size);
unsigned clnorm_row_norm_geometry_flags(const clnorm_op *op, const clnorm_desc *d,
                                        const struct clnorm_geometry *g, clnorm_direction dir,
                                        unsigned flags);
unsigned clnorm_row_norm_flags(const clnorm_op *op, const clnorm_desc *d, clnorm_direction dir,
                               unsigned present);
const clnorm_chain *clnorm_row_norm_chain(const clnorm_desc *d, clnorm_strategy s,
                                          clnorm_direction dir);
const clnorm_chain *clnorm_add_norm_chain(const clnorm_desc *d, clnorm_strategy s,
                                          clnorm_direction dir);
void clnorm_row_norm_scratch(const clnorm_desc *d, const clnorm_geometry *g,
                             clnorm_direction dir, size_t bytes[]);
/* KA_OP 0: rows per sample (rows without a modulation), 1: samples */
size_t clnorm_row_norm_scalar(const clnorm_desc *d, unsigned k);
/* Its forward cut into parts of rows, or of whole samples with a modulation
 * (clnorm_op.part_units, .part_desc) */
size_t clnorm_row_norm_part_units(const clnorm_desc *d, size_t step[]);
void clnorm_row_norm_part_desc(const clnorm_desc *d, size_t units, clnorm_desc *part);
/* Precomputed statistics' apply geometry, and backward row blocks inside samples */
void clnorm_row_norm_geometry(const clnorm_device_profile *p, const clnorm_desc *d,
                              clnorm_strategy s, const clnorm_tuning *t, const size_t kmax[2],
                              clnorm_geometry *g);
/* The CPU reference of the family (ref/ref_row_norm.c). */
clnorm_status clnorm_row_norm_ref(const clnorm_op *op, const clnorm_desc *d,
                                  clnorm_direction dir, const clnorm_host_ptrs *a);
/* Its host loop (row_norm_host.c). */
clnorm_status clnorm_row_norm_host(const clnorm_op *op, const clnorm_desc *d,
                                   clnorm_direction dir, const clnorm_host_ptrs *a,
                                   clnorm_ctx *ctx);

/* The host loop's threshold in bytes of x (op.h host_bytes). */
size_t clnorm_row_norm_host_bytes(const clnorm_desc *d, clnorm_direction dir);

/* The entry of a member: only its name, summary and two facts differ. */
#define ROW_NORM_OP(kind_, base_, name_, summary_, has_mean_, residual_, chain_)            \
    {                                                                                       \
        .kind = (kind_), .name = (name_), .summary = (summary_), .base_kind = (base_),      \
        .fwd_slots = ROW_NORM_FWD_SLOTS | ((has_mean_) ? ROW_NORM_MEAN_SLOTS : 0u) |        \
                     ((residual_) ? ROW_NORM_RESIDUAL_FWD_SLOTS : 0u),                      \
        .bwd_slots = ROW_NORM_BWD_SLOTS | ((has_mean_) ? ROW_NORM_MEAN_SLOTS : 0u) |        \
                     ((residual_) ? ROW_NORM_RESIDUAL_BWD_SLOTS : 0u),                      \
        .has_mean = (has_mean_), .residual = (residual_), .row_slots = ROW_NORM_ROW_SLOTS,  \
        .check_desc = clnorm_row_norm_check_desc, .slot_info = clnorm_row_norm_slot_info,   \
        .check_present = clnorm_row_norm_check_present,                                     \
        .build_defines = clnorm_row_norm_defines, .kernel_flags = clnorm_row_norm_flags,    \
        .geometry_flags = clnorm_row_norm_geometry_flags,                                   \
        .chain = (chain_), .scratch_bytes = clnorm_row_norm_scratch,                        \
        .scalar = clnorm_row_norm_scalar, .geometry = clnorm_row_norm_geometry,             \
        .part_units = clnorm_row_norm_part_units, .part_desc = clnorm_row_norm_part_desc,   \
        .ref = clnorm_row_norm_ref, .host = clnorm_row_norm_host,                           \
        .host_bytes = clnorm_row_norm_host_bytes                                            \
    }

#endif
