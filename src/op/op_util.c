/* What the ops' slot layouts, scratch sizes and kernel steps share (op.h). */
#include "op.h"

#include <stdint.h>

void clnorm_slot_layout(clnorm_slot_info *info, clnorm_dtype t, size_t rows, size_t cols,
                        size_t stride)
{
    info->dtype = t;
    info->rows = rows;
    info->cols = cols;
    info->stride = stride;
    clnorm_extent(rows, cols, stride, &info->extent);
}

size_t clnorm_bytes3(size_t a, size_t b, size_t c)
{
    if (a == 0 || b == 0 || c == 0)
        return 0;
    if (a > SIZE_MAX / b || a * b > SIZE_MAX / c)
        return SIZE_MAX;
    return a * b * c;
}

int clnorm_step_takes(const clnorm_kstep *step, clnorm_karg_kind kind)
{
    for (const clnorm_karg *ka = step->args; ka && ka->kind != KA_END; ka++)
        if (ka->kind == kind)
            return 1;
    return 0;
}

int clnorm_block_dim(clnorm_geom_kind geom)
{
    switch (geom) {
    case GEOM_BWD_ROWS: return 1;
    case GEOM_SPLIT: return 0;
    default: return -1;
    }
}
