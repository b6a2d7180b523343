#!/usr/bin/env bash
# Host pack/unpack vs memcpy: runs shardcal_micro's BM_PackRatio, which times
# host_copy_box, main's old kernel, the kernel on 2 threads and std::memcpy of the same bytes
# interleaved in one run (random order each round, one untimed call then a ~2 ms batch, 15
# rounds per case), REPS times, and prints per case the median over repetitions of each run's
# median ratio t(memcpy)/t(copy).
# Goal: ratio >= 0.7 for every case. The machine load (uptime) is printed before and after.
#
#   bench/scripts/pack_ratio.sh [BUILD_DIR]      env: REPS=5 FILTER=regex (on the case label) OUT=file.json
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build}
REPS=${REPS:-5} FILTER=${FILTER:-}
bin=$build/bin/shardcal_micro
[[ -x $bin ]] || bin=$build/bench/micro/shardcal_micro
[[ -x $bin ]] || { echo "pack_ratio.sh: shardcal_micro not found under $build (cmake --build $build --target shardcal_micro)" >&2; exit 2; }
[[ $REPS =~ ^[1-9][0-9]*$ ]] || { echo "pack_ratio.sh: REPS must be a positive integer, got '$REPS'" >&2; exit 2; }
tmp=$(mktemp -d /tmp/shardcal-pack.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
echo "load before: $(uptime)"
"$bin" --benchmark_filter=BM_PackRatio --benchmark_repetitions="$REPS" \
       --benchmark_format=json --benchmark_out="$tmp/run.json" --benchmark_out_format=json >/dev/null 2>"$tmp/stderr" || { cat "$tmp/stderr" >&2; exit 1; }
echo "load after:  $(uptime)"
if [[ -n ${OUT:-} ]]; then cp "$tmp/run.json" "$OUT.tmp" && mv "$OUT.tmp" "$OUT"; fi
py=/usr/bin/python3; [[ -x $py ]] || py=python3
"$py" - "$tmp/run.json" "$FILTER" <<'PY'
import json, re, statistics, sys
runs = json.load(open(sys.argv[1]))["benchmarks"]
flt = sys.argv[2]
rows = {}
for b in runs:
    if b.get("run_type") != "iteration" or not b["name"].startswith("BM_PackRatio"):
        continue
    label = b.get("label", b["name"])
    if flt and not re.search(flt, label):
        continue
    rows.setdefault(label, []).append(b)
if not rows:
    sys.exit("pack_ratio.sh: no BM_PackRatio results (filter %r)" % flt)
med = lambda rs, k: statistics.median(r[k] for r in rs)
print(f"{'case':50} {'KiB':>7} {'memcpy GB/s':>11} {'new GB/s':>9} {'new/memcpy':>10} {'(min)':>6} {'old/memcpy':>10} {'2 threads':>9}")
worst = None
for label, rs in rows.items():
    r = med(rs, "ratio")
    worst = r if worst is None else min(worst, r)
    print(f"{label:50} {rs[0]['KiB']:7.0f} {med(rs,'GBps_memcpy'):11.1f} {med(rs,'GBps'):9.1f} "
          f"{r:10.2f} {min(x['ratio'] for x in rs):6.2f} {med(rs,'ratio_old'):10.2f} {med(rs,'ratio_2t'):9.2f}")
print(f"worst new/memcpy: {worst:.2f} (goal >= 0.70): {'met' if worst >= 0.7 else 'NOT met'}; "
      f"{len(next(iter(rows.values())))} repetitions, medians")
PY
