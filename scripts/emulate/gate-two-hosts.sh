#!/usr/bin/env bash
# scripts/emulate/gate-two-hosts.sh - the regression gate on a known change: the emulated
# two-host cluster's link slowed from --baseline-rate to --candidate-rate (
# docs/EMULATION.md "Gate on the emulated cluster").
set -Eeuo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"

usage() {
  cat <<'EOF'
Usage: bash scripts/emulate/gate-two-hosts.sh [--baseline-rate 400mbit] [--candidate-rate 200mbit]
         [--reps 2] [--out DIR] [--build-dir DIR] [--config FILE] [--name NAME]

On the emulated two-host cluster (scripts/emulate/two-hosts), sweeps FILE (default
configs/emulate/gate.json, 2x2 mesh: dim 0 inter-host, dim 1 intra-host) REPS times at each rate,
interleaved (A B A B ...), calibrates a profile per side, and runs `shardbench gate` both ways:
  forward: baseline = baseline-rate runs, candidate = candidate-rate runs (the link got slower):
           expected verdict regression, with every regression on an inter-host point (dim 0)
           or model (hosts >= 2) and none on an intra-host one;
  reverse: the same runs swapped (the link got faster): expected verdict pass.
Needs root and a shardbench with the `gate` command. The emulation is removed at the end, also
on failure or Ctrl-C.

Outputs under DIR (default out/emulate-gate): RATE-I.jsonl (sweeps), RATE.profile.json,
forward.json/.md, reverse.json/.md (gate reports), summary.txt, report/ (reports/make_report.py:
the candidate runs with the forward gate report).
Exit 0 both expectations met, 1 not met, 2 bad input or a failed step.
About 1 min per repetition at 400 + 200 Mbit/s.
EOF
}

PROG=gate-two-hosts
# shellcheck source=scripts/emulate/common.sh
source "$ROOT/scripts/emulate/common.sh"
BASE=400mbit
CAND=200mbit
REPS=2
OUT=out/emulate-gate
BUILD_DIR=build
CONFIG=configs/emulate/gate.json
NAME=scgate
declare -A OPTS=([--baseline-rate]=BASE [--candidate-rate]=CAND [--reps]=REPS [--out]=OUT
                 [--build-dir]=BUILD_DIR [--config]=CONFIG [--name]=NAME)
parse_options "$@"
need_shardbench gate
need_file config "$CONFIG"
[[ $REPS =~ ^[1-9][0-9]*$ ]] || die "--reps '$REPS': expected a positive integer"
check_rate --baseline-rate "$BASE"
check_rate --candidate-rate "$CAND"
[[ $BASE != "$CAND" ]] || die "--baseline-rate and --candidate-rate are both $BASE"
need_root

emu_start "$BASE"

base_files=() cand_files=()
for ((i = 1; i <= REPS; i++)); do
  for r in "$BASE" "$CAND"; do
    "${EMU[@]}" rate "$r" >/dev/null
    f=$OUT/$r-$i.jsonl
    echo "== sweep $i/$REPS at $r -> $f, $(uptime | sed 's/.*load/load/')"
    in_bg "${EMU[@]}" run -- -np 4 "$SB" sweep --backend mpi --quiet --config "$CONFIG" --out "$f" </dev/null ||
      die "sweep at $r failed"
    if [[ $r == "$BASE" ]]; then base_files+=("$f"); else cand_files+=("$f"); fi
  done
done
"${EMU[@]}" stop >/dev/null
for side in base cand; do
  if [[ $side == base ]]; then r=$BASE files=("${base_files[@]}"); else r=$CAND files=("${cand_files[@]}"); fi
  "$SB" calibrate --results "${files[@]}" --out "$OUT/$r.profile.json" --name "emulated-2hosts-$r" \
    >"$OUT/$r.calibration.txt" || die "calibrate at $r failed (see $OUT/$r.calibration.txt)"
done

gate() {  # gate NAME BASELINE_RATE CANDIDATE_RATE BASE_FILES... -- CAND_FILES...
  local name=$1 br=$2 cr=$3 rc=0
  shift 3
  local b=() c=()
  while [[ $1 != -- ]]; do b+=("$1"); shift; done
  shift
  c=("$@")
  "$SB" gate --baseline "${b[@]}" --candidate "${c[@]}" --baseline-profile "$OUT/$br.profile.json" \
    --candidate-profile "$OUT/$cr.profile.json" --json "$OUT/$name.json" --markdown "$OUT/$name.md" \
    --quiet || rc=$?
  echo "$rc"
}
fwd_rc=$(gate forward "$BASE" "$CAND" "${base_files[@]}" -- "${cand_files[@]}")
rev_rc=$(gate reverse "$CAND" "$BASE" "${cand_files[@]}" -- "${base_files[@]}")
for r in "$fwd_rc" "$rev_rc"; do
  case $r in
    0 | 1 | 3) ;;  # verdicts: pass, regression, inconclusive
    2) die "shardbench gate: bad input or incomparable runs (see $OUT/forward.md, $OUT/reverse.md)" ;;
    *) die "shardbench gate failed (exit $r: internal error or signal; see its stderr above)" ;;
  esac
done

rc=0
/usr/bin/python3 - "$OUT" "$fwd_rc" "$rev_rc" "$BASE" "$CAND" >"$OUT/summary.txt" <<'EOF' || rc=$?
import json, sys
out, fwd_rc, rev_rc, base, cand = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]

def dim(p):  # mesh dim of a point from its key (JSON)
    try:
        return json.loads(p["key"]).get("mesh_dim")
    except ValueError:
        return None

def tally(g):
    t = {}
    for p in g["points"]:
        side = "inter" if dim(p) == 0 else "intra"
        t.setdefault(side, {}).setdefault(p["verdict"], 0)
        t[side][p["verdict"]] += 1
    m = {}
    for x in g.get("models", []):
        side = "inter" if "hosts=1" not in str(x.get("link")) else "intra"
        m.setdefault(side, {}).setdefault(x["verdict"], 0)
        m[side][x["verdict"]] += 1
    return t, m

ok = True
for name, rc, want in (("forward", fwd_rc, "regression"), ("reverse", rev_rc, "pass")):
    g = json.load(open(f"{out}/{name}.json"))
    t, m = tally(g)
    print(f"{name} ({'baseline ' + base + ', candidate ' + cand if name == 'forward' else 'baseline ' + cand + ', candidate ' + base}): "
          f"verdict {g['verdict']} (exit {rc}), expected {want}")
    print(f"  points: inter-host {t.get('inter', {})}, intra-host {t.get('intra', {})}")
    print(f"  models: inter-host {m.get('inter', {})}, intra-host {m.get('intra', {})}")
    bad_intra = t.get("intra", {}).get("regression", 0) + m.get("intra", {}).get("regression", 0)
    if g["verdict"] != want:
        ok = False
        print(f"  NOT MET: verdict {g['verdict']}, expected {want}")
    if bad_intra:
        ok = False
        print(f"  NOT MET: {bad_intra} intra-host point(s)/model(s) flagged as regressions")
    if name == "forward" and not (t.get("inter", {}).get("regression", 0) and m.get("inter", {}).get("regression", 0)):
        ok = False
        print("  NOT MET: expected regressions in inter-host points and models")
print("acceptance: " + ("met" if ok else "NOT met"))
sys.exit(0 if ok else 1)
EOF
cat "$OUT/summary.txt"
if [[ -f reports/make_report.py ]]; then
  "${SHARDCAL_PYTHON:-.venv/bin/python}" reports/make_report.py --out "$OUT/report" "${cand_files[@]}" \
    --profile "$OUT/$CAND.profile.json" --gate "$OUT/forward.json" \
    --title "Emulated two-host cluster: gate, baseline $BASE vs candidate $CAND" ||
    echo "gate-two-hosts: report failed (results stay in $OUT)" >&2
else
  echo "report skipped: reports/make_report.py missing"
fi
exit "$rc"
