/*
 * test_ops.c - every operation of the registry (clnorm_op_count / clnorm_op_query), driven by
 * its slot infos alone (clnorm_slot_query): no operation is named here, so a newly registered
 * one is tested without a new loop. Against the CPU reference (clnorm_ref_execute), float32:
 *   - the shape sweep, both directions, every strategy and AUTO, through layer 1 with every
 *     tensor at a non-zero element offset between sentinels (tu_run_cl checks every element
 *     around and between the outputs' rows); a failing case is listed and the sweep goes on;
 *   - every description flag the operation accepts (clnorm_desc_check decides) with every
 *     subset of OPTIONAL slots the reference accepts;
 *   - strided row tensors, each with a stride of its own;
 *   - in place: every output that may be the very same tensor as an input row tensor (same
 *     element type and stride, by the slot infos), through layer 1 and the host layer;
 *   - the host layer (sentinel tails), the reference strategy and the reference itself;
 *   - empty batches.
 * Tolerances: tu_problem.h (f32 normwise 1e-5, forward also 2e-5 abs + 2e-5 rel per element).
 * The error paths derived from the slot infos are test_ops_errors.c's. CTest runs this suite
 * three times: as is, with a GPU's vector width (CLNORM_VECTOR_WIDTH=4) and with at most two
 * work-groups along the rows (CLNORM_MAX_GROUPS=2: every grid-stride loop runs several times;
 * the sweep's 1000 rows are more than 2 x 64 items x 2 groups).
 */
#include "tu_problem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS CLNORM_ARG_SLOT_COUNT

static clnorm_ctx *g_ctx;

static const size_t sweep_cols[] = {1, 2, 3, 7, 31, 64, 127, 768, 1000, 1024, 4097, 65537,
                                    1048576};
static const size_t sweep_rows[] = {1, 2, 17, 1000};
/* Sweep shapes above these are left out (1000 x 65537, ...); the backward's is lower (it
 * reads three row tensors and keeps a float64 reference of each). */
#define FWD_MAX_ELEMENTS ((size_t)4200000)
#define BWD_MAX_ELEMENTS ((size_t)2100000)

static const clnorm_direction dirs[2] = {CLNORM_FORWARD, CLNORM_BACKWARD};
static const clnorm_strategy all_strategies[] = {
    CLNORM_STRATEGY_AUTO, CLNORM_STRATEGY_ROW, CLNORM_STRATEGY_WORKGROUP,
    CLNORM_STRATEGY_SPLIT, CLNORM_STRATEGY_SUBGROUP};

/* The flags every description of this suite has: statistics saved (so the forward writes
 * them and the backward may take them) and the backward prepared, so one plan serves both
 * directions. */
#define FULL_FLAGS (CLNORM_SAVE_STATS | CLNORM_WITH_BACKWARD)

static clnorm_desc make_desc(size_t op, size_t rows, size_t cols, unsigned flags)
{
    clnorm_desc d;
    clnorm_desc_init(&d, (clnorm_kind)op, rows, cols);
    d.flags = flags;
    return d;
}

static void require_device(void)
{
    if (!tu_has_device(g_ctx))
        skip();
}

/* A plan on `strategy` (AUTO: clnorm's choice), or NULL where the strategy cannot take it. */
static clnorm_plan *plan_on(const clnorm_desc *d, clnorm_strategy strategy)
{
    clnorm_plan *plan = tu_plan_if(g_ctx, d, strategy);
    if (plan != NULL && strategy != CLNORM_STRATEGY_AUTO)
        assert_int_equal(clnorm_plan_strategy(plan), strategy);
    return plan;
}

/* ------------------------------------------------------------------------------------------ */
/* The sweep                                                                                   */

/* A test's runs go on past a mismatch, so that a failure lists every failing case. */
static void all_passed(size_t failed, const char *what)
{
    if (failed)
        fail_msg("%s: %zu runs mismatched (the FAILED CASE lines above)", what, failed);
}

/* Each (op, shape) problem is made once, both directions, and run on AUTO and every
 * strategy (one plan each serves both directions). */
static void test_sweep(void **state)
{
    (void)state;
    require_device();
    size_t failed = 0;
    tu_launch l = tu_launch_offsets();
    for (size_t op = 0; op < clnorm_op_count(); op++) {
        for (size_t ci = 0; ci < TU_COUNT(sweep_cols); ci++) {
            for (size_t ri = 0; ri < TU_COUNT(sweep_rows); ri++) {
                const size_t rows = sweep_rows[ri], cols = sweep_cols[ci];
                if (rows * cols > FWD_MAX_ELEMENTS)
                    continue;
                const clnorm_desc d = make_desc(op, rows, cols, FULL_FLAGS);
                const int ndirs = rows * cols > BWD_MAX_ELEMENTS ? 1 : 2;
                tu_problem p[2];
                for (int k = 0; k < ndirs; k++)
                    tu_problem_make(&p[k], &d, dirs[k], TU_ALL_OPTIONAL,
                                    10000 * op + 100 * ci + 10 * ri + (uint64_t)k, NULL);
                for (size_t i = 0; i < TU_COUNT(all_strategies); i++) {
                    clnorm_plan *plan = plan_on(&d, all_strategies[i]);
                    if (plan == NULL)
                        continue; /* subgroup: the row does not fit its registers */
                    l.explicit_queue = (int)((ci + ri + i) & 1);
                    for (int k = 0; k < ndirs; k++)
                        failed += tu_problem_try_cl(g_ctx, &p[k], plan, &l, 0) != 0;
                    clnorm_plan_free(plan);
                }
                for (int k = 0; k < ndirs; k++)
                    tu_problem_free(&p[k]);
            }
        }
    }
    all_passed(failed, "sweep");
}

/* ------------------------------------------------------------------------------------------ */
/* Flags and optional slots                                                                    */

/* Whether the reference accepts this set of slots given for (kind, flags, dir): asked on a
 * one-element problem, so that what the op table allows decides, not this file. */
static int ref_accepts(const clnorm_desc *d, clnorm_direction dir, unsigned given)
{
    clnorm_desc one = *d;
    one.rows = 1;
    one.cols = 1;
    one.x_stride = one.y_stride = one.residual_stride = one.sum_stride = 0;
    double buf[SLOTS][2];
    clnorm_host_arg args[SLOTS];
    size_t n = 0;
    for (unsigned s = 0; s < SLOTS; s++) {
        buf[s][0] = buf[s][1] = 1.0;
        if (given & TU_SLOT(s))
            args[n++] = (clnorm_host_arg){(clnorm_arg_slot)s, buf[s]};
    }
    return clnorm_ref_execute(&one, dir, args, n) == CLNORM_OK;
}

/* The uses of every slot in both directions: two flag sets with the same are the same test. */
static void slot_uses(const clnorm_desc *d, unsigned char uses[2 * SLOTS])
{
    clnorm_slot_info info[SLOTS];
    for (int k = 0; k < 2; k++) {
        tu_slot_infos(d, dirs[k], info);
        for (unsigned s = 0; s < SLOTS; s++)
            uses[k * SLOTS + s] = (unsigned char)info[s].use;
    }
}

/* The OPTIONAL slots of a direction as a list, and the REQUIRED ones as a mask. */
static size_t optional_slots(const clnorm_desc *d, clnorm_direction dir, unsigned *list,
                             unsigned *required)
{
    clnorm_slot_info info[SLOTS];
    tu_slot_infos(d, dir, info);
    size_t n = 0;
    *required = 0;
    for (unsigned s = 0; s < SLOTS; s++) {
        if (info[s].use == CLNORM_SLOT_OPTIONAL)
            list[n++] = s;
        if (info[s].use == CLNORM_SLOT_REQUIRED)
            *required |= TU_SLOT(s);
    }
    return n;
}

/* Every subset of the OPTIONAL slots the reference accepts, on one plan; the mismatching
 * runs are counted. */
static size_t subsets_on(const clnorm_desc *d, clnorm_direction dir, clnorm_plan *plan,
                       uint64_t seed)
{
    unsigned opt[SLOTS], required;
    const size_t n = optional_slots(d, dir, opt, &required);
    const tu_launch l = tu_launch_offsets();
    size_t failed = 0;
    for (unsigned m = 0; m < (1u << n); m++) {
        unsigned optional = 0;
        for (size_t i = 0; i < n; i++)
            if (m & (1u << i))
                optional |= TU_SLOT(opt[i]);
        if (!ref_accepts(d, dir, required | optional))
            continue; /* test_ops_errors: every path rejects it the same way */
        tu_problem p;
        tu_problem_make(&p, d, dir, optional, seed + m, NULL);
        failed += tu_problem_try_cl(g_ctx, &p, plan, &l, 0) != 0;
        tu_problem_free(&p);
    }
    return failed;
}

static void test_flags_and_optional_slots(void **state)
{
    (void)state;
    require_device();
    static const size_t fwd_shapes[][2] = {{1, 1},    {2, 3},    {17, 7},  {3, 768},
                                           {1000, 31}, {2, 4097}, {1, 65537}};
    static const size_t bwd_shapes[][2] = {{1, 7}, {17, 127}, {3, 1000}, {2, 4097}};
    static const unsigned flag_bits[] = {CLNORM_NO_GAMMA, CLNORM_NO_BETA, CLNORM_SAVE_STATS,
                                         CLNORM_RESIDUAL_F32};
    const unsigned nflags = 1u << TU_COUNT(flag_bits);
    size_t failed = 0;
    for (size_t op = 0; op < clnorm_op_count(); op++) {
        for (int k = 0; k < 2; k++) {
            unsigned char seen[16][2 * SLOTS];
            size_t nseen = 0;
            for (unsigned f = 0; f < nflags; f++) {
                unsigned flags = CLNORM_WITH_BACKWARD;
                for (size_t b = 0; b < TU_COUNT(flag_bits); b++)
                    if (f & (1u << b))
                        flags |= flag_bits[b];
                const clnorm_desc probe = make_desc(op, 1, 1, flags);
                if (clnorm_desc_check(&probe, NULL, 0) != CLNORM_OK)
                    continue; /* not a flag set of this operation and dtype */
                unsigned char uses[2 * SLOTS];
                slot_uses(&probe, uses);
                int dup = 0;
                for (size_t i = 0; i < nseen; i++)
                    dup |= memcmp(seen[i] + k * SLOTS, uses + k * SLOTS, SLOTS) == 0;
                if (dup)
                    continue; /* e.g. SAVE_STATS changes nothing the backward takes */
                memcpy(seen[nseen++], uses, sizeof uses);
                const size_t ns = k == 0 ? TU_COUNT(fwd_shapes) : TU_COUNT(bwd_shapes);
                for (size_t si = 0; si < ns; si++) {
                    const size_t *sh = k == 0 ? fwd_shapes[si] : bwd_shapes[si];
                    const clnorm_desc d = make_desc(op, sh[0], sh[1], flags);
                    for (int i = 0; i < TU_NUM_STRATEGIES; i++) {
                        clnorm_plan *plan = plan_on(&d, tu_strategies[i]);
                        if (plan == NULL)
                            continue;
                        failed += subsets_on(&d, dirs[k], plan,
                                             100000 * op + 1000 * f + 64 * si + (uint64_t)k);
                        clnorm_plan_free(plan);
                    }
                }
            }
        }
    }
    all_passed(failed, "flags and optional slots");
}

/* ------------------------------------------------------------------------------------------ */
/* Strided row tensors                                                                         */

static void test_strided(void **state)
{
    (void)state;
    require_device();
    static const size_t shapes[][2] = {{1, 1},   {3, 3},    {17, 7},   {2, 64},
                                       {17, 127}, {5, 768}, {3, 1000}, {2, 4097},
                                       {2, 65537}, {1000, 31}};
    /* Extra elements per row of x, y, residual, sum: each tensor a stride of its own. */
    static const size_t pads[][4] = {{3, 9, 5, 1}, {17, 1, 2, 11}};
    size_t failed = 0;
    for (size_t op = 0; op < clnorm_op_count(); op++) {
        for (size_t s = 0; s < TU_COUNT(shapes); s++) {
            for (size_t k = 0; k < TU_COUNT(pads); k++) {
                const size_t cols = shapes[s][1];
                clnorm_desc d = make_desc(op, shapes[s][0], cols, FULL_FLAGS);
                d.x_stride = cols + pads[k][0];
                d.y_stride = cols + pads[k][1];
                d.residual_stride = cols + pads[k][2];
                d.sum_stride = cols + pads[k][3];
                const uint64_t seed = 200000 + 1000 * op + 10 * s + 2 * k;
                tu_problem p[2];
                for (int j = 0; j < 2; j++)
                    tu_problem_make(&p[j], &d, dirs[j], TU_ALL_OPTIONAL, seed + (uint64_t)j,
                                    NULL);
                tu_launch l = tu_launch_offsets();
                for (size_t i = 0; i < TU_COUNT(all_strategies); i++) {
                    clnorm_plan *plan = plan_on(&d, all_strategies[i]);
                    if (plan == NULL)
                        continue;
                    for (int j = 0; j < 2; j++) {
                        failed += tu_problem_try_cl(g_ctx, &p[j], plan, &l, 0) != 0;
                        if (all_strategies[i] == CLNORM_STRATEGY_AUTO)
                            failed += tu_problem_try_host(g_ctx, &p[j], plan, &l, 0) != 0;
                    }
                    clnorm_plan_free(plan);
                }
                for (int j = 0; j < 2; j++)
                    tu_problem_free(&p[j]);
            }
        }
    }
    all_passed(failed, "strided");
}

/* ------------------------------------------------------------------------------------------ */
/* In place                                                                                    */

/* Can output `out` be the very same tensor as input `in`? Both row tensors of the operation
 * (tu_row_slots: not a parameter or statistic that only looks like one in a one-row problem),
 * the same element type and stride. */
static int may_alias(const tu_problem *p, unsigned rows_mask, unsigned out, unsigned in)
{
    const clnorm_slot_info *o = &p->info[out], *i = &p->info[in];
    return (rows_mask & TU_SLOT(out)) && (rows_mask & TU_SLOT(in)) && o->is_output &&
           !i->is_output && o->dtype == i->dtype && o->stride == i->stride;
}

/* Runs every in-place pair of a problem on a plan (layer 1, or the host layer; plan NULL:
 * the reference). Returns the number of pairs; *failed counts the mismatching runs. */
static size_t in_place_pairs(const tu_problem *p, clnorm_plan *plan, int host, size_t *failed)
{
    const unsigned rows_mask = tu_row_slots(&p->desc, p->dir);
    size_t pairs = 0;
    for (unsigned out = 0; out < SLOTS; out++) {
        for (unsigned in = 0; in < SLOTS; in++) {
            if (!(p->given & TU_SLOT(out)) || !(p->given & TU_SLOT(in)) ||
                !may_alias(p, rows_mask, out, in))
                continue;
            tu_launch l = tu_launch_offsets();
            tu_launch_in_place(&l, (clnorm_arg_slot)out, (clnorm_arg_slot)in);
            *failed += (host ? tu_problem_try_host(g_ctx, p, plan, &l, 0)
                             : tu_problem_try_cl(g_ctx, p, plan, &l, 0)) != 0;
            pairs++;
        }
    }
    return pairs;
}

static void test_in_place(void **state)
{
    (void)state;
    require_device();
    static const size_t shapes[][3] = {/* rows, cols, stride of every row tensor */
                                       {1, 1, 0},        {17, 7, 0},     {17, 7, 11},
                                       {5, 768, 0},      {3, 1000, 1003}, {2, 4097, 4100},
                                       {1, 65537, 0},    {2, 1048576, 0}};
    size_t failed = 0;
    for (size_t op = 0; op < clnorm_op_count(); op++) {
        for (size_t s = 0; s < TU_COUNT(shapes); s++) {
            const size_t st = shapes[s][2];
            clnorm_desc d = make_desc(op, shapes[s][0], shapes[s][1], FULL_FLAGS);
            d.x_stride = d.y_stride = d.residual_stride = d.sum_stride = st;
            for (int k = 0; k < 2; k++) {
                if (dirs[k] == CLNORM_BACKWARD && d.rows * d.cols > BWD_MAX_ELEMENTS)
                    continue;
                tu_problem p;
                tu_problem_make(&p, &d, dirs[k], TU_ALL_OPTIONAL,
                                300000 + 1000 * op + 10 * s + (uint64_t)k, NULL);
                /* at least y in place of x, or dx of dy: the op table says more */
                if (in_place_pairs(&p, NULL, 1, &failed) == 0)
                    fail_msg("no in-place pair derived for op %zu", op);
                for (int i = 0; i < TU_NUM_STRATEGIES; i++) {
                    clnorm_plan *plan = plan_on(&d, tu_strategies[i]);
                    if (plan == NULL)
                        continue;
                    in_place_pairs(&p, plan, 0, &failed);
                    in_place_pairs(&p, plan, 1, &failed);
                    clnorm_plan_free(plan);
                }
                tu_problem_free(&p);
            }
        }
    }
    all_passed(failed, "in place");
}

/* ------------------------------------------------------------------------------------------ */
/* Host layer, reference strategy, empty batches                                               */

/* Layer 2 on clnorm's choice and on every strategy, the reference strategy's plan (which
 * exists on any context) and the reference: sentinel tails after every output. */
static void test_host(void **state)
{
    (void)state;
    if (g_ctx == NULL)
        skip();
    static const size_t shapes[][3] = {{1, 1, 0}, {17, 7, 9}, {3, 768, 800}, {1000, 31, 0},
                                       {2, 4097, 0}};
    const int dev = tu_has_device(g_ctx);
    const tu_launch l = tu_launch_offsets();
    size_t failed = 0;
    for (size_t op = 0; op < clnorm_op_count(); op++) {
        for (size_t s = 0; s < TU_COUNT(shapes); s++) {
            clnorm_desc d = make_desc(op, shapes[s][0], shapes[s][1], FULL_FLAGS);
            d.x_stride = d.y_stride = d.residual_stride = d.sum_stride = shapes[s][2];
            for (int k = 0; k < 2; k++) {
                tu_problem p;
                tu_problem_make(&p, &d, dirs[k], TU_ALL_OPTIONAL,
                                400000 + 1000 * op + 10 * s + (uint64_t)k, NULL);
                failed += tu_problem_try_host(g_ctx, &p, NULL, &l, 0) != 0;
                /* -2: the plan clnorm picks, -1: the reference strategy (any context) */
                for (int i = -2; i < (dev ? TU_NUM_STRATEGIES : 0); i++) {
                    const clnorm_strategy st = i == -2   ? CLNORM_STRATEGY_AUTO
                                               : i == -1 ? CLNORM_STRATEGY_REFERENCE
                                                         : tu_strategies[i];
                    clnorm_plan *plan = tu_plan_if(g_ctx, &d, st);
                    if (plan == NULL)
                        continue;
                    failed += tu_problem_try_host(g_ctx, &p, plan, &l, 0) != 0;
                    clnorm_plan_free(plan);
                }
                tu_problem_free(&p);
            }
        }
    }
    all_passed(failed, "host");
}

/* rows = 0: a no-op that succeeds everywhere; parameter gradients are sums over no rows. */
static void test_empty_batch(void **state)
{
    (void)state;
    if (g_ctx == NULL)
        skip();
    const int dev = tu_has_device(g_ctx);
    const tu_launch l = tu_launch_offsets();
    size_t failed = 0;
    for (size_t op = 0; op < clnorm_op_count(); op++) {
        const clnorm_desc d = make_desc(op, 0, 37, FULL_FLAGS);
        for (int k = 0; k < 2; k++) {
            tu_problem p;
            tu_problem_make(&p, &d, dirs[k], TU_ALL_OPTIONAL, 500000 + 10 * op + (uint64_t)k,
                            NULL);
            /* the reference's own answer: the parameter gradients are +0 */
            for (unsigned s = 0; s < SLOTS; s++)
                for (size_t i = 0; p.ref.p[s] != NULL && i < p.info[s].extent; i++)
                    if (tu_bits(p.info[s].dtype, p.ref.p[s], i) != 0)
                        fail_msg("op %zu, rows = 0: the reference's %s[%zu] is not +0", op,
                                 clnorm_arg_name((clnorm_arg_slot)s), i);
            for (int i = -1; i < (dev ? TU_NUM_STRATEGIES : 0); i++) {
                const clnorm_strategy st = i < 0 ? CLNORM_STRATEGY_AUTO : tu_strategies[i];
                clnorm_plan *plan = tu_plan_if(g_ctx, &d, st);
                if (plan == NULL)
                    continue;
                failed += tu_problem_try_host(g_ctx, &p, plan, &l, 0) != 0;
                if (dev)
                    failed += tu_problem_try_cl(g_ctx, &p, plan, &l, 0) != 0;
                clnorm_plan_free(plan);
            }
            tu_problem_free(&p);
        }
    }
    all_passed(failed, "empty batch");
}

/* The registry is what the tests iterate: it must not be empty, and every entry must
 * describe itself. */
static void test_registry(void **state)
{
    (void)state;
    assert_true(clnorm_op_count() >= 1);
    for (size_t op = 0; op < clnorm_op_count(); op++) {
        clnorm_op_info info;
        assert_int_equal(clnorm_op_query((clnorm_kind)op, &info), CLNORM_OK);
        assert_non_null(info.name);
        assert_non_null(info.summary);
        assert_true(info.name[0] != '\0');
        /* every slot the op takes has a use in some description, none it does not take */
        const clnorm_desc d = make_desc(op, 3, 5, FULL_FLAGS);
        for (int k = 0; k < 2; k++) {
            const unsigned takes = k ? info.backward_slots : info.forward_slots;
            clnorm_slot_info si[SLOTS];
            tu_slot_infos(&d, dirs[k], si);
            for (unsigned s = 0; s < SLOTS; s++)
                if (!(takes & TU_SLOT(s)) && si[s].use != CLNORM_SLOT_UNUSED)
                    fail_msg("%s: %s is used but not in the op's slot list", info.name,
                             clnorm_arg_name((clnorm_arg_slot)s));
        }
    }
    clnorm_op_info info;
    assert_int_equal(clnorm_op_query((clnorm_kind)clnorm_op_count(), &info),
                     CLNORM_INVALID_ARGUMENT);
}

static int group_setup(void **state)
{
    (void)state;
    g_ctx = tu_context("ops");
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
        cmocka_unit_test(test_registry),
        cmocka_unit_test(test_sweep),
        cmocka_unit_test(test_flags_and_optional_slots),
        cmocka_unit_test(test_strided),
        cmocka_unit_test(test_in_place),
        cmocka_unit_test(test_host),
        cmocka_unit_test(test_empty_batch),
    };
    return cmocka_run_group_tests_name("ops", tests, group_setup, group_teardown);
}
