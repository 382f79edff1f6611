/*
 * clnorm.h - layer normalization on any OpenCL device.
 *
 * The one public header of clnorm. Three API layers, each a thin skin over the one below:
 *   1. device buffers, asynchronous: cl_mem + element offsets, a queue, a wait list, an event
 *      out (the CLBlast convention). Nothing is read back, nothing blocks.
 *   2. host pointers, synchronous: copies in, runs layer 1, copies out (or, on CPU devices,
 *      works on the arrays themselves, small problems as a host loop in the calling thread).
 *   3. the CPU reference clnorm_ref_*: no OpenCL at all, double accumulation; the test oracle
 *      and the fallback of a context that found no OpenCL device.
 *
 * A problem is described once (clnorm_desc), baked into a plan on a context (validated,
 * strategy chosen, program built or taken from the context's cache), then executed as often
 * as wanted. Every function returns a clnorm_status; clnorm_last_error() names the bad argument
 * or holds the kernel build log. The library never prints, aborts or exits.
 */
#ifndef CLNORM_H
#define CLNORM_H

#include <stddef.h>

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#ifdef __APPLE__
#include <OpenCL/cl.h>
#else
#include <CL/cl.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define CLNORM_VERSION_MAJOR 0
#define CLNORM_VERSION_MINOR 2
#define CLNORM_VERSION_PATCH 0
#define CLNORM_VERSION_NUMBER \
    (CLNORM_VERSION_MAJOR * 10000 + CLNORM_VERSION_MINOR * 100 + CLNORM_VERSION_PATCH)

#if defined(_WIN32) && defined(CLNORM_BUILDING_SHARED)
#define CLNORM_API __declspec(dllexport)
#elif defined(__GNUC__) || defined(__clang__)
#define CLNORM_API __attribute__((visibility("default")))
#else
#define CLNORM_API
#endif

/* ---------------------------------------------------------------------------------------------
 * Status codes. 0 is success; OpenCL's own negative codes (core -1 .. -72 and the extension
 * codes of -1000 .. -1999, e.g. CL_PLATFORM_NOT_FOUND_KHR = -1001) are passed through as they
 * came; the library's own codes sit in a block of their own at -4000 and below, clear of every
 * code Khronos or a vendor has registered. Values are appended, never renumbered.
 * ------------------------------------------------------------------------------------------- */
typedef int clnorm_status;

enum {
    CLNORM_OK = 0,
    CLNORM_INVALID_ARGUMENT = -4000, /* NULL pointer, zero size, bad stride, bad eps, ... */
    CLNORM_BUFFER_TOO_SMALL = -4001, /* a cl_mem smaller than offset + extent */
    CLNORM_UNSUPPORTED = -4002,      /* dtype or feature the device cannot do */
    CLNORM_OUT_OF_MEMORY = -4003,    /* host allocation failed */
    CLNORM_BUILD_FAILURE = -4004,    /* kernel build failed; log in clnorm_last_error() */
    CLNORM_NO_DEVICE = -4005,        /* no OpenCL device matches, or a cl_mem call on a
                                        context that runs on the CPU reference */
    CLNORM_OPENCL_ERROR = -4006      /* an OpenCL failure without a code of its own */
};

/* A short fixed English phrase for any status, OpenCL's codes included. Never NULL. */
CLNORM_API const char *clnorm_status_string(clnorm_status status);

/* ---------------------------------------------------------------------------------------------
 * Operations. Each is described once inside the library (its op table entry: argument slots,
 * checks, kernels per strategy and direction, CPU reference); clnorm_op_query() and
 * clnorm_slot_query() read that description, so callers can iterate the operations too.
 * ------------------------------------------------------------------------------------------- */
typedef enum {
    CLNORM_LAYER = 0,     /* y = (x - mean) / sqrt(var + eps) * gamma + beta, biased variance */
    CLNORM_RMS = 1,       /* y = x / sqrt(mean(x^2) + eps) * gamma (+ beta) */
    CLNORM_ADD_LAYER = 2, /* s = x + residual, y = LayerNorm(s); s optionally written */
    CLNORM_ADD_RMS = 3,   /* s = x + residual, y = RMSNorm(s); s optionally written */
    CLNORM_GROUP = 4      /* GroupNorm (torch.nn.functional.group_norm): x is (N, C, *spatial)
                             or (N, *spatial, C); statistics per sample and group of C / G
                             channels, gamma and beta per channel. InstanceNorm is G = C,
                             LayerNorm over (C, *spatial) is G = 1. Optional fused SiLU. */
} clnorm_kind;

/* Memory layout of a CLNORM_GROUP tensor. */
typedef enum {
    CLNORM_NCHW = 0, /* channels first, (N, C, *spatial): a group is one contiguous block */
    CLNORM_NHWC = 1  /* channels last, (N, *spatial, C): a group is C / G channels strided by C
                        (diffusion UNets' fast path, Apex's group_norm_nhwc) */
} clnorm_layout;

/* The number of operations: kinds are 0 .. clnorm_op_count() - 1. */
CLNORM_API size_t clnorm_op_count(void);

/* Storage of the row tensors (x, y, dy, dx; residual and sum unless CLNORM_RESIDUAL_F32).
 * gamma, beta, mean, rstd, dgamma and dbeta ("parameters") are float32 for F32, F16 and BF16,
 * and float64 for F64. F16 and BF16 are storage formats: loaded and stored through core
 * OpenCL 1.2 (no cl_khr_fp16 needed), computed in float32, stored rounded to nearest even.
 * F64 computes in double and needs cl_khr_fp64 on the device (CLNORM_UNSUPPORTED otherwise). */
typedef enum {
    CLNORM_F32 = 0,
    CLNORM_F16 = 1,
    CLNORM_BF16 = 2,
    CLNORM_F64 = 3
} clnorm_dtype;

/* Flags of clnorm_desc.flags. The default (0) is the full affine transform, no statistics. */
enum {
    CLNORM_NO_GAMMA = 1u << 0,     /* gamma = 1: no GAMMA argument */
    CLNORM_NO_BETA = 1u << 1,      /* beta = 0: no BETA argument */
    CLNORM_SAVE_STATS = 1u << 2,   /* the forward writes MEAN (LayerNorm kinds only) and RSTD =
                                      1/sqrt(var+eps) per row */
    CLNORM_WITH_BACKWARD = 1u << 3, /* the plan also prepares the backward pass (its programs are
                                       built at plan creation, like the forward's) */
    CLNORM_RESIDUAL_F32 = 1u << 4, /* ADD kinds with F16/BF16 storage: residual and sum are
                                      float32 (FlashAttention's residual_in_fp32) */
    CLNORM_SILU = 1u << 5,         /* CLNORM_GROUP: y = silu(z) = z * sigmoid(z) of the
                                      normalized z = xhat * gamma + beta (a diffusion UNet's
                                      GroupNorm + SiLU); the backward goes through it */
    /* Per-sample modulation (conditional LayerNorm, FiLM, DiT's adaLN; for CLNORM_GROUP a
     * diffusion UNet's scale-shift norm): the rows are desc.samples samples of rows / samples
     * consecutive rows each, and sample b's rows are modulated as y = z * (1 + scale[b]) +
     * shift[b], z = xhat * gamma + beta, with scale and shift (samples, cols), float32 (F64:
     * float64), rows desc.mod_stride apart. CLNORM_GROUP: the rows are the batch entries,
     * scale and shift one value per channel of a sample in either layout, and CLNORM_SILU
     * takes the modulated value: y = silu(z * (1 + scale[b, c]) + shift[b, c]). */
    CLNORM_SCALE = 1u << 6,        /* the SCALE argument is given (1 + scale multiplies) */
    CLNORM_SHIFT = 1u << 7,        /* the SHIFT argument is given (added last) */
    /* Precomputed statistics (oneDNN's use_global_stats): MEAN (LayerNorm kinds and
     * CLNORM_GROUP) and RSTD are inputs of the forward, not computed from x: y = (x - mean) *
     * rstd * gamma + beta (CLNORM_GROUP: per sample and group, mean and rstd N x G, then the
     * modulation and the SiLU; eval-mode InstanceNorm is G = C with each channel's running
     * statistics repeated over N). The backward treats them as constants, as oneDNN does:
     * dx = rstd * g, with no mean(g) and mean(g * xhat) terms (g = dy * gamma, through the
     * modulation and the SiLU). Excludes CLNORM_SAVE_STATS. */
    CLNORM_USE_GLOBAL_STATS = 1u << 8
};

/* Output mask of clnorm_backward: which gradients to compute (PyTorch's output_mask). */
enum {
    CLNORM_GRAD_X = 1u << 0,     /* dx */
    CLNORM_GRAD_GAMMA = 1u << 1, /* dgamma = sum over rows of dy * xhat */
    CLNORM_GRAD_BETA = 1u << 2   /* dbeta = sum over rows of dy */
};

/*
 * A problem. The row kinds (LAYER, RMS, ADD_*) normalize `rows` rows of `cols` elements; the
 * row tensors (x, y, residual, sum and their gradients) are strided by rows, the parameters
 * (gamma, beta, their gradients) hold `cols` elements and the statistics (mean, rstd) `rows`.
 * CLNORM_GROUP reads them as PyTorch's group_norm does: `rows` is the batch N, `cols` the
 * channels C, `spatial` the product of the spatial dims (1 when there are none) and `groups`
 * G, which divides C. A sample of x holds cols * spatial elements in `layout`; x_stride and
 * y_stride are the elements between consecutive samples (0: cols * spatial); gamma and beta
 * hold C, mean and rstd N x G (sample-major). clnorm_slot_query() gives the exact extent of
 * every argument for a description.
 */
typedef struct {
    clnorm_kind kind;
    clnorm_dtype dtype;
    size_t rows;     /* product of the leading dims; 0 is a valid empty batch (a no-op) */
    size_t cols;     /* product of the normalized trailing dims, >= 1 */
    size_t x_stride; /* elements between the starts of consecutive rows of x (and dx); 0 means
                        cols */
    size_t y_stride; /* the same for y (and dy); in place (y is x) needs equal strides */
    double eps;      /* > 0 and finite, added to the variance inside the square root; used
                        as float for F32/F16/BF16 (it must not round to 0 there), as double
                        for F64 */
    unsigned flags;  /* CLNORM_NO_GAMMA | CLNORM_NO_BETA | CLNORM_SAVE_STATS |
                        CLNORM_WITH_BACKWARD | CLNORM_RESIDUAL_F32 | CLNORM_SILU |
                        CLNORM_SCALE | CLNORM_SHIFT | CLNORM_USE_GLOBAL_STATS */
    size_t residual_stride; /* ADD kinds: the same for residual; 0 means cols */
    size_t sum_stride;      /* ADD kinds: the same for sum (and dsum); 0 means cols */
    /* CLNORM_GROUP only (the other kinds need groups and spatial 0 or 1, layout NCHW): */
    size_t groups;          /* G >= 1, dividing cols */
    size_t spatial;         /* elements per channel of a sample (H * W, D * H * W, 1 for
                               (N, C)); 0 means 1 */
    clnorm_layout layout;   /* CLNORM_NCHW or CLNORM_NHWC */
    /* With CLNORM_SCALE / CLNORM_SHIFT only (without them samples must be 0 or 1): */
    size_t samples;    /* B >= 1, dividing rows: sample b is rows [b * T, (b + 1) * T), T =
                          rows / B (x of shape (B, T..., C); CLNORM_GROUP: batch entries,
                          usually B = N, one modulation row each); 0 means 1, except with rows 0,
                          where it is an empty batch of no samples (B > 0 with rows 0 is T =
                          0: the backward's dscale and dshift are then B rows of zeros) */
    size_t mod_stride; /* elements between the starts of consecutive samples of scale, shift,
                          dscale and dshift (>= cols; 0 means cols; read only with
                          CLNORM_SCALE or CLNORM_SHIFT): the chunks of one (B, 6C)
                          adaLN projection are (B, C) views with mod_stride 6C */
} clnorm_desc;

/* Fills a description with the defaults: F32, dense rows, eps = 1e-5, affine, no stats, no
 * modulation (one sample); for CLNORM_GROUP one group, spatial 1, NCHW (set groups and spatial
 * after). */
CLNORM_API void clnorm_desc_init(clnorm_desc *desc, clnorm_kind kind, size_t rows, size_t cols);

/* Checks a description alone (no device): CLNORM_OK or CLNORM_INVALID_ARGUMENT. When msg is
 * not NULL, a sentence naming the bad field is written there (at most msg_size bytes). */
CLNORM_API clnorm_status clnorm_desc_check(const clnorm_desc *desc, char *msg, size_t msg_size);

/* ---------------------------------------------------------------------------------------------
 * Argument slots: every tensor an operation reads or writes is named by a slot, in the spirit
 * of oneDNN's execution arguments (DNNL_ARG_SRC, ...). Values are appended, never renumbered.
 * ------------------------------------------------------------------------------------------- */
typedef enum {
    CLNORM_ARG_X = 0,        /* input rows */
    CLNORM_ARG_Y = 1,        /* forward output rows */
    CLNORM_ARG_GAMMA = 2,    /* scale, cols (GROUP: per channel) */
    CLNORM_ARG_BETA = 3,     /* shift, cols (backward: read only for dscale) */
    CLNORM_ARG_MEAN = 4,     /* per-row (GROUP: per sample and group) mean: written by the
                                forward, read by the backward (CLNORM_USE_GLOBAL_STATS: read
                                by both) */
    CLNORM_ARG_RSTD = 5,     /* per-row 1/sqrt(var + eps): likewise */
    CLNORM_ARG_RESIDUAL = 6, /* ADD kinds: the residual added to x */
    CLNORM_ARG_SUM = 7,      /* ADD kinds: s = x + residual, written when given (may be the
                                residual itself: in place, as vLLM's fused_add_rms_norm) */
    CLNORM_ARG_DY = 8,       /* backward: gradient of y */
    CLNORM_ARG_DX = 9,       /* backward: gradient of x (for ADD kinds also of residual) */
    CLNORM_ARG_DGAMMA = 10,  /* backward: gradient of gamma */
    CLNORM_ARG_DBETA = 11,   /* backward: gradient of beta */
    CLNORM_ARG_DSUM = 12,    /* ADD kinds, backward: gradient of the sum output from its other
                                uses downstream (added to dx); optional */
    CLNORM_ARG_SCALE = 13,   /* CLNORM_SCALE: per-sample scale, (samples, cols); read by the
                                forward and the backward */
    CLNORM_ARG_SHIFT = 14,   /* CLNORM_SHIFT: per-sample shift, (samples, cols); forward
                                (GROUP with CLNORM_SILU: the backward's too) */
    CLNORM_ARG_DSCALE = 15,  /* backward: dscale[b] = sum over sample b's rows of dy * z,
                                z = xhat * gamma + beta (so the backward then needs beta);
                                GROUP: per channel, dy through the SiLU */
    CLNORM_ARG_DSHIFT = 16   /* backward: dshift[b] = sum over sample b's rows of dy */
} clnorm_arg_slot;

/* One more than the largest slot value. */
#define CLNORM_ARG_SLOT_COUNT 17

/* "x", "y", "gamma", ... (the names the error messages use), or "?" */
CLNORM_API const char *clnorm_arg_name(clnorm_arg_slot slot);

typedef enum {
    CLNORM_FORWARD = 0,
    CLNORM_BACKWARD = 1 /* the plan must have CLNORM_WITH_BACKWARD */
} clnorm_direction;

typedef enum {
    CLNORM_SLOT_UNUSED = 0,   /* must not be given */
    CLNORM_SLOT_REQUIRED = 1, /* must be given */
    CLNORM_SLOT_OPTIONAL = 2  /* may be given: an optional output is computed exactly when
                                 given (backward: dx, dgamma, dbeta, forward: sum), an optional
                                 input changes the computation (backward: mean/rstd saved by
                                 the forward, else recomputed from x; dsum) */
} clnorm_slot_use;

/* How one slot is used and laid out for a description and direction. */
typedef struct {
    clnorm_slot_use use;
    int is_output;      /* written by the call */
    clnorm_dtype dtype; /* element type: the storage type, the residual's, or the parameter
                           type (F32, or F64 for F64 problems) */
    size_t rows, cols;  /* rows of cols elements (vectors: rows = 1) */
    size_t stride;      /* elements between the starts of consecutive rows */
    size_t extent;      /* elements from the argument's offset: (rows - 1) * stride + cols,
                           0 when rows == 0 */
} clnorm_slot_info;

/* The use and layout of `slot` for a valid description in a direction. */
CLNORM_API clnorm_status clnorm_slot_query(const clnorm_desc *desc, clnorm_direction dir,
                                           clnorm_arg_slot slot, clnorm_slot_info *info);

/* What an operation is, as its op table entry says. */
typedef struct {
    const char *name;        /* "layer_norm", "rms_norm", "add_layer_norm", "add_rms_norm",
                                "group_norm" */
    const char *summary;     /* one line */
    unsigned forward_slots;  /* (1u << slot) for every slot the forward may take */
    unsigned backward_slots; /* the same for the backward */
    int has_mean;            /* the statistics include a mean (LayerNorm kinds) */
    int has_residual;        /* adds a residual first (the ADD kinds) */
    clnorm_kind base_kind;   /* the kind it normalizes like: itself, or for an ADD kind the
                                plain kind (CLNORM_ADD_LAYER: CLNORM_LAYER) */
    int has_host_loop;       /* it has a host loop for small host-pointer calls on CPU
                                devices (clnorm_plan_uses_host_loop) */
} clnorm_op_info;

/* The op table entry of `kind`; CLNORM_INVALID_ARGUMENT for a kind that is not one. */
CLNORM_API clnorm_status clnorm_op_query(clnorm_kind kind, clnorm_op_info *info);

/* A device argument: a cl_mem and an offset in elements of the slot's own type. */
typedef struct {
    clnorm_arg_slot slot;
    cl_mem mem;
    size_t offset;
} clnorm_arg;

/* A host argument: a pointer to the slot's first element (inputs are only read). */
typedef struct {
    clnorm_arg_slot slot;
    void *ptr;
} clnorm_host_arg;

/* ---------------------------------------------------------------------------------------------
 * Context
 * ------------------------------------------------------------------------------------------- */
typedef struct clnorm_ctx clnorm_ctx;

typedef enum {
    CLNORM_BACKEND_OPENCL = 0,   /* runs on an OpenCL device */
    CLNORM_BACKEND_REFERENCE = 1 /* no OpenCL device was found: host calls run the reference */
} clnorm_backend;

/* Creates a context that owns its cl_context and in-order queue, on the device named by
 * `device_spec`, or by the environment variable CLNORM_DEVICE when device_spec is NULL:
 *   "cpu" / "gpu" / "accelerator"  the first device of that type,
 *   "P:D"                          platform P, device D (indices as `clnorm devices` shows),
 *   anything else                  the first device whose name, vendor or platform name
 *                                  contains it (case-insensitive).
 * With neither, the first GPU, else the first device of any type. Where a rule other than
 * "P:D" lands on an in-thread CPU device (PoCL's `basic`) and the same platform has a
 * multi-threaded CPU device the rule also matches, that one is taken; on a CPU device the
 * platform's in-thread device then joins the context for small plans (README, "Small
 * problems on CPU devices"; CLNORM_LATENCY=0: not). When no OpenCL platform or
 * device exists and no device was asked for, the context runs on the CPU reference
 * (clnorm_backend() says so); when one was asked for and none matches, CLNORM_NO_DEVICE.
 * On failure *ctx is set to NULL. */
CLNORM_API clnorm_status clnorm_create(const char *device_spec, clnorm_ctx **ctx);

/* Adopts the application's queue (and its context and device). clnorm holds one retain on
 * each and releases only that in clnorm_free(). Kernels run on this queue by default. */
CLNORM_API clnorm_status clnorm_create_from_queue(cl_command_queue queue, clnorm_ctx **ctx);

/* Releases everything the context holds, its cached programs included. NULL is allowed.
 * Plans made on the context must be freed first. */
CLNORM_API void clnorm_free(clnorm_ctx *ctx);

CLNORM_API clnorm_backend clnorm_get_backend(const clnorm_ctx *ctx);
/* "platform / device" as a human reads it, or "CPU reference". Valid while ctx lives. */
CLNORM_API const char *clnorm_device_name(const clnorm_ctx *ctx);
/* The context's queue and cl_context (NULL on the reference backend). Not retained. */
CLNORM_API cl_command_queue clnorm_get_queue(const clnorm_ctx *ctx);
CLNORM_API cl_context clnorm_get_cl_context(const clnorm_ctx *ctx);
/* The sentence describing the calling thread's last failure on this context ("" when none):
 * each thread has its own, so threads sharing a context do not see each other's errors.
 * Valid until the calling thread's next call on the context. */
CLNORM_API const char *clnorm_last_error(const clnorm_ctx *ctx);
/* Number of OpenCL programs this context has built so far (cache misses). */
CLNORM_API size_t clnorm_program_builds(const clnorm_ctx *ctx);

/* One OpenCL device as `clnorm devices` lists it. */
typedef struct {
    unsigned platform_index, device_index; /* the "P:D" of CLNORM_DEVICE */
    char platform_name[128];
    char device_name[128];
    cl_device_type type;
    cl_ulong global_mem_bytes;
    cl_uint compute_units;
    int has_fp16, has_fp64;
    int is_default; /* the device clnorm_create(NULL, ...) would choose now */
} clnorm_device_info;

/* Lists the OpenCL devices of every platform. Writes at most `capacity` entries to `infos`
 * (which may be NULL when capacity is 0) and the total number to *count. No platform at all
 * is not an error: *count is 0. */
CLNORM_API clnorm_status clnorm_list_devices(clnorm_device_info *infos, size_t capacity,
                                             size_t *count);

/* ---------------------------------------------------------------------------------------------
 * Plans
 *
 * Thread safety (the oneDNN primitive contract): a plan may be executed from any number of
 * threads at once, on the same queue or on different queues of its context. Each execution
 * takes a set of kernel objects and scratch buffers of its own from the plan's pool (growing
 * it when all are busy), and an execution whose scratch was last used on another queue waits
 * for that use on the device. Creating and freeing plans is thread-safe per context too; a
 * plan must not be freed while another thread executes it.
 * ------------------------------------------------------------------------------------------- */
typedef struct clnorm_plan clnorm_plan;

typedef enum {
    CLNORM_STRATEGY_AUTO = 0,
    CLNORM_STRATEGY_ROW = 1,       /* one work-item per row, vector loads: CPU devices */
    CLNORM_STRATEGY_WORKGROUP = 2, /* one work-group per row, local-memory tree reduction */
    CLNORM_STRATEGY_SPLIT = 3,     /* several work-groups per row, Chan-merged statistics */
    CLNORM_STRATEGY_REFERENCE = 4, /* the CPU reference (context without an OpenCL device) */
    CLNORM_STRATEGY_SUBGROUP = 5   /* 32 (AMD: 64) to 256 work-items per row, the row held
                                      in registers (read from memory once): GPUs, rows up to
                                      256 x 16 vectors */
} clnorm_strategy;

/* Validates the description, chooses the strategy (CLNORM_STRATEGY in the environment forces
 * one: row, workgroup, split, subgroup) and launch geometry, builds the program or takes it from the
 * cache, and allocates the plan's scratch. Executing a plan never compiles. On failure *plan
 * is set to NULL. */
CLNORM_API clnorm_status clnorm_plan_create(clnorm_ctx *ctx, const clnorm_desc *desc,
                                            clnorm_plan **plan);
/* As clnorm_plan_create but with the strategy given (AUTO lets clnorm choose). */
CLNORM_API clnorm_status clnorm_plan_create_with(clnorm_ctx *ctx, const clnorm_desc *desc,
                                                 clnorm_strategy strategy, clnorm_plan **plan);
/* NULL is allowed. */
CLNORM_API void clnorm_plan_free(clnorm_plan *plan);
CLNORM_API clnorm_strategy clnorm_plan_strategy(const clnorm_plan *plan);
CLNORM_API const clnorm_desc *clnorm_plan_desc(const clnorm_plan *plan);
/* The device that runs the plan's executions on the context's own queue, as "clnorm devices"
 * names devices: the context's device, or for a latency plan its in-thread device (README,
 * "Small problems on CPU devices": x of at most CLNORM_LATENCY_BYTES on a CPU device whose
 * platform lists an in-thread device, such as PoCL's `basic`). Valid while the plan lives. */
CLNORM_API const char *clnorm_plan_device_name(const clnorm_plan *plan);
/* 1 when the plan's host-pointer calls (layer 2) in direction dir run the operation's host
 * loop: C loops in the calling thread with the kernels' numerics, no OpenCL command (README,
 * "Small problems on CPU devices": the row operations, strategy auto, on a CPU device, x of
 * at most CLNORM_HOST_BYTES, and for the backward at most CLNORM_HOST_BACKWARD_BYTES); 0
 * when they go through the device. Layer 1 always uses the device. */
CLNORM_API int clnorm_plan_uses_host_loop(const clnorm_plan *plan, clnorm_direction dir);
/* "row", "workgroup", "split", "reference", "subgroup" (or "auto"). */
CLNORM_API const char *clnorm_strategy_name(clnorm_strategy strategy);

/* ---------------------------------------------------------------------------------------------
 * Layer 1: device buffers, asynchronous.
 *
 * clnorm_execute runs a plan in a direction over named arguments: each slot the operation
 * takes (clnorm_slot_query says which, and how many elements from the offset) given once,
 * in any order. A REQUIRED slot must be there, an UNUSED one must not; an OPTIONAL output is
 * computed exactly when given. An output may be the very same tensor as an input row tensor
 * (same cl_mem, offset, stride and type: in place, e.g. y = x, sum = residual, dx = dy); any
 * other overlap with an output in one cl_mem is rejected. Distinct cl_mem objects are taken
 * as distinct memory: sub-buffers of one buffer, or CL_MEM_USE_HOST_PTR buffers over
 * overlapping host memory, must not overlap an output (the caller knows; the Python package
 * hands overlapping arrays over as one buffer). Everything is validated before anything is
 * enqueued: a failed call writes nothing.
 * queue NULL means the context's queue; it must belong to the context's cl_context, as must
 * every event of the wait list (none NULL). The kernels wait for the wait list; the event,
 * when asked for, completes when every output is written. Nothing blocks, but for one
 * policy: a latency plan (clnorm_plan_device_name) executed on the context's own queue with
 * a complete wait list waits for the queue's earlier work, runs in the calling thread and
 * returns done, its event a complete user event (README, "Small problems on CPU devices").
 * ------------------------------------------------------------------------------------------- */
CLNORM_API clnorm_status clnorm_execute(clnorm_plan *plan, clnorm_direction dir,
                                        const clnorm_arg *args, size_t nargs,
                                        cl_command_queue queue, cl_uint num_wait_events,
                                        const cl_event *wait_events, cl_event *event);

/*
 * LayerNorm / RMSNorm in the 0.1 style: thin wrappers over clnorm_execute with positional
 * arguments (NULL: not given). gamma/beta must be NULL exactly when the plan says
 * NO_GAMMA/NO_BETA; mean/rstd are written when the plan has CLNORM_SAVE_STATS (mean must be
 * NULL for CLNORM_RMS, which has none). The ADD kinds take a residual, which has no argument
 * here: they run through clnorm_execute (these calls refuse them, naming the residual).
 */
CLNORM_API clnorm_status clnorm_forward(clnorm_plan *plan,
                                        cl_mem x, size_t x_offset,
                                        cl_mem y, size_t y_offset,
                                        cl_mem gamma, size_t gamma_offset,
                                        cl_mem beta, size_t beta_offset,
                                        cl_mem mean, size_t mean_offset,
                                        cl_mem rstd, size_t rstd_offset,
                                        cl_command_queue queue,
                                        cl_uint num_wait_events, const cl_event *wait_events,
                                        cl_event *event);

/*
 * Backward pass, from dy, x, the per-row statistics and gamma:
 *   LAYER: xhat = (x - mean) * rstd, g = dy * gamma,
 *          dx = rstd * (g - mean(g) - xhat * mean(g * xhat))
 *   RMS:   xhat = x * rstd (mean must be NULL), dx = rstd * (g - xhat * mean(g * xhat))
 *   dgamma = sum over rows of dy * xhat, dbeta = sum over rows of dy.
 *   ADD kinds: the same of s = x + residual, and dx (= dresidual) = dnorm + dsum.
 * `mask` (CLNORM_GRAD_*) chooses the outputs; an output not in the mask must be NULL, one in it
 * must be given. GRAD_GAMMA needs a plan with gamma, GRAD_BETA one with beta. gamma is the
 * forward's gamma (NULL exactly when the plan says CLNORM_NO_GAMMA). dy has the layout of y
 * (y_stride), dx that of x (x_stride); dx may be dy (in place, equal strides). The plan must
 * have been created with CLNORM_WITH_BACKWARD. Results are deterministic: the same inputs on
 * the same device and strategy give the same bits (fixed-order reductions, no atomics).
 * mean/rstd may come from clnorm_forward or from elsewhere (e.g. PyTorch's native_layer_norm).
 * Pass both as NULL (RMS: rstd NULL) to have them recomputed from x (one more read of x):
 * more accurate when rows have a large mean, since a mean saved as float32 is rounded by up
 * to |mean| * 2^-24 before x - mean is formed (0.03 at a mean of 1e6); the recomputation
 * keeps the forward's split of the mean into an element of the row plus a small rest. Given
 * float32 statistics of a row (a group) whose |mean| * rstd is above 16, the kernels correct
 * that mean by the mean of its deviations from it (one more pass over such a row or group).
 * Host calls (layer 2) recompute such statistics, and on a device with double any float32
 * ones whenever a parameter gradient asked for sums more than 4096 terms an element (rows,
 * or samples x positions): rstd's float32 rounding, one per row or group, gathers there past
 * 1e-5 (README, Numerics, "Saved statistics of host calls").
 * The wrapper over clnorm_execute(CLNORM_BACKWARD) for the kinds without a residual or a
 * modulation (those run through clnorm_execute, which also gives dscale and dshift).
 */
CLNORM_API clnorm_status clnorm_backward(clnorm_plan *plan, unsigned mask,
                                         cl_mem x, size_t x_offset,
                                         cl_mem dy, size_t dy_offset,
                                         cl_mem mean, size_t mean_offset,
                                         cl_mem rstd, size_t rstd_offset,
                                         cl_mem gamma, size_t gamma_offset,
                                         cl_mem dx, size_t dx_offset,
                                         cl_mem dgamma, size_t dgamma_offset,
                                         cl_mem dbeta, size_t dbeta_offset,
                                         cl_command_queue queue,
                                         cl_uint num_wait_events, const cl_event *wait_events,
                                         cl_event *event);

/* ---------------------------------------------------------------------------------------------
 * Layer 2: host pointers, synchronous. Same slots and rules as layer 1 (in place: the same
 * pointer with the same stride). Copies in, runs layer 1 on the context's queue, copies the
 * outputs' elements out (the gaps of strided outputs are left alone); on a CPU device the
 * buffers are the arrays themselves (CL_MEM_USE_HOST_PTR) and the outputs are mapped back.
 * A host-loop plan (clnorm_plan_uses_host_loop) instead waits for the queue's earlier work
 * and runs the host loop in the calling thread. On a reference-backend context this runs the
 * CPU reference.
 * ------------------------------------------------------------------------------------------- */
CLNORM_API clnorm_status clnorm_execute_host(clnorm_plan *plan, clnorm_direction dir,
                                             const clnorm_host_arg *args, size_t nargs);

CLNORM_API clnorm_status clnorm_forward_host(clnorm_plan *plan, const void *x, void *y,
                                             const void *gamma, const void *beta,
                                             void *mean, void *rstd);

CLNORM_API clnorm_status clnorm_backward_host(clnorm_plan *plan, unsigned mask, const void *x,
                                              const void *dy, const void *mean, const void *rstd,
                                              const void *gamma, void *dx, void *dgamma,
                                              void *dbeta);

/* ---------------------------------------------------------------------------------------------
 * Layer 3: the CPU reference. Double accumulation (two-pass mean, then variance), results
 * rounded once to the storage type. Single-threaded, no OpenCL. The same slot rules.
 * ------------------------------------------------------------------------------------------- */
CLNORM_API clnorm_status clnorm_ref_execute(const clnorm_desc *desc, clnorm_direction dir,
                                            const clnorm_host_arg *args, size_t nargs);

CLNORM_API clnorm_status clnorm_ref_forward(const clnorm_desc *desc, const void *x, void *y,
                                            const void *gamma, const void *beta,
                                            void *mean, void *rstd);
CLNORM_API clnorm_status clnorm_ref_backward(const clnorm_desc *desc, unsigned mask,
                                             const void *x, const void *dy, const void *mean,
                                             const void *rstd, const void *gamma, void *dx,
                                             void *dgamma, void *dbeta);

/* ---------------------------------------------------------------------------------------------
 * Storage conversions, exactly as the kernels do them: IEEE binary16 and bfloat16 bits to and
 * from float, rounding to nearest even, NaN kept NaN (quiet), overflow to Inf.
 * ------------------------------------------------------------------------------------------- */
CLNORM_API float clnorm_f16_to_f32(unsigned short bits);
CLNORM_API unsigned short clnorm_f32_to_f16(float value);
CLNORM_API float clnorm_bf16_to_f32(unsigned short bits);
CLNORM_API unsigned short clnorm_f32_to_bf16(float value);

#ifdef __cplusplus
}
#endif

#endif /* CLNORM_H */
