/*
 * test_backward_errors.c - every error path of the backward pass: clnorm_backward (cl_mem),
 * clnorm_backward_host and clnorm_ref_backward. Each failing call must return the documented
 * status, leave a message in clnorm_last_error and write nothing (dx, dgamma and dbeta keep
 * their sentinels). After the failures the same arguments, corrected, must succeed.
 */
#include "tu_problem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ALL_GRADS (CLNORM_GRAD_X | CLNORM_GRAD_GAMMA | CLNORM_GRAD_BETA)

static clnorm_ctx *g_ctx;

/* A float32 backward problem, N(0.3, 1) data, statistics of the reference forward. */
static void make(tu_problem *p, clnorm_kind kind, size_t xs, size_t ys, uint64_t seed)
{
    clnorm_desc d;
    clnorm_desc_init(&d, kind, 5, 33);
    d.x_stride = xs;
    d.y_stride = ys;
    d.flags = CLNORM_WITH_BACKWARD;
    tu_problem_make(p, &d, CLNORM_BACKWARD, TU_ALL_OPTIONAL, seed, NULL);
}

#define PX(q) ((q)->in.p[CLNORM_ARG_X])
#define PDY(q) ((q)->in.p[CLNORM_ARG_DY])
#define PMEAN(q) ((q)->in.p[CLNORM_ARG_MEAN])
#define PRSTD(q) ((q)->in.p[CLNORM_ARG_RSTD])
#define PGAMMA(q) ((q)->in.p[CLNORM_ARG_GAMMA])

/* ------------------------------------------------------------------------------------------ */
/* cl_mem arguments                                                                            */

enum { T_X, T_DY, T_MEAN, T_RSTD, T_GAMMA, T_DX, T_DG, T_DB, T_COUNT };
static const char *const tensor_names[T_COUNT] = {"x",     "dy", "mean",   "rstd",
                                                  "gamma", "dx", "dgamma", "dbeta"};

typedef struct {
    unsigned mask;
    cl_mem mem[T_COUNT];
    size_t off[T_COUNT];
    cl_uint nwait;
    const cl_event *wait;
} bargs;

/* A valid call's buffers: every tensor in its own cl_mem of exactly offset + extent floats. */
typedef struct {
    tu_problem p;
    size_t n[T_COUNT];      /* extent of each tensor */
    float *host[T_COUNT];   /* its contents (outputs: sentinels) */
    bargs ok;               /* the valid call */
} fixture;

static cl_mem make_mem(const float *data, size_t off, size_t n, size_t shorten)
{
    const size_t total = off + n - shorten;
    float *buf = tu_alloc_filled(total, TU_SENTINEL_OUT_BITS);
    if (data)
        memcpy(buf + off, data, (n - shorten) * sizeof *buf);
    cl_mem m = tu_buffer(clnorm_get_cl_context(g_ctx), clnorm_get_queue(g_ctx), buf, total, 0);
    free(buf);
    return m;
}

static void fixture_make(fixture *f, clnorm_kind kind, size_t xs, size_t ys)
{
    memset(f, 0, sizeof *f);
    make(&f->p, kind, xs, ys, 42);
    const clnorm_desc *d = &f->p.desc;
    const size_t xn = tu_extent(d->rows, d->cols, tu_x_stride(d));
    const size_t yn = tu_extent(d->rows, d->cols, tu_y_stride(d));
    const size_t n[T_COUNT] = {xn, yn, d->rows, d->rows, d->cols, xn, d->cols, d->cols};
    float *host[T_COUNT] = {PX(&f->p), PDY(&f->p), PMEAN(&f->p), PRSTD(&f->p), PGAMMA(&f->p),
                             NULL, NULL, NULL};
    const tu_launch l = tu_launch_offsets();
    const size_t off[T_COUNT] = {l.off[CLNORM_ARG_X],      l.off[CLNORM_ARG_DY],
                                 l.off[CLNORM_ARG_MEAN],   l.off[CLNORM_ARG_RSTD],
                                 l.off[CLNORM_ARG_GAMMA],  l.off[CLNORM_ARG_DX],
                                 l.off[CLNORM_ARG_DGAMMA], l.off[CLNORM_ARG_DBETA]};
    f->ok.mask = ALL_GRADS;
    for (int t = 0; t < T_COUNT; t++) {
        f->n[t] = n[t];
        f->host[t] = host[t];
        f->ok.off[t] = off[t];
        if (t == T_MEAN && kind == CLNORM_RMS)
            continue;
        f->ok.mem[t] = make_mem(host[t], off[t], n[t], 0);
    }
}

static void fixture_free(fixture *f)
{
    for (int t = 0; t < T_COUNT; t++)
        if (f->ok.mem[t])
            clReleaseMemObject(f->ok.mem[t]);
    tu_problem_free(&f->p);
}

static clnorm_status call(clnorm_plan *plan, const bargs *a)
{
    cl_event ev = NULL;
    const cl_mem *m = a->mem;
    const size_t *o = a->off;
    const clnorm_status st = clnorm_backward(
        plan, a->mask, m[T_X], o[T_X], m[T_DY], o[T_DY], m[T_MEAN], o[T_MEAN], m[T_RSTD],
        o[T_RSTD], m[T_GAMMA], o[T_GAMMA], m[T_DX], o[T_DX], m[T_DG], o[T_DG], m[T_DB], o[T_DB],
        NULL, a->nwait, a->wait, &ev);
    if (ev) {
        clWaitForEvents(1, &ev);
        clReleaseEvent(ev);
    }
    clFinish(clnorm_get_queue(g_ctx));
    return st;
}

/* The outputs of the fixture still hold nothing but sentinels. */
static void check_untouched(const fixture *f, const char *what)
{
    size_t bad = 0;
    for (int t = T_DX; t <= T_DB; t++) {
        const size_t total = f->ok.off[t] + f->n[t];
        float *buf = tu_alloc_filled(total, 0);
        tu_read(clnorm_get_queue(g_ctx), f->ok.mem[t], buf, total);
        char label[200];
        snprintf(label, sizeof label, "%s: %s", what, tensor_names[t]);
        bad += tu_count_not_bits(buf, total, TU_SENTINEL_OUT_BITS, label);
        free(buf);
    }
    if (bad)
        fail_msg("%s: a failing call wrote %zu output elements", what, bad);
}

static void expect(clnorm_plan *plan, const fixture *f, const bargs *a, clnorm_status want,
                   const char *what)
{
    const clnorm_status st = call(plan, a);
    if (st != want)
        fail_msg("%s: clnorm_backward = %d (%s), expected %d (%s); last error: %s", what, st,
                 clnorm_status_string(st), want, clnorm_status_string(want),
                 clnorm_last_error(g_ctx));
    if (clnorm_last_error(g_ctx)[0] == '\0')
        fail_msg("%s: no message in clnorm_last_error", what);
    check_untouched(f, what);
}

static clnorm_plan *plan_for(const clnorm_desc *d)
{
    return tu_plan(g_ctx, d, CLNORM_STRATEGY_AUTO);
}

/* Bad arguments on a valid plan, LayerNorm and RMSNorm. */
static void test_cl_arguments(void **state)
{
    (void)state;
    if (!tu_has_device(g_ctx))
        skip();
    for (int kind = 0; kind < 2; kind++) {
        fixture f;
        fixture_make(&f, (clnorm_kind)kind, 0, 0);
        clnorm_plan *plan = plan_for(&f.p.desc);
        bargs a;
        static const unsigned bad_masks[] = {8u, 0x10u, 0x80000000u, ALL_GRADS | 8u};
        for (size_t i = 0; i < sizeof bad_masks / sizeof bad_masks[0]; i++) {
            a = f.ok;
            a.mask = bad_masks[i];
            expect(plan, &f, &a, CLNORM_INVALID_ARGUMENT, "unknown mask bits");
        }
        a = f.ok;
        a.mask = CLNORM_GRAD_GAMMA | CLNORM_GRAD_BETA;
        expect(plan, &f, &a, CLNORM_INVALID_ARGUMENT, "dx given without CLNORM_GRAD_X");
        a = f.ok;
        a.mem[T_DX] = NULL;
        expect(plan, &f, &a, CLNORM_INVALID_ARGUMENT, "dx NULL with CLNORM_GRAD_X");
        a = f.ok;
        a.mask = CLNORM_GRAD_X | CLNORM_GRAD_BETA;
        expect(plan, &f, &a, CLNORM_INVALID_ARGUMENT, "dgamma given without CLNORM_GRAD_GAMMA");
        a = f.ok;
        a.mem[T_DB] = NULL;
        expect(plan, &f, &a, CLNORM_INVALID_ARGUMENT, "dbeta NULL with CLNORM_GRAD_BETA");
        a = f.ok;
        if (kind == CLNORM_LAYER) { /* one saved statistic without the other */
            a.mem[T_RSTD] = NULL;
            expect(plan, &f, &a, CLNORM_INVALID_ARGUMENT, "rstd NULL, mean given");
        }
        a = f.ok;
        a.mem[T_X] = NULL;
        expect(plan, &f, &a, CLNORM_INVALID_ARGUMENT, "x NULL");
        a = f.ok;
        a.mem[T_DY] = NULL;
        expect(plan, &f, &a, CLNORM_INVALID_ARGUMENT, "dy NULL");
        a = f.ok;
        a.mem[T_GAMMA] = NULL;
        expect(plan, &f, &a, CLNORM_INVALID_ARGUMENT, "gamma NULL on a plan with gamma");
        a = f.ok;
        if (kind == CLNORM_RMS) {
            a.mem[T_MEAN] = a.mem[T_RSTD];
            expect(plan, &f, &a, CLNORM_INVALID_ARGUMENT, "mean given for RMSNorm");
        } else {
            a.mem[T_MEAN] = NULL;
            expect(plan, &f, &a, CLNORM_INVALID_ARGUMENT, "mean NULL for LayerNorm");
        }
        a = f.ok;
        a.nwait = 1;
        expect(plan, &f, &a, CLNORM_INVALID_ARGUMENT, "num_wait_events 1, wait_events NULL");
        /* dx overlapping dy in the same cl_mem without being in place */
        a = f.ok;
        a.mem[T_DX] = a.mem[T_DY];
        a.off[T_DX] = a.off[T_DY] - 1;
        expect(plan, &f, &a, CLNORM_INVALID_ARGUMENT, "dx overlapping dy");

        /* Each tensor one element short: CLNORM_BUFFER_TOO_SMALL, nothing written. */
        for (int t = 0; t < T_COUNT; t++) {
            if (f.ok.mem[t] == NULL)
                continue;
            a = f.ok;
            a.mem[t] = make_mem(f.host[t], f.ok.off[t], f.n[t], 1);
            char what[100];
            snprintf(what, sizeof what, "%s one element short", tensor_names[t]);
            expect(plan, &f, &a, CLNORM_BUFFER_TOO_SMALL, what);
            if (t >= T_DX) {
                /* the short output itself was not written either */
                const size_t total = f.ok.off[t] + f.n[t] - 1;
                float *buf = tu_alloc_filled(total, 0);
                tu_read(clnorm_get_queue(g_ctx), a.mem[t], buf, total);
                const size_t bad = tu_count_not_bits(buf, total, TU_SENTINEL_OUT_BITS, what);
                free(buf);
                if (bad)
                    fail_msg("%s: the failing call wrote %zu elements of it", what, bad);
            }
            /* the same through an offset one past what fits */
            const cl_mem small = a.mem[t];
            a.mem[t] = f.ok.mem[t];
            a.off[t] = f.ok.off[t] + 1;
            snprintf(what, sizeof what, "%s offset one too far", tensor_names[t]);
            expect(plan, &f, &a, CLNORM_BUFFER_TOO_SMALL, what);
            clReleaseMemObject(small);
        }

        /* The corrected call works on the same plan. */
        assert_int_equal(call(plan, &f.ok), CLNORM_OK);
        clnorm_plan_free(plan);
        fixture_free(&f);
    }
}

/* Plans that cannot take the call: no CLNORM_WITH_BACKWARD, no gamma, no beta, in place with
 * different strides. */
static void test_cl_plans(void **state)
{
    (void)state;
    if (!tu_has_device(g_ctx))
        skip();
    fixture f;
    fixture_make(&f, CLNORM_LAYER, 40, 36);
    clnorm_desc d = f.p.desc;
    bargs a = f.ok;

    d.flags &= ~(unsigned)CLNORM_WITH_BACKWARD;
    for (int i = 0; i < TU_NUM_STRATEGIES; i++) {
        clnorm_plan *plan = tu_plan_if(g_ctx, &d, tu_strategies[i]);
        if (plan == NULL)
            continue;
        expect(plan, &f, &a, CLNORM_INVALID_ARGUMENT, "plan without CLNORM_WITH_BACKWARD");
        clnorm_plan_free(plan);
    }

    d = f.p.desc;
    d.flags |= CLNORM_NO_GAMMA;
    clnorm_plan *plan = plan_for(&d);
    a = f.ok;
    a.mem[T_GAMMA] = NULL;
    expect(plan, &f, &a, CLNORM_INVALID_ARGUMENT, "CLNORM_GRAD_GAMMA on a NO_GAMMA plan");
    a = f.ok;
    a.mask = CLNORM_GRAD_X | CLNORM_GRAD_BETA;
    a.mem[T_DG] = NULL;
    expect(plan, &f, &a, CLNORM_INVALID_ARGUMENT, "gamma given to a NO_GAMMA plan");
    clnorm_plan_free(plan);

    d = f.p.desc;
    d.flags |= CLNORM_NO_BETA;
    plan = plan_for(&d);
    expect(plan, &f, &f.ok, CLNORM_INVALID_ARGUMENT, "CLNORM_GRAD_BETA on a NO_BETA plan");
    clnorm_plan_free(plan);

    /* dx in place of dy (same cl_mem and offset) while x_stride 40 != y_stride 36 */
    plan = plan_for(&f.p.desc);
    a = f.ok;
    a.mem[T_DX] = a.mem[T_DY];
    a.off[T_DX] = a.off[T_DY];
    expect(plan, &f, &a, CLNORM_INVALID_ARGUMENT, "dx in place of dy with other strides");
    assert_int_equal(call(plan, &f.ok), CLNORM_OK);
    clnorm_plan_free(plan);
    fixture_free(&f);
}

/* ------------------------------------------------------------------------------------------ */
/* Host pointers and the reference                                                             */

typedef struct {
    unsigned mask;
    const void *x, *dy, *mean, *rstd, *gamma;
    void *dx, *dg, *db;
} hargs;

/* Runs a host call (plan) or the reference (plan NULL, desc d) and checks status and that
 * the outputs kept their sentinels. */
static void expect_host(clnorm_plan *plan, const clnorm_desc *d, const hargs *a, size_t xn,
                        clnorm_status want, const char *what)
{
    const clnorm_status st =
        plan ? clnorm_backward_host(plan, a->mask, a->x, a->dy, a->mean, a->rstd, a->gamma,
                                    a->dx, a->dg, a->db)
             : clnorm_ref_backward(d, a->mask, a->x, a->dy, a->mean, a->rstd, a->gamma, a->dx,
                                   a->dg, a->db);
    const char *fn = plan ? "clnorm_backward_host" : "clnorm_ref_backward";
    if (st != want)
        fail_msg("%s: %s = %d (%s), expected %d (%s)%s%s", what, fn, st,
                 clnorm_status_string(st), want, clnorm_status_string(want),
                 plan ? "; last error: " : "", plan ? clnorm_last_error(g_ctx) : "");
    if (plan && clnorm_last_error(g_ctx)[0] == '\0')
        fail_msg("%s: no message in clnorm_last_error", what);
    size_t bad = 0;
    if (a->dx && a->dx != a->dy)
        bad += tu_count_not_bits(a->dx, xn, TU_SENTINEL_OUT_BITS, "dx");
    if (a->dg)
        bad += tu_count_not_bits(a->dg, d->cols, TU_SENTINEL_OUT_BITS, "dgamma");
    if (a->db)
        bad += tu_count_not_bits(a->db, d->cols, TU_SENTINEL_OUT_BITS, "dbeta");
    if (bad)
        fail_msg("%s: failing %s wrote %zu output elements", what, fn, bad);
}

/* The same argument errors through the host layer (plan) or the reference (plan NULL). */
static void host_arguments(clnorm_plan *plan, const tu_problem *p)
{
    const clnorm_desc *d = &p->desc;
    const size_t xn = tu_extent(d->rows, d->cols, tu_x_stride(d));
    float *dx = tu_alloc_filled(xn, TU_SENTINEL_OUT_BITS);
    float *dg = tu_alloc_filled(d->cols, TU_SENTINEL_OUT_BITS);
    float *db = tu_alloc_filled(d->cols, TU_SENTINEL_OUT_BITS);
    const hargs ok = {ALL_GRADS, PX(p), PDY(p), PMEAN(p), PRSTD(p), PGAMMA(p), dx, dg, db};
    hargs a = ok;
    a.mask = 8u;
    expect_host(plan, d, &a, xn, CLNORM_INVALID_ARGUMENT, "unknown mask bit");
    a = ok;
    a.mask = CLNORM_GRAD_GAMMA | CLNORM_GRAD_BETA;
    expect_host(plan, d, &a, xn, CLNORM_INVALID_ARGUMENT, "dx without CLNORM_GRAD_X");
    a = ok;
    a.dx = NULL;
    expect_host(plan, d, &a, xn, CLNORM_INVALID_ARGUMENT, "dx NULL with CLNORM_GRAD_X");
    a = ok;
    a.dg = NULL;
    expect_host(plan, d, &a, xn, CLNORM_INVALID_ARGUMENT, "dgamma NULL with GRAD_GAMMA");
    a = ok;
    if (d->kind == CLNORM_LAYER) { /* one saved statistic without the other */
        a.rstd = NULL;
        expect_host(plan, d, &a, xn, CLNORM_INVALID_ARGUMENT, "rstd NULL, mean given");
    }
    a = ok;
    a.x = NULL;
    expect_host(plan, d, &a, xn, CLNORM_INVALID_ARGUMENT, "x NULL");
    a = ok;
    a.gamma = NULL;
    expect_host(plan, d, &a, xn, CLNORM_INVALID_ARGUMENT, "gamma NULL");
    a = ok;
    if (d->kind == CLNORM_RMS) {
        a.mean = PRSTD(p);
        expect_host(plan, d, &a, xn, CLNORM_INVALID_ARGUMENT, "mean given for RMSNorm");
    } else {
        a.mean = NULL;
        expect_host(plan, d, &a, xn, CLNORM_INVALID_ARGUMENT, "mean NULL for LayerNorm");
    }
    free(dx);
    free(dg);
    free(db);
}

static void test_host_arguments(void **state)
{
    (void)state;
    for (int kind = 0; kind < 2; kind++) {
        tu_problem p;
        make(&p, (clnorm_kind)kind, 0, 0, 7);
        host_arguments(NULL, &p);
        if (g_ctx != NULL) {
            clnorm_plan *plan = plan_for(&p.desc);
            host_arguments(plan, &p);
            clnorm_plan_free(plan);
        }
        tu_problem_free(&p);
    }
}

/* Plan-level errors through the host layer and the reference. */
static void test_host_plans(void **state)
{
    (void)state;
    tu_problem p;
    make(&p, CLNORM_LAYER, 40, 36, 9);
    const clnorm_desc *d = &p.desc;
    const size_t xn = tu_extent(d->rows, d->cols, 40);
    float *dx = tu_alloc_filled(xn, TU_SENTINEL_OUT_BITS);
    float *dg = tu_alloc_filled(d->cols, TU_SENTINEL_OUT_BITS);
    float *db = tu_alloc_filled(d->cols, TU_SENTINEL_OUT_BITS);
    const hargs ok = {ALL_GRADS, PX(&p), PDY(&p), PMEAN(&p), PRSTD(&p), PGAMMA(&p), dx, dg, db};

    /* dx in place of dy with x_stride 40 != y_stride 36: the reference and the host layer */
    float *dy = tu_dup(CLNORM_F32, PDY(&p), tu_extent(d->rows, d->cols, 36));
    hargs a = ok;
    a.dy = dy;
    a.dx = dy;
    expect_host(NULL, d, &a, xn, CLNORM_INVALID_ARGUMENT, "dx in place of dy, other strides");
    if (g_ctx != NULL) {
        clnorm_plan *plan = plan_for(d);
        expect_host(plan, d, &a, xn, CLNORM_INVALID_ARGUMENT, "dx in place of dy, other strides");
        assert_int_equal(tu_cmp_exact(CLNORM_F32, dy, PDY(&p), tu_extent(d->rows, d->cols, 36),
                                      "dy after the failed in-place call"),
                         0);
        clnorm_plan_free(plan);
    }
    free(dy);

    clnorm_desc nd = *d;
    nd.flags |= CLNORM_NO_GAMMA;
    a = ok;
    a.gamma = NULL;
    expect_host(NULL, &nd, &a, xn, CLNORM_INVALID_ARGUMENT, "GRAD_GAMMA on a NO_GAMMA desc");
    nd = *d;
    nd.flags |= CLNORM_NO_BETA;
    expect_host(NULL, &nd, &ok, xn, CLNORM_INVALID_ARGUMENT, "GRAD_BETA on a NO_BETA desc");

    if (g_ctx != NULL) {
        /* No CLNORM_WITH_BACKWARD: refused by every plan, the reference strategy's included
         * (the header says the plan must have been created with it). */
        nd = *d;
        nd.flags &= ~(unsigned)CLNORM_WITH_BACKWARD;
        const clnorm_strategy all[] = {CLNORM_STRATEGY_AUTO, CLNORM_STRATEGY_ROW,
                                       CLNORM_STRATEGY_WORKGROUP, CLNORM_STRATEGY_SPLIT,
                                       CLNORM_STRATEGY_SUBGROUP, CLNORM_STRATEGY_REFERENCE};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
            if (!tu_has_device(g_ctx) && all[i] != CLNORM_STRATEGY_AUTO &&
                all[i] != CLNORM_STRATEGY_REFERENCE)
                continue;
            clnorm_plan *plan = tu_plan_if(g_ctx, &nd, all[i]);
            if (plan == NULL)
                continue;
            char what[100];
            snprintf(what, sizeof what, "%s plan without CLNORM_WITH_BACKWARD",
                     clnorm_strategy_name(clnorm_plan_strategy(plan)));
            expect_host(plan, &nd, &ok, xn, CLNORM_INVALID_ARGUMENT, what);
            clnorm_plan_free(plan);
        }
    }
    free(dx);
    free(dg);
    free(db);
    tu_problem_free(&p);
}

static int group_setup(void **state)
{
    (void)state;
    g_ctx = tu_context("backward errors");
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    clnorm_free(g_ctx);
    g_ctx = NULL;
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cl_arguments),
        cmocka_unit_test(test_cl_plans),
        cmocka_unit_test(test_host_arguments),
        cmocka_unit_test(test_host_plans),
    };
    return cmocka_run_group_tests_name("backward errors", tests, group_setup, group_teardown);
}
