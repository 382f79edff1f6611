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
 *    CLNORM_LATENCY_BYTES bytes (read at plan creation; default the op's latency_bytes for
 *    the description, else CLNORM_LATENCY_DEFAULT_BYTES, measured: bench/RESULTS.md). Its
 *    programs are built for both devices.
 *  - A latency plan executed on the context's own queue runs in the calling thread when every
 *    event of its wait list is already complete: the host waits for the queue's earlier work
 *    (clFinish), runs the kernels on the in-thread device, and returns with them done. The
 *    queue's order therefore holds (earlier work is done before, later work starts after),
 *    and the event returned is complete (a user event: see inline_lock in internal.h).
 *    Otherwise (a wait list still pending, an application queue, another queue of the
 *    context) the plan runs on that queue as any plan does.
 *  - A latency call whose x holds at least two CLNORM_LATENCY_PART_MIN_BYTES is cut into
 *    parts, as many as the host pool has threads (CLNORM_HOST_THREADS, default the device's
 *    compute units; 1 turns this off): the calling thread runs one, the pool's workers the
 *    others, each on a queue of its own on the in-thread device, all at once. The in-thread
 *    device runs a command in the thread that waits for it, so one thread alone streams the
 *    rows, where the multi-threaded device and oneDNN use every core. A forward's part is the
 *    same plan over fewer of its units (op->part_units, op->part_desc: rows, samples,
 *    GroupNorm's NCHW groups), so every row comes out bit for bit as it does whole; only ops
 *    whose units are independent describe parts. Otherwise, and for every backward, a call
 *    is cut by the blocks of the steps whose kernels take KA_FIRST_BLOCK (the backward's row
 *    blocks, GroupNorm's NHWC tiles): the other steps (statistics recomputed, the parameter
 *    pass over every block's partials, GroupNorm's merge of its tiles' moments) run whole in
 *    the calling thread, the blocks in parts, all on one instance's scratch; each block
 *    computes what it computes whole, and the steps after read the blocks' work in the same
 *    order, so the outputs come out bit for bit too.
 *  - The host loop's thresholds (CLNORM_HOST_BYTES, CLNORM_HOST_BACKWARD_BYTES; src/execute.c
 *    runs the loop) are read the same way, by clnorm_fits_env.
 *  - PoCL 3.1 mishandles a command of one device that waits on an event of the other in the
 *    same context (a `basic` kernel waiting on a `pthread` marker hangs; one waiting on a
 *    `pthread` kernel runs before it and reads stale data), so every wait across the two
 *    devices is a wait on the host, never an event dependency. And its `basic` device
 *    deadlocks when one thread releases one of its events while another runs its commands:
 *    ctx->inline_lock serializes the latency calls, and the caller's event is a user event,
 *    never one of `basic`. Within a call, each part has a queue of its own (two threads
 *    each enqueuing chains on a queue of their own and releasing their events ran 2 million
 *    times without a hang in a standalone program: bench/RESULTS.md).
 */
#include "internal.h"
#include "op/op.h"

#include <stdio.h>
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

int clnorm_is_inline_queue(clnorm_ctx *ctx, cl_command_queue queue)
{
    if (!ctx->inline_queue || !queue)
        return 0;
    if (queue == ctx->inline_queue)
        return 1;
    const unsigned n = atomic_load_explicit(&ctx->part_queue_count, memory_order_acquire);
    for (unsigned i = 0; i < n; i++)
        if (queue == ctx->part_queues[i])
            return 1;
    return 0;
}

/* Makes sure the workers 1 .. want - 1 each have their queue on the in-thread device; 0 when
 * one cannot be made (the call then runs whole in the calling thread). */
static int part_queues_ready(clnorm_ctx *ctx, unsigned want)
{
    if (atomic_load_explicit(&ctx->part_queue_count, memory_order_acquire) + 1 >= want)
        return 1;
    clnorm_mutex_lock(&ctx->lock);
    unsigned n = atomic_load_explicit(&ctx->part_queue_count, memory_order_relaxed);
    if (n + 1 < want && !ctx->part_queues)
        ctx->part_queues = calloc(ctx->host_threads, sizeof *ctx->part_queues);
    while (ctx->part_queues && n + 1 < want && n + 1 < ctx->host_threads) {
        cl_int err;
        cl_command_queue q = clCreateCommandQueue(ctx->context, ctx->inline_device,
                                                  clnorm_queue_props(ctx), &err);
        if (err != CL_SUCCESS)
            break;
        ctx->part_queues[n++] = q;
        atomic_store_explicit(&ctx->part_queue_count, n, memory_order_release);
    }
    clnorm_mutex_unlock(&ctx->lock);
    return n + 1 >= want;
}

/* Parts for x of `bytes` and at most `units` pieces: one per CLNORM_LATENCY_PART_MIN_BYTES,
 * at most one per thread of the host loop (1: the call runs whole). */
static unsigned parts_for(const clnorm_ctx *ctx, size_t bytes, size_t units)
{
    size_t parts = bytes / CLNORM_LATENCY_PART_MIN_BYTES;
    if (parts > units)
        parts = units;
    if (parts > ctx->host_threads)
        parts = ctx->host_threads;
    if (parts > CLNORM_LATENCY_MAX_PARTS)
        parts = CLNORM_LATENCY_MAX_PARTS;
    return parts > 1 ? (unsigned)parts : 1;
}

/* The forward: parts of its units (op->part_units), each the same plan over fewer of them. */
static void forward_parts(clnorm_plan *plan, size_t bytes)
{
    const clnorm_op *op = plan->op;
    const clnorm_chain *chain = plan->dir[CLNORM_FORWARD].chain;
    if (!op->part_units || !op->part_desc || !chain)
        return;
    /* Steps that take the kernels' rows one by one (or in blocks of rows) in a grid-stride
     * loop: a part's kernels see a smaller batch of rows of the same kind. */
    for (size_t k = 0; k < chain->nsteps; k++)
        if (chain->steps[k].geom != GEOM_FWD && chain->steps[k].geom != GEOM_SPLIT)
            return;
    plan->part_units = op->part_units(&plan->desc, plan->part_step);
    if (plan->part_units > 1)
        plan->inline_parts[CLNORM_FORWARD] = parts_for(plan->ctx, bytes, plan->part_units);
}

/* Parts by blocks: the steps that take KA_FIRST_BLOCK (the backward's row blocks, GroupNorm's
 * NHWC tiles) run in parts of their blocks, each block's work and scratch its own; the steps
 * between them run whole in the calling thread, all on one instance's scratch. Only the
 * steps of the kind the geometry runs count (RUN_SAMPLES or RUN_TILES), and they must all
 * have the same number of blocks. Every part launches the same number of blocks (the last
 * one's extra blocks do nothing): PoCL 3.1 keeps a kernel's builds in a process-wide cache
 * that counts references by kernel and work-group size but keys its builds by grid too, and
 * two commands of one kernel with different grids at once release each other's build (an
 * abort in pocl_release_dlhandle_cache, seen with parts of 2 and 3 blocks). The forward's
 * parts by units share one grid by construction (run_part). */
static void block_parts(clnorm_plan *plan, clnorm_direction dir, size_t bytes)
{
    const clnorm_chain *chain = plan->dir[dir].chain;
    if (!chain)
        return;
    const unsigned not_run = plan->geo.samples ? RUN_TILES : RUN_SAMPLES;
    unsigned cut = 0;
    size_t blocks = 0;
    for (size_t k = 0; k < chain->nsteps; k++) {
        const clnorm_kstep *step = &chain->steps[k];
        const int dim = clnorm_block_dim((clnorm_geom_kind)step->geom);
        if (dim < 0 || (step->run_if & not_run) || !clnorm_step_takes(step, KA_FIRST_BLOCK))
            continue;
        cl_uint dims;
        size_t global[2], local[2];
        clnorm_policy_ndrange(&plan->geo, &plan->view, step->geom, &dims, global, local);
        const size_t n = local[dim] ? global[dim] / local[dim] : 0;
        if (cut && n != blocks)
            return;
        blocks = n;
        cut |= 1u << k;
    }
    if (blocks < 2)
        return;
    /* parts of the same number of blocks, none of them empty */
    const size_t per = clnorm_div_up(blocks, parts_for(plan->ctx, bytes, blocks));
    plan->inline_parts[dir] = (unsigned)clnorm_div_up(blocks, per);
    if (plan->inline_parts[dir] > 1) {
        plan->cut_steps[dir] = cut;
        plan->cut_blocks[dir] = blocks;
    }
}

void clnorm_latency_plan_parts(clnorm_plan *plan)
{
    const clnorm_desc *d = &plan->desc;
    for (int dir = 0; dir < 2; dir++) {
        plan->inline_parts[dir] = 1;
        plan->cut_steps[dir] = 0;
        plan->cut_blocks[dir] = 0;
    }
    if (!plan->inline_ok || d->rows == 0 || plan->ctx->host_threads < 2)
        return;
    /* x's bytes, which a latency plan keeps within CLNORM_LATENCY_BYTES (at most 2^40) */
    const size_t bytes = d->rows * clnorm_row_len(d) * clnorm_dtype_size(d->dtype);
    forward_parts(plan, bytes);
    if (plan->inline_parts[CLNORM_FORWARD] == 1)
        block_parts(plan, CLNORM_FORWARD, bytes);
    if (d->flags & CLNORM_WITH_BACKWARD)
        block_parts(plan, CLNORM_BACKWARD, bytes);
}

/* The caller's event: a user event, already complete. It is an event of no device, so the
 * caller may wait for it, pass it to either device or release it from any thread (a `basic`
 * event must not be released outside inline_lock, see internal.h). */
static clnorm_status complete_event(clnorm_ctx *ctx, cl_event *event)
{
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

/* Launches `part` (NULL: the whole plan) on a queue of the in-thread device and waits for it:
 * the device runs the kernels in this thread, during the wait. */
static clnorm_status run_inline(clnorm_plan *plan, const clnorm_span *part, clnorm_direction dir,
                                const clnorm_call_args *a, unsigned flags,
                                cl_command_queue queue)
{
    cl_event done = NULL;
    TRY(clnorm_launch_span(plan, part, dir, a, flags, 0, queue, 0, NULL, &done));
    if (!done)
        return CLNORM_OK; /* a part with no step to run */
    const cl_int err = clWaitForEvents(1, &done);
    clReleaseEvent(done);
    if (err != CL_SUCCESS)
        return clnorm_fail(plan->ctx, err, "the latency path's kernels failed: %s",
                           clnorm_status_string(err));
    return CLNORM_OK;
}

/* One latency call cut into parts: what each part's thread needs, and what it reports. */
typedef struct {
    clnorm_plan *plan;
    clnorm_direction dir;
    const clnorm_call_args *a;
    unsigned flags;
    size_t parts, units;    /* the op's units (part_units), or the cut steps' blocks */
    unsigned steps;         /* by blocks: the cut steps to run (0: parts by units) */
    const cl_mem *scratch;  /* by blocks: the scratch every part writes its blocks' work to */
    _Atomic int failed;     /* the first part to fail sets it and writes status and msg */
    clnorm_status status;
    char msg[512];
} split_call;

static void run_part(void *arg, size_t i, unsigned worker)
{
    split_call *j = arg;
    clnorm_plan *plan = j->plan;
    clnorm_ctx *ctx = plan->ctx;
    cl_command_queue queue = worker == 0 ? ctx->inline_queue : ctx->part_queues[worker - 1];
    clnorm_status st;
    if (j->steps) {
        /* The whole problem's kernels over blocks [i * per, (i + 1) * per) only, the same
         * number in every part (block_parts) */
        const size_t per = clnorm_div_up(j->units, j->parts);
        const clnorm_span x = {&plan->desc, &plan->view, &plan->geo, j->steps, i * per, per,
                               j->scratch};
        st = run_inline(plan, &x, j->dir, j->a, j->flags, queue);
    } else {
        /* Units [u0, u1) of the batch, nearly equal shares; the same grid in every part */
        const size_t u0 = j->units * i / j->parts, u1 = j->units * (i + 1) / j->parts;
        clnorm_desc desc, view;
        plan->op->part_desc(&plan->desc, u1 - u0, &desc);
        if (plan->op->kernel_view)
            plan->op->kernel_view(&desc, &view);
        else
            view = desc;
        /* The plan's work-groups, shared out (a part's kernels loop over its rows) */
        clnorm_geometry geo = plan->geo;
        geo.groups = clnorm_div_up(plan->geo.groups, j->parts);
        const clnorm_span x = {&desc, &view, &geo, 0, 0, 0, NULL};
        clnorm_call_args a = *j->a;
        unsigned flags = j->flags;
        for (unsigned s = 0; s < CLNORM_ARG_SLOT_COUNT; s++)
            if (a.present & SLOT_BIT(s)) {
                a.offset[s] += u0 * plan->part_step[s];
                /* the call's vector alignment (execute.c), where a part's start keeps it */
                if ((u0 * plan->part_step[s]) % (plan->geo.vw ? plan->geo.vw : 1) != 0 &&
                    s != CLNORM_ARG_MEAN && s != CLNORM_ARG_RSTD)
                    flags &= ~CLNORM_KF_ALIGNED;
            }
        st = run_inline(plan, &x, CLNORM_FORWARD, &a, flags, queue);
    }
    /* The message is this thread's (status.c): the calling thread reports it. */
    if (st != CLNORM_OK && !atomic_exchange(&j->failed, 1)) {
        j->status = st;
        snprintf(j->msg, sizeof j->msg, "%s", clnorm_last_error(ctx));
    }
}

/* The parts of j at once, each on its own thread and queue; returns when all are done. */
static clnorm_status run_split(clnorm_pool *pool, split_call *j)
{
    atomic_init(&j->failed, 0);
    clnorm_pool_run(pool, j->parts, run_part, j);
    if (atomic_load(&j->failed))
        return clnorm_fail(j->plan->ctx, j->status, "%s", j->msg);
    return CLNORM_OK;
}

/* The forward in parts of rows. */
static clnorm_status forward_in_parts(clnorm_plan *plan, clnorm_pool *pool,
                                      const clnorm_call_args *a, unsigned flags)
{
    split_call j = {.plan = plan, .dir = CLNORM_FORWARD, .a = a, .flags = flags,
                    .parts = plan->inline_parts[CLNORM_FORWARD], .units = plan->part_units};
    return run_split(pool, &j);
}

/* Parts by blocks (block_parts): the chain's steps in order, each run of cut steps in parts
 * of their blocks, each run of the others whole in this thread, all on the scratch of one
 * instance. Each block computes what it computes whole, and the steps after them read the
 * blocks' work in the same order (the backward's parameter pass adds the partials in block
 * order; GroupNorm's merge, the tiles' moments): the same bits. */
static clnorm_status blocks_in_parts(clnorm_plan *plan, clnorm_pool *pool, clnorm_direction dir,
                                     const clnorm_call_args *a, unsigned flags)
{
    clnorm_ctx *ctx = plan->ctx;
    clnorm_instance *in = NULL;
    TRY(clnorm_acquire_instance(plan, dir, &in));
    /* Its scratch may still be in use by a chain on the main device. */
    clnorm_status st = clnorm_instance_wait(ctx, in);
    const clnorm_chain *chain = plan->dir[dir].chain;
    const size_t nsteps = chain->nsteps;
    const unsigned cut = plan->cut_steps[dir], run = clnorm_launch_steps(plan, dir, flags);
    for (size_t k = 0; st == CLNORM_OK && k < nsteps;) {
        /* the next run of steps all cut or all whole, less those this call does not run */
        const unsigned in_cut = (cut >> k) & 1u;
        unsigned mask = 0;
        for (; k < nsteps && ((cut >> k) & 1u) == in_cut; k++)
            mask |= 1u << k;
        mask &= run;
        if (!mask)
            continue;
        if (in_cut) {
            split_call j = {.plan = plan, .dir = dir, .a = a, .flags = flags,
                            .parts = plan->inline_parts[dir], .units = plan->cut_blocks[dir],
                            .steps = mask, .scratch = in->scratch};
            st = run_split(pool, &j);
        } else {
            const clnorm_span whole = {&plan->desc, &plan->view, &plan->geo, mask, 0, 0,
                                       in->scratch};
            st = run_inline(plan, &whole, dir, a, flags, ctx->inline_queue);
        }
    }
    clnorm_release_instance(plan, in);
    return st;
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
    const unsigned parts = plan->inline_parts[dir];
    clnorm_pool *pool = parts > 1 ? clnorm_host_pool(ctx) : NULL;
    if (pool && part_queues_ready(ctx, clnorm_pool_width(pool))) {
        const clnorm_status st = plan->cut_steps[dir] ? blocks_in_parts(plan, pool, dir, a, flags)
                                                      : forward_in_parts(plan, pool, a, flags);
        clnorm_mutex_unlock(&ctx->inline_lock);
        *taken = (int)parts;
        return st != CLNORM_OK || !event ? st : complete_event(ctx, event);
    }
    /* Done before the call returns, so the work enqueued after it on `queue` finds it done. */
    const clnorm_status st = run_inline(plan, NULL, dir, a, flags, ctx->inline_queue);
    clnorm_mutex_unlock(&ctx->inline_lock);
    if (st != CLNORM_OK || !event)
        return st;
    return complete_event(ctx, event);
}
