/* Rotated buffer sets. A benchmark that reuses one buffer measures the cache, not memory
 * (oneDNN looked 10-20% faster that way): each repetition runs on the next of n_sets copies
 * of x (and dy for a backward op, and its own output y or dx), and the arrays of all sets
 * together exceed the last-level cache. Parameters and saved statistics are shared.
 * Device sets are packed into as few cl_mem chunks as CL_DEVICE_MAX_MEM_ALLOC_SIZE allows
 * and addressed by element offsets, so even 40,000 sets of a 1x768 problem cost two
 * allocations. */
#include "bench.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MIB ((size_t)1 << 20)
#define SET_ALIGN 64 /* elements: 128 bytes or more */

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

size_t bench_sets_needed(const bench_problem *p, size_t target_bytes)
{
    const size_t set_bytes = (size_t)p->n_arrays * bench_round_up(p->rows * p->cols, SET_ALIGN) *
                             p->elem;
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

cl_mem bench_dev_dy(const bench_dev_sets *s, size_t i)
{
    return s->dy ? s->dy[(i % s->n_sets) / s->per_chunk] : NULL;
}

void bench_dev_sets_release(bench_dev_sets *s)
{
    cl_mem *arrays[] = {s->x, s->y, s->dy};
    for (size_t a = 0; a < 3; a++) {
        for (size_t c = 0; arrays[a] && c < s->n_chunks; c++)
            if (arrays[a][c])
                clReleaseMemObject(arrays[a][c]);
        free(arrays[a]);
    }
    cl_mem params[] = {s->gamma, s->beta, s->mean, s->rstd, s->dgamma, s->dbeta};
    for (size_t i = 0; i < sizeof params / sizeof params[0]; i++)
        if (params[i])
            clReleaseMemObject(params[i]);
    memset(s, 0, sizeof *s);
}

/* The same data in every set of a chunk, written through one mapping; padding zeroed. */
static cl_int fill_chunk(cl_command_queue queue, cl_mem mem, const void *src, size_t sets,
                         size_t stride_bytes, size_t n_bytes)
{
    cl_int err;
    unsigned char *map = clEnqueueMapBuffer(queue, mem, CL_TRUE, CL_MAP_WRITE_INVALIDATE_REGION,
                                            0, sets * stride_bytes, 0, NULL, NULL, &err);
    if (err != CL_SUCCESS)
        return err;
    for (size_t i = 0; i < sets; i++) {
        memcpy(map + i * stride_bytes, src, n_bytes);
        memset(map + i * stride_bytes + n_bytes, 0, stride_bytes - n_bytes);
    }
    return clEnqueueUnmapMemObject(queue, mem, map, 0, NULL, NULL);
}

/* A buffer of parameters: a copy of src, or uninitialised output (src NULL). */
static cl_mem param_buffer(cl_context context, const void *src, size_t bytes, cl_int *err)
{
    return clCreateBuffer(context, src ? CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR
                                       : CL_MEM_READ_WRITE,
                          bytes, (void *)(uintptr_t)src, err);
}

int bench_dev_sets_create(bench_dev_sets *s, cl_context context, cl_command_queue queue,
                          cl_device_id device, const bench_problem *p, size_t n_sets,
                          char *msg, size_t msg_size)
{
    memset(s, 0, sizeof *s);
    const size_t n = p->rows * p->cols;
    s->elem = p->elem;
    s->stride = bench_round_up(n, SET_ALIGN);
    const size_t set_bytes = s->stride * p->elem, arrays = (size_t)p->n_arrays;

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
    /* The sets take at most 3/4 of the device memory; fewer sets (at least 2) else. */
    const cl_ulong budget = global / 4 * 3;
    if ((cl_ulong)arrays * set_bytes * n_sets > budget) {
        n_sets = (size_t)(budget / (arrays * (cl_ulong)set_bytes));
        if (n_sets < 2) {
            snprintf(msg, msg_size, "two buffer sets (%zu MiB) do not fit in 3/4 of the "
                     "device memory (%llu MiB)", 2 * arrays * set_bytes / MIB,
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
    if (p->dy)
        s->dy = calloc(s->n_chunks, sizeof *s->dy);
    if (!s->x || !s->y || (p->dy && !s->dy)) {
        snprintf(msg, msg_size, "out of host memory");
        bench_dev_sets_release(s);
        return BENCH_FAIL;
    }

    const cl_uint zero = 0;
    const char *what = NULL;
    for (size_t c = 0; c < s->n_chunks; c++) {
        const size_t sets = c + 1 < s->n_chunks ? s->per_chunk : n_sets - c * s->per_chunk;
        const size_t bytes = sets * set_bytes; /* a multiple of 64 elements: of 128 bytes */
        what = "clCreateBuffer(x sets)";
        s->x[c] = clCreateBuffer(context, CL_MEM_READ_WRITE, bytes, NULL, &err);
        if (err != CL_SUCCESS)
            goto fail;
        what = "clCreateBuffer(output sets)";
        s->y[c] = clCreateBuffer(context, CL_MEM_READ_WRITE, bytes, NULL, &err);
        if (err != CL_SUCCESS)
            goto fail;
        what = "writing the x sets";
        if ((err = fill_chunk(queue, s->x[c], p->x, sets, set_bytes, n * p->elem)) != CL_SUCCESS)
            goto fail;
        if (s->dy) {
            what = "clCreateBuffer(dy sets)";
            s->dy[c] = clCreateBuffer(context, CL_MEM_READ_WRITE, bytes, NULL, &err);
            if (err != CL_SUCCESS)
                goto fail;
            what = "writing the dy sets";
            err = fill_chunk(queue, s->dy[c], p->dy, sets, set_bytes, n * p->elem);
            if (err != CL_SUCCESS)
                goto fail;
        }
        /* The outputs: touched once, so no repetition pays for first-touch page faults. */
        what = "clEnqueueFillBuffer(output sets)";
        err = clEnqueueFillBuffer(queue, s->y[c], &zero, sizeof zero, 0, bytes, 0, NULL, NULL);
        if (err != CL_SUCCESS)
            goto fail;
    }
    const size_t cb = p->cols * p->psize, rb = p->rows * p->psize;
    what = "clCreateBuffer(gamma, beta)";
    s->gamma = param_buffer(context, p->gamma, cb, &err);
    if (err == CL_SUCCESS)
        s->beta = param_buffer(context, p->beta, cb, &err);
    if (err != CL_SUCCESS)
        goto fail;
    if (bench_op_is_backward(p->op)) {
        what = "clCreateBuffer(mean, rstd, dgamma, dbeta)";
        if (p->mean)
            s->mean = param_buffer(context, p->mean, rb, &err);
        if (err == CL_SUCCESS)
            s->rstd = param_buffer(context, p->rstd, rb, &err);
        if (err == CL_SUCCESS)
            s->dgamma = param_buffer(context, NULL, cb, &err);
        if (err == CL_SUCCESS)
            s->dbeta = param_buffer(context, NULL, cb, &err);
        if (err != CL_SUCCESS)
            goto fail;
    }
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

void *bench_host_at(const bench_host_sets *s, unsigned char *array, size_t i)
{
    return array + (i % s->n_sets) * s->stride * s->elem;
}

void bench_host_sets_free(bench_host_sets *s)
{
    void *all[] = {s->x, s->y, s->dy, s->gamma, s->beta, s->mean, s->rstd, s->dgamma, s->dbeta};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        free(all[i]);
    memset(s, 0, sizeof *s);
}

/* 64-byte aligned room for bytes, a copy of src when src is not NULL. */
static void *host_param(const void *src, size_t bytes)
{
    void *v = aligned_alloc(64, bench_round_up(bytes, 64));
    if (v && src)
        memcpy(v, src, bytes);
    return v;
}

int bench_host_sets_create(bench_host_sets *s, const bench_problem *p, size_t n_sets,
                           char *msg, size_t msg_size)
{
    memset(s, 0, sizeof *s);
    const size_t n = p->rows * p->cols;
    s->n_sets = n_sets;
    s->elem = p->elem;
    s->stride = bench_round_up(n, SET_ALIGN);
    const size_t set_bytes = s->stride * p->elem, nb = n * p->elem;
    const size_t bytes = n_sets * set_bytes;
    const size_t cb = p->cols * p->psize, rb = p->rows * p->psize;
    const int bwd = bench_op_is_backward(p->op);
    int ok = (s->x = aligned_alloc(64, bytes)) && (s->y = aligned_alloc(64, bytes)) &&
             (s->gamma = host_param(p->gamma, cb)) && (s->beta = host_param(p->beta, cb));
    if (ok && bwd)
        ok = (s->dy = aligned_alloc(64, bytes)) && (s->rstd = host_param(p->rstd, rb)) &&
             (s->dgamma = host_param(NULL, cb)) && (s->dbeta = host_param(NULL, cb)) &&
             (!p->mean || (s->mean = host_param(p->mean, rb)));
    if (!ok) {
        snprintf(msg, msg_size, "out of host memory for %zu sets of %zu MiB", n_sets,
                 (size_t)p->n_arrays * set_bytes / MIB);
        bench_host_sets_free(s);
        return BENCH_FAIL;
    }
    for (size_t i = 0; i < n_sets; i++) {
        memcpy(s->x + i * set_bytes, p->x, nb);
        memset(s->x + i * set_bytes + nb, 0, set_bytes - nb);
        if (s->dy) {
            memcpy(s->dy + i * set_bytes, p->dy, nb);
            memset(s->dy + i * set_bytes + nb, 0, set_bytes - nb);
        }
    }
    memset(s->y, 0, bytes);
    return BENCH_OK;
}
