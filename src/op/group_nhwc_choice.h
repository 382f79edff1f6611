/*
 * group_nhwc_choice.h - which of GroupNorm's two NHWC strategies a GPU runs when none is asked
 * for (group_norm.c's auto_strategy), and how many tiles the split one cuts a sample into
 * (its geometry): arithmetic on the shape and the compute units alone, header-only, so that
 * test_group_norm.c checks the choice against the times it was made from without a GPU.
 *
 * The two strategies (bench/RESULTS.md, "GroupNorm on a GPU: NVIDIA H200, both NHWC
 * strategies"):
 *   - workgroup: a work-group per (sample, group), one launch (group_nhwc_wg.cl,
 *     group_backward_wg.cl); N x G work-groups in all;
 *   - split: tiles of positions x all C channels, three launches forward (moments, merge,
 *     apply), more backward (group_nhwc.cl, group_backward.cl); N x tiles work-groups.
 */
#ifndef CLNORM_GROUP_NHWC_CHOICE_H
#define CLNORM_GROUP_NHWC_CHOICE_H

#include <stddef.h>

/* On GPUs a tile is no shorter than this many positions: the merges add every tile's
 * moments. */
#define GN_NHWC_GPU_MIN_TILE ((size_t)16)

/* Groups of more elements than this keep the tiles: each of a work-group's items reads its
 * share three times, the second and third meant to come from L1 or L2 (up to 256 KiB of
 * float32 per work-group). On the H200 the longer groups measured (81920 and 163840 elements)
 * ran faster as tiles, forward and backward together, in every batch tried. */
#define GN_NHWC_WG_GROUP_ELEMS ((size_t)65536)

/* Below this many elements a group runs a work-group whatever the device's occupancy: the
 * tiles' two extra launches cost more than the idle compute units (on the H200 every such
 * shape ran 1.09-2.5x faster as work-groups, forward and backward together). */
#define GN_NHWC_WG_ALWAYS_ELEMS ((size_t)16384)

/* The split strategy's tiles per sample: four work-groups per compute unit over all samples,
 * none shorter than min_len positions, at least one. */
static inline size_t gn_nhwc_tiles_per_sample(size_t compute_units, size_t samples, size_t hw,
                                              size_t min_len)
{
    const size_t n = samples ? samples : 1;
    const size_t want = (4 * compute_units + n - 1) / n;
    const size_t most = (hw + min_len - 1) / min_len;
    return want < 1 ? 1 : want > most ? most : want;
}

/* 1: a GPU with `compute_units` runs N x C x HW in G groups (NHWC) as a work-group per group;
 * 0: as tiles. The work-groups win where a group is short (one launch, not three) or where
 * the N x G of them fill the device. They lose where they are fewer than the compute units
 * while the tiles would be at least four times as many: 1x320x64x64 at G = 32 (32
 * work-groups of 40960 elements on 132 SMs) took 95 us forward and 145 us backward as
 * work-groups, 46 and 60 us as 256 tiles. */
static inline int gn_nhwc_gpu_runs_workgroups(size_t compute_units, size_t samples,
                                              size_t channels, size_t groups, size_t hw)
{
    const size_t elems = channels / groups * hw;
    if (elems > GN_NHWC_WG_GROUP_ELEMS)
        return 0;
    if (elems <= GN_NHWC_WG_ALWAYS_ELEMS)
        return 1;
    const size_t wgs = samples * groups;
    const size_t tiles =
        samples * gn_nhwc_tiles_per_sample(compute_units, samples, hw, GN_NHWC_GPU_MIN_TILE);
    return !(wgs < compute_units && tiles >= 4 * wgs);
}

#endif
