/*
 * op.h - the op table: everything the library knows about one operation, in one place.
 *
 * An operation (a clnorm_kind) is one `clnorm_op`: its argument slots and how each is laid out
 * for a description, its checks, the kernels of each strategy and direction as chains of
 * steps whose arguments are data, its build options and kernel flags, and its CPU reference.
 * Dispatch (policy.c), validation (args.c), launching (launch.c) and the host path
 * (execute.c) read the table and never branch on the kind. README, "Adding an operation".
 */
#ifndef CLNORM_OP_H
#define CLNORM_OP_H

#include "../internal.h"

#define SLOT_BIT(s) (1u << (unsigned)(s))

/* ---- kernel chains ---- */

/* One argument of a kernel after its tensor slots (which come first, in ascending slot order,
 * each as pointer, element offset, row stride). */
typedef enum {
    KA_END = 0,
    KA_SCRATCH,        /* a scratch buffer of the execution (index in `arg`) */
    KA_ROWS,           /* ulong */
    KA_COLS,           /* ulong */
    KA_EPS,            /* A: eps rounded to the arithmetic type */
    KA_FLAGS,          /* uint: the execution's CLNORM_KF_* bits (0 in a warm-up) */
    KA_CHUNK_LEN,      /* ulong: columns per chunk of this step's geometry */
    KA_CHUNKS,         /* uint: chunks per row */
    KA_ROWS_PER_GROUP, /* ulong: backward row block */
    KA_GROUPS,         /* ulong: backward row blocks (partials to add) */
    KA_LOCAL_ACC,      /* __local A[local size] */
    KA_OP,             /* ulong: the op's own scalar number `arg` (clnorm_op.scalar), e.g. a
                          GroupNorm's groups and spatial size */
    KA_FIRST_BLOCK     /* ulong: the first block of a GEOM_BWD_ROWS (row blocks) or
                          GEOM_SPLIT (tiles) launch: 0 but in a part of the latency path
                          (clnorm_span.block0), which runs the steps that take it in parts of
                          their blocks (src/latency.c) */
} clnorm_karg_kind;

typedef struct {
    unsigned char kind; /* clnorm_karg_kind */
    unsigned char arg;  /* KA_SCRATCH: which */
} clnorm_karg;

/* Launch geometries (policy.c fills their sizes). */
typedef enum {
    GEOM_FWD = 0,    /* 1D: groups x local (row, workgroup, subgroup) */
    GEOM_SPLIT,      /* 2D: (chunks x local, rows); a kernel that takes KA_FIRST_BLOCK
                        runs chunk KA_FIRST_BLOCK + get_group_id(0), and none past chunks */
    GEOM_BWD_STATS,  /* 1D: stats groups x bwd local */
    GEOM_BWD_CHUNKS, /* 2D: (bwd chunks x bwd local, rows) */
    GEOM_BWD_ROWS,   /* 2D: (bwd chunks x bwd local, row blocks); its kernel's block is
                        KA_FIRST_BLOCK + get_group_id(1), so a launch over some of the blocks
                        (the latency path's parts) runs exactly those */
    GEOM_BWD_PARAMS, /* 1D: param_items rounded up to the params local size */
    GEOM_ITEMS,      /* 1D: items work-groups of items_local (a work-group per item) */
    GEOM_BWD_SLICES, /* 2D: (slice_items rounded up to the params local size, bwd_slices) */
    GEOM_SAMPLES,    /* 1D: samples work-groups of one item (an op's whole-sample kernel) */
    GEOM_BWD_SAMPLES, /* 1D: a work-group of bwd local per sample of the description, at
                         most bwd_stats_groups (grid-stride beyond) */
    GEOM_COUNT
} clnorm_geom_kind;

/* Conditions under which a step runs (all of its bits must hold; a warm-up runs every step).
 * launch.c derives them from the execution's CLNORM_KF_* flags and the geometry. */
enum {
    RUN_RECOMPUTE = 1u << 0,  /* CLNORM_KF_RECOMPUTE: statistics computed from x */
    RUN_CHUNKED = 1u << 1,    /* the backward cuts rows into column chunks */
    RUN_GRAD_X = 1u << 2,     /* CLNORM_KF_GRAD_X */
    RUN_PARAM_GRADS = 1u << 3, /* a parameter gradient: CLNORM_KF_GRAD_GAMMA, _BETA, _SCALE
                                  or _SHIFT */
    RUN_DX_SUMS = 1u << 4,     /* dx needs the row sums mean(g), mean(g * xhat): GRAD_X
                                  without global statistics */
    RUN_SLICED = 1u << 5,      /* the geometry adds the backward's partials in slices first
                                  (clnorm_geometry.bwd_slices) */
    /* Alternative steps of one chain, chosen by the geometry (a warm-up too runs only the
     * chosen ones): */
    RUN_SAMPLES = 1u << 6,     /* clnorm_geometry.samples is non-zero: a kernel per sample */
    RUN_TILES = 1u << 7,       /* it is zero: the steps the sample kernel stands in for */
    RUN_PARAM_LANES = 1u << 8, /* clnorm_geometry.param_lanes is non-zero */
    RUN_PARAM_GROUPS = 1u << 9, /* it is zero */
    /* The backward's reductions are read: a parameter gradient is asked for (written by the
     * rows kernel or not), or dx needs its row sums (RUN_DX_SUMS). Not with precomputed
     * statistics' dx alone: GroupNorm's sums pass then does not run. */
    RUN_GRAD_SUMS = 1u << 10,
    RUN_GMAX = 1u << 11, /* CLNORM_KF_GMAX: the row backward's wide-row factors */
    /* The row backward's chunk sums are read: for dx (RUN_DX_SUMS), or for a parameter
     * gradient from saved statistics, whose rows may correct their mean by them
     * (kernels/norm_backward.cl, bwd_refines). */
    RUN_ROW_SUMS = 1u << 12,
    RUN_REFINED = 1u << 13 /* CLNORM_KF_REFINED: GroupNorm's saved statistics checked first */
};
/* The bits that choose between alternative steps (a warm-up runs only the chosen ones). */
#define RUN_CHOICES (RUN_SAMPLES | RUN_TILES | RUN_PARAM_LANES | RUN_PARAM_GROUPS)

typedef struct {
    const char *kernel;       /* __kernel function name */
    unsigned slots;           /* SLOT_BIT of each tensor argument, bound in ascending order */
    const clnorm_karg *args;  /* then these, up to KA_END */
    unsigned char geom;       /* clnorm_geom_kind */
    unsigned run_if;          /* RUN_* bits */
} clnorm_kstep;

#define CLNORM_MAX_STEPS CLNORM_MAX_KERNELS
#define CLNORM_MAX_FILES 8

/* The kernels of one strategy in one direction: the program's files (after flags.h) and the
 * steps enqueued one after another. */
typedef struct {
    const char *files[CLNORM_MAX_FILES]; /* NULL-terminated */
    clnorm_kstep steps[CLNORM_MAX_STEPS];
    size_t nsteps;
} clnorm_chain;

/* ---- the operation ---- */

/* The host pointers of one reference call, indexed by slot (NULL: not given). */
typedef struct {
    void *p[CLNORM_ARG_SLOT_COUNT];
} clnorm_host_ptrs;

typedef struct clnorm_op {
    clnorm_kind kind;
    const char *name;    /* "layer_norm": clnorm_op_info.name, CLNORM_VERBOSE */
    const char *summary; /* one line */
    unsigned fwd_slots, bwd_slots;
    int has_mean; /* LayerNorm statistics (mean and rstd) rather than RMS (rstd only) */
    int residual; /* adds a residual (the ADD kinds) */
    clnorm_kind base_kind; /* the kind it normalizes like (itself, or the ADD kind's plain one) */
    /* The row tensors: slots whose element (r, c) is read or written only together with the
     * same element of the others, so an output of them may be an input of them in place.
     * Decided here, not from shapes: a parameter of a one-row problem has a row's shape but
     * is read again by every row. */
    unsigned row_slots;

    /* Description checks beyond the generic ones (desc.c): msg gets a sentence. */
    clnorm_status (*check_desc)(const clnorm_desc *d, char *msg, size_t msg_size);
    /* Use and layout of a slot for a valid, normalized description. */
    void (*slot_info)(const struct clnorm_op *op, const clnorm_desc *d, clnorm_direction dir,
                      clnorm_arg_slot slot, clnorm_slot_info *info);
    /* Rules across slots, given which are present (SLOT_BIT mask): NULL when none. */
    clnorm_status (*check_present)(clnorm_ctx *ctx, const struct clnorm_op *op,
                                   const clnorm_desc *d, clnorm_direction dir, unsigned present);
    /* Build options of the op's programs (appended to the common ones). */
    void (*build_defines)(const struct clnorm_op *op, const clnorm_desc *d, char *buf,
                          size_t size);
    /* The CLNORM_KF_* bits of an execution with the given slots present. */
    unsigned (*kernel_flags)(const struct clnorm_op *op, const clnorm_desc *d,
                             clnorm_direction dir, unsigned present);
    /* Bits that depend on the plan's geometry too, added to kernel_flags' (NULL: none). */
    unsigned (*geometry_flags)(const struct clnorm_op *op, const clnorm_desc *d,
                               const struct clnorm_geometry *g, clnorm_direction dir,
                               unsigned flags);
    /* The kernel chain of a strategy and direction; NULL when the op has none there. */
    const clnorm_chain *(*chain)(const clnorm_desc *d, clnorm_strategy strategy,
                                 clnorm_direction dir);
    /* The rows x cols problem the policy sizes and the kernels' KA_ROWS / KA_COLS see (the
     * description itself when NULL): a GroupNorm in NCHW is N x G rows of C/G x spatial. */
    void (*kernel_view)(const clnorm_desc *d, clnorm_desc *view);
    /* The strategies the op runs a description on, as bits 1u << strategy (0: every device
     * strategy the chain has); NULL: every one. Another one asked for is refused as
     * unsupported, with these named. */
    unsigned (*strategies)(const clnorm_desc *d);
    /* The op's own choice where none is asked for, on this device (CLNORM_STRATEGY_AUTO:
     * the policy's, from the kernel view); NULL: always the policy's. */
    clnorm_strategy (*auto_strategy)(const clnorm_device_profile *p, const clnorm_desc *d);
    /* Geometry of the op's own kernels for strategy s, after the policy's for the view;
     * NULL: none. */
    void (*geometry)(const clnorm_device_profile *p, const clnorm_desc *d, clnorm_strategy s,
                     const clnorm_tuning *t, const size_t kmax[2], clnorm_geometry *g);
    /* The KA_OP scalars; NULL when the op has none. */
    size_t (*scalar)(const clnorm_desc *d, unsigned k);
    /* Scratch buffers (bytes) an execution needs, from the geometry; up to CLNORM_MAX_SCRATCH */
    void (*scratch_bytes)(const clnorm_desc *d, const clnorm_geometry *g,
                          clnorm_direction dir, size_t bytes[]);
    /* A forward cut into parts, each a smaller problem of the same plan, that run at once on
     * the latency path's threads (latency.c). part_units gives the number of independent
     * units of the problem (rows, samples, groups; at most 1: not cut), and in step[slot] how
     * far each slot's offset moves per unit (0: every part reads the slot whole); part_desc
     * the description of a part of `units` units. NULL: the op's forward is never cut. */
    size_t (*part_units)(const clnorm_desc *d, size_t step[]);
    void (*part_desc)(const clnorm_desc *d, size_t units, clnorm_desc *part);
    /* The CPU reference: arguments already validated. */
    clnorm_status (*ref)(const struct clnorm_op *op, const clnorm_desc *d, clnorm_direction dir,
                         const clnorm_host_ptrs *a);
    /* The host loop: the operation with the kernels' numerics as C loops on the host, in the
     * calling thread and, for a call of several chunks, the worker threads of ctx
     * (clnorm_host_pool), for host-pointer calls on CPU devices (execute.c); NULL when the
     * op has none (its host calls always launch). Arguments already validated. */
    clnorm_status (*host)(const struct clnorm_op *op, const clnorm_desc *d,
                          clnorm_direction dir, const clnorm_host_ptrs *a, clnorm_ctx *ctx);
    /* The defaults of CLNORM_HOST_BYTES (forward) and CLNORM_HOST_BACKWARD_BYTES (backward)
     * for a description: where its loop stops beating its kernels, measured
     * (bench/RESULTS.md). NULL: CLNORM_HOST_DEFAULT_BYTES and
     * CLNORM_HOST_BACKWARD_DEFAULT_BYTES. */
    size_t (*host_bytes)(const clnorm_desc *d, clnorm_direction dir);
    /* The default of CLNORM_LATENCY_BYTES for a description: x of at most this many bytes
     * makes a latency plan (src/latency.c), measured (bench/RESULTS.md). NULL, or 0 for a
     * description: CLNORM_LATENCY_DEFAULT_BYTES. */
    size_t (*latency_bytes)(const clnorm_desc *d);
} clnorm_op;

/* ---- what slot layouts and scratch sizes share (op_util.c) ---- */
/* info's type and layout: rows x cols strided by stride, with its extent. */
void clnorm_slot_layout(clnorm_slot_info *info, clnorm_dtype t, size_t rows, size_t cols,
                        size_t stride);
/* a * b * c bytes; SIZE_MAX when that overflows (the plan then refuses the allocation). */
size_t clnorm_bytes3(size_t a, size_t b, size_t c);
/* Does the step take argument `kind`? */
int clnorm_step_takes(const clnorm_kstep *step, clnorm_karg_kind kind);
/* The grid dimension that counts a step's blocks where its kernel may take KA_FIRST_BLOCK:
 * 1 for GEOM_BWD_ROWS, 0 for GEOM_SPLIT; -1 for the other geometries. */
int clnorm_block_dim(clnorm_geom_kind geom);

/* ---- registry (registry.c) ---- */
/* The op of a kind, or NULL. */
const clnorm_op *clnorm_op_of(clnorm_kind kind);

/* The ops, defined in their own files. */
extern const clnorm_op clnorm_op_layer_norm;
extern const clnorm_op clnorm_op_rms_norm;
extern const clnorm_op clnorm_op_add_layer_norm;
extern const clnorm_op clnorm_op_add_rms_norm;
extern const clnorm_op clnorm_op_group_norm;

/* GroupNorm's CPU reference (ref/ref_group_norm.c). */
clnorm_status clnorm_group_norm_ref(const clnorm_op *op, const clnorm_desc *d,
                                    clnorm_direction dir, const clnorm_host_ptrs *a);
/* GroupNorm's host loop (op/group_norm_host.c). */
clnorm_status clnorm_group_norm_host(const clnorm_op *op, const clnorm_desc *d,
                                     clnorm_direction dir, const clnorm_host_ptrs *a,
                                     clnorm_ctx *ctx);

#endif
