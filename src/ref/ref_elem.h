/* Element access for the CPU reference: every storage type read as double and written back
 * with one correct rounding (round to nearest even from the double result). */
#ifndef CLNORM_REF_ELEM_H
#define CLNORM_REF_ELEM_H

#include "../internal.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* double -> float rounding to odd: exact when representable, else the neighbour whose last
 * bit is 1. A later rounding of that float to nearest even at 16 or fewer significant bits
 * then equals the correct rounding of the double itself (no double-rounding error). */
static inline float ref_round_to_odd(double v)
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

static inline double ref_load(clnorm_dtype t, const void *base, size_t i)
{
    switch (t) {
    case CLNORM_F16: return clnorm_f16_to_f32(((const uint16_t *)base)[i]);
    case CLNORM_BF16: return clnorm_bf16_to_f32(((const uint16_t *)base)[i]);
    case CLNORM_F64: return ((const double *)base)[i];
    case CLNORM_F32: break;
    }
    return ((const float *)base)[i];
}

static inline void ref_store(clnorm_dtype t, void *base, size_t i, double v)
{
    switch (t) {
    case CLNORM_F16: ((uint16_t *)base)[i] = clnorm_f32_to_f16(ref_round_to_odd(v)); return;
    case CLNORM_BF16: ((uint16_t *)base)[i] = clnorm_f32_to_bf16(ref_round_to_odd(v)); return;
    case CLNORM_F64: ((double *)base)[i] = v; return;
    case CLNORM_F32: break;
    }
    ((float *)base)[i] = (float)v;
}

/* Parameters (gamma, beta, mean, rstd, dgamma, dbeta): double for F64, else float. */
static inline double ref_param(clnorm_dtype t, const void *base, size_t i)
{
    return t == CLNORM_F64 ? ((const double *)base)[i] : ((const float *)base)[i];
}

static inline void ref_param_store(clnorm_dtype t, void *base, size_t i, double v)
{
    if (t == CLNORM_F64)
        ((double *)base)[i] = v;
    else
        ((float *)base)[i] = (float)v;
}

/* A row's statistics in double, as the kernels take them: shifted by the row's first element
 * K (0 for RMS), m the mean of x - K (0 for RMS), rs = 1 / sqrt(mean(((x - K) - m)^2) + eps).
 * A constant row then has deviations of exactly 0 (its y is exactly beta) even where its
 * double mean would round (F64 storage), and K + m is never formed before a subtraction. */
static inline void ref_row_stats(clnorm_dtype t, const void *x, size_t xo, size_t cols, int rms,
                                 double eps, double *K, double *m, double *rs)
{
    *K = rms ? 0.0 : ref_load(t, x, xo);
    *m = 0.0;
    if (!rms) {
        for (size_t j = 0; j < cols; j++)
            *m += ref_load(t, x, xo + j) - *K;
        *m /= (double)cols;
    }
    double ss = 0.0;
    for (size_t j = 0; j < cols; j++) {
        const double dev = (ref_load(t, x, xo + j) - *K) - *m;
        ss += dev * dev;
    }
    *rs = 1.0 / sqrt(ss / (double)cols + eps);
}

#endif
