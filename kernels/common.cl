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

/*
 * Storage and arithmetic types, chosen by -DCLNORM_DTYPE_*:
 *   T   storage of x, y (dy, dx)         A   arithmetic and accumulation (float; double for F64)
 *   P   parameters: gamma, beta, stats   AV  a vector of VW A's
 * LOADV/STOREV move VW elements of T as an AV; LOAD1/STORE1 one element. F16 goes through
 * vload_half/vstore_half_rte and BF16 through 16-bit integer bit conversion: both are core
 * OpenCL 1.2 and need no cl_khr_fp16. Stores round to nearest even; BF16 keeps NaN a NaN.
 */
#if defined(CLNORM_DTYPE_F64)
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef double T;
typedef double A;
typedef double P;
#define AVEC(n) CAT(double, n)
#elif defined(CLNORM_DTYPE_F16)
typedef half T;
typedef float A;
typedef float P;
#define AVEC(n) CAT(float, n)
#elif defined(CLNORM_DTYPE_BF16)
typedef ushort T;
typedef float A;
typedef float P;
#define AVEC(n) CAT(float, n)
#else
typedef float T;
typedef float A;
typedef float P;
#define AVEC(n) CAT(float, n)
#endif
typedef AVEC(VW) AV;
typedef CAT(ushort, VW) ushortv;
typedef CAT(uint, VW) uintv;

#if defined(CLNORM_DTYPE_F16)
#define LOADV(p) CAT(vload_half, VW)(0, (p))
#define STOREV(v, p) CAT(CAT(vstore_half, VW), _rte)((v), 0, (p))
#define LOAD1(p) vload_half(0, (p))
#define STORE1(v, p) vstore_half_rte((v), 0, (p))
#elif defined(CLNORM_DTYPE_BF16)
/* bfloat16 is the high half of a float: widening is a shift. */
inline float bf16_to_f32(ushort u) { return as_float((uint)u << 16); }
inline AV bf16_to_f32v(ushortv u) { return CAT(as_float, VW)(CAT(convert_uint, VW)(u) << 16); }
/* Round to nearest even on the dropped 16 bits; NaN becomes a quiet NaN of the same sign
 * (the rounding add could otherwise carry a NaN's payload into Inf). Overflow rounds to Inf. */
inline ushort f32_to_bf16(float f)
{
    const uint u = as_uint(f);
    if (isnan(f))
        return (ushort)((u >> 16) | 0x40u);
    return (ushort)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
inline ushortv f32_to_bf16v(AV f)
{
    const uintv u = CAT(as_uint, VW)(f);
    const uintv r = (u + (uintv)(0x7fffu) + ((u >> 16) & (uintv)(1u))) >> 16;
    const uintv q = (u >> 16) | (uintv)(0x40u);
    return CAT(convert_ushort, VW)(select(r, q, CAT(as_uint, VW)(isnan(f))));
}
#define LOADV(p) bf16_to_f32v(CAT(vload, VW)(0, (p)))
#define STOREV(v, p) CAT(vstore, VW)(f32_to_bf16v(v), 0, (p))
#define LOAD1(p) bf16_to_f32(*(p))
#define STORE1(v, p) (*(p) = f32_to_bf16(v))
#else
#define LOADV(p) CAT(vload, VW)(0, (p))
#define STOREV(v, p) CAT(vstore, VW)((v), 0, (p))
#define LOAD1(p) (*(p))
#define STORE1(v, p) (*(p) = (v))
#endif
/* Parameters (gamma, beta) are P, the same type as A: plain vector loads. */
#define LOADP(p) CAT(vload, VW)(0, (p))

/* Vectors per block before the block sum is folded into the compensated total. */
#define BLOCK_V 16

/* Flags passed to every kernel (kept in step with src/dispatch.c). */
#define FLAG_GAMMA 1u
#define FLAG_BETA 2u
#define FLAG_MEAN 4u
#define FLAG_RSTD 8u
#define FLAG_RMS 16u

/* Pairwise horizontal sum of a vector. */
inline A hsum2(AVEC(2) v) { return v.s0 + v.s1; }
inline A hsum4(AVEC(4) v) { return hsum2(v.lo + v.hi); }
inline A hsum8(AVEC(8) v) { return hsum4(v.lo + v.hi); }
inline A hsum16(AVEC(16) v) { return hsum8(v.lo + v.hi); }
#define HSUM(v) CAT(hsum, VW)(v)

/* Kahan-compensated addition: (*s, *c) is the running total and its lost low part. Once the
 * total is Inf (or NaN) compensation stops: (t - s) - y would turn an Inf total into NaN, and
 * a row holding one Inf must sum to that Inf, as it does in the reference. */
inline void kahan_add(A *s, A *c, A v)
{
    const A y = v - *c;
    const A t = *s + y;
    *c = isfinite(t) ? (t - *s) - y : (A)0;
    *s = t;
}

/*
 * Sum of (p[i] - K) over i in [b, e), for work-item lid of L. Items take vectors
 * lid, lid + L, lid + 2L, ... so neighbouring items touch neighbouring memory (coalesced on
 * GPUs; with L == 1 it is a plain vector loop). The tail after the last whole vector goes
 * element by element, also strided by L.
 */
inline A seg_sum_shift(__global const T *p, ulong b, ulong e, uint lid, uint L, A K)
{
    const ulong nv = (e - b) / VW;
    A s = 0, c = 0;
    for (ulong v0 = lid; v0 < nv; v0 += (ulong)L * BLOCK_V) {
        const ulong vend = min(nv, v0 + (ulong)L * BLOCK_V);
        /* Four independent accumulators: one would chain every add on the previous one's
         * latency (4 cycles on x86), leaving a row that sits in L1 compute-bound. */
        AV a0 = (AV)(0), a1 = (AV)(0), a2 = (AV)(0), a3 = (AV)(0);
        ulong v = v0;
        for (; v + 3 * (ulong)L < vend; v += 4 * (ulong)L) {
            a0 += LOADV(p + b + v * VW) - K;
            a1 += LOADV(p + b + (v + L) * VW) - K;
            a2 += LOADV(p + b + (v + 2 * (ulong)L) * VW) - K;
            a3 += LOADV(p + b + (v + 3 * (ulong)L) * VW) - K;
        }
        for (; v < vend; v += L)
            a0 += LOADV(p + b + v * VW) - K;
        kahan_add(&s, &c, HSUM((a0 + a1) + (a2 + a3)));
    }
    A t = 0;
    for (ulong i = b + nv * VW + lid; i < e; i += L)
        t += LOAD1(p + i) - K;
    kahan_add(&s, &c, t);
    return s;
}

/* Sum of ((p[i] - K) - m)^2 over i in [b, e); with K = m = 0 it is the sum of squares. */
inline A seg_sum_sq(__global const T *p, ulong b, ulong e, uint lid, uint L, A K, A m)
{
    const ulong nv = (e - b) / VW;
    A s = 0, c = 0;
    for (ulong v0 = lid; v0 < nv; v0 += (ulong)L * BLOCK_V) {
        const ulong vend = min(nv, v0 + (ulong)L * BLOCK_V);
        AV a0 = (AV)(0), a1 = (AV)(0), a2 = (AV)(0), a3 = (AV)(0);
        ulong v = v0;
        for (; v + 3 * (ulong)L < vend; v += 4 * (ulong)L) {
            const AV d0 = (LOADV(p + b + v * VW) - K) - m;
            const AV d1 = (LOADV(p + b + (v + L) * VW) - K) - m;
            const AV d2 = (LOADV(p + b + (v + 2 * (ulong)L) * VW) - K) - m;
            const AV d3 = (LOADV(p + b + (v + 3 * (ulong)L) * VW) - K) - m;
            a0 = fma(d0, d0, a0);
            a1 = fma(d1, d1, a1);
            a2 = fma(d2, d2, a2);
            a3 = fma(d3, d3, a3);
        }
        for (; v < vend; v += L) {
            const AV d = (LOADV(p + b + v * VW) - K) - m;
            a0 = fma(d, d, a0);
        }
        kahan_add(&s, &c, HSUM((a0 + a1) + (a2 + a3)));
    }
    A t = 0;
    for (ulong i = b + nv * VW + lid; i < e; i += L) {
        const A d = (LOAD1(p + i) - K) - m;
        t = fma(d, d, t);
    }
    kahan_add(&s, &c, t);
    return s;
}

/*
 * Streaming stores (CPU devices under PoCL, -DCLNORM_STREAM_STORES):
 * a non-temporal store writes a whole line without first reading it into the cache (the
 * read-for-ownership of a plain store), which is a third of a normalization's memory
 * traffic, and leaves the cache to x. The vector stores must be aligned to their size, so
 * the first elements up to the alignment are stored one at a time.
 */
#if defined(CLNORM_STREAM_STORES)
#define STREAM_STORE 1
/* A whole vector of results, converted to T, stored non-temporally; p aligned to the
 * vector's size (VW * sizeof(T)). */
#if defined(CLNORM_DTYPE_F16)
inline void storev_stream(AV v, __global T *p)
{
    ushortv bits; /* vstore_half into registers, then one streaming store of the bits */
    CAT(CAT(vstore_half, VW), _rte)(v, 0, (__private half *)&bits);
    __builtin_nontemporal_store(bits, (__global ushortv *)p);
}
#elif defined(CLNORM_DTYPE_BF16)
inline void storev_stream(AV v, __global T *p)
{
    __builtin_nontemporal_store(f32_to_bf16v(v), (__global ushortv *)p);
}
#else
inline void storev_stream(AV v, __global T *p)
{
    __builtin_nontemporal_store(v, (__global AV *)p);
}
#endif
#ifndef CLNORM_NO_PREFETCH
#define PREFETCH_NEXT 1
#endif
inline A apply1(__global const T *x, __global const P *gamma, __global const P *beta, ulong i,
                A K, A m, A rstd, int has_g, int has_b)
{
    A t = ((LOAD1(x + i) - K) - m) * rstd;
    if (has_g)
        t *= gamma[i];
    if (has_b)
        t += beta[i];
    return t;
}

inline void seg_apply_stream(__global const T *x, __global T *y, __global const P *gamma,
                             __global const P *beta, ulong b, ulong e, A K, A m, A rstd,
                             int has_g, int has_b, ulong next)
{
    ulong i = b;
    for (; i < e && ((ulong)(y + i) % (VW * sizeof(T))) != 0; i++)
        STORE1(apply1(x, gamma, beta, i, K, m, rstd, has_g, has_b), y + i);
    for (; i + VW <= e; i += VW) {
        AV t = ((LOADV(x + i) - K) - m) * rstd;
        if (has_g)
            t *= LOADP(gamma + i);
        if (has_b)
            t += LOADP(beta + i);
        storev_stream(t, y + i);
#ifdef PREFETCH_NEXT
        /* While this row is computed from cache, fetch the same columns of the next row the
         * work-item (or the next work-item of the group, run by the same thread) will read,
         * so memory is busy during the compute too. A prefetch never faults, so the last
         * row's look past the end is harmless. */
        if (next)
            __builtin_prefetch(x + i + next);
#endif
    }
    for (; i < e; i++)
        STORE1(apply1(x, gamma, beta, i, K, m, rstd, has_g, has_b), y + i);
}
#endif

/*
 * y[i] = ((x[i] - K) - m) * rstd * gamma[i] + beta[i] over i in [b, e) for item lid of L.
 * x and y point at the row's first element; gamma and beta at column 0 (used only when the
 * flags say so). x may equal y (in place): each element is read before it is written, by the
 * same work-item.
 */
inline void seg_apply(__global const T *x, __global T *y, __global const P *gamma,
                      __global const P *beta, ulong b, ulong e, uint lid, uint L, A K, A m,
                      A rstd, uint flags, ulong next)
{
    const ulong nv = (e - b) / VW;
    const int has_g = (flags & FLAG_GAMMA) != 0;
    const int has_b = (flags & FLAG_BETA) != 0;
#ifdef STREAM_STORE
    if (L == 1) {
        seg_apply_stream(x, y, gamma, beta, b, e, K, m, rstd, has_g, has_b, next);
        return;
    }
#endif
    for (ulong v = lid; v < nv; v += L) {
        const ulong i = b + v * VW;
        AV t = ((LOADV(x + i) - K) - m) * rstd;
        if (has_g)
            t *= LOADP(gamma + i);
        if (has_b)
            t += LOADP(beta + i);
        STOREV(t, y + i);
    }
    for (ulong i = b + nv * VW + lid; i < e; i += L) {
        A t = ((LOAD1(x + i) - K) - m) * rstd;
        if (has_g)
            t *= gamma[i];
        if (has_b)
            t += beta[i];
        STORE1(t, y + i);
    }
}

/*
 * Sum of v over the L items of a work-group, returned to every item. scratch holds L values.
 * Exact for any L, power of two or not: each step folds the upper half (rounded down) onto
 * the lower, so the middle element of an odd count waits for the next step. Fixed order, so
 * results are bit-reproducible.
 */
inline A wg_sum(A v, __local A *scratch, uint lid, uint L)
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
    const A r = scratch[0];
    barrier(CLK_LOCAL_MEM_FENCE); /* scratch may be reused right after */
    return r;
}

/* Writes the saved statistics of one row, when asked for. */
inline void store_stats(__global P *mean, __global P *rstd, ulong row, A K, A m, A r,
                        uint flags)
{
    if ((flags & FLAG_MEAN) != 0)
        mean[row] = K + m;
    if ((flags & FLAG_RSTD) != 0)
        rstd[row] = r;
}
