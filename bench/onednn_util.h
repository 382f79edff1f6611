/* onednn_util.h - what the oneDNN contenders (impl_onednn.c forward, impl_onednn_backward.c,
 * impl_onednn_unfused.c) share: errors, the OpenMP thread count, data types, memory
 * descriptors across the 2.x and 3.x C APIs, engine and stream, the forward layer
 * normalization, the note of the table. Compiled where libdnnl was found. */
#ifndef CLNORM_BENCH_ONEDNN_UTIL_H
#define CLNORM_BENCH_ONEDNN_UTIL_H

#include "bench.h"

#include <oneapi/dnnl/dnnl.h>

#if DNNL_VERSION_MAJOR > 3 || (DNNL_VERSION_MAJOR == 3 && DNNL_VERSION_MINOR >= 3)
#define BENCH_DNNL_HAS_RMS 1
#else
#define BENCH_DNNL_HAS_RMS 0
#endif

/* A memory descriptor: an owned handle in 3.x, a plain struct in 2.x. BENCH_MD passes one to
 * the API the way the installed version takes it. */
typedef dnnl_memory_desc_t bench_dnnl_md;
#if DNNL_VERSION_MAJOR >= 3
#define BENCH_MD(md) (md)
#else
#define BENCH_MD(md) (&(md))
#endif

/* "what: dnnl_unimplemented" into msg; returns BENCH_FAIL. */
int bench_dnnl_fail(dnnl_status_t st, const char *what, char *msg, size_t msg_size);
/* A failed primitive descriptor: for f16/bf16, an unimplemented one is a skip ("oneDNN 2.6
 * has no bf16 ... on this CPU"); anything else fails. */
int bench_dnnl_pd_fail(const bench_problem *p, dnnl_status_t st, const char *what, char *msg,
                       size_t msg_size);
/* The OpenMP runtime's thread count: applied once when threads.c set OMP_NUM_THREADS itself;
 * returns what the runtime reports (0 when no OpenMP runtime is found). */
int bench_dnnl_omp_threads(const bench_threads *t);
/* oneDNN's type for the case's storage dtype; BENCH_SKIP (msg) for f64, which oneDNN's CPU
 * normalizations lack; also BENCH_SKIP for an RMS op before oneDNN 3.3. Adds dnnl_rms_norm to
 * *flags for an RMS op. */
int bench_dnnl_case(const bench_problem *p, dnnl_data_type_t *dt, unsigned *flags, char *msg,
                    size_t msg_size);
/* 2-D {rows, cols} (ab) or 1-D {n} (a) descriptors; md_free is a no-op for 2.x. */
dnnl_status_t bench_dnnl_md_2d(bench_dnnl_md *md, size_t rows, size_t cols, dnnl_data_type_t dt);
dnnl_status_t bench_dnnl_md_1d(bench_dnnl_md *md, size_t n, dnnl_data_type_t dt);
void bench_dnnl_md_free(bench_dnnl_md *md);
/* A CPU engine and its stream; *what names the call that failed. */
dnnl_status_t bench_dnnl_engine(dnnl_engine_t *engine, dnnl_stream_t *stream, const char **what);
/* The start of every oneDNN contender's create: flags use_scale | use_shift (and what
 * bench_dnnl_case adds, and use_global_stats for a -stats op), the data type, then the OpenMP thread count for the note. BENCH_OK,
 * or bench_dnnl_case's BENCH_SKIP (msg). */
int bench_dnnl_begin(const bench_env *env, dnnl_data_type_t *dt, unsigned *flags, int *omp,
                     char *msg, size_t msg_size);
/* The engine and stream, then the descriptors of the data ({rows, cols} at dt) and of scale
 * and shift ({cols}, float32). The caller frees both descriptors (bench_dnnl_md_free) whatever
 * it returns; *what names the call that failed. */
dnnl_status_t bench_dnnl_setup(const bench_problem *p, dnnl_data_type_t dt,
                               dnnl_engine_t *engine, dnnl_stream_t *stream,
                               bench_dnnl_md *data_md, bench_dnnl_md *param_md, const char **what);
/* Memory objects of scale and shift over host gamma and beta. */
dnnl_status_t bench_dnnl_params(dnnl_engine_t engine, const bench_dnnl_md *param_md,
                                void *gamma, void *beta, dnnl_memory_t *scale,
                                dnnl_memory_t *shift);
/* The forward_inference layer normalization of data_md (src and dst) with flags; *what
 * names the call that failed. */
dnnl_status_t bench_dnnl_lnorm_fwd_pd(dnnl_engine_t engine, const bench_problem *p,
                                      const bench_dnnl_md *data_md, unsigned flags,
                                      dnnl_primitive_desc_t *pd, const char **what);
/* The end of create: BENCH_OK with the note when st is dnnl_success; else the message of the
 * call `what` that failed, BENCH_SKIP for a primitive descriptor (pd_failed) oneDNN does not
 * implement at f16/bf16 (bench_dnnl_pd_fail), BENCH_FAIL otherwise. */
int bench_dnnl_end(const bench_problem *p, dnnl_status_t st, int pd_failed, const char *what,
                   const_dnnl_primitive_desc_t pd, int omp, char *note, size_t note_size,
                   char *msg, size_t msg_size);
/* oneDNN takes the variance, not rstd: var = 1 / rstd^2 - eps (in double, stored as float,
 * at least 0) for each of the n float rstd values the case's statistics hold, so that
 * oneDNN's own 1 / sqrt(var + eps) gives back that rstd to float rounding (for RMS the mean
 * square). A new array of n floats (at least one), or NULL when the host has no memory. */
float *bench_dnnl_variance(const float *rstd, size_t n, float eps);
/* For a -stats op, "global stats; " put before the note. */
void bench_dnnl_note_global(const bench_problem *p, char *note, size_t note_size);
/* "implementation, N omp threads" for the table. */
void bench_dnnl_note(const_dnnl_primitive_desc_t pd, int omp, char *note, size_t note_size);

#endif
