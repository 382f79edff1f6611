#!/usr/bin/env bash
# Times the host applications at their demo sizes next to the same computations in PyTorch
# CPU float32, and writes bench/results/apps_<label>.csv and a markdown table (stdout).
#
#   bench/apps/run.sh [BUILD_DIR [LABEL]]      BUILD_DIR: default build; LABEL: default the
#                                              host name (letters, digits, . _ - kept)
#
# Runs $BUILD_DIR/host/apps/clnorm-block --demo --time (fused, then --unfused),
# $BUILD_DIR/host/apps/clnorm-lnlstm --demo --time, and bench/apps/torch_apps.py; the programs'
# own output goes to stderr, their clnorm-time lines and the torch rows into the CSV
# (bench/apps/apps_report.py).
# Environment: the programs see it whole (CLNORM_DEVICE, POCL_*, ...). CLNORM_APP_ARGS adds
# options to every program run (e.g. "--runs 10"), BLOCK_ARGS to clnorm-block's two runs only
# (e.g. "--size 2,64,256,4,1024"), LNLSTM_ARGS to clnorm-lnlstm's only (e.g. "--precision
# f32": its default, auto, computes in float64 where the device has it); TORCH_ARGS to
# torch_apps.py (e.g. "--runs 3 --gemm onednn"); TORCH_CSV=FILE takes the torch rows from an
# earlier torch_apps.py CSV instead of measuring (torch runs on this host's CPU whatever device
# the programs use);
# PYTHON is the interpreter with torch (default /usr/bin/python3, Debian's).
# Exits non-zero when a program or torch_apps.py failed; the rows that exist are still written.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-build}
label=${2:-$(hostname -s 2>/dev/null || hostname)}
label=$(printf '%s' "$label" | tr -c 'A-Za-z0-9._-' '_')
python=${PYTHON:-/usr/bin/python3}
if [ ! -d "$build" ] && [ -d "$root/$build" ]; then
    build=$root/$build
fi
apps=$build/host/apps
for prog in clnorm-block clnorm-lnlstm; do
    if [ ! -x "$apps/$prog" ]; then
        echo "run.sh: no $apps/$prog (build the project first, or name its build directory)" >&2
        exit 2
    fi
done
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
failed=0

# run NAME COMMAND...: the command's output to stderr and to $logs/NAME.log.
run() {
    local name=$1
    shift
    echo "== $*" >&2
    "$@" 2>&1 | tee "$logs/$name.log" >&2
    local rc=${PIPESTATUS[0]}
    if [ "$rc" -ne 0 ]; then
        echo "run.sh: $name exited with $rc" >&2
        failed=1
    fi
}

# The *_ARGS variables are option lists, split on purpose.
# shellcheck disable=SC2086
run block_fused "$apps/clnorm-block" --demo --time ${CLNORM_APP_ARGS:-} ${BLOCK_ARGS:-}
# shellcheck disable=SC2086
run block_unfused "$apps/clnorm-block" --demo --time --unfused ${CLNORM_APP_ARGS:-} ${BLOCK_ARGS:-}
# shellcheck disable=SC2086
run lnlstm "$apps/clnorm-lnlstm" --demo --time ${CLNORM_APP_ARGS:-} ${LNLSTM_ARGS:-}
# shellcheck disable=SC2086
run lnlstm_unfused "$apps/clnorm-lnlstm" --demo --time --unfused ${CLNORM_APP_ARGS:-} \
    ${LNLSTM_ARGS:-}
# float32, as torch computes: timed only (--no-check), since over 784 steps float32 drifts from
# float64 by far more than the check's 1e-4 (README, "Host applications").
# shellcheck disable=SC2086
run lnlstm_f32 "$apps/clnorm-lnlstm" --demo --time --precision f32 --no-check \
    ${CLNORM_APP_ARGS:-} ${LNLSTM_ARGS:-}

torch_csv=${TORCH_CSV:-}
if [ -z "$torch_csv" ]; then
    torch_csv=$logs/torch.csv
    # shellcheck disable=SC2086
    run torch "$python" "$here/torch_apps.py" --csv "$torch_csv" ${TORCH_ARGS:-}
    [ -s "$torch_csv" ] || torch_csv=
fi

mkdir -p "$root/bench/results"
out=$root/bench/results/apps_$label.csv
"$python" "$here/apps_report.py" --out "$out" ${torch_csv:+--torch "$torch_csv"} \
    "$logs/block_fused.log" "$logs/block_unfused.log" "$logs/lnlstm.log" \
    "$logs/lnlstm_unfused.log" "$logs/lnlstm_f32.log" || failed=1
[ -s "$out" ] && echo "run.sh: wrote $out" >&2
exit $failed
