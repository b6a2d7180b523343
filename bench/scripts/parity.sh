#!/usr/bin/env bash
# Peer parity benchmark (issue 4): our all_gather and all_reduce (shardbench sweep, MPI backend)
# against a plain MPI loop written the OSU way (bench/micro/osu_style.cpp: MPI_Wtime around each
# call, barrier between calls), alternating the two REPS times in one run on NP local ranks, and
# prints the ratio of median latencies (median over iterations of the slowest rank's time, the
# median over repetitions of that) per size from 8 B to 1 MiB. Target: ratio <= 1.05.
#
#   bench/scripts/parity.sh [BUILD_DIR]        env: NP=4 REPS=3 ITERS=200 SKIP=20 OUT=dir
#
# Sizes follow shardbench's convention (DESIGN §4): all_gather counts the whole output
# (n x per-rank), all_reduce one rank's buffer; both sides use the same element counts (f32).
# A third column runs the OSU loop with MPI_Init_thread(MPI_THREAD_MULTIPLE), as the shardcal
# MPI backend initialises MPI (its watchdog thread), to tell that cost from the harness's own.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build}
NP=${NP:-4} REPS=${REPS:-3} ITERS=${ITERS:-200} SKIP=${SKIP:-20}
out=${OUT:-$(mktemp -d /tmp/shardcal-parity.XXXXXX)}
mkdir -p "$out"
for bin in shardbench osu_style; do
  [[ -x $build/bin/$bin ]] || { echo "parity.sh: $build/bin/$bin not built (cmake --build $build --target shardbench osu_style)" >&2; exit 2; }
done
py=/usr/bin/python3; [[ -x $py ]] || py=python3
mpirun=(mpirun -np "$NP")
if mpirun --version 2>&1 | grep -q "Open MPI"; then mpirun=(mpirun --allow-run-as-root --oversubscribe -np "$NP"); fi

sizes=()
for ((s = 8; s <= 1048576; s *= 2)); do sizes+=("$s"); done
size_list=$(IFS=,; echo "${sizes[*]}")
cat > "$out/parity.json" <<JSON
{
  "name": "parity",
  "description": "bench/scripts/parity.sh: fixed iteration count, no buffer rotation (as OSU), mesh = the world.",
  "meshes": ["$NP"],
  "collectives": ["all_gather", "all_reduce"],
  "sizes": [$size_list],
  "dtypes": ["f32"],
  "distributions": ["even"],
  "warmup": $SKIP,
  "iterations": {"min": $ITERS, "max": $ITERS},
  "time_budget_s": 1000000,
  "adaptive": {"target_rel_ci": 0},
  "check": true,
  "mode": "per_iteration",
  "buffer_rotation": {"bytes": 0}
}
JSON

echo "parity: NP=$NP REPS=$REPS ITERS=$ITERS SKIP=$SKIP, results in $out" >&2
for ((r = 1; r <= REPS; r++)); do
  echo "parity: repetition $r/$REPS: shardbench sweep" >&2
  "${mpirun[@]}" "$build/bin/shardbench" sweep --backend mpi --config "$out/parity.json" \
      --out "$out/ours_$r.jsonl" -q
  echo "parity: repetition $r/$REPS: osu_style" >&2
  "${mpirun[@]}" "$build/bin/osu_style" --iterations "$ITERS" --skip "$SKIP" "${sizes[@]}" > "$out/osu_$r.jsonl"
  echo "parity: repetition $r/$REPS: osu_style --thread-multiple" >&2
  "${mpirun[@]}" "$build/bin/osu_style" --iterations "$ITERS" --skip "$SKIP" --thread-multiple \
      "${sizes[@]}" > "$out/osu_mt_$r.jsonl"
done

"$py" - "$out" "$REPS" <<'PY'
import json, statistics, sys
out, reps = sys.argv[1], int(sys.argv[2])
ours, osu, osu_avg, osu_mt = {}, {}, {}, {}
for r in range(1, reps + 1):
    for line in open(f"{out}/ours_{r}.jsonl"):
        rec = json.loads(line)
        if rec["type"] != "point":
            continue
        if rec["wrong"] != 0:
            sys.exit(f"parity: shardbench reported wrong results: {rec['key']}")
        ours.setdefault((rec["collective"], rec["point"]["size"]), []).append(rec["stats"]["p50"])
    for line in open(f"{out}/osu_{r}.jsonl"):
        rec = json.loads(line)
        osu.setdefault((rec["op"], rec["size"]), []).append(rec["median_slowest_s"])
        osu_avg.setdefault((rec["op"], rec["size"]), []).append(rec["osu_avg_latency_s"])
    for line in open(f"{out}/osu_mt_{r}.jsonl"):
        rec = json.loads(line)
        osu_mt.setdefault((rec["op"], rec["size"]), []).append(rec["median_slowest_s"])
print("median over repetitions of the median slowest-rank latency (us); ratio = shardbench / osu-style")
print(f"| {'op':<10} | {'bytes':>7} | {'shardbench':>10} | {'osu-style':>9} | {'ratio':>5} | "
      f"{'osu MT':>7} | {'ratio MT':>8} | {'OSU avg':>7} |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
worst, ratios, ratios_mt = 0.0, [], []
for key in sorted(osu):
    a, b, c = (statistics.median(d[key]) for d in (ours, osu, osu_mt))
    ratio, ratio_mt = a / b, a / c
    ratios.append(ratio)
    ratios_mt.append(ratio_mt)
    worst = max(worst, ratio)
    flag = "" if ratio <= 1.05 else " *"
    print(f"| {key[0]:<10} | {key[1]:>7} | {a * 1e6:>10.2f} | {b * 1e6:>9.2f} | {ratio:>5.3f}{flag} | "
          f"{c * 1e6:>7.2f} | {ratio_mt:>8.3f} | {statistics.median(osu_avg[key]) * 1e6:>7.2f} |")
print(f"ratio vs osu-style: geometric mean {statistics.geometric_mean(ratios):.3f}, worst {worst:.3f}, "
      f"above 1.05 (*): {sum(r > 1.05 for r in ratios)} of {len(ratios)}")
print(f"ratio vs osu-style with MPI_THREAD_MULTIPLE: geometric mean "
      f"{statistics.geometric_mean(ratios_mt):.3f}, worst {max(ratios_mt):.3f}, above 1.05: "
      f"{sum(r > 1.05 for r in ratios_mt)} of {len(ratios_mt)}")
PY
