/*
 * cli_paths.c - what an output path names on disk (cli_paths.h). Outputs are written to a
 * temporary beside the file they replace and renamed onto it, which must not replace a
 * symbolic link by a file (the link's target is written instead), a device such as /dev/null
 * by a file (written through instead), or let two spellings of one file take two outputs.
 */
#if !defined(_WIN32) && !defined(_XOPEN_SOURCE)
#define _XOPEN_SOURCE 700 /* realpath */
#endif

#include "cli_paths.h"

#include "cli_args.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef _WIN32
#include <sys/stat.h>
#include <unistd.h>
#endif

static char *dup_str(const char *s)
{
    const size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

#ifndef _WIN32
/* path with its directory resolved (realpath), or a copy of path where the directory does
 * not resolve (the write will report that). */
static char *canonical_new(const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    char *dir, *real, *out;
    size_t dlen;
    if (slash == NULL)
        dir = dup_str(".");
    else if (slash == path)
        dir = dup_str("/");
    else {
        dlen = (size_t)(slash - path);
        dir = malloc(dlen + 1);
        if (dir) {
            memcpy(dir, path, dlen);
            dir[dlen] = '\0';
        }
    }
    if (dir == NULL)
        return NULL;
    real = realpath(dir, NULL);
    free(dir);
    if (real == NULL)
        return dup_str(path);
    out = malloc(strlen(real) + strlen(base) + 2);
    if (out)
        sprintf(out, "%s/%s", strcmp(real, "/") == 0 ? "" : real, base);
    free(real);
    return out;
}

/* Where a symbolic link to nothing points: its target, made relative to the link's own
 * directory, followed through further links to nothing (at most 40, as the kernel does). NULL
 * when out of memory or looping; a shell's `>` creates that file, and so do outputs. */
static char *dangling_target(const char *path)
{
    char *cur = dup_str(path);
    int hops;
    for (hops = 0; cur != NULL && hops < 40; hops++) {
        struct stat ls;
        char buf[4096], *next;
        ssize_t len;
        const char *slash;
        if (lstat(cur, &ls) != 0 || !S_ISLNK(ls.st_mode))
            return cur; /* the file the chain ends at (not there yet) */
        len = readlink(cur, buf, sizeof buf - 1);
        if (len < 0) {
            free(cur);
            return NULL;
        }
        buf[len] = '\0';
        slash = strrchr(cur, '/');
        if (buf[0] == '/' || slash == NULL) {
            next = dup_str(buf);
        } else {
            const size_t dlen = (size_t)(slash - cur) + 1;
            next = malloc(dlen + (size_t)len + 1);
            if (next) {
                memcpy(next, cur, dlen);
                memcpy(next + dlen, buf, (size_t)len + 1);
            }
        }
        free(cur);
        cur = next;
    }
    free(cur);
    return NULL;
}

static cli_path_kind kind_of(mode_t m)
{
    if (S_ISREG(m))
        return CLI_PATH_REGULAR;
    if (S_ISDIR(m))
        return CLI_PATH_DIR;
    return CLI_PATH_SPECIAL;
}
#endif

int cli_path_resolve(const char *path, cli_path_info *info)
{
    memset(info, 0, sizeof *info);
#ifndef _WIN32
    struct stat ls, st;
    if (lstat(path, &ls) != 0) {
        info->kind = CLI_PATH_NEW;
        info->target = dup_str(path);
        info->canon = canonical_new(path);
    } else if (S_ISLNK(ls.st_mode)) {
        if (stat(path, &st) != 0) {
            /* a link to nothing: the file it names is created */
            info->target = dangling_target(path);
            info->kind = info->target ? CLI_PATH_NEW : CLI_PATH_DANGLING;
            if (info->target == NULL)
                info->target = dup_str(path);
            info->canon = info->target ? canonical_new(info->target) : NULL;
        } else {
            info->kind = kind_of(st.st_mode);
            info->target = realpath(path, NULL);
            if (info->target == NULL && errno != ENOMEM)
                info->target = dup_str(path);
            info->canon = info->target ? dup_str(info->target) : NULL;
            info->dev = (unsigned long long)st.st_dev;
            info->ino = (unsigned long long)st.st_ino;
        }
    } else {
        info->kind = kind_of(ls.st_mode);
        info->target = dup_str(path);
        info->canon = canonical_new(path);
        info->dev = (unsigned long long)ls.st_dev;
        info->ino = (unsigned long long)ls.st_ino;
    }
#else
    info->kind = CLI_PATH_NEW;
    info->target = dup_str(path);
    info->canon = dup_str(path);
#endif
    if (info->target == NULL || info->canon == NULL) {
        cli_path_free(info);
        return -1;
    }
    return 0;
}

void cli_path_free(cli_path_info *info)
{
    free(info->target);
    free(info->canon);
    memset(info, 0, sizeof *info);
}

/* 1 when a and b name one file: the same existing file, or the same new name. */
static int same_file(const cli_path_info *a, const cli_path_info *b)
{
    const int a_exists = a->kind != CLI_PATH_NEW && a->kind != CLI_PATH_DANGLING;
    const int b_exists = b->kind != CLI_PATH_NEW && b->kind != CLI_PATH_DANGLING;
    if (a_exists && b_exists)
        return a->dev == b->dev && a->ino == b->ino;
    return a_exists == b_exists && strcmp(a->canon, b->canon) == 0;
}

int cli_check_distinct(const char *const *paths, const char *const *names, size_t n)
{
    cli_path_info *info = calloc(n ? n : 1, sizeof *info);
    size_t a, b;
    int rc = 0;
    if (info == NULL) {
        cli_error("out of memory");
        return -1;
    }
    for (a = 0; a < n && rc == 0; a++)
        if (paths[a] != NULL && cli_path_resolve(paths[a], &info[a]) != 0) {
            cli_error("out of memory");
            rc = -1;
        }
    for (a = 0; a < n && rc == 0; a++)
        for (b = a + 1; b < n && rc == 0; b++)
            if (paths[a] != NULL && paths[b] != NULL &&
                (strcmp(paths[a], paths[b]) == 0 || same_file(&info[a], &info[b]))) {
                if (strcmp(paths[a], paths[b]) == 0)
                    cli_error("%s and %s name the same file '%s'", names[a], names[b],
                              paths[a]);
                else
                    cli_error("%s and %s name the same file ('%s' and '%s')", names[a],
                              names[b], paths[a], paths[b]);
                rc = -1;
            }
    for (a = 0; a < n; a++)
        cli_path_free(&info[a]);
    free(info);
    return rc;
}
