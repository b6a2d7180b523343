#!/usr/bin/env bash
# Does the cost-based planner choose well on this machine? (target: median regret
# <= 1.05, p95 <= 1.20, one transition where the chosen plan beats greedy by >= 1.3x measured.)
# End to end on NP local MPI ranks:
#   1. a profile calibrated on this machine: the sweep of configs/local.json and
#      `shardbench calibrate` (skipped with PROFILE=path, e.g. the main job's out/profile.json);
#   2. `shardbench validate` over configs/validate/local.json (chosen, greedy and the K cheapest
#      plans of every transition, measured in interleaved rounds), REPS times;
#   3. per repetition the summary (median/p95 regret, MAPE, best greedy/chosen), and the
#      transitions where greedy/chosen >= 1.3 in every repetition;
#   4. with REPS >= 2, bench/scripts/regret_from_measurements.py: the regret of choosers that
#      pick from the other repetitions' measurements of the same plans.
#
#   bench/scripts/validate_local.sh [BUILD_DIR]    env: NP=4 REPS=1 K=3 ROUNDS=5 PROFILE= OUT=dir
#                                                       CONFIG=configs/validate/local.json
#                                                       MPIRUN_ARGS= (extra mpirun flags for the
#                                                       sweep and validate, whitespace-separated,
#                                                       e.g. "--bind-to core:overload-allowed")
#
# BUILD_DIR defaults to ./build (cmake --build BUILD_DIR --target shardbench). Outputs under OUT:
# sweep.jsonl + profile.json (step 1), validate_<r>.jsonl + validate_<r>.txt (step 2).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build}
NP=${NP:-4} REPS=${REPS:-1} K=${K:-3} ROUNDS=${ROUNDS:-5}
CONFIG=${CONFIG:-$root/configs/validate/local.json}
out=${OUT:-$(mktemp -d /tmp/shardcal-validate.XXXXXX)}
mkdir -p "$out"
bin=$build/bin/shardbench
[[ -x $bin ]] || { echo "validate_local.sh: $bin not built (cmake --build $build --target shardbench)" >&2; exit 2; }
[[ -f $CONFIG ]] || { echo "validate_local.sh: CONFIG=$CONFIG does not exist" >&2; exit 2; }
py=/usr/bin/python3; [[ -x $py ]] || py=python3
mpirun=(mpirun -np "$NP")
if mpirun --version 2>&1 | grep -q "Open MPI"; then mpirun=(mpirun --allow-run-as-root --oversubscribe -np "$NP"); fi
# Extra launcher flags (whitespace-separated, no globbing), for the calibration sweep and validate.
read -r -a extra_mpirun_args <<<"${MPIRUN_ARGS:-}"
mpirun+=(${extra_mpirun_args[@]+"${extra_mpirun_args[@]}"})  # empty-array safe under set -u (bash < 4.4)

echo "validate_local: NP=$NP REPS=$REPS K=$K ROUNDS=$ROUNDS build=$build, outputs in $out" >&2
echo "validate_local: launcher: ${mpirun[*]}" | tee "$out/launcher.txt" >&2
echo "validate_local: load: $(uptime)" >&2
profile=${PROFILE:-}
if [[ -z $profile ]]; then
  echo "validate_local: calibrating: sweep configs/local.json on $NP ranks, then shardbench calibrate" >&2
  "${mpirun[@]}" "$bin" sweep --backend mpi --config "$root/configs/local.json" --out "$out/sweep.jsonl" -q </dev/null
  "$bin" calibrate --results "$out/sweep.jsonl" --out "$out/profile.json" --name local >"$out/calibration.txt"
  profile=$out/profile.json
fi
[[ -f $profile ]] || { echo "validate_local.sh: PROFILE=$profile does not exist" >&2; exit 2; }

for ((r = 1; r <= REPS; r++)); do
  echo "validate_local: validate, repetition $r/$REPS" >&2
  "${mpirun[@]}" "$bin" validate --backend mpi --profile "$profile" --config "$CONFIG" \
    --out "$out/validate_$r.jsonl" --k "$K" --rounds "$ROUNDS" -q </dev/null | tee "$out/validate_$r.txt"
done
echo "validate_local: load: $(uptime)" >&2

"$py" - "$out" "$REPS" <<'PY'
import json, sys
out, reps = sys.argv[1], int(sys.argv[2])
wins = None
print("| rep | transitions | regret median | regret p95 | regret max | regret beyond CIs | MAPE | greedy/chosen max |")
print("|---:|---:|---:|---:|---:|---:|---:|---:|")
for r in range(1, reps + 1):
    recs = [json.loads(l) for l in open(f"{out}/validate_{r}.jsonl")]
    s = recs[-1]
    print(f"| {r} | {s['transitions']} | {s['regret']['median']:.3f} | {s['regret']['p95']:.3f} | "
          f"{s['regret']['max']:.3f} | {s['regret'].get('significant', '-')} | {100 * s['mape']:.1f}% | "
          f"{s['greedy_speedup']['max']:.2f} |")
    mine = {}
    for t in recs[:-1]:
        tr = t["transition"]
        label = f"{tr['from_given']} -> {tr['to_given']} mesh {tr['mesh']} [{tr['shape']}]"
        if t["greedy_speedup"] >= 1.3:
            ch = t["plans"][0]
            gr = next(p for p in t["plans"] if p["role"] == "greedy")
            mine[label] = (t["greedy_speedup"], ch["steps"], gr["steps"])
    wins = mine if wins is None else {k: v for k, v in mine.items() if k in wins}
print()
print("transitions where the chosen plan beat greedy by >= 1.3x in every repetition (last one's numbers):")
for label, (sp, ch, gr) in sorted(wins.items(), key=lambda kv: -kv[1][0]):
    print(f"  {label}: {sp:.2f}x\n    chosen: {'; '.join(ch)}\n    greedy: {'; '.join(gr)}")
if not wins:
    print("  (none)")
PY
if ((REPS >= 2)); then
  echo
  files=()
  for ((r = 1; r <= REPS; r++)); do files+=("$out/validate_$r.jsonl"); done
  "$py" "$here/regret_from_measurements.py" "${files[@]}"
fi
