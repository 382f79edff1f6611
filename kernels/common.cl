/*
 * common.cl - types, storage formats and reductions shared by every kernel. OpenCL C 1.2.
 * Programs are put together by src/program.c as: src/flags.h, this file, the operation's file
 * (op_*.cl: what a row reads and writes), row_stats.cl, then a strategy's file.
 *
 * Build options set by src/policy.c:
 *   -DVW=2|4|8|16           vector width of the per-work-item loops (16 on CPUs, 4 on GPUs)
 *   -DCLNORM_X_FMT=F32|F16|BF16|F64 and -DCLNORM_X_<fmt>   storage of x, y, dy, dx
 *   -DCLNORM_R_FMT=...      storage of residual, sum, dsum (operations with a residual)
 *   -DCLNORM_F64            arithmetic in double (F64 storage)
 *   -DCLNORM_STREAM_STORES  PoCL CPU devices: non-temporal stores of y and dx
 *
 * Numerics (README, "Numerics"): every row is shifted by K, the median of its first three
 * elements (op_*.cl, row_shift; an element of the row, but never a lone outlier; short rows
 * their first, flags.h CLNORM_SHIFT_MEDIAN_COLS), statistics are
 * taken two-pass over (x - K): m = mean(x - K), var = mean(((x - K) - m)^2), and the output is
 * ((x - K) - m) * rstd. Never x - (K + m): K + m rounds at |K| * 2^-24. Sums run in vector
 * lanes over blocks of BLOCK_V vectors, and the block sums are added with Kahan compensation,
 * so a 1,048,576-element row loses no more than a 256-element one. A row whose squares
 * overflow (|x| above about 1e19 in float) is normalized again scaled by a power of two:
 * every value carries a scale sc (1 on the normal path), xhat = ((x * sc - K) - m) * r.
 * No -cl-fast-relaxed-math: NaN and Inf must stay inside their own row.
 */
#ifndef VW
#define VW 16
#endif
#ifndef CLNORM_X_FMT
#define CLNORM_X_FMT F32
#define CLNORM_X_F32 1
#endif

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

/* Unroll the next loop fully. Loops over a row's registers (REG_VECS) need it: PoCL leaves a
 * loop of four vectors rolled, which puts the array the loop indexes on the stack, per
 * work-item, and 262144 x 64 ran at 0.8x oneDNN's speed for it (bench/RESULTS.md). A
 * compiler that does not know the pragma ignores it (C99 6.10.6). */
#define UNROLL _Pragma("unroll")

/* Inlining where it is a choice of speed, not of results: Clang's attributes (PoCL, and
 * the LLVM-based GPU compilers), nothing elsewhere. */
#if defined(__clang__)
#define ALWAYS_INLINE __attribute__((always_inline))
#define NOINLINE __attribute__((noinline))
#else
#define ALWAYS_INLINE
#define NOINLINE
#endif

/* A: arithmetic and accumulation; P: parameters (gamma, beta, mean, rstd and gradients). */
#if defined(CLNORM_F64)
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef double A;
typedef double P;
#define AVEC(n) CAT(double, n)
#else
typedef float A;
typedef float P;
#define AVEC(n) CAT(float, n)
#endif
typedef AVEC(VW) AV;
typedef AVEC(2) A2; /* a row's shift: (K of x, K of the residual) */
typedef CAT(ushort, VW) ushortv;
typedef CAT(uint, VW) uintv;

/* W: double where the device has it (cl_khr_fp64) and A is not double already (W_DOUBLE),
 * else A. GroupNorm's backward sums and its SiLU's dz of large rstd * |gamma| take it
 * (group_backward.cl), and rstd_rounded. */
#if !defined(CLNORM_F64) && defined(cl_khr_fp64) && !defined(CLNORM_NO_FP64)
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define W_DOUBLE 1
typedef double W;
#else
#define W_DOUBLE 0
typedef A W;
#endif
#if W_DOUBLE
/* W's vector, for the CPU devices' loops in double (GroupNorm's backward, group_backward.cl;
 * the row backward's wide rows, norm_backward.cl), its conversions from and to AV, and its
 * horizontal sum, pairwise (as HSUM). */
typedef CAT(double, VW) WV;
#define TO_WV CAT(convert_double, VW)
#define FROM_WV CAT(convert_float, VW)
inline W whsum2(double2 v) { return v.s0 + v.s1; }
inline W whsum4(double4 v) { return whsum2(v.lo + v.hi); }
inline W whsum8(double8 v) { return whsum4(v.lo + v.hi); }
inline W whsum16(double16 v) { return whsum8(v.lo + v.hi); }
#define WV_HSUM(v) CAT(whsum, VW)(v)
#else /* W is A: its vector AV, no conversions */
typedef AV WV;
#define TO_WV(v) (v)
#define FROM_WV(v) (v)
#endif

/* 1 / sqrt(var + eps) rounded once from W where that is double (else rsqrt), for GroupNorm's
 * statistics (op_group_norm.cl says why; the row kinds keep rsqrt). */
#if W_DOUBLE
inline A rstd_rounded(A var, A eps) { return (A)((W)1 / sqrt((W)var + (W)eps)); }
#else
inline A rstd_rounded(A var, A eps) { return rsqrt(var + eps); }
#endif

/*
 * A kernel's scalars: one struct, its last parameter (src/flags.h, CLNORM_KS_MAX; bound by
 * src/launch.c). It holds each tensor's offset and row stride in slot order, then the step's
 * own scalars in the order of its argument list. A kernel opens with KS_BEGIN and takes them
 * back, in that order, as named constants: an op's ..._UNPACK macro for its tensors (the
 * counterpart of its ..._PTRS), then KS_UL / KS_UI / KS_A for the rest.
 */
typedef struct {
    ulong v[CLNORM_KS_MAX];
} clnorm_ks;
#define KS_PARAM const clnorm_ks ks
#define KS_BEGIN uint ks_n = 0
#define KS_UL(name) const ulong name = ks.v[ks_n++]
#define KS_UI(name) const uint name = (uint)ks.v[ks_n++]
#if defined(CLNORM_F64)
#define KS_A(name) const A name = as_double(ks.v[ks_n++])
#else
#define KS_A(name) const A name = as_float((uint)ks.v[ks_n++])
#endif
/* A tensor's offset and stride, named as its pointer: x_off, x_stride. */
#define KS_TENSOR(t) KS_UL(t##_off); KS_UL(t##_stride)
/* The scalars after the tensors of the kernels that take a whole row (the forward's row,
 * work-group and subgroup strategies, the backward's statistics) */
#define KS_ROW_SCALARS KS_UL(rows); KS_UL(cols); KS_A(eps); KS_UI(flags)

/*
 * Storage formats. Each moves VW elements as an AV (LOADV_/STOREV_) or one as an A (LOAD1_/
 * STORE1_). F16 goes through vload_half/vstore_half_rte and BF16 through 16-bit integer bit
 * conversion: both are core OpenCL 1.2 and need no cl_khr_fp16. Stores round to nearest
 * even; BF16 keeps NaN a NaN.
 */
#define STYPE_F32 float
#define STYPE_F64 double
#define STYPE_F16 half
#define STYPE_BF16 ushort

/*
 * A vector aligned to its element (Av_e), a Clang extension: it says what vloadn says, but
 * PoCL's vloadn is not always merged into one load by LLVM, and this is one unaligned vector
 * access. The values are the same; only the instructions differ. Defined where the compiler
 * is Clang, PoCL's CPU device (CLNORM_STREAM_STORES or CLNORM_ELEM_LOADS, src/policy.c).
 * CLNORM_ELEM_LOADS (rows of at most 8 KiB) reads float and double row vectors through it;
 * GroupNorm's CPU loops use it under CLNORM_STREAM_STORES (op_group_norm.cl, GN_LDV).
 */
#if defined(CLNORM_ELEM_LOADS) || defined(CLNORM_STREAM_STORES)
typedef A Av_e __attribute__((ext_vector_type(VW), aligned(sizeof(A))));
#endif
#if defined(CLNORM_ELEM_LOADS)
typedef float floatv_e __attribute__((ext_vector_type(VW), aligned(4)));
#define LOADV_F32(p) (*(__global const floatv_e *)(p))
#define LOADV_F64(p) (*(__global const Av_e *)(p))
#else
#define LOADV_F32(p) CAT(vload, VW)(0, (p))
#define LOADV_F64(p) CAT(vload, VW)(0, (p))
#endif
#define STOREV_F32(v, p) CAT(vstore, VW)((v), 0, (p))
#define LOAD1_F32(p) (*(p))
#define STORE1_F32(v, p) (*(p) = (v))
#define STOREV_F64(v, p) CAT(vstore, VW)((v), 0, (p))
#define LOAD1_F64(p) (*(p))
#define STORE1_F64(v, p) (*(p) = (v))
#define LOADV_F16(p) CAT(vload_half, VW)(0, (p))
#define STOREV_F16(v, p) CAT(CAT(vstore_half, VW), _rte)((v), 0, (p))
#define LOAD1_F16(p) vload_half(0, (p))
#define STORE1_F16(v, p) vstore_half_rte((v), 0, (p))

#if !defined(CLNORM_F64)
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
#define LOADV_BF16(p) bf16_to_f32v(CAT(vload, VW)(0, (p)))
#define STOREV_BF16(v, p) CAT(vstore, VW)(f32_to_bf16v(v), 0, (p))
#define LOAD1_BF16(p) bf16_to_f32(*(p))
#define STORE1_BF16(v, p) (*(p) = f32_to_bf16(v))
#endif

/* T: storage of the row tensors; R: of the residual and the sum, when the operation has one. */
typedef CAT(STYPE_, CLNORM_X_FMT) T;
#define LOADV(p) CAT(LOADV_, CLNORM_X_FMT)(p)
#define STOREV(v, p) CAT(STOREV_, CLNORM_X_FMT)(v, p)
#define LOAD1(p) CAT(LOAD1_, CLNORM_X_FMT)(p)
#define STORE1(v, p) CAT(STORE1_, CLNORM_X_FMT)(v, p)
#if defined(CLNORM_R_FMT)
typedef CAT(STYPE_, CLNORM_R_FMT) R;
#define LOADV_R(p) CAT(LOADV_, CLNORM_R_FMT)(p)
#define STOREV_R(v, p) CAT(STOREV_, CLNORM_R_FMT)(v, p)
#define LOAD1_R(p) CAT(LOAD1_, CLNORM_R_FMT)(p)
#define STORE1_R(v, p) CAT(STORE1_, CLNORM_R_FMT)(v, p)
#endif
/* Parameters are P, the same type as A: plain vector loads. */
#if defined(CLNORM_ELEM_LOADS)
#define LOADP(p) (*(__global const Av_e *)(p))
#else
#define LOADP(p) CAT(vload, VW)(0, (p))
#endif

/*
 * Aligned vector access, for pointers known to sit on a multiple of the vector's size (the
 * run-time flag CLNORM_KF_ALIGNED; src/execute.c sets it when every row and parameter vector
 * does). vloadn only assumes the element's alignment, and NVIDIA's compiler then loads a
 * float4 as four scalars; a vector-typed access is one 16-byte load. Measured on an H100
 * (bench/RESULTS.md): 10-20% of the subgroup kernel's time. ..._AL(p, al) takes the aligned
 * form when al, a constant wherever a kernel specializes on the flag.
 */
#define LOADA_F32(p) (*(__global const AV *)(p))
#define STOREA_F32(v, p) (*(__global AV *)(p) = (v))
#define LOADA_F64(p) (*(__global const AV *)(p))
#define STOREA_F64(v, p) (*(__global AV *)(p) = (v))
#define LOADA_F16(p) CAT(vloada_half, VW)(0, (p))
#define STOREA_F16(v, p) CAT(CAT(vstorea_half, VW), _rte)((v), 0, (p))
#if !defined(CLNORM_F64)
#define LOADA_BF16(p) bf16_to_f32v(*(__global const ushortv *)(p))
#define STOREA_BF16(v, p) (*(__global ushortv *)(p) = f32_to_bf16v(v))
#endif
#define LOADV_AL(p, al) ((al) ? CAT(LOADA_, CLNORM_X_FMT)(p) : LOADV(p))
#define STOREV_AL(v, p, al)                                                                 \
    do {                                                                                    \
        if (al)                                                                             \
            CAT(STOREA_, CLNORM_X_FMT)(v, p);                                               \
        else                                                                                \
            STOREV(v, p);                                                                   \
    } while (0)
#if defined(CLNORM_R_FMT)
#define LOADV_R_AL(p, al) ((al) ? CAT(LOADA_, CLNORM_R_FMT)(p) : LOADV_R(p))
#define STOREV_R_AL(v, p, al)                                                               \
    do {                                                                                    \
        if (al)                                                                             \
            CAT(STOREA_, CLNORM_R_FMT)(v, p);                                               \
        else                                                                                \
            STOREV_R(v, p);                                                                 \
    } while (0)
#endif
#define LOADP_AL(p, al) ((al) ? *(__global const AV *)(p) : LOADP(p))

/* Vectors per block before the block sum is folded into the compensated total. */
#define BLOCK_V 16

/* Pairwise horizontal sum and maximum of a vector. */
inline A hsum2(AVEC(2) v) { return v.s0 + v.s1; }
inline A hsum4(AVEC(4) v) { return hsum2(v.lo + v.hi); }
inline A hsum8(AVEC(8) v) { return hsum4(v.lo + v.hi); }
inline A hsum16(AVEC(16) v) { return hsum8(v.lo + v.hi); }
#define HSUM(v) CAT(hsum, VW)(v)
inline A hmax2(AVEC(2) v) { return fmax(v.s0, v.s1); }
inline A hmax4(AVEC(4) v) { return hmax2(fmax(v.lo, v.hi)); }
inline A hmax8(AVEC(8) v) { return hmax4(fmax(v.lo, v.hi)); }
inline A hmax16(AVEC(16) v) { return hmax8(fmax(v.lo, v.hi)); }
#define HMAX(v) CAT(hmax, VW)(v)

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

/* kahan_add in lanes, the same operations per lane (the parameter gradients of CPU devices,
 * VW neighbouring columns or channels per work-item; GroupNorm's backward sums in vectors): a
 * lane whose sum is no longer finite drops its compensation. */
inline void kahan_addv(AV *s, AV *c, AV v)
{
    const AV y = v - *c;
    const AV t = *s + y;
    *c = select((AV)0, (t - *s) - y, isfinite(t));
    *s = t;
}

/* A running sum in W (the backward's parameter sums: norm_backward.cl, group_backward.cl):
 * plain where W is double, each term then exact or 2^-53 off and nothing left for a
 * compensation to catch (c unused); Kahan-compensated where W is A. */
#if W_DOUBLE
inline void w_add(W *s, W *c, W v) { *s += v; }
inline void w_addv(WV *s, WV *c, WV v) { *s += v; }
#else
#define w_add kahan_add
#define w_addv kahan_addv
#endif

/*
 * Sum (or maximum) of v over the L items of a work-group, returned to every item. scratch
 * holds L values. Exact for any L, power of two or not: each step folds the upper half
 * (rounded down) onto the lower, so the middle element of an odd count waits for the next
 * step. Fixed order, so results are bit-reproducible.
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

#if W_DOUBLE
/* wg_sum of a W that is double, its bits held in two local arrays of L floats' size (the
 * low and the high words): the same order of additions, each in double. GroupNorm's backward
 * (group_backward.cl, op_group_norm.cl) and the row backward (norm_backward.cl). */
inline W wg_sum_w(W v, __local A *lo, __local A *hi, uint lid, uint L)
{
    if (L == 1)
        return v;
    __local uint *l = (__local uint *)lo, *h = (__local uint *)hi;
    uint2 u = as_uint2(v);
    l[lid] = u.s0;
    h[lid] = u.s1;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint n = L; n > 1;) {
        const uint k = (n + 1) / 2;
        if (lid < n / 2) {
            u = as_uint2(as_double((uint2)(l[lid], h[lid])) +
                         as_double((uint2)(l[lid + k], h[lid + k])));
            l[lid] = u.s0;
            h[lid] = u.s1;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        n = k;
    }
    const W r = as_double((uint2)(l[0], h[0]));
    barrier(CLK_LOCAL_MEM_FENCE); /* the arrays may be reused right after */
    return r;
}
#endif

/* NaN wins (fmax would drop it): the rescaled path must see a NaN row as not finite. */
/* The median of three values (a row's shift, op_*.cl row_shift): one of them exactly; fmin and
 * fmax pass over a NaN, so two finite values give a finite one. */
inline A med3(A a, A b, A c) { return fmax(fmin(a, b), fmin(fmax(a, b), c)); }
/* Saved statistics whose mean's rounding reaches xhat: |mean| * rstd above
 * CLNORM_SAVED_MEAN_SPAN (flags.h), which the backward kernels correct (norm_backward.cl
 * bwd_refines, group_backward.cl gn_refine_group, group_backward_small.cl); NaN: no. */
inline int saved_mean_off(A mean, A rstd)
{
    return fabs(mean) * fabs(rstd) > (A)CLNORM_SAVED_MEAN_SPAN;
}
inline A max_nan(A a, A b) { return isnan(a) ? a : isnan(b) ? b : fmax(a, b); }

inline A wg_max(A v, __local A *scratch, uint lid, uint L)
{
    if (L == 1)
        return v;
    scratch[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint n = L; n > 1;) {
        const uint h = (n + 1) / 2;
        if (lid < n / 2)
            scratch[lid] = max_nan(scratch[lid], scratch[lid + h]);
        barrier(CLK_LOCAL_MEM_FENCE);
        n = h;
    }
    const A r = scratch[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
}

/* The power of two that brings a row's largest magnitude M into [1, 2): exact scaling, so the
 * scaled statistics are the true ones times sc (and sc^2). 1 when M is 0, Inf or NaN (an Inf
 * or NaN in the row: its NaN result stands). */
inline A rescale_factor(A M) { return (isfinite(M) && M > (A)0) ? ldexp((A)1, -ilogb(M)) : (A)1; }

/* The normal path's result is kept unless the statistics overflowed although the row is
 * finite (its largest magnitude M finite): then the row is redone scaled by sc. */
inline int needs_rescale(A var) { return !isfinite(var); }

/*
 * Streaming stores (CPU devices under PoCL, -DCLNORM_STREAM_STORES): a non-temporal store
 * writes a whole line without first reading it into the cache (the read-for-ownership of a
 * plain store), which is a third of a normalization's memory traffic, and leaves the cache to
 * x. The vector stores must be aligned to their size, so the first elements up to the
 * alignment are stored one at a time. Only T outputs (y, dx) stream.
 */
#if defined(CLNORM_STREAM_STORES)
#define STREAM_STORE 1
/* A whole vector of results, converted to the format, stored non-temporally; p aligned to
 * the vector's size. One per format that x/y or the residual/sum use. */
#if defined(CLNORM_X_F16) || defined(CLNORM_R_F16)
inline void streamv_f16(AV v, __global half *p)
{
    ushortv bits; /* vstore_half into registers, then one streaming store of the bits */
    CAT(CAT(vstore_half, VW), _rte)(v, 0, (__private half *)&bits);
    __builtin_nontemporal_store(bits, (__global ushortv *)p);
}
#endif
#if defined(CLNORM_X_BF16) || defined(CLNORM_R_BF16)
inline void streamv_bf16(AV v, __global ushort *p)
{
    __builtin_nontemporal_store(f32_to_bf16v(v), (__global ushortv *)p);
}
#endif
#if defined(CLNORM_X_F32) || defined(CLNORM_R_F32)
inline void streamv_f32(AV v, __global float *p) { __builtin_nontemporal_store(v, (__global AV *)p); }
#endif
#if defined(CLNORM_X_F64)
inline void streamv_f64(AV v, __global double *p) { __builtin_nontemporal_store(v, (__global AV *)p); }
#endif
#define STREAMV_F16 streamv_f16
#define STREAMV_BF16 streamv_bf16
#define STREAMV_F32 streamv_f32
#define STREAMV_F64 streamv_f64
inline void storev_stream(AV v, __global T *p) { CAT(STREAMV_, CLNORM_X_FMT)(v, p); }
#if defined(CLNORM_R_FMT)
inline void storev_stream_r(AV v, __global R *p) { CAT(STREAMV_, CLNORM_R_FMT)(v, p); }
#endif
#ifndef CLNORM_NO_PREFETCH
#define PREFETCH_NEXT 1
#endif
/* The loops' prefetches bring lines into L2 only (x86 prefetcht1), not L1: what a loop keeps
 * in L1 (GroupNorm NHWC: the shifts, a staged row, the running means and M2, 20 KiB at
 * C = 1280; a row's second pass) stays there. A loop of the NHWC moments' shape on one core
 * read 6-10 GB/s from memory with L1 prefetches 8 KiB ahead and 18-20 with L2 ones, against
 * 21 for a plain sum (bench/RESULTS.md). A prefetch never faults, past the end included. */
#define PREFETCH_L2(p) __builtin_prefetch((p), 0, 2)
#endif

/* Writes the saved statistics of one row, when asked for: mean = (K + m) / sc and
 * rstd = r * sc undo the rescaling (exact: sc is a power of two). */
inline void store_stats(__global P *mean, __global P *rstd, ulong row, A2 K, A m, A r, A sc,
                        uint flags)
{
    if ((flags & CLNORM_KF_MEAN) != 0)
        mean[row] = ((K.s0 + K.s1) + m) / sc;
    if ((flags & CLNORM_KF_RSTD) != 0)
        rstd[row] = r * sc;
}
