/*
 * golden_cases.c - see golden_cases.h.
 */
#include "golden_cases.h"

#include "npy.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS CLNORM_ARG_SLOT_COUNT

const golden_case golden_cases[] = {
    {"seed_example_2x5", CLNORM_LAYER, 1, 1e-5, 1, 1, 0, 0, 0, CLNORM_NCHW, 0, {0}},
    {"ln_3x4x8_last2", CLNORM_LAYER, 2, 1e-5, 1, 1, 0, 0, 0, CLNORM_NCHW, 0, {0}},
    {"ln_16x100_eps1e-3", CLNORM_LAYER, 1, 1e-3, 1, 1, 0, 0, 0, CLNORM_NCHW, 0, {0}},
    {"ln_8x257_noaffine", CLNORM_LAYER, 1, 1e-5, 0, 0, 0, 0, 0, CLNORM_NCHW, 0, {0}},
    {"ln_5x33_gamma_only", CLNORM_LAYER, 1, 1e-5, 1, 0, 0, 0, 0, CLNORM_NCHW, 0, {0}},
    {"ln_4x1_cols1", CLNORM_LAYER, 1, 1e-5, 1, 1, 0, 0, 0, CLNORM_NCHW, 0, {0}},
    {"ln_2x3000_mean1e4", CLNORM_LAYER, 1, 1e-5, 1, 1, 0, 0, 0, CLNORM_NCHW, 0, {0}},
    {"rms_6x64", CLNORM_RMS, 1, 1e-6, 1, 0, 0, 0, 0, CLNORM_NCHW, 0, {0}},
    {"rms_3x2x10_noaffine_last2", CLNORM_RMS, 2, 1e-5, 0, 0, 0, 0, 0, CLNORM_NCHW, 0, {0}},
    {"add_ln_4x96", CLNORM_ADD_LAYER, 1, 1e-5, 1, 1, 1, 0, 0, CLNORM_NCHW, 0, {0}},
    {"add_ln_6x50_noaffine", CLNORM_ADD_LAYER, 1, 1e-5, 0, 0, 0, 0, 0, CLNORM_NCHW, 0, {0}},
    {"add_rms_5x64", CLNORM_ADD_RMS, 1, 1e-6, 1, 0, 1, 0, 0, CLNORM_NCHW, 0, {0}},
    {"add_rms_3x33_noaffine", CLNORM_ADD_RMS, 1, 1e-5, 0, 0, 0, 0, 0, CLNORM_NCHW, 0, {0}},
    {"add_rms_4x48_affine", CLNORM_ADD_RMS, 1, 1e-5, 1, 1, 1, 0, 0, CLNORM_NCHW, 0, {0}},
    {"add_ln_2x3000_offset1e4", CLNORM_ADD_LAYER, 1, 1e-5, 1, 1, 1, 0, 0, CLNORM_NCHW, 0, {0}},
    {"add_ln_2x3x40_last2_strided", CLNORM_ADD_LAYER, 2, 1e-5, 1, 1, 1, 5, 0, CLNORM_NCHW, 0, {0}},
    /* GroupNorm: name, kind, -, eps, gamma, beta, -, row_pad, groups, layout, silu */
    {"gn_2x6x4x5_g3", CLNORM_GROUP, 0, 1e-5, 1, 1, 0, 0, 3, CLNORM_NCHW, 0, {0}},
    {"gn_2x6x4x5_g3_nhwc", CLNORM_GROUP, 0, 1e-5, 1, 1, 0, 0, 3, CLNORM_NHWC, 0, {0}},
    {"gn_2x6x4x5_g1", CLNORM_GROUP, 0, 1e-5, 1, 1, 0, 0, 1, CLNORM_NCHW, 0, {0}},
    {"gn_3x4x3x5_g4_instance", CLNORM_GROUP, 0, 1e-5, 1, 1, 0, 0, 4, CLNORM_NCHW, 0, {0}},
    {"gn_3x4x3x5_g4_instance_nhwc", CLNORM_GROUP, 0, 1e-5, 1, 1, 0, 0, 4, CLNORM_NHWC, 0, {0}},
    {"gn_2x4x3x4x5_g2_3d", CLNORM_GROUP, 0, 1e-5, 1, 1, 0, 0, 2, CLNORM_NCHW, 0, {0}},
    {"gn_2x4x3x4x5_g2_3d_nhwc", CLNORM_GROUP, 0, 1e-5, 1, 1, 0, 0, 2, CLNORM_NHWC, 0, {0}},
    {"gn_3x8_g4_nospatial", CLNORM_GROUP, 0, 1e-5, 1, 1, 0, 0, 4, CLNORM_NCHW, 0, {0}},
    {"gn_2x6x5x5_g2_noaffine_strided", CLNORM_GROUP, 0, 1e-5, 0, 0, 0, 7, 2, CLNORM_NCHW, 0, {0}},
    {"gn_2x6x5x5_g2_noaffine_nhwc", CLNORM_GROUP, 0, 1e-5, 0, 0, 0, 0, 2, CLNORM_NHWC, 0, {0}},
    {"gn_2x8x4x4_g4_silu", CLNORM_GROUP, 0, 1e-5, 1, 1, 0, 0, 4, CLNORM_NCHW, 1, {0}},
    {"gn_2x8x4x4_g4_silu_nhwc", CLNORM_GROUP, 0, 1e-5, 1, 1, 0, 0, 4, CLNORM_NHWC, 1, {0}},
    {"gn_2x8x4x4_g2_silu_noaffine", CLNORM_GROUP, 0, 1e-5, 0, 0, 0, 0, 2, CLNORM_NCHW, 1, {0}},
    {"gn_2x8x4x4_g2_silu_noaffine_nhwc", CLNORM_GROUP, 0, 1e-5, 0, 0, 0, 0, 2, CLNORM_NHWC, 1, {0}},
    {"gn_2x6x3x3_g3_eps1e-2", CLNORM_GROUP, 0, 1e-2, 1, 1, 0, 0, 3, CLNORM_NCHW, 0, {0}},
    {"gn_2x6x8x8_g3_mean1e3", CLNORM_GROUP, 0, 1e-5, 1, 1, 0, 0, 3, CLNORM_NCHW, 0, {0}},
    {"gn_2x6x8x8_g3_mean1e3_nhwc", CLNORM_GROUP, 0, 1e-5, 1, 1, 0, 0, 3, CLNORM_NHWC, 0, {0}},
    /* GroupNorm with a per-sample modulation (scale-shift norm): ..., silu, {samples, scale,
     * shift, -} */
    {"gn_mod_2x8x4x4_g4_silu", CLNORM_GROUP, 0, 1e-5, 1, 1, 0, 0, 4, CLNORM_NCHW, 1,
     {2, 1, 1, 0}},
    {"gn_mod_2x8x4x4_g4_silu_nhwc", CLNORM_GROUP, 0, 1e-5, 1, 1, 0, 0, 4, CLNORM_NHWC, 1,
     {2, 1, 1, 0}},
    {"gn_mod_3x6x3x5_g3_scale_only_noaffine", CLNORM_GROUP, 0, 1e-5, 0, 0, 0, 0, 3, CLNORM_NCHW,
     0, {3, 1, 0, 0}},
    {"gn_mod_4x6x3x3_g2_b2_silu_nhwc", CLNORM_GROUP, 0, 1e-5, 1, 1, 0, 0, 2, CLNORM_NHWC, 1,
     {2, 1, 1, 0}},
    {"gn_mod_2x4x5x5_g2_shift_only_silu_b1", CLNORM_GROUP, 0, 1e-5, 1, 0, 0, 0, 2, CLNORM_NCHW,
     1, {1, 0, 1, 0}},
    /* Row kinds with a modulation and / or precomputed statistics: name, kind, normalized
     * dims, eps, gamma, beta, dsum, row_pad, -, -, -, {samples, scale, shift, global_stats} */
    {"mod_ln_2x3x40", CLNORM_LAYER, 1, 1e-5, 1, 1, 0, 0, 0, CLNORM_NCHW, 0, {2, 1, 1, 0}},
    {"mod_rms_3x5x64", CLNORM_RMS, 1, 1e-6, 1, 0, 0, 0, 0, CLNORM_NCHW, 0, {3, 1, 1, 0}},
    {"mod_ln_3x5x64_scale_only", CLNORM_LAYER, 1, 1e-5, 1, 1, 0, 0, 0, CLNORM_NCHW, 0,
     {3, 1, 0, 0}},
    {"mod_ln_2x4x48_shift_only", CLNORM_LAYER, 1, 1e-5, 1, 1, 0, 0, 0, CLNORM_NCHW, 0,
     {2, 0, 1, 0}},
    {"mod_rms_2x3x40_scale_only_noaffine", CLNORM_RMS, 1, 1e-5, 0, 0, 0, 0, 0, CLNORM_NCHW, 0,
     {2, 1, 0, 0}},
    {"mod_ln_4x6x32_noaffine", CLNORM_LAYER, 1, 1e-5, 0, 0, 0, 0, 0, CLNORM_NCHW, 0,
     {4, 1, 1, 0}},
    {"mod_ln_4x24_t1_gamma_only", CLNORM_LAYER, 1, 1e-5, 1, 0, 0, 0, 0, CLNORM_NCHW, 0,
     {4, 1, 1, 0}},
    {"mod_add_ln_2x3x40", CLNORM_ADD_LAYER, 1, 1e-5, 1, 1, 1, 0, 0, CLNORM_NCHW, 0,
     {2, 1, 1, 0}},
    {"mod_add_rms_3x4x64_scale_only", CLNORM_ADD_RMS, 1, 1e-6, 1, 0, 0, 0, 0, CLNORM_NCHW, 0,
     {3, 1, 0, 0}},
    {"mod_ln_2x3x2x20_last2_strided", CLNORM_LAYER, 2, 1e-5, 1, 1, 0, 5, 0, CLNORM_NCHW, 0,
     {2, 1, 1, 0}},
    {"gs_ln_6x48", CLNORM_LAYER, 1, 1e-5, 1, 1, 0, 0, 0, CLNORM_NCHW, 0, {0, 0, 0, 1}},
    {"gs_rms_5x64", CLNORM_RMS, 1, 1e-6, 1, 0, 0, 0, 0, CLNORM_NCHW, 0, {0, 0, 0, 1}},
    {"gs_ln_3x4x32_noaffine", CLNORM_LAYER, 1, 1e-5, 0, 0, 0, 0, 0, CLNORM_NCHW, 0,
     {0, 0, 0, 1}},
    {"gs_rms_2x3x2x16_last2_affine", CLNORM_RMS, 2, 1e-5, 1, 1, 0, 0, 0, CLNORM_NCHW, 0,
     {0, 0, 0, 1}},
    {"gs_mod_ln_2x3x40", CLNORM_LAYER, 1, 1e-5, 1, 1, 0, 0, 0, CLNORM_NCHW, 0, {2, 1, 1, 1}},
    /* GroupNorm with precomputed statistics, (N, G) float32 inputs: ..., silu, {samples,
     * scale, shift, global_stats}; the eval_instance case is torch's eval-mode InstanceNorm */
    {"gn_gs_2x6x4x4_g3", CLNORM_GROUP, 0, 1e-5, 1, 1, 0, 0, 3, CLNORM_NCHW, 0, {0, 0, 0, 1}},
    {"gn_gs_2x6x4x4_g3_silu_nhwc", CLNORM_GROUP, 0, 1e-5, 1, 0, 0, 0, 3, CLNORM_NHWC, 1,
     {0, 0, 0, 1}},
    {"gn_gs_3x4x5x5_g4_instance_eval", CLNORM_GROUP, 0, 1e-3, 1, 1, 0, 0, 4, CLNORM_NCHW, 0,
     {0, 0, 0, 1}},
    {"gn_gs_mod_2x8x3x3_g4_silu_nhwc", CLNORM_GROUP, 0, 1e-5, 1, 1, 0, 0, 4, CLNORM_NHWC, 1,
     {2, 1, 1, 1}},
};
const size_t golden_case_count = sizeof golden_cases / sizeof golden_cases[0];

static int is_residual(clnorm_kind k) { return k == CLNORM_ADD_LAYER || k == CLNORM_ADD_RMS; }
static int is_layer(clnorm_kind k) { return k == CLNORM_LAYER || k == CLNORM_ADD_LAYER; }
static int has_mean(clnorm_kind k) { return is_layer(k) || k == CLNORM_GROUP; }

/* ------------------------------------------------------------------------------------------ */
/* Loading                                                                                     */

static void path_of(const golden_case *gc, const char *file, char *buf, size_t size)
{
    const char *dir = tu_golden_dir();
    if (dir == NULL)
        fail_msg("CLNORM_GOLDEN_DIR is not set");
    snprintf(buf, size, "%s/%s/%s", dir, gc->name, file);
}

/* slot.npy of the case: `count` float32 (input) or float64 (output) values, as doubles. */
static double *load(const golden_case *gc, clnorm_arg_slot s, size_t count, int output)
{
    char file[64], path[1024], err[256] = "";
    snprintf(file, sizeof file, "%s.npy", clnorm_arg_name(s));
    path_of(gc, file, path, sizeof path);
    npy_array a;
    if (npy_load(path, &a, err, sizeof err) != 0)
        fail_msg("cannot load %s: %s", path, err);
    const npy_dtype want = output ? NPY_F64 : NPY_F32;
    if (a.count != count || a.dtype != want) {
        npy_free(&a);
        fail_msg("%s: expected %zu %s values", path, count, output ? "float64" : "float32");
    }
    double *d = malloc(count * sizeof *d + 1);
    assert_non_null(d);
    for (size_t i = 0; i < count; i++)
        d[i] = output ? ((const double *)a.data)[i] : (double)((const float *)a.data)[i];
    npy_free(&a);
    return d;
}

void golden_load(const golden_case *gc, golden_data *g)
{
    memset(g, 0, sizeof *g);
    g->gc = gc;
    /* rows = product of the leading dims, cols = of the normalized ones; GroupNorm: N, C and
     * the spatial dims' product */
    char path[1024], err[256] = "";
    path_of(gc, "x.npy", path, sizeof path);
    npy_array xa;
    if (npy_load(path, &xa, err, sizeof err) != 0)
        fail_msg("cannot load %s: %s", path, err);
    g->rows = g->cols = g->spatial = g->groups = g->samples = 1;
    if (gc->kind == CLNORM_GROUP) {
        /* (N, C, *spatial), or (N, *spatial, C) channels-last */
        if (xa.ndim < 2) {
            npy_free(&xa);
            fail_msg("%s: x has fewer than 2 dims (N, C)", gc->name);
        }
        const int c_dim = gc->layout == CLNORM_NHWC ? xa.ndim - 1 : 1;
        g->rows = xa.shape[0];
        g->cols = xa.shape[c_dim];
        for (int i = 1; i < xa.ndim; i++)
            if (i != c_dim)
                g->spatial *= xa.shape[i];
        g->groups = gc->groups;
    } else {
        if (xa.ndim < gc->normalized_dims) {
            npy_free(&xa);
            fail_msg("%s: x has fewer dims than %d normalized", gc->name, gc->normalized_dims);
        }
        for (int i = 0; i < xa.ndim; i++) {
            if (i < xa.ndim - gc->normalized_dims)
                g->rows *= xa.shape[i];
            else
                g->cols *= xa.shape[i];
        }
    }
    const size_t first_dim = xa.shape[0];
    npy_free(&xa);
    const golden_cond *cond = &gc->cond;
    if (cond->samples) {
        /* a row kind's B is x's first dim, (B, T..., C...); GroupNorm's divides N, x's first
         * dim (batch entry n is sample n / (N / B)) */
        const int group = gc->kind == CLNORM_GROUP;
        if ((!group && first_dim != cond->samples) || g->rows % cond->samples != 0)
            fail_msg("%s: x's first dim (%zu) or its %zu rows are not %zu samples", gc->name,
                     first_dim, g->rows, cond->samples);
        g->samples = cond->samples;
    }
    const size_t n = golden_row_count(g), stats = g->rows * g->groups, cols = g->cols;
    const size_t mods = g->samples * cols;
    const int res = is_residual(gc->kind), global = cond->global_stats;
    /* inputs (float32) */
    g->a[CLNORM_ARG_X] = load(gc, CLNORM_ARG_X, n, 0);
    g->a[CLNORM_ARG_DY] = load(gc, CLNORM_ARG_DY, n, 0);
    if (res)
        g->a[CLNORM_ARG_RESIDUAL] = load(gc, CLNORM_ARG_RESIDUAL, n, 0);
    if (gc->dsum)
        g->a[CLNORM_ARG_DSUM] = load(gc, CLNORM_ARG_DSUM, n, 0);
    if (gc->gamma)
        g->a[CLNORM_ARG_GAMMA] = load(gc, CLNORM_ARG_GAMMA, cols, 0);
    if (gc->beta)
        g->a[CLNORM_ARG_BETA] = load(gc, CLNORM_ARG_BETA, cols, 0);
    if (cond->scale)
        g->a[CLNORM_ARG_SCALE] = load(gc, CLNORM_ARG_SCALE, mods, 0);
    if (cond->shift)
        g->a[CLNORM_ARG_SHIFT] = load(gc, CLNORM_ARG_SHIFT, mods, 0);
    /* outputs (float64); precomputed statistics are float32 inputs */
    g->a[CLNORM_ARG_Y] = load(gc, CLNORM_ARG_Y, n, 1);
    g->a[CLNORM_ARG_RSTD] = load(gc, CLNORM_ARG_RSTD, stats, !global);
    g->a[CLNORM_ARG_DX] = load(gc, CLNORM_ARG_DX, n, 1);
    if (has_mean(gc->kind))
        g->a[CLNORM_ARG_MEAN] = load(gc, CLNORM_ARG_MEAN, stats, !global);
    if (res)
        g->a[CLNORM_ARG_SUM] = load(gc, CLNORM_ARG_SUM, n, 1);
    if (gc->gamma)
        g->a[CLNORM_ARG_DGAMMA] = load(gc, CLNORM_ARG_DGAMMA, cols, 1);
    if (gc->beta)
        g->a[CLNORM_ARG_DBETA] = load(gc, CLNORM_ARG_DBETA, cols, 1);
    if (cond->scale)
        g->a[CLNORM_ARG_DSCALE] = load(gc, CLNORM_ARG_DSCALE, mods, 1);
    if (cond->shift)
        g->a[CLNORM_ARG_DSHIFT] = load(gc, CLNORM_ARG_DSHIFT, mods, 1);
}

void golden_free(golden_data *g)
{
    for (unsigned s = 0; s < SLOTS; s++)
        free(g->a[s]);
    memset(g, 0, sizeof *g);
}

size_t golden_row_count(const golden_data *g)
{
    return g->rows * g->cols * g->spatial;
}

clnorm_desc golden_desc(const golden_data *g, clnorm_dtype t, unsigned flags)
{
    const golden_case *gc = g->gc;
    clnorm_desc d;
    clnorm_desc_init(&d, gc->kind, g->rows, g->cols);
    d.dtype = t;
    d.eps = gc->eps;
    d.flags = flags | (gc->gamma ? 0u : CLNORM_NO_GAMMA) | (gc->beta ? 0u : CLNORM_NO_BETA) |
              (gc->silu ? CLNORM_SILU : 0u) | (gc->cond.scale ? CLNORM_SCALE : 0u) |
              (gc->cond.shift ? CLNORM_SHIFT : 0u);
    if (gc->cond.global_stats) /* the statistics are inputs: nothing to save */
        d.flags = (d.flags & ~(unsigned)CLNORM_SAVE_STATS) | CLNORM_USE_GLOBAL_STATS;
    if (gc->cond.samples)
        d.samples = g->samples;
    const size_t len = g->cols * g->spatial; /* of a row (a sample) */
    if (gc->kind == CLNORM_GROUP) {
        d.groups = g->groups;
        d.spatial = g->spatial;
        d.layout = gc->layout;
    }
    if (gc->row_pad) {
        /* different pads per tensor, so a stride mixed up shows */
        d.x_stride = len + gc->row_pad;
        d.y_stride = len + gc->row_pad + 1;
        if (is_residual(gc->kind)) {
            d.residual_stride = len + gc->row_pad + 2;
            d.sum_stride = len + gc->row_pad + 3;
        }
        /* scale, shift, dscale and dshift: samples apart by more than a row, as the (B, C)
         * chunks of one (B, 6C) adaLN projection are */
        if (gc->cond.samples)
            d.mod_stride = g->cols + gc->row_pad + 4;
    }
    return d;
}

int golden_strategy_applies(clnorm_ctx *ctx, const clnorm_desc *d, clnorm_strategy strategy)
{
    if (d->kind != CLNORM_GROUP || d->layout != CLNORM_NHWC || d->spatial <= 1 ||
        strategy == CLNORM_STRATEGY_AUTO || strategy == CLNORM_STRATEGY_SPLIT ||
        strategy == CLNORM_STRATEGY_WORKGROUP || strategy == CLNORM_STRATEGY_REFERENCE)
        return 1;
    /* NHWC runs its tiles (split) and a work-group per group (workgroup); the others must be
     * refused as unsupported */
    clnorm_plan *plan = NULL;
    const clnorm_status st = clnorm_plan_create_with(ctx, d, strategy, &plan);
    clnorm_plan_free(plan);
    if (st != CLNORM_UNSUPPORTED || plan != NULL)
        fail_msg("group_norm NHWC %zu x %zu x %zu on strategy %s: plan creation gave %d (%s), "
                 "expected CLNORM_UNSUPPORTED", d->rows, d->cols, d->spatial,
                 clnorm_strategy_name(strategy), st, clnorm_status_string(st));
    return 0;
}

void *golden_tensor(const golden_data *g, clnorm_arg_slot s, const clnorm_slot_info *info)
{
    const double *src = g->a[s];
    if (src == NULL)
        fail_msg("%s: the case has no %s", g->gc->name, clnorm_arg_name(s));
    void *p = tu_alloc_sentinel(info->dtype, info->extent, 0);
    for (size_t r = 0; r < info->rows; r++)
        for (size_t c = 0; c < info->cols; c++)
            clnorm_elem_store(info->dtype, p, r * info->stride + c, src[r * info->cols + c]);
    return p;
}

int golden_device_run_left_out(clnorm_ctx *ctx, const clnorm_desc *d, clnorm_strategy strategy)
{
    if (d->kind != CLNORM_GROUP || d->dtype != CLNORM_F64 || strategy == CLNORM_STRATEGY_AUTO ||
        strategy == CLNORM_STRATEGY_SPLIT || strategy == CLNORM_STRATEGY_REFERENCE)
        return 0;
    return tu_device_is_cpu(ctx);
}

/* ------------------------------------------------------------------------------------------ */
/* The manifest                                                                                */

/* The text of the JSON object that holds "name": "<name>" (from its '{' to its '}'). */
static int find_object(const char *text, const char *name, const char **start,
                       const char **end)
{
    char key[160];
    snprintf(key, sizeof key, "\"name\": \"%s\"", name);
    const char *p = strstr(text, key);
    if (p == NULL)
        return 0;
    const char *a = p, *b = p;
    while (a > text && *a != '{')
        a--;
    while (*b && *b != '}')
        b++;
    *start = a;
    *end = b;
    return 1;
}

/* The text after "key": inside [start, end), or NULL. */
static const char *field(const char *start, const char *end, const char *key)
{
    char k[64];
    snprintf(k, sizeof k, "\"%s\":", key);
    const char *p = strstr(start, k);
    if (p == NULL || p >= end)
        return NULL;
    p += strlen(k);
    while (*p == ' ')
        p++;
    return p;
}

static int field_bool(const char *start, const char *end, const char *key)
{
    const char *v = field(start, end, key);
    return v != NULL && strncmp(v, "true", 4) == 0;
}

static double field_num(const char *start, const char *end, const char *key)
{
    const char *v = field(start, end, key);
    return v != NULL ? strtod(v, NULL) : -1.0;
}

void golden_check_manifest(void)
{
    const char *dir = tu_golden_dir();
    assert_non_null(dir);
    char path[1024];
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        fail_msg("cannot open %s", path);
    static char text[1 << 17];
    const size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    if (n == sizeof text - 1)
        fail_msg("%s is larger than this check reads", path);

    size_t names = 0;
    for (const char *p = text; (p = strstr(p, "\"name\"")) != NULL; p++)
        names++;
    if (names != golden_case_count)
        fail_msg("manifest.json has %zu cases, the tests know %zu", names, golden_case_count);
    for (size_t i = 0; i < golden_case_count; i++) {
        const golden_case *gc = &golden_cases[i];
        const char *a = NULL, *b = NULL;
        if (!find_object(text, gc->name, &a, &b))
            fail_msg("%s is not in manifest.json", gc->name);
        const char *norm = field(a, b, "norm");
        const int group = gc->kind == CLNORM_GROUP;
        const char *want_norm = group                ? "\"group\""
                                : is_layer(gc->kind) ? "\"layer\""
                                                     : "\"rms\"";
        const char *layout = field(a, b, "layout");
        const char *want_layout = gc->layout == CLNORM_NHWC ? "\"nhwc\"" : "\"nchw\"";
        /* GroupNorm entries have groups, layout and silu, and no normalized_dims */
        if (group != (layout != NULL) ||
            (group && strncmp(layout, want_layout, strlen(want_layout)) != 0) ||
            field_bool(a, b, "silu") != gc->silu ||
            (size_t)fmax(0.0, field_num(a, b, "groups")) != gc->groups)
            fail_msg("%s: manifest.json and golden_cases.c disagree on its GroupNorm fields",
                     gc->name);
        if (norm == NULL || strncmp(norm, want_norm, strlen(want_norm)) != 0 ||
            field_bool(a, b, "residual") != is_residual(gc->kind) ||
            field_bool(a, b, "gamma") != gc->gamma || field_bool(a, b, "beta") != gc->beta ||
            field_bool(a, b, "dsum") != gc->dsum ||
            field_num(a, b, "normalized_dims") != (group ? -1.0 : (double)gc->normalized_dims) ||
            field_num(a, b, "eps") != gc->eps ||
            (size_t)fmax(0.0, field_num(a, b, "row_pad")) != gc->row_pad)
            fail_msg("%s: manifest.json and golden_cases.c disagree on its fields", gc->name);
        const golden_cond *cond = &gc->cond;
        if ((size_t)fmax(0.0, field_num(a, b, "samples")) != cond->samples ||
            field_bool(a, b, "scale") != cond->scale ||
            field_bool(a, b, "shift") != cond->shift ||
            field_bool(a, b, "global_stats") != cond->global_stats)
            fail_msg("%s: manifest.json and golden_cases.c disagree on its modulation or "
                     "statistics fields", gc->name);
    }
}
