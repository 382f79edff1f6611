/* oneDNN's CPU layer normalization, built where libdnnl was found at configure time
 * (CLNORM_WITH_ONEDNN_BENCH, compile definition CLNORM_HAVE_DNNL). forward_inference,
 * use_scale | use_shift, f32, src and dst 2-D {rows, cols} with tag ab, statistics computed
 * (not given). One primitive per shape; each run points the src/dst memory objects at the
 * next host buffer set (dnnl_memory_set_data_handle), executes and waits on the stream.
 *
 * Both C APIs are handled: oneDNN 2.x (op descriptor + dnnl_primitive_desc_create, Debian
 * 12's 2.6) and 3.x (dnnl_layer_normalization_forward_primitive_desc_create, opaque memory
 * descriptors). RMS normalization needs the dnnl_rms_norm flag of oneDNN 3.3 and later;
 * older versions skip --op rms.
 *
 * Threads: oneDNN's OpenMP runtime (libgomp) reads OMP_NUM_THREADS when it is loaded, before
 * main, so when threads.c had to set the variable the count is applied here through
 * omp_set_num_threads, looked up at run time (oneDNN brings libgomp; clnorm-bench does not
 * link OpenMP itself). */
#include "bench.h"

#include <dlfcn.h>
#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>
#include <stdlib.h>
#include <string.h>

#if DNNL_VERSION_MAJOR > 3 || (DNNL_VERSION_MAJOR == 3 && DNNL_VERSION_MINOR >= 3)
#define BENCH_DNNL_HAS_RMS 1
#else
#define BENCH_DNNL_HAS_RMS 0
#endif

typedef struct {
    const bench_env *env;
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    dnnl_primitive_desc_t pd;
    dnnl_primitive_t prim;
    dnnl_memory_t src, dst, scale, shift;
} dnnl_state;

static int dnnl_fail(dnnl_status_t st, const char *what, char *msg, size_t msg_size)
{
    snprintf(msg, msg_size, "%s: %s", what, dnnl_status2str(st));
    return BENCH_FAIL;
}

/* The OpenMP runtime's thread count: applied once when threads.c set OMP_NUM_THREADS itself;
 * returns what the runtime reports (0 when no OpenMP runtime is found). */
static int omp_threads(const bench_threads *t)
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

static void destroy(void *state)
{
    dnnl_state *s = state;
    if (!s)
        return;
    dnnl_memory_t mems[] = {s->src, s->dst, s->scale, s->shift};
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
    free(s);
}

/* Creates the primitive descriptor and the four memory objects (src/dst without a buffer
 * yet). */
static dnnl_status_t make_primitive(dnnl_state *s, const bench_problem *p, unsigned flags,
                                    const char **what)
{
    const dnnl_dims_t dims = {(dnnl_dim_t)p->rows, (dnnl_dim_t)p->cols};
    const dnnl_dims_t pdims = {(dnnl_dim_t)p->cols};
    const bench_host_sets *h = s->env->host;
    dnnl_status_t st;
#if DNNL_VERSION_MAJOR >= 3
    dnnl_memory_desc_t data_md = NULL, param_md = NULL;
    *what = "dnnl_memory_desc_create_with_tag";
    st = dnnl_memory_desc_create_with_tag(&data_md, 2, dims, dnnl_f32, dnnl_ab);
    if (st == dnnl_success)
        st = dnnl_memory_desc_create_with_tag(&param_md, 1, pdims, dnnl_f32, dnnl_a);
    if (st == dnnl_success) {
        *what = "dnnl_layer_normalization_forward_primitive_desc_create";
        st = dnnl_layer_normalization_forward_primitive_desc_create(
            &s->pd, s->engine, dnnl_forward_inference, data_md, data_md, NULL, p->eps, flags,
            NULL);
    }
    *what = "dnnl_memory_create";
    if (st == dnnl_success)
        st = dnnl_memory_create(&s->src, data_md, s->engine, DNNL_MEMORY_NONE);
    if (st == dnnl_success)
        st = dnnl_memory_create(&s->dst, data_md, s->engine, DNNL_MEMORY_NONE);
    if (st == dnnl_success)
        st = dnnl_memory_create(&s->scale, param_md, s->engine, h->gamma);
    if (st == dnnl_success)
        st = dnnl_memory_create(&s->shift, param_md, s->engine, h->beta);
    if (data_md)
        dnnl_memory_desc_destroy(data_md);
    if (param_md)
        dnnl_memory_desc_destroy(param_md);
#else
    dnnl_memory_desc_t data_md, param_md;
    dnnl_layer_normalization_desc_t ln;
    *what = "dnnl_memory_desc_init_by_tag";
    st = dnnl_memory_desc_init_by_tag(&data_md, 2, dims, dnnl_f32, dnnl_ab);
    if (st == dnnl_success)
        st = dnnl_memory_desc_init_by_tag(&param_md, 1, pdims, dnnl_f32, dnnl_a);
    if (st == dnnl_success) {
        *what = "dnnl_layer_normalization_forward_desc_init";
        st = dnnl_layer_normalization_forward_desc_init(&ln, dnnl_forward_inference, &data_md,
                                                        NULL, p->eps, flags);
    }
    if (st == dnnl_success) {
        *what = "dnnl_primitive_desc_create";
        st = dnnl_primitive_desc_create(&s->pd, &ln, NULL, s->engine, NULL);
    }
    *what = "dnnl_memory_create";
    if (st == dnnl_success)
        st = dnnl_memory_create(&s->src, &data_md, s->engine, DNNL_MEMORY_NONE);
    if (st == dnnl_success)
        st = dnnl_memory_create(&s->dst, &data_md, s->engine, DNNL_MEMORY_NONE);
    if (st == dnnl_success)
        st = dnnl_memory_create(&s->scale, &param_md, s->engine, h->gamma);
    if (st == dnnl_success)
        st = dnnl_memory_create(&s->shift, &param_md, s->engine, h->beta);
#endif
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
    unsigned flags = dnnl_use_scale | dnnl_use_shift;
    if (p->op == CLNORM_RMS) {
#if BENCH_DNNL_HAS_RMS
        flags |= dnnl_rms_norm;
#else
        snprintf(msg, msg_size, "oneDNN %d.%d has no RMS normalization (3.3+ has)",
                 DNNL_VERSION_MAJOR, DNNL_VERSION_MINOR);
        return BENCH_SKIP;
#endif
    }
    const int omp = omp_threads(env->threads);
    dnnl_state *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(msg, msg_size, "out of host memory");
        return BENCH_FAIL;
    }
    s->env = env;
    const char *what = "dnnl_engine_create";
    dnnl_status_t st = dnnl_engine_create(&s->engine, dnnl_cpu, 0);
    if (st == dnnl_success) {
        what = "dnnl_stream_create";
        st = dnnl_stream_create(&s->stream, s->engine, dnnl_stream_default_flags);
    }
    if (st == dnnl_success)
        st = make_primitive(s, p, flags, &what);
    if (st != dnnl_success) {
        destroy(s);
        return dnnl_fail(st, what, msg, msg_size);
    }
    const char *impl = NULL;
    if (dnnl_primitive_desc_query(s->pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success)
        impl = NULL;
    if (omp > 0)
        snprintf(note, note_size, "%s, %d omp thread%s", impl ? impl : "?", omp,
                 omp == 1 ? "" : "s");
    else
        snprintf(note, note_size, "%s", impl ? impl : "?");
    *out = s;
    return BENCH_OK;
}

static int run(void *state, size_t set, char *msg, size_t msg_size)
{
    dnnl_state *s = state;
    const bench_host_sets *h = s->env->host;
    set %= h->n_sets;
    dnnl_status_t st = dnnl_memory_set_data_handle(s->src, h->x + set * h->stride);
    if (st == dnnl_success)
        st = dnnl_memory_set_data_handle(s->dst, h->y + set * h->stride);
    if (st != dnnl_success)
        return dnnl_fail(st, "dnnl_memory_set_data_handle", msg, msg_size);
    const dnnl_exec_arg_t args[] = {
        {DNNL_ARG_SRC, s->src},
        {DNNL_ARG_DST, s->dst},
        {DNNL_ARG_SCALE, s->scale},
        {DNNL_ARG_SHIFT, s->shift},
    };
    st = dnnl_primitive_execute(s->prim, s->stream, 4, args);
    if (st != dnnl_success)
        return dnnl_fail(st, "dnnl_primitive_execute", msg, msg_size);
    st = dnnl_stream_wait(s->stream);
    if (st != dnnl_success)
        return dnnl_fail(st, "dnnl_stream_wait", msg, msg_size);
    return BENCH_OK;
}

const bench_contender bench_onednn = {"onednn", BENCH_HOST, 0, create, run, destroy};
