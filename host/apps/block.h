/*
 * block.h - one transformer block, pre-LN or post-LN, optionally adaLN-conditioned:
 *   pre-LN:   h = x + Attn(LN1(x));   y = h + FFN(LN2(h))
 *   post-LN:  h = LN1(x + Attn(x));   y = LN2(h + FFN(h))
 *   Attn: qkv = x W_qkv^T + b_qkv (q, k, v stacked in that order), heads split along d,
 *         softmax(q k^T / sqrt(d / heads)) (optionally causal), times v, then W_o^T + b_o
 *   FFN:  GELU(x W_1^T + b_1) W_2^T + b_2 (exact erf GELU)
 *   conditioned (pre-LN): [shift1, scale1, shift2, scale2] = c W_mod^T + b_mod, and
 *         LNk(.) becomes LNk(.) * (1 + scale_k[b]) + shift_k[b] (DiT's adaLN)
 * LN eps 1e-5. On the device every residual add is fused into the norm that follows it
 * (clnorm's add + LayerNorm, whose sum output carries a pre-LN block's stream), unless the
 * unfused variant is asked for (a separate add kernel, then LayerNorm: for comparison).
 */
#ifndef CLNORM_BLOCK_H
#define CLNORM_BLOCK_H

#include "app_cl.h"
#include "app_common.h"

#define BLOCK_EPS 1e-5

typedef struct {
    size_t B, T, d, heads, f, k; /* k: the condition's width, 0 when not conditioned */
    int post_ln, causal;
    app_tensor x;                                  /* (B, T, d) */
    app_tensor w_qkv, b_qkv, w_o, b_o;             /* (3d, d), (3d), (d, d), (d) */
    app_tensor w_1, b_1, w_2, b_2;                 /* (f, d), (f), (d, f), (d) */
    app_tensor ln1_g, ln1_b, ln2_g, ln2_b;         /* (d) */
    app_tensor cond, w_mod, b_mod;                 /* (B, k), (4d, k), (4d) when k > 0 */
} block_model;

void block_model_free(block_model *m);

/* Runs the block on the device into y (B, T, d); `fused` chooses the fused add + norm. With
 * timing, one untimed run, then timing->runs timed ones. 0 ok; -1 printed. */
int block_device(app_env *env, const block_model *m, int fused, float *y, app_timing *timing);

/* The same block on the CPU in float64: plain loops, and clnorm's CPU reference (F64) for the
 * norms and the modulation. 0 ok; -1 printed. */
int block_cpu(const block_model *m, double *y);

#endif /* CLNORM_BLOCK_H */
