/*
 * common.cl - helpers shared by every normalization strategy. OpenCL C 1.2.
 *
 * Build options set by src/program.c:
 *   -DVW=4|8|16      vector width of the per-work-item loops (16 on CPU devices, 4 on GPUs)
 *   -DCLNORM_DTYPE_F32 (storage type; F32 in this release)
 *
 * Numerics (ARCHITECTURE.md): every row is shifted by its first element K, statistics are taken
 * two-pass over (x - K): m = mean(x - K), var = mean(((x - K) - m)^2), and the output is
 * ((x - K) - m) * rstd. Never x - (K + m): K + m rounds at |K| * 2^-24. Sums run in float32
 * vector lanes over blocks of BLOCK_V vectors, and the block sums are added with Kahan
 * compensation, so a 1,048,576-element row loses no more than a 256-element one.
 * No -cl-fast-relaxed-math: NaN and Inf must stay inside their own row.
 */
#ifndef VW
#define VW 16
#endif

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

typedef float T;                  /* storage type of x and y */
typedef CAT(float, VW) floatv;    /* accumulation vector */
#define VLOAD(p) CAT(vload, VW)(0, (p))
#define VSTORE(v, p) CAT(vstore, VW)((v), 0, (p))

/* Vectors per block before the block sum is folded into the compensated total. */
#define BLOCK_V 16

/* Flags passed to every kernel (kept in step with src/dispatch.c). */
#define FLAG_GAMMA 1u
#define FLAG_BETA 2u
#define FLAG_MEAN 4u
#define FLAG_RSTD 8u
#define FLAG_RMS 16u

/* Pairwise horizontal sum of a vector. */
inline float hsum2(float2 v) { return v.s0 + v.s1; }
inline float hsum4(float4 v) { return hsum2(v.lo + v.hi); }
inline float hsum8(float8 v) { return hsum4(v.lo + v.hi); }
inline float hsum16(float16 v) { return hsum8(v.lo + v.hi); }
#define HSUM(v) CAT(hsum, VW)(v)

/* Kahan-compensated addition: (*s, *c) is the running total and its lost low part. */
inline void kahan_add(float *s, float *c, float v)
{
    float y = v - *c;
    float t = *s + y;
    *c = (t - *s) - y;
    *s = t;
}

/*
 * Sum of (p[i] - K) over i in [b, e), for work-item lid of L. Items take vectors
 * lid, lid + L, lid + 2L, ... so neighbouring items touch neighbouring memory (coalesced on
 * GPUs; with L == 1 it is a plain vector loop). The tail after the last whole vector goes
 * element by element, also strided by L.
 */
inline float seg_sum_shift(__global const T *p, ulong b, ulong e, uint lid, uint L, float K)
{
    const ulong nv = (e - b) / VW;
    float s = 0.0f, c = 0.0f;
    for (ulong v0 = lid; v0 < nv; v0 += (ulong)L * BLOCK_V) {
        const ulong vend = min(nv, v0 + (ulong)L * BLOCK_V);
        floatv a = (floatv)(0.0f);
        for (ulong v = v0; v < vend; v += L)
            a += VLOAD(p + b + v * VW) - K;
        kahan_add(&s, &c, HSUM(a));
    }
    float t = 0.0f;
    for (ulong i = b + nv * VW + lid; i < e; i += L)
        t += p[i] - K;
    kahan_add(&s, &c, t);
    return s;
}

/* Sum of ((p[i] - K) - m)^2 over i in [b, e); with K = m = 0 it is the sum of squares. */
inline float seg_sum_sq(__global const T *p, ulong b, ulong e, uint lid, uint L, float K, float m)
{
    const ulong nv = (e - b) / VW;
    float s = 0.0f, c = 0.0f;
    for (ulong v0 = lid; v0 < nv; v0 += (ulong)L * BLOCK_V) {
        const ulong vend = min(nv, v0 + (ulong)L * BLOCK_V);
        floatv a = (floatv)(0.0f);
        for (ulong v = v0; v < vend; v += L) {
            const floatv d = (VLOAD(p + b + v * VW) - K) - m;
            a = fma(d, d, a);
        }
        kahan_add(&s, &c, HSUM(a));
    }
    float t = 0.0f;
    for (ulong i = b + nv * VW + lid; i < e; i += L) {
        const float d = (p[i] - K) - m;
        t = fma(d, d, t);
    }
    kahan_add(&s, &c, t);
    return s;
}

/*
 * y[i] = ((x[i] - K) - m) * rstd * gamma[i] + beta[i] over i in [b, e) for item lid of L.
 * x and y point at the row's first element; gamma and beta at column 0 (used only when the
 * flags say so). x may equal y (in place): each element is read before it is written, by the
 * same work-item.
 */
inline void seg_apply(__global const T *x, __global T *y, __global const float *gamma,
                      __global const float *beta, ulong b, ulong e, uint lid, uint L,
                      float K, float m, float rstd, uint flags)
{
    const ulong nv = (e - b) / VW;
    const int has_g = (flags & FLAG_GAMMA) != 0;
    const int has_b = (flags & FLAG_BETA) != 0;
    for (ulong v = lid; v < nv; v += L) {
        const ulong i = b + v * VW;
        floatv t = ((VLOAD(x + i) - K) - m) * rstd;
        if (has_g)
            t *= VLOAD(gamma + i);
        if (has_b)
            t += VLOAD(beta + i);
        VSTORE(t, y + i);
    }
    for (ulong i = b + nv * VW + lid; i < e; i += L) {
        float t = ((x[i] - K) - m) * rstd;
        if (has_g)
            t *= gamma[i];
        if (has_b)
            t += beta[i];
        y[i] = t;
    }
}

/*
 * Sum of v over the L items of a work-group, returned to every item. scratch holds L floats.
 * Exact for any L, power of two or not: each step folds the upper half (rounded down) onto
 * the lower, so the middle element of an odd count waits for the next step. Fixed order, so
 * results are bit-reproducible.
 */
inline float wg_sum(float v, __local float *scratch, uint lid, uint L)
{
    if (L == 1)
        return v;
    scratch[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint n = L; n > 1;) {
        const uint h = (n + 1) / 2;
        if (lid < n / 2)
            scratch[lid] += scratch[lid + h];
        barrier(CLK_LOCAL_MEM_FENCE);
        n = h;
    }
    const float r = scratch[0];
    barrier(CLK_LOCAL_MEM_FENCE); /* scratch may be reused right after */
    return r;
}

/* Writes the saved statistics of one row, when asked for. */
inline void store_stats(__global float *mean, __global float *rstd, ulong row, float K, float m,
                        float r, uint flags)
{
    if ((flags & FLAG_MEAN) != 0)
        mean[row] = K + m;
    if ((flags & FLAG_RSTD) != 0)
        rstd[row] = r;
}
