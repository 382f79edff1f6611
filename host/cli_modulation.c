/*
 * cli_modulation.c - the per-sample modulation's part of `clnorm run` and `clnorm grad`. The
 * library sees a sample as rows / B consecutive rows (desc.samples = B); X of shape
 * (B, T..., C...) normalized over its last K dims is exactly that when B is X's first dim,
 * so the tool takes the samples from it and needs no option of its own for B.
 */
#include "cli_modulation.h"

#include "cli_args.h"
#include "cli_tensor.h"

const char cli_modulation_opts_help[] =
    "  --scale SCALE.npy per-sample modulation (conditional LayerNorm, DiT's adaLN):\n"
    "                    y = z * (1 + scale[b]) + shift[b], z = xhat * gamma + beta,\n"
    "                    for the rows of sample b. SCALE is (B, C): B is X's first dim\n"
    "                    (the samples), C the product of the normalized dims\n"
    "                    (flattened); float32 values (float64 with --dtype f64). Not\n"
    "                    with --groups\n"
    "  --shift SHIFT.npy the per-sample shift, (B, C) like SCALE; either may be given\n"
    "                    alone\n";

int cli_modulation_check_options(const cli_norm_opts *o)
{
    if (o->groups_text != NULL && (o->scale != NULL || o->shift != NULL)) {
        cli_error("--groups and --%s exclude each other: the per-sample modulation is for "
                  "LayerNorm and RMSNorm (and their --residual add)",
                  o->scale != NULL ? "scale" : "shift");
        return -1;
    }
    return 0;
}

int cli_modulation_load(const cli_norm_opts *o, cli_problem *p)
{
    const npy_array *x = &p->x.arr;
    if (o->scale == NULL && o->shift == NULL)
        return 0;
    if (p->lead < 1) {
        /* With no dim left of the normalized ones there is no sample axis to modulate by:
         * guessing B = 1 would hide a wrong --axes. */
        char shape_s[CLI_SHAPE_CHARS];
        cli_shape_string(x->ndim, x->shape, shape_s, sizeof shape_s);
        cli_error("--%s needs the samples as X's first dim, but input %s (shape %s) is "
                  "normalized over all %d of its dims (--axes)",
                  o->scale != NULL ? "scale" : "shift", o->input, shape_s, p->axes);
        return -1;
    }
    p->mod_shape[0] = x->shape[0];
    p->mod_shape[1] = p->desc.cols;
    p->desc.samples = x->shape[0];
    if (o->scale != NULL)
        p->desc.flags |= CLNORM_SCALE;
    if (o->shift != NULL)
        p->desc.flags |= CLNORM_SHIFT;
    if (o->scale != NULL &&
        cli_problem_load_param(p, o->input, CLNORM_ARG_SCALE, "scale", o->scale, &p->scale) != 0)
        return -1;
    if (o->shift != NULL &&
        cli_problem_load_param(p, o->input, CLNORM_ARG_SHIFT, "shift", o->shift, &p->shift) != 0)
        return -1;
    return 0;
}
