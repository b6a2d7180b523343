#!/usr/bin/env bash
# What each MPI thread level and each layer of the MPI backend costs per call.
# Runs bench/micro/mpi_overhead.cpp once per thread level (SHARDCAL_MPI_THREAD_LEVEL), the levels
# alternating REPS times in one run (order rotated every repetition); inside each run the three
# variants (raw MPI call, call inside the watchdog's WatchScope, the backend's Communicator call)
# are themselves interleaved. Prints per op and size the raw latency at MPI_THREAD_SINGLE and every
# other (level, variant) as a ratio to it, plus geometric means.
#
#   bench/scripts/mpi_overhead.sh [BUILD_DIR]
#   env: NP=4 REPS=3 ROUNDS=3 ITERS=200 SKIP=20 MAX=4194304 LEVELS="single funneled multiple" OUT=dir
#        REPORT_ONLY=1 OUT=dir: print the tables of an earlier run's files again
# Two tables: (1) within one process (same mpirun, same rank placement, interleaved): watch/raw
# and backend/raw per level, the ratio taken per repetition, median over repetitions -- the
# design's own cost; (2) across levels (separate mpiruns): every (level, variant) over raw at the
# first level -- includes the run-to-run spread of rank placement, so read it with the spread.
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
n=${#levels[@]}
[[ ${REPORT_ONLY:-0} == 1 ]] && REPS_RUN=0 || REPS_RUN=$REPS
((REPS_RUN == 0)) || echo "mpi_overhead: load before: $(uptime)" | tee "$out/load.txt" >&2
for ((r = 1; r <= REPS_RUN; r++)); do
  for ((k = 0; k < n; k++)); do
    l=${levels[$(((k + r - 1) % n))]}
    echo "mpi_overhead: repetition $r/$REPS: $l" >&2
    SHARDCAL_MPI_THREAD_LEVEL=$l "${mpirun[@]}" "$build/bin/mpi_overhead" --iterations "$ITERS" \
      --skip "$SKIP" --rounds "$ROUNDS" "${sizes[@]}" </dev/null >"$out/${l}_$r.jsonl"
  done
done
((REPS_RUN == 0)) || echo "mpi_overhead: load after: $(uptime)" | tee -a "$out/load.txt" >&2

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
# (1) Within one process: ratios per repetition, then the median.
print("(1) within one process: median over repetitions of (variant / raw) of the same run")
print("| op | bytes | " + " | ".join(f"{v}/raw {l}" for l in levels for v in variants[1:]) + " |")
print("|---|---:|" + "---:|" * (len(levels) * 2))
keys = sorted({(k[2], k[3]) for k in t})
within = {(l, v): [] for l in levels for v in variants[1:]}
for op, size in keys:
    row = f"| {op} | {size} |"
    for l in levels:
        raw = t[(l, "raw", op, size)]
        for v in variants[1:]:
            x = statistics.median(a / b for a, b in zip(t[(l, v, op, size)], raw))
            within[(l, v)].append(x)
            row += f" {x:.3f} |"
    print(row)
print("| geomean | |" + "".join(f" {statistics.geometric_mean(within[(l, v)]):.3f} |"
                             for l in levels for v in variants[1:]))
print()
print("(2) across levels (separate mpiruns):")
base = levels[0]
cols = [(l, v) for l in levels for v in variants if (l, v) != (base, "raw")]
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
