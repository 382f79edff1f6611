/* The saved statistics of a backward case: mean and rstd as a training step would have them,
 * from one forward of the op's kind with CLNORM_SAVE_STATS run at set-up (through the host
 * layer, on the benchmark's device, auto strategy), over the case's inputs (x, and the
 * residual of an ADD kind). Without a device (none found, or none needed by the contenders
 * selected), or when the device refuses the dtype (F64 without cl_khr_fp64), the CPU
 * reference's forward gives them. Every backward contender and the reference then use these
 * same values, so the check compares the backward passes alone. */
#include "bench.h"

#include <stdlib.h>

/* The host arguments of the forward: the case's inputs, mean and rstd into the problem, the
 * other outputs into scratch (tmp[slot], allocated here). 0, or -1 out of memory. */
static int forward_args(bench_problem *p, const clnorm_desc *d, clnorm_host_arg *args,
                        size_t *n, void **tmp)
{
    *n = 0;
    for (int s = 0; s < BENCH_N_SLOTS; s++) {
        clnorm_slot_info si;
        if (clnorm_slot_query(d, CLNORM_FORWARD, (clnorm_arg_slot)s, &si) != CLNORM_OK ||
            si.use != CLNORM_SLOT_REQUIRED)
            continue;
        void *ptr = p->t[s];
        if (si.is_output && s != CLNORM_ARG_MEAN && s != CLNORM_ARG_RSTD) {
            const size_t bytes = si.extent * bench_elem_size(si.dtype);
            if (!(tmp[s] = malloc(bytes ? bytes : 1)))
                return -1;
            ptr = tmp[s];
        }
        if (!ptr)
            continue; /* an input the backward case has no data for: the forward refuses */
        args[(*n)++] = (clnorm_host_arg){(clnorm_arg_slot)s, ptr};
    }
    return 0;
}

int bench_problem_stats(bench_problem *p, clnorm_ctx *ctx, char *msg, size_t msg_size)
{
    /* mean and rstd do not depend on gamma and beta, which a backward case may not have, nor
     * on a modulation, which comes after the normalization: a plain forward gives them */
    clnorm_desc d = p->desc;
    d.flags = CLNORM_SAVE_STATS | CLNORM_NO_GAMMA | CLNORM_NO_BETA;
    d.samples = 0;
    d.mod_stride = 0;
    clnorm_host_arg args[BENCH_N_SLOTS];
    void *tmp[BENCH_N_SLOTS] = {0};
    size_t n = 0;
    int rc = -1;
    if (forward_args(p, &d, args, &n, tmp) != 0) {
        snprintf(msg, msg_size, "out of host memory for the forward that saves mean/rstd");
        goto done;
    }
    const char *why_not = "no OpenCL device in use";
    char refused[BENCH_MSG] = "";
    if (ctx && clnorm_get_backend(ctx) == CLNORM_BACKEND_OPENCL) {
        clnorm_plan *plan = NULL;
        clnorm_status st = clnorm_plan_create(ctx, &d, &plan);
        if (st == CLNORM_OK) {
            st = clnorm_execute_host(plan, CLNORM_FORWARD, args, n);
            if (st == CLNORM_OK)
                snprintf(p->stats_from, sizeof p->stats_from,
                         "clnorm_execute_host on the device (auto=%s)",
                         clnorm_strategy_name(clnorm_plan_strategy(plan)));
        }
        if (st != CLNORM_OK)
            bench_clnorm_msg(ctx, st, plan ? "clnorm_execute_host" : "clnorm_plan_create",
                             refused, sizeof refused);
        clnorm_plan_free(plan);
        if (st == CLNORM_OK) {
            rc = 0;
            goto done;
        }
        if (st != CLNORM_UNSUPPORTED) {
            snprintf(msg, msg_size, "forward saving mean/rstd: %s", refused);
            goto done;
        }
        why_not = "the device refused the forward";
    }
    clnorm_status st = clnorm_ref_execute(&d, CLNORM_FORWARD, args, n);
    if (st != CLNORM_OK) {
        snprintf(msg, msg_size, "clnorm_ref_execute (mean/rstd): %s", clnorm_status_string(st));
        goto done;
    }
    snprintf(p->stats_from, sizeof p->stats_from, "clnorm_ref_execute (%s)", why_not);
    rc = 0;
done:
    for (int s = 0; s < BENCH_N_SLOTS; s++)
        free(tmp[s]);
    return rc;
}
