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
#        (SHARDCAL_MPI_THREAD_LEVEL; "default" = the backend's own: single since 2026-11-27)
#        OUT=dir (default a new /tmp dir)
#        OSU_AA=1: OSU runs twice in every round (a second launch set of the same binary, its
#        own place in the rotation) and the report adds OSU against itself: the floor under
#        which no per-size ratio between two binaries' launches can be read
#   REPORT_ONLY=1 OUT=dir bench/scripts/osu_compare.sh
#        re-prints OUT's table; NP, rounds, ops and sizes come from OUT's files (what that run
#        recorded), so NP/ROUNDS/SIZES/OPS/LEVELS and build dirs are not needed (and ignored).
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
usage="usage: osu_compare.sh OSU_BUILD_DIR BUILD_DIR [BUILD_DIR2], or REPORT_ONLY=1 OUT=dir osu_compare.sh"
REPORT_ONLY=${REPORT_ONLY:-0} OSU_AA=${OSU_AA:-0}
[[ $REPORT_ONLY == 0 || $REPORT_ONLY == 1 ]] || die "REPORT_ONLY=$REPORT_ONLY: expected 0 or 1"
[[ $OSU_AA == 0 || $OSU_AA == 1 ]] || die "OSU_AA=$OSU_AA: expected 0 or 1"
declare -A osu_bin=([all_gather]=osu_allgather [all_reduce]=osu_allreduce)
if [[ $REPORT_ONLY == 1 ]]; then
  # The table is rebuilt from what the run in OUT recorded; the run's settings are not needed.
  [[ -n ${OUT:-} && -d $OUT ]] || die "REPORT_ONLY=1 needs OUT=<the earlier run's directory> (OUT='${OUT:-}' is not a directory)"
  out=$OUT
else
  (($# == 2 || $# == 3)) || die "$usage (got $# arguments)"
  osu_dir=$1
  builds=("$2")
  (($# == 3)) && builds+=("$3")
  NP=${NP:-2} ROUNDS=${ROUNDS:-9} OPS=${OPS:-all_gather all_reduce} LEVELS=${LEVELS:-default}
  if [[ -z ${SIZES:-} ]]; then
    SIZES=""
    for ((s = 8; s <= 4194304; s *= 2)); do SIZES+="$s "; done
  fi
  # Decimal only, checked before any arithmetic: bash reads 010 as octal and fails on 08.
  for v in NP ROUNDS; do
    [[ ${!v} =~ ^[1-9][0-9]{0,5}$ ]] || die "$v='${!v}': expected a positive decimal integer (e.g. $v=2)"
  done
  ((NP >= 2)) || die "NP=$NP: needs at least 2 ranks (e.g. NP=2)"
  for v in SIZES OPS LEVELS; do
    [[ -n ${!v//[[:space:]]/} ]] || die "$v='${!v}' holds no value: give at least one, or unset $v for the default"
  done
  for s in $SIZES; do
    [[ $s =~ ^[1-9][0-9]{0,11}$ ]] && ((s >= 4 && s % 4 == 0)) ||
      die "SIZES: '$s' must be a decimal multiple of 4 bytes (f32), at least 4"
  done
  for lv in $LEVELS; do
    [[ $lv =~ ^(default|single|funneled|serialized|multiple)$ ]] ||
      die "LEVELS: '$lv' is not default, single, funneled, serialized or multiple"
  done
  for op in $OPS; do
    [[ $op == all_gather || $op == all_reduce ]] || die "OPS: '$op' is not all_gather or all_reduce"
  done
  for op in $OPS; do
    b=$osu_dir/c/mpi/collective/blocking/${osu_bin[$op]}
    [[ -x $b ]] || die "$b not found: build OSU in $osu_dir (./configure CC=mpicc CXX=mpicxx && make)"
  done
  for b in "${builds[@]}"; do
    [[ -x $b/bin/shardbench ]] || die "$b/bin/shardbench not built (cmake --build $b --target shardbench)"
  done
  command -v mpirun > /dev/null || die "mpirun not found on PATH (install Open MPI or MPICH)"
  out=${OUT:-$(mktemp -d /tmp/shardcal-osu.XXXXXX)}
  mkdir -p "$out"
  # Per-launch environment: Open MPI's mpirun takes -x VAR=value, MPICH's Hydra -genv VAR value.
  mpirun=(mpirun -np "$NP")
  ompi=0
  if mpirun --version 2>&1 | grep -q "Open MPI"; then
    ompi=1
    mpirun=(mpirun --allow-run-as-root --oversubscribe -np "$NP")
  fi
fi

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
  ((OSU_AA)) && tools+=(osuB)
  # A reused OUT must not report an earlier run's second OSU set as this run's.
  rm -f "$out"/osuB_*.txt
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
          if [[ $tool == osu || $tool == osuB ]]; then
            "${mpirun[@]}" "$osu_dir/c/mpi/collective/blocking/${osu_bin[$op]}" -m "$s:$s" \
              -T mpi_float -f -i "$(iters "$s")" -x "$(skip "$s")" </dev/null \
              > "$out/${tool}_${op}_${s}_$r.txt"
          else
            b=${tool#ours}
            b=${builds[${b%%-*}]} lv=${tool#*-}
            [[ $lv == default ]] && lv=""
            rm -f "$out/${tool}_${op}_${s}_$r.jsonl"
            if ((ompi)); then env_arg=(-x "SHARDCAL_MPI_THREAD_LEVEL=$lv")
            else env_arg=(-genv SHARDCAL_MPI_THREAD_LEVEL "$lv"); fi
            "${mpirun[@]}" "${env_arg[@]}" "$b/bin/shardbench" sweep --backend mpi --config "$cfg" \
              --out "$out/${tool}_${op}_${s}_$r.jsonl" -q </dev/null
          fi
        done
      done
    done
    echo "round $r $(date -u +%FT%TZ) $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/load.txt"
  done
fi

py=/usr/bin/python3; [[ -x $py ]] || py=python3
# In REPORT_ONLY mode the run's settings are not passed: the report derives them from OUT's files.
if [[ $REPORT_ONLY == 1 ]]; then set -- "$out"; else set -- "$out" "$NP" "$ROUNDS" "$OPS" "$SIZES"; fi
"$py" - "$@" <<'PY'
import glob, json, os, re, statistics, sys

def die(msg):  # one line, exit 2, as the shell part
    print(f"osu_compare.sh: {msg}", file=sys.stderr)
    sys.exit(2)

def lines(path):
    try:
        with open(path) as f:
            return f.read().splitlines()
    except OSError as e:
        die(f"cannot read {path}: {e.strerror}; rerun the comparison (without REPORT_ONLY) into OUT={out}")

out = sys.argv[1]
if len(sys.argv) > 2:
    np_, rounds = int(sys.argv[2]), int(sys.argv[3])
    ops, sizes = sys.argv[4].split(), [int(s) for s in sys.argv[5].split()]
    round_ids = list(range(1, rounds + 1))
else:
    # What the run recorded: OSU's outputs osu_<op>_<size>_<round>.txt name every (op, size, round);
    # the ranks come from a sweep config it wrote (meshes = [NP]).
    found = [re.fullmatch(r"osu_(all_gather|all_reduce)_([0-9]+)_([0-9]+)\.txt", os.path.basename(p))
             for p in glob.glob(f"{out}/osu_*.txt")]
    found = [m for m in found if m]
    if not found:
        die(f"no OSU results (osu_<op>_<size>_<round>.txt) in {out}: is OUT the directory of an "
            "earlier osu_compare.sh run?")
    ops = [o for o in ("all_gather", "all_reduce") if any(m[1] == o for m in found)]
    sizes = sorted({int(m[2]) for m in found})
    round_ids = sorted({int(m[3]) for m in found})
    rounds = len(round_ids)
    np_ = "?"
    for cfg in sorted(glob.glob(f"{out}/cfg_*.json")):
        try:
            np_ = int(json.load(open(cfg))["meshes"][0])
            break
        except (OSError, ValueError, KeyError, IndexError, TypeError):
            continue
builds = [l.split("\t") for l in lines(f"{out}/builds.txt") if l.strip()]
if not builds or any(len(b) != 2 for b in builds):
    die(f"{out}/builds.txt lists no '<tool>TAB<build>' lines; rerun the comparison into OUT={out}")
med = statistics.median

def osu(op, s, r, tool="osu"):  # (avg, max) in us from OSU's -f line: size avg min max iterations
    path = f"{out}/{tool}_{op}_{s}_{r}.txt"
    rows = [l.split() for l in lines(path) if l.strip() and l[0] != "#"]
    try:
        if int(rows[-1][0]) == s:
            return float(rows[-1][1]), float(rows[-1][3])
    except (IndexError, ValueError):
        pass
    die(f"{path}: no OSU result line for {op} {s} B in round {r} (OSU failed or was cut off; rerun)")

def ours(tool, op, s, r):  # (slowest-rank mean, rank-means max, rank-means mean) in us
    path = f"{out}/{tool}_{op}_{s}_{r}.jsonl"
    for n, line in enumerate(lines(path), 1):
        try:
            rec = json.loads(line)
            if rec.get("type") != "point":
                continue
            if rec["wrong"]:
                die(f"{path}: shardbench reported wrong results: {rec['key']}")
            st = rec["stats"]
            if "rank_means" not in st:
                die(f"{path}: {tool} writes no stats.rank_means (older build; rebuild shardbench)")
            return st["mean"] * 1e6, st["rank_means"]["max"] * 1e6, st["rank_means"]["mean"] * 1e6
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            die(f"{path}:{n}: not a shardbench point record ({type(e).__name__}: {e}); rerun")
    die(f"{path}: no point record (the sweep failed or was cut off; rerun)")

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
            o = [osu(op, s, r) for r in round_ids]
            u = [ours(tool, op, s, r) for r in round_ids]
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
# OSU against itself (OSU_AA=1): the same binary, launched as often and rotated the same way.
have_b = [os.path.exists(f"{out}/osuB_{op}_{s}_{r}.txt") for op in ops for s in sizes for r in round_ids]
if any(have_b) and not all(have_b):
    print(f"\nOSU against itself: {sum(have_b)} of {len(have_b)} osuB_* results in {out}, not "
          "every (op, size, round): the run was cut off; not reported")
if all(have_b):
    print("\nOSU against itself (OSU_AA=1: a second launch set of the same binary in every round); "
          "r_max = B max / A max, r_avg = B avg / A avg")
    print("| op | bytes | OSU A max | OSU B max | r_max | r_avg |")
    print("|---|---:|---:|---:|---:|---:|")
    am, aa = [], []
    for op in ops:
        for s in sizes:
            a = [osu(op, s, r) for r in round_ids]
            b = [osu(op, s, r, "osuB") for r in round_ids]
            amax, bmax = med(x[1] for x in a), med(x[1] for x in b)
            am.append(bmax / amax); aa.append(med(x[0] for x in b) / med(x[0] for x in a))
            flag = lambda x: f"{x:.3f}" + (" *" if x > 1.05 or x < 1 / 1.05 else "")
            print(f"| {op} | {s} | {amax:.2f} | {bmax:.2f} | {flag(am[-1])} | {flag(aa[-1])} |")
    g = statistics.geometric_mean
    out_of = lambda xs: sum(x > 1.05 or x < 1 / 1.05 for x in xs)
    print(f"geomean r_max {g(am):.3f} (range {min(am):.3f}-{max(am):.3f}, {out_of(am)} of {len(am)} "
          f"outside 1/1.05-1.05), r_avg {g(aa):.3f} ({out_of(aa)} of {len(aa)} outside)")
print("\nload average (1, 5, 15 min):")
print("\n".join(lines(f"{out}/load.txt")).rstrip())
PY
