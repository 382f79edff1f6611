/*
 * row_norm_host.c - the host loop of the row-normalization family: the whole operation, forward
 * or backward, as plain C loops on the host, with no OpenCL command at all: in the calling
 * thread, joined by the context's worker threads (host_pool.h) when the call has several
 * chunks of rows. The execution path of host-pointer calls on CPU devices (execute.c, README
 * "Small problems on CPU devices"): there the kernels' launch, and the copies in and out of
 * device buffers, cost tens of microseconds where a small call's work is one or two.
 *
 * Not the reference (ref/ref_row_norm.c), which is the oracle of the tests: the reference
 * accumulates in double element by element, the host loop computes as the kernels do, in
 * float for f32/f16/bf16 storage (double for f64) with the kernels' blocked shifted two-pass
 * statistics (row_norm_host_body.h), and is tested against the reference like a strategy.
 * Parameter gradients are summed in float over blocks of HROWS rows, then in double within
 * each chunk of rows, then over the chunks in order: deterministic, and the same whatever the
 * number of threads, since the chunks depend on the shape alone.
 */
#include "../dtype.h"
#include "../half_bits.h"
#include "../host_pool.h"
#include "row_norm.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The kernels' blocks on an AVX2 CPU: BLOCK_V = 16 vectors of 8 (kernels/common.cl). */
#define HLANES 8
#define HBLOCK 128
/* Rows whose parameter-gradient partials are summed in the arithmetic type before they are
 * added into double (the kernels' backward row blocks). */
#define HROWS 32

/* Rows of one chunk: about HCHUNK elements (enough work to amortize handing a chunk to
 * another thread: a few microseconds), whole HROWS blocks in the backward (so that its float
 * partials are the blocks one thread would form), and at most HMAX_CHUNKS chunks (the
 * backward keeps a few rows of double sums per chunk). A function of the shape only. */
#define HCHUNK 16384
#define HMAX_CHUNKS 256

static size_t host_chunk_rows(const clnorm_desc *d, clnorm_direction dir)
{
    size_t r = d->cols ? clnorm_div_up(HCHUNK, d->cols) : 1;
    const size_t least = clnorm_div_up(d->rows, HMAX_CHUNKS);
    if (r < least)
        r = least;
    if (dir == CLNORM_BACKWARD)
        r = clnorm_div_up(r, HROWS) * HROWS;
    return r ? r : 1;
}

/* One chunk's loops are inlined into one function, which GCC compiles twice on x86-64 with
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

/* Large float32 outputs are written with non-temporal stores, as the kernels write theirs on
 * CPU devices (kernels/common.cl): a plain store first reads its line into the cache (a third
 * of the call's memory traffic) and evicts the inputs still to come. Not for outputs that fit
 * the caches, which the caller is likely to read next: HSTREAM_BYTES. */
#define HAVE_STREAM_PATH 1
#define HSTREAM_BYTES ((size_t)4 << 20)

static int have_avx(void)
{
    return __builtin_cpu_supports("avx");
}

__attribute__((target("avx"))) static void stream_floats(float *dst, const float *src, size_t n)
{
    size_t i = 0;
    for (; i < n && ((uintptr_t)(dst + i) & 31u) != 0; i++)
        dst[i] = src[i];
    for (; i + 8 <= n; i += 8)
        _mm256_stream_ps(dst + i, _mm256_loadu_ps(src + i));
    for (; i < n; i++)
        dst[i] = src[i];
}

/* The streaming stores of a chunk are ordered before the chunk is reported done. */
static void stream_fence(void)
{
    _mm_sfence();
}
#else
#define HAVE_F16C_PATH 0
#define HAVE_STREAM_PATH 0
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
#define HSTREAM HAVE_STREAM_PATH
#define HNATIVE CLNORM_F32
#define HN(n) n##_f
#include "row_norm_host_body.h"
#undef HA
#undef HF16C
#undef HSTREAM
#undef HNATIVE
#undef HN

#define HA double
#define HF16C 0
#define HSTREAM 0
#define HNATIVE CLNORM_F64
#define HN(n) n##_d
#include "row_norm_host_body.h"
#undef HA
#undef HF16C
#undef HSTREAM
#undef HNATIVE
#undef HN

clnorm_status clnorm_row_norm_host(const clnorm_op *op, const clnorm_desc *d,
                                   clnorm_direction dir, const clnorm_host_ptrs *a,
                                   clnorm_ctx *ctx)
{
    return d->dtype == CLNORM_F64 ? run_d(op, d, dir, a, ctx) : run_f(op, d, dir, a, ctx);
}
