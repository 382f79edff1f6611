/*
 * tu_device.c - contexts, plans and cl_mem helpers of test_util.h.
 */
#define _POSIX_C_SOURCE 200809L /* setenv, unsetenv, strdup */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

clnorm_ctx *tu_context(const char *suite)
{
    clnorm_ctx *ctx = NULL;
    if (clnorm_create(NULL, &ctx) != CLNORM_OK)
        return NULL; /* device tests skip */
    print_message("%s: running on %s\n", suite, clnorm_device_name(ctx));
    return ctx;
}

char *tu_env_set(const char *name, const char *value)
{
    const char *was = getenv(name);
    char *saved = was ? strdup(was) : NULL;
    if ((was && !saved) || setenv(name, value, 1) != 0)
        fail_msg("cannot set %s", name);
    return saved;
}

void tu_env_restore(const char *name, char *was)
{
    if (was ? setenv(name, was, 1) != 0 : unsetenv(name) != 0)
        fail_msg("cannot restore %s", name);
    free(was);
}

int tu_has_device(const clnorm_ctx *ctx)
{
    return ctx != NULL && clnorm_get_backend(ctx) == CLNORM_BACKEND_OPENCL;
}

int tu_device_is_cpu(const clnorm_ctx *ctx)
{
    if (!tu_has_device(ctx))
        return 0;
    cl_device_id dev = NULL;
    cl_device_type type = 0;
    if (clGetCommandQueueInfo(clnorm_get_queue(ctx), CL_QUEUE_DEVICE, sizeof dev, &dev, NULL) !=
            CL_SUCCESS ||
        clGetDeviceInfo(dev, CL_DEVICE_TYPE, sizeof type, &type, NULL) != CL_SUCCESS)
        fail_msg("cannot query the device's type");
    return (type & CL_DEVICE_TYPE_CPU) != 0;
}

int tu_device_has_fp64(const clnorm_ctx *ctx)
{
    if (!tu_has_device(ctx))
        return 0;
    cl_device_id dev = NULL;
    char ext[8192] = "";
    if (clGetCommandQueueInfo(clnorm_get_queue(ctx), CL_QUEUE_DEVICE, sizeof dev, &dev, NULL) !=
            CL_SUCCESS ||
        clGetDeviceInfo(dev, CL_DEVICE_EXTENSIONS, sizeof ext - 1, ext, NULL) != CL_SUCCESS)
        fail_msg("cannot query the device's extensions");
    /* as the library takes it (src/device_select.c) */
    return strstr(ext, "cl_khr_fp64") != NULL && !getenv("CLNORM_NO_FP64");
}

const clnorm_strategy tu_strategies[TU_NUM_STRATEGIES] = {
    CLNORM_STRATEGY_ROW, CLNORM_STRATEGY_WORKGROUP, CLNORM_STRATEGY_SPLIT,
    CLNORM_STRATEGY_SUBGROUP};

static void plan_failed(clnorm_ctx *ctx, const clnorm_desc *d, clnorm_strategy strategy,
                        clnorm_status st)
{
    fail_msg("clnorm_plan_create_with(%s, kind %d, %s, %zu x %zu, flags 0x%x) = %d (%s): %s",
             clnorm_strategy_name(strategy), (int)d->kind, tu_dtype_name(d->dtype), d->rows,
             d->cols, d->flags, st, clnorm_status_string(st), clnorm_last_error(ctx));
}

clnorm_plan *tu_plan(clnorm_ctx *ctx, const clnorm_desc *desc, clnorm_strategy strategy)
{
    clnorm_plan *plan = NULL;
    const clnorm_status st = clnorm_plan_create_with(ctx, desc, strategy, &plan);
    if (st != CLNORM_OK || plan == NULL)
        plan_failed(ctx, desc, strategy, st);
    return plan;
}

clnorm_plan *tu_plan_if(clnorm_ctx *ctx, const clnorm_desc *desc, clnorm_strategy strategy)
{
    clnorm_plan *plan = NULL;
    const clnorm_status st = clnorm_plan_create_with(ctx, desc, strategy, &plan);
    if (st == CLNORM_UNSUPPORTED && plan == NULL) {
        /* rows longer than the subgroup strategy's registers (a GroupNorm's rows are its
         * groups, parts of x's rows: x's row length bounds them) */
        clnorm_slot_info x;
        if (strategy == CLNORM_STRATEGY_SUBGROUP &&
            clnorm_slot_query(desc, CLNORM_FORWARD, CLNORM_ARG_X, &x) == CLNORM_OK &&
            x.cols > TU_SUBGROUP_ALWAYS_COLS)
            return NULL;
        if (desc->dtype == CLNORM_F64 && !tu_device_has_fp64(ctx))
            return NULL;
    }
    if (st != CLNORM_OK || plan == NULL)
        plan_failed(ctx, desc, strategy, st);
    return plan;
}

cl_mem tu_buffer_bytes(cl_context context, cl_command_queue queue, const void *init,
                       size_t bytes)
{
    cl_int err = CL_SUCCESS;
    const size_t size = bytes ? bytes : 1;
    cl_mem mem = clCreateBuffer(context, CL_MEM_READ_WRITE, size, NULL, &err);
    if (mem == NULL || err != CL_SUCCESS)
        fail_msg("clCreateBuffer(%zu bytes) failed: %d", size, (int)err);
    if (bytes) {
        err = clEnqueueWriteBuffer(queue, mem, CL_TRUE, 0, bytes, init, 0, NULL, NULL);
        if (err != CL_SUCCESS) {
            clReleaseMemObject(mem);
            fail_msg("clEnqueueWriteBuffer failed: %d", (int)err);
        }
    }
    return mem;
}

cl_mem tu_buffer(cl_context context, cl_command_queue queue, const float *init, size_t n,
                 uint32_t bits)
{
    float *fill = NULL;
    if (init == NULL) {
        fill = tu_alloc_filled(n ? n : 1, bits);
        init = fill;
    }
    cl_mem mem = tu_buffer_bytes(context, queue, init, (n ? n : 1) * sizeof(float));
    free(fill);
    return mem;
}

void tu_read_bytes(cl_command_queue queue, cl_mem mem, void *dst, size_t bytes)
{
    if (bytes == 0)
        return;
    const cl_int err = clEnqueueReadBuffer(queue, mem, CL_TRUE, 0, bytes, dst, 0, NULL, NULL);
    if (err != CL_SUCCESS)
        fail_msg("clEnqueueReadBuffer failed: %d", (int)err);
}

void tu_read(cl_command_queue queue, cl_mem mem, float *dst, size_t n)
{
    tu_read_bytes(queue, mem, dst, n * sizeof(float));
}

const char *tu_golden_dir(void)
{
    const char *dir = getenv("CLNORM_GOLDEN_DIR");
    if (dir != NULL && dir[0] != '\0')
        return dir;
#ifdef TU_GOLDEN_DEFAULT
    return TU_GOLDEN_DEFAULT;
#else
    return NULL;
#endif
}
