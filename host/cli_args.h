/*
 * cli_args.h - shared pieces of the clnorm command-line tool: exit codes, the one-line error
 * reporter, and option parsing helpers.
 */
#ifndef CLNORM_CLI_ARGS_H
#define CLNORM_CLI_ARGS_H

#include <stddef.h>

enum {
    CLI_EXIT_OK = 0,
    CLI_EXIT_FAIL = 1, /* bad input file, library or I/O failure, failed check */
    CLI_EXIT_USAGE = 2 /* unknown command or option, missing or bad option value */
};

/* Prints "clnorm: <message>\n" on stderr: the tool's one line per failure. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 1, 2)))
#endif
void cli_error(const char *fmt, ...);

/* 1 when arg is "--name" exactly (a flag without a value). */
int cli_is_flag(const char *arg, const char *name);

/* 1 when arg is "-h" or "--help". */
int cli_is_help(const char *arg);

/* Matches argv[*i] against the option "--name" that takes a value, given as "--name=value" or
 * "--name value". Returns 1 (matched: *value set, *i advanced past a separate value), 0 (not
 * this option), or -1 (matched but the value is missing; the error is printed). cmd names the
 * subcommand for the error message. */
int cli_take_value(int argc, char **argv, int *i, const char *name, const char *cmd,
                   const char **value);

/* Stores value in *slot unless the option was already given. 0 ok; -1 error printed. */
int cli_set_once(const char **slot, const char *value, const char *name);

/* Unknown option or stray argument of a subcommand: prints the error with a usage hint. */
void cli_unknown_argument(const char *cmd, const char *arg);

/* One option of a command's table for cli_parse_options. */
typedef struct {
    const char *name; /* without the leading "--" */
    int flag;         /* 1: a flag without a value (an int slot set to 1); 0: takes a value
                         (a const char * slot) */
    size_t offset;    /* offset of the slot in the command's options struct */
} cli_option;

/* Parses argv (the arguments after the command's name) by the table into the options struct
 * at `opts`, which the caller has zeroed. Options are given once each; a value as "--name v"
 * or "--name=v". Returns 1 parsed; 0 when -h/--help was met (nothing printed: the caller
 * prints its usage); -1 on an unknown option, stray argument, missing value or repeated
 * option (the error is printed). cmd names the command for the messages. */
int cli_parse_options(int argc, char **argv, const char *cmd, const cli_option *table,
                      size_t n, void *opts);

/* Parses a decimal integer in [min, max] (digits only, no sign, no suffix). 0 ok; -1 error
 * printed ("--name: ..."). */
int cli_parse_size(const char *name, const char *text, size_t min, size_t max, size_t *out);

/* Parses eps: a number strtod reads entirely, finite and > 0, kept as a double (float64
 * storage computes with it as given, as torch does). 0 ok; -1 error printed. */
int cli_parse_eps(const char *text, double *out);
/* For storage whose arithmetic is float32 (every --dtype but f64): eps must stay finite and
 * > 0 once rounded to float, as the library asks (clnorm_desc.eps). text: the flag's value,
 * for the message. 0 ok; -1 error printed. */
int cli_check_eps_float(const char *text, double eps, const char *dtype_name);

#endif /* CLNORM_CLI_ARGS_H */
