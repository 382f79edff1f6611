/*
 * cli_group.c - GroupNorm's part of `clnorm run` and `clnorm grad`. The tensors keep
 * PyTorch's shapes: X is (N, C, *spatial) in NCHW or (N, *spatial, C) in NHWC, gamma and
 * beta (C,), mean and rstd (N, G); the description is the library's (rows N, cols C,
 * spatial the product of the spatial dims), so the slot machinery of cli_problem.c serves
 * GroupNorm unchanged.
 */
#include "cli_group.h"

#include "cli_args.h"
#include "cli_tensor.h"

#include <stdint.h>
#include <string.h>

const char cli_group_opts_help[] =
    "  --groups G        GroupNorm (torch.nn.functional.group_norm): X is (N, C,\n"
    "                    *spatial), each sample normalized over each of G groups of\n"
    "                    C / G channels; gamma and beta are (C,), mean and rstd (N, G).\n"
    "                    Excludes --residual, --rms and --axes\n"
    "  --layout L        with --groups: nchw (default, X is (N, C, *spatial)) or nhwc\n"
    "                    (channels last, X is (N, *spatial, C))\n"
    "  --silu            with --groups: y = silu(z) = z * sigmoid(z) of the normalized\n"
    "                    z = xhat * gamma + beta (GroupNorm + SiLU); with --scale /\n"
    "                    --shift of the modulated z * (1 + scale[b]) + shift[b]\n";

int cli_group_check_options(const cli_norm_opts *o)
{
    if (o->groups_text == NULL) {
        /* Without --groups these would be silently ignored: refuse them instead. */
        if (o->layout_text != NULL) {
            cli_error("--layout needs --groups: only GroupNorm has a channel layout");
            return -1;
        }
        if (o->silu) {
            cli_error("--silu needs --groups: the fused SiLU is GroupNorm's");
            return -1;
        }
        return 0;
    }
    if (o->residual != NULL) {
        cli_error("--groups and --residual exclude each other: GroupNorm has no residual add");
        return -1;
    }
    if (o->rms) {
        cli_error("--groups and --rms exclude each other: GroupNorm subtracts the mean");
        return -1;
    }
    if (o->axes_text != NULL) {
        cli_error("--groups and --axes exclude each other: GroupNorm's dims follow from "
                  "--layout");
        return -1;
    }
    return 0;
}

int cli_group_parse(const cli_norm_opts *o, size_t *groups, clnorm_layout *layout)
{
    if (cli_parse_size("groups", o->groups_text, 0, SIZE_MAX, groups) != 0)
        return -1;
    if (*groups == 0) {
        cli_error("--groups 0: GroupNorm needs at least one group");
        return -1;
    }
    *layout = CLNORM_NCHW;
    if (o->layout_text == NULL || strcmp(o->layout_text, "nchw") == 0)
        return 0;
    if (strcmp(o->layout_text, "nhwc") == 0) {
        *layout = CLNORM_NHWC;
        return 0;
    }
    cli_error("--layout: '%s' is not nchw or nhwc", o->layout_text);
    return -1;
}

int cli_group_geometry(const cli_norm_opts *o, size_t groups, clnorm_layout layout,
                       cli_problem *p, size_t *rows, size_t *cols, size_t *spatial)
{
    const npy_array *x = &p->x.arr;
    const char *lname = layout == CLNORM_NHWC ? "nhwc" : "nchw";
    char shape_s[CLI_SHAPE_CHARS];
    int i;

    cli_shape_string(x->ndim, x->shape, shape_s, sizeof shape_s);
    if (x->ndim < 2) {
        cli_error("input %s has shape %s: --groups needs %s with at least 2 dims", o->input,
                  shape_s, layout == CLNORM_NHWC ? "(N, *spatial, C)" : "(N, C, *spatial)");
        return -1;
    }
    p->channel_dim = layout == CLNORM_NHWC ? x->ndim - 1 : 1;
    *rows = x->shape[0];
    *cols = x->shape[p->channel_dim];
    *spatial = 1;
    for (i = 1; i < x->ndim; i++) {
        if (i == p->channel_dim)
            continue;
        if (x->shape[i] == 0) {
            /* the library's spatial 0 means 1: an empty spatial dim cannot be described */
            cli_error("input %s has shape %s: a spatial dim is 0 (--layout %s)", o->input,
                      shape_s, lname);
            return -1;
        }
        if (*spatial > SIZE_MAX / x->shape[i]) {
            cli_error("input %s has shape %s: its spatial dims overflow size_t", o->input,
                      shape_s);
            return -1;
        }
        *spatial *= x->shape[i];
    }
    if (*cols == 0) {
        cli_error("input %s has shape %s: no channels (C = 0 with --layout %s)", o->input,
                  shape_s, lname);
        return -1;
    }
    if (*cols % groups != 0) {
        cli_error("--groups %zu does not divide the %zu channels of input %s (shape %s, "
                  "--layout %s)",
                  groups, *cols, o->input, shape_s, lname);
        return -1;
    }
    p->group_stats[0] = *rows;
    p->group_stats[1] = groups;
    return 0;
}
