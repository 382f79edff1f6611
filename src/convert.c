/* float16 / bfloat16 <-> float32 conversions, bit-exact with what the kernels do
 * (vload_half / vstore_half_rte and the bfloat16 shifts of kernels/common.cl). Written with
 * integer arithmetic only, so they do not depend on the host compiler's _Float16 support. */
#include "internal.h"

#include <stdint.h>
#include <string.h>

static uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float float_of(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

float clnorm_f16_to_f32(unsigned short h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    if (exp == 0x1f) /* Inf / NaN: keep the payload */
        return float_of(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {
        if (man == 0)
            return float_of(sign);
        /* subnormal: normalize the mantissa */
        exp = 113; /* 127 - 15 + 1 */
        while ((man & 0x400u) == 0) {
            man <<= 1;
            exp--;
        }
        man &= 0x3ffu;
        return float_of(sign | (exp << 23) | (man << 13));
    }
    return float_of(sign | ((exp + 112) << 23) | (man << 13));
}

unsigned short clnorm_f32_to_f16(float f)
{
    const uint32_t u = bits_of(f);
    const uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    const uint32_t exp = (u >> 23) & 0xffu;
    uint32_t man = u & 0x7fffffu;
    if (exp == 0xff) /* Inf stays Inf; NaN stays a (quiet) NaN */
        return (unsigned short)(sign | 0x7c00u | (man ? 0x200u | (man >> 13) : 0));
    const int e = (int)exp - 127 + 15; /* biased half exponent */
    if (e >= 31)
        return (unsigned short)(sign | 0x7c00u); /* overflow rounds to Inf */
    if (e <= 0) {
        /* subnormal half (or zero): shift the full significand right, round to even */
        if (e < -10)
            return sign; /* below half the smallest subnormal: rounds to zero */
        man |= 0x800000u;
        const unsigned shift = (unsigned)(14 - e);
        uint32_t q = man >> shift;
        const uint32_t rem = man & ((1u << shift) - 1);
        const uint32_t half = 1u << (shift - 1);
        if (rem > half || (rem == half && (q & 1u)))
            q++;
        return (unsigned short)(sign | q);
    }
    uint32_t q = ((uint32_t)e << 10) | (man >> 13);
    const uint32_t rem = man & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (q & 1u)))
        q++; /* may carry into the exponent, up to Inf: that is the right rounding */
    return (unsigned short)(sign | q);
}

float clnorm_bf16_to_f32(unsigned short b)
{
    return float_of((uint32_t)b << 16);
}

unsigned short clnorm_f32_to_bf16(float f)
{
    const uint32_t u = bits_of(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: quiet, same sign */
        return (unsigned short)((u >> 16) | 0x40u);
    return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
