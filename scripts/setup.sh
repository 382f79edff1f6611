#!/usr/bin/env bash
# Installs the Debian packages clnorm needs to build, test and benchmark, when any is missing.
# Does nothing (no apt at all) when everything is already installed. Safe to run repeatedly.
set -euo pipefail

packages=(
  pocl-opencl-icd    # an OpenCL implementation on the CPU, so every machine has a device
  ocl-icd-opencl-dev # libOpenCL.so (ICD loader) + OpenCL.pc
  opencl-headers
  clinfo
  libclblast-dev     # benchmark baseline
  libcmocka-dev      # tests
  libdnnl-dev        # benchmark baseline (oneDNN)
  clang              # the .npy fuzzer (libFuzzer) and the ThreadSanitizer run
  libclang-rt-dev    # clang's sanitizer and libFuzzer runtimes
  cmake gcc make pkg-config
  python3-numpy      # the host applications' PyTorch comparison and the Python package
  python3-torch      #   (float64 reference models; nn modules, autograd)
  python3-pyopencl   # the Python package's device-array path
  python3-pytest python3-venv python3-setuptools python3-pip
)

if ! command -v dpkg-query > /dev/null 2>&1 || ! command -v apt-get > /dev/null 2>&1; then
  echo "setup.sh: not a Debian/Ubuntu system (no dpkg-query/apt-get); install the equivalents of:" >&2
  echo "  ${packages[*]}" >&2
  exit 0
fi

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2> /dev/null || true)
  [ "$status" = "installed" ] || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup.sh: all ${#packages[@]} packages present"
  exit 0
fi

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo > /dev/null 2>&1; then
    sudo_cmd=(sudo)
  else
    echo "setup.sh: missing packages (${missing[*]}) and not root, no sudo: install them as root" >&2
    exit 1
  fi
fi

echo "setup.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
"${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -q --no-install-recommends "${missing[@]}"
