/* Dispatch: picks a kernel strategy per device and shape, sets the launch geometry, and
 * enqueues. The rules (also the README's table):
 *   CPU devices:   "row", except few long rows (rows < 4 x compute units, cols >= 32768):
 *                  "split", in chunks of at most 32768 columns (a core's L2 holds one).
 *   GPUs / others: few long rows (rows < 2 x CUs, cols >= 16384): "split"; rows that fit in
 *                  registers (cols <= 16 vectors x 32 lanes, 64 on AMD): "subgroup";
 *                  else "workgroup".
 * Measured on PoCL (ARCHITECTURE.md): one work-item per row runs ~7x faster than a tree
 * reduction per row on CPU devices, where a work-item is a loop iteration and local memory
 * is ordinary cache; on GPUs a row per work-item cannot coalesce its loads. */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Kept in step with kernels/common.cl. */
enum { FLAG_GAMMA = 1, FLAG_BETA = 2, FLAG_MEAN = 4, FLAG_RSTD = 8, FLAG_RMS = 16 };

static int is_cpu(const clnorm_ctx *ctx)
{
    return (ctx->profile.type & CL_DEVICE_TYPE_CPU) != 0;
}

/* Vector width of the kernels' loops: 64 bytes of accumulators per vector on CPUs (one
 * AVX-512 register, two AVX2 ones), 16 bytes on GPUs, where each work-item's load should stay
 * one coalesced transaction. */
static size_t vector_width(const clnorm_ctx *ctx, clnorm_dtype t)
{
    /* CLNORM_VECTOR_WIDTH (checked at plan creation) lets the tests run a GPU's vector width
     * on a CPU device, so the code paths a GPU takes are exercised where CI runs. */
    const size_t forced = clnorm_env_vector_width();
    if (forced)
        return forced;
    return is_cpu(ctx) ? (t == CLNORM_F64 ? 8 : 16) : 4;
}

/* Registers per item the subgroup strategy may hold a row in: up to 16 vectors. */
enum { SUBGROUP_MAX_REG_VECS = 16 };

static size_t subgroup_max_cols(const clnorm_ctx *ctx, clnorm_dtype t)
{
    return (size_t)ctx->profile.simd_width * vector_width(ctx, t) * SUBGROUP_MAX_REG_VECS;
}

clnorm_strategy clnorm_choose_strategy(const clnorm_ctx *ctx, const clnorm_desc *d)
{
    if (ctx->backend == CLNORM_BACKEND_REFERENCE)
        return CLNORM_STRATEGY_REFERENCE;
    const size_t cu = ctx->profile.compute_units;
    if (is_cpu(ctx))
        return (d->rows < 4 * cu && d->cols >= 32768) ? CLNORM_STRATEGY_SPLIT
                                                       : CLNORM_STRATEGY_ROW;
    if (d->rows < 2 * cu && d->cols >= 16384)
        return CLNORM_STRATEGY_SPLIT;
    if (d->cols <= subgroup_max_cols(ctx, d->dtype))
        return CLNORM_STRATEGY_SUBGROUP;
    return CLNORM_STRATEGY_WORKGROUP;
}

static size_t clamp_sz(size_t v, size_t lo, size_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

static size_t div_up(size_t a, size_t b)
{
    return a / b + (a % b != 0);
}

/* Work-group size for the cooperative strategies: CLNORM_LOCAL_SIZE when set (tests use it
 * for odd sizes), else 256 on GPUs (64 on CPUs), no more than the row needs. */
static clnorm_status cooperative_local(clnorm_plan *plan, size_t vw, size_t *local)
{
    clnorm_ctx *ctx = plan->ctx;
    const char *env = getenv("CLNORM_LOCAL_SIZE");
    if (env && *env) {
        char *end;
        unsigned long v = strtoul(env, &end, 10);
        RETURN_IF(*end != '\0' || v == 0 || v > 65536, ctx, CLNORM_INVALID_ARGUMENT,
                  "CLNORM_LOCAL_SIZE=%s is not a work-group size between 1 and 65536", env);
        *local = v;
        return CLNORM_OK;
    }
    if (plan->strategy == CLNORM_STRATEGY_SPLIT && is_cpu(ctx)) {
        *local = 1; /* a CPU work-group is a loop: one item per chunk avoids barriers */
        return CLNORM_OK;
    }
    size_t want = is_cpu(ctx) ? 64 : 256;
    size_t need = 1;
    while (need < want && need * vw < plan->desc.cols)
        need *= 2;
    *local = is_cpu(ctx) ? want : clamp_sz(need, 32, want);
    return CLNORM_OK;
}

static clnorm_status make_kernel(clnorm_plan *plan, cl_program prog, const char *name,
                                 cl_kernel *out)
{
    cl_int err;
    *out = clCreateKernel(prog, name, &err);
    CL_CHECK(plan->ctx, err, "clCreateKernel");
    return CLNORM_OK;
}

/* Lowers the work-group size to what the kernel can run on this device. */
static clnorm_status fit_local(clnorm_plan *plan, cl_kernel k)
{
    size_t kmax = 0;
    CL_CHECK(plan->ctx,
             clGetKernelWorkGroupInfo(k, plan->ctx->device, CL_KERNEL_WORK_GROUP_SIZE,
                                      sizeof kmax, &kmax, NULL),
             "clGetKernelWorkGroupInfo");
    if (kmax > 0 && plan->local > kmax)
        plan->local = kmax;
    if (plan->local > plan->ctx->profile.max_work_group_size)
        plan->local = plan->ctx->profile.max_work_group_size;
    return CLNORM_OK;
}

static clnorm_status prepare_geometry(clnorm_plan *plan);
static clnorm_status prepare_backward(clnorm_plan *plan, const char *options, size_t vw);
static void build_options(const clnorm_plan *plan, char *options, size_t size, size_t *vw);

/* Runs the plan's kernels once over zero rows with the real launch geometry. Some runtimes
 * (PoCL among them) compile a work-group function per launch geometry on the first enqueue;
 * doing that here keeps the promise that executing a plan never compiles. Nothing is read
 * or written: every kernel loops over rows, and there are none. */
static clnorm_status warm_up(clnorm_plan *plan)
{
    clnorm_desc saved = plan->desc;
    plan->desc.rows = 0;
    clnorm_status st = clnorm_enqueue_forward(plan, NULL, 0, NULL, 0, NULL, 0, NULL, 0, NULL, 0,
                                              NULL, 0, plan->ctx->warm_queue, 0, NULL, NULL);
    if (st == CLNORM_OK && plan->kernel_bwd_rows)
        st = clnorm_enqueue_backward(plan, 0, NULL, 0, NULL, 0, NULL, 0, NULL, 0, NULL, 0, NULL, 0,
                                     NULL, 0, NULL, 0, plan->ctx->warm_queue, 0, NULL, NULL);
    plan->desc = saved;
    if (st != CLNORM_OK)
        return st;
    CL_CHECK(plan->ctx, clFinish(plan->ctx->warm_queue), "clFinish (plan warm-up)");
    return CLNORM_OK;
}

clnorm_status clnorm_prepare_plan(clnorm_plan *plan)
{
    char options[128];
    size_t vw;
    build_options(plan, options, sizeof options, &vw);
    clnorm_status st = prepare_geometry(plan);
    if (st == CLNORM_OK && (plan->desc.flags & CLNORM_WITH_BACKWARD))
        st = prepare_backward(plan, options, vw);
    return st == CLNORM_OK ? warm_up(plan) : st;
}

/* Build options shared by every program of a plan: vector width and storage type. */
static void build_options(const clnorm_plan *plan, char *options, size_t size, size_t *vw)
{
    const clnorm_dtype t = plan->desc.dtype;
    *vw = vector_width(plan->ctx, t);
    /* Streaming stores and prefetch use Clang builtins: PoCL's CPU device only. The two
     * environment switches exist to measure what each brings (README). */
    const int stream = plan->ctx->profile.clang_cpu && !getenv("CLNORM_NO_STREAM_STORES");
    const int prefetch = stream && !getenv("CLNORM_NO_PREFETCH");
    snprintf(options, size, "-cl-std=CL1.2 -DVW=%zu -DCLNORM_DTYPE_%s%s%s", *vw,
             t == CLNORM_F64    ? "F64"
             : t == CLNORM_F16  ? "F16"
             : t == CLNORM_BF16 ? "BF16"
                                : "F32",
             stream ? " -DCLNORM_STREAM_STORES" : "", stream && !prefetch ? " -DCLNORM_NO_PREFETCH" : "");
}

/* The backward pass: blocks of at most 256 rows per work-group (short enough that the
 * group's float partials of dgamma/dbeta stay accurate, see kernels/norm_backward.cl), at
 * least a few groups per compute unit. Items per group: 1 with the row strategy, else the
 * cooperative size. */
static clnorm_status prepare_backward(clnorm_plan *plan, const char *options, size_t vw)
{
    clnorm_ctx *ctx = plan->ctx;
    const clnorm_desc *d = &plan->desc;
    static const char *const files[] = {"common.cl", "norm_backward.cl"};
    cl_program prog;
    clnorm_status st = clnorm_get_program(ctx, files, 2, options, &prog);
    if (st == CLNORM_OK)
        st = make_kernel(plan, prog, "norm_bwd_rows", &plan->kernel_bwd_rows);
    if (st == CLNORM_OK)
        st = make_kernel(plan, prog, "norm_bwd_params", &plan->kernel_bwd_params);
    if (st == CLNORM_OK)
        st = make_kernel(plan, prog, "norm_bwd_stats", &plan->kernel_bwd_stats);
    if (st != CLNORM_OK)
        return st;
    const size_t fwd_local = plan->local;
    if (plan->strategy == CLNORM_STRATEGY_ROW)
        plan->local = 1;
    else if ((st = cooperative_local(plan, vw, &plan->local)) != CLNORM_OK)
        return st;
    if ((st = fit_local(plan, plan->kernel_bwd_rows)) != CLNORM_OK ||
        (st = fit_local(plan, plan->kernel_bwd_stats)) != CLNORM_OK)
        return st;
    plan->bwd_local = plan->local;
    plan->local = 64;
    if ((st = fit_local(plan, plan->kernel_bwd_params)) != CLNORM_OK)
        return st;
    plan->bwd_param_local = plan->local;
    plan->local = fwd_local;

    const size_t min_groups = (is_cpu(ctx) ? 4 : 8) * ctx->profile.compute_units;
    /* Work-groups: blocks of rows x column chunks, about min_groups of them. Each block
     * writes one partial row of dgamma and one of dbeta, so a block of r rows adds 2/(3r) to
     * the traffic of x, dy and dx: blocks of at least 16 rows where rows allow. With fewer
     * rows the parallelism comes from cutting rows into column chunks (none shorter than what
     * amortizes a group's start, as in the forward's split), then from smaller blocks. */
    const size_t min_len = is_cpu(ctx) ? 4096 : plan->bwd_local * vw * 4;
    size_t chunks = 1;
    if (d->rows >= 16 * min_groups) {
        plan->bwd_rows_per_group = clamp_sz(div_up(d->rows, min_groups), 16, 256);
    } else {
        chunks = clamp_sz(min_groups, 1, clamp_sz(d->cols / min_len, 1, 1024));
        /* Blocks of >= 16 rows, unless that leaves compute units idle. */
        const size_t cu = ctx->profile.compute_units;
        const size_t most = d->rows / 16 > (d->rows < cu ? d->rows : cu) ? d->rows / 16
                                                                          : (d->rows < cu ? d->rows : cu);
        const size_t blocks = clamp_sz(div_up(min_groups, chunks), 1, most ? most : 1);
        plan->bwd_rows_per_group = clamp_sz(div_up(d->rows, blocks), 1, 256);
    }
    plan->bwd_groups = div_up(d->rows, plan->bwd_rows_per_group);
    /* Statistics recomputed from x (mean/rstd not given): a row per group, groups striding
     * over rows; with one item per group (CPU) few enough groups to keep a runtime's
     * per-group cost small. */
    plan->bwd_stats_groups =
        clamp_sz(d->rows, 1, plan->bwd_local == 1 ? 64 * ctx->profile.compute_units : 65536);
    plan->bwd_chunk_len = div_up(div_up(d->cols, chunks), vw) * vw;
    plan->bwd_chunks = div_up(d->cols, plan->bwd_chunk_len);
    const size_t acc = clnorm_param_size(d->dtype);
    if (plan->bwd_chunks > 1) {
        if ((st = make_kernel(plan, prog, "norm_bwd_sums", &plan->kernel_bwd_sums)) != CLNORM_OK)
            return st;
        const size_t saved = plan->local;
        plan->local = plan->bwd_local;
        st = fit_local(plan, plan->kernel_bwd_sums);
        plan->bwd_local = plan->local; /* one size for both kernels: they share the chunking */
        plan->local = saved;
        if (st != CLNORM_OK)
            return st;
        RETURN_IF(d->rows > SIZE_MAX / 2 / acc / plan->bwd_chunks, ctx, CLNORM_INVALID_ARGUMENT,
                  "backward: %zu rows x %zu chunks of sums overflow size_t", d->rows,
                  plan->bwd_chunks);
        cl_int err;
        plan->bwd_sums = clCreateBuffer(ctx->context, CL_MEM_READ_WRITE,
                                        d->rows * plan->bwd_chunks * 2 * acc, NULL, &err);
        CL_CHECK(ctx, err, "allocating the backward pass's chunk sums (clCreateBuffer)");
    }
    RETURN_IF(plan->bwd_groups > SIZE_MAX / 2 / acc / d->cols, ctx, CLNORM_INVALID_ARGUMENT,
              "backward: %zu row blocks x %zu columns of partial sums overflow size_t",
              plan->bwd_groups, d->cols);
    if (plan->bwd_groups > 0) {
        cl_int err;
        plan->bwd_scratch = clCreateBuffer(ctx->context, CL_MEM_READ_WRITE,
                                           plan->bwd_groups * 2 * d->cols * acc, NULL, &err);
        CL_CHECK(ctx, err, "allocating the backward pass's partial sums (clCreateBuffer)");
        RETURN_IF(d->rows > SIZE_MAX / 3 / acc, ctx, CLNORM_INVALID_ARGUMENT,
                  "backward: %zu rows of statistics overflow size_t", d->rows);
        plan->bwd_stats =
            clCreateBuffer(ctx->context, CL_MEM_READ_WRITE, d->rows * 3 * acc, NULL, &err);
        CL_CHECK(ctx, err, "allocating the backward pass's row statistics (clCreateBuffer)");
    }
    return CLNORM_OK;
}

static clnorm_status prepare_geometry(clnorm_plan *plan)
{
    clnorm_ctx *ctx = plan->ctx;
    const clnorm_desc *d = &plan->desc;
    const size_t cu = ctx->profile.compute_units;
    char options[128];
    size_t vw;
    build_options(plan, options, sizeof options, &vw);
    static const char *const row_files[] = {"common.cl", "norm_body.cl", "norm_row.cl"};
    static const char *const wg_files[] = {"common.cl", "norm_body.cl", "norm_workgroup.cl"};
    static const char *const split_files[] = {"common.cl", "norm_split.cl"};
    cl_program prog;
    clnorm_status st;
    switch (plan->strategy) {
    case CLNORM_STRATEGY_ROW:
        st = clnorm_get_program(ctx, row_files, 3, options, &prog);
        if (st == CLNORM_OK)
            st = make_kernel(plan, prog, "norm_row", &plan->kernel_main);
        if (st != CLNORM_OK)
            return st;
        /* Enough work-groups to keep every compute unit busy several times over, few enough
         * that a CPU runtime's per-group cost stays small next to a group's rows. */
        plan->local = clamp_sz(d->rows / (4 * cu), 1, 64);
        if (getenv("CLNORM_LOCAL_SIZE") && (st = cooperative_local(plan, vw, &plan->local)) != CLNORM_OK)
            return st;
        st = fit_local(plan, plan->kernel_main);
        if (st != CLNORM_OK)
            return st;
        plan->groups = clamp_sz(div_up(d->rows, plan->local), 1, (size_t)1 << 20);
        return CLNORM_OK;
    case CLNORM_STRATEGY_WORKGROUP:
        st = clnorm_get_program(ctx, wg_files, 3, options, &prog);
        if (st == CLNORM_OK)
            st = make_kernel(plan, prog, "norm_workgroup", &plan->kernel_main);
        if (st == CLNORM_OK)
            st = cooperative_local(plan, vw, &plan->local);
        if (st == CLNORM_OK)
            st = fit_local(plan, plan->kernel_main);
        if (st != CLNORM_OK)
            return st;
        plan->groups = clamp_sz(d->rows, 1, (size_t)1 << 20);
        return CLNORM_OK;
    case CLNORM_STRATEGY_SUBGROUP: {
        const size_t seg = ctx->profile.simd_width;
        RETURN_IF(d->cols > subgroup_max_cols(ctx, d->dtype), ctx, CLNORM_UNSUPPORTED,
                  "the subgroup strategy holds rows of at most %zu elements in registers on "
                  "this device; cols = %zu",
                  subgroup_max_cols(ctx, d->dtype), d->cols);
        /* Vectors per item, rounded up to a power of two so few programs serve all widths. */
        size_t regs = 1;
        while (regs * seg * vw < d->cols)
            regs *= 2;
        char sub_options[192];
        snprintf(sub_options, sizeof sub_options, "%s -DSEG=%zu -DREG_VECS=%zu", options, seg,
                 regs);
        static const char *const sub_files[] = {"common.cl", "norm_subgroup.cl"};
        st = clnorm_get_program(ctx, sub_files, 2, sub_options, &prog);
        if (st == CLNORM_OK)
            st = make_kernel(plan, prog, "norm_subgroup", &plan->kernel_main);
        if (st != CLNORM_OK)
            return st;
        /* 8 rows per work-group on GPUs (256 items for 32-lane segments), 2 on CPUs, where
         * this strategy only runs when forced (tests). */
        plan->local = seg * (is_cpu(ctx) ? 2 : 256 / seg > 0 ? 256 / seg : 1);
        if ((st = fit_local(plan, plan->kernel_main)) != CLNORM_OK)
            return st;
        RETURN_IF(plan->local < seg, ctx, CLNORM_UNSUPPORTED,
                  "the subgroup strategy needs work-groups of %zu items; the kernel allows %zu",
                  seg, plan->local);
        plan->local -= plan->local % seg;
        plan->groups = clamp_sz(div_up(d->rows, plan->local / seg), 1, (size_t)1 << 20);
        return CLNORM_OK;
    }
    case CLNORM_STRATEGY_SPLIT: {
        st = clnorm_get_program(ctx, split_files, 2, options, &prog);
        if (st == CLNORM_OK)
            st = make_kernel(plan, prog, "norm_split_stats", &plan->kernel_stats);
        if (st == CLNORM_OK)
            st = make_kernel(plan, prog, "norm_split_apply", &plan->kernel_main);
        if (st == CLNORM_OK)
            st = cooperative_local(plan, vw, &plan->local);
        if (st == CLNORM_OK)
            st = fit_local(plan, plan->kernel_stats);
        if (st == CLNORM_OK)
            st = fit_local(plan, plan->kernel_main);
        if (st != CLNORM_OK)
            return st;
        /* Chunks per row: enough groups in all for the device, no chunk shorter than what
         * amortizes a group's start, at most 1024 (the merge loop reads them all). */
        const size_t target = (is_cpu(ctx) ? 4 : 8) * cu;
        const size_t min_len = is_cpu(ctx) ? 4096 : plan->local * vw * 4;
        size_t chunks = div_up(target, d->rows ? d->rows : 1);
        /* On CPUs also keep a chunk within a core's L2 (the stats pass reads it twice):
         * 32768 elements, 128 KiB of float32. */
        const size_t max_len = 32768;
        if (is_cpu(ctx) && chunks < div_up(d->cols, max_len))
            chunks = div_up(d->cols, max_len);
        chunks = clamp_sz(chunks, 1, 1024);
        chunks = clamp_sz(chunks, 1, div_up(d->cols, min_len));
        size_t len = div_up(div_up(d->cols, chunks), vw) * vw;
        plan->chunk_len = len;
        plan->chunks = div_up(d->cols, len);
        plan->groups = clamp_sz(d->rows, 1, (size_t)1 << 16);
        const size_t per_row = 1 + 2 * plan->chunks;
        const size_t acc = clnorm_param_size(d->dtype);
        RETURN_IF(d->rows > SIZE_MAX / per_row / acc, ctx, CLNORM_INVALID_ARGUMENT,
                  "split strategy: %zu rows need more scratch than size_t can hold", d->rows);
        if (d->rows > 0) {
            cl_int err;
            plan->scratch = clCreateBuffer(ctx->context, CL_MEM_READ_WRITE,
                                           d->rows * per_row * acc, NULL, &err);
            CL_CHECK(ctx, err, "allocating the split strategy's scratch (clCreateBuffer)");
        }
        return CLNORM_OK;
    }
    default:
        return clnorm_fail(ctx, CLNORM_INVALID_ARGUMENT, "strategy %d cannot run on a device",
                           (int)plan->strategy);
    }
}

/* Sets kernel arguments in order; counts them so each call site stays one line per arg. */
typedef struct {
    cl_kernel k;
    cl_uint i;
    cl_int err;
} argset;

static void arg(argset *a, size_t size, const void *value)
{
    if (a->err == CL_SUCCESS)
        a->err = clSetKernelArg(a->k, a->i, size, value);
    a->i++;
}
static void arg_mem(argset *a, const cl_mem *m) { arg(a, sizeof(cl_mem), m); }
static void arg_u64(argset *a, size_t v)
{
    cl_ulong u = (cl_ulong)v;
    arg(a, sizeof u, &u);
}

/* The arguments every forward kernel but the split stats pass starts with. */
static void io_args(argset *a, const clnorm_desc *d, const cl_mem *x, size_t x_off,
                    const cl_mem *y, size_t y_off, const cl_mem *g, size_t g_off,
                    const cl_mem *b, size_t b_off, const cl_mem *m, size_t m_off,
                    const cl_mem *r, size_t r_off)
{
    arg_mem(a, x);
    arg_u64(a, x_off);
    arg_u64(a, d->x_stride);
    arg_mem(a, y);
    arg_u64(a, y_off);
    arg_u64(a, d->y_stride);
    arg_mem(a, g);
    arg_u64(a, g_off);
    arg_mem(a, b);
    arg_u64(a, b_off);
    arg_mem(a, m);
    arg_u64(a, m_off);
    arg_mem(a, r);
    arg_u64(a, r_off);
}

/* eps is of the kernels' arithmetic type A: double for F64, else float. */
static void arg_eps(argset *a, const clnorm_desc *d)
{
    if (d->dtype == CLNORM_F64) {
        const cl_double e = d->eps;
        arg(a, sizeof e, &e);
    } else {
        const cl_float e = d->eps;
        arg(a, sizeof e, &e);
    }
}

/*
 * Kernels of one operation enqueued one after another: each waits on the event of the one
 * before (the first on the caller's wait list), so that an out-of-order queue keeps them in
 * sequence too, and the last one signals the caller's event. Every path out releases the
 * events in between.
 */
typedef struct {
    clnorm_ctx *ctx;
    cl_command_queue queue;
    cl_uint nwait;
    const cl_event *wait;
    cl_event prev; /* the previous kernel's event; NULL before the first */
} kernel_chain;

static void chain_release(kernel_chain *c)
{
    if (c->prev)
        clReleaseEvent(c->prev);
    c->prev = NULL;
}

/* Fails the chain (releasing its event) when setting a kernel's arguments failed. */
static clnorm_status chain_args(kernel_chain *c, cl_int err, const char *what)
{
    if (err == CL_SUCCESS)
        return CLNORM_OK;
    chain_release(c);
    return clnorm_fail(c->ctx, err, "clSetKernelArg (%s) failed: %s", what,
                       clnorm_status_string(err));
}

/* Enqueues k after the chain so far; the last step (last != 0) signals event (may be NULL). */
static clnorm_status chain_step(kernel_chain *c, cl_kernel k, cl_uint dims, const size_t *global,
                                const size_t *local, int last, cl_event *event, const char *what)
{
    cl_event ev = NULL;
    const cl_int err =
        clEnqueueNDRangeKernel(c->queue, k, dims, NULL, global, local, c->prev ? 1 : c->nwait,
                               c->prev ? &c->prev : c->wait, last ? event : &ev);
    chain_release(c);
    c->prev = ev;
    if (err != CL_SUCCESS) {
        chain_release(c);
        return clnorm_fail(c->ctx, err, "clEnqueueNDRangeKernel (%s) failed: %s", what,
                           clnorm_status_string(err));
    }
    return CLNORM_OK;
}

clnorm_status clnorm_enqueue_forward(clnorm_plan *plan, cl_mem x, size_t x_off, cl_mem y,
                                     size_t y_off, cl_mem gamma, size_t g_off, cl_mem beta,
                                     size_t b_off, cl_mem mean, size_t m_off, cl_mem rstd,
                                     size_t r_off, cl_command_queue queue, cl_uint nwait,
                                     const cl_event *wait, cl_event *event)
{
    clnorm_ctx *ctx = plan->ctx;
    const clnorm_desc *d = &plan->desc;
    cl_uint flags = (gamma ? FLAG_GAMMA : 0) | (beta ? FLAG_BETA : 0) | (mean ? FLAG_MEAN : 0) |
                    (rstd ? FLAG_RSTD : 0) | (d->kind == CLNORM_RMS ? FLAG_RMS : 0);
    cl_ulong rows = d->rows, cols = d->cols;
    const size_t acc = clnorm_param_size(d->dtype); /* local scratch holds A's, like eps */
    const size_t L = plan->local;
    kernel_chain c = {ctx, queue, nwait, wait, NULL};
    clnorm_status st;

    if (plan->strategy != CLNORM_STRATEGY_SPLIT) {
        argset a = {plan->kernel_main, 0, CL_SUCCESS};
        io_args(&a, d, &x, x_off, &y, y_off, &gamma, g_off, &beta, b_off, &mean, m_off, &rstd,
                r_off);
        arg(&a, sizeof rows, &rows);
        arg(&a, sizeof cols, &cols);
        arg_eps(&a, d);
        arg(&a, sizeof flags, &flags);
        if (plan->strategy != CLNORM_STRATEGY_ROW)
            arg(&a, L * acc, NULL);
        const size_t global = plan->groups * L;
        if ((st = chain_args(&c, a.err, "forward")) != CLNORM_OK)
            return st;
        return chain_step(&c, plan->kernel_main, 1, &global, &L, 1, event, "forward");
    }

    /* split: statistics per chunk, then merge + apply. */
    cl_ulong chunk_len = plan->chunk_len;
    cl_uint chunks = (cl_uint)plan->chunks;
    const size_t global[2] = {plan->chunks * L, plan->groups};
    const size_t local[2] = {L, 1};
    argset s = {plan->kernel_stats, 0, CL_SUCCESS};
    arg_mem(&s, &x);
    arg_u64(&s, x_off);
    arg_u64(&s, d->x_stride);
    arg_mem(&s, &plan->scratch);
    arg(&s, sizeof rows, &rows);
    arg(&s, sizeof cols, &cols);
    arg(&s, sizeof chunk_len, &chunk_len);
    arg(&s, sizeof chunks, &chunks);
    arg(&s, sizeof flags, &flags);
    arg(&s, L * acc, NULL);
    if ((st = chain_args(&c, s.err, "split statistics")) != CLNORM_OK ||
        (st = chain_step(&c, plan->kernel_stats, 2, global, local, 0, NULL,
                         "split statistics")) != CLNORM_OK)
        return st;

    argset a = {plan->kernel_main, 0, CL_SUCCESS};
    io_args(&a, d, &x, x_off, &y, y_off, &gamma, g_off, &beta, b_off, &mean, m_off, &rstd, r_off);
    arg_mem(&a, &plan->scratch);
    arg(&a, sizeof rows, &rows);
    arg(&a, sizeof cols, &cols);
    arg(&a, sizeof chunk_len, &chunk_len);
    arg(&a, sizeof chunks, &chunks);
    arg_eps(&a, d);
    arg(&a, sizeof flags, &flags);
    if ((st = chain_args(&c, a.err, "split apply")) != CLNORM_OK)
        return st;
    return chain_step(&c, plan->kernel_main, 2, global, local, 1, event, "split apply");
}

/* The arguments norm_bwd_sums and norm_bwd_rows start with: x, dy, the statistics, gamma. */
static void bwd_inputs(argset *a, const clnorm_desc *d, const cl_mem *x, size_t x_off,
                       const cl_mem *dy, size_t dy_off, const cl_mem *mean, size_t m_off,
                       const cl_mem *rstd, size_t r_off, const cl_mem *gamma, size_t g_off)
{
    arg_mem(a, x);
    arg_u64(a, x_off);
    arg_u64(a, d->x_stride);
    arg_mem(a, dy);
    arg_u64(a, dy_off);
    arg_u64(a, d->y_stride);
    arg_mem(a, mean);
    arg_u64(a, m_off);
    arg_mem(a, rstd);
    arg_u64(a, r_off);
    arg_mem(a, gamma);
    arg_u64(a, g_off);
}

clnorm_status clnorm_enqueue_backward(clnorm_plan *plan, unsigned mask, cl_mem x, size_t x_off,
                                      cl_mem dy, size_t dy_off, cl_mem mean, size_t m_off,
                                      cl_mem rstd, size_t r_off, cl_mem gamma, size_t g_off,
                                      cl_mem dx, size_t dx_off, cl_mem dgamma, size_t dg_off,
                                      cl_mem dbeta, size_t db_off, cl_command_queue queue,
                                      cl_uint nwait, const cl_event *wait, cl_event *event)
{
    clnorm_ctx *ctx = plan->ctx;
    const clnorm_desc *d = &plan->desc;
    if (plan->bwd_groups == 0) /* no rows in this plan: the caller handles the outputs */
        return CLNORM_OK;
    /* Kept in step with kernels/norm_backward.cl. No saved statistics (rstd NULL, and mean
     * NULL for LayerNorm): recompute them from x first (warm-up: rows == 0, run it too). */
    const int recompute = !rstd || d->rows == 0;
    const cl_uint flags = (cl_uint)(mask & (CLNORM_GRAD_X | CLNORM_GRAD_GAMMA | CLNORM_GRAD_BETA)) |
                          (gamma ? 8u : 0u) | (d->kind == CLNORM_RMS ? 16u : 0u) |
                          (recompute ? 32u : 0u);
    const cl_ulong rows = d->rows, cols = d->cols, rpg = plan->bwd_rows_per_group;
    const cl_ulong groups = plan->bwd_groups, chunk_len = plan->bwd_chunk_len;
    const cl_uint chunks = (cl_uint)plan->bwd_chunks;
    const size_t acc = clnorm_param_size(d->dtype);
    const size_t L = plan->bwd_local;

    kernel_chain c = {ctx, queue, nwait, wait, NULL};
    clnorm_status st;
    if (recompute) {
        argset t = {plan->kernel_bwd_stats, 0, CL_SUCCESS};
        arg_mem(&t, &x);
        arg_u64(&t, x_off);
        arg_u64(&t, d->x_stride);
        arg_mem(&t, &plan->bwd_stats);
        arg(&t, sizeof rows, &rows);
        arg(&t, sizeof cols, &cols);
        arg_eps(&t, d);
        arg(&t, sizeof flags, &flags);
        arg(&t, L * acc, NULL);
        const size_t global = plan->bwd_stats_groups * L;
        if ((st = chain_args(&c, t.err, "backward statistics")) != CLNORM_OK ||
            (st = chain_step(&c, plan->kernel_bwd_stats, 1, &global, &L, 0, NULL,
                             "backward statistics")) != CLNORM_OK)
            return st;
    }

    /* Few long rows: the sums of each (row, chunk) first. */
    if (chunks > 1 && ((mask & CLNORM_GRAD_X) || d->rows == 0 /* warm-up */)) {
        argset s = {plan->kernel_bwd_sums, 0, CL_SUCCESS};
        bwd_inputs(&s, d, &x, x_off, &dy, dy_off, &mean, m_off, &rstd, r_off, &gamma, g_off);
        arg_mem(&s, &plan->bwd_stats);
        arg_mem(&s, &plan->bwd_sums);
        arg(&s, sizeof rows, &rows);
        arg(&s, sizeof cols, &cols);
        arg(&s, sizeof chunk_len, &chunk_len);
        arg(&s, sizeof chunks, &chunks);
        arg(&s, sizeof flags, &flags);
        arg(&s, L * acc, NULL);
        const size_t global[2] = {plan->bwd_chunks * L, clamp_sz(d->rows, 1, (size_t)1 << 16)};
        const size_t local[2] = {L, 1};
        if ((st = chain_args(&c, s.err, "backward sums")) != CLNORM_OK ||
            (st = chain_step(&c, plan->kernel_bwd_sums, 2, global, local, 0, NULL,
                             "backward sums")) != CLNORM_OK)
            return st;
    }

    /* With rows == 0 this is the plan's warm-up: the parameter pass runs too, writing
     * nothing. */
    const int warm = d->rows == 0;
    const int params = warm || (mask & (CLNORM_GRAD_GAMMA | CLNORM_GRAD_BETA)) != 0;
    const cl_uint param_flags = warm ? 0u : flags;

    argset a = {plan->kernel_bwd_rows, 0, CL_SUCCESS};
    bwd_inputs(&a, d, &x, x_off, &dy, dy_off, &mean, m_off, &rstd, r_off, &gamma, g_off);
    arg_mem(&a, &dx);
    arg_u64(&a, dx_off);
    arg_mem(&a, &plan->bwd_stats);
    arg_mem(&a, &plan->bwd_scratch);
    arg_mem(&a, &plan->bwd_sums);
    arg(&a, sizeof rows, &rows);
    arg(&a, sizeof cols, &cols);
    arg(&a, sizeof rpg, &rpg);
    arg(&a, sizeof chunk_len, &chunk_len);
    arg(&a, sizeof chunks, &chunks);
    arg(&a, sizeof flags, &flags);
    arg(&a, L * acc, NULL);
    const size_t rows_global[2] = {plan->bwd_chunks * L, plan->bwd_groups};
    const size_t rows_local[2] = {L, 1};
    if ((st = chain_args(&c, a.err, "backward rows")) != CLNORM_OK ||
        (st = chain_step(&c, plan->kernel_bwd_rows, 2, rows_global, rows_local, !params, event,
                         "backward rows")) != CLNORM_OK ||
        !params)
        return st;

    argset p = {plan->kernel_bwd_params, 0, CL_SUCCESS};
    arg_mem(&p, &plan->bwd_scratch);
    arg(&p, sizeof groups, &groups);
    arg(&p, sizeof cols, &cols);
    arg_mem(&p, &dgamma);
    arg_u64(&p, dg_off);
    arg_mem(&p, &dbeta);
    arg_u64(&p, db_off);
    arg(&p, sizeof param_flags, &param_flags);
    const size_t global = div_up(d->cols, plan->bwd_param_local) * plan->bwd_param_local;
    if ((st = chain_args(&c, p.err, "backward parameters")) != CLNORM_OK)
        return st;
    return chain_step(&c, plan->kernel_bwd_params, 1, &global, &plan->bwd_param_local, 1, event,
                      "backward parameters");
}
