/*
 * tu_compare.c - the comparisons of test_util.h: per element (abs + rel), normwise, in ulps of
 * the storage type and bitwise, every one with the NaN / Inf pattern check.
 */
#include "test_util.h"

#include <math.h>
#include <stdio.h>

#define TU_MAX_PRINT 8

/* NaN meets NaN, Inf the same Inf: 1 when the pattern matches. */
static int pattern_ok(double g, double w)
{
    if (isnan(g) || isnan(w))
        return isnan(g) && isnan(w);
    if (isinf(g) || isinf(w))
        return g == w;
    return 1;
}

/* One element: 1 when it matches. */
static int close_enough(double got, double want, double atol, double rtol)
{
    if (!pattern_ok(got, want))
        return 0;
    if (!isfinite(want))
        return 1;
    return fabs(got - want) <= atol + rtol * fabs(want);
}

size_t tu_cmp_elem(clnorm_dtype got_t, const void *got, size_t got_stride, clnorm_dtype want_t,
                   const void *want, size_t want_stride, size_t rows, size_t cols, double atol,
                   double rtol, const char *what)
{
    size_t bad = 0;
    double worst = 0.0;
    for (size_t r = 0; r < rows; r++) {
        for (size_t c = 0; c < cols; c++) {
            const double g = clnorm_elem_load(got_t, got, r * got_stride + c);
            const double w = clnorm_elem_load(want_t, want, r * want_stride + c);
            if (close_enough(g, w, atol, rtol))
                continue;
            if (bad < TU_MAX_PRINT)
                print_error("%s: [%zu, %zu] got %.9g want %.9g (diff %.3g)\n", what, r, c, g, w,
                            fabs(g - w));
            if (isfinite(g) && isfinite(w) && fabs(g - w) > worst)
                worst = fabs(g - w);
            bad++;
        }
    }
    if (bad)
        print_error("%s: %zu of %zu elements out of tolerance (abs %g + rel %g), worst %.3g\n",
                    what, bad, rows * cols, atol, rtol, worst);
    return bad;
}

/* Strides count elements of each side's own type, so a dense double array is F64. */
size_t tu_cmp_f64(const float *got, size_t got_stride, const double *want, size_t want_stride,
                  size_t rows, size_t cols, double atol, double rtol, const char *what)
{
    return tu_cmp_elem(CLNORM_F32, got, got_stride, CLNORM_F64, want, want_stride, rows, cols,
                       atol, rtol, what);
}

size_t tu_cmp_f32(const float *got, size_t got_stride, const float *want, size_t want_stride,
                  size_t rows, size_t cols, double atol, double rtol, const char *what)
{
    return tu_cmp_elem(CLNORM_F32, got, got_stride, CLNORM_F32, want, want_stride, rows, cols,
                       atol, rtol, what);
}

double tu_max_abs_diff(const float *got, size_t got_stride, const double *want,
                       size_t want_stride, size_t rows, size_t cols)
{
    double worst = 0.0;
    for (size_t r = 0; r < rows; r++) {
        for (size_t c = 0; c < cols; c++) {
            const double g = (double)got[r * got_stride + c], w = want[r * want_stride + c];
            if (isfinite(g) && isfinite(w) && fabs(g - w) > worst)
                worst = fabs(g - w);
        }
    }
    return worst;
}

size_t tu_cmp_norm(clnorm_dtype got_t, const void *got, size_t got_stride, clnorm_dtype want_t,
                   const void *want, size_t want_stride, size_t rows, size_t cols, double tol,
                   double *err_out, const char *what)
{
    size_t bad = 0, wr = 0, wc = 0;
    double worst = 0.0, max_ref = 0.0;
    for (size_t r = 0; r < rows; r++) {
        for (size_t c = 0; c < cols; c++) {
            const double g = clnorm_elem_load(got_t, got, r * got_stride + c);
            const double w = clnorm_elem_load(want_t, want, r * want_stride + c);
            if (!pattern_ok(g, w)) {
                if (bad < TU_MAX_PRINT)
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
        const double g = clnorm_elem_load(got_t, got, wr * got_stride + wc);
        const double w = clnorm_elem_load(want_t, want, wr * want_stride + wc);
        print_error("%s: max abs error %.3g at [%zu, %zu] (got %.9g want %.9g), max |ref| %.3g: "
                    "normwise error %.3g > %.3g\n",
                    what, worst, wr, wc, g, w, max_ref, err, tol);
        bad++;
    }
    if (bad)
        print_error("%s: %zu failures over %zu x %zu\n", what, bad, rows, cols);
    return bad;
}

double tu_ulp(clnorm_dtype t, const void *p, size_t i)
{
    const uint64_t b = tu_bits(t, p, i);
    int e; /* biased exponent field */
    switch (t) {
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

size_t tu_cmp_ulp(clnorm_dtype t, const void *got, size_t got_stride, const void *want,
                  size_t want_stride, size_t rows, size_t cols, double ulps, double atol,
                  const char *what)
{
    size_t bad = 0;
    double worst = 0.0; /* in ulps of the reference */
    for (size_t r = 0; r < rows; r++) {
        for (size_t c = 0; c < cols; c++) {
            const size_t gi = r * got_stride + c, wi = r * want_stride + c;
            const double g = clnorm_elem_load(t, got, gi), w = clnorm_elem_load(t, want, wi);
            int ok = pattern_ok(g, w);
            if (ok && isfinite(w)) {
                const double u = tu_ulp(t, want, wi);
                ok = fabs(g - w) <= ulps * u + atol;
                if (fabs(g - w) / u > worst)
                    worst = fabs(g - w) / u;
            }
            if (ok)
                continue;
            if (bad < TU_MAX_PRINT)
                print_error("%s: [%zu, %zu] got %.9g (0x%llx) want %.9g (0x%llx), %.3g ulp "
                            "apart\n",
                            what, r, c, g, (unsigned long long)tu_bits(t, got, gi), w,
                            (unsigned long long)tu_bits(t, want, wi),
                            isfinite(w) ? fabs(g - w) / tu_ulp(t, want, wi) : 0.0);
            bad++;
        }
    }
    if (bad)
        print_error("%s: %zu of %zu elements beyond %g ulp + %g (worst %.3g ulp)\n", what, bad,
                    rows * cols, ulps, atol, worst);
    return bad;
}

size_t tu_cmp_exact(clnorm_dtype t, const void *got, const void *want, size_t n,
                    const char *what)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        const uint64_t g = tu_bits(t, got, i), w = tu_bits(t, want, i);
        if (g == w)
            continue;
        if (bad < TU_MAX_PRINT)
            print_error("%s: element %zu has bits 0x%llx (%.9g), expected 0x%llx (%.9g)\n", what,
                        i, (unsigned long long)g, clnorm_elem_load(t, got, i),
                        (unsigned long long)w, clnorm_elem_load(t, want, i));
        bad++;
    }
    if (bad)
        print_error("%s: %zu of %zu elements differ bitwise\n", what, bad, n);
    return bad;
}

size_t tu_cmp_bits(const float *got, const float *want, size_t n, const char *what)
{
    return tu_cmp_exact(CLNORM_F32, got, want, n, what);
}
