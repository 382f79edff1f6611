/* Input data and the reference outputs of one case, slot by slot. Every contender sees these
 * same values, stored in each slot's type (rounded from double through clnorm's own
 * conversions).
 *
 * x = N(0, 1) + a per-row offset drawn from U(-10, 10). The offsets are there on purpose:
 * with a mean of up to 10 against a spread of 1, E[x^2] - E[x]^2 in float32 cancels about
 * 7 of its 24 bits, so the naive one-pass kernel and the CLBlast GEMV baseline (both compute
 * the variance that way) show errors far above the tolerance (labelled inexact baselines),
 * while shifted or two-pass implementations stay near 1e-6. gamma = U(0.5, 1.5), beta =
 * U(-0.5, 0.5); dy = N(0, 1); the residual, for the ops that add one, N(0, 1) plus offsets of
 * its own; for a modulated op scale and shift U(-0.5, 0.5) per sample and column (so
 * 1 + scale, like gamma, is in (0.5, 1.5)); for a backward op mean/rstd come from a clnorm
 * forward (stats.c). A fixed seed and a fixed order of draws (x, gamma and beta, dy,
 * residual, scale and shift): every run sees the same numbers, and an op sees the same x,
 * gamma and dy as the ops without its extra inputs. */
#include "bench.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in (0, 1). */
static double unit(uint64_t *s)
{
    return ((double)(splitmix64(s) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

static double normal(uint64_t *s)
{
    static const double two_pi = 6.283185307179586;
    return sqrt(-2.0 * log(unit(s))) * cos(two_pi * unit(s));
}

size_t bench_slot_elems(const bench_problem *p, clnorm_arg_slot s)
{
    return p->slot[s].extent;
}

size_t bench_slot_esize(const bench_problem *p, clnorm_arg_slot s)
{
    return bench_elem_size(p->slot[s].dtype);
}

void bench_problem_free(bench_problem *p)
{
    for (int s = 0; s < BENCH_N_SLOTS; s++)
        free(p->t[s]);
    memset(p, 0, sizeof *p);
}

static int given(const bench_problem *p, clnorm_arg_slot s)
{
    return (p->info->given & BENCH_SLOT(s)) != 0;
}

/* rows of N(0, 1) plus a per-row offset from U(-10, 10), into slot s (GroupNorm: a row is a
 * sample, cols x spatial elements). */
static void offset_rows(bench_problem *p, clnorm_arg_slot s, uint64_t *seed)
{
    const clnorm_slot_info *si = &p->slot[s];
    for (size_t r = 0; r < si->rows; r++) {
        const double offset = 20.0 * unit(seed) - 10.0;
        for (size_t j = 0; j < si->cols; j++)
            bench_put(si->dtype, p->t[s], r * si->stride + j, offset + normal(seed));
    }
}

/* The reference: every given slot, the outputs written by clnorm_ref_execute. */
static int reference(bench_problem *p, clnorm_ctx *ctx, char *msg, size_t msg_size)
{
    /* the backward's saved statistics, or the precomputed ones of a -stats op: those of the
     * data, as a training step (or running statistics close to the data's) gives them */
    const int stats = p->dir == CLNORM_BACKWARD || (p->desc.flags & CLNORM_USE_GLOBAL_STATS);
    if (stats && bench_problem_stats(p, ctx, msg, msg_size) != 0)
        return -1;
    clnorm_host_arg args[BENCH_N_SLOTS];
    size_t n = 0;
    for (int s = 0; s < BENCH_N_SLOTS; s++)
        if (given(p, (clnorm_arg_slot)s))
            args[n++] = (clnorm_host_arg){(clnorm_arg_slot)s, p->t[s]};
    clnorm_status st = clnorm_ref_execute(&p->desc, p->dir, args, n);
    if (st != CLNORM_OK)
        snprintf(msg, msg_size, "clnorm_ref_execute: %s", clnorm_status_string(st));
    return st == CLNORM_OK ? 0 : -1;
}

int bench_problem_init(bench_problem *p, const bench_case *c, clnorm_ctx *ctx, char *msg,
                       size_t msg_size)
{
    memset(p, 0, sizeof *p);
    const bench_op_info *info = bench_op_get(c->op);
    if (!info) {
        snprintf(msg, msg_size, "no op %u", (unsigned)c->op);
        return -1;
    }
    const size_t rows = c->shape.rows, cols = c->shape.cols;
    p->op = c->op;
    p->info = info;
    p->kind = info->kind;
    p->dir = info->dir;
    p->dtype = c->dtype;
    p->rows = rows;
    p->cols = cols;
    p->shape = c->shape;
    p->layout = c->layout;
    p->n_elems = rows * cols * (info->form == BENCH_FORM_GROUPS ? bench_shape_spatial(&c->shape)
                                                                 : 1);
    p->elem = bench_elem_size(c->dtype);
    p->psize = bench_param_size(c->dtype);
    p->eps = 1e-5f;
    bench_case_desc(p, 0, &p->desc);
    if (clnorm_desc_check(&p->desc, msg, msg_size) != CLNORM_OK) {
        bench_problem_free(p);
        return -1;
    }

    for (int s = 0; s < BENCH_N_SLOTS; s++) {
        const clnorm_arg_slot slot = (clnorm_arg_slot)s;
        clnorm_status st = clnorm_slot_query(&p->desc, p->dir, slot, &p->slot[s]);
        if (st != CLNORM_OK) {
            snprintf(msg, msg_size, "clnorm_slot_query(%s): %s", clnorm_arg_name(slot),
                     clnorm_status_string(st));
            bench_problem_free(p);
            return -1;
        }
        if (!given(p, slot))
            continue;
        const size_t bytes = bench_slot_elems(p, slot) * bench_slot_esize(p, slot);
        if (!(p->t[s] = malloc(bytes ? bytes : 1))) {
            snprintf(msg, msg_size, "out of host memory for the %zu-element inputs",
                     p->n_elems);
            bench_problem_free(p);
            return -1;
        }
        if (info->row_slots & BENCH_SLOT(s))
            p->n_arrays++;
        /* mean and rstd are the op's business, not traffic the op must cause */
        if (slot != CLNORM_ARG_MEAN && slot != CLNORM_ARG_RSTD)
            p->bytes += (double)bytes;
    }
    p->copy_bytes = 2.0 * (double)(p->n_elems * p->elem);

    uint64_t seed = 0x636c6e6f726dull ^ (uint64_t)rows * 1000003u ^ (uint64_t)cols;
    if (info->form == BENCH_FORM_GROUPS) /* both layouts draw the same numbers */
        seed ^= (uint64_t)bench_shape_spatial(&c->shape) * 0x9E3779B1u;
    offset_rows(p, CLNORM_ARG_X, &seed);
    const clnorm_dtype pt = p->slot[CLNORM_ARG_GAMMA].dtype;
    for (size_t j = 0; j < cols; j++) {
        /* both drawn whether given or not, so the draws after them stay where they were */
        const double g = 0.5 + unit(&seed), b = unit(&seed) - 0.5;
        if (given(p, CLNORM_ARG_GAMMA))
            bench_param_put(pt, p->t[CLNORM_ARG_GAMMA], j, g);
        if (given(p, CLNORM_ARG_BETA))
            bench_param_put(p->slot[CLNORM_ARG_BETA].dtype, p->t[CLNORM_ARG_BETA], j, b);
    }
    if (given(p, CLNORM_ARG_DY)) {
        const clnorm_slot_info *si = &p->slot[CLNORM_ARG_DY];
        for (size_t i = 0; i < p->n_elems; i++)
            bench_put(si->dtype, p->t[CLNORM_ARG_DY], i, normal(&seed));
    }
    if (given(p, CLNORM_ARG_RESIDUAL))
        offset_rows(p, CLNORM_ARG_RESIDUAL, &seed);
    const clnorm_arg_slot mods[2] = {CLNORM_ARG_SCALE, CLNORM_ARG_SHIFT};
    for (int m = 0; m < 2; m++) {
        if (!given(p, mods[m]))
            continue;
        const clnorm_slot_info *si = &p->slot[mods[m]];
        for (size_t b = 0; b < si->rows; b++)
            for (size_t j = 0; j < si->cols; j++)
                bench_param_put(si->dtype, p->t[mods[m]], b * si->stride + j,
                                unit(&seed) - 0.5);
    }

    if (reference(p, ctx, msg, msg_size) != 0) {
        bench_problem_free(p);
        return -1;
    }
    return 0;
}
