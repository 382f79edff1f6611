/*
 * The transformer's "Add & Norm", fused: s = x + residual, y = norm(s), with s written when
 * the SUM slot is given (the pre-norm stream of a pre-LN block; it may be the residual
 * itself, in place, as vLLM's fused_add_rms_norm does). The sum is normalized as computed,
 * never rounded first; with CLNORM_RESIDUAL_F32 the residual and the sum are float32 while x
 * and y are f16/bf16 (FlashAttention's residual_in_fp32). The backward gives dx, which is
 * also dresidual: dnorm(dy) + dsum. Members of the row-normalization family (row_norm.h): the
 * kernels are the family's, built with -DCLNORM_RESIDUAL.
 */
#include "row_norm.h"

const clnorm_op clnorm_op_add_layer_norm =
    ROW_NORM_OP(CLNORM_ADD_LAYER, CLNORM_LAYER, "add_layer_norm",
                "s = x + residual, y = LayerNorm(s); s written when given", 1, 1,
                clnorm_add_norm_chain);

const clnorm_op clnorm_op_add_rms_norm =
    ROW_NORM_OP(CLNORM_ADD_RMS, CLNORM_RMS, "add_rms_norm",
                "s = x + residual, y = RMSNorm(s); s written when given", 0, 1,
                clnorm_add_norm_chain);
