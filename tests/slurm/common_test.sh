#!/usr/bin/env bash
# shellcheck disable=SC2016  # the single-quoted bodies are bash code for an inner shell
# tests/slurm/common_test.sh - scripts/slurm/common.sh's signal forwarding and report step with
# fake srun/scancel/shardbench/python (ctest slurm.common, label "slurm"; no Slurm needed):
#   1. a stop (USR1) that arrives before srun's step exists is sent again until it reaches the
#      tasks (the first scancel reaches nothing), and the sweep ends as stopped (143);
#   2. srun finishing just as a stop arrives: its real exit status (0), not the signal's 138;
#   3. a failing report is a warning (the profile is written: exit 0), PYTHON picks the interpreter.
# Usage: common_test.sh SOURCE_DIR
set -euo pipefail
SRC=$(cd "$1" && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/shardcal-common-test.XXXXXX")
trap 'rm -rf -- "$T"' EXIT
fail() { echo "common_test: FAIL: $*" >&2; exit 1; }

# Runs BODY (bash code) in a fresh shell that sourced common.sh, with a 60 s bound.
in_batch_shell() {  # name body
  local name=$1 body=$2
  mkdir -p "$T/$name"
  timeout 60 bash -c '
    set -euo pipefail
    T=$1 SRC=$2
    # shellcheck source=/dev/null
    source "$SRC/scripts/slurm/common.sh"
    SLURM_JOB_ID=1
    SC_RESEND_S=1
    slurm_install_traps
    eval "$3"' in_batch_shell "$T/$name" "$SRC" "$body"
}

# 1. The stop comes before the step: the fake srun sends USR1 to the batch shell at once, its step
#    (and so a task that can receive scancel's TERM) appears only after the first scancel.
rc=0
in_batch_shell early '
  scancel() {
    echo "$*" >>"$T/scancel.log"
    touch "$T/scancel.$(wc -l <"$T/scancel.log")"
    if [[ -e $T/step ]]; then touch "$T/term"; fi
    return 0
  }
  srun() {
    kill -USR1 $$
    until [[ -e $T/scancel.1 ]]; do sleep 0.05; done  # test fake: waits for the first scancel
    touch "$T/step"
    until [[ -e $T/term ]]; do sleep 0.05; done
    return 143  # a function, not exit: exit would end the wrapper subshell before it records the status
  }
  rc=0
  slurm_srun fake-sweep || rc=$?
  echo "rc=$rc stopped=$SC_STOPPED"
  [[ $rc == 143 && $SC_STOPPED == 1 ]]
' >"$T/early.out" 2>&1 || rc=$?
cat "$T/early.out"
[[ $rc == 0 ]] || fail "a stop before the step existed did not reach the tasks (exit $rc; 124 = hung)"
n=$(wc -l <"$T/early/scancel.log")
[[ $n -ge 2 ]] || fail "expected the TERM to be sent again after the first scancel missed, got $n scancel(s)"
grep -q "sending SIGTERM to the job's steps again" "$T/early.out" || fail "no 're-send' message"
echo "ok: a stop before the step existed was sent again ($n scancel calls) and stopped the sweep"

# 2. srun exits 0 right as the stop arrives: the job must see 0 (a finished sweep), not 138.
for i in 1 2 3 4 5; do
  rc=0
  in_batch_shell "late$i" '
    scancel() { return 0; }
    srun() { kill -USR1 $$; return 0; }  # return: a real srun is a child process, exit would end the wrapper
    rc=0
    slurm_srun fake-sweep || rc=$?
    echo "rc=$rc"
    [[ $rc == 0 ]]
  ' >"$T/late.out" 2>&1 || rc=$?
  [[ $rc == 0 ]] || { cat "$T/late.out"; fail "run $i: srun exited 0 but slurm_srun returned non-zero"; }
done
echo "ok: srun's own exit status (0) is returned when it ends just as a stop arrives (5 runs)"

# 3. The report fails: warning, exit 0; the profile is there. PYTHON chooses the interpreter.
mkdir -p "$T/root/reports" "$T/root/run"
: >"$T/root/reports/make_report.py"
cat >"$T/fake-sb" <<'EOF'
#!/bin/sh
# fake shardbench: calibrate ... --out FILE writes FILE
while [ $# -gt 0 ]; do [ "$1" = --out ] && echo '{}' >"$2"; shift; done
echo "fit table"
EOF
cat >"$T/fake-python" <<EOF
#!/bin/sh
echo "\$@" >"$T/python.args"
exit \${FAKE_PY_RC:-0}
EOF
chmod +x "$T/fake-sb" "$T/fake-python"
for want in 1 0; do
  rc=0
  (cd "$T/root" && FAKE_PY_RC=$want PYTHON=$T/fake-python in_batch_shell "report$want" '
    SC_SB=$T/../fake-sb SC_REPORT=1 SC_NAME=test
    slurm_calibrate_and_report "$T/../root/run" "$T/../root/run/results.jsonl"
    echo "returned"') >"$T/report.out" 2>&1 || rc=$?
  cat "$T/report.out"
  [[ $rc == 0 ]] || fail "report exit $want: slurm_calibrate_and_report exited $rc (expected 0)"
  [[ -s $T/root/run/profile.json ]] || fail "no profile written"
  grep -q "^reports/make_report.py --out $T/report$want/../root/run/report " "$T/python.args" ||
    fail "PYTHON=$T/fake-python was not used for the report"
  if [[ $want == 1 ]]; then
    grep -q "warning: the report failed" "$T/report.out" || fail "a failed report gave no warning"
  else
    grep -q "warning" "$T/report.out" && fail "a successful report gave a warning"
  fi
  rm -f "$T/python.args"
done
echo "ok: a failing report is a warning (exit 0, profile kept); PYTHON picks the interpreter"
echo "PASS: common.sh"
