/*
 * group_norm_host_body.h - GroupNorm's host loop in one arithmetic type, included by
 * group_norm_host_f32.c and group_norm_host_f64.c with HA, HNATIVE, HF16C and HN(n) as
 * host_elem_body.h describes them, HEXP, the exponential of HA, and HPHASE_PLAIN_BWD, how
 * the NCHW backward without SiLU is compiled (HN(chunk)). The units, phases and
 * tables are group_norm_host_units.h's (gn_geom, gn_unit); this file is their loops, and
 * HN(run), the instance's entry (gn_run_f, gn_run_d).
 */
#include "host_elem_body.h"

/* One call: its geometry, what every phase reads, and the tables the phases pass on. */
typedef struct {
    const clnorm_desc *d;
    const clnorm_host_ptrs *a;
    gn_geom q;
    int phase;       /* GN_MOMENTS, GN_APPLY, GN_GRAD_SUMS or GN_DX: what a chunk runs */
    int fwd;         /* a forward: a fused GN_MOMENTS also stores mean and rstd and applies */
    int bwd;         /* a backward whose small NCHW groups (HN(small_groups)) take their sums
                        and dx in GN_MOMENTS, each right after its statistics */
    int silu;
    int global;      /* precomputed statistics (CLNORM_USE_GLOBAL_STATS): dx = rstd * g, its
                        group means stay 0 */
    int sums;        /* backward: the channel sums are needed (a parameter gradient, or dx's
                        group means) */
    int stream;      /* forward: y is float32 written with streaming stores (HSTREAM) */
    HA eps;
    HA *gam, *bet;           /* C each: gamma and beta (1 and 0 when absent); modulated, C
                                per sample, folded with its modulation (HN(fold_mod)): read
                                them through HN(gam_of) and HN(bet_of) */
    const HA *gam0, *bet0;   /* C each: gamma and beta themselves (dscale) */
    const HA *ms;            /* CLNORM_SCALE: per sample, C of 1 + scale; else NULL */
    size_t T, mstr;          /* entries per modulation sample, and C when modulated (1 and 0
                                when not: every entry reads the same gamma and beta) */
    HA *K, *m, *r, *sc;      /* per group n * G + g: xhat = ((x * sc - K) - m) * r */
    double *ent;             /* per moment entry: count, mean, M2 (gn_entry) */
    HA *tk, *ta, *tb;        /* NHWC forward: per (n, channel) the apply's table
                                (HN(nhwc_table)) */
    double *tdz, *tdzx;      /* backward: per (n, position block, channel), the sums of dz
                                and dz * xhat (HN(bwd_sums)) */
    HA *mg, *mgx;            /* backward: per group, mean(g) and mean(g * xhat) */
    HA *scratch;
    double *wscratch;        /* per worker: GN_WIDE_BUFS x C (HN(bufs)' double sums) */
    size_t per_worker;
} HN(job);

/* A worker's buffers: five of a unit's elements (staging of x and dy, xhat, dz, the output's
 * staging), ten of C (per-channel statistics and sums), and GN_WIDE_BUFS of C in double (the
 * NHWC backward's channel sums: Kahan sums and compensations, and a block's sums). */
typedef struct {
    HA *xa, *dya, *dev, *dz, *out;
    HA *kc, *mc, *rc, *scc, *s1, *c1, *s2, *c2, *b1, *b2;
    double *w1, *wc1, *w2, *wc2, *wb1, *wb2;
} HN(bufs);
#define GN_WIDE_BUFS 6

/* Batch entry n's gamma and beta, C each: gamma and beta themselves, or, modulated, folded
 * with the entry's sample's (1 + scale) and shift (no division when not: small groups take
 * them per group). */
static HINLINE const HA *HN(gam_of)(const HN(job) *job, size_t n)
{
    return job->mstr ? job->gam + n / job->T * job->mstr : job->gam;
}

static HINLINE const HA *HN(bet_of)(const HN(job) *job, size_t n)
{
    return job->mstr ? job->bet + n / job->T * job->mstr : job->bet;
}

static HINLINE HA HN(silu)(HA t)
{
    return t / ((HA)1 + HEXP(-t));
}

/* dy through the SiLU of z: dy * s(z) * (1 + z * (1 - s(z))), s the sigmoid. */
static HINLINE HA HN(silu_grad)(HA dy, HA z)
{
    const HA s = (HA)1 / ((HA)1 + HEXP(-z));
    return dy * (s * ((HA)1 + z * ((HA)1 - s)));
}

/* Whether a channel's SiLU backward takes dz in double (HN(silu_grad_wide)): rstd * |gamma| at
 * least CLNORM_GN_SILU_WIDE (flags.h), in float (HA double is double already). */
static HINLINE int HN(silu_wide)(HA rs, HA gamma)
{
    return HNATIVE != CLNORM_F64 && (double)rs * fabs((double)gamma) >= CLNORM_GN_SILU_WIDE;
}

/* HN(silu_grad) in double from z in double, rounded once: the backward's dz of a channel whose
 * rstd * |gamma| is at least CLNORM_GN_SILU_WIDE, z = xhat * gamma + beta from x in double
 * (HN(xhat_d)). dx = rstd * (dz * gamma - ...) scales dz's error by rstd * |gamma|, and with
 * xhat, z and the sigmoid each rounded to float a dx element near 0 of a group of spread 1e-2
 * (rstd 100) was 1.3-2.1x from torch's float64 within 1e-5 + 1e-5 |ref| (float32 terms of
 * rstd * |gamma| * |dy| cancelling; tests/torch_group_sweep.py, seed 4, case 122), 0.41-0.46x
 * so. In double for every channel the float32 SiLU backward was 1.3-1.5x slower
 * (clnorm-lib-ab), hence the threshold. In float64 (HA double) the two are the same arithmetic. */
static HINLINE HA HN(silu_grad_wide)(HA dy, double z)
{
    return (HA)gn_silu_grad_w((double)dy, z);
}

/* Whether group (n, g)'s float32 backward goes to double, from its float statistics: rstd at
 * least CLNORM_GN_VAR_WIDE, or rstd * |gamma_c| at least CLNORM_GN_SILU_WIDE for one of its
 * channels (flags.h; the kernels' thresholds). dx = rstd * ((g - mean(g)) - xhat * mean(g *
 * xhat)) is there a difference of terms of rstd * |gamma| * |dy| that nearly cancel, and each
 * float rounding on the way (rstd's and the mean's, xhat's, z's through the SiLU, the group
 * means', the formula's) comes out multiplied by rstd * |gamma|: the float loop's dx was up to
 * 1.21x from torch's float64 within 1e-5 + 1e-5 |ref| (a 2x64x32x32 G = 4 NCHW case through
 * the SiLU at spread 3e-3 around 300; bench/RESULTS.md, "GroupNorm's host loop: float32
 * backward of a large rstd * |gamma| in double"). Such a backward runs in double: a small
 * group's in HN(group_bwd_w) (HN(small_groups_run)), otherwise the whole call's through
 * gn_run_d (HN(run)). float16 and bfloat16 storage keep the float loop, whose wide dz
 * (HN(silu_wide)) is all they need: their own rounding (2^-11 and 2^-8 relative) is far
 * above what float arithmetic leaves. Never in HA double. */
static int HN(group_wide)(const HN(job) *job, size_t n, size_t g)
{
    if (HNATIVE == CLNORM_F64 || job->d->dtype != CLNORM_F32)
        return 0;
    const gn_geom *q = &job->q;
    const size_t gi = n * q->G + g;
    const double rs = (double)job->r[gi] * (double)job->sc[gi];
    const HA *gam = HN(gam_of)(job, n);
    double most = 0; /* by comparisons: fmax is a libm call per element */
    for (size_t c = g * q->cpg; c < (g + 1) * q->cpg; c++)
        most = fabs((double)gam[c]) > most ? fabs((double)gam[c]) : most;
    return rs >= CLNORM_GN_VAR_WIDE || rs * most >= CLNORM_GN_SILU_WIDE;
}

/* Whether one group of the call is (HN(group_wide)). */
static int HN(call_wide)(const HN(job) *job)
{
    for (size_t n = 0; n < job->q.n; n++)
        for (size_t g = 0; g < job->q.G; g++)
            if (HN(group_wide)(job, n, g))
                return 1;
    return 0;
}

/* The shift of group (n, g), as the kernels take it: in NCHW the median of its first three
 * elements (row_shift of its group row), in NHWC that of its first channel's values at
 * positions 0, 1 and 2 (gn_shift1). Never a lone outlier, whose rounding would reach every
 * deviation. */
static HINLINE HA HN(group_shift)(const HN(job) *job, size_t n, size_t g)
{
    const gn_geom *q = &job->q;
    if (q->cpg * q->hw == 0)
        return 0;
    HA v[3];
    for (size_t k = 0; k < 3; k++) {
        size_t c, p;
        clnorm_group_shift_elem(q->nhwc, q->cpg, q->hw, k, &c, &p);
        HN(load)(&v[k], job->d->dtype, job->a->p[CLNORM_ARG_X],
                 gn_at(q, job->d->x_stride, n, g * q->cpg + c, p), 1);
    }
    return HN(med3)(v[0], v[1], v[2]);
}

/* A group whose squares overflow HA: its statistics from every element again, in double,
 * scaled by the power of two that brings its largest magnitude near 1 (the kernels redo such
 * rows scaled too). Rare, so element by element. */
static void HN(group_slow)(const HN(job) *job, size_t n, size_t g, size_t gi)
{
    const gn_geom *q = &job->q;
    const clnorm_desc *d = job->d;
    const void *x = job->a->p[CLNORM_ARG_X];
    double M = 0;
    for (size_t c = g * q->cpg; c < (g + 1) * q->cpg; c++)
        for (size_t p = 0; p < q->hw; p++)
            M = fmax(M, fabs(clnorm_elem_load(d->dtype, x, gn_at(q, d->x_stride, n, c, p))));
    const double s = isfinite(M) && M > 0 ? ldexp(1.0, -ilogb(M)) : 1.0;
    const double K = (double)(HA)(clnorm_elem_load(d->dtype, x, gn_at(q, d->x_stride, n,
                                                                      g * q->cpg, 0)) * s);
    double sum = 0, sq = 0;
    for (size_t c = g * q->cpg; c < (g + 1) * q->cpg; c++)
        for (size_t p = 0; p < q->hw; p++)
            sum += clnorm_elem_load(d->dtype, x, gn_at(q, d->x_stride, n, c, p)) * s - K;
    sum /= (double)q->L;
    for (size_t c = g * q->cpg; c < (g + 1) * q->cpg; c++)
        for (size_t p = 0; p < q->hw; p++) {
            const double v =
                (clnorm_elem_load(d->dtype, x, gn_at(q, d->x_stride, n, c, p)) * s - K) - sum;
            sq += v * v;
        }
    job->K[gi] = (HA)K;
    job->m[gi] = (HA)sum;
    job->r[gi] = (HA)(1.0 / sqrt(sq / (double)q->L + (double)job->eps * s * s));
    job->sc[gi] = (HA)s;
}

/* HN(set_stats) with the rstd r = 1 / sqrt(var + eps) at hand (HN(small_groups) takes a
 * batch's in one loop). */
static HINLINE void HN(set_stats_r)(const HN(job) *job, size_t n, size_t g, size_t gi, HA K,
                                    double mean, double var, double r)
{
    if (!isfinite(var) || !isfinite(mean)) {
        HN(group_slow)(job, n, g, gi);
        return;
    }
    job->K[gi] = K;
    job->m[gi] = (HA)mean;
    job->r[gi] = (HA)r;
    job->sc[gi] = 1;
}

/* Group gi's statistics from its deviations' mean and variance (shift K, scale 1); redone
 * scaled when the variance overflowed. */
static HINLINE void HN(set_stats)(const HN(job) *job, size_t n, size_t g, size_t gi, HA K,
                                  double mean, double var)
{
    HN(set_stats_r)(job, n, g, gi, K, mean, var, 1.0 / sqrt(var + (double)job->eps));
}

/* The shift of a whole NCHW group from its row x of len elements: HN(group_shift)'s elements,
 * the first three, without finding them. */
static HINLINE HA HN(row_shift)(const HA *x, size_t len)
{
    return HN(med3)(x[0], x[len > 1], x[len > 2 ? 2 : len - 1]);
}

/* The forward's mean and rstd outputs of group gi, when asked for: in the parameters' type,
 * HA's own (clnorm_param_dtype). */
static HINLINE void HN(store_stats)(const HN(job) *job, size_t gi)
{
    HA *mean = job->a->p[CLNORM_ARG_MEAN], *rstd = job->a->p[CLNORM_ARG_RSTD];
    const double sc = (double)job->sc[gi];
    if (mean)
        mean[gi] = (HA)(((double)job->K[gi] + (double)job->m[gi]) / sc);
    if (rstd)
        rstd[gi] = (HA)((double)job->r[gi] * sc);
}

/* ---- NCHW: a unit is one contiguous run of a group, channels [c0, c1) x [p0, p1) ---- */

static HINLINE size_t HN(run_off)(const gn_geom *q, size_t stride, const gn_unit *u)
{
    return u->n * stride + u->c0 * q->hw + u->p0;
}

/* The run's x as HA: the tensor itself, or its conversion staged in b->xa. */
static HINLINE const HA *HN(nchw_x)(const HN(job) *job, HN(bufs) *b, const gn_unit *u,
                                    size_t len)
{
    return HN(row_in)(b->xa, job->d->dtype, job->a->p[CLNORM_ARG_X],
                      HN(run_off)(&job->q, job->d->x_stride, u), len);
}

/* y of n channels of one position each, as HN(apply_span) takes them. x and o are not
 * restrict: in place, y is x. */
static HINLINE void HN(apply_1x1)(size_t n, const HA *x, const HA *restrict gam,
                                  const HA *restrict bet, HA K, HA sc, HA m, HA r, HA *o)
{
    for (size_t i = 0; i < n; i++)
        o[i] = (((x[i] * sc - K) - m) * r) * gam[i] + bet[i];
}

/* Elements [i0, i1) of a run's y from its x, into o[0 .. i1 - i0): ((x * sc - K) - m) * r *
 * gamma_c + beta_c per channel, the deviations recomputed where they are used (staging them
 * cost a store and a load per element), then the SiLU. x and o are not restrict: in place,
 * y is x. */
static HINLINE void HN(apply_span)(const HN(job) *job, const gn_unit *u, const HA *x, size_t i0,
                                   size_t i1, HA K, HA sc, HA m, HA r, HA *o)
{
    const size_t P = u->p1 - u->p0;
    if (P == 1) { /* one position per channel (1x1 spatial): one loop over the channels */
        HN(apply_1x1)(i1 - i0, x + i0, HN(gam_of)(job, u->n) + u->c0 + i0,
                      HN(bet_of)(job, u->n) + u->c0 + i0, K, sc, m, r, o);
    } else {
        HA *oc = o - i0;
        const HA *gam = HN(gam_of)(job, u->n) + u->c0, *bet = HN(bet_of)(job, u->n) + u->c0;
        for (size_t i = i0; i < i1;) { /* the span's part of each channel */
            const size_t k = i / P, e = (k + 1) * P < i1 ? (k + 1) * P : i1;
            const HA gm = gam[k], bt = bet[k];
            for (size_t j = i; j < e; j++)
                oc[j] = (((x[j] * sc - K) - m) * r) * gm + bt;
            i = e;
        }
    }
    if (job->silu)
        for (size_t j = 0; j < i1 - i0; j++)
            o[j] = HN(silu)(o[j]);
}

#if HSTREAM
/* Elements per block of a streamed run: staged in L1 (b->out), then written out. */
#define GN_STREAM_BLOCK ((size_t)1024)
#endif

/* y of a run from x (HN(apply_span)). A streamed run (job->stream: a float32 forward of at
 * least HSTREAM_BYTES) computes blocks of GN_STREAM_BLOCK elements into b->out and writes
 * each with streaming stores while the same elements of the next unit's x, `nxt` (NULL:
 * none), are prefetched into L2, as the kernels' row apply does on CPU devices
 * (kernels/row_stats.cl): memory is busy during the apply, and the next unit's statistics
 * pass reads x from the cache. */
static HINLINE void HN(nchw_apply_run)(const HN(job) *job, HN(bufs) *b, const gn_unit *u,
                                       const HA *x, const HA *nxt)
{
    const gn_geom *q = &job->q;
    const clnorm_desc *d = job->d;
    const size_t gi = u->n * q->G + u->g, len = (u->c1 - u->c0) * (u->p1 - u->p0);
    const HA K = job->K[gi], sc = job->sc[gi], m = job->m[gi], r = job->r[gi];
    void *y = job->a->p[CLNORM_ARG_Y];
    const size_t off = HN(run_off)(q, d->y_stride, u);
#if HSTREAM
    if (job->stream) {
        for (size_t i0 = 0; i0 < len; i0 += GN_STREAM_BLOCK) {
            const size_t i1 = len - i0 < GN_STREAM_BLOCK ? len : i0 + GN_STREAM_BLOCK;
            HN(apply_span)(job, u, x, i0, i1, K, sc, m, r, b->out);
            clnorm_host_stream_floats((float *)y + off + i0, (const float *)b->out, i1 - i0,
                                      nxt ? (const float *)nxt + i0 : NULL);
        }
        return;
    }
#else
    (void)nxt;
#endif
    HA *o = HN(row_out)(b->out, d->dtype, y, off);
    HN(apply_span)(job, u, x, 0, len, K, sc, m, r, o);
    HN(out_done)(o, d->dtype, y, off, len);
}

/* The x of unit i + 1 where a streamed forward prefetches it (HN(nchw_apply_run)): the
 * same chunk's next unit, before `end` (the thread that runs unit i runs it next), else
 * NULL. */
static HINLINE const HA *HN(next_x)(const HN(job) *job, size_t i, size_t end)
{
    if (!job->stream || i + 1 >= end)
        return NULL;
    gn_unit v;
    gn_unit_of(&job->q, i + 1, &v);
    return (const HA *)job->a->p[CLNORM_ARG_X] + HN(run_off)(&job->q, job->d->x_stride, &v);
}

static HINLINE void HN(nchw_moments)(const HN(job) *job, HN(bufs) *b, const gn_unit *u,
                                     size_t idx, size_t end)
{
    const gn_geom *q = &job->q;
    const size_t gi = u->n * q->G + u->g, len = (u->c1 - u->c0) * (u->p1 - u->p0);
    const HA *x = HN(nchw_x)(job, b, u, len);
    const HA K = q->fused ? HN(row_shift)(x, len) : HN(group_shift)(job, u->n, u->g);
    HA S, M2;
    /* a fused forward unit's y asked for before its statistics (clnorm_host_prefetch_out):
     * 5-10% off single UNet samples at 16x16 and 32x32 positions. Not for a streamed y,
     * whose stores read nothing, nor for HN(small_groups), whose batch's 32 KB of y at once
     * held up its reads of x (64x512x4x4: 11% slower). */
    if (q->fused && job->fwd && !job->stream)
        clnorm_host_prefetch_out(job->a->p[CLNORM_ARG_Y], clnorm_elem_size(job->d->dtype),
                                 HN(run_off)(q, job->d->y_stride, u), len);
    HN(moments)(x, len, K, &S, &M2);
    if (!q->fused) {
        gn_entry_set(job->ent, idx, (double)len, (double)S / (double)len, (double)M2);
        return;
    }
    /* the whole group: its statistics (redone scaled when they overflowed), and the
     * forward's y from x at hand */
    HN(set_stats)(job, u->n, u->g, gi, K, (double)(S / (HA)len), (double)(M2 / (HA)len));
    if (job->fwd) {
        HN(store_stats)(job, gi);
        HN(nchw_apply_run)(job, b, u, x, HN(next_x)(job, idx, end));
    }
}

static HINLINE void HN(nchw_apply)(const HN(job) *job, HN(bufs) *b, const gn_unit *u,
                                   size_t idx, size_t end)
{
    const size_t len = (u->c1 - u->c0) * (u->p1 - u->p0);
    HN(nchw_apply_run)(job, b, u, HN(nchw_x)(job, b, u, len), HN(next_x)(job, idx, end));
}

/* ---- NHWC rows: one position's C channels, each a function with restrict pointers (so
 * that GCC vectorizes it without checking its many arrays for overlap at run time) ---- */

/* Brings n elements from p into the caches in memory order, a prefetch per 64-byte line: the
 * register-blocked loops below walk a unit one block of channels at a time, with a stride of
 * a row, which the hardware prefetchers follow badly from memory. */
static HINLINE void HN(touch)(const HA *p, size_t n)
{
#if defined(__GNUC__)
    for (size_t i = 0; i < n; i += 64 / sizeof(HA))
        __builtin_prefetch(p + i);
#else
    (void)p;
    (void)n;
#endif
}

/* Over np rows of C from x, per channel: b1 = the sum of x - kc (sq = 0), or of
 * (x - kc - mc)^2 (sq = 1), summed in position order. Channels in blocks of GN_CB whose
 * accumulators stay in registers across the rows (the row-at-a-time loop loaded and stored
 * every accumulator for every element); the same sums, in the same order. The squares are
 * summed in double (each exact), rounded once: float sums of up to HBLOCK of them put rstd
 * up to 4 ulps off, and the SiLU backward's dx at rstd * |gamma| near 100 moves about 1.4x its
 * bound per ulp of rstd (HN(silu_grad_wide); 1.1-1.6x on 4x64x8x8 and 2x64x16x16 NHWC at
 * spread 1e-2 and 3e-3, tests/torch_group_spread.py --more). The NHWC forward's A/B
 * against float sums: 0.96-1.03 (clnorm-lib-ab, 2x64x8x8 to 1x640x64x16). */
#define GN_CB 32
static HINLINE void HN(rows_moment)(size_t C, size_t np, const HA *restrict x,
                                    const HA *restrict kc, const HA *restrict mc,
                                    HA *restrict b1, int sq)
{
    size_t c0 = 0;
    for (; c0 + GN_CB <= C; c0 += GN_CB) {
        HA acc[GN_CB] = {0}, k[GN_CB], m[GN_CB];
        double a2[GN_CB] = {0};
        for (size_t j = 0; j < GN_CB; j++) {
            k[j] = kc[c0 + j];
            m[j] = mc[c0 + j];
        }
        for (size_t p = 0; p < np; p++) {
            const HA *xp = x + p * C + c0;
            if (sq)
                for (size_t j = 0; j < GN_CB; j++) {
                    const HA v = (xp[j] - k[j]) - m[j];
                    a2[j] += (double)v * (double)v;
                }
            else
                for (size_t j = 0; j < GN_CB; j++)
                    acc[j] += xp[j] - k[j];
        }
        for (size_t j = 0; j < GN_CB; j++)
            b1[c0 + j] = sq ? (HA)a2[j] : acc[j];
    }
    for (size_t c = c0; c < C; c++) {
        HA a = 0;
        double a2 = 0;
        for (size_t p = 0; p < np; p++) {
            const HA v = (x[p * C + c] - kc[c]) - (sq ? mc[c] : 0);
            if (sq)
                a2 += (double)v * (double)v;
            else
                a += v;
        }
        b1[c] = sq ? (HA)a2 : a;
    }
}

/* HN(rows_moment)'s two passes over one block of np rows (np <= HBLOCK), per channel: s1 =
 * the sum of x - kc, mc = s1 / np, s2 = the sum of (x - kc - mc)^2 (in double, as there);
 * each register block of channels takes its second pass while its rows' lines are still in
 * L1 (two passes over the whole block read it from L2 the second time). The same sums as the
 * two passes of HN(rows_moment) with the Kahan steps from zero (exact) between them.
 * Meanwhile the lines of pf's first pfn elements, the x of the unit the thread runs next, are
 * asked for in L2: one per row of a register block in each pass (np * C / 16 lines for
 * float32 when GN_CB divides C, the next unit's size), the rest at the end. So memory brings
 * the next unit while this one's sums run from the caches, where asking for the whole unit
 * just before its sums left the core waiting for it (HN(nhwc_moments); gn_nhwc_chunks says
 * what it gained). */
static HINLINE void HN(rows_moments_block)(size_t C, size_t np, const HA *restrict x,
                                           const HA *restrict kc, HA *restrict s1,
                                           HA *restrict s2, HA *restrict mc,
                                           const HA *pf, size_t pfn)
{
    size_t c0 = 0, pi = 0;
    for (; c0 + GN_CB <= C; c0 += GN_CB) {
        HA acc[GN_CB] = {0}, k[GN_CB], m[GN_CB];
        for (size_t j = 0; j < GN_CB; j++)
            k[j] = kc[c0 + j];
        for (size_t p = 0; p < np; p++) {
            const HA *xp = x + p * C + c0;
            for (size_t j = 0; j < GN_CB; j++)
                acc[j] += xp[j] - k[j];
            clnorm_host_prefetch_step(pf, sizeof(HA), &pi, pfn);
        }
        double a2[GN_CB] = {0};
        for (size_t j = 0; j < GN_CB; j++) {
            s1[c0 + j] = acc[j];
            m[j] = mc[c0 + j] = acc[j] / (HA)np;
        }
        for (size_t p = 0; p < np; p++) {
            const HA *xp = x + p * C + c0;
            for (size_t j = 0; j < GN_CB; j++) {
                const HA v = (xp[j] - k[j]) - m[j];
                a2[j] += (double)v * (double)v;
            }
            clnorm_host_prefetch_step(pf, sizeof(HA), &pi, pfn);
        }
        for (size_t j = 0; j < GN_CB; j++)
            s2[c0 + j] = (HA)a2[j];
    }
    for (size_t c = c0; c < C; c++) {
        HA a = 0;
        double a2 = 0;
        for (size_t p = 0; p < np; p++)
            a += x[p * C + c] - kc[c];
        const HA m = mc[c] = a / (HA)np;
        for (size_t p = 0; p < np; p++) {
            const HA v = (x[p * C + c] - kc[c]) - m;
            a2 += (double)v * (double)v;
        }
        s1[c] = a;
        s2[c] = (HA)a2;
    }
    if (pi < pfn)
        clnorm_host_prefetch_in(pf, sizeof(HA), pi, pfn - pi);
}

/* y = xhat * gamma + beta of one row, xhat from x. x and o are not restrict: in place, y is
 * x (element by element, read before written). */
static HINLINE void HN(row_apply)(size_t C, const HA *x, const HA *restrict scc,
                                  const HA *restrict kc, const HA *restrict mc,
                                  const HA *restrict rc, const HA *restrict gam,
                                  const HA *restrict bet, HA *o)
{
    for (size_t c = 0; c < C; c++)
        o[c] = (((x[c] * scc[c] - kc[c]) - mc[c]) * rc[c]) * gam[c] + bet[c];
}

/* y = (x - tk) * ta + tb of one row: per channel its group's shift, rstd * gamma and
 * beta - mean * rstd * gamma (the mean about the shift), the kernels' table (group_nhwc.cl,
 * gn_merge_row): four loads per element where HN(row_apply) takes seven. (Channels in
 * register blocks across the rows, one load per element, ran 1.2x slower: the rows' stride.)
 * x and o are not restrict: in place, y is x. */
static HINLINE void HN(row_apply_table)(size_t C, const HA *x, const HA *restrict tk,
                                        const HA *restrict ta, const HA *restrict tb, HA *o)
{
    for (size_t c = 0; c < C; c++)
        o[c] = (x[c] - tk[c]) * ta[c] + tb[c];
}

/* Positions per block of the NHWC backward's sums, each block then Kahan-added (in double). */
#define GN_SUM_BLOCK 16

/* Channels per register block of HN(rows_grad_sums): two double accumulators each, which
 * at GN_CB's 32 channels would take all 16 of AVX2's vector registers. */
#define GN_CBW 16

/* xhat of element v in double, with its group's (or channel's) sc, K, m and r: the sums of the
 * backward take it unrounded (HN(bwd_sums) says why). */
static HINLINE double HN(xhat_d)(HA v, HA sc, HA K, HA m, HA r)
{
    return (((double)v * (double)sc - (double)K) - (double)m) * (double)r;
}

/* Over np rows of C, per channel: b1 = the sum of dz, b2 of dz * xhat (xhat from x), in
 * position order, in double; channels in register blocks of GN_CBW. */
static HINLINE void HN(rows_grad_sums)(size_t C, size_t np, const HA *restrict x,
                                       const HA *restrict scc, const HA *restrict kc,
                                       const HA *restrict mc, const HA *restrict rc,
                                       const HA *restrict dz, double *restrict b1,
                                       double *restrict b2)
{
    size_t c0 = 0;
    for (; c0 + GN_CBW <= C; c0 += GN_CBW) {
        double a1[GN_CBW] = {0}, a2[GN_CBW] = {0};
        for (size_t p = 0; p < np; p++) {
            const HA *xp = x + p * C + c0, *dp = dz + p * C + c0;
            for (size_t j = 0; j < GN_CBW; j++) {
                const size_t c = c0 + j;
                const double xh = HN(xhat_d)(xp[j], scc[c], kc[c], mc[c], rc[c]);
                a1[j] += (double)dp[j];
                a2[j] += (double)dp[j] * xh;
            }
        }
        for (size_t j = 0; j < GN_CBW; j++) {
            b1[c0 + j] = a1[j];
            b2[c0 + j] = a2[j];
        }
    }
    for (size_t c = c0; c < C; c++)
        b1[c] = b2[c] = 0;
    for (size_t p = 0; c0 < C && p < np; p++)
        for (size_t c = c0; c < C; c++) {
            const double xh = HN(xhat_d)(x[p * C + c], scc[c], kc[c], mc[c], rc[c]);
            b1[c] += (double)dz[p * C + c];
            b2[c] += (double)dz[p * C + c] * xh;
        }
}

/* The sums of dz and dz * xhat over one NCHW channel's n elements, in double: HBLOCK
 * elements at a time in HLANES lanes, the blocks Kahan-added (as HN(sum) and HN(dot) in HA).
 * Fewer than HLANES elements are summed as a block's tail alone (HN(sum) says why). */
static HINLINE void HN(chan_grad_sums)(const HA *restrict x, const HA *restrict dz, size_t n,
                                       HA sc, HA K, HA m, HA r, double *sz, double *szx)
{
    if (n < HLANES) {
        double t0 = 0, t1 = 0;
        for (size_t i = 0; i < n; i++) {
            t0 += (double)dz[i];
            t1 += (double)dz[i] * HN(xhat_d)(x[i], sc, K, m, r);
        }
        *sz = t0;
        *szx = t1;
        return;
    }
    double s0 = 0, e0 = 0, s1 = 0, e1 = 0;
    for (size_t b = 0; b < n; b += HBLOCK) {
        const size_t len = n - b < HBLOCK ? n - b : HBLOCK;
        const HA *xb = x + b, *db = dz + b;
        double l0[HLANES] = {0}, l1[HLANES] = {0};
        size_t i = 0;
        for (; i + HLANES <= len; i += HLANES)
            for (size_t k = 0; k < HLANES; k++) {
                const double dd = (double)db[i + k];
                l0[k] += dd;
                l1[k] += dd * HN(xhat_d)(xb[i + k], sc, K, m, r);
            }
        double t0 = 0, t1 = 0;
        for (; i < len; i++) {
            t0 += (double)db[i];
            t1 += (double)db[i] * HN(xhat_d)(xb[i], sc, K, m, r);
        }
        gn_kahan_wide(&s0, &e0, clnorm_host_lanes_sum(l0) + t0);
        gn_kahan_wide(&s1, &e1, clnorm_host_lanes_sum(l1) + t1);
    }
    *sz = s0;
    *szx = s1;
}

/* dz through the SiLU of np NHWC rows of C: HN(silu_grad_wide) of z = xhat * gamma + beta,
 * from x in double. Out of line, as HN(chan_dz_wide). */
HPHASE static void HN(rows_dz_wide)(size_t C, size_t np, const HA *restrict x,
                                    const HA *restrict scc, const HA *restrict kc,
                                    const HA *restrict mc, const HA *restrict rc,
                                    const HA *restrict gam, const HA *restrict bet,
                                    const HA *restrict dy, HA *restrict dz)
{
    for (size_t p = 0; p < np; p++)
        for (size_t c = 0; c < C; c++) {
            const double xh = HN(xhat_d)(x[p * C + c], scc[c], kc[c], mc[c], rc[c]);
            dz[p * C + c] =
                HN(silu_grad_wide)(dy[p * C + c], xh * (double)gam[c] + (double)bet[c]);
        }
}

/* dx = rs * ((dz * gamma - mg) - xhat * mgx), xhat from x, per channel its group's rs, mg,
 * mgx. x, dz and o are not restrict: in place, dx is x or dy (element by element). */
static HINLINE void HN(row_dx)(size_t C, const HA *x, const HA *restrict scc,
                               const HA *restrict kc, const HA *restrict mc,
                               const HA *restrict rc, const HA *dz, const HA *restrict gam,
                               const HA *restrict rs, const HA *restrict mg,
                               const HA *restrict mgx, HA *o)
{
    for (size_t c = 0; c < C; c++) {
        const HA xh = ((x[c] * scc[c] - kc[c]) - mc[c]) * rc[c];
        o[c] = rs[c] * ((dz[c] * gam[c] - mg[c]) - xh * mgx[c]);
    }
}

/* ---- NHWC: a unit is positions [p0, p1) of a sample, every channel: rows of C ---- */

/* Every channel's statistics in sample n (kc, mc, rc, scc): its group's. */
static HINLINE void HN(nhwc_coeffs)(const HN(job) *job, HN(bufs) *b, size_t n)
{
    const gn_geom *q = &job->q;
    for (size_t g = 0; g < q->G; g++) {
        const size_t gi = n * q->G + g;
        for (size_t c = g * q->cpg; c < (g + 1) * q->cpg; c++) {
            b->kc[c] = job->K[gi];
            b->mc[c] = job->m[gi];
            b->rc[c] = job->r[gi];
            b->scc[c] = job->sc[gi];
        }
    }
}

/* The table of `nc` channels of one group: the shift K, rstd * gamma, and beta minus the
 * mean about the shift times that. */
static HINLINE void HN(table_fill)(size_t nc, HA K, HA r, HA m, const HA *restrict gam,
                                   const HA *restrict bet, HA *restrict tk, HA *restrict ta,
                                   HA *restrict tb)
{
    for (size_t c = 0; c < nc; c++) {
        tk[c] = K;
        ta[c] = r * gam[c];
        tb[c] = bet[c] - m * ta[c];
    }
}

/* Whether a group of sample n was rescaled (its statistics scale x first: sc != 1). */
static HINLINE int HN(sample_scaled)(const HN(job) *job, size_t n)
{
    int scaled = 0;
    for (size_t g = 0; g < job->q.G; g++)
        scaled |= job->sc[n * job->q.G + g] != (HA)1;
    return scaled;
}

/* Sample n's table for the apply, once its groups' statistics are set: once per sample (the
 * calling thread's merge, or a fused unit), where each unit had built it for itself, scalar,
 * a tenth of the forward at 640 channels. */
static void HN(nhwc_table)(const HN(job) *job, size_t n)
{
    const gn_geom *q = &job->q;
    if (HN(sample_scaled)(job, n))
        return; /* the apply takes the per-channel statistics */
    const size_t o = n * q->C;
    for (size_t g = 0; g < q->G; g++) {
        const size_t gi = n * q->G + g, c0 = g * q->cpg;
        HN(table_fill)(q->cpg, job->K[gi], job->r[gi], job->m[gi], HN(gam_of)(job, n) + c0,
                       HN(bet_of)(job, n) + c0, job->tk + o + c0, job->ta + o + c0,
                       job->tb + o + c0);
    }
}

static HINLINE void HN(nhwc_apply)(const HN(job) *job, HN(bufs) *b, const gn_unit *u)
{
    const gn_geom *q = &job->q;
    const clnorm_desc *d = job->d;
    const size_t C = q->C, P = u->p1 - u->p0;
    const HA *x = HN(row_in)(b->xa, d->dtype, job->a->p[CLNORM_ARG_X],
                             u->n * d->x_stride + u->p0 * C, P * C);
    void *y = job->a->p[CLNORM_ARG_Y];
    const size_t off = u->n * d->y_stride + u->p0 * C;
    HA *o = HN(row_out)(b->out, d->dtype, y, off);
    /* The table form when no group of the sample was rescaled (sc = 1), as on the devices;
     * a rescaled one scales x first, which takes magnitudes up to the type's largest. */
    const int scaled = HN(sample_scaled)(job, u->n);
    const HA *tk = job->tk + u->n * C, *ta = job->ta + u->n * C, *tb = job->tb + u->n * C;
    if (scaled)
        HN(nhwc_coeffs)(job, b, u->n);
    /* A streamed y (job->stream): blocks of rows, about GN_STREAM_BLOCK elements, staged in
     * L1 (b->out), each then written with streaming stores; else one block, all P rows. */
#if HSTREAM
    const size_t rows = job->stream ? (GN_STREAM_BLOCK / C ? GN_STREAM_BLOCK / C : 1) : P;
#else
    const size_t rows = P;
#endif
    const int staged = rows < P;
    for (size_t p0 = 0; p0 < P; p0 += rows) {
        const size_t p1 = P - p0 < rows ? P : p0 + rows;
        HA *ob = staged ? b->out : o + p0 * C;
        for (size_t p = p0; p < p1; p++) {
            HA *op = ob + (p - p0) * C;
            if (scaled)
                HN(row_apply)(C, x + p * C, b->scc, b->kc, b->mc, b->rc, HN(gam_of)(job, u->n),
                              HN(bet_of)(job, u->n), op);
            else
                HN(row_apply_table)(C, x + p * C, tk, ta, tb, op);
            if (job->silu)
                for (size_t c = 0; c < C; c++)
                    op[c] = HN(silu)(op[c]);
        }
#if HSTREAM
        if (staged)
            clnorm_host_stream_floats((float *)y + off + p0 * C, (const float *)ob,
                                      (p1 - p0) * C, NULL);
#endif
    }
    if (!staged)
        HN(out_done)(o, d->dtype, y, off, P * C);
}

/* The sum of n floats in double, four running sums (the channels of a group: one chain of
 * dependent additions per group was a tenth of the forward at 640 channels). */
static HINLINE double HN(sum_d)(const HA *restrict v, size_t n)
{
    double l[4] = {0, 0, 0, 0};
    size_t i = 0;
    for (; i + 4 <= n; i += 4)
        for (size_t j = 0; j < 4; j++)
            l[j] += (double)v[i + j];
    for (; i < n; i++)
        l[i % 4] += (double)v[i];
    return (l[0] + l[1]) + (l[2] + l[3]);
}

/* The M2 of n channels of P positions each about `mean`, from each channel's sum of
 * deviations s1 and its M2 about its own mean s2: the sum of s2 + P * (s1 / P - mean)^2 (Chan's
 * update for equal counts), in double, four running sums. */
static HINLINE double HN(spread_d)(const HA *restrict s1, const HA *restrict s2, size_t n,
                                   double invP, double Pd, double mean)
{
    double l[4] = {0, 0, 0, 0};
    size_t i = 0;
    for (; i + 4 <= n; i += 4)
        for (size_t j = 0; j < 4; j++) {
            const double dm = (double)s1[i + j] * invP - mean;
            l[j] += (double)s2[i + j] + Pd * (dm * dm);
        }
    for (; i < n; i++) {
        const double dm = (double)s1[i] * invP - mean;
        l[i % 4] += (double)s2[i] + Pd * (dm * dm);
    }
    return (l[0] + l[1]) + (l[2] + l[3]);
}

/* Per channel over the unit's positions, in blocks of HBLOCK positions Kahan-added: the sum
 * of the deviations from the group's shift (s1), then of their squares about the channel's
 * mean (s2); each group's channels merged with Chan's update into the unit's entries. */
static HINLINE void HN(nhwc_moments)(const HN(job) *job, HN(bufs) *b, const gn_unit *u,
                                     size_t unit, size_t start, size_t end)
{
    const gn_geom *q = &job->q;
    const clnorm_desc *d = job->d;
    const size_t C = q->C, P = u->p1 - u->p0;
    const HA *x = HN(row_in)(b->xa, d->dtype, job->a->p[CLNORM_ARG_X],
                             u->n * d->x_stride + u->p0 * C, P * C);
    for (size_t g = 0; g < q->G; g++) {
        const HA K = HN(group_shift)(job, u->n, g);
        for (size_t c = g * q->cpg; c < (g + 1) * q->cpg; c++)
            b->kc[c] = K;
    }
    for (size_t c = 0; c < C; c++)
        b->s1[c] = b->c1[c] = b->s2[c] = b->c2[c] = 0;
    /* Chained (one block, x read in place): each unit asks for the chunk's next one through
     * its sums, so only a chunk's first unit is asked for whole here; otherwise every unit
     * is, up front. */
    const int chained = P <= HBLOCK && d->dtype == HNATIVE;
    const HA *pf = NULL;
    size_t pfn = 0;
    if (chained && unit + 1 < end)
        pf = (const HA *)job->a->p[CLNORM_ARG_X] +
             gn_nhwc_unit_span(q, unit + 1, d->x_stride, &pfn);
    if (!chained || unit == start)
        HN(touch)(x, P * C);
    if (P <= HBLOCK) /* one block: both passes per channel block (the same sums) */
        HN(rows_moments_block)(C, P, x, b->kc, b->s1, b->s2, b->mc, pf, pfn);
    for (int pass = 0; pass < 2 && P > HBLOCK; pass++) {
        for (size_t p0 = 0; p0 < P; p0 += HBLOCK) {
            const size_t pe = P - p0 < HBLOCK ? P : p0 + HBLOCK;
            if (pass == 0) /* a constant each, so that each call inlines its own loop */
                HN(rows_moment)(C, pe - p0, x + p0 * C, b->kc, b->mc, b->b1, 0);
            else
                HN(rows_moment)(C, pe - p0, x + p0 * C, b->kc, b->mc, b->b1, 1);
            HA *s = pass == 0 ? b->s1 : b->s2, *cc = pass == 0 ? b->c1 : b->c2;
            for (size_t c = 0; c < C; c++)
                HN(kahan)(&s[c], &cc[c], b->b1[c]);
        }
        if (pass == 0)
            for (size_t c = 0; c < C; c++)
                b->mc[c] = b->s1[c] / (HA)P;
    }
    /* Each group's channels, P positions each, merged at once in double: the mean of their
     * means, and their M2 plus P times each mean's squared distance from it (Chan's update
     * for equal counts). One division per group: Chan's pairwise update, two divisions per
     * channel in a dependent chain, took a fifth of the forward at 640 channels. */
    const double Pd = (double)P, invP = 1.0 / Pd;
    for (size_t g = 0; g < q->G; g++) {
        const size_t c0 = g * q->cpg;
        const double cnt = Pd * (double)q->cpg;
        const double mean = HN(sum_d)(b->s1 + c0, q->cpg) / cnt;
        const double M2 = HN(spread_d)(b->s1 + c0, b->s2 + c0, q->cpg, invP, Pd, mean);
        if (!q->fused) {
            gn_entry_set(job->ent, unit * q->G + g, cnt, mean, M2);
            continue;
        }
        /* the whole sample: each group's statistics (as HN(merge_stats) takes them from one
         * entry), then y below */
        const size_t gi = u->n * q->G + g;
        HN(set_stats)(job, u->n, g, gi, b->kc[g * q->cpg], mean, M2 / cnt);
        if (job->fwd)
            HN(store_stats)(job, gi);
    }
    if (q->fused && job->fwd) {
        HN(nhwc_table)(job, u->n);
        HN(nhwc_apply)(job, b, u);
    }
}

/* ---- the backward: dz of a unit, then its channel sums or its dx ---- */

/* One NCHW channel's xhat and dz through the SiLU from x in double (HN(silu_grad_wide)). Out
 * of line (HPHASE): HN(bwd_stage) is inlined into every backward phase, where more code had
 * cost the float path up to a tenth (HN(backward_unit_wide)). */
HPHASE static void HN(chan_dz_wide)(const HA *restrict x, const HA *restrict dy, size_t n,
                                    HA sc, HA K, HA m, HA r, HA gam, HA bet,
                                    HA *restrict dev, HA *restrict dz)
{
    for (size_t i = 0; i < n; i++) {
        const double xh = HN(xhat_d)(x[i], sc, K, m, r);
        dev[i] = (HA)xh;
        dz[i] = HN(silu_grad_wide)(dy[i], xh * (double)gam + (double)bet);
    }
}

/* The unit's x and dz (dy itself without the SiLU, else dy through it in b->dz); NCHW also
 * stores xhat in b->dev where dz or dx reads it (`dev`; the sums take theirs in double), NHWC
 * recomputes it in each loop that needs it (a unit's worth of stores and loads of it cost
 * more than the arithmetic). */
static HINLINE void HN(bwd_stage)(const HN(job) *job, HN(bufs) *b, const gn_unit *u, size_t len,
                                  size_t xoff, size_t yoff, int dev, int wide, const HA **xo,
                                  const HA **dzo)
{
    const gn_geom *q = &job->q;
    const clnorm_desc *d = job->d;
    const HA *x = HN(row_in)(b->xa, d->dtype, job->a->p[CLNORM_ARG_X], xoff, len);
    const HA *dy = HN(row_in)(b->dya, d->dtype, job->a->p[CLNORM_ARG_DY], yoff, len);
    *xo = x;
    *dzo = job->silu ? b->dz : dy;
    if (q->nhwc) {
        HN(nhwc_coeffs)(job, b, u->n);
        const size_t C = q->C;
        if (!job->silu)
            return;
        const HA *gam = HN(gam_of)(job, u->n), *bet = HN(bet_of)(job, u->n);
        if (wide) {
            HN(rows_dz_wide)(C, len / C, x, b->scc, b->kc, b->mc, b->rc, gam, bet, dy, b->dz);
            return;
        }
        for (size_t p = 0; p < len / C; p++) {
            HN(row_apply)(C, x + p * C, b->scc, b->kc, b->mc, b->rc, gam, bet, b->s2);
            for (size_t c = 0; c < C; c++)
                b->dz[p * C + c] = HN(silu_grad)(dy[p * C + c], b->s2[c]);
        }
        return;
    }
    if (!dev)
        return;
    const size_t gi = u->n * q->G + u->g, P = u->p1 - u->p0;
    const HA K = job->K[gi], m = job->m[gi], r = job->r[gi], sc = job->sc[gi];
    const HA *gam = HN(gam_of)(job, u->n), *bet = HN(bet_of)(job, u->n);
    if (!wide) {
        for (size_t i = 0; i < len; i++)
            b->dev[i] = ((x[i] * sc - K) - m) * r;
        for (size_t c = u->c0; job->silu && c < u->c1; c++)
            for (size_t i = (c - u->c0) * P; i < (c - u->c0 + 1) * P; i++)
                b->dz[i] = HN(silu_grad)(dy[i], b->dev[i] * gam[c] + bet[c]);
        return;
    }
    for (size_t c = u->c0; c < u->c1; c++)
        HN(chan_dz_wide)(x + (c - u->c0) * P, dy + (c - u->c0) * P, P, sc, K, m, r, gam[c],
                         bet[c], b->dev + (c - u->c0) * P, b->dz + (c - u->c0) * P);
}

/* The unit's per-channel sums of dz and dz * xhat into the tables, at (n, position block).
 * In double, xhat too (from x, unrounded): dgamma and dbeta are sums over every position of
 * a channel in the batch, and in float their rounding, the lanes' and each xhat's, grew with
 * the count, to 1.2-1.6x torch's float64 within 1e-5 + 1e-5 |ref| at 3,000-8,000 positions
 * whose terms cancel (tests/torch_group_sweep.py, seed 1); dx's group means come from the
 * same sums. dz keeps HA (dy itself, or through the SiLU).
 * NHWC: the unit's x and dz asked for whole first when `whole`, the first unit of a chunk;
 * meanwhile nlen elements of nx and ndy, the next unit's x and dy, asked for in L2 a block at
 * a time (HN(rows_moments_block) says why; gn_nhwc_chunks, what it gained). */
static HINLINE void HN(bwd_sums)(const HN(job) *job, HN(bufs) *b, const gn_unit *u,
                                 const HA *x, const HA *dz, int dev, int whole, const HA *nx,
                                 const HA *ndy, size_t nlen)
{
    const gn_geom *q = &job->q;
    const size_t C = q->C, P = u->p1 - u->p0, row = (u->n * q->npb + u->pb) * C;
    if (!q->nhwc && HNATIVE == CLNORM_F64 && dev) {
        /* in double, b->dev holds xhat_d's bits already (`dev`: staged for dz or dx) */
        for (size_t c = u->c0; c < u->c1; c++) {
            const size_t i0 = (c - u->c0) * P;
            job->tdz[row + c] = (double)HN(sum)(dz + i0, P);
            job->tdzx[row + c] = (double)HN(dot)(dz + i0, b->dev + i0, P);
        }
        return;
    }
    if (!q->nhwc) {
        const size_t gi = u->n * q->G + u->g;
        for (size_t c = u->c0; c < u->c1; c++) {
            const size_t i0 = (c - u->c0) * P;
            HN(chan_grad_sums)(x + i0, dz + i0, P, job->sc[gi], job->K[gi], job->m[gi],
                               job->r[gi], &job->tdz[row + c], &job->tdzx[row + c]);
        }
        return;
    }
    for (size_t c = 0; c < C; c++)
        b->w1[c] = b->wc1[c] = b->w2[c] = b->wc2[c] = 0;
    if (whole) {
        HN(touch)(x, P * C);
        HN(touch)(dz, P * C);
    }
    /* blocks of GN_SUM_BLOCK positions, each then Kahan-added (plain float sums over 128
     * positions had put dgamma up to 1.6e-5 from float64) */
    for (size_t p0 = 0; p0 < P; p0 += GN_SUM_BLOCK) {
        const size_t pe = P - p0 < GN_SUM_BLOCK ? P : p0 + GN_SUM_BLOCK;
        if (p0 * C < nlen) {
            const size_t n = pe == P ? nlen - p0 * C : min_size((pe - p0) * C, nlen - p0 * C);
            clnorm_host_prefetch_in(nx, sizeof(HA), p0 * C, n);
            clnorm_host_prefetch_in(ndy, sizeof(HA), p0 * C, n);
        }
        HN(rows_grad_sums)(C, pe - p0, x + p0 * C, b->scc, b->kc, b->mc, b->rc, dz + p0 * C,
                           b->wb1, b->wb2);
        for (size_t c = 0; c < C; c++) {
            gn_kahan_wide(&b->w1[c], &b->wc1[c], b->wb1[c]);
            gn_kahan_wide(&b->w2[c], &b->wc2[c], b->wb2[c]);
        }
    }
    for (size_t c = 0; c < C; c++) {
        job->tdz[row + c] = b->w1[c];
        job->tdzx[row + c] = b->w2[c];
    }
}

/* dx = rstd * (dz * gamma - mean(g) - xhat * mean(g * xhat)) of the unit. In place (dx is x
 * or dy), each element of x and dy is read before the same element of dx is written. */
static HINLINE void HN(bwd_dx)(const HN(job) *job, HN(bufs) *b, const gn_unit *u, size_t len,
                               size_t xoff, const HA *x, const HA *dz)
{
    const gn_geom *q = &job->q;
    const clnorm_desc *d = job->d;
    void *dx = job->a->p[CLNORM_ARG_DX];
    HA *o = HN(row_out)(b->out, d->dtype, dx, xoff);
    const HA *gam = HN(gam_of)(job, u->n);
    if (q->nhwc) {
        const size_t C = q->C;
        HA *rs = b->s1, *mg = b->s2, *mgx = b->c1; /* per channel: its group's */
        for (size_t g = 0; g < q->G; g++) {
            const size_t gi = u->n * q->G + g;
            for (size_t c = g * q->cpg; c < (g + 1) * q->cpg; c++) {
                rs[c] = job->r[gi] * job->sc[gi];
                mg[c] = job->mg[gi];
                mgx[c] = job->mgx[gi];
            }
        }
        for (size_t p = 0; p < len / C; p++)
            HN(row_dx)(C, x + p * C, b->scc, b->kc, b->mc, b->rc, dz + p * C, gam, rs, mg,
                       mgx, o + p * C);
    } else {
        const size_t gi = u->n * q->G + u->g, P = u->p1 - u->p0;
        const HA rs = job->r[gi] * job->sc[gi], mg = job->mg[gi], mgx = job->mgx[gi];
        for (size_t c = u->c0; c < u->c1; c++) {
            const HA gm = gam[c];
            for (size_t i = (c - u->c0) * P; i < (c - u->c0 + 1) * P; i++)
                o[i] = rs * ((dz[i] * gm - mg) - b->dev[i] * mgx);
        }
    }
    HN(out_done)(o, d->dtype, dx, xoff, len);
}

/* mean(g) and mean(g * xhat) of group (n, g), g = dz * gamma_c, from the channel tables:
 * each channel's sums over its position blocks in double, weighted by gamma, added in channel
 * order. One function for both callers (a fused unit, HN(reduce_grads)): the same bits. */
static HINLINE void HN(group_means)(const HN(job) *job, size_t n, size_t g)
{
    const gn_geom *q = &job->q;
    if (job->global)
        return; /* constants: mg and mgx stay 0 (HN(run)) */
    const HA *gam = HN(gam_of)(job, n);
    double sg = 0, sgx = 0;
    for (size_t c = g * q->cpg; c < (g + 1) * q->cpg; c++) {
        double z = 0, zx = 0;
        for (size_t pb = 0; pb < q->npb; pb++) {
            z += job->tdz[(n * q->npb + pb) * q->C + c];
            zx += job->tdzx[(n * q->npb + pb) * q->C + c];
        }
        sg += (double)gam[c] * z;
        sgx += (double)gam[c] * zx;
    }
    job->mg[n * q->G + g] = (HA)(sg / (double)q->L);
    job->mgx[n * q->G + g] = (HA)(sgx / (double)q->L);
}

static HINLINE void HN(backward_unit)(const HN(job) *job, HN(bufs) *b, const gn_unit *u,
                                      size_t unit, size_t start, size_t end, int wide)
{
    const gn_geom *q = &job->q;
    const clnorm_desc *d = job->d;
    size_t len, xoff, yoff;
    if (q->nhwc) {
        len = (u->p1 - u->p0) * q->C;
        xoff = u->n * d->x_stride + u->p0 * q->C;
        yoff = u->n * d->y_stride + u->p0 * q->C;
    } else {
        len = (u->c1 - u->c0) * (u->p1 - u->p0);
        xoff = HN(run_off)(q, d->x_stride, u);
        yoff = HN(run_off)(q, d->y_stride, u);
    }
    const HA *x, *dz;
    void *dx = job->a->p[CLNORM_ARG_DX];
    /* NCHW: dx's lines asked for before the unit's reads (clnorm_host_prefetch_out), 3-6%
     * off 64x512x4x4 and 8x320x32x32; NHWC's units were 4-5% slower with it */
    if (dx && !q->nhwc && (job->phase == GN_DX || q->fused))
        clnorm_host_prefetch_out(dx, clnorm_elem_size(d->dtype), xoff, len);
    /* whether the unit stages its float xhat (b->dev): for dz through the SiLU, or dx */
    const int dev = job->silu || job->phase == GN_DX || (q->fused && dx);
    HN(bwd_stage)(job, b, u, len, xoff, yoff, dev, wide, &x, &dz);
    if (job->phase == GN_DX) {
        HN(bwd_dx)(job, b, u, len, xoff, x, dz);
        return;
    }
    if (job->sums) {
        /* NHWC: the chunk's next unit's x and dy, where the tensors are read in place */
        const HA *nx = NULL, *ndy = NULL;
        size_t nlen = 0;
        if (q->nhwc && d->dtype == HNATIVE && unit + 1 < end) {
            nx = (const HA *)job->a->p[CLNORM_ARG_X] +
                 gn_nhwc_unit_span(q, unit + 1, d->x_stride, &nlen);
            ndy = (const HA *)job->a->p[CLNORM_ARG_DY] +
                  gn_nhwc_unit_span(q, unit + 1, d->y_stride, &nlen);
        }
        HN(bwd_sums)(job, b, u, x, dz, dev, unit == start, nx, ndy, nlen);
    }
    if (!q->fused || !job->a->p[CLNORM_ARG_DX])
        return;
    /* every group of the unit is whole in it: its means, then dx, from what is staged */
    for (size_t g = q->nhwc ? 0 : u->g; g < (q->nhwc ? q->G : u->g + 1); g++)
        HN(group_means)(job, u->n, g);
    HN(bwd_dx)(job, b, u, len, xoff, x, dz);
}

/* Whether unit u's SiLU backward takes its dz in double: one of its channels' rstd * |gamma|
 * is at least CLNORM_GN_SILU_WIDE (HN(silu_wide)). An NHWC unit has every channel of its
 * sample, an NCHW one channels [c0, c1) of group g. */
static HINLINE int HN(unit_wide)(const HN(job) *job, const gn_unit *u)
{
    const gn_geom *q = &job->q;
    if (!job->silu)
        return 0;
    const HA *gam = HN(gam_of)(job, u->n);
    int wide = 0;
    for (size_t g = q->nhwc ? 0 : u->g; g < (q->nhwc ? q->G : u->g + 1); g++) {
        const size_t gi = u->n * q->G + g;
        const size_t c0 = q->nhwc ? g * q->cpg : u->c0, c1 = q->nhwc ? c0 + q->cpg : u->c1;
        for (size_t c = c0; c < c1; c++)
            wide |= HN(silu_wide)(job->r[gi] * job->sc[gi], gam[c]);
    }
    return wide;
}

/* HN(backward_unit) of a small group whose dz is in double, out of HN(small_groups_run). The
 * callers choose, per unit (HN(unit_wide)): with the choice and the double loops inside the
 * inlined stage (HN(bwd_stage)), the small groups' SiLU backward ran 1.1x slower where no
 * channel was wide (2x64x8x8 and 4x32x32x32 NCHW, clnorm-lib-ab); so, as before. */
HPHASE static void HN(backward_unit_wide)(const HN(job) *job, HN(bufs) *b, const gn_unit *u,
                                          size_t i)
{
    HN(backward_unit)(job, b, u, i, i, i + 1, 1);
}

/* Channel c's gamma and beta for batch entry n in double: with a modulation, gamma (1 + scale)
 * and beta (1 + scale) + shift folded in double from the arguments (HN(fold_mod)'s float fold
 * rounds them, which the cancellation in dx multiplies as any other rounding). */
static void HN(gam_bet_w)(const HN(job) *job, size_t n, size_t c, double *gm, double *bt)
{
    if (!job->mstr) {
        *gm = (double)job->gam[c];
        *bt = (double)job->bet[c];
        return;
    }
    const clnorm_desc *d = job->d;
    const clnorm_dtype pt = clnorm_param_dtype(d->dtype);
    const void *scale = job->a->p[CLNORM_ARG_SCALE], *shift = job->a->p[CLNORM_ARG_SHIFT];
    const size_t at = n / job->T * d->mod_stride + c;
    const double m = scale && (d->flags & CLNORM_SCALE) ? 1.0 + clnorm_elem_load(pt, scale, at)
                                                        : 1.0;
    *gm = (double)job->gam0[c] * m;
    *bt = (double)job->bet0[c] * m +
          (shift && (d->flags & CLNORM_SHIFT) ? clnorm_elem_load(pt, shift, at) : 0.0);
}

/* Small NCHW group u's float32 backward in double, rounded once into dx, where the group is
 * wide (HN(group_wide)): its statistics again from x (two passes), dz (through the SiLU),
 * each channel's sums of dz and dz * xhat into the tables, mean(g) and mean(g * xhat), then
 * dx = rstd * ((dz * gamma - mean(g)) - xhat * mean(g * xhat)). Small groups take their
 * backward right after their statistics (HN(small_groups_run)), so that by the time a wide
 * one is found others may have written their dx over x or dy (in place): the call cannot
 * start again in double as the other geometries' calls do (HN(run)). Sums in lanes
 * (gn_lanes_dot_w). In place, the group is read whole before its dx is written. */
HPHASE static void HN(group_bwd_w)(const HN(job) *job, HN(bufs) *b, const gn_unit *u)
{
    const gn_geom *q = &job->q;
    const clnorm_desc *d = job->d;
    const size_t L = q->L, P = q->hw, row = u->n * q->npb * q->C;
    const size_t xoff = HN(run_off)(q, d->x_stride, u), yoff = HN(run_off)(q, d->y_stride, u);
    const HA *x = HN(row_in)(b->xa, d->dtype, job->a->p[CLNORM_ARG_X], xoff, L);
    const HA *dy = HN(row_in)(b->dya, d->dtype, job->a->p[CLNORM_ARG_DY], yoff, L);
    double xh[GN_SMALL_ELEMS], dz[GN_SMALL_ELEMS]; /* x, then xhat; dz */
    double gw[GN_SMALL_ELEMS]; /* per channel of the group: its gamma (HN(gam_bet_w)) */
    for (size_t i = 0; i < L; i++)
        xh[i] = (double)x[i];
    const double mean = gn_lanes_dot_w(xh, NULL, L) / (double)L;
    for (size_t i = 0; i < L; i++)
        xh[i] -= mean;
    const double r = 1.0 / sqrt(gn_lanes_dot_w(xh, xh, L) / (double)L + d->eps);
    for (size_t i = 0; i < L; i++)
        xh[i] *= r;
    double sg = 0, sgx = 0;
    for (size_t c = u->c0; c < u->c1; c++) {
        const size_t i0 = (c - u->c0) * P;
        double bt;
        HN(gam_bet_w)(job, u->n, c, &gw[c - u->c0], &bt);
        const double gm = gw[c - u->c0];
        if (job->silu)
            for (size_t i = i0; i < i0 + P; i++)
                dz[i] = gn_silu_grad_w((double)dy[i], xh[i] * gm + bt);
        else
            for (size_t i = i0; i < i0 + P; i++)
                dz[i] = (double)dy[i];
        const double sz = gn_lanes_dot_w(dz + i0, NULL, P);
        const double szx = gn_lanes_dot_w(dz + i0, xh + i0, P);
        job->tdz[row + c] = sz;
        job->tdzx[row + c] = szx;
        sg += gm * sz;
        sgx += gm * szx;
    }
    void *dx = job->a->p[CLNORM_ARG_DX];
    if (!dx)
        return;
    const double mg = sg / (double)L, mgx = sgx / (double)L;
    HA *o = HN(row_out)(b->out, d->dtype, dx, xoff);
    for (size_t c = u->c0; c < u->c1; c++) {
        const double gm = gw[c - u->c0];
        for (size_t i = (c - u->c0) * P; i < (c - u->c0 + 1) * P; i++)
            o[i] = (HA)(r * ((dz[i] * gm - mg) - xh[i] * mgx));
    }
    HN(out_done)(o, d->dtype, dx, xoff, L);
}

/* Groups per batch of HN(small_groups). */
#define GN_SMALL_BATCH 32

/* Units [i0, i1) of a statistics phase whose units are small whole NCHW groups (at most
 * GN_SMALL_ELEMS): what HN(nchw_moments) does for each, without its per-unit work that does
 * not depend on the group (the unit's geometry, dividing; the shift's element positions;
 * Chan's merge of one block), which took 400 instructions per group, 50 ns, where a group of
 * 1x1 InstanceNorm has one element. The groups go in batches: their moments, then their rstd
 * in one loop (a division and a square root in double each, which a group at a time waited
 * for), then the forward's outputs, or the backward's sums and dx (HN(backward_unit); with
 * job->bwd unset, a backward that only needs the statistics stops there).
 * The statistics are HN(moments)' of one block and HN(set_stats)': the same bits. Inlined
 * into two phase functions (HN(chunk)). */
static HINLINE void HN(small_groups_run)(const HN(job) *job, HN(bufs) *b, size_t i0, size_t i1)
{
    const gn_geom *q = &job->q;
    const size_t L = q->L, G = q->G;
    const double eps = (double)job->eps;
    size_t n0 = i0 / G, g0 = i0 % G; /* the batch's first group */
    for (size_t j0 = i0; j0 < i1; j0 += GN_SMALL_BATCH) {
        const size_t nb = i1 - j0 < GN_SMALL_BATCH ? i1 - j0 : GN_SMALL_BATCH;
        double mean[GN_SMALL_BATCH], var[GN_SMALL_BATCH], r[GN_SMALL_BATCH];
        size_t n = n0, g = g0;
        for (size_t k = 0; k < nb; k++) {
            const size_t i = j0 + k;
            const gn_unit u = gn_whole_group(q, n, g);
            const HA *x = HN(nchw_x)(job, b, &u, L);
            const HA K = HN(row_shift)(x, L);
            const HA S = HN(block_sum)(x, L, K);
            const HA M2 = HN(block_sq)(x, L, K, S / (HA)L);
            job->K[i] = K;
            mean[k] = (double)(S / (HA)L);
            var[k] = (double)(M2 / (HA)L);
            if (++g == G) {
                g = 0;
                n++;
            }
        }
        for (size_t k = 0; k < nb; k++)
            r[k] = 1.0 / sqrt(var[k] + eps);
        n = n0;
        g = g0;
        for (size_t k = 0; k < nb; k++) {
            const size_t i = j0 + k;
            HN(set_stats_r)(job, n, g, i, job->K[i], mean[k], var[k], r[k]);
            if (job->fwd) {
                const gn_unit u = gn_whole_group(q, n, g);
                HN(store_stats)(job, i);
                HN(nchw_apply)(job, b, &u, i, i1);
            } else if (job->bwd) { /* a whole group is a fused unit of the backward */
                const gn_unit u = gn_whole_group(q, n, g);
                if (HN(group_wide)(job, n, g))
                    HN(group_bwd_w)(job, b, &u);
                else if (HN(unit_wide)(job, &u))
                    HN(backward_unit_wide)(job, b, &u, i);
                else
                    HN(backward_unit)(job, b, &u, i, i, i + 1, 0);
            }
            if (++g == G) {
                g = 0;
                n++;
            }
        }
        n0 = n;
        g0 = g;
    }
}

HPHASE static void HN(small_groups)(const HN(job) *job, HN(bufs) *b, size_t i0, size_t i1)
{
    HN(small_groups_run)(job, b, i0, i1);
}

HPHASE_PLAIN_BWD static void HN(small_groups_plain_bwd)(const HN(job) *job, HN(bufs) *b,
                                                        size_t i0, size_t i1)
{
    HN(small_groups_run)(job, b, i0, i1);
}

/* The other phases: a loop over units [i0, i1), `visit` on each unit u (index i) of the
 * call, one function each (`phase`, HPHASE: compiled per ISA, the phase's code inlined into
 * it; host_simd.h says why not one function for all). */
#define GN_UNITS_PHASE(phase, name, visit)                                                  \
    phase static void HN(name)(const HN(job) *job, HN(bufs) *b, size_t i0, size_t i1)       \
    {                                                                                       \
        for (size_t i = i0; i < i1; i++) {                                                  \
            gn_unit u;                                                                      \
            gn_unit_of(&job->q, i, &u);                                                     \
            visit;                                                                          \
        }                                                                                   \
    }
GN_UNITS_PHASE(HPHASE, nchw_moments_loop, HN(nchw_moments)(job, b, &u, i, i1))
GN_UNITS_PHASE(HPHASE, nhwc_moments_loop, HN(nhwc_moments)(job, b, &u, i, i0, i1))
GN_UNITS_PHASE(HPHASE, nchw_apply_loop, HN(nchw_apply)(job, b, &u, i, i1))
GN_UNITS_PHASE(HPHASE, nhwc_apply_loop, HN(nhwc_apply)(job, b, &u))
GN_UNITS_PHASE(HPHASE, backward_loop,
               HN(backward_unit)(job, b, &u, i, i0, i1, HN(unit_wide)(job, &u)))
GN_UNITS_PHASE(HPHASE_PLAIN_BWD, nchw_plain_backward_loop,
               HN(backward_unit)(job, b, &u, i, i0, i1, 0))
#undef GN_UNITS_PHASE

/* Chunk c of the job's phase: its units, with the scratch of thread `worker`. The NCHW
 * backward without SiLU, its small groups' (in the statistics phase) and its units', runs in
 * phase functions of its own, compiled as HPHASE_PLAIN_BWD says: in float without the
 * AVX-512 clone (HPHASE_AVX2), whose AVX2 clone ran that backward 1.08-1.27x faster on the
 * AMD EPYC VM (groups of 512 to 10240 elements), where with the SiLU the AVX-512 clone is up
 * to 1.22x faster and in NHWC up to 1.3x (bench/RESULTS.md, "The row host loop without its
 * AVX-512 clone"). */
static void HN(chunk)(void *arg, size_t c, unsigned worker)
{
    const HN(job) *job = arg;
    const gn_geom *q = &job->q;
    HA *s = job->scratch + (size_t)worker * job->per_worker;
    const size_t ul = q->ulen, C = q->C;
    HN(bufs) b = {s, s + ul, s + 2 * ul, s + 3 * ul, s + 4 * ul,
                  s + 5 * ul, s + 5 * ul + C, s + 5 * ul + 2 * C, s + 5 * ul + 3 * C,
                  s + 5 * ul + 4 * C, s + 5 * ul + 5 * C, s + 5 * ul + 6 * C,
                  s + 5 * ul + 7 * C, s + 5 * ul + 8 * C, s + 5 * ul + 9 * C,
                  NULL, NULL, NULL, NULL, NULL, NULL};
    if (job->wscratch) { /* a backward's */
        double *w = job->wscratch + (size_t)worker * GN_WIDE_BUFS * C;
        b.w1 = w;
        b.wc1 = w + C;
        b.w2 = w + 2 * C;
        b.wc2 = w + 3 * C;
        b.wb1 = w + 4 * C;
        b.wb2 = w + 5 * C;
    }
    const size_t u0 = gn_chunk_start(q, c), u1 = gn_chunk_start(q, c + 1);
    const int plain_bwd = !q->nhwc && !job->silu; /* in a backward: HPHASE_PLAIN_BWD's */
    switch (job->phase) {
    case GN_MOMENTS:
        if (gn_small_path(q) && job->bwd && plain_bwd)
            HN(small_groups_plain_bwd)(job, &b, u0, u1);
        else if (gn_small_path(q))
            HN(small_groups)(job, &b, u0, u1);
        else if (q->nhwc)
            HN(nhwc_moments_loop)(job, &b, u0, u1);
        else
            HN(nchw_moments_loop)(job, &b, u0, u1);
        break;
    case GN_APPLY:
        if (q->nhwc)
            HN(nhwc_apply_loop)(job, &b, u0, u1);
        else
            HN(nchw_apply_loop)(job, &b, u0, u1);
        break;
    default:
        if (plain_bwd)
            HN(nchw_plain_backward_loop)(job, &b, u0, u1);
        else
            HN(backward_loop)(job, &b, u0, u1);
        break;
    }
#if HSTREAM
    if (job->stream)
        clnorm_host_stream_fence();
#endif
}

/* The statistics of every group from the moment entries, in entry order (the calling
 * thread, between the phases); the forward stores them. */
static void HN(merge_stats)(const HN(job) *job, int store)
{
    const gn_geom *q = &job->q;
    for (size_t n = 0; n < q->n; n++) {
        for (size_t g = 0; g < q->G; g++) {
            const size_t gi = n * q->G + g;
            double cnt = 0, mean = 0, M2 = 0;
            for (size_t j = 0; j < q->J; j++) {
                const size_t e = q->nhwc ? (n * q->npb + j) * q->G + g : gi * q->J + j;
                gn_merge(&cnt, &mean, &M2, job->ent[3 * e], job->ent[3 * e + 1],
                         job->ent[3 * e + 2]);
            }
            HN(set_stats)(job, n, g, gi, HN(group_shift)(job, n, g), mean, M2 / cnt);
            if (store)
                HN(store_stats)(job, gi);
        }
        if (job->tk)
            HN(nhwc_table)(job, n);
    }
}

/* dscale and dshift of modulation sample s from its entries' sums of dz * xhat (ax) and of
 * dz (az): dscale = gamma_c * ax + beta_c * az (the sum of dz * z), dshift = az, rounded
 * once when stored. */
static void HN(store_mod)(const HN(job) *job, size_t s, const double *ax, const double *az)
{
    const clnorm_desc *d = job->d;
    const clnorm_dtype pt = clnorm_param_dtype(d->dtype);
    void *dscale = job->a->p[CLNORM_ARG_DSCALE], *dshift = job->a->p[CLNORM_ARG_DSHIFT];
    for (size_t c = 0; c < d->cols; c++) {
        if (dscale)
            clnorm_elem_store(pt, dscale, s * d->mod_stride + c,
                              (double)job->gam0[c] * ax[c] + (double)job->bet0[c] * az[c]);
        if (dshift)
            clnorm_elem_store(pt, dshift, s * d->mod_stride + c, az[c]);
    }
}

/* The backward's parameter gradients from the channel tables, in table order (the calling
 * thread): per sample, each channel's sums of dz and dz * xhat over its position blocks (sz,
 * sx); dgamma (tg) and dbeta (tb) add those up over the samples, in double, rounded once when
 * stored. Modulated, dz is the gradient of u: dgamma and dbeta add them weighted by the
 * entry's 1 + scale, and with `mod` each modulation sample's entries add up into ax and az
 * for its dscale and dshift (HN(store_mod)). With `means`, also every group's mean(g) and
 * mean(g * xhat) for the dx phase. */
static void HN(reduce_grads)(const HN(job) *job, int means, int mod, double *tg, double *tb,
                             double *sz, double *sx, double *ax, double *az)
{
    const gn_geom *q = &job->q;
    const size_t C = q->C;
    for (size_t c = 0; c < C; c++)
        tg[c] = tb[c] = 0;
    for (size_t c = 0; mod && c < C; c++)
        ax[c] = az[c] = 0;
    for (size_t n = 0; n < q->n; n++) {
        for (size_t c = 0; c < C; c++)
            sz[c] = sx[c] = 0;
        for (size_t pb = 0; pb < q->npb; pb++) {
            const double *tz = job->tdz + (n * q->npb + pb) * C;
            const double *tx = job->tdzx + (n * q->npb + pb) * C;
            for (size_t c = 0; c < C; c++) {
                sz[c] += tz[c];
                sx[c] += tx[c];
            }
        }
        for (size_t g = 0; means && g < q->G; g++)
            HN(group_means)(job, n, g);
        if (job->ms) { /* weighted by the entry's 1 + scale */
            const HA *ms = job->ms + n / job->T * C;
            for (size_t c = 0; c < C; c++) {
                tg[c] += (double)ms[c] * sx[c];
                tb[c] += (double)ms[c] * sz[c];
            }
        } else {
            for (size_t c = 0; c < C; c++) {
                tg[c] += sx[c];
                tb[c] += sz[c];
            }
        }
        if (mod) {
            for (size_t c = 0; c < C; c++) {
                ax[c] += sx[c];
                az[c] += sz[c];
            }
            if ((n + 1) % job->T == 0) { /* the sample's last entry */
                HN(store_mod)(job, n / job->T, ax, az);
                for (size_t c = 0; c < C; c++)
                    ax[c] = az[c] = 0;
            }
        }
    }
}

/* A modulated call's gamma and beta, per modulation sample s of the B: gamma_c * (1 +
 * scale[s, c]) and beta_c * (1 + scale[s, c]) + shift[s, c], the kernels' fold
 * (gn_fold_mod): u = xhat * gam + bet, y = u or silu(u), and the backward's formulas for dz,
 * the group means and dx hold with them in place of gamma and beta. Into mem: the folded
 * gamma and beta, and with CLNORM_SCALE each sample's 1 + scale (HN(reduce_grads)), B x C
 * each. */
static void HN(fold_mod)(HN(job) *job, HA *mem, size_t B)
{
    const clnorm_desc *d = job->d;
    const clnorm_dtype pt = clnorm_param_dtype(d->dtype);
    const void *scale = job->a->p[CLNORM_ARG_SCALE], *shift = job->a->p[CLNORM_ARG_SHIFT];
    const size_t C = d->cols;
    HA *gam = mem, *bet = mem + B * C, *ms = mem + 2 * B * C;
    for (size_t s = 0; s < B; s++) {
        HA *gs = gam + s * C, *bs = bet + s * C, *m = ms + s * C;
        for (size_t c = 0; c < C; c++) {
            gs[c] = job->gam0[c];
            bs[c] = job->bet0[c];
        }
        if (scale && (d->flags & CLNORM_SCALE)) {
            HN(load)(m, pt, scale, s * d->mod_stride, C);
            for (size_t c = 0; c < C; c++) {
                m[c] = (HA)1 + m[c];
                gs[c] *= m[c];
                bs[c] *= m[c];
            }
        }
        if (shift && (d->flags & CLNORM_SHIFT)) {
            for (size_t c = 0; c < C; c++)
                bs[c] += (HA)clnorm_elem_load(pt, shift, s * d->mod_stride + c);
        }
    }
    job->gam = gam;
    job->bet = bet;
    job->ms = scale && (d->flags & CLNORM_SCALE) ? ms : NULL;
    job->T = B && d->rows ? d->rows / B : 1;
    job->mstr = C;
}

clnorm_status HN(run)(const clnorm_desc *d, clnorm_direction dir, const clnorm_host_ptrs *a,
                      clnorm_ctx *ctx)
{
    HN(job) job = {.d = d, .a = a, .silu = (d->flags & CLNORM_SILU) != 0,
                   .global = (d->flags & CLNORM_USE_GLOBAL_STATS) != 0};
    gn_geometry(d, dir, &job.q);
    const gn_geom *q = &job.q;
    const size_t C = q->C, NG = q->n * q->G;
    /* eps in the arithmetic: as given in double (the float32 backward of small groups runs
     * in double, gn_wide), else rounded to float as the kernels take it */
    job.eps = HNATIVE == CLNORM_F64 ? (HA)d->eps : (HA)clnorm_arith_eps(d);
    const int fwd = dir == CLNORM_FORWARD;
#if HSTREAM
    /* y of a float32 forward of at least HSTREAM_BYTES through streaming stores: NCHW each
     * chunk's units in turn with the next one's x prefetched (HN(nchw_apply_run)), NHWC a
     * unit's rows in blocks staged in L1 (HN(nhwc_apply)) */
    job.stream = fwd && d->dtype == CLNORM_F32 &&
                 q->n * C * q->hw >= HSTREAM_BYTES / sizeof(float) && clnorm_host_have_avx();
    if (job.stream && !q->nhwc)
        gn_stream_chunks(&job.q);
#endif
    /* statistics given: the backward's saved ones, or precomputed ones in either direction */
    const int given = (!fwd || job.global) && a->p[CLNORM_ARG_RSTD] != NULL;
    const int moments = !given, separate = moments && !q->fused;
    /* a per-sample modulation: gamma and beta folded per sample (HN(fold_mod)); dscale and
     * dshift asked for (mod) */
    const int modulated = (d->flags & (CLNORM_SCALE | CLNORM_SHIFT)) != 0;
    const int mod = !fwd && (a->p[CLNORM_ARG_DSCALE] || a->p[CLNORM_ARG_DSHIFT]);
    const size_t B = modulated ? d->samples : 0;
    const int grads = !fwd && (a->p[CLNORM_ARG_DGAMMA] || a->p[CLNORM_ARG_DBETA] || mod);
    const int dx = !fwd && a->p[CLNORM_ARG_DX] != NULL;
    job.sums = grads || !job.global;
    clnorm_pool *pool = q->nchunks > 1 ? clnorm_host_pool(ctx) : NULL;
    const size_t width = clnorm_pool_width(pool);
    /* NHWC's statistics and the backward's sums: chunks of a few units, each unit asking for
     * the next one (a forward from precomputed statistics is the apply alone) */
    if ((moments || !fwd) && q->nhwc && !q->fused)
        gn_nhwc_chunks(&job.q, width);
    gn_balance(&job.q, width);
    job.per_worker = 5 * q->ulen + 10 * C;
    /* HA: gamma, beta, group statistics (4) and means (2), the apply's tables, scratch;
     * double: moment entries, reduce_grads' four (six) rows of C, the backward's sums tables
     * (2) and its workers' sums */
    const size_t ntab = fwd ? 0 : q->n * q->npb * C;
    const size_t napply = fwd && q->nhwc ? q->n * C : 0; /* the apply's tables */
    const size_t nwide = fwd ? 0 : width * GN_WIDE_BUFS * C;
    const size_t nha = 2 * C + 6 * NG + 3 * napply + width * job.per_worker + 3 * B * C;
    const size_t ndbl = (separate ? 3 * NG * q->J : 0) + (mod ? 6 : 4) * C + 2 * ntab + nwide;
    if (nha > SIZE_MAX / 4 / sizeof(HA) || ndbl > SIZE_MAX / 4 / sizeof(double))
        return CLNORM_OUT_OF_MEMORY;
    char *mem = malloc(ndbl * sizeof(double) + nha * sizeof(HA));
    if (!mem)
        return CLNORM_OUT_OF_MEMORY;
    double *dbl = (double *)(void *)mem;
    HA *ha = (HA *)(void *)(mem + ndbl * sizeof(double));
    job.ent = dbl;
    double *tg = dbl + (separate ? 3 * NG * q->J : 0), *tb = tg + C;
    job.tdz = tg + (mod ? 6 : 4) * C;
    job.tdzx = job.tdz + ntab;
    job.wscratch = nwide ? job.tdzx + ntab : NULL;
    job.gam = ha;
    job.bet = ha + C;
    job.K = ha + 2 * C;
    job.m = job.K + NG;
    job.r = job.m + NG;
    job.sc = job.r + NG;
    job.mg = job.sc + NG;
    job.mgx = job.mg + NG;
    job.scratch = job.mgx + NG + 3 * napply;
    if (napply) {
        job.tk = job.mgx + NG;
        job.ta = job.tk + napply;
        job.tb = job.ta + napply;
    }
    const clnorm_dtype pt = clnorm_param_dtype(d->dtype);
    if (a->p[CLNORM_ARG_GAMMA])
        HN(load)(job.gam, pt, a->p[CLNORM_ARG_GAMMA], 0, C);
    else
        for (size_t c = 0; c < C; c++)
            job.gam[c] = 1;
    if (a->p[CLNORM_ARG_BETA])
        HN(load)(job.bet, pt, a->p[CLNORM_ARG_BETA], 0, C);
    else
        for (size_t c = 0; c < C; c++)
            job.bet[c] = 0;
    job.gam0 = job.gam;
    job.bet0 = job.bet;
    job.T = 1;
    if (modulated)
        HN(fold_mod)(&job, job.scratch + width * job.per_worker, B);

    for (size_t i = 0; job.global && i < NG; i++)
        job.mg[i] = job.mgx[i] = 0; /* HN(group_means) */
    if (given) {
        /* The saved statistics: K = 0, m = mean, as the kernels take them. Precomputed ones
         * in the forward (the apply alone): K = mean, m = 0, the same xhat bits, so that
         * NHWC's table takes x - mean first as the kernels' does (gn_nhwc_stats_table). */
        HA *mean = fwd ? job.K : job.m, *zero = fwd ? job.m : job.K;
        HN(load)(job.r, pt, a->p[CLNORM_ARG_RSTD], 0, NG);
        if (a->p[CLNORM_ARG_MEAN])
            HN(load)(mean, pt, a->p[CLNORM_ARG_MEAN], 0, NG);
        for (size_t i = 0; i < NG; i++) {
            if (!a->p[CLNORM_ARG_MEAN])
                mean[i] = 0;
            zero[i] = 0;
            job.sc[i] = 1;
        }
        if (fwd) {
            for (size_t n = 0; job.tk && n < q->n; n++)
                HN(nhwc_table)(&job, n);
            job.phase = GN_APPLY;
            clnorm_pool_run(pool, q->nchunks, HN(chunk), &job);
        }
    } else {
        job.phase = GN_MOMENTS;
        job.fwd = fwd;
        job.bwd = !fwd && (grads || dx) && gn_small_path(q);
        clnorm_pool_run(pool, q->nchunks, HN(chunk), &job);
        if (separate) {
            HN(merge_stats)(&job, fwd);
            if (fwd) {
                job.phase = GN_APPLY;
                clnorm_pool_run(pool, q->nchunks, HN(chunk), &job);
            }
        }
    }
    /* A backward of a wide group (HN(group_wide)) in double whole, nothing written yet (the
     * float loop's small groups took theirs, in double where wide, with their statistics:
     * job.bwd). Not with precomputed statistics: dx = rstd * g has no difference to cancel. */
    if (!fwd && !job.bwd && !job.global && (grads || dx) && HN(call_wide)(&job)) {
        free(mem);
        return gn_run_d(d, dir, a, ctx);
    }
    if (!fwd && (grads || dx)) {
        /* a fused geometry's units finish their dx in the sums phase; small NCHW groups
         * have had theirs with their statistics (job.bwd) */
        job.phase = GN_GRAD_SUMS;
        /* (without sums, precomputed statistics' dx alone: a fused unit's dx runs in this
         * phase, the others' in GN_DX) */
        if (!job.bwd && (job.sums || q->fused))
            clnorm_pool_run(pool, q->nchunks, HN(chunk), &job);
        if (job.sums)
            HN(reduce_grads)(&job, dx && !q->fused, mod, tg, tb, tb + C, tb + 2 * C,
                             tb + 3 * C, tb + 4 * C);
        for (size_t s = 0; mod && q->n == 0 && s < B; s++) /* an empty batch: zeros */
            HN(store_mod)(&job, s, tb + 3 * C, tb + 4 * C);
        if (dx && !q->fused) {
            job.phase = GN_DX;
            clnorm_pool_run(pool, q->nchunks, HN(chunk), &job);
        }
        for (size_t c = 0; c < C; c++) {
            if (a->p[CLNORM_ARG_DGAMMA])
                clnorm_elem_store(pt, a->p[CLNORM_ARG_DGAMMA], c, tg[c]);
            if (a->p[CLNORM_ARG_DBETA])
                clnorm_elem_store(pt, a->p[CLNORM_ARG_DBETA], c, tb[c]);
        }
    }
    free(mem);
    return CLNORM_OK;
}
