/* The unfused pair on the host through oneDNN, for a forward op with a residual (add-layer,
 * add-rms), where libdnnl was found: a binary primitive (dnnl_binary_add: s = x + residual,
 * written to the sum array of the set), then the layer normalization of impl_onednn.c on s
 * into y (forward_inference, use_scale | use_shift). Both on the same host buffers as every
 * CPU contender, executed one after the other on one stream and timed together up to the
 * stream's wait. RMS normalization needs oneDNN 3.3 (dnnl_rms_norm): older versions skip
 * add-rms. As with the device pair, s is rounded to the storage type before the norm: with
 * bf16 storage an inexact baseline. Both C APIs are handled (see impl_onednn.c); threads:
 * onednn_util.c. */
#include "onednn_util.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    const bench_env *env;
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    dnnl_primitive_desc_t add_pd, norm_pd;
    dnnl_primitive_t add, norm;
    dnnl_memory_t x, r, s, y, scale, shift;
} unfused_state;

static void destroy(void *state)
{
    unfused_state *s = state;
    if (!s)
        return;
    dnnl_memory_t mems[] = {s->x, s->r, s->s, s->y, s->scale, s->shift};
    for (size_t i = 0; i < sizeof mems / sizeof mems[0]; i++)
        if (mems[i])
            dnnl_memory_destroy(mems[i]);
    dnnl_primitive_t prims[] = {s->add, s->norm};
    for (size_t i = 0; i < 2; i++)
        if (prims[i])
            dnnl_primitive_destroy(prims[i]);
    dnnl_primitive_desc_t pds[] = {s->add_pd, s->norm_pd};
    for (size_t i = 0; i < 2; i++)
        if (pds[i])
            dnnl_primitive_desc_destroy(pds[i]);
    if (s->stream)
        dnnl_stream_destroy(s->stream);
    if (s->engine)
        dnnl_engine_destroy(s->engine);
    free(s);
}

/* The binary add of two data_md tensors into a third. */
static dnnl_status_t make_add_pd(unfused_state *s, const bench_dnnl_md *data_md,
                                 const char **what)
{
#if DNNL_VERSION_MAJOR >= 3
    *what = "dnnl_binary_primitive_desc_create";
    return dnnl_binary_primitive_desc_create(&s->add_pd, s->engine, dnnl_binary_add, *data_md,
                                             *data_md, *data_md, NULL);
#else
    dnnl_binary_desc_t bd;
    *what = "dnnl_binary_desc_init";
    dnnl_status_t st = dnnl_binary_desc_init(&bd, dnnl_binary_add, data_md, data_md, data_md);
    if (st == dnnl_success) {
        *what = "dnnl_primitive_desc_create (binary)";
        st = dnnl_primitive_desc_create(&s->add_pd, &bd, NULL, s->engine, NULL);
    }
    return st;
#endif
}

/* The memory objects (the per-set ones without a buffer yet) and both primitives. */
static dnnl_status_t make_primitives(unfused_state *s, const bench_dnnl_md *data_md,
                                     const bench_dnnl_md *param_md, const char **what)
{
    const bench_host_sets *h = s->env->host;
    dnnl_memory_t *per_set[] = {&s->x, &s->r, &s->s, &s->y};
    *what = "dnnl_memory_create";
    dnnl_status_t st = dnnl_success;
    for (size_t i = 0; i < 4 && st == dnnl_success; i++)
        st = dnnl_memory_create(per_set[i], BENCH_MD(*data_md), s->engine, DNNL_MEMORY_NONE);
    if (st == dnnl_success)
        st = bench_dnnl_params(s->engine, param_md, h->vec[CLNORM_ARG_GAMMA],
                               h->vec[CLNORM_ARG_BETA], &s->scale, &s->shift);
    if (st == dnnl_success) {
        *what = "dnnl_primitive_create";
        st = dnnl_primitive_create(&s->add, s->add_pd);
    }
    if (st == dnnl_success)
        st = dnnl_primitive_create(&s->norm, s->norm_pd);
    return st;
}

/* "binary impl + normalization impl, N omp threads" */
static void make_note(const unfused_state *s, int omp, char *note, size_t note_size)
{
    char add[80], norm[96];
    bench_dnnl_note(s->add_pd, 0, add, sizeof add);
    bench_dnnl_note(s->norm_pd, omp, norm, sizeof norm);
    snprintf(note, note_size, "%s + %s", add, norm);
}

static int create(const bench_env *env, void **out, char *note, size_t note_size, char *msg,
                  size_t msg_size)
{
    const bench_problem *p = env->p;
    if (p->slot[CLNORM_ARG_RESIDUAL].dtype != p->slot[CLNORM_ARG_X].dtype) {
        snprintf(msg, msg_size, "the residual's type differs from x's: not set up for oneDNN");
        return BENCH_SKIP;
    }
    unsigned flags = 0;
    dnnl_data_type_t dt = dnnl_f32;
    int omp = 0;
    int rc = bench_dnnl_begin(env, &dt, &flags, &omp, msg, msg_size);
    if (rc != BENCH_OK)
        return rc;
    unfused_state *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(msg, msg_size, "out of host memory");
        return BENCH_FAIL;
    }
    s->env = env;
    const char *what = "dnnl_memory_desc";
    bench_dnnl_md data_md, param_md;
    dnnl_status_t st =
        bench_dnnl_setup(p, dt, &s->engine, &s->stream, &data_md, &param_md, &what);
    int pd_failed = 0;
    if (st == dnnl_success && (st = make_add_pd(s, &data_md, &what)) != dnnl_success &&
        st == dnnl_unimplemented && p->dtype != CLNORM_F32) {
        bench_dnnl_md_free(&data_md);
        bench_dnnl_md_free(&param_md);
        destroy(s);
        snprintf(msg, msg_size, "oneDNN %d.%d has no %s binary add on this CPU (%s)",
                 DNNL_VERSION_MAJOR, DNNL_VERSION_MINOR, bench_dtype_name(p->dtype), what);
        return BENCH_SKIP;
    }
    if (st == dnnl_success)
        pd_failed = (st = bench_dnnl_lnorm_fwd_pd(s->engine, p, &data_md, flags, &s->norm_pd,
                                                  &what)) != dnnl_success;
    if (st == dnnl_success)
        st = make_primitives(s, &data_md, &param_md, &what);
    bench_dnnl_md_free(&data_md);
    bench_dnnl_md_free(&param_md);
    rc = bench_dnnl_end(p, st, pd_failed, what, s->norm_pd, omp, note, note_size, msg,
                        msg_size);
    if (rc != BENCH_OK) {
        destroy(s);
        return rc;
    }
    make_note(s, omp, note, note_size);
    *out = s;
    return BENCH_OK;
}

static int run(void *state, size_t set, char *msg, size_t msg_size)
{
    unfused_state *s = state;
    const bench_host_sets *h = s->env->host;
    const struct {
        dnnl_memory_t mem;
        clnorm_arg_slot slot;
    } per_set[] = {{s->x, CLNORM_ARG_X},
                   {s->r, CLNORM_ARG_RESIDUAL},
                   {s->s, CLNORM_ARG_SUM},
                   {s->y, CLNORM_ARG_Y}};
    for (size_t i = 0; i < 4; i++) {
        dnnl_status_t st = dnnl_memory_set_data_handle(per_set[i].mem,
                                                       bench_host_arg(h, set, per_set[i].slot));
        if (st != dnnl_success)
            return bench_dnnl_fail(st, "dnnl_memory_set_data_handle", msg, msg_size);
    }
    const dnnl_exec_arg_t add_args[] = {
        {DNNL_ARG_SRC_0, s->x},
        {DNNL_ARG_SRC_1, s->r},
        {DNNL_ARG_DST, s->s},
    };
    const dnnl_exec_arg_t norm_args[] = {
        {DNNL_ARG_SRC, s->s},
        {DNNL_ARG_DST, s->y},
        {DNNL_ARG_SCALE, s->scale},
        {DNNL_ARG_SHIFT, s->shift},
    };
    dnnl_status_t st = dnnl_primitive_execute(s->add, s->stream, 3, add_args);
    if (st != dnnl_success)
        return bench_dnnl_fail(st, "dnnl_primitive_execute (binary add)", msg, msg_size);
    st = dnnl_primitive_execute(s->norm, s->stream, 4, norm_args);
    if (st != dnnl_success)
        return bench_dnnl_fail(st, "dnnl_primitive_execute (normalization)", msg, msg_size);
    st = dnnl_stream_wait(s->stream);
    if (st != dnnl_success)
        return bench_dnnl_fail(st, "dnnl_stream_wait", msg, msg_size);
    return BENCH_OK;
}

/* x, residual, gamma, beta in; y and the sum out: the fused residual forward ops */
#define UNFUSED_SLOTS                                                                        \
    (BENCH_SLOT(CLNORM_ARG_X) | BENCH_SLOT(CLNORM_ARG_Y) | BENCH_SLOT(CLNORM_ARG_GAMMA) |    \
     BENCH_SLOT(CLNORM_ARG_BETA) | BENCH_SLOT(CLNORM_ARG_RESIDUAL) | BENCH_SLOT(CLNORM_ARG_SUM))
#define UNFUSED_NEEDS (BENCH_SLOT(CLNORM_ARG_RESIDUAL) | BENCH_SLOT(CLNORM_ARG_SUM))

const bench_contender bench_onednn_unfused = {
    .name = "onednn_unfused", .side = BENCH_HOST, .role = BENCH_ROLE_UNFUSED | BENCH_ROLE_ONEDNN,
    .slots = UNFUSED_SLOTS, .needs = UNFUSED_NEEDS, .inexact = "s rounded before the norm",
    .create = create, .run = run, .destroy = destroy};
