/* clnorm's forward pass through layer 1 (clnorm_forward on cl_mem, the context's queue): the
 * strategy clnorm chooses (clnorm_plan_create), and each strategy forced
 * (clnorm_plan_create_with), at the case's dtype. The plan is made once per case; a run is one
 * clnorm_forward and a clFinish. A strategy the library refuses for the shape, dtype or
 * device (e.g. subgroup on long rows) is skipped with the library's message. */
#include "bench.h"

static int run(void *state, size_t set, char *msg, size_t msg_size)
{
    bench_clnorm_state *s = state;
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

#define CLNORM_CONTENDER(suffix, strategy)                                                   \
    static int create_##suffix(const bench_env *env, void **out, char *note, size_t ns,      \
                               char *msg, size_t ms)                                         \
    {                                                                                        \
        return bench_clnorm_create(env, strategy, 0, out, note, ns, msg, ms);                \
    }                                                                                        \
    const bench_contender bench_clnorm_##suffix = {                                          \
        .name = "clnorm_" #suffix, .side = BENCH_DEVICE, .passes = BENCH_FWD,                \
        .create = create_##suffix, .run = run, .destroy = bench_clnorm_destroy};

CLNORM_CONTENDER(auto, CLNORM_STRATEGY_AUTO)
CLNORM_CONTENDER(row, CLNORM_STRATEGY_ROW)
CLNORM_CONTENDER(workgroup, CLNORM_STRATEGY_WORKGROUP)
CLNORM_CONTENDER(split, CLNORM_STRATEGY_SPLIT)
CLNORM_CONTENDER(subgroup, CLNORM_STRATEGY_SUBGROUP)
