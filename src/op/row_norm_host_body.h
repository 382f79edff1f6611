/*
 * row_norm_host_body.h - the row family's host loop in one arithmetic type, included by
 * row_norm_host.c once per type with
 *   HA       the arithmetic type (float for f32, f16 and bf16 storage; double for f64),
 *   HNATIVE  the storage type that is HA itself (its rows are read and written in place),
 *   HF16C    1 when float16 rows may go through row_norm_host.c's F16C conversions, and
 *   HN(n)    the name n of this instance's functions.
 * The numerics are the kernels' (kernels/row_stats.cl): the row shifted by its first elements,
 * its moments in blocks of HBLOCK elements summed in HLANES independent lanes, each block's
 * own two-pass M2 merged with Chan's update, Kahan-compensated across blocks, a rescaled
 * redo when the squares overflow. Every loop runs over contiguous arrays of HA, so the
 * compiler vectorizes it; the storage types are converted on the way in and out.
 */

/* n elements of storage type t from base + off into dst. */
static HINLINE void HN(load)(HA *dst, clnorm_dtype t, const void *base, size_t off, size_t n)
{
    switch (t) {
    case CLNORM_F16: {
        const uint16_t *p = (const uint16_t *)base + off;
#if HF16C
        if (have_f16c()) {
            halves_to_floats_f16c(dst, p, n);
            return;
        }
#endif
        for (size_t i = 0; i < n; i++)
            dst[i] = (HA)clnorm_half_to_float(p[i]);
        return;
    }
    case CLNORM_BF16: {
        const uint16_t *p = (const uint16_t *)base + off;
        for (size_t i = 0; i < n; i++)
            dst[i] = (HA)clnorm_bfloat_to_float(p[i]);
        return;
    }
    case CLNORM_F64: {
        const double *p = (const double *)base + off;
        for (size_t i = 0; i < n; i++)
            dst[i] = (HA)p[i];
        return;
    }
    case CLNORM_F32: break;
    }
    const float *p = (const float *)base + off;
    for (size_t i = 0; i < n; i++)
        dst[i] = (HA)p[i];
}

/* n elements of src stored as type t at base + off, rounded to nearest even as the kernels'
 * stores do (vstore_half_rte, the bfloat16 rounding of common.cl). f16 and bf16 only occur
 * with HA float, f64 only with HA double. */
static HINLINE void HN(store)(clnorm_dtype t, void *base, size_t off, const HA *src, size_t n)
{
    switch (t) {
    case CLNORM_F16: {
        uint16_t *p = (uint16_t *)base + off;
#if HF16C
        if (have_f16c()) {
            floats_to_halves_f16c(p, src, n);
            return;
        }
#endif
        for (size_t i = 0; i < n; i++)
            p[i] = clnorm_float_to_half((float)src[i]);
        return;
    }
    case CLNORM_BF16: {
        uint16_t *p = (uint16_t *)base + off;
        for (size_t i = 0; i < n; i++)
            p[i] = clnorm_float_to_bfloat((float)src[i]);
        return;
    }
    case CLNORM_F64: {
        double *p = (double *)base + off;
        for (size_t i = 0; i < n; i++)
            p[i] = (double)src[i];
        return;
    }
    case CLNORM_F32: break;
    }
    float *p = (float *)base + off;
    for (size_t i = 0; i < n; i++)
        p[i] = (float)src[i];
}

/* Kahan-compensated running sum (kernels/common.cl's kahan_add). */
static HINLINE void HN(kahan)(HA *s, HA *c, HA v)
{
    const HA y = v - *c;
    const HA t = *s + y;
    *c = (t - *s) - y;
    *s = t;
}

/* Sum of v[0..n) (n at most HBLOCK) in HLANES lanes, then the lanes pairwise. */
static HINLINE HA HN(block_sum)(const HA *v, size_t n)
{
    HA l[HLANES] = {0};
    size_t i = 0;
    for (; i + HLANES <= n; i += HLANES)
        for (size_t k = 0; k < HLANES; k++)
            l[k] += v[i + k];
    for (size_t k = 0; i < n; i++, k++)
        l[k] += v[i];
    for (size_t w = HLANES / 2; w > 0; w /= 2)
        for (size_t k = 0; k < w; k++)
            l[k] += l[k + w];
    return l[0];
}

/* Sum of (v[i] - c)^2 over v[0..n), n at most HBLOCK. */
static HINLINE HA HN(block_sq)(const HA *v, size_t n, HA c)
{
    HA l[HLANES] = {0};
    size_t i = 0;
    for (; i + HLANES <= n; i += HLANES)
        for (size_t k = 0; k < HLANES; k++) {
            const HA d = v[i + k] - c;
            l[k] += d * d;
        }
    for (size_t k = 0; i < n; i++, k++) {
        const HA d = v[i] - c;
        l[k] += d * d;
    }
    for (size_t w = HLANES / 2; w > 0; w /= 2)
        for (size_t k = 0; k < w; k++)
            l[k] += l[k + w];
    return l[0];
}

/* Sum of a[i] * b[i] over [0, n), n at most HBLOCK. */
static HINLINE HA HN(block_dot)(const HA *a, const HA *b, size_t n)
{
    HA l[HLANES] = {0};
    size_t i = 0;
    for (; i + HLANES <= n; i += HLANES)
        for (size_t k = 0; k < HLANES; k++)
            l[k] += a[i + k] * b[i + k];
    for (size_t k = 0; i < n; i++, k++)
        l[k] += a[i] * b[i];
    for (size_t w = HLANES / 2; w > 0; w /= 2)
        for (size_t k = 0; k < w; k++)
            l[k] += l[k + w];
    return l[0];
}

/* Kahan-compensated sums over blocks: of v, and of a * b. */
static HINLINE HA HN(sum)(const HA *v, size_t n)
{
    HA s = 0, c = 0;
    for (size_t b = 0; b < n; b += HBLOCK)
        HN(kahan)(&s, &c, HN(block_sum)(v + b, n - b < HBLOCK ? n - b : HBLOCK));
    return s;
}

static HINLINE HA HN(dot)(const HA *a, const HA *b, size_t n)
{
    HA s = 0, c = 0;
    for (size_t i = 0; i < n; i += HBLOCK)
        HN(kahan)(&s, &c, HN(block_dot)(a + i, b + i, n - i < HBLOCK ? n - i : HBLOCK));
    return s;
}

/* A row of storage type t at base + off as HA: the row itself when t is HA's own type,
 * else its conversion into `stage`. */
static HINLINE const HA *HN(row_in)(HA *stage, clnorm_dtype t, const void *base, size_t off,
                                    size_t n)
{
    if (t == HNATIVE)
        return (const HA *)base + off;
    HN(load)(stage, t, base, off, n);
    return stage;
}

/* Where a row's results go: the row itself when t is HA's own type, else `stage`, stored
 * by out_done. */
static HINLINE HA *HN(row_out)(HA *stage, clnorm_dtype t, void *base, size_t off)
{
    return t == HNATIVE ? (HA *)base + off : stage;
}

static HINLINE void HN(out_done)(const HA *o, clnorm_dtype t, void *base, size_t off, size_t n)
{
    if (t != HNATIVE)
        HN(store)(t, base, off, o, n);
}

/* The buffers of one call (each cols long) and the current row's inputs. */
typedef struct {
    const HA *x, *r;   /* the row of x and of the residual (row_in) */
    const HA *dyr;     /* backward: the row of dy (row_in) */
    HA *xa, *ra, *dya; /* their staging */
    HA *dev;           /* the row's deviations (x sc - K0) + (r sc - K1) */
    HA *out;           /* staging of the outputs */
    HA *gam, *bet;     /* gamma, beta (1 and 0 when absent) */
    HA *ops, *sh;      /* the sample's 1 + scale and shift (1 and 0 when absent) */
    HA *g, *xh;        /* backward: dy (1 + scale) gamma, xhat; forward: g stages the sum */
    HA *dsa;           /* backward: staging of dsum */
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
 * deviations (b->dev filled). RMSNorm: no shift, no mean, the mean of the squares. */
static HINLINE HA HN(var_at)(const HN(bufs) *b, size_t cols, int rms, int residual, HA sc, HA K[2],
                             HA *m)
{
    K[0] = rms ? 0 : b->x[0] * sc;
    K[1] = rms || !residual ? 0 : b->r[0] * sc;
    HN(deviations)(b, cols, residual, sc, K);
    *m = 0;
    if (rms) {
        HA s = 0, c = 0;
        for (size_t i = 0; i < cols; i += HBLOCK)
            HN(kahan)(&s, &c, HN(block_sq)(b->dev + i, cols - i < HBLOCK ? cols - i : HBLOCK, 0));
        return s / (HA)cols;
    }
    /* Each block's two-pass moments, merged in order with Chan's update. */
    HA n = 0, S = 0, cs = 0, M2 = 0, cm = 0;
    for (size_t i = 0; i < cols; i += HBLOCK) {
        const size_t len = cols - i < HBLOCK ? cols - i : HBLOCK;
        const HA nb = (HA)len, Sb = HN(block_sum)(b->dev + i, len), mb = Sb / nb;
        HA M2b = HN(block_sq)(b->dev + i, len, mb);
        if (n > 0) {
            const HA delta = mb - S / n;
            M2b += delta * delta * (n * (nb / (n + nb)));
        }
        HN(kahan)(&M2, &cm, M2b);
        HN(kahan)(&S, &cs, Sb);
        n += nb;
    }
    *m = S / n;
    return M2 / n;
}

/* The staged row's statistics: xhat_j = (dev_j - m) * r, the true rstd r * sc (row_stats of
 * kernels/row_stats.cl, rescaled when the squares overflow). b->dev holds the deviations. */
static HINLINE void HN(row_stats)(const HN(bufs) *b, size_t cols, int rms, int residual, HA eps,
                                  HA K[2], HA *m, HA *r, HA *sc)
{
    *sc = 1;
    HA var = HN(var_at)(b, cols, rms, residual, 1, K, m);
    if (!isfinite(var)) {
        HA M = 0;
        for (size_t j = 0; j < cols; j++) {
            M = fmax(M, fabs(b->x[j]));
            if (residual)
                M = fmax(M, fabs(b->r[j]));
        }
        if (isfinite(M) && M > 0) {
            *sc = (HA)ldexp(1.0, -ilogb(M));
            var = HN(var_at)(b, cols, rms, residual, *sc, K, m);
        }
    }
    *r = (HA)1 / (HA)sqrt(var + eps * *sc * *sc);
}

/* Given statistics (CLNORM_USE_GLOBAL_STATS, or the backward's saved ones) enter as the
 * kernels take them (kernels/norm_apply.cl): K = 0, m = mean, so the sum of x and a residual
 * is formed first and the mean subtracted after. */
static HINLINE void HN(given_stats)(const clnorm_desc *d, const HN(bufs) *b, const void *mean,
                                    const void *rstd, int rms, int residual, size_t row, HA K[2],
                                    HA *m, HA *r, HA *sc)
{
    const clnorm_dtype pt = clnorm_param_dtype(d->dtype);
    K[0] = K[1] = 0;
    *m = 0;
    if (!rms)
        HN(load)(m, pt, mean, row, 1);
    HN(load)(r, pt, rstd, row, 1);
    *sc = 1;
    HN(deviations)(b, d->cols, residual, 1, K);
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

/* The modulation of sample s: b->ops = 1 + scale, b->sh = shift. */
static HINLINE void HN(sample_mod)(const clnorm_desc *d, const clnorm_host_ptrs *a,
                                   const HN(bufs) *b, size_t s)
{
    HN(param)(b->ops, d, a->p[CLNORM_ARG_SCALE], s * d->mod_stride, 0);
    for (size_t j = 0; j < d->cols; j++)
        b->ops[j] += 1;
    HN(param)(b->sh, d, a->p[CLNORM_ARG_SHIFT], s * d->mod_stride, 0);
}

static HINLINE void HN(forward)(const clnorm_op *op, const clnorm_desc *d,
                                const clnorm_host_ptrs *a, HN(bufs) *b)
{
    const size_t cols = d->cols, T = d->samples ? d->rows / d->samples : 0; /* 0: no rows */
    const clnorm_dtype pt = clnorm_param_dtype(d->dtype), rt = clnorm_residual_dtype(d);
    const int rms = !op->has_mean, residual = op->residual;
    const int global = (d->flags & CLNORM_USE_GLOBAL_STATS) != 0;
    const int mod = a->p[CLNORM_ARG_SCALE] || a->p[CLNORM_ARG_SHIFT];
    void *mean = a->p[CLNORM_ARG_MEAN], *rstd = a->p[CLNORM_ARG_RSTD];
    const HA eps = (HA)clnorm_arith_eps(d);
    HN(param)(b->gam, d, a->p[CLNORM_ARG_GAMMA], 0, 1);
    HN(param)(b->bet, d, a->p[CLNORM_ARG_BETA], 0, 0);
    for (size_t row = 0; row < d->rows; row++) {
        if (mod && row % T == 0)
            HN(sample_mod)(d, a, b, row / T);
        HN(stage_row)(d, a, b, row, residual);
        HA K[2], m, r, sc;
        if (global) {
            HN(given_stats)(d, b, mean, rstd, rms, residual, row, K, &m, &r, &sc);
        } else {
            HN(row_stats)(b, cols, rms, residual, eps, K, &m, &r, &sc);
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
        HA *o = HN(row_out)(b->out, d->dtype, y, row * d->y_stride);
        if (mod)
            for (size_t j = 0; j < cols; j++)
                o[j] = (((b->dev[j] - m) * r) * b->gam[j] + b->bet[j]) * b->ops[j] + b->sh[j];
        else
            for (size_t j = 0; j < cols; j++)
                o[j] = ((b->dev[j] - m) * r) * b->gam[j] + b->bet[j];
        HN(out_done)(o, d->dtype, y, row * d->y_stride, cols);
    }
}

/* The parameter gradients' running sums: per row in HA partials (dgamma, dbeta, dscale,
 * dshift; acc + 4 cols), added into double sums (acc) every HROWS rows and at each sample's
 * end, as the kernels add per-block partials; rounded once at the end. Deterministic: the
 * order is the rows'. */
static HINLINE void HN(accumulate)(const HN(bufs) *b, size_t cols, HA *part, int mod)
{
    HA *dg = part, *db = part + cols, *dsc = part + 2 * cols, *dsh = part + 3 * cols;
    for (size_t j = 0; j < cols; j++) {
        const HA dz = b->dyr[j] * b->ops[j];
        dg[j] += dz * b->xh[j];
        db[j] += dz;
    }
    if (mod)
        for (size_t j = 0; j < cols; j++) {
            dsc[j] += b->dyr[j] * (b->xh[j] * b->gam[j] + b->bet[j]);
            dsh[j] += b->dyr[j];
        }
}

/* n partials added into the double sums, and zeroed. */
static HINLINE void HN(flush)(double *acc, HA *part, size_t n)
{
    for (size_t j = 0; j < n; j++) {
        acc[j] += (double)part[j];
        part[j] = 0;
    }
}

static HINLINE void HN(backward)(const clnorm_op *op, const clnorm_desc *d,
                                 const clnorm_host_ptrs *a, HN(bufs) *b, double *acc, HA *part)
{
    const size_t cols = d->cols, T = d->samples ? d->rows / d->samples : 0;
    const clnorm_dtype t = d->dtype, pt = clnorm_param_dtype(t), rt = clnorm_residual_dtype(d);
    const int rms = !op->has_mean, residual = op->residual;
    const int global = (d->flags & CLNORM_USE_GLOBAL_STATS) != 0;
    const void *mean = a->p[CLNORM_ARG_MEAN], *rstd = a->p[CLNORM_ARG_RSTD];
    const void *ds = a->p[CLNORM_ARG_DSUM];
    void *dx = a->p[CLNORM_ARG_DX], *dscale = a->p[CLNORM_ARG_DSCALE];
    void *dshift = a->p[CLNORM_ARG_DSHIFT];
    const int mod = dscale || dshift;
    const HA eps = (HA)clnorm_arith_eps(d);
    HN(param)(b->gam, d, a->p[CLNORM_ARG_GAMMA], 0, 1);
    HN(param)(b->bet, d, a->p[CLNORM_ARG_BETA], 0, 0);
    for (size_t j = 0; j < cols; j++)
        b->ops[j] = 1;
    for (size_t row = 0; row < d->rows && (acc || dx); row++) {
        if (a->p[CLNORM_ARG_SCALE] && row % T == 0)
            HN(sample_mod)(d, a, b, row / T);
        HN(stage_row)(d, a, b, row, residual);
        b->dyr = HN(row_in)(b->dya, t, a->p[CLNORM_ARG_DY], row * d->y_stride, cols);
        HA K[2], m, r, sc;
        if (rstd) /* saved or global statistics */
            HN(given_stats)(d, b, mean, rstd, rms, residual, row, K, &m, &r, &sc);
        else
            HN(row_stats)(b, cols, rms, residual, eps, K, &m, &r, &sc);
        for (size_t j = 0; j < cols; j++) {
            b->xh[j] = (b->dev[j] - m) * r;
            b->g[j] = b->dyr[j] * b->ops[j] * b->gam[j];
        }
        if (acc) {
            HN(accumulate)(b, cols, part, mod);
            const int sample_end = (row + 1) % T == 0;
            if (sample_end || (row + 1) % HROWS == 0) /* the last row ends a sample */
                HN(flush)(acc, part, (mod ? 4 : 2) * cols);
            if (sample_end && mod) { /* the sample's last row */
                const size_t off = row / T * d->mod_stride;
                store_sums(pt, dscale, off, acc + 2 * cols, cols, 1);
                store_sums(pt, dshift, off, acc + 3 * cols, cols, 1);
            }
        }
        if (!dx)
            continue;
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
    /* Samples of no rows (T = 0): their dscale and dshift are zeros. */
    for (size_t s = 0; T == 0 && mod && s < d->samples; s++) {
        store_sums(pt, dscale, s * d->mod_stride, acc + 2 * cols, cols, 0);
        store_sums(pt, dshift, s * d->mod_stride, acc + 3 * cols, cols, 0);
    }
    if (acc) {
        store_sums(pt, a->p[CLNORM_ARG_DGAMMA], 0, acc, cols, 0);
        store_sums(pt, a->p[CLNORM_ARG_DBETA], 0, acc + cols, cols, 0);
    }
}

/* One call: the buffers in one allocation (nothing is written when it fails). */
HCLONES static clnorm_status HN(run)(const clnorm_op *op, const clnorm_desc *d,
                                     clnorm_direction dir, const clnorm_host_ptrs *a)
{
    const size_t cols = d->cols;
    enum { NBUF = 12 };
    HA *mem = malloc(NBUF * cols * sizeof *mem);
    if (!mem)
        return CLNORM_OUT_OF_MEMORY;
    HN(bufs) b;
    HA *next = mem;
    HA **const own[NBUF] = {&b.xa,  &b.ra,  &b.dya, &b.dev, &b.out, &b.gam,
                            &b.bet, &b.ops, &b.sh,  &b.g,   &b.xh,  &b.dsa};
    for (size_t i = 0; i < NBUF; i++, next += cols)
        *own[i] = next;
    b.x = b.r = b.dyr = NULL;
    clnorm_status st = CLNORM_OK;
    if (dir == CLNORM_FORWARD) {
        HN(forward)(op, d, a, &b);
    } else {
        double *acc = NULL;
        HA *part = NULL;
        if (a->p[CLNORM_ARG_DGAMMA] || a->p[CLNORM_ARG_DBETA] || a->p[CLNORM_ARG_DSCALE] ||
            a->p[CLNORM_ARG_DSHIFT]) {
            acc = calloc(4 * cols, sizeof *acc);
            part = calloc(4 * cols, sizeof *part);
            if (!acc || !part)
                st = CLNORM_OUT_OF_MEMORY;
        }
        if (st == CLNORM_OK)
            HN(backward)(op, d, a, &b, acc, part);
        free(acc);
        free(part);
    }
    free(mem);
    return st;
}
