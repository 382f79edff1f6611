/* Plans: a description validated and baked once on a context: strategy, geometry, program
 * (built or from the cache), kernels, scratch. Executing a plan never compiles. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

const char *clnorm_strategy_name(clnorm_strategy s)
{
    switch (s) {
    case CLNORM_STRATEGY_AUTO: return "auto";
    case CLNORM_STRATEGY_ROW: return "row";
    case CLNORM_STRATEGY_WORKGROUP: return "workgroup";
    case CLNORM_STRATEGY_SPLIT: return "split";
    case CLNORM_STRATEGY_REFERENCE: return "reference";
    case CLNORM_STRATEGY_SUBGROUP: return "subgroup";
    }
    return "unknown";
}

size_t clnorm_env_vector_width(void)
{
    const char *env = getenv("CLNORM_VECTOR_WIDTH");
    if (!env)
        return 0;
    if (!strcmp(env, "2") || !strcmp(env, "4") || !strcmp(env, "8") || !strcmp(env, "16"))
        return (size_t)atoi(env);
    return 0;
}

/* CLNORM_STRATEGY from the environment: AUTO when unset or "auto". */
static clnorm_status env_strategy(clnorm_ctx *ctx, clnorm_strategy *out)
{
    *out = CLNORM_STRATEGY_AUTO;
    const char *env = getenv("CLNORM_STRATEGY");
    if (!env || !*env || strcmp(env, "auto") == 0)
        return CLNORM_OK;
    for (int s = CLNORM_STRATEGY_ROW; s <= CLNORM_STRATEGY_SUBGROUP; s++) {
        if (strcmp(env, clnorm_strategy_name((clnorm_strategy)s)) == 0) {
            *out = (clnorm_strategy)s;
            return CLNORM_OK;
        }
    }
    return clnorm_fail(ctx, CLNORM_INVALID_ARGUMENT,
                       "CLNORM_STRATEGY=%s is not one of auto, row, workgroup, split, subgroup, "
                       "reference",
                       env);
}

clnorm_status clnorm_plan_create_with(clnorm_ctx *ctx, const clnorm_desc *desc,
                                      clnorm_strategy strategy, clnorm_plan **out)
{
    if (out)
        *out = NULL;
    if (!ctx)
        return CLNORM_INVALID_ARGUMENT;
    clnorm_clear_error(ctx);
    RETURN_IF(!out, ctx, CLNORM_INVALID_ARGUMENT, "plan (the output pointer) is NULL");
    char msg[256];
    clnorm_status st = clnorm_desc_check(desc, msg, sizeof msg);
    RETURN_IF(st != CLNORM_OK, ctx, st, "%s", msg);
    RETURN_IF((int)strategy < CLNORM_STRATEGY_AUTO || (int)strategy > CLNORM_STRATEGY_SUBGROUP,
              ctx, CLNORM_INVALID_ARGUMENT, "strategy %d is not a clnorm_strategy",
              (int)strategy);

    if (ctx->backend == CLNORM_BACKEND_REFERENCE) {
        RETURN_IF(strategy != CLNORM_STRATEGY_AUTO && strategy != CLNORM_STRATEGY_REFERENCE, ctx,
                  CLNORM_NO_DEVICE, "strategy %s needs an OpenCL device; this context has none",
                  clnorm_strategy_name(strategy));
        strategy = CLNORM_STRATEGY_REFERENCE; /* CLNORM_STRATEGY is for devices: ignored */
    } else if (strategy == CLNORM_STRATEGY_AUTO) {
        const char *vw = getenv("CLNORM_VECTOR_WIDTH");
        RETURN_IF(vw && *vw && !clnorm_env_vector_width(), ctx, CLNORM_INVALID_ARGUMENT,
                  "CLNORM_VECTOR_WIDTH=%s is not one of 2, 4, 8, 16", vw);
        st = env_strategy(ctx, &strategy);
        if (st != CLNORM_OK)
            return st;
        if (strategy == CLNORM_STRATEGY_AUTO)
            strategy = clnorm_choose_strategy(ctx, desc);
    }

    RETURN_IF(strategy != CLNORM_STRATEGY_REFERENCE && desc->dtype == CLNORM_F64 &&
                  !ctx->profile.has_fp64,
              ctx, CLNORM_UNSUPPORTED,
              "dtype f64 is unsupported on this device (%s): it does not report cl_khr_fp64",
              ctx->name);

    clnorm_plan *plan = calloc(1, sizeof *plan);
    RETURN_IF(!plan, ctx, CLNORM_OUT_OF_MEMORY, "out of host memory for a plan");
    plan->ctx = ctx;
    plan->desc = clnorm_desc_normalized(desc);
    plan->strategy = strategy;
    if (strategy != CLNORM_STRATEGY_REFERENCE) {
        const size_t builds = clnorm_program_builds(ctx);
        const double t0 = clnorm_now_ms();
        st = clnorm_prepare_plan(plan);
        if (st != CLNORM_OK) {
            clnorm_plan_free(plan);
            return st;
        }
        if (ctx->verbose)
            clnorm_verbose_plan(plan, clnorm_now_ms() - t0, clnorm_program_builds(ctx) > builds);
    } else if (ctx->verbose) {
        clnorm_verbose_plan(plan, 0.0, 0);
    }
    *out = plan;
    return CLNORM_OK;
}

clnorm_status clnorm_plan_create(clnorm_ctx *ctx, const clnorm_desc *desc, clnorm_plan **out)
{
    return clnorm_plan_create_with(ctx, desc, CLNORM_STRATEGY_AUTO, out);
}

void clnorm_plan_free(clnorm_plan *plan)
{
    if (!plan)
        return;
    if (plan->kernel_main)
        clReleaseKernel(plan->kernel_main);
    if (plan->kernel_stats)
        clReleaseKernel(plan->kernel_stats);
    if (plan->scratch)
        clReleaseMemObject(plan->scratch);
    if (plan->kernel_bwd_rows)
        clReleaseKernel(plan->kernel_bwd_rows);
    if (plan->kernel_bwd_params)
        clReleaseKernel(plan->kernel_bwd_params);
    if (plan->kernel_bwd_sums)
        clReleaseKernel(plan->kernel_bwd_sums);
    if (plan->kernel_bwd_stats)
        clReleaseKernel(plan->kernel_bwd_stats);
    if (plan->bwd_stats)
        clReleaseMemObject(plan->bwd_stats);
    if (plan->bwd_sums)
        clReleaseMemObject(plan->bwd_sums);
    if (plan->bwd_scratch)
        clReleaseMemObject(plan->bwd_scratch);
    free(plan);
}

clnorm_strategy clnorm_plan_strategy(const clnorm_plan *plan)
{
    return plan ? plan->strategy : CLNORM_STRATEGY_AUTO;
}

const clnorm_desc *clnorm_plan_desc(const clnorm_plan *plan)
{
    return plan ? &plan->desc : NULL;
}
