/* The correctness check run before timing: y of buffer set 0 against the reference computed
 * in double (data.c), or against x for the copy contenders. */
#include "bench.h"

#include <math.h>

double bench_max_abs_err(const float *y, const float *want, size_t n)
{
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double a = y[i], b = want[i];
        double e;
        if (isnan(a) || isnan(b))
            e = isnan(a) && isnan(b) ? 0.0 : INFINITY;
        else if (isinf(a) || isinf(b))
            e = a == b ? 0.0 : INFINITY;
        else
            e = fabs(a - b);
        if (e > worst)
            worst = e;
    }
    return worst;
}

int bench_check(const bench_env *env, bench_side side, int is_copy, float *scratch,
                double *err, char *msg, size_t msg_size)
{
    const bench_problem *p = env->p;
    const size_t n = p->rows * p->cols;
    const float *want = is_copy ? p->x : p->y_ref;
    const float *y;
    if (side == BENCH_DEVICE) {
        cl_mem xs, ys;
        size_t off;
        bench_dev_set(env->dev, 0, &xs, &ys, &off);
        cl_int e = clEnqueueReadBuffer(env->queue, ys, CL_TRUE, off * sizeof(float),
                                       n * sizeof(float), scratch, 0, NULL, NULL);
        if (e != CL_SUCCESS)
            return bench_cl_fail(e, "clEnqueueReadBuffer(y of set 0)", msg, msg_size);
        y = scratch;
    } else {
        y = env->host->y;
    }
    *err = bench_max_abs_err(y, want, n);
    return BENCH_OK;
}
