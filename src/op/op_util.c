/* What the ops' slot layouts and scratch sizes share (op.h). */
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
