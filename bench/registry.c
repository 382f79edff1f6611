/* The contenders compiled into this build, in the order of the table: the device's copy
 * limit and the OpenCL contenders first, then the host's copy limit and the CPU contenders.
 * CLBlast and oneDNN are here only when CMake found them. */
#include "bench.h"

#include <string.h>

static const bench_contender *const all[] = {
    &bench_copy_device,
    &bench_clnorm_auto,
    &bench_clnorm_row,
    &bench_clnorm_workgroup,
    &bench_clnorm_split,
    &bench_naive_onepass,
#ifdef CLNORM_HAVE_CLBLAST
    &bench_clblast_gemv,
#endif
    &bench_copy_host,
    &bench_ref_cpu,
#ifdef CLNORM_HAVE_DNNL
    &bench_onednn,
#endif
};

_Static_assert(sizeof all / sizeof all[0] <= 64, "--only keeps one bit per contender");

const bench_contender *const *bench_contenders(size_t *count)
{
    *count = sizeof all / sizeof all[0];
    return all;
}

int bench_contender_index(const char *name)
{
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (strcmp(all[i]->name, name) == 0)
            return (int)i;
    return -1;
}
