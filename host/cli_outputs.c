/*
 * cli_outputs.c - all-or-nothing writing of a command's .npy outputs (two phases: write
 * temporaries with npy_save, then rename them all into place).
 */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "cli_outputs.h"

#include "cli_args.h"
#include "npy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef _WIN32
#include <unistd.h>
#define CLI_PID() ((long)getpid())
#else
#include <process.h>
#define CLI_PID() ((long)_getpid())
#endif

/* npy_save names the file it was given; report the user's path instead of the temporary. */
static void report_save_error(const char *path, const char *tmp, const char *err)
{
    size_t n = strlen(tmp);
    if (strncmp(err, tmp, n) == 0)
        cli_error("%s%s", path, err + n);
    else
        cli_error("%s", err);
}

int cli_write_outputs(const cli_output *outs, size_t n)
{
    char **tmps;
    size_t i, renamed = 0;
    int failed = 0;

    tmps = calloc(n ? n : 1, sizeof *tmps);
    if (tmps == NULL) {
        cli_error("out of memory");
        return -1;
    }
    /* Phase 1: every output to a temporary beside it. */
    for (i = 0; i < n && !failed; i++) {
        char err[1024];
        size_t len;
        if (outs[i].path == NULL)
            continue;
        len = strlen(outs[i].path) + 64;
        tmps[i] = malloc(len);
        if (tmps[i] == NULL) {
            cli_error("out of memory");
            failed = 1;
            break;
        }
        snprintf(tmps[i], len, "%s.clnorm-%ld-%zu.part", outs[i].path, CLI_PID(), i);
        if (npy_save(tmps[i], outs[i].dtype, outs[i].ndim, outs[i].shape, outs[i].data, err,
                     sizeof err) != 0) {
            report_save_error(outs[i].path, tmps[i], err);
            free(tmps[i]); /* npy_save left nothing behind */
            tmps[i] = NULL;
            failed = 1;
        }
    }
    /* Phase 2: rename them all into place. */
    for (i = 0; i < n && !failed; i++) {
        if (tmps[i] == NULL)
            continue;
        if (rename(tmps[i], outs[i].path) != 0) {
            cli_error("%s: cannot write: %s", outs[i].path, strerror(errno));
            failed = 1;
            break;
        }
        free(tmps[i]);
        tmps[i] = NULL;
        renamed = i + 1;
    }
    if (failed) {
        for (i = 0; i < n; i++) {
            if (tmps[i] != NULL)
                remove(tmps[i]);
            else if (i < renamed && outs[i].path != NULL)
                remove(outs[i].path);
        }
    }
    for (i = 0; i < n; i++)
        free(tmps[i]);
    free(tmps);
    return failed ? -1 : 0;
}
