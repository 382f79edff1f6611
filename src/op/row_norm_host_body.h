/*
 * row_norm_host_body.h - the row family's host loop in one arithmetic type, included by
 * row_norm_host.c once per type with
 *   HA       the arithmetic type (float for f32, f16 and bf16 storage; double for f64),
 *   HNATIVE  the storage type that is HA itself (its rows are read and written in place),
 *   HF16C    1 when float16 rows may go through host_simd.h's F16C conversions,
 *   HSTREAM  1 when float32 outputs may go through host_simd.h's streaming stores, and
 *   HN(n)    the name n of this instance's functions.
 * The numerics are the kernels' (kernels/row_stats.cl): the row shifted as row_shift does
 * (the median of its first three elements in long rows, else its first),
 * its moments in blocks of HBLOCK elements summed in HLANES independent lanes, each block's
 * own two-pass M2 merged with Chan's update, Kahan-compensated across blocks, a rescaled
 * redo when the squares overflow. Every loop runs over contiguous arrays of HA, so the
 * compiler vectorizes it; the storage types are converted on the way in and out.
 */

#include "host_elem_body.h"

/* One thread's buffers (each cols long; gam and bet are the job's, shared) and its current
 * row's inputs. */
typedef struct {
    const HA *x, *r;   /* the row of x and of the residual (row_in) */
    const HA *dyr;     /* backward: the row of dy (row_in) */
    HA *xa, *ra, *dya; /* their staging */
    HA *dev;           /* the row's deviations (x sc - K0) + (r sc - K1) */
    HA *out;           /* staging of the outputs */
    HA *gam, *bet;     /* gamma, beta (1 and 0 when absent): read only */
    HA *ops, *sh;      /* the sample's 1 + scale and shift (1 and 0 when absent) */
    HA *g, *xh;        /* backward: dy (1 + scale) gamma, xhat; forward: g stages the sum */
    HA *dsa;           /* backward: staging of dsum */
    HA omax;           /* the sample's largest |1 + scale| (read when scaled) */
} HN(bufs);

/* The deviations of the staged row at scale sc from the shift K. */
static HINLINE void HN(deviations)(const HN(bufs) *b, size_t cols, int residual, HA sc,
                                   const HA K[2])
{
    if (residual)
        for (size_t j = 0; j < cols; j++)
            b->dev[j] = (b->x[j] * sc - K[0]) + (b->r[j] * sc - K[1]);
    else
        for (size_t j = 0; j < cols; j++)
            b->dev[j] = b->x[j] * sc - K[0];
}

/* The variance of the staged row at scale sc, with its shift K and the mean m of its
 * deviations. RMSNorm: no shift, no mean, the mean of the squares. lazy (no residual, sc 1):
 * the deviations x - K[0] are formed where they are summed, from x itself, not stored in
 * b->dev: the same bits (x * 1 is x; the sums take each element as v - K), one pass over
 * the row fewer. Otherwise b->dev is filled. */
static HINLINE HA HN(var_at)(const HN(bufs) *b, size_t cols, int rms, int residual, HA sc, HA K[2],
                             HA *m, int lazy)
{
    /* the kernels' shift (row_shift): the median of the first three elements in long rows,
     * else the first (flags.h, CLNORM_SHIFT_MEDIAN_COLS) */
    const int med = cols >= CLNORM_SHIFT_MEDIAN_COLS;
    K[0] = rms ? 0 : (med ? HN(med3)(b->x[0], b->x[1], b->x[2]) : b->x[0]) * sc;
    K[1] = rms || !residual ? 0 : (med ? HN(med3)(b->r[0], b->r[1], b->r[2]) : b->r[0]) * sc;
    const HA *v = lazy ? b->x : b->dev;
    const HA Kv = lazy ? K[0] : 0;
    if (!lazy)
        HN(deviations)(b, cols, residual, sc, K);
    *m = 0;
    if (rms) {
        HA s = 0, c = 0;
        for (size_t i = 0; i < cols; i += HMOM_BLOCK) {
            const size_t len = cols - i < HMOM_BLOCK ? cols - i : HMOM_BLOCK;
            HN(kahan)(&s, &c, HN(block_sq)(v + i, len, Kv, 0));
        }
        return s / (HA)cols;
    }
    HA S, M2;
    HN(moments)(v, cols, Kv, &S, &M2);
    *m = S / (HA)cols;
    return M2 / (HA)cols;
}

/* The staged row's statistics: xhat_j = ((dev_j - *kd) - m) * r, the true rstd r * sc
 * (row_stats of kernels/row_stats.cl, rescaled when the squares overflow). Returns where the
 * deviations are read: x itself without a residual (*kd = K[0], subtracted as they are
 * read), else b->dev, filled (*kd = 0); a rescaled redo always fills b->dev. */
static HINLINE const HA *HN(row_stats)(const HN(bufs) *b, size_t cols, int rms, int residual,
                                       HA eps, HA K[2], HA *m, HA *r, HA *sc, HA *kd)
{
    *sc = 1;
    const int lazy = !residual;
    HA var = HN(var_at)(b, cols, rms, residual, 1, K, m, lazy);
    const HA *dev = lazy ? b->x : b->dev;
    *kd = lazy ? K[0] : 0;
    if (!isfinite(var)) {
        HA M = 0;
        for (size_t j = 0; j < cols; j++) {
            M = fmax(M, fabs(b->x[j]));
            if (residual)
                M = fmax(M, fabs(b->r[j]));
        }
        if (isfinite(M) && M > 0) {
            *sc = (HA)ldexp(1.0, -ilogb(M));
            var = HN(var_at)(b, cols, rms, residual, *sc, K, m, 0);
            dev = b->dev;
            *kd = 0;
        }
    }
    *r = (HA)1 / (HA)sqrt(var + eps * *sc * *sc);
    return dev;
}

/* Given statistics (CLNORM_USE_GLOBAL_STATS, or the backward's saved ones) enter as the
 * kernels take them (kernels/norm_apply.cl): K = 0, m = mean, so the sum of x and a residual
 * is formed first and the mean subtracted after. Returns the row's deviations: b->dev, that
 * sum, with a residual; without one x itself (b->x: x - 0 at scale 1), read where it is, so
 * no copy of the row is made (the forward 1.2-1.4x faster at 64x768-32x4096 on two cores). */
static HINLINE const HA *HN(given_stats)(const clnorm_desc *d, const HN(bufs) *b,
                                         const void *mean, const void *rstd, int rms,
                                         int residual, size_t row, HA *m, HA *r)
{
    const clnorm_dtype pt = clnorm_param_dtype(d->dtype);
    *m = 0;
    if (!rms)
        HN(load)(m, pt, mean, row, 1);
    HN(load)(r, pt, rstd, row, 1);
    if (!residual)
        return b->x;
    const HA K[2] = {0, 0};
    HN(deviations)(b, d->cols, residual, 1, K);
    return b->dev;
}

/* Row `row` of x (and the residual) as b->x (b->r). */
static HINLINE void HN(stage_row)(const clnorm_desc *d, const clnorm_host_ptrs *a, HN(bufs) *b,
                                  size_t row, int residual)
{
    b->x = HN(row_in)(b->xa, d->dtype, a->p[CLNORM_ARG_X], row * d->x_stride, d->cols);
    if (residual)
        b->r = HN(row_in)(b->ra, clnorm_residual_dtype(d), a->p[CLNORM_ARG_RESIDUAL],
                          row * d->residual_stride, d->cols);
}

/* A parameter vector (gamma, beta), or `absent` everywhere when it is not given. */
static HINLINE void HN(param)(HA *dst, const clnorm_desc *d, const void *p, size_t off, HA absent)
{
    if (p) {
        HN(load)(dst, clnorm_param_dtype(d->dtype), p, off, d->cols);
        return;
    }
    for (size_t j = 0; j < d->cols; j++)
        dst[j] = absent;
}

/* The modulation of sample s: b->ops = 1 + scale, b->sh = shift, b->omax the largest |1 +
 * scale| (HN(row_wide)). */
static HINLINE void HN(sample_mod)(const clnorm_desc *d, const clnorm_host_ptrs *a,
                                   HN(bufs) *b, size_t s)
{
    HN(param)(b->ops, d, a->p[CLNORM_ARG_SCALE], s * d->mod_stride, 0);
    HA most = 0;
    for (size_t j = 0; j < d->cols; j++) {
        b->ops[j] += 1;
        most = fabs(b->ops[j]) > most ? fabs(b->ops[j]) : most;
    }
    b->omax = most;
    HN(param)(b->sh, d, a->p[CLNORM_ARG_SHIFT], s * d->mod_stride, 0);
}

/* One job of the host loop: the call, its chunks of rows and their scratch (row_norm_host.c
 * cuts the rows into chunks by the shape alone, so the results never depend on how many
 * threads run them). */
typedef struct {
    const clnorm_op *op;
    const clnorm_desc *d;
    const clnorm_host_ptrs *a;
    clnorm_direction dir;
    int stream;    /* forward: y is float32 written with streaming stores (HSTREAM) */
    size_t chunk_rows, nchunks;
    HA *params;    /* gamma, beta as HA: loaded once, read by every thread */
    HA *scratch;   /* per thread: NBUF rows of staging (HN(bufs)) */
    double *cur;   /* backward with dscale/dshift, per thread: the current sample's 2 rows */
    double *sums;  /* backward, per chunk: acc_rows rows of double sums (HN(backward)) */
    double *carry; /* backward with dscale/dshift: 2 rows of zeros (HN(combine)) */
    HA gmax;       /* the largest |gamma| (HN(row_wide)) */
    unsigned char *ends; /* backward, per chunk: a sample ends within it */
    size_t acc_rows;
} HN(job);

enum { HN(NBUF) = 10 };

/* Rows [r0, r1) of the forward: a phase function (HPHASE_AVX2; host_simd.h says why each
 * direction is one function of its own, and why no AVX-512 clone). */
HPHASE_AVX2 static void HN(forward)(const HN(job) *job, HN(bufs) *b, size_t r0, size_t r1)
{
    const clnorm_op *op = job->op;
    const clnorm_desc *d = job->d;
    const clnorm_host_ptrs *a = job->a;
    const size_t cols = d->cols, T = d->samples ? d->rows / d->samples : 0; /* 0: no rows */
    const clnorm_dtype pt = clnorm_param_dtype(d->dtype), rt = clnorm_residual_dtype(d);
    const int rms = !op->has_mean, residual = op->residual;
    const int global = (d->flags & CLNORM_USE_GLOBAL_STATS) != 0;
    const int mod = a->p[CLNORM_ARG_SCALE] || a->p[CLNORM_ARG_SHIFT];
    void *mean = a->p[CLNORM_ARG_MEAN], *rstd = a->p[CLNORM_ARG_RSTD];
    const HA eps = (HA)clnorm_arith_eps(d);
    const size_t ysize = clnorm_elem_size(d->dtype), ssize = clnorm_elem_size(rt);
    for (size_t row = r0; row < r1; row++) {
        if (mod && (row == r0 || row % T == 0))
            HN(sample_mod)(d, a, b, row / T);
        if (!job->stream) { /* y's and the sum's lines asked for before the statistics */
            clnorm_host_prefetch_out(a->p[CLNORM_ARG_Y], ysize, row * d->y_stride, cols);
            if (a->p[CLNORM_ARG_SUM])
                clnorm_host_prefetch_out(a->p[CLNORM_ARG_SUM], ssize, row * d->sum_stride, cols);
        }
        HN(stage_row)(d, a, b, row, residual);
        HA K[2], m, r, sc, kd = 0;
        const HA *dev;
        if (global) {
            dev = HN(given_stats)(d, b, mean, rstd, rms, residual, row, &m, &r);
        } else {
            dev = HN(row_stats)(b, cols, rms, residual, eps, K, &m, &r, &sc, &kd);
            HA v = ((K[0] + K[1]) + m) / sc;
            if (mean)
                HN(store)(pt, mean, row, &v, 1);
            v = r * sc;
            if (rstd)
                HN(store)(pt, rstd, row, &v, 1);
        }
        /* In place (the sum is the residual or x, y is x or the residual): x and the residual
         * are read here for the last time; y comes from the deviations. */
        void *sum = a->p[CLNORM_ARG_SUM], *y = a->p[CLNORM_ARG_Y];
        if (sum) {
            for (size_t j = 0; j < cols; j++)
                b->g[j] = b->x[j] + b->r[j];
            HN(store)(rt, sum, row * d->sum_stride, b->g, cols);
        }
        HA *o = job->stream ? b->out : HN(row_out)(b->out, d->dtype, y, row * d->y_stride);
        if (mod)
            for (size_t j = 0; j < cols; j++)
                o[j] = ((((dev[j] - kd) - m) * r) * b->gam[j] + b->bet[j]) * b->ops[j] +
                       b->sh[j];
        else
            for (size_t j = 0; j < cols; j++)
                o[j] = (((dev[j] - kd) - m) * r) * b->gam[j] + b->bet[j];
#if HSTREAM
        if (job->stream) {
            clnorm_host_stream_floats((float *)y + row * d->y_stride, (const float *)o, cols,
                                      NULL);
            continue;
        }
#endif
        HN(out_done)(o, d->dtype, y, row * d->y_stride, cols);
    }
#if HSTREAM
    if (job->stream)
        clnorm_host_stream_fence();
#endif
}

/* The parameter gradients' running sums, in double row by row: dgamma and dbeta into acc
 * (acc + cols), dscale and dshift into cur (cur + cols); rounded once at the end. Each term
 * dz * xhat is exact in double (float32 storage), so what stays is xhat's own rounding: float
 * partials of 32 rows, then added in double, had put dgamma and dbeta of float32 batches of
 * 1024x256 to 16384x16 at 0.4-0.96x the bound 1e-5 + 1e-5 |ref| from torch's float64, and
 * 1.3-1.8x at 32768x32 and 4096x1024 (bench/RESULTS.md, "The row backward's parameter
 * partials in double"), as the kernels' partials do. */
static HINLINE void HN(add_terms)(double *restrict s1, double *restrict s0,
                                  const HA *restrict dz, const HA *restrict v, size_t cols)
{
    for (size_t j = 0; j < cols; j++) {
        s1[j] += (double)dz[j] * (double)v[j];
        s0[j] += (double)dz[j];
    }
}

static HINLINE void HN(accumulate)(const HN(bufs) *b, size_t cols, double *acc, double *cur,
                                   int mod, int scaled)
{
    /* (out, the outputs' staging, is free until dx: it takes dz or z) */
    if (scaled) { /* dz = dy * (1 + scale), rounded as the kernels do */
        HA *restrict dz = b->out;
        for (size_t j = 0; j < cols; j++)
            dz[j] = b->dyr[j] * b->ops[j];
        HN(add_terms)(acc, acc + cols, dz, b->xh, cols);
    } else { /* ops is 1: dy * 1 is dy, bit for bit, without reading ops */
        HN(add_terms)(acc, acc + cols, b->dyr, b->xh, cols);
    }
    if (mod) {
        HA *restrict z = b->out;
        for (size_t j = 0; j < cols; j++)
            z[j] = b->xh[j] * b->gam[j] + b->bet[j];
        HN(add_terms)(cur, cur + cols, b->dyr, z, cols);
    }
}

/* Moves n double sums from src to dst (added when add, else copied) and zeroes src. */
static HINLINE void HN(move_sums)(double *dst, double *src, size_t n, int add)
{
    for (size_t j = 0; j < n; j++) {
        dst[j] = add ? dst[j] + src[j] : src[j];
        src[j] = 0;
    }
}

/* Whether a LayerNorm row's float32 backward goes to double (HN(row_w_sums), HN(row_w_dx)),
 * from its float statistics: rstd, or rstd times the largest |gamma * (1 + scale)| the row
 * can have, at least CLNORM_ROW_WIDE (flags.h). dx = rstd * ((g - mean(g)) - xhat * mean(g *
 * xhat)) is there a difference of terms of rstd * |gamma| * |dy| that nearly cancel, which
 * multiplies every float rounding on the way (the mean's and rstd's, xhat's, the means', the
 * formula's). Not RMSNorm, whose xhat is near 1 where rstd is small and which has no mean to
 * cancel; not given statistics (saved ones are float already; precomputed ones have no
 * means in dx); float16 and bfloat16 round far above it. */
static HINLINE int HN(row_wide)(const HN(job) *job, const HN(bufs) *b, HA rs, int scaled)
{
    if (HNATIVE == CLNORM_F64 || job->d->dtype != CLNORM_F32)
        return 0;
    const double r = (double)rs;
    return r >= CLNORM_ROW_WIDE ||
           r * (double)job->gmax * (scaled ? (double)b->omax : 1.0) >= CLNORM_ROW_WIDE;
}

/* The staged row's s_j = x_j (+ residual_j) in double: exact (two floats' sum). */
static HINLINE double HN(s_w)(const HN(bufs) *b, int residual, size_t j)
{
    return residual ? (double)b->x[j] + (double)b->r[j] : (double)b->x[j];
}

/* g_j = dy_j (1 + scale_j) gamma_j of a wide row in double, 1 + scale exact from the
 * sample's float32 scale (scl; NULL: not scaled): b->ops holds it rounded to float, whose
 * rounding the cancellation in dx would multiply as any other. */
static HINLINE double HN(g_w)(const HN(bufs) *b, const float *scl, size_t j)
{
    const double g = (double)b->dyr[j] * (double)b->gam[j];
    return scl ? g * (1.0 + (double)scl[j]) : g;
}

/* A wide row's statistics in double from x (and the residual): two passes, in HLANES lanes
 * (blocks of HLANES, the tail in the first lanes); xhat into b->xh rounded once (for the
 * parameter gradients, HN(accumulate)); mean(g) and mean(g * xhat) in double (HN(g_w)). Into
 * w: mean, rstd, mean(g), mean(g * xhat). */
static HINLINE void HN(row_w_sums_at)(const HN(bufs) *b, size_t cols, const int residual,
                                      const float *scl, double eps, double w[4])
{
    double l[HLANES] = {0}, lv[HLANES] = {0}, lg[HLANES] = {0}, lx[HLANES] = {0};
    const size_t body = cols / HLANES * HLANES;
    for (size_t j0 = 0; j0 < body; j0 += HLANES)
        for (size_t k = 0; k < HLANES; k++)
            l[k] += HN(s_w)(b, residual, j0 + k);
    for (size_t j = body; j < cols; j++)
        l[j - body] += HN(s_w)(b, residual, j);
    const double mean = clnorm_host_lanes_sum(l) / (double)cols;
    for (size_t j0 = 0; j0 < body; j0 += HLANES)
        for (size_t k = 0; k < HLANES; k++) {
            const double t = HN(s_w)(b, residual, j0 + k) - mean;
            lv[k] += t * t;
        }
    for (size_t j = body; j < cols; j++) {
        const double t = HN(s_w)(b, residual, j) - mean;
        lv[j - body] += t * t;
    }
    const double r = 1.0 / sqrt(clnorm_host_lanes_sum(lv) / (double)cols + eps);
    for (size_t j0 = 0; j0 < cols; j0 += HLANES)
        for (size_t k = 0; k < HLANES && j0 + k < cols; k++) {
            const double xh = (HN(s_w)(b, residual, j0 + k) - mean) * r;
            const double g = HN(g_w)(b, scl, j0 + k);
            b->xh[j0 + k] = (HA)xh;
            lg[k] += g;
            lx[k] += g * xh;
        }
    w[0] = mean;
    w[1] = r;
    w[2] = clnorm_host_lanes_sum(lg) / (double)cols;
    w[3] = clnorm_host_lanes_sum(lx) / (double)cols;
}

/* HN(row_w_sums_at) compiled for each case of a residual and a scale (constants there), so
 * that its loops vectorize: with both tested per element, a wide row took 2-4x the float
 * row's time. */
static HNOINLINE void HN(row_w_sums)(const HN(bufs) *b, size_t cols, int residual,
                                     const float *scl, double eps, double w[4])
{
    if (residual && scl)
        HN(row_w_sums_at)(b, cols, 1, scl, eps, w);
    else if (residual)
        HN(row_w_sums_at)(b, cols, 1, NULL, eps, w);
    else if (scl)
        HN(row_w_sums_at)(b, cols, 0, scl, eps, w);
    else
        HN(row_w_sums_at)(b, cols, 0, NULL, eps, w);
}

/* A wide row's dx = rstd * ((g - mean(g)) - xhat * mean(g * xhat)) (+ dsum) in double from x,
 * the residual and dy again, rounded once into o. In place, each element's inputs are read
 * before its dx is written. */
static HNOINLINE void HN(row_w_dx)(const HN(bufs) *b, size_t cols, int residual,
                                   const float *scl, const HA *dsr, const double w[4], HA *o)
{
    for (size_t j = 0; j < cols; j++) {
        const double xh = (HN(s_w)(b, residual, j) - w[0]) * w[1];
        const double g = HN(g_w)(b, scl, j);
        const double v = w[1] * ((g - w[2]) - xh * w[3]);
        o[j] = (HA)(dsr ? v + (double)dsr[j] : v);
    }
}

/* Rows [r0, r1) of the backward, chunk c. Its parameter gradients go to the chunk's double
 * sums (job->sums + c * acc_rows * cols): dgamma and dbeta; with dscale/dshift also the
 * sample the chunk starts in, up to that sample's end or the chunk's ("head"), and the
 * sample it ends in when that one goes on past it ("tail"). Samples wholly inside the chunk
 * are stored here; HN(combine) adds the rest in chunk order. A phase function (HPHASE_AVX2). */
HPHASE_AVX2 static void HN(backward)(const HN(job) *job, HN(bufs) *b, double *cur, size_t c,
                                     size_t r0, size_t r1)
{
    const clnorm_op *op = job->op;
    const clnorm_desc *d = job->d;
    const clnorm_host_ptrs *a = job->a;
    const size_t cols = d->cols, T = d->samples ? d->rows / d->samples : 0;
    const clnorm_dtype t = d->dtype, pt = clnorm_param_dtype(t), rt = clnorm_residual_dtype(d);
    const int rms = !op->has_mean, residual = op->residual;
    const int global = (d->flags & CLNORM_USE_GLOBAL_STATS) != 0;
    const void *mean = a->p[CLNORM_ARG_MEAN], *rstd = a->p[CLNORM_ARG_RSTD];
    const void *ds = a->p[CLNORM_ARG_DSUM];
    void *dx = a->p[CLNORM_ARG_DX], *dscale = a->p[CLNORM_ARG_DSCALE];
    void *dshift = a->p[CLNORM_ARG_DSHIFT];
    const int mod = dscale || dshift, scaled = a->p[CLNORM_ARG_SCALE] != NULL;
    double *acc = job->sums ? job->sums + c * job->acc_rows * cols : NULL;
    double *head = acc ? acc + 2 * cols : NULL, *tail = acc ? acc + 4 * cols : NULL;
    int ended = 0;
    const HA eps = (HA)clnorm_arith_eps(d);
    const size_t esize = clnorm_elem_size(t), rsize = clnorm_elem_size(rt);
    for (size_t row = r0; row < r1; row++) {
        if (scaled && (row == r0 || row % T == 0)) /* ops: read only when scaled */
            HN(sample_mod)(d, a, b, row / T);
        if (dx) /* dx's lines asked for before the row's reads */
            clnorm_host_prefetch_out(dx, esize, row * d->x_stride, cols);
        HN(stage_row)(d, a, b, row, residual);
        b->dyr = HN(row_in)(b->dya, t, a->p[CLNORM_ARG_DY], row * d->y_stride, cols);
        HA K[2], m, r, sc = 1, kd = 0;
        const HA *devs;
        if (rstd) /* saved or global statistics */
            devs = HN(given_stats)(d, b, mean, rstd, rms, residual, row, &m, &r);
        else
            devs = HN(row_stats)(b, cols, rms, residual, eps, K, &m, &r, &sc, &kd);
        {
            /* m and r by value and the thread's own buffers as restrict: else the compiler
             * reloads m and r after every store and leaves the loop scalar (a third of the
             * backward's time at 257 x 768). */
            HA *restrict xh = b->xh, *restrict g = b->g;
            const HA *restrict dev = devs, *restrict dyr = b->dyr, *restrict ops = b->ops,
                               *restrict gam = b->gam;
            const HA mv = m, rv = r, kv = kd;
            if (scaled) {
                for (size_t j = 0; j < cols; j++) {
                    xh[j] = ((dev[j] - kv) - mv) * rv;
                    g[j] = dyr[j] * ops[j] * gam[j];
                }
            } else { /* ops is 1 (HN(accumulate)) */
                for (size_t j = 0; j < cols; j++) {
                    xh[j] = ((dev[j] - kv) - mv) * rv;
                    g[j] = dyr[j] * gam[j];
                }
            }
        }
        /* a wide LayerNorm row (HN(row_wide)) again in double: xhat from it, its means (w).
         * After the float loop above, whose xhat it overwrites (wide rows only): with that
         * loop in the other branch of this test the float rows ran 1.02-1.06x the base's
         * time at 257x768, 32x4096 and 1024x64, after it within 1.03x (clnorm-lib-ab). */
        const int wide = !rms && !rstd && HN(row_wide)(job, b, r * sc, scaled);
        double w[4];
        /* the sample's scale, float32 where a row can be wide */
        const float *scl = wide && scaled ? (const float *)a->p[CLNORM_ARG_SCALE] +
                                                row / T * d->mod_stride
                                          : NULL;
        if (wide)
            HN(row_w_sums)(b, cols, residual, scl, d->eps, w);
        if (row + 1 < r1) { /* the next row's inputs into L2 while this one's run from L1 */
            clnorm_host_prefetch_in(a->p[CLNORM_ARG_X], esize, (row + 1) * d->x_stride, cols);
            clnorm_host_prefetch_in(a->p[CLNORM_ARG_DY], esize, (row + 1) * d->y_stride, cols);
            if (residual)
                clnorm_host_prefetch_in(a->p[CLNORM_ARG_RESIDUAL], rsize,
                                        (row + 1) * d->residual_stride, cols);
        }
        if (acc) {
            HN(accumulate)(b, cols, acc, cur, mod, scaled);
            const int sample_end = (row + 1) % T == 0;
            if (sample_end && mod) {
                if (!ended) { /* the sample the chunk starts in: HN(combine) finishes it */
                    HN(move_sums)(head, cur, 2 * cols, 0);
                    ended = 1;
                } else { /* a whole sample of this chunk */
                    const size_t off = row / T * d->mod_stride;
                    store_sums(pt, dscale, off, cur, cols, 1);
                    store_sums(pt, dshift, off, cur + cols, cols, 1);
                }
            }
        }
        if (!dx)
            continue;
        if (wide) {
            HA *o = HN(row_out)(b->out, t, dx, row * d->x_stride);
            const HA *dsr = ds ? HN(row_in)(b->dsa, rt, ds, row * d->sum_stride, cols) : NULL;
            HN(row_w_dx)(b, cols, residual, scl, dsr, w, o);
            HN(out_done)(o, t, dx, row * d->x_stride, cols);
            continue;
        }
        /* global statistics are constants: their terms are absent */
        const HA mg = rms || global ? 0 : HN(sum)(b->g, cols) / (HA)cols;
        const HA mgx = global ? 0 : HN(dot)(b->g, b->xh, cols) / (HA)cols;
        const HA rs = r * sc;
        /* In place (dx is dy, x, the residual or dsum): dy, x and the residual were read
         * into g and xh; dsum is read element by element before the same element of dx is
         * written. */
        HA *o = HN(row_out)(b->out, t, dx, row * d->x_stride);
        if (ds) {
            const HA *dsr = HN(row_in)(b->dsa, rt, ds, row * d->sum_stride, cols);
            for (size_t j = 0; j < cols; j++)
                o[j] = rs * (b->g[j] - mg - b->xh[j] * mgx) + dsr[j];
        } else {
            for (size_t j = 0; j < cols; j++)
                o[j] = rs * (b->g[j] - mg - b->xh[j] * mgx);
        }
        HN(out_done)(o, t, dx, row * d->x_stride, cols);
    }
    if (acc && mod) {
        HN(move_sums)(ended ? tail : head, cur, 2 * cols, 0);
        job->ends[c] = (unsigned char)ended;
    }
}

/* The chunks' parameter gradients added in chunk order and stored (the calling thread, after
 * every chunk ran): dgamma and dbeta; dscale and dshift of the samples that cross a chunk's
 * end, carried from chunk to chunk: each chunk's head is added to the carry, which is stored
 * where a sample ends in the chunk and then restarts from the chunk's tail. */
static void HN(combine)(const HN(job) *job)
{
    const clnorm_desc *d = job->d;
    const clnorm_host_ptrs *a = job->a;
    const size_t cols = d->cols, T = d->samples ? d->rows / d->samples : 0;
    const clnorm_dtype pt = clnorm_param_dtype(d->dtype);
    void *dscale = a->p[CLNORM_ARG_DSCALE], *dshift = a->p[CLNORM_ARG_DSHIFT];
    const int mod = dscale || dshift;
    /* dgamma and dbeta add up in the first chunk's sums */
    double *total = job->sums, *carry = job->carry;
    for (size_t c = 0; c < job->nchunks; c++) {
        double *s = job->sums + c * job->acc_rows * cols;
        for (size_t j = 0; c > 0 && j < 2 * cols; j++)
            total[j] += s[j];
        if (!mod)
            continue;
        HN(move_sums)(carry, s + 2 * cols, 2 * cols, 1); /* carry + head */
        if (job->ends[c]) {
            const size_t off = c * job->chunk_rows / T * d->mod_stride;
            store_sums(pt, dscale, off, carry, cols, 1);
            store_sums(pt, dshift, off, carry + cols, cols, 1);
            HN(move_sums)(carry, s + 4 * cols, 2 * cols, 0); /* the tail */
        }
    }
    /* Samples of no rows (T = 0): their dscale and dshift are zeros (carry is). No rows, no
     * chunk: dgamma and dbeta are zeros too. */
    if (job->nchunks == 0)
        total = carry;
    for (size_t s = 0; T == 0 && mod && s < d->samples; s++) {
        store_sums(pt, dscale, s * d->mod_stride, carry, cols, 0);
        store_sums(pt, dshift, s * d->mod_stride, carry + cols, cols, 0);
    }
    store_sums(pt, a->p[CLNORM_ARG_DGAMMA], 0, total, cols, 0);
    store_sums(pt, a->p[CLNORM_ARG_DBETA], 0, total + cols, cols, 0);
}

/* Chunk c of a job, on thread `worker` (clnorm_pool_fn): its rows, with that thread's
 * scratch. */
static void HN(chunk)(void *arg, size_t c, unsigned worker)
{
    const HN(job) *job = arg;
    const size_t cols = job->d->cols;
    HN(bufs) b;
    HA *next = job->scratch + (size_t)worker * HN(NBUF) * cols;
    HA **const own[HN(NBUF)] = {&b.xa, &b.ra, &b.dya, &b.dev, &b.out,
                                &b.ops, &b.sh, &b.g, &b.xh, &b.dsa};
    for (size_t i = 0; i < HN(NBUF); i++, next += cols)
        *own[i] = next;
    b.gam = job->params;
    b.bet = job->params + cols;
    b.x = b.r = b.dyr = NULL;
    const size_t r0 = c * job->chunk_rows;
    const size_t r1 = job->d->rows - r0 < job->chunk_rows ? job->d->rows : r0 + job->chunk_rows;
    if (job->dir == CLNORM_FORWARD)
        HN(forward)(job, &b, r0, r1);
    else
        HN(backward)(job, &b, job->cur ? job->cur + (size_t)worker * 2 * cols : NULL, c, r0,
                     r1);
}

/* One call: its chunks (row_norm_host.c, host_chunk_rows) run on the pool, the scratch of
 * every thread in one allocation made first (nothing is written when it fails). */
static clnorm_status HN(run)(const clnorm_op *op, const clnorm_desc *d, clnorm_direction dir,
                             const clnorm_host_ptrs *a, clnorm_ctx *ctx)
{
    const size_t cols = d->cols;
    HN(job) job = {.op = op, .d = d, .a = a, .dir = dir};
#if HSTREAM
    job.stream = dir == CLNORM_FORWARD && d->dtype == CLNORM_F32 &&
                 d->rows >= HSTREAM_BYTES / sizeof(float) / (cols ? cols : 1) && clnorm_host_have_avx();
#endif
    job.chunk_rows = host_chunk_rows(d, dir);
    job.nchunks = d->rows ? clnorm_div_up(d->rows, job.chunk_rows) : 0;
    /* The workers start with the first call that has work for them. */
    clnorm_pool *pool = job.nchunks > 1 ? clnorm_host_pool(ctx) : NULL;
    const size_t width = clnorm_pool_width(pool);
    const int grads = dir == CLNORM_BACKWARD &&
                      (a->p[CLNORM_ARG_DGAMMA] || a->p[CLNORM_ARG_DBETA] ||
                       a->p[CLNORM_ARG_DSCALE] || a->p[CLNORM_ARG_DSHIFT]);
    const int mod = dir == CLNORM_BACKWARD && (a->p[CLNORM_ARG_DSCALE] || a->p[CLNORM_ARG_DSHIFT]);
    job.acc_rows = mod ? 6 : 2;
    /* HA: params, scratch; double: cur, sums, total; bytes: ends */
    const size_t nha = 2 * cols + width * HN(NBUF) * cols;
    const size_t ndbl = (mod ? width * 2 * cols : 0) +
                        (grads ? job.nchunks * job.acc_rows * cols + 2 * cols : 0);
    const size_t nbytes = mod ? job.nchunks : 0;
    if (nha > SIZE_MAX / 4 / sizeof(HA) || ndbl > SIZE_MAX / 4 / sizeof(double) ||
        nbytes > SIZE_MAX / 4)
        return CLNORM_OUT_OF_MEMORY;
    /* One allocation: the double sums, the HA rows, the flags. Only the sums and the flags
     * start at zero: the staging is written before it is read (zeroing it would cost a
     * small call a quarter of its time). */
    char *mem = malloc(ndbl * sizeof(double) + nha * sizeof(HA) + nbytes + 1);
    if (!mem)
        return CLNORM_OUT_OF_MEMORY;
    double *dbl = (double *)(void *)mem;
    HA *ha = (HA *)(void *)(mem + ndbl * sizeof(double));
    unsigned char *ends = (unsigned char *)(ha + nha);
    memset(dbl, 0, ndbl * sizeof(double));
    memset(ends, 0, nbytes);
    job.params = ha;
    job.scratch = ha + 2 * cols;
    job.cur = mod ? dbl : NULL;
    job.sums = grads ? dbl + (mod ? width * 2 * cols : 0) : NULL;
    job.carry = grads ? job.sums + job.nchunks * job.acc_rows * cols : NULL;
    job.ends = mod ? ends : NULL;
    HN(param)(job.params, d, a->p[CLNORM_ARG_GAMMA], 0, 1);
    HN(param)(job.params + cols, d, a->p[CLNORM_ARG_BETA], 0, 0);
    for (size_t j = 0; dir == CLNORM_BACKWARD && j < cols; j++) /* fmax: a libm call each */
        job.gmax = fabs(job.params[j]) > job.gmax ? fabs(job.params[j]) : job.gmax;
    clnorm_pool_run(pool, job.nchunks, HN(chunk), &job);
    if (grads)
        HN(combine)(&job);
    free(mem);
    return CLNORM_OK;
}
