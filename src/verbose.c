/* CLNORM_VERBOSE=1: one line on stderr per plan creation and per execution, in the spirit of
 * ONEDNN_VERBOSE. The only place the library prints, and only when asked to. Execution times
 * are measured by waiting for the queue, so verbose mode serializes the caller's work.
 * CLNORM_VERBOSE=2 adds a line per kernel before its execution's line: the kernel, its NDRange
 * and its device time (profiling events), to see which step of a chain takes the time on a
 * new device. */
#include "internal.h"

#include <stdio.h>
#include <time.h>

double clnorm_now_ms(void)
{
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* rows x cols; a GroupNorm's samples x channels x positions, its groups and layout
 * ("2x64x64/g8/nhwc"). */
static void shape(const clnorm_plan *p, char *buf, size_t n)
{
    const clnorm_desc *d = &p->desc;
    if (d->kind == CLNORM_GROUP)
        snprintf(buf, n, "%zux%zux%zu/g%zu/%s", d->rows, d->cols, d->spatial ? d->spatial : 1,
                 d->groups, d->layout == CLNORM_NHWC ? "nhwc" : "nchw");
    else
        snprintf(buf, n, "%zux%zu", d->rows, d->cols);
}

static const char *op_name(const clnorm_plan *p)
{
    return clnorm_kind_name(p->desc.kind);
}

void clnorm_verbose_plan(const clnorm_plan *p, double ms, int built)
{
    char s[64];
    shape(p, s, sizeof s);
    fprintf(stderr,
            "clnorm_verbose,plan,%s,%s,%s,strategy=%s,local=%zu,chunks=%zu,samples=%zu,"
            "device=%s,%s%s,host_loop=%s,%s,%.3f ms\n",
            op_name(p), clnorm_dtype_name(p->desc.dtype), s, clnorm_strategy_name(p->strategy),
            /* a work-group per group row (GroupNorm NHWC, workgroup): its size, no tiles */
            p->geo.whole_groups ? p->geo.items_local : p->geo.local,
            p->geo.whole_groups ? (size_t)0 : p->geo.chunks, p->geo.samples, p->ctx->name,
            p->inline_ok ? "latency=" : "latency=none",
            p->inline_ok ? p->ctx->inline_name : "",
            p->host_ok[CLNORM_BACKWARD]  ? "forward+backward"
            : p->host_ok[CLNORM_FORWARD] ? "forward"
                                         : "none",
            built ? "built" : "cached", ms);
}

void clnorm_verbose_exec(const clnorm_plan *p, clnorm_direction dir, const char *api,
                         const char *device, double ms)
{
    char s[64];
    shape(p, s, sizeof s);
    fprintf(stderr, "clnorm_verbose,exec,%s,%s,%s,%s,strategy=%s,api=%s,device=%s,%.3f ms\n",
            dir == CLNORM_BACKWARD ? "backward" : "forward", op_name(p),
            clnorm_dtype_name(p->desc.dtype), s,
            clnorm_strategy_name(p->strategy), api, device, ms);
}

void clnorm_verbose_kernel(const clnorm_plan *p, clnorm_direction dir, const char *kernel,
                           cl_uint dims, const size_t global[2], const size_t local[2],
                           const char *device, double us)
{
    char s[64], g[64], l[64], t[32];
    shape(p, s, sizeof s);
    if (dims > 1) {
        snprintf(g, sizeof g, "%zux%zu", global[0], global[1]);
        snprintf(l, sizeof l, "%zux%zu", local[0], local[1]);
    } else {
        snprintf(g, sizeof g, "%zu", global[0]);
        snprintf(l, sizeof l, "%zu", local[0]);
    }
    if (us >= 0.0)
        snprintf(t, sizeof t, "%.1f us", us);
    else
        snprintf(t, sizeof t, "n/a (queue without profiling)");
    fprintf(stderr, "clnorm_verbose,kernel,%s,%s,%s,%s,%s,global=%s,local=%s,device=%s,%s\n",
            dir == CLNORM_BACKWARD ? "backward" : "forward", op_name(p),
            clnorm_dtype_name(p->desc.dtype), s, kernel, g, l, device, t);
}

const char *clnorm_ran_on(const clnorm_ctx *ctx, int inline_parts, const char *other, char *buf,
                          size_t size)
{
    if (inline_parts <= 0)
        return other;
    if (inline_parts == 1)
        return ctx->inline_name;
    snprintf(buf, size, "%s (%d parts at once)", ctx->inline_name, inline_parts);
    return buf;
}
