/*
 * lnlstm.h - the layer-normalized LSTM of Ba, Kiros and Hinton (2016, section 3.1 and the
 * LSTM equations of its appendix), gate order i, f, g, o:
 *   gates_t = LN(W_h h_{t-1}; alpha1, beta1) + LN(W_x x_t; alpha2, beta2) + b      (4H)
 *   c_t = sigmoid(f) * c_{t-1} + sigmoid(i) * tanh(g)
 *   h_t = sigmoid(o) * tanh(LN(c_t; alpha3, beta3))
 * Each LN normalizes one sample's whole vector (4H, or H for c_t), eps 1e-5.
 */
#ifndef CLNORM_LNLSTM_H
#define CLNORM_LNLSTM_H

#include "app_cl.h"
#include "app_common.h"

#define LNLSTM_EPS 1e-5

typedef struct {
    size_t T, B, I, H;
    app_tensor x;                    /* (T, B, I) */
    app_tensor w_x, w_h, b;          /* (4H, I), (4H, H), (4H) */
    app_tensor alpha1, beta1;        /* (4H): LN of W_h h */
    app_tensor alpha2, beta2;        /* (4H): LN of W_x x */
    app_tensor alpha3, beta3;        /* (H): LN of c */
    app_tensor h0, c0;               /* (B, H), zeros when not given */
} lnlstm_model;

void lnlstm_model_free(lnlstm_model *m);

/* Runs the sequence on the device: h_out (T, B, H), c_out (B, H). `fused`: the gates' sum is
 * made by the LayerNorm of W_h h (its per-sample shift), else by the gate kernel. With timing
 * (the env's queue must profile), one untimed run first, then timing->runs timed ones
 * (app_run). 0 ok; -1 printed. */
int lnlstm_device(app_env *env, const lnlstm_model *m, int fused, float *h_out, float *c_out,
                  app_timing *timing);

/* The same recurrence on the CPU in float64: plain loops, and clnorm's CPU reference
 * (clnorm_ref_execute, F64) for the normalizations. 0 ok; -1 printed. */
int lnlstm_cpu(const lnlstm_model *m, double *h_out, double *c_out);

#endif /* CLNORM_LNLSTM_H */
