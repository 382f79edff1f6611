#!/usr/bin/env bash
# ThreadSanitizer: builds the library, tests/test_threads.c and tests/test_latency.c with
# -fsanitize=thread in their own build directory and runs both suites (threads on one context,
# on one shared plan through every queue arrangement, verbose output, per-thread errors; the
# latency path, whose calls run their parts on the host loop's threads, under PoCL's
# "pthread basic" device list as CTest runs it). Races inside PoCL and the ICD
# loader are suppressed by scripts/tsan.supp; nothing of clnorm is. Exits non-zero on any
# ThreadSanitizer report, as on any test failure, and prints how long it took (CI runs it).
#
# Environment (all optional):
#   CLNORM_TSAN_BUILD_DIR  build directory, relative to the repository root or absolute
#                          (build-tsan)
#   CLNORM_TSAN_CC         compiler (the default C compiler; gcc and clang both work)
#   CLNORM_CMAKE_ARGS      extra arguments for the configure step, split on spaces
#   CLNORM_TSAN_WARM_BUILD an uninstrumented build of this checkout (with its tests) whose
#                          test_threads and test_latency warm PoCL's cache instead of a build
#                          of its own in $build/plain (.ci/run passes scripts/test.sh's)
#   TSAN_OPTIONS           replaces the options below (keep suppressions= if you set it)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${CLNORM_TSAN_BUILD_DIR:-build-tsan}
case "$build" in /*) ;; *) build=$root/$build ;; esac
read -r -a extra_cmake <<< "${CLNORM_CMAKE_ARGS:-}"
jobs=$(nproc 2> /dev/null || echo 2)
start=$(date +%s)
# PoCL's work-group method of the CTest suites (the top-level CMakeLists.txt says why): the
# plain build's warm-up then fills the same cache entries that the instrumented run reads.
export POCL_WORK_GROUP_METHOD=${POCL_WORK_GROUP_METHOD:-loops}

cc_args=()
if [ -n "${CLNORM_TSAN_CC:-}" ]; then
  cc_args=(-DCMAKE_C_COMPILER="$CLNORM_TSAN_CC")
fi
# The sanitizer goes on the compile and on every link (the library is a shared object).
# RelWithDebInfo keeps the report stacks readable; only the library and the suite are built.
cmake -S "$root" -B "$build" "${cc_args[@]}" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCLNORM_WERROR=ON -DCLNORM_BUILD_TESTS=ON \
  -DCLNORM_BUILD_BENCH=OFF \
  -DCMAKE_C_FLAGS="-fsanitize=thread -fno-omit-frame-pointer" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=thread" \
  -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=thread" \
  "${extra_cmake[@]}"
cmake --build "$build" -j "$jobs" --target test_threads test_latency

# PoCL compiles kernels with LLVM, which under ThreadSanitizer's interceptors runs about ten
# times slower (9 minutes on 2 busy cores for this suite on an empty cache, against 1). The suite
# built without the sanitizer runs first, in $build/plain, and leaves every program in PoCL's
# cache (keyed by source, options and device, not by the host binary): the sanitized run then
# only loads them. Its failures are left to the sanitized run to report. One call per thread
# and case builds every program the sanitized run's 8 do.
warm=${CLNORM_TSAN_WARM_BUILD:-}
if [ -n "$warm" ]; then
  case "$warm" in /*) ;; *) warm=$root/$warm ;; esac
  for t in test_threads test_latency; do
    [ -x "$warm/tests/$t" ] || { echo "tsan.sh: CLNORM_TSAN_WARM_BUILD=$warm has no tests/$t" >&2; exit 2; }
  done
else
  warm=$build/plain
  cmake -S "$root" -B "$warm" "${cc_args[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DCLNORM_BUILD_TESTS=ON -DCLNORM_BUILD_BENCH=OFF "${extra_cmake[@]}" > /dev/null
  cmake --build "$warm" -j "$jobs" --target test_threads test_latency > /dev/null
fi
mkdir -p "$build/plain"
CLNORM_THREADS_ITERS=1 "$warm/tests/test_threads" > "$build/plain/warm.log" 2>&1 || true
# test_latency's environment, as tests/core_tests.cmake registers it
latency_env=(env "POCL_DEVICES=pthread basic" CLNORM_HOST_BYTES=0)
"${latency_env[@]}" "$warm/tests/test_latency" >> "$build/plain/warm.log" 2>&1 || true
echo "== tsan: PoCL cache warmed by the uninstrumented suite, $(( $(date +%s) - start )) s so far"

# halt_on_error=0: every report of the run is printed, not only the first; exitcode=66 makes
# a report fail the run even when the test itself passes.
default_options=suppressions=$root/scripts/tsan.supp:halt_on_error=0:exitcode=66
default_options=$default_options:second_deadlock_stack=1:print_suppressions=0
export TSAN_OPTIONS=${TSAN_OPTIONS:-$default_options}
# test_threads' calls per thread, mode and strategy (30 in CTest's plain run): a race needs
# one unordered pair of accesses to be reported, not many tries; 8 took the sanitized suite
# from 254 s to 74 s on the 2-core Xeon VM (tests/test_threads.c)
export CLNORM_THREADS_ITERS=${CLNORM_THREADS_ITERS:-8}
log=$build/tsan.log
set +e
"$build/tests/test_threads" > "$log" 2>&1
rc=$?
# 77: skipped (no in-thread device on this platform), as CTest counts it
"${latency_env[@]}" "$build/tests/test_latency" > "$log.latency" 2>&1
rc_latency=$?
set -e
cat "$log" "$log.latency"

reports=$(cat "$log" "$log.latency" | grep -c '^WARNING: ThreadSanitizer' || true)
elapsed=$(( $(date +%s) - start ))
echo
echo "== tsan: test_threads exit status $rc, test_latency $rc_latency," \
  "$reports ThreadSanitizer report(s), ${elapsed} s"
if [ "$rc" -ne 0 ] || { [ "$rc_latency" -ne 0 ] && [ "$rc_latency" -ne 77 ]; } ||
  [ "$reports" -ne 0 ]; then
  exit 1
fi
