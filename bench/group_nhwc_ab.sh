#!/usr/bin/env bash
# group_nhwc_ab.sh - GroupNorm in NHWC, its two strategies side by side in one call: the tiles
# ("split") and a work-group per group ("workgroup", on GPUs where src/op/group_nhwc_choice.h
# says, from an H200's times on 2026-12-04). For a lent GPU's short session: the
# forward and backward of issue #10's 19 shapes with clnorm's choice, both strategies and the
# copy, then each strategy's kernels' device times at three shapes (kernel_times.sh).
#
#   bench/group_nhwc_ab.sh OUTDIR [clnorm-bench options]
#   CLNORM_BENCH=/tmp/clbuild/bench/clnorm-bench bench/group_nhwc_ab.sh "$OUT" --device gpu
#
# Writes OUTDIR/group_nhwc_ab.csv (the bench's CSV) and OUTDIR/group_nhwc_kernels_split.csv,
# OUTDIR/group_nhwc_kernels_workgroup.csv (kernel_times.sh's). Options after OUTDIR go to
# every bench run (later ones win: --shape replaces the 19 shapes and the three). Exit status:
# 2 for a missing OUTDIR or bench, else the first failing run's.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=${1:-}
if [[ -z "$out" || ! -d "$out" ]]; then
    echo "group_nhwc_ab.sh: usage: group_nhwc_ab.sh OUTDIR [clnorm-bench options]" \
        "(OUTDIR must exist)" >&2
    exit 2
fi
shift
bench=${CLNORM_BENCH:-$here/../build/bench/clnorm-bench}
if [[ ! -x "$bench" ]]; then
    echo "group_nhwc_ab.sh: no clnorm-bench at $bench (set CLNORM_BENCH)" >&2
    exit 2
fi

# the default shapes unless the options name some
shapes=(--shape 1x1280x16x16 --shape 1x320x64x64 --shape 8x1280x64x64)
for a in "$@"; do
    [[ "$a" == --shape ]] && shapes=()
done

"$bench" --op group,group-backward --layout nhwc \
    --only clnorm_auto,clnorm_split,clnorm_workgroup,copy_device \
    --csv "$out/group_nhwc_ab.csv" "$@"
for s in split workgroup; do
    CLNORM_STRATEGY=$s CLNORM_BENCH=$bench bash "$here/kernel_times.sh" \
        --op group,group-backward --layout nhwc "${shapes[@]}" "$@" \
        > "$out/group_nhwc_kernels_$s.csv"
done
