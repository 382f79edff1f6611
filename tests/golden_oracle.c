/*
 * golden_oracle.c - see golden_oracle.h.
 */
#include "golden_oracle.h"

#include "tu_oracle.h"

#include <math.h>
#include <stdlib.h>

#define SLOTS CLNORM_ARG_SLOT_COUNT

const clnorm_arg_slot golden_grads[] = {CLNORM_ARG_DX, CLNORM_ARG_DGAMMA, CLNORM_ARG_DBETA,
                                        CLNORM_ARG_DSCALE, CLNORM_ARG_DSHIFT};
const size_t golden_grad_slots = sizeof golden_grads / sizeof golden_grads[0];

size_t golden_grad_count(const golden_data *g, clnorm_arg_slot s)
{
    if (s == CLNORM_ARG_DX)
        return golden_row_count(g);
    if (s == CLNORM_ARG_DSCALE || s == CLNORM_ARG_DSHIFT)
        return g->samples * g->cols;
    return g->cols;
}

/* GroupNorm's gradients from the statistics mean / rstd (N x G), in float64: dense row
 * tensors in the case's layout; dscale / dshift (B x C) of a modulated case. With precomputed
 * statistics (global_stats) they are constants: dx = rstd * dz * gamma. */
static void group_oracle(const golden_data *g, const double *mean, const double *rstd,
                         double *out[SLOTS])
{
    const golden_case *gc = g->gc;
    const size_t C = g->cols, HW = g->spatial, G = g->groups, cpg = C / G, len = C * HW;
    const size_t per = g->rows / g->samples; /* batch entries per sample */
    const double *x = g->a[CLNORM_ARG_X], *dy = g->a[CLNORM_ARG_DY];
    const double *gamma = g->a[CLNORM_ARG_GAMMA], *beta = g->a[CLNORM_ARG_BETA];
    const double *scale = g->a[CLNORM_ARG_SCALE], *shift = g->a[CLNORM_ARG_SHIFT];
    double *dx = out[CLNORM_ARG_DX], *dgamma = out[CLNORM_ARG_DGAMMA];
    double *dbeta = out[CLNORM_ARG_DBETA];
    double *dscale = out[CLNORM_ARG_DSCALE], *dshift = out[CLNORM_ARG_DSHIFT];
    for (size_t n = 0; n < g->rows; n++)
        for (size_t k = 0; k < G; k++) {
            const double mu = mean[n * G + k], r = rstd[n * G + k];
            double sg = 0.0, sgx = 0.0;
            for (int pass = 0; pass < 2; pass++)
                for (size_t c = k * cpg; c < (k + 1) * cpg; c++)
                    for (size_t p = 0; p < HW; p++) {
                        const size_t i =
                            n * len + (gc->layout == CLNORM_NHWC ? p * C + c : c * HW + p);
                        const size_t m = (n / per) * C + c; /* sample n / per */
                        const double gam = gamma ? gamma[c] : 1.0, bet = beta ? beta[c] : 0.0;
                        const double ops = scale ? 1.0 + scale[m] : 1.0;
                        const double xh = (x[i] - mu) * r, z = xh * gam + bet;
                        /* u = z * (1 + scale) + shift, y = u or silu(u) */
                        const double u = z * ops + (shift ? shift[m] : 0.0);
                        double du = dy[i];
                        if (gc->silu) {
                            const double sig = 1.0 / (1.0 + exp(-u));
                            du *= sig * (1.0 + u * (1.0 - sig));
                        }
                        const double dz = du * ops;
                        if (pass == 0) {
                            sg += dz * gam;
                            sgx += dz * gam * xh;
                            dgamma[c] += dz * xh;
                            dbeta[c] += dz;
                            dscale[m] += du * z;
                            dshift[m] += du;
                        } else if (gc->cond.global_stats) {
                            dx[i] = r * dz * gam; /* constants: no statistics' terms */
                        } else {
                            const double cnt = (double)(cpg * HW);
                            dx[i] = r * (dz * gam - sg / cnt - xh * sgx / cnt);
                        }
                    }
        }
}

/* The statistics-free part of a row kind with constant statistics: no mean(g) and
 * mean(g * xhat) terms, since nothing flows back into mean and rstd. */
static void const_stats_oracle(const golden_data *g, const double *dz, const double *mean,
                               const double *rstd, double *dx, double *dgamma, double *dbeta)
{
    const size_t rows = g->rows, cols = g->cols;
    const double *x = g->a[CLNORM_ARG_X], *res = g->a[CLNORM_ARG_RESIDUAL];
    const double *gamma = g->a[CLNORM_ARG_GAMMA], *dsum = g->a[CLNORM_ARG_DSUM];
    for (size_t c = 0; c < cols; c++)
        dgamma[c] = dbeta[c] = 0.0;
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++) {
            const size_t i = r * cols + c;
            const double v = x[i] + (res ? res[i] : 0.0);
            const double xh = (v - (mean ? mean[r] : 0.0)) * rstd[r];
            dx[i] = rstd[r] * dz[i] * (gamma ? gamma[c] : 1.0) + (dsum ? dsum[i] : 0.0);
            dgamma[c] += dz[i] * xh;
            dbeta[c] += dz[i];
        }
}

/* A row kind's gradients: dy through the modulation, then the normalization's backward
 * (with or without the statistics' terms); dscale / dshift from z and dy. */
static void row_oracle(const golden_data *g, const double *mean, const double *rstd,
                       double *out[SLOTS])
{
    const golden_case *gc = g->gc;
    const size_t rows = g->rows, cols = g->cols, per = rows / g->samples;
    const double *x = g->a[CLNORM_ARG_X], *res = g->a[CLNORM_ARG_RESIDUAL];
    const double *dy = g->a[CLNORM_ARG_DY], *scale = g->a[CLNORM_ARG_SCALE];
    const double *gamma = g->a[CLNORM_ARG_GAMMA], *beta = g->a[CLNORM_ARG_BETA];
    const int rms = tu_kind_is_rms(gc->kind);
    if (rstd == NULL)
        fail_msg("%s: the oracle needs statistics", gc->name);
    if (rms)
        mean = NULL;
    double *dz = malloc(rows * cols * sizeof *dz + 1);
    assert_non_null(dz);
    double *dscale = out[CLNORM_ARG_DSCALE], *dshift = out[CLNORM_ARG_DSHIFT];
    for (size_t k = 0; k < g->samples * cols; k++)
        dscale[k] = dshift[k] = 0.0;
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++) {
            const size_t i = r * cols + c, m = (r / per) * cols + c; /* sample r / per */
            const double v = x[i] + (res ? res[i] : 0.0);
            const double xh = (v - (mean ? mean[r] : 0.0)) * rstd[r];
            const double z = xh * (gamma ? gamma[c] : 1.0) + (beta ? beta[c] : 0.0);
            dz[i] = dy[i] * (scale ? 1.0 + scale[m] : 1.0);
            dscale[m] += dy[i] * z;
            dshift[m] += dy[i];
        }
    if (gc->cond.global_stats) {
        const_stats_oracle(g, dz, mean, rstd, out[CLNORM_ARG_DX], out[CLNORM_ARG_DGAMMA],
                           out[CLNORM_ARG_DBETA]);
    } else {
        const tu_oracle_in in = {rms, rows, cols, gc->eps, x, res, gamma, NULL};
        tu_oracle_backward(&in, dz, mean, rstd, g->a[CLNORM_ARG_DSUM], out[CLNORM_ARG_DX],
                           out[CLNORM_ARG_DGAMMA], out[CLNORM_ARG_DBETA]);
    }
    free(dz);
}

void golden_oracle(const golden_data *g, const double *mean, const double *rstd,
                   double *out[SLOTS])
{
    for (size_t k = 0; k < golden_grad_slots; k++) {
        /* zeroed: the sums start there */
        out[golden_grads[k]] = calloc(golden_grad_count(g, golden_grads[k]) + 1, sizeof(double));
        assert_non_null(out[golden_grads[k]]);
    }
    if (g->gc->kind == CLNORM_GROUP)
        group_oracle(g, mean, rstd, out);
    else
        row_oracle(g, mean, rstd, out);
}
