#!/usr/bin/env bash
# tests/slurm/slurm_e2e.sh - the Slurm end-to-end test (ctest label "slurm"). Runs on the
# single-node cluster of scripts/slurm/local-cluster, which the ctest fixture starts
# (slurm.cluster_start) and stops (slurm.cluster_stop) around it:
#   1. sbatch --wait calibrate.sbatch, 4 tasks, MPI backend, tests/slurm/tiny.json: results (schema,
#      every point, all correct), profile (schema), report (or the "report skipped" line);
#   2. calibrate-array.sbatch with a 2-task array + the afterok merge job: every point once; a
#      resubmitted index with --resume but without --shards is refused (exit 2);
#   3. a 1-minute job (tests/slurm/long.json, ~1 s per point) whose USR1 warning stops the sweep
#      cleanly (exit 3, a valid partial file), completed by a second job with --resume.
# Every job it submits is cancelled when it exits (EXIT trap); if ctest kills it (SIGKILL at the
# TIMEOUT skips the trap), the cleanup fixture's `local-cluster stop` cancels them. The waits are
# bounded by BUDGET_S (seconds, from tests/slurm/CMakeLists.txt, below ctest's TIMEOUT), so the
# test fails on its own, with the job's state, before ctest has to kill it.
# Usage: slurm_e2e.sh SOURCE_DIR SHARDBENCH WORK_DIR [BUDGET_S]
set -euo pipefail

NAME=slurm_e2e SRC=$1 SB=$2 WORK=$3 BUDGET_S=${4:-450}
# shellcheck source=tests/slurm/e2e_lib.sh
source "$SRC/tests/slurm/e2e_lib.sh"

eval "$("$SRC/scripts/slurm/local-cluster" env)"
JOBS=()
cancel_jobs() {
  if [[ ${#JOBS[@]} -gt 0 ]]; then scancel "${JOBS[@]}" 2>/dev/null || true; fi
}
trap cancel_jobs EXIT
"$SRC/scripts/slurm/local-cluster" status >/dev/null ||
  fail "the local Slurm cluster is not running (the slurm.cluster_start fixture failed: see its output)"
# 4 MPI ranks on a 2-core machine: OpenMPI must yield when idle, or every op waits for a time slice.
export OMPI_MCA_mpi_yield_when_idle=1
rm -rf "$WORK"
mkdir -p "$WORK"
cd "$SRC"
COMMON=(--shardbench "$SB" --out-base "$WORK" --name e2e)


# ---------------------------------------------------------------------------------------------
step "1. calibrate.sbatch: 4 tasks, MPI, tests/slurm/tiny.json"
jid=$(submit -n 4 -o "$WORK/calib-%j.log" scripts/slurm/calibrate.sbatch \
  --config tests/slurm/tiny.json "${COMMON[@]}")
JOBS+=("$jid")
read -r state code < <(wait_job "$jid" 90)
tail -5 "$WORK/calib-$jid.log" 2>/dev/null || true
[[ $state == COMPLETED && $code == 0 ]] || fail "calibrate job $jid: $state exit $code; log: $WORK/calib-$jid.log"
check_run "$WORK/calib-$jid" tests/slurm/tiny.json || fail "calibrate job $jid: outputs invalid"
check_report "$WORK/calib-$jid" "$WORK/calib-$jid.log"

# ---------------------------------------------------------------------------------------------
step "2. calibrate-array.sbatch: --array=0-1 (2 shards) + afterok merge job"
array_and_merge check_run 90 -n 4
arr=$ARR
# A resubmitted index without --shards counts as an array of 1: refused, not swept as shard 0 of 1.
bad=$(submit --array=1 -n 4 -o "$WORK/resub-%A-%a.log" scripts/slurm/calibrate-array.sbatch \
  --config tests/slurm/tiny.json "${COMMON[@]}" --resume "$WORK/calib-$arr")
JOBS+=("$bad")
read -r state code < <(wait_job "$bad" 30)
[[ $state == FAILED && $code == 2 ]] || fail "resubmitted index without --shards: $state exit $code, expected exit 2"
grep -q "holds shards of another count than 1" "$WORK"/resub-"$bad"-1.log ||
  fail "resubmitted index without --shards: no 'holds shards of another count' line in $WORK/resub-$bad-1.log"
[[ ! -e $WORK/calib-$arr/results.shard-0-of-1.jsonl ]] || fail "a shard-0-of-1 file was written"
echo "ok: --array=1 --resume without --shards refused (exit 2)"

# ---------------------------------------------------------------------------------------------
step "3. a 1-minute job stopped by its USR1 warning, completed by a second job with --resume"
time_limit_resume check_run -n 4
step "all Slurm end-to-end checks passed"
