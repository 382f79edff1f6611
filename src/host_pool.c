/*
 * host_pool.c - the context's worker threads for the host loop (host_pool.h).
 *
 * A job is published as one 64-bit ticket: its generation, its chunk count and the next chunk
 * to take. Every thread takes a chunk with a compare-and-swap that checks the generation, so
 * a worker that wakes late, after its job is over, can take nothing from the next job by
 * mistake; it reads the job's function only after it holds one of its chunks, and the caller
 * publishes the next job only once every chunk of this one is done, so what it reads is its
 * job's. Sleeping workers are woken with a condition variable; the caller signals only when
 * one is asleep (a seq_cst store of the ticket, then a seq_cst load of the sleeper count,
 * against the worker's increment of that count, then its load of the ticket, under the
 * mutex: either the caller sees the sleeper or the sleeper sees the job), and at most once
 * per chunk beyond its own. A worker left asleep misses the job, which the others finish.
 */
#include "host_pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

/* Ticket fields: generation 22 bits, chunk count 21, next chunk 21. */
#define NEXT_BITS 21
#define N_BITS 21
#define FIELD_MASK (((uint64_t)1 << NEXT_BITS) - 1)
#define GEN_MASK (((uint64_t)1 << (64 - NEXT_BITS - N_BITS)) - 1)
#define T_NEXT(t) ((size_t)((t)&FIELD_MASK))
#define T_N(t) ((size_t)(((t) >> NEXT_BITS) & FIELD_MASK))
#define T_GEN(t) ((t) >> (NEXT_BITS + N_BITS))
#define T_MAKE(gen, n) (((uint64_t)(gen) << (NEXT_BITS + N_BITS)) | ((uint64_t)(n) << NEXT_BITS))

typedef struct {
    clnorm_pool *pool;
    unsigned index; /* 1 .. width - 1 */
} worker_arg;

struct clnorm_pool {
    unsigned width, spin_us, started;
    pthread_t *threads;
    worker_arg *args;
    pthread_mutex_t submit; /* held by the thread whose job runs */
    pthread_mutex_t sleep_lock;
    pthread_cond_t wake;
    _Atomic uint64_t ticket;
    _Atomic size_t done;  /* chunks of the current job finished */
    _Atomic int sleepers; /* workers in (or about to enter) the condition wait */
    _Atomic int quit;
    /* The current job: written by its caller before the ticket that publishes it. */
    clnorm_pool_fn fn;
    void *arg;
};

static inline void cpu_relax(void)
{
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    __builtin_ia32_pause();
#elif defined(__GNUC__) && defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

/* Takes and runs chunks of generation gen until none is left. */
static void take_chunks(clnorm_pool *p, uint64_t gen, unsigned worker)
{
    uint64_t t = atomic_load_explicit(&p->ticket, memory_order_acquire);
    while (T_GEN(t) == gen && T_NEXT(t) < T_N(t)) {
        if (!atomic_compare_exchange_weak_explicit(&p->ticket, &t, t + 1, memory_order_acq_rel,
                                                   memory_order_acquire))
            continue; /* t reloaded */
        p->fn(p->arg, T_NEXT(t), worker);
        atomic_fetch_add_explicit(&p->done, 1, memory_order_release);
        t = atomic_load_explicit(&p->ticket, memory_order_acquire);
    }
}

/* Waits for a ticket of another generation than seen (or quit): spinning for spin_us, then
 * asleep. Returns the ticket. */
static uint64_t await_job(clnorm_pool *p, uint64_t seen)
{
    uint64_t t = atomic_load_explicit(&p->ticket, memory_order_acquire);
    if (p->spin_us > 0) {
        const double until = now_us() + p->spin_us;
        for (unsigned i = 1; T_GEN(t) == seen && !atomic_load_explicit(&p->quit, memory_order_relaxed);
             i++) {
            cpu_relax();
            if (i % 256 == 0) {
                if (now_us() > until)
                    break;
                sched_yield(); /* a core the caller or the device's threads may need */
            }
            t = atomic_load_explicit(&p->ticket, memory_order_acquire);
        }
    }
    if (T_GEN(t) != seen)
        return t;
    pthread_mutex_lock(&p->sleep_lock);
    atomic_fetch_add(&p->sleepers, 1);
    t = atomic_load(&p->ticket);
    while (T_GEN(t) == seen && !atomic_load(&p->quit)) {
        pthread_cond_wait(&p->wake, &p->sleep_lock);
        t = atomic_load(&p->ticket);
    }
    atomic_fetch_sub(&p->sleepers, 1);
    pthread_mutex_unlock(&p->sleep_lock);
    return t;
}

static void *worker_main(void *arg)
{
    const worker_arg *w = arg;
    clnorm_pool *p = w->pool;
    uint64_t seen = T_GEN(atomic_load(&p->ticket));
    for (;;) {
        const uint64_t t = await_job(p, seen);
        if (atomic_load(&p->quit))
            return NULL;
        seen = T_GEN(t);
        take_chunks(p, seen, w->index);
    }
}

static void stop_workers(clnorm_pool *p)
{
    atomic_store(&p->quit, 1);
    pthread_mutex_lock(&p->sleep_lock);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->sleep_lock);
    for (unsigned i = 0; i < p->started; i++)
        pthread_join(p->threads[i], NULL);
}

clnorm_pool *clnorm_pool_create(unsigned width, unsigned spin_us)
{
    if (width < 2)
        return NULL;
    clnorm_pool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->width = width;
    p->spin_us = spin_us;
    p->threads = calloc(width - 1, sizeof *p->threads);
    p->args = calloc(width - 1, sizeof *p->args);
    atomic_init(&p->ticket, 0);
    atomic_init(&p->done, 0);
    atomic_init(&p->sleepers, 0);
    atomic_init(&p->quit, 0);
    int ok = p->threads && p->args;
    int have_submit = ok && pthread_mutex_init(&p->submit, NULL) == 0;
    int have_sleep = have_submit && pthread_mutex_init(&p->sleep_lock, NULL) == 0;
    int have_wake = have_sleep && pthread_cond_init(&p->wake, NULL) == 0;
    ok = have_wake;
    for (unsigned i = 0; ok && i + 1 < width; i++) {
        p->args[i] = (worker_arg){p, i + 1};
        ok = pthread_create(&p->threads[i], NULL, worker_main, &p->args[i]) == 0;
        if (ok)
            p->started++;
    }
    if (ok)
        return p;
    if (have_wake) { /* everything made: the workers started are stopped and joined */
        clnorm_pool_free(p);
        return NULL;
    }
    if (have_sleep)
        pthread_mutex_destroy(&p->sleep_lock);
    if (have_submit)
        pthread_mutex_destroy(&p->submit);
    free(p->threads);
    free(p->args);
    free(p);
    return NULL;
}

void clnorm_pool_free(clnorm_pool *p)
{
    if (!p)
        return;
    stop_workers(p);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->sleep_lock);
    pthread_mutex_destroy(&p->submit);
    free(p->threads);
    free(p->args);
    free(p);
}

unsigned clnorm_pool_width(const clnorm_pool *p)
{
    return p ? p->width : 1;
}

void clnorm_pool_run(clnorm_pool *p, size_t nchunks, clnorm_pool_fn fn, void *arg)
{
    if (!p || nchunks < 2 || nchunks > CLNORM_POOL_MAX_CHUNKS ||
        pthread_mutex_trylock(&p->submit) != 0) {
        for (size_t c = 0; c < nchunks; c++)
            fn(arg, c, 0);
        return;
    }
    /* Every chunk of the previous job is done (its caller waited for that): no thread reads
     * fn and arg until it holds a chunk of the job published below. */
    p->fn = fn;
    p->arg = arg;
    atomic_store_explicit(&p->done, 0, memory_order_relaxed);
    const uint64_t gen = (T_GEN(atomic_load(&p->ticket)) + 1) & GEN_MASK;
    atomic_store(&p->ticket, T_MAKE(gen, nchunks));
    /* Wake no more sleepers than there are chunks for (the caller takes one): a call of four
     * chunks on a 64-core machine wakes three. */
    const int asleep = atomic_load(&p->sleepers);
    if (asleep > 0) {
        const size_t wanted = nchunks - 1 < (size_t)asleep ? nchunks - 1 : (size_t)asleep;
        pthread_mutex_lock(&p->sleep_lock);
        for (size_t i = 0; i < wanted; i++)
            pthread_cond_signal(&p->wake);
        pthread_mutex_unlock(&p->sleep_lock);
    }
    take_chunks(p, gen, 0);
    /* The chunks other threads hold: short, so spin, yielding the core now and then to a
     * worker that may have been preempted holding one. */
    for (unsigned i = 1; atomic_load_explicit(&p->done, memory_order_acquire) < nchunks; i++) {
        cpu_relax();
        if (i % 64 == 0)
            sched_yield();
    }
    pthread_mutex_unlock(&p->submit);
}
