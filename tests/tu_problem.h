/*
 * tu_problem.h - a problem of any operation in either direction, made from the slot infos
 * alone: random inputs in every slot's layout, the reference's answer (clnorm_ref_execute),
 * and the checks of another answer per storage type. Nothing here names an operation, so a
 * newly registered one gets problems without new code.
 *
 * Inputs by slot: x and residual offset + scale * N(0,1) (tu_data), gamma N(1, 0.5^2), beta
 * N(0, 0.5^2), every other input N(0,1); a backward input that the forward writes (the saved
 * statistics) comes from the reference forward of the same data. Gaps of strided inputs hold
 * input sentinels, gaps of the reference's outputs output sentinels.
 *
 * Tolerances of an output, by its element type:
 *   f16 / bf16: within 1 ulp of the reference's value (ulp of the type at that value) + 1e-5;
 *   f32:        normwise 1e-5 (max abs error / max(1, max |ref|)); forward outputs also
 *               per element 2e-5 abs + 2e-5 rel;
 *   f64:        normwise 1e-12.
 */
#ifndef CLNORM_TU_PROBLEM_H
#define CLNORM_TU_PROBLEM_H

#include "tu_runner.h"

#define TU_SLOT(s) (1u << (unsigned)(s))
/* Every OPTIONAL slot given. */
#define TU_ALL_OPTIONAL (~0u)

/* The distributions of the row inputs. */
typedef struct {
    double x_offset, x_scale;
    double r_offset, r_scale; /* residual */
} tu_data;

/* x N(0.3, 1), residual N(-0.2, 1). */
tu_data tu_data_default(void);

typedef struct {
    clnorm_desc desc;
    clnorm_direction dir;
    clnorm_slot_info info[CLNORM_ARG_SLOT_COUNT];
    unsigned given; /* slots passed: every REQUIRED one, the OPTIONAL ones asked for */
    tu_args in;     /* inputs (NULL for outputs and slots not given) */
    tu_args ref;    /* the reference's outputs (NULL for inputs and slots not given) */
    tu_data data;
    uint64_t seed;
} tu_problem;

/* A problem of desc in dir, with the OPTIONAL slots of `optional` (TU_SLOT bits;
 * TU_ALL_OPTIONAL for all) given; data NULL: tu_data_default(). */
void tu_problem_make(tu_problem *p, const clnorm_desc *desc, clnorm_direction dir,
                     unsigned optional, uint64_t seed, const tu_data *data);
/* The same for a description made of its parts (the backward's gets CLNORM_WITH_BACKWARD),
 * every OPTIONAL slot given; data NULL: tu_data_default(). */
void tu_problem_make_rows(tu_problem *p, clnorm_direction dir, clnorm_dtype dtype,
                          clnorm_kind kind, size_t rows, size_t cols, size_t x_stride,
                          size_t y_stride, unsigned flags, uint64_t seed, const tu_data *data);
/* Recomputes the saved statistics of a backward problem and the reference's answer, after
 * the caller changed inputs. */
void tu_problem_reference(tu_problem *p);
/* The backward's reference again from statistics recomputed from x (mean and rstd left out of
 * the reference call, still given to the runs): the answer where the library corrects saved
 * float32 statistics whose mean's rounding would reach xhat (|mean| * rstd above 16). */
void tu_problem_reference_from_x(tu_problem *p);
void tu_problem_free(tu_problem *p);

/* The outputs given (TU_SLOT bits). */
unsigned tu_problem_outputs(const tu_problem *p);
/* The output slots of a backward mask (CLNORM_GRAD_*). */
unsigned tu_grad_slots(unsigned mask);

/* Checks the outputs in `outputs` (0: all given) of `got` against the reference; returns
 * the number of failures (printed). */
size_t tu_problem_compare(const tu_problem *p, const tu_args *got, unsigned outputs,
                          const char *who);
/* The same, failing the test on a mismatch. */
void tu_problem_check(const tu_problem *p, const tu_args *got, unsigned outputs,
                      const char *who);

/* Runs the problem with the outputs of `outputs` (0: all given) through layer 1 on `plan`,
 * or through the host layer (plan NULL: the reference), and checks the answer. When `out` is
 * not NULL it receives the outputs (malloc'ed, slot layout; free with tu_args_free). */
void tu_problem_run_cl(clnorm_ctx *ctx, const tu_problem *p, clnorm_plan *plan,
                       const tu_launch *l, unsigned outputs, tu_args *out);
void tu_problem_run_host(clnorm_ctx *ctx, const tu_problem *p, clnorm_plan *plan,
                         const tu_launch *l, unsigned outputs, tu_args *out);

/* The same, returning the number of mismatches (printed) instead of failing on them: a sweep
 * goes on and names every failing case. A stray write or a failing call still fails. */
size_t tu_problem_try_cl(clnorm_ctx *ctx, const tu_problem *p, clnorm_plan *plan,
                         const tu_launch *l, unsigned outputs);
size_t tu_problem_try_host(clnorm_ctx *ctx, const tu_problem *p, clnorm_plan *plan,
                           const tu_launch *l, unsigned outputs);

/* Output buffers (output sentinels) for the outputs in `outputs` (0: all given). */
void tu_problem_alloc_outputs(const tu_problem *p, unsigned outputs, tu_args *out);
void tu_args_free(tu_args *a);

#endif
