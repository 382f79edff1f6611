/* clnorm's CPU reference (clnorm_ref_forward): single-threaded, double accumulation, the
 * oracle of the tests. Timed with fewer repetitions on big shapes (main.c gives it a time
 * budget). Its frac_of_copy is relative to the multi-threaded host copy. */
#include "bench.h"

#include <stdlib.h>

typedef struct {
    const bench_env *env;
    clnorm_desc desc;
} ref_state;

static int create(const bench_env *env, void **out, char *note, size_t note_size, char *msg,
                  size_t msg_size)
{
    (void)note;
    (void)note_size;
    ref_state *s = malloc(sizeof *s);
    if (!s) {
        snprintf(msg, msg_size, "out of host memory");
        return BENCH_FAIL;
    }
    s->env = env;
    clnorm_desc_init(&s->desc, env->p->op, env->p->rows, env->p->cols);
    s->desc.eps = env->p->eps;
    *out = s;
    return BENCH_OK;
}

static int run(void *state, size_t set, char *msg, size_t msg_size)
{
    ref_state *s = state;
    const bench_host_sets *h = s->env->host;
    set %= h->n_sets;
    clnorm_status st = clnorm_ref_forward(&s->desc, h->x + set * h->stride,
                                          h->y + set * h->stride, h->gamma, h->beta, NULL,
                                          NULL);
    if (st != CLNORM_OK) {
        snprintf(msg, msg_size, "clnorm_ref_forward: %s", clnorm_status_string(st));
        return BENCH_FAIL;
    }
    return BENCH_OK;
}

static void destroy(void *state)
{
    free(state);
}

const bench_contender bench_ref_cpu = {"ref_cpu", BENCH_HOST, 0, create, run, destroy};
