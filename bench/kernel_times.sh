#!/usr/bin/env bash
# kernel_times.sh - where an operation's time goes, kernel by kernel: runs clnorm-bench's
# clnorm_auto under CLNORM_VERBOSE=2 (a line per kernel with its device time from profiling
# events) and prints, per op, shape and kernel, how many times it ran and its median and
# minimum device time. Every run counts, the bench's check and warm-up runs included.
#
#   bench/kernel_times.sh [clnorm-bench options]
#   CLNORM_BENCH=build/bench/clnorm-bench bench/kernel_times.sh --device gpu --op group \
#     --shape 1x1280x16x16 --layout nhwc
#
# The bench runs with --only clnorm_auto --reps 5 --min-ms 0 --warmup 1 --rounds 1 unless the
# options given say otherwise (later options win). Output: one header line, then
#   op,dtype,shape,direction,kernel,runs,median_us,min_us
# in the order the kernels first ran. Exit status: the bench's, or 1 when no kernel line came
# (the host loop took every call, or the bench failed before running one).
set -euo pipefail

bench=${CLNORM_BENCH:-}
if [[ -z "$bench" ]]; then
    here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
    for b in "$here/build/bench/clnorm-bench" "$here/build-bench/bench/clnorm-bench"; do
        if [[ -x "$b" ]]; then
            bench=$b
            break
        fi
    done
fi
if [[ -z "$bench" || ! -x "$bench" ]]; then
    echo "kernel_times.sh: no clnorm-bench (set CLNORM_BENCH to its path)" >&2
    exit 2
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT
rc=0
CLNORM_VERBOSE=2 "$bench" --only clnorm_auto --reps 5 --min-ms 0 --warmup 1 --rounds 1 "$@" \
    >/dev/null 2>"$log" || rc=$?

# clnorm_verbose,kernel,DIR,OP,DTYPE,SHAPE,KERNEL,global=..,local=..,device=..., TIME us
# (the device name may hold commas: the time is the last field, the kernel the seventh).
awk -F, '
$1 == "clnorm_verbose" && $2 == "kernel" {
    t = $NF
    if (t !~ / us$/)
        next
    sub(/ us$/, "", t)
    key = $4 "," $5 "," $6 "," $3 "," $7
    if (!(key in n))
        order[++keys] = key
    v[key, ++n[key]] = t + 0
}
END {
    print "op,dtype,shape,direction,kernel,runs,median_us,min_us"
    for (k = 1; k <= keys; k++) {
        key = order[k]
        m = n[key]
        for (i = 1; i <= m; i++)
            s[i] = v[key, i]
        for (i = 2; i <= m; i++) { # insertion sort: a few runs per kernel
            x = s[i]
            for (j = i - 1; j >= 1 && s[j] > x; j--)
                s[j + 1] = s[j]
            s[j + 1] = x
        }
        med = (m % 2) ? s[(m + 1) / 2] : (s[m / 2] + s[m / 2 + 1]) / 2
        printf "%s,%d,%.1f,%.1f\n", key, m, med, s[1]
    }
    exit keys == 0
}' "$log" || {
    echo "kernel_times.sh: no kernel line (bench exit $rc); its stderr:" >&2
    grep -v '^clnorm_verbose,' "$log" | tail -20 >&2 || true
    exit $((rc ? rc : 1))
}
exit "$rc"
