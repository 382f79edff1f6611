/*
 * cli_group.h - GroupNorm (--groups) in `clnorm run` and `clnorm grad`: its option rules and
 * help, and the problem's geometry read off the input's shape (N, C, *spatial) or
 * (N, *spatial, C).
 */
#ifndef CLNORM_CLI_GROUP_H
#define CLNORM_CLI_GROUP_H

#include "cli_problem.h"

#include <clnorm.h>

#include <stddef.h>

/* The help lines of --groups, --layout and --silu. */
extern const char cli_group_opts_help[];

/* --layout or --silu without --groups; --groups with --residual, --rms or --axes. 0 ok; -1
 * error printed (a usage error). */
int cli_group_check_options(const cli_norm_opts *o);

/* Parses --groups (at least 1) and --layout (nchw, the default, or nhwc). 0 ok; -1 error
 * printed (a usage error). */
int cli_group_parse(const cli_norm_opts *o, size_t *groups, clnorm_layout *layout);

/* The geometry of the loaded input p->x in `layout`: the batch N (*rows), the channels C
 * (*cols) and the positions per channel (*spatial); sets p->channel_dim and p->group_stats
 * (N, G). Refuses an input of fewer than 2 dims, without channels or positions, and G not
 * dividing C. 0 ok; -1 error printed (a file error). */
int cli_group_geometry(const cli_norm_opts *o, size_t groups, clnorm_layout layout,
                       cli_problem *p, size_t *rows, size_t *cols, size_t *spatial);

#endif /* CLNORM_CLI_GROUP_H */
