/*
 * dtype.h - element access for every storage type, shared by the CPU reference (src/ref/),
 * the tests and the bench: each type read as double and written back with one correct
 * rounding (round to nearest even from the double value, through float by rounding to odd
 * so that no double rounding creeps in). Header-only, public API only (clnorm.h's
 * conversions), so code outside the library can include it.
 */
#ifndef CLNORM_DTYPE_H
#define CLNORM_DTYPE_H

#include "clnorm.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Bytes of one element of a storage type (0 for a value that is not one). */
static inline size_t clnorm_elem_size(clnorm_dtype t)
{
    switch (t) {
    case CLNORM_F32: return 4;
    case CLNORM_F16:
    case CLNORM_BF16: return 2;
    case CLNORM_F64: return 8;
    }
    return 0;
}

/* double -> float rounding to odd: exact when representable, else the neighbour whose last
 * bit is 1. A later rounding of that float to nearest even at 16 or fewer significant bits
 * then equals the correct rounding of the double itself (no double-rounding error). */
static inline float clnorm_round_to_odd(double v)
{
    float f = (float)v;
    if ((double)f == v || f != f || (double)f - (double)f != 0.0)
        return f; /* exact, NaN or Inf */
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 1u) == 0)
        u = fabs((double)f) > fabs(v) ? u - 1 : u + 1;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline double clnorm_elem_load(clnorm_dtype t, const void *base, size_t i)
{
    switch (t) {
    case CLNORM_F16: return clnorm_f16_to_f32(((const uint16_t *)base)[i]);
    case CLNORM_BF16: return clnorm_bf16_to_f32(((const uint16_t *)base)[i]);
    case CLNORM_F64: return ((const double *)base)[i];
    case CLNORM_F32: break;
    }
    return ((const float *)base)[i];
}

static inline void clnorm_elem_store(clnorm_dtype t, void *base, size_t i, double v)
{
    switch (t) {
    case CLNORM_F16: ((uint16_t *)base)[i] = clnorm_f32_to_f16(clnorm_round_to_odd(v)); return;
    case CLNORM_BF16: ((uint16_t *)base)[i] = clnorm_f32_to_bf16(clnorm_round_to_odd(v)); return;
    case CLNORM_F64: ((double *)base)[i] = v; return;
    case CLNORM_F32: break;
    }
    ((float *)base)[i] = (float)v;
}

/* A value as the type would hold it: stored and loaded again. */
static inline double clnorm_elem_round(clnorm_dtype t, double v)
{
    unsigned char buf[8];
    clnorm_elem_store(t, buf, 0, v);
    return clnorm_elem_load(t, buf, 0);
}

/* Parameters (gamma, beta, mean, rstd, dgamma, dbeta) of problems of storage t: double for
 * F64, else float. */
static inline clnorm_dtype clnorm_elem_param_type(clnorm_dtype t)
{
    return t == CLNORM_F64 ? CLNORM_F64 : CLNORM_F32;
}

#endif
