/*
 * test_ref.c - the CPU reference clnorm_ref_forward, the oracle of every device test, checked
 * against values computed by hand and against the float64 reference of test_util.c (written
 * independently). No OpenCL here.
 */
#include "tu_oracle.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The reference rounds a double result once: a few float ulps at most. */
#define REF_ATOL 1e-6
#define REF_RTOL 1e-6

static clnorm_desc make_desc(clnorm_kind kind, size_t rows, size_t cols, unsigned flags)
{
    clnorm_desc d;
    clnorm_desc_init(&d, kind, rows, cols);
    d.flags = flags;
    return d;
}

static void expect_ok(clnorm_status st)
{
    if (st != CLNORM_OK)
        fail_msg("clnorm_ref_forward = %d (%s)", st, clnorm_status_string(st));
}

/* Row [10, 20, 30, 40, 50]: mean 30, biased variance 200. */
static void test_hand_row_10_to_50(void **state)
{
    (void)state;
    const float x[5] = {10, 20, 30, 40, 50};
    float y[5], mean[1], rstd[1];
    clnorm_desc d = make_desc(CLNORM_LAYER, 1, 5, CLNORM_NO_GAMMA | CLNORM_NO_BETA |
                                                      CLNORM_SAVE_STATS);
    expect_ok(clnorm_ref_forward(&d, x, y, NULL, NULL, mean, rstd));
    const double r = 1.0 / sqrt(200.0 + 1e-5);
    double want[5];
    for (int i = 0; i < 5; i++)
        want[i] = ((double)x[i] - 30.0) * r;
    assert_int_equal(tu_cmp_f64(y, 5, want, 5, 1, 5, REF_ATOL, REF_RTOL, "y"), 0);
    assert_true(mean[0] == 30.0f);
    assert_true(fabs((double)rstd[0] - r) <= 1e-6 * r);
    /* Sanity of the hand values themselves: +-sqrt(2) at the ends, 0 in the middle. */
    assert_true(fabs((double)y[0] + 1.41421356) < 1e-5);
    assert_true(y[2] == 0.0f);
    assert_true(fabs((double)y[4] - 1.41421356) < 1e-5);
}

/* Row [1.0, 1.1, 1.2, 1.3, 1.4]: mean 1.2, variance 0.02 (in decimal; the float32 inputs are
 * a few 1e-8 away, far inside the tolerance). With gamma 2 and beta 0.5. */
static void test_hand_row_1_to_1_4(void **state)
{
    (void)state;
    const float x[5] = {1.0f, 1.1f, 1.2f, 1.3f, 1.4f};
    const float g[5] = {2, 2, 2, 2, 2}, b[5] = {0.5f, 0.5f, 0.5f, 0.5f, 0.5f};
    float y[5], mean[1], rstd[1];
    clnorm_desc d = make_desc(CLNORM_LAYER, 1, 5, CLNORM_SAVE_STATS);
    expect_ok(clnorm_ref_forward(&d, x, y, g, b, mean, rstd));
    const double r = 1.0 / sqrt(0.02 + 1e-5);
    const double dec[5] = {1.0, 1.1, 1.2, 1.3, 1.4};
    double want[5];
    for (int i = 0; i < 5; i++)
        want[i] = (dec[i] - 1.2) * r * 2.0 + 0.5;
    assert_int_equal(tu_cmp_f64(y, 5, want, 5, 1, 5, 1e-5, 1e-5, "y"), 0);
    assert_true(fabs((double)mean[0] - 1.2) < 1e-6);
    assert_true(fabs((double)rstd[0] - r) <= 1e-5 * r);
}

/* Random rows vs the independent float64 two-pass, for every kind and affine combination. */
static void check_vs_ref64(clnorm_kind kind, unsigned flags, size_t rows, size_t cols,
                           double offset, uint64_t seed)
{
    tu_rng rng;
    tu_rng_seed(&rng, seed);
    clnorm_desc d = make_desc(kind, rows, cols, flags | CLNORM_SAVE_STATS);
    float *x = tu_make_input(&rng, rows, cols, cols, offset, 1.0);
    float *g = tu_alloc_filled(cols, 0), *b = tu_alloc_filled(cols, 0);
    tu_fill_normal(&rng, g, cols, 1.0, 0.5);
    tu_fill_normal(&rng, b, cols, 0.0, 0.5);
    const float *gp = (flags & CLNORM_NO_GAMMA) ? NULL : g;
    const float *bp = (flags & CLNORM_NO_BETA) ? NULL : b;
    float *y = tu_alloc_filled(rows * cols, TU_SENTINEL_OUT_BITS);
    float *mean = tu_alloc_filled(rows, TU_SENTINEL_OUT_BITS);
    float *rstd = tu_alloc_filled(rows, TU_SENTINEL_OUT_BITS);
    double *wy = malloc(rows * cols * sizeof *wy), *wm = malloc(rows * sizeof *wm);
    double *wr = malloc(rows * sizeof *wr);
    assert_non_null(wy);
    assert_non_null(wm);
    assert_non_null(wr);

    expect_ok(clnorm_ref_forward(&d, x, y, gp, bp, kind == CLNORM_LAYER ? mean : NULL, rstd));
    tu_ref64(&d, x, gp, bp, wy, cols, wm, wr);
    assert_int_equal(tu_cmp_f64(y, cols, wy, cols, rows, cols, REF_ATOL, REF_RTOL, "y"), 0);
    assert_int_equal(tu_cmp_f64(rstd, 1, wr, 1, rows, 1, 0.0, REF_RTOL, "rstd"), 0);
    if (kind == CLNORM_LAYER)
        assert_int_equal(tu_cmp_f64(mean, 1, wm, 1, rows, 1, REF_ATOL, REF_RTOL, "mean"), 0);
    else /* RMS has no mean: the buffer we did not pass stays as it was */
        assert_int_equal(tu_count_not_bits(mean, rows, TU_SENTINEL_OUT_BITS, "mean"), 0);

    free(x), free(g), free(b), free(y), free(mean), free(rstd), free(wy), free(wm), free(wr);
}

static void test_vs_ref64_all_flags(void **state)
{
    (void)state;
    const size_t shapes[][2] = {{1, 1}, {3, 7}, {17, 64}, {5, 1000}, {2, 4097}};
    for (int kind = 0; kind < 2; kind++)
        for (unsigned flags = 0; flags < 4; flags++)
            for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
                check_vs_ref64((clnorm_kind)kind, flags, shapes[s][0], shapes[s][1], 0.0,
                               1000 + 10 * flags + s);
}

/* A large common offset: the reference's double accumulation must not care. */
static void test_vs_ref64_large_mean(void **state)
{
    (void)state;
    check_vs_ref64(CLNORM_LAYER, 0, 4, 768, 1e4, 7);
    check_vs_ref64(CLNORM_LAYER, CLNORM_NO_GAMMA | CLNORM_NO_BETA, 3, 4097, 1e6, 8);
    check_vs_ref64(CLNORM_RMS, 0, 4, 768, 1e4, 9);
}

/* Without SAVE_STATS nothing but y is written (and mean/rstd may be NULL). */
static void test_no_stats(void **state)
{
    (void)state;
    tu_rng rng;
    tu_rng_seed(&rng, 11);
    clnorm_desc d = make_desc(CLNORM_LAYER, 4, 33, CLNORM_NO_GAMMA | CLNORM_NO_BETA);
    float *x = tu_make_input(&rng, 4, 33, 33, 0.0, 1.0);
    float y[4 * 33];
    double want[4 * 33];
    expect_ok(clnorm_ref_forward(&d, x, y, NULL, NULL, NULL, NULL));
    tu_ref64(&d, x, NULL, NULL, want, 33, NULL, NULL);
    assert_int_equal(tu_cmp_f64(y, 33, want, 33, 4, 33, REF_ATOL, REF_RTOL, "y"), 0);
    free(x);
}

/* Strided x and y: the gaps of y are never written, those of x (NaN) never read. */
static void test_strides(void **state)
{
    (void)state;
    const size_t rows = 6, cols = 37, xs = 41, ys = 50;
    tu_rng rng;
    tu_rng_seed(&rng, 12);
    for (int kind = 0; kind < 2; kind++) {
        clnorm_desc d = make_desc((clnorm_kind)kind, rows, cols, CLNORM_SAVE_STATS);
        d.x_stride = xs;
        d.y_stride = ys;
        float *x = tu_make_input(&rng, rows, cols, xs, 0.5, 2.0);
        float g[37], b[37], mean[6], rstd[6];
        tu_fill_normal(&rng, g, cols, 1.0, 0.3);
        tu_fill_normal(&rng, b, cols, 0.0, 0.3);
        const size_t yn = tu_extent(rows, cols, ys);
        float *y = tu_alloc_filled(yn + TU_PAD, TU_SENTINEL_OUT_BITS);
        double want[6 * 37], wm[6], wr[6];

        expect_ok(clnorm_ref_forward(&d, x, y, g, b, kind == CLNORM_LAYER ? mean : NULL, rstd));
        tu_ref64(&d, x, g, b, want, cols, wm, wr);
        assert_int_equal(tu_cmp_f64(y, ys, want, cols, rows, cols, REF_ATOL, REF_RTOL, "y"), 0);
        assert_int_equal(tu_count_gap_changes(y, rows, cols, ys, TU_SENTINEL_OUT_BITS, "y"), 0);
        assert_int_equal(tu_count_not_bits(y + yn, TU_PAD, TU_SENTINEL_OUT_BITS, "y tail"), 0);
        assert_int_equal(tu_cmp_f64(rstd, 1, wr, 1, rows, 1, 0.0, REF_RTOL, "rstd"), 0);
        if (kind == CLNORM_LAYER)
            assert_int_equal(tu_cmp_f64(mean, 1, wm, 1, rows, 1, REF_ATOL, REF_RTOL, "mean"), 0);
        free(x);
        free(y);
    }
}

/* y == x: same result as out of place, gaps untouched. */
static void test_in_place(void **state)
{
    (void)state;
    const size_t rows = 5, cols = 100, st = 103;
    tu_rng rng;
    tu_rng_seed(&rng, 13);
    for (int kind = 0; kind < 2; kind++) {
        clnorm_desc d = make_desc((clnorm_kind)kind, rows, cols, 0);
        d.x_stride = d.y_stride = st;
        float *x = tu_make_input(&rng, rows, cols, st, 3.0, 1.0);
        float g[100], b[100];
        tu_fill_normal(&rng, g, cols, 1.0, 0.3);
        tu_fill_normal(&rng, b, cols, 0.0, 0.3);
        double want[5 * 100];
        tu_ref64(&d, x, g, b, want, cols, NULL, NULL);
        expect_ok(clnorm_ref_forward(&d, x, x, g, b, NULL, NULL));
        assert_int_equal(tu_cmp_f64(x, st, want, cols, rows, cols, REF_ATOL, REF_RTOL, "y"), 0);
        assert_int_equal(tu_count_gap_changes(x, rows, cols, st, TU_SENTINEL_IN_BITS, "x"), 0);
        free(x);
    }
}

/* rows = 0 is an empty batch: OK and nothing written. */
static void test_rows_zero(void **state)
{
    (void)state;
    const float x[4] = {1, 2, 3, 4};
    float y[4], mean[2], rstd[2];
    tu_fill_bits(y, 4, TU_SENTINEL_OUT_BITS);
    tu_fill_bits(mean, 2, TU_SENTINEL_OUT_BITS);
    tu_fill_bits(rstd, 2, TU_SENTINEL_OUT_BITS);
    clnorm_desc d = make_desc(CLNORM_LAYER, 0, 4, CLNORM_NO_GAMMA | CLNORM_NO_BETA |
                                                      CLNORM_SAVE_STATS);
    expect_ok(clnorm_ref_forward(&d, x, y, NULL, NULL, mean, rstd));
    assert_int_equal(tu_count_not_bits(y, 4, TU_SENTINEL_OUT_BITS, "y"), 0);
    assert_int_equal(tu_count_not_bits(mean, 2, TU_SENTINEL_OUT_BITS, "mean"), 0);
    assert_int_equal(tu_count_not_bits(rstd, 2, TU_SENTINEL_OUT_BITS, "rstd"), 0);
}

/* cols = 1: variance 0, so y = (x - x) * rstd * gamma + beta = beta exactly, mean = x,
 * rstd = 1/sqrt(eps). */
static void test_cols_one(void **state)
{
    (void)state;
    const float x[4] = {-3.5f, 0.0f, 1e6f, 7.25f};
    const float g[1] = {1.75f}, b[1] = {-0.625f};
    float y[4], mean[4], rstd[4];
    clnorm_desc d = make_desc(CLNORM_LAYER, 4, 1, CLNORM_SAVE_STATS);
    expect_ok(clnorm_ref_forward(&d, x, y, g, b, mean, rstd));
    const float want_y[4] = {b[0], b[0], b[0], b[0]};
    assert_int_equal(tu_cmp_bits(y, want_y, 4, "y"), 0);
    assert_int_equal(tu_cmp_bits(mean, x, 4, "mean"), 0);
    const double r = 1.0 / sqrt((double)d.eps);
    for (int i = 0; i < 4; i++)
        assert_true(fabs((double)rstd[i] - r) <= 1e-6 * r);
}

/* Constant rows of any magnitude give exactly beta. */
static void test_constant_rows(void **state)
{
    (void)state;
    const size_t rows = 5, cols = 300;
    const float vals[5] = {0.0f, 1.0f, -2.75f, 1e6f, 12345.678f};
    float *x = tu_alloc_filled(rows * cols, 0), *y = tu_alloc_filled(rows * cols, 0);
    float g[300], b[300];
    tu_rng rng;
    tu_rng_seed(&rng, 14);
    tu_fill_normal(&rng, g, cols, 1.0, 0.5);
    tu_fill_normal(&rng, b, cols, 0.0, 0.5);
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++)
            x[r * cols + c] = vals[r];
    clnorm_desc d = make_desc(CLNORM_LAYER, rows, cols, 0);
    expect_ok(clnorm_ref_forward(&d, x, y, g, b, NULL, NULL));
    for (size_t r = 0; r < rows; r++)
        assert_int_equal(tu_cmp_bits(y + r * cols, b, cols, "constant row"), 0);
    free(x);
    free(y);
}

/* A NaN or an Inf in row 2 leaves rows 0, 1, 3, 4 correct. */
static void test_nonfinite_stays_in_row(void **state)
{
    (void)state;
    const size_t rows = 5, cols = 64;
    const float bad[2] = {NAN, INFINITY};
    for (int kind = 0; kind < 2; kind++) {
        for (int k = 0; k < 2; k++) {
            tu_rng rng;
            tu_rng_seed(&rng, 15);
            clnorm_desc d = make_desc((clnorm_kind)kind, rows, cols, CLNORM_NO_GAMMA |
                                                                         CLNORM_NO_BETA);
            float *x = tu_make_input(&rng, rows, cols, cols, 0.0, 1.0);
            x[2 * cols + 17] = bad[k];
            float *y = tu_alloc_filled(rows * cols, 0);
            double *want = malloc(rows * cols * sizeof *want);
            assert_non_null(want);
            expect_ok(clnorm_ref_forward(&d, x, y, NULL, NULL, NULL, NULL));
            tu_ref64(&d, x, NULL, NULL, want, cols, NULL, NULL);
            for (size_t r = 0; r < rows; r++)
                if (r != 2)
                    assert_int_equal(tu_cmp_f64(y + r * cols, cols, want + r * cols, cols, 1,
                                                cols, REF_ATOL, REF_RTOL, "other row"),
                                     0);
            int nonfinite = 0;
            for (size_t c = 0; c < cols; c++)
                nonfinite |= !isfinite(y[2 * cols + c]);
            assert_true(nonfinite);
            free(x);
            free(y);
            free(want);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hand_row_10_to_50),
        cmocka_unit_test(test_hand_row_1_to_1_4),
        cmocka_unit_test(test_vs_ref64_all_flags),
        cmocka_unit_test(test_vs_ref64_large_mean),
        cmocka_unit_test(test_no_stats),
        cmocka_unit_test(test_strides),
        cmocka_unit_test(test_in_place),
        cmocka_unit_test(test_rows_zero),
        cmocka_unit_test(test_cols_one),
        cmocka_unit_test(test_constant_rows),
        cmocka_unit_test(test_nonfinite_stays_in_row),
    };
    return cmocka_run_group_tests_name("ref", tests, NULL, NULL);
}
