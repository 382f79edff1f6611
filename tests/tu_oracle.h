/*
 * tu_oracle.h - float64 oracles of the row-normalization family, written independently of
 * src/ref (plain two-pass statistics in double, no shift, no scaling): the yardstick of the
 * numerics targets and of the reference itself. Dense rows x cols double arrays throughout.
 *
 *   v = x (+ residual),  mean = sum(v) / cols (0 for RMS),
 *   rstd = 1 / sqrt(sum((v - mean)^2) / cols + eps),  xhat = (v - mean) * rstd,
 *   y = xhat * gamma + beta,  sum output = v;
 *   backward: g = dy * gamma,
 *   dv = rstd * (g - mean(g) - xhat * mean(g * xhat))   (RMS: without the mean(g) term),
 *   dx = dv + dsum, dgamma = sum over rows of dy * xhat, dbeta = sum over rows of dy.
 */
#ifndef CLNORM_TU_ORACLE_H
#define CLNORM_TU_ORACLE_H

#include "test_util.h"

/* Any NULL pointer: absent (residual 0, gamma 1, beta 0, dsum 0), or not wanted (outputs). */
typedef struct {
    int rms;           /* RMSNorm: no mean */
    size_t rows, cols;
    double eps;
    const double *x, *residual, *gamma, *beta;
} tu_oracle_in;

void tu_oracle_forward(const tu_oracle_in *in, double *y, double *sum, double *mean,
                       double *rstd);
/* mean / rstd: the saved statistics, or both NULL to use the exact ones of v. */
void tu_oracle_backward(const tu_oracle_in *in, const double *dy, const double *mean,
                        const double *rstd, const double *dsum, double *dx, double *dgamma,
                        double *dbeta);

/* Whether an operation normalizes without a mean (RMSNorm kinds), from the op table. */
int tu_kind_is_rms(clnorm_kind kind);

/* A strided tensor of any storage type widened to a dense double array (exact); NULL for
 * NULL. The caller frees it. */
double *tu_widen(clnorm_dtype t, const void *p, size_t rows, size_t cols, size_t stride);

/* The float32 forward oracle of the suites that only need y (and the statistics) of LayerNorm
 * or RMSNorm: desc's kind, eps and x_stride; gamma / beta follow desc->flags (NULL is also
 * taken as absent). y has y_stride (0 means cols); mean / rstd may be NULL. */
void tu_ref64(const clnorm_desc *desc, const float *x, const float *gamma, const float *beta,
              double *y, size_t y_stride, double *mean, double *rstd);

#endif
