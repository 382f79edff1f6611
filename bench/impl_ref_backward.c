/* clnorm's CPU reference of the backward pass (clnorm_ref_backward) at the case's dtype:
 * single-threaded, double accumulation; dx, dgamma and dbeta from x and dy of the set and the
 * shared gamma and saved mean/rstd. Few repetitions on big shapes (is_slow: main.c gives it
 * a time budget). Its frac_of_copy is relative to the multi-threaded host copy. */
#include "bench.h"

#include <stdlib.h>

static int run(void *state, size_t set, char *msg, size_t msg_size)
{
    bench_ref_state *s = state;
    const bench_host_sets *h = s->env->host;
    const unsigned mask = CLNORM_GRAD_X | CLNORM_GRAD_GAMMA | CLNORM_GRAD_BETA;
    clnorm_status st = clnorm_ref_backward(&s->desc, mask, bench_host_at(h, h->x, set),
                                           bench_host_at(h, h->dy, set), h->mean, h->rstd,
                                           h->gamma, bench_host_at(h, h->y, set), h->dgamma,
                                           h->dbeta);
    if (st != CLNORM_OK) {
        snprintf(msg, msg_size, "clnorm_ref_backward: %s", clnorm_status_string(st));
        return BENCH_FAIL;
    }
    return BENCH_OK;
}

const bench_contender bench_ref_cpu_bwd = {.name = "ref_cpu", .side = BENCH_HOST,
                                           .passes = BENCH_BWD, .is_slow = 1,
                                           .create = bench_ref_create, .run = run, .destroy = free};
