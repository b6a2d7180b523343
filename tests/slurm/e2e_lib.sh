# shellcheck shell=bash
# tests/slurm/e2e_lib.sh - sourced by the Slurm end-to-end tests (slurm_e2e.sh, slurm2_e2e.sh,
# slurm2_lost_node.sh): what they share. Before sourcing set NAME (the message prefix), SRC,
# SB (shardbench), WORK and BUDGET_S; it sets DEADLINE, PY, fail, step, submit, check_report,
# check_run, count_points, wait_job (tests/slurm/wait_job.sh), array_and_merge and
# time_limit_resume. For the two-node tests, e2e2_setup adds the cluster's names, `leftovers`,
# check_results and the EXIT trap that stops the cluster.

DEADLINE=$((SECONDS + BUDGET_S))
PY=/usr/bin/python3
fail() {
  echo "$NAME: FAIL: $*" >&2
  exit 1
}
step() { printf '\n==> %s: %s\n' "$NAME" "$*"; }

submit() {  # sbatch args... -> prints the job id
  local id
  id=$(sbatch --parsable "$@") || fail "sbatch $* failed"
  id=${id%%;*}
  [[ -n $id ]] || fail "sbatch printed no job id"
  echo "$id"
}

# wait_job JOBID TIMEOUT_S -> "STATE EXIT"; a requeued job fails at once with Slurm's reason.
# shellcheck source=tests/slurm/wait_job.sh
source "$SRC/tests/slurm/wait_job.sh"

check_report() {  # dir log
  if [[ -f $SRC/reports/make_report.py ]]; then
    [[ -s $1/report/index.html ]] || fail "$1/report/index.html missing (reports/make_report.py exists); log $2"
    echo "ok: report $1/report/index.html"
  else
    grep -q "report skipped: reports/make_report.py missing" "$2" ||
      fail "no report and no 'report skipped' line in $2"
    echo "ok: report skipped (reports/make_report.py missing), as stated in the log"
  fi
}

# check_run DIR CONFIG [MIN_CONTEXTS]: the run is complete and valid (tests/slurm/check_run.py).
check_run() { "$PY" "$SRC/tests/slurm/check_run.py" "$1" "$2" "$SRC" "$SB" "${3:-1}"; }

# Points in a results file (it must parse as JSON Lines: a stopped or killed run leaves complete
# records only).
count_points() {  # results.jsonl
  "$PY" -c 'import json,sys; r=[json.loads(l) for l in open(sys.argv[1])]; print(sum(x["type"]=="point" for x in r))' "$1"
}

# calibrate-array.sbatch --array=0-1 on tests/slurm/tiny.json + the afterok merge job: both
# shards written, CHECK DIR CONFIG 2 passes on the merged run, the report. Sets ARR (the array
# job id); the jobs go to JOBS.
array_and_merge() {  # check_function merge_wait_s sbatch_shape_args...
  local check=$1 limit=$2 merge state code i
  shift 2
  ARR=$(submit --array=0-1 "$@" -o "$WORK/array-%A-%a.log" scripts/slurm/calibrate-array.sbatch \
    --config tests/slurm/tiny.json "${COMMON[@]}")
  JOBS+=("$ARR")
  merge=$(submit --dependency=afterok:"$ARR" -n 1 -o "$WORK/merge-%j.log" \
    scripts/slurm/calibrate-array.sbatch --config tests/slurm/tiny.json "${COMMON[@]}" --merge "$ARR")
  JOBS+=("$merge")
  read -r state code < <(wait_job "$merge" "$limit")
  tail -4 "$WORK/merge-$merge.log" 2>/dev/null || true
  [[ $state == COMPLETED && $code == 0 ]] ||
    fail "merge job $merge: $state exit $code; logs: $WORK/array-$ARR-*.log $WORK/merge-$merge.log"
  for i in 0 1; do
    [[ -s $WORK/calib-$ARR/results.shard-$i-of-2.jsonl ]] || fail "shard $i of 2 missing"
  done
  "$check" "$WORK/calib-$ARR" tests/slurm/tiny.json 2 || fail "array job $ARR: merged outputs invalid"
  check_report "$WORK/calib-$ARR" "$WORK/merge-$merge.log"
}

# A 1-minute job (tests/slurm/long.json, ~1 s per point) stopped by its USR1 warning: exit 3, a
# valid partial file, no profile; then a second job with --resume completes it and CHECK DIR
# CONFIG passes. --signal=B:USR1@55: the warning comes at slurmctld's next time-limit check (every
# ~30 s), 0-35 s into the ~45 s sweep; the job ends by ~60 s (+ KillWait 10 s) at the latest. A
# warning at the job's start stops it before the sweep runs: then the job is submitted once more.
# COMMON (array) holds the script options shared by every job of the test.
time_limit_resume() {  # check_function sbatch_shape_args...
  local check=$1 t1 t2 state code log1 partial try
  shift
  for try in 1 2; do
    t1=$(submit --time=1 --signal=B:USR1@55 "$@" -o "$WORK/calib-%j.log" \
      scripts/slurm/calibrate.sbatch --config tests/slurm/long.json "${COMMON[@]}")
    JOBS+=("$t1")
    read -r state code < <(wait_job "$t1" 100)
    log1=$WORK/calib-$t1.log
    tail -4 "$log1" || true
    [[ $state == FAILED && $code == 3 ]] ||
      fail "time-limit job $t1: $state exit $code, expected FAILED exit 3 (stopped cleanly); log $log1"
    grep -q "stop signal received" "$log1" || fail "$log1: the USR1 warning was not received"
    # slurmctld sometimes sends the warning as the job starts (seen: 80 ms in), before the ranks
    # run: the step is stopped while it starts, nothing is written, exit 3 (what a user would get,
    # with the resume hint), but the clean stop of a running sweep is not exercised: once more.
    if [[ $try == 1 && ! -e $WORK/calib-$t1/results.jsonl ]] && ! grep -q "sweep: stopped by signal" "$log1"; then
      echo "note: job $t1 was warned before its sweep started (exit 3, nothing written); submitting it again"
      continue
    fi
    break
  done
  grep -q "sweep: stopped by signal" "$log1" || fail "$log1: the sweep did not report a clean stop"
  partial=$(count_points "$WORK/calib-$t1/results.jsonl") || fail "the partial results file is not valid JSON Lines"
  [[ -e $WORK/calib-$t1/profile.json ]] && fail "a stopped job must not calibrate"
  echo "ok: job $t1 stopped cleanly after $partial points (exit 3)"
  t2=$(submit "$@" -o "$WORK/calib-%j.log" scripts/slurm/calibrate.sbatch \
    --config tests/slurm/long.json "${COMMON[@]}" --resume "$WORK/calib-$t1")
  JOBS+=("$t2")
  read -r state code < <(wait_job "$t2" 120)
  tail -4 "$WORK/calib-$t2.log" || true
  [[ $state == COMPLETED && $code == 0 ]] || fail "resume job $t2: $state exit $code; log $WORK/calib-$t2.log"
  grep -q "resuming $WORK/calib-$t1/results.jsonl" "$WORK/calib-$t2.log" || fail "job $t2 did not resume"
  "$check" "$WORK/calib-$t1" tests/slurm/long.json 1 || fail "resumed run: outputs invalid"
  check_report "$WORK/calib-$t1" "$WORK/calib-$t2.log"
}

# --- two nodes (local-cluster --nodes 2) -------------------------------------------------------
# e2e2_setup: root check (else exit 77: ctest's skip), the names local-cluster derives from its
# directory (documented in its --help), the EXIT trap that stops the cluster and checks that
# nothing is left, and a stop of what an earlier run killed by ctest's TIMEOUT left behind.
e2e2_setup() {
  if [[ $(id -u) != 0 ]]; then
    echo "$NAME: SKIP: needs root (network namespaces, veth, tc, slurmd starting jobs as their user); run ctest as root"
    exit 77
  fi
  LC=$SRC/scripts/slurm/local-cluster
  export SHARDCAL_SLURM_DIR=${SHARDCAL_SLURM_DIR:-$WORK.cluster}
  CDIR=$SHARDCAL_SLURM_DIR
  HASH=$(printf '%s' "$CDIR" | md5sum | cut -c1-12)
  EMU_NAME=sl${HASH:0:6}
  H0=$EMU_NAME-h0 H1=$EMU_NAME-h1
  trap e2e2_cleanup EXIT
  [[ -z $(leftovers) ]] || "$LC" stop >/dev/null || true
  [[ -z $(leftovers) ]] || fail "a cluster of $CDIR is left from an earlier run and stop did not remove it: $(leftovers)"
}

# What of the cluster is left, seen from outside local-cluster: daemons started with its
# configuration or munge socket, its namespaces, veth ends and directories.
leftovers() {
  {
    pgrep -a -f "(slurmctld|slurmd) -f $CDIR/etc/slurm.conf" || true
    pgrep -a -f "munged --force --socket=/run/shardcal-slurm/$HASH/" || true
    ip netns list 2>/dev/null | grep -E "^$EMU_NAME-" || true
    ip -o link show 2>/dev/null | grep -E ": $EMU_NAME-" || true
    [[ -e $CDIR ]] && echo "directory $CDIR"
    [[ -e /run/shardcal-slurm/$HASH ]] && echo "directory /run/shardcal-slurm/$HASH"
    [[ -e /run/shardcal-emulate/$EMU_NAME ]] && echo "directory /run/shardcal-emulate/$EMU_NAME"
    true
  } | paste -sd';' -
}

e2e2_cleanup() {
  local rc=$? left
  trap - EXIT
  if [[ $rc != 0 && -d $CDIR/log ]]; then
    echo "$NAME: the cluster's logs (last lines), before stop removes them:" >&2
    tail -n 15 "$CDIR"/log/*.log >&2 2>/dev/null || true
  fi
  "$LC" stop >/dev/null 2>&1 || "$LC" stop >&2 || rc=1
  left=$(leftovers)
  if [[ -n $left ]]; then
    echo "$NAME: FAIL: left behind after stop: $left" >&2
    rc=1
  fi
  exit "$rc"
}

# Starts the two-node cluster, points the client commands at it and checks that sinfo, from
# outside the namespaces, shows both nodes idle.
e2e2_start() {  # rate
  "$LC" --nodes 2 --rate "$1" start || fail "local-cluster --nodes 2 start failed (above)"
  eval "$("$LC" env)"
  [[ $(command -v sbatch) == "$CDIR/bin/sbatch" ]] || fail "env did not put the client wrappers first in PATH"
  local nodes
  nodes=$(sinfo -h -N -o '%N %T' | sort | paste -sd, -)
  [[ $nodes == "$H0 idle,$H1 idle" ]] || fail "sinfo: '$nodes', expected '$H0 idle,$H1 idle'"
  echo "ok: sinfo from outside the namespaces: $nodes"
}

# check_results DIR CONFIG MIN_CONTEXTS: the run is complete and valid, and names both nodes
# (tests/slurm/check_run.py).
check_results() { "$PY" "$SRC/tests/slurm/check_run.py" "$1" "$2" "$SRC" "$SB" "$3" "$H0" "$H1"; }

# The end of every two-node test: stop (twice), nothing left (checked here, independently of
# local-cluster check-stopped, which must agree), status no longer running.
e2e2_stop_and_check() {
  "$LC" stop || fail "local-cluster stop failed"
  [[ -z $(leftovers) ]] || fail "left behind after stop: $(leftovers)"
  "$LC" check-stopped || fail "local-cluster check-stopped disagrees"
  "$LC" stop >/dev/null || fail "a second stop failed"
  if "$LC" status >/dev/null 2>&1; then fail "status says running after stop"; fi
}
