/*
 * test_dtypes_special.c - special values in every storage format (F32, F16, BF16, F64), every
 * device strategy, forward and backward:
 *   - constant rows (LayerNorm) and zero rows (RMSNorm) give exactly beta, in the storage
 *     format, and no NaN: eps must not underflow (a known bug class of half arithmetic), and
 *     extreme constants (65504 in F16, 3e38 in F32 / BF16, 1e300 in F64) must not overflow;
 *   - NaN and Inf in x, and NaN in dy, stay in their own row (forward, dx) or column (dgamma,
 *     dbeta): the NaN / Inf pattern must be the reference's;
 *   - subnormal float16 inputs are decoded (not flushed), and subnormal float16 outputs are
 *     rounded right (1 ulp, no absolute slack).
 * Tolerances otherwise as in test_dtypes.c (tu_problem.h).
 */
#include "tu_problem.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define ALL_GRADS (CLNORM_GRAD_X | CLNORM_GRAD_GAMMA | CLNORM_GRAD_BETA)

static clnorm_ctx *g_ctx;

/* A problem's tensors by slot: inputs, and the reference's outputs. */
#define IN(q, S) ((q)->in.p[CLNORM_ARG_##S])
#define REF(q, S) ((q)->ref.p[CLNORM_ARG_##S])

static tu_launch fwd_launch(void) { return tu_launch_v01(CLNORM_FORWARD, 0); }
static tu_launch bwd_launch(void) { return tu_launch_v01(CLNORM_BACKWARD, 0); }

static const clnorm_dtype all_dtypes[] = {CLNORM_F32, CLNORM_F16, CLNORM_BF16, CLNORM_F64};
static const size_t cols_list[] = {1, 7, 64, 1000, 4097};

/* Plan or NULL (subgroup on long rows, F64 without fp64: see test_dtypes.c). */
static clnorm_plan *plan_if(const clnorm_desc *d, clnorm_strategy s)
{
    return tu_plan_if(g_ctx, d, s);
}

/* The largest finite constant worth trying in a format, and its smallest subnormal-ish one. */
static double big_constant(clnorm_dtype t)
{
    switch (t) {
    case CLNORM_F16: return 65504.0;
    case CLNORM_F64: return 1e300;
    case CLNORM_F32:
    case CLNORM_BF16: break;
    }
    return 3e38;
}

static double tiny_constant(clnorm_dtype t)
{
    switch (t) {
    case CLNORM_F16: return ldexp(5.0, -24);
    case CLNORM_F64: return 1e-310;
    case CLNORM_F32:
    case CLNORM_BF16: break;
    }
    return 1e-39;
}

/* Row r of p's x set to v everywhere. */
static void set_row(void *x, clnorm_dtype t, size_t stride, size_t r, size_t cols, double v)
{
    for (size_t c = 0; c < cols; c++)
        clnorm_elem_store(t, x, r * stride + c, v);
}

/* ------------------------------------------------------------------------------------------ */
/* Constant rows                                                                               */

/* Checks the constant rows of one answer: y exactly beta in the storage format, mean the
 * constant (normwise), rstd 1/sqrt(eps) (normwise). Returns the number of failures. */
static size_t check_const(const tu_problem *p, const void *y, const void *mean,
                          const void *rstd, const size_t *rows, const double *values, size_t n,
                          const char *who)
{
    const clnorm_desc *d = &p->desc;
    const clnorm_dtype T = d->dtype, P = clnorm_elem_param_type(d->dtype);
    const double tol = T == CLNORM_F64 ? 1e-12 : 1e-5;
    void *want = tu_alloc_sentinel(T, d->cols, 1);
    for (size_t c = 0; c < d->cols; c++)
        /* exact for F32 / F64, rounded for 16 bits */
        clnorm_elem_store(T, want, c, clnorm_elem_load(P, IN(p, BETA), c));
    void *stat = tu_alloc_sentinel(P, 1, 1);
    size_t bad = 0;
    char what[300];
    for (size_t i = 0; i < n; i++) {
        const size_t r = rows[i];
        snprintf(what, sizeof what, "%s: constant row %zu (%g): y", who, r, values[i]);
        bad += tu_cmp_exact(T, (const char *)y + r * tu_y_stride(d) * clnorm_elem_size(T), want,
                            d->cols, what);
        if (mean != NULL && d->kind == CLNORM_LAYER) {
            clnorm_elem_store(P, stat, 0, clnorm_elem_load(T, IN(p, X), r * tu_x_stride(d)));
            snprintf(what, sizeof what, "%s: constant row %zu (%g): mean", who, r, values[i]);
            bad += tu_cmp_norm(P, (const char *)mean + r * clnorm_elem_size(P), 1, P, stat, 1, 1, 1,
                               tol, NULL, what);
        }
        if (rstd != NULL) {
            clnorm_elem_store(P, stat, 0, 1.0 / sqrt((double)d->eps));
            snprintf(what, sizeof what, "%s: constant row %zu (%g): rstd", who, r, values[i]);
            bad += tu_cmp_norm(P, (const char *)rstd + r * clnorm_elem_size(P), 1, P, stat, 1, 1, 1,
                               tol, NULL, what);
        }
    }
    free(want);
    free(stat);
    return bad;
}

/* Every strategy (layer 1), then the reference: constant rows exactly beta (check_const), the
 * other rows as the reference's. Device failures fail the test at once; the reference's are
 * returned (so that one of them does not hide the devices' other cases). */
static size_t check_constant_rows(const tu_problem *p, const size_t *const_rows,
                                const double *values, size_t n)
{
    const clnorm_desc *d = &p->desc;
    const clnorm_dtype T = d->dtype, P = clnorm_elem_param_type(d->dtype);
    const tu_launch launch = fwd_launch();
    const size_t ys = tu_y_stride(d);
    char who[200];
    for (int s = 0; s < TU_NUM_STRATEGIES; s++) {
        clnorm_plan *plan = plan_if(d, tu_strategies[s]);
        if (plan == NULL)
            continue;
        void *y = tu_alloc_sentinel(T, tu_extent(d->rows, d->cols, ys), 1);
        void *mean = tu_alloc_sentinel(P, d->rows, 1), *rstd = tu_alloc_sentinel(P, d->rows, 1);
        tu_forward_cl(g_ctx, plan, &launch, IN(p, X), IN(p, GAMMA), IN(p, BETA), y,
                      d->kind == CLNORM_LAYER ? mean : NULL, rstd);
        snprintf(who, sizeof who, "%s %s %s %zux%zu", clnorm_strategy_name(tu_strategies[s]),
                 tu_dtype_name(T), d->kind == CLNORM_RMS ? "rms" : "layer", d->rows, d->cols);
        size_t bad = check_const(p, y, mean, rstd, const_rows, values, n, who);
        /* the other rows: each compared alone with the reference */
        for (size_t r = 0; r < d->rows; r++) {
            int is_const = 0;
            for (size_t i = 0; i < n; i++)
                is_const |= const_rows[i] == r;
            if (is_const)
                continue;
            char what[260];
            snprintf(what, sizeof what, "%s: row %zu", who, r);
            const char *yr = (const char *)y + r * ys * clnorm_elem_size(T);
            const char *wr = (const char *)REF(p, Y) + r * d->cols * clnorm_elem_size(T);
            bad += T == CLNORM_F16 || T == CLNORM_BF16
                       ? tu_cmp_ulp(T, yr, d->cols, wr, d->cols, 1, d->cols, 1.0, 1e-5, what)
                       : tu_cmp_norm(T, yr, d->cols, T, wr, d->cols, 1, d->cols,
                                     T == CLNORM_F64 ? 1e-12 : 1e-5, NULL, what);
        }
        free(y);
        free(mean);
        free(rstd);
        clnorm_plan_free(plan);
        if (bad)
            fail_msg("%s: %zu failures on constant rows", who, bad);
    }
    snprintf(who, sizeof who, "reference %s %s %zux%zu", tu_dtype_name(T),
             d->kind == CLNORM_RMS ? "rms" : "layer", d->rows, d->cols);
    clnorm_desc dense = *d;
    dense.y_stride = 0;
    tu_problem q = *p;
    q.desc = dense;
    return check_const(&q, REF(p, Y), REF(p, MEAN), REF(p, RSTD), const_rows, values, n, who);
}

static void test_constant_rows(void **state)
{
    (void)state;
    if (!tu_has_device(g_ctx))
        skip();
    size_t ref_bad = 0;
    for (size_t t = 0; t < COUNT(all_dtypes); t++) {
        const clnorm_dtype T = all_dtypes[t];
        /* 0.1 and 1/3 are not sums of few powers of two: n copies of them add up inexactly in
         * float64 */
        const double values[] = {0.0,    1.0,  -3.5,       1000.0,          big_constant(T),
                                 -big_constant(T), 0.1, 1.0 / 3.0, tiny_constant(T)};
        for (size_t ci = 0; ci < COUNT(cols_list); ci++) {
            for (unsigned g = 0; g <= 1; g++) {
                /* rows 0, 2, 4, ... constant; odd rows random */
                const size_t rows = 2 * COUNT(values);
                tu_problem p;
                tu_problem_make_rows(&p, CLNORM_FORWARD, T, CLNORM_LAYER, rows, cols_list[ci], 0, 0,
                            CLNORM_SAVE_STATS | (g ? 0u : CLNORM_NO_GAMMA),
                            100 * t + 2 * ci + g, NULL);
                size_t const_rows[COUNT(values)];
                for (size_t v = 0; v < COUNT(values); v++) {
                    const_rows[v] = 2 * v;
                    set_row(IN(&p, X), T, cols_list[ci], 2 * v, cols_list[ci], values[v]);
                }
                tu_problem_reference(&p);
                ref_bad += check_constant_rows(&p, const_rows, values, COUNT(values));
                tu_problem_free(&p);
            }
        }
    }
    if (ref_bad)
        fail_msg("clnorm_ref_forward: %zu mismatches on constant rows (the devices passed)",
                 ref_bad);
}

/* RMSNorm of a zero row is beta, exactly. */
static void test_zero_rows_rms(void **state)
{
    (void)state;
    if (!tu_has_device(g_ctx))
        skip();
    size_t ref_bad = 0;
    for (size_t t = 0; t < COUNT(all_dtypes); t++) {
        for (size_t ci = 0; ci < COUNT(cols_list); ci++) {
            tu_problem p;
            tu_problem_make_rows(&p, CLNORM_FORWARD, all_dtypes[t], CLNORM_RMS, 5, cols_list[ci], 0,
                                 0, CLNORM_SAVE_STATS, 300 + 10 * t + ci, NULL);
            const size_t zero_rows[] = {0, 3};
            const double zeros[] = {0.0, 0.0};
            for (size_t i = 0; i < COUNT(zero_rows); i++)
                set_row(IN(&p, X), all_dtypes[t], cols_list[ci], zero_rows[i], cols_list[ci], 0.0);
            tu_problem_reference(&p);
            ref_bad += check_constant_rows(&p, zero_rows, zeros, COUNT(zero_rows));
            tu_problem_free(&p);
        }
    }
    if (ref_bad)
        fail_msg("clnorm_ref_forward: %zu mismatches on zero rows", ref_bad);
}

/* The backward pass of constant rows: xhat = 0, dx = rstd * (g - mean(g)), finite. */
static void test_constant_rows_backward(void **state)
{
    (void)state;
    if (!tu_has_device(g_ctx))
        skip();
    const tu_launch launch = bwd_launch();
    for (size_t t = 0; t < COUNT(all_dtypes); t++) {
        const clnorm_dtype T = all_dtypes[t];
        for (size_t ci = 0; ci < COUNT(cols_list); ci++) {
            tu_problem p;
            tu_problem_make_rows(&p, CLNORM_BACKWARD, T, CLNORM_LAYER, 4, cols_list[ci], 0, 0, 0,
                                 400 + 10 * t + ci, NULL);
            set_row(IN(&p, X), T, cols_list[ci], 0, cols_list[ci], 1000.0);
            set_row(IN(&p, X), T, cols_list[ci], 2, cols_list[ci], big_constant(T));
            tu_problem_reference(&p);
            /* the reference's dx of those rows is finite */
            for (size_t c = 0; c < cols_list[ci]; c++)
                if (!isfinite(clnorm_elem_load(T, REF(&p, DX), c)) ||
                    !isfinite(clnorm_elem_load(T, REF(&p, DX), 2 * cols_list[ci] + c)))
                    fail_msg("reference %s dx of a constant row is not finite", tu_dtype_name(T));
            for (int s = 0; s < TU_NUM_STRATEGIES; s++) {
                clnorm_plan *plan = plan_if(&p.desc, tu_strategies[s]);
                if (plan != NULL)
                    tu_problem_run_cl(g_ctx, &p, plan, &launch, tu_grad_slots(ALL_GRADS), NULL);
                clnorm_plan_free(plan);
            }
            tu_problem_free(&p);
        }
    }
}

/* ------------------------------------------------------------------------------------------ */
/* NaN and Inf                                                                                 */

/* Poisons x: NaN in rows 1 (middle column) and 4 (column 0), or +Inf in row 3 (last column)
 * and -Inf in row 4 (column 0, where a shifted algorithm takes its shift). rows >= 6. */
static void poison_x(void *x, clnorm_dtype t, size_t stride, size_t cols, int inf)
{
    if (inf) {
        clnorm_elem_store(t, x, 3 * stride + cols - 1, INFINITY);
        clnorm_elem_store(t, x, 4 * stride + 0, -INFINITY);
        /* inf == 2 (the statistics): row 4 holds both infinities, whose mean is NaN however
         * its sums are ordered. With -Inf alone at its start, the mean is -Inf where the Inf
         * reaches the end of the sums and NaN where a Kahan or Chan step meets it again (Inf
         * - Inf), which the strategies' different orders decide. */
        if (inf == 2 && cols > 1)
            clnorm_elem_store(t, x, 4 * stride + 1, INFINITY);
    } else {
        clnorm_elem_store(t, x, 1 * stride + cols / 2, NAN);
        clnorm_elem_store(t, x, 4 * stride + 0, NAN);
    }
}

/* y of every row as the reference's (finite rows within tolerance, the NaN / Inf pattern of the
 * others the same), with or without the statistics. */
static void poisoned_forward(int inf, unsigned flags)
{
    if (!tu_has_device(g_ctx))
        skip();
    const tu_launch launch = fwd_launch();
    for (size_t t = 0; t < COUNT(all_dtypes); t++) {
        for (size_t ci = 0; ci < COUNT(cols_list); ci++) {
            for (int kind = 0; kind < 2; kind++) {
                tu_problem p;
                tu_problem_make_rows(&p, CLNORM_FORWARD, all_dtypes[t], (clnorm_kind)kind, 6,
                                     cols_list[ci], 0, 0, flags,
                                     500 + 20 * t + 2 * ci + (uint64_t)kind, NULL);
                poison_x(IN(&p, X), all_dtypes[t], cols_list[ci], cols_list[ci],
                         inf && (flags & CLNORM_SAVE_STATS) ? 2 : inf);
                tu_problem_reference(&p);
                /* the yardstick: rows 0, 2, 5 finite */
                for (size_t c = 0; c < cols_list[ci]; c++)
                    for (size_t r = 0; r < 6; r += (r == 0 ? 2 : 3))
                        if (!isfinite(
                                clnorm_elem_load(all_dtypes[t], REF(&p, Y), r * cols_list[ci] + c)))
                            fail_msg("reference: NaN / Inf left its row");
                for (int s = 0; s < TU_NUM_STRATEGIES; s++) {
                    clnorm_plan *plan = plan_if(&p.desc, tu_strategies[s]);
                    if (plan != NULL)
                        tu_problem_run_cl(g_ctx, &p, plan, &launch, 0, NULL);
                    clnorm_plan_free(plan);
                }
                tu_problem_free(&p);
            }
        }
    }
}

/* NaN rows: y, mean and rstd NaN in those rows only. */
static void test_nan_forward(void **state)
{
    (void)state;
    poisoned_forward(0, CLNORM_SAVE_STATS);
}

/* Inf rows, y alone: LayerNorm gives NaN rows; RMSNorm has rstd = 1/sqrt(Inf) = 0, so the
 * finite elements of the row give exactly beta and the Inf one NaN (as PyTorch). */
static void test_inf_forward(void **state)
{
    (void)state;
    poisoned_forward(1, 0);
}

/* Inf rows, statistics, with the reference's pattern: the mean of a row holding +Inf at its end
 * (and no NaN, no -Inf) is +Inf, that of a row holding both infinities NaN (poison_x, 2); the
 * RMS rstd of such a row is 0. */
static void test_inf_stats(void **state)
{
    (void)state;
    poisoned_forward(1, CLNORM_SAVE_STATS);
}

/* NaN / Inf in x poison dx of their row and dgamma (every column sums that row's xhat), not
 * dbeta (a sum of dy); a NaN in dy poisons dx of its row and dgamma / dbeta of its column
 * only; an Inf in dy makes dbeta of its column that Inf (and dgamma +-Inf or NaN as
 * dy * xhat goes). Statistics from the reference forward. The reference decides; the device
 * must have its pattern. what: 0 NaN in x, 1 Inf in x, 2 NaN in dy, 3 Inf in dy. */
static void poisoned_backward(int what)
{
    if (!tu_has_device(g_ctx))
        skip();
    const tu_launch launch = bwd_launch();
    for (size_t t = 0; t < COUNT(all_dtypes); t++) {
        for (size_t ci = 0; ci < COUNT(cols_list); ci++) {
            for (int kind = 0; kind < 2; kind++) {
                const clnorm_dtype T = all_dtypes[t];
                const size_t cols = cols_list[ci];
                tu_problem p;
                tu_problem_make_rows(&p, CLNORM_BACKWARD, T, (clnorm_kind)kind, 6, cols, 0, 0, 0,
                            600 + 40 * t + 4 * ci + 2 * (uint64_t)kind, NULL);
                if (what >= 2)
                    clnorm_elem_store(T, IN(&p, DY), 2 * cols + cols / 3,
                                      what == 2 ? NAN : -INFINITY);
                else
                    poison_x(IN(&p, X), T, cols, cols, what);
                tu_problem_reference(&p);
                if (what < 2) {
                    for (size_t c = 0; c < cols; c++)
                        if (!isfinite(
                                clnorm_elem_load(clnorm_elem_param_type(T), REF(&p, DBETA), c)))
                            fail_msg("reference: dbeta poisoned by x");
                }
                for (int s = 0; s < TU_NUM_STRATEGIES; s++) {
                    clnorm_plan *plan = plan_if(&p.desc, tu_strategies[s]);
                    if (plan != NULL)
                        tu_problem_run_cl(g_ctx, &p, plan, &launch, tu_grad_slots(ALL_GRADS), NULL);
                    clnorm_plan_free(plan);
                }
                tu_problem_free(&p);
            }
        }
    }
}

static void test_nan_backward(void **state)
{
    (void)state;
    poisoned_backward(0);
    poisoned_backward(2);
}

static void test_inf_backward(void **state)
{
    (void)state;
    poisoned_backward(1);
    poisoned_backward(3);
}

/* ------------------------------------------------------------------------------------------ */
/* Subnormal halves                                                                            */

/* x (and dy) made of subnormal halves k * 2^-24, 0 < |k| < 1024: decoding them as zero would
 * move y and dx by up to ~0.02 (rstd ~ 1/sqrt(eps)). */
static void fill_subnormal(tu_rng *rng, void *p, size_t rows, size_t cols, size_t stride)
{
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++) {
            const uint64_t u = tu_rng_u64(rng);
            unsigned short h = (unsigned short)(1 + (u % 1023));
            if (u & 0x100000u)
                h |= 0x8000u;
            memcpy((char *)p + (r * stride + c) * 2, &h, 2);
        }
}

static void test_subnormal_f16(void **state)
{
    (void)state;
    if (!tu_has_device(g_ctx))
        skip();
    const tu_launch flaunch = fwd_launch(), blaunch = bwd_launch();
    for (size_t ci = 0; ci < COUNT(cols_list); ci++) {
        for (int kind = 0; kind < 2; kind++) {
            tu_rng rng;
            tu_rng_seed(&rng, 700 + 2 * ci + (uint64_t)kind);
            tu_problem f;
            tu_problem_make_rows(&f, CLNORM_FORWARD, CLNORM_F16, (clnorm_kind)kind, 5,
                                 cols_list[ci], 0, 0, CLNORM_SAVE_STATS, 0, NULL);
            fill_subnormal(&rng, IN(&f, X), 5, cols_list[ci], cols_list[ci]);
            tu_problem_reference(&f);
            tu_problem b;
            tu_problem_make_rows(&b, CLNORM_BACKWARD, CLNORM_F16, (clnorm_kind)kind, 5,
                                 cols_list[ci], 0, 0, 0, 1, NULL);
            fill_subnormal(&rng, IN(&b, X), 5, cols_list[ci], cols_list[ci]);
            fill_subnormal(&rng, IN(&b, DY), 5, cols_list[ci], cols_list[ci]);
            tu_problem_reference(&b);
            for (int s = 0; s < TU_NUM_STRATEGIES; s++) {
                clnorm_plan *plan = tu_plan_if(g_ctx, &f.desc, tu_strategies[s]);
                if (plan != NULL)
                    tu_problem_run_cl(g_ctx, &f, plan, &flaunch, 0, NULL);
                clnorm_plan_free(plan);
                plan = tu_plan_if(g_ctx, &b.desc, tu_strategies[s]);
                if (plan != NULL)
                    tu_problem_run_cl(g_ctx, &b, plan, &blaunch, tu_grad_slots(ALL_GRADS), NULL);
                clnorm_plan_free(plan);
            }
            tu_problem_free(&f);
            tu_problem_free(&b);
        }
    }
}

/* Outputs in the subnormal range of float16 (gamma ~ 1e-5, no beta): within 1 ulp of the
 * reference with no absolute slack, so a store that flushes or truncates them fails. */
static void test_subnormal_f16_outputs(void **state)
{
    (void)state;
    if (!tu_has_device(g_ctx))
        skip();
    const tu_launch launch = fwd_launch();
    for (size_t ci = 0; ci < COUNT(cols_list); ci++) {
        tu_problem p;
        tu_problem_make_rows(&p, CLNORM_FORWARD, CLNORM_F16, CLNORM_LAYER, 4, cols_list[ci], 0, 0,
                             CLNORM_NO_BETA, 800 + ci, NULL);
        for (size_t c = 0; c < cols_list[ci]; c++)
            ((float *)IN(&p, GAMMA))[c] *= 1e-5f;
        tu_problem_reference(&p);
        for (int s = 0; s < TU_NUM_STRATEGIES; s++) {
            clnorm_plan *plan = tu_plan_if(g_ctx, &p.desc, tu_strategies[s]);
            if (plan == NULL)
                continue;
            tu_args out;
            tu_problem_run_cl(g_ctx, &p, plan, &launch, 0, &out);
            void *y = out.p[CLNORM_ARG_Y];
            char what[120];
            snprintf(what, sizeof what, "%s f16 subnormal outputs, %zu columns",
                     clnorm_strategy_name(tu_strategies[s]), cols_list[ci]);
            const size_t bad = tu_cmp_ulp(CLNORM_F16, y, cols_list[ci], REF(&p, Y), cols_list[ci],
                                          4, cols_list[ci], 1.0, 0.0, what);
            tu_args_free(&out);
            clnorm_plan_free(plan);
            if (bad)
                fail_msg("%s: %zu elements beyond 1 ulp", what, bad);
        }
        tu_problem_free(&p);
    }
}

static int group_setup(void **state)
{
    (void)state;
    g_ctx = tu_context("dtypes special");
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
        cmocka_unit_test(test_constant_rows),
        cmocka_unit_test(test_zero_rows_rms),
        cmocka_unit_test(test_constant_rows_backward),
        cmocka_unit_test(test_nan_forward),
        cmocka_unit_test(test_nan_backward),
        cmocka_unit_test(test_inf_forward),
        cmocka_unit_test(test_inf_stats),
        cmocka_unit_test(test_inf_backward),
        cmocka_unit_test(test_subnormal_f16),
        cmocka_unit_test(test_subnormal_f16_outputs),
    };
    return cmocka_run_group_tests_name("dtypes special", tests, group_setup, group_teardown);
}
