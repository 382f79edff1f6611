/*
 * test_overflow.c - statistics of rows whose squares overflow the arithmetic: |x| at 1e19,
 * 1e30 and near FLT_MAX / 4 in float32, 1e160 and 1e300 in float64, huge and tiny values
 * mixed, a lone huge first element (the row's shift), denormal rows, and an Inf and a NaN
 * among huge values. Every strategy and the CPU reference, LayerNorm, RMSNorm and a fused
 * residual add, forward (y, mean, rstd) and backward with the statistics recomputed from x
 * (dx, dgamma, dbeta), against an oracle written here: float64, with rows above 2^500 scaled
 * by a power of two (exact) so that float64 data cannot overflow it either.
 * A NaN or Inf must stay inside its row, where y, mean and rstd follow the oracle's NaN and
 * Inf (RMSNorm of a row with an Inf: rstd 0, y = beta but NaN at the Inf); the rows around
 * it come out bit for bit as they do without it. Long rows that the split strategy cuts into
 * several chunks, only some of them huge, check the merge of chunks computed at different
 * scales.
 * The same suite runs with CLNORM_MAX_GROUPS=1 (tests/hardening_tests.cmake), so that one
 * work-group strides over all rows and a rescaled row is followed by ordinary ones.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "clnorm.h"
#include "dtype.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a small seeded generator of our own (splitmix64, Box-Muller): the data are the same on
 * every platform and do not depend on the shared test helpers ---- */
typedef struct {
    uint64_t s;
} rng;

static uint64_t rng_u64(rng *r)
{
    uint64_t z = (r->s += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static double rng_uniform(rng *r) /* (0, 1) */
{
    return ((double)(rng_u64(r) >> 11) + 0.5) * 0x1p-53;
}

static double rng_normal(rng *r)
{
    return sqrt(-2.0 * log(rng_uniform(r))) * cos(6.283185307179586 * rng_uniform(r));
}

/* ---- the suite's context: a device when there is one; the reference runs regardless ---- */
typedef struct {
    clnorm_ctx *ctx; /* NULL when CLNORM_DEVICE names no device */
    int device;      /* an OpenCL device to run the strategies on */
} suite;

static int group_setup(void **state)
{
    suite *s = calloc(1, sizeof *s);
    if (!s)
        return -1;
    if (clnorm_create(NULL, &s->ctx) == CLNORM_OK &&
        clnorm_get_backend(s->ctx) == CLNORM_BACKEND_OPENCL)
        s->device = 1;
    *state = s;
    return 0;
}

static int group_teardown(void **state)
{
    suite *s = *state;
    clnorm_free(s->ctx);
    free(s);
    return 0;
}

/* Device strategies, then the reference (clnorm_ref_execute, no context). */
static const clnorm_strategy strategies[] = {CLNORM_STRATEGY_ROW, CLNORM_STRATEGY_WORKGROUP,
                                             CLNORM_STRATEGY_SPLIT, CLNORM_STRATEGY_SUBGROUP,
                                             CLNORM_STRATEGY_REFERENCE};
#define NUM_STRATEGIES (sizeof strategies / sizeof strategies[0])

static int has_mean(clnorm_kind k)
{
    return k == CLNORM_LAYER || k == CLNORM_ADD_LAYER;
}

static int has_residual(clnorm_kind k)
{
    return k == CLNORM_ADD_LAYER || k == CLNORM_ADD_RMS;
}

/* ---- rows ---- */
typedef enum {
    GEN_NORMAL,   /* scale * (offset + N(0, 1)) */
    GEN_UMAX,     /* scale * U(-1, 1), one element exactly scale */
    GEN_MIXED,    /* scale * N(0, 1) and tiny * N(0, 1) alternating, starting tiny */
    GEN_OUTLIER,  /* the first element scale, the rest N(0, 1): the row's shift K is huge */
    GEN_CHUNK     /* N(0, 1), with scale * N(0, 1) over columns [lo, hi) * cols */
} gen_kind;

typedef struct {
    gen_kind kind;
    double scale, other; /* other: GEN_NORMAL offset, GEN_MIXED tiny scale */
    double lo, hi;       /* GEN_CHUNK */
} row_spec;

static void gen_row(const row_spec *sp, rng *r, double *v, size_t cols)
{
    for (size_t j = 0; j < cols; j++) {
        const double n = rng_normal(r);
        switch (sp->kind) {
        case GEN_NORMAL: v[j] = sp->scale * (sp->other + n); break;
        case GEN_UMAX: v[j] = sp->scale * (2.0 * rng_uniform(r) - 1.0); break;
        case GEN_MIXED: v[j] = (j % 2 ? sp->scale : sp->other) * n; break;
        case GEN_OUTLIER: v[j] = j ? n : sp->scale; break;
        case GEN_CHUNK:
            v[j] = (j >= (size_t)(sp->lo * (double)cols) && j < (size_t)(sp->hi * (double)cols))
                       ? sp->scale * n
                       : n;
            break;
        }
    }
    if (sp->kind == GEN_UMAX)
        v[cols / 3] = sp->scale;
}

/* ---- a problem: inputs in their storage types ---- */
typedef struct {
    clnorm_desc d;
    void *x, *res, *gamma, *beta, *dy; /* res: the residual of ADD kinds */
} problem;

typedef struct {
    void *y, *mean, *rstd, *dx, *dgamma, *dbeta;
} outputs;

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    assert_non_null(p);
    return p;
}

static void problem_make(problem *p, clnorm_kind kind, clnorm_dtype t, const row_spec *specs,
                         size_t rows, size_t cols, uint64_t seed)
{
    clnorm_desc_init(&p->d, kind, rows, cols);
    p->d.dtype = t;
    p->d.flags = CLNORM_SAVE_STATS | CLNORM_WITH_BACKWARD;
    const clnorm_dtype pt = clnorm_elem_param_type(t);
    const size_t es = clnorm_elem_size(t), ps = clnorm_elem_size(pt);
    p->x = xmalloc(rows * cols * es);
    p->res = has_residual(kind) ? xmalloc(rows * cols * es) : NULL;
    p->dy = xmalloc(rows * cols * es);
    p->gamma = xmalloc(cols * ps);
    p->beta = xmalloc(cols * ps);
    rng r = {seed};
    double *v = xmalloc(cols * sizeof *v);
    for (size_t i = 0; i < rows; i++) {
        gen_row(&specs[i], &r, v, cols);
        for (size_t j = 0; j < cols; j++)
            clnorm_elem_store(t, p->x, i * cols + j, v[j]);
        if (p->res) {
            gen_row(&specs[i], &r, v, cols);
            for (size_t j = 0; j < cols; j++)
                clnorm_elem_store(t, p->res, i * cols + j, v[j]);
        }
        for (size_t j = 0; j < cols; j++)
            clnorm_elem_store(t, p->dy, i * cols + j, rng_normal(&r));
    }
    for (size_t j = 0; j < cols; j++) {
        clnorm_elem_store(pt, p->gamma, j, 1.0 + 0.2 * rng_normal(&r));
        clnorm_elem_store(pt, p->beta, j, 0.2 * rng_normal(&r));
    }
    free(v);
}

static void problem_free(problem *p)
{
    free(p->x);
    free(p->res);
    free(p->dy);
    free(p->gamma);
    free(p->beta);
}

static void outputs_make(outputs *o, const clnorm_desc *d)
{
    const clnorm_dtype pt = clnorm_elem_param_type(d->dtype);
    const size_t es = clnorm_elem_size(d->dtype), ps = clnorm_elem_size(pt);
    o->y = xmalloc(d->rows * d->cols * es);
    o->dx = xmalloc(d->rows * d->cols * es);
    o->mean = xmalloc(d->rows * ps);
    o->rstd = xmalloc(d->rows * ps);
    o->dgamma = xmalloc(d->cols * ps);
    o->dbeta = xmalloc(d->cols * ps);
}

static void outputs_free(outputs *o)
{
    free(o->y);
    free(o->dx);
    free(o->mean);
    free(o->rstd);
    free(o->dgamma);
    free(o->dbeta);
}

/* ---- the oracle, float64 ---- */
typedef struct {
    double *y, *mean, *rstd, *dx, *dgamma, *dbeta;
    double *xhat; /* the error scale of dx and dgamma grows with |xhat| */
} oracle;

static double input(const problem *p, size_t i, size_t j)
{
    const size_t k = i * p->d.cols + j;
    double v = clnorm_elem_load(p->d.dtype, p->x, k);
    if (p->res)
        v += clnorm_elem_load(p->d.dtype, p->res, k);
    return v;
}

/* One row: mean, rstd and xhat (n values). Two passes in float64 over the row scaled by a
 * power of two when its largest magnitude exceeds 2^500, so that squares of float64 data
 * cannot overflow here; rows holding an Inf or NaN are taken as they are (their NaNs and
 * Infs are what the library must reproduce inside the row). */
static void oracle_row(const double *v, size_t n, int rms, double eps, double *mean,
                       double *rstd, double *xhat)
{
    double M = 0.0;
    int finite = 1;
    for (size_t j = 0; j < n; j++) {
        finite &= isfinite(v[j]) != 0;
        M = fmax(M, fabs(v[j]));
    }
    const double s = finite && M > 0x1p500 ? ldexp(1.0, -ilogb(M)) : 1.0;
    double m = 0.0;
    if (!rms) {
        for (size_t j = 0; j < n; j++)
            m += v[j] * s;
        m /= (double)n;
    }
    double var = 0.0;
    for (size_t j = 0; j < n; j++)
        var += (v[j] * s - m) * (v[j] * s - m);
    var /= (double)n;
    const double r = 1.0 / sqrt(var + eps * s * s);
    for (size_t j = 0; j < n; j++)
        xhat[j] = (v[j] * s - m) * r;
    *mean = m / s;
    *rstd = r * s;
}

static void oracle_make(oracle *o, const problem *p)
{
    const clnorm_desc *d = &p->d;
    const size_t rows = d->rows, cols = d->cols;
    const clnorm_dtype t = d->dtype, pt = clnorm_elem_param_type(t);
    const int rms = !has_mean(d->kind);
    const double eps = t == CLNORM_F64 ? d->eps : (double)(float)d->eps;
    o->y = xmalloc(rows * cols * sizeof(double));
    o->dx = xmalloc(rows * cols * sizeof(double));
    o->xhat = xmalloc(rows * cols * sizeof(double));
    o->mean = xmalloc(rows * sizeof(double));
    o->rstd = xmalloc(rows * sizeof(double));
    o->dgamma = calloc(cols, sizeof(double));
    o->dbeta = calloc(cols, sizeof(double));
    assert_true(o->dgamma && o->dbeta);
    double *v = xmalloc(cols * sizeof *v);
    for (size_t i = 0; i < rows; i++) {
        double *xh = o->xhat + i * cols;
        for (size_t j = 0; j < cols; j++)
            v[j] = input(p, i, j);
        oracle_row(v, cols, rms, eps, &o->mean[i], &o->rstd[i], xh);
        double sg = 0.0, sgx = 0.0;
        for (size_t j = 0; j < cols; j++) {
            const double gm = clnorm_elem_load(pt, p->gamma, j);
            const double dy = clnorm_elem_load(t, p->dy, i * cols + j);
            o->y[i * cols + j] = xh[j] * gm + clnorm_elem_load(pt, p->beta, j);
            sg += dy * gm;
            sgx += dy * gm * xh[j];
            o->dgamma[j] += dy * xh[j];
            o->dbeta[j] += dy;
        }
        const double mg = rms ? 0.0 : sg / (double)cols, mgx = sgx / (double)cols;
        for (size_t j = 0; j < cols; j++) {
            const double g = clnorm_elem_load(t, p->dy, i * cols + j) *
                             clnorm_elem_load(pt, p->gamma, j);
            o->dx[i * cols + j] = o->rstd[i] * (g - mg - xh[j] * mgx);
        }
    }
    free(v);
}

static void oracle_free(oracle *o)
{
    free(o->y);
    free(o->dx);
    free(o->xhat);
    free(o->mean);
    free(o->rstd);
    free(o->dgamma);
    free(o->dbeta);
}

/* ---- running a strategy ---- */

/* The plan of a strategy, or NULL when the strategy cannot take the problem here (subgroup
 * beyond its register limit, f64 without cl_khr_fp64): skipped, said on stdout. */
static clnorm_plan *plan_for(suite *s, const clnorm_desc *d, clnorm_strategy st)
{
    clnorm_plan *plan = NULL;
    const clnorm_status rc = clnorm_plan_create_with(s->ctx, d, st, &plan);
    if (rc == CLNORM_UNSUPPORTED) {
        printf("    (%s skipped: %s)\n", clnorm_strategy_name(st), clnorm_last_error(s->ctx));
        return NULL;
    }
    if (rc != CLNORM_OK)
        print_error("plan %s: %s\n", clnorm_strategy_name(st), clnorm_last_error(s->ctx));
    assert_int_equal(rc, CLNORM_OK);
    return plan;
}

static clnorm_status execute(clnorm_plan *plan, const clnorm_desc *d, clnorm_direction dir,
                             const clnorm_host_arg *a, size_t n)
{
    return plan ? clnorm_execute_host(plan, dir, a, n) : clnorm_ref_execute(d, dir, a, n);
}

/* Forward with the statistics saved; plan NULL: the reference. */
static void forward(clnorm_plan *plan, const problem *p, outputs *o)
{
    clnorm_host_arg a[8];
    size_t n = 0;
    a[n++] = (clnorm_host_arg){CLNORM_ARG_X, p->x};
    a[n++] = (clnorm_host_arg){CLNORM_ARG_Y, o->y};
    a[n++] = (clnorm_host_arg){CLNORM_ARG_GAMMA, p->gamma};
    a[n++] = (clnorm_host_arg){CLNORM_ARG_BETA, p->beta};
    a[n++] = (clnorm_host_arg){CLNORM_ARG_RSTD, o->rstd};
    if (has_mean(p->d.kind))
        a[n++] = (clnorm_host_arg){CLNORM_ARG_MEAN, o->mean};
    if (p->res)
        a[n++] = (clnorm_host_arg){CLNORM_ARG_RESIDUAL, p->res};
    const clnorm_status rc = execute(plan, &p->d, CLNORM_FORWARD, a, n);
    assert_int_equal(rc, CLNORM_OK);
}

/* Backward with mean and rstd not given: recomputed from x (and the residual). */
static void backward(clnorm_plan *plan, const problem *p, outputs *o, int grads_of_params)
{
    clnorm_host_arg a[8];
    size_t n = 0;
    a[n++] = (clnorm_host_arg){CLNORM_ARG_X, p->x};
    a[n++] = (clnorm_host_arg){CLNORM_ARG_DY, p->dy};
    a[n++] = (clnorm_host_arg){CLNORM_ARG_GAMMA, p->gamma};
    a[n++] = (clnorm_host_arg){CLNORM_ARG_DX, o->dx};
    if (grads_of_params) {
        a[n++] = (clnorm_host_arg){CLNORM_ARG_DGAMMA, o->dgamma};
        a[n++] = (clnorm_host_arg){CLNORM_ARG_DBETA, o->dbeta};
    }
    if (p->res)
        a[n++] = (clnorm_host_arg){CLNORM_ARG_RESIDUAL, p->res};
    const clnorm_status rc = execute(plan, &p->d, CLNORM_BACKWARD, a, n);
    assert_int_equal(rc, CLNORM_OK);
}

/* ---- comparison ---- */
typedef struct {
    const char *label; /* strategy, kind, dtype */
    int fails;
    uint64_t rows;     /* bit i: row i had a failure (the summary line names them) */
} checker;

static void summary(const checker *c)
{
    if (!c->fails)
        return;
    char list[256] = "";
    for (unsigned i = 0; i < 64; i++)
        if (c->rows >> i & 1)
            snprintf(list + strlen(list), sizeof list - strlen(list), " %u", i);
    print_error("%s: %d failures, in rows%s%s\n", c->label, c->fails, list[0] ? list : " none",
                c->rows ? "" : " (dgamma or dbeta)");
}

/* The row index of dgamma and dbeta, which belong to no row. */
#define PARAM_ROW SIZE_MAX

/* got against want within tol * scale; a NaN wanted must be a NaN, an Inf wanted must not be
 * finite (+Inf - +Inf makes NaN where the order of operations differs). */
static void check(checker *c, const char *what, size_t i, size_t j, double got, double want,
                  double tol, double scale)
{
    int ok;
    if (isnan(want))
        ok = isnan(got);
    else if (isinf(want))
        ok = !isfinite(got);
    else
        ok = fabs(got - want) <= tol * scale;
    if (ok)
        return;
    if (i < 64)
        c->rows |= UINT64_C(1) << i;
    if (c->fails++ >= 8)
        return;
    if (i == PARAM_ROW)
        print_error("%s: %s[%zu] = %.9g, want %.9g (tolerance %.3g)\n", c->label, what, j, got,
                    want, tol * scale);
    else
        print_error("%s: %s[%zu][%zu] = %.9g, want %.9g (tolerance %.3g)\n", c->label, what, i,
                    j, got, want, tol * scale);
}

/* Tolerances of one storage type and row length. A row shifted by a lone huge first element K
 * forms (x - K) - m with m = mean(x - K) rounded at ulp(K), and its spread is at least
 * |K| / sqrt(cols): y loses up to 2^-24 sqrt(cols) in float32. */
typedef struct {
    double y, mean, rstd, dx, dparam;
    double tiny; /* a few of the type's smallest denormals: the resolution of a denormal mean */
} tolerances;

static tolerances tol_for(clnorm_dtype t, size_t cols)
{
    if (t == CLNORM_F64)
        return (tolerances){1e-12, 1e-13, 1e-12, 1e-11, 1e-11, 0x1p-1070};
    const double shift = 0x1p-22 * sqrt((double)cols);
    return (tolerances){1e-5 + shift, 1e-6, 1e-5, 1e-4 + shift, 1e-4, 0x1p-145};
}

/* Everything a strategy computed for problem p against the oracle. */
static void check_all(checker *c, const problem *p, const outputs *o, const oracle *w,
                      const tolerances *tol)
{
    const clnorm_desc *d = &p->d;
    const clnorm_dtype t = d->dtype, pt = clnorm_elem_param_type(t);
    const size_t cols = d->cols;
    for (size_t i = 0; i < d->rows; i++) {
        double M = 0.0, gmax = 0.0;
        for (size_t j = 0; j < cols; j++) {
            M = fmax(M, fabs(input(p, i, j)));
            gmax = fmax(gmax, fabs(clnorm_elem_load(t, p->dy, i * cols + j) *
                                   clnorm_elem_load(pt, p->gamma, j)));
        }
        if (has_mean(d->kind))
            check(c, "mean", i, 0, clnorm_elem_load(pt, o->mean, i), w->mean[i], 1.0,
                  tol->mean * M + tol->tiny);
        check(c, "rstd", i, 0, clnorm_elem_load(pt, o->rstd, i), w->rstd[i], tol->rstd,
              w->rstd[i]);
        for (size_t j = 0; j < cols; j++) {
            const size_t k = i * cols + j;
            check(c, "y", i, j, clnorm_elem_load(t, o->y, k), w->y[k], tol->y,
                  1.0 + fabs(w->y[k]));
            check(c, "dx", i, j, clnorm_elem_load(t, o->dx, k), w->dx[k], tol->dx,
                  w->rstd[i] * gmax * (1.0 + fabs(w->xhat[k])));
        }
    }
    for (size_t j = 0; j < cols; j++) {
        double s = 0.0, sx = 0.0;
        for (size_t i = 0; i < d->rows; i++) {
            const double dy = fabs(clnorm_elem_load(t, p->dy, i * cols + j));
            s += dy;
            sx += dy * (1.0 + fabs(w->xhat[i * cols + j]));
        }
        check(c, "dgamma", PARAM_ROW, j, clnorm_elem_load(pt, o->dgamma, j), w->dgamma[j],
              tol->dparam, sx);
        check(c, "dbeta", PARAM_ROW, j, clnorm_elem_load(pt, o->dbeta, j), w->dbeta[j],
              tol->dparam, s);
    }
}

/* Row i of a row tensor in a and b: the same bits? */
static int same_row(const void *a, const void *b, size_t i, size_t cols, size_t es)
{
    return memcmp((const char *)a + i * cols * es, (const char *)b + i * cols * es, cols * es) ==
           0;
}

/*
 * One case: problem A (finite rows), problem B = A with an Inf and a NaN put into two of its
 * rows (bad[0], bad[1]). For every strategy: forward and backward of A against the oracle;
 * forward and backward (dx only: dgamma sums every row) of B, whose two poisoned rows must
 * match the oracle's NaN/Inf pattern and whose other rows must be A's bits exactly.
 */
static void run_case(suite *s, clnorm_kind kind, clnorm_dtype t, const row_spec *specs,
                     size_t rows, size_t cols, const size_t bad[2], uint64_t seed,
                     const clnorm_strategy *which, size_t nwhich)
{
    problem A, B;
    problem_make(&A, kind, t, specs, rows, cols, seed);
    problem_make(&B, kind, t, specs, rows, cols, seed);
    const size_t es = clnorm_elem_size(t);
    const clnorm_dtype pt = clnorm_elem_param_type(t);
    if (bad) {
        clnorm_elem_store(t, B.x, bad[0] * cols + cols / 2, INFINITY);
        clnorm_elem_store(t, B.x, bad[1] * cols + 1, NAN);
    }
    oracle wa, wb;
    oracle_make(&wa, &A);
    oracle_make(&wb, &B);
    const tolerances tol = tol_for(t, cols);
    outputs oa, ob;
    outputs_make(&oa, &A.d);
    outputs_make(&ob, &B.d);
    int fails = 0; /* over every strategy: one failing does not hide the others */
    for (size_t k = 0; k < nwhich; k++) {
        const clnorm_strategy st = which[k];
        clnorm_plan *plan = NULL;
        if (st != CLNORM_STRATEGY_REFERENCE) {
            if (!s->device || !(plan = plan_for(s, &A.d, st)))
                continue;
        }
        char label[128];
        snprintf(label, sizeof label, "%s %s %s %zux%zu", clnorm_strategy_name(st),
                 kind == CLNORM_LAYER ? "layer" : kind == CLNORM_RMS ? "rms"
                 : kind == CLNORM_ADD_LAYER ? "add_layer" : "add_rms",
                 t == CLNORM_F64 ? "f64" : "f32", rows, cols);
        checker c = {label, 0, 0};
        forward(plan, &A, &oa);
        backward(plan, &A, &oa, 1);
        check_all(&c, &A, &oa, &wa, &tol);
        if (bad) {
            forward(plan, &B, &ob);
            backward(plan, &B, &ob, 0);
            for (size_t i = 0; i < rows; i++) {
                if (i == bad[0] || i == bad[1]) {
                    if (has_mean(kind))
                        check(&c, "poisoned mean", i, 0, clnorm_elem_load(pt, ob.mean, i),
                              wb.mean[i], 1.0, tol.tiny);
                    check(&c, "poisoned rstd", i, 0, clnorm_elem_load(pt, ob.rstd, i),
                          wb.rstd[i], 1.0, tol.rstd * fabs(wb.rstd[i]) + tol.tiny);
                    for (size_t j = 0; j < cols; j++) {
                        const size_t q = i * cols + j;
                        check(&c, "poisoned y", i, j, clnorm_elem_load(t, ob.y, q), wb.y[q],
                              tol.y, 1.0 + fabs(wb.y[q]));
                        if (!isfinite(wb.dx[q]))
                            check(&c, "poisoned dx", i, j, clnorm_elem_load(t, ob.dx, q),
                                  wb.dx[q], 0.0, 0.0);
                    }
                } else if (!same_row(oa.y, ob.y, i, cols, es) ||
                           !same_row(oa.dx, ob.dx, i, cols, es)) {
                    c.rows |= UINT64_C(1) << i;
                    if (c.fails++ < 8)
                        print_error("%s: row %zu changed when rows %zu and %zu got an Inf and "
                                    "a NaN\n",
                                    label, i, bad[0], bad[1]);
                }
            }
        }
        clnorm_plan_free(plan);
        summary(&c);
        fails += c.fails;
    }
    assert_int_equal(fails, 0);
    outputs_free(&oa);
    outputs_free(&ob);
    oracle_free(&wa);
    oracle_free(&wb);
    problem_free(&A);
    problem_free(&B);
}

/* ---- the cases ---- */

/* float32: a short row (odd, so the vector loops have tails) of every kind of magnitude. */
static const row_spec f32_rows[] = {
    {GEN_NORMAL, 1.0, 0.5, 0, 0},      /* an ordinary row before the huge ones */
    {GEN_NORMAL, 1e19, 0.0, 0, 0},     /* squares just overflow float32 */
    {GEN_NORMAL, 1e30, 1.0, 0, 0},     /* gets the Inf in B */
    {GEN_UMAX, FLT_MAX / 4, 0, 0, 0},  /* gets the NaN in B */
    {GEN_MIXED, 1e30, 1e-30, 0, 0},    /* huge and tiny mixed, the shift tiny */
    {GEN_NORMAL, 1e30, 4.0, 0, 0},     /* a huge mean four times the spread */
    {GEN_NORMAL, 1e-40, 0.0, 0, 0},    /* float32 denormals */
    {GEN_OUTLIER, -1e35, 0, 0, 0},     /* a lone huge shift */
    {GEN_NORMAL, 2.0, 3.0, 0, 0},      /* an ordinary row after them */
};

/* float64: the same at float64's magnitudes. */
static const row_spec f64_rows[] = {
    {GEN_NORMAL, 1.0, 0.5, 0, 0},
    {GEN_NORMAL, 1e160, 0.0, 0, 0},
    {GEN_NORMAL, 1e300, 1.0, 0, 0},
    {GEN_UMAX, DBL_MAX / 4, 0, 0, 0},
    {GEN_MIXED, 1e300, 1e-300, 0, 0},
    {GEN_NORMAL, 1e300, 4.0, 0, 0},
    {GEN_NORMAL, 1e-310, 0.0, 0, 0},
    {GEN_OUTLIER, -1e305, 0, 0, 0},
    {GEN_NORMAL, 2.0, 3.0, 0, 0},
};

#define NROWS(a) (sizeof a / sizeof a[0])
static const size_t bad_rows[2] = {2, 3};

static void test_f32_layer(void **state)
{
    run_case(*state, CLNORM_LAYER, CLNORM_F32, f32_rows, NROWS(f32_rows), 67, bad_rows, 1,
             strategies, NUM_STRATEGIES);
}

static void test_f32_rms(void **state)
{
    run_case(*state, CLNORM_RMS, CLNORM_F32, f32_rows, NROWS(f32_rows), 67, bad_rows, 2,
             strategies, NUM_STRATEGIES);
}

static void test_f32_add_layer(void **state)
{
    run_case(*state, CLNORM_ADD_LAYER, CLNORM_F32, f32_rows, NROWS(f32_rows), 67, bad_rows, 3,
             strategies, NUM_STRATEGIES);
}

static void test_f64_layer(void **state)
{
    run_case(*state, CLNORM_LAYER, CLNORM_F64, f64_rows, NROWS(f64_rows), 67, bad_rows, 4,
             strategies, NUM_STRATEGIES);
}

static void test_f64_rms(void **state)
{
    run_case(*state, CLNORM_RMS, CLNORM_F64, f64_rows, NROWS(f64_rows), 67, bad_rows, 5,
             strategies, NUM_STRATEGIES);
}

/*
 * Long rows, which the split strategy cuts into several chunks on every device (on CPUs a
 * chunk holds at most 32768 columns; on GPUs a row this long gets several groups), with only
 * some chunks huge: at the start (the row's shift K huge too), in the middle, at the end, and
 * a lone huge first element, whose shift makes every later chunk's deviations huge although
 * its values are not. The row strategy takes the same rows as a control.
 */
static const row_spec long_rows[] = {
    {GEN_NORMAL, 1.0, 0.5, 0, 0},
    {GEN_CHUNK, 1e30, 0, 0.0, 0.1},
    {GEN_CHUNK, FLT_MAX / 4, 0, 0.45, 0.55},
    {GEN_CHUNK, 1e30, 0, 0.9, 1.0},
    {GEN_OUTLIER, 1e35, 0, 0, 0},
    {GEN_NORMAL, 1.0, 5.0, 0, 0},
};

static const clnorm_strategy long_strategies[] = {CLNORM_STRATEGY_SPLIT, CLNORM_STRATEGY_ROW,
                                                  CLNORM_STRATEGY_REFERENCE};

static void test_split_chunks_layer(void **state)
{
    run_case(*state, CLNORM_LAYER, CLNORM_F32, long_rows, NROWS(long_rows), 70001, NULL, 7,
             long_strategies, 3);
}

static void test_split_chunks_rms(void **state)
{
    run_case(*state, CLNORM_RMS, CLNORM_F32, long_rows, NROWS(long_rows), 70001, NULL, 8,
             long_strategies, 3);
}

static void test_split_chunks_add_layer(void **state)
{
    run_case(*state, CLNORM_ADD_LAYER, CLNORM_F32, long_rows, NROWS(long_rows), 70001, NULL, 9,
             long_strategies, 3);
}

/* The audit's example: [[1e20, 2e20, 3e20, 4e20]], no gamma or beta. The variance, 1.25e40,
 * is not a float32; the 0.1 kernels returned rstd = 0. */
static void test_audit_example(void **state)
{
    suite *s = *state;
    const float x[4] = {1e20f, 2e20f, 3e20f, 4e20f};
    const double want_layer[4] = {-1.3416407864998738, -0.4472135954999579, 0.4472135954999579,
                                  1.3416407864998738};
    for (int kind = CLNORM_LAYER; kind <= CLNORM_RMS; kind++) {
        clnorm_desc d;
        clnorm_desc_init(&d, (clnorm_kind)kind, 1, 4);
        d.flags = CLNORM_NO_GAMMA | CLNORM_NO_BETA;
        for (size_t k = 0; k < NUM_STRATEGIES; k++) {
            clnorm_plan *plan = NULL;
            if (strategies[k] != CLNORM_STRATEGY_REFERENCE &&
                (!s->device || !(plan = plan_for(s, &d, strategies[k]))))
                continue;
            float y[4];
            const clnorm_host_arg a[2] = {{CLNORM_ARG_X, (void *)x}, {CLNORM_ARG_Y, y}};
            assert_int_equal(execute(plan, &d, CLNORM_FORWARD, a, 2), CLNORM_OK);
            for (int j = 0; j < 4; j++) {
                /* RMSNorm: x / sqrt(mean(x^2)) = (1, 2, 3, 4) / sqrt(7.5) */
                const double want = kind == CLNORM_LAYER ? want_layer[j] : (j + 1) / sqrt(7.5);
                if (fabs(y[j] - want) > 1e-6)
                    print_error("%s %s: y[%d] = %.9g, want %.9g\n",
                                clnorm_strategy_name(strategies[k]),
                                kind == CLNORM_LAYER ? "layer" : "rms", j, y[j], want);
                assert_true(fabs(y[j] - want) <= 1e-6);
            }
            clnorm_plan_free(plan);
        }
    }
}

/* An argument is a cmocka skip pattern: the GPU-vector-width run leaves out the ADD cases,
 * whose programs no other suite builds at that width (a cold PoCL cache compiles each for
 * tens of seconds). */
int main(int argc, char **argv)
{
    if (argc > 1)
        cmocka_set_skip_filter(argv[1]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_audit_example),
        cmocka_unit_test(test_f32_layer),
        cmocka_unit_test(test_f32_rms),
        cmocka_unit_test(test_f32_add_layer),
        cmocka_unit_test(test_f64_layer),
        cmocka_unit_test(test_f64_rms),
        cmocka_unit_test(test_split_chunks_layer),
        cmocka_unit_test(test_split_chunks_rms),
        cmocka_unit_test(test_split_chunks_add_layer),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
