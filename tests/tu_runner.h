/*
 * tu_runner.h - the one runner of the suites: a call of any operation in any direction, over
 * argument slots, through layer 1 (cl_mem), layer 2 (host pointers) or the CPU reference.
 * Every tensor lives in a buffer of its own at an element offset, with sentinels before it
 * (the offset region) and TU_PAD sentinels after it. After the call every element of every
 * buffer that is not an element of an output (its rows x cols, not the gaps between strided
 * rows) must hold what it held before, bit for bit: inputs unchanged, frames and gaps
 * untouched. The layouts come from clnorm_slot_query, so the runner knows nothing about any
 * operation. The test fails on any status but CLNORM_OK, on an event that does not complete,
 * or on any stray write.
 */
#ifndef CLNORM_TU_RUNNER_H
#define CLNORM_TU_RUNNER_H

#include "test_util.h"

/* How one call is placed. */
typedef struct {
    size_t off[CLNORM_ARG_SLOT_COUNT]; /* element offset of each slot inside its cl_mem */
    /* In place: alias[out] = 1 + the input slot whose buffer, offset and data the output
     * shares (0: a buffer of its own). */
    unsigned char alias[CLNORM_ARG_SLOT_COUNT];
    int explicit_queue; /* pass clnorm_get_queue(ctx) rather than NULL */
    int v01;            /* through clnorm_forward / clnorm_backward (and their host and
                           reference twins) rather than the generic execute calls */
    unsigned mask;      /* v01 backward: the mask; 0 takes it from the outputs given */
} tu_launch;

/* Distinct non-zero offsets for every slot, no aliasing, generic calls. */
tu_launch tu_launch_offsets(void);
/* The 0.1 calls at distinct non-zero offsets; in place: y of x (forward), dx of dy
 * (backward), the pairs the 0.1 API documents. */
tu_launch tu_launch_v01(clnorm_direction dir, int in_place);
/* Output `out` in place of input `in`. */
void tu_launch_in_place(tu_launch *l, clnorm_arg_slot out, clnorm_arg_slot in);

/* The tensors of one call by slot: NULL where the slot is not given. An input holds its
 * elements in the slot's layout (clnorm_slot_query's extent, gaps included: they should hold
 * input sentinels); an output is where the result goes: all `extent` elements are written,
 * the gaps with what the buffer held there (output sentinels, or the input's gaps in place).
 * An output in place of an input takes its data from the input's entry. */
typedef struct {
    void *p[CLNORM_ARG_SLOT_COUNT];
} tu_args;

/* Layer 1 on `plan`, waiting on the returned event. */
void tu_run_cl(clnorm_ctx *ctx, clnorm_plan *plan, clnorm_direction dir, const tu_launch *l,
               const tu_args *a);
/* Layer 2 on `plan`, or the reference on `desc` when plan is NULL (ctx may then be NULL).
 * Offsets are not used; aliasing is. */
void tu_run_host(clnorm_ctx *ctx, clnorm_plan *plan, const clnorm_desc *desc,
                 clnorm_direction dir, const tu_launch *l, const tu_args *a);

/* Shorthands of the forward and backward of LayerNorm / RMSNorm over the 0.1 argument
 * lists, through tu_run_cl with l->v01 set. The forward leaves out what the plan does not
 * take (mean of RMSNorm, statistics without CLNORM_SAVE_STATS, gamma / beta with NO_GAMMA /
 * NO_BETA). A NULL backward input is not given; the backward's outputs follow the mask. */
void tu_forward_cl(clnorm_ctx *ctx, clnorm_plan *plan, const tu_launch *l, const void *x,
                   const void *gamma, const void *beta, void *y, void *mean, void *rstd);
void tu_backward_cl(clnorm_ctx *ctx, clnorm_plan *plan, unsigned mask, const tu_launch *l,
                    const void *x, const void *dy, const void *mean, const void *rstd,
                    const void *gamma, void *dx, void *dgamma, void *dbeta);

/* "add_layer_norm forward split f16 3x7 strides 7/9/7/7 flags 0x4": for messages. */
void tu_call_name(const clnorm_desc *d, clnorm_direction dir, clnorm_strategy s, char *buf,
                  size_t size);

/* The slot infos of a description in a direction (the test fails on an error). */
void tu_slot_infos(const clnorm_desc *d, clnorm_direction dir,
                   clnorm_slot_info info[CLNORM_ARG_SLOT_COUNT]);

/* The row tensors of a description's operation in a direction (TU_SLOT bits): the slots laid
 * out as rows x cols of the description whatever its shape, found on a probe of 3 x 5 (a
 * one-row or one-element description makes parameters and statistics look alike). */
unsigned tu_row_slots(const clnorm_desc *d, clnorm_direction dir);

#endif
