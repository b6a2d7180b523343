#!/usr/bin/env bash
# scripts/emulate/validate-two-hosts.sh - does the cost planner route heavy traffic onto the
# intra-host mesh dim of the emulated two-host cluster, and does measurement confirm it?
# (docs/EMULATION.md "Planner on the emulated cluster")
set -Eeuo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"

usage() {
  cat <<'EOF'
Usage: bash scripts/emulate/validate-two-hosts.sh [--rate 400mbit] [--profile P.json] [--out DIR]
         [--build-dir DIR] [--config FILE] [--k 3] [--rounds 5] [--max-regret 1.05] [--name NAME]

On the emulated two-host cluster (scripts/emulate/two-hosts, link shaped to --rate):
 1. a profile: --profile, or sweep configs/emulate/two-hosts.json + shardbench calibrate here;
 2. shardbench validate over FILE (default configs/emulate/validate.json: transitions of a 2x2
    mesh that can put their traffic on either mesh dim): the chosen plan, the greedy one and the
    k cheapest, measured in interleaved rounds;
 3. scripts/emulate/validate_summary.py: per transition the inter- and intra-host bytes of the
    chosen and greedy plans, what the planner chooses with PyTorch DTensor's built-in model
    (configs/profiles/dtensor-default.json), regret and greedy/chosen.
Needs root and a shardbench with the `plan` and `validate` commands. The emulation is removed at
the end, also on failure or Ctrl-C.

Outputs under DIR (default out/emulate-validate): sweep.jsonl, profile.json, calibration.txt
(unless --profile), validate.jsonl, validate.txt, summary.txt, summary.json, report/
(reports/make_report.py; only when this run calibrated, as the report needs the sweep).
Exit 0 acceptance met (a transition whose choice differs from dtensor-default's has regret <=
--max-regret, no chosen plan moves more bytes across hosts than greedy), 1 not met, 2 bad input
or a failed step. About 1 min at 400 Mbit/s plus 1.5 min for the calibration.
EOF
}

PROG=validate-two-hosts
# shellcheck source=scripts/emulate/common.sh
source "$ROOT/scripts/emulate/common.sh"
RATE=400mbit
PROFILE=
OUT=out/emulate-validate
BUILD_DIR=build
CONFIG=configs/emulate/validate.json
K=3
ROUNDS=5
MAX_REGRET=1.05
NAME=scval
declare -A OPTS=([--rate]=RATE [--profile]=PROFILE [--out]=OUT [--build-dir]=BUILD_DIR
                 [--config]=CONFIG [--k]=K [--rounds]=ROUNDS [--max-regret]=MAX_REGRET [--name]=NAME)
parse_options "$@"
need_shardbench plan validate
need_file config "$CONFIG"
[[ -z $PROFILE ]] || need_file --profile "$PROFILE"
need_root

emu_start "$RATE"

if [[ -z $PROFILE ]]; then
  echo "== calibrating at $RATE (configs/emulate/two-hosts.json), $(uptime | sed 's/.*load/load/')"
  in_bg "${EMU[@]}" run -- -np 4 "$SB" sweep --backend mpi --quiet --config configs/emulate/two-hosts.json \
    --out "$OUT/sweep.jsonl" </dev/null || die "calibration sweep failed"
  "$SB" calibrate --results "$OUT/sweep.jsonl" --out "$OUT/profile.json" --name "emulated-2hosts-$RATE" \
    >"$OUT/calibration.txt" || die "calibrate failed (see $OUT/calibration.txt)"
  PROFILE=$OUT/profile.json
fi
echo "== validate ($CONFIG, k=$K, rounds=$ROUNDS) at $RATE, $(uptime | sed 's/.*load/load/')"
vrc=0
{ "${EMU[@]}" run -- -np 4 "$SB" validate --backend mpi --profile "$PROFILE" --config "$CONFIG" \
  --out "$OUT/validate.jsonl" --k "$K" --rounds "$ROUNDS" --ranks-per-host 2 </dev/null 2>&1 |
  tee "$OUT/validate.txt"; } &
wait $! || vrc=$?  # in the background, as in_bg: a TERM is handled at once
((vrc == 0)) || die "shardbench validate failed (exit $vrc; see $OUT/validate.txt)"
echo "== summary, $(uptime | sed 's/.*load/load/')"
rc=0
PYTHONPATH=calibrate/python${PYTHONPATH:+:$PYTHONPATH} /usr/bin/python3 scripts/emulate/validate_summary.py --validate "$OUT/validate.jsonl" --shardbench "$SB" \
  --profile "$PROFILE" --max-regret "$MAX_REGRET" --out "$OUT/summary.json" >"$OUT/summary.txt" || rc=$?
cat "$OUT/summary.txt"
if [[ -f reports/make_report.py && -f $OUT/sweep.jsonl ]]; then
  "${SHARDCAL_PYTHON:-.venv/bin/python}" reports/make_report.py --out "$OUT/report" "$OUT/sweep.jsonl" --profile "$PROFILE" \
    --validate "$OUT/validate.jsonl" --title "Emulated two-host cluster: planner validation ($RATE)" ||
    echo "validate-two-hosts: report failed (results stay in $OUT)" >&2
elif [[ ! -f reports/make_report.py ]]; then
  echo "report skipped: reports/make_report.py missing"
fi
exit "$rc"
