#!/usr/bin/env bash
# scripts/run.sh - the main job: set up, build (Release), and run shardcal.
#
# Today: setup -> Release build -> `shardbench info` -> verified redistributions on the rank
# simulator and on local MPI ranks (when the MPI backend is built), with their plans and --dump
# output -> a quick benchmark sweep on 4 local ranks (configs/local.json).
# -> a calibrated cost-model profile from that sweep (out/profile.json)
# -> a report with plots of the sweep and the fit (out/report/index.html, reports/make_report.py).
set -Eeuo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

usage() {
  cat <<'EOF'
Usage: bash scripts/run.sh [--out DIR] [--no-setup] [--build-dir DIR] [--jobs N] [--help]

The main job: installs dependencies (scripts/setup.sh, apt-get), builds Release
(cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build -j), then runs
shardbench: `info`, a set of redistributions on the rank simulator and on local MPI ranks
(when the MPI backend is built), each verified element by element against the reference, and
a quick benchmark sweep (configs/local.json) on 4 local ranks, and calibrates a cost-model
profile from that sweep (`shardbench calibrate`, docs/CALIBRATION.md), and ends with a report
(plots + summary) of both (reports/make_report.py, docs/REPORTS.md).

Options:
  --out DIR        output directory (default: out/); see "Outputs" below
  --no-setup       skip scripts/setup.sh (machine already set up)
  --build-dir DIR  CMake build directory (default: build; the CLI is DIR/bin/shardbench)
  --jobs N         parallel build jobs (default: nproc)
  --help           show this help

Outputs (under --out):
  info.txt                     backends compiled in, library versions
  demo/<name>.txt              verification result ("OK: ... 0 wrong element(s)") and the plan
  demo/<name>.jsonl            --dump: one JSON object per rank per line:
                               {"rank":r,"coord":[..],"local_shape":[..],"offset":[..],"values":[..]}
  demo/<name>.mpi.txt          the same transition on local MPI ranks (when MPI is built)
  sweep/local.jsonl            sweep results (JSON Lines, docs/RESULTS_FORMAT.md) of
                               configs/local.json on 4 local MPI ranks (simulator without MPI)
  profile.json                 calibrated cost model (shardcal.profile v1, docs/PROFILE_FORMAT.md)
  calibration.txt              its quality table: holdout MAPE of the model predict uses and
                               the backbone's MAPE, max error, k-fold holdout per model,
                               uneven effective-size comparison, transition composition error
  report/index.html            the report: figures (report/*.png) with captions, fit table;
                               report/summary.md has the key numbers (reports/make_report.py)
EOF
}

OUT=out
DO_SETUP=1
BUILD_DIR=build
JOBS=$(nproc 2>/dev/null || echo 2)
need_arg() { [[ $# -ge 2 && -n $2 ]] || { echo "run.sh: $1 needs a value (see --help)" >&2; exit 2; }; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) need_arg "$@"; OUT=$2; shift ;;
    --no-setup) DO_SETUP=0 ;;
    --build-dir) need_arg "$@"; BUILD_DIR=$2; shift ;;
    --jobs) need_arg "$@"; JOBS=$2; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "run.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done

# --- step bookkeeping: banners, timing, and a message naming the step that failed -------------
STEP="start"
NSTEPS=8
SECONDS=0
step() {  # step N "title"
  STEP="[$1/$NSTEPS] $2"
  printf '\n==> %s\n' "$STEP"
}
# shellcheck disable=SC2154  # rc is assigned inside the trap string
trap 'rc=$?; echo "run.sh: FAILED in step $STEP (exit $rc, after ${SECONDS}s)" >&2; exit $rc' ERR

# --- environment -------------------------------------------------------------------------------
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
if [[ -x /usr/local/cuda/bin/nvcc ]]; then export PATH=/usr/local/cuda/bin:$PATH; fi
if nvcc_path=$(command -v nvcc) && "$nvcc_path" --version >/dev/null 2>&1; then
  export CUDACXX=${CUDACXX:-$nvcc_path}
fi
# The project's venv (scripts/python-env.sh): Debian's python3 (matplotlib, numpy, jsonschema) plus
# the shardcal package the report reads profiles with.
PYTHON=${SHARDCAL_VENV:-$ROOT/.venv}/bin/python

# ------------------------------------------------------------------------------------------------
step 1 "setup"
if [[ $DO_SETUP == 1 ]]; then
  bash scripts/setup.sh
else
  echo "skipped (--no-setup)"
fi
bash scripts/python-env.sh  # offline and seconds when the venv exists

step 2 "build (Release) in $BUILD_DIR"
gen=(-G Ninja)  # an existing build dir keeps the generator it was made with
[[ -f $BUILD_DIR/CMakeCache.txt ]] && gen=()
cmake -S . -B "$BUILD_DIR" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release --no-warn-unused-cli \
  -DPython3_EXECUTABLE=/usr/bin/python3 "-DSHARDCAL_PYTHON=$PYTHON"
cmake --build "$BUILD_DIR" -j "$JOBS"
SB="$BUILD_DIR/bin/shardbench"
[[ -x $SB ]] || { echo "run.sh: $SB was not built" >&2; false; }

mkdir -p "$OUT/demo"

step 3 "shardbench info"
"$SB" info | tee "$OUT/info.txt"

# name | mesh | shape | dtype | from | to
TRANSITIONS=(
  "uneven_to_replicated|2x4|10x7|f32|S(0)[3,7],S(1)|R,S(0)"
  "partial_to_shard|8|10x7|bf16|P(sum)|S(1)"
  "nested_to_replicated|2x4|10x7|i64|S(0),S(0)|R,S(1)"
  "rebalance_uneven|4|9x4|f32|S(0)[0,6,3,0]|S(0)"
  "three_dim_mesh|2x2x2|6x5x4|u8|S(2),P(max),S(0)[1,5]|R,S(0),P(min)"
)

step 4 "redistributions on the rank simulator (verified; plans and dumps in $OUT/demo)"
for t in "${TRANSITIONS[@]}"; do
  IFS='|' read -r name mesh shape dtype from to <<<"$t"
  world=$((${mesh//x/*}))
  args=(redistribute --mesh "$mesh" --shape "$shape" --dtype "$dtype" --from "$from" --to "$to")
  echo "--- $name: $SB ${args[*]} --backend sim --world $world"
  "$SB" "${args[@]}" --backend sim --world "$world" | tee "$OUT/demo/$name.txt"
  "$SB" "${args[@]}" --backend sim --world "$world" --dump >"$OUT/demo/$name.jsonl"
  echo "    dump: $OUT/demo/$name.jsonl ($(wc -l <"$OUT/demo/$name.jsonl") ranks)"
done

step 5 "the same redistributions on local MPI ranks (mpirun)"
HAVE_MPI=0
grep -i 'backends' "$OUT/info.txt" | head -1 | grep -qw mpi && HAVE_MPI=1
if [[ $HAVE_MPI == 1 ]]; then
  for t in "${TRANSITIONS[@]}"; do
    IFS='|' read -r name mesh shape dtype from to <<<"$t"
    world=$((${mesh//x/*}))
    echo "--- $name: mpirun -np $world $SB redistribute --backend mpi ..."
    mpirun --allow-run-as-root --oversubscribe -np "$world" "$SB" redistribute --backend mpi \
      --timeout 120 --mesh "$mesh" --shape "$shape" --dtype "$dtype" --from "$from" --to "$to" |
      tee "$OUT/demo/$name.mpi.txt"
  done
else
  echo "skipped: this build has no MPI backend (see $OUT/info.txt)"
fi

step 6 "sweep on local ranks (configs/local.json) -> $OUT/sweep/local.jsonl"
# Timings from a shared or oversubscribed machine only show that the pipeline works; calibrate on
# the real cluster (scripts/slurm/calibrate.sbatch, docs/SLURM.md).
mkdir -p "$OUT/sweep"
if [[ $HAVE_MPI == 1 ]]; then
  echo "mpirun -np 4 $SB sweep --backend mpi --config configs/local.json --out $OUT/sweep/local.jsonl"
  mpirun --allow-run-as-root --oversubscribe -np 4 "$SB" sweep --backend mpi \
    --config configs/local.json --out "$OUT/sweep/local.jsonl" </dev/null
else
  echo "$SB sweep --backend sim --world 4 --config configs/local.json --out $OUT/sweep/local.jsonl"
  "$SB" sweep --backend sim --world 4 --config configs/local.json --out "$OUT/sweep/local.jsonl"
fi
echo "    results: $OUT/sweep/local.jsonl ($(wc -l <"$OUT/sweep/local.jsonl") lines)"

step 7 "calibrate a profile from the sweep -> $OUT/profile.json"
# Fits the cost model (docs/CALIBRATION.md) to the sweep: per collective and link
# class, piecewise in size, with training, holdout and leave-one-group-size-out errors; the
# quality table is printed and kept in $OUT/calibration.txt.
echo "$SB calibrate --results $OUT/sweep/local.jsonl --out $OUT/profile.json --name local"
"$SB" calibrate --results "$OUT/sweep/local.jsonl" --out "$OUT/profile.json" --name local |
  tee "$OUT/calibration.txt"

step 8 "report with plots -> $OUT/report/index.html"
# reports/make_report.py (docs/REPORTS.md): bus bandwidth vs size with the fitted model, residuals,
# even vs uneven shards, transition heatmap; written to a temp dir and renamed into place.
if [[ -f reports/make_report.py ]]; then
  echo "$PYTHON reports/make_report.py --out $OUT/report $OUT/sweep/local.jsonl --profile $OUT/profile.json"
  "$PYTHON" reports/make_report.py --out "$OUT/report" "$OUT/sweep/local.jsonl" --profile "$OUT/profile.json"
  echo "    open $OUT/report/index.html (key numbers: $OUT/report/summary.md)"
else
  echo "report skipped: reports/make_report.py missing"
fi

printf '\n==> done in %dm%02ds; outputs in %s/\n' $((SECONDS / 60)) $((SECONDS % 60)) "$OUT"
