#!/usr/bin/env bash
# scripts/test.sh - build shardcal and pass every test. This is the command CI runs (.ci/run).
#
# Stages (each in its own build directory <prefix>-<stage>, Ninja generator):
#   setup    scripts/setup.sh --with-mpich (apt-get; skip with --no-setup), then
#            scripts/python-env.sh [--torch] (the venv .venv with the shardcal package, and torch
#            from PyPI when the release stage runs; always)
#   release  Release, -Werror, every backend that is available; ctest, all labels
#   asan     clang, ASan+UBSan, sim backend only; builds only what the tests need (the fuzz
#            stage shares this build and adds the fuzz targets); ctest -L 'unit|sim|cli', two
#            tests at a time
#   fuzz     libFuzzer on every reader of user input (tests/fuzz), in the asan stage's build;
#            ctest -L fuzz, two targets at a time (one per core of the 2-core CI machine), each
#            SHARDCAL_FUZZ_SECONDS (default 60, at least 60 when CI=true) over its checked-in
#            seeds; any finding fails
#   tsan     TSan, sim backend only; builds only what the tests need; ctest -L 'sim' (conformance + sweep harness on sim threads)
#   mpich    the MPI backend built against MPICH (the conformance suite and the libraries it
#            links); ctest conformance.mpi.np1/np2 on MPICH ranks, the sub-communicator tests
#            on 4
#   simulate shardbench built for SimGrid SMPI (smpicxx), only that target; ctest -L simulate
#            (8 simulated ranks: determinism, bandwidth ground truth, bad input; and that
#            build run without smpirun: an error line and exit 2)
# A failing stage does not stop the later ones (unless --fail-fast); the script ends with the
# summed ctest results of all stages, last line `N passed, M failed`, and exits non-zero when
# anything failed (a stage whose configure or build fails counts as one failure).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

usage() {
  cat <<'EOF'
Usage: bash scripts/test.sh [options]

Builds shardcal and runs every test suite: Release + -Werror (all labels), ASan+UBSan with
clang (labels unit|sim|cli), libFuzzer on every reader of user input in that same build (label
fuzz), TSan (label sim), the conformance suite on 1, 2 and 4 MPICH ranks, and the simulated
cluster (SimGrid SMPI build of shardbench, label simulate). Prints per-stage timings and a final line `N passed, M failed`; exits non-zero if anything failed.

Options:
  --no-setup          do not run scripts/setup.sh (apt-get); for developers whose machine is set up
  --only LIST         run only these stages (comma separated: release,asan,fuzz,tsan,mpich,
                      simulate)
  --skip LIST         skip these stages
  --no-mpich          same as --skip mpich (and setup does not install MPICH)
  --build-prefix P    build directories are P-release, P-asan, ... (default: build-test;
                      env SHARDCAL_BUILD_PREFIX)
  --jobs N            parallel build jobs (default: nproc; env SHARDCAL_JOBS)
  --ctest-jobs N      tests run in parallel by ctest (default: 1; asan and fuzz run 2 at a time)
  --fail-fast         stop after the first stage that fails
  --help              show this help

Environment knobs passed to the tests (see docs/DEVELOPING.md):
  SHARDCAL_PROPERTY_CASES  cases per redistribution property test: unset in the release stage
                           (the tests' own default), 1000 under ASan, 300 under TSan
  SHARDCAL_TEST_TIMEOUT    seconds a rank may wait in one collective in tests (tests' default 60)
  SHARDCAL_FUZZ_SECONDS    seconds each fuzz target runs (default 60; raised to 60 when CI=true)
EOF
}

# ---------------------------------------------------------------------------------------------
# options
DO_SETUP=1
ALL_STAGES=(release asan fuzz tsan mpich simulate)
ONLY=""
SKIP=""
BUILD_PREFIX=${SHARDCAL_BUILD_PREFIX:-build-test}
JOBS=${SHARDCAL_JOBS:-$(nproc 2>/dev/null || echo 2)}
CTEST_JOBS=1
FAIL_FAST=0
need_arg() { [[ $# -ge 2 && -n $2 ]] || { echo "test.sh: $1 needs a value (see --help)" >&2; exit 2; }; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --no-setup) DO_SETUP=0 ;;
    --only) need_arg "$@"; ONLY=$2; shift ;;
    --skip) need_arg "$@"; SKIP=$2; shift ;;
    --no-mpich) SKIP="${SKIP:+$SKIP,}mpich" ;;
    --build-prefix) need_arg "$@"; BUILD_PREFIX=$2; shift ;;
    --jobs) need_arg "$@"; JOBS=$2; shift ;;
    --ctest-jobs) need_arg "$@"; CTEST_JOBS=$2; shift ;;
    --fail-fast) FAIL_FAST=1 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "test.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
for s in ${ONLY//,/ } ${SKIP//,/ }; do
  [[ " ${ALL_STAGES[*]} " == *" $s "* ]] ||
    { echo "test.sh: unknown stage '$s' (stages: ${ALL_STAGES[*]})" >&2; exit 2; }
done
wanted() {  # is stage $1 selected?
  [[ -n $ONLY && ",$ONLY," != *",$1,"* ]] && return 1
  [[ ",$SKIP," == *",$1,"* ]] && return 1
  return 0
}

# ---------------------------------------------------------------------------------------------
# helpers
banner() { printf '\n==> %s\n' "$*"; }
fmt_secs() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }
# Run a command, tee its output to a log, return its exit status (never trips `set -e`).
run_logged() {
  local log=$1 rc=0
  shift
  "$@" 2>&1 | tee "$log" || rc=$?
  return "$rc"
}

# ---------------------------------------------------------------------------------------------
# environment shared by every stage
# OpenMPI refuses to run as root without these; tests pass --oversubscribe themselves, the MCA
# variable makes plain `mpirun -np 8` work on small machines too.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
# CUDA (preinstalled on GPU machines, never from apt): make nvcc findable when it exists.
if [[ -x /usr/local/cuda/bin/nvcc ]]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi
NCCL_MODE=AUTO
HAVE_NVCC=0
if nvcc_path=$(command -v nvcc) && "$nvcc_path" --version >/dev/null 2>&1; then
  HAVE_NVCC=1
  export CUDACXX=${CUDACXX:-$nvcc_path}
  # Require the NCCL backend (a configure error if CMake then fails to find it) only when both
  # nccl.h and libnccl are where CMake looks; otherwise AUTO builds it if CMake finds it.
  cuda_root=$(dirname "$(dirname "$(readlink -f "$CUDACXX")")")
  have_h=0 have_lib=0
  for inc in "$cuda_root/include" /usr/local/cuda/include /usr/local/include /usr/include; do
    [[ -f $inc/nccl.h ]] && have_h=1
  done
  for lib in "$cuda_root/lib" "$cuda_root/lib64" /usr/local/cuda/lib /usr/local/cuda/lib64 \
    /usr/local/lib /usr/lib/x86_64-linux-gnu; do
    compgen -G "$lib/libnccl.so*" >/dev/null && have_lib=1
  done
  [[ $have_h == 1 && $have_lib == 1 ]] && NCCL_MODE=ON
fi
# Debian's python3 (with matplotlib/numpy/jsonschema), not a pyenv python3 earlier on PATH.
PYTHON=/usr/bin/python3
# The project's venv (scripts/python-env.sh): Debian's python3 plus the shardcal package; the
# Python tests that import shardcal run with it.
VENV_PYTHON=${SHARDCAL_VENV:-$ROOT/.venv}/bin/python
COMMON_CMAKE=(-G Ninja --no-warn-unused-cli "-DPython3_EXECUTABLE=$PYTHON"
              "-DSHARDCAL_PYTHON=$VENV_PYTHON")
if command -v ccache >/dev/null; then
  COMMON_CMAKE+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
CTEST_COMMON=(--output-on-failure --no-tests=error --timeout 1500 -j "$CTEST_JOBS")
CTEST_EXTRA=()  # a stage's own ctest flags (set before its stage_test, emptied after)

# ---------------------------------------------------------------------------------------------
# per-stage bookkeeping
STAGES_RUN=()
declare -A S_RESULT S_TIME S_PASS S_FAIL S_SKIP
TOTAL_PASS=0
TOTAL_FAIL=0
TOTAL_SKIP=0
ANY_FAILED=0

record() {  # stage result passed failed skipped seconds
  STAGES_RUN+=("$1")
  S_RESULT[$1]=$2; S_PASS[$1]=$3; S_FAIL[$1]=$4; S_SKIP[$1]=$5; S_TIME[$1]=$6
  TOTAL_PASS=$((TOTAL_PASS + $3)); TOTAL_FAIL=$((TOTAL_FAIL + $4)); TOTAL_SKIP=$((TOTAL_SKIP + $5))
  if [[ $2 != ok && $2 != skipped* ]]; then
    ANY_FAILED=1
    echo "test.sh: stage '$1' FAILED: $2" >&2
  fi
}

# Parse a ctest log: sets CT_PASS CT_FAIL CT_SKIP. ctest's closing line is
# "NN% tests passed, F tests failed out of T"; skipped tests are listed as "(Skipped)" and
# counted there as passed, so they are subtracted here.
parse_ctest() {
  local log=$1 rc=$2 line total failed
  line=$(grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -1 || true)
  if [[ -n $line ]]; then
    failed=$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\1/' <<<"$line")
    total=$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\2/' <<<"$line")
  else
    failed=0 total=0
  fi
  CT_SKIP=$(grep -cE '\((Skipped|Disabled)\)$' "$log" || true)
  CT_FAIL=$failed
  CT_PASS=$((total - failed - CT_SKIP))
  ((CT_PASS < 0)) && CT_PASS=0
  # ctest failed without failing a test (no tests found, crash): count it as one failure.
  if [[ $rc != 0 && $CT_FAIL == 0 ]]; then CT_FAIL=1; fi
  return 0
}

# Executables the selected tests run, so a sanitizer build compiles only those: the default
# targets plus every argument of a selected test (as registered in the CTestTestfile.cmake files;
# ctest -N cannot name executables that are not built yet) that lies in the build directory and
# names a Ninja target.
test_targets() {  # build_dir label_regex default_targets...
  local dir=$1 labels=$2 json t
  shift 2
  local targets=("$@")
  if json=$(ctest --test-dir "$dir" -N -L "$labels" --show-only=json-v1 2>/dev/null); then
    while IFS= read -r t; do
      [[ -n $t && " ${targets[*]} " != *" $t "* ]] || continue
      ninja -C "$dir" -t query "$t" >/dev/null 2>&1 && targets+=("$t")
    done < <("$PYTHON" -c '
import json, os, re, shlex, sys
d = os.path.realpath(sys.argv[1])
names = {t["name"] for t in json.load(sys.stdin).get("tests", [])}
for root, _, files in os.walk(d):
    if "CTestTestfile.cmake" not in files:
        continue
    for line in open(os.path.join(root, "CTestTestfile.cmake")):
        m = re.match(r"\s*add_test\((\[=*\[(.*?)\]=*\]|\S+)\s+(.*)\)\s*$", line)
        if not m or (m.group(2) or m.group(1).strip("\"")) not in names:
            continue
        for a in shlex.split(m.group(3)):
            if os.path.isabs(a) and os.path.realpath(a).startswith(d + os.sep):
                print(os.path.basename(a))
' "$dir" <<<"$json" 2>/dev/null || true)
  fi
  echo "${targets[@]}"
}

# Configure one stage. stage_configure NAME DIR CMAKE_ARGS...  (sets STAGE_ERR on failure)
stage_configure() {
  local name=$1 dir=$2
  shift 2
  mkdir -p "$dir"
  banner "[$name] configure: cmake -S . -B $dir $*"
  if ! run_logged "$dir/configure.log" cmake -S . -B "$dir" "${COMMON_CMAKE[@]}" "$@"; then
    STAGE_ERR="configure failed"
    return 1
  fi
  echo "    $(grep -h 'shardcal backends:' "$dir/configure.log" | tail -1 | sed 's/^-- //')"
}

# Build one stage. stage_compile NAME DIR [TARGET...]  (no target: everything)
stage_compile() {
  local name=$1 dir=$2
  shift 2
  local tflags=()
  [[ $# -gt 0 ]] && tflags=(--target "$@")
  banner "[$name] build: cmake --build $dir -j $JOBS ${tflags[*]}"
  local t=$SECONDS
  if ! cmake --build "$dir" -j "$JOBS" "${tflags[@]}"; then
    STAGE_ERR="build failed"
    return 1
  fi
  echo "    [$name] build took $(fmt_secs $((SECONDS - t)))"
}

# ctest one stage and record it. stage_test NAME DIR START LABEL_REGEX|"" [ENV=VAL...] [-- WRAPPER...]
stage_test() {
  local name=$1 dir=$2 start=$3 labels=$4
  shift 4
  local envs=() wrapper=()
  while [[ $# -gt 0 && $1 != -- ]]; do envs+=("$1"); shift; done
  [[ $# -gt 0 ]] && { shift; wrapper=("$@"); }
  local lflags=()
  [[ -n $labels ]] && lflags=(-L "$labels")
  local log="$dir/ctest-$name.log" rc=0
  banner "[$name] test: ${envs[*]} ${wrapper[*]} ctest --test-dir $dir ${lflags[*]} ${CTEST_EXTRA[*]}"
  local t=$SECONDS
  run_logged "$log" env "${envs[@]}" "${wrapper[@]}" ctest --test-dir "$dir" "${CTEST_COMMON[@]}" \
    "${lflags[@]}" "${CTEST_EXTRA[@]}" || rc=$?
  echo "    [$name] tests took $(fmt_secs $((SECONDS - t)))"
  parse_ctest "$log" "$rc"
  local result=ok
  [[ $rc != 0 ]] && result="ctest failed (exit $rc, $CT_FAIL failed)"
  record "$name" "$result" "$CT_PASS" "$CT_FAIL" "$CT_SKIP" $((SECONDS - start))
}

stage_failed_early() {  # name start
  record "$1" "$STAGE_ERR" 0 1 0 $((SECONDS - $2))
}

check_fail_fast() {
  if [[ $FAIL_FAST == 1 && $ANY_FAILED == 1 ]]; then
    echo "test.sh: --fail-fast: stopping after the failed stage" >&2
    print_summary
    exit 1
  fi
}

# Does a sanitizer runtime work in this container? Compile and run a tiny probe.
probe_dir=""
sanitizer_probe() {  # flags env -> prints the probe's output, returns its status
  [[ -z $probe_dir ]] && probe_dir=$(mktemp -d)
  printf '%s\n' '#include <cstdlib>' '#include <thread>' \
    'int main() { volatile char* p = static_cast<char*>(std::malloc(7)); p[0] = 1;' \
    '  std::thread t([] {}); t.join(); std::free((void*)p); return 0; }' >"$probe_dir/p.cpp"
  g++ "$1" -g "$probe_dir/p.cpp" -o "$probe_dir/p" -pthread 2>&1 || return 1
  env "$2" "$probe_dir/p" 2>&1
}

# LeakSanitizer needs ptrace-like access to stop threads; some containers forbid it. Probe once;
# sets asan_opts for the ASan and fuzz stages.
asan_opts=""
probe_asan() {
  [[ -n $asan_opts ]] && return 0
  asan_opts=detect_leaks=1
  if probe_out=$(sanitizer_probe -fsanitize=address,undefined ASAN_OPTIONS=detect_leaks=1); then
    echo "    LeakSanitizer works here: ASAN_OPTIONS=detect_leaks=1"
  elif grep -q 'LeakSanitizer has encountered a fatal error' <<<"$probe_out"; then
    asan_opts=detect_leaks=0
    echo "    LeakSanitizer cannot run in this container (ptrace restricted): detect_leaks=0"
  else
    echo "    WARNING: ASan probe failed: $probe_out" >&2
  fi
}

print_summary() {
  banner "summary"
  printf '  %-9s %-44s %7s %7s %7s %8s\n' stage result passed failed skipped time
  local s
  for s in "${STAGES_RUN[@]}"; do
    printf '  %-9s %-44s %7s %7s %7s %8s\n' "$s" "${S_RESULT[$s]:0:44}" "${S_PASS[$s]}" \
      "${S_FAIL[$s]}" "${S_SKIP[$s]}" "$(fmt_secs "${S_TIME[$s]}")"
  done
  printf '  %-9s %-44s %7s %7s %7s %8s\n' total "" "$TOTAL_PASS" "$TOTAL_FAIL" "$TOTAL_SKIP" \
    "$(fmt_secs "$SECONDS")"
  [[ -n $probe_dir ]] && rm -rf "$probe_dir"
  if ((TOTAL_FAIL > 0)); then
    echo "FAILED stages:$(for s in "${STAGES_RUN[@]}"; do
      [[ ${S_RESULT[$s]} != ok && ${S_RESULT[$s]} != skipped* ]] && printf ' %s' "$s"; done)"
  fi
  local total=$((TOTAL_PASS + TOTAL_FAIL + TOTAL_SKIP)) pct=100
  ((total > 0)) && pct=$(((TOTAL_PASS + TOTAL_SKIP) * 100 / total))
  ((TOTAL_FAIL > 0 && pct == 100)) && pct=99
  echo "all stages together (ctest's closing line, summed; skipped tests: $TOTAL_SKIP):"
  echo "${pct}% tests passed, $TOTAL_FAIL tests failed out of $total"
  echo "$TOTAL_PASS passed, $TOTAL_FAIL failed"
}

# ---------------------------------------------------------------------------------------------
SECONDS=0
banner "shardcal test.sh in $ROOT (CI=${CI:-false}, jobs=$JOBS, build dirs $BUILD_PREFIX-*)"
echo "    stages: $(for s in "${ALL_STAGES[@]}"; do wanted "$s" && printf '%s ' "$s"; done)"
echo "    $(uname -sr), $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME"), $(nproc) cores"

# -- setup -------------------------------------------------------------------------------------
if [[ $DO_SETUP == 1 ]]; then
  banner "[setup] bash scripts/setup.sh"
  setup_args=()
  wanted mpich && setup_args+=(--with-mpich)
  wanted release && setup_args+=(--with-slurm)  # the Slurm e2e test (label slurm) needs it
  { wanted asan || wanted fuzz; } && setup_args+=(--with-fuzz)  # clang-14 and libFuzzer
  t0=$SECONDS
  if ! bash scripts/setup.sh "${setup_args[@]}"; then
    echo "test.sh: step 'setup' failed (scripts/setup.sh); nothing was built" >&2
    echo "0 passed, 1 failed"
    exit 1
  fi
  echo "    setup took $(fmt_secs $((SECONDS - t0)))"
else
  banner "[setup] skipped (--no-setup)"
fi
# The venv is the project's, like a build directory: made or refreshed even with --no-setup.
# The release stage runs the DTensor adapter's tests (label torch) against torch from PyPI: a
# missing torch fails the run. python-env.sh keeps the wheels in ~/.cache/shardcal/wheels
# (SHARDCAL_WHEELS) for the next run.
venv_args=()
wanted release && venv_args+=(--torch)
banner "[setup] bash scripts/python-env.sh ${venv_args[*]}"
t0=$SECONDS
if ! bash scripts/python-env.sh "${venv_args[@]}"; then
  echo "test.sh: step 'python-env' failed (scripts/python-env.sh); nothing was built" >&2
  echo "0 passed, 1 failed"
  exit 1
fi
echo "    python-env took $(fmt_secs $((SECONDS - t0)))"
echo "    $(cmake --version | head -1), $(g++ --version | head -1), ninja $(ninja --version)"
if [[ $HAVE_NVCC == 1 ]]; then
  echo "    nvcc: $("$CUDACXX" --version | tail -1); NCCL backend: $NCCL_MODE"
else
  echo "    nvcc: not found (or not working); NCCL backend not built"
fi

# -- release -----------------------------------------------------------------------------------
if wanted release; then
  t0=$SECONDS
  dir=$BUILD_PREFIX-release
  if stage_configure release "$dir" -DCMAKE_BUILD_TYPE=Release -DSHARDCAL_WERROR=ON \
    -DSHARDCAL_WITH_MPI=ON "-DSHARDCAL_WITH_NCCL=$NCCL_MODE" &&
    stage_compile release "$dir"; then
    stage_test release "$dir" "$t0" ""
  else
    stage_failed_early release "$t0"
  fi
  check_fail_fast
fi

# -- sanitizer stages --------------------------------------------------------------------------
# Debug (assertions on) at -O1; sim backend only (MPI/NCCL runtimes are not instrumented); no
# -Werror here (warnings change under sanitizers; the release stage enforces -Werror).
SAN_CMAKE=(-DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS=-O1 -DCMAKE_C_FLAGS=-O1
           -DSHARDCAL_WITH_MPI=OFF -DSHARDCAL_WITH_NCCL=OFF -DSHARDCAL_BUILD_BENCH=OFF)

# The asan and fuzz stages share one clang build (ASan+UBSan; SHARDCAL_FUZZ=ON, whenever
# libFuzzer is there, adds the fuzz targets and gives the readers they exercise libFuzzer's
# coverage): the libraries compile once, and clang with line tables compiles this build about
# twice as fast as GCC with -g did. Without a clang that has its ASan runtime (a developer's
# machine, --no-setup) the asan stage falls back to GCC and fuzz fails.
san_dir=$BUILD_PREFIX-asan
san_cxx=$(command -v clang++-14 || command -v clang++ || true)
rt_file() {  # clang prints the bare name back when it has no such file (runtime not installed)
  "$san_cxx" -print-file-name="libclang_rt.$1-$(uname -m).a" 2>/dev/null || true
}
if [[ -n $san_cxx && ! -f $(rt_file asan) ]]; then
  echo "    $san_cxx has no ASan runtime (libclang-rt-14-dev): the asan stage uses g++" >&2
  san_cxx=""
fi
fuzz_rt=""
[[ -n $san_cxx ]] && fuzz_rt=$(rt_file fuzzer)
san_env=()
if [[ -n $san_cxx ]]; then
  # Clang's runtime symbolizes reports with llvm-symbolizer (llvm-14), found here beside clang.
  symbolizer=$(dirname "$(readlink -f "$san_cxx")")/llvm-symbolizer
  [[ -x $symbolizer ]] && san_env=("ASAN_SYMBOLIZER_PATH=$symbolizer")
fi
san_configured=""
san_configure() {  # stage -> configures $san_dir once (sets STAGE_ERR on failure)
  [[ -n $san_configured ]] && return 0
  local fuzz_cmake=() cxx_cmake=()
  if [[ -n $san_cxx ]]; then
    cxx_cmake=("-DCMAKE_CXX_COMPILER=$san_cxx" "-DCMAKE_C_COMPILER=${san_cxx/clang++/clang}")
    [[ -f $fuzz_rt ]] && fuzz_cmake=(-DSHARDCAL_FUZZ=ON)
  fi
  stage_configure "$1" "$san_dir" "${SAN_CMAKE[@]}" -DSHARDCAL_SANITIZE=address,undefined \
    "${cxx_cmake[@]}" "${fuzz_cmake[@]}" || return 1
  san_configured=1
}
fuzz_ready() {  # can the fuzz stage run? (sets STAGE_ERR when not)
  if [[ -z $san_cxx ]]; then
    STAGE_ERR="no clang++ with its sanitizer runtimes (scripts/setup.sh --with-fuzz installs clang-14)"
  elif [[ ! -f $fuzz_rt ]]; then
    STAGE_ERR="$san_cxx has no libFuzzer runtime (run scripts/setup.sh --with-fuzz)"
  else
    return 0
  fi
  return 1
}

if wanted asan; then
  t0=$SECONDS
  labels='unit|sim|cli'
  probe_asan
  # Configure first (targets are read from the configured test list), then build those (the
  # fuzz targets are the fuzz stage's: a broken one must not stop these tests).
  if san_configure asan &&
    read -r -a targets <<<"$(test_targets "$san_dir" "$labels" unit_tests conformance_tests)" &&
    stage_compile asan "$san_dir" "${targets[@]}"; then
    # Two tests at a time: the longest (the calibration's synthetic sweeps, ~2.5 min) runs
    # beside the rest; these tests share no files (temp paths per process; resume is RUN_SERIAL).
    CTEST_EXTRA=(-j 2)
    stage_test asan "$san_dir" "$t0" "$labels" \
      "ASAN_OPTIONS=$asan_opts" UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      SHARDCAL_PROPERTY_CASES=1000 "${san_env[@]}"
    CTEST_EXTRA=()
  else
    stage_failed_early asan "$t0"
  fi
  check_fail_fast
fi

# Two fuzz targets run at a time, so on the 2-core CI machine each gets its
# SHARDCAL_FUZZ_SECONDS as a whole core rather than a share of one (five at once gave each about
# 2/5 of a core): three rounds, about 3 minutes at the default 60 s. Each target's summary line
# below states the wall and CPU seconds it really fuzzed.
if wanted fuzz; then
  t0=$SECONDS
  probe_asan
  if ! fuzz_ready; then
    stage_failed_early fuzz "$t0"
  elif san_configure fuzz && stage_compile fuzz "$san_dir" fuzzers; then
    CTEST_EXTRA=(-j 2)
    stage_test fuzz "$san_dir" "$t0" fuzz "ASAN_OPTIONS=$asan_opts" \
      UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 "${san_env[@]}" \
      "SHARDCAL_FUZZ_SECONDS=${SHARDCAL_FUZZ_SECONDS:-60}"
    CTEST_EXTRA=()
    grep -h "^run_fuzz.sh: fuzz_" "$san_dir/Testing/Temporary/LastTest.log" | sed "s/^/    /" || true
  else
    stage_failed_early fuzz "$t0"
  fi
  check_fail_fast
fi

if wanted tsan; then
  t0=$SECONDS
  dir=$BUILD_PREFIX-tsan
  labels='sim'
  # GCC 12's TSan cannot map its shadow memory with high ASLR entropy (vm.mmap_rnd_bits > 28 on
  # newer kernels: "unexpected memory mapping"); run without ASLR then.
  tsan_wrap=()
  if probe_out=$(sanitizer_probe -fsanitize=thread TSAN_OPTIONS=halt_on_error=1); then
    echo "    TSan works here"
  elif grep -q 'unexpected memory mapping' <<<"$probe_out" && command -v setarch >/dev/null; then
    tsan_wrap=(-- setarch "$(uname -m)" -R)
    echo "    TSan needs ASLR off on this kernel: running tests under setarch -R"
  else
    echo "    WARNING: TSan probe failed: $probe_out" >&2
  fi
  if stage_configure tsan "$dir" "${SAN_CMAKE[@]}" -DSHARDCAL_SANITIZE=thread &&
    read -r -a targets <<<"$(test_targets "$dir" "$labels" conformance_tests)" &&
    stage_compile tsan "$dir" "${targets[@]}"; then
    stage_test tsan "$dir" "$t0" "$labels" TSAN_OPTIONS=halt_on_error=1 \
      SHARDCAL_PROPERTY_CASES=300 "${tsan_wrap[@]}"
  else
    stage_failed_early tsan "$t0"
  fi
  check_fail_fast
fi

# -- MPICH -------------------------------------------------------------------------------------
# Every file that includes mpi.h is in shardcal_core or the MPI backend, so building the
# conformance suite (and the libraries it links) compiles all of them against MPICH; the suite
# then runs on 1 and 2 MPICH ranks, and the tests that need sub-communicators or 3+ ranks once
# on 4. Not the whole suite on 4: MPICH's ranks poll without yielding, and 4 of them on 2 cores
# took 129 s for what 2 do in 0.3 s (Open MPI runs the larger worlds in the release stage).
mpich_subcomm_filter='CheckSameSpec.*:PlanChecks.*:Split.*:Redistribute.NamedTransitions'
if wanted mpich; then
  t0=$SECONDS
  dir=$BUILD_PREFIX-mpich
  if [[ ! -x /usr/bin/mpicc.mpich ]]; then
    banner "[mpich] skipped: MPICH not installed (scripts/setup.sh --with-mpich installs it)"
    record mpich "skipped (no MPICH)" 0 0 0 0
  elif stage_configure mpich "$dir" -DCMAKE_BUILD_TYPE=Release -DSHARDCAL_WERROR=ON \
    -DSHARDCAL_WITH_MPI=ON -DSHARDCAL_WITH_NCCL=OFF -DSHARDCAL_BUILD_BENCH=OFF \
    -DMPI_C_COMPILER=/usr/bin/mpicc.mpich -DMPIEXEC_EXECUTABLE=/usr/bin/mpiexec.mpich &&
    stage_compile mpich "$dir" conformance_tests; then
    banner "[mpich] 4 ranks: mpiexec.mpich -n 4 conformance_tests --gtest_filter='$mpich_subcomm_filter'"
    # grep reads all of ldd's output (no -q): with pipefail, grep -q stopping at the first match
    # can kill ldd with SIGPIPE and fail this check although MPICH is linked (seen under load).
    if ! ldd "$dir/bin/conformance_tests" | grep -i mpich >/dev/null; then
      STAGE_ERR="conformance_tests is not linked against MPICH (ldd shows no libmpich)"
      stage_failed_early mpich "$t0"
    elif ! timeout 300 /usr/bin/mpiexec.mpich -n 4 env SHARDCAL_TEST_BACKEND=mpi GTEST_COLOR=no \
      "$dir/bin/conformance_tests" "--gtest_filter=$mpich_subcomm_filter" </dev/null \
      >"$dir/np4.log" 2>&1; then
      tail -n 30 "$dir/np4.log"
      STAGE_ERR="conformance on 4 MPICH ranks failed (log: $dir/np4.log)"
      stage_failed_early mpich "$t0"
    else
      grep -E '^\[  PASSED  \]' "$dir/np4.log" | sed 's/^/    /'
      CTEST_EXTRA=(-R '^conformance\.mpi\.np[12]$')
      stage_test mpich "$dir" "$t0" mpi
      CTEST_EXTRA=()
    fi
  else
    stage_failed_early mpich "$t0"
  fi
  check_fail_fast
fi

# -- simulated cluster (SimGrid SMPI) ----------------------------------------------------------
# Only shardbench is built (with smpicxx: it runs only under smpirun); the tests calibrate with
# the release stage's native shardbench when it was built, else with this one as one rank.
if wanted simulate; then
  t0=$SECONDS
  dir=$BUILD_PREFIX-simulate
  if ! command -v smpicxx >/dev/null; then
    STAGE_ERR="smpicxx not found (scripts/setup.sh installs libsimgrid-dev)"
    stage_failed_early simulate "$t0"
  # The smpi preset (CMakePresets.json) holds the SMPI build's settings; -B puts it here.
  elif stage_configure simulate "$dir" --preset smpi &&
    stage_compile simulate "$dir" shardbench; then
    native_env=() native=$BUILD_PREFIX-release/bin/shardbench
    [[ $native == /* ]] || native=$ROOT/$native
    [[ -x $native ]] && native_env=("SHARDCAL_NATIVE_SHARDBENCH=$native")
    stage_test simulate "$dir" "$t0" simulate "${native_env[@]}"
  else
    stage_failed_early simulate "$t0"
  fi
  check_fail_fast
fi

print_summary
exit $((ANY_FAILED != 0 || TOTAL_FAIL != 0))
