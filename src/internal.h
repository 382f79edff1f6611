/* Internal declarations shared by the library's source files. Not installed. */
#ifndef CLNORM_INTERNAL_H
#define CLNORM_INTERNAL_H

#include "clnorm.h"
#include "flags.h"

#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include "host_pool.h"
#include "lock.h"

struct clnorm_op;

/* What the policy needs to know about a device; read once at context creation. */
typedef struct {
    cl_device_type type;
    cl_uint compute_units;
    size_t max_work_group_size;
    cl_ulong local_mem_bytes;
    cl_ulong max_alloc_bytes;
    int has_fp16, has_fp64;
    int clang_cpu;       /* a CPU device of a Clang-based runtime (PoCL): kernels may use
                            __builtin_nontemporal_store */
    unsigned simd_width; /* lanes that run in lockstep: 64 on AMD GPUs, else 32 (the
                            subgroup strategy's row segment) */
    int nv_ptx;          /* NVIDIA's OpenCL platform: kernels may use inline PTX */
    size_t base_align;   /* CL_DEVICE_MEM_BASE_ADDR_ALIGN in bytes: where a cl_mem the
                            runtime allocates (or a sub-buffer) starts */
} clnorm_device_profile;

/* Overrides of the policy's choices, read from the environment at plan creation (tests and
 * the bench use them; nothing on the execute path reads the environment). */
typedef struct {
    clnorm_strategy strategy; /* CLNORM_STRATEGY; AUTO when unset */
    size_t local_size;        /* CLNORM_LOCAL_SIZE; 0: the policy's */
    size_t vector_width;      /* CLNORM_VECTOR_WIDTH (2, 4, 8, 16); 0: the policy's */
    size_t max_groups;        /* CLNORM_MAX_GROUPS: at most this many work-groups along the
                                 row axis, so grid-stride loops run more than once; 0: none */
    int no_stream_stores;     /* CLNORM_NO_STREAM_STORES */
    int no_prefetch;          /* CLNORM_NO_PREFETCH */
    int no_elem_loads;        /* CLNORM_NO_ELEM_LOADS */
    int no_samples;           /* CLNORM_NO_SAMPLE_ITEMS: no whole-sample kernels (GEOM_SAMPLES) */
} clnorm_tuning;

#define CLNORM_MAX_SCRATCH 5
#define CLNORM_MAX_KERNELS 9 /* steps of one chain */

/* Launch geometry of a plan: a pure function of (device profile, description, strategy,
 * tuning, kernels' work-group limits), policy.c. */
typedef struct clnorm_geometry {
    size_t vw;            /* vector width of the kernels' loops */
    size_t seg, reg_vecs; /* subgroup: lanes per row, register vectors per lane */
    size_t item_rows;     /* subgroup: rows per item when an item holds whole rows */
    /* forward */
    size_t local;         /* work-group size (split: per chunk) */
    size_t groups;        /* work-groups along the row axis (grid-stride beyond) */
    size_t chunks;        /* split: chunks per row */
    size_t chunk_len;     /* split: columns per chunk */
    /* backward: blocks of rows per work-group, then a column pass */
    size_t bwd_local;          /* work-group size of the row kernels */
    size_t bwd_groups;         /* row blocks (= work-groups), 0 when rows == 0 */
    size_t bwd_rows_per_group; /* rows per block */
    size_t bwd_param_local;    /* work-group size of the parameter kernel */
    size_t bwd_chunks;         /* column chunks per row (1: rows are not cut) */
    size_t bwd_chunk_len;      /* columns per chunk */
    size_t bwd_stats_groups;   /* work-groups of the statistics kernel */
    size_t bwd_sums_groups;    /* work-groups along rows of the chunk sums kernel */
    size_t param_items;        /* work-items of the parameter kernel (parameters; on CPUs
                                  VW parameters each) */
    size_t slice_items;        /* work-items along columns of the slices kernel (columns) */
    size_t bwd_slices;         /* slices of the parameter partials added first, one work-item
                                  per (column, slice); 0: the parameter pass adds them all */
    size_t items, items_local; /* GEOM_ITEMS: a work-group of items_local per item (an op's
                                  own use) */
    size_t samples;            /* GEOM_SAMPLES: one-item work-groups, one per sample (grid-
                                  stride beyond); non-zero: the chain's RUN_SAMPLES steps run
                                  in place of its RUN_TILES ones (an op's own choice) */
    int param_lanes;           /* non-zero: the chain's RUN_PARAM_LANES step runs in place of
                                  its RUN_PARAM_GROUPS one (an op's own choice: one-item
                                  work-groups of VW parameters in lanes) */
    int whole_groups;          /* non-zero: the forward takes a work-group per group row
                                  (an op's own choice, GroupNorm's NHWC strategy workgroup):
                                  no scratch for tiles */
    int bwd_gmax;              /* non-zero: the row backward's wide rows count gamma and
                                  the scale (an op's own choice: CLNORM_KF_GMAX, a float32
                                  LayerNorm on a device with double) */
    int bwd_stats_here;        /* non-zero: the row backward's rows kernel recomputes each
                                  row's statistics itself (CLNORM_KF_STATS_HERE: one-item
                                  work-groups of whole rows, a device with double) */
} clnorm_geometry;

/* The last error message of one thread on a context (see clnorm_last_error; status.c). Only
 * its thread writes it; the context lists it, and frees it once the thread has exited (gone)
 * or with the context. */
typedef struct clnorm_error_slot {
    char *text;
    size_t cap;
    _Atomic int gone;               /* set by the thread-exit destructor of the context's key */
    struct clnorm_error_slot *next; /* the context's list (under ctx->lock) */
} clnorm_error_slot;

typedef struct {
    char *key;          /* source names + build options */
    cl_program program; /* owned by the cache */
} clnorm_program_entry;

struct clnorm_ctx {
    clnorm_backend backend;
    cl_platform_id platform;
    cl_device_id device;
    cl_context context;
    cl_command_queue queue;
    /* Plan warm-ups run here: the context's own queue, or for an adopted application queue
     * a private one, so that creating a plan never waits for the application's work. */
    cl_command_queue warm_queue;
    /* The latency path (latency.c): the platform's in-thread device and an in-order queue on
     * it, for small plans executed on the context's own queue; NULL when there is none. */
    cl_device_id inline_device;
    cl_command_queue inline_queue;
    /* More in-order queues on the in-thread device, one per worker thread of the host pool
     * that runs a part of a latency call's rows (latency.c): worker w > 0 uses
     * part_queues[w - 1]. Made at the first call that cuts its rows, under `lock`; readers
     * take `part_queue_count` (release/acquire) and then the queues below it. */
    cl_command_queue *part_queues;
    _Atomic unsigned part_queue_count;
    /* Serializes the latency path's calls, and everything else that touches the in-thread
     * device's commands and events (recursive: the host layer holds it around its own inner
     * call). A call's parts run at once on different queues of that device, each in its own
     * thread, while the caller holds the lock. */
    clnorm_mutex inline_lock;
    char inline_name[256];
    char name[512];
    clnorm_device_profile profile;
    /* CLNORM_VERBOSE, read at creation, never changed: 0 off, 1 plan and exec lines, 2 also
     * a line per kernel with its device time (the context's queues then profile) */
    int verbose;

    clnorm_mutex lock; /* guards the program cache and the error messages */
    clnorm_program_entry *programs;
    size_t program_count, program_cap;
    size_t builds;

    /* Error messages (status.c): each thread's slot under a thread-specific key of the
     * context's own, all of them listed for freeing; where no key could be made, one slot
     * shared by the threads under the lock. */
    pthread_key_t error_key;
    int error_key_ok;
    clnorm_error_slot *error_slots;
    clnorm_error_slot shared_error;
    /* Messages recorded since the context was made (status.c): while 0, clearing the calling
     * thread's message, which every call does first, needs no lock. */
    _Atomic unsigned long long errors_recorded;

    /* The host loop's threads (host_threads.c): how many run a call, the calling thread
     * included (CLNORM_HOST_THREADS, else the device's compute units), how long idle workers
     * spin (CLNORM_HOST_SPIN_US), both read at creation; a bad value of either, which plan
     * creation reports; and the pool, started by the first call that needs it. */
    unsigned host_threads, host_spin_us;
    char host_env_error[160];
    char host_loop_name[64]; /* where CLNORM_VERBOSE says the host loop ran */
    _Atomic(clnorm_pool *) host_pool;
    int host_pool_failed; /* under lock: starting the pool failed, the calls run alone */
};

/* One execution's own kernel objects and scratch buffers for one direction of a plan: what
 * two threads must not share. `last` is the event of the last chain that used the scratch
 * (retained), which the next use waits for unless it goes to the same in-order queue: on
 * another queue, or an out-of-order one, the device would otherwise let two executions share
 * the scratch. */
typedef struct {
    cl_kernel kernels[CLNORM_MAX_KERNELS];
    /* What each kernel has bound (launch.c), so that an argument is set again only when it
     * changed: on PoCL every clSetKernelArg allocates and copies. `ks` is the kernel's
     * scalar struct (valid when ks_set), `null_args` the pointer arguments bound to NULL
     * (bit i: argument i). */
    cl_ulong ks[CLNORM_MAX_KERNELS][CLNORM_KS_MAX];
    unsigned char ks_set[CLNORM_MAX_KERNELS];
    unsigned long long null_args[CLNORM_MAX_KERNELS];
    cl_mem scratch[CLNORM_MAX_SCRATCH];
    cl_event last;
    cl_command_queue last_queue; /* where `last` was enqueued (retained) */
    int busy;
} clnorm_instance;

/* The kernels of one direction of a plan: program, chain, scratch sizes, instance pool. */
typedef struct {
    const void *chain; /* const clnorm_chain * (op.h) */
    cl_program program;
    size_t scratch_bytes[CLNORM_MAX_SCRATCH];
    clnorm_instance **pool;
    size_t npool, cap;
} clnorm_direction_kernels;

struct clnorm_plan {
    clnorm_ctx *ctx;
    const struct clnorm_op *op;
    clnorm_desc desc; /* strides filled in (never 0) */
    clnorm_desc view; /* the rows x cols problem the kernels see (op.h, kernel_view) */
    clnorm_strategy strategy;
    clnorm_geometry geo;
    clnorm_direction_kernels dir[2]; /* CLNORM_FORWARD, CLNORM_BACKWARD */
    int inline_ok;                   /* a latency plan: runs on ctx->inline_queue (latency.c) */
    /* A latency plan's parts per direction: the most parts a call is cut into, each run by
     * one thread of the host pool on its own queue of the in-thread device (latency.c); 1:
     * the calling thread runs it whole. A forward is cut by units (part_units of them,
     * op->part_units; part_step: each slot's offset advance per unit) or, where the op
     * describes none, like a backward: by the blocks of the steps in cut_steps (bit k: step
     * k, those that take KA_FIRST_BLOCK), cut_blocks of them, the other steps run whole. */
    unsigned inline_parts[2];
    size_t part_units, part_step[CLNORM_ARG_SLOT_COUNT];
    unsigned cut_steps[2];
    size_t cut_blocks[2];
    int host_ok[2]; /* per direction: its host-pointer calls run op->host (execute.c) */
    int host_mem;   /* its host-pointer calls make buffers over the host arrays (execute.c) */
    /* op->slot_info of every slot and direction, filled once at creation: each call's
     * argument checks start from these instead of asking the op again. */
    clnorm_slot_info slots[2][CLNORM_ARG_SLOT_COUNT];
    clnorm_mutex lock;                      /* guards the instance pools */
};

/* ---- errors (status.c) ---- */
/* Records a formatted message on ctx (which may be NULL) for the calling thread and returns
 * status. */
clnorm_status clnorm_fail(clnorm_ctx *ctx, clnorm_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
void clnorm_clear_error(clnorm_ctx *ctx);
/* The median of three values, the shift of a row or group (kernels/common.cl's med3, the host
 * loops' and the reference's): fmin and fmax pass over a NaN. */
static inline double clnorm_med3(double a, double b, double c)
{
    return fmax(fmin(a, b), fmin(fmax(a, b), c));
}

/* Element k (0, 1 or 2) of the three whose median is the shift of a group of cpg channels x
 * hw positions (hw and cpg at least 1), as its channel within the group (*c) and position
 * (*p): in NCHW the first three elements of the group row (kernels/op_group_norm.cl
 * row_shift), in NHWC its first channel's first three positions (group_nhwc.cl gn_shift1);
 * fewer than three repeat the last. The host loop and the reference take it from here. */
static inline void clnorm_group_shift_elem(int nhwc, size_t cpg, size_t hw, size_t k,
                                           size_t *c, size_t *p)
{
    if (nhwc) {
        *c = 0;
        *p = k < hw ? k : hw - 1;
        return;
    }
    const size_t len = cpg * hw, i = k < len ? k : len - 1;
    *c = i / hw;
    *p = i % hw;
}

/* The context's error messages: made with it (ctx_alloc), freed with it. */
void clnorm_init_errors(clnorm_ctx *ctx);
void clnorm_release_errors(clnorm_ctx *ctx);

/* One-line error returns: RETURN_IF(bad, ctx, CLNORM_INVALID_ARGUMENT, "x is NULL"). */
#define RETURN_IF(cond, ctx, status, ...)                                                   \
    do {                                                                                    \
        if (cond)                                                                           \
            return clnorm_fail((ctx), (status), __VA_ARGS__);                               \
    } while (0)
/* Checks an OpenCL call; on failure records "<what>: <CL error name>" and returns its code. */
#define CL_CHECK(ctx, call, what)                                                           \
    do {                                                                                    \
        cl_int cl_check_err_ = (call);                                                      \
        if (cl_check_err_ != CL_SUCCESS)                                                    \
            return clnorm_fail((ctx), cl_check_err_, "%s failed: %s", (what),               \
                               clnorm_status_string(cl_check_err_));                        \
    } while (0)
/* Evaluates a clnorm_status expression; returns it when it is not CLNORM_OK. */
#define TRY(expr)                                                                           \
    do {                                                                                    \
        clnorm_status try_st_ = (expr);                                                     \
        if (try_st_ != CLNORM_OK)                                                           \
            return try_st_;                                                                 \
    } while (0)

/* ---- descriptions (desc.c) ---- */
size_t clnorm_dtype_size(clnorm_dtype dtype);
/* Bytes of one parameter (gamma, beta, mean, rstd, dgamma, dbeta): 8 for F64, else 4. */
size_t clnorm_param_size(clnorm_dtype dtype);
/* Bytes of one W of the kernels (kernels/common.cl: double where the device has it, else the
 * arithmetic type), as the backward's parameter sums are kept: scratch of W is sized for
 * double on every device. */
#define CLNORM_W_SIZE sizeof(double)
/* The parameters' element type: F64 for F64, else F32. */
clnorm_dtype clnorm_param_dtype(clnorm_dtype dtype);
/* Storage of the residual and the sum of a description. */
clnorm_dtype clnorm_residual_dtype(const clnorm_desc *d);
const char *clnorm_dtype_name(clnorm_dtype dtype);
const char *clnorm_kind_name(clnorm_kind kind);
/* Elements of one row of x: cols, or for CLNORM_GROUP a sample, cols x spatial. */
size_t clnorm_row_len(const clnorm_desc *d);
/* Extent in elements of a strided tensor: (rows - 1) * stride + cols; 0 when rows == 0.
 * Returns 0 on overflow too, which callers separate by checking rows first. */
int clnorm_extent(size_t rows, size_t cols, size_t stride, size_t *extent);
int clnorm_ranges_overlap(size_t a, size_t na, size_t b, size_t nb);
/* The description with strides filled in. */
clnorm_desc clnorm_desc_normalized(const clnorm_desc *d);
/* eps as the kernels use it: rounded to float unless the storage is F64. */
double clnorm_arith_eps(const clnorm_desc *d);

/* ---- arguments (args.c) ---- */
/* The arguments of one call, by slot. */
typedef struct {
    const void *handle[CLNORM_ARG_SLOT_COUNT]; /* cl_mem or host pointer; NULL: not given */
    size_t offset[CLNORM_ARG_SLOT_COUNT];      /* elements (cl_mem only) */
    unsigned present;                          /* SLOT_BIT of each given slot */
    clnorm_slot_info info[CLNORM_ARG_SLOT_COUNT];
} clnorm_call_args;

/* Gathers a cl_mem argument list: each slot at most once, known to the op in this direction.
 * Fills the slots' layouts: from `cached` (a plan's, CLNORM_ARG_SLOT_COUNT of them) when
 * given, else from the op. */
clnorm_status clnorm_gather_mem_args(clnorm_ctx *ctx, const struct clnorm_op *op,
                                     const clnorm_desc *d, clnorm_direction dir,
                                     const clnorm_arg *args, size_t nargs,
                                     const clnorm_slot_info *cached, clnorm_call_args *out);
clnorm_status clnorm_gather_host_args(clnorm_ctx *ctx, const struct clnorm_op *op,
                                      const clnorm_desc *d, clnorm_direction dir,
                                      const clnorm_host_arg *args, size_t nargs,
                                      const clnorm_slot_info *cached, clnorm_call_args *out);
/* Presence (required/unused), the op's cross-slot rules, and aliasing: outputs may only be
 * exactly an input row tensor. is_mem: handles are cl_mem (overlap by offsets within one
 * buffer) rather than host pointers (overlap by address). */
clnorm_status clnorm_check_args(clnorm_ctx *ctx, const struct clnorm_op *op,
                                const clnorm_desc *d, clnorm_direction dir,
                                const clnorm_call_args *a, int is_mem);
/* Every given cl_mem belongs to the context and holds offset + extent elements. */
clnorm_status clnorm_check_mems(clnorm_ctx *ctx, const clnorm_call_args *a);

/* ---- device choice (device_select.c) ---- */
/* Finds the device for a spec (NULL: default). Returns CLNORM_NO_DEVICE with a message in
 * msg when none matches; *found = 0 and CLNORM_OK when no platform exists and spec is NULL. */
clnorm_status clnorm_select_device(const char *spec, cl_platform_id *platform,
                                   cl_device_id *device, int *found, char *msg, size_t msg_size);
clnorm_status clnorm_read_profile(cl_device_id device, clnorm_device_profile *profile);

/* ---- programs (program.c) ---- */
/* Program for flags.h and the given kernel files (joined in order, NULL-terminated) with the
 * build options, built on first use and cached in ctx. The program belongs to the cache. */
clnorm_status clnorm_get_program(clnorm_ctx *ctx, const char *const *files,
                                 const char *options, cl_program *program);
void clnorm_release_programs(clnorm_ctx *ctx);

/* ---- policy (policy.c): pure functions of their arguments ---- */
size_t clnorm_div_up(size_t a, size_t b);
size_t clnorm_clamp(size_t v, size_t lo, size_t hi);
/* A work-group size within the kernels' limit kmax (0: none) and the device's. */
size_t clnorm_fit_local(size_t local, size_t kmax, const clnorm_device_profile *p);
/* Work-groups along a row axis: want, within [1, most] and the test cap CLNORM_MAX_GROUPS. */
size_t clnorm_row_groups(size_t want, size_t most, const clnorm_tuning *t);
clnorm_status clnorm_read_tuning(clnorm_ctx *ctx, clnorm_tuning *t);
clnorm_strategy clnorm_policy_strategy(const clnorm_device_profile *p, const clnorm_desc *d,
                                       const clnorm_tuning *t);
/* What the programs are built with: vector width, subgroup segment and registers. Returns
 * CLNORM_UNSUPPORTED (with msg) when the strategy cannot run this description. */
clnorm_status clnorm_policy_build(const clnorm_device_profile *p, const clnorm_desc *d,
                                  clnorm_strategy s, const clnorm_tuning *t, clnorm_geometry *g,
                                  char *msg, size_t msg_size);
/* Build options of the programs of one direction of a plan. */
void clnorm_policy_options(const clnorm_device_profile *p, const clnorm_desc *d,
                           const clnorm_geometry *g, const clnorm_tuning *t,
                           clnorm_direction dir, char *buf, size_t size);
/* Work-group sizes and counts, given the most work-items per group the forward and backward
 * kernels allow (kmax[dir], 0: no backward). */
clnorm_status clnorm_policy_geometry(const clnorm_device_profile *p, const clnorm_desc *d,
                                     clnorm_strategy s, const clnorm_tuning *t,
                                     const size_t kmax[2], clnorm_geometry *g, char *msg,
                                     size_t msg_size);
/* The NDRange of a step's geometry. */
void clnorm_policy_ndrange(const clnorm_geometry *g, const clnorm_desc *d, int geom,
                           cl_uint *dims, size_t global[2], size_t local[2]);

/* ---- plans and launching (plan.c, launch.c) ---- */
/* Builds the plan's programs, creates its first instances and warms them up. */
clnorm_status clnorm_prepare_plan(clnorm_plan *plan, const clnorm_tuning *t);
/* Enqueues a direction's chain on an instance of the plan's pool. flags: the CLNORM_KF_* bits
 * of the execution; warm: a warm-up (rows 0, flags 0, every step). */
clnorm_status clnorm_launch(clnorm_plan *plan, clnorm_direction dir, const clnorm_call_args *a,
                            unsigned flags, int warm, cl_command_queue queue, cl_uint nwait,
                            const cl_event *wait, cl_event *event);
/* The problem one launch covers: the description (for the op's scalars), the view the kernels
 * see and the geometry. clnorm_launch's is the plan's; the latency path launches parts of a
 * plan's rows, each a smaller problem of the same plan (latency.c). */
typedef struct {
    const clnorm_desc *desc, *view;
    const clnorm_geometry *geo;
    /* Parts of one execution, which share one instance's scratch (all 0/NULL: the whole):
     * the chain's steps to consider (bit k: step k; 0: every step), the blocks of the steps
     * that take KA_FIRST_BLOCK ([block0, block0 + blocks); blocks 0: all; op.h,
     * clnorm_block_dim),
     * and the scratch buffers to bind instead of the instance's own. */
    unsigned steps;
    size_t block0, blocks;
    const cl_mem *scratch;
} clnorm_span;
/* An instance of the plan's pool for one direction, taken for the caller's use (its scratch,
 * shared by the parts of a latency call), and given back. */
clnorm_status clnorm_acquire_instance(clnorm_plan *plan, clnorm_direction dir,
                                      clnorm_instance **out);
void clnorm_release_instance(clnorm_plan *plan, clnorm_instance *in);
/* Waits on the host for the instance's last chain (one of the main device: the latency path
 * never makes one device wait for the other's event) and forgets it. */
clnorm_status clnorm_instance_wait(clnorm_ctx *ctx, clnorm_instance *in);
/* clnorm_launch for `part` (NULL: the plan's whole problem). When part->steps leaves no step
 * to run, nothing is enqueued and *event is NULL. */
clnorm_status clnorm_launch_span(clnorm_plan *plan, const clnorm_span *part,
                                 clnorm_direction dir, const clnorm_call_args *a, unsigned flags,
                                 int warm, cl_command_queue queue, cl_uint nwait,
                                 const cl_event *wait, cl_event *event);
void clnorm_release_instances(clnorm_plan *plan);
/* The steps of the plan's chain (bit k: step k) that an execution of the whole problem with
 * these CLNORM_KF_* flags runs. */
unsigned clnorm_launch_steps(const clnorm_plan *plan, clnorm_direction dir, unsigned flags);

/* What every layer-1 call checks first: a device context, a device plan, a consistent wait
 * list, and a queue (NULL: the context's, written back) of the context's cl_context. fn names
 * the public function in the message. */
clnorm_status clnorm_check_launch(clnorm_plan *plan, const char *fn, cl_command_queue *queue,
                                  cl_uint nwait, const cl_event *wait);

/* ---- execution (execute.c) ---- */
/* clnorm_execute without clearing the error message or printing a verbose line (the host
 * path's inner call). */
/* clnorm_execute_quiet: *inline_ran (may be NULL) says whether the latency path ran it;
 * stats_checked: the caller has looked at the saved statistics (a host call, execute.c
 * recompute_saved), so GroupNorm's backward need not check them again (CLNORM_KF_REFINED). */
clnorm_status clnorm_execute_quiet(clnorm_plan *plan, clnorm_direction dir,
                                   const clnorm_arg *args, size_t nargs, cl_command_queue queue,
                                   cl_uint nwait, const cl_event *wait, cl_event *event,
                                   int *inline_ran, int stats_checked);
/* Waits for event, releases it either way. */
clnorm_status clnorm_wait_release(clnorm_ctx *ctx, cl_event event);

/* ---- the latency path (latency.c) ---- */
/* x of at most this many bytes makes a latency plan, unless CLNORM_LATENCY_BYTES says
 * otherwise: where one thread in the calling thread beat PoCL's pthread device on the CI
 * machine, cold buffers (bench/RESULTS.md, "Small problems"). */
#define CLNORM_LATENCY_DEFAULT_BYTES ((size_t)1 << 20)
/* x of at most this many bytes makes a plan's host-pointer calls run the op's host loop (no
 * OpenCL command), forward and backward, unless CLNORM_HOST_BYTES and
 * CLNORM_HOST_BACKWARD_BYTES say otherwise (CLNORM_HOST_BYTES=0: never): up to where the loop,
 * on as many threads as the device has, beat the host layer's device path on the CI machine
 * (bench/RESULTS.md, "The host loop on the device's threads"). The backward's default is the
 * row family's; an op may set its own per description (clnorm_op.host_bytes: GroupNorm's, and
 * the row family's forward with precomputed statistics). */
#define CLNORM_HOST_DEFAULT_BYTES ((size_t)16 << 20)
#define CLNORM_HOST_BACKWARD_DEFAULT_BYTES ((size_t)1 << 20)
/* PoCL's in-thread device (`basic`)? */
int clnorm_is_inline_device(cl_device_id device);
/* The in-thread device a context on `main` takes in too, or NULL: none in the platform, main
 * not a CPU device, or CLNORM_LATENCY=0. */
cl_device_id clnorm_latency_device(cl_platform_id platform, cl_device_id main);
/* Does a description's x fit in the threshold? */
int clnorm_latency_fits(const clnorm_desc *d, size_t threshold);
/* *fits: x fits in the threshold of environment variable `name` (def when unset; 0 means
 * nothing fits); *set (when not NULL): the variable was set. CLNORM_INVALID_ARGUMENT for a
 * bad value. */
clnorm_status clnorm_fits_env(clnorm_ctx *ctx, const clnorm_desc *d, const char *name,
                              size_t def, int *fits, int *set);
/* Is queue one of the in-thread device's (ctx->inline_queue or a part queue)? */
int clnorm_is_inline_queue(clnorm_ctx *ctx, cl_command_queue queue);
/* Decides plan->inline_parts (and the part layout) for a prepared latency plan. */
void clnorm_latency_plan_parts(clnorm_plan *plan);
/* A latency call's rows are cut into parts only when each holds at least this many bytes of
 * x: below it, handing a part to a worker costs more than the part's work (bench/RESULTS.md,
 * "The latency path's forward in parts on the host loop's threads"). */
#define CLNORM_LATENCY_PART_MIN_BYTES ((size_t)64 << 10)
/* ... and into at most this many parts, whatever CLNORM_HOST_THREADS says. */
#define CLNORM_LATENCY_MAX_PARTS 64u
/* Runs a validated call on the in-thread device when the policy takes it (*taken = 1); else
 * does nothing and the caller launches on `queue`. */
clnorm_status clnorm_latency_launch(clnorm_plan *plan, clnorm_direction dir,
                                    const clnorm_call_args *a, unsigned flags,
                                    cl_command_queue queue, cl_uint nwait, const cl_event *wait,
                                    cl_event *event, int *taken);

/* ---- the host loop's threads (host_threads.c) ---- */
/* Idle workers spin this long before they sleep, unless CLNORM_HOST_SPIN_US says otherwise. */
#define CLNORM_HOST_SPIN_DEFAULT_US 100u
/* Reads CLNORM_HOST_THREADS and CLNORM_HOST_SPIN_US into a context being created. */
void clnorm_host_threads_init(clnorm_ctx *ctx);
/* CLNORM_INVALID_ARGUMENT, with the message, when either variable was bad (plan creation). */
clnorm_status clnorm_host_threads_check(clnorm_ctx *ctx);
/* The context's pool, started at first use; NULL when one thread runs the host loop. */
clnorm_pool *clnorm_host_pool(clnorm_ctx *ctx);
/* "host loop (N threads)" or "host loop (calling thread)", for CLNORM_VERBOSE. */
const char *clnorm_host_loop_name(const clnorm_ctx *ctx);

/* ---- verbose (verbose.c) ---- */
/* The properties of the queues the context makes for its kernels: profiling under
 * CLNORM_VERBOSE=2, for the kernel lines' device times. */
static inline cl_command_queue_properties clnorm_queue_props(const clnorm_ctx *ctx)
{
    return ctx->verbose >= 2 ? CL_QUEUE_PROFILING_ENABLE : 0;
}
double clnorm_now_ms(void);
void clnorm_verbose_plan(const clnorm_plan *plan, double ms, int built);
/* Where an execution ran, for its exec line: `other` when the latency path did not take it
 * (inline_parts 0), else the in-thread device, with the number of parts it was cut into. */
const char *clnorm_ran_on(const clnorm_ctx *ctx, int inline_parts, const char *other, char *buf,
                          size_t size);
/* device: where the kernels ran (the context's device or its latency device). */
void clnorm_verbose_exec(const clnorm_plan *plan, clnorm_direction dir, const char *api,
                         const char *device, double ms);
/* CLNORM_VERBOSE=2: one kernel of an execution, its NDRange and its device time from the
 * event's profiling information (us < 0: not available, a queue without profiling). */
void clnorm_verbose_kernel(const clnorm_plan *plan, clnorm_direction dir, const char *kernel,
                           cl_uint dims, const size_t global[2], const size_t local[2],
                           const char *device, double us);

#endif
