/* RMSNorm (Zhang & Sennrich, 2019): y = x / sqrt(mean(x^2) + eps) * gamma (+ beta). No mean,
 * no shift; the saved statistic is rstd alone. A member of the row-normalization family. */
#include "row_norm.h"

const clnorm_op clnorm_op_rms_norm =
    ROW_NORM_OP(CLNORM_RMS, CLNORM_RMS, "rms_norm", "y = x / sqrt(mean(x^2) + eps) * gamma (+ beta) over each row",
                0, 0, clnorm_row_norm_chain);
