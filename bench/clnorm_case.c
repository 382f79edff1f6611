/* What the clnorm contenders (impl_clnorm.c, impl_clnorm_unfused*.c) and the CPU reference
 * (impl_ref.c) set up for a case: the descriptor, and the plan or descriptor each run uses. */
#include "bench.h"

#include <stdlib.h>
#include <string.h>

void bench_case_desc(const bench_problem *p, unsigned flags, clnorm_desc *d)
{
    clnorm_desc_init(d, p->kind, p->rows, p->cols);
    d->dtype = p->dtype;
    d->eps = p->eps;
    d->flags = flags | p->info->mod_flags | p->info->act_flags | p->info->stats_flags |
               (p->dir == CLNORM_BACKWARD ? CLNORM_WITH_BACKWARD : 0u);
    if (p->info->form == BENCH_FORM_GROUPS) {
        d->groups = p->shape.groups;
        d->spatial = bench_shape_spatial(&p->shape);
        d->layout = p->layout;
    }
    if (p->info->mod_flags)
        d->samples = p->shape.samples; /* B (N for group-mod); scale and shift dense:
                                          mod_stride cols */
}

int bench_clnorm_plan(const bench_env *env, const clnorm_desc *desc, clnorm_strategy strategy,
                      clnorm_plan **plan, char *note, size_t note_size, char *msg,
                      size_t msg_size)
{
    *plan = NULL;
    clnorm_status st = strategy == CLNORM_STRATEGY_AUTO
                           ? clnorm_plan_create(env->ctx, desc, plan)
                           : clnorm_plan_create_with(env->ctx, desc, strategy, plan);
    if (st != CLNORM_OK) {
        bench_clnorm_msg(env->ctx, st, "plan", msg, msg_size);
        /* A strategy that refuses this shape, dtype or device is not a failure of the run. */
        return st == CLNORM_UNSUPPORTED || st == CLNORM_INVALID_ARGUMENT ? BENCH_SKIP
                                                                          : BENCH_FAIL;
    }
    if (strategy == CLNORM_STRATEGY_AUTO) {
        const char *forced = getenv("CLNORM_STRATEGY");
        snprintf(note, note_size, "auto=%s%s",
                 clnorm_strategy_name(clnorm_plan_strategy(*plan)),
                 forced && *forced ? " (CLNORM_STRATEGY is set)" : "");
    }
    /* A latency plan runs on the platform's in-thread device (README, "Small problems on CPU
     * devices"): say so beside the numbers. */
    const char *runs_on = clnorm_plan_device_name(*plan);
    if (strcmp(runs_on, clnorm_device_name(env->ctx)) != 0) {
        const size_t used = strlen(note);
        if (used < note_size)
            snprintf(note + used, note_size - used, "%slatency path on %s", used ? ", " : "",
                     runs_on);
    }
    return BENCH_OK;
}

int bench_clnorm_create(const bench_env *env, clnorm_strategy strategy, void **out, char *note,
                        size_t note_size, char *msg, size_t msg_size)
{
    clnorm_desc d;
    bench_case_desc(env->p, 0, &d);
    clnorm_plan *plan;
    int rc = bench_clnorm_plan(env, &d, strategy, &plan, note, note_size, msg, msg_size);
    if (rc != BENCH_OK)
        return rc;
    bench_clnorm_state *s = malloc(sizeof *s);
    if (!s) {
        clnorm_plan_free(plan);
        snprintf(msg, msg_size, "out of host memory");
        return BENCH_FAIL;
    }
    s->env = env;
    s->plan = plan;
    *out = s;
    return BENCH_OK;
}

void bench_clnorm_destroy(void *state)
{
    bench_clnorm_state *s = state;
    if (!s)
        return;
    clnorm_plan_free(s->plan);
    free(s);
}

int bench_ref_create(const bench_env *env, void **out, char *note, size_t note_size, char *msg,
                     size_t msg_size)
{
    (void)note;
    (void)note_size;
    bench_ref_state *s = malloc(sizeof *s);
    if (!s) {
        snprintf(msg, msg_size, "out of host memory");
        return BENCH_FAIL;
    }
    s->env = env;
    bench_case_desc(env->p, 0, &s->desc);
    *out = s;
    return BENCH_OK;
}

size_t bench_host_args(const bench_env *env, size_t set, clnorm_host_arg *args)
{
    const bench_problem *p = env->p;
    size_t n = 0;
    for (int a = 0; a < BENCH_N_SLOTS; a++)
        if (p->info->given & BENCH_SLOT(a))
            args[n++] = (clnorm_host_arg){(clnorm_arg_slot)a,
                                          bench_host_arg(env->host, set, (clnorm_arg_slot)a)};
    return n;
}
