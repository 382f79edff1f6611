/*
 * op_group_norm.cl - GroupNorm: what one group row reads and writes, as the hooks the row
 * strategies call (the same interface as op_row_norm.cl, which README "Adding an operation"
 * describes), plus what GroupNorm's own kernels (group_nhwc.cl, group_backward.cl) share.
 *
 * The kernels see N x G rows, row = n * G + g, of (C/G) x spatial elements. In NCHW a group
 * row is contiguous: it starts at n * x_stride + g * (C/G) * spatial, and column i of it is
 * channel g * C/G + i / spatial. Every kernel takes the op's scalars (G, C/G, spatial) right
 * after its tensors' offsets and strides (src/op/group_norm.c binds them as KA_OP 0, 1, 2),
 * all in its scalar struct (common.cl, KS_PARAM; GN_UNPACK).
 */
#define GN_PARAMS , ulong gn_groups, ulong gn_cpg, ulong gn_hw, ulong gn_srows
#define GN_ARGS , gn_groups, gn_cpg, gn_hw, gn_srows
/* GN_PARAMS taken back from a kernel's scalar struct (common.cl, KS_PARAM); gn_srows is the
 * batch entries per modulation sample (N / desc.samples; KA_OP 3) */
#define GN_UNPACK KS_UL(gn_groups); KS_UL(gn_cpg); KS_UL(gn_hw); KS_UL(gn_srows);

/* The per-sample modulation (CLNORM_KF_SCALE / CLNORM_KF_SHIFT, a diffusion UNet's
 * scale-shift norm): u = z * (1 + scale[b, c]) + shift[b, c], z = xhat * gamma_c + beta_c,
 * batch entry n in sample b = n / gn_srows; the SiLU, when asked for, is of u. The SCALE and
 * SHIFT slots come after every other tensor a kernel takes (slot order, src/launch.c). */
#define GN_MOD_PARAMS                                                                       \
    , __global const P *scale, ulong scale_off, ulong scale_stride, __global const P *shift, \
        ulong shift_off, ulong shift_stride
#define GN_MOD_ARGS , scale, scale_off, scale_stride, shift, shift_off, shift_stride
#define GN_MOD_PTRS , __global const P *scale, __global const P *shift
#define GN_MOD_UNPACK KS_TENSOR(scale); KS_TENSOR(shift);

/* Batch entry n's modulation row of a (samples, C) tensor; 0 when it is not given. A plan
 * without a modulation builds without CLNORM_GN_MOD (group_norm.c, build_defines): its rows
 * are then constant nulls, and every use of them folds away. */
#if defined(CLNORM_GN_MOD)
inline __global const P *gn_mod_row(__global const P *t, ulong off, ulong stride, ulong n,
                                    ulong srows, int given)
{
    return given ? t + off + (n / srows) * stride : 0;
}
#define GN_SCALE_ROW(n)                                                                      \
    gn_mod_row(scale, scale_off, scale_stride, n, gn_srows, (flags & CLNORM_KF_SCALE) != 0)
#define GN_SHIFT_ROW(n)                                                                      \
    gn_mod_row(shift, shift_off, shift_stride, n, gn_srows, (flags & CLNORM_KF_SHIFT) != 0)
#else
#define GN_SCALE_ROW(n) ((__global const P *)0)
#define GN_SHIFT_ROW(n) ((__global const P *)0)
#endif

/* A channel's affine folded with its modulation: u = xhat * gam + bet, gam = gamma_c * (1 +
 * scale), bet = beta_c * (1 + scale) + shift (what the tables and the backward use; the NCHW
 * forward forms z and u as written above). sr and hr: the entry's scale and shift rows. */
inline void gn_fold_mod(A *gam, A *bet, __global const P *sr, __global const P *hr, ulong c)
{
    if (sr) {
        const A ms = (A)1 + sr[c];
        *gam *= ms;
        *bet *= ms;
    }
    if (hr)
        *bet += hr[c];
}

/* A group's rstd rounded once from double where the device has it (common.cl, rstd_rounded),
 * in both layouts: OpenCL lets float rsqrt be 2 ulp off (PoCL's CPU device was up to 1.6),
 * and where rstd * |gamma| is near 100 the SiLU backward's dx moves about 1.4x its bound,
 * 1e-5 + 1e-5 |torch's|, per ulp of rstd: rstd scales every xhat, and the SiLU's curvature
 * carries that into dz, whose terms in dx there nearly cancel (bench/RESULTS.md, "The SiLU's
 * dz in double where rstd * |gamma| is large"). The row kinds keep rsqrt: a double division
 * and square root a row cost 262144x64's forward a sixth on PoCL. */
#define ROW_STATS_RSTD(var, eps) rstd_rounded(var, eps)

/* Group rows keep the row kernels' L1 prefetch of the next row (row_stats.cl,
 * row_prefetch_hint): L2 ones made the NCHW forward 10-25% slower at rows of 20-160 KiB on
 * PoCL, where LayerNorm's rows of 20-160 KiB gained or held (bench/RESULTS.md). */
#define OP_ROW_PREFETCH_L2 0

/* The CPU loops' vectors of scratch tables (A, aligned to one element) read and written as
 * one vector each, through common.cl's Av_e: PoCL builds vloadn and vstoren of a __global A *
 * from 16-byte pieces, four instructions per float16 (perf annotate of gn_tile_moments_rows),
 * where this is one unaligned load or store. The values are the same. On PoCL's CPU device
 * (CLNORM_STREAM_STORES); elsewhere vloadn and vstoren. x, dy and dx take it too where their
 * storage is A's (float32, float64): GN_LDX, GN_STX. */
#if defined(CLNORM_STREAM_STORES)
#define GN_LDV(p) (*(__global const Av_e *)(p))
#define GN_STV(v, p) (*(__global Av_e *)(p) = (v))
#if defined(CLNORM_X_F32) || defined(CLNORM_X_F64)
#define GN_LDX(p) GN_LDV(p)
#define GN_STX(v, p) GN_STV(v, p)
#endif
#else
#define GN_LDV(p) CAT(vload, VW)(0, (p))
#define GN_STV(v, p) CAT(vstore, VW)((v), 0, (p))
#endif
#if !defined(GN_LDX)
#define GN_LDX(p) LOADV(p)
#define GN_STX(v, p) STOREV(v, p)
#endif
/* The same for W's vectors (the backward's sums and tables in double, group_backward.cl). */
#if W_DOUBLE && defined(CLNORM_STREAM_STORES)
typedef W Wv_e __attribute__((ext_vector_type(VW), aligned(sizeof(W))));
#define GN_LDW(p) (*(__global const Wv_e *)(p))
#define GN_STW(v, p) (*(__global Wv_e *)(p) = (v))
#else
#define GN_LDW(p) CAT(vload, VW)(0, (p))
#define GN_STW(v, p) CAT(vstore, VW)((v), 0, (p))
#endif

/* Positions a GroupNorm kernel adds plainly before a block joins its compensated sum (Kahan):
 * a work-group item's share of a group (group_nhwc_wg.cl), a tile's moments (group_nhwc.cl),
 * and the host loop's NHWC backward sums, in double there (group_norm_host_body.h). */
#define GN_SUM_BLOCK 16

/* Offset of group row `row` in a tensor whose samples are `stride` apart (NCHW). */
inline ulong gn_row_offset(ulong row, ulong stride, ulong groups, ulong cpg, ulong hw)
{
    return (row / groups) * stride + (row % groups) * cpg * hw;
}

/* silu(z) = z * sigmoid(z), as z / (1 + exp(-z)): exp(-z) overflowing to Inf for very
 * negative z gives -0, the limit. */
inline A gn_silu1(A z) { return z / ((A)1 + exp(-z)); }
inline AV gn_siluv(AV z) { return z / ((AV)(1) + exp(-z)); }

/* ---- the input of a row ---- */
typedef struct {
    __global const T *x;
    int al; /* vectors from x are aligned (CLNORM_KF_ALIGNED, common.cl); 0 unless a kernel
               specializes on it */
} row_in;

#define IN_DEVV(in, i, K, sc) (LOADV_AL((in).x + (i), (in).al) * (sc) - (K).s0)
#define IN_DEV1(in, i, K, sc) (LOAD1((in).x + (i)) * (sc) - (K).s0)
#define IN_ABSMAXV(in, i) fabs(LOADV((in).x + (i)))
#define IN_ABSMAX1(in, i) fabs(LOAD1((in).x + (i)))

#define IN_PARAMS __global const T *x, ulong x_off, ulong x_stride GN_PARAMS
#define IN_ARGS x, x_off, x_stride GN_ARGS
/* IN_PARAMS of a kernel: its pointer, and its scalars from the struct */
#define IN_PTRS __global const T *x
#define IN_UNPACK KS_TENSOR(x); GN_UNPACK

inline row_in make_row_in(IN_PARAMS, ulong row)
{
    row_in in;
    in.x = x + x_off + gn_row_offset(row, x_stride, gn_groups, gn_cpg, gn_hw);
    in.al = 0;
    return in;
}

/* The shift of a group (scaled): the median of its first three elements, as a row's
 * (op_row_norm.cl). */
inline A2 row_shift(row_in in, ulong cols, A sc, int rms)
{
    A2 K = (A2)(0);
    if (!rms && cols > 0)
        K.s0 = med3(LOAD1(in.x), LOAD1(in.x + min(cols - 1, (ulong)1)),
                    LOAD1(in.x + min(cols - 1, (ulong)2))) * sc;
    return K;
}

/* ---- the forward's outputs of a row ---- */
typedef struct {
    __global T *y;
    __global const P *gamma; /* the group's first channel; 0 when absent */
    __global const P *beta;
#if defined(CLNORM_GN_MOD)
    __global const P *scale; /* the modulation rows of the group's sample, at its first */
    __global const P *shift; /* channel; 0 when absent */
#define OUT_MODULATED(out) ((out).scale || (out).shift)
#else
#define OUT_MODULATED(out) 0
#endif
    uint hw;                 /* columns per channel */
    int silu;
    int al; /* y's vectors are aligned (as row_in.al) */
} row_out;

#define FWD_PARAMS                                                                          \
    __global const T *x, ulong x_off, ulong x_stride, __global T *y, ulong y_off,           \
        ulong y_stride, __global const P *gamma, ulong gamma_off, ulong gamma_stride,        \
        __global const P *beta, ulong beta_off, ulong beta_stride, __global P *mean,         \
        ulong mean_off, ulong mean_stride, __global P *rstd, ulong rstd_off,                 \
        ulong rstd_stride GN_MOD_PARAMS GN_PARAMS
/* FWD_PARAMS of a kernel: its pointers, and its scalars from the struct */
#define FWD_PTRS                                                                            \
    __global const T *x, __global T *y, __global const P *gamma, __global const P *beta,    \
        __global P *mean, __global P *rstd GN_MOD_PTRS
#define FWD_UNPACK                                                                          \
    KS_TENSOR(x); KS_TENSOR(y); KS_TENSOR(gamma); KS_TENSOR(beta); KS_TENSOR(mean);        \
    KS_TENSOR(rstd); GN_MOD_UNPACK GN_UNPACK
/* The arguments of FWD_PARAMS, to pass them on. */
#define FWD_ARGS                                                                            \
    x, x_off, x_stride, y, y_off, y_stride, gamma, gamma_off, gamma_stride, beta, beta_off, \
        beta_stride, mean, mean_off, mean_stride, rstd, rstd_off, rstd_stride GN_MOD_ARGS   \
        GN_ARGS
#define FWD_OUT_PARAMS                                                                      \
    __global T *y, ulong y_off, ulong y_stride, __global const P *gamma, ulong gamma_off,    \
        __global const P *beta, ulong beta_off GN_MOD_PARAMS GN_PARAMS
#define FWD_OUT_ARGS y, y_off, y_stride, gamma, gamma_off, beta, beta_off GN_MOD_ARGS GN_ARGS
#define FWD_MEAN ((flags & CLNORM_KF_MEAN) ? mean + mean_off : 0)
#define FWD_RSTD ((flags & CLNORM_KF_RSTD) ? rstd + rstd_off : 0)

inline row_out make_row_out(FWD_OUT_PARAMS, ulong row, uint flags)
{
    row_out out;
    const ulong c0 = (row % gn_groups) * gn_cpg;
    out.y = y + y_off + gn_row_offset(row, y_stride, gn_groups, gn_cpg, gn_hw);
    out.al = 0;
    out.gamma = (flags & CLNORM_KF_GAMMA) ? gamma + gamma_off + c0 : 0;
    out.beta = (flags & CLNORM_KF_BETA) ? beta + beta_off + c0 : 0;
#if defined(CLNORM_GN_MOD)
    out.scale = (flags & CLNORM_KF_SCALE) ? GN_SCALE_ROW(row / gn_groups) + c0 : 0;
    out.shift = (flags & CLNORM_KF_SHIFT) ? GN_SHIFT_ROW(row / gn_groups) + c0 : 0;
#endif
    out.hw = (uint)gn_hw;
    out.silu = (flags & CLNORM_KF_SILU) != 0;
    return out;
}

/* xhat t of channel c: t * gamma_c + beta_c, modulated (* (1 + scale_c) + shift_c), each
 * step a statement of its own (no fma contraction: out_yv says why). */
inline A out_affine1(row_out out, uint c, A t)
{
    if (out.gamma)
        t *= out.gamma[c];
    if (out.beta)
        t += out.beta[c];
#if defined(CLNORM_GN_MOD)
    if (out.scale)
        t *= (A)1 + out.scale[c];
    if (out.shift)
        t += out.shift[c];
#endif
    return t;
}

/* y of the VW columns from i: ((d - m) * r) * gamma_c + beta_c, modulated (* (1 + scale_c)
 * + shift_c), then the SiLU. The columns share one channel unless they cross the end of one
 * (spatial not a multiple of VW, or a peeled start): then each lane takes its own channel's
 * parameters. */
inline AV out_yv(row_out out, ulong i, AV d, A m, A r)
{
    AV t = (d - m) * r;
    if (out.gamma || out.beta || OUT_MODULATED(out)) {
        const uint c = (uint)i / out.hw;
        if ((uint)i - c * out.hw + VW <= out.hw) {
            if (out.gamma)
                t *= out.gamma[c];
            if (out.beta)
                t += out.beta[c];
#if defined(CLNORM_GN_MOD)
            if (out.scale)
                t *= (A)1 + out.scale[c];
            if (out.shift)
                t += out.shift[c];
#endif
        } else {
#if defined(CLNORM_GN_MOD)
            /* Lane by lane in one array, each lane's operations those of the branch above in
             * its order. (Four arrays of parameters in the manner below made PoCL 3.1's
             * float16 subgroup kernel crash on unaligned rows, a fault inside the kernel.) */
            A tl[VW];
            CAT(vstore, VW)(t, 0, tl);
            for (uint k = 0; k < VW; k++)
                tl[k] = out_affine1(out, ((uint)i + k) / out.hw, tl[k]);
            t = CAT(vload, VW)(0, tl);
#else
            A gl[VW], bl[VW];
            for (uint k = 0; k < VW; k++) {
                const uint ck = ((uint)i + k) / out.hw;
                gl[k] = out.gamma ? out.gamma[ck] : (A)1;
                bl[k] = out.beta ? out.beta[ck] : (A)0;
            }
            /* Two statements, as above and in out_y1: one expression would let the compiler
             * contract it into an fma, and an element's bits would then depend on whether its
             * vector crosses a channel, which moves with the alignment of y (the stores'
             * peeled start). */
            if (out.gamma)
                t = t * CAT(vload, VW)(0, gl);
            if (out.beta)
                t = t + CAT(vload, VW)(0, bl);
#endif
        }
    }
    /* a branch, not a select: the exponentials only when asked for */
    if (out.silu)
        t = gn_siluv(t);
    return t;
}
inline A out_y1(row_out out, ulong i, A d, A m, A r)
{
    A t = out_affine1(out, (uint)i / out.hw, (d - m) * r);
    if (out.silu)
        t = gn_silu1(t);
    return t;
}

/* GroupNorm writes no sum. */
inline void out_sumv(row_out out, row_in in, ulong i) {}
inline void out_sum1(row_out out, row_in in, ulong i) {}
#if defined(STREAM_STORE)
inline void out_sumv_stream(row_out out, row_in in, ulong i, const int stream) {}
#endif

/* y of the VW elements at i from their deviations d, already loaded (row_stats.cl's
 * seg_apply loads two vectors' before it stores either). */
inline void out_putv(row_out out, row_in in, ulong i, AV d, A m, A r)
{
    STOREV(out_yv(out, i, d, m, r), out.y + i);
}
inline void out_applyv(row_out out, row_in in, ulong i, A2 K, A m, A r, A sc)
{
    out_putv(out, in, i, IN_DEVV(in, i, K, sc), m, r);
}
inline void out_apply1(row_out out, row_in in, ulong i, A2 K, A m, A r, A sc)
{
    STORE1(out_y1(out, i, IN_DEV1(in, i, K, sc), m, r), out.y + i);
}

/* ---- what GroupNorm's own kernels share ---- */

/* How far ahead (elements) the NHWC loops of CPU devices prefetch x (and dy): on PoCL's CPU
 * device the hardware prefetchers alone left them well below the copy's speed. */
#define GN_PD 2048

/* A group's statistics (K, m, r, sc), xhat = ((x * sc - K) - m) * r, r * sc the true rstd:
 * from the saved mean and rstd (K = 0, m = mean, sc = 1), or from the stats scratch the chain
 * recomputed (CLNORM_KF_RECOMPUTE) or put the saved ones into, checked (CLNORM_KF_REFINED,
 * gn_refine_stats; CLNORM_STATS_PER_ROW values per group: K, rlo, m, r, sc). */
inline void gn_stats_of(__global const P *mean, ulong m_off, __global const P *rstd,
                        ulong r_off, __global const A *stats, ulong row, uint flags, A *K,
                        A *m, A *r, A *sc)
{
    if ((flags & (CLNORM_KF_RECOMPUTE | CLNORM_KF_REFINED)) != 0) {
        __global const A *st = stats + row * CLNORM_STATS_PER_ROW;
        *K = st[0];
        *m = st[2];
        *r = st[3];
        *sc = st[4];
    } else {
        *K = 0;
        *m = mean[m_off + row];
        *r = rstd[r_off + row];
        *sc = 1;
    }
}

/* The rests of group `row`'s r and m (gn_put_stats), 0 with statistics given. */
inline A gn_stats_word(__global const A *stats, ulong row, uint flags, uint word)
{
    return (flags & (CLNORM_KF_RECOMPUTE | CLNORM_KF_REFINED)) != 0
               ? stats[row * CLNORM_STATS_PER_ROW + word]
               : (A)0;
}
#define gn_stats_rlo(stats, row, flags) gn_stats_word(stats, row, flags, 1)
#define gn_stats_mlo(stats, row, flags) gn_stats_word(stats, row, flags, 5)

/* The statistics of group `row` into the stats scratch: rlo and mlo what r's and m's float
 * rounding left where the statistics were taken in double (gn_stats_w, gn_merge_row), 0
 * elsewhere; the backward's double paths read r + rlo and m + mlo (gn_chan). */
inline void gn_put_stats(__global A *stats, ulong row, A K, A m, A r, A rlo, A sc, A mlo)
{
    __global A *st = stats + row * CLNORM_STATS_PER_ROW;
    st[0] = K;
    st[1] = rlo;
    st[2] = m;
    st[3] = r;
    st[4] = sc;
    st[5] = mlo;
}

/* ---- the backward's statistics again in double (NCHW, NHWC's workgroup strategy) ---- */
#if W_DOUBLE
/* The statistics of a group of n elements again (`pass`: the callers took the sums), from
 * the items' sums S of d = (x * sc - K) - m and Q of d^2 in double (d exact in double), the
 * float32 ones (*K, *m, *r, sc: xhat = ((x * sc - K) - m) * r) their centre: mean = K + m +
 * S / n, var = Q / n - (S / n)^2, rw = 1 / sqrt(var + eps sc^2). Where r * sc is at least
 * CLNORM_GN_VAR_WIDE (`wide`; the work-group's items all agree) K becomes the float nearest
 * that mean, m what is left of it (within an ulp of K: its own rounding is below 1e-12 of
 * the spread), r = rw rounded once; elsewhere K, m and r stay, the float paths' bits. Either
 * way *mlo and *rlo are what m and r leave of the mean and rw (the backward's double paths
 * read m + mlo and r + rlo: gn_chan; one float ulp of r alone put dx 1.1x the bound through
 * the SiLU at rstd 300, and the float m and r of every group dgamma 1.6x at 100,352 terms a
 * channel, gn_chan_sums_cv). Every item calls it (barriers), `pass` or not; without it
 * nothing changes.
 * Why: dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) at a large rstd moves by about
 * rstd |mean(g * xhat)| per unit of a shift of xhat, and by about 2 rstd |xhat mean(g *
 * xhat)| per unit of rstd's relative error: one float32 ulp of m (the mean's offset from an
 * element, a fraction of the spread) or of r each put dx at 1.3-2x the bound 1e-5 + 1e-5
 * |ref| on seed 4's case 122 of tests/torch_group_sweep.py (CLNORM_HOST_BYTES=0; numpy
 * replays), and the float sums had left the kernels at 1.06x there and at 1.20x on seed 6's
 * case 80 (InstanceNorm of 65 elements around 1e3 at spread 1e-2). Why not the mean as the
 * shift everywhere: a lone outlier would take it along (common.cl); a group of rstd 16 or
 * more has none, its values lie within sqrt(n) / 16 of the mean. */
/* A deviation d = (v * sc - K) - m in W, exact there (the callers of gn_stats_w). */
inline W gn_dev_w(A v, W sc, W K, W m) { return ((W)v * sc - K) - m; }

inline void gn_stats_w(W S, W Q, ulong n, uint lid, uint L, __local A *lo, __local A *hi,
                       A *K, A *m, A *r, A *rlo, A *mlo, A sc, A eps, int wide, int pass)
{
    S = wg_sum_w(S, lo, hi, lid, L);
    Q = wg_sum_w(Q, lo, hi, lid, L);
    if (!pass)
        return;
    const W dm = S / (W)n, mean = ((W)*K + (W)*m) + dm;
    const W var = fmax(Q / (W)n - dm * dm, (W)0);
    const W rw = (W)1 / sqrt(var + (W)eps * (W)sc * (W)sc);
    if (wide) {
        *K = (A)mean;
        *m = (A)(mean - (W)*K);
        *r = (A)rw;
    }
    *mlo = (A)((mean - (W)*K) - (W)*m);
    *rlo = (A)(rw - (W)*r);
}
#endif
