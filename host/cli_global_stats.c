/*
 * cli_global_stats.c - the precomputed statistics' part of `clnorm run` and `clnorm grad`.
 * They are the library's MEAN and RSTD slots read as inputs (CLNORM_USE_GLOBAL_STATS), so the
 * files load and are shape-checked exactly as grad's saved --mean/--rstd are; what differs
 * is only which options may be given together, which is all this file decides.
 */
#include "cli_global_stats.h"

#include "cli_args.h"

const char cli_global_stats_opts_help[] =
    "  --mean-input MEAN.npy, --rstd-input RSTD.npy\n"
    "                    precomputed statistics (oneDNN's use_global_stats), used as\n"
    "                    given instead of computed from X: y = (x - mean) * rstd *\n"
    "                    gamma + beta; the backward treats them as constants (dx =\n"
    "                    rstd * dy * gamma). The shape of X's leading dims, with\n"
    "                    --groups G (N, G), as 'run --mean --rstd' writes them; both,\n"
    "                    or with --rms --rstd-input alone. Not with --mean/--rstd\n";

/* The first given of the two statistics options, as "--name", for messages. */
static const char *first_given(const char *mean, const char *mean_name, const char *rstd_name)
{
    return mean != NULL ? mean_name : rstd_name;
}

int cli_global_stats_check_options(const cli_norm_opts *o)
{
    const int mean = o->mean_input != NULL, rstd = o->rstd_input != NULL;
    if (!mean && !rstd)
        return 0;
    if (o->rms && mean) {
        cli_error("--mean-input cannot be used with --rms: RMSNorm has no mean "
                  "(--rstd-input alone is allowed)");
        return -1;
    }
    /* LayerNorm reads both: one alone would leave the other silently computed from X. */
    if (!o->rms && mean != rstd) {
        cli_error("%s needs %s: LayerNorm's precomputed statistics are given both (with "
                  "--rms --rstd-input alone)",
                  mean ? "--mean-input" : "--rstd-input", mean ? "--rstd-input" : "--mean-input");
        return -1;
    }
    return 0;
}

int cli_global_stats_exclude(const cli_norm_opts *o, const char *mean, const char *rstd,
                             const char *why)
{
    if ((o->mean_input == NULL && o->rstd_input == NULL) || (mean == NULL && rstd == NULL))
        return 0;
    cli_error("%s and %s exclude each other: %s",
              first_given(o->mean_input, "--mean-input", "--rstd-input"),
              first_given(mean, "--mean", "--rstd"), why);
    return -1;
}

int cli_global_stats_load(const cli_norm_opts *o, cli_problem *p)
{
    if (o->mean_input == NULL && o->rstd_input == NULL)
        return 0;
    p->desc.flags |= CLNORM_USE_GLOBAL_STATS;
    if (o->mean_input != NULL &&
        cli_problem_load_param(p, o->input, CLNORM_ARG_MEAN, "mean-input", o->mean_input,
                               &p->mean_input) != 0)
        return -1;
    if (o->rstd_input != NULL &&
        cli_problem_load_param(p, o->input, CLNORM_ARG_RSTD, "rstd-input", o->rstd_input,
                               &p->rstd_input) != 0)
        return -1;
    return 0;
}
