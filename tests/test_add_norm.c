/*
 * test_add_norm.c - the fused residual add (every operation of the registry that takes a
 * residual: CLNORM_ADD_LAYER, CLNORM_ADD_RMS): s = x + residual, y = norm(s), s written when
 * the SUM slot is given; backward dx (= dresidual) = dnorm(dy) + dsum. Against the CPU
 * reference (tu_problem.h tolerances) unless said otherwise:
 *   - the shape sweep in f16, bf16 and f64 (float32 is test_ops's), both directions, every
 *     strategy and AUTO (on a CPU device bf16 and f64 on AUTO and split: strategies_for);
 *   - CLNORM_RESIDUAL_F32: float32 residual and sum with f16 / bf16 x and y;
 *   - in place, as fused kernels are used: the sum written over the residual, y over x, and
 *     both at once; dx over dy, dsum, the residual;
 *   - the sum output is the sum of the operands rounded once: bitwise float(x + residual)
 *     wherever the sum's type holds x and the residual exactly (f32, f64, mixed);
 *   - large common offsets that cancel (x ~ 1e4 + N(0,1), residual ~ -1e4 + N(0,1)): y within
 *     1e-5 of a float64 oracle written here (tu_oracle) in float32, the backward's gradients
 *     within 1e-5 (normwise) of it, from recomputed and from saved statistics.
 * The finite-difference check of the backward (dsum included) is test_gradcheck's, the PyTorch
 * golden cases test_golden's and test_backward_golden's.
 */
#include "tu_oracle.h"
#include "tu_problem.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS CLNORM_ARG_SLOT_COUNT

static clnorm_ctx *g_ctx;

static const clnorm_direction dirs[2] = {CLNORM_FORWARD, CLNORM_BACKWARD};
static const clnorm_strategy all_strategies[] = {
    CLNORM_STRATEGY_AUTO, CLNORM_STRATEGY_ROW, CLNORM_STRATEGY_WORKGROUP,
    CLNORM_STRATEGY_SPLIT, CLNORM_STRATEGY_SUBGROUP};

/* The strategies a case of storage type t (and flags) runs on: every one, except on a CPU
 * device for the types other than float32 and float16. There each program costs PoCL 10-20 s
 * to build, and the strategy-specific parts of the kernels (their loops, reductions and
 * streaming-store alignment) are the same code in every type: float32 (test_ops) and float16
 * (here, the type whose unaligned stores once broke) run them all, the others the automatic
 * choice (the row kernel there) and the split one, the two that CPUs use. */
static size_t strategies_for(clnorm_dtype t, unsigned flags, clnorm_strategy out[5])
{
    static const clnorm_strategy cpu_few[] = {CLNORM_STRATEGY_AUTO, CLNORM_STRATEGY_SPLIT};
    const int all = !tu_device_is_cpu(g_ctx) || t == CLNORM_F32 ||
                    (t == CLNORM_F16 && !(flags & CLNORM_RESIDUAL_F32));
    const clnorm_strategy *list = all ? all_strategies : cpu_few;
    const size_t n = all ? TU_COUNT(all_strategies) : TU_COUNT(cpu_few);
    memcpy(out, list, n * sizeof *list);
    return n;
}

static void require_device(void)
{
    if (!tu_has_device(g_ctx))
        skip();
}

/* The operations with a residual (the registry says which). */
static size_t residual_ops(clnorm_kind out[8])
{
    size_t n = 0;
    for (size_t op = 0; op < clnorm_op_count() && n < 8; op++) {
        clnorm_op_info info;
        assert_int_equal(clnorm_op_query((clnorm_kind)op, &info), CLNORM_OK);
        if (info.forward_slots & TU_SLOT(CLNORM_ARG_RESIDUAL))
            out[n++] = (clnorm_kind)op;
    }
    if (n == 0)
        fail_msg("no operation of the registry takes a residual");
    return n;
}

static clnorm_desc make_desc(clnorm_kind kind, clnorm_dtype t, size_t rows, size_t cols,
                             unsigned flags)
{
    clnorm_desc d;
    clnorm_desc_init(&d, kind, rows, cols);
    d.dtype = t;
    d.flags = flags | CLNORM_SAVE_STATS | CLNORM_WITH_BACKWARD;
    return d;
}

static void all_passed(size_t failed, const char *what)
{
    if (failed)
        fail_msg("%s: %zu runs mismatched (the FAILED CASE lines above)", what, failed);
}

/* ------------------------------------------------------------------------------------------ */
/* The sweep in the other storage types                                                        */

/* The f32 sweep of every shape and strategy is test_ops's; here each other storage type gets
 * the shapes that change the kernels' paths (one column, odd tails, one vector, a row per
 * work-group, several column chunks, beyond the subgroup's registers), on fewer rows: the
 * full cross-product in three types took twelve minutes on the two-core CI machine. */
static const size_t sweep_cols[] = {1, 3, 31, 768, 1000, 4097, 65537};
static const size_t sweep_rows[] = {1, 17, 300};
#define FWD_MAX_ELEMENTS ((size_t)1200000)
#define BWD_MAX_ELEMENTS ((size_t)600000)

/* Every sweep shape of one storage type (and flags), both directions, every strategy. */
static void sweep(clnorm_dtype t, unsigned flags)
{
    require_device();
    clnorm_kind ops[8];
    const size_t nops = residual_ops(ops);
    size_t failed = 0;
    tu_launch l = tu_launch_offsets();
    for (size_t o = 0; o < nops; o++) {
        for (size_t ci = 0; ci < TU_COUNT(sweep_cols); ci++) {
            for (size_t ri = 0; ri < TU_COUNT(sweep_rows); ri++) {
                const size_t rows = sweep_rows[ri], cols = sweep_cols[ci];
                if (rows * cols > FWD_MAX_ELEMENTS)
                    continue;
                const clnorm_desc d = make_desc(ops[o], t, rows, cols, flags);
                tu_problem p[2];
                for (int k = 0; k < 2; k++)
                    if (k == 0 || rows * cols <= BWD_MAX_ELEMENTS)
                        tu_problem_make(&p[k], &d, dirs[k], TU_ALL_OPTIONAL,
                                        1000 * o + 100 * ci + 10 * ri + (uint64_t)k, NULL);
                clnorm_strategy st[5];
                const size_t ns = strategies_for(t, flags, st);
                for (size_t i = 0; i < ns; i++) {
                    clnorm_plan *plan = tu_plan_if(g_ctx, &d, st[i]);
                    if (plan == NULL)
                        continue; /* subgroup: too long; f64: no fp64 */
                    l.explicit_queue = (int)(i & 1);
                    for (int k = 0; k < 2; k++)
                        if (k == 0 || rows * cols <= BWD_MAX_ELEMENTS)
                            failed += tu_problem_try_cl(g_ctx, &p[k], plan, &l, 0) != 0;
                    clnorm_plan_free(plan);
                }
                tu_problem_free(&p[0]);
                if (rows * cols <= BWD_MAX_ELEMENTS)
                    tu_problem_free(&p[1]);
            }
        }
    }
    all_passed(failed, tu_dtype_name(t));
}

static void test_sweep_f16(void **state)
{
    (void)state;
    sweep(CLNORM_F16, 0);
}

static void test_sweep_bf16(void **state)
{
    (void)state;
    sweep(CLNORM_BF16, 0);
}

static void test_sweep_f64(void **state)
{
    (void)state;
    if (!tu_device_has_fp64(g_ctx))
        skip();
    sweep(CLNORM_F64, 0);
}

/* ------------------------------------------------------------------------------------------ */
/* Mixed types: a float32 residual stream with 16-bit activations                              */

static void mixed(clnorm_dtype t)
{
    require_device();
    static const size_t shapes[][2] = {{1, 1},    {2, 3},     {17, 7},    {3, 64},
                                       {17, 127}, {1001, 16}, {5, 1000},  {2, 4097},
                                       {1000, 64}, {3, 65537}};
    clnorm_kind ops[8];
    const size_t nops = residual_ops(ops);
    size_t failed = 0;
    for (size_t o = 0; o < nops; o++) {
        for (size_t s = 0; s < TU_COUNT(shapes); s++) {
            const clnorm_desc d =
                make_desc(ops[o], t, shapes[s][0], shapes[s][1], CLNORM_RESIDUAL_F32);
            clnorm_slot_info info;
            assert_int_equal(clnorm_slot_query(&d, CLNORM_FORWARD, CLNORM_ARG_RESIDUAL, &info),
                             CLNORM_OK);
            assert_int_equal(info.dtype, CLNORM_F32);
            assert_int_equal(clnorm_slot_query(&d, CLNORM_FORWARD, CLNORM_ARG_SUM, &info),
                             CLNORM_OK);
            assert_int_equal(info.dtype, CLNORM_F32);
            tu_problem p[2];
            for (int k = 0; k < 2; k++)
                tu_problem_make(&p[k], &d, dirs[k], TU_ALL_OPTIONAL,
                                2000 + 100 * o + 2 * s + (uint64_t)k, NULL);
            /* the sum (f32) written over the residual (f32): fused_add_rms_norm's in place */
            tu_launch in_place = tu_launch_offsets();
            tu_launch_in_place(&in_place, CLNORM_ARG_SUM, CLNORM_ARG_RESIDUAL);
            const tu_launch plain = tu_launch_offsets();
            clnorm_strategy st[5];
            const size_t ns = strategies_for(t, CLNORM_RESIDUAL_F32, st);
            for (size_t i = 0; i < ns; i++) {
                clnorm_plan *plan = tu_plan_if(g_ctx, &d, st[i]);
                if (plan == NULL)
                    continue;
                for (int k = 0; k < 2; k++)
                    failed += tu_problem_try_cl(g_ctx, &p[k], plan, &plain, 0) != 0;
                failed += tu_problem_try_cl(g_ctx, &p[0], plan, &in_place, 0) != 0;
                if (st[i] == CLNORM_STRATEGY_AUTO)
                    failed += tu_problem_try_host(g_ctx, &p[0], plan, &in_place, 0) != 0;
                clnorm_plan_free(plan);
            }
            failed += tu_problem_try_host(g_ctx, &p[0], NULL, &in_place, 0) != 0;
            for (int k = 0; k < 2; k++)
                tu_problem_free(&p[k]);
        }
    }
    all_passed(failed, "mixed types");
}

static void test_residual_f32_f16(void **state)
{
    (void)state;
    mixed(CLNORM_F16);
}

static void test_residual_f32_bf16(void **state)
{
    (void)state;
    mixed(CLNORM_BF16);
}

/* ------------------------------------------------------------------------------------------ */
/* In place                                                                                    */

/* The sum over the residual and y over x, each alone and both at once (vLLM's
 * fused_add_rms_norm updates the residual stream in place and normalizes into its input);
 * backward: dx over dy, over dsum and over the residual. Every storage type, dense and
 * strided (equal strides), every strategy, layer 1 and the host layer. */
static void test_in_place(void **state)
{
    (void)state;
    require_device();
    static const clnorm_dtype types[] = {CLNORM_F32, CLNORM_F16, CLNORM_BF16, CLNORM_F64};
    static const size_t shapes[][3] = {{1, 1, 0}, {17, 7, 9}, {5, 768, 0}, {3, 1000, 1003},
                                       {2, 4097, 0}, {1000, 64, 0}};
    static const clnorm_arg_slot fwd_pairs[][2][2] = {
        {{CLNORM_ARG_SUM, CLNORM_ARG_RESIDUAL}, {CLNORM_ARG_SUM, CLNORM_ARG_SUM}},
        {{CLNORM_ARG_Y, CLNORM_ARG_X}, {CLNORM_ARG_Y, CLNORM_ARG_Y}},
        {{CLNORM_ARG_SUM, CLNORM_ARG_RESIDUAL}, {CLNORM_ARG_Y, CLNORM_ARG_X}}};
    static const clnorm_arg_slot bwd_pairs[][2] = {{CLNORM_ARG_DX, CLNORM_ARG_DY},
                                                   {CLNORM_ARG_DX, CLNORM_ARG_DSUM},
                                                   {CLNORM_ARG_DX, CLNORM_ARG_RESIDUAL}};
    clnorm_kind ops[8];
    const size_t nops = residual_ops(ops);
    size_t failed = 0;
    for (size_t ti = 0; ti < TU_COUNT(types); ti++) {
        if (types[ti] == CLNORM_F64 && !tu_device_has_fp64(g_ctx))
            continue;
        for (size_t o = 0; o < nops; o++) {
            for (size_t s = 0; s < TU_COUNT(shapes); s++) {
                clnorm_desc d = make_desc(ops[o], types[ti], shapes[s][0], shapes[s][1], 0);
                d.x_stride = d.y_stride = d.residual_stride = d.sum_stride = shapes[s][2];
                tu_problem p[2];
                for (int k = 0; k < 2; k++)
                    tu_problem_make(&p[k], &d, dirs[k], TU_ALL_OPTIONAL,
                                    3000 + 1000 * ti + 100 * o + 2 * s + (uint64_t)k, NULL);
                tu_launch l[TU_COUNT(fwd_pairs) + TU_COUNT(bwd_pairs)];
                for (size_t i = 0; i < TU_COUNT(fwd_pairs); i++) {
                    l[i] = tu_launch_offsets();
                    for (int j = 0; j < 2; j++)
                        if (fwd_pairs[i][j][0] != fwd_pairs[i][j][1])
                            tu_launch_in_place(&l[i], fwd_pairs[i][j][0], fwd_pairs[i][j][1]);
                }
                for (size_t i = 0; i < TU_COUNT(bwd_pairs); i++) {
                    l[TU_COUNT(fwd_pairs) + i] = tu_launch_offsets();
                    tu_launch_in_place(&l[TU_COUNT(fwd_pairs) + i], bwd_pairs[i][0],
                                       bwd_pairs[i][1]);
                }
                for (int i = -1; i < TU_NUM_STRATEGIES; i++) {
                    clnorm_plan *plan = i < 0 ? NULL : tu_plan_if(g_ctx, &d, tu_strategies[i]);
                    if (i >= 0 && plan == NULL)
                        continue;
                    for (size_t j = 0; j < TU_COUNT(l); j++) {
                        const tu_problem *q = &p[j < TU_COUNT(fwd_pairs) ? 0 : 1];
                        if (plan != NULL)
                            failed += tu_problem_try_cl(g_ctx, q, plan, &l[j], 0) != 0;
                        failed += tu_problem_try_host(g_ctx, q, plan, &l[j], 0) != 0;
                    }
                    clnorm_plan_free(plan);
                }
                for (int k = 0; k < 2; k++)
                    tu_problem_free(&p[k]);
            }
        }
    }
    all_passed(failed, "in place");
}

/* ------------------------------------------------------------------------------------------ */
/* The sum output                                                                              */

/* Where the sum's type holds x and the residual exactly and is at least as wide as both (f32,
 * f64, f32 residual with 16-bit x), the sum is their exact sum rounded once: bit for bit. */
static void test_sum_is_rounded_once(void **state)
{
    (void)state;
    require_device();
    static const struct {
        clnorm_dtype t;
        unsigned flags;
    } cases[] = {{CLNORM_F32, 0},
                 {CLNORM_F64, 0},
                 {CLNORM_F16, CLNORM_RESIDUAL_F32},
                 {CLNORM_BF16, CLNORM_RESIDUAL_F32}};
    clnorm_kind ops[8];
    const size_t nops = residual_ops(ops);
    for (size_t c = 0; c < TU_COUNT(cases); c++) {
        if (cases[c].t == CLNORM_F64 && !tu_device_has_fp64(g_ctx))
            continue;
        for (size_t o = 0; o < nops; o++) {
            const clnorm_desc d = make_desc(ops[o], cases[c].t, 17, 1000, cases[c].flags);
            /* operands of different magnitudes, so the sum rounds */
            const tu_data data = {3.0, 100.0, -1.0, 1e-3};
            tu_problem p;
            tu_problem_make(&p, &d, CLNORM_FORWARD, TU_ALL_OPTIONAL, 4000 + 10 * c + o, &data);
            const clnorm_slot_info *si = &p.info[CLNORM_ARG_SUM];
            /* the reference's sum must be the rounded exact sum (the yardstick) */
            const clnorm_slot_info *xi = &p.info[CLNORM_ARG_X], *ri = &p.info[CLNORM_ARG_RESIDUAL];
            void *want = tu_alloc_sentinel(si->dtype, si->extent, 1);
            for (size_t r = 0; r < d.rows; r++)
                for (size_t k = 0; k < d.cols; k++)
                    clnorm_elem_store(
                        si->dtype, want, r * si->stride + k,
                        clnorm_elem_load(xi->dtype, p.in.p[CLNORM_ARG_X], r * xi->stride + k) +
                            clnorm_elem_load(ri->dtype, p.in.p[CLNORM_ARG_RESIDUAL],
                                             r * ri->stride + k));
            if (tu_cmp_exact(si->dtype, p.ref.p[CLNORM_ARG_SUM], want, si->extent,
                             "reference sum"))
                fail_msg("the reference's sum is not the exact sum rounded once");
            clnorm_strategy st[5];
            const size_t ns = strategies_for(d.dtype, d.flags, st);
            for (size_t i = 0; i < ns; i++) {
                clnorm_plan *plan = tu_plan_if(g_ctx, &d, st[i]);
                if (plan == NULL)
                    continue;
                tu_args out;
                const tu_launch l = tu_launch_offsets();
                tu_problem_run_cl(g_ctx, &p, plan, &l, 0, &out);
                char what[200];
                snprintf(what, sizeof what, "%s %s: sum", clnorm_strategy_name(st[i]),
                         tu_dtype_name(cases[c].t));
                const size_t bad = tu_cmp_exact(si->dtype, out.p[CLNORM_ARG_SUM], want,
                                                si->extent, what);
                tu_args_free(&out);
                clnorm_plan_free(plan);
                if (bad)
                    fail_msg("%s: %zu elements are not float(x + residual)", what, bad);
            }
            free(want);
            tu_problem_free(&p);
        }
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Large common offsets                                                                        */

/* x ~ 1e4 + N(0,1), residual ~ -1e4 + N(0,1): s = x + residual is O(1) while each operand is
 * 1e4; a kernel that rounded either operand's offset away, or the sum before normalizing,
 * would be off by ~1e-3. float32 results against the float64 oracle of the same float32
 * inputs. */
static const tu_data big = {1e4, 1.0, -1e4, 1.0};
static const size_t big_shapes[][2] = {{4, 3}, {4, 768}, {3, 4097}, {2, 65536}, {300, 64}};

/* The oracle's inputs of a problem (dense doubles; the caller frees them). */
static tu_oracle_in oracle_in(const tu_problem *p, double *a[SLOTS])
{
    for (unsigned s = 0; s < SLOTS; s++) {
        const clnorm_slot_info *i = &p->info[s];
        a[s] = p->in.p[s] ? tu_widen(i->dtype, p->in.p[s], i->rows, i->cols, i->stride) : NULL;
    }
    const tu_oracle_in in = {tu_kind_is_rms(p->desc.kind), p->desc.rows, p->desc.cols,
                             (double)(float)p->desc.eps, a[CLNORM_ARG_X],
                             a[CLNORM_ARG_RESIDUAL], a[CLNORM_ARG_GAMMA], a[CLNORM_ARG_BETA]};
    return in;
}

static void test_large_offsets_forward(void **state)
{
    (void)state;
    require_device();
    clnorm_kind ops[8];
    const size_t nops = residual_ops(ops);
    for (size_t o = 0; o < nops; o++) {
        for (size_t s = 0; s < TU_COUNT(big_shapes); s++) {
            const size_t rows = big_shapes[s][0], cols = big_shapes[s][1];
            const clnorm_desc d = make_desc(ops[o], CLNORM_F32, rows, cols, 0);
            tu_problem p;
            tu_problem_make(&p, &d, CLNORM_FORWARD, TU_ALL_OPTIONAL, 5000 + 10 * o + s, &big);
            double *a[SLOTS];
            const tu_oracle_in in = oracle_in(&p, a);
            double *y = malloc(rows * cols * sizeof *y), *rs = malloc(rows * sizeof *rs);
            double *m = malloc(rows * sizeof *m);
            assert_true(y && rs && m);
            tu_oracle_forward(&in, y, NULL, m, rs);
            for (size_t i = 0; i < TU_COUNT(all_strategies); i++) {
                clnorm_plan *plan = tu_plan_if(g_ctx, &d, all_strategies[i]);
                if (plan == NULL)
                    continue;
                tu_args out;
                const tu_launch l = tu_launch_offsets();
                tu_problem_run_cl(g_ctx, &p, plan, &l, 0, &out);
                char what[200];
                snprintf(what, sizeof what, "%s %s %zux%zu, offsets +-1e4: y vs float64",
                         clnorm_strategy_name(all_strategies[i]),
                         in.rms ? "add_rms" : "add_layer", rows, cols);
                size_t bad = tu_cmp_elem(CLNORM_F32, out.p[CLNORM_ARG_Y], cols, CLNORM_F64, y,
                                         cols, rows, cols, 1e-5, 0.0, what);
                snprintf(what, sizeof what, "%s offsets +-1e4: rstd vs float64",
                         clnorm_strategy_name(all_strategies[i]));
                bad += tu_cmp_elem(CLNORM_F32, out.p[CLNORM_ARG_RSTD], 1, CLNORM_F64, rs, 1,
                                   rows, 1, 0.0, 1e-5, what);
                if (out.p[CLNORM_ARG_MEAN] != NULL) {
                    snprintf(what, sizeof what, "%s offsets +-1e4: mean vs float64",
                             clnorm_strategy_name(all_strategies[i]));
                    bad += tu_cmp_elem(CLNORM_F32, out.p[CLNORM_ARG_MEAN], 1, CLNORM_F64, m, 1,
                                       rows, 1, 1e-5, 1e-6, what);
                }
                tu_args_free(&out);
                clnorm_plan_free(plan);
                if (bad)
                    fail_msg("%s: %zu mismatches", what, bad);
            }
            free(y);
            free(rs);
            free(m);
            for (unsigned k = 0; k < SLOTS; k++)
                free(a[k]);
            tu_problem_free(&p);
        }
    }
}

/* The backward of the same data against the float64 oracle (exact statistics): statistics
 * recomputed from x and the residual (mean / rstd not given), and saved by the forward
 * (float32 mean of s = O(1): its rounding moves nothing measurable). */
static void large_offsets_backward(int saved)
{
    require_device();
    clnorm_kind ops[8];
    const size_t nops = residual_ops(ops);
    size_t failed = 0;
    for (size_t o = 0; o < nops; o++) {
        for (size_t s = 0; s < TU_COUNT(big_shapes); s++) {
            const size_t rows = big_shapes[s][0], cols = big_shapes[s][1];
            const clnorm_desc d = make_desc(ops[o], CLNORM_F32, rows, cols, 0);
            const unsigned stats = TU_SLOT(CLNORM_ARG_MEAN) | TU_SLOT(CLNORM_ARG_RSTD);
            tu_problem p;
            tu_problem_make(&p, &d, CLNORM_BACKWARD, saved ? TU_ALL_OPTIONAL : ~stats,
                            6000 + 10 * o + s, &big);
            double *a[SLOTS];
            const tu_oracle_in in = oracle_in(&p, a);
            double *dx = malloc(rows * cols * sizeof *dx), *dg = malloc(cols * sizeof *dg);
            double *db = malloc(cols * sizeof *db);
            assert_true(dx && dg && db);
            tu_oracle_backward(&in, a[CLNORM_ARG_DY], NULL, NULL, a[CLNORM_ARG_DSUM], dx, dg, db);
            const double *want[SLOTS] = {NULL};
            want[CLNORM_ARG_DX] = dx;
            want[CLNORM_ARG_DGAMMA] = dg;
            want[CLNORM_ARG_DBETA] = db;
            for (size_t i = 0; i < TU_COUNT(all_strategies); i++) {
                clnorm_plan *plan = tu_plan_if(g_ctx, &d, all_strategies[i]);
                if (plan == NULL)
                    continue;
                /* the oracle is the yardstick here (the reference agrees with it) */
                tu_args out, args = p.in;
                tu_problem_alloc_outputs(&p, 0, &out);
                for (unsigned k = 0; k < SLOTS; k++)
                    if (out.p[k] != NULL)
                        args.p[k] = out.p[k];
                const tu_launch l = tu_launch_offsets();
                tu_run_cl(g_ctx, plan, CLNORM_BACKWARD, &l, &args);
                size_t bad = 0;
                for (unsigned k = 0; k < SLOTS; k++) {
                    if (want[k] == NULL || out.p[k] == NULL)
                        continue;
                    const clnorm_slot_info *si = &p.info[k];
                    char what[200];
                    snprintf(what, sizeof what, "%s %s %zux%zu offsets +-1e4, %s statistics: %s",
                             clnorm_strategy_name(all_strategies[i]),
                             in.rms ? "add_rms" : "add_layer", rows, cols,
                             saved ? "saved" : "recomputed", clnorm_arg_name((clnorm_arg_slot)k));
                    bad += tu_cmp_norm(CLNORM_F32, out.p[k], si->stride, CLNORM_F64, want[k],
                                       si->cols, si->rows, si->cols, 1e-5, NULL, what);
                }
                if (bad)
                    print_error("FAILED CASE: %s %zux%zu\n",
                                clnorm_strategy_name(all_strategies[i]), rows, cols);
                failed += bad != 0;
                tu_args_free(&out);
                clnorm_plan_free(plan);
            }
            free(dx);
            free(dg);
            free(db);
            for (unsigned k = 0; k < SLOTS; k++)
                free(a[k]);
            tu_problem_free(&p);
        }
    }
    all_passed(failed, saved ? "saved statistics" : "recomputed statistics");
}

static void test_large_offsets_backward_recomputed(void **state)
{
    (void)state;
    large_offsets_backward(0);
}

static void test_large_offsets_backward_saved(void **state)
{
    (void)state;
    large_offsets_backward(1);
}

static int group_setup(void **state)
{
    (void)state;
    g_ctx = tu_context("add norm");
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
        cmocka_unit_test(test_sweep_f16),
        cmocka_unit_test(test_sweep_bf16),
        cmocka_unit_test(test_sweep_f64),
        cmocka_unit_test(test_residual_f32_f16),
        cmocka_unit_test(test_residual_f32_bf16),
        cmocka_unit_test(test_in_place),
        cmocka_unit_test(test_sum_is_rounded_once),
        cmocka_unit_test(test_large_offsets_forward),
        cmocka_unit_test(test_large_offsets_backward_recomputed),
        cmocka_unit_test(test_large_offsets_backward_saved),
    };
    return cmocka_run_group_tests_name("add norm", tests, group_setup, group_teardown);
}
