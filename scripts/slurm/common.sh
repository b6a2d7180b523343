# shellcheck shell=bash disable=SC2034  # SC_* are read by the scripts that source this
# scripts/slurm/common.sh - shared by calibrate.sbatch and calibrate-array.sbatch (sourced; not
# run on its own). Option parsing, the MPI plugin choice, the signal-forwarding srun, and the
# calibrate + report steps. docs/SLURM.md describes the behaviour.

slurm_die() {
  echo "shardcal-slurm: error: $*" >&2
  exit 2
}

slurm_log() { echo "shardcal-slurm: $*" >&2; }

slurm_usage_common() {
  cat <<'EOF'
Options (after the script name; sbatch's own options go before it):
  --config FILE       sweep config (default configs/cluster.json)
  --backend B         mpi | nccl (default mpi)
  --out-base DIR      where run directories go (default slurm-out, relative to the submit dir)
  --name NAME         cluster name in the profile (default: $SLURM_CLUSTER_NAME or the first host)
  --shardbench PATH   the shardbench binary (default build/bin/shardbench)
  --mpi PLUGIN        srun --mpi plugin (default pmix; falls back to what `srun --mpi=list` offers)
  --resume DIR        continue the run in DIR (an earlier job's run directory) instead of a new one
  --timeout S         seconds a rank waits in one operation before the sweep's watchdog ends it
                      (exit 124, naming the operation): the bound on ranks left waiting
                      for a lost node (shardbench sweep --timeout; default 300)
  --no-report         skip the report step
  --help              this help
Relative paths are taken from the submit directory, which must be the shardcal checkout (or set
SHARDCAL_ROOT). Topology comes from Slurm (-N, --ntasks-per-node, --gpus-per-node / --gpus-per-task);
the sweep cross-checks it against the hosts the ranks find.
EOF
}

# Defaults, then "$@" parsed into SC_* variables.
slurm_parse_args() {
  SC_ROOT=${SHARDCAL_ROOT:-${SLURM_SUBMIT_DIR:-$PWD}}
  SC_CONFIG=configs/cluster.json
  SC_BACKEND=mpi
  SC_OUT_BASE=slurm-out
  SC_NAME=${SLURM_CLUSTER_NAME:-}
  SC_SB=build/bin/shardbench
  SC_MPI=pmix
  SC_RESUME_DIR=
  SC_REPORT=1
  SC_MERGE=
  SC_TIMEOUT=
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --config | --backend | --out-base | --name | --shardbench | --mpi | --resume | --merge | --timeout)
        [[ $# -ge 2 && -n $2 ]] || slurm_die "$1 needs a value (see --help)"
        case "$1" in
          --config) SC_CONFIG=$2 ;;
          --backend) SC_BACKEND=$2 ;;
          --out-base) SC_OUT_BASE=$2 ;;
          --name) SC_NAME=$2 ;;
          --shardbench) SC_SB=$2 ;;
          --mpi) SC_MPI=$2 ;;
          --resume) SC_RESUME_DIR=$2 ;;
          --merge) SC_MERGE=$2 ;;
          --timeout) SC_TIMEOUT=$2 ;;
        esac
        shift ;;
      --no-report) SC_REPORT=0 ;;
      -h | --help) SC_HELP=1 ;;
      *) slurm_die "unknown option '$1' (see --help)" ;;
    esac
    shift
  done
  [[ ${SC_HELP:-0} == 1 ]] && return 0
  [[ $SC_BACKEND == mpi || $SC_BACKEND == nccl ]] || slurm_die "--backend $SC_BACKEND: expected mpi or nccl"
  [[ -z $SC_TIMEOUT || $SC_TIMEOUT =~ ^[0-9]+(\.[0-9]+)?$ && $SC_TIMEOUT =~ [1-9] ]] ||
    slurm_die "--timeout $SC_TIMEOUT: expected a positive number of seconds, e.g. 300"
  cd "$SC_ROOT" || slurm_die "cannot cd to $SC_ROOT (the shardcal checkout; submit from it or set SHARDCAL_ROOT)"
  [[ -x $SC_SB ]] || slurm_die "$SC_SB: not an executable shardbench; build first (cmake --build build) or pass --shardbench PATH"
  [[ -r $SC_CONFIG ]] || slurm_die "--config $SC_CONFIG: not readable (relative to $SC_ROOT)"
  [[ -n ${SLURM_JOB_ID:-} ]] || slurm_die "not inside a Slurm job: submit with sbatch (see --help)"
  [[ -n ${SLURM_NTASKS:-} ]] || slurm_die "SLURM_NTASKS is not set: give sbatch a task count (-n N, or -N NODES --ntasks-per-node N)"
}

# The topology Slurm gives this job (what the sweep cross-checks against the ranks' hosts).
slurm_print_topology() {
  slurm_log "job $SLURM_JOB_ID: ${SLURM_JOB_NUM_NODES:-?} node(s) [${SLURM_JOB_NODELIST:-?}], tasks per node ${SLURM_TASKS_PER_NODE:-?}, $SLURM_NTASKS task(s), backend $SC_BACKEND"
  if [[ $SC_BACKEND == nccl ]]; then
    slurm_log "GPUs: per node ${SLURM_GPUS_PER_NODE:-unset}, per task ${SLURM_GPUS_PER_TASK:-unset}; CUDA_VISIBLE_DEVICES in the batch step: ${CUDA_VISIBLE_DEVICES:-unset}"
  fi
}

# srun's MPI plugin: the requested one when offered, else pmix_v*/pmi2, else an error.
slurm_pick_mpi() {
  local list
  list=$(srun --mpi=list 2>&1 | awk '/^[[:space:]]+[a-z]/ {print $1}') || true
  if grep -qx "$SC_MPI" <<<"$list"; then return 0; fi
  local alt
  for alt in pmix $(grep '^pmix_v' <<<"$list" | sort -r) pmi2; do
    if grep -qx "$alt" <<<"$list"; then
      slurm_log "srun --mpi=$SC_MPI is not offered here (srun --mpi=list: $(tr '\n' ' ' <<<"$list")); using --mpi=$alt"
      SC_MPI=$alt
      return 0
    fi
  done
  slurm_die "srun offers no PMIx/PMI2 plugin (srun --mpi=list: $(tr '\n' ' ' <<<"$list")); ask the admins, or pass --mpi PLUGIN"
}

# Runs srun in the background and waits for it. USR1 (sbatch --signal=B:USR1@T, sent T seconds
# before the time limit) or TERM to this batch shell is forwarded as SIGTERM to the job's steps
# (scancel --signal=TERM: the tasks, not srun, which would kill them), so the sweep stops at its
# next checkpoint, leaving a valid results file. Sets SC_STOPPED=1 when that happened.
# A stop that comes before srun has created its step (or started its tasks) reaches no task, so
# while srun still runs after a stop the signal is sent again every SC_RESEND_S seconds, at most
# SC_RESEND_MAX times (the sweep's handler only records the signal: repeats are harmless).
SC_STOPPED=0
SC_SRUN_PID=
SC_RESEND_S=5
SC_RESEND_MAX=12
slurm_on_stop() {  # USR1|TERM
  if [[ $SC_STOPPED == 0 ]]; then
    if [[ ${1:-USR1} == USR1 ]]; then
      slurm_log "stop signal received (USR1: time limit near): asking the sweep to stop cleanly"
    else
      slurm_log "stop signal received (TERM: time limit, scancel, or Slurm ending the job, e.g. after a node failure): asking the sweep to stop cleanly"
    fi
  fi
  SC_STOPPED=1
  if [[ -n $SC_SRUN_PID ]]; then slurm_signal_steps; fi
}
slurm_install_traps() {
  trap 'slurm_on_stop USR1' USR1
  trap 'slurm_on_stop TERM' TERM
}

# SIGTERM to the job's steps; without scancel, to srun (the child of the wrapper subshell).
slurm_signal_steps() {
  scancel --signal=TERM "$SLURM_JOB_ID" 2>/dev/null || pkill -TERM -P "$SC_SRUN_PID" 2>/dev/null || true
}

slurm_srun() {  # srun args...; returns srun's exit status
  if [[ $SC_STOPPED == 1 ]]; then
    slurm_log "stop requested before the step started; not starting: $*"
    return 143
  fi
  # srun's status goes through a file: when a trapped signal interrupts `wait` and srun exits at
  # that moment, bash can lose the status (a second wait returns 255 or 127, not srun's).
  local statusf
  statusf=$(mktemp "${TMPDIR:-/tmp}/shardcal-srun-status.XXXXXX")
  { s=0; srun "$@" || s=$?; echo "$s" >"$statusf"; } &
  SC_SRUN_PID=$!
  local pid=$SC_SRUN_PID rc=0 resends=0 i
  while true; do
    rc=0
    if [[ $SC_STOPPED == 1 ]] && ((resends < SC_RESEND_MAX)); then
      # Stop requested, srun not yet gone: poll it (bounded), then send the signal again.
      for ((i = 0; i < SC_RESEND_S * 4; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.25  # polling srun's exit (a blocking wait would not let us re-send)
      done
      if kill -0 "$pid" 2>/dev/null; then
        resends=$((resends + 1))
        [[ $resends == 1 ]] &&
          slurm_log "srun still runs ${SC_RESEND_S} s after the stop request: sending SIGTERM to the job's steps again (every ${SC_RESEND_S} s, at most $SC_RESEND_MAX times)"
        slurm_signal_steps
        continue
      fi
    fi
    wait "$pid" || rc=$?
    # A trapped signal interrupts wait (status > 128) while srun still runs: wait again.
    if kill -0 "$pid" 2>/dev/null; then continue; fi
    break
  done
  # srun's own status (rc may be the interrupting signal's 128+n if srun ended just then).
  if [[ -s $statusf ]]; then rc=$(<"$statusf"); fi
  rm -f "$statusf"
  SC_SRUN_PID=
  return "$rc"
}

# The sweep of RESULTS (new, or resumed when it exists: requeue or --resume) with extra args.
slurm_sweep() {  # results_file extra_args...
  local results=$1
  shift
  local mode=(--out "$results")
  if [[ -s $results ]]; then
    mode=(--resume "$results")
    slurm_log "resuming $results (requeued or --resume; restart count ${SLURM_RESTART_COUNT:-0})"
  fi
  [[ -z ${SC_TIMEOUT:-} ]] || mode+=(--timeout "$SC_TIMEOUT")
  slurm_log "srun --mpi=$SC_MPI $SC_SB sweep --backend $SC_BACKEND --config $SC_CONFIG ${mode[*]} $*"
  local rc=0
  slurm_srun --mpi="$SC_MPI" --kill-on-bad-exit=1 "$SC_SB" sweep --backend "$SC_BACKEND" \
    --config "$SC_CONFIG" "${mode[@]}" "$@" || rc=$?
  return "$rc"
}

# After a sweep that did not finish: what to do next, and the job's exit status.
slurm_after_stop() {  # rc results resume_hint
  local rc=$1 results=$2 hint=$3
  if [[ $SC_STOPPED == 1 || $rc == 143 || $rc == 138 || $rc == 130 ]]; then
    slurm_log "the sweep stopped before the time limit; $results holds complete records only"
    if [[ ${SHARDCAL_REQUEUE:-0} == 1 ]]; then
      slurm_log "requeueing job $SLURM_JOB_ID (SHARDCAL_REQUEUE=1): it resumes where it stopped"
      scontrol requeue "$SLURM_JOB_ID" || slurm_log "scontrol requeue failed; resubmit: $hint"
    else
      slurm_log "continue with: $hint"
    fi
    exit 3
  fi
  if [[ $rc == 124 ]]; then
    # The watchdog (shardbench sweep --timeout) ended a rank that waited too long for another:
    # what is left of a job whose node was lost (Slurm may take SlurmdTimeout to notice).
    slurm_log "the sweep's watchdog ended it (exit 124): a rank waited longer than --timeout ${SC_TIMEOUT:-300} s for another (a node lost, or a rank hung: the 'timed out' lines above name the operation); $results holds complete records only"
    slurm_log "once the nodes are back (sinfo), continue with: $hint"
    exit 124
  fi
  slurm_log "the sweep failed (exit $rc); see the messages above"
  exit "$rc"
}

# Calibrate RESULTS into DIR/profile.json (+ calibration.txt) and write DIR/report.
slurm_calibrate_and_report() {  # dir results...
  local dir=$1
  shift
  local name=${SC_NAME:-}
  local args=()
  for r in "$@"; do args+=(--results "$r"); done
  [[ -n $name ]] && args+=(--name "$name")
  slurm_log "$SC_SB calibrate ${args[*]} --out $dir/profile.json"
  "$SC_SB" calibrate "${args[@]}" --out "$dir/profile.json" >"$dir/calibration.txt.tmp" ||
    { cat "$dir/calibration.txt.tmp" >&2; slurm_die "calibrate failed"; }
  mv -f "$dir/calibration.txt.tmp" "$dir/calibration.txt"
  if [[ $SC_REPORT == 0 ]]; then
    slurm_log "report skipped (--no-report)"
  elif [[ -f reports/make_report.py ]]; then
    local py=${PYTHON:-$PWD/.venv/bin/python}  # the project's venv (scripts/python-env.sh)
    slurm_log "$py reports/make_report.py --out $dir/report $* --profile $dir/profile.json"
    # The profile is written: a report that fails (e.g. no matplotlib on the node) is a warning.
    if ! "$py" reports/make_report.py --out "$dir/report" "$@" --profile "$dir/profile.json" \
      --title "shardcal calibration, Slurm job ${SLURM_ARRAY_JOB_ID:-$SLURM_JOB_ID}"; then
      slurm_log "warning: the report failed (see above); results and profile are in $dir; make it elsewhere with: .venv/bin/python reports/make_report.py --out $dir/report $* --profile $dir/profile.json (PYTHON=... picks the interpreter here)"
      slurm_log "done: outputs in $dir (profile.json, calibration.txt; no report)"
      return 0
    fi
  else
    slurm_log "report skipped: reports/make_report.py missing"
  fi
  slurm_log "done: outputs in $dir (profile.json, calibration.txt, report/)"
}
