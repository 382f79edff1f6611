/*
 * cli_modulation.h - per-sample modulation (--scale, --shift: conditional LayerNorm, FiLM,
 * DiT's adaLN) in `clnorm run` and `clnorm grad`: its option rules and help, and its (B, C)
 * geometry read off the input: B is X's first dim (the samples), C the product of the
 * normalized dims, which the modulation sees flattened.
 */
#ifndef CLNORM_CLI_MODULATION_H
#define CLNORM_CLI_MODULATION_H

#include "cli_problem.h"

/* The help lines of --scale and --shift. */
extern const char cli_modulation_opts_help[];

/* --scale or --shift with --groups (the modulation is the row kinds'). 0 ok; -1 error
 * printed (a usage error). */
int cli_modulation_check_options(const cli_norm_opts *o);

/* With --scale and/or --shift: sets the description's CLNORM_SCALE / CLNORM_SHIFT and samples
 * (X's first dim) and p->mod_shape, then loads S and H, which must be (B, C), converted to
 * the parameter type. Refuses an input with no dim before the normalized ones (no samples).
 * Without either option it does nothing. 0 ok; -1 error printed (a file error). */
int cli_modulation_load(const cli_norm_opts *o, cli_problem *p);

#endif /* CLNORM_CLI_MODULATION_H */
