/* Helpers of the oneDNN contenders (onednn_util.h): errors, threads, types, descriptors.
 *
 * Threads: oneDNN's OpenMP runtime (libgomp) reads OMP_NUM_THREADS when it is loaded, before
 * main, so when threads.c had to set the variable the count is applied here through
 * omp_set_num_threads, looked up at run time (oneDNN brings libgomp; clnorm-bench does not
 * link OpenMP itself). */
#include "onednn_util.h"

#include <dlfcn.h>
#include <oneapi/dnnl/dnnl_debug.h>
#include <stdlib.h>
#include <string.h>

int bench_dnnl_fail(dnnl_status_t st, const char *what, char *msg, size_t msg_size)
{
    snprintf(msg, msg_size, "%s: %s", what, dnnl_status2str(st));
    return BENCH_FAIL;
}

int bench_dnnl_pd_fail(const bench_problem *p, dnnl_status_t st, const char *what, char *msg,
                       size_t msg_size)
{
    if (st == dnnl_unimplemented && p->dtype != CLNORM_F32) {
        snprintf(msg, msg_size, "oneDNN %d.%d has no %s layer normalization %s on this CPU (%s)",
                 DNNL_VERSION_MAJOR, DNNL_VERSION_MINOR, bench_dtype_name(p->dtype),
                 bench_op_is_backward(p->op) ? "backward" : "forward", what);
        return BENCH_SKIP;
    }
    return bench_dnnl_fail(st, what, msg, msg_size);
}

int bench_dnnl_omp_threads(const bench_threads *t)
{
    typedef void (*set_fn)(int);
    typedef int (*get_fn)(void);
    static int applied;
    int n = 0;
    void *self = dlopen(NULL, RTLD_LAZY);
    if (!self)
        return 0;
    void *set_sym = dlsym(self, "omp_set_num_threads");
    void *get_sym = dlsym(self, "omp_get_max_threads");
    set_fn set = NULL;
    get_fn get = NULL;
    /* ISO C has no object-to-function pointer conversion; POSIX guarantees this copy works. */
    if (set_sym)
        memcpy(&set, &set_sym, sizeof set);
    if (get_sym)
        memcpy(&get, &get_sym, sizeof get);
    if (set && !t->omp_was_set && !applied) {
        set(t->omp_threads);
        applied = 1;
    }
    if (get)
        n = get();
    dlclose(self);
    return n;
}

int bench_dnnl_case(const bench_problem *p, dnnl_data_type_t *dt, unsigned *flags, char *msg,
                    size_t msg_size)
{
    if (!p->info->has_mean) {
#if BENCH_DNNL_HAS_RMS
        *flags |= dnnl_rms_norm;
#else
        snprintf(msg, msg_size, "oneDNN %d.%d has no RMS normalization (3.3+ has)",
                 DNNL_VERSION_MAJOR, DNNL_VERSION_MINOR);
        return BENCH_SKIP;
#endif
    }
    switch (p->dtype) {
    case CLNORM_F32: *dt = dnnl_f32; return BENCH_OK;
    case CLNORM_F16: *dt = dnnl_f16; return BENCH_OK;
    case CLNORM_BF16: *dt = dnnl_bf16; return BENCH_OK;
    case CLNORM_F64: break;
    }
    snprintf(msg, msg_size, "oneDNN's CPU layer normalization has no f64");
    return BENCH_SKIP;
}

static dnnl_status_t md_init(bench_dnnl_md *md, int ndims, const dnnl_dims_t dims,
                             dnnl_data_type_t dt, dnnl_format_tag_t tag)
{
#if DNNL_VERSION_MAJOR >= 3
    *md = NULL;
    return dnnl_memory_desc_create_with_tag(md, ndims, dims, dt, tag);
#else
    return dnnl_memory_desc_init_by_tag(md, ndims, dims, dt, tag);
#endif
}

dnnl_status_t bench_dnnl_md_2d(bench_dnnl_md *md, size_t rows, size_t cols, dnnl_data_type_t dt)
{
    const dnnl_dims_t dims = {(dnnl_dim_t)rows, (dnnl_dim_t)cols};
    return md_init(md, 2, dims, dt, dnnl_ab);
}

dnnl_status_t bench_dnnl_md_1d(bench_dnnl_md *md, size_t n, dnnl_data_type_t dt)
{
    const dnnl_dims_t dims = {(dnnl_dim_t)n};
    return md_init(md, 1, dims, dt, dnnl_a);
}

void bench_dnnl_md_free(bench_dnnl_md *md)
{
#if DNNL_VERSION_MAJOR >= 3
    if (*md)
        dnnl_memory_desc_destroy(*md);
    *md = NULL;
#else
    (void)md;
#endif
}

dnnl_status_t bench_dnnl_engine(dnnl_engine_t *engine, dnnl_stream_t *stream, const char **what)
{
    *what = "dnnl_engine_create";
    dnnl_status_t st = dnnl_engine_create(engine, dnnl_cpu, 0);
    if (st == dnnl_success) {
        *what = "dnnl_stream_create";
        st = dnnl_stream_create(stream, *engine, dnnl_stream_default_flags);
    }
    return st;
}

void bench_dnnl_note(const_dnnl_primitive_desc_t pd, int omp, char *note, size_t note_size)
{
    const char *impl = NULL;
    if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success)
        impl = NULL;
    if (omp > 0)
        snprintf(note, note_size, "%s, %d omp thread%s", impl ? impl : "?", omp,
                 omp == 1 ? "" : "s");
    else
        snprintf(note, note_size, "%s", impl ? impl : "?");
}

int bench_dnnl_begin(const bench_env *env, dnnl_data_type_t *dt, unsigned *flags, int *omp,
                     char *msg, size_t msg_size)
{
    *flags = dnnl_use_scale | dnnl_use_shift;
    if (env->p->info->stats_flags & CLNORM_USE_GLOBAL_STATS)
        *flags |= (unsigned)dnnl_use_global_stats; /* the case's statistics, as clnorm's */
    *dt = dnnl_f32;
    int rc = bench_dnnl_case(env->p, dt, flags, msg, msg_size);
    if (rc == BENCH_OK)
        *omp = bench_dnnl_omp_threads(env->threads);
    return rc;
}

dnnl_status_t bench_dnnl_setup(const bench_problem *p, dnnl_data_type_t dt,
                               dnnl_engine_t *engine, dnnl_stream_t *stream,
                               bench_dnnl_md *data_md, bench_dnnl_md *param_md, const char **what)
{
    memset(data_md, 0, sizeof *data_md);
    memset(param_md, 0, sizeof *param_md);
    dnnl_status_t st = bench_dnnl_engine(engine, stream, what);
    if (st == dnnl_success) {
        *what = "dnnl_memory_desc";
        st = bench_dnnl_md_2d(data_md, p->rows, p->cols, dt);
    }
    if (st == dnnl_success)
        st = bench_dnnl_md_1d(param_md, p->cols, dnnl_f32);
    return st;
}

dnnl_status_t bench_dnnl_params(dnnl_engine_t engine, const bench_dnnl_md *param_md,
                                void *gamma, void *beta, dnnl_memory_t *scale,
                                dnnl_memory_t *shift)
{
    dnnl_status_t st = dnnl_memory_create(scale, BENCH_MD(*param_md), engine, gamma);
    if (st == dnnl_success)
        st = dnnl_memory_create(shift, BENCH_MD(*param_md), engine, beta);
    return st;
}

void bench_dnnl_note_global(const bench_problem *p, char *note, size_t note_size)
{
    if (!(p->info->stats_flags & CLNORM_USE_GLOBAL_STATS) || note_size == 0)
        return;
    char impl[256];
    snprintf(impl, sizeof impl, "%s", note);
    snprintf(note, note_size, "global stats; %s", impl);
}

float *bench_dnnl_variance(const float *rstd, size_t n, float eps)
{
    float *var = malloc((n ? n : 1) * sizeof *var);
    for (size_t r = 0; var && r < n; r++) {
        const double v = 1.0 / ((double)rstd[r] * rstd[r]) - (double)eps;
        var[r] = (float)(v > 0.0 ? v : 0.0);
    }
    return var;
}

dnnl_status_t bench_dnnl_lnorm_fwd_pd(dnnl_engine_t engine, const bench_problem *p,
                                      const bench_dnnl_md *data_md, unsigned flags,
                                      dnnl_primitive_desc_t *pd, const char **what)
{
#if DNNL_VERSION_MAJOR >= 3
    *what = "dnnl_layer_normalization_forward_primitive_desc_create";
    return dnnl_layer_normalization_forward_primitive_desc_create(
        pd, engine, dnnl_forward_inference, *data_md, *data_md, NULL, p->eps, flags, NULL);
#else
    dnnl_layer_normalization_desc_t ln;
    *what = "dnnl_layer_normalization_forward_desc_init";
    dnnl_status_t st = dnnl_layer_normalization_forward_desc_init(&ln, dnnl_forward_inference,
                                                                  data_md, NULL, p->eps, flags);
    if (st == dnnl_success) {
        *what = "dnnl_primitive_desc_create";
        st = dnnl_primitive_desc_create(pd, &ln, NULL, engine, NULL);
    }
    return st;
#endif
}

int bench_dnnl_end(const bench_problem *p, dnnl_status_t st, int pd_failed, const char *what,
                   const_dnnl_primitive_desc_t pd, int omp, char *note, size_t note_size,
                   char *msg, size_t msg_size)
{
    if (st != dnnl_success)
        return pd_failed ? bench_dnnl_pd_fail(p, st, what, msg, msg_size)
                         : bench_dnnl_fail(st, what, msg, msg_size);
    bench_dnnl_note(pd, omp, note, note_size);
    return BENCH_OK;
}
