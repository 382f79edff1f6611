/* clnorm's backward pass through layer 1 (clnorm_backward on cl_mem, the context's queue):
 * auto and each strategy forced, at the case's dtype, plans made with CLNORM_WITH_BACKWARD.
 * One run computes dx, dgamma and dbeta (mask GRAD_X | GRAD_GAMMA | GRAD_BETA) from x and dy
 * of the set, the shared gamma and the mean/rstd a clnorm forward saved at set-up (stats.c),
 * then clFinish. A strategy the library refuses is skipped with the library's message. */
#include "bench.h"

#include <stdlib.h>

typedef struct {
    const bench_env *env;
    clnorm_plan *plan;
} bwd_state;

static int create(const bench_env *env, clnorm_strategy strategy, void **out, char *note,
                  size_t note_size, char *msg, size_t msg_size)
{
    const bench_problem *p = env->p;
    clnorm_desc d;
    clnorm_desc_init(&d, p->kind, p->rows, p->cols);
    d.dtype = p->dtype;
    d.eps = p->eps;
    d.flags = CLNORM_WITH_BACKWARD;
    clnorm_plan *plan = NULL;
    clnorm_status st = strategy == CLNORM_STRATEGY_AUTO
                           ? clnorm_plan_create(env->ctx, &d, &plan)
                           : clnorm_plan_create_with(env->ctx, &d, strategy, &plan);
    if (st != CLNORM_OK) {
        bench_clnorm_msg(env->ctx, st, "plan", msg, msg_size);
        /* A strategy that refuses this shape, dtype or device is not a failure of the run. */
        return st == CLNORM_UNSUPPORTED || st == CLNORM_INVALID_ARGUMENT ? BENCH_SKIP
                                                                          : BENCH_FAIL;
    }
    bwd_state *s = malloc(sizeof *s);
    if (!s) {
        clnorm_plan_free(plan);
        snprintf(msg, msg_size, "out of host memory");
        return BENCH_FAIL;
    }
    s->env = env;
    s->plan = plan;
    if (strategy == CLNORM_STRATEGY_AUTO) {
        const char *forced = getenv("CLNORM_STRATEGY");
        snprintf(note, note_size, "auto=%s%s",
                 clnorm_strategy_name(clnorm_plan_strategy(plan)),
                 forced && *forced ? " (CLNORM_STRATEGY is set)" : "");
    }
    *out = s;
    return BENCH_OK;
}

static int run(void *state, size_t set, char *msg, size_t msg_size)
{
    bwd_state *s = state;
    const bench_dev_sets *d = s->env->dev;
    cl_mem x, dx;
    size_t off;
    bench_dev_set(d, set, &x, &dx, &off);
    const unsigned mask = CLNORM_GRAD_X | CLNORM_GRAD_GAMMA | CLNORM_GRAD_BETA;
    clnorm_status st = clnorm_backward(s->plan, mask, x, off, bench_dev_dy(d, set), off, d->mean,
                                       0, d->rstd, 0, d->gamma, 0, dx, off, d->dgamma, 0,
                                       d->dbeta, 0, s->env->queue, 0, NULL, NULL);
    if (st != CLNORM_OK) {
        bench_clnorm_msg(s->env->ctx, st, "clnorm_backward", msg, msg_size);
        return BENCH_FAIL;
    }
    cl_int err = clFinish(s->env->queue);
    return err == CL_SUCCESS ? BENCH_OK : bench_cl_fail(err, "clFinish", msg, msg_size);
}

static void destroy(void *state)
{
    bwd_state *s = state;
    if (!s)
        return;
    clnorm_plan_free(s->plan);
    free(s);
}

#define CLNORM_BWD_CONTENDER(suffix, strategy)                                               \
    static int create_##suffix(const bench_env *env, void **out, char *note, size_t ns,      \
                               char *msg, size_t ms)                                         \
    {                                                                                        \
        return create(env, strategy, out, note, ns, msg, ms);                                \
    }                                                                                        \
    const bench_contender bench_clnorm_bwd_##suffix = {                                      \
        .name = "clnorm_" #suffix, .side = BENCH_DEVICE, .passes = BENCH_BWD,                \
        .create = create_##suffix, .run = run, .destroy = destroy};

CLNORM_BWD_CONTENDER(auto, CLNORM_STRATEGY_AUTO)
CLNORM_BWD_CONTENDER(row, CLNORM_STRATEGY_ROW)
CLNORM_BWD_CONTENDER(workgroup, CLNORM_STRATEGY_WORKGROUP)
CLNORM_BWD_CONTENDER(split, CLNORM_STRATEGY_SPLIT)
CLNORM_BWD_CONTENDER(subgroup, CLNORM_STRATEGY_SUBGROUP)
