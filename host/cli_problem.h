/*
 * cli_problem.h - what `clnorm run` and `clnorm grad` share: their common options, the
 * normalization problem made from them (the input, residual and parameters loaded, checked and
 * converted to the storage, residual and parameter types, and the description), and the
 * options that name a file for an argument slot.
 */
#ifndef CLNORM_CLI_PROBLEM_H
#define CLNORM_CLI_PROBLEM_H

#include "cli_engine.h"
#include "cli_tensor.h"

#include <clnorm.h>

#include <stddef.h>

/* The options common to run and grad (NULL / 0: not given). */
typedef struct {
    const char *input, *residual, *gamma, *beta, *eps_text, *axes_text, *dtype_text, *device;
    const char *groups_text, *layout_text; /* GroupNorm (cli_group.h) */
    const char *scale, *shift;             /* per-sample modulation (cli_modulation.h) */
    const char *mean_input, *rstd_input;   /* precomputed statistics (cli_global_stats.h) */
    int rms, cpu, silu;
} cli_norm_opts;

/* The operation the options choose: GroupNorm (--groups), else LayerNorm or RMSNorm (--rms),
 * with the residual added first when --residual is given. */
clnorm_kind cli_norm_kind(const cli_norm_opts *o);

/* The rules between the common options that need no file (GroupNorm's with the others). Run
 * before the commands check their slot options, so that the message names the real
 * conflict. 0 ok; -1 error printed (a usage error). */
int cli_norm_check_options(const cli_norm_opts *o);

/* The help lines of the common options after --input (--residual ... --cpu). */
extern const char cli_norm_opts_help[];

typedef struct {
    cli_tensor x;        /* data in the storage type */
    cli_tensor residual; /* data in the residual's type (the storage, or float32 with
                            CLNORM_RESIDUAL_F32); NULL when not given */
    const char *residual_path;
    cli_tensor gamma; /* data in the parameter type; NULL when not given */
    cli_tensor beta;
    cli_tensor scale, shift;          /* the same (--scale, --shift), (B, C) */
    cli_tensor mean_input, rstd_input; /* the same (--mean-input, --rstd-input) */
    clnorm_desc desc; /* kind, dtype, rows, cols, eps; NO_GAMMA / NO_BETA / RESIDUAL_F32;
                         GroupNorm's groups, spatial, layout and SILU; SCALE / SHIFT and
                         samples; USE_GLOBAL_STATS */
    size_t mod_shape[2]; /* (B, C): the shape of scale, shift and their gradients (B: X's
                            first dim, or for GroupNorm the --scale / --shift file's) */
    /* The row kinds: */
    int lead;         /* x's leading dims, the shape of mean and rstd: x.arr.shape[0 .. lead) */
    int axes;         /* x's normalized dims, the shape of gamma: x.arr.shape[lead .. ndim) */
    /* CLNORM_GROUP: */
    int channel_dim;        /* x's dim of the channels, the shape of gamma: 1 (NCHW) or the
                               last (NHWC) */
    size_t group_stats[2];  /* (N, G): the shape of mean and rstd */
} cli_problem;

/* Parses the option values (exit code CLI_EXIT_USAGE when bad), then loads and checks the
 * input, the residual, the parameters, the modulation and the precomputed statistics
 * (CLI_EXIT_FAIL when bad). The residual has x's shape
 * and either x's .npy type (converted as x is) or the storage's own; a float32 residual with
 * f16 or bf16 storage stays float32 (CLNORM_RESIDUAL_F32). Returns CLI_EXIT_OK or the exit code,
 * the error printed; *p may be given to cli_problem_free on every path. */
int cli_problem_load(const cli_norm_opts *o, cli_problem *p);

/* Loads a tensor that must have x's shape (dy), converted to the storage type. 0 ok; -1
 * error printed (t may be given to cli_tensor_free then). */
int cli_problem_load_like_x(const cli_problem *p, const char *input_path, const char *what,
                            const char *path, cli_tensor *t);

/* Loads a parameter-typed input of a slot (gamma, beta, scale, shift, or the mean / rstd the
 * forward or backward reads) that must have the slot's shape (cli_problem_slot_shape),
 * converted to the parameter type. 0 ok; -1 error printed. */
int cli_problem_load_param(const cli_problem *p, const char *input_path, clnorm_arg_slot slot,
                           const char *what, const char *path, cli_tensor *t);

/* The same for a file already loaded into t (cli_tensor_load): its shape checked, its values
 * converted. 0 ok; -1 error printed. */
int cli_problem_check_param(const cli_problem *p, const char *input_path, clnorm_arg_slot slot,
                            const char *what, const char *path, cli_tensor *t);

/* Loads a tensor that must have the residual's shape and kind (dsum): R's .npy type or the
 * residual's own, converted to the residual's type. 0 ok; -1 error printed. */
int cli_problem_load_like_residual(const cli_problem *p, const char *what, const char *path,
                                   cli_tensor *t);

void cli_problem_free(cli_problem *p);

/* The shape of a slot's file: x's for the row tensors, x's leading dims for the statistics,
 * its normalized dims for the parameters and their gradients, (B, C) for the modulation and
 * its gradients; for GroupNorm (N, G) for the statistics and (C,) for the parameters. */
void cli_problem_slot_shape(const cli_problem *p, clnorm_arg_slot slot, int *ndim,
                            const size_t **shape);

/* ---- one execution, slot by slot ---- */

/* The host arguments of one execution, by slot: inputs the caller owns, and outputs
 * allocated here in the type and extent the op table gives the slot (clnorm_slot_query). The
 * commands name slots and never the operation: what the kind needs follows from the table. */
typedef struct {
    clnorm_desc desc;
    clnorm_direction dir;
    clnorm_host_arg args[CLNORM_ARG_SLOT_COUNT];
    size_t nargs;
    void *out[CLNORM_ARG_SLOT_COUNT];              /* the outputs allocated here, by slot */
    clnorm_slot_info info[CLNORM_ARG_SLOT_COUNT]; /* of the outputs, by slot */
} cli_call;

/* An empty call of desc (a description cli_engine_open accepted) in dir. */
void cli_call_init(cli_call *c, const clnorm_desc *desc, clnorm_direction dir);

/* Adds an input; NULL data (an option not given) adds nothing. */
void cli_call_input(cli_call *c, clnorm_arg_slot slot, const void *data);

/* Adds an input only when the operation reads the slot in the call's direction (the op table
 * says; e.g. GroupNorm's backward reads beta only through its SiLU): a file the user gives
 * for the forward's sake is then not refused by the library. */
void cli_call_input_if_read(cli_call *c, clnorm_arg_slot slot, const void *data);

/* Adds an input only when the operation requires the slot in the call's direction: for an
 * optional input the library reads only alongside some output, which the caller decides. */
void cli_call_input_if_required(cli_call *c, clnorm_arg_slot slot, const void *data);

/* Allocates and adds an output. 0 ok; -1 error printed. */
int cli_call_output(cli_call *c, clnorm_arg_slot slot);

/* Allocates the outputs the operation requires that were not asked for (LayerNorm's mean when
 * only the rstd is saved): computed, then dropped. 0 ok; -1 error printed. */
int cli_call_required_outputs(cli_call *c);

/* The buffer of an output; NULL when it was not added. */
const void *cli_call_result(const cli_call *c, clnorm_arg_slot slot);

/* Frees the outputs; the call may then be initialized again. */
void cli_call_free(cli_call *c);

/* Runs the call on the engine (opened on the call's description). 0 ok; -1 error printed. */
int cli_call_execute(const cli_call *c, cli_engine *e);

/* ---- options that name the file of an argument slot ---- */

typedef struct {
    const char *name;    /* without the leading "--" */
    clnorm_arg_slot slot;
    size_t offset;       /* of the path (a const char *) in the command's options struct */
    const char *refusal; /* completes "--NAME ..." when the operation has no such slot */
} cli_slot_option;

/* The path option t holds in the options struct opts; NULL when not given. */
const char *cli_slot_path(const cli_slot_option *t, const void *opts);

/* Refuses a given option whose slot the operation `kind` does not take in `dir` (the op
 * table says which). 0 ok; -1 error printed. */
int cli_check_slot_options(const cli_slot_option *t, size_t n, const void *opts,
                           clnorm_kind kind, clnorm_direction dir);

/* Fails when two given options of the table name the same file. 0 ok; -1 error printed. */
int cli_check_distinct_slots(const cli_slot_option *t, size_t n, const void *opts);

/* Adds an output to the call for every given option of the table. 0 ok; -1 error printed. */
int cli_call_slot_outputs(cli_call *c, const cli_slot_option *t, size_t n, const void *opts);

/* Writes the call's outputs named by the given options of the table, all or nothing, each in
 * its slot's shape (cli_problem_slot_shape) and type. 0 ok; -1 error printed. */
int cli_write_slot_outputs(const cli_problem *p, const cli_call *c, const cli_slot_option *t,
                           size_t n, const void *opts);

/* A malloc of n elements of `size` bytes, never zero-sized (so every pointer handed to the
 * library is valid); NULL when out of memory (nothing printed). */
void *cli_alloc(size_t n, size_t size);

#endif /* CLNORM_CLI_PROBLEM_H */
