/*
 * test_ops_errors.c - the error paths of every operation of the registry, derived from its
 * slot infos (clnorm_slot_query), through layer 1 (clnorm_execute), the host layer
 * (clnorm_execute_host) and the reference (clnorm_ref_execute), both directions, every flag
 * set the operation accepts:
 *   - each REQUIRED slot left out: CLNORM_INVALID_ARGUMENT, and the message names the slot;
 *   - each UNUSED slot given: CLNORM_INVALID_ARGUMENT, the message names it;
 *   - a slot given twice: CLNORM_INVALID_ARGUMENT;
 *   - each given slot's cl_mem one element short, or its offset one past what fits:
 *     CLNORM_BUFFER_TOO_SMALL, the message names it;
 *   - an output overlapping an input partially (one element in), or another output:
 *     CLNORM_INVALID_ARGUMENT;
 *   - each subset of OPTIONAL slots the reference refuses: refused by every path alike;
 *   - an output at the very place of an input that is not a row tensor (or a non-row output
 *     at a row input), in one-row problems where their layouts coincide: refused too (only
 *     row tensors may be in place: clnorm.h).
 * After every refused call every buffer holds what it held before (outputs their sentinels,
 * inputs their data), and the valid call still succeeds at the end.
 */
#include "tu_runner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS CLNORM_ARG_SLOT_COUNT
#define BIT(s) (1u << (unsigned)(s))
#define ROWS 3
#define COLS 10

static clnorm_ctx *g_ctx;

static const clnorm_direction dirs[2] = {CLNORM_FORWARD, CLNORM_BACKWARD};

/* The arguments of one call on buffers that are exactly offset + extent elements long, so
 * that one element more does not fit. */
typedef struct {
    clnorm_desc desc;
    clnorm_direction dir;
    clnorm_slot_info info[SLOTS];
    unsigned valid; /* the slots of the valid call: every REQUIRED and OPTIONAL one */
    size_t off[SLOTS], n[SLOTS], es[SLOTS];
    unsigned char *image[SLOTS]; /* contents: inputs' data, outputs' sentinels */
    cl_mem mem[SLOTS];           /* layer 1 (NULL without a device) */
    char label[200];
} fixture;

static void fixture_make(fixture *f, const clnorm_desc *d, clnorm_direction dir)
{
    memset(f, 0, sizeof *f);
    f->desc = *d;
    f->dir = dir;
    tu_slot_infos(d, dir, f->info);
    tu_call_name(d, dir, CLNORM_STRATEGY_AUTO, f->label, sizeof f->label);
    const tu_launch l = tu_launch_offsets();
    tu_rng rng;
    tu_rng_seed(&rng, 4242);
    for (unsigned s = 0; s < SLOTS; s++) {
        const clnorm_slot_info *i = &f->info[s];
        /* An UNUSED slot gets a row tensor's worth of the storage type, to give wrongly. */
        const clnorm_dtype t = i->use == CLNORM_SLOT_UNUSED ? d->dtype : i->dtype;
        const size_t extent = i->use == CLNORM_SLOT_UNUSED ? d->rows * d->cols : i->extent;
        if (i->use != CLNORM_SLOT_UNUSED)
            f->valid |= BIT(s);
        f->es[s] = clnorm_elem_size(t);
        f->off[s] = l.off[s];
        f->n[s] = f->off[s] + extent;
        f->image[s] = tu_alloc_sentinel(t, f->n[s], i->is_output);
        if (!i->is_output)
            for (size_t k = 0; k < extent; k++)
                clnorm_elem_store(t, f->image[s], f->off[s] + k, 0.5 + tu_rng_normal(&rng));
        if (tu_has_device(g_ctx))
            f->mem[s] = tu_buffer_bytes(clnorm_get_cl_context(g_ctx), clnorm_get_queue(g_ctx),
                                        f->image[s], f->n[s] * f->es[s]);
    }
}

static void fixture_free(fixture *f)
{
    for (unsigned s = 0; s < SLOTS; s++) {
        free(f->image[s]);
        if (f->mem[s] != NULL)
            clReleaseMemObject(f->mem[s]);
    }
}

/* Every buffer of the fixture as it was. */
static void untouched_cl(const fixture *f, const char *what)
{
    clFinish(clnorm_get_queue(g_ctx));
    size_t bad = 0;
    for (unsigned s = 0; s < SLOTS; s++) {
        const size_t bytes = f->n[s] * f->es[s];
        unsigned char *now = malloc(bytes + 1);
        assert_non_null(now);
        tu_read_bytes(clnorm_get_queue(g_ctx), f->mem[s], now, bytes);
        if (memcmp(now, f->image[s], bytes) != 0) {
            print_error("%s: %s: the buffer of %s changed\n", f->label, what,
                        clnorm_arg_name((clnorm_arg_slot)s));
            bad++;
        }
        free(now);
    }
    if (bad)
        fail_msg("%s: %s: a refused call wrote into %zu buffers", f->label, what, bad);
}

/* The status, and that clnorm_last_error names `slot` (when >= 0) or says anything. */
static void expect(clnorm_status got, clnorm_status want, int slot, int has_msg,
                   const fixture *f, const char *what)
{
    if (got != want)
        fail_msg("%s: %s: status %d (%s), expected %d (%s)", f->label, what, got,
                 clnorm_status_string(got), want, clnorm_status_string(want));
    if (!has_msg)
        return;
    const char *msg = clnorm_last_error(g_ctx);
    if (msg == NULL || msg[0] == '\0')
        fail_msg("%s: %s: clnorm_last_error() is empty after a failure", f->label, what);
    if (slot >= 0 && !tu_names(msg, clnorm_arg_name((clnorm_arg_slot)slot)))
        fail_msg("%s: %s: clnorm_last_error() = \"%s\" does not name %s", f->label, what, msg,
                 clnorm_arg_name((clnorm_arg_slot)slot));
}

/* ------------------------------------------------------------------------------------------ */
/* Layer 1                                                                                     */

typedef struct {
    clnorm_arg a[SLOTS + 1];
    size_t n;
} arglist;

static arglist args_of(const fixture *f, unsigned slots)
{
    arglist l;
    l.n = 0;
    for (unsigned s = 0; s < SLOTS; s++)
        if (slots & BIT(s))
            l.a[l.n++] = (clnorm_arg){(clnorm_arg_slot)s, f->mem[s], f->off[s]};
    return l;
}

static clnorm_status call_cl(clnorm_plan *plan, const fixture *f, const arglist *l)
{
    cl_event ev = NULL;
    const clnorm_status st = clnorm_execute(plan, f->dir, l->a, l->n, NULL, 0, NULL, &ev);
    if (ev != NULL) {
        clWaitForEvents(1, &ev);
        clReleaseEvent(ev);
    }
    return st;
}

/* Replaces slot s's entry of an argument list. */
static void set_arg(arglist *l, unsigned s, cl_mem mem, size_t off)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->a[i].slot == (clnorm_arg_slot)s) {
            l->a[i].mem = mem;
            l->a[i].offset = off;
        }
}

static void cl_errors(clnorm_plan *plan, const fixture *f)
{
    char what[200];
    cl_context context = clnorm_get_cl_context(g_ctx);
    cl_command_queue queue = clnorm_get_queue(g_ctx);
    for (unsigned s = 0; s < SLOTS; s++) {
        const clnorm_slot_info *i = &f->info[s];
        const char *name = clnorm_arg_name((clnorm_arg_slot)s);
        if (i->use == CLNORM_SLOT_REQUIRED && i->extent > 0) {
            const arglist l = args_of(f, f->valid & ~BIT(s));
            snprintf(what, sizeof what, "cl_mem: REQUIRED %s left out", name);
            expect(call_cl(plan, f, &l), CLNORM_INVALID_ARGUMENT, (int)s, 1, f, what);
            untouched_cl(f, what);
        }
        if (i->use == CLNORM_SLOT_UNUSED) {
            const arglist l = args_of(f, f->valid | BIT(s));
            snprintf(what, sizeof what, "cl_mem: UNUSED %s given", name);
            expect(call_cl(plan, f, &l), CLNORM_INVALID_ARGUMENT, (int)s, 1, f, what);
            untouched_cl(f, what);
            continue;
        }
        {
            arglist l = args_of(f, f->valid);
            l.a[l.n++] = (clnorm_arg){(clnorm_arg_slot)s, f->mem[s], f->off[s]};
            snprintf(what, sizeof what, "cl_mem: %s given twice", name);
            expect(call_cl(plan, f, &l), CLNORM_INVALID_ARGUMENT, (int)s, 1, f, what);
            untouched_cl(f, what);
        }
        if (i->extent == 0)
            continue;
        /* One element short: a buffer of its own holding all but the last element. */
        {
            cl_mem shorter = tu_buffer_bytes(context, queue, f->image[s],
                                             (f->n[s] - 1) * f->es[s]);
            arglist l = args_of(f, f->valid);
            set_arg(&l, s, shorter, f->off[s]);
            snprintf(what, sizeof what, "cl_mem: %s one element short", name);
            expect(call_cl(plan, f, &l), CLNORM_BUFFER_TOO_SMALL, (int)s, 1, f, what);
            untouched_cl(f, what);
            unsigned char *now = malloc(f->n[s] * f->es[s]);
            assert_non_null(now);
            tu_read_bytes(queue, shorter, now, (f->n[s] - 1) * f->es[s]);
            if (memcmp(now, f->image[s], (f->n[s] - 1) * f->es[s]) != 0)
                fail_msg("%s: %s: the short buffer was written", f->label, what);
            free(now);
            clReleaseMemObject(shorter);
        }
        {
            arglist l = args_of(f, f->valid);
            set_arg(&l, s, f->mem[s], f->off[s] + 1);
            snprintf(what, sizeof what, "cl_mem: %s offset one past what fits", name);
            expect(call_cl(plan, f, &l), CLNORM_BUFFER_TOO_SMALL, (int)s, 1, f, what);
            untouched_cl(f, what);
        }
    }
}

/* Output s one element into the memory of slot t (an input: partially; an output: s at t's
 * very place), in a buffer of their own holding t's contents. */
static void cl_overlaps(clnorm_plan *plan, const fixture *f)
{
    char what[200];
    cl_context context = clnorm_get_cl_context(g_ctx);
    cl_command_queue queue = clnorm_get_queue(g_ctx);
    for (unsigned s = 0; s < SLOTS; s++) {
        if (!(f->valid & BIT(s)) || !f->info[s].is_output || f->info[s].extent == 0)
            continue;
        for (unsigned t = 0; t < SLOTS; t++) {
            if (t == s || !(f->valid & BIT(t)) || f->info[t].extent == 0)
                continue;
            const int both_out = f->info[t].is_output;
            const size_t t0 = f->off[t] * f->es[t];
            /* s starts one of its elements past t's start (at it, for two outputs) */
            const size_t s_off = (t0 + f->es[s] - 1) / f->es[s] + (both_out ? 0 : 1);
            const size_t s_end = (s_off + f->info[s].extent) * f->es[s];
            const size_t bytes = s_end > f->n[t] * f->es[t] ? s_end : f->n[t] * f->es[t];
            if (both_out && s_off * f->es[s] != t0)
                continue; /* not the very same place: covered by the partial case */
            unsigned char *img = calloc(bytes + 1, 1);
            assert_non_null(img);
            memcpy(img, f->image[t], f->n[t] * f->es[t]);
            cl_mem shared = tu_buffer_bytes(context, queue, img, bytes);
            arglist l = args_of(f, f->valid);
            set_arg(&l, t, shared, f->off[t]);
            set_arg(&l, s, shared, s_off);
            snprintf(what, sizeof what, "cl_mem: %s %s %s", clnorm_arg_name((clnorm_arg_slot)s),
                     both_out ? "at the place of output" : "partly over input",
                     clnorm_arg_name((clnorm_arg_slot)t));
            expect(call_cl(plan, f, &l), CLNORM_INVALID_ARGUMENT, -1, 1, f, what);
            untouched_cl(f, what);
            unsigned char *now = malloc(bytes + 1);
            assert_non_null(now);
            tu_read_bytes(queue, shared, now, bytes);
            if (memcmp(now, img, bytes) != 0)
                fail_msg("%s: %s: the shared buffer was written", f->label, what);
            free(now);
            free(img);
            clReleaseMemObject(shared);
        }
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Host pointers and the reference                                                             */

/* Copies of the fixture's images, each with room for any slot one element in. */
typedef struct {
    unsigned char *p[SLOTS];
    size_t bytes[SLOTS];
} host_copy;

static void host_copy_make(host_copy *h, const fixture *f)
{
    size_t most = 0;
    for (unsigned s = 0; s < SLOTS; s++)
        most = f->n[s] * f->es[s] > most ? f->n[s] * f->es[s] : most;
    for (unsigned s = 0; s < SLOTS; s++) {
        h->bytes[s] = f->n[s] * f->es[s] + most + 8;
        h->p[s] = calloc(h->bytes[s], 1);
        assert_non_null(h->p[s]);
        memcpy(h->p[s], f->image[s], f->n[s] * f->es[s]);
    }
}

static void host_copy_free(host_copy *h)
{
    for (unsigned s = 0; s < SLOTS; s++)
        free(h->p[s]);
}

static void untouched_host(const fixture *f, const host_copy *h, const char *what)
{
    for (unsigned s = 0; s < SLOTS; s++)
        if (memcmp(h->p[s], f->image[s], f->n[s] * f->es[s]) != 0)
            fail_msg("%s: %s: a refused call wrote into %s", f->label, what,
                     clnorm_arg_name((clnorm_arg_slot)s));
}

/* A host call (plan) or the reference (plan NULL) on `slots`, slot s at pointer p_s. */
static clnorm_status call_host(clnorm_plan *plan, const fixture *f, unsigned slots,
                               void *const ptr[SLOTS], int twice)
{
    clnorm_host_arg a[SLOTS + 1];
    size_t n = 0;
    for (unsigned s = 0; s < SLOTS; s++)
        if (slots & BIT(s))
            a[n++] = (clnorm_host_arg){(clnorm_arg_slot)s, ptr[s]};
    if (twice >= 0)
        a[n++] = (clnorm_host_arg){(clnorm_arg_slot)twice, ptr[twice]};
    return plan ? clnorm_execute_host(plan, f->dir, a, n)
                : clnorm_ref_execute(&f->desc, f->dir, a, n);
}

static void host_errors(clnorm_plan *plan, const fixture *f)
{
    const char *who = plan ? "host" : "reference";
    char what[200];
    host_copy h;
    host_copy_make(&h, f);
    void *ptr[SLOTS];
    for (unsigned s = 0; s < SLOTS; s++)
        ptr[s] = h.p[s] + f->off[s] * f->es[s];
    for (unsigned s = 0; s < SLOTS; s++) {
        const clnorm_slot_info *i = &f->info[s];
        const char *name = clnorm_arg_name((clnorm_arg_slot)s);
        if (i->use == CLNORM_SLOT_REQUIRED && i->extent > 0) {
            snprintf(what, sizeof what, "%s: REQUIRED %s left out", who, name);
            expect(call_host(plan, f, f->valid & ~BIT(s), ptr, -1), CLNORM_INVALID_ARGUMENT,
                   (int)s, plan != NULL, f, what);
            untouched_host(f, &h, what);
        }
        if (i->use == CLNORM_SLOT_UNUSED) {
            snprintf(what, sizeof what, "%s: UNUSED %s given", who, name);
            expect(call_host(plan, f, f->valid | BIT(s), ptr, -1), CLNORM_INVALID_ARGUMENT,
                   (int)s, plan != NULL, f, what);
            untouched_host(f, &h, what);
            continue;
        }
        snprintf(what, sizeof what, "%s: %s given twice", who, name);
        expect(call_host(plan, f, f->valid, ptr, (int)s), CLNORM_INVALID_ARGUMENT, (int)s,
               plan != NULL, f, what);
        untouched_host(f, &h, what);
    }
    /* output s one of its elements into input t, or at the very place of output t */
    for (unsigned s = 0; s < SLOTS; s++) {
        if (!(f->valid & BIT(s)) || !f->info[s].is_output || f->info[s].extent == 0)
            continue;
        for (unsigned t = 0; t < SLOTS; t++) {
            if (t == s || !(f->valid & BIT(t)) || f->info[t].extent == 0)
                continue;
            const int both_out = f->info[t].is_output;
            void *moved[SLOTS];
            memcpy(moved, ptr, sizeof moved);
            moved[s] = (unsigned char *)ptr[t] + (both_out ? 0 : f->es[s]);
            snprintf(what, sizeof what, "%s: %s %s %s", who, clnorm_arg_name((clnorm_arg_slot)s),
                     both_out ? "at the place of output" : "partly over input",
                     clnorm_arg_name((clnorm_arg_slot)t));
            expect(call_host(plan, f, f->valid, moved, -1), CLNORM_INVALID_ARGUMENT, -1,
                   plan != NULL, f, what);
            untouched_host(f, &h, what);
        }
    }
    /* the valid call */
    snprintf(what, sizeof what, "%s: the valid call", who);
    expect(call_host(plan, f, f->valid, ptr, -1), CLNORM_OK, -1, 0, f, what);
    host_copy_free(&h);
}

/* Whether the reference accepts the slots `slots` on the fixture's data. */
static int ref_accepts(const fixture *f, unsigned slots)
{
    host_copy h;
    host_copy_make(&h, f);
    void *ptr[SLOTS];
    for (unsigned s = 0; s < SLOTS; s++)
        ptr[s] = h.p[s] + f->off[s] * f->es[s];
    const clnorm_status st = call_host(NULL, f, slots, ptr, -1);
    host_copy_free(&h);
    return st == CLNORM_OK;
}

/* Every subset of the OPTIONAL slots the reference refuses is refused by the host layer and
 * layer 1 alike, writing nothing. */
static void refused_subsets(clnorm_plan *plan, const fixture *f)
{
    unsigned opt[SLOTS], required = 0;
    size_t n = 0;
    for (unsigned s = 0; s < SLOTS; s++) {
        if (f->info[s].use == CLNORM_SLOT_OPTIONAL)
            opt[n++] = s;
        if (f->info[s].use == CLNORM_SLOT_REQUIRED)
            required |= BIT(s);
    }
    char what[200];
    for (unsigned m = 0; m < (1u << n); m++) {
        unsigned slots = required;
        for (size_t i = 0; i < n; i++)
            if (m & (1u << i))
                slots |= BIT(opt[i]);
        if (ref_accepts(f, slots))
            continue;
        snprintf(what, sizeof what, "optional slots 0x%x the reference refuses", slots);
        host_copy h;
        host_copy_make(&h, f);
        void *ptr[SLOTS];
        for (unsigned s = 0; s < SLOTS; s++)
            ptr[s] = h.p[s] + f->off[s] * f->es[s];
        expect(call_host(plan, f, slots, ptr, -1), CLNORM_INVALID_ARGUMENT, -1, 1, f, what);
        untouched_host(f, &h, what);
        host_copy_free(&h);
        if (tu_has_device(g_ctx)) {
            const arglist l = args_of(f, slots);
            expect(call_cl(plan, f, &l), CLNORM_INVALID_ARGUMENT, -1, 1, f, what);
            untouched_cl(f, what);
        }
    }
}

/* ------------------------------------------------------------------------------------------ */

/* Every op, every flag set it accepts (those with the same slot uses once), both directions. */
static void for_each_case(void (*body)(const clnorm_desc *d, clnorm_direction dir))
{
    static const unsigned flag_bits[] = {CLNORM_NO_GAMMA, CLNORM_NO_BETA, CLNORM_SAVE_STATS,
                                         CLNORM_RESIDUAL_F32};
    for (size_t op = 0; op < clnorm_op_count(); op++) {
        for (int k = 0; k < 2; k++) {
            unsigned char seen[16][SLOTS];
            size_t nseen = 0;
            for (unsigned m = 0; m < (1u << TU_COUNT(flag_bits)); m++) {
                clnorm_desc d;
                clnorm_desc_init(&d, (clnorm_kind)op, ROWS, COLS);
                d.flags = CLNORM_WITH_BACKWARD;
                for (size_t b = 0; b < TU_COUNT(flag_bits); b++)
                    if (m & (1u << b))
                        d.flags |= flag_bits[b];
                if (clnorm_desc_check(&d, NULL, 0) != CLNORM_OK)
                    continue;
                clnorm_slot_info info[SLOTS];
                tu_slot_infos(&d, dirs[k], info);
                unsigned char uses[SLOTS];
                for (unsigned s = 0; s < SLOTS; s++)
                    uses[s] = (unsigned char)info[s].use;
                int dup = 0;
                for (size_t i = 0; i < nseen; i++)
                    dup |= memcmp(seen[i], uses, SLOTS) == 0;
                if (dup)
                    continue;
                memcpy(seen[nseen++], uses, SLOTS);
                body(&d, dirs[k]);
            }
        }
    }
}

static void cl_case(const clnorm_desc *d, clnorm_direction dir)
{
    fixture f;
    fixture_make(&f, d, dir);
    clnorm_plan *plan = tu_plan(g_ctx, d, CLNORM_STRATEGY_AUTO);
    cl_errors(plan, &f);
    cl_overlaps(plan, &f);
    const arglist l = args_of(&f, f.valid);
    expect(call_cl(plan, &f, &l), CLNORM_OK, -1, 0, &f, "cl_mem: the valid call");
    clnorm_plan_free(plan);
    fixture_free(&f);
}

static void host_case(const clnorm_desc *d, clnorm_direction dir)
{
    fixture f;
    fixture_make(&f, d, dir);
    host_errors(NULL, &f);
    if (g_ctx != NULL) {
        clnorm_plan *plan = tu_plan(g_ctx, d, CLNORM_STRATEGY_AUTO);
        host_errors(plan, &f);
        refused_subsets(plan, &f);
        clnorm_plan_free(plan);
    }
    fixture_free(&f);
}

/* One-row problems (1 x 1 and 1 x 4), where a parameter or a statistic has the layout of a
 * row tensor: an output at the very place of an input is refused unless both are row tensors
 * of the operation (tu_row_slots), on every path. */
static void alias_case(const clnorm_desc *base, clnorm_direction dir)
{
    static const size_t cols[] = {1, 4};
    for (size_t c = 0; c < TU_COUNT(cols); c++) {
        clnorm_desc d = *base;
        d.rows = 1;
        d.cols = cols[c];
        fixture f;
        fixture_make(&f, &d, dir);
        const unsigned row_slots = tu_row_slots(&d, dir);
        clnorm_plan *plan = g_ctx != NULL ? tu_plan(g_ctx, &d, CLNORM_STRATEGY_AUTO) : NULL;
        for (unsigned s = 0; s < SLOTS; s++) {
            for (unsigned t = 0; t < SLOTS; t++) {
                const clnorm_slot_info *o = &f.info[s], *i = &f.info[t];
                if (s == t || !(f.valid & BIT(s)) || !(f.valid & BIT(t)) || !o->is_output ||
                    i->is_output || o->extent == 0 || o->extent != i->extent ||
                    o->dtype != i->dtype || o->stride != i->stride ||
                    ((row_slots & BIT(s)) && (row_slots & BIT(t))))
                    continue;
                char what[200];
                snprintf(what, sizeof what,
                         "%s (not both row tensors) at the place of %s, %zu x %zu",
                         clnorm_arg_name((clnorm_arg_slot)s), clnorm_arg_name((clnorm_arg_slot)t),
                         d.rows, d.cols);
                host_copy h;
                host_copy_make(&h, &f);
                void *ptr[SLOTS];
                for (unsigned k = 0; k < SLOTS; k++)
                    ptr[k] = h.p[k] + f.off[k] * f.es[k];
                ptr[s] = ptr[t];
                expect(call_host(NULL, &f, f.valid, ptr, -1), CLNORM_INVALID_ARGUMENT, -1, 0, &f,
                       what);
                untouched_host(&f, &h, what);
                if (plan != NULL) {
                    expect(call_host(plan, &f, f.valid, ptr, -1), CLNORM_INVALID_ARGUMENT, -1, 1,
                           &f, what);
                    untouched_host(&f, &h, what);
                }
                host_copy_free(&h);
                if (tu_has_device(g_ctx)) {
                    arglist l = args_of(&f, f.valid);
                    set_arg(&l, s, f.mem[t], f.off[t]);
                    expect(call_cl(plan, &f, &l), CLNORM_INVALID_ARGUMENT, -1, 1, &f, what);
                    untouched_cl(&f, what);
                }
            }
        }
        clnorm_plan_free(plan);
        fixture_free(&f);
    }
}

static void test_alias_only_row_tensors(void **state)
{
    (void)state;
    for_each_case(alias_case);
}

static void test_cl_mem(void **state)
{
    (void)state;
    if (!tu_has_device(g_ctx))
        skip();
    for_each_case(cl_case);
}

static void test_host_and_reference(void **state)
{
    (void)state;
    for_each_case(host_case);
}

static int group_setup(void **state)
{
    (void)state;
    g_ctx = tu_context("ops errors");
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
        cmocka_unit_test(test_host_and_reference),
        cmocka_unit_test(test_cl_mem),
        cmocka_unit_test(test_alias_only_row_tensors),
    };
    return cmocka_run_group_tests_name("ops errors", tests, group_setup, group_teardown);
}
