/* float16 / bfloat16 <-> float32 conversions of the public API: half_bits.h's, bit-exact
 * with what the kernels do. */
#include "half_bits.h"
#include "internal.h"

float clnorm_f16_to_f32(unsigned short h) { return clnorm_half_to_float(h); }

unsigned short clnorm_f32_to_f16(float f) { return clnorm_float_to_half(f); }

float clnorm_bf16_to_f32(unsigned short b) { return clnorm_bfloat_to_float(b); }

unsigned short clnorm_f32_to_bf16(float f) { return clnorm_float_to_bfloat(f); }
