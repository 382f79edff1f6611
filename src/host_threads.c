/*
 * host_threads.c - how many threads run a context's host loop, and its worker pool
 * (host_pool.h). The host loop (src/op/row_norm_host.c) cuts a call into chunks of rows; the
 * calling thread runs them, joined by host_threads - 1 workers of the context.
 *
 * The policy (README, "Small problems on CPU devices"):
 *  - host_threads is the device's compute units (on PoCL, POCL_CPU_MAX_CU_COUNT or the
 *    cores: the threads its kernels would get), or CLNORM_HOST_THREADS (1: the calling thread
 *    alone, as the loop ran before), read when the context is made.
 *  - Idle workers spin CLNORM_HOST_SPIN_US microseconds (default 100) after a call before
 *    they sleep, so that a stream of small calls finds them awake; 0 lets them sleep at once.
 *  - The pool starts at the first call that has more than one chunk, so a context that never
 *    runs the host loop never starts a thread; clnorm_free stops it.
 *  - A bad value of either variable makes every plan creation on the context fail with a
 *    message naming it (the context itself is made, so that the message can be read).
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HOST_THREADS_MAX 1024u
#define HOST_SPIN_MAX_US 1000000u

/* A whole number from lo to hi in environment variable `name` into *v (def when unset or
 * empty); 0, with the context's error text set, when it is something else. */
static int env_uint(clnorm_ctx *ctx, const char *name, unsigned lo, unsigned hi, unsigned def,
                    unsigned *v)
{
    *v = def;
    const char *env = getenv(name);
    if (!env || !*env)
        return 1;
    char *end;
    const unsigned long long x = strtoull(env, &end, 10);
    if (*end != '\0' || env[0] == '-' || env[0] == '+' || x < lo || x > hi) {
        snprintf(ctx->host_env_error, sizeof ctx->host_env_error,
                 "%s=%.40s is not a whole number from %u to %u", name, env, lo, hi);
        return 0;
    }
    *v = (unsigned)x;
    return 1;
}

void clnorm_host_threads_init(clnorm_ctx *ctx)
{
    const int cpu = (ctx->profile.type & CL_DEVICE_TYPE_CPU) != 0;
    unsigned def = cpu && ctx->profile.compute_units > 0 ? ctx->profile.compute_units : 1;
    if (def > HOST_THREADS_MAX)
        def = HOST_THREADS_MAX;
    if (env_uint(ctx, "CLNORM_HOST_THREADS", 1, HOST_THREADS_MAX, def, &ctx->host_threads))
        env_uint(ctx, "CLNORM_HOST_SPIN_US", 0, HOST_SPIN_MAX_US, CLNORM_HOST_SPIN_DEFAULT_US,
                 &ctx->host_spin_us);
    if (ctx->host_threads > 1)
        snprintf(ctx->host_loop_name, sizeof ctx->host_loop_name, "host loop (%u threads)",
                 ctx->host_threads);
    else
        snprintf(ctx->host_loop_name, sizeof ctx->host_loop_name, "host loop (calling thread)");
}

clnorm_status clnorm_host_threads_check(clnorm_ctx *ctx)
{
    RETURN_IF(ctx->host_env_error[0] != '\0', ctx, CLNORM_INVALID_ARGUMENT, "%s",
              ctx->host_env_error);
    return CLNORM_OK;
}

clnorm_pool *clnorm_host_pool(clnorm_ctx *ctx)
{
    clnorm_pool *pool = atomic_load_explicit(&ctx->host_pool, memory_order_acquire);
    if (pool || ctx->host_threads < 2)
        return pool;
    clnorm_mutex_lock(&ctx->lock);
    pool = atomic_load_explicit(&ctx->host_pool, memory_order_relaxed);
    if (!pool && !ctx->host_pool_failed) {
        pool = clnorm_pool_create(ctx->host_threads, ctx->host_spin_us);
        if (pool)
            atomic_store_explicit(&ctx->host_pool, pool, memory_order_release);
        else
            ctx->host_pool_failed = 1; /* no threads: the calls run alone, as with 1 */
    }
    clnorm_mutex_unlock(&ctx->lock);
    return pool;
}

const char *clnorm_host_loop_name(const clnorm_ctx *ctx)
{
    return ctx->host_loop_name;
}
