/*
 * test_util.h - helpers shared by the cmocka suites: a seeded PRNG, a float64 reference written
 * independently of the library, float comparison (abs + rel + NaN/Inf pattern), sentinels
 * around outputs, cl_mem helpers and a layer-1 runner that checks every byte around the
 * outputs. Everything here reports failures through cmocka (print_error + fail), so a test
 * only has to call the helper.
 */
#ifndef CLNORM_TEST_UTIL_H
#define CLNORM_TEST_UTIL_H

/* cmocka needs these before its own header (ARCHITECTURE.md, house style). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "clnorm.h"

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
double tu_rng_uniform(tu_rng *rng);  /* [0, 1) with 53 random bits */
double tu_rng_normal(tu_rng *rng);   /* N(0, 1) */
/* p[i] = offset + scale * N(0,1), rounded to float. */
void tu_fill_normal(tu_rng *rng, float *p, size_t n, double offset, double scale);
/* p[i] = U(lo, hi), rounded to float. */
void tu_fill_uniform(tu_rng *rng, float *p, size_t n, double lo, double hi);

/* ---------------------------------------------------------------------------------------------
 * Sentinels. Inputs get TU_SENTINEL_IN in the gaps between strided rows: a quiet NaN, so a
 * kernel that reads a gap poisons its row and the comparison catches it. Outputs are
 * pre-filled with TU_SENTINEL_OUT (another NaN payload) and checked bit for bit afterwards.
 * ------------------------------------------------------------------------------------------- */
#define TU_SENTINEL_IN_BITS UINT32_C(0x7FC1D1D1)
#define TU_SENTINEL_OUT_BITS UINT32_C(0x7FC0BEEF)

float tu_float_from_bits(uint32_t bits);
uint32_t tu_float_bits(float f);
void tu_fill_bits(float *p, size_t n, uint32_t bits);
/* Number of elements of p[0..n) whose bits differ from `bits`; prints the first few. */
size_t tu_count_not_bits(const float *p, size_t n, uint32_t bits, const char *what);

/* Sentinels of any storage type: `size` is 2, 4 or 8 bytes; the 16-bit patterns are NaN both
 * as binary16 and as bfloat16. `out` picks the output pattern, else the input one. */
void tu_fill_sentinel(void *p, size_t n, size_t size, int out);
size_t tu_count_not_sentinel(const void *p, size_t n, size_t size, int out, const char *what);
size_t tu_count_gap_not_sentinel(const void *p, size_t rows, size_t cols, size_t stride,
                                 size_t size, int out, const char *what);
/* Bytes of one x / y element, and of one gamma / beta / mean / rstd element. */
size_t tu_dtype_size(clnorm_dtype t);
size_t tu_param_size(clnorm_dtype t);
/* Element i of a tensor of type t (x / y storage) as double, and the other way (through
 * float, then the library's own conversion, which test_convert checks: fine for making test
 * inputs, not an exactly rounded oracle). */
double tu_load(clnorm_dtype t, const void *p, size_t i);
void tu_store(clnorm_dtype t, void *p, size_t i, double v);

/* Elements a strided tensor spans: (rows - 1) * stride + cols, 0 when rows is 0. */
size_t tu_extent(size_t rows, size_t cols, size_t stride);
/* Effective stride of a desc (0 means cols). */
size_t tu_x_stride(const clnorm_desc *d);
size_t tu_y_stride(const clnorm_desc *d);
/* Allocates n floats (callers add TU_PAD for a tail of sentinels), all set to `bits`.
 * Never returns NULL (fails the test instead). */
float *tu_alloc_filled(size_t n, uint32_t bits);
/* Elements between rows (columns cols..stride-1 of rows 0..rows-2) that lost their bits. */
size_t tu_count_gap_changes(const float *p, size_t rows, size_t cols, size_t stride,
                            uint32_t bits, const char *what);
/* Strided random N(offset, scale^2) matrix with TU_SENTINEL_IN in the gaps. */
float *tu_make_input(tu_rng *rng, size_t rows, size_t cols, size_t stride, double offset,
                     double scale);

/* ---------------------------------------------------------------------------------------------
 * float64 reference, independent of src/ref: plain two-pass in double on the float32 inputs.
 * y is dense (rows x cols) unless y_stride says otherwise; mean is not written for RMS.
 * gamma / beta follow desc->flags (NULL is also taken as absent). mean / rstd may be NULL.
 * ------------------------------------------------------------------------------------------- */
void tu_ref64(const clnorm_desc *desc, const float *x, const float *gamma, const float *beta,
              double *y, size_t y_stride, double *mean, double *rstd);

/* ---------------------------------------------------------------------------------------------
 * Comparison: |got - want| <= atol + rtol * |want| per element; NaN must meet NaN, +-Inf must
 * meet the same Inf. Both sides are rows x cols with their own strides. Returns the number of
 * mismatches and prints the first few (row, col, got, want) with `what` in front.
 * ------------------------------------------------------------------------------------------- */
size_t tu_cmp_f64(const float *got, size_t got_stride, const double *want, size_t want_stride,
                  size_t rows, size_t cols, double atol, double rtol, const char *what);
size_t tu_cmp_f32(const float *got, size_t got_stride, const float *want, size_t want_stride,
                  size_t rows, size_t cols, double atol, double rtol, const char *what);
/* Largest |got - want| over finite pairs (NaN pattern not looked at). */
double tu_max_abs_diff(const float *got, size_t got_stride, const double *want,
                       size_t want_stride, size_t rows, size_t cols);
/* Number of elements whose bits differ (exact equality, sign of zero and NaN payload
 * included). */
size_t tu_cmp_bits(const float *got, const float *want, size_t n, const char *what);

/* ---------------------------------------------------------------------------------------------
 * OpenCL helpers (the test fails on any OpenCL error).
 * ------------------------------------------------------------------------------------------- */
/* A buffer of n floats holding `init` (n floats) or, when init is NULL, `bits` everywhere. */
cl_mem tu_buffer(cl_context context, cl_command_queue queue, const float *init, size_t n,
                 uint32_t bits);
/* Blocking read of n floats. */
void tu_read(cl_command_queue queue, cl_mem mem, float *dst, size_t n);

/* True when ctx runs on an OpenCL device (device-strategy tests skip otherwise). */
int tu_has_device(const clnorm_ctx *ctx);
/* The strategies every device test runs: each is compiled and tested on every device, whether
 * clnorm would choose it there or not. */
#define TU_NUM_STRATEGIES 4
extern const clnorm_strategy tu_strategies[TU_NUM_STRATEGIES];
/* Rows at least this long may exceed the subgroup strategy's register capacity (it then
 * answers CLNORM_UNSUPPORTED); shorter ones must always be taken. */
#define TU_SUBGROUP_ALWAYS_COLS 256

/* Creates a plan, failing the test (with clnorm_last_error) unless it succeeds. */
clnorm_plan *tu_plan(clnorm_ctx *ctx, const clnorm_desc *desc, clnorm_strategy strategy);
/* As tu_plan, but returns NULL when the strategy legitimately cannot take the shape: the
 * subgroup strategy saying CLNORM_UNSUPPORTED for rows longer than TU_SUBGROUP_ALWAYS_COLS. */
clnorm_plan *tu_plan_if(clnorm_ctx *ctx, const clnorm_desc *desc, clnorm_strategy strategy);

/* ---------------------------------------------------------------------------------------------
 * Layer-1 runner. Puts every tensor in its own cl_mem at the given element offset, with
 * `TU_PAD` sentinels before (the offset region) and after it, runs clnorm_forward, waits on
 * the returned event and reads everything back. Fails the test when:
 *   - clnorm_forward does not return CLNORM_OK, or its event does not complete;
 *   - any element outside y's rows (offset region, gaps, tail) or outside mean/rstd changed;
 *   - x, gamma or beta changed (not in place).
 * Results go to y (the plan's y_stride layout, tu_extent elements; gaps hold whatever the
 * device left, already checked), mean and rstd (rows each; pass NULL when the plan has no
 * stats, mean NULL for RMS).
 * ------------------------------------------------------------------------------------------- */
#define TU_PAD 13 /* odd, so nothing lines up with a vector width by accident */

typedef struct {
    size_t x_off, y_off, g_off, b_off, m_off, r_off; /* element offsets inside each cl_mem */
    int in_place;       /* y is x's cl_mem (x_off used for both) */
    int explicit_queue; /* pass clnorm_get_queue(ctx) rather than NULL */
} tu_launch;

void tu_forward_cl(clnorm_ctx *ctx, clnorm_plan *plan, const tu_launch *launch, const float *x,
                   const float *gamma, const float *beta, float *y, float *mean, float *rstd);
/* The same for any storage type: x / y hold tu_dtype_size(dtype) bytes per element, gamma,
 * beta, mean and rstd tu_param_size(dtype). */
void tu_forward_cl_any(clnorm_ctx *ctx, clnorm_plan *plan, const tu_launch *launch,
                       const void *x, const void *gamma, const void *beta, void *y, void *mean,
                       void *rstd);

/* A launch with distinct non-zero offsets everywhere. */
tu_launch tu_launch_offsets(void);

/* Golden data directory: $CLNORM_GOLDEN_DIR, else the build-time default when compiled in. */
const char *tu_golden_dir(void);

#endif /* CLNORM_TEST_UTIL_H */
