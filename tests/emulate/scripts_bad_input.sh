#!/usr/bin/env bash
# The *-two-hosts.sh scripts' shared argument loop and checks (scripts/emulate/common.sh): bad
# input exits 2 with one line naming the script and the problem, before anything starts (no root
# or emulation needed). usage: scripts_bad_input.sh SOURCE_DIR BUILD_DIR
set -uo pipefail
SRC=$1 BUILD=$2
cd "$SRC" || exit 2
fails=0
expect() {  # expect SCRIPT NEEDLE ARGS...: exit 2, one stderr line holding "SCRIPT: ...NEEDLE"
  local s=$1 needle=$2 err rc
  shift 2
  err=$(bash "scripts/emulate/$s.sh" "$@" 2>&1 >/dev/null </dev/null)
  rc=$?
  if [[ $rc == 2 && $err == "$s: "*"$needle"* && $(wc -l <<<"$err") == 1 ]]; then
    echo "ok   $s $*"
  else
    echo "FAIL $s $*: rc $rc, stderr: $err"
    fails=$((fails + 1))
  fi
}
for s in calibrate-two-hosts validate-two-hosts gate-two-hosts; do
  bash "scripts/emulate/$s.sh" --help | grep -q "^Usage: bash scripts/emulate/$s.sh" ||
    { echo "FAIL $s --help"; fails=$((fails + 1)); }
  expect "$s" "unknown option '--bogus'" --bogus
  expect "$s" "--out needs a value" --out
  expect "$s" "--name needs a value" --name ""
  expect "$s" "/nonexistent/bin/shardbench not found" --build-dir /nonexistent
  expect "$s" "config nope.json not found" --build-dir "$BUILD" --config nope.json
done
expect calibrate-two-hosts "--rates: 'fast' is not a tc rate" --build-dir "$BUILD" --rates "100mbit fast"
expect gate-two-hosts "--reps '0': expected a positive integer" --build-dir "$BUILD" --reps 0
expect gate-two-hosts "--candidate-rate: '5' is not a tc rate" --build-dir "$BUILD" --candidate-rate 5
expect gate-two-hosts "are both 400mbit" --build-dir "$BUILD" --candidate-rate 400mbit
expect validate-two-hosts "--profile nope.json not found" --build-dir "$BUILD" --profile nope.json
echo "$fails failure(s)"
((fails == 0))
