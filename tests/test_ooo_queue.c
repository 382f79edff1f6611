/*
 * test_ooo_queue.c - an application's out-of-order queue, adopted with
 * clnorm_create_from_queue. Multi-kernel operations (split forward: statistics then apply;
 * backward: statistics, chunk sums, rows, parameters) and the host layer's read-backs must be
 * ordered by events, not by the queue. Every strategy, forward and backward, against the
 * reference. Skipped where the device has no out-of-order queues.
 */
#include "test_util.h"

#include <math.h>
#include <stdlib.h>

static void test_out_of_order(void **state)
{
    (void)state;
    cl_platform_id platform;
    cl_device_id dev;
    cl_uint n = 0;
    if (clGetPlatformIDs(1, &platform, &n) != CL_SUCCESS || n == 0 ||
        clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &dev, &n) != CL_SUCCESS)
        skip();
    cl_command_queue_properties props = 0;
    assert_int_equal(clGetDeviceInfo(dev, CL_DEVICE_QUEUE_PROPERTIES, sizeof props, &props, NULL),
                     CL_SUCCESS);
    if (!(props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE))
        skip();
    cl_int err;
    cl_context context = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    assert_int_equal(err, CL_SUCCESS);
    cl_command_queue queue =
        clCreateCommandQueue(context, dev, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, &err);
    assert_int_equal(err, CL_SUCCESS);
    clnorm_ctx *ctx = NULL;
    assert_int_equal(clnorm_create_from_queue(queue, &ctx), CLNORM_OK);

    /* Few long rows, so split runs several column chunks and the backward cuts rows too. */
    const size_t rows = 6, cols = 70001, total = rows * cols;
    tu_rng rng;
    tu_rng_seed(&rng, 77);
    float *x = malloc(total * sizeof *x), *dy = malloc(total * sizeof *dy);
    float *y = malloc(total * sizeof *y), *want = malloc(total * sizeof *want);
    float *g = malloc(cols * sizeof *g), *b = malloc(cols * sizeof *b);
    float *dg = malloc(cols * sizeof *dg), *dg_want = malloc(cols * sizeof *dg_want);
    assert_true(x && dy && y && want && g && b && dg && dg_want);
    tu_fill_normal(&rng, x, total, 3.0, 2.0);
    tu_fill_normal(&rng, dy, total, 0.0, 1.0);
    tu_fill_normal(&rng, g, cols, 1.0, 0.3);
    tu_fill_normal(&rng, b, cols, 0.0, 0.3);

    clnorm_desc d;
    clnorm_desc_init(&d, CLNORM_LAYER, rows, cols);
    d.flags = CLNORM_WITH_BACKWARD;
    for (int s = 0; s < TU_NUM_STRATEGIES; s++) {
        clnorm_plan *plan = tu_plan_if(ctx, &d, tu_strategies[s]);
        if (!plan)
            continue;
        assert_int_equal(clnorm_forward_host(plan, x, y, g, b, NULL, NULL), CLNORM_OK);
        assert_int_equal(clnorm_ref_forward(&d, x, want, g, b, NULL, NULL), CLNORM_OK);
        assert_int_equal(tu_cmp_f32(y, cols, want, cols, rows, cols, 2e-5, 2e-5,
                                    "out-of-order queue, forward"),
                         0);
        const unsigned mask = CLNORM_GRAD_X | CLNORM_GRAD_GAMMA;
        assert_int_equal(clnorm_backward_host(plan, mask, x, dy, NULL, NULL, g, y, dg, NULL),
                         CLNORM_OK);
        assert_int_equal(clnorm_ref_backward(&d, mask, x, dy, NULL, NULL, g, want, dg_want, NULL),
                         CLNORM_OK);
        assert_int_equal(tu_cmp_f32(y, cols, want, cols, rows, cols, 2e-5, 2e-5,
                                    "out-of-order queue, dx"),
                         0);
        assert_int_equal(tu_cmp_f32(dg, cols, dg_want, cols, 1, cols, 2e-5, 2e-5,
                                    "out-of-order queue, dgamma"),
                         0);
        clnorm_plan_free(plan);
    }
    clnorm_free(ctx);
    free(x);
    free(dy);
    free(y);
    free(want);
    free(g);
    free(b);
    free(dg);
    free(dg_want);
    assert_int_equal(clReleaseCommandQueue(queue), CL_SUCCESS);
    assert_int_equal(clReleaseContext(context), CL_SUCCESS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_out_of_order)};
    return cmocka_run_group_tests_name("out-of-order queue", tests, NULL, NULL);
}
