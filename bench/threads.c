/* One thread count for every contender: PoCL's (POCL_CPU_MAX_CU_COUNT), oneDNN's OpenMP
 * (OMP_NUM_THREADS) and the host copy's. Variables already in the environment are left as
 * they are; unset ones get --threads N, else the value of the other variable, else the number
 * of online cores. This runs before any OpenCL platform is queried and before any oneDNN
 * engine exists. (libgomp reads OMP_NUM_THREADS when it is loaded, before main:
 * impl_onednn.c applies the count through omp_set_num_threads when this file set it.) */
#include "bench.h"

#include <stdlib.h>
#include <unistd.h>

int bench_online_cores(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 && n < 4096 ? (int)n : 1;
}

/* A positive integer from the environment, else 0. */
static int env_count(const char *name)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return 0;
    char *end = NULL;
    long n = strtol(v, &end, 10);
    return (*end == '\0' && n > 0 && n < 4096) ? (int)n : 0;
}

static int set_if_unset(const char *name, int value, int *result)
{
    int have = env_count(name);
    if (have) {
        *result = have;
        return 1;
    }
    char buf[16];
    snprintf(buf, sizeof buf, "%d", value);
    setenv(name, buf, 1);
    *result = value;
    return 0;
}

void bench_threads_setup(const bench_options *opt, bench_threads *t)
{
    /* --threads N, else a count one of the variables already has (so the other one gets the
     * same), else the number of online cores. */
    int want = opt->threads;
    if (want <= 0)
        want = env_count("POCL_CPU_MAX_CU_COUNT");
    if (want <= 0)
        want = env_count("OMP_NUM_THREADS");
    if (want <= 0)
        want = bench_online_cores();
    t->pocl_was_set = set_if_unset("POCL_CPU_MAX_CU_COUNT", want, &t->threads);
    t->omp_was_set = set_if_unset("OMP_NUM_THREADS", want, &t->omp_threads);
}
