#!/usr/bin/env bash
# Cost of simulation as the world grows: one fixed small sweep (configs/simulate/scaling.json)
# on make-platform clusters of 8 ranks per host, flat network, at each rank count given; wall
# time and peak memory from /usr/bin/time -v; a table (scaling.tsv) and a log-log plot
# (scaling.png, Debian's /usr/bin/python3 with matplotlib). Runs one size at a time.
#
# Usage: scripts/simulate/scaling.sh [--out DIR] [--smpi PATH] RANKS...   (e.g. 64 128 256 512 1024)
set -euo pipefail
die() { echo "scaling.sh: error: $*" >&2; exit 2; }
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="$root/out/simulate-scaling" smpi="$root/build-smpi/bin/shardbench"
while [ $# -gt 0 ]; do
  case "$1" in
    --out) [ $# -ge 2 ] || die "--out needs a directory"; out="$2"; shift 2 ;;
    --smpi) [ $# -ge 2 ] || die "--smpi needs a path"; smpi="$2"; shift 2 ;;
    -h|--help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || die "no rank counts (e.g. 64 128 256)"
for n in "$@"; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] && [ $((n % 8)) -eq 0 ] || die "'$n': rank counts must be multiples of 8"
done
mkdir -p "$out"
[ -f "$out/scaling.tsv" ] || printf 'ranks\tpoints\twall_s\tpeak_rss_MiB\n' > "$out/scaling.tsv"
for n in "$@"; do
  d="$out/$n"
  "$root/scripts/simulate/make-platform" --hosts $((n / 8)) --ranks-per-host 8 --intra-bw 150 \
    --intra-lat 1 --inter-bw 25 --inter-lat 3 --out "$d/platform" >/dev/null
  rm -f "$d/sweep.jsonl"
  t0=$(date +%s.%N)
  /usr/bin/time -v -o "$d/time.txt" "$root/scripts/simulate/smpirun.sh" \
    --platform "$d/platform/platform.xml" --hostfile "$d/platform/hostfile" --np "$n" \
    --shardbench "$smpi" -- sweep --backend mpi -q --config "$root/configs/simulate/scaling.json" \
    --out "$d/sweep.jsonl"
  wall=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
  rss=$(awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2 / 1024}' "$d/time.txt")
  points=$(($(wc -l < "$d/sweep.jsonl") - 1))
  printf '%s\t%s\t%s\t%s\n' "$n" "$points" "$wall" "$rss" >> "$out/scaling.tsv"
  echo "scaling.sh: $n ranks: $points points, $wall s, peak $rss MiB (load: $(cut -d' ' -f1-3 /proc/loadavg))" >&2
done
MPLCONFIGDIR="$out/.mpl" /usr/bin/python3 - "$out" <<'PY'
import csv, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
out = sys.argv[1]
rows = sorted({int(r["ranks"]): r for r in csv.DictReader(open(f"{out}/scaling.tsv"), delimiter="\t")}.items())
n = [k for k, _ in rows]
wall = [float(r["wall_s"]) for _, r in rows]
mem = [float(r["peak_rss_MiB"]) / 1024 for _, r in rows]
fig, ax = plt.subplots(figsize=(6, 4))
ax.loglog(n, wall, "o-", base=2, label="wall time (s)")
ax.loglog(n, mem, "s--", base=2, label="peak memory (GiB)")
ax.set_xlabel("simulated ranks")
ax.set_title("SMPI cost of one fixed sweep (configs/simulate/scaling.json)")
ax.set_xticks(n, [str(k) for k in n])
ax.grid(True, which="both", alpha=0.3)
ax.legend()
fig.tight_layout()
fig.savefig(f"{out}/scaling.png", dpi=110)
PY
cat "$out/scaling.tsv"
