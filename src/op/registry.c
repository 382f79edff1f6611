/* The registry: every operation, indexed by its kind. Adding an operation adds a line here
 * (and its kind to clnorm.h); tests, bench and CLI iterate clnorm_op_count(). */
#include "op.h"

static const clnorm_op *const ops[] = {
    [CLNORM_LAYER] = &clnorm_op_layer_norm,
    [CLNORM_RMS] = &clnorm_op_rms_norm,
    [CLNORM_ADD_LAYER] = &clnorm_op_add_layer_norm,
    [CLNORM_ADD_RMS] = &clnorm_op_add_rms_norm,
    [CLNORM_GROUP] = &clnorm_op_group_norm,
};

const clnorm_op *clnorm_op_of(clnorm_kind kind)
{
    const size_t k = (size_t)kind;
    return k < sizeof ops / sizeof ops[0] ? ops[k] : NULL;
}
