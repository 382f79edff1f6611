/* The storage formats' element access through clnorm's own conversions, so the data every
 * contender sees is rounded exactly as the library rounds; their names, sizes and the
 * parameters' access are dtype_info.c's. */
#include "bench.h"

#include <stdint.h>

double bench_get(clnorm_dtype t, const void *base, size_t i)
{
    switch (t) {
    case CLNORM_F16: return clnorm_f16_to_f32(((const uint16_t *)base)[i]);
    case CLNORM_BF16: return clnorm_bf16_to_f32(((const uint16_t *)base)[i]);
    case CLNORM_F64: return ((const double *)base)[i];
    case CLNORM_F32: break;
    }
    return ((const float *)base)[i];
}

void bench_put(clnorm_dtype t, void *base, size_t i, double v)
{
    switch (t) {
    case CLNORM_F16: ((uint16_t *)base)[i] = clnorm_f32_to_f16((float)v); return;
    case CLNORM_BF16: ((uint16_t *)base)[i] = clnorm_f32_to_bf16((float)v); return;
    case CLNORM_F64: ((double *)base)[i] = v; return;
    case CLNORM_F32: break;
    }
    ((float *)base)[i] = (float)v;
}
