#!/usr/bin/env bash
# Cold plan time of shardcal's cost-based search (BM_CostPlan, Google Benchmark, CPU time, median
# of repetitions) beside PyTorch DTensor's graph-based planner (dtensor_plan_time.py, CPU time,
# median) on the same transitions, measured in one run. Prints a markdown table.
#   bench/scripts/plan_vs_dtensor.sh PYTHON SHARDCAL_MICRO [REPETITIONS]
# PYTHON: an interpreter with torch (>= 2.11, the graph planner); SHARDCAL_MICRO: the
# bench/micro binary (build/bin/shardcal_micro).
set -euo pipefail
if [[ $# -lt 2 ]]; then
  echo "usage: $0 PYTHON SHARDCAL_MICRO [REPETITIONS]" >&2
  exit 2
fi
py=$1 micro=$2 reps=${3:-5}
here=$(cd "$(dirname "$0")" && pwd)
"$py" -c "import torch.distributed.tensor._redistribute" 2>/dev/null ||
  { echo "$0: $py cannot import torch.distributed.tensor (install torch from PyPI)" >&2; exit 2; }
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
"$micro" --benchmark_filter='BM_CostPlan/' --benchmark_repetitions="$reps" \
  --benchmark_report_aggregates_only=true --benchmark_format=json 2>/dev/null > "$tmp"
echo "| mesh | transition | shardcal cold search (CPU, median) | DTensor graph planner cold (CPU, median) |"
echo "|---|---|---|---|"
# name suffix, mesh, from, to: the BM_CostPlan cases of bench/micro/cost_planner_bench.cpp
# (P(sum) is P in both spellings).
while IFS='|' read -r name mesh from to; do
  ours=$(/usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
for b in d["benchmarks"]:
    if b["name"] == "BM_CostPlan/" + sys.argv[2] + "_median":
        print("%.0f us" % b["cpu_time"])
' "$tmp" "$name")
  theirs=$("$py" "$here/dtensor_plan_time.py" "$mesh" "$from" "$to" --repeats $((reps * 3)) 2>/dev/null |
    /usr/bin/python3 -c 'import json,sys; print("%.0f us" % json.load(sys.stdin)["cold_cpu_us"])')
  echo "| $mesh | \`$from → $to\` | $ours | $theirs |"
done <<'CASES'
s0s1r_to_rs0s1_2x2x2|2x2x2|S(0),S(1),R|R,S(0),S(1)
pss_to_s1rs0_2x2x2|2x2x2|P,S(0),S(1)|S(1),R,S(0)
nested_2x2x2x2|2x2x2x2|S(0),S(0),S(1),R|R,S(1),S(1),S(0)
s0s1r_to_rs0s1_8x16x8|8x16x8|S(0),S(1),R|R,S(0),S(1)
CASES
