/* The backward pass through layer 1 (cl_mem) and layer 2 (host pointers). Validation first,
 * then the kernels of kernels/norm_backward.cl: a failed call writes nothing. */
#include "internal.h"

#include <stdint.h>
#include <string.h>

/* With no rows, dgamma and dbeta are sums over nothing: zeros, as in PyTorch. */
static clnorm_status zero_params(clnorm_plan *plan, cl_mem dgamma, size_t dg_off, cl_mem dbeta,
                                 size_t db_off, cl_command_queue queue, cl_uint nwait,
                                 const cl_event *wait, cl_event *event)
{
    clnorm_ctx *ctx = plan->ctx;
    const size_t ps = clnorm_param_size(plan->desc.dtype), n = plan->desc.cols;
    const double zero = 0.0; /* all-zero bytes: 0.0 in float and in double */
    cl_mem bufs[2] = {dgamma, dbeta};
    size_t offs[2] = {dg_off, db_off};
    cl_event done[2] = {NULL, NULL};
    cl_uint ndone = 0;
    for (int i = 0; i < 2; i++) {
        if (!bufs[i])
            continue;
        cl_int err = clEnqueueFillBuffer(queue, bufs[i], &zero, ps, offs[i] * ps, n * ps, nwait,
                                         wait, &done[ndone]);
        if (err != CL_SUCCESS) {
            for (cl_uint k = 0; k < ndone; k++)
                clReleaseEvent(done[k]);
            CL_CHECK(ctx, err, "clEnqueueFillBuffer (zero parameter gradients)");
        }
        ndone++;
    }
    cl_int err = CL_SUCCESS;
    if (event)
        err = ndone ? clEnqueueMarkerWithWaitList(queue, ndone, done, event)
                    : clEnqueueMarkerWithWaitList(queue, nwait, wait, event);
    for (cl_uint k = 0; k < ndone; k++)
        clReleaseEvent(done[k]);
    CL_CHECK(ctx, err, "clEnqueueMarkerWithWaitList");
    return CLNORM_OK;
}

clnorm_status clnorm_backward(clnorm_plan *plan, unsigned mask, cl_mem x, size_t x_off,
                              cl_mem dy, size_t dy_off, cl_mem mean, size_t m_off, cl_mem rstd,
                              size_t r_off, cl_mem gamma, size_t g_off, cl_mem dx, size_t dx_off,
                              cl_mem dgamma, size_t dg_off, cl_mem dbeta, size_t db_off,
                              cl_command_queue queue, cl_uint nwait, const cl_event *wait,
                              cl_event *event)
{
    if (!plan)
        return CLNORM_INVALID_ARGUMENT;
    clnorm_ctx *ctx = plan->ctx;
    clnorm_clear_error(ctx);
    const clnorm_desc *d = &plan->desc;
    clnorm_status st = clnorm_check_launch(plan, "clnorm_backward", &queue, nwait, wait);
    if (st != CLNORM_OK)
        return st;
    RETURN_IF(!(d->flags & CLNORM_WITH_BACKWARD), ctx, CLNORM_INVALID_ARGUMENT,
              "the plan was created without CLNORM_WITH_BACKWARD, so its backward kernels "
              "were not built");
    st = clnorm_check_backward_operands(ctx, d, mask, x, dy, mean, rstd, gamma, dx, dgamma,
                                        dbeta);
    if (st != CLNORM_OK)
        return st;
    const size_t es = clnorm_dtype_size(d->dtype), ps = clnorm_param_size(d->dtype);
    size_t ex, ey;
    clnorm_extent(d->rows, d->cols, d->x_stride, &ex);
    clnorm_extent(d->rows, d->cols, d->y_stride, &ey);
    if ((st = clnorm_check_mem(ctx, dgamma, "dgamma", dg_off, d->cols, ps)) != CLNORM_OK ||
        (st = clnorm_check_mem(ctx, dbeta, "dbeta", db_off, d->cols, ps)) != CLNORM_OK)
        return st;
    if (d->rows == 0)
        return zero_params(plan, dgamma, dg_off, dbeta, db_off, queue, nwait, wait, event);
    if ((st = clnorm_check_mem(ctx, x, "x", x_off, ex, es)) != CLNORM_OK ||
        (st = clnorm_check_mem(ctx, dy, "dy", dy_off, ey, es)) != CLNORM_OK ||
        (st = clnorm_check_mem(ctx, dx, "dx", dx_off, ex, es)) != CLNORM_OK ||
        (st = clnorm_check_mem(ctx, gamma, "gamma", g_off, d->cols, ps)) != CLNORM_OK ||
        (st = clnorm_check_mem(ctx, mean, "mean", m_off, d->rows, ps)) != CLNORM_OK ||
        (st = clnorm_check_mem(ctx, rstd, "rstd", r_off, d->rows, ps)) != CLNORM_OK)
        return st;
    RETURN_IF(dx && dx == dy && dx_off != dy_off && clnorm_ranges_overlap(dx_off, ex, dy_off, ey),
              ctx, CLNORM_INVALID_ARGUMENT,
              "dx and dy overlap in the same cl_mem without being in place");
    RETURN_IF(dx && dx == x && dx_off != x_off && clnorm_ranges_overlap(dx_off, ex, x_off, ex),
              ctx, CLNORM_INVALID_ARGUMENT,
              "dx and x overlap in the same cl_mem without being in place");

    const double t0 = ctx->verbose ? clnorm_now_ms() : 0.0;
    st = clnorm_enqueue_backward(plan, mask, x, x_off, dy, dy_off, mean, m_off, rstd, r_off, gamma,
                                 g_off, dx, dx_off, dgamma, dg_off, dbeta, db_off, queue, nwait,
                                 wait, event);
    if (st == CLNORM_OK && ctx->verbose) {
        CL_CHECK(ctx, clFinish(queue), "clFinish (CLNORM_VERBOSE timing)");
        clnorm_verbose_exec(plan, "backward", "cl_mem", clnorm_now_ms() - t0);
    }
    return st;
}

/* Device copies of the host operands of one call; released together on every path. */
enum { B_X, B_DY, B_MEAN, B_RSTD, B_GAMMA, B_DX, B_DGAMMA, B_DBETA, B_COUNT };

static clnorm_status upload(clnorm_ctx *ctx, const char *name, const void *src, size_t bytes,
                            cl_mem *out)
{
    RETURN_IF(bytes > ctx->profile.max_alloc_bytes, ctx, CLNORM_UNSUPPORTED,
              "%s needs %zu bytes, more than the device's largest allocation (%llu bytes)", name,
              bytes, (unsigned long long)ctx->profile.max_alloc_bytes);
    cl_int err;
    *out = clCreateBuffer(ctx->context, CL_MEM_READ_WRITE | (src ? CL_MEM_COPY_HOST_PTR : 0),
                          bytes ? bytes : 1, (void *)(uintptr_t)src, &err);
    CL_CHECK(ctx, err, name);
    return CLNORM_OK;
}

static clnorm_status run_backward_host(clnorm_plan *plan, cl_mem *b, unsigned mask,
                                       const void *x, const void *dy, const void *mean,
                                       const void *rstd, const void *gamma, void *dx,
                                       void *dgamma, void *dbeta)
{
    clnorm_ctx *ctx = plan->ctx;
    const clnorm_desc *d = &plan->desc;
    const size_t es = clnorm_dtype_size(d->dtype), ps = clnorm_param_size(d->dtype);
    size_t ex, ey;
    clnorm_extent(d->rows, d->cols, d->x_stride, &ex);
    clnorm_extent(d->rows, d->cols, d->y_stride, &ey);
    clnorm_status st = CLNORM_OK;
    if (d->rows > 0) {
        if ((st = upload(ctx, "x buffer", x, ex * es, &b[B_X])) != CLNORM_OK ||
            (st = upload(ctx, "dy buffer", dy, ey * es, &b[B_DY])) != CLNORM_OK ||
            (mean && (st = upload(ctx, "mean buffer", mean, d->rows * ps, &b[B_MEAN])) != CLNORM_OK) ||
            (rstd && (st = upload(ctx, "rstd buffer", rstd, d->rows * ps, &b[B_RSTD])) != CLNORM_OK))
            return st;
        if (dx == dy)
            b[B_DX] = b[B_DY];
        else if (dx == x)
            b[B_DX] = b[B_X];
        else if (dx && (st = upload(ctx, "dx buffer", NULL, ex * es, &b[B_DX])) != CLNORM_OK)
            return st;
    }
    if ((gamma && (st = upload(ctx, "gamma buffer", gamma, d->cols * ps, &b[B_GAMMA])) != CLNORM_OK) ||
        (dgamma && (st = upload(ctx, "dgamma buffer", NULL, d->cols * ps, &b[B_DGAMMA])) != CLNORM_OK) ||
        (dbeta && (st = upload(ctx, "dbeta buffer", NULL, d->cols * ps, &b[B_DBETA])) != CLNORM_OK))
        return st;
    cl_event done;
    st = clnorm_backward(plan, mask, b[B_X], 0, b[B_DY], 0, b[B_MEAN], 0, b[B_RSTD], 0, b[B_GAMMA],
                         0, b[B_DX], 0, b[B_DGAMMA], 0, b[B_DBETA], 0, ctx->queue, 0, NULL, &done);
    if (st != CLNORM_OK)
        return st;
    /* The queue may be an adopted out-of-order one: the reads must not start before the
     * gradients are written. */
    st = clnorm_wait_release(ctx, done);
    if (st != CLNORM_OK)
        return st;
    if (dx && d->rows > 0) {
        /* dx has x's layout; only the rows' elements are read back (gaps are the caller's) */
        const size_t origin[3] = {0, 0, 0};
        const size_t region[3] = {d->cols * es, d->rows, 1};
        CL_CHECK(ctx,
                 clEnqueueReadBufferRect(ctx->queue, b[B_DX], CL_FALSE, origin, origin, region,
                                         d->x_stride * es, 0, d->x_stride * es, 0, dx, 0, NULL,
                                         NULL),
                 "reading dx back");
    }
    if (dgamma)
        CL_CHECK(ctx,
                 clEnqueueReadBuffer(ctx->queue, b[B_DGAMMA], CL_FALSE, 0, d->cols * ps, dgamma,
                                     0, NULL, NULL),
                 "reading dgamma back");
    if (dbeta)
        CL_CHECK(ctx,
                 clEnqueueReadBuffer(ctx->queue, b[B_DBETA], CL_FALSE, 0, d->cols * ps, dbeta, 0,
                                     NULL, NULL),
                 "reading dbeta back");
    CL_CHECK(ctx, clFinish(ctx->queue), "clFinish");
    return CLNORM_OK;
}

clnorm_status clnorm_backward_host(clnorm_plan *plan, unsigned mask, const void *x,
                                   const void *dy, const void *mean, const void *rstd,
                                   const void *gamma, void *dx, void *dgamma, void *dbeta)
{
    if (!plan)
        return CLNORM_INVALID_ARGUMENT;
    clnorm_ctx *ctx = plan->ctx;
    clnorm_clear_error(ctx);
    const clnorm_desc *d = &plan->desc;
    clnorm_status st = clnorm_check_backward_operands(ctx, d, mask, x, dy, mean, rstd, gamma, dx,
                                                      dgamma, dbeta);
    if (st != CLNORM_OK)
        return st;
    const size_t es = clnorm_dtype_size(d->dtype);
    size_t ex, ey;
    clnorm_extent(d->rows, d->cols, d->x_stride, &ex);
    clnorm_extent(d->rows, d->cols, d->y_stride, &ey);
    RETURN_IF(dx && dx != dy && clnorm_ranges_overlap((uintptr_t)dx, ex * es, (uintptr_t)dy, ey * es),
              ctx, CLNORM_INVALID_ARGUMENT, "dx and dy overlap without being the same pointer");
    RETURN_IF(dx && dx != x && clnorm_ranges_overlap((uintptr_t)dx, ex * es, (uintptr_t)x, ex * es),
              ctx, CLNORM_INVALID_ARGUMENT, "dx and x overlap without being the same pointer");

    /* Required on every backend alike, so that code tried on a machine without OpenCL does
     * not fail on the first one with a device. */
    RETURN_IF(!(d->flags & CLNORM_WITH_BACKWARD), ctx, CLNORM_INVALID_ARGUMENT,
              "the plan was created without CLNORM_WITH_BACKWARD, so its backward kernels "
              "were not built");
    const double t0 = ctx->verbose ? clnorm_now_ms() : 0.0;
    if (plan->strategy == CLNORM_STRATEGY_REFERENCE) {
        st = clnorm_ref_backward(d, mask, x, dy, mean, rstd, gamma, dx, dgamma, dbeta);
        RETURN_IF(st != CLNORM_OK, ctx, st, "the CPU reference rejected the call");
    } else {
        cl_mem b[B_COUNT] = {0};
        const int verbose = ctx->verbose;
        ctx->verbose = 0; /* one line for the whole host call */
        st = run_backward_host(plan, b, mask, x, dy, mean, rstd, gamma, dx, dgamma, dbeta);
        ctx->verbose = verbose;
        for (int i = 0; i < B_COUNT; i++)
            if (b[i] && !(i == B_DX && (b[i] == b[B_DY] || b[i] == b[B_X])))
                clReleaseMemObject(b[i]);
        if (st != CLNORM_OK)
            return st;
    }
    if (ctx->verbose)
        clnorm_verbose_exec(plan, "backward", "host", clnorm_now_ms() - t0);
    return CLNORM_OK;
}
