#!/usr/bin/env bash
# Set up, configure (warnings are errors), build with every core, run the whole CTest suite.
#
# Environment (all optional; CI and scripts/asan.sh use them):
#   CLNORM_BUILD_DIR      build directory, relative to the repository root or absolute (build)
#   CLNORM_CMAKE_ARGS     extra arguments for the configure step, split on spaces
#   CLNORM_CTEST_ARGS     extra arguments for ctest, split on spaces (e.g. "-R ref -L install")
#   CTEST_PARALLEL_LEVEL  tests run at once (2)
#   CLNORM_SKIP_SETUP=1   do not run scripts/setup.sh
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

if [ "${CLNORM_SKIP_SETUP:-0}" != 1 ]; then
  bash "$root/scripts/setup.sh"
fi

build=${CLNORM_BUILD_DIR:-build}
case "$build" in /*) ;; *) build=$root/$build ;; esac
read -r -a extra_cmake <<< "${CLNORM_CMAKE_ARGS:-}"
read -r -a extra_ctest <<< "${CLNORM_CTEST_ARGS:-}"
jobs=$(nproc 2> /dev/null || echo 2)

cmake -S "$root" -B "$build" -DCLNORM_WERROR=ON -DCLNORM_BUILD_TESTS=ON "${extra_cmake[@]}"
cmake --build "$build" -j "$jobs"

log=$build/ctest.log
set +e
(cd "$build" && ctest --output-on-failure -j "${CTEST_PARALLEL_LEVEL:-2}" "${extra_ctest[@]}") 2>&1 \
  | tee "$log"
rc=${PIPESTATUS[0]}
set -e

echo
echo "== ctest summary ($build)"
grep -E '^[0-9]+% tests passed|^The following tests|^[[:space:]]+[0-9]+ - |^Total Test time' "$log" || true
exit "$rc"
