/*
 * host_pool.h - a context's worker threads for the host loop (src/op/row_norm_host.c): one job
 * at a time, cut into chunks that the calling thread and the workers take in turn.
 *
 * The calling thread always works on its own job, so a job is never slower than the calling
 * thread alone by more than handing it out: a worker still asleep (waking one costs tens of
 * microseconds on a busy VM) joins late or not at all. After a job the workers spin for a
 * while (spin_us) before they sleep, as OpenMP runtimes do, so that calls in quick succession
 * find them awake.
 */
#ifndef CLNORM_HOST_POOL_H
#define CLNORM_HOST_POOL_H

#include <stddef.h>

typedef struct clnorm_pool clnorm_pool;

/* Runs chunk `chunk` of a job; `worker` (below clnorm_pool_width) names the thread running
 * it, 0 for the calling thread, so that a job can keep scratch per thread. Two chunks never
 * run at once on the same worker index within one job. */
typedef void (*clnorm_pool_fn)(void *arg, size_t chunk, unsigned worker);

/* The largest chunk count of one job. */
#define CLNORM_POOL_MAX_CHUNKS ((size_t)1 << 20)

/* A pool of width - 1 worker threads (width >= 2), spinning spin_us microseconds after each
 * job before they sleep; NULL when a thread cannot be started (the caller then runs its jobs
 * alone). */
clnorm_pool *clnorm_pool_create(unsigned width, unsigned spin_us);

/* Stops and joins the workers. NULL is allowed. No job may be running. */
void clnorm_pool_free(clnorm_pool *pool);

/* Threads that may run a job's chunks, the calling thread included (1 for NULL). */
unsigned clnorm_pool_width(const clnorm_pool *pool);

/* Runs fn on chunks 0 .. nchunks-1 (at most CLNORM_POOL_MAX_CHUNKS) and returns when all are
 * done. pool may be NULL, and a pool busy with another thread's job leaves this one to the
 * calling thread alone: either way every chunk runs as worker 0, in order. Safe to call from
 * many threads at once. */
void clnorm_pool_run(clnorm_pool *pool, size_t nchunks, clnorm_pool_fn fn, void *arg);

#endif
