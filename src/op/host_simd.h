/*
 * host_simd.h - what the host loops (row_norm_host.c, group_norm_host.c) share about the CPU
 * they run on: how their loops are compiled (HCLONES, HINLINE), the float16 conversions
 * through the F16C instructions, the streaming stores of large float32 outputs, and an
 * exponential that vectorizes (GroupNorm's SiLU).
 * host_simd.c holds the functions; each host loop includes its own type-generic body
 * (host_elem_body.h and the op's) once per arithmetic type.
 */
#ifndef CLNORM_HOST_SIMD_H
#define CLNORM_HOST_SIMD_H

#include <stddef.h>
#include <stdint.h>

/* The kernels' blocks on an AVX2 CPU: BLOCK_V = 16 vectors of 8 (kernels/common.cl). */
#define HLANES 8
#define HBLOCK 128

/* The host loops' statistics blocks (HN(moments), host_elem_body.h): each block's two-pass
 * moments in vector lanes, the blocks then merged with Chan's update and Kahan-added. With
 * the kernels' 128 (HBLOCK) the merges, dependent scalar steps, took about a third of a
 * GroupNorm forward's time and a quarter of a 257 x 768 LayerNorm's instructions
 * (bench/RESULTS.md, "The host loops' statistics in blocks of 1024"). */
#define HMOM_BLOCK 1024

/* A host loop's chunk: about HCHUNK elements (enough work to amortize handing a chunk to
 * another thread: a few microseconds), at most HMAX_CHUNKS chunks per job. */
#define HCHUNK 16384
#define HMAX_CHUNKS 256

/* The sum of HLANES double lanes, added pairwise (the host loops' double sums: GroupNorm's
 * backward channel sums, the float32 backward of a large rstd * |gamma| in both loops). */
static inline double clnorm_host_lanes_sum(double *l)
{
    for (size_t w = HLANES / 2; w > 0; w /= 2)
        for (size_t k = 0; k < w; k++)
            l[k] += l[k + w];
    return l[0];
}

/* Asks for the lines of elements [off, off + n) of base (esize bytes each) in the cache, a
 * prefetch per 64-byte line: for a store (write) or for a load into L2 (the two wrappers
 * below; write is a constant there, so the branch folds away). */
static inline void clnorm_host_prefetch_lines(const void *base, size_t esize, size_t off,
                                              size_t n, int write)
{
#if defined(__GNUC__)
    const char *p = (const char *)base + off * esize;
    for (size_t i = 0; i < n * esize; i += 64) {
        if (write)
            __builtin_prefetch(p + i, 1, 3);
        else
            __builtin_prefetch(p + i, 0, 2);
    }
#else
    (void)base;
    (void)esize;
    (void)off;
    (void)n;
    (void)write;
#endif
}

/* Ahead of plain stores: an output (a row's y, sum or dx, a GroupNorm NCHW unit's y or dx)
 * before the pass that reads the inputs it comes from. A plain store to a line not in the
 * cache reads the line first, and the stores waited on those reads one after another; asked
 * for here (prefetchw where the target has it, else prefetcht0, which brings a line no other
 * core holds in exclusive), the reads overlap the pass's. A row or a unit at a time: a batch
 * of small groups' 32 KB at once held up the reads of x (bench/RESULTS.md, "The host loops'
 * outputs asked for before the statistics"). */
static inline void clnorm_host_prefetch_out(const void *base, size_t esize, size_t off,
                                            size_t n)
{
    clnorm_host_prefetch_lines(base, esize, off, n, 1);
}

/* Into L2 ahead of the loads of a later pass: the backward's next row of x and dy (and the
 * residual), asked for once the current row's are in L1, so that memory works while that
 * row's sums and dx run from the cache (1.06-1.13x at 8x768-257x768, bench/RESULTS.md, "The
 * row host loop's backward: a few long rows on every thread"). */
static inline void clnorm_host_prefetch_in(const void *base, size_t esize, size_t off,
                                           size_t n)
{
    clnorm_host_prefetch_lines(base, esize, off, n, 0);
}

/* One line of a prefetch spread through a loop (GroupNorm's NHWC statistics ask for the next
 * unit's x a line per row, HN(rows_moments_block)): the line at element *next of base, while
 * *next < n, then *next moves on a line. */
static inline void clnorm_host_prefetch_step(const void *base, size_t esize, size_t *next,
                                             size_t n)
{
    if (*next < n) {
        clnorm_host_prefetch_lines(base, esize, *next, 1, 0);
        *next += 64 / esize;
    }
}

/* A phase's loops are inlined into one function (HPHASE), which GCC compiles three times on
 * x86-64 with glibc: for AVX-512 (x86-64-v4), AVX2 (x86-64-v3) and the baseline, chosen once
 * by the loader (an ifunc). All compute the same bits: the lanes are the source's (HLANES),
 * and ISO C mode contracts no multiply-add into an FMA. The AVX-512 clone ran GroupNorm's
 * fused SiLU 1.35-1.37x faster than the AVX2 one (its exponential's polynomial twice as wide),
 * other calls 1.03-1.06x, for about 20 s more of compiling (bench/RESULTS.md, "GroupNorm's
 * SiLU in the host loop: an AVX-512 clone, and 1 MiB in NCHW"). One function per phase, not
 * one per chunk holding every phase: GCC's register liveness and PRE grow faster than
 * linearly with a function's size, and group_norm_host.c's two chunk functions (560 KB of
 * code with their clones) took it 50 s to compile, the longest step of every build
 * (bench/RESULTS.md, "The host loops' compile time"). */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__GLIBC__) && \
    !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define HCLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#define HCLONES_AVX2 __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define HCLONES
#define HCLONES_AVX2
#endif
#if defined(__GNUC__)
#define HINLINE inline __attribute__((always_inline))
#define HNOINLINE __attribute__((noinline))
#else
#define HINLINE inline
#define HNOINLINE
#endif
/* A phase of a host loop: its own function, cloned per ISA where HCLONES does, and never
 * inlined into its caller (where HCLONES is empty GCC would fold the phases back into one). */
#define HPHASE HCLONES HNOINLINE

/* A phase without the AVX-512 clone: the row loop's (row_norm_host_body.h) and GroupNorm's
 * NCHW backward without SiLU in float (HPHASE_PLAIN_BWD). Their rows and channels of a few
 * hundred to a few thousand elements run half a dozen short passes each, whose sums keep the
 * kernels' eight lanes (HLANES), and on the AMD EPYC (Zen 4) VM the AVX2 clone ran them
 * faster than the AVX-512 one: the row backward 1.14-1.27x at 8x768-128x2048 (float32,
 * float16, bfloat16; float64 0.98-1.02x), its forward 0.97-1.09x, the same on memory-bound
 * calls (bench/RESULTS.md, "The row host loop without its AVX-512 clone"). */
#define HPHASE_AVX2 HCLONES_AVX2 HNOINLINE

/* e^x in float, for the GroupNorm loop's SiLU: libm's expf is a call, which keeps every loop
 * that holds it scalar (the fused SiLU cost the forward 8x its time: 0.94 against 0.11 ms at
 * 1x320x32x32). This one is arithmetic only, so the loops vectorize: Cody and Waite's
 * reduction x = n ln2 + r with ln2 in two parts, n rounded to nearest by adding and
 * subtracting 1.5 * 2^23, Cephes' degree-5 polynomial for e^r - 1 - r on |r| <= ln2 / 2
 * (about 1 ulp from e^x), and 2^n assembled in the exponent bits. x is clamped to
 * [-87, 88], where 2^n stays normal: e^-87 is 1.6e-38 and e^88 1.7e38, which the SiLU's
 * t / (1 + e^-t) and its gradient turn into the same results as 0 and +Inf would within a
 * float32 ulp of 0 or 1. NaN stays NaN. The same bits on every x86-64 code path (ISO C
 * contracts no multiply-add). */
static inline float clnorm_host_expf(float x)
{
    const int nan = x != x;
    float c = nan ? 0.0f : x;
    c = c > 88.0f ? 88.0f : c;
    c = c < -87.0f ? -87.0f : c;
    const float n = (c * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    float r = c - n * 0.693359375f;
    r = r + n * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    const float y = (p * r) * r + r + 1.0f;
    union {
        uint32_t u;
        float f;
    } two_n = {.u = (uint32_t)((int32_t)n + 127) << 23};
    return nan ? x : y * two_n.f;
}

/* e^x in double, for the SiLU of GroupNorm's double loop (float64, and the float32 backward
 * of small groups, group_norm_host.c's gn_wide): libm's exp is a call per element, which made
 * those backward calls 2.5-4x slower. As clnorm_host_expf: Cody and Waite's reduction, n
 * rounded by adding and subtracting 1.5 * 2^52 (whose low bits then hold n, so 2^n is built
 * with integer adds and shifts that AVX2 has for 64-bit lanes), Taylor's degree-12 polynomial
 * on |r| <= ln2 / 2 (truncation below 2e-16 relative), about 1 ulp from e^x. x is clamped to
 * [-708, 709], where 2^n stays normal (e^-708 is 3.3e-308, e^709 8.2e307). NaN stays NaN. */
static inline double clnorm_host_exp(double x)
{
    const int nan = x != x;
    double c = nan ? 0.0 : x;
    c = c > 709.0 ? 709.0 : c;
    c = c < -708.0 ? -708.0 : c;
    union {
        double d;
        uint64_t u;
    } k = {.d = c * 1.4426950408889634074 + 0x1.8p52}, magic = {.d = 0x1.8p52};
    const double n = k.d - 0x1.8p52;
    double r = c - n * 6.93147180369123816490e-01; /* ln2's upper bits: n * them is exact */
    r = r - n * 1.90821492927058770002e-10;
    double p = 1.0 / 479001600.0;
    p = p * r + 1.0 / 39916800.0;
    p = p * r + 1.0 / 3628800.0;
    p = p * r + 1.0 / 362880.0;
    p = p * r + 1.0 / 40320.0;
    p = p * r + 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    const double y = (p * r) * r + r + 1.0;
    union {
        uint64_t u;
        double d;
    } two_n = {.u = (k.u - magic.u + 1023u) << 52};
    return nan ? x : y * two_n.d;
}

/* float16 rows through the F16C instructions where the CPU has them: the integer
 * conversions of half_bits.h cost the float16 loop half again the float32 loop's time. The
 * same bits: conversions to float are exact, and vcvtps2ph rounds to nearest even, to Inf
 * past the largest half and to the half subnormals, and keeps a NaN quiet with its upper
 * payload, as clnorm_float_to_half does (test_convert and test_host_loop check both).
 *
 * Large float32 outputs are written with non-temporal stores, as the kernels write theirs on
 * CPU devices (kernels/common.cl): a plain store first reads its line into the cache (a third
 * of the call's memory traffic) and evicts the inputs still to come. Not for outputs that fit
 * the caches, which the caller is likely to read next: HSTREAM_BYTES. */
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__) &&           \
    !defined(__SANITIZE_THREAD__)
#define HAVE_F16C_PATH 1
#define HAVE_STREAM_PATH 1
#define HSTREAM_BYTES ((size_t)4 << 20)

int clnorm_host_have_f16c(void);
void clnorm_host_halves_to_floats(float *dst, const uint16_t *p, size_t n);
void clnorm_host_floats_to_halves(uint16_t *p, const float *src, size_t n);
int clnorm_host_have_avx(void);
/* n floats from src to dst with non-temporal stores (dst's first elements up to a 32-byte
 * boundary with plain ones); with pf not NULL, pf[i] prefetched into L2 for every 16
 * elements i as they go. */
void clnorm_host_stream_floats(float *dst, const float *src, size_t n, const float *pf);
/* Orders a chunk's streaming stores before the chunk is reported done. */
void clnorm_host_stream_fence(void);
#else
#define HAVE_F16C_PATH 0
#define HAVE_STREAM_PATH 0
#endif

#endif
