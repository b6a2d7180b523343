#!/usr/bin/env bash
# A transition that is one collective against that collective's own point:
# on NP local MPI ranks, one shardbench sweep holds both S(0) -> R on mesh NP (an all_gather of
# the whole tensor) and the all_gather point of the same bytes (whole output, docs/RESULTS_FORMAT.md), from
# 256 KiB to 64 MiB. Repeated REPS times; prints, per size, the median over repetitions of each
# point's median (p50) and the ratio transition / collective (1.0 = the transition costs what its
# collective costs: no allocation, page faults or v-form penalty inside the timed sample).
#
#   bench/scripts/transition_vs_collective.sh [BUILD_DIR]    env: NP=4 REPS=3 OUT=dir
#
# BUILD_DIR defaults to ./build; any build of shardbench works (e.g. an older one, to compare).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build}
NP=${NP:-4} REPS=${REPS:-3}
out=${OUT:-$(mktemp -d /tmp/shardcal-tvc.XXXXXX)}
mkdir -p "$out"
bin=$build/bin/shardbench
[[ -x $bin ]] || { echo "transition_vs_collective.sh: $bin not built (cmake --build $build --target shardbench)" >&2; exit 2; }
py=/usr/bin/python3; [[ -x $py ]] || py=python3
mpirun=(mpirun -np "$NP")
if mpirun --version 2>&1 | grep -q "Open MPI"; then mpirun=(mpirun --allow-run-as-root --oversubscribe -np "$NP"); fi

cat > "$out/tvc.json" <<JSON
{
  "name": "transition_vs_collective",
  "description": "bench/scripts/transition_vs_collective.sh: S(0) -> R on mesh $NP vs all_gather of the same bytes, one sweep.",
  "meshes": ["$NP"],
  "collectives": ["all_gather"],
  "transitions": [{"mesh": "all", "from": "S(0)", "to": "R"}],
  "sizes": [262144, 1048576, 4194304, 16777216, 67108864],
  "dtypes": ["f32"],
  "distributions": ["even"],
  "transition_distributions": ["chunk"],
  "warmup": 3,
  "iterations": {"min": 10, "max": 40},
  "time_budget_s": 1.5,
  "adaptive": {"target_rel_ci": 0.05, "confidence": 0.95},
  "check": true,
  "mode": "per_iteration",
  "buffer_rotation": {"bytes": 0}
}
JSON

echo "transition_vs_collective: NP=$NP REPS=$REPS build=$build, results in $out" >&2
for ((r = 1; r <= REPS; r++)); do
  echo "transition_vs_collective: repetition $r/$REPS" >&2
  "${mpirun[@]}" "$bin" sweep --backend mpi --config "$out/tvc.json" --out "$out/sweep_$r.jsonl" -q </dev/null
done

"$py" - "$out" "$REPS" <<'PY'
import json, statistics, sys
out, reps = sys.argv[1], int(sys.argv[2])
t, c = {}, {}
for r in range(1, reps + 1):
    for line in open(f"{out}/sweep_{r}.jsonl"):
        rec = json.loads(line)
        if rec.get("type") != "point":
            continue
        if rec.get("wrong", 0) != 0:
            sys.exit(f"transition_vs_collective: wrong results in {rec['key']}")
        size = rec["point"]["size"]
        (t if rec["point"]["kind"] == "transition" else c).setdefault(size, []).append(rec["stats"]["p50"])
print("median over repetitions of each point's median (p50), microseconds; ratio = transition / all_gather")
print(f"| {'bytes':>9} | {'S(0)->R':>10} | {'all_gather':>10} | {'ratio':>5} |")
print("|---:|---:|---:|---:|")
for size in sorted(c):
    if size not in t:
        continue
    a, b = statistics.median(t[size]), statistics.median(c[size])
    print(f"| {size:>9} | {a * 1e6:>10.1f} | {b * 1e6:>10.1f} | {a / b:>5.2f} |")
PY
