/* clnorm's forward pass through layer 1 (clnorm_forward on cl_mem, the context's queue): the
 * strategy clnorm chooses (clnorm_plan_create), and each strategy forced
 * (clnorm_plan_create_with), at the case's dtype. The plan is made once per case; a run is one
 * clnorm_forward and a clFinish. A strategy the library refuses for the shape, dtype or
 * device (e.g. subgroup on long rows) is skipped with the library's message. */
#include "bench.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    const bench_env *env;
    clnorm_plan *plan;
} clnorm_state;

static int create(const bench_env *env, clnorm_strategy strategy, void **out, char *note,
                  size_t note_size, char *msg, size_t msg_size)
{
    const bench_problem *p = env->p;
    clnorm_desc d;
    clnorm_desc_init(&d, p->kind, p->rows, p->cols);
    d.dtype = p->dtype;
    d.eps = p->eps;
    clnorm_plan *plan = NULL;
    clnorm_status st = strategy == CLNORM_STRATEGY_AUTO
                           ? clnorm_plan_create(env->ctx, &d, &plan)
                           : clnorm_plan_create_with(env->ctx, &d, strategy, &plan);
    if (st != CLNORM_OK) {
        bench_clnorm_msg(env->ctx, st, "plan", msg, msg_size);
        /* A strategy that refuses this shape or device is not a failure of the run. */
        return st == CLNORM_UNSUPPORTED || st == CLNORM_INVALID_ARGUMENT ? BENCH_SKIP
                                                                          : BENCH_FAIL;
    }
    clnorm_state *s = malloc(sizeof *s);
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
    clnorm_state *s = state;
    const bench_dev_sets *d = s->env->dev;
    cl_mem x, y;
    size_t off;
    bench_dev_set(d, set, &x, &y, &off);
    clnorm_status st = clnorm_forward(s->plan, x, off, y, off, d->gamma, 0, d->beta, 0, NULL, 0,
                                      NULL, 0, s->env->queue, 0, NULL, NULL);
    if (st != CLNORM_OK) {
        bench_clnorm_msg(s->env->ctx, st, "clnorm_forward", msg, msg_size);
        return BENCH_FAIL;
    }
    cl_int err = clFinish(s->env->queue);
    return err == CL_SUCCESS ? BENCH_OK : bench_cl_fail(err, "clFinish", msg, msg_size);
}

static void destroy(void *state)
{
    clnorm_state *s = state;
    if (!s)
        return;
    clnorm_plan_free(s->plan);
    free(s);
}

#define CLNORM_CONTENDER(suffix, strategy)                                                   \
    static int create_##suffix(const bench_env *env, void **out, char *note, size_t ns,      \
                               char *msg, size_t ms)                                         \
    {                                                                                        \
        return create(env, strategy, out, note, ns, msg, ms);                                \
    }                                                                                        \
    const bench_contender bench_clnorm_##suffix = {                                          \
        .name = "clnorm_" #suffix, .side = BENCH_DEVICE, .passes = BENCH_FWD,                \
        .create = create_##suffix, .run = run, .destroy = destroy};

CLNORM_CONTENDER(auto, CLNORM_STRATEGY_AUTO)
CLNORM_CONTENDER(row, CLNORM_STRATEGY_ROW)
CLNORM_CONTENDER(workgroup, CLNORM_STRATEGY_WORKGROUP)
CLNORM_CONTENDER(split, CLNORM_STRATEGY_SPLIT)
CLNORM_CONTENDER(subgroup, CLNORM_STRATEGY_SUBGROUP)
