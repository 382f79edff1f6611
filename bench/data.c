/* Input data and the reference output of one shape. Every contender sees these same values.
 *
 * x = N(0, 1) + a per-row offset drawn from U(-10, 10). The offsets are there on purpose:
 * with a mean of up to 10 against a spread of 1, E[x^2] - E[x]^2 in float32 cancels about
 * 7 of its 24 bits, so the naive one-pass kernel and the CLBlast GEMV baseline (both compute
 * the variance that way) show errors far above the tolerance and are flagged WRONG, while
 * shifted or two-pass implementations stay near 1e-6. gamma = U(0.5, 1.5), beta = U(-0.5,
 * 0.5). A fixed seed: every run sees the same numbers. */
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
    free(p->x);
    free(p->gamma);
    free(p->beta);
    free(p->y_ref);
    memset(p, 0, sizeof *p);
}

int bench_problem_init(bench_problem *p, clnorm_kind op, size_t rows, size_t cols, char *msg,
                       size_t msg_size)
{
    memset(p, 0, sizeof *p);
    p->op = op;
    p->rows = rows;
    p->cols = cols;
    p->eps = 1e-5f;
    const size_t n = rows * cols;
    p->x = malloc(n * sizeof *p->x);
    p->y_ref = malloc(n * sizeof *p->y_ref);
    p->gamma = malloc(cols * sizeof *p->gamma);
    p->beta = malloc(cols * sizeof *p->beta);
    if (!p->x || !p->y_ref || !p->gamma || !p->beta) {
        snprintf(msg, msg_size, "out of host memory for the %zux%zu inputs", rows, cols);
        bench_problem_free(p);
        return -1;
    }
    uint64_t seed = 0x636c6e6f726dull ^ (uint64_t)rows * 1000003u ^ (uint64_t)cols;
    for (size_t r = 0; r < rows; r++) {
        const double offset = 20.0 * unit(&seed) - 10.0;
        float *xr = p->x + r * cols;
        for (size_t c = 0; c < cols; c++)
            xr[c] = (float)(offset + normal(&seed));
    }
    for (size_t c = 0; c < cols; c++) {
        p->gamma[c] = (float)(0.5 + unit(&seed));
        p->beta[c] = (float)(unit(&seed) - 0.5);
    }
    p->bytes = 2.0 * (double)n * sizeof(float) + 2.0 * (double)cols * sizeof(float);
    p->copy_bytes = 2.0 * (double)n * sizeof(float);

    clnorm_desc d;
    clnorm_desc_init(&d, op, rows, cols);
    d.eps = p->eps;
    clnorm_status st = clnorm_ref_forward(&d, p->x, p->y_ref, p->gamma, p->beta, NULL, NULL);
    if (st != CLNORM_OK) {
        snprintf(msg, msg_size, "clnorm_ref_forward: %s", clnorm_status_string(st));
        bench_problem_free(p);
        return -1;
    }
    return 0;
}
