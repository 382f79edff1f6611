/*
 * half_bits.h - float16 / bfloat16 <-> float32 conversions, bit-exact with what the kernels do
 * (vload_half / vstore_half_rte and the bfloat16 shifts of kernels/common.cl). Written with
 * integer arithmetic only, so they do not depend on the host compiler's _Float16 support.
 * Inline, for the host loop's per-element conversions (op/row_norm_host*.h); convert.c
 * exports them as clnorm_f16_to_f32 and friends.
 */
#ifndef CLNORM_HALF_BITS_H
#define CLNORM_HALF_BITS_H

#include <stdint.h>

/* Bit casts through a union (defined in C11), which compilers vectorize in loops. */
typedef union {
    float f;
    uint32_t u;
} clnorm_f32_bits;

static inline uint32_t clnorm_bits_of(float f)
{
    clnorm_f32_bits b;
    b.f = f;
    return b.u;
}

static inline float clnorm_float_of(uint32_t u)
{
    clnorm_f32_bits b;
    b.u = u;
    return b.f;
}

/* The half's exponent and mantissa bits moved into a float's, times 2^112 (the bias
 * difference): exact for normal halves and for subnormal ones (a float subnormal times a
 * power of two). Exponent 31 is Inf/NaN, payload kept. Branch-free, so loops of it
 * vectorize. */
static inline float clnorm_half_to_float(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t em = (uint32_t)(h & 0x7fffu);
    const uint32_t finite = clnorm_bits_of(clnorm_float_of(em << 13) * 0x1p112f);
    const uint32_t special = 0x7f800000u | (em << 13);
    const uint32_t is_special = 0u - (uint32_t)(em >= 0x7c00u); /* all ones or zero */
    return clnorm_float_of(sign | (special & is_special) | (finite & ~is_special));
}

/* Round to nearest even (F. Giesen's float_to_half_fast3_rtne): normal results by adding
 * the rounding bias under the mantissa and shifting (a carry may reach the exponent, up to
 * Inf: that is the right rounding); results below the smallest normal half by letting the
 * FPU's round-to-nearest-even add of a magic number align the bits; Inf stays Inf and NaN a
 * quiet NaN of the same upper payload. */
static inline uint16_t clnorm_float_to_half(float f)
{
    const uint32_t u = clnorm_bits_of(f);
    const uint32_t sign = (u >> 16) & 0x8000u;
    const uint32_t a = u & 0x7fffffffu;
    const uint32_t magic = (uint32_t)((127 - 15) + (23 - 10) + 1) << 23;
    const uint32_t sub = clnorm_bits_of(clnorm_float_of(a) + clnorm_float_of(magic)) - magic;
    const uint32_t norm = (a + ((uint32_t)(15 - 127) << 23) + 0xfffu + ((a >> 13) & 1u)) >> 13;
    const uint32_t is_nan = 0u - (uint32_t)(a > 0x7f800000u); /* masks: all ones or zero */
    const uint32_t big = 0x7c00u | (is_nan & (0x200u | ((a >> 13) & 0x3ffu)));
    const uint32_t is_big = 0u - (uint32_t)(a >= ((uint32_t)(127 + 16) << 23));
    const uint32_t is_sub = 0u - (uint32_t)(a < ((uint32_t)113 << 23));
    const uint32_t o = (big & is_big) | (sub & is_sub & ~is_big) | (norm & ~is_sub & ~is_big);
    return (uint16_t)(sign | o);
}

static inline float clnorm_bfloat_to_float(uint16_t b)
{
    return clnorm_float_of((uint32_t)b << 16);
}

static inline uint16_t clnorm_float_to_bfloat(float f)
{
    const uint32_t u = clnorm_bits_of(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: quiet, same sign */
        return (uint16_t)((u >> 16) | 0x40u);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

#endif
