/* oneDNN's CPU layer normalization, backward, where libdnnl was found (CLNORM_HAVE_DNNL).
 * prop_kind backward with use_scale | use_shift: diff_src, diff_scale and diff_shift from src,
 * diff_dst, scale and the saved statistics. The primitive descriptor takes a forward_training
 * one of the same shape and flags as its hint. Data 2-D {rows, cols}, tag ab, at the case's
 * dtype (f32; f16/bf16 where this oneDNN implements them on this CPU, skipped otherwise; never
 * f64); statistics, scale and the parameter gradients float32.
 *
 * oneDNN takes the variance, not rstd: it is computed once here from the same saved rstd
 * every contender uses (bench_dnnl_variance). For RMS (oneDNN 3.3+, flag dnnl_rms_norm) the
 * same formula gives the mean square and there is no mean. The -stats ops (layer-stats-
 * backward: precomputed statistics) add dnnl_use_global_stats: the statistics are constants,
 * dx = rstd * gamma * dy, as clnorm's CLNORM_USE_GLOBAL_STATS.
 *
 * Each run points src, diff_dst and diff_src at the next host buffer set, executes and waits
 * on the stream. The shift a use_shift primitive takes is zeros of its own: the backward
 * case has no beta, and oneDNN's backward does not read it. Both C APIs are handled (see
 * impl_onednn.c); threads: onednn_util.c. */
#include "onednn_util.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    const bench_env *env;
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    dnnl_primitive_desc_t hint, pd;
    dnnl_primitive_t prim;
    dnnl_memory_t src, diff_dst, diff_src, mean, var, scale, shift, diff_scale, diff_shift;
    float *variance; /* rows */
    float *zeros;    /* cols: the shift a use_shift primitive takes (the backward has no beta) */
} dnnl_bwd_state;

static void destroy(void *state)
{
    dnnl_bwd_state *s = state;
    if (!s)
        return;
    dnnl_memory_t mems[] = {s->src,   s->diff_dst, s->diff_src, s->mean,      s->var,
                            s->scale, s->shift,    s->diff_scale, s->diff_shift};
    for (size_t i = 0; i < sizeof mems / sizeof mems[0]; i++)
        if (mems[i])
            dnnl_memory_destroy(mems[i]);
    if (s->prim)
        dnnl_primitive_destroy(s->prim);
    if (s->pd)
        dnnl_primitive_desc_destroy(s->pd);
    if (s->hint)
        dnnl_primitive_desc_destroy(s->hint);
    if (s->stream)
        dnnl_stream_destroy(s->stream);
    if (s->engine)
        dnnl_engine_destroy(s->engine);
    free(s->variance);
    free(s->zeros);
    free(s);
}

/* The forward_training hint and the backward primitive descriptor. */
static dnnl_status_t make_pd(dnnl_bwd_state *s, const bench_problem *p,
                             const bench_dnnl_md *data_md, const bench_dnnl_md *stat_md,
                             unsigned flags, const char **what)
{
#if DNNL_VERSION_MAJOR >= 3
    *what = "dnnl_layer_normalization_forward_primitive_desc_create (training hint)";
    dnnl_status_t st = dnnl_layer_normalization_forward_primitive_desc_create(
        &s->hint, s->engine, dnnl_forward_training, *data_md, *data_md, *stat_md, p->eps, flags,
        NULL);
    if (st == dnnl_success) {
        *what = "dnnl_layer_normalization_backward_primitive_desc_create";
        st = dnnl_layer_normalization_backward_primitive_desc_create(
            &s->pd, s->engine, dnnl_backward, *data_md, *data_md, *data_md, *stat_md, p->eps,
            flags, s->hint, NULL);
    }
    return st;
#else
    dnnl_layer_normalization_desc_t fwd, bwd;
    *what = "dnnl_layer_normalization_forward_desc_init (training hint)";
    dnnl_status_t st = dnnl_layer_normalization_forward_desc_init(&fwd, dnnl_forward_training,
                                                                  data_md, stat_md, p->eps, flags);
    if (st == dnnl_success) {
        *what = "dnnl_primitive_desc_create (training hint)";
        st = dnnl_primitive_desc_create(&s->hint, &fwd, NULL, s->engine, NULL);
    }
    if (st == dnnl_success) {
        *what = "dnnl_layer_normalization_backward_desc_init";
        st = dnnl_layer_normalization_backward_desc_init(&bwd, dnnl_backward, data_md, data_md,
                                                         stat_md, p->eps, flags);
    }
    if (st == dnnl_success) {
        *what = "dnnl_primitive_desc_create";
        st = dnnl_primitive_desc_create(&s->pd, &bwd, NULL, s->engine, s->hint);
    }
    return st;
#endif
}

/* The memory objects (the per-set ones without a buffer yet) and the primitive. */
static dnnl_status_t make_primitive(dnnl_bwd_state *s, const bench_dnnl_md *data_md,
                                    const bench_dnnl_md *stat_md, const bench_dnnl_md *param_md,
                                    const char **what)
{
    const bench_host_sets *h = s->env->host;
    dnnl_memory_t *per_set[] = {&s->src, &s->diff_dst, &s->diff_src};
    *what = "dnnl_memory_create";
    dnnl_status_t st = dnnl_success;
    for (size_t i = 0; i < 3 && st == dnnl_success; i++)
        st = dnnl_memory_create(per_set[i], BENCH_MD(*data_md), s->engine, DNNL_MEMORY_NONE);
    if (st == dnnl_success && h->vec[CLNORM_ARG_MEAN])
        st = dnnl_memory_create(&s->mean, BENCH_MD(*stat_md), s->engine,
                                h->vec[CLNORM_ARG_MEAN]);
    if (st == dnnl_success)
        st = dnnl_memory_create(&s->var, BENCH_MD(*stat_md), s->engine, s->variance);
    if (st == dnnl_success)
        st = bench_dnnl_params(s->engine, param_md, h->vec[CLNORM_ARG_GAMMA], s->zeros,
                               &s->scale, &s->shift);
    if (st == dnnl_success)
        st = dnnl_memory_create(&s->diff_scale, BENCH_MD(*param_md), s->engine,
                                h->vec[CLNORM_ARG_DGAMMA]);
    if (st == dnnl_success)
        st = dnnl_memory_create(&s->diff_shift, BENCH_MD(*param_md), s->engine,
                                h->vec[CLNORM_ARG_DBETA]);
    if (st == dnnl_success) {
        *what = "dnnl_primitive_create";
        st = dnnl_primitive_create(&s->prim, s->pd);
    }
    return st;
}

static int create(const bench_env *env, void **out, char *note, size_t note_size, char *msg,
                  size_t msg_size)
{
    const bench_problem *p = env->p;
    unsigned flags = 0;
    dnnl_data_type_t dt = dnnl_f32;
    int omp = 0;
    int rc = bench_dnnl_begin(env, &dt, &flags, &omp, msg, msg_size);
    if (rc != BENCH_OK)
        return rc;
    dnnl_bwd_state *s = calloc(1, sizeof *s);
    /* oneDNN runs only f32/f16/bf16 here: the saved statistics are float. */
    if (s) {
        s->variance = bench_dnnl_variance(env->host->vec[CLNORM_ARG_RSTD], p->rows, p->eps);
        s->zeros = calloc(p->cols, sizeof *s->zeros);
    }
    if (!s || !s->variance || !s->zeros) {
        destroy(s);
        snprintf(msg, msg_size, "out of host memory");
        return BENCH_FAIL;
    }
    s->env = env;

    const char *what = "dnnl_memory_desc";
    bench_dnnl_md data_md, stat_md, param_md;
    memset(&stat_md, 0, sizeof stat_md);
    dnnl_status_t st =
        bench_dnnl_setup(p, dt, &s->engine, &s->stream, &data_md, &param_md, &what);
    if (st == dnnl_success)
        st = bench_dnnl_md_1d(&stat_md, p->rows, dnnl_f32);
    int pd_failed = 0;
    if (st == dnnl_success)
        pd_failed = (st = make_pd(s, p, &data_md, &stat_md, flags, &what)) != dnnl_success;
    if (st == dnnl_success)
        st = make_primitive(s, &data_md, &stat_md, &param_md, &what);
    bench_dnnl_md_free(&data_md);
    bench_dnnl_md_free(&stat_md);
    bench_dnnl_md_free(&param_md);
    rc = bench_dnnl_end(p, st, pd_failed, what, s->pd, omp, note, note_size, msg, msg_size);
    if (rc != BENCH_OK) {
        destroy(s);
        return rc;
    }
    bench_dnnl_note_global(p, note, note_size);
    *out = s;
    return BENCH_OK;
}

static int run(void *state, size_t set, char *msg, size_t msg_size)
{
    dnnl_bwd_state *s = state;
    const bench_host_sets *h = s->env->host;
    dnnl_status_t st = dnnl_memory_set_data_handle(s->src, bench_host_arg(h, set, CLNORM_ARG_X));
    if (st == dnnl_success)
        st = dnnl_memory_set_data_handle(s->diff_dst, bench_host_arg(h, set, CLNORM_ARG_DY));
    if (st == dnnl_success)
        st = dnnl_memory_set_data_handle(s->diff_src, bench_host_arg(h, set, CLNORM_ARG_DX));
    if (st != dnnl_success)
        return bench_dnnl_fail(st, "dnnl_memory_set_data_handle", msg, msg_size);
    /* The shift is not read by the backward pass, but oneDNN 2.x counts it among the inputs
     * of a use_shift primitive (and ignores an argument a version does not use). */
    dnnl_exec_arg_t args[9] = {
        {DNNL_ARG_SRC, s->src},
        {DNNL_ARG_DIFF_DST, s->diff_dst},
        {DNNL_ARG_VARIANCE, s->var},
        {DNNL_ARG_SCALE, s->scale},
        {DNNL_ARG_SHIFT, s->shift},
        {DNNL_ARG_DIFF_SRC, s->diff_src},
        {DNNL_ARG_DIFF_SCALE, s->diff_scale},
        {DNNL_ARG_DIFF_SHIFT, s->diff_shift},
    };
    int n_args = 8;
    if (s->mean)
        args[n_args++] = (dnnl_exec_arg_t){DNNL_ARG_MEAN, s->mean};
    st = dnnl_primitive_execute(s->prim, s->stream, n_args, args);
    if (st != dnnl_success)
        return bench_dnnl_fail(st, "dnnl_primitive_execute", msg, msg_size);
    st = dnnl_stream_wait(s->stream);
    if (st != dnnl_success)
        return bench_dnnl_fail(st, "dnnl_stream_wait", msg, msg_size);
    return BENCH_OK;
}

/* x, dy, the saved statistics, gamma, dx, dgamma, dbeta: the plain backward ops */
#define ONEDNN_BWD_SLOTS                                                                     \
    (BENCH_SLOT(CLNORM_ARG_X) | BENCH_SLOT(CLNORM_ARG_DY) | BENCH_SLOT(CLNORM_ARG_MEAN) |    \
     BENCH_SLOT(CLNORM_ARG_RSTD) | BENCH_SLOT(CLNORM_ARG_GAMMA) | BENCH_SLOT(CLNORM_ARG_DX) | \
     BENCH_SLOT(CLNORM_ARG_DGAMMA) | BENCH_SLOT(CLNORM_ARG_DBETA))

const bench_contender bench_onednn_bwd = {.name = "onednn", .side = BENCH_HOST,
                                          .role = BENCH_ROLE_ONEDNN, .slots = ONEDNN_BWD_SLOTS,
                                          .create = create, .run = run, .destroy = destroy};
