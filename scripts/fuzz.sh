#!/usr/bin/env bash
# Fuzzes the .npy reader (host/npy.c) with libFuzzer for a bounded time: builds the harness
# tests/fuzz/npy_fuzz.c with clang (-fsanitize=fuzzer,address,undefined) in its own build
# directory, then runs it on the committed seed corpus (tests/fuzz/corpus/npy/, read only)
# plus a work corpus in the build directory (kept between runs). Exits non-zero when the
# fuzzer finds a crash, a sanitizer report, a leak, a timeout or a broken property (the
# harness aborts); the input is then saved under BUILD/fuzz-artifacts/ -- replay it with
#   BUILD/tests/npy_fuzz BUILD/fuzz-artifacts/crash-...
#
# Environment (all optional):
#   CLNORM_FUZZ_SECONDS    total fuzzing time in seconds (60)
#   CLNORM_FUZZ_BUILD_DIR  build directory, relative to the repository root or absolute
#                          (build-fuzz)
#   CLNORM_FUZZ_JOBS       parallel fuzzing processes (1; more uses libFuzzer's -fork)
#   CLNORM_FUZZ_CC         the clang to build with (clang)
#   CLNORM_SKIP_SETUP=1    never install clang / libFuzzer (fail instead when missing)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

seconds=${CLNORM_FUZZ_SECONDS:-60}
build=${CLNORM_FUZZ_BUILD_DIR:-build-fuzz}
case "$build" in /*) ;; *) build=$root/$build ;; esac
jobs=${CLNORM_FUZZ_JOBS:-1}
cc=${CLNORM_FUZZ_CC:-clang}
seeds=$root/tests/fuzz/corpus/npy
case "$seconds" in ''|*[!0-9]*) echo "fuzz.sh: CLNORM_FUZZ_SECONDS=$seconds is not a number" >&2; exit 2 ;; esac
case "$jobs" in ''|*[!0-9]*|0) echo "fuzz.sh: CLNORM_FUZZ_JOBS=$jobs is not a positive number" >&2; exit 2 ;; esac

# clang and its libFuzzer runtime: installed like scripts/setup.sh installs the rest (Debian
# package names), unless told not to.
have_libfuzzer() {
  command -v "$cc" > /dev/null 2>&1 || return 1
  local probe
  probe=$(mktemp -d)
  printf '%s\n' '#include <stddef.h>' '#include <stdint.h>' \
    'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }' \
    > "$probe/p.c"
  "$cc" -fsanitize=fuzzer,address,undefined -o "$probe/p" "$probe/p.c" > /dev/null 2>&1
  local rc=$?
  rm -rf "$probe"
  return $rc
}
if ! have_libfuzzer; then
  if [ "${CLNORM_SKIP_SETUP:-0}" = 1 ] || ! command -v apt-get > /dev/null 2>&1; then
    echo "fuzz.sh: $cc with libFuzzer (-fsanitize=fuzzer) is needed; on Debian/Ubuntu install" \
         "the packages clang and libclang-rt-dev" >&2
    exit 1
  fi
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  echo "fuzz.sh: installing clang libclang-rt-dev"
  "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
  "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -q --no-install-recommends clang libclang-rt-dev
  have_libfuzzer || { echo "fuzz.sh: $cc still cannot link -fsanitize=fuzzer" >&2; exit 1; }
fi

# Only the harness is built (npy.c is self-contained): the rest of the tree need not compile.
mkdir -p "$build"
cmake -S "$root" -B "$build" -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCLNORM_FUZZ=ON -DCLNORM_WERROR=ON -DCLNORM_BUILD_BENCH=OFF > "$build/configure.log" 2>&1 \
  || { cat "$build/configure.log"; exit 1; }
cmake --build "$build" --target npy_fuzz -j "$(nproc 2> /dev/null || echo 2)"
fuzzer=$build/tests/npy_fuzz
[ -x "$fuzzer" ] || { echo "fuzz.sh: $fuzzer was not built" >&2; exit 1; }

corpus=$build/fuzz-corpus
artifacts=$build/fuzz-artifacts
mkdir -p "$corpus" "$artifacts"
rm -f "$artifacts"/crash-* "$artifacts"/leak-* "$artifacts"/timeout-* "$artifacts"/oom-* \
  "$artifacts"/slow-unit-*

args=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=4096
      -dict="$root/tests/fuzz/npy.dict" -artifact_prefix="$artifacts/" -print_final_stats=1)
[ "$jobs" -gt 1 ] && args+=(-fork="$jobs")
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

echo "== $fuzzer ${args[*]} $corpus $seeds"
log=$build/fuzz.log
set +e
"$fuzzer" "${args[@]}" "$corpus" "$seeds" > "$log" 2>&1
rc=$?
set -e
found=$(find "$artifacts" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' \
        -o -name 'timeout-*' -o -name 'oom-*' \) | sort)

# The end of libFuzzer's output: the final stats, or the report of what it found.
grep -E '^(stat::|Done|INFO: fuzzing|==[0-9]+==|SUMMARY|npy_fuzz:)|#[0-9]+.*(DONE|NEW|pulse)' \
  "$log" | tail -n 25 || true
if [ "$rc" -ne 0 ] || [ -n "$found" ]; then
  echo
  echo "fuzz.sh: the fuzzer failed (exit $rc); full log: $log" >&2
  tail -n 60 "$log" >&2
  [ -z "$found" ] || while read -r f; do echo "fuzz.sh: input saved: $f" >&2; done <<< "$found"
  exit 1
fi
echo "fuzz.sh: ${seconds}s of fuzzing found nothing ($(find "$corpus" -type f | wc -l) inputs" \
     "in the work corpus $corpus)"
