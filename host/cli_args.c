/*
 * cli_args.c - the clnorm tool's error reporter and option parsing helpers.
 */
#include "cli_args.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cli_error(const char *fmt, ...)
{
    va_list ap;
    fflush(stdout);
    fputs("clnorm: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
}

int cli_is_flag(const char *arg, const char *name)
{
    return arg[0] == '-' && arg[1] == '-' && strcmp(arg + 2, name) == 0;
}

int cli_is_help(const char *arg)
{
    return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0;
}

int cli_take_value(int argc, char **argv, int *i, const char *name, const char *cmd,
                   const char **value)
{
    const char *arg = argv[*i];
    size_t n = strlen(name);
    if (arg[0] != '-' || arg[1] != '-' || strncmp(arg + 2, name, n) != 0)
        return 0;
    if (arg[2 + n] == '=') {
        *value = arg + 3 + n;
        if (**value == '\0') {
            cli_error("--%s needs a value (see 'clnorm %s --help')", name, cmd);
            return -1;
        }
        return 1;
    }
    if (arg[2 + n] != '\0')
        return 0;
    /* "--name value"; a following option is not taken as the value ("--name=--x" is). */
    if (*i + 1 >= argc || (argv[*i + 1][0] == '-' && argv[*i + 1][1] == '-') ||
        argv[*i + 1][0] == '\0') {
        cli_error("--%s needs a value (see 'clnorm %s --help')", name, cmd);
        return -1;
    }
    *i += 1;
    *value = argv[*i];
    return 1;
}

int cli_set_once(const char **slot, const char *value, const char *name)
{
    if (*slot != NULL) {
        cli_error("--%s given more than once", name);
        return -1;
    }
    *slot = value;
    return 0;
}

void cli_unknown_argument(const char *cmd, const char *arg)
{
    if (arg[0] == '-')
        cli_error("unknown option '%s' for '%s' (see 'clnorm %s --help')", arg, cmd, cmd);
    else
        cli_error("unexpected argument '%s' for '%s' (see 'clnorm %s --help')", arg, cmd, cmd);
}

int cli_parse_options(int argc, char **argv, const char *cmd, const cli_option *table,
                      size_t n, void *opts)
{
    int i;
    for (i = 0; i < argc; i++) {
        const char *arg = argv[i];
        size_t k;
        int matched = 0;
        if (cli_is_help(arg))
            return 0;
        for (k = 0; k < n && !matched; k++) {
            char *slot = (char *)opts + table[k].offset;
            if (table[k].flag) {
                if (!cli_is_flag(arg, table[k].name))
                    continue;
                if (*(int *)(void *)slot) {
                    cli_error("%s given more than once", arg);
                    return -1;
                }
                *(int *)(void *)slot = 1;
                matched = 1;
            } else {
                const char *value = NULL;
                int r = cli_take_value(argc, argv, &i, table[k].name, cmd, &value);
                if (r < 0)
                    return -1;
                if (r == 0)
                    continue;
                if (cli_set_once((const char **)(void *)slot, value, table[k].name) != 0)
                    return -1;
                matched = 1;
            }
        }
        if (!matched) {
            cli_unknown_argument(cmd, arg);
            return -1;
        }
    }
    return 1;
}

int cli_parse_size(const char *name, const char *text, size_t min, size_t max, size_t *out)
{
    size_t v = 0;
    const char *p = text;
    if (*p == '\0')
        goto bad;
    for (; *p; p++) {
        size_t d;
        if (*p < '0' || *p > '9')
            goto bad;
        d = (size_t)(*p - '0');
        if (v > (SIZE_MAX - d) / 10) {
            v = SIZE_MAX;
            while (p[1] >= '0' && p[1] <= '9')
                p++;
            if (p[1] != '\0')
                goto bad;
            break;
        }
        v = v * 10 + d;
    }
    if (v < min || v > max) {
        cli_error("--%s %s is out of range (%zu .. %zu)", name, text, min, max);
        return -1;
    }
    *out = v;
    return 0;
bad:
    cli_error("--%s: '%s' is not a whole number", name, text);
    return -1;
}

int cli_parse_eps(const char *text, double *out)
{
    char *end = NULL;
    double d;
    errno = 0;
    d = strtod(text, &end);
    if (end == text || *end != '\0') {
        cli_error("--eps: '%s' is not a number", text);
        return -1;
    }
    if (!isfinite(d) || !(d > 0.0)) {
        cli_error("--eps %s: eps must be finite and > 0", text);
        return -1;
    }
    *out = d;
    return 0;
}

int cli_check_eps_float(const char *text, double eps, const char *dtype_name)
{
    if (eps > (double)FLT_MAX) {
        cli_error("--eps %s: eps is beyond float32 range, the arithmetic of %s storage", text,
                  dtype_name);
        return -1;
    }
    if (!((float)eps > 0.0f)) {
        cli_error("--eps %s: eps rounds to 0 in float32, the arithmetic of %s storage", text,
                  dtype_name);
        return -1;
    }
    return 0;
}
