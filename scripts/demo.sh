#!/usr/bin/env bash
# Set up, configure a Release build in ./build, build the `clnorm` CLI, run its demo.
# Arguments are passed on to `clnorm demo`; CLNORM_BUILD_DIR and CLNORM_CMAKE_ARGS as in test.sh.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

if [ "${CLNORM_SKIP_SETUP:-0}" != 1 ]; then
  bash "$root/scripts/setup.sh"
fi

build=${CLNORM_BUILD_DIR:-build}
case "$build" in /*) ;; *) build=$root/$build ;; esac
read -r -a extra_cmake <<< "${CLNORM_CMAKE_ARGS:-}"
jobs=$(nproc 2> /dev/null || echo 2)

cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release "${extra_cmake[@]}"
cmake --build "$build" -j "$jobs" --target clnorm_cli

cli=$build/host/clnorm
if [ ! -x "$cli" ]; then
  cli=$(find "$build" -type f -name clnorm -perm -u+x -print -quit)
fi
[ -n "$cli" ] && [ -x "$cli" ] || { echo "demo.sh: the clnorm CLI was not built" >&2; exit 1; }

echo "== $cli demo $*"
"$cli" demo "$@"
