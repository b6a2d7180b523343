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

SRC=$1 SB=$2 WORK=$3 BUDGET_S=${4:-450}
DEADLINE=$((SECONDS + BUDGET_S))
PY=/usr/bin/python3
fail() {
  echo "slurm_e2e: FAIL: $*" >&2
  exit 1
}
step() { printf '\n==> slurm_e2e: %s\n' "$*"; }

eval "$("$SRC/scripts/slurm/local-cluster" env)"
JOBS=()
cancel_jobs() {
  if [[ ${#JOBS[@]} -gt 0 ]]; then scancel "${JOBS[@]}" 2>/dev/null || true; fi
}
trap cancel_jobs EXIT
submit() {  # sbatch args... -> prints the job id, remembered for the EXIT trap
  local id
  id=$(sbatch --parsable "$@") || fail "sbatch $* failed"
  id=${id%%;*}
  [[ -n $id ]] || fail "sbatch printed no job id"
  echo "$id"
}
"$SRC/scripts/slurm/local-cluster" status >/dev/null ||
  fail "the local Slurm cluster is not running (the slurm.cluster_start fixture failed: see its output)"
# 4 MPI ranks on a 2-core machine: OpenMPI must yield when idle, or every op waits for a time slice.
export OMPI_MCA_mpi_yield_when_idle=1
rm -rf "$WORK"
mkdir -p "$WORK"
cd "$SRC"
COMMON=(--shardbench "$SB" --out-base "$WORK" --name e2e)

# wait_job JOBID TIMEOUT_S -> "STATE EXIT"; a requeued job fails at once with Slurm's reason.
# shellcheck source=tests/slurm/wait_job.sh
source "$SRC/tests/slurm/wait_job.sh"

check_run() {  # dir config expected_contexts_min: results + profile valid, every point once
  "$PY" - "$1" "$2" "$SRC" "$SB" "${3:-1}" <<'EOF'
import json, subprocess, sys
d, cfg, src, sb, min_ctx = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
import jsonschema
def schema(name):
    with open(f"{src}/configs/schema/{name}") as f:
        return jsonschema.Draft202012Validator(json.load(f))
rs = schema("results.schema.json")
recs = [json.loads(l) for l in open(f"{d}/results.jsonl")]
for i, r in enumerate(recs, 1):
    errs = list(rs.iter_errors(r))
    if errs:
        sys.exit(f"{d}/results.jsonl record {i}: {errs[0].message}")
ctx = [r for r in recs if r["type"] == "context"]
pts = [r for r in recs if r["type"] == "point"]
want = int(subprocess.run([sb, "sweep", "--validate-only", "--backend", "sim", "--world",
                           str(ctx[0]["world"]), "--config", cfg], capture_output=True, text=True,
                          check=True).stdout.split("ok, ")[1].split()[0])
keys = [p["key"] for p in pts]
if len(keys) != want or len(set(keys)) != want:
    sys.exit(f"{d}: {len(keys)} points ({len(set(keys))} distinct), the config has {want}")
if any(p["wrong"] for p in pts):
    sys.exit(f"{d}: some points have wrong results")
if len(ctx) < min_ctx:
    sys.exit(f"{d}: {len(ctx)} context record(s), expected at least {min_ctx}")
s = ctx[0].get("slurm")
if not s or s["num_tasks"] != ctx[0]["world"] or s["tasks_per_node"] != ctx[0]["ranks_per_host"]:
    sys.exit(f"{d}: the context's slurm record {s} does not match world/ranks_per_host")
prof = json.load(open(f"{d}/profile.json"))
errs = list(schema("profile.schema.json").iter_errors(prof))
if errs:
    sys.exit(f"{d}/profile.json: {errs[0].message}")
print(f"ok: {d}: {len(pts)} points in {len(ctx)} context(s), slurm job {s['job_id']}, profile valid")
EOF
}

check_report() {  # dir log
  if [[ -f $SRC/reports/make_report.py ]]; then
    [[ -s $1/report/index.html ]] || fail "$1/report/index.html missing (reports/make_report.py exists)"
    echo "ok: report $1/report/index.html"
  else
    grep -q "report skipped: reports/make_report.py missing" "$2" ||
      fail "no report and no 'report skipped' line in $2"
    echo "ok: report skipped (reports/make_report.py missing), as stated in the log"
  fi
}

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
arr=$(submit --array=0-1 -n 4 -o "$WORK/array-%A-%a.log" scripts/slurm/calibrate-array.sbatch \
  --config tests/slurm/tiny.json "${COMMON[@]}")
JOBS+=("$arr")
merge=$(submit --dependency=afterok:"$arr" -n 1 -o "$WORK/merge-%j.log" \
  scripts/slurm/calibrate-array.sbatch --config tests/slurm/tiny.json "${COMMON[@]}" --merge "$arr")
JOBS+=("$merge")
read -r state code < <(wait_job "$merge" 90)
tail -4 "$WORK/merge-$merge.log" 2>/dev/null || true
[[ $state == COMPLETED && $code == 0 ]] ||
  fail "merge job $merge: $state exit $code; logs: $WORK/array-$arr-*.log $WORK/merge-$merge.log"
for i in 0 1; do
  [[ -s $WORK/calib-$arr/results.shard-$i-of-2.jsonl ]] || fail "shard $i of 2 missing"
done
check_run "$WORK/calib-$arr" tests/slurm/tiny.json 2 || fail "array job $arr: merged outputs invalid"
check_report "$WORK/calib-$arr" "$WORK/merge-$merge.log"
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
# --signal=B:USR1@55: the warning comes 55 s before the limit, at slurmctld's next time-limit
# check (it runs every ~30 s), i.e. 5-35 s into the ~45 s sweep.
# The job ends by ~60 s (+ KillWait 10 s) at the latest.
t1=$(submit --time=1 --signal=B:USR1@55 -n 4 -o "$WORK/calib-%j.log" \
  scripts/slurm/calibrate.sbatch --config tests/slurm/long.json "${COMMON[@]}")
JOBS+=("$t1")
read -r state code < <(wait_job "$t1" 100)
log1=$WORK/calib-$t1.log
tail -6 "$log1" || true
[[ $state == FAILED && $code == 3 ]] ||
  fail "time-limit job $t1: $state exit $code, expected FAILED exit 3 (stopped cleanly); log $log1"
grep -q "stop signal received" "$log1" || fail "$log1: the USR1 warning was not received"
grep -q "sweep: stopped by signal" "$log1" || fail "$log1: the sweep did not report a clean stop"
partial=$("$PY" -c 'import json,sys; r=[json.loads(l) for l in open(sys.argv[1])]; print(sum(x["type"]=="point" for x in r))' \
  "$WORK/calib-$t1/results.jsonl") || fail "the partial results file is not valid JSON Lines"
[[ -e $WORK/calib-$t1/profile.json ]] && fail "a stopped job must not calibrate"
echo "ok: job $t1 stopped cleanly after $partial points (exit 3)"

t2=$(submit -n 4 -o "$WORK/calib-%j.log" scripts/slurm/calibrate.sbatch \
  --config tests/slurm/long.json "${COMMON[@]}" --resume "$WORK/calib-$t1")
JOBS+=("$t2")
read -r state code < <(wait_job "$t2" 120)
tail -4 "$WORK/calib-$t2.log" || true
[[ $state == COMPLETED && $code == 0 ]] || fail "resume job $t2: $state exit $code; log $WORK/calib-$t2.log"
grep -q "resuming $WORK/calib-$t1/results.jsonl" "$WORK/calib-$t2.log" || fail "job $t2 did not resume"
check_run "$WORK/calib-$t1" tests/slurm/long.json || fail "resumed run: outputs invalid"
check_report "$WORK/calib-$t1" "$WORK/calib-$t2.log"
step "all Slurm end-to-end checks passed"
