/*
 * test_aligned.c - the subgroup kernel's two copies (kernels/norm_subgroup.cl): with every
 * row and parameter vector on a vector boundary the forward reads and writes through aligned
 * vector accesses (CLNORM_KF_ALIGNED, set per call by src/execute.c), else through vloadn.
 * The same problem run at offsets 0, at offsets of 16 elements (whole vectors for every
 * vector width the library uses: aligned again, away from the buffer's start) and at offsets
 * of 1 (never aligned) must match the reference each time and give the same bits each time:
 * LayerNorm, RMSNorm, the fused add with its sum, a per-sample modulation, and GroupNorm in
 * NCHW, in float32, float16 and bfloat16. And a buffer made over the application's memory
 * (CL_MEM_USE_HOST_PTR, as the Python package makes them) at an address that is not a whole
 * vector must take the unaligned copy: a CPU runtime computes on that memory in place. CTest
 * runs the suite with the CPU's vector width and with a GPU's (4 lanes).
 */
#include "tu_problem.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static clnorm_ctx *g_ctx;

static clnorm_desc row_desc(clnorm_kind kind, clnorm_dtype t, size_t rows, size_t cols,
                            unsigned flags, size_t samples)
{
    clnorm_desc d;
    clnorm_desc_init(&d, kind, rows, cols);
    d.dtype = t;
    d.flags = flags;
    d.samples = samples;
    return d;
}

static tu_launch offsets_of(size_t off)
{
    tu_launch l;
    memset(&l, 0, sizeof l);
    for (unsigned s = 0; s < CLNORM_ARG_SLOT_COUNT; s++)
        l.off[s] = off;
    return l;
}

/* Runs p on the subgroup strategy at the three offsets; returns 0 when the strategy does not
 * take it here, else 1 (failing the test on any difference). */
static int same_bits_at_offsets(const tu_problem *p, const char *what)
{
    clnorm_plan *plan = tu_plan_if(g_ctx, &p->desc, CLNORM_STRATEGY_SUBGROUP);
    if (plan == NULL)
        return 0;
    static const size_t offs[3] = {0, 16, 1};
    tu_args out[3];
    for (int i = 0; i < 3; i++) {
        const tu_launch l = offsets_of(offs[i]);
        tu_problem_run_cl(g_ctx, p, plan, &l, 0, &out[i]); /* checks against the reference */
    }
    const unsigned outputs = tu_problem_outputs(p);
    for (unsigned s = 0; s < CLNORM_ARG_SLOT_COUNT; s++) {
        if (!(outputs & TU_SLOT(s)))
            continue;
        const size_t bytes = p->info[s].extent * clnorm_elem_size(p->info[s].dtype);
        for (int i = 1; i < 3; i++)
            if (memcmp(out[0].p[s], out[i].p[s], bytes) != 0)
                fail_msg("%s (%s): slot %u at offset %zu differs from offset 0", what,
                         tu_dtype_name(p->desc.dtype), s, offs[i]);
    }
    for (int i = 0; i < 3; i++)
        tu_args_free(&out[i]);
    clnorm_plan_free(plan);
    return 1;
}

static const clnorm_dtype dtypes[] = {CLNORM_F32, CLNORM_F16, CLNORM_BF16};

static void test_row_ops(void **state)
{
    (void)state;
    if (!tu_has_device(g_ctx))
        skip();
    static const struct {
        clnorm_kind kind;
        unsigned flags;
        size_t samples;
        const char *what;
    } cases[] = {
        {CLNORM_LAYER, CLNORM_SAVE_STATS, 0, "layer_norm"},
        {CLNORM_RMS, CLNORM_SAVE_STATS, 0, "rms_norm"},
        {CLNORM_ADD_LAYER, CLNORM_SAVE_STATS, 0, "add + layer_norm, sum written"},
        {CLNORM_LAYER, CLNORM_SCALE | CLNORM_SHIFT, 3, "layer_norm, modulated"},
    };
    /* 64 columns: whole vectors of 4 and 16; 9 rows: a work-group's rows past the end. */
    size_t ran = 0;
    for (size_t c = 0; c < TU_COUNT(cases); c++)
        for (size_t t = 0; t < TU_COUNT(dtypes); t++) {
            const clnorm_desc d =
                row_desc(cases[c].kind, dtypes[t], 9, 64, cases[c].flags, cases[c].samples);
            tu_problem p;
            tu_problem_make(&p, &d, CLNORM_FORWARD, TU_ALL_OPTIONAL, 11 + c, NULL);
            ran += (size_t)same_bits_at_offsets(&p, cases[c].what);
            tu_problem_free(&p);
        }
    if (ran == 0)
        skip(); /* the subgroup strategy takes none of these on this device */
}

static void test_group_nchw(void **state)
{
    (void)state;
    if (!tu_has_device(g_ctx))
        skip();
    size_t ran = 0;
    for (size_t t = 0; t < TU_COUNT(dtypes); t++) {
        /* N = 2, C = 8, G = 2, 4x4: groups of 64 elements, 64 apart in a sample */
        clnorm_desc d;
        clnorm_desc_init(&d, CLNORM_GROUP, 2, 8);
        d.dtype = dtypes[t];
        d.groups = 2;
        d.spatial = 16;
        d.layout = CLNORM_NCHW;
        d.flags = CLNORM_SAVE_STATS;
        tu_problem p;
        tu_problem_make(&p, &d, CLNORM_FORWARD, TU_ALL_OPTIONAL, 5, NULL);
        ran += (size_t)same_bits_at_offsets(&p, "group_norm NCHW");
        tu_problem_free(&p);
    }
    if (ran == 0)
        skip();
}

/* y of LayerNorm over x in buffers made with `mem_flags` over the host arrays (copied, or
 * used in place), read back into y. */
static cl_mem buffer_of(cl_context c, cl_mem_flags mem_flags, float *host, size_t n)
{
    cl_int err;
    cl_mem m = clCreateBuffer(c, CL_MEM_READ_WRITE | mem_flags, n * sizeof(float), host, &err);
    assert_int_equal(err, CL_SUCCESS);
    return m;
}
static void layer_norm_in(clnorm_plan *plan, cl_mem_flags mem_flags, float *x, float *y,
                          size_t n)
{
    cl_context c = clnorm_get_cl_context(g_ctx);
    cl_command_queue q = clnorm_get_queue(g_ctx);
    cl_mem xm = buffer_of(c, mem_flags, x, n), ym = buffer_of(c, mem_flags, y, n);
    const clnorm_arg args[] = {{CLNORM_ARG_X, xm, 0}, {CLNORM_ARG_Y, ym, 0}};
    cl_event ev = NULL;
    assert_int_equal(clnorm_execute(plan, CLNORM_FORWARD, args, 2, q, 0, NULL, &ev), CLNORM_OK);
    assert_int_equal(clWaitForEvents(1, &ev), CL_SUCCESS);
    clReleaseEvent(ev);
    assert_int_equal(clEnqueueReadBuffer(q, ym, CL_TRUE, 0, n * sizeof(float), y, 0, NULL, NULL),
                     CL_SUCCESS);
    clReleaseMemObject(xm);
    clReleaseMemObject(ym);
}

static void test_host_memory_off_vector(void **state)
{
    (void)state;
    if (!tu_has_device(g_ctx))
        skip();
    enum { ROWS = 9, COLS = 64, N = ROWS * COLS };
    clnorm_desc d;
    clnorm_desc_init(&d, CLNORM_LAYER, ROWS, COLS);
    d.flags = CLNORM_NO_GAMMA | CLNORM_NO_BETA;
    clnorm_plan *plan = NULL; /* the automatic choice: what the Python package gets */
    assert_int_equal(clnorm_plan_create(g_ctx, &d, &plan), CLNORM_OK);
    /* 64-byte aligned blocks, used from their second float: 4 bytes past any vector. */
    float *xs = aligned_alloc(64, (N + 16) * sizeof(float));
    float *ys = aligned_alloc(64, (N + 16) * sizeof(float));
    float *want = malloc(N * sizeof(float));
    assert_non_null(xs);
    assert_non_null(ys);
    assert_non_null(want);
    float *x = xs + 1, *y = ys + 1;
    for (size_t i = 0; i < N; i++)
        x[i] = (float)((i * 7919u) % 1000u) / 100.0f - 3.0f + (float)(i / COLS);
    layer_norm_in(plan, CL_MEM_COPY_HOST_PTR, x, want, N); /* aligned buffers: the aligned copy */
    layer_norm_in(plan, CL_MEM_USE_HOST_PTR, x, y, N);
    assert_memory_equal(y, want, N * sizeof(float));
    free(xs);
    free(ys);
    free(want);
    clnorm_plan_free(plan);
}

static int setup(void **state)
{
    (void)state;
    g_ctx = tu_context("aligned");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    clnorm_free(g_ctx);
    g_ctx = NULL;
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_row_ops),
        cmocka_unit_test(test_group_nchw),
        cmocka_unit_test(test_host_memory_off_vector),
    };
    return cmocka_run_group_tests_name("aligned", tests, setup, teardown);
}
