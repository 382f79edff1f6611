/* Rotated buffer sets. A benchmark that reuses one buffer measures the cache, not memory
 * (oneDNN looked 10-20% faster that way): each repetition runs on the next of n_sets copies
 * of every row tensor of the op (x, residual, dy and the outputs y, sum, dx), and the arrays
 * of all sets together exceed the last-level cache. Vectors (gamma, beta, mean, rstd,
 * dgamma, dbeta) are shared. Device sets are packed into as few cl_mem chunks as
 * CL_DEVICE_MAX_MEM_ALLOC_SIZE allows and addressed by element offsets, so even 40,000 sets
 * of a 1x768 problem cost a few allocations. */
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

static int is_row(const bench_problem *p, int s)
{
    return (p->info->row_slots & BENCH_SLOT(s)) != 0;
}

static int is_vec(const bench_problem *p, int s)
{
    return (p->info->given & ~p->info->row_slots & BENCH_SLOT(s)) != 0;
}

/* Bytes of one set: every row array, each rounded up to SET_ALIGN elements. */
static size_t set_bytes(const bench_problem *p, size_t stride)
{
    size_t b = 0;
    for (int s = 0; s < BENCH_N_SLOTS; s++)
        if (is_row(p, s))
            b += stride * bench_slot_esize(p, (clnorm_arg_slot)s);
    return b;
}

size_t bench_sets_needed(const bench_problem *p, size_t target_bytes)
{
    const size_t one = set_bytes(p, bench_round_up(p->n_elems, SET_ALIGN));
    size_t n = (target_bytes + one - 1) / one;
    return n < 4 ? 4 : n;
}

void bench_dev_arg(const bench_dev_sets *s, size_t i, clnorm_arg_slot slot, cl_mem *mem,
                   size_t *offset)
{
    if (s->rows[slot]) {
        i %= s->n_sets;
        *mem = s->rows[slot][i / s->per_chunk];
        *offset = (i % s->per_chunk) * s->stride;
    } else {
        *mem = s->vec[slot];
        *offset = 0;
    }
}

void bench_dev_set(const bench_dev_sets *s, size_t i, cl_mem *x, cl_mem *y, size_t *offset)
{
    bench_dev_arg(s, i, s->out, y, offset);
    bench_dev_arg(s, i, CLNORM_ARG_X, x, offset);
}

void bench_dev_sets_release(bench_dev_sets *s)
{
    for (int a = 0; a < BENCH_N_SLOTS; a++) {
        for (size_t c = 0; s->rows[a] && c < s->n_chunks; c++)
            if (s->rows[a][c])
                clReleaseMemObject(s->rows[a][c]);
        free(s->rows[a]);
        if (s->vec[a])
            clReleaseMemObject(s->vec[a]);
    }
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

/* The chunks of one row slot: inputs filled with the case's data, outputs touched once (so
 * no repetition pays for first-touch page faults). */
static cl_int make_rows(bench_dev_sets *s, cl_context context, cl_command_queue queue,
                        const bench_problem *p, clnorm_arg_slot slot, const char **what)
{
    const size_t es = bench_slot_esize(p, slot), n = p->n_elems;
    const int output = (p->info->outputs & BENCH_SLOT(slot)) != 0;
    const cl_uint zero = 0;
    cl_int err = CL_SUCCESS;
    if (!(s->rows[slot] = calloc(s->n_chunks, sizeof(cl_mem)))) {
        *what = "out of host memory";
        return CL_OUT_OF_HOST_MEMORY;
    }
    for (size_t c = 0; c < s->n_chunks && err == CL_SUCCESS; c++) {
        const size_t sets = c + 1 < s->n_chunks ? s->per_chunk : s->n_sets - c * s->per_chunk;
        const size_t bytes = sets * s->stride * es; /* a multiple of 128 bytes */
        *what = "clCreateBuffer(row sets)";
        s->rows[slot][c] = clCreateBuffer(context, CL_MEM_READ_WRITE, bytes, NULL, &err);
        if (err != CL_SUCCESS)
            break;
        *what = output ? "clEnqueueFillBuffer(output sets)" : "writing the input sets";
        err = output ? clEnqueueFillBuffer(queue, s->rows[slot][c], &zero, sizeof zero, 0, bytes,
                                           0, NULL, NULL)
                     : fill_chunk(queue, s->rows[slot][c], p->t[slot], sets, s->stride * es,
                                  n * es);
    }
    return err;
}

int bench_dev_sets_create(bench_dev_sets *s, cl_context context, cl_command_queue queue,
                          cl_device_id device, const bench_problem *p, size_t n_sets,
                          char *msg, size_t msg_size)
{
    memset(s, 0, sizeof *s);
    s->out = p->info->out;
    s->stride = bench_round_up(p->n_elems, SET_ALIGN);
    const size_t one = set_bytes(p, s->stride);
    size_t widest = 0; /* the largest row array of a set: what one allocation must hold */
    for (int a = 0; a < BENCH_N_SLOTS; a++)
        if (is_row(p, a) && s->stride * bench_slot_esize(p, (clnorm_arg_slot)a) > widest)
            widest = s->stride * bench_slot_esize(p, (clnorm_arg_slot)a);

    cl_ulong max_alloc = 0, global = 0;
    cl_int err = clGetDeviceInfo(device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof max_alloc,
                                 &max_alloc, NULL);
    if (err == CL_SUCCESS)
        err = clGetDeviceInfo(device, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof global, &global, NULL);
    if (err != CL_SUCCESS)
        return bench_cl_fail(err, "clGetDeviceInfo(memory sizes)", msg, msg_size);
    if (widest > max_alloc) {
        snprintf(msg, msg_size, "one row tensor (%zu MiB) exceeds the device's largest "
                 "allocation (%llu MiB)", widest / MIB, (unsigned long long)(max_alloc / MIB));
        return BENCH_FAIL;
    }
    /* The sets take at most 3/4 of the device memory; fewer sets (at least 2) else. */
    const cl_ulong budget = global / 4 * 3;
    if ((cl_ulong)one * n_sets > budget) {
        n_sets = (size_t)(budget / one);
        if (n_sets < 2) {
            snprintf(msg, msg_size, "two buffer sets (%zu MiB) do not fit in 3/4 of the "
                     "device memory (%llu MiB)", 2 * one / MIB,
                     (unsigned long long)(global / MIB));
            return BENCH_FAIL;
        }
    }
    s->n_sets = n_sets;
    s->per_chunk = (size_t)(max_alloc / widest);
    if (s->per_chunk > n_sets)
        s->per_chunk = n_sets;
    s->n_chunks = (n_sets + s->per_chunk - 1) / s->per_chunk;

    const char *what = NULL;
    for (int a = 0; a < BENCH_N_SLOTS && err == CL_SUCCESS; a++)
        if (is_row(p, a))
            err = make_rows(s, context, queue, p, (clnorm_arg_slot)a, &what);
    for (int a = 0; a < BENCH_N_SLOTS && err == CL_SUCCESS; a++) {
        if (!is_vec(p, a))
            continue;
        /* a copy of the case's input, or room for an output */
        const int output = (p->info->outputs & BENCH_SLOT(a)) != 0;
        const size_t bytes = bench_slot_elems(p, (clnorm_arg_slot)a) *
                             bench_slot_esize(p, (clnorm_arg_slot)a);
        what = "clCreateBuffer(vectors)";
        s->vec[a] = clCreateBuffer(context, output ? CL_MEM_READ_WRITE
                                                   : CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                   bytes ? bytes : 1, output ? NULL : p->t[a], &err);
    }
    if (err == CL_SUCCESS) {
        what = "clFinish(upload of the sets)";
        err = clFinish(queue);
    }
    if (err == CL_SUCCESS)
        return BENCH_OK;
    /* Whatever was enqueued must be done before the buffers go. */
    (void)clFinish(queue); /* best effort: the failure being reported matters more */
    bench_dev_sets_release(s);
    return bench_cl_fail(err, what, msg, msg_size);
}

void *bench_host_arg(const bench_host_sets *s, size_t i, clnorm_arg_slot slot)
{
    if (!s->rows[slot])
        return s->vec[slot];
    return s->rows[slot] + (i % s->n_sets) * s->stride * s->esize[slot];
}

void bench_host_sets_free(bench_host_sets *s)
{
    for (int a = 0; a < BENCH_N_SLOTS; a++) {
        free(s->rows[a]);
        free(s->vec[a]);
    }
    memset(s, 0, sizeof *s);
}

int bench_host_sets_create(bench_host_sets *s, const bench_problem *p, size_t n_sets,
                           char *msg, size_t msg_size)
{
    memset(s, 0, sizeof *s);
    const size_t n = p->n_elems;
    s->n_sets = n_sets;
    s->out = p->info->out;
    s->stride = bench_round_up(n, SET_ALIGN);
    for (int a = 0; a < BENCH_N_SLOTS; a++) {
        const clnorm_arg_slot slot = (clnorm_arg_slot)a;
        const size_t es = bench_slot_esize(p, slot);
        const int output = (p->info->outputs & BENCH_SLOT(a)) != 0;
        if (is_row(p, a)) {
            const size_t one = s->stride * es, nb = n * es;
            s->esize[a] = es;
            if (!(s->rows[a] = aligned_alloc(64, n_sets * one)))
                goto oom;
            for (size_t i = 0; i < n_sets; i++) {
                if (output)
                    memset(s->rows[a] + i * one, 0, one);
                else {
                    memcpy(s->rows[a] + i * one, p->t[a], nb);
                    memset(s->rows[a] + i * one + nb, 0, one - nb);
                }
            }
        } else if (is_vec(p, a)) {
            const size_t bytes = bench_slot_elems(p, slot) * es;
            if (!(s->vec[a] = aligned_alloc(64, bench_round_up(bytes ? bytes : 1, 64))))
                goto oom;
            if (!output)
                memcpy(s->vec[a], p->t[a], bytes);
        }
    }
    return BENCH_OK;
oom:
    snprintf(msg, msg_size, "out of host memory for %zu sets of %zu MiB", n_sets,
             set_bytes(p, s->stride) / MIB);
    bench_host_sets_free(s);
    return BENCH_FAIL;
}
