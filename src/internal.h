/* Internal declarations shared by the library's source files. Not installed. */
#ifndef CLNORM_INTERNAL_H
#define CLNORM_INTERNAL_H

#include "clnorm.h"

#include <stdarg.h>
#include <stddef.h>
#include <threads.h>

/* What the dispatcher needs to know about a device; read once at context creation. */
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
} clnorm_device_profile;

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
    char name[512];
    clnorm_device_profile profile;
    int verbose; /* CLNORM_VERBOSE, read at creation */

    mtx_t lock; /* guards the program cache and the error message */
    clnorm_program_entry *programs;
    size_t program_count, program_cap;
    size_t builds;

    char *error; /* last error message, heap, grows for build logs */
    size_t error_cap;
};

/* A forward plan: the validated description plus everything an execution needs. */
struct clnorm_plan {
    clnorm_ctx *ctx;
    clnorm_desc desc; /* strides filled in (never 0) */
    clnorm_strategy strategy;
    size_t local;     /* work-group size */
    size_t groups;    /* work-groups along the row axis (grid-stride beyond) */
    size_t chunks;    /* split: chunks per row */
    size_t chunk_len; /* split: columns per chunk */
    cl_kernel kernel_main;  /* row / workgroup / split apply */
    cl_kernel kernel_stats; /* split stats pass, else NULL */
    cl_mem scratch;         /* split partial statistics, else NULL */

    /* backward (CLNORM_WITH_BACKWARD): blocks of rows per work-group, then a column pass */
    size_t bwd_local;          /* work-group size of norm_bwd_rows */
    size_t bwd_groups;         /* row blocks (= work-groups), 0 when rows == 0 */
    size_t bwd_rows_per_group; /* rows per block */
    size_t bwd_param_local;    /* work-group size of norm_bwd_params */
    size_t bwd_chunks;         /* column chunks per row (1: rows are not cut) */
    size_t bwd_chunk_len;      /* columns per chunk */
    cl_kernel kernel_bwd_rows;
    cl_kernel kernel_bwd_params;
    cl_kernel kernel_bwd_sums; /* chunks > 1: per-chunk sums first, else NULL */
    cl_kernel kernel_bwd_stats;  /* statistics recomputed when mean/rstd are not given */
    size_t bwd_stats_groups;     /* work-groups of norm_bwd_stats */
    cl_mem bwd_stats;            /* rows x 3: K, m, rstd */
    cl_mem bwd_scratch;        /* bwd_groups x 2 x cols partial sums (dgamma, dbeta) */
    cl_mem bwd_sums;           /* chunks > 1: rows x chunks x 2 sums of g and g * xhat */
};

/* ---- errors (status.c) ---- */
/* Records a formatted message on ctx (which may be NULL) and returns status. */
clnorm_status clnorm_fail(clnorm_ctx *ctx, clnorm_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
void clnorm_clear_error(clnorm_ctx *ctx);

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

/* ---- descriptions (desc.c) ---- */
size_t clnorm_dtype_size(clnorm_dtype dtype);
/* Bytes of one parameter (gamma, beta, mean, rstd, dgamma, dbeta): 8 for F64, else 4. */
size_t clnorm_param_size(clnorm_dtype dtype);
const char *clnorm_dtype_name(clnorm_dtype dtype);
const char *clnorm_kind_name(clnorm_kind kind);
/* Extent in elements of a strided tensor: (rows - 1) * stride + cols; 0 when rows == 0.
 * Returns 0 on overflow too, which callers separate by checking rows first. */
int clnorm_extent(size_t rows, size_t cols, size_t stride, size_t *extent);

/* Presence rules of the operands (x, y required; gamma/beta exactly as the flags say; mean/rstd
 * as SAVE_STATS and the kind say; in place needs equal strides). Pointers or cl_mem alike. */
clnorm_status clnorm_check_operands(clnorm_ctx *ctx, const clnorm_desc *d, const void *x,
                                    const void *y, const void *gamma, const void *beta,
                                    const void *mean, const void *rstd);
/* The same for the backward pass: mask bits, which of dx/dgamma/dbeta are given, stats. */
clnorm_status clnorm_check_backward_operands(clnorm_ctx *ctx, const clnorm_desc *d,
                                             unsigned mask, const void *x, const void *dy,
                                             const void *mean, const void *rstd,
                                             const void *gamma, const void *dx,
                                             const void *dgamma, const void *dbeta);
int clnorm_ranges_overlap(size_t a, size_t na, size_t b, size_t nb);
/* The description with strides filled in. */
clnorm_desc clnorm_desc_normalized(const clnorm_desc *d);

/* ---- device choice (device_select.c) ---- */
/* Finds the device for a spec (NULL: default). Returns CLNORM_NO_DEVICE with a message in
 * msg when none matches; *found = 0 and CLNORM_OK when no platform exists and spec is NULL. */
clnorm_status clnorm_select_device(const char *spec, cl_platform_id *platform,
                                   cl_device_id *device, int *found, char *msg, size_t msg_size);
clnorm_status clnorm_read_profile(cl_device_id device, clnorm_device_profile *profile);

/* ---- programs (program.c) ---- */
/* Program for the given kernel files (joined in order) and build options, built on first
 * use and cached in ctx. The returned program belongs to the cache. */
clnorm_status clnorm_get_program(clnorm_ctx *ctx, const char *const *files, size_t nfiles,
                                 const char *options, cl_program *program);
void clnorm_release_programs(clnorm_ctx *ctx);

/* ---- dispatch (dispatch.c) ---- */
/* CLNORM_VECTOR_WIDTH when it is 2, 4, 8 or 16, else 0 (plan.c). */
size_t clnorm_env_vector_width(void);
clnorm_strategy clnorm_choose_strategy(const clnorm_ctx *ctx, const clnorm_desc *desc);
/* Fills geometry, builds/looks up the program, creates kernels and scratch. */
clnorm_status clnorm_prepare_plan(clnorm_plan *plan);
/* Enqueues the plan's kernels. Arguments are already validated. */
clnorm_status clnorm_enqueue_forward(clnorm_plan *plan, cl_mem x, size_t x_off, cl_mem y,
                                     size_t y_off, cl_mem gamma, size_t g_off, cl_mem beta,
                                     size_t b_off, cl_mem mean, size_t m_off, cl_mem rstd,
                                     size_t r_off, cl_command_queue queue, cl_uint nwait,
                                     const cl_event *wait, cl_event *event);

clnorm_status clnorm_enqueue_backward(clnorm_plan *plan, unsigned mask, cl_mem x, size_t x_off,
                                      cl_mem dy, size_t dy_off, cl_mem mean, size_t m_off,
                                      cl_mem rstd, size_t r_off, cl_mem gamma, size_t g_off,
                                      cl_mem dx, size_t dx_off, cl_mem dgamma, size_t dg_off,
                                      cl_mem dbeta, size_t db_off, cl_command_queue queue,
                                      cl_uint nwait, const cl_event *wait, cl_event *event);

/* ---- buffers (forward.c) ---- */
/* mem (NULL: nothing to check) must belong to the context and hold offset + count elements
 * of elem bytes. */
clnorm_status clnorm_check_mem(clnorm_ctx *ctx, cl_mem mem, const char *name, size_t offset,
                               size_t count, size_t elem);

/* What every layer-1 call checks first: a device context, a device plan, a consistent wait
 * list, and a queue (NULL: the context's, written back) of the context's cl_context. fn names
 * the public function in the message. */
clnorm_status clnorm_check_launch(clnorm_plan *plan, const char *fn, cl_command_queue *queue,
                                  cl_uint nwait, const cl_event *wait);

/* Waits for event, releases it either way (forward.c). */
clnorm_status clnorm_wait_release(clnorm_ctx *ctx, cl_event event);

/* ---- verbose (verbose.c) ---- */
double clnorm_now_ms(void);
void clnorm_verbose_plan(const clnorm_plan *plan, double ms, int built);
void clnorm_verbose_exec(const clnorm_plan *plan, const char *op, const char *api, double ms);

#endif
