/* Plans: a description validated and baked once on a context: operation, strategy,
 * geometry, programs (built or from the cache), a first instance of kernels and scratch,
 * warmed up. Executing a plan never compiles. */
#include "internal.h"
#include "op/op.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *clnorm_strategy_name(clnorm_strategy s)
{
    switch (s) {
    case CLNORM_STRATEGY_AUTO: return "auto";
    case CLNORM_STRATEGY_ROW: return "row";
    case CLNORM_STRATEGY_WORKGROUP: return "workgroup";
    case CLNORM_STRATEGY_SPLIT: return "split";
    case CLNORM_STRATEGY_REFERENCE: return "reference";
    case CLNORM_STRATEGY_SUBGROUP: return "subgroup";
    }
    return "unknown";
}

/* The most work-items per group every kernel of a chain allows on the device. */
static clnorm_status chain_kmax(clnorm_plan *plan, cl_program prog, const clnorm_chain *chain,
                                size_t *kmax)
{
    clnorm_ctx *ctx = plan->ctx;
    *kmax = 0;
    for (size_t i = 0; i < chain->nsteps; i++) {
        cl_int err;
        cl_kernel k = clCreateKernel(prog, chain->steps[i].kernel, &err);
        CL_CHECK(ctx, err, "clCreateKernel");
        /* Both devices' limit when the kernels may also run on the latency device. */
        const cl_device_id devices[2] = {ctx->device, ctx->inline_device};
        for (int dv = 0; dv < (plan->inline_ok ? 2 : 1) && err == CL_SUCCESS; dv++) {
            size_t m = 0;
            err = clGetKernelWorkGroupInfo(k, devices[dv], CL_KERNEL_WORK_GROUP_SIZE, sizeof m,
                                           &m, NULL);
            if (err == CL_SUCCESS && m > 0 && (*kmax == 0 || m < *kmax))
                *kmax = m;
        }
        clReleaseKernel(k);
        CL_CHECK(ctx, err, "clGetKernelWorkGroupInfo");
    }
    return CLNORM_OK;
}

/* Runs a direction's kernels once over zero rows with the real launch geometry. Some
 * runtimes (PoCL among them) compile a work-group function per launch geometry on the first
 * enqueue; doing that here keeps the promise that executing a plan never compiles. Nothing is
 * read or written: every kernel loops over rows, there are none, and the flags are 0. It
 * also makes the direction's first instance. */
static clnorm_status warm_up(clnorm_plan *plan, clnorm_direction dir)
{
    clnorm_ctx *ctx = plan->ctx;
    clnorm_call_args none;
    TRY(clnorm_gather_mem_args(ctx, plan->op, &plan->desc, dir, NULL, 0, plan->slots[dir],
                               &none));
    cl_event done = NULL;
    TRY(clnorm_launch(plan, dir, &none, 0, 1, ctx->warm_queue, 0, NULL, &done));
    TRY(clnorm_wait_release(ctx, done));
    if (!plan->inline_ok)
        return CLNORM_OK;
    /* The latency device compiles its own work-group functions: warm it too. */
    clnorm_mutex_lock(&ctx->inline_lock);
    clnorm_status st = clnorm_launch(plan, dir, &none, 0, 1, ctx->inline_queue, 0, NULL, &done);
    if (st == CLNORM_OK)
        st = clnorm_wait_release(ctx, done);
    clnorm_mutex_unlock(&ctx->inline_lock);
    return st;
}

clnorm_status clnorm_prepare_plan(clnorm_plan *plan, const clnorm_tuning *t)
{
    clnorm_ctx *ctx = plan->ctx;
    const clnorm_op *op = plan->op;
    const clnorm_desc *od = &plan->desc; /* the op's description */
    const clnorm_desc *d = &plan->view;  /* the rows x cols its kernels see */
    char msg[256] = "";
    clnorm_status st = clnorm_policy_build(&ctx->profile, d, plan->strategy, t, &plan->geo, msg,
                                           sizeof msg);
    RETURN_IF(st != CLNORM_OK, ctx, st, "%s", msg);
    const int ndir = (d->flags & CLNORM_WITH_BACKWARD) ? 2 : 1;
    size_t kmax[2] = {0, 0};
    for (int dir = 0; dir < ndir; dir++) {
        clnorm_direction_kernels *dk = &plan->dir[dir];
        char options[512];
        clnorm_policy_options(&ctx->profile, d, &plan->geo, t, (clnorm_direction)dir, options,
                              sizeof options);
        const size_t used = strlen(options);
        op->build_defines(op, od, options + used, sizeof options - used);
        const clnorm_chain *chain = op->chain(od, plan->strategy, (clnorm_direction)dir);
        RETURN_IF(!chain, ctx, CLNORM_UNSUPPORTED, "%s has no %s kernels for strategy %s",
                  op->name, dir ? "backward" : "forward", clnorm_strategy_name(plan->strategy));
        dk->chain = chain;
        TRY(clnorm_get_program(ctx, chain->files, options, &dk->program));
        TRY(chain_kmax(plan, dk->program, chain, &kmax[dir]));
    }
    st = clnorm_policy_geometry(&ctx->profile, d, plan->strategy, t, kmax, &plan->geo, msg,
                                sizeof msg);
    RETURN_IF(st != CLNORM_OK, ctx, st, "%s", msg);
    if (op->geometry)
        op->geometry(&ctx->profile, od, plan->strategy, t, kmax, &plan->geo);
    for (int dir = 0; dir < ndir; dir++) {
        clnorm_direction_kernels *dk = &plan->dir[dir];
        op->scratch_bytes(od, &plan->geo, (clnorm_direction)dir, dk->scratch_bytes);
        for (int i = 0; i < CLNORM_MAX_SCRATCH; i++)
            RETURN_IF(dk->scratch_bytes[i] > ctx->profile.max_alloc_bytes, ctx,
                      CLNORM_UNSUPPORTED,
                      "the %s pass of %zu x %zu needs a scratch buffer of %zu bytes, more than "
                      "the device's largest allocation (%llu bytes)",
                      dir ? "backward" : "forward", d->rows, d->cols, dk->scratch_bytes[i],
                      (unsigned long long)ctx->profile.max_alloc_bytes);
    }
    for (int dir = 0; dir < ndir; dir++)
        TRY(warm_up(plan, (clnorm_direction)dir));
    return CLNORM_OK;
}

clnorm_status clnorm_plan_create_with(clnorm_ctx *ctx, const clnorm_desc *desc,
                                      clnorm_strategy strategy, clnorm_plan **out)
{
    if (out)
        *out = NULL;
    if (!ctx)
        return CLNORM_INVALID_ARGUMENT;
    clnorm_clear_error(ctx);
    RETURN_IF(!out, ctx, CLNORM_INVALID_ARGUMENT, "plan (the output pointer) is NULL");
    char msg[256];
    clnorm_status st = clnorm_desc_check(desc, msg, sizeof msg);
    RETURN_IF(st != CLNORM_OK, ctx, st, "%s", msg);
    RETURN_IF((int)strategy < CLNORM_STRATEGY_AUTO || (int)strategy > CLNORM_STRATEGY_SUBGROUP,
              ctx, CLNORM_INVALID_ARGUMENT, "strategy %d is not a clnorm_strategy",
              (int)strategy);
    clnorm_tuning tuning;
    TRY(clnorm_read_tuning(ctx, &tuning));
    const clnorm_desc d = clnorm_desc_normalized(desc);
    const clnorm_op *op = clnorm_op_of(d.kind);
    clnorm_desc view = d;
    if (op->kernel_view)
        op->kernel_view(&d, &view);

    /* Neither the caller nor CLNORM_STRATEGY forces a strategy. */
    const int auto_asked =
        strategy == CLNORM_STRATEGY_AUTO && tuning.strategy == CLNORM_STRATEGY_AUTO;
    if (ctx->backend == CLNORM_BACKEND_REFERENCE) {
        RETURN_IF(strategy != CLNORM_STRATEGY_AUTO && strategy != CLNORM_STRATEGY_REFERENCE, ctx,
                  CLNORM_NO_DEVICE, "strategy %s needs an OpenCL device; this context has none",
                  clnorm_strategy_name(strategy));
        strategy = CLNORM_STRATEGY_REFERENCE; /* CLNORM_STRATEGY is for devices: ignored */
    } else {
        /* An op may run a description on some strategies only (GroupNorm in NHWC: its tiles,
         * "split", and a work-group per group, "workgroup"), and choose among them itself. */
        const unsigned runs = op->strategies ? op->strategies(&d) : 0;
        const clnorm_strategy asked = strategy != CLNORM_STRATEGY_AUTO ? strategy : tuning.strategy;
        if (runs && asked != CLNORM_STRATEGY_AUTO && !(runs & (1u << asked))) {
            char names[96] = "";
            size_t used = 0;
            for (int s = CLNORM_STRATEGY_ROW; s <= CLNORM_STRATEGY_SUBGROUP; s++)
                if ((runs & (1u << s)) && used < sizeof names)
                    used += (size_t)snprintf(names + used, sizeof names - used, "%s%s",
                                             used ? ", " : "", clnorm_strategy_name(s));
            return clnorm_fail(ctx, CLNORM_UNSUPPORTED, "%s runs this description only with "
                               "strategy %s (%s was asked for)", op->name, names,
                               clnorm_strategy_name(asked));
        }
        strategy = asked;
        if (strategy == CLNORM_STRATEGY_AUTO && op->auto_strategy)
            strategy = op->auto_strategy(&ctx->profile, &d);
        if (strategy == CLNORM_STRATEGY_AUTO)
            strategy = clnorm_policy_strategy(&ctx->profile, &view, &tuning);
    }
    RETURN_IF(strategy != CLNORM_STRATEGY_REFERENCE && d.dtype == CLNORM_F64 &&
                  !ctx->profile.has_fp64,
              ctx, CLNORM_UNSUPPORTED,
              "dtype f64 is unsupported on this device (%s): it does not report cl_khr_fp64",
              ctx->name);

    clnorm_plan *plan = calloc(1, sizeof *plan);
    RETURN_IF(!plan, ctx, CLNORM_OUT_OF_MEMORY, "out of host memory for a plan");
    if (clnorm_mutex_init(&plan->lock, 0) != 0) {
        free(plan);
        return clnorm_fail(ctx, CLNORM_OUT_OF_MEMORY, "creating the plan's lock failed");
    }
    plan->ctx = ctx;
    plan->op = op;
    plan->desc = d;
    plan->view = view;
    plan->strategy = strategy;
    for (int dir = 0; dir < 2; dir++)
        for (unsigned s = 0; s < CLNORM_ARG_SLOT_COUNT; s++)
            op->slot_info(op, &plan->desc, (clnorm_direction)dir, (clnorm_arg_slot)s,
                          &plan->slots[dir][s]);
    /* A latency plan: x small enough for the in-thread device (latency.c). */
    st = CLNORM_OK;
    if (ctx->inline_device && strategy != CLNORM_STRATEGY_REFERENCE) {
        const size_t op_bytes = op->latency_bytes ? op->latency_bytes(&d) : 0;
        st = clnorm_fits_env(ctx, &d, "CLNORM_LATENCY_BYTES",
                             op_bytes ? op_bytes : CLNORM_LATENCY_DEFAULT_BYTES,
                             &plan->inline_ok, NULL);
    }
    /* The host loop serves the plans whose strategy is clnorm's to choose, on a CPU device,
     * whose x is small enough (README, "Small problems on CPU devices"). */
    if (st == CLNORM_OK && auto_asked && strategy != CLNORM_STRATEGY_REFERENCE && op->host &&
        (ctx->profile.type & CL_DEVICE_TYPE_CPU)) {
        int host_bytes_set = 0;
        st = clnorm_host_threads_check(ctx);
        if (st == CLNORM_OK)
            st = clnorm_fits_env(ctx, &d, "CLNORM_HOST_BYTES",
                                 op->host_bytes ? op->host_bytes(&d, CLNORM_FORWARD)
                                                : CLNORM_HOST_DEFAULT_BYTES,
                                 &plan->host_ok[CLNORM_FORWARD], &host_bytes_set);
        /* The backward's own threshold, within CLNORM_HOST_BYTES where that is set (0 there
         * turns both off). The defaults are each direction's own: GroupNorm's NHWC forward
         * stops well before its backward (op->host_bytes). */
        if (st == CLNORM_OK)
            st = clnorm_fits_env(ctx, &d, "CLNORM_HOST_BACKWARD_BYTES",
                                 op->host_bytes ? op->host_bytes(&d, CLNORM_BACKWARD)
                                                : CLNORM_HOST_BACKWARD_DEFAULT_BYTES,
                                 &plan->host_ok[CLNORM_BACKWARD], NULL);
        if (host_bytes_set)
            plan->host_ok[CLNORM_BACKWARD] &= plan->host_ok[CLNORM_FORWARD];
    }
    if (st != CLNORM_OK) {
        clnorm_plan_free(plan);
        return st;
    }
    /* A CPU device computes in host memory: host calls that launch work on the arrays
     * themselves, unless CLNORM_HOST_MEM=0 asks for the copies other devices get (which is
     * how CI on a CPU tests that path). */
    const char *host_mem = getenv("CLNORM_HOST_MEM");
    plan->host_mem = (ctx->profile.type & CL_DEVICE_TYPE_CPU) != 0 &&
                     !(host_mem && strcmp(host_mem, "0") == 0);
    if (strategy != CLNORM_STRATEGY_REFERENCE) {
        const size_t builds = clnorm_program_builds(ctx);
        const double t0 = clnorm_now_ms();
        st = clnorm_prepare_plan(plan, &tuning);
        if (st != CLNORM_OK) {
            clnorm_plan_free(plan);
            return st;
        }
        clnorm_latency_plan_parts(plan);
        if (ctx->verbose)
            clnorm_verbose_plan(plan, clnorm_now_ms() - t0, clnorm_program_builds(ctx) > builds);
    } else if (ctx->verbose) {
        clnorm_verbose_plan(plan, 0.0, 0);
    }
    *out = plan;
    return CLNORM_OK;
}

clnorm_status clnorm_plan_create(clnorm_ctx *ctx, const clnorm_desc *desc, clnorm_plan **out)
{
    return clnorm_plan_create_with(ctx, desc, CLNORM_STRATEGY_AUTO, out);
}

void clnorm_plan_free(clnorm_plan *plan)
{
    if (!plan)
        return;
    clnorm_release_instances(plan);
    clnorm_mutex_destroy(&plan->lock);
    free(plan);
}

clnorm_strategy clnorm_plan_strategy(const clnorm_plan *plan)
{
    return plan ? plan->strategy : CLNORM_STRATEGY_AUTO;
}

const clnorm_desc *clnorm_plan_desc(const clnorm_plan *plan)
{
    return plan ? &plan->desc : NULL;
}

int clnorm_plan_uses_host_loop(const clnorm_plan *plan, clnorm_direction dir)
{
    return plan && (dir == CLNORM_FORWARD || dir == CLNORM_BACKWARD) ? plan->host_ok[dir] : 0;
}

const char *clnorm_plan_device_name(const clnorm_plan *plan)
{
    if (!plan)
        return "";
    return plan->inline_ok ? plan->ctx->inline_name : plan->ctx->name;
}
