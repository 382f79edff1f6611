/*
 * grad_problem.c - backward problems in any dtype: inputs, reference gradients and the checks
 * of device answers (see grad_util.h).
 */
#include "grad_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gu_bwd_make(gu_bwd_problem *p, clnorm_dtype dtype, clnorm_kind kind, size_t rows,
                 size_t cols, size_t x_stride, size_t y_stride, unsigned flags, uint64_t seed,
                 double x_offset, double x_scale)
{
    memset(p, 0, sizeof *p);
    clnorm_desc_init(&p->desc, kind, rows, cols);
    p->desc.dtype = dtype;
    p->desc.x_stride = x_stride;
    p->desc.y_stride = y_stride;
    p->desc.flags = flags | CLNORM_WITH_BACKWARD;
    const clnorm_dtype T = dtype, P = gu_param_fmt(dtype);
    tu_rng rng;
    tu_rng_seed(&rng, seed);
    p->x = gu_make_input(&rng, T, rows, cols, tu_x_stride(&p->desc), x_offset, x_scale);
    p->dy = gu_make_input(&rng, T, rows, cols, tu_y_stride(&p->desc), 0.0, 1.0);
    if (!(flags & CLNORM_NO_GAMMA))
        p->gamma = gu_make_vector(&rng, P, cols, 1.0, 0.5);
    gu_bwd_reference(p);
}

unsigned gu_bwd_full_mask(const gu_bwd_problem *p)
{
    return CLNORM_GRAD_X | (p->desc.flags & CLNORM_NO_GAMMA ? 0u : CLNORM_GRAD_GAMMA) |
           (p->desc.flags & CLNORM_NO_BETA ? 0u : CLNORM_GRAD_BETA);
}

void gu_bwd_reference(gu_bwd_problem *p)
{
    const clnorm_desc *d = &p->desc;
    const clnorm_dtype T = d->dtype, P = gu_param_fmt(d->dtype);
    free(p->mean);
    free(p->rstd);
    free(p->dx_ref);
    free(p->dg_ref);
    free(p->db_ref);
    p->rstd = gu_alloc_sentinel(P, d->rows, 1);
    p->mean = d->kind == CLNORM_LAYER ? gu_alloc_sentinel(P, d->rows, 1) : NULL;

    /* The statistics of the reference forward (beta does not change them). */
    clnorm_desc fd = *d;
    fd.y_stride = 0;
    fd.flags = CLNORM_SAVE_STATS | CLNORM_NO_BETA | (d->flags & CLNORM_NO_GAMMA);
    void *y = gu_alloc_sentinel(T, d->rows * d->cols, 1);
    clnorm_status st = clnorm_ref_forward(&fd, p->x, y, p->gamma, NULL, p->mean, p->rstd);
    free(y);
    if (st != CLNORM_OK)
        fail_msg("clnorm_ref_forward(%s, %zu x %zu) = %d (%s)", gu_fmt_name(T), d->rows,
                 d->cols, st, clnorm_status_string(st));
    p->dx_ref = gu_alloc_sentinel(T, tu_extent(d->rows, d->cols, tu_x_stride(d)), 1);
    p->dg_ref = d->flags & CLNORM_NO_GAMMA ? NULL : gu_alloc_sentinel(P, d->cols, 1);
    p->db_ref = d->flags & CLNORM_NO_BETA ? NULL : gu_alloc_sentinel(P, d->cols, 1);
    st = clnorm_ref_backward(d, gu_bwd_full_mask(p), p->x, p->dy, p->mean, p->rstd, p->gamma,
                             p->dx_ref, p->dg_ref, p->db_ref);
    if (st != CLNORM_OK)
        fail_msg("clnorm_ref_backward(%s, %zu x %zu) = %d (%s)", gu_fmt_name(T), d->rows,
                 d->cols, st, clnorm_status_string(st));
}

void gu_bwd_free(gu_bwd_problem *p)
{
    free(p->x);
    free(p->dy);
    free(p->gamma);
    free(p->mean);
    free(p->rstd);
    free(p->dx_ref);
    free(p->dg_ref);
    free(p->db_ref);
    memset(p, 0, sizeof *p);
}

void gu_bwd_name(const gu_bwd_problem *p, clnorm_strategy s, unsigned mask, char *buf,
                 size_t size)
{
    const clnorm_desc *d = &p->desc;
    snprintf(buf, size, "%s %s %s %zux%zu strides %zu/%zu flags 0x%x mask %u",
             clnorm_strategy_name(s), gu_fmt_name(d->dtype),
             d->kind == CLNORM_RMS ? "rms" : "layer", d->rows, d->cols, tu_x_stride(d),
             tu_y_stride(d), d->flags, mask);
}

void gu_bwd_check(const gu_bwd_problem *p, unsigned mask, const void *dx, const void *dgamma,
                  const void *dbeta, const char *who)
{
    const clnorm_desc *d = &p->desc;
    const clnorm_dtype T = d->dtype, P = gu_param_fmt(d->dtype);
    const double tol = T == CLNORM_F64 ? 1e-12 : 1e-5;
    const size_t xs = tu_x_stride(d);
    char what[300];
    size_t bad = 0;
    if (mask & CLNORM_GRAD_X) {
        snprintf(what, sizeof what, "%s: dx", who);
        if (T == CLNORM_F16 || T == CLNORM_BF16)
            bad += gu_cmp_ulp(T, dx, xs, p->dx_ref, xs, d->rows, d->cols, 1.0, 1e-5, what);
        else
            bad += gu_cmp_norm(T, dx, xs, T, p->dx_ref, xs, d->rows, d->cols, tol, NULL, what);
    }
    if (mask & CLNORM_GRAD_GAMMA) {
        snprintf(what, sizeof what, "%s: dgamma", who);
        bad += gu_cmp_norm(P, dgamma, d->cols, P, p->dg_ref, d->cols, 1, d->cols, tol, NULL,
                           what);
    }
    if (mask & CLNORM_GRAD_BETA) {
        snprintf(what, sizeof what, "%s: dbeta", who);
        bad += gu_cmp_norm(P, dbeta, d->cols, P, p->db_ref, d->cols, 1, d->cols, tol, NULL,
                           what);
    }
    if (bad)
        fail_msg("%s: %zu mismatches against clnorm_ref_backward", who, bad);
}

void gu_bwd_run_cl(clnorm_ctx *ctx, const gu_bwd_problem *p, clnorm_plan *plan, unsigned mask,
                   const gu_bwd_launch *launch, void **dx_out, void **dg_out, void **db_out)
{
    const clnorm_desc *d = &p->desc;
    const clnorm_dtype T = d->dtype, P = gu_param_fmt(d->dtype);
    void *dx = mask & CLNORM_GRAD_X
                   ? gu_alloc_sentinel(T, tu_extent(d->rows, d->cols, tu_x_stride(d)), 1)
                   : NULL;
    void *dg = mask & CLNORM_GRAD_GAMMA ? gu_alloc_sentinel(P, d->cols, 1) : NULL;
    void *db = mask & CLNORM_GRAD_BETA ? gu_alloc_sentinel(P, d->cols, 1) : NULL;
    gu_backward_cl(ctx, plan, mask, launch, p->x, p->dy, p->mean, p->rstd, p->gamma, dx, dg, db);
    char who[300];
    gu_bwd_name(p, clnorm_plan_strategy(plan), mask, who, sizeof who);
    strncat(who, launch->in_place ? " (cl_mem, in place)" : " (cl_mem)",
            sizeof who - strlen(who) - 1);
    gu_bwd_check(p, mask, dx, dg, db, who);
    if (dx_out)
        *dx_out = dx;
    else
        free(dx);
    if (dg_out)
        *dg_out = dg;
    else
        free(dg);
    if (db_out)
        *db_out = db;
    else
        free(db);
}

void gu_bwd_run_host(clnorm_ctx *ctx, const gu_bwd_problem *p, clnorm_plan *plan,
                     unsigned mask, int in_place)
{
    const clnorm_desc *d = &p->desc;
    const clnorm_dtype T = d->dtype, P = gu_param_fmt(d->dtype);
    const size_t xs = tu_x_stride(d), ys = tu_y_stride(d);
    const size_t xn = tu_extent(d->rows, d->cols, xs), yn = tu_extent(d->rows, d->cols, ys);
    if (in_place)
        assert_int_equal(xs, ys);
    void *x = gu_dup(T, p->x, xn);
    void *dy = gu_dup(T, p->dy, yn);
    void *mean = p->mean ? gu_dup(P, p->mean, d->rows) : NULL;
    void *rstd = gu_dup(P, p->rstd, d->rows);
    void *gamma = p->gamma ? gu_dup(P, p->gamma, d->cols) : NULL;
    void *dx = NULL;
    if (mask & CLNORM_GRAD_X)
        dx = in_place ? dy : gu_alloc_sentinel(T, xn, 1);
    void *dg = mask & CLNORM_GRAD_GAMMA ? gu_alloc_sentinel(P, d->cols + TU_PAD, 1) : NULL;
    void *db = mask & CLNORM_GRAD_BETA ? gu_alloc_sentinel(P, d->cols + TU_PAD, 1) : NULL;

    char who[300];
    gu_bwd_name(p, clnorm_plan_strategy(plan), mask, who, sizeof who);
    strncat(who, in_place ? " (host, in place)" : " (host)", sizeof who - strlen(who) - 1);
    const clnorm_status st = clnorm_backward_host(plan, mask, x, dy, mean, rstd, gamma, dx, dg, db);
    if (st != CLNORM_OK)
        fail_msg("%s: clnorm_backward_host = %d (%s): %s", who, st, clnorm_status_string(st),
                 clnorm_last_error(ctx));
    size_t bad = 0;
    char what[340];
    snprintf(what, sizeof what, "%s: x (input modified)", who);
    bad += gu_cmp_exact(T, x, p->x, xn, what);
    if (!in_place || !(mask & CLNORM_GRAD_X)) {
        snprintf(what, sizeof what, "%s: dy (input modified)", who);
        bad += gu_cmp_exact(T, dy, p->dy, yn, what);
    }
    if (mean)
        bad += gu_cmp_exact(P, mean, p->mean, d->rows, "mean (input modified)");
    bad += gu_cmp_exact(P, rstd, p->rstd, d->rows, "rstd (input modified)");
    if (gamma)
        bad += gu_cmp_exact(P, gamma, p->gamma, d->cols, "gamma (input modified)");
    if (dx) {
        snprintf(what, sizeof what, "%s: dx gaps", who);
        bad += gu_count_gap_changed(T, dx, d->rows, d->cols, xs, !in_place, what);
    }
    const size_t ps = gu_size(P);
    if (dg) {
        snprintf(what, sizeof what, "%s: after dgamma", who);
        bad += gu_count_changed(P, (char *)dg + d->cols * ps, TU_PAD, 1, what);
    }
    if (db) {
        snprintf(what, sizeof what, "%s: after dbeta", who);
        bad += gu_count_changed(P, (char *)db + d->cols * ps, TU_PAD, 1, what);
    }
    if (bad)
        fail_msg("%s: %zu elements around the outputs or of the inputs were modified", who, bad);
    gu_bwd_check(p, mask, dx, dg, db, who);
    free(x);
    free(dy);
    free(mean);
    free(rstd);
    free(gamma);
    if (dx != dy)
        free(dx);
    free(dg);
    free(db);
}

/* ------------------------------------------------------------------------------------------ */
/* Forward problems                                                                            */

void gu_fwd_make(gu_fwd_problem *p, clnorm_dtype dtype, clnorm_kind kind, size_t rows,
                 size_t cols, size_t x_stride, size_t y_stride, unsigned flags, uint64_t seed)
{
    memset(p, 0, sizeof *p);
    clnorm_desc_init(&p->desc, kind, rows, cols);
    p->desc.dtype = dtype;
    p->desc.x_stride = x_stride;
    p->desc.y_stride = y_stride;
    p->desc.flags = flags;
    const clnorm_dtype P = gu_param_fmt(dtype);
    tu_rng rng;
    tu_rng_seed(&rng, seed);
    p->x = gu_make_input(&rng, dtype, rows, cols, tu_x_stride(&p->desc), 0.3, 1.0);
    if (!(flags & CLNORM_NO_GAMMA))
        p->gamma = gu_make_vector(&rng, P, cols, 1.0, 0.5);
    if (!(flags & CLNORM_NO_BETA))
        p->beta = gu_make_vector(&rng, P, cols, 0.0, 0.5);
    gu_fwd_reference(p);
}

void gu_fwd_reference(gu_fwd_problem *p)
{
    const clnorm_desc *d = &p->desc;
    const clnorm_dtype T = d->dtype, P = gu_param_fmt(d->dtype);
    free(p->y_ref);
    free(p->mean_ref);
    free(p->rstd_ref);
    p->y_ref = gu_alloc_sentinel(T, d->rows * d->cols, 1);
    p->mean_ref = gu_alloc_sentinel(P, d->rows, 1);
    p->rstd_ref = gu_alloc_sentinel(P, d->rows, 1);
    clnorm_desc rd = *d;
    rd.y_stride = 0;
    rd.flags |= CLNORM_SAVE_STATS;
    const clnorm_status st =
        clnorm_ref_forward(&rd, p->x, p->y_ref, p->gamma, p->beta,
                           d->kind == CLNORM_LAYER ? p->mean_ref : NULL, p->rstd_ref);
    if (st != CLNORM_OK)
        fail_msg("clnorm_ref_forward(%s, %zu x %zu) = %d (%s)", gu_fmt_name(T), d->rows,
                 d->cols, st, clnorm_status_string(st));
}

void gu_fwd_free(gu_fwd_problem *p)
{
    free(p->x);
    free(p->gamma);
    free(p->beta);
    free(p->y_ref);
    free(p->mean_ref);
    free(p->rstd_ref);
    memset(p, 0, sizeof *p);
}

void gu_fwd_check(const gu_fwd_problem *p, const void *y, const void *mean, const void *rstd,
                  const char *who)
{
    const clnorm_desc *d = &p->desc;
    const clnorm_dtype T = d->dtype, P = gu_param_fmt(d->dtype);
    const double tol = T == CLNORM_F64 ? 1e-12 : 1e-5;
    const size_t ys = tu_y_stride(d);
    char what[300];
    size_t bad = 0;
    snprintf(what, sizeof what, "%s: y", who);
    if (T == CLNORM_F16 || T == CLNORM_BF16)
        bad += gu_cmp_ulp(T, y, ys, p->y_ref, d->cols, d->rows, d->cols, 1.0, 1e-5, what);
    else
        bad += gu_cmp_norm(T, y, ys, T, p->y_ref, d->cols, d->rows, d->cols, tol, NULL, what);
    if (rstd) {
        snprintf(what, sizeof what, "%s: rstd", who);
        bad += gu_cmp_norm(P, rstd, 1, P, p->rstd_ref, 1, d->rows, 1, tol, NULL, what);
    }
    if (mean && d->kind == CLNORM_LAYER) {
        snprintf(what, sizeof what, "%s: mean", who);
        bad += gu_cmp_norm(P, mean, 1, P, p->mean_ref, 1, d->rows, 1, tol, NULL, what);
    }
    if (bad)
        fail_msg("%s: %zu mismatches against clnorm_ref_forward", who, bad);
}

static void fwd_name(const gu_fwd_problem *p, clnorm_strategy s, const char *how, char *buf,
                     size_t size)
{
    const clnorm_desc *d = &p->desc;
    snprintf(buf, size, "forward %s %s %s %zux%zu strides %zu/%zu flags 0x%x (%s)",
             clnorm_strategy_name(s), gu_fmt_name(d->dtype),
             d->kind == CLNORM_RMS ? "rms" : "layer", d->rows, d->cols, tu_x_stride(d),
             tu_y_stride(d), d->flags, how);
}

void gu_fwd_run_cl(clnorm_ctx *ctx, const gu_fwd_problem *p, clnorm_plan *plan,
                   const tu_launch *launch, void **y_out)
{
    const clnorm_desc *d = &p->desc;
    const clnorm_dtype T = d->dtype, P = gu_param_fmt(d->dtype);
    const int stats = (d->flags & CLNORM_SAVE_STATS) != 0;
    void *y = gu_alloc_sentinel(T, tu_extent(d->rows, d->cols, tu_y_stride(d)), 1);
    void *mean = gu_alloc_sentinel(P, d->rows, 1), *rstd = gu_alloc_sentinel(P, d->rows, 1);
    gu_forward_cl(ctx, plan, launch, p->x, p->gamma, p->beta, y, stats ? mean : NULL,
                  stats ? rstd : NULL);
    char who[300];
    fwd_name(p, clnorm_plan_strategy(plan), launch->in_place ? "cl_mem, in place" : "cl_mem",
             who, sizeof who);
    gu_fwd_check(p, y, stats ? mean : NULL, stats ? rstd : NULL, who);
    free(mean);
    free(rstd);
    if (y_out)
        *y_out = y;
    else
        free(y);
}

void gu_fwd_run_host(clnorm_ctx *ctx, const gu_fwd_problem *p, clnorm_plan *plan, int in_place,
                     void **y_out)
{
    const clnorm_desc *d = &p->desc;
    const clnorm_dtype T = d->dtype, P = gu_param_fmt(d->dtype);
    const int stats = (d->flags & CLNORM_SAVE_STATS) != 0;
    const size_t xs = tu_x_stride(d), ys = tu_y_stride(d);
    const size_t xn = tu_extent(d->rows, d->cols, xs), yn = tu_extent(d->rows, d->cols, ys);
    void *x = gu_dup(T, p->x, xn);
    void *y = in_place ? x : gu_alloc_sentinel(T, yn, 1);
    void *mean = gu_alloc_sentinel(P, d->rows + TU_PAD, 1);
    void *rstd = gu_alloc_sentinel(P, d->rows + TU_PAD, 1);
    char who[300];
    fwd_name(p, clnorm_plan_strategy(plan), in_place ? "host, in place" : "host", who,
             sizeof who);
    const clnorm_status st =
        clnorm_forward_host(plan, x, y, p->gamma, p->beta,
                            stats && d->kind == CLNORM_LAYER ? mean : NULL, stats ? rstd : NULL);
    if (st != CLNORM_OK)
        fail_msg("%s: clnorm_forward_host = %d (%s): %s", who, st, clnorm_status_string(st),
                 clnorm_last_error(ctx));
    size_t bad = gu_count_gap_changed(T, y, d->rows, d->cols, ys, !in_place, who);
    if (!in_place)
        bad += gu_cmp_exact(T, x, p->x, xn, "x (input modified)");
    bad += gu_count_changed(P, (char *)mean + d->rows * gu_size(P), TU_PAD, 1, "after mean");
    bad += gu_count_changed(P, (char *)rstd + d->rows * gu_size(P), TU_PAD, 1, "after rstd");
    if (bad)
        fail_msg("%s: %zu elements around the outputs or of the inputs were modified", who, bad);
    gu_fwd_check(p, y, stats ? mean : NULL, stats ? rstd : NULL, who);
    free(mean);
    free(rstd);
    if (y != x)
        free(x);
    if (y_out)
        *y_out = y;
    else
        free(y);
}
