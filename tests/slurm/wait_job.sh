# shellcheck shell=bash
# tests/slurm/wait_job.sh - sourced by tests/slurm/e2e_lib.sh (the Slurm end-to-end tests).
# Needs: fail MESSAGE (exits), DEADLINE (in $SECONDS), BUDGET_S.
#
# wait_job JOBID TIMEOUT_S: polls slurmctld until the job has finished and prints "STATE EXIT"
# (sbatch --wait polls with a back-off of up to 30 s, which would dominate the tests' time).
# The wait is bounded by TIMEOUT_S and by what is left of BUDGET_S. A job that Slurm requeued
# (e.g. slurmd could not launch it: a socket path over 108 bytes, a node that failed) fails at
# once with Slurm's reason and the restart count, not as a job that stays PENDING until timeout.
# The last error line of the local cluster's slurmd log(s) (why a launch failed), if there are any.
slurmd_last_error() {
  local logs=("${SHARDCAL_SLURM_DIR:-/nonexistent}"/log/slurmd*.log) last
  if [[ -r ${logs[0]} ]] && last=$(grep -h "error:" "${logs[@]}" | tail -n 1) && [[ -n $last ]]; then
    echo "slurmd's last error: $last"
  else
    echo "slurmd's log says why"
  fi
}

wait_job() {  # jobid timeout_s -> prints "STATE EXIT"
  local id=$1 limit=$2 i line state='' reason='' restarts=0
  ((limit <= DEADLINE - SECONDS)) || limit=$((DEADLINE - SECONDS))
  ((limit > 0)) || limit=1
  for ((i = 0; i < limit * 4; i++)); do
    line=$(scontrol -o show job "$id" 2>/dev/null) || fail "scontrol show job $id failed"
    state=$(sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p' <<<"$line")
    reason=$(sed -n 's/.* Reason=\([^ ]*\).*/\1/p' <<<"$line")
    restarts=$(sed -n 's/.* Restarts=\([0-9]*\).*/\1/p' <<<"$line")
    case $state in
      COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | PREEMPTED | BOOT_FAIL | DEADLINE)
        echo "$state $(sed -n 's/.* ExitCode=\([0-9]*\):.*/\1/p' <<<"$line")"
        return 0 ;;
      PENDING | REQUEUED | REQUEUE_HOLD | REQUEUE_FED)
        if [[ ${restarts:-0} -gt 0 && -z ${WAIT_JOB_ALLOW_REQUEUE:-} ]]; then
          scancel "$id" 2>/dev/null || true
          fail "job $id was requeued by Slurm (state $state, reason ${reason:-none}, restarts $restarts); cancelled it. $(slurmd_last_error)"
        fi ;;
    esac
    sleep 0.25  # polling slurmctld's job state: there is no event to wait on
  done
  scancel "$id" 2>/dev/null || true
  fail "job $id did not finish within ${limit}s (state $state, reason ${reason:-none}, restarts ${restarts:-0}; test budget ${BUDGET_S}s); cancelled it"
}
