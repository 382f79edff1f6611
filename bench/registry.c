/* The contenders compiled into this build, in the order of the table: the device's copy
 * limit and the OpenCL contenders first, then the host's copy limit and the CPU contenders;
 * forward ones before backward ones, which share their names (the CSV's op column tells them
 * apart). The copies take part in every op. CLBlast and oneDNN are here only when CMake
 * found them. */
#include "bench.h"

#include <string.h>

static const bench_contender *const all[] = {
    &bench_copy_device,
    &bench_clnorm_auto,
    &bench_clnorm_row,
    &bench_clnorm_workgroup,
    &bench_clnorm_split,
    &bench_clnorm_subgroup,
    &bench_naive_onepass,
#ifdef CLNORM_HAVE_CLBLAST
    &bench_clblast_gemv,
#endif
    &bench_clnorm_bwd_auto,
    &bench_clnorm_bwd_row,
    &bench_clnorm_bwd_workgroup,
    &bench_clnorm_bwd_split,
    &bench_clnorm_bwd_subgroup,
    &bench_copy_host,
    &bench_ref_cpu,
#ifdef CLNORM_HAVE_DNNL
    &bench_onednn,
#endif
    &bench_ref_cpu_bwd,
#ifdef CLNORM_HAVE_DNNL
    &bench_onednn_bwd,
#endif
};

_Static_assert(sizeof all / sizeof all[0] <= 64, "--only keeps one bit per contender");

const bench_contender *const *bench_contenders(size_t *count)
{
    *count = sizeof all / sizeof all[0];
    return all;
}

int bench_contender_select(const char *name, unsigned long long *mask)
{
    int found = 0;
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (strcmp(all[i]->name, name) == 0) {
            *mask |= 1ull << i;
            found++;
        }
    return found;
}

int bench_contender_runs(const bench_contender *c, bench_op op)
{
    return (c->passes & (bench_op_is_backward(op) ? BENCH_BWD : BENCH_FWD)) != 0;
}
