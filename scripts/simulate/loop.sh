#!/usr/bin/env bash
# The whole loop on a simulated cluster: make-platform -> sweep (SMPI) -> calibrate (native) ->
# validate (SMPI) with the calibrated profile and with the built-in dtensor-default profile, each
# step timed (wall time, peak memory from /usr/bin/time -v). Reproduces the 64- and 256-rank
# figures of docs/PERFORMANCE.md ("Simulated cluster (SimGrid SMPI)"); docs/SIMULATION.md.
#
# Usage: scripts/simulate/loop.sh --ranks 64|256 [--out DIR] [--native PATH] [--smpi PATH]
#   --out     outputs (default out/simulate-RANKS): platform/, sweep.jsonl, profile.json,
#             calibration.txt, validate.{jsonl,txt}, validate-dtensor.{jsonl,txt}, times.tsv,
#             summary.md
#   --native  native shardbench for calibrate (default build-release/bin/shardbench, else
#             build/bin/shardbench; when neither exists the SMPI build runs it as one rank)
#   --smpi    the SMPI shardbench (default build-smpi/bin/shardbench)
# Platforms: 64 = 8 hosts x 8 ranks, flat network; 256 = 32 hosts x 8 ranks, two-level fat
# tree (8 hosts per leaf switch, 8 top switches: non-blocking). Both: intra-host 150 GB/s, 1 us;
# NIC 25 GB/s per direction, 3 us end to end.
set -euo pipefail
die() { echo "loop.sh: error: $*" >&2; exit 2; }
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
ranks="" out="" native="" smpi="$root/build-smpi/bin/shardbench"
while [ $# -gt 0 ]; do
  case "$1" in
    --ranks) [ $# -ge 2 ] || die "--ranks needs 64 or 256"; ranks="$2"; shift 2 ;;
    --out) [ $# -ge 2 ] || die "--out needs a directory"; out="$2"; shift 2 ;;
    --native) [ $# -ge 2 ] || die "--native needs a path"; native="$2"; shift 2 ;;
    --smpi) [ $# -ge 2 ] || die "--smpi needs a path"; smpi="$2"; shift 2 ;;
    -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
case "$ranks" in
  64) hosts=8 topo=(--topology flat) ;;
  256) hosts=32 topo=(--topology fat-tree --hosts-per-switch 8 --top-switches 8) ;;
  *) die "--ranks '$ranks': expected 64 or 256 (configs/simulate/{calibrate,validate}-RANKS.json)" ;;
esac
out="${out:-$root/out/simulate-$ranks}"
[ -x "$smpi" ] || die "$smpi: not built (cmake --preset smpi && cmake --build build-smpi)"
if [ -z "$native" ]; then
  for c in "$root/build-release/bin/shardbench" "$root/build/bin/shardbench"; do
    if [ -x "$c" ]; then native="$c"; break; fi
  done
fi
[ -z "$native" ] || [ -x "$native" ] || die "--native $native: not an executable"
mkdir -p "$out"
plat="$out/platform"
"$root/scripts/simulate/make-platform" --hosts "$hosts" --ranks-per-host 8 --intra-bw 150 \
  --intra-lat 1 --inter-bw 25 --inter-lat 3 "${topo[@]}" --out "$plat"
sim=("$root/scripts/simulate/smpirun.sh" --platform "$plat/platform.xml" --hostfile "$plat/hostfile"
     --shardbench "$smpi")
printf 'step\twall_s\tpeak_rss_MiB\n' > "$out/times.tsv"
timed() {  # NAME CMD... : runs CMD under /usr/bin/time -v, appends wall time and peak RSS
  local name=$1; shift
  local t0 rc=0
  t0=$(date +%s.%N)
  /usr/bin/time -v -o "$out/time-$name.txt" "$@" || rc=$?
  local wall rss
  wall=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {print b - a}')
  rss=$(awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2 / 1024}' "$out/time-$name.txt")
  printf '%s\t%.1f\t%s\n' "$name" "$wall" "$rss" >> "$out/times.tsv"
  echo "loop.sh: $name: ${wall%.*} s, peak ${rss} MiB (exit $rc)" >&2
  return $rc
}
rm -f "$out/sweep.jsonl"
timed sweep "${sim[@]}" --np "$ranks" -- sweep --backend mpi -q \
  --config "$root/configs/simulate/calibrate-$ranks.json" --out "$out/sweep.jsonl"
cal=(calibrate --results "$out/sweep.jsonl" --out "$out/profile.json" --name "simulated-$ranks")
if [ -n "$native" ]; then
  timed calibrate "$native" "${cal[@]}" > "$out/calibration.txt"
else
  timed calibrate "${sim[@]}" --np 1 -- "${cal[@]}" > "$out/calibration.txt"
fi
for p in profile:"$out/profile.json" dtensor:"$root/configs/profiles/dtensor-default.json"; do
  name=${p%%:*} prof=${p#*:}
  suffix=$([ "$name" = profile ] && echo "" || echo "-dtensor")
  timed "validate$suffix" "${sim[@]}" --np "$ranks" -- validate --backend mpi --profile "$prof" \
    --config "$root/configs/simulate/validate-$ranks.json" --out "$out/validate$suffix.jsonl" -q \
    > "$out/validate$suffix.txt"
done
{
  echo "# Simulated loop, $ranks ranks ($(date -u +%FT%TZ))"
  echo
  echo "| step | wall s | peak RSS MiB |"
  echo "|---|---:|---:|"
  tail -n +2 "$out/times.tsv" | awk -F'\t' '{printf "| %s | %s | %s |\n", $1, $2, $3}'
  awk -F'\t' 'NR > 1 && $1 != "validate-dtensor" {s += $2} END {printf "\nsweep -> calibrate -> validate: %.1f s\n", s}' "$out/times.tsv"
} > "$out/summary.md"
{
  echo
  echo "## Calibrated profile vs dtensor-default (scripts/simulate/compare_validate.py)"
  echo
  /usr/bin/env python3 "$root/scripts/simulate/compare_validate.py" "$out/validate.jsonl" \
    "$out/validate-dtensor.jsonl"
} >> "$out/summary.md"
cat "$out/summary.md"
