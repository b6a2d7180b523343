#!/usr/bin/env bash
# A/A honesty check of `shardbench gate` (docs/GATE.md "A/A honesty": a gate must not fail A against A): runs the
# same sweep (configs/aa.json) on this machine and gates it against itself; every regression
# verdict is a false alarm. Three ways, all reported:
#   twice  two sweeps one after the other, gated B against A: what a CI job that compares two
#          runs sees, including run-to-run drift of the machine (load, hysteresis, placement);
#   pooled four sweeps interleaved in time, A B A' B', gated {A, A'} against {B, B'} (several
#          files per side are pooled): the remedy docs/GATE.md suggests for drift;
#   split  one sweep whose samples are split into two halves by a seeded random choice inside
#          each consecutive pair of samples (a paired randomised split): both halves see the same
#          machine state, so the null hypothesis holds by construction; this is the property the
#          gate's statistics promise (P(any false regression) <= alpha under the complete null).
#
#   bench/scripts/aa_check.sh [BUILD_DIR]
#   env: BACKEND=sim (ranks as threads) | mpi (NP local ranks under mpirun)   NP=4
#        REPEATS=3 (sweeps per mode)   MODE=all|twice|pooled|split   SHORT=1 (27 points, 30 samples)
#        ALPHA=0.01 MAX_SLOWDOWN=0.05   OUT=dir (kept; default a temp dir)
#        CHECK=1: exit 1 when a split-mode gate calls any regression (the ctest gate.aa_split)
# Prints one line per gate (points, regression / inconclusive / pass counts) and the totals:
# false-alarm rate = regression verdicts / points compared, and runs with any false alarm.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build}
BACKEND=${BACKEND:-sim} NP=${NP:-4} REPEATS=${REPEATS:-3} MODE=${MODE:-all} SHORT=${SHORT:-0}
ALPHA=${ALPHA:-0.01} MAX_SLOWDOWN=${MAX_SLOWDOWN:-0.05} CHECK=${CHECK:-0}
sb=$build/bin/shardbench
[[ -x $sb ]] || { echo "aa_check.sh: $sb not built (cmake --build $build --target shardbench)" >&2; exit 2; }
case $BACKEND in sim | mpi) ;; *) echo "aa_check.sh: BACKEND=$BACKEND: expected sim or mpi" >&2; exit 2 ;; esac
case $MODE in all | twice | pooled | split) ;; *) echo "aa_check.sh: MODE=$MODE: expected all, twice, pooled or split" >&2; exit 2 ;; esac
[[ $REPEATS =~ ^[1-9][0-9]*$ ]] || { echo "aa_check.sh: REPEATS=$REPEATS: expected a positive integer" >&2; exit 2; }
out=${OUT:-$(mktemp -d /tmp/shardcal-aa.XXXXXX)}
mkdir -p "$out"
py=/usr/bin/python3
export PYTHONPATH="$root/calibrate/python${PYTHONPATH:+:$PYTHONPATH}"  # shardcal.formats' atomic write

config=$root/configs/aa.json
if [[ $SHORT == 1 ]]; then
  config=$out/aa_short.json
  "$py" - "$root/configs/aa.json" "$config" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["description"] = "aa_check.sh SHORT=1: configs/aa.json with 3 sizes and 30 samples"
c["sizes"] = [64, 4096, 262144]
c["collectives"] = ["all_gather", "all_reduce", "broadcast"]
c["iterations"] = {"min": 30, "max": 30}
json.dump(c, open(sys.argv[2], "w"), indent=1)
PY
fi

sweep() {  # sweep OUTFILE
  if [[ $BACKEND == sim ]]; then
    "$sb" sweep --backend sim --world "$NP" --config "$config" --out "$1" >"$1.log" 2>&1 </dev/null
  else
    mpirun --allow-run-as-root --oversubscribe -np "$NP" "$sb" sweep --backend mpi \
      --config "$config" --out "$1" >"$1.log" 2>&1 </dev/null
  fi
}

gate() {  # gate REPORT.json BASELINE_FILES CANDIDATE_FILES (files space separated)
  local rc=0 report=$1 b c
  read -r -a b <<<"$2"
  read -r -a c <<<"$3"
  "$sb" gate --baseline "${b[@]}" --candidate "${c[@]}" --alpha "$ALPHA" \
    --max-slowdown "$MAX_SLOWDOWN" --json "$report" --quiet >/dev/null 2>"$report.err" </dev/null || rc=$?
  if [[ $rc == 2 ]]; then
    echo "aa_check.sh: shardbench gate failed: $(cat "$report.err")" >&2
    exit 2
  fi
}

split() {  # split IN OUT_A OUT_B SEED: a seeded random member of each consecutive pair to each side
  "$py" - "$@" <<'PY'
import json, random, sys
from shardcal.formats import write_text_atomic
src, out_a, out_b, seed = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
fa, fb = [], []
for line in open(src):
    rec = json.loads(line)
    if rec.get("type") == "point" and rec.get("samples_s"):
        rng = random.Random(f"{seed}:{rec['key']}")
        s, a, b = rec["samples_s"], [], []
        for i in range(0, len(s) - 1, 2):
            x, y = s[i], s[i + 1]
            if rng.random() < 0.5:
                x, y = y, x
            a.append(x)
            b.append(y)
        ra, rb = dict(rec), dict(rec)
        ra["samples_s"], rb["samples_s"] = a, b
        fa.append(json.dumps(ra) + "\n")
        fb.append(json.dumps(rb) + "\n")
    else:
        fa.append(line)
        fb.append(line)
write_text_atomic(out_a, "".join(fa))
write_text_atomic(out_b, "".join(fb))
PY
}

echo "aa_check.sh: backend $BACKEND, $NP ranks, config $config, $REPEATS repeat(s), mode $MODE, alpha $ALPHA, max slowdown $MAX_SLOWDOWN"
echo "load before: $(uptime)"
reports=()
for ((r = 1; r <= REPEATS; r++)); do
  sweep "$out/a$r.jsonl"
  if [[ $MODE == all || $MODE == twice || $MODE == pooled ]]; then
    sweep "$out/b$r.jsonl"
  fi
  if [[ $MODE == all || $MODE == twice ]]; then
    gate "$out/twice$r.json" "$out/a$r.jsonl" "$out/b$r.jsonl"
    reports+=("$out/twice$r.json")
  fi
  if [[ $MODE == all || $MODE == pooled ]]; then
    sweep "$out/a${r}p.jsonl"
    sweep "$out/b${r}p.jsonl"
    gate "$out/pooled$r.json" "$out/a$r.jsonl $out/a${r}p.jsonl" "$out/b$r.jsonl $out/b${r}p.jsonl"
    reports+=("$out/pooled$r.json")
  fi
  if [[ $MODE == all || $MODE == split ]]; then
    split "$out/a$r.jsonl" "$out/a${r}_x.jsonl" "$out/a${r}_y.jsonl" "$r"
    gate "$out/split$r.json" "$out/a${r}_x.jsonl" "$out/a${r}_y.jsonl"
    reports+=("$out/split$r.json")
  fi
done
echo "load after: $(uptime)"
"$py" - "$CHECK" "${reports[@]}" <<'PY'
import json, os, sys
check, files = sys.argv[1] == "1", sys.argv[2:]
tot = {}
for f in files:
    rep = json.load(open(f))
    mode = os.path.basename(f).rstrip("0123456789.json")
    n = len(rep["points"])
    c = {v: sum(p["verdict"] == v for p in rep["points"]) for v in ("regression", "inconclusive", "pass", "improvement")}
    worst = rep["points"][0] if rep["points"] else None
    print(f"{os.path.basename(f):14s} {n:4d} points: {c['regression']:3d} regression, {c['inconclusive']:3d} inconclusive, "
          f"{c['improvement']:3d} improvement, {c['pass']:3d} pass; worst ratio {worst['ratio']:.3f} "
          f"CI [{worst['ci_lo']:.3f}, {worst['ci_hi']:.3f}] ({worst['verdict']})" if worst else "")
    t = tot.setdefault(mode, {"runs": 0, "alarm_runs": 0, "points": 0, "regression": 0, "inconclusive": 0})
    t["runs"] += 1
    t["alarm_runs"] += c["regression"] > 0
    t["points"] += n
    t["regression"] += c["regression"]
    t["inconclusive"] += c["inconclusive"]
bad = False
for mode, t in tot.items():
    print(f"{mode}: false-alarm rate {t['regression']}/{t['points']} = {t['regression'] / max(1, t['points']):.4f} "
          f"of points; {t['alarm_runs']}/{t['runs']} gate runs with any false alarm; "
          f"inconclusive {t['inconclusive']}/{t['points']} = {t['inconclusive'] / max(1, t['points']):.3f}")
    if check and mode == "split" and t["regression"] > 0:
        bad = True
if bad:
    print("aa_check.sh: FAIL: the split A/A gate called a regression (see docs/GATE.md 'A/A honesty')")
sys.exit(1 if bad else 0)
PY
echo "files: $out"
