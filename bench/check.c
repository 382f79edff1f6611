/* The correctness check run before timing: the outputs of buffer set 0 against the reference
 * computed in double (data.c), or y against x for the copy contenders (bit for bit). The
 * outputs are poisoned (NaN bytes) before the run, so a contender that writes nothing, or
 * only part, cannot pass on what the previous contender left there.
 *   forward:  max abs error of y; WRONG when an element is off by more than atol + rtol x |ref|
 *   backward: max |got - ref| / max(1, max |ref|) for dx, dgamma and dbeta, as the test suite
 *             measures them; WRONG when dx's is above atol + rtol, or dgamma's or dbeta's above
 *             atol (bench_tolerance). The floor of 1 keeps ill-conditioned tiny gradients (an
 *             RMS row of one element: dx = rstd g (1 - xhat^2) ~ 1e-7) from reading as wrong. */
#include "bench.h"

#include <math.h>
#include <string.h>

void bench_tolerance(const bench_options *opt, clnorm_dtype t, double *atol, double *rtol)
{
    *atol = opt->tol >= 0.0 ? opt->tol : t == CLNORM_F64 ? 1e-12 : 1e-5;
    switch (t) {
    case CLNORM_F16: *rtol = ldexp(1.0, -10); return; /* 1 ulp at |v| in [2^k, 2^k+1) <= it */
    case CLNORM_BF16: *rtol = ldexp(1.0, -7); return;
    case CLNORM_F64: *rtol = 1e-12; return;
    case CLNORM_F32: break;
    }
    *rtol = 0.0;
}

/* |a - b|, or +inf when one is NaN/Inf and the other is not the same. */
static double diff(double a, double b)
{
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b) ? 0.0 : INFINITY;
    if (isinf(a) || isinf(b))
        return a == b ? 0.0 : INFINITY;
    return fabs(a - b);
}

double bench_max_abs_err(clnorm_dtype t, const void *got, const void *want, size_t n)
{
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double e = diff(bench_get(t, got, i), bench_get(t, want, i));
        if (e > worst)
            worst = e;
    }
    return worst;
}

/* Whether every element is within atol + rtol x |want|. */
static int within(clnorm_dtype t, const void *got, const void *want, size_t n, double atol,
                  double rtol)
{
    for (size_t i = 0; i < n; i++) {
        const double w = bench_get(t, want, i);
        if (!(diff(bench_get(t, got, i), w) <= atol + rtol * fabs(w)))
            return 0;
    }
    return 1;
}

/* max |got - want| / max(1, max |want|). */
static double normwise(int param, clnorm_dtype t, const void *got, const void *want, size_t n)
{
    double worst = 0.0, top = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double g = param ? bench_param_get(t, got, i) : bench_get(t, got, i);
        const double w = param ? bench_param_get(t, want, i) : bench_get(t, want, i);
        const double e = diff(g, w);
        if (e > worst)
            worst = e;
        if (isfinite(w) && fabs(w) > top)
            top = fabs(w);
    }
    return worst / (top > 1.0 ? top : 1.0);
}

size_t bench_check_scratch_bytes(const bench_problem *p)
{
    return bench_round_up(p->rows * p->cols * p->elem, 8) + 2 * p->cols * p->psize;
}

int bench_poison(const bench_env *env, bench_side side, char *msg, size_t msg_size)
{
    const bench_problem *p = env->p;
    const size_t nb = p->rows * p->cols * p->elem, cb = p->cols * p->psize;
    if (side == BENCH_HOST) {
        const bench_host_sets *h = env->host;
        memset(bench_host_at(h, h->y, 0), 0xff, nb);
        if (h->dgamma)
            memset(h->dgamma, 0xff, cb);
        if (h->dbeta)
            memset(h->dbeta, 0xff, cb);
        return BENCH_OK;
    }
    const bench_dev_sets *d = env->dev;
    const unsigned char ones = 0xff;
    cl_mem x, y;
    size_t off;
    bench_dev_set(d, 0, &x, &y, &off);
    cl_int err = clEnqueueFillBuffer(env->queue, y, &ones, 1, off * p->elem, nb, 0, NULL, NULL);
    if (err == CL_SUCCESS && d->dgamma)
        err = clEnqueueFillBuffer(env->queue, d->dgamma, &ones, 1, 0, cb, 0, NULL, NULL);
    if (err == CL_SUCCESS && d->dbeta)
        err = clEnqueueFillBuffer(env->queue, d->dbeta, &ones, 1, 0, cb, 0, NULL, NULL);
    if (err == CL_SUCCESS)
        err = clFinish(env->queue);
    return err == CL_SUCCESS ? BENCH_OK
                             : bench_cl_fail(err, "poisoning the outputs of set 0", msg, msg_size);
}

int bench_check(const bench_env *env, bench_side side, int is_copy, void *scratch,
                bench_verdict *v, char *msg, size_t msg_size)
{
    const bench_problem *p = env->p;
    const size_t n = p->rows * p->cols, cb = p->cols * p->psize;
    const int bwd = bench_op_is_backward(p->op);
    const void *y, *dgamma = NULL, *dbeta = NULL;
    memset(v, 0, sizeof *v);
    if (side == BENCH_DEVICE) {
        const bench_dev_sets *d = env->dev;
        unsigned char *buf = scratch;
        unsigned char *params = buf + bench_round_up(n * p->elem, 8);
        cl_mem xs, ys;
        size_t off;
        bench_dev_set(d, 0, &xs, &ys, &off);
        cl_int e = clEnqueueReadBuffer(env->queue, ys, CL_TRUE, off * p->elem, n * p->elem, buf,
                                       0, NULL, NULL);
        if (e != CL_SUCCESS)
            return bench_cl_fail(e, "clEnqueueReadBuffer(output of set 0)", msg, msg_size);
        if (bwd && !is_copy) {
            e = clEnqueueReadBuffer(env->queue, d->dgamma, CL_TRUE, 0, cb, params, 0, NULL,
                                    NULL);
            if (e == CL_SUCCESS)
                e = clEnqueueReadBuffer(env->queue, d->dbeta, CL_TRUE, 0, cb, params + cb, 0,
                                        NULL, NULL);
            if (e != CL_SUCCESS)
                return bench_cl_fail(e, "clEnqueueReadBuffer(dgamma, dbeta)", msg, msg_size);
            dgamma = params;
            dbeta = params + cb;
        }
        y = buf;
    } else {
        const bench_host_sets *h = env->host;
        y = bench_host_at(h, h->y, 0);
        dgamma = h->dgamma;
        dbeta = h->dbeta;
    }

    if (is_copy) {
        v->err = bench_max_abs_err(p->dtype, y, p->x, n);
        v->wrong = memcmp(y, p->x, n * p->elem) != 0;
        return BENCH_OK;
    }
    double atol, rtol;
    bench_tolerance(env->opt, p->dtype, &atol, &rtol);
    if (!bwd) {
        v->err = bench_max_abs_err(p->dtype, y, p->y_ref, n);
        v->wrong = !within(p->dtype, y, p->y_ref, n, atol, rtol);
        return BENCH_OK;
    }
    v->err_dx = normwise(0, p->dtype, y, p->y_ref, n);
    v->err_dgamma = normwise(1, p->dtype, dgamma, p->dgamma_ref, p->cols);
    v->err_dbeta = normwise(1, p->dtype, dbeta, p->dbeta_ref, p->cols);
    v->err = fmax(v->err_dx, fmax(v->err_dgamma, v->err_dbeta));
    v->wrong = !(v->err_dx <= atol + rtol) || !(v->err_dgamma <= atol) ||
               !(v->err_dbeta <= atol);
    return BENCH_OK;
}
