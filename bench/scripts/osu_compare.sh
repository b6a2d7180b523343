#!/usr/bin/env bash
# shardbench sweep against the OSU micro-benchmarks binaries (osu_allgather, osu_allreduce), with
# both latency statistics: the sweep's own (per sample the slowest rank, then the mean over
# samples: `stats.mean`) and OSU's (each rank's mean over its own iterations, then the max or the
# mean across ranks: `stats.rank_means`, what OSU prints with -f as "Max Latency" and by default
# as "Avg Latency").
#
#   bench/scripts/osu_compare.sh OSU_BUILD_DIR BUILD_DIR [BUILD_DIR2]
#   env: NP=2 ROUNDS=9 SIZES="8 16 ... 4194304" (OSU's per-rank bytes) OPS="all_gather all_reduce"
#        LEVELS="default single": shardbench once per MPI thread level in each round
#        (SHARDCAL_MPI_THREAD_LEVEL; "default" = the backend's own, funneled)
#        OUT=dir (default a new /tmp dir) REPORT_ONLY=1 (re-print OUT's table)
#
# OSU_BUILD_DIR is an OSU 7.x tree after `./configure CC=mpicc CXX=mpicxx && make` (the binaries
# under c/mpi/collective/blocking/). BUILD_DIR2, when given, is a second shardbench build timed in
# the same rounds (before/after a change to the harness).
#
# Protocol, the same on both sides: NP local ranks, f32 (`-T mpi_float`), every (op, size) its own
# launch of each tool, ROUNDS rounds, in every round each (op, size) once per tool with the order
# of the tools rotated per round (OSU, ours, OSU, ... then ours, OSU, ...), so load drift hits all
# alike; medians over rounds per size. Our point runs OSU's iteration and warm-up counts (1000
# timed after 100 untimed up to 8 KiB per rank, 100 after 10 above: osu_util.h COLL_LOOP_* and
# COLL_SKIP_*), fixed (no adaptive stop), per_iteration mode, no buffer rotation (OSU reuses one
# buffer), mesh = the world. Sizes: OSU's -m is bytes per rank for both ops; shardbench's
# all_gather size is the whole output (docs/RESULTS_FORMAT.md, "Sizes"), so our all_gather point
# is NP x OSU's size (the same per-rank message) and all_reduce the same buffer size.
set -euo pipefail
die() { echo "osu_compare.sh: $*" >&2; exit 2; }
(($# == 2 || $# == 3)) || die "usage: osu_compare.sh OSU_BUILD_DIR BUILD_DIR [BUILD_DIR2]"
osu_dir=$1
builds=("$2")
(($# == 3)) && builds+=("$3")
NP=${NP:-2} ROUNDS=${ROUNDS:-9} OPS=${OPS:-all_gather all_reduce} REPORT_ONLY=${REPORT_ONLY:-0}
LEVELS=${LEVELS:-default}
if [[ -z ${SIZES:-} ]]; then
  SIZES=""
  for ((s = 8; s <= 4194304; s *= 2)); do SIZES+="$s "; done
fi
for v in NP ROUNDS; do [[ ${!v} =~ ^[0-9]+$ ]] || die "$v=${!v}: expected a positive integer"; done
((NP >= 2 && ROUNDS >= 1)) || die "NP must be >= 2 and ROUNDS >= 1"
for s in $SIZES; do
  [[ $s =~ ^[0-9]+$ ]] && ((s >= 4 && s % 4 == 0)) ||
    die "SIZES: '$s' must be a multiple of 4 bytes (f32), at least 4"
done
for lv in $LEVELS; do
  [[ $lv =~ ^(default|single|funneled|serialized|multiple)$ ]] ||
    die "LEVELS: '$lv' is not default, single, funneled, serialized or multiple"
done
for op in $OPS; do
  [[ $op == all_gather || $op == all_reduce ]] || die "OPS: '$op' is not all_gather or all_reduce"
done
declare -A osu_bin=([all_gather]=osu_allgather [all_reduce]=osu_allreduce)
if [[ $REPORT_ONLY == 1 ]]; then
  [[ -n ${OUT:-} && -d $OUT ]] || die "REPORT_ONLY=1 needs OUT=<the earlier run's directory>"
  out=$OUT
else
  for op in $OPS; do
    b=$osu_dir/c/mpi/collective/blocking/${osu_bin[$op]}
    [[ -x $b ]] || die "$b not found: build OSU in $osu_dir (./configure CC=mpicc CXX=mpicxx && make)"
  done
  for b in "${builds[@]}"; do
    [[ -x $b/bin/shardbench ]] || die "$b/bin/shardbench not built (cmake --build $b --target shardbench)"
  done
  out=${OUT:-$(mktemp -d /tmp/shardcal-osu.XXXXXX)}
  mkdir -p "$out"
fi
mpirun=(mpirun -np "$NP")
if mpirun --version 2>&1 | grep -q "Open MPI"; then mpirun=(mpirun --allow-run-as-root --oversubscribe -np "$NP"); fi

# OSU's counts for a per-rank size (osu_util.h: LARGE_MESSAGE_SIZE 8192).
iters() { (($1 > 8192)) && echo 100 || echo 1000; }
skip() { (($1 > 8192)) && echo 10 || echo 100; }

config() {  # op, OSU size -> our sweep config file
  local op=$1 s=$2 ours=$2
  [[ $op == all_gather ]] && ours=$((s * NP))
  local f=$out/cfg_${op}_$s.json
  cat > "$f" <<JSON
{
  "description": "bench/scripts/osu_compare.sh: OSU's protocol for $op at $s bytes per rank",
  "meshes": ["$NP"], "collectives": ["$op"], "sizes": [$ours], "dtypes": ["f32"],
  "warmup": $(skip "$s"), "iterations": {"min": $(iters "$s"), "max": $(iters "$s")},
  "time_budget_s": 1000000, "adaptive": {"target_rel_ci": 0}, "check": true,
  "mode": "per_iteration", "buffer_rotation": {"bytes": 0}
}
JSON
  echo "$f"
}

if [[ $REPORT_ONLY != 1 ]]; then
  tools=(osu)
  : > "$out/builds.txt"
  for ((b = 0; b < ${#builds[@]}; b++)); do
    for lv in $LEVELS; do
      tools+=("ours${b}-$lv")
      printf '%s\t%s\n' "ours${b}-$lv" "${builds[$b]} (MPI thread level: $lv)" >> "$out/builds.txt"
    done
  done
  echo "osu_compare: NP=$NP ROUNDS=$ROUNDS ops: $OPS; sizes (per rank): $SIZES; results in $out" >&2
  echo "start $(date -u +%FT%TZ) $(cut -d' ' -f1-3 /proc/loadavg)" > "$out/load.txt"
  nt=${#tools[@]}
  for ((r = 1; r <= ROUNDS; r++)); do
    echo "osu_compare: round $r/$ROUNDS (load $(cut -d' ' -f1 /proc/loadavg))" >&2
    for op in $OPS; do
      for s in $SIZES; do
        cfg=$(config "$op" "$s")
        for ((k = 0; k < nt; k++)); do
          tool=${tools[$(((k + r - 1) % nt))]}
          if [[ $tool == osu ]]; then
            "${mpirun[@]}" "$osu_dir/c/mpi/collective/blocking/${osu_bin[$op]}" -m "$s:$s" \
              -T mpi_float -f -i "$(iters "$s")" -x "$(skip "$s")" </dev/null \
              > "$out/osu_${op}_${s}_$r.txt"
          else
            b=${tool#ours}
            b=${builds[${b%%-*}]} lv=${tool#*-}
            [[ $lv == default ]] && lv=""
            rm -f "$out/${tool}_${op}_${s}_$r.jsonl"
            "${mpirun[@]}" -x "SHARDCAL_MPI_THREAD_LEVEL=$lv" "$b/bin/shardbench" sweep --backend mpi --config "$cfg" \
              --out "$out/${tool}_${op}_${s}_$r.jsonl" -q </dev/null
          fi
        done
      done
    done
    echo "round $r $(date -u +%FT%TZ) $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/load.txt"
  done
fi

py=/usr/bin/python3; [[ -x $py ]] || py=python3
"$py" - "$out" "$NP" "$ROUNDS" "$OPS" "$SIZES" <<'PY'
import glob, json, os, statistics, sys
out, np_, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ops, sizes = sys.argv[4].split(), [int(s) for s in sys.argv[5].split()]
builds = [l.rstrip("\n").split("\t") for l in open(f"{out}/builds.txt") if l.strip()]
med = statistics.median

def osu(op, s, r):  # (avg, max) in us from OSU's -f line: size avg min max iterations
    rows = [l.split() for l in open(f"{out}/osu_{op}_{s}_{r}.txt") if l.strip() and l[0] != "#"]
    if not rows or int(rows[-1][0]) != s:
        sys.exit(f"osu_compare: no OSU result for {op} {s} B in round {r}")
    return float(rows[-1][1]), float(rows[-1][3])

def ours(tool, op, s, r):  # (slowest-rank mean, rank-means max, rank-means mean) in us
    for line in open(f"{out}/{tool}_{op}_{s}_{r}.jsonl"):
        rec = json.loads(line)
        if rec.get("type") != "point":
            continue
        if rec["wrong"]:
            sys.exit(f"osu_compare: shardbench reported wrong results: {rec['key']}")
        st = rec["stats"]
        if "rank_means" not in st:
            sys.exit(f"osu_compare: {tool} writes no stats.rank_means (older build)")
        return st["mean"] * 1e6, st["rank_means"]["max"] * 1e6, st["rank_means"]["mean"] * 1e6
    sys.exit(f"osu_compare: no point in {tool}_{op}_{s}_{r}.jsonl")

print(f"{np_} ranks, {rounds} rounds, each (op, size) its own launch per tool; medians over rounds "
      "(us). OSU: max = 'Max Latency' (-f), avg = 'Avg Latency' (default print). ours: slowest = "
      "stats.mean (mean over iterations of the slowest rank), rmax / ravg = stats.rank_means max / "
      "mean (OSU's definition). r_slow = slowest / OSU max, r_max = rmax / OSU max, r_avg = ravg / "
      "OSU avg. bytes = per rank, as OSU's -m.")
for tool, what in builds:
    print(f"\nours = {what}")
    print("| op | bytes | OSU max | OSU avg | ours slowest | ours rmax | ours ravg | r_slow | r_max | r_avg |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    rs, rm, ra = [], [], []
    for op in ops:
        for s in sizes:
            o = [osu(op, s, r) for r in range(1, rounds + 1)]
            u = [ours(tool, op, s, r) for r in range(1, rounds + 1)]
            omax, oavg = med(x[1] for x in o), med(x[0] for x in o)
            slow, rmax, ravg = (med(x[i] for x in u) for i in range(3))
            rs.append(slow / omax); rm.append(rmax / omax); ra.append(ravg / oavg)
            flag = lambda x: f"{x:.3f}" + (" *" if x > 1.05 else "")
            print(f"| {op} | {s} | {omax:.2f} | {oavg:.2f} | {slow:.3f} | {rmax:.3f} | {ravg:.3f} | "
                  f"{flag(rs[-1])} | {flag(rm[-1])} | {flag(ra[-1])} |")
    g = statistics.geometric_mean
    print(f"geomean r_slow {g(rs):.3f} (worst {max(rs):.3f}), r_max {g(rm):.3f} (worst {max(rm):.3f}, "
          f"{sum(x > 1.05 for x in rm)} of {len(rm)} above 1.05), r_avg {g(ra):.3f} (worst "
          f"{max(ra):.3f}, {sum(x > 1.05 for x in ra)} of {len(ra)} above 1.05)")
print("\nload average (1, 5, 15 min):")
print(open(f"{out}/load.txt").read().rstrip())
PY
