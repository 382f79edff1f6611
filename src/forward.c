/* The forward pass through layer 1 (cl_mem, asynchronous) and layer 2 (host pointers,
 * synchronous). Everything is validated before anything is enqueued: a failed call writes
 * nothing. */
#include "internal.h"

#include <stdint.h>
#include <string.h>

/* mem must belong to the context and hold offset + count elements of elem bytes. */
clnorm_status clnorm_check_mem(clnorm_ctx *ctx, cl_mem mem, const char *name, size_t offset,
                               size_t count, size_t elem)
{
    if (!mem)
        return CLNORM_OK;
    cl_context owner = NULL;
    size_t bytes = 0;
    cl_int err = clGetMemObjectInfo(mem, CL_MEM_CONTEXT, sizeof owner, &owner, NULL);
    if (err == CL_SUCCESS)
        err = clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof bytes, &bytes, NULL);
    RETURN_IF(err != CL_SUCCESS, ctx, err, "%s is not a valid cl_mem (%s)", name,
              clnorm_status_string(err));
    RETURN_IF(owner != ctx->context, ctx, CLNORM_INVALID_ARGUMENT,
              "%s belongs to another cl_context than the clnorm context's", name);
    RETURN_IF(offset > SIZE_MAX / elem - count, ctx, CLNORM_BUFFER_TOO_SMALL,
              "%s: offset %zu + %zu elements overflows size_t", name, offset, count);
    const size_t need = (offset + count) * elem;
    RETURN_IF(bytes < need, ctx, CLNORM_BUFFER_TOO_SMALL,
              "%s: the cl_mem holds %zu bytes, but offset %zu + %zu elements of %zu bytes need "
              "%zu",
              name, bytes, offset, count, elem, need);
    return CLNORM_OK;
}

clnorm_status clnorm_check_launch(clnorm_plan *plan, const char *fn, cl_command_queue *queue,
                                  cl_uint nwait, const cl_event *wait)
{
    clnorm_ctx *ctx = plan->ctx;
    RETURN_IF(ctx->backend == CLNORM_BACKEND_REFERENCE, ctx, CLNORM_NO_DEVICE,
              "%s needs an OpenCL device; this context runs on the CPU reference (use %s_host)",
              fn, fn);
    RETURN_IF(plan->strategy == CLNORM_STRATEGY_REFERENCE, ctx, CLNORM_UNSUPPORTED,
              "a plan with the reference strategy runs through %s_host only", fn);
    RETURN_IF((nwait > 0) != (wait != NULL), ctx, CLNORM_INVALID_ARGUMENT,
              "num_wait_events = %u does not match wait_events = %p", nwait, (const void *)wait);
    if (!*queue)
        *queue = ctx->queue;
    cl_context qctx = NULL;
    CL_CHECK(ctx, clGetCommandQueueInfo(*queue, CL_QUEUE_CONTEXT, sizeof qctx, &qctx, NULL),
             "querying the queue");
    RETURN_IF(qctx != ctx->context, ctx, CLNORM_INVALID_ARGUMENT,
              "queue belongs to another cl_context than the clnorm context's");
    return CLNORM_OK;
}

clnorm_status clnorm_forward(clnorm_plan *plan, cl_mem x, size_t x_off, cl_mem y, size_t y_off,
                             cl_mem gamma, size_t g_off, cl_mem beta, size_t b_off, cl_mem mean,
                             size_t m_off, cl_mem rstd, size_t r_off, cl_command_queue queue,
                             cl_uint nwait, const cl_event *wait, cl_event *event)
{
    if (!plan)
        return CLNORM_INVALID_ARGUMENT;
    clnorm_ctx *ctx = plan->ctx;
    clnorm_clear_error(ctx);
    const clnorm_desc *d = &plan->desc;
    clnorm_status st = clnorm_check_launch(plan, "clnorm_forward", &queue, nwait, wait);
    if (st != CLNORM_OK)
        return st;

    if (d->rows == 0) { /* an empty batch: nothing to do, but the event must still exist */
        if (event)
            CL_CHECK(ctx, clEnqueueMarkerWithWaitList(queue, nwait, wait, event),
                     "clEnqueueMarkerWithWaitList");
        return CLNORM_OK;
    }
    st = clnorm_check_operands(ctx, d, x, y, gamma, beta, mean, rstd);
    if (st != CLNORM_OK)
        return st;
    const size_t es = clnorm_dtype_size(d->dtype), ps = clnorm_param_size(d->dtype);
    size_t ex, ey;
    clnorm_extent(d->rows, d->cols, d->x_stride, &ex);
    clnorm_extent(d->rows, d->cols, d->y_stride, &ey);
    if ((st = clnorm_check_mem(ctx, x, "x", x_off, ex, es)) != CLNORM_OK ||
        (st = clnorm_check_mem(ctx, y, "y", y_off, ey, es)) != CLNORM_OK ||
        (st = clnorm_check_mem(ctx, gamma, "gamma", g_off, d->cols, ps)) != CLNORM_OK ||
        (st = clnorm_check_mem(ctx, beta, "beta", b_off, d->cols, ps)) != CLNORM_OK ||
        (st = clnorm_check_mem(ctx, mean, "mean", m_off, d->rows, ps)) != CLNORM_OK ||
        (st = clnorm_check_mem(ctx, rstd, "rstd", r_off, d->rows, ps)) != CLNORM_OK)
        return st;
    RETURN_IF(x == y && x_off != y_off && clnorm_ranges_overlap(x_off, ex, y_off, ey), ctx,
              CLNORM_INVALID_ARGUMENT,
              "x and y overlap in the same cl_mem without being in place (offsets %zu, %zu)",
              x_off, y_off);

    const double t0 = ctx->verbose ? clnorm_now_ms() : 0.0;
    st = clnorm_enqueue_forward(plan, x, x_off, y, y_off, gamma, g_off, beta, b_off, mean, m_off,
                                rstd, r_off, queue, nwait, wait, event);
    if (st == CLNORM_OK && ctx->verbose) {
        CL_CHECK(ctx, clFinish(queue), "clFinish (CLNORM_VERBOSE timing)");
        clnorm_verbose_exec(plan, "forward", "cl_mem", clnorm_now_ms() - t0);
    }
    return st;
}

/* Device buffers of one host-pointer call; released together on every path. */
typedef struct {
    cl_mem x, y, g, b, m, r;
} host_bufs;

static void release_bufs(host_bufs *h)
{
    cl_mem all[] = {h->x, h->y == h->x ? NULL : h->y, h->g, h->b, h->m, h->r};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i])
            clReleaseMemObject(all[i]);
}

/* A buffer holding `bytes` copied from src (src NULL: uninitialized). */
static clnorm_status make_buf(clnorm_ctx *ctx, const char *name, const void *src, size_t bytes,
                              cl_mem *out)
{
    RETURN_IF(bytes > ctx->profile.max_alloc_bytes, ctx, CLNORM_UNSUPPORTED,
              "%s needs %zu bytes, more than the device's largest allocation (%llu bytes)", name,
              bytes, (unsigned long long)ctx->profile.max_alloc_bytes);
    cl_int err;
    cl_mem_flags flags = CL_MEM_READ_WRITE | (src ? CL_MEM_COPY_HOST_PTR : 0);
    *out = clCreateBuffer(ctx->context, flags, bytes, (void *)(uintptr_t)src, &err);
    CL_CHECK(ctx, err, name);
    return CLNORM_OK;
}

static clnorm_status run_host(clnorm_plan *plan, host_bufs *h, const void *x, void *y,
                              const void *gamma, const void *beta, void *mean, void *rstd)
{
    clnorm_ctx *ctx = plan->ctx;
    const clnorm_desc *d = &plan->desc;
    const size_t es = clnorm_dtype_size(d->dtype), ps = clnorm_param_size(d->dtype);
    size_t ex, ey;
    clnorm_extent(d->rows, d->cols, d->x_stride, &ex);
    clnorm_extent(d->rows, d->cols, d->y_stride, &ey);
    clnorm_status st;
    if ((st = make_buf(ctx, "x buffer", x, ex * es, &h->x)) != CLNORM_OK)
        return st;
    if (y == x)
        h->y = h->x;
    else if ((st = make_buf(ctx, "y buffer", NULL, ey * es, &h->y)) != CLNORM_OK)
        return st;
    if ((gamma && (st = make_buf(ctx, "gamma buffer", gamma, d->cols * ps, &h->g)) != CLNORM_OK) ||
        (beta && (st = make_buf(ctx, "beta buffer", beta, d->cols * ps, &h->b)) != CLNORM_OK) ||
        (mean && (st = make_buf(ctx, "mean buffer", NULL, d->rows * ps, &h->m)) != CLNORM_OK) ||
        (rstd && (st = make_buf(ctx, "rstd buffer", NULL, d->rows * ps, &h->r)) != CLNORM_OK))
        return st;
    cl_event done;
    st = clnorm_forward(plan, h->x, 0, h->y, 0, h->g, 0, h->b, 0, h->m, 0, h->r, 0, ctx->queue, 0,
                        NULL, &done);
    if (st != CLNORM_OK)
        return st;
    /* The queue may be an adopted out-of-order one: the reads must not start before y is. */
    st = clnorm_wait_release(ctx, done);
    if (st != CLNORM_OK)
        return st;
    /* Read back only the rows' elements: the gaps of a strided y belong to the caller. */
    if (d->y_stride == d->cols) {
        CL_CHECK(ctx, clEnqueueReadBuffer(ctx->queue, h->y, CL_FALSE, 0, ey * es, y, 0, NULL, NULL),
                 "reading y back");
    } else {
        const size_t origin[3] = {0, 0, 0};
        const size_t region[3] = {d->cols * es, d->rows, 1};
        CL_CHECK(ctx,
                 clEnqueueReadBufferRect(ctx->queue, h->y, CL_FALSE, origin, origin, region,
                                         d->y_stride * es, 0, d->y_stride * es, 0, y, 0, NULL,
                                         NULL),
                 "reading strided y back");
    }
    if (mean)
        CL_CHECK(ctx,
                 clEnqueueReadBuffer(ctx->queue, h->m, CL_FALSE, 0, d->rows * ps, mean, 0, NULL,
                                     NULL),
                 "reading mean back");
    if (rstd)
        CL_CHECK(ctx,
                 clEnqueueReadBuffer(ctx->queue, h->r, CL_FALSE, 0, d->rows * ps, rstd, 0, NULL,
                                     NULL),
                 "reading rstd back");
    CL_CHECK(ctx, clFinish(ctx->queue), "clFinish");
    return CLNORM_OK;
}

clnorm_status clnorm_wait_release(clnorm_ctx *ctx, cl_event event)
{
    const cl_int err = clWaitForEvents(1, &event);
    clReleaseEvent(event);
    CL_CHECK(ctx, err, "clWaitForEvents");
    return CLNORM_OK;
}

clnorm_status clnorm_forward_host(clnorm_plan *plan, const void *x, void *y, const void *gamma,
                                  const void *beta, void *mean, void *rstd)
{
    if (!plan)
        return CLNORM_INVALID_ARGUMENT;
    clnorm_ctx *ctx = plan->ctx;
    clnorm_clear_error(ctx);
    const clnorm_desc *d = &plan->desc;
    if (d->rows == 0)
        return CLNORM_OK;
    clnorm_status st = clnorm_check_operands(ctx, d, x, y, gamma, beta, mean, rstd);
    if (st != CLNORM_OK)
        return st;
    const size_t es = clnorm_dtype_size(d->dtype);
    size_t ex, ey;
    clnorm_extent(d->rows, d->cols, d->x_stride, &ex);
    clnorm_extent(d->rows, d->cols, d->y_stride, &ey);
    RETURN_IF(x != y && clnorm_ranges_overlap((uintptr_t)x, ex * es, (uintptr_t)y, ey * es), ctx,
              CLNORM_INVALID_ARGUMENT, "x and y overlap without being the same pointer");

    const double t0 = ctx->verbose ? clnorm_now_ms() : 0.0;
    if (plan->strategy == CLNORM_STRATEGY_REFERENCE) {
        st = clnorm_ref_forward(d, x, y, gamma, beta, mean, rstd);
        RETURN_IF(st != CLNORM_OK, ctx, st, "the CPU reference rejected the call");
    } else {
        host_bufs h = {0};
        const int verbose = ctx->verbose;
        ctx->verbose = 0; /* one line for the whole host call, not one for the inner call */
        st = run_host(plan, &h, x, y, gamma, beta, mean, rstd);
        ctx->verbose = verbose;
        release_bufs(&h);
        if (st != CLNORM_OK)
            return st;
    }
    if (ctx->verbose)
        clnorm_verbose_exec(plan, "forward", "host", clnorm_now_ms() - t0);
    return CLNORM_OK;
}
