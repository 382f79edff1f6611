/*
 * latency.c - the latency path: small problems on a CPU device run on an in-thread device of
 * the same platform and cl_context, where a launch costs about a microsecond instead of the
 * tens of microseconds a multi-threaded CPU runtime spends handing each command to its worker
 * threads and back (PoCL's `pthread` device: 50-120 us per command on our CI machines).
 *
 * The policy, in one place (README, "Small problems on CPU devices"):
 *  - A context that clnorm_create makes on a CPU device also takes the platform's in-thread
 *    device into its cl_context when the platform lists one (PoCL's `basic` device, listed
 *    only when POCL_DEVICES names it: clnorm never changes the environment). CLNORM_LATENCY=0
 *    at context creation leaves it out, and the context is exactly what it was before.
 *  - A plan is a latency plan when the row tensor x of one call holds at most
 *    CLNORM_LATENCY_BYTES bytes (read at plan creation; default CLNORM_LATENCY_DEFAULT_BYTES,
 *    measured: bench/RESULTS.md). Its programs are built for both devices.
 *  - A latency plan executed on the context's own queue runs in the calling thread when every
 *    event of its wait list is already complete: the host waits for the queue's earlier work
 *    (clFinish), runs the kernels on the in-thread device, and returns with them done. The
 *    queue's order therefore holds (earlier work is done before, later work starts after),
 *    and the event returned is complete (a user event: see inline_lock in internal.h).
 *    Otherwise (a wait list still pending, an application queue, another queue of the
 *    context) the plan runs on that queue as any plan does.
 *  - The host loop's thresholds (CLNORM_HOST_BYTES, CLNORM_HOST_BACKWARD_BYTES; src/execute.c
 *    runs the loop) are read the same way, by clnorm_fits_env.
 *  - PoCL 3.1 mishandles a command of one device that waits on an event of the other in the
 *    same context (a `basic` kernel waiting on a `pthread` marker hangs; one waiting on a
 *    `pthread` kernel runs before it and reads stale data), so every wait across the two
 *    devices is a wait on the host, never an event dependency. And its `basic` device
 *    deadlocks when one thread releases one of its events while another runs its commands:
 *    ctx->inline_lock serializes the in-thread device's work, and the caller's event is a
 *    user event, never one of `basic`.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

int clnorm_is_inline_device(cl_device_id device)
{
    char name[128] = "", plat_name[128] = "";
    cl_platform_id plat = NULL;
    if (clGetDeviceInfo(device, CL_DEVICE_NAME, sizeof name, name, NULL) != CL_SUCCESS ||
        clGetDeviceInfo(device, CL_DEVICE_PLATFORM, sizeof plat, &plat, NULL) != CL_SUCCESS ||
        clGetPlatformInfo(plat, CL_PLATFORM_NAME, sizeof plat_name, plat_name, NULL) !=
            CL_SUCCESS)
        return 0;
    name[sizeof name - 1] = plat_name[sizeof plat_name - 1] = '\0';
    /* PoCL's device that runs every command in the thread that enqueues or waits for it. */
    return strstr(plat_name, "Portable Computing Language") != NULL &&
           strncmp(name, "basic", 5) == 0;
}

/* The platform's in-thread CPU device other than `main`, or NULL. */
static cl_device_id find_inline_device(cl_platform_id platform, cl_device_id main)
{
    cl_uint n = 0;
    if (clGetDeviceIDs(platform, CL_DEVICE_TYPE_CPU, 0, NULL, &n) != CL_SUCCESS || n < 2)
        return NULL;
    cl_device_id *devs = calloc(n, sizeof *devs);
    cl_device_id found = NULL;
    if (devs && clGetDeviceIDs(platform, CL_DEVICE_TYPE_CPU, n, devs, NULL) == CL_SUCCESS)
        for (cl_uint i = 0; i < n && !found; i++)
            if (devs[i] != main && clnorm_is_inline_device(devs[i]))
                found = devs[i];
    free(devs);
    return found;
}

cl_device_id clnorm_latency_device(cl_platform_id platform, cl_device_id main)
{
    const char *env = getenv("CLNORM_LATENCY");
    if (env && strcmp(env, "0") == 0)
        return NULL; /* the switch: off */
    cl_device_type type = 0;
    if (clGetDeviceInfo(main, CL_DEVICE_TYPE, sizeof type, &type, NULL) != CL_SUCCESS ||
        !(type & CL_DEVICE_TYPE_CPU) || clnorm_is_inline_device(main))
        return NULL;
    return find_inline_device(platform, main);
}

/* A threshold in bytes from the environment variable `name` (def when unset or empty);
 * *set says which. */
static clnorm_status threshold_env(clnorm_ctx *ctx, const char *name, size_t def,
                                   size_t *bytes, int *set)
{
    *bytes = def;
    const char *env = getenv(name);
    *set = env && *env;
    if (!*set)
        return CLNORM_OK;
    char *end;
    const unsigned long long v = strtoull(env, &end, 10);
    RETURN_IF(*end != '\0' || env[0] == '-' || v > ((unsigned long long)1 << 40), ctx,
              CLNORM_INVALID_ARGUMENT, "%s=%s is not a whole number of bytes up to 2^40", name,
              env);
    *bytes = (size_t)v;
    return CLNORM_OK;
}

clnorm_status clnorm_fits_env(clnorm_ctx *ctx, const clnorm_desc *d, const char *name,
                              size_t def, int *fits, int *set)
{
    size_t threshold;
    int given;
    TRY(threshold_env(ctx, name, def, &threshold, &given));
    if (set)
        *set = given;
    *fits = threshold > 0 && clnorm_latency_fits(d, threshold);
    return CLNORM_OK;
}

int clnorm_latency_fits(const clnorm_desc *d, size_t threshold)
{
    const size_t len = clnorm_row_len(d), es = clnorm_dtype_size(d->dtype);
    if (len != 0 && d->rows > threshold / len)
        return 0;
    const size_t elems = d->rows * len;
    return es == 0 || elems <= threshold / es;
}

/* Is every event of the wait list complete? A failed one is left to the device path, which
 * reports it as the runtime does. */
static int all_complete(cl_uint nwait, const cl_event *wait)
{
    for (cl_uint i = 0; i < nwait; i++) {
        cl_int status = CL_QUEUED;
        if (clGetEventInfo(wait[i], CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status,
                           NULL) != CL_SUCCESS ||
            status != CL_COMPLETE)
            return 0;
    }
    return 1;
}

clnorm_status clnorm_latency_launch(clnorm_plan *plan, clnorm_direction dir,
                                    const clnorm_call_args *a, unsigned flags,
                                    cl_command_queue queue, cl_uint nwait, const cl_event *wait,
                                    cl_event *event, int *taken)
{
    clnorm_ctx *ctx = plan->ctx;
    *taken = 0;
    if (!plan->inline_ok || queue != ctx->queue || !all_complete(nwait, wait))
        return CLNORM_OK;
    *taken = 1;
    /* The work enqueued before, on the caller's in-order queue, is done before ours starts. */
    CL_CHECK(ctx, clFinish(queue), "clFinish (the latency path waits for the queue's work)");
    clnorm_mutex_lock(&ctx->inline_lock);
    cl_event done = NULL;
    clnorm_status st = clnorm_launch(plan, dir, a, flags, 0, ctx->inline_queue, 0, NULL, &done);
    if (st == CLNORM_OK) {
        /* Done before the call returns, so the work enqueued after it on `queue` finds it
         * done. */
        const cl_int err = clWaitForEvents(1, &done);
        clReleaseEvent(done);
        if (err != CL_SUCCESS)
            st = clnorm_fail(ctx, err, "the latency path's kernels failed: %s",
                             clnorm_status_string(err));
    }
    clnorm_mutex_unlock(&ctx->inline_lock);
    if (st != CLNORM_OK || !event)
        return st;
    /* The caller's event: a user event, already complete. It is an event of no device, so
     * the caller may wait for it, pass it to either device or release it from any thread
     * (a `basic` event must not be released outside inline_lock, see internal.h). */
    cl_int err;
    *event = clCreateUserEvent(ctx->context, &err);
    CL_CHECK(ctx, err, "clCreateUserEvent (the latency path's event)");
    err = clSetUserEventStatus(*event, CL_COMPLETE);
    if (err != CL_SUCCESS) {
        clReleaseEvent(*event);
        *event = NULL;
        return clnorm_fail(ctx, err, "clSetUserEventStatus failed: %s",
                           clnorm_status_string(err));
    }
    return CLNORM_OK;
}
