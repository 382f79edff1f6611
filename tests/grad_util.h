/*
 * grad_util.h - helpers of the backward and dtype suites (test_backward, test_gradcheck,
 * test_dtypes, test_convert), on top of test_util.h:
 *   - element access for every storage format (F32, F16, BF16, F64), so one helper serves
 *     every dtype: tensors are untyped byte arrays whose format is a clnorm_dtype;
 *   - sentinels per format (a NaN pattern for inputs, another for outputs);
 *   - comparisons: normwise (max abs error / max(1, max |ref|)) and in ulps of the storage
 *     format, both with the NaN / Inf pattern check;
 *   - layer-1 runners for the forward and the backward pass in any dtype, with every tensor in
 *     its own cl_mem at a non-zero offset between sentinels, checking every byte around the
 *     outputs and that the inputs were not touched;
 *   - a float64 backward oracle written independently of src/ref.
 * Implemented in grad_util.c (formats, comparisons, oracle), grad_runner.c (layer-1 runners)
 * and grad_problem.c (problems). Failures are reported through cmocka (print_error +
 * fail_msg).
 */
#ifndef CLNORM_GRAD_UTIL_H
#define CLNORM_GRAD_UTIL_H

#include "test_util.h"

/* ---------------------------------------------------------------------------------------------
 * Formats. A "format" is a clnorm_dtype naming how one element is stored. Storage tensors
 * (x, y, dy, dx) have the plan's dtype; parameters (gamma, beta, mean, rstd, dgamma, dbeta) have
 * gu_param_fmt(dtype): F64 for F64, else F32.
 * ------------------------------------------------------------------------------------------- */
size_t gu_size(clnorm_dtype fmt);
clnorm_dtype gu_param_fmt(clnorm_dtype dtype);
const char *gu_fmt_name(clnorm_dtype fmt);
/* Element i of p read as double (F16 / BF16 decoded by the library's conversions). */
double gu_get(clnorm_dtype fmt, const void *p, size_t i);
/* Stores v at element i: through float for F32 / F16 / BF16 (test data only: double rounding
 * does not matter there). */
void gu_set(clnorm_dtype fmt, void *p, size_t i, double v);
/* The raw bits of element i (zero-extended). */
uint64_t gu_bits(clnorm_dtype fmt, const void *p, size_t i);

/* Sentinel bit patterns: all NaNs, different for inputs and outputs. */
uint64_t gu_sentinel(clnorm_dtype fmt, int output);
/* malloc'ed n elements (+1 byte, never NULL) all holding the sentinel. */
void *gu_alloc_sentinel(clnorm_dtype fmt, size_t n, int output);
/* Elements of p[0..n) whose bits differ from the sentinel; prints the first few. */
size_t gu_count_changed(clnorm_dtype fmt, const void *p, size_t n, int output,
                        const char *what);
/* The same for the gaps between strided rows (columns cols..stride-1 of rows 0..rows-2). */
size_t gu_count_gap_changed(clnorm_dtype fmt, const void *p, size_t rows, size_t cols,
                            size_t stride, int output, const char *what);

/* A strided rows x cols tensor of offset + scale * N(0,1) values rounded to fmt, input
 * sentinels in the gaps. stride 0 means cols. */
void *gu_make_input(tu_rng *rng, clnorm_dtype fmt, size_t rows, size_t cols, size_t stride,
                    double offset, double scale);
/* n values offset + scale * N(0,1) in fmt. */
void *gu_make_vector(tu_rng *rng, clnorm_dtype fmt, size_t n, double offset, double scale);
/* A copy of n elements. */
void *gu_dup(clnorm_dtype fmt, const void *p, size_t n);

/* ---------------------------------------------------------------------------------------------
 * Comparisons. Both sides are rows x cols with their own strides and formats. NaN must meet
 * NaN and an Inf the same Inf. Return the number of failures (pattern mismatches, plus one
 * when the error bound is exceeded) and print the first few.
 * ------------------------------------------------------------------------------------------- */
/* max |got - want| over finite pairs / max(1, max finite |want|) must be <= tol. *err_out (may
 * be NULL) receives that ratio. */
size_t gu_cmp_norm(clnorm_dtype got_fmt, const void *got, size_t got_stride,
                   clnorm_dtype want_fmt, const void *want, size_t want_stride, size_t rows,
                   size_t cols, double tol, double *err_out, const char *what);
/* The unit in the last place of fmt at the stored value p[i] (finite): the spacing of the
 * format's values in the binade of that value (subnormal spacing below the normal range). */
double gu_ulp(clnorm_dtype fmt, const void *p, size_t i);
/* Per element: |got - want| <= ulps * ulp(want) + atol. Same format on both sides. */
size_t gu_cmp_ulp(clnorm_dtype fmt, const void *got, size_t got_stride, const void *want,
                  size_t want_stride, size_t rows, size_t cols, double ulps, double atol,
                  const char *what);
/* Bitwise equality of n elements. */
size_t gu_cmp_exact(clnorm_dtype fmt, const void *got, const void *want, size_t n,
                    const char *what);

/* ---------------------------------------------------------------------------------------------
 * Layer-1 runners (any dtype). Each tensor lives in its own cl_mem at the launch's element
 * offset with TU_PAD sentinels after it; inputs are checked unchanged (bits, frames), outputs'
 * frames and row gaps checked untouched. The test fails on any status but CLNORM_OK, on an
 * event that does not complete, or on any stray write.
 * ------------------------------------------------------------------------------------------- */
/* Forward: as tu_forward_cl for any dtype. y receives tu_extent(rows, cols, y_stride)
 * elements; mean / rstd rows parameters (NULL when not wanted). */
void gu_forward_cl(clnorm_ctx *ctx, clnorm_plan *plan, const tu_launch *launch, const void *x,
                   const void *gamma, const void *beta, void *y, void *mean, void *rstd);

typedef struct {
    size_t x_off, dy_off, m_off, r_off, g_off, dx_off, dg_off, db_off;
    int in_place;       /* dx is dy's cl_mem at dy's offset */
    int explicit_queue; /* pass clnorm_get_queue(ctx) rather than NULL */
} gu_bwd_launch;

/* Distinct non-zero offsets everywhere. */
gu_bwd_launch gu_bwd_offsets(void);

/* Backward through clnorm_backward. Inputs x, dy (strided by the plan's x_stride / y_stride,
 * gaps holding input sentinels), mean (NULL for RMS), rstd, gamma (NULL exactly when the plan
 * has NO_GAMMA). A NULL input is passed as a NULL cl_mem (rows = 0, error paths). Outputs follow
 * the mask: dx (tu_extent(rows, cols, x_stride) elements, in x's layout; the gaps are left as
 * the runner found them: output sentinels, or dy's input sentinels in place), dgamma, dbeta
 * (cols parameters each). */
void gu_backward_cl(clnorm_ctx *ctx, clnorm_plan *plan, unsigned mask,
                    const gu_bwd_launch *launch, const void *x, const void *dy,
                    const void *mean, const void *rstd, const void *gamma, void *dx,
                    void *dgamma, void *dbeta);

/* ---------------------------------------------------------------------------------------------
 * float64 backward oracle, written independently of src/ref (dense rows x cols, double
 * throughout). gamma NULL means 1; mean NULL (RMS) means 0. Any output may be NULL.
 *   xhat = (x - mean) * rstd, g = dy * gamma
 *   dx = rstd * (g - mean(g) - xhat * mean(g * xhat))     (RMS: without the mean(g) term)
 * ------------------------------------------------------------------------------------------- */
void gu_oracle_backward(clnorm_kind kind, size_t rows, size_t cols, const double *x,
                        const double *dy, const double *mean, const double *rstd,
                        const double *gamma, double *dx, double *dgamma, double *dbeta);

/* ---------------------------------------------------------------------------------------------
 * A backward problem in any dtype (grad_problem.c): random inputs, the statistics of the
 * reference forward, the reference backward's gradients, and the checks of a device answer.
 * Tolerances per dtype: F32 normwise 1e-5 (max abs error / max(1, max |ref|)); F64 normwise
 * 1e-12; F16 / BF16 dx within 1 ulp of the reference's value + 1e-5, dgamma / dbeta (float)
 * normwise 1e-5.
 * ------------------------------------------------------------------------------------------- */
typedef struct {
    clnorm_desc desc;      /* the plan's: CLNORM_WITH_BACKWARD plus the asked-for flags */
    void *x, *dy;          /* storage, strided (x_stride / y_stride), input sentinels in gaps */
    void *gamma;           /* parameters; NULL with CLNORM_NO_GAMMA */
    void *mean, *rstd;     /* from clnorm_ref_forward; mean NULL for RMS */
    void *dx_ref;          /* x's layout, output sentinels in the gaps */
    void *dg_ref, *db_ref; /* NULL when the plan has no gamma / no beta */
} gu_bwd_problem;

/* x = x_offset + x_scale * N(0,1), dy = N(0,1), gamma = N(1, 0.5^2). flags: any of
 * CLNORM_NO_GAMMA | CLNORM_NO_BETA (CLNORM_WITH_BACKWARD is added). */
void gu_bwd_make(gu_bwd_problem *p, clnorm_dtype dtype, clnorm_kind kind, size_t rows,
                 size_t cols, size_t x_stride, size_t y_stride, unsigned flags, uint64_t seed,
                 double x_offset, double x_scale);
/* Recomputes the statistics (reference forward) and the reference gradients, after the
 * caller changed x or dy. */
void gu_bwd_reference(gu_bwd_problem *p);
void gu_bwd_free(gu_bwd_problem *p);
/* Every gradient this problem can have (X, and GAMMA / BETA when the plan has them). */
unsigned gu_bwd_full_mask(const gu_bwd_problem *p);
/* Checks the outputs of a run with `mask` (NULL for those not in it) against the reference;
 * fails the test on a mismatch. dx in x's layout. */
void gu_bwd_check(const gu_bwd_problem *p, unsigned mask, const void *dx, const void *dgamma,
                  const void *dbeta, const char *who);
/* Runs the problem through layer 1 (gu_backward_cl) and checks it. The outputs are also
 * returned when the pointers are not NULL (malloc'ed; the caller frees them). */
void gu_bwd_run_cl(clnorm_ctx *ctx, const gu_bwd_problem *p, clnorm_plan *plan, unsigned mask,
                   const gu_bwd_launch *launch, void **dx_out, void **dg_out, void **db_out);
/* Runs the problem through clnorm_backward_host (in place: dx is a copy of dy) and checks it,
 * the untouched gaps of dx, the sentinels after dgamma / dbeta and that no input changed. */
void gu_bwd_run_host(clnorm_ctx *ctx, const gu_bwd_problem *p, clnorm_plan *plan,
                     unsigned mask, int in_place);
/* "row", "workgroup", "split", "auto" or "reference" followed by the problem's shape. */
void gu_bwd_name(const gu_bwd_problem *p, clnorm_strategy s, unsigned mask, char *buf,
                 size_t size);

/* ---------------------------------------------------------------------------------------------
 * A forward problem in any dtype (grad_problem.c): random inputs and the reference forward's
 * answer. Checks: F16 / BF16 y within 1 ulp of the reference's value + 1e-5, mean / rstd
 * normwise 1e-5; F32 everything normwise 1e-5; F64 everything normwise 1e-12.
 * ------------------------------------------------------------------------------------------- */
typedef struct {
    clnorm_desc desc;            /* the plan's */
    void *x, *gamma, *beta;      /* x strided with input sentinels in the gaps */
    void *y_ref;                 /* dense rows x cols */
    void *mean_ref, *rstd_ref;   /* rows each (mean_ref unused for RMS) */
} gu_fwd_problem;

/* x = N(0.3, 1), gamma = N(1, 0.5^2), beta = N(0, 0.5^2); flags as the plan's. */
void gu_fwd_make(gu_fwd_problem *p, clnorm_dtype dtype, clnorm_kind kind, size_t rows,
                 size_t cols, size_t x_stride, size_t y_stride, unsigned flags, uint64_t seed);
/* Recomputes the reference answer (after the caller changed x). */
void gu_fwd_reference(gu_fwd_problem *p);
void gu_fwd_free(gu_fwd_problem *p);
/* Checks y (y_stride layout), mean and rstd (NULL when the plan has no stats). */
void gu_fwd_check(const gu_fwd_problem *p, const void *y, const void *mean, const void *rstd,
                  const char *who);
/* Through layer 1 (gu_forward_cl) / the host layer, checked; y returned when y_out is not
 * NULL (y_stride layout, malloc'ed). */
void gu_fwd_run_cl(clnorm_ctx *ctx, const gu_fwd_problem *p, clnorm_plan *plan,
                   const tu_launch *launch, void **y_out);
void gu_fwd_run_host(clnorm_ctx *ctx, const gu_fwd_problem *p, clnorm_plan *plan, int in_place,
                     void **y_out);

/* A context for a whole test binary (group setup): NULL when none can be made, so device
 * tests skip. Prints the device. */
clnorm_ctx *gu_context(const char *suite);

#endif /* CLNORM_GRAD_UTIL_H */
