/* cli_paths.h - what an output path names on disk: the file a write must replace (through
 * symbolic links), its kind, and whether two paths name the same file. */
#ifndef CLNORM_CLI_PATHS_H
#define CLNORM_CLI_PATHS_H

#include <stddef.h>

typedef enum {
    CLI_PATH_NEW,      /* nothing there yet */
    CLI_PATH_REGULAR,  /* a regular file (replaced through a temporary and a rename) */
    CLI_PATH_DIR,      /* a directory: not writable as a file */
    CLI_PATH_SPECIAL,  /* a device, FIFO or socket: written through, never replaced */
    CLI_PATH_DANGLING  /* a symbolic link that loops, or whose target cannot be read */
} cli_path_kind;

typedef struct {
    cli_path_kind kind;
    char *target;       /* the file to write: the link's final target for a symbolic link
                         * (one to nothing: the file it names, NEW), the path itself
                         * otherwise (malloc'ed) */
    char *canon;        /* for comparisons: the target with its directory made absolute and
                         * its links resolved where the directory exists (malloc'ed) */
    unsigned long long dev, ino; /* the existing file's identity (0, 0 when NEW) */
} cli_path_info;

/* Resolves path. 0 ok; -1 when out of memory (info zeroed then). */
int cli_path_resolve(const char *path, cli_path_info *info);
void cli_path_free(cli_path_info *info);

/* Prints one error line and returns -1 when two of the n paths name the same file (spelled
 * alike or not: "y.npy" and "./y.npy", a link and its target, two hard links); paths may hold
 * NULLs (options not given); names[i] is path i's option name for the message. 0 otherwise. */
int cli_check_distinct(const char *const *paths, const char *const *names, size_t n);

#endif /* CLNORM_CLI_PATHS_H */
