/*
 * cli_bench.c - `clnorm bench [ARGS...]`: finds the clnorm-bench program (built from bench/
 * and installed beside clnorm) and executes it with ARGS. It is looked for next to the
 * running clnorm binary, then at ../bench/clnorm-bench from it (the build tree), then in PATH.
 */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "cli_bench.h"

#include "cli_args.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef _WIN32
#include <sys/stat.h>
#include <unistd.h>

#define BENCH_NAME "clnorm-bench"

/* 1 when path is a regular file this process may execute. */
static int is_program(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* The directory of the running binary into dir (no trailing '/'): /proc/self/exe where there
 * is one, else argv0 when it names a path. 0 ok, -1 unknown. */
static int self_dir(const char *argv0, char *dir, size_t size)
{
    ssize_t n = readlink("/proc/self/exe", dir, size - 1);
    char *slash;
    if (n > 0 && (size_t)n < size - 1) {
        dir[n] = '\0';
    } else {
        if (argv0 == NULL || strchr(argv0, '/') == NULL || strlen(argv0) >= size)
            return -1;
        strcpy(dir, argv0);
    }
    slash = strrchr(dir, '/');
    if (slash == NULL)
        return -1;
    if (slash == dir)
        slash[1] = '\0'; /* the root directory */
    else
        *slash = '\0';
    return 0;
}

/* Writes "<dir>/<rest>" into out and says whether it is a program. */
static int try_path(char *out, size_t size, const char *dir, size_t dir_len, const char *rest)
{
    int n = snprintf(out, size, "%.*s%s%s", (int)dir_len, dir,
                     dir_len > 0 && dir[dir_len - 1] == '/' ? "" : "/", rest);
    return n > 0 && (size_t)n < size && is_program(out);
}

/* Finds clnorm-bench into out. 0 found, -1 not. */
static int find_bench(const char *argv0, char *out, size_t size)
{
    char dir[4096];
    const char *path = getenv("PATH");
    if (self_dir(argv0, dir, sizeof dir) == 0 &&
        (try_path(out, size, dir, strlen(dir), BENCH_NAME) ||
         try_path(out, size, dir, strlen(dir), "../bench/" BENCH_NAME)))
        return 0;
    while (path != NULL && *path != '\0') {
        size_t len = strcspn(path, ":");
        /* An empty PATH entry would mean the current directory; it is not searched. */
        if (len > 0 && try_path(out, size, path, len, BENCH_NAME))
            return 0;
        path += len;
        if (*path == ':')
            path++;
    }
    return -1;
}

int cli_bench(int argc, char **argv, const char *argv0)
{
    char prog[4096];
    char **args;
    int i;
    if (find_bench(argv0, prog, sizeof prog) != 0) {
        cli_error(BENCH_NAME " not found beside clnorm, in ../bench/ from it, nor in PATH "
                  "(it is built from bench/ when CLNORM_BUILD_BENCH is ON)");
        return CLI_EXIT_FAIL;
    }
    args = malloc(((size_t)argc + 2) * sizeof *args);
    if (args == NULL) {
        cli_error("out of memory");
        return CLI_EXIT_FAIL;
    }
    args[0] = prog;
    for (i = 0; i < argc; i++)
        args[i + 1] = argv[i];
    args[argc + 1] = NULL;
    fflush(stdout);
    fflush(stderr);
    execv(prog, args);
    cli_error("cannot run %s: %s", prog, strerror(errno));
    free(args);
    return CLI_EXIT_FAIL;
}

#else /* _WIN32 */

int cli_bench(int argc, char **argv, const char *argv0)
{
    (void)argc;
    (void)argv;
    (void)argv0;
    cli_error("'clnorm bench' is not available on this platform: run clnorm-bench directly");
    return CLI_EXIT_FAIL;
}

#endif
