/* clnorm through layer 2 (clnorm_execute_host on host arrays), the call of the Python package,
 * the CLI and host applications, for every op of the table in either direction, strategy
 * auto. Below CLNORM_HOST_BYTES (backward: CLNORM_HOST_BACKWARD_BYTES) on a CPU device its
 * row ops run the host loop in the calling thread (note "host loop"); otherwise the call makes
 * buffers over the arrays (a CPU device; copies on others), launches and syncs the outputs
 * back (note "device"), whose launch is what the loop saves on small problems. Host side: its
 * own context on the run's device (--device), made per case; frac_of_copy is against the
 * multi-threaded host copy. */
#include "bench.h"

#include <stdlib.h>

typedef struct {
    const bench_env *env;
    clnorm_ctx *ctx;
    clnorm_plan *plan;
} host_state;

static void destroy(void *state)
{
    host_state *s = state;
    if (!s)
        return;
    clnorm_plan_free(s->plan);
    clnorm_free(s->ctx);
    free(s);
}

static int create(const bench_env *env, void **out, char *note, size_t note_size, char *msg,
                  size_t msg_size)
{
    host_state *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(msg, msg_size, "out of host memory");
        return BENCH_FAIL;
    }
    s->env = env;
    clnorm_status st = clnorm_create(env->opt->device, &s->ctx);
    if (st != CLNORM_OK) {
        snprintf(msg, msg_size, "clnorm_create: %s", clnorm_status_string(st));
        destroy(s);
        return BENCH_FAIL;
    }
    clnorm_desc d;
    bench_case_desc(env->p, 0, &d);
    st = clnorm_plan_create(s->ctx, &d, &s->plan);
    if (st != CLNORM_OK) {
        bench_clnorm_msg(s->ctx, st, "plan", msg, msg_size);
        destroy(s);
        return st == CLNORM_UNSUPPORTED ? BENCH_SKIP : BENCH_FAIL;
    }
    snprintf(note, note_size, "%s",
             clnorm_plan_uses_host_loop(s->plan, env->p->dir) ? "host loop" : "device");
    *out = s;
    return BENCH_OK;
}

static int run(void *state, size_t set, char *msg, size_t msg_size)
{
    host_state *s = state;
    clnorm_host_arg args[BENCH_N_SLOTS];
    const size_t n = bench_host_args(s->env, set, args);
    clnorm_status st = clnorm_execute_host(s->plan, s->env->p->dir, args, n);
    if (st != CLNORM_OK) {
        bench_clnorm_msg(s->ctx, st, "clnorm_execute_host", msg, msg_size);
        return BENCH_FAIL;
    }
    return BENCH_OK;
}

const bench_contender bench_clnorm_host = {.name = "clnorm_host", .side = BENCH_HOST,
                                           .role = BENCH_ROLE_CLNORM, .slots = BENCH_ANY_SLOT,
                                           .forms = BENCH_ANY_FORM, .create = create,
                                           .run = run, .destroy = destroy};
