#!/usr/bin/env bash
# scripts/setup.sh - install everything shardcal needs on a fresh Debian 12 machine.
#
# Idempotent and non-interactive: packages that are already installed are left alone, and when
# every package is present apt-get is not called at all. CUDA and NCCL are NOT installed here:
# they come preinstalled on GPU machines (/usr/local/cuda); the NCCL backend is built only when
# they are found. Called by scripts/test.sh and scripts/run.sh; safe to run by hand.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: bash scripts/setup.sh [--with-mpich] [--with-slurm] [--with-fuzz] [--dev-tools] [--force] [--help]

Installs the Debian packages needed to build, test and run shardcal (apt-get, as root or via
sudo). Runs `apt-get update` first whenever something has to be installed.

  --with-mpich  also install libmpich-dev (MPICH, for the `mpich` stage of scripts/test.sh:
                the conformance suite built against MPICH). OpenMPI stays the default `mpicc`/`mpirun`: Debian gives
                OpenMPI alternative priority 50 and MPICH 40.
  --with-slurm  also install slurm-wlm and munge, for scripts/slurm/local-cluster and the
                Slurm end-to-end test (ctest label slurm; scripts/test.sh passes this flag).
                Daemons are not configured system-wide: local-cluster runs its own.
  --with-fuzz   also install clang-14, its runtime libraries (libFuzzer, ASan/UBSan) and
                llvm-symbolizer, for the `asan` and `fuzz` stages of scripts/test.sh (one clang
                build; tests/fuzz)
  --dev-tools   also install clang-format and clang-tidy (developer tools, not needed by CI)
  --force       run apt-get update + install even when every package is already installed
  --help        show this help
EOF
}

WITH_MPICH=0
WITH_SLURM=0
WITH_FUZZ=0
DEV_TOOLS=0
FORCE=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --with-mpich) WITH_MPICH=1 ;;
    --with-slurm) WITH_SLURM=1 ;;
    --with-fuzz) WITH_FUZZ=1 ;;
    --dev-tools) DEV_TOOLS=1 ;;
    --force) FORCE=1 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "setup.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done

# Build tools, MPI, header-only/third-party libraries, test + benchmark frameworks, and the
# Python packages the report generator uses (for /usr/bin/python3, not a pyenv python).
PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libopenmpi-dev openmpi-bin
  nlohmann-json3-dev libcli11-dev libeigen3-dev libssl-dev
  zlib1g-dev  # shardbench import of gzipped torch.profiler traces (formats/src/import_trace.cpp)
  libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-matplotlib python3-numpy python3-jsonschema
  python3-scipy  # gate tests: reference Mann-Whitney U (tests/gate/scipy_reference.py)
  # scripts/python-env.sh: the venv (.venv) with the shardcal package, installed offline with
  # Debian's setuptools (--no-build-isolation), which needs wheel for an editable install
  python3-venv python3-setuptools python3-wheel
  # ... and builds its compiled core, shardcal._core (calibrate/python/setup.py; nlohmann-json3-dev above)
  python3-dev pybind11-dev
)
# The emulated two-host cluster (scripts/emulate/two-hosts, test label `emulate`): ip, tc
# (iproute2) and unshare (util-linux, essential in Debian).
PACKAGES+=(iproute2 util-linux procps)  # procps: pgrep/pkill in scripts/slurm
# The simulated cluster (SimGrid SMPI: smpicxx, smpirun; test stage `simulate`, docs/SIMULATION.md).
PACKAGES+=(libsimgrid-dev)
[[ $WITH_MPICH == 1 ]] && PACKAGES+=(libmpich-dev mpich)
[[ $WITH_SLURM == 1 ]] && PACKAGES+=(slurm-wlm munge)  # slurm: scripts/slurm/, docs/SLURM.md
# libclang_rt.{asan,fuzzer}*.a are in libclang-rt-14-dev, which is only recommended (by
# libclang-common-14-dev, a dependency of clang-14), so it is named here. Clang's sanitizer
# runtime turns addresses into function:file:line with llvm-symbolizer (llvm-14), which
# clang-14 does not pull in; without it a report shows bare addresses.
[[ $WITH_FUZZ == 1 ]] && PACKAGES+=(clang-14 libclang-rt-14-dev llvm-14)
[[ $DEV_TOOLS == 1 ]] && PACKAGES+=(clang-format clang-tidy)

if [[ ! -r /etc/debian_version ]]; then
  echo "setup.sh: this script supports Debian 12 (apt-get); /etc/debian_version not found." >&2
  echo "setup.sh: install the equivalents of: ${PACKAGES[*]}" >&2
  exit 1
fi

SUDO=()
if [[ $(id -u) != 0 ]]; then
  if command -v sudo >/dev/null; then
    SUDO=(sudo)
  else
    echo "setup.sh: need root (or sudo) to install packages with apt-get" >&2
    exit 1
  fi
fi

missing=()
for p in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ $status == "install ok installed" ]] || missing+=("$p")
done

if [[ ${#missing[@]} -eq 0 && $FORCE == 0 ]]; then
  echo "setup.sh: all ${#PACKAGES[@]} packages already installed (--force to run apt-get anyway)"
else
  [[ ${#missing[@]} -gt 0 ]] && echo "setup.sh: installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # Lock timeout: on a fresh machine unattended-upgrades may still hold the dpkg lock.
  APT_OPTS=(-o DPkg::Lock::Timeout=600 -o Dpkg::Options::=--force-confdef
            -o Dpkg::Options::=--force-confold)
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get "${APT_OPTS[@]}" update -q
  # --no-install-recommends: libopenmpi-dev would otherwise pull gfortran (coarrays) and
  # python3-matplotlib python3-tk; nothing we use needs them.
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get "${APT_OPTS[@]}" install -y -q \
    --no-install-recommends "${PACKAGES[@]}"
fi

# Installing MPICH must not change which MPI `mpicc`/`mpirun` mean (the main build and the MPI
# tests use OpenMPI). In auto mode Debian keeps OpenMPI (priority 50 > 40); check anyway.
if [[ -e /usr/bin/mpicc.openmpi ]] && command -v update-alternatives >/dev/null; then
  mpi_alt=$(update-alternatives --query mpi 2>/dev/null | sed -n 's/^Value: //p')
  if [[ -n $mpi_alt && $mpi_alt != /usr/bin/mpicc.openmpi ]]; then
    echo "setup.sh: WARNING: the 'mpi' alternative (mpicc) is $mpi_alt, not OpenMPI." >&2
    echo "setup.sh: fix with: update-alternatives --auto mpi && update-alternatives --auto mpirun" >&2
  fi
fi

# Report what the optional GPU backend will find (informational only).
nvcc_bin=/usr/local/cuda/bin/nvcc
[[ -x $nvcc_bin ]] || nvcc_bin=$(command -v nvcc || true)
if [[ -n $nvcc_bin ]] && nvcc_version=$("$nvcc_bin" --version 2>/dev/null); then
  echo "setup.sh: CUDA found: $(tail -1 <<<"$nvcc_version")"
else
  echo "setup.sh: CUDA not found (nvcc): the NCCL backend will not be built"
fi
echo "setup.sh: done"
