#!/usr/bin/env bash
# Install test: installs a clnorm build tree into a fresh prefix, then builds and runs the
# consumers in tests/install/consumer twice, once through find_package(clnorm) and once through
# pkg-config: one that defines no CL_TARGET_OPENCL_VERSION and two that target OpenCL 3.0
# themselves (in the source; in the source and on the command line), all with -Werror.
# Nothing outside the prefix and the work directory is used for clnorm itself.
#
# usage: run_install_test.sh BUILD_DIR WORK_DIR LIBDIR C_COMPILER [CONFIG] [EXTRA_C_FLAGS]
set -euo pipefail

build_dir=$1
work=$2
libdir=$3
cc=$4
config=${5:-}
extra_flags=${6:-}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

case "$libdir" in
  /*) libpath=$libdir ;;
  *) libpath=$work/prefix/$libdir ;;
esac
prefix=$work/prefix

# The OpenCL headers say "CL_TARGET_OPENCL_VERSION is not defined. Defaulting to ..." (a
# #pragma message, not a warning) when nobody chose a version: clnorm.h must have chosen one.
no_default_version() { # BUILD_LOG
  if grep -q "CL_TARGET_OPENCL_VERSION is not defined" "$1"; then
    cat "$1"; echo "a consumer was left without CL_TARGET_OPENCL_VERSION"; exit 1
  fi
}

rm -rf "$work"
mkdir -p "$work"

echo "== cmake --install $build_dir --prefix $prefix"
cfg_args=()
[ -n "$config" ] && cfg_args=(--config "$config")
cmake --install "$build_dir" --prefix "$prefix" "${cfg_args[@]}" > "$work/install.log"
for f in "$prefix/include/clnorm.h" "$libpath/cmake/clnorm/clnormConfig.cmake" \
         "$libpath/cmake/clnorm/clnormConfigVersion.cmake" \
         "$libpath/cmake/clnorm/clnormTargets.cmake" "$libpath/pkgconfig/clnorm.pc"; do
  [ -f "$f" ] || { echo "missing after install: $f"; cat "$work/install.log"; exit 1; }
done
ls "$libpath"/libclnorm.* > /dev/null 2>&1 || { echo "no libclnorm.* in $libpath"; exit 1; }
echo "installed: $(cd "$prefix" && find . -type f -o -type l | sort | tr '\n' ' ')"

# The installed tool, when host/ installed one: it must find the installed library by itself
# (install RPATH), so no LD_LIBRARY_PATH here.
if [ -x "$prefix/bin/clnorm" ]; then
  echo "== $prefix/bin/clnorm --help"
  (unset LD_LIBRARY_PATH; "$prefix/bin/clnorm" --help > "$work/cli-help.log" 2>&1) \
    || { echo "installed clnorm --help failed:"; cat "$work/cli-help.log"; exit 1; }
  head -n 3 "$work/cli-help.log"
fi

echo "== find_package(clnorm)"
cmake -S "$here/consumer" -B "$work/consumer-build" \
  -DCMAKE_C_COMPILER="$cc" \
  -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_C_FLAGS="$extra_flags" \
  -DCMAKE_EXE_LINKER_FLAGS="$extra_flags" \
  -Dclnorm_DIR="$libpath/cmake/clnorm" \
  -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON > "$work/consumer-configure.log" \
  || { cat "$work/consumer-configure.log"; exit 1; }
grep -F "clnorm " "$work/consumer-configure.log" || true
cmake --build "$work/consumer-build" --verbose > "$work/consumer-build.log" 2>&1 \
  || { cat "$work/consumer-build.log"; exit 1; }
no_default_version "$work/consumer-build.log"
for exe in consumer consumer_cl300 consumer_cl300_flag; do
  LD_LIBRARY_PATH="$libpath${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$work/consumer-build/$exe"
done

echo "== pkg-config clnorm"
export PKG_CONFIG_PATH="$libpath/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
pc_prefix=$(pkg-config --variable=prefix clnorm)
if [ "$pc_prefix" != "$prefix" ]; then
  echo "clnorm.pc has prefix '$pc_prefix', want '$prefix'"; exit 1
fi
pc_flags=$(pkg-config --cflags --libs clnorm)
echo "pkg-config --cflags --libs clnorm: $pc_flags"
# Each consumer as its own program, warnings as errors: no define (clnorm.h's fallback), 3.0 in
# the source, and 3.0 in the source and on the command line.
pc_build() { # NAME SOURCE [FLAGS...]
  local name=$1 src=$2
  shift 2
  # shellcheck disable=SC2086  # the flags are word lists
  "$cc" -std=c11 -Wall -Wextra -Werror $extra_flags "$@" -o "$work/$name" "$src" $pc_flags -lm \
    > "$work/$name.log" 2>&1 || { cat "$work/$name.log"; exit 1; }
  no_default_version "$work/$name.log"
  LD_LIBRARY_PATH="$libpath${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$work/$name"
}
pc_build consumer-pc "$here/consumer/main.c"
pc_build consumer-pc-cl300 "$here/consumer/cl300.c"
pc_build consumer-pc-cl300-flag "$here/consumer/cl300.c" -DCL_TARGET_OPENCL_VERSION=300

echo "install test passed"
