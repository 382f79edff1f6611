/* cli_outputs.h - writes the output files of one `clnorm` command all-or-nothing. */
#ifndef CLNORM_CLI_OUTPUTS_H
#define CLNORM_CLI_OUTPUTS_H

#include "npy.h"

#include <stddef.h>

typedef struct {
    const char *path;    /* NULL: this output was not asked for */
    int ndim;            /* 0 = scalar */
    const size_t *shape; /* ndim entries */
    npy_dtype dtype;     /* the element type written (NPY_U16: raw bfloat16 bits) */
    const void *data;    /* C order */
} cli_output;

/* Writes every output or none (cli_outputs.c): each file goes to a temporary beside the file
 * it replaces (a symbolic link's target), and only when all were written are they renamed into
 * place; a device or FIFO is written through. A directory, or a looping link, is refused
 * before anything is written. On any failure the files are left as they were and one error
 * line is printed. Returns 0 ok, -1 on failure. */
int cli_write_outputs(const cli_output *outs, size_t n);

#endif /* CLNORM_CLI_OUTPUTS_H */
