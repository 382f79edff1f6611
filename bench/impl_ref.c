/* clnorm's CPU reference (clnorm_ref_execute) for every op of the table in either direction,
 * at the case's dtype: single-threaded, double accumulation, the oracle of the tests. A run
 * passes every slot the op takes from the host set. Timed with fewer repetitions on big
 * shapes (is_slow: main.c gives it a time budget). Its frac_of_copy is relative to the
 * multi-threaded host copy. */
#include "bench.h"

#include <stdlib.h>

static int run(void *state, size_t set, char *msg, size_t msg_size)
{
    bench_ref_state *s = state;
    clnorm_host_arg args[BENCH_N_SLOTS];
    const size_t n = bench_host_args(s->env, set, args);
    clnorm_status st = clnorm_ref_execute(&s->desc, s->env->p->dir, args, n);
    if (st != CLNORM_OK) {
        snprintf(msg, msg_size, "clnorm_ref_execute: %s", clnorm_status_string(st));
        return BENCH_FAIL;
    }
    return BENCH_OK;
}

const bench_contender bench_ref_cpu = {.name = "ref_cpu", .side = BENCH_HOST,
                                       .role = BENCH_ROLE_CLNORM | BENCH_ROLE_REF,
                                       .slots = BENCH_ANY_SLOT, .forms = BENCH_ANY_FORM,
                                       .is_slow = 1, .create = bench_ref_create, .run = run,
                                       .destroy = free};
