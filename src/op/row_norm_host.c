/*
 * row_norm_host.c - the host loop of the row-normalization family: the whole operation, forward
 * or backward, as plain C loops on the host, with no OpenCL command at all: in the calling
 * thread, joined by the context's worker threads (host_pool.h) when the call has several
 * chunks of rows. The execution path of host-pointer calls on CPU devices (execute.c, README
 * "Small problems on CPU devices"): there the kernels' launch, and the copies in and out of
 * device buffers, cost tens of microseconds where a small call's work is one or two.
 *
 * Not the reference (ref/ref_row_norm.c), which is the oracle of the tests: the reference
 * accumulates in double element by element, the host loop computes as the kernels do, in
 * float for f32/f16/bf16 storage (double for f64) with the kernels' blocked shifted two-pass
 * statistics (row_norm_host_body.h), and is tested against the reference like a strategy;
 * but a float32 LayerNorm row of a large rstd * |gamma| takes its backward in double
 * (row_norm_host_body.h, HN(row_wide)).
 * Parameter gradients are summed in double row by row within each chunk of rows, then over
 * the chunks in order: deterministic, and the same whatever the number of threads, since the
 * chunks depend on the shape alone.
 */
#include "../dtype.h"
#include "../half_bits.h"
#include "../host_pool.h"
#include "host_simd.h"
#include "row_norm.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The backward's chunks are multiples of HROWS rows (below), as when their parameter
 * gradients' float partials were blocks of that many rows. */
#define HROWS 32

/* Rows of one chunk: about HCHUNK elements and at most HMAX_CHUNKS chunks (the backward keeps
 * a few rows of double sums per chunk). The backward's chunks are whole HROWS blocks unless
 * that makes one chunk of rows that would have been several: a few long rows (32 x 4096 was
 * one chunk, so one thread, at 0.45x oneDNN) are cut into HFEW_CHUNKS chunks then, each at
 * least a quarter of HCHUNK. Four, not eight: each chunk adds its rows of
 * double sums in the calling thread at the end, and 16 x 4096 in eight chunks ran 0.86-1.27x
 * the single chunk, in four 1.27-1.63x. (Cutting every call of fewer than eight whole
 * chunks, 64 x 768's two chunks of 32 rows became eight of 8 and ran 0.92-0.95x on two
 * cores: bench/RESULTS.md.) A function of the shape only, so the sums' order, and the bits,
 * do not depend on the number of threads. */
#define HFEW_CHUNKS 4
static size_t host_chunk_rows(const clnorm_desc *d, clnorm_direction dir)
{
    size_t r = d->cols ? clnorm_div_up(HCHUNK, d->cols) : 1;
    const size_t least = clnorm_div_up(d->rows, HMAX_CHUNKS);
    if (r < least)
        r = least;
    if (dir == CLNORM_BACKWARD) {
        const size_t whole = clnorm_div_up(r, HROWS) * HROWS;
        if (d->rows <= whole && d->rows > r) {
            const size_t fewest = d->cols ? clnorm_div_up(HCHUNK / 4, d->cols) : 1;
            r = clnorm_div_up(d->rows, HFEW_CHUNKS);
            if (r < fewest)
                r = fewest;
        } else {
            r = whole;
        }
    }
    return r ? r : 1;
}

/* n double sums stored as parameters of type pt (element access of dtype.h, as the
 * reference stores them) at base + off when base is given; zeroed after when `clear`. */
static void store_sums(clnorm_dtype pt, void *base, size_t off, double *v, size_t n, int clear)
{
    for (size_t j = 0; j < n; j++) {
        if (base)
            clnorm_elem_store(pt, base, off + j, v[j]);
        if (clear)
            v[j] = 0.0;
    }
}

#define HA float
#define HF16C HAVE_F16C_PATH
#define HSTREAM HAVE_STREAM_PATH
#define HNATIVE CLNORM_F32
#define HN(n) n##_f
#include "row_norm_host_body.h"
#undef HA
#undef HF16C
#undef HSTREAM
#undef HNATIVE
#undef HN

#define HA double
#define HF16C 0
#define HSTREAM 0
#define HNATIVE CLNORM_F64
#define HN(n) n##_d
#include "row_norm_host_body.h"
#undef HA
#undef HF16C
#undef HSTREAM
#undef HNATIVE
#undef HN

clnorm_status clnorm_row_norm_host(const clnorm_op *op, const clnorm_desc *d,
                                   clnorm_direction dir, const clnorm_host_ptrs *a,
                                   clnorm_ctx *ctx)
{
    return d->dtype == CLNORM_F64 ? run_d(op, d, dir, a, ctx) : run_f(op, d, dir, a, ctx);
}
