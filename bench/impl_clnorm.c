/* clnorm itself through layer 1 (clnorm_execute on cl_mem, the context's queue), for every
 * op of the table in either direction: the strategy clnorm chooses (clnorm_plan_create) and
 * each strategy forced (clnorm_plan_create_with), at the case's dtype. A run passes every
 * slot the op takes (ops.c: x, y, gamma, beta and for the fused residual ops residual and
 * sum, for the modulated ops scale and shift; for a backward x, dy, the saved mean/rstd,
 * gamma, dx, dgamma, dbeta, and modulated beta, scale, dscale, dshift) from the set,
 * then clFinish. The plan is made once per case (with CLNORM_WITH_BACKWARD for a backward
 * op). A strategy the library refuses for the shape, dtype or device (e.g. subgroup on long
 * rows) is skipped with the library's message. */
#include "bench.h"

static int run(void *state, size_t set, char *msg, size_t msg_size)
{
    bench_clnorm_state *s = state;
    const bench_problem *p = s->env->p;
    clnorm_arg args[BENCH_N_SLOTS];
    size_t n = 0;
    for (int a = 0; a < BENCH_N_SLOTS; a++) {
        if (!(p->info->given & BENCH_SLOT(a)))
            continue;
        args[n].slot = (clnorm_arg_slot)a;
        bench_dev_arg(s->env->dev, set, args[n].slot, &args[n].mem, &args[n].offset);
        n++;
    }
    clnorm_status st = clnorm_execute(s->plan, p->dir, args, n, s->env->queue, 0, NULL, NULL);
    if (st != CLNORM_OK) {
        bench_clnorm_msg(s->env->ctx, st, "clnorm_execute", msg, msg_size);
        return BENCH_FAIL;
    }
    cl_int err = clFinish(s->env->queue);
    return err == CL_SUCCESS ? BENCH_OK : bench_cl_fail(err, "clFinish", msg, msg_size);
}

#define CLNORM_CONTENDER(suffix, strategy, roles)                                            \
    static int create_##suffix(const bench_env *env, void **out, char *note, size_t ns,      \
                               char *msg, size_t ms)                                         \
    {                                                                                        \
        return bench_clnorm_create(env, strategy, out, note, ns, msg, ms);                   \
    }                                                                                        \
    const bench_contender bench_clnorm_##suffix = {                                          \
        .name = "clnorm_" #suffix, .side = BENCH_DEVICE, .role = BENCH_ROLE_CLNORM | (roles), \
        .slots = BENCH_ANY_SLOT, .forms = BENCH_ANY_FORM, .create = create_##suffix,         \
        .run = run, .destroy = bench_clnorm_destroy};

CLNORM_CONTENDER(auto, CLNORM_STRATEGY_AUTO, BENCH_ROLE_AUTO)
CLNORM_CONTENDER(row, CLNORM_STRATEGY_ROW, 0)
CLNORM_CONTENDER(workgroup, CLNORM_STRATEGY_WORKGROUP, 0)
CLNORM_CONTENDER(split, CLNORM_STRATEGY_SPLIT, 0)
CLNORM_CONTENDER(subgroup, CLNORM_STRATEGY_SUBGROUP, 0)
