#!/usr/bin/env bash
# Compiles every ```c block of README.md against include/clnorm.h (-Wall -Wextra -Werror);
# blocks with a main() are also linked against the library of BUILD_DIR (default build) when
# it exists, and run when RUN=1. Keeps the README's examples honest (CTest: readme_examples).
# usage: check-readme.sh [BUILD_DIR]; CC and EXTRA_CFLAGS (e.g. sanitizer flags) are honoured.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-${CLNORM_BUILD_DIR:-build}}
case "$build" in /*) ;; *) build=$root/$build ;; esac
cc=${CC:-cc}
read -r -a extra <<< "${EXTRA_CFLAGS:-}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

awk -v dir="$work" '
  /^```c[[:space:]]*$/ { n++; f = sprintf("%s/example%d.c", dir, n); on = 1; next }
  /^```/ { on = 0; next }
  on { print > f }
' "$root/README.md"

lib=$(find "$build/src" -maxdepth 1 -name 'libclnorm.*' -print -quit 2> /dev/null || true)
status=0
for f in "$work"/example*.c; do
  name=$(basename "$f" .c)
  if ! "$cc" "${extra[@]}" -std=c11 -Wall -Wextra -Wpedantic -Werror -I "$root/include" -c "$f" -o "$work/$name.o"; then
    echo "README $name: does not compile"; status=1; continue
  fi
  if grep -q 'int main(' "$f" && [ -n "$lib" ]; then
    if ! "$cc" "${extra[@]}" -o "$work/$name" "$work/$name.o" "$lib" -lOpenCL -lm -pthread; then
      echo "README $name: does not link"; status=1; continue
    fi
    if [ "${RUN:-0}" = 1 ]; then
      echo "== README $name"
      LD_LIBRARY_PATH="$build/src${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$work/$name" || { echo "README $name: failed"; status=1; }
    fi
  fi
  echo "README $name: ok"
done
exit $status
