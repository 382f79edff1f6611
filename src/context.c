/* Contexts: own a cl_context + queue on a chosen device, or adopt the application's queue;
 * fall back to the CPU reference when no OpenCL device exists and none was asked for. */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static clnorm_ctx *ctx_alloc(void)
{
    clnorm_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return NULL;
    /* Recursive: clnorm_fail may be called while the program cache holds the lock. */
    if (clnorm_mutex_init(&ctx->lock, 1) != 0) {
        free(ctx);
        return NULL;
    }
    if (clnorm_mutex_init(&ctx->inline_lock, 1) != 0) {
        clnorm_mutex_destroy(&ctx->lock);
        free(ctx);
        return NULL;
    }
    clnorm_init_errors(ctx);
    const char *v = getenv("CLNORM_VERBOSE");
    ctx->verbose = !(v && *v && strcmp(v, "0") != 0) ? 0 : strcmp(v, "2") == 0 ? 2 : 1;
    atomic_init(&ctx->host_pool, NULL);
    atomic_init(&ctx->part_queue_count, 0);
    clnorm_host_threads_init(ctx); /* one thread until the device is known */
    return ctx;
}

/* Fills name and profile once platform/device are known. */
static clnorm_status ctx_describe(clnorm_ctx *ctx)
{
    char pn[200] = "?", dn[200] = "?";
    clGetPlatformInfo(ctx->platform, CL_PLATFORM_NAME, sizeof pn, pn, NULL);
    clGetDeviceInfo(ctx->device, CL_DEVICE_NAME, sizeof dn, dn, NULL);
    pn[sizeof pn - 1] = dn[sizeof dn - 1] = '\0';
    snprintf(ctx->name, sizeof ctx->name, "%s / %s", pn, dn);
    clnorm_status st = clnorm_read_profile(ctx->device, &ctx->profile);
    RETURN_IF(st != CLNORM_OK, ctx, st, "reading the device's properties failed: %s",
              clnorm_status_string(st));
    clnorm_host_threads_init(ctx);
    return CLNORM_OK;
}

clnorm_status clnorm_create(const char *device_spec, clnorm_ctx **out)
{
    if (!out)
        return CLNORM_INVALID_ARGUMENT;
    *out = NULL;
    clnorm_ctx *ctx = ctx_alloc();
    if (!ctx)
        return CLNORM_OUT_OF_MEMORY;
    char msg[512] = "";
    int found = 0;
    clnorm_status st = clnorm_select_device(device_spec, &ctx->platform, &ctx->device, &found,
                                            msg, sizeof msg);
    if (st != CLNORM_OK) {
        clnorm_free(ctx);
        return st;
    }
    if (!found) {
        ctx->backend = CLNORM_BACKEND_REFERENCE;
        snprintf(ctx->name, sizeof ctx->name, "CPU reference (no OpenCL device)");
        *out = ctx;
        return CLNORM_OK;
    }
    ctx->backend = CLNORM_BACKEND_OPENCL;
    cl_int err;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)ctx->platform,
                                     0};
    /* The latency path's in-thread device shares the cl_context, so buffers need no copy.
     * Where the runtime refuses the pair, or the second queue, the context goes on without
     * it, as it would without the device. */
    ctx->inline_device = clnorm_latency_device(ctx->platform, ctx->device);
    const cl_device_id devices[2] = {ctx->device, ctx->inline_device};
    ctx->context =
        clCreateContext(props, ctx->inline_device ? 2 : 1, devices, NULL, NULL, &err);
    if (err != CL_SUCCESS && ctx->inline_device) {
        ctx->inline_device = NULL;
        ctx->context = clCreateContext(props, 1, &ctx->device, NULL, NULL, &err);
    }
    if (err == CL_SUCCESS)
        ctx->queue = clCreateCommandQueue(ctx->context, ctx->device, clnorm_queue_props(ctx),
                                          &err);
    if (err == CL_SUCCESS && ctx->inline_device) {
        cl_int qerr;
        ctx->inline_queue = clCreateCommandQueue(ctx->context, ctx->inline_device,
                                                 clnorm_queue_props(ctx), &qerr);
        if (qerr != CL_SUCCESS) {
            ctx->inline_queue = NULL;
            ctx->inline_device = NULL;
        } else {
            clGetDeviceInfo(ctx->inline_device, CL_DEVICE_NAME, sizeof ctx->inline_name - 1,
                            ctx->inline_name, NULL);
        }
    }
    if (err == CL_SUCCESS)
        err = clRetainCommandQueue(ctx->queue);
    if (err == CL_SUCCESS) {
        ctx->warm_queue = ctx->queue; /* one reference each: clnorm_free releases both */
        err = ctx_describe(ctx);
    }
    if (err != CL_SUCCESS) {
        clnorm_free(ctx);
        return err;
    }
    *out = ctx;
    return CLNORM_OK;
}

clnorm_status clnorm_create_from_queue(cl_command_queue queue, clnorm_ctx **out)
{
    if (!out)
        return CLNORM_INVALID_ARGUMENT;
    *out = NULL;
    if (!queue)
        return CLNORM_INVALID_ARGUMENT;
    clnorm_ctx *ctx = ctx_alloc();
    if (!ctx)
        return CLNORM_OUT_OF_MEMORY;
    ctx->backend = CLNORM_BACKEND_OPENCL;
    cl_int err = clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, sizeof ctx->context,
                                       &ctx->context, NULL);
    if (err == CL_SUCCESS)
        err = clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, sizeof ctx->device, &ctx->device,
                                    NULL);
    if (err == CL_SUCCESS)
        err = clGetDeviceInfo(ctx->device, CL_DEVICE_PLATFORM, sizeof ctx->platform,
                              &ctx->platform, NULL);
    if (err != CL_SUCCESS) {
        ctx->context = NULL; /* not retained yet: must not be released */
        clnorm_free(ctx);
        return err;
    }
    /* One retain on each; clnorm_free releases exactly these. */
    err = clRetainContext(ctx->context);
    if (err != CL_SUCCESS) {
        ctx->context = NULL;
        clnorm_free(ctx);
        return err;
    }
    err = clRetainCommandQueue(queue);
    if (err != CL_SUCCESS) {
        clnorm_free(ctx);
        return err;
    }
    ctx->queue = queue;
    ctx->warm_queue = clCreateCommandQueue(ctx->context, ctx->device, 0, &err);
    if (err == CL_SUCCESS)
        err = ctx_describe(ctx);
    if (err != CL_SUCCESS) {
        clnorm_free(ctx);
        return err;
    }
    *out = ctx;
    return CLNORM_OK;
}

void clnorm_free(clnorm_ctx *ctx)
{
    if (!ctx)
        return;
    clnorm_pool_free(atomic_load(&ctx->host_pool));
    clnorm_release_programs(ctx);
    if (ctx->inline_queue)
        clReleaseCommandQueue(ctx->inline_queue);
    for (unsigned i = 0; i < atomic_load(&ctx->part_queue_count); i++)
        clReleaseCommandQueue(ctx->part_queues[i]);
    free(ctx->part_queues);
    if (ctx->warm_queue)
        clReleaseCommandQueue(ctx->warm_queue);
    if (ctx->queue)
        clReleaseCommandQueue(ctx->queue);
    if (ctx->context)
        clReleaseContext(ctx->context);
    clnorm_release_errors(ctx);
    clnorm_mutex_destroy(&ctx->inline_lock);
    clnorm_mutex_destroy(&ctx->lock);
    free(ctx);
}

clnorm_backend clnorm_get_backend(const clnorm_ctx *ctx)
{
    return ctx ? ctx->backend : CLNORM_BACKEND_REFERENCE;
}

const char *clnorm_device_name(const clnorm_ctx *ctx)
{
    return ctx ? ctx->name : "";
}

cl_command_queue clnorm_get_queue(const clnorm_ctx *ctx)
{
    return ctx ? ctx->queue : NULL;
}

cl_context clnorm_get_cl_context(const clnorm_ctx *ctx)
{
    return ctx ? ctx->context : NULL;
}

size_t clnorm_program_builds(const clnorm_ctx *ctx)
{
    if (!ctx)
        return 0;
    clnorm_mutex_lock((clnorm_mutex *)&ctx->lock);
    size_t n = ctx->builds;
    clnorm_mutex_unlock((clnorm_mutex *)&ctx->lock);
    return n;
}
