/* The contenders compiled into this build, in the order of the table: the device's copy
 * limit and the OpenCL contenders first, then the host's copy limit and the CPU contenders.
 * Which ops a contender takes part in follows from the slots it can pass (bench_contender
 * .slots, .needs) against the slots each op takes (ops.c), and from the forms of data it
 * takes (.forms: rows x cols, GroupNorm's groups, samples of rows): the generic ones (copies,
 * clnorm, the CPU reference) run every op of the table; the baselines run the ops they
 * implement. Both unfused pairs of clnorm are "clnorm_unfused" (the add then the norm, the
 * norm then the modulation): their ops do not overlap, and --only names them together.
 * CLBlast and oneDNN are here only when CMake found them. */
#include "bench.h"

#include <string.h>

static const bench_contender *const all[] = {
    &bench_copy_device,
    &bench_clnorm_auto,
    &bench_clnorm_row,
    &bench_clnorm_workgroup,
    &bench_clnorm_split,
    &bench_clnorm_subgroup,
    &bench_clnorm_unfused,
    &bench_clnorm_unfused_mod,
    &bench_naive_onepass,
#ifdef CLNORM_HAVE_CLBLAST
    &bench_clblast_gemv,
#endif
    &bench_copy_host,
    &bench_clnorm_host,
    &bench_ref_cpu,
#ifdef CLNORM_HAVE_DNNL
    &bench_onednn,
    &bench_onednn_unfused,
    &bench_onednn_bwd,
    &bench_onednn_groups,
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
    const bench_op_info *o = bench_op_get(op);
    const unsigned forms = c->forms ? c->forms : BENCH_FORM_ROWS;
    return o && (o->form & forms) && (o->given & ~c->slots) == 0 && (c->needs & ~o->given) == 0;
}
