#!/usr/bin/env bash
# Set up, configure (warnings are errors), build with every core, run the whole CTest suite.
#
# Environment (all optional; CI and scripts/asan.sh use them):
#   CLNORM_BUILD_DIR      build directory, relative to the repository root or absolute (build)
#   CLNORM_CMAKE_ARGS     extra arguments for the configure step, split on spaces
#   CLNORM_CTEST_ARGS     extra arguments for ctest, split on spaces (e.g. "-R ref -L install")
#   CTEST_PARALLEL_LEVEL  tests run at once (2)
#   CLNORM_SKIP_SETUP=1   do not run scripts/setup.sh
#   CLNORM_PYTHON         the Python that makes the package's venv (/usr/bin/python3, Debian's,
#                         whose numpy, torch and pyopencl the venv sees)
#   CLNORM_SKIP_PYTHON=1  do not install and test the Python package
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

# The Python package (python/, tests/python/): a venv that sees the system's numpy, torch and
# pyopencl (--system-site-packages), the package installed from this checkout by pip (setup.py
# builds the library with this CMake project; --no-build-isolation uses the system's
# setuptools, so nothing is downloaded), then pytest. The venv is made once per build dir.
# A sanitizer build (scripts/asan.sh runs this script) skips it: the package builds its own
# plain library, which the plain run has already tested.
py_rc=0
if grep -q '^CLNORM_SANITIZE:BOOL=ON' "$build/CMakeCache.txt" 2> /dev/null; then
  echo
  echo "== Python package: skipped in a sanitizer build (scripts/test.sh's plain run tests it)"
elif [ "${CLNORM_SKIP_PYTHON:-0}" != 1 ]; then
  echo
  echo "== Python package (venv $build/venv)"
  py=${CLNORM_PYTHON:-/usr/bin/python3}
  [ -x "$py" ] || py=python3
  venv=$build/venv
  set +e
  { [ -x "$venv/bin/python" ] || "$py" -m venv --system-site-packages "$venv"; } \
    && "$venv/bin/pip" install --disable-pip-version-check --no-build-isolation -q "$root" \
    && (cd "$root" && "$venv/bin/python" -m pytest "$root/tests/python")
  py_rc=$?
  set -e
  [ "$py_rc" = 0 ] && echo "== Python package: passed" || echo "== Python package: FAILED ($py_rc)"
fi
[ "$rc" != 0 ] && exit "$rc"
exit "$py_rc"
