#!/usr/bin/env bash
# What each MPI thread level and each layer of the MPI backend costs per call (issue 7 point 5).
# Runs bench/micro/mpi_overhead.cpp once per thread level (SHARDCAL_MPI_THREAD_LEVEL), the levels
# alternating REPS times in one run (order rotated every repetition); inside each run the three
# variants (raw MPI call, call inside the watchdog's WatchScope, the backend's Communicator call)
# are themselves interleaved. Prints per op and size the raw latency at MPI_THREAD_SINGLE and every
# other (level, variant) as a ratio to it, plus geometric means.
#
#   bench/scripts/mpi_overhead.sh [BUILD_DIR]
#   env: NP=4 REPS=3 ROUNDS=3 ITERS=200 SKIP=20 MAX=4194304 LEVELS="single funneled multiple" OUT=dir
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build}
NP=${NP:-4} REPS=${REPS:-3} ROUNDS=${ROUNDS:-3} ITERS=${ITERS:-200} SKIP=${SKIP:-20}
MAX=${MAX:-4194304} LEVELS=${LEVELS:-single funneled multiple}
out=${OUT:-$(mktemp -d /tmp/shardcal-mpi-overhead.XXXXXX)}
mkdir -p "$out"
[[ -x $build/bin/mpi_overhead ]] || {
  echo "mpi_overhead.sh: $build/bin/mpi_overhead not built (cmake --build $build --target mpi_overhead)" >&2
  exit 2
}
read -r -a levels <<<"$LEVELS"
for l in "${levels[@]}"; do
  case $l in single | funneled | serialized | multiple) ;;
    *) echo "mpi_overhead.sh: LEVELS: '$l' is not single, funneled, serialized or multiple" >&2; exit 2 ;;
  esac
done
py=/usr/bin/python3; [[ -x $py ]] || py=python3
mpirun=(mpirun -np "$NP")
if mpirun --version 2>&1 | grep -q "Open MPI"; then mpirun=(mpirun --allow-run-as-root --oversubscribe -np "$NP"); fi
sizes=()
for ((s = 8; s <= MAX; s *= 2)); do sizes+=("$s"); done

echo "mpi_overhead: NP=$NP REPS=$REPS ROUNDS=$ROUNDS ITERS=$ITERS levels: ${levels[*]}, results in $out" >&2
echo "mpi_overhead: load before: $(uptime)" | tee "$out/load.txt" >&2
n=${#levels[@]}
for ((r = 1; r <= REPS; r++)); do
  for ((k = 0; k < n; k++)); do
    l=${levels[$(((k + r - 1) % n))]}
    echo "mpi_overhead: repetition $r/$REPS: $l" >&2
    SHARDCAL_MPI_THREAD_LEVEL=$l "${mpirun[@]}" "$build/bin/mpi_overhead" --iterations "$ITERS" \
      --skip "$SKIP" --rounds "$ROUNDS" "${sizes[@]}" </dev/null >"$out/${l}_$r.jsonl"
  done
done
echo "mpi_overhead: load after: $(uptime)" | tee -a "$out/load.txt" >&2

"$py" - "$out" "$REPS" "${levels[@]}" <<'PY'
import json, statistics, sys
out, reps, levels = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
variants = ["raw", "watch", "backend"]
t = {}  # (level, variant, op, size) -> [median per repetition]
for l in levels:
    for r in range(1, reps + 1):
        for line in open(f"{out}/{l}_{r}.jsonl"):
            rec = json.loads(line)
            if rec["thread_level"] != l:
                sys.exit(f"mpi_overhead: asked for {l}, MPI provided {rec['thread_level']}")
            t.setdefault((l, rec["variant"], rec["op"], rec["size"]), []).append(rec["median_slowest_s"])
base = levels[0]
cols = [(l, v) for l in levels for v in variants if (l, v) != (base, "raw")]
keys = sorted({(k[2], k[3]) for k in t})
print(f"median over repetitions of the per-run median slowest-rank latency; column 3 in us, the "
      f"others as a ratio to it (raw MPI call at {base})")
print("| op | bytes | raw " + base + " (us) | " + " | ".join(f"{v} {l}" for l, v in cols) + " |")
print("|---|---:|---:|" + "---:|" * len(cols))
ratios = {c: [] for c in cols}
for op, size in keys:
    b = statistics.median(t[(base, "raw", op, size)])
    row = f"| {op} | {size} | {b * 1e6:.2f} |"
    for c in cols:
        x = statistics.median(t[(c[0], c[1], op, size)]) / b
        ratios[c].append(x)
        row += f" {x:.3f} |"
    print(row)
print("| geomean | | |" + "".join(f" {statistics.geometric_mean(ratios[c]):.3f} |" for c in cols))
for op in ("all_gather", "all_reduce"):
    idx = [i for i, k in enumerate(keys) if k[0] == op and k[1] <= 4096]
    if idx:
        print(f"geomean {op} 8 B-4 KiB: " + ", ".join(
            f"{v} {l} {statistics.geometric_mean([ratios[(l, v)][i] for i in idx]):.3f}" for l, v in cols))
PY
