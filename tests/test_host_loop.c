/*
 * test_host_loop.c - the host loop (src/op/row_norm_host*.{c,h}, group_norm_host*): small
 * host-pointer calls on CPU devices run the operation as C loops in the calling thread and
 * the context's workers (README, "Small problems on CPU devices").
 *   - the policy: which plans use it in which direction (every op of the registry that has
 *     one, strategy auto, a CPU device, x of at most CLNORM_HOST_BYTES, and for the backward
 *     of at most CLNORM_HOST_BACKWARD_BYTES too), and which do not (a forced strategy,
 *     CLNORM_STRATEGY, a larger x, CLNORM_HOST_BYTES=0, an op without a loop), GroupNorm
 *     with SiLU's own defaults; bad values of either variable are refused at plan creation;
 *   - its answers against the reference, for every op with a loop in both directions: every
 *     dtype, the optional slots, no affine, modulation, precomputed statistics, float32
 *     residuals, strides, several blocks and a tail, an empty batch, in place, and rows whose
 *     squares overflow float32 (redone scaled, as the kernels do); GroupNorm's likewise,
 *     also with its per-sample modulation (dscale, dshift);
 *   - LayerNorm's float32 backward (plain, fused add, modulated) on rows of a large rstd *
 *     |gamma|, in double, here and (the same data) on the row kernels: within 6e-8 of the
 *     float64 reference (test_wide_rows);
 *   - the same bits with 1, 2, 3 and 6 threads, and the row backward's with a scale of zeros
 *     as without a modulation; the SiLU's exponential against e^x.
 * Every check asserts that the loop really ran (clnorm_plan_uses_host_loop): the other suites
 * run it too wherever they call the host layer with clnorm's choice on small problems, and
 * their variants with CLNORM_HOST_BYTES=0 keep the device path of the host layer covered.
 */
#define _POSIX_C_SOURCE 200809L /* setenv, unsetenv */
#include "op/host_simd.h" /* clnorm_host_expf, checked directly (test_silu_exp) */
#include "test_util.h"
#include "tu_group_paths.h" /* tu_group_plan_on: test_wide_rows' kernel paths */
#include "tu_problem.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS CLNORM_ARG_SLOT_COUNT

static clnorm_ctx *g_ctx;

static const clnorm_direction dirs[2] = {CLNORM_FORWARD, CLNORM_BACKWARD};

/* Every optional slot but the statistics: a backward that recomputes them. */
#define NO_STATS (~(TU_SLOT(CLNORM_ARG_MEAN) | TU_SLOT(CLNORM_ARG_RSTD)))

/* The policy applies to CPU devices only; elsewhere the suite has nothing to check. */
static void require_cpu(void)
{
    if (g_ctx == NULL || !tu_has_device(g_ctx) || !tu_device_is_cpu(g_ctx))
        skip();
}

static int op_has_loop(size_t op)
{
    clnorm_op_info info;
    assert_int_equal(clnorm_op_query((clnorm_kind)op, &info), CLNORM_OK);
    return info.has_host_loop;
}

static clnorm_desc small_desc(size_t op, size_t rows, size_t cols)
{
    clnorm_desc d;
    clnorm_desc_init(&d, (clnorm_kind)op, rows, cols);
    d.flags = CLNORM_SAVE_STATS | CLNORM_WITH_BACKWARD;
    return d;
}

/* Which directions of a plan of d on `strategy` use the loop: bit 0 the forward, bit 1 the
 * backward (-1: no plan, e.g. a refused strategy). */
static int uses_loop(const clnorm_desc *d, clnorm_strategy strategy)
{
    clnorm_plan *plan = NULL;
    const clnorm_status st = strategy == CLNORM_STRATEGY_AUTO
                                 ? clnorm_plan_create(g_ctx, d, &plan)
                                 : clnorm_plan_create_with(g_ctx, d, strategy, &plan);
    if (st != CLNORM_OK)
        return -1;
    const int uses = clnorm_plan_uses_host_loop(plan, CLNORM_FORWARD) |
                     clnorm_plan_uses_host_loop(plan, CLNORM_BACKWARD) << 1;
    clnorm_plan_free(plan);
    return uses;
}

static void test_policy(void **state)
{
    (void)state;
    require_cpu();
    assert_int_equal(clnorm_plan_uses_host_loop(NULL, CLNORM_FORWARD), 0);
    size_t with_loop = 0;
    for (size_t op = 0; op < clnorm_op_count(); op++) {
        const clnorm_desc d = small_desc(op, 4, 768);
        assert_int_equal(uses_loop(&d, CLNORM_STRATEGY_AUTO), op_has_loop(op) ? 3 : 0);
        with_loop += (size_t)op_has_loop(op);
        /* a strategy asked for, by the call or by CLNORM_STRATEGY, is what runs */
        assert_int_equal(uses_loop(&d, CLNORM_STRATEGY_ROW), 0);
        setenv("CLNORM_STRATEGY", "row", 1);
        assert_int_equal(uses_loop(&d, CLNORM_STRATEGY_AUTO), 0);
        unsetenv("CLNORM_STRATEGY");
        if (!op_has_loop(op))
            continue;
        /* the threshold: x of exactly that many bytes is in, one more row is out; the
         * backward's own threshold lies within the forward's */
        setenv("CLNORM_HOST_BYTES", "12288", 1); /* 4 x 768 float32 */
        assert_int_equal(uses_loop(&d, CLNORM_STRATEGY_AUTO), 3);
        const clnorm_desc d5 = small_desc(op, 5, 768);
        assert_int_equal(uses_loop(&d5, CLNORM_STRATEGY_AUTO), 0);
        clnorm_desc h = d5; /* float16: half the bytes */
        h.dtype = CLNORM_F16;
        assert_int_equal(uses_loop(&h, CLNORM_STRATEGY_AUTO), 3);
        setenv("CLNORM_HOST_BACKWARD_BYTES", "9216", 1); /* 3 x 768 float32 */
        assert_int_equal(uses_loop(&d, CLNORM_STRATEGY_AUTO), 1);
        assert_int_equal(uses_loop(&h, CLNORM_STRATEGY_AUTO), 3);
        setenv("CLNORM_HOST_BACKWARD_BYTES", "0", 1); /* the backward off */
        assert_int_equal(uses_loop(&h, CLNORM_STRATEGY_AUTO), 1);
        unsetenv("CLNORM_HOST_BACKWARD_BYTES");
        setenv("CLNORM_HOST_BYTES", "0", 1); /* both off */
        assert_int_equal(uses_loop(&d, CLNORM_STRATEGY_AUTO), 0);
        static const char *const names[] = {"CLNORM_HOST_BYTES", "CLNORM_HOST_BACKWARD_BYTES"};
        for (int k = 0; k < 2; k++) { /* refused, with a message naming it */
            unsetenv("CLNORM_HOST_BYTES");
            setenv(names[k], k ? "-1" : "12x", 1);
            clnorm_plan *plan = NULL;
            assert_int_equal(clnorm_plan_create(g_ctx, &d, &plan), CLNORM_INVALID_ARGUMENT);
            assert_null(plan);
            assert_non_null(strstr(clnorm_last_error(g_ctx), names[k]));
            unsetenv(names[k]);
        }
        /* the default thresholds: 16 MiB of x, the backward 1 MiB (GroupNorm 2 MiB) */
        const clnorm_desc big = small_desc(op, 16384, 256);
        assert_int_equal(uses_loop(&big, CLNORM_STRATEGY_AUTO), 1);
        const clnorm_desc bigger = small_desc(op, 16385, 256);
        assert_int_equal(uses_loop(&bigger, CLNORM_STRATEGY_AUTO), 0);
        const clnorm_desc mid = small_desc(op, 1024, 256);
        assert_int_equal(uses_loop(&mid, CLNORM_STRATEGY_AUTO), 3);
        const clnorm_desc mid1 = small_desc(op, 1025, 256);
        assert_int_equal(uses_loop(&mid1, CLNORM_STRATEGY_AUTO), op == CLNORM_GROUP ? 3 : 1);
        const clnorm_desc mid2 = small_desc(op, 2048, 256), mid3 = small_desc(op, 2049, 256);
        assert_int_equal(uses_loop(&mid2, CLNORM_STRATEGY_AUTO), op == CLNORM_GROUP ? 3 : 1);
        assert_int_equal(uses_loop(&mid3, CLNORM_STRATEGY_AUTO), 1);
    }
    assert_true(with_loop >= 5); /* LayerNorm, RMSNorm, their fused residual adds, GroupNorm */
    /* GroupNorm with its fused SiLU has its own defaults: forward 1 MiB in NCHW and 1 MiB in
     * NHWC, backward 2 MiB in NCHW and 512 KiB in NHWC; without SiLU the forward 16 MiB but
     * in NHWC 2 MiB, the backward 2 MiB. Samples of 1 MiB (C = 256 by 1024 positions, float32): exactly at a
     * threshold is in, one sample more is out. */
    static const struct {
        clnorm_layout layout;
        size_t n;
        int uses;
    } silu_cases[] = {
        {CLNORM_NCHW, 1, 3}, {CLNORM_NCHW, 2, 2}, {CLNORM_NHWC, 1, 1}, {CLNORM_NHWC, 2, 0},
        {CLNORM_NCHW, 3, 0}, {CLNORM_NHWC, 3, 0},
    };
    for (size_t i = 0; i < TU_COUNT(silu_cases); i++) {
        clnorm_desc g;
        clnorm_desc_init(&g, CLNORM_GROUP, silu_cases[i].n, 256);
        g.groups = 32;
        g.spatial = 1024;
        g.layout = silu_cases[i].layout;
        g.flags = CLNORM_SILU | CLNORM_SAVE_STATS | CLNORM_WITH_BACKWARD;
        assert_int_equal(uses_loop(&g, CLNORM_STRATEGY_AUTO), silu_cases[i].uses);
        if (g.layout == CLNORM_NHWC) { /* the backward: 512 KiB in, one position more out */
            g.rows = 1;
            g.spatial = 512;
            assert_int_equal(uses_loop(&g, CLNORM_STRATEGY_AUTO), 3);
            g.spatial = 513;
            assert_int_equal(uses_loop(&g, CLNORM_STRATEGY_AUTO), 1);
        }
        /* without SiLU: the forward 16 MiB (NHWC 2 MiB), the backward 2 MiB */
        g.flags &= ~(unsigned)CLNORM_SILU;
        const int fwd = g.layout == CLNORM_NCHW || g.rows * g.spatial <= 2048;
        const int bwd = g.rows * g.spatial <= 2048;
        assert_int_equal(uses_loop(&g, CLNORM_STRATEGY_AUTO), fwd | bwd << 1);
        if (g.layout == CLNORM_NHWC) { /* both 2 MiB: 2 samples in, 3 out */
            g.rows = 2;
            g.spatial = 1024;
            assert_int_equal(uses_loop(&g, CLNORM_STRATEGY_AUTO), 3);
            g.rows = 3;
            assert_int_equal(uses_loop(&g, CLNORM_STRATEGY_AUTO), 0);
        }
    }
    /* ... and a single float32 NHWC sample's forward without SiLU up to 6 MiB (its y
     * streamed): C = 256 by 6144 positions is exactly 6 MiB; a float16 sample keeps 2 MiB
     * (4096 positions), as every backward does */
    static const struct {
        size_t spatial;
        clnorm_dtype dtype;
        int uses;
    } single[] = {
        {6144, CLNORM_F32, 1}, {6145, CLNORM_F32, 0}, {4096, CLNORM_F16, 3},
        {4097, CLNORM_F16, 0},
    };
    for (size_t i = 0; i < TU_COUNT(single); i++) {
        clnorm_desc g;
        clnorm_desc_init(&g, CLNORM_GROUP, 1, 256);
        g.groups = 32;
        g.spatial = single[i].spatial;
        g.dtype = single[i].dtype;
        g.layout = CLNORM_NHWC;
        g.flags = CLNORM_SAVE_STATS | CLNORM_WITH_BACKWARD;
        assert_int_equal(uses_loop(&g, CLNORM_STRATEGY_AUTO), single[i].uses);
    }
    /* precomputed statistics: the NCHW backward stops at 2 MiB as without them (samples of
     * 1 MiB: two in, three out), the forward keeps 16 MiB, and the NHWC backward 16 MiB */
    static const struct {
        clnorm_layout layout;
        size_t n;
        int uses;
    } stats_cases[] = {
        {CLNORM_NCHW, 2, 3}, {CLNORM_NCHW, 3, 1}, {CLNORM_NCHW, 16, 1}, {CLNORM_NCHW, 17, 0},
        {CLNORM_NHWC, 3, 2}, {CLNORM_NHWC, 16, 2},
    };
    for (size_t i = 0; i < TU_COUNT(stats_cases); i++) {
        clnorm_desc g;
        clnorm_desc_init(&g, CLNORM_GROUP, stats_cases[i].n, 256);
        g.groups = 32;
        g.spatial = 1024;
        g.layout = stats_cases[i].layout;
        g.flags = CLNORM_USE_GLOBAL_STATS | CLNORM_WITH_BACKWARD;
        assert_int_equal(uses_loop(&g, CLNORM_STRATEGY_AUTO), stats_cases[i].uses);
    }
}

/* The problems of the sweep: rows, cols, stride of every row tensor (0: dense), samples. */
typedef struct {
    size_t rows, cols, stride, samples;
} shape;

static const shape shapes[] = {
    {1, 1, 0, 1},    {17, 7, 9, 1},   {3, 768, 0, 1},  {64, 130, 0, 4},
    {5, 4097, 0, 5}, {6, 300, 301, 3}, {0, 33, 0, 2}, {0, 5, 0, 0},
};

/* The flag sets of the sweep (each with CLNORM_WITH_BACKWARD). */
static const unsigned flag_sets[] = {
    CLNORM_SAVE_STATS,
    CLNORM_NO_GAMMA | CLNORM_NO_BETA,
    CLNORM_NO_BETA | CLNORM_SCALE | CLNORM_SHIFT,
    CLNORM_SCALE,
    CLNORM_USE_GLOBAL_STATS | CLNORM_SHIFT,
    CLNORM_RESIDUAL_F32 | CLNORM_SAVE_STATS,
};

static const clnorm_dtype dtypes[] = {CLNORM_F32, CLNORM_F16, CLNORM_BF16, CLNORM_F64};

/* Whether the description is one the library takes (flags that do not apply are skipped). */
static int valid(const clnorm_desc *d)
{
    return clnorm_desc_check(d, NULL, 0) == CLNORM_OK;
}

/* d: op over shape sh in dtype t with flags; 0 when the library refuses that (flags that do
 * not apply to the op are skipped). */
static int shape_desc(clnorm_desc *d, size_t op, clnorm_dtype t, unsigned flags, const shape *sh)
{
    clnorm_desc_init(d, (clnorm_kind)op, sh->rows, sh->cols);
    d->dtype = t;
    d->flags = flags;
    d->samples = sh->samples;
    d->x_stride = d->y_stride = d->residual_stride = d->sum_stride = sh->stride;
    return valid(d);
}

/* The row tensors a problem may run in place: an output and an input of the same type and
 * layout (the op table's row slots). */
static int may_alias(const tu_problem *p, unsigned rows_mask, unsigned out, unsigned in)
{
    const clnorm_slot_info *o = &p->info[out], *i = &p->info[in];
    return out != in && (rows_mask & TU_SLOT(out)) && (rows_mask & TU_SLOT(in)) &&
           o->is_output && !i->is_output && o->dtype == i->dtype && o->stride == i->stride;
}

static void test_sweep(void **state)
{
    (void)state;
    require_cpu();
    size_t failed = 0, runs = 0;
    for (size_t op = 0; op < clnorm_op_count(); op++) {
        if (!op_has_loop(op))
            continue;
        for (size_t t = 0; t < TU_COUNT(dtypes); t++) {
            for (size_t f = 0; f < TU_COUNT(flag_sets); f++) {
                for (size_t s = 0; s < TU_COUNT(shapes); s++) {
                    clnorm_desc d;
                    if (!shape_desc(&d, op, dtypes[t], flag_sets[f] | CLNORM_WITH_BACKWARD,
                                    &shapes[s]))
                        continue;
                    clnorm_plan *plan = tu_plan_if(g_ctx, &d, CLNORM_STRATEGY_AUTO);
                    if (plan == NULL)
                        continue; /* float64 without cl_khr_fp64 */
                    if (!clnorm_plan_uses_host_loop(plan, CLNORM_FORWARD) ||
                        !clnorm_plan_uses_host_loop(plan, CLNORM_BACKWARD))
                        fail_msg("op %zu, %s, flags 0x%x, %zux%zu: not a host-loop plan", op,
                                 tu_dtype_name(d.dtype), d.flags, d.rows, d.cols);
                    /* forward, backward from saved statistics, backward recomputing them
                     * (the loop's own row statistics, as the forward's) */
                    for (int k = 0; k < 3; k++) {
                        tu_problem p;
                        tu_problem_make(&p, &d, dirs[k > 0], k == 2 ? NO_STATS : TU_ALL_OPTIONAL,
                                        700000 + 10000 * op + 1000 * t + 100 * f + 10 * s +
                                            (uint64_t)k,
                                        NULL);
                        const tu_launch l = tu_launch_offsets();
                        failed += tu_problem_try_host(g_ctx, &p, plan, &l, 0) != 0;
                        runs++;
                        /* in place, on the dense float32 problems */
                        const unsigned rows_mask = tu_row_slots(&p.desc, p.dir);
                        for (unsigned out = 0; d.dtype == CLNORM_F32 && out < SLOTS; out++)
                            for (unsigned in = 0; in < SLOTS; in++) {
                                if (!(p.given & TU_SLOT(out)) || !(p.given & TU_SLOT(in)) ||
                                    !may_alias(&p, rows_mask, out, in))
                                    continue;
                                tu_launch li = tu_launch_offsets();
                                tu_launch_in_place(&li, (clnorm_arg_slot)out,
                                                   (clnorm_arg_slot)in);
                                failed += tu_problem_try_host(g_ctx, &p, plan, &li, 0) != 0;
                                runs++;
                            }
                        tu_problem_free(&p);
                    }
                    clnorm_plan_free(plan);
                }
            }
        }
    }
    print_message("host loop: %zu runs\n", runs);
    assert_true(runs > 100);
    if (failed)
        fail_msg("%zu host-loop runs mismatched (the FAILED CASE lines above)", failed);
}

/* The row kernels' paths of test_wide_rows: the host loop off (CLNORM_HOST_BYTES=0), on the
 * CPU device's geometry and on the GPUs' (4 lanes, work-groups of 32, two along the rows; the
 * workgroup strategy, whose backward has work-groups of 32 items where the row strategy's
 * has one). */
static const tu_env_kv wide_cpu_kernels[] = {{"CLNORM_HOST_BYTES", "0"}};
static const tu_env_kv wide_gpu_kernels[] = {{"CLNORM_HOST_BYTES", "0"},
                                             {"CLNORM_VECTOR_WIDTH", "4"},
                                             {"CLNORM_LOCAL_SIZE", "32"},
                                             {"CLNORM_MAX_GROUPS", "2"}};

/* The largest errors of a backward laid out as test_wide_rows lays it (x, residual or y, dy,
 * dx: n each, then gamma, beta, dgamma, dbeta: C each) against the float64 want: dx's as a
 * fraction of 1 + |want| (*e), dgamma's and dbeta's of 1e-5 + 1e-5 |want| (*ep). A NaN left
 * unwritten makes them NaN. */
static void grad_errors(const float *f, const double *w, size_t n, size_t C, double *e,
                        double *ep)
{
    *e = *ep = 0;
    for (size_t i = 3 * n; i < 4 * n; i++) {
        const double t = fabs(f[i] - w[i]) / (1 + fabs(w[i]));
        *e = t <= *e ? *e : t;
    }
    for (size_t i = 4 * n + 2 * C; i < 4 * n + 4 * C; i++) {
        const double t = fabs(f[i] - w[i]) / (1e-5 + 1e-5 * fabs(w[i]));
        *ep = t <= *ep ? *ep : t;
    }
}

/* LayerNorm's, the fused add's and the modulated LayerNorm's float32 backward on rows of a large
 * rstd * |gamma|: s = x, or x + residual, = 300 + N(0, 0.001^2) (rstd near 300), gamma 1 + N(0,
 * 1), 1 + scale of N(1, 0.5^2); and where gamma makes them wide, s = 300 + N(0, 0.07^2) (rstd
 * near 14, under CLNORM_ROW_WIDE) with gamma 1 + N(0, 10^2), against the reference's
 * float64 backward of the same values: dx within 2.5e-7 x (1 + |want|), dgamma and dbeta
 * within 1e-5 + 1e-5 |want|. The float row had put dx at up to 1.43x that bound against torch
 * (float64); such rows now run in double (row_norm_host_body.h, HN(row_wide)): 6e-8, the
 * float32 rounding of the result. The same data through the row kernels (the host loop off),
 * on the CPU's geometry and the GPUs', where a row of rstd at least 16 takes dx in double
 * (kernels/norm_backward.cl, BWD_WIDE) where the device has it: rows of 64 to 4096 columns,
 * and two rows of 16,384, which the backward cuts into chunks (norm_bwd_sums), within 1e-6 x
 * (1 + |want|): the kernels take eps as float32 holds it (README, Numerics), 2.5e-14 from
 * 1e-5, 2e-9 of var + eps here, which moves a dx near 0 between terms of 300 by about 3e-7
 * (the float chain was at 1e-5). The second kind of rows is wide by rstd * |gamma (1 + scale)|
 * alone: the kernels count it since norm_bwd_gmax (kernels/norm_backward.cl), before which their
 * float rows put dx at up to 1.5x torch's bound (tests/torch_layer_spread.py --spread 0.07
 * --gscale 30). */
static void test_wide_rows(void **state)
{
    (void)state;
    require_cpu();
    static const size_t rc[][2] = {{256, 64}, {64, 1024}, {8, 4096}, {2, 16384}};
    const tu_run_path paths[] = {TU_PATH(CLNORM_STRATEGY_AUTO, wide_cpu_kernels),
                                 TU_PATH(CLNORM_STRATEGY_WORKGROUP, wide_gpu_kernels)};
    const size_t npaths = tu_device_has_fp64(g_ctx) ? TU_COUNT(paths) : 0;
    /* LayerNorm, the fused add, LayerNorm modulated (two samples) */
    const clnorm_kind kinds[] = {CLNORM_LAYER, CLNORM_ADD_LAYER, CLNORM_LAYER};
    tu_rng rng;
    tu_rng_seed(&rng, 9944);
    size_t failed = 0;
    double worst = 0;
    for (size_t kr = 0; kr < 2 * TU_COUNT(kinds); kr++)
        for (size_t si = 0; si < TU_COUNT(rc); si++) {
            /* k the kind; by_gamma: rows of rstd near 14 made wide by gamma */
            const size_t k = kr % TU_COUNT(kinds), by_gamma = kr / TU_COUNT(kinds);
            const double spread = by_gamma ? 0.07 : 0.001, gscale = by_gamma ? 10 : 1;
            const size_t R = rc[si][0], C = rc[si][1], n = R * C;
            const int add = kinds[k] == CLNORM_ADD_LAYER, mod = k == 2;
            clnorm_desc d;
            clnorm_desc_init(&d, kinds[k], R, C);
            d.flags = CLNORM_WITH_BACKWARD | (mod ? CLNORM_SCALE : 0u);
            d.samples = mod ? 2 : 0;
            clnorm_desc dw = d;
            dw.dtype = CLNORM_F64;
            float *f = malloc((4 * n + 6 * C) * sizeof *f);
            double *w = malloc((4 * n + 6 * C) * sizeof *w);
            assert_non_null(f);
            assert_non_null(w);
            for (size_t i = 0; i < n; i++) { /* x, the residual (each half of s), dy */
                f[i] = (float)(add ? 150.0 + 0.7 * spread * tu_rng_normal(&rng)
                                   : 300.0 + spread * tu_rng_normal(&rng));
                f[n + i] = (float)(150.0 + 0.7 * spread * tu_rng_normal(&rng));
                f[2 * n + i] = (float)tu_rng_normal(&rng);
            }
            for (size_t c = 0; c < C; c++) {
                f[4 * n + c] = (float)(1.0 + gscale * tu_rng_normal(&rng)); /* gamma */
                f[4 * n + C + c] = (float)tu_rng_normal(&rng);     /* beta */
                f[4 * n + 4 * C + c] = (float)(0.5 * tu_rng_normal(&rng)); /* scale */
                f[4 * n + 5 * C + c] = (float)(0.5 * tu_rng_normal(&rng));
            }
            for (size_t i = 0; i < 4 * n + 6 * C; i++)
                w[i] = f[i];
            /* x, residual, dy, dx (3n), gamma, beta, dgamma, dbeta, scale (2 C) */
            clnorm_host_arg fa[9], wa[9];
            size_t na = 0;
            const clnorm_arg_slot sl[] = {
                CLNORM_ARG_X,     CLNORM_ARG_RESIDUAL, CLNORM_ARG_DY,
                CLNORM_ARG_DX,    CLNORM_ARG_GAMMA,    CLNORM_ARG_BETA,
                CLNORM_ARG_DGAMMA, CLNORM_ARG_DBETA,   CLNORM_ARG_SCALE};
            const size_t at[] = {0,         n,         2 * n,     3 * n,    4 * n,
                                 4 * n + C, 4 * n + 2 * C, 4 * n + 3 * C, 4 * n + 4 * C};
            for (size_t j = 0; j < 9; j++) {
                if ((sl[j] == CLNORM_ARG_RESIDUAL && !add) ||
                    (sl[j] == CLNORM_ARG_SCALE && !mod) || sl[j] == CLNORM_ARG_BETA)
                    continue; /* the backward reads no beta */
                fa[na] = (clnorm_host_arg){sl[j], f + at[j]};
                wa[na++] = (clnorm_host_arg){sl[j], w + at[j]};
            }
            assert_int_equal(clnorm_ref_execute(&dw, CLNORM_BACKWARD, wa, na), CLNORM_OK);
            /* the host loop (the default plan), then the kernels' paths */
            for (size_t pi = 0; pi <= npaths; pi++) {
                clnorm_plan *plan = NULL;
                if (pi == 0)
                    assert_int_equal(clnorm_plan_create(g_ctx, &d, &plan), CLNORM_OK);
                else
                    plan = tu_group_plan_on(g_ctx, &d, &paths[pi - 1]);
                assert_non_null(plan);
                assert_true(clnorm_plan_uses_host_loop(plan, CLNORM_BACKWARD) == (pi == 0));
                for (size_t i = 3 * n; i < 4 * n + 4 * C; i++)
                    if (i < 4 * n || i >= 4 * n + 2 * C)
                        f[i] = NAN; /* dx, dgamma, dbeta: written anew by each path */
                assert_int_equal(clnorm_execute_host(plan, CLNORM_BACKWARD, fa, na), CLNORM_OK);
                clnorm_plan_free(plan);
                double e, ep;
                grad_errors(f, w, n, C, &e, &ep);
                worst = fmax(worst, e);
                if (!(e <= (pi == 0 ? 2.5e-7 : 1e-6)) || !(ep <= 1)) {
                    print_message("FAILED CASE wide rows%s %s %zux%zu (%s): dx %.3g x (1 + "
                                  "|want|), dgamma/dbeta %.3g of the bound\n",
                                  by_gamma ? " by gamma" : "",
                                  add ? "add-layer" : mod ? "layer-mod" : "layer", R, C,
                                  pi == 0 ? "host loop" : pi == 1 ? "kernels" : "GPU geometry",
                                  e, ep);
                    failed++;
                }
            }
            free(f);
            free(w);
        }
    print_message("wide rows: dx within %.3g x (1 + |want|)\n", worst);
    if (failed)
        fail_msg("%zu wide-row cases mismatched", failed);
}

/* A backward given the forward's saved statistics, on the host loop: LayerNorm rows and
 * GroupNorm groups (both layouts) of x = 300 + N(0, 0.01^2), the statistics saved by the
 * loop's own forward (float32), against the reference's float64 backward recomputing them.
 * The float32 mean is rounded by up to 1.5e-5, which xhat carries times rstd (near 100):
 * used as given it had put dx 1e-3 and more off; the loop recomputes them (src/execute.c),
 * as without them: dx within 1e-6 x (1 + |want|), dgamma and dbeta within 1e-5 + 1e-5
 * |want|. */
static void test_saved_stats_recomputed(void **state)
{
    (void)state;
    require_cpu();
    tu_rng rng;
    tu_rng_seed(&rng, 3170);
    size_t failed = 0;
    for (int k = 0; k < 3; k++) { /* LayerNorm; GroupNorm NCHW; GroupNorm NHWC */
        clnorm_desc d;
        if (k == 0) {
            clnorm_desc_init(&d, CLNORM_LAYER, 16, 128);
        } else {
            clnorm_desc_init(&d, CLNORM_GROUP, 2, 16);
            d.groups = 4;
            d.spatial = 64;
            d.layout = k == 2 ? CLNORM_NHWC : CLNORM_NCHW;
        }
        d.flags = CLNORM_WITH_BACKWARD | CLNORM_SAVE_STATS;
        const size_t n = d.rows * d.cols * (k ? d.spatial : 1), C = d.cols;
        const size_t ns = k ? d.rows * d.groups : d.rows;
        clnorm_desc dw = d;
        dw.dtype = CLNORM_F64;
        /* x, y, dy, dx; gamma, beta, dgamma, dbeta; mean, rstd */
        float *f = malloc((4 * n + 4 * C + 2 * ns) * sizeof *f);
        double *w = malloc((4 * n + 4 * C) * sizeof *w);
        assert_non_null(f);
        assert_non_null(w);
        for (size_t i = 0; i < n; i++) {
            f[i] = (float)(300.0 + 0.01 * tu_rng_normal(&rng));
            f[2 * n + i] = (float)tu_rng_normal(&rng);
        }
        for (size_t c = 0; c < C; c++) {
            f[4 * n + c] = (float)(1.0 + 0.3 * tu_rng_normal(&rng));
            f[4 * n + C + c] = (float)tu_rng_normal(&rng);
        }
        for (size_t i = 0; i < 4 * n + 4 * C; i++)
            w[i] = f[i];
        float *x = f, *y = f + n, *dy = f + 2 * n, *dx = f + 3 * n, *g = f + 4 * n,
              *b = g + C, *dg = b + C, *db = dg + C, *mean = db + C, *rstd = mean + ns;
        const clnorm_host_arg wa[] = {{CLNORM_ARG_X, w},          {CLNORM_ARG_DY, w + 2 * n},
                                      {CLNORM_ARG_GAMMA, w + 4 * n}, {CLNORM_ARG_DX, w + 3 * n},
                                      {CLNORM_ARG_DGAMMA, w + 4 * n + 2 * C},
                                      {CLNORM_ARG_DBETA, w + 4 * n + 3 * C}};
        assert_int_equal(clnorm_ref_execute(&dw, CLNORM_BACKWARD, wa, TU_COUNT(wa)), CLNORM_OK);
        clnorm_plan *plan = NULL;
        assert_int_equal(clnorm_plan_create(g_ctx, &d, &plan), CLNORM_OK);
        assert_true(clnorm_plan_uses_host_loop(plan, CLNORM_FORWARD));
        assert_true(clnorm_plan_uses_host_loop(plan, CLNORM_BACKWARD));
        const clnorm_host_arg fa[] = {{CLNORM_ARG_X, x},       {CLNORM_ARG_Y, y},
                                      {CLNORM_ARG_GAMMA, g},   {CLNORM_ARG_BETA, b},
                                      {CLNORM_ARG_MEAN, mean}, {CLNORM_ARG_RSTD, rstd}};
        assert_int_equal(clnorm_execute_host(plan, CLNORM_FORWARD, fa, TU_COUNT(fa)), CLNORM_OK);
        const clnorm_host_arg ba[] = {{CLNORM_ARG_X, x},         {CLNORM_ARG_DY, dy},
                                      {CLNORM_ARG_GAMMA, g},     {CLNORM_ARG_MEAN, mean},
                                      {CLNORM_ARG_RSTD, rstd},   {CLNORM_ARG_DX, dx},
                                      {CLNORM_ARG_DGAMMA, dg},   {CLNORM_ARG_DBETA, db}};
        assert_int_equal(clnorm_execute_host(plan, CLNORM_BACKWARD, ba, TU_COUNT(ba)),
                         CLNORM_OK);
        clnorm_plan_free(plan);
        double e, ep;
        grad_errors(f, w, n, C, &e, &ep);
        print_message("saved statistics, %s: dx %.3g x (1 + |want|), dgamma/dbeta %.3g of "
                      "the bound\n",
                      k == 0 ? "LayerNorm" : k == 1 ? "GroupNorm NCHW" : "GroupNorm NHWC", e,
                      ep);
        if (!(e <= 1e-6) || !(ep <= 1))
            failed++;
        free(f);
        free(w);
    }
    if (failed)
        fail_msg("%zu saved-statistics cases mismatched", failed);
}

/* Rows whose squares overflow float32 (|x| about 1e20, finite): the loop redoes them scaled
 * by a power of two, as the kernels do, and matches the reference. */
static void test_overflow(void **state)
{
    (void)state;
    require_cpu();
    const tu_data big = {1e20, 3e19, -2e19, 1e19};
    for (size_t op = 0; op < clnorm_op_count(); op++) {
        if (!op_has_loop(op))
            continue;
        const clnorm_desc d = small_desc(op, 9, 300);
        clnorm_plan *plan = tu_plan_if(g_ctx, &d, CLNORM_STRATEGY_AUTO);
        assert_non_null(plan);
        assert_int_equal(clnorm_plan_uses_host_loop(plan, CLNORM_FORWARD), 1);
        assert_int_equal(clnorm_plan_uses_host_loop(plan, CLNORM_BACKWARD), 1);
        for (int k = 0; k < 2; k++) {
            tu_problem p;
            tu_problem_make(&p, &d, dirs[k], TU_ALL_OPTIONAL, 790000 + 10 * op + (uint64_t)k,
                            &big);
            const tu_launch l = tu_launch_offsets();
            tu_problem_run_host(g_ctx, &p, plan, &l, 0, NULL);
            tu_problem_free(&p);
        }
        clnorm_plan_free(plan);
    }
}

/* Calls of several chunks of rows, which the context's workers share (host_threads.c): with
 * one, two, three and six threads (a context each, CLNORM_HOST_THREADS; six on a machine of
 * fewer cores wakes only some of its sleeping workers), every output matches the
 * reference and has the same bits as with one thread, since the chunks and the order of the
 * sums depend on the shape alone. The shapes have samples that cross chunks (T = 25 and 26
 * against chunks of 55 and 64 rows), chunks in which no sample ends (T = 100), many whole
 * samples in a chunk (T = 1), strides, long rows, and a few long rows. */
static const shape chunk_shapes[] = {
    {200, 300, 0, 8}, {200, 300, 0, 2}, {1000, 40, 0, 1000}, {130, 1000, 1003, 5}, {97, 2048, 0, 1},
    /* a few long rows: the backward's chunks of fewer than HROWS rows (row_norm_host.c), 4
     * and 2 rows, which samples of 5 and 3 rows cross */
    {30, 2048, 0, 6}, {12, 4100, 4111, 4},
};

/* Runs d in both directions on each context of ctx (one per width) and checks every output
 * against the reference and, byte for byte, against the first context's. */
static void same_bits_across(clnorm_ctx *const *ctx, const unsigned *widths, size_t nctx,
                             const clnorm_desc *d, uint64_t seed, unsigned optional, size_t *runs,
                             size_t *failed)
{
    for (int k = 0; k < 2; k++) {
        tu_problem p;
        tu_problem_make(&p, d, dirs[k], optional, seed + (uint64_t)k, NULL);
        tu_args first = {{0}};
        for (size_t w = 0; w < nctx; w++) {
            clnorm_plan *plan = tu_plan_if(ctx[w], d, CLNORM_STRATEGY_AUTO);
            if (plan == NULL)
                break; /* float64 without cl_khr_fp64 */
            assert_int_equal(clnorm_plan_uses_host_loop(plan, dirs[k]), 1);
            tu_args got = {{0}};
            const tu_launch l = tu_launch_offsets();
            tu_problem_run_host(ctx[w], &p, plan, &l, 0, &got);
            (*runs)++;
            for (unsigned slot = 0; w > 0 && slot < SLOTS; slot++) {
                if (!got.p[slot])
                    continue;
                const size_t bytes = p.info[slot].extent * clnorm_elem_size(p.info[slot].dtype);
                if (memcmp(got.p[slot], first.p[slot], bytes) != 0) {
                    print_error("FAILED CASE op %d, %s, flags 0x%x, %zux%zu (groups %zu, "
                                "spatial %zu, layout %d), %zu samples, %s: %s differs between "
                                "1 and %u threads\n",
                                (int)d->kind, tu_dtype_name(d->dtype), d->flags, d->rows,
                                d->cols, d->groups, d->spatial, (int)d->layout, d->samples,
                                k ? "backward" : "forward",
                                clnorm_arg_name((clnorm_arg_slot)slot), widths[w]);
                    (*failed)++;
                }
            }
            if (w == 0)
                first = got;
            else
                tu_args_free(&got);
            clnorm_plan_free(plan);
        }
        tu_args_free(&first);
        tu_problem_free(&p);
    }
}

/* GroupNorm's problems: N, C, G, spatial, layout and sample stride (0: dense). They cover
 * both layouts' units (src/op/group_norm_host.c describes them): NCHW groups of one unit
 * (fused) and of several (whole channels, and channels longer than a unit; the forward's
 * of more than GN_FWD_FUSE_ELEMS: 72000 and 68000 elements), NHWC of one and of several
 * position blocks, G = 1 and G = C, spatial 1, strides and an empty batch. */
typedef struct {
    size_t n, c, g, hw;
    clnorm_layout layout;
    size_t stride;
} gshape;

static const gshape group_shapes[] = {
    {2, 6, 3, 5, CLNORM_NCHW, 0},        {2, 6, 3, 5, CLNORM_NHWC, 0},
    {3, 8, 8, 1, CLNORM_NCHW, 0},        {3, 8, 1, 1, CLNORM_NHWC, 0},
    {2, 64, 8, 81, CLNORM_NCHW, 0},      {2, 64, 8, 81, CLNORM_NHWC, 0},
    {2, 600, 3, 100, CLNORM_NCHW, 0},    {1, 4, 2, 17000, CLNORM_NCHW, 0},
    {1, 4, 2, 9000, CLNORM_NHWC, 0},     {1, 1500, 30, 70, CLNORM_NHWC, 0},
    {3, 12, 4, 10, CLNORM_NHWC, 130},    {3, 12, 4, 10, CLNORM_NCHW, 125},
    {2, 5, 5, 33, CLNORM_NHWC, 0},       {0, 8, 2, 4, CLNORM_NHWC, 0},
    {1, 1200, 2, 120, CLNORM_NCHW, 0},   {1, 4, 1, 17000, CLNORM_NCHW, 0},
};

static const unsigned group_flag_sets[] = {
    CLNORM_SAVE_STATS,
    CLNORM_NO_GAMMA | CLNORM_NO_BETA,
    CLNORM_SILU | CLNORM_SAVE_STATS,
    CLNORM_SILU | CLNORM_NO_BETA,
};

static int group_desc(clnorm_desc *d, clnorm_dtype t, unsigned flags, const gshape *sh)
{
    clnorm_desc_init(d, CLNORM_GROUP, sh->n, sh->c);
    d->dtype = t;
    d->flags = flags | CLNORM_WITH_BACKWARD;
    d->groups = sh->g;
    d->spatial = sh->hw;
    d->layout = sh->layout;
    d->x_stride = d->y_stride = sh->stride;
    return valid(d);
}

/* GroupNorm's per-sample modulations (a diffusion UNet's scale-shift norm) of the sweeps:
 * flags; samples B (0: B = N; else B when it divides N, 1 when not: B < N; with N = 0 an empty
 * batch of B samples, whose dscale and dshift are zeros); rows of scale and shift C + pad
 * apart. */
typedef struct {
    unsigned flags;
    size_t samples, pad;
} gmod;

static const gmod group_mods[] = {
    {CLNORM_SCALE | CLNORM_SHIFT | CLNORM_SILU | CLNORM_SAVE_STATS, 0, 0},
    {CLNORM_SCALE | CLNORM_SHIFT | CLNORM_SAVE_STATS, 2, 3},
    {CLNORM_SHIFT | CLNORM_SILU | CLNORM_NO_BETA, 0, 5},
    {CLNORM_SCALE | CLNORM_NO_GAMMA | CLNORM_NO_BETA | CLNORM_SILU, 3, 0},
};

static int group_mod_desc(clnorm_desc *d, clnorm_dtype t, const gmod *m, const gshape *sh)
{
    if (!group_desc(d, t, m->flags, sh))
        return 0;
    d->samples = m->samples == 0 ? sh->n : sh->n % m->samples ? 1 : m->samples;
    d->mod_stride = sh->c + m->pad;
    return valid(d);
}

/* The backward that gives only dscale and dshift (and the saved statistics). */
#define MOD_GRADS_ONLY                                                                      \
    (TU_SLOT(CLNORM_ARG_MEAN) | TU_SLOT(CLNORM_ARG_RSTD) | TU_SLOT(CLNORM_ARG_DSCALE) |       \
     TU_SLOT(CLNORM_ARG_DSHIFT))

/* A context per width, each with CLNORM_HOST_THREADS set to it when it was made. */
static void thread_contexts(const unsigned *widths, size_t n, clnorm_ctx **ctx)
{
    char value[16];
    for (size_t w = 0; w < n; w++) {
        snprintf(value, sizeof value, "%u", widths[w]);
        setenv("CLNORM_HOST_THREADS", value, 1);
        ctx[w] = tu_context("host loop threads");
    }
    unsetenv("CLNORM_HOST_THREADS");
}

static void test_threads(void **state)
{
    (void)state;
    require_cpu();
    static const unsigned widths[] = {1, 2, 3, 6};
    clnorm_ctx *ctx[TU_COUNT(widths)];
    thread_contexts(widths, TU_COUNT(widths), ctx);
    setenv("CLNORM_HOST_BYTES", "1073741824", 1); /* every shape on the loop */
    setenv("CLNORM_HOST_BACKWARD_BYTES", "1073741824", 1);
    static const clnorm_dtype types[] = {CLNORM_F32, CLNORM_F16, CLNORM_F64};
    size_t runs = 0, failed = 0;
    for (size_t op = 0; op < clnorm_op_count(); op++) {
        if (!op_has_loop(op) || op == CLNORM_GROUP)
            continue;
        for (size_t t = 0; t < TU_COUNT(types); t++)
            for (size_t f = 0; f < TU_COUNT(flag_sets); f++)
                for (size_t s = 0; s < TU_COUNT(chunk_shapes); s++) {
                    clnorm_desc d;
                    if (shape_desc(&d, op, types[t], flag_sets[f] | CLNORM_WITH_BACKWARD,
                                   &chunk_shapes[s]))
                        same_bits_across(ctx, widths, TU_COUNT(widths), &d,
                                         800000 + 10000 * op + 1000 * t + 100 * f + 10 * s,
                                         TU_ALL_OPTIONAL, &runs, &failed);
                }
    }
    /* GroupNorm: the shapes of several units, saved statistics and recomputed ones */
    for (size_t t = 0; t < TU_COUNT(types); t++)
        for (size_t f = 0; f < TU_COUNT(group_flag_sets); f++)
            for (size_t s = 0; s < TU_COUNT(group_shapes); s++) {
                clnorm_desc d;
                if (!group_desc(&d, types[t], group_flag_sets[f], &group_shapes[s]))
                    continue;
                same_bits_across(ctx, widths, TU_COUNT(widths), &d,
                                 850000 + 1000 * t + 100 * f + 2 * s,
                                 f % 2 ? NO_STATS : TU_ALL_OPTIONAL, &runs, &failed);
            }
    /* and modulated: dscale and dshift, gamma and beta folded per sample */
    for (size_t t = 0; t < TU_COUNT(types); t++)
        for (size_t f = 0; f < TU_COUNT(group_mods); f++)
            for (size_t s = 0; s < TU_COUNT(group_shapes); s++) {
                clnorm_desc d;
                if (!group_mod_desc(&d, types[t], &group_mods[f], &group_shapes[s]))
                    continue;
                same_bits_across(ctx, widths, TU_COUNT(widths), &d,
                                 860000 + 1000 * t + 100 * f + 2 * s,
                                 f % 2 ? NO_STATS : TU_ALL_OPTIONAL, &runs, &failed);
            }
    unsetenv("CLNORM_HOST_BYTES");
    unsetenv("CLNORM_HOST_BACKWARD_BYTES");
    for (size_t w = 0; w < TU_COUNT(widths); w++)
        clnorm_free(ctx[w]);
    print_message("host loop threads: %zu runs\n", runs);
    assert_true(runs > 100);
    if (failed)
        fail_msg("%zu outputs depended on the number of threads", failed);
}

/* GroupNorm's loop against the reference: both layouts, every dtype, with and without the
 * affine and the SiLU, modulated (group_mods: dscale and dshift, B = N and B < N, strided
 * rows, an empty batch of samples), the backward from saved and from recomputed statistics
 * (modulated, also of only dscale and dshift), strides, an empty batch, and in place (y over
 * x; dx over dy and over x) on float32. */
static void test_group_sweep(void **state)
{
    (void)state;
    require_cpu();
    /* every shape on the loop, both ways (GroupNorm with SiLU stops at 1 MiB by default) */
    setenv("CLNORM_HOST_BYTES", "16777216", 1);
    setenv("CLNORM_HOST_BACKWARD_BYTES", "16777216", 1);
    size_t failed = 0, runs = 0;
    const size_t nplain = TU_COUNT(group_flag_sets);
    for (size_t t = 0; t < TU_COUNT(dtypes); t++)
        for (size_t f = 0; f < nplain + TU_COUNT(group_mods); f++)
            for (size_t s = 0; s < TU_COUNT(group_shapes); s++) {
                clnorm_desc d;
                const int mod = f >= nplain; /* a modulated one (group_mods) */
                if (!(mod ? group_mod_desc(&d, dtypes[t], &group_mods[f - nplain],
                                           &group_shapes[s])
                          : group_desc(&d, dtypes[t], group_flag_sets[f], &group_shapes[s])))
                    continue;
                clnorm_plan *plan = tu_plan_if(g_ctx, &d, CLNORM_STRATEGY_AUTO);
                if (plan == NULL)
                    continue; /* float64 without cl_khr_fp64 */
                if (!clnorm_plan_uses_host_loop(plan, CLNORM_FORWARD) ||
                    !clnorm_plan_uses_host_loop(plan, CLNORM_BACKWARD))
                    fail_msg("GroupNorm %zux%zu:%zu x %zu: not a host-loop plan", d.rows, d.cols,
                             d.groups, d.spatial);
                /* forward, backward saved, backward recomputed; modulated, also the
                 * backward of only dscale and dshift */
                for (int k = 0; k < 3 + mod; k++) {
                    static const unsigned optional[] = {TU_ALL_OPTIONAL, TU_ALL_OPTIONAL,
                                                        NO_STATS, MOD_GRADS_ONLY};
                    tu_problem p;
                    const uint64_t seed =
                        870000 + 1000 * t + 100 * f + (mod ? 4 : 3) * s + (uint64_t)k;
                    tu_problem_make(&p, &d, dirs[k > 0], optional[k], seed, NULL);
                    const tu_launch l = tu_launch_offsets();
                    failed += tu_problem_try_host(g_ctx, &p, plan, &l, 0) != 0;
                    runs++;
                    static const clnorm_arg_slot pairs[][2] = {{CLNORM_ARG_Y, CLNORM_ARG_X},
                                                               {CLNORM_ARG_DX, CLNORM_ARG_DY},
                                                               {CLNORM_ARG_DX, CLNORM_ARG_X}};
                    for (size_t i = 0; d.dtype == CLNORM_F32 && d.x_stride == d.y_stride &&
                                       i < TU_COUNT(pairs);
                         i++) {
                        if (!(p.given & TU_SLOT(pairs[i][0])) || !(p.given & TU_SLOT(pairs[i][1])))
                            continue;
                        tu_launch li = tu_launch_offsets();
                        tu_launch_in_place(&li, pairs[i][0], pairs[i][1]);
                        failed += tu_problem_try_host(g_ctx, &p, plan, &li, 0) != 0;
                        runs++;
                    }
                    tu_problem_free(&p);
                }
                clnorm_plan_free(plan);
            }
    unsetenv("CLNORM_HOST_BYTES");
    unsetenv("CLNORM_HOST_BACKWARD_BYTES");
    print_message("GroupNorm host loop: %zu runs\n", runs);
    assert_true(runs > 600);
    if (failed)
        fail_msg("%zu GroupNorm host-loop runs mismatched (the FAILED CASE lines above)", failed);
}

/* Groups whose squares overflow float32 (|x| about 1e20), in both layouts and both kinds of
 * NCHW units (a group of one unit; of several, in the forward beyond GN_FWD_FUSE_ELEMS):
 * redone scaled, they match the reference. */
static void test_group_overflow(void **state)
{
    (void)state;
    require_cpu();
    const tu_data big = {1e20, 3e19, -2e19, 1e19};
    static const gshape big_groups[] = {{2, 6, 3, 50, CLNORM_NCHW, 0},
                                        {2, 6, 3, 50, CLNORM_NHWC, 0},
                                        {1, 600, 3, 100, CLNORM_NCHW, 0},
                                        {1, 1200, 2, 120, CLNORM_NCHW, 0}};
    for (size_t s = 0; s < TU_COUNT(big_groups); s++) {
        clnorm_desc d;
        assert_true(group_desc(&d, CLNORM_F32, CLNORM_SAVE_STATS, &big_groups[s]));
        clnorm_plan *plan = tu_plan_if(g_ctx, &d, CLNORM_STRATEGY_AUTO);
        assert_non_null(plan);
        assert_int_equal(clnorm_plan_uses_host_loop(plan, CLNORM_FORWARD), 1);
        for (int k = 0; k < 2; k++) {
            tu_problem p;
            tu_problem_make(&p, &d, dirs[k], k ? NO_STATS : TU_ALL_OPTIONAL,
                            880000 + 10 * s + (uint64_t)k, &big);
            const tu_launch l = tu_launch_offsets();
            tu_problem_run_host(g_ctx, &p, plan, &l, 0, NULL);
            tu_problem_free(&p);
        }
        clnorm_plan_free(plan);
    }
}

/* The row backward reads a sample's 1 + scale only when a scale is given (the modulated
 * path); without one it skips that factor (row_norm_host_body.h: dy * 1 is dy). So a scale
 * of zeros must give the same dx, dgamma and dbeta, bit for bit, as no modulation at all:
 * LayerNorm and RMSNorm, float32 and float16, the statistics recomputed, one thread and three
 * (each with its chunks of rows). One sample: the parameter gradients' partials go into
 * double at each sample's end, so samples of fewer rows than HROWS round dgamma otherwise. */
static void test_unit_scale_same_bits(void **state)
{
    (void)state;
    require_cpu();
    enum { R = 40, C = 300, B = 1 };
    static const unsigned widths[] = {1, 3};
    static const clnorm_kind kinds[] = {CLNORM_LAYER, CLNORM_RMS};
    static const clnorm_dtype types[] = {CLNORM_F32, CLNORM_F16};
    clnorm_ctx *ctx[2];
    thread_contexts(widths, 2, ctx);
    /* x and dy as float, then x, dy and the two dx in the storage type: R * C floats each */
    float *mem = malloc(6 * R * C * sizeof *mem);
    assert_non_null(mem);
    float *xf = mem, *dyf = mem + R * C;
    void *x = mem + 2 * R * C, *dy = mem + 3 * R * C;
    void *dx[2] = {mem + 4 * R * C, mem + 5 * R * C};
    float g[C], bt[C], dg[2][C], db[2][C], zeros[B * C], dsh[B * C];
    for (size_t i = 0; i < R * C; i++) {
        xf[i] = (float)((i * 7919u) % 1000u) / 100.0f - 4.0f;
        dyf[i] = (float)((i * 104729u) % 997u) / 500.0f - 1.0f;
    }
    for (size_t c = 0; c < C; c++) {
        g[c] = 0.5f + (float)c / (float)C;
        bt[c] = (float)c / 100.0f;
    }
    for (size_t i = 0; i < B * C; i++)
        zeros[i] = 0.0f;
    for (size_t w = 0; w < 2; w++)
        for (size_t k = 0; k < TU_COUNT(kinds); k++)
            for (size_t t = 0; t < TU_COUNT(types); t++) {
                const clnorm_dtype dt = types[t];
                const size_t es = clnorm_elem_size(dt);
                for (size_t i = 0; i < R * C; i++) {
                    if (dt == CLNORM_F16) {
                        ((unsigned short *)x)[i] = clnorm_f32_to_f16(xf[i]);
                        ((unsigned short *)dy)[i] = clnorm_f32_to_f16(dyf[i]);
                    } else {
                        ((float *)x)[i] = xf[i];
                        ((float *)dy)[i] = dyf[i];
                    }
                }
                for (int m = 0; m < 2; m++) {
                    clnorm_desc d;
                    clnorm_desc_init(&d, kinds[k], R, C);
                    d.dtype = dt;
                    d.flags = CLNORM_WITH_BACKWARD | (m ? CLNORM_SCALE | CLNORM_SHIFT : 0);
                    d.samples = m ? B : 0;
                    clnorm_plan *plan = tu_plan_if(ctx[w], &d, CLNORM_STRATEGY_AUTO);
                    assert_non_null(plan);
                    assert_int_equal(clnorm_plan_uses_host_loop(plan, CLNORM_BACKWARD), 1);
                    clnorm_host_arg a[9] = {{CLNORM_ARG_X, x},        {CLNORM_ARG_DY, dy},
                                            {CLNORM_ARG_GAMMA, g},    {CLNORM_ARG_BETA, bt},
                                            {CLNORM_ARG_DX, dx[m]},   {CLNORM_ARG_DGAMMA, dg[m]},
                                            {CLNORM_ARG_DBETA, db[m]}, {CLNORM_ARG_SCALE, zeros},
                                            {CLNORM_ARG_DSHIFT, dsh}};
                    /* the plain backward has no beta slot (no SiLU, no dscale) */
                    clnorm_host_arg plain[6] = {a[0], a[1], a[2], a[4], a[5], a[6]};
                    assert_int_equal(m ? clnorm_execute_host(plan, CLNORM_BACKWARD, a, 9)
                                       : clnorm_execute_host(plan, CLNORM_BACKWARD, plain, 6),
                                     CLNORM_OK);
                    clnorm_plan_free(plan);
                }
                assert_memory_equal(dx[0], dx[1], R * C * es);
                assert_memory_equal(dg[0], dg[1], sizeof dg[0]);
                assert_memory_equal(db[0], db[1], sizeof db[0]);
            }
    for (size_t w = 0; w < 2; w++)
        clnorm_free(ctx[w]);
    free(mem);
}

/* Forward calls whose float32 y is large enough for the streaming stores (4 MiB): dense and
 * strided rows, from the offsets of tu_launch_offsets (so y's rows start off the stores'
 * 32-byte boundary) and in place. */
static void test_large_forward(void **state)
{
    (void)state;
    require_cpu();
    static const shape big[] = {{1024, 1024, 0, 4}, {1100, 1000, 1003, 11}};
    static const unsigned flags[] = {CLNORM_SAVE_STATS, CLNORM_SCALE | CLNORM_SHIFT};
    size_t runs = 0;
    for (size_t op = 0; op < clnorm_op_count(); op++) {
        if (!op_has_loop(op))
            continue;
        for (size_t f = 0; f < TU_COUNT(flags); f++)
            for (size_t s = 0; s < TU_COUNT(big); s++) {
                clnorm_desc d;
                if (!shape_desc(&d, op, CLNORM_F32, flags[f], &big[s]))
                    continue;
                clnorm_plan *plan = tu_plan_if(g_ctx, &d, CLNORM_STRATEGY_AUTO);
                assert_non_null(plan);
                assert_int_equal(clnorm_plan_uses_host_loop(plan, CLNORM_FORWARD), 1);
                tu_problem p;
                tu_problem_make(&p, &d, CLNORM_FORWARD, TU_ALL_OPTIONAL,
                                900000 + 100 * op + 10 * f + s, NULL);
                const tu_launch l = tu_launch_offsets();
                tu_problem_run_host(g_ctx, &p, plan, &l, 0, NULL);
                tu_launch li = tu_launch_offsets();
                tu_launch_in_place(&li, CLNORM_ARG_Y, CLNORM_ARG_X);
                tu_problem_run_host(g_ctx, &p, plan, &li, 0, NULL);
                runs += 2;
                tu_problem_free(&p);
                clnorm_plan_free(plan);
            }
    }
    assert_true(runs >= 8);
}

/* GroupNorm's float32 forward of at least 4 MiB, whose y goes out through streaming stores:
 * NCHW with each chunk's next unit prefetched (group_norm_host_body.h, HN(nchw_apply_run)):
 * whole groups several to a chunk, small groups of 1x1 (HN(small_groups)), groups of several
 * units (beyond GN_FWD_FUSE_ELEMS, the apply a phase of its own), strided samples of an odd
 * spatial size, and the SiLU at exactly 4 MiB (CLNORM_HOST_BYTES: its default is 1 MiB, below
 * the streaming stores' 4 MiB); NHWC single samples, a unit's
 * rows staged in blocks (HN(nhwc_apply)): 320 channels, and 1000 (a row a block). Against
 * the reference from offset pointers (y off the stores' 32-byte boundary) and in place, and
 * the same bits on 1 and 3 threads (the backward's too). */
static void test_group_large_forward(void **state)
{
    (void)state;
    require_cpu();
    static const gshape big[] = {
        {8, 320, 32, 420, CLNORM_NCHW, 0},   {1024, 1024, 256, 1, CLNORM_NCHW, 0},
        {1, 1100, 10, 1000, CLNORM_NCHW, 0}, {5, 300, 30, 701, CLNORM_NCHW, 300 * 701 + 3},
        {1, 320, 32, 4096, CLNORM_NHWC, 0},  {1, 1000, 10, 1100, CLNORM_NHWC, 0},
        {1, 1024, 32, 1024, CLNORM_NCHW, 0},
    };
    static const unsigned widths[] = {1, 3};
    clnorm_ctx *ctx[TU_COUNT(widths)];
    thread_contexts(widths, TU_COUNT(widths), ctx);
    size_t runs = 0, failed = 0;
    for (size_t s = 0; s < TU_COUNT(big); s++) {
        clnorm_desc d;
        const unsigned flags = s + 1 == TU_COUNT(big) ? CLNORM_SILU | CLNORM_SAVE_STATS
                                                       : CLNORM_SAVE_STATS;
        assert_true(group_desc(&d, CLNORM_F32, flags, &big[s]));
        assert_true(d.rows * d.cols * d.spatial * sizeof(float) >= ((size_t)4 << 20));
        if (flags & CLNORM_SILU)
            setenv("CLNORM_HOST_BYTES", "4194304", 1);
        clnorm_plan *plan = tu_plan_if(g_ctx, &d, CLNORM_STRATEGY_AUTO);
        assert_non_null(plan);
        assert_int_equal(clnorm_plan_uses_host_loop(plan, CLNORM_FORWARD), 1);
        tu_problem p;
        tu_problem_make(&p, &d, CLNORM_FORWARD, TU_ALL_OPTIONAL, 890000 + (uint64_t)s, NULL);
        const tu_launch l = tu_launch_offsets();
        tu_problem_run_host(g_ctx, &p, plan, &l, 0, NULL);
        tu_launch li = tu_launch_offsets();
        tu_launch_in_place(&li, CLNORM_ARG_Y, CLNORM_ARG_X);
        tu_problem_run_host(g_ctx, &p, plan, &li, 0, NULL);
        tu_problem_free(&p);
        clnorm_plan_free(plan);
        setenv("CLNORM_HOST_BACKWARD_BYTES", "16777216", 1); /* the SiLU's backward too */
        same_bits_across(ctx, widths, TU_COUNT(widths), &d, 891000 + 10 * (uint64_t)s,
                         TU_ALL_OPTIONAL, &runs, &failed);
        unsetenv("CLNORM_HOST_BACKWARD_BYTES");
        unsetenv("CLNORM_HOST_BYTES");
    }
    for (size_t w = 0; w < TU_COUNT(widths); w++)
        clnorm_free(ctx[w]);
    assert_true(runs == 2 * TU_COUNT(widths) * TU_COUNT(big)); /* both directions, every width */
    if (failed)
        fail_msg("%zu outputs depended on the number of threads", failed);
}

/* The float `steps` representable values above x: nextafterf(x, +Inf) `steps` times, counting
 * -0.0 and +0.0 as one value as nextafterf does (it steps from -0.0 to the least subnormal),
 * through the bits read as a signed order (397 calls of libm's nextafterf per point took this
 * test 10 s). */
static float floats_above(float x, int32_t steps)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    int64_t key = (u & 0x80000000u) ? -(int64_t)(u & 0x7fffffffu) : (int64_t)u;
    key += steps;
    u = key < 0 ? 0x80000000u | (uint32_t)-key : (uint32_t)key;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* The exponential of GroupNorm's SiLU (host_simd.h): within 1.5 float32 ulps of e^x (as a
 * double) over [-87, 88], every 397th float (more than five million); clamped past
 * both ends (e^x stays a normal float, 0 < e^-100 < 1e-37, e^100 > 1e38); NaN stays NaN. */
static void test_silu_exp(void **state)
{
    (void)state;
    double worst = 0;
    size_t n = 0;
    for (float x = -87.0f; x <= 88.0f; n++) {
        const double want = exp((double)x), got = clnorm_host_expf(x);
        const double ulp = ldexp(1.0, ilogb(want) - 23);
        const double err = fabs(got - want) / ulp;
        if (err > worst)
            worst = err;
        if (!(err <= 1.5))
            fail_msg("clnorm_host_expf(%.9g) = %.9g, e^x = %.9g: %.2f ulps", (double)x, got, want,
                     err);
        x = floats_above(x, 397); /* every 397th float */
    }
    print_message("clnorm_host_expf: %zu points, worst %.3f ulps\n", n, worst);
    assert_true(n > 1000000);
    assert_true(clnorm_host_expf(-100.0f) > 0.0f && clnorm_host_expf(-100.0f) < 1e-37f);
    assert_true(clnorm_host_expf(-INFINITY) > 0.0f);
    assert_true(clnorm_host_expf(100.0f) > 1e38f && isfinite(clnorm_host_expf(INFINITY)));
    assert_true(isnan(clnorm_host_expf(NAN)));
    assert_true(clnorm_host_expf(0.0f) == 1.0f && clnorm_host_expf(-0.0f) == 1.0f);
}

/* A bad CLNORM_HOST_THREADS or CLNORM_HOST_SPIN_US: the context is made, and its plans are
 * refused with a message naming the variable. */
static void test_thread_env_errors(void **state)
{
    (void)state;
    require_cpu();
    static const char *const cases[][2] = {
        {"CLNORM_HOST_THREADS", "0"},      {"CLNORM_HOST_THREADS", "two"},
        {"CLNORM_HOST_THREADS", "-2"},     {"CLNORM_HOST_THREADS", "100000"},
        {"CLNORM_HOST_SPIN_US", "1e3"},    {"CLNORM_HOST_SPIN_US", "-1"},
        {"CLNORM_HOST_SPIN_US", "99999999"},
    };
    for (size_t i = 0; i < TU_COUNT(cases); i++) {
        setenv(cases[i][0], cases[i][1], 1);
        clnorm_ctx *ctx = tu_context("host loop env");
        unsetenv(cases[i][0]);
        const clnorm_desc d = small_desc(0, 4, 64);
        clnorm_plan *plan = NULL;
        assert_int_equal(clnorm_plan_create(ctx, &d, &plan), CLNORM_INVALID_ARGUMENT);
        assert_null(plan);
        assert_non_null(strstr(clnorm_last_error(ctx), cases[i][0]));
        clnorm_free(ctx);
    }
}

static int group_setup(void **state)
{
    (void)state;
    unsetenv("CLNORM_HOST_BYTES"); /* the suite sets them itself where it means to */
    unsetenv("CLNORM_HOST_BACKWARD_BYTES");
    g_ctx = tu_context("host loop");
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
        cmocka_unit_test(test_policy),
        cmocka_unit_test(test_sweep),
        cmocka_unit_test(test_overflow),
        cmocka_unit_test(test_wide_rows),
        cmocka_unit_test(test_saved_stats_recomputed),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_unit_scale_same_bits),
        cmocka_unit_test(test_group_sweep),
        cmocka_unit_test(test_group_overflow),
        cmocka_unit_test(test_large_forward),
        cmocka_unit_test(test_group_large_forward),
        cmocka_unit_test(test_thread_env_errors),
        cmocka_unit_test(test_silu_exp),
    };
    return cmocka_run_group_tests_name("host loop", tests, group_setup, group_teardown);
}
