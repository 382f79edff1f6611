/*
 * bench.h - declarations shared by the files of clnorm-bench, the side-by-side benchmark.
 *
 * One run measures every contender on the same input data, case by case (a case is an op, a
 * storage dtype and a shape): clnorm (auto and each forced strategy), a naive one-pass OpenCL
 * kernel, a CLBlast GEMV baseline, the CPU reference, oneDNN, for the fused residual ops the
 * unfused pairs (an add, then the norm), for the modulated ops the norm then a modulation
 * kernel, and the copy bandwidth of the device and of the host.
 * The ops are clnorm's op table in each direction (ops.c); everything the bench passes to an
 * op is named by clnorm's argument slots, so data, buffers, checks and the clnorm contenders
 * follow the table rather than a list of ops. Each file does one job:
 *   options.c   command line             threads.c   one thread count for everyone
 *   ops.c       the ops, from the table  dtype.c     storage formats' elements
 *   dtype_info.c   their names and sizes, and the parameters' elements (no library call)
 *   data.c      inputs + reference       stats.c     backward's mean/rstd
 *   buffers.c   rotated buffer sets      timing.c    clock, median
 *   rounds.c    a case's contenders checked, then timed in interleaved rounds
 *   check.c     errors against the reference
 *   clutil.c    OpenCL helpers           latency.c   empty-kernel enqueue-to-finish time
 *   cl_storage.h   the storage formats in OpenCL C, for the bench's own kernels
 *   impl_*.c    one contender each       registry.c  the list of contenders
 *   clnorm_case.c  plans and descriptors of the clnorm and CPU reference contenders
 *   onednn_util.c  what the oneDNN contenders share
 *   report.c    the table on stdout      csv.c, plot.c  CSV file, gnuplot PNG
 *   main.c      the run: cases x contenders
 */
#ifndef CLNORM_BENCH_H
#define CLNORM_BENCH_H

#include "clnorm.h"

#include <stddef.h>
#include <stdio.h>

#define BENCH_MAX_SHAPES 64
#define BENCH_MSG 512
#define BENCH_N_SLOTS CLNORM_ARG_SLOT_COUNT

/* ---- ops (ops.c) ----------------------------------------------------------------------- */
/* A bench op is one of clnorm's operations (clnorm_op_count(), clnorm_op_query()) in one
 * direction, plain or, for an operation whose forward takes CLNORM_ARG_SCALE, modulated
 * (CLNORM_SCALE | CLNORM_SHIFT: "layer-mod"). The table is built from the library's op table,
 * so a newly registered operation is benchmarked by every generic contender without new code
 * here. A bench_op indexes it; --op keeps a set of them in an unsigned long long. */
typedef unsigned bench_op;
enum { BENCH_MAX_OPS = 40 }; /* --op keeps its set in an unsigned long long: at most 64 */

/* The form of an op's data, and so of its shapes: rows x cols (LayerNorm and its relatives),
 * a batch of channels x spatial positions in groups, in a layout (GroupNorm), or B samples of
 * T rows x C (the modulated row ops: scale and shift per sample). ops.c tells them apart by
 * asking the library whether the kind takes groups, and by the op's modulation; contenders
 * say which forms they run (bench_contender.forms). */
enum {
    BENCH_FORM_ROWS = 1u << 0,
    BENCH_FORM_GROUPS = 1u << 1,
    BENCH_FORM_SAMPLES = 1u << 2,
    BENCH_ANY_FORM = BENCH_FORM_ROWS | BENCH_FORM_GROUPS | BENCH_FORM_SAMPLES
};

/* A shape. Rows form: rows x cols. Groups form: rows = N (batch), cols = C (channels), the
 * spatial dims (H, W, ...; none for (N, C)) and groups = G; written NxCxHxW:G. Samples form:
 * rows = B x T, cols = C, samples = B; written BxTxC. */
enum { BENCH_MAX_SPATIAL = 3 };
typedef struct {
    size_t rows, cols;
    size_t spatial[BENCH_MAX_SPATIAL]; /* groups form: the spatial dims, n_spatial of them */
    int n_spatial;
    size_t groups;                     /* groups form: G (0 in the rows form) */
    size_t samples;                    /* samples form: B, dividing rows; group-mod: N (0 in
                                          the others) */
} bench_shape;

#define BENCH_SHAPE_LABEL 48

#define BENCH_SLOT(s) (1u << (unsigned)(s))
#define BENCH_ANY_SLOT (~0u)

typedef struct {
    char name[32];        /* --op and the CSV: "layer", "add-rms", "backward", ... */
    char alias[32];       /* another name --op takes ("layer-backward"), or "" */
    clnorm_kind kind;
    clnorm_direction dir;
    unsigned mod_flags;   /* CLNORM_SCALE | CLNORM_SHIFT for a modulated op ("layer-mod",
                             its form BENCH_FORM_SAMPLES; "group-mod", BENCH_FORM_GROUPS with
                             B = N), else 0: desc.flags of its cases */
    unsigned act_flags;   /* CLNORM_SILU for the fused-SiLU variant of an op whose descriptor
                             takes it ("group-silu", and "group-mod": the SiLU after the
                             modulation), else 0: desc.flags of its cases too */
    unsigned stats_flags; /* CLNORM_USE_GLOBAL_STATS for the precomputed-statistics variant
                             ("layer-stats": mean and rstd per row; "group-stats": (N, G);
                             inputs, the forward an elementwise apply), else 0: desc.flags
                             too */
    int has_mean;         /* LayerNorm statistics (clnorm_op_info.has_mean) */
    unsigned given;       /* BENCH_SLOT of every slot the bench passes: each one the op takes,
                             required or optional, except DSUM, for which it has no data */
    unsigned row_slots;   /* those that are rows x cols tensors (the rest: vectors) */
    unsigned outputs;     /* those the op writes */
    clnorm_arg_slot out;  /* the first row output (y, or dx): where the copies write */
    int has_unfused;      /* a forward with a residual whose op without it exists ... */
    clnorm_kind unfused_kind; /* ... as this kind: the norm of the unfused pairs */
    unsigned form;        /* BENCH_FORM_ROWS, BENCH_FORM_GROUPS or BENCH_FORM_SAMPLES */
    /* The shapes the op runs on without --shape, and under --quick: the form's table */
    const bench_shape *shapes, *quick_shapes;
    size_t n_shapes, n_quick_shapes;
    /* A backward whose target is stated against the CPU reference: clnorm_auto's GB/s >= this
     * x ref_cpu's GB/s x the thread count (0: none). The table's summary line says whether
     * it is met. */
    double ref_cores_target;
    /* A forward whose targets are stated against its unfused pair and the copy: clnorm_auto's
     * GB/s >= fused_target x the best pair's and >= copy_target x the copy's (0: none). The
     * case's "fused vs unfused" line says whether both are met. A forward with copy_target
     * and no fused_target (GroupNorm, issue #10) states it per layout: copy_target in NCHW,
     * copy_target_nhwc in NHWC, and in NCHW also onednn_target x oneDNN's GB/s; its case
     * ends with a "targets" line per clnorm call (bench_report_copy_targets). */
    double fused_target, copy_target, copy_target_nhwc, onednn_target;
} bench_op_info;

size_t bench_op_count(void);
const bench_op_info *bench_op_get(bench_op op); /* NULL past the end */
const char *bench_op_name(bench_op op);          /* "?" past the end */
int bench_op_parse(const char *name, bench_op *op); /* 0, or -1 for an unknown name */
/* The op of kind in dir with that modulation (0: the plain op), without a fused activation.
 * 0 or -1. */
int bench_op_find(clnorm_kind kind, clnorm_direction dir, unsigned mod_flags, bench_op *op);
int bench_op_is_backward(bench_op op);
/* "layer, rms, ..., backward, ..." into buf: every name --op takes. */
void bench_op_names(char *buf, size_t size);

/* ---- storage formats (dtype_info.c; bench_get and bench_put: dtype.c) ------------------- */
enum { BENCH_N_DTYPES = 4 };
const char *bench_dtype_name(clnorm_dtype t); /* f32, f16, bf16, f64 (CSV, --dtype) */
int bench_dtype_parse(const char *name, clnorm_dtype *t);
size_t bench_elem_size(clnorm_dtype t);  /* bytes of an element of that type: 4, 2, 2, 8 */
size_t bench_param_size(clnorm_dtype t); /* gamma, beta, mean, rstd, dgamma, dbeta: 4 or 8 */
/* Element i of storage-format data as a double, and a double stored (rounded to nearest
 * even) as element i; the same for parameters (float, double for F64). */
double bench_get(clnorm_dtype t, const void *base, size_t i);
void bench_put(clnorm_dtype t, void *base, size_t i, double v);
double bench_param_get(clnorm_dtype t, const void *base, size_t i);
void bench_param_put(clnorm_dtype t, void *base, size_t i, double v);

/* ---- command line (options.c) ---------------------------------------------------------- */
/* One block of the table: an op at a storage dtype on a shape (in a layout: the groups
 * form; CLNORM_NCHW for the rows form). */
typedef struct {
    bench_op op;
    clnorm_dtype dtype;
    bench_shape shape;
    clnorm_layout layout;
} bench_case;

/* The product of the spatial dims (1 when there are none). */
size_t bench_shape_spatial(const bench_shape *s);
/* A groups-form shape's G when --shape gives none: 32 where it divides C, else 1. */
size_t bench_shape_default_groups(const bench_shape *s);
/* A whole decimal number in [lo, hi] into *out: 0, or -1 (shape.c). */
int bench_parse_ull(const char *s, unsigned long long lo, unsigned long long hi,
                    unsigned long long *out);
/* A --shape: "RxC", or "NxCxD1[xD2[xD3]][:G]" (groups 0 when not given): 0, or -1
 * (shape.c). */
int bench_parse_shape(const char *s, bench_shape *out);
/* "8192x768", for the groups form "8x320x64x64:32 nhwc" (layout named when form is
 * BENCH_FORM_GROUPS), for the samples form "8x1024x1152" (B x T x C). */
void bench_shape_label(const bench_shape *s, unsigned form, clnorm_layout layout, char *buf,
                       size_t size);
const char *bench_layout_name(clnorm_layout layout); /* "nchw", "nhwc" */

/* The most cases one run can ask for: every op x dtype x shape x layout. The options hold
 * them in place (about 80 bytes each, 1 MiB in all): main keeps its options static. */
#define BENCH_MAX_CASES (BENCH_MAX_OPS * BENCH_N_DTYPES * BENCH_MAX_SHAPES * 2) /* 2 layouts */

typedef struct {
    bench_case cases[BENCH_MAX_CASES];    /* --op x --dtype x --shape, in run order */
    size_t n_cases;
    int quick;                            /* --quick: few small shapes, few reps */
    int reps, warmup;                     /* --reps, --warmup */
    int min_ms;                           /* --min-ms: least timed milliseconds per contender */
    int rounds;                           /* --rounds: timed runs interleaved in rounds */
    int threads;                          /* --threads N (0: not given) */
    const char *device;                   /* --device SPEC (NULL: clnorm's default) */
    const char *csv_path;                 /* --csv FILE */
    const char *plot_path;                /* --plot FILE.png */
    unsigned long long only;              /* --only: bit i selects contender i; 0 = all */
    size_t rotate_mib;                    /* --rotate-mib N (0: default) */
    double tol;                           /* --tol: absolute tolerance (0: bit-exact);
                                             < 0: the dtype's */
    double ref_seconds;                   /* time budget of the CPU reference per shape */
    int shape_width;                      /* the table's shape column: the longest label */
} bench_options;

/* Parses argv. Returns 0 to run, 1 when --help/--list printed what was asked (exit 0), and
 * 2 after one line on stderr for a bad flag (exit 2). */
int bench_parse_options(int argc, char **argv, bench_options *opt);

/* ---- threads (threads.c) --------------------------------------------------------------- */
typedef struct {
    int threads;        /* the count everyone uses (POCL_CPU_MAX_CU_COUNT after set-up) */
    int pocl_was_set;   /* POCL_CPU_MAX_CU_COUNT came from the environment */
    int omp_was_set;    /* OMP_NUM_THREADS came from the environment */
    int omp_threads;    /* OMP_NUM_THREADS after set-up */
} bench_threads;

/* Sets POCL_CPU_MAX_CU_COUNT and OMP_NUM_THREADS when unset (before any OpenCL context or
 * oneDNN engine exists) and fills *t. */
void bench_threads_setup(const bench_options *opt, bench_threads *t);
int bench_online_cores(void);

/* ---- input data and reference (data.c, stats.c) ---------------------------------------- */
typedef struct {
    bench_op op;
    const bench_op_info *info;
    clnorm_kind kind;
    clnorm_direction dir;
    clnorm_dtype dtype;
    size_t rows, cols;
    bench_shape shape;  /* the case's shape (rows, cols as above) */
    clnorm_layout layout; /* groups form: the layout of the row tensors */
    size_t n_elems;     /* elements of a dense row tensor: rows x cols (x spatial) */
    size_t elem, psize; /* bytes of a storage element (x), of a parameter */
    float eps;
    clnorm_desc desc;   /* kind, dtype, shape, eps; CLNORM_WITH_BACKWARD for a backward op */
    clnorm_slot_info slot[BENCH_N_SLOTS]; /* layout of every slot in the op's direction */
    /* Host data of each slot in info->given: the inputs every contender sees, and for the
     * outputs the reference. x = N(0,1) plus a per-row offset in [-10, 10]; residual the
     * same with offsets of its own; gamma U(0.5, 1.5), beta U(-0.5, 0.5), dy N(0,1); for a
     * backward op mean/rstd from a clnorm forward (stats.c). */
    void *t[BENCH_N_SLOTS];
    char stats_from[160]; /* where mean/rstd came from, for the table */
    int n_arrays;       /* rotated (row) arrays per buffer set */
    double bytes;       /* bytes the op must move: every given slot but mean/rstd, once */
    double copy_bytes;  /* bytes the copy contenders move: x read + y written */
} bench_problem;

/* Allocates and fills the inputs and computes the reference (clnorm_ref_execute; for a
 * backward op after mean/rstd, bench_problem_stats, on ctx's device when it has one).
 * 0 or -1 (msg says why). */
int bench_problem_init(bench_problem *p, const bench_case *c, clnorm_ctx *ctx, char *msg,
                       size_t msg_size);
void bench_problem_free(bench_problem *p);
/* Elements of slot s (its extent) and their size in bytes. */
size_t bench_slot_elems(const bench_problem *p, clnorm_arg_slot s);
size_t bench_slot_esize(const bench_problem *p, clnorm_arg_slot s);
/* Fills p->t[MEAN]/p->t[RSTD]: a forward of the op's kind with CLNORM_SAVE_STATS on ctx's
 * device (auto strategy), else clnorm_ref_execute. 0 or -1 (msg). */
int bench_problem_stats(bench_problem *p, clnorm_ctx *ctx, char *msg, size_t msg_size);

/* ---- rotated buffer sets (buffers.c) --------------------------------------------------- */
/* n_sets copies of every row tensor the op reads and writes (x, residual, dy; y, sum, dx),
 * whose total exceeds the last-level cache. Set i lives in chunk i / per_chunk at element
 * offset (i % per_chunk) * stride, in elements of each slot's own type; stride is the elements
 * rounded up to 64 elements, so every set starts as aligned as the chunk. The vectors
 * (gamma, beta, mean, rstd, dgamma, dbeta) are shared by all sets. */
typedef struct {
    size_t n_sets, stride, per_chunk, n_chunks;
    cl_mem *rows[BENCH_N_SLOTS]; /* n_chunks each, for the given row slots */
    cl_mem vec[BENCH_N_SLOTS];   /* the given vector slots */
    clnorm_arg_slot out;         /* the first row output */
} bench_dev_sets;

typedef struct {
    size_t n_sets, stride;               /* stride in elements */
    unsigned char *rows[BENCH_N_SLOTS];  /* n_sets * stride elements each, 64-byte aligned */
    size_t esize[BENCH_N_SLOTS];         /* bytes per element of each row slot */
    void *vec[BENCH_N_SLOTS];
    clnorm_arg_slot out;
} bench_host_sets;

/* How many sets: enough that the arrays of all of them exceed target_bytes, at least 4. */
size_t bench_sets_needed(const bench_problem *p, size_t target_bytes);
/* The default rotation target: max(256 MiB, 2 x the last-level cache). */
size_t bench_default_rotation_bytes(void);

int bench_dev_sets_create(bench_dev_sets *s, cl_context context, cl_command_queue queue,
                          cl_device_id device, const bench_problem *p, size_t n_sets,
                          char *msg, size_t msg_size);
void bench_dev_sets_release(bench_dev_sets *s);
/* The cl_mem and element offset of slot `slot` in set i (a vector slot: its buffer, 0). */
void bench_dev_arg(const bench_dev_sets *s, size_t i, clnorm_arg_slot slot, cl_mem *mem,
                   size_t *offset);
/* x and the first output of set i, at their (common) element offset. */
void bench_dev_set(const bench_dev_sets *s, size_t i, cl_mem *x, cl_mem *y, size_t *offset);

int bench_host_sets_create(bench_host_sets *s, const bench_problem *p, size_t n_sets,
                           char *msg, size_t msg_size);
void bench_host_sets_free(bench_host_sets *s);
/* Element 0 of slot `slot` in set i (a vector slot: the shared vector). */
void *bench_host_arg(const bench_host_sets *s, size_t i, clnorm_arg_slot slot);

/* ---- contenders (impl_*.c, registry.c) ------------------------------------------------- */
typedef enum { BENCH_DEVICE = 0, BENCH_HOST = 1 } bench_side;

/* What a contender sees of the run; one side's fields are NULL during the other side. */
typedef struct {
    const bench_problem *p;
    const bench_options *opt;
    const bench_threads *threads;
    /* device side */
    clnorm_ctx *ctx;
    cl_context context;
    cl_command_queue queue;
    cl_device_id device;
    const bench_dev_sets *dev;
    /* host side */
    const bench_host_sets *host;
} bench_env;

/* Return codes of create/run. */
enum { BENCH_OK = 0, BENCH_FAIL = -1, BENCH_SKIP = 1 };

/* What a contender is to the run (bits of bench_contender.role). */
enum {
    BENCH_ROLE_COPY = 1u << 0,    /* a bandwidth limit: bytes = copy_bytes, checked against x */
    BENCH_ROLE_CLNORM = 1u << 1,  /* clnorm itself: a WRONG result fails the run (exit 1) */
    BENCH_ROLE_AUTO = 1u << 2,    /* clnorm's own choice: the "fused" of the summary line */
    BENCH_ROLE_UNFUSED = 1u << 3, /* an add then the norm, or the norm then a modulation:
                                     the summary's "unfused pairs" */
    BENCH_ROLE_ONEDNN = 1u << 4,  /* oneDNN: the denominator of x_onednn */
    BENCH_ROLE_REF = 1u << 5      /* the CPU reference (ref_cpu): the denominator of
                                     ref_cores_target, never the host-pointer call */
};

typedef struct {
    const char *name;   /* as in the CSV and --only: clnorm_auto, naive_onepass, ...; two
                           contenders of different ops may share a name */
    bench_side side;
    unsigned role;      /* BENCH_ROLE_* */
    unsigned slots;     /* it runs an op whose given slots are all among these ... */
    unsigned needs;     /* ... and include all of these */
    const char *inexact; /* not NULL for a baseline inexact by design: a result off by more
                            than the tolerance reads "inexact baseline (<this>)", not WRONG */
    unsigned forms;     /* the forms of the ops it runs (BENCH_FORM_*); 0 reads as
                           BENCH_FORM_ROWS, what a baseline of the row ops takes */
    int is_slow;        /* single-threaded: a time budget instead of all the reps */
    /* Prepares everything a run needs for the problem (programs, plans, scratch). Returns
     * BENCH_OK, BENCH_SKIP (not applicable; msg says why) or BENCH_FAIL (msg says why).
     * note (may be empty) is shown in the table, e.g. the strategy auto chose. */
    int (*create)(const bench_env *env, void **state, char *note, size_t note_size, char *msg,
                  size_t msg_size);
    /* One execution on buffer set `set`, synchronous: OpenCL contenders end with clFinish. */
    int (*run)(void *state, size_t set, char *msg, size_t msg_size);
    void (*destroy)(void *state);
} bench_contender;

/* All contenders compiled in, in table order. */
const bench_contender *const *bench_contenders(size_t *count);
/* Sets the bit of every contender called `name` in *mask; returns how many there are. */
int bench_contender_select(const char *name, unsigned long long *mask);
/* Whether contender c takes part in op. */
int bench_contender_runs(const bench_contender *c, bench_op op);

extern const bench_contender bench_copy_device, bench_copy_host;
extern const bench_contender bench_clnorm_auto, bench_clnorm_row, bench_clnorm_workgroup,
    bench_clnorm_split, bench_clnorm_subgroup;
extern const bench_contender bench_clnorm_unfused, bench_clnorm_unfused_mod;
extern const bench_contender bench_naive_onepass;
extern const bench_contender bench_ref_cpu, bench_clnorm_host;
#ifdef CLNORM_HAVE_CLBLAST
extern const bench_contender bench_clblast_gemv;
void bench_clblast_release_cache(void);
#endif
#ifdef CLNORM_HAVE_DNNL
extern const bench_contender bench_onednn, bench_onednn_bwd, bench_onednn_unfused,
    bench_onednn_groups;
#endif
/* clnorm_case.c: what the clnorm contenders and the CPU reference set up. */
/* The case's descriptor with flags (CLNORM_WITH_BACKWARD added for a backward op, the op's
 * modulation and its samples for a -mod op). */
void bench_case_desc(const bench_problem *p, unsigned flags, clnorm_desc *d);
typedef struct {
    const bench_env *env;
    clnorm_plan *plan;
} bench_clnorm_state;
/* A plan for desc: clnorm's choice for CLNORM_STRATEGY_AUTO (note "auto=<strategy>"), else
 * the strategy forced. BENCH_SKIP when the library refuses the strategy or dtype
 * (CLNORM_UNSUPPORTED, CLNORM_INVALID_ARGUMENT). */
int bench_clnorm_plan(const bench_env *env, const clnorm_desc *desc, clnorm_strategy strategy,
                      clnorm_plan **plan, char *note, size_t note_size, char *msg,
                      size_t msg_size);
/* A bench_clnorm_state with a plan of the case (bench_case_desc, no flags). */
int bench_clnorm_create(const bench_env *env, clnorm_strategy strategy, void **out, char *note,
                        size_t note_size, char *msg, size_t msg_size);
void bench_clnorm_destroy(void *state);
typedef struct {
    const bench_env *env;
    clnorm_desc desc;
} bench_ref_state;
/* A bench_ref_state (the case's descriptor), freed with free(); a create of bench_contender. */
int bench_ref_create(const bench_env *env, void **out, char *note, size_t note_size, char *msg,
                     size_t msg_size);
/* The host arguments of every slot the case's op is given, from host set `set` (args holds
 * BENCH_N_SLOTS); returns how many. */
size_t bench_host_args(const bench_env *env, size_t set, clnorm_host_arg *args);
/* "the naive kernel is float32 only (dtype f16)" into msg; BENCH_SKIP unless F32. */
int bench_f32_only(const bench_problem *p, const char *who, char *msg, size_t msg_size);

/* ---- timing (timing.c) ----------------------------------------------------------------- */
double bench_now_s(void); /* monotonic clock, seconds */
double bench_median(double *v, size_t n); /* sorts v */

/* ---- checking (check.c) ---------------------------------------------------------------- */
/* The verdict on one contender's outputs on set 0. */
typedef struct {
    double err;                 /* the largest of err_of[] (+inf for a NaN/Inf mismatch) */
    double err_of[BENCH_N_SLOTS]; /* per output slot: forward max abs error, backward
                                     max |got - ref| / max(1, max |ref|); -1 when unchecked */
    int wrong;                  /* an output is off by more than the tolerance */
} bench_verdict;

/* The tolerance of a dtype: |got - ref| <= atol + rtol x |ref| per element (forward), and
 * normwise errors <= atol + rtol (backward row outputs such as dx; vector outputs such as
 * dgamma and dbeta, float32 for the 16-bit formats, get atol alone). atol is --tol when
 * given, else 1e-5 (1e-12 for F64); rtol is one ulp of the format (2^-10 F16, 2^-7 BF16,
 * 1e-12 F64, 0 F32), and 0 under --tol 0 (bit-exact). */
void bench_tolerance(const bench_options *opt, clnorm_dtype t, double *atol, double *rtol);
/* Max abs difference of n elements from want; a NaN/Inf mismatch counts as +inf. */
double bench_max_abs_err(clnorm_dtype t, const void *got, const void *want, size_t n);
/* Fills every output the next run writes (of set 0) with all-ones bytes (NaN in every
 * format), so an output left unwritten cannot pass the check. */
int bench_poison(const bench_env *env, bench_side side, char *msg, size_t msg_size);
/* Reads the outputs of set 0 back (device side) or takes them (host side) and compares them
 * with the reference; a copy's output with x, bit for bit. */
int bench_check(const bench_env *env, bench_side side, int is_copy, bench_verdict *v,
                char *msg, size_t msg_size);

/* ---- OpenCL helpers (clutil.c) --------------------------------------------------------- */
/* "clEnqueueNDRangeKernel: CL_OUT_OF_RESOURCES" into msg; returns BENCH_FAIL. */
int bench_cl_fail(cl_int err, const char *what, char *msg, size_t msg_size);
/* Builds a program from one source string with build options (NULL: none); the build log
 * goes to msg on failure. */
int bench_cl_program(cl_context context, cl_device_id device, const char *source,
                     const char *options, cl_program *program, char *msg, size_t msg_size);
int bench_cl_kernel(cl_program program, const char *name, cl_kernel *kernel, char *msg,
                    size_t msg_size);
/* clSetKernelArg with the kernel's name and the argument index in msg on failure. */
int bench_set_arg(cl_kernel kernel, cl_uint index, size_t size, const void *value, char *msg,
                  size_t msg_size);
size_t bench_round_up(size_t n, size_t m);
/* "plan: CLNORM_UNSUPPORTED: <clnorm_last_error>" into msg. */
void bench_clnorm_msg(clnorm_ctx *ctx, clnorm_status st, const char *what, char *msg,
                      size_t msg_size);

/* ---- latency (latency.c) --------------------------------------------------------------- */
/* Median enqueue-to-clFinish time of an empty kernel on queue, in seconds. */
int bench_empty_kernel_latency(cl_context context, cl_device_id device, cl_command_queue queue,
                               int reps, double *median_s, char *msg, size_t msg_size);

/* ---- results and output (report.c, csv.c, plot.c) -------------------------------------- */
typedef enum {
    BENCH_R_OK,
    BENCH_R_WRONG,   /* off by more than the tolerance */
    BENCH_R_INEXACT, /* the same, for a baseline inexact by design (bench_contender.inexact) */
    BENCH_R_FAILED,
    BENCH_R_SKIPPED
} bench_rstatus;

typedef struct {
    bench_op op;
    clnorm_dtype dtype;
    size_t rows, cols;
    bench_shape shape;    /* the case's shape (spatial dims and groups of the groups form) */
    clnorm_layout layout;
    const char *impl;
    bench_side side;
    unsigned role;        /* the contender's BENCH_ROLE_* */
    bench_rstatus status;
    double median_us, gbps;
    double frac_of_copy;  /* < 0 when the copy row of its side is missing */
    double vs_onednn;     /* impl GB/s / oneDNN GB/s; < 0 when oneDNN has no row */
    double max_err;       /* < 0 when not checked */
    int reps;
    char note[160];
} bench_result;

typedef struct {
    bench_result *v;
    size_t n, cap;
} bench_results;

/* ---- one case's contenders, timed in rounds (rounds.c) --------------------------------- */
typedef struct {
    const bench_contender *c;
    void *state;          /* created and checked; destroyed once timed (or on failure) */
    bench_result r;       /* the row */
    bench_rstatus verdict; /* of the check */
    size_t *cursor;       /* its side's rotation (bench_case_run.cursor) */
    size_t n_sets;
    int reps, warmup;     /* timed and untimed runs it gets */
    int done;             /* timed runs so far, in t */
    double *t;
    int live;             /* waiting for bench_case_time */
} bench_entry;

typedef struct {
    const bench_options *opt;
    const bench_env *env; /* both sides' sets, alive until bench_case_time returns */
    bench_entry *e;
    size_t n, cap;
    size_t cursor[2];     /* device, host: set 0 holds the checked outputs, so they start at 1 */
    int failures;         /* contenders that failed */
    int wrong;            /* clnorm results off by more than the tolerance */
} bench_case_run;

void bench_case_begin(bench_case_run *cr, const bench_options *opt, const bench_env *env);
/* Creates contender c and checks it on set 0 (its side's sets: n_sets of them, or none and
 * sets_error). A row that cannot be timed (skipped, failed) is final at once, and so is the
 * CPU reference's, timed alone on its budget; the others wait for bench_case_time. */
void bench_case_add(bench_case_run *cr, const bench_contender *c, size_t n_sets,
                    const char *sets_error);
/* Times the waiting contenders in opt->rounds interleaved rounds (rounds.c says why) and
 * destroys them: every row is then final, in the order the contenders were added. */
void bench_case_time(bench_case_run *cr);
/* Frees what is left (the rows: copy them out first). */
void bench_case_end(bench_case_run *cr);

int bench_results_push(bench_results *r, const bench_result *res);
void bench_results_free(bench_results *r);
/* Whether a result has a time (OK, WRONG or INEXACT). */
int bench_result_timed(const bench_result *x);
/* Fills frac_of_copy and vs_onednn of the results [first, r->n) (one case). */
void bench_results_derive(bench_results *r, size_t first);
/* Whether two results belong to the same case (op, dtype, shape). */
int bench_same_case(const bench_result *a, const bench_result *b);

void bench_report_header(FILE *out, const bench_options *opt);
/* The line above the rows of a new op/dtype: bytes counted, error measure, tolerance. */
void bench_report_case(FILE *out, const bench_problem *p, const bench_options *opt);
void bench_report_rows(FILE *out, const bench_results *r, size_t first, const bench_options *opt);
/* Under a case of an op with a target against the CPU reference (ref_cores_target):
 * clnorm_auto's GB/s against ref_cpu's x threads. */
void bench_report_ref_target(FILE *out, const bench_results *r, size_t first,
                             const bench_threads *th);
/* Under a case with unfused pairs: clnorm's fused GB/s against the best pair and the copy. */
void bench_report_fused(FILE *out, const bench_results *r, size_t first);
/* Under a case of an op with targets against the copy alone (copy_target, no fused_target):
 * clnorm_auto's and the host-pointer call's fraction of their side's copy, and in NCHW their
 * ratio to oneDNN, against the layout's targets. */
void bench_report_copy_targets(FILE *out, const bench_results *r, size_t first);
int bench_write_csv(const char *path, const bench_results *r);
/* 0 on success, 1 when gnuplot is missing (a note was printed), -1 on failure. */
int bench_write_plot(const char *path, const char *title, const bench_results *r);

#endif /* CLNORM_BENCH_H */
