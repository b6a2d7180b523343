#!/usr/bin/env bash
# run_fuzz.sh FUZZER SEED_DIR WORK_DIR - run one libFuzzer target for a bounded time.
#
# The seeds (checked in) are read first, then libFuzzer mutates for SHARDCAL_FUZZ_SECONDS
# (default 60; at least 60 when CI=true). New inputs go to WORK_DIR/corpus, a crashing, leaking
# or hanging input to WORK_DIR/ (crash-*, leak-*, timeout-*, oom-*); the seed dir is never
# written. Exit 0 only when libFuzzer found nothing. Replay a finding: FUZZER WORK_DIR/crash-...
set -euo pipefail
fuzzer=$1 seeds=$2 work=$3
secs=${SHARDCAL_FUZZ_SECONDS:-60}
[[ $secs =~ ^[0-9]+$ && $secs -gt 0 ]] ||
  { echo "run_fuzz.sh: SHARDCAL_FUZZ_SECONDS must be a positive integer, got '$secs'" >&2; exit 2; }
if [[ ${CI:-} == true && $secs -lt 60 ]]; then
  echo "run_fuzz.sh: CI=true: fuzzing 60 s, not $secs"
  secs=60
fi
[[ -d $seeds ]] || { echo "run_fuzz.sh: no seed directory $seeds" >&2; exit 2; }
rm -rf "$work"
mkdir -p "$work/corpus"
log=$work/fuzz.log
# -timeout: one input running 10 s is a hang. -rss_limit_mb: two targets run at once on a small
# machine. -max_len: above the largest seed (results/valid-all, ~17 KB), so no seed is cut
# short and mutants may grow past it.
rc=0
# The outer timeout only guards against libFuzzer itself not stopping; -k: SIGKILL if SIGTERM
# does not end it either.
outer=$((secs * 2 + 120))
# bash's `time` reports the fuzzer's wall and CPU seconds (children included): the summary line
# says how long each target really fuzzed, not only its budget.
TIMEFORMAT='%1R %1U %1S'
{ time timeout -k 30 "$outer" "$fuzzer" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
  -max_len=65536 -print_final_stats=1 -artifact_prefix="$work/" "$work/corpus" "$seeds" \
  >"$log" 2>&1 || rc=$?; } 2>"$work/time"
tail -n 40 "$log"
read -r wall user sys <"$work/time" || true
cpu=$(awk -v u="${user:-}" -v s="${sys:-}" 'BEGIN { if (u == "") print "?"; else printf "%.1f", u + s }')
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
echo "run_fuzz.sh: $(basename "$fuzzer"): ${wall:-?} s wall, $cpu s CPU (budget ${secs} s), ${runs:-?} runs (${rate:-?} exec/s), $(ls "$seeds" | wc -l) seeds, $(ls "$work/corpus" | wc -l) new inputs, exit $rc"
if [[ $rc == 124 || $rc == 137 ]]; then
  # timeout's own exit codes (SIGTERM worked / needed SIGKILL): libFuzzer did not stop by itself.
  echo "run_fuzz.sh: $(basename "$fuzzer") killed by the outer timeout ($outer s): libFuzzer did not stop after -max_total_time=$secs; see $log" >&2
  exit 1
fi
if [[ $rc != 0 ]]; then
  echo "run_fuzz.sh: FINDING: $(ls "$work" | grep -E '^(crash|leak|timeout|oom|slow-unit)-' | sed "s|^|$work/|" | tr '\n' ' ')" >&2
  exit 1
fi
