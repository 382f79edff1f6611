#!/usr/bin/env bash
# same_bits.sh - do two builds of the clnorm CLI give the same bytes? For kernel changes meant to
# change nothing but their build (kernels/row_stats.cl's redo as a loop): LayerNorm and RMSNorm,
# forward (y, mean, rstd) and backward (dx, dgamma, dbeta, the statistics recomputed), on each
# strategy forced through CLNORM_STRATEGY, in float32 and float64, on rows the kernels treat
# apart: a row whose squares overflow (redone at a scale), huge values of both signs, a
# constant row, an Inf, a NaN, tiny values; GroupNorm (NCHW, NHWC, with SiLU) forward and
# backward on a sample with overflowing squares; and the host loop (small host arrays on a CPU
# device, no strategy forced), each storage type, LayerNorm/RMSNorm rows and GroupNorm's paths
# (InstanceNorm of 1x1, float32's backward in double, fused units, the streamed NCHW forward),
# for changes to how the loops are compiled (src/op/host_simd.h, HPHASE).
#
#   bench/same_bits.sh CLNORM_A CLNORM_B [WORKDIR]
#   bench/same_bits.sh /tmp/old/build/host/clnorm build/host/clnorm
#
# Each CLI gets a PoCL cache of its own under WORKDIR (default: a temporary folder), runs every
# case once to fill it, then again for the outputs that are compared: PoCL 3.1's first run of
# GroupNorm's SiLU after a cold build differed from later runs by 1 ulp in 1-2 elements of
# 12096, with the same kernel binary (bench/RESULTS.md). Needs python3 with numpy for the
# inputs (PYTHON names it). Prints each differing file; exit status 0 when every output
# matches, 1 when one differs or a call fails in one build only, 2 for bad arguments.
# The environment reaches every call: CLNORM_LOCAL_SIZE=32 CLNORM_VECTOR_WIDTH=4
# CLNORM_MAX_GROUPS=2 runs them all on the GPU's geometry, as test_group_norm_gpu_geometry
# and the suites' _vw4 repeats do on PoCL.
set -euo pipefail

a=${1:-}
b=${2:-}
if [[ -z "$a" || -z "$b" || ! -x "$a" || ! -x "$b" ]]; then
    echo "same_bits.sh: usage: same_bits.sh CLNORM_A CLNORM_B [WORKDIR] (two executables)" >&2
    exit 2
fi
work=${3:-$(mktemp -d)}
mkdir -p "$work/in"
# a python3 with numpy: PYTHON, else python3 on the PATH, else the system's (a virtual
# environment on the PATH may lack numpy)
py=${PYTHON:-python3}
"$py" -c 'import numpy' 2> /dev/null || py=/usr/bin/python3
"$py" - "$work/in" <<'EOF'
import sys
import numpy as np
d = sys.argv[1]
rng = np.random.default_rng(7)
x = rng.standard_normal((37, 1000)).astype(np.float32) * 3 + 1
x[3] *= 1e25                          # squares overflow: the row is redone at a scale
x[5] = 7.0                            # constant
x[8, 17] = np.inf
x[9, 3] = np.nan
x[11] *= 1e-30                        # tiny
x[13, :500], x[13, 500:] = 3e38, -3e38
np.save(f"{d}/x32.npy", x)
np.save(f"{d}/dy32.npy", rng.standard_normal((37, 1000)).astype(np.float32))
x64 = x.astype(np.float64)
x64[3] = rng.standard_normal(1000) * 1e160
x64[13, :500], x64[13, 500:] = 1e300, -1e300
np.save(f"{d}/x64.npy", x64)
np.save(f"{d}/dy64.npy", rng.standard_normal((37, 1000)))
np.save(f"{d}/g.npy", rng.standard_normal(1000).astype(np.float32))
np.save(f"{d}/b.npy", rng.standard_normal(1000).astype(np.float32))
xg = rng.standard_normal((3, 64, 7, 9)).astype(np.float32)
xg[1, :8] *= 1e25
dyg = rng.standard_normal((3, 64, 7, 9)).astype(np.float32)
np.save(f"{d}/xg-nchw.npy", xg)
np.save(f"{d}/dyg-nchw.npy", dyg)
np.save(f"{d}/xg-nhwc.npy", np.ascontiguousarray(xg.transpose(0, 2, 3, 1)))
np.save(f"{d}/dyg-nhwc.npy", np.ascontiguousarray(dyg.transpose(0, 2, 3, 1)))
np.save(f"{d}/gg.npy", rng.standard_normal(64).astype(np.float32))
np.save(f"{d}/bg.npy", rng.standard_normal(64).astype(np.float32))
np.save(f"{d}/sg.npy", (0.5 * rng.standard_normal((3, 64))).astype(np.float32))
np.save(f"{d}/hg.npy", rng.standard_normal((3, 64)).astype(np.float32))
# the host loop's calls (small host arrays on a CPU device): rows, and groups of its paths
for name, shape in (("rows", (257, 768)), ("short", (300, 24))):
    np.save(f"{d}/h{name}.npy", (rng.standard_normal(shape) * 2 + 0.5).astype(np.float32))
    np.save(f"{d}/hdy{name}.npy", rng.standard_normal(shape).astype(np.float32))
    np.save(f"{d}/hg{name}.npy", rng.standard_normal(shape[1]).astype(np.float32))
    np.save(f"{d}/hb{name}.npy", rng.standard_normal(shape[1]).astype(np.float32))
for name, shape in (("in", (2, 2048, 1, 1)), ("wide", (16, 512, 1, 2)), ("mid", (8, 64, 8, 8)),
                    ("long", (2, 64, 16, 16)), ("big", (8, 320, 32, 32))):
    xs = (rng.standard_normal(shape) * 2 + 0.5).astype(np.float32)
    dys = rng.standard_normal(shape).astype(np.float32)
    np.save(f"{d}/hx{name}-nchw.npy", xs)
    np.save(f"{d}/hdy{name}-nchw.npy", dys)
    np.save(f"{d}/hx{name}-nhwc.npy", np.ascontiguousarray(xs.transpose(0, 2, 3, 1)))
    np.save(f"{d}/hdy{name}-nhwc.npy", np.ascontiguousarray(dys.transpose(0, 2, 3, 1)))
    np.save(f"{d}/hgg{name}.npy", rng.standard_normal(shape[1]).astype(np.float32))
    np.save(f"{d}/hbg{name}.npy", rng.standard_normal(shape[1]).astype(np.float32))
EOF

# call TAG CMD...: CMD with its output dropped; a failure is listed in $fails as "FAIL TAG"
call() {
    local tag=$1
    shift
    "$@" > /dev/null 2>&1 || echo "FAIL $tag" >> "$fails"
}

# The calls of run_all, each with its outputs under $out named by TAG; ST is the strategy
# forced through CLNORM_STRATEGY, empty for the CLI's own choice; FLAG... go to the CLI.
# rows_pair TAG ST X DY GAMMA BETA FLAG...: the row forward (y, rstd) and backward (dx,
# dgamma, dbeta)
rows_pair() {
    local tag=$1 st=$2 x=$3 dy=$4 g=$5 b=$6
    shift 6
    call "run $tag" env ${st:+CLNORM_STRATEGY=$st} "$cli" run --device cpu "$@" \
        --input "$x" --gamma "$g" --beta "$b" --output "$out/y-$tag.npy" \
        --rstd "$out/rstd-$tag.npy"
    call "grad $tag" env ${st:+CLNORM_STRATEGY=$st} "$cli" grad --device cpu "$@" \
        --input "$x" --grad-output "$dy" --gamma "$g" --beta "$b" \
        --grad-input "$out/dx-$tag.npy" --grad-gamma "$out/dg-$tag.npy" \
        --grad-beta "$out/db-$tag.npy"
}

# group_run TAG ST X GAMMA BETA FLAG...: a GroupNorm forward (y, rstd)
group_run() {
    local tag=$1 st=$2 x=$3 g=$4 b=$5
    shift 5
    call "run group-$tag" env ${st:+CLNORM_STRATEGY=$st} "$cli" run --device cpu "$@" \
        --input "$x" --gamma "$g" --beta "$b" --output "$out/gy-$tag.npy" \
        --rstd "$out/grstd-$tag.npy"
}

# group_grad TAG ST X DY GAMMA BETA FLAG...: a GroupNorm backward (dx, dgamma, dbeta)
group_grad() {
    local tag=$1 st=$2 x=$3 dy=$4 g=$5 b=$6
    shift 6
    call "grad group-$tag" env ${st:+CLNORM_STRATEGY=$st} "$cli" grad --device cpu "$@" \
        --input "$x" --grad-output "$dy" --gamma "$g" --beta "$b" \
        --grad-input "$out/gdx-$tag.npy" --grad-gamma "$out/gdg-$tag.npy" \
        --grad-beta "$out/gdb-$tag.npy"
}

# group_mod TAG ST X DY GAMMA BETA SCALE SHIFT FLAG...: GroupNorm with a per-sample
# modulation (scale-shift norm), forward (y, rstd) and backward (dx, dgamma, dbeta, dscale,
# dshift)
group_mod() {
    local tag=$1 st=$2 x=$3 dy=$4 g=$5 b=$6 sc=$7 sh=$8
    shift 8
    call "run group-mod-$tag" env ${st:+CLNORM_STRATEGY=$st} "$cli" run --device cpu "$@" \
        --input "$x" --gamma "$g" --beta "$b" --scale "$sc" --shift "$sh" \
        --output "$out/my-$tag.npy" --rstd "$out/mrstd-$tag.npy"
    call "grad group-mod-$tag" env ${st:+CLNORM_STRATEGY=$st} "$cli" grad --device cpu "$@" \
        --input "$x" --grad-output "$dy" --gamma "$g" --beta "$b" --scale "$sc" --shift "$sh" \
        --grad-input "$out/mdx-$tag.npy" --grad-gamma "$out/mdg-$tag.npy" \
        --grad-beta "$out/mdb-$tag.npy" --grad-scale "$out/mdsc-$tag.npy" \
        --grad-shift "$out/mdsh-$tag.npy"
}

# run_all CLI OUT: every case, its outputs into OUT, the failed calls in OUT/fails
run_all() {
    local cli=$1 out=$2 in=$work/in st p rms tag lay dt sh g silu
    mkdir -p "$out"
    fails=$out/fails
    : > "$fails"
    for st in row workgroup subgroup split; do
        for p in 32 64; do
            for rms in "" --rms; do
                rows_pair "$st-f$p${rms:+-rms}" $st "$in/x$p.npy" "$in/dy$p.npy" "$in/g.npy" \
                    "$in/b.npy" $rms
            done
        done
    done
    # GroupNorm: the device's own choice, then NHWC's two strategies forced (the tiles, a
    # work-group per group)
    for st in auto split workgroup; do
        for lay in nchw nhwc; do
            [[ $st != auto && $lay == nchw ]] && continue
            tag=$lay-$st
            group_run "$tag" $st "$in/xg-$lay.npy" "$in/gg.npy" "$in/bg.npy" --groups 8 \
                --layout $lay --silu
            group_grad "$tag" $st "$in/xg-$lay.npy" "$in/dyg-$lay.npy" "$in/gg.npy" \
                "$in/bg.npy" --groups 8 --layout $lay
            for silu in "" --silu; do # the scale-shift norm on the kernels
                CLNORM_HOST_BYTES=0 group_mod "$tag${silu:+-silu}" $st "$in/xg-$lay.npy" \
                    "$in/dyg-$lay.npy" "$in/gg.npy" "$in/bg.npy" "$in/sg.npy" "$in/hg.npy" \
                    --groups 8 --layout $lay $silu
            done
        done
    done
    # The host loop (no CLNORM_STRATEGY: the CLI's host arrays take it on a CPU device), each
    # storage type, forward and backward: rows, and GroupNorm's small groups, float32's
    # double path (wide), the fused units (mid), groups beyond the small groups' 1024
    # elements (long: the backward's unit loop) and the streamed NCHW forward (big)
    for dt in f32 f16 bf16 f64; do
        for sh in rows short; do
            for rms in "" --rms; do
                rows_pair "host-$sh-$dt${rms:+-rms}" "" "$in/h$sh.npy" "$in/hdy$sh.npy" \
                    "$in/hg$sh.npy" "$in/hb$sh.npy" --dtype $dt $rms
            done
        done
        for sh in in wide mid long big; do
            g=8
            [[ $sh == in ]] && g=2048
            [[ $sh == wide ]] && g=512
            for lay in nchw nhwc; do
                for silu in "" --silu; do
                    tag=host-g$sh-$lay-$dt${silu:+-silu}
                    group_run "$tag" "" "$in/hx$sh-$lay.npy" "$in/hgg$sh.npy" "$in/hbg$sh.npy" \
                        --dtype $dt --groups $g --layout $lay $silu
                    [[ $sh == big ]] && continue # the streamed path is the forward's
                    group_grad "$tag" "" "$in/hx$sh-$lay.npy" "$in/hdy$sh-$lay.npy" \
                        "$in/hgg$sh.npy" "$in/hbg$sh.npy" --dtype $dt --groups $g --layout $lay \
                        $silu
                done
            done
        done
    done
}

for side in a b; do
    cli=$a
    [[ $side == b ]] && cli=$b
    export POCL_CACHE_DIR=$work/cache-$side
    run_all "$cli" "$work/warm-$side"
    run_all "$cli" "$work/out-$side"
done

status=0
if ! cmp -s "$work/out-a/fails" "$work/out-b/fails"; then
    echo "same_bits.sh: the builds fail different calls:" >&2
    diff "$work/out-a/fails" "$work/out-b/fails" >&2 || true
    status=1
fi
n=0 same=0
for f in "$work"/out-a/*.npy; do
    n=$((n + 1))
    if cmp -s "$f" "$work/out-b/$(basename "$f")"; then
        same=$((same + 1))
    else
        echo "differs: $(basename "$f")"
        status=1
    fi
done
echo "same_bits.sh: $same of $n outputs byte-identical" \
    "($(wc -l < "$work/out-a/fails") failed calls in A); work in $work"
exit $status
