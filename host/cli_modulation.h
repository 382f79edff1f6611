/*
 * cli_modulation.h - per-sample modulation (--scale, --shift: conditional LayerNorm, FiLM,
 * DiT's adaLN, a diffusion UNet's scale-shift GroupNorm) in `clnorm run` and `clnorm grad`:
 * its help, and its (B, C) geometry. The row kinds read it off the input: B is X's first dim
 * (the samples), C the product of the normalized dims, which the modulation sees flattened.
 * GroupNorm (--groups) reads B off the modulation's file instead: any B dividing the batch N,
 * C the channels.
 */
#ifndef CLNORM_CLI_MODULATION_H
#define CLNORM_CLI_MODULATION_H

#include "cli_problem.h"

/* The help lines of --scale and --shift. */
extern const char cli_modulation_opts_help[];

/* With --scale and/or --shift: sets the description's CLNORM_SCALE / CLNORM_SHIFT, samples
 * and mod_stride and p->mod_shape, then loads S and H, which must be (B, C), converted to the
 * parameter type. The row kinds refuse an input with no dim before the normalized ones (no
 * samples); GroupNorm refuses a first file that is not (B, C) with B dividing N, and a second
 * of another shape. Without either option it does nothing. 0 ok; -1 error printed (a file
 * error). */
int cli_modulation_load(const cli_norm_opts *o, cli_problem *p);

#endif /* CLNORM_CLI_MODULATION_H */
