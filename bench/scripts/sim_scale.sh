#!/usr/bin/env bash
# Time and peak memory of `shardbench redistribute --backend sim` (verification included) vs the
# number of simulated ranks, and a log-log plot. One process per point, measured by GNU time.
#   bench/scripts/sim_scale.sh SHARDBENCH OUT_DIR [MESHES...]
# Defaults: meshes 8x8 16x16 32x32 64x32 64x64, tensor 1024x1024 f32, S(0),S(1) -> S(1),S(0).
# Writes OUT_DIR/sim_scale.csv, OUT_DIR/sim_scale.md and (with matplotlib) OUT_DIR/sim_scale.png.
set -euo pipefail
if [[ $# -lt 2 ]]; then
  echo "usage: $0 SHARDBENCH OUT_DIR [MESH...]" >&2
  exit 2
fi
bin=$1 out=$2
shift 2
meshes=("$@")
[[ ${#meshes[@]} -gt 0 ]] || meshes=(8x8 16x16 32x32 64x32 64x64)
shape=${SIM_SCALE_SHAPE:-1024x1024}
from=${SIM_SCALE_FROM:-"S(0),S(1)"}
to=${SIM_SCALE_TO:-"S(1),S(0)"}
[[ -x /usr/bin/time ]] || { echo "$0: needs GNU time (/usr/bin/time, Debian package time)" >&2; exit 2; }
mkdir -p "$out"
csv=$out/sim_scale.csv
echo "mesh,ranks,wall_s,max_rss_mib,result" > "$csv.tmp"
for m in "${meshes[@]}"; do
  IFS=x read -r -a ext <<< "$m"
  ranks=1
  for e in "${ext[@]}"; do ranks=$((ranks * e)); done
  log=$(mktemp)
  /usr/bin/time -f "%e %M" -o "$log.time" "$bin" redistribute --backend sim --mesh "$m" \
    --shape "$shape" --dtype f32 --from "$from" --to "$to" > "$log" 2>&1 || true
  read -r wall rss_kb < "$log.time"
  result=$(head -c 2 "$log")
  [[ $result == OK ]] || { echo "$0: $m did not verify:" >&2; head -3 "$log" >&2; }
  echo "$m,$ranks,$wall,$((rss_kb / 1024)),$result" >> "$csv.tmp"
  echo "$m ($ranks ranks): ${wall} s, $((rss_kb / 1024)) MiB, $result"
  rm -f "$log" "$log.time"
done
mv "$csv.tmp" "$csv"
{
  echo "| mesh | ranks | wall (s) | peak RSS (MiB) | verified |"
  echo "|---|---|---|---|---|"
  tail -n +2 "$csv" | while IFS=, read -r m r w k res; do echo "| $m | $r | $w | $k | $res |"; done
} > "$out/sim_scale.md"
/usr/bin/python3 - "$csv" "$out/sim_scale.png" "$shape" <<'PY' || echo "$0: no plot (needs matplotlib for /usr/bin/python3)" >&2
import csv, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
rows = list(csv.DictReader(open(sys.argv[1])))
r = [int(x["ranks"]) for x in rows]
fig, ax = plt.subplots(figsize=(6, 4))
ax.loglog(r, [float(x["wall_s"]) for x in rows], "o-", label="wall time (s)")
ax.loglog(r, [float(x["max_rss_mib"]) / 1024 for x in rows], "s-", label="peak RSS (GiB)")
ax.set_xlabel("simulated ranks")
ax.set_title(f"shardbench redistribute --backend sim, {sys.argv[3]} f32")
ax.grid(True, which="both", alpha=0.3)
ax.legend()
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=110)
PY
