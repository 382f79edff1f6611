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
 *     values), about HCHUNK elements and at least 32 positions; the statistics and the
 *     backward's sums run chunks of a few units, each unit asking for the next one's x (and
 *     dy) as its sums go (gn_nhwc_chunks).
 * Where every group lies within one unit ("fused": an NCHW group of one run, an NHWC sample of
 * one block) the unit gets its statistics and its y in one pass, with x still in the cache.
 * The phases, each a job on the pool, the calling thread merging between them:
 *   moments: per unit, the deviations from the group's shift (the kernels' row_shift),
 *     their sum and squared deviations in the kernels' blocked two-pass way (NCHW) or per
 *     channel over the positions in blocks of HBLOCK, Kahan-added (NHWC), each group's
 *     channels merged with Chan's update; then per group, the units' entries merged in order
 *     in double. A group whose squares overflow is redone scaled (group_slow).
 *   apply: y = ((x * sc - K) - m) * r * gamma_c + beta_c, then the SiLU; a float32 y of at
 *     least HSTREAM_BYTES goes out through streaming stores, in NCHW while the chunk's next
 *     unit is prefetched (HN(nchw_apply_run); chunks of GN_STREAM_CHUNK_ELEMS), in NHWC a
 *     unit's rows staged in L1 in blocks (HN(nhwc_apply)).
 *   backward: per unit and channel, the sums of dz and dz * xhat (dz = dy through the SiLU);
 *     per sample and group, mean(g) and mean(g * xhat) with g = dz * gamma_c, and dgamma and
 *     dbeta summed in double in (sample, block) order; then dx per unit (a fused unit, which
 *     holds its groups whole, computes their means and its dx in the sums pass; groups of at
 *     most GN_SMALL_ELEMS in NCHW, in the statistics pass, right after their statistics).
 *     A float32 backward of groups of at most CLNORM_GN_SMALL_BWD_ELEMS (flags.h) runs in
 *     double (gn_wide); so does one with a group of a large rstd * |gamma|, found once the
 *     statistics are known: the call starts again in double before it has written anything
 *     (a small NCHW group, whose dx follows its statistics, goes to double alone;
 *     group_norm_host_body.h, HN(group_wide)).
 * A per-sample modulation (CLNORM_SCALE / CLNORM_SHIFT, the scale-shift norm: u = z * (1 +
 * scale[b, c]) + shift[b, c], y = u or silu(u)) is folded into gamma and beta per modulation
 * sample, as the kernels fold it (gn_fold_mod): gamma_c * (1 + scale) and beta_c * (1 + scale)
 * + shift, which every phase above reads for the batch entry's sample in place of gamma_c and
 * beta_c (HN(gam_of), HN(bet_of)), dz being the gradient of u. The parameter gradients then
 * weight each sample's sums by its 1 + scale, and dscale = gamma_c * sum(dz * xhat) + beta_c *
 * sum(dz) and dshift = sum(dz) add up the sums of a sample's entries (HN(reduce_grads)).
 * Precomputed statistics (CLNORM_USE_GLOBAL_STATS) skip the moments: the forward is the apply
 * phase alone (K = mean, m = 0: NHWC's table takes x - mean first, as the kernels'), and the
 * backward keeps its group means at 0 (dx = rstd * g), with no sums phase when only dx is
 * asked for.
 */
#include "group_norm_host_units.h"

/* Whether a float32 backward computes in double (gn_run_d on the float32 tensors): that of
 * groups of at most CLNORM_GN_SMALL_BWD_ELEMS elements (flags.h; the kernels' small-group
 * chain takes the same). There dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) is a
 * difference of terms of up to rstd * |g| that nearly cancel (in a group of two
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
           clnorm_row_len(d) / d->groups <= CLNORM_GN_SMALL_BWD_ELEMS;
}

clnorm_status clnorm_group_norm_host(const clnorm_op *op, const clnorm_desc *d,
                                     clnorm_direction dir, const clnorm_host_ptrs *a,
                                     clnorm_ctx *ctx)
{
    (void)op;
    return d->dtype == CLNORM_F64 || gn_wide(d, dir) ? gn_run_d(d, dir, a, ctx)
                                                     : gn_run_f(d, dir, a, ctx);
}
