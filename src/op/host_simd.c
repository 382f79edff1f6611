/*
 * host_simd.c - the host loops' float16 conversions through F16C and their streaming stores
 * (host_simd.h says when and why).
 */
#include "host_simd.h"

#if HAVE_F16C_PATH
#include "../half_bits.h"

#include <immintrin.h>

int clnorm_host_have_f16c(void)
{
    return __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx");
}

__attribute__((target("avx,f16c"))) void clnorm_host_halves_to_floats(float *dst,
                                                                      const uint16_t *p, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + i))));
    for (; i < n; i++)
        dst[i] = clnorm_half_to_float(p[i]);
}

__attribute__((target("avx,f16c"))) void clnorm_host_floats_to_halves(uint16_t *p,
                                                                      const float *src, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(p + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; i++)
        p[i] = clnorm_float_to_half(src[i]);
}

int clnorm_host_have_avx(void)
{
    return __builtin_cpu_supports("avx");
}

__attribute__((target("avx"))) void clnorm_host_stream_floats(float *dst, const float *src,
                                                              size_t n, const float *pf)
{
    size_t i = 0;
    for (; i < n && ((uintptr_t)(dst + i) & 31u) != 0; i++)
        dst[i] = src[i];
    for (; i + 16 <= n; i += 16) {
        _mm256_stream_ps(dst + i, _mm256_loadu_ps(src + i));
        _mm256_stream_ps(dst + i + 8, _mm256_loadu_ps(src + i + 8));
        if (pf)
            _mm_prefetch((const char *)(pf + i), _MM_HINT_T1);
    }
    for (; i + 8 <= n; i += 8)
        _mm256_stream_ps(dst + i, _mm256_loadu_ps(src + i));
    for (; i < n; i++)
        dst[i] = src[i];
}

void clnorm_host_stream_fence(void)
{
    _mm_sfence();
}
#else
/* ISO C forbids an empty translation unit. */
typedef int clnorm_host_simd_unused;
#endif
