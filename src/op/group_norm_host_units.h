/*
 * group_norm_host_units.h - what GroupNorm's host loop shares between its files: the call's
 * units and their geometry (group_norm_host.c's comment describes them), the moment entries,
 * and the two instances of the loop, one per arithmetic type (group_norm_host_f32.c and
 * group_norm_host_f64.c, each group_norm_host_body.h compiled once: two files that compile
 * side by side, where one file holding both took GCC twice as long as either).
 */
#ifndef CLNORM_GROUP_NORM_HOST_UNITS_H
#define CLNORM_GROUP_NORM_HOST_UNITS_H

#include "../dtype.h"
#include "host_simd.h"
#include "op.h"

#include <stddef.h>

enum { GN_MOMENTS, GN_APPLY, GN_GRAD_SUMS, GN_DX };

/* A call's units. */
typedef struct {
    size_t n, C, G, cpg, hw, L; /* samples, channels, groups, channels per group, positions,
                                   elements per group */
    int nhwc;
    int fused;    /* every group within one unit (NCHW: a group is a unit; NHWC: a sample) */
    size_t pblen; /* positions of a unit (NHWC; NCHW when a channel is cut) */
    size_t npb;   /* position blocks per channel: the backward's tables have npb rows of C
                     per sample */
    size_t cpp;   /* NCHW: whole channels per unit */
    size_t J;     /* moment entries per group */
    size_t nunits, upc, nchunks; /* units, units per chunk (the most, before gn_balance),
                                    chunks (gn_chunk_start) */
    size_t ulen;  /* the most elements of a unit */
} gn_geom;

/* Unit i: sample n, group g (NCHW), channels [c0, c1) x positions [p0, p1), position
 * block pb. */
typedef struct {
    size_t n, g, c0, c1, p0, p1, pb;
} gn_unit;

static inline size_t min_size(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* The forward's NCHW groups of at most this many elements are one unit each (fused: their
 * statistics and y in one pass over x, the second read from the core's L2: 512 KiB of
 * float32). At 64K, 1x640x64x64's groups of 81,920 elements read x from memory twice, and
 * 128K took 12-15% off that forward (bench/RESULTS.md, "The host loops' outputs asked for
 * before the statistics"). The backward stages several of a unit's tensors and keeps units
 * of HCHUNK. */
#define GN_FWD_FUSE_ELEMS ((size_t)131072)

/* The forward's NCHW groups of at most this many elements (one statistics block,
 * HMOM_BLOCK) run through HN(small_groups), whose per-group work is lean. */
#define GN_SMALL_ELEMS ((size_t)HMOM_BLOCK)

static inline void gn_geometry(const clnorm_desc *d, clnorm_direction dir, gn_geom *q)
{
    q->n = d->rows;
    q->C = d->cols;
    q->G = d->groups;
    q->cpg = q->C / q->G;
    q->hw = d->spatial ? d->spatial : 1;
    q->L = q->cpg * q->hw;
    q->nhwc = d->layout == CLNORM_NHWC && q->hw > 1;
    q->fused = 0;
    /* NCHW: a whole group per unit (the forward's groups of at most GN_FWD_FUSE_ELEMS) */
    const int whole = dir == CLNORM_FORWARD && q->L <= GN_FWD_FUSE_ELEMS;
    if (q->nhwc) {
        size_t p = clnorm_div_up(HCHUNK, q->C);
        q->pblen = min_size(p < 32 ? 32 : p, q->hw);
        q->npb = clnorm_div_up(q->hw, q->pblen);
        q->cpp = q->C;
        q->J = q->npb;
        q->fused = q->npb == 1; /* a sample is one unit */
        q->nunits = q->n * q->npb;
        q->ulen = q->pblen * q->C;
    } else if (q->hw > HCHUNK && !whole) {
        q->pblen = HCHUNK;
        q->npb = clnorm_div_up(q->hw, HCHUNK);
        q->cpp = 1;
        q->J = q->cpg * q->npb;
        q->nunits = q->n * q->G * q->J;
        q->ulen = HCHUNK;
    } else {
        q->pblen = q->hw;
        q->npb = 1;
        q->cpp = whole ? q->cpg : min_size(HCHUNK / q->hw ? HCHUNK / q->hw : 1, q->cpg);
        q->J = clnorm_div_up(q->cpg, q->cpp);
        q->fused = q->J == 1;
        q->nunits = q->n * q->G * q->J;
        q->ulen = q->cpp * q->hw;
    }
    q->upc = HCHUNK / q->ulen ? HCHUNK / q->ulen : 1;
    const size_t least = clnorm_div_up(q->nunits, HMAX_CHUNKS);
    if (q->upc < least)
        q->upc = least;
    q->nchunks = q->nunits ? clnorm_div_up(q->nunits, q->upc) : 0;
}

/* A streamed forward's chunks (group_norm_host_body.h, HN(nchw_apply_run)) hold units of
 * at least this many elements in all, 256 KiB of float32: a unit prefetches the next unit
 * of its chunk, which the same thread runs next. With a unit per chunk, the threads take
 * the units in turn and each prefetched the one another thread runs; a float32 forward of
 * 8x320x32x32 took 1.24 ms with units of 10K elements as chunks, 0.86-0.95 ms with chunks of
 * 64K elements, two threads (bench/RESULTS.md, "GroupNorm's NCHW forward: streaming stores,
 * the next unit prefetched"). The bits are the units', whatever the chunks. */
#if HAVE_STREAM_PATH
#define GN_STREAM_CHUNK_ELEMS ((size_t)65536)

static inline void gn_stream_chunks(gn_geom *q)
{
    const size_t upc = clnorm_div_up(GN_STREAM_CHUNK_ELEMS, q->ulen);
    if (upc > q->upc) {
        q->upc = upc;
        q->nchunks = q->nunits ? clnorm_div_up(q->nunits, q->upc) : 0;
    }
}
#endif

/* NHWC's statistics and the backward's sums take chunks of units of about this many elements
 * in all, 256 KiB of float32, each unit asking for the next unit's x (and dy) in L2 as its
 * sums go (group_norm_host_body.h, HN(rows_moments_block), HN(bwd_sums)), so that memory
 * works while the unit's sums run from the caches. With a unit a chunk, each asked for whole
 * just before its sums, a single 1x320x64x64 sample's statistics took longer than its apply,
 * which also writes y; chunks of four units with the prefetch ran single samples' forward
 * 1.01-1.27x faster and their backward 1.0-1.13x (bench/RESULTS.md, "GroupNorm's NHWC host
 * loop: the next unit asked for during the sums"). At most nunits / width units a chunk, so
 * that every thread has one. Which thread runs a unit never changes its bits. */
#define GN_NHWC_CHUNK_ELEMS ((size_t)65536)

static inline void gn_nhwc_chunks(gn_geom *q, size_t width)
{
    size_t upc = clnorm_div_up(GN_NHWC_CHUNK_ELEMS, q->ulen);
    const size_t most = q->nunits / (width ? width : 1);
    if (upc > most)
        upc = most;
    if (upc > q->upc) {
        q->upc = upc;
        q->nchunks = clnorm_div_up(q->nunits, upc);
    }
}

/* The first unit of chunk c (c = nchunks: the end). The units are cut into nchunks runs whose
 * lengths differ by one at most: in runs of upc units and a shorter last one, the two threads
 * of a single 1x320x16x16 sample's forward (32 groups of 2560 elements, 6 a chunk) ran 18 and
 * 14 units, and a 3x100x7x9 call's 30 small groups were 26 and 4. Which thread runs a unit
 * never changes its bits. */
static inline size_t gn_chunk_start(const gn_geom *q, size_t c)
{
    const size_t base = q->nunits / q->nchunks, extra = q->nunits % q->nchunks;
    return c * base + min_size(c, extra);
}

/* The chunks for `width` threads: their count rounded up to a multiple of width (at most one
 * per unit), so that the threads, taking them in turn, get as many units each: 6-7% off that
 * 1x320x16x16 forward and backward, 24-34% off the 3x100x7x9 forward (bench/RESULTS.md, "The
 * host loops' outputs asked for before the statistics"). */
static inline void gn_balance(gn_geom *q, size_t width)
{
    if (width > 1 && q->nchunks % width != 0) {
        const size_t n = clnorm_div_up(q->nchunks, width) * width;
        q->nchunks = min_size(n, q->nunits);
    }
}

static inline void gn_unit_of(const gn_geom *q, size_t i, gn_unit *u)
{
    if (q->nhwc) {
        u->n = i / q->npb;
        u->pb = i % q->npb;
        u->g = 0;
        u->c0 = 0;
        u->c1 = q->C;
    } else {
        const size_t grp = i / q->J, k = i % q->J;
        u->n = grp / q->G;
        u->g = grp % q->G;
        if (q->npb > 1) { /* one channel, a block of its positions */
            u->c0 = u->g * q->cpg + k / q->npb;
            u->c1 = u->c0 + 1;
            u->pb = k % q->npb;
        } else {
            u->c0 = u->g * q->cpg + k * q->cpp;
            u->c1 = min_size(u->c0 + q->cpp, (u->g + 1) * q->cpg);
            u->pb = 0;
        }
    }
    u->p0 = u->pb * q->pblen;
    u->p1 = min_size(u->p0 + q->pblen, q->hw);
}

/* Whether a statistics phase goes through HN(small_groups): whole NCHW groups of at most
 * GN_SMALL_ELEMS. */
static inline int gn_small_path(const gn_geom *q)
{
    return !q->nhwc && q->fused && q->L <= GN_SMALL_ELEMS;
}

/* NCHW group g of sample n as a unit: its channels, every position. */
static inline gn_unit gn_whole_group(const gn_geom *q, size_t n, size_t g)
{
    const gn_unit u = {n, g, g * q->cpg, (g + 1) * q->cpg, 0, q->hw, 0};
    return u;
}

/* Element (n, c, p) of a tensor whose samples are `stride` apart. */
static inline size_t gn_at(const gn_geom *q, size_t stride, size_t n, size_t c, size_t p)
{
    return n * stride + (q->nhwc ? p * q->C + c : c * q->hw + p);
}

/* NHWC unit i's rows in a tensor whose samples are `stride` apart: the offset of its first
 * element, and in *len its element count (the x and dy a unit asks for ahead of the next). */
static inline size_t gn_nhwc_unit_span(const gn_geom *q, size_t i, size_t stride, size_t *len)
{
    gn_unit v;
    gn_unit_of(q, i, &v);
    *len = (v.p1 - v.p0) * q->C;
    return gn_at(q, stride, v.n, 0, v.p0);
}

/* Chan's merge of (nb, mb, M2b) into the running count, mean and M2. */
static inline void gn_merge(double *cnt, double *mean, double *M2, double nb, double mb,
                            double M2b)
{
    if (nb == 0)
        return;
    const double n = *cnt + nb, delta = mb - *mean;
    *mean += delta * (nb / n);
    *M2 += M2b + delta * delta * (*cnt * (nb / n));
    *cnt = n;
}

static inline void gn_entry_set(double *ent, size_t e, double cnt, double mean, double M2)
{
    ent[3 * e] = cnt;
    ent[3 * e + 1] = mean;
    ent[3 * e + 2] = M2;
}

/* The backward's channel sums are double in both loops (group_norm_host_body.h, HN(bwd_sums)):
 * a Kahan step (their lanes added pairwise by host_simd.h's clnorm_host_lanes_sum). */
static inline void gn_kahan_wide(double *s, double *c, double v)
{
    const double y = v - *c;
    const double t = *s + y;
    *c = (t - *s) - y;
    *s = t;
}

/* The sum of a[i] * b[i] over [0, n), or of a[i] where b is NULL, in HLANES lanes added
 * pairwise (the float loop's wide small groups, group_norm_host_body.h's HN(group_bwd_w): a
 * single chain of additions took that backward 3x the float one's time). */
static inline double gn_lanes_dot_w(const double *a, const double *b, size_t n)
{
    double l[HLANES] = {0};
    size_t i = 0;
    if (b)
        for (; i + HLANES <= n; i += HLANES)
            for (size_t k = 0; k < HLANES; k++)
                l[k] += a[i + k] * b[i + k];
    else
        for (; i + HLANES <= n; i += HLANES)
            for (size_t k = 0; k < HLANES; k++)
                l[k] += a[i + k];
    for (size_t k = 0; i < n; i++, k++)
        l[k] += b ? a[i] * b[i] : a[i];
    return clnorm_host_lanes_sum(l);
}

/* dy through the SiLU of z in double: dy * s(z) * (1 + z * (1 - s(z))), s the sigmoid (the
 * float loop's wide small groups, group_norm_host_body.h's HN(group_bwd_w); the double loop's
 * HN(silu_grad) is the same arithmetic). */
static inline double gn_silu_grad_w(double dy, double z)
{
    const double s = 1.0 / (1.0 + clnorm_host_exp(-z));
    return dy * (s * (1.0 + z * (1.0 - s)));
}

/* The loop in float (float32, float16 and bfloat16 storage) and in double (float64, and
 * float32's backward of small groups, group_norm_host.c's gn_wide, and of a large rstd *
 * |gamma|, which gn_run_f hands to gn_run_d: group_norm_host_body.h's HN(group_wide)). */
clnorm_status gn_run_f(const clnorm_desc *d, clnorm_direction dir, const clnorm_host_ptrs *a,
                       clnorm_ctx *ctx);
clnorm_status gn_run_d(const clnorm_desc *d, clnorm_direction dir, const clnorm_host_ptrs *a,
                       clnorm_ctx *ctx);

#endif
