/*
 * execute.c - running a plan: layer 1 (cl_mem, asynchronous), layer 2 (host pointers,
 * synchronous) and the 0.1 wrappers over them. Every call validates all of its arguments
 * against the op table before anything is enqueued, so a failed call writes nothing.
 * Nothing here reads the environment or changes the context: plans are executed from many
 * threads at once (launch.c).
 */
#include "internal.h"
#include "op/op.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

clnorm_status clnorm_check_launch(clnorm_plan *plan, const char *fn, cl_command_queue *queue,
                                  cl_uint nwait, const cl_event *wait)
{
    clnorm_ctx *ctx = plan->ctx;
    RETURN_IF(ctx->backend == CLNORM_BACKEND_REFERENCE, ctx, CLNORM_NO_DEVICE,
              "%s needs an OpenCL device; this context runs on the CPU reference (use the "
              "host-pointer calls)",
              fn);
    RETURN_IF(plan->strategy == CLNORM_STRATEGY_REFERENCE, ctx, CLNORM_UNSUPPORTED,
              "a plan with the reference strategy runs through the host-pointer calls only");
    RETURN_IF((nwait > 0) != (wait != NULL), ctx, CLNORM_INVALID_ARGUMENT,
              "num_wait_events = %u does not match wait_events = %p", nwait, (const void *)wait);
    if (!*queue || *queue == ctx->queue) {
        *queue = ctx->queue; /* the context's own: known to be of its cl_context */
        return CLNORM_OK;
    }
    cl_context qctx = NULL;
    CL_CHECK(ctx, clGetCommandQueueInfo(*queue, CL_QUEUE_CONTEXT, sizeof qctx, &qctx, NULL),
             "querying the queue");
    RETURN_IF(qctx != ctx->context, ctx, CLNORM_INVALID_ARGUMENT,
              "queue belongs to another cl_context than the clnorm context's");
    return CLNORM_OK;
}

/* Each event of the wait list is one of this cl_context (OpenCL's CL_INVALID_EVENT_WAIT_LIST /
 * _CONTEXT, which some runtimes leave unchecked and then run the command without waiting).
 * Checked after the tensors: a tensor of another context comes with an event of it, and the
 * tensor's name says more. */
static clnorm_status check_wait_list(clnorm_ctx *ctx, cl_uint nwait, const cl_event *wait)
{
    for (cl_uint i = 0; i < nwait; i++) {
        RETURN_IF(wait[i] == NULL, ctx, CLNORM_INVALID_ARGUMENT, "wait_events[%u] is NULL", i);
        cl_context ectx = NULL;
        const cl_int err = clGetEventInfo(wait[i], CL_EVENT_CONTEXT, sizeof ectx, &ectx, NULL);
        RETURN_IF(err != CL_SUCCESS, ctx, CL_INVALID_EVENT_WAIT_LIST,
                  "wait_events[%u] is not an event: %s", i, clnorm_status_string(err));
        RETURN_IF(ectx != ctx->context, ctx, CLNORM_INVALID_ARGUMENT,
                  "wait_events[%u] belongs to another cl_context than the clnorm context's", i);
    }
    return CLNORM_OK;
}

clnorm_status clnorm_wait_release(clnorm_ctx *ctx, cl_event event)
{
    const cl_int err = clWaitForEvents(1, &event);
    clReleaseEvent(event);
    CL_CHECK(ctx, err, "clWaitForEvents");
    return CLNORM_OK;
}

static clnorm_status check_direction(clnorm_plan *plan, clnorm_direction dir)
{
    RETURN_IF(dir != CLNORM_FORWARD && dir != CLNORM_BACKWARD, plan->ctx,
              CLNORM_INVALID_ARGUMENT, "direction %d is not CLNORM_FORWARD or CLNORM_BACKWARD",
              (int)dir);
    RETURN_IF(dir == CLNORM_BACKWARD && !(plan->desc.flags & CLNORM_WITH_BACKWARD), plan->ctx,
              CLNORM_INVALID_ARGUMENT,
              "the plan was created without CLNORM_WITH_BACKWARD, so its backward kernels "
              "were not built");
    return CLNORM_OK;
}

/* Does any given output have elements? (Else the call is an empty batch: nothing to do.) */
static int writes_anything(const clnorm_call_args *a)
{
    for (unsigned s = 0; s < CLNORM_ARG_SLOT_COUNT; s++)
        if ((a->present & SLOT_BIT(s)) && a->info[s].is_output && a->info[s].extent > 0)
            return 1;
    return 0;
}

/*
 * CLNORM_KF_ALIGNED: whether the forward's vector accesses all fall on multiples of the vector
 * width. A row starts on a vector boundary when its buffer does, its tensor's offset and row
 * stride (with more than one row) are whole vectors, and the kernels' rows are whole vectors
 * (a GroupNorm's groups sit C/G x spatial apart in a sample). A buffer the runtime allocates,
 * and any sub-buffer, starts on CL_DEVICE_MEM_BASE_ADDR_ALIGN; one made over the
 * application's memory (CL_MEM_USE_HOST_PTR: the Python package's, a C caller's) starts
 * wherever that memory does, and a CPU runtime computes on it in place, so its pointer is
 * checked. Mean and rstd are read and written one element at a time: they do not count.
 */
static unsigned aligned_flag(const clnorm_plan *plan, const clnorm_call_args *a)
{
    const size_t vw = plan->geo.vw;
    const size_t base_align = plan->ctx->profile.base_align;
    static const clnorm_arg_slot vec_slots[] = {CLNORM_ARG_X,     CLNORM_ARG_Y,
                                                CLNORM_ARG_GAMMA, CLNORM_ARG_BETA,
                                                CLNORM_ARG_RESIDUAL, CLNORM_ARG_SUM,
                                                CLNORM_ARG_SCALE, CLNORM_ARG_SHIFT};
    if (vw == 0 || plan->view.cols % vw != 0)
        return 0;
    for (size_t i = 0; i < sizeof vec_slots / sizeof vec_slots[0]; i++) {
        const clnorm_arg_slot s = vec_slots[i];
        if (!(a->present & SLOT_BIT(s)))
            continue;
        const size_t vbytes = vw * clnorm_dtype_size(a->info[s].dtype);
        if (vbytes > base_align || a->offset[s] % vw != 0 ||
            (a->info[s].rows > 1 && a->info[s].stride % vw != 0))
            return 0;
        void *host = NULL; /* NULL unless the buffer was made with CL_MEM_USE_HOST_PTR */
        if (clGetMemObjectInfo((cl_mem)(uintptr_t)a->handle[s], CL_MEM_HOST_PTR, sizeof host,
                               &host, NULL) != CL_SUCCESS ||
            (uintptr_t)host % vbytes != 0)
            return 0;
    }
    return CLNORM_KF_ALIGNED;
}

clnorm_status clnorm_execute_quiet(clnorm_plan *plan, clnorm_direction dir,
                                   const clnorm_arg *args, size_t nargs, cl_command_queue queue,
                                   cl_uint nwait, const cl_event *wait, cl_event *event,
                                   int *inline_ran, int stats_checked)
{
    if (inline_ran)
        *inline_ran = 0;
    clnorm_ctx *ctx = plan->ctx;
    TRY(clnorm_check_launch(plan, "clnorm_execute", &queue, nwait, wait));
    TRY(check_direction(plan, dir));
    clnorm_call_args a;
    TRY(clnorm_gather_mem_args(ctx, plan->op, &plan->desc, dir, args, nargs, plan->slots[dir],
                               &a));
    TRY(clnorm_check_args(ctx, plan->op, &plan->desc, dir, &a, 1));
    TRY(clnorm_check_mems(ctx, &a));
    TRY(check_wait_list(ctx, nwait, wait));
    if (!writes_anything(&a)) { /* an empty batch: the event must still exist */
        if (event)
            CL_CHECK(ctx, clEnqueueMarkerWithWaitList(queue, nwait, wait, event),
                     "clEnqueueMarkerWithWaitList");
        return CLNORM_OK;
    }
    unsigned flags = plan->op->kernel_flags(plan->op, &plan->desc, dir, a.present);
    if (plan->op->geometry_flags)
        flags = plan->op->geometry_flags(plan->op, &plan->desc, &plan->geo, dir, flags);
    if (dir == CLNORM_FORWARD)
        flags |= aligned_flag(plan, &a);
    if (stats_checked)
        flags &= ~CLNORM_KF_REFINED;
    int taken = 0;
    TRY(clnorm_latency_launch(plan, dir, &a, flags, queue, nwait, wait, event, &taken));
    if (inline_ran)
        *inline_ran = taken;
    if (taken)
        return CLNORM_OK;
    return clnorm_launch(plan, dir, &a, flags, 0, queue, nwait, wait, event);
}

clnorm_status clnorm_execute(clnorm_plan *plan, clnorm_direction dir, const clnorm_arg *args,
                             size_t nargs, cl_command_queue queue, cl_uint nwait,
                             const cl_event *wait, cl_event *event)
{
    if (!plan)
        return CLNORM_INVALID_ARGUMENT;
    clnorm_ctx *ctx = plan->ctx;
    clnorm_clear_error(ctx);
    const double t0 = ctx->verbose ? clnorm_now_ms() : 0.0;
    int inline_ran = 0;
    clnorm_status st =
        clnorm_execute_quiet(plan, dir, args, nargs, queue, nwait, wait, event, &inline_ran, 0);
    if (st == CLNORM_OK && ctx->verbose) {
        CL_CHECK(ctx, clFinish(queue ? queue : ctx->queue), "clFinish (CLNORM_VERBOSE timing)");
        char on[320];
        clnorm_verbose_exec(plan, dir, "cl_mem",
                            clnorm_ran_on(ctx, inline_ran, ctx->name, on, sizeof on),
                            clnorm_now_ms() - t0);
    }
    return st;
}

/* ---- layer 2: host pointers ---- */

/* The buffers of one host call, by slot (device copies, or on a CPU device the host arrays
 * themselves); aliases share their slot's buffer. */
typedef struct {
    cl_mem mem[CLNORM_ARG_SLOT_COUNT];
    int owner[CLNORM_ARG_SLOT_COUNT]; /* this slot created (and releases) mem */
} host_bufs;

static void release_bufs(host_bufs *h)
{
    for (unsigned s = 0; s < CLNORM_ARG_SLOT_COUNT; s++)
        if (h->owner[s])
            clReleaseMemObject(h->mem[s]);
}

/* How a host call's buffers hold the host's arrays. */
typedef enum {
    BUF_OUTPUT,   /* a device copy, uninitialized: an output the kernels only write */
    BUF_COPY_IN,  /* a device copy of the host's data */
    BUF_HOST_MEM  /* the host's array itself (CL_MEM_USE_HOST_PTR): CPU devices */
} buf_kind;

/* A buffer for a slot over the host array `host` of `bytes` bytes. */
static clnorm_status make_buf(clnorm_ctx *ctx, const char *name, const void *host, size_t bytes,
                              buf_kind kind, cl_mem *out)
{
    RETURN_IF(bytes > ctx->profile.max_alloc_bytes, ctx, CLNORM_UNSUPPORTED,
              "%s needs %zu bytes, more than the device's largest allocation (%llu bytes)", name,
              bytes, (unsigned long long)ctx->profile.max_alloc_bytes);
    const cl_mem_flags flags = kind == BUF_HOST_MEM  ? CL_MEM_USE_HOST_PTR
                               : kind == BUF_COPY_IN ? CL_MEM_COPY_HOST_PTR
                                                     : 0;
    cl_int err;
    *out = clCreateBuffer(ctx->context, CL_MEM_READ_WRITE | flags, bytes,
                          kind == BUF_OUTPUT ? NULL : (void *)(uintptr_t)host, &err);
    CL_CHECK(ctx, err, name);
    return CLNORM_OK;
}

/* An output over the host's own array (BUF_HOST_MEM) made coherent: mapped for reading and
 * unmapped, after `done` (the runtime copies back only if it kept a copy of its own). */
static clnorm_status sync_back(clnorm_ctx *ctx, cl_command_queue q, cl_mem mem, size_t bytes,
                               cl_event done, cl_event *evs, cl_uint *nevs)
{
    cl_int err;
    cl_event mapped = NULL;
    void *p = clEnqueueMapBuffer(q, mem, CL_FALSE, CL_MAP_READ, 0, bytes, 1, &done, &mapped,
                                 &err);
    CL_CHECK(ctx, err, "mapping an output (clEnqueueMapBuffer)");
    err = clEnqueueUnmapMemObject(q, mem, p, 1, &mapped, &evs[*nevs]);
    clReleaseEvent(mapped);
    CL_CHECK(ctx, err, "unmapping an output (clEnqueueUnmapMemObject)");
    ++*nevs;
    return CLNORM_OK;
}

/* Reads a slot's elements back (not the gaps of a strided output: they are the caller's).
 * Rows but the last go through one rectangular read, the last row through a plain one: a
 * rectangle of `rows` full pitches would reach past the buffer's end, which some runtimes
 * (NVIDIA's) reject even though its last row is short. */
static clnorm_status read_back(clnorm_ctx *ctx, cl_command_queue rq, cl_mem mem,
                               const clnorm_slot_info *info, void *dst, cl_event done,
                               cl_event *evs, cl_uint *nevs)
{
    const size_t es = clnorm_dtype_size(info->dtype);
    const size_t pitch = info->stride * es, row = info->cols * es;
    cl_int err = CL_SUCCESS;
    if (info->rows > 1 && info->stride != info->cols) {
        const size_t origin[3] = {0, 0, 0};
        const size_t region[3] = {row, info->rows - 1, 1};
        err = clEnqueueReadBufferRect(rq, mem, CL_FALSE, origin, origin, region, pitch, 0,
                                      pitch, 0, dst, 1, &done, &evs[*nevs]);
        if (err == CL_SUCCESS) {
            ++*nevs;
            const size_t last = (info->rows - 1) * pitch;
            err = clEnqueueReadBuffer(rq, mem, CL_FALSE, last, row, (char *)dst + last, 1,
                                      &done, &evs[*nevs]);
        }
    } else {
        err = clEnqueueReadBuffer(rq, mem, CL_FALSE, 0, info->extent * es, dst, 1, &done,
                                  &evs[*nevs]);
    }
    CL_CHECK(ctx, err, "reading an output back");
    ++*nevs;
    return CLNORM_OK;
}

/* Must the device copy of slot s start with the host's data? When s, or any slot that is the
 * same tensor (in place), is an input. */
static int read_by_kernels(const clnorm_call_args *a, unsigned s)
{
    for (unsigned t = 0; t < CLNORM_ARG_SLOT_COUNT; t++)
        if ((a->present & SLOT_BIT(t)) && a->handle[t] == a->handle[s] && !a->info[t].is_output)
            return 1;
    return 0;
}

static clnorm_status run_host(clnorm_plan *plan, clnorm_direction dir,
                              const clnorm_call_args *a, host_bufs *h, int *inline_ran)
{
    clnorm_ctx *ctx = plan->ctx;
    /* A CPU device computes in host memory: its kernels work on the host's arrays themselves,
     * with no copy in or out (fresh device copies also cost a page fault per 4 KiB page on
     * first touch, every call: bench/RESULTS.md, "The host loop"). */
    const int host_mem = plan->host_mem;
    clnorm_arg args[CLNORM_ARG_SLOT_COUNT];
    size_t nargs = 0;
    for (unsigned s = 0; s < CLNORM_ARG_SLOT_COUNT; s++) {
        if (!(a->present & SLOT_BIT(s)) || a->info[s].extent == 0)
            continue; /* nothing to move for an empty tensor */
        for (unsigned t = 0; t < s && !h->mem[s]; t++)
            if (h->mem[t] && a->handle[t] == a->handle[s])
                h->mem[s] = h->mem[t]; /* in place: validated to be the very same tensor */
        if (!h->mem[s]) {
            const buf_kind kind = host_mem               ? BUF_HOST_MEM
                                  : read_by_kernels(a, s) ? BUF_COPY_IN
                                                          : BUF_OUTPUT;
            TRY(make_buf(ctx, clnorm_arg_name((clnorm_arg_slot)s), a->handle[s],
                         a->info[s].extent * clnorm_dtype_size(a->info[s].dtype), kind,
                         &h->mem[s]));
            h->owner[s] = 1;
        }
        args[nargs++] = (clnorm_arg){(clnorm_arg_slot)s, h->mem[s], 0};
    }
    cl_event done = NULL;
    TRY(clnorm_execute_quiet(plan, dir, args, nargs, ctx->queue, 0, NULL, &done, inline_ran,
                             1));
    /* The reads go where the kernels ran: on the latency path, the in-thread device (its
     * kernels are done; an event of one device is never waited on by the other's queue). */
    cl_command_queue rq = *inline_ran ? ctx->inline_queue : ctx->queue;
    /* The queue may be an adopted out-of-order one: the reads wait for the kernels. */
    cl_event evs[2 * CLNORM_ARG_SLOT_COUNT];
    cl_uint nevs = 0;
    clnorm_status st = CLNORM_OK;
    for (unsigned s = 0; s < CLNORM_ARG_SLOT_COUNT && st == CLNORM_OK; s++)
        if (h->mem[s] && a->info[s].is_output)
            st = host_mem ? sync_back(ctx, rq, h->mem[s],
                                      a->info[s].extent * clnorm_dtype_size(a->info[s].dtype),
                                      done, evs, &nevs)
                          : read_back(ctx, rq, h->mem[s], &a->info[s],
                                      (void *)(uintptr_t)a->handle[s], done, evs, &nevs);
    cl_int err = nevs ? clWaitForEvents(nevs, evs) : clWaitForEvents(1, &done);
    for (cl_uint i = 0; i < nevs; i++)
        clReleaseEvent(evs[i]);
    clReleaseEvent(done);
    if (st != CLNORM_OK)
        return st;
    CL_CHECK(ctx, err, "waiting for the outputs (clWaitForEvents)");
    return CLNORM_OK;
}

/* The terms each element of the parameter gradients asked for sums, where the statistics
 * reach them (0: none such asked for): dgamma's (and with the SiLU dbeta's, whose dz reads
 * xhat) every row and position, dscale's (dshift's with the SiLU) a sample's. */
static size_t saved_param_terms(const clnorm_plan *plan, const clnorm_call_args *a)
{
    const clnorm_desc *d = &plan->desc;
    const int silu = (d->flags & CLNORM_SILU) != 0;
    const size_t all = d->rows * (d->spatial ? d->spatial : 1);
    if (a->handle[CLNORM_ARG_DGAMMA] || (silu && a->handle[CLNORM_ARG_DBETA]))
        return all;
    if (a->handle[CLNORM_ARG_DSCALE] || (silu && a->handle[CLNORM_ARG_DSHIFT]))
        return all / (d->samples ? d->samples : 1);
    return 0;
}

/* Whether a host call's backward recomputes its saved statistics from x: float32 ones (a
 * float64 rstd is off by 2^-53), not precomputed ones (CLNORM_USE_GLOBAL_STATS, which are not
 * the data's), where the parameter gradients asked for sum more than
 * CLNORM_SAVED_PARAM_TERMS terms an element (flags.h; on a device with double, where every
 * op's parameter terms take xhat in double from recomputed statistics), or, for LayerNorm's,
 * the fused add's and GroupNorm's (an op with a mean), where a row's or group's
 * |mean| * rstd is above CLNORM_SAVED_MEAN_SPAN (flags.h).
 * dx multiplies the mean's rounding by rstd: float32 means of rows near 300 of spread 1e-3
 * put dx 18,916x its bound off torch's float64 (tests/torch_layer_spread.py --saved-stats);
 * recomputed, 0.006x (README, Numerics, "Saved statistics"). Recomputing costs a backward
 * 1.0-1.4x its time on the host loop and up to 1.6x on the kernels, one more read of x
 * (clnorm-lib-ab --saved-stats), so data whose mean is small against its spread keeps them.
 * Layer-1 calls' statistics are in device memory, where the host cannot look without a
 * blocking read: there the kernels correct such a mean themselves (kernels/norm_backward.cl
 * bwd_refines, group_backward.cl gn_refine_stats), though less closely than recomputing does
 * (its wide rows keep rstd's rest in double: dx 0.006x the bound above, corrected
 * 0.2-0.35x), and keep statistics of many terms, whose cost the caller chose by passing
 * them (README, Numerics, "Saved statistics of host calls"). Host calls of GroupNorm skip
 * that check (clnorm_execute_quiet's stats_checked): they looked here. */
static int recompute_saved(const clnorm_plan *plan, clnorm_direction dir,
                           const clnorm_call_args *a)
{
    const void *mean = a->handle[CLNORM_ARG_MEAN], *rstd = a->handle[CLNORM_ARG_RSTD];
    const clnorm_slot_info *mi = &a->info[CLNORM_ARG_MEAN], *ri = &a->info[CLNORM_ARG_RSTD];
    const int has_mean = plan->op->has_mean;
    if (dir != CLNORM_BACKWARD || rstd == NULL || ri->dtype != CLNORM_F32 ||
        (has_mean && (mean == NULL || mi->dtype != CLNORM_F32)) ||
        (plan->desc.flags & CLNORM_USE_GLOBAL_STATS) != 0)
        return 0;
    /* rstd's rounding, gathered by parameter gradients of many terms (flags.h) */
    if (plan->ctx->profile.has_fp64 && saved_param_terms(plan, a) > CLNORM_SAVED_PARAM_TERMS)
        return 1;
    if (!has_mean)
        return 0;
    /* counted, not searched: a loop GCC vectorizes (a row each, it had cost a backward of
     * 16384x16 about 4%); a NaN counts as 0 (as given) */
    const float *m = mean, *v = rstd;
    const int flat = (mi->rows <= 1 || mi->cols == mi->stride) &&
                     (ri->rows <= 1 || ri->cols == ri->stride);
    const size_t rows = flat ? 1 : mi->rows, cols = flat ? mi->rows * mi->cols : mi->cols;
    size_t hits = 0;
    for (size_t r = 0; r < rows; r++) {
        const float *mr = m + r * mi->stride, *vr = v + r * ri->stride;
        for (size_t c = 0; c < cols; c++)
            hits += fabsf(mr[c]) * fabsf(vr[c]) > (float)CLNORM_SAVED_MEAN_SPAN;
    }
    return hits > 0;
}

/* Runs a validated host call. */
static clnorm_status host_call(clnorm_plan *plan, clnorm_direction dir,
                               const clnorm_call_args *a)
{
    clnorm_ctx *ctx = plan->ctx;
    const double t0 = ctx->verbose ? clnorm_now_ms() : 0.0;
    clnorm_status st;
    int inline_ran = 0;
    const char *ran_on = ctx->name;
    if (plan->strategy == CLNORM_STRATEGY_REFERENCE) {
        clnorm_host_ptrs p;
        for (unsigned s = 0; s < CLNORM_ARG_SLOT_COUNT; s++)
            p.p[s] = (void *)(uintptr_t)a->handle[s];
        st = plan->op->ref(plan->op, &plan->desc, dir, &p);
        RETURN_IF(st != CLNORM_OK, ctx, st, "the CPU reference failed: %s",
                  clnorm_status_string(st));
    } else if (plan->host_ok[dir]) {
        /* The host loop: no command at all. The device path writes the outputs after the
         * queue's earlier work; the loop waits for that work, then reads and writes the
         * host arrays in place. */
        CL_CHECK(ctx, clFinish(ctx->queue), "clFinish (before the host loop)");
        clnorm_host_ptrs p;
        for (unsigned s = 0; s < CLNORM_ARG_SLOT_COUNT; s++)
            p.p[s] = (void *)(uintptr_t)a->handle[s];
        st = plan->op->host(plan->op, &plan->desc, dir, &p, ctx);
        RETURN_IF(st != CLNORM_OK, ctx, st, "the host loop failed: %s", clnorm_status_string(st));
        ran_on = clnorm_host_loop_name(ctx);
    } else {
        host_bufs h;
        memset(&h, 0, sizeof h);
        /* A latency plan's copies and reads are the in-thread device's commands too. */
        if (plan->inline_ok)
            clnorm_mutex_lock(&ctx->inline_lock);
        st = run_host(plan, dir, a, &h, &inline_ran);
        release_bufs(&h);
        if (plan->inline_ok)
            clnorm_mutex_unlock(&ctx->inline_lock);
        if (st != CLNORM_OK)
            return st;
    }
    if (ctx->verbose) {
        char on[320];
        clnorm_verbose_exec(plan, dir, "host",
                            clnorm_ran_on(ctx, inline_ran, ran_on, on, sizeof on),
                            clnorm_now_ms() - t0);
    }
    return CLNORM_OK;
}

clnorm_status clnorm_execute_host(clnorm_plan *plan, clnorm_direction dir,
                                  const clnorm_host_arg *args, size_t nargs)
{
    if (!plan)
        return CLNORM_INVALID_ARGUMENT;
    clnorm_ctx *ctx = plan->ctx;
    clnorm_clear_error(ctx);
    TRY(check_direction(plan, dir));
    clnorm_call_args a;
    TRY(clnorm_gather_host_args(ctx, plan->op, &plan->desc, dir, args, nargs, plan->slots[dir],
                                &a));
    TRY(clnorm_check_args(ctx, plan->op, &plan->desc, dir, &a, 0));
    if (!writes_anything(&a))
        return CLNORM_OK; /* an empty batch: nothing to compute (no scratch to size either) */
    /* saved statistics whose mean's rounding would reach dx: left out, so that whatever runs
     * the call (host loop, kernels, the reference plan) recomputes them; layer 3, clnorm_ref_*,
     * takes them as given */
    if (recompute_saved(plan, dir, &a)) {
        a.handle[CLNORM_ARG_MEAN] = a.handle[CLNORM_ARG_RSTD] = NULL;
        a.present &= ~(SLOT_BIT(CLNORM_ARG_MEAN) | SLOT_BIT(CLNORM_ARG_RSTD));
    }
    return host_call(plan, dir, &a);
}

/* ---- the reference, through the same validation ---- */

clnorm_status clnorm_ref_execute(const clnorm_desc *desc, clnorm_direction dir,
                                 const clnorm_host_arg *args, size_t nargs)
{
    TRY(clnorm_desc_check(desc, NULL, 0));
    const clnorm_op *op = clnorm_op_of(desc->kind);
    const clnorm_desc d = clnorm_desc_normalized(desc);
    clnorm_call_args a;
    TRY(clnorm_gather_host_args(NULL, op, &d, dir, args, nargs, NULL, &a));
    TRY(clnorm_check_args(NULL, op, &d, dir, &a, 0));
    if (!writes_anything(&a))
        return CLNORM_OK; /* an empty batch */
    clnorm_host_ptrs p;
    for (unsigned s = 0; s < CLNORM_ARG_SLOT_COUNT; s++)
        p.p[s] = (void *)(uintptr_t)a.handle[s];
    return op->ref(op, &d, dir, &p);
}
