# shellcheck shell=bash
# gpu_env.sh - sourced on a lent NVIDIA GPU machine from the project's root, after
# ../shared/gpu/prepare.sh has put Debian's OpenCL ICD loader, headers, CLBlast, cmocka and
# clinfo into .gpu/debs here (carry [".gpu"]). That machine has the driver, CUDA, PyTorch,
# CMake and a compiler, but no OpenCL loader of its own. This file
#   - unpacks the packages into /tmp/clroot,
#   - registers the driver's libnvidia-opencl.so.1 with that loader (OCL_ICD_VENDORS),
#   - builds clnorm (Release, tests on) into /tmp/clbuild unless it is built there already,
#     falling back to the carried .gpu/build when it cannot (its bench needs oneDNN, which
#     that machine lacks), or, with CLNORM_GPU_BUILD=DIR, takes the build carried in DIR and
#     builds nothing: one made here with -DCLNORM_WITH_ONEDNN_BENCH=OFF saves the lease the
#     build's minute (the path of the project's root is the same there),
#   - exports CLNORM_BENCH and CLNORM_TEST_BUILD for bench/gpu_group.sh.
#
#   source bench/gpu_env.sh && bash bench/gpu_group.sh "$OUT" --device gpu
#
# Returns (not exits: it is sourced) 3 when the machine has no NVIDIA OpenCL library, 4 when
# neither a build here nor a carried one is there.

gpu_env_main() {
    local root=/tmp/clroot build=/tmp/clbuild lib f
    if ! ls .gpu/debs/*.deb > /dev/null 2>&1; then
        echo "gpu_env.sh: no .gpu/debs/*.deb: run bash ../shared/gpu/prepare.sh here first" \
            "and carry .gpu" >&2
        return 4
    fi
    mkdir -p "$root"
    for f in .gpu/debs/*.deb; do dpkg -x "$f" "$root" || return 4; done
    lib=${ICD_LIB:-}
    [ -n "$lib" ] || lib=$(ldconfig -p | awk '/libnvidia-opencl.so.1/{print $NF; exit}')
    [ -n "$lib" ] || lib=$(find / -name 'libnvidia-opencl.so.1' -not -path '/proc/*' \
        2> /dev/null | head -1)
    if [ -z "$lib" ]; then
        echo "gpu_env.sh: no libnvidia-opencl.so.1 on this machine: no NVIDIA OpenCL" >&2
        return 3
    fi
    echo "gpu_env.sh: NVIDIA OpenCL: $lib"
    mkdir -p /tmp/vendors && echo "$lib" > /tmp/vendors/nvidia.icd
    export OCL_ICD_VENDORS=/tmp/vendors
    export LD_LIBRARY_PATH=$root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    "$root/usr/bin/clinfo" -l || true
    if [ -n "${CLNORM_GPU_BUILD:-}" ]; then
        build=$(cd "$CLNORM_GPU_BUILD" 2> /dev/null && pwd) || build=
        if [ -z "$build" ] || [ ! -x "$build/bench/clnorm-bench" ]; then
            echo "gpu_env.sh: CLNORM_GPU_BUILD=$CLNORM_GPU_BUILD has no bench/clnorm-bench" >&2
            return 4
        fi
        echo "gpu_env.sh: the carried build $build"
    elif [ ! -x "$build/bench/clnorm-bench" ]; then
        if command -v cc > /dev/null && cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release \
            -DCLNORM_BUILD_TESTS=ON -DOpenCL_INCLUDE_DIR="$root/usr/include" \
            -DOpenCL_LIBRARY="$root/usr/lib/x86_64-linux-gnu/libOpenCL.so.1" \
            -DCMAKE_PREFIX_PATH="$root/usr" -DPKG_CONFIG_EXECUTABLE=/usr/bin/pkg-config \
            > /tmp/clbuild-configure.log 2>&1 \
            && cmake --build "$build" -j"$(nproc)" > /tmp/clbuild-build.log 2>&1; then
            echo "gpu_env.sh: built in $build"
        else
            echo "gpu_env.sh: the build here failed: the carried .gpu/build; the logs' ends:" >&2
            tail -n 15 /tmp/clbuild-configure.log /tmp/clbuild-build.log >&2 2> /dev/null
            build=$PWD/.gpu/build
            [ -x "$build/bench/clnorm-bench" ] || return 4
            export LD_LIBRARY_PATH=$build/src:$LD_LIBRARY_PATH
        fi
    fi
    export CLNORM_BENCH=$build/bench/clnorm-bench CLNORM_TEST_BUILD=$build
}

gpu_env_main
