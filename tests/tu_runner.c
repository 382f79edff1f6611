/*
 * tu_runner.c - see tu_runner.h.
 */
#include "tu_runner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS CLNORM_ARG_SLOT_COUNT
#define BIT(s) (1u << (unsigned)(s))

tu_launch tu_launch_offsets(void)
{
    /* Distinct, odd and even, none a multiple of a vector width. */
    static const size_t offs[] = {5, 7, 3, 11, 2, 9, 13, 6, 17, 1, 10, 4, 15, 14, 19, 21, 23};
    /* a slot added without an offset here would sit at 0, its offset handling untested */
    _Static_assert(sizeof offs / sizeof offs[0] == SLOTS, "one offset per argument slot");
    tu_launch l;
    memset(&l, 0, sizeof l);
    memcpy(l.off, offs, sizeof offs);
    return l;
}

tu_launch tu_launch_v01(clnorm_direction dir, int in_place)
{
    tu_launch l = tu_launch_offsets();
    l.v01 = 1;
    if (in_place && dir == CLNORM_FORWARD)
        tu_launch_in_place(&l, CLNORM_ARG_Y, CLNORM_ARG_X);
    else if (in_place)
        tu_launch_in_place(&l, CLNORM_ARG_DX, CLNORM_ARG_DY);
    return l;
}

void tu_launch_in_place(tu_launch *l, clnorm_arg_slot out, clnorm_arg_slot in)
{
    l->alias[out] = (unsigned char)(1 + (unsigned)in);
}

void tu_slot_infos(const clnorm_desc *d, clnorm_direction dir,
                   clnorm_slot_info info[CLNORM_ARG_SLOT_COUNT])
{
    for (unsigned s = 0; s < SLOTS; s++) {
        const clnorm_status st = clnorm_slot_query(d, dir, (clnorm_arg_slot)s, &info[s]);
        if (st != CLNORM_OK)
            fail_msg("clnorm_slot_query(%s) = %d (%s)", clnorm_arg_name((clnorm_arg_slot)s), st,
                     clnorm_status_string(st));
    }
}

unsigned tu_row_slots(const clnorm_desc *d, clnorm_direction dir)
{
    clnorm_desc probe = *d;
    probe.rows = 3;
    probe.cols = 5;
    probe.x_stride = probe.y_stride = probe.residual_stride = probe.sum_stride = 0;
    probe.samples = 1; /* per-sample tensors are then 1 x cols, never mistaken for rows */
    probe.mod_stride = 0;
    clnorm_slot_info info[SLOTS];
    tu_slot_infos(&probe, dir, info);
    unsigned m = 0;
    for (unsigned s = 0; s < SLOTS; s++)
        if (info[s].use != CLNORM_SLOT_UNUSED && info[s].rows == 3 && info[s].cols == 5)
            m |= BIT(s);
    return m;
}

void tu_call_name(const clnorm_desc *d, clnorm_direction dir, clnorm_strategy s, char *buf,
                  size_t size)
{
    clnorm_op_info op;
    const char *name = clnorm_op_query(d->kind, &op) == CLNORM_OK ? op.name : "?";
    snprintf(buf, size, "%s %s %s %s %zux%zu strides %zu/%zu/%zu/%zu flags 0x%x eps %g", name,
             dir == CLNORM_BACKWARD ? "backward" : "forward", clnorm_strategy_name(s),
             tu_dtype_name(d->dtype), d->rows, d->cols, tu_x_stride(d), tu_y_stride(d),
             d->residual_stride ? d->residual_stride : d->cols,
             d->sum_stride ? d->sum_stride : d->cols, d->flags, d->eps);
}

/* ------------------------------------------------------------------------------------------ */
/* Buffers: one per slot given, shared by an output with the input it is in place of.         */

typedef struct {
    clnorm_slot_info info[SLOTS];
    int owner[SLOTS];     /* the slot whose buffer s lives in (s itself unless in place) */
    size_t off[SLOTS];    /* element offsets (in place: the input's) */
    size_t total[SLOTS];  /* elements of an owned buffer */
    unsigned char *image[SLOTS]; /* an owned buffer's contents before the call */
    unsigned char *after[SLOTS]; /* and after it */
    cl_mem mem[SLOTS];
    unsigned given;
} bufs;

static size_t esize(const bufs *b, unsigned s) { return clnorm_elem_size(b->info[s].dtype); }

static void bufs_free(bufs *b)
{
    for (unsigned s = 0; s < SLOTS; s++) {
        free(b->image[s]);
        free(b->after[s]);
        if (b->mem[s] != NULL)
            clReleaseMemObject(b->mem[s]);
    }
}

/* Lays the given slots out: images with sentinels and the inputs' data. */
static void bufs_make(bufs *b, const clnorm_desc *d, clnorm_direction dir, const tu_launch *l,
                      const tu_args *a, int with_offsets)
{
    memset(b, 0, sizeof *b);
    tu_slot_infos(d, dir, b->info);
    for (unsigned s = 0; s < SLOTS; s++) {
        if (a->p[s] == NULL)
            continue;
        b->given |= BIT(s);
        b->owner[s] = (int)s;
        if (l->alias[s]) {
            const unsigned t = l->alias[s] - 1u;
            if (t >= SLOTS || a->p[t] == NULL || !b->info[s].is_output || b->info[t].is_output)
                fail_msg("runner: %s in place of %s needs an input given",
                         clnorm_arg_name((clnorm_arg_slot)s), clnorm_arg_name((clnorm_arg_slot)t));
            b->owner[s] = (int)t;
        }
    }
    for (unsigned s = 0; s < SLOTS; s++) {
        if (!(b->given & BIT(s)))
            continue;
        const unsigned o = (unsigned)b->owner[s];
        b->off[s] = with_offsets ? l->off[o] : 0;
        if (o != s)
            continue;
        const size_t es = esize(b, s), n = b->info[s].extent;
        b->total[s] = b->off[s] + n + TU_PAD;
        b->image[s] = malloc(b->total[s] * es + 1);
        b->after[s] = malloc(b->total[s] * es + 1);
        if (b->image[s] == NULL || b->after[s] == NULL)
            fail_msg("out of host memory");
        /* An input's frame holds input sentinels; an output, or a buffer an output writes in
         * place, is framed by output sentinels (so a stray write of either kind shows). */
        int written = b->info[s].is_output;
        for (unsigned t = 0; t < SLOTS; t++)
            written |= (b->given & BIT(t)) && t != s && b->owner[t] == (int)s;
        tu_fill_sentinel(b->image[s], b->total[s], es, written);
        if (!b->info[s].is_output && n)
            memcpy(b->image[s] + b->off[s] * es, a->p[s], n * es);
        memcpy(b->after[s], b->image[s], b->total[s] * es);
    }
}

/* Every element of every buffer, but those the outputs own, as it was: the outputs' elements
 * are copied from the image into a copy of the buffer, which must then equal the image (one
 * memcmp); only a buffer that differs is looked at element by element. */
static size_t bufs_check(const bufs *b, const char *who)
{
    size_t bad = 0;
    for (unsigned s = 0; s < SLOTS; s++) {
        if (b->image[s] == NULL)
            continue;
        const size_t es = esize(b, s), bytes = b->total[s] * es;
        unsigned char *masked = malloc(bytes + 1);
        if (masked == NULL)
            fail_msg("out of host memory");
        memcpy(masked, b->after[s], bytes);
        for (unsigned t = 0; t < SLOTS; t++) {
            if (!(b->given & BIT(t)) || b->owner[t] != (int)s || !b->info[t].is_output)
                continue;
            const clnorm_slot_info *it = &b->info[t];
            for (size_t r = 0; r < it->rows; r++) {
                const size_t o = (b->off[t] + r * it->stride) * es;
                memcpy(masked + o, b->image[s] + o, it->cols * es);
            }
        }
        if (memcmp(masked, b->image[s], bytes) != 0) {
            size_t here = 0;
            for (size_t i = 0; i < b->total[s]; i++) {
                if (memcmp(masked + i * es, b->image[s] + i * es, es) == 0)
                    continue;
                if (here < 8) {
                    const int before = i < b->off[s];
                    print_error("%s: buffer of %s: element %zu (%s %zu) changed: 0x%llx, was "
                                "0x%llx\n",
                                who, clnorm_arg_name((clnorm_arg_slot)s), i,
                                before ? "offset region, element" : "tensor element",
                                before ? i : i - b->off[s],
                                (unsigned long long)tu_bits(b->info[s].dtype, b->after[s], i),
                                (unsigned long long)tu_bits(b->info[s].dtype, b->image[s], i));
                }
                here++;
            }
            bad += here;
        }
        free(masked);
    }
    return bad;
}

/* The outputs' elements (whole extent) to the caller. */
static void bufs_copy_out(const bufs *b, const tu_args *a)
{
    for (unsigned s = 0; s < SLOTS; s++) {
        if (!(b->given & BIT(s)) || !b->info[s].is_output || !b->info[s].extent)
            continue;
        const unsigned o = (unsigned)b->owner[s];
        const size_t es = esize(b, s);
        memcpy(a->p[s], b->after[o] + b->off[s] * es, b->info[s].extent * es);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Calls                                                                                       */

static unsigned v01_mask(const tu_launch *l, unsigned given)
{
    if (l->mask)
        return l->mask;
    return (given & BIT(CLNORM_ARG_DX) ? CLNORM_GRAD_X : 0u) |
           (given & BIT(CLNORM_ARG_DGAMMA) ? CLNORM_GRAD_GAMMA : 0u) |
           (given & BIT(CLNORM_ARG_DBETA) ? CLNORM_GRAD_BETA : 0u);
}

static void v01_only(unsigned given, clnorm_direction dir)
{
    const unsigned fwd = BIT(CLNORM_ARG_X) | BIT(CLNORM_ARG_Y) | BIT(CLNORM_ARG_GAMMA) |
                         BIT(CLNORM_ARG_BETA) | BIT(CLNORM_ARG_MEAN) | BIT(CLNORM_ARG_RSTD);
    const unsigned bwd = BIT(CLNORM_ARG_X) | BIT(CLNORM_ARG_DY) | BIT(CLNORM_ARG_MEAN) |
                         BIT(CLNORM_ARG_RSTD) | BIT(CLNORM_ARG_GAMMA) | BIT(CLNORM_ARG_DX) |
                         BIT(CLNORM_ARG_DGAMMA) | BIT(CLNORM_ARG_DBETA);
    if (given & ~(dir == CLNORM_FORWARD ? fwd : bwd))
        fail_msg("runner: the 0.1 calls have no argument for some slot given (0x%x)", given);
}

void tu_run_cl(clnorm_ctx *ctx, clnorm_plan *plan, clnorm_direction dir, const tu_launch *l,
               const tu_args *a)
{
    const clnorm_desc *d = clnorm_plan_desc(plan);
    assert_non_null(d);
    cl_context context = clnorm_get_cl_context(ctx);
    cl_command_queue queue = clnorm_get_queue(ctx);
    assert_non_null(context);
    assert_non_null(queue);
    char who[400];
    tu_call_name(d, dir, clnorm_plan_strategy(plan), who, sizeof who);
    strncat(who, " (cl_mem)", sizeof who - strlen(who) - 1);

    bufs b;
    bufs_make(&b, d, dir, l, a, 1);
    clnorm_arg args[SLOTS];
    size_t nargs = 0;
    cl_mem m[SLOTS];
    size_t o[SLOTS];
    for (unsigned s = 0; s < SLOTS; s++) {
        m[s] = NULL;
        o[s] = 0;
        if (b.image[s] != NULL)
            b.mem[s] = tu_buffer_bytes(context, queue, b.image[s], b.total[s] * esize(&b, s));
    }
    for (unsigned s = 0; s < SLOTS; s++) {
        if (!(b.given & BIT(s)))
            continue;
        m[s] = b.mem[b.owner[s]];
        o[s] = b.off[s];
        args[nargs++] = (clnorm_arg){(clnorm_arg_slot)s, m[s], o[s]};
    }

    cl_command_queue q = l->explicit_queue ? queue : NULL;
    cl_event ev = NULL;
    clnorm_status st;
    if (!l->v01) {
        st = clnorm_execute(plan, dir, args, nargs, q, 0, NULL, &ev);
    } else if (dir == CLNORM_FORWARD) {
        v01_only(b.given, dir);
        st = clnorm_forward(plan, m[CLNORM_ARG_X], o[CLNORM_ARG_X], m[CLNORM_ARG_Y],
                            o[CLNORM_ARG_Y], m[CLNORM_ARG_GAMMA], o[CLNORM_ARG_GAMMA],
                            m[CLNORM_ARG_BETA], o[CLNORM_ARG_BETA], m[CLNORM_ARG_MEAN],
                            o[CLNORM_ARG_MEAN], m[CLNORM_ARG_RSTD], o[CLNORM_ARG_RSTD], q, 0,
                            NULL, &ev);
    } else {
        v01_only(b.given, dir);
        st = clnorm_backward(plan, v01_mask(l, b.given), m[CLNORM_ARG_X], o[CLNORM_ARG_X],
                             m[CLNORM_ARG_DY], o[CLNORM_ARG_DY], m[CLNORM_ARG_MEAN],
                             o[CLNORM_ARG_MEAN], m[CLNORM_ARG_RSTD], o[CLNORM_ARG_RSTD],
                             m[CLNORM_ARG_GAMMA], o[CLNORM_ARG_GAMMA], m[CLNORM_ARG_DX],
                             o[CLNORM_ARG_DX], m[CLNORM_ARG_DGAMMA], o[CLNORM_ARG_DGAMMA],
                             m[CLNORM_ARG_DBETA], o[CLNORM_ARG_DBETA], q, 0, NULL, &ev);
    }
    if (st != CLNORM_OK) {
        bufs_free(&b);
        fail_msg("%s: %s = %d (%s): %s", who, l->v01 ? "the 0.1 call" : "clnorm_execute", st,
                 clnorm_status_string(st), clnorm_last_error(ctx));
    }
    if (ev == NULL) {
        bufs_free(&b);
        fail_msg("%s: no event returned although one was asked for", who);
    }
    cl_int ev_status = CL_COMPLETE;
    const cl_int wait_err = clWaitForEvents(1, &ev);
    clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof ev_status, &ev_status, NULL);
    clReleaseEvent(ev);
    clFinish(queue);
    if (wait_err != CL_SUCCESS || ev_status != CL_COMPLETE) {
        bufs_free(&b);
        fail_msg("%s: the returned event did not complete: wait %d, status %d", who,
                 (int)wait_err, (int)ev_status);
    }
    for (unsigned s = 0; s < SLOTS; s++)
        if (b.mem[s] != NULL)
            tu_read_bytes(queue, b.mem[s], b.after[s], b.total[s] * esize(&b, s));
    const size_t bad = bufs_check(&b, who);
    bufs_copy_out(&b, a);
    bufs_free(&b);
    if (bad)
        fail_msg("%s: %zu elements around the outputs or of the inputs were modified", who,
                 bad);
}

void tu_run_host(clnorm_ctx *ctx, clnorm_plan *plan, const clnorm_desc *desc,
                 clnorm_direction dir, const tu_launch *l, const tu_args *a)
{
    const clnorm_desc *d = plan ? clnorm_plan_desc(plan) : desc;
    assert_non_null(d);
    char who[400];
    tu_call_name(d, dir, plan ? clnorm_plan_strategy(plan) : CLNORM_STRATEGY_REFERENCE, who,
                 sizeof who);
    strncat(who, plan ? " (host)" : " (clnorm_ref_execute)", sizeof who - strlen(who) - 1);

    bufs b;
    bufs_make(&b, d, dir, l, a, 0);
    clnorm_host_arg args[SLOTS];
    size_t nargs = 0;
    void *p[SLOTS];
    for (unsigned s = 0; s < SLOTS; s++) {
        p[s] = NULL;
        if (!(b.given & BIT(s)))
            continue;
        p[s] = b.after[b.owner[s]]; /* the call works on `after`; `image` keeps the before */
        args[nargs++] = (clnorm_host_arg){(clnorm_arg_slot)s, p[s]};
    }
    clnorm_status st;
    const unsigned mask = v01_mask(l, b.given);
    if (l->v01)
        v01_only(b.given, dir);
    if (!l->v01)
        st = plan ? clnorm_execute_host(plan, dir, args, nargs)
                  : clnorm_ref_execute(d, dir, args, nargs);
    else if (dir == CLNORM_FORWARD)
        st = plan ? clnorm_forward_host(plan, p[CLNORM_ARG_X], p[CLNORM_ARG_Y],
                                        p[CLNORM_ARG_GAMMA], p[CLNORM_ARG_BETA],
                                        p[CLNORM_ARG_MEAN], p[CLNORM_ARG_RSTD])
                  : clnorm_ref_forward(d, p[CLNORM_ARG_X], p[CLNORM_ARG_Y], p[CLNORM_ARG_GAMMA],
                                       p[CLNORM_ARG_BETA], p[CLNORM_ARG_MEAN],
                                       p[CLNORM_ARG_RSTD]);
    else
        st = plan ? clnorm_backward_host(plan, mask, p[CLNORM_ARG_X], p[CLNORM_ARG_DY],
                                         p[CLNORM_ARG_MEAN], p[CLNORM_ARG_RSTD],
                                         p[CLNORM_ARG_GAMMA], p[CLNORM_ARG_DX],
                                         p[CLNORM_ARG_DGAMMA], p[CLNORM_ARG_DBETA])
                  : clnorm_ref_backward(d, mask, p[CLNORM_ARG_X], p[CLNORM_ARG_DY],
                                        p[CLNORM_ARG_MEAN], p[CLNORM_ARG_RSTD],
                                        p[CLNORM_ARG_GAMMA], p[CLNORM_ARG_DX],
                                        p[CLNORM_ARG_DGAMMA], p[CLNORM_ARG_DBETA]);
    if (st != CLNORM_OK) {
        bufs_free(&b);
        fail_msg("%s: status %d (%s): %s", who, st, clnorm_status_string(st),
                 plan ? clnorm_last_error(ctx) : "");
    }
    const size_t bad = bufs_check(&b, who);
    bufs_copy_out(&b, a);
    bufs_free(&b);
    if (bad)
        fail_msg("%s: %zu elements around the outputs or of the inputs were modified", who,
                 bad);
}

/* ------------------------------------------------------------------------------------------ */
/* The 0.1 shorthands                                                                          */

void tu_forward_cl(clnorm_ctx *ctx, clnorm_plan *plan, const tu_launch *l, const void *x,
                   const void *gamma, const void *beta, void *y, void *mean, void *rstd)
{
    tu_launch v = *l;
    v.v01 = 1;
    tu_args a = {{NULL}};
    a.p[CLNORM_ARG_X] = (void *)(uintptr_t)x;
    a.p[CLNORM_ARG_GAMMA] = (void *)(uintptr_t)gamma;
    a.p[CLNORM_ARG_BETA] = (void *)(uintptr_t)beta;
    a.p[CLNORM_ARG_Y] = y;
    a.p[CLNORM_ARG_MEAN] = mean;
    a.p[CLNORM_ARG_RSTD] = rstd;
    /* What the plan does not take is left out (an RMSNorm plan has no mean). */
    clnorm_slot_info info[SLOTS];
    tu_slot_infos(clnorm_plan_desc(plan), CLNORM_FORWARD, info);
    for (unsigned s = 0; s < SLOTS; s++)
        if (info[s].use == CLNORM_SLOT_UNUSED)
            a.p[s] = NULL;
    tu_run_cl(ctx, plan, CLNORM_FORWARD, &v, &a);
}

void tu_backward_cl(clnorm_ctx *ctx, clnorm_plan *plan, unsigned mask, const tu_launch *l,
                    const void *x, const void *dy, const void *mean, const void *rstd,
                    const void *gamma, void *dx, void *dgamma, void *dbeta)
{
    tu_launch v = *l;
    v.v01 = 1;
    v.mask = mask;
    tu_args a = {{NULL}};
    a.p[CLNORM_ARG_X] = (void *)(uintptr_t)x;
    a.p[CLNORM_ARG_DY] = (void *)(uintptr_t)dy;
    a.p[CLNORM_ARG_MEAN] = (void *)(uintptr_t)mean;
    a.p[CLNORM_ARG_RSTD] = (void *)(uintptr_t)rstd;
    a.p[CLNORM_ARG_GAMMA] = (void *)(uintptr_t)gamma;
    a.p[CLNORM_ARG_DX] = mask & CLNORM_GRAD_X ? dx : NULL;
    a.p[CLNORM_ARG_DGAMMA] = mask & CLNORM_GRAD_GAMMA ? dgamma : NULL;
    a.p[CLNORM_ARG_DBETA] = mask & CLNORM_GRAD_BETA ? dbeta : NULL;
    tu_run_cl(ctx, plan, CLNORM_BACKWARD, &v, &a);
}
