/*
 * host_elem_body.h - what the host loops' type-generic bodies share (row_norm_host_body.h,
 * group_norm_host_body.h), included by each with HA (the arithmetic type), HNATIVE (the
 * storage type that is HA itself), HF16C (float16 may go through host_simd.h's F16C
 * conversions) and HN(n) (the name of this instance's functions) defined: storage
 * conversions, Kahan and blocked sums, and the kernels' blocked two-pass moments.
 */

/* n elements of storage type t from base + off into dst. */
static HINLINE void HN(load)(HA *dst, clnorm_dtype t, const void *base, size_t off, size_t n)
{
    switch (t) {
    case CLNORM_F16: {
        const uint16_t *p = (const uint16_t *)base + off;
#if HF16C
        if (clnorm_host_have_f16c()) {
            clnorm_host_halves_to_floats(dst, p, n);
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
        if (clnorm_host_have_f16c()) {
            clnorm_host_floats_to_halves(p, src, n);
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

/* fmin and fmax in HA, inline (the C library's are calls): a NaN operand yields the other
 * one. */
static HINLINE HA HN(fmin)(HA a, HA b)
{
    return (b < a || a != a) ? b : a;
}

static HINLINE HA HN(fmax)(HA a, HA b)
{
    return (b > a || a != a) ? b : a;
}

/* The median of three values in HA (exact: it is one of them), clnorm_med3's formula. */
static HINLINE HA HN(med3)(HA a, HA b, HA c)
{
    return HN(fmax)(HN(fmin)(a, b), HN(fmin)(HN(fmax)(a, b), c));
}

/* Kahan-compensated running sum (kernels/common.cl's kahan_add). */
static HINLINE void HN(kahan)(HA *s, HA *c, HA v)
{
    const HA y = v - *c;
    const HA t = *s + y;
    *c = (t - *s) - y;
    *s = t;
}

/*
 * The block sums run in several accumulators of HLANES lanes over consecutive vectors, as the
 * kernels' loops do (kernels/row_stats.cl: four in the sums, two in M2): with one accumulator
 * every add waits for the previous one, and a row in L1 runs at that latency. Whole vectors
 * after the last group go into the first accumulator; the accumulators are added lane by
 * lane, (l0 + l1) + (l2 + l3), and the lanes pairwise; the elements after the last whole
 * vector (fewer than HLANES) are summed in order apart and added last. (They had gone into
 * the lanes one by one: scalar stores into a vector the next load reads whole, which the CPU
 * cannot forward, a stall of tens of cycles per block that made short rows and small groups
 * cost about 50 ns each.) The order depends on n alone.
 */

/* Adds the lanes of l pairwise; the sum. */
static HINLINE HA HN(lanes_sum)(HA *l)
{
    for (size_t w = HLANES / 2; w > 0; w /= 2)
        for (size_t k = 0; k < w; k++)
            l[k] += l[k + w];
    return l[0];
}

/* Sum of v[i] - K over v[0..n) (one block). K is 0 where the caller staged its deviations
 * (the row loop): v - 0 is v exactly, and the compiler drops it. GroupNorm's loop shifts
 * where it reads, saving a store and a load per element. */
static HINLINE HA HN(block_sum)(const HA *v, size_t n, HA K)
{
    HA l0[HLANES] = {0}, l1[HLANES] = {0}, l2[HLANES] = {0}, l3[HLANES] = {0};
    size_t i = 0;
    for (; i + 4 * HLANES <= n; i += 4 * HLANES)
        for (size_t k = 0; k < HLANES; k++) {
            l0[k] += v[i + k] - K;
            l1[k] += v[i + HLANES + k] - K;
            l2[k] += v[i + 2 * HLANES + k] - K;
            l3[k] += v[i + 3 * HLANES + k] - K;
        }
    for (; i + HLANES <= n; i += HLANES)
        for (size_t k = 0; k < HLANES; k++)
            l0[k] += v[i + k] - K;
    HA t = 0;
    for (; i < n; i++)
        t += v[i] - K;
    for (size_t k = 0; k < HLANES; k++)
        l0[k] = (l0[k] + l1[k]) + (l2[k] + l3[k]);
    return HN(lanes_sum)(l0) + t;
}

/* Sum of ((v[i] - K) - c)^2 over v[0..n) (one block; K as in HN(block_sum)): two
 * accumulators, as the kernels' M2. */
static HINLINE HA HN(block_sq)(const HA *v, size_t n, HA K, HA c)
{
    HA l0[HLANES] = {0}, l1[HLANES] = {0};
    size_t i = 0;
    for (; i + 2 * HLANES <= n; i += 2 * HLANES)
        for (size_t k = 0; k < HLANES; k++) {
            const HA d0 = (v[i + k] - K) - c, d1 = (v[i + HLANES + k] - K) - c;
            l0[k] += d0 * d0;
            l1[k] += d1 * d1;
        }
    for (; i + HLANES <= n; i += HLANES)
        for (size_t k = 0; k < HLANES; k++) {
            const HA d = (v[i + k] - K) - c;
            l0[k] += d * d;
        }
    HA t = 0;
    for (; i < n; i++) {
        const HA d = (v[i] - K) - c;
        t += d * d;
    }
    for (size_t k = 0; k < HLANES; k++)
        l0[k] += l1[k];
    return HN(lanes_sum)(l0) + t;
}

/* Sum of v[0..n) (n at most HBLOCK) in one accumulator of HLANES lanes, then the lanes
 * pairwise: the backward's sums of a row (HN(sum), HN(dot)). There the accumulators above
 * measured slower, 3% more instructions and 8-10% more time in a 257 x 768 backward
 * (bench/RESULTS.md, "The host loop's statistics in several accumulators"). */
static HINLINE HA HN(block_sum1)(const HA *v, size_t n)
{
    HA l[HLANES] = {0};
    size_t i = 0;
    for (; i + HLANES <= n; i += HLANES)
        for (size_t k = 0; k < HLANES; k++)
            l[k] += v[i + k];
    HA t = 0;
    for (; i < n; i++)
        t += v[i];
    return HN(lanes_sum)(l) + t;
}

/* Sum of a[i] * b[i] over [0, n), n at most HBLOCK, as block_sum1. */
static HINLINE HA HN(block_dot)(const HA *a, const HA *b, size_t n)
{
    HA l[HLANES] = {0};
    size_t i = 0;
    for (; i + HLANES <= n; i += HLANES)
        for (size_t k = 0; k < HLANES; k++)
            l[k] += a[i + k] * b[i + k];
    HA t = 0;
    for (; i < n; i++)
        t += a[i] * b[i];
    return HN(lanes_sum)(l) + t;
}

/* Kahan-compensated sums over blocks: of v, and of a * b. Fewer than HLANES elements are
 * summed as the block's tail alone, its lanes and the Kahan step skipped: the same bits (the
 * tail, started at +0, is never -0), without the fixed cost that a channel of GroupNorm on 1x1
 * to 2x2 paid per element. */
static HINLINE HA HN(sum)(const HA *v, size_t n)
{
    if (n < HLANES) {
        HA t = 0;
        for (size_t i = 0; i < n; i++)
            t += v[i];
        return t;
    }
    HA s = 0, c = 0;
    for (size_t b = 0; b < n; b += HBLOCK)
        HN(kahan)(&s, &c, HN(block_sum1)(v + b, n - b < HBLOCK ? n - b : HBLOCK));
    return s;
}

static HINLINE HA HN(dot)(const HA *a, const HA *b, size_t n)
{
    if (n < HLANES) {
        HA t = 0;
        for (size_t i = 0; i < n; i++)
            t += a[i] * b[i];
        return t;
    }
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

/* The sum S of v[i] - K over v[0..n), n > 0, and the sum of squared deviations from its
 * mean M2: each block's two-pass moments (HMOM_BLOCK elements), merged in order with Chan's
 * update, Kahan-compensated across blocks, as kernels/row_stats.cl does over its blocks of
 * HBLOCK. */
static HINLINE void HN(moments)(const HA *v, size_t n, HA K, HA *S_out, HA *M2_out)
{
    HA cnt = 0, S = 0, cs = 0, M2 = 0, cm = 0;
    for (size_t i = 0; i < n; i += HMOM_BLOCK) {
        const size_t len = n - i < HMOM_BLOCK ? n - i : HMOM_BLOCK;
        const HA nb = (HA)len, Sb = HN(block_sum)(v + i, len, K), mb = Sb / nb;
        HA M2b = HN(block_sq)(v + i, len, K, mb);
        if (cnt > 0) {
            const HA delta = mb - S / cnt;
            M2b += delta * delta * (cnt * (nb / (cnt + nb)));
        }
        HN(kahan)(&M2, &cm, M2b);
        HN(kahan)(&S, &cs, Sb);
        cnt += nb;
    }
    *S_out = S;
    *M2_out = M2;
}

