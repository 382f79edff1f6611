/*
 * flags.h - the one flag namespace of the library's C code and its OpenCL kernels.
 *
 * Included by src/ and prepended to every OpenCL program (src/program.c), so a bit can never
 * mean one thing on the host and another in a kernel. Only preprocessor definitions: this
 * file must stay valid C and valid OpenCL C.
 *
 * Run-time flags: the `flags` argument of every kernel. A kernel reads only the bits it
 * knows; plan warm-ups pass 0 (nothing optional is read or written).
 */
#ifndef CLNORM_FLAGS_H
#define CLNORM_FLAGS_H

#define CLNORM_KF_GAMMA (1u << 0)      /* gamma is given */
#define CLNORM_KF_BETA (1u << 1)       /* beta is given */
#define CLNORM_KF_MEAN (1u << 2)       /* forward: write mean; backward: mean is given */
#define CLNORM_KF_RSTD (1u << 3)       /* forward: write rstd; backward: rstd is given */
#define CLNORM_KF_RMS (1u << 4)        /* RMSNorm statistics: no mean, no shift */
#define CLNORM_KF_SUM (1u << 5)        /* forward: write s = x + residual */
#define CLNORM_KF_GRAD_X (1u << 6)     /* backward: write dx */
#define CLNORM_KF_GRAD_GAMMA (1u << 7) /* backward: write dgamma */
#define CLNORM_KF_GRAD_BETA (1u << 8)  /* backward: write dbeta */
#define CLNORM_KF_RECOMPUTE (1u << 9)  /* backward: statistics from the stats scratch (computed
                                          from x by the chain's first kernel), not mean/rstd */
#define CLNORM_KF_DSUM (1u << 10)      /* backward: dsum is given and added to dx */
#define CLNORM_KF_SILU (1u << 11)      /* GroupNorm: y = silu(z), the backward through it */
#define CLNORM_KF_SCALE (1u << 12)     /* row kinds: per-sample scale given (y = z * (1 + scale)) */
#define CLNORM_KF_SHIFT (1u << 13)     /* row kinds: per-sample shift given (+ shift) */
#define CLNORM_KF_GLOBAL_STATS (1u << 14) /* mean/rstd are inputs and constants (the forward
                                             reads them, the backward drops their terms) */
#define CLNORM_KF_GRAD_SCALE (1u << 15) /* backward: write dscale */
#define CLNORM_KF_GRAD_SHIFT (1u << 16) /* backward: write dshift */
#define CLNORM_KF_PARAMS_DIRECT (1u << 17) /* backward of the row kinds: one block of rows and
                                              one sample, no modulation: norm_bwd_rows stores
                                              its partial as dgamma and dbeta itself and the
                                              parameter pass does not run */
#define CLNORM_KF_ALIGNED (1u << 18) /* forward: every row and parameter vector of the call
                                        starts on a multiple of the vector width (VW
                                        elements), so kernels may use aligned vector
                                        accesses (kernels/common.cl, LOADV_AL) */
#define CLNORM_KF_GMAX (1u << 19) /* backward of the row kinds: norm_bwd_gmax wrote each
                                     sample's wide-row factor max(1, max |gamma| max |1 +
                                     scale|) (kernels/norm_backward.cl, BWD_WIDE); without it
                                     or the next, the factor is 1 */
#define CLNORM_KF_GMAX_HERE (1u << 20) /* ... the rows kernel's one-item work-groups take it
                                          from gamma and the scale themselves;
                                          norm_bwd_gmax does not run */
#define CLNORM_KF_REFINED (1u << 21) /* GroupNorm's backward given saved float32 statistics:
                                        gn_refine_stats put them into the stats scratch, a
                                        group's mean corrected where |mean| * rstd is above
                                        CLNORM_SAVED_MEAN_SPAN (kernels/group_backward.cl);
                                        the small groups' and the NHWC work-group kernels
                                        correct it in themselves */
#define CLNORM_KF_STATS_HERE (1u << 22) /* the row kinds' backward recomputing its statistics
                                           (CLNORM_KF_RECOMPUTE) on one-item work-groups of
                                           whole rows on a device with double: the rows
                                           kernel takes each row's in double itself, in the
                                           pass that brings the row into cache;
                                           norm_bwd_stats does not run */

/* The backward's parameter partials (one row per block of rows) are added per column in
 * slices of at most CLNORM_PARAM_SLICE inside a sample first, one work-item per (column,
 * slice), when a column has more than CLNORM_PARAM_SLICED_MIN of them: the last pass then
 * adds a few slice sums rather than every block's partial, one after another. */
#define CLNORM_PARAM_SLICE 32
#define CLNORM_PARAM_SLICED_MIN 64

/* Row statistics in the backward's stats scratch: six values of the arithmetic type per
 * row, (K of x, K of the residual, m, r, sc, rlo) with xhat = ((v * sc - K) - m) * r
 * (kernels/op_row_norm.cl) and rlo what r's rounding from double left, 0 where it was not
 * (kernels/norm_backward.cl, row_stats_exact; GroupNorm keeps its rlo in the residual's slot and
 * in the sixth what m's rounding left, mlo: kernels/op_group_norm.cl, gn_put_stats). */
#define CLNORM_STATS_PER_ROW 6

/* Rows of at least this many elements are shifted by the median of their first three
 * (kernels/op_row_norm.cl row_shift, and the host loop), shorter ones by their first. An
 * element as the shift costs the others at most 2^-24 sqrt(cols) of y in float32 (a lone
 * outlier of the row, at its most: 1.9e-6 at 1024 columns, 1.6e-5 at 70000, over the 1e-5
 * target from about 28000); the median never takes a lone outlier. Below this, its two more
 * loads and median per row are all it would change: 262144x64's forward ran at 1.00-1.12x
 * oneDNN with them against 1.08-1.33x without, in the same rounds (bench/RESULTS.md). */
#define CLNORM_SHIFT_MEDIAN_COLS 1024

/* GroupNorm's SiLU backward takes a channel's dz in double (xhat, z and the sigmoid's gradient
 * from x, rounded once) where rstd * |gamma| is at least this: dx = rstd * (dz * gamma - ...)
 * multiplies dz's float32 rounding by rstd * |gamma|. Below it the float terms stayed under
 * 0.3x the bound 1e-5 + 1e-5 |ref| at rstd * |gamma| near 23 with dy of N(0, 1). The host
 * loop (group_norm_host_body.h, HN(silu_wide)) and the kernels where the device has double
 * (kernels/group_backward.cl, gn_chan_at) (bench/RESULTS.md, "The SiLU's dz in double where
 * rstd * |gamma| is large"). The kernels also form such a channel's sums and dx in double,
 * with or without the SiLU (gn_dx_of_w; bench/RESULTS.md, "dx of large rstd * |gamma| in
 * double on the kernels"). The host loop's float32 backward with such a channel, or a group of
 * rstd at least CLNORM_GN_VAR_WIDE, runs in double (group_norm_host_body.h, HN(group_wide));
 * its float16 and bfloat16 keep the float loop with dz in double. */
#define CLNORM_GN_SILU_WIDE 16

/* The row host loop's float32 LayerNorm backward (and the fused add's) takes a row in double
 * where its rstd, or rstd times the largest |gamma| times its sample's largest |1 + scale|,
 * is at least this
 * (row_norm_host_body.h, HN(row_wide)): at rstd near 300 and |gamma| up to 3, x of spread 1e-3
 * about 300, the float row had put dx at 1.43x torch's float64 bound 1e-5 + 1e-5 |ref|
 * (bench/RESULTS.md, "LayerNorm's host loop: rows of a large rstd * |gamma| in double"). */
#define CLNORM_ROW_WIDE 16
/* The row kernels' backward (kernels/norm_backward.cl) takes such a LayerNorm row in double
 * where the device has it, by the same criterion (BWD_WIDE, its factor from gamma and the
 * scale: BWD_GF, norm_bwd_gmax): its statistics again when it recomputes them, g, the sums
 * and dx. Few long rows cut into chunks keep, per (row, chunk), the sums of g, g * xhat and
 * of the deviations from a saved mean (CLNORM_SAVED_MEAN_SPAN), and what their rounding left
 * (CLNORM_ROW_SUMS_PER_CHUNK values; src/op/row_norm.c sizes that scratch by it). */
#define CLNORM_ROW_SUMS_PER_CHUNK 6

/* Saved float32 statistics whose |mean| * rstd (a row's, a group's) is above this have a mean
 * whose rounding, up to |mean| 2^-24, moves xhat by more than 2^-20, float32's own rounding
 * of an xhat of 8 to 16. Host calls recompute such statistics from x (src/execute.c,
 * recompute_saved); the kernels of layer-1 calls correct such a mean by the mean of the
 * deviations from it (kernels/common.cl, saved_mean_off, and its callers). */
#define CLNORM_SAVED_MEAN_SPAN 16

/* Saved float32 statistics of a backward whose parameter gradients sum more than this many
 * terms an element (dgamma: every row, or every sample's positions) are recomputed by host
 * calls on devices with double too, whatever their mean (their terms take xhat in double):
 * each row's or group's rstd carries its own float32 rounding (up to 2^-24 relative; the
 * forward's mean its sum's, about 1e-8 of the spread), which xhat takes into every term of
 * that row or group, so the sums over many rows or samples gather it as a random walk.
 * GroupNorm 8x320x32x32 NHWC given the forward's statistics had dgamma at 1.29x torch's
 * float64 bound 1e-5 + 1e-5 |ref|, 32x256x56x56 NHWC at 2.01x, LayerNorm 16384x256 at 1.88x;
 * recomputed, 0.05x, 0.09x and 0.006x (src/execute.c, recompute_saved; bench/RESULTS.md,
 * "GroupNorm's NHWC moments in double on GPUs, and saved statistics of many terms
 * recomputed", and "The row ops' parameter terms with xhat in double"). */
#define CLNORM_SAVED_PARAM_TERMS 4096

/* GroupNorm's NHWC backward on one-item work-groups lays out each (n, tile)'s per-channel
 * statistics and parameters as this many rows of C values (kernels/group_backward.cl,
 * GN_BT_LEN, which lists them; src/op/group_norm.c sizes that scratch by it). */
#define CLNORM_GN_TABLE_ROWS 16

/* GroupNorm's backward recomputing a group's statistics on the kernels (NCHW, NHWC's
 * workgroup strategy and, since 2026-12-05, the NHWC tiles' merge) takes them again in double
 * where rstd is at least this and the device has double (kernels/op_group_norm.cl,
 * gn_stats_w, which also keeps what rstd's float rounding left): dx multiplies a shift of
 * xhat by about rstd |mean(g xhat)| and rstd's relative error by about 2 rstd |xhat mean(g
 * xhat)|, and one float32 ulp of the mean or of rstd is enough to miss 1e-5 at rstd 100
 * (bench/RESULTS.md, "The backward's statistics again in double at a large rstd"). The host
 * loop's float32 backward of such a group runs in double (HN(group_wide)). */
#define CLNORM_GN_VAR_WIDE 16

/* GroupNorm's backward of groups of at most this many elements runs in double: the host
 * loop's in float32 (src/op/group_norm_host.c, gn_wide), and the kernels' of contiguous groups
 * without the SiLU where the device has double, one work-item per group
 * (kernels/group_backward_small.cl; src/op/group_norm.c, small_backward). dx = rstd * (g -
 * mean(g) - xhat * mean(g * xhat)) nearly cancels in a small group, and float roundings on
 * the way come out multiplied by rstd (bench/RESULTS.md, "The float32 backward of small
 * groups in double", "Small groups' backward on the kernels, in one launch"). */
#define CLNORM_GN_SMALL_BWD_ELEMS 64

/* Every kernel takes its scalars (each tensor's element offset and row stride, in slot
 * order, then the step's own scalars in their list order) as one struct of CLNORM_KS_MAX
 * ulongs, its last argument, after its pointers (src/launch.c, kernels/common.cl). One
 * argument instead of two or three per tensor: PoCL allocates and copies every argument of
 * every launch, and 29 arguments cost 0.47 us more than 9 per launch on its in-thread device
 * (bench/RESULTS.md). The largest chain step (norm_bwd_rows with a residual) takes 29. */
#define CLNORM_KS_MAX 32

#endif
