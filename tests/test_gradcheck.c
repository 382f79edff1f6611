/*
 * test_gradcheck.c - the CPU reference's backward pass against central finite differences of
 * its forward pass, all in float64 (F64 dtype), for every operation of the registry: the
 * scalar loss
 *   L = sum(y * w_y) + sum(s * w_s)      (the second term where the op writes a sum output)
 * with random w, so the backward gets dy = w_y and dsum = w_s, and for every input the
 * backward has a gradient of (x and residual: dx; gamma: dgamma; beta: dbeta; the per-sample
 * modulation's scale and shift: dscale, dshift)
 *   dL/dp_i ~ (L(p + h e_i) - L(p - h e_i)) / 2h,   h = 1e-6 * max(1, |p_i|).
 * Statistics are recomputed by every perturbed forward; the analytic backward takes them from
 * the unperturbed forward (CLNORM_SAVE_STATS) when the op saves any. Normwise relative error
 * < 1e-6, with and without gamma / beta, with and without dsum. Precomputed statistics
 * (CLNORM_USE_GLOBAL_STATS) are inputs of both passes, held constant by the perturbed forwards
 * as the backward assumes. No OpenCL device is needed.
 */
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GC_TOL 1e-6
#define SLOTS CLNORM_ARG_SLOT_COUNT
#define BIT(s) (1u << (unsigned)(s))

typedef struct {
    size_t rows, cols;
    int gamma, beta;
    size_t stride[4]; /* of x, y, residual, sum (and dx, dy, dsum); 0: dense */
    double eps;
    double x_offset, x_scale;
    int dsum; /* the loss has the sum output's term (where the op writes one) */
    size_t samples;    /* the modulation's samples (0: none) */
    unsigned mod;      /* 1: a scale, 2: a shift */
    int global;        /* precomputed statistics */
    size_t mod_stride; /* of scale, shift, dscale, dshift; 0: dense */
} gc_case;

/* Which backward slot holds the gradient of a forward slot (the loss's weights for outputs,
 * the analytic gradient for inputs). The residual's gradient is dx: s = x + residual. */
static int grad_slot(unsigned s)
{
    switch (s) {
    case CLNORM_ARG_Y: return CLNORM_ARG_DY;
    case CLNORM_ARG_SUM: return CLNORM_ARG_DSUM;
    case CLNORM_ARG_X:
    case CLNORM_ARG_RESIDUAL: return CLNORM_ARG_DX;
    case CLNORM_ARG_GAMMA: return CLNORM_ARG_DGAMMA;
    case CLNORM_ARG_BETA: return CLNORM_ARG_DBETA;
    case CLNORM_ARG_SCALE: return CLNORM_ARG_DSCALE;
    case CLNORM_ARG_SHIFT: return CLNORM_ARG_DSHIFT;
    default: return -1;
    }
}

typedef struct {
    clnorm_desc desc; /* forward and backward: SAVE_STATS | WITH_BACKWARD added */
    clnorm_slot_info fi[SLOTS], bi[SLOTS];
    void *t[SLOTS];   /* every tensor by slot (forward's and backward's) */
    unsigned loss;    /* forward outputs in the loss */
    const char *name;
} gc_state;

static void ref(const gc_state *g, clnorm_direction dir, unsigned slots)
{
    clnorm_host_arg args[SLOTS];
    size_t n = 0;
    for (unsigned s = 0; s < SLOTS; s++)
        if (slots & BIT(s))
            args[n++] = (clnorm_host_arg){(clnorm_arg_slot)s, g->t[s]};
    const clnorm_status st = clnorm_ref_execute(&g->desc, dir, args, n);
    if (st != CLNORM_OK)
        fail_msg("%s: clnorm_ref_execute (%s, f64) = %d (%s)", g->name,
                 dir ? "backward" : "forward", st, clnorm_status_string(st));
}

/* The slots a direction takes (REQUIRED, and OPTIONAL where `optional` says). */
static unsigned slots_of(const clnorm_slot_info *info, unsigned optional)
{
    unsigned m = 0;
    for (unsigned s = 0; s < SLOTS; s++)
        if (info[s].use == CLNORM_SLOT_REQUIRED ||
            (info[s].use == CLNORM_SLOT_OPTIONAL && (optional & BIT(s))))
            m |= BIT(s);
    return m;
}

static unsigned g_fwd_slots, g_bwd_slots;

/* L = sum over the loss's outputs of output * weight (weights dense, outputs strided). */
static double loss(gc_state *g)
{
    ref(g, CLNORM_FORWARD, g_fwd_slots);
    double sum = 0.0;
    for (unsigned s = 0; s < SLOTS; s++) {
        if (!(g->loss & BIT(s)))
            continue;
        const clnorm_slot_info *o = &g->fi[s];
        const unsigned w = (unsigned)grad_slot(s);
        for (size_t r = 0; r < o->rows; r++)
            for (size_t c = 0; c < o->cols; c++)
                sum += clnorm_elem_load(o->dtype, g->t[s], r * o->stride + c) *
                       clnorm_elem_load(g->bi[w].dtype, g->t[w], r * g->bi[w].stride + c);
    }
    return sum;
}

/* Central difference of the loss along element i of slot s. */
static double central_diff(gc_state *g, unsigned s, size_t i)
{
    double *p = g->t[s];
    const double v = p[i], h = 1e-6 * (fabs(v) > 1.0 ? fabs(v) : 1.0);
    const double vp = v + h, vm = v - h;
    p[i] = vp;
    const double lp = loss(g);
    p[i] = vm;
    const double lm = loss(g);
    p[i] = v;
    return (lp - lm) / (vp - vm); /* the step actually taken */
}

/* max |fd - an| / max(max |an|, 1e-3) over the elements of input slot s. */
static void check_grad(gc_state *g, unsigned s)
{
    const clnorm_slot_info *in = &g->fi[s];
    const unsigned gs = (unsigned)grad_slot(s);
    const clnorm_slot_info *gi = &g->bi[gs];
    double worst = 0.0, max_an = 0.0, an_w = 0.0, fd_w = 0.0;
    size_t wr = 0, wc = 0;
    for (size_t r = 0; r < in->rows; r++) {
        for (size_t c = 0; c < in->cols; c++) {
            const double a = clnorm_elem_load(gi->dtype, g->t[gs], r * gi->stride + c);
            const double f = central_diff(g, s, r * in->stride + c);
            if (!isfinite(a) || !isfinite(f))
                fail_msg("%s: d/d%s non-finite at [%zu, %zu]: analytic %g, numeric %g", g->name,
                         clnorm_arg_name((clnorm_arg_slot)s), r, c, a, f);
            if (fabs(a) > max_an)
                max_an = fabs(a);
            if (fabs(a - f) > worst) {
                worst = fabs(a - f);
                wr = r;
                wc = c;
                an_w = a;
                fd_w = f;
            }
        }
    }
    const double err = worst / (max_an > 1e-3 ? max_an : 1e-3);
    if (!(err < GC_TOL))
        fail_msg("%s: d/d%s (in %s): relative error %.3g at [%zu, %zu]: analytic %.12g, "
                 "numeric %.12g (max |grad| %.3g)",
                 g->name, clnorm_arg_name((clnorm_arg_slot)s),
                 clnorm_arg_name((clnorm_arg_slot)gs), err, wr, wc, an_w, fd_w, max_an);
}

/* The modulated and globally normalized cases are for the row kinds: other ops skip them. */
static void run_case(size_t op, const gc_case *c, uint64_t seed)
{
    clnorm_op_info oi;
    assert_int_equal(clnorm_op_query((clnorm_kind)op, &oi), CLNORM_OK);
    gc_state g;
    memset(&g, 0, sizeof g);
    char name[200];
    snprintf(name, sizeof name,
             "%s %zux%zu gamma %d beta %d strides %zu/%zu/%zu/%zu eps %g offset %g dsum %d "
             "samples %zu mod %u global %d",
             oi.name, c->rows, c->cols, c->gamma, c->beta, c->stride[0], c->stride[1],
             c->stride[2], c->stride[3], c->eps, c->x_offset, c->dsum, c->samples, c->mod,
             c->global);
    g.name = name;
    clnorm_desc_init(&g.desc, (clnorm_kind)op, c->rows, c->cols);
    g.desc.dtype = CLNORM_F64;
    g.desc.x_stride = c->stride[0];
    g.desc.y_stride = c->stride[1];
    g.desc.residual_stride = c->stride[2];
    g.desc.sum_stride = c->stride[3];
    g.desc.eps = c->eps;
    g.desc.flags = (c->global ? CLNORM_USE_GLOBAL_STATS : CLNORM_SAVE_STATS) |
                   CLNORM_WITH_BACKWARD | (c->gamma ? 0u : CLNORM_NO_GAMMA) |
                   (c->beta ? 0u : CLNORM_NO_BETA) | ((c->mod & 1) ? CLNORM_SCALE : 0u) |
                   ((c->mod & 2) ? CLNORM_SHIFT : 0u);
    g.desc.samples = c->samples;
    g.desc.mod_stride = c->mod_stride;
    if ((c->mod || c->global) && clnorm_desc_check(&g.desc, NULL, 0) != CLNORM_OK)
        return; /* an op without a modulation or precomputed statistics */
    for (unsigned s = 0; s < SLOTS; s++) {
        assert_int_equal(clnorm_slot_query(&g.desc, CLNORM_FORWARD, (clnorm_arg_slot)s, &g.fi[s]),
                         CLNORM_OK);
        assert_int_equal(
            clnorm_slot_query(&g.desc, CLNORM_BACKWARD, (clnorm_arg_slot)s, &g.bi[s]),
            CLNORM_OK);
    }
    /* Forward: everything it takes, the sum output too; backward: every gradient, the saved
     * statistics, dsum when the case says so. */
    g_fwd_slots = slots_of(g.fi, ~0u);
    g_bwd_slots = slots_of(g.bi, c->dsum ? ~0u : ~BIT(CLNORM_ARG_DSUM));
    tu_rng rng;
    tu_rng_seed(&rng, seed);
    for (unsigned s = 0; s < SLOTS; s++) {
        const int in_fwd = (g_fwd_slots & BIT(s)) != 0, in_bwd = (g_bwd_slots & BIT(s)) != 0;
        if (!in_fwd && !in_bwd)
            continue;
        const clnorm_slot_info *i = in_fwd ? &g.fi[s] : &g.bi[s];
        if (in_fwd && !g.fi[s].is_output) {
            /* precomputed statistics: a mean near the data's, rstd in [0.6, 1.4] */
            const double off = s == CLNORM_ARG_GAMMA || s == CLNORM_ARG_RSTD ? 1.0
                               : s == CLNORM_ARG_X || s == CLNORM_ARG_MEAN ? c->x_offset
                                                                          : 0.0;
            const double sc = s == CLNORM_ARG_GAMMA || s == CLNORM_ARG_BETA ||
                                      s == CLNORM_ARG_SCALE || s == CLNORM_ARG_SHIFT
                                  ? 0.5
                              : s == CLNORM_ARG_RSTD ? 0.1
                                                     : c->x_scale;
            g.t[s] = tu_make_rows(&rng, i->dtype, i->rows, i->cols, i->stride, off, sc);
        } else if (!in_fwd && !g.bi[s].is_output) { /* dy, dsum: the loss's weights */
            g.t[s] = tu_make_rows(&rng, i->dtype, i->rows, i->cols, i->stride, 0.0, 1.0);
        } else {
            g.t[s] = tu_alloc_sentinel(i->dtype, i->extent, 1);
        }
    }
    for (unsigned s = 0; s < SLOTS; s++) {
        const int w = grad_slot(s);
        if ((g_fwd_slots & BIT(s)) && g.fi[s].is_output && w >= 0 &&
            (g_bwd_slots & BIT((unsigned)w)))
            g.loss |= BIT(s);
    }
    assert_true(g.loss & BIT(CLNORM_ARG_Y));

    /* The unperturbed forward saves the statistics the analytic backward takes. */
    ref(&g, CLNORM_FORWARD, g_fwd_slots);
    ref(&g, CLNORM_BACKWARD, g_bwd_slots);
    /* Gradients of row tensors have x's layout: their gaps were not written. */
    if (g.t[CLNORM_ARG_DX] != NULL)
        assert_int_equal(tu_count_gap_not_sentinel(g.t[CLNORM_ARG_DX], c->rows, c->cols,
                                                   g.bi[CLNORM_ARG_DX].stride, 8, 1, "dx gaps"),
                         0);
    for (unsigned s = 0; s < SLOTS; s++) {
        const int gs = grad_slot(s);
        if ((g_fwd_slots & BIT(s)) && !g.fi[s].is_output && gs >= 0 &&
            (g_bwd_slots & BIT((unsigned)gs)))
            check_grad(&g, s);
    }
    for (unsigned s = 0; s < SLOTS; s++)
        free(g.t[s]);
}

/* Every operation of the registry through one list of cases. */
static void run_all(const gc_case *cases, size_t n, uint64_t seed)
{
    for (size_t op = 0; op < clnorm_op_count(); op++)
        for (size_t i = 0; i < n; i++)
            run_case(op, &cases[i], seed + 1000 * op + i);
}

/* Small shapes, every gamma / beta combination, with and without dsum. */
static void test_small_shapes(void **state)
{
    (void)state;
    static const size_t shapes[][2] = {{3, 5}, {4, 17}, {1, 2}, {2, 64}};
    gc_case cases[TU_COUNT(shapes) * 8];
    size_t n = 0;
    for (size_t s = 0; s < TU_COUNT(shapes); s++)
        for (int k = 0; k < 8; k++) {
            const gc_case c = {shapes[s][0], shapes[s][1], k & 1, (k >> 1) & 1, {0, 0, 0, 0},
                               1e-5, 0.3, 1.0, (k >> 2) & 1, 0, 0, 0, 0};
            cases[n++] = c;
        }
    run_all(cases, n, 1000);
}

/* One column: LayerNorm gives y = beta whatever x is (dx = 0 and dgamma = 0 exactly, dbeta =
 * sum of dy); RMSNorm gives sign(x) almost everywhere. */
static void test_cols1(void **state)
{
    (void)state;
    static const gc_case cases[] = {
        {2, 1, 1, 1, {0, 0, 0, 0}, 1e-5, 0.3, 1.0, 1, 0, 0, 0, 0},
        {5, 1, 0, 0, {0, 0, 0, 0}, 1e-5, 0.3, 1.0, 0, 0, 0, 0, 0},
    };
    run_all(cases, TU_COUNT(cases), 77);
}

/* eps comparable to the variance (its derivative matters), and a large mean. */
static void test_eps_and_offset(void **state)
{
    (void)state;
    static const gc_case cases[] = {
        {3, 9, 1, 1, {0, 0, 0, 0}, 0.5, 0.0, 0.3, 1, 0, 0, 0, 0},
        {3, 9, 1, 0, {0, 0, 0, 0}, 0.5, 0.0, 0.3, 0, 0, 0, 0, 0},
        {2, 12, 1, 1, {0, 0, 0, 0}, 1e-5, 100.0, 1.0, 1, 0, 0, 0, 0},
        {2, 12, 1, 1, {0, 0, 0, 0}, 1e-5, 5.0, 1.0, 1, 0, 0, 0, 0},
    };
    run_all(cases, TU_COUNT(cases), 300);
}

/* Strided row tensors: dx has x's layout, dy y's, dsum the sum's. */
static void test_strided(void **state)
{
    (void)state;
    static const gc_case cases[] = {
        {3, 7, 1, 1, {10, 9, 11, 8}, 1e-5, 0.3, 1.0, 1, 0, 0, 0, 0},
        {3, 7, 1, 0, {8, 11, 9, 10}, 1e-5, 0.3, 1.0, 1, 0, 0, 0, 0},
    };
    run_all(cases, TU_COUNT(cases), 400);
}

/* A per-sample modulation (scale, shift, both; dense and strided rows of them), with and
 * without gamma / beta, and precomputed statistics with and without it. */
static void test_modulation_and_global_stats(void **state)
{
    (void)state;
    static const gc_case cases[] = {
        {6, 7, 1, 1, {0, 0, 0, 0}, 1e-5, 0.3, 1.0, 1, 3, 3, 0, 0},
        {6, 7, 0, 0, {0, 0, 0, 0}, 1e-5, 0.3, 1.0, 0, 2, 1, 0, 0},
        {6, 7, 1, 0, {9, 8, 10, 11}, 1e-5, 0.3, 1.0, 1, 6, 2, 0, 12},
        {4, 9, 0, 1, {0, 0, 0, 0}, 1e-5, 0.3, 1.0, 0, 1, 3, 0, 10},
        {5, 6, 1, 1, {0, 0, 0, 0}, 1e-5, 0.3, 1.0, 1, 0, 0, 1, 0},
        {5, 6, 0, 0, {0, 0, 0, 0}, 1e-5, 0.3, 1.0, 0, 0, 0, 1, 0},
        {6, 5, 1, 1, {7, 0, 0, 0}, 1e-5, 0.3, 1.0, 1, 3, 3, 1, 0},
    };
    run_all(cases, TU_COUNT(cases), 500);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_modulation_and_global_stats),
        cmocka_unit_test(test_small_shapes),
        cmocka_unit_test(test_cols1),
        cmocka_unit_test(test_eps_and_offset),
        cmocka_unit_test(test_strided),
    };
    return cmocka_run_group_tests_name("gradcheck", tests, NULL, NULL);
}
