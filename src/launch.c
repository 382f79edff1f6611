/*
 * launch.c - running a plan's kernel chain: argument binding from the op table, the chain of
 * events between the steps, and the pool of instances that makes a plan safe to execute from
 * many threads at once.
 *
 * clSetKernelArg on a kernel object that another thread is setting or enqueuing is a race
 * (OpenCL 1.2, appendix A.2), and clCloneKernel needs 2.1. So each execution takes an
 * instance of its own from the plan's pool (the pool grows when every instance is busy):
 * kernel objects and scratch buffers that no other host thread touches until the enqueues are
 * done. The device side is ordered through the instance's `last` event: a chain waits for
 * the previous chain that used the same scratch, so two queues (or an out-of-order one)
 * never share scratch while it is in use.
 */
#include "internal.h"
#include "op/op.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void instance_free(clnorm_instance *in)
{
    if (!in)
        return;
    for (size_t i = 0; i < sizeof in->kernels / sizeof in->kernels[0]; i++)
        if (in->kernels[i])
            clReleaseKernel(in->kernels[i]);
    for (size_t i = 0; i < CLNORM_MAX_SCRATCH; i++)
        if (in->scratch[i])
            clReleaseMemObject(in->scratch[i]);
    if (in->last)
        clReleaseEvent(in->last);
    if (in->last_queue)
        clReleaseCommandQueue(in->last_queue);
    free(in);
}

void clnorm_release_instances(clnorm_plan *plan)
{
    for (int d = 0; d < 2; d++) {
        clnorm_direction_kernels *dk = &plan->dir[d];
        for (size_t i = 0; i < dk->npool; i++)
            instance_free(dk->pool[i]);
        free(dk->pool);
        dk->pool = NULL;
        dk->npool = dk->cap = 0;
    }
}

/* A new instance: the chain's kernels and the direction's scratch. */
static clnorm_status instance_new(clnorm_plan *plan, clnorm_direction dir, clnorm_instance **out)
{
    clnorm_ctx *ctx = plan->ctx;
    const clnorm_direction_kernels *dk = &plan->dir[dir];
    const clnorm_chain *chain = dk->chain;
    clnorm_instance *in = calloc(1, sizeof *in);
    RETURN_IF(!in, ctx, CLNORM_OUT_OF_MEMORY, "out of host memory for a plan instance");
    cl_int err = CL_SUCCESS;
    for (size_t i = 0; i < chain->nsteps && err == CL_SUCCESS; i++)
        in->kernels[i] = clCreateKernel(dk->program, chain->steps[i].kernel, &err);
    for (size_t i = 0; i < CLNORM_MAX_SCRATCH && err == CL_SUCCESS; i++)
        if (dk->scratch_bytes[i])
            in->scratch[i] = clCreateBuffer(ctx->context, CL_MEM_READ_WRITE,
                                            dk->scratch_bytes[i], NULL, &err);
    if (err != CL_SUCCESS) {
        instance_free(in);
        return clnorm_fail(ctx, err, "creating a plan instance (kernels and scratch) failed: %s",
                           clnorm_status_string(err));
    }
    *out = in;
    return CLNORM_OK;
}

/* Takes a free instance of the direction's pool, making one when all are busy. */
clnorm_status clnorm_acquire_instance(clnorm_plan *plan, clnorm_direction dir,
                                      clnorm_instance **out)
{
    clnorm_direction_kernels *dk = &plan->dir[dir];
    clnorm_status st = CLNORM_OK;
    clnorm_mutex_lock(&plan->lock);
    for (size_t i = 0; i < dk->npool; i++)
        if (!dk->pool[i]->busy) {
            *out = dk->pool[i];
            goto done;
        }
    if (dk->npool == dk->cap) {
        const size_t cap = dk->cap ? 2 * dk->cap : 2;
        clnorm_instance **grown = realloc(dk->pool, cap * sizeof *grown);
        if (!grown) {
            st = clnorm_fail(plan->ctx, CLNORM_OUT_OF_MEMORY, "out of host memory for a pool");
            goto out;
        }
        dk->pool = grown;
        dk->cap = cap;
    }
    if ((st = instance_new(plan, dir, out)) != CLNORM_OK)
        goto out;
    dk->pool[dk->npool++] = *out;
done:
    (*out)->busy = 1;
out:
    clnorm_mutex_unlock(&plan->lock);
    return st;
}

clnorm_status clnorm_instance_wait(clnorm_ctx *ctx, clnorm_instance *in)
{
    if (!in->last)
        return CLNORM_OK;
    const cl_int err = clWaitForEvents(1, &in->last);
    clReleaseEvent(in->last);
    in->last = NULL;
    if (err != CL_SUCCESS)
        return clnorm_fail(ctx, err, "waiting for the plan's previous run failed: %s",
                           clnorm_status_string(err));
    return CLNORM_OK;
}

void clnorm_release_instance(clnorm_plan *plan, clnorm_instance *in)
{
    clnorm_mutex_lock(&plan->lock);
    in->busy = 0;
    clnorm_mutex_unlock(&plan->lock);
}

/* A kernel's arguments as bind() collects them: pointers (cl_mem, local memory) are set one
 * by one in order, scalars go into the struct `ks`, set last (flags.h, CLNORM_KS_MAX). */
typedef struct {
    cl_kernel k;
    cl_uint i;                    /* the next pointer argument */
    unsigned long long *null_args; /* the instance's record of arguments bound to NULL */
    cl_ulong ks[CLNORM_KS_MAX];
    unsigned nks;
    cl_int err;
} argset;

/* Sets pointer argument a->i. A cl_mem is always set, but NULL (an absent tensor) only when
 * the argument holds something else: a released buffer's handle can come back as a new
 * buffer's, and a runtime may have resolved the old one at clSetKernelArg. */
static void arg_ptr(argset *a, size_t size, const void *value, int is_null_mem)
{
    const unsigned long long bit = a->i < 64 ? 1ull << a->i : 0;
    if (a->err == CL_SUCCESS && !(is_null_mem && (*a->null_args & bit))) {
        a->err = clSetKernelArg(a->k, a->i, size, value);
        if (is_null_mem && a->err == CL_SUCCESS)
            *a->null_args |= bit;
        else
            *a->null_args &= ~bit;
    }
    a->i++;
}
static void arg_mem(argset *a, cl_mem m)
{
    arg_ptr(a, sizeof m, &m, m == NULL);
}
/* A scalar into the struct: integers zero-extended, a float as its 32 bits. */
static void arg_scalar(argset *a, cl_ulong bits)
{
    if (a->nks == CLNORM_KS_MAX) {
        a->err = CL_INVALID_ARG_INDEX; /* a chain with more scalars than flags.h allows */
        return;
    }
    a->ks[a->nks++] = bits;
}
static void arg_u64(argset *a, size_t v)
{
    arg_scalar(a, (cl_ulong)v);
}

/* Binds one step: the pointers of its tensor slots in ascending order, then those of its
 * argument list (scratch buffers, local memory), then the struct of its scalars: each slot's
 * offset and stride, then the list's scalars in order (kernels/common.cl, KS_PARAM). */
static cl_int bind(const clnorm_plan *plan, const clnorm_span *x, clnorm_direction dir,
                   clnorm_instance *in, size_t k, const clnorm_call_args *a, unsigned flags,
                   int warm, size_t local)
{
    const clnorm_kstep *step = &((const clnorm_chain *)plan->dir[dir].chain)->steps[k];
    const clnorm_desc *d = x->view; /* rows and cols as the kernels see them */
    const clnorm_geometry *g = x->geo;
    const int fwd_chunks = step->geom == GEOM_SPLIT;
    argset s = {in->kernels[k], 0, &in->null_args[k], {0}, 0, CL_SUCCESS};
    for (unsigned slot = 0; slot < CLNORM_ARG_SLOT_COUNT; slot++) {
        if (!(step->slots & SLOT_BIT(slot)))
            continue;
        const cl_mem m = (a->present & SLOT_BIT(slot)) ? (cl_mem)(uintptr_t)a->handle[slot] : NULL;
        arg_mem(&s, m);
        arg_u64(&s, m ? a->offset[slot] : 0);
        arg_u64(&s, a->info[slot].stride);
    }
    for (const clnorm_karg *ka = step->args; ka->kind != KA_END; ka++) {
        switch ((clnorm_karg_kind)ka->kind) {
        case KA_SCRATCH: arg_mem(&s, (x->scratch ? x->scratch : in->scratch)[ka->arg]); break;
        case KA_ROWS: arg_u64(&s, warm ? 0 : d->rows); break;
        case KA_COLS: arg_u64(&s, d->cols); break;
        case KA_EPS:
            if (d->dtype == CLNORM_F64) {
                const cl_double e = clnorm_arith_eps(d);
                cl_ulong bits;
                memcpy(&bits, &e, sizeof bits);
                arg_scalar(&s, bits);
            } else {
                const cl_float e = (cl_float)clnorm_arith_eps(d);
                cl_uint bits;
                memcpy(&bits, &e, sizeof bits);
                arg_scalar(&s, bits);
            }
            break;
        case KA_FLAGS: arg_scalar(&s, warm ? 0u : flags); break;
        case KA_CHUNK_LEN: arg_u64(&s, fwd_chunks ? g->chunk_len : g->bwd_chunk_len); break;
        case KA_CHUNKS: arg_u64(&s, fwd_chunks ? g->chunks : g->bwd_chunks); break;
        case KA_ROWS_PER_GROUP: arg_u64(&s, g->bwd_rows_per_group); break;
        case KA_GROUPS: arg_u64(&s, g->bwd_groups); break;
        case KA_LOCAL_ACC: arg_ptr(&s, local * clnorm_param_size(d->dtype), NULL, 0); break;
        case KA_OP: arg_u64(&s, plan->op->scalar(x->desc, ka->arg)); break;
        case KA_FIRST_BLOCK: arg_u64(&s, x->block0); break;
        case KA_END: break;
        }
    }
    /* The scalars last, set again only when they changed (a plan executed again with the
     * same offsets rebinds only its tensors' cl_mem). */
    if (s.err == CL_SUCCESS && (!in->ks_set[k] || memcmp(in->ks[k], s.ks, sizeof s.ks) != 0)) {
        in->ks_set[k] = 0;
        s.err = clSetKernelArg(s.k, s.i, sizeof s.ks, s.ks);
        if (s.err == CL_SUCCESS) {
            memcpy(in->ks[k], s.ks, sizeof s.ks);
            in->ks_set[k] = 1;
        }
    }
    return s.err;
}

/* An in-order queue runs its commands one after another: a chain on it needs no event to wait
 * for the previous chain on it. (A queue's properties are fixed when it is made.) */
static int in_order(cl_command_queue queue)
{
    cl_command_queue_properties props = 0;
    if (clGetCommandQueueInfo(queue, CL_QUEUE_PROPERTIES, sizeof props, &props, NULL) !=
        CL_SUCCESS)
        return 0; /* not known: wait */
    return (props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) == 0;
}

/* The RUN_* conditions an execution meets. */
static unsigned run_conditions(const clnorm_geometry *g, unsigned flags)
{
    unsigned run = 0;
    if ((flags & (CLNORM_KF_RECOMPUTE | CLNORM_KF_STATS_HERE)) == CLNORM_KF_RECOMPUTE)
        run |= RUN_RECOMPUTE; /* (the rows kernel takes them itself: row_norm.c) */
    if (flags & CLNORM_KF_REFINED)
        run |= RUN_REFINED;
    if (g->bwd_chunks > 1)
        run |= RUN_CHUNKED;
    if (flags & CLNORM_KF_GRAD_X)
        run |= RUN_GRAD_X;
    if ((flags & (CLNORM_KF_GRAD_GAMMA | CLNORM_KF_GRAD_BETA | CLNORM_KF_GRAD_SCALE |
                  CLNORM_KF_GRAD_SHIFT)) &&
        !(flags & CLNORM_KF_PARAMS_DIRECT)) /* the rows kernel wrote them (row_norm.c) */
        run |= RUN_PARAM_GRADS;
    if ((flags & CLNORM_KF_GRAD_X) && !(flags & CLNORM_KF_GLOBAL_STATS))
        run |= RUN_DX_SUMS;
    if ((run & RUN_DX_SUMS) || (flags & (CLNORM_KF_GRAD_GAMMA | CLNORM_KF_GRAD_BETA |
                                         CLNORM_KF_GRAD_SCALE | CLNORM_KF_GRAD_SHIFT)))
        run |= RUN_GRAD_SUMS;
    if ((run & RUN_DX_SUMS) ||
        ((run & RUN_GRAD_SUMS) &&
         !(flags & (CLNORM_KF_RECOMPUTE | CLNORM_KF_RMS | CLNORM_KF_GLOBAL_STATS))))
        run |= RUN_ROW_SUMS;
    if (g->bwd_slices)
        run |= RUN_SLICED;
    if (flags & CLNORM_KF_GMAX)
        run |= RUN_GMAX;
    run |= g->samples ? RUN_SAMPLES : RUN_TILES;
    run |= g->param_lanes ? RUN_PARAM_LANES : RUN_PARAM_GROUPS;
    return run;
}

/* The steps an execution runs (bit k: step k): those whose conditions hold and whose NDRange
 * is not empty (no row blocks in an empty batch), among x->steps (0: all). */
static unsigned steps_to_run(const clnorm_chain *chain, const clnorm_span *x, unsigned flags,
                             int warm)
{
    const unsigned run = run_conditions(x->geo, flags);
    unsigned mask = 0;
    for (size_t k = 0; k < chain->nsteps; k++) {
        const clnorm_kstep *step = &chain->steps[k];
        cl_uint dims;
        size_t global[2], local[2];
        clnorm_policy_ndrange(x->geo, x->view, step->geom, &dims, global, local);
        /* a warm-up runs every step the geometry chose */
        const unsigned need = warm ? step->run_if & RUN_CHOICES : step->run_if;
        if ((need & run) == need && global[0] > 0 && global[1] > 0 &&
            (x->steps == 0 || (x->steps & (1u << k))))
            mask |= 1u << k;
    }
    return mask;
}

unsigned clnorm_launch_steps(const clnorm_plan *plan, clnorm_direction dir, unsigned flags)
{
    const clnorm_span whole = {&plan->desc, &plan->view, &plan->geo, 0, 0, 0, NULL};
    return plan->dir[dir].chain ? steps_to_run(plan->dir[dir].chain, &whole, flags, 0) : 0;
}

/* CLNORM_VERBOSE=2: the kernels of one execution, kept to be timed when the last is done. */
typedef struct {
    cl_event ev[CLNORM_MAX_STEPS];
    const char *kernel[CLNORM_MAX_STEPS];
    cl_uint dims[CLNORM_MAX_STEPS];
    size_t global[CLNORM_MAX_STEPS][2], local[CLNORM_MAX_STEPS][2];
    size_t n;
} step_times;

static void step_times_release(step_times *t)
{
    for (size_t i = 0; i < t->n; i++)
        clReleaseEvent(t->ev[i]);
    t->n = 0;
}

/* Waits for the last kernel, prints each kernel's line (its device time from the profiling
 * information: end - start) and releases the events. */
static clnorm_status step_times_report(clnorm_plan *plan, clnorm_direction dir,
                                       cl_command_queue queue, step_times *t)
{
    clnorm_ctx *ctx = plan->ctx;
    cl_int err = t->n ? clWaitForEvents(1, &t->ev[t->n - 1]) : CL_SUCCESS;
    const char *device = clnorm_is_inline_queue(ctx, queue) ? ctx->inline_name : ctx->name;
    for (size_t i = 0; i < t->n && err == CL_SUCCESS; i++) {
        cl_ulong start = 0, end = 0;
        const cl_int e1 = clGetEventProfilingInfo(t->ev[i], CL_PROFILING_COMMAND_START,
                                                  sizeof start, &start, NULL);
        const cl_int e2 = clGetEventProfilingInfo(t->ev[i], CL_PROFILING_COMMAND_END,
                                                  sizeof end, &end, NULL);
        const double us =
            e1 == CL_SUCCESS && e2 == CL_SUCCESS && end >= start ? (double)(end - start) * 1e-3
                                                                  : -1.0;
        clnorm_verbose_kernel(plan, dir, t->kernel[i], t->dims[i], t->global[i], t->local[i],
                              device, us);
    }
    step_times_release(t);
    if (err != CL_SUCCESS)
        return clnorm_fail(ctx, err, "clWaitForEvents (CLNORM_VERBOSE=2 kernel times) failed: %s",
                           clnorm_status_string(err));
    return CLNORM_OK;
}

/* Enqueues the chosen steps one after another: each waits on the event of the one before (the
 * first on the wait list), so that an out-of-order queue keeps them in sequence too. *done
 * gets the last step's event; every path out releases the events in between. Under
 * CLNORM_VERBOSE=2 (not in a warm-up) it then waits for them and prints their times. */
static clnorm_status enqueue_steps(clnorm_plan *plan, const clnorm_span *x,
                                   clnorm_direction dir, clnorm_instance *in,
                                   const size_t *steps, size_t nsteps, const clnorm_call_args *a,
                                   unsigned flags, int warm, cl_command_queue queue,
                                   cl_uint nwait, const cl_event *wait, cl_event *done)
{
    clnorm_ctx *ctx = plan->ctx;
    const clnorm_chain *chain = plan->dir[dir].chain;
    cl_event prev = NULL;
    step_times times;
    times.n = 0;
    const int timed = ctx->verbose >= 2 && !warm;
    for (size_t n = 0; n < nsteps; n++) {
        const size_t k = steps[n];
        const clnorm_kstep *step = &chain->steps[k];
        cl_uint dims;
        size_t global[2], local[2];
        clnorm_policy_ndrange(x->geo, x->view, step->geom, &dims, global, local);
        /* A warm-up compiles for the work-group size; one group of it is enough, and the
         * full grid of a column pass over an empty batch of 2^40 columns would take hours. */
        if (warm) {
            global[0] = local[0];
            global[1] = local[1];
        }
        /* Some of the blocks (op.h: row blocks or tiles; the kernel adds KA_FIRST_BLOCK). A
         * global offset would do it without an argument, but PoCL 3.1 builds a kernel apart
         * for a zero offset, and when both builds of one kernel run at once it releases one
         * build's reference for the other's: an abort in pocl_release_dlhandle_cache. */
        const int bdim = clnorm_block_dim((clnorm_geom_kind)step->geom);
        if (x->blocks > 0 && !warm && bdim >= 0 && clnorm_step_takes(step, KA_FIRST_BLOCK))
            global[bdim] = x->blocks * local[bdim];
        cl_int err = bind(plan, x, dir, in, k, a, flags, warm, local[0]);
        cl_event ev = NULL;
        if (err == CL_SUCCESS)
            err = clEnqueueNDRangeKernel(queue, in->kernels[k], dims, NULL, global, local,
                                         prev ? 1 : nwait, prev ? &prev : wait, &ev);
        if (prev)
            clReleaseEvent(prev);
        prev = ev;
        if (err != CL_SUCCESS) {
            if (prev)
                clReleaseEvent(prev);
            step_times_release(&times);
            return clnorm_fail(ctx, err, "enqueueing %s failed: %s", step->kernel,
                               clnorm_status_string(err));
        }
        if (timed && clRetainEvent(ev) == CL_SUCCESS) {
            const size_t i = times.n++;
            times.ev[i] = ev;
            times.kernel[i] = step->kernel;
            times.dims[i] = dims;
            memcpy(times.global[i], global, sizeof global);
            memcpy(times.local[i], local, sizeof local);
        }
    }
    *done = prev;
    if (timed) {
        const clnorm_status st = step_times_report(plan, dir, queue, &times);
        if (st != CLNORM_OK) {
            clReleaseEvent(prev);
            *done = NULL;
            return st;
        }
    }
    return CLNORM_OK;
}

clnorm_status clnorm_launch_span(clnorm_plan *plan, const clnorm_span *part,
                                 clnorm_direction dir, const clnorm_call_args *a, unsigned flags,
                                 int warm, cl_command_queue queue, cl_uint nwait,
                                 const cl_event *wait, cl_event *event)
{
    clnorm_ctx *ctx = plan->ctx;
    const clnorm_chain *chain = plan->dir[dir].chain;
    const clnorm_span whole = {&plan->desc, &plan->view, &plan->geo, 0, 0, 0, NULL};
    const clnorm_span *x = part ? part : &whole;
    const unsigned run = steps_to_run(chain, x, flags, warm);
    size_t steps[CLNORM_MAX_STEPS], nsteps = 0;
    for (size_t k = 0; k < chain->nsteps; k++)
        if (run & (1u << k))
            steps[nsteps++] = k;
    if (nsteps == 0 && x->steps != 0) {
        if (event)
            *event = NULL; /* a part with nothing to run: nothing to wait for */
        return CLNORM_OK;
    }
    if (nsteps == 0) {
        if (event)
            CL_CHECK(ctx, clEnqueueMarkerWithWaitList(queue, nwait, wait, event),
                     "clEnqueueMarkerWithWaitList");
        return CLNORM_OK;
    }

    clnorm_instance *in = NULL;
    TRY(clnorm_acquire_instance(plan, dir, &in));
    /* The wait list plus the instance's last use of its scratch. */
    cl_event local_list[16];
    cl_event *list = local_list;
    cl_uint nlist = nwait;
    if (nwait + 1 > sizeof local_list / sizeof local_list[0]) {
        list = malloc((nwait + 1) * sizeof *list);
        if (!list) {
            clnorm_release_instance(plan, in);
            return clnorm_fail(ctx, CLNORM_OUT_OF_MEMORY, "out of host memory for a wait list");
        }
    }
    if (nwait)
        memcpy(list, wait, nwait * sizeof *list);
    /* The latency path's queue (latency.c): its chains are waited for before the call returns
     * and leave no `last` behind, so only an earlier chain of the main device is waited for,
     * on the host (PoCL mishandles one device waiting on the other's event). */
    const int on_inline = clnorm_is_inline_queue(ctx, queue);
    if (in->last && !(queue == in->last_queue && in_order(queue))) {
        if (on_inline) {
            const clnorm_status ws = clnorm_instance_wait(ctx, in);
            if (ws != CLNORM_OK) {
                if (list != local_list)
                    free(list);
                clnorm_release_instance(plan, in);
                return ws;
            }
        } else {
            list[nlist++] = in->last;
        }
    }

    cl_event done = NULL;
    clnorm_status st = enqueue_steps(plan, x, dir, in, steps, nsteps, a, flags, warm, queue,
                                     nlist, nlist ? list : NULL, &done);
    if (list != local_list)
        free(list);
    if (st == CLNORM_OK && on_inline) {
        /* The latency path waits for `done` before it returns and holds the only reference:
         * no later chain needs to wait for it, and no event of the in-thread device outlives
         * the lock that guards it. */
        if (in->last)
            clReleaseEvent(in->last);
        in->last = NULL;
        if (event)
            *event = done;
        else
            clReleaseEvent(done);
    } else if (st == CLNORM_OK) {
        if (in->last)
            clReleaseEvent(in->last);
        in->last = done;
        /* Retained, so that its address cannot come back as another queue's (NULL when that
         * fails: the next chain then always waits). */
        if (queue != in->last_queue) {
            if (in->last_queue)
                clReleaseCommandQueue(in->last_queue);
            in->last_queue = clRetainCommandQueue(queue) == CL_SUCCESS ? queue : NULL;
        }
        if (event) {
            const cl_int err = clRetainEvent(done);
            if (err == CL_SUCCESS)
                *event = done;
            else
                st = clnorm_fail(ctx, err, "clRetainEvent failed: %s", clnorm_status_string(err));
        }
    }
    clnorm_release_instance(plan, in);
    return st;
}

clnorm_status clnorm_launch(clnorm_plan *plan, clnorm_direction dir, const clnorm_call_args *a,
                            unsigned flags, int warm, cl_command_queue queue, cl_uint nwait,
                            const cl_event *wait, cl_event *event)
{
    return clnorm_launch_span(plan, NULL, dir, a, flags, warm, queue, nwait, wait, event);
}
