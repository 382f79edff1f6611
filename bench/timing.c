/* Timing: a monotonic clock around each synchronous repetition (OpenCL contenders end every
 * run with clFinish), warm-up runs first, the median of the timed runs reported. Buffer sets
 * rotate with one cursor per shape and side that counts on across contenders, so a
 * contender never starts on the sets its predecessor just left in the cache. */
#include "bench.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

double bench_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_median(double *v, size_t n)
{
    if (n == 0)
        return 0.0;
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int bench_time(const bench_contender *c, void *state, size_t *cursor, size_t n_sets,
               int warmup, int reps, bench_stats *out, char *msg, size_t msg_size)
{
    memset(out, 0, sizeof *out);
    for (int i = 0; i < warmup; i++) {
        if (c->run(state, (*cursor)++ % n_sets, msg, msg_size) != BENCH_OK)
            return BENCH_FAIL;
    }
    double *t = malloc((size_t)reps * sizeof *t);
    if (!t) {
        snprintf(msg, msg_size, "out of host memory");
        return BENCH_FAIL;
    }
    for (int i = 0; i < reps; i++) {
        const size_t set = (*cursor)++ % n_sets;
        const double t0 = bench_now_s();
        if (c->run(state, set, msg, msg_size) != BENCH_OK) {
            free(t);
            return BENCH_FAIL;
        }
        t[i] = bench_now_s() - t0;
    }
    out->reps = reps;
    out->median_s = bench_median(t, (size_t)reps);
    out->min_s = t[0]; /* sorted by bench_median */
    free(t);
    return BENCH_OK;
}
