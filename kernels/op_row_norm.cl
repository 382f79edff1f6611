/*
 * op_row_norm.cl - the row-normalization family (LayerNorm, RMSNorm, and with
 * -DCLNORM_RESIDUAL their fused residual add, "Add & Norm"): what one row reads and writes.
 * The strategies (norm_row.cl, norm_workgroup.cl, norm_subgroup.cl, norm_split.cl,
 * norm_backward.cl) compute statistics and call these hooks, so an operation of this family
 * does not fork the strategies:
 *   row_in, IN_LOADV(in, i), IN_LOAD1(in, i)   the value a row normalizes at column i:
 *                                               x, or s = x + residual (in A, never rounded)
 *   row_out, out_storev/out_store1             y = xhat * gamma + beta, and s when written
 *   bwd_row, bwd hooks                         the backward's per-row inputs and outputs
 *
 * Per-sample modulation (CLNORM_KF_SCALE / CLNORM_KF_SHIFT, DiT's adaLN): row r belongs to
 * sample r / sample_rows, and its scale and shift rows are taken once per row, so the apply
 * y = z * (1 + scale) + shift costs two parameter loads per vector, cached across the
 * sample's rows. The backward's g = dy * (1 + scale) * gamma; its parameter partials stay
 * sums of the raw dy (see norm_backward.cl), from which norm_bwd_params forms dgamma, dbeta,
 * dscale and dshift.
 *
 * Kernel parameters: every tensor is (pointer, element offset, row stride), in the ascending
 * order of the clnorm_arg_slot values (X, Y, GAMMA, BETA, MEAN, RSTD, RESIDUAL, SUM, DY, DX,
 * DGAMMA, DBETA, DSUM, SCALE, SHIFT, DSCALE, DSHIFT); src/launch.c binds them in that order
 * from the step's slot list. Kernels that read a modulation take the op's scalar sample_rows
 * (KA_OP 0) right after their tensors; scratch buffers and scalars follow, as the step's
 * argument list in src/op/row_norm.c says. A kernel's pointers are its parameters and its
 * scalars (offsets, strides, the rest) come in one struct (common.cl, KS_PARAM): ..._PARAMS
 * below are the helpers' lists, ..._PTRS and ..._UNPACK a kernel's two halves of them.
 */

/* Rows of more than 8 KiB prefetch the next row into L2 only (row_stats.cl,
 * row_prefetch_hint). */
#define OP_ROW_PREFETCH_L2 1

/* The per-sample parameters of a row: column 0 of its sample's row of p (0 when absent). */
inline __global const P *sample_row(__global const P *p, ulong off, ulong stride, ulong row,
                                    ulong sample_rows, int given)
{
    return given ? p + off + (row / sample_rows) * stride : 0;
}
/* z * (1 + scale) + shift, as PyTorch's modulate forms it (not fma(z, scale, z), which
 * would turn z = Inf with scale 0 into NaN). */
inline AV modulate_v(AV t, __global const P *scale, __global const P *shift, ulong i,
                     const int al)
{
    if (scale)
        t *= (A)1 + LOADP_AL(scale + i, al);
    if (shift)
        t += LOADP_AL(shift + i, al);
    return t;
}
inline A modulate_1(A t, __global const P *scale, __global const P *shift, ulong i)
{
    if (scale)
        t *= (A)1 + scale[i];
    if (shift)
        t += shift[i];
    return t;
}

/* ---- the input of a row ---- */
typedef struct {
    __global const T *x;
#if defined(CLNORM_RESIDUAL)
    __global const R *r;
#endif
    int al; /* vectors from x and r are aligned (CLNORM_KF_ALIGNED, common.cl): set by the
               kernels that specialize on it, else 0 */
} row_in;

/*
 * The shift K of a row is a pair: an element of x and (with a residual) one of the residual
 * (row_shift). The value a row normalizes, v = x + residual, is only ever formed shifted and
 * scaled, as (x * sc - K.s0) + (r * sc - K.s1): each operand's large common offset cancels
 * exactly before the two are added, so the statistics and y are those of the exact sum, not
 * of the sum rounded to A (which would cost 2^-24 |v| / std in y). Without a residual K.s1 is
 * 0 and this is x * sc - K.s0, as in 0.1.
 */
#if defined(CLNORM_RESIDUAL)
#define IN_DEVV(in, i, K, sc)                                                               \
    ((LOADV_AL((in).x + (i), (in).al) * (sc) - (K).s0) +                                    \
     (LOADV_R_AL((in).r + (i), (in).al) * (sc) - (K).s1))
#define IN_DEV1(in, i, K, sc) ((LOAD1((in).x + (i)) * (sc) - (K).s0) + (LOAD1_R((in).r + (i)) * (sc) - (K).s1))
/* IN_DEV1 in W (double, or A), exact where W is double (the backward's wide rows) */
#define IN_DEV_W(in, i, K, sc)                                                              \
    (((W)LOAD1((in).x + (i)) * (W)(sc) - (W)(K).s0) +                                       \
     ((W)LOAD1_R((in).r + (i)) * (W)(sc) - (W)(K).s1))
#define IN_ABSMAXV(in, i) fmax(fabs(LOADV((in).x + (i))), fabs(LOADV_R((in).r + (i))))
#define IN_ABSMAX1(in, i) fmax(fabs(LOAD1((in).x + (i))), fabs(LOAD1_R((in).r + (i))))
#define RES_PARAM , __global const R *res, ulong res_off, ulong res_stride
#define RES_ARG , res, res_off, res_stride
#define RES_PTR , __global const R *res
#define RES_UNPACK KS_TENSOR(res);
#else
#define IN_DEVV(in, i, K, sc) (LOADV_AL((in).x + (i), (in).al) * (sc) - (K).s0)
#define IN_DEV1(in, i, K, sc) (LOAD1((in).x + (i)) * (sc) - (K).s0)
#define IN_DEV_W(in, i, K, sc) ((W)LOAD1((in).x + (i)) * (W)(sc) - (W)(K).s0)
#define IN_ABSMAXV(in, i) fabs(LOADV((in).x + (i)))
#define IN_ABSMAX1(in, i) fabs(LOAD1((in).x + (i)))
#define RES_PARAM
#define RES_ARG
#define RES_PTR
#define RES_UNPACK
#endif

/* The slots X (and RESIDUAL) of a kernel that only reads rows. */
#define IN_PARAMS __global const T *x, ulong x_off, ulong x_stride RES_PARAM
#define IN_ARGS x, x_off, x_stride RES_ARG
/* IN_PARAMS of a kernel: its pointers, and its scalars from the struct (common.cl, KS_PARAM) */
#define IN_PTRS __global const T *x RES_PTR
#define IN_UNPACK KS_TENSOR(x); RES_UNPACK

inline row_in make_row_in(IN_PARAMS, ulong row)
{
    row_in in;
    in.x = x + x_off + row * x_stride;
    in.al = 0;
#if defined(CLNORM_RESIDUAL)
    in.r = res + res_off + row * res_stride;
#endif
    return in;
}

/* The shift of a row scaled by sc: the median of its first three elements, of x and (with a
 * residual) of the residual each, in rows of CLNORM_SHIFT_MEDIAN_COLS or more, else the first
 * element (0 for RMSNorm, which has no shift). Any element of the row makes the deviations of
 * a row with a large common offset exact; the median keeps a lone outlier out of the shift,
 * where the deviations of all the other elements would lose |outlier| 2^-24 each, which
 * reaches the 1e-5 target in long rows only (flags.h; README, Numerics). The first three share
 * the first element's cache line, where the first, middle and last elements (tried first)
 * touch two more lines of a cold row before its loop starts. */
inline A2 row_shift(row_in in, ulong cols, A sc, int rms)
{
    A2 K = (A2)(0);
    if (!rms && cols >= CLNORM_SHIFT_MEDIAN_COLS) {
        K.s0 = med3(LOAD1(in.x), LOAD1(in.x + 1), LOAD1(in.x + 2)) * sc;
#if defined(CLNORM_RESIDUAL)
        K.s1 = med3(LOAD1_R(in.r), LOAD1_R(in.r + 1), LOAD1_R(in.r + 2)) * sc;
#endif
    } else if (!rms && cols > 0) {
        K.s0 = LOAD1(in.x) * sc;
#if defined(CLNORM_RESIDUAL)
        K.s1 = LOAD1_R(in.r) * sc;
#endif
    }
    return K;
}

/* ---- the forward's outputs of a row ---- */
typedef struct {
    __global T *y;
    __global const P *gamma; /* column 0; 0 when absent */
    __global const P *beta;
    __global const P *scale; /* the row's sample, column 0; 0 when absent */
    __global const P *shift;
#if defined(CLNORM_RESIDUAL)
    __global R *s; /* 0 when the sum is not written */
#endif
    int al; /* as row_in.al, for y, s and the parameter vectors */
} row_out;

/* Forward kernels: X, Y, GAMMA, BETA, MEAN, RSTD, (RESIDUAL, SUM), SCALE, SHIFT, then the
 * scalar sample_rows. */
#define MOD_PARAM                                                                           \
    , __global const P *scale, ulong scale_off, ulong scale_stride, __global const P *shift, \
        ulong shift_off, ulong shift_stride, ulong sample_rows
#define MOD_ARG , scale, scale_off, scale_stride, shift, shift_off, shift_stride, sample_rows
#define MOD_PTR , __global const P *scale, __global const P *shift
#define MOD_UNPACK KS_TENSOR(scale); KS_TENSOR(shift); KS_UL(sample_rows);
#if defined(CLNORM_RESIDUAL)
#define SUM_PARAM , __global R *sum, ulong sum_off, ulong sum_stride
#define SUM_ARG , sum, sum_off, sum_stride
#define SUM_PTR , __global R *sum
#define SUM_UNPACK KS_TENSOR(sum);
#else
#define SUM_PARAM
#define SUM_ARG
#define SUM_PTR
#define SUM_UNPACK
#endif
#define FWD_PARAMS                                                                          \
    __global const T *x, ulong x_off, ulong x_stride, __global T *y, ulong y_off,           \
        ulong y_stride, __global const P *gamma, ulong gamma_off, ulong gamma_stride,        \
        __global const P *beta, ulong beta_off, ulong beta_stride, __global P *mean,         \
        ulong mean_off, ulong mean_stride, __global P *rstd, ulong rstd_off,                 \
        ulong rstd_stride RES_PARAM SUM_PARAM MOD_PARAM
/* FWD_PARAMS of a kernel: its pointers, and its scalars from the struct */
#define FWD_PTRS                                                                            \
    __global const T *x, __global T *y, __global const P *gamma, __global const P *beta,    \
        __global P *mean, __global P *rstd RES_PTR SUM_PTR MOD_PTR
#define FWD_UNPACK                                                                          \
    KS_TENSOR(x); KS_TENSOR(y); KS_TENSOR(gamma); KS_TENSOR(beta); KS_TENSOR(mean);        \
    KS_TENSOR(rstd); RES_UNPACK SUM_UNPACK MOD_UNPACK
/* The arguments of FWD_PARAMS, to pass them on. */
#define FWD_ARGS                                                                            \
    x, x_off, x_stride, y, y_off, y_stride, gamma, gamma_off, gamma_stride, beta, beta_off, \
        beta_stride, mean, mean_off, mean_stride, rstd, rstd_off, rstd_stride RES_ARG SUM_ARG MOD_ARG
#define FWD_OUT_PARAMS                                                                      \
    __global T *y, ulong y_off, ulong y_stride, __global const P *gamma, ulong gamma_off,    \
        __global const P *beta, ulong beta_off SUM_PARAM MOD_PARAM
#define FWD_OUT_ARGS y, y_off, y_stride, gamma, gamma_off, beta, beta_off SUM_ARG MOD_ARG
/* mean and rstd from column 0 (0 when not written) */
#define FWD_MEAN ((flags & CLNORM_KF_MEAN) ? mean + mean_off : 0)
#define FWD_RSTD ((flags & CLNORM_KF_RSTD) ? rstd + rstd_off : 0)

inline row_out make_row_out(FWD_OUT_PARAMS, ulong row, uint flags)
{
    row_out out;
    out.y = y + y_off + row * y_stride;
    out.al = 0;
    out.gamma = (flags & CLNORM_KF_GAMMA) ? gamma + gamma_off : 0;
    out.beta = (flags & CLNORM_KF_BETA) ? beta + beta_off : 0;
    out.scale = sample_row(scale, scale_off, scale_stride, row, sample_rows,
                           (flags & CLNORM_KF_SCALE) != 0);
    out.shift = sample_row(shift, shift_off, shift_stride, row, sample_rows,
                           (flags & CLNORM_KF_SHIFT) != 0);
#if defined(CLNORM_RESIDUAL)
    out.s = (flags & CLNORM_KF_SUM) ? sum + sum_off + row * sum_stride : 0;
#endif
    return out;
}

/* y from the deviation d = v * sc - K of column i (or of the VW columns from i):
 * (d - m) * r * gamma + beta, modulated. */
inline AV out_yv(row_out out, ulong i, AV d, A m, A r)
{
    AV t = (d - m) * r;
    if (out.gamma)
        t *= LOADP_AL(out.gamma + i, out.al);
    if (out.beta)
        t += LOADP_AL(out.beta + i, out.al);
    return modulate_v(t, out.scale, out.shift, i, out.al);
}
inline A out_y1(row_out out, ulong i, A d, A m, A r)
{
    A t = (d - m) * r;
    if (out.gamma)
        t *= out.gamma[i];
    if (out.beta)
        t += out.beta[i];
    return modulate_1(t, out.scale, out.shift, i);
}

/* The sum output of column i: x + residual, from the inputs (rounded once, to R). */
inline void out_sumv(row_out out, row_in in, ulong i)
{
#if defined(CLNORM_RESIDUAL)
    if (out.s)
        STOREV_R(LOADV(in.x + i) + LOADV_R(in.r + i), out.s + i);
#endif
}
inline void out_sum1(row_out out, row_in in, ulong i)
{
#if defined(CLNORM_RESIDUAL)
    if (out.s)
        STORE1_R(LOAD1(in.x + i) + LOAD1_R(in.r + i), out.s + i);
#endif
}

#if defined(STREAM_STORE)
/* The sum output of the VW columns from i, streamed (stream != 0: out.s + i is aligned to the
 * vector's size, which holds for every i of a loop stepping by VW once it holds for its
 * first) or stored plainly. Never streamed for a float16 sum: with the streaming float16
 * store (vstore_half into registers, then one non-temporal store) in the same function,
 * PoCL's compiler emitted the plain vstore_half of an unaligned sum as an aligned store,
 * which faulted (clnorm 0.2.0 development, PoCL 3.1 / LLVM 15). */
inline void out_sumv_stream(row_out out, row_in in, ulong i, const int stream)
{
#if defined(CLNORM_RESIDUAL)
    const AV v = LOADV(in.x + i) + LOADV_R(in.r + i);
    if (stream)
        storev_stream_r(v, out.s + i);
    else
        STOREV_R(v, out.s + i);
#endif
}
#endif

/* Everything a row writes at column i, given its statistics; out_putv from the VW elements'
 * deviations d, already loaded (row_stats.cl's seg_apply loads two vectors' before it stores
 * either). In place (y is x, s is the residual) is safe: every element is read by the
 * work-item that writes it, before it writes it (the sum is formed before y is stored over
 * x). */
inline void out_putv(row_out out, row_in in, ulong i, AV d, A m, A r)
{
    out_sumv(out, in, i);
    STOREV(out_yv(out, i, d, m, r), out.y + i);
}
inline void out_applyv(row_out out, row_in in, ulong i, A2 K, A m, A r, A sc)
{
    out_putv(out, in, i, IN_DEVV(in, i, K, sc), m, r);
}
inline void out_apply1(row_out out, row_in in, ulong i, A2 K, A m, A r, A sc)
{
    const A d = IN_DEV1(in, i, K, sc);
    out_sum1(out, in, i);
    STORE1(out_y1(out, i, d, m, r), out.y + i);
}

/* ---- the backward of a row ---- */
/* Backward kernels: X, GAMMA, MEAN, RSTD, (RESIDUAL), DY, DX, (DSUM), SCALE, then the scalar
 * sample_rows. BWD_IN_PTRS: the kernels that write no dx. */
#if defined(CLNORM_RESIDUAL)
#define DSUM_PARAM , __global const R *dsum, ulong dsum_off, ulong dsum_stride
#define DSUM_ARG , dsum, dsum_off, dsum_stride
#define DSUM_PTR , __global const R *dsum
#define DSUM_UNPACK KS_TENSOR(dsum);
#else
#define DSUM_PARAM
#define DSUM_ARG
#define DSUM_PTR
#define DSUM_UNPACK
#endif
/* A backward kernel's tensors: its pointers (..._PTRS), and their offsets and strides with
 * sample_rows from its scalar struct (..._UNPACK; common.cl, KS_PARAM). */
#define BWD_READ_PTRS                                                                       \
    __global const T *x, __global const P *gamma, __global const P *mean,                   \
        __global const P *rstd RES_PTR, __global const T *dy
#define BWD_READ_UNPACK                                                                     \
    KS_TENSOR(x); KS_TENSOR(gamma); KS_TENSOR(mean); KS_TENSOR(rstd); RES_UNPACK            \
    KS_TENSOR(dy);
#define BWD_SCALE_PTR , __global const P *scale
#define BWD_SCALE_UNPACK KS_TENSOR(scale); KS_UL(sample_rows);
#define BWD_IN_PTRS BWD_READ_PTRS BWD_SCALE_PTR
#define BWD_IN_UNPACK BWD_READ_UNPACK BWD_SCALE_UNPACK
/* norm_bwd_rows' tensors: dgamma and dbeta are written there only with
 * CLNORM_KF_PARAMS_DIRECT (else by norm_bwd_params). */
#define BWD_PTRS                                                                            \
    BWD_READ_PTRS, __global T *dx, __global P *dgamma, __global P *dbeta DSUM_PTR           \
        BWD_SCALE_PTR
#define BWD_UNPACK                                                                          \
    BWD_READ_UNPACK KS_TENSOR(dx); KS_TENSOR(dgamma); KS_TENSOR(dbeta); DSUM_UNPACK         \
    BWD_SCALE_UNPACK

typedef struct {
    row_in in;
    __global const T *dy;
    __global const P *gamma; /* column 0; 0 when absent */
    __global const P *scale; /* the row's sample, column 0; 0 when absent */
    __global T *dx;          /* 0 when not written */
#if defined(CLNORM_RESIDUAL)
    __global const R *ds; /* 0 when not given */
#endif
} bwd_row;

inline bwd_row make_bwd_row(IN_PARAMS, __global const P *gamma, ulong gamma_off,
                            __global const T *dy, ulong dy_off, ulong dy_stride,
                            __global const P *scale, ulong scale_off, ulong scale_stride,
                            ulong sample_rows, ulong row, uint flags)
{
    bwd_row b;
    b.in = make_row_in(IN_ARGS, row);
    b.dy = dy + dy_off + row * dy_stride;
    b.gamma = (flags & CLNORM_KF_GAMMA) ? gamma + gamma_off : 0;
    b.scale = sample_row(scale, scale_off, scale_stride, row, sample_rows,
                         (flags & CLNORM_KF_SCALE) != 0);
    b.dx = 0;
#if defined(CLNORM_RESIDUAL)
    b.ds = 0;
#endif
    return b;
}
/* The row's inputs, in a kernel with BWD_IN_PTRS */
#define BWD_ROW_IN(row, flags)                                                              \
    make_bwd_row(IN_ARGS, gamma, gamma_off, dy, dy_off, dy_stride, scale, scale_off,         \
                 scale_stride, sample_rows, row, flags)
/* ... and its outputs too, in a kernel with BWD_PTRS */
inline bwd_row bwd_row_outputs(bwd_row b, __global T *dx, ulong dx_off, ulong dx_stride
                               DSUM_PARAM, ulong row, uint flags)
{
    if ((flags & CLNORM_KF_GRAD_X) != 0)
        b.dx = dx + dx_off + row * dx_stride;
#if defined(CLNORM_RESIDUAL)
    if ((flags & CLNORM_KF_DSUM) != 0)
        b.ds = dsum + dsum_off + row * dsum_stride;
#endif
    return b;
}
#define BWD_ROW(row, flags)                                                                 \
    bwd_row_outputs(BWD_ROW_IN(row, flags), dx, dx_off, dx_stride DSUM_ARG, row, flags)

/* g = dy * (1 + scale) * gamma: the gradient of xhat */
inline AV bwd_gv(bwd_row b, ulong i, AV dyv)
{
    const AV dz = modulate_v(dyv, b.scale, 0, i, 0);
    return b.gamma ? dz * LOADP(b.gamma + i) : dz;
}
inline A bwd_g1(bwd_row b, ulong i, A dyv)
{
    const A dz = modulate_1(dyv, b.scale, 0, i);
    return b.gamma ? dz * b.gamma[i] : dz;
}
/* bwd_g1 in W, exact where W is double: the backward's wide rows (norm_backward.cl) */
inline W bwd_g_w(bwd_row b, ulong i, A dyv)
{
    W dz = dyv;
    if (b.scale)
        dz *= (W)1 + (W)b.scale[i];
    return b.gamma ? dz * (W)b.gamma[i] : dz;
}
/* bwd_dx1 in W, rounded once (the wide rows) */
inline A bwd_dx_w(bwd_row b, ulong i, W g, W xh, W rs, W mg, W mgx)
{
    W d = rs * ((g - mg) - xh * mgx);
#if defined(CLNORM_RESIDUAL)
    if (b.ds)
        d += (W)LOAD1_R(b.ds + i);
#endif
    return (A)d;
}
#if W_DOUBLE
/* The same in vectors of double (WV, common.cl; one-item work-groups, CPU devices:
 * norm_backward.cl) */
#if defined(CLNORM_RESIDUAL)
#define IN_DEV_WV(in, i, K, sc)                                                             \
    ((TO_WV(LOADV((in).x + (i))) * (WV)(sc) - (WV)((K).s0)) +                            \
     (TO_WV(LOADV_R((in).r + (i))) * (WV)(sc) - (WV)((K).s1)))
#else
#define IN_DEV_WV(in, i, K, sc) (TO_WV(LOADV((in).x + (i))) * (WV)(sc) - (WV)((K).s0))
#endif
inline WV bwd_g_wv(bwd_row b, ulong i, AV dyv)
{
    WV dz = TO_WV(dyv);
    if (b.scale)
        dz *= (WV)(1) + TO_WV(LOADP(b.scale + i));
    return b.gamma ? dz * TO_WV(LOADP(b.gamma + i)) : dz;
}
inline AV bwd_dx_wv(bwd_row b, ulong i, WV g, WV xh, W rs, W mg, W mgx)
{
    WV d = (WV)(rs) * ((g - (WV)(mg)) - xh * (WV)(mgx));
#if defined(CLNORM_RESIDUAL)
    if (b.ds)
        d += TO_WV(LOADV_R(b.ds + i));
#endif
    return FROM_WV(d);
}
#endif
/* dx = rstd * ((g - mean(g)) - xhat * mean(g * xhat)) (+ dsum) */
inline AV bwd_dxv(bwd_row b, ulong i, AV g, AV xh, A rs, A mg, A mgx)
{
    AV d = rs * ((g - mg) - xh * mgx);
#if defined(CLNORM_RESIDUAL)
    if (b.ds)
        d += LOADV_R(b.ds + i);
#endif
    return d;
}
inline A bwd_dx1(bwd_row b, ulong i, A g, A xh, A rs, A mg, A mgx)
{
    A d = rs * ((g - mg) - xh * mgx);
#if defined(CLNORM_RESIDUAL)
    if (b.ds)
        d += LOAD1_R(b.ds + i);
#endif
    return d;
}
