/*
 * lnlstm_device.c - the LN-LSTM on one OpenCL queue. Up front, one CLBlast GEMM gives W_x x_t
 * for every t and one clnorm call normalizes its T*B rows; each step is then one GEMM
 * (W_h h_{t-1}), one clnorm LayerNorm of B rows, the gate kernel, the LayerNorm of c_t and the
 * output kernel, which writes h_t where the next step's GEMM reads it. Nothing waits on the
 * host between steps: the in-order queue chains them.
 *
 * Fused (the default): the sum LN(W_h h) + LN(W_x x_t) + b is made by the first LayerNorm
 * itself. Each of its B rows is a sample whose per-sample shift (CLNORM_SHIFT, adaLN's) is
 * that row of LN(W_x x_t), read in place, and b is folded into LN(W_x x)'s beta once; the
 * gate kernel then reads one tensor instead of three. Unfused, the gate kernel adds them.
 */
#include "lnlstm.h"

#include <string.h>

typedef struct {
    cl_mem x, w_x, w_h, b, alpha1, beta1, alpha2, beta2, alpha3, beta3, h0, c0;
    cl_mem gx;  /* (T*B, 4H): LN(W_x x_t), all t */
    cl_mem hw;  /* (B, 4H): W_h h_{t-1}, normalized in place */
    cl_mem c;   /* (B, H): the cell state, updated in place */
    cl_mem so;  /* (B, H): sigmoid(o) */
    cl_mem lnc; /* (B, H): LN(c_t) */
    cl_mem h;   /* (T, B, H): the output, and h_{t-1} of each step */
    cl_mem beta2b; /* fused: beta2 + b, LN(W_x x)'s beta */
    clnorm_plan *ln_x, *ln_h, *ln_c;
    cl_kernel gates, output;
    int fused;
} lstm_dev;

static void dev_free(lstm_dev *d)
{
    cl_mem *mems[] = {&d->x,      &d->w_x,   &d->w_h,    &d->b,     &d->alpha1, &d->beta1,
                      &d->alpha2, &d->beta2, &d->alpha3, &d->beta3, &d->h0,     &d->c0,
                      &d->gx,     &d->hw,    &d->c,      &d->so,    &d->lnc,    &d->h,
                      &d->beta2b};
    for (size_t i = 0; i < sizeof mems / sizeof mems[0]; i++)
        if (*mems[i])
            clReleaseMemObject(*mems[i]);
    clnorm_plan_free(d->ln_x);
    clnorm_plan_free(d->ln_h);
    clnorm_plan_free(d->ln_c);
    if (d->gates)
        clReleaseKernel(d->gates);
    if (d->output)
        clReleaseKernel(d->output);
    memset(d, 0, sizeof *d);
}

/* A LayerNorm of rows x cols; `shift`: each row a sample of its own with a per-sample shift
 * (rows cols apart). */
static int ln_plan(app_env *env, size_t rows, size_t cols, int shift, const char *what,
                   clnorm_plan **p)
{
    clnorm_desc desc;
    clnorm_desc_init(&desc, CLNORM_LAYER, rows, cols);
    desc.dtype = app_dtype(env);
    desc.eps = LNLSTM_EPS;
    if (shift) {
        desc.flags |= CLNORM_SHIFT;
        desc.samples = rows;
    }
    return app_plan(env, &desc, what, p);
}

static int dev_init(app_env *env, const lnlstm_model *m, int fused, lstm_dev *d)
{
    memset(d, 0, sizeof *d);
    d->fused = fused;
    size_t T = m->T, B = m->B, H = m->H, G = 4 * m->H;
    if (!(d->x = app_buffer(env, m->x.count, m->x.data, "X")) ||
        !(d->w_x = app_buffer(env, m->w_x.count, m->w_x.data, "W_x")) ||
        !(d->w_h = app_buffer(env, m->w_h.count, m->w_h.data, "W_h")) ||
        !(d->b = app_buffer(env, G, m->b.data, "b")) ||
        !(d->alpha1 = app_buffer(env, G, m->alpha1.data, "alpha1")) ||
        !(d->beta1 = app_buffer(env, G, m->beta1.data, "beta1")) ||
        !(d->alpha2 = app_buffer(env, G, m->alpha2.data, "alpha2")) ||
        !(d->beta2 = app_buffer(env, G, m->beta2.data, "beta2")) ||
        !(d->alpha3 = app_buffer(env, H, m->alpha3.data, "alpha3")) ||
        !(d->beta3 = app_buffer(env, H, m->beta3.data, "beta3")) ||
        !(d->h0 = app_buffer(env, B * H, m->h0.data, "h0")) ||
        !(d->c0 = app_buffer(env, B * H, m->c0.data, "c0")) ||
        !(d->gx = app_buffer(env, T * B * G, NULL, "W_x x")) ||
        !(d->hw = app_buffer(env, B * G, NULL, "W_h h")) ||
        !(d->c = app_buffer(env, B * H, NULL, "c")) ||
        !(d->so = app_buffer(env, B * H, NULL, "sigmoid(o)")) ||
        !(d->lnc = app_buffer(env, B * H, NULL, "LN(c)")) ||
        !(d->h = app_buffer(env, T * B * H, NULL, "h")))
        return -1;
    if (ln_plan(env, T * B, G, 0, "LN(W_x x)", &d->ln_x) ||
        ln_plan(env, B, G, fused, "LN(W_h h)", &d->ln_h) ||
        ln_plan(env, B, H, 0, "LN(c)", &d->ln_c))
        return -1;
    if (app_kernel(env, fused ? "lstm_cell" : "lstm_gates", &d->gates) ||
        app_kernel(env, "lstm_output", &d->output))
        return -1;
    if (fused) {
        /* beta2 + b, summed on the device in its own precision (at set-up, once). */
        cl_kernel add;
        cl_uint g32 = (cl_uint)G;
        if (!(d->beta2b = app_buffer(env, G, NULL, "beta2 + b")) ||
            app_kernel(env, "add_rows", &add))
            return -1;
        app_karg aa[] = {{sizeof(cl_mem), &d->beta2b}, {sizeof(cl_mem), &d->beta2},
                         {sizeof(cl_mem), &d->b},      {sizeof g32, &g32}};
        int rc = app_set_args(add, "add_rows", aa, 4) ||
                 app_launch(env, add, "add_rows", G, APP_OTHER, NULL) ||
                 app_cl_check(clFinish(env->queue), "beta2 + b");
        clReleaseKernel(add);
        if (rc)
            return -1;
    }
    /* Offsets (arguments 2 of lstm_gates, 3 of lstm_output) are set again at each step. */
    cl_uint b32 = (cl_uint)B, h32 = (cl_uint)H, n32 = (cl_uint)(B * H);
    cl_ulong zero = 0;
    app_karg ga[] = {{sizeof(cl_mem), &d->hw}, {sizeof(cl_mem), &d->gx}, {sizeof zero, &zero},
                     {sizeof(cl_mem), &d->b},  {sizeof(cl_mem), &d->c},  {sizeof(cl_mem), &d->so},
                     {sizeof b32, &b32},       {sizeof h32, &h32}};
    app_karg ca[] = {{sizeof(cl_mem), &d->hw}, {sizeof(cl_mem), &d->c}, {sizeof(cl_mem), &d->so},
                     {sizeof b32, &b32},       {sizeof h32, &h32}};
    app_karg oa[] = {{sizeof(cl_mem), &d->so}, {sizeof(cl_mem), &d->lnc}, {sizeof(cl_mem), &d->h},
                     {sizeof(cl_ulong), &zero}, {sizeof n32, &n32}};
    if ((fused ? app_set_args(d->gates, "lstm_cell", ca, 5)
               : app_set_args(d->gates, "lstm_gates", ga, 8)) ||
        app_set_args(d->output, "lstm_output", oa, 5))
        return -1;
    return 0;
}

/* y = a W^T (+ beta * y): row-major, W stored (out, in) as torch's Linear keeps it. */
static int gemm_wt(app_env *env, size_t rows, size_t out, size_t in, cl_mem a, size_t a_off,
                   cl_mem w, cl_mem y, size_t y_off, app_timeline *tl, const char *what)
{
    app_gemm_args g = {.trans_b = 1, .m = rows, .n = out, .k = in, .alpha = 1.0, .beta = 0.0,
                       .a = a, .a_off = a_off, .lda = in, .b = w, .ldb = in,
                       .c = y, .c_off = y_off, .ldc = out};
    return app_gemm(env, &g, what, tl);
}

/* y = LN(x) * gamma + beta (y may be x: in place), plus the rows of `shift` from shift_off per
 * sample when shift is not NULL. */
static int norm(app_env *env, clnorm_plan *p, cl_mem x, cl_mem y, cl_mem gamma, cl_mem beta,
                cl_mem shift, size_t shift_off, app_timeline *tl, const char *what)
{
    clnorm_arg args[] = {{CLNORM_ARG_X, x, 0},
                         {CLNORM_ARG_Y, y, 0},
                         {CLNORM_ARG_GAMMA, gamma, 0},
                         {CLNORM_ARG_BETA, beta, 0},
                         {CLNORM_ARG_SHIFT, shift, shift_off}};
    return app_norm(env, p, args, shift ? 5 : 4, what, tl);
}

typedef struct {
    app_env *env;
    const lnlstm_model *m;
    lstm_dev *d;
} lstm_run;

/* Enqueues one whole sequence; nothing blocks. */
static int enqueue_sequence(void *state, app_timeline *tl)
{
    lstm_run *run = state;
    app_env *env = run->env;
    const lnlstm_model *m = run->m;
    lstm_dev *d = run->d;
    size_t T = m->T, B = m->B, H = m->H, G = 4 * m->H;
    cl_event ev;
    cl_int err = clEnqueueCopyBuffer(env->queue, d->c0, d->c, 0, 0, B * H * env->elem, 0,
                                     NULL, app_timeline_event(tl, &ev));
    if (app_cl_check(err, "c = c0") || app_timeline_add(tl, ev, APP_OTHER))
        return -1;
    if (gemm_wt(env, T * B, G, m->I, d->x, 0, d->w_x, d->gx, 0, tl, "W_x x (CLBlast GEMM)") ||
        norm(env, d->ln_x, d->gx, d->gx, d->alpha2, d->fused ? d->beta2b : d->beta2, NULL, 0, tl,
             "LN(W_x x)"))
        return -1;
    for (size_t t = 0; t < T; t++) {
        cl_mem h_prev = t ? d->h : d->h0;
        size_t h_prev_off = t ? (t - 1) * B * H : 0;
        if (gemm_wt(env, B, G, H, h_prev, h_prev_off, d->w_h, d->hw, 0, tl,
                    "W_h h (CLBlast GEMM)") ||
            norm(env, d->ln_h, d->hw, d->hw, d->alpha1, d->beta1, d->fused ? d->gx : NULL, t * B * G,
                 tl, "LN(W_h h)"))
            return -1;
        cl_ulong gx_off = (cl_ulong)(t * B * G), h_off = (cl_ulong)(t * B * H);
        err = d->fused ? CL_SUCCESS : clSetKernelArg(d->gates, 2, sizeof gx_off, &gx_off);
        if (app_cl_check(err, "lstm_gates") ||
            app_launch(env, d->gates, "lstm_gates", B * H, APP_OTHER, tl) ||
            norm(env, d->ln_c, d->c, d->lnc, d->alpha3, d->beta3, NULL, 0, tl, "LN(c)"))
            return -1;
        err = clSetKernelArg(d->output, 3, sizeof h_off, &h_off);
        if (app_cl_check(err, "lstm_output") ||
            app_launch(env, d->output, "lstm_output", B * H, APP_OTHER, tl))
            return -1;
    }
    return 0;
}

int lnlstm_device(app_env *env, const lnlstm_model *m, int fused, float *h_out, float *c_out,
                  app_timing *timing)
{
    lstm_dev d;
    int rc = -1;
    if (dev_init(env, m, fused, &d) == 0) {
        lstm_run run = {env, m, &d};
        rc = app_run(env, enqueue_sequence, &run, timing);
        if (rc == 0)
            rc = app_read(env, d.h, m->T * m->B * m->H, h_out) ||
                         app_read(env, d.c, m->B * m->H, c_out)
                     ? -1
                     : 0;
    }
    clFinish(env->queue);
    dev_free(&d);
    return rc;
}
