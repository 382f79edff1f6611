/*
 * cli_global_stats.h - precomputed statistics (--mean-input, --rstd-input: oneDNN's
 * use_global_stats) in `clnorm run` and `clnorm grad`: their option rules and help, and
 * loading them. They have the shape `run --mean/--rstd` writes (X's leading dims).
 */
#ifndef CLNORM_CLI_GLOBAL_STATS_H
#define CLNORM_CLI_GLOBAL_STATS_H

#include "cli_problem.h"

/* The help lines of --mean-input and --rstd-input. */
extern const char cli_global_stats_opts_help[];

/* The rules among the common options: --mean-input not with --rms; with
 * LayerNorm both or neither. 0 ok; -1 error printed (a usage error). */
int cli_global_stats_check_options(const cli_norm_opts *o);

/* Refuses the precomputed statistics together with a command's own statistics options
 * `mean` and `rstd` (NULL: not given); `why` completes the message. 0 ok; -1 error printed
 * (a usage error). */
int cli_global_stats_exclude(const cli_norm_opts *o, const char *mean, const char *rstd,
                             const char *why);

/* With --mean-input / --rstd-input: sets CLNORM_USE_GLOBAL_STATS and loads the files, which
 * must have the statistics' shape, converted to the parameter type. Without them it does
 * nothing. 0 ok; -1 error printed (a file error). */
int cli_global_stats_load(const cli_norm_opts *o, cli_problem *p);

#endif /* CLNORM_CLI_GLOBAL_STATS_H */
