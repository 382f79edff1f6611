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

/* Writes every output or none: each goes to a temporary file beside its path first, and only
 * when all were written are they renamed into place; on any failure the temporaries (and any
 * output already renamed in this call) are removed and one error line is printed. Returns 0 ok,
 * -1 on failure. */
int cli_write_outputs(const cli_output *outs, size_t n);

#endif /* CLNORM_CLI_OUTPUTS_H */
