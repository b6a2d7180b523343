#!/usr/bin/env bash
# Peer parity benchmark: our all_gather and all_reduce (shardbench
# sweep, MPI backend) against a plain MPI loop written the OSU way (bench/micro/osu_style.cpp:
# MPI_Init, i.e. single-threaded; MPI_Wtime around each call, barrier between calls), alternating
# the two REPS times in one run on NP local ranks (order swapped every repetition: AB BA AB ...),
# and prints per size from 8 B to 4 MiB the ratio of median latencies (median over iterations of
# the slowest rank's time, the median over repetitions of that), the range of the per-repetition
# ratios (the noise), and the geometric mean. Target: ratio <= 1.05 at every size.
#
#   bench/scripts/parity.sh [BUILD_DIR]
#   env: NP=4 REPS=5 ITERS=200 SKIP=20 MAX=4194304 OUT=dir MT=0
#        MT=1 adds a column: the OSU loop under MPI_Init_thread(MPI_THREAD_MULTIPLE).
#        SHARDCAL_MPI_THREAD_LEVEL (single|funneled|serialized|multiple, default single) is
#        passed to shardbench by mpirun; the level it ran at is printed from its results file.
#
# Sizes follow shardbench's convention (docs/RESULTS_FORMAT.md): all_gather counts the whole output
# (n x per-rank), all_reduce one rank's buffer; both sides use the same element counts (f32).
#
# Two tables. (1) Across launches: shardbench sweep and osu_style are separate mpiruns. On this
# 2-core VM every launch settles into one of two latency modes (for both programs alike; e.g.
# 8 B all_reduce 0.25 or 0.5 us, 512 KiB 100 or 300 us), so a ratio of two launches mostly
# measures which modes they drew. (2) Side by side in one launch (INPROC=1, the default):
# bench/micro/mpi_overhead --variants raw,sweep at SHARDCAL_MPI_THREAD_LEVEL=single (the OSU
# loop's MPI_Init level) times, interleaved round by round, the OSU loop (`raw`: MPI_Wtime
# around MPI_Allgather/MPI_Allreduce, barrier between calls) and shardbench's own point
# measurement (`sweep`: shardbench::sweep::measure_collective with this script's protocol):
# same process, same rank placement, same mode, same buffer allocator (shardcal's host memory).
# The ratio is taken per launch and the median over the REPS launches is the parity figure; the
# goal (<= 1.05 at every size) is judged on it. What it covers: the harness's measurement loop
# (measure_collective and the MPI backend's call path) at MPI_THREAD_SINGLE; the shardbench
# binary's own launches are table 1.
#   env: ROUNDS=6 (rounds per in-process launch; even, so each side goes first equally often);
#        REPORT_ONLY=1 OUT=dir: print an earlier run's tables again (same REPS, MT and INPROC)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build}
NP=${NP:-4} REPS=${REPS:-5} ITERS=${ITERS:-200} SKIP=${SKIP:-20} MAX=${MAX:-4194304} MT=${MT:-0}
INPROC=${INPROC:-1} ROUNDS=${ROUNDS:-6} REPORT_ONLY=${REPORT_ONLY:-0}
die() { echo "parity.sh: $*" >&2; exit 2; }
for v in NP REPS ITERS SKIP MAX ROUNDS; do
  [[ ${!v} =~ ^[0-9]+$ ]] || die "$v=${!v}: expected a non-negative integer"
done
((NP >= 2)) || die "NP=$NP: the collectives need at least 2 ranks"
((REPS >= 1 && ITERS >= 1 && ROUNDS >= 1 && MAX >= 8)) || die "REPS, ITERS and ROUNDS must be >= 1, MAX >= 8"
for v in MT INPROC REPORT_ONLY; do [[ ${!v} == 0 || ${!v} == 1 ]] || die "$v=${!v}: expected 0 or 1"; done
if [[ $REPORT_ONLY == 1 ]]; then
  # Re-print an earlier run: its files must all be there (same REPS, MT, INPROC as then).
  [[ -n ${OUT:-} && -d $OUT ]] || die "REPORT_ONLY=1 needs OUT=<the earlier run's directory>"
  out=$OUT
  for ((r = 1; r <= REPS; r++)); do
    need=("ours_$r.jsonl" "osu_$r.jsonl")
    [[ $MT == 1 ]] && need+=("osu_mt_$r.jsonl")
    [[ $INPROC == 1 ]] && need+=("inproc_$r.jsonl")
    for f in "${need[@]}"; do
      [[ -s $out/$f ]] || die "REPORT_ONLY=1: $out/$f is missing (was the run made with REPS=$REPS MT=$MT INPROC=$INPROC?)"
    done
  done
else
  out=${OUT:-$(mktemp -d /tmp/shardcal-parity.XXXXXX)}
  mkdir -p "$out"
  bins=(shardbench osu_style)
  [[ $INPROC == 1 ]] && bins+=(mpi_overhead)
  for bin in "${bins[@]}"; do
    [[ -x $build/bin/$bin ]] || die "$build/bin/$bin not built (cmake --build $build --target ${bins[*]})"
  done
fi
py=/usr/bin/python3; [[ -x $py ]] || py=python3
mpirun=(mpirun -np "$NP")
if mpirun --version 2>&1 | grep -q "Open MPI"; then mpirun=(mpirun --allow-run-as-root --oversubscribe -np "$NP"); fi

sizes=()
for ((s = 8; s <= MAX; s *= 2)); do sizes+=("$s"); done
size_list=$(IFS=,; echo "${sizes[*]}")
[[ $REPORT_ONLY == 1 ]] || cat > "$out/parity.json" <<JSON
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

[[ $REPORT_ONLY == 1 ]] && REPS_RUN=0 || REPS_RUN=$REPS
echo "parity: NP=$NP REPS=$REPS ITERS=$ITERS SKIP=$SKIP sizes 8..$MAX, results in $out" >&2
((REPS_RUN == 0)) || echo "parity: load before: $(uptime)" | tee "$out/load.txt" >&2
run_ours() {
  "${mpirun[@]}" "$build/bin/shardbench" sweep --backend mpi --config "$out/parity.json" \
      --out "$out/ours_$1.jsonl" -q </dev/null
}
run_osu() {
  "${mpirun[@]}" "$build/bin/osu_style" --iterations "$ITERS" --skip "$SKIP" "${sizes[@]}" \
      </dev/null > "$out/osu_$1.jsonl"
}
for ((r = 1; r <= REPS_RUN; r++)); do
  # Swap the order every repetition so a drift in machine load does not favour one side.
  if ((r % 2)); then order=(ours osu); else order=(osu ours); fi
  for side in "${order[@]}"; do
    echo "parity: repetition $r/$REPS: $side" >&2
    "run_$side" "$r"
  done
  if [[ $MT == 1 ]]; then
    echo "parity: repetition $r/$REPS: osu_style --thread-multiple" >&2
    "${mpirun[@]}" "$build/bin/osu_style" --iterations "$ITERS" --skip "$SKIP" --thread-multiple \
        "${sizes[@]}" </dev/null > "$out/osu_mt_$r.jsonl"
  fi
  if [[ $INPROC == 1 ]]; then
    echo "parity: repetition $r/$REPS: in one launch (OSU loop and shardbench's point measurement)" >&2
    SHARDCAL_MPI_THREAD_LEVEL=single "${mpirun[@]}" "$build/bin/mpi_overhead" --variants raw,sweep \
        --sweep-config "$out/parity.json" --iterations "$ITERS" --skip "$SKIP" --rounds "$ROUNDS" \
        "${sizes[@]}" \
        </dev/null > "$out/inproc_$r.jsonl"
  fi
done
((REPS_RUN == 0)) || echo "parity: load after: $(uptime)" | tee -a "$out/load.txt" >&2

"$py" - "$out" "$REPS" "$MT" "$INPROC" <<'PY'
import json, statistics, sys
out, reps, mt, inproc = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1", sys.argv[4] == "1"
ours, osu, osu_mt = {}, {}, {}
levels = set()
for r in range(1, reps + 1):
    for line in open(f"{out}/ours_{r}.jsonl"):
        rec = json.loads(line)
        if rec["type"] == "context":
            s = rec.get("backend_settings", {})
            levels.add(s.get("mpi_thread_level", "multiple (not recorded: older build)"))
            continue
        if rec["type"] != "point":
            continue
        if rec["wrong"] != 0:
            sys.exit(f"parity: shardbench reported wrong results: {rec['key']}")
        ours.setdefault((rec["collective"], rec["point"]["size"]), {})[r] = rec["stats"]["p50"]
    for line in open(f"{out}/osu_{r}.jsonl"):
        rec = json.loads(line)
        osu.setdefault((rec["op"], rec["size"]), {})[r] = rec["median_slowest_s"]
    if mt:
        for line in open(f"{out}/osu_mt_{r}.jsonl"):
            rec = json.loads(line)
            osu_mt.setdefault((rec["op"], rec["size"]), {})[r] = rec["median_slowest_s"]
print(f"shardbench MPI thread level: {', '.join(sorted(levels))}; osu-style: MPI_Init (single)")
print("(1) across launches (separate mpiruns; each launch draws a latency mode, see the header)")
print("median over repetitions of the median slowest-rank latency (us); ratio = shardbench / "
      "osu-style; rep range = min..max of the per-repetition ratios")
head = f"| {'op':<10} | {'bytes':>7} | {'shardbench':>10} | {'osu-style':>9} | {'ratio':>7} | {'rep range':>11} |"
rule = "|---|---:|---:|---:|---:|---:|"
if mt:
    head += f" {'osu MT':>7} | {'ratio MT':>8} |"
    rule += "---:|---:|"
print(head)
print(rule)
ratios, ratios_mt, noisy = [], [], 0
for key in sorted(osu):
    a = statistics.median(ours[key].values())
    b = statistics.median(osu[key].values())
    per_rep = [ours[key][r] / osu[key][r] for r in ours[key] if r in osu[key]]
    lo, hi = min(per_rep), max(per_rep)
    ratio = a / b
    ratios.append(ratio)
    # "within noise": the repetitions' own ratios straddle 1.0
    noisy += lo <= 1.0 <= hi
    flag = " *" if ratio > 1.05 else "  "
    row = (f"| {key[0]:<10} | {key[1]:>7} | {a * 1e6:>10.2f} | {b * 1e6:>9.2f} | {ratio:>5.3f}{flag} | "
           f"{lo:>5.2f}..{hi:<4.2f} |")
    if mt:
        c = statistics.median(osu_mt[key].values())
        ratios_mt.append(a / c)
        row += f" {c * 1e6:>7.2f} | {a / c:>8.3f} |"
    print(row)
print(f"ratio vs osu-style: geometric mean {statistics.geometric_mean(ratios):.3f}, "
      f"worst {max(ratios):.3f}, best {min(ratios):.3f}, above 1.05 (*): "
      f"{sum(r > 1.05 for r in ratios)} of {len(ratios)}; sizes whose per-repetition ratios "
      f"straddle 1.0: {noisy} of {len(ratios)}")
if mt:
    print(f"ratio vs osu-style with MPI_THREAD_MULTIPLE: geometric mean "
          f"{statistics.geometric_mean(ratios_mt):.3f}, worst {max(ratios_mt):.3f}")
if inproc:
    t = {}  # (op, size) -> {(variant, stat): [value per launch]}
    levels = set()
    for r in range(1, reps + 1):
        for line in open(f"{out}/inproc_{r}.jsonl"):
            rec = json.loads(line)
            levels.add(rec["thread_level"])
            for stat in ("median", "mean"):
                t.setdefault((rec["op"], rec["size"]), {}).setdefault((rec["variant"], stat), []).append(
                    rec[f"{stat}_slowest_s"])
    print()
    print(f"(2) side by side in one launch (MPI thread level: {', '.join(sorted(levels))}): "
          f"shardbench's point measurement (sweep) vs the OSU loop (raw), interleaved rounds. Per "
          f"round the median and the mean over iterations of the slowest rank's time; ratio = "
          f"sweep / raw per launch, median over {reps} launches (us: median over launches). The "
          f"mean column is there because MPI_Wtime ticks in ~10 ns steps here, so the median of a "
          f"~250 ns call moves in ~4 % jumps.")
    print(f"| {'op':<10} | {'bytes':>7} | {'shardbench':>10} | {'osu loop':>9} | {'ratio':>7} | "
          f"{'launch range':>12} | {'ratio of means':>14} |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    ratios2, ratios2m = [], []
    for key in sorted(t):
        v = t[key]
        per = [a / b for a, b in zip(v[("sweep", "median")], v[("raw", "median")])]
        perm = [a / b for a, b in zip(v[("sweep", "mean")], v[("raw", "mean")])]
        x, xm = statistics.median(per), statistics.median(perm)
        ratios2.append(x)
        ratios2m.append(xm)
        flag = " *" if x > 1.05 else "  "
        flagm = " *" if xm > 1.05 else "  "
        print(f"| {key[0]:<10} | {key[1]:>7} | {statistics.median(v[('sweep', 'median')]) * 1e6:>10.2f} | "
              f"{statistics.median(v[('raw', 'median')]) * 1e6:>9.2f} | {x:>5.3f}{flag} | "
              f"{min(per):>5.2f}..{max(per):<5.2f} | {xm:>12.3f}{flagm} |")
    print(f"in one launch, ratio of medians: geometric mean {statistics.geometric_mean(ratios2):.3f}, "
          f"worst {max(ratios2):.3f}, above 1.05 (*): {sum(r > 1.05 for r in ratios2)} of {len(ratios2)}; "
          f"ratio of means: geometric mean {statistics.geometric_mean(ratios2m):.3f}, worst "
          f"{max(ratios2m):.3f}, above 1.05: {sum(r > 1.05 for r in ratios2m)} of {len(ratios2m)} (goal: none)")
PY
