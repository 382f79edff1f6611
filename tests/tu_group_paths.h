/*
 * tu_group_paths.h - the ways GroupNorm suites run one description: clnorm's choice, every
 * strategy of the layout, and plans made under settings the plan reads at creation (the host
 * loop off, NHWC's tiles instead of one item per sample, one work-group over the samples, the
 * GPU geometry on a CPU device), each setting put back as it was afterwards.
 */
#ifndef CLNORM_TU_GROUP_PATHS_H
#define CLNORM_TU_GROUP_PATHS_H

#include "tu_problem.h"

typedef struct {
    const char *name, *value;
} tu_env_kv;

/* CLNORM_HOST_BYTES=0: the kernels, never the host loop */
extern const tu_env_kv tu_no_host_loop[1];
/* CLNORM_NO_SAMPLE_ITEMS=1: NHWC's tiles on CPU devices */
extern const tu_env_kv tu_no_sample_items[1];
/* CLNORM_MAX_GROUPS=1: one work-group loops over the rows */
extern const tu_env_kv tu_one_work_group[1];
/* GroupNorm's GPU path on a CPU device (4 lanes, work-groups of 32, two along the samples),
 * as test_group_norm_gpu_geometry runs it */
extern const tu_env_kv tu_gpu_geometry[3];

/* A way of running a description: a strategy, its plan made under some settings. */
typedef struct {
    clnorm_strategy strategy;
    const tu_env_kv *env;
    size_t nenv;
} tu_run_path;

#define TU_PATH(s, e) {s, e, TU_COUNT(e)}

/* The plan of d on path rp (NULL where the strategy does not take d, or no fp64). */
clnorm_plan *tu_group_plan_on(clnorm_ctx *ctx, const clnorm_desc *d, const tu_run_path *rp);

/* The paths of a description: clnorm's choice as made by default and with the host loop off,
 * every strategy of the layout (NHWC: the tiles and a work-group per group; NCHW: the row
 * strategies), and on CPU devices the NHWC tiles without the one-item-per-sample forward and
 * with one work-group over the samples. Types other than float32 run clnorm's choice only on
 * CPU devices: each program costs PoCL 10-20 s to build there, and the strategies' code is
 * the same in every type. Returns their count (at most 8). */
size_t tu_group_paths(clnorm_ctx *ctx, const clnorm_desc *d, tu_run_path out[8]);

/* The problems p[0 .. nprob) of d on the paths rp[0 .. np), through clnorm_execute_host and
 * (via_cl) clnorm_execute on cl_mem, placed as l says. On CPU devices clnorm's choice must
 * run these calls on the host loop in both directions where x holds at most 256 KiB (within
 * every default of group_norm.c's host_bytes; *loop_plans counts those plans), and on the
 * kernels with tu_no_host_loop. Returns the mismatches. */
size_t tu_group_run_paths(clnorm_ctx *ctx, const clnorm_desc *d, const tu_run_path *rp,
                          size_t np, const tu_problem *p, size_t nprob, int via_cl,
                          const tu_launch *l, size_t *loop_plans);

#endif
