/*
 * golden_oracle.h - the float64 gradients of a golden case (golden_cases.h) from statistics
 * it is handed, written from the formulas rather than from src/ref: test_backward_golden's
 * yardstick once the statistics are rounded to float32 as the API takes them (which alone
 * moves the exact answer), and itself held to the PyTorch golden from the exact statistics.
 *
 * Row kinds: xhat = (v - mean) * rstd (v = x + residual), z = xhat * gamma + beta, and for
 * the rows of sample b y = z * (1 + scale[b]) + shift[b], so the normalization's backward
 * (tu_oracle_backward) sees dz = dy * (1 + scale[b]); dscale[b] = sum over b's rows of
 * dy * z, dshift[b] = sum of dy. With precomputed statistics (cond.global_stats) mean and
 * rstd are constants: dx = rstd * dz * gamma (+ dsum), dgamma = sum of dz * xhat, dbeta =
 * sum of dz.
 * GroupNorm: per (batch entry, group) xhat = (x - mean) * rstd, z = xhat * gamma_c + beta_c,
 * u = z * (1 + scale[b, c]) + shift[b, c] for entry n of sample b = n / (N / B) (u = z
 * without a modulation), du = dy (silu: dy * s(u) * (1 + u * (1 - s(u))), s the sigmoid),
 * dz = du * (1 + scale[b, c]), g = dz * gamma_c, dx = rstd * (g - mean(g) - xhat *
 * mean(g * xhat)) over the group, dgamma_c = sum of dz * xhat, dbeta_c = sum of dz,
 * dscale[b, c] = sum over sample b's entries and positions of du * z, dshift[b, c] of du.
 */
#ifndef CLNORM_GOLDEN_ORACLE_H
#define CLNORM_GOLDEN_ORACLE_H

#include "golden_cases.h"

/* The gradient slots of a backward: dx, dgamma, dbeta, dscale, dshift. */
extern const clnorm_arg_slot golden_grads[];
extern const size_t golden_grad_slots;

/* Elements of gradient slot s of the case, dense. */
size_t golden_grad_count(const golden_data *g, clnorm_arg_slot s);

/* Every gradient of golden_grads from the statistics mean (NULL for RMSNorm) and rstd (rows
 * x groups), freshly allocated into out[slot] (the caller frees them), dense, row tensors
 * in the case's layout; those the case has no parameter for are computed all the same. */
void golden_oracle(const golden_data *g, const double *mean, const double *rstd,
                   double *out[CLNORM_ARG_SLOT_COUNT]);

#endif
