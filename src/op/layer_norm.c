/* LayerNorm (Ba et al., 2016) over the last dims: y = (x - mean) / sqrt(var + eps) * gamma +
 * beta, biased variance, eps inside the root, gamma and beta each optional. A member of the
 * row-normalization family (row_norm.h): kernels, slots and reference are the family's. */
#include "row_norm.h"

const clnorm_op clnorm_op_layer_norm =
    ROW_NORM_OP(CLNORM_LAYER, CLNORM_LAYER, "layer_norm",
                "y = (x - mean) / sqrt(var + eps) * gamma + beta over each row", 1, 0,
                clnorm_row_norm_chain);
