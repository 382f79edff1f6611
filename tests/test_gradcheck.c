/*
 * test_gradcheck.c - the CPU reference's backward pass (clnorm_ref_backward) against central
 * finite differences of its forward pass (clnorm_ref_forward), all in float64 (F64 dtype):
 * the scalar loss L = sum(y * w) with random w, so dy = w, and
 *   dL/dx_i ~ (L(x + h e_i) - L(x - h e_i)) / 2h,   h = 1e-6 * max(1, |x_i|)
 * (likewise for gamma and beta). Statistics are recomputed by every perturbed forward; the
 * analytic backward takes them from the unperturbed forward (CLNORM_SAVE_STATS). Normwise
 * relative error < 1e-6 for LayerNorm and RMSNorm, with and without gamma / beta.
 * No OpenCL device is needed.
 */
#include "grad_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GC_TOL 1e-6

typedef struct {
    clnorm_kind kind;
    size_t rows, cols;
    int gamma, beta;
    size_t x_stride, y_stride; /* 0: dense */
    float eps;
    double x_offset, x_scale;
} gc_case;

/* L = sum over rows and columns of y * w (w dense, y in the desc's y layout). */
static double loss(const clnorm_desc *d, const double *x, const double *gamma,
                   const double *beta, const double *w, double *y)
{
    const clnorm_status st = clnorm_ref_forward(d, x, y, gamma, beta, NULL, NULL);
    if (st != CLNORM_OK)
        fail_msg("clnorm_ref_forward (f64, %zu x %zu) = %d (%s)", d->rows, d->cols, st,
                 clnorm_status_string(st));
    const size_t ys = tu_y_stride(d);
    double sum = 0.0;
    for (size_t r = 0; r < d->rows; r++)
        for (size_t c = 0; c < d->cols; c++)
            sum += y[r * ys + c] * w[r * d->cols + c];
    return sum;
}

/* Central difference of the loss along p[i]. */
static double central_diff(const clnorm_desc *d, double *x, double *gamma, double *beta,
                           const double *w, double *y, double *p, size_t i)
{
    const double v = p[i], h = 1e-6 * (fabs(v) > 1.0 ? fabs(v) : 1.0);
    const double vp = v + h, vm = v - h;
    p[i] = vp;
    const double lp = loss(d, x, gamma, beta, w, y);
    p[i] = vm;
    const double lm = loss(d, x, gamma, beta, w, y);
    p[i] = v;
    return (lp - lm) / (vp - vm); /* the step actually taken */
}

/* max |fd - an| / max(max |an|, 1e-3) over n gradients. */
static void check_grad(const double *an, size_t an_stride, const double *fd, size_t rows,
                       size_t cols, const char *what, const gc_case *c)
{
    double worst = 0.0, max_an = 0.0;
    size_t wr = 0, wc = 0;
    for (size_t r = 0; r < rows; r++) {
        for (size_t k = 0; k < cols; k++) {
            const double a = an[r * an_stride + k], f = fd[r * cols + k];
            if (!isfinite(a) || !isfinite(f))
                fail_msg("%s: non-finite gradient at [%zu, %zu]: analytic %g, numeric %g", what,
                         r, k, a, f);
            if (fabs(a) > max_an)
                max_an = fabs(a);
            if (fabs(a - f) > worst) {
                worst = fabs(a - f);
                wr = r;
                wc = k;
            }
        }
    }
    const double err = worst / (max_an > 1e-3 ? max_an : 1e-3);
    if (!(err < GC_TOL))
        fail_msg("%s (%s %zu x %zu, gamma %d, beta %d, strides %zu/%zu): relative error %.3g "
                 "at [%zu, %zu]: analytic %.12g, numeric %.12g (max |grad| %.3g)",
                 what, c->kind == CLNORM_RMS ? "rms" : "layer", c->rows, c->cols, c->gamma,
                 c->beta, c->x_stride, c->y_stride, err, wr, wc, an[wr * an_stride + wc],
                 fd[wr * cols + wc], max_an);
}

static void run_case(const gc_case *c, uint64_t seed)
{
    tu_rng rng;
    tu_rng_seed(&rng, seed);
    clnorm_desc d;
    clnorm_desc_init(&d, c->kind, c->rows, c->cols);
    d.dtype = CLNORM_F64;
    d.x_stride = c->x_stride;
    d.y_stride = c->y_stride;
    d.eps = c->eps;
    d.flags = (c->gamma ? 0u : CLNORM_NO_GAMMA) | (c->beta ? 0u : CLNORM_NO_BETA);
    const size_t rows = c->rows, cols = c->cols, xs = tu_x_stride(&d), ys = tu_y_stride(&d);
    const size_t xn = tu_extent(rows, cols, xs), yn = tu_extent(rows, cols, ys);

    double *x = gu_make_input(&rng, CLNORM_F64, rows, cols, xs, c->x_offset, c->x_scale);
    double *gamma = c->gamma ? gu_make_vector(&rng, CLNORM_F64, cols, 1.0, 0.5) : NULL;
    double *beta = c->beta ? gu_make_vector(&rng, CLNORM_F64, cols, 0.0, 0.5) : NULL;
    double *w = gu_make_vector(&rng, CLNORM_F64, rows * cols, 0.0, 1.0);
    /* dy = dL/dy = w, laid out as y */
    double *dy = gu_alloc_sentinel(CLNORM_F64, yn, 0);
    for (size_t r = 0; r < rows; r++)
        memcpy(dy + r * ys, w + r * cols, cols * sizeof *dy);
    double *y = gu_alloc_sentinel(CLNORM_F64, yn, 1);
    double *mean = gu_alloc_sentinel(CLNORM_F64, rows, 1);
    double *rstd = gu_alloc_sentinel(CLNORM_F64, rows, 1);
    double *dx = gu_alloc_sentinel(CLNORM_F64, xn, 1);
    double *dgamma = gu_alloc_sentinel(CLNORM_F64, cols, 1);
    double *dbeta = gu_alloc_sentinel(CLNORM_F64, cols, 1);
    double *fd = malloc((rows * cols + 1) * sizeof *fd);
    assert_non_null(fd);

    /* Statistics of the unperturbed forward; RMS has no mean. */
    clnorm_desc sd = d;
    sd.flags |= CLNORM_SAVE_STATS;
    double *mp = c->kind == CLNORM_LAYER ? mean : NULL;
    clnorm_status st = clnorm_ref_forward(&sd, x, y, gamma, beta, mp, rstd);
    assert_int_equal(st, CLNORM_OK);
    const unsigned mask = CLNORM_GRAD_X | (c->gamma ? CLNORM_GRAD_GAMMA : 0u) |
                          (c->beta ? CLNORM_GRAD_BETA : 0u);
    st = clnorm_ref_backward(&d, mask, x, dy, mp, rstd, gamma, dx, c->gamma ? dgamma : NULL,
                             c->beta ? dbeta : NULL);
    if (st != CLNORM_OK)
        fail_msg("clnorm_ref_backward (f64) = %d (%s)", st, clnorm_status_string(st));
    /* dx has x's layout: its gaps were not written */
    assert_int_equal(gu_count_gap_changed(CLNORM_F64, dx, rows, cols, xs, 1, "dx gaps"), 0);

    for (size_t r = 0; r < rows; r++)
        for (size_t k = 0; k < cols; k++)
            fd[r * cols + k] = central_diff(&d, x, gamma, beta, w, y, x, r * xs + k);
    check_grad(dx, xs, fd, rows, cols, "dx", c);
    if (c->gamma) {
        for (size_t k = 0; k < cols; k++)
            fd[k] = central_diff(&d, x, gamma, beta, w, y, gamma, k);
        check_grad(dgamma, 1, fd, 1, cols, "dgamma", c);
    }
    if (c->beta) {
        for (size_t k = 0; k < cols; k++)
            fd[k] = central_diff(&d, x, gamma, beta, w, y, beta, k);
        check_grad(dbeta, 1, fd, 1, cols, "dbeta", c);
    }
    free(x);
    free(gamma);
    free(beta);
    free(w);
    free(dy);
    free(y);
    free(mean);
    free(rstd);
    free(dx);
    free(dgamma);
    free(dbeta);
    free(fd);
}

/* Small shapes, every gamma / beta combination. */
static void run_kind(clnorm_kind kind)
{
    static const size_t shapes[][2] = {{3, 5}, {4, 17}, {1, 2}, {2, 64}};
    uint64_t seed = kind == CLNORM_RMS ? 2000 : 1000;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        for (int g = 0; g <= 1; g++) {
            for (int b = 0; b <= 1; b++) {
                const gc_case c = {kind, shapes[s][0], shapes[s][1], g, b, 0, 0, 1e-5f, 0.3, 1.0};
                run_case(&c, seed++);
            }
        }
    }
}

static void test_layer(void **state)
{
    (void)state;
    run_kind(CLNORM_LAYER);
}

static void test_rms(void **state)
{
    (void)state;
    run_kind(CLNORM_RMS);
}

/* LayerNorm over one column: y = beta whatever x is, so dx = 0 and dgamma = 0 exactly, and
 * dbeta = sum of dy. */
static void test_layer_cols1(void **state)
{
    (void)state;
    const gc_case c = {CLNORM_LAYER, 2, 1, 1, 1, 0, 0, 1e-5f, 0.3, 1.0};
    run_case(&c, 77);
    const gc_case c2 = {CLNORM_LAYER, 5, 1, 0, 0, 0, 0, 1e-5f, 0.3, 1.0};
    run_case(&c2, 78);
}

/* eps comparable to the variance (its derivative matters), and a large mean. */
static void test_eps_and_offset(void **state)
{
    (void)state;
    const gc_case cases[] = {
        {CLNORM_LAYER, 3, 9, 1, 1, 0, 0, 0.5f, 0.0, 0.3},
        {CLNORM_RMS, 3, 9, 1, 0, 0, 0, 0.5f, 0.0, 0.3},
        {CLNORM_LAYER, 2, 12, 1, 1, 0, 0, 1e-5f, 100.0, 1.0},
        {CLNORM_RMS, 2, 12, 1, 1, 0, 0, 1e-5f, 5.0, 1.0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case(&cases[i], 300 + i);
}

/* Strided x and y: dx has x's layout, dy y's. */
static void test_strided(void **state)
{
    (void)state;
    const gc_case cases[] = {
        {CLNORM_LAYER, 3, 7, 1, 1, 10, 9, 1e-5f, 0.3, 1.0},
        {CLNORM_RMS, 3, 7, 1, 0, 8, 11, 1e-5f, 0.3, 1.0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case(&cases[i], 400 + i);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layer),
        cmocka_unit_test(test_rms),
        cmocka_unit_test(test_layer_cols1),
        cmocka_unit_test(test_eps_and_offset),
        cmocka_unit_test(test_strided),
    };
    return cmocka_run_group_tests_name("gradcheck", tests, NULL, NULL);
}
