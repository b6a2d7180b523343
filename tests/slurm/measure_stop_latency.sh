#!/usr/bin/env bash
# tests/slurm/measure_stop_latency.sh - how long a sweep takes to stop after SIGTERM in the
# middle of one long point (docs/SLURM.md, "The bound"). Not part of ctest (a measurement).
# Usage: measure_stop_latency.sh SHARDBENCH [REPEATS] [WORK_DIR]   (Open MPI's mpirun)
# Runs 4 mpirun ranks on a one-point config of 10^7 iterations (hours), sends SIGTERM to the
# ranks (not mpirun, like `scancel --signal=TERM`) 2 s after the point started, and prints the
# seconds until the sweep reported its clean stop (or "no clean stop within 60 s").
set -euo pipefail
SB=$1 REPEATS=${2:-3} WORK=${3:-/tmp/shardcal-stop-latency}
mkdir -p "$WORK"
cat >"$WORK/one.json" <<'JSON'
{"name": "stop-latency", "meshes": ["4"], "collectives": ["all_reduce"], "sizes": [65536],
 "dtypes": ["f32"], "distributions": ["even"], "warmup": 1,
 "iterations": {"min": 10000000, "max": 10000000}, "time_budget_s": 100000,
 "adaptive": {"target_rel_ci": 0}, "check": false, "buffer_rotation": {"bytes": 0}}
JSON
for ((i = 1; i <= REPEATS; i++)); do
  rm -f "$WORK/r.jsonl" "$WORK/stamped.txt"
  # stderr lines with the time they arrived: the sweep's "stopped by signal" notice (rank 0,
  # printed once every rank agreed to stop) marks the clean stop.
  OMPI_MCA_mpi_yield_when_idle=1 mpirun --allow-run-as-root --oversubscribe -np 4 \
    "$SB" sweep --backend mpi --config "$WORK/one.json" --out "$WORK/r.jsonl" --quiet \
    </dev/null 2>&1 >/dev/null | while IFS= read -r line; do
      echo "$(date +%s.%N) $line"
    done >"$WORK/stamped.txt" &
  launcher=$!
  for ((k = 0; k < 400; k++)); do  # the context record is written just before the point starts
    [[ -s $WORK/r.jsonl ]] && break
    sleep 0.05
  done
  sleep 2  # let the point run: the signal must arrive in the middle of it
  # The ranks only (their command line starts with the binary), as scancel --signal=TERM does.
  pids=$(pgrep -f "^$SB sweep --backend mpi --config $WORK/one.json" -d ' ' || true)
  t0=$(date +%s.%N)
  # shellcheck disable=SC2086  # a list of pids
  kill -TERM $pids
  for ((k = 0; k < 1200; k++)); do
    grep -q "stopped by signal" "$WORK/stamped.txt" 2>/dev/null && break
    sleep 0.05
  done
  if t1=$(grep -m1 "stopped by signal" "$WORK/stamped.txt" 2>/dev/null | cut -d' ' -f1) && [[ -n $t1 ]]; then
    echo "run $i: clean stop $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", b - a}') s after SIGTERM"
  else
    echo "run $i: no clean stop within 60 s"
    # shellcheck disable=SC2086  # a list of pids
    kill -KILL $pids 2>/dev/null || true
  fi
  wait "$launcher" 2>/dev/null || true
done
