/*
 * row_norm_host.c - the host loop of the row-normalization family: the whole operation, forward
 * or backward, as plain C loops in the calling thread, with no OpenCL command at all. The
 * execution path of small host-pointer calls on CPU devices (execute.c, README "Small problems
 * on CPU devices"): there the kernels' launch, and the copies in and out of device buffers,
 * cost tens of microseconds where the work itself is one or two.
 *
 * Not the reference (ref/ref_row_norm.c), which is the oracle of the tests: the reference
 * accumulates in double element by element, the host loop computes as the kernels do, in
 * float for f32/f16/bf16 storage (double for f64) with the kernels' blocked shifted two-pass
 * statistics (row_norm_host_body.h), and is tested against the reference like a strategy.
 * Parameter gradients are summed in float over blocks of HROWS rows, then in double,
 * deterministic in row order.
 */
#include "../dtype.h"
#include "../half_bits.h"
#include "row_norm.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

/* The kernels' blocks on an AVX2 CPU: BLOCK_V = 16 vectors of 8 (kernels/common.cl). */
#define HLANES 8
#define HBLOCK 128
/* Rows whose parameter-gradient partials are summed in the arithmetic type before they are
 * added into double (the kernels' backward row blocks). */
#define HROWS 32

/* One call's loops are inlined into one function, which GCC compiles twice on x86-64 with
 * glibc: for AVX2 (x86-64-v3) and for the baseline, chosen once by the loader (an ifunc). Both
 * compute the same bits: the lanes are the source's (HLANES), and ISO C mode contracts no
 * multiply-add into an FMA. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__GLIBC__) && \
    !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define HCLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define HCLONES
#endif
#if defined(__GNUC__)
#define HINLINE inline __attribute__((always_inline))
#else
#define HINLINE inline
#endif

/* float16 rows through the F16C instructions where the CPU has them: the integer
 * conversions of half_bits.h cost the float16 loop half again the float32 loop's time. The
 * same bits: conversions to float are exact, and vcvtps2ph rounds to nearest even, to Inf
 * past the largest half and to the half subnormals, and keeps a NaN quiet with its upper
 * payload, as clnorm_float_to_half does (test_convert and test_host_loop check both). */
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__) &&           \
    !defined(__SANITIZE_THREAD__)
#include <immintrin.h>
#define HAVE_F16C_PATH 1

static int have_f16c(void)
{
    return __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx");
}

__attribute__((target("avx,f16c"))) static void halves_to_floats_f16c(float *dst,
                                                                     const uint16_t *p, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + i))));
    for (; i < n; i++)
        dst[i] = clnorm_half_to_float(p[i]);
}

__attribute__((target("avx,f16c"))) static void floats_to_halves_f16c(uint16_t *p,
                                                                     const float *src, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(p + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; i++)
        p[i] = clnorm_float_to_half(src[i]);
}
#else
#define HAVE_F16C_PATH 0
#endif

/* n double sums stored as parameters of type pt (element access of dtype.h, as the
 * reference stores them) at base + off when base is given; zeroed after when `clear`. */
static void store_sums(clnorm_dtype pt, void *base, size_t off, double *v, size_t n, int clear)
{
    for (size_t j = 0; j < n; j++) {
        if (base)
            clnorm_elem_store(pt, base, off + j, v[j]);
        if (clear)
            v[j] = 0.0;
    }
}

#define HA float
#define HF16C HAVE_F16C_PATH
#define HNATIVE CLNORM_F32
#define HN(n) n##_f
#include "row_norm_host_body.h"
#undef HA
#undef HF16C
#undef HNATIVE
#undef HN

#define HA double
#define HF16C 0
#define HNATIVE CLNORM_F64
#define HN(n) n##_d
#include "row_norm_host_body.h"
#undef HA
#undef HF16C
#undef HNATIVE
#undef HN

clnorm_status clnorm_row_norm_host(const clnorm_op *op, const clnorm_desc *d,
                                   clnorm_direction dir, const clnorm_host_ptrs *a)
{
    return d->dtype == CLNORM_F64 ? run_d(op, d, dir, a) : run_f(op, d, dir, a);
}
