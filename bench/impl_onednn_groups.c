/* A bandwidth peer for GroupNorm (the group ops, forward and backward) from oneDNN, which has
 * no group normalization before 3.5 (Debian 12's 2.6 has none): its layer normalization over
 * the N x G rows of (C/G) x spatial elements that the groups of an NCHW tensor are, without
 * scale and shift (oneDNN's are per column of such a row; GroupNorm's are per channel, which
 * changes along the row). It moves the same bytes as GroupNorm (forward: x read, y written;
 * backward: x and dy read, dx written) and makes the same reductions, so it is the rate a
 * tuned CPU library gets for that traffic, and the denominator of x_onednn. It is not a
 * GroupNorm result: y lacks the per-channel affine, the backward computes dx alone (without
 * gamma; dgamma and dbeta are left unwritten) and in an NHWC case its rows are not the
 * groups; the check says "inexact baseline (bandwidth peer)". For the fused-SiLU ops
 * (group-silu) it is the same layer normalization, without the SiLU, which oneDNN 2.6's layer
 * normalization cannot fuse: still the rate of the traffic, not of the exponentials; for
 * the modulated ones (group-mod: the scale-shift norm, then the SiLU) the same again,
 * without the modulation either (it reads neither scale nor shift, nor writes dscale and
 * dshift). Its note: "LN <rows>x<cols>" (", dx only" for the backward, ", no modulation",
 * ", no SiLU"), then oneDNN's implementation.
 *
 * Forward: forward_inference, statistics computed. Backward: backward_data from the saved
 * mean and the variance 1 / rstd^2 - eps (the statistics of the NCHW groups, as
 * impl_onednn_backward.c derives them). The -stats ops (group-stats: precomputed statistics)
 * give oneDNN the same mean and variance with dnnl_use_global_stats, both directions: the
 * forward is then its elementwise apply, as clnorm's is. f32, and f16/bf16 where this oneDNN implements them
 * on this CPU; never f64. Both C APIs (see impl_onednn.c); threads: onednn_util.c. */
#include "onednn_util.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    const bench_env *env;
    int backward;
    int global; /* a -stats op: oneDNN's use_global_stats, the case's mean and variance */
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    dnnl_primitive_desc_t hint, pd;
    dnnl_primitive_t prim;
    dnnl_memory_t src, dst, diff_dst, diff_src, mean, var;
    float *variance; /* N x G, backward and -stats */
} groups_state;

static void destroy(void *state)
{
    groups_state *s = state;
    if (!s)
        return;
    dnnl_memory_t mems[] = {s->src, s->dst, s->diff_dst, s->diff_src, s->mean, s->var};
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
    free(s);
}

/* The primitive descriptor: forward_inference, or backward_data with a forward_training
 * hint. No scale, no shift; for a -stats op the given statistics (dnnl_use_global_stats). */
static dnnl_status_t make_pd(groups_state *s, const bench_problem *p,
                             const bench_dnnl_md *data_md, const bench_dnnl_md *stat_md,
                             const char **what)
{
    const unsigned flags = s->global ? (unsigned)dnnl_use_global_stats : 0u;
    if (!s->backward)
        return bench_dnnl_lnorm_fwd_pd(s->engine, p, data_md, flags, &s->pd, what);
#if DNNL_VERSION_MAJOR >= 3
    *what = "dnnl_layer_normalization_forward_primitive_desc_create (training hint)";
    dnnl_status_t st = dnnl_layer_normalization_forward_primitive_desc_create(
        &s->hint, s->engine, dnnl_forward_training, *data_md, *data_md, *stat_md, p->eps, flags,
        NULL);
    if (st == dnnl_success) {
        *what = "dnnl_layer_normalization_backward_primitive_desc_create";
        st = dnnl_layer_normalization_backward_primitive_desc_create(
            &s->pd, s->engine, dnnl_backward_data, *data_md, *data_md, *data_md, *stat_md,
            p->eps, flags, s->hint, NULL);
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
        st = dnnl_layer_normalization_backward_desc_init(&bwd, dnnl_backward_data, data_md,
                                                         data_md, stat_md, p->eps, flags);
    }
    if (st == dnnl_success) {
        *what = "dnnl_primitive_desc_create";
        st = dnnl_primitive_desc_create(&s->pd, &bwd, NULL, s->engine, s->hint);
    }
    return st;
#endif
}

static dnnl_status_t make_memory(groups_state *s, const bench_dnnl_md *data_md,
                                 const bench_dnnl_md *stat_md, const char **what)
{
    const bench_host_sets *h = s->env->host;
    *what = "dnnl_memory_create";
    dnnl_memory_t *per_set[3] = {&s->src, &s->dst, NULL};
    if (s->backward) {
        per_set[1] = &s->diff_dst;
        per_set[2] = &s->diff_src;
    }
    dnnl_status_t st = dnnl_success;
    for (size_t i = 0; i < 3 && per_set[i] && st == dnnl_success; i++)
        st = dnnl_memory_create(per_set[i], BENCH_MD(*data_md), s->engine, DNNL_MEMORY_NONE);
    if (s->variance && st == dnnl_success)
        st = dnnl_memory_create(&s->mean, BENCH_MD(*stat_md), s->engine,
                                h->vec[CLNORM_ARG_MEAN]);
    if (s->variance && st == dnnl_success)
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
    const size_t groups = p->shape.groups;
    const size_t rows = p->rows * groups, cols = p->n_elems / (rows ? rows : 1);
    groups_state *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(msg, msg_size, "out of host memory");
        return BENCH_FAIL;
    }
    s->env = env;
    s->backward = p->dir == CLNORM_BACKWARD;
    s->global = (p->info->stats_flags & CLNORM_USE_GLOBAL_STATS) != 0;
    if (s->backward || s->global) {
        /* f32/f16/bf16 only here: the statistics are float */
        const float *rstd = env->host->vec[CLNORM_ARG_RSTD];
        if (!env->host->vec[CLNORM_ARG_MEAN] || !rstd ||
            !(s->variance = bench_dnnl_variance(rstd, rows, p->eps))) {
            destroy(s);
            snprintf(msg, msg_size, rstd ? "out of host memory" : "no saved mean/rstd");
            return rstd ? BENCH_FAIL : BENCH_SKIP;
        }
    }
    const char *what = "dnnl_memory_desc";
    bench_dnnl_md data_md, stat_md;
    memset(&data_md, 0, sizeof data_md);
    memset(&stat_md, 0, sizeof stat_md);
    dnnl_status_t st = bench_dnnl_engine(&s->engine, &s->stream, &what);
    if (st == dnnl_success) {
        what = "dnnl_memory_desc";
        st = bench_dnnl_md_2d(&data_md, rows, cols, dt);
    }
    if (st == dnnl_success)
        st = bench_dnnl_md_1d(&stat_md, rows, dnnl_f32);
    int pd_failed = 0;
    if (st == dnnl_success)
        pd_failed = (st = make_pd(s, p, &data_md, &stat_md, &what)) != dnnl_success;
    if (st == dnnl_success)
        st = make_memory(s, &data_md, &stat_md, &what);
    bench_dnnl_md_free(&data_md);
    bench_dnnl_md_free(&stat_md);
    rc = bench_dnnl_end(p, st, pd_failed, what, s->pd, omp, note, note_size, msg, msg_size);
    if (rc != BENCH_OK) {
        destroy(s);
        return rc;
    }
    /* What it computes, before oneDNN's implementation and threads. */
    char impl[128];
    snprintf(impl, sizeof impl, "%s", note);
    snprintf(note, note_size, "LN %zux%zu%s%s%s%s; %s", rows, cols,
             s->global ? ", global stats" : "", s->backward ? ", dx only" : "",
             p->info->mod_flags ? ", no modulation" : "", p->info->act_flags ? ", no SiLU" : "",
             impl);
    *out = s;
    return BENCH_OK;
}

static int run(void *state, size_t set, char *msg, size_t msg_size)
{
    groups_state *s = state;
    const bench_host_sets *h = s->env->host;
    dnnl_exec_arg_t args[5];
    int n = 0;
    dnnl_status_t st = dnnl_memory_set_data_handle(s->src, bench_host_arg(h, set, CLNORM_ARG_X));
    args[n++] = (dnnl_exec_arg_t){DNNL_ARG_SRC, s->src};
    if (!s->backward) {
        if (st == dnnl_success)
            st = dnnl_memory_set_data_handle(s->dst, bench_host_arg(h, set, CLNORM_ARG_Y));
        args[n++] = (dnnl_exec_arg_t){DNNL_ARG_DST, s->dst};
        if (s->global) {
            args[n++] = (dnnl_exec_arg_t){DNNL_ARG_MEAN, s->mean};
            args[n++] = (dnnl_exec_arg_t){DNNL_ARG_VARIANCE, s->var};
        }
    } else {
        if (st == dnnl_success)
            st = dnnl_memory_set_data_handle(s->diff_dst, bench_host_arg(h, set, CLNORM_ARG_DY));
        if (st == dnnl_success)
            st = dnnl_memory_set_data_handle(s->diff_src, bench_host_arg(h, set, CLNORM_ARG_DX));
        args[n++] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_DST, s->diff_dst};
        args[n++] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_SRC, s->diff_src};
        args[n++] = (dnnl_exec_arg_t){DNNL_ARG_MEAN, s->mean};
        args[n++] = (dnnl_exec_arg_t){DNNL_ARG_VARIANCE, s->var};
    }
    if (st != dnnl_success)
        return bench_dnnl_fail(st, "dnnl_memory_set_data_handle", msg, msg_size);
    st = dnnl_primitive_execute(s->prim, s->stream, n, args);
    if (st != dnnl_success)
        return bench_dnnl_fail(st, "dnnl_primitive_execute", msg, msg_size);
    st = dnnl_stream_wait(s->stream);
    if (st != dnnl_success)
        return bench_dnnl_fail(st, "dnnl_stream_wait", msg, msg_size);
    return BENCH_OK;
}

const bench_contender bench_onednn_groups = {
    .name = "onednn_groups", .side = BENCH_HOST, .role = BENCH_ROLE_ONEDNN,
    .slots = BENCH_ANY_SLOT, .forms = BENCH_FORM_GROUPS,
    .inexact = "bandwidth peer",
    .create = create, .run = run, .destroy = destroy};
