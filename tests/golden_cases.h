/*
 * golden_cases.h - the PyTorch float64 golden cases of tests/golden (README.md there; made by
 * make_golden.py), shared by test_golden (forward) and test_backward_golden: the list of
 * cases, which test_manifest holds against manifest.json field by field, and their loading.
 * Every array of a case is named after its argument slot (x.npy, residual.npy, ...), so a
 * case is loaded by slot.
 */
#ifndef CLNORM_GOLDEN_CASES_H
#define CLNORM_GOLDEN_CASES_H

#include "test_util.h"

/* The conditional options of a case (all 0 where it has none): manifest.json's samples,
 * scale, shift and global_stats (row kinds and GroupNorm). */
typedef struct {
    size_t samples;   /* B of the per-sample modulation (a row kind's: x's first dim;
                         GroupNorm's: a divisor of N, batch entry n of sample n / (N / B));
                         0: none */
    int scale, shift; /* scale.npy / shift.npy (B x cols, float32), CLNORM_SCALE / _SHIFT;
                         the backward's dscale.npy / dshift.npy go with them */
    int global_stats; /* CLNORM_USE_GLOBAL_STATS: mean.npy (LayerNorm kinds) and rstd.npy are
                         float32 inputs of both directions, not outputs */
} golden_cond;

typedef struct {
    const char *name;
    clnorm_kind kind;    /* "norm" and "residual" of the manifest */
    int normalized_dims; /* trailing dims normalized: their product is cols (0 for GroupNorm,
                            whose manifest entry has none) */
    double eps;
    int gamma, beta;
    int dsum;       /* residual cases: the loss had a dsum term (dsum.npy) */
    size_t row_pad; /* the C tests lay every row tensor out with this many extra elements per
                       row (a strided layout); 0: dense */
    /* CLNORM_GROUP only (0 otherwise): */
    size_t groups;        /* G */
    clnorm_layout layout; /* of x, y, dy, dx in the files: (N, C, *spatial) or (N, *spatial, C) */
    int silu;             /* y = silu(group_norm(x)) */
    golden_cond cond;
} golden_case;

extern const golden_case golden_cases[];
extern const size_t golden_case_count;

/* One case: every array by slot as dense doubles (inputs are float32 widened exactly,
 * outputs float64); NULL where the case has none. The row tensors hold rows x cols x spatial
 * values, the parameters cols, the statistics rows x groups, scale / shift / dscale / dshift
 * samples x cols. */
typedef struct {
    const golden_case *gc;
    size_t rows, cols; /* GroupNorm: N and C */
    size_t spatial;    /* GroupNorm: the product of the spatial dims (1 without); else 1 */
    size_t groups;     /* GroupNorm: G; else 1 */
    size_t samples;    /* modulated cases: B (each rows / B consecutive rows); else 1 */
    double *a[CLNORM_ARG_SLOT_COUNT];
} golden_data;

void golden_load(const golden_case *gc, golden_data *g);
void golden_free(golden_data *g);

/* Elements of a row tensor of the case (rows x cols x spatial). */
size_t golden_row_count(const golden_data *g);

/* The case's description in storage type t with `flags` added (NO_GAMMA / NO_BETA and SILU
 * from the case; row strides the row length + row_pad; GroupNorm's groups, spatial, layout;
 * SCALE / SHIFT with samples, and with a row_pad a mod_stride above cols; USE_GLOBAL_STATS,
 * which drops a SAVE_STATS of `flags`: the statistics are inputs there). */
clnorm_desc golden_desc(const golden_data *g, clnorm_dtype t, unsigned flags);

/* Whether a plan of the case can have `strategy`: every one except a GroupNorm in NHWC with
 * a spatial extent, which runs only on AUTO, SPLIT (its channel tiles) and WORKGROUP (a
 * work-group per group). For the others the plan creation must say CLNORM_UNSUPPORTED, which
 * this checks (the test fails otherwise). */
int golden_strategy_applies(clnorm_ctx *ctx, const clnorm_desc *d, clnorm_strategy strategy);

/* Whether the device run of a case is left out to save program builds: GroupNorm in float64
 * on a CPU device runs only on split (the reference and clnorm's choice aside). Each program
 * costs PoCL 10-20 s to build there, and the strategies' kernels are the same code in every
 * type: GroupNorm's float32 cases run them all (as test_add_norm does for its types). */
int golden_device_run_left_out(clnorm_ctx *ctx, const clnorm_desc *d, clnorm_strategy strategy);

/* Slot s of the case laid out as `info` says (type, stride; gaps hold input sentinels),
 * rounded once to the type. The caller frees it. */
void *golden_tensor(const golden_data *g, clnorm_arg_slot s, const clnorm_slot_info *info);

/* The list must name every case of manifest.json, and only those, with the same fields. */
void golden_check_manifest(void);

#endif
