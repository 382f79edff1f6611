/*
 * grad_runner.c - layer-1 runners of grad_util.h: every tensor in its own cl_mem at a non-zero
 * offset between sentinels, any dtype, every byte around the outputs checked.
 */
#include "grad_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------ */
/* Device tensors                                                                              */

/* A tensor of n elements of fmt at element offset `off` of its own cl_mem, TU_PAD sentinels
 * after it; `host` mirrors the whole buffer. */
typedef struct {
    clnorm_dtype fmt;
    int output; /* which sentinel frames it */
    cl_mem mem;
    size_t off, n, total;
    unsigned char *host;
} dev_tensor;

static void dev_make(dev_tensor *t, cl_context context, cl_command_queue queue,
                     clnorm_dtype fmt, const void *data, size_t off, size_t n, int output)
{
    t->fmt = fmt;
    t->output = output;
    t->off = off;
    t->n = n;
    t->total = off + n + TU_PAD;
    t->host = gu_alloc_sentinel(fmt, t->total, output);
    const size_t es = gu_size(fmt);
    if (data != NULL && n)
        memcpy(t->host + off * es, data, n * es);
    cl_int err = CL_SUCCESS;
    t->mem = clCreateBuffer(context, CL_MEM_READ_WRITE, t->total * es, NULL, &err);
    if (t->mem == NULL || err != CL_SUCCESS)
        fail_msg("clCreateBuffer(%zu bytes) failed: %d", t->total * es, (int)err);
    err = clEnqueueWriteBuffer(queue, t->mem, CL_TRUE, 0, t->total * es, t->host, 0, NULL,
                               NULL);
    if (err != CL_SUCCESS)
        fail_msg("clEnqueueWriteBuffer failed: %d", (int)err);
}

static void dev_read(dev_tensor *t, cl_command_queue queue)
{
    if (t->mem == NULL)
        return;
    const cl_int err = clEnqueueReadBuffer(queue, t->mem, CL_TRUE, 0, t->total * gu_size(t->fmt),
                                           t->host, 0, NULL, NULL);
    if (err != CL_SUCCESS)
        fail_msg("clEnqueueReadBuffer failed: %d", (int)err);
}

static void dev_free(dev_tensor *t)
{
    if (t->mem != NULL)
        clReleaseMemObject(t->mem);
    free(t->host);
    memset(t, 0, sizeof *t);
}

static void *dev_data(const dev_tensor *t) { return t->host + t->off * gu_size(t->fmt); }

/* Offset region and tail untouched. */
static size_t dev_check_frame(const dev_tensor *t, const char *what)
{
    if (t->mem == NULL)
        return 0;
    char label[128];
    snprintf(label, sizeof label, "%s (before its offset)", what);
    size_t bad = gu_count_changed(t->fmt, t->host, t->off, t->output, label);
    snprintf(label, sizeof label, "%s (after its end)", what);
    bad += gu_count_changed(t->fmt, t->host + (t->off + t->n) * gu_size(t->fmt), TU_PAD,
                            t->output, label);
    return bad;
}

/* An input: frame untouched and contents bitwise as given. */
static size_t dev_check_input(const dev_tensor *t, const void *data, const char *what)
{
    if (t->mem == NULL)
        return 0;
    char label[128];
    snprintf(label, sizeof label, "%s (input modified)", what);
    return dev_check_frame(t, what) + gu_cmp_exact(t->fmt, dev_data(t), data, t->n, label);
}

/* Waits for the event of a successful call; fails on a missing or incomplete event. */
static void wait_event(cl_event ev, cl_command_queue queue, const char *fn)
{
    if (ev == NULL)
        fail_msg("%s returned no event although one was asked for", fn);
    cl_int status = CL_COMPLETE;
    const cl_int err = clWaitForEvents(1, &ev);
    clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL);
    clReleaseEvent(ev);
    clFinish(queue);
    if (err != CL_SUCCESS || status != CL_COMPLETE)
        fail_msg("the event of %s did not complete: wait %d, status %d", fn, (int)err,
                 (int)status);
}

/* ------------------------------------------------------------------------------------------ */
/* Forward runner                                                                              */

void gu_forward_cl(clnorm_ctx *ctx, clnorm_plan *plan, const tu_launch *launch, const void *x,
                   const void *gamma, const void *beta, void *y, void *mean, void *rstd)
{
    const clnorm_desc *d = clnorm_plan_desc(plan);
    assert_non_null(d);
    cl_context context = clnorm_get_cl_context(ctx);
    cl_command_queue queue = clnorm_get_queue(ctx);
    assert_non_null(context);
    const clnorm_dtype T = d->dtype, P = gu_param_fmt(d->dtype);
    const size_t xs = tu_x_stride(d), ys = tu_y_stride(d);
    const size_t xn = tu_extent(d->rows, d->cols, xs), yn = tu_extent(d->rows, d->cols, ys);
    const int stats = (d->flags & CLNORM_SAVE_STATS) != 0;
    const int want_mean = stats && d->kind == CLNORM_LAYER;

    dev_tensor tx = {0}, ty = {0}, tg = {0}, tb = {0}, tm = {0}, tr = {0};
    dev_make(&tx, context, queue, T, x, launch->x_off, xn, launch->in_place);
    if (!launch->in_place)
        dev_make(&ty, context, queue, T, NULL, launch->y_off, yn, 1);
    if (!(d->flags & CLNORM_NO_GAMMA))
        dev_make(&tg, context, queue, P, gamma, launch->g_off, d->cols, 0);
    if (!(d->flags & CLNORM_NO_BETA))
        dev_make(&tb, context, queue, P, beta, launch->b_off, d->cols, 0);
    if (want_mean)
        dev_make(&tm, context, queue, P, NULL, launch->m_off, d->rows, 1);
    if (stats)
        dev_make(&tr, context, queue, P, NULL, launch->r_off, d->rows, 1);
    dev_tensor *yt = launch->in_place ? &tx : &ty;

    cl_event ev = NULL;
    const clnorm_status st = clnorm_forward(
        plan, tx.mem, tx.off, yt->mem, yt->off, tg.mem, tg.off, tb.mem, tb.off, tm.mem, tm.off,
        tr.mem, tr.off, launch->explicit_queue ? queue : NULL, 0, NULL, &ev);
    if (st != CLNORM_OK)
        fail_msg("clnorm_forward(%s, %s, %zu x %zu) = %d (%s): %s",
                 clnorm_strategy_name(clnorm_plan_strategy(plan)), gu_fmt_name(T), d->rows,
                 d->cols, st, clnorm_status_string(st), clnorm_last_error(ctx));
    wait_event(ev, queue, "clnorm_forward");

    dev_tensor *all[] = {&tx, &ty, &tg, &tb, &tm, &tr};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        dev_read(all[i], queue);
    size_t bad = 0;
    if (launch->in_place) {
        bad += dev_check_frame(&tx, "y (in place)");
        bad += gu_count_gap_changed(T, dev_data(&tx), d->rows, d->cols, ys, 0, "y (in place)");
    } else {
        bad += dev_check_input(&tx, x, "x");
        bad += dev_check_frame(&ty, "y");
        bad += gu_count_gap_changed(T, dev_data(&ty), d->rows, d->cols, ys, 1, "y");
    }
    bad += dev_check_input(&tg, gamma, "gamma");
    bad += dev_check_input(&tb, beta, "beta");
    bad += dev_check_frame(&tm, "mean");
    bad += dev_check_frame(&tr, "rstd");
    if (yn)
        memcpy(y, dev_data(yt), yn * gu_size(T));
    if (want_mean && mean != NULL)
        memcpy(mean, dev_data(&tm), d->rows * gu_size(P));
    if (stats && rstd != NULL)
        memcpy(rstd, dev_data(&tr), d->rows * gu_size(P));
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        dev_free(all[i]);
    if (bad)
        fail_msg("clnorm_forward(%s, %s, %zu x %zu, strides %zu/%zu): %zu elements around the "
                 "outputs or of the inputs were modified",
                 clnorm_strategy_name(clnorm_plan_strategy(plan)), gu_fmt_name(T), d->rows,
                 d->cols, xs, ys, bad);
}

/* ------------------------------------------------------------------------------------------ */
/* Backward runner                                                                             */

gu_bwd_launch gu_bwd_offsets(void)
{
    gu_bwd_launch l = {5, 7, 3, 11, 2, 9, 6, 1, 0, 0};
    return l;
}

void gu_backward_cl(clnorm_ctx *ctx, clnorm_plan *plan, unsigned mask,
                    const gu_bwd_launch *launch, const void *x, const void *dy,
                    const void *mean, const void *rstd, const void *gamma, void *dx,
                    void *dgamma, void *dbeta)
{
    const clnorm_desc *d = clnorm_plan_desc(plan);
    assert_non_null(d);
    cl_context context = clnorm_get_cl_context(ctx);
    cl_command_queue queue = clnorm_get_queue(ctx);
    assert_non_null(context);
    const clnorm_dtype T = d->dtype, P = gu_param_fmt(d->dtype);
    const size_t xs = tu_x_stride(d), ys = tu_y_stride(d);
    const size_t xn = tu_extent(d->rows, d->cols, xs), yn = tu_extent(d->rows, d->cols, ys);

    dev_tensor tx = {0}, tdy = {0}, tm = {0}, tr = {0}, tg = {0}, tdx = {0}, tdg = {0},
               tdb = {0};
    if (x)
        dev_make(&tx, context, queue, T, x, launch->x_off, xn, 0);
    if (dy)
        dev_make(&tdy, context, queue, T, dy, launch->dy_off, yn, 0);
    if (mean)
        dev_make(&tm, context, queue, P, mean, launch->m_off, d->rows, 0);
    if (rstd)
        dev_make(&tr, context, queue, P, rstd, launch->r_off, d->rows, 0);
    if (gamma)
        dev_make(&tg, context, queue, P, gamma, launch->g_off, d->cols, 0);
    const int want_dx = (mask & CLNORM_GRAD_X) != 0;
    if (want_dx && !launch->in_place)
        dev_make(&tdx, context, queue, T, NULL, launch->dx_off, xn, 1);
    if (mask & CLNORM_GRAD_GAMMA)
        dev_make(&tdg, context, queue, P, NULL, launch->dg_off, d->cols, 1);
    if (mask & CLNORM_GRAD_BETA)
        dev_make(&tdb, context, queue, P, NULL, launch->db_off, d->cols, 1);
    dev_tensor *dxt = launch->in_place ? &tdy : &tdx;
    cl_mem dx_mem = want_dx ? dxt->mem : NULL;

    cl_event ev = NULL;
    const clnorm_status st = clnorm_backward(
        plan, mask, tx.mem, tx.off, tdy.mem, tdy.off, tm.mem, tm.off, tr.mem, tr.off, tg.mem,
        tg.off, dx_mem, dxt->off, tdg.mem, tdg.off, tdb.mem, tdb.off,
        launch->explicit_queue ? queue : NULL, 0, NULL, &ev);
    if (st != CLNORM_OK)
        fail_msg("clnorm_backward(%s, %s, %s, %zu x %zu, mask %u, strides %zu/%zu%s) = %d (%s): "
                 "%s",
                 clnorm_strategy_name(clnorm_plan_strategy(plan)), gu_fmt_name(T),
                 d->kind == CLNORM_RMS ? "rms" : "layer", d->rows, d->cols, mask, xs, ys,
                 launch->in_place ? ", in place" : "", st, clnorm_status_string(st),
                 clnorm_last_error(ctx));
    wait_event(ev, queue, "clnorm_backward");

    dev_tensor *all[] = {&tx, &tdy, &tm, &tr, &tg, &tdx, &tdg, &tdb};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        dev_read(all[i], queue);
    size_t bad = 0;
    bad += dev_check_input(&tx, x, "x");
    if (launch->in_place && want_dx) {
        bad += dev_check_frame(&tdy, "dx (in place of dy)");
        bad += gu_count_gap_changed(T, dev_data(&tdy), d->rows, d->cols, ys, 0,
                                    "dx (in place of dy)");
    } else {
        bad += dev_check_input(&tdy, dy, "dy");
    }
    bad += dev_check_input(&tm, mean, "mean");
    bad += dev_check_input(&tr, rstd, "rstd");
    bad += dev_check_input(&tg, gamma, "gamma");
    if (want_dx && !launch->in_place) {
        bad += dev_check_frame(&tdx, "dx");
        bad += gu_count_gap_changed(T, dev_data(&tdx), d->rows, d->cols, xs, 1, "dx");
    }
    bad += dev_check_frame(&tdg, "dgamma");
    bad += dev_check_frame(&tdb, "dbeta");
    if (want_dx && dx != NULL && xn)
        memcpy(dx, dev_data(dxt), xn * gu_size(T));
    if (tdg.mem != NULL && dgamma != NULL)
        memcpy(dgamma, dev_data(&tdg), d->cols * gu_size(P));
    if (tdb.mem != NULL && dbeta != NULL)
        memcpy(dbeta, dev_data(&tdb), d->cols * gu_size(P));
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        dev_free(all[i]);
    if (bad)
        fail_msg("clnorm_backward(%s, %s, %zu x %zu, mask %u, strides %zu/%zu): %zu elements "
                 "around the outputs or of the inputs were modified",
                 clnorm_strategy_name(clnorm_plan_strategy(plan)), gu_fmt_name(T), d->rows,
                 d->cols, mask, xs, ys, bad);
}

clnorm_ctx *gu_context(const char *suite)
{
    clnorm_ctx *ctx = NULL;
    if (clnorm_create(NULL, &ctx) != CLNORM_OK)
        return NULL; /* device tests skip */
    print_message("%s: running on %s\n", suite, clnorm_device_name(ctx));
    return ctx;
}
