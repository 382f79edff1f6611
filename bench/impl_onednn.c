/* oneDNN's CPU layer normalization, forward, built where libdnnl was found at configure time
 * (CLNORM_WITH_ONEDNN_BENCH, compile definition CLNORM_HAVE_DNNL). forward_inference,
 * use_scale | use_shift, src and dst 2-D {rows, cols} with tag ab at the case's dtype (f32;
 * f16 and bf16 when this oneDNN implements them on this CPU, skipped otherwise; never f64),
 * scale and shift float32, statistics computed; for a -stats op (layer-stats: precomputed
 * statistics) given, dnnl_use_global_stats with the case's mean and the variance of its rstd
 * (bench_dnnl_variance), so that both sides run the elementwise apply. One primitive per case; each run
 * points the src/dst memory objects at the next host buffer set (dnnl_memory_set_data_handle),
 * executes and waits on the stream.
 *
 * Both C APIs are handled: oneDNN 2.x (op descriptor + dnnl_primitive_desc_create, Debian
 * 12's 2.6) and 3.x (dnnl_layer_normalization_forward_primitive_desc_create, opaque memory
 * descriptors). RMS normalization needs the dnnl_rms_norm flag of oneDNN 3.3 and later;
 * older versions skip --op rms. Threads: see onednn_util.c. */
#include "onednn_util.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    const bench_env *env;
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    dnnl_primitive_desc_t pd;
    dnnl_primitive_t prim;
    dnnl_memory_t src, dst, scale, shift, mean, var; /* mean, var: a -stats op */
    float *variance;
} dnnl_state;

static void destroy(void *state)
{
    dnnl_state *s = state;
    if (!s)
        return;
    dnnl_memory_t mems[] = {s->src, s->dst, s->scale, s->shift, s->mean, s->var};
    for (size_t i = 0; i < sizeof mems / sizeof mems[0]; i++)
        if (mems[i])
            dnnl_memory_destroy(mems[i]);
    if (s->prim)
        dnnl_primitive_destroy(s->prim);
    if (s->pd)
        dnnl_primitive_desc_destroy(s->pd);
    if (s->stream)
        dnnl_stream_destroy(s->stream);
    if (s->engine)
        dnnl_engine_destroy(s->engine);
    free(s->variance);
    free(s);
}

/* The memory objects (src/dst without a buffer yet) and the primitive. */
static dnnl_status_t make_primitive(dnnl_state *s, const bench_dnnl_md *data_md,
                                    const bench_dnnl_md *param_md, const bench_dnnl_md *stat_md,
                                    const char **what)
{
    const bench_host_sets *h = s->env->host;
    *what = "dnnl_memory_create";
    dnnl_status_t st = dnnl_memory_create(&s->src, BENCH_MD(*data_md), s->engine,
                                          DNNL_MEMORY_NONE);
    if (st == dnnl_success)
        st = dnnl_memory_create(&s->dst, BENCH_MD(*data_md), s->engine, DNNL_MEMORY_NONE);
    if (st == dnnl_success)
        st = bench_dnnl_params(s->engine, param_md, h->vec[CLNORM_ARG_GAMMA],
                               h->vec[CLNORM_ARG_BETA], &s->scale, &s->shift);
    if (st == dnnl_success && s->variance && h->vec[CLNORM_ARG_MEAN]) /* RMS: no mean */
        st = dnnl_memory_create(&s->mean, BENCH_MD(*stat_md), s->engine,
                                h->vec[CLNORM_ARG_MEAN]);
    if (st == dnnl_success && s->variance)
        st = dnnl_memory_create(&s->var, BENCH_MD(*stat_md), s->engine, s->variance);
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
    dnnl_state *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(msg, msg_size, "out of host memory");
        return BENCH_FAIL;
    }
    s->env = env;
    if (flags & (unsigned)dnnl_use_global_stats) { /* bench_dnnl_begin: a -stats op */
        /* oneDNN runs only f32/f16/bf16 here: the statistics are float */
        if (!(s->variance = bench_dnnl_variance(env->host->vec[CLNORM_ARG_RSTD], p->rows,
                                                p->eps))) {
            destroy(s);
            snprintf(msg, msg_size, "out of host memory");
            return BENCH_FAIL;
        }
    }
    const char *what = "dnnl_memory_desc";
    bench_dnnl_md data_md, param_md, stat_md;
    memset(&stat_md, 0, sizeof stat_md);
    dnnl_status_t st =
        bench_dnnl_setup(p, dt, &s->engine, &s->stream, &data_md, &param_md, &what);
    if (st == dnnl_success)
        st = bench_dnnl_md_1d(&stat_md, p->rows, dnnl_f32);
    int pd_failed = 0;
    if (st == dnnl_success)
        pd_failed = (st = bench_dnnl_lnorm_fwd_pd(s->engine, p, &data_md, flags, &s->pd,
                                                 &what)) != dnnl_success;
    if (st == dnnl_success)
        st = make_primitive(s, &data_md, &param_md, &stat_md, &what);
    bench_dnnl_md_free(&data_md);
    bench_dnnl_md_free(&param_md);
    bench_dnnl_md_free(&stat_md);
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
    dnnl_state *s = state;
    const bench_host_sets *h = s->env->host;
    dnnl_status_t st = dnnl_memory_set_data_handle(s->src, bench_host_arg(h, set, CLNORM_ARG_X));
    if (st == dnnl_success)
        st = dnnl_memory_set_data_handle(s->dst, bench_host_arg(h, set, CLNORM_ARG_Y));
    if (st != dnnl_success)
        return bench_dnnl_fail(st, "dnnl_memory_set_data_handle", msg, msg_size);
    dnnl_exec_arg_t args[6] = {
        {DNNL_ARG_SRC, s->src},
        {DNNL_ARG_DST, s->dst},
        {DNNL_ARG_SCALE, s->scale},
        {DNNL_ARG_SHIFT, s->shift},
    };
    int n_args = 4;
    if (s->mean)
        args[n_args++] = (dnnl_exec_arg_t){DNNL_ARG_MEAN, s->mean};
    if (s->var)
        args[n_args++] = (dnnl_exec_arg_t){DNNL_ARG_VARIANCE, s->var};
    st = dnnl_primitive_execute(s->prim, s->stream, n_args, args);
    if (st != dnnl_success)
        return bench_dnnl_fail(st, "dnnl_primitive_execute", msg, msg_size);
    st = dnnl_stream_wait(s->stream);
    if (st != dnnl_success)
        return bench_dnnl_fail(st, "dnnl_stream_wait", msg, msg_size);
    return BENCH_OK;
}

/* x, y, gamma, beta, and the given statistics: the plain forward ops (layer; rms where
 * oneDNN has it) and their -stats variants */
#define ONEDNN_SLOTS                                                                         \
    (BENCH_SLOT(CLNORM_ARG_X) | BENCH_SLOT(CLNORM_ARG_Y) | BENCH_SLOT(CLNORM_ARG_GAMMA) |    \
     BENCH_SLOT(CLNORM_ARG_BETA) | BENCH_SLOT(CLNORM_ARG_MEAN) | BENCH_SLOT(CLNORM_ARG_RSTD))

const bench_contender bench_onednn = {.name = "onednn", .side = BENCH_HOST,
                                      .role = BENCH_ROLE_ONEDNN, .slots = ONEDNN_SLOTS,
                                      .create = create, .run = run, .destroy = destroy};
