/*
 * wrappers.c - the 0.1 entry points (clnorm_forward, clnorm_backward, their host twins and
 * the reference's), each a list of named arguments handed to the generic execute calls. NULL
 * arguments are absent slots; the backward's mask must agree with the outputs given.
 */
#include "internal.h"

#include <stdint.h>

#define MEM(slot, m, off) {CLNORM_ARG_##slot, (m), (off)}
#define PTR(slot, p) {CLNORM_ARG_##slot, (void *)(uintptr_t)(p)}
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

clnorm_status clnorm_forward(clnorm_plan *plan, cl_mem x, size_t x_off, cl_mem y, size_t y_off,
                             cl_mem gamma, size_t g_off, cl_mem beta, size_t b_off, cl_mem mean,
                             size_t m_off, cl_mem rstd, size_t r_off, cl_command_queue queue,
                             cl_uint nwait, const cl_event *wait, cl_event *event)
{
    const clnorm_arg args[] = {MEM(X, x, x_off),         MEM(Y, y, y_off),
                               MEM(GAMMA, gamma, g_off), MEM(BETA, beta, b_off),
                               MEM(MEAN, mean, m_off),   MEM(RSTD, rstd, r_off)};
    return clnorm_execute(plan, CLNORM_FORWARD, args, COUNT(args), queue, nwait, wait, event);
}

/* The mask and the outputs given must say the same (dx, which has no elements in an empty
 * batch, may then be left out). */
static clnorm_status check_mask(clnorm_ctx *ctx, const clnorm_desc *d, unsigned mask,
                                const void *dx, const void *dgamma, const void *dbeta)
{
    const unsigned known = CLNORM_GRAD_X | CLNORM_GRAD_GAMMA | CLNORM_GRAD_BETA;
    RETURN_IF((mask & ~known) != 0, ctx, CLNORM_INVALID_ARGUMENT,
              "mask = 0x%x has bits other than CLNORM_GRAD_X | CLNORM_GRAD_GAMMA | "
              "CLNORM_GRAD_BETA",
              mask);
    RETURN_IF(d && d->rows > 0 && !(mask & CLNORM_GRAD_X) != !dx, ctx, CLNORM_INVALID_ARGUMENT,
              dx ? "dx is given but the mask has no CLNORM_GRAD_X"
                 : "dx is NULL but the mask asks for CLNORM_GRAD_X");
    RETURN_IF(!(mask & CLNORM_GRAD_GAMMA) != !dgamma, ctx, CLNORM_INVALID_ARGUMENT,
              dgamma ? "dgamma is given but the mask has no CLNORM_GRAD_GAMMA"
                     : "dgamma is NULL but the mask asks for CLNORM_GRAD_GAMMA");
    RETURN_IF(!(mask & CLNORM_GRAD_BETA) != !dbeta, ctx, CLNORM_INVALID_ARGUMENT,
              dbeta ? "dbeta is given but the mask has no CLNORM_GRAD_BETA"
                    : "dbeta is NULL but the mask asks for CLNORM_GRAD_BETA");
    return CLNORM_OK;
}

clnorm_status clnorm_backward(clnorm_plan *plan, unsigned mask, cl_mem x, size_t x_off,
                              cl_mem dy, size_t dy_off, cl_mem mean, size_t m_off, cl_mem rstd,
                              size_t r_off, cl_mem gamma, size_t g_off, cl_mem dx, size_t dx_off,
                              cl_mem dgamma, size_t dg_off, cl_mem dbeta, size_t db_off,
                              cl_command_queue queue, cl_uint nwait, const cl_event *wait,
                              cl_event *event)
{
    if (!plan)
        return CLNORM_INVALID_ARGUMENT;
    clnorm_clear_error(plan->ctx);
    TRY(check_mask(plan->ctx, &plan->desc, mask, dx, dgamma, dbeta));
    const clnorm_arg args[] = {MEM(X, x, x_off),          MEM(DY, dy, dy_off),
                               MEM(MEAN, mean, m_off),    MEM(RSTD, rstd, r_off),
                               MEM(GAMMA, gamma, g_off),  MEM(DX, dx, dx_off),
                               MEM(DGAMMA, dgamma, dg_off), MEM(DBETA, dbeta, db_off)};
    return clnorm_execute(plan, CLNORM_BACKWARD, args, COUNT(args), queue, nwait, wait, event);
}

clnorm_status clnorm_forward_host(clnorm_plan *plan, const void *x, void *y, const void *gamma,
                                  const void *beta, void *mean, void *rstd)
{
    const clnorm_host_arg args[] = {PTR(X, x),        PTR(Y, y),       PTR(GAMMA, gamma),
                                    PTR(BETA, beta),  PTR(MEAN, mean), PTR(RSTD, rstd)};
    return clnorm_execute_host(plan, CLNORM_FORWARD, args, COUNT(args));
}

clnorm_status clnorm_backward_host(clnorm_plan *plan, unsigned mask, const void *x,
                                   const void *dy, const void *mean, const void *rstd,
                                   const void *gamma, void *dx, void *dgamma, void *dbeta)
{
    if (!plan)
        return CLNORM_INVALID_ARGUMENT;
    clnorm_clear_error(plan->ctx);
    TRY(check_mask(plan->ctx, &plan->desc, mask, dx, dgamma, dbeta));
    const clnorm_host_arg args[] = {PTR(X, x),       PTR(DY, dy),         PTR(MEAN, mean),
                                    PTR(RSTD, rstd), PTR(GAMMA, gamma),   PTR(DX, dx),
                                    PTR(DGAMMA, dgamma), PTR(DBETA, dbeta)};
    return clnorm_execute_host(plan, CLNORM_BACKWARD, args, COUNT(args));
}

clnorm_status clnorm_ref_forward(const clnorm_desc *desc, const void *x, void *y,
                                 const void *gamma, const void *beta, void *mean, void *rstd)
{
    const clnorm_host_arg args[] = {PTR(X, x),        PTR(Y, y),       PTR(GAMMA, gamma),
                                    PTR(BETA, beta),  PTR(MEAN, mean), PTR(RSTD, rstd)};
    return clnorm_ref_execute(desc, CLNORM_FORWARD, args, COUNT(args));
}

clnorm_status clnorm_ref_backward(const clnorm_desc *desc, unsigned mask, const void *x,
                                  const void *dy, const void *mean, const void *rstd,
                                  const void *gamma, void *dx, void *dgamma, void *dbeta)
{
    TRY(check_mask(NULL, desc, mask, dx, dgamma, dbeta));
    const clnorm_host_arg args[] = {PTR(X, x),       PTR(DY, dy),         PTR(MEAN, mean),
                                    PTR(RSTD, rstd), PTR(GAMMA, gamma),   PTR(DX, dx),
                                    PTR(DGAMMA, dgamma), PTR(DBETA, dbeta)};
    return clnorm_ref_execute(desc, CLNORM_BACKWARD, args, COUNT(args));
}
