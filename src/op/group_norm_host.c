/*
 * group_norm_host.c - GroupNorm's host loop: the forward and the backward as C loops on the
 * host, no OpenCL command, in the calling thread and the context's workers (host_pool.h), for
 * small host-pointer calls on CPU devices (execute.c; README "Small problems on CPU
 * devices"), as row_norm_host.c does for the row family. Tested against the reference
 * (ref/ref_group_norm.c) like a strategy, in both layouts (test_host_loop).
 *
 * The work is cut into units that depend on the shape alone, so the bits never depend on how
 * many threads run them:
 *   NCHW: a group is one contiguous block of C/G channels x spatial; a unit is a run of it,
 *     whole channels of at most HCHUNK elements, or HCHUNK positions of one channel when a
 *     channel is longer; in the forward a group of at most GN_FWD_FUSE_ELEMS is one unit.
 *   NHWC: a unit is a block of positions of one sample, every channel (rows of C contiguous
 *     values), about HCHUNK elements and at least 32 positions.
 * Where every group lies within one unit ("fused": an NCHW group of one run, an NHWC sample of
 * one block) the unit gets its statistics and its y in one pass, with x still in the cache.
 * The phases, each a job on the pool, the calling thread merging between them:
 *   moments: per unit, the deviations from the group's shift (the kernels' row_shift),
 *     their sum and squared deviations in the kernels' blocked two-pass way (NCHW) or per
 *     channel over the positions in blocks of HBLOCK, Kahan-added (NHWC), each group's
 *     channels merged with Chan's update; then per group, the units' entries merged in order
 *     in double. A group whose squares overflow is redone scaled (group_slow).
 *   apply: y = ((x * sc - K) - m) * r * gamma_c + beta_c, then the SiLU; a float32 NCHW y of
 *     at least HSTREAM_BYTES goes out through streaming stores while the chunk's next unit
 *     is prefetched (HN(nchw_apply_run); chunks of GN_STREAM_CHUNK_ELEMS).
 *   backward: per unit and channel, the sums of dz and dz * xhat (dz = dy through the SiLU);
 *     per sample and group, mean(g) and mean(g * xhat) with g = dz * gamma_c, and dgamma and
 *     dbeta summed in double in (sample, block) order; then dx per unit (a fused unit, which
 *     holds its groups whole, computes their means and its dx in the sums pass; groups of at
 *     most GN_SMALL_ELEMS in NCHW, in the statistics pass, right after their statistics).
 *     A float32 backward of groups of at most GN_WIDE_ELEMS runs in double (gn_wide).
 */
#include "../dtype.h"
#include "../half_bits.h"
#include "../host_pool.h"
#include "host_simd.h"
#include "op.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

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
    size_t nunits, upc, nchunks; /* units, units per chunk, chunks */
    size_t ulen;  /* the most elements of a unit */
} gn_geom;

/* Unit i: sample n, group g (NCHW), channels [c0, c1) x positions [p0, p1), position
 * block pb. */
typedef struct {
    size_t n, g, c0, c1, p0, p1, pb;
} gn_unit;

static size_t min_size(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* The forward's NCHW groups of at most this many elements are one unit each (fused: their
 * statistics and y in one pass over x, the second read from the core's L2: 256 KiB of
 * float32). The backward stages several of a unit's tensors and keeps units of HCHUNK. */
#define GN_FWD_FUSE_ELEMS ((size_t)65536)

/* The forward's NCHW groups of at most this many elements (one statistics block,
 * HMOM_BLOCK) run through HN(small_groups), whose per-group work is lean. */
#define GN_SMALL_ELEMS ((size_t)HMOM_BLOCK)

static void gn_geometry(const clnorm_desc *d, clnorm_direction dir, gn_geom *q)
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

static void gn_stream_chunks(gn_geom *q)
{
    const size_t upc = clnorm_div_up(GN_STREAM_CHUNK_ELEMS, q->ulen);
    if (upc > q->upc) {
        q->upc = upc;
        q->nchunks = q->nunits ? clnorm_div_up(q->nunits, q->upc) : 0;
    }
}
#endif

static void gn_unit_of(const gn_geom *q, size_t i, gn_unit *u)
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
static int gn_small_path(const gn_geom *q)
{
    return !q->nhwc && q->fused && q->L <= GN_SMALL_ELEMS;
}

/* NCHW group g of sample n as a unit: its channels, every position. */
static gn_unit gn_whole_group(const gn_geom *q, size_t n, size_t g)
{
    const gn_unit u = {n, g, g * q->cpg, (g + 1) * q->cpg, 0, q->hw, 0};
    return u;
}

/* Element (n, c, p) of a tensor whose samples are `stride` apart. */
static size_t gn_at(const gn_geom *q, size_t stride, size_t n, size_t c, size_t p)
{
    return n * stride + (q->nhwc ? p * q->C + c : c * q->hw + p);
}

/* Chan's merge of (nb, mb, M2b) into the running count, mean and M2. */
static void gn_merge(double *cnt, double *mean, double *M2, double nb, double mb, double M2b)
{
    if (nb == 0)
        return;
    const double n = *cnt + nb, delta = mb - *mean;
    *mean += delta * (nb / n);
    *M2 += M2b + delta * delta * (*cnt * (nb / n));
    *cnt = n;
}

static void gn_entry_set(double *ent, size_t e, double cnt, double mean, double M2)
{
    ent[3 * e] = cnt;
    ent[3 * e + 1] = mean;
    ent[3 * e + 2] = M2;
}

#define HA float
#define HF16C HAVE_F16C_PATH
#define HSTREAM HAVE_STREAM_PATH
#define HNATIVE CLNORM_F32
#define HEXP clnorm_host_expf
#define HN(n) gn_##n##_f
#include "group_norm_host_body.h"
#undef HA
#undef HF16C
#undef HSTREAM
#undef HNATIVE
#undef HEXP
#undef HN

#define HA double
#define HF16C 0
#define HSTREAM 0
#define HNATIVE CLNORM_F64
#define HEXP clnorm_host_exp
#define HN(n) gn_##n##_d
#include "group_norm_host_body.h"
#undef HA
#undef HF16C
#undef HSTREAM
#undef HNATIVE
#undef HEXP
#undef HN

/* The float32 backward of groups of at most this many elements computes in double (gn_wide). */
#define GN_WIDE_ELEMS ((size_t)64)

/* Whether a float32 backward computes in double (gn_run_d on the float32 tensors): that of
 * groups of at most GN_WIDE_ELEMS elements. There dx = rstd * (g - mean(g) - xhat * mean(g *
 * xhat)) is a difference of terms of up to rstd * |g| that nearly cancel (in a group of two
 * elements, entirely), and float arithmetic left dx up to 1.25e-5 from torch's float64 on
 * InstanceNorm of 16x512x1x2 with N(0, 1) data, 3.5e-5 on 2x2 groups of a small spread
 * (torch's own float32: 5e-4 and 2.8e-3); in double it is within 6e-8, the float32 rounding
 * of the result. With SiLU too: its sigmoid in double is clnorm_host_exp, which vectorizes
 * (libm's exp, a call per element, made those calls 2.5-4x slower; a float sigmoid would put
 * its rounding into g, which the cancellation amplifies). It costs 1.2-2.2x on such calls on
 * cold data, 1.6-3.1x with SiLU (tables and statistics in double), so larger groups, within
 * 4e-6 in float at 128 elements, keep float (bench/RESULTS.md, "The float32 backward of small
 * groups in double"). */
static int gn_wide(const clnorm_desc *d, clnorm_direction dir)
{
    return d->dtype == CLNORM_F32 && dir != CLNORM_FORWARD &&
           d->cols / d->groups * (d->spatial ? d->spatial : 1) <= GN_WIDE_ELEMS;
}

clnorm_status clnorm_group_norm_host(const clnorm_op *op, const clnorm_desc *d,
                                     clnorm_direction dir, const clnorm_host_ptrs *a,
                                     clnorm_ctx *ctx)
{
    (void)op;
    return d->dtype == CLNORM_F64 || gn_wide(d, dir) ? gn_run_d(d, dir, a, ctx)
                                                     : gn_run_f(d, dir, a, ctx);
}
