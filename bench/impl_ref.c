/* clnorm's CPU reference of the forward pass (clnorm_ref_forward) at the case's dtype:
 * single-threaded, double accumulation, the oracle of the tests. Timed with fewer
 * repetitions on big shapes (is_slow: main.c gives it a time budget). Its frac_of_copy is
 * relative to the multi-threaded host copy. */
#include "bench.h"

#include <stdlib.h>

static int run(void *state, size_t set, char *msg, size_t msg_size)
{
    bench_ref_state *s = state;
    const bench_host_sets *h = s->env->host;
    clnorm_status st = clnorm_ref_forward(&s->desc, bench_host_at(h, h->x, set),
                                          bench_host_at(h, h->y, set), h->gamma, h->beta, NULL,
                                          NULL);
    if (st != CLNORM_OK) {
        snprintf(msg, msg_size, "clnorm_ref_forward: %s", clnorm_status_string(st));
        return BENCH_FAIL;
    }
    return BENCH_OK;
}

const bench_contender bench_ref_cpu = {.name = "ref_cpu", .side = BENCH_HOST,
                                       .passes = BENCH_FWD, .is_slow = 1,
                                       .create = bench_ref_create, .run = run, .destroy = free};
