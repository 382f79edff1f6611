/* The saved statistics of a backward case: mean and rstd as a training step would have them,
 * from one clnorm forward with CLNORM_SAVE_STATS run at set-up (through the host layer, on
 * the benchmark's device, auto strategy). Without a device (none found, or none needed by the
 * contenders selected), or when the device refuses the dtype (F64 without cl_khr_fp64), the
 * CPU reference's forward gives them. Every backward contender and clnorm_ref_backward then
 * use these same values, so the check compares the backward passes alone. */
#include "bench.h"

#include <stdlib.h>

int bench_problem_stats(bench_problem *p, clnorm_ctx *ctx, char *msg, size_t msg_size)
{
    clnorm_desc d;
    clnorm_desc_init(&d, p->kind, p->rows, p->cols);
    d.dtype = p->dtype;
    d.eps = p->eps;
    d.flags = CLNORM_SAVE_STATS;
    void *y = malloc(p->rows * p->cols * p->elem);
    if (!y) {
        snprintf(msg, msg_size, "out of host memory for the forward that saves mean/rstd");
        return -1;
    }
    const char *why_not = "no OpenCL device in use";
    char refused[BENCH_MSG] = "";
    if (ctx && clnorm_get_backend(ctx) == CLNORM_BACKEND_OPENCL) {
        clnorm_plan *plan = NULL;
        clnorm_status st = clnorm_plan_create(ctx, &d, &plan);
        if (st == CLNORM_OK) {
            st = clnorm_forward_host(plan, p->x, y, p->gamma, p->beta, p->mean, p->rstd);
            if (st == CLNORM_OK)
                snprintf(p->stats_from, sizeof p->stats_from,
                         "clnorm_forward_host on the device (auto=%s)",
                         clnorm_strategy_name(clnorm_plan_strategy(plan)));
        }
        if (st != CLNORM_OK)
            bench_clnorm_msg(ctx, st, plan ? "clnorm_forward_host" : "clnorm_plan_create",
                             refused, sizeof refused);
        clnorm_plan_free(plan);
        if (st == CLNORM_OK) {
            free(y);
            return 0;
        }
        if (st != CLNORM_UNSUPPORTED) {
            snprintf(msg, msg_size, "forward saving mean/rstd: %s", refused);
            free(y);
            return -1;
        }
        why_not = "the device refused the forward";
    }
    clnorm_status st = clnorm_ref_forward(&d, p->x, y, p->gamma, p->beta, p->mean, p->rstd);
    free(y);
    if (st != CLNORM_OK) {
        snprintf(msg, msg_size, "clnorm_ref_forward (mean/rstd): %s", clnorm_status_string(st));
        return -1;
    }
    snprintf(p->stats_from, sizeof p->stats_from, "clnorm_ref_forward (%s)", why_not);
    return 0;
}
