/*
 * grad_util.c - formats, sentinels, comparisons and the float64 oracle of grad_util.h (the
 * device runners are in grad_runner.c, the problems in grad_problem.c). Nothing here calls
 * into src/ref.
 */
#include "grad_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GU_MAX_PRINT 8

/* ------------------------------------------------------------------------------------------ */
/* Formats                                                                                     */

size_t gu_size(clnorm_dtype fmt)
{
    switch (fmt) {
    case CLNORM_F16:
    case CLNORM_BF16: return 2;
    case CLNORM_F64: return 8;
    case CLNORM_F32: break;
    }
    return 4;
}

clnorm_dtype gu_param_fmt(clnorm_dtype dtype)
{
    return dtype == CLNORM_F64 ? CLNORM_F64 : CLNORM_F32;
}

const char *gu_fmt_name(clnorm_dtype fmt)
{
    switch (fmt) {
    case CLNORM_F16: return "f16";
    case CLNORM_BF16: return "bf16";
    case CLNORM_F64: return "f64";
    case CLNORM_F32: break;
    }
    return "f32";
}

double gu_get(clnorm_dtype fmt, const void *p, size_t i)
{
    switch (fmt) {
    case CLNORM_F16: return clnorm_f16_to_f32(((const unsigned short *)p)[i]);
    case CLNORM_BF16: return clnorm_bf16_to_f32(((const unsigned short *)p)[i]);
    case CLNORM_F64: return ((const double *)p)[i];
    case CLNORM_F32: break;
    }
    return ((const float *)p)[i];
}

void gu_set(clnorm_dtype fmt, void *p, size_t i, double v)
{
    switch (fmt) {
    case CLNORM_F16: ((unsigned short *)p)[i] = clnorm_f32_to_f16((float)v); return;
    case CLNORM_BF16: ((unsigned short *)p)[i] = clnorm_f32_to_bf16((float)v); return;
    case CLNORM_F64: ((double *)p)[i] = v; return;
    case CLNORM_F32: break;
    }
    ((float *)p)[i] = (float)v;
}

uint64_t gu_bits(clnorm_dtype fmt, const void *p, size_t i)
{
    const unsigned char *b = (const unsigned char *)p + i * gu_size(fmt);
    switch (gu_size(fmt)) {
    case 2: {
        uint16_t u;
        memcpy(&u, b, sizeof u);
        return u;
    }
    case 8: {
        uint64_t u;
        memcpy(&u, b, sizeof u);
        return u;
    }
    default: {
        uint32_t u;
        memcpy(&u, b, sizeof u);
        return u;
    }
    }
}

static void put_bits(clnorm_dtype fmt, void *p, size_t i, uint64_t bits)
{
    unsigned char *b = (unsigned char *)p + i * gu_size(fmt);
    if (gu_size(fmt) == 2) {
        const uint16_t u = (uint16_t)bits;
        memcpy(b, &u, sizeof u);
    } else if (gu_size(fmt) == 8) {
        memcpy(b, &bits, sizeof bits);
    } else {
        const uint32_t u = (uint32_t)bits;
        memcpy(b, &u, sizeof u);
    }
}

uint64_t gu_sentinel(clnorm_dtype fmt, int output)
{
    switch (fmt) {
    case CLNORM_F16: return output ? 0x7EEFu : 0x7E51u;
    case CLNORM_BF16: return output ? 0x7FEFu : 0x7FD1u;
    case CLNORM_F64:
        return output ? UINT64_C(0x7FF8BEEFBEEFBEEF) : UINT64_C(0x7FF8D1D1D1D1D1D1);
    case CLNORM_F32: break;
    }
    return output ? TU_SENTINEL_OUT_BITS : TU_SENTINEL_IN_BITS;
}

void *gu_alloc_sentinel(clnorm_dtype fmt, size_t n, int output)
{
    void *p = malloc(n * gu_size(fmt) + 1);
    if (p == NULL)
        fail_msg("out of host memory (%zu elements)", n);
    const uint64_t s = gu_sentinel(fmt, output);
    for (size_t i = 0; i < n; i++)
        put_bits(fmt, p, i, s);
    return p;
}

static size_t count_changed_at(clnorm_dtype fmt, const void *p, size_t i, uint64_t s,
                               size_t bad, const char *what, size_t row, size_t col)
{
    const uint64_t u = gu_bits(fmt, p, i);
    if (u == s)
        return 0;
    if (bad < GU_MAX_PRINT)
        print_error("%s: element %zu (row %zu, column %zu) changed: bits 0x%llx (%g), "
                    "sentinel 0x%llx\n",
                    what, i, row, col, (unsigned long long)u, gu_get(fmt, p, i),
                    (unsigned long long)s);
    return 1;
}

size_t gu_count_changed(clnorm_dtype fmt, const void *p, size_t n, int output,
                        const char *what)
{
    const uint64_t s = gu_sentinel(fmt, output);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += count_changed_at(fmt, p, i, s, bad, what, 0, i);
    return bad;
}

size_t gu_count_gap_changed(clnorm_dtype fmt, const void *p, size_t rows, size_t cols,
                            size_t stride, int output, const char *what)
{
    const uint64_t s = gu_sentinel(fmt, output);
    size_t bad = 0;
    for (size_t r = 0; r + 1 < rows; r++)
        for (size_t c = cols; c < stride; c++)
            bad += count_changed_at(fmt, p, r * stride + c, s, bad, what, r, c);
    return bad;
}

void *gu_make_input(tu_rng *rng, clnorm_dtype fmt, size_t rows, size_t cols, size_t stride,
                    double offset, double scale)
{
    if (stride == 0)
        stride = cols;
    void *p = gu_alloc_sentinel(fmt, tu_extent(rows, cols, stride), 0);
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++)
            gu_set(fmt, p, r * stride + c, offset + scale * tu_rng_normal(rng));
    return p;
}

void *gu_make_vector(tu_rng *rng, clnorm_dtype fmt, size_t n, double offset, double scale)
{
    return gu_make_input(rng, fmt, n ? 1 : 0, n ? n : 1, 0, offset, scale);
}

void *gu_dup(clnorm_dtype fmt, const void *p, size_t n)
{
    void *q = malloc(n * gu_size(fmt) + 1);
    if (q == NULL)
        fail_msg("out of host memory (%zu elements)", n);
    if (n)
        memcpy(q, p, n * gu_size(fmt));
    return q;
}

/* ------------------------------------------------------------------------------------------ */
/* Comparisons                                                                                 */

/* NaN meets NaN, Inf the same Inf: 1 when the pattern matches. */
static int pattern_ok(double g, double w)
{
    if (isnan(g) || isnan(w))
        return isnan(g) && isnan(w);
    if (isinf(g) || isinf(w))
        return g == w;
    return 1;
}

size_t gu_cmp_norm(clnorm_dtype got_fmt, const void *got, size_t got_stride,
                   clnorm_dtype want_fmt, const void *want, size_t want_stride, size_t rows,
                   size_t cols, double tol, double *err_out, const char *what)
{
    size_t bad = 0, wr = 0, wc = 0;
    double worst = 0.0, max_ref = 0.0;
    for (size_t r = 0; r < rows; r++) {
        for (size_t c = 0; c < cols; c++) {
            const double g = gu_get(got_fmt, got, r * got_stride + c);
            const double w = gu_get(want_fmt, want, r * want_stride + c);
            if (!pattern_ok(g, w)) {
                if (bad < GU_MAX_PRINT)
                    print_error("%s: [%zu, %zu] got %.9g want %.9g (NaN/Inf pattern)\n", what,
                                r, c, g, w);
                bad++;
                continue;
            }
            if (!isfinite(w))
                continue;
            if (fabs(w) > max_ref)
                max_ref = fabs(w);
            if (fabs(g - w) > worst) {
                worst = fabs(g - w);
                wr = r;
                wc = c;
            }
        }
    }
    const double err = worst / (max_ref > 1.0 ? max_ref : 1.0);
    if (err_out)
        *err_out = err;
    if (!(err <= tol)) {
        const double g = gu_get(got_fmt, got, wr * got_stride + wc);
        const double w = gu_get(want_fmt, want, wr * want_stride + wc);
        print_error("%s: max abs error %.3g at [%zu, %zu] (got %.9g want %.9g), max |ref| %.3g: "
                    "normwise error %.3g > %.3g\n",
                    what, worst, wr, wc, g, w, max_ref, err, tol);
        bad++;
    }
    if (bad)
        print_error("%s: %zu failures over %zu x %zu\n", what, bad, rows, cols);
    return bad;
}

double gu_ulp(clnorm_dtype fmt, const void *p, size_t i)
{
    const uint64_t b = gu_bits(fmt, p, i);
    int e; /* biased exponent field */
    switch (fmt) {
    case CLNORM_F16:
        e = (int)((b >> 10) & 0x1f);
        return ldexp(1.0, (e ? e : 1) - 15 - 10);
    case CLNORM_BF16:
        e = (int)((b >> 7) & 0xff);
        return ldexp(1.0, (e ? e : 1) - 127 - 7);
    case CLNORM_F64:
        e = (int)((b >> 52) & 0x7ff);
        return ldexp(1.0, (e ? e : 1) - 1023 - 52);
    case CLNORM_F32: break;
    }
    e = (int)((b >> 23) & 0xff);
    return ldexp(1.0, (e ? e : 1) - 127 - 23);
}

size_t gu_cmp_ulp(clnorm_dtype fmt, const void *got, size_t got_stride, const void *want,
                  size_t want_stride, size_t rows, size_t cols, double ulps, double atol,
                  const char *what)
{
    size_t bad = 0;
    double worst = 0.0; /* in ulps of the reference */
    for (size_t r = 0; r < rows; r++) {
        for (size_t c = 0; c < cols; c++) {
            const size_t gi = r * got_stride + c, wi = r * want_stride + c;
            const double g = gu_get(fmt, got, gi), w = gu_get(fmt, want, wi);
            int ok = pattern_ok(g, w);
            if (ok && isfinite(w)) {
                const double u = gu_ulp(fmt, want, wi);
                ok = fabs(g - w) <= ulps * u + atol;
                if (fabs(g - w) / u > worst)
                    worst = fabs(g - w) / u;
            }
            if (ok)
                continue;
            if (bad < GU_MAX_PRINT)
                print_error("%s: [%zu, %zu] got %.9g (0x%llx) want %.9g (0x%llx), %.3g ulp "
                            "apart\n",
                            what, r, c, g, (unsigned long long)gu_bits(fmt, got, gi), w,
                            (unsigned long long)gu_bits(fmt, want, wi),
                            isfinite(w) ? fabs(g - w) / gu_ulp(fmt, want, wi) : 0.0);
            bad++;
        }
    }
    if (bad)
        print_error("%s: %zu of %zu elements beyond %g ulp + %g (worst %.3g ulp)\n", what, bad,
                    rows * cols, ulps, atol, worst);
    return bad;
}

size_t gu_cmp_exact(clnorm_dtype fmt, const void *got, const void *want, size_t n,
                    const char *what)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        const uint64_t g = gu_bits(fmt, got, i), w = gu_bits(fmt, want, i);
        if (g == w)
            continue;
        if (bad < GU_MAX_PRINT)
            print_error("%s: element %zu has bits 0x%llx (%.9g), expected 0x%llx (%.9g)\n", what,
                        i, (unsigned long long)g, gu_get(fmt, got, i), (unsigned long long)w,
                        gu_get(fmt, want, i));
        bad++;
    }
    if (bad)
        print_error("%s: %zu of %zu elements differ bitwise\n", what, bad, n);
    return bad;
}

/* ------------------------------------------------------------------------------------------ */
/* float64 oracle                                                                              */

void gu_oracle_backward(clnorm_kind kind, size_t rows, size_t cols, const double *x,
                        const double *dy, const double *mean, const double *rstd,
                        const double *gamma, double *dx, double *dgamma, double *dbeta)
{
    for (size_t c = 0; c < cols; c++) {
        if (dgamma)
            dgamma[c] = 0.0;
        if (dbeta)
            dbeta[c] = 0.0;
    }
    for (size_t r = 0; r < rows; r++) {
        const double *xr = x + r * cols, *dyr = dy + r * cols;
        const double mu = (kind == CLNORM_LAYER && mean) ? mean[r] : 0.0, rs = rstd[r];
        double sum_g = 0.0, sum_gx = 0.0;
        for (size_t c = 0; c < cols; c++) {
            const double xh = (xr[c] - mu) * rs, g = dyr[c] * (gamma ? gamma[c] : 1.0);
            sum_g += g;
            sum_gx += g * xh;
            if (dgamma)
                dgamma[c] += dyr[c] * xh;
            if (dbeta)
                dbeta[c] += dyr[c];
        }
        const double mg = kind == CLNORM_LAYER ? sum_g / (double)cols : 0.0;
        const double mgx = sum_gx / (double)cols;
        for (size_t c = 0; dx && c < cols; c++) {
            const double xh = (xr[c] - mu) * rs, g = dyr[c] * (gamma ? gamma[c] : 1.0);
            dx[r * cols + c] = rs * (g - mg - xh * mgx);
        }
    }
}
