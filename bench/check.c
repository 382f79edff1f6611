/* The correctness check run before timing: every output of buffer set 0 (y and the sum of a
 * fused residual op; dx, dgamma and dbeta of a backward) against the reference computed in
 * double (data.c), or the copy's output against x (bit for bit). The outputs are poisoned
 * (NaN bytes) before the run, so a contender that writes nothing, or only part, cannot pass
 * on what the previous contender left there.
 *   forward:  max abs error of each output; WRONG when an element is off by more than
 *             atol + rtol x |ref|
 *   backward: max |got - ref| / max(1, max |ref|) of each output, as the test suite measures
 *             them; WRONG when a row output's (dx) is above atol + rtol, or a vector's
 *             (dgamma, dbeta) above atol (bench_tolerance). The floor of 1 keeps
 *             ill-conditioned tiny gradients (an RMS row of one element: dx = rstd g (1 -
 *             xhat^2) ~ 1e-7) from reading as wrong. */
#include "bench.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void bench_tolerance(const bench_options *opt, clnorm_dtype t, double *atol, double *rtol)
{
    *atol = opt->tol >= 0.0 ? opt->tol : t == CLNORM_F64 ? 1e-12 : 1e-5;
    *rtol = 0.0;
    if (opt->tol == 0.0)
        return; /* bit-exact: no ulp either */
    switch (t) {
    case CLNORM_F16: *rtol = ldexp(1.0, -10); return; /* 1 ulp at |v| in [2^k, 2^k+1) <= it */
    case CLNORM_BF16: *rtol = ldexp(1.0, -7); return;
    case CLNORM_F64: *rtol = 1e-12; return;
    case CLNORM_F32: break;
    }
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
static double normwise(clnorm_dtype t, const void *got, const void *want, size_t n)
{
    double worst = 0.0, top = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double g = bench_get(t, got, i), w = bench_get(t, want, i);
        const double e = diff(g, w);
        if (e > worst)
            worst = e;
        if (isfinite(w) && fabs(w) > top)
            top = fabs(w);
    }
    return worst / (top > 1.0 ? top : 1.0);
}

/* The outputs of a run: every output slot, or for a copy only the first row output. */
static unsigned outputs_of(const bench_problem *p, int is_copy)
{
    return is_copy ? BENCH_SLOT(p->info->out) : p->info->outputs;
}

int bench_poison(const bench_env *env, bench_side side, char *msg, size_t msg_size)
{
    const bench_problem *p = env->p;
    const unsigned char ones = 0xff;
    cl_int err = CL_SUCCESS;
    for (int s = 0; s < BENCH_N_SLOTS && err == CL_SUCCESS; s++) {
        const clnorm_arg_slot slot = (clnorm_arg_slot)s;
        if (!(p->info->outputs & BENCH_SLOT(s)))
            continue;
        const size_t bytes = bench_slot_elems(p, slot) * bench_slot_esize(p, slot);
        if (side == BENCH_HOST) {
            memset(bench_host_arg(env->host, 0, slot), 0xff, bytes);
            continue;
        }
        cl_mem mem;
        size_t off;
        bench_dev_arg(env->dev, 0, slot, &mem, &off);
        if (bytes)
            err = clEnqueueFillBuffer(env->queue, mem, &ones, 1,
                                      off * bench_slot_esize(p, slot), bytes, 0, NULL, NULL);
    }
    if (err == CL_SUCCESS && side == BENCH_DEVICE)
        err = clFinish(env->queue);
    return err == CL_SUCCESS ? BENCH_OK
                             : bench_cl_fail(err, "poisoning the outputs of set 0", msg, msg_size);
}

/* Output slot `slot` of set 0 on the host: taken (host side) or read back into *owned. */
static int output_of(const bench_env *env, bench_side side, clnorm_arg_slot slot,
                     const void **out, void **owned, char *msg, size_t msg_size)
{
    const bench_problem *p = env->p;
    *owned = NULL;
    if (side == BENCH_HOST) {
        *out = bench_host_arg(env->host, 0, slot);
        return BENCH_OK;
    }
    const size_t bytes = bench_slot_elems(p, slot) * bench_slot_esize(p, slot);
    if (!(*owned = malloc(bytes ? bytes : 1))) {
        snprintf(msg, msg_size, "out of host memory for the read-back of %s",
                 clnorm_arg_name(slot));
        return BENCH_FAIL;
    }
    cl_mem mem;
    size_t off;
    bench_dev_arg(env->dev, 0, slot, &mem, &off);
    cl_int e = bytes ? clEnqueueReadBuffer(env->queue, mem, CL_TRUE,
                                           off * bench_slot_esize(p, slot), bytes, *owned, 0,
                                           NULL, NULL)
                     : CL_SUCCESS;
    if (e != CL_SUCCESS) {
        char what[80];
        snprintf(what, sizeof what, "clEnqueueReadBuffer(%s of set 0)", clnorm_arg_name(slot));
        free(*owned);
        *owned = NULL;
        return bench_cl_fail(e, what, msg, msg_size);
    }
    *out = *owned;
    return BENCH_OK;
}

int bench_check(const bench_env *env, bench_side side, int is_copy, bench_verdict *v,
                char *msg, size_t msg_size)
{
    const bench_problem *p = env->p;
    memset(v, 0, sizeof *v);
    for (int s = 0; s < BENCH_N_SLOTS; s++)
        v->err_of[s] = -1.0;
    const unsigned outs = outputs_of(p, is_copy);
    for (int s = 0; s < BENCH_N_SLOTS; s++) {
        const clnorm_arg_slot slot = (clnorm_arg_slot)s;
        if (!(outs & BENCH_SLOT(s)))
            continue;
        const void *got = NULL;
        void *owned;
        int rc = output_of(env, side, slot, &got, &owned, msg, msg_size);
        if (rc != BENCH_OK)
            return rc;
        const clnorm_dtype t = p->slot[s].dtype;
        const size_t n = bench_slot_elems(p, slot);
        double e, atol, rtol;
        int wrong;
        bench_tolerance(env->opt, t, &atol, &rtol);
        if (is_copy) {
            const void *x = p->t[CLNORM_ARG_X];
            e = bench_max_abs_err(t, got, x, n);
            wrong = memcmp(got, x, n * bench_slot_esize(p, slot)) != 0;
        } else if (p->dir == CLNORM_FORWARD) {
            e = bench_max_abs_err(t, got, p->t[s], n);
            wrong = !within(t, got, p->t[s], n, atol, rtol);
        } else {
            e = normwise(t, got, p->t[s], n);
            wrong = !(e <= atol + ((p->info->row_slots & BENCH_SLOT(s)) ? rtol : 0.0));
        }
        free(owned);
        v->err_of[s] = e;
        v->err = fmax(v->err, e);
        v->wrong |= wrong;
    }
    return BENCH_OK;
}
