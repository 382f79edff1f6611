/*
 * cli_outputs.c - all-or-nothing writing of a command's .npy outputs.
 *
 * Every output path is resolved first (cli_paths.c): a directory or a looping link is
 * refused before anything is written; a symbolic link is written through to its target; a
 * device or FIFO (/dev/null) is written through in place, never replaced. Then:
 *   1. each file output goes to a temporary in its target's directory (npy_open_temp);
 *   2. the devices and FIFOs are written;
 *   3. the temporaries are renamed onto their targets, each existing target kept first under
 *      a hard link of its own, so that a rename failing half way puts back the files already
 *      replaced (and removes the ones that did not exist), then the links are dropped.
 * A failure in 1 or 2 leaves every file as it was; one in 3 too, where the file system takes
 * hard links (where it does not, an output already renamed keeps its new contents and the
 * message says so).
 */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "cli_outputs.h"

#include "cli_args.h"
#include "cli_paths.h"
#include "npy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef _WIN32
#include <unistd.h>
#endif

/* npy's messages name the file they were given; report the user's path instead. */
static void report_error(const char *path, const char *name, const char *err)
{
    const size_t n = strlen(name);
    if (strncmp(err, name, n) == 0)
        cli_error("%s%s", path, err + n);
    else
        cli_error("%s", err);
}

typedef struct {
    cli_path_info info;
    char *tmp;    /* step 1's temporary, until renamed */
    char *backup; /* step 3: a hard link to the target's old contents */
    int placed;   /* step 3: renamed onto the target */
} out_state;

/* A hard link to target under a fresh temporary name beside it (NULL where the file system
 * has none: the old contents cannot be put back then). */
static char *keep_old(const char *target)
{
#ifndef _WIN32
    char err[256];
    char *name = NULL;
    FILE *f = npy_open_temp(target, &name, err, sizeof err);
    if (f == NULL)
        return NULL;
    fclose(f);
    /* the name is ours (created exclusively); link() needs it free */
    if (remove(name) != 0 || link(target, name) != 0) {
        free(name);
        return NULL;
    }
    return name;
#else
    (void)target;
    return NULL;
#endif
}

/* Writes output o into f (opened on target) and closes f; 0 ok, else -1 with the error
 * printed under the user's path. */
static int write_closing(FILE *f, const cli_output *o, const char *target)
{
    char err[1024];
    int ok = npy_write(f, target, o->dtype, o->ndim, o->shape, o->data, err, sizeof err) == 0;
    if (fclose(f) != 0 && ok) {
        ok = 0;
        snprintf(err, sizeof err, "%s: write failed: %s", target, strerror(errno));
    }
    if (!ok)
        report_error(o->path, target, err);
    return ok ? 0 : -1;
}

/* Step 3 failed at output `failed`: the files replaced so far back as they were. */
static void roll_back(out_state *st, const cli_output *outs, size_t n)
{
    size_t i, lost = 0;
    for (i = 0; i < n; i++) {
        if (!st[i].placed)
            continue;
        if (st[i].backup != NULL) {
            if (rename(st[i].backup, st[i].info.target) == 0) {
                free(st[i].backup);
                st[i].backup = NULL;
            } else
                lost++;
        } else if (st[i].info.kind == CLI_PATH_NEW) {
            remove(st[i].info.target);
        } else {
            lost++;
        }
    }
    if (lost) {
        for (i = 0; i < n; i++)
            if (st[i].placed && st[i].info.kind != CLI_PATH_NEW && st[i].backup == NULL)
                break;
        fprintf(stderr, "  (%s kept its new contents: its old ones could not be put back)\n",
                i < n ? outs[i].path : "an output");
    }
}

int cli_write_outputs(const cli_output *outs, size_t n)
{
    out_state *st = calloc(n ? n : 1, sizeof *st);
    size_t i;
    int failed = 0;
    char err[1024];

    if (st == NULL) {
        cli_error("out of memory");
        return -1;
    }
    /* What each path names: refused kinds before anything is written. */
    for (i = 0; i < n && !failed; i++) {
        if (outs[i].path == NULL)
            continue;
        if (cli_path_resolve(outs[i].path, &st[i].info) != 0) {
            cli_error("out of memory");
            failed = 1;
        } else if (st[i].info.kind == CLI_PATH_DIR) {
            cli_error("%s: cannot write: Is a directory", outs[i].path);
            failed = 1;
        } else if (st[i].info.kind == CLI_PATH_DANGLING) {
            cli_error("%s: cannot write: a symbolic link that loops or cannot be read",
                      outs[i].path);
            failed = 1;
        }
    }
    /* 1: the files, each to a temporary beside its target. */
    for (i = 0; i < n && !failed; i++) {
        FILE *f;
        if (outs[i].path == NULL || st[i].info.kind == CLI_PATH_SPECIAL)
            continue;
        f = npy_open_temp(st[i].info.target, &st[i].tmp, err, sizeof err);
        if (f == NULL)
            report_error(outs[i].path, st[i].info.target, err);
        failed = f == NULL || write_closing(f, &outs[i], st[i].info.target) != 0;
    }
    /* 2: devices and FIFOs, written through. */
    for (i = 0; i < n && !failed; i++) {
        FILE *f;
        if (outs[i].path == NULL || st[i].info.kind != CLI_PATH_SPECIAL)
            continue;
        f = fopen(st[i].info.target, "wb");
        if (f == NULL)
            cli_error("%s: cannot write: %s", outs[i].path, strerror(errno));
        failed = f == NULL || write_closing(f, &outs[i], st[i].info.target) != 0;
    }
    /* 3: the temporaries onto their targets, the old contents kept until all are in place. */
    for (i = 0; i < n && !failed; i++) {
        if (st[i].tmp == NULL)
            continue;
        if (st[i].info.kind == CLI_PATH_REGULAR)
            st[i].backup = keep_old(st[i].info.target);
        if (rename(st[i].tmp, st[i].info.target) != 0) {
            cli_error("%s: cannot write: %s", outs[i].path, strerror(errno));
            failed = 1;
            roll_back(st, outs, n);
            break;
        }
        free(st[i].tmp);
        st[i].tmp = NULL;
        st[i].placed = 1;
    }
    for (i = 0; i < n; i++) {
        if (st[i].tmp != NULL)
            remove(st[i].tmp);
        if (st[i].backup != NULL)
            remove(st[i].backup);
        free(st[i].tmp);
        free(st[i].backup);
        cli_path_free(&st[i].info);
    }
    free(st);
    return failed ? -1 : 0;
}
