/*
 * ref_modulation.h - the CPU references' per-sample modulation (CLNORM_SCALE / CLNORM_SHIFT):
 * row `row` (a row of the row kinds, a batch entry of GroupNorm) belongs to sample row /
 * (rows / samples), whose scale and shift rows start mod_stride elements apart. Shared by
 * ref_row_norm.c and ref_group_norm.c.
 */
#ifndef CLNORM_REF_MODULATION_H
#define CLNORM_REF_MODULATION_H

#include "../dtype.h"
#include "../op/op.h"

/* The modulation of one row: its sample's scale and shift rows (NULL when absent). */
typedef struct {
    const void *scale, *shift;
    size_t off; /* the sample's first element */
} clnorm_ref_mod;

static inline clnorm_ref_mod clnorm_ref_mod_of(const clnorm_desc *d, const clnorm_host_ptrs *a,
                                               size_t row)
{
    clnorm_ref_mod md = {a->p[CLNORM_ARG_SCALE], a->p[CLNORM_ARG_SHIFT],
                         row / (d->rows / d->samples) * d->mod_stride};
    return md;
}

/* 1 + scale of column j (1 without a scale). */
static inline double clnorm_ref_one_plus_scale(const clnorm_desc *d, const clnorm_ref_mod *md,
                                               size_t j)
{
    return md->scale ? 1.0 + clnorm_elem_load(clnorm_param_dtype(d->dtype), md->scale,
                                              md->off + j)
                     : 1.0;
}

/* shift of column j (0 without a shift). */
static inline double clnorm_ref_shift(const clnorm_desc *d, const clnorm_ref_mod *md, size_t j)
{
    return md->shift ? clnorm_elem_load(clnorm_param_dtype(d->dtype), md->shift, md->off + j)
                     : 0.0;
}

#endif
