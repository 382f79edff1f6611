/*
 * test_convert.c - the storage conversions of clnorm.h against oracles written here:
 *   - clnorm_f16_to_f32 on all 65,536 bit patterns vs sign * ldexp(mantissa, exponent);
 *   - clnorm_bf16_to_f32 on all 65,536 patterns vs the bits shifted into the high half;
 *   - round trips of every half and every bfloat16 value;
 *   - clnorm_f32_to_f16 / clnorm_f32_to_bf16 at every midpoint between consecutive values
 *     (ties to even), one float ulp either side, the overflow thresholds (65520 -> Inf,
 *     65519.99 -> 65504), underflow, NaN (payloads that rounding would carry into Inf), and on
 *     random floats vs a nearest-value search over the format's value table;
 *   - the device's stores: LayerNorm of a constant row gives exactly beta, so with beta set to
 *     those hard cases y must be clnorm_f32_to_f16(beta) / clnorm_f32_to_bf16(beta) bit for bit
 *     on every strategy, and through the host layer's host loop (its own conversions).
 */
#include "tu_runner.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static clnorm_ctx *g_ctx;

static float f32_of(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* The value of a half, by the IEEE 754 binary16 formulas (NaN for NaNs). */
static double half_value(unsigned h)
{
    const int s = (h >> 15) & 1, e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v;
    if (e == 0x1f)
        v = m ? NAN : INFINITY;
    else if (e == 0)
        v = ldexp((double)m, -24); /* subnormal: m * 2^-14 * 2^-10 */
    else
        v = ldexp((double)(1024 + m), e - 25); /* (1 + m / 1024) * 2^(e - 15) */
    return s ? -v : v;
}

/* The value of a bfloat16 (its bits are a float's high half). */
static double bf16_value(unsigned b) { return (double)f32_of((uint32_t)b << 16); }

static int is_half_nan(unsigned h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0; }
static int is_bf16_nan(unsigned b) { return (b & 0x7f80u) == 0x7f80u && (b & 0x7fu) != 0; }

/* ------------------------------------------------------------------------------------------ */
/* Decoding                                                                                    */

static void test_f16_to_f32_all(void **state)
{
    (void)state;
    size_t bad = 0;
    for (unsigned h = 0; h < 0x10000u; h++) {
        const float got = clnorm_f16_to_f32((unsigned short)h);
        const double want = half_value(h);
        int ok;
        if (isnan(want))
            ok = isnan(got) && (signbit(got) != 0) == ((h & 0x8000u) != 0);
        else
            ok = bits_of(got) == bits_of((float)want); /* exact: sign of zero included */
        if (!ok && bad++ < 8)
            print_error("clnorm_f16_to_f32(0x%04x) = %.9g (0x%08x), expected %.9g\n", h,
                        (double)got, (unsigned)bits_of(got), want);
    }
    if (bad)
        fail_msg("clnorm_f16_to_f32: %zu of 65536 patterns wrong", bad);
}

static void test_bf16_to_f32_all(void **state)
{
    (void)state;
    size_t bad = 0;
    for (unsigned b = 0; b < 0x10000u; b++) {
        const uint32_t got = bits_of(clnorm_bf16_to_f32((unsigned short)b));
        if (got != (uint32_t)b << 16 && bad++ < 8)
            print_error("clnorm_bf16_to_f32(0x%04x) = 0x%08x, expected 0x%08x\n", b,
                        (unsigned)got, (unsigned)((uint32_t)b << 16));
    }
    if (bad)
        fail_msg("clnorm_bf16_to_f32: %zu of 65536 patterns wrong", bad);
}

/* Every value survives f -> f32 -> f; a NaN stays a NaN of the same sign. */
static void test_round_trips(void **state)
{
    (void)state;
    size_t bad = 0;
    for (unsigned v = 0; v < 0x10000u; v++) {
        const unsigned h = clnorm_f32_to_f16(clnorm_f16_to_f32((unsigned short)v));
        const int hok = is_half_nan(v) ? is_half_nan(h) && (h & 0x8000u) == (v & 0x8000u)
                                       : h == v;
        if (!hok && bad++ < 8)
            print_error("f16 round trip of 0x%04x gave 0x%04x\n", v, h);
        const unsigned b = clnorm_f32_to_bf16(clnorm_bf16_to_f32((unsigned short)v));
        const int bok = is_bf16_nan(v) ? is_bf16_nan(b) && (b & 0x8000u) == (v & 0x8000u)
                                       : b == v;
        if (!bok && bad++ < 8)
            print_error("bf16 round trip of 0x%04x gave 0x%04x\n", v, b);
    }
    if (bad)
        fail_msg("%zu round trips failed", bad);
}

/* ------------------------------------------------------------------------------------------ */
/* Encoding: an oracle by search. For |f| between two consecutive non-negative values of the   */
/* format, the nearer wins and a tie goes to the even bit pattern; beyond the largest finite   */
/* value, the next step (2^16 for half, 2^128 for bfloat16) is where Inf begins.               */

typedef struct {
    const char *name;
    unsigned max_finite; /* bits of the largest finite value */
    unsigned inf;        /* bits of +Inf */
    double (*value)(unsigned);
    unsigned short (*encode)(float);
    int (*is_nan)(unsigned);
} format;

static unsigned short enc_f16(float f) { return clnorm_f32_to_f16(f); }
static unsigned short enc_bf16(float f) { return clnorm_f32_to_bf16(f); }

static const format F16 = {"f16", 0x7bffu, 0x7c00u, half_value, enc_f16, is_half_nan};
static const format BF16 = {"bf16", 0x7f7fu, 0x7f80u, bf16_value, enc_bf16, is_bf16_nan};

/* Value of non-negative bits k for rounding: Inf's slot is one step beyond max_finite. */
static double step_value(const format *fm, unsigned k)
{
    if (k == fm->inf)
        return fm == &F16 ? 65536.0 : ldexp(1.0, 128);
    return fm->value(k);
}

static unsigned oracle_encode(const format *fm, float f)
{
    if (isnan(f))
        return 0xffffu; /* any NaN: checked apart */
    const unsigned sign = signbit(f) ? 0x8000u : 0u;
    const double a = fabs((double)f);
    if (a >= step_value(fm, fm->inf))
        return sign | fm->inf;
    /* largest k in [0, inf] with value(k) <= a: binary search (monotonic in k) */
    unsigned lo = 0, hi = fm->inf;
    while (hi - lo > 1) {
        const unsigned mid = (lo + hi) / 2;
        if (step_value(fm, mid) <= a)
            lo = mid;
        else
            hi = mid;
    }
    if (step_value(fm, lo) == a)
        return sign | lo;
    const double dl = a - step_value(fm, lo), dh = step_value(fm, hi) - a;
    const unsigned k = dl < dh ? lo : dh < dl ? hi : (lo & 1u) ? hi : lo;
    return sign | k;
}

static size_t check_encode(const format *fm, float f, const char *why)
{
    const unsigned got = fm->encode(f);
    if (isnan(f)) {
        /* NaN stays NaN, sign kept, quiet (the top mantissa bit set) */
        const unsigned quiet = fm == &F16 ? 0x200u : 0x40u;
        if (fm->is_nan(got) && (got & quiet) && (got & 0x8000u) == (signbit(f) ? 0x8000u : 0u))
            return 0;
        print_error("clnorm_f32_to_%s(NaN 0x%08x) = 0x%04x: not a quiet NaN of the same sign "
                    "(%s)\n",
                    fm->name, (unsigned)bits_of(f), got, why);
        return 1;
    }
    const unsigned want = oracle_encode(fm, f);
    if (got == want)
        return 0;
    print_error("clnorm_f32_to_%s(%.9g = 0x%08x) = 0x%04x (%.9g), expected 0x%04x (%.9g) (%s)\n",
                fm->name, (double)f, (unsigned)bits_of(f), got, fm->value(got), want,
                fm->value(want), why);
    return 1;
}

/* Every midpoint between consecutive non-negative values (and the one past the largest finite
 * value), one float ulp either side, both signs. */
static void midpoints(const format *fm)
{
    size_t bad = 0;
    for (unsigned k = 0; k < fm->inf && bad < 16; k++) {
        const double mid = 0.5 * (step_value(fm, k) + step_value(fm, k + 1));
        const float m = (float)mid;
        if ((double)m != mid)
            fail_msg("%s: midpoint %.17g is not a float", fm->name, mid);
        const float below = nextafterf(m, 0.0f), above = nextafterf(m, INFINITY);
        const float cases[] = {m, below, above, -m, -below, -above};
        static const char *const why[] = {"midpoint", "just below a midpoint",
                                          "just above a midpoint", "negative midpoint",
                                          "just below a negative midpoint",
                                          "just above a negative midpoint"};
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            bad += check_encode(fm, cases[i], why[i]);
        /* and the ties themselves go to the even pattern */
        const unsigned tie = fm->encode(m);
        if (tie != ((k & 1u) ? k + 1 : k)) {
            print_error("clnorm_f32_to_%s(midpoint %.9g between 0x%04x and 0x%04x) = 0x%04x: "
                        "not the even one\n",
                        fm->name, (double)m, k, k + 1, tie);
            bad++;
        }
    }
    if (bad)
        fail_msg("clnorm_f32_to_%s: %zu wrong roundings at midpoints", fm->name, bad);
}

static void test_f32_to_f16_midpoints(void **state)
{
    (void)state;
    midpoints(&F16);
}

static void test_f32_to_bf16_midpoints(void **state)
{
    (void)state;
    midpoints(&BF16);
}

/* Named edge cases, then a million random floats (random bits: every exponent). */
static void edges_and_random(const format *fm, const float *edges, size_t n_edges)
{
    size_t bad = 0;
    for (size_t i = 0; i < n_edges; i++)
        bad += check_encode(fm, edges[i], "edge case");
    tu_rng rng;
    tu_rng_seed(&rng, fm == &F16 ? 16 : 17);
    for (size_t i = 0; i < 1000000 && bad < 16; i++) {
        const uint64_t u = tu_rng_u64(&rng);
        /* half the draws near the format's range, the rest anywhere */
        uint32_t bits = (uint32_t)u;
        if ((u >> 32) & 1) {
            const uint32_t lo = fm == &F16 ? 0x33000000u : 0x00000000u;
            const uint32_t hi = fm == &F16 ? 0x47800000u : 0x7f800000u;
            bits = (bits & 0x80000000u) | (lo + (uint32_t)((u >> 33) % (hi - lo)));
        }
        bad += check_encode(fm, f32_of(bits), "random");
    }
    if (bad)
        fail_msg("clnorm_f32_to_%s: %zu wrong results", fm->name, bad);
}

static void test_f32_to_f16_edges(void **state)
{
    (void)state;
    const float edges[] = {
        0.0f, -0.0f, 65504.0f, -65504.0f,
        65520.0f,                       /* midpoint to the next step: ties to Inf */
        -65520.0f, nextafterf(65520.0f, 0.0f), /* 65519.996 -> 65504 */
        65519.99f, 65536.0f, 1e6f, FLT_MAX, -FLT_MAX, INFINITY, -INFINITY,
        ldexpf(1.0f, -24), ldexpf(1.0f, -25),      /* smallest subnormal, half of it: ties to 0 */
        nextafterf(ldexpf(1.0f, -25), 1.0f),      /* just above: the smallest subnormal */
        ldexpf(1.0f, -26), 1e-30f, FLT_MIN, 1e-45f, -1e-45f, ldexpf(1023.0f, -24),
        ldexpf(1.0f, -14),                        /* smallest normal half */
        ldexpf(2047.0f, -25),                     /* midway largest subnormal / smallest normal */
        NAN, -NAN, f32_of(0x7f800001u), f32_of(0x7fffffffu), f32_of(0xffffffffu),
        f32_of(0x7f801000u), f32_of(0x7fc00000u)};
    edges_and_random(&F16, edges, sizeof edges / sizeof edges[0]);
    assert_int_equal(clnorm_f32_to_f16(65520.0f), 0x7c00);
    assert_int_equal(clnorm_f32_to_f16(65519.99f), 0x7bff);
    assert_int_equal(clnorm_f32_to_f16(-65520.0f), 0xfc00);
}

static void test_f32_to_bf16_edges(void **state)
{
    (void)state;
    const float edges[] = {
        0.0f, -0.0f, FLT_MAX, -FLT_MAX, INFINITY, -INFINITY,
        f32_of(0x7f7f8000u), /* midpoint past the largest finite bfloat16: ties to Inf */
        f32_of(0x7f7f7fffu), /* just below: the largest finite */
        f32_of(0x00008000u), f32_of(0x00018000u), f32_of(0x00000001u), FLT_MIN, 1.0f, -1.0f,
        f32_of(0x3f808000u), f32_of(0x3f818000u), /* ties to even, down and up */
        NAN, -NAN,
        f32_of(0x7fffffffu), /* NaN whose rounding add would carry into the sign/Inf */
        f32_of(0xffffffffu), f32_of(0x7f800001u), /* signalling, payload only in the low half */
        f32_of(0x7f808000u), f32_of(0xff800001u), f32_of(0x7fc00000u)};
    edges_and_random(&BF16, edges, sizeof edges / sizeof edges[0]);
    assert_int_equal(clnorm_f32_to_bf16(f32_of(0x7f7f8000u)), 0x7f80);
    assert_int_equal(clnorm_f32_to_bf16(f32_of(0x7f7f7fffu)), 0x7f7f);
}

/* ------------------------------------------------------------------------------------------ */
/* The device's stores                                                                         */

/* Hard cases for the store conversion: a sample of midpoints and their float neighbours,
 * subnormal ones included, the overflow thresholds, Inf and NaN (last). No zero (0 + -0 is
 * +0). */
static size_t hard_betas(const format *fm, float *out, size_t cap)
{
    size_t n = 0;
    const unsigned step = fm == &F16 ? 53 : 61; /* odd strides: both parities of k */
    for (unsigned k = 1; k < fm->inf && n + 6 + 12 <= cap; k += (k < 64 ? 1 : step)) {
        const float m = (float)(0.5 * (step_value(fm, k) + step_value(fm, k + 1)));
        out[n++] = m;
        out[n++] = nextafterf(m, 0.0f);
        out[n++] = nextafterf(m, INFINITY);
        out[n++] = -m;
        out[n++] = -nextafterf(m, 0.0f);
        out[n++] = -nextafterf(m, INFINITY);
    }
    const float extra[] = {fm == &F16 ? 65520.0f : f32_of(0x7f7f8000u),
                           fm == &F16 ? 65519.99f : f32_of(0x7f7f7fffu),
                           1e6f,
                           ldexpf(1.0f, -25),
                           nextafterf(ldexpf(1.0f, -25), 1.0f),
                           1e-30f,
                           INFINITY,
                           -INFINITY,
                           f32_of(0x7fc00000u),
                           f32_of(0x7fffffffu),
                           f32_of(0xffffffffu),
                           f32_of(0xff800001u)};
    for (size_t i = 0; i < sizeof extra / sizeof extra[0] && n < cap; i++)
        out[n++] = extra[i];
    return n;
}

static void device_stores(clnorm_dtype dtype, const format *fm)
{
    if (!tu_has_device(g_ctx))
        skip();
    enum { CAP = 4096 };
    float *beta = tu_alloc_filled(CAP, 0);
    const size_t cols = hard_betas(fm, beta, CAP);
    assert_true(cols > 3000);
    assert_true(isnan(beta[cols - 1])); /* the list reached its end */
    clnorm_desc d;
    clnorm_desc_init(&d, CLNORM_LAYER, 3, cols);
    d.dtype = dtype;
    d.flags = CLNORM_NO_GAMMA;
    /* constant rows: zeros, threes, -0.5s */
    unsigned short *x = tu_alloc_sentinel(dtype, 3 * cols, 0);
    const double consts[] = {0.0, 3.0, -0.5};
    for (size_t r = 0; r < 3; r++)
        for (size_t c = 0; c < cols; c++)
            clnorm_elem_store(dtype, x, r * cols + c, consts[r]);
    unsigned short *want = tu_alloc_sentinel(dtype, cols, 1);
    for (size_t c = 0; c < cols; c++)
        want[c] = fm->encode(beta[c]);
    unsigned short *y = tu_alloc_sentinel(dtype, 3 * cols, 1);
    const tu_launch launch = tu_launch_offsets(); /* tu_forward_cl: the 0.1 call */
    /* Every strategy through layer 1, then (s = TU_NUM_STRATEGIES) clnorm's choice through
     * the host layer: on a CPU device the host loop, with its own conversions (F16C where the
     * CPU has it). */
    for (int s = 0; s <= TU_NUM_STRATEGIES; s++) {
        const int host = s == TU_NUM_STRATEGIES;
        clnorm_plan *plan = tu_plan_if(g_ctx, &d, host ? CLNORM_STRATEGY_AUTO : tu_strategies[s]);
        if (plan == NULL)
            continue;
        const char *who = host ? (clnorm_plan_uses_host_loop(plan, CLNORM_FORWARD) ? "host loop" : "host layer")
                               : clnorm_strategy_name(tu_strategies[s]);
        if (host)
            assert_int_equal(clnorm_forward_host(plan, x, y, NULL, beta, NULL, NULL), CLNORM_OK);
        else
            tu_forward_cl(g_ctx, plan, &launch, x, NULL, beta, y, NULL, NULL);
        clnorm_plan_free(plan);
        size_t bad = 0;
        for (size_t r = 0; r < 3; r++) {
            for (size_t c = 0; c < cols; c++) {
                const unsigned got = y[r * cols + c], w = want[c];
                /* NaN: any NaN. y = xhat + beta is arithmetic, and IEEE 754 leaves the
                 * sign and payload of an operation's NaN result open: NVIDIA's OpenCL
                 * gives its canonical 0x7fff for every NaN beta. Else the same bits. */
                const int ok = fm->is_nan(w) ? fm->is_nan(got) : got == w;
                if (!ok && bad++ < 8)
                    print_error("%s %s store of beta %.9g (0x%08x), constant row %zu: 0x%04x, "
                                "expected 0x%04x\n",
                                who, fm->name, (double)beta[c], (unsigned)bits_of(beta[c]), r,
                                got, w);
            }
        }
        if (bad)
            fail_msg("%s: the %s stores differ from clnorm_f32_to_%s in %zu places", who,
                     fm->name, fm->name, bad);
    }
    free(beta);
    free(x);
    free(want);
    free(y);
}

static void test_device_f16_stores(void **state)
{
    (void)state;
    device_stores(CLNORM_F16, &F16);
}

static void test_device_bf16_stores(void **state)
{
    (void)state;
    device_stores(CLNORM_BF16, &BF16);
}

static int group_setup(void **state)
{
    (void)state;
    g_ctx = tu_context("convert");
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    clnorm_free(g_ctx);
    g_ctx = NULL;
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_f16_to_f32_all),
        cmocka_unit_test(test_bf16_to_f32_all),
        cmocka_unit_test(test_round_trips),
        cmocka_unit_test(test_f32_to_f16_midpoints),
        cmocka_unit_test(test_f32_to_bf16_midpoints),
        cmocka_unit_test(test_f32_to_f16_edges),
        cmocka_unit_test(test_f32_to_bf16_edges),
        cmocka_unit_test(test_device_f16_stores),
        cmocka_unit_test(test_device_bf16_stores),
    };
    return cmocka_run_group_tests_name("convert", tests, group_setup, group_teardown);
}
