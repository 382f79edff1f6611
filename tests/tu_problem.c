/*
 * tu_problem.c - see tu_problem.h.
 */
#include "tu_problem.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS CLNORM_ARG_SLOT_COUNT

tu_data tu_data_default(void)
{
    const tu_data d = {0.3, 1.0, -0.2, 1.0};
    return d;
}

unsigned tu_grad_slots(unsigned mask)
{
    return (mask & CLNORM_GRAD_X ? TU_SLOT(CLNORM_ARG_DX) : 0u) |
           (mask & CLNORM_GRAD_GAMMA ? TU_SLOT(CLNORM_ARG_DGAMMA) : 0u) |
           (mask & CLNORM_GRAD_BETA ? TU_SLOT(CLNORM_ARG_DBETA) : 0u);
}

unsigned tu_problem_outputs(const tu_problem *p)
{
    unsigned o = 0;
    for (unsigned s = 0; s < SLOTS; s++)
        if ((p->given & TU_SLOT(s)) && p->info[s].is_output)
            o |= TU_SLOT(s);
    return o;
}

void tu_args_free(tu_args *a)
{
    for (unsigned s = 0; s < SLOTS; s++) {
        free(a->p[s]);
        a->p[s] = NULL;
    }
}

/* Random contents of an input slot (see the header for the distributions). */
static void *make_input(tu_rng *rng, const clnorm_slot_info *info, clnorm_arg_slot s,
                        const tu_data *data)
{
    double off = 0.0, scale = 1.0;
    switch (s) {
    case CLNORM_ARG_X:
        off = data->x_offset;
        scale = data->x_scale;
        break;
    case CLNORM_ARG_RESIDUAL:
        off = data->r_offset;
        scale = data->r_scale;
        break;
    case CLNORM_ARG_GAMMA:
        off = 1.0;
        scale = 0.5;
        break;
    case CLNORM_ARG_BETA:
        scale = 0.5;
        break;
    default: break;
    }
    return tu_make_rows(rng, info->dtype, info->rows, info->cols, info->stride, off, scale);
}

/* Puts the elements of a row input on a grid of 2^-12 (values of the default data are below
 * 2^11, so 23 significant bits hold them). With x and the residual both on it, x + residual
 * is exact in float32, as it is in the reference's float64: without that a variance-free row
 * (one column) amplifies the float32 rounding of the sum by rstd = 1/sqrt(eps) ~ 316 into
 * xhat, and the saved-statistics gradients of the two become rounding noise of each other.
 * The sum's rounding itself is test_add_norm's (large offsets, mixed types). */
static void on_grid(const clnorm_slot_info *info, void *p)
{
    for (size_t r = 0; r < info->rows; r++)
        for (size_t c = 0; c < info->cols; c++) {
            const size_t i = r * info->stride + c;
            const double v = clnorm_elem_load(info->dtype, p, i);
            clnorm_elem_store(info->dtype, p, i, nearbyint(ldexp(v, 12)) * 0x1p-12);
        }
}

/* The saved statistics (and any other backward input the forward writes) from the reference
 * forward of the problem's data: the forward's inputs the backward lacks (beta) are made up,
 * they do not change what the forward writes for the backward. */
static void saved_inputs(tu_problem *p)
{
    if (p->desc.flags & CLNORM_USE_GLOBAL_STATS)
        return; /* the statistics are inputs of both directions: random like the others */
    clnorm_desc fd = p->desc;
    fd.flags |= CLNORM_SAVE_STATS;
    clnorm_slot_info fi[SLOTS];
    tu_slot_infos(&fd, CLNORM_FORWARD, fi);
    unsigned needed = 0;
    for (unsigned s = 0; s < SLOTS; s++)
        if ((p->given & TU_SLOT(s)) && !p->info[s].is_output && fi[s].is_output)
            needed |= TU_SLOT(s);
    if (!needed)
        return;
    tu_rng rng;
    tu_rng_seed(&rng, p->seed ^ UINT64_C(0x5A5A5A5A));
    tu_args a = {{NULL}}, own = {{NULL}};
    for (unsigned s = 0; s < SLOTS; s++) {
        if (fi[s].use == CLNORM_SLOT_UNUSED)
            continue;
        if (fi[s].is_output) {
            a.p[s] = own.p[s] = tu_alloc_sentinel(fi[s].dtype, fi[s].extent, 1);
        } else if (p->in.p[s] != NULL) {
            a.p[s] = p->in.p[s];
        } else if (fi[s].use == CLNORM_SLOT_REQUIRED) {
            a.p[s] = own.p[s] = make_input(&rng, &fi[s], (clnorm_arg_slot)s, &p->data);
        }
    }
    tu_run_host(NULL, NULL, &fd, CLNORM_FORWARD, &(tu_launch){{0}, {0}, 0, 0, 0}, &a);
    for (unsigned s = 0; s < SLOTS; s++) {
        if (!(needed & TU_SLOT(s)))
            continue;
        if (fi[s].extent != p->info[s].extent || fi[s].dtype != p->info[s].dtype)
            fail_msg("the forward's %s does not have the backward's layout",
                     clnorm_arg_name((clnorm_arg_slot)s));
        free(p->in.p[s]);
        p->in.p[s] = tu_dup(fi[s].dtype, a.p[s], fi[s].extent);
    }
    tu_args_free(&own);
}

void tu_problem_alloc_outputs(const tu_problem *p, unsigned outputs, tu_args *out)
{
    if (!outputs)
        outputs = tu_problem_outputs(p);
    memset(out, 0, sizeof *out);
    for (unsigned s = 0; s < SLOTS; s++)
        if ((outputs & TU_SLOT(s)) && (p->given & TU_SLOT(s)))
            out->p[s] = tu_alloc_sentinel(p->info[s].dtype, p->info[s].extent, 1);
}

void tu_problem_reference(tu_problem *p)
{
    if (p->dir == CLNORM_BACKWARD)
        saved_inputs(p);
    tu_args_free(&p->ref);
    tu_problem_alloc_outputs(p, 0, &p->ref);
    tu_args a = p->in;
    for (unsigned s = 0; s < SLOTS; s++)
        if (p->ref.p[s] != NULL)
            a.p[s] = p->ref.p[s];
    const tu_launch plain = {{0}, {0}, 0, 0, 0};
    tu_run_host(NULL, NULL, &p->desc, p->dir, &plain, &a);
}

void tu_problem_reference_from_x(tu_problem *p)
{
    tu_args a = p->in;
    for (unsigned s = 0; s < SLOTS; s++)
        if (p->ref.p[s] != NULL)
            a.p[s] = p->ref.p[s];
    a.p[CLNORM_ARG_MEAN] = a.p[CLNORM_ARG_RSTD] = NULL;
    const tu_launch plain = {{0}, {0}, 0, 0, 0};
    tu_run_host(NULL, NULL, &p->desc, p->dir, &plain, &a);
}

void tu_problem_make(tu_problem *p, const clnorm_desc *desc, clnorm_direction dir,
                     unsigned optional, uint64_t seed, const tu_data *data)
{
    memset(p, 0, sizeof *p);
    p->desc = *desc;
    p->dir = dir;
    p->seed = seed;
    p->data = data ? *data : tu_data_default();
    char msg[256] = "";
    if (clnorm_desc_check(desc, msg, sizeof msg) != CLNORM_OK)
        fail_msg("tu_problem_make: invalid description: %s", msg);
    tu_slot_infos(desc, dir, p->info);
    tu_rng rng;
    tu_rng_seed(&rng, seed);
    for (unsigned s = 0; s < SLOTS; s++) {
        const clnorm_slot_info *i = &p->info[s];
        if (i->use == CLNORM_SLOT_REQUIRED ||
            (i->use == CLNORM_SLOT_OPTIONAL && (optional & TU_SLOT(s))))
            p->given |= TU_SLOT(s);
        if ((p->given & TU_SLOT(s)) && !i->is_output)
            p->in.p[s] = make_input(&rng, i, (clnorm_arg_slot)s, &p->data);
    }
    const void *x = p->in.p[CLNORM_ARG_X], *res = p->in.p[CLNORM_ARG_RESIDUAL];
    if (x != NULL && res != NULL && fabs(p->data.x_offset) + 4 * p->data.x_scale < 1024 &&
        fabs(p->data.r_offset) + 4 * p->data.r_scale < 1024) {
        on_grid(&p->info[CLNORM_ARG_X], p->in.p[CLNORM_ARG_X]);
        on_grid(&p->info[CLNORM_ARG_RESIDUAL], p->in.p[CLNORM_ARG_RESIDUAL]);
    }
    tu_problem_reference(p);
}

void tu_problem_make_rows(tu_problem *p, clnorm_direction dir, clnorm_dtype dtype,
                          clnorm_kind kind, size_t rows, size_t cols, size_t x_stride,
                          size_t y_stride, unsigned flags, uint64_t seed, const tu_data *data)
{
    clnorm_desc d;
    clnorm_desc_init(&d, kind, rows, cols);
    d.dtype = dtype;
    d.x_stride = x_stride;
    d.y_stride = y_stride;
    d.flags = flags | (dir == CLNORM_BACKWARD ? CLNORM_WITH_BACKWARD : 0u);
    tu_problem_make(p, &d, dir, TU_ALL_OPTIONAL, seed, data);
}

void tu_problem_free(tu_problem *p)
{
    tu_args_free(&p->in);
    tu_args_free(&p->ref);
}

size_t tu_problem_compare(const tu_problem *p, const tu_args *got, unsigned outputs,
                          const char *who)
{
    if (!outputs)
        outputs = tu_problem_outputs(p);
    size_t bad = 0;
    char what[600];
    for (unsigned s = 0; s < SLOTS; s++) {
        if (!(outputs & TU_SLOT(s)) || p->ref.p[s] == NULL)
            continue;
        const clnorm_slot_info *i = &p->info[s];
        const clnorm_dtype t = i->dtype;
        snprintf(what, sizeof what, "%s: %s", who, clnorm_arg_name((clnorm_arg_slot)s));
        if (got->p[s] == NULL)
            fail_msg("%s: no answer to compare", what);
        if (t == CLNORM_F16 || t == CLNORM_BF16) {
            bad += tu_cmp_ulp(t, got->p[s], i->stride, p->ref.p[s], i->stride, i->rows, i->cols,
                              1.0, 1e-5, what);
        } else if (t == CLNORM_F64) {
            bad += tu_cmp_norm(t, got->p[s], i->stride, t, p->ref.p[s], i->stride, i->rows,
                               i->cols, 1e-12, NULL, what);
        } else {
            bad += tu_cmp_norm(t, got->p[s], i->stride, t, p->ref.p[s], i->stride, i->rows,
                               i->cols, 1e-5, NULL, what);
            if (p->dir == CLNORM_FORWARD)
                bad += tu_cmp_elem(t, got->p[s], i->stride, t, p->ref.p[s], i->stride, i->rows,
                                   i->cols, 2e-5, 2e-5, what);
        }
    }
    return bad;
}

void tu_problem_check(const tu_problem *p, const tu_args *got, unsigned outputs,
                      const char *who)
{
    const size_t bad = tu_problem_compare(p, got, outputs, who);
    if (bad)
        fail_msg("%s: %zu mismatches against clnorm_ref_execute", who, bad);
}

/* The arguments of a run: the inputs, and fresh outputs for `outputs`. */
static void run_args(const tu_problem *p, unsigned outputs, tu_args *res, tu_args *a)
{
    tu_problem_alloc_outputs(p, outputs, res);
    *a = p->in;
    for (unsigned s = 0; s < SLOTS; s++)
        if (res->p[s] != NULL)
            a->p[s] = res->p[s];
}

static void finish(const tu_problem *p, tu_args *res, unsigned outputs, tu_args *out,
                   const char *who)
{
    const size_t bad = tu_problem_compare(p, res, outputs, who);
    if (out)
        *out = *res;
    else
        tu_args_free(res);
    if (bad)
        fail_msg("%s: %zu mismatches against clnorm_ref_execute", who, bad);
}

static void who_of(const tu_problem *p, clnorm_strategy s, const tu_launch *l, const char *how,
                   char *buf, size_t size)
{
    tu_call_name(&p->desc, p->dir, s, buf, size);
    int in_place = 0;
    for (unsigned t = 0; t < SLOTS; t++)
        in_place |= l->alias[t] != 0;
    const size_t n = strlen(buf);
    snprintf(buf + n, size - n, " (%s%s%s)", how, l->v01 ? ", 0.1 call" : "",
             in_place ? ", in place" : "");
}

static size_t try_run(clnorm_ctx *ctx, const tu_problem *p, clnorm_plan *plan,
                      const tu_launch *l, unsigned outputs, int host)
{
    tu_args res, a;
    run_args(p, outputs, &res, &a);
    char who[600];
    if (host) {
        tu_run_host(ctx, plan, &p->desc, p->dir, l, &a);
        who_of(p, plan ? clnorm_plan_strategy(plan) : CLNORM_STRATEGY_REFERENCE, l, "host", who,
               sizeof who);
    } else {
        tu_run_cl(ctx, plan, p->dir, l, &a);
        who_of(p, clnorm_plan_strategy(plan), l, "cl_mem", who, sizeof who);
    }
    const size_t bad = tu_problem_compare(p, &res, outputs, who);
    if (bad)
        print_error("FAILED CASE: %s\n", who);
    tu_args_free(&res);
    return bad;
}

size_t tu_problem_try_cl(clnorm_ctx *ctx, const tu_problem *p, clnorm_plan *plan,
                         const tu_launch *l, unsigned outputs)
{
    return try_run(ctx, p, plan, l, outputs, 0);
}

size_t tu_problem_try_host(clnorm_ctx *ctx, const tu_problem *p, clnorm_plan *plan,
                           const tu_launch *l, unsigned outputs)
{
    return try_run(ctx, p, plan, l, outputs, 1);
}

void tu_problem_run_cl(clnorm_ctx *ctx, const tu_problem *p, clnorm_plan *plan,
                       const tu_launch *l, unsigned outputs, tu_args *out)
{
    tu_args res, a;
    run_args(p, outputs, &res, &a);
    tu_run_cl(ctx, plan, p->dir, l, &a);
    char who[600];
    who_of(p, clnorm_plan_strategy(plan), l, "cl_mem", who, sizeof who);
    finish(p, &res, outputs, out, who);
}

void tu_problem_run_host(clnorm_ctx *ctx, const tu_problem *p, clnorm_plan *plan,
                         const tu_launch *l, unsigned outputs, tu_args *out)
{
    tu_args res, a;
    run_args(p, outputs, &res, &a);
    tu_run_host(ctx, plan, &p->desc, p->dir, l, &a);
    char who[600];
    who_of(p, plan ? clnorm_plan_strategy(plan) : CLNORM_STRATEGY_REFERENCE, l, "host", who,
           sizeof who);
    finish(p, &res, outputs, out, who);
}
