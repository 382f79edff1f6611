/*
 * test_util.h - the one helper stack of the cmocka suites, layer 0: a seeded PRNG, element
 * access (src/dtype.h, shared with the library's reference), sentinels of every storage type,
 * comparisons (abs + rel, normwise, in ulps, bitwise; all with the NaN / Inf pattern check),
 * plan and cl_mem helpers. Everything here reports failures through cmocka (print_error +
 * fail_msg), so a test only has to call the helper.
 *
 * The layers above: tu_oracle.h (float64 oracles written independently of src/ref),
 * tu_runner.h (the generic runner of one call over argument slots: cl_mem between sentinels,
 * host pointers, the reference) and tu_problem.h (a problem of any operation: inputs made from
 * the slot infos, the reference's answer, the checks per storage type).
 */
#ifndef CLNORM_TEST_UTIL_H
#define CLNORM_TEST_UTIL_H

/* cmocka needs these before its own header (house style). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "clnorm.h"
#include "dtype.h" /* src/dtype.h: clnorm_elem_load / _store / _size / _param_type */

#define TU_COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* ---------------------------------------------------------------------------------------------
 * Random numbers: our own generator (xoshiro256**, seeded through splitmix64), so every suite
 * sees the same data on every platform and libc.
 * ------------------------------------------------------------------------------------------- */
typedef struct {
    uint64_t s[4];
    int has_spare; /* Box-Muller makes normals in pairs */
    double spare;
} tu_rng;

void tu_rng_seed(tu_rng *rng, uint64_t seed);
uint64_t tu_rng_u64(tu_rng *rng);
double tu_rng_uniform(tu_rng *rng); /* [0, 1) with 53 random bits */
double tu_rng_normal(tu_rng *rng);  /* N(0, 1) */
/* p[i] = offset + scale * N(0,1), rounded to float. */
void tu_fill_normal(tu_rng *rng, float *p, size_t n, double offset, double scale);
/* p[i] = U(lo, hi), rounded to float. */
void tu_fill_uniform(tu_rng *rng, float *p, size_t n, double lo, double hi);

/* ---------------------------------------------------------------------------------------------
 * Elements. Tensors are untyped byte arrays whose storage type is a clnorm_dtype; src/dtype.h
 * reads any of them as double and stores a double with one correct rounding.
 * ------------------------------------------------------------------------------------------- */
const char *tu_dtype_name(clnorm_dtype t); /* "f32", "f16", "bf16", "f64" */
/* The raw bits of element i (zero-extended). */
uint64_t tu_bits(clnorm_dtype t, const void *p, size_t i);
/* Elements a strided tensor spans: (rows - 1) * stride + cols, 0 when rows is 0. */
size_t tu_extent(size_t rows, size_t cols, size_t stride);
/* Effective strides of a description (0 means cols). */
size_t tu_x_stride(const clnorm_desc *d);
size_t tu_y_stride(const clnorm_desc *d);

/* ---------------------------------------------------------------------------------------------
 * Sentinels. Inputs get the input pattern in the gaps between strided rows and around them: a
 * quiet NaN, so a kernel that reads one poisons its row and the comparison catches it.
 * Outputs are pre-filled with the output pattern (another NaN payload) and checked bit for bit
 * afterwards. One pattern per element size; the 16-bit ones are NaN both as binary16 and as
 * bfloat16. `out` picks the output pattern, else the input one.
 * ------------------------------------------------------------------------------------------- */
#define TU_SENTINEL_IN_BITS UINT32_C(0x7FC1D1D1)
#define TU_SENTINEL_OUT_BITS UINT32_C(0x7FC0BEEF)
/* Odd, so nothing lines up with a vector width by accident: the sentinels after a tensor. */
#define TU_PAD 13

uint64_t tu_sentinel(size_t size, int out);
void tu_fill_sentinel(void *p, size_t n, size_t size, int out);
/* Elements of p[0..n) that are not the sentinel; prints the first few. */
size_t tu_count_not_sentinel(const void *p, size_t n, size_t size, int out, const char *what);
/* The same for the gaps between strided rows (columns cols..stride-1 of rows 0..rows-2). */
size_t tu_count_gap_not_sentinel(const void *p, size_t rows, size_t cols, size_t stride,
                                 size_t size, int out, const char *what);
/* malloc'ed n elements of type t (plus one byte, never NULL) all holding the sentinel. */
void *tu_alloc_sentinel(clnorm_dtype t, size_t n, int out);
/* A copy of n elements of type t (never NULL). */
void *tu_dup(clnorm_dtype t, const void *p, size_t n);

/* float32 only: bits, fills and counts with any pattern. */
float tu_float_from_bits(uint32_t bits);
uint32_t tu_float_bits(float f);
void tu_fill_bits(float *p, size_t n, uint32_t bits);
/* Elements of p[0..n) whose bits differ from `bits`; prints the first few. */
size_t tu_count_not_bits(const float *p, size_t n, uint32_t bits, const char *what);
/* n floats (callers add TU_PAD for a tail of sentinels), all set to `bits`; never NULL. */
float *tu_alloc_filled(size_t n, uint32_t bits);
/* Elements between rows (columns cols..stride-1 of rows 0..rows-2) that lost their bits. */
size_t tu_count_gap_changes(const float *p, size_t rows, size_t cols, size_t stride,
                            uint32_t bits, const char *what);

/* Random tensors. A strided rows x cols tensor of offset + scale * N(0,1) values stored in t,
 * input sentinels in the gaps (stride 0 means cols); a vector of n such values; and the float
 * shorthand of the former. */
void *tu_make_rows(tu_rng *rng, clnorm_dtype t, size_t rows, size_t cols, size_t stride,
                   double offset, double scale);
void *tu_make_vector(tu_rng *rng, clnorm_dtype t, size_t n, double offset, double scale);
float *tu_make_input(tu_rng *rng, size_t rows, size_t cols, size_t stride, double offset,
                     double scale);

/* ---------------------------------------------------------------------------------------------
 * Comparisons (tu_compare.c). Both sides are rows x cols with their own strides. NaN must meet
 * NaN and an Inf the same Inf. Each returns the number of failures and prints the first few
 * with `what` in front.
 * ------------------------------------------------------------------------------------------- */
/* Per element |got - want| <= atol + rtol * |want|, float32 against float64 / float32. */
size_t tu_cmp_f64(const float *got, size_t got_stride, const double *want, size_t want_stride,
                  size_t rows, size_t cols, double atol, double rtol, const char *what);
size_t tu_cmp_f32(const float *got, size_t got_stride, const float *want, size_t want_stride,
                  size_t rows, size_t cols, double atol, double rtol, const char *what);
/* The same for any storage types on both sides. */
size_t tu_cmp_elem(clnorm_dtype got_t, const void *got, size_t got_stride, clnorm_dtype want_t,
                   const void *want, size_t want_stride, size_t rows, size_t cols, double atol,
                   double rtol, const char *what);
/* Largest |got - want| over finite pairs (NaN pattern not looked at). */
double tu_max_abs_diff(const float *got, size_t got_stride, const double *want,
                       size_t want_stride, size_t rows, size_t cols);
/* Normwise: max |got - want| over finite pairs / max(1, max finite |want|) must be <= tol;
 * a bound exceeded counts one failure. *err_out (may be NULL) receives that ratio. */
size_t tu_cmp_norm(clnorm_dtype got_t, const void *got, size_t got_stride, clnorm_dtype want_t,
                   const void *want, size_t want_stride, size_t rows, size_t cols, double tol,
                   double *err_out, const char *what);
/* The unit in the last place of type t at the stored value p[i] (finite): the spacing of the
 * type's values in the binade of that value (subnormal spacing below the normal range). */
double tu_ulp(clnorm_dtype t, const void *p, size_t i);
/* Per element: |got - want| <= ulps * ulp(want) + atol. Same type on both sides. */
size_t tu_cmp_ulp(clnorm_dtype t, const void *got, size_t got_stride, const void *want,
                  size_t want_stride, size_t rows, size_t cols, double ulps, double atol,
                  const char *what);
/* Bitwise equality of n elements (sign of zero and NaN payload included). */
size_t tu_cmp_exact(clnorm_dtype t, const void *got, const void *want, size_t n,
                    const char *what);
size_t tu_cmp_bits(const float *got, const float *want, size_t n, const char *what);

/* ---------------------------------------------------------------------------------------------
 * Contexts, plans and cl_mem (tu_device.c). The test fails on any OpenCL error.
 * ------------------------------------------------------------------------------------------- */
/* A context for a whole test binary (group setup): NULL when none can be made, so device
 * tests skip. Prints the device. */
clnorm_ctx *tu_context(const char *suite);
/* Sets the environment variable name to value (the library reads its CLNORM_* tuning
 * variables when a plan is made) and returns what it was, NULL when unset, for
 * tu_env_restore, which puts it back and frees that. */
char *tu_env_set(const char *name, const char *value);
void tu_env_restore(const char *name, char *was);
/* True when ctx runs on an OpenCL device (device-strategy tests skip otherwise). */
int tu_has_device(const clnorm_ctx *ctx);
/* Whether the context's device reports cl_khr_fp64 (what F64 plans need). */
int tu_device_has_fp64(const clnorm_ctx *ctx);
/* Whether the context's device is a CPU (where each program costs PoCL 10-20 s to build, so
 * suites run fewer strategies for types other than float32). */
int tu_device_is_cpu(const clnorm_ctx *ctx);
/* The strategies every device test runs: each is compiled and tested on every device, whether
 * clnorm would choose it there or not. */
#define TU_NUM_STRATEGIES 4
extern const clnorm_strategy tu_strategies[TU_NUM_STRATEGIES];
/* Rows at least this long may exceed the subgroup strategy's register capacity (it then
 * answers CLNORM_UNSUPPORTED); shorter ones must always be taken. */
#define TU_SUBGROUP_ALWAYS_COLS 256

/* Runs fn(arg) with stderr going to buf (size bytes, NUL-terminated, the rest cut off):
 * the CLNORM_VERBOSE lines it printed (tu_capture.c). */
void tu_capture_stderr(void (*fn)(void *), void *arg, char *buf, size_t size);

/* Creates a plan, failing the test (with clnorm_last_error) unless it succeeds. */
clnorm_plan *tu_plan(clnorm_ctx *ctx, const clnorm_desc *desc, clnorm_strategy strategy);
/* As tu_plan, but returns NULL where the plan legitimately cannot exist: the subgroup strategy
 * saying CLNORM_UNSUPPORTED for rows longer than TU_SUBGROUP_ALWAYS_COLS, and an F64 plan on
 * a device without cl_khr_fp64 (test_dtypes checks that claim). */
clnorm_plan *tu_plan_if(clnorm_ctx *ctx, const clnorm_desc *desc, clnorm_strategy strategy);

/* A buffer of n floats holding `init` (n floats) or, when init is NULL, `bits` everywhere. */
cl_mem tu_buffer(cl_context context, cl_command_queue queue, const float *init, size_t n,
                 uint32_t bits);
/* A buffer of `bytes` bytes holding `init`. */
cl_mem tu_buffer_bytes(cl_context context, cl_command_queue queue, const void *init,
                       size_t bytes);
/* Blocking reads of n floats, and of `bytes` bytes. */
void tu_read(cl_command_queue queue, cl_mem mem, float *dst, size_t n);
void tu_read_bytes(cl_command_queue queue, cl_mem mem, void *dst, size_t bytes);

/* Golden data directory: $CLNORM_GOLDEN_DIR, else the build-time default when compiled in. */
const char *tu_golden_dir(void);

/* Case-insensitive substring test (messages that must name a field). */
int tu_mentions(const char *text, const char *word);
/* Whether `text` holds `word` as a word of its own (not inside a longer identifier: "x" is
 * not named by "dx" or "max"), as a message that names an argument slot must. */
int tu_names(const char *text, const char *word);

#endif /* CLNORM_TEST_UTIL_H */
