/* clnorm's backward pass through layer 1 (clnorm_backward on cl_mem, the context's queue):
 * auto and each strategy forced, at the case's dtype, plans made with CLNORM_WITH_BACKWARD.
 * One run computes dx, dgamma and dbeta (mask GRAD_X | GRAD_GAMMA | GRAD_BETA) from x and dy
 * of the set, the shared gamma and the mean/rstd a clnorm forward saved at set-up (stats.c),
 * then clFinish. A strategy the library refuses is skipped with the library's message. */
#include "bench.h"

static int run(void *state, size_t set, char *msg, size_t msg_size)
{
    bench_clnorm_state *s = state;
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

#define CLNORM_BWD_CONTENDER(suffix, strategy)                                               \
    static int create_##suffix(const bench_env *env, void **out, char *note, size_t ns,      \
                               char *msg, size_t ms)                                         \
    {                                                                                        \
        return bench_clnorm_create(env, strategy, CLNORM_WITH_BACKWARD, out, note, ns, msg,  \
                                   ms);                                                      \
    }                                                                                        \
    const bench_contender bench_clnorm_bwd_##suffix = {                                      \
        .name = "clnorm_" #suffix, .side = BENCH_DEVICE, .passes = BENCH_BWD,                \
        .create = create_##suffix, .run = run, .destroy = bench_clnorm_destroy};

CLNORM_BWD_CONTENDER(auto, CLNORM_STRATEGY_AUTO)
CLNORM_BWD_CONTENDER(row, CLNORM_STRATEGY_ROW)
CLNORM_BWD_CONTENDER(workgroup, CLNORM_STRATEGY_WORKGROUP)
CLNORM_BWD_CONTENDER(split, CLNORM_STRATEGY_SPLIT)
CLNORM_BWD_CONTENDER(subgroup, CLNORM_STRATEGY_SUBGROUP)
