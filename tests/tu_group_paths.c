/*
 * tu_group_paths.c - GroupNorm suites' ways of running a description (tu_group_paths.h).
 */
#define _POSIX_C_SOURCE 200809L /* setenv, unsetenv, strdup */
#include "tu_group_paths.h"

#include <stdlib.h>
#include <string.h>

const tu_env_kv tu_no_host_loop[1] = {{"CLNORM_HOST_BYTES", "0"}};
const tu_env_kv tu_no_sample_items[1] = {{"CLNORM_NO_SAMPLE_ITEMS", "1"}};
const tu_env_kv tu_one_work_group[1] = {{"CLNORM_MAX_GROUPS", "1"}};
const tu_env_kv tu_gpu_geometry[3] = {
    {"CLNORM_VECTOR_WIDTH", "4"}, {"CLNORM_LOCAL_SIZE", "32"}, {"CLNORM_MAX_GROUPS", "2"}};

clnorm_plan *tu_group_plan_on(clnorm_ctx *ctx, const clnorm_desc *d, const tu_run_path *rp)
{
    char *was[4] = {NULL};
    assert_true(rp->nenv <= TU_COUNT(was));
    for (size_t i = 0; i < rp->nenv; i++) {
        const char *v = getenv(rp->env[i].name);
        was[i] = v ? strdup(v) : NULL;
        setenv(rp->env[i].name, rp->env[i].value, 1);
    }
    clnorm_plan *plan = tu_plan_if(ctx, d, rp->strategy);
    for (size_t i = 0; i < rp->nenv; i++) {
        if (was[i])
            setenv(rp->env[i].name, was[i], 1);
        else
            unsetenv(rp->env[i].name);
        free(was[i]);
    }
    return plan;
}

/* Whether clnorm's choice took the host loop where it must (tu_group_run_paths). */
static void check_host_loop(clnorm_ctx *ctx, const clnorm_desc *d, const tu_run_path *rp,
                            clnorm_plan *plan, size_t *loop_plans)
{
    if (rp->strategy != CLNORM_STRATEGY_AUTO || !tu_device_is_cpu(ctx))
        return;
    const size_t bytes =
        d->rows * d->cols * (d->spatial ? d->spatial : 1) * clnorm_elem_size(d->dtype);
    const int off = rp->env == tu_no_host_loop;
    if (!off && bytes > ((size_t)256 << 10))
        return;
    for (int dir = 0; dir < 2; dir++)
        if (clnorm_plan_uses_host_loop(plan, (clnorm_direction)dir) != !off)
            fail_msg("%zux%zu:%zu x %zu (layout %d, %s, flags 0x%x): the %s %s the host loop",
                     d->rows, d->cols, d->groups, d->spatial, (int)d->layout,
                     tu_dtype_name(d->dtype), d->flags, dir ? "backward" : "forward",
                     off ? "uses" : "does not use");
    *loop_plans += !off;
}

size_t tu_group_run_paths(clnorm_ctx *ctx, const clnorm_desc *d, const tu_run_path *rp,
                          size_t np, const tu_problem *p, size_t nprob, int via_cl,
                          const tu_launch *l, size_t *loop_plans)
{
    size_t failed = 0;
    for (size_t i = 0; i < np; i++) {
        clnorm_plan *plan = tu_group_plan_on(ctx, d, &rp[i]);
        if (plan == NULL)
            continue; /* subgroup: groups too long; f64: no fp64 */
        check_host_loop(ctx, d, &rp[i], plan, loop_plans);
        for (size_t k = 0; k < nprob; k++) {
            failed += tu_problem_try_host(ctx, &p[k], plan, l, 0) != 0;
            if (via_cl)
                failed += tu_problem_try_cl(ctx, &p[k], plan, l, 0) != 0;
        }
        clnorm_plan_free(plan);
    }
    return failed;
}

size_t tu_group_paths(clnorm_ctx *ctx, const clnorm_desc *d, tu_run_path out[8])
{
    static const tu_run_path nchw[] = {
        {CLNORM_STRATEGY_ROW, NULL, 0}, {CLNORM_STRATEGY_WORKGROUP, NULL, 0},
        {CLNORM_STRATEGY_SPLIT, NULL, 0}, {CLNORM_STRATEGY_SUBGROUP, NULL, 0}};
    static const tu_run_path nhwc[] = {{CLNORM_STRATEGY_SPLIT, NULL, 0},
                                       {CLNORM_STRATEGY_WORKGROUP, NULL, 0}};
    static const tu_run_path nhwc_cpu[] = {TU_PATH(CLNORM_STRATEGY_SPLIT, tu_no_sample_items),
                                           TU_PATH(CLNORM_STRATEGY_SPLIT, tu_one_work_group)};
    const int cpu = tu_device_is_cpu(ctx), is_nhwc = d->layout == CLNORM_NHWC && d->spatial > 1;
    size_t n = 0;
    out[n++] = (tu_run_path){CLNORM_STRATEGY_AUTO, NULL, 0};
    out[n++] = (tu_run_path)TU_PATH(CLNORM_STRATEGY_AUTO, tu_no_host_loop);
    if (d->dtype != CLNORM_F32 && cpu)
        return n;
    const tu_run_path *own = is_nhwc ? nhwc : nchw;
    const size_t nown = is_nhwc ? TU_COUNT(nhwc) : TU_COUNT(nchw);
    for (size_t i = 0; i < nown; i++)
        out[n++] = own[i];
    for (size_t i = 0; is_nhwc && cpu && i < TU_COUNT(nhwc_cpu); i++)
        out[n++] = nhwc_cpu[i];
    return n;
}
