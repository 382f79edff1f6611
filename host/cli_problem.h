/*
 * cli_problem.h - what `clnorm run` and `clnorm grad` share: their common options, and the
 * normalization problem made from them (the input and parameters loaded, checked and
 * converted to the storage and parameter types, and the description).
 */
#ifndef CLNORM_CLI_PROBLEM_H
#define CLNORM_CLI_PROBLEM_H

#include "cli_tensor.h"

#include <clnorm.h>

#include <stddef.h>

/* The options common to run and grad (NULL / 0: not given). */
typedef struct {
    const char *input, *gamma, *beta, *eps_text, *axes_text, *dtype_text, *device;
    int rms, cpu;
} cli_norm_opts;

/* The help lines of the common options after --input (--gamma ... --cpu). */
extern const char cli_norm_opts_help[];

typedef struct {
    cli_tensor x;     /* data in the storage type */
    cli_tensor gamma; /* data in the parameter type; NULL when not given */
    cli_tensor beta;
    clnorm_desc desc; /* kind, dtype, rows, cols, eps; NO_GAMMA / NO_BETA as given */
    int lead;         /* x's leading dims, the shape of mean and rstd: x.arr.shape[0 .. lead) */
    int axes;         /* x's normalized dims, the shape of gamma: x.arr.shape[lead .. ndim) */
} cli_problem;

/* Parses the option values (exit code CLI_EXIT_USAGE when bad), then loads and checks the
 * input and the parameters (CLI_EXIT_FAIL when bad). Returns CLI_EXIT_OK or the exit code,
 * the error printed; *p may be given to cli_problem_free on every path. */
int cli_problem_load(const cli_norm_opts *o, cli_problem *p);

/* Loads a tensor that must have x's shape (dy), converted to the storage type. 0 ok; -1
 * error printed (t may be given to cli_tensor_free then). */
int cli_problem_load_like_x(const cli_problem *p, const char *input_path, const char *what,
                            const char *path, cli_tensor *t);

void cli_problem_free(cli_problem *p);

/* A malloc of n elements of `size` bytes, never zero-sized (so every pointer handed to the
 * library is valid); NULL when out of memory (nothing printed). */
void *cli_alloc(size_t n, size_t size);

#endif /* CLNORM_CLI_PROBLEM_H */
