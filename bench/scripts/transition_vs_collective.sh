#!/usr/bin/env bash
# A transition that is one collective against that collective's own point:
# on NP local MPI ranks, one shardbench sweep holds both S(0) -> R on mesh NP (an all_gather of
# the whole tensor) and the all_gather point of the same bytes (whole output, docs/RESULTS_FORMAT.md), from
# 256 KiB to 64 MiB. Repeated REPS times; prints, per size, the median over repetitions of each
# point's median (p50), their ratio transition / collective (1.0 = the transition costs what its
# collective costs: no allocation, page faults or v-form penalty inside the timed sample), and the
# per-repetition ratios (each from one sweep) of the p50s and of the minima: median and range.
#
#   bench/scripts/transition_vs_collective.sh [BUILD_DIR...]
#       env: NP=4 REPS=3 OUT=dir ROTATION=0 MAX_SLOTS=1024
#
# BUILD_DIR defaults to ./build; any build of shardbench works (e.g. an older one, to compare).
# Several build dirs are run interleaved (repetition 1 of each, then 2, ...; every other
# repetition in reverse order, so neither build always runs first), one table each, so a drift
# of a shared machine hits them alike. ROTATION / MAX_SLOTS: the sweep's buffer_rotation
# (bytes, max_slots; 0 = every point on one hot buffer set). Which points rotate depends on the
# build: collectives always; transitions only in builds that rotate them too (timing.buffer_slots
# of each point, printed as "slots").
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
builds=("$@")
[[ ${#builds[@]} -gt 0 ]] || builds=("$root/build")
NP=${NP:-4} REPS=${REPS:-3} ROTATION=${ROTATION:-0} MAX_SLOTS=${MAX_SLOTS:-1024}
die() { echo "transition_vs_collective.sh: $*" >&2; exit 2; }
# Decimal only, checked before any arithmetic or output: bash reads 010 as octal and fails on 08.
for v in NP REPS MAX_SLOTS; do
  [[ ${!v} =~ ^[1-9][0-9]{0,8}$ ]] || die "$v='${!v}': expected a positive decimal integer (e.g. $v=2)"
done
[[ $ROTATION =~ ^(0|[1-9][0-9]{0,14})$ ]] ||
  die "ROTATION='$ROTATION': expected bytes as a decimal integer, 0 for no rotation (e.g. ROTATION=268435456)"
for build in "${builds[@]}"; do
  bin=$build/bin/shardbench
  [[ -x $bin ]] || die "$bin not built (cmake --build $build --target shardbench)"
done
out=${OUT:-$(mktemp -d /tmp/shardcal-tvc.XXXXXX)}
mkdir -p "$out"
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
  "buffer_rotation": {"bytes": $ROTATION, "max_slots": $MAX_SLOTS}
}
JSON

echo "transition_vs_collective: NP=$NP REPS=$REPS ROTATION=$ROTATION MAX_SLOTS=$MAX_SLOTS builds=${builds[*]}, results in $out" >&2
for ((r = 1; r <= REPS; r++)); do
  for ((i = 0; i < ${#builds[@]}; i++)); do
    b=$(( r % 2 ? i : ${#builds[@]} - 1 - i ))
    echo "transition_vs_collective: repetition $r/$REPS, build ${builds[$b]}" >&2
    mkdir -p "$out/build$b"
    "${mpirun[@]}" "${builds[$b]}/bin/shardbench" sweep --backend mpi --config "$out/tvc.json" \
      --out "$out/build$b/sweep_$r.jsonl" -q </dev/null
  done
done

"$py" - "$out" "$REPS" "${builds[@]}" <<'PY'
import json, statistics, sys
out, reps, builds = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
for b, build in enumerate(builds):
    t, c, ratios, min_ratios, slots = {}, {}, {}, {}, {}
    for r in range(1, reps + 1):
        rt, rc, mt, mc = {}, {}, {}, {}
        for line in open(f"{out}/build{b}/sweep_{r}.jsonl"):
            rec = json.loads(line)
            if rec.get("type") != "point":
                continue
            if rec.get("wrong", 0) != 0:
                sys.exit(f"transition_vs_collective: wrong results in {rec['key']}")
            size, kind = rec["point"]["size"], rec["point"]["kind"]
            (rt if kind == "transition" else rc)[size] = rec["stats"]["p50"]
            (mt if kind == "transition" else mc)[size] = rec["stats"]["min"]
            slots.setdefault(size, {})[kind] = rec["timing"]["buffer_slots"]
        for size, v in rt.items():
            t.setdefault(size, []).append(v)
        for size, v in rc.items():
            c.setdefault(size, []).append(v)
        for size in rt.keys() & rc.keys():
            ratios.setdefault(size, []).append(rt[size] / rc[size])
            min_ratios.setdefault(size, []).append(mt[size] / mc[size])
    print(f"build {build}: median over {reps} repetitions of each point's median (p50), "
          "microseconds; ratio = transition / all_gather; per-repetition ratios of the p50s and of "
          "the minima: median (min..max)")
    print(f"| {'bytes':>9} | {'slots t/c':>9} | {'S(0)->R':>10} | {'all_gather':>10} | {'ratio':>5} "
          f"| {'per-rep ratio':>19} | {'per-rep min ratio':>19} |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for size in sorted(c):
        if size not in t:
            continue
        a, d = statistics.median(t[size]), statistics.median(c[size])
        sl = f"{slots[size].get('transition', '-')}/{slots[size].get('collective', '-')}"
        spread = [f"{statistics.median(x):.2f} ({min(x):.2f}..{max(x):.2f})" for x in (ratios[size], min_ratios[size])]
        print(f"| {size:>9} | {sl:>9} | {a * 1e6:>10.1f} | {d * 1e6:>10.1f} | {a / d:>5.2f} | {spread[0]:>19} "
              f"| {spread[1]:>19} |")
PY
