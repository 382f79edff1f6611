/*
 * lnlstm_cpu.c - the LN-LSTM's check: the same recurrence in float64 on the CPU, from the same
 * float32 weights, with plain loops for the products and nonlinearities and clnorm's CPU
 * reference (layer 3, F64: double in, double accumulation) for the three LayerNorms.
 */
#include "lnlstm.h"

#include <math.h>
#include <stdlib.h>

static double sigmoid_d(double v)
{
    return 1.0 / (1.0 + exp(-v));
}

/* y (rows, cols) = LN(x) * gamma + beta in float64, through clnorm_ref_execute (in place
 * allowed: y may be x). */
static int ref_ln(double *x, double *y, const double *gamma, const double *beta, size_t rows,
                  size_t cols)
{
    clnorm_desc desc;
    clnorm_desc_init(&desc, CLNORM_LAYER, rows, cols);
    desc.dtype = CLNORM_F64;
    desc.eps = LNLSTM_EPS;
    clnorm_host_arg args[] = {{CLNORM_ARG_X, x},
                              {CLNORM_ARG_Y, y},
                              {CLNORM_ARG_GAMMA, (void *)gamma},
                              {CLNORM_ARG_BETA, (void *)beta}};
    clnorm_status st = clnorm_ref_execute(&desc, CLNORM_FORWARD, args, 4);
    if (st != CLNORM_OK) {
        app_error("--check: clnorm_ref_execute: %s", clnorm_status_string(st));
        return -1;
    }
    return 0;
}

/* y (rows, out) = x (rows, in) W^T with W (out, in): the dot products run along contiguous
 * rows of both. */
static void matmul_wt(const double *x, const double *w, double *y, size_t rows, size_t out,
                      size_t in)
{
    for (size_t r = 0; r < rows; r++)
        for (size_t o = 0; o < out; o++) {
            double s = 0.0;
            for (size_t k = 0; k < in; k++)
                s += x[r * in + k] * w[o * in + k];
            y[r * out + o] = s;
        }
}

int lnlstm_cpu(const lnlstm_model *m, double *h_out, double *c_out)
{
    size_t T = m->T, B = m->B, I = m->I, H = m->H, G = 4 * H;
    int rc = -1;
    double *x = app_to_double(&m->x), *w_x = app_to_double(&m->w_x), *w_h = app_to_double(&m->w_h);
    double *b = app_to_double(&m->b), *a1 = app_to_double(&m->alpha1), *b1 = app_to_double(&m->beta1);
    double *a2 = app_to_double(&m->alpha2), *b2 = app_to_double(&m->beta2);
    double *a3 = app_to_double(&m->alpha3), *b3 = app_to_double(&m->beta3);
    double *h = app_to_double(&m->h0), *c = app_to_double(&m->c0);
    double *gx = malloc(B * G * sizeof *gx), *gh = malloc(B * G * sizeof *gh);
    double *lnc = malloc(B * H * sizeof *lnc);
    if (!x || !w_x || !w_h || !b || !a1 || !b1 || !a2 || !b2 || !a3 || !b3 || !h || !c || !gx ||
        !gh || !lnc) {
        app_error("--check: out of memory");
        goto done;
    }
    for (size_t t = 0; t < T; t++) {
        matmul_wt(x + t * B * I, w_x, gx, B, G, I);
        matmul_wt(h, w_h, gh, B, G, H);
        if (ref_ln(gx, gx, a2, b2, B, G) || ref_ln(gh, gh, a1, b1, B, G))
            goto done;
        for (size_t r = 0; r < B; r++)
            for (size_t j = 0; j < H; j++) {
                const double *px = gx + r * G, *ph = gh + r * G;
                double pi = ph[j] + px[j] + b[j];
                double pf = ph[H + j] + px[H + j] + b[H + j];
                double pg = ph[2 * H + j] + px[2 * H + j] + b[2 * H + j];
                double po = ph[3 * H + j] + px[3 * H + j] + b[3 * H + j];
                c[r * H + j] = sigmoid_d(pf) * c[r * H + j] + sigmoid_d(pi) * tanh(pg);
                h[r * H + j] = sigmoid_d(po); /* sigmoid(o) until LN(c) is known */
            }
        if (ref_ln(c, lnc, a3, b3, B, H))
            goto done;
        for (size_t i = 0; i < B * H; i++) {
            h[i] *= tanh(lnc[i]);
            h_out[t * B * H + i] = h[i];
        }
    }
    for (size_t i = 0; i < B * H; i++)
        c_out[i] = c[i];
    rc = 0;
done:
    free(x); free(w_x); free(w_h); free(b); free(a1); free(b1); free(a2); free(b2);
    free(a3); free(b3); free(h); free(c); free(gx); free(gh); free(lnc);
    return rc;
}
