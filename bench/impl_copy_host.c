/* The host's bandwidth limit, measured in the same run: memcpy of x into y (the output array
 * of the sets: dx for a backward op), the elements of x at the case's dtype, split over the
 * same number of threads as everyone else (POCL_CPU_MAX_CU_COUNT after threads.c). The
 * threads live for the whole shape in a small pool, as oneDNN's OpenMP threads and PoCL's
 * workers do, so a repetition pays a wake-up, not a pthread_create. frac_of_copy of the CPU
 * reference and oneDNN is relative to this row. */
#include "bench.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct copy_pool copy_pool;

typedef struct {
    copy_pool *pool;
    int index;
} worker_arg;

struct copy_pool {
    const bench_env *env;
    int threads;
    pthread_t *tid;
    worker_arg *args;
    int started;
    pthread_mutex_t lock;
    pthread_cond_t go, done;
    unsigned long generation; /* bumped once per job */
    int pending;              /* workers still copying the current job */
    int quit;
    const char *src;
    char *dst;
    size_t bytes;
};

/* The slice of worker i: cache-line aligned boundaries. */
static void copy_slice(copy_pool *p, int i)
{
    const size_t per = bench_round_up((p->bytes + (size_t)p->threads - 1) / (size_t)p->threads,
                                      64);
    const size_t begin = per * (size_t)i;
    if (begin >= p->bytes)
        return;
    const size_t len = p->bytes - begin < per ? p->bytes - begin : per;
    memcpy(p->dst + begin, p->src + begin, len);
}

static void *worker(void *arg)
{
    worker_arg *a = arg;
    copy_pool *p = a->pool;
    unsigned long seen = 0;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->quit && p->generation == seen)
            pthread_cond_wait(&p->go, &p->lock);
        if (p->quit)
            break;
        seen = p->generation;
        pthread_mutex_unlock(&p->lock);
        copy_slice(p, a->index);
        pthread_mutex_lock(&p->lock);
        if (--p->pending == 0)
            pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

static void destroy(void *state)
{
    copy_pool *p = state;
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->quit = 1;
    pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->lock);
    for (int i = 0; i < p->started; i++)
        pthread_join(p->tid[i], NULL);
    pthread_cond_destroy(&p->go);
    pthread_cond_destroy(&p->done);
    pthread_mutex_destroy(&p->lock);
    free(p->tid);
    free(p->args);
    free(p);
}

static int create(const bench_env *env, void **out, char *note, size_t note_size, char *msg,
                  size_t msg_size)
{
    copy_pool *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(msg, msg_size, "out of host memory");
        return BENCH_FAIL;
    }
    p->env = env;
    p->threads = env->threads->threads > 0 ? env->threads->threads : 1;
    p->bytes = env->p->n_elems * env->p->elem;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->go, NULL);
    pthread_cond_init(&p->done, NULL);
    /* Worker 0 is the calling thread; 1 .. threads-1 are the pool. */
    p->tid = calloc((size_t)p->threads, sizeof *p->tid);
    p->args = calloc((size_t)p->threads, sizeof *p->args);
    if (!p->tid || !p->args) {
        destroy(p);
        snprintf(msg, msg_size, "out of host memory");
        return BENCH_FAIL;
    }
    for (int i = 1; i < p->threads; i++) {
        p->args[p->started] = (worker_arg){p, i};
        int e = pthread_create(&p->tid[p->started], NULL, worker, &p->args[p->started]);
        if (e != 0) {
            destroy(p);
            snprintf(msg, msg_size, "pthread_create: %s", strerror(e));
            return BENCH_FAIL;
        }
        p->started++;
    }
    snprintf(note, note_size, "%d thread%s", p->threads, p->threads == 1 ? "" : "s");
    *out = p;
    return BENCH_OK;
}

static int run(void *state, size_t set, char *msg, size_t msg_size)
{
    (void)msg;
    (void)msg_size;
    copy_pool *p = state;
    const bench_host_sets *h = p->env->host;
    pthread_mutex_lock(&p->lock);
    p->src = bench_host_arg(h, set, CLNORM_ARG_X);
    p->dst = bench_host_arg(h, set, h->out);
    p->pending = p->started;
    p->generation++;
    pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->lock);
    copy_slice(p, 0);
    pthread_mutex_lock(&p->lock);
    while (p->pending > 0)
        pthread_cond_wait(&p->done, &p->lock);
    pthread_mutex_unlock(&p->lock);
    return BENCH_OK;
}

const bench_contender bench_copy_host = {.name = "copy_host", .side = BENCH_HOST,
                                         .role = BENCH_ROLE_COPY, .slots = BENCH_ANY_SLOT,
                                         .forms = BENCH_ANY_FORM, .create = create,
                                         .run = run, .destroy = destroy};
