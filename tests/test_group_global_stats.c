/*
 * test_group_global_stats.c - GroupNorm with precomputed statistics (CLNORM_GROUP with
 * CLNORM_USE_GLOBAL_STATS, oneDNN's use_global_stats: mean and rstd (N, G) are inputs of both
 * directions; y = (x - mean) * rstd * gamma + beta per group, then the per-sample modulation
 * and the SiLU when asked for; the backward holds them constant, dx = rstd * g):
 *   - against the CPU reference (tu_problem.h tolerances): a sweep of shapes (spatial 1x1,
 *     odd sizes, 3-D spatial, G = C, one long group) in NCHW and NHWC, SiLU on and off, with
 *     and without gamma / beta and a modulation, every problem of both directions (the
 *     forward; the backward with every gradient, with dx alone, without dx), on clnorm's
 *     choice (the host loop on CPU devices for these small calls, checked, and the kernels
 *     with CLNORM_HOST_BYTES=0) and every strategy of the layout, through clnorm_execute_host
 *     and for some cases clnorm_execute on cl_mem; the GPU geometry on the CPU device; f16,
 *     bf16 and f64 storage; strided samples, in place, empty batches;
 *   - the reference itself against an independent oracle written here: InstanceNorm in eval
 *     mode (torch's instance_norm with use_input_stats=False: running mean and variance per
 *     channel, broadcast over the batch), forward and backward, in both layouts; its backward
 *     against central finite differences of its forward with the statistics held; and with a
 *     call's own statistics given back, its forward equals the plain GroupNorm's and so do
 *     dgamma and dbeta;
 *   - the statistics are never written, by either direction (the eval-mode case);
 *   - the descriptions, slots and calls that must be refused, writing nothing.
 * The PyTorch float64 golden cases (gn_stats_*) are test_golden's and test_backward_golden's.
 */
#include "tu_group_paths.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS CLNORM_ARG_SLOT_COUNT
#define SS (CLNORM_SCALE | CLNORM_SHIFT)
#define NO_AFFINE (CLNORM_NO_GAMMA | CLNORM_NO_BETA)
#define GS CLNORM_USE_GLOBAL_STATS

static clnorm_ctx *g_ctx;

static void require_device(void)
{
    if (!tu_has_device(g_ctx))
        skip();
}

static void all_passed(size_t failed, const char *what)
{
    if (failed)
        fail_msg("%s: %zu runs mismatched (the FAILED CASE lines above)", what, failed);
}

/* N x C x hw, G groups; with a modulation B samples, scale / shift rows mod_stride apart.
 * via_cl: also through clnorm_execute on cl_mem. */
typedef struct {
    size_t n, c, g, hw, samples, mod_stride;
    unsigned flags; /* CLNORM_SCALE / _SHIFT / _NO_GAMMA / _NO_BETA / _SILU */
    int via_cl;
} gs_case;

static clnorm_desc make_desc(clnorm_dtype t, const gs_case *k, clnorm_layout layout,
                             unsigned flags)
{
    clnorm_desc d;
    clnorm_desc_init(&d, CLNORM_GROUP, k->n, k->c);
    d.dtype = t;
    d.groups = k->g;
    d.spatial = k->hw;
    d.layout = layout;
    d.samples = k->samples;
    d.mod_stride = k->mod_stride;
    d.flags = k->flags | flags | GS | CLNORM_WITH_BACKWARD;
    return d;
}

/* ------------------------------------------------------------------------------------------ */
/* Running problems                                                                            */

/* The problems of a description: the forward; the backward with every gradient, with dx
 * alone (no sums needed: its statistics are given), and without dx. */
#define NPROBLEMS 4

static void make_problems(const clnorm_desc *d, uint64_t seed, tu_problem p[NPROBLEMS])
{
    const unsigned params = TU_SLOT(CLNORM_ARG_DGAMMA) | TU_SLOT(CLNORM_ARG_DBETA) |
                            TU_SLOT(CLNORM_ARG_DSCALE) | TU_SLOT(CLNORM_ARG_DSHIFT);
    tu_problem_make(&p[0], d, CLNORM_FORWARD, TU_ALL_OPTIONAL, seed, NULL);
    tu_problem_make(&p[1], d, CLNORM_BACKWARD, TU_ALL_OPTIONAL, seed + 1, NULL);
    tu_problem_make(&p[2], d, CLNORM_BACKWARD, ~params, seed + 2, NULL);
    tu_problem_make(&p[3], d, CLNORM_BACKWARD, ~TU_SLOT(CLNORM_ARG_DX), seed + 3, NULL);
}

/* Plans of clnorm's choice that ran the host loop (group_norm_host.c) in both directions. */
static size_t g_loop_plans;

/* Every problem of d on the paths given (tu_group_run_paths). Returns the mismatches. */
static size_t run_paths(const clnorm_desc *d, const tu_run_path *rp, size_t np, uint64_t seed,
                        int via_cl, const tu_launch *l)
{
    tu_problem p[NPROBLEMS];
    make_problems(d, seed, p);
    const size_t failed =
        tu_group_run_paths(g_ctx, d, rp, np, p, NPROBLEMS, via_cl, l, &g_loop_plans);
    for (int k = 0; k < NPROBLEMS; k++)
        tu_problem_free(&p[k]);
    return failed;
}

static size_t run_all(const clnorm_desc *d, uint64_t seed, int via_cl, const tu_launch *l)
{
    tu_run_path rp[8];
    const size_t np = tu_group_paths(g_ctx, d, rp);
    return run_paths(d, rp, np, seed, via_cl, l);
}

/* ------------------------------------------------------------------------------------------ */
/* The sweep                                                                                   */

static const gs_case sweep_cases[] = {
    {2, 4, 2, 1, 0, 0, 0, 1},                   /* no spatial extent */
    {3, 6, 3, 7, 0, 0, 0, 1},                   /* odd spatial */
    {2, 12, 4, 105, 0, 0, CLNORM_NO_BETA, 0},   /* 3-D spatial 3x5x7 */
    {4, 40, 8, 33, 0, 0, NO_AFFINE, 0},         /* odd channels per group, no affine */
    {1, 64, 64, 1, 0, 0, 0, 0},                 /* G = C on 1x1 */
    {6, 64, 32, 37, 3, 80, SS, 0},              /* 2 channels per group, modulated, B = N / 2 */
    {4, 8, 2, 25, 4, 11, CLNORM_SHIFT, 1},      /* shift only, strided rows */
    {1, 32, 1, 4096, 0, 0, 0, 1},               /* one long group: 131072 elements */
};

static void test_sweep_f32(void **state)
{
    (void)state;
    require_device();
    size_t failed = 0;
    g_loop_plans = 0;
    for (int lay = 0; lay < 2; lay++)
        for (size_t i = 0; i < TU_COUNT(sweep_cases); i++)
            for (int silu = 0; silu < 2; silu++) {
                const clnorm_desc d = make_desc(CLNORM_F32, &sweep_cases[i], (clnorm_layout)lay,
                                                silu ? CLNORM_SILU : 0u);
                tu_launch l = tu_launch_offsets();
                l.explicit_queue = (int)(i & 1);
                failed += run_all(&d, 1000 * (uint64_t)lay + 10 * i + 5 * (uint64_t)silu,
                                  sweep_cases[i].via_cl, &l);
            }
    all_passed(failed, "f32 sweep");
    /* every case but the one long group, both layouts, SiLU on and off */
    if (tu_device_is_cpu(g_ctx))
        assert_true(g_loop_plans >= 4 * (TU_COUNT(sweep_cases) - 1));
}

/* GroupNorm's GPU path on the CPU device (work-groups of 32 items, 4 lanes, at most two
 * work-groups along the rows so the loops over them repeat), every strategy of the layout. */
static void test_gpu_geometry_f32(void **state)
{
    (void)state;
    require_device();
    static const gs_case cases[] = {
        {3, 6, 3, 7, 0, 0, 0, 0},
        {6, 64, 32, 37, 3, 80, SS, 0},
        {5, 40, 8, 33, 0, 0, CLNORM_NO_BETA, 0},
    };
    static const tu_run_path nchw[] = {TU_PATH(CLNORM_STRATEGY_ROW, tu_gpu_geometry),
                                       TU_PATH(CLNORM_STRATEGY_SPLIT, tu_gpu_geometry)};
    static const tu_run_path nhwc[] = {TU_PATH(CLNORM_STRATEGY_SPLIT, tu_gpu_geometry),
                                       TU_PATH(CLNORM_STRATEGY_WORKGROUP, tu_gpu_geometry)};
    size_t failed = 0;
    const tu_launch l = tu_launch_offsets();
    for (int lay = 0; lay < 2; lay++)
        for (size_t i = 0; i < TU_COUNT(cases); i++)
            for (int silu = 0; silu < 2; silu++) {
                const clnorm_desc d = make_desc(CLNORM_F32, &cases[i], (clnorm_layout)lay,
                                                silu ? CLNORM_SILU : 0u);
                const uint64_t seed = 2000 + 100 * (uint64_t)lay + 10 * i + (uint64_t)silu;
                failed += lay ? run_paths(&d, nhwc, TU_COUNT(nhwc), seed, 1, &l)
                              : run_paths(&d, nchw, TU_COUNT(nchw), seed, 1, &l);
            }
    all_passed(failed, "f32 GPU geometry");
}

/* ------------------------------------------------------------------------------------------ */
/* Other storage types                                                                         */

static const gs_case typed_cases[] = {
    {3, 6, 3, 7, 0, 0, CLNORM_SILU, 1},
    {4, 64, 8, 81, 2, 70, CLNORM_SHIFT | CLNORM_SCALE, 0},
};

static void typed(clnorm_dtype t, uint64_t seed)
{
    require_device();
    size_t failed = 0;
    const tu_launch l = tu_launch_offsets();
    g_loop_plans = 0;
    for (int lay = 0; lay < 2; lay++)
        for (size_t i = 0; i < TU_COUNT(typed_cases); i++) {
            const clnorm_desc d = make_desc(t, &typed_cases[i], (clnorm_layout)lay, 0u);
            failed += run_all(&d, seed + 10 * (uint64_t)lay + i, typed_cases[i].via_cl, &l);
        }
    all_passed(failed, tu_dtype_name(t));
    if (tu_device_is_cpu(g_ctx)) /* every case, both layouts, on the host loop */
        assert_true(g_loop_plans == 2 * TU_COUNT(typed_cases));
}

static void test_f16(void **state)
{
    (void)state;
    typed(CLNORM_F16, 3000);
}

static void test_bf16(void **state)
{
    (void)state;
    typed(CLNORM_BF16, 3100);
}

static void test_f64(void **state)
{
    (void)state;
    if (!tu_device_has_fp64(g_ctx))
        skip();
    typed(CLNORM_F64, 3200);
}

/* ------------------------------------------------------------------------------------------ */
/* Strides, in place, empty batches                                                            */

static void test_variants(void **state)
{
    (void)state;
    require_device();
    static const gs_case cases[] = {{3, 6, 3, 7, 0, 0, CLNORM_SILU, 1},
                                    {4, 8, 2, 33, 2, 0, SS, 1}};
    size_t failed = 0;
    for (int lay = 0; lay < 2; lay++)
        for (size_t i = 0; i < TU_COUNT(cases); i++) {
            const uint64_t seed = 4000 + 100 * (uint64_t)lay + 10 * i;
            /* samples apart by more than a sample: the gaps must stay untouched */
            clnorm_desc d = make_desc(CLNORM_F32, &cases[i], (clnorm_layout)lay, 0u);
            d.x_stride = cases[i].c * cases[i].hw + 5;
            d.y_stride = cases[i].c * cases[i].hw + 3;
            tu_launch l = tu_launch_offsets();
            failed += run_all(&d, seed, 1, &l);
            /* in place: y over x, dx over dy */
            d.y_stride = d.x_stride;
            tu_launch_in_place(&l, CLNORM_ARG_Y, CLNORM_ARG_X);
            tu_launch_in_place(&l, CLNORM_ARG_DX, CLNORM_ARG_DY);
            failed += run_all(&d, seed + 1, 1, &l);
            /* an empty batch: a no-op */
            gs_case e = cases[i];
            e.n = 0;
            e.samples = 0;
            const tu_launch l0 = tu_launch_offsets();
            const clnorm_desc d0 = make_desc(CLNORM_F32, &e, (clnorm_layout)lay, 0u);
            failed += run_all(&d0, seed + 2, 1, &l0);
        }
    all_passed(failed, "variants");
}

/* ------------------------------------------------------------------------------------------ */
/* The reference against an oracle of its own: InstanceNorm in eval mode                       */

/* Element (n, c, p) of a dense tensor of C channels and hw positions per sample. */
static size_t at(clnorm_layout layout, size_t C, size_t hw, size_t n, size_t c, size_t p)
{
    return layout == CLNORM_NHWC ? (n * hw + p) * C + c : (n * C + c) * hw + p;
}

/* torch.nn.functional.instance_norm(x, running_mean, running_var, weight, bias,
 * use_input_stats=False, eps=eps), written out: y = (x - rm_c) / sqrt(rv_c + eps) * w_c +
 * b_c; the running statistics are constants, so dx = dy * w_c / sqrt(rv_c + eps), dw_c = sum
 * dy * (x - rm_c) / sqrt(rv_c + eps), db_c = sum dy. clnorm takes it as GroupNorm with G = C
 * and mean[n, c] = rm_c, rstd[n, c] = 1 / sqrt(rv_c + eps) for every n. Through the
 * reference and, when there is a device, clnorm's choice; in float64 (1e-12) where the device
 * has it, else float32 (1e-5). */
static void eval_instance_norm(clnorm_layout layout, clnorm_dtype t, clnorm_ctx *ctx)
{
    const size_t N = 3, C = 5, hw = 6, len = N * C * hw;
    const double eps = 1e-3;
    tu_rng rng;
    tu_rng_seed(&rng, 6000 + (uint64_t)layout);
    double *x = malloc(len * sizeof *x), *dy = malloc(len * sizeof *dy);
    double rm[5], rv[5], w[5], b[5], mean[15], rstd[15];
    assert_non_null(x);
    assert_non_null(dy);
    for (size_t i = 0; i < len; i++) {
        x[i] = 2.0 + 1.5 * tu_rng_normal(&rng);
        dy[i] = tu_rng_normal(&rng);
    }
    for (size_t c = 0; c < C; c++) {
        rm[c] = 2.0 + 0.3 * tu_rng_normal(&rng);
        rv[c] = 1.0 + 0.5 * fabs(tu_rng_normal(&rng));
        w[c] = 1.0 + 0.5 * tu_rng_normal(&rng);
        b[c] = 0.5 * tu_rng_normal(&rng);
        for (size_t n = 0; n < N; n++) {
            mean[n * C + c] = rm[c];
            rstd[n * C + c] = 1.0 / sqrt(rv[c] + eps);
        }
    }
    /* the oracle, in float64 */
    double *ey = malloc(len * sizeof *ey), *edx = malloc(len * sizeof *edx);
    double edw[5] = {0}, edb[5] = {0};
    assert_non_null(ey);
    assert_non_null(edx);
    for (size_t n = 0; n < N; n++)
        for (size_t c = 0; c < C; c++)
            for (size_t p = 0; p < hw; p++) {
                const size_t i = at(layout, C, hw, n, c, p);
                const double xh = (x[i] - rm[c]) / sqrt(rv[c] + eps);
                ey[i] = xh * w[c] + b[c];
                edx[i] = dy[i] * w[c] / sqrt(rv[c] + eps);
                edw[c] += dy[i] * xh;
                edb[c] += dy[i];
            }
    clnorm_desc d;
    clnorm_desc_init(&d, CLNORM_GROUP, N, C);
    d.dtype = t;
    d.groups = C;
    d.spatial = hw;
    d.layout = layout;
    d.eps = eps;
    d.flags = GS | CLNORM_WITH_BACKWARD;
    /* the tensors in t (float32 data: parameters and statistics float32 too) */
    void *tx = tu_dup(CLNORM_F64, x, len), *tdy = tu_dup(CLNORM_F64, dy, len);
    void *tw = tu_dup(CLNORM_F64, w, C), *tb = tu_dup(CLNORM_F64, b, C);
    void *tm = tu_dup(CLNORM_F64, mean, N * C), *tr = tu_dup(CLNORM_F64, rstd, N * C);
    if (t != CLNORM_F64) { /* float32 data: rounded once */
        float *f[6] = {malloc(len * 4), malloc(len * 4), malloc(C * 4), malloc(C * 4),
                       malloc(N * C * 4), malloc(N * C * 4)};
        const double *src[6] = {x, dy, w, b, mean, rstd};
        const size_t cnt[6] = {len, len, C, C, N * C, N * C};
        void **dst[6] = {&tx, &tdy, &tw, &tb, &tm, &tr};
        for (int k = 0; k < 6; k++) {
            assert_non_null(f[k]);
            for (size_t i = 0; i < cnt[k]; i++)
                f[k][i] = (float)src[k][i];
            free(*dst[k]);
            *dst[k] = f[k];
        }
    }
    const double tol = t == CLNORM_F64 ? 1e-12 : 1e-5;
    const size_t es = clnorm_elem_size(t);
    void *y = calloc(len, es), *dx = calloc(len, es), *dw = calloc(C, es), *db = calloc(C, es);
    void *m0 = tu_dup(t, tm, N * C), *r0 = tu_dup(t, tr, N * C);
    const clnorm_host_arg fa[] = {{CLNORM_ARG_X, tx},    {CLNORM_ARG_Y, y},
                                  {CLNORM_ARG_GAMMA, tw}, {CLNORM_ARG_BETA, tb},
                                  {CLNORM_ARG_MEAN, tm}, {CLNORM_ARG_RSTD, tr}};
    const clnorm_host_arg ba[] = {{CLNORM_ARG_X, tx},     {CLNORM_ARG_DY, tdy},
                                  {CLNORM_ARG_GAMMA, tw},  {CLNORM_ARG_MEAN, tm},
                                  {CLNORM_ARG_RSTD, tr},  {CLNORM_ARG_DX, dx},
                                  {CLNORM_ARG_DGAMMA, dw}, {CLNORM_ARG_DBETA, db}};
    for (int way = 0; way < 2; way++) {
        clnorm_plan *plan = NULL;
        if (way == 1) {
            if (ctx == NULL || !tu_has_device(ctx))
                break;
            plan = tu_plan(ctx, &d, CLNORM_STRATEGY_AUTO);
        }
        memset(y, 0, len * es);
        memset(dx, 0, len * es);
        assert_int_equal(way ? clnorm_execute_host(plan, CLNORM_FORWARD, fa, TU_COUNT(fa))
                             : clnorm_ref_execute(&d, CLNORM_FORWARD, fa, TU_COUNT(fa)),
                         CLNORM_OK);
        assert_int_equal(way ? clnorm_execute_host(plan, CLNORM_BACKWARD, ba, TU_COUNT(ba))
                             : clnorm_ref_execute(&d, CLNORM_BACKWARD, ba, TU_COUNT(ba)),
                         CLNORM_OK);
        /* the statistics are inputs: never written */
        assert_memory_equal(tm, m0, N * C * es);
        assert_memory_equal(tr, r0, N * C * es);
        double e = 0.0;
        for (size_t i = 0; i < len; i++) {
            e = fmax(e, fabs(clnorm_elem_load(t, y, i) - ey[i]) / fmax(1.0, fabs(ey[i])));
            e = fmax(e, fabs(clnorm_elem_load(t, dx, i) - edx[i]) / fmax(1.0, fabs(edx[i])));
        }
        for (size_t c = 0; c < C; c++) {
            e = fmax(e, fabs(clnorm_elem_load(t, dw, c) - edw[c]) / fmax(1.0, fabs(edw[c])));
            e = fmax(e, fabs(clnorm_elem_load(t, db, c) - edb[c]) / fmax(1.0, fabs(edb[c])));
        }
        if (!(e < tol))
            fail_msg("eval-mode InstanceNorm, %s, %s, %s: error %.3g against the oracle",
                     layout == CLNORM_NHWC ? "nhwc" : "nchw", tu_dtype_name(t),
                     way ? "clnorm's choice" : "the reference", e);
        if (plan)
            clnorm_plan_free(plan);
    }
    void *all[] = {x, dy, ey, edx, tx, tdy, tw, tb, tm, tr, y, dx, dw, db, m0, r0};
    for (size_t k = 0; k < TU_COUNT(all); k++)
        free(all[k]);
}

static void test_eval_instance_norm(void **state)
{
    (void)state;
    for (int lay = 0; lay < 2; lay++) {
        eval_instance_norm((clnorm_layout)lay, CLNORM_F32, g_ctx);
        eval_instance_norm((clnorm_layout)lay, CLNORM_F64,
                           tu_device_has_fp64(g_ctx) ? g_ctx : NULL);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* The reference: finite differences, and its own statistics given back                       */

/* The host arguments of d in dir from a (the slots the direction takes and a gives). */
static size_t host_args(const clnorm_desc *d, clnorm_direction dir, void *const p[SLOTS],
                        clnorm_host_arg out[SLOTS])
{
    size_t n = 0;
    for (unsigned s = 0; s < SLOTS; s++) {
        clnorm_slot_info info;
        assert_int_equal(clnorm_slot_query(d, dir, (clnorm_arg_slot)s, &info), CLNORM_OK);
        if (p[s] != NULL && info.use != CLNORM_SLOT_UNUSED)
            out[n++] = (clnorm_host_arg){(clnorm_arg_slot)s, p[s]};
    }
    return n;
}

static void ref_run(const clnorm_desc *d, clnorm_direction dir, void *const p[SLOTS])
{
    clnorm_host_arg args[SLOTS];
    const size_t n = host_args(d, dir, p, args);
    assert_int_equal(clnorm_ref_execute(d, dir, args, n), CLNORM_OK);
}

/* A float64 problem: every tensor of both directions by slot, dense. */
typedef struct {
    clnorm_desc d;
    size_t len, C, ng, mods;
    void *p[SLOTS];
} f64_problem;

static double *normals(tu_rng *rng, size_t n, double off, double sc)
{
    double *p = malloc(n * sizeof *p + 1);
    assert_non_null(p);
    for (size_t i = 0; i < n; i++)
        p[i] = off + sc * tu_rng_normal(rng);
    return p;
}

static void f64_make(f64_problem *fp, const clnorm_desc *d, tu_rng *rng)
{
    memset(fp, 0, sizeof *fp);
    fp->d = *d;
    fp->C = d->cols;
    fp->len = d->rows * d->cols * d->spatial;
    fp->ng = d->rows * d->groups;
    fp->mods = (d->samples ? d->samples : 1) * d->cols;
    fp->p[CLNORM_ARG_X] = normals(rng, fp->len, 0.3, 1.0);
    fp->p[CLNORM_ARG_DY] = normals(rng, fp->len, 0.0, 1.0);
    fp->p[CLNORM_ARG_MEAN] = normals(rng, fp->ng, 0.3, 0.2);
    fp->p[CLNORM_ARG_RSTD] = normals(rng, fp->ng, 1.0, 0.1);
    if (!(d->flags & CLNORM_NO_GAMMA))
        fp->p[CLNORM_ARG_GAMMA] = normals(rng, fp->C, 1.0, 0.5);
    if (!(d->flags & CLNORM_NO_BETA))
        fp->p[CLNORM_ARG_BETA] = normals(rng, fp->C, 0.0, 0.5);
    if (d->flags & CLNORM_SCALE)
        fp->p[CLNORM_ARG_SCALE] = normals(rng, fp->mods, 0.0, 0.3);
    if (d->flags & CLNORM_SHIFT)
        fp->p[CLNORM_ARG_SHIFT] = normals(rng, fp->mods, 0.0, 0.5);
    fp->p[CLNORM_ARG_Y] = normals(rng, fp->len, 0.0, 0.0);
    fp->p[CLNORM_ARG_DX] = normals(rng, fp->len, 0.0, 0.0);
    if (!(d->flags & CLNORM_NO_GAMMA))
        fp->p[CLNORM_ARG_DGAMMA] = normals(rng, fp->C, 0.0, 0.0);
    if (!(d->flags & CLNORM_NO_BETA))
        fp->p[CLNORM_ARG_DBETA] = normals(rng, fp->C, 0.0, 0.0);
    if (d->flags & CLNORM_SCALE)
        fp->p[CLNORM_ARG_DSCALE] = normals(rng, fp->mods, 0.0, 0.0);
    if (d->flags & CLNORM_SHIFT)
        fp->p[CLNORM_ARG_DSHIFT] = normals(rng, fp->mods, 0.0, 0.0);
}

static void f64_free(f64_problem *fp)
{
    for (unsigned s = 0; s < SLOTS; s++)
        free(fp->p[s]);
}

/* L = sum(y * dy) of the reference forward. */
static double loss(f64_problem *fp)
{
    ref_run(&fp->d, CLNORM_FORWARD, fp->p);
    const double *y = fp->p[CLNORM_ARG_Y], *w = fp->p[CLNORM_ARG_DY];
    double L = 0.0;
    for (size_t i = 0; i < fp->len; i++)
        L += y[i] * w[i];
    return L;
}

/* Central differences of L in the n elements of slot s against g: max |error| / max(1,
 * max |numeric|). */
static double fd_error(f64_problem *fp, clnorm_arg_slot s, size_t n, const double *g)
{
    double *p = fp->p[s], err = 0.0, scale = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double v = p[i], h = 1e-6 * fmax(1.0, fabs(v));
        p[i] = v + h;
        const double lp = loss(fp);
        p[i] = v - h;
        const double lm = loss(fp);
        p[i] = v;
        const double num = (lp - lm) / (2 * h);
        err = fmax(err, fabs(num - g[i]));
        scale = fmax(scale, fabs(num));
    }
    return err / fmax(1.0, scale);
}

/* The reference's backward against finite differences of its forward, the statistics held
 * constant, in float64: dx, dgamma, dbeta, dscale and dshift, both layouts, with and without
 * the SiLU, the affine and a modulation. */
static void test_gradcheck(void **state)
{
    (void)state;
    static const gs_case shapes[] = {{2, 6, 3, 5, 0, 0, 0, 0}, {4, 4, 2, 3, 2, 0, 0, 0}};
    static const unsigned variants[] = {0, CLNORM_SILU, SS | CLNORM_SILU, NO_AFFINE,
                                        CLNORM_SHIFT | CLNORM_NO_BETA};
    static const clnorm_arg_slot ins[] = {CLNORM_ARG_X, CLNORM_ARG_GAMMA, CLNORM_ARG_BETA,
                                          CLNORM_ARG_SCALE, CLNORM_ARG_SHIFT};
    static const clnorm_arg_slot outs[] = {CLNORM_ARG_DX, CLNORM_ARG_DGAMMA, CLNORM_ARG_DBETA,
                                           CLNORM_ARG_DSCALE, CLNORM_ARG_DSHIFT};
    tu_rng rng;
    tu_rng_seed(&rng, 5000);
    for (int lay = 0; lay < 2; lay++)
        for (size_t si = 0; si < TU_COUNT(shapes); si++)
            for (size_t v = 0; v < TU_COUNT(variants); v++) {
                gs_case k = shapes[si];
                if (!(variants[v] & SS))
                    k.samples = 0;
                const clnorm_desc d = make_desc(CLNORM_F64, &k, (clnorm_layout)lay, variants[v]);
                f64_problem fp;
                f64_make(&fp, &d, &rng);
                ref_run(&fp.d, CLNORM_BACKWARD, fp.p);
                double e = 0.0;
                for (size_t o = 0; o < TU_COUNT(outs); o++) {
                    if (fp.p[outs[o]] == NULL)
                        continue;
                    const size_t n = o == 0 ? fp.len : o < 3 ? fp.C : fp.mods;
                    double *g = tu_dup(CLNORM_F64, fp.p[outs[o]], n);
                    e = fmax(e, fd_error(&fp, ins[o], n, g));
                    free(g);
                }
                f64_free(&fp);
                if (!(e < 1e-6))
                    fail_msg("gradcheck %s %zux%zux%zu G=%zu flags 0x%x: error %.3g",
                             lay ? "nhwc" : "nchw", k.n, k.c, k.hw, k.g, variants[v], e);
            }
}

/* Given back the statistics the plain GroupNorm saved, the forward is the plain one's y and
 * the backward its dgamma and dbeta (they take the statistics as they are either way); dx
 * differs by the statistics' own terms, rstd * (mean(g) + xhat * mean(g * xhat)). */
static void test_own_statistics(void **state)
{
    (void)state;
    tu_rng rng;
    tu_rng_seed(&rng, 7000);
    for (int lay = 0; lay < 2; lay++) {
        const gs_case k = {3, 8, 4, 5, 3, 0, SS | CLNORM_SILU, 0};
        const clnorm_desc dg = make_desc(CLNORM_F64, &k, (clnorm_layout)lay, 0u);
        clnorm_desc dp = dg;
        dp.flags = (dg.flags & ~(unsigned)GS) | CLNORM_SAVE_STATS;
        f64_problem g, p;
        f64_make(&g, &dg, &rng);
        f64_make(&p, &dp, &rng);
        for (unsigned s = 0; s < SLOTS; s++) /* the same data in both */
            if (g.p[s] != NULL && p.p[s] != NULL) {
                const size_t n = s == CLNORM_ARG_X || s == CLNORM_ARG_DY || s == CLNORM_ARG_Y ||
                                         s == CLNORM_ARG_DX
                                     ? g.len
                                 : s == CLNORM_ARG_MEAN || s == CLNORM_ARG_RSTD ? g.ng
                                 : s == CLNORM_ARG_SCALE || s == CLNORM_ARG_SHIFT ||
                                         s == CLNORM_ARG_DSCALE || s == CLNORM_ARG_DSHIFT
                                     ? g.mods
                                     : g.C;
                memcpy(p.p[s], g.p[s], n * sizeof(double));
            }
        ref_run(&p.d, CLNORM_FORWARD, p.p); /* writes p's mean and rstd */
        memcpy(g.p[CLNORM_ARG_MEAN], p.p[CLNORM_ARG_MEAN], g.ng * sizeof(double));
        memcpy(g.p[CLNORM_ARG_RSTD], p.p[CLNORM_ARG_RSTD], g.ng * sizeof(double));
        ref_run(&g.d, CLNORM_FORWARD, g.p);
        ref_run(&p.d, CLNORM_BACKWARD, p.p);
        ref_run(&g.d, CLNORM_BACKWARD, g.p);
        const double *yg = g.p[CLNORM_ARG_Y], *yp = p.p[CLNORM_ARG_Y];
        double ey = 0.0, edx = 0.0, ep = 0.0;
        for (size_t i = 0; i < g.len; i++) {
            ey = fmax(ey, fabs(yg[i] - yp[i]));
            edx = fmax(edx, fabs(((double *)g.p[CLNORM_ARG_DX])[i] -
                                 ((double *)p.p[CLNORM_ARG_DX])[i]));
        }
        static const clnorm_arg_slot same[] = {CLNORM_ARG_DGAMMA, CLNORM_ARG_DBETA,
                                               CLNORM_ARG_DSCALE, CLNORM_ARG_DSHIFT};
        for (size_t o = 0; o < TU_COUNT(same); o++) {
            const size_t n = o < 2 ? g.C : g.mods;
            for (size_t i = 0; i < n; i++)
                ep = fmax(ep, fabs(((double *)g.p[same[o]])[i] - ((double *)p.p[same[o]])[i]));
        }
        f64_free(&g);
        f64_free(&p);
        if (!(ey < 1e-12) || !(ep < 1e-10))
            fail_msg("%s: given back its own statistics, y is %.3g and the parameter gradients "
                     "%.3g from the plain GroupNorm's",
                     lay ? "nhwc" : "nchw", ey, ep);
        if (!(edx > 1e-3)) /* the statistics' terms are there in the plain dx only */
            fail_msg("%s: dx with constant statistics is the plain one's (%.3g apart)",
                     lay ? "nhwc" : "nchw", edx);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Refusals                                                                                    */

static clnorm_slot_info query(const clnorm_desc *d, clnorm_direction dir, clnorm_arg_slot s)
{
    clnorm_slot_info i;
    assert_int_equal(clnorm_slot_query(d, dir, s, &i), CLNORM_OK);
    return i;
}

static void test_slots_and_refusals(void **state)
{
    (void)state;
    const gs_case k = {4, 8, 2, 3, 0, 0, 0, 0};
    clnorm_desc d = make_desc(CLNORM_F32, &k, CLNORM_NHWC, 0u);
    assert_int_equal(clnorm_desc_check(&d, NULL, 0), CLNORM_OK);
    /* mean and rstd: (N, G) inputs of both directions */
    for (int dir = 0; dir < 2; dir++)
        for (int s = CLNORM_ARG_MEAN; s <= CLNORM_ARG_RSTD; s++) {
            const clnorm_slot_info i = query(&d, (clnorm_direction)dir, (clnorm_arg_slot)s);
            assert_int_equal(i.use, CLNORM_SLOT_REQUIRED);
            assert_false(i.is_output);
            assert_int_equal(i.extent, 4 * 2);
        }
    /* nothing to save: the statistics are the ones given */
    char msg[256];
    d.flags |= CLNORM_SAVE_STATS;
    assert_int_equal(clnorm_desc_check(&d, msg, sizeof msg), CLNORM_INVALID_ARGUMENT);
    if (!tu_mentions(msg, "exclude each other"))
        fail_msg("the refusal '%s' does not say why", msg);
    d.flags &= ~(unsigned)CLNORM_SAVE_STATS;
    /* calls without one of the statistics: refused, nothing written */
    float x[96], y[96], dy[96], dx[96], g[8], b[8], m[8], r[8];
    for (int i = 0; i < 96; i++) {
        x[i] = (float)(i % 7) - 3.0f;
        dy[i] = (float)(i % 5) - 2.0f;
        y[i] = dx[i] = 9.0f;
    }
    for (int i = 0; i < 8; i++) {
        g[i] = b[i] = r[i] = 1.0f;
        m[i] = 0.5f;
    }
    const clnorm_host_arg fwd_no_mean[] = {{CLNORM_ARG_X, x},     {CLNORM_ARG_Y, y},
                                           {CLNORM_ARG_GAMMA, g}, {CLNORM_ARG_BETA, b},
                                           {CLNORM_ARG_RSTD, r}};
    const clnorm_host_arg bwd_no_rstd[] = {{CLNORM_ARG_X, x},     {CLNORM_ARG_DY, dy},
                                           {CLNORM_ARG_GAMMA, g}, {CLNORM_ARG_MEAN, m},
                                           {CLNORM_ARG_DX, dx}};
    struct {
        clnorm_direction dir;
        const clnorm_host_arg *a;
        size_t n;
        const char *slot;
        float *out;
    } calls[] = {{CLNORM_FORWARD, fwd_no_mean, TU_COUNT(fwd_no_mean), "mean", y},
                 {CLNORM_BACKWARD, bwd_no_rstd, TU_COUNT(bwd_no_rstd), "rstd", dx}};
    clnorm_plan *plan = tu_has_device(g_ctx) ? tu_plan(g_ctx, &d, CLNORM_STRATEGY_AUTO) : NULL;
    for (size_t c = 0; c < TU_COUNT(calls); c++) {
        float before[96];
        memcpy(before, calls[c].out, sizeof before);
        assert_int_equal(clnorm_ref_execute(&d, calls[c].dir, calls[c].a, calls[c].n),
                         CLNORM_INVALID_ARGUMENT);
        assert_memory_equal(before, calls[c].out, sizeof before);
        if (plan == NULL)
            continue;
        assert_int_equal(clnorm_execute_host(plan, calls[c].dir, calls[c].a, calls[c].n),
                         CLNORM_INVALID_ARGUMENT);
        if (!tu_names(clnorm_last_error(g_ctx), calls[c].slot))
            fail_msg("the refusal '%s' does not name '%s'", clnorm_last_error(g_ctx),
                     calls[c].slot);
        assert_memory_equal(before, calls[c].out, sizeof before);
    }
    if (plan)
        clnorm_plan_free(plan);
}

static int group_setup(void **state)
{
    (void)state;
    g_ctx = tu_context("group global stats");
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    clnorm_free(g_ctx);
    g_ctx = NULL;
    return 0;
}

int main(int argc, char **argv)
{
    /* an argument: a pattern of tests to leave out */
    if (argc > 1)
        cmocka_set_skip_filter(argv[1]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slots_and_refusals),
        cmocka_unit_test(test_gradcheck),
        cmocka_unit_test(test_own_statistics),
        cmocka_unit_test(test_eval_instance_norm),
        cmocka_unit_test(test_sweep_f32),
        cmocka_unit_test(test_variants),
        cmocka_unit_test(test_gpu_geometry_f32),
        cmocka_unit_test(test_f16),
        cmocka_unit_test(test_bf16),
        cmocka_unit_test(test_f64),
    };
    return cmocka_run_group_tests_name("group global stats", tests, group_setup,
                                       group_teardown);
}
