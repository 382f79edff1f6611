/* Finds an embedded kernels/ file by name. */
#include "kernel_sources.h"

#include <string.h>

const clnorm_kernel_source *clnorm_find_kernel_source(const char *name)
{
    for (size_t i = 0; i < clnorm_kernel_source_count; i++)
        if (strcmp(clnorm_kernel_sources[i].name, name) == 0)
            return &clnorm_kernel_sources[i];
    return NULL;
}
