/* The kernels/ *.cl files, embedded at build time by cmake/embed_kernels_script.cmake. */
#ifndef CLNORM_KERNEL_SOURCES_H
#define CLNORM_KERNEL_SOURCES_H

#include <stddef.h>

typedef struct {
    const char *name;            /* file name, e.g. "norm_row.cl" */
    const unsigned char *text;   /* NUL-terminated source */
    size_t size;                 /* bytes, without the NUL */
} clnorm_kernel_source;

extern const clnorm_kernel_source clnorm_kernel_sources[];
extern const size_t clnorm_kernel_source_count;

/* The embedded source of a kernels/ file by name, or NULL. */
const clnorm_kernel_source *clnorm_find_kernel_source(const char *name);

#endif
