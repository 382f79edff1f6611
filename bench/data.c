/* Input data and the reference outputs of one case. Every contender sees these same values,
 * stored in the case's dtype (rounded from double through clnorm's own conversions).
 *
 * x = N(0, 1) + a per-row offset drawn from U(-10, 10). The offsets are there on purpose:
 * with a mean of up to 10 against a spread of 1, E[x^2] - E[x]^2 in float32 cancels about
 * 7 of its 24 bits, so the naive one-pass kernel and the CLBlast GEMV baseline (both compute
 * the variance that way) show errors far above the tolerance and are flagged WRONG, while
 * shifted or two-pass implementations stay near 1e-6. gamma = U(0.5, 1.5), beta = U(-0.5,
 * 0.5); for a backward op dy = N(0, 1), and mean/rstd come from a clnorm forward (stats.c).
 * A fixed seed: every run sees the same numbers, the same draws whatever the op and dtype. */
#include "bench.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in (0, 1). */
static double unit(uint64_t *s)
{
    return ((double)(splitmix64(s) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

static double normal(uint64_t *s)
{
    static const double two_pi = 6.283185307179586;
    return sqrt(-2.0 * log(unit(s))) * cos(two_pi * unit(s));
}

void bench_problem_free(bench_problem *p)
{
    void *all[] = {p->x, p->gamma, p->beta, p->y_ref, p->dy, p->mean, p->rstd, p->dgamma_ref,
                   p->dbeta_ref};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        free(all[i]);
    memset(p, 0, sizeof *p);
}

/* The reference of the case: y, or mean/rstd (from a clnorm forward) and dx, dgamma, dbeta. */
static int reference(bench_problem *p, clnorm_ctx *ctx, char *msg, size_t msg_size)
{
    clnorm_desc d;
    clnorm_desc_init(&d, p->kind, p->rows, p->cols);
    d.dtype = p->dtype;
    d.eps = p->eps;
    clnorm_status st;
    if (!bench_op_is_backward(p->op)) {
        st = clnorm_ref_forward(&d, p->x, p->y_ref, p->gamma, p->beta, NULL, NULL);
        if (st != CLNORM_OK)
            snprintf(msg, msg_size, "clnorm_ref_forward: %s", clnorm_status_string(st));
        return st == CLNORM_OK ? 0 : -1;
    }
    if (bench_problem_stats(p, ctx, msg, msg_size) != 0)
        return -1;
    st = clnorm_ref_backward(&d, CLNORM_GRAD_X | CLNORM_GRAD_GAMMA | CLNORM_GRAD_BETA, p->x,
                             p->dy, p->mean, p->rstd, p->gamma, p->y_ref, p->dgamma_ref,
                             p->dbeta_ref);
    if (st != CLNORM_OK)
        snprintf(msg, msg_size, "clnorm_ref_backward: %s", clnorm_status_string(st));
    return st == CLNORM_OK ? 0 : -1;
}

int bench_problem_init(bench_problem *p, const bench_case *c, clnorm_ctx *ctx, char *msg,
                       size_t msg_size)
{
    memset(p, 0, sizeof *p);
    const size_t rows = c->shape.rows, cols = c->shape.cols;
    const int bwd = bench_op_is_backward(c->op);
    p->op = c->op;
    p->kind = bench_op_kind(c->op);
    p->dtype = c->dtype;
    p->rows = rows;
    p->cols = cols;
    p->elem = bench_elem_size(c->dtype);
    p->psize = bench_param_size(c->dtype);
    p->eps = 1e-5f;
    p->n_arrays = bwd ? 3 : 2;
    const size_t n = rows * cols, nb = n * p->elem, cb = cols * p->psize;
    int ok = (p->x = malloc(nb)) && (p->y_ref = malloc(nb)) && (p->gamma = malloc(cb)) &&
             (p->beta = malloc(cb));
    if (ok && bwd)
        ok = (p->dy = malloc(nb)) && (p->rstd = malloc(rows * p->psize)) &&
             (p->dgamma_ref = malloc(cb)) && (p->dbeta_ref = malloc(cb)) &&
             (p->kind == CLNORM_RMS || (p->mean = malloc(rows * p->psize)));
    if (!ok) {
        snprintf(msg, msg_size, "out of host memory for the %zux%zu inputs", rows, cols);
        bench_problem_free(p);
        return -1;
    }
    uint64_t seed = 0x636c6e6f726dull ^ (uint64_t)rows * 1000003u ^ (uint64_t)cols;
    for (size_t r = 0; r < rows; r++) {
        const double offset = 20.0 * unit(&seed) - 10.0;
        for (size_t j = 0; j < cols; j++)
            bench_put(p->dtype, p->x, r * cols + j, offset + normal(&seed));
    }
    for (size_t j = 0; j < cols; j++) {
        bench_param_put(p->dtype, p->gamma, j, 0.5 + unit(&seed));
        bench_param_put(p->dtype, p->beta, j, unit(&seed) - 0.5);
    }
    for (size_t i = 0; bwd && i < n; i++)
        bench_put(p->dtype, p->dy, i, normal(&seed));
    p->bytes = (double)p->n_arrays * (double)nb + (bwd ? 3.0 : 2.0) * (double)cb;
    p->copy_bytes = 2.0 * (double)nb;

    if (reference(p, ctx, msg, msg_size) != 0) {
        bench_problem_free(p);
        return -1;
    }
    return 0;
}
