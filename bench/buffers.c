/* Rotated buffer sets. A benchmark that reuses one buffer measures the cache, not memory
 * (oneDNN looked 10-20% faster that way): each repetition runs on the next of n_sets copies
 * of x (and its own y), and x + y of all sets together exceed the last-level cache.
 * Device sets are packed into as few cl_mem chunks as CL_DEVICE_MAX_MEM_ALLOC_SIZE allows
 * and addressed by element offsets, so even 40,000 sets of a 1x768 problem cost two
 * allocations. */
#include "bench.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MIB ((size_t)1 << 20)
#define SET_ALIGN 64 /* elements: 256 bytes */

size_t bench_default_rotation_bytes(void)
{
    long llc = -1;
#ifdef _SC_LEVEL3_CACHE_SIZE
    llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
#ifdef _SC_LEVEL2_CACHE_SIZE
    if (llc <= 0)
        llc = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
    size_t target = 256 * MIB;
    if (llc > 0 && (size_t)llc <= SIZE_MAX / 4 && 2 * (size_t)llc > target)
        target = 2 * (size_t)llc;
    return target;
}

size_t bench_sets_needed(size_t rows, size_t cols, size_t target_bytes)
{
    const size_t set_bytes = 2 * bench_round_up(rows * cols, SET_ALIGN) * sizeof(float);
    size_t n = (target_bytes + set_bytes - 1) / set_bytes;
    return n < 4 ? 4 : n;
}

void bench_dev_set(const bench_dev_sets *s, size_t i, cl_mem *x, cl_mem *y, size_t *offset)
{
    i %= s->n_sets;
    *x = s->x[i / s->per_chunk];
    *y = s->y[i / s->per_chunk];
    *offset = (i % s->per_chunk) * s->stride;
}

void bench_dev_sets_release(bench_dev_sets *s)
{
    for (size_t c = 0; c < s->n_chunks; c++) {
        if (s->x && s->x[c])
            clReleaseMemObject(s->x[c]);
        if (s->y && s->y[c])
            clReleaseMemObject(s->y[c]);
    }
    free(s->x);
    free(s->y);
    if (s->gamma)
        clReleaseMemObject(s->gamma);
    if (s->beta)
        clReleaseMemObject(s->beta);
    memset(s, 0, sizeof *s);
}

int bench_dev_sets_create(bench_dev_sets *s, cl_context context, cl_command_queue queue,
                          cl_device_id device, const bench_problem *p, size_t n_sets,
                          char *msg, size_t msg_size)
{
    memset(s, 0, sizeof *s);
    const size_t n = p->rows * p->cols;
    s->stride = bench_round_up(n, SET_ALIGN);
    const size_t set_bytes = s->stride * sizeof(float);

    cl_ulong max_alloc = 0, global = 0;
    cl_int err = clGetDeviceInfo(device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof max_alloc,
                                 &max_alloc, NULL);
    if (err == CL_SUCCESS)
        err = clGetDeviceInfo(device, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof global, &global, NULL);
    if (err != CL_SUCCESS)
        return bench_cl_fail(err, "clGetDeviceInfo(memory sizes)", msg, msg_size);
    if (set_bytes > max_alloc) {
        snprintf(msg, msg_size, "x alone (%zu MiB) exceeds the device's largest allocation "
                 "(%llu MiB)", set_bytes / MIB, (unsigned long long)(max_alloc / MIB));
        return BENCH_FAIL;
    }
    /* x and y sets take at most 3/4 of the device memory; fewer sets (at least 2) else. */
    const cl_ulong budget = global / 4 * 3;
    if ((cl_ulong)2 * set_bytes * n_sets > budget) {
        n_sets = (size_t)(budget / (2 * (cl_ulong)set_bytes));
        if (n_sets < 2) {
            snprintf(msg, msg_size, "two sets of x and y (%zu MiB) do not fit in 3/4 of the "
                     "device memory (%llu MiB)", 4 * set_bytes / MIB,
                     (unsigned long long)(global / MIB));
            return BENCH_FAIL;
        }
    }
    s->n_sets = n_sets;
    s->per_chunk = (size_t)(max_alloc / set_bytes);
    if (s->per_chunk > n_sets)
        s->per_chunk = n_sets;
    s->n_chunks = (n_sets + s->per_chunk - 1) / s->per_chunk;
    s->x = calloc(s->n_chunks, sizeof *s->x);
    s->y = calloc(s->n_chunks, sizeof *s->y);
    if (!s->x || !s->y) {
        snprintf(msg, msg_size, "out of host memory");
        bench_dev_sets_release(s);
        return BENCH_FAIL;
    }

    const float zero = 0.0f;
    const char *what = NULL;
    for (size_t c = 0; c < s->n_chunks; c++) {
        const size_t sets = c + 1 < s->n_chunks ? s->per_chunk : n_sets - c * s->per_chunk;
        const size_t bytes = sets * set_bytes;
        what = "clCreateBuffer(x sets)";
        s->x[c] = clCreateBuffer(context, CL_MEM_READ_WRITE, bytes, NULL, &err);
        if (err != CL_SUCCESS)
            goto fail;
        what = "clCreateBuffer(y sets)";
        s->y[c] = clCreateBuffer(context, CL_MEM_READ_WRITE, bytes, NULL, &err);
        if (err != CL_SUCCESS)
            goto fail;
        /* x: the same data in every set, written through one mapping per chunk. */
        what = "clEnqueueMapBuffer(x sets)";
        float *map = clEnqueueMapBuffer(queue, s->x[c], CL_TRUE, CL_MAP_WRITE_INVALIDATE_REGION,
                                        0, bytes, 0, NULL, NULL, &err);
        if (err != CL_SUCCESS)
            goto fail;
        for (size_t i = 0; i < sets; i++) {
            memcpy(map + i * s->stride, p->x, n * sizeof(float));
            if (s->stride > n)
                memset(map + i * s->stride + n, 0, (s->stride - n) * sizeof(float));
        }
        what = "clEnqueueUnmapMemObject(x sets)";
        if ((err = clEnqueueUnmapMemObject(queue, s->x[c], map, 0, NULL, NULL)) != CL_SUCCESS)
            goto fail;
        /* y: touched once, so no repetition pays for first-touch page faults. */
        what = "clEnqueueFillBuffer(y sets)";
        err = clEnqueueFillBuffer(queue, s->y[c], &zero, sizeof zero, 0, bytes, 0, NULL, NULL);
        if (err != CL_SUCCESS)
            goto fail;
    }
    what = "clCreateBuffer(gamma)";
    s->gamma = clCreateBuffer(context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                              p->cols * sizeof(float), p->gamma, &err);
    if (err != CL_SUCCESS)
        goto fail;
    what = "clCreateBuffer(beta)";
    s->beta = clCreateBuffer(context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                             p->cols * sizeof(float), p->beta, &err);
    if (err != CL_SUCCESS)
        goto fail;
    what = "clFinish(upload of the sets)";
    if ((err = clFinish(queue)) != CL_SUCCESS)
        goto fail;
    return BENCH_OK;

fail:
    /* Whatever was enqueued must be done before the buffers go. */
    (void)clFinish(queue); /* best effort: the failure being reported matters more */
    bench_dev_sets_release(s);
    return bench_cl_fail(err, what, msg, msg_size);
}

void bench_host_sets_free(bench_host_sets *s)
{
    free(s->x);
    free(s->y);
    free(s->gamma);
    free(s->beta);
    memset(s, 0, sizeof *s);
}

int bench_host_sets_create(bench_host_sets *s, const bench_problem *p, size_t n_sets,
                           char *msg, size_t msg_size)
{
    memset(s, 0, sizeof *s);
    const size_t n = p->rows * p->cols;
    s->n_sets = n_sets;
    s->stride = bench_round_up(n, SET_ALIGN);
    const size_t bytes = n_sets * s->stride * sizeof(float);
    const size_t pbytes = bench_round_up(p->cols * sizeof(float), 64);
    s->x = aligned_alloc(64, bytes);
    s->y = aligned_alloc(64, bytes);
    s->gamma = aligned_alloc(64, pbytes);
    s->beta = aligned_alloc(64, pbytes);
    if (!s->x || !s->y || !s->gamma || !s->beta) {
        snprintf(msg, msg_size, "out of host memory for %zu sets of %zu MiB", n_sets,
                 2 * s->stride * sizeof(float) / MIB);
        bench_host_sets_free(s);
        return BENCH_FAIL;
    }
    for (size_t i = 0; i < n_sets; i++) {
        memcpy(s->x + i * s->stride, p->x, n * sizeof(float));
        memset(s->x + i * s->stride + n, 0, (s->stride - n) * sizeof(float));
    }
    memset(s->y, 0, bytes);
    memcpy(s->gamma, p->gamma, p->cols * sizeof(float));
    memcpy(s->beta, p->beta, p->cols * sizeof(float));
    return BENCH_OK;
}
